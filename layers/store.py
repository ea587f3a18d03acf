"""The embedded default store: one GeoPackage under ``instance/`` holding a town's layers and latest results.

``make demo`` writes the sample town into it, ``sewerplan analyze --data STORE --out STORE`` adds the results
(``parcel_results``, ``measuring_lines``, ``connection_points``) beside the input layers, and the web app reads
them back. A run record (profile, counts, when) is kept in the GeoPackage's ``analysis_runs`` attribute table.

Writing is safe against concurrent runs and readers:

- **One writer at a time per store** (``store_writer``): an exclusive lock on ``STORE.lock`` (an OS file lock,
  released by the OS if the process dies), taken without waiting; a second writer gets ``StoreBusyError`` saying
  who is writing and since when, in this process or another (the CLI and the web app share it).
- **Atomic results** (``write_run``): the store is copied (SQLite's backup API) to a temporary file beside it, the
  result layers and the run record are written into the copy, and the copy replaces the store in one
  ``os.replace``. A reader sees the old store or the new one, never half of one; the input layers are copied
  byte for byte and never written; a run that fails leaves the store as it was.
- **Publishing** (``publish_store``, ``restore_store``): the town's store is replaced the same way, and the store
  it replaces is kept in ``previous-stores/`` beside it (the newest ``keep``), to be restored from the web page.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import sqlite3
import tempfile
import threading
import time
from contextlib import closing, contextmanager
from pathlib import Path

import geopandas as gpd
import pyogrio

from layers.errors import LayerError
from layers.write import RESULT_LAYER, write_results

DEFAULT_STORE = Path("instance") / "sewerplan.gpkg"
PREVIOUS = "previous-stores"


class StoreBusyError(LayerError):
    """Another run or publication is writing this store right now."""


def store_layers(path: str | Path) -> list[str]:
    """The layer names in the store; empty when it does not exist yet."""
    if not Path(path).exists():
        return []
    return [str(name) for name, _ in pyogrio.list_layers(str(path))]


def layer_counts(path: str | Path) -> dict[str, int]:
    """Every layer in the store and its number of features."""
    return {name: int(pyogrio.read_info(str(path), layer=name)["features"]) for name in store_layers(path)}


def read_results(path: str | Path) -> gpd.GeoDataFrame | None:
    """The latest parcel results in the store, or None before any analysis has run."""
    if RESULT_LAYER not in store_layers(path):
        return None
    return gpd.read_file(str(path), layer=RESULT_LAYER, engine="pyogrio", use_arrow=True)


def record_run(path: str | Path, summary: dict) -> None:
    """Append one analysis run's summary to the store's ``analysis_runs`` table."""
    try:
        with closing(sqlite3.connect(str(path))) as con, con:
            con.execute(
                "CREATE TABLE IF NOT EXISTS analysis_runs (id INTEGER PRIMARY KEY AUTOINCREMENT, "
                "run_at TEXT DEFAULT CURRENT_TIMESTAMP, summary TEXT NOT NULL)"
            )
            con.execute("INSERT INTO analysis_runs (summary) VALUES (?)", (json.dumps(summary),))
    except sqlite3.Error as exc:
        raise LayerError(f"Cannot record the run in {path}: {exc}") from exc


def latest_run(path: str | Path) -> dict | None:
    """The summary of the latest recorded run, or None."""
    if not Path(path).exists():
        return None
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as con:
            row = con.execute("SELECT run_at, summary FROM analysis_runs ORDER BY id DESC LIMIT 1").fetchone()
    except sqlite3.Error:
        return None
    if row is None:
        return None
    return {"run_at": row[0], **json.loads(row[1])}


# --- one writer at a time ---------------------------------------------------------------------------------------


class StoreWriter:
    """The exclusive right to write one store, held until ``release()`` (from any thread)."""

    def __init__(self, path: Path, fd: int):
        self.path = path
        self._fd: int | None = fd
        self._guard = threading.Lock()

    def release(self) -> None:
        with self._guard:
            if self._fd is None:
                return
            fd, self._fd = self._fd, None
        try:
            os.ftruncate(fd, 0)
            _unlock(fd)
        finally:
            os.close(fd)

    def __enter__(self) -> StoreWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def lock_path(path: str | Path) -> Path:
    return Path(f"{Path(path).resolve()}.lock")


def store_writer(path: str | Path, *, who: str, what: str = "an analysis run") -> StoreWriter:
    """Take the store's writer lock without waiting; ``StoreBusyError`` says who holds it and since when."""
    target = lock_path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(target, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        _lock(fd)
    except OSError:
        holder = _holder(fd)
        os.close(fd)
        since = holder.get("since")
        when = dt.datetime.fromtimestamp(since).astimezone().strftime("%H:%M:%S") if since else "a moment ago"
        raise StoreBusyError(
            f"{holder.get('what', 'A run').capitalize()} is in progress on this store (started by "
            f"{holder.get('who', 'another user')} at {when}). Wait for it to finish, then try again."
        ) from None
    os.ftruncate(fd, 0)
    os.write(fd, json.dumps({"who": who, "what": what, "since": time.time(), "pid": os.getpid()}).encode())
    return StoreWriter(target, fd)


def _holder(fd: int) -> dict:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        return json.loads(os.read(fd, 4096).decode() or "{}")
    except (OSError, ValueError):
        return {}


if os.name == "nt":  # pragma: no cover - Windows town halls
    import msvcrt

    def _lock(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_NBLCK, 1 << 30)

    def _unlock(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1 << 30)

else:
    import fcntl

    def _lock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)


# --- atomic replacement -----------------------------------------------------------------------------------------


@contextmanager
def _replacement(path: Path, *, copy_current: bool):
    """A temporary GeoPackage beside ``path`` (a copy of it when asked) that replaces it on success."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=f".tmp{path.suffix}", dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        if copy_current and path.exists():
            _copy_sqlite(path, tmp)
        else:
            tmp.unlink()
        yield tmp
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        _replace(tmp, path)
    finally:
        for leftover in (tmp, Path(f"{tmp}-journal"), Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
            leftover.unlink(missing_ok=True)


def _copy_sqlite(source: Path, target: Path) -> None:
    """A consistent copy of a GeoPackage, through SQLite's backup API (safe while others read it)."""
    with (
        closing(sqlite3.connect(f"file:{source}?mode=ro", uri=True)) as src,
        closing(sqlite3.connect(str(target))) as dst,
    ):
        src.backup(dst)


def _replace(tmp: Path, path: Path, attempts: int = 20) -> None:
    """``os.replace``, retried briefly where the OS refuses while a reader has the file open (Windows)."""
    for k in range(attempts):
        try:
            os.replace(tmp, path)
            return
        except PermissionError:
            if k == attempts - 1:
                raise
            time.sleep(0.1)


def write_run(
    path: str | Path,
    parcels: gpd.GeoDataFrame,
    measuring_lines: gpd.GeoDataFrame | None,
    buildings: gpd.GeoDataFrame | None,
    summary: dict,
    *,
    locked: bool = False,
    who: str = "sewerplan analyze",
) -> list[str]:
    """Write a run's result layers and record into the store atomically; returns the layer names written.

    ``locked`` says the caller already holds the store's writer lock (a web run takes it before it starts, in the
    server process); otherwise it is taken here and ``StoreBusyError`` raised if another writer has it.
    """
    target = Path(path)
    writer = None if locked else store_writer(target, who=who)
    try:
        with _replacement(target, copy_current=True) as tmp:
            written = write_results(str(tmp), parcels, measuring_lines, buildings)
            record_run(tmp, summary)
        return written
    finally:
        if writer is not None:
            writer.release()


# --- publishing and restoring the town's store -------------------------------------------------------------------


def previous_stores(path: str | Path) -> list[dict]:
    """Earlier versions of the store, newest first: ``{"name", "saved_at", "label", "bytes"}``."""
    folder = Path(path).parent / PREVIOUS
    if not folder.is_dir():
        return []
    found = []
    for f in folder.glob("*.gpkg"):
        meta = {}
        side = f.with_suffix(".json")
        if side.exists():
            try:
                meta = json.loads(side.read_text(encoding="utf-8"))
            except ValueError:
                meta = {}
        found.append(
            {
                "name": f.name,
                "saved_at": meta.get("saved_at", f.stat().st_mtime),
                "label": meta.get("label", ""),
                "bytes": f.stat().st_size,
            }
        )
    return sorted(found, key=lambda m: m["saved_at"], reverse=True)


def publish_store(path: str | Path, source: str | Path, *, who: str, label: str, keep: int = 5) -> str:
    """Make ``source`` (a validated workspace store) the town's store; the store it replaces is kept.

    Returns the name under which the replaced store was kept ("" when there was none).
    """
    target = Path(path)
    with store_writer(target, who=who, what="publishing a store"):
        kept = _keep_previous(target, label=f"before {label}", who=who, keep=keep)
        town = _settings(target) if target.exists() else {}
        with _replacement(target, copy_current=False) as tmp:
            _copy_sqlite(Path(source), tmp)
            if town:  # the town's settings (its notice register) stay with the town, whatever data is published
                _write_settings(tmp, town)
    return kept


def restore_store(path: str | Path, name: str, *, who: str, keep: int = 5) -> str:
    """Put an earlier version back as the town's store; the store it replaces is kept too (restoring is undoable).

    Returns the name under which the replaced store was kept.
    """
    if not re.fullmatch(r"[A-Za-z0-9_.-]+\.gpkg", name or ""):
        raise LayerError("No such earlier store.")
    target = Path(path)
    chosen = target.parent / PREVIOUS / name
    if not chosen.is_file():
        raise LayerError("No such earlier store (it may have been pruned).")
    town = _settings(target) if target.exists() else {}
    with store_writer(target, who=who, what="restoring a store"), _replacement(target, copy_current=False) as tmp:
        _copy_sqlite(chosen, tmp)
        if town:  # the town's settings (its notice register) are not rolled back with the data
            _write_settings(tmp, town)
        return _keep_previous(target, label=f"replaced by the restore of {name}", who=who, keep=keep)


def _keep_previous(target: Path, *, label: str, who: str, keep: int) -> str:
    """Copy the current store into ``previous-stores/`` and prune that folder to the newest ``keep``."""
    if not target.exists():
        return ""
    folder = target.parent / PREVIOUS
    folder.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S-%f")
    _copy_sqlite(target, folder / f"{stamp}.gpkg")
    (folder / f"{stamp}.json").write_text(
        json.dumps({"saved_at": time.time(), "label": label, "by": who}), encoding="utf-8"
    )
    for old in previous_stores(target)[max(keep, 1) :]:
        (folder / old["name"]).unlink(missing_ok=True)
        (folder / old["name"]).with_suffix(".json").unlink(missing_ok=True)
    return f"{stamp}.gpkg"


def copy_store(source: str | Path, target: str | Path) -> None:
    """A consistent copy of a store (the backup API), e.g. a workspace made from the town's store."""
    Path(target).parent.mkdir(parents=True, exist_ok=True)
    _copy_sqlite(Path(source), Path(target))


# --- settings the town keeps in its store (its notice register) ---------------------------------------------------

SETTINGS_TABLE = "sewerplan_settings"


def read_setting(path: str | Path, key: str) -> str | None:
    """A setting kept in the store (``sewerplan_settings`` table), or None when the store has none of that name."""
    if not Path(path).is_file():
        return None
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as con:
            row = con.execute(f"SELECT value FROM {SETTINGS_TABLE} WHERE key = ?", (key,)).fetchone()
    except sqlite3.Error:
        return None
    return row[0] if row else None


def write_setting(path: str | Path, key: str, value: str) -> None:
    """Keep a setting in the store (``sewerplan_settings`` table: key, value), replacing one of the same name.

    Taken under the store's writer lock: a run swapping in a copy of the store at the same moment would lose it.
    """
    with store_writer(path, who="sewerplan", what="a settings change"):
        try:
            _write_settings(Path(path), {key: value})
        except sqlite3.Error as exc:
            raise LayerError(f"Cannot keep the setting {key} in the store {path}: {exc}") from exc


def _settings(path: Path) -> dict[str, str]:
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as con:
            return dict(con.execute(f"SELECT key, value FROM {SETTINGS_TABLE}").fetchall())
    except sqlite3.Error:
        return {}


def _write_settings(path: Path, values: dict[str, str]) -> None:
    with closing(sqlite3.connect(str(path))) as con, con:
        con.execute(f"CREATE TABLE IF NOT EXISTS {SETTINGS_TABLE} (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        con.executemany(f"INSERT OR REPLACE INTO {SETTINGS_TABLE} (key, value) VALUES (?, ?)", values.items())
