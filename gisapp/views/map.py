"""The planner's map page, its offline base tiles, and the map view printed on one page."""

from __future__ import annotations

import datetime as dt
import io
import json
import tempfile
from dataclasses import replace
from pathlib import Path

from flask import Blueprint, Response, abort, current_app, g, render_template, request, send_file, url_for

from analysis.profiles import bracketed
from gisapp import services
from gisapp.maps import build_map
from gisapp.security import LOCAL_USER, requires
from gisapp.state import map_data, recorded_spec, require_shown_workspace, running_job, workspace
from gisapp.views.api import bbox_arg, run_settings
from gisapp.words import (
    STATUS_COLOURS,
    WORDS,
    before_issuing,
    count,
    layer_count,
    measured_in,
    number,
    settings_text,
    town_date,
    unanalysed_profile_note,
    words,
)
from layers.mapsheet import SheetLayers, SheetText
from layers.qgis_styles import run_statuses
from layers.write import RESULT_LAYER

bp = Blueprint("map", __name__)


@bp.app_template_filter("words")
def _words(code) -> str:
    return words(code)


@bp.app_template_filter("layer_count")
def _layer_count(n: int, layer: str) -> str:
    return layer_count(n, layer)


@bp.app_template_filter("town_date")
def _town_date(value) -> str:
    return town_date(value, current_app.config["DATE_FORMAT"])


@bp.app_template_filter("number")
def _number(value, unit: str = "") -> str:
    return number(value, unit)


@bp.app_template_filter("before_issuing")
def _before_issuing(problem: str) -> str:
    return before_issuing(problem)


@bp.app_template_filter("bracketed")
def _bracketed(citation) -> str:
    return bracketed(str(citation or ""))


@bp.app_template_global("count")
def _count(n: int, one: str, many: str | None = None) -> str:
    return count(n, one, many)


def shown_statuses(data) -> list[str]:
    """The statuses the map's legend and table filter, the printed sheet's legend and the summary's counts list:
    those the latest run's profile, as it applied it, can give (Wappinger's never gives "near a main, but not on
    its street"), once per store version: the list the QGIS styles of the same results give
    (``layers.qgis_styles.run_statuses``). Every status where the run's profile cannot be read now (its file
    moved), and "not analysed" before any run."""
    if not data.has_results:
        return ["not_analysed"]
    shown = data.cache.get("statuses")
    if shown is None:
        run = services.recorded_run(data.path)
        shown = data.cache["statuses"] = run_statuses(run, counts=data.status_counts())
    return list(shown)


def _parts(data):
    """The Folium skeleton of the page, rendered once per store version (its bounds do not change within one)."""
    parts = data.cache.get("map_parts")
    if parts is None:
        parts = data.cache["map_parts"] = build_map(
            data.bounds(),
            static_url=url_for("static", filename=""),
            blank_tiles_url=url_for("map.blank_tile", z=0, x=0, y=0).replace("/0/0/0", "/{z}/{x}/{y}"),
        )
    return parts


@bp.get("/")
@requires("viewer")
def index():
    data = map_data()
    run = data.run()
    spec = data.cache.get("spec")
    if spec is None:
        spec = data.cache["spec"] = recorded_spec(data.path)  # the run form starts from what the latest run used
    # Folium's own inline scripts run under the page's Content-Security-Policy nonce.
    parts = _parts(data)
    parts = replace(parts, header=parts.header.replace("<script>", f'<script nonce="{g.csp_nonce}">'))
    statuses = shown_statuses(data)
    # The latest run's profile; before any, the one the layers were checked under (the upload's, published with them)
    chosen = (run or {}).get("profile") or spec.profile
    profile_note, profile_checked = None, False
    if run is None:  # the run line says which profile a run applies and why
        checked = data.cache.get("checked")
        if checked is None:
            checked = data.cache["checked"] = services.checked_spec(data.path)
        profile_checked = bool(checked.profile)
        profile_note = unanalysed_profile_note(spec.profile, spec.overrides, checked=profile_checked)
    reasons = services.notice_reasons_by_profile()  # the run form offers each profile's own reasons only
    # the layers the store has, with features: the only ones the layer switcher (map.js) and the legend offer
    kinds = data.layer_kinds()
    config = {
        "colours": STATUS_COLOURS,
        "words": WORDS,
        "statuses": statuses,
        "counts": data.status_counts(),
        "hasResults": data.has_results,
        "parcels": len(data.served["parcels"]) if "parcels" in data.served else 0,
        "layers": kinds,
        "noticeReasons": reasons,
        # a run going on this store: the page follows it, as the one that started it does (``map.js``)
        "runningJob": job.id if (job := running_job(data.path)) is not None else None,
        # the run this page's totals and colours are of: a popup from a later run (one started in another tab) says
        # so above the map, where the run line and the legend's counts went on showing the old run's (a tester)
        "runAt": (run or {}).get("run_at"),
    }
    return render_template(
        "map/index.html",
        parts=parts,
        run=run,
        run_settings=settings_text(run_settings(run)),  # the run line names the values set on the profile
        # and the measuring CRS given for the data (outside New York), the run's or, before any, its layers' own
        measured_in=measured_in(((run or {}).get("workspace") or {}).get("crs") if run else spec.crs),
        colours=STATUS_COLOURS,
        statuses=statuses,
        counts=data.status_counts(),
        profiles=services.profile_names(),
        has_results=data.has_results,
        has_parcels="parcels" in data.served,
        layers=kinds,
        has_subdivisions="subdivisions" in kinds,
        settings=spec.settings,
        digitised_direction=spec.digitised_direction,
        notice_reasons=reasons.get(chosen, []),
        chosen_profile=chosen,
        profile_note=profile_note,
        profile_checked=profile_checked,
        config=json.dumps(config),
    )


@bp.get("/tiles/blank/<int:z>/<int:x>/<int:y>.png")
def blank_tile(z: int, x: int, y: int):
    """The offline base layer: the same plain tile everywhere, served from memory."""
    tile = current_app.extensions.setdefault("blank_tile", (Path(current_app.static_folder) / "blank.png").read_bytes())
    return Response(tile, mimetype="image/png", headers={"Cache-Control": "public, max-age=86400"})


@bp.get("/print.pdf")
@requires("viewer")
def print_view():
    """The map view (``bbox``) on one page for a board packet: ``title``, the selected parcels (``selected``, an ID
    each) and a select-by-distance's searched area (``distance_ft`` with ``parcel`` or ``geometry``) outlined."""
    require_shown_workspace()  # the sheet of the workspace the page showed, or refused
    bbox = bbox_arg()
    if bbox is None:
        abort(400, description="Give the view to print as bbox=west,south,east,north.")
    data = map_data()
    parcels_name = data.parcels_name
    if parcels_name is None:
        abort(404, description="The store has no parcels to print.")
    parcels = data.originals[parcels_name]
    if parcels_name != RESULT_LAYER:
        parcels = parcels.assign(status="not_analysed")
    selected = tuple(request.args.getlist("selected"))
    buffer = None
    if request.args.get("distance_ft") and (request.args.get("parcel") or request.args.get("geometry")):
        geometry = request.args.get("geometry")
        distance = request.args.get("distance_ft", type=float)
        if distance is None:
            abort(400, description="Give the distance in feet (0 or more) for the searched area.")
        try:
            drawn = json.loads(geometry) if geometry else None
        except ValueError:
            abort(400, description="The drawn feature is not a GeoJSON geometry: draw it again on the map.")
        found = services.select_by_distance(
            workspace(), distance_ft=distance, parcel_id=request.args.get("parcel") or None, geometry=drawn
        )
        buffer = found.buffer
        selected = selected or tuple(found.parcels["parcel_id"].astype(str))
    run = data.run() or {}
    fmt = current_app.config["DATE_FORMAT"]
    today = town_date(dt.date.today(), fmt)
    municipality = run.get("municipality") or "The town"
    title = (request.args.get("title") or "").strip()[:300] or f"{municipality}: sewer connection mandates"
    if run:
        profile_line = (
            f"Profile {run.get('profile')} (version {run.get('profile_version')}), analysis of "
            f"{town_date(str(run.get('run_at', ''))[:10], fmt)}: parcels within {number(run.get('distance_ft'), 'ft')} "
            f"of a public sewer {bracketed(str(run.get('distance_section') or ''))} must connect."
        )
    else:
        profile_line = "No analysis yet: parcels are shown as uploaded, not analysed."
    shown = shown_statuses(data)
    printer = "the local planner" if g.user in (None, LOCAL_USER) else g.user
    text = SheetText(
        title=title,
        subtitle=(profile_line, f"Printed {today}."),
        statuses=tuple((s, words(s), STATUS_COLOURS[s]) for s in shown),
        footer=(
            f"sewerplan map printed {today} by {printer}; data: {Path(data.path).name}; "
            f"profile {run.get('profile', services.DEFAULT_PROFILE)}.",
        ),
    )
    layers = SheetLayers(
        parcels=parcels,
        streets=data.originals.get("streets"),
        mains=data.originals.get("mains"),
        manholes=data.originals.get("manholes"),
        selected=selected,
        buffer=buffer,
    )
    with tempfile.TemporaryDirectory(prefix="sewerplan-print-") as folder:
        path = Path(folder) / "map.pdf"
        services.print_map(path, layers, bbox_lonlat=bbox, text=text)
        payload = io.BytesIO(path.read_bytes())
    name = f"sewerplan-map-{dt.date.today().isoformat()}.pdf"
    return send_file(payload, mimetype="application/pdf", as_attachment=True, download_name=name)
