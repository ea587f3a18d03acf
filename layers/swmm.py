"""Read an EPA SWMM 5 input file (.inp) into mains and manholes layers.

A .inp file states its topology: every link names its From and To node. Nothing here snaps, splits or joins by
geometry; the network is built from the names (``analysis.network`` does so for any mains that carry a
``swmm_section`` column).

- Nodes come from [JUNCTIONS], [STORAGE], [DIVIDERS] and [OUTFALLS] (``structure`` junction, storage, divider,
  outfall), placed by [COORDINATES]. The model's [OUTFALLS] are its outfalls, and the only ones.
- Links come from every link section: [CONDUITS], [PUMPS], [ORIFICES], [WEIRS] and [OUTLETS] (``link_kind``
  conduit, pump, orifice, weir, outlet; pumps are force mains), shaped by [VERTICES] between their end nodes for
  display only. Each keeps the model's From and To as its direction. A conduit of SWMM's FORCE_MAIN cross-section
  is a force main too (``sewer_type`` force: pressurised, it may rise). Conduits whose cross-section is a street or
  an open channel are ``channel`` links (not pipes: no pipe design rule applies to them). A street inlet
  ([INLET_USAGE]) is a link too (``inlet``): SWMM moves the flow it captures from its street conduit's downstream
  node to the sewer node.
- Lengths are the model's: a conduit's Length field (schematic drawings can be many times longer or shorter than
  the pipe), converted to feet; pumps, orifices, weirs, outlets and inlets have no length in SWMM and get 0 ft.
- Conduit inverts are node invert + the link's offset (``LINK_OFFSETS DEPTH``, the default) or the offset itself
  (``LINK_OFFSETS ELEVATION``).
- Sizes: ``diameter_in`` is the smallest inside dimension of one barrel (a round pipe's Geom1; a box's least of
  height and width; an egg's width, 2/3 of its height, as SWMM sizes it), which the design rules use; where a
  conduit is not one round pipe, ``swmm_size`` says its size as the model gives it ("2 x 12 in", "RECT_CLOSED 24 in
  high x 36 in wide").
- ``inlet_offset_ft``: how far above its From node's invert each link takes flow (a conduit's InOffset, an
  orifice's or outlet's Offset, a weir's CrestHt, in either offset convention; a pump's Startup depth). Where a
  node has several ways out, traces follow the lowest: the others are overflows.
- ``swmm_controls``: the [CONTROLS] rules that act on a link (open, close, start, stop or set it), by name;
  sewerplan does not run them (``network check`` names the links, ``control_rules``).
- ``swmm_storm_evidence`` (the same on every link): what says the model is a storm drainage model, or None:
  street inlets or street conduits, and no dry-weather flow ([DWF], or a baseline in [INFLOWS]).
- ``diverted``: the link a [DIVIDERS] node names as its DivLink, which takes only the flow the divider sends aside;
  traces go on by the divider's other link.

Every line is read as SWMM reads it (``tokens``): a name in double quotes may hold spaces (``"MH 12"``), and a
``;`` starts a comment.

Elevations, lengths and sizes are converted to feet and inches from the model's units: [OPTIONS] FLOW_UNITS CFS,
GPM and MGD models are in feet, CMS, LPS and MLD models in metres. A SWMM file records no CRS: the user gives it,
or says the coordinates are the model's own (``LOCAL_CRS``), which many schematic models' are.
"""

from __future__ import annotations

import re
from pathlib import Path

import geopandas as gpd
import numpy as np
import shapely
from pyproj import CRS

from layers.errors import LayerError

METRIC_FLOW_UNITS = {"CMS", "LPS", "MLD"}
M_TO_FT = 3937 / 1200  # US survey feet per metre (for elevations and lengths); diameters use the same factor x 12
LINK_SECTIONS = (
    ("CONDUITS", "conduit"),
    ("PUMPS", "pump"),
    ("ORIFICES", "orifice"),
    ("WEIRS", "weir"),
    ("OUTLETS", "outlet"),
)
# Where a link's inlet height above its From node's invert is written in its row (fields after the name): a
# conduit's InOffset, an orifice's Offset, a weir's CrestHt, an outlet's Offset (each a depth, or an elevation
# under LINK_OFFSETS ELEVATION, as SWMM's link_convertOffsets reads them); a pump's Startup depth (always a depth).
INLET_FIELDS = {"CONDUITS": 4, "ORIFICES": 3, "WEIRS": 3, "OUTLETS": 2}
PUMP_STARTUP_FIELD = 4
# Conduit cross-sections that are not pipes: streets and open channels (SWMM's open shapes).
OPEN_SHAPES = {"STREET", "RECT_OPEN", "TRAPEZOIDAL", "TRIANGULAR", "PARABOLIC", "POWER", "IRREGULAR"}
# A closed conduit's widest width as a share of its height (Geom1), for the shapes SWMM sizes by their height alone
# (SWMM 5's xsect_setParams: wMax). Shapes whose width is their Geom2 are listed apart; circles are their Geom1.
WIDTH_PER_HEIGHT = {
    "EGG": 2 / 3,
    "HORSESHOE": 1.0,
    "GOTHIC": 0.84,
    "CATENARY": 0.9,
    "SEMIELLIPTICAL": 1.0,
    "BASKETHANDLE": 0.944,
    "SEMICIRCULAR": 1.64,
}
WIDTH_IN_GEOM2 = {"RECT_CLOSED", "RECT_TRIANGULAR", "RECT_ROUND", "MODBASKETHANDLE"}
# Shapes that take a standard size code (Geom3) or their Geom2 as the width.
SIZE_CODED = {"HORIZ_ELLIPSE", "VERT_ELLIPSE", "ARCH"}
ROUND_SHAPES = {"CIRCULAR", "FORCE_MAIN", "FILLED_CIRCULAR"}
# The links a [CONTROLS] rule's action can set (SWMM 5.2: a conduit's setting too).
CONTROLLED = {"PUMP", "ORIFICE", "WEIR", "OUTLET", "CONDUIT"}
# Sections read row by row, not by their first field.
ROW_SECTIONS = {"CONTROLS", "DWF", "INFLOWS"}
# Where an [INFLOWS] row gives its constant baseline (fields after the node: Constituent, TimeSeries, Type,
# Mfactor, Sfactor, Baseline) and a [DWF] row its average (Constituent, Baseline).
INFLOW_BASELINE_FIELD, DWF_BASELINE_FIELD = 5, 1
NODE_SECTIONS = (("JUNCTIONS", "junction"), ("STORAGE", "storage"), ("DIVIDERS", "divider"), ("OUTFALLS", "outfall"))

# The coordinates of a schematic model, taken as they are: an engineering CRS with no place on Earth. Layers in it
# are never reprojected; lengths come from the model, and nothing that needs a real place (a map, a distance to a
# parcel) can be made from them.
LOCAL_CRS = CRS.from_wkt(
    'ENGCRS["Model coordinates (no real-world CRS)",EDATUM["Model datum"],CS[Cartesian,2],'
    'AXIS["easting (X)",east,ORDER[1],LENGTHUNIT["US survey foot",0.304800609601219]],'
    'AXIS["northing (Y)",north,ORDER[2],LENGTHUNIT["US survey foot",0.304800609601219]]]'
)


def is_local(crs) -> bool:
    """True for layers in the model's own coordinates (``LOCAL_CRS``)."""
    return crs is not None and CRS(crs).equals(LOCAL_CRS)


def read_inp(path: str) -> dict[str, gpd.GeoDataFrame]:
    """``{"mains": ..., "manholes": ...}`` from a SWMM .inp file, without a CRS."""
    sections = _sections(Path(path))
    _refuse_repeated_names(path, sections)
    options = sections.get("OPTIONS", {})
    metric = _field(options.get("FLOW_UNITS", []), 0, "CFS").upper() in METRIC_FLOW_UNITS
    to_ft = M_TO_FT if metric else 1.0
    offsets_are_elevations = _field(options.get("LINK_OFFSETS", []), 0, "DEPTH").upper() == "ELEVATION"

    nodes: dict[str, tuple[float, str]] = {}
    for section, structure in NODE_SECTIONS:
        for name, fields in sections.get(section, {}).items():
            nodes[name] = (_float(_field(fields, 0)) * to_ft, structure)
    coords = {name: (_float(_field(f, 0)), _float(_field(f, 1))) for name, f in sections.get("COORDINATES", {}).items()}
    missing = sorted(n for n in nodes if n not in coords or not np.isfinite(coords[n]).all())
    if missing:
        raise LayerError(f"{path}: node(s) {', '.join(missing[:10])} have no [COORDINATES] (x and y).")
    vertices: dict[str, list[tuple[float, float]]] = sections.get("VERTICES", {})
    xsections = sections.get("XSECTIONS", {})

    # A flow divider sends flow aside into its DivLink (above a cutoff, by a curve, or what overflows the other
    # link); what it does not divert goes on by its other link.
    diverted_by = {name: _field(fields, 1) for name, fields in sections.get("DIVIDERS", {}).items()}
    ruled = _controlled_links(sections.get("CONTROLS", {}).get("rows", []))
    storm = _storm_evidence(sections)

    rows, geoms, unknown = [], [], []
    for section, kind in LINK_SECTIONS:
        for name, f in sections.get(section, {}).items():
            if len(f) < 2:
                raise LayerError(f"{path}: link {name} in [{section}] names no From and To node.")
            frm, to = f[0], f[1]
            if frm not in nodes or to not in nodes:
                unknown.append(f"{name} ({frm} -> {to})")
                continue
            conduit = section == "CONDUITS"
            shape = _field(xsections.get(name, []), 0, "?").upper()
            # a street or open channel is one of the model's conduits, but no pipe
            link_kind = "channel" if conduit and shape in OPEN_SHAPES else kind
            pipe = link_kind == "conduit"
            diameter_in, size = _size(xsections.get(name, []), to_ft) if pipe else (np.nan, None)
            rows.append(
                {
                    "main_id": name,
                    "from_manhole": frm,
                    "to_manhole": to,
                    "sewer_type": "force" if kind == "pump" or shape == "FORCE_MAIN" else "sanitary",
                    "link_kind": link_kind,
                    "length_ft": _float(_field(f, 2)) * to_ft if conduit else 0.0,
                    "diameter_in": diameter_in,
                    "swmm_size": size,
                    "us_invert_ft": _invert(nodes[frm][0], f, 4, to_ft, offsets_are_elevations) if conduit else np.nan,
                    "ds_invert_ft": _invert(nodes[to][0], f, 5, to_ft, offsets_are_elevations) if conduit else np.nan,
                    "inlet_offset_ft": _inlet_height(section, nodes[frm][0], f, to_ft, offsets_are_elevations),
                    "diverted": diverted_by.get(frm) == name,
                    "swmm_controls": ", ".join(ruled[name]) if name in ruled else None,
                    "swmm_storm_evidence": storm,
                    "swmm_section": section,
                }
            )
            geoms.append(shapely.LineString([coords[frm], *vertices.get(name, []), coords[to]]))
    # A street inlet sends the flow it captures from its conduit's downstream node to a sewer node: a link too.
    to_node = {r["main_id"]: r["to_manhole"] for r in rows}
    for conduit, f in sections.get("INLET_USAGE", {}).items():
        if len(f) < 2:
            raise LayerError(f"{path}: [INLET_USAGE] {conduit} names no inlet and receiving node.")
        inlet, node = f[0], f[1]
        if conduit not in to_node or node not in nodes:
            unknown.append(f"inlet {inlet} on {conduit} (-> {node})")
            continue
        rows.append(
            {
                "main_id": f"{conduit}:{inlet}",
                "from_manhole": to_node[conduit],
                "to_manhole": node,
                "sewer_type": "sanitary",
                "link_kind": "inlet",
                "length_ft": 0.0,
                "diameter_in": np.nan,
                "swmm_size": None,
                "us_invert_ft": np.nan,
                "ds_invert_ft": np.nan,
                "inlet_offset_ft": 0.0,
                "diverted": False,
                "swmm_controls": None,
                "swmm_storm_evidence": storm,
                "swmm_section": "INLET_USAGE",
            }
        )
        geoms.append(shapely.LineString([coords[to_node[conduit]], coords[node]]))
    if unknown:
        raise LayerError(
            f"{path}: link(s) {', '.join(unknown[:10])} join nodes that are in no node section ([JUNCTIONS], "
            "[STORAGE], [DIVIDERS], [OUTFALLS])."
        )
    if not rows:
        raise LayerError(f"{path} has no links ([CONDUITS], [PUMPS], ...): is it a SWMM input file?")
    mains = gpd.GeoDataFrame(rows, geometry=geoms, crs=None)
    manholes = gpd.GeoDataFrame(
        {
            "manhole_id": list(nodes),
            "invert_ft": [v[0] for v in nodes.values()],
            "structure": [v[1] for v in nodes.values()],
        },
        geometry=[shapely.Point(coords[n]) for n in nodes],
        crs=None,
    )
    return {"mains": mains, "manholes": manholes}


def _storm_evidence(sections: dict) -> str | None:
    """What in the model says it drains streets and carries no sewage (a storm drainage model), or None.

    Both must hold: street inlets ([INLET_USAGE]) or street conduits (the STREET cross-section), and no dry-weather
    flow anywhere: no [DWF] flow and no constant baseline flow in [INFLOWS]. A combined sewer drains streets too, but
    carries sewage in dry weather, which its model states; a sanitary model has no street inlets. A model that
    states neither (most models of rain alone, Bellinge's among them) says nothing either way, and gets None.
    """
    inlets = len(sections.get("INLET_USAGE", {}))
    xsections = sections.get("XSECTIONS", {})
    streets = sum(_field(xsections.get(name, []), 0).upper() == "STREET" for name in sections.get("CONDUITS", {}))
    if not (inlets or streets):
        return None

    def flows(rows: list[list[str]], baseline: int) -> bool:
        return any(
            _field(f, 1).upper() == "FLOW" and _float(_field(f, 1 + baseline, "0")) > 0 for f in rows if len(f) > 1
        )

    if flows(sections.get("DWF", {}).get("rows", []), DWF_BASELINE_FIELD) or flows(
        sections.get("INFLOWS", {}).get("rows", []), INFLOW_BASELINE_FIELD
    ):
        return None
    said = [f"{inlets} street inlet{'s' if inlets != 1 else ''} ([INLET_USAGE])"] if inlets else []
    said += [f"{streets} street conduit{'s' if streets != 1 else ''} (STREET cross-section)"] if streets else []
    return " and ".join(said)


def _controlled_links(rows: list[list[str]]) -> dict[str, list[str]]:
    """The links the model's [CONTROLS] rules act on, each with the rules that do (in the order they are written).

    A rule's actions are its THEN and ELSE clauses and the AND clauses that follow them: ``THEN PUMP P1 STATUS =
    ON``, ``ELSE ORIFICE OR1 SETTING = 0.5``. Its IF conditions name the nodes and links it watches, which it does
    not change.

    Examples
    --------
    >>> rows = [["RULE", "R1"], ["IF", "NODE", "SU1", "DEPTH", ">", "4"], ["AND", "LINK", "C1", "FLOW", ">", "1"],
    ...         ["THEN", "PUMP", "P1", "STATUS", "=", "ON"], ["AND", "ORIFICE", "OR1", "SETTING", "=", "0"],
    ...         ["ELSE", "PUMP", "P1", "STATUS", "=", "OFF"], ["PRIORITY", "1"]]
    >>> _controlled_links(rows)
    {'P1': ['R1'], 'OR1': ['R1']}
    """
    found: dict[str, list[str]] = {}
    rule, acting = "", False
    for fields in rows:
        word = fields[0].upper()
        if word == "RULE":
            rule, acting = _field(fields, 1), False
        elif word in ("IF", "PRIORITY"):
            acting = False
        elif word in ("THEN", "ELSE"):
            acting = True
        if acting and word in ("THEN", "ELSE", "AND") and len(fields) >= 3 and fields[1].upper() in CONTROLLED:
            rules = found.setdefault(fields[2], [])
            if rule not in rules:
                rules.append(rule)
    return found


def _size(xsection: list, to_ft: float) -> tuple[float, str | None]:
    """A conduit's size for the design rules (in) and, where it is not one round pipe, the size said as the model
    gives it ("2 x 12 in", "RECT_CLOSED 24 in high x 36 in wide"; None for one round pipe, said by its diameter).

    The size for the rules is the smallest inside dimension of one barrel: the least diameter is there so a sewer
    can be cleaned and does not clog, and each barrel is cleaned on its own, and clogs at its narrowest. NaN where
    the model does not give it (a standard size code, a custom shape).

    Examples
    --------
    >>> _size(["CIRCULAR", "1"], 1.0)
    (12.0, None)
    >>> _size(["CIRCULAR", "0.5", "0", "0", "0", "2"], 1.0)
    (6.0, '2 x 6 in')
    >>> _size(["RECT_CLOSED", "2", "3"], 1.0)
    (24.0, 'RECT_CLOSED 24 in high x 36 in wide')
    >>> _size(["EGG", "1.5"], 1.0)
    (12.0, 'EGG 18 in high x 12 in wide')
    >>> _size(["DUMMY"], 1.0)
    (nan, None)
    >>> _size(["HORIZ_ELLIPSE", "3"], 1.0), _size(["RECT_CLOSED", "2"], 1.0)
    ((nan, 'HORIZ_ELLIPSE, standard size code 3'), (nan, 'RECT_CLOSED'))
    """
    shape = _field(xsection, 0, "CIRCULAR").upper()
    inches = to_ft * 12
    height = _float(_field(xsection, 1)) * inches
    barrels = _float(_field(xsection, 5, "1"))
    barrels = int(barrels) if np.isfinite(barrels) and barrels >= 1 else 1
    if shape in ROUND_SHAPES:
        size, said = height, f"{height:g} in"
    elif shape in SIZE_CODED and (_float(_field(xsection, 2, "0")) == 0 or _float(_field(xsection, 3, "0")) > 0):
        # a standard size, by its code in a table of SWMM's (Geom3; Geom1 where Geom2 is 0)
        code = _field(xsection, 1) if _float(_field(xsection, 2, "0")) == 0 else _field(xsection, 3)
        size, said = np.nan, f"{shape}, standard size code {code}"
    elif shape in WIDTH_PER_HEIGHT or shape in WIDTH_IN_GEOM2 or shape in SIZE_CODED:
        width = height * WIDTH_PER_HEIGHT[shape] if shape in WIDTH_PER_HEIGHT else _float(_field(xsection, 2)) * inches
        size = min(height, width) if np.isfinite(height) and np.isfinite(width) else np.nan
        said = f"{shape} {height:.3g} in high x {width:.3g} in wide" if np.isfinite(size) else shape
    elif shape == "DUMMY":  # a link with no cross-section at all
        return np.nan, None
    else:  # CUSTOM and any other closed shape: its height alone
        size, said = np.nan, f"{shape} {height:g} in high" if np.isfinite(height) else shape
    if barrels > 1:
        said = f"{barrels} x {said}"
    return size, (None if shape in ROUND_SHAPES and barrels == 1 else said)


def _field(fields: list, i: int, default: str = "") -> str:
    """The ``i``-th field of a row, or ``default`` where the row is short."""
    return fields[i] if len(fields) > i else default


def _invert(node_invert_ft: float, fields: list, i: int, to_ft: float, elevations: bool) -> float:
    """A conduit end's invert: the node's invert plus the offset (or the offset as an elevation; ``*`` = none)."""
    if len(fields) <= i or fields[i] == "*":
        return node_invert_ft
    offset = _float(fields[i]) * to_ft
    return offset if elevations else node_invert_ft + offset


def _inlet_height(section: str, node_invert_ft: float, fields: list, to_ft: float, elevations: bool) -> float:
    """How far above its From node's invert a link takes flow (ft): where a node has several ways out, the lowest
    takes the flow first and the others carry only what rises above them (overflows). 0 where the row says none."""
    if section == "PUMPS":
        start = _float(_field(fields, PUMP_STARTUP_FIELD, "0")) * to_ft
        return max(start, 0.0) if np.isfinite(start) else 0.0
    height = _invert(node_invert_ft, fields, INLET_FIELDS[section], to_ft, elevations) - node_invert_ft
    return max(height, 0.0) if np.isfinite(height) else 0.0


def _float(text: str) -> float:
    try:
        return float(text)
    except (TypeError, ValueError):
        return float("nan")


# A token as SWMM's getTokens reads one: text in double quotes (a name with spaces, "MH 12"; the closing quote may
# be missing at the end of the line), or a run of characters that are not white space.
_TOKEN = re.compile(r'"([^"]*)"?|(\S+)')


def tokens(line: str) -> list[str]:
    """The fields of a line (its comment already cut off), as SWMM 5 reads them: a name in double quotes is one
    field, without its quotes (``"MH 12"`` is ``MH 12``; ``""`` an empty field).

    SWMM cuts a line at its first ``;`` before it looks for quotes, so a ``;`` inside quotes starts a comment there
    too; the reader does the same, and reads the model as SWMM runs it.

    Examples
    --------
    >>> tokens('"Main 1"  "MH 1"  MH2  300')
    ['Main 1', 'MH 1', 'MH2', '300']
    >>> tokens('KRO3001  FLOW  1  "" "" "DWF"')
    ['KRO3001', 'FLOW', '1', '', '', 'DWF']
    """
    return [quoted if plain == "" else plain for quoted, plain in _TOKEN.findall(line)]


# The key under which ``_sections`` lists the names given twice in a section: not a section SWMM has.
REPEATED = " repeated"
# The sections whose rows each define a node or a link by its name.
_NAMED = {section for section, _ in (*NODE_SECTIONS, *LINK_SECTIONS)}


def _refuse_repeated_names(path: str, sections: dict) -> None:
    """Refuse a model in which two nodes, or two links, have one name, as SWMM does (a duplicate ID). Read on, the
    second was dropped without a word: Example1.inp with conduit 8 renamed 7 lost the link 22 -> 16, and the network
    report blamed "a link missing from the model" for the piece it cut off."""
    said = []
    for kinds, what in ((NODE_SECTIONS, "node"), (LINK_SECTIONS, "link")):
        where: dict[str, list[str]] = {}
        for section, _ in kinds:
            for name in sections.get(section, {}):
                where.setdefault(name, []).append(section)
            for name in sections.get(REPEATED, {}).get(section, []):
                where.setdefault(name, []).append(section)
        twice = sorted((n, s) for n, s in where.items() if len(s) > 1)
        said += [f"{what} {n} in {' and '.join(f'[{x}]' for x in s)}" for n, s in twice]
    if said:
        shown = "; ".join(said[:10]) + (f"; and {len(said) - 10} more" if len(said) > 10 else "")
        raise LayerError(
            f"{path} gives one name to two objects ({shown}). SWMM refuses such a model too (a duplicate ID), "
            "and sewerplan would keep one and lose the other without a word: give each its own name in the model."
        )


def _sections(path: Path) -> dict[str, dict[str, list]]:
    """Section -> first field -> the other fields; [VERTICES] keeps every row as (x, y) per link. A name given a
    second row in a section that defines objects keeps its first, and is listed under ``REPEATED``."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise LayerError(f"Cannot read {path}: {exc}") from exc
    out: dict[str, dict[str, list]] = {}
    current = None
    for raw in text.splitlines():
        line = raw.split(";", 1)[0].strip()
        if not line:
            continue
        if line.startswith("[") and line.endswith("]"):
            current = line[1:-1].upper()
            out.setdefault(current, {})
            continue
        if current is None:
            continue
        fields = tokens(line)
        if not fields:
            continue
        if current in ROW_SECTIONS:  # every row, in order (a rule clause by clause; a node's several inflows)
            out[current].setdefault("rows", []).append(fields)
        elif current == "VERTICES":
            if len(fields) >= 3:
                out[current].setdefault(fields[0], []).append((_float(fields[1]), _float(fields[2])))
        elif current == "OPTIONS":
            out[current][fields[0].upper()] = fields[1:]
        else:
            if fields[0] in out[current] and current in _NAMED:
                out.setdefault(REPEATED, {}).setdefault(current, []).append(fields[0])
            out[current].setdefault(fields[0], fields[1:])
    return out
