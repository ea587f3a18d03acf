"""``sewerplan plan`` and ``sewerplan plans``: try a sewer extension before building it; compare scenarios."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from analysis.plans import compare_plans, not_laid_parts
from gisapp import services
from gisapp.cli_common import DIRECTION_OPTION, data_options, deprecated, loading, print_problems, user_errors
from gisapp.words import written_words, zero_flow_words
from layers.board import check_pdf_path, summary_lines, write_comparison_csv
from layers.read import is_postgres
from layers.store import store_label
from layers.write import check_plan_path


@click.command()
@data_options
@DIRECTION_OPTION
@click.option(
    "--proposed",
    metavar="PATH",
    multiple=True,  # to refuse a second file rather than take the last one without a word
    help="The proposed main: a GeoJSON, GeoPackage or shapefile line (a file that declares no CRS: "
    "--layer-crs proposed=CRS).",
)
@click.option(
    "--streets-run",
    metavar="NAMES",
    help='Or: lay it along these streets\' centrelines (comma-separated names, e.g. "Hill St,Oak Ave").',
)
@click.option("--diameter-in", "diameter_in", type=float, help="Internal diameter of the proposed main, inches.")
@click.option("--diameter", "old_diameter", type=float, hidden=True)
@click.option(
    "--material",
    metavar="TEXT",
    help='Pipe material of the proposed main (e.g. "reinforced concrete", PVC); checked against the profile\'s list.',
)
@click.option("--name", default="scenario", show_default=True, help="A name for the scenario.")
@click.option("--save", is_flag=True, help="Save the scenario in the register (sewerplan plans lists them).")
@click.option("--replace", is_flag=True, help="With --save: replace a saved scenario of the same name.")
@click.option("--out", "out_path", metavar="PATH", help="Export the plan: .gpkg, .parquet or .geojson.")
@click.option(
    "--pdf",
    "pdf_path",
    metavar="PATH",
    help="Write the board's PDF: map, design checks, requirements, test sections, petition, cost split.",
)
@click.option("--preparer", metavar="NAME", help="Who prepared the plan, printed on every page of the PDF.")
@click.option("--register", "register_url", metavar="URL|PATH", help="The register to save scenarios in.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@user_errors
def plan(
    digitised_direction,
    proposed,
    streets_run,
    diameter_in,
    old_diameter,
    material,
    name,
    save,
    replace,
    out_path,
    pdf_path,
    preparer,
    register_url,
    as_json,
    **opts,
):
    """Who becomes mandated by a proposed main, whether it meets the ordinance, what it costs, where it drains."""
    if len(proposed) > 1:
        raise click.UsageError(
            f"--proposed is given {len(proposed)} times ({', '.join(proposed)}): a plan is one main, so give one "
            "file (evaluate each as its own plan, with --name and --save to compare them)."
        )
    proposed = proposed[0] if proposed else None
    if proposed and streets_run:
        raise click.UsageError(
            "Give the proposed main one way, not both: --proposed PATH (a file) or --streets-run NAMES (streets)."
        )
    if bool(proposed) == bool(streets_run):
        given = opts.get("streets_source")  # the old hidden spelling of --layer streets=PATH, not a run of streets
        hint = (
            f' (--streets gives the streets layer, a file; a run of named streets is --streets-run "{given}")'
            if given and not proposed and not streets_run
            else ""
        )
        raise click.UsageError(f"Give the proposed main with --proposed PATH or --streets-run NAMES{hint}.")
    if old_diameter is not None:
        deprecated("--diameter INCHES", "--diameter-in INCHES")
        diameter_in = diameter_in if diameter_in is not None else old_diameter
    if diameter_in is None:
        raise click.UsageError("Give the internal diameter of the proposed main with --diameter-in INCHES.")
    if replace and not save:
        raise click.UsageError("--replace replaces a saved scenario when this one is saved: give --save too.")
    if not diameter_in > 0:
        raise click.BadParameter("give the internal diameter in inches, a positive number", param_hint="--diameter-in")
    proposed_crs, opts["layer_crs_pairs"] = _proposed_crs(opts.get("layer_crs_pairs") or (), proposed)
    if pdf_path:
        check_pdf_path(pdf_path)  # before the plan is saved or exported, not after
    if out_path:
        check_plan_path(out_path)
    with loading(
        opts,
        as_json=as_json,
        required=("parcels", "mains"),
        extra_steps=2,
        digitised_direction=digitised_direction,
        register=register_url,
    ) as (loaded, bar):
        ws = loaded.workspace
        line, note = services.proposed_line(ws, path=proposed, streets_run=streets_run, proposed_crs=proposed_crs)
        bar.step("building the network")
        services.network_if_manholes(ws)
        bar.step("planning")
        register = services.open_register(register_url, store=ws.store, create=True) if save else None
        result, doc = services.evaluate_plan(
            ws, line, diameter_in=diameter_in, material=material, name=name, register=register, replace=replace
        )
    if note:
        doc["proposed_note"] = note
    if out_path:
        doc["exported"] = services.export_plan(out_path, doc, result.line, ws.layers)
    if pdf_path:
        doc["pdf"] = services.plan_pdf(pdf_path, doc, ws.layers, ws.profile, line=result.line, preparer=preparer)
    if as_json:
        click.echo(json.dumps(doc, indent=2, default=str))
        return
    print_problems(loaded.console, loaded.layers)  # the loading's warnings, said before the plan as every command
    _print_plan(name, doc)
    if doc["downstream"].get("present_flow_recorded") is False:
        # The capacity finding says no list came with the layers; plan has no option for one, so say where it goes.
        run = (
            f"analyse the store again with the billing list (`sewerplan analyze --data {store_label(ws.store)} --out "
            f"{store_label(ws.store)} --connected FILE.csv`) and plan again"
            if ws.store
            else "analyse the layers into a store with the billing list (`sewerplan analyze ... --out STORE.gpkg "
            "--connected FILE.csv`) and plan on that store"
        )
        click.echo(
            f"To count the parcels connected today, {run}: a plan reads the connected-parcels list of the store's "
            "latest analysis and takes none of its own."
        )
    # Where it went: the files and the register were written without a word.
    if save:
        click.echo(f"Saved as the scenario {name!r} in the register (`sewerplan plans` shows it beside the others).")
    if out_path:
        click.echo(written_words(out_path, doc["exported"], lead="Plan exported to"))
        if parts := not_laid_parts(doc):  # the main as laid, and apart from it each part drawn but not laid
            held = {"GPKG": "its layer not_laid", "GeoJSON": 'its features "not laid"'}.get(
                check_plan_path(out_path), f"in {Path(out_path).stem}.not_laid{Path(out_path).suffix}"
            )
            apart = " and the ".join(
                f"{p['length_words']} drawn {p['direction']} of {p['beyond_manhole']}" for p in parts
            )
            if len(parts) == 1:
                held = held.replace("features", "feature")
            # where the main as laid starts: the manhole it connects at (a part drawn over a main from the manhole
            # it ends at meets it at the other end)
            start = next(iter(doc["manholes"]), {})
            laid = f", from {start['id']}," if start.get("existing") else ""
            click.echo(
                f"The export holds the main as laid{laid} and apart from it the {apart} that "
                f"{'is' if len(parts) == 1 else 'are'} not laid ({held}): read back with --proposed, the "
                f"{'two' if len(parts) == 1 else 'three'} are joined again as drawn, and the plan says again what is "
                "not laid."
            )
    if pdf_path:
        click.echo(f"The board's PDF written to {pdf_path}.")


def _proposed_crs(pairs, proposed: str | None) -> tuple[str | None, tuple[str, ...]]:
    """The CRS given for the --proposed file (``--layer-crs proposed=CRS``), and the other ``--layer-crs`` pairs.

    A proposed main is no layer of the town's data, so ``proposed`` was refused as "not a layer kind", while the
    message for a file without a CRS told the planner to give exactly that: a shapefile without its .prj was a dead
    end.
    """
    given, rest = None, []
    for text in pairs:
        kind, sep, value = text.partition("=")
        if kind.strip().lower() != "proposed":
            rest.append(text)
        elif not sep or not value.strip():
            raise click.BadParameter(
                f"{text!r}: give it as proposed=CRS, e.g. proposed=EPSG:2260.", param_hint="--layer-crs"
            )
        elif not proposed:
            raise click.UsageError("--layer-crs proposed=CRS is the CRS of the --proposed file: give --proposed PATH.")
        else:
            given = value.strip()
    return given, tuple(rest)


def _print_plan(name: str, doc: dict) -> None:
    out = Console()
    out.print(f"[bold]{name}[/bold]", highlight=False)
    if doc.get("proposed_note"):
        out.print(doc["proposed_note"], highlight=False)
    for text in summary_lines(doc):
        out.print(f"- {text}", highlight=False)
    if zero := zero_flow_words(doc.get("zero_flow_found_occupied")):  # a saved plan's document may not carry it
        out.print(zero, highlight=False, markup=False)
    table = Table(title="Design checks (one verdict each)")
    for col in ("check", "verdict", "section", "finding"):
        table.add_column(col, overflow="fold")
    for c in doc["design_checks"]:
        table.add_row(c["check"].replace("_", " "), c["verdict"], c["section"], c["message"])
    out.print(table)
    if doc["requirements"]:
        table = Table(title="Requirements the contractor must meet (not results)")
        for col in ("requirement", "section", "text"):
            table.add_column(col, overflow="fold")
        for r in doc["requirements"]:
            table.add_row(r["requirement"].replace("_", " "), r["section"], r["text"])
        out.print(table)
    if doc["test_sections"]:
        table = Table(title="Exfiltration test sections")
        for col in ("section", "from", "to", "length ft", "new manholes", "allowance gal/day"):
            table.add_column(col, justify="right" if col[0] in "lna" else "left")
        for s in doc["test_sections"]:
            table.add_row(
                str(s["number"]) + (" (too long)" if s["too_long"] else ""),
                s["from_manhole"],
                s["to_manhole"],
                f"{s['length_ft']:,.1f}",
                str(s["manholes"]),
                f"{s['allowance_gpd']:,.1f}",
            )
        out.print(table)
    rows = [p for p in doc["parcels"] if p["benefits"]]
    if rows:
        table = Table(title=f"Cost split: ${doc['cost']['total']:,.2f} among {len(rows)} benefiting parcels")
        for col in ("parcel", "owner", "kind", "frontage ft", "units", "by frontage", "by parcel", "by unit"):
            table.add_column(col, overflow="fold")
        for p in rows:
            table.add_row(
                p["parcel_id"],
                p["owner_name"],
                p["category"],
                f"{p['frontage_ft']:,.1f}",
                p["units_text"],
                *[f"${p[m]:,.2f}" for m in ("by_frontage", "by_parcel", "by_unit")],
            )
        out.print(table)


@click.command()
@click.argument("names", nargs=-1)
@click.option("--compare", is_flag=True, help="Compare the named scenarios side by side (default: all saved).")
@click.option("--csv", "csv_path", metavar="PATH", help="Export the side-by-side comparison as CSV.")
@click.option("--delete", "delete_name", metavar="NAME", help="Delete a saved scenario.")
@click.option("--register", "register_url", metavar="URL|PATH", help="The register the scenarios are saved in.")
@click.option(
    "--store",
    metavar="GPKG|URL",
    type=click.Path(dir_okay=False),
    help="The town's store (a GeoPackage, or postgresql://...#SCHEMA), whose register is used.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@user_errors
def plans(names, compare, csv_path, delete_name, register_url, store, as_json):
    """The saved extension scenarios side by side: `sewerplan plans --compare A B`."""
    if delete_name is not None:
        register = services.open_register(register_url, store=store, create=register_url is not None)
        if not register.delete_plan(delete_name):
            raise click.BadParameter(f"no saved scenario is named {delete_name!r}", param_hint="--delete")
        if not as_json:
            click.echo(f"Deleted scenario {delete_name}.")
    if store and register_url is None and not is_postgres(store) and not Path(store).exists():
        raise click.BadParameter(f"there is no store at {store}", param_hint="--store")  # a typo: not "none saved"
    saved = services.saved_plans(register_url, store=store)  # none yet where the store has no register, as on the web
    if names and not compare:
        raise click.UsageError("Name scenarios after --compare: sewerplan plans --compare A B.")
    if names:
        by_name = {p["name"]: p for p in saved}
        unknown = [n for n in names if n not in by_name]
        if unknown:
            known = ", ".join(by_name) or "none saved yet"
            raise click.BadParameter(f"no saved scenario named {', '.join(unknown)} (saved: {known})")
        saved = [by_name[n] for n in names]
    chosen = [p["name"] for p in saved]
    rows = compare_plans(saved)
    if csv_path:
        write_comparison_csv(csv_path, chosen, rows)
    if as_json:
        click.echo(
            json.dumps(
                [{"name": n} | {r["measure"]: r["values"][i] for r in rows} for i, n in enumerate(chosen)], indent=2
            )
        )
        return
    if not chosen:
        click.echo("No saved scenario yet: save one with `sewerplan plan ... --save`.")
        if csv_path:
            click.echo(f"Comparison written to {csv_path}.")
        return
    table = Table(title=f"{len(chosen)} saved scenario(s), side by side")
    table.add_column("measure")
    for n in chosen:
        table.add_column(n, justify="right", overflow="fold")
    for r in rows:
        table.add_row(r["label"], *[_cell(r["measure"], v) for v in r["values"]])
    Console().print(table)
    if csv_path:
        click.echo(f"Comparison written to {csv_path}.")


def _cell(measure: str, value) -> str:
    if value is None:
        return "-"
    if measure in ("cost", "cost_per_unit"):
        return f"${value:,.2f}"
    if measure in ("length_ft", "connecting_ft"):
        return f"{value:,.0f}"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)
