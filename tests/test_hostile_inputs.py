"""Hostile input files, end to end: what the CLI prints and exits with, and what the web upload's report says.

Each file is made by hand here the way users break data: a GeoJSON written [lat, lon], text in a number column,
a vertex at 1e300 or NaN, an attribute-only table named parcels, a damaged GeoPackage, a CSV given as data.
Each is also run as a control without the fault, so a refusal is known to come from the fault.
"""

from __future__ import annotations

import io
import json
import os
import sqlite3
import subprocess
import sys
import zipfile
from pathlib import Path

import geopandas as gpd
import numpy as np
import pandas as pd
import pyogrio
import pytest
import shapely
from click.testing import CliRunner
from shapely.geometry import LineString

from gisapp.cli import main
from layers.read import unreadable_message
from layers.sample import sample_town
from layers.write import write_layers
from tests.conftest import csrf, make_app

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def town() -> dict[str, gpd.GeoDataFrame]:
    return sample_town(120)


def cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def analyze(data, *extra):
    return cli("analyze", "--profile", "fort-plain", "--data", data, *extra)


def folder(tmp_path: Path, layers: dict[str, gpd.GeoDataFrame], name: str = "town") -> Path:
    """Each layer as its own GeoPackage in a folder, as a town's GIS export often looks."""
    out = tmp_path / name
    out.mkdir()
    for kind, frame in layers.items():
        frame.to_file(out / f"{kind}.gpkg")
    return out


def lat_lon_geojson(frame: gpd.GeoDataFrame) -> str:
    """A GeoJSON FeatureCollection with every position written [latitude, longitude]: the classic mistake."""
    doc = json.loads(frame.to_crs(4326).to_json(drop_id=True))
    for feature in doc["features"]:
        feature["geometry"] = json.loads(
            shapely.to_geojson(shapely.transform(shapely.from_geojson(json.dumps(feature["geometry"])), _swap))
        )
    return json.dumps(doc)


def _swap(coords: np.ndarray) -> np.ndarray:
    return coords[:, ::-1]


def problems_of(result) -> list[dict]:
    return json.loads(result.stdout)["problems"]


# ---------------------------------------------------------------------------------------------------- finding 1


def test_lat_lon_geojson_is_refused_as_swapped(town, tmp_path):
    data = folder(tmp_path, {"mains": town["mains"], "streets": town["streets"]})
    good = tmp_path / "control"
    good.mkdir()
    for f in data.iterdir():
        (good / f.name).write_bytes(f.read_bytes())
    (good / "parcels.geojson").write_text(town["parcels"].to_crs(4326).to_json())
    (data / "parcels.geojson").write_text(lat_lon_geojson(town["parcels"]))

    assert analyze(good).exit_code == 0
    refused = analyze(data)
    assert refused.exit_code == 2
    assert "parcels (parcels.geojson) has its x and y swapped" in refused.stderr
    assert "Swap them back" in refused.stderr and "x (longitude or easting) first" in refused.stderr
    as_json = analyze(data, "--json")
    assert [(p["layer"], p["check"], p["severity"]) for p in problems_of(as_json)] == [
        ("parcels", "swapped_axes", "error")
    ]


def test_swapped_layer_refused_even_in_a_world_wide_measuring_crs(town, tmp_path):
    """Web Mercator is used everywhere, so only the other layers can tell the swapped one."""
    data = folder(tmp_path, {"parcels": town["parcels"], "streets": town["streets"]})
    (data / "mains.geojson").write_text(lat_lon_geojson(town["mains"]))
    result = analyze(data, "--crs", "EPSG:3857", "--json")
    assert result.exit_code == 2
    (problem,) = problems_of(result)
    assert problem["layer"] == "mains" and problem["check"] == "swapped_axes"
    assert "miles from the parcels and streets, but read as y, x it lies among them" in problem["message"]


# A custom transverse Mercator near New York Central's, in US feet: a CRS the sample village was not drawn in.
CUSTOM_TMERC = (
    "+proj=tmerc +lat_0=40 +lon_0=-76.5833333333333 +k=0.9999375 +x_0=250000 +y_0=0 +ellps=GRS80 +units=us-ft +no_defs"
)


def test_a_layer_declaring_a_crs_it_was_not_drawn_in_is_told_so_not_swapped(town, tmp_path):
    """The sample village's parcels, their coordinates New York East feet, declared in a custom transverse Mercator:
    they were told their x and y were swapped, and swapping them back would have ruined them (a tester)."""
    miscast = town["parcels"].set_crs(CUSTOM_TMERC, allow_override=True)
    data = folder(tmp_path, {"parcels": miscast, "mains": town["mains"], "streets": town["streets"]})
    result = analyze(data, "--json")
    assert result.exit_code == 2
    (problem,) = problems_of(result)
    assert problem["layer"] == "parcels" and problem["check"] == "crs_mismatch", problem
    assert "its coordinates read in the measuring CRS NAD83 / New York East (ftUS) lie near" in problem["message"]
    assert "give that as the parcels layer's CRS (its x and y are not swapped)" in problem["message"]
    told = analyze(data)
    assert "--layer-crs parcels=EPSG:2260" in told.stderr and "Swap them back" not in told.stderr
    # Given the CRS it was drawn in, it is read.
    assert analyze(data, "--layer-crs", "parcels=EPSG:2260").exit_code == 0


def test_swapped_upload_shows_in_the_validation_report(town, tmp_path, web):
    client, token = web
    members = {"parcels.geojson": lat_lon_geojson(town["parcels"])}
    members |= _shapefile_members(town, ("mains", "streets"), tmp_path)
    report = _upload_and_validate(client, token, _zip(members), "town.zip")
    html = report.get_data(as_text=True)
    assert report.status_code == 422
    assert "swapped axes" in html and "has its x and y swapped" in html and "No problems found" not in html


# ---------------------------------------------------------------------------------------------------- finding 2


def test_text_in_a_number_field_is_listed_with_its_row(town, tmp_path):
    parcels = town["parcels"].copy()
    parcels["units"] = parcels["units"].astype(object)
    parcels.loc[parcels.index[3], "units"] = "three"
    parcels.loc[parcels.index[7], "units"] = "n/a"  # the usual word for "not known": missing, not an error
    parcels.loc[parcels.index[9], "units"] = "1,200"  # a thousands separator
    data = folder(tmp_path, {"parcels": parcels, "mains": town["mains"], "streets": town["streets"]})
    result = analyze(data, "--json")
    assert result.exit_code == 2
    (problem,) = problems_of(result)
    assert problem["check"] == "not_a_number" and problem["count"] == 1
    assert problem["feature_ids"] == [parcels["parcel_id"].iloc[3]]
    assert "column units should hold numbers" in problem["message"] and "row 4 'three'" in problem["message"]
    parcels.loc[parcels.index[3], "units"] = "3"
    parcels.to_file(data / "parcels.gpkg")
    assert analyze(data).exit_code == 0


def test_a_typo_in_living_units_is_refused_before_any_flow_is_summed(town, tmp_path):
    """1e308 and 1e15 living units (and 2.5) were accepted: ``duties`` printed numpy's overflow warnings and
    "System flow inf gpd". Now ``duties`` refuses the layer, naming each parcel and building."""
    parcels, buildings = town["parcels"].copy(), town["buildings"].copy()
    parcels["units"] = parcels["units"].astype(float)
    parcels.loc[parcels.index[0], "units"] = 1e308
    parcels.loc[parcels.index[2], "units"] = 1e15
    parcels.loc[parcels.index[5], "units"] = 2.5
    buildings["units"] = 1.0
    buildings.loc[buildings.index[1], "units"] = 1e15
    layers = {"parcels": parcels, "buildings": buildings, "mains": town["mains"], "streets": town["streets"]}
    data = folder(tmp_path, layers | {"manholes": town["manholes"]})
    result = cli("duties", "--profile", "fort-plain", "--data", data, "--json")
    assert result.exit_code == 2, result.output
    found = {(p["layer"], p["check"]): p for p in problems_of(result)}
    assert set(found) == {
        ("parcels", "implausible_number"),
        ("parcels", "not_whole_number"),
        ("buildings", "implausible_number"),
    }
    ids = parcels["parcel_id"].astype(str)
    assert found["parcels", "implausible_number"]["feature_ids"] == [ids.iloc[0], ids.iloc[2]]
    assert found["parcels", "not_whole_number"]["feature_ids"] == [ids.iloc[5]]
    assert found["buildings", "implausible_number"]["feature_ids"] == [str(buildings["building_id"].iloc[1])]
    assert "System flow" not in result.output


def test_text_in_a_number_field_in_the_web_report(town, tmp_path, web):
    client, token = web
    mains = town["mains"].copy()
    mains["diameter_in"] = mains["diameter_in"].astype(object)
    mains.loc[mains.index[2], "diameter_in"] = '8"'
    gpkg = tmp_path / "town.gpkg"
    write_layers(str(gpkg), {"parcels": town["parcels"], "mains": mains, "streets": town["streets"]})
    report = _upload_and_validate(client, token, gpkg.read_bytes(), "town.gpkg")
    html = report.get_data(as_text=True)
    assert report.status_code == 422
    assert "not a number" in html and "row 3 &#39;8&#34;&#39;" in html


# ---------------------------------------------------------------------------------------------------- finding 3


def test_a_vertex_at_1e300_is_refused_by_id_without_overflow_warnings(town, tmp_path):
    mains = town["mains"].copy()
    first = mains.geometry.iloc[0]
    mains.loc[mains.index[0], "geometry"] = LineString([*first.coords, (1e300, first.coords[-1][1])])
    data = folder(tmp_path, {"parcels": town["parcels"], "mains": mains, "streets": town["streets"]})
    result = analyze(data, "--json")
    assert result.exit_code == 2
    (problem,) = problems_of(result)
    assert problem["check"] == "outside_area" and problem["feature_ids"] == [mains["main_id"].iloc[0]]
    assert "outside where NAD83 / New York East (ftUS) is used" in problem["message"]
    assert "(1e+300, " in problem["message"]
    process = _subprocess("analyze", "--profile", "fort-plain", "--data", data)
    assert process.returncode == 2 and "Warning" not in process.stderr


def test_features_far_from_the_rest_are_reported_and_kept(town, tmp_path):
    parcels = town["parcels"].copy()
    moved = parcels["parcel_id"].iloc[5]
    parcels.loc[parcels.index[5], "geometry"] = shapely.affinity.translate(parcels.geometry.iloc[5], 60_000, 0)
    data = folder(tmp_path, {"parcels": parcels, "mains": town["mains"], "streets": town["streets"]})
    result = analyze(data, "--json")
    assert result.exit_code == 0
    far = [p for p in problems_of(result) if p["check"] == "far_feature"]
    assert len(far) == 1 and far[0]["severity"] == "warning" and far[0]["feature_ids"] == [moved]
    assert "lie far from the rest of the layer" in far[0]["message"]
    plain = analyze(folder(tmp_path, {k: town[k] for k in ("parcels", "mains", "streets")}, "control"), "--json")
    assert not [p for p in problems_of(plain) if p["check"] == "far_feature"]


def test_a_layer_far_from_the_others_is_refused(town, tmp_path):
    """Streets 57 miles off would make every parcel 'in range, not abutting': refused, not analysed."""
    streets = town["streets"].copy()
    streets.geometry = streets.geometry.translate(0, 300_000)  # 57 miles north: still in New York, not in the town
    data = folder(tmp_path, {"parcels": town["parcels"], "mains": town["mains"], "streets": streets})
    result = analyze(data, "--json")
    assert result.exit_code == 2
    (far,) = [p for p in problems_of(result) if p["check"] == "far_layer"]
    assert (far["layer"], far["severity"]) == ("streets", "error")
    assert "miles from the parcels and mains: nothing in it is within reach" in far["message"]
    said = analyze(data)
    assert said.exit_code == 2 and "56.6 miles from the parcels and mains" in said.stderr


def test_a_treatment_plant_far_from_the_town_is_only_reported(town, tmp_path):
    """A regional plant can lie miles from the village it serves."""
    plant = gpd.GeoDataFrame(
        {"plant_id": ["WWTP"], "name": ["County plant"]},
        geometry=[shapely.Point(town["parcels"].total_bounds[2] + 80_000, town["parcels"].total_bounds[3])],
        crs=town["parcels"].crs,
    )
    layers = {"parcels": town["parcels"], "mains": town["mains"], "streets": town["streets"], "treatment_plants": plant}
    result = analyze(folder(tmp_path, layers), "--json")
    assert result.exit_code == 0
    (far,) = [p for p in problems_of(result) if p["check"] == "far_layer"]
    assert (far["layer"], far["severity"]) == ("outfalls", "warning")


# ---------------------------------------------------------------------------------------------------- finding 4


def test_no_runtime_warning_reaches_the_user_when_every_main_is_storm(town, tmp_path):
    mains = town["mains"].assign(sewer_type="storm")
    gpkg = tmp_path / "storm.gpkg"
    write_layers(str(gpkg), {**town, "mains": mains})
    # Under pytest every warning is an error: a RuntimeWarning anywhere would fail these runs.
    for args in (
        ("analyze", "--profile", "fort-plain"),
        ("buildings", "--profile", "wappinger", "--set", "mandate.distance_ft=200", "--all"),
        ("network", "check", "--profile", "fort-plain"),
    ):
        result = cli(*args, "--data", gpkg)
        assert result.exit_code == 0, result.output
    counts = json.loads(analyze(gpkg, "--json").stdout)["summary"]["counts"]
    assert counts["no_public_sewer"] + counts["connected"] == len(town["parcels"])
    # And as a user runs it, with Python's default warning filters.
    process = _subprocess("analyze", "--profile", "fort-plain", "--data", gpkg)
    assert process.returncode == 0 and "Warning" not in process.stderr, process.stderr


# ---------------------------------------------------------------------------------------------------- finding 5


def _with_nan_vertex(frame: gpd.GeoDataFrame) -> gpd.GeoDataFrame:
    """The first feature with one vertex whose x is NaN (as a broken digitiser or a division by zero writes it)."""
    out = frame.copy()
    geom = out.geometry.iloc[0]
    coords = shapely.get_coordinates(geom)
    coords[min(1, len(coords) - 1), 0] = np.nan
    with np.errstate(invalid="ignore"):
        broken = shapely.set_coordinates(geom, coords) if geom.geom_type != "Polygon" else shapely.polygons(coords)
    out.loc[out.index[0], "geometry"] = broken
    return out


@pytest.mark.parametrize("kind", ["parcels", "mains", "streets", "buildings", "manholes", "treatment_plants"])
def test_nan_vertex_is_invalid_geometry_for_every_layer_kind(town, tmp_path, kind):
    gpkg = tmp_path / "nan.gpkg"
    write_layers(str(gpkg), {**town, kind: _with_nan_vertex(town[kind])})
    with np.errstate(invalid="ignore"):  # reading the NaN back warns; the CLI must not
        assert pd.isna(shapely.get_coordinates(gpd.read_file(gpkg, layer=kind).geometry.iloc[0])).any()
    result = analyze(gpkg, "--json")
    assert result.exit_code == 2
    (problem,) = problems_of(result)
    spec_kind = "outfalls" if kind == "treatment_plants" else kind
    assert (problem["layer"], problem["check"], problem["severity"]) == (spec_kind, "invalid_geometry", "error")
    assert "not numbers (NaN or infinite), in row(s) 1" in problem["message"]


def test_nan_vertex_in_a_main_stops_network_check_with_a_message(town, tmp_path):
    gpkg = tmp_path / "nan.gpkg"
    write_layers(str(gpkg), {**town, "mains": _with_nan_vertex(town["mains"])})
    result = cli("network", "check", "--profile", "fort-plain", "--data", gpkg)
    assert result.exit_code == 2 and "not numbers (NaN or infinite)" in result.stderr


# ---------------------------------------------------------------------------------------------------- finding 6


def _attribute_only_parcels(town, path: Path) -> None:
    write_layers(str(path), {"mains": town["mains"], "streets": town["streets"]})
    pyogrio.write_dataframe(pd.DataFrame(town["parcels"].drop(columns="geometry")), path, layer="parcels")
    assert [str(n) for n, g in pyogrio.list_layers(path) if g is None and n != "layer_styles"] == ["parcels"]


def test_attribute_only_parcels_table_refused_by_name(town, tmp_path):
    gpkg = tmp_path / "attributes.gpkg"
    _attribute_only_parcels(town, gpkg)
    result = analyze(gpkg, "--json")
    assert result.exit_code == 2
    (problem,) = problems_of(result)
    assert problem["check"] == "no_geometry"
    assert "parcels (attributes.gpkg:parcels) is a table without geometry" in problem["message"]


def test_attribute_only_parcels_upload_is_a_422_report(town, tmp_path, web):
    client, token = web
    gpkg = tmp_path / "attributes.gpkg"
    _attribute_only_parcels(town, gpkg)
    report = _upload_and_validate(client, token, gpkg.read_bytes(), "attributes.gpkg")
    page = " ".join(report.get_data(as_text=True).split())
    # the upload is kept, the table named as parcels said to be a table (not taken as the parcels, whose check
    # deleted the upload), and the parcels asked for; QGIS's own style table, which a GeoPackage sewerplan or QGIS
    # wrote holds, is no one's data and not listed
    assert report.status_code == 422
    assert "attributes.gpkg&#39;s layer parcels has no shapes (it is a table, attributes only)" in page
    assert "No layer of the upload is the parcels layer" in page
    assert "layer_styles" not in page


# ---------------------------------------------------------------------------------------------------- finding 7


def damaged_geopackage(town, path: Path) -> Path:
    """A GeoPackage whose schema record holds bytes that are not UTF-8: GDAL cannot even decode its error."""
    write_layers(str(path), {k: town[k] for k in ("parcels", "mains", "streets")})
    raw = bytearray(path.read_bytes())
    sql = raw.find(b"CREATE TABLE gpkg_contents")
    name = raw.rfind(b"gpkg_contents", 0, sql) - len("gpkg_contents")
    raw[name + 5 : name + 9] = b"\xff\xfe\xfd\xfc"
    raw[sql + 13 : sql + 19] = b"(((\xff))"
    path.write_bytes(bytes(raw))
    with pytest.raises(Exception, match="Could not decode error message to UTF-8"):
        pyogrio.list_layers(path)
    return path


def test_damaged_geopackage_is_one_sentence(town, tmp_path):
    gpkg = damaged_geopackage(town, tmp_path / "town.gpkg")
    result = analyze(gpkg)
    assert result.exit_code == 2
    message = result.stderr.strip()
    assert message.startswith("Error: town.gpkg is damaged: it is not a readable GeoPackage")
    assert "export the layers from the GIS again, or use a backup copy." in message
    assert "Could not decode" not in message and "sqlite3_prepare" not in message and "\n" not in message


def test_a_geopackage_gdal_cannot_open_is_never_said_to_be_missing(town, tmp_path):
    """Its gpkg_geometry_columns table dropped, GDAL will not open the file as a GeoPackage and says it has "No such
    file or directory" (read as GPKG:path, as uploads are) or is "not recognized": the refusal quoted that of a file
    that is there. It says GDAL could not open it as a GeoPackage, and what to try."""
    gpkg = tmp_path / "streets.gpkg"
    write_layers(str(gpkg), {"streets": town["streets"]})
    with sqlite3.connect(gpkg) as db:
        db.execute("DROP TABLE gpkg_geometry_columns")
    db.close()
    told = (
        "GDAL could not open streets.gpkg as a GeoPackage: the file is there, but the tables that make it one "
        "(gpkg_contents, gpkg_geometry_columns) are missing or damaged. Open it in QGIS to see whether its layers "
        "show, then export them again as a GeoPackage from the GIS that made it, or use a backup copy."
    )
    for name in (str(gpkg), f"GPKG:{gpkg}"):  # the command line's read, and the upload's (one driver named)
        with pytest.raises(pyogrio.errors.DataSourceError) as gdal:
            pyogrio.list_layers(name)
        assert unreadable_message(gpkg, gdal.value) == told
    data = folder(tmp_path, {k: town[k] for k in ("parcels", "mains")})
    result = analyze(data, "--layer", f"streets={gpkg}")
    assert result.exit_code == 2, result.output
    said = " ".join(result.stderr.split())
    # the command line names the layer kind too
    assert said == "Error: " + told.replace("open streets.gpkg", "open streets (streets.gpkg)"), said


@pytest.mark.parametrize("name", ["town.gpkg", "parcels.geojson"])
def test_an_empty_file_is_called_empty(tmp_path, name):
    """A file of 0 bytes (a copy or a save that stopped) was told it "cannot be read as map data" and to check that it
    is a GeoPackage, a shapefile ..., which it was."""
    empty = tmp_path / name
    empty.write_bytes(b"")
    result = analyze(empty)
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"Error: {name} is empty (0 bytes): it was not saved whole; save or export it from the GIS again."
    )


def test_truncated_geopackage_is_one_sentence(town, tmp_path):
    whole = tmp_path / "whole.gpkg"
    write_layers(str(whole), {k: town[k] for k in ("parcels", "mains", "streets")})
    cut = tmp_path / "cut.gpkg"
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size // 3])
    result = analyze(cut)
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "Error: cut.gpkg is damaged: it is not a readable GeoPackage (SQLite says: database disk image is "
        "malformed); export the layers from the GIS again, or use a backup copy."
    )


@pytest.mark.parametrize("kind", ["cut", "not a geopackage"])
def test_an_out_store_that_cannot_be_read_is_one_sentence_and_left_as_it_was(town, tmp_path, kind):
    """`analyze --out` naming a damaged GeoPackage, or another kind of file, printed pyogrio's traceback."""
    data = folder(tmp_path, town)
    out = tmp_path / "results.gpkg"
    if kind == "cut":
        write_layers(str(out), {k: town[k] for k in ("parcels", "mains")})
        out.write_bytes(out.read_bytes()[: out.stat().st_size // 3])
    else:
        out.write_text("a spreadsheet saved under the wrong name")
    before = out.read_bytes()
    result = CliRunner().invoke(main, ["analyze", "--profile", "fort-plain", "--data", str(data), "--out", str(out)])
    assert result.exit_code == 2, result.output
    message = " ".join(result.stderr.split())
    assert message.startswith("Error: results.gpkg ") and "Traceback" not in result.output + result.stderr
    assert ("is damaged" if kind == "cut" else "cannot be read as map data") in message
    assert out.read_bytes() == before


def test_damaged_geopackage_upload_is_a_400_with_the_sentence(town, tmp_path, web):
    client, token = web
    gpkg = damaged_geopackage(town, tmp_path / "town.gpkg")
    sent = client.post(
        "/data/upload",
        data={"dataset": (io.BytesIO(gpkg.read_bytes()), "town.gpkg"), "csrf_token": token},
        content_type="multipart/form-data",
    )
    # refused by the upload itself, which lists the layers of what it unpacked (two layers of one name are refused)
    assert sent.status_code == 400 and "is damaged: it is not a readable GeoPackage" in sent.get_data(as_text=True)


def test_csv_given_as_data_says_what_it_is(town, tmp_path):
    csv = tmp_path / "parcels.csv"
    town["parcels"].drop(columns="geometry").to_csv(csv, index=False)
    result = analyze(csv)
    assert result.exit_code == 2
    assert "parcels.csv is a CSV table, which holds no map geometry: give a GeoPackage" in result.stderr
    assert "Give --data" not in result.stderr


def test_folder_of_unknown_names_lists_what_it_holds(town, tmp_path):
    data = tmp_path / "export"
    data.mkdir()
    town["parcels"][["parcel_id", "geometry"]].to_file(data / "Tax_Lots_2024.shp")
    result = analyze(data)
    assert result.exit_code == 2
    assert "The folder export holds no file named as sewerplan expects (it holds Tax_Lots_2024" in result.stderr
    assert "Give --data" not in result.stderr
    # the option that gives each layer on its own is named, as every refusal names its fix (a tester)
    assert result.stderr.rstrip().endswith("Use --layer parcels=PATH.")


def test_the_folder_one_is_in_is_named_when_given_as_a_dot(town, tmp_path, monkeypatch):
    """`--data .` from inside the folder of Manchester's GeoJSONs said "The folder  holds no file ...": a dot has
    no name of its own, so the message named no folder at all."""
    data = tmp_path / "Manchester"
    data.mkdir()
    town["parcels"][["parcel_id", "geometry"]].to_file(data / "ManchesterParcels.geojson")
    monkeypatch.chdir(data)
    result = analyze(".")
    assert result.exit_code == 2
    assert "The folder Manchester holds no file named as sewerplan expects (it holds ManchesterParcels" in result.stderr


@pytest.mark.postgres
def test_empty_postgis_database_says_so(pg_url):
    from sqlalchemy import create_engine, text
    from sqlalchemy.pool import NullPool

    engine = create_engine(pg_url, poolclass=NullPool)
    with engine.connect() as con:
        tables = con.execute(text("SELECT count(*) FROM geometry_columns")).scalar()
    engine.dispose()
    assert tables == 0, "the test database should hold no geometry table between tests"
    result = analyze(pg_url)
    assert result.exit_code == 2
    assert "holds no table with a geometry column: load the layers into it first" in result.stderr
    assert "Give --data" not in result.stderr and "The PostGIS database postgresql://" in result.stderr


@pytest.mark.postgres
def test_database_without_postgis_says_so(pg_url):
    no_postgis = pg_url.rsplit("/", 1)[0] + "/postgres"
    result = analyze(no_postgis)
    assert result.exit_code == 2
    assert "has no PostGIS (it has no geometry type): enable it with CREATE EXTENSION postgis" in result.stderr


@pytest.mark.postgres
def test_password_with_at_signs_never_leaks(pg_url):
    user, _, host = pg_url.partition("://")[2].partition("@")
    wrong = f"postgresql://{user.split(':')[0]}:se@cret@Wrong@{host}"
    one_by_one = ("--layer", f"parcels={wrong}#public.parcels", "--layer", f"mains={wrong}#public.mains")
    for args in (("--data", wrong), one_by_one):
        result = cli("analyze", "--profile", "fort-plain", *args)
        assert result.exit_code == 2
        assert "cret" not in result.output and "Wrong" not in result.output, result.output
        assert f"{user.split(':')[0]}:***@{host.split('/')[0]}" in result.output
        assert "password authentication failed" in result.output  # the host was read right


@pytest.mark.postgres
def test_register_password_with_at_signs_never_leaks(pg_url):
    from layers.errors import LayerError
    from layers.register import Register

    user, _, host = pg_url.partition("://")[2].partition("@")
    wrong = f"postgresql://{user.split(':')[0]}:se@cret@Wrong@{host}"
    with pytest.raises(LayerError) as caught:
        Register(wrong)
    message = str(caught.value)
    assert "cret" not in message and "Wrong" not in message, message
    assert "password authentication failed" in message  # the host was read right


@pytest.mark.parametrize("password", ["Wr#ngPass77", "p@ss#w%rd9", "sl/ash?word"])
def test_a_store_password_with_a_hash_is_masked_whole_and_the_schema_read_right(pg_url, tmp_path, password):
    """The schema follows the last '#' after the host: a '#' in the password is the password's, never shown."""
    from tests.conftest import Runner

    user, _, host = pg_url.partition("://")[2].partition("@")
    store = f"postgresql://{user.split(':')[0]}:{password}@{host}#fort_plain"
    for args in (
        ("analyze", "--profile", "fort-plain", "--data", store, "--out", store),
        ("notices", "list", "--store", store),
    ):
        result = Runner().invoke(*args)
        said = result.output
        assert result.exit_code == 2, said
        tail = password[password.index("#") + 1 :] if "#" in password else password[-5:]
        assert password not in said and tail not in said, said
        assert "is not a schema name" not in said and "no store was given" not in said, said
        assert "password authentication failed" in said, said  # the host and schema were read right


# ---------------------------------------------------------------------------------------------------- helpers


@pytest.fixture
def web(tmp_path):
    """A test client logged in (no accounts: local use) and its CSRF token."""
    store = tmp_path / "store.gpkg"
    write_layers(str(store), sample_town(50))
    client = make_app(store, tmp_path).test_client()
    return client, csrf(client)


def _upload_and_validate(client, token: str, payload: bytes, name: str):
    sent = client.post(
        "/data/upload",
        data={"dataset": (io.BytesIO(payload), name), "csrf_token": token},
        content_type="multipart/form-data",
    )
    assert sent.status_code == 302, sent.get_data(as_text=True)
    assert client.get(sent.headers["Location"]).status_code == 200  # the column-mapping page
    return client.post(sent.headers["Location"], data={"csrf_token": token})


def _shapefile_members(town, kinds, tmp_path: Path) -> dict[str, bytes]:
    out = tmp_path / "shp"
    out.mkdir(exist_ok=True)
    for kind in kinds:
        frame = town[kind]
        frame[[c for c in frame.columns if len(c) <= 10]].to_file(out / f"{kind}.shp")
    return {f.name: f.read_bytes() for f in out.iterdir()}


def _zip(members: dict[str, str | bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, content in members.items():
            zf.writestr(name, content)
    return buf.getvalue()


def _subprocess(*args) -> subprocess.CompletedProcess:
    """The command as a user runs it: a new Python with its default warning filters (not pytest's)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONWARNINGS",)}
    return subprocess.run(
        [sys.executable, "-c", "from gisapp.cli import main; main()", *[str(a) for a in args]],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=300,
    )


# ------------------------------------------------------------------------------- coordinates in the wrong unit


def _scaled(town: dict[str, gpd.GeoDataFrame], factor: float, crs: str) -> dict[str, gpd.GeoDataFrame]:
    return {
        kind: frame.set_geometry(shapely.transform(np.asarray(frame.geometry.values), lambda xy: xy * factor)).set_crs(
            crs, allow_override=True
        )
        for kind, frame in town.items()
    }


def test_a_town_in_metres_labelled_as_feet_is_warned_of_with_the_crs_to_give(town, tmp_path):
    """The sample town in New York East metres (EPSG:32115) whose files say New York East feet: every distance
    3.28 times short, and every building under the least occupied one. Given the metre CRS, it reads as it should."""
    metres = _scaled(town, 1200 / 3937, "EPSG:2260")
    data = tmp_path / "metres_as_feet.gpkg"
    write_layers(str(data), metres, overwrite=True)
    result = analyze(data, "--json")
    assert result.exit_code == 0
    sizes = {p["layer"]: p for p in problems_of(result) if p["check"] == "implausible_size"}
    assert set(sizes) == {"parcels", "buildings"}
    assert all(p["severity"] == "warning" for p in sizes.values())
    assert sizes["buildings"]["fix"]["example"] == "EPSG:32115"
    assert "3.28 times too short" in sizes["buildings"]["message"]
    assert "NAD83 / New York East (ftUS)" in sizes["buildings"]["message"]

    kinds = ("parcels", "buildings", "streets", "mains", "manholes", "outfalls")
    told = analyze(data, *(f for k in kinds for f in ("--layer-crs", f"{k}=EPSG:32115")), "--json")
    assert told.exit_code == 0
    assert not [p for p in problems_of(told) if p["check"] == "implausible_size"]
    right = analyze(folder(tmp_path, town), "--json")
    assert not [p for p in problems_of(right) if p["check"] == "implausible_size"]
    assert json.loads(told.stdout)["summary"]["counts"] == json.loads(right.stdout)["summary"]["counts"]


def test_a_town_in_metres_labelled_as_feet_is_warned_of_in_the_upload_report(town, tmp_path, web):
    client, token = web
    data = tmp_path / "metres_as_feet.gpkg"
    write_layers(str(data), _scaled(town, 1200 / 3937, "EPSG:2260"), overwrite=True)
    report = _upload_and_validate(client, token, data.read_bytes(), "town.gpkg")
    html = report.get_data(as_text=True)
    assert report.status_code == 200
    assert "3.28 times too short" in html and "the &#34;CRS&#34; field of the buildings layer" in html
    assert "EPSG:32115" in html


def test_a_town_in_feet_labelled_as_metres_is_refused_where_it_lies(town, tmp_path):
    """The other way round the coordinates land 3.28 times farther from the CRS's origin: refused, not warned."""
    data = tmp_path / "feet_as_metres.gpkg"
    write_layers(str(data), {k: f.set_crs("EPSG:32115", allow_override=True) for k, f in town.items()}, overwrite=True)
    result = analyze(data, "--json")
    assert result.exit_code != 0
    assert {p["check"] for p in problems_of(result)} == {"crs_mismatch"}


def test_columns_named_as_fields_but_for_their_case_are_written(town, tmp_path):
    """County exports say UNITS, Owner_Name, Status: read as units and owner_name they stayed beside them, and a
    GeoPackage (whose column names ignore case) refused the results ("A field with the same name already exists")."""
    parcels = town["parcels"].rename(columns={"units": "UNITS", "owner_name": "Owner_Name"}).assign(Status="active")
    mains = town["mains"].rename(columns={"status": "Status"})
    data = folder(tmp_path, {"parcels": parcels, "mains": mains, "streets": town["streets"]})
    out = tmp_path / "results.gpkg"
    result = analyze(data, "--out", out)
    assert result.exit_code == 0, result.output
    written = pyogrio.read_dataframe(out, layer="parcel_results")
    names = [c.lower() for c in written.columns]
    assert len(names) == len(set(names))
    assert {"units", "owner_name", "input_Status", "status"} <= set(written.columns)
    assert {"input_UNITS", "input_Owner_Name"} <= set(written.columns)  # the user's own columns, as given
    expected = town["parcels"].set_index("parcel_id")
    got = written.set_index("parcel_id")
    assert (got["owner_name"] == expected.loc[got.index, "owner_name"]).all()
    assert (got["units"].fillna(-1) == expected.loc[got.index, "units"].astype(float).fillna(-1)).all()
    assert set(got["status"]) <= {
        "mandated",
        "connected",
        "no_public_sewer",
        "unoccupied",
        "out_of_range",
        "in_range_not_abutting",
    }
