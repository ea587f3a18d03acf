"""The notice register: analysis runs, batches of notices, notices and an append-only event log, in SQLite or
PostgreSQL.

- **One register per town.** It is found the same way from anywhere: the URL or path given, else
  ``SEWERPLAN_DATABASE_URL``, else the register recorded in the town's store (a setting in the GeoPackage). Never
  the current folder. A register that does not exist is created only when asked to (``create=True``); otherwise
  ``RegisterMissingError`` names the registers that do exist. A register named (given, or by the environment)
  that is not the one the store records is refused (``RegisterClashError``), never used beside it: notices issued
  from both would reach the same owners twice.
- **A notice is never recorded without its paperwork.** A batch is *prepared* (its notices inserted with status
  ``prepared``, no deadline, in one transaction), its files are written and moved into place, and only then is it
  *issued* (status ``open``, deadline set, in a second transaction). A prepared batch whose files are missing is
  cancelled, never issued: its notices never count, never get a deadline and never reach violations.
- SQLite runs in WAL mode with synchronous=FULL, every write transaction BEGIN IMMEDIATE with a busy timeout; a
  page view never takes the write lock. PostgreSQL migrations run under an advisory lock, so two processes opening
  a brand-new register at once never race.
- Dates are dates: ``DATE`` columns in PostgreSQL; in SQLite a CHECK constraint refuses anything that is not a real
  calendar date (``date(julianday(x)) IS x``), and comparisons are on ISO text, which orders as dates do.
- One open notice per parcel and type: a partial unique index (``is_open = 1``, prepared notices included), and
  inserts with ON CONFLICT DO NOTHING, so a re-run, a double click or two planners at once never duplicate one.
- One record of a connection made without a notice per parcel: a partial unique index (``notice_type = 'record'``),
  so two clerks recording the same parcel at once on PostgreSQL make one record and the second is refused. Twins an
  older register already held are kept by migration 0005 as type ``duplicate`` (the first written stays the record).
- How each notice was served: ``served_by`` as its letter says (recorded when its batch is issued, from the batch's
  manifest), and the certified mail article number once the office records it (``record_mailing``: all of a mailing
  list's numbers in one transaction, or none). Notices from before 0006 record only what is known of them. A notice
  served otherwise than by mail (``record_service``: in person, on a day, by whom; 0007) moves its deadline only
  where its law counts the period from service, the old values kept in its events.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import sqlite3
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from contextlib import closing, contextmanager, suppress
from pathlib import Path
from urllib.parse import quote

import pandas as pd
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from analysis.dates import parse_day
from analysis.errors import AnalysisError, Fix
from analysis.notices import (
    SERVED_BY,
    SERVED_IN_PERSON,
    Mailing,
    article_groups,
    article_number,
    connection_day_problem,
    deadline_after_service,
    letter_service,
    overdue_before,
    row_place,
    service_rule,
    wrong_service,
)
from analysis.profiles import MAX_PERIOD_DAYS
from layers.atomic import StoreBusyError, sync_to_disk, written_whole
from layers.errors import LayerError, quote_password, split_fragment
from layers.errors import redact_url as _redact

HEAD = "0008"  # the newest migration in layers/migrations/versions
# How many of a mailing list's problems a refusal names (``Register.record_mailing``), and then how many more.
MAILING_PROBLEMS_SHOWN = 10
STATUSES = ("open", "extended", "connected", "exempt", "withdrawn")
OPEN = ("open", "extended")
CLOSING = ("connected", "exempt")  # never noticed again
RECORD = "record"  # the notice_type of a connection recorded without a notice (``Register.record``)
# Rows that record a connection made without a notice: a record, and a duplicate record migration 0005 kept.
RECORD_TYPES = (RECORD, "duplicate")
STATES = ("prepared", "cancelled", *STATUSES)  # every status a notice row can hold
BATCH_STATES = ("prepared", "issued", "cancelled")
STORE_SETTING = "register"  # the key under which a store records its register
RECORD_WAIT_S = 10.0  # how long recording a new register waits for another short write of the store to end
_PG_LOCK = 0x5E3E9_1A4  # the advisory lock held while migrating a PostgreSQL register
_PG_MAILING_LOCK = (
    0x5E3E9_1A5  # held while recording article numbers: two lists at once are checked one after the other
)
GIVEN_BY_LETTER = ("connection", "violation")  # the notice types served by a letter (not a record, not a duplicate)
_IN_CHUNK = 500  # IDs per IN (...) list: SQLite builds before 3.32 allow 999 variables

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
    sa.Column("input_checksum", sa.String(64)),
    sa.Column("settings", sa.Text),  # JSON: the values set on the profile; NULL for runs recorded before 0004
    sa.Column("distance_ft", sa.Float),
    sa.Column("analysed_at", sa.String(32)),  # when the analysis ran; run_at is when a batch recorded it
)
batches = sa.Table(
    "batches",
    METADATA,
    sa.Column("batch_id", sa.String(40), primary_key=True),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("notice_date", sa.Date, nullable=False),
    sa.Column("deadline", sa.Date, nullable=False),
    sa.Column("folder", sa.Text, nullable=False),
    sa.Column("profile", sa.String(64), nullable=False),
    sa.Column("profile_version", sa.String(32), nullable=False),
    sa.Column("run_id", sa.Integer, sa.ForeignKey("analysis_runs.id"), nullable=True),
    sa.Column("input_checksum", sa.String(64)),
    sa.Column("actor", sa.String(64), nullable=False),
    sa.Column("created_at", sa.String(32), nullable=False),
    sa.Column("finished_at", sa.String(32)),
    sa.Column("note", sa.Text),
)
notices = sa.Table(
    "notices",
    METADATA,
    sa.Column("notice_id", sa.String(40), primary_key=True),
    sa.Column("parcel_id", sa.String(64), nullable=False),
    sa.Column("run_id", sa.Integer, sa.ForeignKey("analysis_runs.id"), nullable=True),
    sa.Column("notice_type", sa.String(16), nullable=False),
    sa.Column("issued_date", sa.Date, nullable=False),
    sa.Column("deadline", sa.Date, nullable=True),
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
    sa.Column("batch_id", sa.String(40), sa.ForeignKey("batches.batch_id"), nullable=True),
    sa.Column("hazard", sa.Text),
    sa.Column("original_notice_id", sa.String(40)),
    sa.Column("mailing_no", sa.Integer),
    # How the notice was served, as its letter said (0006): "certified mail", or what is known of a notice issued
    # before the register recorded it; NULL for one never served (prepared, cancelled, a record). The article number
    # of its certified mail envelope (digits only) once the office records it after mailing; NULL until then.
    sa.Column("served_by", sa.Text),
    sa.Column("certified_article_no", sa.String(32)),
    # Served otherwise than by mail (0007): the day it was served ("in person", ``served_by``) and who served it;
    # NULL for a notice served only by its letter. The article number of the copy mailed to the occupant at the
    # site address (0007), where the owner does not occupy the property; NULL until the office records it.
    sa.Column("served_on", sa.Date),
    sa.Column("served_by_name", sa.Text),
    sa.Column("occupant_article_no", sa.String(32)),
    # The day the parcel connected (0008): set when a notice is marked connected (the day given, else today) and
    # on a connection recorded without a notice (also its issued_date); NULL where nobody recorded it.
    sa.Column("connected_on", sa.Date),
    sa.Index(
        "one_open_notice",
        "parcel_id",
        "notice_type",
        unique=True,
        sqlite_where=sa.text("is_open = 1"),
        postgresql_where=sa.text("is_open = 1"),
    ),
    sa.Index(  # one record of a connection made without a notice per parcel (0005)
        "one_record_per_parcel",
        "parcel_id",
        unique=True,
        sqlite_where=sa.text("notice_type = 'record'"),
        postgresql_where=sa.text("notice_type = 'record'"),
    ),
    sa.Index("notices_by_parcel", "parcel_id"),
    sa.Index("notices_by_batch", "batch_id"),
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


class MailingConflictError(LayerError):
    """A mailing list given back names a notice that already holds another article number (and no correction was
    asked for)."""


class ServiceRecordedError(LayerError):
    """A notice already recorded served in person, recorded again without asking to correct it."""


class OpenNoticeError(LayerError):
    """A connection recorded without a notice for a parcel that has an open one: that notice is marked instead. The
    message says so in words; the command line and the notices page each add how (a command, a row's Save)."""


class UnfinishedBatchError(LayerError):
    """A change asked of a notice whose batch is still prepared (never issued: being written, or left unfinished by a
    process that stopped). The message says what was asked and that nothing changed; ``then`` what to do once the
    batch is settled. Whether its writer is alive, and how to settle it (a command, the page's buttons), the caller
    says (``gisapp.notices.unfinished_batch``): the register cannot see the writer's lock."""

    def __init__(self, message: str, *, batch_id: str, notice_id: str, then: str):
        super().__init__(message)
        self.batch_id = batch_id
        self.notice_id = notice_id
        self.then = then


class ConnectedRecordedError(LayerError):
    """A parcel marked connected already, marked so again without asking to correct its day."""


class RegisterReadOnlyError(LayerError):
    """A change asked of a register on a read-only disk, or in a folder this user cannot write."""


class NoticeChangedError(LayerError):
    """The notice a page asked to change is no longer open: withdrawn, marked or cancelled since the page was read."""


def _changed_words(con, parcel_id: str, notice_id: str, open_rows) -> str:
    """What happened to ``notice_id`` since the page that names it was read, and which notice is open now."""
    row = con.execute(sa.select(notices).where(notices.c.notice_id == notice_id)).mappings().first()
    if row is None or row["parcel_id"] != parcel_id:
        said = f"The register holds no notice {notice_id} of parcel {parcel_id}"
    else:
        last = con.execute(
            sa.select(events.c.actor, events.c.at)
            .where((events.c.notice_id == notice_id) & (events.c.field == "status"))
            .order_by(events.c.id.desc())
            .limit(1)
        ).first()
        by = f" (by {last[0]}, {last[1][:10]})" if last else ""
        said = f"Notice {notice_id} of parcel {parcel_id} was {row['status']} since this page was read{by}"
    now = [r for r in open_rows if r["notice_id"] != notice_id]
    if now:
        listed = ", ".join(f"{r['notice_id']} (issued {_iso(r['issued_date'])})" for r in now)
        said += f", and the parcel's open notice is now {listed}, which this page did not show"
    return f"{said}: nothing was changed. Reload the notices page, check the notice, then save again."


def _shell_word(text: str) -> str:
    import shlex

    return shlex.quote(str(text))


class RegisterMissingError(LayerError):
    """The register asked for does not exist (and creating one was not asked for)."""

    def __init__(self, message: str, *, url: str, known: list[str]):
        super().__init__(message)
        self.url = url
        self.known = known


class RegisterClashError(LayerError):
    """The register named (given, or ``SEWERPLAN_DATABASE_URL``) is another than the one the store records: a
    page using one and a command the other would give the same owners second notices, the record split in two.

    ``named`` and ``recorded`` are the two registers' URLs without passwords, ``store`` the store's location and
    ``named_by`` ``"given"`` (a command's register, the web's ``REGISTER`` setting) or ``"environment"``.
    """

    def __init__(self, message: str, *, store: str, named: str, recorded: str, named_by: str):
        super().__init__(message)
        self.store = store
        self.named = named
        self.recorded = recorded
        self.named_by = named_by


# -- finding the register -----------------------------------------------------------------------------------------


def check_store_register(given: str | None, *, store: str | Path | None) -> None:
    """Refuse (``RegisterClashError``) a register named by ``given`` or ``SEWERPLAN_DATABASE_URL`` that is not the
    one ``store`` records. A store recording none yet takes the one named (``Register`` records it when creating);
    with nothing named, the store's own is used and nothing can clash."""
    named = given or os.environ.get("SEWERPLAN_DATABASE_URL")
    if not named or not store:
        return
    recorded = _store_register(store)
    if not recorded or same_register(_as_url(named), _as_url(recorded)):
        return
    named_by = "given" if given else "environment"
    shown, kept = _redact(_as_url(named)), _redact(_as_url(recorded))
    by = " (SEWERPLAN_DATABASE_URL)" if named_by == "environment" else ""
    # Worded without a flag or a setting's place: the command line and the web say which of theirs named it.
    raise RegisterClashError(
        f"The store {_redact(str(store))} already keeps its notices in the register {kept}, but {shown} is named "
        f"as the register{by}: notices issued from both would give the same owners second notices with other "
        "deadlines and split the town's record between two registers, so neither is used. Name the store's "
        f"register, or, if the town really moved its register to {shown}, record that one in the store first (the "
        "value of the key register in the store's sewerplan_settings table).",
        store=str(store),
        named=shown,
        recorded=kept,
        named_by=named_by,
    )


def same_register(a: str, b: str) -> bool:
    """Whether two register URLs are one register: one SQLite file (however its path is spelt), or one schema of
    one PostgreSQL database (host, port, database and ``search_path``; any login and other options)."""
    if a.startswith("sqlite") or b.startswith("sqlite"):
        if not (a.startswith("sqlite:///") and b.startswith("sqlite:///")):
            return False
        first, second = (Path(u.removeprefix("sqlite:///")) for u in (a, b))
        with suppress(OSError):
            if first.exists() and second.exists():
                return os.path.samefile(first, second)
        return first.resolve() == second.resolve()
    return _database_place(a) == _database_place(b)


def _database_place(url: str) -> tuple:
    """A database register's place: backend, host, port, database and the schema its ``search_path`` names."""
    from sqlalchemy.engine import make_url

    try:
        parts = make_url(quote_password(split_fragment(url)[0].replace("postgres://", "postgresql://", 1)))
    except Exception:  # noqa: BLE001 - not a URL SQLAlchemy reads: compared as written
        return (url,)
    value = parts.query.get("options")
    options = [o for v in (value if isinstance(value, tuple) else (value or "",)) for o in str(v).split()]
    paths = [o.split("search_path=", 1)[1] for o in options if "search_path=" in o]
    return (
        parts.get_backend_name(),
        (parts.host or "").lower(),
        parts.port or 5432,
        parts.database,
        paths[-1] if paths else None,
    )


def register_url(given: str | None = None, *, store: str | Path | None = None) -> str:
    """The register's URL: ``given``, else ``SEWERPLAN_DATABASE_URL``, else the register recorded in ``store``.

    A path is made absolute. Raises RegisterMissingError when none of them names a register.
    """
    url = given or os.environ.get("SEWERPLAN_DATABASE_URL") or _store_register(store)
    if url:
        return _as_url(url)
    where = f" for the store {_redact(str(store))}" if store else ""
    known = known_registers(store=store)
    if left := _unrecorded(store):
        raise RegisterMissingError(left, url="", known=known)
    raise RegisterMissingError(
        f"No notice register is set up{where}: none was named, SEWERPLAN_DATABASE_URL is not set"
        + (", and the store records none." if store else ", and no store was given to look in.")
        + (_known_text(known) if store or known else ""),  # without a store, none was looked for
        url="",
        known=known,
    )


def default_register_path(store: str | Path) -> Path | str:
    """Where a new register goes when a store has none: beside a GeoPackage store, ``<store name>-register.sqlite``;
    for a PostGIS store, the schema ``<schema>_register`` of its database (a URL, without the password)."""
    from layers.store import open_store

    location = open_store(store).default_register()
    return location if "://" in location else Path(location)


def known_registers(*, store: str | Path | None = None, near: str | None = None) -> list[str]:
    """Registers that exist and can be named: the environment's, the store's, and SQLite registers in the folders
    of the store and of ``near`` (the path that was asked for)."""
    found: list[str] = []
    env = os.environ.get("SEWERPLAN_DATABASE_URL")
    if env:
        found.append(_redact(_as_url(env)))
    recorded = _store_register(store)
    if recorded:
        found.append(_redact(_as_url(recorded)))
    folders = {Path(store).resolve().parent} if store and "://" not in str(store) else set()
    if near and "://" not in near:
        folders.add(Path(near).resolve().parent)
    for folder in sorted(folders):
        with suppress(OSError):
            for path in sorted(folder.glob("*.sqlite")):
                if _is_register_file(path):
                    found.append(f"sqlite:///{path}")
    return list(dict.fromkeys(found))


def _unrecorded(store) -> str | None:
    """Why a GeoPackage store that records no register has one beside it all the same, at the path its first register
    gets: a `notices issue --new` (or the notices page's "Create the notice register") stopped, killed or by a power
    cut, after creating the file and before recording it in the store. None when there is no such file.

    It is named, not taken: a command that only reads (``notices list``, a page view) never writes the store, and the
    town's register is recorded by the clerk's own step (``--new``, the page's button), which takes this file as it
    is (an empty one is made a register; one holding notices keeps them)."""
    if not store or "://" in str(store) or not Path(store).is_file():
        return None
    path = Path(default_register_path(store))
    if not any(p.exists() for p in (path, path.with_name(path.name + "-wal"))):
        return None
    held = _register_rows(path)
    if held is None:
        what = "a register whose creation never finished (it holds no table yet)"
    elif not any(held.values()):
        what = "an empty notice register (no notice, no batch)"
    else:
        what = f"a notice register holding {held['notices']:,} notice(s) and {held['batches']:,} batch(es)"
    taken = (
        "it holds nothing, so nothing is lost"
        if held is None or not any(held.values())
        else "check first that it is this town's; it may also be named as the register"
    )
    # Worded by what happened and what to do, not by a flag: the command line adds its --new or --register, the
    # notices page its button (the error's Fix, ``gisapp.services``).
    return (
        f"No notice register is recorded in the store {_redact(str(store))}, but {path} beside it is {what} that the "
        "store does not record: a first issue of notices that creates the town's register stopped before recording "
        f"it leaves one. Creating the town's register again takes it as the town's register: {taken}."
    )


def _register_rows(path: Path) -> dict[str, int] | None:
    """The notices and batches an SQLite register holds (its write-ahead log read too), or None when it has no
    notices table yet or cannot be read."""
    try:
        with closing(_read_only_connect(path, timeout=5)) as con:
            tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if not {"notices", "batches"} <= tables:
                return None
            return {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("notices", "batches")}
    except (sqlite3.Error, OSError):
        return None


def _known_text(known: list[str]) -> str:
    if not known:
        return " No register exists yet."
    return " Registers that exist: " + ", ".join(known) + "."


def _store_register(store) -> str | None:
    """The register the store records (a GeoPackage's relative path made absolute; a PostGIS store's URL on its own
    server with the store's password)."""
    from layers.store import open_store

    if not _store_exists(store):
        return None
    found = open_store(store)
    value = found.read_setting(STORE_SETTING)
    return found.register_location(value) if value else value


def _store_exists(store) -> bool:
    """A store to look in or record in: a GeoPackage file, or a PostGIS store's schema that exists."""
    from layers.store import is_store, store_exists

    if not store:
        return False
    if "://" in str(store):
        return is_store(store) and store_exists(store)
    return Path(store).is_file()


def _as_url(url: str) -> str:
    url = str(url)
    if "://" in url:
        return url.replace("postgres://", "postgresql://", 1)
    return f"sqlite:///{Path(url).expanduser().resolve()}"


def _is_register_file(path: Path) -> bool:
    try:
        if not path.is_file() or path.stat().st_size == 0:
            return False
        with closing(_read_only_connect(path)) as con:
            return (
                con.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='notices'").fetchone() is not None
            )
    except (sqlite3.Error, OSError):
        return False


def _writable(path: Path) -> bool:
    """Whether this process can write the SQLite register ``path``: the file, and its folder (where SQLite makes
    the write-ahead log and shared-memory files beside it) unless both are there already and can be written. False
    on a read-only disk (a CD, a share mounted read-only, a backup drive write-protected) or a folder not the user's."""
    if not os.access(path, os.W_OK):
        return False
    if os.access(path.parent, os.W_OK):
        return True
    beside = [path.with_name(path.name + suffix) for suffix in ("-wal", "-shm")]
    return all(p.is_file() and os.access(p, os.W_OK) for p in beside)


def _read_only_uri(path: Path) -> str:
    """The SQLite URI that reads ``path`` without writing anything beside it. A register in WAL mode is read from
    a read-only disk only as ``immutable`` (SQLite cannot make its shared-memory file there), which would miss what
    a write-ahead log holds: a log left beside it is read with ``mode=ro`` (SQLite reads an existing log and
    shared-memory file from a read-only disk), and with none the file alone holds every committed write."""
    log = path.with_name(path.name + "-wal")
    has_log = log.is_file() and log.stat().st_size > 0
    return f"file:{quote(str(path))}?mode=ro" + ("" if has_log else "&immutable=1")


def _read_only_connect(path: Path, timeout: float = 30) -> sqlite3.Connection:
    """A connection that only reads ``path``: ``mode=ro``, else (a register on a read-only disk, whose write-ahead
    log's shared memory cannot be made) the read-only URI (``_read_only_uri``)."""
    con = None
    try:
        con = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True, timeout=timeout)
        con.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return con
    except sqlite3.OperationalError:
        if con is not None:
            con.close()
        return sqlite3.connect(_read_only_uri(path), uri=True, timeout=timeout)


def _is_read_only_error(exc: BaseException) -> bool:
    """Whether SQLite refused because the register's file or folder cannot be written."""
    text = str(getattr(exc, "orig", exc)).lower()
    return "readonly database" in text or "read-only" in text or "unable to open database file" in text


def _is_empty_database(path: Path) -> bool:
    """An SQLite database with no table yet: a register another process is creating this moment (its schema not
    yet committed), to be waited for under the write lock rather than refused; or one whose creation was killed.

    A creation killed (kill -9, a power cut) while SQLite switched the new file to WAL leaves its first page and a
    hot rollback journal, which a read-only connection cannot roll back: the file read as "not a notice register",
    and the ``--new`` that every message prescribes for it failed the same way. Opened for writing, SQLite rolls the
    unfinished creation back, as any writer of the file would, and the file is the empty database it was."""
    query = "SELECT count(*) FROM sqlite_master"
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)) as con:
            return con.execute(query).fetchone()[0] == 0
    except (sqlite3.Error, OSError):
        if not path.with_name(f"{path.name}-journal").is_file():
            return False
    try:
        with closing(sqlite3.connect(str(path), timeout=30)) as con:
            return con.execute(query).fetchone()[0] == 0
    except (sqlite3.Error, OSError):
        return False


# -- the register -------------------------------------------------------------------------------------------------


class Register:
    """An open register: prepare, finish and cancel batches, mark notices, list, back up.

    ``url`` (a path or database URL) else ``SEWERPLAN_DATABASE_URL`` else the register recorded in ``store``. A
    register that does not exist is created only with ``create=True`` (and then recorded in ``store`` when the store
    has none); otherwise RegisterMissingError.
    """

    def __init__(self, url: str | None = None, *, store: str | Path | None = None, create: bool = True):
        check_store_register(url, store=store)  # a register named is the one the store records, or it records none
        try:
            self.url = register_url(url, store=store)
        except RegisterMissingError:
            if not (create and _store_exists(store)):
                raise
            from layers.store import open_store

            # The town's first register: beside a GeoPackage store; in a schema of its own beside a PostGIS store's.
            found = open_store(store)
            self.url = _as_url(found.register_location(str(default_register_path(store))))
            found.prepare_register(self.url)
        self.is_sqlite = self.url.startswith("sqlite")
        self.path = Path(self.url.removeprefix("sqlite:///")) if self.is_sqlite else None
        self.read_only = False  # a register on a read-only disk, or in a folder this user cannot write: read only
        if self.is_sqlite:
            exists = self.path.is_file() and self.path.stat().st_size > 0
            self.read_only = exists and not _writable(self.path)
            if exists and not _is_register_file(self.path):
                if _is_empty_database(self.path):
                    exists = False  # being created by another process: the migration below waits for its write lock
                elif not _is_register_file(self.path):  # looked at again: another process's schema, committed
                    # between the two looks, made a register of an empty database (seen once in 24 such races)
                    raise LayerError(f"{self.path} is not a notice register (it has no notices table).")
            if not exists:
                self._refuse_or_prepare(create, store, url)
                try:
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                except OSError as exc:
                    raise LayerError(f"Cannot create the register {self.path}: {exc.strerror}.") from exc
            read_uri = _read_only_uri(self.path) if self.read_only else None
            self.engine = _sqlite_engine(self.url, foreign_keys=True, read_only_uri=read_uri)
        else:
            self.engine = sa.create_engine(quote_password(self.url), poolclass=sa.pool.NullPool)
            try:
                with self.engine.connect() as con:
                    exists = sa.inspect(con).has_table("notices")
            except sa.exc.OperationalError as exc:
                raise LayerError(
                    f"Cannot open the register {_redact(self.url)}: {_redact(self.url, str(exc.orig))}"
                ) from exc
            if not exists:
                self._refuse_or_prepare(create, store, url)
        try:
            try:
                self._migrate()
            except sa.exc.OperationalError as exc:
                if not (self.is_sqlite and _is_read_only_error(exc) and _is_register_file(self.path)):
                    raise
                # A disk read-only in a way the permissions do not tell (SQLite found it so): read it as such.
                self.engine.dispose()
                self.read_only = True
                self.engine = _sqlite_engine(self.url, foreign_keys=True, read_only_uri=_read_only_uri(self.path))
                self._migrate()
        except sa.exc.OperationalError as exc:
            raise LayerError(
                f"Cannot open the register {_redact(self.url)}: {_redact(self.url, str(exc.orig))}"
            ) from exc
        if create and store:
            self._record_in_store(store)

    def _refuse_or_prepare(self, create: bool, store, given: str | None) -> None:
        if create:
            # Checked on opening; again here, as another process may have recorded the store's register since.
            check_store_register(given, store=store)
            return
        known = known_registers(store=store, near=str(self.path) if self.path else None)
        raise RegisterMissingError(
            f"There is no notice register at {_redact(self.url)}." + _known_text(known) + " Use one of those; a new, "
            "empty register is created only when asked for.",
            url=self.url,
            known=known,
        )

    def _record_in_store(self, store) -> None:
        from layers.store import open_store

        if not _store_exists(store):
            return
        found = open_store(store)
        value = found.recordable(self.url) if not self.is_sqlite else str(self.path)
        # Two clerks opening the town's first register at once both find none recorded; the second to write finds
        # the store's lock taken by the first's short write, so it waits a little for it (not for a whole analysis
        # run, which is refused with the usual sentence) and then finds the register recorded.
        patience = time.monotonic() + RECORD_WAIT_S
        while not found.read_setting(STORE_SETTING):
            try:
                found.write_setting(STORE_SETTING, value)
            except StoreBusyError:
                if time.monotonic() > patience:
                    raise
                time.sleep(0.05)

    def _migrate(self) -> None:
        """Bring the schema to HEAD: a read-only version check first (page views never take the write lock), then
        Alembic under the write lock (SQLite BEGIN IMMEDIATE) or an advisory lock (PostgreSQL)."""
        if self._version() == HEAD:
            return
        if self.read_only:
            raise LayerError(
                f"The register {self.path} was written by an earlier sewerplan and must be brought up to date, which "
                f"writes it, but {self._read_only_words()}: open it once where it can be written."
            )
        from alembic import command
        from alembic.config import Config

        config = Config()
        config.set_main_option("script_location", str(Path(__file__).parent / "migrations"))
        engine = _sqlite_engine(self.url, foreign_keys=False) if self.is_sqlite else self.engine
        try:
            with engine.execution_options(write=True).begin() as con:
                if not self.is_sqlite:
                    con.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_LOCK})
                config.attributes["connection"] = con
                command.upgrade(config, "head")
                if self.is_sqlite and con.exec_driver_sql("PRAGMA foreign_key_check").first() is not None:
                    raise LayerError(f"Migrating {self.path} broke a foreign key: the register was left unchanged.")
        finally:
            if engine is not self.engine:
                engine.dispose()

    def _version(self) -> str | None:
        try:
            with self.engine.connect() as con:
                return con.execute(sa.text("SELECT version_num FROM alembic_version")).scalar()
        except sa.exc.DBAPIError:
            return None

    def close(self) -> None:
        self.engine.dispose()

    @contextmanager
    def transaction(self):
        """A write transaction: on SQLite BEGIN IMMEDIATE (the write lock at once, so two writers queue instead of
        failing half way); reads use plain connections, which never wait for a writer under WAL. A register that
        cannot be written (``check_writable``) is refused before anything is tried, one whose disk SQLite finds
        read-only only then in the same words."""
        self.check_writable()
        try:
            with self.engine.execution_options(write=True).begin() as con:
                yield con
        except sa.exc.OperationalError as exc:
            if not (self.is_sqlite and _is_read_only_error(exc)):
                raise
            self.read_only = True
            raise RegisterReadOnlyError(self._read_only_refusal()) from exc

    def check_writable(self) -> None:
        """Refuse, in one sentence, to change a register on a read-only disk or in a folder this user cannot write
        (``RegisterReadOnlyError``); reading it (listing, backing up, a preview) works all the same."""
        if self.read_only:
            raise RegisterReadOnlyError(self._read_only_refusal())

    def _read_only_words(self) -> str:
        return f"it is on a read-only disk or in a folder this user cannot write ({self.path.parent})"

    def _read_only_refusal(self) -> str:
        return (
            f"The register {self.path} cannot be written, {self._read_only_words()}: nothing was changed; make the "
            "change where the register can be written, or ask for write access to that folder."
        )

    def _sqlite_connect(self) -> sqlite3.Connection:
        """A plain SQLite connection to the register (read only on a read-only disk), for the backup API."""
        if self.read_only:
            return sqlite3.connect(_read_only_uri(self.path), uri=True, timeout=30)
        return sqlite3.connect(str(self.path), timeout=30)

    # -- runs and batches -----------------------------------------------------------------------------------------

    def record_run(self, con, summary: dict, fingerprints: dict, checksum: str | None = None) -> int:
        """Record the run a batch is issued from: its profile, the values set on it and its distance (from the run
        record's ``workspace``), so the map can tell the notice's run from a later what-if run."""
        now = _now()
        settings = (summary.get("workspace") or {}).get("settings")
        result = con.execute(
            runs.insert().values(
                run_at=now,
                profile=summary["profile"],
                profile_version=summary["profile_version"],
                fingerprints=json.dumps(fingerprints, sort_keys=True, default=str),
                counts=json.dumps(summary.get("counts", {})),
                input_checksum=checksum,
                settings=None if settings is None else json.dumps(settings, sort_keys=True, default=str),
                distance_ft=summary.get("distance_ft"),
                analysed_at=str(summary.get("run_at") or now),
            )
        )
        return int(result.inserted_primary_key[0])

    def run(self, run_id: int) -> dict | None:
        """A recorded run, its ``settings`` read back (None where a run recorded before 0004 did not keep them)."""
        with self.engine.connect() as con:
            row = con.execute(sa.select(runs).where(runs.c.id == run_id)).mappings().first()
        if row is None:
            return None
        found = dict(row)
        found["settings"] = None if found["settings"] is None else json.loads(found["settings"])
        return found

    def excluded_parcels(self, con=None) -> set[str]:
        """Parcels not to notice: an open or prepared connection notice, or ever marked connected or exempt (a
        connection recorded without a notice too)."""
        query = sa.select(notices.c.parcel_id).where(
            ((notices.c.notice_type == "connection") & ((notices.c.is_open == 1) | notices.c.status.in_(CLOSING)))
            | ((notices.c.notice_type == RECORD) & notices.c.status.in_(CLOSING))
        )
        if con is not None:
            return {r[0] for r in con.execute(query)}
        with self.engine.connect() as c:
            return {r[0] for r in c.execute(query)}

    def open_parcels(self, notice_type: str) -> set[str]:
        """Parcels holding an open (or prepared) notice of ``notice_type``: those the one-open-notice index keeps a
        batch of that type from noticing again."""
        query = sa.select(notices.c.parcel_id).where((notices.c.notice_type == notice_type) & (notices.c.is_open == 1))
        with self.engine.connect() as c:
            return {r[0] for r in c.execute(query)}

    def prepared_parcels(self, notice_type: str = "connection") -> dict[str, str]:
        """Parcels holding a prepared notice of ``notice_type`` (its batch not yet issued or cancelled: being written,
        or left unfinished by a process that stopped), each with its batch ID. They are excluded from a batch as an
        open notice is, but no letter of theirs has been mailed."""
        query = sa.select(notices.c.parcel_id, notices.c.batch_id).where(
            (notices.c.notice_type == notice_type) & (notices.c.status == "prepared")
        )
        with self.engine.connect() as c:
            return {r[0]: r[1] for r in c.execute(query)}

    def prepare_batch(
        self,
        due: pd.DataFrame,
        *,
        batch_id: str,
        kind: str,
        notice_date: dt.date,
        deadline: dt.date,
        folder: str,
        actor: str,
        profile: tuple[str, str],
        summary: dict | None = None,
        fingerprints: dict | None = None,
        checksum: str | None = None,
        pause: Callable[[int], None] | None = None,
    ) -> dict:
        """Record a batch as *prepared*, with its notices (status prepared, no deadline), in one transaction.

        Returns ``{"batch_id", "notices": [{notice_id, parcel_id, ...}], "already": n}``; parcels already holding
        an open or prepared notice of the kind are skipped. With nothing new to record, nothing is written and
        ``notices`` is empty. ``pause(i)`` is called between inserts (for tests that interrupt a batch).
        """
        recorded: list[dict] = []
        already = 0
        with self.transaction() as con:
            skip = self.excluded_parcels(con) if kind == "connection" else set()
            run_id = self.record_run(con, summary, fingerprints or {}, checksum) if summary else None
            con.execute(
                batches.insert().values(
                    batch_id=batch_id,
                    kind=kind,
                    status="prepared",
                    notice_date=_date(notice_date),
                    deadline=_date(deadline),
                    folder=str(folder),
                    profile=profile[0],
                    profile_version=profile[1],
                    run_id=run_id,
                    input_checksum=checksum,
                    actor=actor,
                    created_at=_now(),
                )
            )
            for i, row in enumerate(due.to_dict("records")):  # one statement per notice; batches are hundreds
                if str(row["parcel_id"]) in skip:
                    already += 1
                    continue
                values = _notice_values(row, run_id, batch_id, kind)
                if con.execute(self._insert_ignore(values)).first() is None:
                    already += 1
                    continue
                _event(con, actor, values["notice_id"], "prepared", "status", None, "prepared")
                recorded.append({k: values[k] for k in ("notice_id", "parcel_id", "notice_type")} | {"row": row})
                if pause:
                    pause(i)
            if not recorded:
                con.execute(batches.delete().where(batches.c.batch_id == batch_id))
        return {"batch_id": batch_id, "notices": recorded, "already": already}

    def _insert_ignore(self, values: dict):
        dialect = sqlite if self.is_sqlite else postgresql
        return (
            dialect.insert(notices)
            .values(**values)
            .on_conflict_do_nothing(index_elements=["parcel_id", "notice_type"], index_where=sa.text("is_open = 1"))
            .returning(notices.c.notice_id)
        )

    def finish_batch(
        self, batch_id: str, *, letters: Mapping[str, tuple], actor: str, as_dated: str | None = None
    ) -> int:
        """Issue a prepared batch whose files are in place: each notice gets its letter (path in the batch folder and
        mailing-list row), status open and the batch's deadline. ``letters`` must cover every notice of the batch:
        ``(path, mailing_no)``, or ``(path, mailing_no, served_by)`` with how that letter says it is served (the
        batch's manifest keeps it beside each letter), which the notice records as ``served_by``.

        ``as_dated``: a batch finished after the date its letters bear, on the clerk's word that they were mailed on
        it; the sentence saying so is kept as the batch's note and in an event of each notice (``issued as dated``),
        so a board can see who finished it, when, and on what word."""
        with self.transaction() as con:
            batch = con.execute(sa.select(batches).where(batches.c.batch_id == batch_id)).mappings().first()
            if batch is None or batch["status"] != "prepared":
                state = batch["status"] if batch else "unknown"
                raise LayerError(f"Batch {batch_id} cannot be issued: it is {state}, not prepared.")
            ids = [r[0] for r in con.execute(sa.select(notices.c.notice_id).where(notices.c.batch_id == batch_id))]
            missing = sorted(set(ids) - set(letters))
            if missing:
                raise LayerError(
                    f"Batch {batch_id} cannot be issued: {len(missing)} notice(s) have no letter "
                    f"({', '.join(missing[:5])})."
                )
            for notice_id in ids:
                path, mailing_no, *served = letters[notice_id]
                con.execute(
                    notices.update()
                    .where((notices.c.notice_id == notice_id) & (notices.c.status == "prepared"))
                    .values(
                        status="open",
                        deadline=batch["deadline"],
                        letter_file=path,
                        mailing_no=int(mailing_no),
                        served_by=served[0] if served else None,
                    )
                )
                _event(con, actor, notice_id, "issued", "status", "prepared", "open")
                if as_dated:
                    _event(con, actor, notice_id, "issued as dated", "note", None, as_dated[:500])
            done = {"status": "issued", "finished_at": _now()} | ({"note": as_dated[:500]} if as_dated else {})
            con.execute(batches.update().where(batches.c.batch_id == batch_id).values(**done))
        return len(ids)

    def cancel_batch(self, batch_id: str, *, actor: str, why: str) -> int:
        """Cancel a prepared batch: its notices were never mailed, so they close without a deadline."""
        with self.transaction() as con:
            batch = con.execute(sa.select(batches.c.status).where(batches.c.batch_id == batch_id)).first()
            if batch is None or batch[0] != "prepared":
                raise LayerError(f"Batch {batch_id} cannot be cancelled: it is {batch[0] if batch else 'unknown'}.")
            ids = [r[0] for r in con.execute(sa.select(notices.c.notice_id).where(notices.c.batch_id == batch_id))]
            con.execute(
                notices.update()
                .where(notices.c.batch_id == batch_id)
                .values(status="cancelled", is_open=0, note=why[:500])
            )
            for notice_id in ids:
                _event(con, actor, notice_id, "cancelled", "status", "prepared", "cancelled")
            con.execute(
                batches.update()
                .where(batches.c.batch_id == batch_id)
                .values(status="cancelled", finished_at=_now(), note=why[:500])
            )
        return len(ids)

    # -- the mailing -------------------------------------------------------------------------------------------------

    def record_mailing(
        self,
        mailings: Sequence,
        *,
        actor: str,
        correct: bool = False,
        problems: Sequence[str] = (),
        pause: Callable[[int], None] | None = None,
        today: dt.date | None = None,
    ) -> dict:
        """Record the article number of each envelope (``analysis.notices.Mailing``: a mailing-list row given back)
        on every notice it served, with an event each, in one transaction: all or nothing. The number is of the
        service its letter names (``analysis.notices.wrong_service``): certified mail in the US, registered mail
        (international) for an owner abroad, certified mail for the copy to the occupant at the site address.

        Refused, every problem named at once and nothing written: a notice the register does not hold; one of a batch
        never issued (cancelled, or unfinished: said once per batch with its rows, and the unfinished batches' IDs
        kept on the refusal as ``unfinished_batches`` for the caller to say how each is settled) or no notice given
        by letter (a record); a row
        whose ``mailing_no`` is not the letter the register holds for its notices (a list edited, or another batch's);
        a number the register already holds for another envelope; and a notice that already holds another number
        (``MailingConflictError``), unless ``correct``, which replaces it, the old number kept in the event. A
        correction is checked against the register as the list leaves it: a number the list moves from one of its
        envelopes to another (two receipts swapped, an owner's and an occupant's included) is taken; one still held
        by a notice the list does not name, or given on two rows, is refused. The same
        number again changes nothing, so the list can be given back again as more receipts come in. A row to the
        occupant at the site address (``--occupant``) is its own envelope: its number is kept as each notice's
        ``occupant_article_no``, checked as the owner's are (a number held by another envelope, the owner's letter's
        included; a notice already holding another occupant's number, unless ``correct``). ``problems``: what is
        wrong in the list itself
        (``analysis.notices.mailing_record``), refused with the rest. ``pause(i)`` is called between writes (for
        tests that kill it).

        A number recorded ``today`` for a letter dated after it (a receipt that would be postmarked before the date
        its letter states, and the notice period runs from that date) is recorded, since the register keeps what
        happened, but never silently: ``before_date`` lists each such batch with its letters' date and how many
        notices, and each notice gets a ``mailed before its date`` event saying so, in the same transaction.
        """
        wanted = sorted({n for m in mailings for n in m.notice_ids})
        numbers = sorted({m.article_no for m in mailings})
        problems = list(problems)
        conflicts = 0
        writes: list[tuple[str, str, str | None, str]] = []  # notice, column, old number, new number
        done = {"letters": 0, "recorded": 0, "corrected": 0, "unchanged": 0}
        # the copies to the occupant, apart: their envelopes, and their numbers on the notices they copy
        done |= {"occupant_copies": 0, "occupant_recorded": 0, "occupant_corrected": 0, "occupant_unchanged": 0}
        early: dict[tuple, int] = {}  # (batch, letters' date): notices whose number is recorded before that date
        early_notices: dict[str, dt.date] = {}
        # Notices of a batch never issued (prepared: unfinished; or cancelled), by batch: where its problem is said,
        # and the list's rows that name it.
        unissued: dict[tuple, tuple[int, list]] = {}
        with self.transaction() as con:
            if not self.is_sqlite:  # two lists recorded at once are checked one after the other
                con.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_MAILING_LOCK})
            held = {}
            for part in _chunks(wanted):
                for r in con.execute(sa.select(notices).where(notices.c.notice_id.in_(part))).mappings():
                    held[r["notice_id"]] = r
            holders: dict[str, list] = {}  # each number's notices, and whose envelope: the owner's or the occupant's
            for part in _chunks(numbers):
                query = sa.select(
                    notices.c.notice_id,
                    notices.c.batch_id,
                    notices.c.mailing_no,
                    notices.c.certified_article_no,
                    notices.c.occupant_article_no,
                )
                found = query.where(notices.c.certified_article_no.in_(part) | notices.c.occupant_article_no.in_(part))
                for r in con.execute(found).mappings():
                    for column in ("certified_article_no", "occupant_article_no"):
                        if r[column] in part:
                            holders.setdefault(r[column], []).append(dict(r) | {"column": column})
            # A correction is checked against the register as the list leaves it: a number the list moves from one
            # of its envelopes to another (two receipts swapped) is no longer held where the list replaces it.
            replaced = _numbers_given(mailings, held) if correct else {}
            for m in mailings:
                by_id = m.mailing_no is None  # one notice named by its ID (``record_article_number``), no list
                where = f"notice {', '.join(m.notice_ids)}" if by_id else f"{m.place} (letter {m.mailing_no:04d})"
                unknown = [n for n in m.notice_ids if n not in held]
                if unknown:
                    problems.append(f"{where}: the register holds no notice {', '.join(unknown)}")
                rows = [held[n] for n in m.notice_ids if n in held]
                if not rows:
                    continue
                # The copy to the occupant at the site address: its notices went in the owner's letter, and this
                # envelope's number is kept beside it (occupant_article_no).
                copy = _is_occupant_copy(m, rows)
                column = "occupant_article_no" if copy else "certified_article_no"
                bad = False
                for r in rows:
                    n = r["notice_id"]
                    if r["notice_type"] not in GIVEN_BY_LETTER:
                        problems.append(f"{where}: {n} is a {r['notice_type']}, not a notice given by letter")
                    elif r["status"] in ("prepared", "cancelled"):
                        # Said once per batch, where its first row is, with every row of it (below).
                        batch_key = (r["batch_id"], r["status"])
                        if batch_key not in unissued:
                            unissued[batch_key] = (len(problems), [])
                            problems.append("")
                        if not unissued[batch_key][1] or unissued[batch_key][1][-1] is not m:
                            unissued[batch_key][1].append(m)
                    elif r["batch_id"] is None and not by_id:
                        problems.append(
                            f"{where}: notice {n} was issued before batches (before migration 0003): its letter had no "
                            "mailing-list row, so no list can be matched to it; record its article number by the "
                            "notice's ID, one notice at a time"
                        )
                    elif by_id and r["batch_id"] is not None:
                        went = f"letter {int(r['mailing_no']):04d}" if r["mailing_no"] else "a letter"
                        problems.append(
                            f"{where} went in {went} of batch {r['batch_id']}: record its number from the batch's "
                            "mailing list given back, which checks it against the letter (a number is recorded by "
                            "the notice's ID only for a notice issued before batches)"
                        )
                    elif not copy and r["mailing_no"] != m.mailing_no:
                        went = f"letter {int(r['mailing_no']):04d}" if r["mailing_no"] else "no numbered letter"
                        problems.append(
                            f"{where}: notice {n} went in {went} of batch {r['batch_id']}, not this row's; give back "
                            "the batch's own mailing list with its mailing_no column as written"
                        )
                    elif r[column] and r[column] != m.article_no and not correct:
                        conflicts += 1
                        held_no, given_no = article_groups(r[column]), article_groups(m.article_no)
                        whose = " for its copy to the occupant" if copy else ""
                        problems.append(
                            f"{where}: notice {n} already holds article number {held_no}{whose}, not {given_no}"
                        )
                    else:
                        continue
                    bad = True
                envelopes = {_envelope(r) for r in rows}
                if len(envelopes) > 1:
                    problems.append(f"{where}: its notices went in different letters ({', '.join(m.notice_ids)})")
                    bad = True
                # The receipt is of the service the letter's mail line names: certified mail in the US, registered
                # mail (international) abroad; the copy to the occupant goes to the site address, in the US.
                services = {letter_service(r["served_by"]) for r in rows}
                service = SERVED_BY if copy else services.pop() if len(services) == 1 else None
                wrong = wrong_service(m.article_no, service, copy=copy)
                if wrong:
                    problems.append(f"{where}: {wrong}")
                    bad = True
                others = [
                    h
                    for h in holders.get(m.article_no, [])
                    if (
                        h["column"] != column
                        or (h["notice_id"] not in m.notice_ids and (copy or _envelope(h) not in envelopes))
                    )
                    and replaced.get((h["notice_id"], h["column"]), m.article_no) == m.article_no
                ]
                if others:
                    h = others[0]
                    letter = (
                        f"its copy to the occupant, in batch {h['batch_id']}"
                        if h["column"] == "occupant_article_no"
                        else f"letter {int(h['mailing_no'] or 0):04d} of batch {h['batch_id']}"
                        if h["batch_id"]
                        else "its letter, issued before batches"
                    )
                    problems.append(
                        f"{where}: article number {article_groups(m.article_no)} is already recorded for notice "
                        f"{h['notice_id']} ({letter}): each envelope has its own number"
                    )
                    bad = True
                if bad or unknown:
                    continue
                done["occupant_copies" if copy else "letters"] += 1
                key = "occupant_{}" if copy else "{}"
                for r in rows:
                    old = r[column]
                    if old == m.article_no:
                        done[key.format("unchanged")] += 1
                    else:
                        writes.append((r["notice_id"], column, old, m.article_no))
                        done[key.format("corrected" if old else "recorded")] += 1
                        dated = _date(r["issued_date"])
                        if today is not None and dated is not None and dated > today:
                            # by batch; a notice issued before batches (by its ID) by itself
                            group = (r["batch_id"], dated, None if r["batch_id"] else r["notice_id"])
                            early[group] = early.get(group, 0) + 1
                            early_notices[r["notice_id"]] = dated
            for (batch_id, status), (at, rows_of) in unissued.items():
                problems[at] = _unissued_words(batch_id, status, rows_of)
            if problems:
                # The first few, and how many more: a list given back with every number wrong (a whole batch
                # typed again after it was recorded) was told all 520 in one 70,000-character sentence.
                more = len(problems) - MAILING_PROBLEMS_SHOWN
                text = (
                    f"The mailing list was not recorded ({len(problems)} problem(s)); nothing was written: "
                    + "; ".join(problems[:MAILING_PROBLEMS_SHOWN])
                    + (f"; and {more} more problem(s)" if more > 0 else "")
                    + "."
                )
                if conflicts:
                    text += (
                        " If the register's number is the one that is wrong, record the list again as a "
                        "correction: each number replaced is kept in its notice's events."
                    )
                refused = MailingConflictError(text) if conflicts else LayerError(text)
                # the unfinished batches named, for the caller to say how each is settled
                refused.unfinished_batches = [b for (b, status) in unissued if status == "prepared" and b]
                raise refused
            for i, (notice_id, column, old, new) in enumerate(writes):
                held_now = notices.c[column]
                changed = con.execute(
                    notices.update()
                    .where(
                        (notices.c.notice_id == notice_id) & (held_now.is_(None) if old is None else held_now == old)
                    )
                    .values({column: new})
                ).rowcount
                if changed != 1:  # changed since it was read: impossible under the lock, refused all the same
                    raise LayerError(f"Notice {notice_id} changed while the list was recorded: nothing was written.")
                _event(con, actor, notice_id, "corrected" if old else "mailed", column, old, new)
                if notice_id in early_notices:
                    dated = early_notices[notice_id]
                    _event(
                        con,
                        actor,
                        notice_id,
                        "mailed before its date",
                        "note",
                        None,
                        f"article number {article_groups(new)} recorded on {today.isoformat()}, "
                        f"{(dated - today).days} day(s) before the date of its letter, {dated.isoformat()}",
                    )
                if pause:
                    pause(i)
        done["before_date"] = [
            {"batch_id": b, "dated": d.isoformat(), "notices": n, "days": (d - today).days}
            | ({} if b else {"notice_id": alone})
            for (b, d, alone), n in sorted(early.items(), key=lambda kv: (str(kv[0][0]), kv[0][1], str(kv[0][2])))
        ]
        if today is not None:
            done["today"] = today.isoformat()
        return done

    def record_service(
        self,
        notice_id: str,
        *,
        on: dt.date | str,
        by: str,
        actor: str,
        today: dt.date,
        correct: bool = False,
    ) -> dict:
        """Record that a notice was served in person on ``on`` by ``by`` (a clerk handing it to the owner), and what
        that does to its deadline (``analysis.notices.deadline_after_service``: it moves only where the law of the
        notice's profile counts the period from service), in one transaction, every old value kept in an event.

        Refused, each by name and nothing written: a notice the register does not hold; a record (no notice was
        given); a notice of a batch never issued (``UnfinishedBatchError``: the caller says what settles it),
        cancelled (never mailed), withdrawn (superseded: the one in force is named), or closed (connected, exempt);
        a day before the notice's date or after ``today``; no one named as having served it; and a notice already
        recorded served in person, unless ``correct`` (the record replaced, the old one kept in the events)."""
        by = " ".join(str(by or "").split())
        day = parse_date(on, "The day it was served")
        if not by:
            raise LayerError(
                f"Say who served notice {notice_id} (their name, and their office), as a proof of service names them."
            )
        if len(by) > 200:
            raise LayerError(f"The name of who served notice {notice_id} is {len(by)} characters: give at most 200.")
        with self.transaction() as con:
            row = con.execute(sa.select(notices).where(notices.c.notice_id == notice_id)).mappings().first()
            if row is None:
                raise LayerError(f"The register holds no notice {notice_id}.", fix=Fix("notice_id"))
            _refuse_service(con, row, day, today, correct)
            batch = (
                con.execute(sa.select(batches).where(batches.c.batch_id == row["batch_id"])).mappings().first()
                if row["batch_id"]
                else None
            )
            rule = service_rule(batch["profile"] if batch else None, row["notice_type"])
            deadline, why = deadline_after_service(
                rule,
                notice_date=row["issued_date"],
                letter_deadline=batch["deadline"] if batch else None,
                deadline=row["deadline"],
                status=row["status"],
                served_on=day,
            )
            changes = {"served_by": SERVED_IN_PERSON, "served_on": day, "served_by_name": by, "deadline": deadline}
            action = "corrected" if row["served_on"] is not None else "served"
            for field, new in changes.items():
                old = row[field]
                if _iso(old) != _iso(new):
                    _event(con, actor, notice_id, action, field, _iso(old), _iso(new))
            con.execute(notices.update().where(notices.c.notice_id == notice_id).values(**changes))
        return {
            "notice_id": notice_id,
            "parcel_id": row["parcel_id"],
            "served_by": SERVED_IN_PERSON,
            "served_on": day.isoformat(),
            "served_by_name": by,
            "deadline": _iso(deadline),
            "old_deadline": _iso(row["deadline"]),
            "deadline_moved": _iso(deadline) != _iso(row["deadline"]),
            "counted_from": rule.counted_from if rule else None,
            "why": why,
            "corrected": action == "corrected",
        }

    def record_article_number(
        self, notice_id: str, number: str, *, actor: str, correct: bool = False, today: dt.date | None = None
    ) -> dict:
        """Record the certified mail article number of one notice issued before batches (before migration 0003),
        by its ID: its letter had no mailing-list row, so no list given back can name it. Checked and written as a
        list's row is (``record_mailing``: a number held by another envelope, a notice already holding another, unless
        ``correct``; one recorded ``today`` before the date of its letter warned about in ``before_date``, with the
        notice's ``notice_id``, and its event); a notice issued in a batch is refused, its number being recorded from
        the batch's list, which checks it against the letter."""
        try:
            digits = article_number(number)
        except AnalysisError as exc:
            raise LayerError(str(exc)) from exc
        mailing = Mailing(1, None, (str(notice_id),), digits, False)
        return self.record_mailing([mailing], actor=actor, correct=correct, today=today)

    def batch(self, batch_id: str) -> dict | None:
        with self.engine.connect() as con:
            row = con.execute(sa.select(batches).where(batches.c.batch_id == batch_id)).mappings().first()
        return dict(row) if row else None

    def held_notices(self, notice_ids: Sequence[str]) -> set[str]:
        """Which of ``notice_ids`` the register holds (a read; notices are never deleted, so no lock is needed): to
        tell a mailing list given back to the wrong register before any of its rows is checked."""
        held: set[str] = set()
        with self.engine.connect() as con:
            for part in _chunks(sorted(set(notice_ids))):
                query = sa.select(notices.c.notice_id).where(notices.c.notice_id.in_(part))
                held.update(con.execute(query).scalars())
        return held

    def batches(self, status: str | None = None) -> list[dict]:
        query = sa.select(batches).order_by(batches.c.created_at.desc())
        if status:
            query = query.where(batches.c.status == status)
        with self.engine.connect() as con:
            return [dict(r) for r in con.execute(query).mappings()]

    def batch_notices(self, batch_id: str) -> pd.DataFrame:
        query = sa.select(notices).where(notices.c.batch_id == batch_id).order_by(notices.c.parcel_id)
        with self.engine.connect() as con:
            return _typed(pd.read_sql(query, con))

    # -- status changes -------------------------------------------------------------------------------------------

    def mark(
        self,
        parcel_id: str,
        status: str,
        *,
        actor: str,
        note: str | None = None,
        deadline: dt.date | str | None = None,
        notice_id: str | None = None,
        connected_on: dt.date | str | None = None,
        today: dt.date | None = None,
        correct: bool = False,
    ) -> dict:
        """Change the open notices of a parcel: connected (on ``connected_on``), extended (to a later deadline),
        exempt or withdrawn.

        ``correct`` (connected only, with ``connected_on``): the day of the parcel's notices marked connected
        already is replaced, the old day kept in their events. Marked without a day (today taken) or with a
        mistyped one, the day a board judges the deadline by was wrong for good.

        ``connected_on`` goes only with connected, and is kept as each notice's ``connected_on`` (where a connection
        recorded without a notice keeps its day too), with an event: refused after ``today`` (the system's date when
        not given) and before the date of the earliest notice marked (``analysis.notices.connection_day_problem``).
        Without it the day is not recorded (``gisapp.notices.mark`` always gives one, today by default).

        With ``notice_id`` (the notices page's row) only that notice, and only while it is still one of the parcel's
        open notices: one withdrawn since (and another issued in its place, in another tab or by a colleague) is
        refused with ``NoticeChangedError`` saying what changed, so a page the clerk read earlier never changes a
        notice they did not see. Without it (``sewerplan notices mark PARCEL``) every open notice of the parcel."""
        if status not in STATUSES[1:]:
            raise LayerError(f"Mark a notice {', '.join(STATUSES[1:])}; not {status!r}.")
        if status == "extended" and not deadline:
            raise LayerError("An extension needs the new deadline (a date, YYYY-MM-DD).")
        if status != "extended" and deadline:
            raise LayerError(f"A new deadline goes only with an extension; a notice marked {status} keeps its own.")
        new_deadline = parse_date(deadline, "The new deadline") if deadline else None
        if connected_on is not None and status != "connected":
            raise LayerError(f"The day it connected goes only with connected; a notice marked {status} has none.")
        day = parse_date(connected_on, "The day it connected") if connected_on is not None else None
        if correct and (status != "connected" or day is None):
            raise LayerError("Only the day a parcel connected is corrected so: give connected and the right day.")
        with self.transaction() as con:
            given = (
                con.execute(
                    sa.select(notices).where(
                        (notices.c.parcel_id == parcel_id) & notices.c.notice_type.notin_(RECORD_TYPES)
                    )
                )
                .mappings()
                .all()
            )
            marked = [r for r in given if r["status"] == "connected"]
            rows = marked if correct else [r for r in given if r["status"] in OPEN]
            if correct and not rows:
                raise LayerError(f"Parcel {parcel_id} has no notice marked connected: there is no day to correct.")
            if not correct and not rows and status == "connected" and marked:
                last = max(marked, key=lambda r: (_date(r["issued_date"]), r["notice_id"]))
                raise ConnectedRecordedError(
                    f"Parcel {parcel_id} is marked connected already (notice {last['notice_id']}, connected on "
                    f"{_iso(last['connected_on']) or 'a day not recorded'}): nothing was changed. If that day is "
                    "wrong, mark it connected again with the right day as a correction (the old day stays in its "
                    "events)."
                )
            if notice_id is not None:
                seen = [r for r in rows if r["notice_id"] == notice_id]
                if not seen:
                    raise NoticeChangedError(_changed_words(con, parcel_id, notice_id, rows))
                rows = seen
            if correct and day is not None and all(_date(r["connected_on"]) == day for r in rows):
                # said "corrected to" the day it held already, though nothing changed (a tester)
                raise LayerError(
                    f"Parcel {parcel_id} is recorded connected on {day.isoformat()} already: nothing was changed."
                )
            prepared = [r for r in given if r["status"] == "prepared"]
            if not rows and prepared:  # told "no open notice" and sent to record, which refused it too
                n = prepared[0]
                raise UnfinishedBatchError(
                    f"Parcel {parcel_id}'s notice {n['notice_id']} is in batch {n['batch_id']}, which was never "
                    "issued, so there is no notice to mark yet: nothing was changed",
                    batch_id=n["batch_id"],
                    notice_id=n["notice_id"],
                    then="once it is issued, mark the parcel again; once it is cancelled, record the connection as one "
                    "made without a notice",
                )
            if not rows:
                raise LayerError(
                    f"Parcel {parcel_id} has no open notice. If its owner connected without one (it was held back, or "
                    "never noticed), record it as a connection made without a notice, with the day it connected "
                    f"(`sewerplan notices record {_shell_word(parcel_id)} connected`, or the notices page's form)."
                )
            if day is not None:
                first = min(rows, key=lambda r: (_date(r["issued_date"]), r["notice_id"]))
                if problem := connection_day_problem(
                    day,
                    today=today or dt.date.today(),
                    notice_id=first["notice_id"],
                    notice_date=_date(first["issued_date"]),
                ):
                    raise LayerError(problem)
            if new_deadline is not None:
                _refuse_an_extension_the_law_gives_none(con, rows)
                early = [r for r in rows if r["deadline"] is not None and new_deadline <= r["deadline"]]
                if early:
                    raise LayerError(
                        f"An extension moves the deadline later: notice {early[0]['notice_id']} is due "
                        f"{early[0]['deadline'].isoformat()}, and {new_deadline.isoformat()} is not after it."
                    )
                # A mistyped year (3500-01-01) took the parcel out of every list of violations for good: no extension
                # runs longer than the longest period a profile may set, whatever the town's practice.
                far = [
                    r
                    for r in rows
                    if r["deadline"] is not None and (new_deadline - r["deadline"]).days > MAX_PERIOD_DAYS
                ]
                if far:
                    days = (new_deadline - far[0]["deadline"]).days
                    raise LayerError(
                        f"An extension to {new_deadline.isoformat()} moves notice {far[0]['notice_id']}'s deadline "
                        f"({far[0]['deadline'].isoformat()}) {days:,} days later, more than any period a profile may "
                        f"set ({MAX_PERIOD_DAYS:,} days): check the year."
                    )
            action = "corrected" if correct else "marked"
            for row in rows:
                # A change given without a note keeps the note the notice has: a second extension with the note
                # left empty wiped "owner asked", and no event said so (a tester).
                changes = {"status": status, "is_open": 1 if status in OPEN else 0}
                if correct:  # the day alone: the notice's status and note stay as they were marked
                    changes = {}
                if note is not None:
                    changes["note"] = note
                if new_deadline is not None:
                    changes["deadline"] = new_deadline
                if day is not None:
                    changes["connected_on"] = day
                con.execute(notices.update().where(notices.c.notice_id == row["notice_id"]).values(**changes))
                for field, old, new in (
                    ("status", row["status"], status),
                    ("deadline", _iso(row["deadline"]), _iso(new_deadline)),
                    ("connected_on", _iso(row["connected_on"]), _iso(day)),
                    ("note", row["note"], note),
                ):
                    if new is not None and new != old:
                        _event(con, actor, row["notice_id"], action, field, old, new)
        done = {"parcel_id": parcel_id, "status": status, "notices": [r["notice_id"] for r in rows]}
        return done | ({"connected_on": day.isoformat()} if day is not None else {})

    def record(self, parcel_id: str, status: str, *, on: dt.date | str, actor: str, note: str | None = None) -> dict:
        """Record that a parcel connected on ``on`` without a notice to mark (held back, or never noticed): a row of
        type ``record`` (ID ``R-...``; ``issued_date`` is the day it connected; no batch, letter or deadline), with its
        event, so the parcel is never noticed again and the Summary and the map count it as the register's.

        Only ``connected``: none of the ordinances sewerplan encodes provides for exempting a property, and
        ``exempt`` stays a decision about a notice given (``mark``). Refused for a parcel with an open or prepared
        notice (mark that notice instead) and for one the register already records connected. A parcel whose notice
        was marked exempt may be recorded connected: its owner connected all the same."""
        if status != "connected":
            raise LayerError(
                f"Only a connection is recorded without a notice, not {status!r}: the ordinances provide no "
                "exemption, and exempt, extended or withdrawn are decisions about a notice given (`notices mark`)."
            )
        day = parse_date(on, "The day it connected")
        parcel_id = str(parcel_id)
        try:
            return self._record(parcel_id, status, day=day, actor=actor, note=note)
        except sa.exc.IntegrityError:
            # Another clerk recorded this parcel between this one's read and write (PostgreSQL; SQLite queues the
            # writes): the index one_record_per_parcel refused the second row. Say so as a read after it would.
            first = [r for r in self.notices_of(parcel_id) if r["notice_type"] == RECORD]
            if not first:
                raise
            raise LayerError(
                f"Parcel {parcel_id} is already recorded {first[0]['status']} ({first[0]['notice_id']}, recorded "
                "by someone else at the same moment): nothing was changed."
            ) from None

    def _record(self, parcel_id: str, status: str, *, day: dt.date, actor: str, note: str | None) -> dict:
        with self.transaction() as con:
            rows = (
                con.execute(
                    sa.select(notices)
                    .where(notices.c.parcel_id == parcel_id)
                    .order_by(notices.c.issued_date, notices.c.notice_id)
                )
                .mappings()
                .all()
            )
            live = [r for r in rows if r["is_open"] == 1]
            if live:
                n = live[0]
                if n["status"] == "prepared":  # said "being written" though its writer was dead
                    raise UnfinishedBatchError(
                        f"Parcel {parcel_id}'s notice {n['notice_id']} is in batch {n['batch_id']}, which was never "
                        "issued: nothing was changed",
                        batch_id=n["batch_id"],
                        notice_id=n["notice_id"],
                        then="once it is issued, mark that notice connected; once it is cancelled, record the "
                        "connection again",
                    )
                raise OpenNoticeError(
                    f"Parcel {parcel_id} has an open notice, {n['notice_id']}: record the connection on that "
                    "notice (mark it connected), so its deadline stops running."
                )
            latest = [r for r in rows if r["status"] != "cancelled"][-1:]
            before = [r for r in rows if r["notice_type"] == RECORD and r["status"] in CLOSING]
            # A parcel exempted whose owner connects all the same is recorded connected: it was refused, "already
            # recorded exempt", while `mark` sent the clerk here (a tester). A connection recorded stands.
            before += [r for r in latest if r["status"] == "connected"]
            if before:
                r = before[0]
                raise LayerError(
                    f"Parcel {parcel_id} is already recorded {r['status']} ({r['notice_id']}): nothing was changed."
                )
            record_id = f"R-{uuid.uuid4().hex[:12].upper()}"
            con.execute(
                notices.insert().values(
                    notice_id=record_id,
                    parcel_id=parcel_id,
                    notice_type="record",
                    issued_date=day,
                    deadline=None,
                    status=status,
                    is_open=0,
                    section="",
                    connected_on=day,
                    note=note,
                    created_at=_now(),
                )
            )
            _event(con, actor, record_id, "recorded", "status", None, status)
            if note:
                _event(con, actor, record_id, "recorded", "note", None, note)
        return {"parcel_id": parcel_id, "status": status, "on": day.isoformat(), "record_id": record_id}

    def save_plan(
        self,
        name: str,
        *,
        profile: str,
        diameter_in: float,
        wkt: str,
        crs: str,
        result: dict,
        replace: bool = False,
    ) -> dict | None:
        """Save a named extension scenario; a saved one of that name is replaced only with ``replace``.

        Without it the saved scenario is returned, and nothing is written: the check and the insert are one
        transaction, so two planners saving one new name at once cannot both succeed and lose one of the two.
        """
        with self.transaction() as con:
            if replace:
                con.execute(plans.delete().where(plans.c.name == name))
            else:
                saved = con.execute(sa.select(plans).where(plans.c.name == name)).mappings().first()
                if saved is not None:
                    return dict(saved)
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
        return None

    def saved_plan(self, name: str) -> dict | None:
        """The saved scenario of that name, or None."""
        with self.engine.connect() as con:
            row = con.execute(sa.select(plans).where(plans.c.name == name)).mappings().first()
        return None if row is None else dict(row) | {"result": json.loads(row["result"])}

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
        self,
        *,
        status: str | None = None,
        overdue_on: dt.date | None = None,
        notice_type: str | None = None,
        query: str | None = None,
        limit: int | None = None,
        offset: int = 0,
        deadline_before: dt.date | None = None,
    ) -> pd.DataFrame:
        """Notices, by parcel and date. ``overdue_on``: issued notices still open whose deadline has passed on the
        day, a deadline on a weekend or New York public holiday running to the next business day (General
        Construction Law § 25-a, ``analysis.notices.overdue_before``); never a prepared or cancelled one.
        ``deadline_before``: issued notices still open whose deadline as written is before the day (those and the
        ones still waiting for their business day, for ``violations`` to tell apart). ``query``: parcel ID or owner
        containing the text."""
        select = sa.select(notices)
        for condition in self._conditions(status, overdue_on, notice_type, query, deadline_before):
            select = select.where(condition)
        select = select.order_by(notices.c.parcel_id, notices.c.issued_date, notices.c.notice_id).offset(offset)
        if limit is not None:
            select = select.limit(limit)
        with self.engine.connect() as con:
            return _typed(pd.read_sql(select, con))

    def notices_of(self, parcel_id: str) -> list[dict]:
        """The parcel's notices, oldest first (exactly this parcel, not every ID containing it)."""
        select = sa.select(notices).where(notices.c.parcel_id == parcel_id)
        with self.engine.connect() as con:
            rows = con.execute(select.order_by(notices.c.issued_date, notices.c.notice_id)).mappings().all()
        return [dict(r) for r in rows]

    def notices_of_parcels(self, parcel_ids: list[str]) -> dict[str, list[dict]]:
        """The notices of each of ``parcel_ids`` that has any, oldest first as ``notices_of`` gives one parcel's: a
        page listing many parcels (the Summary) reads them in a few queries, not one per parcel."""
        wanted = sorted({str(p) for p in parcel_ids})
        found: dict[str, list[dict]] = {}
        with self.engine.connect() as con:
            for part in _chunks(wanted):  # SQLite allows a bounded number of variables per query
                select = sa.select(notices).where(notices.c.parcel_id.in_(part))
                order = (notices.c.parcel_id, notices.c.issued_date, notices.c.notice_id)
                for r in con.execute(select.order_by(*order)).mappings():
                    found.setdefault(r["parcel_id"], []).append(dict(r))
        return found

    def count(self, **filters) -> int:
        select = sa.select(sa.func.count()).select_from(notices)
        for condition in self._conditions(
            filters.get("status"),
            filters.get("overdue_on"),
            filters.get("notice_type"),
            filters.get("query"),
            filters.get("deadline_before"),
        ):
            select = select.where(condition)
        with self.engine.connect() as con:
            return int(con.execute(select).scalar())

    @staticmethod
    def _conditions(status, overdue_on, notice_type, query, deadline_before=None) -> list:
        out = []
        if status:
            out.append(notices.c.status == status)
        if notice_type:
            out.append(notices.c.notice_type == notice_type)
        # One comparison in SQL (so the notices page counts and pages the overdue list), the cut-off day from
        # the business-day rule: a deadline before it has passed on the day, one on or after it has not.
        for day, what in ((overdue_on, "overdue"), (deadline_before, "written")):
            if day is None:
                continue
            day = parse_date(day, "The day to judge overdue by")
            cutoff = overdue_before(day) if what == "overdue" else day
            out.append(notices.c.status.in_(OPEN) & notices.c.deadline.is_not(None) & (notices.c.deadline < cutoff))
        if query:  # the text as typed: "_" and "%" are no wildcards (and lower() folds MÜLLER in SQLite too)
            like = "%" + re.sub(r"([\\%_])", r"\\\1", query.lower()) + "%"
            out.append(
                sa.func.lower(notices.c.parcel_id).like(like, escape="\\")
                | sa.func.lower(notices.c.owner_name).like(like, escape="\\")
            )
        return out

    def deadlines_in_notices(self, notice_ids: list[str]) -> dict[str, dt.date]:
        """The deadline each notice's letter stated, for the notices an extension has moved since: the old deadline
        of its first extension's event (``mark`` extended keeps it, ``marked``, field ``deadline``). A notice never
        extended is absent: its deadline is the one its letter stated. A violation letter cites the original
        notice's own date ("by March 7, 2027, extended to May 1, 2027"), not the extension's as if it were the
        notice's."""
        wanted = sorted({str(n) for n in notice_ids})
        first: dict[str, str | None] = {}
        with self.engine.connect() as con:
            for part in _chunks(wanted):  # SQLite allows a bounded number of variables per query
                select = (
                    sa.select(events.c.notice_id, events.c.old_value)
                    .where(events.c.notice_id.in_(part))
                    .where((events.c.action == "marked") & (events.c.field == "deadline"))
                    .order_by(events.c.id)
                )
                for notice_id, old in con.execute(select):
                    first.setdefault(notice_id, old)
        found = {}
        for notice_id, old in first.items():  # one extended from no deadline (an old register's) stated none
            try:
                found[notice_id] = dt.date.fromisoformat(str(old))
            except ValueError:
                continue
        return found

    def events_of(self, notice_id: str) -> list[dict]:
        with self.engine.connect() as con:
            rows = con.execute(sa.select(events).where(events.c.notice_id == notice_id).order_by(events.c.id))
            return [dict(r._mapping) for r in rows]

    def integrity_ok(self) -> bool:
        if not self.is_sqlite:
            return True
        with closing(self._sqlite_connect()) as con:
            return con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"

    def table_counts(self) -> dict[str, int]:
        with self.engine.connect() as con:
            return {t.name: int(con.execute(sa.select(sa.func.count()).select_from(t)).scalar()) for t in _TABLES}

    def backup(self, target: str | Path) -> dict:
        """A verified copy of a SQLite register: written beside ``target`` through SQLite's online backup API, checked
        (integrity check, the same row count in every table as the register at that moment), then linked into place.
        Never overwrites: refuses an existing file, a folder, or a folder that does not exist."""
        if not self.is_sqlite:
            raise LayerError("Back up a PostgreSQL register with pg_dump (the database's own backup tool).")
        target = Path(target).expanduser()
        if target.is_dir():
            raise LayerError(
                f"{target} is a folder: give the backup a file name in it, e.g. {target / 'register.sqlite'}."
            )
        if target.exists() or target.is_symlink():
            raise LayerError(f"{target} already exists: a backup never overwrites a file. Give a new file name.")
        if not target.parent.is_dir():
            if file := next((p for p in reversed(target.parents) if p.exists() and not p.is_dir()), None):
                raise LayerError(f"Cannot write {target}: {file} is a file, not a folder; back up into a folder.")
            raise LayerError(f"The folder {target.parent} does not exist: create it, or back up into another folder.")
        if target.resolve() == self.path.resolve():
            raise LayerError("The backup cannot be the register itself.")
        try:
            # Written under a hidden name and the backup's writer lock (which clears what a killed backup left),
            # checked, synced, then linked into place: never over a file that appeared meanwhile.
            with written_whole(target, sync=True, replace=False) as partial:
                source = self._sqlite_connect()
                try:
                    source.execute("BEGIN")  # one read snapshot for the counts and the copy
                    counts = {t.name: source.execute(f'SELECT count(*) FROM "{t.name}"').fetchone()[0] for t in _TABLES}
                    dest = sqlite3.connect(str(partial))
                    try:
                        source.backup(dest)
                        dest.execute("PRAGMA journal_mode=DELETE")  # the copy is one self-contained file
                    finally:
                        dest.close()
                finally:
                    source.close()
                copy = sqlite3.connect(f"file:{partial}?mode=ro", uri=True)
                try:
                    integrity = copy.execute("PRAGMA integrity_check").fetchone()[0]
                    copied = {t.name: copy.execute(f'SELECT count(*) FROM "{t.name}"').fetchone()[0] for t in _TABLES}
                finally:
                    copy.close()
                if integrity != "ok" or copied != counts:
                    raise LayerError(
                        f"The backup did not verify (integrity check: {integrity}; rows {copied} against {counts}): "
                        "nothing was written. Try again; if it fails again, check the disk."
                    )
            sync_to_disk(target.parent)
        except FileExistsError as exc:
            raise LayerError(f"{target} already exists: a backup never overwrites a file.") from exc
        except (OSError, sqlite3.Error) as exc:
            reason = getattr(exc, "strerror", None) or str(exc)
            raise LayerError(f"Cannot write the backup {target}: {reason}.") from exc
        return {"target": str(target), "integrity": "ok", "tables": counts}


_TABLES = (runs, batches, notices, events, plans)


def _sqlite_engine(url: str, *, foreign_keys: bool, read_only_uri: str | None = None) -> sa.Engine:
    """An engine on the SQLite register ``url``; with ``read_only_uri`` (a register that cannot be written,
    ``_read_only_uri``) one that opens it read only and never switches its journal."""
    if read_only_uri is None:
        engine = sa.create_engine(
            url, connect_args={"timeout": 30, "isolation_level": None}, poolclass=sa.pool.NullPool
        )
    else:
        engine = sa.create_engine(
            "sqlite://",
            creator=lambda: sqlite3.connect(
                read_only_uri, uri=True, timeout=30, isolation_level=None, check_same_thread=False
            ),
            poolclass=sa.pool.NullPool,
        )

    def pragmas(dbapi_connection, _record) -> None:
        cur = dbapi_connection.cursor()
        if read_only_uri is None:
            cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=FULL")
        cur.execute("PRAGMA busy_timeout=30000")
        cur.execute(f"PRAGMA foreign_keys={'ON' if foreign_keys else 'OFF'}")
        cur.close()
        # SQLite's own lower() folds A to Z only: a search for "müller" found no MÜLLER. Python's folds every letter,
        # as PostgreSQL's does.
        dbapi_connection.create_function("lower", 1, _lower, deterministic=True)

    def begin(conn) -> None:  # writers take the write lock at once; readers read a snapshot and never wait
        conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get("write") else "BEGIN")

    sa.event.listen(engine, "connect", pragmas)
    sa.event.listen(engine, "begin", begin)
    return engine


def _lower(text):
    return text.lower() if isinstance(text, str) else text


def parse_date(value, what: str = "The date") -> dt.date:
    """A real calendar date from a date or strict ``YYYY-MM-DD`` text; LayerError naming ``what`` otherwise
    (``analysis.dates.parse_day`` words it, as for every date a user types)."""
    try:
        return parse_day(value, what)
    except AnalysisError as exc:
        raise LayerError(str(exc)) from exc


def _refuse_an_extension_the_law_gives_none(con, rows) -> None:
    """Refuse extending a violation notice whose days the law sets with no extension (Wappinger § 196-22A): its
    letter told the owner the law "provides for no extension", and `mark extended` moved its deadline all the same,
    without a word (a tester). The profile is the one its batch recorded (``service_rule``)."""
    for row in rows:
        if row["notice_type"] != "violation" or not row["batch_id"]:
            continue
        batch = con.execute(sa.select(batches).where(batches.c.batch_id == row["batch_id"])).mappings().first()
        rule = service_rule(batch["profile"] if batch else None, row["notice_type"])
        if rule is not None and rule.no_extension(row["notice_type"]):
            raise LayerError(
                f"Notice {row['notice_id']} is a violation notice whose days {rule.section} sets itself, and its "
                f"letter says the law provides for no extension: nothing was changed. If the town decides to give "
                "more time all the same, withdraw that notice and give a new one."
            )


def _date(value) -> dt.date | None:
    if value is None or (not isinstance(value, str | dt.date) and pd.isna(value)):
        return None
    return parse_date(value)


def _iso(value) -> str | None:
    return value.isoformat() if isinstance(value, dt.date) else value


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    """Date columns as datetime.date objects (SQLite hands back text, PostgreSQL dates)."""
    for column in ("issued_date", "deadline", "served_on", "connected_on"):
        if column in frame.columns:
            frame[column] = frame[column].map(lambda v: _date(v) if v is not None and not pd.isna(v) else None)
    return frame


def _unissued_words(batch_id: str | None, status: str, rows: list) -> str:
    """Why a mailing list's rows naming notices of a batch never issued take no article number: said once for the
    batch, naming its rows (``analysis.notices.Mailing``). They were called "still being written", which a batch a
    stopped process left unfinished is not. How to settle an unfinished one the caller says: the register cannot see
    whether its writer is alive (``gisapp.notices.settle_words``)."""
    listed = [m for m in rows if m.mailing_no is not None]
    named = [f"notice {', '.join(m.notice_ids)}" for m in rows if m.mailing_no is None]
    if listed:
        numbers = [str(m.row) for m in listed[:MAILING_PROBLEMS_SHOWN]]
        rest = len(listed) - len(numbers)
        if len(listed) == 1:
            place = row_place(numbers[0], listed[0].list_name)
        elif rest:
            place = f"rows {', '.join(numbers)} and {rest} more of {listed[0].list_name}"
        else:
            place = f"rows {', '.join(numbers[:-1])} and {numbers[-1]} of {listed[0].list_name}"
        named.insert(0, place)
    where = "; ".join(named)
    if status == "cancelled":
        return (
            f"{where}: batch {batch_id} was cancelled, never issued: its letters were not to be mailed and its notices "
            "run no deadline; its parcels are noticed again in a later batch, whose own mailing list takes the numbers"
        )
    return (
        f"{where}: batch {batch_id} was never issued: it is unfinished (its notices are prepared, no deadline runs, "
        "and none of its letters was mailed as far as the register knows): settle the batch first, then give the list "
        "back"
    )


def _envelope(row) -> tuple:
    """The envelope a notice went in: its batch's letter, or, for a notice issued before batches (no batch, no
    mailing number), its own."""
    return (row["batch_id"], row["mailing_no"]) if row["batch_id"] else ("notice", row["notice_id"])


def _is_occupant_copy(mailing: Mailing, rows) -> bool:
    """Whether ``mailing`` is the copy to the occupant at the site address: its notices went in the owner's letter,
    another row, and this envelope's number is kept beside it (``occupant_article_no``)."""
    return mailing.occupant and all(r["mailing_no"] != mailing.mailing_no for r in rows)


def _numbers_given(mailings: Sequence[Mailing], held: Mapping[str, Mapping]) -> dict[tuple[str, str], str]:
    """The number a list gives each notice's envelope, as (notice ID, column) -> article number: the owner's letter
    (``certified_article_no``) or the copy to the occupant (``occupant_article_no``). Notices the register does not
    hold are left out (the list is refused for them)."""
    given = {}
    for m in mailings:
        rows = [held[n] for n in m.notice_ids if n in held]
        column = "occupant_article_no" if _is_occupant_copy(m, rows) else "certified_article_no"
        for r in rows:
            given[(r["notice_id"], column)] = m.article_no
    return given


def _refuse_service(con, row, day: dt.date, today: dt.date, correct: bool) -> None:
    """Why ``row``'s notice cannot be recorded served in person on ``day``, as a LayerError; nothing when it can."""
    n = row["notice_id"]
    if row["notice_type"] not in GIVEN_BY_LETTER:
        raise LayerError(
            f"{n} is a {row['notice_type']} of parcel {row['parcel_id']}, not a notice: no notice was given, so none "
            "was served."
        )
    status = row["status"]
    if status == "prepared":  # said "still being written" though its writer was dead: the caller says which
        raise UnfinishedBatchError(
            f"Notice {n} is in batch {row['batch_id']}, which was never issued, so it has no letter to serve yet: "
            "nothing was changed",
            batch_id=row["batch_id"],
            notice_id=n,
            then="once it is issued, record the service",
        )
    if status == "cancelled":
        raise LayerError(
            f"Notice {n} was cancelled with its batch {row['batch_id']} and never mailed: it is no notice. Serve the "
            f"notice in force for parcel {row['parcel_id']} instead."
        )
    if status == "withdrawn":
        live = con.execute(
            sa.select(notices.c.notice_id).where(
                (notices.c.parcel_id == row["parcel_id"])
                & (notices.c.notice_type == row["notice_type"])
                & notices.c.status.in_(OPEN)
            )
        ).first()
        instead = (
            f"notice {live[0]} is the one in force for parcel {row['parcel_id']}: record its service instead"
            if live
            else f"parcel {row['parcel_id']} has no notice in force"
        )
        raise LayerError(
            f"Notice {n} was withdrawn: it is no longer in force, so its service starts nothing; {instead}."
        )
    if status in CLOSING:
        raise LayerError(
            f"Notice {n} is closed (marked {status}): its deadline no longer runs, so its service changes nothing."
        )
    issued = row["issued_date"]
    if day < issued:
        raise LayerError(
            f"Notice {n} is dated {issued.isoformat()}: it cannot have been served on {day.isoformat()}, before it was "
            "written. Give the day it was handed over."
        )
    if day > today:
        raise LayerError(
            f"{day.isoformat()} is after today ({today.isoformat()}): record the service of notice {n} once it is made."
        )
    if row["served_on"] is not None and not correct:
        raise ServiceRecordedError(
            f"Notice {n} is already recorded served {row['served_by']} on {_iso(_date(row['served_on']))} by "
            f"{row['served_by_name']}: nothing was changed. If that record is wrong, record the service again as a "
            "correction (the old day and name stay in its events)."
        )


def _event(con, actor, notice_id, action, field, old, new) -> None:
    con.execute(
        events.insert().values(
            at=_now(), actor=actor, notice_id=notice_id, action=action, field=field, old_value=old, new_value=new
        )
    )


def _notice_values(row: dict, run_id: int | None, batch_id: str, kind: str) -> dict:
    values = {k: (None if _missing(row.get(k)) else row.get(k)) for k in NOTICE_COLUMNS}
    if values["distance_ft"] is not None:
        values["distance_ft"] = float(values["distance_ft"])
    for k in ("owner_name", "mail_address", "mail_city", "mail_state", "mail_zip", "site_address", "main_id"):
        if values[k] is not None:
            values[k] = str(values[k])
    return values | {
        "notice_id": f"N-{uuid.uuid4().hex[:12].upper()}",
        "parcel_id": str(row["parcel_id"]),
        "run_id": run_id,
        "notice_type": kind,
        "issued_date": parse_date(row["issued_date"], "The notice date"),
        "deadline": None,
        "reason": None if _missing(row.get("notice_reason")) else row.get("notice_reason"),
        "status": "prepared",
        "is_open": 1,
        "section": row["section"],
        "letter_file": None,
        "note": None,
        "created_at": _now(),
        "batch_id": batch_id,
        "hazard": None if _missing(row.get("hazard")) else str(row.get("hazard")),
        "original_notice_id": None if _missing(row.get("original_notice_id")) else row.get("original_notice_id"),
        "mailing_no": None,
    }


def _chunks(values: list) -> list[list]:
    return [values[i : i + _IN_CHUNK] for i in range(0, len(values), _IN_CHUNK)]


def _missing(value) -> bool:
    return value is None or (not isinstance(value, str | list | tuple | dict) and pd.isna(value))


def new_batch_id(day: dt.date) -> str:
    """A batch ID that names its folder: B, the notice date, and six random hex digits (B20270301-3F9A1C)."""
    return f"B{day:%Y%m%d}-{uuid.uuid4().hex[:6].upper()}"


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
