"""QGIS styles for the layers sewerplan writes, kept where QGIS looks for them: the ``layer_styles`` table.

QGIS opens a layer with the default style its data source holds: a GeoPackage's ``layer_styles`` table, or a
PostGIS database's (found on the search path, ``public.layer_styles`` as QGIS creates it). sewerplan writes one
style per layer it knows, named ``sewerplan`` and marked as the default:

- ``parcel_results`` coloured by status with the web map's colours and legend (``layers.legend.STATUS_LEGEND``);
- ``mains`` by diameter (a thicker line for a larger pipe, as on the web map), ``manholes`` as small white circles;
- ``measuring_lines`` dashed red (the web map's evidence line), ``connection_points`` as red dots;
- ``building_results`` with rear buildings, buildings needing more building sewers and buildings with a finding on
  their building sewer outlined as on the web map;
- the other input layers plainly (parcels as outlines, buildings pale, streets grey), plans and reports plainly; a
  plan's crossings of existing mains as red rings, its easements needed as a broad dashed purple line, the main
  through buildings as a broad dotted red line, and the part drawn but not laid grey and dotted, as the web map
  draws them.

Labels are off in every style, and the result columns get their titles as field aliases (``layers.legend``). The
coded result columns (status, rule, grease interceptor ...) get a ValueMap editor widget, so QGIS's attribute table,
form and Identify panel show the web map's words for the codes (``layers.legend.CODED_COLUMNS``): "must connect"
where the column holds ``mandated``.
A GeoPackage also gets ``gpkg_data_columns`` (the GeoPackage schema extension): each described column's title
and meaning, which GDAL reads as the field's alternative name and comment.

``style_elements`` gives the style as XML elements, so a QGIS project (``layers.qgis_project``) embeds exactly the
same style in its layers.
"""

from __future__ import annotations

import sqlite3
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from contextlib import closing
from pathlib import Path

from layers.legend import (
    CODED_COLUMNS,
    LAYER_DESCRIPTIONS,
    RESULT_COLUMNS,
    STATUS_LEGEND,
    column,
    legend_statuses,
    recorded_profile,
)
from layers.read import LAYER_NAMES

STYLE_NAME = "sewerplan"
QGIS_VERSION = "3.22.0"
DOCTYPE = "<!DOCTYPE qgis PUBLIC 'http://mrcc.com/qgis.dtd' 'SYSTEM'>"
# The layer_styles table as QGIS creates it in a GeoPackage (through OGR) and in PostgreSQL.
GPKG_LAYER_STYLES = (
    'CREATE TABLE IF NOT EXISTS "layer_styles" ("id" INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL, '
    '"f_table_catalog" TEXT(256), "f_table_schema" TEXT(256), "f_table_name" TEXT(256), '
    '"f_geometry_column" TEXT(256), "styleName" TEXT(30), "styleQML" TEXT, "styleSLD" TEXT, "useAsDefault" BOOLEAN, '
    '"description" TEXT, "owner" TEXT(30), "ui" TEXT(30), '
    "\"update_time\" DATETIME DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')))"
)
PG_LAYER_STYLES = (
    "CREATE TABLE IF NOT EXISTS public.layer_styles (id SERIAL PRIMARY KEY, f_table_catalog varchar, "
    "f_table_schema varchar, f_table_name varchar, f_geometry_column varchar, styleName text, styleQML xml, "
    "styleSLD xml, useAsDefault boolean, description text, owner varchar(63) DEFAULT CURRENT_USER, ui xml, "
    "update_time timestamp DEFAULT CURRENT_TIMESTAMP, type varchar, r_raster_column varchar)"
)

GEOMETRY_KINDS = {"fill": 2, "line": 1, "marker": 0}


# -- symbols ------------------------------------------------------------------------------------------------------


def _rgba(hex_colour: str, alpha: float = 1.0) -> str:
    """``#d7301f`` as QGIS writes a colour: ``215,48,31,255``."""
    h = hex_colour.lstrip("#")
    return ",".join(str(int(h[i : i + 2], 16)) for i in (0, 2, 4)) + f",{round(alpha * 255)}"


def _symbol_layer(cls: str, props: dict[str, str]) -> ET.Element:
    """One symbol layer with its properties written both ways QGIS reads them (``Option`` map and ``prop``)."""
    layer = ET.Element("layer", {"class": cls, "enabled": "1", "pass": "0", "locked": "0"})
    options = ET.SubElement(layer, "Option", {"type": "Map"})
    for key, value in props.items():
        ET.SubElement(options, "Option", {"type": "QString", "name": key, "value": value})
    for key, value in props.items():
        ET.SubElement(layer, "prop", {"k": key, "v": value})
    return layer


def fill(colour: str, *, alpha: float = 1.0, outline: str = "#555555", width_mm: float = 0.15, dashed=False):
    """A fill symbol's properties: ``colour`` None for no fill (an outline)."""
    return (
        "fill",
        "SimpleFill",
        {
            "color": _rgba(colour or "#ffffff", alpha if colour else 0.0),
            "style": "solid" if colour else "no",
            "outline_color": _rgba(outline),
            "outline_style": "dash" if dashed else "solid",
            "outline_width": f"{width_mm:g}",
            "outline_width_unit": "MM",
            "joinstyle": "bevel",
        },
    )


def line(colour: str, *, width_mm: float = 0.3, dash: str | None = None, alpha: float = 1.0):
    """A line symbol's properties; ``dash`` a QGIS dash pattern in mm (``"2;1.5"``)."""
    props = {
        "line_color": _rgba(colour, alpha),
        "line_width": f"{width_mm:g}",
        "line_width_unit": "MM",
        "line_style": "dash" if dash else "solid",
        "capstyle": "round",
        "joinstyle": "round",
        "use_custom_dash": "1" if dash else "0",
        "customdash": dash or "5;2",
        "customdash_unit": "MM",
    }
    return ("line", "SimpleLine", props)


def marker(
    colour: str | None,
    *,
    size_mm: float = 2.0,
    outline: str = "#222222",
    shape: str = "circle",
    outline_mm: float = 0.2,
):
    """A point symbol's properties: ``colour`` None for no fill (a ring)."""
    props = {
        "name": shape,
        "color": _rgba(colour or "#ffffff", 1.0 if colour else 0.0),
        "outline_color": _rgba(outline),
        "outline_style": "solid",
        "outline_width": f"{outline_mm:g}",
        "outline_width_unit": "MM",
        "size": f"{size_mm:g}",
        "size_unit": "MM",
    }
    return ("marker", "SimpleMarker", props)


def _symbol(name: str, spec) -> ET.Element:
    kind, cls, props = spec
    symbol = ET.Element("symbol", {"type": kind, "name": name, "alpha": "1", "clip_to_extent": "1", "force_rhr": "0"})
    symbol.append(_symbol_layer(cls, props))
    return symbol


def _renderer(kind: str, **attrs: str) -> ET.Element:
    return ET.Element(
        "renderer-v2", {"type": kind, "symbollevels": "0", "forceraster": "0", "enableorderby": "0", **attrs}
    )


def single(spec) -> ET.Element:
    """A renderer drawing every feature with one symbol."""
    renderer = _renderer("singleSymbol")
    ET.SubElement(renderer, "symbols").append(_symbol("0", spec))
    ET.SubElement(renderer, "rotation")
    ET.SubElement(renderer, "sizescale")
    return renderer


def categorized(attr: str, categories: list[tuple[str, str, object]], source) -> ET.Element:
    """A renderer colouring by the value of ``attr``: ``categories`` are (value, legend label, symbol spec)."""
    renderer = _renderer("categorizedSymbol", attr=attr)
    cats = ET.SubElement(renderer, "categories")
    symbols = ET.SubElement(renderer, "symbols")
    for i, (value, label, spec) in enumerate(categories):
        ET.SubElement(cats, "category", {"render": "true", "symbol": str(i), "value": value, "label": label})
        symbols.append(_symbol(str(i), spec))
    ET.SubElement(renderer, "source-symbol").append(_symbol("0", source))
    ET.SubElement(renderer, "rotation")
    ET.SubElement(renderer, "sizescale")
    return renderer


def rules(entries: list[tuple[str, str, object]]) -> ET.Element:
    """A rule-based renderer: (filter expression or ``ELSE``, legend label, symbol spec), first match drawn."""
    renderer = _renderer("RuleRenderer")
    root = ET.SubElement(renderer, "rules", {"key": "{root}"})
    symbols = ET.SubElement(renderer, "symbols")
    for i, (expression, label, spec) in enumerate(entries):
        ET.SubElement(root, "rule", {"key": f"{{rule-{i}}}", "filter": expression, "symbol": str(i), "label": label})
        symbols.append(_symbol(str(i), spec))
    return renderer


# -- the styles ---------------------------------------------------------------------------------------------------

# Web map: parcels outlined #555 at 0.6 px, filled with the status colour at 60 % opacity.
PARCEL_FILL_ALPHA = 0.6
# Mains by diameter (inches): upper bound of each class, its legend label and its line width in mm.
MAIN_CLASSES = (
    (6.0, "up to 6 in", 0.35),
    (8.0, "8 in", 0.55),
    (12.0, "10 to 12 in", 0.8),
    (18.0, "15 to 18 in", 1.1),
    (None, "21 in and larger", 1.5),
)
MAIN_COLOUR = "#3a3a3a"


def _parcel_results(statuses: Iterable[str] | None = None) -> ET.Element:
    """Parcels by status: a category for each of ``statuses`` (``layers.legend.legend_statuses``, what the web map's
    legend lists for the run's profile), every status where they are not known."""
    categories = [
        (status, STATUS_LEGEND[status].label, fill(STATUS_LEGEND[status].colour, alpha=PARCEL_FILL_ALPHA))
        for status in (legend_statuses(None) if statuses is None else statuses)
    ]
    return categorized("status", categories, fill("#999999", alpha=PARCEL_FILL_ALPHA))


def _mains(fields: set[str]) -> ET.Element:
    if "diameter_in" not in fields:
        return single(line(MAIN_COLOUR, width_mm=0.5))
    entries, lower = [], None
    for upper, label, width in MAIN_CLASSES:
        test = []
        if lower is not None:
            test.append(f'"diameter_in" > {lower:g}')
        if upper is not None:
            test.append(f'"diameter_in" <= {upper:g}')
        entries.append((" AND ".join(test), label, line(MAIN_COLOUR, width_mm=width)))
        lower = upper
    entries.append(("ELSE", "diameter not given", line(MAIN_COLOUR, width_mm=0.45, dash="1;1")))
    return rules(entries)


def _building_results(fields: set[str]) -> ET.Element:
    entries = []
    if "rear_building" in fields:
        entries.append(
            ('"rear_building"', "rear building", fill("#fafafa", alpha=0.8, outline="#7b3294", width_mm=0.6))
        )
    if "required_laterals" in fields:
        entries.append(
            (
                '"required_laterals" > 1',
                "needs more building sewers",
                fill("#fafafa", alpha=0.8, outline="#e66101", width_mm=0.6, dashed=True),
            )
        )
    # As the web map outlines them and its legend words them: a building sewer below the standard, or a connection
    # at a manhole for the administrative body to decide.
    findings = [f'"{name}"' for name in ("lateral_below_standard", "manhole_connection_case") if name in fields]
    if findings:
        entries.append(
            (
                " OR ".join(findings),
                "a finding on its building sewer",
                fill("#fafafa", alpha=0.8, outline="#b2182b", width_mm=0.6),
            )
        )
    if not entries:
        return single(fill("#fafafa", alpha=0.8, outline="#444444"))
    return rules([*entries, ("ELSE", "building", fill("#fafafa", alpha=0.8, outline="#444444"))])


# Layer kind (a result layer's name, else an input layer's kind) -> (what the style shows, renderer maker).
_STYLES = {
    "parcel_results": ("parcels coloured by status, as on the web map", lambda f: _parcel_results()),
    "measuring_lines": ("measuring lines, dashed", lambda f: single(line("#e41a1c", width_mm=0.5, dash="2;1.5"))),
    "connection_points": ("connection points on the mains", lambda f: single(marker("#e41a1c", size_mm=1.4))),
    "building_results": (
        "buildings: rear buildings, buildings needing more building sewers, findings on building sewers",
        _building_results,
    ),
    "mains": ("sewer mains by diameter", _mains),
    "manholes": ("manholes", lambda f: single(marker("#ffffff", size_mm=1.8))),
    "outfalls": ("treatment plants and outfalls", lambda f: single(marker("#756bb1", size_mm=3.5, outline="#000000"))),
    "parcels": ("parcel lines", lambda f: single(fill(None, outline="#777777", width_mm=0.2))),
    "buildings": ("buildings", lambda f: single(fill("#fafafa", alpha=0.8, outline="#444444"))),
    "streets": ("streets", lambda f: single(line("#c8c8c8", width_mm=1.2))),
    "alleys": ("alleys, courts, yards and driveways", lambda f: single(line("#9e9e9e", width_mm=0.4, dash="1;1"))),
    "laterals": ("building sewers", lambda f: single(line("#636363", width_mm=0.25))),
    "service_areas": ("sewer service areas", lambda f: single(fill(None, outline="#31a354", width_mm=0.5))),
    "curbs": ("curbs", lambda f: single(line("#969696", width_mm=0.25))),
    "sewer_rights_of_way": ("sewer rights-of-way", lambda f: single(fill(None, outline="#8c6bb1", width_mm=0.4))),
    "subdivisions": ("proposed subdivisions", lambda f: single(fill(None, outline="#e7298a", width_mm=0.5))),
    "network_report": ("network defects", lambda f: single(marker("#e31a1c", size_mm=2.5, shape="triangle"))),
    "proposed_main": ("the proposed main", lambda f: single(line("#1f78b4", width_mm=1.0))),
    "proposed_manholes": ("proposed manholes", lambda f: single(marker("#ffffff", size_mm=2.2, outline="#1f78b4"))),
    "newly_mandated": ("parcels newly required to connect", lambda f: single(fill("#e31a1c", alpha=0.25))),
    "benefiting_parcels": ("parcels that benefit", lambda f: single(fill(None, outline="#ff7f00", width_mm=0.5))),
    # as on the web map's plan: a red ring where the main meets an existing main, purple where an easement is needed
    "main_crossings": (
        "where the proposed main meets an existing main away from a manhole",
        lambda f: single(marker(None, size_mm=4.0, outline="#e31a1c", outline_mm=0.6)),
    ),
    "easements_needed": (
        "the proposed main across private parcels (easements needed)",
        lambda f: single(line("#6a3d9a", width_mm=1.6, dash="2;1")),
    ),
    "buildings_crossed": (
        "the proposed main through buildings",
        lambda f: single(line("#e31a1c", width_mm=1.6, dash="1;1")),
    ),
    # grey and dotted, as the web map's plan draws it: the blue line is the main as laid
    "not_laid": ("the part drawn but not laid", lambda f: single(line("#777777", width_mm=0.8, dash="1;2"))),
}
_BY_NAME = {name: kind for kind, names in LAYER_NAMES.items() for name in names}


def style_kind(layer: str) -> str | None:
    """The style a layer of that name gets: a result layer's own, an input layer's kind (by its name), or None."""
    name = layer.lower()
    if name in _STYLES:
        return name
    return _BY_NAME.get(name)


def style_elements(
    layer: str, fields: Iterable[str] = (), *, statuses: Iterable[str] | None = None
) -> list[ET.Element] | None:
    """The elements of a layer's style (renderer, aliases ...), or None for a layer sewerplan has no style for.

    ``statuses``: the parcel statuses ``parcel_results``' legend lists, those the web map's legend lists for the
    run's profile (``layers.legend.legend_statuses``); every status where not given. Under Wappinger, whose
    § 196-17E has no abutting-street test, QGIS listed "in range not abutting" as if the test were made."""
    kind = style_kind(layer)
    if kind is None:
        return None
    fields = set(fields)
    renderer = _parcel_results(statuses) if kind == "parcel_results" else _STYLES[kind][1](fields)
    elements = [renderer]
    for name, value in (("blendMode", "0"), ("featureBlendMode", "0"), ("layerOpacity", "1")):
        element = ET.Element(name)
        element.text = value
        elements.append(element)
    coded = value_maps(kind, fields)
    if coded is not None:
        elements.append(coded)
    aliases = ET.Element("aliases")
    for index, name in enumerate(sorted(fields)):
        described = column(layer, name)
        if described is not None and described.title != name:
            ET.SubElement(aliases, "alias", {"field": name, "index": str(index), "name": described.title})
    elements.append(aliases)
    elements.append(ET.Element("legend", {"type": "default-vector", "showLabelLegend": "0"}))
    return elements


# How QGIS's ValueMap widget writes NULL as a value stored (``QgsValueMapFieldFormatter::NULL_VALUE``).
VALUE_MAP_NULL = "{2839923C-8B7D-419E-B84B-CA2FE9B80EC7}"


def value_maps(kind: str, fields: Iterable[str]) -> ET.Element | None:
    """QGIS's ``fieldConfiguration``: a ValueMap editor widget on each coded column of ``fields`` the layer has
    (``layers.legend.CODED_COLUMNS``), so the attribute table, the form and the Identify panel show the web map's
    words ("must connect") while the column keeps its code (``mandated``); None for a layer with none.

    QGIS reads a ValueMap's ``map`` as a list of one-entry maps, each from the words shown to the value stored. It
    shows a value the map lacks in brackets, so each map has an entry for NULL: an empty cell still shows "NULL",
    not "(NULL)".

    Examples
    --------
    >>> config = value_maps("parcel_results", ["status", "reason"])
    >>> [f.get("name") for f in config], config.find("field/editWidget").get("type")
    (['status'], 'ValueMap')
    >>> config.find("field//Option[@value='mandated']").get("name")
    'must connect'
    """
    columns, fields = CODED_COLUMNS.get(kind, {}), set(fields)
    present = [name for name in columns if name in fields]
    if not present:
        return None
    config = ET.Element("fieldConfiguration")
    for name in present:
        field = ET.SubElement(config, "field", {"name": name, "configurationFlags": "None"})
        widget = ET.SubElement(ET.SubElement(field, "editWidget", {"type": "ValueMap"}), "config")
        entries = ET.SubElement(
            ET.SubElement(widget, "Option", {"type": "Map"}), "Option", {"type": "List", "name": "map"}
        )
        for code, words in [*columns[name].items(), (VALUE_MAP_NULL, "NULL")]:
            ET.SubElement(
                ET.SubElement(entries, "Option", {"type": "Map"}),
                "Option",
                {"type": "QString", "name": words, "value": code},
            )
    return config


def style_description(layer: str) -> str:
    kind = style_kind(layer)
    return f"sewerplan: {_STYLES[kind][0]}; labels off" if kind else ""


def qml(layer: str, fields: Iterable[str] = (), *, statuses: Iterable[str] | None = None) -> str | None:
    """A layer's QGIS style document (QML), or None for a layer sewerplan has no style for; ``statuses`` as for
    ``style_elements``."""
    elements = style_elements(layer, fields, statuses=statuses)
    if elements is None:
        return None
    root = ET.Element("qgis", {"version": QGIS_VERSION, "labelsEnabled": "0", "styleCategories": "AllStyleCategories"})
    root.extend(elements)
    ET.indent(root, " ")
    return DOCTYPE + "\n" + ET.tostring(root, encoding="unicode") + "\n"


def run_statuses(run: Mapping | None, counts: Mapping[str, int] | None = None) -> list[str]:
    """The statuses ``parcel_results``' legend lists for the results of ``run`` (its record) with ``counts`` parcels
    of each status: as the web map's legend, those its profile as the run applied it can give, and any a parcel has
    (``layers.legend.legend_statuses``); every status where the run or its profile is not known.

    Examples
    --------
    >>> run_statuses({"workspace": {"profile": "wappinger"}})
    ['connected', 'mandated', 'out_of_range', 'unoccupied', 'no_public_sewer']
    >>> len(run_statuses(None))
    6
    """
    return legend_statuses(recorded_profile(run), counts=counts)


# -- GeoPackage ---------------------------------------------------------------------------------------------------


def style_geopackage(path: str | Path, layers: Iterable[str] | None = None, *, run: Mapping | None = None) -> list[str]:
    """Write the default QGIS style of each layer of a GeoPackage sewerplan has a style for; returns those layers.

    ``layers`` limits it to some layers (all spatial layers by default). A style sewerplan wrote before for the
    same layer is replaced; styles saved under other names (a planner's own) are kept. The column titles and
    meanings go into ``gpkg_data_columns`` at the same time. ``run``: the record of the run whose results these
    are, so ``parcel_results``' legend lists the statuses the web map's lists (``run_statuses``); without it, every
    status.
    """
    with closing(sqlite3.connect(str(path))) as con, con:
        found = con.execute("SELECT table_name, column_name FROM gpkg_geometry_columns").fetchall()
        wanted = None if layers is None else {str(n) for n in layers}
        styled = []
        for table, geom in found:
            if wanted is not None and table not in wanted:
                continue
            fields = [row[1] for row in con.execute(f'PRAGMA table_info("{table}")') if row[1] not in (geom, "fid")]
            statuses = None
            if run is not None and style_kind(table) == "parcel_results" and "status" in fields:
                counts = dict(con.execute(f'SELECT status, COUNT(*) FROM "{table}" GROUP BY status').fetchall())
                statuses = run_statuses(run, counts)
            document = qml(table, fields, statuses=statuses)
            if document is None:
                continue
            if not styled:
                _prepare_gpkg(con)
            con.execute(
                "DELETE FROM layer_styles WHERE f_table_name = ? AND f_geometry_column = ? AND styleName = ?",
                (table, geom, STYLE_NAME),
            )
            con.execute("UPDATE layer_styles SET useAsDefault = 0 WHERE f_table_name = ?", (table,))
            con.execute(
                "INSERT INTO layer_styles (f_table_catalog, f_table_schema, f_table_name, f_geometry_column, "
                "styleName, styleQML, styleSLD, useAsDefault, description, owner, ui) "
                "VALUES ('', '', ?, ?, ?, ?, '', 1, ?, '', '')",
                (table, geom, STYLE_NAME, document, style_description(table)),
            )
            _describe_gpkg_columns(con, table, fields)
            styled.append(table)
        return styled


def _prepare_gpkg(con: sqlite3.Connection) -> None:
    """``layer_styles`` registered as an attribute table, and the schema extension's ``gpkg_data_columns``."""
    con.execute(GPKG_LAYER_STYLES)
    con.execute(
        "INSERT OR IGNORE INTO gpkg_contents (table_name, data_type, identifier, description, last_change) "
        "VALUES ('layer_styles', 'attributes', 'layer_styles', '', strftime('%Y-%m-%dT%H:%M:%fZ','now'))"
    )
    con.execute(
        "CREATE TABLE IF NOT EXISTS gpkg_data_columns (table_name TEXT NOT NULL, column_name TEXT NOT NULL, "
        "name TEXT, title TEXT, description TEXT, mime_type TEXT, constraint_name TEXT, "
        "CONSTRAINT pk_gdc PRIMARY KEY (table_name, column_name), CONSTRAINT gdc_tn UNIQUE (table_name, name))"
    )
    con.execute(
        "CREATE TABLE IF NOT EXISTS gpkg_data_column_constraints (constraint_name TEXT NOT NULL, "
        "constraint_type TEXT NOT NULL, value TEXT, min NUMERIC, min_is_inclusive BOOLEAN, max NUMERIC, "
        "max_is_inclusive BOOLEAN, description TEXT, "
        "CONSTRAINT gdcc_ntv UNIQUE (constraint_name, constraint_type, value))"
    )
    con.execute(
        "CREATE TABLE IF NOT EXISTS gpkg_extensions (table_name TEXT, column_name TEXT, extension_name TEXT NOT NULL, "
        "definition TEXT NOT NULL, scope TEXT NOT NULL, "
        "CONSTRAINT ge_tce UNIQUE (table_name, column_name, extension_name))"
    )
    for table in ("gpkg_data_columns", "gpkg_data_column_constraints"):
        con.execute(
            "INSERT INTO gpkg_extensions (table_name, column_name, extension_name, definition, scope) "
            "SELECT ?, NULL, 'gpkg_schema', 'http://www.geopackage.org/spec/#extension_schema', 'read-write' "
            "WHERE NOT EXISTS (SELECT 1 FROM gpkg_extensions WHERE table_name = ? AND extension_name = 'gpkg_schema')",
            (table, table),
        )


def _describe_gpkg_columns(con: sqlite3.Connection, table: str, fields: list[str]) -> None:
    rows = []
    for name in fields:
        described = column(table, name)
        if described is not None:
            rows.append((table, name, name, described.title, described.description))
    con.execute("DELETE FROM gpkg_data_columns WHERE table_name = ?", (table,))
    con.executemany(
        "INSERT INTO gpkg_data_columns (table_name, column_name, name, title, description) VALUES (?, ?, ?, ?, ?)",
        rows,
    )


__all__ = [
    "LAYER_DESCRIPTIONS",
    "PG_LAYER_STYLES",
    "RESULT_COLUMNS",
    "STYLE_NAME",
    "qml",
    "run_statuses",
    "style_description",
    "style_elements",
    "style_geopackage",
    "style_kind",
    "value_maps",
]
