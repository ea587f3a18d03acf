"""The connection mandate on hand-made lots whose answer can be seen."""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
import shapely
from geopandas.testing import assert_geodataframe_equal
from hypothesis import given, settings
from hypothesis import strategies as st
from shapely.geometry import LineString, MultiPolygon, Polygon, box

from analysis.errors import AnalysisError, Fix
from analysis.mandate import analyze_mandates
from analysis.profiles import load_profile
from tests.conftest import CRS, frame, lot


def run(parcels, mains, streets, profile, **kw):
    return analyze_mandates(frame(parcels), mains, streets=streets, profile=profile, **kw).parcels.set_index(
        "parcel_id"
    )


@pytest.mark.parametrize(("distance_ft", "status"), [(99.9, "mandated"), (100.0, "mandated"), (100.1, "out_of_range")])
def test_threshold_includes_exactly_100_ft(fort_plain, distance_ft, status):
    # A wide right-of-way: 250 ft, so the parcel abuts it while the main runs down its middle.
    streets = frame(
        [{"street_name": "Broad St", "row_width_ft": 250.0, "geometry": LineString([(-1000, 0), (2000, 0)])}]
    )
    mains = frame([{"main_id": "M-1", "geometry": LineString([(-1000, 125 - distance_ft), (2000, 125 - distance_ft)])}])
    r = run([lot("P", 0, 125)], mains, streets, fort_plain)
    assert r.loc["P", "distance_ft"] == pytest.approx(distance_ft, abs=1e-9)
    assert r.loc["P", "status"] == status
    assert r.loc["P", "section"] == "§ 144-4"


def test_at_the_threshold_each_distance_shown_has_one_answer_and_says_so(fort_plain):
    """100.009 ft was mandated and 100.010 ft was not, and both were given as "100.01 ft"; the one out of range read
    "0.0 ft beyond the 100 ft", the one mandated "100.01 ft ... within 100 ft" (a tester). The status is now judged on
    the distance as given (to the hundredth), a parcel mandated over 100 ft by the tolerance says so, and one out of
    range gives how far to the hundredth."""
    streets = frame(
        [{"street_name": "Broad St", "row_width_ft": 250.0, "geometry": LineString([(-1000, 0), (2000, 0)])}]
    )
    mains = frame([{"main_id": "M-1", "geometry": LineString([(-1000, 0), (2000, 0)])}])
    gaps = {"T-5": 100.009, "T-6": 100.0101, "T-9": 100.02}
    lots = [lot(pid, 100 * i, gap) for i, (pid, gap) in enumerate(gaps.items())]
    r = run(lots, mains, streets, fort_plain)
    assert r["distance_ft"].to_dict() == {"T-5": 100.01, "T-6": 100.01, "T-9": 100.02}
    assert r["status"].to_dict() == {"T-5": "mandated", "T-6": "mandated", "T-9": "out_of_range"}
    over = "100.01 ft from the property line (0.01 ft over 100 ft, counted as at it: within the profile's 0.01 ft"
    assert over in r.loc["T-5", "reason"] and over in r.loc["T-6", "reason"]
    assert "100.02 ft from the property line, 0.02 ft beyond the 100 ft of § 144-4" in r.loc["T-9", "reason"]
    exactly = run([lot("P", 0, 100.0)], mains, streets, fort_plain).loc["P", "reason"]
    assert "100.00 ft from the property line; § 144-4 requires" in exactly  # at the limit: no word of a tolerance


def test_a_run_that_does_not_test_occupancy_does_not_say_it_did(fort_plain, street_block):
    """With requires_occupied_building set false, the reason still said "requires an occupied property" (a tester)."""
    streets, mains = street_block
    vacant = {**lot("V", 100, 25), "occupied": False}
    tested = run([vacant], mains, streets, fort_plain)
    assert tested.loc["V", "status"] == "unoccupied"
    untested = run(
        [vacant], mains, streets, load_profile("fort-plain", overrides={"mandate.requires_occupied_building": False})
    )
    assert untested.loc["V", "status"] == "mandated"
    said = untested.loc["V", "reason"]
    assert "requires a property within 100 ft to connect" not in said


@pytest.mark.parametrize(
    "overrides, says",
    [
        (
            {},
            "; § 144-4 requires an occupied property within 100 ft to connect within 90 days of official notice; this "
            "run did not test occupancy (a value set for the run).",
        ),
        (
            {"mandate.notice_period_days": "60"},
            "; § 144-4 requires an occupied property within 100 ft to connect; this run did not test occupancy (a "
            "value set for the run). The period to connect: within 60 days",
        ),
        (
            {"mandate.distance_ft": "150"},
            'property line." This run did not test occupancy (a value set for the run). The period to connect',
        ),
    ],
)
def test_a_run_that_does_not_test_occupancy_says_the_laws_words_and_that_it_did_not(street_block, overrides, says):
    """With requires_occupied_building set false, the reason read "§ 144-4 requires a property within 100 ft to
    connect": § 144-4 binds "any house, building or property used for human occupancy", an occupied property. The
    law's words are said, and that this run did not test occupancy; the section column is flagged."""
    streets, mains = street_block
    vacant = {**lot("V", 100, 25), "occupied": False}
    profile = load_profile("fort-plain", overrides={"mandate.requires_occupied_building": False, **overrides})
    r = run([vacant], mains, streets, profile)
    assert r.loc["V", "status"] == "mandated"
    assert says in r.loc["V", "reason"]
    assert "requires a property" not in r.loc["V", "reason"]
    assert r.loc["V", "section"] == "§ 144-4 (value set by the user)"


@pytest.mark.parametrize(
    "overrides, flagged_statuses",
    [
        ({}, set()),
        ({"mandate.notice_period_days": "60"}, {"mandated"}),
        ({"mandate.notice_reasons": ["public_health_hazard"]}, {"mandated"}),
        ({"mandate.requires_abutting_street": True}, set()),  # § 144-4's own value: not set for the run
        ({"mandate.requires_abutting_street": True, "mandate.distance_ft": "100"}, set()),
        ({"mandate.distance_ft": "150"}, {"mandated", "out_of_range", "in_range_not_abutting", "connected"}),
        ({"measurement.abut_tolerance_ft": "5"}, set()),  # a profile setting, not what § 144-4 states
    ],
)
def test_the_section_column_is_flagged_when_the_run_set_a_value_its_section_states(
    street_block, overrides, flagged_statuses
):
    """With only the period set (--set mandate.notice_period_days=60), a mandated parcel's section read "§ 144-4"
    unflagged, while with a distance set it read "§ 144-4 (value set by the user)"; and with a distance set, a lot in
    range but not on the main's street read "§ 144-4" unflagged beside "within 150 ft, the distance set for this
    run". A section is flagged where any value the status rests on from that section was set for the run."""
    _, mains = street_block
    streets = frame(
        [
            {"street_name": "Main St", "geometry": LineString([(-1000, 0), (2000, 0)])},
            {"street_name": "Back St", "geometry": LineString([(-1000, 205), (2000, 205)])},
        ]
    )
    lots = [
        lot("A", 0, 25),  # mandated
        lot("F", 200, 230),  # out of range (off Back St)
        {"parcel_id": "B", "occupied": True, "geometry": box(400, 90, 450, 180)},  # not on Main St
        lot("V", 600, 25, occupied=False),  # unoccupied
        lot("C", 800, 25, connected=True),  # connected
    ]
    r = run(lots, mains, streets, load_profile("fort-plain", overrides=overrides))
    status = r.set_index("status")["section"].to_dict()
    wanted = {"mandated", "out_of_range", "in_range_not_abutting", "unoccupied", "connected"}
    assert set(status) == wanted
    for name, section in status.items():
        assert section == ("§ 144-4 (value set by the user)" if name in flagged_statuses else "§ 144-4"), name


@pytest.mark.parametrize(
    "overrides",
    [
        {"mandate.distance_ft": "100"},
        {"mandate.distance_ft": 100},
        {"mandate.distance_ft": "100.0", "mandate.notice_period_days": "90"},
        {"mandate.requires_occupied_building": "true", "mandate.requires_abutting_street": True},
    ],
)
def test_a_run_set_to_the_laws_own_values_reads_as_the_laws(street_block, overrides):
    """--set mandate.distance_ft=100 under Fort Plain (§ 144-4 says 100 ft) flagged every section "(value set by the
    user)" and read "within 100 ft, the distance set for this run (§ 144-4 sets 100 ft)": true, but it told a board
    the run departed from the law. Set to the law's own values, the results are the law's, word for word."""
    streets, mains = street_block
    streets = pd.concat(
        [
            streets,
            frame(
                [{"street_id": "S-2", "street_name": "Back St", "geometry": LineString([(-1000, 205), (2000, 205)])}]
            ),
        ]
    )
    lots = [
        lot("A", 0, 25),  # mandated
        lot("F", 200, 230),  # out of range (off Back St)
        {"parcel_id": "B", "occupied": True, "geometry": box(400, 90, 450, 180)},  # not on Main St
        lot("V", 600, 25, occupied=False),  # unoccupied
    ]
    due = {"notice_date": dt.date(2027, 3, 1)}
    law = run(lots, mains, streets, load_profile("fort-plain"), **due)
    same = run(lots, mains, streets, load_profile("fort-plain", overrides=overrides), **due)
    assert set(law["status"]) == {"mandated", "out_of_range", "in_range_not_abutting", "unoccupied"}
    pd.testing.assert_frame_equal(same[["status", "section", "reason"]], law[["status", "section", "reason"]])
    assert "set for this run" not in " ".join(same["reason"]) and not same["section"].str.contains("user").any()
    assert "the 100 ft of § 144-4" in same.loc["F", "reason"]


ORDINANCES = Path(__file__).parent / "data" / "ordinances"  # the laws as published


@pytest.mark.parametrize("period", [None, "45"])
def test_wappinger_reason_says_which_words_are_the_laws_and_which_the_runs(street_block, period):
    """Under Wappinger the reason read "§ 196-17E (value set by the user) requires an occupied property within 100 ft
    to connect within 60 days of official notice", but § 196-17E has no distance, no occupancy test and no "official
    notice" (a tester). The distance is said as the run's, the law quoted as printed, the period as the run's."""
    streets, mains = street_block
    overrides = {"mandate.distance_ft": "100"} | ({"mandate.notice_period_days": period} if period else {})
    said = run([lot("A", 0, 25)], mains, streets, load_profile("wappinger", overrides=overrides)).loc["A", "reason"]
    assert ', within 100 ft, the distance set for this run (§ 196-17E sets none). § 196-17E: "At such time' in said
    law = " ".join((ORDINANCES / "001_6087594931cfcf6f.txt").read_text(encoding="utf-8").split())
    quoted = said.split('§ 196-17E: "', 1)[1].split('"', 1)[0].rstrip(".")
    assert quoted in law  # every word the reason gives as § 196-17E's is in § 196-17E
    for claimed in ("requires an occupied property", "official notice", "(value set by the user) requires"):
        assert claimed not in said, claimed
    if period:
        assert (
            "The period to connect: within 45 days of the notice (the period set for this run; § 196-17E sets none)"
            in said
        )
    else:
        assert said.endswith("No period to connect is set (§ 196-17E sets none; the Town sets it).")


@pytest.mark.parametrize(
    "overrides, says",
    [
        (
            {"mandate.distance_ft": "150"},
            [
                ', within 150 ft, the distance set for this run (§ 144-4 sets 100 ft). § 144-4: "provided that said '
                'public sewer is located within 100 feet of the property line." The period to connect: within 90 days'
                " of official notice (§ 144-4).",
                "60.0 ft beyond 150 ft, the distance set for this run (§ 144-4 sets 100 ft); no connection",
            ],
        ),
        (
            {"mandate.notice_period_days": "60"},
            [
                "; § 144-4 requires an occupied property within 100 ft to connect. The period to connect: within 60 "
                "days of official notice (the period set for this run; § 144-4 sets 90 days). Deadline 2027-04-30.",
                "110.0 ft beyond the 100 ft of § 144-4; no connection",
            ],
        ),
        (
            {"mandate.distance_ft": "150", "mandate.notice_period_days": "60"},
            [
                "(§ 144-4 sets 100 ft).",
                "The period to connect: within 60 days of official notice (the period set for this run; § 144-4 sets "
                "90 days). Deadline 2027-04-30.",
            ],
        ),
    ],
)
def test_a_value_the_law_sets_and_the_run_replaced_is_said_as_the_runs(street_block, overrides, says):
    """With --set mandate.distance_ft=150 under Fort Plain, the reason read "§ 144-4 (value set by the user) requires
    an occupied property within 150 ft to connect within 90 days", and an out-of-range parcel lay "beyond the 150 ft
    of § 144-4": § 144-4 requires nothing at 150 ft, and a village attorney reading the letter would object. So with
    a period set for the run. The value is said as the run's, beside what the law sets, the law quoted as printed."""
    streets, mains = street_block
    profile = load_profile("fort-plain", overrides=overrides)
    r = run([lot("A", 0, 25), lot("F", 0, 210)], mains, streets, profile, notice_date=dt.date(2027, 3, 1))
    said = " ".join(r.loc[["A", "F"], "reason"])
    assert r.loc["A", "status"] == "mandated" and r.loc["F", "status"] == "out_of_range"
    for words in says:
        assert words in said, words
    for claimed in (
        "(value set by the user) requires",
        "within 150 ft to connect",
        "within 60 days of official notice. ",
        "the 150 ft of § 144-4",
    ):
        assert claimed not in said, claimed
    if "mandate.distance_ft" in overrides:
        law = " ".join((ORDINANCES / "000_56113acefb055a4e.txt").read_text(encoding="utf-8").split())
        assert said.split('§ 144-4: "', 1)[1].split('"', 1)[0].rstrip(".") in law


def test_main_crossing_the_parcel_is_zero_ft(fort_plain, street_block):
    # The main runs north through the lot in a 20-ft sewer easement, mapped as a right-of-way polygon (§ 144-1
    # measures to "the edge of a sewer right-of-way" where the building sewer connects in one).
    streets, _ = street_block
    easement = frame([{"street_name": "Sewer easement", "geometry": box(15, -50, 35, 500)}])
    mains = frame([{"main_id": "M-9", "geometry": LineString([(25, -50), (25, 500)])}])
    both = gpd.GeoDataFrame(pd.concat([streets, easement], ignore_index=True), crs=CRS)
    r = run([lot("P", 0, 25)], mains, both, fort_plain)
    assert r.loc["P", "distance_ft"] == 0
    assert r.loc["P", "main_id"] == "M-9"
    assert r.loc["P", "status"] == "mandated"
    assert "(in Sewer easement)" in r.loc["P", "reason"]


def test_main_only_crossing_a_street_does_not_sewer_it(fort_plain, street_block):
    # The same main without its easement: it crosses Main St (50 ft inside it) but does not run along it.
    streets, _ = street_block
    mains = frame([{"main_id": "M-9", "geometry": LineString([(25, -50), (25, 500)])}])
    r = run([lot("P", 0, 25)], mains, streets, fort_plain)
    assert r.loc["P", "distance_ft"] == 0
    assert r.loc["P", "status"] == "in_range_not_abutting"


def test_main_on_far_side_of_a_wide_street(fort_plain):
    # 120 ft right-of-way; the main runs 10 ft inside its far edge: 110 ft from the lots on the near side.
    streets = frame(
        [{"street_name": "State Rte 5", "row_width_ft": 120.0, "geometry": LineString([(-1000, 0), (2000, 0)])}]
    )
    mains = frame([{"main_id": "M-1", "geometry": LineString([(-1000, -50), (2000, -50)])}])
    near = lot("near", 0, -60 - 100)  # south side: 10 ft from the main
    far = lot("far", 100, 60)  # north side: 110 ft from the main
    r = run([near, far], mains, streets, fort_plain)
    assert r.loc["near", "status"] == "mandated"
    assert r.loc["far", "distance_ft"] == pytest.approx(110)
    assert r.loc["far", "status"] == "out_of_range"
    assert bool(r.loc["far", "abuts_sewered_street"]) is True
    assert "10.0 ft beyond the 100 ft of § 144-4" in r.loc["far", "reason"]
    # Poughkeepsie's 300 ft reaches it.
    pk = run([near, far], mains, streets, load_profile("poughkeepsie"))
    assert pk.loc["far", "status"] == "mandated"


def test_multipart_parcel_measures_from_nearest_part(fort_plain, street_block):
    streets, mains = street_block
    parts = MultiPolygon([box(0, 400, 50, 500), box(100, 25, 150, 125)])
    r = run([{"parcel_id": "MP", "occupied": True, "geometry": parts}], mains, streets, fort_plain)
    assert r.loc["MP", "distance_ft"] == pytest.approx(25)
    assert r.loc["MP", "status"] == "mandated"


def test_parcel_with_hole_measures_to_the_hole_boundary(fort_plain):
    # A 400 x 400 parcel with a 200 x 200 hole (another owner's lot); the main runs through the middle of the hole.
    shell = [(0, 0), (400, 0), (400, 400), (0, 400)]
    hole = [(100, 100), (300, 100), (300, 300), (100, 300)]
    streets = frame(
        [{"street_name": "Easement", "row_width_ft": 40.0, "geometry": LineString([(200, 120), (200, 280)])}]
    )
    mains = frame([{"main_id": "M-1", "geometry": LineString([(200, 150), (200, 250)])}])
    r = run([{"parcel_id": "H", "occupied": True, "geometry": Polygon(shell, [hole])}], mains, streets, fort_plain)
    assert r.loc["H", "distance_ft"] == pytest.approx(50)  # from the hole's edge at y=100 to the main's end


@pytest.mark.parametrize(
    ("attrs", "counted_by_default"),
    [
        ({"sewer_type": "storm"}, False),
        ({"ownership": "private"}, False),
        ({"sewer_type": "combined"}, False),
        ({"sewer_type": "force"}, False),
        ({"status": "abandoned"}, False),
        ({"sewer_type": "sanitary", "ownership": "public", "status": "active"}, True),
    ],
)
def test_which_mains_count(fort_plain, street_block, attrs, counted_by_default):
    streets, _ = street_block
    near = frame([{"main_id": "NEAR", **attrs, "geometry": LineString([(-1000, 0), (2000, 0)])}])
    far = frame([{"main_id": "FAR", "geometry": LineString([(-1000, -400), (2000, -400)])}])
    mains = gpd.GeoDataFrame(pd.concat([near, far], ignore_index=True), crs=CRS)
    r = run([lot("P", 0, 25)], mains, streets, fort_plain)
    assert (r.loc["P", "main_id"] == "NEAR") is counted_by_default


def test_private_and_combined_count_by_setting(street_block):
    streets, _ = street_block
    mains = frame(
        [
            {"main_id": "PVT", "ownership": "private", "geometry": LineString([(-1000, 0), (2000, 0)])},
            {"main_id": "CMB", "sewer_type": "combined", "geometry": LineString([(-1000, 5), (2000, 5)])},
        ]
    )
    none = run([lot("P", 0, 25)], mains, streets, load_profile("fort-plain"))
    assert none.loc["P", "status"] == "no_public_sewer"
    private = load_profile("fort-plain", overrides={"sewers.count_private": "true"})
    assert run([lot("P", 0, 25)], mains, streets, private).loc["P", "main_id"] == "PVT"
    combined = load_profile("fort-plain", overrides={"sewers.count_combined": "true"})
    assert run([lot("P", 0, 25)], mains, streets, combined).loc["P", "main_id"] == "CMB"


def test_in_range_but_not_abutting(fort_plain, street_block):
    # Lot B fronts Back St (unsewered, right-of-way y 180..230); its rear line (y=90) is 90 ft from Main St's main.
    _, mains = street_block
    back_lot = {"parcel_id": "B", "occupied": True, "geometry": box(0, 90, 50, 180)}
    streets = frame(
        [
            {"street_name": "Main St", "geometry": LineString([(-1000, 0), (2000, 0)])},
            {"street_name": "Back St", "geometry": LineString([(-1000, 205), (2000, 205)])},
        ]
    )
    r = run([back_lot, lot("F", 0, 25, d=65)], mains, streets, fort_plain)
    assert r.loc["B", "distance_ft"] == pytest.approx(90)
    assert bool(r.loc["B", "abuts_sewered_street"]) is False
    assert r.loc["B", "status"] == "in_range_not_abutting"
    assert "not in a street, alley or right-of-way the parcel abuts" in r.loc["B", "reason"]
    assert r.loc["F", "status"] == "mandated"


def test_said_sewer_is_the_one_in_the_abutting_street(fort_plain):
    # The nearest main (REAR, 40 ft behind the lot, in no street) is not in the street the lot abuts; the main in
    # Main St 80 ft away is "said public sewer" and decides.
    streets = frame(
        [{"street_name": "Main St", "row_width_ft": 110.0, "geometry": LineString([(-1000, 0), (2000, 0)])}]
    )
    mains = frame(
        [
            {"main_id": "STREET", "geometry": LineString([(-1000, -25), (2000, -25)])},
            {"main_id": "REAR", "geometry": LineString([(-1000, 195), (2000, 195)])},
        ]
    )
    r = run([lot("P", 0, 55)], mains, streets, fort_plain)
    assert r.loc["P", "main_id"] == "STREET"
    assert r.loc["P", "distance_ft"] == pytest.approx(80)
    assert r.loc["P", "status"] == "mandated"
    assert "(in Main St)" in r.loc["P", "reason"]


def test_occupancy_from_buildings_sheds_do_not_count(fort_plain, street_block):
    streets, mains = street_block
    parcels = [
        lot("HOUSE", 0, 25, occupied=None),
        lot("SHED", 100, 25, occupied=None),
        lot("EMPTY", 200, 25, occupied=None),
        lot("FLAGGED", 300, 25, occupied=None),
    ]
    buildings = frame(
        [
            {"building_id": "B1", "geometry": box(10, 50, 40, 80)},  # 900 sq ft house
            {"building_id": "B2", "geometry": box(110, 100, 120, 112)},  # 120 sq ft shed
            {"building_id": "B3", "occupied": True, "geometry": box(310, 100, 320, 110)},  # small but marked occupied
        ]
    )
    r = analyze_mandates(
        frame(parcels), mains, streets=streets, buildings=buildings, profile=fort_plain
    ).parcels.set_index("parcel_id")
    assert r["status"].to_dict() == {
        "HOUSE": "mandated",
        "SHED": "unoccupied",
        "EMPTY": "unoccupied",
        "FLAGGED": "mandated",
    }
    assert "no building of 150 sq ft or more" in r.loc["SHED", "reason"]
    assert (r["occupied_source"] == "buildings").all()


@pytest.mark.parametrize("reverse", [False, True])
def test_a_building_whose_middle_is_on_no_parcel_stands_on_the_one_it_covers_most(fort_plain, street_block, reverse):
    """A twin house drawn as one footprint centred on the lot line, a footprint whose middle falls in a gap
    between two parcels, a building point on a lot line: each used to stand on no parcel, and left its lot
    "unoccupied". Each now stands on the parcel it covers most; on a tie, the lower parcel ID, in any row order."""
    streets, mains = street_block
    parcels = [
        lot("A-1", 0, 25, occupied=None),
        lot("A-2", 50, 25, occupied=None),  # the twin's footprint, x 30..70, is centred on their line x=50
        lot("GAP-1", 200, 25, occupied=None),  # a 4 ft gap x 250..254, where the footprint's middle falls
        lot("GAP-2", 254, 25, occupied=None),
        lot("PT-1", 400, 25, occupied=None),  # a building point on the line x=450
        lot("PT-2", 450, 25, occupied=None),
        lot("N-10", 600, 25, occupied=None),  # a twin on the line of N-9 and N-10: N-9 comes first, as M-9 does
        lot("N-9", 650, 25, occupied=None),
        lot("FRONT", 800, 25, occupied=None),  # a kiosk in the street, sharing FRONT's front line (y=25)
        lot("CROSS", 900, 25, occupied=None),  # a street building over CROSS's front line by half a foot
    ]
    buildings = [
        {"building_id": "TWIN", "geometry": box(30, 50, 70, 80)},
        {"building_id": "ASTRAY", "geometry": box(230, 50, 262, 80)},  # 20 ft on GAP-1, 8 ft on GAP-2
        {"building_id": "POINT", "geometry": shapely.Point(450, 60)},
        {"building_id": "NUMBERS", "geometry": box(630, 50, 670, 80)},
        {"building_id": "KIOSK", "geometry": box(810, 5, 840, 25)},
        {"building_id": "OVER", "geometry": box(905, 0, 945, 25.5)},  # 20 sq ft on CROSS, under 150 and half
    ]
    if reverse:
        parcels, buildings = parcels[::-1], buildings[::-1]
    result = analyze_mandates(frame(parcels), mains, streets=streets, buildings=frame(buildings), profile=fort_plain)
    ids = result.parcels["parcel_id"].to_numpy()
    where = np.where(result.building_parcels >= 0, ids[result.building_parcels], None)
    stands = dict(zip(frame(buildings)["building_id"], where, strict=True))
    assert stands == {"TWIN": "A-1", "ASTRAY": "GAP-1", "POINT": "PT-1", "NUMBERS": "N-9", "KIOSK": None, "OVER": None}
    status = result.parcels.set_index("parcel_id")["status"].to_dict()
    assert status == {
        "A-1": "mandated",
        "A-2": "unoccupied",
        "GAP-1": "mandated",
        "GAP-2": "unoccupied",
        "PT-1": "mandated",
        "PT-2": "unoccupied",
        "N-10": "unoccupied",
        "N-9": "mandated",
        "FRONT": "unoccupied",
        "CROSS": "unoccupied",
    }


EMPTY_LOT = (
    "No building used for human occupancy, employment or recreation on the parcel (no building of 150 sq ft or more, "
    "nor one marked occupied, stands on it); § 144-4 applies only to occupied property."
)


@pytest.mark.parametrize("reverse", [False, True])
def test_a_house_across_the_lot_line_is_named_on_the_lot_it_is_not_counted_on(fort_plain, street_block, reverse):
    """A house drawn across the line between two lots is counted on the lot where its middle stands; the other lot
    stayed "unoccupied ... no building of 150 sq ft or more ... stands on it", which its owner could show false at
    the board meeting. Its reason now names the house, the square feet on the lot and the lot it is counted on, and
    why there; the statuses are as before. A house over the line by 5 sq ft, a shed, a building wholly on its own
    lot say nothing new."""
    streets, mains = street_block
    parcels = [
        lot("A", 0, 25, occupied=None),  # HOUSE, x 22..62: 28 ft (840 sq ft, its middle) on A, 12 ft on B
        lot("B", 50, 25, occupied=None),
        lot("C", 200, 25, occupied=None),  # EDGE: its middle on C, 5 sq ft on D
        lot("D", 250, 25, occupied=None),
        lot("E", 400, 25, occupied=None),  # SHED, 140 sq ft, half on each: counts on neither
        lot("F", 450, 25, occupied=None),
        lot("N-10", 600, 25, occupied=None),  # TWIN centred on the line: counted on N-9, which comes first
        lot("N-9", 650, 25, occupied=None),
        lot("GAP-1", 800, 25, occupied=None),  # ASTRAY: its middle in the 4 ft gap, 15 ft on GAP-1, 13 on GAP-2
        lot("GAP-2", 854, 25, occupied=None),
        lot("TWO", 1000, 25, occupied=None),  # two houses of the lots either side stand partly on TWO
        lot("LEFT", 950, 25, occupied=None),
        lot("RIGHT", 1050, 25, occupied=None),
    ]
    buildings = [
        {"building_id": "HOUSE", "geometry": box(22, 50, 62, 80)},
        {"building_id": "EDGE", "geometry": box(230, 50, 251, 60)},  # 1 x 5 ft on D
        {"building_id": "SHED", "geometry": box(443, 50, 457, 60)},
        {"building_id": "TWIN", "geometry": box(630, 50, 670, 80)},
        {"building_id": "ASTRAY", "geometry": box(835, 50, 867, 80)},
        {"building_id": "L-2", "geometry": box(960, 50, 1016, 60)},  # 160 sq ft on TWO
        {"building_id": "R-1", "geometry": box(1040, 50, 1090, 70)},  # 200 sq ft on TWO
    ]
    if reverse:
        parcels, buildings = parcels[::-1], buildings[::-1]
    r = analyze_mandates(frame(parcels), mains, streets=streets, buildings=frame(buildings), profile=fort_plain)
    r = r.parcels.set_index("parcel_id")
    occupied = {"A", "C", "N-9", "GAP-1", "LEFT", "RIGHT"}
    assert r["status"].to_dict() == {p: "mandated" if p in occupied else "unoccupied" for p in r.index}
    head = "No building used for human occupancy, employment or recreation is counted on the parcel ("
    rest = "; no other building of 150 sq ft or more, nor one marked occupied, stands on it); § 144-4 applies"
    said = {
        "B": "building HOUSE covers 360 sq ft of it but is counted on parcel A, where its middle stands",
        "N-10": "building TWIN covers 600 sq ft of it but is counted on parcel N-9, which holds as much of it and "
        "comes first by parcel ID",
        "GAP-2": "building ASTRAY covers 390 sq ft of it but is counted on parcel GAP-1, which holds more of it",
        # the most square feet first
        "TWO": "building R-1 covers 200 sq ft of it but is counted on parcel RIGHT, where its middle stands; building "
        "L-2 covers 160 sq ft of it but is counted on parcel LEFT, where its middle stands",
    }
    for parcel, words in said.items():
        assert r.loc[parcel, "reason"].startswith(head + words + rest), parcel
    for parcel in ("D", "E", "F"):
        assert r.loc[parcel, "reason"] == EMPTY_LOT


def test_a_house_across_the_lot_line_leaves_the_roll_unquestioned_and_a_lot_without_buildings_as_it_was(
    fort_plain, street_block
):
    """The roll's residential class of a lot with a house partly on it is not said to show a house the layer lacks:
    the house is named. Without a buildings layer nothing is said of buildings."""
    streets, mains = street_block
    lots = [
        {"parcel_id": "A", "property_class": "210", "geometry": box(0, 25, 50, 125)},
        {"parcel_id": "B", "property_class": "210", "geometry": box(50, 25, 100, 125)},
    ]
    house = frame([{"building_id": "HOUSE", "geometry": box(22, 50, 62, 80)}])
    r = analyze_mandates(frame(lots), mains, streets=streets, buildings=house, profile=fort_plain).parcels
    reason = r.set_index("parcel_id").loc["B", "reason"]
    assert "building HOUSE covers 360 sq ft of it" in reason and "assessment roll" not in reason
    r = analyze_mandates(frame(lots), mains, streets=streets, profile=fort_plain).parcels
    assert (r["occupied_source"] == "property class").all() and not r["reason"].str.contains("covers").any()


@pytest.mark.parametrize("reverse", [False, True])
def test_a_building_the_layer_marks_unoccupied_is_named_on_its_lot(fort_plain, street_block, reverse):
    """A lot whose 1,200 sq ft building the buildings layer marks occupied = no stayed "unoccupied ... no building of
    150 sq ft or more, nor one marked occupied, stands on it": one stands on it, marked unoccupied, and its owner
    could say so at the board meeting. Its reason now names it, with its size (the most square feet first); a shed
    marked no, too small to count anyway, is not named, and the statuses are as before."""
    streets, mains = street_block
    parcels = [
        lot("A", 0, 25, occupied=None),  # B-3, 1,200 sq ft, marked no; a 100 sq ft shed marked no
        lot("B", 100, 25, occupied=None),  # a building drawn as a point, marked no
        lot("C", 200, 25, occupied=None),  # two marked no: the larger first
        lot("D", 300, 25, occupied=None),  # a shed marked no only
        lot("E", 400, 25, occupied=None),  # HOUSE across the line, counted on F; MARKED on E itself
        lot("F", 450, 25, occupied=None),
        lot("R", 600, 25, occupied=None, property_class="210"),  # the roll's dwelling is the house marked no
        lot("G", 700, 25, occupied=None),  # a building marked yes
    ]
    buildings = [
        {"building_id": "B-3", "occupied": False, "geometry": box(10, 50, 50, 80)},
        {"building_id": "SHED", "occupied": False, "geometry": box(10, 90, 20, 100)},
        {"building_id": "PT", "occupied": False, "geometry": shapely.Point(120, 60)},
        {"building_id": "SMALL", "occupied": False, "geometry": box(210, 50, 230, 60)},
        {"building_id": "BIG", "occupied": False, "geometry": box(210, 70, 240, 120)},
        {"building_id": "HUT", "occupied": False, "geometry": box(310, 50, 320, 60)},
        {"building_id": "HOUSE", "occupied": None, "geometry": box(438, 50, 478, 80)},  # 360 sq ft on E
        {"building_id": "MARKED", "occupied": False, "geometry": box(405, 90, 425, 100)},
        {"building_id": "VACANT", "occupied": False, "geometry": box(610, 50, 630, 70)},
        {"building_id": "HOME", "occupied": True, "geometry": box(710, 50, 720, 60)},
    ]
    if reverse:
        parcels, buildings = parcels[::-1], buildings[::-1]
    r = analyze_mandates(frame(parcels), mains, streets=streets, buildings=frame(buildings), profile=fort_plain)
    r = r.parcels.set_index("parcel_id")
    assert r["status"].to_dict() == {p: "mandated" if p in ("F", "G") else "unoccupied" for p in r.index}
    head = "No building used for human occupancy, employment or recreation on the parcel ("
    counted = "No building used for human occupancy, employment or recreation is counted on the parcel ("
    marks = " stands on it but the buildings layer marks it unoccupied"
    rest = "; no other building of 150 sq ft or more, nor one marked occupied, stands on it); § 144-4 applies only"
    said = {
        "A": head + "building B-3 of 1,200 sq ft" + marks + rest,
        "B": head + "building PT" + marks + rest,
        "C": head + "building BIG of 1,500 sq ft" + marks + "; building SMALL of 200 sq ft" + marks + rest,
        "E": counted + "building HOUSE covers 360 sq ft of it but is counted on parcel F, where its middle stands; "
        "building MARKED of 200 sq ft" + marks + rest,
        "R": head + "building VACANT of 400 sq ft" + marks + rest,
    }
    for parcel, words in said.items():
        assert r.loc[parcel, "reason"].startswith(words), parcel
    assert "the buildings layer lacks it" not in r.loc["R", "reason"]  # it has it, marked unoccupied
    assert r.loc["D", "reason"] == EMPTY_LOT


@pytest.mark.parametrize("reverse", [False, True])
def test_a_building_marked_unoccupied_across_the_lot_line_is_named_on_the_neighbour_lot(
    fort_plain, street_block, reverse
):
    """A 1,200 sq ft house the buildings layer marks unoccupied, its middle on lot A and 360 sq ft of it on lot B,
    was named on A only: B read "no building of 150 sq ft or more, nor one marked occupied, stands on it", which its
    owner could show false at the board meeting. B's reason names it, says the layer marks it unoccupied and the lot
    it is assigned to, and why there; a marked shed across a line and a marked house over one by 5 sq ft are not
    named, and the statuses are as before."""
    streets, mains = street_block
    parcels = [
        lot("A", 0, 25, occupied=None),  # VACANT, x 22..62: its middle on A, 12 ft (360 sq ft) on B
        lot("B", 50, 25, occupied=None),
        lot("C", 200, 25, occupied=None),  # HOME (occupied, counted on C) and SPARE, marked no, its middle on C
        lot("D", 250, 25, occupied=None),
        lot("GAP-1", 400, 25, occupied=None),  # ASTRAY, marked no: its middle in the 4 ft gap, 15 ft on GAP-1
        lot("GAP-2", 454, 25, occupied=None),  # 13 ft on GAP-2
        lot("E", 600, 25, occupied=None),  # SHED, 140 sq ft, marked no, half on each; EDGE on F by 5 sq ft
        lot("F", 650, 25, occupied=None),
    ]
    buildings = [
        {"building_id": "VACANT", "occupied": False, "geometry": box(22, 50, 62, 80)},
        {"building_id": "HOME", "occupied": True, "geometry": box(210, 90, 220, 100)},
        {"building_id": "SPARE", "occupied": False, "geometry": box(222, 50, 262, 80)},
        {"building_id": "ASTRAY", "occupied": False, "geometry": box(435, 50, 467, 80)},
        {"building_id": "SHED", "occupied": False, "geometry": box(643, 90, 657, 100)},
        {"building_id": "EDGE", "occupied": False, "geometry": box(620, 50, 651, 60)},
    ]
    if reverse:
        parcels, buildings = parcels[::-1], buildings[::-1]
    r = analyze_mandates(frame(parcels), mains, streets=streets, buildings=frame(buildings), profile=fort_plain)
    r = r.parcels.set_index("parcel_id")
    assert r["status"].to_dict() == {p: "mandated" if p == "C" else "unoccupied" for p in r.index}
    counted = "No building used for human occupancy, employment or recreation is counted on the parcel ("
    marks = " sq ft of it but the buildings layer marks it unoccupied, and it is assigned to parcel "
    rest = "; no other building of 150 sq ft or more, nor one marked occupied, stands on it); § 144-4 applies only"
    said = {
        "A": "No building used for human occupancy, employment or recreation on the parcel (building VACANT of 1,200 "
        "sq ft stands on it but the buildings layer marks it unoccupied" + rest,
        "B": counted + "building VACANT covers 360" + marks + "A, where its middle stands" + rest,
        "D": counted + "building SPARE covers 360" + marks + "C, where its middle stands" + rest,
        "GAP-1": "No building used for human occupancy, employment or recreation on the parcel (building ASTRAY of "
        "960 sq ft stands on it but the buildings layer marks it unoccupied" + rest,
        "GAP-2": counted + "building ASTRAY covers 390" + marks + "GAP-1, which holds more of it" + rest,
    }
    for parcel, words in said.items():
        assert r.loc[parcel, "reason"].startswith(words), parcel
    assert "SHED" not in r.loc["E", "reason"]  # E names EDGE, marked no, whose middle stands on it
    assert r.loc["F", "reason"] == EMPTY_LOT  # nor EDGE's 5 sq ft, nor half the marked shed


def test_occupied_attribute_overrides_buildings(fort_plain, street_block):
    streets, mains = street_block
    buildings = frame([{"geometry": box(10, 50, 40, 80)}])
    r = analyze_mandates(
        frame([lot("P", 0, 25, occupied=False)]), mains, streets=streets, buildings=buildings, profile=fort_plain
    ).parcels
    assert r.loc[0, "status"] == "unoccupied"
    assert r.loc[0, "occupied_source"] == "occupied attribute"


def test_occupancy_from_property_class(fort_plain, street_block):
    streets, mains = street_block
    parcels = frame(
        [
            {"parcel_id": "V", "property_class": "311", "geometry": box(0, 25, 50, 125)},
            {"parcel_id": "R", "property_class": "210", "geometry": box(60, 25, 110, 125)},
        ]
    )
    r = analyze_mandates(parcels, mains, streets=streets, profile=fort_plain).parcels.set_index("parcel_id")
    assert r["status"].to_dict() == {"V": "unoccupied", "R": "mandated"}
    assert "property class 311" in r.loc["V", "reason"]


def test_connected_parcels(fort_plain, street_block):
    streets, mains = street_block
    r = run([lot("C", 0, 25, connected=True), lot("N", 100, 25, connected=False)], mains, streets, fort_plain)
    assert r["status"].to_dict() == {"C": "connected", "N": "mandated"}


@pytest.mark.parametrize(
    ("profile", "notice", "deadline"),
    [
        ("fort-plain", dt.date(2027, 3, 1), "2027-05-30"),
        ("fort-plain", dt.date(2027, 12, 1), "2028-02-29"),  # across a leap day
        ("fort-plain", dt.date(2027, 11, 30), "2028-02-28"),
        ("poughkeepsie", dt.date(2027, 1, 31), "2027-03-02"),  # across a short February
        ("poughkeepsie", dt.date(2028, 1, 31), "2028-03-01"),
    ],
)
def test_deadline_is_notice_date_plus_period(street_block, profile, notice, deadline):
    streets, mains = street_block
    reason = "public_health_hazard" if profile == "poughkeepsie" else None
    r = run(
        [lot("P", 0, 25), lot("C", 100, 25, connected=True)],
        mains,
        streets,
        load_profile(profile),
        notice_date=notice,
        notice_reason=reason,
    )
    assert r.loc["P", "deadline"] == deadline
    assert f"Deadline {deadline}." in r.loc["P", "reason"]
    assert pd.isna(r.loc["C", "deadline"])


def test_poughkeepsie_notice_needs_a_reason(street_block):
    streets, mains = street_block
    pk = load_profile("poughkeepsie")
    with pytest.raises(AnalysisError, match="public_health_hazard"):
        run([lot("P", 0, 25)], mains, streets, pk, notice_date=dt.date(2027, 3, 1))
    with pytest.raises(AnalysisError, match="not one the poughkeepsie profile knows"):
        run([lot("P", 0, 25)], mains, streets, pk, notice_date=dt.date(2027, 3, 1), notice_reason="budget")
    # P has no private system (§ 168-22.3C lets a highway improvement's notice reach only such a property)
    r = run(
        [lot("P", 0, 25, private_system="no")],
        mains,
        streets,
        pk,
        notice_date=dt.date(2027, 3, 1),
        notice_reason="highway_improvement",
    )
    assert "to promote a highway improvement program (§ 168-22.2G)" in r.loc["P", "reason"]
    assert r.loc["P", "notice_reason"] == "highway_improvement"


def test_wappinger_needs_the_town_distance(street_block):
    streets, mains = street_block
    with pytest.raises(AnalysisError, match=r"Set the town's distance in feet as mandate.distance_ft") as raised:
        run([lot("P", 0, 25)], mains, None, load_profile("wappinger"))
    assert raised.value.fix == Fix("rule", "mandate.distance_ft", "N")
    town = load_profile("wappinger", overrides={"mandate.distance_ft": "200"})
    # No streets needed: the article does not ask whether the lot abuts a sewered street.
    r = run([lot("P", 0, 150), lot("FAR", 0, 300)], mains, None, town)
    assert r["status"].to_dict() == {"P": "mandated", "FAR": "out_of_range"}
    assert r.loc["P", "section"] == "§ 196-17E (value set by the user)"
    assert pd.isna(r.loc["P", "deadline"])


def test_abutting_test_needs_streets(fort_plain, street_block):
    _, mains = street_block
    with pytest.raises(AnalysisError, match="needs a streets layer"):
        run([lot("P", 0, 25)], mains, None, fort_plain)


def test_no_public_sewer(fort_plain, street_block):
    streets, _ = street_block
    mains = frame([{"main_id": "S", "sewer_type": "storm", "geometry": LineString([(-1000, 0), (2000, 0)])}])
    r = run([lot("P", 0, 25)], mains, streets, fort_plain)
    assert r.loc["P", "status"] == "no_public_sewer"
    assert np.isnan(r.loc["P", "distance_ft"])


def test_input_not_changed_and_index_crs_kept(fort_plain, street_block):
    streets, mains = street_block
    parcels = frame([lot("A", 0, 25), lot("B", 0, 500)])
    parcels.index = [10, 20]
    before = parcels.copy()
    result = analyze_mandates(parcels, mains, streets=streets, profile=fort_plain)
    assert_geodataframe_equal(parcels, before)
    assert list(result.parcels.index) == [10, 20]
    assert result.parcels.crs == parcels.crs
    assert list(result.measuring_lines.index) == [10, 20]


def test_measuring_line_runs_from_property_line_to_main(fort_plain, street_block):
    streets, mains = street_block
    result = analyze_mandates(frame([lot("A", 0, 25)]), mains, streets=streets, profile=fort_plain)
    line = result.measuring_lines.geometry.iloc[0]
    assert line.length == pytest.approx(25)
    start, end = shapely.get_point(line, 0), shapely.get_point(line, -1)
    assert start.y == pytest.approx(25) and end.y == pytest.approx(0)
    assert result.parcels.loc[0, "connection_y"] == pytest.approx(0)


def test_metre_crs_distances_are_converted_to_feet(fort_plain):
    utm = "EPSG:32618"
    streets = gpd.GeoDataFrame(geometry=[LineString([(500000, 4700000), (501000, 4700000)])], crs=utm)
    mains = gpd.GeoDataFrame({"main_id": ["M"]}, geometry=[LineString([(500000, 4700000), (501000, 4700000)])], crs=utm)
    # 30.48006096 m = 100 US survey feet
    parcels = gpd.GeoDataFrame(
        {"parcel_id": ["P"], "occupied": [True]},
        geometry=[box(500100, 4700000 + 1200 / 3937 * 100, 500120, 4700050)],
        crs=utm,
    )
    streets["row_width_ft"] = 210.0
    r = analyze_mandates(parcels, mains, streets=streets, profile=fort_plain).parcels
    assert r.loc[0, "distance_ft"] == pytest.approx(100.0)
    assert r.loc[0, "status"] == "mandated"


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(-2000, 2000), st.floats(-2000, 2000), st.floats(5, 300), st.floats(5, 300)),
        min_size=1,
        max_size=25,
    )
)
def test_distance_is_the_true_nearest_distance(boxes):
    parcels = gpd.GeoDataFrame(
        {"parcel_id": [f"P{i}" for i in range(len(boxes))], "occupied": True},
        geometry=[box(x, y, x + w, y + h) for x, y, w, h in boxes],
        crs=CRS,
    )
    mains = gpd.GeoDataFrame(
        {"main_id": ["A", "B"]},
        geometry=[LineString([(0, 0), (500, 300)]), LineString([(-800, 900), (-100, 1500)])],
        crs=CRS,
    )
    wap = load_profile("wappinger", overrides={"mandate.distance_ft": "150"})
    r = analyze_mandates(parcels, mains, profile=wap).parcels
    # EPSG:2260 is in US survey feet: the planar distance is the answer.
    expected = np.minimum(parcels.distance(mains.geometry[0]), parcels.distance(mains.geometry[1]))
    assert (r["distance_ft"] >= 0).all()
    np.testing.assert_allclose(r["distance_ft"], expected.round(2), atol=0.006)
    assert ((r["status"] == "mandated") == (expected <= 150.01)).all()


def test_service_areas_limit_the_mandate(street_block):
    # Lots A and B on a sewered street; B lies in Phase III (mandates = no), C outside every area.
    streets, mains = street_block
    areas = frame(
        [
            {"area_name": "Phase I/II", "mandates": "yes", "geometry": box(-100, -100, 150, 400)},
            {"area_name": "Phase III", "mandates": "no", "geometry": box(150, -100, 400, 400)},
        ]
    )
    wap = load_profile("wappinger", overrides={"mandate.distance_ft": "100"})
    parcels = frame([lot("A", 0, 25), lot("B", 200, 25), lot("C", 600, 25)])
    r = analyze_mandates(parcels, mains, streets=streets, service_areas=areas, profile=wap).parcels.set_index(
        "parcel_id"
    )
    assert r["status"].to_dict() == {"A": "mandated", "B": "no_public_sewer", "C": "no_public_sewer"}
    assert "public sewer is not yet available" in r.loc["B", "reason"] and "§ 196-17A" in r.loc["B", "reason"]
    without = analyze_mandates(parcels, mains, streets=streets, profile=wap).parcels
    assert (without["status"] == "mandated").all()


# Fort Plain § 144-1: "PROPERTY LINE: The curbline if the building sewer is to connect with the public sewer in a
# public street." The street of street_block (right-of-way y -25..25, main along y=0) gets curbs 10 ft inside its
# right-of-way, at y = +-15: a lot on the right-of-way line is 25 ft from the main, its curbline 15 ft.
CURBS = frame(
    [
        {"curb_id": "C-N", "geometry": LineString([(-1000, 15), (2000, 15)])},
        {"curb_id": "C-S", "geometry": LineString([(-1000, -15), (2000, -15)])},
    ]
)


def test_fort_plain_measures_from_the_curbline_and_reports_both_distances(fort_plain, street_block):
    streets, mains = street_block
    assert fort_plain.mandate.measured_from.value == "curbline"
    result = analyze_mandates(frame([lot("P", 0, 25)]), mains, streets=streets, curbs=CURBS, profile=fort_plain)
    r = result.parcels.set_index("parcel_id").loc["P"]
    assert (r["distance_ft"], r["boundary_distance_ft"], r["measured_from"]) == (15.0, 25.0, "curbline")
    assert (
        "lies 15.0 ft from the curbline in front of the property (the property line, § 144-1; section number "
        "derived) and 25.0 ft from the parcel boundary; § 144-4 requires" in r["reason"]
    )
    # The measuring line is the law's: from the curb to the main. The connection point stays the parcel's.
    line = result.measuring_lines.set_index("parcel_id").geometry["P"]
    assert line.length == 15.0 and line.coords[0][1] == 15.0
    # Without curbs: the parcel boundary, said so; the connection point is the same either way.
    plain = run([lot("P", 0, 25)], mains, streets, fort_plain).loc["P"]
    assert (r["connection_x"], r["connection_y"]) == (plain["connection_x"], plain["connection_y"])
    assert (plain["distance_ft"], plain["boundary_distance_ft"], plain["measured_from"]) == (25, 25, "parcel boundary")


def test_the_curbline_brings_a_lot_within_100_ft(fort_plain):
    # A 210-ft right-of-way: its line is 105 ft from the main, the curb 95 ft. § 144-4's 100 ft is met at the curb.
    streets = frame(
        [{"street_name": "Broad St", "row_width_ft": 210.0, "geometry": LineString([(-1000, 0), (2000, 0)])}]
    )
    mains = frame([{"main_id": "M-1", "geometry": LineString([(-1000, 0), (2000, 0)])}])
    curbs = frame([{"geometry": LineString([(-1000, 95), (2000, 95)])}])
    parcels = frame([lot("P", 0, 105)])
    with_curbs = analyze_mandates(parcels, mains, streets=streets, curbs=curbs, profile=fort_plain).parcels.iloc[0]
    without = analyze_mandates(parcels, mains, streets=streets, profile=fort_plain).parcels.iloc[0]
    assert (with_curbs["status"], with_curbs["distance_ft"], with_curbs["boundary_distance_ft"]) == (
        "mandated",
        95,
        105,
    )
    assert (without["status"], without["distance_ft"]) == ("out_of_range", 105)
    # The profile setting decides: measured from the parcel boundary, the curbs change nothing.
    boundary = load_profile("fort-plain", overrides={"mandate.measured_from": "parcel_boundary"})
    again = analyze_mandates(parcels, mains, streets=streets, curbs=curbs, profile=boundary).parcels.iloc[0]
    assert (again["status"], again["measured_from"]) == ("out_of_range", "parcel boundary")


@pytest.mark.parametrize("name", ["poughkeepsie", "wappinger"])
def test_other_towns_measure_from_the_parcel_boundary(street_block, name):
    streets, mains = street_block
    profile = load_profile(name, overrides={"mandate.distance_ft": "100"})
    r = analyze_mandates(frame([lot("P", 0, 25)]), mains, streets=streets, curbs=CURBS, profile=profile).parcels
    assert (r.iloc[0]["distance_ft"], r.iloc[0]["measured_from"]) == (25, "parcel boundary")


def test_pavement_polygons_are_curbs_and_the_first_curb_crossed_counts(fort_plain, street_block):
    streets, _ = street_block
    # The main runs in the far (south) sidewalk at y=-20: the lot's measuring line crosses both curbs, and the
    # property line is the near one (y=15), 35 ft from the main.
    mains = frame([{"main_id": "M-1", "geometry": LineString([(-1000, -20), (2000, -20)])}])
    pavement = frame([{"geometry": box(-1000, -15, 2000, 15)}])
    r = analyze_mandates(frame([lot("P", 0, 25)]), mains, streets=streets, curbs=pavement, profile=fort_plain)
    p = r.parcels.iloc[0]
    assert (p["distance_ft"], p["boundary_distance_ft"], p["measured_from"]) == (35.0, 45.0, "curbline")


def test_past_the_end_of_a_main_the_curb_in_front_of_the_lot_counts_not_the_neighbours(fort_plain):
    # Main St's main ends at x=1000 (a tester's town). Lot P-20 (x 1155..1255) lies 157.0 ft from its end; its
    # shortest line to the main crosses the curb at x=1093, in front of the lot next door, 94.2 ft from the main.
    # § 144-1's property line is the curbline in front of the property: x 1155..1255 at y=15, 155.72 ft away.
    streets = frame([{"street_name": "Main St", "geometry": LineString([(-1000, 0), (2000, 0)])}])
    mains = frame([{"main_id": "M-3", "geometry": LineString([(0, 0), (1000, 0)])}])
    parcels = frame([lot("P-20", 1155, 25, w=100, d=200), lot("P-1", 400, 25), lot("P-9", 1050, 25, w=40)])
    result = analyze_mandates(parcels, mains, streets=streets, curbs=CURBS, profile=fort_plain)
    r = result.parcels.set_index("parcel_id")
    assert r.loc["P-20", "boundary_distance_ft"] == round(math.hypot(155, 25), 2)
    assert (r.loc["P-20", "distance_ft"], r.loc["P-20", "status"]) == (round(math.hypot(155, 15), 2), "out_of_range")
    line = result.measuring_lines.set_index("parcel_id").geometry["P-20"]
    assert line.coords[0] == pytest.approx((1155, 15))
    # In front of the main, and just past its end, the curb still brings the lot 10 ft nearer.
    assert r.loc["P-1", "distance_ft"] == 15.0
    assert (r.loc["P-9", "distance_ft"], r.loc["P-9", "status"]) == (round(math.hypot(50, 15), 2), "mandated")


def test_a_sewer_right_of_way_is_a_right_of_way_and_its_edge_the_property_line(fort_plain, street_block):
    # A 20-ft sewer easement (x 0..20) runs north from the street through the back lots; its main along x=10.
    # Lot Q abuts the easement, not the sewered street: § 144-4 "abutting on any street, alley or right-of-way in
    # which there is ... a public sanitary sewer"; § 144-1 measures from "the edge of a sewer right-of-way".
    streets, _ = street_block
    mains = frame([{"main_id": "E-1", "geometry": LineString([(10, 30), (10, 1000)])}])
    easement = frame([{"row_id": "EASE-1", "geometry": box(0, 30, 20, 1000)}])
    parcels = frame([lot("Q", 20, 300, w=100)])
    r = analyze_mandates(parcels, mains, streets=streets, sewer_rights_of_way=easement, profile=fort_plain).parcels
    q = r.iloc[0]
    assert (q["status"], q["distance_ft"], q["measured_from"]) == ("mandated", 10.0, "sewer right-of-way edge")
    assert "(in sewer right-of-way EASE-1)" in q["reason"] and "from the edge of the sewer right-of-way" in q["reason"]
    without = analyze_mandates(parcels, mains, streets=streets, profile=fort_plain).parcels.iloc[0]
    assert without["status"] == "in_range_not_abutting"


def test_curbs_through_the_command_line(tmp_path):
    """`sewerplan analyze --layer curbs=FILE`: the curbline decides, both distances are written."""
    import json

    from click.testing import CliRunner

    from gisapp.cli import main
    from layers.write import write_layers
    from tests.conftest import ny_frame

    town, curbs, out = tmp_path / "town.gpkg", tmp_path / "curbs.gpkg", tmp_path / "out.csv"
    street = LineString([(-1000, 0), (2000, 0)])
    write_layers(
        str(town),
        {
            "parcels": ny_frame([{"parcel_id": "P", "occupied": "yes", "geometry": box(0, 105, 50, 205)}]),
            "mains": ny_frame([{"main_id": "M-1", "geometry": street}]),
            "streets": ny_frame([{"street_name": "Broad St", "row_width_ft": 210.0, "geometry": street}]),
        },
    )
    write_layers(str(curbs), {"curblines": ny_frame([{"geometry": LineString([(-1000, 95), (2000, 95)])}])})
    args = ["analyze", "--profile", "fort-plain", "--data", str(town), "--json"]
    plain = json.loads(CliRunner().invoke(main, args).output)
    assert plain["summary"]["counts"]["out_of_range"] == 1
    result = CliRunner().invoke(main, [*args, "--layer", f"curbs={curbs}:curblines", "--out", str(out)])
    assert result.exit_code == 0, result.output
    mandated = json.loads(result.output)["mandated"]
    assert [(m["parcel_id"], m["distance_ft"], m["boundary_distance_ft"], m["measured_from"]) for m in mandated] == [
        ("P", 95.0, 105.0, "curbline")
    ]
    written = pd.read_csv(out)
    assert written.loc[0, "measured_from"] == "curbline" and written.loc[0, "boundary_distance_ft"] == 105.0


@pytest.mark.parametrize("link_kind", ["weir", "orifice", "outlet", "pump", "channel", "inlet"])
def test_a_models_link_that_is_no_pipe_is_no_sewer_to_connect_to(fort_plain, street_block, link_kind):
    """A SWMM model's links are all mains to the network, but a parcel beside a weir, a pump or a street's gutter was
    told to connect to it. Only the model's pipes (its conduits) are sewers; the parcel is measured to the pipe."""
    mains = frame(
        [
            {"main_id": "W-1", "link_kind": link_kind, "geometry": LineString([(-100, -20), (200, -20)])},
            {"main_id": "C-1", "link_kind": "conduit", "geometry": LineString([(-100, -90), (200, -90)])},
        ]
    )
    r = run([lot("P", 0, 0)], mains, street_block[0], fort_plain)
    assert r.loc["P", "main_id"] == "C-1"
    assert r.loc["P", "distance_ft"] == pytest.approx(90.0)


def test_a_deadline_counted_from_service_allows_the_days_for_the_mail(street_block, tmp_path):
    """A town whose resolution counts its period to connect from service (``counted_from = "service"``, with
    ``mail_days``): the letters' date allowed for the mail, but the analysis' deadline column and a batch summary
    counted from the notice's date, so the map and the letter gave two different days."""
    from analysis.profiles import PROFILE_DIR

    text = (PROFILE_DIR / "fort-plain.toml").read_text(encoding="utf-8")
    text = text.replace(
        'counted_from = "notice", note = "Counted from the notice',
        'counted_from = "service", mail_days = 5, note = "Counted from the notice',
        1,
    )
    path = tmp_path / "by-service.toml"
    path.write_text(text, encoding="utf-8")
    profile = load_profile(str(path))
    assert profile.mandate.notice_period_days.mail_days == 5
    streets, mains = street_block
    r = run([lot("P", 0, 25)], mains, streets, profile, notice_date=dt.date(2027, 3, 1))
    assert r.loc["P", "deadline"] == "2027-06-04"  # 90 days and 5 for the mail, as the letter counts them


def test_a_run_with_no_parcel_in_reach_says_how_near_the_nearest_came(fort_plain, street_block):
    """Parcels drawn five miles from their mains were all out of range without a word (a tester). The run keeps the
    nearest distance, and the command warns with it; a run with a parcel in reach does not."""
    from gisapp.words import none_in_reach_words

    streets, mains = street_block
    far = analyze_mandates(frame([lot("FAR", 0, 26_400)]), mains, streets=streets, profile=fort_plain)
    assert far.summary["nearest_main_ft"] == pytest.approx(26_400, abs=0.01)
    assert none_in_reach_words(far.summary).startswith(
        "Warning: the one parcel does not lie within 100 ft of a public sewer main; the nearest lies 26,400.0 ft away."
    )
    near = analyze_mandates(frame([lot("NEAR", 0, 25)]), mains, streets=streets, profile=fort_plain)
    assert none_in_reach_words(near.summary) is None


def test_a_residential_lot_with_no_building_mapped_says_the_roll_has_a_dwelling(fort_plain, street_block):
    """A lot the roll lists as one family (210) with no footprint in the buildings layer was "unoccupied ... no
    building ... stands on it", with nothing to say the roll disagrees (a tester). The sentence says so; a vacant
    lot (311) does not."""
    streets, mains = street_block
    lots = [
        {"parcel_id": "V-2", "property_class": "210", "geometry": box(0, 25, 50, 125)},
        {"parcel_id": "V-3", "property_class": "311", "geometry": box(100, 25, 150, 125)},
    ]
    sheds = frame([{"building_id": "SHED", "geometry": box(300, 50, 305, 55)}])
    r = analyze_mandates(frame(lots), mains, streets=streets, buildings=sheds, profile=fort_plain).parcels
    r = r.set_index("parcel_id")
    assert (r["status"] == "unoccupied").all()
    said = "yet the assessment roll's property class 210 is a residential property: if a house stands there"
    assert said in r.loc["V-2", "reason"] and "assessment roll" not in r.loc["V-3", "reason"]


def test_sections_and_reasons_name_what_decided_and_a_value_set_for_the_run(street_block):
    """With the distance set to 250 ft, a lot in range but not on the main's street read "within 250 ft ... (§
    144-4)", as if 250 ft were the ordinance's; and a parcel with no public sewer had its section given as the
    distance's, "value set by the user", beside a reason about the service area or the mains (a tester)."""
    _, mains = street_block
    streets = frame(
        [
            {"street_name": "Main St", "geometry": LineString([(-1000, 0), (2000, 0)])},
            {"street_name": "Back St", "geometry": LineString([(-1000, 205), (2000, 205)])},
        ]
    )
    wide = load_profile("fort-plain", overrides={"mandate.distance_ft": 250})
    back_lot = {"parcel_id": "B", "occupied": True, "geometry": box(0, 90, 50, 180)}
    r = run([back_lot], mains, streets, wide)
    assert r.loc["B", "status"] == "in_range_not_abutting"
    said = "within 250 ft, the distance set for this run (§ 144-4 sets 100 ft), but not in a street"
    assert said in r.loc["B", "reason"]
    storm = frame([{"main_id": "S-1", "sewer_type": "storm", "geometry": LineString([(-1000, 0), (2000, 0)])}])
    r = run([lot("N", 0, 25)], storm, streets, wide)
    assert r.loc["N", "status"] == "no_public_sewer"
    assert r.loc["N", "section"] == wide.sewers.count_private.citation and "value set" not in r.loc["N", "section"]
