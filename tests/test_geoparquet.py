"""GeoParquet in and out: a town given as GeoParquet files gives the answers its GeoPackage gives, and results,
reports and building results come out as GeoParquet 1.1 with bounding-box covering columns."""

from __future__ import annotations

import json

import geopandas as gpd
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
import shapely
from click.testing import CliRunner

from gisapp.cli import main
from layers.errors import LayerError
from layers.read import LayerSource, find_layers, read_source
from layers.sample import sample_town
from layers.wkb import wkb_array
from layers.write import _plain_columns, write_geoparquet, write_layers

COLUMNS = ["parcel_id", "status", "main_id", "distance_ft", "abuts_sewered_street", "reason", "connection_x"]


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def town(tmp_path_factory):
    """The same sample town as a GeoPackage and as a folder of GeoParquet files."""
    folder = tmp_path_factory.mktemp("town")
    layers = sample_town(300)
    write_layers(str(folder / "town.gpkg"), layers)
    (folder / "parquet").mkdir()
    for name, frame in layers.items():
        write_geoparquet(str(folder / "parquet" / f"{name}.parquet"), frame)
    return folder


def geo_metadata(path) -> dict:
    return json.loads(pq.read_schema(path).metadata[b"geo"])


def test_a_geoparquet_town_gives_the_geopackage_answers_and_writes_geoparquet(town, tmp_path):
    from_gpkg, from_parquet = tmp_path / "a.gpkg", tmp_path / "b.parquet"
    for data, out in ((town / "town.gpkg", from_gpkg), (town / "parquet", from_parquet)):
        result = invoke("analyze", "--profile", "fort-plain", "--data", data, "--out", out)
        assert result.exit_code == 0, result.output
    expected = gpd.read_file(from_gpkg, layer="parcel_results")
    got = gpd.read_parquet(from_parquet)
    assert got.crs.to_epsg() == 2260 and len(got) == 300
    pd.testing.assert_frame_equal(got[COLUMNS], expected[COLUMNS], check_dtype=False)
    # The measuring lines and connection points lie beside the results, as a GeoPackage holds them as layers.
    for layer in ("measuring_lines", "connection_points"):
        beside = tmp_path / f"b.{layer}.parquet"
        assert len(gpd.read_parquet(beside)) == len(gpd.read_file(from_gpkg, layer=layer))
    # GeoParquet 1.1, with the bbox covering column a reader uses to skip row groups.
    meta = geo_metadata(from_parquet)
    assert meta["version"] == "1.1.0"
    assert meta["columns"]["geometry"]["covering"]["bbox"]["xmin"] == ["bbox", "xmin"]
    assert "bbox" in pq.read_schema(from_parquet).names
    assert "bbox" not in got.columns  # the covering column is not read back as an attribute


def test_one_layer_given_as_geoparquet_overrides_the_data(town, tmp_path):
    parcels = gpd.read_parquet(town / "parquet" / "parcels.parquet")
    write_geoparquet(str(tmp_path / "lots.parquet"), parcels.iloc[:40])
    out = tmp_path / "r.csv"
    result = invoke(
        "analyze",
        "--profile",
        "fort-plain",
        "--data",
        town / "town.gpkg",
        "--layer",
        f"parcels={tmp_path / 'lots.parquet'}",
        "--out",
        out,
    )
    assert result.exit_code == 0, result.output
    assert len(pd.read_csv(out)) == 40


def test_a_single_geoparquet_file_is_found_by_its_name(town):
    assert set(find_layers(str(town / "parquet" / "mains.parquet"))) == {"mains"}


def test_reports_and_building_results_as_geoparquet(town, tmp_path):
    report = tmp_path / "report.parquet"
    result = invoke("network", "check", "--profile", "fort-plain", "--data", town / "parquet", "--out", report)
    assert result.exit_code in (0, 1), result.output
    assert geo_metadata(report)["version"] == "1.1.0"
    out = tmp_path / "buildings.parquet"
    result = invoke("buildings", "--profile", "fort-plain", "--data", town / "parquet", "--out", out)
    assert result.exit_code == 0, result.output
    assert len(gpd.read_parquet(out)) == len(gpd.read_parquet(town / "parquet" / "buildings.parquet"))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("plain", "without GeoParquet metadata"),
        ("garbage", "cannot be read as GeoParquet"),
    ],
)
def test_a_parquet_file_that_is_no_geoparquet_is_refused_in_one_sentence(tmp_path, content, message):
    path = tmp_path / "parcels.parquet"
    if content == "plain":
        pd.DataFrame({"parcel_id": ["A"]}).to_parquet(path)
    else:
        path.write_bytes(b"PAR1 this is no parquet file PAR1")
    with pytest.raises(LayerError, match=message):
        read_source(LayerSource("parcels", str(path)))
    result = CliRunner().invoke(
        main, ["analyze", "--profile", "fort-plain", "--layer", f"parcels={path}", "--layer", f"mains={path}"]
    )
    assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output


def _geoms(kind: str) -> np.ndarray:
    """Hand-made geometry columns: the ones numpy encodes and the ones it leaves to shapely."""
    rng = np.random.default_rng(7)
    xy = rng.normal(size=(50, 3, 2)) * 1e6
    points = shapely.points(xy[:, 0])
    lines = shapely.linestrings(xy[:, :2])
    made = {
        "points with gaps": np.where(np.arange(50) % 7 == 0, None, points),
        "two-point lines with gaps": np.where(np.arange(50) % 5 == 1, None, lines),
        "three-point lines": shapely.linestrings(xy),
        "lines of two and three points": np.r_[lines[:25], shapely.linestrings(xy[25:])],
        "points and lines": np.r_[points[:25], lines[25:]],
        "a point with Z": np.r_[points[:3], shapely.Point(1, 2, 3)],
        "an empty point": np.r_[points[:3], shapely.Point()],
        "polygons": shapely.buffer(points, 10),
        "polygons of several sizes, holed and multi-part": np.r_[
            shapely.buffer(points[:20], 10, quad_segs=2),
            shapely.box(xy[20:40, 0, 0], xy[20:40, 0, 1], xy[20:40, 0, 0] + 5, xy[20:40, 0, 1] + 9),
            shapely.difference(shapely.buffer(points[40:45], 10), shapely.buffer(points[40:45], 2)),
            shapely.multipolygons([shapely.buffer(points[45:47], 1)]),
            [shapely.Polygon(), None, shapely.Polygon([(0, 0, 1), (1, 0, 1), (1, 1, 1), (0, 0, 1)])],
        ],
        "nothing but gaps": np.array([None, None], dtype=object),
        "no rows": np.array([], dtype=object),
    }
    return np.asarray(made[kind], dtype=object)


@pytest.mark.parametrize(
    "kind",
    [
        "points with gaps",
        "two-point lines with gaps",
        "three-point lines",
        "lines of two and three points",
        "points and lines",
        "a point with Z",
        "an empty point",
        "polygons",
        "polygons of several sizes, holed and multi-part",
        "nothing but gaps",
        "no rows",
    ],
)
def test_wkb_is_what_geos_writes(kind):
    """The numpy encoding of points, lines and polygons without holes gives GEOS's own bytes; anything else is
    GEOS's."""
    geoms = _geoms(kind)
    assert wkb_array(geoms).to_pylist() == list(shapely.to_wkb(geoms, flavor="iso"))


@pytest.mark.parametrize("crs", ["EPSG:2260", "EPSG:32632"])
def test_our_geoparquet_file_is_the_one_geopandas_writes(tmp_path, crs):
    """Schema, rows, GeoParquet metadata (but the creator) and what GeoPandas reads back: all as
    ``to_parquet(schema_version="1.1.0", write_covering_bbox=True)`` writes them, for the results' layers too
    (points and lines with gaps). EPSG:32632's datum is an ensemble, whose members' IDs are left out."""
    layers = sample_town(200)
    parcels = layers["parcels"].to_crs(crs)
    lines = gpd.GeoDataFrame(
        {"parcel_id": parcels["parcel_id"], "distance_ft": np.arange(len(parcels), dtype=float)},
        geometry=shapely.shortest_line(parcels.geometry.values, layers["mains"].to_crs(crs).union_all()),
        crs=crs,
    )
    lines.loc[lines.index[::9], "geometry"] = None
    points = lines.set_geometry(shapely.get_point(lines.geometry.values, -1))
    odd = lines.copy()  # a line with Z and a multi-part one: their ends are made points as before
    odd.loc[odd.index[1], "geometry"] = shapely.LineString([(0, 0, 1), (5, 5, 2)])
    odd.loc[odd.index[2], "geometry"] = shapely.MultiLineString([[(0, 0), (1, 1)], [(2, 2), (3, 3)]])
    frames = {"parcels": parcels, "mains": layers["mains"], "lines": lines, "points": points, "none": parcels[:0]}
    # The connection points written from the lines' ends (``line_ends``) are the points written as points.
    ends = {"line ends": (lines, points), "odd line ends": (odd, odd.set_geometry(shapely.get_point(odd.geometry, -1)))}
    for name, frame in {**frames, **ends}.items():
        ours, theirs = tmp_path / f"ours_{name}.parquet", tmp_path / f"theirs_{name}.parquet"
        frame, written = frame if name in ends else (frame, frame)
        write_geoparquet(ours, frame, row_group_size=64, line_ends=name in ends)  # several row groups, the last short
        frame = written
        _plain_columns(frame).to_parquet(
            theirs, index=False, schema_version="1.1.0", write_covering_bbox=True, row_group_size=64
        )
        assert pq.ParquetFile(ours).num_row_groups == pq.ParquetFile(theirs).num_row_groups, name
        assert pq.read_schema(ours).equals(pq.read_schema(theirs)), name
        assert pq.read_table(ours).equals(pq.read_table(theirs)), name
        meta, expected = geo_metadata(ours), geo_metadata(theirs)
        assert meta.pop("creator") == {"library": "sewerplan"} and expected.pop("creator")
        assert meta == expected, name
        pd.testing.assert_frame_equal(gpd.read_parquet(ours), gpd.read_parquet(theirs))


def test_a_bbox_column_of_the_users_is_refused_in_words(tmp_path):
    frame = sample_town(50)["parcels"].assign(bbox="north lot")
    with pytest.raises(LayerError, match="column named 'bbox'"):
        write_geoparquet(tmp_path / "p.parquet", frame)
    assert not list(tmp_path.iterdir())
