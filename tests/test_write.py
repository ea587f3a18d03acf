"""Writing results: a new GeoPackage appears whole or not at all, an existing one keeps its other layers, GDAL's
settings are put back, and GeoParquet dictionary-encodes only the columns with few values."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from contextlib import closing
from pathlib import Path

import geopandas as gpd
import pandas as pd
import pyarrow.parquet as pq
import pyogrio
import pytest

from analysis.mandate import analyze_mandates
from analysis.profiles import load_profile
from layers import write
from layers.crs import measuring_crs
from layers.errors import LayerError
from layers.read import find_layers, load_layers
from layers.sample import sample_town
from layers.write import write_layers, write_results

ROOT = Path(__file__).resolve().parents[1]


def analysed(parcels: int, folder: Path):
    """The sample town read and validated as ``sewerplan analyze`` reads it, and its mandates."""
    write_layers(str(folder / "town.gpkg"), sample_town(parcels))
    town = load_layers(find_layers(str(folder / "town.gpkg")), target_crs=measuring_crs("EPSG:2260"))
    result = analyze_mandates(
        town.parcels,
        town.mains,
        streets=town.streets,
        buildings=town.buildings,
        profile=load_profile("fort-plain"),
    )
    return result.parcels, result.measuring_lines


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    parcels, lines = analysed(400, tmp_path_factory.mktemp("town"))
    # a town worth writing: several statuses, and more distinct reasons than a tenth of its parcels
    assert parcels["status"].nunique() > 2 and parcels["reason"].nunique() > len(parcels) // 10
    return parcels, lines


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_a_new_geopackage_is_whole_and_gdal_settings_are_put_back(results, tmp_path):
    parcels, lines = results
    pyogrio.set_gdal_config_options({"OGR_SQLITE_JOURNAL": None, "OGR_SQLITE_SYNCHRONOUS": None})
    out = tmp_path / "results.gpkg"
    assert write_results(str(out), parcels, lines) == ["parcel_results", "measuring_lines", "connection_points"]
    assert len(gpd.read_file(out, layer="parcel_results")) == len(parcels)
    assert len(gpd.read_file(out, layer="connection_points")) == len(lines)
    assert leftovers(tmp_path) == []
    assert pyogrio.get_gdal_config_option("OGR_SQLITE_JOURNAL") is None
    assert pyogrio.get_gdal_config_option("OGR_SQLITE_SYNCHRONOUS") is None
    with closing(sqlite3.connect(out)) as con:  # a whole database, not a half-written one
        assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def disk_full_at(monkeypatch, failing: str):
    """GeoPackage layers are written as usual until the layer ``failing``, whose write fails as on a full disk."""
    real = write._write_gpkg

    def write_gpkg(frame, path, layer, **options):
        if layer == failing:
            raise LayerError(f"Cannot write {path}: disk full")
        real(frame, path, layer, **options)

    monkeypatch.setattr(write, "_write_gpkg", write_gpkg)
    return real


def test_a_write_that_fails_halfway_leaves_no_file(results, tmp_path, monkeypatch):
    parcels, lines = results
    disk_full_at(monkeypatch, "measuring_lines")
    out = tmp_path / "results.gpkg"
    with pytest.raises(LayerError, match="disk full"):
        write_results(str(out), parcels, lines)
    assert not out.exists()
    assert leftovers(tmp_path) == []
    assert pyogrio.get_gdal_config_option("OGR_SQLITE_JOURNAL") is None


def test_a_refused_write_names_the_file_asked_for_not_the_hidden_one(tmp_path):
    """GDAL's refusal named the hidden file the layers were written under (``.results.1a2b.tmp.gpkg``), which the
    user never saw and could not find afterwards: a new file, a layer added to one, a store's run."""
    from shapely.geometry import box

    from layers.store import open_store

    twins = gpd.GeoDataFrame(  # one column to SQLite, which a GeoPackage refuses
        {"parcel_id": ["a"], "Area": [1.0], "area": [2.0]}, geometry=[box(0, 0, 1, 1)], crs="EPSG:2260"
    )
    new, store = tmp_path / "results.gpkg", tmp_path / "town.gpkg"
    write_layers(str(store), {"mains": twins[["geometry"]]})
    for path, write_them in (
        (new, lambda: write_results(str(new), twins, None)),
        (new, lambda: write_layers(str(new), {"parcels": twins})),
        (store, lambda: open_store(store).write_run(twins, None, None, {})),
    ):
        with pytest.raises(LayerError) as refused:
            write_them()
        said = str(refused.value)
        assert f"Cannot write {path}: " in said and "same name" in said and ".tmp" not in said, said
    assert leftovers(tmp_path) == []


def test_an_existing_geopackage_keeps_its_other_layers(results, tmp_path):
    parcels, lines = results
    out = tmp_path / "store.gpkg"
    town = sample_town(50)
    pyogrio.write_dataframe(town["mains"], out, layer="mains", driver="GPKG")
    write_results(str(out), parcels, lines)
    assert set(pyogrio.list_layers(out)[:, 0]) >= {"mains", "parcel_results", "measuring_lines"}
    assert len(gpd.read_file(out, layer="mains")) == len(town["mains"])


def test_every_geopackage_is_written_as_version_1_2(results, tmp_path):
    """GDAL 3.11 writes GeoPackage 1.4 by default, and the GDAL of the QGIS long-term releases in Debian 12 and
    Ubuntu 22.04 warned on every store and result that it "may only be partially supported". A store (its input
    layers) and a result file are 1.2 (``PRAGMA user_version`` 10200), and a layer added later keeps the file's."""
    parcels, lines = results
    store, out = tmp_path / "store.gpkg", tmp_path / "results.gpkg"
    write_layers(str(store), {"parcels": parcels[["parcel_id", "geometry"]]})
    write_results(str(store), parcels, lines)  # into the store, beside its layers
    write_results(str(out), parcels, lines)
    for path in (store, out):
        with closing(sqlite3.connect(path)) as con:
            assert con.execute("PRAGMA user_version").fetchone()[0] == 10200, path
            assert con.execute("PRAGMA application_id").fetchone()[0] == 0x47504B47  # "GPKG"
    assert {"parcels", "parcel_results", "measuring_lines"} <= set(pyogrio.list_layers(store)[:, 0])


def test_geoparquet_dictionary_encodes_statuses_but_not_reason_sentences(results, tmp_path):
    parcels, lines = results
    out = tmp_path / "results.parquet"
    write_results(str(out), parcels, lines)
    meta = pq.ParquetFile(out).metadata
    names = [meta.schema.column(i).path for i in range(meta.num_columns)]
    encodings = {name: meta.row_group(0).column(i).encodings for i, name in enumerate(names)}
    assert any("DICTIONARY" in e for e in encodings["status"])
    assert not any("DICTIONARY" in e for e in encodings["reason"])
    assert not any("DICTIONARY" in e for e in encodings["parcel_id"])
    back = gpd.read_parquet(out)
    assert back["status"].tolist() == parcels["status"].tolist()
    assert back["reason"].tolist() == parcels["reason"].tolist()
    for layer in ("measuring_lines", "connection_points"):
        assert len(gpd.read_parquet(tmp_path / f"results.{layer}.parquet")) == len(lines)
    assert leftovers(tmp_path) == []


WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    sys.path.insert(0, {root!r})
    sys.path.insert(0, {tests!r})
    from test_write import analysed
    from layers.write import write_results
    parcels, lines = analysed(3000, Path(sys.argv[1]).parent)
    print("writing", flush=True)
    write_results(sys.argv[1], parcels, lines)
    print("written", flush=True)
    """
)


def test_kill_9_while_writing_a_geopackage_leaves_it_whole_or_absent(tmp_path):
    script = tmp_path / "writer.py"
    script.write_text(WRITER.format(root=str(ROOT), tests=str(ROOT / "tests")))
    rng = random.Random(20261201)
    seen = {"absent": 0, "whole": 0}
    for trial in range(6):
        folder = tmp_path / f"t{trial}"
        folder.mkdir()
        out = folder / "results.gpkg"
        proc = subprocess.Popen([sys.executable, str(script), str(out)], stdout=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "writing"
        time.sleep(rng.uniform(0.0, 0.6))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        if out.exists():
            seen["whole"] += 1
            assert len(gpd.read_file(out, layer="connection_points")) > 0
            with closing(sqlite3.connect(out)) as con:
                assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
                assert con.execute("SELECT count(*) FROM parcel_results").fetchone()[0] == 3000
        else:
            seen["absent"] += 1
    assert seen["absent"] > 0, "no kill landed during the write: the test proved nothing"


def test_replacing_a_geopackage_that_fails_halfway_keeps_the_old_one(tmp_path, monkeypatch):
    old, new = sample_town(50), sample_town(80)
    path = tmp_path / "store.gpkg"
    write_layers(str(path), old)
    real = disk_full_at(monkeypatch, "mains")
    with pytest.raises(LayerError, match="disk full"):
        write_layers(str(path), new, overwrite=True)
    assert len(gpd.read_file(path, layer="parcels")) == len(old["parcels"])
    assert leftovers(tmp_path) == []
    monkeypatch.setattr(write, "_write_gpkg", real)
    write_layers(str(path), new, overwrite=True)
    assert len(gpd.read_file(path, layer="parcels")) == len(new["parcels"])
    with pytest.raises(LayerError, match="replace it only when asked"):
        write_layers(str(path), old)


def test_a_network_report_goes_into_a_new_or_an_existing_geopackage(tmp_path):
    from shapely.geometry import Point

    from layers.write import write_report

    report = gpd.GeoDataFrame(
        {"finding": ["no_outfall", "adverse_slope"], "main_id": ["M-1", "M-2"]},
        geometry=[Point(0, 0), Point(10, 0)],
        crs="EPSG:2260",
    )
    new = tmp_path / "report.gpkg"
    write_report(str(new), report)
    assert gpd.read_file(new, layer="network_report")["finding"].tolist() == ["no_outfall", "adverse_slope"]
    existing = tmp_path / "store.gpkg"
    write_layers(str(existing), {"mains": sample_town(50)["mains"]})
    write_report(str(existing), report)
    assert {"mains", "network_report"} <= set(pyogrio.list_layers(existing)[:, 0])
    assert leftovers(tmp_path) == []


def _read_any(data: bytes, suffix: str, folder: Path) -> gpd.GeoDataFrame | pd.DataFrame:
    path = folder / f"read{suffix}"
    path.write_bytes(data)
    if suffix == ".csv":
        return pd.read_csv(path, encoding="utf-8-sig", dtype={"parcel_id": str})
    return gpd.read_parquet(path) if suffix == ".parquet" else gpd.read_file(path)


@pytest.mark.parametrize("suffix", [".geojson", ".csv", ".parquet"])
def test_results_files_say_which_crs_the_connection_point_is_in(tmp_path, suffix):
    """A GeoJSON's geometry is in degrees, its connection_x/connection_y in the measuring CRS's feet, and no file
    said so: each results file, from `analyze --out` and from the web's download, names that CRS beside them."""
    from click.testing import CliRunner

    from gisapp.cli import main
    from tests.conftest import make_app

    store = tmp_path / "town.gpkg"
    write_layers(str(store), sample_town(50))
    out = tmp_path / f"results{suffix}"
    for target in (store, out):
        done = CliRunner().invoke(main, ["analyze", "--profile", "fort-plain", "--data", store, "--out", target])
        assert done.exit_code == 0, done.output
    downloaded = make_app(store, tmp_path).test_client().get(f"/api/results{suffix}")
    assert downloaded.status_code == 200
    parcels = gpd.read_file(store, layer="parcel_results").set_index("parcel_id")
    measured = parcels["measured_from"] == "parcel boundary"
    for frame in (_read_any(out.read_bytes(), suffix, tmp_path), _read_any(downloaded.data, suffix, tmp_path)):
        columns = list(frame.columns)
        assert columns[columns.index("connection_y") + 1] == "connection_crs"
        assert set(frame["connection_crs"]) == {"EPSG:2260"}
        # The numbers are in the CRS named: each point lies its distance from its parcel, measured there.
        frame = frame.set_index(frame["parcel_id"].astype(str))[measured.reindex(frame["parcel_id"].astype(str))]
        points = gpd.points_from_xy(frame["connection_x"], frame["connection_y"], crs=frame["connection_crs"].iloc[0])
        apart = gpd.GeoSeries(points, index=frame.index).distance(parcels.geometry.reindex(frame.index))
        assert len(frame) > 10 and (apart - frame["distance_ft"]).abs().max() < 0.01


def test_a_models_own_coordinates_are_named_by_the_crs_name_and_the_input_is_kept():
    """A SWMM model's schematic coordinates have no EPSG code: the column names them, not 300 characters of WKT."""
    import shapely

    from layers.swmm import LOCAL_CRS

    given = gpd.GeoDataFrame(
        {"connection_x": [1.0], "connection_y": [2.0]}, geometry=[shapely.Point(0, 0)], crs=LOCAL_CRS, index=[7]
    )
    named = write.with_connection_crs(given)
    assert named["connection_crs"].tolist() == ["Model coordinates (no real-world CRS)"]
    assert "connection_crs" not in given.columns and named.index.tolist() == [7] and named.crs == LOCAL_CRS
