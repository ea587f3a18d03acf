"""Benchmark reading, analysing and writing a town, beside its SQL peers and a naive baseline, in one run.

For each size, the sample town is written (setup, not timed) as a GeoPackage and as a folder of GeoParquet
files. Then, in a fresh process per input format: ``load_layers`` reads it (read, validate, reproject), the
mandate analysis runs with buildings, ``assess_buildings`` reuses the analysis's building-to-parcel lookup, and
the results are written in the same format (GeoPackage: three layers in one file; GeoParquet: three files).
Peak memory is the process's maximum resident set after writing, before any peer runs.

In the GeoParquet process, on the same layers, after ours:

- our within-distance nearest step alone (parcel tree, envelope candidates, exact distances, nearest per parcel)
  beside DuckDB's narrow query (``ST_DWithin`` join, ``min(ST_Distance)`` per parcel, the query alone);
- the whole classification as a county analyst would write it: bench/peer_duckdb.sql and bench/peer_postgis.sql
  (loading excluded, as our reading is excluded from "analysis"), checked against our statuses and distances;
- naive geopandas: ``parcels.distance(mains.union_all())`` on a sample, extrapolated.

    python bench/bench_mandate.py                 # 100k and 1M
    python bench/bench_mandate.py 10000 100000    # chosen sizes
    python bench/bench_mandate.py --repeat 3 --no-peers --keep /tmp/towns 1000000   # ours only, three times
    python bench/peers.py 10000                   # the peers' answers checked against ours
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

NAIVE_SAMPLE = 2_000


def setup(n: int, folder: Path) -> dict[str, Path]:
    from layers.sample import sample_town
    from layers.write import write_geoparquet, write_layers

    town = sample_town(n)
    gpkg = folder / f"town_{n}.gpkg"
    write_layers(str(gpkg), town, overwrite=True)
    parquet = folder / f"town_{n}"
    parquet.mkdir(exist_ok=True)
    for name, frame in town.items():
        write_geoparquet(str(parquet / f"{name}.parquet"), frame)
    return {"gpkg": gpkg, "parquet": parquet}


def measure(source: Path, fmt: str, peers: bool) -> dict:
    """Run in a fresh process: read, analyse, assess buildings, write; then the peers on the same layers."""
    from analysis.buildings import assess_buildings
    from analysis.mandate import analyze_mandates
    from analysis.profiles import load_profile
    from layers.crs import measuring_crs
    from layers.read import find_layers, load_layers
    from layers.write import write_results

    profile = load_profile("fort-plain")
    out: dict = {"format": fmt}
    t = time.perf_counter()
    layers = load_layers(find_layers(str(source)), target_crs=measuring_crs("EPSG:2260"))
    out["read_s"] = time.perf_counter() - t
    out["parcels"], out["buildings"] = len(layers.parcels), len(layers.buildings)
    t = time.perf_counter()
    result = analyze_mandates(
        layers.parcels, layers.mains, streets=layers.streets, buildings=layers.buildings, profile=profile
    )
    out["analysis_s"] = time.perf_counter() - t
    t = time.perf_counter()
    assess_buildings(
        layers.buildings,
        result.parcels,
        profile=profile,
        streets=layers.streets,
        mains=layers.mains,
        building_parcels=result.building_parcels,
        street_pairs=result.street_pairs,
    )
    out["buildings_s"] = time.perf_counter() - t
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        write_results(f"{tmp}/results.{fmt}", result.parcels, result.measuring_lines)
        out["write_s"] = time.perf_counter() - t
    out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out["end_to_end_s"] = out["read_s"] + out["analysis_s"] + out["write_s"]
    out["counts"] = result.summary["counts"]
    if peers:
        out |= _peers(layers, result, profile)
    return out


def _peers(layers, result, profile) -> dict:
    import numpy as np
    import peers
    import shapely

    from analysis._parallel import default_workers, nearest_near
    from analysis.mandate import counting_mains

    out: dict = {}
    parcels = np.asarray(layers.parcels.geometry.values)
    mains = np.asarray(layers.mains.geometry.values)[counting_mains(layers.mains, profile)]
    reach = profile.mandate.distance_ft.value
    t = time.perf_counter()
    everyone = np.ones(len(parcels), dtype=bool)
    nearest_near(shapely.STRtree(parcels), parcels, mains, reach, everyone, np.arange(len(mains)), default_workers())
    out["our_within_s"] = time.perf_counter() - t
    out["duckdb_within_s"] = peers.duckdb_within(parcels, mains, reach)

    for name, run in (("duckdb", peers.run_duckdb), ("postgis", peers.run_postgis)):
        done = run(layers, profile)
        if done is None:
            out[f"{name}_s"] = None
            continue
        out[f"{name}_s"], table = done
        out[f"{name}_differ"] = peers.compare(result.parcels, table)

    n = len(parcels)
    t = time.perf_counter()
    union = shapely.union_all(mains)
    sample = parcels[:: max(1, n // NAIVE_SAMPLE)]
    shapely.distance(sample, union)
    out["naive_s_extrapolated"] = (time.perf_counter() - t) / len(sample) * n
    return out


def main(argv: list[str]) -> None:
    if argv[:1] == ["--one"]:
        from analysis._parallel import paused_gc

        with paused_gc():  # as `sewerplan analyze` runs
            print(json.dumps(measure(Path(argv[1]), argv[2], argv[3] == "peers")))
        return
    options = {"--repeat": "1", "--keep": ""}
    flags = {"--no-peers": False}
    args = list(argv)
    while args and args[0].startswith("-"):
        name = args.pop(0)
        if name in ("-h", "--help"):
            print(__doc__)
            return
        if name in flags:
            flags[name] = True
        elif name in options and args:
            options[name] = args.pop(0)
        else:
            sys.exit(__doc__)
    sizes = [int(a) for a in args] or [100_000, 1_000_000]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(options["--keep"] or tmp)
        folder.mkdir(parents=True, exist_ok=True)
        for n in sizes:
            kept = {"gpkg": folder / f"town_{n}.gpkg", "parquet": folder / f"town_{n}"}
            sources = kept if all(p.exists() for p in kept.values()) else setup(n, folder)
            for _ in range(int(options["--repeat"])):
                for fmt in ("parquet", "gpkg"):
                    peers_here = fmt == "parquet" and not flags["--no-peers"]
                    before = os.getloadavg()[0]
                    done = subprocess.run(
                        [sys.executable, __file__, "--one", str(sources[fmt]), fmt, "peers" if peers_here else "-"],
                        check=True,
                        capture_output=True,
                        text=True,
                    )
                    row = json.loads(done.stdout.strip().splitlines()[-1])
                    row["load"] = max(before, os.getloadavg()[0])  # the 1-minute load average, before and after
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    print()
    print(table(rows))
    for r in rows:
        for peer in ("duckdb", "postgis"):
            if f"{peer}_differ" in r:
                found = r[f"{peer}_differ"]
                print(
                    f"{r['parcels']:,} parcels, {peer}: {found['status']} statuses and {found['distance']} distances "
                    "differ from sewerplan's"
                )


def _s(value) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def table(rows: list[dict]) -> str:
    head = (
        "| parcels | in/out | read s | analysis s | buildings s | write s | end to end s | peak MB | "
        "our within-distance nearest s | DuckDB ST_DWithin s | DuckDB SQL s | PostGIS SQL s | "
        "naive geopandas s (extrap.) | load |"
    )
    lines = [head, "|" + "---|" * 14]
    for r in rows:
        cells = [
            f"{r['parcels']:,}",
            "GeoParquet" if r["format"] == "parquet" else "GeoPackage",
            *(f"{r[k]:.2f}" for k in ("read_s", "analysis_s", "buildings_s", "write_s", "end_to_end_s")),
            f"{r['peak_mb']:,.0f}",
        ]
        if "our_within_s" in r:
            cells += [_s(r[k]) for k in ("our_within_s", "duckdb_within_s", "duckdb_s", "postgis_s")]
            cells.append(f"{r['naive_s_extrapolated']:,.0f}")
        else:
            cells += [""] * 5
        cells.append(f"{r['load']:.1f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main(sys.argv[1:])
