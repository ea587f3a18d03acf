"""Who a notice may reach, in the analysis as in the letters: Poughkeepsie's § 168-22.3C.

A property served by a private sewage disposal system is noticed "only when it shall be necessary to eliminate a
public health hazard". A run noticing for a highway improvement program gave every mandated parcel a deadline and
a reason saying "Notice given to promote a highway improvement program ... Deadline", while the letters held every
one of them back (Poughkeepsie reads a parcel not connected as on a private system, § 168-22.3A); a batch counted
them as notices due. Two lots on Main St, 30 ft from main M-1; P-2's private_system column says it has none.
"""

from __future__ import annotations

import datetime as dt

from shapely.geometry import LineString, box

from analysis.mandate import analyze_mandates
from analysis.profiles import load_profile
from tests.conftest import ny_frame

DATE = dt.date(2027, 3, 1)


def _run(reason: str, private_system=("", "no")):
    line = LineString([(-100, 0), (700, 0)])
    parcels = ny_frame(
        [
            {"parcel_id": f"P-{i + 1}", "occupied": True, "private_system": said, "geometry": box(x, 30, x + 50, 130)}
            for i, (said, x) in enumerate(zip(private_system, (0, 100), strict=True))
        ]
    )
    streets = ny_frame([{"street_id": "S-1", "street_name": "Main St", "geometry": line}])
    mains = ny_frame([{"main_id": "M-1", "geometry": line}])
    return analyze_mandates(
        parcels,
        mains,
        streets=streets,
        profile=load_profile("poughkeepsie"),
        notice_date=DATE,
        notice_reason=reason,
    )


def test_a_highway_notice_sets_no_deadline_for_a_property_on_a_private_system():
    result = _run("highway_improvement")
    rows = result.parcels.set_index("parcel_id")
    assert (rows["status"] == "mandated").all()
    assert rows["deadline"].isna()["P-1"] and rows["notice_reason"].isna()["P-1"]
    assert (
        "no notice may be given to it to promote a highway improvement program, so no deadline is set"
        in (rows.loc["P-1", "reason"])
    )
    assert '§ 168-22.3C says "Such notice shall be given only when' in rows.loc["P-1", "reason"]
    # P-2 has no private system (its column says no): it may be noticed, by the date its letter gives
    assert str(rows.loc["P-2", "deadline"]) == "2027-03-31" and "Deadline" in rows.loc["P-2", "reason"]
    assert result.summary["notices_held"] == 1


def test_a_health_hazard_notice_reaches_every_property():
    result = _run("public_health_hazard")
    rows = result.parcels.set_index("parcel_id")
    assert rows["deadline"].astype(str).tolist() == ["2027-03-31", "2027-03-31"]
    assert result.summary["notices_held"] == 0
