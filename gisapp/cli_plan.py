"""``sewerplan plan`` and ``sewerplan plans``: try a sewer extension before building it; compare scenarios."""

from __future__ import annotations

import json

import click
from rich.console import Console
from rich.table import Table

from analysis.network import build_network
from analysis.plans import compare_plans
from gisapp.cli_common import data_options, loading, user_errors
from gisapp.pipeline import plan_on_layers, plan_pdf
from layers.board import summary_lines, write_comparison_csv
from layers.crs import measuring_crs
from layers.read import read_proposed, street_run
from layers.register import Register
from layers.write import write_plan


@click.command()
@data_options
@click.option("--proposed", metavar="PATH", help="The proposed main: a GeoJSON, GeoPackage or shapefile line.")
@click.option(
    "--streets-run",
    metavar="NAMES",
    help='Or: lay it along these streets\' centrelines (comma-separated names, e.g. "Hill St,Oak Ave").',
)
@click.option("--diameter", type=float, required=True, help="Internal diameter of the proposed main, inches.")
@click.option(
    "--material",
    metavar="TEXT",
    help='Pipe material of the proposed main (e.g. "reinforced concrete", PVC); checked against the profile\'s list.',
)
@click.option("--name", default="scenario", show_default=True, help="A name for the scenario.")
@click.option("--save", is_flag=True, help="Save the scenario in the register (sewerplan plans lists them).")
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
    proposed, streets_run, diameter, material, name, save, out_path, pdf_path, preparer, register_url, as_json, **opts
):
    """Who becomes mandated by a proposed main, whether it meets the ordinance, what it costs, where it drains."""
    if bool(proposed) == bool(streets_run):
        raise click.UsageError("Give the proposed main with --proposed PATH or --streets-run NAMES.")
    if not diameter > 0:
        raise click.BadParameter("give the internal diameter in inches, a positive number", param_hint="--diameter")
    with loading(opts, as_json=as_json, required=("parcels", "mains"), extra_steps=2) as (loaded, bar):
        layers, profile = loaded.layers, loaded.profile
        target = measuring_crs(opts["crs_text"] or profile.measurement.measuring_crs.value)
        line = (
            read_proposed(proposed, target_crs=target, assume_crs=opts.get("data_crs"))
            if proposed
            else street_run(layers.streets, streets_run)
        )
        bar.step("building the network")
        net = (
            build_network(layers.mains, manholes=layers.manholes, outfalls=layers.outfalls, profile=profile)
            if layers.manholes is not None
            else None
        )
        bar.step("planning")
        register = Register(register_url, store=opts["data"]) if save else None
        result, doc = plan_on_layers(
            layers, profile, line, diameter_in=diameter, material=material, name=name, network=net, register=register
        )
    if out_path:
        doc["exported"] = write_plan(out_path, doc, result.line, layers.parcels, crs=layers.parcels.crs)
    if pdf_path:
        doc["pdf"] = plan_pdf(pdf_path, doc, layers, profile, line=result.line, preparer=preparer)
    if as_json:
        click.echo(json.dumps(doc, indent=2, default=str))
        return
    _print_plan(name, doc)


def _print_plan(name: str, doc: dict) -> None:
    out = Console()
    out.print(f"[bold]{name}[/bold]", highlight=False)
    for text in summary_lines(doc):
        out.print(f"- {text}", highlight=False)
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
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@user_errors
def plans(names, compare, csv_path, delete_name, register_url, as_json):
    """The saved extension scenarios side by side: `sewerplan plans --compare A B`."""
    register = Register(register_url)
    if delete_name is not None:
        if not register.delete_plan(delete_name):
            raise click.BadParameter(f"no saved scenario is named {delete_name!r}", param_hint="--delete")
        if not as_json:
            click.echo(f"Deleted scenario {delete_name}.")
    saved = register.saved_plans()
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
