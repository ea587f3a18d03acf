"""A yes/no field read from a column of the town's own words: a buildings layer's use column chosen for occupied.

A county's footprints say what each building is ("house", "garage", "shed"), not yes or no. Chosen for occupied,
such a column was refused, and coded values for it were refused too ("values sewerplan reads as they stand"): the
only way left was to drop the column, and every garage of 150 sq ft or more then counted as an occupied building,
a second building on its lot that was told it needs a building sewer of its own. The coded values now say which of
the column's words mean yes and which no, on the command line (``--map-value buildings.occupied.garage=no``) and
on the upload's column-mapping page, as they say what a main's codes mean.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from gisapp.cli import main
from layers.sample import sample_town
from layers.write import write_layers
from tests.conftest import csrf, make_app, posted_upload
from tests.test_web_tester_fixes import _text

USE = ["--map", "buildings.occupied=building_use"]
# The sample's buildings: each lot's house ("main"), some a second house behind it ("rear"), some a garden shed.
HOUSES = ["--map-value", "buildings.occupied.main=yes", "--map-value", "buildings.occupied.shed=no"]


@pytest.fixture(scope="module")
def town(tmp_path_factory):
    path = tmp_path_factory.mktemp("uses") / "town.gpkg"
    write_layers(str(path), sample_town(300))
    return path


def _buildings(town, *extra):
    """`analyze --json` of the town (no store written): the run and its buildings' summary."""
    run = CliRunner().invoke(main, ["analyze", "--profile", "fort-plain", "--data", str(town), "--json", *extra])
    doc = json.loads(run.output[run.output.index("{") :]) if run.exit_code == 0 else None
    return run, (doc["summary"]["buildings"] if doc else None)


def test_a_use_column_chosen_for_occupied_is_told_to_say_which_words_mean_yes(town):
    run, _ = _buildings(town, *USE)
    said = " ".join(run.output.split())
    assert run.exit_code != 0
    assert "column building_use (occupied) should say yes or no but has 'main', 'rear', 'shed'" in said
    assert "Say which of them mean yes and which no in the coded values of occupied" in said
    assert "--map-value buildings.occupied.main=yes" in said


def test_the_words_said_to_mean_no_do_not_count_as_buildings(town):
    """The rear houses said to be garages ("rear=no"): no rear building is left to judge; said to be houses, they are
    the rear buildings the layer's own yes/no would give."""
    _, plain = _buildings(town)
    _, houses = _buildings(town, *USE, *HOUSES, "--map-value", "buildings.occupied.rear=yes")
    _, garages = _buildings(town, *USE, *HOUSES, "--map-value", "buildings.occupied.rear=no")
    assert plain["rear_buildings"] > 0
    assert houses == plain
    assert garages["rear_buildings"] == 0


def test_a_coded_value_that_is_neither_yes_nor_no_is_refused_by_name(town):
    run, _ = _buildings(town, *USE, *HOUSES, "--map-value", "buildings.occupied.rear=garage")
    said = " ".join(run.output.split())
    assert run.exit_code != 0
    assert "the coded values say 'rear' in column building_use (occupied) means 'garage'" in said
    assert "occupied is yes or no, so say which of the two it means" in said


def test_a_column_of_many_words_is_offered_another_column_not_coded_values(tmp_path):
    """Owners' names chosen for connected are a wrong column: told the words, not asked what each of them means."""
    path = tmp_path / "town.gpkg"
    write_layers(str(path), sample_town(120))
    run = CliRunner().invoke(
        main, ["analyze", "--profile", "fort-plain", "--data", str(path), "--map", "parcels.connected=owner_name"]
    )
    said = " ".join(run.output.split())
    assert run.exit_code != 0 and "should say yes or no but has" in said and "more)." in said
    assert "coded values of connected" not in said
    assert "--map parcels.connected=COLUMN" in said


def test_the_mapping_page_takes_the_words_of_a_use_column(tmp_path):
    """On the upload's column-mapping page: the use column chosen for occupied, its words said in "Coded values"."""
    source = tmp_path / "hill.gpkg"
    write_layers(str(source), sample_town(60))
    client = make_app(tmp_path / "store.gpkg", tmp_path).test_client()
    page = posted_upload(client, source.read_bytes(), "hill.gpkg")
    refused = client.post(page, data={"csrf_token": csrf(client), "buildings.occupied": "building_use"})
    assert refused.status_code == 422
    assert 'Fill in the "Coded values" field of the buildings layer' in _text(refused)
    right = client.post(
        page,
        data={
            "csrf_token": csrf(client),
            "buildings.occupied": "building_use",
            "map_value.buildings": "occupied.main=yes\noccupied.rear=no\noccupied.shed=no",
        },
    )
    assert right.status_code == 200 and "The data can be used" in _text(right), _text(right)[:1500]


@pytest.mark.parametrize(
    ("values", "read"),
    [
        (["yes", "no", ""], [True, False, None]),  # a column that says no in words: a blank cell is not known
        (["Y", "N", " "], [True, False, None]),
        (["X", "", ""], [True, False, False]),  # X marks yes, the rest left blank: blank is no
        (["yes", "", None], [True, False, None]),
    ],
)
def test_a_blank_cell_is_no_only_where_the_column_marks_no_with_a_blank(values, read):
    """A shapefile's parcels whose occupied column says yes or no, some cells left empty: the empty ones were read as
    "no", and those lots came out "unoccupied" by "the parcel's occupied attribute", though nobody had said so."""
    import geopandas as gpd
    import pyproj
    import shapely

    from layers.validate import SPECS, ColumnMapping, prepare_layer

    parcels = gpd.GeoDataFrame(
        {"parcel_id": ["A", "B", "C"], "occupied": values},
        geometry=[shapely.box(457_000 + 100 * i, 1_490_000, 457_050 + 100 * i, 1_490_100) for i in range(3)],
        crs="EPSG:2260",
    )
    out, problems = prepare_layer(
        parcels, SPECS["parcels"], label="parcels", target_crs=pyproj.CRS("EPSG:2260"), mapping=ColumnMapping()
    )
    assert not [p for p in problems if p.severity == "error"], problems
    assert out["occupied"].tolist() == read


def test_a_coded_value_the_column_never_holds_is_warned_of(town):
    """`garage=no` on a layer whose use column has no garages changed nothing and said nothing (a tester): the run
    goes on, and says the word is not in the column, with the column's own words."""
    run = CliRunner().invoke(
        main,
        ["analyze", "--profile", "fort-plain", "--data", str(town), *USE, *HOUSES, "--map-value",
         "buildings.occupied.rear=yes", "--map-value", "buildings.occupied.garage=no"],
    )  # fmt: skip
    said = " ".join(run.output.split())
    assert run.exit_code == 0, said
    assert "the coded values of occupied name 'garage', which column building_use (occupied) never holds" in said
    assert "its values: 'main', 'rear', 'shed'" in said


def test_a_mains_code_the_column_never_holds_is_warned_of():
    import geopandas as gpd
    import pyproj
    import shapely

    from layers.validate import SPECS, ColumnMapping, prepare_layer

    mains = gpd.GeoDataFrame(
        {"main_id": ["M1"], "sewer_type": ["GRAV"]},
        geometry=[shapely.LineString([(457_000, 1_490_110), (457_300, 1_490_110)])],
        crs="EPSG:2260",
    )
    mapping = ColumnMapping(values={"mains": {"sewer_type": {"GRAV": "sanitary", "SNTRY": "sanitary"}}})
    out, problems = prepare_layer(
        mains, SPECS["mains"], label="mains", target_crs=pyproj.CRS("EPSG:2260"), mapping=mapping
    )
    assert out["sewer_type"].tolist() == ["sanitary"]
    (warned,) = [p for p in problems if p.check == "unused_value"]
    assert warned.severity == "warning" and "name 'sntry', which column sewer_type never holds" in str(warned)
