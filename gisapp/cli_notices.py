"""``sewerplan notices``: town-template, preview, issue, resume, list, mark, record, record-mailing, record-service,
violations, backup.

The register is found the same way from any folder: ``--register``, else ``SEWERPLAN_DATABASE_URL``, else the
register recorded in the town's store (the ``--data`` GeoPackage, or ``--store``). A register that does not exist
is created only by ``notices issue --new``.
"""

from __future__ import annotations

import datetime as dt
import getpass
import json
import math
import shlex
import textwrap
from pathlib import Path

import click
import pandas as pd
from rich.console import Console
from rich.table import Table

from analysis.notices import (
    SERVED_IN_PERSON,
    NoticeChoice,
    article_service,
    mailing_address,
    mailing_warnings,
    mailing_words,
    service_record_words,
)
from gisapp import notices as _notices
from gisapp import services
from gisapp.cli_common import DAY, data_options, loading, print_problems, recorded_words, set_pairs, user_errors
from gisapp.words import before_issuing, count, letters_written, not_yet_overdue, unmapped_area_words
from gisapp.workspace import WorkspaceSpec
from layers.errors import LayerError
from layers.letters import write_mailing_list
from layers.read import read_hazard_list, read_parcel_list
from layers.register import (
    STATUSES,
    ConnectedRecordedError,
    OpenNoticeError,
    Register,
    RegisterMissingError,
    ServiceRecordedError,
    UnfinishedBatchError,
)
from layers.store import store_label
from layers.town import TOWN_FILE, write_town_template

REGISTER_OPTION = click.option(
    "--register",
    "register_url",
    metavar="URL|PATH",
    help="The notice register (default: SEWERPLAN_DATABASE_URL, else the register recorded in the store).",
)
STORE_OPTION = click.option(
    "--store",
    "store",
    metavar="GPKG|URL",
    type=click.Path(dir_okay=False),
    help="The town's store (a GeoPackage, or postgresql://...#SCHEMA), whose register (and town.toml beside a "
    "GeoPackage) is used.",
)
TOWN_OPTION = click.option(
    "--town",
    "town_path",
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="The town settings file for letters (default: town.toml beside the store).",
)
REASON_OPTION = click.option(
    "--notice-reason",
    "notice_reason",
    metavar="REASON",
    help="Why notice is given, where the profile requires one (Poughkeepsie: public_health_hazard or "
    "highway_improvement, § 168-22.2G).",
)
HAZARD_OPTION = click.option(
    "--hazard", metavar="TEXT", help="With public_health_hazard: the hazard, named on every letter of the batch."
)
HAZARD_FILE_OPTION = click.option(
    "--hazard-file",
    type=click.Path(exists=True, dir_okay=False),
    metavar="CSV",
    help="With public_health_hazard: a CSV of parcel_id,hazard; only the parcels it lists are noticed.",
)

PARCELS_OPTION = click.option(
    "--parcel-ids",
    "parcel_ids",
    metavar="ID,ID",
    help="Notice only these mandated parcels (their IDs, separated by commas); with --street, these and the street's.",
)
PARCELS_FILE_OPTION = click.option(
    "--parcel-ids-file",
    "parcels_file",
    type=click.Path(exists=True, dir_okay=False),
    metavar="CSV",
    help="Notice only the mandated parcels a CSV lists in its parcel_id column (with --parcel-ids, those too).",
)
STREET_OPTION = click.option(
    "--street",
    metavar="NAME",
    help='Notice only the mandated parcels on this street ("Canal St"): their site address\'s street, or the sewered '
    "street whose main decided them.",
)


def _choice(parcel_ids: str | None, parcels_file: str | None, street: str | None) -> NoticeChoice | None:
    """The mandated parcels chosen by --parcel-ids, --parcel-ids-file and --street (None: every one). IDs are separated
    by commas only: a parcel ID may hold a space."""
    ids = [i for i in (parcel_ids or "").split(",") if i.strip()]
    if parcel_ids is not None and not ids:
        raise click.UsageError(
            "--parcel-ids names no parcel: give the IDs separated by commas (--parcel-ids 12-1-1,12-1-2)."
        )
    if parcels_file:
        listed = read_parcel_list(parcels_file)
        if not listed:
            raise click.UsageError(f"--parcel-ids-file {parcels_file} lists no parcel ID in its parcel_id column.")
        ids += listed
    if street is not None and not street.strip():
        raise click.UsageError('--street is empty: give the street\'s name ("Canal St").')
    choice = NoticeChoice(parcel_ids=tuple(ids), street=street)
    return choice or None


def _choice_lines(doc: dict) -> list[str]:
    """What the preview and the issue say of a choice: how many mandated parcels it took in, and each ID given that
    is not due a notice, with why (said among those held back too)."""
    chosen = doc.get("chosen")
    if not chosen:
        return []
    given = []
    if chosen["parcel_ids"]:
        given.append(count(len(chosen["parcel_ids"]), "parcel ID"))
    if chosen["street"]:
        given.append(f"the street {chosen['street']}")
    return [
        f"Chosen: {' and '.join(given)}, taking in {count(chosen['mandated'], 'mandated parcel')}, "
        f"{chosen['due']} of them due a notice now."
    ] + [f"Not due, though chosen: {h['parcel_id']}: {h['why']}." for h in chosen["not_due"]]


@click.group()
def notices() -> None:
    """Connection notices: town-template, preview, issue, resume, list, mark, record, record-mailing, violations,
    backup."""


def _open(register_url: str | None, store: str | None, *, new: bool = False) -> Register:
    """The register (``services.open_register``); a missing one's error says how to make it, in flags."""
    return services.open_register(register_url, store=store, create=new)


@notices.command("town-template")
@click.argument("target", default=TOWN_FILE, type=click.Path(), metavar="[FILE]")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@user_errors
def town_template(target, as_json):
    """Write the town settings template for the letters (default: town.toml in this folder; letters read it beside
    the store, or with --town); never overwrites. Replace every value in it before issuing notices."""
    written = write_town_template(target)
    if as_json:
        click.echo(json.dumps({"written": str(written)}, indent=2))
        return
    click.echo(
        f"Town settings template written to {written}: replace every value (letterhead, return address, signing "
        "officer, contact, fees, resolutions) with the office's own; `sewerplan notices preview` says which are "
        f"still the template's. Letters read {TOWN_FILE} beside the store, or the file given with --town."
    )


def _no_register_yet(as_json: bool) -> Register:
    """An empty register in a temporary folder, for previewing a town's first batch before any register exists."""
    import atexit
    import shutil
    import tempfile

    folder = tempfile.mkdtemp(prefix="sewerplan-preview-")
    atexit.register(shutil.rmtree, folder, True)
    if not as_json:
        click.echo(
            "No notice register yet: nobody has been noticed. `sewerplan notices issue ... --new` creates the "
            "town's register when the first batch is issued.",
            err=True,
        )
    return Register(f"sqlite:///{folder}/register.sqlite", create=True)


def _hazard(hazard: str | None, hazard_file: str | None):
    if hazard and hazard_file:
        raise click.UsageError("Give --hazard or --hazard-file, not both.")
    if not hazard_file:
        return hazard
    return read_hazard_list(hazard_file)


def _settle(register: Register, as_json: bool) -> list[dict]:
    """Settle the batches earlier runs left (``services.settle``), saying what was done to each; one dated before
    today refuses the run, once the others are said."""
    try:
        done = services.settle(register, actor=_actor())
    except _notices.BatchDatedError as exc:
        if not as_json:
            _settled_lines(exc.settled)
        raise
    if not as_json:
        _settled_lines(done)
    return done


def _settled_lines(done: list[dict]) -> None:
    for d in done:
        if d["action"] == "issued":
            click.echo(f"Finished batch {d['batch']} left from an earlier run: {d['notices']} notice(s) issued.")
        else:
            click.echo(f"Cancelled batch {d['batch']} left from an earlier run ({d['why']}): never mailed.")


def _preview(
    opts: dict,
    *,
    register_url: str | None,
    town_path: str | None,
    notice_date,
    notice_reason: str | None,
    hazards,
    as_json: bool,
    choice: NoticeChoice | None = None,
    new: bool = False,
    settle: bool = False,
    first_look: bool = False,
):
    """The workspace's notices preview, the register it was checked against, and the batches settled first.

    The register is opened before the layers are read, so a missing register is said at once. With
    ``first_look`` (the preview), a store that has no register yet is previewed against an empty one: nobody has
    been noticed, and nothing is created; a register named by URL or path must exist. With ``new`` (issue --new) a
    register that does not exist yet is previewed against an empty one too, and returned as None: the issue makes
    it only once nothing refuses the batch.
    """
    store = services.store_of(opts.get("data"))
    pending = False  # issue --new: the register is made by the issue, once nothing refuses the batch
    try:
        register = _open(register_url, store)
    except RegisterMissingError as exc:
        pending = new and bool(exc.url or store)  # a register named, or a store to make one beside
        if not pending and (not first_look or register_url):
            raise
        register = _no_register_yet(as_json or pending)
    town = services.town(town_path, data=opts.get("data"))
    with loading(opts, as_json=as_json, required=("parcels", "mains"), extra_steps=2, register=register_url) as (
        loaded,
        bar,
    ):
        settled = _settle(register, as_json) if settle else []
        found = services.preview_notices(
            loaded.workspace,
            register,
            town=town,
            notice_date=notice_date,
            notice_reason=notice_reason,
            hazard=hazards,
            choice=choice,
            progress=bar.step,
        )
    if not as_json:
        print_problems(loaded.console, loaded.layers)
    return (None if pending else register), found, settled


@notices.command()
@data_options
@click.option("--notice-date", type=DAY, required=True, help="Date the notices would be given (YYYY-MM-DD, or today).")
@REASON_OPTION
@HAZARD_OPTION
@HAZARD_FILE_OPTION
@PARCELS_OPTION
@PARCELS_FILE_OPTION
@STREET_OPTION
@TOWN_OPTION
@REGISTER_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@user_errors
def preview(
    notice_date,
    notice_reason,
    hazard,
    hazard_file,
    parcel_ids,
    parcels_file,
    street,
    town_path,
    register_url,
    as_json,
    **opts,
):
    """Who would get a connection notice, grouped by owner mailing address; nothing is recorded."""
    _, found, _ = _preview(
        opts,
        register_url=register_url,
        town_path=town_path,
        notice_date=notice_date,
        notice_reason=notice_reason,
        hazards=_hazard(hazard, hazard_file),
        as_json=as_json,
        choice=_choice(parcel_ids, parcels_file, street),
        first_look=True,
    )
    plan, rows, doc = found.plan, found.rows, found.doc
    try:  # a preview may look at any day; that `issue` would refuse this one is said with what else blocks it
        _notices.check_notice_date(plan.notice_date)
    except LayerError as exc:
        doc["letters_blocked_by"] = [*doc["letters_blocked_by"], str(exc)]
    if as_json:
        click.echo(json.dumps(doc, indent=2, default=str))
        return
    console = Console()
    table = Table(title=f"{len(plan.due)} notice(s) to {len(rows)} mailing address(es) (nothing recorded)")
    for col in ("owner", "mailing address", "parcels", "deadline"):
        table.add_column(col, overflow="fold")
    for r in rows.to_dict("records"):
        name = " ".join(p for p in (r["name_line_1"], r["name_line_2"]) if p)
        table.add_row(name, mailing_address(r), r["parcel_ids"], str(r["deadline"]))
    console.print(table)
    period = doc.get("period") or {}
    if doc["deadline"] and period.get("days") is not None:  # what the deadline rests on, as the letter says it
        console.print(
            f"Deadline {doc['deadline']}: {period['days']} days ({period['basis']}).",
            highlight=False,
            markup=False,
        )
    if doc["deadline_flag"]:
        console.print(
            f"[yellow]The deadline {doc['deadline']} falls on a {doc['deadline_flag']}[/yellow]: the town decides "
            "whether to give a later date.",
            highlight=False,
        )
    if unmapped := unmapped_area_words(doc["area_unmapped"], doc["mandated"]):
        console.print(unmapped, style="yellow", highlight=False, markup=False)
    for line in _choice_lines(doc):
        console.print(line, highlight=False, markup=False)
    for line in _notices.left_out(doc):
        console.print(line, highlight=False, markup=False)
    for line in _held_lines(doc["held"]):
        console.print(line, highlight=False, markup=False)
    for problem in doc["letters_blocked_by"]:
        console.print(before_issuing(problem), style="yellow", highlight=False, markup=False)


def _batch_files(doc: dict) -> str:
    """The files of an issued batch (connection or violation notices), each named, as the clerk copies them."""
    return (
        f"Files in {doc['folder']}: {Path(doc['mailing_list']).name}, {Path(doc['labels']).name}, "
        f"{Path(doc['letters_pdf']).name} (all letters in mailing order), letters/, {Path(doc['manifest']).name} "
        "(each file's checksum, to tell the batch is whole and unchanged)."
    )


@notices.command()
@data_options
@click.option(
    "--notice-date",
    type=DAY,
    required=True,
    help="Date of the notices, the day they are mailed (YYYY-MM-DD, or today).",
)
@REASON_OPTION
@HAZARD_OPTION
@HAZARD_FILE_OPTION
@PARCELS_OPTION
@PARCELS_FILE_OPTION
@STREET_OPTION
@click.option(
    "--out", "out_dir", required=True, metavar="DIR", help="Folder for the batches: each batch gets its own folder."
)
@click.option("--per-parcel", is_flag=True, help="One mailing-list row and letter per parcel instead of per address.")
@click.option("--occupant", is_flag=True, help='Also write to "Occupant" at the site when the owner lives elsewhere.')
@click.option(
    "--bom/--no-bom",
    default=True,
    show_default=True,
    help="Write the mailing list with a UTF-8 byte-order mark, so spreadsheet programs show § and accented names.",
)
@TOWN_OPTION
@REGISTER_OPTION
@click.option(
    "--new", "new", is_flag=True, help="Create the register if it does not exist (and record it in the store)."
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@user_errors
def issue(
    notice_date,
    notice_reason,
    hazard,
    hazard_file,
    parcel_ids,
    parcels_file,
    street,
    out_dir,
    per_parcel,
    occupant,
    bom,
    town_path,
    register_url,
    new,
    as_json,
    **opts,
):
    """Issue connection notices: a batch folder with the mailing list, labels and letters, then the register."""
    # A refused issue makes nothing: what can be refused without the data (the folder, the date) is refused before
    # the layers are read, the rest (the town settings) before the town's first register or the folder is made.
    _notices.check_root(out_dir, create=False)
    _notices.check_notice_date(notice_date)
    choice = _choice(parcel_ids, parcels_file, street)
    register, found, settled = _preview(
        opts,
        register_url=register_url,
        town_path=town_path,
        notice_date=notice_date,
        notice_reason=notice_reason,
        hazards=_hazard(hazard, hazard_file),
        as_json=as_json,
        choice=choice,
        new=new,
        settle=True,
    )
    services.check_issue(found, root=out_dir)
    # The town's first register is created (or, existing, recorded in the store) only now, and only for a batch to
    # record in it: with every parcel held back, nothing is made, as no files are.
    nothing_due = register is None and found.plan.due.empty
    if new and not nothing_due:
        register = _open(register_url, services.store_of(opts.get("data")), new=True)
    elif nothing_due:
        register = _no_register_yet(True)  # nothing is recorded in it: issuing stops before the register
    doc = services.issue_notices(
        found, register, root=out_dir, actor=_actor(), per_parcel=per_parcel, occupant=occupant, bom=bom
    )
    doc["settled"] = settled
    if as_json:
        click.echo(json.dumps(doc, indent=2, default=str))
        return
    if not doc["batch"]:
        made = "; no register created (there was nothing to record in it)" if nothing_due else ""
        click.echo(f"0 notice(s) issued ({doc['already_open']} already noticed); no files written{made}.")
    else:
        click.echo(
            f"Batch {doc['batch']}: {doc['issued']} notice(s) issued ({doc['already_open']} already noticed) in "
            f"{letters_written(doc)}. {_batch_files(doc)}"
        )
    if doc["deadline_flag"] and doc["batch"]:
        click.echo(
            f"Note: the deadline {doc['deadline']} falls on a {doc['deadline_flag']}: the town decides whether "
            "that moves it."
        )
    for line in _choice_lines(doc):
        click.echo(line)
    for line in _held_lines(doc["held"] + doc["occupant_held"]):
        click.echo(line)
    if doc["batch"] and (unmapped := unmapped_area_words(doc["area_unmapped"], found.doc["mandated"])):
        click.echo(unmapped)


@notices.command()
@click.argument("batch_id")
@click.option("--cancel", is_flag=True, help="Cancel the batch even if its files are complete (it was not mailed).")
@click.option(
    "--as-dated",
    "as_dated",
    is_flag=True,
    help="Finish a batch dated before today as dated, its letters having been mailed on their date (recorded in "
    "the register's events).",
)
@STORE_OPTION
@REGISTER_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@user_errors
def resume(batch_id, cancel, as_dated, store, register_url, as_json):
    """Finish a batch an interrupted run left prepared (its files are all there), or cancel it (they are not). One
    dated before today is finished only with --as-dated, where its letters were mailed on their date."""
    if cancel and as_dated:
        raise click.UsageError("Give --cancel or --as-dated, not both: a batch is cancelled or finished as dated.")
    done = services.resume(_open(register_url, store), batch_id, actor=_actor(), cancel=cancel, as_dated=as_dated)
    if as_json:
        click.echo(json.dumps(done, indent=2, default=str))
    elif done.get("as_dated"):
        click.echo(
            f"Batch {batch_id}: {done['notices']} notice(s) issued as dated {done['as_dated']}, their deadlines "
            f"running from that date; files in {done['folder']}. {done['note']}"
        )
    elif done["action"] == "issued":
        click.echo(f"Batch {batch_id}: {done['notices']} notice(s) issued; files in {done['folder']}.")
    else:
        click.echo(f"Batch {batch_id}: {done['notices']} notice(s) cancelled, never mailed ({done['why']}).")


LIST_COLUMNS = (
    ("notice_id", "notice", 14),
    ("parcel_id", "parcel", 9),
    ("notice_type", "type", 4),
    ("status", "status", 8),
    ("issued_date", "issued", 10),
    ("deadline", "deadline", 10),
    ("owner_name", "owner", 8),
    ("certified_article_no", "article", 7),  # the last digits: --json and --csv give it whole, and served_by
    ("connected_on", "connected", 10),  # the day it connected: a notice marked connected, or a record
)


@notices.command("list")
@click.option(
    "--overdue",
    is_flag=True,
    help="Only issued notices still open whose deadline has passed (a weekend or holiday deadline runs to the next "
    "business day, General Construction Law § 25-a).",
)
@click.option("--as-of", type=DAY, help="The day to judge overdue by (default today).")
@click.option("--status", type=click.Choice(("prepared", "cancelled", *STATUSES)), help="Only this status.")
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False), metavar="FILE", help="Also write every column.")
@STORE_OPTION
@REGISTER_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document with every column.")
@user_errors
def list_notices(overdue, as_of, status, csv_path, store, register_url, as_json):
    """The notices in the register: status, owner, issued date and deadline."""
    day = (as_of if as_of else _notices.today()) if overdue else None
    register = _open(register_url, store)
    table = register.listing(status=status, overdue_on=day)
    unfinished = _notices.unfinished_listed(register, table)  # said once below the table, not on each row
    if csv_path:
        taken = LayerError(f"{csv_path} already exists: give a new file name for the export.")
        if Path(csv_path).exists():
            raise taken
        try:  # linked into place, never over a file another export made meanwhile
            write_mailing_list(csv_path, table, replace=False)
        except FileExistsError as exc:
            raise taken from exc
    if as_json:
        records = json.loads(table.to_json(orient="records", date_format="iso", default_handler=str))
        for row, original in zip(records, table.to_dict("records"), strict=True):
            for k in ("issued_date", "deadline", "served_on", "connected_on"):
                row[k] = original[k].isoformat() if original.get(k) is not None else None
        click.echo(json.dumps({"notices": records, "unfinished": unfinished}, indent=2))
        return
    if table.empty:  # a sentence, not a table's title over an empty header
        click.echo(f"No notices{f' overdue on {day}' if day else ''}{f' with status {status}' if status else ''}.")
        if csv_path:
            click.echo(f"All {len(table.columns)} columns written to {csv_path} (the header alone).")
        return
    # The day each connected (a notice marked connected, a record) only where a listed notice has one: the owner
    # keeps its room on a list of open notices.
    columns = [c for c in LIST_COLUMNS if c[0] != "connected_on" or table["connected_on"].notna().any()]
    rows = [[_list_cell(k, r[k]) for k, _, _ in columns] for r in table.to_dict("records")]
    # The key columns (notice and parcel ID) are never cut: a block's parcels differ only at their ends ("1.1-1-12"),
    # so "1.1-1…" made every row look the same. They and the short columns take their longest cell; the owner takes
    # the rest of the line, cut with an ellipsis where it is longer, so each notice keeps one line (--json and --csv
    # give every column whole). On a terminal too narrow for the IDs the table is printed wider: no ID is cut.
    widths = {key: width for key, _, width in columns}
    for i, (key, label, width) in enumerate(columns):
        if key != "owner_name":  # "record", "connected": the short columns take their longest word too
            widths[key] = max(width, len(label), *(len(row[i]) for row in rows))
    gaps = len(columns) - 1
    others = sum(w for k, w in widths.items() if k != "owner_name") + gaps
    terminal = min(Console().width, 120)
    widths["owner_name"] = max(widths["owner_name"], terminal - others)
    console = Console(width=max(terminal, others + widths["owner_name"]))
    out = Table(
        title=f"{len(table)} notice(s)" + (f" overdue on {day}" if day else ""),
        box=None,
        pad_edge=False,
        padding=(0, 1, 0, 0),
    )
    for key, label, _ in columns:
        out.add_column(label, no_wrap=True, overflow="ellipsis", min_width=widths[key], max_width=widths[key])
    for row in rows:
        out.add_row(*row)
    console.print(out)
    for line in [*_served_lines(table), *(b["said"] for b in unfinished)]:
        click.echo(textwrap.fill(line, width=console.width))
    if csv_path:
        click.echo(f"All {len(table.columns)} columns written to {csv_path}.")


def _served_lines(table: pd.DataFrame) -> list[str]:
    """How the listed notices were served (``served_by``, as their letters said) and how many hold their article
    number: one line per method, below the table, which has room only for the number's last digits."""
    served = table[table["served_by"].notna()]
    lines = []
    for method, group in served.groupby("served_by", sort=True):
        if method == SERVED_IN_PERSON:  # the day and who served each: --json and --csv give them
            numbers = group["certified_article_no"].dropna()
            by = " or ".join(sorted({article_service(n) for n in numbers}))  # registered mail, for a letter abroad
            lines.append(
                f"Served {SERVED_IN_PERSON}: {count(len(group), 'notice')}, on the day and by the person recorded"
                + (f" ({len(numbers)} also by {by}, with the article number recorded)." if len(numbers) else ".")
            )
            continue
        numbered = int(group["certified_article_no"].notna().sum())
        lines.append(
            f"Served by {method}: {count(len(group), 'notice')}, {numbered} with the article number recorded"
            + ("." if numbered == len(group) else " (record the others with `sewerplan notices record-mailing`).")
        )
    return lines


# The list's short word for each kind of register row: a connection recorded without a notice is no violation.
_KIND_WORDS = {"connection": "conn", "violation": "viol", "record": "record"}


def _list_cell(key: str, value) -> str:
    """One cell of `notices list`: a kind's short word, a date in ISO form, "-" for nothing (a missing owner was
    printed "nan")."""
    if key == "notice_type":
        return _KIND_WORDS.get(value, str(value))
    if key == "certified_article_no" and isinstance(value, str):
        return "\u2026" + value[-6:]
    if isinstance(value, dt.date):
        return value.isoformat()
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA else str(value)


@notices.command()
@click.argument("parcel_id")
@click.argument("status", type=click.Choice(STATUSES[1:]))
@click.option("--note", help="Why (stored in the register and its event log).")
@click.option("--until", type=DAY, help="Only with extended: the new, later deadline.")
@click.option(
    "--on",
    "on",
    type=DAY,
    help="Only with connected: the day the parcel connected (default today; the notice's date or later, today or "
    "before).",
)
@click.option(
    "--correct",
    is_flag=True,
    help="With connected and --on: replace the day of a parcel marked connected already (the old day stays in its "
    "events).",
)
@STORE_OPTION
@REGISTER_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@user_errors
def mark(parcel_id, status, note, until, on, correct, store, register_url, as_json):
    """Record that a parcel connected (on a day), got an extension, was exempted, or its notice was withdrawn."""
    if until and status != "extended":
        raise click.UsageError(f"--until goes only with extended; a notice marked {status} keeps its deadline.")
    if status == "extended" and not until:
        raise click.UsageError("An extension needs the new deadline: --until YYYY-MM-DD.")
    if on and status != "connected":
        raise click.UsageError(f"--on goes only with connected: the day the parcel connected, not {status}.")
    if correct and (status != "connected" or not on):
        raise click.UsageError("--correct goes with connected and --on: the right day the parcel connected.")
    register = _open(register_url, store)
    try:
        done = _notices.mark(
            register,
            parcel_id,
            status,
            actor=_actor(),
            note=note,
            until=until,
            on=on,
            correct=correct,
        )
    except ConnectedRecordedError as exc:
        raise LayerError(
            str(exc).replace(
                "mark it connected again with the right day as a correction", "mark it again with --on DAY --correct"
            )
        ) from None
    except UnfinishedBatchError as exc:
        raise _notices.unfinished_batch(register, exc) from None
    if as_json:
        click.echo(json.dumps(done, indent=2))
        return
    said = f"day it connected corrected to {done['connected_on']}" if correct else status
    if "connected_on" in done and not correct:
        said += f" on {done['connected_on']}" + ("" if done["connected_on_given"] else " (today: no --on was given)")
    click.echo(f"{parcel_id}: {said} ({len(done['notices'])} notice(s)).")


@notices.command()
@click.argument("parcel_id")
@click.argument("status", type=click.Choice(("connected",)))
@click.option("--on", "on", type=DAY, required=True, help="The day the parcel connected (today or before).")
@click.option("--note", help="How it is known (a permit, an inspection; stored in the register and its event log).")
@STORE_OPTION
@REGISTER_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@user_errors
def record(parcel_id, status, on, note, store, register_url, as_json):
    """Record that a parcel with no open notice (held back, or never noticed) connected on a day; it is never
    noticed again. A parcel with an open notice is marked instead (`notices mark PARCEL connected`)."""
    register = _open(register_url, store)
    try:
        done = services.record_connection(register, parcel_id, status, on=on, actor=_actor(), note=note, store=store)
    except OpenNoticeError as exc:
        how = f"`sewerplan notices mark {shlex.quote(parcel_id)} connected --on {on.isoformat()}`"
        raise LayerError(str(exc).replace("(mark it connected)", f"({how})")) from None
    except UnfinishedBatchError as exc:
        raise _notices.unfinished_batch(register, exc) from None
    said = f"{parcel_id}: recorded connected on {done['on']} ({done['record_id']}, no notice); it is not noticed again."
    click.echo(json.dumps(done, indent=2) if as_json else said)


@notices.command("record-mailing")
@click.option(
    "--from",
    "from_path",
    type=click.Path(exists=True, dir_okay=False),
    metavar="CSV",
    help="The batch's mailing-list.csv given back with certified_article_no filled in from the receipts.",
)
@click.option(
    "--notice",
    "notice_id",
    metavar="NOTICE",
    help="Instead of a list: one notice issued before batches (it had no mailing-list row), by its ID.",
)
@click.option("--article-no", "article_no", metavar="NUMBER", help="With --notice: its receipt's article number.")
@click.option(
    "--correct",
    is_flag=True,
    help="Replace an article number the register holds for a notice by the list's (the old one stays in its events).",
)
@STORE_OPTION
@REGISTER_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@user_errors
def record_mailing(from_path, notice_id, article_no, correct, store, register_url, as_json):
    """Record the certified mail article number of each letter mailed on the notices it served (all the list's
    rows or none); rows with no number yet are left for later. A notice issued before batches has no row in any
    list: give its ID and number instead (--notice, --article-no)."""
    if bool(from_path) == bool(notice_id or article_no):
        raise click.UsageError(
            "Give the mailing list given back (--from CSV), or one notice issued before batches and its number "
            "(--notice NOTICE --article-no NUMBER), not both."
        )
    if bool(notice_id) != bool(article_no):
        raise click.UsageError("--notice and --article-no go together: the notice, and its receipt's article number.")
    register = _open(register_url, store)
    try:
        if notice_id:
            done = _notices.record_article_number(register, notice_id, article_no, actor=_actor(), correct=correct)
        else:
            done = _notices.record_mailing(register, from_path, actor=_actor(), correct=correct)
    except LayerError as exc:
        raise LayerError(
            str(exc)
            .replace("record the list again as a correction", "record the list again with --correct")
            .replace(
                "give the list back to the register of the town and store that issued it",
                "give the list back to the register of the town and store that issued it (its --store or --register)",
            )
            .replace(
                "record its article number by the notice's ID, one notice at a time",
                "record its article number by the notice's ID, one notice at a time "
                "(`sewerplan notices record-mailing --notice NOTICE --article-no NUMBER`)",
            )
        ) from None
    if as_json:
        click.echo(json.dumps(done, indent=2))
        return
    click.echo(mailing_words(done))
    for warning in mailing_warnings(done):
        click.echo(warning)


@notices.command("record-service")
@click.argument("notice_id")
@click.option(
    "--on",
    "on",
    type=DAY,
    required=True,
    help="The day it was handed to the owner (the notice's date or later, today or before).",
)
@click.option(
    "--by",
    "by",
    required=True,
    metavar="NAME",
    help="Who served it: their name and office, as a proof of service names them.",
)
@click.option(
    "--correct",
    is_flag=True,
    help="Replace a service recorded wrongly (the old day and name stay in the notice's events).",
)
@STORE_OPTION
@REGISTER_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@user_errors
def record_service(notice_id, on, by, correct, store, register_url, as_json):
    """Record that a notice was served in person (handed to the owner) on a day, by whom. Its deadline moves only
    where the law of its profile counts the period from service (Wappinger § 196-22A), never before the date its
    letter states; the old values stay in its events."""
    register = _open(register_url, store)
    try:
        done = register.record_service(notice_id, on=on, by=by, actor=_actor(), today=_notices.today(), correct=correct)
    except ServiceRecordedError as exc:
        raise LayerError(
            str(exc).replace("record the service again as a correction", "record it again with --correct")
        ) from None
    except UnfinishedBatchError as exc:
        raise _notices.unfinished_batch(register, exc) from None
    click.echo(json.dumps(done, indent=2) if as_json else service_record_words(done))


@notices.command()
@click.option(
    "--profile",
    "profile_name",
    metavar="NAME|FILE",
    help="Ordinance profile (default: the one the store's latest run used).",
)
@click.option("--as-of", type=DAY, help="The day of the violation notices (default today).")
@click.option("--out", "out_dir", metavar="DIR", help="Folder for the batch; without it nothing is recorded.")
@click.option(
    "--occupant",
    is_flag=True,
    help='Also send a copy to "Occupant" at the site when the owner lives elsewhere (needs the analysed --store).',
)
@click.option(
    "--set", "settings", multiple=True, metavar="SECTION.KEY=VALUE", help="Override a profile value (as analyze)."
)
@TOWN_OPTION
@STORE_OPTION
@REGISTER_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@user_errors
def violations(profile_name, as_of, out_dir, occupant, settings, town_path, store, register_url, as_json):
    """Violation notices for overdue connection notices: letters citing each original notice, mailing list, labels."""
    given = WorkspaceSpec(profile=profile_name, settings=set_pairs(settings))
    recorded = services.recorded_spec(store)
    spec = given.merged_over(recorded) if recorded else given
    if recorded and recorded_words(given, recorded):
        taken = recorded_words(given, recorded)
        click.echo(f"Using what the latest run recorded in {store_label(store)}: {taken}.", err=True)
    if not spec.profile:
        raise click.UsageError("Give the town's ordinance profile with --profile, or the --store its runs use.")
    town = services.town(town_path, data=store)
    if occupant and not store:  # the register keeps the site's street only; the store's analysis has its city and ZIP
        raise click.UsageError(
            "--occupant needs the town's --store: a copy goes to the site address, whose city and ZIP code the "
            "register does not keep and the store's latest analysis does."
        )
    register = _open(register_url, store)
    settled = _settle(register, as_json) if out_dir else []
    day = as_of if as_of else _notices.today()
    doc = services.violations(
        register,
        profile=services.profile_of(spec),
        town=town,
        today=day,
        root=out_dir,
        actor=_actor(),
        store=store,
        occupant=occupant,
    )
    doc["settled"] = settled
    if as_json:
        click.echo(json.dumps(doc, indent=2, default=str))
        return
    for line in _left_out_lines(doc, store):
        click.echo(line)
    for line in _held_lines(doc["held"] + doc["occupant_held"]):  # letters that cannot be addressed or printed
        click.echo(line)
    n = len(doc["notices"])
    if unproven := _unproven_service_words(doc["without_proof_of_service"], n):
        click.echo(unproven)
    if not doc["recorded"]:
        a = doc["already_open"]
        already = f" {a} more overdue already have an open violation notice and get none." if a else ""
        copies = f" With {doc['occupant_copies']} copy(ies) to the occupant at the site." if occupant else ""
        click.echo(
            f"{n} connection notice(s) overdue on {day}: violation notices would be corrected by {doc['correct_by']} "
            f"({doc['period']['basis']}).{already}{copies} Nothing recorded: give --out DIR to issue them with their "
            "letters."
        )
        if n and (weekend := _correct_by_flag(doc)):
            click.echo(weekend)
        for problem in doc["letters_blocked_by"]:
            click.echo(before_issuing(problem))
        return
    copies = f" With {doc['occupant_copies']} copy(ies) to the occupant at the site." if occupant else ""
    click.echo(
        f"Batch {doc['batch']}: {doc['issued']} violation notice(s) issued, to be corrected by {doc['correct_by']}; "
        f"{doc['already_open']} already open.{copies} {_batch_files(doc)}"
        if doc["batch"]
        else f"0 violation notice(s) issued; {doc['already_open']} already open."
    )
    if doc["batch"] and (weekend := _correct_by_flag(doc)):
        click.echo(weekend)


def _unproven_service_words(unproven: list[str], enforced: int, shown: int = 5) -> str | None:
    """The warning where violation notices enforce connection notices with no proof of service recorded (no
    certified mail article number, no service in person), and the commands that record it: they went out without a
    word (a tester).

    Examples
    --------
    >>> print(_unproven_service_words(["N-1", "N-2"], 3))
    Warning: 2 of the 3 connection notices these violation notices enforce have no proof of service recorded (no
    certified mail article number, no service in person): N-1, N-2. ...
    """
    if not unproven:
        return None
    which = (
        "the one connection notice this violation notice enforces has"
        if enforced == 1
        else (f"{len(unproven)} of the {enforced} connection notices these violation notices enforce have")
    )
    listed = ", ".join(unproven[:shown]) + (f" and {len(unproven) - shown} more" if len(unproven) > shown else "")
    return (
        f"Warning: {which} no proof of service recorded (no certified mail article number, no service in person): "
        f"{listed}. Record the article numbers from the receipts with `sewerplan notices record-mailing --from "
        "mailing-list.csv` (the batch's list given back, its certified_article_no filled in), or a notice handed to "
        "the owner with `sewerplan notices record-service NOTICE --on DATE --by NAME`, before the violation notices "
        "are mailed."
    )


def _correct_by_flag(doc: dict) -> str | None:
    """Where the date to correct a violation by falls on a weekend or New York public holiday, the sentence that says
    so, as `issue` says it of a connection notice's deadline: --json had it, the text did not (a tester)."""
    if not doc.get("deadline_flag"):
        return None
    return (
        f"Note: the date to correct by, {doc['correct_by']}, falls on a {doc['deadline_flag']}: the town decides "
        "whether to give a later date (General Construction Law § 25-a lets an act due then be done the next "
        "business day)."
    )


@notices.command()
@click.argument("target")
@STORE_OPTION
@REGISTER_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@user_errors
def backup(target, store, register_url, as_json):
    """A verified copy of the register (SQLite's online backup API, integrity check, row counts); never overwrites."""
    done = _open(register_url, store).backup(target)
    if as_json:
        click.echo(json.dumps(done, indent=2))
        return
    rows = ", ".join(f"{n} {t}" for t, n in done["tables"].items())
    click.echo(f"Register backed up to {done['target']} and verified (integrity ok; {rows}).")


def _left_out_lines(doc: dict, store: str | None, shown: int = 12) -> list[str]:
    """What ``violations`` left out (a deadline that runs to the next business day; the store's latest analysis),
    and what the clerk does about it."""
    lines = []
    if moved := doc["next_business_day"]:
        lines.append(not_yet_overdue(moved))
    laws: dict[str, list[str]] = {}
    where = f" --store {shlex.quote(store_label(store))}" if store else ""  # the command as it can be typed again
    rerun: dict[str, str] = {}
    for h in doc["other_profile"]:
        laws.setdefault(h["profile"], []).append(str(h["parcel_id"]))
        rerun[h["profile"]] = f"`{h['analyse_again']}`, then " if "analyse_again" in h else ""
    for law, ids in laws.items():
        more = f" and {len(ids) - shown} more, --json lists them all" if len(ids) > shown else ""
        lines.append(
            f"Left out {len(ids)} overdue notice(s) given under the {law} profile ({', '.join(ids[:shown])}{more}): "
            f"a violation notice follows the law its notice was given under; run {rerun[law]}`sewerplan notices "
            f"violations --profile {law}{where}` for them."
        )
    if doc["analysis"] is None:
        fix = (
            f"{store_label(store)} holds no analysis yet: run `sewerplan analyze --data {store_label(store)} --out "
            f"{store_label(store)}` first"
            if store
            else "give --store with the town's store"
        )
        return [
            *lines,
            f"Note: the overdue notices were not checked against an analysis: {fix}, so that parcels connected since, "
            "or no longer mandated, are left out.",
        ]
    run = f"the latest analysis ({doc['analysis']['run_at']})"
    if connected := doc["connected"]:
        ids = [str(h["parcel_id"]) for h in connected]
        more = f" and {len(ids) - shown} more, --json lists them all" if len(ids) > shown else ""
        lines.append(
            f"Left out {len(ids)} overdue parcel(s) that {run} finds connected ({', '.join(ids[:shown])}{more}): "
            f"record each connection in the register with `sewerplan notices mark PARCEL connected --store "
            f"{store_label(store)}` once verified."
        )
    if review := doc["review"]:
        ids = [f"{h['parcel_id']} ({h['status']})" for h in review]
        more = f" and {len(ids) - shown} more, --json lists them all" if len(ids) > shown else ""
        lines.append(
            f"For review, not listed as violations: {len(ids)} overdue parcel(s) that {run} no longer finds "
            f"mandated ({', '.join(ids[:shown])}{more}): their notices were issued under an earlier run, so review "
            f"each, and withdraw one that no longer stands with `sewerplan notices mark PARCEL withdrawn --store "
            f"{store_label(store)}`."
        )
    return lines


def _held_lines(held: list[dict], shown: int = 12) -> list[str]:
    """Parcels held back, grouped by why: the reason once, then the parcel IDs (the first few)."""
    groups: dict[str, list[str]] = {}
    for h in held:
        groups.setdefault(h["why"], []).append(str(h["parcel_id"]))
    lines = []
    for why, ids in groups.items():
        more = f" and {len(ids) - shown} more" if len(ids) > shown else ""
        lines.append(f"Held back, {len(ids)} parcel(s): {why} ({', '.join(ids[:shown])}{more}).")
    return lines


def _actor() -> str:
    try:
        return f"cli:{getpass.getuser()}"
    except (OSError, KeyError):
        return "cli"


__all__ = ["notices"]
