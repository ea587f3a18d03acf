"""A results store written away from its input layers works on its own (``analyze --data town --out results.gpkg``).

Found in real use: the map showed the results without the mains, "Trace to the plant" said to run the analysis
first, the Run button said the store held no layers named as expected, and ``sewerplan trace --data results.gpkg``
failed the same way. The run now copies the layers it read into the store beside the results, as a store analysed
in place holds them; a store with input layers of its own is refused, never written over.
"""

from __future__ import annotations

import json
import sqlite3

import geopandas as gpd
import pyogrio
import pytest

from gisapp import services
from layers.sample import sample_town
from layers.store import latest_run
from layers.write import write_layers
from tests.conftest import Runner, csrf, make_app, wait_job

INPUTS = ("parcels", "buildings", "streets", "mains", "manholes", "treatment_plants")
RESULTS = ("parcel_results", "measuring_lines", "connection_points", "building_results")
BBOX = "bbox=-180,-89,179,89&zoom=18"


@pytest.fixture(scope="module")
def town(tmp_path_factory):
    """The sample village's input layers in a GeoPackage of their own."""
    path = tmp_path_factory.mktemp("town") / "town.gpkg"
    write_layers(str(path), sample_town(300))
    return path


@pytest.fixture(scope="module")
def results(town, tmp_path_factory):
    """The village analysed into a results store of its own: the tester's ``analyze --data town --out results``."""
    out = tmp_path_factory.mktemp("results") / "results.gpkg"
    doc = Runner().json(
        "analyze", "--profile", "fort-plain", "--data", town, "--out", out, "--notice-date", "2027-03-01"
    )
    return out, doc


def layer_names(path) -> list[str]:
    return [str(name) for name, _ in pyogrio.list_layers(str(path))]


def a_parcel(path) -> str:
    return str(gpd.read_file(path, layer="parcel_results")["parcel_id"].iloc[0])


def test_analyze_copies_the_input_layers_into_a_results_store(town, results):
    out, doc = results
    assert set(INPUTS) | set(RESULTS) <= set(layer_names(out))
    summary = doc["summary"]
    assert summary["layers_written"] == list(RESULTS)  # the results, as before
    assert summary["layers_copied"] == list(INPUTS)
    for name in INPUTS:  # whole, and as validated: in the measuring CRS
        copy = gpd.read_file(out, layer=name)
        assert len(copy) == len(gpd.read_file(town, layer=name)) and copy.crs.to_epsg() == 2260
    record = latest_run(out)
    # The store's own layers now: nothing of the input's reading (data path, mapping, layer CRSs) to apply again;
    # where they came from is kept, with which layers are copies.
    assert record["workspace"]["data"] is None and record["workspace"]["layers"] == {}
    assert record["input_copies"]["from"]["data"] == str(town.resolve())
    assert record["input_copies"]["layers"]["outfalls"] == "treatment_plants"


def test_the_cli_says_the_layers_were_copied(town, tmp_path):
    out = tmp_path / "results.gpkg"
    said = Runner().invoke("analyze", "--profile", "fort-plain", "--data", town, "--out", out, ok=True).stdout
    assert "The input layers were copied in beside them" in " ".join(said.split())


def test_trace_works_on_the_results_store(town, results):
    out, _ = results
    parcel = a_parcel(out)
    runner = Runner()
    from_store = runner.json("trace", "--data", out, "--parcel", parcel)
    from_town = runner.json("trace", "--data", town, "--parcel", parcel)
    assert from_store["control_manhole"] == from_town["control_manhole"]
    assert from_store["length_ft"] == pytest.approx(from_town["length_ft"])
    up = runner.json("trace", "--data", out, "--manhole", from_store["control_manhole"], "--upstream")
    assert up["mains"]


def test_analysing_the_results_store_again_gives_the_same_results(results, tmp_path):
    """The copies are the layers as validated: read back without the input's column mapping, the same answer."""
    out, doc = results
    again = tmp_path / "again.gpkg"
    again.write_bytes(out.read_bytes())
    redo = Runner().json("analyze", "--data", again, "--out", again, "--notice-date", "2027-03-01")
    assert redo["summary"]["counts"] == doc["summary"]["counts"]
    assert redo["mandated"] == doc["mandated"]
    assert redo["summary"]["layers_copied"] == []
    # Still copies: a later run from the town's data replaces them rather than being refused.
    assert latest_run(again)["input_copies"]["layers"]["mains"] == "mains"


def test_a_mapped_and_reprojected_input_is_copied_as_validated(town, tmp_path):
    """Columns renamed with --map and a layer in another CRS: the store's copies carry sewerplan's names in the
    measuring CRS, and the store alone analyses and traces (the mapping is not applied to them again)."""
    data = tmp_path / "data"
    data.mkdir()
    for name in INPUTS:
        frame = gpd.read_file(town, layer=name)
        if name == "parcels":
            frame = frame.rename(columns={"parcel_id": "SBL"})
        if name == "mains":
            frame = frame.to_crs(4326)
        frame.to_file(data / f"{name}.gpkg", layer=name)
    out = tmp_path / "results.gpkg"
    runner = Runner()
    first = runner.json(
        "analyze", "--profile", "fort-plain", "--data", data, "--map", "parcels.parcel_id=SBL", "--out", out
    )
    assert latest_run(out)["input_copies"]["from"]["mapping"]["columns"] == {"parcels": {"parcel_id": "SBL"}}
    assert gpd.read_file(out, layer="mains").crs.to_epsg() == 2260
    redo = runner.json("analyze", "--data", out, "--out", out)
    assert redo["summary"]["counts"] == first["summary"]["counts"]
    runner.json("trace", "--data", out, "--parcel", a_parcel(out))


def test_the_web_map_traces_and_runs_on_the_results_store(results, tmp_path):
    out, doc = results
    store = tmp_path / "results.gpkg"
    store.write_bytes(out.read_bytes())  # a run rewrites the store: keep the module's as it is
    client = make_app(store, tmp_path).test_client()
    for layer in ("mains", "manholes", "plants"):
        got = client.get(f"/api/layers/{layer}?{BBOX}").get_json()
        assert got["features"] and not got.get("missing"), layer
    trace = client.get("/api/trace", query_string={"parcel": a_parcel(store)})
    assert trace.status_code == 200, trace.get_data(as_text=True)
    assert trace.get_json()["control_manhole"] and trace.get_json()["geojson"]["features"]
    shed = client.get("/api/sewershed", query_string={"manhole": trace.get_json()["control_manhole"]})
    assert shed.status_code == 200, shed.get_data(as_text=True)
    token = csrf(client)
    job = wait_job(client, client.post("/analysis/run", data={"profile": "fort-plain", "csrf_token": token}).get_json())
    assert job["state"] == "done", job
    assert job["summary"]["counts"] == doc["summary"]["counts"]


def test_a_later_run_replaces_the_copies_and_drops_those_it_no_longer_has(town, results, tmp_path):
    out, _ = results
    store = tmp_path / "results.gpkg"
    store.write_bytes(out.read_bytes())
    data = tmp_path / "no-buildings"
    data.mkdir()
    for name in INPUTS:
        if name != "buildings":
            gpd.read_file(town, layer=name).to_file(data / f"{name}.gpkg", layer=name)
    doc = Runner().json("analyze", "--profile", "fort-plain", "--data", data, "--out", store)
    assert "buildings" not in doc["summary"]["layers_copied"]
    assert "buildings" not in layer_names(store) and "mains" in layer_names(store)
    # nor the last run's building results: the map drew those verdicts beside this run's parcels
    assert "building_results" not in layer_names(store) and "parcel_results" in layer_names(store)
    with sqlite3.connect(store) as con:  # removed whole: no index, style or contents entry left behind
        assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert not con.execute(
            "SELECT name FROM sqlite_master WHERE name LIKE '%buildings%' OR name LIKE '%building_results%'"
        ).fetchall()
        assert not con.execute(
            "SELECT 1 FROM gpkg_contents WHERE table_name IN ('buildings', 'building_results')"
        ).fetchall()
    assert "buildings" not in latest_run(store)["input_copies"]["layers"]


def test_a_store_with_input_layers_of_its_own_is_refused_and_left_alone(town, tmp_path):
    own = tmp_path / "own.gpkg"
    write_layers(str(own), sample_town(60, seed=7))
    before = own.read_bytes()
    result = Runner().invoke("analyze", "--profile", "fort-plain", "--data", town, "--out", own)
    assert result.exit_code == 2
    said = " ".join(result.output.split())
    assert "own.gpkg already holds input layers of its own (parcels" in said
    assert "write the results to a new store" in said
    assert own.read_bytes() == before


def test_the_same_store_in_and_out_copies_nothing(town, tmp_path):
    """``make demo``'s flow is unchanged: the store's own layers are analysed in place, nothing is copied."""
    store = tmp_path / "sewerplan.gpkg"
    store.write_bytes(town.read_bytes())
    doc = Runner().json("analyze", "--profile", "fort-plain", "--data", store, "--out", store)
    assert doc["summary"]["layers_copied"] == [] and "input_copies" not in latest_run(store)
    assert sorted(layer_names(store)) == sorted([*INPUTS, *RESULTS, "layer_styles"])


def test_a_store_of_results_alone_says_how_to_copy_its_layers_in(town, tmp_path, monkeypatch):
    """A results store written before the layers were copied: trace and the map say, in one sentence, what to do."""
    old = tmp_path / "old.gpkg"
    monkeypatch.setattr(services, "input_copies", lambda ws, store: None)  # as sewerplan wrote it before
    Runner().invoke("analyze", "--profile", "fort-plain", "--data", town, "--out", old, ok=True)
    monkeypatch.undo()
    assert not set(INPUTS) & set(layer_names(old))
    result = Runner().invoke("trace", "--data", old, "--parcel", a_parcel(old))
    assert result.exit_code == 2
    said = " ".join(result.output.split())
    assert "holds analysis results but not the layers they were computed from" in said
    assert f"sewerplan analyze --data {town.resolve()} --out {old}" in said
    client = make_app(old, tmp_path).test_client()
    trace = client.get("/api/trace", query_string={"parcel": a_parcel(old)})
    assert trace.status_code == 404
    assert "not the layers they were computed from" in json.dumps(trace.get_json())
    token = csrf(client)
    job = wait_job(client, client.post("/analysis/run", data={"profile": "fort-plain", "csrf_token": token}).get_json())
    assert job["state"] == "failed" and f"sewerplan analyze --data {town.resolve()} --out" in job["error"]
    # Doing what it says makes the store whole.
    Runner().invoke("analyze", "--profile", "fort-plain", "--data", town, "--out", old, ok=True)
    assert set(INPUTS) <= set(layer_names(old))
    Runner().invoke("trace", "--data", old, "--parcel", a_parcel(old), ok=True)


def test_a_moved_connected_list_is_replaced_by_the_copy_the_store_kept(town, tmp_path):
    """A store analysed with `--connected billing.csv` could no longer trace, serve a trace or run again once the
    CSV was moved ("Connected-parcels list ... cannot be read"): the run keeps the list it read in the store, and a
    rebuild uses that copy, saying so."""
    store = tmp_path / "town.gpkg"
    store.write_bytes(town.read_bytes())
    ids = gpd.read_file(town, layer="parcels")["parcel_id"].head(7)
    billing = tmp_path / "billing.csv"
    ids.to_frame().to_csv(billing, index=False)
    first = Runner().json("analyze", "--profile", "fort-plain", "--data", store, "--out", store, "--connected", billing)
    billing.rename(tmp_path / "moved.csv")
    runner = Runner()
    traced = runner.invoke("trace", "--data", store, "--parcel", a_parcel(store), ok=True)
    said = "".join(traced.stderr.split())  # a long path is folded where the line ends: compared without spaces
    assert "".join(f"The connected-parcels list {billing} cannot be read (moved or deleted?)".split()) in said
    assert "thecopythestorekeptatitslatestrun(7parcelIDs)isused" in said
    again = Runner().json("analyze", "--data", store, "--out", store)
    assert again["summary"]["counts"] == first["summary"]["counts"]
    client = make_app(store, tmp_path).test_client()
    assert client.get("/api/trace", query_string={"parcel": a_parcel(store)}).status_code == 200
    # another list than the one the store kept is not stood in for
    other = runner.invoke("analyze", "--data", store, "--out", store, "--connected", tmp_path / "no.csv")
    assert other.exit_code == 2 and "no.csv cannot be read" in " ".join(other.output.split())


def test_reading_some_result_columns_gives_them_as_the_whole_read_does(results):
    """``violations`` reads a run's statuses alone: at a million parcels the geometry was four fifths of the read."""
    from layers.errors import LayerError
    from layers.store import read_results

    out, _ = results
    whole = read_results(out)
    some = read_results(out, columns=("status", "parcel_id"))
    assert list(some.columns) == ["status", "parcel_id"] and "geometry" not in some
    assert some.equals(whole[["status", "parcel_id"]].reset_index(drop=True))
    with pytest.raises(LayerError, match="has no column no_such_column: run the analysis again"):
        read_results(out, columns=("parcel_id", "no_such_column"))


def test_the_results_columns_are_listed_from_the_schema_without_reading_a_row(results, town, tmp_path, monkeypatch):
    """``violations`` read the results once for each optional column (the occupant's city, state and ZIP code, a
    private system), up to five reads of a town's results, as a store could not say which columns it had: it lists
    them from the layer's schema now, the columns a read of the results gives, before any row is read."""
    from layers.store import GeoPackageStore, read_results, results_columns

    out, _ = results
    whole = read_results(out)

    def no_read(*_args, **_kwargs):
        raise AssertionError("a row of the layer was read")

    monkeypatch.setattr(GeoPackageStore, "read_layer", no_read)
    monkeypatch.setattr(GeoPackageStore, "read_columns", no_read)
    assert results_columns(out) == [c for c in whole.columns if c != "geometry"]
    assert {"parcel_id", "status", "site_city", "site_zip"} <= set(results_columns(out))
    assert GeoPackageStore(out).layer_columns("no_such_layer") == []
    assert results_columns(town) is None  # input layers, no run yet
    assert results_columns(tmp_path / "none_yet.gpkg") is None


def test_a_report_written_into_a_store_is_refused_before_the_work_and_the_store_is_left_alone(results, tmp_path):
    """``buildings --out town.gpkg`` wrote the building rows over the store's parcel_results: the map then drew
    buildings as parcels and the notices read a run that was gone. A report goes to a file of its own."""
    out, _ = results
    before = out.read_bytes()
    for command in ("buildings", "duties"):
        refused = Runner().invoke(command, "--profile", "fort-plain", "--data", out, "--out", out)
        assert refused.exit_code == 2, refused.output
        said = " ".join(refused.output.split())
        assert "is a town's store" in said and "would replace the ones its map and notices read" in said, said
    assert out.read_bytes() == before

    own = tmp_path / "buildings.gpkg"
    for _ in range(2):  # and again: a report file of its own is no store, and is replaced
        wrote = Runner().invoke("buildings", "--profile", "fort-plain", "--data", out, "--out", own)
        assert wrote.exit_code == 0, wrote.output
        # It says where the rows went and under which layer (it said nothing of the file it wrote).
        said = "".join(wrote.stdout.split())  # a long path is folded where the line ends: compared without spaces
        assert said.endswith("".join(f"Building results written to {own} (layer building_results).".split()))
    every = Runner().invoke("buildings", "--profile", "fort-plain", "--data", out, "--out", own, "--all", ok=True)
    said = "".join(every.stdout.split())  # more than the 200 rows shown: not "--json or --out for all"
    assert (
        "more(--jsonor--outforall)" not in said
        and "".join(f"more (all of them are in {own}, which holds every building).".split()) in said
    )
    duties = tmp_path / "duties.gpkg"
    every = Runner().invoke("duties", "--profile", "fort-plain", "--data", out, "--out", duties, "--all", ok=True)
    said = "".join(every.stdout.split())
    done = f"more (all of them are in {duties}, which holds every parcel). "
    done += f"Results written to {duties} (layer parcel_results)."
    assert said.endswith("".join(done.split()))
    assert [n for n in layer_names(own) if n != "layer_styles"] == ["building_results"]
    assert "building_id" in gpd.read_file(own, layer="building_results").columns
