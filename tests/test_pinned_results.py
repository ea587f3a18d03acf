"""The sample town's full result tables, pinned: a speed-up must change no answer.

Each digest is a SHA-256 of the result table as text (every parcel's status, main, distances rounded to 0.01 ft,
connection point, rule, section and reason; every building's parcel, verdict and reason), computed before the
analysis was rewritten for speed (issue 18). A refactor that changes any one answer in 2,000 parcels and 2,100
buildings under any of the three ordinances changes a digest. When an answer is meant to change, the new digest
is set here in the same commit, with the reason in its message.
"""

from __future__ import annotations

import datetime as dt
import hashlib

import numpy as np
import pandas as pd
import pytest

from analysis.buildings import assess_buildings
from analysis.mandate import analyze_mandates
from analysis.profiles import load_profile
from layers.crs import measuring_crs
from layers.read import find_layers, load_layers
from layers.sample import sample_town
from layers.write import write_layers

PARCEL_COLUMNS = [
    "parcel_id",
    "status",
    "main_id",
    "distance_ft",
    "boundary_distance_ft",
    "measured_from",
    "abuts_sewered_street",
    "occupied",
    "occupied_source",
    "connected_flag",
    "rule",
    "section",
    "reason",
    "deadline",
    "notice_reason",
    "street_name_main",
    "connection_x",
    "connection_y",
]
BUILDING_COLUMNS = [
    "building_id",
    "parcel_id",
    "qualifies",
    "units",
    "units_source",
    "units_unknown",
    "rear_building",
    "front_building_id",
    "lot_type",
    "shared_lateral",
    "required_laterals",
    "manhole_connection_case",
    "section",
    "reason",
]
NOTICE = {"fort-plain": (dt.date(2026, 3, 2), None), "poughkeepsie": (dt.date(2026, 3, 2), "public_health_hazard")}
# Wappinger's § 196-17E sets no distance (a profile setting the town must give); 150 ft as in the other tests.
OVERRIDES = {"wappinger": {"mandate.distance_ft": "150"}}
NESTED_BRACKETS = r"\([^()]*\([^()]*\)[^()]*\)"
PINNED = {
    "fort-plain": "5c1d37b35a7c66bc2730d41b0c00d3fd253213385a005beb2ab4efc05b6c65ec",
    "wappinger": "c30ccd536a15dfe4792371cf4d2d422d247350caab18bbf772dbd6ef6063dbab",
    "poughkeepsie": "2d5026e6e1e21e0f46958d5ac489b97a98f8d42be1a79cecb9aaeebbc06beb08",
}
PINNED_BUILDINGS = {
    "fort-plain": "f95883320f458f8a31a68d5b67b2c88ccfd43fdf56bf57ee31e25bed2127b91f",
    "wappinger": "a6851658e7796bc83beb5969e7d50dfd8ac8cadc9fdf1c451985584bbc1c6689",
    "poughkeepsie": "f56040d426a984e309343c9c555a99f0fb6ddf586910b571a7ea6e46e3cf6368",
}


def digest(frame: pd.DataFrame, columns: list[str]) -> str:
    """SHA-256 of the columns as text: numbers to 0.01, missing values as empty fields."""
    table = frame[columns].copy()
    for name in columns:
        if pd.api.types.is_float_dtype(table[name]):
            table[name] = [f"{v:.2f}" if np.isfinite(v) else "" for v in table[name].to_numpy(float)]
    text = table.astype(object).where(table.notna(), "").astype(str).to_csv(index=False, lineterminator="\n")
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture(scope="module")
def town(tmp_path_factory):
    path = tmp_path_factory.mktemp("pinned") / "town.gpkg"
    write_layers(str(path), sample_town(2000))
    return load_layers(find_layers(str(path)), target_crs=measuring_crs("EPSG:2260"))


def analysed(town, name: str, workers: int | None = None):
    """The sample town analysed under the profile ``name`` with its pinned settings and notice."""
    date, reason = NOTICE.get(name, (None, None))
    return analyze_mandates(
        town.parcels,
        town.mains,
        streets=town.streets,
        buildings=town.buildings,
        profile=load_profile(name, overrides=OVERRIDES.get(name)),
        notice_date=date,
        notice_reason=reason,
        workers=workers,
    )


@pytest.mark.parametrize("name", sorted(PINNED))
def test_sample_town_results_are_unchanged(town, name):
    profile = load_profile(name, overrides=OVERRIDES.get(name))
    result = analysed(town, name)
    assert result.parcels.index.equals(town.parcels.index)
    assert digest(result.parcels, PARCEL_COLUMNS) == PINNED[name]
    buildings = assess_buildings(
        town.buildings, result.parcels, profile=profile, streets=town.streets, mains=town.mains
    ).buildings
    assert buildings.index.equals(town.buildings.index)
    assert digest(buildings, BUILDING_COLUMNS) == PINNED_BUILDINGS[name]
    # A citation in a sentence carries its flags as clauses: never "(§ 144-9 (section number derived))".
    for reasons in (result.parcels["reason"], buildings["reason"]):
        nested = reasons.dropna().astype(str).str.contains(NESTED_BRACKETS)
        assert not nested.any(), reasons.dropna()[nested.to_numpy()].iloc[0]
    # The same answers when the assessment reuses the analysis's building lookup and street pairs.
    reused = assess_buildings(
        town.buildings,
        result.parcels,
        profile=profile,
        streets=town.streets,
        mains=town.mains,
        building_parcels=result.building_parcels,
        street_pairs=result.street_pairs,
    ).buildings
    assert digest(reused, BUILDING_COLUMNS) == PINNED_BUILDINGS[name]


@pytest.mark.parametrize("name", sorted(PINNED))
def test_the_same_results_on_one_thread_and_on_several(town, name):
    """Steps run beside each other (occupancy beside the nearest-main search, the reasons beside the frames) only
    with more than one thread; one thread runs them in order. Both give the pinned answers, column for column."""
    runs = [analysed(town, name, workers) for workers in (1, 3)]
    for result in runs:
        assert digest(result.parcels, PARCEL_COLUMNS) == PINNED[name]
    one, several = runs
    pd.testing.assert_frame_equal(one.parcels, several.parcels)
    pd.testing.assert_frame_equal(one.measuring_lines, several.measuring_lines)
    assert np.array_equal(one.building_parcels, several.building_parcels)
