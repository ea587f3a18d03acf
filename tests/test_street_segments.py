"""A street drawn in several segments is one street for "abutting a street in which there is a sewer".

Street layers are split at intersections. § 144-4 and § 168-22.2G speak of the street, not the segment: a lot on
Main St past the intersection where the main's run ends still abuts Main St, in which the main lies. The layers
below are the tester's town (Main St as S-A and S-B, Oak St crossing S-B) and its variations.
"""

from __future__ import annotations

import numpy as np
import pytest
from shapely.geometry import LineString, box

from analysis.mandate import analyze_mandates
from analysis.profiles import load_profile
from analysis.streets import same_street
from tests.conftest import frame, lot


def run(parcels, mains, streets, profile):
    return analyze_mandates(frame(parcels), frame(mains), streets=frame(streets), profile=profile).parcels.set_index(
        "parcel_id"
    )


def street(street_id, name, *points, **attrs):
    return {"street_id": street_id, "street_name": name, "row_width_ft": 50.0, **attrs, "geometry": LineString(points)}


def main(main_id, *points):
    return {"main_id": main_id, "geometry": LineString(points)}


MAIN_ST = [street("S-A", "Main St", (-500, 0), (1000, 0)), street("S-B", "Main St", (1000, 0), (3000, 0))]
# M-1 runs along S-A and 60 ft into S-B: under 1.5 widths (75 ft) of S-B, so S-B alone would hold no main.
M_1 = main("M-1", (-500, 0), (1060, 0))
G_1 = {"parcel_id": "G-1", "occupied": True, "geometry": box(1100, 25, 1160, 150)}  # 47.2 ft from M-1's end


@pytest.mark.parametrize("profile", ["fort-plain", "poughkeepsie"])
def test_a_lot_on_the_next_segment_of_a_sewered_street_abuts_it(profile):
    r = run([G_1], [M_1], MAIN_ST, load_profile(profile))
    assert r.loc["G-1", "distance_ft"] == pytest.approx(47.17, abs=0.01)
    assert bool(r.loc["G-1", "abuts_sewered_street"]) is True
    assert r.loc["G-1", "status"] == "mandated"
    assert r.loc["G-1", "main_id"] == "M-1"
    assert r.loc["G-1", "street_name_main"] == "Main St"
    assert "Sewer main M-1 (in Main St)" in r.loc["G-1", "reason"]


def test_the_setting_off_tests_each_segment_on_its_own():
    profile = load_profile("fort-plain", overrides={"measurement.join_street_segments": False})
    r = run([G_1], [M_1], MAIN_ST, profile)
    assert r.loc["G-1", "status"] == "in_range_not_abutting"
    assert "not in a street, alley or right-of-way the parcel abuts (§ 144-4)" in r.loc["G-1", "reason"]


def test_names_are_compared_without_case_or_spacing(fort_plain):
    streets = [MAIN_ST[0], {**MAIN_ST[1], "street_name": "  MAIN   st "}]
    assert run([G_1], [M_1], streets, fort_plain).loc["G-1", "status"] == "mandated"


def test_segments_meeting_within_the_abut_tolerance_are_joined(fort_plain):
    # S-B digitised 3 ft short of S-A's end (the tolerance is 5 ft); 8 ft short, they do not meet.
    near = [MAIN_ST[0], street("S-B", "Main St", (1003, 0), (3000, 0))]
    apart = [MAIN_ST[0], street("S-B", "Main St", (1008, 0), (3000, 0))]
    assert run([G_1], [M_1], near, fort_plain).loc["G-1", "status"] == "mandated"
    assert run([G_1], [M_1], apart, fort_plain).loc["G-1", "status"] == "in_range_not_abutting"


def test_two_main_streets_that_do_not_meet_are_two_streets(fort_plain):
    # Main St in the hamlet to the west holds M-1; Main St in the hamlet to the east, 100 ft on, holds none. Lot E
    # on the east one is 93 ft from M-1 (across the gap) but abuts no street M-1 lies in.
    streets = [street("W", "Main St", (-500, 0), (1000, 0)), street("E", "Main St", (1100, 0), (3000, 0))]
    mains = [main("M-1", (-500, 0), (1000, 0))]
    r = run([lot("E", 1090, 25, w=60, d=125)], mains, streets, fort_plain)
    assert r.loc["E", "distance_ft"] == pytest.approx(93.41, abs=0.01)
    assert bool(r.loc["E", "abuts_sewered_street"]) is False
    assert r.loc["E", "status"] == "in_range_not_abutting"


def test_a_main_crossing_a_street_does_not_sewer_it(fort_plain):
    # Oak St (two segments, north and south of Main St) is crossed by M-3, which runs along Main St: Oak St's lots
    # abut no street M-3 lies in, on either segment.
    streets = [
        street("S-A", "Main St", (-500, 0), (1000, 0)),
        street("O-N", "Oak St", (0, 0), (0, 1000)),
        street("O-S", "Oak St", (0, 0), (0, -1000)),
    ]
    mains = [main("M-3", (-500, 0), (1000, 0))]
    oak = {"parcel_id": "OAK", "occupied": True, "geometry": box(25, 40, 125, 100)}  # 40 ft from M-3
    r = run([oak], mains, streets, fort_plain)
    assert bool(r.loc["OAK", "abuts_sewered_street"]) is False
    assert r.loc["OAK", "status"] == "in_range_not_abutting"


def test_a_main_crossing_into_the_next_segment_of_another_street_does_not_sewer_it(fort_plain):
    # The tester's Oak St case with the streets split where they cross: M-1 runs along Main St through the
    # intersection with Oak St. S-A, S-B and Oak St's north segment O-N all end there, but O-N is not Main St.
    streets = [*MAIN_ST, street("O-N", "Oak St", (1000, 0), (1000, 1000))]
    oak = {"parcel_id": "OAK-E", "occupied": True, "geometry": box(1030, 90, 1090, 150)}  # 90 ft north of M-1
    r = run([oak], [M_1], streets, fort_plain)
    assert bool(r.loc["OAK-E", "abuts_sewered_street"]) is False
    assert r.loc["OAK-E", "status"] == "in_range_not_abutting"


def test_unnamed_segments_stay_each_its_own_street(fort_plain):
    streets = [{**s, "street_name": None} for s in MAIN_ST]
    r = run([G_1], [M_1], streets, fort_plain)
    assert r.loc["G-1", "status"] == "in_range_not_abutting"
    empty = [{**s, "street_name": " "} for s in MAIN_ST]
    assert run([G_1], [M_1], empty, fort_plain).loc["G-1", "status"] == "in_range_not_abutting"


def test_same_street_groups_connected_same_named_segments():
    lines = [
        LineString([(0, 0), (10, 0)]),  # 0 Main
        LineString([(10, 0), (20, 0)]),  # 1 Main, meets 0
        LineString([(20, 0), (30, 0)]),  # 2 Main, meets 1: one street through 1
        LineString([(10, -5), (10, 5)]),  # 3 Oak crosses at 0/1's joint
        LineString([(100, 0), (110, 0)]),  # 4 Main, alone
        LineString([(30, 0), (40, 0)]),  # 5 unnamed, meets 2
        LineString([(40, 0), (50, 0)]),  # 6 unnamed, meets 5
    ]
    names = np.array(["Main St", "Main St", "main st", "Oak St", "Main St", None, None], dtype=object)
    assert same_street(np.array(lines, dtype=object), names, 0.5).tolist() == [0, 0, 0, 3, 4, 5, 6]


def test_right_of_way_polygons_of_one_street_are_joined(fort_plain):
    streets = [
        {"street_name": "Main St", "geometry": box(-500, -25, 1000, 25)},
        {"street_name": "Main St", "geometry": box(1000, -25, 3000, 25)},
    ]
    r = run([G_1], [M_1], streets, fort_plain)
    assert r.loc["G-1", "status"] == "mandated"


def test_a_same_named_segment_ending_on_the_middle_of_another_is_the_same_street():
    """Oak St as one line carrying the main, and a second "Oak St" segment starting at its midpoint (a T-junction not
    split there): a lot on the second segment 40 ft from the main was "in range, not abutting", while the same
    junction drawn split gave "mandated" (a tester). The answer no longer depends on how the street was drawn."""
    fp = load_profile("fort-plain")
    lot_on_stem = {"parcel_id": "B-1", "occupied": True, "geometry": box(1030, 40, 1130, 140)}  # east of the stem
    mains = [main("M-O", (0, 0), (2000, 0))]
    t_drawn = [street("O-1", "Oak St", (0, 0), (2000, 0)), street("O-2", "Oak St", (1000, 0), (1000, 800))]
    split = [
        street("O-1a", "Oak St", (0, 0), (1000, 0)),
        street("O-1b", "Oak St", (1000, 0), (2000, 0)),
        street("O-2", "Oak St", (1000, 0), (1000, 800)),
    ]
    answers = [run([lot_on_stem], mains, streets, fp).loc["B-1", "status"] for streets in (t_drawn, split)]
    assert answers == ["mandated", "mandated"]
    # another street's segment ending on Oak St is still its own street
    elm = [street("O-1", "Oak St", (0, 0), (2000, 0)), street("E-1", "Elm St", (1000, 0), (1000, 800))]
    assert run([lot_on_stem], mains, elm, fp).loc["B-1", "status"] == "in_range_not_abutting"


def test_a_joined_street_is_named_as_most_of_its_segments_spell_it():
    """Elm St drawn in segments typed "Elm St" and "elm st": a reason named it by whichever segment its main lay in,
    "Sewer main M-E (in elm st)", on the board's record (a tester)."""
    streets = [
        street("E-1", "Elm St", (0, 0), (500, 0)),
        street("E-2", "elm st", (500, 0), (1000, 0)),
        street("E-3", "Elm St", (1000, 0), (1500, 0)),
    ]
    mains = [main("M-E", (500, 0), (1000, 0))]
    lots = [{"parcel_id": "A-1", "occupied": True, "geometry": box(600, 25, 660, 125)}]
    r = run(lots, mains, streets, load_profile("fort-plain"))
    assert "Sewer main M-E (in Elm St) lies 25.0 ft" in r.loc["A-1", "reason"]
