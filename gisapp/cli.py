"""The ``sewerplan`` command: analyze, sample, profiles, serve; network check and trace (cli_network.py).

Every command that prints results takes ``--json`` and then prints exactly one JSON document on stdout (shapes in
docs/cli.md). Bad input exits with status 2 and a message that says how to fix it, never a traceback.
"""

from __future__ import annotations

import errno
import json
import os
import signal
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from analysis.mandate import STATUSES
from analysis.profiles import bracketed, covering_tests, rule_tests
from gisapp import _interrupted_while_starting, services
from gisapp.cli_batch import batch
from gisapp.cli_common import (
    DAY,
    DIRECTION_OPTION,
    data_options,
    loading,
    print_problems,
    refuse_repeated_options,
    user_errors,
)
from gisapp.cli_duties import duties
from gisapp.cli_network import buildings, network, trace
from gisapp.cli_notices import notices
from gisapp.cli_plan import plan, plans
from gisapp.users import ROLES, add_user, count_users, list_users, remove_user
from gisapp.words import (
    layer_count,
    none_in_reach_words,
    run_warnings,
    unmapped_area_words,
    weekend_words,
    written_words,
    zero_flow_words,
)
from layers.errors import LayerError, redact_url
from layers.legend import STATUS_LEGEND
from layers.read import LAYER_NAMES
from layers.register import STORE_SETTING as REGISTER_SETTING
from layers.sample import sample_town
from layers.schema import SPECS
from layers.store import is_store, open_store, store_label, store_writer

STATUS_HELP = {status: style.meaning for status, style in STATUS_LEGEND.items()}
STORE_HELP = "The store: a GeoPackage, or a PostGIS schema postgresql://USER@HOST/DB#SCHEMA."
STORE_DEFAULT = "Default: the STORE setting (instance/config.py), else sewerplan.gpkg in the instance folder."


def server_store(given: str | None) -> str:
    """The store a command uses: the one given, else the web app's (the STORE setting, config.py's or its default
    in the instance folder): `sample` and `export-qgis` took ./instance/sewerplan.gpkg whatever config.py or
    SEWERPLAN_INSTANCE said, so `sewerplan sample` wrote a store `serve` did not show."""
    from gisapp import settings

    return given or str(settings()["STORE"])


@click.group()
@click.version_option(package_name="sewerplan")
def main() -> None:
    """sewerplan: who must connect to the public sewer, by when, and why."""


main.add_command(network)
main.add_command(trace)
main.add_command(buildings)
main.add_command(notices)
main.add_command(plan)
main.add_command(plans)
main.add_command(duties)
main.add_command(batch)


@main.command()
@data_options
@click.option(
    "--connected",
    "connected_file",
    type=click.Path(dir_okay=False),
    help="CSV of connected parcel IDs (billing records).",
)
@click.option("--connected-column", metavar="COLUMN", help="Column of --connected holding the parcel IDs.")
@click.option(
    "--notice-date",
    type=DAY,
    help="Date of official notice: deadlines are computed from it.",
)
@click.option(
    "--notice-reason",
    metavar="REASON",
    help="Why notice is given, where the profile requires one "
    "(Poughkeepsie: public_health_hazard or highway_improvement).",
)
@DIRECTION_OPTION
@click.option(
    "--out",
    "out_path",
    metavar="PATH|URL",
    help=(
        "Write results: .gpkg, .parquet (GeoParquet), .geojson (RFC 7946) or .csv, "
        "or a PostGIS store postgresql://USER@HOST/DB#SCHEMA."
    ),
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document instead of tables.")
@user_errors
def analyze(
    connected_file, connected_column, notice_date, notice_reason, digitised_direction, out_path, as_json, **opts
):
    """Classify every parcel under the chosen ordinance's connection mandate."""
    if out_path:
        services.check_output(out_path)
    # A store is locked for the whole run, before its layers are read: results are never written over layers
    # another writer (a publish, an upload, another run) changed while this run was computing from the old ones.
    writer = store_writer(out_path, who="sewerplan analyze") if out_path and is_store(out_path) else None
    try:
        with loading(
            opts,
            as_json=as_json,
            required=("parcels", "mains"),
            extra_steps=5 + bool(out_path),
            connected=connected_file,
            connected_column=connected_column,
            digitised_direction=digitised_direction,
        ) as (loaded, bar):
            layers, profile = loaded.layers, loaded.profile
            run = services.analyse(
                loaded.workspace,
                notice_date=notice_date,
                notice_reason=notice_reason,
                out_path=out_path,
                progress=bar.step,
                locked=writer is not None,
            )
    finally:
        if writer is not None:
            writer.release()

    parcels = run.parcels
    shown = store_label(out_path) if out_path and "://" in out_path else out_path  # never a password
    summary = run.summary | {
        "output": shown,
        "layers_written": run.written,
        "layers_copied": run.copied,
        "sources": layers.sources,
    }
    mandated = parcels[parcels["status"] == "mandated"]
    if as_json:
        doc = {
            "summary": summary,
            "warnings": run_warnings(summary),
            "problems": [p.as_dict() for p in layers.problems],
            "mandated": _mandated_json(mandated),
        }
        click.echo(json.dumps(doc, indent=2, default=str))
        return
    print_problems(loaded.console, layers)
    _print_summary(summary, profile)


def _mandated_json(mandated) -> list[dict]:
    cols = [
        c
        for c in (
            "parcel_id",
            "distance_ft",
            "boundary_distance_ft",
            "measured_from",
            "main_id",
            "section",
            "deadline",
            "reason",
            "control_manhole",
            "downstream_length_ft",
        )
        if c in mandated.columns
    ]
    table = mandated[cols].astype(object)
    return table.where(table.notna(), None).to_dict("records")


def status_meanings(profile) -> dict[str, str]:
    """What each status means under ``profile``: the legend's words, without a test the profile does not make.

    Wappinger's § 196-17E ties the duty to no abutting street, so "abutting a sewered street" would misstate its
    law, and a parcel is never in range but not abutting there.
    """
    md = profile.mandate
    tests = [
        "occupied" if md.requires_occupied_building.value else "",
        "abutting a sewered street" if md.requires_abutting_street.value else "",
        "within the distance",
    ]
    meanings = dict(STATUS_HELP)
    meanings["mandated"] = f"must connect ({', '.join(t for t in tests if t)})"
    if not md.requires_abutting_street.value:
        meanings["in_range_not_abutting"] = _not_used(md.requires_abutting_street, "abutting a sewered street")
    if not md.requires_occupied_building.value:
        meanings["unoccupied"] = _not_used(md.requires_occupied_building, "an occupied building")
    return meanings


def _not_used(rule, test: str) -> str:
    """Why a status is not used: the law makes no such test, or it does and the run set it off. "not used: § 144-4
    does not require an occupied building" under --set mandate.requires_occupied_building=false put in § 144-4's
    mouth the opposite of what it says."""
    if rule.overridden and rule.law_value:
        return f"not used: this run did not test it (a value set for the run; {rule.section} requires {test})"
    return f"not used: {rule.section} does not require {test}"


def deadline_words(summary: dict, profile) -> str:
    """The sentence after the notice date: the period the deadline runs, or why no deadline was computed."""
    days, rule = summary.get("notice_period_days"), profile.mandate.notice_period_days
    basis = summary.get("notice_period_basis")
    if days is not None and basis:  # the town's resolution beside the store, where the law leaves the period to it
        return f"deadline {days} days after it ({basis})."
    if days is not None:
        return f"deadline {days} days after it {rule.cited}."
    return (
        f"no deadline computed: the law sets no period to connect ({rule.section}); the Town sets it "
        "(--set mandate.notice_period_days=N to assume one)."
    )


def held_words(held: int, mandated: int, reason: str | None, rule) -> str:
    """What a run says of the parcels that must connect but may not be noticed for its notice reason (Poughkeepsie's
    § 168-22.3C: a property on a private system only for a public health hazard): no deadline, and why.

    Examples
    --------
    >>> from analysis.profiles import load_profile
    >>> rule = load_profile("poughkeepsie").notices.private_system_reasons
    >>> print(held_words(102, 102, "highway_improvement", rule))
    All 102 parcels that must connect are served by a private system: under § 168-22.3C such a property is noticed
    only for a public health hazard, not for a highway improvement, so none has a deadline; notices preview lists ...
    """
    which = f"All {mandated:,} parcels" if held == mandated else f"{held:,} of the {mandated:,} parcels"
    allowed = " or ".join(f"a {r.replace('_', ' ')}" for r in rule.value)
    return (
        f"{which} that must connect {'are' if held > 1 else 'is'} served by a private system: under {rule.section} "
        f"such a property is noticed only for {allowed}, not for a {str(reason).replace('_', ' ')}, so "
        f"{'none has a' if held == mandated else 'those have no'} deadline; notices preview lists them held back."
    )


def not_bound_words(unbound: int, mandated: int, rule) -> str:
    """What a run says of the parcels within the distance that the law does not bind (Wappinger's § 196-17E binds
    only a property served by a private system; their private_system column says no): no notice, no deadline.

    Examples
    --------
    >>> from analysis.profiles import load_profile
    >>> print(not_bound_words(3, 40, load_profile("wappinger").notices.private_system_only))
    3 of the 40 parcels within the distance are not served by a private system (their private_system column says
    no): § 196-17E binds only such a property, so they are given no notice and no deadline; notices preview lists ...
    """
    which = f"All {mandated:,} parcels" if unbound == mandated else f"{unbound:,} of the {mandated:,} parcels"
    are, they = ("are", "they are") if unbound > 1 else ("is", "it is")
    return (
        f"{which} within the distance {are} not served by a private system (their private_system column says no): "
        f"{rule.section} binds only such a property, so {they} given no notice and no deadline; notices preview "
        f"lists {'them' if unbound > 1 else 'it'} held back."
    )


def _print_summary(summary: dict, profile) -> None:
    out = Console()
    title = f"{profile.municipality}: {summary['parcels']:,} parcels, {profile.mandate.distance_ft.citation}"
    table = Table(title=title)
    table.add_column("status")
    table.add_column("parcels", justify="right")
    table.add_column("meaning")
    meanings = status_meanings(profile)
    for status in STATUSES:
        table.add_row(status, f"{summary['counts'][status]:,}", meanings[status])
    out.print(table)
    dist = summary["distance_ft"]
    out.print(
        f"Distance: {dist:g} ft from the property line {bracketed(summary['distance_section'])}, measured in "
        f"{summary['measuring_crs']}. Mains counted: {summary['counting_mains']} of {summary['mains']}.",
        highlight=False,
    )
    if "buildings" in summary:
        b = summary["buildings"]
        out.print(
            f"Buildings: {b['rear_buildings']} rear building(s), {b['needing_more_laterals']} needing more than "
            f"one building sewer, {b['manhole_connection_cases']} manhole connection(s) for the administrative "
            f"body to determine"
            + (
                f", {b['short_of_building_sewers']} with fewer building sewers mapped than required"
                if b.get("short_of_building_sewers")
                else ""
            )
            + " (sewerplan buildings lists them).",
            highlight=False,
        )
    if "traced" in summary:
        out.print(
            f"Control manhole and length to the outfall found for {summary['traced']:,} parcels.", highlight=False
        )
    if far := none_in_reach_words(summary):
        out.print(far, highlight=False)
    if unmapped := unmapped_area_words(summary.get("area_unmapped"), summary["counts"]["mandated"]):
        out.print(unmapped, highlight=False, markup=False)
    if summary["notice_date"]:
        out.print(f"Notice date {summary['notice_date']}; {deadline_words(summary, profile)}", highlight=False)
    if weekend := weekend_words(summary):
        out.print(weekend, highlight=False)
    if zero := zero_flow_words((summary.get("duties") or {}).get("zero_flow_found_occupied")):
        out.print(zero, highlight=False, markup=False)
    unbound = summary.get("notices_not_bound") or 0
    if held := (summary.get("notices_held") or 0) - unbound:
        rule = profile.notices.private_system_reasons
        out.print(held_words(held, summary["counts"]["mandated"], summary.get("notice_reason"), rule), highlight=False)
    if unbound:
        out.print(not_bound_words(unbound, summary["counts"]["mandated"], profile.notices.private_system_only))
    if summary["output"]:
        out.print(written_words(summary["output"], summary["layers_written"]), highlight=False)
    if summary["layers_copied"]:
        out.print(
            f"The input layers were copied in beside them ({', '.join(summary['layers_copied'])}): the map, trace "
            "and later runs on the store read them there.",
            highlight=False,
        )
    for warning in summary.get("warnings", []):
        out.print(f"Warning: {warning}", highlight=False)


@main.command()
@click.option(
    "--out",
    "out_path",
    help="The store to write: a GeoPackage, or a PostGIS schema postgresql://USER@HOST/DB#SCHEMA. " + STORE_DEFAULT,
)
@click.option(
    "--parcels",
    "n_parcels",
    default=2000,
    show_default=True,
    type=click.IntRange(50, 2_000_000),
    help="About how many parcels.",
)
@click.option("--seed", default=1982, show_default=True, help="Random seed (the town is deterministic).")
@click.option("--overwrite", is_flag=True, help="Replace the file if it exists.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@user_errors
def sample(out_path, n_parcels, seed, overwrite, as_json):
    """Write the bundled sample village (EPSG:2260) to a store (a GeoPackage or a PostGIS schema)."""
    out_path = server_store(out_path)
    if not is_store(out_path):
        raise LayerError(
            f"--out {store_label(out_path)}: the sample town is written as a store, a GeoPackage (.gpkg) or a PostGIS "
            "schema (postgresql://USER@HOST/DB#SCHEMA)."
        )
    town = sample_town(n_parcels, seed=seed)
    store = open_store(out_path)
    store.write_layers(town, overwrite=overwrite)
    counts = {name: len(frame) for name, frame in town.items()}
    shown = store_label(out_path)
    # A store replaced keeps the notice register it records (notices sent are never dropped with the layers): said.
    register = store.read_setting(REGISTER_SETTING)
    register = redact_url(store.register_location(register)) if register else None
    if as_json:
        click.echo(json.dumps({"output": shown, "crs": "EPSG:2260", "layers": counts, "register": register}, indent=2))
        return
    click.echo(f"Sample village written to {shown}: " + ", ".join(layer_count(n, k) for k, n in counts.items()))
    if register:
        click.echo(
            f"The store keeps its notice register, {register}: the notices recorded there stay, and notices issued "
            "from the sample village are recorded with them. Write the sample to another --out to start without them."
        )


@main.command("layers")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def layers_command(as_json):
    """The layer kinds --layer KIND=SOURCE and --layer-crs KIND=CRS take, and the names --data finds them by."""
    kinds = [
        {
            "kind": kind,
            "holds": spec.help,
            "required": spec.required_layer,
            "names": list(LAYER_NAMES.get(kind, ())),
            "fields": [f.name for f in spec.fields],
        }
        for kind, spec in SPECS.items()
    ]
    if as_json:
        click.echo(json.dumps(kinds, indent=2))
        return
    table = Table(title="Layer kinds (--layer KIND=SOURCE, --layer-crs KIND=CRS)")
    for col in ("kind", "holds", "found in --data by the names"):
        table.add_column(col, overflow="fold")
    for k in kinds:
        table.add_row(k["kind"] + (" (required)" if k["required"] else ""), k["holds"], ", ".join(k["names"]))
    Console().print(table)


@main.group()
def profiles() -> None:
    """List the ordinance profiles, or show one with its citations."""


@profiles.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@user_errors
def profiles_list(as_json):
    """List the bundled ordinance profiles."""
    loaded = services.profiles()
    if as_json:
        click.echo(
            json.dumps([{k: getattr(p, k) for k in ("id", "municipality", "law", "summary")} for p in loaded], indent=2)
        )
        return
    table = Table(title="Ordinance profiles")
    for col in ("profile", "municipality", "rule"):
        table.add_column(col)
    for p in loaded:
        table.add_row(p.id, p.municipality, p.summary)
    Console().print(table)


@profiles.command("show")
@click.argument("name")
@click.option(
    "--rules",
    "with_rules",
    is_flag=True,
    help="Every rule with its section, quote, whether it is law or a setting, and the tests that cover it.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@user_errors
def profiles_show(name, with_rules, as_json):
    """Show every rule of a profile with its section and quote."""
    profile = services.profile(name)
    tests = rule_tests() if with_rules else {}
    if as_json:
        doc = profile.as_dict()
        if with_rules:
            for key, rule in profile.rules().items():
                doc["rules"][key] |= {"kind": rule.kind, "tests": covering_tests(profile, key, tests)}
        click.echo(json.dumps(doc, indent=2, ensure_ascii=False))
        return
    out = Console()
    out.print(f"[bold]{profile.municipality}[/bold]\n{profile.law}\n{profile.summary}\n", highlight=False)
    table = Table(show_lines=True)
    columns = (
        ("rule", "value", "section", "law or setting", "quote / note", "tests")
        if with_rules
        else ("rule", "value", "section", "quote / note")
    )
    for col in columns:
        table.add_column(col, overflow="fold")
    for key, rule in profile.rules().items():
        value = "(set by the municipality)" if rule.value is None else str(rule.value)
        text = f'"{rule.quote}"' + (f"\n{rule.note}" if rule.note else "")
        if with_rules:
            covered = "\n".join(covering_tests(profile, key, tests)) or "NONE"
            table.add_row(key, value, rule.citation, RULE_KINDS[rule.kind], text, covered)
        else:
            kind = " [setting]" if rule.setting else ""
            table.add_row(key + kind, value, rule.citation, text)
    out.print(table)


RULE_KINDS = {
    "law": "law",
    "setting": "setting (the profile's reading)",
    "municipality": "left to the municipality",
}


LOOPBACK = ("127.0.0.1", "localhost", "::1")


def server_body_limit(max_content_length: int | None) -> int | None:
    """waitress's own cap on a request body, for the app's ``MAX_CONTENT_LENGTH``: a quarter more (at least 1 MB).

    waitress refuses a body at its cap before the app sees the request, with a bare text answer. Set a margin
    above the app's limit, a body a little over that limit reaches Flask, whose 413 page says how large the upload
    was, what the limit is and what to do (gisapp/errors.py). The upload forms check the file's size in the
    browser first, so a planner rarely sends more; the margin is for a file just over the limit (its form fields
    add a few hundred bytes to the body) and for clients without the script. None: no app limit, waitress's own.

    Examples
    --------
    >>> server_body_limit(200 * 1024 * 1024) // (1024 * 1024), server_body_limit(1000)
    (250, 1049576)
    """
    if max_content_length is None:
        return None
    return max_content_length + max(max_content_length // 4, 1024 * 1024)


USERS_DB_HELP = (
    "The accounts file (default: the USERS_DB setting of instance/config.py, else users.sqlite in the instance folder, "
    "instance/ or SEWERPLAN_INSTANCE)."
)


def check_new_store(found) -> None:
    """Refuse to serve a store that does not exist yet where publishing on the Data page could not make it: a PostGIS
    schema (the server's role may not create one: a schema is made and granted by whoever runs the database), a
    GeoPackage in a folder that does not exist (a typo in the path), a folder given as the store, or a file not
    named .gpkg. A GeoPackage in a folder that exists is served with no data: a new town starts on the web."""
    shown = found.label
    if found.kind == "PostGIS":
        raise LayerError(
            f"The PostGIS store {shown} does not exist yet (no such schema). Load the town's layers into the "
            f"schema (parcels, mains ...), then run `sewerplan analyze --data {shown} --out {shown}`."
        )
    path = Path(shown)
    if path.is_dir():
        raise LayerError(f"The store {shown} is a folder: give a GeoPackage file, such as {path / 'town.gpkg'}.")
    if not path.parent.is_dir():
        raise LayerError(
            f"The folder {path.parent} does not exist, so the store {shown} cannot be made there: check the path for "
            "a typo, or create the folder first."
        )
    if path.suffix.lower() != ".gpkg":
        raise LayerError(
            f"The store {shown} does not exist, and a new store is a GeoPackage file: give a name ending in .gpkg "
            f"(such as {path.with_suffix('.gpkg')}), or check the path for a typo."
        )


def users_db_path(given: str | None) -> Path:
    """The accounts file a command uses: the one given with --users-db, else the server's (``gisapp.users_db``: the
    USERS_DB setting, config.py's or its default in the instance folder), for every `users` command and `serve`:
    `users add` wrote ./instance/users.sqlite while config.py named another file, and `serve` found no account."""
    from gisapp import users_db

    return Path(given) if given else users_db()


@main.command()
@click.option(
    "--store",
    help=STORE_HELP + " " + STORE_DEFAULT,
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=5000, show_default=True, type=int)
@click.option("--users-db", help=USERS_DB_HELP)
@click.option("--threads", type=click.IntRange(1, 256), help="Request threads (default: the SERVER_THREADS setting).")
@user_errors
def serve(store, host, port, users_db, threads):
    """Serve the web app on http://HOST:PORT (127.0.0.1 by default) with the waitress production server."""
    import logging

    from gisapp import create_app
    from gisapp.state import limit_malloc_arenas
    from layers.uploads import SERVER_DRIVERS, expire_uploads, harden_gdal

    limit_malloc_arenas()  # before any request thread exists
    # Everything the server writes (uploads, previous stores, letters, job files) is for the service's account only:
    # a town-hall machine may have other users, and owners' names and addresses are in those files.
    os.umask(0o077)

    app = create_app()  # instance/config.py is read (STORE, SESSION_COOKIE_SECURE, TRUSTED_PROXY ...), then:
    # the store the app would show: with SEWERPLAN_INSTANCE set, ./instance/sewerplan.gpkg was served instead
    store = server_store(store)
    found = open_store(store)  # a GeoPackage, or a PostGIS schema (its URL checked here)
    new_town = not found.exists()
    if new_town:
        check_new_store(found)
    users_db = users_db_path(users_db)
    # Behind a reverse proxy every request is another computer's, though it reaches us from 127.0.0.1.
    local = host in LOOPBACK and not app.config["TRUSTED_PROXY"]
    if not local and count_users(users_db) == 0:
        where = f"on {host}" if host not in LOOPBACK else f"behind the reverse proxy at {app.config['TRUSTED_PROXY']}"
        raise LayerError(
            f"Serving {where} exposes owners' names and addresses: add an account first with "
            "`sewerplan users add NAME --role planner`."
        )
    location = store if found.kind == "PostGIS" else str(Path(store).resolve())
    app.config.update(STORE=location, LOCAL_MODE=local, USERS_DB=str(Path(users_db).resolve()))
    harden_gdal(keep_only=SERVER_DRIVERS)  # this process reads only the store and checked uploads
    for folder in (app.config["UPLOAD_FOLDER"], app.config["NOTICES_FOLDER"]):
        Path(folder).mkdir(parents=True, exist_ok=True, mode=0o700)
    expire_uploads(app.config["UPLOAD_FOLDER"], ttl_hours=app.config["UPLOAD_TTL_HOURS"])
    if new_town:  # made when the town's data is first published on the Data page; until then the pages say so
        click.echo(
            f"The store {found.label} does not exist yet: the pages say no data is loaded and link to the Data "
            "page, where the town's layers are uploaded, checked and published as this store."
        )
    else:
        with app.app_context():
            from gisapp.state import map_data

            map_data()  # load the store before the first visitor waits for it
    threads = threads or app.config["SERVER_THREADS"]
    options = {
        "host": host,
        "port": port,
        "threads": threads,
        "ident": "sewerplan",  # the Server header names no version
        "channel_timeout": app.config["REQUEST_TIMEOUT"],
        # Without a trusted proxy nothing believes a proxy's headers; on the loopback address they are kept for
        # ``gisapp.security.local_mode`` to tell a request a proxy passed on from a browser on this computer.
        "clear_untrusted_proxy_headers": not local,
    }
    body_limit = server_body_limit(app.config["MAX_CONTENT_LENGTH"])
    if body_limit is not None:
        options["max_request_body_size"] = body_limit
    if app.config["TRUSTED_PROXY"]:
        options |= {
            "trusted_proxy": app.config["TRUSTED_PROXY"],
            "trusted_proxy_count": 1,
            "trusted_proxy_headers": "x-forwarded-for x-forwarded-proto x-forwarded-host",
        }
    mode = "one local planner, no login" if local and count_users(users_db) == 0 else "sign-in required"
    logging.basicConfig()  # waitress's warnings on stderr, as waitress.serve sets them up
    server = listen(app, host, port, options)
    click.echo(f"Serving {found.label} on http://{host}:{port} ({mode}; {threads} threads; Ctrl+C to stop)")
    server.run()


def listen(app, host: str, port: int, options: dict):
    """waitress's server bound to HOST:PORT; a port in use (a `make demo` or `sewerplan serve` still running) or an
    address not this machine's is a sentence saying what to do, not OSError's traceback."""
    from waitress import create_server

    try:
        return create_server(app, **options)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise LayerError(
                f"Port {port} on {host} is in use: another program listens there (a sewerplan serve or make demo "
                f"still running, say). Stop it (Ctrl+C in its window), or serve on another port: --port {port + 1} "
                f"(make demo PORT={port + 1})."
            ) from None
        if exc.errno == errno.EACCES:
            raise LayerError(
                f"Port {port} may not be opened by this account (ports below 1024 need the administrator): serve "
                "on another with --port, such as the default 5000, behind the town's reverse proxy."
            ) from None
        if exc.errno == errno.EADDRNOTAVAIL:
            raise LayerError(
                f"{host} is not an address of this machine: give one of its own with --host (127.0.0.1 for this "
                "machine alone, 0.0.0.0 for every network it is on)."
            ) from None
        raise


@main.command("export-qgis")
@click.option("--store", help=STORE_HELP + " " + STORE_DEFAULT)
@click.option("--out", "out_path", required=True, metavar="PATH", help="The QGIS project to write: .qgz (or .qgs).")
@click.option("--title", help="The project's title (default: the municipality of the store's latest run).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@user_errors
def export_qgis(store, out_path, title, as_json):
    """Write a QGIS project of the store's layers, styled as the web map and grouped (results, network, base)."""
    done = services.export_qgis(server_store(store), out_path, title=title)
    if as_json:
        click.echo(json.dumps(done, indent=2))
        return
    groups = "; ".join(f"{group}: {', '.join(names)}" for group, names in done["layers"].items() if names)
    click.echo(f"QGIS project written to {done['output']} ({done['crs']}). {groups}.")


@main.group()
def users() -> None:
    """Accounts for the web app: planners run analyses and upload; viewers see."""


@users.command("add")
@click.argument("name")
@click.option("--role", type=click.Choice(ROLES), required=True)
@click.option("--password", prompt=True, hide_input=True, confirmation_prompt=True, help="Asked for when not given.")
@click.option("--users-db", help=USERS_DB_HELP)
@user_errors
def users_add(name, role, password, users_db):
    """Add an account (or change its role and password)."""
    add_user(users_db_path(users_db), name, role, password)
    click.echo(f"{name} can now sign in as a {role}.")


@users.command("remove")
@click.argument("name")
@click.option("--users-db", help=USERS_DB_HELP)
@user_errors
def users_remove(name, users_db):
    """Remove an account: it can no longer sign in, and its open sessions end at their next page."""
    left = remove_user(users_db_path(users_db), name)
    click.echo(f"{name} can no longer sign in; their open sessions end at their next page.")
    if not left:
        click.echo(
            "No accounts are left: a server on another address, or behind a reverse proxy, now lets nobody in; one "
            "on 127.0.0.1 lets a browser on the server itself in as the one local planner. Add an account with "
            "`sewerplan users add NAME --role planner`."
        )


@users.command("list")
@click.option("--users-db", help=USERS_DB_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def users_list(users_db, as_json):
    """List the accounts and their roles."""
    rows = list_users(users_db_path(users_db))
    if as_json:
        click.echo(json.dumps([{"name": n, "role": r} for n, r in rows], indent=2))
    else:
        for n, r in rows:
            click.echo(f"{n}\t{r}")


refuse_repeated_options(main)  # every command, wherever it is defined: the last of an option given twice won silently
# Loaded: Ctrl+C is Python's and click's again ("Aborted!", and a notices issue cancelled cleanly), not the quiet exit
# gisapp/__init__ set for the seconds the libraries took to load.
if signal.getsignal(signal.SIGINT) is _interrupted_while_starting:
    signal.signal(signal.SIGINT, signal.default_int_handler)


if __name__ == "__main__":  # pragma: no cover
    main()
