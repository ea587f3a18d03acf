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
from gisapp.words import register_note, run_warnings, town_date, town_dates_in
from layers.errors import LayerError
from layers.store import store_name

bp = Blueprint("summary", __name__)

LISTED = ("parcel_id", "site_address", "owner_name", "distance_ft", "main_id", "section", "deadline", "reason")


@bp.get("/summary")
@requires("viewer")
def index():
    data = map_data()  # the planner's workspace while they work on one, else the town's store
    counts = data.status_counts()
    listed = with_distance_text(data.mandated(LISTED, current_app.config["MAX_LISTED_PARCELS"]), data.run())
    listed = with_deadlines(listed, current_app.config["DATE_FORMAT"])
    # the reason's "Deadline 2027-05-30." beside the deadline column's "May 30, 2027" (a tester): the town's format
    listed = [{**r, "reason": town_dates_in(r.get("reason"), current_app.config["DATE_FORMAT"])} for r in listed]
    return render_template(
        "summary/index.html",
        store=store_name(data.path),  # its file's name: no folder of the server, no database password
        run=data.run(),
        # the run's warnings, as the command line prints them (the deadline on a Sunday was said nowhere here)
        warnings=[town_dates_in(w, current_app.config["DATE_FORMAT"]) for w in run_warnings(data.run() or {})],
        statuses=shown_statuses(data),  # those the run's profile can give: Wappinger's has no "not on its street"
        counts=counts,
        mandated=listed,
        noticed=sum(1 for r in listed if r["deadline_from"] != "run"),
        total_mandated=counts.get("mandated", 0),
        register_note=register_note("mandated", recorded=mandated_recorded(data)) if data.has_results else None,
        has_results=data.has_results,
    )


def with_distance_text(rows: list[dict], run: dict | None) -> list[dict]:
    """The listed parcels, each with ``distance_text``: its distance as its reason words it (``feet_words``: "0.0 ft",
    and "99.96 ft" within 100 ft). The list said "0 ft" and "100.0 ft" beside reasons saying "0.0 ft" and "99.96 ft"."""
    texts = feet_words([r.get("distance_ft") for r in rows], (run or {}).get("distance_ft"))
    return [{**r, "distance_text": text or ""} for r, text in zip(rows, texts, strict=True)]


def with_deadlines(rows: list[dict], fmt: str) -> list[dict]:
    """The listed parcels, each with its deadline as the map popup gives it (``deadline_text``) and where it comes
    from (``deadline_from``): the notice's in the town's register where the parcel has one (once a notice is issued
    its deadline, not the one an analysis run's notice date gives, is the parcel's), else the run's, said to be
    only what a notice on the run's notice date would give. The Summary listed the run's deadline alone: empty for a
    run without a notice date, while the popup said "Deadline March 14, 2027 (in the notice)"."""
    try:
        found = services.notices_in_force(app_register(), [str(r["parcel_id"]) for r in rows])
    except LayerError:  # no register (RegisterMissingError), or one that cannot be read: the run's deadlines only
        found = {}
    out = []
    for r in rows:
        notice = found.get(str(r["parcel_id"]))
        if notice is None:
            day = town_date(r.get("deadline"), fmt)
            text, source = (f"{day} (if noticed on this run's notice date)" if day else ""), "run"
        elif notice["notice_type"] == "record":
            text, source = f"none: no notice was given (recorded connected{_on(notice, fmt)})", "record"
        elif notice["status"] == "prepared" or notice["deadline"] is None:
            text, source = "none yet: its notice is being prepared, not mailed", "notice"
        else:
            day = town_date(notice["deadline"], fmt)
            open_ = notice["status"] in ("open", "extended")
            said = "extended" if notice["status"] == "extended" else "in the notice" if open_ else None
            text = f"{day} ({said or 'in the notice; it no longer runs'})"
            if notice["status"] == "connected":  # beside the deadline, whether it was met: the board's question
                text = f"{day} (in the notice); connected{_on(notice, fmt) or ' (day not recorded)'}"
            source = "notice"
        out.append({**r, "deadline_text": text, "deadline_from": source, "notice_id": (notice or {}).get("notice_id")})
    return out


def _on(notice: dict, fmt: str) -> str:
    """ " on March 4, 2027": the day a notice's parcel connected, where the register holds it; "" otherwise."""
    day = town_date(notice.get("connected_on"), fmt)
    return f" on {day}" if day else ""


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
        return jsonify({"store": store_name(data.path), "run": None, "counts": {}}), 404
    counts = data.status_counts()
    recorded = mandated_recorded(data)
    return jsonify(
        {
            "store": store_name(data.path),
            "run": data.run(),
            "counts": {s: counts.get(s, 0) for s in STATUSES},
            # Of the parcels counted under "mandated", how many the register records connected and exempt, and the
            # Summary page's sentence saying so: the counts are the run's, which did not read the register.
            "register_recorded": recorded,
            "register_note": register_note("mandated", recorded=recorded),
        }
    )
