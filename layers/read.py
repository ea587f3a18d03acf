"""Read input layers from files, folders, archives and PostGIS, and hand them over validated.

Sources: any OGR vector source pyogrio reads (GeoPackage, Shapefile plain or zipped, GeoJSON, File Geodatabase,
FlatGeobuf ...), read through Arrow; a folder or GeoPackage whose layers are found by name; and PostGIS tables
given as ``postgresql://user@host/db#schema.table`` (or a ``postgresql://`` URL whose tables are found by name).
"""

from __future__ import annotations

import ast
import io
import json
import re
import tomllib
import warnings
import zipfile
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyogrio
from pyproj import CRS

from analysis.errors import Fix
from layers.crs import check_layers_together, check_sizes, crs_label, miles_from_layers
from layers.errors import LayerError, LayerValidationError, Problem, quote_password, redact_url, split_fragment
from layers.heard import quiet
from layers.schema import SPECS
from layers.uploads import hidden_member, outside_archive
from layers.validate import ColumnMapping, check_streets_hold_no_lots, prepare_layer

# Names a layer or file may have, per kind, lower-case and without extension; first match wins.
LAYER_NAMES: dict[str, tuple[str, ...]] = {
    "parcels": ("parcels", "parcel", "tax_parcels", "taxparcels", "lots", "tax_lots"),
    "buildings": ("buildings", "building", "building_footprints", "footprints", "structures_bldg"),
    "streets": (
        "streets",
        "street",
        "roads",
        "road",
        "centerlines",
        "centrelines",
        "street_centerlines",
        "right_of_way",
        "rights_of_way",
        "row",
    ),
    "mains": (
        "mains",
        "main",
        "sewer_mains",
        "sewermains",
        "sewer_lines",
        "pipes",
        "gravity_mains",
        "sanitary_mains",
        "sewer_pipes",
    ),
    "manholes": ("manholes", "manhole", "sewer_manholes", "structures"),
    "outfalls": ("treatment_plants", "treatment_plant", "plants", "wwtp", "wwtf", "outfalls", "outfall"),
    "alleys": ("alleys", "alley", "driveways", "courts", "yards", "private_routes"),
    "laterals": ("laterals", "lateral", "services", "building_sewers", "sewer_services"),
    "service_areas": ("service_areas", "sewer_districts", "districts", "improvement_areas", "sewer_service_areas"),
    "curbs": ("curbs", "curb", "curblines", "curb_lines", "curbline", "edge_of_pavement", "pavement"),
    "sewer_rights_of_way": ("sewer_rights_of_way", "sewer_row", "sewer_easements"),
    "subdivisions": ("subdivisions", "subdivision", "proposed_subdivisions", "plats"),
}
VECTOR_SUFFIXES = (".gpkg", ".shp", ".geojson", ".json", ".fgb", ".zip", ".gdb", ".gml", ".kml", ".sqlite")
# Tables without map geometry that users hand over as data.
TABLE_SUFFIXES = {
    ".csv": "CSV",
    ".tsv": "TSV",
    ".txt": "text",
    ".xlsx": "Excel",
    ".xls": "Excel",
    ".ods": "spreadsheet",
}
PARQUET_SUFFIXES = (".parquet", ".geoparquet")
_BINARY, _LARGE_BINARY = pa.binary(), pa.large_binary()
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$")


@dataclass(frozen=True)
class LayerSource:
    """Where one layer comes from: a path (with an optional layer name inside it) or a PostGIS table.

    ``driver`` is set for an uploaded file: it is then opened by that driver only (``read_upload_source``).
    """

    kind: str
    path: str
    layer: str | None = None
    driver: str | None = None
    # Only the features whose column holds the value (one municipality of a county- or statewide layer).
    where: tuple[str, str | int] | None = None
    # Other layers of the same source named for the same kind (``tax_parcels`` beside ``lots``): the first name
    # of ``LAYER_NAMES`` is taken; ``sources_of`` refuses the choice unless that kind is given on its own.
    also: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        only = f" where {self.where[0]} = {self.where[1]!r}" if self.where else ""
        if self.path.startswith(("postgresql://", "postgres://")):
            return f"{self.kind} (PostGIS table {self.layer}{only})"
        name = Path(self.path).name
        return f"{self.kind} ({name}{':' + self.layer if self.layer else ''}{only})"


@dataclass
class Layers:
    """The validated input layers, all in the measuring CRS, and everything validation found."""

    parcels: gpd.GeoDataFrame | None
    mains: gpd.GeoDataFrame | None  # None only when checking an upload that has no mains yet
    buildings: gpd.GeoDataFrame | None = None
    streets: gpd.GeoDataFrame | None = None
    manholes: gpd.GeoDataFrame | None = None
    outfalls: gpd.GeoDataFrame | None = None
    alleys: gpd.GeoDataFrame | None = None
    laterals: gpd.GeoDataFrame | None = None
    service_areas: gpd.GeoDataFrame | None = None
    curbs: gpd.GeoDataFrame | None = None
    sewer_rights_of_way: gpd.GeoDataFrame | None = None
    subdivisions: gpd.GeoDataFrame | None = None
    problems: list[Problem] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)


def is_postgres(text: str) -> bool:
    return str(text).startswith(("postgresql://", "postgres://", "postgresql+psycopg://"))


def find_layers(data: str) -> dict[str, LayerSource]:
    """Find the layers of a GeoPackage, geodatabase, zip, folder or PostGIS database by their names.

    A source in which no layer has a name sewerplan knows is refused, naming what it does hold: a CSV table, an
    empty PostGIS database or a GeoPackage of other layers says so rather than yielding no layers.
    """
    if is_postgres(data):
        url, schema = split_fragment(data)
        tables = _postgis_tables(url)
        where = f"The PostGIS database {redact_url(url)}"
        if schema and "." not in schema:  # one schema (a store): its own tables only
            tables = [t for t in tables if (t.rpartition(".")[0] or "public") == schema]
            where = f"The schema {schema} of the PostGIS database {redact_url(url)}"
        found = _match(_tables_by_bare_name(tables), lambda name: LayerSource("", url, name))
        if not found:
            raise LayerError(_nothing_found(where, tables, "table"), fix=EACH_LAYER)
        return found
    path = Path(data)
    if not path.exists():
        raise LayerError(
            f"{data} does not exist: check its name and folder. The town's data is read from a GeoPackage, a File "
            "Geodatabase (.gdb), a zip or a folder of layers, a GeoParquet file, an EPA SWMM .inp model or a "
            "postgresql:// URL."
        )
    if path.suffix.lower() == ".inp":
        return {kind: LayerSource(kind, str(path), kind) for kind in ("mains", "manholes")}
    if path.is_file() and path.suffix.lower() in PARQUET_SUFFIXES:
        found = _match({path.stem.lower(): path}, lambda p: LayerSource("", str(p)))
        if not found:
            raise LayerError(_nothing_found(f"The GeoParquet file {path.name}", [path.stem], "layer"), fix=EACH_LAYER)
        return found
    if path.is_file() and path.suffix.lower() in TABLE_SUFFIXES:
        raise LayerError(
            f"{path.name} is a {TABLE_SUFFIXES[path.suffix.lower()]} table, which holds no map geometry: give a "
            "GeoPackage, File Geodatabase, zip, folder of shapefiles or GeoJSON files, or PostGIS database holding "
            "the layers (a list of connected parcel IDs is read as the connected-parcels list instead)."
        )
    if path.is_dir() and path.suffix.lower() != ".gdb":
        files = {
            p.stem.lower(): p
            for p in sorted(path.iterdir())
            if p.suffix.lower() in VECTOR_SUFFIXES + PARQUET_SUFFIXES or (p.is_dir() and p.suffix.lower() == ".gdb")
        }
        found = _match(files, lambda p: LayerSource("", str(p)))
        _shapeless_dbf(path, found)
        if not found:
            held = [p.name for p in sorted(path.iterdir()) if not p.name.startswith(".")]
            # "." (run from inside the folder) has no name of its own: say the folder's
            named = path.name or path.resolve().name or str(path.resolve())
            raise LayerError(_nothing_found(f"The folder {named}", held, "file"), fix=EACH_LAYER)
        return found
    if path.suffix.lower() == ".zip":
        _check_zip(str(path))
        inside = _zip_folder(path)
        if inside is not None:
            found = _match(inside, lambda member: LayerSource("", member))
            packages = [m for m in inside.values() if m.lower().endswith((".gpkg", ".sqlite"))]
            if not found and len(packages) == 1:  # one GeoPackage in the folder: its layers by name
                with quiet():
                    names = {str(n).lower(): str(n) for n, _ in pyogrio.list_layers(packages[0])}
                found = _match(names, lambda name: LayerSource("", packages[0], name))
            if not found:
                held = [Path(m).name for m in inside.values()]
                raise LayerError(_nothing_found(path.name, held, "file"), fix=EACH_LAYER)
            _tables_named_as_layers(path.name, [str(m) for m in _zip_files(path)], found, then="zip it")
            return found
    try:
        with quiet():  # what GDAL warns of here it says again when the layer is read, and is reported then
            listed = pyogrio.list_layers(str(path))
        names = {str(n).lower(): str(n) for n, _ in listed}
        tables = {str(n).lower() for n, geometry_type in listed if geometry_type is None}
    except Exception as exc:
        if path.suffix.lower() == ".zip":  # a whole zip, of no file GDAL reads: not damaged, but no map data
            raise LayerError(_no_layer_in_zip(path)) from exc
        raise LayerError(unreadable_message(path, exc)) from exc
    if path.suffix.lower() == ".zip" and _tables_only(path, names):  # GDAL reads a zip of CSV files as tables
        raise LayerError(_no_layer_in_zip(path))
    # A layer with shapes first: a GeoPackage's attribute table named mains was taken before its sewer_mains layer,
    # and the run refused for it. A table is still taken for a kind no layer with shapes is named for, so that the
    # check names it ("a table without geometry") rather than saying no such layer was found.
    shaped = _match({k: v for k, v in names.items() if k not in tables}, lambda name: LayerSource("", str(path), name))
    found = _match(names, lambda name: LayerSource("", str(path), name)) | shaped
    if not found:
        raise LayerError(_nothing_found(path.name, list(names.values()), "layer"), fix=EACH_LAYER)
    if path.suffix.lower() == ".zip":
        top = [m.name for m in _zip_files(path) if len(m.parts) == 1]
        _tables_named_as_layers(path.name, top, found, then="zip it")
    return found


def _shapeless_dbf(folder: Path, found: dict[str, LayerSource]) -> None:
    """Refuse a folder whose layer is a shapefile's .dbf without its .shp (``parcels.dbf`` alone): it was passed
    over, and the run said no parcels layer was found, beside the file that holds its attributes."""
    orphans = {
        p.stem.lower(): p
        for p in sorted(folder.iterdir())
        if p.suffix.lower() == ".dbf" and not any(p.with_suffix(ext).exists() for ext in (".shp", ".SHP", ".Shp"))
    }
    for kind, source in _match(orphans, lambda p: LayerSource("", str(p))).items():
        if kind not in found:
            dbf = Path(source.path)
            raise LayerError(
                f"{dbf.name} in {folder.name or folder.resolve().name} has no {dbf.stem}.shp beside it: it is the "
                f"{kind} shapefile's table of attributes without its shapes; copy all of the shapefile's files "
                "together (.shp, .shx, .dbf, .prj, .cpg)."
            )


# What a zip given to the command line is read for: its layers at the top level, or in one folder.
_READ_IN_A_ZIP = (
    "shapefiles (.shp with .shx, .dbf and .prj), GeoPackage (.gpkg), GeoJSON (.geojson) or FlatGeobuf (.fgb)"
)


def no_layer_in(what: str, held: list[str], *, verb: str) -> str:
    """Why a zip, an upload or a file added to one holds no layer sewerplan reads, in one sentence for the command line
    and the Data page alike: the files it holds, each kind with what to do instead (a CSV table has no shapes: make
    it a layer in QGIS), and what is read.

    ``what`` names it as its user knows it ("town.zip", "The upload", "The file"); ``held``, the names of the files
    in it (folders, hidden files and a Mac's ``__MACOSX`` copies left out by the caller); ``verb`` is how it was
    given: "zip" (``--data town.zip``), "upload" (the Data page) or "add" (a layer added to an upload).

    Examples
    --------
    >>> no_layer_in("town.zip", [], verb="zip")[:60]
    'town.zip holds no map layer sewerplan reads (it is empty). Z'
    """
    from layers.uploads import _ACCEPTED, _NOT_ACCEPTED

    names = [PurePosixPath(n.replace("\\", "/")).name for n in held]
    shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
    said = f"{what} holds no map layer sewerplan reads ({f'it holds {shown}' if names else 'it is empty'})."
    advice = []
    for suffix in dict.fromkeys(PurePosixPath(n).suffix.lower() for n in names):
        if verb == "zip" and suffix in VECTOR_SUFFIXES and suffix != ".zip":
            continue  # a KML, say: the command line reads it, where the Data page does not
        if suffix in _NOT_ACCEPTED and _NOT_ACCEPTED[suffix] not in advice:
            advice.append(_NOT_ACCEPTED[suffix])
    said += "".join(f" {a[0].upper()}{a[1:]}." for a in advice)
    if verb == "zip":
        return f"{said} Zip the layers themselves: sewerplan reads {_READ_IN_A_ZIP}."
    if verb == "add":
        return f"{said} Add the layer itself: sewerplan reads {_ACCEPTED}."
    return f"{said} Upload the layers themselves: sewerplan reads {_ACCEPTED}."


def _zip_files(path: Path) -> list[PurePosixPath]:
    """The files of a zip as its user knows them: no folders, no hidden files, no Mac ``__MACOSX`` copies."""
    with zipfile.ZipFile(path) as zf:
        members = [PurePosixPath(n.replace("\\", "/")) for n in zf.namelist() if not n.endswith(("/", "\\"))]
    return [m for m in members if not hidden_member(m)]


def _no_layer_in_zip(path: Path) -> str:
    """A zip GDAL finds no layer in, though it opens: what it holds, and what to zip instead. It was told GDAL's
    "not recognized" and to see in QGIS whether it was damaged (a zip of a README, of a CSV table, of another zip)."""
    return no_layer_in(path.name, [m.name for m in _zip_files(path)], verb="zip")


def _tables_only(path: Path, names: dict[str, str]) -> bool:
    """Whether GDAL opened the zip ``path`` as a folder of CSV tables (its layers ``names``), none with shapes: a zip
    of parcels.csv was read as a parcels "layer" of no geometry, and told "No mains layer found"."""
    if not names:
        return False
    with quiet():  # the first layer that is no CSV table ends it: a zip of shapefiles is opened once more only
        return all(_csv_table(pyogrio.read_info(str(path), layer=name)) for name in names.values())


def _csv_table(info: dict) -> bool:
    return info.get("driver") == "CSV" and info.get("geometry_type") is None


def _tables_named_as_layers(where: str, files: list[str], found: dict[str, LayerSource], *, then: str) -> None:
    """Refuse a zip that holds a table (a CSV, a spreadsheet) named as a layer it lacks: ``mains.csv`` beside
    ``parcels.shp`` was left out without a word, and the user, who gave it as the mains, was told only "No mains
    layer found". Not a folder: the tables a command writes (``buildings --out buildings.csv``) may be saved in
    the folder of the town's layers, where nobody meant them as a layer."""
    from layers.uploads import _NOT_ACCEPTED

    for name in files:
        suffix = PurePosixPath(name).suffix.lower()
        stem = PurePosixPath(name).stem.lower()
        kind = next((k for k, known in LAYER_NAMES.items() if stem in known), None)
        if suffix in TABLE_SUFFIXES and kind is not None and kind not in found:
            advice = _NOT_ACCEPTED.get(suffix) or f"a {TABLE_SUFFIXES[suffix]} table is not read, as it has no shapes"
            raise LayerError(
                f"{where} holds {PurePosixPath(name).name} where the {kind} layer was looked for, and {advice}. Then "
                f"{then} with the other layers, or give the {kind} layer on its own."
            )


def _zip_folder(path: Path) -> dict[str, str] | None:
    """The layers of a zip that holds them in a folder (what "Send to compressed folder" makes of a folder), as
    {file stem: GDAL path}; ``None`` when the zip's top level holds layers, which GDAL lists itself.

    GDAL opens only a zip's top level, and refused such a zip as "not recognized" (as if it were damaged). The
    folder nearest the top that holds layers is used; a Mac's ``__MACOSX`` copies are not layers. A zip with
    layers at its top and, in a folder, a kind of layer the top lacks (parcels at the top, ``network/mains.shp``)
    is refused: the folder's layers were left out without a word.
    """
    with zipfile.ZipFile(path) as zf:
        members = [PurePosixPath(n) for n in zf.namelist() if not n.endswith("/")]
    kinds = set(VECTOR_SUFFIXES) - {".zip"}
    layers = [m for m in members if m.suffix.lower() in kinds and not hidden_member(m)]
    if not layers:
        return None
    top_level = [m for m in layers if len(m.parts) == 1]
    if top_level:
        at_top = _match({m.stem.lower(): m for m in top_level}, lambda m: LayerSource("", str(m)))
        deeper = [m for m in layers if len(m.parts) > 1]
        left = [str(m) for m in deeper if any(m.stem.lower() in LAYER_NAMES[k] for k in set(LAYER_NAMES) - set(at_top))]
        if left:
            raise LayerError(
                f"{path.name} holds layers at its top ({', '.join(sorted(at_top)) or 'none sewerplan knows'}) and "
                f"more in a folder ({', '.join(sorted(left))}), which would be left out: zip all of the town's "
                "layers in one place."
            )
        return _top_level_files(path, top_level)
    top = min(len(m.parts) for m in layers)
    folders = sorted({m.parent for m in layers if len(m.parts) == top})
    if len(folders) > 1:
        raise LayerError(
            f"{path.name} holds layers in {len(folders)} folders ({', '.join(f'{f}/' for f in folders[:3])}); zip "
            "the one folder that holds the town's layers, or give each layer on its own."
        )
    return {m.stem.lower(): f"/vsizip/{path.resolve()}/{m}" for m in layers if m.parent == folders[0]}


def _top_level_files(path: Path, top_level: list[PurePosixPath]) -> dict[str, str] | None:
    """The layers at a zip's top level by their files' names, where GDAL would not list them so; None where it does
    (shapefiles only, or a GeoPackage: GDAL lists its layers).

    GDAL opens a zip's top level as one file or as a folder of shapefiles: two GeoJSON files were "no map layer
    sewerplan reads", a GeoJSON beside shapefiles was left out (told "No mains layer found"), and a zip of one
    parcels.geojson was a layer named after the zip."""
    suffixes = {m.suffix.lower() for m in top_level}
    if suffixes <= {".shp"} or suffixes & {".gpkg", ".sqlite"}:
        return None
    by_stem: dict[str, PurePosixPath] = {}
    for m in top_level:
        first = by_stem.setdefault(m.stem.lower(), m)
        if first is not m:
            raise LayerError(
                f"{path.name} holds two layers named {m.stem.lower()} ({first} and {m}), and sewerplan cannot tell "
                "which one is meant: zip only the one you mean, or rename the other."
            )
    return {stem: f"/vsizip/{path.resolve()}/{m}" for stem, m in by_stem.items()}


# The fix of a source whose layers are not named as sewerplan expects: each layer given on its own (its flag names it;
# a town's data never named by us was refused without it, a tester).
EACH_LAYER = Fix("layer", "parcels", "PATH")


def _nothing_found(what: str, held: list[str], noun: str) -> str:
    """One sentence: the source holds no layer known by name, what it does hold, and how to name them."""
    if not held:
        content = f"holds no {noun} at all"
        if noun == "table":
            content = "holds no table with a geometry column"
            fix = "load the layers into it first (for example with ogr2ogr), or read them from a GeoPackage or folder"
        else:
            fix = "give a source that holds the layers (parcels, mains, streets, buildings, manholes ...)"
    else:
        shown = ", ".join(held[:12]) + (f" and {len(held) - 12} more" if len(held) > 12 else "")
        content = f"holds no {noun} named as sewerplan expects (it holds {shown})"
        fix = (
            f"name the {noun}s parcels, mains, streets, buildings, manholes and treatment_plants, or point to "
            "each layer on its own"
        )
    return f"{what} {content}: {fix}."


def _tables_by_bare_name(tables: list[str]) -> dict[str, str]:
    """Qualified table names keyed by their bare lower-case name; a table in ``public`` wins a tie."""
    by_name: dict[str, list[str]] = {}
    for table in tables:
        by_name.setdefault(table.rpartition(".")[2].lower(), []).append(table)
    chosen = {}
    for bare, found in by_name.items():
        public = [t for t in found if "." not in t]
        if public or len(found) == 1:
            chosen[bare] = (public or found)[0]
        elif bare in {n for names in LAYER_NAMES.values() for n in names}:
            kind = next((k for k, names in LAYER_NAMES.items() if bare in names), bare)
            raise LayerError(
                f"Several PostGIS tables are named {bare}: {', '.join(sorted(found))}. Give the one to use as the "
                f"{kind} layer: postgresql://...#schema.table.",
                fix=Fix("layer", kind, "postgresql://...#schema.table"),
            )
    return chosen


def _match(available: dict, make) -> dict[str, LayerSource]:
    """Each kind's layer among ``available`` (name -> what ``make`` makes a source of): the first of its
    ``LAYER_NAMES`` there, with the others there kept as ``also``."""
    found: dict[str, LayerSource] = {}
    for kind, names in LAYER_NAMES.items():
        there = [name for name in names if name in available]
        if there:
            src = make(available[there[0]])
            found[kind] = LayerSource(kind, src.path, src.layer, also=tuple(there[1:]))
    return found


def sources_of(data: str | None, given: Mapping[str, str] | Iterable[tuple[str, str]] = ()) -> dict[str, LayerSource]:
    """The layers of ``data`` found by name (``find_layers``), each layer ``given`` on its own (kind -> source text)
    in its place. Refused: a kind two layers of ``data`` are named for (``parcels`` and ``tax_parcels`` in one
    GeoPackage), unless it is given on its own: the first was taken without a word, and the other's 1,500 parcels
    were left out of the analysis."""
    found = find_layers(str(data)) if data else {}
    pairs = list(given.items()) if isinstance(given, Mapping) else list(given)
    named = {kind for kind, _ in pairs}
    for kind, src in found.items():
        if src.also and kind not in named:
            taken = src.layer or Path(src.path).name
            where = Path(str(data)).name
            raise LayerError(
                f"{where} holds {len(src.also) + 1} layers that could be the {kind} layer: {taken} and "
                f"{', '.join(src.also)}. sewerplan would take {taken} without a word: give the one to use as the "
                f"{kind} layer, or rename the others.",
                fix=Fix("layer", kind, f"{where}:{src.also[0]}"),
            )
    for kind, text in pairs:
        found[kind] = parse_source(kind, text)
    return found


def parse_source(kind: str, text: str) -> LayerSource:
    """A layer given on its own: ``file.shp``, ``town.gpkg:parcels`` or ``postgresql://...#schema.table``."""
    if is_postgres(text):
        url, table = split_fragment(text)
        if not table:
            raise LayerError(
                f"The {kind} layer {redact_url(text)}: name the table after '#', e.g. postgresql://host/db#public.{kind}.",
                fix=Fix("layer", kind, f"postgresql://host/db#public.{kind}"),
            )
        return LayerSource(kind, url, table)
    if ":" in text and not Path(text).exists():
        path, _, layer = text.rpartition(":")
        if Path(path).exists():
            return LayerSource(kind, path, layer)
    if not Path(text).exists():
        raise LayerError(f"The {kind} layer {text} does not exist.", fix=Fix("layer", kind, "PATH"))
    return LayerSource(kind, text)


def read_source(source: LayerSource) -> gpd.GeoDataFrame:
    """Read one layer as it is stored (no validation), via Arrow where pyogrio can.

    Nothing the reader warns of reaches the console: GDAL's warnings are kept in ``attrs["read_warnings"]`` for
    validation to report with the layer's other problems, and numpy's floating-point warnings (a NaN vertex read
    from WKB) are silenced because validation reports such coordinates itself.
    """
    with quiet() as heard:
        frame = _read(source)
    if heard:
        frame.attrs["read_warnings"] = tuple(_in_words(text) for text in heard)
    return frame


def _in_words(heard: str) -> str:
    """A warning heard while reading, as the report says it: sewerplan's own notes as they are, GDAL's advice
    about an unclosed ring in plain words, anything else as what GDAL warned."""
    if heard in (CURVES_AS_SEGMENTS, TEXT_AS_CP1252) or heard.startswith(TEXT_AS_UTF8[:60]):
        return heard
    if heard.startswith("Non closed ring detected"):
        return RING_CLOSED
    if re.match(r"OGRGeoJSONReadRawPoint\(\): too many members in array", heard):
        return EXTRA_NUMBERS
    return f"GDAL warned: {heard}"


def _read(source: LayerSource) -> gpd.GeoDataFrame:
    if source.driver is not None:
        return read_upload_source(source)
    if source.where is not None or source.path.lower().endswith(PARQUET_SUFFIXES):
        return read_subset(source, where=source.where)
    if is_postgres(source.path):
        return _read_postgis(source.path, source.layer or source.kind)
    path = source.path
    if path.lower().endswith(".inp"):
        from layers.swmm import read_inp

        return read_inp(path)[source.layer or source.kind]
    if path.lower().endswith(".zip"):
        _check_zip(path)
    _check_dbf(path, source.layer, source.label)
    try:
        return read_ogr(path, layer=source.layer)
    except Exception as exc:
        raise LayerError(unreadable_message(Path(path), exc, label=source.label)) from exc


def _check_dbf(path: str, layer: str | None, label: str) -> None:
    """Refuse a shapefile without its .dbf (GDAL reads the shapes alone, and the layer seemed to have no columns),
    and a zip's .dbf without its .shp (read as a table without shapes).

    The shapefile may be a file, a zip's layer ``layer`` (at its top level) or a ``/vsizip/`` member path.
    """
    archive = None
    if path.startswith("/vsizip/") and path.lower().endswith(".shp"):
        archive, _, member = path[len("/vsizip/") :].partition(".zip/")
        archive, shp = archive + ".zip", PurePosixPath(member)
    elif path.lower().endswith(".zip") and layer:
        archive, shp = path, PurePosixPath(f"{layer}.shp")
    elif path.lower().endswith(".shp"):
        shp = PurePosixPath(path)
    else:
        return
    if archive is None:
        missing = not any(Path(path).with_suffix(ext).exists() for ext in (".dbf", ".DBF", ".Dbf"))
    else:
        with zipfile.ZipFile(archive) as zf:
            members = {n.lower() for n in zf.namelist()}
        missing = str(shp).lower() in members and str(shp.with_suffix(".dbf")).lower() not in members
        if str(shp).lower() not in members and str(shp.with_suffix(".dbf")).lower() in members:
            # GDAL reads the .dbf alone as a table, which the check then called "a table without geometry"
            raise LayerError(
                f"{label}: {shp.stem}.dbf in {Path(archive).name} has no {shp.name} beside it: it is the shapefile's "
                "table of attributes without its shapes; zip all of the shapefile's files together (.shp, .shx, "
                ".dbf, .prj, .cpg)."
            )
    if missing:
        where, verb = (f" in {Path(archive).name}", "zip") if archive else ("", "copy")
        raise LayerError(
            f"{label}: {shp.name} has no {shp.stem}.dbf beside it{where}, the shapefile's table of attributes (its "
            f"IDs and every other column); {verb} all of the shapefile's files together (.shp, .shx, .dbf, .prj, "
            ".cpg)."
        )


def read_ogr(path: str, **kwargs) -> gpd.GeoDataFrame:
    """One layer read by GDAL through pyogrio's Arrow path: the frame ``gpd.read_file(..., use_arrow=True)`` gives.

    Binary columns (the geometry's WKB) are handed to pandas as Arrow arrays rather than made into a million
    Python ``bytes`` objects first: shapely then reads the WKB straight from Arrow. That conversion was a third of
    reading a large layer (0.5-1 s per million buildings or parcels). A binary attribute column, which a
    GeoPackage can hold, comes back as Python ``bytes`` as before.

    Real data this also reads, each refused whole before, with a read warning saying what was done:

    - A polygon whose ring is not closed (GDAL accepts one from GeoJSON) is closed, as QGIS draws it; a geometry
      that cannot be made at all comes back missing, and validation names it.
    - Arcs (a cul-de-sac's lots from a File Geodatabase or an ArcGIS GeoPackage): GEOS has no curves, and the
      Arrow path hands them over as stored, so the layer is read feature by feature with each arc as straight
      segments of ``ARC_STEP_DEGREES``.
    - A shapefile whose text is not UTF-8 though nothing says so (no .cpg, or a .cpg that says UTF-8): GDAL passes
      the bytes on undecoded, and "MÜLLER" crashed the run or was written as bytes no reader could decode. Its
      text is read as Windows-1252, the code page of such files (Latin-1 and the euro sign, curly quotes).
    """
    shapefile = str(path).lower().endswith((".shp", ".dbf", ".zip"))
    first: list[str] = []  # what GDAL warned of on the first read: said unless the text is read again as UTF-8
    try:
        with quiet() as first:
            frame = _read_arrow(path, **kwargs)
        if shapefile and not _text_is_utf8(frame):
            frame = None
    except pa.ArrowException:  # "Wrapping ... failed": text that is not UTF-8, met while converting it
        _say_again(first)
        if not shapefile:
            raise
        frame = None
    except NotImplementedError as exc:  # shapely: "Nonlinear geometry types are not currently supported"
        _say_again(first)
        if "nonlinear" not in str(exc).lower():
            raise
        pyogrio.set_gdal_config_options({"OGR_ARC_STEPSIZE": str(ARC_STEP_DEGREES)})
        frame = gpd.read_file(path, engine="pyogrio", use_arrow=False, on_invalid="fix", **kwargs)
        warnings.warn(CURVES_AS_SEGMENTS, RuntimeWarning, stacklevel=2)
        return frame
    if frame is None:
        frame = _read_arrow(path, encoding="CP1252", **kwargs)
        warnings.warn(TEXT_AS_CP1252, RuntimeWarning, stacklevel=2)
    elif shapefile and "encoding" not in kwargs and (garbled := _utf8_read_as_cp1252(frame)):
        again = _read_arrow(path, encoding="UTF-8", **kwargs)
        if _text_is_utf8(again):  # every text byte of the file is UTF-8: it is, whatever its .cpg says
            frame = again
            warnings.warn(TEXT_AS_UTF8.format(seen=garbled[0], meant=garbled[1]), RuntimeWarning, stacklevel=2)
        else:
            _say_again(first)
    else:
        _say_again(first)
    for name in frame.columns:
        if isinstance(frame[name].dtype, pd.ArrowDtype):
            frame[name] = frame[name].to_numpy(dtype=object, na_value=None)
    return frame


def _read_arrow(path: str, **kwargs) -> gpd.GeoDataFrame:
    return gpd.read_file(
        path,
        engine="pyogrio",
        use_arrow=True,
        arrow_to_pandas_kwargs={"types_mapper": _binary_in_arrow},
        on_invalid="fix",
        **kwargs,
    )


def _say_again(heard: list[str]) -> None:
    """Warn again of what an inner ``quiet`` block heard, for the reader's caller to hear."""
    for text in heard:
        warnings.warn(text, RuntimeWarning, stacklevel=3)


# UTF-8's two-byte sequences as Windows-1252 shows them: a lead byte (C2-F4: "Â" to "ô") followed by a continuation
# byte (80-BF: "€" ... "Ÿ" and non-breaking space to "¿"). "MÃ¼ller" is "Müller" so misread; a Western name that
# means "Ã" followed by "¼" there is not known.
_CP1252_CONTINUATION = "\u0080-\u00bf\u0152\u0153\u0160\u0161\u0178\u017d\u017e\u0192\u02c6\u02dc\u2013\u2014" + (
    "\u2018-\u201a\u201c-\u201e\u2020-\u2022\u2026\u2030\u2039\u203a\u20ac\u2122"
)
_UTF8_AS_CP1252 = re.compile(f"[\u00c2-\u00f4][{_CP1252_CONTINUATION}]")


def _utf8_read_as_cp1252(frame: pd.DataFrame) -> tuple[str, str] | None:
    """A text value that looks like UTF-8 read as Windows-1252 (``MÃ¼ller``), with what it would say read as UTF-8;
    None when no value does (the usual case: only values with a character outside ASCII are looked at)."""
    for name in frame.columns:
        column = frame[name]
        if isinstance(column, gpd.GeoSeries) or not (
            pd.api.types.is_object_dtype(column) or pd.api.types.is_string_dtype(column)
        ):
            continue
        values = column.array
        if hasattr(values, "__arrow_array__") and _is_text(pa.array(values).type):
            # in Arrow (pandas' own strings): only the values outside ASCII are looked at, ~45 ms per million
            text = pa.array(values)
            text = text.filter(pc.invert(pc.fill_null(pc.string_is_ascii(text), True)))
            text = text.filter(pc.match_substring_regex(text, _UTF8_AS_CP1252.pattern)) if len(text) else text
            candidates = text[:1].to_pylist()
        else:
            candidates = pd.unique(column.to_numpy())
        for value in candidates:
            if isinstance(value, str) and not value.isascii() and _UTF8_AS_CP1252.search(value):
                meant = value.encode("cp1252", "replace").decode("utf-8", "replace")
                return value, meant
    return None


def _is_text(arrow_type) -> bool:
    return pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type)


def _text_is_utf8(frame: pd.DataFrame) -> bool:
    """Whether every text column Arrow holds is valid UTF-8 (Arrow checks it in C++, without Python strings)."""
    for name in frame.columns:
        values = frame[name].array
        if hasattr(values, "__arrow_array__"):
            try:
                pa.array(values).validate(full=True)
            except pa.ArrowInvalid:
                return False
    return True


# Degrees of arc per straight segment when GDAL reads a curve. A segment strays from its arc by at most
# r (1 - cos(step / 2)): 0.0004 ft on a 1,000 ft radius, under 0.01 ft up to 25,000 ft. GDAL's own default, 4
# degrees, strays 1.2 ft on a 2,000 ft road curve: a lot 99.3 ft from a main was measured at 100.2 ft.
ARC_STEP_DEGREES = 0.1
CURVES_AS_SEGMENTS = (
    "the layer holds curved lines (arcs); each arc was read as straight segments of 0.1 degrees of arc, which stray "
    "from it by under 0.01 ft for any radius below 25,000 ft, and distances are measured to those segments"
)
RING_CLOSED = (
    "a polygon's ring did not end where it started (GDAL accepts one from GeoJSON); it was closed, as QGIS draws it"
)
# GeoJSON positions of 4 numbers (x, y, z, m) or more: GDAL reads the first three and says so in its own words
# ("OGRGeoJSONReadRawPoint(): too many members in array ..."), once a process. sewerplan measures on the map plane, so
# it uses x and y alone and drops z (validation says so): the 4th number is dropped with it, nothing is misread.
EXTRA_NUMBERS = (
    "some of its positions hold more than three numbers (x, y, z and a measure m, say); the first two are read as x "
    "and y, and the rest are not used, as distances are measured on the map. If the first two numbers of a position "
    "are not its x and y (longitude and latitude), export the layer again as plain GeoJSON"
)
TEXT_AS_CP1252 = (
    "the shapefile's text is not UTF-8, and its code page is not known (no .cpg file beside the .shp, one GDAL does "
    "not know, or one that says UTF-8); it was read as Windows-1252 (Latin-1), the code page of most such files. "
    "If names look wrong, put a .cpg file beside the .shp holding the right code page: 1252 for Western European, "
    "1251 for Cyrillic, 1253 for Greek, 437 for old DOS files"
)


TEXT_AS_UTF8 = (
    "the shapefile's text is UTF-8, though its code page (its .cpg file, or its .dbf) says otherwise: read as that "
    "code page, {meant!r} came out as {seen!r}, so it was read as UTF-8. Put UTF-8 in the .cpg file beside the "
    ".shp to say so, or check the names if the file was meant to be in another code page"
)


def _binary_in_arrow(arrow_type):
    return pd.ArrowDtype(arrow_type) if arrow_type in (_BINARY, _LARGE_BINARY) else None


def unreadable_message(path: Path, exc: Exception, *, label: str | None = None) -> str:
    """One sentence for a file GDAL cannot read: which file, what is wrong with it, and what to do."""
    reason = _reader_says(exc)
    name = label or path.name
    with suppress(OSError):
        if path.is_file() and path.stat().st_size == 0:  # GDAL's "not recognized as being in a supported format"
            return f"{name} is empty (0 bytes): it was not saved whole; save or export it from the GIS again."
    damaged = re.search(r"malformed|not a database|disk image|file is encrypted|database schema", reason, re.I)
    if path.suffix.lower() in (".gpkg", ".sqlite") and damaged:
        return (
            f"{name} is damaged: it is not a readable GeoPackage (SQLite says: {reason}); export the layers from "
            "the GIS again, or use a backup copy."
        )
    if path.suffix.lower() == ".gpkg" and _is_sqlite(path):
        # A database GDAL will not open as a GeoPackage (its gpkg_geometry_columns table dropped, say): GDAL then says
        # "No such file or directory" of the file that is there, or that its format is not supported.
        return (
            f"GDAL could not open {name} as a GeoPackage: the file is there, but the tables that make it one "
            "(gpkg_contents, gpkg_geometry_columns) are missing or damaged. Open it in QGIS to see whether its "
            "layers show, then export them again as a GeoPackage from the GIS that made it, or use a backup copy."
        )
    missing = path.exists() and re.search(r"no such file", reason, re.I)  # GDAL's words of a file that is there
    said = "" if missing else f" (GDAL says: {reason})"
    return (
        f"{name} cannot be read as map data{said}; check that it is a GeoPackage, a shapefile "
        "with its .shx and .dbf, a GeoJSON file or a File Geodatabase, and open it in QGIS to see whether it is "
        "damaged."
    )


def _is_sqlite(path: Path) -> bool:
    """``path`` is a SQLite database by its first bytes (every GeoPackage is one)."""
    try:
        with open(path, "rb") as f:
            return f.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def _reader_says(exc: Exception) -> str:
    """The reason in a GDAL or SQLite error message: decoded, without the SQL statement it ran, on one line."""
    text = str(exc)
    raw = re.search(r"Raw error: (b'(?:[^'\\]|\\.)*'|b\"(?:[^\"\\]|\\.)*\")", text)
    if raw:  # GDAL could not decode the message as UTF-8 (a damaged file's bytes in it): decode what we can
        try:
            text = ast.literal_eval(raw.group(1)).decode("utf-8", "replace")
        except (ValueError, SyntaxError):
            text = raw.group(1)
    if "failed: " in text:  # sqlite3_prepare_v2(SELECT ... long statement ...) failed: the reason
        text = text.split("failed: ", 1)[1]
    text = " ".join(text.split("; ")[0].split())
    return text if len(text) <= 160 else text[:157] + "..."


def read_upload_source(source: LayerSource) -> gpd.GeoDataFrame:
    """Read an uploaded layer with the one driver its extension names, after its content is checked.

    No other GDAL driver is tried (layers/uploads.py says how), so a ``parcels.geojson`` that holds a VRT
    document, a GDAL pipeline or a ``/vsicurl/`` path is refused, never followed. GeoParquet is read by pyarrow.
    """
    from layers.uploads import gdal_path

    name = gdal_path(source.path, source.driver or "")
    try:
        if source.driver == "GeoParquet":
            return read_geoparquet(source.path)
        return read_ogr(name, layer=source.layer)
    except LayerError:
        raise
    except Exception as exc:
        raise LayerError(unreadable_message(Path(source.path), exc, label=source.label)) from exc


def declared_geometry(source: LayerSource) -> str | None:
    """The kind of shapes an uploaded layer declares, without Z or M: "Point", "LineString" or "Polygon" (a multi
    type as its single one); None where it declares none, a mix, or cannot be asked (a GeoParquet file). Read with
    the layer's one checked driver, as ``read_upload_source`` reads it; GDAL's own warnings are not the user's."""
    from layers.uploads import gdal_path

    if source.driver in (None, "GeoParquet"):
        return None
    try:
        with quiet():
            declared = pyogrio.read_info(gdal_path(source.path, source.driver), layer=source.layer)["geometry_type"]
    except Exception:  # read for its kind alone: reading the layer itself says what is wrong with it
        return None
    base = str(declared or "").split(" ")[0].removeprefix("Multi")
    return base if base in ("Point", "LineString", "Polygon") else None


def _check_zip(path: str) -> None:
    """Refuse archives whose members escape the archive (``..``, absolute paths) before GDAL opens them."""
    try:
        with zipfile.ZipFile(path) as zf:
            bad = [n for n in zf.namelist() if outside_archive(n)]
    except zipfile.BadZipFile as exc:
        raise LayerError(f"{path} is not a valid zip archive.") from exc
    if bad:
        raise LayerError(f"{path} contains member paths outside the archive ({', '.join(bad[:3])}); refused.")


@contextmanager
def _connect(url: str):
    """One connection, closed after use (no pool lingers between reads)."""
    from sqlalchemy import create_engine
    from sqlalchemy.pool import NullPool

    engine = create_engine(quote_password(url.replace("postgres://", "postgresql://", 1)), poolclass=NullPool)
    try:
        with engine.connect() as con:
            yield con
    finally:
        engine.dispose()


def _postgis_tables(url: str) -> list[str]:
    from sqlalchemy import text

    # The catalog, not the geometry_columns view: the view opens every table to read its type modifiers and fails
    # ("could not open relation with OID") while another session drops one, as a publish or a run does.
    listing = text(
        "SELECT n.nspname, c.relname FROM pg_attribute a JOIN pg_class c ON a.attrelid = c.oid "
        "JOIN pg_namespace n ON c.relnamespace = n.oid "
        "WHERE a.atttypid = to_regtype('geometry') AND NOT a.attisdropped AND a.attnum > 0 "
        "AND c.relkind IN ('r', 'v', 'm', 'p', 'f') AND n.nspname NOT IN ('pg_catalog', 'information_schema') "
        "GROUP BY n.nspname, c.relname ORDER BY n.nspname, c.relname"
    )
    try:
        with _connect(url) as con:
            if con.execute(text("SELECT to_regtype('geometry')")).scalar() is None:
                raise LayerError(
                    f"The database {redact_url(url)} has no PostGIS (it has no geometry type): enable it with "
                    "CREATE EXTENSION postgis and load the layers, or read them from a GeoPackage or folder."
                )
            rows = con.execute(listing).all()
    except LayerError:
        raise
    except Exception as exc:
        raise LayerError(f"Cannot list the tables of {redact_url(url)}: {redact_url(url, str(exc))}") from exc
    return [name if schema == "public" else f"{schema}.{name}" for schema, name in rows]


def _read_postgis(url: str, table: str) -> gpd.GeoDataFrame:
    from sqlalchemy import text

    if not _IDENT.match(table):
        raise LayerError(f"{table!r} is not a table name (schema.table, letters, digits and _).")
    schema, _, name = table.rpartition(".")
    schema = schema or "public"
    try:
        with _connect(url) as con:
            row = con.execute(
                text("SELECT f_geometry_column FROM geometry_columns WHERE f_table_schema = :s AND f_table_name = :t"),
                {"s": schema, "t": name},
            ).first()
            if row is None:
                raise LayerError(
                    f"PostGIS table {schema}.{name} has no geometry column (or does not exist) in {redact_url(url)}."
                )
            columns = list(_postgis_columns(con, schema, name))
            return _postgis_frame(con, columns, row[0], f'FROM "{schema}"."{name}"', {})
    except LayerError:
        raise
    except Exception as exc:
        raise LayerError(
            f"Cannot read PostGIS table {schema}.{name} from {redact_url(url)}: {redact_url(url, str(exc))}"
        ) from exc


def _postgis_columns(con, schema: str, name: str) -> dict[str, str]:
    """A table's columns, in their order, with their types."""
    from sqlalchemy import text

    query = "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = :s AND table_name = :t"
    return dict(con.execute(text(query + " ORDER BY ordinal_position"), {"s": schema, "t": name}).all())


def _postgis_frame(con, columns: list[str], geom_col: str, rest: str, params: dict) -> gpd.GeoDataFrame:
    """``SELECT`` ``columns`` from ``rest`` (FROM ..., WHERE ...), arcs made straight in the database.

    A table loaded from ArcGIS can hold arcs (CURVEPOLYGON, MULTISURFACE), which GEOS cannot read: PostGIS's
    ``ST_CurveToLine`` makes them straight segments of ``ARC_STEP_DEGREES``, as GDAL does for a file, and a
    read warning says so. Other rows are handed over as stored.
    """
    from sqlalchemy import text

    g = _quoted(geom_col)
    straight = f"CASE WHEN ST_HasArc({g}) THEN ST_CurveToLine({g}, radians({ARC_STEP_DEGREES}), 2) ELSE {g} END"
    chosen = [f"{straight} AS {g}" if c == geom_col else _quoted(c) for c in columns]
    sql = f"SELECT {', '.join(chosen)}, ST_HasArc({g}) AS {_quoted(_HAD_ARC)} {rest}"
    frame = gpd.read_postgis(text(sql).bindparams(**params), con, geom_col=geom_col)
    if frame[_HAD_ARC].fillna(False).astype(bool).any():
        warnings.warn(CURVES_AS_SEGMENTS, RuntimeWarning, stacklevel=2)
    return frame.drop(columns=_HAD_ARC)


_HAD_ARC = "__sewerplan_had_arc"


def _quoted(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


# One municipality's features from a county- or statewide layer: by a column's value, or by a bounding box.
# GeoParquet is read with pyarrow (row groups whose statistics cannot match are skipped), OGR files with an attribute
# filter and their spatial index, PostGIS with a bound parameter and the geometry index (``&&``).
Bounds = tuple[float, float, float, float]


def read_subset(
    source: LayerSource,
    *,
    where: tuple[str, str | int] | None = None,
    bbox: Bounds | None = None,
    bbox_crs: CRS | None = None,
    assume_crs: str | None = None,
) -> gpd.GeoDataFrame:
    """The features of ``source`` whose column ``where[0]`` holds ``where[1]`` and that touch ``bbox``.

    ``bbox`` is in ``bbox_crs`` and is turned into the layer's own CRS (``assume_crs`` for a layer that declares
    none). A column that is not in the layer is an error, never an unfiltered read: a statewide layer read whole
    would be both wrong and too big.
    """
    path = source.path
    if path.lower().endswith(".inp"):
        raise LayerError(f"{source.label}: a SWMM model cannot be split by municipality; give one model per town.")
    if path.lower().endswith(PARQUET_SUFFIXES):
        return read_geoparquet(path, where=where, bbox=bbox, bbox_crs=bbox_crs, assume_crs=assume_crs)
    if is_postgres(path):
        return _read_postgis_subset(path, source.layer or source.kind, where, bbox, bbox_crs, assume_crs)
    if path.lower().endswith(".zip"):
        _check_zip(path)
    try:
        info = pyogrio.read_info(path, layer=source.layer)
    except Exception as exc:
        raise LayerError(f"{source.label} cannot be read: {exc}") from exc
    kwargs: dict = {}
    if where is not None:
        _check_column(source.label, where[0], [str(f) for f in info["fields"]])
        kwargs["where"] = f'"{where[0]}" = {_sql_literal(where[1])}'
    if bbox is not None:
        kwargs["bbox"] = _bounds_in(bbox, bbox_crs, info.get("crs") or assume_crs, source.label)
    try:
        return read_ogr(path, layer=source.layer, **kwargs)
    except Exception as exc:
        raise LayerError(f"{source.label} cannot be read: {exc}") from exc


def read_geoparquet(
    path: str,
    *,
    where: tuple[str, str | int] | None = None,
    bbox: Bounds | None = None,
    bbox_crs: CRS | None = None,
    assume_crs: str | None = None,
) -> gpd.GeoDataFrame:
    """A GeoParquet file, whole or only the features with a column's value and/or touching a bounding box."""
    import pyarrow.parquet as pq

    label = Path(path).name
    try:
        schema = pq.read_schema(path)
        geo = json.loads((schema.metadata or {}).get(b"geo", b"{}"))
    except Exception as exc:
        raise LayerError(f"{label} cannot be read as GeoParquet: {exc}") from exc
    if not geo.get("columns"):
        raise LayerError(f"{label} is a Parquet file without GeoParquet metadata (no geometry column declared).")
    kwargs: dict = {}
    if where is not None:
        _check_column(label, where[0], schema.names)
        kwargs["filters"] = [(where[0], "==", _typed_value(schema.field(where[0]).type, where[1]))]
    if bbox is not None:
        column = geo["columns"][geo.get("primary_column") or next(iter(geo["columns"]))]
        stored = column.get("crs", "OGC:CRS84")  # GeoParquet: an absent crs means longitude/latitude
        kwargs["bbox"] = _bounds_in(bbox, bbox_crs, stored if stored is not None else assume_crs, label)
    column = geo["columns"][geo.get("primary_column") or next(iter(geo["columns"]))]
    try:
        if "bbox" in kwargs and "covering" not in column and column.get("encoding", "WKB").upper() == "WKB":
            return _scan_geoparquet(path, geo, kwargs.get("filters"), kwargs["bbox"])
        frame = gpd.read_parquet(path, **kwargs)
    except Exception as exc:
        raise LayerError(f"{label} cannot be read as GeoParquet: {exc}") from exc
    return frame.reset_index(drop=True)


def _scan_geoparquet(path: str, geo: dict, filters, bbox: Bounds) -> gpd.GeoDataFrame:
    """A bounding-box read of a GeoParquet file that has no bbox column: one batch of rows in memory at a time."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    import shapely

    name = geo.get("primary_column") or next(iter(geo["columns"]))
    file = pq.ParquetFile(path)
    expr = pq.filters_to_expression(filters) if filters else None
    kept = []
    for batch in file.iter_batches(batch_size=65_536):
        table = pa.Table.from_batches([batch])
        if expr is not None:
            table = table.filter(expr)
        bounds = shapely.bounds(shapely.from_wkb(table.column(name).to_numpy(zero_copy_only=False)))
        hit = (
            (bounds[:, 0] <= bbox[2])
            & (bounds[:, 2] >= bbox[0])
            & (bounds[:, 1] <= bbox[3])
            & (bounds[:, 3] >= bbox[1])
        )
        kept.append(table.filter(pc.fill_null(pa.array(hit), False)))
    table = pa.concat_tables(kept) if kept else file.schema_arrow.empty_table()
    frame = table.drop_columns([name]).to_pandas()
    frame[name] = shapely.from_wkb(table.column(name).to_numpy(zero_copy_only=False))
    return gpd.GeoDataFrame(frame, geometry=name, crs=CRS.from_user_input(geo["columns"][name].get("crs", "OGC:CRS84")))


def _check_column(label: str, column: str, names: list[str]) -> None:
    if column not in names:
        raise LayerError(
            f"{label} has no column {column!r} to pick one municipality's features by; its columns are "
            f"{', '.join(names)}. Name the column that holds the municipality."
        )


def _sql_literal(value: str | int) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return "'" + str(value).replace("'", "''") + "'"


def _typed_value(arrow_type, value: str | int):
    """The filter value as the column stores it (a SWIS code may be a number in one file and text in another)."""
    import pyarrow as pa

    if pa.types.is_integer(arrow_type):
        return _typed_number(value)
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type) or pa.types.is_dictionary(arrow_type):
        return str(value)
    return value


def _typed_number(value: str | int) -> int:
    try:
        return int(value)
    except ValueError as exc:
        raise LayerError(f"The municipality column holds numbers; {value!r} is not one.") from exc


def _bounds_in(bbox: Bounds, bbox_crs: CRS | None, layer_crs, label: str) -> Bounds:
    """``bbox`` in the layer's CRS (edges densified, so a curved edge after reprojection is still covered)."""
    if bbox_crs is None:
        return bbox
    if layer_crs is None:
        raise LayerError(f"{label} declares no CRS: give the CRS of the layer so it can be split by location.")
    from pyproj import Transformer

    target = CRS.from_user_input(layer_crs)
    if target == bbox_crs:
        return bbox
    transformer = Transformer.from_crs(bbox_crs, target, always_xy=True)
    return tuple(transformer.transform_bounds(*bbox, densify_pts=21))


def _read_postgis_subset(
    url: str, table: str, where: tuple[str, str | int] | None, bbox: Bounds | None, bbox_crs, assume_crs
) -> gpd.GeoDataFrame:
    """A PostGIS table's rows with ``column = value`` (bound, never spliced) and/or touching ``bbox``."""
    from sqlalchemy import text

    if not _IDENT.match(table):
        raise LayerError(f"{table!r} is not a table name (schema.table, letters, digits and _).")
    schema, _, name = table.rpartition(".")
    schema = schema or "public"
    label = f"PostGIS table {schema}.{name}"
    try:
        with _connect(url) as con:
            row = con.execute(
                text(
                    "SELECT f_geometry_column, srid FROM geometry_columns "
                    "WHERE f_table_schema = :s AND f_table_name = :t"
                ),
                {"s": schema, "t": name},
            ).first()
            if row is None:
                raise LayerError(f"{label} has no geometry column (or does not exist) in {redact_url(url)}.")
            geom_col, srid = row
            clauses, params = [], {}
            columns = _postgis_columns(con, schema, name)
            if where is not None:
                _check_column(label, where[0], list(columns))
                clauses.append(f'"{where[0]}" = :value')
                numeric = columns[where[0]] in ("integer", "bigint", "smallint", "numeric")
                params["value"] = _typed_number(where[1]) if numeric else str(where[1])
            if bbox is not None:
                stored = CRS.from_epsg(srid) if srid else (CRS.from_user_input(assume_crs) if assume_crs else None)
                x0, y0, x1, y1 = _bounds_in(bbox, bbox_crs, stored, label)
                clauses.append(f'"{geom_col}" && ST_MakeEnvelope(:x0, :y0, :x1, :y1, {int(srid or 0)})')
                params |= {"x0": x0, "y0": y0, "x1": x1, "y1": y1}
            rest = f'FROM "{schema}"."{name}"' + (" WHERE " + " AND ".join(clauses) if clauses else "")
            return _postgis_frame(con, list(columns), geom_col, rest, params)
    except LayerError:
        raise
    except Exception as exc:
        raise LayerError(f"Cannot read {label} from {redact_url(url)}: {exc}") from exc


def read_mapping(path: str | None, pairs: tuple[str, ...] = (), value_pairs: tuple[str, ...] = ()) -> ColumnMapping:
    """Build a column mapping from a TOML file and ``kind.field=COLUMN`` / ``kind.field.VALUE=code`` options.

    The file looks like::

        [parcels]
        parcel_id = "SBL"
        owner_name = "OWNER_NAME"
        [mains.values.sewer_type]
        GRAV = "sanitary"
    """
    mapping = ColumnMapping()
    if path:
        try:
            data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise LayerError(f"Mapping file {path} cannot be read: {exc}") from exc
        for kind, table in data.items():
            if kind not in SPECS or not isinstance(table, dict):
                raise LayerError(f"Mapping file {path}: [{kind}] is not a layer ({', '.join(SPECS)}).")
            for key, value in table.items():
                if key == "values" and isinstance(value, dict):
                    for fname, codes in value.items():
                        mapping.values.setdefault(kind, {})[fname] = {str(k): str(v) for k, v in codes.items()}
                else:
                    mapping.columns.setdefault(kind, {})[key] = str(value)
    for pair in pairs:
        key, sep, column = pair.partition("=")
        kind, dot, fname = key.partition(".")
        if not sep or not dot or kind not in SPECS:
            raise LayerError(
                f"Column mapping {pair!r}: expected LAYER.FIELD=COLUMN, e.g. parcels.parcel_id=SBL.",
                fix=Fix("map", "parcels.parcel_id", "SBL"),
            )
        mapping.columns.setdefault(kind, {})[fname] = column
    for pair in value_pairs:
        key, sep, code = pair.partition("=")
        parts = key.split(".", 2)
        if not sep or len(parts) != 3 or parts[0] not in SPECS:
            raise LayerError(
                f"Coded value {pair!r}: expected LAYER.FIELD.VALUE=CODE, e.g. mains.sewer_type.GRAV=sanitary.",
                fix=Fix("map_value", "mains.sewer_type.GRAV", "sanitary"),
            )
        mapping.values.setdefault(parts[0], {}).setdefault(parts[1], {})[parts[2]] = code
    return mapping


def read_table(path: str, *, what: str) -> pd.DataFrame:
    """A CSV as a spreadsheet saved it, every cell text: UTF-8 (with or without the byte-order mark), else Windows-1252
    (Excel's "CSV (Comma delimited)"); comma-separated, else by the semicolon or tab its header line holds (Excel
    where the list separator is ";"); column names stripped, and rows with every cell blank (",,") left out.
    ``what`` names the file in a refusal ("Connected-parcels list")."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise LayerError(f"{what} {path} cannot be read: {exc.strerror or exc}.") from exc
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        try:
            text = data.removeprefix(b"\xef\xbb\xbf").decode("cp1252")  # a mark, then a Windows-1252 cell
        except UnicodeDecodeError as exc:
            raise LayerError(
                f"{what} {path} is neither UTF-8 nor Windows (cp1252) text: save it from the spreadsheet as "
                '"CSV UTF-8 (Comma delimited)".'
            ) from exc
    header = text.split("\n", 1)[0]
    sep = next((s for s in (",", ";", "\t") if s in header), ",")
    if not text.strip():  # pandas said "No columns to parse from file"
        raise LayerError(f"{what} {path} is empty: save it again from the spreadsheet, with its header row.")
    try:
        table = pd.read_csv(io.StringIO(text), sep=sep, dtype=str, keep_default_na=False)
    except pd.errors.ParserError as exc:
        raise LayerError(f"{what} {path} cannot be read: {exc}") from exc
    table.columns = [str(c).strip() for c in table.columns]
    return table[table.apply(lambda col: col.str.strip() != "").any(axis=1)].reset_index(drop=True)


def read_connected_ids(path: str, *, column: str | None = None) -> set[str]:
    """Parcel IDs from a billing list or similar CSV: column ``column``, else parcel_id, else the first one."""
    table = read_table(path, what="Connected-parcels list")
    if column is None:
        lower = {c.lower(): c for c in table.columns}
        column = next(
            (lower[c] for c in ("parcel_id", "sbl", "print_key", "parcel") if c in lower),
            table.columns[0] if len(table.columns) else None,
        )
    if column not in table.columns:
        raise LayerError(f"{path} has no column {column!r}; columns: {', '.join(table.columns)}.")
    ids = {v.strip() for v in table[column] if v.strip()}
    if not ids:
        # As an empty file is refused: a list naming no parcel read as "none is connected", every parcel in reach
        # was told to connect and a plan's capacity check counted that as a known present flow (a tester).
        raise LayerError(
            f"Connected-parcels list {path} names no parcel: its column {column!r} holds no parcel ID under the "
            "header row. Save it again from the billing records with the connected parcels' IDs; where no parcel is "
            "connected at all, leave the list out and give the parcels layer a connected column saying so."
        )
    return ids


def read_hazard_list(path: str) -> dict[str, str]:
    """Each parcel's hazard from a CSV of ``parcel_id,hazard`` (Poughkeepsie's ``--hazard-file``). A parcel listed
    twice with two hazards is refused: its letter would name one of them, not the clerk's choice."""
    table = read_table(path, what="The hazard file")
    if not {"parcel_id", "hazard"} <= set(table.columns):
        raise LayerError(f"{path} needs the columns parcel_id and hazard; it has {', '.join(table.columns) or 'none'}.")
    found: dict[str, str] = {}
    for parcel, hazard in zip(table["parcel_id"].str.strip(), table["hazard"].str.strip(), strict=True):
        if found.get(parcel, hazard) != hazard:
            raise LayerError(
                f"{path}: parcel {parcel} is listed with two hazards ({found[parcel]!r} and {hazard!r}); list each "
                "parcel once, with the hazard its letter is to name."
            )
        found[parcel] = hazard
    return found


def read_parcel_list(path: str) -> list[str]:
    """The parcel IDs of a CSV's ``parcel_id`` column (a list of the parcels a batch of notices is to take), in the
    file's order, blanks left out. A file without that column is refused: a list saved without its header row would
    lose its first parcel to the header."""
    table = read_table(path, what="The list of parcels")
    column = next((c for c in table.columns if c.strip().lower() == "parcel_id"), None)
    if column is None:
        raise LayerError(
            f"{path} needs a parcel_id column (a header row naming it, then one parcel ID a row); it has "
            f"{', '.join(table.columns) or 'none'}."
        )
    ids = table[column].str.strip()
    return ids[ids != ""].tolist()


def load_layers(
    sources: dict[str, LayerSource],
    *,
    target_crs: CRS,
    mapping: ColumnMapping | None = None,
    assume_crs: dict[str, str] | None = None,
    connected_ids: set[str] | None = None,
    progress=None,
    required: tuple[str, ...] = ("parcels", "mains"),
    layer_crs: dict[str, str] | None = None,
    threads: int | None = None,
) -> Layers:
    """Read, validate and reproject every given layer; raise ``LayerValidationError`` with all errors at once.

    ``threads`` caps the threads validation's geometry checks use (None: the machine's cores, up to 4).

    ``assume_crs`` gives a layer that declares no CRS its CRS; ``layer_crs`` (the CRS a user gave a layer by name)
    replaces even a declared one, and the replacement is reported.

    ``required`` names the layers the caller cannot do without (the network check needs only mains).
    """
    problems: list[Problem] = []
    missing = [k for k in required if k not in sources]
    if missing:
        raise LayerError(
            f"No {' or '.join(missing)} layer found. Name the layers parcels, mains (and buildings, streets, "
            f"manholes, treatment_plants) in the GeoPackage or folder, or give the {missing[0]} layer on its own.",
            fix=Fix("layer", missing[0], "PATH"),
        )
    frames: dict[str, gpd.GeoDataFrame] = {}

    def prepare(kind: str, raw: gpd.GeoDataFrame, beside: tuple[str, ...] = ()) -> list[Problem]:
        frame, found = prepare_layer(
            raw,
            SPECS[kind],
            label=sources[kind].label,
            target_crs=target_crs,
            mapping=mapping,
            assume_crs=(assume_crs or {}).get(kind),
            override_crs=(layer_crs or {}).get(kind),
            workers=threads,
            beside=beside,
        )
        if frame is not None:
            frames[kind] = frame
        return found

    for kind, _source, raw in _read_ahead(sources, progress):
        problems += prepare(kind, raw)
    # A layer told to measure the town where it alone lies, while the other layers lie where the measuring CRS is
    # used, is in a wrong CRS itself: it is read again (only on this refusal) to be told so.
    elsewhere = {p.layer for p in problems if p.check == "crs_mismatch" and getattr(p.fix, "setting", "") == "crs"}
    if elsewhere and frames:
        beside = tuple(frames)
        problems = [p for p in problems if p.layer not in elsewhere or p.check != "crs_mismatch"]
        for kind in sorted(elsewhere):
            problems += [p for p in prepare(kind, read_source(sources[kind]), beside) if p.check == "crs_mismatch"]
    if connected_ids is not None and "parcels" in frames:
        frames["parcels"], found = _apply_connected_list(frames["parcels"], connected_ids)
        problems += found
    labels = {kind: sources[kind].label for kind in frames}
    problems += check_layers_together(frames, labels)
    problems += check_sizes(frames, labels)
    problems += check_streets_hold_no_lots(frames, labels)
    if any(p.severity == "error" for p in problems):
        raise LayerValidationError(problems)
    return Layers(
        **{"parcels": None, "mains": None, **frames},
        problems=problems,
        sources={k: s.label for k, s in sources.items()},
    )


def _read_ahead(sources: dict[str, LayerSource], progress=None) -> Iterator[tuple[str, LayerSource, gpd.GeoDataFrame]]:
    """Each layer as read, in order, the next one read on a thread while the caller validates this one.

    Reading (GDAL, then shapely making the geometries from WKB) and validating each run mostly on one core with
    the GIL released: on two cores the buildings are read while the parcels are validated. Only one layer is read
    ahead, so at most one raw layer waits beside the one being validated. A read's error is raised when its
    layer's turn comes, as it would be without the thread.
    """
    items = list(sources.items())
    if not items:
        return
    with ThreadPoolExecutor(1, thread_name_prefix="sewerplan-read") as pool:
        ahead = pool.submit(read_source, items[0][1])
        for i, (kind, source) in enumerate(items):
            if progress:
                progress(f"reading {source.label}")
            raw = ahead.result()
            if i + 1 < len(items):
                ahead = pool.submit(read_source, items[i + 1][1])
            yield kind, source, raw


def _apply_connected_list(parcels: gpd.GeoDataFrame, ids: set[str]) -> tuple[gpd.GeoDataFrame, list[Problem]]:
    listed = parcels["parcel_id"].isin(ids)
    base = parcels["connected"] if "connected" in parcels.columns else pd.Series(False, index=parcels.index)
    parcels = parcels.assign(connected=base.where(~listed, True).astype(object))
    parcels.attrs["connected_source"] = "connected-parcels list"
    unknown = sorted(ids - set(parcels["parcel_id"]))
    problems = []
    if unknown:
        problems.append(
            Problem(
                "parcels",
                "connected_list",
                "warning",
                f"{len(unknown)} parcel ID(s) in the connected-parcels list match no parcel.",
                len(unknown),
                tuple(unknown),
            )
        )
    return parcels, problems


def read_proposed(
    path: str,
    *,
    target_crs: CRS,
    assume_crs: str | None = None,
    crs: str | None = None,
    layer: str | None = None,
    name: str | None = None,
) -> tuple[Any, str | None]:
    """A proposed main from a file (GeoJSON, GeoPackage, shapefile): its lines merged into one, in ``target_crs``,
    and a note to show the user, or None.

    ``crs`` is the CRS the user gave for this file, which replaces a declared one; a file without one is told to
    give it, with the town's measuring CRS as the example (a line drawn in QGIS over the town's layers is most
    often in theirs). ``name`` is the file as its user knows it, for the messages (a web upload is read from a
    temporary copy). A plan's
    own export (``layers.write.write_plan``: a ``feature`` property on each feature) gives its proposed main alone,
    and the note says so: merged with its connecting main, the same plan came back as one longer drawn main (3,630
    ft instead of 3,450 + 180) and was evaluated differently.
    """
    import shapely

    from layers.crs import check_and_reproject

    if layer is None and not is_postgres(path) and not Path(path).exists():
        head = path.rpartition(":")[0]
        if not (head and Path(head).exists()):  # FILE:LAYER is read as such
            # parse_source's fix names the proposed main as a layer of the town's data, which it is not: the
            # command line then offered a flag that refuses it
            raise LayerError(
                f"The proposed main's file {name or path} does not exist: check its name and folder, and give the "
                "file the main was saved in."
            )
    source = parse_source("proposed", path) if layer is None else LayerSource("proposed", path, layer)
    if source.layer is None and not is_postgres(source.path):
        source = _proposed_layer(source, name or path)
    try:
        frame = read_source(source)
    except LayerError as exc:
        if not name or name == path:
            raise
        # the map's load is read from a hidden copy: GDAL's refusal named it ('/tmp/sewerplan-line-.../proposed.
        # geojson'), a file the planner never saw, and not the file loaded
        said = str(exc).replace(source.label, name).replace(str(path), name)
        raise LayerError(said, fix=exc.fix) from exc
    path = name or path
    if len(frame) == 0:
        # "holds no line." alone left a planner who saved an empty layer from QGIS nothing to do
        raise LayerError(
            f"{path} holds no line: it has no features. Draw the proposed main in it and save it again, or give the "
            "file that holds the main."
        )
    frame, note = _plan_export_main(frame, Path(path).name, _not_laid_beside(source))
    frame = frame.set_geometry(shapely.force_2d(frame.geometry.values))
    frame, problems = check_and_reproject(
        frame,
        layer="proposed",
        label=f"proposed main ({Path(path).name})",
        target=target_crs,
        assume=assume_crs,
        override=crs,
        example=crs_label(target_crs),
        town_measured=True,
    )
    if frame is None:
        raise LayerValidationError(problems)
    from layers.write import NOT_LAID

    apart = frame["feature"].eq(NOT_LAID).to_numpy(bool) if note is not None else np.zeros(len(frame), bool)
    not_laid = [g for g in frame.geometry[apart] if g is not None and not g.is_empty]
    frame = frame[~apart]
    lines = [g for g in frame.geometry if g is not None and g.geom_type in ("LineString", "MultiLineString")]
    if not lines:
        raise LayerError(f"{path} holds no line: draw the proposed main as a line.")
    parts = shapely.get_parts(lines)
    parts = parts[shapely.length(parts) > 0]
    if not len(parts):
        raise LayerError(f"The line in {path} has no length: its points all lie in one place; draw it end to end.")
    if not shapely.is_simple(parts).all():  # merging would cut it where it crosses and call it pieces that do not join
        raise LayerError(
            f"The line in {path} crosses or runs back over itself: draw it again as a line that does not cross its "
            "own path."
        )
    merged = parts[0] if len(parts) == 1 else shapely.line_merge(shapely.union_all(parts))
    if merged.geom_type != "LineString":
        raise LayerError(_not_one_main(path, list(shapely.get_parts(merged)), frame.crs))
    if not_laid:
        merged, note = _as_drawn_again(merged, not_laid, Path(path).name, frame.crs)
    if merged.is_closed:  # GEOS calls a ring simple: it was evaluated as a main joining the same manhole twice
        raise LayerError(
            f"The line in {path} ends where it begins, a closed loop: draw it from where it joins the sewer to its "
            "upper end, without coming back."
        )
    return merged, note


def _not_one_main(path: str, pieces: list, crs) -> str:
    """Why a file's lines are not one main, and where: "do not join into one main" alone left a planner whose
    QGIS line had two pieces 0.05 ft apart (drawn without snapping, invisible at any scale they looked at) with
    nothing to look for."""
    import shapely

    from analysis.units import feet_per_unit

    told = f"The lines in {path} do not join into one main ({len(pieces)} pieces"
    if len(pieces) > 50:
        return told + "); give one connected line."
    gaps = [(shapely.distance(a, b), a, b) for i, a in enumerate(pieces) for b in pieces[i + 1 :]]
    gap, a, b = min(gaps, key=lambda g: g[0])
    if gap == 0:  # they touch, yet do not merge: three or more ends meet
        where = shapely.intersection(a, b)
        point = where if where.geom_type == "Point" else shapely.get_parts(where)[0]
        point = shapely.get_point(point, 0) if point.geom_type != "Point" else point
        return (
            told + f", branching at x {point.x:,.1f}, y {point.y:,.1f} in {crs_label(CRS(crs))}): a plan is one main "
            "without branches; "
            "evaluate each branch as its own plan."
        )
    ends = shapely.shortest_line(a, b)
    x, y = ends.coords[0]
    feet = gap * feet_per_unit(CRS(crs))
    apart = f"{feet:,.2f} ft" if feet < 10 else f"{feet:,.0f} ft"
    return (
        told + f", the nearest {apart} apart at x {x:,.1f}, y {y:,.1f} in {crs_label(CRS(crs))}): join them end to "
        "end (in QGIS, draw with snapping on, or snap the ends together), or, if they are separate mains, evaluate "
        "each as its own plan."
    )


def _proposed_layer(source: LayerSource, name: str) -> LayerSource:
    """The layer of a file holding several (a GeoPackage, a folder of shapefiles) that holds the proposed main.

    GDAL opens the first: a GeoPackage of two options (option_a, option_b) was evaluated as its first, without a
    word, and one whose first layer was the parcels was refused as a main "in degrees".
    """
    try:
        with quiet():
            listed = [(str(n), str(g or "")) for n, g in pyogrio.list_layers(source.path)]
    except Exception:  # noqa: BLE001 - read_source words a file GDAL cannot open
        return source
    if len(listed) < 2:
        return source
    lines = [n for n, g in listed if "linestring" in g.lower() or g.lower() in ("unknown", "geometry")]
    if "proposed_main" in lines:  # a plan's own GeoPackage export (layers.write.write_plan): its main's layer
        return LayerSource(source.kind, source.path, "proposed_main")
    if len(lines) == 1:
        return LayerSource(source.kind, source.path, lines[0])
    file = Path(name).name
    if not lines:
        raise LayerError(
            f"{file} holds {len(listed)} layers and none of lines ({', '.join(n for n, _ in listed[:5])}"
            f"{', ...' if len(listed) > 5 else ''}): draw the proposed main as a line, or give the file that holds it."
        )
    shown = ", ".join(lines[:5]) + (", ..." if len(lines) > 5 else "")
    raise LayerError(
        f"{file} holds {len(lines)} layers of lines ({shown}), and which is the proposed main is not known: give "
        f"the file and its layer as {file}:LAYER, e.g. {file}:{lines[0]}, and evaluate each option as its own plan."
    )


def _not_laid_beside(source: LayerSource) -> gpd.GeoDataFrame | None:
    """The ``not_laid`` layer of a plan's export kept beside its ``proposed_main`` (a GeoPackage's layer, a
    GeoParquet export's ``NAME.not_laid.parquet``), or None: a GeoJSON export holds it in its one collection, and an
    export written before the part not laid was exported has none."""
    from layers.write import parquet_sibling

    beside = None
    if source.layer == "proposed_main" and not is_postgres(source.path):
        with quiet():
            try:
                names = [str(n) for n, _ in pyogrio.list_layers(source.path)]
            except Exception:  # noqa: BLE001 - the main's own read says what is wrong with the file
                names = []
        if "not_laid" in names:
            beside = LayerSource(source.kind, source.path, "not_laid")
    elif source.layer is None and source.path.lower().endswith(PARQUET_SUFFIXES):
        sibling = parquet_sibling(source.path, "not_laid")
        if Path(sibling).exists():
            beside = LayerSource(source.kind, sibling, None)
    if beside is None:
        return None
    try:
        return read_source(beside)
    except LayerError as exc:  # the planner is told, rather than given the main without the part it was drawn with
        raise LayerError(f"The part not laid of this plan's export cannot be read: {exc}", fix=exc.fix) from exc


def _plan_export_main(
    frame: gpd.GeoDataFrame, name: str, not_laid: gpd.GeoDataFrame | None = None
) -> tuple[gpd.GeoDataFrame, str | None]:
    """The proposed main of a plan's export, with its part not laid (``feature`` = ``not laid``, from the export's
    collection or ``not_laid`` beside it), and a note saying how it was read; any other file as it is."""
    from layers.write import CONNECTING_MAIN, NOT_LAID, PROPOSED_MAIN

    if "feature" not in frame.columns:
        return frame, None
    kinds = frame["feature"].astype("string").str.strip().str.lower()
    if not kinds.isin([PROPOSED_MAIN, CONNECTING_MAIN, NOT_LAID]).any():
        return frame, None  # a "feature" column of the user's own
    main = kinds.eq(PROPOSED_MAIN).fillna(False).to_numpy(bool)
    if not main.any():
        held = [k for k in (CONNECTING_MAIN, NOT_LAID) if kinds.eq(k).any()]
        held = " and ".join(f"part {k}" if k == NOT_LAID else k for k in held)
        raise LayerError(
            f"{name} is a plan's export without its proposed main (only its {held}): load the export "
            "as it was written, or draw the main again."
        )
    keep = main | kinds.eq(NOT_LAID).fillna(False).to_numpy(bool)
    frame = frame[keep].assign(feature=kinds[keep].to_numpy())
    if not_laid is not None and len(not_laid):
        if frame.crs is not None and not_laid.crs is not None and not not_laid.crs.equals(frame.crs):
            not_laid = not_laid.to_crs(frame.crs)
        part = gpd.GeoDataFrame(
            {"feature": [NOT_LAID] * len(not_laid)}, geometry=not_laid.geometry.values, crs=frame.crs
        )
        frame = gpd.GeoDataFrame(pd.concat([frame, part], ignore_index=True), crs=frame.crs)
    return frame, (
        f"{name} is a plan's export: its {PROPOSED_MAIN} alone was read, and its {CONNECTING_MAIN}, manholes and "
        "parcels were worked out again."
    )


# How far apart (feet) the part not laid and the proposed main of a plan's export may lie and still be joined:
# written from one point, they meet exactly; read back from degrees, to within rounding.
NOT_LAID_JOIN_FT = 0.01


def _as_drawn_again(main, parts: list, name: str, crs) -> tuple[Any, str]:
    """The proposed main of a plan's export with its parts not laid joined to it again, as the main was drawn, and
    the note saying so: evaluated again, the plan says again what is not laid (the main as laid alone was a plan that
    no longer knew of it). Each part is joined to the end of the main it meets, at most one at each end (a main drawn
    over the sewer at both ends has two). A part that no longer meets the main (the main moved in QGIS) is refused,
    never guessed at, and so are two that meet the same end."""
    import shapely

    from analysis.units import feet_per_unit
    from layers.write import NOT_LAID, PROPOSED_MAIN

    fpu = feet_per_unit(CRS(crs))
    pieces = shapely.get_parts(parts)
    pieces = pieces[shapely.length(pieces) > 0]
    # a part written as one line is one piece; pieces a planner split in QGIS are joined where they meet
    merged = pieces[0] if len(pieces) == 1 else shapely.line_merge(shapely.union_all(pieces))
    lines = list(shapely.get_parts(merged))
    ends = [shapely.Point(main.coords[0]), shapely.Point(main.coords[-1])]
    for end in ends:  # two parts meeting one end of the main were merged there: apart again, they are refused below
        lines = [half for line in lines for half in _cut_at(line, end, NOT_LAID_JOIN_FT / fpu)]
    delete = (
        f'delete them (the "{NOT_LAID}" features; in a GeoPackage, its layer not_laid) to evaluate the '
        f"{PROPOSED_MAIN} alone."
    )
    if len(lines) > 2:
        raise LayerError(
            f"{name}'s part {NOT_LAID} is in {len(lines)} pieces that do not join: each part is one line, from the "
            f"manhole where it meets an end of the {PROPOSED_MAIN}, and there is at most one at each end. Join them "
            f"end to end in QGIS, or {delete}"
        )
    own = [tuple(c[:2]) for c in main.coords]
    before, after, met = [], [], {}
    for part in lines:
        tips = [shapely.Point(part.coords[0]), shapely.Point(part.coords[-1])]
        gap, m, p = min((ends[m].distance(tips[p]), m, p) for m in (0, 1) for p in (0, 1))
        feet = part.length * fpu
        words = f"{feet:,.0f} ft" if feet >= 10 else f"{feet:.1f} ft"
        if gap * fpu > NOT_LAID_JOIN_FT:
            raise LayerError(
                f"{name}'s part {NOT_LAID} (the {words} drawn and not laid) no longer meets its {PROPOSED_MAIN}: "
                f"their nearest ends lie {gap * fpu:,.2f} ft apart, as when the main is moved after the export. Snap "
                "the part's end back to the main's end at the manhole where they met, or delete the part (the "
                f'"{NOT_LAID}" feature; in a GeoPackage, its layer not_laid) to evaluate the {PROPOSED_MAIN} alone.'
            )
        if m in met:
            raise LayerError(
                f"{name}'s part {NOT_LAID} is in 2 pieces that do not join, the {met[m]} and the {words}, both "
                f"meeting the same end of its {PROPOSED_MAIN}: there is at most one part at each end. Join them end "
                f"to end in QGIS, or {delete}"
            )
        met[m] = words
        extra = [tuple(c[:2]) for c in part.coords]
        # the part runs up to the main's first point, or on from its last (a main reversed in QGIS)
        if m == 0:
            before = (extra if p == 1 else extra[::-1])[:-1]
        else:
            after = (extra if p == 0 else extra[::-1])[1:]
    said = [met[m] for m in sorted(met)]  # from the main's first end: where it joins, as laid
    parts_said = (
        f"the {said[0]} drawn and not laid"
        if len(said) == 1
        else f"the {said[0]} and the {said[1]} drawn and not laid, one at each end,"
    )
    return shapely.LineString([*before, *own, *after]), (
        f"{name} is a plan's export: its {PROPOSED_MAIN} was read with {parts_said} joined to it "
        "again, as it was drawn, and its connecting main, manholes, parcels and what is not laid were worked out "
        "again."
    )


def _cut_at(line, point, tolerance: float) -> list:
    """``line`` cut in two where it passes ``point`` (within ``tolerance``) between its ends, else ``[line]``."""
    import shapely.ops

    at = line.project(point)
    if line.distance(point) > tolerance or not tolerance < at < line.length - tolerance:
        return [line]
    return [shapely.ops.substring(line, 0, at), shapely.ops.substring(line, at, line.length)]


def check_proposed_place(line, *, label: str, town: list[gpd.GeoDataFrame], from_file: bool = False) -> None:
    """Refuse a proposed main (in the town's measuring CRS) that lies far from the town's layers.

    Apart as a layer is apart from the rest (``layers.crs.miles_from_layers``): a main drawn miles from every parcel
    and main, most often in the wrong CRS, was evaluated with a connecting main of that many miles, newly mandated
    nobody and had every design check met.
    """
    miles = miles_from_layers(line, town)
    if miles is not None:
        raise LayerError(
            f"{label} lies {miles:,.1f} miles from the town's parcels and mains: draw it where it would be built"
            + (", in the CRS the file declares." if from_file else ".")
        )


def proposed_from_geojson(geometry: dict, *, target_crs: CRS):
    """A line drawn on the web map (GeoJSON, WGS 84 longitude/latitude) in ``target_crs``."""
    import shapely

    try:
        line = shapely.from_geojson(json.dumps(geometry))
    except Exception as exc:  # GEOS's own words ("point array must contain 0 or >1 elements") tell a planner nothing
        raise LayerError(
            "The drawn main is not a line of at least two points of longitude and latitude: draw it again."
        ) from exc
    if line is None or line.geom_type != "LineString" or len(line.coords) < 2:
        raise LayerError("Draw the proposed main as a line of at least two points.")
    from layers.crs import check_and_reproject

    # The same checks as a layer's: finite longitudes and latitudes, within where the measuring CRS is used.
    drawn = gpd.GeoDataFrame(geometry=[shapely.force_2d(line)], crs=4326)
    with np.errstate(all="ignore"):
        frame, problems = check_and_reproject(drawn, layer="proposed", label="the drawn main", target=target_crs)
    if frame is None:
        raise LayerError(" ".join(p.message for p in problems))
    return frame.geometry.iloc[0]


DRAWN_KINDS = ("Point", "MultiPoint", "LineString", "MultiLineString", "Polygon", "MultiPolygon")


def drawn_feature(geometry: dict, *, target_crs: CRS):
    """A point, line or area drawn on the web map (GeoJSON, WGS 84 longitude/latitude) in ``target_crs``.

    Refused with a sentence when it is not GeoJSON, not one of ``DRAWN_KINDS``, empty, invalid, or outside the
    longitudes and latitudes of the Earth.
    """
    import shapely

    try:
        shape = shapely.from_geojson(json.dumps(geometry))
    except Exception as exc:
        raise LayerError(f"The drawn feature is not a GeoJSON geometry: {exc}") from exc
    if shape is None or shape.geom_type not in DRAWN_KINDS or shape.is_empty:
        raise LayerError("Draw a point, a line or an area (or pick a parcel) to measure from.")
    if not shape.is_valid:
        raise LayerError("The drawn area crosses itself: draw it again without crossing its own edge.")
    west, south, east, north = shape.bounds
    if not (-180 <= west <= east <= 180 and -90 <= south <= north <= 90):
        raise LayerError("The drawn feature is not in longitude and latitude (degrees).")
    return gpd.GeoSeries([shape], crs=4326).to_crs(target_crs).iloc[0]


def to_lonlat_geojson(geoms, crs) -> list[dict]:
    """Geometries in ``crs`` as GeoJSON geometries in WGS 84, for the web map."""
    import shapely

    return [json.loads(g) for g in shapely.to_geojson(gpd.GeoSeries(list(geoms), crs=crs).to_crs(4326).values)]


def _street_hint(missing: list[str], names_known: list[str], *, shown: int = 5) -> str:
    """The bracket after "No street named ...": the close spelling of each name that has one, and, for a name with
    none, the layer's names nearest it in spelling and how many it has (a name with no close spelling was told only
    to be spelt as the layer spells it, and the layer's names are not to be seen from the command line)."""
    import difflib

    if not names_known:
        return " (it has no street names: its street_name column is empty)"
    near = {n: difflib.get_close_matches(n, names_known, n=1, cutoff=0.6) for n in missing}
    if len(missing) == 1:
        said = [f"did you mean {near[missing[0]][0]!r}?"] if near[missing[0]] else []
    else:
        said = [f"{n!r} may be {m[0]!r}" for n, m in near.items() if m]
    far = [n for n, m in near.items() if not m]
    to = f" to {', '.join(map(repr, far))}" if len(missing) > 1 else ""
    if far:
        total = len(names_known)
        if total <= shown:
            said.append(f"its {total} street name{'s' if total > 1 else ''}: {', '.join(map(repr, names_known))}")
        else:

            def likeness(known: str) -> float:
                return max(difflib.SequenceMatcher(None, n.lower(), known.lower()).ratio() for n in far)

            nearest = sorted(names_known, key=lambda k: (-likeness(k), k))[:shown]
            said.append(f"the nearest in spelling{to} of its {total:,} street names: {', '.join(map(repr, nearest))}")
    return f" ({'; '.join(said)})" if said else ""


def street_run(streets, names: str):
    """One line along the named streets' centrelines (comma-separated names), merged end to end."""
    import shapely

    if streets is None:
        raise LayerError("A run of streets needs a streets layer.")
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    known = streets["street_name"].dropna().astype(str) if "street_name" in streets else pd.Series([], dtype=str)
    chosen = streets.loc[known.index[known.str.lower().isin([n.lower() for n in wanted])]]
    # Every name must be found: a misspelt one among several was dropped, and the run planned without that street.
    missing = [n for n in wanted if n.lower() not in set(known.str.lower())]
    if missing or chosen.empty:
        missing = missing or [names]
        raise LayerError(
            f"No street named {', '.join(repr(n) for n in missing)} in the streets layer"
            + _street_hint(missing, sorted(set(known)))
            + ": give the names as the streets layer spells them, separated by commas."
        )
    merged = shapely.line_merge(shapely.union_all(chosen.geometry.values))
    if merged.geom_type != "LineString":
        raise LayerError(f"The streets {names!r} do not form one continuous run; name streets that join.")
    return merged
