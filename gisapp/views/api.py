"""The JSON API the map page uses (documented in gisapp/static/openapi.json)."""

from __future__ import annotations

import io
import tempfile
from pathlib import Path

from flask import Blueprint, abort, jsonify, request, send_file

from gisapp import services
from gisapp.security import requires
from gisapp.state import map_data, workspace
from layers.mapdata import MAIN_FIELDS, PARCEL_FIELDS
from layers.write import FORMATS

bp = Blueprint("api", __name__, url_prefix="/api")

LAYERS = {
    "parcels": ("parcel_results", PARCEL_FIELDS),
    "mains": ("mains", MAIN_FIELDS),
    "manholes": ("manholes", ("manhole_id", "structure", "invert_ft")),
    "plants": ("treatment_plants", ("plant_id", "name", "outfall_id", "outfall_name")),
    "buildings": (
        "building_results",
        (
            "building_id",
            "parcel_id",
            "units",
            "rear_building",
            "shared_lateral",
            "required_laterals",
            "lateral_shortfall",
            "reason",
        ),
    ),
    "streets": ("streets", ("street_name",)),
}


def _bbox() -> tuple[float, float, float, float] | None:
    text = request.args.get("bbox")
    if not text:
        return None
    try:
        west, south, east, north = (float(v) for v in text.split(","))
    except ValueError:
        abort(400, description="bbox must be west,south,east,north in degrees.")
    if not (-180 <= west < east <= 180 and -90 <= south < north <= 90):
        abort(400, description="bbox must be west,south,east,north in degrees, west < east, south < north.")
    return west, south, east, north


@bp.get("/layers/<name>")
@requires("viewer")
def layer(name: str):
    if name not in LAYERS:
        abort(404, description=f"No layer {name!r}; layers: {', '.join(LAYERS)}.")
    bbox = _bbox()
    if bbox is None:
        abort(400, description="Give bbox=west,south,east,north.")
    zoom = request.args.get("zoom", default=16.0, type=float)
    store_name, fields = LAYERS[name]
    return jsonify(map_data().geojson(store_name, bbox, zoom, fields))


@bp.get("/parcels/<parcel_id>")
@requires("viewer")
def parcel(parcel_id: str):
    found = map_data().parcel(parcel_id)
    if found is None:
        abort(404, description=f"No parcel {parcel_id!r} in the results.")
    return jsonify(found)


@bp.get("/search")
@requires("viewer")
def search():
    return jsonify({"results": map_data().search(request.args.get("q", ""))})


@bp.get("/trace")
@requires("viewer")
def trace():
    parcel_id = request.args.get("parcel", "")
    data = map_data()
    if data.originals.get("parcel_results") is None or "mains" not in data.originals:
        abort(404, description="The store has no network or no results to trace.")
    t = services.trace_parcel(workspace(), parcel_id)
    doc = t.as_dict()
    doc["geojson"] = data.features_by_id("mains", "main_id", t.mains, ("main_id", "diameter_in"))
    doc["control_manhole_geojson"] = data.features_by_id(
        "manholes", "manhole_id", [t.control_manhole] if t.control_manhole else [], ("manhole_id",)
    )
    return jsonify(doc)


@bp.get("/sewershed")
@requires("viewer")
def upstream():
    manhole = request.args.get("manhole", "")
    data = map_data()
    if "mains" not in data.originals:
        abort(404, description=f"No manhole {manhole!r} in the network.")
    shed = services.sewershed(workspace(), manhole)
    doc = shed.as_dict() | {"units_unknown": shed.units_unknown}
    doc["geojson"] = data.features_by_id("mains", "main_id", shed.mains, ("main_id",))
    return jsonify(doc)


@bp.get("/results.<fmt>")
@requires("viewer")
def download(fmt: str):
    suffix = f".{fmt}"
    if suffix not in FORMATS:
        abort(404, description="Results download as .geojson, .gpkg, .parquet or .csv.")
    frame = map_data().selection(_bbox())
    with tempfile.TemporaryDirectory(prefix="sewerplan-download-") as folder:
        path = Path(folder) / f"sewerplan-results{suffix}"
        services.export_results(str(path), frame)
        payload = io.BytesIO(path.read_bytes())
    mimetypes = {
        ".geojson": "application/geo+json",
        ".json": "application/geo+json",
        ".csv": "text/csv",
        ".gpkg": "application/geopackage+sqlite3",
        ".parquet": "application/vnd.apache.parquet",
    }
    return send_file(
        payload, mimetype=mimetypes[suffix], as_attachment=True, download_name=f"sewerplan-results{suffix}"
    )
