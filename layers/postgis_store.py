"""The PostGIS store: a town's layers and results in one schema of a PostgreSQL/PostGIS database.

``postgresql://user@host/db#schema`` (the password in the URL, or better in ``~/.pgpass`` or ``PGPASSWORD``). The
schema is created by the first run written to it. What it holds, beside the input layers found by name:

- ``parcel_results``, ``measuring_lines``, ``connection_points``, ``building_results``: one table each, with an
  integer primary key ``fid``, the geometry in ``geom`` typed with its SRID (``geometry(MultiPolygon, 2260)``), a
  GiST index, and a comment on the table and on each column saying what it means (``layers.legend``).
- ``analysis_runs`` (``id``, ``run_at``, ``summary`` as JSON), ``sewerplan_settings`` (the notice register it
  records), ``sewerplan_version`` (a counter the web app watches), ``sewerplan_writer`` (who holds the writer lock).
- QGIS's styles, in ``public.layer_styles`` where QGIS looks for them (``layers.qgis_styles``).

A run writes all of it in one transaction: until it commits, every reader sees the previous results; a run that
fails or is killed midway leaves them as they were. Tables are kept from run to run (their rows replaced, a column
added or dropped only when the results' columns change), so the grants on them and the views a county builds on
them survive a run. Writers are one at a time: ``writer`` takes a session advisory lock in the database (refused at
once with the same sentence the GeoPackage lock gives, naming who holds it), and each write transaction also takes
a transaction advisory lock, so two writes can never interleave even if a caller skipped the first.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
import re
import threading
import time
from collections.abc import Sequence
from contextlib import contextmanager
from pathlib import Path

import geopandas as gpd
import numpy as np
import pandas as pd
import pyarrow as pa
import pyogrio
import shapely

from layers.atomic import StoreBusyError, StoreWriter, busy_message
from layers.errors import LayerError, quote_password, redact_url, split_fragment
from layers.legend import LAYER_DESCRIPTIONS, column_description
from layers.read import LAYER_NAMES, read_ogr
from layers.store import (
    DATA_SETTINGS,
    RUNS_TABLE,
    SETTINGS_TABLE,
    GeoPackageStore,
    Store,
    checked_settings,
    require_columns,
)
from layers.write import BUILDINGS_LAYER, LINES_LAYER, POINTS_LAYER, RESULT_LAYER, result_layers, stored_column

_SCHEMA = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_NAME_MAX = 63  # PostgreSQL's longest identifier (NAMEDATALEN - 1 bytes; a schema name here is ASCII)
_REGISTER_SUFFIX = "_register"
# The comment on a register's schema naming the store it belongs to: another store's default never takes it.
_REGISTER_MARK = "sewerplan: the notice register of the store "
# The comment on a store's schema that sewerplan created (the first writer): a schema holding nothing else when a
# writer is done is sewerplan's to drop, even where the writer that created it was killed before it could.
_CREATED_MARK = "sewerplan: created for a store by its first run"
_SNAPSHOT = re.compile(r"^[a-z_][a-z0-9_]*__prev_\d{8}_\d{6}_\d{6}$")
GEOMETRY = "geom"
CHUNK_ROWS = 50_000
# How long a write waits for a lock another session holds on one of the store's tables (a QGIS edit session, a
# transaction left open in psql or pgAdmin) before it is refused: writers are refused, never queued behind them.
LOCK_WAIT_S = 5.0
# PostgreSQL's "lock_not_available": a statement gave up waiting for a lock (lock_timeout).
_LOCK_NOT_AVAILABLE = "55P03"
# Every name a store's own map layer may have: results, input layers by any name they are found by, reports.
KNOWN_LAYERS = frozenset(
    {RESULT_LAYER, LINES_LAYER, POINTS_LAYER, BUILDINGS_LAYER, "network_report"}
    | set(LAYER_NAMES)
    | {name for names in LAYER_NAMES.values() for name in names}
)
_ENGINES: dict[str, object] = {}
_ENGINES_LOCK = threading.Lock()


def _engine(url: str):
    """One pooled SQLAlchemy engine per database URL in this process (the web app asks on every request)."""
    from sqlalchemy import create_engine

    with _ENGINES_LOCK:
        engine = _ENGINES.get(url)
        if engine is None:
            engine = create_engine(quote_password(url), pool_size=2, max_overflow=8, pool_pre_ping=True)
            _ENGINES[url] = engine
        return engine


def _options(parts) -> list[str]:
    """A URL's libpq ``options`` as a list (``-crole=planners``, ``-csearch_path=x``)."""
    value = parts.query.get("options")
    values = value if isinstance(value, tuple) else ((value,) if value else ())
    return [o for v in values for o in str(v).split()]


def _ident(name: str) -> str:
    """A quoted SQL identifier."""
    return '"' + str(name).replace('"', '""') + '"'


def _text(sql: str):
    from sqlalchemy import text

    return text(sql)


def _literal(con, value: str) -> str:
    """A string as an SQL literal, quoted by the driver (COMMENT takes no bound parameters)."""
    from psycopg import sql

    return sql.Literal(value).as_string(con.connection.driver_connection).replace(":", "\\:")


def _is_lock_timeout(exc: BaseException) -> bool:
    """The error is PostgreSQL's giving up on a lock another session holds (``lock_timeout``)."""
    orig = getattr(exc, "orig", None) or exc
    return getattr(orig, "sqlstate", None) == _LOCK_NOT_AVAILABLE


def _locked_table(exc: BaseException) -> str | None:
    """The table a lock timeout was waiting on, as PostgreSQL names it in its context (``relation "X"``)."""
    orig = getattr(exc, "orig", None) or exc
    diag = getattr(orig, "diag", None)
    parts = (getattr(diag, "context", None), getattr(diag, "message_primary", None))
    said = " ".join(str(part or "") for part in parts)
    found = re.search(r'relation "([^"]+)"', said)
    return found.group(1) if found else None


def _lock_key(schema: str, purpose: str) -> int:
    """A stable 64-bit advisory lock key for one schema and purpose (the database scopes it)."""
    digest = hashlib.blake2b(f"sewerplan store {purpose} {schema}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


class PostGISStore(Store):
    """A store in one PostGIS schema (see the module docstring)."""

    kind = "PostGIS"

    def __init__(self, location: str):
        super().__init__(location)
        url, schema = split_fragment(str(location))
        shown = redact_url(url)
        if not schema:
            raise LayerError(
                f"The PostGIS store {shown} names no schema: give the schema the town's store lives in after '#', "
                f"e.g. {shown}#sewerplan (it is created by the first run written to it)."
            )
        if not _SCHEMA.match(schema):
            raise LayerError(
                f"{schema!r} is not a schema name sewerplan uses for a store: lower-case letters, digits and _ "
                "(at most 63), starting with a letter or _, e.g. fort_plain. A schema is the store; a table is "
                "not given here."
            )
        self.url = url.replace("postgres://", "postgresql://", 1)
        self.schema = schema
        self._q = _ident(schema)

    @property
    def label(self) -> str:
        return f"{redact_url(self.url)}#{self.schema}"

    @property
    def short_name(self) -> str:
        return self.schema

    # -- connections

    @contextmanager
    def _read(self):
        """A read-only connection on one snapshot (REPEATABLE READ): layers read together belong together."""
        try:
            with _engine(self.url).connect() as con:
                con = con.execution_options(isolation_level="REPEATABLE READ")
                with con.begin():
                    from sqlalchemy import text

                    con.execute(text("SET TRANSACTION READ ONLY"))
                    yield con
        except LayerError:
            raise
        except Exception as exc:
            raise LayerError(self._says("Cannot read", exc)) from exc

    def _says(self, doing: str, exc: Exception) -> str:
        reason = " ".join(redact_url(self.url, str(getattr(exc, "orig", None) or exc)).split())
        return f"{doing} the PostGIS store {self.label}: {reason}"

    def _scalar(self, sql: str, **params):
        from sqlalchemy import text

        with self._read() as con:
            return con.execute(text(sql), params).scalar()

    # -- reading

    def exists(self) -> bool:
        return bool(self._scalar("SELECT to_regnamespace(:s) IS NOT NULL", s=self.schema))

    def _geometry_tables(self, con, schema: str | None = None) -> dict[str, tuple[str, str, int]]:
        """Each table of the schema with a geometry column: (that column, its type in capitals, its SRID).

        Read from the catalogue for this schema alone, not from PostGIS's ``geometry_columns`` view: that view
        opens every table of the database, and fails while another session drops one of them.
        """
        from sqlalchemy import text

        rows = con.execute(
            text(
                "SELECT DISTINCT ON (c.relname) c.relname, a.attname, upper(postgis_typmod_type(a.atttypmod)), "
                "postgis_typmod_srid(a.atttypmod) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "JOIN pg_attribute a ON a.attrelid = c.oid WHERE n.nspname = :s AND c.relkind IN ('r', 'v', 'm', 'p') "
                "AND a.attnum > 0 AND NOT a.attisdropped AND a.atttypid = 'geometry'::regtype "
                "ORDER BY c.relname, a.attnum"
            ),
            {"s": schema or self.schema},
        ).all()
        found = {}
        for table, geom, kind, srid in rows:
            if not srid:  # a column without a declared SRID: its features'
                srid = con.execute(
                    text(
                        f"SELECT ST_SRID({_ident(geom)}) FROM {_ident(schema or self.schema)}.{_ident(table)} "
                        f"WHERE {_ident(geom)} IS NOT NULL LIMIT 1"
                    )
                ).scalar()
            found[str(table)] = (str(geom), str(kind), int(srid or 0))
        return found

    def _has_table(self, con, name: str) -> bool:
        from sqlalchemy import text

        found = con.execute(text("SELECT to_regclass(:t)"), {"t": f"{self._q}.{_ident(name)}"}).scalar()
        return found is not None

    def layer_names(self) -> list[str]:
        with self._read() as con:
            names = list(self._geometry_tables(con))
            if self._has_table(con, RUNS_TABLE):
                names.append(RUNS_TABLE)
        return names

    def layer_counts(self) -> dict[str, int]:
        from sqlalchemy import text

        with self._read() as con:
            names = list(self._geometry_tables(con)) + ([RUNS_TABLE] if self._has_table(con, RUNS_TABLE) else [])
            return {
                name: int(con.execute(text(f"SELECT count(*) FROM {self._q}.{_ident(name)}")).scalar())
                for name in names
            }

    def read_layer(self, name: str) -> gpd.GeoDataFrame:
        with self._read() as con:
            return self._read_table(con, self.schema, name)

    def read_columns(self, name: str, columns: Sequence[str]) -> pd.DataFrame:
        from sqlalchemy import text

        with self._read() as con:
            listed = self._columns(con, self.schema, name)
            if not listed:
                raise LayerError(f"The PostGIS store {self.label} has no layer {name}.")
            require_columns(listed, columns, f"The layer {name} of {self.label}")
            order = " ORDER BY fid" if "fid" in listed else ""
            sql = f"SELECT {', '.join(_ident(c) for c in columns)} FROM {_ident(self.schema)}.{_ident(name)}{order}"
            return pd.read_sql(text(sql), con)

    def layer_columns(self, name: str) -> list[str]:
        """From the catalogue, as ``read_columns`` checks a read against: the table's columns but ``fid`` and its
        geometry (none for a table the schema lacks)."""
        with self._read() as con:
            listed = self._columns(con, self.schema, name)
        return [c for c, kind in listed.items() if c != "fid" and not kind.startswith("geometry")]

    def _read_layers(self, names) -> dict[str, gpd.GeoDataFrame]:
        with self._read() as con:
            present = self._geometry_tables(con)
            return {name: self._read_table(con, self.schema, name, present) for name in names if name in present}

    def _read_table(self, con, schema: str, name: str, present: dict | None = None) -> gpd.GeoDataFrame:
        """A table as a GeoDataFrame, without the ``fid`` key sewerplan adds (a GeoPackage hides it too)."""
        from sqlalchemy import text

        if present is None:
            present = self._geometry_tables(con, schema)
        if name not in present:
            raise LayerError(f"The PostGIS store {self.label} has no layer {name}.")
        geom = present[name][0]
        listed = [
            str(c)
            for c in con.execute(
                text(
                    "SELECT column_name FROM information_schema.columns WHERE table_schema = :s AND table_name = :t "
                    "ORDER BY ordinal_position"
                ),
                {"s": schema, "t": name},
            ).scalars()
        ]
        columns = ", ".join(_ident(c) for c in listed if c != "fid")
        order = " ORDER BY fid" if "fid" in listed else ""
        sql = f"SELECT {columns} FROM {_ident(schema)}.{_ident(name)}{order}"
        return gpd.read_postgis(text(sql), con, geom_col=geom)

    def _columns(self, con, schema: str, name: str) -> dict[str, str]:
        """A table's columns and their types as PostgreSQL writes them (``geometry(MultiPolygon,2260)``)."""
        from sqlalchemy import text

        rows = con.execute(
            text(
                "SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a "
                "WHERE a.attrelid = to_regclass(:t) AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum"
            ),
            {"t": f"{_ident(schema)}.{_ident(name)}"},
        ).all()
        return {str(n): str(t) for n, t in rows}

    def latest_run(self) -> dict | None:
        from sqlalchemy import text

        try:
            with self._read() as con:
                if not self._has_table(con, RUNS_TABLE):
                    return None
                row = con.execute(
                    text(
                        f"SELECT to_char(run_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS'), summary::text "
                        f"FROM {self._q}.{RUNS_TABLE} ORDER BY id DESC LIMIT 1"
                    )
                ).first()
        except LayerError:
            if not self.exists():
                return None
            raise
        if row is None:
            return None
        return {"run_at": row[0], **json.loads(row[1])}

    def version(self) -> float:
        """The store's write counter, and the count of rows changed in its tables (a planner's edit in QGIS too)."""
        from sqlalchemy import text

        try:
            with self._read() as con:
                if not self._has_table(con, "sewerplan_version"):
                    counter = 0 if con.execute(text("SELECT to_regnamespace(:s)"), {"s": self.schema}).scalar() else -1
                else:
                    counter = con.execute(text(f"SELECT version FROM {self._q}.sewerplan_version")).scalar() or 0
                edits = con.execute(
                    text(
                        "SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0) FROM pg_stat_user_tables "
                        "WHERE schemaname = :s"
                    ),
                    {"s": self.schema},
                ).scalar()
        except LayerError:
            return -1.0
        return float(hash((int(counter), int(edits))))

    # -- one writer at a time

    def writer(self, *, who: str, what: str = "an analysis run") -> StoreWriter:
        """The store's session advisory lock, taken without waiting; ``StoreBusyError`` names who holds it."""
        import psycopg

        key = _lock_key(self.schema, "writer")
        try:
            con = psycopg.connect(quote_password(self.url), autocommit=True, application_name="sewerplan writer")
        except psycopg.Error as exc:
            raise LayerError(self._says("Cannot open", exc)) from exc
        try:
            if not con.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]:
                holder = self._holder(con)
                con.close()
                raise StoreBusyError(busy_message(holder))
            con.execute(f"SET lock_timeout = {int(LOCK_WAIT_S * 1000)}")  # a held lock refuses, never queues
            created = self._ensure_schema(con) or self._created_by_sewerplan(con)
            con.execute(
                f"CREATE TABLE IF NOT EXISTS {self._q}.sewerplan_writer (id integer PRIMARY KEY DEFAULT 1 "
                "CHECK (id = 1), who text, what text, since double precision, pid integer, host text)"
            )
            con.execute(
                f"INSERT INTO {self._q}.sewerplan_writer (id, who, what, since, pid, host) "
                "VALUES (1, %s, %s, %s, pg_backend_pid(), inet_client_addr()::text) "
                "ON CONFLICT (id) DO UPDATE SET who = excluded.who, what = excluded.what, since = excluded.since, "
                "pid = excluded.pid, host = excluded.host",
                (who, what, time.time()),
            )
        except StoreBusyError:
            raise
        except LayerError:
            con.close()
            raise
        except psycopg.Error as exc:
            con.close()
            raise self._refusal("Cannot lock", exc) from exc

        def release() -> None:
            try:
                if created:
                    self._drop_if_unwritten(con)
                con.execute("SELECT pg_advisory_unlock(%s)", (key,))
            except psycopg.Error:  # the connection is gone: the server released the lock with it
                pass
            finally:
                con.close()

        return StoreWriter(release)

    def _drop_if_unwritten(self, con) -> None:
        """Drop the schema this writer created when nothing but its ``sewerplan_writer`` is in it: a run that failed
        into a new schema leaves none behind (an empty schema made it look like a store). Anything else written
        there (a run's tables, a setting) makes ``DROP SCHEMA`` refuse, and the schema stays."""
        import psycopg

        try:
            with con.transaction():
                con.execute(f"DROP TABLE IF EXISTS {self._q}.sewerplan_writer")
                con.execute(f"DROP SCHEMA {self._q} RESTRICT")
        except psycopg.errors.DependentObjectsStillExist:
            pass

    def _created_by_sewerplan(self, con) -> bool:
        """Whether sewerplan created the schema (its comment says so): a writer killed before it could drop the schema
        it created (``kill -9``, a server gone) left it holding nothing but ``sewerplan_writer``, which looked like a
        store until a run succeeded there; the next writer drops it as its own when it is done, if still empty. A
        schema the county made (no such comment) is never dropped."""
        said = con.execute("SELECT obj_description(to_regnamespace(%s), 'pg_namespace')", (self.schema,)).fetchone()
        return bool(said) and said[0] == _CREATED_MARK

    def _holder(self, con) -> dict:
        try:
            row = con.execute(f"SELECT who, what, since FROM {self._q}.sewerplan_writer WHERE id = 1").fetchone()
        except Exception:  # noqa: BLE001 - no record of the holder: the sentence says "another user"
            return {}
        return dict(zip(("who", "what", "since"), row, strict=True)) if row else {}

    def _ensure_schema(self, con) -> bool:
        """Create the schema when it does not exist yet (a role may use a schema it could not create); whether it
        was created here."""
        exists = con.execute("SELECT to_regnamespace(%s) IS NOT NULL", (self.schema,)).fetchone()[0]
        if exists:
            return False
        try:
            con.execute(f"CREATE SCHEMA IF NOT EXISTS {self._q}")
            con.execute(f"COMMENT ON SCHEMA {self._q} IS '{_CREATED_MARK}'")
        except Exception as exc:
            raise LayerError(
                f"The schema {self.schema} does not exist in {redact_url(self.url)} and cannot be created "
                f"({' '.join(str(exc).split())}): create it (CREATE SCHEMA {self.schema}) and grant the planners' "
                "role CREATE and USAGE on it, or give a role that may create schemas."
            ) from exc
        return True

    # -- writing

    @contextmanager
    def _write(self, doing: str):
        """One write transaction, serialised with every other write to this store.

        It waits for another of sewerplan's writes (the transaction advisory lock), but at most ``LOCK_WAIT_S`` for
        a lock another session holds on a table (``lock_timeout``, set once the advisory lock is taken): a QGIS edit
        session or an open transaction in a database tool refuses the write with a sentence saying so, rather than
        leaving it waiting with no word, even after its client has gone."""
        from sqlalchemy import text

        try:
            with _engine(self.url).begin() as con:
                con.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _lock_key(self.schema, "write")})
                con.execute(text(f"SET LOCAL lock_timeout = {int(LOCK_WAIT_S * 1000)}"))
                self._ensure_schema(con.connection.driver_connection)
                yield con
        except LayerError as exc:
            cause = exc.__cause__
            if cause is not None and _is_lock_timeout(cause):  # worded for a view by the step that caught it
                raise self._refusal(doing, cause) from cause
            raise
        except Exception as exc:
            raise self._refusal(doing, exc) from exc

    def _refusal(self, doing: str, exc: Exception) -> LayerError:
        """The error a failed write gives: for a lock another session held too long, who holds it and what to do."""
        if not _is_lock_timeout(exc):
            return LayerError(self._says(doing, exc))
        tables, holders = self._lock_holders(_locked_table(exc))
        where = f"the table {self.schema}.{tables[0]}" if len(tables) == 1 else f"a table of the schema {self.schema}"
        by = f" ({'; '.join(holders)})" if holders else ""
        return LayerError(
            f"{doing} the PostGIS store {self.label}: another session{by} holds a lock on {where}, and it was not "
            f"released within {LOCK_WAIT_S:g} seconds: a QGIS layer being edited, or a database tool (psql, pgAdmin, "
            "DBeaver) with a transaction left open. Save or close that QGIS edit session, or end that transaction "
            "(COMMIT or ROLLBACK, or close the tool), then try again. Nothing was written: the previous results are "
            "as they were."
        )

    def _lock_holders(self, table: str | None) -> tuple[list[str], list[str]]:
        """The tables of the store other sessions hold locks on (``table`` alone when PostgreSQL named it), and
        who those sessions are (program, user, state), as far as this role may see them."""
        from sqlalchemy import text

        try:
            with _engine(self.url).connect() as con:
                rows = con.execute(
                    text(
                        "SELECT DISTINCT c.relname, a.pid, coalesce(nullif(a.application_name, ''), 'a client'), "
                        "a.usename, a.state FROM pg_locks l JOIN pg_class c ON c.oid = l.relation "
                        "JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_stat_activity a ON a.pid = l.pid "
                        "WHERE l.granted AND n.nspname = :s AND c.relkind IN ('r', 'p') "
                        "AND (:t = '' OR c.relname = :t) AND a.pid <> pg_backend_pid() "
                        "AND a.application_name NOT LIKE 'sewerplan%' ORDER BY 2, 1"
                    ),
                    {"s": self.schema, "t": table or ""},
                ).all()
        except Exception:  # noqa: BLE001 - the refusal is said without them
            return ([table] if table else []), []
        tables = [table] if table else list(dict.fromkeys(str(r[0]) for r in rows))
        said = {
            pid: f"{app} as {who or 'another user'}, {state or 'busy'}, process {pid}"
            for _, pid, app, who, state in rows
        }
        return tables, list(said.values())

    def write_run(
        self,
        parcels,
        measuring_lines,
        buildings,
        summary: dict,
        *,
        locked=False,
        who="",
        inputs: dict[str, gpd.GeoDataFrame] | None = None,
        drop: tuple[str, ...] = (),
        settings: dict[str, str] | None = None,
    ) -> list[str]:
        """The run's results, input copies, settings and record, in one transaction (see the module docstring).

        An input copy replaces only a table sewerplan wrote (``_replace_table`` refuses a county's own table).
        """
        from sqlalchemy import text

        frames = result_layers(parcels, measuring_lines, buildings)
        writer = None if locked else self.writer(who=who or "sewerplan analyze")
        try:
            with self._write("Cannot write the run to") as con:
                for name in drop:
                    con.execute(text(f"DROP TABLE IF EXISTS {self._q}.{_ident(name)}"))
                for name, frame in {**frames, **(inputs or {})}.items():
                    self._replace_table(con, name, frame)
                for key, value in (settings or {}).items():
                    self._upsert_setting(con, key, value)
                trouble = self._style(con, run=summary)
                if trouble:
                    summary["warnings"] = [*summary.get("warnings", []), trouble]
                self._record_run(con, summary)
                self._bump(con)
            return list(frames)
        finally:
            if writer is not None:
                writer.release()

    def write_layers(
        self,
        layers: dict[str, gpd.GeoDataFrame],
        *,
        overwrite: bool = False,
        measuring_crs: str | None = None,
        profile: str | None = None,
        profile_settings: dict[str, str] | None = None,
    ) -> list[str]:
        """Input layers written into the schema in one transaction (a sample town, or a county's copy), with the
        measuring CRS they are in when not the profile's and the profile they were checked under
        (``checked_settings``)."""
        from analysis.errors import Fix

        with self.writer(who="sewerplan", what="writing layers"), self._write("Cannot write layers to") as con:
            there = [name for name in layers if self._columns(con, self.schema, name)]
            if there and not overwrite:
                raise LayerError(
                    f"The PostGIS store {self.label} already holds {', '.join(there)}: replace them only when asked "
                    "to (overwrite).",
                    fix=Fix("overwrite"),
                )
            if overwrite:
                self._drop_own_tables(con, keep=set(layers))
            for name, frame in layers.items():
                existing = self._columns(con, self.schema, name)
                if existing and "fid" not in existing:
                    con.execute(_text(f"DROP TABLE {self._q}.{_ident(name)}"))
                self._replace_table(con, name, frame)
            self._layers_settings(
                con,
                checked_settings(measuring_crs=measuring_crs, profile=profile, profile_settings=profile_settings),
            )
            self._style(con)
            self._bump(con)
        return list(layers)

    def _drop_own_tables(self, con, *, keep: set[str]) -> None:
        """Drop the store's layers and run record that sewerplan wrote (results, input copies, ``analysis_runs``: the
        tables it comments "sewerplan: ..."), but those in ``keep``, with their QGIS styles: the store replaced whole,
        as a GeoPackage's file is. A table of the county's own, or any other, is left where it is."""
        from sqlalchemy import text

        from layers.qgis_styles import STYLE_NAME

        for table in self._data_tables(con):
            if table in keep:
                continue
            said = con.execute(
                text("SELECT obj_description(to_regclass(:t), 'pg_class')"), {"t": f"{self._q}.{_ident(table)}"}
            ).scalar()
            if not str(said or "").startswith("sewerplan: "):
                continue
            self._drop_table(
                con,
                table,
                f"The store {self.label} is replaced whole, and another object (a view) depends on its table "
                f"{self.schema}.{table}",
                "Drop that object first, or write to another schema.",
            )
            if con.execute(text("SELECT to_regclass('public.layer_styles')")).scalar() is not None:
                con.execute(
                    text(
                        "DELETE FROM public.layer_styles WHERE f_table_catalog = current_database() "
                        "AND f_table_schema = :s AND f_table_name = :t AND styleName = :n"
                    ),
                    {"s": self.schema, "t": table, "n": STYLE_NAME},
                )

    def _replace_table(self, con, name: str, frame: gpd.GeoDataFrame) -> None:
        """Create the table, or bring its columns to the frame's; then replace its rows with the frame's."""
        from sqlalchemy import text

        prepared = _prepare(frame, label=f"{name} for {self.label}")
        table = f"{self._q}.{_ident(name)}"
        wanted = {c.name: c.sql_type for c in prepared.columns} | {GEOMETRY: prepared.geometry_type}
        existing = self._columns(con, self.schema, name)
        if not existing:
            defined = ", ".join(f"{_ident(n)} {t}" for n, t in wanted.items())
            con.execute(text(f"CREATE TABLE {table} (fid bigint PRIMARY KEY, {defined})"))
            con.execute(text(f"CREATE INDEX {_ident(name + '_geom_idx')} ON {table} USING gist ({GEOMETRY})"))
        else:
            # The rows go first: a run measured in another CRS retypes the geometry column to its SRID, which
            # PostGIS refuses while rows of the old SRID are in it ("Geometry SRID (2260) does not match ...").
            con.execute(text(f"DELETE FROM {table}"))
            self._align_columns(con, name, table, existing, wanted)
        _copy(con, table, prepared)
        self._comment(con, name, table, list(wanted))
        con.execute(text(f"ANALYZE {table}"))

    def _align_columns(self, con, name: str, table: str, existing: dict, wanted: dict) -> None:
        from sqlalchemy import text

        if "fid" not in existing:
            raise LayerError(
                f"The table {self.schema}.{name} was not written by sewerplan (it has no fid key); rename it or drop "
                "it, so the results can be written in its place."
            )
        try:
            for column_name in existing:
                if column_name != "fid" and column_name not in wanted:
                    con.execute(text(f"ALTER TABLE {table} DROP COLUMN {_ident(column_name)}"))
            for column_name, sql_type in wanted.items():
                if column_name not in existing:
                    con.execute(text(f"ALTER TABLE {table} ADD COLUMN {_ident(column_name)} {sql_type}"))
                elif not _same_type(existing[column_name], sql_type):
                    cast = f"ST_Multi({GEOMETRY})" if column_name == GEOMETRY else f"{_ident(column_name)}::{sql_type}"
                    con.execute(
                        text(f"ALTER TABLE {table} ALTER COLUMN {_ident(column_name)} TYPE {sql_type} USING {cast}")
                    )
        except Exception as exc:
            if "depend" in str(exc):
                raise LayerError(
                    f"The results' columns changed, and another object (a view) depends on the table "
                    f"{self.schema}.{name}: {' '.join(str(getattr(exc, 'orig', exc)).split())}. Drop or change that "
                    "object, write the results, then make it again."
                ) from exc
            raise

    def _comment(self, con, name: str, table: str, columns: list[str]) -> None:
        from sqlalchemy import text

        about = LAYER_DESCRIPTIONS.get(name) or f"The {name} layer, as the town's store holds it."
        con.execute(text(f"COMMENT ON TABLE {table} IS {_literal(con, 'sewerplan: ' + about)}"))
        said = "The feature's number (the primary key)."
        con.execute(text(f"COMMENT ON COLUMN {table}.fid IS {_literal(con, said)}"))
        for column_name in columns:
            said = (
                "The feature's geometry, in the measuring CRS (its SRID)."
                if column_name == GEOMETRY
                else column_description(name, column_name)
            )
            if said:
                con.execute(text(f"COMMENT ON COLUMN {table}.{_ident(column_name)} IS {_literal(con, said)}"))

    def _runs_table(self, con) -> None:
        from sqlalchemy import text

        con.execute(
            text(
                f"CREATE TABLE IF NOT EXISTS {self._q}.{RUNS_TABLE} (id bigserial PRIMARY KEY, "
                "run_at timestamptz NOT NULL DEFAULT now(), summary jsonb NOT NULL)"
            )
        )
        about = _literal(con, "sewerplan: " + LAYER_DESCRIPTIONS[RUNS_TABLE])
        con.execute(text(f"COMMENT ON TABLE {self._q}.{RUNS_TABLE} IS {about}"))
        for name in ("id", "run_at", "summary"):
            said = _literal(con, column_description(RUNS_TABLE, name))
            con.execute(text(f"COMMENT ON COLUMN {self._q}.{RUNS_TABLE}.{name} IS {said}"))

    def _record_run(self, con, summary: dict) -> None:
        from sqlalchemy import text

        self._runs_table(con)
        con.execute(
            text(f"INSERT INTO {self._q}.{RUNS_TABLE} (summary) VALUES (CAST(:s AS jsonb))"),
            {"s": json.dumps(summary)},
        )

    def _bump(self, con) -> None:
        from sqlalchemy import text

        con.execute(
            text(
                f"CREATE TABLE IF NOT EXISTS {self._q}.sewerplan_version (id integer PRIMARY KEY DEFAULT 1 "
                "CHECK (id = 1), version bigint NOT NULL, changed_at timestamptz NOT NULL DEFAULT now())"
            )
        )
        con.execute(
            text(
                f"INSERT INTO {self._q}.sewerplan_version (id, version) VALUES (1, 1) ON CONFLICT (id) DO UPDATE "
                "SET version = sewerplan_version.version + 1, changed_at = now()"
            )
        )

    def _style(self, con, *, run: dict | None = None) -> str | None:
        """Write QGIS's default style of each of the store's layers into ``public.layer_styles``.

        In a savepoint: a role that may not create or write that table still gets its results written, and the
        run's summary says why the styles were not. ``run``: the record of the run being written, so the results'
        legend lists the statuses its profile can give, as the web map's does (``run_statuses``).
        """
        from sqlalchemy import text

        from layers.qgis_styles import PG_LAYER_STYLES, STYLE_NAME, qml, run_statuses, style_description, style_kind

        nested = con.begin_nested()
        try:
            if con.execute(text("SELECT to_regclass('public.layer_styles')")).scalar() is None:
                con.execute(text(PG_LAYER_STYLES))
            database = con.execute(text("SELECT current_database()")).scalar()
            for table, (geom, _, _) in self._geometry_tables(con).items():
                fields = [c for c in self._columns(con, self.schema, table) if c not in (geom, "fid")]
                statuses = None
                if run is not None and style_kind(table) == "parcel_results" and "status" in fields:
                    q = f"SELECT status, count(*) FROM {self._q}.{_ident(table)} GROUP BY status"
                    statuses = run_statuses(run, dict(con.execute(text(q)).fetchall()))
                document = qml(table, fields, statuses=statuses)
                if document is None:
                    continue
                where = "f_table_catalog = :d AND f_table_schema = :s AND f_table_name = :t AND f_geometry_column = :g"
                params = {"d": database, "s": self.schema, "t": table, "g": geom}
                con.execute(
                    text(f"DELETE FROM public.layer_styles WHERE {where} AND styleName = :n"),
                    params | {"n": STYLE_NAME},
                )
                con.execute(text(f"UPDATE public.layer_styles SET useAsDefault = false WHERE {where}"), params)
                con.execute(
                    text(
                        "INSERT INTO public.layer_styles (f_table_catalog, f_table_schema, f_table_name, "
                        "f_geometry_column, styleName, styleQML, useAsDefault, description) "
                        "VALUES (:d, :s, :t, :g, :n, XMLPARSE(DOCUMENT :q), true, :about)"
                    ),
                    params | {"n": STYLE_NAME, "q": document, "about": style_description(table)},
                )
            nested.commit()
            return None
        except Exception as exc:  # noqa: BLE001 - the results matter more than their colours
            nested.rollback()
            reason = " ".join(str(getattr(exc, "orig", exc)).split()).split(" LINE ")[0]
            return (
                f"The QGIS styles were not written ({reason}): create public.layer_styles once (as QGIS does) "
                "and grant the planners' role INSERT, UPDATE and DELETE on it, and USAGE on its id sequence."
            )

    # -- settings

    def read_setting(self, key: str) -> str | None:
        from sqlalchemy import text

        try:
            with self._read() as con:
                if not self._has_table(con, SETTINGS_TABLE):
                    return None
                return con.execute(
                    text(f"SELECT value FROM {self._q}.{SETTINGS_TABLE} WHERE key = :k"), {"k": key}
                ).scalar()
        except LayerError:
            return None

    def write_setting(self, key: str, value: str) -> None:
        """One row, upserted in its own transaction (a run writing at the same moment never touches it)."""
        with self._write(f"Cannot keep the setting {key} in") as con:
            self._upsert_setting(con, key, value)

    def _upsert_setting(self, con, key: str, value: str) -> None:
        from sqlalchemy import text

        con.execute(
            text(f"CREATE TABLE IF NOT EXISTS {self._q}.{SETTINGS_TABLE} (key text PRIMARY KEY, value text NOT NULL)")
        )
        con.execute(
            text(
                f"INSERT INTO {self._q}.{SETTINGS_TABLE} (key, value) VALUES (:k, :v) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
            ),
            {"k": key, "v": value},
        )

    def _layers_settings(self, con, values: dict[str, str]) -> None:
        """Keep what the layers just written were checked in and under (``DATA_SETTINGS``: their measuring CRS,
        their profile and the values set on it), clearing those of earlier layers that these have not."""
        from sqlalchemy import text

        for key, value in values.items():
            if key in DATA_SETTINGS and value:
                self._upsert_setting(con, key, value)
        gone = sorted(k for k in DATA_SETTINGS if not values.get(k))
        if gone and self._has_table(con, SETTINGS_TABLE):
            con.execute(text(f"DELETE FROM {self._q}.{SETTINGS_TABLE} WHERE key = ANY(:keys)"), {"keys": gone})

    # -- publishing and restoring

    def _data_tables(self, con) -> list[str]:
        """The store's own layers and run record: what publishing replaces and a snapshot keeps (never the
        settings, the register's tables or anything else the county keeps in the schema)."""
        from sqlalchemy import text

        names = con.execute(
            text("SELECT tablename FROM pg_tables WHERE schemaname = :s ORDER BY tablename"), {"s": self.schema}
        ).scalars()
        return [str(n) for n in names if str(n).lower() in KNOWN_LAYERS or str(n) == RUNS_TABLE]

    def previous(self) -> list[dict]:
        from sqlalchemy import text

        with self._read() as con:
            schemas = con.execute(
                text(
                    "SELECT n.nspname FROM pg_namespace n WHERE n.nspname LIKE :p AND "
                    "to_regclass(quote_ident(n.nspname) || '.sewerplan_snapshot') IS NOT NULL ORDER BY n.nspname DESC"
                ),
                {"p": f"{self.schema[:34]}\\_\\_prev\\_%"},
            ).scalars()
            found = []
            for name in schemas:
                q = _ident(name)
                row = con.execute(text(f"SELECT source_schema, saved_at, label FROM {q}.sewerplan_snapshot")).first()
                if row is None or row[0] != self.schema:
                    continue
                size = con.execute(
                    text(
                        "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                        "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = :n AND c.relkind = 'r'"
                    ),
                    {"n": name},
                ).scalar()
                found.append({"name": str(name), "saved_at": float(row[1]), "label": row[2] or "", "bytes": int(size)})
        return sorted(found, key=lambda m: m["saved_at"], reverse=True)

    def publish(self, source: str | Path, *, who: str, label: str, keep: int = 5) -> str:
        """A validated upload (a GeoPackage) becomes the store's layers; the ones it replaces are kept in a snapshot."""
        frames, runs = _read_geopackage(Path(source))
        with self.writer(who=who, what="publishing a store"):
            with self._write("Cannot publish to") as con:
                kept = self._snapshot(con, label=f"before {label}", who=who)
                self._replace_all(con, frames, runs)
                upload = GeoPackageStore(source)
                self._layers_settings(con, {k: upload.read_setting(k) for k in DATA_SETTINGS})
                self._prune(con, keep)
            return kept

    def restore(self, name: str, *, who: str, keep: int = 5) -> str:
        """Put a snapshot back as the store's layers; the ones it replaces are kept too (restoring is undoable)."""
        if not _SNAPSHOT.match(name or "") or name not in {p["name"] for p in self.previous()}:
            raise LayerError("No such earlier store (it may have been pruned).")
        from sqlalchemy import text

        with self.writer(who=who, what="restoring a store"):
            with self._write("Cannot restore") as con:
                tables = [
                    str(t)
                    for t in con.execute(
                        text(
                            "SELECT tablename FROM pg_tables WHERE schemaname = :s "
                            "AND tablename <> 'sewerplan_snapshot'"
                        ),
                        {"s": name},
                    ).scalars()
                ]
                geo = self._geometry_tables(con, name)
                frames = {t: self._read_table(con, name, t, geo) for t in tables if t in geo}
                runs = None
                if RUNS_TABLE in tables:
                    runs = pd.read_sql(
                        text(
                            "SELECT id, to_char(run_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') AS run_at, "
                            f"summary::text AS summary FROM {_ident(name)}.{RUNS_TABLE}"
                        ),
                        con,
                    )
                checked = {}
                if SETTINGS_TABLE in tables:  # what the snapshot's layers were checked in and under (``_snapshot``)
                    checked = dict(
                        con.execute(
                            text(f"SELECT key, value FROM {_ident(name)}.{SETTINGS_TABLE} WHERE key = ANY(:keys)"),
                            {"keys": sorted(DATA_SETTINGS)},
                        ).all()
                    )
                kept = self._snapshot(con, label=f"replaced by the restore of {name}", who=who)
                self._replace_all(con, frames, runs)
                self._layers_settings(con, checked)
                self._prune(con, keep)
            return kept

    def _snapshot(self, con, *, label: str, who: str) -> str:
        """Copy the store's data tables into a new schema ``<schema>__prev_<time>``; "" when there is nothing."""
        from sqlalchemy import text

        tables = self._data_tables(con)
        if not tables:
            return ""
        name = f"{self.schema[:34]}__prev_{dt.datetime.now().strftime('%Y%m%d_%H%M%S_%f')}"
        q = _ident(name)
        try:
            con.execute(text(f"CREATE SCHEMA {q}"))
        except Exception as exc:
            raise LayerError(
                f"The layers this would replace are kept in a new schema ({name}) so they can be put back, and the "
                f"database role cannot create one ({' '.join(str(getattr(exc, 'orig', exc)).split())}): grant the "
                "planners' role CREATE on the database, or load the layers into the schema with QGIS or ogr2ogr."
            ) from exc
        for table in tables:
            con.execute(text(f"CREATE TABLE {q}.{_ident(table)} AS TABLE {self._q}.{_ident(table)}"))
        if self._has_table(con, SETTINGS_TABLE):  # the settings of the layers (their CRS, profile) go with them
            con.execute(
                text(
                    f"CREATE TABLE {q}.{SETTINGS_TABLE} AS SELECT key, value FROM {self._q}.{SETTINGS_TABLE} "
                    "WHERE key = ANY(:keys)"
                ),
                {"keys": sorted(DATA_SETTINGS)},
            )
        con.execute(
            text(
                f"CREATE TABLE {q}.sewerplan_snapshot (source_schema text, saved_at double precision, label text, "
                "by text)"
            )
        )
        con.execute(
            text(f"INSERT INTO {q}.sewerplan_snapshot VALUES (:s, :t, :l, :b)"),
            {"s": self.schema, "t": time.time(), "l": label, "b": who},
        )
        said = f"sewerplan: the store {self.schema} as it was {label} (restore it from the Data page)."
        con.execute(text(f"COMMENT ON SCHEMA {q} IS {_literal(con, said)}"))
        return name

    def _drop_table(self, con, table: str, why: str, fix: str) -> None:
        """Drop one of the store's tables; where another object (a view) depends on it, ``LayerError`` saying
        ``why``, PostgreSQL's own words and ``fix``. Any other failure is raised as it is."""
        from sqlalchemy import text

        try:
            con.execute(text(f"DROP TABLE {self._q}.{_ident(table)}"))
        except Exception as exc:
            if "depend" not in str(exc):
                raise
            raise LayerError(f"{why}: {' '.join(str(getattr(exc, 'orig', exc)).split())}. {fix}") from exc

    def _replace_all(self, con, frames: dict[str, gpd.GeoDataFrame], runs: pd.DataFrame | None) -> None:
        """The store's data tables become ``frames`` and ``runs``: others are dropped, the rest replaced."""
        from sqlalchemy import text

        for table in self._data_tables(con):
            if table not in frames and table != RUNS_TABLE:
                self._drop_table(
                    con,
                    table,
                    f"The layer {self.schema}.{table} is replaced, and another object (a view) depends on it",
                    "Drop that object first.",
                )
        for name, frame in frames.items():
            existing = self._columns(con, self.schema, name)
            if existing and "fid" not in existing:  # the county's own table of that name: kept in the snapshot
                con.execute(text(f"DROP TABLE {self._q}.{_ident(name)}"))
            self._replace_table(con, name, frame)
        con.execute(text(f"DROP TABLE IF EXISTS {self._q}.{RUNS_TABLE}"))
        if runs is not None and len(runs):
            self._runs_table(con)
            for row in runs.itertuples(index=False):  # one row per run recorded: a handful
                con.execute(
                    text(
                        f"INSERT INTO {self._q}.{RUNS_TABLE} (id, run_at, summary) "
                        "VALUES (:i, CAST(:r AS timestamp) AT TIME ZONE 'UTC', CAST(:s AS jsonb))"
                    ),
                    {"i": int(row.id), "r": str(row.run_at), "s": row.summary},
                )
            con.execute(
                text(f"SELECT setval(pg_get_serial_sequence(:t, 'id'), (SELECT max(id) FROM {self._q}.{RUNS_TABLE}))"),
                {"t": f"{self._q}.{RUNS_TABLE}"},
            )
        self._style(con)
        self._bump(con)

    def _prune(self, con, keep: int) -> None:
        from sqlalchemy import text

        mine = con.execute(
            text(
                "SELECT n.nspname FROM pg_namespace n WHERE n.nspname LIKE :p AND "
                "to_regclass(quote_ident(n.nspname) || '.sewerplan_snapshot') IS NOT NULL ORDER BY n.nspname DESC"
            ),
            {"p": f"{self.schema[:34]}\\_\\_prev\\_%"},
        ).scalars()
        ours = [
            str(n)
            for n in mine
            if con.execute(text(f"SELECT source_schema FROM {_ident(n)}.sewerplan_snapshot")).scalar() == self.schema
        ]
        for old in ours[max(keep, 1) :]:
            con.execute(text(f"DROP SCHEMA {_ident(old)} CASCADE"))

    # -- the register and QGIS

    def _parts(self, url: str):
        from sqlalchemy.engine import make_url

        return make_url(quote_password(split_fragment(url)[0].replace("postgres://", "postgresql://", 1)))

    def _same_server(self, url: str) -> bool:
        """``url`` is a database on this store's server (host, port and database; any login)."""
        try:
            a, b = self._parts(url), self._parts(self.url)
        except Exception:  # noqa: BLE001 - not a URL: not the same server
            return False
        return (a.host, a.port or 5432, a.database) == (b.host, b.port or 5432, b.database)

    def register_schema(self) -> str:
        """The schema the town's first notice register gets: ``<schema>_register``, beside the store's (the
        register's tables are its own, one of them named ``analysis_runs`` like the store's run record).

        One of its own for every store schema, within PostgreSQL's 63 characters: a schema name too long for
        ``_register`` keeps its first 45 characters and adds 8 hexadecimal digits of a hash of the whole name
        (two towns whose names began with the same 54 characters had shared one register, cut to those). A name
        short enough keeps the register name it always had, so the registers made before are still found.

        Examples
        --------
        >>> PostGISStore("postgresql://db/county#fort_plain").register_schema()
        'fort_plain_register'
        >>> len(PostGISStore("postgresql://db/county#" + "t" * 63).register_schema())
        63
        """
        plain = f"{self.schema}{_REGISTER_SUFFIX}"
        if len(plain) <= _NAME_MAX:
            return plain
        tag = hashlib.blake2b(self.schema.encode(), digest_size=4).hexdigest()
        return f"{self.schema[: _NAME_MAX - len(_REGISTER_SUFFIX) - len(tag) - 1]}_{tag}{_REGISTER_SUFFIX}"

    def default_register(self) -> str:
        """The register in its own schema on the store's database: a location on this server, with no login (each
        user opens it with their own store URL's login and options, ``register_location``)."""
        return self._register_url(self.register_schema(), login=False)

    def _register_url(self, schema: str, *, login: bool) -> str:
        """The store's URL with ``-csearch_path=<schema>`` among its options: with the store's own login (user,
        password and other options such as ``-crole=planners``), or with no login at all (what is recorded)."""
        parts = self._parts(self.url)
        kept = [] if not login else [o for o in _options(parts) if not o.startswith("-csearch_path=")]
        query = {"options": " ".join([*kept, f"-csearch_path={schema}"])}
        if not login:
            parts = parts._replace(username=None, password=None)
        return parts.set(query=query).render_as_string(hide_password=False)

    def _register_schema_of(self, location: str) -> str | None:
        found = [o for o in _options(self._parts(location)) if o.startswith("-csearch_path=")]
        return found[-1].removeprefix("-csearch_path=") if found else None

    def prepare_register(self, location: str) -> None:
        """Create the register's schema when ``location`` is the default register and it does not exist yet, marked
        as this store's (a comment on the schema); refused when that schema is another store's register."""
        if not self._same_server(location) or self._register_schema_of(location) != self.register_schema():
            return
        from sqlalchemy import text

        name = self.register_schema()
        try:
            with _engine(self.url).begin() as con:
                other = self._register_owner(con, name)
                if other is None:
                    made = con.execute(text("SELECT to_regnamespace(:s) IS NULL"), {"s": name}).scalar()
                    con.execute(text(f"CREATE SCHEMA IF NOT EXISTS {_ident(name)}"))
                    if made:
                        said = f"{_REGISTER_MARK}{self.schema} (its notices, batches and letters)."
                        con.execute(text(f"COMMENT ON SCHEMA {_ident(name)} IS {_literal(con, said)}"))
        except Exception as exc:
            raise LayerError(
                f"The notice register goes in the schema {name}, and it cannot be created "
                f"({' '.join(str(getattr(exc, 'orig', exc)).split())}): create it (CREATE SCHEMA "
                f"{name}) and grant the planners' role CREATE and USAGE on it."
            ) from exc
        if other is not None:
            raise LayerError(
                f"The notice register of the store {self.label} would go in the schema {name}, and that schema holds "
                f"the register of another store, the schema {other}: a town's register is never shared, or one "
                "town's notices would count as the other's (\"already noticed\"). Name a register of this town's "
                "own (a database URL or an SQLite file) when issuing its first notices, or ask the database's "
                f"owner which town {name} belongs to."
            )

    def _register_owner(self, con, name: str) -> str | None:
        """The other store whose register the schema ``name`` is: by its mark, else by what another store's
        settings record (a register made before the mark, by the name cut to 54 characters); None when none is."""
        from sqlalchemy import text

        from layers.register import STORE_SETTING

        said = con.execute(text("SELECT obj_description(to_regnamespace(:s), 'pg_namespace')"), {"s": name}).scalar()
        if said and str(said).startswith(_REGISTER_MARK):
            owner = str(said).removeprefix(_REGISTER_MARK).split(" ", 1)[0]
            return owner if owner != self.schema else None
        stores = con.execute(
            text(
                "SELECT n.nspname FROM pg_namespace n WHERE n.nspname <> :s AND has_schema_privilege(n.oid, 'USAGE') "
                "AND to_regclass(quote_ident(n.nspname) || '.sewerplan_settings') IS NOT NULL "
                "AND has_table_privilege(to_regclass(quote_ident(n.nspname) || '.sewerplan_settings'), 'SELECT') "
                "AND NOT n.nspname LIKE '%\\_\\_prev\\_%' ORDER BY n.nspname"
            ),
            {"s": self.schema},
        ).scalars()
        for store in stores:  # the county's towns: a handful
            recorded = con.execute(
                text(f"SELECT value FROM {_ident(store)}.sewerplan_settings WHERE key = :k"), {"k": STORE_SETTING}
            ).scalar()
            mine = recorded and "://" in str(recorded) and self._same_server(str(recorded))
            if mine and self._register_schema_of(str(recorded)) == name:
                return str(store)
        return None

    def register_location(self, recorded: str) -> str:
        """A register on this store's server is opened with the login of the store URL in hand (its user, password
        and options such as ``-crole``): every planner and viewer reaches the town's one register as themselves."""
        if not recorded or "://" not in recorded or not self._same_server(recorded):
            return recorded
        schema = self._register_schema_of(recorded)
        if schema is None:
            return recorded
        return self._register_url(schema, login=True)

    def recordable(self, location: str) -> str:
        """A register on this store's server is recorded as its place only (no user, no password, no role)."""
        if location and "://" in location and self._same_server(location):
            schema = self._register_schema_of(location)
            if schema is not None:
                return self._register_url(schema, login=False)
        return location

    def qgis_layers(self) -> list[dict]:
        from sqlalchemy import text

        parts = self._parts(self.url)
        with self._read() as con:
            tables = self._geometry_tables(con)
            found = []
            for table, (geom, geometry, srid) in tables.items():
                columns = self._columns(con, self.schema, table)
                key = "fid" if "fid" in columns else self._primary_key(con, table)
                box = con.execute(
                    text(
                        f"SELECT ST_XMin(e), ST_YMin(e), ST_XMax(e), ST_YMax(e) FROM (SELECT ST_Extent({_ident(geom)}) "
                        f"AS e FROM {self._q}.{_ident(table)}) AS x"
                    )
                ).first()
                found.append(
                    {
                        "name": table,
                        "provider": "postgres",
                        "geometry": geometry.upper(),
                        "srid": srid,
                        "fields": [c for c in columns if c not in (geom, "fid")],
                        "connection": {
                            "dbname": parts.database,
                            "host": parts.host,
                            "port": parts.port or 5432,
                            "user": parts.username,
                            "sslmode": parts.query.get("sslmode"),
                        },
                        "schema": self.schema,
                        "table": table,
                        "geom": geom,
                        "key": key,
                        "extent": tuple(float(v) for v in box) if box and box[0] is not None else None,
                    }
                )
        return found

    def _primary_key(self, con, table: str) -> str | None:
        from sqlalchemy import text

        return con.execute(
            text(
                "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
                "AND a.attnum = ANY(i.indkey) WHERE i.indrelid = to_regclass(:t) AND i.indisprimary LIMIT 1"
            ),
            {"t": f"{self._q}.{_ident(table)}"},
        ).scalar()


# -- turning a frame into rows PostgreSQL copies ------------------------------------------------------------------


class _Column:
    def __init__(self, name: str, sql_type: str, text: np.ndarray):
        self.name, self.sql_type, self.text = name, sql_type, text


class _Prepared:
    def __init__(self, columns: list[_Column], geometry_type: str, geometry: np.ndarray, rows: int):
        self.columns, self.geometry_type, self.geometry, self.rows = columns, geometry_type, geometry, rows


_NULL = "\\N"


def _prepare(frame: gpd.GeoDataFrame, *, label: str) -> _Prepared:
    """Each column's PostgreSQL type and its values as COPY text, the geometry as EWKB with the SRID (vectorised).

    A ZIP-code column the tax roll gave as numbers is text with its leading zeros, as the files' (``zip_text``): a
    bigint column showed 5255 in QGIS and psql, and a mailing list made from it was wrong. The deadline is a date and
    living units a bigint (``stored_column``), not text and double precision."""
    srid = _srid(frame, label)
    geom_name = frame.geometry.name
    columns = []
    for name in frame.columns:
        if name == geom_name or str(name) in ("fid", GEOMETRY):
            continue
        # ZIP codes as text (01234), the deadline a date, living units whole numbers, as in every file
        sql_type, text = _as_text(stored_column(name, frame[name]))
        columns.append(_Column(str(name), sql_type, text))
    geoms = np.asarray(frame.geometry.values, dtype=object)
    geometry_type, geoms = _promote(geoms)
    ewkb = shapely.to_wkb(shapely.set_srid(geoms, srid), hex=True, include_srid=True)
    geometry = np.where(pd.isna(ewkb), _NULL, ewkb).astype(object)
    return _Prepared(columns, f"geometry({geometry_type},{srid})", geometry, len(frame))


def _srid(frame: gpd.GeoDataFrame, label: str) -> int:
    crs = frame.crs
    code = crs.to_epsg() if crs is not None else None
    if code is None:
        raise LayerError(
            f"The {label}: their CRS ({crs.name if crs is not None else 'none'}) has no EPSG code, so PostGIS cannot "
            "store it as an SRID. Measure in a CRS with an EPSG code (the profile's measuring CRS, EPSG:2260, has one)."
        )
    return int(code)


def _promote(geoms: np.ndarray) -> tuple[str, np.ndarray]:
    """The column's geometry type, and the geometries in it: polygons and lines always multi (a run whose parcels
    are all single polygons keeps the table's type), points multi only where some are; empty ones null."""
    present = ~(pd.isna(geoms) | shapely.is_empty(geoms))
    kinds = set(shapely.get_type_id(geoms[present]).tolist())
    out = np.full(len(geoms), None, dtype=object)
    if not kinds:
        return "Geometry", out
    if kinds <= {3, 6}:
        maker, typ = shapely.multipolygons, "MultiPolygon"
    elif kinds <= {1, 5}:
        maker, typ = shapely.multilinestrings, "MultiLineString"
    elif kinds == {0}:
        out[present] = geoms[present]
        return "Point", out
    elif kinds <= {0, 4}:
        maker, typ = shapely.multipoints, "MultiPoint"
    else:
        out[present] = geoms[present]
        return "Geometry", out
    parts, index = shapely.get_parts(geoms[present], return_index=True)
    out[present] = maker(parts, indices=index)
    return typ, out


def _as_text(values: pd.Series) -> tuple[str, np.ndarray]:
    """A column's PostgreSQL type and its values as COPY text (``\\N`` for null), column at a time."""
    missing = pd.isna(values).to_numpy(dtype=bool)
    dtype = values.dtype
    kind = None
    if pd.api.types.is_bool_dtype(dtype):
        kind = "boolean"
    elif pd.api.types.is_integer_dtype(dtype):
        kind = "bigint"
    elif pd.api.types.is_float_dtype(dtype):
        kind = "double precision"
    elif isinstance(dtype, pd.ArrowDtype) and pa.types.is_date(dtype.pyarrow_dtype):  # a deadline (``iso_dates``)
        kind = "date"
    elif pd.api.types.is_datetime64_any_dtype(dtype):
        kind = "timestamptz" if getattr(dtype, "tz", None) is not None else "timestamp"
    else:
        inferred = pd.api.types.infer_dtype(values, skipna=True)
        kind = {
            "boolean": "boolean",
            "integer": "bigint",
            "floating": "double precision",
            "mixed-integer-float": "double precision",
            "date": "date",
            "datetime64": "timestamp",
            "datetime": "timestamp",
        }.get(inferred, "text")
    if kind == "boolean":
        truth = values.fillna(False).astype(bool).to_numpy()
        text = np.where(truth, "t", "f").astype(object)
    elif kind == "bigint":
        text = values.astype("Int64").astype("string").to_numpy(dtype=object, na_value=None)
    elif kind == "double precision":
        numbers = pd.to_numeric(values, errors="coerce").astype("float64")
        missing = missing | numbers.isna().to_numpy()
        text = numbers.astype(str).to_numpy(dtype=object)
    elif kind in ("date", "timestamp", "timestamptz"):
        text = values.astype("string").to_numpy(dtype=object, na_value=None)
    else:
        strings = values.astype(object).where(~missing, "").astype(str)
        escaped = (
            strings.str.replace("\\", "\\\\", regex=False)
            .str.replace("\t", "\\t", regex=False)
            .str.replace("\n", "\\n", regex=False)
            .str.replace("\r", "\\r", regex=False)
        )
        text = escaped.to_numpy(dtype=object)
    text = np.where(missing, _NULL, text).astype(object)
    return kind, text


def _copy(con, table: str, prepared: _Prepared) -> None:
    """The rows, by COPY in text format, a chunk of rows at a time (lines joined column by column)."""
    names = ", ".join(["fid", *(_ident(c.name) for c in prepared.columns), GEOMETRY])
    raw = con.connection.driver_connection
    with raw.cursor() as cur, cur.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
        for start in range(0, prepared.rows, CHUNK_ROWS):
            stop = min(start + CHUNK_ROWS, prepared.rows)
            lines = pd.Series(np.arange(start + 1, stop + 1).astype(str), dtype=object)
            others = [pd.Series(c.text[start:stop], dtype=object) for c in prepared.columns]
            others.append(pd.Series(prepared.geometry[start:stop], dtype=object))
            lines = lines.str.cat(others, sep="\t")
            buffer = io.StringIO()
            buffer.write("\n".join(lines.tolist()))
            buffer.write("\n")
            copy.write(buffer.getvalue())


def _same_type(have: str, want: str) -> bool:
    """Whether a column already has the type (PostgreSQL's spelling of geometry types differs in case)."""
    return have.replace(" ", "").lower() == want.replace(" ", "").lower()


def _read_geopackage(path: Path) -> tuple[dict[str, gpd.GeoDataFrame], pd.DataFrame | None]:
    """A GeoPackage's map layers and its run record (a published upload's store)."""
    import sqlite3
    from contextlib import closing

    frames = {}
    for name, geometry in pyogrio.list_layers(str(path)):
        if geometry is None or str(name) == "layer_styles":
            continue
        frames[str(name)] = read_ogr(str(path), layer=str(name))
    runs = None
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as con:
            runs = pd.read_sql(f"SELECT id, run_at, summary FROM {RUNS_TABLE}", con)
    except (sqlite3.Error, pd.errors.DatabaseError):
        runs = None
    return frames, runs


__all__ = ["GEOMETRY", "KNOWN_LAYERS", "PostGISStore"]
