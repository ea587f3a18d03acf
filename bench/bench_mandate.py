"""Benchmark the mandate analysis on generated towns, beside two baselines on the same data.

For each size: the sample town is written to a GeoPackage (setup, not timed), then a fresh process reads it
(``load_layers``: read, validate, reproject), analyses it and writes the results GeoPackage, reporting each
step's time, parcels per second and the process's peak memory. Baselines, on the same parcels and mains:

- naive geopandas: ``parcels.distance(mains.union_all())`` on a sample (it is far too slow for the whole town),
  extrapolated to all parcels;
- DuckDB spatial SQL: an ``ST_DWithin`` join with ``min(ST_Distance)`` per parcel (distance only: it does less
  than the analysis, which also finds streets, occupancy, measuring lines and reasons).

A dense variant repeats the analysis and the DuckDB query with parcels segmentised to 30+ vertices.

    python bench/bench_mandate.py                 # 10k, 100k, 1M
    python bench/bench_mandate.py 10000 100000    # chosen sizes
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

DENSE_VERTICES = 32
NAIVE_SAMPLE = 2_000


def setup(n: int, folder: Path) -> Path:
    from layers.sample import sample_town
    from layers.write import write_layers

    path = folder / f"town_{n}.gpkg"
    write_layers(str(path), sample_town(n), overwrite=True)
    return path


def measure(path: Path, dense: bool) -> dict:
    """Run in a fresh process: read, analyse, write; the baselines on the layers read."""
    from analysis.mandate import analyze_mandates
    from analysis.profiles import load_profile
    from layers.crs import measuring_crs
    from layers.read import find_layers, load_layers
    from layers.write import write_results

    profile = load_profile("fort-plain")
    out: dict = {"dense": dense}
    t = time.perf_counter()
    layers = load_layers(find_layers(str(path)), target_crs=measuring_crs("EPSG:2260"))
    out["read_s"] = time.perf_counter() - t
    parcels = layers.parcels
    if dense:
        import shapely

        perimeter = shapely.length(parcels.geometry.values)
        parcels = parcels.set_geometry(shapely.segmentize(parcels.geometry.values, perimeter / DENSE_VERTICES))
        out["vertices_per_parcel"] = float(shapely.get_num_coordinates(parcels.geometry.values).mean())
    n = len(parcels)
    out["parcels"] = n
    t = time.perf_counter()
    result = analyze_mandates(
        parcels, layers.mains, streets=layers.streets, buildings=layers.buildings, profile=profile
    )
    out["analysis_s"] = time.perf_counter() - t
    out["peak_read_analyse_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        write_results(f"{tmp}/results.gpkg", result.parcels, result.measuring_lines)
        out["write_s"] = time.perf_counter() - t
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # read + analyse + write
    from analysis.buildings import assess_buildings

    t = time.perf_counter()
    assess_buildings(layers.buildings, result.parcels, profile=profile, streets=layers.streets, mains=layers.mains)
    out["buildings_s"] = time.perf_counter() - t
    out["buildings"] = len(layers.buildings)
    out["end_to_end_s"] = out["read_s"] + out["analysis_s"] + out["write_s"]
    out["parcels_per_s"] = n / out["analysis_s"]
    out["counts"] = result.summary["counts"]

    main_geoms = layers.mains.geometry
    t = time.perf_counter()
    union = main_geoms.union_all()
    sample = parcels.geometry.iloc[:: max(1, n // NAIVE_SAMPLE)]
    sample.distance(union)
    elapsed = time.perf_counter() - t
    out["naive_s_extrapolated"] = elapsed / len(sample) * n
    out["duckdb_s"] = _duckdb(parcels, layers.mains, profile.mandate.distance_ft.value)
    return out


def _duckdb(parcels, mains, distance_ft: float) -> float | None:
    try:
        import duckdb
        import duckdb_extension_spatial
    except ImportError:
        return None
    import pyarrow as pa
    import shapely

    ext = Path(duckdb_extension_spatial.__file__).parent / "extensions" / f"v{duckdb.__version__}"
    con = duckdb.connect()
    con.load_extension(str(ext / "spatial.duckdb_extension"))
    con.execute(f"SET threads = {os.cpu_count() or 2}")
    p = pa.table(
        {"id": pa.array(range(len(parcels))), "wkb": pa.array(shapely.to_wkb(parcels.geometry.values), pa.binary())}
    )
    m = pa.table(
        {"id": pa.array(range(len(mains))), "wkb": pa.array(shapely.to_wkb(mains.geometry.values), pa.binary())}
    )
    con.register("p_in", p)
    con.register("m_in", m)
    con.execute("CREATE TABLE parcels AS SELECT id, ST_GeomFromWKB(wkb) AS geom FROM p_in")
    con.execute("CREATE TABLE mains AS SELECT id, ST_GeomFromWKB(wkb) AS geom FROM m_in")
    t = time.perf_counter()
    con.execute(f"""
        SELECT p.id, min(ST_Distance(p.geom, m.geom)) AS d
        FROM parcels p JOIN mains m ON ST_DWithin(p.geom, m.geom, {distance_ft})
        GROUP BY p.id
    """).fetchall()
    return time.perf_counter() - t


def main(argv: list[str]) -> None:
    if argv[:1] == ["--one"]:
        from analysis._parallel import paused_gc

        with paused_gc():  # as `sewerplan analyze` runs
            print(json.dumps(measure(Path(argv[1]), argv[2] == "dense")))
        return
    sizes = [int(a) for a in argv] or [10_000, 100_000, 1_000_000]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            path = setup(n, Path(tmp))
            variants = ["simple", "dense"] if n <= 100_000 else ["simple"]
            for variant in variants:
                done = subprocess.run(
                    [sys.executable, __file__, "--one", str(path), variant], check=True, capture_output=True, text=True
                )
                row = json.loads(done.stdout.strip().splitlines()[-1])
                rows.append(row)
                print(_line(row), flush=True)
    print()
    print(table(rows))


def _line(r: dict) -> str:
    return (
        f"{r['parcels']:>9,} {'dense ' if r['dense'] else 'simple'}  read {r['read_s']:.2f}s  analysis "
        f"{r['analysis_s']:.2f}s  write {r['write_s']:.2f}s  end-to-end {r['end_to_end_s']:.2f}s  "
        f"{r['parcels_per_s']:,.0f} parcels/s  peak {r['peak_rss_mb']:,.0f} MB  "
        f"naive~{r['naive_s_extrapolated']:.1f}s"
        f"  duckdb {r['duckdb_s'] if r['duckdb_s'] is None else round(r['duckdb_s'], 2)}s"
    )


def table(rows: list[dict]) -> str:
    head = (
        "| parcels | geometry | read s | analysis s | write s | end to end s | parcels/s | peak MB read+analyse | "
        "peak MB +write | naive geopandas s (extrapolated) | DuckDB ST_DWithin s | analysis / DuckDB | buildings | "
        "buildings s |"
    )
    lines = [head, "|" + "---|" * 14]
    for r in rows:
        duck = r["duckdb_s"]
        ratio = f"{r['analysis_s'] / duck:.2f}" if duck else "n/a"
        geometry = f"dense ({r.get('vertices_per_parcel', 0):.0f} vertices)" if r["dense"] else "simple (5)"
        lines.append(
            f"| {r['parcels']:,} | {geometry} | {r['read_s']:.2f} | {r['analysis_s']:.2f} | "
            f"{r['write_s']:.2f} | {r['end_to_end_s']:.2f} | {r['parcels_per_s']:,.0f} | "
            f"{r['peak_read_analyse_mb']:,.0f} | {r['peak_rss_mb']:,.0f} | {r['naive_s_extrapolated']:.1f} | "
            f"{'n/a' if duck is None else f'{duck:.2f}'} | {ratio} | {r['buildings']:,} | "
            f"{r['buildings_s']:.2f} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main(sys.argv[1:])
