"""The JSON API the map page uses (documented in gisapp/static/openapi.json).

Every ID travels in a query parameter (``/api/parcel?id=12.34-1-5/A``), never in the URL's path, so tax IDs with
"/", "#", "?", "%" or spaces reach the server as they are. ``/api/parcels/{id}`` stays for old links (its converter
takes "/" too).
"""

from __future__ import annotations

import io
import json
import tempfile
from contextlib import suppress
from pathlib import Path

import numpy as np
from flask import Blueprint, Response, abort, current_app, g, jsonify, request, send_file

from analysis.reasons import STATUSES
from gisapp import services
from gisapp.mapdata import MAP_LAYERS, collection
from gisapp.security import requires
from gisapp.state import map_data, require_shown_workspace, workspace
from gisapp.views.notices import app_register
from gisapp.words import other_run, register_note, town_date
from layers.errors import LayerError
from layers.read import to_lonlat_geojson
from layers.register import RegisterMissingError
from layers.write import FORMATS

bp = Blueprint("api", __name__, url_prefix="/api")


@bp.before_request
def _shown_workspace():
    """A read from a map page that showed another workspace than the session's now is refused (409), as its posts
    are (``require_shown_workspace``): once signed in, so a signed-out request is told to sign in first."""
    if getattr(g, "user", None):
        require_shown_workspace()


MIMETYPES = {
    ".geojson": "application/geo+json",
    ".json": "application/geo+json",
    ".csv": "text/csv",
    ".gpkg": "application/geopackage+sqlite3",
    ".parquet": "application/vnd.apache.parquet",
}
# The most parcels a select-by-distance answer lists in JSON (all are in its CSV downloads).
LISTED_WITHIN = 2000


def bbox_arg() -> tuple[float, float, float, float] | None:
    """The request's ``bbox=west,south,east,north`` in degrees, or None; 400 when malformed."""
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


def _required(name: str, what: str) -> str:
    value = request.args.get(name)
    if value is None or value == "":
        abort(400, description=f"Give {what} as the {name}= query parameter.")
    return value


@bp.get("/layers/<name>")
@requires("viewer")
def layer(name: str):
    if name not in MAP_LAYERS:
        abort(404, description=f"No layer {name!r}; layers: {', '.join(MAP_LAYERS)}.")
    bbox = bbox_arg()
    if bbox is None:
        abort(400, description="Give bbox=west,south,east,north.")
    zoom = request.args.get("zoom", default=16.0, type=float)
    data = map_data()
    if name == "subdivisions":
        data.serve_subdivisions(lambda: services.subdivisions(workspace()))
    return Response(data.features(name, bbox, zoom), mimetype="application/json")


@bp.get("/parcel")
@requires("viewer")
def parcel_by_query():
    return _parcel(_required("id", "the parcel's ID"))


@bp.get("/parcels/<path:parcel_id>")
@requires("viewer")
def parcel(parcel_id: str):
    return _parcel(parcel_id)


def _parcel(parcel_id: str):
    found = map_data().parcel(parcel_id)
    if found is None:
        abort(404, description=f"No parcel {parcel_id!r} in the map's parcels.")
    run = _run_of()
    notices = _notices_of(parcel_id, run)
    status = (found.get("parcel") or {}).get("properties", {}).get("status")
    note = register_note(status, notices, fmt=current_app.config["DATE_FORMAT"])
    return jsonify(found | {"run": run, "notices": notices, "register_note": note})


def _run_of() -> dict | None:
    """Which run the parcel's status, rule, section and reason come from (None before any run): its profile, the
    values set on it (None for a run recorded before runs kept them) and its distance."""
    run = map_data().run()
    if run is None:
        return None
    return {k: run.get(k) for k in ("profile", "municipality", "run_at", "distance_ft")} | {
        "settings": run_settings(run)
    }


def run_settings(run: dict | None) -> dict | None:
    """The values a run set on its profile, as its record keeps them (None for a run recorded before records kept
    its workspace): the map's run line and popup name them."""
    workspace = (run or {}).get("workspace")
    return workspace.get("settings") if isinstance(workspace, dict) else None


def _notices_of(parcel_id: str, run: dict | None) -> list[dict] | None:
    """The parcel's notices in the town's register (none without one; None when it cannot be read): the popup shows
    the notice and its legal deadline, which an analysis run's own notice date must not contradict, and the profile
    (law) and section it was given under, its issued date and deadline also worded in the town's date format
    (``issued_date_text``, ``deadline_text``). ``other_run`` says, in one sentence, how the map's ``run`` measured other
    than the run the notice was given on (another profile, other values set on it, another distance), or is None:
    a what-if run's reason must not be mistaken for the notice's. A violation notice is given on no run of its own:
    it enforces the connection notice it cites, so it is measured against the run that one was given on."""
    try:
        register = app_register()
    except RegisterMissingError:
        return []
    except LayerError:
        return None
    keep = ("notice_id", "notice_type", "status", "issued_date", "deadline", "batch_id", "section")
    found = register.notices_of(parcel_id)
    if not found:
        return []
    # Both runs' settings as their profiles read them: "250" and "250.0" are one value, and a value equal to the
    # profile's own is not set (a what-if run at Fort Plain's own 100 ft measured as the notice's run did).
    source = _profile_source(run)
    mine = None if run is None else run | {"settings": services.settings_changed(source, run.get("settings"))}
    given = {b: _given_on(register, b, run, source) for b in {n["batch_id"] for n in found} if b}
    batch_of = {n["notice_id"]: n["batch_id"] for n in found}
    fmt = current_app.config["DATE_FORMAT"]

    def measured_on(n: dict) -> dict | None:
        """The run the notice was given on: its own batch's, else (a violation notice) its original notice's."""
        own = given.get(n["batch_id"])
        if own and own.get("distance_ft") is None and batch_of.get(n.get("original_notice_id")):
            return given.get(batch_of[n["original_notice_id"]]) or own
        return own

    return [
        {k: None if n[k] is None else str(n[k]) for k in keep}
        | {
            # the popup's dates, in the town's format: the page words no date itself
            "issued_date_text": town_date(n["issued_date"], fmt) or None,
            "deadline_text": town_date(n["deadline"], fmt) or None,
            # the day the parcel connected, where a notice marked connected recorded it (migration 0008)
            "connected_on_text": town_date(n.get("connected_on"), fmt) or None,
            "profile": (given.get(n["batch_id"]) or {}).get("profile"),
            "other_run": other_run(mine, measured_on(n), fmt),
        }
        for n in found
    ]


def _profile_source(run: dict | None) -> str | None:
    """The map's run's profile as the run gave it: a bundled name, or the ``.toml`` file a custom profile is read
    from (the run and the register name it by its id alone)."""
    workspace = (map_data().run() or {}).get("workspace")
    given = workspace.get("profile") if isinstance(workspace, dict) else None
    return given or (run or {}).get("profile")


def _given_on(register, batch_id: str, run: dict | None, source: str | None) -> dict | None:
    """How the run a batch was issued from measured: its profile, the values set on it (as the profile reads them),
    its distance, its date. A batch under the map's run's profile is read from the same profile file."""
    batch = register.batch(batch_id)
    if batch is None:
        return None
    recorded = register.run(batch["run_id"]) if batch.get("run_id") is not None else None
    recorded = recorded or {}
    profile = batch.get("profile")
    same = bool(run) and profile == run.get("profile")
    return {
        "profile": profile,
        "settings": services.settings_changed(source if same else profile, recorded.get("settings")),
        "distance_ft": recorded.get("distance_ft"),
        "analysed_at": recorded.get("analysed_at"),
    }


@bp.get("/building")
@requires("viewer")
def building():
    building_id = _required("id", "the building's ID")
    found = map_data().building(building_id)
    if found is None:
        abort(404, description=f"No building {building_id!r} in the map's buildings.")
    return jsonify(found)


@bp.get("/search")
@requires("viewer")
def search():
    return jsonify(map_data().search(request.args.get("q", "")))


@bp.get("/trace")
@requires("viewer")
def trace():
    parcel_id = request.args.get("parcel", "")
    data = map_data()
    if data.originals.get("parcel_results") is None or "mains" not in data.originals:
        abort(404, description=_no_network(data.path))
    t = services.trace_parcel(workspace(), parcel_id)
    doc = t.as_dict()
    doc["geojson"] = data.features_by_id("mains", "main_id", t.mains, ("main_id", "diameter_in"))
    doc["control_manhole_geojson"] = data.features_by_id(
        "manholes", "manhole_id", [t.control_manhole] if t.control_manhole else [], ("manhole_id",)
    )
    return jsonify(doc)


def _no_network(
    store: str, otherwise: str = "The store has no network or no results to trace: run the analysis first."
) -> str:
    """Why there is nothing to trace: a store of results without their layers says how to copy them in."""
    missing = services.results_without_inputs(store)
    return str(missing) if missing is not None else otherwise


@bp.get("/sewershed")
@requires("viewer")
def upstream():
    manhole = request.args.get("manhole", "")
    data = map_data()
    if "mains" not in data.originals:
        abort(404, description=_no_network(data.path, f"No manhole {manhole!r} in the network."))
    shed = services.sewershed(workspace(), manhole)
    doc = shed.as_dict()
    doc["geojson"] = data.features_by_id("mains", "main_id", shed.mains, ("main_id",))
    return jsonify(doc)


@bp.get("/results.<fmt>")
@requires("viewer")
def download(fmt: str):
    """Parcel results: all, those in ``bbox``, those listed by ``id`` (repeated), of one ``status``, and those whose
    parcel ID, site address or owner holds ``q`` (the table's filter box: any case)."""
    suffix = f".{fmt}"
    if suffix not in FORMATS:
        abort(404, description="Results download as .geojson, .gpkg, .parquet or .csv.")
    ids = request.args.getlist("id") or None
    status = request.args.get("status") or None
    if status is not None and status not in STATUSES:  # a typo downloaded an empty file, as if no parcel had it
        abort(400, description=f"No parcel status is called {status!r}: give one of {', '.join(STATUSES)}.")
    frame = map_data().selection(bbox_arg(), ids=ids, status=status)
    needle = (request.args.get("q") or "").strip().lower()
    if needle:
        fields = [c for c in ("parcel_id", "site_address", "owner_name") if c in frame.columns]
        held = [frame[c].astype(str).str.lower().str.contains(needle, regex=False) & frame[c].notna() for c in fields]
        frame = frame[np.logical_or.reduce(held)] if held else frame.iloc[:0]
    # beside the run's deadline, the one each owner's letter gave, where the town's register holds a notice; with no
    # register yet (RegisterMissingError), or one that cannot be read, the run's results alone
    with suppress(LayerError):
        frame = services.with_notices_in_force(frame, app_register())
    with tempfile.TemporaryDirectory(prefix="sewerplan-download-") as folder:
        path = Path(folder) / f"sewerplan-results{suffix}"
        services.export_results(str(path), frame)
        payload = io.BytesIO(path.read_bytes())
    return send_file(
        payload, mimetype=MIMETYPES[suffix], as_attachment=True, download_name=f"sewerplan-results{suffix}"
    )


# -- select by distance -------------------------------------------------------------------------------------------


def _within():
    """The request's select by distance: ``distance_ft`` and ``parcel`` (an ID) or ``geometry`` (GeoJSON)."""
    distance = request.args.get("distance_ft", type=float)
    if distance is None:
        abort(400, description="Give the distance in feet (distance_ft=300).")
    parcel_id = request.args.get("parcel") or None
    geometry = request.args.get("geometry")
    if parcel_id is None and not geometry:
        abort(400, description="Pick a parcel or draw a point, line or area to measure from.")
    shape = None
    if parcel_id is None:
        try:
            shape = json.loads(geometry)
        except ValueError:
            abort(400, description="The drawn feature is not GeoJSON.")
    return services.select_by_distance(workspace(), distance_ft=distance, parcel_id=parcel_id, geometry=shape)


@bp.get("/within")
@requires("viewer")
def within():
    """Parcels within a distance of a parcel or a drawn feature, the searched area, and the owners' mailing list."""
    found = _within()
    parcels = found.parcels
    listed = parcels.head(LISTED_WITHIN)
    fields = ("parcel_id", "status", "site_address", "owner_name", "distance_to_feature_ft", "source")
    rows = json.loads(listed[[c for c in fields if c in listed.columns]].to_json(orient="records"))
    return jsonify(
        {
            "distance_ft": found.distance_ft,
            "total": len(parcels),
            "parcels": rows,
            "mailing_rows": len(found.mailing),
            "no_address": found.no_address,
            "buffer": to_lonlat_geojson([found.buffer], parcels.crs)[0],
            "outlines": collection(listed, ("parcel_id",), layer="within"),
        }
    )


@bp.get("/within.csv")
@requires("viewer")
def within_csv():
    """The select by distance as CSV: the owners' mailing list (``list=mailing``, the default) or the parcels."""
    found = _within()
    which = request.args.get("list", "mailing")
    if which not in ("mailing", "parcels"):
        abort(400, description="list is mailing or parcels.")
    table = found.mailing if which == "mailing" else found.parcels
    name = f"within-{found.distance_ft:g}-ft-{which}.csv"
    with tempfile.TemporaryDirectory(prefix="sewerplan-within-") as folder:
        path = Path(folder) / name
        services.export_table(str(path), table)
        payload = io.BytesIO(path.read_bytes())
    return send_file(payload, mimetype="text/csv", as_attachment=True, download_name=name)
