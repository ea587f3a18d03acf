"""Planning an extension on a hand-made street whose answers are worked out by hand."""

from __future__ import annotations

import csv
import json
import re
import sqlite3
import tempfile
from pathlib import Path

import geopandas as gpd
import numpy as np
import pandas as pd
import pyogrio
import pytest
import shapely
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from shapely.geometry import LineString, Point, box

from analysis.errors import AnalysisError
from analysis.network import build_network
from analysis.plan_route import mains_crossed, parcels_crossed
from analysis.plans import (
    MEETS,
    REVIEW,
    VERDICTS,
    _crossing_text,
    allocate_cents,
    compare_plans,
    exfiltration_sections,
    manning_capacity_gpd,
    parcel_flows,
    petition_passes,
    place_manholes,
    plan_extension,
)
from analysis.profiles import load_profile
from gisapp.cli import main
from layers.board import summary_lines
from layers.write import write_layers
from tests.conftest import NY_ORIGIN, frame, ny_frame

FP = load_profile("fort-plain")

# Main St (sewered): main M-1 from manhole A (0, 0) west to P (-400, 0) at the plant. Oak St (no sewer yet) runs
# east from x=0 to x=900 along y=0. Eight lots north of Oak St, 100 ft wide, x = 100 .. 900, their front lot lines
# 25 ft from the centreline (on the 50 ft right-of-way). Occupied: lots 1, 2, 3, 5, 6, 8, two living units each;
# lot 2 is connected already (to Main St, by a long private lateral). Lots 4 and 7 are vacant (class 311), both
# owned by VACANT LLC. Lots 1 and 3 have the same owner.
OWNERS = {
    1: "SMITH JOHN",
    2: "LEE ANN",
    3: "Smith, John",
    4: "VACANT LLC",
    5: "NG MAI",
    6: "DIAZ ROSA",
    7: "VACANT LLC",
    8: "KING AL",
}
OCCUPIED = (1, 2, 3, 5, 6, 8)


def layout(diameter=8.0, ds_invert=98.0, shift=(0, 0), extra_mains=()):
    def f(rows):
        return ny_frame(rows) if shift != (0, 0) else frame(rows)

    streets = f(
        [
            {"street_name": "Main St", "geometry": LineString([(-600, 0), (0, 0)])},
            {"street_name": "Oak St", "geometry": LineString([(0, 0), (900, 0)])},
        ]
    )
    mains = f(
        [
            {
                "main_id": "M-1",
                "diameter_in": diameter,
                "from_manhole": "A",
                "to_manhole": "P",
                "us_invert_ft": 100.0,
                "ds_invert_ft": ds_invert,
                "geometry": LineString([(0, 0), (-400, 0)]),
            },
            *extra_mains,
        ]
    )
    manholes = f([{"manhole_id": "A", "geometry": Point(0, 0)}, {"manhole_id": "P", "geometry": Point(-400, 0)}])
    plant = f([{"outfall_id": "WWTP", "outfall_manhole": "P", "geometry": Point(-420, 0)}])
    parcels = f(
        [
            {
                "parcel_id": f"L{i}",
                "owner_name": OWNERS[i],
                "site_address": f"{100 * i} Oak St",
                "property_class": "210" if i in OCCUPIED else "311",
                "units": 2.0 if i in OCCUPIED else None,
                "connected": i == 2,
                "geometry": box(100 * i, 25, 100 * i + 100, 125),
            }
            for i in range(1, 9)
        ]
    )
    buildings = f([{"geometry": box(100 * i + 30, 50, 100 * i + 70, 90)} for i in OCCUPIED])
    return {
        "streets": streets,
        "mains": mains,
        "manholes": manholes,
        "treatment_plants": plant,
        "parcels": parcels,
        "buildings": buildings,
    }


OAK_ST_MAIN = LineString([(0, 0), (900, 0)])


def run(proposed=OAK_ST_MAIN, diameter=8.0, town=None, profile=FP, **kw):
    town = town or layout()
    net = build_network(town["mains"], manholes=town["manholes"], outfalls=town["treatment_plants"], profile=profile)
    return plan_extension(
        proposed,
        diameter_in=diameter,
        profile=profile,
        parcels=town["parcels"],
        mains=town["mains"],
        streets=town["streets"],
        buildings=town["buildings"],
        network=net,
        **kw,
    )


def check(doc, name):
    return next(c for c in doc["design_checks"] if c["check"] == name)


# -- who is reached, who benefits, the petition ---------------------------------------------------------------


def test_newly_mandated_vacant_lots_petition_and_septic():
    r = run().as_dict()
    assert r["newly_mandated"] == ["L1", "L3", "L5", "L6", "L8"]  # occupied, not connected
    assert r["private_systems"] == ["L1", "L3", "L5", "L6", "L8"]  # § 144-5B: abandon the septic system
    assert r["vacant_benefiting"] == ["L4", "L7"]  # § 144-17B: vacant lots on the new main benefit
    assert r["benefiting"] == ["L1", "L3", "L4", "L5", "L6", "L7", "L8"]
    assert r["units"] == 10
    # Owners: SMITH JOHN (L1, L3), VACANT LLC (L4, L7), NG MAI, DIAZ ROSA, KING AL: five; a majority is three.
    pet = r["petition"]
    assert (pet["benefiting_owners"], pet["signatures_needed"], pet["section"]) == (5, 3, "§ 144-17B")
    smith = next(o for o in pet["owners"] if o["parcels"] == ["L1", "L3"])
    assert smith["addresses"] == ["100 Oak St", "300 Oak St"]


def test_a_town_whose_practice_counts_only_mandated_lots():
    profile = load_profile("fort-plain", overrides={"design.vacant_lots_benefit": "false"})
    r = run(profile=profile).as_dict()
    assert r["benefiting"] == r["newly_mandated"] and r["vacant_benefiting"] == []
    assert (r["petition"]["benefiting_owners"], r["petition"]["signatures_needed"]) == (4, 3)
    assert r["cost"]["laterals_count"] == 5 and set(r["cost"]["by_parcel"]) == set(r["newly_mandated"])


def test_petition_majority_at_exactly_half_is_not_a_majority():
    assert not petition_passes(2, 4) and petition_passes(3, 4) and petition_passes(3, 5) and not petition_passes(2, 5)


def test_a_parcel_with_no_owner_recorded_counts_as_one_owner():
    town = layout()
    town["parcels"].loc[town["parcels"]["parcel_id"].isin(["L5", "L6"]), "owner_name"] = None
    pet = run(town=town).as_dict()["petition"]
    assert pet["benefiting_owners"] == 5 and pet["no_owner_recorded"] == 2  # SMITH, VACANT, KING + two unknown


# -- manholes ---------------------------------------------------------------------------------------------------


def test_the_main_connects_to_the_existing_manhole_it_ends_on():
    r = run().as_dict()
    holes = r["manholes"]
    assert [(m["id"], m["x"], m["existing"]) for m in holes] == [
        ("A", 0, True),
        ("NEW-1", 300, False),
        ("NEW-2", 600, False),
        ("NEW-3", 900, False),
    ]
    assert r["cost"]["manholes"] == 3 * 6_500 and r["cost"]["new_manholes"] == 3  # A is not built or charged
    conn = check(r, "connection")
    assert conn["verdict"] == MEETS and "existing manhole A" in conn["message"]
    assert check(r, "manhole_spacing")["verdict"] == MEETS and "300 ft" in check(r, "manhole_spacing")["message"]


def test_an_end_within_the_snap_tolerance_of_a_manhole_connects_to_it():
    r = run(proposed=LineString([(0.6, 0.5), (900, 0)])).as_dict()
    assert r["manholes"][0]["id"] == "A" and r["manholes"][0]["existing"] and r["connecting_main"] is None


@pytest.mark.parametrize(
    "proposed",
    [LineString([(0, -180), (0, 0), (900, 0)]), LineString([(900, 0), (0, 0), (0, -180)])],
    ids=["drawn from the stub", "drawn to the stub"],
)
def test_a_main_drawn_on_past_the_manhole_it_passes_through_joins_it_there(proposed):
    # Drawn 180 ft south of A and then up Oak St through A: neither end meets the sewer. A connecting main from
    # its south end back to A lay on the drawn main, and cost, leakage and length counted those 180 ft twice.
    r = run(proposed=proposed).as_dict()
    assert r["connecting_main"] is None and r["length_ft"] == r["drawn_length_ft"] == 900.0
    assert r["not_laid"]["beyond_manhole"] == "A" and r["not_laid"]["length_ft"] == 180.0
    assert r["not_laid"]["direction"] == "south" and r["not_laid"]["coords"][0] in ([0, -180], [0, 0])
    assert [(m["id"], m["x"], m["existing"]) for m in r["manholes"]] == [
        ("A", 0, True),
        ("NEW-1", 300, False),
        ("NEW-2", 600, False),
        ("NEW-3", 900, False),
    ]
    assert r["cost"] == run().as_dict()["cost"] and r["newly_mandated"] == run().as_dict()["newly_mandated"]
    told = " ".join(check(r, "connection")["message"].split())
    assert "passes through existing manhole A" in told and "The 180 ft drawn south of A is not laid" in told
    assert "Not laid: the 180 ft drawn south of A, a second main draining into it" in " ".join(summary_lines(r))


@pytest.mark.parametrize(
    "proposed",
    [LineString([(0, -450), (0, 450)]), LineString([(0, 450), (0, -450)])],
    ids=["drawn north", "drawn south"],
)
def test_a_main_through_a_manhole_at_its_middle_is_laid_the_same_whichever_way_it_was_drawn(proposed):
    # A at the middle: neither part is the longer. Drawn north, the 450 ft north of A was laid; drawn south, the 450 ft
    # south of it, with other parcels, manholes and cost: the same line, two plans. The part ending further north is.
    r = run(proposed=proposed).as_dict()
    assert r["not_laid"]["direction"] == "south" and [m["y"] for m in r["manholes"]] == [0, 225, 450]
    assert r["length_ft"] == 450.0 and r["not_laid"]["length_ft"] == 450.0 and r["not_laid"]["middle"]
    told = " ".join(check(r, "connection")["message"].split())
    assert "The 450 ft drawn south of A is not laid" in told
    assert "A is at the middle of the drawn main, so the two parts are equally long" in told
    off = run(proposed=LineString([(0, -451), (0, 450)])).as_dict()["not_laid"]
    assert off["direction"] == "north" and not off["middle"]  # the longer part is laid, as before


def test_a_few_feet_drawn_past_the_manhole_are_said_to_the_tenth():
    # 1.5 ft past A was "The 2 ft drawn south of A", beside "(within 1 ft)".
    r = run(proposed=LineString([(0, -1.5), (0, 0), (900, 0)])).as_dict()
    assert r["not_laid"]["length_words"] == "1.5 ft" and r["drawn_length_ft"] == 900.0
    assert "The 1.5 ft drawn south of A is not laid" in " ".join(check(r, "connection")["message"].split())
    assert "Not laid: the 1.5 ft drawn south of A" in " ".join(summary_lines(r))


def test_a_main_passing_a_manhole_on_no_main_is_not_cut_short_there():
    # S at (450, 0) is in the manholes layer but on no main (a storm structure, say): the main drawn along Oak St from
    # x = 100 was joined there, its flow stopping at a manhole no pipe leaves, and the 350 ft west of S not laid.
    town = layout()
    town["manholes"] = pd.concat([town["manholes"], frame([{"manhole_id": "S", "geometry": Point(450, 0)}])])
    r = run(proposed=LineString([(100, 0), (900, 0)]), town=town).as_dict()
    assert r["not_laid"] is None and r["drawn_length_ft"] == 800.0
    assert (r["connecting_main"]["to_manhole"], r["connecting_main"]["length_ft"]) == ("A", 100.0)
    assert r["newly_mandated"] == ["L1", "L3", "L5", "L6", "L8"] and check(r, "capacity")["verdict"] == MEETS


def test_an_existing_manhole_the_main_passes_through_is_not_said_to_be_at_its_end():
    # C (300, 0) ends M-7, which crosses Oak St: the main's manhole for spacing is C, which was said to be "existing
    # manhole at the end of the main" at station 300 of 900, on the map's tooltip and in the export.
    m7 = {"main_id": "M-7", "diameter_in": 8.0, "geometry": LineString([(300, -100), (300, 0)])}
    town = layout(extra_mains=[m7])
    town["manholes"] = pd.concat([town["manholes"], frame([{"manhole_id": "C", "geometry": Point(300, 0)}])])
    r = run(town=town).as_dict()
    holes = r["manholes"]
    assert [(m["id"], m["station_ft"], m["existing"]) for m in holes][:2] == [("A", 0.0, True), ("C", 300.0, True)]
    assert holes[1]["reason"] == "existing manhole the main runs through"
    assert holes[-1]["reason"] == "end of the main"
    # The plan drains all of it to A, though it runs through C, where M-7 ends: where its flow goes at C is the
    # engineer's call.
    told = check(r, "connection")
    assert told["verdict"] == REVIEW
    assert (
        "runs through 1 more existing manhole of the sewer, built into it as one of its manholes: C (station 300 ft)"
        in " ".join(told["message"].split())
    )


def test_a_manhole_of_the_sewer_the_main_runs_through_is_one_of_its_manholes():
    # C (350, 0) ends M-7, which crosses Oak St. Spaced from A alone, new manholes went at 300 and 600 ft, 50 ft
    # from C, and were charged; the main is built into C, and spaced from it: 350 ft, then 275 and 275 to the end.
    m7 = {"main_id": "M-7", "diameter_in": 8.0, "geometry": LineString([(350, -100), (350, 0)])}
    town = layout(extra_mains=[m7])
    town["manholes"] = pd.concat([town["manholes"], frame([{"manhole_id": "C", "geometry": Point(350, 0)}])])
    r = run(town=town).as_dict()
    assert [(m["id"], m["station_ft"], m["existing"]) for m in r["manholes"]] == [
        ("A", 0.0, True),
        ("C", 350.0, True),
        ("NEW-1", 625.0, False),
        ("NEW-2", 900.0, False),
    ]
    assert r["cost"]["new_manholes"] == 2 and r["cost"]["manholes"] == 2 * 6_500
    assert check(r, "manhole_spacing")["verdict"] == MEETS


def test_a_main_ending_half_a_foot_past_a_manhole_of_the_sewer_has_it_once_as_its_end():
    # Drawn from A to 0.5 ft past C (900, 0), where M-7 ends: C was both a manhole it runs through, 0.5 ft from
    # its end, and its end's manhole: listed twice.
    m7 = {"main_id": "M-7", "diameter_in": 8.0, "geometry": LineString([(900, -100), (900, 0)])}
    town = layout(extra_mains=[m7])
    town["manholes"] = pd.concat([town["manholes"], frame([{"manhole_id": "C", "geometry": Point(900, 0)}])])
    r = run(proposed=LineString([(0, 0), (900.5, 0)]), town=town).as_dict()
    ids = [m["id"] for m in r["manholes"]]
    assert (
        ids == ["A", "NEW-1", "NEW-2", "C"] and r["manholes"][-1]["reason"] == "existing manhole at the end of the main"
    )


def test_bend_gets_a_manhole():
    points = place_manholes(LineString([(0, 0), (300, 0), (300, 300)]), max_spacing=400, bend_deg=10)
    assert [(x, y, r) for x, y, r in points][1] == (300.0, 0.0, "change in alignment")
    assert len(points) == 3


def test_poughkeepsie_sets_no_manhole_rule_so_none_is_applied():
    pk = load_profile("poughkeepsie")
    r = run(proposed=LineString([(0, 0), (900, 0), (900, 300)]), profile=pk).as_dict()
    assert [m["id"] for m in r["manholes"]] == ["A", "NEW-1"]  # the existing manhole and the upper end only
    names = {c["check"] for c in r["design_checks"]}
    assert not names & {"manhole_spacing", "alignment_change", "min_diameter", "pipe_material"}
    assert r["test_sections"] == [] and r["exfiltration_allowance_gpd"] is None and not r["petition"]["applies"]


def test_wappinger_spacing_applies_only_to_planned_mains_of_15_in_or_less():
    """Wappinger's 400 ft (network.manhole_spacing_by_diameter, a setting) is for mains of 15 in or less."""
    wp = load_profile("wappinger", overrides={"mandate.distance_ft": "100"})
    small = run(diameter=12.0, profile=wp).as_dict()
    large = run(diameter=18.0, profile=wp).as_dict()
    assert [m["station_ft"] for m in small["manholes"]] == [0.0, 300.0, 600.0, 900.0]  # 900 ft in three equal runs
    assert "400 ft allowed" in check(small, "manhole_spacing")["message"]
    assert [m["station_ft"] for m in large["manholes"]] == [0.0, 900.0]  # the ends only
    assert "manhole_spacing" not in {c["check"] for c in large["design_checks"]}


# -- leakage: requirements by test section --------------------------------------------------------------------


def test_leakage_allowance_by_section_by_hand():
    # 100 gal/mile/day/inch x 900/5280 mile x 8 in = 136.36; 3 new manholes x 4.5 = 13.5 (§ 144-19C).
    r = run().as_dict()
    assert r["exfiltration_allowance_gpd"] == pytest.approx(136.36 + 13.5, abs=0.06)
    assert r["test_sections"] == [
        {
            "number": 1,
            "from_manhole": "A",
            "to_manhole": "NEW-3",
            "length_ft": 900.0,
            "manholes": 3,
            "allowance_gpd": pytest.approx(149.9, abs=0.06),
            "too_long": False,
        }
    ]
    req = next(q for q in r["requirements"] if q["requirement"] == "exfiltration_test")
    assert req["section"] == "§ 144-19C" and "§ 144-19B" in req["text"] and "1,000 ft" in req["text"]


def test_long_main_is_tested_in_sections_of_at_most_1000_ft():
    # 2,000 ft straight: manholes every 400 ft; runs of 400 grouped 800 + 800 + 400 (1,200 would exceed 1,000).
    mh = [{"id": f"M{k}", "station_ft": 400.0 * k, "existing": k == 0} for k in range(6)]
    sections = exfiltration_sections(mh, diameter_in=8, rate=100, per_manhole=4.5, max_section_ft=1000)
    assert [(s.from_manhole, s.to_manhole, s.length_ft, s.manholes) for s in sections] == [
        ("M0", "M2", 800.0, 1),
        ("M2", "M4", 800.0, 2),
        ("M4", "M5", 400.0, 2),
    ]
    assert sum(s.allowance_gpd for s in sections) == pytest.approx(100 * 2000 / 5280 * 8 + 5 * 4.5)
    one = exfiltration_sections(
        mh[:1] + [dict(mh[1], station_ft=1200.0)], diameter_in=8, rate=100, per_manhole=0, max_section_ft=1000
    )
    assert one[0].too_long  # a single run longer than a test section may be: add a manhole


def test_requirements_are_not_checks():
    r = run().as_dict()
    assert {q["requirement"] for q in r["requirements"]} == {"trench_width", "pipe_material", "exfiltration_test"}
    assert not {"trench_width", "exfiltration_allowance"} & {c["check"] for c in r["design_checks"]}
    trench = next(q for q in r["requirements"] if q["requirement"] == "trench_width")
    assert trench["section"] == "§ 144-18F" and "3 ft 3 in" in trench["text"]
    material = next(q for q in r["requirements"] if q["requirement"] == "pipe_material")
    assert "extra-strength vitrified clay" in material["text"] and material["section"] == "§ 144-18A"


def test_six_inch_fails_the_diameter_rule_and_is_not_covered_by_the_trench_table():
    r = run(diameter=6.0).as_dict()
    assert check(r, "min_diameter")["verdict"] == "does not meet" and check(r, "min_diameter")["passed"] is False
    trench = next(q for q in r["requirements"] if q["requirement"] == "trench_width")
    assert trench["text"].startswith("Not covered by § 144-18F") and "FAIL" not in json.dumps(r)
    assert check(run().as_dict(), "min_diameter")["verdict"] == MEETS


@pytest.mark.parametrize(
    ("material", "verdict"),
    [("reinforced concrete", "meets"), ("RCP", "meets"), ("PVC", "for the engineer"), ("vcp", "for the engineer")],
)
def test_material_outside_144_18a_is_for_the_village_engineer(material, verdict):
    r = run(material=material).as_dict()
    c = check(r, "pipe_material")
    assert c["verdict"] == verdict and c["section"] == "§ 144-18A"
    assert c["passed"] is (True if verdict == "meets" else None)  # never a failure
    assert "pipe_material" not in {q["requirement"] for q in r["requirements"]}


def test_every_check_has_one_plain_verdict():
    town = layout()
    for doc in (run().as_dict(), run(proposed=LineString([(185, 0), (900, 0)]), diameter=6, town=town).as_dict()):
        for c in doc["design_checks"]:
            assert c["verdict"] in VERDICTS
        assert "capacity" not in check(doc, "connection")["message"]
        assert "connecting" not in check(doc, "capacity")["message"]


# -- money ------------------------------------------------------------------------------------------------------


def test_cost_and_its_three_splits_by_hand():
    cost = run().as_dict()["cost"]
    # 900 ft x $250 + 3 new manholes x $6,500 + 7 laterals x $3,500 = 225,000 + 19,500 + 24,500
    assert cost["total"] == 269_000 and cost["main"] == 225_000 and cost["laterals"] == 24_500
    # 26,900,000 cents / 7 = 3,842,857.14: one cent left over goes to the first parcel (largest remainder, tie).
    assert cost["by_parcel"] == {"L1": 38_428.58} | {p: 38_428.57 for p in ("L3", "L4", "L5", "L6", "L7", "L8")}
    assert cost["by_frontage"] == cost["by_parcel"]  # 100 ft each along Oak St
    # By living unit: the vacant lots have none and pay the minimum, $3,500; 269,000 - 7,000 over 10 units.
    assert cost["by_unit"]["L4"] == cost["by_unit"]["L7"] == 3_500
    assert cost["by_unit"]["L1"] == pytest.approx(262_000 / 5, abs=0.01)
    for method in ("by_frontage", "by_parcel", "by_unit"):
        assert round(sum(cost[method].values()), 2) == cost["total"]


def test_frontage_is_measured_along_the_street_the_main_serves():
    rows = {p["parcel_id"]: p for p in run().as_dict()["parcels"]}
    assert {p: r["frontage_ft"] for p, r in rows.items()} == {f"L{i}": 100.0 for i in (1, 3, 4, 5, 6, 7, 8)}


def test_frontage_counts_no_other_street_of_the_same_name():
    """Frontage was along every street of the served street's name: a second Oak St behind L5, which never meets the
    first, doubled L5's frontage (a helper saw it beside the streets joined by name). The served street is the
    segments that meet, as the mandate joins them."""
    town = layout()
    back = {"street_name": "Oak St", "geometry": LineString([(450, 150), (650, 150)])}  # behind L5, apart
    town["streets"] = gpd.GeoDataFrame([*town["streets"].to_dict("records"), back], crs=town["streets"].crs)
    rows = {p["parcel_id"]: p for p in run(town=town).as_dict()["parcels"]}
    assert rows["L5"]["frontage_ft"] == 100.0


def test_parcel_beyond_the_main_end_pays_by_its_frontage_and_at_least_the_minimum():
    # The main stops at x=450: L5 (500..600) is 56 ft from its end, so it becomes mandated; its frontage along
    # Oak St, the street the main serves, is 100 ft. L9 abuts Oak St only at its corner: no frontage on it.
    town = layout()
    town["parcels"] = gpd.GeoDataFrame(
        [
            *town["parcels"].to_dict("records"),
            {
                "parcel_id": "L9",
                "owner_name": "ORR BO",
                "units": 1.0,
                "property_class": "210",
                "connected": False,
                "geometry": box(902, 26, 1002, 126),
            },
        ],
        crs=town["parcels"].crs,
    )
    town["buildings"] = gpd.GeoDataFrame(
        [*town["buildings"].to_dict("records"), {"geometry": box(930, 50, 970, 90)}], crs=town["parcels"].crs
    )
    short = run(proposed=LineString([(0, 0), (450, 0)]), town=town).as_dict()
    assert "L5" in short["newly_mandated"] and "L6" not in short["newly_mandated"]
    rows = {p["parcel_id"]: p for p in short["parcels"]}
    assert rows["L5"]["frontage_ft"] == 100.0 and rows["L5"]["by_frontage"] > 3_500
    full = run(town=town).as_dict()
    rows = {p["parcel_id"]: p for p in full["parcels"]}
    assert "L9" in full["newly_mandated"] and rows["L9"]["frontage_ft"] == 0.0
    assert rows["L9"]["by_frontage"] == 3_500.00  # design.min_share_per_parcel
    assert round(sum(full["cost"]["by_frontage"].values()), 2) == full["cost"]["total"]


@settings(max_examples=200, deadline=None)
@given(
    total=st.integers(min_value=0, max_value=10**11),
    weights=st.lists(st.floats(min_value=0, max_value=1e6, allow_nan=False), min_size=1, max_size=40),
    minimum=st.integers(min_value=0, max_value=10**7),
)
def test_every_split_sums_to_the_total_to_the_cent(total, weights, minimum):
    cents = allocate_cents(total, weights, minimum_cents=minimum)
    assert cents.sum() == total and (cents >= 0).all()
    if minimum * len(weights) < total:
        assert (cents >= minimum).all()
        w = np.asarray(weights)
        order = np.argsort(w, kind="stable")
        assert (np.diff(cents[order]) >= -1).all()  # more weight never pays less (but for one rounding cent)


# -- flow -------------------------------------------------------------------------------------------------------


def test_unknown_units_are_said_unknown_and_flow_comes_from_the_class_table():
    flows = parcel_flows(gpd.GeoDataFrame({"units": [None, None, 3], "property_class": ["612", "710", "280"]}), FP)
    assert flows["units"].isna().tolist() == [True, True, False]
    assert flows["flow_gpd"].tolist() == [4_500, 1_250, 750]  # typical_flow_gpd_by_class; 3 x 250
    town = layout()
    school = town["parcels"]["parcel_id"] == "L8"
    town["parcels"].loc[school, ["units", "property_class"]] = [None, "612"]
    r = run(town=town).as_dict()
    rows = {p["parcel_id"]: p for p in r["parcels"]}
    assert rows["L8"]["units_text"] == "unknown" and rows["L8"]["flow_gpd"] == 4_500
    assert "typical flow for property class 612" in rows["L8"]["basis"]
    assert r["flow"]["units_unknown"] == ["L8"] and r["units"] == 8
    # 4 houses x 2 units x 250 + the school's 4,500 + two vacant lots' future houses (311: 250 each)
    assert r["flow"]["added_average_gpd"] == 2_000 + 4_500 + 500
    assert r["downstream"]["added_peak_gpd"] == 4 * 7_000


# -- connection and downstream --------------------------------------------------------------------------------


def test_downstream_capacity_ok_and_exceeded():
    r = run().as_dict()
    down = r["downstream"]
    assert down["connects_at"] == "A" and down["path"] == ["A", "P"] and down["connection_gap_ft"] == 0
    assert (down["outfall"], down["plant"]) == ("P", "WWTP")  # P is the inlet the plants layer names
    assert "from A to P (the inlet of the treatment plant WWTP)" in check(r, "capacity")["message"]
    assert check(r, "capacity")["verdict"] == MEETS and down["mains"][0]["slope"] == pytest.approx(0.005)
    # 5 houses x 2 x 250 + 2 vacant lots x 250 = 3,000 gpd x 4 = 12,000 added; L2 (2 units) present: 2,000.
    tight = run(town=layout(diameter=4.0, ds_invert=99.98)).as_dict()
    cap = manning_capacity_gpd(4.0, 0.02 / 400, 0.013)
    row = tight["downstream"]["mains"][0]
    assert row["capacity_gpd"] == pytest.approx(cap, abs=0.5) and row["present_peak_gpd"] == 2_000
    assert tight["downstream"]["added_peak_gpd"] == 12_000 and cap < 14_000
    assert check(tight, "capacity")["verdict"] == "does not meet" and "M-1" in check(tight, "capacity")["message"]


@pytest.mark.parametrize(
    ("ds_invert", "told"),
    [
        (101.0, "M-1 runs uphill by its inverts (downstream 101.00 ft above upstream 100.00 ft): check them"),
        (100.0, "M-1 is laid level by its inverts (100.00 ft at both ends): check them"),
    ],
)
def test_a_main_laid_uphill_downstream_has_no_capacity_by_a_default_slope(ds_invert, told):
    # The profile's default slope is for a main whose inverts are unknown: put on a main that `network check`
    # reports as adverse, it made room that is not there and the capacity read as met.
    r = run(town=layout(ds_invert=ds_invert)).as_dict()
    row = r["downstream"]["mains"][0]
    assert (row["capacity_gpd"], row["verdict"], row["slope_source"]) == (None, "not known", "inverts")
    assert row["slope"] == pytest.approx((100.0 - ds_invert) / 400)
    assert check(r, "capacity")["verdict"] == "not known" and check(r, "capacity")["message"] == (
        f"Capacity not known: {told}."
    )
    unknown = layout()
    unknown["mains"]["ds_invert_ft"] = np.nan  # inverts not known: the profile's default slope, as before
    row = run(town=unknown).as_dict()["downstream"]["mains"][0]
    assert row["slope_source"] == "profile default" and row["verdict"] == MEETS


def test_a_models_box_or_twin_pipe_downstream_has_no_capacity_from_the_round_pipe_equation():
    """A SWMM model's box culvert or twin pipe is read with the narrowest of one barrel as its diameter (for the size
    rules); the capacity check took it for one full round pipe of that size. Not known, and said why."""
    town = layout()
    town["mains"]["swmm_size"] = ["2 x 8 in (8 in across one barrel at its narrowest)"]
    row = run(town=town).as_dict()["downstream"]["mains"][0]
    assert (row["capacity_gpd"], row["verdict"]) == (None, "not known")
    assert row["problem"].startswith("is 2 x 8 in (8 in across one barrel at its narrowest), not one round pipe")
    assert run().as_dict()["downstream"]["mains"][0]["verdict"] == MEETS  # the same main as one round pipe


def test_a_main_of_a_diameter_no_pipe_has_is_given_no_capacity():
    # Bellinge's model ends in a 15 m dummy link of 590.55 in, which the table certified with room for 199 billion gpd.
    row = run(town=layout(diameter=590.55)).as_dict()["downstream"]["mains"][0]
    assert (row["capacity_gpd"], row["verdict"]) == (None, "not known")
    assert row["problem"] == (
        "is given 590.55 in across, larger than any sewer pipe made (144 in): diameter implausible: correct it in the "
        "mains layer or the model"
    )
    assert run(town=layout(diameter=144.0)).as_dict()["downstream"]["mains"][0]["verdict"] == MEETS


def undiametered_town(tmp_path, proposed: LineString):
    """The Oak St town as Manchester, VT's data is: M-1 from A to the plant's P cut in two at B, neither with a
    diameter; written to a store with ``proposed`` as extension.geojson."""
    town = layout(shift=(1, 1))
    pieces = [LineString([(0, 0), (-200, 0)]), LineString([(-200, 0), (-400, 0)])]
    town["mains"] = ny_frame(
        [
            {"main_id": "M-1", "from_manhole": "A", "to_manhole": "B", "geometry": pieces[0]},
            {"main_id": "M-2", "from_manhole": "B", "to_manhole": "P", "geometry": pieces[1]},
        ]
    )
    town["manholes"] = ny_frame(
        [{"manhole_id": k, "geometry": Point(x, 0)} for k, x in (("A", 0), ("B", -200), ("P", -400))]
    )
    data = tmp_path / "town.gpkg"
    write_layers(str(data), town)
    ny_frame([{"geometry": proposed}]).to_crs(4326).to_file(tmp_path / "extension.geojson")
    return data


def test_mains_without_a_diameter_are_named_once_in_one_sentence(tmp_path):
    """Manchester, VT's mains carry no diameters: the capacity finding said "350 has no diameter: give it in the
    mains layer" once per main on the path, 39 times, a page of the board's PDF."""
    data = undiametered_town(tmp_path, OAK_ST_MAIN)
    result = CliRunner().invoke(main, plan_args(data, tmp_path, "--json"))
    assert result.exit_code == 0, result.output
    told = check(json.loads(result.output), "capacity")
    assert told["verdict"] == "not known"
    assert told["message"] == "Capacity not known: 2 mains have no diameter (M-1, M-2): give theirs in the mains layer."


def test_a_connecting_main_to_mains_of_unknown_room_does_not_say_none_has_room(tmp_path, monkeypatch):
    """A main drawn short of Manchester, VT's sewer was joined "to the nearest one (none near has room)": no main
    there has a diameter, so their room is not known, not lacking."""
    # A and B tried, not the plant's own inlet P (in a real town the nearest ten manholes rarely hold it)
    monkeypatch.setattr("analysis.plans.CANDIDATE_MANHOLES", 2)
    data = undiametered_town(tmp_path, LineString([(185, 0), (900, 0)]))
    result = CliRunner().invoke(main, plan_args(data, tmp_path, "--json"))
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["connecting_main"]["to_manhole"] == "A" and doc["connecting_main"]["length_ft"] == pytest.approx(185)
    told = check(doc, "connection")["message"]
    assert "none near has room" not in told
    assert "the nearest one (whether the mains to the plant have room is not known: see the capacity check)" in told
    assert check(doc, "capacity")["verdict"] == "not known"


def test_capacity_is_not_known_when_no_parcel_is_recorded_connected(tmp_path):
    """Manchester, VT's sewer with diameters and parcels with no connected column: every main carried nothing
    today, so the capacity check read "meets" on the added flow alone, for a sewer that serves a town."""
    town = layout(shift=(1, 1))
    town["parcels"] = town["parcels"].drop(columns="connected")
    data = tmp_path / "town.gpkg"
    write_layers(str(data), town)
    ny_frame([{"geometry": OAK_ST_MAIN}]).to_crs(4326).to_file(tmp_path / "extension.geojson")
    result = CliRunner().invoke(main, plan_args(data, tmp_path, "--json"))
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    told = check(doc, "capacity")
    assert told["verdict"] == "not known" and doc["downstream"]["capacity_ok"] is False
    assert told["message"].startswith("Capacity not known: no parcel is recorded as connected to the sewer")
    # L2 now reads as not connected: 6 houses x 2 units x 250 + 2 vacant lots x 250 = 3,500 gpd, x 4 peak; no
    # parcel on Main St is required to connect, so the present flow counted is none
    assert (
        "None of those drains to these mains: counting none, the 1 main from A to P (the inlet of the treatment "
        "plant WWTP) would carry the added "
    ) in (told["message"])
    assert f"added {4 * 3_500:,} gpd" in told["message"]


def test_roughness_by_material():
    town = layout(diameter=4.0, ds_invert=99.98)
    town["mains"]["material"] = "PVC"
    pvc = run(town=town).as_dict()["downstream"]["mains"][0]
    assert pvc["manning_n"] == 0.010
    assert pvc["capacity_gpd"] == pytest.approx(manning_capacity_gpd(4.0, 0.02 / 400, 0.010), abs=0.5)
    assert run(town=layout()).as_dict()["downstream"]["mains"][0]["manning_n"] == 0.013  # no material: manning_n


def two_sewers():
    """Layout with a tight 4-inch M-1 at A, and a second, ample 12-inch sewer from C (100, -300) west to Q."""
    town = layout(diameter=4.0, ds_invert=99.98)
    town["mains"] = frame(
        [
            *town["mains"].to_dict("records"),
            {
                "main_id": "M-2",
                "diameter_in": 12.0,
                "from_manhole": "C",
                "to_manhole": "Q",
                "us_invert_ft": 100.0,
                "ds_invert_ft": 95.0,
                "geometry": LineString([(100, -300), (-400, -300)]),
            },
        ]
    )
    town["manholes"] = frame(
        [
            *town["manholes"].to_dict("records"),
            {"manhole_id": "C", "geometry": Point(100, -300)},
            {"manhole_id": "Q", "geometry": Point(-400, -300)},
        ]
    )
    town["treatment_plants"] = frame(
        [
            *town["treatment_plants"].to_dict("records"),
            {"outfall_id": "WWTP-2", "outfall_manhole": "Q", "geometry": Point(-420, -300)},
        ]
    )
    return town


def test_a_main_short_of_the_sewer_gets_a_connecting_run_to_the_nearest_manhole_with_room():
    # The drawn main starts at (100, 0): 100 ft from A (whose 4-inch main is full) and 300 ft from C (ample).
    r = run(proposed=LineString([(100, 0), (900, 0)]), town=two_sewers()).as_dict()
    run_ = r["connecting_main"]
    assert run_["to_manhole"] == "C" and run_["length_ft"] == 300.0
    assert r["length_ft"] == 1100.0 and r["drawn_length_ft"] == 800.0
    assert r["cost"]["connecting_main"] == 300 * 250 and r["cost"]["main"] == 800 * 250
    # C (existing), a manhole at the bend where the run meets the drawn main, then every 400 ft at most.
    assert [(m["id"], m["x"], m["y"]) for m in r["manholes"]] == [
        ("C", 100, -300),
        ("NEW-1", 100, 0),
        ("NEW-2", 500, 0),
        ("NEW-3", 900, 0),
    ]
    assert r["exfiltration_allowance_gpd"] == pytest.approx(100 * 1100 / 5280 * 8 + 3 * 4.5, abs=0.06)
    assert check(r, "connection")["verdict"] == MEETS and "300 ft connecting main" in check(r, "connection")["message"]
    assert check(r, "capacity")["verdict"] == MEETS and r["downstream"]["path"] == ["C", "Q"]


def test_church_street_case_the_nearest_manhole_with_room_else_the_nearest(monkeypatch):
    # 185 ft short of A, whose 4-inch main is full: the nearest manhole with room is the plant's inlet P.
    tight = layout(diameter=4.0, ds_invert=99.98)
    r = run(proposed=LineString([(185, 0), (900, 0)]), town=tight).as_dict()
    assert r["connecting_main"]["to_manhole"] == "P" and r["connecting_main"]["length_ft"] == 585.0
    assert r["cost"]["connecting_main"] == 585 * 250 and check(r, "capacity")["verdict"] == MEETS
    # When none of the manholes tried has room, the run goes to the nearest, and the capacity check says so.
    monkeypatch.setattr("analysis.plans.CANDIDATE_MANHOLES", 1)
    r = run(proposed=LineString([(185, 0), (900, 0)]), town=tight).as_dict()
    assert r["connecting_main"]["to_manhole"] == "A" and r["connecting_main"]["length_ft"] == 185.0
    assert "none near has room" in check(r, "connection")["message"]
    assert check(r, "capacity")["verdict"] == "does not meet"


def test_an_end_on_an_existing_main_gets_a_new_manhole_on_it():
    r = run(proposed=LineString([(-200, 0), (-200, 300)])).as_dict()
    first = r["manholes"][0]
    assert first["id"] == "NEW-1" and not first["existing"] and "M-1" in first["reason"]
    assert r["downstream"]["path"] == ["P"] and r["downstream"]["mains"][0]["main_id"] == "M-1"


def test_phase_three_parcels_are_made_available_by_a_main_that_reaches_them():
    # Wappinger § 196-17A: private systems "until such time as public sewer is available"; the main makes it so.
    # L8 lies outside every service area: the article does not reach it.
    wp = load_profile("wappinger", overrides={"mandate.distance_ft": "100"})
    areas = frame(
        [
            {"area_name": "Phase I/II", "mandates": "yes", "geometry": box(-1000, -500, 500, 500)},
            {"area_name": "Phase III", "mandates": "no", "geometry": box(500, -500, 780, 500)},
        ]
    )
    r = run(service_areas=areas, profile=wp).as_dict()
    assert r["newly_mandated"] == ["L1", "L3", "L5", "L6"]
    assert r["made_available"] == ["L5", "L6", "L7"] and r["held_by_service_area"] == ["L8"]


def test_without_a_network_where_it_connects_is_not_known():
    town = layout()
    r = plan_extension(
        OAK_ST_MAIN,
        diameter_in=8,
        profile=FP,
        parcels=town["parcels"],
        mains=town["mains"],
        streets=town["streets"],
        buildings=town["buildings"],
    ).as_dict()
    assert check(r, "connection")["verdict"] == "not known" and check(r, "connection")["passed"] is None
    assert "capacity" not in {c["check"] for c in r["design_checks"]} and r["downstream"]["path"] == []
    assert [m["existing"] for m in r["manholes"]] == [False] * 4 and r["cost"]["new_manholes"] == 4


def test_manning_full_pipe_capacity():
    # 8-inch at 0.4 %, n = 0.013: about 0.77 cfs, the textbook value.
    assert manning_capacity_gpd(8, 0.004, 0.013) / 646_317 == pytest.approx(0.77, abs=0.01)


# -- where the main runs: crossings of existing mains, easements across private parcels ----------------------------

# An existing main M-9 running north-south across Oak St at x = 450, with no manhole where the Oak St main crosses it.
M9 = {"main_id": "M-9", "sewer_type": "sanitary", "diameter_in": 8.0, "geometry": LineString([(450, -100), (450, 100)])}
# In Oak St to x = 520, then north 65 ft: the last 40 ft (y 25 to 65) through L5's front yard (L5: x 500-600).
INTO_L5 = LineString([(0, 0), (520, 0), (520, 65)])


def test_a_main_crossing_an_existing_main_is_found_where_it_crosses():
    r = run(town=layout(extra_mains=[M9])).as_dict()
    assert r["main_crossings"] == [
        {
            "main_id": "M-9",
            "sewer_type": "sanitary",
            "status": "",
            "described": "sanitary",
            "kind": "crosses",
            "x": 450.0,
            "y": 0.0,
            "station_ft": 450.0,
            "length_ft": 0.0,
        }
    ]
    found = check(r, "main_crossings")
    assert found["verdict"] == REVIEW and found["section"] == "design check (profile setting)"
    assert "crosses M-9 (sanitary) at station 450 ft (x 450.0, y 0.0 in EPSG:2260)" in found["message"]
    assert "not a section of the law" in found["message"] and "clearance" in found["message"]
    assert r["easements"] == []  # in the street all the way


def test_a_main_ending_on_the_manhole_it_connects_to_crosses_nothing():
    # Oak St's main starts exactly on manhole A, where M-1 ends: that is where it connects, not a crossing.
    r = run().as_dict()
    assert r["main_crossings"] == [] and check(r, "main_crossings")["verdict"] == MEETS
    assert "except where it connects (A)" in check(r, "main_crossings")["message"]
    # Drawn half a foot past A, over M-1: within network.snap_tolerance_ft (1 ft) of A, so still where it connects.
    r = run(proposed=LineString([(-0.5, 0), (900, 0)])).as_dict()
    assert r["main_crossings"] == []
    # Set to a tighter reading, the end lies on M-1 half a foot short of A, and the main is drawn over M-1 to A: it
    # connects at A, the half foot over M-1 not laid (it was built as a new manhole on M-1 and a half foot found
    # lying over M-1; tests/test_plans_loose_ends.py), so it crosses nothing.
    tight = load_profile("fort-plain", overrides={"network.snap_tolerance_ft": "0.1"})
    r = run(proposed=LineString([(-0.5, 0), (900, 0)]), profile=tight).as_dict()
    assert r["main_crossings"] == [] and (r["not_laid"]["along"], r["not_laid"]["length_ft"]) == ("M-1", 0.5)
    assert check(r, "main_crossings")["section"] == "design check (value set by the user; profile setting)"


def test_crossings_ends_on_and_runs_along_by_hand():
    mains = frame(
        [
            {"main_id": "X", "geometry": LineString([(100, -50), (100, 50)])},  # crossed at station 100
            {"main_id": "E", "geometry": LineString([(400, -50), (400, 50)])},  # the upper end lies on it
            {"main_id": "R", "geometry": LineString([(200, 0), (300, 0)])},  # run along for 100 ft
            {"main_id": "C", "geometry": LineString([(0, 0), (0, -80)])},  # ends where the main connects
            {"main_id": "H", "geometry": LineString([(350, 50), (350, -50)])},  # crossed at an existing manhole
        ]
    )
    found = mains_crossed(
        LineString([(0, 0), (400, 0)]),
        mains,
        connects_at=[(0, 0)],
        manholes_xy=np.array([[350.0, 0.4]]),
        tolerance=1.0,
    )
    assert found[["main_id", "kind", "x", "y", "station_ft", "length_ft"]].values.tolist() == [
        ["X", "crosses", 100.0, 0.0, 100.0, 0.0],
        ["R", "runs along", 250.0, 0.0, 250.0, 100.0],
        ["E", "ends on", 400.0, 0.0, 400.0, 0.0],
    ]


def test_a_main_laid_over_an_existing_main_is_told_to_move_clear_not_to_build_a_manhole_at_a_crossing():
    # An old main R lies under Oak St from x 300 to 500: the new main runs along it, which is no crossing.
    old = {"main_id": "R", "sewer_type": "sanitary", "status": "existing", "geometry": LineString([(300, 0), (500, 0)])}
    told = " ".join(check(run(town=layout(extra_mains=[old])).as_dict(), "main_crossings")["message"].split())
    assert "runs along R (sanitary, existing) for 200.0 ft" in told
    assert "laid where an existing main already lies is not a design to submit" in told
    assert "Two pipes crossing" not in told


def test_a_crossing_names_the_main_in_the_layers_own_words_not_its_codes(tmp_path):
    """The layers' check reads "Storm Drain" as storm and "Existing" as active, for the logic; the planner reads the
    main as the layer words it. It said "crosses M-9 (storm, active)" of a main the layer calls Existing."""
    m9 = {**M9, "sewer_type": "Storm Drain", "status": "Existing"}
    data = tmp_path / "town.gpkg"
    write_layers(str(data), layout(shift=(1, 1), extra_mains=[m9]))
    ny_frame([{"geometry": OAK_ST_MAIN}]).to_file(tmp_path / "extension.geojson")
    doc = json.loads(CliRunner().invoke(main, plan_args(data, tmp_path, "--json"), catch_exceptions=False).output)
    (crossing,) = doc["main_crossings"]
    assert (crossing["sewer_type"], crossing["status"], crossing["described"]) == (
        "storm",
        "active",
        "Storm Drain, Existing",
    )
    text = CliRunner(env={"COLUMNS": "300"}).invoke(main, plan_args(data, tmp_path), catch_exceptions=False).output
    said = " ".join(text.replace("│", " ").split())
    assert "crosses M-9 (Storm Drain, Existing) at station 450 ft" in said and "active" not in said
    # a scenario saved before crossings carried the layer's words is worded from its codes, as it was
    saved = {k: v for k, v in crossing.items() if k != "described"}
    assert _crossing_text(saved, "EPSG:2260").startswith("crosses M-9 (storm, active) at station 450 ft")
    # The GIS export keeps the layer's words beside the codes: its main_crossings layer had only "storm", "active".
    out = tmp_path / "plan.gpkg"
    CliRunner().invoke(main, plan_args(data, tmp_path, "--out", str(out)), catch_exceptions=False)
    exported = gpd.read_file(out, layer="main_crossings")
    assert exported[["main_id", "sewer_type", "status", "described"]].values.tolist() == [
        ["M-9", "storm", "active", "Storm Drain, Existing"]
    ]
    from layers.write import _route_layers

    old = _route_layers({"main_crossings": [{**saved, "x": 1.0, "y": 2.0}]}, "EPSG:2260")["main_crossings"]
    assert old["described"].tolist() == [""]  # a plan saved before: no words, never "nan"


def test_a_run_along_a_main_is_one_row_whatever_vertices_the_planned_main_has():
    # A run of streets has a vertex at each segment's end: 200 ft along R came out as 50 ft and 150 ft, two places.
    mains = frame([{"main_id": "R", "geometry": LineString([(100, 0), (300, 0)])}])
    found = mains_crossed(
        LineString([(0, 0), (150, 0), (400, 0)]), mains, connects_at=[(0, 0)], manholes_xy=np.zeros((0, 2)), tolerance=1
    )
    assert found[["main_id", "kind", "x", "station_ft", "length_ft"]].values.tolist() == [
        ["R", "runs along", 200.0, 200.0, 200.0]
    ]


def test_a_main_through_a_front_yard_needs_an_easement_with_its_length_in_feet():
    r = run(proposed=INTO_L5).as_dict()
    assert r["easements"] == [
        {
            "parcel_id": "L5",
            "owner_name": "NG MAI",
            "site_address": "500 Oak St",
            "length_ft": 40.0,
            "from_station_ft": 545.0,
            "to_station_ft": 585.0,
            "lines": [[[520.0, 25.0], [520.0, 65.0]]],  # the main across L5, for the export a surveyor is handed
        }
    ]
    found = check(r, "easements")
    assert found["verdict"] == REVIEW and found["section"] == "design check (profile setting)"
    assert "L5 (NG MAI, 500 Oak St) 40.0 ft, stations 545 to 585 ft" in found["message"]
    assert "needs an easement from each owner" in found["message"]
    assert "not a section of the law" in found["message"]  # Fort Plain's Chapter 144 has none: no section invented
    # Wappinger's § 196-21B: the Town maintains works on private land only through an easement it holds.
    wp = load_profile("wappinger", overrides={"mandate.distance_ft": "100"})
    found = check(run(proposed=INTO_L5, profile=wp).as_dict(), "easements")
    assert found["section"] == "§ 196-21B (profile setting)" and "(§ 196-21B)" in found["message"]
    assert wp.design.easements_in_law.value and not FP.design.easements_in_law.value


def test_a_main_along_a_rear_lot_line_is_listed_for_both_lots_and_counted_once():
    # A lot B5 behind L5 (north of y = 125). The main runs 100 ft north along the side line L4 and L5 share, then
    # 100 ft east along the rear line L5 and B5 share: each lot on a line is listed, the main counted once.
    town = layout()
    back = frame([{"parcel_id": "B5", "owner_name": "BACK LOT", "geometry": box(500, 125, 600, 225)}])
    town["parcels"] = gpd.GeoDataFrame(
        pd.concat([town["parcels"], back], ignore_index=True), geometry="geometry", crs=town["parcels"].crs
    )
    r = run(proposed=LineString([(0, 0), (500, 0), (500, 125), (600, 125)]), town=town).as_dict()
    listed = sorted((e["parcel_id"], e["length_ft"]) for e in r["easements"])
    assert listed == [("B5", 100.0), ("L4", 100.0), ("L5", 200.0)]
    # each lot's line runs as the main runs, in one piece (the overlay gave L5's two sides reversed, in two)
    assert {e["parcel_id"]: e["lines"] for e in r["easements"]} == {
        "L4": [[[500.0, 25.0], [500.0, 125.0]]],
        "L5": [[[500.0, 25.0], [500.0, 125.0], [600.0, 125.0]]],
        "B5": [[[500.0, 125.0], [600.0, 125.0]]],
    }
    assert r["easement_length_ft"] == 200.0  # not 400
    message = check(r, "easements")["message"]
    assert "runs 200.0 ft across 3 private parcels" in message and "listed for each" in message


def test_a_main_wholly_in_the_street_needs_no_easement_even_where_lots_run_to_the_centreline():
    r = run().as_dict()
    assert r["easements"] == [] and check(r, "easements")["verdict"] == MEETS
    # A tax map whose lots run to the middle of the road: the street's right-of-way is taken out first.
    town = layout()
    town["parcels"] = town["parcels"].set_geometry([box(100 * i, 0, 100 * i + 100, 125) for i in range(1, 9)])
    assert run(town=town).as_dict()["easements"] == []


def test_a_sliver_at_the_street_edge_is_not_an_easement_unless_the_setting_says_so():
    # 5 ft into L5 (y 25 to 30): under design.easement_min_ft (10 ft), rounding at the street edge.
    sliver = LineString([(0, 0), (520, 0), (520, 30)])
    assert run(proposed=sliver).as_dict()["easements"] == []
    given = load_profile("fort-plain", overrides={"design.easement_min_ft": "4"})
    r = run(proposed=sliver, profile=given).as_dict()
    assert [(e["parcel_id"], e["length_ft"]) for e in r["easements"]] == [("L5", 5.0)]
    assert check(r, "easements")["section"] == "design check (value set by the user; profile setting)"
    assert "less than 4 ft" in check(r, "easements")["message"]


def test_parcels_crossed_without_streets_counts_every_parcel_and_says_why():
    town = layout()
    crossed = parcels_crossed(INTO_L5, town["parcels"], profile=FP)
    assert crossed[["parcel_id", "length_ft"]].values.tolist() == [["L5", 40.0]]
    # Wappinger has no abutting test, so a plan runs without streets (Fort Plain's § 144-4 needs them).
    wp = load_profile("wappinger", overrides={"mandate.distance_ft": "100"})
    r = plan_extension(
        INTO_L5, diameter_in=8, profile=wp, parcels=town["parcels"], mains=town["mains"], buildings=town["buildings"]
    ).as_dict()
    assert "No streets layer was given" in check(r, "easements")["message"]


# -- the command line -------------------------------------------------------------------------------------------


@pytest.fixture
def town_gpkg(tmp_path):
    town = layout(shift=(1, 1))
    data = tmp_path / "town.gpkg"
    write_layers(str(data), town)
    proposed = ny_frame([{"geometry": LineString([(0, 0), (900, 0)])}]).to_crs(4326)
    proposed.to_file(tmp_path / "extension.geojson")
    return data


def plan_args(data, tmp_path, *extra):
    return [
        "plan",
        "--profile",
        "fort-plain",
        "--data",
        str(data),
        "--proposed",
        str(tmp_path / "extension.geojson"),
        "--diameter-in",
        "8",
        *extra,
    ]


def test_plan_cli_json_save_export_pdf(town_gpkg, tmp_path):
    reg = str(tmp_path / "reg.sqlite")
    args = plan_args(
        town_gpkg,
        tmp_path,
        "--name",
        "Oak St",
        "--material",
        "reinforced concrete",
        "--save",
        "--register",
        reg,
        "--out",
        str(tmp_path / "plan.gpkg"),
        "--pdf",
        str(tmp_path / "plan.pdf"),
        "--preparer",
        "Pat Engineer",
        "--json",
    )
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    doc = json.loads(result.output)
    assert set(doc["manholes"][0]) == {"id", "x", "y", "reason", "existing", "station_ft"}
    assert set(doc["design_checks"][0]) == {"check", "verdict", "passed", "section", "cited", "message"}
    assert {"total", "by_frontage", "by_parcel", "by_unit"} <= set(doc["cost"])
    assert doc["newly_mandated"] == ["L1", "L3", "L5", "L6", "L8"] and doc["material"] == "reinforced concrete"
    assert doc["length_ft"] == pytest.approx(900, abs=0.5)  # drawn in degrees, measured in feet
    assert (doc["profile"], doc["profile_version"]) == ("fort-plain", FP.version)
    layers = gpd.list_layers(tmp_path / "plan.gpkg")
    mapped = set(layers.loc[layers["geometry_type"].notna(), "name"])  # beside them: QGIS's layer_styles table
    assert mapped == {
        "proposed_main",
        "not_laid",  # empty: all of Oak St's main is laid
        "proposed_manholes",
        "newly_mandated",
        "benefiting_parcels",
        "main_crossings",
        "easements_needed",
        "buildings_crossed",  # empty: the main runs in Oak St, clear of the houses
    }
    shares = gpd.read_file(tmp_path / "plan.gpkg", layer="benefiting_parcels")
    assert sorted(shares["parcel_id"]) == doc["benefiting"] and shares["by_parcel"].sum() == pytest.approx(
        doc["cost"]["total"]
    )
    assert doc["pdf"].endswith("plan.pdf")
    by_streets = CliRunner().invoke(
        main,
        [
            "plan",
            "--profile",
            "fort-plain",
            "--data",
            str(town_gpkg),
            "--streets-run",
            "Oak St",
            "--diameter-in",
            "8",
            "--json",
        ],
    )
    assert json.loads(by_streets.output)["newly_mandated"] == doc["newly_mandated"]
    bad = CliRunner().invoke(main, ["plan", "--profile", "fort-plain", "--data", str(town_gpkg), "--diameter-in", "8"])
    assert bad.exit_code == 2 and "--proposed PATH or --streets-run" in bad.output
    # --streets is the old spelling of the streets layer: names given to it are told where they go.
    misnamed = CliRunner().invoke(
        main, ["plan", "--profile", "fort-plain", "--data", str(town_gpkg), "--diameter-in", "8", "--streets", "Oak St"]
    )
    said = " ".join(misnamed.output.replace("│", " ").split())
    assert misnamed.exit_code == 2 and 'a run of named streets is --streets-run "Oak St"' in said, said
    zero = CliRunner().invoke(main, plan_args(town_gpkg, tmp_path)[:-1] + ["0"])
    assert zero.exit_code == 2 and "--diameter-in" in zero.output


def test_the_boards_map_shows_the_part_drawn_past_the_manhole_and_not_laid(town_gpkg, tmp_path):
    """The PDF said "Not laid: the 180 ft drawn south of A" under a map that showed no such line: the board could not
    see where it ran. It is drawn grey and dotted, as on the web map, and the map's caption says so."""
    ny_frame([{"geometry": LineString([(0, -180), (0, 0), (900, 0)])}]).to_file(tmp_path / "extension.geojson")
    pdf = tmp_path / "plan.pdf"
    result = CliRunner().invoke(main, plan_args(town_gpkg, tmp_path, "--pdf", str(pdf)))
    assert result.exit_code == 0, result.output
    from pypdf import PdfReader

    board = " ".join(" ".join(page.extract_text() for page in PdfReader(pdf).pages).split())
    assert "Not laid: the 180 ft drawn south of A" in board
    assert "its manholes (white: new, black: existing), the part drawn past A and not laid (grey dotted)," in board
    drawn = PdfReader(pdf).pages[0].get_contents().get_data().decode("latin-1")
    assert ".466667 .466667 .466667 RG" in drawn


def test_plan_cli_says_where_the_main_crosses_a_main_and_which_parcels_need_easements(tmp_path):
    """`sewerplan plan` prints both findings in its design checks, --json gives them row by row, and `plans --compare`
    counts them beside the other measures."""
    data = tmp_path / "town.gpkg"
    write_layers(str(data), layout(shift=(1, 1), extra_mains=[M9]))
    ny_frame([{"geometry": INTO_L5}]).to_file(tmp_path / "extension.geojson")
    reg = str(tmp_path / "reg.sqlite")
    result = CliRunner().invoke(
        main, plan_args(data, tmp_path, "--json", "--save", "--name", "L5", "--register", reg), catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert [(c["main_id"], c["kind"], c["station_ft"]) for c in doc["main_crossings"]] == [("M-9", "crosses", 450.0)]
    assert [(e["parcel_id"], e["length_ft"]) for e in doc["easements"]] == [("L5", 40.0)]
    verdicts = {c["check"]: (c["verdict"], c["cited"]) for c in doc["design_checks"]}
    assert (
        verdicts["main_crossings"] == verdicts["easements"] == ("for the engineer", "(design check; profile setting)")
    )
    text = CliRunner(env={"COLUMNS": "300"}).invoke(main, plan_args(data, tmp_path), catch_exceptions=False).output
    said = " ".join(text.replace("│", " ").split())
    assert "main crossings for the engineer design check (profile setting)" in said
    assert "crosses M-9 (sanitary) at station 450 ft" in said
    assert "L5 (NG MAI, 500 Oak St) 40.0 ft, stations 545 to 585 ft" in said
    assert "Design checks not met or open: main crossings (for the engineer); easements (for the engineer)" in said
    pdf = tmp_path / "plan.pdf"
    assert CliRunner().invoke(main, plan_args(data, tmp_path, "--pdf", str(pdf))).exit_code == 0
    from pypdf import PdfReader

    board = " ".join(" ".join(page.extract_text() for page in PdfReader(pdf).pages).split())
    assert "crosses M-9 (sanitary) at station 450 ft" in board and "L5 (NG MAI, 500 Oak St) 40.0 ft" in board
    # its map marks them as the web map does, and says so
    assert "where the main crosses an existing main (red rings)" in board
    assert "private parcels it crosses (purple dashed outline: easements needed)" in board
    drawn = PdfReader(pdf).pages[0].get_contents().get_data().decode("latin-1")
    assert ".890196 .101961 .109804 RG" in drawn and ".415686 .239216 .603922 RG" in drawn
    compared = json.loads(CliRunner().invoke(main, ["plans", "--compare", "--register", reg, "--json"]).output)
    assert {k: compared[0][k] for k in ("main_crossings", "easement_parcels", "easement_ft")} == {
        "main_crossings": 1,
        "easement_parcels": 1,
        "easement_ft": 40.0,
    }


def _plan_cli(data, proposed, *extra):
    args = ["plan", "--profile", "fort-plain", "--data", str(data), "--proposed", str(proposed), "--diameter-in", "8"]
    done = CliRunner().invoke(main, [*args, *extra], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    return done


@pytest.mark.parametrize("suffix", ["gpkg", "geojson", "parquet"])
def test_a_plans_export_holds_its_crossings_and_easements_and_reads_back_as_its_main_alone(tmp_path, suffix):
    """`plan --out` gives the engineer the crossing (a point on M-9 at station 450) and the easement (the main's 40 ft
    line across L5, owner and stations) as features of their own; read back as a proposed main it is the drawn main
    alone, and evaluates to the same findings."""
    data = tmp_path / "town.gpkg"
    write_layers(str(data), layout(shift=(1, 1), extra_mains=[M9]))
    ny_frame([{"geometry": INTO_L5}]).to_file(tmp_path / "extension.geojson")
    out = tmp_path / f"plan.{suffix}"
    _plan_cli(data, tmp_path / "extension.geojson", "--out", str(out))
    if suffix == "gpkg":
        assert pyogrio.read_info(out, layer="main_crossings")["geometry_type"] == "Point"
        assert pyogrio.read_info(out, layer="easements_needed")["geometry_type"] == "MultiLineString"
        crossings = pyogrio.read_dataframe(out, layer="main_crossings")
        easements = pyogrio.read_dataframe(out, layer="easements_needed")
    elif suffix == "geojson":
        every = pyogrio.read_dataframe(out).to_crs(2260)  # RFC 7946: longitude/latitude
        crossings, easements = (every[every["feature"] == kind] for kind in ("main crossing", "easement needed"))
    else:
        crossings = gpd.read_parquet(tmp_path / "plan.main_crossings.parquet")
        easements = gpd.read_parquet(tmp_path / "plan.easements_needed.parquet")
    x0, y0 = NY_ORIGIN
    assert crossings[["main_id", "sewer_type", "kind", "station_ft", "feature"]].values.tolist() == [
        ["M-9", "sanitary", "crosses", 450.0, "main crossing"]
    ]
    assert shapely.get_coordinates(crossings.geometry.values).ravel().tolist() == pytest.approx(
        [x0 + 450, y0], abs=0.01
    )
    assert easements[
        ["parcel_id", "owner_name", "site_address", "length_ft", "from_station_ft", "to_station_ft", "feature"]
    ].values.tolist() == [["L5", "NG MAI", "500 Oak St", 40.0, 545.0, 585.0, "easement needed"]]
    (across,) = easements.geometry.values
    assert shapely.get_coordinates(across).ravel().tolist() == pytest.approx(
        [x0 + 520, y0 + 25, x0 + 520, y0 + 65], abs=0.01
    )
    assert across.length == pytest.approx(40.0, abs=0.01)
    doc = json.loads(_plan_cli(data, out, "--json").output)
    assert "its proposed main alone was read" in doc["proposed_note"]
    assert doc["drawn_length_ft"] == 585.0 and doc["connecting_main"] is None
    assert [(c["main_id"], c["station_ft"]) for c in doc["main_crossings"]] == [("M-9", 450.0)]
    assert [(e["parcel_id"], e["length_ft"]) for e in doc["easements"]] == [("L5", 40.0)]


def test_a_plan_crossing_nothing_exports_empty_layers_of_their_kind_over_an_earlier_export(tmp_path):
    """Oak St in the street crosses no main and no lot: the layers are there, empty (none found), declared point and
    line for QGIS; written over an export that had some, none of those is left behind."""
    data = tmp_path / "town.gpkg"
    write_layers(str(data), layout(shift=(1, 1), extra_mains=[M9]))
    ny_frame([{"geometry": INTO_L5}]).to_file(tmp_path / "into_l5.geojson")
    ny_frame([{"geometry": LineString([(0, 0), (400, 0)])}]).to_file(tmp_path / "short.geojson")
    out = tmp_path / "plan.gpkg"
    _plan_cli(data, tmp_path / "into_l5.geojson", "--out", str(out))
    _plan_cli(data, tmp_path / "short.geojson", "--out", str(out))
    for layer, kind in (("main_crossings", "Point"), ("easements_needed", "MultiLineString")):
        info = pyogrio.read_info(out, layer=layer)
        assert (info["features"], info["geometry_type"]) == (0, kind), layer
    with sqlite3.connect(out) as con:
        styled = dict(con.execute("SELECT f_table_name, styleQML FROM layer_styles WHERE useAsDefault").fetchall())
    assert 'v="227,26,28,255"' in styled["main_crossings"]  # the web map's red ring
    assert 'v="106,61,154,255"' in styled["easements_needed"]  # and its purple


def test_a_scenario_saved_before_crossings_were_found_exports_no_layer_saying_none():
    from layers.write import write_plan

    town = layout()
    doc = run(proposed=INTO_L5, town=town).as_dict()
    earlier = {k: v for k, v in doc.items() if k not in ("main_crossings", "easements")}
    with tempfile.TemporaryDirectory() as folder:
        written = write_plan(str(Path(folder) / "old.gpkg"), earlier, INTO_L5, town["parcels"], crs=town["parcels"].crs)
    assert "main_crossings" not in written and "easements_needed" not in written


def test_a_main_far_longer_than_the_town_is_refused_before_it_is_costed(tmp_path):
    """A 50-mile main from the sample village's MH-45 was laid, given 660 manholes and costed at $70 million, with
    only the warning that most of it lay beyond the town's parcels. Longer than 10 miles and than 3 times the
    parcels' extent corner to corner, it is refused, with its length and the town's extent, as a line in the wrong
    units or CRS."""
    fifty_miles = LineString([(0, 0), (0, -264_000)])  # from A, south away from Oak St's lots
    with pytest.raises(AnalysisError) as refused:
        run(proposed=fifty_miles)
    said = str(refused.value)
    assert said.startswith("The proposed main is 50.0 miles long (264,000 ft), more than 3 times the 0.2 miles")
    assert "(their extent, 800 by 100 ft, corner to corner)" in said and "wrong units or CRS" in said
    # through the CLI: refused, nothing costed or saved
    data = tmp_path / "town.gpkg"
    write_layers(str(data), layout(shift=(1, 1)))
    ny_frame([{"geometry": fifty_miles}]).to_file(tmp_path / "extension.geojson")
    result = CliRunner().invoke(main, plan_args(data, tmp_path))
    assert result.exit_code != 0 and "The proposed main is 50.0 miles long" in result.output
    assert "Estimated cost" not in result.output
    # a long main on a small town is still a main below 10 miles: a hamlet's trunk to a plant far off
    assert run(proposed=LineString([(0, 0), (0, -12_000)])).as_dict()["length_ft"] == 12_000.0


@pytest.mark.parametrize(
    "line",
    [
        LineString([(0, 0), (900, 0), (900, 100), (400, -100)]),  # crosses itself
        LineString([(0, 0), (900, 0), (500, 0)]),  # runs back over itself: 400 ft counted twice
    ],
)
def test_a_main_crossing_or_retracing_itself_is_refused(line):
    with pytest.raises(AnalysisError, match="crosses or runs back over itself"):
        run(proposed=line)


def test_a_main_that_ends_where_it_begins_is_refused():
    """GEOS calls a closed ring simple: a loop around the block from A back to A was evaluated as a main joining
    existing manhole "A, A", with no upper end."""
    with pytest.raises(AnalysisError, match="ends where it begins, a closed loop"):
        run(proposed=LineString([(0, 0), (900, 0), (900, 300), (0, 300), (0, 0)]))


def test_a_main_of_no_length_is_told_so():
    with pytest.raises(AnalysisError, match="has no length"):
        run(proposed=LineString([(300, 0), (300, 0)]))


@pytest.mark.parametrize(
    ("coords", "told"),
    [
        # union_all cut a crossing line into pieces, and it was called lines that "do not join into one main"
        ([(0, 0), (900, 0), (900, 100), (400, -100)], "crosses or runs back over itself"),
        ([(300, 0), (300, 0)], "has no length"),
        # 50 miles east: it was planned with a 50-mile connecting main, nobody mandated and every check met
        ([(264_000, 0), (264_900, 0)], "lies 49.8 miles from the town's parcels and mains"),
        # a loop back to where it began was planned as a main joining the same manhole twice
        ([(0, 0), (900, 0), (900, 300), (0, 300), (0, 0)], "ends where it begins, a closed loop"),
    ],
)
def test_plan_cli_refuses_a_line_that_cannot_be_a_main(town_gpkg, tmp_path, coords, told):
    ny_frame([{"geometry": LineString(coords)}]).to_file(tmp_path / "extension.geojson")
    result = CliRunner().invoke(main, plan_args(town_gpkg, tmp_path))
    assert result.exit_code == 2, result.output
    assert told in " ".join(result.output.split())
    assert "Traceback" not in result.output


def test_a_proposed_file_that_does_not_exist_is_told_so_without_a_flag_that_refuses_it(town_gpkg, tmp_path):
    """It was told "Use --layer proposed=PATH", and that flag refuses the proposed main ("Give the proposed main
    with --proposed PATH or --streets-run NAMES"): a dead end for a mistyped file name."""
    missing = tmp_path / "extnesion.geojson"
    result = CliRunner().invoke(
        main,
        ["plan", "--profile", "fort-plain", "--data", str(town_gpkg), "--proposed", str(missing), "--diameter-in", "8"],
    )
    assert result.exit_code == 2, result.output
    told = " ".join(result.output.split())
    assert f"The proposed main's file {missing} does not exist: check its name and folder" in told
    assert "--layer" not in told and "Traceback" not in told


def test_a_geopackage_of_several_layers_gives_its_one_line_or_is_asked_which(town_gpkg, tmp_path):
    """GDAL opens a GeoPackage's first layer: one holding two options was evaluated as its first without a word,
    and one whose first layer was a polygon was refused as a main "in degrees"."""
    options = tmp_path / "options.gpkg"
    ny_frame([{"geometry": box(0, 0, 50, 50)}]).to_file(options, layer="a_lot")
    ny_frame([{"geometry": OAK_ST_MAIN}]).to_file(options, layer="oak_st")
    args = ["plan", "--profile", "fort-plain", "--data", str(town_gpkg), "--diameter-in", "8", "--json"]
    one = CliRunner().invoke(main, [*args, "--proposed", str(options)])
    assert one.exit_code == 0, one.output
    assert json.loads(one.stdout)["length_ft"] == pytest.approx(900, abs=0.5)  # its only layer of lines
    ny_frame([{"geometry": LineString([(0, 0), (300, 0)])}]).to_file(options, layer="short_option")
    asked = CliRunner().invoke(main, [*args, "--proposed", str(options)])
    assert asked.exit_code == 2, asked.output
    told = " ".join(asked.output.split())
    assert "options.gpkg holds 2 layers of lines (oak_st, short_option), and which is the proposed main" in told
    assert "options.gpkg:oak_st" in told and "Traceback" not in told
    chosen = CliRunner().invoke(main, [*args, "--proposed", f"{options}:short_option"])
    assert chosen.exit_code == 0, chosen.output
    assert json.loads(chosen.stdout)["drawn_length_ft"] == pytest.approx(300, abs=0.5)


@pytest.mark.parametrize(
    ("lines", "told"),
    [
        # drawn in QGIS without snapping: a gap no map scale shows, and "do not join into one main" said no more
        (
            [[(0, 0), (400, 0)], [(400.05, 0), (900, 0)]],
            "(2 pieces, the nearest 0.05 ft apart at x 457,400.0, y 1,490,000.0 in EPSG:2260): join them end to end",
        ),
        (
            [[(0, 0), (900, 0)], [(400, 0), (400, 300)]],
            "(3 pieces, branching at x 457,400.0, y 1,490,000.0 in EPSG:2260)",
        ),
    ],
)
def test_lines_that_are_not_one_main_are_told_where(town_gpkg, tmp_path, lines, told):
    ny_frame([{"geometry": LineString(c)} for c in lines]).to_file(tmp_path / "extension.geojson")
    result = CliRunner().invoke(main, plan_args(town_gpkg, tmp_path))
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())
    assert "The lines in " in said and "do not join into one main " + told in said, said


@pytest.mark.parametrize(("suffix", "driver"), [(".gpkg", "GPKG"), (".fgb", "FlatGeobuf")])
def test_a_proposed_file_without_a_crs_that_is_no_shapefile_is_not_sent_to_its_prj(town_gpkg, tmp_path, suffix, driver):
    """Any file without a CRS was told "(a shapefile's .prj file declares it)": a GeoPackage or DXF has no .prj to
    look for."""
    path = tmp_path / f"extension{suffix}"
    with pytest.warns(UserWarning, match="'crs' was not provided"):
        gpd.GeoDataFrame(geometry=[ny_frame([{"geometry": OAK_ST_MAIN}]).geometry.iloc[0]]).to_file(path, driver=driver)
    args = ["plan", "--profile", "fort-plain", "--data", str(town_gpkg), "--proposed", str(path), "--diameter-in", "8"]
    refused = CliRunner().invoke(main, args)
    assert refused.exit_code == 2, refused.output
    told = " ".join(refused.output.split())
    assert f"(extension{suffix}) has no coordinate reference system (the file declares none)" in told
    assert ".prj" not in told and "Use --layer-crs proposed=EPSG:2260." in told


def test_a_proposed_shapefile_in_degrees_without_a_crs_is_told_to_give_longitude_latitude(town_gpkg, tmp_path):
    """deg_noprj.shp (-74.6, 42.9 ...) was told "Use --layer-crs proposed=EPSG:2260", the measuring CRS, and with it
    was refused again as degrees in a projected CRS: the first refusal sees the degrees."""
    shapefile = tmp_path / "deg_noprj.shp"
    line = ny_frame([{"geometry": OAK_ST_MAIN}]).to_crs(4326).geometry.iloc[0]
    with pytest.warns(UserWarning, match="'crs' was not provided"):
        gpd.GeoDataFrame(geometry=[line]).to_file(shapefile)  # no .prj
    args = ["plan", "--profile", "fort-plain", "--data", str(town_gpkg), "--proposed", str(shapefile)]
    refused = CliRunner().invoke(main, [*args, "--diameter-in", "8"])
    assert refused.exit_code == 2, refused.output
    told = " ".join(refused.output.split())
    assert "has no coordinate reference system (a shapefile's .prj file declares it)" in told
    assert "look like degrees of longitude and latitude (-74.6" in told
    assert "Use --layer-crs proposed=EPSG:4326." in told and "EPSG:2260." not in told
    given = CliRunner().invoke(main, [*args, "--diameter-in", "8", "--layer-crs", "proposed=EPSG:4326", "--json"])
    assert given.exit_code == 0, given.output
    assert json.loads(given.stdout)["length_ft"] == pytest.approx(900, abs=0.5)


def test_a_proposed_shapefile_without_a_crs_can_be_given_one(town_gpkg, tmp_path):
    """A shapefile of the main without its .prj was told "Use --layer-crs proposed=EPSG:2260", and that was
    refused as "'proposed' is not a layer kind": a dead end, with the example CRS New York's though the store (here
    analysed in metres, as Manchester, VT's in EPSG:32145) measures in another."""
    analysed = CliRunner().invoke(
        main,
        [
            "analyze",
            "--profile",
            "fort-plain",
            "--data",
            str(town_gpkg),
            "--out",
            str(town_gpkg),
            "--crs",
            "EPSG:32115",
        ],
    )
    assert analysed.exit_code == 0, analysed.output
    shapefile = tmp_path / "extension.shp"
    line = ny_frame([{"geometry": OAK_ST_MAIN}]).to_crs("EPSG:32115").geometry.iloc[0]
    with pytest.warns(UserWarning, match="'crs' was not provided"):
        gpd.GeoDataFrame(geometry=[line]).to_file(shapefile)  # no .prj
    args = ["plan", "--data", str(town_gpkg), "--proposed", str(shapefile), "--diameter-in", "8"]
    refused = CliRunner().invoke(main, args)
    assert refused.exit_code == 2, refused.output
    told = " ".join(refused.output.split())
    assert "has no coordinate reference system (a shapefile's .prj file declares it)" in told
    assert "Use --layer-crs proposed=EPSG:32115." in told
    given = CliRunner().invoke(main, [*args, "--layer-crs", "proposed=EPSG:32115", "--json"])
    assert given.exit_code == 0, given.output
    doc = json.loads(given.stdout)
    assert doc["newly_mandated"] == ["L1", "L3", "L5", "L6", "L8"] and doc["length_ft"] == pytest.approx(900, abs=0.5)
    # it is the file's CRS: without a file it is refused, not ignored
    run_of_streets = ["plan", "--data", str(town_gpkg), "--streets-run", "Oak St", "--diameter-in", "8"]
    alone = CliRunner().invoke(main, [*run_of_streets, "--layer-crs", "proposed=EPSG:32115"])
    assert alone.exit_code == 2 and "give --proposed PATH" in alone.output


def test_a_proposed_main_in_the_wrong_zone_is_told_its_crs_not_to_remeasure_the_town(town_gpkg, tmp_path):
    """A line drawn in UTM zone 18N and labelled zone 17N lies 6 degrees west: the planner was told to "measure in
    a projected CRS made for that place ... Use --crs EPSG:32617", i.e. to measure the whole town in the wrong
    zone, when the town's layers measure right and the line's CRS is what is wrong."""
    line = ny_frame([{"geometry": OAK_ST_MAIN}]).to_crs("EPSG:32618")
    line.set_crs("EPSG:32617", allow_override=True).to_file(tmp_path / "extension.geojson")
    result = CliRunner().invoke(main, plan_args(town_gpkg, tmp_path))
    assert result.exit_code == 2, result.output
    told = " ".join(result.output.split())
    assert "WGS 84 / UTM zone 17N is most likely not the CRS it was drawn in" in told
    assert "Use --layer-crs proposed=EPSG:2260." in told and "--crs" not in told
    given = CliRunner().invoke(main, plan_args(town_gpkg, tmp_path, "--layer-crs", "proposed=EPSG:32618", "--json"))
    assert given.exit_code == 0, given.output
    assert json.loads(given.stdout)["newly_mandated"] == ["L1", "L3", "L5", "L6", "L8"]


def test_manhole_reasons_are_in_feet_in_a_town_measured_in_metres(town_gpkg, tmp_path):
    """Manchester, VT measured in EPSG:32145 (metres): the manholes placed for spacing read "spacing at most
    121.92 ft", Fort Plain's 400 ft in metres labelled feet, on the map's tooltips and in the export."""
    args = ["analyze", "--profile", "fort-plain", "--data", str(town_gpkg), "--out", str(town_gpkg)]
    analysed = CliRunner().invoke(main, [*args, "--crs", "EPSG:32115"])
    assert analysed.exit_code == 0, analysed.output
    result = CliRunner().invoke(main, plan_args(town_gpkg, tmp_path, "--json"))
    assert result.exit_code == 0, result.output
    holes = json.loads(result.stdout)["manholes"]
    assert [m["reason"] for m in holes if m["reason"].startswith("spacing")] == ["spacing at most 400 ft"] * 2
    assert [m["station_ft"] for m in holes] == pytest.approx([0, 300, 600, 900], abs=0.5)


def test_a_split_by_frontage_with_no_frontage_says_it_is_the_split_by_parcel(town_gpkg, tmp_path):
    """On Bellinge's SWMM model under Wappinger (no abutting test) a main reaching parcels it does not front gave
    every parcel 0.0 ft of frontage, and the "by frontage" column was an equal split with nothing to say so."""
    ny_frame([{"geometry": LineString([(0, -150), (900, -150)])}]).to_file(tmp_path / "extension.geojson")
    args = ["plan", "--profile", "wappinger", "--set", "mandate.distance_ft=200", "--data", str(town_gpkg)]
    pdf = tmp_path / "plan.pdf"
    args += ["--proposed", str(tmp_path / "extension.geojson"), "--diameter-in", "8", "--pdf", str(pdf)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert "Newly required to connect: 4 parcels" in said  # L3, L5, L6, L8: 175 ft from the new main, within 200
    told = "No benefiting parcel fronts on the streets the main serves (or on the main, where it lies in no street)"
    assert told + ", so the split by frontage is the same as the split by parcel." in said
    from pypdf import PdfReader

    text = " ".join(" ".join(page.extract_text() for page in PdfReader(pdf).pages).split())
    # A sentence running over a page break has the page's footer in its middle as the text is extracted.
    text = re.sub(r" Town of Wappinger[^:]*: proposed sewer extension .*? page \d+ of \d+", "", text)
    assert text.count(told) == 2  # in the summary and under the split table
    ny_frame([{"geometry": OAK_ST_MAIN}]).to_file(tmp_path / "extension.geojson")
    on_street = CliRunner().invoke(main, plan_args(town_gpkg, tmp_path))
    assert on_street.exit_code == 0 and "No benefiting parcel fronts" not in on_street.output


def test_the_pdf_and_the_comparison_are_never_written_over_the_store(town_gpkg, tmp_path):
    """`--pdf town.gpkg` (a slip of tab completion) replaced the town's store with the board's PDF, and
    `plans --csv town.gpkg` with the comparison; the scenario was saved before the PDF was written, too."""
    whole = town_gpkg.read_bytes()
    args = plan_args(town_gpkg, tmp_path, "--name", "Oak", "--save", "--register", str(tmp_path / "reg.sqlite"))
    refused = CliRunner().invoke(main, [*args, "--pdf", str(town_gpkg)])
    assert refused.exit_code == 2, refused.output
    told = " ".join(refused.output.split())
    assert "The board's PDF is written to a file ending in .pdf, not town.gpkg; town.gpkg is there and would be" in told
    assert "give a name such as town.pdf." in told
    assert town_gpkg.read_bytes() == whole
    none = CliRunner().invoke(main, ["plans", "--register", str(tmp_path / "reg.sqlite"), "--json"])
    assert "Oak" not in none.output  # refused before anything was saved
    assert CliRunner().invoke(main, args).exit_code == 0  # saved, without a PDF
    whole = town_gpkg.read_bytes()  # the store now records the register it was saved in
    compared = CliRunner().invoke(main, ["plans", "--register", str(tmp_path / "reg.sqlite"), "--csv", str(town_gpkg)])
    assert compared.exit_code == 2, compared.output
    assert "The comparison is written to a file ending in .csv, not town.gpkg" in " ".join(compared.output.split())
    assert town_gpkg.read_bytes() == whole


def test_an_export_of_a_kind_a_plan_is_not_is_refused_before_it_is_saved(town_gpkg, tmp_path):
    """`--out plan.csv --save` saved the scenario and then refused the export, so the same command again was
    refused as "saved already"; the first refusal had said .csv was a format it writes."""
    register = str(tmp_path / "reg.sqlite")
    args = plan_args(town_gpkg, tmp_path, "--name", "Oak", "--save", "--register", register)
    refused = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "plan.csv")])
    assert refused.exit_code == 2, refused.output
    assert "Write a plan as .gpkg, .parquet or .geojson, not plan.csv." in " ".join(refused.output.split())
    assert not (tmp_path / "plan.csv").exists()
    again = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "plan.geojson")])
    assert again.exit_code == 0, again.output  # not "saved already": nothing was saved the first time
    assert (tmp_path / "plan.geojson").exists()


def test_a_file_of_no_mains_says_what_to_do(town_gpkg, tmp_path):
    """A layer saved from QGIS before the main was drawn in it was told only "extension.geojson holds no line."."""
    gpd.GeoDataFrame({"name": []}, geometry=[], crs="EPSG:4326").to_file(tmp_path / "extension.geojson")
    result = CliRunner().invoke(main, plan_args(town_gpkg, tmp_path))
    assert result.exit_code == 2, result.output
    told = " ".join(result.output.split())
    assert "extension.geojson holds no line: it has no features. Draw the proposed main in it and save it again" in told


def test_a_main_given_twice_is_refused_not_half_taken(town_gpkg, tmp_path):
    """Two --proposed files evaluated the last alone without a word, and a file with --streets-run too was told
    only to give one or the other, as if neither had been given."""
    ny_frame([{"geometry": LineString([(300, 0), (900, 0)])}]).to_file(tmp_path / "short.geojson")
    twice = CliRunner().invoke(main, plan_args(town_gpkg, tmp_path, "--proposed", str(tmp_path / "short.geojson")))
    assert twice.exit_code == 2, twice.output
    told = " ".join(twice.output.split())
    assert "--proposed is given 2 times (" in told and "short.geojson" in told and "extension.geojson" in told
    both = CliRunner().invoke(main, plan_args(town_gpkg, tmp_path, "--streets-run", "Oak St"))
    assert both.exit_code == 2 and "Give the proposed main one way, not both" in both.output


NOBODYS_MAIN = LineString([(0, -1500), (900, -1500)])  # 1,500 ft south of Oak St: no parcel within 100 ft


def test_a_main_that_benefits_nobody_has_no_petition_to_sign(town_gpkg, tmp_path):
    """A main across Manchester, VT that reached no one said "Petition (§ 144-17B): 0 benefiting owners; a
    majority is 0 signatures.", on the command line and in the board's PDF: a petition carried by nobody."""
    ny_frame([{"geometry": NOBODYS_MAIN}]).to_file(tmp_path / "extension.geojson")
    result = CliRunner().invoke(main, plan_args(town_gpkg, tmp_path, "--pdf", str(tmp_path / "plan.pdf")))
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert "Newly required to connect: 0 parcels" in said
    assert "Petition (§ 144-17B): no owner benefits, so there is no petition to sign." in said
    assert "a majority is 0" not in said
    from pypdf import PdfReader

    pdf = " ".join(" ".join(page.extract_text() for page in PdfReader(tmp_path / "plan.pdf").pages).split())
    assert "No owner benefits (§ 144-17B), so there is no petition to sign." in pdf
    assert "signed by 0" not in pdf and "a majority is 0" not in pdf


def test_a_misspelt_street_in_a_run_is_named_not_dropped(town_gpkg):
    """ "Main St,Oka St" planned Main St alone, without a word about Oka St."""
    args = ["plan", "--profile", "fort-plain", "--data", str(town_gpkg), "--diameter-in", "8", "--streets-run"]
    refused = CliRunner().invoke(main, [*args, "Main St,Oka St"])
    assert refused.exit_code == 2
    assert (
        "No street named 'Oka St' in the streets layer (did you mean 'Oak St'?): give the names as the streets "
        "layer spells them, separated by commas." in " ".join(refused.output.split())
    )
    assert CliRunner().invoke(main, [*args, "main st, OAK ST"]).exit_code == 0  # any case, spaces around commas


STREET_NAMES = ["Oak St", "Elm St", "Maple Ave", "Birch Ln", "Cedar Ct", "Pine Rd", "Walnut Way", "Spruce Dr"]


@pytest.mark.parametrize(
    ("names", "kept", "told"),
    [
        # "give the names as the streets layer spells them" and nothing more: the layer's names were not to be seen
        (
            STREET_NAMES,
            "Bridge St",
            "No street named 'Bridge St' in the streets layer (the nearest in spelling of its 8 street names: "
            "'Elm St', 'Oak St', 'Pine Rd', 'Birch Ln', 'Cedar Ct'): give the names",
        ),
        (
            STREET_NAMES,
            "Oka St,Bridge St",
            "No street named 'Oka St', 'Bridge St' in the streets layer ('Oka St' may be 'Oak St'; the nearest in "
            "spelling to 'Bridge St' of its 8 street names: 'Elm St', 'Oak St', 'Pine Rd', 'Birch Ln', 'Cedar Ct')",
        ),
        (STREET_NAMES[:3], "Bridge St", "(its 3 street names: 'Elm St', 'Maple Ave', 'Oak St'): give the names"),
        (STREET_NAMES[:1], "Bridge St", "(its 1 street name: 'Oak St'): give the names"),
        ([None, None], "Bridge St", "(it has no street names: its street_name column is empty)"),
    ],
)
def test_a_street_with_no_close_spelling_is_told_with_names_the_layer_has(names, kept, told):
    from layers.errors import LayerError
    from layers.read import street_run

    lines = [LineString([(i * 100, 0), (i * 100 + 100, 0)]) for i in range(len(names))]
    streets = frame([{"street_name": n, "geometry": g} for n, g in zip(names, lines, strict=True)])
    with pytest.raises(LayerError) as refused:
        street_run(streets, kept)
    assert told in str(refused.value)


def test_plan_cli_prints_verdicts_requirements_and_sections(town_gpkg, tmp_path):
    result = CliRunner().invoke(main, plan_args(town_gpkg, tmp_path, "--material", "PVC"), catch_exceptions=False)
    out = " ".join(result.output.split())
    assert result.exit_code == 0
    for text in (
        "for the engineer",
        "Requirements the contractor must meet",
        "Exfiltration test sections",
        "a majority is 3 signatures",
        "Cost split",
    ):
        assert text in out, text
    assert "PASS" not in out and "FAIL" not in out


def test_plan_cli_says_where_it_saved_and_wrote_the_plan(town_gpkg, tmp_path):
    """README's `plan ... --save --pdf hancock.pdf` and `--out hancock.geojson` wrote the files and the scenario
    without a word: the user could not tell it had been saved, or where."""
    reg, export, pdf = str(tmp_path / "reg.sqlite"), tmp_path / "plan.geojson", tmp_path / "plan.pdf"
    extra = ("--name", "Oak St", "--save", "--register", reg, "--out", str(export), "--pdf", str(pdf))
    result = CliRunner().invoke(main, plan_args(town_gpkg, tmp_path, *extra), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert said.endswith(
        "Saved as the scenario 'Oak St' in the register (`sewerplan plans` shows it beside the others). "
        f"Plan exported to {export}. The board's PDF written to {pdf}."
    ), said[-400:]
    assert export.exists() and pdf.exists()
    quiet = CliRunner().invoke(main, plan_args(town_gpkg, tmp_path), catch_exceptions=False)
    assert "Saved as" not in quiet.output and "exported to" not in quiet.output


def test_plan_cli_says_the_loadings_warnings_before_the_plan(tmp_path):
    """`plan` printed the plan without what loading found (a parcel left out of the analysis, say), which analyze,
    trace and every other command say first; --json keeps them out of its one document, as the others do."""
    town = layout(shift=(1, 1))
    extra = town["parcels"].iloc[[0]].assign(parcel_id="L9", site_address="900 Oak St")
    town["parcels"] = pd.concat([town["parcels"], extra.set_geometry([None], crs=extra.crs)], ignore_index=True)
    data = tmp_path / "town.gpkg"
    write_layers(str(data), town)
    ny_frame([{"geometry": LineString([(0, 0), (900, 0)])}]).to_crs(4326).to_file(tmp_path / "extension.geojson")
    warned = "warning: parcels: 1 feature(s) have no geometry and were left out of the analysis."
    result = CliRunner().invoke(main, plan_args(data, tmp_path), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert warned in " ".join(result.stderr.split()) and "Cost split" in result.stdout
    quiet = CliRunner().invoke(main, plan_args(data, tmp_path, "--json"), catch_exceptions=False)
    assert "warning" not in quiet.stderr and json.loads(quiet.stdout)


def test_a_plan_exported_as_geoparquet_names_every_file_it_wrote(town_gpkg, tmp_path):
    """`plan --out plan.parquet` writes one GeoParquet file per layer (the proposed main at the path, its manholes,
    the newly mandated and benefiting parcels ... beside it) and said "Plan exported to .../plan.parquet.": the
    engineer opening that one file in QGIS did not know the others were there."""
    export = tmp_path / "plan.parquet"
    result = CliRunner(env={"COLUMNS": "400"}).invoke(
        main, plan_args(town_gpkg, tmp_path, "--out", str(export)), catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    said = next(line for line in result.output.splitlines() if line.startswith("Plan exported to"))
    assert said.startswith(f"Plan exported to {export}, with ") and said.endswith(" beside it."), said
    named = said.removeprefix(f"Plan exported to {export}, with ").removesuffix(" beside it.").split(", ")
    beside = [p.name for p in tmp_path.glob("plan.*.parquet")]
    assert sorted(named) == sorted(beside) and len(beside) >= 3, (named, beside)  # manholes, parcels ... at least


def test_plans_compare_side_by_side_csv_and_delete(town_gpkg, tmp_path):
    reg = str(tmp_path / "reg.sqlite")
    runner = CliRunner()
    for name, diameter in (("A", "8"), ("B", "6")):
        args = plan_args(town_gpkg, tmp_path, "--name", name, "--save", "--register", reg)
        args[args.index("--diameter-in") + 1] = diameter
        assert runner.invoke(main, args).exit_code == 0
    listed = json.loads(runner.invoke(main, ["plans", "--register", reg, "--json"]).output)
    assert [p["name"] for p in listed] == ["A", "B"]
    a, b = listed
    assert (a["cost"], a["newly_mandated"], a["septic_retired"], a["signatures_needed"]) == (269_000, 5, 5, 3)
    assert a["cost_per_unit"] == pytest.approx(269_000 / 10) and b["checks_not_met"] == "min diameter"
    csv_path = tmp_path / "compare.csv"
    shown = runner.invoke(main, ["plans", "--compare", "B", "A", "--register", reg, "--csv", str(csv_path)])
    text = " ".join(shown.output.split())
    assert shown.exit_code == 0 and "Septic systems retired" in text and "Cost per newly connected" in text
    assert csv_path.read_bytes().startswith(b"\xef\xbb\xbf")  # marked UTF-8, as every CSV sewerplan writes
    rows = list(csv.reader(csv_path.read_text(encoding="utf-8-sig").splitlines()))
    assert rows[0] == ["measure", "B", "A"]
    table = {r[0]: r[1:] for r in rows[1:]}
    assert table["Parcels newly mandated"] == ["5", "5"] and table["Petition signatures needed"] == ["3", "3"]
    assert table["Estimated cost ($)"][1] == "269000"  # a whole number as one: "269000.0" before
    assert not [c for cells in table.values() for c in cells if c.endswith(".0")], table
    missing = runner.invoke(main, ["plans", "--compare", "A", "Z", "--register", reg])
    assert missing.exit_code == 2 and "Z" in missing.output and "saved: A, B" in missing.output
    gone = runner.invoke(main, ["plans", "--delete", "A", "--register", reg, "--json"])
    assert [p["name"] for p in json.loads(gone.output)] == ["B"]
    again = runner.invoke(main, ["plans", "--delete", "A", "--register", reg])
    assert again.exit_code == 2 and "no saved scenario" in again.output


def test_plans_on_a_store_without_a_register_says_none_is_saved_yet(town_gpkg, tmp_path, monkeypatch):
    """`sewerplan plans` on a store with no register exited 2 telling the user to create a notices register; the
    web page says "No saved scenario yet", and so does the command line now, exit 0, creating nothing."""
    monkeypatch.delenv("SEWERPLAN_DATABASE_URL", raising=False)
    runner = CliRunner()
    shown = runner.invoke(main, ["plans", "--store", str(town_gpkg)])
    assert shown.exit_code == 0, shown.output
    assert shown.output.startswith("No saved scenario yet") and "notices issue" not in shown.output
    listed = runner.invoke(main, ["plans", "--store", str(town_gpkg), "--json"])
    assert listed.exit_code == 0 and json.loads(listed.output) == []
    assert not list(tmp_path.glob("*.sqlite"))  # looking never creates a register
    nowhere = runner.invoke(main, ["plans"])  # no store, no register: where to look is still asked for
    assert nowhere.exit_code == 2 and "no store was given to look in" in nowhere.output
    # README's `plans --compare A B` without the store: it said "No register exists yet" without having looked,
    # beside a town whose register existed, and named no way to give the store.
    said = " ".join(nowhere.output.split())
    assert "No register exists yet" not in said and "Give the town's store, which records its register (--store" in said
    typo = runner.invoke(main, ["plans", "--store", str(tmp_path / "twon.gpkg")])  # not "none saved yet"
    assert typo.exit_code == 2 and "there is no store at" in typo.output and "twon.gpkg" in typo.output


def test_a_saved_scenario_is_replaced_only_when_asked(town_gpkg, tmp_path):
    """Saving under a saved scenario's name deleted the first without a word; names cut at 80 characters made
    two alternatives one. Both are refused before anything is evaluated, and --replace replaces."""
    reg = str(tmp_path / "reg.sqlite")
    runner = CliRunner()

    def save(name, diameter, *extra):
        args = plan_args(town_gpkg, tmp_path, "--name", name, "--save", "--register", reg, *extra)
        args[args.index("--diameter-in") + 1] = diameter
        return runner.invoke(main, args)

    assert save("Spring St", "8").exit_code == 0
    again = save("Spring St", "12")
    said = " ".join(again.output.split())
    assert again.exit_code == 2 and "'Spring St' is saved already (8-inch main" in said and "Use --replace." in said
    assert "Tick" not in said and "on the map" not in said  # the map's words are the map's
    listed = json.loads(runner.invoke(main, ["plans", "--register", reg, "--json"]).output)
    assert [(p["name"], p["diameter_in"]) for p in listed] == [("Spring St", 8.0)]
    assert save("Spring St", "12", "--replace").exit_code == 0
    listed = json.loads(runner.invoke(main, ["plans", "--register", reg, "--json"]).output)
    assert [(p["name"], p["diameter_in"]) for p in listed] == [("Spring St", 12.0)]

    long = "Spring Street sanitary extension from Canal St to the north village line, alternative 1"
    refused = save(long, "8")
    assert refused.exit_code == 2 and "at most 80 characters; this one has 87" in " ".join(refused.output.split())
    huge = save("typo", "1000")
    assert huge.exit_code == 2 and "larger than any sewer pipe made (144 in)" in " ".join(huge.output.split())
    unsaved = plan_args(town_gpkg, tmp_path, "--name", "Spring St", "--replace", "--register", reg)
    unsaved = runner.invoke(main, unsaved)  # --replace alone saved nothing, without a word
    assert unsaved.exit_code == 2 and "give --save too" in " ".join(unsaved.output.split())
    assert [p["name"] for p in json.loads(runner.invoke(main, ["plans", "--register", reg, "--json"]).output)] == [
        "Spring St"
    ]


def test_saving_a_name_saved_meanwhile_keeps_the_first(tmp_path):
    """Two planners saving one new name at once both passed the check before their evaluations; the insert then
    replaced the first silently. The register refuses it in the transaction that would write it."""
    from layers.register import Register

    register = Register(f"sqlite:///{tmp_path / 'reg.sqlite'}")
    plan = {"profile": "fort-plain", "wkt": "LINESTRING (0 0, 1 1)", "crs": "EPSG:2260", "result": {}}
    assert register.save_plan("Race", diameter_in=8, **plan) is None
    assert register.save_plan("Race", diameter_in=12, **plan)["diameter_in"] == 8
    assert register.saved_plan("Race")["diameter_in"] == 8
    assert register.save_plan("Race", diameter_in=12, replace=True, **plan) is None
    assert register.saved_plan("Race")["diameter_in"] == 12


def test_compare_reads_scenarios_saved_before_this_version():
    old = {
        "cost": {"total": 1000.0},
        "newly_mandated": ["X"],
        "private_systems": [],
        "petition": {"applies": False, "signatures_needed": 0},
        "units": 0,
        "length_ft": 10.0,
        "manholes": [{"x": 0, "y": 0, "reason": "end"}],
        "design_checks": [{"check": "min_diameter", "passed": False, "section": "§ 1", "message": ""}],
        "downstream": {"capacity_ok": True},
    }
    values = {r["measure"]: r["values"][0] for r in compare_plans([{"name": "old", "diameter_in": 6, "result": old}])}
    assert values["cost_per_unit"] is None and values["signatures_needed"] is None
    assert values["checks_not_met"] == "min diameter" and values["new_manholes"] == 1


def test_a_plan_measures_from_the_curbline_as_the_analysis_does():
    """Fort Plain § 144-1: a lot whose boundary is 105 ft from the planned main in a 210-ft street, its curb 95 ft,
    is newly mandated by the plan (as `analyze` would find once the main is built); without curbs it is not."""
    from tests.conftest import lot

    street = LineString([(-1000, 0), (2000, 0)])
    streets = frame([{"street_name": "Broad St", "row_width_ft": 210.0, "geometry": street}])
    curbs = frame([{"geometry": LineString([(-1000, 95), (2000, 95)])}])
    parcels = frame([lot("P", 0, 105, occupied=True, owner_name="A. Owner")])
    no_mains = gpd.GeoDataFrame({"main_id": []}, geometry=[], crs=parcels.crs)
    proposed = LineString([(-200, 0), (300, 0)])

    def plan(**kw):
        return plan_extension(
            proposed, diameter_in=8, profile=FP, parcels=parcels, mains=no_mains, streets=streets, **kw
        ).as_dict()

    assert plan(curbs=curbs)["newly_mandated"] == ["P"]
    assert plan()["newly_mandated"] == []


@pytest.mark.parametrize("ext", ["geojson", "gpkg"])
def test_a_plans_own_export_read_back_is_the_same_plan(town_gpkg, tmp_path, ext):
    """`--out plan.geojson`, then `--proposed plan.geojson`: its proposed main alone, not merged with its connecting
    main (600 ft drawn and 300 ft connecting came back as 900 ft drawn, costed and tested otherwise)."""
    short = tmp_path / "short.geojson"
    ny_frame([{"geometry": LineString([(300, 0), (900, 0)])}]).to_file(short, driver="GeoJSON")
    export = tmp_path / f"plan.{ext}"
    args = ["plan", "--profile", "fort-plain", "--data", str(town_gpkg), "--diameter-in", "8"]
    first = CliRunner().invoke(main, [*args, "--proposed", str(short), "--out", str(export), "--json"])
    assert first.exit_code == 0, first.output
    again = CliRunner().invoke(main, [*args, "--proposed", str(export), "--json"])
    assert again.exit_code == 0, again.output
    before, after = json.loads(first.stdout), json.loads(again.stdout)
    assert before["connecting_main"]["length_ft"] == pytest.approx(300, abs=0.5)
    for key in ("drawn_length_ft", "length_ft"):
        assert after[key] == pytest.approx(before[key], abs=1e-3), key  # written in degrees, read back in feet
    run = ("to_manhole", "length_ft")
    assert [after["connecting_main"][k] for k in run] == [before["connecting_main"][k] for k in run]
    for key in ("newly_mandated", "vacant_benefiting", "test_sections"):
        assert after[key] == before[key], key
    assert after["cost"]["total"] == before["cost"]["total"]
    assert [m["id"] for m in after["manholes"]] == [m["id"] for m in before["manholes"]]
    told = f"plan.{ext} is a plan's export: its proposed main alone was read"
    assert after["proposed_note"].startswith(told) and "proposed_note" not in before
    text = CliRunner().invoke(main, [*args, "--proposed", str(export)], env={"COLUMNS": "200"}).output
    assert told in " ".join(text.split()) and "600 ft drawn and a 300 ft connecting main" in text

    # An export cut down to its connecting main is refused, not planned as if that were the drawn main.
    if ext == "geojson":
        features = gpd.read_file(export)
        features[features["feature"] == "connecting main"].to_file(tmp_path / "cut.geojson", driver="GeoJSON")
        cut = CliRunner().invoke(main, [*args, "--proposed", str(tmp_path / "cut.geojson")])
        assert cut.exit_code != 0 and "cut.geojson is a plan's export without its proposed main" in cut.output


def test_a_plan_exported_as_geojson_keeps_its_coordinates_to_the_millimetre(tmp_path):
    """RFC 7946's default 7 decimals of a degree (about a centimetre) made the main read back 0.01 ft short."""
    from layers.write import write_plan

    parcels = ny_frame([{"parcel_id": "A", "geometry": box(0, 0, 10, 10)}])
    line = ny_frame([{"geometry": LineString([(0.123, 0.456), (600.789, 0.321)])}]).geometry.iloc[0]
    manholes = [{"id": "MH-1", "x": 0.123, "y": 0.456, "existing": False}]
    plan = {"name": "Oak", "diameter_in": 8, "length_ft": 600, "manholes": manholes, "newly_mandated": []}
    write_plan(str(tmp_path / "plan.geojson"), plan, line, parcels, crs=parcels.crs)
    back = gpd.read_file(tmp_path / "plan.geojson").to_crs(parcels.crs).geometry.iloc[0]
    assert back.hausdorff_distance(line) < 0.003  # feet: a millimetre


@pytest.mark.parametrize("ext", ["gpkg", "geojson", "parquet"])
def test_a_plan_that_reaches_no_parcel_exports_its_main_and_manholes(tmp_path, ext):
    """A scenario that adds no parcel (a trunk, a relief sewer) still exports: its main and manholes, no lots."""
    from layers.write import write_plan

    parcels = ny_frame([{"parcel_id": "A", "geometry": box(0, 0, 10, 10)}])
    plan = {
        "name": "Relief",
        "diameter_in": 8,
        "length_ft": 100,
        "manholes": [{"id": "MH-1", "x": 0, "y": 0, "existing": False}],
        "newly_mandated": [],
        "parcels": [],
    }
    path = tmp_path / f"relief.{ext}"
    written = write_plan(str(path), plan, LineString([(0, 0), (100, 0)]), parcels, crs=parcels.crs)
    assert written and path.exists()
    if ext == "geojson":
        features = gpd.read_file(path)
        assert sorted(features["feature"]) == ["proposed main", "proposed manhole"]
