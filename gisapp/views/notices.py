"""The notices page: the register with filters, preview and issue, downloads of the batch files, status changes."""

from __future__ import annotations

import datetime as dt
import io
import secrets
from pathlib import Path

from flask import Blueprint, abort, current_app, g, redirect, render_template, request, send_file, url_for
from werkzeug.utils import safe_join

from analysis.notices import due_notices, mailing_list
from analysis.profiles import load_profile
from gisapp.pipeline import issue_notices
from gisapp.security import requires
from gisapp.state import map_data
from layers.register import STATUSES, Register
from layers.store import latest_run

bp = Blueprint("notices", __name__, url_prefix="/notices")


def _register() -> Register:
    return Register(current_app.config["REGISTER"])


def _folder() -> Path:
    return Path(current_app.config["NOTICES_FOLDER"])


def _profile():
    return load_profile((latest_run(map_data().path) or {}).get("profile", "fort-plain"))


def _due(form):
    text = form.get("notice_date", "")
    try:
        day = dt.date.fromisoformat(text)
    except ValueError:
        abort(400, description=f"Notice date {text!r} is not a date (YYYY-MM-DD).")
    data = map_data()
    results = data.originals.get("parcel_results")
    if results is None:
        abort(400, description="Run the analysis first: there are no results to notice.")
    register = _register()
    excluded = register.excluded_parcels()
    due = due_notices(
        results, profile=_profile(), notice_date=day, notice_reason=form.get("reason") or None, exclude=excluded
    )
    return register, due, results, excluded


@bp.get("")
@requires("viewer")
def index():
    status = request.args.get("status") or None
    overdue = request.args.get("overdue") == "1"
    query = (request.args.get("q") or "").strip().lower()
    listing = _register().listing(
        status=status if status in STATUSES else None, overdue_on=dt.date.today() if overdue else None
    )
    if query:
        keep = listing["parcel_id"].str.lower().str.contains(query, regex=False) | listing["owner_name"].fillna(
            ""
        ).str.lower().str.contains(query, regex=False)
        listing = listing[keep]
    batches = sorted((p.name for p in _folder().iterdir() if p.is_dir()), reverse=True) if _folder().exists() else []
    return render_template(
        "notices/index.html",
        notices=listing.head(1000).to_dict("records"),
        total=len(listing),
        statuses=STATUSES,
        status=status,
        overdue=overdue,
        q=query,
        batches=batches,
        files={b: sorted(f.name for f in (_folder() / b).iterdir() if f.is_file()) for b in batches},
        profile=_profile(),
        preview=None,
        message=request.args.get("message"),
    )


@bp.post("/preview")
@requires("planner")
def preview():
    _, due, _, _ = _due(request.form)
    rows = mailing_list(due)
    listing = _register().listing()
    return render_template(
        "notices/index.html",
        notices=listing.head(1000).to_dict("records"),
        total=len(listing),
        statuses=STATUSES,
        status=None,
        overdue=False,
        q="",
        batches=[],
        files={},
        profile=_profile(),
        preview=rows.to_dict("records"),
        preview_count=len(due),
        form=request.form,
        message=None,
    )


@bp.post("/issue")
@requires("planner")
def issue():
    register, due, results, excluded = _due(request.form)
    data = map_data()
    batch = f"{request.form['notice_date']}-{secrets.token_hex(4)}"
    mandated = set(results.loc[results["status"] == "mandated", "parcel_id"].astype(str))
    doc = issue_notices(
        register,
        due,
        profile=_profile(),
        parcels=results,
        lines=data.originals.get("measuring_lines", results.iloc[:0]),
        mains=data.originals["mains"],
        out_dir=_folder() / batch,
        actor=f"web:{g.user}",
        already_before=len(mandated & excluded),
    )
    return redirect(
        url_for(
            "notices.index",
            message=f"{doc['issued']} notice(s) issued, {doc['already_open']} already noticed; files in batch {batch}.",
        )
    )


@bp.get("/files/<batch>/<path:name>")
@requires("viewer")
def download(batch: str, name: str):
    folder = (_folder() / batch).resolve()
    if folder.parent != _folder().resolve() or not folder.is_dir():
        abort(404, description="No such batch.")
    path = safe_join(str(folder), name)
    if path is None or not Path(path).is_file():
        abort(404, description="No such file in the batch.")
    return send_file(io.BytesIO(Path(path).read_bytes()), as_attachment=True, download_name=Path(path).name)


@bp.post("/<parcel_id>/mark")
@requires("planner")
def mark(parcel_id: str):
    status = request.form.get("status", "")
    until = request.form.get("until") or None
    _register().mark(parcel_id, status, actor=f"web:{g.user}", note=request.form.get("note") or None, deadline=until)
    return redirect(url_for("notices.index", message=f"{parcel_id}: {status}."))
