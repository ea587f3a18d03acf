"""One typed function per job, the one thing the command line and the web pages both call (no Flask, no click).

A job starts from a workspace (``gisapp.workspace``): ``open_workspace`` makes one from what a user gave, and
``open_store`` rebuilds the one a store's latest run recorded, so the CLI and the web page analyse, trace, plan and
give notice on exactly the same profile as applied, layers, network and register. ``load_profile`` and
``build_network`` are called here and nowhere else outside ``analysis/``.

Jobs: ``analyse``, ``readiness``; ``network``, ``check``, ``trace_parcel``, ``trace_manhole``, ``sewershed``;
``buildings``; ``duties``, ``subdivisions``; ``select_by_distance``; ``preview_notices``, ``issue_notices``,
``violations``, ``settle``, ``resume``; ``evaluate_plan``, ``plan_pdf``, ``export_plan``; ``export_results``,
``print_map``. A command or a view parses its input, calls one of them and
presents the result.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import geopandas as gpd
import pandas as pd
from pyproj import CRS

from analysis.areas import unmapped_area
from analysis.buildings import BuildingsResult, assess_buildings
from analysis.duties import DutiesResult, assess_duties
from analysis.errors import Fix, ProfileError
from analysis.mandate import MandateResult, analyze_mandates, missing_inputs
from analysis.network import SewerNetwork, build_network
from analysis.network_checks import NetworkOutline, check_network, network_outline
from analysis.notices import (
    NoticeChoice,
    NoticePlan,
    TownSettings,
    connection_day_problem,
    period,
    refuse_resolutions_of_the_laws_periods,
    with_resolutions,
)
from analysis.notification import Notification, parcels_within
from analysis.profiles import Profile, available_profiles, load_profile, values_set
from analysis.subdivisions import assess_subdivisions
from analysis.trace import Sewershed, Trace, add_network_results, connect_parcels, trace_down
from analysis.trace import sewershed as upstream_of
from analysis.trace import trace_parcel as trace_from_parcel
from gisapp import notices as _notices
from gisapp.words import notice_in_force, register_record
from gisapp.workspace import StoredRun, Workspace, WorkspaceSpec
from layers.crs import measuring_crs
from layers.errors import LayerError, NotFoundError, Problem
from layers.read import (
    LAYER_NAMES,
    Layers,
    LayerSource,
    drawn_feature,
    is_postgres,
    load_layers,
    read_connected_ids,
    read_proposed,
    sources_of,
    street_run,
)
from layers.register import Register, RegisterMissingError, check_store_register
from layers.store import (
    INPUT_NAMES,
    in_store,
    is_store,
    latest_run,
    layers_crs,
    layers_profile,
    read_results,
    results_columns,
    store_exists,
    store_label,
    write_run,
)
from layers.store import open_store as store_at
from layers.swmm import LOCAL_CRS
from layers.town import load_town_settings, town_file
from layers.validate import ColumnMapping
from layers.write import RESULT_LAYER, output_format, write_csv, write_plan, write_results

# The profile a store with no recorded run, and `sewerplan trace` without --profile, use (for its snapping
# settings: the network rules are not applied).
DEFAULT_PROFILE = "fort-plain"
# Where a town leaves the mandate distance unset, the nearest-main search starts this far out (a speed hint: the
# search goes on until every parcel has its nearest main, so no result depends on it).
CONNECTION_SEARCH_FT = 100.0

# A saved scenario's name: kept whole, or refused (never cut short, which made two scenarios one).
PLAN_NAME_MAX = 80
PLAN_NAME_NOT_ALLOWED = ("/", "\\")  # folder separators, in a path or as a browser reads one


def _quiet(_text: str) -> None:
    """No progress reporting."""


Progress = Callable[[str], None]


# -- profiles -----------------------------------------------------------------------------------------------------


def profile_names() -> list[str]:
    """The bundled profiles' names."""
    return available_profiles()


def profile(name: str, *, settings: dict | None = None) -> Profile:
    """A profile by bundled name or ``.toml`` path, with ``settings`` (rule key -> value) applied."""
    return load_profile(name, overrides=settings or None)


def settings_changed(profile_name: str | None, settings: dict | None) -> dict | None:
    """The values ``settings`` set on the profile ``profile_name`` (a bundled name or ``.toml`` path) that change
    it, as the profile reads them (``analysis.profiles.values_set``): ``250`` and ``250.0`` are one value, and a
    value equal to the profile's own is not set. None (a run recorded before runs kept their settings) stays None;
    where the profile cannot be read now (a profile file since moved), the values are kept as they were given."""
    if settings is None:
        return None
    try:
        return values_set(profile(profile_name), settings) if profile_name else dict(settings)
    except ProfileError:
        return dict(settings)


def profiles() -> list[Profile]:
    """Every bundled profile."""
    return [profile(name) for name in available_profiles()]


def notice_reasons_by_profile() -> dict[str, list[str]]:
    """The notice reasons each bundled profile accepts (its ``mandate.notice_reasons``), for a form that lets a
    planner choose the profile and the reason together: a reason the profile does not accept is refused
    (``analysis.mandate.check_notice``), so only these are offered. Empty for a profile that sets none."""
    return {name: list(profile(name).mandate.notice_reasons.value) for name in available_profiles()}


def profile_of(spec: WorkspaceSpec) -> Profile:
    """The profile as a workspace applies it: its file or bundled name, and every value set on it."""
    if not spec.profile:
        raise LayerError(
            f"No ordinance profile was chosen: choose the town's ({', '.join(available_profiles())}).",
            fix=Fix("profile", example=DEFAULT_PROFILE, choices=tuple(available_profiles())),
        )
    return profile(spec.profile, settings=spec.overrides)


def connection_profile(prof: Profile) -> Profile:
    """The profile a job that needs only each parcel's connection point runs the mandate analysis under.

    Buildings and traces need where each parcel's building sewer meets its main, not who must connect. Where the
    town has left the mandate distance unset (Wappinger, whose connection rule does not tie the duty to an
    abutting street), every parcel connects to its nearest main, so any search distance gives the same points:
    the profile's distance is filled in for the search only, and no status from it is shown.
    """
    rule = prof.mandate.distance_ft
    if rule.value is not None or prof.mandate.requires_abutting_street.value:
        return prof
    search = dataclasses.replace(rule, value=CONNECTION_SEARCH_FT, setting=True)
    return dataclasses.replace(prof, mandate=dataclasses.replace(prof.mandate, distance_ft=search))


# -- opening a workspace ------------------------------------------------------------------------------------------


def store_of(data: str | Path | None) -> str | None:
    """``data`` when it can be a store (its run record, its register): a GeoPackage file, or a PostGIS schema
    (``postgresql://...#schema``); else None."""
    return str(data) if is_store(data) else None


def check_output(path: str) -> None:
    """Refuse an output sewerplan cannot write, before any work: a file by its extension, a store's URL by its
    schema and by connecting to its database (a wrong password or host is said before the analysis, not after).
    ``LayerError`` says what to give."""
    if is_postgres(str(path)):
        store_at(path).exists()
    else:
        output_format(path)


def recorded_run(store: str | Path | None) -> dict | None:
    """The store's latest run record (None for a store never analysed, or not a store)."""
    if not store_of(store):
        return None
    try:
        return latest_run(store)
    except (ValueError, sqlite3.Error):  # a damaged file: its layers are refused, with a sentence, when read
        return None


def recorded_spec(store: str | Path | None) -> WorkspaceSpec | None:
    """The workspace the store's latest run used (None for a store never analysed, or not a store)."""
    return WorkspaceSpec.from_record(recorded_run(store))


def checked_spec(store: str | Path | None) -> WorkspaceSpec:
    """What a store's layers were checked under on the Data page, kept with them (so published with them): the
    profile chosen there with the values set on it (``layers.store.layers_profile``) and the "Measuring CRS" (data
    outside New York, ``layers.store.layers_crs``). Empty where none was kept (a sample town, a store without
    layers)."""
    if not (store_of(store) and store_exists(store)):
        return WorkspaceSpec()
    profile, settings = layers_profile(store)
    return WorkspaceSpec(profile=profile, settings=tuple(settings.items()), crs=layers_crs(store))


def unanalysed_spec(store: str | Path | None) -> WorkspaceSpec:
    """The workspace of a store never analysed: the profile its layers were checked under, with the values set on
    it, measured in the CRS they were checked and written in (``checked_spec``: an upload's "Profile" and "Measuring
    CRS" on the Data page, kept with the layers, so published with them); else the default profile, in its own CRS.
    A run records the profile and the CRS it used, so from the first run on the record says them."""
    kept = checked_spec(store)
    return kept.replace(profile=kept.profile or DEFAULT_PROFILE)


def layer_sources(spec: WorkspaceSpec, *, store: str | None = None) -> dict[str, LayerSource]:
    """Where each layer comes from: the spec's data (else the store's own layers), then each layer given alone."""
    data = spec.data or store
    try:
        found = sources_of(str(data) if data else None, spec.layers)
    except LayerError as exc:
        better = results_without_inputs(data)
        if better is None:
            raise
        raise better from exc
    if not found:
        raise LayerError("No data was given: give the town's data, or each layer on its own.", fix=Fix("layer"))
    return found


def results_without_inputs(data: str | None) -> LayerError | None:
    """The sentence for a store that holds an analysis's results but none of the layers it read (written by an
    ``analyze --out`` that did not yet copy them in), or None for any other source."""
    if not store_of(data) or not store_exists(data):
        return None
    try:
        names = store_at(data).layer_names()
    except Exception:  # noqa: BLE001 - a damaged or unreachable store: the error already raised says so
        return None
    if RESULT_LAYER not in names or any(n.lower() in INPUT_NAMES for n in names):
        return None
    label = store_label(data)
    read = ((recorded_run(data) or {}).get("workspace") or {}).get("data")
    again = f"sewerplan analyze --data {read} --out {label}" if read else f"sewerplan analyze --out {label}"
    return LayerError(
        f"{label} holds analysis results but not the layers they were computed from (parcels, mains ...): run "
        f"`{again}` again, which copies the layers into the store beside the results."
    )


@dataclass
class InputCopies:
    """The input layers a run read from elsewhere, to be copied into the store it writes: the store alone then
    serves the map (mains, manholes, the plant), traces and later runs, as a store analysed in place does.

    ``frames`` are the validated layers by store layer name (each kind's first name in ``LAYER_NAMES``: parcels,
    mains, treatment_plants ...), in the measuring CRS with sewerplan's column names; ``spec`` is the workspace as
    the store then holds it (its own layers: no data path, column mapping or layer CRS to apply again); ``record``
    says in the run record where they came from and which layers are copies; ``stale`` names earlier copies this
    run has no layer for.
    """

    frames: dict[str, gpd.GeoDataFrame]
    spec: WorkspaceSpec
    record: dict
    stale: tuple[str, ...] = ()


# The run record's key naming the store's layers that are copies of input layers read from elsewhere.
COPIES_KEY = "input_copies"


def reads_store(ws: Workspace, store: str) -> bool:
    """The workspace's layers come, at least in part, from ``store`` itself (the store analysed in place)."""
    data = ws.spec.data or ws.store
    return any(in_store(text, store) for text in (data, *(text for _, text in ws.spec.layers)))


def input_copies(ws: Workspace, store: str) -> InputCopies | None:
    """What a run of ``ws`` written to ``store`` copies into it: None when it reads the store's own layers.

    Layers of the store that an earlier run copied in (its record says which) are replaced; a store holding input
    layers of its own is refused (``LayerError``) before the analysis runs: its map, traces and later runs would
    use those layers beside results computed from others, and they are never overwritten.
    """
    if reads_store(ws, store):
        return None
    target = store_at(store)
    held = target.layer_names() if target.exists() else []
    copied = set((((recorded_run(store) or {}).get(COPIES_KEY) or {}).get("layers") or {}).values())
    own = [name for name in held if name.lower() in INPUT_NAMES and name not in copied]
    label = store_label(store)
    if own:
        raise LayerError(
            f"{label} already holds input layers of its own ({', '.join(own)}), which its map, traces and later runs "
            "would use beside results computed from other data: write the results to a new store, or analyse the "
            f"store's own layers (`sewerplan analyze --data {label} --out {label}`)."
        )
    names = {
        kind: LAYER_NAMES[kind][0]
        for kind in LAYER_NAMES
        if isinstance(getattr(ws.layers, kind, None), gpd.GeoDataFrame)
    }
    frames = {name: getattr(ws.layers, kind) for kind, name in names.items()}
    spec = ws.spec.replace(data=None, layers=(), layer_crs=(), data_crs=None, mapping={})
    stale = tuple(name for name in sorted(copied) if name in held and name not in frames)
    return InputCopies(frames, spec, {"from": ws.spec.as_record(), "layers": names}, stale)


def measuring_target(spec: WorkspaceSpec, prof: Profile) -> CRS:
    """The CRS the workspace measures in: the one given, else the profile's (a model's own for local data)."""
    if spec.is_local:
        return LOCAL_CRS
    return measuring_crs(spec.crs or prof.measurement.measuring_crs.value)


def open_workspace(
    spec: WorkspaceSpec,
    *,
    store: str | None = None,
    sources: dict[str, LayerSource] | None = None,
    required: tuple[str, ...] = ("parcels", "mains"),
    progress: Progress | None = None,
    stored: StoredRun | None = None,
) -> Workspace:
    """The profile as applied and the validated layers of a workspace (``LayerValidationError`` with every problem).

    ``sources`` replaces the spec's (an upload's checked layers); ``store`` is the GeoPackage whose layers the spec
    means when it names no data, and where runs are recorded; ``stored`` the results of the run the spec came from.
    """
    prof = profile_of(spec)
    sources = layer_sources(spec, store=store) if sources is None else sources
    target = measuring_target(spec, prof)
    overrides: dict[str, str] = {}
    if spec.is_local:
        assume = dict.fromkeys(sources, LOCAL_CRS.to_wkt())
    else:
        # A layer's own CRS, given by name, replaces what its file declares (a .prj that lies); the data's CRS
        # only fills in for layers that declare none.
        overrides = {k: v for k, v in dict(spec.layer_crs).items() if k in sources and v}
        assume = dict.fromkeys(sources, spec.data_crs) if spec.data_crs else {}
    mapping = ColumnMapping(
        columns={k: dict(v) for k, v in (spec.mapping.get("columns") or {}).items()},
        values={k: {f: dict(c) for f, c in v.items()} for k, v in (spec.mapping.get("values") or {}).items()},
    )
    connected, kept = connected_list(spec, store)
    layers = load_layers(
        sources,
        target_crs=target,
        mapping=mapping,
        assume_crs=assume,
        connected_ids=connected,
        progress=progress,
        required=required,
        layer_crs=overrides,
    )
    if kept is not None:
        layers.problems.append(kept)
    ids = frozenset(connected) if connected is not None else None
    return Workspace(spec, prof, layers, store=store, stored=stored, connected_ids=ids)


# The store setting holding the connected-parcels list a run read (its file, column and parcel IDs), so that the
# store is rebuilt as the run saw it when the file has since been moved or deleted.
CONNECTED_KEY = "connected_list"


def connected_list(spec: WorkspaceSpec, store: str | None) -> tuple[set[str] | None, Problem | None]:
    """The connected parcel IDs of ``spec.connected``, read from its file; where the file cannot be read and
    ``store``'s latest run kept that list, the kept copy, with a warning saying so."""
    if not spec.connected:
        return None, None
    try:
        return read_connected_ids(spec.connected, column=spec.connected_column), None
    except LayerError:
        # Only a list moved or deleted is stood in for: one still there and refused (a list naming no parcel) is
        # the list the user means, and a copy kept from an earlier run naming none is no list either.
        saved = _kept_connected(store)
        same = saved is not None and saved.get("path") == os.path.abspath(spec.connected)
        there = os.path.exists(spec.connected)
        if there or not same or saved.get("column") != spec.connected_column or not saved.get("ids"):
            raise
    ids = set(saved.get("ids") or ())
    return ids, Problem(
        "parcels",
        "connected_list_kept",
        "warning",
        f"The connected-parcels list {spec.connected} cannot be read (moved or deleted?): the copy the store kept "
        f"at its latest run ({len(ids):,} parcel IDs) is used. Put the file back, or give --connected with its new "
        "place, to use a newer list.",
    )


def _kept_connected(store: str | None) -> dict | None:
    if not store or not store_exists(store):
        return None
    try:
        text = store_at(store).read_setting(CONNECTED_KEY)
        return json.loads(text) if text else None
    except (LayerError, ValueError):
        return None


def open_store(
    store: str,
    *,
    spec: WorkspaceSpec | None = None,
    required: tuple[str, ...] = ("mains",),
    stored: StoredRun | None = None,
) -> Workspace:
    """The workspace a store's latest run used, rebuilt from the store's own layers (the web app's workspace).

    ``spec`` (what the run recorded) is read from the store when not given; a store never analysed gets the
    default profile and the measuring CRS its layers were checked in (``unanalysed_spec``). ``stored`` holds the
    run's results, read from the store when not given.
    """
    spec = (spec or recorded_spec(store) or unanalysed_spec(store)).replace(data=None)
    if stored is None:
        stored = StoredRun(parcels=read_results(store), record=latest_run(store))
    return open_workspace(spec, store=store, required=required, stored=stored)


def _need(ws: Workspace, *kinds: str) -> None:
    missing = [k for k in kinds if getattr(ws.layers, k, None) is None]
    if missing:
        raise LayerError(
            f"This needs a {' and a '.join(missing)} layer, and the data has none.", fix=Fix("layer", missing[0])
        )


# -- analysis -----------------------------------------------------------------------------------------------------


@dataclass
class RunResult:
    """One analysis run: the parcels with every result column, the measuring lines, buildings, duties, summary."""

    parcels: gpd.GeoDataFrame
    measuring_lines: gpd.GeoDataFrame
    buildings: BuildingsResult | None
    summary: dict
    written: list[str]
    duties: DutiesResult | None = None
    copied: list[str] = dataclasses.field(default_factory=list)  # input layers copied into the store (InputCopies)


def mandates(ws: Workspace, prof: Profile | None = None, **options) -> MandateResult:
    """The mandate analysis on every layer it uses (streets, buildings, service areas, curbs, rights of way)."""
    _need(ws, "parcels", "mains")
    layers = ws.layers
    return analyze_mandates(
        layers.parcels,
        layers.mains,
        streets=layers.streets,
        buildings=layers.buildings,
        service_areas=layers.service_areas,
        curbs=layers.curbs,
        sewer_rights_of_way=layers.sewer_rights_of_way,
        profile=prof or ws.profile,
        **options,
    )


def _assess(
    ws: Workspace,
    parcels: gpd.GeoDataFrame,
    prof: Profile,
    found: MandateResult | None = None,
    *,
    threads: int | None = None,
) -> BuildingsResult:
    layers = ws.layers
    # The analysis already found each building's parcel and each parcel's streets: reused while the parcels are
    # the analysis's, in its order.
    same = found is not None and parcels.index.equals(found.parcels.index)
    return assess_buildings(
        layers.buildings,
        parcels,
        profile=prof,
        streets=layers.streets,
        mains=layers.mains,
        alleys=layers.alleys,
        laterals=layers.laterals,
        building_parcels=found.building_parcels if same else None,
        street_pairs=found.street_pairs if same else None,
        **({"workers": threads} if threads else {}),
    )


def _duties(ws: Workspace, parcels, net=None, connections=None) -> DutiesResult:
    return assess_duties(
        parcels,
        profile=ws.profile,
        network=net,
        connections=connections,
        subdivisions=ws.layers.subdivisions,
        service_areas=ws.layers.service_areas,
    )


def analyse(
    ws: Workspace,
    *,
    notice_date: dt.date | None = None,
    notice_reason: str | None = None,
    out_path: str | None = None,
    locked: bool = False,
    who: str = "sewerplan analyze",
    progress: Progress = _quiet,
    threads: int | None = None,
) -> RunResult:
    """One analysis run: mandates, then (with manholes) the network columns, the further duties, then (with
    buildings and streets) the building results; written to ``out_path`` when given.

    ``threads`` caps the threads the analysis's vectorised steps use (None: as many as the machine has, up to 4);
    a batch gives each of its tasks its share of the cores, so tasks running side by side do not contend.

    A store output (a GeoPackage, or a PostGIS schema ``postgresql://...#schema``) gets the run's results and its
    record (the summary, with the workspace the run used under ``"workspace"``) atomically, under the store's writer
    lock (``locked``: the caller holds it already). A run that read its layers from elsewhere copies them into the
    store in the same step (``input_copies``; the record says which under ``"input_copies"``), so the store alone
    serves the map, traces and later runs; a store with input layers of its own is refused before the analysis runs.
    """
    to_store = bool(out_path) and is_store(out_path)
    # Layers read from elsewhere go into the store with the results; a store with layers of its own is refused
    # here, before the analysis runs.
    copies = input_copies(ws, out_path) if to_store else None
    progress("analysing")
    town = _town_setting_the_period(ws, out_path if to_store else None) if notice_date is not None else None
    prof = with_resolutions(ws.profile, town) if town else None
    result = mandates(ws, prof, notice_date=notice_date, notice_reason=notice_reason, workers=threads)
    parcels = result.parcels
    summary = dict(result.summary)
    if town:  # cited as the letters cite it ("Resolution 9 of 2027; § 196-17E sets no period")
        summary["notice_period_basis"] = period(ws.profile, "mandate.notice_period_days", town).basis
    net = connections = None
    if ws.layers.manholes is not None:
        progress("tracing the network")
        net = network(ws)
        parcels, connections = add_network_results(parcels, net)
        summary["traced"] = int(parcels["downstream_length_ft"].notna().sum())
    progress("finding further duties")
    found = _duties(ws, parcels, net, connections)
    parcels = found.parcels
    summary["duties"] = found.summary
    assessed = None
    if ws.layers.buildings is not None and ws.layers.streets is not None:
        progress("assessing buildings")
        assessed = _assess(ws, parcels, ws.profile, result, threads=threads)
        summary["buildings"] = assessed.summary
    spec = copies.spec if copies is not None else ws.spec
    summary["workspace"] = spec.as_record(store=out_path if to_store else ws.store)
    if copies is not None:
        summary[COPIES_KEY] = copies.record
    elif to_store:  # the store analysed in place: its copies (if an earlier run made them) are copies still
        earlier = (recorded_run(out_path) or {}).get(COPIES_KEY)
        if earlier:
            summary[COPIES_KEY] = earlier
    written: list[str] = []
    if out_path:
        progress(f"writing {store_label(out_path) if to_store else Path(out_path).name}")
        buildings = assessed.buildings if assessed is not None else None
        if to_store:  # the store: one writer at a time, written atomically
            written = write_run(
                out_path,
                parcels,
                result.measuring_lines,
                buildings,
                summary,
                locked=locked,
                who=who,
                inputs=copies.frames if copies is not None else None,
                drop=copies.stale if copies is not None else (),
                settings=_connected_setting(ws),
            )
        else:
            written = write_results(out_path, parcels, result.measuring_lines, buildings)
    copied = list(copies.frames) if copies is not None and written else []
    return RunResult(parcels, result.measuring_lines, assessed, summary, written, found, copied)


def _town_setting_the_period(ws: Workspace, store: str | None) -> TownSettings | None:
    """The town settings beside the run's store (or its data), where they hold the resolution setting the period to
    connect: a run's deadlines are the letters' (Wappinger's § 196-17E leaves the period to the town). A run
    computed none, or one from a value set for the run alone, which the letters then refused beside the act."""
    rule = ws.profile.mandate.notice_period_days
    for place in (store, ws.store, ws.spec.data):
        found = town_file(store=place) if place else None
        if found is not None:
            left_to_town = bool(rule.setting or rule.town_setting)
            try:
                settings = load_town_settings(found)
            except LayerError:
                if left_to_town:
                    raise
                return None  # the law's period stands; a town file the run does not need is the letters' to refuse
            # the law sets the period (Fort Plain's § 144-4): no act replaces it, and one that tries is refused, as
            # the letters refuse it, rather than the run's deadlines ignoring it without a word
            refuse_resolutions_of_the_laws_periods(ws.profile, settings)
            if not left_to_town:
                return None
            return settings if settings and "mandate.notice_period_days" in settings.resolutions else None
    return None


def _connected_setting(ws: Workspace) -> dict[str, str] | None:
    """The connected-parcels list the run read, kept in its store (``CONNECTED_KEY``): a later rebuild of the store
    uses it where the file is gone."""
    if ws.connected_ids is None:
        return None
    path = os.path.abspath(ws.spec.connected)
    kept = {"path": path, "column": ws.spec.connected_column, "ids": sorted(ws.connected_ids)}
    return {CONNECTED_KEY: json.dumps(kept)}


def export_results(path: str, frame: gpd.GeoDataFrame, *, name: str = RESULT_LAYER) -> list[str]:
    """Write a result frame to ``path`` (.gpkg as the layer ``name``, .parquet, .geojson or .csv); returns the
    layers written. A town's store is refused (``export_target``)."""
    export_target(path)
    return write_results(path, frame, name=name)


def export_target(path: str) -> None:
    """Refuse ``path`` as the output of a report (``buildings --out``, ``duties --out``) when it is a town's store, a
    GeoPackage holding an analysis run or the town's layers: the report's rows would replace the run's results
    (``buildings --out town.gpkg`` wrote the buildings over the parcel results the map and notices read)."""
    if output_format(path) != "GPKG" or not store_exists(path):
        return
    try:
        names = store_at(path).layer_names()
    except LayerError:
        return  # not a GeoPackage sewerplan can read: the write says so, and leaves it as it was
    run = recorded_run(path)
    if run is None and not any(n.lower() in INPUT_NAMES for n in names):
        return
    label = store_label(path)
    raise LayerError(
        f"{label} is a town's store (it holds {'an analysis run and ' if run else ''}the town's "
        f"layers): written into it, these results would replace the ones its map and notices read. Write them to a "
        f"file of their own, such as --out {Path(label).with_name(Path(label).stem + '-report.gpkg')}."
    )


def export_qgis(store: str, out: str, *, title: str | None = None) -> dict:
    """A QGIS project of the store's layers, styled and grouped (results, network, base): ``{"output", "layers",
    "crs", "title"}`` (``layers.qgis_project``)."""
    from layers.qgis_project import write_project

    return write_project(store_at(store), out, title=title) | {"store": store_label(store)}


def export_table(path: str, frame: pd.DataFrame) -> str:
    """Write a table (a mailing list, parcels) as a CSV safe to open in a spreadsheet; returns the path."""
    return write_csv(path, frame)


@dataclass
class Readiness:
    """Whether the analysis can run on some layers under one profile, and if not, everything it still needs."""

    profile: str
    municipality: str
    missing: list[ValueError]

    @property
    def ready(self) -> bool:
        return not self.missing


def readiness(layers: Layers, profiles: list[Profile]) -> list[Readiness]:
    """For each profile, what the analysis would refuse these layers for (the checks it makes before measuring):
    a layer to add, a column to map, a value the town must set. Said before any run, so nothing fails late."""
    return [
        Readiness(
            prof.id,
            prof.municipality,
            list(
                missing_inputs(
                    prof, parcels=layers.parcels, streets=layers.streets, buildings=layers.buildings, mains=layers.mains
                )
            ),
        )
        for prof in profiles
    ]


# -- the network --------------------------------------------------------------------------------------------------


def network(ws: Workspace) -> SewerNetwork:
    """The workspace's sewer network, built once (honouring the digitised-direction choice), then kept."""
    with ws.lock:
        net = ws.cache.get("network")
        if net is None:
            _need(ws, "mains")
            layers = ws.layers
            net = build_network(
                layers.mains,
                manholes=layers.manholes,
                outfalls=layers.outfalls,
                profile=ws.profile,
                trust_digitised=ws.spec.digitised_direction or None,
            )
            ws.cache["network"] = net
        return net


def network_if_manholes(ws: Workspace) -> SewerNetwork | None:
    """The network where the data has manholes (analyses, plans and duties use it then), else None."""
    return network(ws) if ws.layers.manholes is not None else None


def check(ws: Workspace) -> list:
    """Every defect of the network, errors first (``analysis.network_checks``)."""
    return check_network(network(ws), profile=ws.profile, manholes=ws.layers.manholes)


def outline(ws: Workspace) -> NetworkOutline:
    """What the network holds, its treatment plants and outfalls, and its separate pieces: the report's head."""
    return network_outline(network(ws))


def connections(ws: Workspace) -> tuple[gpd.GeoDataFrame, pd.DataFrame]:
    """Each parcel's result row and its connection on the network, kept once found.

    From the store's run where the workspace was rebuilt from one (its results are what the page shows); else from
    a mandate analysis under ``connection_profile``.
    """
    with ws.lock:
        cached = ws.cache.get("connections")
    if cached is not None:
        return cached
    net = network(ws)
    if ws.stored is not None:
        parcels = ws.stored.parcels
        if parcels is None:
            raise LayerError("There are no results yet: run the analysis first.")
    else:
        parcels = mandates(ws, connection_profile(ws.profile)).parcels
    found = (parcels, connect_parcels(net, parcels))
    with ws.lock:
        ws.cache["connections"] = found
    return found


def _no_parcel(parcel_id: str, parcels: gpd.GeoDataFrame) -> NotFoundError:
    """A parcel ID the layer does not have, told with one it does have: "No parcel '12.34-1-5'" alone left the user
    guessing how the town writes its IDs."""
    ids = parcels["parcel_id"].dropna().astype(str)
    such = f", such as {ids.iloc[0]!r}" if len(ids) else ""
    return NotFoundError(
        f"No parcel {parcel_id!r} in the parcels layer: give a parcel ID as the parcels layer writes it{such}."
    )


def trace_parcel(ws: Workspace, parcel_id: str) -> Trace:
    """The flow path from a parcel's connection point to its control manhole and the outfall."""
    parcels, conn = connections(ws)
    hit = (parcels["parcel_id"].astype(str) == str(parcel_id)).to_numpy().nonzero()[0]
    if not len(hit):
        raise _no_parcel(parcel_id, parcels)
    return trace_from_parcel(network(ws), str(parcel_id), conn.iloc[hit[0]])


def _node(net: SewerNetwork, manhole_id: str, ws: Workspace | None = None) -> int:
    """The network's node of ``manhole_id``; NotFoundError saying why not (an abandoned or proposed manhole is not
    in the network; the ID written another way) and naming one that is, as a parcel not found is told."""
    if manhole_id in net.node_index:
        return net.node_index[manhole_id]
    manholes = getattr(ws.layers, "manholes", None) if ws is not None else None
    why = ""
    if isinstance(manholes, gpd.GeoDataFrame) and {"manhole_id", "status"} <= set(manholes.columns):
        status = manholes.loc[manholes["manhole_id"].astype(str) == str(manhole_id), "status"].dropna().astype(str)
        if len(status) and status.iloc[0] in ("abandoned", "proposed"):
            why = f": manhole {manhole_id} is {status.iloc[0]} (its status in the manholes layer), so no flow passes it"
    if not why:
        alike = [str(n) for n in net.node_index if str(n).casefold() == str(manhole_id).casefold()]
        why = f": it is written {alike[0]!r}" if alike else ""
    example = next((str(n) for n, is_manhole in zip(net.node_id, net.node_is_manhole, strict=True) if is_manhole), None)
    such = f"; a manhole of the network is, for example, {example!r}" if example and not why else ""
    raise NotFoundError(f"No manhole or node {manhole_id!r} in the network{why}{such}.")


def trace_manhole(ws: Workspace, manhole_id: str) -> Trace:
    """The flow path down from a manhole."""
    net = network(ws)
    return trace_down(net, _node(net, manhole_id, ws))


def sewershed(ws: Workspace, manhole_id: str) -> Sewershed:
    """Everything draining through a manhole: mains, manholes, and the parcels connected or required to connect."""
    net = network(ws)
    node = _node(net, manhole_id, ws)
    draining = conn = None
    has_parcels = ws.layers.parcels is not None if ws.stored is None else ws.stored.parcels is not None
    if has_parcels:
        parcels, conn = connections(ws)
        keep = parcels["status"].isin(["connected", "mandated"]).to_numpy()
        draining, conn = parcels[keep], conn[keep]
    return upstream_of(net, node, conn, draining, profile=ws.profile)


# -- buildings and duties -----------------------------------------------------------------------------------------


def buildings(ws: Workspace, progress: Progress = _quiet) -> BuildingsResult:
    """Every building's case: rear buildings, living units, laterals, manhole connections (``sewerplan
    buildings``): the mandate analysis finds each parcel's connection point, the buildings are assessed on it."""
    _need(ws, "parcels", "mains", "buildings")
    progress("finding connection points")
    found = mandates(ws, connection_profile(ws.profile))
    progress("assessing buildings")
    return _assess(ws, found.parcels, ws.profile, found)


def duties(ws: Workspace, progress: Progress = _quiet) -> DutiesResult:
    """The further duties: grease interceptors, industrial users and their control manholes, subdivisions."""
    progress("analysing")
    parcels = mandates(ws).parcels
    net = conn = None
    if ws.layers.manholes is not None:
        progress("tracing the network")
        net = network(ws)
        parcels, conn = add_network_results(parcels, net)
    progress("finding further duties")
    return _duties(ws, parcels, net, conn)


def subdivisions(ws: Workspace) -> gpd.GeoDataFrame | None:
    """The subdivisions layer with each one's duty to build sewers (``analysis.subdivisions``), or None without one."""
    if ws.layers.subdivisions is None:
        return None
    return assess_subdivisions(ws.layers.subdivisions, profile=ws.profile, service_areas=ws.layers.service_areas)


# -- select by distance -------------------------------------------------------------------------------------------


def select_by_distance(
    ws: Workspace, *, distance_ft: float, parcel_id: str | None = None, geometry: dict | None = None
) -> Notification:
    """The parcels within ``distance_ft`` of a parcel or of a point, line or area drawn on the web map (GeoJSON in
    longitude and latitude), with their owners' mailing list: the public notification workflow.

    The parcels are the run's results where there is a run (they carry the owners), else the parcels as loaded.
    """
    parcels = ws.stored.parcels if ws.stored is not None and ws.stored.parcels is not None else ws.layers.parcels
    if parcels is None:
        raise LayerError("There are no parcels to select from: upload the town's parcels.", fix=Fix("layer", "parcels"))
    if parcel_id is not None:
        hit = (parcels["parcel_id"].astype(str) == str(parcel_id)).to_numpy().nonzero()[0]
        if not len(hit):
            raise _no_parcel(parcel_id, parcels)
        feature = parcels.geometry.iloc[hit[0]]
    else:
        feature = drawn_feature(geometry or {}, target_crs=parcels.crs)
    return parcels_within(parcels, feature, distance_ft=distance_ft, source_id=parcel_id)


# -- the register and the town ------------------------------------------------------------------------------------


def open_register(url: str | None, *, store: str | None, create: bool = False) -> Register:
    """The register: ``url``, else ``SEWERPLAN_DATABASE_URL``, else the one recorded in the store.

    ``RegisterMissingError`` (its ``fix`` names the register) when none exists and ``create`` is not asked.
    """
    try:
        return Register(url, store=store_of(store), create=create)
    except RegisterMissingError as exc:
        exc.fix = Fix("register", exc.url, example="" if store_of(store) else "STORE.gpkg")  # give the store
        raise


def check_register(url: str | None, *, store: str | None) -> None:
    """Refuse a register named by ``url`` or ``SEWERPLAN_DATABASE_URL`` that is not the one the store records
    (``RegisterClashError``), as opening it (``open_register``) does: for a register opened before."""
    check_store_register(url, store=store_of(store))


def record_connection(
    register: Register,
    parcel_id: str,
    status: str,
    *,
    on: dt.date | str,
    actor: str,
    note: str | None = None,
    store: str | None = None,
) -> dict:
    """Record that a parcel without an open notice (held back, or never noticed) connected on ``on``
    (``Register.record``), for `sewerplan notices record` and the notices page alike.

    Refused: a day after today (a connection is recorded once it is made), and a parcel ID the store's parcels do
    not hold (a typo would otherwise be recorded, and the parcel meant still noticed); a store whose parcels cannot
    be read is not checked."""
    from layers.register import parse_date

    day = parse_date(on, "The day it connected")
    if problem := connection_day_problem(day, today=_notices.today()):
        raise LayerError(problem)
    known = _store_parcel_ids(store)
    if known is not None and str(parcel_id) not in known:
        raise LayerError(
            f"Parcel {parcel_id} is not among the parcels of {store_label(store)}: check the ID as the parcels "
            "layer writes it (the map's search finds it)."
        )
    return register.record(parcel_id, status, on=day, actor=actor, note=note)


def _store_parcel_ids(store: str | None) -> set[str] | None:
    """The store's parcel IDs (its latest results, else its parcels layer), or None where it has neither to read."""
    if not store:
        return None
    try:
        found = store_at(store)
        results = found.read_results(["parcel_id"])
        if results is None and "parcels" in found.layer_names():
            results = found.read_columns("parcels", ["parcel_id"])
    except (LayerError, KeyError, ValueError):
        return None
    return None if results is None else set(results["parcel_id"].astype(str))


# The columns ``with_notices_in_force`` adds after the run's deadline: the register's notice whose deadline is the
# parcel's, its status, and that deadline.
NOTICE_COLUMNS = ("notice_id", "notice_status", "notice_deadline", "connected_on")


def notices_in_force(register: Register, parcel_ids: list[str]) -> dict[str, dict]:
    """Each of ``parcel_ids`` that has a notice in the register, with the one whose deadline is its
    (``gisapp.words.notice_in_force``): the Summary's list and the results downloads read them so."""
    found = register.notices_of_parcels(parcel_ids) if parcel_ids else {}
    return {parcel: n for parcel, rows in found.items() if (n := notice_in_force(rows)) is not None}


def with_notices_in_force(frame: pd.DataFrame, register: Register) -> pd.DataFrame:
    """The results with each parcel's notice in the town's register beside the run's ``deadline``: ``notice_id``,
    ``notice_status`` (open, extended, connected, ..., or "recorded connected" for a connection recorded without a
    notice), ``notice_deadline``, the deadline the owner's letter gave (or its extension), and ``connected_on``, the
    day it connected where the register holds it. Empty for a parcel with no notice. The Summary page's list showed
    the notice's deadline while the spreadsheet linked beside it gave the run's own (a run dated March 7 beside
    letters saying May 30), with nothing to tell the two apart."""
    chosen = list(notices_in_force(register, frame["parcel_id"].astype(str).tolist()).items())
    table = pd.DataFrame(  # one row per parcel with a notice, joined by ID: no loop over the parcels
        {
            "notice_id": [n["notice_id"] for _, n in chosen],
            "notice_status": ["recorded connected" if n["notice_type"] == "record" else n["status"] for _, n in chosen],
            "notice_deadline": [None if n["notice_type"] == "record" else n["deadline"] for _, n in chosen],
            # the day it connected, where the register holds it (a notice marked connected with its day, a record)
            "connected_on": [n.get("connected_on") if n["status"] == "connected" else None for _, n in chosen],
        },
        index=pd.Index([p for p, _ in chosen], dtype=object),
    )
    joined = table.reindex(frame["parcel_id"].astype(str).to_numpy())
    out = frame.copy()
    at = list(out.columns).index("deadline") + 1 if "deadline" in out.columns else len(out.columns)
    for offset, name in enumerate(NOTICE_COLUMNS):
        values = joined[name].to_numpy(dtype=object)
        out.insert(at + offset, name, pd.Series(values, index=out.index, dtype=object).where(pd.notna(values), None))
    return out


def register_recorded(register: Register, parcel_ids: list[str]) -> dict[str, int]:
    """How many of ``parcel_ids`` the register records ``connected`` and ``exempt``: each parcel's latest notice not
    cancelled decides (``gisapp.words.register_record``), as in the map popup's Register row. The Summary page says
    it of the run's parcels that must connect; the run's own counts are not changed."""
    wanted = {str(p) for p in parcel_ids}
    listed = register.listing()  # by parcel, then oldest first, as ``notices_of`` gives one parcel's
    listed = listed[listed["parcel_id"].astype(str).isin(wanted)]
    found = {"connected": 0, "exempt": 0}
    for _, rows in listed.groupby("parcel_id", sort=False):
        if (record := register_record(rows.to_dict("records"))) is not None:
            found[record["status"]] += 1
    return found


def saved_plans(url: str | None, *, store: str | None) -> list[dict]:
    """The saved extension scenarios, oldest first, in the register ``open_register`` finds.

    None where that register does not exist yet: the first scenario saved creates it, and looking never does, so a
    store without one simply has no saved scenario. With neither a register nor a store to look in,
    ``RegisterMissingError`` says what to give.
    """
    try:
        register = open_register(url, store=store)
    except RegisterMissingError:
        if url is None and store_of(store) is None:
            raise
        return []
    return register.saved_plans()


def town(path: str | None, *, data: str | None) -> TownSettings | None:
    """The town settings for letters: ``path``, else ``town.toml`` beside the store (or in the data folder)."""
    return load_town_settings(town_file(path, store=data))


# -- notices ------------------------------------------------------------------------------------------------------


def notice_inputs(ws: Workspace, progress: Progress = _quiet) -> _notices.NoticeInputs:
    """The analysed parcels and the layers the letters' maps show, with the input data's checksum.

    From the store's run where the workspace was rebuilt from one; else a fresh analysis. Either way the checksum
    is over the workspace's validated input layers, so the same data gives the same checksum wherever it is read.
    """
    layers = ws.layers
    if ws.stored is not None:
        if ws.stored.parcels is None:
            raise LayerError("Run the analysis first: there are no results to give notice on.")
        results, lines = ws.stored.parcels, ws.stored.lines
        assessed = ws.stored.buildings
        summary = ws.stored.record
    else:
        progress("analysing")
        result = mandates(ws)
        results, lines = result.parcels, result.measuring_lines
        # The workspace as a store's run record keeps it: the register records the values set on the profile.
        summary = result.summary | {"workspace": ws.spec.as_record(store=ws.store)}
        assessed = None
        if layers.buildings is not None and layers.streets is not None:
            progress("assessing buildings")
            assessed = _assess(ws, results, ws.profile).buildings
    frames = {
        kind: getattr(layers, kind)
        for kind in ("parcels", "mains", "streets", "buildings", "service_areas", "alleys", "laterals")
    }
    return _notices.NoticeInputs(
        results=results,
        lines=lines,
        mains=layers.mains,
        streets=layers.streets,
        buildings=assessed if assessed is not None else layers.buildings,
        summary=summary,
        fingerprints=({"store": ws.store} if ws.store else {}) | dict(layers.sources) | {"parcels": len(results)},
        checksum=_notices.data_checksum(frames),
    )


@dataclass
class NoticePreview:
    """Who would get a connection notice: the plan, the mailing rows, the document previews print, and what an
    issue of it needs (the inputs, the profile with the town's periods, the town settings)."""

    plan: NoticePlan
    rows: pd.DataFrame
    doc: dict
    inputs: _notices.NoticeInputs
    profile: Profile
    town: TownSettings | None
    already: int


def preview_notices(
    ws: Workspace,
    register: Register,
    *,
    town: TownSettings | None,
    notice_date: dt.date,
    notice_reason: str | None = None,
    hazard=None,
    occupant: bool = False,
    choice: NoticeChoice | None = None,
    progress: Progress = _quiet,
) -> NoticePreview:
    """Who would get a connection notice, grouped by mailing address; who is held back and why. Records nothing.

    ``already`` counts the mandated parcels the register already has a notice (or a connection) for. ``occupant``:
    the copies to the occupant an issue with them would write are counted (``gisapp.notices.preview``).
    ``choice``: only the mandated parcels it takes in (by ID, by street), the same for the command and the page;
    ``already`` and ``mandated`` count those.
    """
    inputs = notice_inputs(ws, progress)
    prof = with_resolutions(ws.profile, town)
    plan, rows, doc = _notices.preview(
        register,
        inputs,
        profile=prof,
        town=town,
        notice_date=notice_date,
        notice_reason=notice_reason,
        hazard=hazard,
        occupant=occupant,
        choice=choice,
    )
    mandated = _notices.mandated_parcels(inputs.results, plan)
    already = len(mandated & register.excluded_parcels())
    # Said with the preview: after a re-run (under another profile too) "0 notices" alone read as nobody mandated.
    doc["already_noticed"] = already
    # A law binding only an area, and no service area to show it: every parcel was taken to lie inside, so letters
    # quoting "situated within the area" may go to owners it does not bind. Said before they go out (a warning, with
    # the mandated count the run found; the profile's own reading, as its note says, is that the data is the area).
    doc["area_unmapped"] = unmapped_area(ws.profile, ws.layers.service_areas)
    doc["mandated"] = len(mandated)
    return NoticePreview(plan, rows, doc, inputs, prof, town, already)


def check_issue(preview: NoticePreview, *, root: str | Path) -> None:
    """Refuse the previewed batch where ``issue_notices`` would (``gisapp.notices.check_issue``), making nothing:
    checked before the town's first register is created, so a refused ``issue --new`` leaves no register."""
    _notices.check_issue(preview.plan, kind="connection", profile=preview.profile, town=preview.town, root=root)


def issue_notices(
    preview: NoticePreview,
    register: Register,
    *,
    root: str | Path,
    actor: str,
    per_parcel: bool = False,
    occupant: bool = False,
    bom: bool = True,
) -> dict:
    """Issue the previewed connection notices as one batch (``gisapp.notices.issue_batch``); the document's
    ``already_open`` counts every mandated parcel already noticed."""
    doc = _notices.issue_batch(
        register,
        preview.plan,
        kind="connection",
        profile=preview.profile,
        town=preview.town,
        root=root,
        actor=actor,
        inputs=preview.inputs,
        per_parcel=per_parcel,
        occupant=occupant,
        bom=bom,
    )
    doc["already_open"] += preview.already
    doc["area_unmapped"] = preview.doc.get("area_unmapped")  # said again with the batch, as the preview said it
    if "chosen" in preview.doc:  # the parcels chosen for it (by ID, by street), as the preview said them
        doc["chosen"] = preview.doc["chosen"]
    return doc


def violations(
    register: Register,
    *,
    profile: Profile,
    town: TownSettings | None,
    today: dt.date,
    root: str | Path | None,
    actor: str,
    store: str | Path | None = None,
    occupant: bool = False,
) -> dict:
    """Violation notices for the connection notices overdue on ``today``; issued with ``root``, else a preview.

    ``occupant``: a copy of each to "Occupant" at the site address where the owner mails elsewhere, as a connection
    batch's; the site's city, state and ZIP code, which the register does not keep, come from the store's latest
    analysis, so it is refused (``LayerError``) without one.

    With a ``store`` its latest analysis decides who is still in violation: a parcel it finds connected is left out
    (``connected``), one it no longer finds mandated is listed for review (``review``); ``analysis`` says which run
    (None where there is no store or no analysis in it, and nothing is left out). That run must be under ``profile``:
    a store keeps only its latest run, and one under another profile (a what-if run under Poughkeepsie) answers under
    another law's distance and rules, so it is refused (``LayerError``) with the run to make first.
    """
    record = recorded_run(store) if store_of(store) and store_exists(store) else None
    _same_profile_run(record, profile, store)  # before the results are read: refused, they are not needed
    if occupant and record is None:
        where = f"{store_label(store)} holds no analysis" if store_of(store) else "no store was given"
        raise CopiesNeedAnalysisError(
            "A copy to the occupant goes to the site address, whose city and ZIP code the register does not keep: "
            f"they are read from the town store's latest analysis, and {where}. Analyse the town into its store "
            "first, or give the violation notices without copies to the occupant."
        )
    # the site's city, state and ZIP code for the occupant's copies; whether each property is served by a private
    # system, where the town's data says, for the duties its letter quotes (§ 168-22.3C)
    optional = (("site_city", "site_state", "site_zip") if occupant else ()) + ("private_system",)
    current = None if record is None else _with_columns(store, optional)
    doc = _notices.violations(
        register,
        profile=with_resolutions(profile, town),
        town=town,
        today=today,
        root=root,
        actor=actor,
        current=current,
        occupant=occupant,
    )
    run = None if current is None else {k: (record or {}).get(k) for k in ("run_at", "profile")}
    if run is not None:  # a notice under another law needs a run under that law: the command that makes it
        commands = {law: analyse_again(store, law, record) for law in {h["profile"] for h in doc["other_profile"]}}
        for held in doc["other_profile"]:
            held["analyse_again"] = commands[held["profile"]]
    return doc | {"analysis": run}


class CopiesNeedAnalysisError(LayerError):
    """``violations`` with copies to the occupant, refused: the store holds no analysis to read the site's city and
    ZIP code from (the notices page words it as its own box and button)."""


class OtherProfileRunError(LayerError):
    """``violations`` refused: the store's latest run was under ``ran``, not the violations' ``profile`` (the notices
    page words the run to make as its own, the map's Run form, where the command line names a command)."""

    def __init__(self, message: str, *, ran: str, profile: str, run_at: str | None) -> None:
        super().__init__(message)
        self.ran, self.profile, self.run_at = ran, profile, run_at


def _with_columns(store: str | Path, optional: tuple[str, ...]) -> pd.DataFrame | None:
    """The latest analysis's parcel status with each of the ``optional`` columns its parcels have (a town's data may
    lack any of them; copies to the occupant are then held back saying why, and a private system is the profile's
    reading), for violation notices: the columns are listed from the results' schema and read in one read (one
    snapshot of a database; one pass over a town's results, not one a column)."""
    have = set(results_columns(store) or ())
    return read_results(store, columns=("parcel_id", "status", *(c for c in optional if c in have)))


def _same_profile_run(record: dict | None, profile: Profile, store: str | Path | None) -> None:
    """Refuse a store whose latest run was under another profile than the violations' own (see ``violations``)."""
    ran = (record or {}).get("profile")
    if not ran or ran == profile.id:
        return
    raise OtherProfileRunError(
        f"The latest analysis in {store_label(store)} ({record.get('run_at')}) ran under the {ran} profile, not "
        f"{profile.id}, and a store keeps only its latest run, so it cannot say which of {profile.id}'s overdue "
        f"parcels have connected or are no longer mandated: run `{analyse_again(store, profile.id, record)}` first, "
        "then the violations again.",
        ran=ran,
        profile=profile.id,
        run_at=record.get("run_at"),
    )


def analyse_again(store: str | Path, profile: str, record: dict | None = None) -> str:
    """The command that analyses ``store``'s data again under ``profile``, writing the run into the store;
    ``record``, the store's latest run record where the caller has read it already."""
    label = store_label(store)
    read = ((record or recorded_run(store) or {}).get("workspace") or {}).get("data") or label
    return f"sewerplan analyze --profile {profile} --data {read} --out {label}"


settle = _notices.settle
batch_interrupted = _notices.interrupted
resume = _notices.resume


# -- plans --------------------------------------------------------------------------------------------------------


def proposed_line(
    ws: Workspace,
    *,
    path: str | None = None,
    streets_run: str | None = None,
    geometry: dict | None = None,
    name: str | None = None,
    proposed_crs: str | None = None,
):
    """The proposed main: a file's line, a run of named streets, or a line drawn on the web map (GeoJSON); and a
    note for the user about how it was read, or None.

    ``proposed_crs`` is the CRS the user gave for the file (one that declares none, or a wrong one).

    A file is read the one way for `sewerplan plan --proposed` and the map's "load" (its CRS, a MultiLineString as
    QGIS saves a line, a plan's own export as its proposed main alone, with a note saying so); ``name`` is the file
    as its user knows it (the map's is a temporary copy)."""
    _need(ws, "parcels", "mains")
    crs = ws.layers.parcels.crs
    if streets_run:
        return street_run(ws.layers.streets, streets_run), None
    from layers.read import check_proposed_place, proposed_from_geojson

    note = None
    if path:
        assume = None if ws.spec.is_local else ws.spec.data_crs
        line, note = read_proposed(path, target_crs=crs, assume_crs=assume, crs=proposed_crs, name=name)
        label = f"The proposed main ({Path(name or path).name})"
    else:
        line = proposed_from_geojson(geometry or {}, target_crs=crs)
        label = "The drawn main"
    check_proposed_place(line, label=label, town=[ws.layers.parcels, ws.layers.mains], from_file=bool(path))
    return line, note


def evaluate_plan(
    ws: Workspace,
    line,
    *,
    diameter_in: float,
    name: str,
    material: str | None = None,
    register: Register | None = None,
    replace: bool = False,
):
    """A planned extension on the workspace's layers and network; saved in ``register`` when given.

    A saved scenario of the same name is replaced only when ``replace`` says so: saving over it silently lost a
    planner's alternative. Names are checked before anything is evaluated.

    Returns the PlanResult and the document `sewerplan plan --json` prints: the plan, its name and the profile
    as applied (id, version and any values the user set).
    """
    import shapely

    from analysis.plans import plan_extension

    name = _plan_name(name, register, replace)
    _need(ws, "parcels", "mains")
    layers, prof = ws.layers, ws.profile
    result = plan_extension(
        line,
        diameter_in=diameter_in,
        material=material,
        profile=prof,
        parcels=layers.parcels,
        mains=layers.mains,
        streets=layers.streets,
        buildings=layers.buildings,
        service_areas=layers.service_areas,
        curbs=layers.curbs,
        sewer_rights_of_way=layers.sewer_rights_of_way,
        network=network_if_manholes(ws),
    )
    overrides = {key: rule.value for key, rule in prof.rules().items() if rule.overridden}
    doc = result.as_dict() | {
        "name": name,
        "profile": prof.id,
        "profile_version": prof.version,
        "profile_overrides": overrides,
        "evaluated_on": dt.date.today().isoformat(),
    }
    if register is not None:
        saved = register.save_plan(
            name,
            profile=prof.id,
            diameter_in=diameter_in,
            wkt=shapely.to_wkt(result.line),  # as laid: a part drawn past its manhole is not in the plan
            crs=layers.parcels.crs.to_string(),
            result=doc,
            replace=replace,
        )
        if saved is not None:  # saved by someone else while this one was evaluated
            raise _already_saved(name, saved)
    return result, doc


def _plan_name(name: str, register: Register | None, replace: bool) -> str:
    """The scenario's name, refused when empty, too long to keep whole, or (saving) already saved, unless replaced.

    A line break or other control character is refused: such a name was saved, but its page and exports could
    not be opened by name afterwards. So are ``/`` and ``\\`` and a name that is ``.`` or ``..``: the scenarios
    page links to ``/plans/NAME.pdf``, and a browser read ``Option A/../draft`` as folders, opening the scenario
    ``draft``'s board PDF from the other's link. Checked here, for the web and the command line alike."""
    name = name.strip()
    if not name:
        raise LayerError("Give the scenario a name.")
    if not name.isprintable():
        raise LayerError(
            f"A scenario's name must be one line of text without control characters; {name!r} is not. Rename it."
        )
    folders = [c for c in PLAN_NAME_NOT_ALLOWED if c in name]
    if folders or name in {".", ".."}:
        what = f"holds {' and '.join(folders)}" if folders else "is only dots"
        renamed = name.replace("/", "-").replace("\\", "-")
        instead = f'Rename it, e.g. "{renamed}".' if folders else "Give it a name with a word in it."
        raise LayerError(
            "A scenario's name cannot contain / or \\, nor be . or .. alone: the addresses of its files would read "
            f'them as folders, and lead to another scenario\'s. "{name}" {what}. {instead}'
        )
    if len(name) > PLAN_NAME_MAX:
        raise LayerError(
            f"A scenario's name can be at most {PLAN_NAME_MAX} characters; this one has {len(name)}. Shorten it: "
            "names are how saved scenarios are told apart."
        )
    saved = register.saved_plan(name) if register is not None and not replace else None
    if saved is not None:  # refused before the evaluation; save_plan refuses again, atomically, after it
        raise _already_saved(name, saved)
    return name


def _already_saved(name: str, saved: dict) -> LayerError:
    """The refusal to save over a saved scenario; its ``fix`` lets the CLI name --replace and the map its checkbox."""
    return LayerError(
        f"A scenario named {name!r} is saved already ({saved['diameter_in']:g}-inch main, saved "
        f"{str(saved['created_at'])[:10]}). Give this one another name, or replace the saved one.",
        fix=Fix("replace"),
    )


def saved_plan_profile(plan: dict) -> Profile:
    """The profile a saved scenario was evaluated under, with the values set for it."""
    return profile(plan["profile"], settings=(plan.get("result") or {}).get("profile_overrides") or None)


def plan_pdf(
    path, doc: dict, layers: Layers, prof: Profile, *, line, preparer: str | None, today: dt.date | None = None
) -> str:
    """The board's PDF of a plan, with the town's layers on its map (CLI and web alike)."""
    from layers.board import write_plan_summary

    return write_plan_summary(
        path,
        doc.get("name") or "scenario",
        doc,
        profile=prof,
        line=line,
        parcels=layers.parcels,
        streets=layers.streets,
        mains=layers.mains,
        manholes=layers.manholes,
        preparer=preparer,
        today=today,
    )


def export_plan(path: str, doc: dict, line, layers: Layers) -> list[str]:
    """A plan and its geometry as .gpkg or .geojson."""
    return write_plan(str(path), doc, line, layers.parcels, crs=layers.parcels.crs)


# -- printing a map view ------------------------------------------------------------------------------------------


def print_map(path: str | Path, layers, *, bbox_lonlat: tuple[float, float, float, float], text) -> dict:
    """One page of the map view ``bbox_lonlat`` for a board packet (``layers.mapsheet``): title, the map with a
    scale bar and north arrow, the legend with counts, the date and the profile."""
    from layers.mapsheet import write_map_sheet

    return write_map_sheet(path, layers, bbox_lonlat=bbox_lonlat, text=text)


__all__ = [
    "CONNECTION_SEARCH_FT",
    "COPIES_KEY",
    "DEFAULT_PROFILE",
    "InputCopies",
    "NoticePreview",
    "Readiness",
    "RunResult",
    "analyse",
    "batch_interrupted",
    "buildings",
    "check",
    "connection_profile",
    "connections",
    "duties",
    "evaluate_plan",
    "check_output",
    "export_plan",
    "export_qgis",
    "export_results",
    "export_table",
    "issue_notices",
    "layer_sources",
    "mandates",
    "measuring_target",
    "network",
    "input_copies",
    "network_if_manholes",
    "notice_inputs",
    "open_register",
    "check_register",
    "open_store",
    "open_workspace",
    "plan_pdf",
    "preview_notices",
    "notice_reasons_by_profile",
    "print_map",
    "profile",
    "profile_names",
    "profile_of",
    "profiles",
    "proposed_line",
    "readiness",
    "reads_store",
    "results_without_inputs",
    "recorded_run",
    "recorded_spec",
    "unanalysed_spec",
    "checked_spec",
    "resume",
    "saved_plan_profile",
    "saved_plans",
    "select_by_distance",
    "settle",
    "sewershed",
    "store_of",
    "subdivisions",
    "town",
    "trace_manhole",
    "trace_parcel",
    "violations",
]
