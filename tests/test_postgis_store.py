"""The PostGIS store against a real PostgreSQL/PostGIS server (CI starts one; see .ci/run).

A run written with ``analyze --out postgresql://...#schema`` lands in that schema in one transaction (keys, GiST
indexes, the SRID, column comments, QGIS styles), the web app serves the map from it, one writer at a time holds
the store across processes (an advisory lock), and a run that fails midway leaves the previous results in place.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from analysis.mandate import STATUSES
from layers.legend import column_description
from layers.store import StoreBusyError, open_store, store_writer
from tests.conftest import Runner, make_app, town_toml, wait_job

pytestmark = pytest.mark.postgres
REPO = Path(__file__).resolve().parents[1]
RESULTS = ("parcel_results", "measuring_lines", "connection_points", "building_results")


@pytest.fixture(scope="module")
def town(tmp_path_factory) -> Path:
    """The sample village (300 parcels) in a GeoPackage: the layers every run here reads."""
    from layers.sample import sample_town
    from layers.write import write_layers

    path = tmp_path_factory.mktemp("town") / "town.gpkg"
    write_layers(str(path), sample_town(300))
    return path


@pytest.fixture
def engine(pg_url):
    engine = create_engine(pg_url, poolclass=NullPool)
    yield engine
    engine.dispose()


@pytest.fixture
def store_url(pg_url, engine):
    """A fresh schema for one test's store; dropped afterwards with its snapshots and QGIS styles."""
    schema = f"store_{uuid.uuid4().hex[:8]}"
    yield f"{pg_url}#{schema}"
    with engine.begin() as con:
        for name in con.execute(
            text("SELECT nspname FROM pg_namespace WHERE nspname = :s OR nspname LIKE :p"),
            {"s": schema, "p": f"{schema}\\_%"},
        ).scalars():
            con.execute(text(f'DROP SCHEMA "{name}" CASCADE'))
        if con.execute(text("SELECT to_regclass('public.layer_styles')")).scalar():
            con.execute(text("DELETE FROM public.layer_styles WHERE f_table_schema = :s"), {"s": schema})


def _schema(url: str) -> str:
    return url.partition("#")[2]


def _analyze(town, url, *extra):
    return Runner().invoke("analyze", "--profile", "fort-plain", "--data", town, "--out", url, *extra)


def _fingerprint(engine, schema: str) -> dict:
    """What the store's results are: each table's rows hashed, and the run record."""
    with engine.connect() as con:
        found = {
            name: con.execute(
                text(f'SELECT count(*), md5(string_agg(t::text, \'|\' ORDER BY fid)) FROM "{schema}"."{name}" t')
            ).one()
            for name in RESULTS
        }
        found["runs"] = con.execute(
            text(
                "SELECT count(*), max(id), md5(string_agg(summary::text, '|' ORDER BY id)) "
                f'FROM "{schema}".analysis_runs'
            )
        ).one()
    return found


def test_analyse_into_postgis_then_serve_the_map_from_it(town, store_url, engine, tmp_path):
    result = _analyze(town, store_url, "--notice-date", "2027-03-01")
    assert result.exit_code == 0, result.output
    assert "sewerplan:sewerplan@" not in result.output and "#" + _schema(store_url) in result.output
    schema = _schema(store_url)
    with engine.connect() as con:
        for name in RESULTS:
            key = con.execute(
                text(
                    "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
                    "AND a.attnum = ANY(i.indkey) WHERE i.indrelid = to_regclass(:t) AND i.indisprimary"
                ),
                {"t": f"{schema}.{name}"},
            ).scalar()
            assert key == "fid", name
            methods = con.execute(
                text(
                    "SELECT am.amname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                    "JOIN pg_am am ON am.oid = c.relam WHERE i.indrelid = to_regclass(:t)"
                ),
                {"t": f"{schema}.{name}"},
            ).scalars()
            assert "gist" in set(methods), name
            assert con.execute(text("SELECT Find_SRID(:s, :t, 'geom')"), {"s": schema, "t": name}).scalar() == 2260
        said = con.execute(
            text(
                "SELECT col_description(to_regclass(:t), a.attnum) FROM pg_attribute a "
                "WHERE a.attrelid = to_regclass(:t) AND a.attname = 'distance_ft'"
            ),
            {"t": f"{schema}.parcel_results"},
        ).scalar()
        assert said == column_description("parcel_results", "distance_ft")
        rows = con.execute(text(f"SELECT parcel_id, status FROM {schema}.parcel_results")).all()
        run = con.execute(text(f"SELECT summary FROM {schema}.analysis_runs")).scalars().all()
    assert len(rows) == 300 and len(run) == 1 and run[0]["counts"]["mandated"] > 0
    assert "sewerplan:sewerplan@" not in json.dumps(run[0]["workspace"])

    # The web app, pointed at the schema, serves the parcels the run wrote (the map's layer API and the summary).
    client = make_app(store_url, tmp_path, LOCAL_MODE=True).test_client()
    page = client.get("/")
    assert page.status_code == 200
    served = client.get("/api/layers/parcels?bbox=-180,-90,180,90&zoom=18").get_json()
    got = {f["properties"]["parcel_id"]: f["properties"]["status"] for f in served["features"]}
    assert got == dict(rows)
    counts = client.get("/api/summary").get_json()["counts"]
    assert counts == run[0]["counts"]
    summary = client.get("/summary").get_data(as_text=True)
    assert "sewerplan:sewerplan@" not in summary


def test_serve_refuses_a_schema_that_does_not_exist(store_url):
    result = Runner().invoke("serve", "--store", store_url)
    assert result.exit_code != 0
    assert "does not exist yet (no such schema)" in result.output and "sewerplan:sewerplan@" not in result.output


def test_a_second_writer_is_refused_with_the_geopackage_sentence(town, store_url, tmp_path):
    """The advisory lock holds across processes; the refusal reads as the GeoPackage lock's does."""
    holder = textwrap.dedent(
        """
        import sys
        from layers.store import store_writer
        with store_writer(sys.argv[1], who="pat on the county machine"):
            print("locked", flush=True)
            sys.stdin.read()
        """
    )
    gpkg = tmp_path / "copy.gpkg"
    gpkg.write_bytes(town.read_bytes())
    said = {}
    for location in (store_url, str(gpkg)):
        proc = subprocess.Popen(
            [sys.executable, "-c", holder, location],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert proc.stdout.readline().strip() == "locked"
            result = _analyze(town, location)
            assert result.exit_code != 0
            said[location] = " ".join(result.output.split())
            with pytest.raises(StoreBusyError):
                store_writer(location, who="me")
        finally:
            proc.stdin.close()
            proc.wait(timeout=60)
            proc.stdout.close()
        with store_writer(location, who="me"):  # released when the holder ends
            pass
    pattern = (
        r"An analysis run is in progress on this store \(started by pat on the county machine at "
        r"\d\d:\d\d:\d\d\)\. Wait for it to finish, then try again\."
    )
    for location, text_ in said.items():
        assert re.search(pattern, text_), (location, text_)
        assert "sewerplan:sewerplan@" not in text_


def test_two_runs_at_once_one_is_refused_and_nothing_is_lost(town, store_url, engine):
    command = [
        sys.executable,
        "-m",
        "gisapp.cli",
        "analyze",
        "--profile",
        "fort-plain",
        "--data",
        str(town),
        "--out",
        store_url,
    ]
    procs = [
        subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for _ in range(2)
    ]
    outputs = [(p.wait(timeout=300), p.stdout.read()) for p in procs]
    for p in procs:
        p.stdout.close()
    succeeded = [out for rc, out in outputs if rc == 0]
    refused = [out for rc, out in outputs if rc != 0]
    assert succeeded, outputs
    for out in refused:
        assert "is in progress on this store" in " ".join(out.split()), out
    found = _fingerprint(engine, _schema(store_url))
    assert found["parcel_results"][0] == 300
    assert found["measuring_lines"][0] > 0 and found["building_results"][0] > 0
    assert found["runs"][0] == len(succeeded)


def test_a_run_that_fails_midway_leaves_the_previous_results(town, store_url, engine, monkeypatch):
    assert _analyze(town, store_url).exit_code == 0
    before = _fingerprint(engine, _schema(store_url))

    import layers.postgis_store as pg

    real, calls = pg._copy, []

    def failing(con, table, prepared):  # the third table (after the parcels and the lines): midway
        calls.append(table)
        if len(calls) == 3:
            raise OSError("the disk is full")
        real(con, table, prepared)

    monkeypatch.setattr(pg, "_copy", failing)
    result = _analyze(town, store_url, "--notice-date", "2027-06-01")
    assert result.exit_code != 0 and "the disk is full" in result.output
    assert len(calls) == 3
    assert _fingerprint(engine, _schema(store_url)) == before
    with store_writer(store_url, who="next run"):  # the failed run let go of the lock
        pass
    monkeypatch.setattr(pg, "_copy", real)
    assert _analyze(town, store_url, "--notice-date", "2027-06-01").exit_code == 0
    after = _fingerprint(engine, _schema(store_url))
    assert after["runs"][0] == before["runs"][0] + 1 and after["parcel_results"] != before["parcel_results"]


def test_the_postgis_store_gets_qgis_styles_listing_every_status(town, store_url, engine):
    assert _analyze(town, store_url).exit_code == 0
    with engine.connect() as con:
        rows = con.execute(
            text(
                "SELECT f_table_name, stylename, useasdefault, styleqml::text FROM public.layer_styles "
                "WHERE f_table_schema = :s"
            ),
            {"s": _schema(store_url)},
        ).all()
    styles = {r[0]: r for r in rows}
    assert set(RESULTS) <= set(styles)
    _, name, default, qml = styles["parcel_results"]
    assert name == "sewerplan" and default is True
    for status in STATUSES:
        assert f'value="{status}"' in qml, status
    assert 'labelsEnabled="0"' in qml


def test_the_postgis_stores_style_lists_the_statuses_of_the_runs_profile(town, store_url, engine):
    """Under Wappinger (§ 196-17E has no abutting-street test) the style the run leaves in ``public.layer_styles``
    lists no "near a main, but not on its street", as the web map's legend does not."""
    extra = ("--set", "mandate.distance_ft=100")
    done = Runner().invoke("analyze", "--profile", "wappinger", *extra, "--data", town, "--out", store_url)
    assert done.exit_code == 0, done.output
    with engine.connect() as con:
        qml = con.execute(
            text(
                "SELECT styleqml::text FROM public.layer_styles WHERE f_table_schema = :s "
                "AND f_table_name = 'parcel_results'"
            ),
            {"s": _schema(store_url)},
        ).scalar_one()
    root = ET.fromstring(qml.split("\n", 1)[1])  # after the DOCTYPE line
    listed = [c.get("value") for c in root.find("renderer-v2").find("categories")]
    assert "mandated" in listed and "in_range_not_abutting" not in listed


def test_settings_and_register_live_in_the_postgis_store(town, store_url):
    assert _analyze(town, store_url).exit_code == 0
    store = open_store(store_url)
    assert store.read_setting("anything") is None
    store.write_setting("anything", "a value")
    store.write_setting("anything", "another value")
    assert store.read_setting("anything") == "another value"
    assert open_store(store_url).latest_run()["counts"]["mandated"] > 0


def test_publish_and_restore_on_a_postgis_store(town, store_url, tmp_path, engine):
    assert _analyze(town, store_url).exit_code == 0
    store = open_store(store_url)
    store.write_setting("register", "kept")
    before = _fingerprint(engine, _schema(store_url))

    # An upload (a GeoPackage with a run of its own) is published: the schema's layers become the upload's.
    upload = tmp_path / "upload.gpkg"
    from layers.sample import sample_town
    from layers.write import write_layers

    write_layers(str(upload), sample_town(120, seed=7))
    assert _analyze(upload, str(upload)).exit_code == 0
    kept = store.publish(upload, who="pat", label="the March upload")
    assert kept and kept in {p["name"] for p in store.previous()}
    assert store.layer_counts()["parcel_results"] == 120
    assert store.read_setting("register") == "kept"  # the town's settings stay with the town

    # Restoring puts the earlier layers back; the published ones are kept in turn.
    again = store.restore(kept, who="pat")
    assert again and again != kept
    assert _fingerprint(engine, _schema(store_url))["parcel_results"] == before["parcel_results"]
    assert store.read_setting("register") == "kept"


def test_the_measuring_crs_of_published_layers_goes_with_them_on_a_postgis_store(store_url, tmp_path):
    """An upload checked in a measuring CRS of its own, published into the schema: the schema keeps it with the
    layers (its runs measure in it before any records one), a snapshot keeps it with the layers it replaced, and the
    town's own settings stay."""
    from layers.sample import sample_town
    from layers.store import LAYERS_CRS

    store = open_store(store_url)
    store.write_layers(sample_town(60))
    store.write_setting("register", "kept")
    abroad = tmp_path / "abroad.gpkg"
    open_store(abroad).write_layers(sample_town(60, seed=7), measuring_crs="EPSG:32632")
    original = store.publish(abroad, who="pat", label="the Bellinge upload")
    assert store.read_setting(LAYERS_CRS) == "EPSG:32632" and store.read_setting("register") == "kept"
    bellinge = store.restore(original, who="pat")
    assert store.read_setting(LAYERS_CRS) is None and store.read_setting("register") == "kept"
    store.restore(bellinge, who="pat")
    assert store.read_setting(LAYERS_CRS) == "EPSG:32632" and store.read_setting("register") == "kept"


def test_the_profile_published_layers_were_checked_under_goes_with_them_on_a_postgis_store(store_url, tmp_path):
    """An upload checked under a profile, with values set on it, published into the schema before any run: the schema
    keeps the profile with the layers (a run takes it, as the command line says), a snapshot keeps it with the layers
    it replaced, and the town's own settings stay."""
    from layers.sample import sample_town
    from layers.store import layers_profile

    store = open_store(store_url)
    store.write_layers(sample_town(60), profile="fort-plain")
    store.write_setting("register", "kept")
    checked = tmp_path / "checked.gpkg"
    open_store(checked).write_layers(
        sample_town(60, seed=7), profile="wappinger", profile_settings={"mandate.distance_ft": "200"}
    )
    original = store.publish(checked, who="pat", label="the March upload")
    assert layers_profile(store_url) == ("wappinger", {"mandate.distance_ft": "200"})
    assert store.read_setting("register") == "kept"
    wappinger = store.restore(original, who="pat")
    assert layers_profile(store_url) == ("fort-plain", {}) and store.read_setting("register") == "kept"
    store.restore(wappinger, who="pat")
    assert layers_profile(store_url) == ("wappinger", {"mandate.distance_ft": "200"})
    store.write_layers(sample_town(60, seed=8), overwrite=True)  # layers written without a check: none kept
    assert layers_profile(store_url) == (None, {}) and store.read_setting("register") == "kept"


def test_notices_from_a_postgis_store_keep_their_register_beside_it(store_url, engine, tmp_path):
    """The town's first register goes in its own schema (<schema>_register), recorded in the store without the
    password; later commands find it from the store alone."""
    runner = Runner()
    runner.invoke("sample", "--out", store_url, "--parcels", "60", ok=True)
    runner.invoke("analyze", "--profile", "fort-plain", "--data", store_url, "--out", store_url, ok=True)
    # Refused for its town settings (a PostGIS store has no folder beside it for town.toml): no register schema is
    # made and none is recorded in the store, so the town has no register nobody issued from.
    refused = runner.invoke("notices", "issue", "--data", store_url, "--notice-date", "2027-03-01", "--out", tmp_path,
                            "--new")  # fmt: skip
    assert refused.exit_code == 2 and "no town settings file" in refused.output
    with engine.connect() as con:
        schema = _schema(store_url)
        made = con.execute(text("SELECT 1 FROM information_schema.schemata WHERE schema_name = :s"),
                           {"s": f"{schema}_register"}).scalar()  # fmt: skip
    assert made is None and open_store(store_url).read_setting("register") is None
    town = tmp_path / "town.toml"
    town.write_text(town_toml(), encoding="utf-8")
    issued = runner.invoke(
        "notices", "issue", "--data", store_url, "--notice-date", "2027-03-01", "--out", tmp_path, "--new",
        "--town", town,
    )  # fmt: skip
    assert issued.exit_code == 0, issued.output
    assert "sewerplan:sewerplan@" not in issued.output
    listed = runner.json("notices", "list", "--store", store_url)["notices"]
    with engine.connect() as con:
        schema = _schema(store_url)
        mandated = con.execute(text(f"SELECT count(*) FROM {schema}.parcel_results WHERE status = 'mandated'")).scalar()
        recorded = con.execute(text(f"SELECT value FROM {schema}.sewerplan_settings WHERE key = 'register'")).scalar()
        kept = con.execute(text(f"SELECT count(*) FROM {schema}_register.notices")).scalar()
    assert len(listed) == kept == mandated > 0
    # Recorded as a place only: no login (each user's own store URL supplies theirs) and no password.
    assert recorded.startswith("postgresql://127.0.0.1") and f"search_path%3D{schema}_register" in recorded


def test_a_web_run_on_a_postgis_store_holds_the_lock_and_writes_its_results(store_url, engine, tmp_path):
    """The map page's "Run": accepted once, a second refused while it runs, then served from the schema."""

    runner = Runner()
    runner.invoke("sample", "--out", store_url, "--parcels", "80", ok=True)
    runner.invoke("analyze", "--profile", "fort-plain", "--data", store_url, "--out", store_url, ok=True)
    app = make_app(store_url, tmp_path, LOCAL_MODE=True)
    client = app.test_client()
    client.get("/login")
    with client.session_transaction() as s:
        headers = {"X-CSRF-Token": s["csrf"]}
    first = client.post("/analysis/run", data={"profile": "poughkeepsie"}, headers=headers)
    assert first.status_code == 202, first.get_data(as_text=True)
    second = client.post("/analysis/run", data={"profile": "fort-plain"}, headers=headers)
    assert second.status_code == 409 and "in progress" in second.get_json()["error"]["message"]
    with pytest.raises(StoreBusyError):  # another process or machine is refused too, through the database
        store_writer(store_url, who="a planner elsewhere")
    job = wait_job(client, first.get_json(), 120)
    assert job["state"] == "done", job
    with engine.connect() as con:
        runs = con.execute(text(f"SELECT summary FROM {_schema(store_url)}.analysis_runs ORDER BY id")).scalars().all()
    assert [r["profile"] for r in runs] == ["fort-plain", "poughkeepsie"]
    assert client.get("/api/summary").get_json()["run"]["profile"] == "poughkeepsie"  # reloaded after the run
    with store_writer(store_url, who="next"):
        pass


def test_a_store_url_that_cannot_be_written_is_refused_before_the_analysis(town, pg_url):
    bad = pg_url.replace("sewerplan:sewerplan@", "sewerplan:hunter22@") + "#fort_plain"
    result = _analyze(town, bad)
    assert result.exit_code != 0 and "password authentication failed" in result.output
    assert "hunter22" not in result.output and "mandated" not in result.output  # no analysis ran
    for url, said in ((pg_url, "names no schema"), (f"{pg_url}#town.parcels", "is not a schema name")):
        result = _analyze(town, url)
        assert result.exit_code != 0 and said in " ".join(result.output.split())


def test_each_planner_and_viewer_opens_the_towns_register_with_their_own_login():
    """docs/postgis.md's county setup: planners log in as themselves and act as the planners' group role. The
    register the first planner made is recorded with no login, and each user's store URL supplies theirs."""
    from layers.postgis_store import PostGISStore

    def parts(url):
        from sqlalchemy.engine import make_url

        return make_url(url)

    first = PostGISStore("postgresql://ann:a-secret@db.county.example/gis?options=-crole%3Dplanners#fort_plain")
    recorded = first.recordable(first.register_location(first.default_register()))
    assert "ann" not in recorded and "a-secret" not in recorded and "planners" not in recorded
    assert parts(recorded).query["options"] == "-csearch_path=fort_plain_register"

    second = PostGISStore("postgresql://bo:b-secret@db.county.example/gis?options=-crole%3Dplanners#fort_plain")
    opened = parts(second.register_location(recorded))
    assert (opened.username, opened.password) == ("bo", "b-secret")
    assert opened.query["options"] == "-crole=planners -csearch_path=fort_plain_register"

    viewer = PostGISStore("postgresql://vi:v-secret@db.county.example/gis#fort_plain")
    seen = parts(viewer.register_location(recorded))
    assert (seen.username, seen.password, seen.query["options"]) == (
        "vi",
        "v-secret",
        "-csearch_path=fort_plain_register",
    )
    # A register recorded by an earlier version, with the first planner's name in it, is opened the same way.
    old = "postgresql://ann@db.county.example/gis?options=-csearch_path%3Dfort_plain_register"
    assert parts(second.register_location(old)).username == "bo"
    # Another server's register is left as it was recorded.
    elsewhere = "postgresql://ann@other.example/gis?options=-csearch_path%3Dx"
    assert second.register_location(elsewhere) == elsewhere


def test_a_schema_analysed_from_a_geopackage_holds_its_input_layers_and_traces(town, store_url, engine, tmp_path):
    """``analyze --data town.gpkg --out URL#schema``: the layers the run read are copied into the schema with the
    results (as the GeoPackage store gets them, tests/test_results_store.py), so the schema alone shows the mains
    and traces; a later run from the GeoPackage replaces the copies."""
    assert _analyze(town, store_url).exit_code == 0
    schema = _schema(store_url)
    with engine.connect() as con:
        for name in ("parcels", "mains", "manholes", "treatment_plants", "streets", "buildings"):
            assert con.execute(text(f'SELECT count(*) FROM "{schema}"."{name}"')).scalar() > 0, name
        parcel = con.execute(text(f'SELECT parcel_id FROM "{schema}".parcel_results LIMIT 1')).scalar()
    runner = Runner()
    assert runner.json("trace", "--data", store_url, "--parcel", parcel)["control_manhole"]
    client = make_app(store_url, tmp_path, LOCAL_MODE=True).test_client()
    assert client.get("/api/layers/mains?bbox=-180,-90,180,90&zoom=18").get_json()["features"]
    trace = client.get("/api/trace", query_string={"parcel": parcel})
    assert trace.status_code == 200, trace.get_data(as_text=True)
    assert _analyze(town, store_url).exit_code == 0


def test_a_schema_with_input_layers_of_its_own_is_not_written_from_elsewhere(town, store_url, engine):
    runner = Runner()
    runner.invoke("sample", "--out", store_url, "--parcels", "60", ok=True)
    result = _analyze(town, store_url)
    assert result.exit_code == 2 and "already holds input layers of its own" in " ".join(result.output.split())
    with engine.connect() as con:
        assert con.execute(text(f'SELECT count(*) FROM "{_schema(store_url)}".parcels')).scalar() < 300
        assert not con.execute(text("SELECT to_regclass(:t)"), {"t": f"{_schema(store_url)}.parcel_results"}).scalar()


def test_a_run_without_buildings_removes_the_last_runs_building_results(town, store_url, engine, tmp_path):
    """A later run from data without buildings left the earlier run's building_results (and the buildings copy)
    in the schema, and the map drew those verdicts beside the new parcels'."""
    import geopandas as gpd
    import pyogrio

    assert _analyze(town, store_url).exit_code == 0
    data = tmp_path / "no-buildings"
    data.mkdir()
    for name, geometry in pyogrio.list_layers(str(town)):
        if name != "buildings" and geometry:
            gpd.read_file(town, layer=name).to_file(data / f"{name}.gpkg", layer=name)
    assert _analyze(data, store_url).exit_code == 0
    schema = _schema(store_url)
    with engine.connect() as con:
        for name in ("building_results", "buildings"):
            assert not con.execute(text("SELECT to_regclass(:t)"), {"t": f"{schema}.{name}"}).scalar(), name
        assert con.execute(text(f'SELECT count(*) FROM "{schema}".parcel_results')).scalar() == 300
    client = make_app(store_url, tmp_path, LOCAL_MODE=True).test_client()
    assert client.get("/api/layers/parcels?bbox=-180,-90,180,90&zoom=18").status_code == 200


def test_a_postgis_store_keeps_the_connected_list_its_run_read(town, store_url, tmp_path):
    """The kept copy of the connected-parcels list is written in the run's transaction, as in a GeoPackage store
    (tests/test_results_store.py): a moved CSV no longer stops the schema's traces and runs."""
    import geopandas as gpd

    ids = gpd.read_file(town, layer="parcels")["parcel_id"].head(4)
    billing = tmp_path / "billing.csv"
    ids.to_frame().to_csv(billing, index=False)
    assert _analyze(town, store_url, "--connected", billing).exit_code == 0
    billing.unlink()
    runner = Runner()
    again = runner.invoke("analyze", "--data", store_url, "--out", store_url, ok=True)
    assert "the copy the store kept at its latest run (4 parcel IDs) is used" in " ".join(again.stderr.split())


def test_reading_some_result_columns_gives_them_as_the_whole_read_does(town, store_url):
    """As a GeoPackage store: the columns asked for, in that order, in the results' row order, without geometry."""
    from layers.errors import LayerError

    assert _analyze(town, store_url).exit_code == 0
    store = open_store(store_url)
    whole = store.read_results()
    some = store.read_results(columns=("status", "parcel_id"))
    assert list(some.columns) == ["status", "parcel_id"] and "geometry" not in some
    assert some.equals(whole[["status", "parcel_id"]].reset_index(drop=True))
    with pytest.raises(LayerError, match="has no column no_such_column: run the analysis again"):
        store.read_results(columns=("parcel_id", "no_such_column"))


def test_the_results_columns_are_listed_from_the_catalogue_as_a_geopackage_lists_them(town, store_url, monkeypatch):
    """``violations`` read the results once for each optional column it might lack (the occupant's city, state and
    ZIP code, a private system), each from its own snapshot: the store lists the columns from the catalogue now,
    without reading a row, as a whole read gives them (no ``fid`` key, no geometry), and each one reads."""
    from layers.postgis_store import PostGISStore

    store = open_store(store_url)
    assert store.results_columns() is None  # no schema yet, no run
    assert _analyze(town, store_url).exit_code == 0
    whole = store.read_results()

    def no_read(*_args, **_kwargs):
        raise AssertionError("a row of the table was read")

    monkeypatch.setattr(PostGISStore, "read_columns", no_read)
    monkeypatch.setattr(PostGISStore, "_read_table", no_read)
    listed = store.results_columns()
    assert listed == [c for c in whole.columns if c != whole.geometry.name]
    assert {"parcel_id", "status", "site_city", "site_zip"} <= set(listed) and not {"fid", "geom"} & set(listed)
    assert store.layer_columns("no_such_layer") == []
    monkeypatch.undo()
    assert list(store.read_results(columns=listed).columns) == listed  # every column listed is one a read gives


def test_zip_codes_given_as_numbers_are_text_in_a_postgis_store(store_url, engine, tmp_path):
    """A tax roll with ZIP codes as numbers (Manchester, VT's 05255 read as 5255): the GeoPackage, GeoJSON, GeoParquet
    and CSV results wrote them as text with their zeros, but the PostGIS store made them bigint columns, which QGIS
    and psql showed as 5255, in the results and in the copy of the parcels."""
    import pyogrio

    from layers.sample import sample_town
    from layers.write import write_layers

    town = sample_town(60)
    parcels = town.pop("parcels")
    parcels["mail_zip"] = 5255
    parcels["site_zip"] = 12203.0
    write_layers(str(tmp_path / "town.gpkg"), town)
    pyogrio.write_dataframe(parcels, tmp_path / "town.gpkg", layer="parcels")  # numbers, as a tax roll's DBF
    assert pyogrio.read_dataframe(tmp_path / "town.gpkg", layer="parcels")["mail_zip"].dtype.kind == "i"
    assert _analyze(tmp_path / "town.gpkg", store_url).exit_code == 0
    schema = _schema(store_url)
    with engine.connect() as con:
        for table in ("parcel_results", "parcels"):
            types = dict(
                con.execute(
                    text(
                        "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = :s "
                        "AND table_name = :t AND column_name IN ('mail_zip', 'site_zip')"
                    ),
                    {"s": schema, "t": table},
                ).all()
            )
            assert types == {"mail_zip": "text", "site_zip": "text"}, table
            found = con.execute(text(f'SELECT DISTINCT mail_zip, site_zip FROM "{schema}"."{table}"')).all()
            assert found == [("05255", "12203")], table


def test_a_run_in_another_measuring_crs_replaces_the_results_in_the_same_schema(town, store_url, engine):
    """Analysed again with --crs (a Vermont town first measured in New York East, then in UTM): the second run
    stopped with "Geometry SRID (2260) does not match column SRID (32618)", the tables keeping the first run's
    SRID, so the schema could never be measured in another CRS."""
    assert _analyze(town, store_url).exit_code == 0
    again = _analyze(town, store_url, "--crs", "EPSG:32618")
    assert again.exit_code == 0, again.output
    schema = _schema(store_url)
    with engine.connect() as con:
        for name in (*RESULTS, "parcels", "mains"):
            srid = con.execute(text("SELECT Find_SRID(:s, :t, 'geom')"), {"s": schema, "t": name}).scalar()
            found = con.execute(text(f'SELECT DISTINCT ST_SRID(geom) FROM "{schema}"."{name}"')).scalars().all()
            assert srid == 32618 and found == [32618], name
        assert con.execute(text(f'SELECT count(*) FROM "{schema}".parcel_results')).scalar() == 300


def test_a_schema_analysed_in_place_stores_dates_and_counts_and_mails_numeric_zip_codes(store_url, engine, tmp_path):
    """The deadline was text and living units double precision (a GeoPackage's TEXT and REAL), which QGIS neither
    filters by date nor counts with; and a schema whose parcels hold mailing ZIP codes as numbers (bigint 501),
    analysed in place, held every letter back: "the mailing ZIP code '501' is not a US ZIP code"."""
    runner = Runner()
    runner.invoke("sample", "--out", store_url, "--parcels", "60", ok=True)
    schema = _schema(store_url)
    with engine.begin() as con:  # the tax roll's ZIP codes as numbers, Holtsville's 00501 read as 501
        con.execute(text(f"UPDATE {schema}.parcels SET mail_zip = '00501', mail_state = 'NY'"))
        con.execute(text(f"ALTER TABLE {schema}.parcels ALTER COLUMN mail_zip TYPE bigint USING mail_zip::bigint"))
    day = "2027-03-01"
    runner.invoke(
        "analyze", "--profile", "fort-plain", "--data", store_url, "--out", store_url, "--notice-date", day, ok=True
    )
    with engine.connect() as con:
        types = dict(
            con.execute(
                text(
                    "SELECT table_name || '.' || column_name, data_type FROM information_schema.columns "
                    "WHERE table_schema = :s AND column_name IN ('deadline', 'units')"
                ),
                {"s": schema},
            ).all()
        )
        deadlines = set(
            con.execute(text(f"SELECT DISTINCT deadline::text FROM {schema}.parcel_results WHERE deadline IS NOT NULL"))
            .scalars()
            .all()
        )
    assert types["parcel_results.deadline"] == "date"
    assert types["parcel_results.units"] == types["building_results.units"] == "bigint"
    assert deadlines == {"2027-05-30"}
    back = open_store(store_url).read_results(columns=("parcel_id", "deadline"))
    assert set(back["deadline"].dropna()) == {"2027-05-30"}  # read back as the text the analysis gives
    preview = runner.json("notices", "preview", "--data", store_url, "--notice-date", day)
    assert preview["notices"] and not [h for h in preview["held"] if "ZIP" in h["why"]], preview["held"]
    assert {n["deadline"] for n in preview["notices"]} == {"2027-05-30"}
