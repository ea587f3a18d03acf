"""The notices page: the register (paged, filtered), preview then confirm to issue, the batches and their files,
and status changes. Every parcel ID travels in a form field or a query parameter, never in a URL path, so IDs with
"/", "#", "?", "%" or spaces work.

The page reads only the register (one count and one page of rows, no write lock) and the store's run record; it
never loads the store's layers. Those are read for a preview or an issue only.
"""

from __future__ import annotations

import hashlib
import io
import re
import tempfile
from pathlib import Path

from flask import (
    Blueprint,
    abort,
    current_app,
    g,
    redirect,
    render_template,
    request,
    send_file,
    url_for,
)
from werkzeug.utils import safe_join, secure_filename

from analysis.errors import AnalysisError
from analysis.notices import (
    NoticeChoice,
    mailing_address,
    mailing_warnings,
    mailing_words,
    service_record_words,
    service_words,
)
from gisapp import services
from gisapp.errors import web_text, without_server_folders
from gisapp.mapdata import NoDataYetError
from gisapp.notices import BatchDatedError, check_notice_date, left_out, unfinished_batch
from gisapp.notices import mark as notices_mark
from gisapp.notices import record_article_number as notices_record_article_number
from gisapp.notices import record_mailing as notices_record_mailing
from gisapp.notices import today as notices_today
from gisapp.security import requires
from gisapp.state import recorded_spec, workspace
from gisapp.views._said import heard, say
from gisapp.words import count as count_words
from gisapp.words import (
    file_words,
    letter_count_words,
    letters_written,
    not_yet_overdue,
    town_date,
    town_dates_in,
    unmapped_area_words,
    without_folders,
)
from layers.errors import LayerError
from layers.letters import occupant_copies
from layers.register import (
    STATES,
    STATUSES,
    MailingConflictError,
    NoticeChangedError,
    OpenNoticeError,
    Register,
    RegisterMissingError,
    ServiceRecordedError,
    UnfinishedBatchError,
    default_register_path,
    parse_date,
)
from layers.store import store_exists, store_label, store_name

bp = Blueprint("notices", __name__, url_prefix="/notices")
PAGE_ROWS = 100


def app_register(*, create: bool = False) -> Register:
    """The app's register, opened once per URL (its schema is checked once, without the write lock).

    Each time, the register named (``REGISTER``, else ``SEWERPLAN_DATABASE_URL``) is checked against the one the
    store records (``RegisterClashError``): a store may come to record another since it was opened (a first
    ``notices issue --new`` from the command line, a store replaced), and a page using one register and the
    command line the other would give the same owners second notices."""
    config = current_app.config
    cache = current_app.extensions.setdefault("sewerplan_registers", {})
    key = (config["REGISTER"], config["STORE"])
    if key not in cache or create:
        cache[key] = services.open_register(config["REGISTER"], store=config["STORE"], create=create)
    else:
        services.check_register(config["REGISTER"], store=config["STORE"])
    return cache[key]


def _missing_words(exc: RegisterMissingError) -> str:
    """Why there is no register, as the command line says it, but naming the store and each register by its file's
    name: the page showed a viewer the server's folders (``/srv/.../instance/sewerplan.gpkg``)."""
    store = current_app.config["STORE"]
    places = [store, store_label(store), str(default_register_path(store)), exc.url, *exc.known]
    return without_folders(str(exc), places)


def _profile():
    """The profile as the town store's latest run applied it (the page's heading and notice reasons)."""
    return services.profile_of(recorded_spec(current_app.config["STORE"]))


def _town():
    return services.town(None, data=current_app.config["STORE"])


def _require_town_data() -> None:
    """Refuse with the no-data page (``NoDataYetError``) where the town's store does not exist yet: a new town's server
    offered "Create the notice register", which then failed telling the clerk to press it, as the register is made
    beside the store and recorded in it."""
    store = current_app.config["STORE"]
    if not store_exists(store):
        raise NoDataYetError(store_name(store))


def _back(message: str | None = None, error: str | None = None):
    """Back to the register page, saying ``message`` (what was done) or ``error`` there once, and on no other page.

    The sentences travel in the signed session under a key of their own (``gisapp.views._said``), never in the
    address: a link with ``?message=...`` cannot make the page announce notices that were never issued, and a
    redirect not followed (a script, a second tab) leaves its sentence off every other page."""
    # A row's change comes back to the register as the clerk had it (filters and page), sent as back_* fields.
    kept = {k: v for k in BACK_ARGS if (v := request.form.get(f"back_{k}"))}
    error = town_dates_in(error, current_app.config["DATE_FORMAT"])  # the register's ISO days, as the page writes them
    return redirect(url_for("notices.index", **kept, **say(message=message, error=error)))


# The register page's filters and page, which a row's change returns to.
BACK_ARGS = ("status", "overdue", "q", "page")


@bp.get("")
@requires("viewer")
def index():
    return _page()


def _page(
    *,
    preview=None,
    status_code: int = 200,
    error: str | None = None,
    form: dict | None = None,
    settled: list[dict] | None = None,
    record_form: dict | None = None,
    service_form: dict | None = None,
    violations: dict | None = None,
    violations_form: dict | None = None,
):
    """The register page; ``settled`` are the interrupted batches this request finished or cancelled first. Its error
    names no folder of the server (a failed issue named the notices folder's full path)."""
    error = without_server_folders(error or heard("error") or "") or None
    status = request.args.get("status") or None
    status = status if status in STATES else None
    overdue = request.args.get("overdue") == "1"
    query = (request.args.get("q") or "").strip()
    page = max(1, request.args.get("page", default=1, type=int) or 1)
    try:
        register = app_register()
    except RegisterMissingError as exc:
        _require_town_data()  # no register and no data: "Create the notice register" could not make one
        return render_template(
            "notices/index.html",
            missing=_missing_words(exc),
            new_register=file_words(default_register_path(current_app.config["STORE"])),
            profile=_profile(),
            preview=None,
            form=form or {},
            settled=None,
            message=heard("message"),
            error=error,
        ), status_code
    filters = {
        "status": status,
        "overdue_on": notices_today() if overdue else None,
        "query": query or None,
    }
    total = register.count(**filters)
    page = min(page, max(1, -(-total // PAGE_ROWS)))  # past the last page (or past any integer): the last page
    listing = register.listing(**filters, limit=PAGE_ROWS, offset=(page - 1) * PAGE_ROWS)
    # A field the register leaves empty (a record's owner: it has no letter) is None, not NaN: NaN is true in the
    # template, and the owner cell of a connection recorded without a notice said "nan".
    rows = listing.astype(object).where(listing.notna(), None).to_dict("records")
    all_batches = register.batches()
    copies = _copies_of_batches(all_batches, {r["batch_id"] for r in rows if r.get("batch_id")})
    for row in rows:  # how it was served, as its letter said, and the article number once recorded
        if copy := copies.get(row.get("batch_id"), {}).get(row["notice_id"]):
            row["copy_file"], row["copy_no"] = copy  # its copy to the occupant at the site, linked beside its letter
        row["served"] = service_words(
            row.get("served_by"),
            row.get("certified_article_no"),
            town_date(row.get("served_on"), current_app.config["DATE_FORMAT"]),
            row.get("served_by_name"),
            row.get("occupant_article_no"),
        )
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
        back={k: v for k, v in zip(BACK_ARGS, (status, overdue and "1", query, page > 1 and page), strict=True) if v},
        batches=[_batch_view(b, copies) for b in all_batches[:20]],
        profile=_profile(),
        preview=preview,
        form=preview["form"] if preview else (form or {}),
        violations=violations,
        violations_form=violations["form"] if violations else (violations_form or {}),
        settled=_settled_words(settled or []),
        record_form=record_form,
        service_form=service_form,
        correct_words=CORRECT_WORDS,
        one_correct_words=ONE_CORRECT_WORDS,
        by_id_form=BY_ID_FORM,
        service_correct_words=SERVICE_CORRECT_WORDS,
        message=heard("message"),
        error=error,
    ), status_code


def _batch_view(batch: dict, copies: dict[str, dict] | None = None) -> dict:
    """A batch row of the page: ``interrupted`` (its writer stopped), ``dated`` (interrupted, its letters dated before
    today: offered "Cancel this batch" and "Issue it as dated", not a settle that would refuse it), ``away`` (being
    written into a folder this machine cannot see: offered "Cancel this batch") and ``copies``, how many copies to
    the occupant at the site an issued batch wrote (in its merged letters, beside the owners')."""
    prepared = batch["status"] == "prepared"
    interrupted = services.batch_interrupted(batch)
    issued = batch["status"] == "issued"
    if issued and copies is not None and batch["batch_id"] not in copies:
        copies |= _copies_of_batches([batch], {batch["batch_id"]})
    return batch | {
        "interrupted": interrupted,
        "dated": interrupted and batch["notice_date"] < notices_today(),
        "away": prepared and not Path(batch["folder"]).is_dir(),
        "copies": len((copies or {}).get(batch["batch_id"], {})) if issued else 0,
    }


def _copies_of_batches(batches: list[dict], wanted: set[str]) -> dict[str, dict]:
    """The copies to the occupant at the site (``layers.letters.occupant_copies``) of each issued batch in
    ``wanted``, by batch and notice: the register records each notice's own letter only."""
    return {
        b["batch_id"]: occupant_copies(Path(b["folder"]) / b["batch_id"])
        for b in batches
        if b["batch_id"] in wanted and b["status"] == "issued"
    }


@bp.post("/register")
@requires("planner")
def create_register():
    """Create the town's register beside the store and record it there (the page's "--new")."""
    _require_town_data()
    register = app_register(create=True)
    where = f"as {register.path.name}, beside the store" if register.path else "in a schema of the store's database"
    return _back(message=f"The notice register was created {where}.")  # its name, not the server's folders


def _settle_first(settled: list[dict]) -> Register:
    """The register, with its interrupted batches settled (``services.settle``) and appended to ``settled``, so the
    page can say what was done to them even when the preview that follows is refused. One dated before today
    refuses the preview, in the page's words (its row's buttons)."""
    register = app_register()
    try:
        settled += services.settle(register, actor=f"web:{g.user}")
    except BatchDatedError as exc:
        settled += exc.settled
        raise LayerError(exc.words(web=True)) from None
    return register


def _settled_words(done: list[dict]) -> str | None:
    """What settling did, in a clerk's words: each interrupted batch, whether it was issued (its letters were all
    written) or cancelled and never mailed, and why. None when nothing was settled."""
    said = []
    for d in done:
        count = f" ({d['notices']} notice(s))" if d["notices"] else ""
        if d["action"] == "issued":
            said.append(f"batch {d['batch']}{count} was completed and issued: all its letters had been written")
        else:
            said.append(f"batch {d['batch']}{count} was cancelled, never mailed: {d['why']}")
    if not said:
        return None
    return f"{count_words(len(said), 'interrupted batch', 'interrupted batches')} settled: {'; '.join(said)}."


def _plan(register: Register, form) -> tuple[services.NoticePreview, dict]:
    """Preview the notices the form asks for (``services.preview_notices``), with the clerk's confirmation token."""
    day = parse_date(form.get("notice_date", ""), "The notice date")
    reason = form.get("notice_reason") or None
    hazard = (form.get("hazard") or "").strip() or None
    choice = _choice(form)
    found = services.preview_notices(
        workspace(),
        register,
        town=_town(),
        notice_date=day,
        notice_reason=reason,
        hazard=hazard,
        occupant=_occupant(form),
        choice=choice,
    )
    token = _confirmation(found.plan, _occupant(form), choice)
    return found, found.doc | {"token": token, "choice_token": _choice_token(choice)}


def _kept(form) -> dict:
    """The form's fields as given again (the confirm form's hidden fields): the pasted parcel IDs one line of them,
    separated by commas, as a hidden field carries them whole."""
    kept = {k: form.get(k, "") for k in ("notice_date", "notice_reason", "hazard", "occupant", "street")}
    ids = [i.strip() for i in _ID_SEPARATORS.split(form.get("parcels") or "") if i.strip()]
    return kept | {"parcels": ", ".join(dict.fromkeys(ids))}


# A pasted list of parcel IDs is split at commas, semicolons and line ends (a spreadsheet's column pastes as lines),
# never at spaces: a parcel ID may hold one.
_ID_SEPARATORS = re.compile(r"[,;\t\r\n]+")


def _choice(form) -> NoticeChoice | None:
    """The mandated parcels the clerk chose (the parcel IDs pasted, the street typed; `notices issue --parcel-ids`,
    `--street`), or None for every one."""
    ids = tuple(_ID_SEPARATORS.split(form.get("parcels") or ""))
    return NoticeChoice(parcel_ids=ids, street=form.get("street")) or None


def _choice_token(choice: NoticeChoice | None) -> str:
    """The choice alone, carried by the confirm form, so a confirm whose choice is not its preview's says so."""
    return hashlib.sha256((choice.key() if choice else "").encode()).hexdigest()[:24]


def _occupant(form) -> bool:
    """Whether the clerk ticked "copies to the occupant" (``notices issue --occupant``)."""
    return form.get("occupant") == "1"


def _confirmation(plan, occupant: bool = False, choice: NoticeChoice | None = None) -> str:
    """What the clerk confirmed: the date, the reason, exactly these parcels, whether copies go to the occupant, and
    the parcels chosen (by ID, by street): a choice that takes in the same notices is still another choice."""
    parcels = sorted(plan.due["parcel_id"].astype(str))
    chosen = choice.key() if choice else ""
    text = "|".join([plan.notice_date.isoformat(), plan.reason or "", "occupant" if occupant else "", chosen, *parcels])
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _copies_changed(occupant: bool) -> str:
    """Why a confirm was refused when only "copies to the occupant" differs from its preview: it was refused saying
    "The notices due have changed since the preview", which they had not (a tester)."""
    if occupant:
        return (
            "The copies to the occupant were not asked for in the preview: preview again (below, with the copies), "
            "then confirm."
        )
    return (
        "The copies to the occupant were asked for in the preview: preview again (below, without the copies), "
        "then confirm."
    )


# What a batch row's buttons ask of ``services.resume`` (the web's `notices resume BATCH --cancel` / `--as-dated`).
BATCH_WAYS = {"cancel": {"cancel": True}, "as_dated": {"as_dated": True}}


@bp.post("/settle")
@requires("planner")
def settle():
    """Finish or cancel the batches whose writer stopped (the next preview does the same); with ``batch_id`` and
    ``way``, one batch's row's button: cancel it, or issue it as dated (``services.resume``, as the command does)."""
    if batch_id := (request.form.get("batch_id") or "").strip():
        return _settle_batch(batch_id, request.form.get("way", ""))
    try:
        done = services.settle(app_register(), actor=f"web:{g.user}")
    except BatchDatedError as exc:
        first = f"{_settled_words(exc.settled)} " if exc.settled else ""
        return _back(error=f"{first}{exc.words(web=True)}")
    if not done:
        return _back(message="No unfinished batch to settle: a batch still being written is left to its process.")
    return _back(message=_settled_words(done))


def _settle_batch(batch_id: str, way: str):
    """A batch row's "Cancel this batch" or "Issue it as dated" (``BATCH_WAYS``)."""
    if way not in BATCH_WAYS:
        return _back(error=f'Use "Cancel this batch" or "Issue it as dated" on batch {batch_id}\'s row.')
    try:
        done = services.resume(app_register(), batch_id, actor=f"web:{g.user}", **BATCH_WAYS[way])
    except BatchDatedError as exc:
        return _back(error=exc.words(web=True))
    except LayerError as exc:
        return _back(error=web_text(exc))
    if done["action"] == "cancelled":
        return _back(
            message=f"Batch {batch_id} was cancelled, never mailed; the parcels it held are noticed again in the "
            "next batch."
        )
    if done.get("as_dated"):
        return _back(message=f"Batch {batch_id}: {done['notices']} notice(s) issued as dated. {done['note']}")
    return _back(message=f"Batch {batch_id}: {done['notices']} notice(s) issued; all its letters had been written.")


@bp.post("/preview")
@requires("planner")
def preview():
    settled: list[dict] = []
    try:
        found, doc = _plan(_settle_first(settled), request.form)
        # A notice date Confirm would refuse (before today) is refused here: the page offered Confirm for a batch it
        # then refused. What else blocks issuing (town settings) the preview lists, as "Before issuing".
        check_notice_date(found.plan.notice_date)
    except (LayerError, AnalysisError) as exc:
        return _page(error=web_text(exc), form=_kept(request.form), status_code=400, settled=settled)
    return _page(preview=_preview_view(found, doc, request.form), settled=settled)


def _preview_view(found: services.NoticePreview, doc: dict, form) -> dict:
    return {
        "rows": [r | {"mailing_address": mailing_address(r)} for r in found.rows.to_dict("records")],
        "count": len(found.plan.due),
        # the owners' letters and the copies to the occupant the issue writes beside them, counted by its own rule
        "letters": letter_count_words(len(found.rows), doc.get("occupant_copies", 0)),
        "already": " ".join(left_out(doc, web=True)),
        "area_unmapped": unmapped_area_words(doc.get("area_unmapped"), doc.get("mandated")),
        "doc": doc,
        "form": _kept(form),
    }


@bp.post("/issue")
@requires("planner")
def issue():
    settled: list[dict] = []
    try:
        register = _settle_first(settled)
        found, doc = _plan(register, request.form)
    except (LayerError, AnalysisError) as exc:
        return _page(error=web_text(exc), form=_kept(request.form), status_code=400, settled=settled)
    if request.form.get("confirm") != doc["token"]:
        # Never issue without the clerk having seen exactly what will be issued.
        view = _preview_view(found, doc, request.form)
        confirmed = request.form.get("confirm")
        if not confirmed:
            view["ask"] = "Check the preview below, then confirm to issue."
        elif request.form.get("choice_token", doc["choice_token"]) != doc["choice_token"]:
            view["ask"] = (
                "The parcels chosen (the parcel IDs, the street) are not those of the preview: check the preview "
                "below, made with the parcels chosen now, then confirm."
            )
        elif confirmed == _confirmation(found.plan, not _occupant(request.form), _choice(request.form)):
            view["ask"] = _copies_changed(_occupant(request.form))
        else:
            view["ask"] = "The notices due have changed since the preview: check them again, then confirm."
        return _page(preview=view, settled=settled)
    try:
        done = services.issue_notices(
            found,
            register,
            root=current_app.config["NOTICES_FOLDER"],
            actor=f"web:{g.user}",
            occupant=_occupant(request.form),
        )
    except (LayerError, AnalysisError) as exc:
        return _page(error=web_text(exc), form=_kept(request.form), status_code=400, settled=settled)
    already = done["already_open"]
    first = f"{_settled_words(settled)} " if settled else ""
    if not done["batch"]:
        return _back(message=f"{first}0 notice(s) issued, {already} already noticed: no files written.")
    return _back(
        message=f"{first}{done['issued']} notice(s) issued, {already} already noticed; batch {done['batch']}, "
        f"{letters_written(done)}: download them below."
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
    """A row's Save: changes the notice that row showed (``notice_id``), and only while it is still open."""
    parcel_id = request.form.get("parcel_id", "")
    notice_id = request.form.get("notice_id", "")
    status = request.form.get("status", "")
    until = (request.form.get("until") or "").strip() or None
    on = (request.form.get("on") or "").strip() or None  # connected: the day it connected (empty: today)
    note = (request.form.get("note") or "").strip() or None
    correct = request.form.get("correct") == "1"  # a connected row's "Correct the day": the day alone is replaced
    if not parcel_id:
        return _back(error="No parcel was given: use the Save button on the parcel's row.")
    if correct and (status != "connected" or not on):
        return _back(error=f"Pick the right day parcel {parcel_id} connected, then Correct the day.")
    if not notice_id:  # a page from before the form named its notice: which notice it showed is not known
        return _stale(
            f"This page's Save form does not say which of parcel {parcel_id}'s notices it showed: nothing was "
            "changed. Reload the notices page, then save again."
        )
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
    if status != "connected" and on:
        return _back(
            error=f"The day it connected goes only with connected: parcel {parcel_id}'s notice was not changed. "
            "Choose connected, or clear the day."
        )
    try:
        done = notices_mark(
            app_register(),
            parcel_id,
            status,
            actor=f"web:{g.user}",
            note=note,
            until=until,
            on=on,
            notice_id=notice_id,
            correct=correct,
        )
    except NoticeChangedError as exc:
        return _stale(web_text(exc))
    except UnfinishedBatchError as exc:
        return _back(error=web_text(unfinished_batch(app_register(), exc, web=True)))
    except LayerError as exc:
        return _back(error=web_text(exc))
    if "connected_on" not in done:
        return _back(message=f"{parcel_id}: {status}.")
    day = town_date(done["connected_on"], current_app.config["DATE_FORMAT"])
    if correct:
        return _back(
            message=f"{parcel_id}: the day it connected corrected to {day} (the old day stays in its history)."
        )
    today = "" if done["connected_on_given"] else " (today: no day was given)"
    return _back(message=f"{parcel_id}: connected on {day}{today}.")


@bp.post("/record")
@requires("planner")
def record():
    """A connection made without a notice to mark (the parcel was held back, or never noticed), recorded as
    `sewerplan notices record PARCEL connected --on DAY` does (``services.record_connection``)."""
    parcel_id = (request.form.get("parcel_id") or "").strip()
    on = (request.form.get("on") or "").strip()
    note = (request.form.get("note") or "").strip() or None
    if not parcel_id or not on:
        return _record_refused("Give the parcel ID and the day it connected, then Record.")
    try:
        done = services.record_connection(
            app_register(),
            parcel_id,
            "connected",
            on=on,
            actor=f"web:{g.user}",
            note=note,
            store=current_app.config["STORE"],
        )
    except OpenNoticeError as exc:  # the page's own way: the notice's row in the register
        return _record_refused(
            str(exc).replace("(mark it connected)", "(connected and Save on its row of the register)")
        )
    except UnfinishedBatchError as exc:
        return _record_refused(web_text(unfinished_batch(app_register(), exc, web=True)))
    except LayerError as exc:
        return _record_refused(web_text(exc))
    return _back(
        message=f"{parcel_id}: recorded connected on {town_date(done['on'], current_app.config['DATE_FORMAT'])} "
        f"({done['record_id']}), without a notice; it is not "
        "noticed again."
    )


MAILING_MAX_BYTES = 5 * 1024 * 1024  # a mailing list of thousands of envelopes is well under one megabyte
CORRECT_WORDS = "This list corrects numbers recorded wrongly"  # the form's checkbox, the web's --correct
# The one-notice form's checkbox: it takes no list, and said "This list corrects ..." (a tester)
ONE_CORRECT_WORDS = "This corrects a number recorded wrongly"


@bp.post("/mailing")
@requires("planner")
def record_mailing():
    """A batch's mailing list given back with its certified mail article numbers, recorded as `sewerplan notices
    record-mailing --from CSV` does (``gisapp.notices.record_mailing``): all its numbers, or none."""
    if "notice_id" in request.form:  # one notice issued before batches, by its ID: it is in no mailing list
        return _record_article_number()
    file = request.files.get("mailing_list")
    if file is None or not file.filename:
        return _back(error="Choose the batch's mailing list (mailing-list.csv) with the article numbers filled in.")
    try:
        data = file.stream.read(MAILING_MAX_BYTES + 1)
    finally:
        file.close()
    if len(data) > MAILING_MAX_BYTES:
        return _back(
            error=f"{file.filename} is larger than a mailing list ({MAILING_MAX_BYTES // 1024 // 1024} MB): choose the "
            "batch's mailing-list.csv."
        )
    correct = request.form.get("correct") == "1"
    with tempfile.TemporaryDirectory(prefix="sewerplan-mailing-") as folder:
        path = Path(folder) / (secure_filename(file.filename) or "mailing-list.csv")
        path.write_bytes(data)
        try:
            done = notices_record_mailing(
                app_register(), path, actor=f"web:{g.user}", correct=correct, name=file.filename, web=True
            )
        except MailingConflictError as exc:
            return _back(
                error=web_text(exc)
                .replace(str(path), file.filename)
                .replace("record the list again as a correction", f'tick "{CORRECT_WORDS}" and record the list again')
            )
        except (LayerError, AnalysisError) as exc:
            return _back(error=_by_id_words(web_text(exc).replace(str(path), file.filename)))
    return _back(message=mailing_words(done), error=" ".join(mailing_warnings(done)) or None)


def typed_notice_id(text: str | None) -> str:
    """A notice ID as typed or pasted on the page, as the register holds it: without the spaces at its ends, and in
    capitals, as the register makes every ID ("N-" and twelve hex digits, ``layers.register``), so
    "n-1d575e7979e9 " copied by hand finds N-1D575E7979E9."""
    return (text or "").strip().upper()


BY_ID_FORM = "A notice issued before batches"  # the mailing section's form for one notice by its ID


def _by_id_words(text: str) -> str:
    """A refusal naming a notice issued before batches, pointing to the form that records it by its ID."""
    return text.replace(
        "record its article number by the notice's ID, one notice at a time",
        f'record its article number by the notice\'s ID, one notice at a time ("{BY_ID_FORM}" below the list)',
    )


def _record_article_number():
    """The article number of one notice issued before batches, by its ID (``gisapp.notices.record_article_number``,
    as `sewerplan notices record-mailing --notice NOTICE --article-no NUMBER` does): a number recorded before the
    date of its letter is warned about, as a list's is."""
    notice_id = typed_notice_id(request.form.get("notice_id"))
    number = (request.form.get("article_no") or "").strip()
    if not notice_id or not number:
        return _back(error="Give the notice's ID and its receipt's article number, then Record.")
    try:
        done = notices_record_article_number(
            app_register(),
            notice_id,
            number,
            actor=f"web:{g.user}",
            correct=request.form.get("correct") == "1",
            web=True,
        )
    except MailingConflictError as exc:
        return _back(
            error=web_text(exc).replace(
                "record the list again as a correction", f'tick "{ONE_CORRECT_WORDS}" and record it again'
            )
        )
    except LayerError as exc:
        return _back(error=web_text(exc))
    return _back(message=mailing_words(done), error=" ".join(mailing_warnings(done)) or None)


SERVICE_CORRECT_WORDS = "This corrects a service recorded wrongly"  # the form's checkbox, the web's --correct


@bp.post("/service")
@requires("planner")
def record_service():
    """A notice served in person (handed to the owner) on a day, by whom, recorded as `sewerplan notices
    record-service NOTICE --on DAY --by NAME` does (``Register.record_service``): the deadline moves only where the law
    of the notice's profile counts the period from service. A refusal comes back with the form open as typed."""
    notice_id = typed_notice_id(request.form.get("notice_id"))
    on = (request.form.get("on") or "").strip()
    by = (request.form.get("by") or "").strip()
    if not notice_id or not on or not by:
        return _service_refused("Give the notice ID, the day it was handed over and who served it, then Record.")
    try:
        done = app_register().record_service(
            notice_id,
            on=on,
            by=by,
            actor=f"web:{g.user}",
            today=notices_today(),
            correct=request.form.get("correct") == "1",
        )
    except ServiceRecordedError as exc:
        return _service_refused(
            _dated(web_text(exc)).replace(
                "record the service again as a correction", f'tick "{SERVICE_CORRECT_WORDS}" and Record again'
            )
        )
    except UnfinishedBatchError as exc:
        return _service_refused(_dated(web_text(unfinished_batch(app_register(), exc, web=True))))
    except LayerError as exc:
        return _service_refused(_dated(web_text(exc)))
    return _back(message=_dated(service_record_words(done)))


def _dated(text: str) -> str:
    """Every YYYY-MM-DD in a sentence of the register's in the town's date format, as every date on the pages."""
    fmt = current_app.config["DATE_FORMAT"]
    return re.sub(r"\b\d{4}-\d{2}-\d{2}\b", lambda m: town_date(m.group(), fmt), text)


def _service_refused(error: str):
    """400: the register page with the refusal and the "served in person" form open, filled in as sent."""
    kept = {k: (request.form.get(k) or "").strip() for k in ("notice_id", "on", "by")}
    kept["correct"] = request.form.get("correct") == "1"
    request.args = request.args.copy()
    request.args.update({k: v for k in BACK_ARGS if (v := request.form.get(f"back_{k}"))})
    return _page(error=error, service_form=kept, status_code=400)


def _record_refused(error: str):
    """400: the register page with the refusal and the "Record connected" form open and filled in as the clerk sent
    it (parcel, day, note), so they correct what the sentence names instead of typing it all again (a redirect came
    back with the form empty); the clerk's filters and page kept."""
    kept = {k: (request.form.get(k) or "").strip() for k in ("parcel_id", "on", "note")}
    request.args = request.args.copy()
    request.args.update({k: v for k in BACK_ARGS if (v := request.form.get(f"back_{k}"))})
    return _page(error=town_dates_in(error, current_app.config["DATE_FORMAT"]), record_form=kept, status_code=400)


def _stale(error: str):
    """409: the page the Save came from no longer shows the register as it is; the register as it is now, with
    the sentence saying what changed (the clerk's filters kept)."""
    request.args = request.args.copy()
    request.args.update({k: v for k in BACK_ARGS if (v := request.form.get(f"back_{k}"))})
    return _page(error=error, status_code=409)


# -- violation notices (`sewerplan notices violations`) -----------------------------------------------------------

RUN_ON_MAP = '"Run the analysis" on the map page'


@bp.post("/violations")
@requires("planner")
def violations():
    """Violation notices for the connection notices overdue today (``services.violations``, as `sewerplan notices
    violations` and its ``--occupant``): previewed first, recording nothing; issued only with the "Confirm" button of
    that preview, whose token covers today, the copies to the occupant and exactly the notices shown."""
    occupant = _occupant(request.form)
    kept = {"occupant": "1" if occupant else ""}
    day = notices_today()
    settled: list[dict] = []
    try:
        register = app_register()
        profile, town = _profile(), _town()
        ask = dict(register=register, profile=profile, town=town, today=day, actor=f"web:{g.user}")
        ask |= {"store": current_app.config["STORE"], "occupant": occupant}
        found = services.violations(root=None, **ask)
        token = _violations_token(found, day, occupant)
        confirmed = request.form.get("confirm")
        if found["notices"] and confirmed == token:
            _settle_first(settled)  # interrupted batches first, as `violations --out` settles them
            done = services.violations(root=current_app.config["NOTICES_FOLDER"], **ask)
            view = _violations_view(done, day, kept, profile.id) | {"issued": True}
            return _page(violations=view, settled=settled)
    except RegisterMissingError as exc:
        return _page(error=_missing_words(exc), status_code=400, violations_form=kept)
    except (LayerError, AnalysisError) as exc:
        return _page(error=_violation_refusal(exc), status_code=400, settled=settled, violations_form=kept)
    if not found["notices"]:
        refusal = " ".join([_nothing_overdue_words(found, day), *_violation_lines(found, profile.id)])
        return _page(error=refusal, status_code=400, violations_form=kept)
    view = _violations_view(found, day, kept, profile.id) | {"token": token}
    if confirmed == _violations_token(found, day, not occupant):  # the same notices, the copies asked for or not
        view["ask"] = _copies_changed(occupant)
    elif confirmed:  # never issued without the clerk having seen exactly what would be
        view["ask"] = "The violation notices due have changed since the preview: check them again, then confirm."
    return _page(violations=view)


def _violations_token(doc: dict, day, occupant: bool) -> str:
    """What the clerk confirmed: the day, the copies to the occupant and exactly these overdue notices."""
    notices = sorted(str(n["original_notice_id"]) for n in doc["notices"])
    text = "|".join([day.isoformat(), "occupant" if occupant else "", *notices])
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _violations_view(doc: dict, day, form: dict, profile: str) -> dict:
    """The preview or the issued batch, for the page: what would be (or was) written, and what was held back and
    why, in the clerk's words (each list as the command line gives it, worded for this page)."""
    held = [h | {"whose": "the owner's letter"} for h in doc["held"]]
    held += [h | {"whose": "the copy to the occupant"} for h in doc["occupant_held"]]
    unproven = doc["without_proof_of_service"]
    return {
        "doc": doc,
        "day": day,
        "form": form,
        "count": len(doc["notices"]),
        "held": held,
        "left_out": _violation_lines(doc, profile),
        "unproven": _unproven_words(unproven, len(doc["notices"])) if unproven else None,
        "letters": letters_written(doc) if doc.get("batch") else None,
    }


def _nothing_overdue_words(doc: dict, day) -> str:
    """The refusal where no violation notice is due today, and why none (the lines that follow say the rest: those
    left out, and letters held back, grouped by why)."""
    today = town_date(day, current_app.config["DATE_FORMAT"])
    a = doc["already_open"]
    if not (a or doc["other_profile"] or doc["connected"] or doc["review"] or doc["held"]):
        return f"No violation notice to give on {today}: no connection notice is overdue."
    said = f"No violation notice to give on {today}: none of the overdue connection notices is due one"
    if a:
        said += f" ({a} already have an open violation notice)"
    held: dict[str, list[str]] = {}
    for h in doc["held"]:
        held.setdefault(h["why"], []).append(str(h["parcel_id"]))
    return " ".join(
        [f"{said}.", *(f"Held back, {len(ids)} parcel(s): {why} ({', '.join(ids[:12])})." for why, ids in held.items())]
    )


def _violation_lines(doc: dict, profile: str, shown: int = 12) -> list[str]:
    """What ``violations`` left out and what the clerk does about it, on this page (the command line names
    commands: ``cli_notices._left_out_lines``)."""

    def ids(rows, key=lambda h: str(h["parcel_id"])):
        listed = [key(h) for h in rows]
        more = f" and {len(listed) - shown} more" if len(listed) > shown else ""
        return f"{', '.join(listed[:shown])}{more}"

    fmt = current_app.config["DATE_FORMAT"]
    lines = []
    if moved := doc["next_business_day"]:
        lines.append(not_yet_overdue(moved))
    laws: dict[str, list[dict]] = {}
    for h in doc["other_profile"]:
        laws.setdefault(h["profile"], []).append(h)
    for law, held in laws.items():
        lines.append(
            f"Left out {len(held)} overdue notice(s) given under the {law} profile ({ids(held)}): a violation notice "
            f"follows the law its notice was given under, and the town store's latest analysis ran under {profile}. "
            f"Run the analysis under the {law} profile ({RUN_ON_MAP}), then give their violation notices here."
        )
    if doc["analysis"] is None:
        lines.append(
            "The overdue notices were not checked against an analysis: the town store holds none yet. Run the "
            f"analysis ({RUN_ON_MAP}) first, so that parcels connected since, or no longer mandated, are left out."
        )
        return [town_dates_in(line, fmt) for line in lines]
    run = f"the latest analysis ({town_date(doc['analysis']['run_at'], fmt)})"
    if connected := doc["connected"]:
        lines.append(
            f"Left out {len(connected)} overdue parcel(s) that {run} finds connected ({ids(connected)}): once "
            "verified, record each connection in the register on its notice's row below (connected)."
        )
    if review := doc["review"]:
        lines.append(
            f"For review, not given a violation notice: {len(review)} overdue parcel(s) that {run} no longer finds "
            f"mandated ({ids(review, _with_status)}): their notices were issued "
            "under an earlier run, so review each, and withdraw one that no longer stands on its notice's row below."
        )
    return [town_dates_in(line, fmt) for line in lines]


def _with_status(held: dict) -> str:
    return f"{held['parcel_id']} ({held['status']})"


def _unproven_words(unproven: list[str], enforced: int, shown: int = 5) -> str:
    """The warning where violation notices enforce connection notices with no proof of service recorded, with this
    page's forms that record it (the command line names its commands)."""
    which = (
        "the one connection notice this violation notice enforces has"
        if enforced == 1
        else f"{len(unproven)} of the {enforced} connection notices these violation notices enforce have"
    )
    listed = ", ".join(unproven[:shown]) + (f" and {len(unproven) - shown} more" if len(unproven) > shown else "")
    return (
        f"Warning: {which} no proof of service recorded (no certified mail article number, no service in person): "
        f'{listed}. Record the article numbers from the receipts with "Record the mail article numbers", '
        'or a notice handed to its owner with "Record a notice served in person", above, before the violation '
        "notices are mailed."
    )


def _violation_refusal(exc: ValueError) -> str:
    """A refused violations preview or issue in the clerk's words, naming no folder of the server."""
    if isinstance(exc, services.OtherProfileRunError):
        when = town_date(exc.run_at, current_app.config["DATE_FORMAT"]) if exc.run_at else "undated"
        text = (
            f"The town store's latest analysis ({when}) ran under the {exc.ran} profile, not {exc.profile}, and the "
            f"store keeps only its latest run, so it cannot say which of the overdue parcels have connected or are "
            f"no longer mandated. Run the analysis under the {exc.profile} profile ({RUN_ON_MAP}), then give the "
            "violation notices again."
        )
    elif isinstance(exc, services.CopiesNeedAnalysisError):
        text = (
            "A copy to the occupant goes to the site address, whose city and ZIP code the register does not keep: "
            "they are read from the town store's latest analysis, and the store holds none. Run the analysis "
            f'({RUN_ON_MAP}) first, or untick "copies to the occupant".'
        )
    else:
        text = web_text(exc)
    config = current_app.config
    places = [
        config["STORE"],
        config.get("NOTICES_FOLDER"),
        config.get("REGISTER"),
        str(default_register_path(config["STORE"])),
    ]
    return without_server_folders(without_folders(text, [str(p) for p in places if p]))
