"""The summary page: the latest analysis of the store, status by status, and the parcels that must connect.

Both come from the store as the map holds it in memory (``gisapp.mapdata``): the counts and the list are made once
per version of the store, not read from disk on every request.
"""

from __future__ import annotations

from flask import Blueprint, current_app, jsonify, render_template

from analysis.mandate import STATUSES
from gisapp import services
from gisapp.security import requires
from gisapp.state import map_data
from gisapp.views.notices import app_register
from gisapp.words import register_note
from layers.errors import LayerError
from layers.store import store_label

bp = Blueprint("summary", __name__)

LISTED = ("parcel_id", "site_address", "owner_name", "distance_ft", "main_id", "section", "deadline", "reason")


@bp.get("/summary")
@requires("viewer")
def index():
    data = map_data()  # the planner's workspace while they work on one, else the town's store
    counts = data.status_counts()
    total = counts.get("mandated", 0)
    return render_template(
        "summary/index.html",
        store=store_label(data.path),  # shown without a database password
        run=data.run(),
        statuses=STATUSES,
        counts=counts,
        mandated=data.mandated(LISTED, current_app.config["MAX_LISTED_PARCELS"]),
        total_mandated=total,
        register_note=_register_note(data, total),
        has_results=data.has_results,
    )


def _register_note(data, total: int) -> str | None:
    """How many of the parcels that must connect the town's register records connected or exempt (the popup's
    Register row, for them all), or None: none, no register yet, or one that cannot be read."""
    if not total:
        return None
    try:
        register = app_register()
    except LayerError:  # RegisterMissingError too: no register, nothing recorded
        return None
    ids = [row["parcel_id"] for row in data.mandated(("parcel_id",), total)]
    return register_note("mandated", recorded=services.register_recorded(register, ids))


@bp.get("/api/summary")
@requires("viewer")
def api_summary():
    data = map_data()
    if not data.has_results:
        return jsonify({"store": store_label(data.path), "run": None, "counts": {}}), 404
    counts = data.status_counts()
    return jsonify(
        {"store": store_label(data.path), "run": data.run(), "counts": {s: counts.get(s, 0) for s in STATUSES}}
    )
