"""``sewerplan plan`` and ``sewerplan plans``: try a sewer extension before building it; compare scenarios."""

from __future__ import annotations

import json

import click
from rich.console import Console
from rich.table import Table

from analysis.network import build_network
from gisapp.cli_common import data_options, loading, user_errors
from gisapp.pipeline import plan_on_layers
from layers.crs import measuring_crs
from layers.letters import write_plan_summary
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
@click.option("--name", default="scenario", show_default=True, help="A name for the scenario.")
@click.option("--save", is_flag=True, help="Save the scenario in the register (sewerplan plans lists them).")
@click.option("--out", "out_path", metavar="PATH", help="Export the plan: .gpkg or .geojson.")
@click.option("--pdf", "pdf_path", metavar="PATH", help="Write a one-page PDF summary for the board.")
@click.option("--register", "register_url", metavar="URL|PATH", help="The register to save scenarios in.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@user_errors
def plan(proposed, streets_run, diameter, name, save, out_path, pdf_path, register_url, as_json, **opts):
    """Who becomes mandated by a proposed main, whether it meets the ordinance, what it costs, where it drains."""
    if bool(proposed) == bool(streets_run):
        raise click.UsageError("Give the proposed main with --proposed PATH or --streets-run NAMES.")
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
            layers, profile, line, diameter_in=diameter, name=name, network=net, register=register
        )
    if out_path:
        doc["exported"] = write_plan(
            out_path,
            result.line,
            result.manholes,
            result.parcels,
            crs=layers.parcels.crs,
            attrs={"name": name, "diameter_in": diameter, "length_ft": doc["length_ft"]},
        )
    if pdf_path:
        doc["pdf"] = write_plan_summary(pdf_path, name, doc, profile=profile)
    if as_json:
        click.echo(json.dumps(doc, indent=2, default=str))
        return
    out = Console()
    out.print(
        f"[bold]{name}[/bold]: {doc['length_ft']:,.0f} ft of {diameter:g}-inch main, {len(doc['manholes'])} manholes.",
        highlight=False,
    )
    out.print(
        f"Newly required to connect: {len(doc['newly_mandated'])} parcels ({doc['units']:g} units); "
        f"{len(doc['private_systems'])} on private systems to abandon; "
        f"{len(doc['held_by_service_area'])} held by the service area.",
        highlight=False,
    )
    if doc["petition"]["applies"]:
        out.print(
            f"Petition ({doc['petition']['section']}): {doc['petition']['benefiting_owners']} benefiting owners,"
            f" {doc['petition']['signatures_needed']} signatures make a majority.",
            highlight=False,
        )
    out.print(f"Estimated cost ${doc['cost']['total']:,.0f}.", highlight=False)
    table = Table(title="Design checks")
    for col in ("check", "result", "section", "message"):
        table.add_column(col, overflow="fold")
    for c in doc["design_checks"]:
        table.add_row(c["check"], "pass" if c["passed"] else "FAIL", c["section"], c["message"])
    out.print(table)
    down = doc["downstream"]
    out.print(
        f"Downstream: connects at {down.get('connects_at')}, {len(down.get('mains', []))} mains to "
        f"{down.get('outfall')}; capacity {'sufficient' if down.get('capacity_ok') else 'EXCEEDED or unknown'}."
        + (f" {down['problem']}" if down.get("problem") else ""),
        highlight=False,
    )


@click.command()
@click.option("--register", "register_url", metavar="URL|PATH", help="The register the scenarios are saved in.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@user_errors
def plans(register_url, as_json):
    """The saved extension scenarios, side by side."""
    saved = Register(register_url).saved_plans()
    rows = [
        {
            "name": p["name"],
            "profile": p["profile"],
            "diameter_in": p["diameter_in"],
            "length_ft": p["result"]["length_ft"],
            "newly_mandated": len(p["result"]["newly_mandated"]),
            "units": p["result"]["units"],
            "cost": p["result"]["cost"]["total"],
            "checks_failed": [c["check"] for c in p["result"]["design_checks"] if not c["passed"]],
            "capacity_ok": p["result"]["downstream"].get("capacity_ok"),
        }
        for p in saved
    ]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    table = Table(title=f"{len(rows)} saved scenario(s)")
    for col in ("name", "main", "newly mandated", "units", "cost", "failed checks", "capacity"):
        table.add_column(col)
    for r in rows:
        table.add_row(
            r["name"],
            f"{r['length_ft']:,.0f} ft x {r['diameter_in']:g} in",
            str(r["newly_mandated"]),
            f"{r['units']:g}",
            f"${r['cost']:,.0f}",
            ", ".join(r["checks_failed"]) or "none",
            "ok" if r["capacity_ok"] else "exceeded/unknown",
        )
    Console().print(table)
