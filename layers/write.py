"""Write analysis results: GeoPackage (all layers), GeoJSON (RFC 7946: EPSG:4326, lon/lat) or CSV.

The format follows the output's extension. A GeoPackage gets the parcel results, the measuring lines and the
connection points as three layers, in the measuring CRS; GeoJSON and CSV get the parcel results only (CSV
without geometry, with the connection point's coordinates). Existing layers of the same name are replaced;
other layers of a GeoPackage (the input layers of the embedded store) are kept.

Every CSV sewerplan writes (results, network reports, the notices mailing list) goes through ``write_csv``: a
spreadsheet opens it without running anything in it (a text cell starting with ``=``, ``+``, ``-``, ``@``, a tab or
a carriage return gets a leading apostrophe), every field is quoted (a carriage return inside a cell never splits
the row), it is UTF-8 with a byte-order mark (so "§" and MÜLLER-ŽÁK show right), and ZIP codes stay text.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import geopandas as gpd
import pandas as pd
import pyogrio
import shapely

from layers.errors import LayerError

RESULT_LAYER = "parcel_results"
BUILDINGS_LAYER = "building_results"
LINES_LAYER = "measuring_lines"
POINTS_LAYER = "connection_points"
FORMATS = {".gpkg": "GPKG", ".geojson": "GeoJSON", ".json": "GeoJSON", ".csv": "CSV"}
# A cell a spreadsheet would run as a formula (OWASP's list: = + - @ tab carriage-return first).
_FORMULA = re.compile(r"^[=+\-@\t\r]")
# Columns that hold ZIP codes: written as text, never as a number (01234, not 1234 or 1234.0).
_ZIP_COLUMN = re.compile(r"(^|_)(zip|zip5|zipcode|zip_code|postal_code|postcode)($|_)", re.IGNORECASE)


def write_csv(path: str | Path, frame: pd.DataFrame, *, bom: bool = True) -> str:
    """Write a table as a CSV that is safe to open in a spreadsheet; returns the path.

    Text cells that start like a formula get a leading apostrophe, every field is quoted, ZIP-code columns are
    text, and the file is UTF-8 with a byte-order mark unless ``bom`` is False. A geometry column, if any, is
    dropped (CSV output carries attributes only). Numbers stay numbers.
    """
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    table = pd.DataFrame(frame)
    if isinstance(frame, gpd.GeoDataFrame) and frame.geometry.name in table.columns:
        table = table.drop(columns=frame.geometry.name)
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
    out.to_csv(path, index=False, encoding=encoding, quoting=csv.QUOTE_ALL, lineterminator="\r\n")
    return str(path)


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


def output_format(path: str) -> str:
    """The driver for an output path, or a LayerError naming the formats sewerplan writes."""
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise LayerError(f"Cannot write {path}: give an output ending in .gpkg, .geojson or .csv.")
    return FORMATS[suffix]


def write_results(
    path: str,
    parcels: gpd.GeoDataFrame,
    measuring_lines: gpd.GeoDataFrame | None = None,
    buildings: gpd.GeoDataFrame | None = None,
) -> list[str]:
    """Write results to ``path`` in the format its extension names; returns the layer names written.

    ``parcels`` may be any result frame (building results from ``sewerplan buildings``, too); a GeoPackage also
    gets the measuring lines, connection points and building results when given.
    """
    driver = output_format(path)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    frame = _plain_columns(parcels)
    if driver == "CSV":
        write_csv(path, frame)
        return [Path(path).stem]
    if driver == "GeoJSON":
        _write(frame.to_crs(4326), path, driver="GeoJSON", layer_options={"RFC7946": "YES"})
        return [Path(path).stem]
    _write(frame, path, layer=RESULT_LAYER, driver="GPKG")
    written = [RESULT_LAYER]
    if measuring_lines is not None:
        _write(_plain_columns(measuring_lines), path, layer=LINES_LAYER, driver="GPKG")
        points = measuring_lines.set_geometry(shapely.get_point(measuring_lines.geometry.values, -1))
        _write(_plain_columns(points), path, layer=POINTS_LAYER, driver="GPKG")
        written += [LINES_LAYER, POINTS_LAYER]
    if buildings is not None:
        _write(_plain_columns(buildings), path, layer=BUILDINGS_LAYER, driver="GPKG")
        written.append(BUILDINGS_LAYER)
    return written


def write_report(path: str, report: gpd.GeoDataFrame) -> None:
    """A network report: GeoJSON (RFC 7946), GeoPackage layer ``network_report`` or CSV (with x, y)."""
    driver = output_format(path)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    if driver == "CSV":
        write_csv(path, report.assign(x=report.geometry.x, y=report.geometry.y))
    elif driver == "GeoJSON":
        _write(report.to_crs(4326), path, driver="GeoJSON", layer_options={"RFC7946": "YES"})
    else:
        _write(report, path, layer="network_report", driver="GPKG")


def write_layers(path: str, layers: dict[str, gpd.GeoDataFrame], *, overwrite: bool = False) -> None:
    """Write several layers to one GeoPackage (the embedded store, or a sample town)."""
    target = Path(path)
    if target.exists():
        if not overwrite:
            raise LayerError(f"{path} exists; give --overwrite to replace it.")
        target.unlink()
    target.parent.mkdir(parents=True, exist_ok=True)
    for name, frame in layers.items():
        _write(_plain_columns(frame), path, layer=name, driver="GPKG")


def _write(frame: gpd.GeoDataFrame, path: str, **kwargs) -> None:
    try:
        pyogrio.write_dataframe(frame, path, use_arrow=True, **kwargs)
    except Exception as exc:
        raise LayerError(f"Cannot write {path}: {exc}") from exc


def _plain_columns(frame: gpd.GeoDataFrame) -> gpd.GeoDataFrame:
    """Columns every driver can store: object columns of mixed values become text, of booleans nullable bool.

    ``infer_dtype`` reads each object column once in C; no Python function runs per value except for the rare
    mixed column, which is turned to text.
    """
    out = frame.copy()
    for name in out.columns:
        if name == out.geometry.name or out[name].dtype != object:
            continue
        kind = pd.api.types.infer_dtype(out[name], skipna=True)
        if kind == "boolean":
            out[name] = out[name].astype("boolean")
        elif kind in ("string", "empty"):
            out[name] = out[name].astype("str")
        else:
            out[name] = out[name].map(lambda v: None if v is None or v is pd.NA else str(v)).astype("str")
    return out


def write_plan(path: str, line, manholes: list[dict], parcels: gpd.GeoDataFrame, *, crs, attrs: dict) -> list[str]:
    """A planned extension: the proposed main, its manholes and the newly mandated parcels.

    GeoPackage: three layers (``proposed_main``, ``proposed_manholes``, ``newly_mandated``); GeoJSON (RFC 7946):
    one collection of all three, with a ``feature`` property saying which.
    """
    main = gpd.GeoDataFrame([attrs], geometry=[line], crs=crs).assign(feature="proposed main")
    holes = gpd.GeoDataFrame(
        manholes, geometry=gpd.points_from_xy([m["x"] for m in manholes], [m["y"] for m in manholes]), crs=crs
    )
    holes = holes.drop(columns=["x", "y"]).assign(feature="proposed manhole")
    cols = [
        c for c in ("parcel_id", "owner_name", "site_address", "distance_ft", "units", "reason") if c in parcels.columns
    ]
    lots = gpd.GeoDataFrame(parcels[cols], geometry=parcels.geometry.values, crs=crs).assign(feature="newly mandated")
    driver = output_format(path)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    if driver == "GPKG":
        for name, frame in (("proposed_main", main), ("proposed_manholes", holes), ("newly_mandated", lots)):
            _write(_plain_columns(frame), path, layer=name, driver="GPKG")
        return ["proposed_main", "proposed_manholes", "newly_mandated"]
    if driver == "GeoJSON":
        every = gpd.GeoDataFrame(pd.concat([main, holes, lots], ignore_index=True), crs=crs)
        _write(_plain_columns(every).to_crs(4326), path, driver="GeoJSON", layer_options={"RFC7946": "YES"})
        return [Path(path).stem]
    raise LayerError(f"Write a plan as .gpkg or .geojson, not {path}.")
