"""Who a notice may reach, in the analysis as in the letters: Poughkeepsie's § 168-22.3C.

A property served by a private sewage disposal system is noticed "only when it shall be necessary to eliminate a
public health hazard". A run noticing for a highway improvement program gave every mandated parcel a deadline and
a reason saying "Notice given to promote a highway improvement program ... Deadline", while the letters held every
one of them back (Poughkeepsie reads a parcel not connected as on a private system, § 168-22.3A); a batch counted
them as notices due. Two lots on Main St, 30 ft from main M-1; P-2's private_system column says it has none.
"""

from __future__ import annotations

import datetime as dt
import json

from shapely.geometry import LineString, box

from analysis.mandate import analyze_mandates
from analysis.profiles import load_profile
from tests.conftest import ny_frame

DATE = dt.date(2027, 3, 1)


def _run(reason: str | None, private_system=("", "no"), profile=None):
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
        profile=profile or load_profile("poughkeepsie"),
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
    # which says P-1 is on a private system: "(by its private_system column, else as § 168-22.3A reads it)" left a
    # clerk to guess (a tester); P-1's column is empty, so the profile's reading does
    assert (
        "(its private_system column does not say, and § 168-22.3A is read so for an occupied property"
        in (rows.loc["P-1", "reason"])
    )
    column = _run("highway_improvement", ("yes", "no")).parcels.set_index("parcel_id").loc["P-1", "reason"]
    assert "It is served by a private sewage disposal system (by its private_system column), and" in column
    # P-2 has no private system (its column says no): it may be noticed, by the date its letter gives
    assert str(rows.loc["P-2", "deadline"]) == "2027-03-31" and "Deadline" in rows.loc["P-2", "reason"]
    assert result.summary["notices_held"] == 1


def test_a_health_hazard_notice_reaches_every_property():
    result = _run("public_health_hazard")
    rows = result.parcels.set_index("parcel_id")
    assert rows["deadline"].astype(str).tolist() == ["2027-03-31", "2027-03-31"]
    assert result.summary["notices_held"] == 0


def test_analyze_says_how_many_it_holds_back_and_why(tmp_path):
    """The command's summary said only "Notice date ...; deadline 30 days after it (§ 168-22.2G)" while every parcel
    that must connect had no deadline, held under § 168-22.3C (only --json's notices_held told it; a tester)."""
    from click.testing import CliRunner

    from gisapp.cli import main
    from layers.sample import sample_town
    from layers.write import write_layers

    store = tmp_path / "town.gpkg"
    write_layers(str(store), sample_town(300))
    args = ["analyze", "--profile", "poughkeepsie", "--data", str(store), "--notice-date", "2027-03-01"]
    run = CliRunner().invoke(main, [*args, "--notice-reason", "highway_improvement", "--json"])
    held = json.loads(run.output)["summary"]["notices_held"]
    said = " ".join(CliRunner().invoke(main, [*args, "--notice-reason", "highway_improvement"]).output.split())
    assert held > 0
    assert (
        "that must connect are served by a private system: under § 168-22.3C such a property is noticed only for a "
        "public health hazard, not for a highway improvement" in said
    )
    assert f"{held:,}" in said
    health = " ".join(CliRunner().invoke(main, [*args, "--notice-reason", "public_health_hazard"]).output.split())
    assert "served by a private system" not in health


def test_wappinger_sets_no_deadline_for_a_property_its_law_does_not_bind():
    """§ 196-17E binds only "a property served by a private wastewater disposal system". A parcel whose
    private_system column says no was given a 60-day deadline by `analyze`, shown on the map and in the CSV, while
    `notices preview` held it back under that section (a tester). It now has no deadline, and its reason says why;
    the summary counts it among the notices held and apart as not bound."""
    wappinger = load_profile("wappinger", overrides={"mandate.distance_ft": 200, "mandate.notice_period_days": 60})
    result = _run(None, ("yes", "no"), wappinger)
    rows = result.parcels.set_index("parcel_id")
    assert (rows["status"] == "mandated").all()
    assert str(rows.loc["P-1", "deadline"]) == "2027-04-30" and "Deadline 2027-04-30" in rows.loc["P-1", "reason"]
    assert rows["deadline"].isna()["P-2"] and "Deadline" not in rows.loc["P-2", "reason"]
    said = rows.loc["P-2", "reason"]
    assert "Its private_system column says it is not served by a private wastewater disposal system" in said
    assert "§ 196-17E binds only" in said and "requires an occupied property" not in said
    assert (result.summary["notices_held"], result.summary["notices_not_bound"]) == (1, 1)
