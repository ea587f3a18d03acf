"""One analysis run, as `sewerplan analyze` and the web page's "Run analysis" both do it.

Mandate analysis, then (with manholes) the network columns, then the further duties (grease interceptors, industrial
users, subdivisions), then (with buildings and streets) the building results, then writing and recording the run.
Each step reports through ``progress(text)``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass

import geopandas as gpd

from analysis.buildings import BuildingsResult, assess_buildings
from analysis.duties import DutiesResult, assess_duties
from analysis.mandate import analyze_mandates
from analysis.network import build_network
from analysis.profiles import Profile
from analysis.trace import add_network_results
from layers.read import Layers
from layers.store import write_run
from layers.write import output_format, write_results


@dataclass
class RunResult:
    parcels: gpd.GeoDataFrame
    measuring_lines: gpd.GeoDataFrame
    buildings: BuildingsResult | None
    summary: dict
    written: list[str]
    duties: DutiesResult | None = None


def analyse_layers(layers: Layers, profile: Profile, **options):
    """The mandate analysis on every layer it uses (streets, buildings, service areas), as every command runs it."""
    return analyze_mandates(
        layers.parcels,
        layers.mains,
        streets=layers.streets,
        buildings=layers.buildings,
        service_areas=layers.service_areas,
        curbs=layers.curbs,
        sewer_rights_of_way=layers.sewer_rights_of_way,
        profile=profile,
        **options,
    )


def duties_on_layers(layers: Layers, profile: Profile, parcels, network=None, connections=None) -> DutiesResult:
    """The further duties (discharges, subdivisions) for mandate results, as every command finds them."""
    return assess_duties(
        parcels,
        profile=profile,
        network=network,
        connections=connections,
        subdivisions=layers.subdivisions,
        service_areas=layers.service_areas,
    )


def plan_on_layers(
    layers: Layers,
    profile: Profile,
    line,
    *,
    diameter_in: float,
    name: str,
    material: str | None = None,
    network=None,
    register=None,
) -> tuple:
    """A planned extension on the town's layers, as the CLI and the web page evaluate it; saved when given a register.

    Returns the PlanResult and the document `sewerplan plan --json` prints: the plan, its name and the profile
    as applied (id, version and any values the user set).
    """
    import shapely

    from analysis.plans import plan_extension

    result = plan_extension(
        line,
        diameter_in=diameter_in,
        material=material,
        profile=profile,
        parcels=layers.parcels,
        mains=layers.mains,
        streets=layers.streets,
        buildings=layers.buildings,
        service_areas=layers.service_areas,
        network=network,
    )
    overrides = {key: rule.value for key, rule in profile.rules().items() if rule.overridden}
    doc = result.as_dict() | {
        "name": name,
        "profile": profile.id,
        "profile_version": profile.version,
        "profile_overrides": overrides,
        "evaluated_on": dt.date.today().isoformat(),
    }
    if register is not None:
        register.save_plan(
            name,
            profile=profile.id,
            diameter_in=diameter_in,
            wkt=shapely.to_wkt(line),
            crs=layers.parcels.crs.to_string(),
            result=doc,
        )
    return result, doc


def plan_pdf(
    path, doc: dict, layers: Layers, profile: Profile, *, line, preparer: str | None, today: dt.date | None = None
) -> str:
    """The board's PDF of a plan, with the town's layers on its map (CLI and web alike)."""
    from layers.board import write_plan_summary

    return write_plan_summary(
        path,
        doc.get("name") or "scenario",
        doc,
        profile=profile,
        line=line,
        parcels=layers.parcels,
        streets=layers.streets,
        mains=layers.mains,
        manholes=layers.manholes,
        preparer=preparer,
        today=today,
    )


def run_analysis(
    layers: Layers,
    profile: Profile,
    *,
    notice_date: dt.date | None = None,
    notice_reason: str | None = None,
    trust_digitised: bool | None = None,
    out_path: str | None = None,
    progress: Callable[[str], None] = lambda text: None,
) -> RunResult:
    progress("analysing")
    result = analyse_layers(layers, profile, notice_date=notice_date, notice_reason=notice_reason)
    parcels = result.parcels
    summary = dict(result.summary)
    net = connections = None
    if layers.manholes is not None:
        progress("tracing the network")
        net = build_network(
            layers.mains,
            manholes=layers.manholes,
            outfalls=layers.outfalls,
            profile=profile,
            trust_digitised=trust_digitised,
        )
        parcels, connections = add_network_results(parcels, net)
        summary["traced"] = int(parcels["downstream_length_ft"].notna().sum())
    progress("finding further duties")
    duties = duties_on_layers(layers, profile, parcels, net, connections)
    parcels = duties.parcels
    summary["duties"] = duties.summary
    assessed = None
    if layers.buildings is not None and layers.streets is not None:
        progress("assessing buildings")
        same_parcels = parcels.index.equals(result.parcels.index)
        assessed = assess_buildings(
            layers.buildings,
            parcels,
            profile=profile,
            streets=layers.streets,
            mains=layers.mains,
            alleys=layers.alleys,
            laterals=layers.laterals,
            # The analysis already found each building's parcel; reuse it while the parcels are in its order.
            building_parcels=result.building_parcels if same_parcels else None,
            street_pairs=result.street_pairs if same_parcels else None,
        )
        summary["buildings"] = assessed.summary
    written: list[str] = []
    if out_path:
        progress(f"writing {out_path}")
        buildings = assessed.buildings if assessed is not None else None
        if output_format(out_path) == "GPKG":  # the store: one writer at a time, swapped in atomically
            written = write_run(out_path, parcels, result.measuring_lines, buildings, summary)
        else:
            written = write_results(out_path, parcels, result.measuring_lines, buildings)
    return RunResult(parcels, result.measuring_lines, assessed, summary, written, duties)
