"""What the sewerplan commands share: the data options, loading the layers, errors, progress."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from analysis._parallel import paused_gc
from analysis.errors import AnalysisError
from analysis.profiles import Profile, available_profiles, load_profile
from layers.crs import measuring_crs
from layers.errors import LayerError, LayerValidationError, Problem
from layers.read import Layers, find_layers, load_layers, parse_source, read_connected_ids, read_mapping
from layers.schema import SPECS
from layers.swmm import LOCAL_CRS

# The profile `trace` uses for its snapping settings when none is given (the network rules are not applied).
DEFAULT_PROFILE = "fort-plain"


def user_errors(func):
    """Turn domain errors into a clear message on stderr and exit status 2 (never a traceback)."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except LayerValidationError as exc:
            fail(str(exc), kwargs.get("as_json"), problems=[p.as_dict() for p in exc.problems])
        except (LayerError, AnalysisError) as exc:
            fail(str(exc), kwargs.get("as_json"))

    return wrapper


def fail(message: str, as_json: bool | None, problems: list | None = None) -> None:
    if as_json:
        click.echo(json.dumps({"error": message, "problems": problems or []}, indent=2))
    click.echo(f"Error: {message}", err=True)
    sys.exit(2)


def data_options(func):
    """--profile, --data, each layer and its CRS, --data-crs, --crs, column mappings and --set."""
    options = [
        click.option(
            "--profile",
            "profile_name",
            metavar="NAME|FILE",
            help=f"Ordinance profile: {', '.join(available_profiles())}, or a .toml file (trace: default "
            f"{DEFAULT_PROFILE}).",
        ),
        click.option(
            "--data",
            metavar="PATH|URL",
            help="GeoPackage, folder, .gdb, zip, SWMM .inp or postgresql:// URL whose layers are found by name.",
        ),
        *[
            click.option(
                f"--{kind.replace('_', '-')}",
                f"{kind}_source",
                metavar="PATH",
                help=f"The {kind} layer ({SPECS[kind].help}): a file, FILE:LAYER or "
                "postgresql://...#schema.table. Overrides --data.",
            )
            for kind in SPECS
        ],
        *[
            click.option(
                f"--{kind.replace('_', '-')}-crs",
                f"{kind}_crs",
                metavar="CRS",
                help=f"CRS of a {kind} layer that declares none (e.g. EPSG:2260).",
            )
            for kind in SPECS
        ],
        click.option(
            "--data-crs",
            metavar="CRS",
            help="CRS of every layer that declares none (a SWMM .inp file never does); 'local' for a .inp whose "
            "coordinates are the model's own (network check and trace only).",
        ),
        click.option("--crs", "crs_text", metavar="CRS", help="Measuring CRS (projected); default: the profile's."),
        click.option("--mapping", "mapping_file", type=click.Path(dir_okay=False), help="TOML file of column names."),
        click.option(
            "--map",
            "map_pairs",
            multiple=True,
            metavar="LAYER.FIELD=COLUMN",
            help="Column for a field, e.g. parcels.parcel_id=SBL. Repeatable.",
        ),
        click.option(
            "--map-value",
            "map_values",
            multiple=True,
            metavar="LAYER.FIELD.VALUE=CODE",
            help="Meaning of a coded value, e.g. mains.sewer_type.GRAV=sanitary. Repeatable.",
        ),
        click.option(
            "--set",
            "settings",
            multiple=True,
            metavar="SECTION.KEY=VALUE",
            help="Override a profile value, e.g. mandate.distance_ft=200 (Wappinger requires it).",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


@dataclass
class Loaded:
    profile: Profile
    layers: Layers
    console: Console


@contextmanager
def loading(
    opts: dict,
    *,
    as_json: bool,
    required: tuple[str, ...],
    connected_file: str | None = None,
    connected_column: str | None = None,
    extra_steps: int = 0,
    default_profile: str | None = None,
    allow_local: bool = False,
) -> Iterator[tuple[Loaded, Progressing]]:
    """Profile and validated layers from the data options, for the length of one command's run.

    ``default_profile`` is used when no --profile is given (trace); without one, --profile is required.
    ``allow_local`` lets a SWMM .inp keep its own coordinates (--data-crs local).

    Inside the block the garbage collector is paused (the runs allocate millions of small objects) and a progress
    bar on stderr counts the reading and the command's own steps; the bar is closed when the block ends, error or not.
    """
    overrides = dict(pair(s, "--set") for s in opts["settings"])
    if not opts["profile_name"] and not default_profile:
        raise click.UsageError(f"Give the town's ordinance profile with --profile ({', '.join(available_profiles())}).")
    profile = load_profile(opts["profile_name"] or default_profile, overrides=overrides)
    sources = find_layers(opts["data"]) if opts["data"] else {}
    for kind in SPECS:
        if opts.get(f"{kind}_source"):
            sources[kind] = parse_source(kind, opts[f"{kind}_source"])
    if not sources:
        raise click.UsageError("Give --data (a GeoPackage or folder) or the layers one by one (--parcels ...).")
    if is_local_option(opts):
        target = _local_target(opts, sources, allow_local)
        assume = dict.fromkeys(sources, LOCAL_CRS.to_wkt())
    else:
        target = measuring_crs(opts["crs_text"] or profile.measurement.measuring_crs.value)
        assume = {
            k: opts.get(f"{k}_crs") or opts.get("data_crs")
            for k in SPECS
            if opts.get(f"{k}_crs") or opts.get("data_crs")
        }
    mapping = read_mapping(opts["mapping_file"], opts["map_pairs"], opts["map_values"])
    connected = read_connected_ids(connected_file, column=connected_column) if connected_file else None
    console = Console(stderr=True, quiet=as_json)
    with paused_gc():
        bar = Progressing(console, total=len(sources) + extra_steps)
        try:
            try:
                layers = load_layers(
                    sources,
                    target_crs=target,
                    mapping=mapping,
                    assume_crs=assume,
                    connected_ids=connected,
                    progress=bar.step,
                    required=required,
                )
            except LayerValidationError as exc:
                raise _with_local_hint(exc, sources, allow_local) from exc
            yield Loaded(profile, layers, console), bar
        finally:
            bar.close()


def is_local_option(opts: dict) -> bool:
    """True when --data-crs says the coordinates are a model's own (``local``)."""
    return str(opts.get("data_crs") or "").strip().lower() == "local"


def _local_target(opts: dict, sources: dict, allow_local: bool):
    """The model's own coordinates as the working CRS, for a SWMM .inp alone, in the commands that need no place."""
    if not allow_local:
        raise click.UsageError(
            "--data-crs local keeps a SWMM model's own coordinates, which are in no real-world CRS: only "
            "'network check' and 'trace' can work without a real place. Give the CRS the model was drawn in "
            "(e.g. --data-crs EPSG:2260)."
        )
    others = sorted(k for k, s in sources.items() if not str(s.path).lower().endswith(".inp"))
    if others:
        raise click.UsageError(
            f"--data-crs local is for a SWMM .inp file alone; the {', '.join(others)} layer(s) have a real place "
            "and cannot be set beside the model's own coordinates. Give the model's real CRS with --data-crs."
        )
    if opts.get("crs_text"):
        raise click.UsageError("--data-crs local keeps the model's coordinates: leave out --crs.")
    return LOCAL_CRS


def _with_local_hint(exc: LayerValidationError, sources: dict, allow_local: bool) -> LayerValidationError:
    """A SWMM model refused for its CRS may be schematic: say how to keep its own coordinates, where that works."""
    models = [k for k, s in sources.items() if str(s.path).lower().endswith(".inp")]
    crs_trouble = any(p.check in ("crs_mismatch", "no_crs") and p.layer in models for p in exc.problems)
    if not (allow_local and models and crs_trouble):
        return exc
    hint = Problem(
        models[0],
        "crs_mismatch",
        "error",
        "If the model's coordinates are in no real-world CRS (a schematic model), keep them as they are with "
        "--data-crs local: lengths then come from the model, and maps are not made.",
    )
    return LayerValidationError([*exc.problems, hint])


def pair(text: str, option: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep:
        raise click.UsageError(f"{option} {text}: expected KEY=VALUE, e.g. {option} mandate.distance_ft=200")
    return key.strip(), value.strip()


class Progressing:
    """A progress bar on stderr over the steps of a run; silent when stderr is not a terminal or with --json."""

    def __init__(self, console: Console, total: int):
        self.bar = None
        if not console.quiet and console.is_terminal:
            self.bar = Progress(
                SpinnerColumn(),
                TextColumn("{task.description}"),
                BarColumn(),
                TimeElapsedColumn(),
                console=console,
                transient=True,
            )
            self.bar.start()
            self.task = self.bar.add_task("starting", total=total)

    def step(self, description: str) -> None:
        if self.bar is not None:
            self.bar.update(self.task, description=description, advance=1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def print_problems(console: Console, layers: Layers) -> None:
    for p in layers.problems:
        console.print(f"[yellow]{p.severity}[/yellow]: {p}", markup=True, highlight=False)
