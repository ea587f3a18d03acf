"""A proposed main drawn through houses: every building it passes through is named, with its parcel and the feet
of main under it, in the plan's document, its check, the command line, the board's PDF and the exports.

The town is tests/test_plans.py's Oak St with named buildings. The main runs from manhole A (0, 0) north 70 ft,
then east 330 ft along y = 70, through the lots north of Oak St (front lines at y = 25): through B12 on L1
(x 130 to 170) and B13 on L2 (x 230 to 270), 40 ft under each, and 5 ft south of B14 on L3 (y 75 to 110), which it
passes and is not named. B15 on L5 is far off. No ordinance sets a clearance from buildings, so 5 ft is clear.
"""

from __future__ import annotations

import json

import geopandas as gpd
import pyogrio
import pytest
from click.testing import CliRunner
from shapely.geometry import LineString, Point, box

from analysis.plans import MEETS, REVIEW, UNKNOWN
from gisapp.cli import main
from layers.write import write_layers, write_plan
from tests.conftest import ny_frame
from tests.test_plan_board import render
from tests.test_plans import layout, plan_args, run

THROUGH_HOUSES = LineString([(0, 0), (0, 70), (400, 70)])


def town_with_houses():
    town = layout()
    town["buildings"] = gpd.GeoDataFrame(
        {"building_id": ["B12", "B13", "B14", "B15"], "units": [2, 2, 2, 2]},
        geometry=[box(130, 50, 170, 90), box(230, 50, 270, 90), box(330, 75, 370, 110), box(530, 50, 570, 90)],
        crs=town["parcels"].crs,
    )
    return town


def check(result, name="buildings_crossed"):
    (found,) = [c for c in result.design_checks if c.check == name]
    return found


def test_a_main_through_two_houses_names_each_with_its_parcel_and_the_feet_under_it():
    result = run(THROUGH_HOUSES, town=town_with_houses())
    rows = [{k: r[k] for k in r if k != "lines"} for r in result.buildings_crossed]
    # stations from A: 70 ft north, then 130 ft east to B12's west wall
    assert rows == [
        {"building_id": "B12", "parcel_id": "L1", "length_ft": 40.0, "from_station_ft": 200.0, "to_station_ft": 240.0},
        {"building_id": "B13", "parcel_id": "L2", "length_ft": 40.0, "from_station_ft": 300.0, "to_station_ft": 340.0},
    ]
    assert result.buildings_crossed[0]["lines"] == [[[130.0, 70.0], [170.0, 70.0]]]
    found = check(result)
    assert found.verdict == REVIEW and found.section == "design check"
    assert "passes through 2 buildings: B12 (on parcel L1) 40.0 ft under it, stations 200 to 240 ft; " in found.message
    assert "B13 (on parcel L2) 40.0 ft under it, stations 300 to 340 ft." in found.message
    assert "the law sets no clearance between a main and a building" in found.message
    assert "B14" not in found.message and "B15" not in found.message
    assert result.as_dict()["buildings_crossed"] == result.buildings_crossed


def test_a_main_along_a_wall_or_beside_a_house_passes_through_none():
    town = town_with_houses()
    # along B14's south wall (y = 75) from x 330 to 370, and 5 ft south of B12 and B13
    result = run(LineString([(0, 0), (0, 45), (300, 45), (300, 75), (400, 75)]), town=town)
    assert result.buildings_crossed == []
    found = check(result)
    assert found.verdict == MEETS and "passes through no building" in found.message


def test_without_footprints_whether_the_main_passes_under_a_building_is_not_known():
    town = town_with_houses()
    town["buildings"] = None
    found = check(run(THROUGH_HOUSES, town=town))
    assert found.verdict == UNKNOWN and found.message.startswith("No buildings layer was given")
    town["buildings"] = gpd.GeoDataFrame({"building_id": ["B12"]}, geometry=[Point(150, 70)], crs=town["parcels"].crs)
    result = run(THROUGH_HOUSES, town=town)
    assert result.buildings_crossed is None and check(result).verdict == UNKNOWN
    assert "holds 1 point and no footprints" in check(result).message


@pytest.mark.parametrize("suffix", [".gpkg", ".geojson"])
def test_the_plans_export_has_the_main_under_each_building(tmp_path, suffix):
    town = town_with_houses()
    result = run(THROUGH_HOUSES, town=town)
    path = tmp_path / f"plan{suffix}"
    write_plan(str(path), result.as_dict(), result.line, town["parcels"], crs=town["parcels"].crs)
    if suffix == ".gpkg":
        under = pyogrio.read_dataframe(path, layer="buildings_crossed")
    else:
        every = pyogrio.read_dataframe(path).to_crs(town["parcels"].crs)
        under = every[every["feature"] == "building crossed"]
    assert under["building_id"].tolist() == ["B12", "B13"]
    assert under["parcel_id"].tolist() == ["L1", "L2"]
    assert under["length_ft"].tolist() == [40.0, 40.0]
    assert under.geometry.length.round(3).tolist() == [40.0, 40.0]


def test_the_command_line_and_the_boards_pdf_name_the_buildings(tmp_path):
    town = town_with_houses()
    moved = {name: ny_frame(layer.to_dict("records")) for name, layer in town.items()}
    data = tmp_path / "town.gpkg"
    write_layers(str(data), moved)
    ny_frame([{"geometry": THROUGH_HOUSES}]).to_file(tmp_path / "extension.geojson")
    doc = json.loads(CliRunner().invoke(main, plan_args(data, tmp_path, "--json"), catch_exceptions=False).output)
    assert [(b["building_id"], b["parcel_id"], b["length_ft"]) for b in doc["buildings_crossed"]] == [
        ("B12", "L1", 40.0),
        ("B13", "L2", 40.0),
    ]
    text = CliRunner(env={"COLUMNS": "300"}).invoke(main, plan_args(data, tmp_path), catch_exceptions=False).output
    said = " ".join(text.replace("│", " ").split())
    assert "buildings crossed for the engineer design check The main as built passes through 2 buildings" in said
    assert "B12 (on parcel L1) 40.0 ft under it" in said and "B14" not in said
    _, reader = render(tmp_path, town=town, proposed=THROUGH_HOUSES)
    pdf = " ".join(" ".join(page.extract_text().split()) for page in reader.pages)
    assert "buildings crossed" in pdf and "B13 (on parcel L2) 40.0 ft under it" in pdf
