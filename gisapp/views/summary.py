"""The summary page: the latest analysis of the store, status by status, and the parcels that must connect.

Both come from the store as the map holds it in memory (``gisapp.mapdata``): the counts and the list are made once
per version of the store, not read from disk on every request.
"""

from __future__ import annotations

from flask import Blueprint, current_app, jsonify, render_template

from analysis.mandate import STATUSES
from gisapp import services
from gisapp.mapdata import feet_words
from gisapp.security import requires
from gisapp.state import map_data
from gisapp.views.map import shown_statuses
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
    return render_template(
        "summary/index.html",
        store=store_label(data.path),  # shown without a database password
        run=data.run(),
        statuses=shown_statuses(data),  # those the run's profile can give: Wappinger's has no "not on its street"
        counts=counts,
        mandated=with_distance_text(data.mandated(LISTED, current_app.config["MAX_LISTED_PARCELS"]), data.run()),
        total_mandated=counts.get("mandated", 0),
        register_note=register_note("mandated", recorded=mandated_recorded(data)) if data.has_results else None,
        has_results=data.has_results,
    )


def with_distance_text(rows: list[dict], run: dict | None) -> list[dict]:
    """The listed parcels, each with ``distance_text``: its distance as its reason words it (``feet_words``: "0.0 ft",
    and "99.96 ft" within 100 ft). The list said "0 ft" and "100.0 ft" beside reasons saying "0.0 ft" and "99.96 ft"."""
    texts = feet_words([r.get("distance_ft") for r in rows], (run or {}).get("distance_ft"))
    return [{**r, "distance_text": text or ""} for r, text in zip(rows, texts, strict=True)]


def mandated_recorded(data) -> dict[str, int] | None:
    """How many of the run's parcels that must connect the town's register records ``connected`` and ``exempt``
    (the popup's Register row, for them all), or None: no register yet, or one that cannot be opened.

    The Summary page words it (``register_note`` with ``recorded=``) and ``/api/summary`` gives the numbers and the
    same sentence: the run's counts alone, there, read as if the register held nothing otherwise."""
    try:
        register = app_register()
    except LayerError:  # RegisterMissingError too: no register, nothing recorded
        return None
    total = data.status_counts().get("mandated", 0)
    if not total:
        return {"connected": 0, "exempt": 0}
    ids = [row["parcel_id"] for row in data.mandated(("parcel_id",), total)]
    return services.register_recorded(register, ids)


@bp.get("/api/summary")
@requires("viewer")
def api_summary():
    data = map_data()
    if not data.has_results:
        return jsonify({"store": store_label(data.path), "run": None, "counts": {}}), 404
    counts = data.status_counts()
    recorded = mandated_recorded(data)
    return jsonify(
        {
            "store": store_label(data.path),
            "run": data.run(),
            "counts": {s: counts.get(s, 0) for s in STATUSES},
            # Of the parcels counted under "mandated", how many the register records connected and exempt, and the
            # Summary page's sentence saying so: the counts are the run's, which did not read the register.
            "register_recorded": recorded,
            "register_note": register_note("mandated", recorded=recorded),
        }
    )
