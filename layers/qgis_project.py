"""A QGIS project of a store's layers, styled and grouped: what ``sewerplan export-qgis`` writes.

The project (``.qgz``: a zip holding the ``.qgs`` XML; or a plain ``.qgs``) lists every map layer of the store in
three groups: **results** (connection points, measuring lines, building results, parcel results), **network**
(manholes, treatment plants, mains, laterals, network reports) and **base** (buildings, streets, parcels and the
other input layers). Each layer carries the same style the store's ``layer_styles`` table holds
(``layers.qgis_styles``): parcels coloured by status as on the web map, their legend listing the statuses the web
map's lists for the latest run's profile (``run_statuses``: under Wappinger no "in range not abutting"), mains by
diameter, measuring lines dashed, labels off. The project CRS is the store's measuring CRS, and the map opens on
the parcels.

Sources: a GeoPackage store's layers by a path relative to the project (``./town.gpkg|layername=...``, absolute
where no relative path exists, another drive on Windows), so the project and the store move together; a PostGIS
store's by connection parameters without any password (QGIS asks for it, or takes it from ``~/.pgpass``, a
``pg_service.conf`` entry or ``PGPASSWORD``).
"""

from __future__ import annotations

import hashlib
import os
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

from pyproj import CRS

from layers.atomic import folder_for, written_whole
from layers.errors import LayerError
from layers.qgis_styles import DOCTYPE, QGIS_VERSION, run_statuses, style_elements, style_kind

GROUPS = ("results", "network", "base")
# Within each group, top (drawn last, on top) to bottom.
ORDER = {
    "results": ("connection_points", "measuring_lines", "building_results", "parcel_results"),
    "network": ("manholes", "outfalls", "network_report", "mains", "laterals"),
    "base": (
        "buildings",
        "subdivisions",
        "curbs",
        "alleys",
        "streets",
        "sewer_rights_of_way",
        "service_areas",
        "parcels",
        "proposed_manholes",
        "proposed_main",
        "newly_mandated",
        "benefiting_parcels",
    ),
}
WKB_TYPES = {
    "POINT": "Point",
    "MULTIPOINT": "MultiPoint",
    "LINESTRING": "LineString",
    "MULTILINESTRING": "MultiLineString",
    "POLYGON": "Polygon",
    "MULTIPOLYGON": "MultiPolygon",
}
GEOMETRY_NAMES = {"Point": "Point", "LineString": "Line", "Polygon": "Polygon"}


def group_of(layer: str) -> str:
    """The group a layer goes in: results, network or base (an input layer by its kind, found by its name)."""
    kind = style_kind(layer) or layer
    for group, names in ORDER.items():
        if kind in names:
            return group
    return "base"


def _rank(layer: str) -> tuple[int, int, str]:
    group = group_of(layer)
    names = ORDER[group]
    kind = style_kind(layer) or layer
    return (GROUPS.index(group), names.index(kind) if kind in names else len(names), layer)


def write_project(store, out: str | Path, *, title: str | None = None) -> dict:
    """Write a QGIS project of ``store``'s layers to ``out`` (``.qgz`` or ``.qgs``); returns what it holds.

    ``{"output", "layers": {group: [layer, ...]}, "crs"}``. A store without layers is refused.
    """
    out = Path(out)
    if out.suffix.lower() not in (".qgz", ".qgs"):
        raise LayerError(f"Write the QGIS project as .qgz (or .qgs), not {out.name}.")
    if not store.exists():
        raise LayerError(f"The store {store.label} does not exist.")
    layers = sorted(store.qgis_layers(), key=lambda entry: _rank(entry["name"]))
    if not layers:
        raise LayerError(f"The store {store.label} has no map layers to put in a QGIS project.")
    folder_for(out)
    srids = [entry["srid"] for entry in layers if entry["name"] == "parcel_results"] or [layers[0]["srid"]]
    crs = CRS.from_epsg(srids[0])
    run = store.latest_run() or {}
    name = title or run.get("municipality") or "sewerplan"
    statuses = _statuses(store, run) if any(style_kind(e["name"]) == "parcel_results" for e in layers) else None
    root = _project(layers, crs=crs, title=name, folder=out.parent.resolve(), statuses=statuses)
    ET.indent(root, " ")
    document = DOCTYPE + "\n" + ET.tostring(root, encoding="unicode") + "\n"
    with written_whole(out) as tmp:  # whole or not at all, one writer at a time; a killed one's copy is cleared
        if out.suffix.lower() == ".qgz":
            with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as archive:
                archive.writestr(f"{out.stem}.qgs", document)
        else:
            tmp.write_text(document, encoding="utf-8")
    grouped: dict[str, list[str]] = {group: [] for group in GROUPS}
    for entry in layers:
        grouped[group_of(entry["name"])].append(entry["name"])
    return {"output": str(out), "layers": grouped, "crs": f"EPSG:{srids[0]}", "title": name}


def _statuses(store, run: dict) -> list[str]:
    """The statuses the results' legend lists: the web map's for the store's latest run (``run_statuses``)."""
    results = store.read_results(["status"])
    counts = results["status"].value_counts().to_dict() if results is not None else {}
    return run_statuses(run or None, counts)


def _project(
    layers: list[dict], *, crs: CRS, title: str, folder: Path, statuses: list[str] | None = None
) -> ET.Element:
    root = ET.Element("qgis", {"projectname": title, "version": QGIS_VERSION, "saveUser": "", "saveUserFull": ""})
    ET.SubElement(root, "homePath", {"path": ""})
    ET.SubElement(root, "title").text = title
    ET.SubElement(root, "autotransaction", {"active": "0"})
    ET.SubElement(root, "evaluateDefaultValues", {"active": "0"})
    ET.SubElement(root, "trust", {"active": "0"})
    ET.SubElement(root, "projectCrs").append(_spatialrefsys(crs))
    ids = {entry["name"]: _layer_id(entry) for entry in layers}
    tree = ET.SubElement(root, "layer-tree-group")
    ET.SubElement(tree, "customproperties")
    for group in GROUPS:
        members = [entry for entry in layers if group_of(entry["name"]) == group]
        if not members:
            continue
        node = ET.SubElement(tree, "layer-tree-group", {"name": group, "checked": "Qt::Checked", "expanded": "1"})
        ET.SubElement(node, "customproperties")
        for entry in members:
            leaf = ET.SubElement(
                node,
                "layer-tree-layer",
                {
                    "id": ids[entry["name"]],
                    "name": entry["name"],
                    "source": _source(entry, folder),
                    "providerKey": entry["provider"],
                    "checked": "Qt::Checked",
                    "expanded": "0",
                },
            )
            ET.SubElement(leaf, "customproperties")
    canvas = ET.SubElement(root, "mapcanvas", {"name": "theMapCanvas", "annotationsVisible": "1"})
    ET.SubElement(canvas, "units").text = "feet" if "foot" in (crs.axis_info[0].unit_name or "") else "meters"
    canvas.append(_extent(_home_extent(layers)))
    ET.SubElement(canvas, "rotation").text = "0"
    ET.SubElement(canvas, "destinationsrs").append(_spatialrefsys(crs))
    projectlayers = ET.SubElement(root, "projectlayers")
    for entry in layers:
        projectlayers.append(_maplayer(entry, ids[entry["name"]], folder, statuses=statuses))
    order = ET.SubElement(root, "layerorder")
    for entry in layers:
        ET.SubElement(order, "layer", {"id": ids[entry["name"]]})
    properties = ET.SubElement(root, "properties")
    paths = ET.SubElement(properties, "Paths")
    ET.SubElement(paths, "Absolute", {"type": "bool"}).text = "false"
    refsys = ET.SubElement(properties, "SpatialRefSys")
    ET.SubElement(refsys, "ProjectionsEnabled", {"type": "int"}).text = "1"
    authority = crs.to_authority() or ("EPSG", "")
    ET.SubElement(refsys, "ProjectCrs", {"type": "QString"}).text = f"{authority[0]}:{authority[1]}"
    return root


def _layer_id(entry: dict) -> str:
    digest = hashlib.sha1(f"{entry['name']}|{entry.get('schema', '')}".encode()).hexdigest()[:12]
    return f"{entry['name']}_{digest}"


def _source(entry: dict, folder: Path) -> str:
    """The layer's data source as QGIS writes it (a GeoPackage path relative to the project where it can be)."""
    if entry["provider"] == "ogr":
        path = Path(entry["path"])
        try:
            shown = "./" + Path(os.path.relpath(path, folder)).as_posix()
        except ValueError:  # another drive (Windows): no relative path
            shown = path.as_posix()
        return f"{shown}|layername={entry['name']}"
    c = entry["connection"]
    parts = [f"dbname='{c['dbname']}'"]
    if c.get("host"):
        parts.append(f"host={c['host']}")
    parts.append(f"port={c['port']}")
    if c.get("user"):
        parts.append(f"user='{c['user']}'")
    if c.get("sslmode"):
        parts.append(f"sslmode={c['sslmode']}")
    if entry.get("key"):
        parts.append(f"key='{entry['key']}'")
    parts += [
        f"srid={entry['srid']}",
        f"type={WKB_TYPES.get(entry['geometry'], entry['geometry'])}",
        "checkPrimaryKeyUnicity='0'",
        f'table="{entry["schema"]}"."{entry["table"]}" ({entry["geom"]})',
    ]
    return " ".join(parts)


def _maplayer(entry: dict, layer_id: str, folder: Path, *, statuses: list[str] | None = None) -> ET.Element:
    wkb = WKB_TYPES.get(entry["geometry"], "Unknown")
    simple = wkb.removeprefix("Multi")
    layer = ET.Element(
        "maplayer",
        {
            "type": "vector",
            "geometry": GEOMETRY_NAMES.get(simple, "Unknown"),
            "wkbType": wkb,
            "labelsEnabled": "0",
            "readOnly": "0",
            "autoRefreshEnabled": "0",
            "autoRefreshTime": "0",
            "hasScaleBasedVisibilityFlag": "0",
            "minScale": "100000000",
            "maxScale": "0",
            "simplifyDrawingHints": "1",
            "simplifyDrawingTol": "1",
            "simplifyLocal": "1",
            "simplifyMaxScale": "1",
            "simplifyAlgorithm": "0",
            "styleCategories": "AllStyleCategories",
        },
    )
    if entry.get("extent"):
        layer.append(_extent(entry["extent"]))
    ET.SubElement(layer, "id").text = layer_id
    ET.SubElement(layer, "datasource").text = _source(entry, folder)
    ET.SubElement(layer, "keywordList").append(ET.Element("value"))
    ET.SubElement(layer, "layername").text = entry["name"]
    ET.SubElement(layer, "srs").append(_spatialrefsys(CRS.from_epsg(entry["srid"])))
    provider = ET.SubElement(layer, "provider", {"encoding": "UTF-8"})
    provider.text = entry["provider"]
    style = style_elements(entry["name"], entry.get("fields", ()), statuses=statuses)
    if style:
        layer.extend(style)
    return layer


def _spatialrefsys(crs: CRS) -> ET.Element:
    srs = ET.Element("spatialrefsys", {"nativeFormat": "Wkt"})
    ET.SubElement(srs, "wkt").text = crs.to_wkt("WKT2_2019")
    authority = crs.to_authority() or ("EPSG", "")
    ET.SubElement(srs, "srid").text = authority[1]
    ET.SubElement(srs, "authid").text = f"{authority[0]}:{authority[1]}"
    ET.SubElement(srs, "description").text = crs.name
    ET.SubElement(srs, "geographicflag").text = "true" if crs.is_geographic else "false"
    return srs


def _extent(bounds) -> ET.Element:
    extent = ET.Element("extent")
    for name, value in zip(("xmin", "ymin", "xmax", "ymax"), bounds, strict=True):
        ET.SubElement(extent, name).text = repr(float(value))
    return extent


def _home_extent(layers: list[dict]) -> tuple[float, float, float, float]:
    """Where the map opens: the parcels (results, else the input layer), else the first layer with an extent."""
    for wanted in ("parcel_results", "parcels"):
        for entry in layers:
            if (style_kind(entry["name"]) or entry["name"]) == wanted and entry.get("extent"):
                return entry["extent"]
    for entry in layers:
        if entry.get("extent"):
            return entry["extent"]
    return (0.0, 0.0, 1.0, 1.0)


__all__ = ["GROUPS", "group_of", "write_project"]
