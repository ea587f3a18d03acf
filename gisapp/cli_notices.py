"""``sewerplan notices``: preview, issue, list, mark, violations, backup."""

from __future__ import annotations

import datetime as dt
import getpass
import json
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from analysis.notices import due_notices, mailing_list, violation_deadline, violation_text
from analysis.profiles import load_profile
from gisapp.cli_common import data_options, loading, user_errors
from gisapp.pipeline import analyse_layers, issue_notices
from layers.letters import write_letter
from layers.register import STATUSES, Register

REGISTER_OPTION = click.option(
    "--register",
    "register_url",
    metavar="URL|PATH",
    help="The notice register (default SEWERPLAN_DATABASE_URL, else instance/register.sqlite).",
)
DATE = click.DateTime(formats=["%Y-%m-%d"])


@click.group()
def notices() -> None:
    """Connection notices: preview, issue, list, mark, violations, backup."""


def _due(opts, notice_date, reason, register):
    with loading(opts, as_json=True, required=("parcels", "mains"), extra_steps=1) as (loaded, bar):
        layers = loaded.layers
        bar.step("analysing")
        result = analyse_layers(layers, loaded.profile)
    excluded = register.excluded_parcels()
    due = due_notices(
        result.parcels, profile=loaded.profile, notice_date=notice_date.date(), notice_reason=reason, exclude=excluded
    )
    mandated = set(result.parcels.loc[result.parcels["status"] == "mandated", "parcel_id"].astype(str))
    return loaded, result, due, len(mandated & excluded)


def _notice_json(rows) -> list[dict]:
    return [
        {
            "notice_id": r.get("notice_id"),
            "parcel_id": r["parcel_id"],
            "deadline": r["deadline"],
            "type": r.get("notice_type", "connection"),
        }
        for r in rows
    ]


@notices.command()
@data_options
@click.option("--notice-date", type=DATE, required=True, help="Date the notices would be given.")
@click.option(
    "--reason",
    metavar="REASON",
    help="Why notice is given (Poughkeepsie: public_health_hazard or highway_improvement).",
)
@REGISTER_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@user_errors
def preview(notice_date, reason, register_url, as_json, **opts):
    """Who would get a connection notice, grouped by owner mailing address; nothing is recorded."""
    register = Register(register_url)
    _, _, due, _ = _due(opts, notice_date, reason, register)
    if as_json:
        click.echo(json.dumps({"notices": _notice_json(due.to_dict("records"))}, indent=2))
        return
    rows = mailing_list(due)
    table = Table(title=f"{len(due)} notice(s) to {len(rows)} mailing address(es) (nothing recorded)")
    for col in ("owner", "mailing address", "parcels", "deadline"):
        table.add_column(col, overflow="fold")
    for r in rows.to_dict("records"):
        table.add_row(
            r["name_line_1"],
            f"{r['address_line_1']}, {r['city']} {r['state']} {r['zip']}",
            r["parcel_ids"],
            r["deadline"],
        )
    Console().print(table)


@notices.command()
@data_options
@click.option("--notice-date", type=DATE, required=True, help="Date of the notices.")
@click.option("--reason", metavar="REASON", help="Why notice is given (required by Poughkeepsie § 168-22.2G).")
@click.option("--out", "out_dir", required=True, metavar="DIR", help="Folder for the mailing list, labels and letters.")
@click.option("--per-parcel", is_flag=True, help="One mailing-list row per parcel instead of per owner address.")
@click.option("--occupant", is_flag=True, help='Also write to "Occupant" at the site when the owner lives elsewhere.')
@click.option("--bom", is_flag=True, help="Write the CSV with a UTF-8 byte-order mark (for spreadsheet programs).")
@REGISTER_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@user_errors
def issue(notice_date, reason, out_dir, per_parcel, occupant, bom, register_url, as_json, **opts):
    """Record connection notices in the register and write the mailing list, labels and letters."""
    register = Register(register_url)
    loaded, result, due, noticed_before = _due(opts, notice_date, reason, register)
    fingerprints = {k: v for k, v in loaded.layers.sources.items()} | {"parcels": len(result.parcels)}
    doc = issue_notices(
        register,
        due,
        profile=loaded.profile,
        parcels=result.parcels,
        lines=result.measuring_lines,
        mains=loaded.layers.mains,
        out_dir=out_dir,
        actor=_actor(),
        summary=result.summary,
        fingerprints=fingerprints,
        per_parcel=per_parcel,
        occupant=occupant,
        bom=bom,
        already_before=noticed_before,
    )
    if as_json:
        click.echo(json.dumps(doc, indent=2))
    else:
        click.echo(
            f"{doc['issued']} notice(s) issued ({doc['already_open']} already noticed); mailing list "
            f"{doc['mailing_list']}, labels {doc['labels']}, {len(doc['letters'])} letter(s)."
        )


@notices.command("list")
@click.option("--overdue", is_flag=True, help="Only open notices whose deadline has passed.")
@click.option("--as-of", type=DATE, help="The day to judge overdue by (default today).")
@click.option("--status", type=click.Choice(STATUSES), help="Only notices with this status.")
@REGISTER_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@user_errors
def list_notices(overdue, as_of, status, register_url, as_json):
    """The notices in the register."""
    day = (as_of.date() if as_of else dt.date.today()) if overdue else None
    table = Register(register_url).listing(status=status, overdue_on=day)
    if as_json:
        click.echo(json.dumps({"notices": _notice_json(table.to_dict("records"))}, indent=2))
        return
    out = Table(title=f"{len(table)} notice(s)" + (f" overdue on {day}" if day else ""))
    for col in ("notice", "parcel", "type", "issued", "deadline", "status", "owner"):
        out.add_column(col)
    for r in table.to_dict("records"):
        out.add_row(
            r["notice_id"],
            r["parcel_id"],
            r["notice_type"],
            r["issued_date"],
            r["deadline"],
            r["status"],
            r["owner_name"] or "",
        )
    Console().print(out)


@notices.command()
@click.argument("parcel_id")
@click.argument("status", type=click.Choice(STATUSES[1:]))
@click.option("--note", help="Why (stored in the register and its event log).")
@click.option("--until", type=DATE, help="With extended: the new deadline.")
@REGISTER_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@user_errors
def mark(parcel_id, status, note, until, register_url, as_json):
    """Record that a parcel connected, got an extension, was exempted, or its notice was withdrawn."""
    done = Register(register_url).mark(
        parcel_id, status, actor=_actor(), note=note, deadline=until.date().isoformat() if until else None
    )
    click.echo(json.dumps(done, indent=2) if as_json else f"{parcel_id}: {status} ({len(done['notices'])} notice(s)).")


@notices.command()
@click.option("--profile", "profile_name", required=True, metavar="NAME|FILE", help="Ordinance profile.")
@click.option("--as-of", type=DATE, help="The day of the violation notices (default today).")
@click.option("--out", "out_dir", metavar="DIR", help="Folder for the violation letters.")
@REGISTER_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@user_errors
def violations(profile_name, as_of, out_dir, register_url, as_json):
    """Violation notices for overdue connection notices, with the profile's correction period and penalty."""
    profile = load_profile(profile_name)
    register = Register(register_url)
    day = as_of.date() if as_of else dt.date.today()
    overdue = register.listing(overdue_on=day, notice_type="connection")
    correct_by = violation_deadline(profile, day)
    due = overdue.assign(
        notice_type="violation",
        issued_date=day.isoformat(),
        deadline=correct_by,
        section=profile.notices.correction_period_days.citation,
        notice_reason=None,
        original_deadline=overdue["deadline"],
    )
    issued, already = register.issue(due, actor=_actor())
    letters = []
    if out_dir and issued:
        ids = {n["parcel_id"]: n["notice_id"] for n in issued}
        with register.transaction() as con:
            for row in due[due["parcel_id"].isin(ids)].to_dict("records"):
                notice_id = ids[row["parcel_id"]]
                text = violation_text(profile, row["parcel_id"], row["original_deadline"], correct_by)
                path = write_letter(
                    Path(out_dir) / f"{notice_id}.pdf", row | {"notice_id": notice_id, "text": text}, profile=profile
                )
                register.set_letter(con, notice_id, path)
                letters.append(path)
    doc = {"issued": len(issued), "already_open": already, "letters": letters, "notices": issued}
    if as_json:
        click.echo(json.dumps(doc, indent=2))
    else:
        click.echo(
            f"{len(issued)} violation notice(s) issued, to be corrected by {correct_by} "
            f"({profile.notices.correction_period_days.citation}); {already} already open."
        )


@notices.command()
@click.argument("target")
@REGISTER_OPTION
@user_errors
def backup(target, register_url):
    """Copy the register consistently (SQLite's online backup API), even while it is in use."""
    click.echo(f"Register backed up to {Register(register_url).backup(target)}.")


def _actor() -> str:
    try:
        return f"cli:{getpass.getuser()}"
    except (OSError, KeyError):
        return "cli"


__all__ = ["notices"]
