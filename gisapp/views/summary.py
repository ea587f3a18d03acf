"""The summary page: the latest analysis of the store, status by status, and the parcels that must connect."""

from __future__ import annotations

from flask import Blueprint, current_app, jsonify, render_template

from analysis.mandate import STATUSES
from gisapp.security import requires
from gisapp.state import store_path
from layers.store import latest_run, read_results, store_label

bp = Blueprint("summary", __name__)


def _load():
    store = store_path()  # the planner's workspace while they work on one, else the town's store
    return store_label(store), latest_run(store), read_results(store)  # shown without a database password


@bp.get("/summary")
@requires("viewer")
def index():
    store, run, results = _load()
    mandated = []
    if results is not None:
        rows = results[results["status"] == "mandated"].sort_values("parcel_id")
        limit = current_app.config["MAX_LISTED_PARCELS"]
        cols = ["parcel_id", "site_address", "owner_name", "distance_ft", "main_id", "section", "deadline", "reason"]
        present = [c for c in cols if c in rows.columns]
        mandated = rows[present].head(limit).to_dict("records")
    return render_template(
        "summary/index.html",
        store=store,
        run=run,
        statuses=STATUSES,
        mandated=mandated,
        has_results=results is not None,
    )


@bp.get("/api/summary")
@requires("viewer")
def api_summary():
    store, run, results = _load()
    if results is None:
        return jsonify({"store": store, "run": None, "counts": {}}), 404
    counts = {s: int((results["status"] == s).sum()) for s in STATUSES}
    return jsonify({"store": store, "run": run, "counts": counts})
