"""Starting an analysis run from the web page, and following its progress.

A run works on the request's store (the planner's workspace, else the town's store), with the workspace the
store's latest run recorded (its measuring CRS, column mapping, layer CRSs) and what the form gives: the profile,
the values set on it (``set``: one ``SECTION.KEY=VALUE`` a line, as the command line's ``--set``), whether the mains
are drawn in flow direction (``digitised_direction``), the notice date and reason. Only one run at a time may
write a store: a second is answered 409 "a run is in progress", in the JSON error shape the page shows.
"""

from __future__ import annotations

from flask import Blueprint, abort, current_app, g, jsonify, request

from analysis.dates import parse_day
from analysis.errors import AnalysisError
from analysis.mandate import check_notice
from gisapp import services
from gisapp.errors import without_server_folders
from gisapp.mapdata import NoDataYetError
from gisapp.security import requires
from gisapp.state import require_shown_workspace, start_analysis, state, store_path, unanalysed_spec
from gisapp.workspace import WorkspaceSpec, distinct_settings
from layers.errors import LayerError
from layers.store import StoreBusyError, store_exists, store_name

bp = Blueprint("analysis", __name__)


def parse_settings(text: str) -> tuple[tuple[str, str], ...]:
    """The form's ``set`` field: one ``SECTION.KEY=VALUE`` a line (blank lines and spaces ignored)."""
    pairs = []
    for line in text.replace(";", "\n").splitlines():
        if not line.strip():
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            abort(400, description=f"Settings: {line.strip()!r} is not SECTION.KEY=VALUE (mandate.distance_ft=200).")
        pairs.append((key.strip(), value.strip()))
    try:
        return distinct_settings(pairs, "Settings:", "keep one line for it, with the value you mean.")
    except LayerError as exc:
        abort(400, description=str(exc))


@bp.post("/analysis/run")
@requires("planner")
def run_analysis():
    require_shown_workspace()  # the page's "You are working on your upload" must be where the run goes
    profile = request.form.get("profile", "")
    if profile not in services.profile_names():
        abort(400, description=f"Unknown profile {profile!r}.")
    store = store_path()
    if not store_exists(store):  # a new town's server before its data is published: nothing to run on (404)
        raise NoDataYetError(store_name(store))
    # The latest run's record, read once: its workspace and its notice come from the same run, even when another
    # run lands meanwhile.
    last = services.recorded_run(store) or {}
    # A store never analysed: an upload checked in a measuring CRS of its own (data outside New York) is run in it.
    recorded = WorkspaceSpec.from_record(last) or unanalysed_spec(store)
    # The map's form sends the run's notice date and reason, prefilled; a client that sends neither keeps them for
    # the same profile (another profile may not allow the reason, or may require one).
    run = last if profile == recorded.profile else {}
    text = request.form.get("notice_date", run.get("notice_date") or "").strip()
    try:
        notice = parse_day(text, "The notice date") if text else None
    except AnalysisError as exc:
        abort(400, description=str(exc))
    reason = request.form.get("notice_reason", run.get("notice_reason")) or None
    # A field the form does not send keeps the run's value: its settings (for the same profile), its direction.
    if "set" in request.form:
        settings = parse_settings(request.form["set"])
    else:
        settings = recorded.settings if profile == recorded.profile else ()
    if "digitised_direction" in request.form:
        direction = any(v in ("1", "on", "true") for v in request.form.getlist("digitised_direction"))
    else:
        direction = recorded.digitised_direction
    spec = recorded.replace(profile=profile, settings=settings, digitised_direction=direction, data=None)
    check_notice(services.profile_of(spec), notice, reason)  # a broken profile, setting or notice: before starting
    try:
        job = start_analysis(current_app._get_current_object(), store, g.user, spec, notice, reason)
    except StoreBusyError as exc:
        said = without_server_folders(str(exc))
        body = {"error": {"status": 409, "title": "A run is in progress", "message": said, "problems": [], "fix": None}}
        return jsonify(body), 409
    return jsonify(job.as_dict()), 202


@bp.get("/api/jobs/<job_id>")
@requires("viewer")
def job_status(job_id: str):
    job = state().jobs.get(job_id)
    if job is None:
        abort(404, description="No such job.")
    # A failed run's sentence is the one its process gave (``web_text``, without the app to know its folders): the
    # map page shows it as "Failed: ...", so it names files, not the server's folders.
    return jsonify(job.as_dict() | {"error": job.error and without_server_folders(job.error)})
