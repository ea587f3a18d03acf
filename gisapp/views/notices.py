"""The notices page: the register (paged, filtered), preview then confirm to issue, the batches and their files,
and status changes. Every parcel ID travels in a form field or a query parameter, never in a URL path, so IDs with
"/", "#", "?", "%" or spaces work.

The page reads only the register (one count and one page of rows, no write lock) and the store's run record; it
never loads the store's layers. Those are read for a preview or an issue only.
"""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

from flask import Blueprint, abort, current_app, g, redirect, render_template, request, send_file, url_for
from werkzeug.utils import safe_join

from analysis.errors import AnalysisError
from gisapp import services
from gisapp.errors import web_text
from gisapp.notices import today as notices_today
from gisapp.security import requires
from gisapp.state import recorded_spec, workspace
from layers.errors import LayerError
from layers.register import STATES, STATUSES, Register, RegisterMissingError, default_register_path, parse_date

bp = Blueprint("notices", __name__, url_prefix="/notices")
PAGE_ROWS = 100


def app_register(*, create: bool = False) -> Register:
    """The app's register, opened once per URL (its schema is checked once, without the write lock)."""
    config = current_app.config
    cache = current_app.extensions.setdefault("sewerplan_registers", {})
    key = (config["REGISTER"], config["STORE"])
    if key not in cache or create:
        cache[key] = services.open_register(config["REGISTER"], store=config["STORE"], create=create)
    return cache[key]


def _profile():
    """The profile as the town store's latest run applied it (the page's heading and notice reasons)."""
    return services.profile_of(recorded_spec(current_app.config["STORE"]))


def _town():
    return services.town(None, data=current_app.config["STORE"])


def _back(message: str | None = None, error: str | None = None):
    args = {k: v for k, v in (("message", message), ("error", error)) if v}
    return redirect(url_for("notices.index", **args))


@bp.get("")
@requires("viewer")
def index():
    return _page()


def _page(*, preview=None, status_code: int = 200, error: str | None = None, form: dict | None = None):
    status = request.args.get("status") or None
    status = status if status in STATES else None
    overdue = request.args.get("overdue") == "1"
    query = (request.args.get("q") or "").strip()
    page = max(1, request.args.get("page", default=1, type=int) or 1)
    try:
        register = app_register()
    except RegisterMissingError as exc:
        return render_template(
            "notices/index.html",
            missing=str(exc),
            new_register=str(default_register_path(current_app.config["STORE"])),
            profile=_profile(),
            preview=None,
            form=form or {},
            message=request.args.get("message"),
            error=error or request.args.get("error"),
        ), status_code
    filters = {
        "status": status,
        "overdue_on": notices_today() if overdue else None,
        "query": query or None,
    }
    total = register.count(**filters)
    page = min(page, max(1, -(-total // PAGE_ROWS)))  # past the last page (or past any integer): the last page
    rows = register.listing(**filters, limit=PAGE_ROWS, offset=(page - 1) * PAGE_ROWS).to_dict("records")
    return render_template(
        "notices/index.html",
        missing=None,
        notices=rows,
        total=total,
        page=page,
        pages=max(1, -(-total // PAGE_ROWS)),
        statuses=STATUSES,
        states=STATES,
        status=status,
        overdue=overdue,
        q=query,
        batches=[b | {"interrupted": services.batch_interrupted(b)} for b in register.batches()[:20]],
        profile=_profile(),
        preview=preview,
        form=preview["form"] if preview else (form or {}),
        message=request.args.get("message"),
        error=error or request.args.get("error"),
    ), status_code


@bp.post("/register")
@requires("planner")
def create_register():
    """Create the town's register beside the store and record it there (the page's "--new")."""
    register = app_register(create=True)
    return _back(message=f"The notice register was created: {register.url.removeprefix('sqlite:///')}.")


def _plan(form) -> tuple[Register, services.NoticePreview, dict]:
    """Settle unfinished batches, then preview the notices the form asks for (``services.preview_notices``)."""
    day = parse_date(form.get("notice_date", ""), "The notice date")
    register = app_register()
    reason = form.get("notice_reason") or None
    hazard = (form.get("hazard") or "").strip() or None
    settled = services.settle(register, actor=f"web:{g.user}")
    found = services.preview_notices(
        workspace(), register, town=_town(), notice_date=day, notice_reason=reason, hazard=hazard
    )
    return register, found, found.doc | {"settled": settled, "token": _confirmation(found.plan)}


def _kept(form) -> dict:
    return {k: form.get(k, "") for k in ("notice_date", "notice_reason", "hazard")}


def _confirmation(plan) -> str:
    """What the clerk confirmed: the date, the reason and exactly these parcels."""
    text = "|".join([plan.notice_date.isoformat(), plan.reason or "", *sorted(plan.due["parcel_id"].astype(str))])
    return hashlib.sha256(text.encode()).hexdigest()[:24]


@bp.post("/settle")
@requires("planner")
def settle():
    """Finish or cancel the batches whose writer stopped (the next preview does the same)."""
    done = services.settle(app_register(), actor=f"web:{g.user}")
    if not done:
        return _back(message="No unfinished batch to settle: a batch still being written is left to its process.")
    said = []
    for d in done:
        count = f" ({d['notices']} notice(s))" if d["notices"] else ""
        said.append(f"batch {d['batch']} {'issued' if d['action'] == 'issued' else 'cancelled, never mailed'}{count}")
    return _back(message="Settled: " + "; ".join(said) + ".")


@bp.post("/preview")
@requires("planner")
def preview():
    try:
        _, found, doc = _plan(request.form)
    except (LayerError, AnalysisError) as exc:
        return _page(error=web_text(exc), form=_kept(request.form), status_code=400)
    return _page(preview=_preview_view(found, doc, request.form))


def _preview_view(found: services.NoticePreview, doc: dict, form) -> dict:
    return {
        "rows": found.rows.to_dict("records"),
        "count": len(found.plan.due),
        "doc": doc,
        "form": _kept(form),
    }


@bp.post("/issue")
@requires("planner")
def issue():
    try:
        register, found, doc = _plan(request.form)
    except (LayerError, AnalysisError) as exc:
        return _page(error=web_text(exc), form=_kept(request.form), status_code=400)
    if request.form.get("confirm") != doc["token"]:
        # Never issue without the clerk having seen exactly what will be issued.
        view = _preview_view(found, doc, request.form)
        view["ask"] = (
            "Check the preview below, then confirm to issue."
            if not request.form.get("confirm")
            else "The notices due have changed since the preview: check them again, then confirm."
        )
        return _page(preview=view)
    try:
        done = services.issue_notices(found, register, root=current_app.config["NOTICES_FOLDER"], actor=f"web:{g.user}")
    except (LayerError, AnalysisError) as exc:
        return _page(error=web_text(exc), form=_kept(request.form), status_code=400)
    already = done["already_open"]
    if not done["batch"]:
        return _back(message=f"0 notice(s) issued, {already} already noticed: no files written.")
    return _back(
        message=f"{done['issued']} notice(s) issued, {already} already noticed; batch {done['batch']}, "
        f"{len(done['letters'])} letter(s): download them below."
    )


@bp.get("/files/<batch>/<path:name>")
@requires("viewer")
def download(batch: str, name: str):
    record = app_register().batch(batch)
    if record is None:
        abort(404, description="No such batch in the register.")
    folder = (Path(record["folder"]) / batch).resolve()
    path = safe_join(str(folder), name)
    if path is None or not Path(path).is_file():
        abort(404, description="No such file in the batch.")
    return send_file(io.BytesIO(Path(path).read_bytes()), as_attachment=True, download_name=Path(path).name)


@bp.post("/mark")
@requires("planner")
def mark():
    parcel_id = request.form.get("parcel_id", "")
    status = request.form.get("status", "")
    until = (request.form.get("until") or "").strip() or None
    note = (request.form.get("note") or "").strip() or None
    if not parcel_id:
        return _back(error="No parcel was given: use the Save button on the parcel's row.")
    if status not in STATUSES[1:]:
        return _back(
            error=f"Choose what happened to parcel {parcel_id}'s notice (connected, extended, exempt or withdrawn), "
            "then Save."
        )
    if status == "extended" and not until:
        return _back(error=f"An extension needs the new deadline: pick a date for parcel {parcel_id}, then Save.")
    if status != "extended" and until:
        return _back(
            error=f"A new deadline goes only with an extension: parcel {parcel_id}'s notice was not changed. Choose "
            "extended, or clear the date."
        )
    try:
        app_register().mark(parcel_id, status, actor=f"web:{g.user}", note=note, deadline=until)
    except LayerError as exc:
        return _back(error=web_text(exc))
    return _back(message=f"{parcel_id}: {status}.")
