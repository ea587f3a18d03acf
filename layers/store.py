"""The embedded default store: one GeoPackage under ``instance/`` holding a town's layers and latest results.

``make demo`` writes the sample town into it, ``sewerplan analyze --data STORE --out STORE`` adds the results
(``parcel_results``, ``measuring_lines``, ``connection_points``) beside the input layers, and the web app reads
them back. A run record (profile, counts, when) is kept in the GeoPackage's ``analysis_runs`` attribute table.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import geopandas as gpd
import pyogrio

from layers.errors import LayerError
from layers.write import RESULT_LAYER

DEFAULT_STORE = Path("instance") / "sewerplan.gpkg"


def store_layers(path: str | Path) -> list[str]:
    """The layer names in the store; empty when it does not exist yet."""
    if not Path(path).exists():
        return []
    return [str(name) for name, _ in pyogrio.list_layers(str(path))]


def read_results(path: str | Path) -> gpd.GeoDataFrame | None:
    """The latest parcel results in the store, or None before any analysis has run."""
    if RESULT_LAYER not in store_layers(path):
        return None
    return gpd.read_file(str(path), layer=RESULT_LAYER, engine="pyogrio", use_arrow=True)


def record_run(path: str | Path, summary: dict) -> None:
    """Append one analysis run's summary to the store's ``analysis_runs`` table."""
    try:
        with sqlite3.connect(str(path)) as con:
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
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as con:
            row = con.execute("SELECT run_at, summary FROM analysis_runs ORDER BY id DESC LIMIT 1").fetchone()
    except sqlite3.Error:
        return None
    if row is None:
        return None
    return {"run_at": row[0], **json.loads(row[1])}


def read_setting(path: str | Path, key: str) -> str | None:
    """A setting kept in the store (``sewerplan_settings`` table), or None when the store has none of that name."""
    if not Path(path).is_file():
        return None
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as con:
            row = con.execute("SELECT value FROM sewerplan_settings WHERE key = ?", (key,)).fetchone()
    except sqlite3.Error:
        return None
    return row[0] if row else None


def write_setting(path: str | Path, key: str, value: str) -> None:
    """Keep a setting in the store (``sewerplan_settings`` table: key, value), replacing one of the same name."""
    try:
        with sqlite3.connect(str(path)) as con:
            con.execute("CREATE TABLE IF NOT EXISTS sewerplan_settings (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            con.execute("INSERT OR REPLACE INTO sewerplan_settings (key, value) VALUES (?, ?)", (key, value))
    except sqlite3.Error as exc:
        raise LayerError(f"Cannot keep the setting {key} in the store {path}: {exc}") from exc
