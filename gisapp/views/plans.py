"""Planning an extension on the web: evaluate a main drawn on the map, save scenarios, compare, reopen, delete, export.

Scenario names go in query or form fields, or at the end of a path (``/plans/<name>.pdf``), so names with ``#``,
``?`` or ``%`` work everywhere. A name with ``/`` or ``\\``, or one that is ``.`` or ``..``, is refused when saved
(``services._plan_name``); one saved before is linked with its ``/`` quoted (``ScenarioName``).
"""

from __future__ import annotations

import io
import tempfile
from pathlib import Path

import shapely
from flask import (
    Blueprint,
    abort,
    current_app,
    g,
    jsonify,
    redirect,
    render_template,
    request,
    send_file,
    url_for,
)
from pyproj import CRS
from werkzeug.routing import PathConverter

from analysis.plans import as_drawn, compare_plans, not_laid_parts
from analysis.profiles import bracketed
from gisapp import services
from gisapp.mapdata import NoDataYetError
from gisapp.security import LOCAL_USER, requires
from gisapp.state import require_shown_workspace, store_path, workspace
from gisapp.views._said import heard, say
from layers.board import write_comparison_csv
from layers.errors import LayerError
from layers.read import to_lonlat_geojson
from layers.register import Register, RegisterMissingError
from layers.store import store_exists, store_name
from layers.uploads import check_content

bp = Blueprint("plans", __name__, url_prefix="/plans")


class ScenarioName(PathConverter):
    """A scenario's name at the end of its files' addresses, ``/`` in it quoted as ``%2F``: one path segment.

    The path converter left ``/`` as it is, so the link of a scenario saved as ``Option A/../draft`` (before such
    names were refused) was ``/plans/Option%20A/../draft.pdf``, which the browser read as folders and opened as
    ``/plans/draft.pdf``, another scenario's board PDF. Quoted, a name is one segment (never ``.`` or ``..``: its
    format follows it), and the server still reads it whole: ``%2F`` arrives as ``/``, which this converter's
    pattern, the path converter's, matches."""

    def to_url(self, value) -> str:
        return super().to_url(value).replace("/", "%2F")


FORMATS = ("geojson", "gpkg", "pdf", "json")


def _register() -> Register:
    """The town's register, created (and recorded in the store) by the first scenario saved."""
    return services.open_register(current_app.config["REGISTER"], store=current_app.config["STORE"], create=True)


def _existing_register() -> Register | None:
    """The town's register, or None where it has none yet: looking at scenarios never creates one."""
    try:
        return services.open_register(current_app.config["REGISTER"], store=current_app.config["STORE"])
    except RegisterMissingError:
        return None


def _saved_plans() -> list[dict]:
    return services.saved_plans(current_app.config["REGISTER"], store=current_app.config["STORE"])


def _map(doc: dict, line, layers) -> dict:
    """The plan's geometry in longitude/latitude for the map: the main as laid, the connecting main, each part drawn
    past the manhole it passes through, or over an existing main, and not laid (``not_laid_parts``; ``not_laid`` is
    the first, as the map read it when a plan carried one), the line as drawn (``drawn``, to evaluate again), manholes,
    the parcels reached (newly mandated, vacant lots that benefit), where it crosses existing mains and the private
    parcels it crosses (a scenario saved before plans found them has none)."""
    crs = layers.parcels.crs
    run, parts = doc.get("connecting_main"), not_laid_parts(doc)  # a scenario saved before it carried every part too
    apart = to_lonlat_geojson([shapely.LineString(p["coords"]) for p in parts], crs) if parts else []
    ids = layers.parcels["parcel_id"].astype(str)

    def lots(wanted):
        return to_lonlat_geojson(layers.parcels.geometry.values[ids.isin(wanted).to_numpy()], crs) if wanted else []

    points = shapely.points([(m["x"], m["y"]) for m in doc["manholes"]]) if doc["manholes"] else []
    crossings = doc.get("main_crossings") or []
    crossing_points = shapely.points([(c["x"], c["y"]) for c in crossings]) if crossings else []
    easements = doc.get("easements") or []
    return {
        "line": to_lonlat_geojson([line], crs)[0],
        "connecting": to_lonlat_geojson([shapely.LineString(run["coords"])], crs)[0] if run else None,
        "not_laid": apart[0] if apart else None,
        "not_laid_parts": apart,
        # the line as drawn, to evaluate again: the main as laid alone was, and its plan no longer said "not laid"
        "drawn": to_lonlat_geojson([as_drawn(line, parts)], crs)[0],
        "manholes": [
            {"geometry": geometry, "id": m.get("id"), "existing": bool(m.get("existing")), "reason": m["reason"]}
            for geometry, m in zip(to_lonlat_geojson(points, crs), doc["manholes"], strict=True)
        ],
        "parcels": lots(set(doc["newly_mandated"])),
        "vacant": lots(set(doc.get("vacant_benefiting", []))),
        "crossings": [
            {"geometry": geometry, "main_id": c["main_id"], "kind": c["kind"], "station_ft": c["station_ft"]}
            for geometry, c in zip(to_lonlat_geojson(crossing_points, crs), crossings, strict=True)
        ],
        "easements": lots({e["parcel_id"] for e in easements}),
    }


def _worded(doc: dict) -> dict:
    """A saved plan with each check's, requirement's and the petition's citation worded for a sentence (``cited``),
    as a plan carries them now: a scenario saved before has its sections alone, and the page sets ``cited`` after
    its text as it is, so that no bracket nests ("(§ 144-17A (profile setting))")."""

    def cited(item: dict) -> dict:
        return item if "cited" in item else item | {"cited": bracketed(str(item.get("section") or ""))}

    return doc | {
        "design_checks": [cited(c) for c in doc.get("design_checks", [])],
        "requirements": [cited(r) for r in doc.get("requirements", [])],
        "petition": cited(doc["petition"]) if doc.get("petition") else doc.get("petition"),
    }


def _body() -> dict:
    """The request's JSON object, or an empty one: a body that was JSON but not an object (a list, a number) was
    read with .get and answered with a server error instead of a sentence."""
    body = request.get_json(silent=True)
    return body if isinstance(body, dict) else {}


@bp.post("/line")
@requires("planner")
def line_from_file():
    """A proposed main from the GeoJSON file a planner loads on the map, in longitude/latitude to draw.

    Read on the server as `sewerplan plan --proposed` reads a file: the page read every file as a LineString in
    degrees, so QGIS's MultiLineString was "no line" and a file in the town's state plane CRS sent the map to the
    North Pole.
    """
    require_shown_workspace()  # read into the CRS of the workspace the map showed, or refused
    body = _body()
    text, name = body.get("text"), Path(str(body.get("name") or "")).name or "the file"
    if not isinstance(text, str) or not text.strip():
        abort(400, description=f"{name} is empty: load the GeoJSON file of the proposed main.")
    ws = workspace()
    with tempfile.TemporaryDirectory(prefix="sewerplan-line-") as folder:
        path = Path(folder) / "proposed.geojson"
        path.write_text(text, encoding="utf-8")
        check_content(path, "GeoJSON", name=name)
        # the CRS the planner gave the file ("CRS of the file"): one that declares none, or a wrong one
        crs = str(body.get("crs") or "").strip() or None
        line, note = services.proposed_line(ws, path=str(path), name=name, proposed_crs=crs)
    return jsonify({"line": to_lonlat_geojson([line], ws.layers.parcels.crs)[0], "note": note})


@bp.post("/evaluate")
@requires("planner")
def evaluate():
    require_shown_workspace()  # evaluated (and saved) on the layers the map showed, or refused
    body = _body()
    try:
        given = body.get("diameter_in", 8)
        if isinstance(given, bool):  # float(True) is 1.0: a request's `true` was evaluated as a 1-inch pipe
            raise TypeError(given)
        diameter = float(given)
    except (TypeError, ValueError):
        abort(400, description="The diameter must be a number of inches.")
    if not diameter > 0:
        abort(400, description="The diameter must be a positive number of inches.")
    name = str(body.get("name") or "scenario")
    material = str(body.get("material") or "").strip()[:60] or None
    ws = workspace()
    if body.get("streets_run"):
        line, _ = services.proposed_line(ws, streets_run=str(body["streets_run"]))
    else:
        line, _ = services.proposed_line(ws, geometry=body.get("geometry") or {})
    result, doc = services.evaluate_plan(
        ws,
        line,
        diameter_in=diameter,
        material=material,
        name=name,
        register=_register() if body.get("save") else None,
        replace=bool(body.get("replace")),
    )
    doc["map"] = _map(doc, result.line, ws.layers)  # as laid: a part drawn past its manhole is ``not_laid``
    return jsonify(doc)


def _saved(names: list[str] | None = None) -> list[dict]:
    saved = _saved_plans()
    if names:
        wanted = set(names)
        saved = [p for p in saved if p["name"] in wanted]
    return saved


@bp.get("")
@requires("viewer")
def index():
    everything = _saved_plans()
    if not everything and not store_exists(store := store_path()):  # "draw one on the map": a map with no data yet
        raise NoDataYetError(store_name(store))
    chosen = request.args.getlist("compare")
    plans = [p for p in everything if p["name"] in set(chosen)] if chosen else everything
    rows = compare_plans(plans)
    checks: list[str] = []
    for p in plans:
        checks += [c["check"] for c in p["result"]["design_checks"] if c["check"] not in checks]
    verdicts = [
        {
            c["check"]: c | {"verdict": c.get("verdict") or ("meets" if c.get("passed") else "does not meet")}
            for c in p["result"]["design_checks"]
        }
        for p in plans
    ]
    return render_template(
        "plans/index.html",
        plans=plans,
        everything=everything,
        chosen=set(chosen),
        rows=rows,
        checks=checks,
        verdicts=verdicts,
        message=heard("plans"),  # never from the address
    )


@bp.get("/compare.csv")
@requires("viewer")
def compare_csv():
    plans = _saved(request.args.getlist("compare"))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "scenarios.csv"
        write_comparison_csv(path, [p["name"] for p in plans], compare_plans(plans))
        payload = io.BytesIO(path.read_bytes())
    return send_file(payload, mimetype="text/csv", as_attachment=True, download_name="scenarios.csv")


@bp.post("/delete")
@requires("planner")
def delete():
    name = request.form.get("name", "")
    register = _existing_register()
    if register is None or not register.delete_plan(name):
        abort(404, description=f"No saved scenario is named {name!r}: it may have been deleted already.")
    return redirect(url_for("plans.index", **say(plans=f"Deleted scenario {name}.")))


@bp.get("/<scenario:name>.<any(geojson, gpkg, pdf, json):fmt>")
@requires("viewer")
def export(name: str, fmt: str):
    saved = {p["name"]: p for p in _saved_plans()}
    if name not in saved:
        abort(404, description=f"No saved scenario is named {name!r}.")
    plan = saved[name]
    doc = plan["result"] | {"name": name}
    layers = workspace().layers
    if layers.parcels is None:
        raise LayerError("The store has no parcels layer to draw the scenario on.")
    if not CRS(plan["crs"]).equals(CRS(layers.parcels.crs)):
        raise LayerError(
            f"The scenario {name} was saved in {plan['crs']}, but the store's layers are now in "
            f"{layers.parcels.crs.to_string()}: draw and evaluate it again."
        )
    line = shapely.from_wkt(plan["geometry_wkt"])
    if fmt == "json":
        return jsonify(_worded(doc) | {"map": _map(doc, line, layers), "diameter_in": plan["diameter_in"]})
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"plan.{fmt}"
        if fmt == "pdf":
            preparer = "local planner" if g.user == LOCAL_USER else g.user
            services.plan_pdf(path, doc, layers, services.saved_plan_profile(plan), line=line, preparer=preparer)
        else:
            services.export_plan(str(path), doc, line, layers)
        payload = io.BytesIO(path.read_bytes())
    return send_file(payload, as_attachment=True, download_name=f"{name.replace('/', '-')}.{fmt}")
