"""A tester's findings on PostGIS stores, against a real PostgreSQL/PostGIS server (CI starts one; see .ci/run).

A write meeting a lock another session holds (QGIS editing, psql with a transaction open) is refused within
seconds, naming it; ``sample --overwrite`` leaves the same clean store a GeoPackage's does; two towns whose schema
names begin alike get registers of their own; a run that fails into a new schema leaves no schema behind.
"""

from __future__ import annotations

import re
import threading
import time
import uuid
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from tests.conftest import Runner

pytestmark = pytest.mark.postgres
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


def _drop_schemas(engine, *patterns: str) -> None:
    with engine.begin() as con:
        for pattern in patterns:
            for name in con.execute(
                text("SELECT nspname FROM pg_namespace WHERE nspname LIKE :p"), {"p": pattern}
            ).scalars():
                con.execute(text(f'DROP SCHEMA "{name}" CASCADE'))
        if con.execute(text("SELECT to_regclass('public.layer_styles')")).scalar():
            for pattern in patterns:
                con.execute(text("DELETE FROM public.layer_styles WHERE f_table_schema LIKE :p"), {"p": pattern})


@pytest.fixture
def store_url(pg_url, engine):
    """A fresh schema for one test's store; dropped afterwards with its register, snapshots and QGIS styles."""
    schema = f"fix_{uuid.uuid4().hex[:8]}"
    yield f"{pg_url}#{schema}"
    _drop_schemas(engine, schema, f"{schema}\\_%")


def _schema(url: str) -> str:
    return url.partition("#")[2]


def _analyze(town, url, *extra):
    return Runner().invoke("analyze", "--profile", "fort-plain", "--data", town, "--out", url, *extra)


def _tables(engine, schema: str) -> set[str]:
    with engine.connect() as con:
        return set(con.execute(text("SELECT tablename FROM pg_tables WHERE schemaname = :s"), {"s": schema}).scalars())


@contextmanager
def _held(engine, statement: str, *, at_most_s: float = 25.0):
    """A second session holding a lock (``statement`` in a transaction left open, as QGIS's edit session or psql's
    ``BEGIN`` does) until the block ends, or ``at_most_s`` has passed: a write that queued behind it, rather than
    being refused, then goes through (and its test fails) instead of hanging."""
    holder = engine.connect()
    holder.execute(text("SET application_name = 'QGIS'"))
    holder.execute(text(statement))
    pid = holder.execute(text("SELECT pg_backend_pid()")).scalar()

    def end() -> None:
        with engine.connect() as con:
            con.execute(text("SELECT pg_terminate_backend(:p)"), {"p": pid})

    timer = threading.Timer(at_most_s, end)
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        with suppress(Exception):
            holder.rollback()
        holder.close()


def _fingerprint(engine, schema: str) -> dict:
    """What the store's results are: each table's rows hashed, and the run record."""
    with engine.connect() as con:
        found = {
            name: con.execute(
                text(f'SELECT count(*), md5(string_agg(t::text, \'|\' ORDER BY fid)) FROM "{schema}"."{name}" t')
            ).one()
            for name in RESULTS
        }
        found["runs"] = con.execute(text(f'SELECT count(*), max(id) FROM "{schema}".analysis_runs')).one()
    return found


# -- a lock another session holds: refused within seconds, saying so ----------------------------------------------


def test_a_row_lock_held_by_another_session_refuses_the_run_within_seconds(town, store_url, engine, monkeypatch):
    """psql's ``BEGIN; UPDATE parcel_results ...`` left open (or QGIS editing the layer) made a run wait forever,
    silently, and its DELETE kept waiting on the server after the client was gone."""
    import layers.postgis_store as pg

    assert _analyze(town, store_url).exit_code == 0
    schema = _schema(store_url)
    before = _fingerprint(engine, schema)
    monkeypatch.setattr(pg, "LOCK_WAIT_S", 1.0)
    with _held(engine, f'UPDATE "{schema}".parcel_results SET status = status WHERE fid = 1'):
        started = time.monotonic()
        result = _analyze(town, store_url, "--notice-date", "2027-06-01")
        took = time.monotonic() - started
    assert result.exit_code != 0
    said = " ".join(result.output.split())
    assert "another session (QGIS as " in said and f"holds a lock on the table {schema}.parcel_results" in said
    assert "close that QGIS edit session" in said and "previous results are as they were" in said
    assert took < 20  # the analysis itself and one second's wait, not until the lock is let go
    assert _fingerprint(engine, schema) == before
    assert _analyze(town, store_url, "--notice-date", "2027-06-01").exit_code == 0  # the lock let go: it runs


def test_a_table_lock_held_by_another_session_refuses_publishing(town, store_url, engine, monkeypatch, tmp_path):
    """A session reading a layer in an open transaction blocks the DROP a publish makes: refused the same way
    (not said to be "a view that depends on it"), the store's layers as they were."""
    import layers.postgis_store as pg
    from layers.sample import sample_town
    from layers.store import open_store
    from layers.write import write_layers

    assert _analyze(town, store_url).exit_code == 0
    schema = _schema(store_url)
    before = _fingerprint(engine, schema)
    upload = tmp_path / "upload.gpkg"
    write_layers(str(upload), {k: v for k, v in sample_town(60).items() if k in ("parcels", "mains")})
    monkeypatch.setattr(pg, "LOCK_WAIT_S", 1.0)
    with (
        _held(engine, f'LOCK TABLE "{schema}".buildings IN ACCESS SHARE MODE'),
        pytest.raises(pg.LayerError, match=rf"holds a lock on the table {schema}\.buildings") as caught,
    ):
        open_store(store_url).publish(upload, who="pat", label="an upload")
    assert "depends on" not in str(caught.value)
    assert _fingerprint(engine, schema) == before
    assert "buildings" in _tables(engine, schema)


# -- sample --overwrite: the same clean store a GeoPackage's gives --------------------------------------------------


def test_sample_overwrite_leaves_only_the_sample_layers_and_the_countys_own_tables(town, store_url, engine):
    """After ``sample --overwrite`` an analysed PostGIS store kept the old village's results and run record (the map
    and /api/summary showed them); a GeoPackage's file is replaced whole. The tables sewerplan did not write stay."""
    from layers.store import open_store

    schema = _schema(store_url)
    assert _analyze(town, store_url).exit_code == 0
    with engine.begin() as con:  # the county's own: a laterals layer loaded with ogr2ogr, and a table of notes
        con.execute(text(f'CREATE TABLE "{schema}".laterals (ogc_fid serial PRIMARY KEY, pipe_id text)'))
        con.execute(text(f'CREATE TABLE "{schema}".county_notes (note text)'))
    assert {*RESULTS, "analysis_runs"} <= _tables(engine, schema)

    result = Runner().invoke("sample", "--out", store_url, "--parcels", "120", "--overwrite")
    assert result.exit_code == 0, result.output
    layers = {"parcels", "buildings", "streets", "mains", "manholes", "treatment_plants"}
    assert _tables(engine, schema) - {"sewerplan_version", "sewerplan_writer", "sewerplan_settings"} == layers | {
        "laterals",
        "county_notes",
    }
    store = open_store(store_url)
    assert store.latest_run() is None
    with engine.connect() as con:
        styled = set(
            con.execute(
                text("SELECT f_table_name FROM public.layer_styles WHERE f_table_schema = :s"), {"s": schema}
            ).scalars()
        )
    assert styled == layers  # no style left for a table that is gone
    result = _analyze(store_url, store_url)  # the sample village, analysed afresh in its schema
    assert result.exit_code == 0, result.output
    assert _fingerprint(engine, schema)["parcel_results"][0] == len(open_store(store_url).read_layer("parcels"))


# -- a register of its own for every store, however long its schema's name -----------------------------------------


@pytest.fixture
def long_prefix(engine):
    """54 characters two towns' schema names begin with (a county's naming scheme); their schemas dropped after."""
    prefix = f"fix_{uuid.uuid4().hex[:8]}_".ljust(54, "x")
    yield prefix
    _drop_schemas(engine, f"{prefix[:30]}%")


def test_two_towns_whose_schema_names_begin_alike_keep_registers_of_their_own(long_prefix, pg_url, engine, tmp_path):
    """The register's schema was ``schema[:54] + "_register"``: the second town's ``issue --new`` found the first's
    register and said "0 notice(s) issued (N already noticed)"."""
    from layers.store import open_store
    from tests.conftest import town_toml

    town = tmp_path / "town.toml"
    town.write_text(town_toml(), encoding="utf-8")
    runner, registers = Runner(), []
    for suffix in ("a", "b"):
        url = f"{pg_url}#{long_prefix}_{suffix}"
        runner.invoke("sample", "--out", url, "--parcels", "60", ok=True)
        runner.invoke("analyze", "--profile", "fort-plain", "--data", url, "--out", url, ok=True)
        issued = runner.invoke("notices", "issue", "--data", url, "--notice-date", "2027-03-01", "--out",
                               tmp_path / suffix, "--new", "--town", town)  # fmt: skip
        assert issued.exit_code == 0, issued.output
        assert re.search(r"[1-9]\d* notice\(s\) issued \(0 already noticed\)", issued.output), issued.output
        registers.append(open_store(url).register_schema())
    assert registers[0] != registers[1] and all(len(name) <= 63 for name in registers)
    with engine.connect() as con:
        for name in registers:
            assert con.execute(text(f'SELECT count(*) FROM "{name}".notices')).scalar() > 0


def test_a_short_schema_name_keeps_the_register_name_it_always_had():
    from layers.store import open_store

    for schema in ("fort_plain", "t" * 54):
        assert open_store(f"postgresql://db/county#{schema}").register_schema() == f"{schema}_register"
    long = open_store(f"postgresql://db/county#{'t' * 55}").register_schema()
    assert len(long) == 63 and long.endswith("_register") and long != f"{'t' * 54}_register"


def test_a_register_schema_that_is_another_stores_is_refused_not_shared(long_prefix, pg_url, engine):
    """A register made before by the name cut to 54 characters, recorded in another town's store (or a schema
    marked as another store's register), is never taken as this town's."""
    from layers.postgis_store import _REGISTER_MARK
    from layers.register import STORE_SETTING
    from layers.store import LayerError, open_store

    first = open_store(f"{pg_url}#{long_prefix}_a")  # its register was made under the old, cut name
    second = open_store(f"{pg_url}#{long_prefix}")  # 54 characters: its register's name is that same one
    legacy = f"{long_prefix}_register"
    assert second.register_schema() == legacy
    first.write_setting(STORE_SETTING, first.recordable(first._register_url(legacy, login=False)))
    with engine.begin() as con:
        con.execute(text(f'CREATE SCHEMA "{legacy}"'))
    location = second.register_location(second.default_register())
    with pytest.raises(LayerError, match=rf"holds the register of another store, the schema {long_prefix}_a\b"):
        second.prepare_register(location)

    third = open_store(f"{pg_url}#{long_prefix[:50]}")  # marked by its schema's comment as another store's
    with engine.begin() as con:
        con.execute(text(f'CREATE SCHEMA "{third.register_schema()}"'))
        said = f"{_REGISTER_MARK}{long_prefix}_b (its notices, batches and letters)."
        con.execute(text(f"COMMENT ON SCHEMA \"{third.register_schema()}\" IS '{said}'"))
    with pytest.raises(LayerError, match=rf"the schema {long_prefix}_b\b"):
        third.prepare_register(third.register_location(third.default_register()))
    own = open_store(f"{pg_url}#{long_prefix[:40]}")  # its own: made, marked as its own, taken again
    own.prepare_register(own.register_location(own.default_register()))
    own.prepare_register(own.register_location(own.default_register()))


# -- a run that fails into a new schema leaves none behind ----------------------------------------------------------


def _schema_exists(engine, schema: str) -> bool:
    with engine.connect() as con:
        return bool(con.execute(text("SELECT to_regnamespace(:s) IS NOT NULL"), {"s": schema}).scalar())


def test_a_run_that_fails_into_a_new_schema_leaves_no_schema_behind(town, store_url, engine, monkeypatch):
    """It left an empty schema holding only ``sewerplan_writer``, which looked like a store."""
    import layers.postgis_store as pg

    schema = _schema(store_url)

    def failing(con, table, prepared):
        raise OSError("the disk is full")

    monkeypatch.setattr(pg, "_copy", failing)
    result = _analyze(town, store_url)
    assert result.exit_code != 0 and "the disk is full" in result.output
    assert not _schema_exists(engine, schema)
    monkeypatch.undo()
    assert _analyze(town, store_url).exit_code == 0  # one that succeeds keeps its schema, and its lock's record
    assert {*RESULTS, "analysis_runs", "sewerplan_writer"} <= _tables(engine, schema)


def test_a_schema_the_writer_did_not_create_is_kept_whatever_happens(store_url, engine):
    """A schema the county made for the store (CREATE SCHEMA, as the docs advise a role that may not) is its own."""
    from layers.store import open_store

    schema = _schema(store_url)
    with engine.begin() as con:
        con.execute(text(f'CREATE SCHEMA "{schema}"'))
    with open_store(store_url).writer(who="pat"):
        pass
    assert _schema_exists(engine, schema)
    with engine.begin() as con:
        con.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
    with open_store(store_url).writer(who="pat"):  # created by the writer, and a setting written meanwhile: kept
        open_store(store_url).write_setting("register", "kept")
    assert _schema_exists(engine, schema) and open_store(store_url).read_setting("register") == "kept"


def test_a_schema_left_by_a_writer_killed_mid_run_is_dropped_by_the_next_that_writes_nothing(town, store_url, engine):
    """``kill -9`` of a run that had just created its schema left it holding only ``sewerplan_writer``: it looked like
    a store, and no later run dropped it (the schema was no longer "created" by them)."""
    import os
    import signal
    import subprocess
    import sys

    from layers.store import open_store

    schema = _schema(store_url)
    hold = (
        "import sys, time\nfrom layers.store import open_store\n"
        "open_store(sys.argv[1]).writer(who='killed').__enter__()\nprint('held', flush=True)\ntime.sleep(120)\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", hold, store_url], stdout=subprocess.PIPE, text=True, cwd=Path(__file__).parent.parent
    )
    try:
        assert child.stdout.readline().strip() == "held"
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        child.stdout.close()
    assert _tables(engine, schema) == {"sewerplan_writer"}  # what the killed run left
    deadline = time.monotonic() + 20  # the server notices the killed client's connection gone, and frees its lock
    while True:
        try:
            writer = open_store(store_url).writer(who="pat")
            break
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    writer.release()
    assert not _schema_exists(engine, schema)
    assert _analyze(town, store_url).exit_code == 0  # and a run that succeeds there keeps it
    with open_store(store_url).writer(who="pat"):
        pass
    assert {*RESULTS, "sewerplan_writer"} <= _tables(engine, schema)
