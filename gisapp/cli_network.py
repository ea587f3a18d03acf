"""``sewerplan network check``, ``trace`` and ``buildings``: the network's defects, flow paths, building sewers."""

from __future__ import annotations

import json

import click
import geopandas as gpd
import pandas as pd
from rich.console import Console
from rich.table import Table

from analysis.network_checks import plural
from gisapp import services
from gisapp.cli_common import (
    DEFAULT_PROFILE,
    DIRECTION_OPTION,
    data_options,
    is_local_option,
    loading,
    print_problems,
    user_errors,
)
from gisapp.words import network_outline, written_words, zero_flow_words
from layers.crs import crs_label
from layers.write import BUILDINGS_LAYER, output_format, write_report


@click.group()
def network() -> None:
    """The sewer network: check it for defects."""


@network.command("check")
@data_options
@DIRECTION_OPTION
@click.option(
    "--out",
    "out_paths",
    metavar="PATH",
    multiple=True,
    help="Write the report: .geojson, .csv, .gpkg or .parquet. Repeatable.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON list.")
@user_errors
def check(digitised_direction, out_paths, as_json, **opts):
    """Build the network and report every defect with its main or manhole ID, location and rule."""
    for path in out_paths:
        output_format(path)
        if is_local_option(opts) and not path.lower().endswith(".csv"):
            raise click.UsageError(
                f"--out {path}: the model's coordinates are its own (--data-crs local), in no real-world CRS, so "
                "a map layer (.geojson, .gpkg, .parquet) cannot be placed. Write .csv (x, y in the model's "
                "coordinates), or give the CRS the model was drawn in with --data-crs."
            )
    with loading(
        opts,
        as_json=as_json,
        required=("mains",),
        extra_steps=2,
        allow_local=True,
        digitised_direction=digitised_direction,
    ) as (loaded, bar):
        bar.step("building the network")
        net = services.network(loaded.workspace)
        bar.step("checking")
        defects = services.check(loaded.workspace)
        outline = services.outline(loaded.workspace)
        written = {}
        for path in out_paths:
            # a model's own coordinates (local) go to .csv alone, whose crs column names them as such
            written[path] = write_report(path, _report_frame(defects, net.crs))
    if as_json:  # x, y with the CRS they are in, as the .csv report has them
        crs = crs_label(net.crs)
        click.echo(json.dumps([d.as_dict() | {"crs": crs} for d in defects], indent=2))
        return
    print_problems(loaded.console, loaded.layers)
    out = Console()
    # One plant joined to three pieces is one plant, reached from three pieces: said so, with each piece's mains.
    snap_ft = None if net.explicit else loaded.profile.network.snap_tolerance_ft.value
    for line in network_outline(outline, snap_ft=snap_ft):
        out.print(line, highlight=False)
    if net.explicit:
        out.print(
            "Topology, directions and lengths are the model's own (From/To nodes, conduit lengths); "
            + ("its coordinates are in no real-world CRS." if not net.measurable else "nothing was snapped."),
            highlight=False,
        )
    table = Table(title=f"Network check under {loaded.profile.id}: {len(defects)} finding(s)")
    for col in ("check", "severity", "count", "rule", "example"):
        table.add_column(col, overflow="fold")
    groups: dict[tuple[str, str], list] = {}
    for d in defects:
        groups.setdefault((d.check, d.severity), []).append(d)
    for (name, severity), items in groups.items():
        table.add_row(name, severity, str(len(items)), items[0].section or "-", items[0].message)
    out.print(table)
    for path, layers in written.items():
        out.print(written_words(path, layers, lead="Report written to"), highlight=False)
    if not out_paths and len(defects) > len(groups):  # the table names one of each check: say where the rest are
        out.print(
            f"The table shows one example of each check. All {len(defects)} findings, each with its main or manhole "
            "ID and where it is: --out network.csv (or .geojson, .gpkg to see them on a map), or --json.",
            highlight=False,
        )


def _report_frame(defects, crs) -> gpd.GeoDataFrame:
    rows = [d.as_dict() for d in defects]
    frame = pd.DataFrame(rows, columns=["check", "severity", "feature_id", "section", "message", "x", "y"])
    return gpd.GeoDataFrame(
        frame.drop(columns=["x", "y"]), geometry=gpd.points_from_xy(frame["x"], frame["y"]), crs=crs
    )


@click.command()
@data_options
@DIRECTION_OPTION
@click.option("--parcel", "parcel_id", metavar="ID", help="Trace from this parcel's connection point.")
@click.option("--manhole", "manhole_id", metavar="ID", help="Trace from this manhole.")
@click.option("--upstream", is_flag=True, help="With --manhole: everything that drains through it.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@user_errors
def trace(digitised_direction, parcel_id, manhole_id, upstream, as_json, **opts):
    """The flow path to the control manhole and the plant, or a manhole's sewershed."""
    if bool(parcel_id) == bool(manhole_id):
        raise click.UsageError("Give one of --parcel ID or --manhole ID.")
    if upstream and not manhole_id:
        raise click.UsageError("--upstream goes with --manhole.")
    required = ("parcels", "mains") if parcel_id else ("mains",)
    with loading(
        opts,
        as_json=as_json,
        required=required,
        extra_steps=2,
        default_profile=DEFAULT_PROFILE,
        allow_local=True,
        digitised_direction=digitised_direction,
    ) as (loaded, bar):
        ws = loaded.workspace
        bar.step("building the network")
        services.network(ws)
        bar.step("tracing")
        if parcel_id:
            doc = services.trace_parcel(ws, parcel_id).as_dict()
        elif upstream:
            shed = services.sewershed(ws, manhole_id)
            doc = shed.as_dict()
        else:
            doc = services.trace_manhole(ws, manhole_id).as_dict()
    if as_json:
        click.echo(json.dumps(doc, indent=2))
        return
    print_problems(loaded.console, loaded.layers)  # the loading's warnings, for a sewershed too, as every command
    if upstream:
        _print_sewershed(shed, ws.profile, named=not loaded.default_profile)
        return
    _print_trace(doc)


def _print_trace(doc: dict) -> None:
    out = Console()
    # Through a main of unknown direction the control manhole is not known, which the problem says: not "none found"
    unknown = doc.get("direction_unknown") and doc["control_manhole"] is None
    control = doc["control_manhole"] or ("not known" if unknown else "none found")
    out.print(f"From {doc['start']}: control manhole {control}.", highlight=False)
    if doc["path"]:
        out.print("Path: " + " -> ".join(doc["path"]), highlight=False)
        out.print("Mains: " + ", ".join(doc["mains"]), highlight=False)
    for split in doc.get("splits") or []:
        out.print(split["reason"], highlight=False)
    if doc["length_ft"] is not None:
        plant = f", the inlet of the treatment plant {doc['plant']}" if doc.get("plant") else ""
        out.print(f"{doc['length_ft']:,.1f} ft of sewer to the outfall {doc['outfall']}{plant}.", highlight=False)
    if doc["problem"]:
        out.print(f"[yellow]Problem:[/yellow] {doc['problem']}", highlight=False)
    if doc.get("direction_unknown"):
        out.print(DIRECTION_HOW, highlight=False)


# How a user gives the mains' direction on the command line (docs/network.md, "Which evidence decides a direction").
DIRECTION_HOW = (
    "To give the direction: --map mains.from_manhole=COLUMN and --map mains.to_manhole=COLUMN (the manholes each "
    "main runs from and to), --map mains.us_invert_ft=COLUMN and --map mains.ds_invert_ft=COLUMN (inverts), or "
    "--digitised-direction where the mains are drawn in flow direction."
)


def plural_units(units: float) -> str:
    """``1 living unit``, ``2.5 living units``, ``2,567 living units``."""
    return f"{units:,g} living unit{'' if units == 1 else 's'}"


def _print_sewershed(shed, profile, *, named: bool = True) -> None:
    out = Console()
    rate = profile.network.gallons_per_day_per_unit
    # A setting is never cited as the law's number: say whose number it is.
    whose = "a profile setting, network.gallons_per_day_per_unit" if rate.setting or rate.overridden else shed.section
    if not named:
        whose += f", from the default {profile.id} profile: give --profile for the town's"
    unknown, given, n = shed.flow_unknown, shed.flow_given, len(shed.parcels)
    # Each parcel's flow is its flow_gpd where given (metered), else its living units x gpd per unit: say both parts.
    known = [plural_units(shed.units)] if shed.units or not given else []
    known += [plural(given, "metered flow")] if given else []
    by_units = n - given - unknown  # parcels whose flow comes from their living units
    if not n:
        units = "draining here"
    elif unknown == n:
        units = "whose flow is unknown" if n == 1 else f"with the flow unknown for all {n}"
    else:  # the parcels whose flow is unknown are said with the flow
        units = "with " + " and ".join(known)
    if given and by_units:
        basis = f"the metered flows as given and {rate.value:g} gpd per living unit for the rest ({whose})"
    elif given:
        basis = "the metered flows as given"
    else:
        basis = f"at {rate.value:g} gpd per unit ({whose})"
    how = (
        "Give their metered flows in the parcels' flow_gpd column or their living units in the units column "
        "(--map parcels.flow_gpd=COLUMN or --map parcels.units=COLUMN where it has another name)."
    )
    if not n:  # "estimated average flow 0 gallons per day" of a model's trunk with no parcels (a tester)
        flow = "no flow estimate: the estimate is of the parcels' flows (none was given, or none drains here)."
    elif shed.flow_gpd is not None:
        flow = f"estimated average flow {shed.flow_gpd:,.0f} gallons per day {'from ' if given else ''}{basis}."
    elif unknown < n:
        # A parcel whose flow is unknown was counted as none, and the sum printed as the flow: a lower bound.
        flow = (
            f"average flow not known: at least {shed.flow_at_least_gpd:,.0f} gallons per day from the flows known, "
            f"{basis}, and more from the {plural(unknown, 'parcel')} whose flow is unknown. {how}"
        )
    else:
        flow = f"no flow estimate, as no flow is given and no living units are recorded. {how}"
    out.print(
        # the manholes upstream of it, not it: "0 mains, 1 manhole" was the manhole itself (a tester)
        f"Upstream of {shed.manhole}: {plural(len(shed.mains), 'main')}, "
        f"{plural(len([m for m in shed.manholes if m != shed.manhole]), 'other manhole')}, "
        f"{plural(n, 'parcel')} (connected or required to connect) {units}; {flow}",
        highlight=False,
    )
    for other in shed.not_counted:  # an overflow into it: what drains above is counted where its trace goes
        out.print(other["reason"], highlight=False)
    if zero := zero_flow_words(shed.as_dict()["zero_flow_found_occupied"]):
        out.print(zero, highlight=False, markup=False)


BUILDING_FIELDS = (
    "building_id",
    "parcel_id",
    "units",
    "rear_building",
    "front_building_id",
    "shared_lateral",
    "required_laterals",
    "existing_laterals",
    "manhole_connection_case",
    "lateral_diameter_in",
    "lateral_slope_in_per_ft",
    "section",
    "reason",
)


@click.command()
@data_options
@click.option("--all", "show_all", is_flag=True, help="Every building, not only those with a case to decide.")
@click.option(
    "--out", "out_path", metavar="PATH", help="Write the building results: .gpkg, .parquet, .geojson or .csv."
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON list, one object per building.")
@user_errors
def buildings(show_all, out_path, as_json, **opts):
    """Every building with a case to decide: rear buildings, living units, laterals, manhole connections."""
    if out_path:
        services.export_target(out_path)  # a wrong format or a town's store: refused before the work
    with loading(opts, as_json=as_json, required=("parcels", "mains", "buildings"), extra_steps=2) as (loaded, bar):
        assessed = services.buildings(loaded.workspace, progress=bar.step)
        if out_path:
            written = services.export_results(out_path, assessed.buildings, name=BUILDINGS_LAYER)
    chosen = assessed.buildings if show_all else assessed.cases()
    if as_json:
        click.echo(json.dumps(building_records(chosen), indent=2))
        return
    print_problems(loaded.console, loaded.layers)
    out = Console()
    s = assessed.summary
    out.print(
        f"{s['buildings']:,} buildings: {s['rear_buildings']} rear building(s) ({s['may_share_if_no_route']} may "
        f"share the front building's sewer if no other route exists, {s['rear_separate_required']} need their own, "
        f"{s['main_extension_required']} need "
        f"a main extension); {s['beside_separate_required']} beside another building on its lot need(s) its own "
        f"building sewer; {s['needing_more_laterals']} need more than one building sewer; "
        f"{s['units_unknown']} with living units unknown; {s['manhole_connection_cases']} manhole connection(s) "
        f"for the administrative body to determine; {s['short_of_building_sewers']} with fewer building sewers "
        f"mapped than required; {s['laterals_below_standard']} with a building sewer below the least size or slope.",
        highlight=False,
    )
    table = Table(title=f"Buildings with a case to decide under {loaded.profile.id}")
    for col in ("building", "parcel", "verdict", "laterals", "section", "reason"):
        table.add_column(col, overflow="fold")
    for row in building_records(chosen.head(200)):
        laterals = "?" if row["required_laterals"] is None else str(row["required_laterals"])
        table.add_row(
            row["building_id"],
            str(row["parcel_id"]),
            row["shared_lateral"] or "-",
            laterals,
            row["section"] or "-",
            row["reason"],
        )
    out.print(table)
    if len(chosen) > 200:
        # the file holds every building, these with the rest: said so, or a count of 2,122 rows surprised
        where = f"all of them are in {out_path}, which holds every building" if out_path else "--json or --out for all"
        out.print(f"... and {len(chosen) - 200:,} more ({where}).", highlight=False)
    if out_path:
        out.print(written_words(out_path, written, lead="Building results written to"), highlight=False)


def building_records(frame) -> list[dict]:
    """The JSON objects of ``sewerplan buildings --json``: plain values, None for missing."""
    table = frame[list(BUILDING_FIELDS)].astype(object)
    table = table.where(table.notna(), None)
    records = table.to_dict("records")
    for r in records:
        for key in ("required_laterals", "existing_laterals"):
            r[key] = None if r[key] is None else int(r[key])
        r["units"] = None if r["units"] is None else float(r["units"])
        r["rear_building"] = bool(r["rear_building"])
        r["manhole_connection_case"] = bool(r["manhole_connection_case"])
        r["section"] = r["section"] or None
    return records
