"""The ``sewerplan`` command: analyze, sample, profiles, serve.

Every command that prints results takes ``--json`` and then prints exactly one JSON document on stdout (shapes in
docs/cli.md). Bad input exits with status 2 and a message that says how to fix it, never a traceback.
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from analysis._parallel import paused_gc
from analysis.errors import AnalysisError
from analysis.mandate import STATUSES, analyze_mandates
from analysis.profiles import available_profiles, load_profile
from layers.crs import measuring_crs
from layers.errors import LayerError, LayerValidationError
from layers.read import find_layers, load_layers, parse_source, read_connected_ids, read_mapping
from layers.sample import sample_town
from layers.schema import SPECS
from layers.store import DEFAULT_STORE, record_run
from layers.write import output_format, write_layers, write_results

STATUS_HELP = {
    "connected": "already connected to the public sewer",
    "mandated": "must connect (occupied, abutting a sewered street, within the distance)",
    "in_range_not_abutting": "a main is within the distance, but not in a street the parcel abuts",
    "out_of_range": "the nearest public main is farther than the distance",
    "unoccupied": "no building used for occupancy on the parcel",
    "no_public_sewer": "no public sanitary main in the data",
}


def user_errors(func):
    """Turn domain errors into a clear message on stderr and exit status 2 (never a traceback)."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except LayerValidationError as exc:
            _fail(str(exc), kwargs.get("as_json"), problems=[p.as_dict() for p in exc.problems])
        except (LayerError, AnalysisError) as exc:
            _fail(str(exc), kwargs.get("as_json"))

    return wrapper


def _fail(message: str, as_json: bool | None, problems: list | None = None) -> None:
    if as_json:
        click.echo(json.dumps({"error": message, "problems": problems or []}, indent=2))
    click.echo(f"Error: {message}", err=True)
    sys.exit(2)


@click.group()
@click.version_option(package_name="sewerplan")
def main() -> None:
    """sewerplan: who must connect to the public sewer, by when, and why."""


def _layer_options(func):
    for kind in reversed(list(SPECS)):
        func = click.option(f"--{kind}-crs", f"{kind}_crs", metavar="CRS",
                            help=f"CRS of a {kind} layer that declares none (e.g. EPSG:2260).")(func)
    for kind in reversed(list(SPECS)):
        func = click.option(f"--{kind}", f"{kind}_source", metavar="PATH",
                            help=f"The {kind} layer ({SPECS[kind].help}): a file, FILE:LAYER or "
                                 "postgresql://...#schema.table. Overrides --data.")(func)
    return func


@main.command()
@click.option("--profile", "profile_name", required=True, metavar="NAME|FILE",
              help=f"Ordinance profile: {', '.join(available_profiles())}, or a .toml file.")
@click.option("--data", metavar="PATH|URL", help="GeoPackage, folder, .gdb or postgresql:// URL whose layers are "
                                                 "found by name (parcels, buildings, streets, mains, manholes).")
@_layer_options
@click.option("--crs", "crs_text", metavar="CRS", help="Measuring CRS (projected); default: the profile's.")
@click.option("--mapping", "mapping_file", type=click.Path(dir_okay=False), help="TOML file of column names.")
@click.option("--map", "map_pairs", multiple=True, metavar="LAYER.FIELD=COLUMN",
              help="Column for a field, e.g. parcels.parcel_id=SBL. Repeatable.")
@click.option("--map-value", "map_values", multiple=True, metavar="LAYER.FIELD.VALUE=CODE",
              help="Meaning of a coded value, e.g. mains.sewer_type.GRAV=sanitary. Repeatable.")
@click.option("--connected", "connected_file", type=click.Path(dir_okay=False),
              help="CSV of connected parcel IDs (billing records).")
@click.option("--connected-column", metavar="COLUMN", help="Column of --connected holding the parcel IDs.")
@click.option("--set", "settings", multiple=True, metavar="SECTION.KEY=VALUE",
              help="Override a profile value, e.g. mandate.distance_ft=200 (Wappinger requires it).")
@click.option("--notice-date", type=click.DateTime(formats=["%Y-%m-%d"]), help="Date of official notice: "
              "deadlines are computed from it.")
@click.option("--notice-reason", metavar="REASON", help="Why notice is given, where the profile requires one "
              "(Poughkeepsie: public_health_hazard or highway_improvement).")
@click.option("--out", "out_path", metavar="PATH", help="Write results: .gpkg, .geojson (RFC 7946) or .csv.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document instead of tables.")
@user_errors
def analyze(profile_name, data, crs_text, mapping_file, map_pairs, map_values, connected_file,
            connected_column, settings, notice_date, notice_reason, out_path, as_json, **layer_opts):
    """Classify every parcel under the chosen ordinance's connection mandate."""
    overrides = dict(_pair(s, "--set") for s in settings)
    profile = load_profile(profile_name, overrides=overrides)
    target = measuring_crs(crs_text or profile.measurement.measuring_crs.value)
    if out_path:
        output_format(out_path)
    sources = find_layers(data) if data else {}
    for kind in SPECS:
        if layer_opts.get(f"{kind}_source"):
            sources[kind] = parse_source(kind, layer_opts[f"{kind}_source"])
    if not sources:
        raise click.UsageError("Give --data (a GeoPackage or folder) or the layers one by one (--parcels ...).")
    mapping = read_mapping(mapping_file, map_pairs, map_values)
    assume = {k: layer_opts[f"{k}_crs"] for k in SPECS if layer_opts.get(f"{k}_crs")}
    connected = read_connected_ids(connected_file, column=connected_column) if connected_file else None
    date = notice_date.date() if notice_date else None

    err = Console(stderr=True, quiet=as_json)
    with paused_gc(), _Progress(err, total=len(sources) + 2 + bool(out_path)) as (bar, task):
        layers = load_layers(sources, target_crs=target, mapping=mapping, assume_crs=assume,
                             connected_ids=connected, progress=lambda text: bar.update(task, description=text,
                                                                                        advance=1))
        bar.update(task, description="analysing", advance=1)
        result = analyze_mandates(layers.parcels, layers.mains, streets=layers.streets, buildings=layers.buildings,
                                  profile=profile, notice_date=date, notice_reason=notice_reason)
        written: list[str] = []
        if out_path:
            bar.update(task, description=f"writing {out_path}", advance=1)
            written = write_results(out_path, result.parcels, result.measuring_lines)
            if output_format(out_path) == "GPKG":
                record_run(out_path, result.summary)
        bar.update(task, description="done", advance=1)

    summary = result.summary | {"output": out_path, "layers_written": written, "sources": layers.sources}
    mandated = result.parcels[result.parcels["status"] == "mandated"]
    if as_json:
        doc = {"summary": summary, "problems": [p.as_dict() for p in layers.problems],
               "mandated": _mandated_json(mandated)}
        click.echo(json.dumps(doc, indent=2, default=str))
        return
    for p in layers.problems:
        err.print(f"[yellow]{p.severity}[/yellow]: {p}", markup=True, highlight=False)
    _print_summary(summary, profile)


def _mandated_json(mandated) -> list[dict]:
    cols = ["parcel_id", "distance_ft", "main_id", "section", "deadline", "reason"]
    table = mandated[cols].astype(object)
    return table.where(table.notna(), None).to_dict("records")


def _pair(text: str, option: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep:
        raise click.UsageError(f"{option} {text}: expected KEY=VALUE, e.g. {option} mandate.distance_ft=200")
    return key.strip(), value.strip()


class _NoBar:
    def update(self, *args, **kwargs) -> None:
        pass


class _Progress:
    """A progress bar on stderr over the steps of a run; nothing when stderr is not a terminal or --json."""

    def __init__(self, console: Console, total: int):
        self.console, self.total, self.bar = console, total, None

    def __enter__(self):
        if self.console.quiet or not self.console.is_terminal:
            return _NoBar(), None
        self.bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(),
                            console=self.console, transient=True)
        self.bar.__enter__()
        return self.bar, self.bar.add_task("starting", total=self.total)

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.__exit__(*exc)
        return False


def _print_summary(summary: dict, profile) -> None:
    out = Console()
    title = f"{profile.municipality}: {summary['parcels']:,} parcels, {profile.mandate.distance_ft.citation}"
    table = Table(title=title)
    table.add_column("status")
    table.add_column("parcels", justify="right")
    table.add_column("meaning")
    for status in STATUSES:
        table.add_row(status, f"{summary['counts'][status]:,}", STATUS_HELP[status])
    out.print(table)
    dist = summary["distance_ft"]
    out.print(f"Distance: {dist:g} ft from the property line ({summary['distance_section']}), measured in "
              f"{summary['measuring_crs']}. Mains counted: {summary['counting_mains']} of {summary['mains']}.",
              highlight=False)
    if summary["notice_date"]:
        out.print(f"Notice date {summary['notice_date']}; deadline after {summary['notice_period_days']} days.",
                  highlight=False)
    if summary["output"]:
        out.print(f"Results written to {summary['output']} ({', '.join(summary['layers_written'])}).",
                  highlight=False)


@main.command()
@click.option("--out", "out_path", default=str(DEFAULT_STORE), show_default=True, help="GeoPackage to write.")
@click.option("--parcels", "n_parcels", default=2000, show_default=True, type=click.IntRange(50, 2_000_000),
              help="About how many parcels.")
@click.option("--seed", default=1982, show_default=True, help="Random seed (the town is deterministic).")
@click.option("--overwrite", is_flag=True, help="Replace the file if it exists.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@user_errors
def sample(out_path, n_parcels, seed, overwrite, as_json):
    """Write the bundled sample village (EPSG:2260) to a GeoPackage."""
    if not out_path.lower().endswith(".gpkg"):
        raise LayerError(f"--out {out_path}: the sample town is written as a GeoPackage (.gpkg).")
    town = sample_town(n_parcels, seed=seed)
    write_layers(out_path, town, overwrite=overwrite)
    counts = {name: len(frame) for name, frame in town.items()}
    if as_json:
        click.echo(json.dumps({"output": out_path, "crs": "EPSG:2260", "layers": counts}, indent=2))
    else:
        click.echo(f"Sample village written to {out_path}: " + ", ".join(f"{n:,} {k}" for k, n in counts.items()))


@main.group()
def profiles() -> None:
    """List the ordinance profiles, or show one with its citations."""


@profiles.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@user_errors
def profiles_list(as_json):
    """List the bundled ordinance profiles."""
    loaded = [load_profile(name) for name in available_profiles()]
    if as_json:
        click.echo(json.dumps([{k: getattr(p, k) for k in ("id", "municipality", "law", "summary")}
                               for p in loaded], indent=2))
        return
    table = Table(title="Ordinance profiles")
    for col in ("profile", "municipality", "rule"):
        table.add_column(col)
    for p in loaded:
        table.add_row(p.id, p.municipality, p.summary)
    Console().print(table)


@profiles.command("show")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@user_errors
def profiles_show(name, as_json):
    """Show every rule of a profile with its section and quote."""
    profile = load_profile(name)
    if as_json:
        click.echo(json.dumps(profile.as_dict(), indent=2, ensure_ascii=False))
        return
    out = Console()
    out.print(f"[bold]{profile.municipality}[/bold]\n{profile.law}\n{profile.summary}\n", highlight=False)
    table = Table(show_lines=True)
    for col in ("rule", "value", "section", "quote / note"):
        table.add_column(col, overflow="fold")
    for key, rule in profile.rules().items():
        value = "(set by the municipality)" if rule.value is None else str(rule.value)
        kind = " [setting]" if rule.setting else ""
        text = f'"{rule.quote}"' + (f"\n{rule.note}" if rule.note else "")
        table.add_row(key + kind, value, rule.citation, text)
    out.print(table)


@main.command()
@click.option("--store", default=str(DEFAULT_STORE), show_default=True, help="The GeoPackage store to show.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=5000, show_default=True, type=int)
@user_errors
def serve(store, host, port):
    """Serve the web app on http://HOST:PORT (127.0.0.1 by default)."""
    from gisapp import create_app

    if not Path(store).exists():
        raise LayerError(f"The store {store} does not exist yet. Run `make demo`, or `sewerplan sample` and "
                         f"`sewerplan analyze --data {store} --out {store}` first.")
    app = create_app({"STORE": str(store)})
    click.echo(f"Serving {store} on http://{host}:{port} (Ctrl+C to stop)")
    app.run(host=host, port=port, debug=False)


if __name__ == "__main__":  # pragma: no cover
    main()

