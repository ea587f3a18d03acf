"""One analysis run, as `sewerplan analyze` and the web page's "Run analysis" both do it.

Mandate analysis, then (with manholes) the network columns, then (with buildings and streets) the building
results, then writing and recording the run. Each step reports through ``progress(text)``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass

import geopandas as gpd

from analysis.buildings import BuildingsResult, assess_buildings
from analysis.mandate import analyze_mandates
from analysis.network import build_network
from analysis.profiles import Profile
from analysis.trace import add_network_results
from layers.read import Layers
from layers.store import record_run
from layers.write import output_format, write_results


@dataclass
class RunResult:
    parcels: gpd.GeoDataFrame
    measuring_lines: gpd.GeoDataFrame
    buildings: BuildingsResult | None
    summary: dict
    written: list[str]


def analyse_layers(layers: Layers, profile: Profile, **options):
    """The mandate analysis on every layer it uses (streets, buildings, service areas), as every command runs it."""
    return analyze_mandates(
        layers.parcels,
        layers.mains,
        streets=layers.streets,
        buildings=layers.buildings,
        service_areas=layers.service_areas,
        profile=profile,
        **options,
    )


def plan_on_layers(
    layers: Layers, profile: Profile, line, *, diameter_in: float, name: str, network=None, register=None
) -> tuple:
    """A planned extension on the town's layers, as the CLI and the web page evaluate it; saved when given a register.

    Returns the PlanResult and the document `sewerplan plan --json` prints.
    """
    import shapely

    from analysis.plans import plan_extension

    result = plan_extension(
        line,
        diameter_in=diameter_in,
        profile=profile,
        parcels=layers.parcels,
        mains=layers.mains,
        streets=layers.streets,
        buildings=layers.buildings,
        service_areas=layers.service_areas,
        network=network,
    )
    doc = result.as_dict() | {"name": name, "profile": profile.id}
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
    if layers.manholes is not None:
        progress("tracing the network")
        net = build_network(
            layers.mains,
            manholes=layers.manholes,
            outfalls=layers.outfalls,
            profile=profile,
            trust_digitised=trust_digitised,
        )
        parcels, _ = add_network_results(parcels, net)
        summary["traced"] = int(parcels["downstream_length_ft"].notna().sum())
    assessed = None
    if layers.buildings is not None and layers.streets is not None:
        progress("assessing buildings")
        assessed = assess_buildings(
            layers.buildings,
            parcels,
            profile=profile,
            streets=layers.streets,
            mains=layers.mains,
            alleys=layers.alleys,
            laterals=layers.laterals,
        )
        summary["buildings"] = assessed.summary
    written: list[str] = []
    if out_path:
        progress(f"writing {out_path}")
        written = write_results(
            out_path, parcels, result.measuring_lines, assessed.buildings if assessed is not None else None
        )
        if output_format(out_path) == "GPKG":
            record_run(out_path, summary)
    return RunResult(parcels, result.measuring_lines, assessed, summary, written)
