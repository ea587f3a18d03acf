"""Starting an analysis run from the web page, and following its progress.

A run works on the request's store (the planner's workspace, else the town's store). Only one run at a time may
write a store: a second is answered 409 "a run is in progress" at once, in the JSON error shape the page shows.
"""

from __future__ import annotations

import datetime as dt

from flask import Blueprint, abort, current_app, g, jsonify, request

from analysis.profiles import available_profiles, load_profile
from gisapp.security import requires
from gisapp.state import start_analysis, state, store_path
from layers.store import StoreBusyError

bp = Blueprint("analysis", __name__)


@bp.post("/analysis/run")
@requires("planner")
def run_analysis():
    profile = request.form.get("profile", "")
    if profile not in available_profiles():
        abort(400, description=f"Unknown profile {profile!r}.")
    text = request.form.get("notice_date", "").strip()
    try:
        notice = dt.date.fromisoformat(text) if text else None
    except ValueError:
        abort(400, description=f"Notice date {text!r} is not a date (YYYY-MM-DD).")
    reason = request.form.get("notice_reason") or None
    load_profile(profile)  # refuse a broken profile before starting
    try:
        job = start_analysis(current_app._get_current_object(), store_path(), g.user, profile, notice, reason)
    except StoreBusyError as exc:
        body = {"error": {"status": 409, "title": "A run is in progress", "message": str(exc), "problems": []}}
        return jsonify(body), 409
    return jsonify(job.as_dict()), 202


@bp.get("/api/jobs/<job_id>")
@requires("viewer")
def job_status(job_id: str):
    job = state().jobs.get(job_id)
    if job is None:
        abort(404, description="No such job.")
    return jsonify(job.as_dict())
