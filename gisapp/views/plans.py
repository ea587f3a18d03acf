"""Planning an extension on the web: evaluate a main drawn on the map, save scenarios, compare and export them."""

from __future__ import annotations

import io
import tempfile
from pathlib import Path

import shapely
from flask import Blueprint, abort, jsonify, render_template, request, send_file

from gisapp.pipeline import plan_on_layers
from gisapp.security import requires
from gisapp.state import network, store_layers
from layers.letters import write_plan_summary
from layers.read import proposed_from_geojson, street_run, to_lonlat_geojson
from layers.register import Register
from layers.write import write_plan

bp = Blueprint("plans", __name__, url_prefix="/plans")


def _register() -> Register:
    from flask import current_app

    return Register(current_app.config["REGISTER"], store=current_app.config["STORE"])


@bp.post("/evaluate")
@requires("planner")
def evaluate():
    body = request.get_json(silent=True) or {}
    try:
        diameter = float(body.get("diameter_in", 8))
    except (TypeError, ValueError):
        abort(400, description="The diameter must be a number of inches.")
    name = str(body.get("name") or "scenario")[:80]
    layers, profile = store_layers()
    if body.get("streets_run"):
        line = street_run(layers.streets, str(body["streets_run"]))
    else:
        line = proposed_from_geojson(body.get("geometry") or {}, target_crs=layers.parcels.crs)
    net, _ = network()
    result, doc = plan_on_layers(
        layers,
        profile,
        line,
        diameter_in=diameter,
        name=name,
        network=net,
        register=_register() if body.get("save") else None,
    )
    manhole_points = shapely.points([(m["x"], m["y"]) for m in doc["manholes"]])
    doc["map"] = {
        "line": to_lonlat_geojson([line], layers.parcels.crs)[0],
        "manholes": to_lonlat_geojson(manhole_points, layers.parcels.crs),
        "parcels": to_lonlat_geojson(result.parcels.geometry.values, layers.parcels.crs),
    }
    return jsonify(doc)


@bp.get("")
@requires("viewer")
def index():
    return render_template("plans/index.html", plans=_register().saved_plans())


@bp.get("/<name>.<fmt>")
@requires("viewer")
def export(name: str, fmt: str):
    saved = {p["name"]: p for p in _register().saved_plans()}
    if name not in saved or fmt not in ("geojson", "gpkg", "pdf"):
        abort(404, description="No such scenario or format (geojson, gpkg, pdf).")
    plan = saved[name]
    layers, profile = store_layers()
    line = shapely.from_wkt(plan["geometry_wkt"])
    parcels = layers.parcels[layers.parcels["parcel_id"].astype(str).isin(plan["result"]["newly_mandated"])]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"{name}.{fmt}"
        if fmt == "pdf":
            write_plan_summary(path, name, plan["result"], profile=profile)
        else:
            write_plan(
                str(path),
                line,
                plan["result"]["manholes"],
                parcels,
                crs=layers.parcels.crs,
                attrs={"name": name, "diameter_in": plan["diameter_in"], "length_ft": plan["result"]["length_ft"]},
            )
        payload = io.BytesIO(path.read_bytes())
    return send_file(payload, as_attachment=True, download_name=f"{name}.{fmt}")
