"""Benchmark building and tracing the sewer network, beside a per-parcel shortest-path baseline.

A generated network of N mains: a trunk along y=0 flowing east to a plant, and branches every 300 ft running
north, each a chain of 300-ft mains, with a manhole at every main end. Mains carry no from/to fields or inverts,
so every direction is inferred toward the plant (the slowest path). One connection point per main (a parcel),
at a random spot along it. Timed: ``build_network`` (snapping, splitting, direction, pointer jumping) and
``connect_parcels`` (every parcel's control manhole and length to the plant). Baseline: networkx
``shortest_path_length`` from each parcel's downstream node to the plant, on a sample, extrapolated.

    python bench/bench_network.py                # 100k and 1M mains
    python bench/bench_network.py 10000 100000
"""

from __future__ import annotations

import resource
import sys
import time
from pathlib import Path

import geopandas as gpd
import networkx as nx
import numpy as np
import pandas as pd
import shapely

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from analysis._parallel import paused_gc  # noqa: E402
from analysis.network import build_network  # noqa: E402
from analysis.profiles import load_profile  # noqa: E402
from analysis.trace import connect_parcels  # noqa: E402

SEG = 300.0
BASELINE_SAMPLE = 300


def comb(n_mains: int, seed: int = 7):
    """Mains, manholes and a plant for a trunk-and-branches network of about ``n_mains`` mains."""
    branch_len = 30
    n_branch = max(1, n_mains // (branch_len + 1))
    trunk_x = np.arange(n_branch + 1) * SEG
    trunk = np.stack([trunk_x[:-1], np.zeros(n_branch), trunk_x[1:], np.zeros(n_branch)], 1)
    b, k = (a.ravel() for a in np.meshgrid(np.arange(n_branch), np.arange(branch_len), indexing="ij"))
    x = trunk_x[b] + SEG / 2
    branches = np.stack([x, k * SEG, x, (k + 1) * SEG], 1)
    # Branches start at the trunk's middle: split the trunk there with a manhole (they meet at a T).
    trunk_half = np.concatenate(
        [
            np.stack([trunk[:, 0], trunk[:, 1], trunk[:, 0] + SEG / 2, trunk[:, 3]], 1),
            np.stack([trunk[:, 0] + SEG / 2, trunk[:, 1], trunk[:, 2], trunk[:, 3]], 1),
        ]
    )
    segs = np.concatenate([trunk_half, branches])
    rng = np.random.default_rng(seed)
    flip = rng.random(len(segs)) < 0.5  # digitised either way
    segs[flip] = segs[flip][:, [2, 3, 0, 1]]
    lines = shapely.linestrings(segs.reshape(-1, 2, 2))
    mains = gpd.GeoDataFrame(
        {"main_id": np.char.add("M-", np.arange(len(segs)).astype(str))}, geometry=lines, crs="EPSG:2260"
    )
    ends = np.unique(np.round(np.concatenate([segs[:, :2], segs[:, 2:]]), 1), axis=0)
    manholes = gpd.GeoDataFrame(
        {"manhole_id": np.char.add("MH-", np.arange(len(ends)).astype(str))},
        geometry=shapely.points(ends),
        crs="EPSG:2260",
    )
    plant = gpd.GeoDataFrame({"outfall_id": ["WWTP"]}, geometry=[shapely.Point(trunk_x[-1] + 50, 0)], crs="EPSG:2260")
    frac = rng.random(len(segs))
    pts = shapely.line_interpolate_point(lines, frac, normalized=True)
    parcels = pd.DataFrame(
        {
            "parcel_id": np.arange(len(segs)),
            "main_id": mains["main_id"],
            "connection_x": shapely.get_x(pts),
            "connection_y": shapely.get_y(pts),
        }
    )
    return mains, manholes, plant, parcels


def run(n: int) -> dict:
    mains, manholes, plant, parcels = comb(n)
    profile = load_profile("fort-plain")
    with paused_gc():
        t = time.perf_counter()
        net = build_network(mains, manholes=manholes, outfalls=plant, profile=profile)
        build_s = time.perf_counter() - t
        t = time.perf_counter()
        connections = connect_parcels(net, parcels)
        trace_s = time.perf_counter() - t
    assert connections["downstream_length_ft"].notna().all(), "every parcel must reach the plant"

    g = nx.DiGraph()
    g.add_weighted_edges_from(zip(net.u, net.v, net.length_ft, strict=True))
    outfall = int(np.flatnonzero(net.node_is_outfall)[0])
    sample = np.random.default_rng(1).choice(len(parcels), size=min(BASELINE_SAMPLE, len(parcels)), replace=False)
    t = time.perf_counter()
    for i in sample:
        node = int(net.v[connections["edge"].iloc[i]])
        nx.shortest_path_length(g, node, outfall, weight="weight")
    baseline = (time.perf_counter() - t) / len(sample) * len(parcels)
    return {
        "mains": len(mains),
        "parcels": len(parcels),
        "build_s": build_s,
        "trace_s": trace_s,
        "total_s": build_s + trace_s,
        "baseline_s": baseline,
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main(argv: list[str]) -> None:
    sizes = [int(a) for a in argv] or [100_000, 1_000_000]
    rows = [run(n) for n in sizes]
    print(
        "| mains | parcels | build s | trace all parcels s | total s | networkx per-parcel shortest path s "
        "(extrapolated) | peak MB |"
    )
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['mains']:,} | {r['parcels']:,} | {r['build_s']:.2f} | {r['trace_s']:.2f} | {r['total_s']:.2f} "
            f"| {r['baseline_s']:,.0f} | {r['peak_mb']:,.0f} |"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
