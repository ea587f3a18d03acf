"""The store: a town's layers and latest results, as the web map shows them and every command finds them.

One concept, two backends behind one interface (``Store``; ``open_store`` picks the backend from the location):

- **GeoPackage** (``GeoPackageStore``, the embedded default ``instance/sewerplan.gpkg``): one file.
- **PostGIS** (``layers.postgis_store.PostGISStore``): a schema, ``postgresql://user@host/db#schema``, so the
  town's results live where the county's GIS keeps its layers and several planners on several machines share them.

Both hold the input layers (``parcels``, ``mains`` ... found by name; a run that read them from elsewhere copies
them in, ``write_run(inputs=...)``), the latest results (``parcel_results``,
``measuring_lines``, ``connection_points``, ``building_results``), the run record (``analysis_runs``: one JSON
summary per run, with the workspace it used), the town's settings (``sewerplan_settings``: the notice register it
records; and, with the layers, the measuring CRS and the profile they were checked in and under, ``LAYERS_CRS``,
``LAYERS_PROFILE``) and QGIS's ``layer_styles``, and both keep the same promises:

- **One writer at a time** (``writer``): a second run or publication gets ``StoreBusyError`` at once, saying who
  is writing and since when. GeoPackage: an OS file lock on ``STORE.lock`` (released by the OS if the process
  dies). PostGIS: a session advisory lock in the database, so it holds across processes and machines (released
  by the server if the connection drops).
- **Atomic results** (``write_run``): a reader sees the previous results or the new ones, never half; a run that
  fails leaves the previous results in place. GeoPackage: the results are written into a copy that replaces the
  store in one ``os.replace``. PostGIS: everything is written in one transaction.
- **Publishing and restoring** (``publish``, ``restore``, ``previous``): a validated upload replaces the town's
  layers, and the layers it replaces are kept (the newest ``keep``) to be put back. GeoPackage: copies in
  ``previous-stores/`` beside the file. PostGIS: a snapshot schema per version (``<schema>__prev_<time>``).
  The town's settings stay with the town either way; the measuring CRS the layers are in and the profile they were
  checked under go with the layers.

The module-level functions (``latest_run(location)``, ``store_writer(location, ...)`` ...) open the store and call
its method, so code that holds only a location (the web app's ``STORE`` setting) never asks which kind it is.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import sqlite3
import stat
import tempfile
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from contextlib import closing, contextmanager
from pathlib import Path

import geopandas as gpd
import pandas as pd
import pyogrio

from analysis.profiles import joined_citations, split_citations
from layers.atomic import StoreBusyError as StoreBusyError
from layers.atomic import (
    StoreWriter,
    lock_file,
    named_as,
    scratch_affixes,
    sync_to_disk,
    writer_lock,
    written_whole,
)
from layers.errors import LayerError, redact_url, split_fragment
from layers.qgis_styles import style_geopackage
from layers.read import LAYER_NAMES, read_ogr, unreadable_message
from layers.write import (
    BUILDINGS_LAYER,
    RESULT_LAYER,
    add_layers,
    as_read_back,
    result_layers,
    write_layers,
    write_settings,
)
from layers.write import SETTINGS_TABLE as SETTINGS_TABLE

PREVIOUS = "previous-stores"
RUNS_TABLE = "analysis_runs"
# The setting holding the measuring CRS a store's layers were written in when they were checked on the Data page (an
# upload's "Measuring CRS": data outside New York), absent for layers in the profile's own CRS. A store never analysed
# is measured in it, as an analysed one is in the CRS its run record names. It belongs to the layers, not to the
# town: publishing and restoring carry it with them, where the town's other settings (its register) stay.
LAYERS_CRS = "layers_measuring_crs"
# Likewise the profile (the ordinance) a store's layers were checked under on the Data page, and the values set on it
# then (a JSON object, absent when none were): a store never analysed is run under it, so a planner who publishes an
# upload before running it does not run the town under another ordinance without noticing. Absent for layers written
# without a check (a sample town).
LAYERS_PROFILE = "layers_profile"
LAYERS_PROFILE_SETTINGS = "layers_profile_settings"
# The upload (its token on the Data page) whose layers these are, written into the upload's store before it is
# published: a server stopped after the publication and before the upload was marked published would otherwise
# publish it again at the next press of Publish (the same data twice, a copy of it kept as an earlier version).
PUBLISHED_UPLOAD = "published_upload"
DATA_SETTINGS = frozenset({LAYERS_CRS, LAYERS_PROFILE, LAYERS_PROFILE_SETTINGS, PUBLISHED_UPLOAD})
# Tables a store keeps that are not map layers (the Data page does not count them).
BOOKKEEPING = frozenset({"layer_styles", SETTINGS_TABLE, "sewerplan_writer", "sewerplan_version"})
# Every name an input layer is found by in a store (``layers.read.LAYER_NAMES``), lower case.
INPUT_NAMES = frozenset(name for names in LAYER_NAMES.values() for name in names)
# The results' columns of citations, worded as a section column prints them when read (``worded_citations``).
CITED_COLUMNS = {RESULT_LAYER: ("section", "duties_section"), BUILDINGS_LAYER: ("section",)}


# -- the interface ------------------------------------------------------------------------------------------------


class Store(ABC):
    """A town's store; see the module docstring. ``location`` is what the user gave (a path or a URL)."""

    kind = "store"

    def __init__(self, location: str | Path):
        self.location = str(location)

    @property
    def label(self) -> str:
        """The store for messages and pages: a URL with its password masked."""
        return redact_url(self.location)

    @property
    def short_name(self) -> str:
        """The store for the web's users: its file's or schema's name, never a folder of the server or a database's
        host (``label`` is the command line's, where the user gave it)."""
        return split_fragment(self.location)[1] or "the database"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.label!r})"

    # What every backend provides.
    @abstractmethod
    def exists(self) -> bool: ...

    @abstractmethod
    def layer_names(self) -> list[str]: ...

    @abstractmethod
    def layer_counts(self) -> dict[str, int]: ...

    @abstractmethod
    def read_layer(self, name: str) -> gpd.GeoDataFrame: ...

    @abstractmethod
    def read_columns(self, name: str, columns: Sequence[str]) -> pd.DataFrame:
        """Only ``columns`` of a layer, in that order and without its geometry: a tenth of reading it whole."""
        ...

    @abstractmethod
    def layer_columns(self, name: str) -> list[str]:
        """A layer's attribute columns, read from its schema without reading a row (neither its geometry nor the
        ``fid`` key is one); [] for a layer the store lacks. Each is one ``read_columns`` reads."""
        ...

    def read_layers(self, names) -> dict[str, gpd.GeoDataFrame]:
        """The named layers that exist, read together (PostGIS: from one snapshot of the database), the results'
        citations worded as today's run writes them (``worded_citations``)."""
        read = self._read_layers(names)
        return {
            name: as_read_back(worded_citations(frame, CITED_COLUMNS.get(name, ()))) for name, frame in read.items()
        }

    def _read_layers(self, names) -> dict[str, gpd.GeoDataFrame]:
        present = set(self.layer_names())
        return {name: self.read_layer(name) for name in names if name in present}

    @abstractmethod
    def latest_run(self) -> dict | None: ...

    @abstractmethod
    def version(self) -> float:
        """A value that changes whenever the store's layers or results change (-1 when it does not exist)."""
        ...

    @abstractmethod
    def writer(self, *, who: str, what: str = "an analysis run") -> StoreWriter: ...

    @abstractmethod
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
        """The run's result layers and record, written atomically; returns the result layers' names.

        ``inputs`` are the input layers the run read from elsewhere, copied in with the results (by store layer
        name, replacing layers of those names) so that the store alone serves the map, traces and later runs;
        ``drop`` names earlier such copies the run has no layer for, removed in the same step; ``settings`` are
        store settings kept with the run (the connected-parcels list it read), in the same step.
        """
        ...

    @abstractmethod
    def write_layers(
        self,
        layers: dict[str, gpd.GeoDataFrame],
        *,
        overwrite: bool = False,
        measuring_crs: str | None = None,
        profile: str | None = None,
        profile_settings: dict[str, str] | None = None,
    ) -> list[str]:
        """Write input layers into the store (a sample town, a checked upload); existing ones are replaced only with
        ``overwrite``. ``measuring_crs`` is the CRS they were checked and written in when not the profile's (data
        outside New York), ``profile`` the profile they were checked under and ``profile_settings`` the values set on
        it, all kept with them (``DATA_SETTINGS``, ``checked_settings``) for as long as no run records its own."""
        ...

    @abstractmethod
    def read_setting(self, key: str) -> str | None: ...

    @abstractmethod
    def write_setting(self, key: str, value: str) -> None: ...

    @abstractmethod
    def previous(self) -> list[dict]: ...

    @abstractmethod
    def publish(self, source: str | Path, *, who: str, label: str, keep: int = 5) -> str: ...

    @abstractmethod
    def restore(self, name: str, *, who: str, keep: int = 5) -> str: ...

    @abstractmethod
    def default_register(self) -> str:
        """Where the town's first notice register goes when the store records none."""
        ...

    def prepare_register(self, location: str) -> None:
        """Make ready the place the town's first register goes (``default_register``): nothing for a file."""
        return None

    def register_location(self, recorded: str) -> str:
        """A register location as recorded in the store, made usable (a relative path, a URL without password)."""
        return recorded

    def recordable(self, location: str) -> str:
        """A register location as the store records it."""
        return location

    @abstractmethod
    def qgis_layers(self) -> list[dict]:
        """The store's map layers as a QGIS project names them: ``{"name", "source", "provider", "geometry",
        "srid", "fields"}`` (no password in any source)."""
        ...

    def read_results(self, columns: Sequence[str] | None = None) -> gpd.GeoDataFrame | pd.DataFrame | None:
        """The latest parcel results (only ``columns``, without geometry, when given), or None before any run; their
        citations worded as today's run writes them (``worded_citations``), the deadline the ISO text the analysis
        gives, though stored as a date (``as_read_back``)."""
        if RESULT_LAYER not in self.layer_names():
            return None
        frame = self.read_layer(RESULT_LAYER) if columns is None else self.read_columns(RESULT_LAYER, columns)
        return as_read_back(worded_citations(frame, CITED_COLUMNS[RESULT_LAYER]))

    def results_columns(self) -> list[str] | None:
        """The latest parcel results' columns, from the layer's schema (no row is read: a caller wanting optional
        columns a town's data may lack reads the results once, for those it has), or None before any run."""
        if RESULT_LAYER not in self.layer_names():
            return None
        return self.layer_columns(RESULT_LAYER)


def worded_citations(frame: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """``frame`` with its citation ``columns`` as a run writes them today (``analysis.profiles.joined_citations``):
    a store analysed before citations took one bracket holds "§ 144-17A (value set by the user) (profile
    setting)", which the popup and the downloads would print as stored until the store is analysed again.

    Each distinct value is worded once and the column replaced by them in one step (a million parcels hold a
    handful of sections); the frame itself is returned when no value changes, a new one otherwise.
    """
    changed: dict[str, dict[str, str]] = {}
    for column in columns:
        if column not in frame.columns:
            continue
        distinct = (v for v in frame[column].dropna().unique() if isinstance(v, str))
        worded = {v: joined_citations(split_citations(v)) for v in distinct}
        if renamed := {old: new for old, new in worded.items() if old != new}:
            changed[column] = renamed
    if not changed:
        return frame
    return frame.assign(**{column: frame[column].replace(renamed) for column, renamed in changed.items()})


def is_store(text: str | Path | None) -> bool:
    """``text`` names a store: a GeoPackage path, or a ``postgresql://`` URL with a schema after ``#``."""
    if not text:
        return False
    text = str(text)
    if _is_postgres(text):
        _, schema = split_fragment(text)
        return bool(schema) and "." not in schema
    return "://" not in text and Path(text).suffix.lower() == ".gpkg"


def open_store(location: str | Path | Store) -> Store:
    """The store at ``location``: a PostGIS schema for a ``postgresql://...#schema`` URL, else a GeoPackage."""
    if isinstance(location, Store):
        return location
    if _is_postgres(str(location)):
        from layers.postgis_store import PostGISStore

        return PostGISStore(str(location))
    return GeoPackageStore(location)


def _is_postgres(text: str) -> bool:
    return str(text).startswith(("postgresql://", "postgres://", "postgresql+psycopg://"))


# -- the GeoPackage backend ---------------------------------------------------------------------------------------


class GeoPackageStore(Store):
    """A store in one GeoPackage file (see the module docstring)."""

    kind = "GeoPackage"

    @property
    def path(self) -> Path:
        return Path(self.location)

    @property
    def label(self) -> str:
        return self.location

    @property
    def short_name(self) -> str:
        return self.path.name

    def exists(self) -> bool:
        return self.path.is_file()

    def layer_names(self) -> list[str]:
        """The store's layers; a file that is no readable GeoPackage (damaged, or another kind of file given as a
        store or as ``--out``) is refused with one sentence, not GDAL's traceback."""
        if not self.path.exists():
            return []
        try:
            return [str(name) for name, _ in pyogrio.list_layers(self.location)]
        except pyogrio.errors.DataSourceError as exc:
            raise LayerError(unreadable_message(self.path, exc)) from exc

    def layer_counts(self) -> dict[str, int]:
        return {
            name: int(pyogrio.read_info(self.location, layer=name)["features"])
            for name in self.layer_names()
            if name not in BOOKKEEPING
        }

    def read_layer(self, name: str) -> gpd.GeoDataFrame:
        return read_ogr(self.location, layer=name)

    def read_columns(self, name: str, columns: Sequence[str]) -> pd.DataFrame:
        frame = read_ogr(self.location, layer=name, columns=list(columns), read_geometry=False)
        require_columns(frame.columns, columns, f"The layer {name} of {self.label}")
        return pd.DataFrame(frame[list(columns)])

    def layer_columns(self, name: str) -> list[str]:
        if name not in self.layer_names():
            return []
        return [str(field) for field in pyogrio.read_info(self.location, layer=name)["fields"]]

    def latest_run(self) -> dict | None:
        if not self.path.exists():
            return None
        try:
            with closing(sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)) as con:
                row = con.execute(f"SELECT run_at, summary FROM {RUNS_TABLE} ORDER BY id DESC LIMIT 1").fetchone()
        except sqlite3.Error:
            return None
        if row is None:
            return None
        return {"run_at": row[0], **json.loads(row[1])}

    def version(self) -> float:
        """Changes whenever the file is replaced or rewritten (its modification time in ns, size and inode)."""
        try:
            st = os.stat(self.path)
        except OSError:
            return -1.0
        return float(hash((st.st_mtime_ns, st.st_size, st.st_ino)))

    # -- one writer at a time

    def lock_path(self) -> Path:
        return lock_file(self.path)

    def writer(self, *, who: str, what: str = "an analysis run") -> StoreWriter:
        """Take the store's writer lock without waiting; ``StoreBusyError`` says who holds it and since when.

        Once it holds the lock, the hidden copies of the store that killed writers left beside it
        (``.NAME.xxxxxxxx.tmp.gpkg``, tens of MB each for a town) are deleted: every writer of the store writes its
        copy under this lock, so none left now is still being written (``layers.atomic.writer_lock``).
        """
        return writer_lock(self.path, who=who, what=what)

    # -- results

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
        """The run's result layers, input copies, settings and record, written into a copy that replaces the store
        in one step."""
        frames = result_layers(parcels, measuring_lines, buildings)
        writer = None if locked else self.writer(who=who or "sewerplan analyze")
        try:
            with _replacement(self.path, copy_current=True) as tmp:
                if drop:
                    _drop_layers(tmp, drop)
                add_layers(str(tmp), {**frames, **(inputs or {})}, scratch=True)
                if settings:
                    write_settings(tmp, settings)
                _record_run(tmp, summary)
                # The results' legend lists the statuses the run's profile can give, as the web map's does (under
                # Wappinger no "near a main, but not on its street"): styled again now the run is known.
                style_geopackage(tmp, [RESULT_LAYER], run=summary)
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
        """The store's layers replaced whole (a sample town, a validated upload), under the writer lock as every
        write of a store is (as PostGIS's is): a run cannot swap its copy over them, nor clear their copy.
        ``measuring_crs`` (None for the profile's own), ``profile`` and ``profile_settings``: what the layers were
        checked in and under, kept with them in the same file (``checked_settings``).

        A store replaced whole (``overwrite``) keeps the town's settings (``_town_settings``: the notice register it
        records), as a publication does and a PostGIS store's settings table does: the file was replaced with its
        settings, and the register of notices sent, recorded nowhere else when it is not beside the store, was lost
        to the store without a word (a new one could then be created beside it, the same owners noticed again)."""
        settings = checked_settings(measuring_crs=measuring_crs, profile=profile, profile_settings=profile_settings)
        with self.writer(who="sewerplan", what="writing layers"):
            kept = _town_settings(self.path) if overwrite else {}
            write_layers(self.location, layers, overwrite=overwrite, settings=(kept | settings) or None)
        return list(layers)

    # -- settings

    def read_setting(self, key: str) -> str | None:
        return _settings(self.path).get(key)

    def write_setting(self, key: str, value: str) -> None:
        """Taken under the writer lock: a run swapping in a copy of the store at the same moment would lose it."""
        with self.writer(who="sewerplan", what="a settings change"):
            try:
                write_settings(self.path, {key: value})
            except sqlite3.Error as exc:
                raise LayerError(f"Cannot keep the setting {key} in the store {self.path}: {exc}") from exc

    # -- publishing and restoring

    def previous(self) -> list[dict]:
        folder = self.path.parent / PREVIOUS
        if not folder.is_dir():
            return []
        found = []
        current = _identity(self.path)
        for f in folder.glob("*.gpkg"):
            if f.name.startswith("."):  # a copy being written (or one a killed writer left): not a version yet
                continue
            side = f.with_suffix(".json")
            meta = _record(side) if side.exists() else {}
            if _unrecorded(f) or _copy_of_current(meta, current):
                continue
            found.append(
                {
                    "name": f.name,
                    "saved_at": meta.get("saved_at", f.stat().st_mtime),
                    "label": meta.get("label", ""),
                    "bytes": f.stat().st_size,
                }
            )
        return sorted(found, key=lambda m: m["saved_at"], reverse=True)

    def publish(self, source: str | Path, *, who: str, label: str, keep: int = 5) -> str:
        target = self.path
        with self.writer(who=who, what="publishing a store"):
            kept = self._keep_previous(label=f"before {label}", who=who)
            town = _town_settings(target)
            with _replacement(target, copy_current=False) as tmp:
                _copy_sqlite(Path(source), tmp)
                if town:  # the town's settings (its notice register) stay with the town, whatever data is published
                    write_settings(tmp, town)  # (the measuring CRS of the layers is the published copy's own)
            self._prune(keep)
        return kept

    def restore(self, name: str, *, who: str, keep: int = 5) -> str:
        if not re.fullmatch(r"[A-Za-z0-9_.-]+\.gpkg", name or ""):
            raise LayerError("No such earlier store.")
        target = self.path
        chosen = target.parent / PREVIOUS / name
        if not chosen.is_file():
            raise LayerError("No such earlier store (it may have been pruned).")
        town = _town_settings(target)
        with self.writer(who=who, what="restoring a store"):
            with _replacement(target, copy_current=False) as tmp:
                _copy_sqlite(chosen, tmp)
                if town:  # the town's settings (its notice register) are not rolled back with the data
                    write_settings(tmp, town)
                kept = self._keep_previous(label=f"replaced by the restore of {name}", who=who)
            self._prune(keep)
        return kept

    def _keep_previous(self, *, label: str, who: str) -> str:
        """Copy the current store into ``previous-stores/``, before the caller replaces it.

        The copy's record names the store file it copies (``_identity``): until that file is replaced the copy is
        the store itself, not an earlier version, and is not listed; nor is a copy with no record yet. A publication
        or restore killed before it replaced the store left such a copy; this one, holding the lock, deletes it
        before keeping its own."""
        target = self.path
        if not target.exists():
            return ""
        folder = target.parent / PREVIOUS
        folder.mkdir(parents=True, exist_ok=True)
        for left in folder.glob(".*.tmp.*"):  # what a writer killed while copying left; this one holds the lock
            left.unlink(missing_ok=True)
        current = _identity(target)
        for side in folder.glob("*.json"):  # what a publication or restore killed before its replace left
            if not side.name.startswith(".") and _copy_of_current(_record(side), current):
                discard_store(side.with_suffix(".gpkg"))
                side.unlink(missing_ok=True)
        for copy in folder.glob("*.gpkg"):  # ... or before it wrote the record of its copy
            if _unrecorded(copy):
                discard_store(copy)
        stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S-%f")
        copy = folder / f"{stamp}.gpkg"
        with written_whole(copy, locked=True) as where:  # whole or not at all: a half copy is no earlier version
            _copy_sqlite(target, where)
        record = {"saved_at": time.time(), "label": label, "by": who, "of": current}
        try:  # its record whole or not at all, and the copy only with it (a full disk keeps neither)
            with written_whole(copy.with_suffix(".json"), locked=True) as where:
                where.write_text(json.dumps(record), encoding="utf-8")
        except BaseException:
            discard_store(copy)
            raise
        return f"{stamp}.gpkg"

    def _prune(self, keep: int) -> None:
        """Keep the newest ``keep`` earlier versions; called once the store is replaced, so that a publication
        killed before that never pushed a real version out for the copy of the store it did not replace."""
        folder = self.path.parent / PREVIOUS
        for old in self.previous()[max(keep, 1) :]:  # the record first: a copy left without it is no version
            (folder / old["name"]).with_suffix(".json").unlink(missing_ok=True)
            (folder / old["name"]).unlink(missing_ok=True)

    # -- the register and QGIS

    def default_register(self) -> str:
        store = self.path.resolve()
        return str(store.with_name(f"{store.stem}-register.sqlite"))

    def register_location(self, recorded: str) -> str:
        if recorded and "://" not in recorded and not Path(recorded).is_absolute():
            return str((self.path.resolve().parent / recorded).resolve())
        return recorded

    def qgis_layers(self) -> list[dict]:
        if not self.path.is_file():
            raise LayerError(f"{self.path} does not exist: give the town's store (the GeoPackage `analyze` wrote).")
        self.layer_names()  # a damaged file, or a file of another kind given as the store, refused in one sentence
        try:
            return self._qgis_layers()
        except sqlite3.DatabaseError as exc:  # read by GDAL, but no GeoPackage (a CSV, a SQLite of other tables)
            raise LayerError(unreadable_message(self.path, exc)) from exc

    def _qgis_layers(self) -> list[dict]:
        with closing(sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)) as con:
            rows = con.execute(
                "SELECT table_name, column_name, geometry_type_name, srs_id FROM gpkg_geometry_columns"
            ).fetchall()
            found = []
            for table, geom, geometry, srid in rows:
                fields = [r[1] for r in con.execute(f'PRAGMA table_info("{table}")') if r[1] not in (geom, "fid")]
                found.append(
                    {
                        "name": table,
                        "path": str(self.path.resolve()),
                        "provider": "ogr",
                        "geometry": geometry.upper(),
                        "srid": int(srid),
                        "fields": fields,
                    }
                )
        for entry in found:
            bounds = pyogrio.read_info(self.location, layer=entry["name"], force_total_bounds=True)["total_bounds"]
            entry["extent"] = (
                tuple(float(v) for v in bounds) if bounds is not None and all(v == v for v in bounds) else None
            )
        return found


def _record_run(path: str | Path, summary: dict) -> None:
    """Append one analysis run's summary to the GeoPackage's ``analysis_runs`` table."""
    try:
        with closing(sqlite3.connect(str(path))) as con, con:
            con.execute(
                f"CREATE TABLE IF NOT EXISTS {RUNS_TABLE} (id INTEGER PRIMARY KEY AUTOINCREMENT, "
                "run_at TEXT DEFAULT CURRENT_TIMESTAMP, summary TEXT NOT NULL)"
            )
            con.execute(f"INSERT INTO {RUNS_TABLE} (summary) VALUES (?)", (json.dumps(summary),))
    except sqlite3.Error as exc:
        raise LayerError(f"Cannot record the run in {path}: {exc}") from exc


def _drop_layers(path: Path, names: tuple[str, ...]) -> None:
    """Remove layers from a GeoPackage as GDAL does: the table, its spatial index and every entry naming it."""
    try:
        with closing(sqlite3.connect(str(path))) as con, con:
            tables = {row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            for name in names:
                if name not in tables:
                    continue
                for (column,) in con.execute(
                    "SELECT column_name FROM gpkg_geometry_columns WHERE table_name = ?", (name,)
                ).fetchall():
                    con.execute(f'DROP TABLE IF EXISTS "rtree_{name}_{column}"')
                con.execute(f'DROP TABLE "{name}"')
                for table, column in (
                    ("gpkg_contents", "table_name"),
                    ("gpkg_geometry_columns", "table_name"),
                    ("gpkg_extensions", "table_name"),
                    ("gpkg_ogr_contents", "table_name"),
                    ("gpkg_data_columns", "table_name"),
                    ("layer_styles", "f_table_name"),
                ):
                    if table in tables:
                        con.execute(f"DELETE FROM {table} WHERE {column} = ?", (name,))
    except sqlite3.Error as exc:
        raise LayerError(f"Cannot remove the layers {', '.join(names)} from {path}: {exc}") from exc


@contextmanager
def _replacement(path: Path, *, copy_current: bool):
    """A temporary GeoPackage beside ``path`` (a copy of it when asked) that replaces it on success."""
    path.parent.mkdir(parents=True, exist_ok=True)
    prefix, suffix = scratch_affixes(path)  # the hidden name a killed run's copy is later known by
    fd, name = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        if copy_current and path.exists():
            _copy_sqlite(path, tmp)
        else:
            tmp.unlink()
        with named_as(tmp, path):
            yield tmp
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        if path.exists():  # the store keeps who may read it (mkstemp made the copy readable by its owner only)
            os.chmod(tmp, stat.S_IMODE(path.stat().st_mode))
        _replace(tmp, path)
        sync_to_disk(path.parent)  # a power cut after "published" must not bring back the store before it
    finally:
        discard_store(tmp)  # a failed copy, or the name the replaced one had, with its SQLite side files


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


def _settings(path: Path) -> dict[str, str]:
    """The GeoPackage's settings; none for a file that is not there, has no settings table, or is damaged (reading
    its layers says so, in one sentence: its settings are not read first to fail another way)."""
    if not path.is_file():
        return {}
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as con:
            return dict(con.execute(f"SELECT key, value FROM {SETTINGS_TABLE}").fetchall())
    except (sqlite3.Error, UnicodeDecodeError):
        return {}


def _identity(path: Path) -> list[int] | None:
    """What tells the store file at ``path`` from the one a publication or restore puts in its place (a new file:
    another inode), and from itself written in place since (its settings: size and time of change)."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]


def _record(side: Path) -> dict:
    """An earlier version's record (its label, time, publisher), {} when it cannot be read."""
    try:
        return json.loads(side.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


# The name ``_keep_previous`` gives a copy: when it was kept.
_KEPT = re.compile(r"\d{8}-\d{6}-\d{6}\.gpkg")


def _unrecorded(copy: Path) -> bool:
    """A copy ``_keep_previous`` made whose record was never written (a publication or restore killed between the
    two, before it replaced the store, or a pruning killed between them): no earlier version. A GeoPackage of
    another name, put in the folder by hand, is listed as it always was."""
    return _KEPT.fullmatch(copy.name) is not None and not copy.with_suffix(".json").exists()


def _copy_of_current(record: dict, current: list[int] | None) -> bool:
    """The copy this record describes was kept by a publication or restore that never replaced the store: it is
    the store as it is, not an earlier version (records of earlier releases name no store: they are versions)."""
    return current is not None and record.get("of") == current


def _town_settings(path: Path) -> dict[str, str]:
    """The settings of the store at ``path`` that stay with the town when other layers are published or restored
    over it (its notice register): every one but those of its layers (``DATA_SETTINGS``)."""
    return {k: v for k, v in _settings(path).items() if k not in DATA_SETTINGS}


# -- the store by its location (what the web app's STORE setting and the commands hold) ---------------------------


def store_exists(location: str | Path | None) -> bool:
    """The store at ``location`` exists (a GeoPackage file; a PostGIS schema)."""
    return bool(location) and open_store(location).exists()


def same_store(a: str | Path | None, b: str | Path | None) -> bool:
    """``a`` and ``b`` name the same store: the same GeoPackage file, or the same PostGIS schema (a password masked
    in one of them, as a run record keeps it, does not matter)."""
    if not a or not b:
        return False
    if "://" in str(a) or "://" in str(b):
        return redact_url(str(a)) == redact_url(str(b))
    try:
        return Path(a).expanduser().resolve() == Path(b).expanduser().resolve()
    except OSError:
        return False


def in_store(source: str | Path | None, store: str | Path | None) -> bool:
    """``source`` (what ``--data`` or ``--layer`` gave) is the store or one of its layers: the same GeoPackage
    (``FILE`` or ``FILE:LAYER``), or the same PostGIS schema (``URL#schema`` or ``URL#schema.table``)."""
    if not source or not store:
        return False
    text = str(source)
    if _is_postgres(text):
        if not _is_postgres(str(store)):
            return False
        url, fragment = split_fragment(text)
        return same_store(f"{url}#{fragment.partition('.')[0]}", store)
    if "://" in text or Path(text).exists():
        return same_store(text, store)
    path, sep, _layer = text.rpartition(":")
    return bool(sep) and same_store(path, store)


def store_label(location: str | Path) -> str:
    """The store for messages and pages: its path, or its URL with the password masked."""
    return open_store(location).label


def store_name(location: str | Path) -> str:
    """The store as the web names it to its users: its file's name (``sewerplan.gpkg``), or its PostGIS schema's;
    ``store_label``'s full path told a viewer the server's folders."""
    return open_store(location).short_name


def store_layers(location: str | Path) -> list[str]:
    """The layer names in the store; empty when it does not exist yet."""
    return open_store(location).layer_names()


def layer_counts(location: str | Path) -> dict[str, int]:
    """Every layer in the store and its number of features (empty when the store does not exist)."""
    store = open_store(location)
    return store.layer_counts() if store.exists() else {}


def read_results(location: str | Path, columns: Sequence[str] | None = None) -> gpd.GeoDataFrame | pd.DataFrame | None:
    """The latest parcel results in the store (only ``columns``, without geometry, when given), or None before any
    analysis has run."""
    return open_store(location).read_results(columns)


def results_columns(location: str | Path) -> list[str] | None:
    """The columns of the latest parcel results in the store, from its schema alone, or None before any analysis."""
    return open_store(location).results_columns()


def require_columns(have, columns: Sequence[str], what: str) -> None:
    """Refuse a read of columns a layer lacks (a store written by an older sewerplan), naming them."""
    missing = [c for c in columns if c not in set(have)]
    if missing:
        raise LayerError(f"{what} has no column {', '.join(missing)}: run the analysis again to rewrite it.")


def latest_run(location: str | Path) -> dict | None:
    """The summary of the latest recorded run, or None."""
    return open_store(location).latest_run()


def layers_crs(location: str | Path) -> str | None:
    """The measuring CRS the store's layers were checked and written in (an upload's "Measuring CRS" on the Data
    page, published with them), or None: layers in the profile's own CRS, or a store without them."""
    return open_store(location).read_setting(LAYERS_CRS) or None


def layers_profile(location: str | Path) -> tuple[str | None, dict[str, str]]:
    """The profile the store's layers were checked under (an upload's "Profile" on the Data page, published with
    them) and the values set on it then; ``(None, {})`` for layers written without a check (a sample town) or a store
    without them. Values that cannot be read (a store edited by hand) are refused rather than dropped: a run without
    them would apply another ordinance than the one the layers were checked under."""
    store = open_store(location)
    profile = store.read_setting(LAYERS_PROFILE) or None
    text = store.read_setting(LAYERS_PROFILE_SETTINGS) if profile else None
    if not text:
        return profile, {}
    try:
        values = json.loads(text)
    except ValueError:
        values = None
    if not isinstance(values, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in values.items()):
        raise LayerError(
            f"The store {store.label} keeps the values set on the profile {profile} its layers were checked under "
            f"({LAYERS_PROFILE_SETTINGS}: {text[:80]!r}), but not as a JSON object of texts: check the layers again "
            "on the Data page, or give the profile and its values for the run."
        )
    return profile, values


def checked_settings(
    *, measuring_crs: str | None = None, profile: str | None = None, profile_settings: dict[str, str] | None = None
) -> dict[str, str]:
    """The store settings (``DATA_SETTINGS``) that keep with layers what they were checked in and under: only those
    given (a setting absent is the profile's own CRS, no profile given, no values set on it).

    Examples
    --------
    >>> checked_settings(profile="poughkeepsie", profile_settings={"mandate.distance_ft": "200"})
    {'layers_profile': 'poughkeepsie', 'layers_profile_settings': '{"mandate.distance_ft": "200"}'}
    >>> checked_settings()
    {}
    """
    values = {LAYERS_CRS: measuring_crs, LAYERS_PROFILE: profile}
    if profile and profile_settings:
        values[LAYERS_PROFILE_SETTINGS] = json.dumps({k: str(v) for k, v in profile_settings.items()})
    return {k: v for k, v in values.items() if v}


def discard_store(path: str | Path) -> None:
    """Delete a GeoPackage (an upload's checked store, a run's copy of a store), its SQLite side files too; the caller
    holds its writer lock. The lock file stays, as every store's does."""
    for name in (Path(path), *(Path(f"{path}{side}") for side in ("-journal", "-wal", "-shm"))):
        name.unlink(missing_ok=True)


def store_writer(location: str | Path, *, who: str, what: str = "an analysis run") -> StoreWriter:
    """Take the store's writer lock without waiting; ``StoreBusyError`` says who holds it and since when."""
    return open_store(location).writer(who=who, what=what)


def write_run(
    location: str | Path,
    parcels: gpd.GeoDataFrame,
    measuring_lines: gpd.GeoDataFrame | None,
    buildings: gpd.GeoDataFrame | None,
    summary: dict,
    *,
    locked: bool = False,
    who: str = "sewerplan analyze",
    inputs: dict[str, gpd.GeoDataFrame] | None = None,
    drop: tuple[str, ...] = (),
    settings: dict[str, str] | None = None,
) -> list[str]:
    """Write a run's result layers and record into the store atomically; returns the result layer names written.

    ``locked`` says the caller already holds the store's writer lock (a web run takes it before it starts, in the
    server process); otherwise it is taken here and ``StoreBusyError`` raised if another writer has it. ``inputs``,
    ``drop`` and ``settings``: input layers copied in with the results, earlier copies removed, and store settings
    kept with the run (``Store.write_run``).
    """
    if buildings is None:  # the last run's building results go too: the map drew them beside this run's parcels
        drop = (*drop, BUILDINGS_LAYER)
    return open_store(location).write_run(
        parcels,
        measuring_lines,
        buildings,
        summary,
        locked=locked,
        who=who,
        inputs=inputs,
        drop=drop,
        settings=settings,
    )


def previous_stores(location: str | Path) -> list[dict]:
    """Earlier versions of the store, newest first: ``{"name", "saved_at", "label", "bytes"}``."""
    return open_store(location).previous()


def publish_store(location: str | Path, source: str | Path, *, who: str, label: str, keep: int = 5) -> str:
    """Make ``source`` (a validated workspace store, a GeoPackage) the town's store; the version it replaces is
    kept. Returns the name under which the replaced version was kept ("" when there was none)."""
    return open_store(location).publish(source, who=who, label=label, keep=keep)


def restore_store(location: str | Path, name: str, *, who: str, keep: int = 5) -> str:
    """Put an earlier version back as the town's store; the one it replaces is kept too (restoring is undoable).

    Returns the name under which the replaced version was kept.
    """
    return open_store(location).restore(name, who=who, keep=keep)


def read_setting(location: str | Path, key: str) -> str | None:
    """A setting kept in the store (``sewerplan_settings``: key, value), or None when it has none of that name."""
    return open_store(location).read_setting(key)


def write_setting(location: str | Path, key: str, value: str) -> None:
    """Keep a setting in the store, replacing one of the same name."""
    open_store(location).write_setting(key, value)


def lock_path(path: str | Path) -> Path:
    """The GeoPackage store's lock file."""
    return GeoPackageStore(path).lock_path()
