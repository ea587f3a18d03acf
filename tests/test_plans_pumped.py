"""Plans beside a pump station and its force main, by hand.

The town of ``tests/test_plans.py`` (M-1 from manhole A (0, 0) west to P at the plant), with a pumped branch: gravity
main G1 from manhole S1 (300, -300) west to pump station PS (0, -300), and force main F1 from PS north to A, its
inverts rising 95 -> 101 ft as a pumped main's do.
"""

from __future__ import annotations

import pandas as pd
from shapely.geometry import LineString, Point

from analysis.plans import FAILS, MEETS, UNKNOWN
from analysis.profiles import load_profile
from tests.conftest import frame
from tests.test_plans import check, layout, run

SLOPED = load_profile("fort-plain", overrides={"design.min_main_slope_ft_per_ft": 0.004})


def pumped_town() -> dict:
    town = layout()
    pumped = frame(
        [
            {
                "main_id": "G1",
                "diameter_in": 8.0,
                "us_invert_ft": 97.0,
                "ds_invert_ft": 96.0,
                "geometry": LineString([(300, -300), (0, -300)]),
            },
            {
                "main_id": "F1",
                "sewer_type": "force",
                "diameter_in": 4.0,
                "us_invert_ft": 95.0,
                "ds_invert_ft": 101.0,
                "geometry": LineString([(0, -300), (0, 0)]),
            },
        ]
    )
    town["mains"] = pd.concat([town["mains"], pumped], ignore_index=True)
    manholes = town["manholes"].assign(structure="manhole")
    added = frame(
        [
            {"manhole_id": "S1", "structure": "manhole", "geometry": Point(300, -300)},
            {"manhole_id": "PS", "structure": "pump station", "geometry": Point(0, -300)},
        ]
    )
    town["manholes"] = pd.concat([manholes, added], ignore_index=True)
    return town


def test_a_main_ending_on_a_force_main_cannot_connect_there():
    # Drawn east from the middle of F1: a gravity main cannot discharge into a pumped main. It was given a new manhole
    # on F1 ("meets"), and its gravity check ran from an invert read along F1 (98 ft, halfway up its rise).
    r = run(proposed=LineString([(0, -150), (300, -150)]), town=pumped_town(), profile=SLOPED).as_dict()
    connection = check(r, "connection")
    assert connection["verdict"] == FAILS
    assert connection["message"] == (
        "The main ends on force main F1 (within 1 ft), which is pumped under pressure: a gravity main cannot "
        "discharge into it, so the main cannot connect there. Connect it to a gravity main or to a manhole of the "
        "sewer instead (move its end there)."
    )
    gravity = check(r, "gravity")
    assert gravity["verdict"] == UNKNOWN and "98.00" not in gravity["message"] and "F1" in gravity["message"]
    assert check(r, "capacity")["verdict"] == UNKNOWN and r["downstream"]["mains"] == []
    assert "cannot discharge into force main F1" in check(r, "capacity")["message"]


def test_an_end_on_a_force_main_beside_a_gravity_main_joins_the_gravity_main():
    # G2 runs up beside F1, 1.5 ft east of it, to A; the end lies 0.6 ft from F1 and 0.9 ft from G2, both within the
    # tolerance: a gravity main can join G2 there, and the nearer F1 no gravity main can join.
    town = pumped_town()
    beside = frame([{"main_id": "G2", "diameter_in": 8.0, "geometry": LineString([(1.5, -250), (1.5, -2), (0, 0)])}])
    town["mains"] = pd.concat([town["mains"], beside], ignore_index=True)
    q = frame([{"manhole_id": "Q", "structure": "manhole", "geometry": Point(1.5, -250)}])
    town["manholes"] = pd.concat([town["manholes"], q], ignore_index=True)
    r = run(proposed=LineString([(0.6, -150), (300, -150)]), town=town).as_dict()
    assert check(r, "connection")["verdict"] == MEETS and r["downstream"]["connects_at"] == "G2"


def test_a_force_main_downstream_has_no_capacity_by_mannings_equation():
    # A main from S1 drains by G1 to the pump station and up F1: F1's 4 in, read by Manning's gravity equation at
    # the default slope, was given room ("meets"); what it carries is the pump station's to say.
    r = run(proposed=LineString([(300, -300), (600, -300)]), town=pumped_town()).as_dict()
    rows = {row["main_id"]: row for row in r["downstream"]["mains"]}
    assert list(rows) == ["G1", "F1", "M-1"]
    assert rows["G1"]["verdict"] == MEETS and rows["M-1"]["verdict"] == MEETS
    assert (rows["F1"]["capacity_gpd"], rows["F1"]["verdict"]) == (None, UNKNOWN)
    assert check(r, "capacity")["verdict"] == UNKNOWN
    assert check(r, "capacity")["message"] == (
        "Capacity not known: F1 is a force main, whose capacity is that of the pump station feeding it (at PS), not "
        "Manning's gravity equation's: the engineer's."
    )


def test_a_force_main_downstream_has_no_gravity_slope_in_its_row(tmp_path):
    # F1's row showed the profile's default slope for a gravity main, "0.0040 (default)" on the board's table, as
    # if the pumped main had one.
    from pypdf import PdfReader

    from layers.board import write_plan_summary

    town = pumped_town()
    result = run(proposed=LineString([(300, -300), (600, -300)]), town=town)
    rows = {row["main_id"]: row for row in result.as_dict()["downstream"]["mains"]}
    assert (rows["F1"]["slope"], rows["F1"]["slope_source"], rows["F1"]["slope_note"]) == (
        None,
        "not applicable",
        "a force main, pumped under pressure: no gravity slope",
    )
    assert (rows["G1"]["slope"], rows["G1"]["slope_source"], rows["G1"]["slope_note"]) == (0.00333, "inverts", None)
    path = write_plan_summary(
        tmp_path / "pumped.pdf", "S1 east", result.as_dict(), profile=load_profile("fort-plain"), line=result.line
    )
    board = " ".join(" ".join(page.extract_text() for page in PdfReader(path).pages).split())
    assert "F1 4 n/a (a force main, pumped under pressure: no gravity slope)" in board
    assert "0.0040 (default)" not in board
    # a scenario saved before, with the default slope on its force main's row, shows it as it was
    saved = {k: v for k, v in rows["G1"].items() if k != "slope_note"}
    from layers.board import _slope_cell

    assert _slope_cell(saved) == "0.0033" and _slope_cell({**saved, "slope_source": "profile default"}).endswith(
        "(default)"
    )


# -- an end drawn on an existing main a few feet from its manhole ---------------------------------------------------


def test_an_end_a_few_feet_from_an_existing_manhole_connects_at_it():
    # Drawn from 3 ft west of A on M-1, north: a new manhole was built and charged 3 ft from A, and A never named.
    r = run(proposed=LineString([(-3, 0), (-3, 300)])).as_dict()
    first = r["manholes"][0]
    assert (first["id"], first["existing"], first["station_ft"]) == ("A", True, 0.0)
    assert not any(m["id"].startswith("NEW") and m["station_ft"] == 0 for m in r["manholes"])
    assert r["downstream"]["connects_at"] == "A" and r["downstream"]["path"] == ["A", "P"]
    assert check(r, "connection")["message"] == (
        "The drawn main's end lies on existing main M-1, 3.0 ft from existing manhole A (within the 10 ft of "
        "network.connect_at_manhole_within_ft, a setting): it connects at A, its end moved onto it, and no new manhole "
        "is built there beside it."
    )
    # set nearer than the miss, network.connect_at_manhole_within_ft leaves the end where it was drawn
    nearer = load_profile("fort-plain", overrides={"network.connect_at_manhole_within_ft": 2.0})
    first = run(proposed=LineString([(-3, 0), (-3, 300)]), profile=nearer).as_dict()["manholes"][0]
    assert (first["id"], first["existing"]) == ("NEW-1", False)


def test_an_end_farther_from_an_existing_manhole_gets_a_new_manhole():
    # 30 ft from A, beyond network.connect_at_manhole_within_ft: a new manhole on M-1, as before.
    r = run(proposed=LineString([(-30, 0), (-30, 300)])).as_dict()
    first = r["manholes"][0]
    assert (first["id"], first["existing"]) == ("NEW-1", False) and "M-1" in first["reason"]
    assert check(r, "connection")["message"] == (
        "The main ends on the existing sewer at M-1: a new manhole is built on it there."
    )


def test_an_end_on_a_force_main_a_few_feet_from_a_manhole_connects_at_the_manhole():
    # 3 ft down F1 from A: A takes a gravity main's flow, where F1 cannot.
    r = run(proposed=LineString([(0, -3), (300, -3)]), town=pumped_town()).as_dict()
    assert check(r, "connection")["verdict"] == MEETS and r["downstream"]["connects_at"] == "A"


def test_a_main_ending_at_a_pump_station_joins_its_wet_well_without_a_new_manhole():
    """A main drawn to pump station PS was told "a new manhole is built on it there" and charged one (a helper): the
    wet well takes a gravity main's flow, as a manhole does."""
    r = run(proposed=LineString([(0, -300), (-300, -300)]), town=pumped_town(), profile=SLOPED).as_dict()
    connection = check(r, "connection")
    assert connection["verdict"] == MEETS
    assert connection["message"].startswith(
        "The main ends at existing pump station PS (within 1 ft), whose wet well takes its flow; no new manhole"
    )
    assert "new manhole is built on it" not in connection["message"]
