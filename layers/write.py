"""Write analysis results: GeoPackage, GeoParquet (all layers), GeoJSON (RFC 7946: EPSG:4326, lon/lat) or CSV.

The format follows the output's extension. A GeoPackage gets the parcel results, the measuring lines and the
connection points as three layers, in the measuring CRS; GeoJSON and CSV get the parcel results only (CSV
without geometry, with the connection point's coordinates). Existing layers of the same name are replaced;
other layers of a GeoPackage (the input layers of the embedded store) are kept. A GeoParquet file holds one
layer: ``results.parquet`` gets the parcel results and the other layers go beside it as
``results.measuring_lines.parquet`` and ``results.connection_points.parquet`` (GeoParquet 1.1, with a bounding-box
covering column, in the measuring CRS).

A GeoPackage layer is written through pyogrio's Arrow path inside one transaction, its spatial index (R-tree)
built by GDAL once after the bulk insert (in bulk, not row by row). A new GeoPackage (and a store's scratch copy)
is written where nobody can see it yet, without SQLite's rollback journal and per-commit sync, then synced and
renamed into place: a write stopped halfway leaves no partial file, and the insert is about a fifth faster. A
GeoPackage that exists already (layers added beside others) is written with SQLite's usual journal. Every GeoPackage
written here, whatever command writes it, is written under its writer lock, the store's (``add_layers``), and every
GeoParquet file under its own (``layers.atomic``): one writer at a time, whose taking of the lock clears the hidden
files killed writers left.

GeoParquet results go as their three files at once on two threads, and each file's rows a row group at a time:
while Arrow compresses and writes one row group (without Python's lock), the next one's geometries are encoded.
Points and lines are encoded by numpy (``layers.wkb``), polygons by shapely. Only the columns with few distinct
values are dictionary-encoded (reason sentences and IDs are not worth a dictionary). The files are those GeoPandas
writes (GeoParquet 1.1 with a bbox covering column), built here so that the bounds are computed once.

Every CSV sewerplan writes (results, network reports, the notices mailing list) goes through ``write_csv``: a
spreadsheet opens it without running anything in it (a text cell starting with ``=``, ``+``, ``-``, ``@``, a tab or
a carriage return gets a leading apostrophe), every field is quoted (a carriage return inside a cell never splits
the row), it is UTF-8 with a byte-order mark (so "§" and MÜLLER-ŽÁK show right), and ZIP codes stay text. The
results and the network report, the CSVs a GIS opens, get a ``.csvt`` beside them naming each column's type: QGIS
guessed ZIP codes to be integers without it.

Every file written whole (a new GeoPackage, each GeoParquet file, a GeoJSON file, a CSV) is written under a hidden
name beside its target and renamed over it once complete, under the target's writer lock (``layers.atomic``): a
run killed halfway leaves the earlier file as it was, or no file, never one that looks whole and is not.
"""

from __future__ import annotations

import csv
import json
import re
import sqlite3
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing, contextmanager
from pathlib import Path

import geopandas as gpd
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pyogrio
import shapely

from analysis.arrays import distinct
from analysis.errors import Fix
from layers.atomic import StoreBusyError, folder_for, writer_lock, written_whole
from layers.crs import crs_label
from layers.errors import LayerError
from layers.wkb import points_wkb, wkb_array

RESULT_LAYER = "parcel_results"
BUILDINGS_LAYER = "building_results"
LINES_LAYER = "measuring_lines"
POINTS_LAYER = "connection_points"
REPORT_LAYER = "network_report"  # a network check's report in a GeoPackage
# A store's settings (key, value): the notice register it records, the measuring CRS its layers are in ...
SETTINGS_TABLE = "sewerplan_settings"
FORMATS = {".gpkg": "GPKG", ".parquet": "Parquet", ".geojson": "GeoJSON", ".json": "GeoJSON", ".csv": "CSV"}
# A cell a spreadsheet would run as a formula (OWASP's list: = + - @ tab carriage-return first).
_FORMULA = re.compile(r"^[=+\-@\t\r]")
# Columns that hold ZIP codes: written as text, never as a number (01234, not 1234 or 1234.0).
_ZIP_COLUMN = re.compile(r"(^|_)(zip|zip5|zipcode|zip_code|postal_code|postcode)($|_)", re.IGNORECASE)


def write_csv(
    path: str | Path,
    frame: pd.DataFrame,
    *,
    bom: bool = True,
    locked: bool = False,
    replace: bool = True,
    column_types: bool = False,
) -> str:
    """Write a table as a CSV that is safe to open in a spreadsheet; returns the path.

    Text cells that start like a formula get a leading apostrophe, every field is quoted, ZIP-code columns are
    text, and the file is UTF-8 with a byte-order mark unless ``bom`` is False. A geometry column, if any, is
    dropped (CSV output carries attributes only). Numbers stay numbers. The file appears whole or not at all
    (``layers.atomic.written_whole``): a write stopped halfway leaves the file that was there before. ``locked``:
    the caller holds the file's writer lock, or writes a folder nobody else does (a batch's partial folder).
    ``replace=False``: a file at ``path`` is never replaced, not even one that appears while this one is written
    (``FileExistsError``). ``column_types``: a ``.csvt`` beside it (``column_types_csvt``) tells QGIS and GDAL each
    column's type, so a GIS does not guess a ZIP code to be a number (for the results and the network report, the
    CSVs a GIS opens).
    """
    folder_for(path)
    table = pd.DataFrame(frame)
    if isinstance(frame, gpd.GeoDataFrame) and frame.geometry.name in table.columns:
        table = table.drop(columns=frame.geometry.name)
    table = _counts_as_whole_numbers(table)
    safe = {}
    for name in table.columns:
        column = table[name]
        if _ZIP_COLUMN.search(str(name)):
            column = _zip_text(column)
        if column.dtype == object or pd.api.types.is_string_dtype(column):
            safe[name] = formula_safe(column)
        else:
            safe[name] = column
    out = pd.DataFrame(safe, index=table.index)
    out.columns = [_formula_safe_text(str(c)) for c in table.columns]
    encoding = "utf-8-sig" if bom else "utf-8"
    # a spreadsheet never opens half a list (``layers.atomic``)
    with written_whole(path, locked=locked, replace=replace) as where:
        out.to_csv(where, index=False, encoding=encoding, quoting=csv.QUOTE_ALL, lineterminator="\r\n")
    if column_types:
        with written_whole(column_types_path(path), locked=locked) as where:
            where.write_text(column_types_csvt(table), encoding="ascii")
    return str(path)


# Counts a spreadsheet shows as "1.0" when read as floats (a column with a gap is one), and QGIS as a Real it cannot
# count with: living units (a tester). Stored as whole numbers (INTEGER, bigint, int64), gaps as nulls.
_COUNT_COLUMNS = ("units",)
# Columns of ISO dates (a notice's deadline), which a GIS reads as a date when told so: stored as dates (DATE, date,
# date32), so QGIS filters them with its date functions, where text sorts and compares only as text.
_DATE_COLUMNS = ("deadline",)
# A column of ISO dates, which a GIS reads as a date when told so.
_ISO_DATE = r"\d{4}-\d{2}-\d{2}"


def _counts_as_whole_numbers(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with its count columns (``_COUNT_COLUMNS``) as whole numbers (``whole_numbers``)."""
    changed = {name: whole_numbers(table[name]) for name in _COUNT_COLUMNS if name in table.columns}
    changed = {name: column for name, column in changed.items() if column is not table[name]}
    return table.assign(**changed) if changed else table


def whole_numbers(values: pd.Series) -> pd.Series:
    """A count column of floats (read with a gap, or computed) as nullable whole numbers (``Int64``) where every
    value given is one; a column with a fraction in it (a layer's own 1.5), or of another type, is returned as it
    is."""
    if not pd.api.types.is_float_dtype(values):
        return values
    numbers = values.to_numpy(dtype=float, na_value=np.nan)
    given = numbers[np.isfinite(numbers)]
    whole = len(given) == 0 or (np.array_equal(given, np.round(given)) and np.abs(given).max() < 2**53)
    if not whole or np.isinf(numbers).any():
        return values
    return values.round().astype("Int64")


def iso_dates(values: pd.Series) -> pd.Series:
    """A date column given as ISO text ("2027-03-01", missing as None) as dates (Arrow's ``date32``, which every
    writer stores as a date type and prints as the same ISO text); a column holding anything else is returned as
    it is."""
    if isinstance(values.dtype, pd.ArrowDtype) and pa.types.is_date(values.dtype.pyarrow_dtype):
        return values
    if pd.api.types.is_datetime64_any_dtype(values):
        return values.dt.date.astype(pd.ArrowDtype(pa.date32()))
    if pd.api.types.is_numeric_dtype(values) and not values.isna().all():
        return values
    if pd.api.types.infer_dtype(values, skipna=True) not in ("string", "empty"):
        return values
    present = values.notna()
    text = values.astype(object).where(present, None)
    if not text[present].str.fullmatch(_ISO_DATE).all():
        return values
    try:
        stamps = pd.to_datetime(text, format="%Y-%m-%d")
    except ValueError:  # 2027-02-30: not a date, left as the text it is
        return values
    days = pa.array(stamps.to_numpy(dtype="datetime64[D]"), mask=~present.to_numpy()).cast(pa.date32())
    return pd.Series(days, index=values.index, dtype=pd.ArrowDtype(pa.date32()))


def stored_column(name: str, values: pd.Series) -> pd.Series:
    """A result column as every store and file holds it: ZIP codes given as numbers as text with their leading
    zeros (``zip_text``), a date column (``_DATE_COLUMNS``) as dates, a count (``_COUNT_COLUMNS``) as whole
    numbers; any other column is returned as it is."""
    if (text := zip_text(name, values)) is not values:
        return text
    if name in _DATE_COLUMNS:
        return iso_dates(values)
    if name in _COUNT_COLUMNS:
        return whole_numbers(values)
    return values


def as_read_back(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` read from a store or file with its date columns (``_DATE_COLUMNS``) as the ISO text the analysis
    gives ("2027-03-01", missing None), whatever date type the store held them in; the frame itself when there is
    none. Every reader of the results (the letters, the summary, the downloads, the web API) reads one kind."""
    changed = {}
    for name in _DATE_COLUMNS:
        if name not in frame.columns:
            continue
        column = frame[name]
        if not pd.api.types.is_datetime64_any_dtype(column):
            if pd.api.types.infer_dtype(column, skipna=True) not in ("date", "datetime", "datetime64"):
                continue
            column = pd.to_datetime(column.astype(object))
        changed[name] = column.dt.strftime("%Y-%m-%d").astype(object).where(column.notna(), None)
    return frame.assign(**changed) if changed else frame


def column_types_path(path: str | Path) -> Path:
    """Where ``write_csv`` puts a CSV's column types: ``results.csv`` -> ``results.csvt`` (GDAL's and QGIS's name)."""
    return Path(path).with_suffix(".csvt")


def column_types_csvt(table: pd.DataFrame) -> str:
    """The GDAL ``.csvt`` line for a table as ``write_csv`` writes it: ``"String","Real",...``.

    QGIS's "Add Delimited Text Layer" guesses each column's type from its values, so the ZIP code 01234 came in as
    the integer 1234 and was mailed so; GDAL's CSV driver (and QGIS through it) read every column as text, distances
    too. Both read a ``.csvt`` beside the file instead: ZIP-code and other text columns ``String`` (a boolean is
    written True/False, text), whole numbers ``Integer`` (QGIS's delimited-text reader knows no ``Integer64``, and
    dropped the whole file of types for it: the ZIP codes came in as integers again), other numbers ``Real``, a text
    column of ISO dates only ``Date``.
    """
    kinds = []
    for name in table.columns:
        column = table[name]
        if _ZIP_COLUMN.search(str(name)) or pd.api.types.is_bool_dtype(column):
            kinds.append("String")
        elif pd.api.types.is_integer_dtype(column):
            kinds.append("Integer")
        elif pd.api.types.is_numeric_dtype(column):
            kinds.append("Real")
        else:
            text = column.dropna().astype(str)
            text = text[text != ""]
            dates = len(text) > 0 and bool(text.str.fullmatch(_ISO_DATE).all())
            kinds.append("Date" if dates else "String")
    return ",".join(f'"{kind}"' for kind in kinds) + "\r\n"


def formula_safe(values: pd.Series) -> pd.Series:
    """Text a spreadsheet would run as a formula, with a leading apostrophe; missing values become empty text."""
    text = values.astype(object).where(values.notna(), "").astype(str)
    return text.where(~text.str.match(_FORMULA), "'" + text)


def _formula_safe_text(text: str) -> str:
    return "'" + text if _FORMULA.match(text) else text


def _zip_text(values: pd.Series) -> pd.Series:
    """ZIP codes as text: numbers (read from a DBF or a spreadsheet) get their leading zeros back, no ``.0``."""
    if not pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
        return values
    whole = values.round().astype("Int64")
    short = whole.astype("string").str.zfill(5)
    text = short.where(whole.abs() <= 99999, whole.astype("string").str.zfill(9))  # ZIP+4 as nine digits
    return text.astype(object).where(whole.notna(), "")


def zip_text(name: str, values: pd.Series) -> pd.Series:
    """A column as written to a file or a database: a ZIP-code column given as numbers becomes text with its leading
    zeros (``_zip_text``; missing stays missing), any other column is returned as it is."""
    if _ZIP_COLUMN.search(str(name)) and pd.api.types.is_numeric_dtype(values):
        return _zip_text(values).where(values.notna(), None).astype("str")
    return values


def output_format(path: str) -> str:
    """The driver for an output path, or a LayerError naming the formats sewerplan writes."""
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise LayerError(
            f"Cannot write {path}: give an output ending in .gpkg, .parquet (GeoParquet), .geojson or .csv."
        )
    return FORMATS[suffix]


def write_results(
    path: str,
    parcels: gpd.GeoDataFrame,
    measuring_lines: gpd.GeoDataFrame | None = None,
    buildings: gpd.GeoDataFrame | None = None,
    *,
    scratch: bool = False,
    name: str = RESULT_LAYER,
) -> list[str]:
    """Write results to ``path`` in the format its extension names; returns the layer names written.

    ``parcels`` may be any result frame (building results from ``sewerplan buildings``, too), written as the
    GeoPackage layer ``name``; a GeoPackage also gets the measuring lines, connection points and building results
    when given. ``scratch``: ``path`` is a GeoPackage nobody else sees, which the caller syncs and renames into place
    (a store's copy being written).
    """
    driver = output_format(path)
    folder_for(path)
    if driver == "CSV":
        write_csv(path, _plain_columns(with_connection_crs(parcels)), column_types=True)
        return [Path(path).stem]
    if driver == "GeoJSON":
        plain = _plain_columns(with_connection_crs(parcels))
        _write_whole(plain.to_crs(4326), path, driver="GeoJSON", layer_options={"RFC7946": "YES"})
        return [Path(path).stem]
    parquet = driver == "Parquet"
    layers = result_layers(parcels, measuring_lines, buildings, points_as_lines=parquet)
    if name != RESULT_LAYER:
        layers = {name: layers.pop(RESULT_LAYER), **layers}
    if parquet:
        # One layer per file: the parcel results at the path, the others beside it (results.measuring_lines...).
        first = next(iter(layers))
        targets = {n: path if n == first else parquet_sibling(path, n) for n in layers}

        def write(n: str) -> str:  # write_geoparquet makes the columns plain itself
            return write_geoparquet(targets[n], layers[n], line_ends=n == POINTS_LAYER)

        with ThreadPoolExecutor(2) as pool:
            list(pool.map(write, layers))
        return [Path(target).stem for target in targets.values()]
    return add_layers(path, layers, scratch=scratch)


# SQLite settings for a GeoPackage nobody can see yet: no rollback journal, no sync at every commit. A write that
# fails leaves only that file, which is deleted; the finished file is synced before it is renamed into place.
_UNSEEN_SQLITE = {"OGR_SQLITE_JOURNAL": "OFF", "OGR_SQLITE_SYNCHRONOUS": "OFF"}
# GDAL's settings are the process's: one GeoPackage write at a time while they are changed.
_GDAL_SETTINGS = threading.Lock()


@contextmanager
def _unseen_geopackage(path: str, mode: str):
    """Where to write the GeoPackage ``path``, and with which SQLite settings; the caller holds its writer lock.

    ``new``: a whole new file, written under a hidden name and renamed over ``path`` at the end (an old file
    stays whole until then; ``layers.atomic.written_whole``). ``scratch``: ``path`` is a copy nobody else sees,
    which the caller renames into place. Both are written without SQLite's journal. ``update``: layers added to an
    existing GeoPackage beside others, in place, with SQLite's journal.
    """
    if mode == "new":
        with written_whole(path, locked=True, sync=True) as where, _sqlite_settings(unseen=True):
            yield str(where)
    else:
        with _sqlite_settings(unseen=mode == "scratch"):
            yield path


@contextmanager
def _sqlite_settings(*, unseen: bool):
    """GDAL's SQLite settings for the block: without journal and per-commit sync for a file nobody sees yet."""
    with _GDAL_SETTINGS:
        before = {key: pyogrio.get_gdal_config_option(key) for key in _UNSEEN_SQLITE}
        if unseen:
            pyogrio.set_gdal_config_options(_UNSEEN_SQLITE)
        try:
            yield
        finally:
            pyogrio.set_gdal_config_options(before)


def result_layers(
    parcels: gpd.GeoDataFrame,
    measuring_lines: gpd.GeoDataFrame | None = None,
    buildings: gpd.GeoDataFrame | None = None,
    *,
    points_as_lines: bool = False,
) -> dict[str, gpd.GeoDataFrame]:
    """A run's result layers by name: parcel results, measuring lines, connection points (each line's end on the
    main) and building results, those given. Every store and output format writes these. ``points_as_lines``: the
    connection points are given as the measuring lines themselves, for a writer that takes each line's end
    (``write_geoparquet``'s ``line_ends``) without a point object made per row."""
    layers = {RESULT_LAYER: with_connection_crs(parcels)}
    if measuring_lines is not None:
        layers[LINES_LAYER] = measuring_lines
        layers[POINTS_LAYER] = (
            measuring_lines
            if points_as_lines
            else measuring_lines.set_geometry(shapely.get_point(measuring_lines.geometry.values, -1))
        )
    if buildings is not None:
        layers[BUILDINGS_LAYER] = buildings
    return layers


def with_connection_crs(parcels: gpd.GeoDataFrame) -> gpd.GeoDataFrame:
    """The results with ``connection_crs`` after ``connection_y``: the CRS the connection point's coordinates are in.

    ``connection_x``/``connection_y`` are in the measuring CRS (feet) whatever the file's geometry is in, and a
    GeoJSON's is in degrees: a user opening the file reads which CRS the numbers are in from the column beside them.
    Results read back from a store keep the CRS they were written with; the frame's own CRS (the measuring CRS the
    analysis ran in) names it otherwise.
    """
    if "connection_x" not in parcels.columns or parcels.crs is None:
        return parcels
    if "connection_crs" in parcels.columns and parcels["connection_crs"].notna().all():
        return parcels
    out = parcels.drop(columns="connection_crs", errors="ignore")
    at = list(out.columns).index("connection_y") + 1 if "connection_y" in out.columns else len(out.columns)
    out.insert(at, "connection_crs", crs_label(out.crs))  # EPSG:2260; a model's own coordinates by the CRS's name
    return out


def parquet_sibling(path: str, layer: str) -> str:
    """Where a GeoParquet output's further layer goes: ``results.parquet`` -> ``results.measuring_lines.parquet``."""
    p = Path(path)
    return str(p.with_name(f"{p.stem}.{layer}{p.suffix}"))


def write_report(path: str, report: gpd.GeoDataFrame) -> list[str]:
    """A network report: GeoJSON (RFC 7946), GeoPackage layer ``network_report``, GeoParquet or CSV (with x, y and
    ``crs``, the CRS they are in, as a results file names its connection point's in ``connection_crs``); returns the
    layers written, as ``write_results`` does."""
    driver = output_format(path)
    folder_for(path)
    if driver == "CSV":
        write_csv(
            path,
            report.assign(x=report.geometry.x, y=report.geometry.y, crs=crs_label(report.crs)),
            column_types=True,
        )
    elif driver == "Parquet":
        write_geoparquet(path, report)
    elif driver == "GeoJSON":
        _write_whole(report.to_crs(4326), path, driver="GeoJSON", layer_options={"RFC7946": "YES"})
    else:
        add_layers(path, {REPORT_LAYER: report})
        return [REPORT_LAYER]
    return [Path(path).stem]


def write_layers(
    path: str,
    layers: dict[str, gpd.GeoDataFrame],
    *,
    overwrite: bool = False,
    settings: dict[str, str] | None = None,
) -> None:
    """Write several layers to one new GeoPackage (the embedded store, or a sample town), replacing ``path`` whole;
    the caller holds its writer lock (``layers.store``'s ``write_layers``).

    The new file is written under a hidden name and renamed over the old one: a write stopped halfway leaves
    the old file as it was. ``settings`` are store settings written with the layers (``write_settings``), in the
    same file before it is renamed: the measuring CRS the layers are in appears with them or not at all.
    """
    target = Path(path)
    if target.exists() and not overwrite:
        raise LayerError(f"{path} exists: replace it only when asked to (overwrite).", fix=Fix("overwrite"))
    folder_for(target)
    with _unseen_geopackage(path, "new") as where:  # the old file stays whole until the new one replaces it
        for name, frame in layers.items():
            _write_gpkg(_plain_columns(frame), where, name)
        style_geopackage_layers(where)
        if settings:
            write_settings(where, settings)


def write_settings(path: str | Path, values: dict[str, str]) -> None:
    """Keep ``values`` in the GeoPackage's settings table (``SETTINGS_TABLE``: key, value), replacing those of the
    same keys; the caller holds the file's writer lock or writes a copy nobody else sees."""
    with closing(sqlite3.connect(str(path))) as con, con:
        con.execute(f"CREATE TABLE IF NOT EXISTS {SETTINGS_TABLE} (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        con.executemany(f"INSERT OR REPLACE INTO {SETTINGS_TABLE} (key, value) VALUES (?, ?)", values.items())


def add_layers(
    path: str,
    layers: dict[str, gpd.GeoDataFrame],
    *,
    scratch: bool = False,
    geometry_types: dict[str, str] | None = None,
) -> list[str]:
    """Write layers into a GeoPackage beside its others, replacing those of the same names, and style them: every
    GeoPackage sewerplan writes layers into (a run's results, a network report, a plan, building results).

    It is written under the GeoPackage's writer lock, the store's (``layers.atomic.writer_lock``): a GeoPackage
    given as an output may be a store, or become one, so no run, upload or other command writes it at the same
    moment (``StoreBusyError`` says who does), and the hidden copies killed writers left beside it are cleared.
    ``scratch``: ``path`` is a store's copy nobody else sees, which the store, holding the lock, syncs and renames
    into place. ``geometry_types`` (layer name -> ``Point``, ``MultiLineString`` ...) is the type an empty layer is
    declared with: GDAL declares one without features ``GEOMETRY``, which QGIS opens as a layer of no known kind,
    its point or line style unused.
    """
    if scratch:
        _write_geopackage(path, layers, "scratch", geometry_types)
    else:
        with writer_lock(path, what="writing layers"):
            _write_geopackage(path, layers, "update" if Path(path).exists() else "new", geometry_types)
    return list(layers)


def _write_geopackage(
    path: str, layers: dict[str, gpd.GeoDataFrame], mode: str, geometry_types: dict[str, str] | None = None
) -> None:
    with _unseen_geopackage(path, mode) as target:
        for name, frame in layers.items():
            kind = (geometry_types or {}).get(name) if len(frame) == 0 else None
            _write_gpkg(_plain_columns(frame), target, name, geometry_type=kind)
        style_geopackage_layers(target)


# GeoPackage 1.2, not GDAL 3.11's default 1.4: nothing sewerplan writes needs 1.3 or 1.4, and the GDAL of the QGIS
# long-term releases in Debian 12 and Ubuntu 22.04 (3.6, 3.4) warns on every 1.4 file that it "may only be partially
# supported". Applies when a file is created; layers added to an existing file keep its version.
GEOPACKAGE_VERSION = {"VERSION": "1.2"}


def _write_gpkg(frame: gpd.GeoDataFrame, path: str, layer: str, *, geometry_type: str | None = None) -> None:
    """One GeoPackage layer through pyogrio's Arrow path (``geometry_type``: the type declared, else GDAL's guess).

    GDAL inserts the rows in one transaction and builds the layer's R-tree once after the last row, in bulk
    (in a scratch database whose R-tree pages it then copies in): no index is kept up to date row by row.
    """
    kwargs = {"geometry_type": geometry_type} if geometry_type else {}
    _write(frame, path, layer=layer, driver="GPKG", dataset_options=GEOPACKAGE_VERSION, **kwargs)


def _write(frame: gpd.GeoDataFrame, path: str, **kwargs) -> None:
    try:
        pyogrio.write_dataframe(frame, path, use_arrow=True, **kwargs)
    except Exception as exc:
        raise LayerError(f"Cannot write {path}: {exc}") from exc


def _write_whole(frame: gpd.GeoDataFrame, path: str, **kwargs) -> None:
    """A file of one layer (GeoJSON), written under a hidden name and renamed over ``path`` once whole
    (``layers.atomic.written_whole``): a write stopped halfway leaves the file that was there before, or none.

    The layer is named after ``path`` (a GeoJSON's ``name`` member, the layer QGIS shows and ``--data`` reads),
    not after the hidden name it was written under, which GDAL would take."""
    target = Path(path)
    kwargs.setdefault("layer", target.stem)
    try:
        with written_whole(target) as where:
            try:
                pyogrio.write_dataframe(frame, str(where), use_arrow=True, **kwargs)
            except Exception as exc:
                raise LayerError(f"Cannot write {target}: {exc}") from exc  # ``written_whole`` names ``target``
    except LayerError:  # the write's own, or StoreBusyError: another writer has the file
        raise
    except OSError as exc:  # the lock beside it, or the rename into place
        raise LayerError(f"Cannot write {target}: {exc.strerror or exc}.") from exc


def _plain_columns(frame: gpd.GeoDataFrame) -> gpd.GeoDataFrame:
    """Columns every driver can store: object columns of mixed values become text, of booleans nullable bool,
    ZIP-code columns given as numbers text with their leading zeros (``_zip_text``), the deadline a date and living
    units whole numbers (``stored_column``: QGIS saw the deadline as text and the units as a Real).

    ``infer_dtype`` reads each object column once in C; no Python function runs per value except for the rare
    mixed column, which is turned to text. A tax roll read from a DBF or a spreadsheet holds ZIP codes as numbers:
    only the CSV wrote them as text, and QGIS showed the GeoPackage's, GeoJSON's and GeoParquet's as 1234 and
    12203.0 (a mailing list made from them, wrong).
    """
    out = frame.copy()
    for name in out.columns:
        if name == out.geometry.name:
            continue
        column = out[name]
        if (typed := stored_column(name, column)) is not column:  # ZIP codes given as numbers, dates, counts
            out[name] = typed
            continue
        if out[name].dtype != object:
            continue
        kind = pd.api.types.infer_dtype(out[name], skipna=True)
        if kind == "boolean":
            out[name] = out[name].astype("boolean")
        elif kind in ("string", "empty"):
            out[name] = out[name].astype("str")
        else:
            out[name] = out[name].map(lambda v: None if v is None or v is pd.NA else str(v)).astype("str")
    return out


# The ``feature`` property of a plan's export: which part of the plan each feature is. Read back as a proposed main
# (``layers.read.read_proposed``), the export gives its proposed main alone, the rest being worked out again.
PROPOSED_MAIN = "proposed main"
CONNECTING_MAIN = "connecting main"
MAIN_CROSSING = "main crossing"
EASEMENT_NEEDED = "easement needed"
BUILDING_CROSSED = "building crossed"
# The part of the drawn main not laid (``analysis.plans._laid_from_manhole``): drawn past the manhole the main joins,
# or over an existing main to it. Read back, it is joined to the proposed main again, so the plan is the one drawn.
NOT_LAID = "not laid"
NOT_LAID_FIELDS = {"at_manhole": str, "along": str, "direction": str, "length_ft": float, "reason": str}
# The columns of a plan's crossings and easements as exported (``analysis.plan_route``'s rows; x, y are the point).
CROSSING_FIELDS = {
    "main_id": str,
    "sewer_type": str,
    "status": str,
    "described": str,  # the type and status in the mains layer's own words ("Storm Drain, Existing"): the codes' source
    "kind": str,
    "station_ft": float,
    "length_ft": float,
}
EASEMENT_FIELDS = {
    "parcel_id": str,
    "owner_name": str,
    "site_address": str,
    "length_ft": float,
    "from_station_ft": float,
    "to_station_ft": float,
}
BUILDING_CROSSED_FIELDS = {
    "building_id": str,
    "parcel_id": str,
    "length_ft": float,
    "from_station_ft": float,
    "to_station_ft": float,
}
# The type each plan layer is declared with when it has no features (a plan crossing no main).
PLAN_GEOMETRY_TYPES = {
    "not_laid": "LineString",
    "proposed_manholes": "Point",
    "newly_mandated": "MultiPolygon",
    "benefiting_parcels": "MultiPolygon",
    "main_crossings": "Point",
    "easements_needed": "MultiLineString",
    "buildings_crossed": "MultiLineString",
}


def check_plan_path(path: str) -> str:
    """The driver a plan's export is written with, or a LayerError: a plan is a .gpkg, .parquet or .geojson.

    Checked before a plan is evaluated: ``--out plan.csv --save`` saved the scenario, then refused the export (after
    "give an output ending in ... or .csv"), and the same command again was refused as saved already.
    """
    driver = FORMATS.get(Path(path).suffix.lower())
    if driver not in ("GPKG", "Parquet", "GeoJSON"):
        raise LayerError(f"Write a plan as .gpkg, .parquet or .geojson, not {Path(path).name}.")
    return driver


def write_plan(path: str, plan: dict, line, parcels: gpd.GeoDataFrame, *, crs) -> list[str]:
    """A planned extension (the document ``sewerplan plan --json`` prints) with its geometry.

    GeoPackage layers: ``proposed_main`` (the drawn main, and the connecting main when one is needed),
    ``not_laid`` (each part drawn but not laid, past the manhole the main joins or over an existing main to it, with
    that manhole, the main drawn over, the direction, feet and why; none when all was laid: read back as a proposed
    main, it is joined to the main again, and the plan says again what is not laid),
    ``proposed_manholes`` (new and existing, with why each is there), ``newly_mandated`` (the parcels newly required
    to connect), ``benefiting_parcels`` (those and the vacant lots that benefit, with each one's share of the
    cost by every method), ``main_crossings`` (a point where the main meets an existing main away from a manhole:
    the main's ID, kind, station) and ``easements_needed`` (the main's line across each private parcel outside the
    rights-of-way: parcel, owner, address, feet, stations; the line a surveyor describes the easement by, the lot
    itself being in the town's tax map), ``buildings_crossed`` (the main's line through each building's footprint:
    building, the parcel it stands on, feet, stations; not written where the town gave no footprints, as whether
    the main passes under a building is then not known). ``parcels`` is any frame holding those parcels (the
    town's). GeoJSON (RFC 7946): one collection of all of them, with a ``feature`` property saying which. A
    scenario saved before plans found crossings and easements has neither layer: none would say "none found", which
    is not known.
    """
    attrs = {
        "name": plan.get("name"),
        "diameter_in": plan["diameter_in"],
        "material": plan.get("material"),
        "length_ft": plan.get("drawn_length_ft", plan["length_ft"]),
    }
    pieces, kinds = [line], [PROPOSED_MAIN]
    run = plan.get("connecting_main")
    if run:
        pieces.append(shapely.LineString(run["coords"]))
        kinds.append(CONNECTING_MAIN)
    main = gpd.GeoDataFrame(
        [
            attrs | ({"length_ft": run["length_ft"], "to_manhole": run["to_manhole"]} if k == CONNECTING_MAIN else {})
            for k in kinds
        ],
        geometry=pieces,
        crs=crs,
    ).assign(feature=kinds)
    holes = plan["manholes"]
    holes = gpd.GeoDataFrame(
        holes, geometry=gpd.points_from_xy([m["x"] for m in holes], [m["y"] for m in holes]), crs=crs
    )
    holes = holes.drop(columns=["x", "y"]).assign(feature="proposed manhole")
    rows = pd.DataFrame(
        plan.get("parcels")
        or [{"parcel_id": p, "category": "newly mandated", "benefits": True} for p in plan["newly_mandated"]],
        columns=["parcel_id", "category", "benefits"] if not (plan.get("parcels") or plan["newly_mandated"]) else None,
    )
    geoms = parcels.drop_duplicates("parcel_id").set_index(parcels["parcel_id"].drop_duplicates().astype(str)).geometry
    rows = rows[rows["parcel_id"].astype(str).isin(geoms.index)]
    lots = gpd.GeoDataFrame(rows, geometry=geoms.loc[rows["parcel_id"].astype(str)].to_numpy(), crs=crs)
    newly = lots[lots["category"] == "newly mandated"].assign(feature="newly mandated")
    benefiting = lots[lots["benefits"].astype(bool)].assign(feature="benefiting parcel")
    layers = {
        "proposed_main": main,
        # always written, empty when all was laid: an export written over one that had a part not laid keeps none
        "not_laid": _not_laid_layer(plan, crs),
        "proposed_manholes": holes,
        "newly_mandated": newly,
        "benefiting_parcels": benefiting,
        **_route_layers(plan, crs),
    }
    driver = check_plan_path(path)
    folder_for(path)
    if driver == "GPKG":
        return add_layers(path, layers, geometry_types=PLAN_GEOMETRY_TYPES)
    if driver == "Parquet":
        for i, (name, frame) in enumerate(layers.items()):
            write_geoparquet(path if i == 0 else parquet_sibling(path, name), frame)
        return [Path(path).stem, *(Path(parquet_sibling(path, name)).stem for name in list(layers)[1:])]
    if driver == "GeoJSON":
        every = gpd.GeoDataFrame(
            pd.concat(
                [
                    main,
                    *([layers["not_laid"]] if len(layers["not_laid"]) else []),
                    holes,
                    newly,
                    lots[~lots["category"].eq("newly mandated") & lots["benefits"].astype(bool)].assign(
                        feature="benefiting vacant lot"
                    ),
                    *(frame for name, frame in layers.items() if name in ROUTE_LAYERS),
                ],
                ignore_index=True,
            ),
            crs=crs,
        )
        # Every digit: at RFC 7946's default 7 decimals (about a centimetre) the plan read back was 0.01 ft shorter
        # and cost $2.36 less, not the plan that was written.
        options = {"RFC7946": "YES", "COORDINATE_PRECISION": "15"}
        _write_whole(_plain_columns(every).to_crs(4326), path, driver="GeoJSON", layer_options=options)
        return [Path(path).stem]
    raise AssertionError(driver)  # check_plan_path allows no other


def _not_laid_layer(plan: dict, crs) -> gpd.GeoDataFrame:
    """The parts of the drawn main not laid (``analysis.plans.not_laid_parts``), each its own line: the manhole it
    meets the main as laid at, the existing main it was drawn over (else empty), its direction from that manhole,
    its feet and why, as the plan's summary says it. One row a part (a main drawn over the sewer at both ends has
    two, one at each end); none when all of the drawn main was laid."""
    from analysis.plans import not_laid_parts
    from layers.board import not_laid_sentence

    parts = not_laid_parts(plan)
    rows = [
        {
            "at_manhole": beyond["beyond_manhole"],
            "along": beyond.get("along"),
            "direction": beyond["direction"],
            "length_ft": beyond["length_ft"],
            "reason": not_laid_sentence(beyond),
        }
        for beyond in parts
    ]
    return gpd.GeoDataFrame(
        pd.DataFrame(rows, columns=list(NOT_LAID_FIELDS)).astype(NOT_LAID_FIELDS),
        geometry=gpd.GeoSeries([shapely.LineString(beyond["coords"]) for beyond in parts], crs=crs),
        crs=crs,
    ).assign(feature=NOT_LAID)


ROUTE_LAYERS = ("main_crossings", "easements_needed", "buildings_crossed")


def _route_layers(plan: dict, crs) -> dict[str, gpd.GeoDataFrame]:
    """A plan's ``main_crossings`` (points), ``easements_needed`` (the main's lines across each private parcel) and
    ``buildings_crossed`` (the main's lines through each building's footprint), each with its ``feature``; none for a
    plan saved before they were found, nor buildings crossed where the town gave no footprints (not known is not
    none)."""
    layers = {}
    if "main_crossings" in plan:
        rows = pd.DataFrame(plan["main_crossings"] or [], columns=[*CROSSING_FIELDS, "x", "y"])
        said = rows["described"].astype(object)
        rows["described"] = said.where(said.notna(), "")  # a plan saved before the words were kept: none, not "nan"
        layers["main_crossings"] = gpd.GeoDataFrame(
            rows[list(CROSSING_FIELDS)].astype(CROSSING_FIELDS),
            geometry=gpd.points_from_xy(rows["x"].astype(float), rows["y"].astype(float)),
            crs=crs,
        ).assign(feature=MAIN_CROSSING)
    if "easements" in plan:
        rows = pd.DataFrame(plan["easements"] or [], columns=[*EASEMENT_FIELDS, "lines"])
        lines = [
            shapely.MultiLineString(found) if isinstance(found, list) and found else None for found in rows["lines"]
        ]
        layers["easements_needed"] = gpd.GeoDataFrame(
            rows[list(EASEMENT_FIELDS)].astype(EASEMENT_FIELDS),
            geometry=gpd.GeoSeries(lines, crs=crs),
            crs=crs,
        ).assign(feature=EASEMENT_NEEDED)
    if plan.get("buildings_crossed") is not None:
        rows = pd.DataFrame(plan["buildings_crossed"], columns=[*BUILDING_CROSSED_FIELDS, "lines"])
        # a building on no parcel: empty, not "None"
        rows["parcel_id"] = rows["parcel_id"].astype(object).where(rows["parcel_id"].notna(), "")
        lines = [shapely.MultiLineString(found) if found else None for found in rows["lines"]]
        layers["buildings_crossed"] = gpd.GeoDataFrame(
            rows[list(BUILDING_CROSSED_FIELDS)].astype(BUILDING_CROSSED_FIELDS),
            geometry=gpd.GeoSeries(lines, crs=crs),
            crs=crs,
        ).assign(feature=BUILDING_CROSSED)
    return layers


def write_geoparquet(
    path: str | Path, frame: gpd.GeoDataFrame, *, crs=None, row_group_size: int = 65_536, line_ends: bool = False
) -> str:
    """Write ``frame`` as one GeoParquet file (1.1, WKB, with a bbox covering column), atomically.

    The file appears complete or not at all: it is written beside its final name and renamed into place, so a
    run stopped halfway never leaves a partial file that a reader or a resumed batch would take for a result.
    ``crs`` reprojects first. The bbox column lets readers skip row groups outside an area of interest.
    ``line_ends``: ``frame``'s geometries are lines, and each row is written as the point at its line's end (the
    connection points, from the measuring lines), byte for byte as those points would be, without a point object
    made per row.
    """
    target = Path(path)
    folder_for(target)
    out = _plain_columns(frame)
    if crs is not None and out.crs is not None and not out.crs.equals(crs):
        out = out.to_crs(crs)
    try:
        with written_whole(target) as tmp:  # under the file's writer lock, which clears what killed writers left
            schema, batches = _geoparquet_batches(out, row_group_size, line_ends=line_ends)
            with (
                pq.ParquetWriter(tmp, schema, use_dictionary=_few_values(out, row_group_size)) as writer,
                ThreadPoolExecutor(1) as pool,
            ):
                # While Arrow compresses and writes one row group (without Python's lock), this thread encodes the
                # next one's geometries (with it): the two overlap instead of following each other.
                written = None
                for batch in batches:
                    if written is not None:
                        written.result()
                    written = pool.submit(writer.write_table, batch, row_group_size=row_group_size)
                if written is not None:
                    written.result()
    except StoreBusyError:
        raise
    except Exception as exc:
        raise LayerError(f"Cannot write {target}: {exc}") from exc
    return str(target)


def _geoparquet_batches(
    frame: gpd.GeoDataFrame, rows: int, *, line_ends: bool = False
) -> tuple[pa.Schema, Iterator[pa.Table]]:
    """The schema of ``frame``'s GeoParquet 1.1 file and its rows, ``rows`` at a time (a row group each).

    The same columns, schema and metadata GeoPandas's ``to_parquet(schema_version="1.1.0",
    write_covering_bbox=True)`` writes; the geometries' bounds are computed once, for the ``bbox`` covering column
    and the file's extent both, and the geometries are encoded by ``wkb_array`` one batch at a time, as the batches
    are taken.
    """
    name = frame.geometry.name
    if "bbox" in frame.columns:
        raise LayerError("a column named 'bbox' would clash with the GeoParquet bounding-box column; rename it")
    geoms = np.asarray(frame.geometry.values)
    ends = None
    if line_ends:  # x, y of each line's last vertex: the points written (as points made of them, else)
        plain = (shapely.get_type_id(geoms) == shapely.GeometryType.LINESTRING) & ~shapely.has_z(geoms)
        if (plain | shapely.is_missing(geoms)).all():
            ends = _line_ends(geoms)
        else:
            geoms = shapely.get_point(geoms, -1)
    attributes = pd.DataFrame(frame, copy=False).assign(**{name: None})  # an Arrow null column, replaced below
    table = pa.Table.from_pandas(attributes, preserve_index=False)
    at = table.schema.get_field_index(name)
    crs = frame.crs.to_json_dict() if frame.crs is not None else None
    field = pa.field(
        name,
        pa.binary(),
        metadata={
            "ARROW:extension:name": "geoarrow.wkb",
            "ARROW:extension:metadata": json.dumps({"crs": crs} if crs else {}),
        },
    )
    bounds = shapely.bounds(geoms) if ends is None else np.hstack([ends, ends])
    bbox = pa.StructArray.from_arrays(
        [pa.array(bounds[:, k], from_pandas=True) for k in range(4)],  # null where there is no geometry
        names=["xmin", "ymin", "xmax", "ymax"],
    )
    types = _geometry_types(geoms) if ends is None else ["Point"] * bool(np.isfinite(ends).all(axis=1).any())
    column = {"encoding": "WKB", "crs": _without_member_ids(crs), "geometry_types": types}
    finite = np.isfinite(bounds).all(axis=1)  # missing and empty geometries have no extent
    if finite.any():
        column["bbox"] = [float(v) for v in (*bounds[finite, :2].min(axis=0), *bounds[finite, 2:].max(axis=0))]
    column["covering"] = {"bbox": {k: ["bbox", k] for k in ("xmin", "ymin", "xmax", "ymax")}}
    geo = {"primary_column": name, "columns": {name: column}, "version": "1.1.0", "creator": {"library": "sewerplan"}}
    metadata = {**(table.schema.metadata or {}), b"geo": json.dumps(geo).encode()}
    if frame.attrs:
        metadata[b"PANDAS_ATTRS"] = json.dumps(frame.attrs).encode()
    schema = table.schema.set(at, field).append(pa.field("bbox", bbox.type)).with_metadata(metadata)

    def batches() -> Iterator[pa.Table]:
        for start in range(0, max(len(geoms), 1), rows):  # no rows: one empty row group, as Arrow writes
            some = slice(start, start + rows)
            wkb = wkb_array(geoms[some]) if ends is None else points_wkb(ends[some])
            part = table.slice(start, rows).set_column(at, field, wkb)
            yield part.append_column("bbox", bbox.slice(start, rows)).replace_schema_metadata(metadata)

    return schema, batches()


def _line_ends(lines: np.ndarray) -> np.ndarray:
    """x, y of each line's last vertex (NaN where a line is missing or empty), from one pass over the coordinates."""
    ends = np.full((len(lines), 2), np.nan)
    counts = shapely.get_num_coordinates(lines)
    has = counts > 0
    ends[has] = shapely.get_coordinates(lines[has])[np.cumsum(counts[has]) - 1]
    return ends


def _geometry_types(geoms: np.ndarray) -> list[str]:
    """GeoParquet's ``geometry_types``: the distinct types present ("Polygon", "Point Z" ...), sorted."""
    kind = shapely.get_type_id(geoms)
    present = kind >= 0
    found = distinct(kind[present] * 2 + shapely.has_z(geoms[present]))  # type and Z, one number each
    return sorted(_TYPE_NAMES[k // 2] + (" Z" if k % 2 else "") for k in found)


def _without_member_ids(crs):
    """A PROJJSON CRS without the IDs of its datum ensemble's members, which older PROJ versions do not know
    (as GDAL and GeoPandas write GeoParquet; opengeospatial/geoparquet discussion 110)."""
    if not isinstance(crs, dict):
        return crs
    out = {}
    for key, value in crs.items():
        if key == "members" and isinstance(value, list):
            value = [{k: v for k, v in member.items() if k != "id"} for member in value]
        out[key] = _without_member_ids(value)
    return out


# GeoParquet's name of each of shapely's geometry types (``shapely.get_type_id``).
_TYPE_NAMES = {
    int(shapely.GeometryType.POINT): "Point",
    int(shapely.GeometryType.LINESTRING): "LineString",
    int(shapely.GeometryType.LINEARRING): "LinearRing",
    int(shapely.GeometryType.POLYGON): "Polygon",
    int(shapely.GeometryType.MULTIPOINT): "MultiPoint",
    int(shapely.GeometryType.MULTILINESTRING): "MultiLineString",
    int(shapely.GeometryType.MULTIPOLYGON): "MultiPolygon",
    int(shapely.GeometryType.GEOMETRYCOLLECTION): "GeometryCollection",
}


def _few_values(frame: gpd.GeoDataFrame, sample: int) -> list[str]:
    """The columns worth a Parquet dictionary: fewer distinct values than a tenth of the rows, on the first rows.

    Dictionary-encoding a column of distinct sentences or IDs costs time and saves nothing; statuses, rules,
    sections, towns and classes compress several-fold with it.
    """
    head = frame.drop(columns=frame.geometry.name).iloc[:sample]
    if not len(head):
        return []
    distinct = head.nunique(dropna=True)
    return [str(name) for name, n in distinct.items() if n <= max(1, len(head) // 10)]


def style_geopackage_layers(path: str | Path) -> list[str]:
    """Give every layer of a GeoPackage sewerplan wrote its QGIS style (``layer_styles``) and column meanings.

    Called after each GeoPackage is written, so QGIS opens any of them styled: ``parcel_results`` by status in
    the web map's colours, mains by diameter, measuring lines dashed, labels off (``layers.qgis_styles``).
    """
    from layers.qgis_styles import style_geopackage

    try:
        return style_geopackage(path)
    except Exception as exc:  # sqlite3.Error, OSError: the layers are written; say why the styles are not
        raise LayerError(f"{path} is written, but its QGIS styles cannot be added: {exc}") from exc
