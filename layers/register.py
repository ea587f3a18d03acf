"""The notice register: analysis runs, notices and an append-only event log, in SQLite or PostgreSQL.

- Embedded default: ``instance/register.sqlite`` (WAL, synchronous=FULL, every write in BEGIN IMMEDIATE with a
  busy timeout). Larger installs: PostgreSQL by URL (``--register`` or ``SEWERPLAN_DATABASE_URL``).
- The schema is created and migrated by Alembic (``layers/migrations``) whenever a register is opened.
- Issuing is idempotent: a partial unique index allows one open notice per parcel and type, and notices are
  inserted with ON CONFLICT DO NOTHING, so re-running, double-clicking or two planners at once never duplicate one.
  A parcel once marked connected or exempt is never noticed again.
- A batch is one transaction, events included: a crash leaves all of it or none of it.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
import uuid
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from layers.errors import LayerError
from layers.errors import redact_url as _redact

DEFAULT_REGISTER = Path("instance") / "register.sqlite"
STATUSES = ("open", "extended", "connected", "exempt", "withdrawn")
OPEN = ("open", "extended")
CLOSING = ("connected", "exempt")  # never noticed again

METADATA = sa.MetaData()
runs = sa.Table(
    "analysis_runs",
    METADATA,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("run_at", sa.String(32), nullable=False),
    sa.Column("profile", sa.String(64), nullable=False),
    sa.Column("profile_version", sa.String(32), nullable=False),
    sa.Column("fingerprints", sa.Text, nullable=False),
    sa.Column("counts", sa.Text, nullable=False),
)
notices = sa.Table(
    "notices",
    METADATA,
    sa.Column("notice_id", sa.String(40), primary_key=True),
    sa.Column("parcel_id", sa.String(64), nullable=False),
    sa.Column("run_id", sa.Integer, sa.ForeignKey("analysis_runs.id"), nullable=True),
    sa.Column("notice_type", sa.String(16), nullable=False),
    sa.Column("issued_date", sa.String(10), nullable=False),
    sa.Column("deadline", sa.String(10), nullable=False),
    sa.Column("reason", sa.String(64), nullable=True),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("is_open", sa.Integer, nullable=False),
    sa.Column("section", sa.String(64), nullable=False),
    sa.Column("owner_name", sa.Text),
    sa.Column("mail_address", sa.Text),
    sa.Column("mail_city", sa.Text),
    sa.Column("mail_state", sa.Text),
    sa.Column("mail_zip", sa.Text),
    sa.Column("site_address", sa.Text),
    sa.Column("distance_ft", sa.Float),
    sa.Column("main_id", sa.String(64)),
    sa.Column("letter_file", sa.Text),
    sa.Column("note", sa.Text),
    sa.Column("created_at", sa.String(32), nullable=False),
    sa.Index(
        "one_open_notice",
        "parcel_id",
        "notice_type",
        unique=True,
        sqlite_where=sa.text("is_open = 1"),
        postgresql_where=sa.text("is_open = 1"),
    ),
    sa.Index("notices_by_parcel", "parcel_id"),
)
events = sa.Table(
    "events",
    METADATA,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("at", sa.String(32), nullable=False),
    sa.Column("actor", sa.String(64), nullable=False),
    sa.Column("notice_id", sa.String(40), sa.ForeignKey("notices.notice_id")),
    sa.Column("action", sa.String(32), nullable=False),
    sa.Column("field", sa.String(32)),
    sa.Column("old_value", sa.Text),
    sa.Column("new_value", sa.Text),
)

plans = sa.Table(
    "plans",
    METADATA,
    sa.Column("name", sa.String(80), primary_key=True),
    sa.Column("created_at", sa.String(32), nullable=False),
    sa.Column("profile", sa.String(64), nullable=False),
    sa.Column("diameter_in", sa.Float, nullable=False),
    sa.Column("geometry_wkt", sa.Text, nullable=False),
    sa.Column("crs", sa.Text, nullable=False),
    sa.Column("result", sa.Text, nullable=False),
)

NOTICE_COLUMNS = (
    "owner_name",
    "mail_address",
    "mail_city",
    "mail_state",
    "mail_zip",
    "site_address",
    "distance_ft",
    "main_id",
)


def register_url(given: str | None = None) -> str:
    """``--register``, else ``SEWERPLAN_DATABASE_URL``, else the SQLite file in ``instance/``."""
    url = given or os.environ.get("SEWERPLAN_DATABASE_URL")
    if url:
        return url if "://" in url else f"sqlite:///{Path(url).resolve()}"
    return f"sqlite:///{DEFAULT_REGISTER.resolve()}"


class Register:
    """An open register; ``issue``, ``mark``, ``violations``, ``listing``, ``backup``."""

    def __init__(self, url: str | None = None):
        self.url = register_url(url)
        self.is_sqlite = self.url.startswith("sqlite")
        if self.is_sqlite:
            path = self.url.removeprefix("sqlite:///")
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            self.engine = sa.create_engine(
                self.url, connect_args={"timeout": 30, "isolation_level": None}, poolclass=sa.pool.NullPool
            )
            sa.event.listen(self.engine, "connect", _sqlite_pragmas)
            sa.event.listen(self.engine, "begin", lambda conn: conn.exec_driver_sql("BEGIN IMMEDIATE"))
        else:
            self.engine = sa.create_engine(
                self.url.replace("postgres://", "postgresql://", 1), poolclass=sa.pool.NullPool
            )
        try:
            self._migrate()
        except sa.exc.OperationalError as exc:
            raise LayerError(f"Cannot open the register {_redact(self.url)}: {exc.orig}") from exc

    def _migrate(self) -> None:
        from alembic import command
        from alembic.config import Config

        config = Config()
        config.set_main_option("script_location", str(Path(__file__).parent / "migrations"))
        with self.engine.begin() as con:
            config.attributes["connection"] = con
            command.upgrade(config, "head")

    def close(self) -> None:
        self.engine.dispose()

    @contextmanager
    def transaction(self):
        with self.engine.begin() as con:
            yield con

    # -- writing ------------------------------------------------------------------------------------------------

    def record_run(self, con, summary: dict, fingerprints: dict) -> int:
        result = con.execute(
            runs.insert().values(
                run_at=_now(),
                profile=summary["profile"],
                profile_version=summary["profile_version"],
                fingerprints=json.dumps(fingerprints, sort_keys=True),
                counts=json.dumps(summary["counts"]),
            )
        )
        return int(result.inserted_primary_key[0])

    def excluded_parcels(self, con=None) -> set[str]:
        """Parcels not to notice: an open connection notice, or ever marked connected or exempt."""
        query = sa.select(notices.c.parcel_id).where(
            (notices.c.notice_type == "connection") & ((notices.c.is_open == 1) | notices.c.status.in_(CLOSING))
        )
        if con is not None:
            return {r[0] for r in con.execute(query)}
        with self.engine.connect() as c:
            return {r[0] for r in c.execute(query)}

    def issue(
        self,
        due: pd.DataFrame,
        *,
        actor: str,
        summary: dict | None = None,
        fingerprints: dict | None = None,
        pause=None,
    ) -> tuple[list[dict], int]:
        """Record the due notices in one transaction; returns the notices inserted and how many were already open.

        ``pause(i)`` is called between inserts (for tests that interrupt a batch).
        """
        issued: list[dict] = []
        already = 0
        with self.transaction() as con:
            skip = self.excluded_parcels(con)
            run_id = self.record_run(con, summary, fingerprints or {}) if summary else None
            for i, row in enumerate(due.to_dict("records")):  # one statement per notice; batches are hundreds
                if row["parcel_id"] in skip and row.get("notice_type", "connection") == "connection":
                    already += 1
                    continue
                values = _notice_values(row, run_id)
                inserted = con.execute(self._insert_ignore(values)).first()
                if inserted is None:
                    already += 1
                    continue
                con.execute(
                    events.insert().values(
                        at=_now(),
                        actor=actor,
                        notice_id=values["notice_id"],
                        action="issued",
                        field="status",
                        old_value=None,
                        new_value="open",
                    )
                )
                issued.append({k: values[k] for k in ("notice_id", "parcel_id", "deadline", "notice_type")})
                if pause:
                    pause(i)
        return issued, already

    def _insert_ignore(self, values: dict):
        dialect = sqlite if self.is_sqlite else postgresql
        return (
            dialect.insert(notices)
            .values(**values)
            .on_conflict_do_nothing(index_elements=["parcel_id", "notice_type"], index_where=sa.text("is_open = 1"))
            .returning(notices.c.notice_id)
        )

    def set_letter(self, con, notice_id: str, path: str) -> None:
        con.execute(notices.update().where(notices.c.notice_id == notice_id).values(letter_file=path))

    def mark(
        self, parcel_id: str, status: str, *, actor: str, note: str | None = None, deadline: str | None = None
    ) -> dict:
        """Change the open notices of a parcel: connected, extended (with a new deadline), exempt or withdrawn."""
        if status not in STATUSES[1:]:
            raise LayerError(f"Mark a notice {', '.join(STATUSES[1:])}; not {status!r}.")
        if status == "extended" and not deadline:
            raise LayerError("An extension needs the new deadline (--until YYYY-MM-DD).")
        with self.transaction() as con:
            rows = (
                con.execute(sa.select(notices).where((notices.c.parcel_id == parcel_id) & (notices.c.is_open == 1)))
                .mappings()
                .all()
            )
            if not rows:
                raise LayerError(f"Parcel {parcel_id} has no open notice.")
            for row in rows:
                changes = {"status": status, "is_open": 1 if status in OPEN else 0, "note": note}
                if deadline:
                    changes["deadline"] = deadline
                con.execute(notices.update().where(notices.c.notice_id == row["notice_id"]).values(**changes))
                for field, old, new in (
                    ("status", row["status"], status),
                    ("deadline", row["deadline"], deadline),
                    ("note", row["note"], note),
                ):
                    if new is not None and new != old:
                        con.execute(
                            events.insert().values(
                                at=_now(),
                                actor=actor,
                                notice_id=row["notice_id"],
                                action="marked",
                                field=field,
                                old_value=old,
                                new_value=new,
                            )
                        )
        return {"parcel_id": parcel_id, "status": status, "notices": [r["notice_id"] for r in rows]}

    def save_plan(self, name: str, *, profile: str, diameter_in: float, wkt: str, crs: str, result: dict) -> None:
        """Save (or replace) a named extension scenario."""
        with self.transaction() as con:
            con.execute(plans.delete().where(plans.c.name == name))
            con.execute(
                plans.insert().values(
                    name=name,
                    created_at=_now(),
                    profile=profile,
                    diameter_in=float(diameter_in),
                    geometry_wkt=wkt,
                    crs=crs,
                    result=json.dumps(result),
                )
            )

    def saved_plans(self) -> list[dict]:
        with self.engine.connect() as con:
            rows = con.execute(sa.select(plans).order_by(plans.c.created_at)).mappings().all()
        return [dict(r) | {"result": json.loads(r["result"])} for r in rows]

    def delete_plan(self, name: str) -> bool:
        """Delete a saved scenario; False when there was none of that name."""
        with self.transaction() as con:
            return con.execute(plans.delete().where(plans.c.name == name)).rowcount > 0

    # -- reading ------------------------------------------------------------------------------------------------

    def listing(
        self, *, status: str | None = None, overdue_on: dt.date | None = None, notice_type: str | None = None
    ) -> pd.DataFrame:
        query = sa.select(notices)
        if status:
            query = query.where(notices.c.status == status)
        if notice_type:
            query = query.where(notices.c.notice_type == notice_type)
        if overdue_on is not None:
            query = query.where((notices.c.is_open == 1) & (notices.c.deadline < overdue_on.isoformat()))
        with self.engine.connect() as con:
            return pd.read_sql(query.order_by(notices.c.parcel_id, notices.c.issued_date), con)

    def events_of(self, notice_id: str) -> list[dict]:
        with self.engine.connect() as con:
            rows = con.execute(sa.select(events).where(events.c.notice_id == notice_id).order_by(events.c.id))
            return [dict(r._mapping) for r in rows]

    def integrity_ok(self) -> bool:
        if not self.is_sqlite:
            return True
        with sqlite3.connect(self.url.removeprefix("sqlite:///")) as con:
            return con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"

    def backup(self, target: str) -> str:
        """A consistent copy through SQLite's online backup API (for PostgreSQL, use pg_dump)."""
        if not self.is_sqlite:
            raise LayerError("Back up a PostgreSQL register with pg_dump (the database's own backup tool).")
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        source = sqlite3.connect(self.url.removeprefix("sqlite:///"))
        dest = sqlite3.connect(target)
        try:
            with dest:
                source.backup(dest)
        finally:
            dest.close()
            source.close()
        return target


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    cur = dbapi_connection.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=FULL")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


def _notice_values(row: dict, run_id: int | None) -> dict:
    values = {k: (None if pd.isna(row.get(k)) else row.get(k)) for k in NOTICE_COLUMNS}
    if values["distance_ft"] is not None:
        values["distance_ft"] = float(values["distance_ft"])
    return values | {
        "notice_id": f"N-{uuid.uuid4().hex[:12].upper()}",
        "parcel_id": str(row["parcel_id"]),
        "run_id": run_id,
        "notice_type": row.get("notice_type", "connection"),
        "issued_date": row["issued_date"],
        "deadline": row["deadline"],
        "reason": row.get("notice_reason"),
        "status": "open",
        "is_open": 1,
        "section": row["section"],
        "letter_file": None,
        "note": None,
        "created_at": _now(),
    }


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
