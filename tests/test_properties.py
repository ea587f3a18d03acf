"""Properties of the mandate analysis and of layer validation on generated towns (hypothesis).

Each town is a handful of parcels (boxes) and mains (lines of two or three vertices) of mixed sewer type, status
and ownership, with street centrelines, placed near Fort Plain in New York East feet. The invariants:

- every parcel gets exactly one status, and the output keeps the input's parcels, index and CRS;
- a distance is never negative, and is the planar distance (shapely.distance) to the nearest counting main;
- moving a main farther from a parcel never makes that parcel mandated;
- no result depends on the order of the input rows, not even which of two exactly equally near mains decides;
- swapped axes are always detected: a [lat, lon] layer anywhere in the measuring CRS's area, and a projected layer
  whose swap moves it farther from the other layers than layers may lie apart.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pyproj import Transformer
from shapely.geometry import LineString, box

from analysis.mandate import STATUSES, analyze_mandates
from analysis.profiles import load_profile
from layers.crs import FAR_LAYER_FT, measuring_crs
from layers.errors import LayerValidationError
from layers.read import LayerSource, load_layers
from tests.conftest import CRS, NY_ORIGIN

WAPPINGER = load_profile("wappinger", overrides={"mandate.distance_ft": "150"})  # distance alone decides
FORT_PLAIN = load_profile("fort-plain")  # distance and the abutting street decide
TARGET = measuring_crs("EPSG:2260")
SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SWAP_SETTINGS = settings(SETTINGS, max_examples=15)  # each example writes and reads three files

coordinate = st.floats(-1500, 1500, allow_nan=False, allow_subnormal=False)
side = st.floats(10, 300, allow_nan=False)


@st.composite
def towns(draw) -> tuple[gpd.GeoDataFrame, gpd.GeoDataFrame, gpd.GeoDataFrame]:
    """Parcels, mains and streets near Fort Plain, with every kind of main the profiles tell apart."""
    lots = draw(st.lists(st.tuples(coordinate, coordinate, side, side), min_size=1, max_size=12))
    parcels = gpd.GeoDataFrame(
        {
            "parcel_id": [f"P{i}" for i in range(len(lots))],
            "occupied": draw(st.lists(st.booleans(), min_size=len(lots), max_size=len(lots))),
            "connected": draw(st.lists(st.sampled_from([False, False, True]), min_size=len(lots), max_size=len(lots))),
        },
        geometry=[box(x, y, x + w, y + h) for x, y, w, h in lots],
        crs=CRS,
    )
    pipes = draw(
        st.lists(
            st.tuples(
                st.lists(st.tuples(coordinate, coordinate), min_size=2, max_size=3, unique=True),
                st.sampled_from(["sanitary", "sanitary", None, "storm", "combined", "force"]),
                st.sampled_from(["active", "active", None, "abandoned", "proposed"]),
                st.sampled_from(["public", None, "private"]),
            ),
            min_size=1,
            max_size=6,
        )
    )
    lines = [LineString(points) for points, *_ in pipes]
    assume(all(line.length > 1 for line in lines))
    mains = gpd.GeoDataFrame(
        {
            "main_id": [f"M{i}" for i in range(len(pipes))],
            "sewer_type": [p[1] for p in pipes],
            "status": [p[2] for p in pipes],
            "ownership": [p[3] for p in pipes],
        },
        geometry=lines,
        crs=CRS,
    )
    # A street along each main (so some parcels abut a sewered street) and one more across the town.
    streets = gpd.GeoDataFrame(
        {"street_id": [f"S{i}" for i in range(len(lines) + 1)], "street_name": None, "row_width_ft": 50.0},
        geometry=[*lines, LineString([(-2000, 0), (2000, 0)])],
        crs=CRS,
    )
    return tuple(f.set_geometry(f.geometry.translate(*NY_ORIGIN)) for f in (parcels, mains, streets))


def counting(mains: gpd.GeoDataFrame) -> np.ndarray:
    """Which mains are a public sanitary sewer under both profiles here (no combined, force or private)."""
    kind, status, owner = mains["sewer_type"], mains["status"], mains["ownership"]
    return (
        (kind.isna() | (kind == "sanitary")) & ~status.isin(["abandoned", "proposed"]) & (owner != "private")
    ).to_numpy()


def nearest_ft(parcels: gpd.GeoDataFrame, mains: gpd.GeoDataFrame) -> np.ndarray:
    """Brute force: each parcel's shapely.distance to every counting main, the smallest (NaN with none)."""
    chosen = mains.geometry.values[counting(mains)]
    if not len(chosen):
        return np.full(len(parcels), np.nan)
    return shapely.distance(np.asarray(parcels.geometry.values)[:, None], np.asarray(chosen)[None, :]).min(axis=1)


def run(parcels, mains, streets, profile):
    return analyze_mandates(parcels, mains, streets=streets, profile=profile).parcels


@SETTINGS
@given(towns(), st.sampled_from(["wappinger", "fort-plain"]))
def test_every_parcel_gets_exactly_one_status(town, name):
    parcels, mains, streets = town
    out = run(parcels, mains, streets, WAPPINGER if name == "wappinger" else FORT_PLAIN)
    assert out.index.equals(parcels.index) and out.crs == parcels.crs
    assert out["parcel_id"].tolist() == parcels["parcel_id"].tolist()
    assert out["status"].isin(STATUSES).all()
    assert out["status"].notna().all() and out["reason"].notna().all()


@SETTINGS
@given(towns())
def test_distance_is_never_negative_and_is_the_distance_to_the_nearest_counting_main(town):
    parcels, mains, streets = town
    out = run(parcels, mains, None, WAPPINGER)
    expected = nearest_ft(parcels, mains)
    got = out["distance_ft"].to_numpy(float)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    assert (got[~np.isnan(got)] >= 0).all()
    np.testing.assert_allclose(got, expected, atol=0.01)  # EPSG:2260 is in US survey feet; 2 decimals kept
    # Where the abutting street decides (Fort Plain), the distance is to the main the parcel is measured to.
    fp = run(parcels, mains, streets, FORT_PLAIN)
    measured = fp["main_id"].notna().to_numpy()
    to_main = mains.set_index("main_id").geometry.loc[fp["main_id"][measured]].to_numpy()
    own = shapely.distance(np.asarray(parcels.geometry.values)[measured], to_main)
    np.testing.assert_allclose(fp["distance_ft"].to_numpy(float)[measured], own, atol=0.01)
    assert (fp["distance_ft"].to_numpy(float)[measured] >= expected[measured] - 0.01).all()
    assert fp["main_id"][measured].isin(mains["main_id"][counting(mains)]).all()


@SETTINGS
@given(towns(), st.data())
def test_moving_a_main_farther_never_makes_a_parcel_mandated(town, data):
    parcels, mains, streets = town
    k = data.draw(st.integers(0, len(mains) - 1), label="main moved")
    dx, dy = data.draw(st.tuples(coordinate, coordinate), label="by")
    moved = mains.copy()
    moved.loc[moved.index[k], "geometry"] = shapely.affinity.translate(mains.geometry.iloc[k], dx, dy)
    before = run(parcels, mains, None, WAPPINGER)["status"].to_numpy()
    after = run(parcels, moved, None, WAPPINGER)["status"].to_numpy()
    farther = shapely.distance(parcels.geometry.values, moved.geometry.iloc[k]) >= shapely.distance(
        parcels.geometry.values, mains.geometry.iloc[k]
    )
    assert not ((after == "mandated") & (before != "mandated") & farther).any()
    # Under Fort Plain's abutting-street rule too, once the main is out of every parcel's reach.
    gone = mains.copy()
    gone.loc[gone.index[k], "geometry"] = shapely.affinity.translate(mains.geometry.iloc[k], 20_000, 20_000)
    before = run(parcels, mains, streets, FORT_PLAIN)["status"].to_numpy()
    after = run(parcels, gone, streets, FORT_PLAIN)["status"].to_numpy()
    assert not ((after == "mandated") & (before != "mandated")).any()


def with_ties(town, copies: list[int]) -> tuple[gpd.GeoDataFrame, gpd.GeoDataFrame, gpd.GeoDataFrame]:
    """The town with exact copies of some mains under new IDs: every parcel is exactly as near each copy.

    The copies' IDs are numbered so that ID order and row order disagree (M10 sorts after M9 as a number, and
    is listed first), which a tie broken by position would get wrong once the rows are shuffled.
    """
    parcels, mains, streets = town
    picked = mains.iloc[[k % len(mains) for k in copies]]
    twins = picked.assign(main_id=[f"M{len(mains) + 10 + i}" for i in range(len(picked))][::-1])
    return parcels, pd.concat([twins, mains], ignore_index=True), streets


@SETTINGS
@given(towns(), st.lists(st.integers(0, 20), max_size=4), st.randoms(use_true_random=False))
def test_results_never_depend_on_the_order_of_input_rows(town, copies, rnd):
    """Not even where two counting mains are exactly as near a parcel: the lower main ID decides."""
    parcels, mains, streets = with_ties(town, copies)

    def shuffled(frame):
        order = list(range(len(frame)))
        rnd.shuffle(order)
        return frame.iloc[order]

    columns = [
        "status",
        "distance_ft",
        "main_id",
        "abuts_sewered_street",
        "reason",
        "connection_x",
        "connection_y",
        "street_name_main",
    ]
    for profile, with_streets in ((WAPPINGER, None), (FORT_PLAIN, streets)):
        ordered = run(parcels, mains, with_streets, profile).set_index("parcel_id")[columns]
        other_streets = shuffled(with_streets) if with_streets is not None else None
        reordered = run(shuffled(parcels), shuffled(mains), other_streets, profile).set_index("parcel_id")[columns]
        pd.testing.assert_frame_equal(reordered.loc[ordered.index], ordered)
        # Of the mains exactly as near, the one named is first by ID (numbers at its end read as numbers).
        tied = _tied(parcels, mains, ordered)
        for parcel_id in ordered.index[tied & (profile is WAPPINGER)]:
            near = _nearest_ids(parcels, mains, parcel_id)
            assert ordered.loc[parcel_id, "main_id"] == min(near, key=lambda m: (len(m), m)), near


def _nearest_ids(parcels, mains, parcel_id) -> list[str]:
    """IDs of the counting mains exactly at the least distance from the parcel."""
    chosen = mains[counting(mains)]
    d = shapely.distance(parcels.set_index("parcel_id").geometry.loc[parcel_id], chosen.geometry.values)
    return chosen["main_id"][d == d.min()].tolist()


def _tied(parcels, mains, result) -> np.ndarray:
    """Parcels with two or more counting mains at their measured distance (within 0.005 ft)."""
    chosen = np.asarray(mains.geometry.values[counting(mains)])
    if not len(chosen):
        return np.zeros(len(result), dtype=bool)
    d = shapely.distance(np.asarray(parcels.set_index("parcel_id").loc[result.index].geometry.values)[:, None], chosen)
    return (np.abs(d - result["distance_ft"].to_numpy(float)[:, None]) < 0.005).sum(axis=1) > 1


LONLAT_TO_NY = Transformer.from_crs("EPSG:4326", "EPSG:2260", always_xy=True)
AREA = TARGET.area_of_use


@SWAP_SETTINGS
@given(
    towns(),
    st.floats(AREA.west, AREA.east, allow_nan=False),
    st.floats(AREA.south, AREA.north, allow_nan=False),
)
def test_lat_lon_order_is_always_detected(town, lon, lat):
    """A town anywhere New York East feet is used, its parcels written [lat, lon] in a GeoJSON."""
    parcels, mains, streets = _moved_to(town, *LONLAT_TO_NY.transform(lon, lat))
    lonlat = parcels.to_crs(4326)
    swapped = lonlat.set_geometry(shapely.transform(lonlat.geometry.values, lambda c: c[:, ::-1]))
    problems = _load({"parcels": swapped, "mains": mains, "streets": streets}, suffix={"parcels": ".geojson"})
    assert ("parcels", "swapped_axes") in problems, problems
    assert _load({"parcels": lonlat, "mains": mains, "streets": streets}, suffix={"parcels": ".geojson"}) == []


@SWAP_SETTINGS
@given(towns(), st.floats(150_000, 1_000_000), st.floats(100_000, 2_400_000))
def test_swapped_easting_and_northing_are_detected(town, x, y):
    """Easting and northing exchanged in New York East feet, wherever the swap moves the layer out of reach."""
    assume(abs(x - y) * np.sqrt(2) > FAR_LAYER_FT + 10_000)
    parcels, mains, streets = _moved_to(town, x, y)
    to_lonlat = Transformer.from_crs("EPSG:2260", "EPSG:4326", always_xy=True)
    lon, lat = to_lonlat.transform(x, y)
    assume(AREA.west < lon < AREA.east and AREA.south < lat < AREA.north)
    swapped = parcels.set_geometry(shapely.transform(parcels.geometry.values, lambda c: c[:, ::-1]))
    problems = _load({"parcels": swapped, "mains": mains, "streets": streets})
    assert ("parcels", "swapped_axes") in problems, problems


def _moved_to(town, x: float, y: float):
    return tuple(f.set_geometry(f.geometry.translate(x - NY_ORIGIN[0], y - NY_ORIGIN[1])) for f in town)


def _load(frames: dict[str, gpd.GeoDataFrame], suffix: dict[str, str] | None = None) -> list[tuple[str, str]]:
    """Write each layer to a file, load them all; the (layer, check) of every error."""
    with tempfile.TemporaryDirectory(prefix="sewerplan-props-") as folder:
        sources = {}
        for kind, frame in frames.items():
            path = Path(folder) / f"{kind}{(suffix or {}).get(kind, '.gpkg')}"
            frame.to_file(path)
            sources[kind] = LayerSource(kind, str(path))
        try:
            load_layers(sources, target_crs=TARGET)
        except LayerValidationError as exc:
            return [(p.layer, p.check) for p in exc.problems if p.severity == "error"]
    return []
