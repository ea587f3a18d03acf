"""Read an EPA SWMM 5 input file (.inp) into mains and manholes layers.

Nodes come from [JUNCTIONS], [STORAGE], [DIVIDERS] and [OUTFALLS] (outfalls get ``structure = "outfall"``),
placed by [COORDINATES]; links from [CONDUITS] (and [PUMPS], as force mains), shaped by [VERTICES] between their
end nodes, sized by [XSECTIONS] Geom1. Each main carries its from and to node, so its direction is explicit, and
inverts = node invert elevation + the link's offset. Elevations and diameters are converted to feet and inches
from the model's units ([OPTIONS] FLOW_UNITS: CMS, LPS, MLD are metric). A SWMM file records no CRS: the user
gives it (``--data-crs``).
"""

from __future__ import annotations

from pathlib import Path

import geopandas as gpd
import numpy as np
import shapely

from layers.errors import LayerError

METRIC_FLOW_UNITS = {"CMS", "LPS", "MLD"}
M_TO_FT = 3937 / 1200  # US survey feet per metre (for elevations); diameters use the same factor x 12


def read_inp(path: str) -> dict[str, gpd.GeoDataFrame]:
    """``{"mains": ..., "manholes": ...}`` from a SWMM .inp file, without a CRS."""
    sections = _sections(Path(path))
    metric = sections.get("OPTIONS", {}).get("FLOW_UNITS", ["CFS"])[0].upper() in METRIC_FLOW_UNITS
    to_ft = M_TO_FT if metric else 1.0

    nodes: dict[str, tuple[float, str]] = {}
    for section, structure in (
        ("JUNCTIONS", "junction"),
        ("STORAGE", "storage"),
        ("DIVIDERS", "divider"),
        ("OUTFALLS", "outfall"),
    ):
        for name, fields in sections.get(section, {}).items():
            nodes[name] = (_float(fields[0]) * to_ft, structure)
    coords = {name: (_float(f[0]), _float(f[1])) for name, f in sections.get("COORDINATES", {}).items()}
    missing = sorted(set(nodes) - set(coords))
    if missing:
        raise LayerError(f"{path}: node(s) {', '.join(missing[:10])} have no [COORDINATES].")
    vertices: dict[str, list[tuple[float, float]]] = {}
    for name, pts in sections.get("VERTICES", {}).items():
        vertices[name] = pts  # a list of (x, y) kept in file order by _sections

    xsections = {name: f for name, f in sections.get("XSECTIONS", {}).items()}
    rows, geoms = [], []
    for section, kind in (("CONDUITS", "sanitary"), ("PUMPS", "force")):
        for name, f in sections.get(section, {}).items():
            frm, to = f[0], f[1]
            if frm not in coords or to not in coords:
                raise LayerError(f"{path}: link {name} joins {frm} and {to}, not both of which are nodes.")
            in_off = _float(f[3]) * to_ft if section == "CONDUITS" and len(f) > 3 else 0.0
            out_off = _float(f[4]) * to_ft if section == "CONDUITS" and len(f) > 4 else 0.0
            geom1 = _float(xsections[name][1]) if name in xsections and len(xsections[name]) > 1 else np.nan
            rows.append(
                {
                    "main_id": name,
                    "from_manhole": frm,
                    "to_manhole": to,
                    "sewer_type": kind,
                    "diameter_in": geom1 * to_ft * 12,
                    "us_invert_ft": nodes.get(frm, (np.nan,))[0] + in_off,
                    "ds_invert_ft": nodes.get(to, (np.nan,))[0] + out_off,
                    "swmm_section": section,
                }
            )
            geoms.append(shapely.LineString([coords[frm], *vertices.get(name, []), coords[to]]))
    if not rows:
        raise LayerError(f"{path} has no [CONDUITS]: is it a SWMM input file?")
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


def _float(text: str) -> float:
    try:
        return float(text)
    except (TypeError, ValueError):
        return float("nan")


def _sections(path: Path) -> dict[str, dict[str, list]]:
    """Section -> first field -> the other fields; [VERTICES] keeps every row as (x, y) per link."""
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
        fields = line.split()
        if current == "VERTICES":
            out[current].setdefault(fields[0], []).append((_float(fields[1]), _float(fields[2])))
        elif current == "OPTIONS":
            out[current][fields[0].upper()] = fields[1:]
        else:
            out[current].setdefault(fields[0], fields[1:])
    return out
