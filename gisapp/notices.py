"""The batch machinery behind ``gisapp.services``' notices jobs, which `sewerplan notices` and the notices page call.

- ``preview``: who would be noticed, who is held back and why, the deadline and whether it falls on a weekend or a
  New York public holiday (the town decides); nothing is recorded.
- ``issue_batch``: a batch is *prepared* in the register, its files written into a partial folder, fsynced and
  renamed into ``<root>/<batch ID>``, checked against their manifest, and only then *issued*. Anything that stops it
  before that (an error, a full disk, kill -9) leaves a prepared batch that the next run (``settle``) or
  ``resume`` finishes when its folder is complete and cancels when it is not: a notice is never counted as issued
  without its letter, mailing-list row and label.
- ``record_mailing``: the certified mail article numbers of a batch's mailing list given back, on the notices each
  envelope served, all or none; ``record_article_number`` one notice's issued before batches, by its ID, checked
  and dated the same way.
- ``violations``: the same for violation notices of overdue connection notices; without an output folder only a
  preview.

A process writing a batch holds an exclusive lock on ``<root>/.<batch ID>.lock`` (released by the kernel when the
process dies), so ``settle`` never touches a batch another live process is still writing.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import hashlib
import json
import os
import re
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import geopandas as gpd
import pandas as pd
import shapely

from analysis.errors import Fix
from analysis.notices import (
    OCCUPANT,
    SERVED_BY,
    NoticeChoice,
    NoticePlan,
    TownSettings,
    building_obligations,
    compose_letters,
    deadline_flag,
    letter_maps,
    listed_notices,
    mailing_list,
    mailing_record,
    municipality_name,
    not_this_registers,
    occupant_letters,
    past_deadline,
    period_problem,
    plan_notices,
    plan_violations,
)
from analysis.profiles import MAX_PERIOD_DAYS, Profile, available_profiles, load_profile
from analysis.units import feet_per_unit
from gisapp.words import already_noticed, count, sentence_end
from layers.atomic import same_file
from layers.errors import LayerError, redact_url
from layers.fonts import PRINTABLE
from layers.letters import ALL_LETTERS, LABELS, MAILING_LIST, MANIFEST, address_overflow, verify_batch, write_batch
from layers.read import read_table
from layers.register import Register, UnfinishedBatchError, new_batch_id
from layers.town import MAKE_ONE

# What every letter's held-back check (``analysis.notices._mailable``) is given, for connection, violation and
# occupant letters alike: the characters the letters' embedded font draws (``layers.fonts``: analysis reads no font)
# and what the label or the letter's address block would cut, as laid out.
LETTER_CHECKS = {"printable": PRINTABLE, "overflow": address_overflow}


def copies_to_occupant(notices: pd.DataFrame, *, occupant: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The notices whose copy to "Occupant" at the site is written (``occupant_letters``, with the letters' own
    checks), and those whose copy is held back (``parcel_id``, ``why``); none of either without ``occupant``. The one
    rule the preview counts by and an issue writes by: the notices page's preview said "write 516 letter(s)" and the
    issue wrote 146 copies beside them (a tester)."""
    if not occupant:
        return notices.head(0), pd.DataFrame(columns=["parcel_id", "why"])
    return occupant_letters(notices, **LETTER_CHECKS)


@dataclass
class NoticeInputs:
    """What a connection batch is made from: the analysed parcels and the layers its letters' maps show."""

    results: gpd.GeoDataFrame
    lines: gpd.GeoDataFrame | None = None
    mains: gpd.GeoDataFrame | None = None
    streets: gpd.GeoDataFrame | None = None
    buildings: gpd.GeoDataFrame | None = None  # assessed buildings (building_results), or the plain layer
    summary: dict | None = None
    fingerprints: dict | None = None
    checksum: str | None = None


def data_checksum(frames: Mapping[str, pd.DataFrame | None]) -> str:
    """SHA-256 over the layers' attributes and geometries (WKB), in layer-name order: the same data gives the same
    checksum wherever it is read from."""
    digest = hashlib.sha256()
    for name in sorted(frames):
        frame = frames[name]
        if frame is None:
            continue
        digest.update(f"{name}:{len(frame)}:".encode())
        geometry = frame.geometry.name if isinstance(frame, gpd.GeoDataFrame) else None
        attrs = frame.drop(columns=[geometry]) if geometry else frame
        attrs = attrs.reindex(sorted(attrs.columns), axis=1).astype(str)
        digest.update(",".join(attrs.columns).encode())
        digest.update(pd.util.hash_pandas_object(attrs, index=False).to_numpy().tobytes())
        if geometry:
            wkb = shapely.to_wkb(frame.geometry.values, include_srid=False)
            digest.update(b"".join(w if w is not None else b"-" for w in wkb))
    return digest.hexdigest()


def town_problems(profile: Profile, town: TownSettings | None, plan: NoticePlan) -> list[str]:
    """Why letters cannot be written yet: missing town settings, or a period the town must set itself."""
    if town is None:
        return [
            "no town settings file (town.toml beside a GeoPackage store, or the town settings file given for the "
            "notices: a PostGIS store has no folder beside it): letters need the municipality's letterhead, return "
            f"address, signing officer and contact ({MAKE_ONE})"
        ]
    problems = [f"the town settings ({town.source}) lack {key}" for key in town.missing_for_letters()]
    if placeholders := town.placeholders():
        problems.append(
            f"the town settings ({town.source}) still hold the template's placeholder values in "
            f"{', '.join(placeholders)}: replace them with the office's own"
        )
    if other := town.other_municipality(profile.municipality):
        own = municipality_name(profile.municipality)
        problems.append(
            f"the town settings ({town.source}) name {other} in letterhead.name, but the ordinance profile is "
            f"{own}'s: give {own}'s own town settings, or {other}'s profile"
        )
    word = "village" if "village" in profile.municipality.lower() else "town"
    issue = period_problem(plan.period, town_word=word)
    return problems + ([issue] if issue else [])


def preview(
    register: Register,
    inputs: NoticeInputs,
    *,
    profile: Profile,
    town: TownSettings | None,
    notice_date: dt.date,
    notice_reason: str | None = None,
    hazard=None,
    occupant: bool = False,
    choice: NoticeChoice | None = None,
) -> tuple[NoticePlan, pd.DataFrame, dict]:
    """Who would get a connection notice, grouped by mailing address, and why others are held back; records nothing.

    Returns the plan, the mailing rows (the owners') and the document `sewerplan notices preview --json` prints. A
    notice date too far ahead is refused (``check_notice_horizon``, once ``plan_notices`` has taken the date as one at
    all), as issuing it would be. ``occupant`` (copies to the occupant asked for): the document also says how many
    copies an issue would write (``occupant_copies``) and which are held back (``occupant_held``). ``choice``: only
    the mandated parcels it takes in (``analysis.notices.NoticeChoice``); the document says what was chosen
    (``chosen``), and every count of mandated parcels is of those.
    """
    plan = plan_notices(
        inputs.results,
        profile=profile,
        notice_date=notice_date,
        notice_reason=notice_reason,
        hazard=hazard,
        exclude=register.excluded_parcels(),
        town=town,
        choice=choice,
        **LETTER_CHECKS,
    )
    check_notice_horizon(notice_date, profile)
    rows = mailing_list(plan.due)
    doc = {
        "notice_date": notice_date.isoformat(),
        "deadline": plan.deadline.isoformat() if plan.deadline else None,
        "deadline_flag": deadline_flag(plan.deadline),
        "period": {"days": plan.period.days, "basis": plan.period.basis},
        "notices": [_notice_doc(r) for r in plan.due.to_dict("records")],
        "mailing_addresses": len(rows),
        "held": plan.held.to_dict("records"),
        "letters_blocked_by": town_problems(profile, town, plan),
        "unfinished_batches": [b["batch_id"] for b in register.batches(status="prepared")],
    }
    # The mandated parcels a batch left unfinished holds (prepared, never mailed), by batch: the register excludes
    # them as it does parcels with an open notice, but the preview must not call them noticed (``left_out``).
    mandated = mandated_parcels(inputs.results, plan)
    if choice:
        doc["chosen"] = chosen_doc(choice, plan, mandated)
    held: dict[str, int] = dict.fromkeys(doc["unfinished_batches"], 0)
    for parcel, batch in register.prepared_parcels().items():
        if parcel in mandated:
            held[batch] = held.get(batch, 0) + 1
    dates = {b["batch_id"]: b for b in register.batches(status="prepared")}
    doc["unfinished"] = [
        {"batch_id": b, "mandated_parcels": n}
        | ({"notice_date": dates[b]["notice_date"].isoformat()} if b in dates else {})
        | ({"deadline": dates[b]["deadline"].isoformat()} if b in dates else {})
        for b, n in held.items()
    ]
    doc["already_prepared"] = sum(held.values())
    if occupant:
        copies, copies_held = copies_to_occupant(plan.due, occupant=True)
        doc["occupant_copies"] = len(copies)
        doc["occupant_held"] = copies_held.to_dict("records")
    return plan, rows, doc


def mandated_parcels(results: pd.DataFrame, plan: NoticePlan) -> set[str]:
    """The IDs of the mandated parcels a plan was made of: every one, or those its choice took in."""
    mandated = set(results.loc[results["status"] == "mandated", "parcel_id"].astype(str))
    return mandated if plan.chosen is None else mandated & plan.chosen


def chosen_doc(choice: NoticeChoice, plan: NoticePlan, mandated: set[str]) -> dict:
    """What a preview says of a choice: the IDs and the street given, how many mandated parcels they took in, and
    each ID given that is not due a notice, with why (its row among the held back)."""
    given = set(choice.parcel_ids)
    return {
        "parcel_ids": list(choice.parcel_ids),
        "street": choice.street,
        "mandated": len(mandated),
        "due": len(plan.due),
        "not_due": [h for h in plan.held.to_dict("records") if str(h["parcel_id"]) in given],
        "key": choice.key(),
    }


def left_out(doc: Mapping, *, web: bool = False, on: dt.date | None = None) -> list[str]:
    """Why a preview has fewer notices than the analysis has mandated parcels, in sentences: those the register
    has an open notice for (or marks connected or exempt), and apart from them those a batch left unfinished holds,
    whose notices were prepared and never mailed, with how to finish or cancel that batch (``web``: the notices
    page's button, else the command; for a batch dated before ``on``, today, the two ways on of ``dated_words``).
    The command's preview and the notices page both say these."""
    prepared = int(doc.get("already_prepared") or 0)
    said = [already_noticed(int(doc.get("already_noticed") or 0) - prepared)]
    for b in doc.get("unfinished") or []:
        n = b["mandated_parcels"]
        day = dt.date.fromisoformat(b["notice_date"]) if b.get("notice_date") else None
        dated = day is not None and day < (on := on or today())
        never = "never issued" if dated else "never mailed"  # its letters may have been: it is the clerk's word
        held = (
            f"its notices of {count(n, 'mandated parcel')} were prepared and {never}"
            if n
            else f"its notices were prepared and {never}"
        )
        how = (
            '"Settle interrupted batches" finishes it when its folder holds every letter and cancels it otherwise '
            "(a batch another process is still writing is left to that process)"
            if web
            else f"`sewerplan notices resume {b['batch_id']}` finishes it when its folder holds every letter and "
            f"cancels it otherwise; `sewerplan notices resume {b['batch_id']} --cancel` cancels it"
        )
        if dated:  # "resume finishes it" said nothing of letters dated days ago, which give less time than they say
            batch = b | {k: dt.date.fromisoformat(b[k]) for k in ("notice_date", "deadline")}
            said.append(f"Batch {b['batch_id']} was left unfinished: {held}. {_dated_tail(batch, on, web=web)}.")
            continue
        said.append(
            f"Batch {b['batch_id']} was left unfinished: {held}. {how}; "
            "the parcels a cancelled batch held are noticed again in the next batch."
        )
    return [s for s in said if s]


def _notice_doc(row: Mapping) -> dict:
    def iso(v):
        return v.isoformat() if isinstance(v, dt.date) else (None if v is None or pd.isna(v) else str(v))

    return {
        "notice_id": row.get("notice_id"),
        "parcel_id": str(row["parcel_id"]),
        "deadline": iso(row.get("deadline")),
        "type": row.get("notice_type", "connection"),
    }


# -- issuing a batch ----------------------------------------------------------------------------------------------


def check_root(root: str | Path, *, create: bool = True) -> Path:
    """The folder batches go into: created if missing; refused when it is a file or cannot be written.

    With ``create=False`` only checked: a missing folder is left missing, and the nearest folder above it that
    exists must be one this process can write in, so a refused issue leaves no empty folder behind.
    """
    root = Path(root).expanduser()
    if root.exists() and not root.is_dir():
        raise LayerError(f"{root} is a file: give a folder for the notice batches (each batch gets its own folder).")
    if not create and not root.exists():
        above = next(p for p in root.absolute().parents if p.exists())
        if not above.is_dir():
            raise LayerError(f"Cannot create the folder {root}: {above} is a file.")
        _probe(above)
        return root.absolute()
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise LayerError(f"Cannot create the folder {root}: {exc.strerror}.") from exc
    _probe(root)
    return root.resolve()


def _probe(folder: Path) -> None:
    """Write and remove an empty file in ``folder``: the one honest test that it can be written in."""
    probe = folder / f".write-test-{os.getpid()}"
    try:
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise LayerError(f"Cannot write in {folder}: {exc.strerror}. Give a folder you can write to.") from exc


@contextlib.contextmanager
def batch_lock(root: Path, batch_id: str, *, wait: bool = True):
    """An exclusive lock on the batch while a process works on it; yields False when held elsewhere (wait=False).

    Its holder deletes the lock file when done (``clear_stale_locks`` too, one a killed process left), still holding
    it: a process that opened the file before and locks it after would hold a lock on a file nobody else finds,
    while another made a new one and locked that. So, once locked, the file must still be there under its name, or
    it is opened anew."""
    path = _lock_path(root, batch_id)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
            except BlockingIOError:
                yield False
                return
            if not same_file(fd, path):
                continue  # deleted by its holder after this process opened it: lock the one there now
            try:
                yield True
            finally:
                with contextlib.suppress(OSError):
                    path.unlink()
            return
        finally:
            os.close(fd)


def _lock_path(root: str | Path, batch_id: str) -> Path:
    return Path(root) / f".{batch_id}.lock"


# The name of a batch's lock file (``_lock_path``; the batch ID is ``layers.register.new_batch_id``'s).
_LOCK_NAME = re.compile(r"\.(B[0-9]{8}-[0-9A-F]{6})\.lock")


def clear_stale_locks(root: Path) -> list[str]:
    """Delete the batch lock files in ``root`` no process holds: what a process killed before it recorded its batch
    (or after it ended, before it deleted the file) left, which no ``settle`` ever takes (the register holds no
    such batch, or not as prepared). Each is deleted holding its lock, as its writer would (``batch_lock``), so a
    live writer's is never touched; a file this user may not open is left. Returns the batch IDs cleared."""
    cleared = []
    for path in root.glob(".B*.lock"):
        if (name := _LOCK_NAME.fullmatch(path.name)) is None:
            continue
        with contextlib.suppress(OSError), batch_lock(root, name.group(1), wait=False) as mine:
            if mine:
                cleared.append(name.group(1))
    return cleared


def today() -> dt.date:
    """The day sewerplan takes as today: the system's date, or ``SEWERPLAN_TODAY`` (YYYY-MM-DD) where set, to
    rehearse a schedule (and in the test suite, whose notices are dated in 2027)."""
    given = os.environ.get("SEWERPLAN_TODAY", "").strip()
    if not given:
        return dt.date.today()
    try:
        return dt.date.fromisoformat(given)
    except ValueError as exc:
        raise LayerError(f"SEWERPLAN_TODAY is {given!r}, not a date written YYYY-MM-DD.") from exc


def check_notice_date(notice_date: dt.date, on: dt.date | None = None) -> None:
    """Refuse a notice dated before today: a notice's date is the day it is mailed, and its deadline (and, once
    that passes, violations) run from it; a date in the past would start a clock the owner never saw run."""
    on = on or today()
    if notice_date < on:
        raise LayerError(
            f"The notice date {notice_date.isoformat()} is before today ({on.isoformat()}). A notice is dated the "
            "day its letters are mailed and its deadline runs from then: give today's date or the later day the "
            "letters will be mailed.",
            fix=Fix("notice_date", example=on.isoformat()),
        )


def check_notice_horizon(notice_date: dt.date, profile: Profile, on: dt.date | None = None) -> None:
    """Refuse a notice dated more days after today than the profile's ``notices.notice_date_max_days_ahead``: the
    deadline runs from the notice's date, so a mistyped year (2207, 2999) would record notices whose deadlines never
    come and keep their parcels from being noticed again. The one check of it: ``preview`` (the command's preview
    and issue, the notices page's Preview and Confirm all go through it) and ``check_issue`` run it."""
    on = on or today()
    rule = profile.notices.notice_date_max_days_ahead
    ahead = (notice_date - on).days
    if ahead <= int(rule.value):
        return
    text = (
        f"The notice date {notice_date.isoformat()} is {ahead:,} days after today ({on.isoformat()}): a notice may "
        f"be dated at most {int(rule.value)} days ahead (notices.notice_date_max_days_ahead, a setting of the "
        "profile), so that a mistyped year never starts a deadline. Check the year and give the day the letters "
        "will be mailed."
    )
    if ahead > MAX_PERIOD_DAYS:  # no setting allows it: a typo, whatever the town's practice
        raise LayerError(f"{text} No setting allows a notice dated more than {MAX_PERIOD_DAYS:,} days ahead.")
    raise LayerError(
        f"{text} To date notices that far ahead, set it to {ahead} days or more.",
        fix=Fix("rule", target="notices.notice_date_max_days_ahead", example=str(ahead)),
    )


def check_violation_date(as_of: dt.date, on: dt.date | None = None) -> None:
    """Refuse violation notices issued as of another day than today: as of a day to come they would count owners
    overdue whose deadline has not passed (and who may still connect), and as of a past day they would be dated,
    and their time to correct run, from before the day they are mailed. A preview may look at any day."""
    on = on or today()
    if as_of > on:
        raise LayerError(
            f"The day {as_of.isoformat()} is after today ({on.isoformat()}): a violation notice is given once the "
            "connection deadline has passed, and until that day the owner may still connect. Preview that day "
            "without --out; issue the notices on it."
        )
    if as_of < on:
        raise LayerError(
            f"The day {as_of.isoformat()} is before today ({on.isoformat()}): a violation notice is dated the day "
            "its letters are mailed and the time to correct runs from then. Issue it as of today."
        )


def check_issue(plan: NoticePlan, *, kind: str, profile: Profile, town: TownSettings | None, root: str | Path) -> None:
    """Refuse an issue that could not go through, before anything is made: a connection notice dated before today
    (a violation notice dated another day than today),
    letters that could not be signed (``town_problems``), a folder that is a file or cannot be written (left as it
    was: a missing folder is not made). ``issue_batch`` checks this first; the command line checks it before it
    creates the town's register (``issue --new``), so a refused first issue leaves no register behind."""
    if kind == "connection":
        check_notice_date(plan.notice_date)
        check_notice_horizon(plan.notice_date, profile)
    else:
        check_violation_date(plan.notice_date)
    problems = town_problems(profile, town, plan)
    if problems:
        raise LayerError(sentence_end("Letters cannot be written yet: " + "; ".join(problems)))
    check_root(root, create=False)


def issue_batch(
    register: Register,
    plan: NoticePlan,
    *,
    kind: str,
    profile: Profile,
    town: TownSettings | None,
    root: str | Path,
    actor: str,
    inputs: NoticeInputs | None = None,
    per_parcel: bool = False,
    occupant: bool = False,
    bom: bool = True,
    progress: Callable | None = None,
) -> dict:
    """Prepare, write and issue one batch of ``plan.due`` notices; returns the document `notices issue --json` prints.

    Refuses before recording anything when the letters could not be signed (town settings, a period the town must
    set) or the folder cannot take them (``check_issue``).
    """
    check_issue(plan, kind=kind, profile=profile, town=town, root=root)
    doc = {
        "batch": None,
        "folder": None,
        "issued": 0,
        "already_open": 0,
        "held": plan.held.to_dict("records"),
        # parcels noticed whose letter to the occupant at the site is not written (the owner's letter is), and why
        "occupant_held": copies_to_occupant(plan.due, occupant=occupant)[1].to_dict("records"),
        "deadline": plan.deadline.isoformat() if plan.deadline else None,
        "deadline_flag": deadline_flag(plan.deadline),
        "mailing_list": None,
        "labels": None,
        "letters_pdf": None,
        "manifest": None,
        "letters": [],
        "occupant_letters": 0,
        "notices": [],
    }
    if plan.due.empty:  # nothing new to issue: no folder is made, no file written
        return doc
    register.check_writable()  # a register on a read-only disk is said before a folder is made for nothing
    with _batch_root(root) as root:
        clear_stale_locks(root)
        batch_id = new_batch_id(plan.notice_date)
        inputs = inputs or NoticeInputs(results=plan.due)
        with batch_lock(root, batch_id):
            prepared = register.prepare_batch(
                plan.due,
                batch_id=batch_id,
                kind=kind,
                notice_date=plan.notice_date,
                deadline=plan.deadline,
                folder=str(root),
                actor=actor,
                profile=(profile.id, profile.version),
                summary=inputs.summary,
                fingerprints=inputs.fingerprints,
                checksum=inputs.checksum,
            )
            doc["already_open"] = prepared["already"]
            if not prepared["notices"]:
                return doc
            try:
                folder, letters, copies = write_files(
                    batch_id, prepared, plan, kind, profile, town, root, inputs, per_parcel, occupant, bom, progress
                )
                register.finish_batch(batch_id, letters=letters, actor=actor)
            except OSError as exc:  # a full disk, a file-size limit, a folder gone: the clerk's to fix, not a defect
                _abandon(register, root, batch_id, actor, f"Stopped while writing its files: {exc}")
                raise LayerError(
                    f"The batch's letters could not be written in {root} ({exc.strerror or exc}). The batch was "
                    "cancelled and no notice was issued: free space on that disk or choose another folder, then issue "
                    "again."
                ) from exc
            except BaseException as exc:
                _abandon(register, root, batch_id, actor, f"Stopped while writing its files: {exc}")
                raise
        sent = register.batch_notices(batch_id)
        doc |= {
            "batch": batch_id,
            "folder": str(folder),
            "issued": len(sent),
            "mailing_list": str(folder / MAILING_LIST),
            "labels": str(folder / LABELS),
            "letters_pdf": str(folder / ALL_LETTERS),
            "manifest": str(folder / MANIFEST),  # each file's checksum, checked before the notices were issued
            "letters": sorted({str(root / f) for f in sent["letter_file"]}),
            # the copies to the occupant at the site are letters of their own, beside the owners' (``--occupant``)
            "occupant_letters": copies,
            "notices": [
                _notice_doc(r) | {"letter": str(root / r["letter_file"]), "mailing_no": int(r["mailing_no"])}
                for r in sent.to_dict("records")
            ],
        }
        return doc


@contextlib.contextmanager
def _batch_root(root: str | Path):
    """The folder batches go into (``check_root``); the folders made for it are removed again when the issue leaves
    nothing in them (every parcel noticed meanwhile, or a refusal), so an issue that writes no batch leaves no
    folder behind."""
    made = _folders_to_make(root)
    try:
        yield check_root(root)
    finally:
        _remove_empty(made)


def _folders_to_make(root: str | Path) -> list[Path]:
    """The folders ``check_root`` will create for ``root`` (none when it exists), deepest first."""
    missing = []
    for folder in (Path(root).expanduser().absolute(), *Path(root).expanduser().absolute().parents):
        if folder.exists():
            break
        missing.append(folder)
    return missing


def _remove_empty(folders: list[Path]) -> None:
    """Remove the folders an issue made (deepest first) that are still empty: an issue that wrote no batch leaves
    none behind. A folder something was written into since (another issue's batch) is kept."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:
            return


def write_files(
    batch_id,
    prepared,
    plan,
    kind,
    profile,
    town,
    root,
    inputs,
    per_parcel=False,
    occupant=False,
    bom=True,
    progress=None,
) -> tuple[Path, dict, int]:
    """Write a prepared batch's folder and check it; returns the folder, each notice's letter for the register and
    how many letters are copies to the occupant at the site (written beside the owners', not the notices')."""
    ids = {n["parcel_id"]: n["notice_id"] for n in prepared["notices"]}
    sent = plan.due[plan.due["parcel_id"].astype(str).isin(ids)].copy()
    sent["notice_id"] = sent["parcel_id"].astype(str).map(ids)
    sent["main_diameter_in"] = _diameters(sent, inputs.mains)
    rows = mailing_list(sent, per_parcel=per_parcel, occupants=copies_to_occupant(sent, occupant=occupant)[0])
    obligations = building_obligations(inputs.buildings, profile) if kind == "connection" else {}
    letters = compose_letters(
        rows,
        sent,
        profile=profile,
        town=town,
        kind=kind,
        notice_date=plan.notice_date,
        period=plan.period,
        obligations=obligations,
    )
    maps = {}
    if kind == "connection" and inputs.results is not None and "geometry" in inputs.results:
        maps = letter_maps(
            list(sent["parcel_id"]),
            parcels=inputs.results,
            lines=inputs.lines,
            mains=inputs.mains,
            streets=inputs.streets,
            buildings=inputs.buildings,
            feet_per_unit=feet_per_unit(inputs.results.crs) if inputs.results.crs else 1.0,
        )
    folder, manifest = write_batch(root, batch_id, rows=rows, letters=letters, maps=maps, bom=bom, progress=progress)
    problems = verify_batch(folder, list(sent["notice_id"]))
    if problems:
        raise LayerError(f"The files of batch {batch_id} did not verify: {'; '.join(problems[:5])}.")
    copies = sum(1 for letter in letters if letter.recipient and letter.recipient[0] == OCCUPANT)
    return folder, _letters_of(batch_id, manifest), copies


def _letters_of(batch_id: str, manifest: dict) -> dict[str, tuple[str, int, str]]:
    """Each notice's letter for the register, and how that letter says it is served: the owner's letter, where an
    occupant letter covers the notice too. A manifest written before it kept the method beside each letter is of a
    letter that printed the certified-mail line (every batch's letter has), so it says certified mail."""
    out = {}
    for notice_id, entries in manifest["letters"].items():
        owner = [e for e in entries if not e[2]] or entries
        served = owner[0][3] if len(owner[0]) > 3 else SERVED_BY
        out[notice_id] = (f"{batch_id}/{owner[0][0]}", int(owner[0][1]), served)
    return out


def _diameters(sent: pd.DataFrame, mains: pd.DataFrame | None) -> pd.Series:
    if mains is None or "diameter_in" not in mains.columns or "main_id" not in mains.columns:
        return pd.Series(None, index=sent.index, dtype=object)
    by_id = pd.to_numeric(mains["diameter_in"], errors="coerce").groupby(mains["main_id"].astype(str)).first()
    return sent["main_id"].astype(str).map(by_id)


def _abandon(register: Register, root: Path, batch_id: str, actor: str, why: str) -> None:
    """A batch that stopped in this process: cancel it (its files never went out) and put its folder aside."""
    with contextlib.suppress(Exception):
        batch = register.batch(batch_id)
        if batch and batch["status"] == "prepared":
            register.cancel_batch(batch_id, actor=actor, why=why)
    _set_aside(root, batch_id)


def _set_aside(root: Path, batch_id: str) -> None:
    final = Path(root) / batch_id
    if final.is_dir():
        with contextlib.suppress(OSError):
            os.rename(final, Path(root) / f"{batch_id}-CANCELLED")
    for partial in Path(root).glob(f".{batch_id}.partial-*"):
        shutil.rmtree(partial, ignore_errors=True)


# -- unfinished batches -------------------------------------------------------------------------------------------


def settle(register: Register, *, actor: str) -> list[dict]:
    """Finish or cancel every prepared batch no live process is writing: issued when its folder is complete and
    verifies, cancelled (never mailed) otherwise. A batch whose folder this machine cannot see is left for
    ``resume``. Returns what was done to each.

    A complete batch whose letters are dated before today is not finished: its deadline runs from that date, so
    letters mailed now would give the owner less time than they say. Once the others are settled, it is refused
    (``BatchDatedError``, carrying what was settled) with the two ways on: cancel it and issue again dated today, or
    finish it as dated (``resume`` with ``as_dated``) where its letters were in fact mailed on their date."""
    on = today()
    done, dated = [], []
    for batch in register.batches(status="prepared"):
        result = _settle_one(register, batch, actor=actor, cancel=False, wait=False, on=on)
        if result is None:
            continue
        (dated if result["action"] == "dated" else done).append(result)
    if dated:
        raise BatchDatedError([d["record"] for d in dated], on=on, settled=done)
    return done


class BatchDatedError(LayerError):
    """Unfinished batches whose letters are all written but dated before today, left prepared rather than finished
    (``settle``, ``resume``): ``batches`` their register rows, ``on`` today, ``settled`` what was settled before.
    The message is the command line's; ``words(web=True)`` the notices page's, naming its buttons."""

    def __init__(self, batches: list[dict], *, on: dt.date, settled: list[dict] | None = None):
        self.batches, self.on, self.settled = batches, on, list(settled or [])
        super().__init__(self.words())

    def words(self, *, web: bool = False) -> str:
        return " ".join(f"{dated_words(b, self.on, web=web)}." for b in self.batches)


def dated_words(batch: Mapping, on: dt.date, *, web: bool = False) -> str:
    """Why an unfinished batch dated before ``on`` (today) is not finished as dated, and the two ways on, in one
    sentence without its full stop: the command line's commands, or (``web``) the notices page's buttons."""
    return f"Batch {batch['batch_id']} was left unfinished, and i{_dated_tail(batch, on, web=web)[1:]}"


def _dated_tail(batch: Mapping, on: dt.date, *, web: bool) -> str:
    """``dated_words`` from "Its letters are dated ..." on."""
    b, day, deadline = batch["batch_id"], batch["notice_date"], batch["deadline"]
    lost = (
        f"its deadline {deadline.isoformat()} has passed"
        if on >= deadline
        else f"{(on - day).days} of the {(deadline - day).days} days to its deadline {deadline.isoformat()} are gone"
    )
    violation = batch.get("kind") == "violation"
    if web:
        then = "issue the violation notices again as of today" if violation else "Preview and Confirm, dated today"
        cancel = f'"Cancel this batch" on its row under Batches, then {then}'
        as_dated = '"Issue it as dated" on its row'
    else:
        then = (
            "`sewerplan notices violations --out DIR`" if violation else "`sewerplan notices issue --notice-date today`"
        )
        cancel = f"`sewerplan notices resume {b} --cancel`, then {then}"
        as_dated = f"`sewerplan notices resume {b} --as-dated`"
    return (
        f"Its letters are dated {day.isoformat()} while today is {on.isoformat()}, so {lost}, and it is not "
        f"finished without your word: cancel it and issue again dated today ({cancel}), or, if its letters were in "
        f"fact mailed on {day.isoformat()}, finish it as dated ({as_dated}; the register's events record it)"
    )


def settle_words(batch: Mapping, *, web: bool = False, on: dt.date | None = None) -> str:
    """What settles an unfinished (prepared) batch, as it stands: being written here by a live process, being written
    into a folder this machine cannot see, or left by a process that stopped (dated before today: ``dated_words``),
    in a sentence without its full stop: the command line's commands, or (``web``) the notices page's buttons."""
    b = batch["batch_id"]
    if not Path(batch["folder"]).is_dir():
        cancel = '"Cancel this batch" on its row under Batches' if web else f"`sewerplan notices resume {b} --cancel`"
        return (
            f"batch {b} is being written into {batch['folder']}, which this machine cannot see: resume it where that "
            f"folder is, or cancel it ({cancel})"
        )
    if not interrupted(batch):
        return f"batch {b} is being written right now by another process: wait for it to end"
    on = on or today()
    if batch["notice_date"] < on:
        dated = dated_words(batch, on, web=web)
        return dated[0].lower() + dated[1:]
    stopped = f"batch {b} was left unfinished by a process that stopped"
    finish = "finishes it when its folder holds every letter and cancels it, never mailed, otherwise"
    if web:
        return f'{stopped}: "Settle interrupted batches" under Batches {finish}'
    return (
        f"{stopped}: `sewerplan notices resume {b}` {finish}, and "
        f"`sewerplan notices resume {b} --cancel` cancels it whatever its files hold"
    )


def unfinished_batch(register: Register, exc: UnfinishedBatchError, *, web: bool = False) -> LayerError:
    """A change refused for a notice of an unfinished batch (``layers.register.UnfinishedBatchError``), worded with
    the batch as it stands and what settles it (``settle_words``): `notices mark`, `record` and `record-service` and
    the notices page's forms said "no open notice", "being written" or "still being written" of a batch whose writer
    was dead."""
    batch = register.batch(exc.batch_id)
    if batch is None or batch["status"] != "prepared":  # settled meanwhile: the change can be asked again
        return LayerError(f"{exc}; batch {exc.batch_id} was settled meanwhile: try again.")
    how = settle_words(batch, web=web)
    return LayerError(f"{exc}. {how[0].upper()}{how[1:]}; {exc.then}.")


def unfinished_listed(register: Register, listed: pd.DataFrame) -> list[dict]:
    """The unfinished batches (still prepared) of the listed notices, one each, as `notices list --json` gives them
    (``unfinished``): ``batch_id``, how many listed ``notices`` it holds, its ``notice_date`` and ``deadline``, what
    settles it as it stands (``settle``, ``settle_words``) and the line the text table is followed by (``said``,
    once per batch, not on each row): the JSON lacked what the text said."""
    prepared = listed[listed["status"] == "prepared"]
    out = []
    for batch_id, group in prepared.groupby("batch_id", sort=True):
        batch = register.batch(str(batch_id))
        if batch is None or batch["status"] != "prepared":
            continue
        how = settle_words(batch)
        said = (
            f"{count(len(group), 'notice')} listed as prepared belong to batch {batch_id}, which was never issued "
            f"(no deadline runs, and none was mailed as far as the register knows): {how}."
        )
        out.append(
            {
                "batch_id": str(batch_id),
                "notices": len(group),
                "notice_date": batch["notice_date"].isoformat(),
                "deadline": batch["deadline"].isoformat(),
                "settle": how[0].upper() + how[1:] + ".",
                "said": said,
            }
        )
    return out


def interrupted(batch: dict) -> bool:
    """A prepared batch whose writer is gone: its folder is here and no process holds its lock. The notices page
    says so, rather than "being written", until the batch is settled.

    The lock file can go between a look and the opening (its writer deletes it when done): that writer is gone, so
    the batch is interrupted, and the page is not an error. A file locked here after its writer deleted it is not
    the batch's lock: the one under the name now is looked at instead (``batch_lock``'s own test)."""
    root = Path(batch["folder"])
    if batch["status"] != "prepared" or not root.is_dir():
        return False
    path = _lock_path(root, batch["batch_id"])
    while True:
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return True
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        else:
            if same_file(fd, path):
                return True
        finally:
            os.close(fd)


def resume(register: Register, batch_id: str, *, actor: str, cancel: bool = False, as_dated: bool = False) -> dict:
    """Finish an unfinished batch (its files are all there) or cancel it (they are not, or ``cancel``).

    A complete batch dated before today is refused (``BatchDatedError``) unless ``as_dated``: the clerk's word that
    its letters were mailed on their date, kept in the register (``Register.finish_batch``). An incomplete one is
    never finished as dated: no complete set of its letters can have been mailed from it."""
    if cancel and as_dated:
        raise LayerError(f"Batch {batch_id} is either cancelled or finished as dated, not both: choose one.")
    batch = register.batch(batch_id)
    if batch is None:
        raise LayerError(_no_such_batch(register, batch_id))
    if batch["status"] != "prepared":
        raise LayerError(f"Batch {batch_id} is already {batch['status']}: nothing to resume.")
    on = today()
    result = _settle_one(register, batch, actor=actor, cancel=cancel, wait=False, as_dated=as_dated, on=on)
    if result is None and not Path(batch["folder"]).is_dir():
        raise LayerError(
            f"Batch {batch_id} was being written into {batch['folder']}, which this machine cannot see: resume it "
            "where that folder is, or cancel it (it was never mailed from here)."
        )
    if result is None:
        raise LayerError(f"Batch {batch_id} is being written by another process right now: wait for it to end.")
    if result["action"] == "dated":
        raise BatchDatedError([result["record"]], on=on)
    return result


def _no_such_batch(register: Register, batch_id: str, *, shown: int = 5) -> str:
    """Why a batch cannot be resumed that the register lacks, naming the batches it has: "No batch B1" alone left
    the clerk to guess the ID, which is the batch folder's name and is printed when the batch is issued."""
    start = f"No batch {batch_id} in the register {register.url}"
    every = register.batches()
    if not every:
        return f"{start}, which holds no batch yet: there is nothing to resume."
    unfinished = [b["batch_id"] for b in every if b["status"] == "prepared"]
    if unfinished:
        more = f" and {len(unfinished) - shown} more" if len(unfinished) > shown else ""
        return (
            f"{start}: give the ID of one of its {count(len(unfinished), 'unfinished batch', 'unfinished batches')} "
            f"(the name of its batch folder): {', '.join(unfinished[:shown])}{more}."
        )
    latest = "; ".join(f"{b['batch_id']}, {b['status']}" for b in every[:shown])
    return f"{start}, and it has no unfinished batch: there is nothing to resume (its latest: {latest})."


def _settle_one(register, batch, *, actor, cancel, wait, on, as_dated=False) -> dict | None:
    """Settle one prepared batch (see ``settle``); None when it is not this process's to settle. A complete batch
    dated before ``on`` is left as it is (action ``dated``, with its ``record``) unless ``as_dated``."""
    root, batch_id = Path(batch["folder"]), batch["batch_id"]
    if not root.is_dir():
        # Another machine may be writing it into a folder this one cannot see: only the clerk decides.
        if not cancel:
            return None
        register.cancel_batch(batch_id, actor=actor, why=f"Cancelled on request; its folder {root} is not here.")
        return {"batch": batch_id, "action": "cancelled", "notices": None, "why": f"its folder {root} is not here"}
    with batch_lock(root, batch_id, wait=wait) as mine:
        if not mine:
            return None
        current = register.batch(batch_id)
        if current is None or current["status"] != "prepared":
            return None
        notice_ids = list(register.batch_notices(batch_id)["notice_id"])
        folder = root / batch_id
        day = current["notice_date"]
        if cancel:
            why = "cancelled on request"
        elif not folder.is_dir():
            why = "its files were never moved into place"
        elif problems := verify_batch(folder, notice_ids):
            why = f"its files were not all written ({'; '.join(problems[:3])})"
        elif day < on and not as_dated:  # letters mailed now would give less time than they say
            return {"batch": batch_id, "action": "dated", "record": current}
        else:
            manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
            note = (
                f"Issued on {on.isoformat()} as dated {day.isoformat()}, {(on - day).days} days after that date, on "
                f"the word of {actor} that its letters were mailed on {day.isoformat()}."
                if day < on
                else None
            )
            register.finish_batch(batch_id, letters=_letters_of(batch_id, manifest), actor=actor, as_dated=note)
            done = {"batch": batch_id, "action": "issued", "notices": len(notice_ids), "folder": str(folder)}
            return done | ({"as_dated": day.isoformat(), "note": note} if note else {})
        if as_dated:
            raise LayerError(
                f"Batch {batch_id} cannot be finished as dated: {why}, so its letters cannot all have been mailed from "
                "it. Nothing was changed: cancel it and issue again dated today."
            )
        register.cancel_batch(batch_id, actor=actor, why=why[:500])
        _set_aside(root, batch_id)
        return {"batch": batch_id, "action": "cancelled", "notices": len(notice_ids), "why": why}


# -- the mailing ----------------------------------------------------------------------------------------------------


def mark(
    register: Register,
    parcel_id: str,
    status: str,
    *,
    actor: str,
    note: str | None = None,
    until: dt.date | str | None = None,
    on: dt.date | str | None = None,
    notice_id: str | None = None,
    correct: bool = False,
) -> dict:
    """Mark a parcel's open notices (``Register.mark``), for `sewerplan notices mark` and the notices page alike;
    ``correct``: the day of a parcel marked connected already, given again (``on`` is then required).

    A notice marked connected keeps the day the parcel connected, ``on``, else today (``connected_on_given`` says
    which, so the command and the page say that today was taken): refused after today and before the notice's date,
    as a connection recorded without a notice is (``analysis.notices.connection_day_problem``)."""
    day = today()
    given = on is not None and on != ""
    if correct and not given:
        raise LayerError("A correction of the day a parcel connected needs the right day.")
    connected_on = (on if given else day) if status == "connected" else (on or None)
    done = register.mark(
        parcel_id,
        status,
        actor=actor,
        note=note,
        deadline=until,
        notice_id=notice_id,
        connected_on=connected_on,
        today=day,
        correct=correct,
    )
    return done | ({"connected_on_given": given} if status == "connected" else {})


def record_mailing(
    register: Register,
    path: str | Path,
    *,
    actor: str,
    correct: bool = False,
    pause: Callable | None = None,
    name: str | None = None,
    web: bool = False,
) -> dict:
    """Record the certified mail article numbers of a batch's mailing list given back (``mailing-list.csv`` with
    ``certified_article_no`` filled in from the receipts) on the notices each envelope served: every row checked
    (``analysis.notices.mailing_record``, then ``Register.record_mailing``), then all written in one transaction, or
    nothing. Returns what was recorded and how many rows have no number yet (``empty``).

    Each row is named as the clerk's spreadsheet shows it, in ``name`` (the file's name as the clerk knows it: the
    notices page's upload is saved under another; by default the file's own name): "row 4 of mailing-list.csv".
    A row naming a notice of an unfinished batch is refused saying how that batch is settled, in the command's words
    or (``web``) the notices page's buttons (``settle_words``)."""
    table = read_table(str(path), what="The mailing list")
    list_name = name or Path(path).name
    listed = listed_notices(table)
    held = register.held_notices(listed)
    if not_this_registers(len(listed), len(held)):
        raise LayerError(_not_this_registers(register, table, listed, held, list_name, path))
    found = mailing_record(table, list_name=list_name)
    if found.mailings or found.problems:
        done = _recorded(
            register,
            lambda day: register.record_mailing(
                found.mailings, actor=actor, correct=correct, problems=found.problems, pause=pause, today=day
            ),
            web=web,
        )
    else:
        done = dict.fromkeys(("letters", "recorded", "corrected", "unchanged"), 0)
        done |= dict.fromkeys(("occupant_copies", "occupant_recorded", "occupant_corrected", "occupant_unchanged"), 0)
        done |= {"before_date": [], "today": today().isoformat()}
    return done | {"empty": found.empty, "rows": len(table)}


def record_article_number(
    register: Register, notice_id: str, number: str, *, actor: str, correct: bool = False, web: bool = False
) -> dict:
    """Record the certified mail article number of one notice issued before batches, by its ID (it is in no mailing
    list: `record-mailing --notice NOTICE --article-no NUMBER` and the notices page's form for it), checked as a
    list's row is (``Register.record_article_number``) and recorded as ``record_mailing`` records a list's: on
    today's date, so that a number recorded before the date of its letter is warned about (``before_date``) and
    the notice's events say so, and a notice of an unfinished batch is refused saying how it is settled."""
    done = _recorded(
        register,
        lambda day: register.record_article_number(notice_id, number, actor=actor, correct=correct, today=day),
        web=web,
    )
    return done | {"empty": 0, "rows": 1}


def _recorded(register: Register, record: Callable[[dt.date], dict], *, web: bool) -> dict:
    """Article numbers recorded by ``record(today)`` (a list's, or one notice's by its ID), the one way each is: on
    the day of the recording, which a letter dated after it is warned about (``Register.record_mailing``'s
    ``before_date``), ``today`` returned with what was recorded; a refusal naming a batch left unfinished says how
    it is settled, in the command's words or (``web``) the notices page's (``settle_words``)."""
    day = today()
    try:
        done = record(day)
    except LayerError as exc:
        how = [
            settle_words(batch, web=web)
            for batch_id in getattr(exc, "unfinished_batches", ())
            if (batch := register.batch(batch_id)) and batch["status"] == "prepared"
        ]
        if not how:
            raise
        raise type(exc)(f"{exc} To settle: " + "; ".join(how) + ".") from None
    return done | {"today": day.isoformat()}


_BATCH_ID = re.compile(r"B\d{8}-[0-9A-F]{6}")


def _not_this_registers(
    register: Register, table: pd.DataFrame, listed: list[str], held: set[str], name: str, path: str | Path
) -> str:
    """Said once, for a mailing list given back to a register that holds none (or almost none) of its notices: each
    row was refused as "the register holds no notice", 90 times. Names what the list looks like it belongs to, where
    the file says: the batch its folder or name is called after, the town whose law its notices cite."""
    some = f"only {len(held)} of its {len(listed)} notices are" if held else f"none of its {len(listed)} notices is"
    where = register.path or redact_url(register.url)
    said = [f"{name} is not this register's mailing list: {some} in the register {where}"]
    looks = []
    for batch_id in dict.fromkeys(_BATCH_ID.findall(f"{path} {name}")):  # a batch folder's name, or a file's
        mine = " (a batch of this register, whose notices are not these)" if register.batch(batch_id) else ""
        looks.append(f"batch {batch_id}'s list{mine}")
    sections = sorted({str(v).strip() for v in table.get("section", pd.Series(dtype=str)).dropna()} - {""})
    if sections:
        towns = _towns_citing(sections)
        law = f" (the law of the {' or the '.join(towns)})" if towns else ""
        looks.append(f"its notices cite {', '.join(sections)}{law}")
    if looks:
        said.append(f"it looks like {', and '.join(looks)}" if len(looks) > 1 or "list" in looks[0] else looks[0])
    own = register.batches()[:3]
    said.append(
        "this register's latest batches are "
        + "; ".join(f"{b['batch_id']} ({b['profile']}, {b['status']})" for b in own)
        if own
        else "this register holds no batch yet"
    )
    return (
        "; ".join(said)
        + ". Nothing was recorded: give the list back to the register of the town and store that issued it, or give "
        "this register's own batch's mailing list."
    )


def _towns_citing(sections: list[str]) -> list[str]:
    """The municipalities of the bundled profiles whose rules cite every one of ``sections`` ("§ 144-4": the Village
    of Fort Plain), to say whose a mailing list given to the wrong register looks like."""
    towns = []
    for name in available_profiles():
        profile = load_profile(name)
        cited = {getattr(rule, "section", None) for rule in profile.rules().values()}
        if set(sections) <= cited:
            towns.append(municipality_name(profile.municipality))
    return towns


# -- violations ---------------------------------------------------------------------------------------------------


def violations(
    register: Register,
    *,
    profile: Profile,
    town: TownSettings | None,
    today: dt.date,
    root: str | Path | None,
    actor: str,
    current: pd.DataFrame | None = None,
    occupant: bool = False,
) -> dict:
    """Violation notices for the connection notices overdue on ``today``, each citing its original notice.

    With ``root`` the batch is issued like a connection batch (letters, mailing list, labels); without it nothing is
    recorded and the document lists who would get one. ``current`` is the latest analysis (``parcel_id``,
    ``status``): its connected parcels are left out (``connected``), and those it no longer finds mandated are
    listed for the clerk to review (``review``), neither given a violation notice. ``occupant``: a copy to
    "Occupant" at the site address of each notice whose owner mails elsewhere, as a connection batch's (the site's
    city, state and ZIP code from ``current``); ``occupant_copies`` and ``occupant_held`` say how many and which not.
    """
    overdue, moved = past_deadline(register.listing(deadline_before=today, notice_type="connection"), today)
    overdue, other_law = _given_under_another_profile(register, overdue, profile)
    # A parcel already holding an open violation notice gets no second one (the register's one-open-notice index):
    # the preview listed it as due, then issuing said "0 issued; N already open".
    noticed = overdue["parcel_id"].astype(str).isin(register.open_parcels("violation")).to_numpy()
    overdue, already_open = overdue[~noticed], int(noticed.sum())
    # the deadline each letter stated, where an extension has moved it since: the violation letter cites both
    stated = register.deadlines_in_notices(overdue["notice_id"].astype(str).tolist())
    overdue = overdue.assign(deadline_in_notice=overdue["notice_id"].astype(str).map(stated).astype(object))
    plan = plan_violations(overdue, profile=profile, today=today, town=town, current=current, **LETTER_CHECKS)
    left_out = {
        kind: plan.held[plan.held["left_out"] == kind].drop(columns="left_out").to_dict("records")
        for kind in ("connected", "review", "held")  # held: the letter could not be addressed or printed
    } | {"next_business_day": moved.to_dict("records"), "other_profile": other_law}
    checksum = hashlib.sha256(
        plan.due[["original_notice_id", "parcel_id", "original_deadline"]].astype(str).to_csv(index=False).encode()
    ).hexdigest()
    copies, copies_held = copies_to_occupant(plan.due, occupant=occupant)
    left_out["without_proof_of_service"] = without_proof_of_service(overdue, plan.due)
    if root is None:
        return left_out | {
            "occupant_copies": len(copies),
            "occupant_held": copies_held.to_dict("records"),
            "recorded": False,
            "already_open": already_open,
            "correct_by": plan.deadline.isoformat(),
            "deadline_flag": deadline_flag(plan.deadline),
            "period": {"days": plan.period.days, "basis": plan.period.basis},
            "letters_blocked_by": town_problems(profile, town, plan),
            "notices": [
                _notice_doc(r) | {"original_notice_id": r["original_notice_id"]} for r in plan.due.to_dict("records")
            ],
        }
    inputs = NoticeInputs(results=plan.due, checksum=checksum, fingerprints={"register": register.url})
    doc = issue_batch(
        register,
        plan,
        kind="violation",
        profile=profile,
        town=town,
        root=root,
        actor=actor,
        inputs=inputs,
        occupant=occupant,
    )
    doc["already_open"] += already_open
    issued = pd.Series([n["parcel_id"] for n in doc["notices"]], dtype=object).astype(str)
    doc["occupant_copies"] = int(issued.isin(copies["parcel_id"].astype(str)).sum())
    return doc | left_out | {"recorded": True, "correct_by": plan.deadline.isoformat()}


def without_proof_of_service(overdue: pd.DataFrame, due: pd.DataFrame) -> list[str]:
    """The connection notices the violation notices ``due`` enforce that have no proof of service recorded: no
    certified mail article number from the receipt, and no service in person recorded. A violation notice rests on
    the owner having been given the notice; enforcing one nobody can show was served went out without a word (a
    tester). Said, not refused: the receipts may be in the office, not yet recorded."""
    if due.empty or "original_notice_id" not in due.columns:
        return []
    enforced = overdue[overdue["notice_id"].astype(str).isin(due["original_notice_id"].astype(str))]
    proof = pd.Series(False, index=enforced.index)
    for column in ("certified_article_no", "served_on"):
        if column in enforced.columns:
            given = enforced[column]
            proof |= given.notna() & (given.astype(str).str.strip() != "")
    return sorted(enforced.loc[~proof, "notice_id"].astype(str))


def _given_under_another_profile(register: Register, overdue: pd.DataFrame, profile: Profile):
    """The overdue notices given under ``profile``, and those a batch gave under another profile, listed apart.

    A violation notice quotes the duty the original notice gave and the law's correction period: one for a Fort
    Plain notice, run after a Poughkeepsie analysis, went out on the Town of Poughkeepsie's law and letterhead.
    Notices without a batch (older registers) are kept: their law is not recorded.
    """
    under = overdue["batch_id"].map({b["batch_id"]: b["profile"] for b in register.batches()})
    other = (under.notna() & (under != profile.id)).to_numpy()
    held = [
        {
            "parcel_id": r["parcel_id"],
            "notice_id": r["notice_id"],
            "profile": law,
            "section": r["section"],
            "why": f"given under the {law} profile ({r['section']}), not {profile.id}",
        }
        for r, law in zip(overdue[other].to_dict("records"), under[other], strict=True)
    ]
    return overdue[~other], held


__all__ = [
    "BatchDatedError",
    "NoticeInputs",
    "batch_lock",
    "chosen_doc",
    "mandated_parcels",
    "check_issue",
    "check_root",
    "mark",
    "write_files",
    "data_checksum",
    "issue_batch",
    "preview",
    "resume",
    "settle",
    "settle_words",
    "town_problems",
    "unfinished_batch",
    "violations",
    "without_proof_of_service",
]
