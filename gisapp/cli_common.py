"""What the sewerplan commands share: the data options, opening the workspace, errors worded as flags, progress."""

from __future__ import annotations

import datetime as dt
import functools
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from analysis._parallel import paused_gc
from analysis.dates import parse_day
from analysis.errors import AnalysisError, Fix
from analysis.profiles import PROFILE_DIR
from gisapp import services
from gisapp.notices import today
from gisapp.words import register_clash_words
from gisapp.workspace import Workspace, WorkspaceSpec, distinct_settings
from layers.atomic import disk_refusal
from layers.errors import LayerError, LayerValidationError, Problem, redact_url
from layers.read import LAYER_NAMES, Layers, read_mapping
from layers.register import RegisterClashError
from layers.schema import SPECS
from layers.store import store_label

DEFAULT_PROFILE = services.DEFAULT_PROFILE
KINDS = tuple(SPECS)


class DayType(click.ParamType):
    """A day typed as YYYY-MM-DD, read by ``analysis.dates.parse_day`` (as the web pages read it): a day the
    calendar does not have (2027-02-30) is told so, not that its format is wrong. ``today`` is the day sewerplan
    takes as today (``gisapp.notices.today``), so that a command written down (the README's ``notices issue
    --notice-date today``) is not refused once the day it named has passed."""

    name = "YYYY-MM-DD"

    def convert(self, value, param, ctx) -> dt.date:
        if isinstance(value, str) and value.strip().lower() == "today":
            return today()
        try:
            return parse_day(value)
        except AnalysisError as exc:
            self.fail(str(exc), param, ctx)


DAY = DayType()


# -- errors, worded for the command line --------------------------------------------------------------------------


def flag_for(fix: Fix) -> str:
    """The command-line spelling of the setting a ``Fix`` names: ``--set mandate.distance_ft=N`` ..."""
    target, example = fix.target, fix.example
    choices = "|".join(fix.choices)
    words = {
        "rule": f"--set {target}={example or 'VALUE'}",
        "layer": f"--layer {target}={example or 'PATH'}" if target else "--data PATH (or --layer KIND=PATH)",
        "layer_crs": f"--layer-crs {target}={example or 'CRS'}",
        "data_crs": f"--data-crs {example or 'CRS'}",
        "crs": f"--crs {example or 'CRS'}",
        "map": f"--map {target}={example or 'COLUMN'}",
        "map_value": f"--map-value {target}={example or 'CODE'}",
        "notice_reason": f"--notice-reason {choices or 'REASON'}",
        "notice_date": f"--notice-date {example or 'YYYY-MM-DD'}",
        "hazard": "--hazard TEXT (one hazard for every parcel) or --hazard-file FILE (a CSV of parcel_id,hazard)",
        "profile": f"--profile {choices or 'NAME'}",
        "profile_file": "--profile FILE.toml",
        "overwrite": "--overwrite",
        "replace": "--replace",
        "connected": f"--connected {example or 'FILE'}",
        "register": "--register URL|PATH",
    }
    return words[fix.setting]


def how_to_fix(fix: Fix | None) -> str:
    """The sentence that tells a command-line user which flag fixes an error ("" when none does)."""
    if fix is None:
        return ""
    if fix.setting == "register":
        if fix.target:
            return "If a new register is really wanted there, add --new to `sewerplan notices issue`."
        create = (
            "the town's register once with `sewerplan notices issue --data STORE.gpkg --new` (it is recorded "
            "in the store and found from any folder after that), or give --register."
        )
        if fix.example:  # no store was given to look in: the town's store names its register
            return (
                f"Give the town's store, which records its register (--store {fix.example}, or --data "
                f"{fix.example} for a command that reads the layers), or create {create}"
            )
        return f"Create {create}"
    if fix.setting == "rules":
        return f"`sewerplan profiles show {fix.target}` lists its rules."
    if fix.setting == "notice_id":
        return "Copy its ID from `sewerplan notices list`."
    if fix.setting == "profile_file":
        if fix.example and Path(fix.example).parent != PROFILE_DIR:  # the user's own file: change it there
            return f"Change {fix.target} in {fix.example} itself."
        return (
            f"Copy {fix.example or 'the profile file'}, change {fix.target} in the copy and give the copy's path "
            f"as {flag_for(fix)} in place of the profile's name."
        )
    return f"Use {flag_for(fix)}."


def worded(text: str, fix: Fix | None) -> str:
    """``text`` with the flag that fixes it."""
    tail = how_to_fix(fix)
    return f"{text} {tail}" if tail else text


def problem_text(p: Problem) -> str:
    """A problem as the command line prints it: layer, message, features, and the flag that fixes it."""
    return worded(str(p), p.fix)


def error_text(exc: ValueError) -> str:
    """A domain error as the command line prints it: every problem, each with the flag that fixes it."""
    if isinstance(exc, LayerValidationError):
        errors = [p for p in exc.problems if p.severity == "error"]
        lines = "\n".join(f"  - {problem_text(p)}" for p in errors)
        return f"{len(errors)} problem(s) in the input layers:\n{lines}"
    if isinstance(exc, RegisterClashError):  # --register or SEWERPLAN_DATABASE_URL named the other register
        return register_clash_words(exc.store, exc.named, exc.recorded, exc.named_by, web=False)
    return worded(str(exc), getattr(exc, "fix", None))


def user_errors(func):
    """Turn domain errors into a clear message on stderr and exit status 2 (never a traceback)."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except LayerValidationError as exc:
            fail(error_text(exc), kwargs.get("as_json"), problems=[p.as_dict() for p in exc.problems])
        except (LayerError, AnalysisError) as exc:
            fail(error_text(exc), kwargs.get("as_json"), fix=getattr(exc, "fix", None))
        except OSError as exc:  # a full disk, a folder not the user's: what to do, not a traceback
            if (said := disk_refusal(exc)) is None:
                raise
            fail(said, kwargs.get("as_json"))
        except click.UsageError as exc:  # click says it on stderr with the usage; --json gets the one document too
            if kwargs.get("as_json"):
                click.echo(json.dumps({"error": exc.format_message(), "problems": [], "fix": None}, indent=2))
            raise

    return wrapper


def fail(message: str, as_json: bool | None, problems: list | None = None, fix: Fix | None = None) -> None:
    """Exit 2 with ``message`` on stderr; with --json also ``{"error", "problems", "fix"}`` on stdout."""
    if as_json:
        doc = {"error": message, "problems": problems or [], "fix": fix.as_dict() if fix else None}
        click.echo(json.dumps(doc, indent=2))
    click.echo(f"Error: {message}", err=True)
    sys.exit(2)


def deprecated(old: str, new: str) -> None:
    """A spelling kept for one release: say on stderr what replaces it."""
    click.echo(f"Deprecated: {old} will be removed in the next release; use {new}.", err=True)


# -- the data options ---------------------------------------------------------------------------------------------


def _kind_help() -> str:
    return ", ".join(KINDS)


def data_options(func):
    """--profile, --data, --layer, --layer-crs, --data-crs, --crs, column mappings and --set; and, for one release,
    the old per-layer spellings (--parcels PATH, --parcels-crs CRS ...), hidden, with a deprecation note."""
    options = [
        click.option(
            "--profile",
            "profile_name",
            metavar="NAME|FILE",
            help=f"Ordinance profile: {', '.join(services.profile_names())}, or a .toml file (default: the one the "
            f"store's latest run used, else the one its layers were checked under on the Data page; trace: "
            f"{DEFAULT_PROFILE}).",
        ),
        click.option(
            "--data",
            metavar="PATH|URL",
            help="GeoPackage, folder, .gdb, zip, SWMM .inp or postgresql:// URL whose layers are found by name.",
        ),
        click.option(
            "--layer",
            "layer_pairs",
            multiple=True,
            metavar="KIND=SOURCE",
            help="One layer: a file, FILE:LAYER or postgresql://...#schema.table; overrides --data. Repeatable. "
            "The kinds: sewerplan layers.",
        ),
        click.option(
            "--layer-crs",
            "layer_crs_pairs",
            multiple=True,
            metavar="KIND=CRS",
            help=(
                "CRS of a layer, e.g. parcels=EPSG:2260: for one that declares none, or one whose .prj is wrong "
                "(it replaces the declared CRS, and says so). Repeatable."
            ),
        ),
        *[click.option(f"--{kind.replace('_', '-')}", f"{kind}_source", metavar="PATH", hidden=True) for kind in KINDS],
        *[click.option(f"--{kind.replace('_', '-')}-crs", f"{kind}_crs", metavar="CRS", hidden=True) for kind in KINDS],
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


DIRECTION_OPTION = click.option(
    "--digitised-direction",
    is_flag=True,
    help="The mains are drawn in flow direction: use it where no from/to fields or inverts say otherwise.",
)


def pair(text: str, option: str, example: str = "mandate.distance_ft=200") -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep:
        raise click.UsageError(f"{option} {text}: expected KEY=VALUE, e.g. {option} {example}")
    return key.strip(), value.strip()


def set_pairs(texts) -> tuple[tuple[str, str], ...]:
    """The ``--set`` options as (KEY, VALUE) pairs; one key given twice with two values is refused."""
    return distinct_settings([pair(t, "--set") for t in texts], "--set", "give it once, with the value you mean.")


def _kind_pairs(texts, option: str, example: str) -> dict[str, str]:
    """``KIND=VALUE`` options by kind; a kind given twice with two values is refused (the last one was taken
    silently: ``--layer mains=old.shp --layer mains=new.shp`` analysed new.shp without a word)."""
    out = {}
    for text in texts:
        kind, value = pair(text, option, example)
        kind = kind.replace("-", "_")
        if kind not in SPECS:
            # A store's layer name (treatment_plants, roads ...) is the first a user tries: say its kind.
            named = next((k for k, names in LAYER_NAMES.items() if kind.lower() in names), None)
            if named:
                raise click.UsageError(
                    f"{option} {text}: {kind!r} is not a layer kind, but a layer of that name is read as "
                    f"{named}: give {option} {named}={value}."
                )
            raise click.UsageError(
                f"{option} {text}: {kind!r} is not a layer kind. The kinds: {_kind_help()} (sewerplan layers)."
            )
        if kind in out and out[kind] != value:
            raise click.UsageError(
                f"{option} {kind} is given twice, as {out[kind]} and {value}: give it once, with the one you mean."
            )
        out[kind] = value
    return out


def given_spec(opts: dict, **extra) -> WorkspaceSpec:
    """The workspace spec from the data options as typed (old per-layer spellings too, with a note)."""
    layers = _kind_pairs(opts.get("layer_pairs") or (), "--layer", "parcels=town.gpkg:parcels")
    crs = _kind_pairs(opts.get("layer_crs_pairs") or (), "--layer-crs", "parcels=EPSG:2260")
    for kind in KINDS:
        flag = f"--{kind.replace('_', '-')}"
        if opts.get(f"{kind}_source"):
            deprecated(f"{flag} PATH", f"--layer {kind}=PATH")
            layers.setdefault(kind, opts[f"{kind}_source"])
        if opts.get(f"{kind}_crs"):
            deprecated(f"{flag}-crs CRS", f"--layer-crs {kind}=CRS")
            crs.setdefault(kind, opts[f"{kind}_crs"])
    mapping = read_mapping(opts.get("mapping_file"), opts.get("map_pairs") or (), opts.get("map_values") or ())
    return WorkspaceSpec(
        profile=opts.get("profile_name"),
        settings=set_pairs(opts.get("settings") or ()),
        crs=opts.get("crs_text"),
        data=opts.get("data"),
        layers=tuple(layers.items()),
        layer_crs=tuple(crs.items()),
        data_crs=opts.get("data_crs"),
        mapping={"columns": mapping.columns, "values": mapping.values} if (mapping.columns or mapping.values) else {},
        **extra,
    )


def workspace_spec(
    opts: dict, *, default_profile: str | None = None, **extra
) -> tuple[WorkspaceSpec, str | None, bool]:
    """The spec a command works with, its store, and whether the command's ``default_profile`` was taken (none was
    typed or recorded): what was typed, over what the store's latest run recorded.

    A value typed wins; what was not typed is the run's (its profile and the values set on it, its measuring CRS,
    column mapping, layer CRSs, direction choice), so a later command rebuilds exactly what the run used. Says on
    stderr what it took from the record.
    """
    given = given_spec(opts, **extra)
    store = services.store_of(given.data)
    recorded = services.recorded_spec(store) if store else None
    spec = given.merged_over(recorded.replace(data=None)) if recorded else given
    if recorded:
        taken = recorded_words(given, recorded)
        if taken:
            click.echo(f"Using what the latest run recorded in {store_label(store)}: {taken}.", err=True)
    elif store:
        # Never analysed: run under what its layers were checked under (an upload published from the Data page)
        spec = _checked_over(given, services.checked_spec(store), store, spec)
    defaulted = not spec.profile
    if defaulted:
        if not default_profile:
            raise click.UsageError(
                f"Give the town's ordinance profile with --profile ({', '.join(services.profile_names())})."
            )
        spec = spec.replace(profile=default_profile)
    if not (spec.data or spec.layers):
        raise click.UsageError("Give --data (a GeoPackage or folder) or the layers one by one (--layer KIND=PATH).")
    return spec, store, defaulted


def _checked_over(given: WorkspaceSpec, kept: WorkspaceSpec, store: str, spec: WorkspaceSpec) -> WorkspaceSpec:
    """``spec`` with what the layers of a store never analysed were checked under where nothing was typed for it: the
    profile and the values set on it (those kept for the profile typed, when it is the same one) and the measuring
    CRS (``services.checked_spec``). Says on stderr what it took, as the flags that would give it."""
    taken = []
    if kept.profile and given.profile in (None, kept.profile):
        typed = dict(given.settings)
        settings = [(k, v) for k, v in kept.settings if k not in typed]
        spec = spec.replace(profile=kept.profile, settings=(*settings, *given.settings))
        taken = ([] if given.profile else [f"--profile {kept.profile}"]) + [f"--set {k}={v}" for k, v in settings]
    if taken:
        click.echo(
            f"Using the profile the layers of {store_label(store)} were checked under (no run has recorded one yet): "
            f"{' '.join(taken)}.",
            err=True,
        )
    if kept.crs and not given.crs and not given.is_local:
        spec = spec.replace(crs=kept.crs)
        click.echo(
            f"Using the measuring CRS the layers of {store_label(store)} were checked in (no run has recorded one "
            f"yet): --crs {kept.crs}.",
            err=True,
        )
    return spec


def recorded_words(given: WorkspaceSpec, recorded: WorkspaceSpec) -> str:
    """What a command takes from a run's record, as the flags that would give it."""
    parts = []
    if not given.profile and recorded.profile:
        parts.append(f"--profile {recorded.profile}")
    if not given.profile or given.profile == recorded.profile:
        typed = dict(given.settings)
        parts += [f"--set {k}={v}" for k, v in recorded.settings if k not in typed]
    if not given.crs and recorded.crs:
        parts.append(f"--crs {recorded.crs}")
    typed_layers = dict(given.layers)
    parts += [f"--layer {k}={v}" for k, v in recorded.layers if k not in typed_layers]
    typed_crs = dict(given.layer_crs)
    parts += [f"--layer-crs {k}={v}" for k, v in recorded.layer_crs if k not in typed_crs]
    if not given.data_crs and recorded.data_crs:
        parts.append(f"--data-crs {recorded.data_crs}")
    if not given.mapping and recorded.mapping and (recorded.mapping.get("columns") or recorded.mapping.get("values")):
        parts.append("its column mapping")
    if not given.digitised_direction and recorded.digitised_direction:
        parts.append("--digitised-direction")
    if not given.connected and recorded.connected:
        parts.append(f"--connected {recorded.connected}")
    return ", ".join(parts)


# -- opening the workspace ----------------------------------------------------------------------------------------


@dataclass
class Loaded:
    """The command's workspace and its console (quiet with --json)."""

    workspace: Workspace
    console: Console
    default_profile: bool = False  # no profile was given or recorded: the command's default was used

    @property
    def profile(self):
        return self.workspace.profile

    @property
    def layers(self) -> Layers:
        return self.workspace.layers


@contextmanager
def loading(
    opts: dict,
    *,
    as_json: bool,
    required: tuple[str, ...],
    extra_steps: int = 0,
    default_profile: str | None = None,
    allow_local: bool = False,
    **extra,
) -> Iterator[tuple[Loaded, Progressing]]:
    """The workspace of one command's run (``services.open_workspace``), open for the length of the block.

    ``default_profile`` is used when no --profile is given and the store records none (trace); without one,
    --profile is required. ``allow_local`` lets a SWMM .inp keep its own coordinates (--data-crs local). ``extra``
    goes into the spec (``digitised_direction``, ``connected`` ...).

    Inside the block the garbage collector is paused (the runs allocate millions of small objects) and a progress
    bar on stderr counts the reading and the command's own steps; the bar is closed when the block ends, error or not.
    """
    spec, store, defaulted = workspace_spec(opts, default_profile=default_profile, **extra)
    sources = services.layer_sources(spec, store=store)
    if spec.is_local:
        _check_local(spec, sources, allow_local)
    console = Console(stderr=True, quiet=as_json)
    with paused_gc():
        bar = Progressing(console, total=len(sources) + extra_steps)
        try:
            try:
                ws = services.open_workspace(spec, store=store, sources=sources, required=required, progress=bar.step)
            except LayerValidationError as exc:
                raise _with_local_hint(exc, sources, allow_local) from exc
            yield Loaded(ws, console, default_profile=defaulted), bar
        finally:
            bar.close()


def is_local_option(opts: dict) -> bool:
    """True when --data-crs says the coordinates are a model's own (``local``)."""
    return str(opts.get("data_crs") or "").strip().lower() == "local"


def _check_local(spec: WorkspaceSpec, sources: dict, allow_local: bool) -> None:
    """The model's own coordinates are for a SWMM .inp alone, in the commands that need no place."""
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
    if spec.crs:
        raise click.UsageError("--data-crs local keeps the model's coordinates: leave out --crs.")


def _with_local_hint(exc: LayerValidationError, sources: dict, allow_local: bool) -> LayerValidationError:
    """A SWMM model refused for its CRS may be schematic: say how to keep its own coordinates, where that works.

    A model never declares a CRS: its layers' "no CRS" problems (worded for a shapefile without its .prj, each
    with its --layer-crs) are said once, as the model's, with the --data-crs that gives every layer of it its CRS.
    """
    models = [k for k, s in sources.items() if str(s.path).lower().endswith(".inp")]
    # The model's own CRS in doubt: none given, or one its coordinates do not fit. Not the measuring CRS: a model
    # in its right CRS outside New York is told --crs, and "schematic" would send its user the wrong way.
    crs_trouble = any(
        p.check in ("crs_mismatch", "no_crs") and p.layer in models and not (p.fix and p.fix.setting == "crs")
        for p in exc.problems
    )
    if not (models and crs_trouble):
        return exc
    undeclared = [p for p in exc.problems if p.check == "no_crs" and p.layer in models]
    if undeclared:
        name = Path(sources[undeclared[0].layer].path).name
        said = Problem(
            undeclared[0].layer,
            "no_crs",
            "error",
            f"The model {name} declares no coordinate reference system (a SWMM .inp file never does): give the CRS "
            "its coordinates are in.",
            fix=Fix("data_crs", "", "EPSG:2260"),
        )
        kept = [p for p in exc.problems if p not in undeclared]
        exc = LayerValidationError([said, *kept])
    if not allow_local:
        return exc
    hint = Problem(
        models[0],
        "crs_mismatch",
        "error",
        "If the model's coordinates are in no real-world CRS (a schematic model), keep them as they are with "
        "--data-crs local: lengths then come from the model, and maps are not made.",
    )
    return LayerValidationError([*exc.problems, hint])


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
        console.print(f"[yellow]{p.severity}[/yellow]: {problem_text(p)}", markup=True, highlight=False)


def refuse_repeated_options(command: click.Command) -> None:
    """Make ``command`` and every command under it refuse an option given twice with two values, as ``--set`` and
    ``--layer`` already do. Click keeps the last one without a word: ``notices issue --notice-date 2027-03-01
    --notice-date 2027-09-01`` recorded 90 notices dated September; ``analyze --profile fort-plain --profile
    wappinger`` ran Wappinger. The same value twice is one value. Options given more than once on purpose
    (``multiple``) and flags are not counted."""
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            refuse_repeated_options(sub)
        return
    parse = command.parse_args

    def parse_args(ctx: click.Context, args: list[str]) -> list[str]:
        named = " ".join(
            ["sewerplan", *ctx.command_path.split()[1:]]
        )  # as the user typed it (a test runner says "main")
        said = repeated_option(command, args) or data_for_store(command, args, named)
        if said:
            raise click.UsageError(said, ctx=ctx)
        return parse(ctx, args)

    command.parse_args = parse_args  # type: ignore[method-assign]


def data_for_store(command: click.Command, args: list[str], path: str = "") -> str | None:
    """The sentence for ``--data`` given to a command that reads the town's store (``--store``) and has no
    ``--data``: click said only "No such option: --data" (``notices list --data town.gpkg``); and for ``--store``
    given to a command that reads layers (``--data``) and has no ``--store`` (``notices preview --store``)."""
    spellings = {spelling for param in command.params for spelling in getattr(param, "opts", ())}
    for wrong, right in (("--data", "--store"), ("--store", "--data")):
        if wrong in spellings or right not in spellings:
            continue
        tokens = [str(a) for a in args]
        for i, token in enumerate(tokens):
            if token == "--":
                break
            if token == wrong or token.startswith(f"{wrong}="):
                given = token.partition("=")[2] or (tokens[i + 1] if i + 1 < len(tokens) else "STORE.gpkg")
                given = redact_url(given)  # a database URL's password is never echoed (a tester)
                if right == "--store":
                    return (
                        f"`{path or command.name}` reads the town's store, not layers: give --store {given} (the store "
                        "that `analyze --out` wrote) in place of --data."
                    )
                return (
                    f"`{path or command.name}` reads layers, a store among them: give --data {given} in place of "
                    "--store (a store given as --data is read with the settings its latest run recorded)."
                )
    return None


def repeated_option(command: click.Command, args: list[str]) -> str | None:
    """The sentence for the first option of ``command`` that ``args`` give twice with two values; None for none."""
    valued = {
        spelling: param
        for param in command.params
        if isinstance(param, click.Option) and not (param.multiple or param.count or param.is_flag)
        for spelling in param.opts
    }
    given: dict[str, list[tuple[str, str]]] = {}
    args = [str(a) for a in args]  # a caller's paths (click's test runner takes them as they are)
    i = 0
    while i < len(args) and args[i] != "--":
        spelling, equals, value = args[i].partition("=") if args[i].startswith("--") else (args[i], "", "")
        param = valued.get(spelling)
        if param is None:
            i += 1
            continue
        if not equals:
            value = " ".join(args[i + 1 : i + 1 + max(1, param.nargs)])
        i += 1 if equals else 1 + max(1, param.nargs)
        given.setdefault(str(param.name), []).append((spelling, value))
    for uses in given.values():
        values = list(dict.fromkeys(value for _, value in uses))
        if len(values) > 1:
            first, second = redact_url(values[0]), redact_url(values[1])  # never a database URL's password
            return f"{uses[0][0]} is given twice, as {first} and {second}: give it once, with the one you mean."
    return None
