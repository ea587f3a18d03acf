"""Planning an extension on a hand-made street whose answers are worked out by hand."""

from __future__ import annotations

import json

import geopandas as gpd
import pytest
from click.testing import CliRunner
from pypdf import PdfReader
from shapely.geometry import LineString, Point, box

from analysis.network import build_network
from analysis.plans import manning_capacity_gpd, petition_passes, place_manholes, plan_extension
from analysis.profiles import load_profile
from gisapp.cli import main
from layers.write import write_layers
from tests.conftest import frame, ny_frame

FP = load_profile("fort-plain")

# Main St (sewered): main M-1 from A (0, 0) west to P (-400, 0) at the plant. Oak St (no sewer yet) runs east from
# x=0 to x=900 along y=0. Eight lots north of Oak St, 100 ft wide, x = 100 .. 900, 25 ft from the centreline.
# Occupied: lots 1, 2, 3, 5, 6, 8; lot 2 is connected already (to Main St, by a long private lateral).
# Lots 1 and 3 have the same owner.
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


def layout(diameter=8.0, ds_invert=98.0, shift=(0, 0)):
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
            }
        ]
    )
    manholes = f([{"manhole_id": "A", "geometry": Point(0, 0)}, {"manhole_id": "P", "geometry": Point(-400, 0)}])
    plant = f([{"outfall_id": "WWTP", "outfall_manhole": "P", "geometry": Point(-420, 0)}])
    parcels = f(
        [
            {
                "parcel_id": f"L{i}",
                "owner_name": OWNERS[i],
                "units": 2.0,
                "connected": i == 2,
                "geometry": box(100 * i, 25, 100 * i + 100, 125),
            }
            for i in range(1, 9)
        ]
    )
    buildings = f([{"geometry": box(100 * i + 30, 50, 100 * i + 70, 90)} for i in (1, 2, 3, 5, 6, 8)])
    return {
        "streets": streets,
        "mains": mains,
        "manholes": manholes,
        "treatment_plants": plant,
        "parcels": parcels,
        "buildings": buildings,
    }


OAK_ST_MAIN = LineString([(0, 0), (900, 0)])


def run(proposed=OAK_ST_MAIN, diameter=8.0, town=None, **kw):
    town = town or layout()
    net = build_network(town["mains"], manholes=town["manholes"], outfalls=town["treatment_plants"], profile=FP)
    return plan_extension(
        proposed,
        diameter_in=diameter,
        profile=FP,
        parcels=town["parcels"],
        mains=town["mains"],
        streets=town["streets"],
        buildings=town["buildings"],
        network=net,
        **kw,
    )


def test_newly_mandated_petition_and_septic():
    r = run().as_dict()
    assert r["newly_mandated"] == ["L1", "L3", "L5", "L6", "L8"]  # occupied, not connected
    assert r["private_systems"] == ["L1", "L3", "L5", "L6", "L8"]  # § 144-5B: abandon the septic system
    assert r["units"] == 10
    # Owners: SMITH JOHN (L1, L3), NG MAI, DIAZ ROSA, KING AL: four; a majority is three.
    assert r["petition"] == {"benefiting_owners": 4, "signatures_needed": 3, "section": "§ 144-17B", "applies": True}


def test_petition_majority_at_exactly_half_is_not_a_majority():
    assert not petition_passes(2, 4) and petition_passes(3, 4) and petition_passes(3, 5) and not petition_passes(2, 5)


def test_nine_hundred_feet_get_manholes_at_both_ends_and_two_between():
    r = run().as_dict()
    assert [(m["x"], m["y"]) for m in r["manholes"]] == [(0, 0), (300, 0), (600, 0), (900, 0)]
    spacing = next(c for c in r["design_checks"] if c["check"] == "manhole_spacing")
    assert spacing["passed"] and "300 ft" in spacing["message"] and spacing["section"] == "§ 144-18K"


def test_bend_gets_a_manhole():
    points = place_manholes(LineString([(0, 0), (300, 0), (300, 300)]), max_spacing=400, bend_deg=10)
    assert [(x, y, r) for x, y, r in points][1] == (300.0, 0.0, "change in alignment")
    assert len(points) == 3


def test_leakage_allowance_by_hand():
    # 100 gal/mile/day/inch x 900/5280 mile x 8 in = 136.36; 4 manholes x 4.5 = 18.0 (§ 144-19C)
    r = run().as_dict()
    assert r["exfiltration_allowance_gpd"] == pytest.approx(136.4 + 18.0, abs=0.06)
    check = next(c for c in r["design_checks"] if c["check"] == "exfiltration_allowance")
    assert check["section"] == "§ 144-19C" and "1 section(s) of at most 1,000 ft" in check["message"]


def test_cost_and_its_three_splits_by_hand():
    cost = run().as_dict()["cost"]
    # 900 ft x $250 + 4 manholes x $6,500 + 5 laterals x $3,500 = 225,000 + 26,000 + 17,500
    assert cost["total"] == 268_500 and cost["main"] == 225_000 and cost["laterals"] == 17_500
    assert cost["by_parcel"] == {p: 53_700 for p in ("L1", "L3", "L5", "L6", "L8")}
    assert cost["by_unit"] == cost["by_parcel"]  # two units each
    assert cost["by_frontage"] == pytest.approx(cost["by_parcel"])  # 100 ft each along the new main
    assert sum(cost["by_frontage"].values()) == pytest.approx(268_500)


def test_six_inch_fails_the_diameter_rule():
    checks = {c["check"]: c for c in run(diameter=6.0).as_dict()["design_checks"]}
    assert not checks["min_diameter"]["passed"] and checks["min_diameter"]["section"] == "§ 144-18B"
    assert not checks["trench_width"]["passed"]  # § 144-18F has no width for 6-inch pipe
    ok = {c["check"]: c for c in run().as_dict()["design_checks"]}
    assert ok["min_diameter"]["passed"] and "3 ft 3 in" in ok["trench_width"]["message"]


def test_downstream_capacity_ok_and_exceeded():
    r = run().as_dict()["downstream"]
    assert r["connects_at"] == "A" and r["path"] == ["A", "P"] and r["connection_gap_ft"] == 0
    assert r["capacity_ok"] and r["mains"][0]["slope"] == pytest.approx(0.005)
    # 10 new units x 250 gpd x peaking 4 = 10,000 gpd, plus L2's 2 units (2,000) through a 4-inch flat main:
    tight = run(town=layout(diameter=4.0, ds_invert=99.98)).as_dict()["downstream"]
    cap = manning_capacity_gpd(4.0, 0.02 / 400, 0.013)
    assert tight["mains"][0]["capacity_gpd"] == pytest.approx(cap, abs=0.5) and cap < 12_000
    assert tight["added_peak_gpd"] == 10_000 and not tight["capacity_ok"]


def test_roughness_by_material():
    town = layout(diameter=4.0, ds_invert=99.98)
    town["mains"]["material"] = "PVC"
    pvc = run(town=town).as_dict()["downstream"]["mains"][0]
    assert pvc["manning_n"] == 0.010
    assert pvc["capacity_gpd"] == pytest.approx(manning_capacity_gpd(4.0, 0.02 / 400, 0.010), abs=0.5)
    assert run(town=layout()).as_dict()["downstream"]["mains"][0]["manning_n"] == 0.013  # no material: manning_n


def test_phase_three_holds_parcels_on_private_systems():
    areas = frame(
        [
            {"area_name": "Phase I/II", "mandates": "yes", "geometry": box(-1000, -500, 500, 500)},
            {"area_name": "Phase III", "mandates": "no", "geometry": box(500, -500, 2000, 500)},
        ]
    )
    r = run(service_areas=areas).as_dict()
    assert r["newly_mandated"] == ["L1", "L3"] and r["held_by_service_area"] == ["L5", "L6", "L8"]


def test_manning_full_pipe_capacity():
    # 8-inch at 0.4 %, n = 0.013: about 0.77 cfs, the textbook value.
    assert manning_capacity_gpd(8, 0.004, 0.013) / 646_317 == pytest.approx(0.77, abs=0.01)


def test_plan_cli_json_save_export_pdf(tmp_path):
    town = layout(shift=(1, 1))
    data = tmp_path / "town.gpkg"
    write_layers(str(data), town)
    proposed = ny_frame([{"geometry": LineString([(0, 0), (900, 0)])}]).to_crs(4326)
    proposed.to_file(tmp_path / "extension.geojson")
    reg = str(tmp_path / "reg.sqlite")
    args = [
        "plan",
        "--profile",
        "fort-plain",
        "--data",
        str(data),
        "--proposed",
        str(tmp_path / "extension.geojson"),
        "--diameter",
        "8",
        "--name",
        "Oak St",
        "--save",
        "--register",
        reg,
        "--out",
        str(tmp_path / "plan.gpkg"),
        "--pdf",
        str(tmp_path / "plan.pdf"),
        "--json",
    ]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    doc = json.loads(result.output)
    for key in (
        "newly_mandated",
        "manholes",
        "length_ft",
        "design_checks",
        "exfiltration_allowance_gpd",
        "petition",
        "cost",
        "downstream",
    ):
        assert key in doc
    assert set(doc["manholes"][0]) == {"x", "y", "reason"}
    assert set(doc["design_checks"][0]) == {"check", "passed", "section", "message"}
    assert {"total", "by_frontage", "by_parcel", "by_unit"} <= set(doc["cost"])
    assert {"path", "capacity_ok"} <= set(doc["downstream"])
    assert doc["newly_mandated"] == ["L1", "L3", "L5", "L6", "L8"]
    assert doc["length_ft"] == pytest.approx(900, abs=0.5)  # drawn in degrees, measured in feet
    assert {n for n in gpd.list_layers(tmp_path / "plan.gpkg")["name"]} == {
        "proposed_main",
        "proposed_manholes",
        "newly_mandated",
    }
    words = " ".join(PdfReader(tmp_path / "plan.pdf").pages[0].extract_text().split())
    assert "Oak St" in words and "§ 144-17B" in words and "§ 144-18B" in words
    CliRunner().invoke(main, [*args[:-7], "--name", "Oak St 6in", "--diameter", "6", "--save", "--register", reg])
    listed = json.loads(CliRunner().invoke(main, ["plans", "--register", reg, "--json"]).output)
    assert [p["name"] for p in listed] == ["Oak St", "Oak St 6in"]
    assert listed[1]["checks_failed"][:1] == ["min_diameter"]
    run_by_streets = CliRunner().invoke(
        main,
        [
            "plan",
            "--profile",
            "fort-plain",
            "--data",
            str(data),
            "--streets-run",
            "Oak St",
            "--diameter",
            "8",
            "--json",
        ],
    )
    assert json.loads(run_by_streets.output)["newly_mandated"] == doc["newly_mandated"]
    bad = CliRunner().invoke(main, ["plan", "--profile", "fort-plain", "--data", str(data), "--diameter", "8"])
    assert bad.exit_code == 2 and "--proposed PATH or --streets-run" in bad.output
