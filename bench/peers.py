"""The SQL peers of the mandate analysis: DuckDB spatial and PostGIS running bench/peer_*.sql on the same town.

Each peer gets the parcels, mains, streets and buildings as the analysis reads them, and its script's settings
from the same profile. ``compare`` checks a peer's statuses and distances against the analysis's.

    python bench/peers.py 10000          # check both peers against the analysis on 10,000 sample parcels
"""

from __future__ import annotations

import io
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import shapely

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

# Radii for DuckDB's widening nearest-main search (it has no nearest-neighbour operator): each round joins the
# parcels still without a main to the mains within the radius; a last round takes every main for any left.
DUCKDB_RADII_FT = (100, 300, 1_000, 2_000, 4_000, 6_000, 8_000, 11_000, 15_000, 25_000, 50_000)


def settings(profile) -> dict[str, str]:
    """The scripts' {placeholders} from a profile (the rules the analysis applies)."""
    m, s, md = profile.measurement, profile.sewers, profile.mandate
    return {
        "combined": "OR sewer_type = 'combined'" if s.count_combined.value else "",
        "force": "OR sewer_type = 'force'" if s.count_force_mains.value else "",
        "count_private": "true" if s.count_private.value else "false",
        "abut_tolerance_ft": repr(float(m.abut_tolerance_ft.value)),
        "default_row_width_ft": repr(float(m.default_row_width_ft.value)),
        "main_in_street_min_row_widths": repr(float(m.main_in_street_min_row_widths.value)),
        "min_occupied_building_sqft": repr(float(m.min_occupied_building_sqft.value)),
        "reach_ft": repr(float(md.distance_ft.value) + float(m.distance_tolerance_ft.value)),
    }


def script(name: str, profile) -> str:
    text = (HERE / f"peer_{name}.sql").read_text()
    values = settings(profile)
    if name == "duckdb":
        values["nearest_rounds"] = _duckdb_rounds()
    for key, value in values.items():
        text = text.replace("{" + key + "}", value)
    return text


def _duckdb_rounds() -> str:
    rounds = []
    for radius in DUCKDB_RADII_FT:
        rounds.append(
            "CREATE OR REPLACE TEMP TABLE todo AS SELECT pid, geom FROM parcels ANTI JOIN nearest USING (pid);\n"
            "INSERT INTO nearest SELECT pid, arg_min(mid, d), min(d) FROM (\n"
            "    SELECT t.pid, c.mid, ST_Distance(t.geom, c.geom) AS d\n"
            f"    FROM todo t JOIN counting c ON ST_DWithin(t.geom, c.geom, {radius})) GROUP BY pid;"
        )
    rounds.append(
        "CREATE OR REPLACE TEMP TABLE todo AS SELECT pid, geom FROM parcels ANTI JOIN nearest USING (pid);\n"
        "INSERT INTO nearest SELECT pid, arg_min(mid, d), min(d) FROM (\n"
        "    SELECT t.pid, c.mid, ST_Distance(t.geom, c.geom) AS d FROM todo t, counting c) GROUP BY pid;"
    )
    return "\n".join(rounds)


def _tables(layers) -> dict[str, pd.DataFrame]:
    """The four input tables, geometry as WKB, with integer keys."""

    def column(frame, name):
        return frame[name].astype(object).where(frame[name].notna(), None) if name in frame else None

    p, m, s, b = layers.parcels, layers.mains, layers.streets, layers.buildings
    connected = column(p, "connected")
    return {
        "parcels": pd.DataFrame(
            {
                "pid": np.arange(len(p)),
                "parcel_id": p["parcel_id"].astype(str).to_numpy(object),
                "connected": connected.astype("boolean") if connected is not None else pd.array([pd.NA] * len(p)),
                "wkb": shapely.to_wkb(p.geometry.values),
            }
        ),
        "mains": pd.DataFrame(
            {
                "mid": np.arange(len(m)),
                "main_id": column(m, "main_id"),
                "sewer_type": column(m, "sewer_type"),
                "ownership": column(m, "ownership"),
                "status": column(m, "status"),
                "wkb": shapely.to_wkb(m.geometry.values),
            }
        ),
        "streets": pd.DataFrame(
            {
                "sid": np.arange(len(s)),
                "row_width_ft": pd.to_numeric(s["row_width_ft"], errors="coerce") if "row_width_ft" in s else np.nan,
                "wkb": shapely.to_wkb(s.geometry.values),
            }
        ),
        "buildings": pd.DataFrame(
            {
                "bid": np.arange(len(b)),
                "occupied": column(b, "occupied").astype("boolean")
                if "occupied" in b
                else pd.array([pd.NA] * len(b), dtype="boolean"),
                "wkb": shapely.to_wkb(b.geometry.values),
            }
        ),
    }


def duckdb_connection():
    """A DuckDB connection with the spatial extension from the duckdb-extension-spatial wheel, or None."""
    try:
        import duckdb
        import duckdb_extension_spatial
    except ImportError:
        return None
    ext = Path(duckdb_extension_spatial.__file__).parent / "extensions" / f"v{duckdb.__version__}"
    con = duckdb.connect()
    con.load_extension(str(ext / "spatial.duckdb_extension"))
    con.execute(f"SET threads = {os.cpu_count() or 2}")
    return con


def run_duckdb(layers, profile) -> tuple[float, pd.DataFrame] | None:
    """Load the tables (not timed), run peer_duckdb.sql (timed); its seconds and result table."""
    con = duckdb_connection()
    if con is None:
        return None
    for name, frame in _tables(layers).items():
        con.register(f"{name}_in", frame)
        cols = ", ".join(c for c in frame.columns if c != "wkb")
        con.execute(f"CREATE TABLE {name} AS SELECT {cols}, ST_GeomFromWKB(wkb) AS geom FROM {name}_in")
        con.unregister(f"{name}_in")
    t = time.perf_counter()
    con.execute(script("duckdb", profile))
    seconds = time.perf_counter() - t
    result = con.execute("SELECT * FROM result ORDER BY pid").df()
    con.close()
    return seconds, result


def duckdb_within(parcels, mains, distance_ft: float) -> float | None:
    """Seconds for DuckDB's narrow query: ST_DWithin join and min(ST_Distance) per parcel (query only)."""
    import pyarrow as pa

    con = duckdb_connection()
    if con is None:
        return None
    p = pa.table({"id": pa.array(range(len(parcels))), "wkb": pa.array(shapely.to_wkb(parcels), pa.binary())})
    m = pa.table({"id": pa.array(range(len(mains))), "wkb": pa.array(shapely.to_wkb(mains), pa.binary())})
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
    seconds = time.perf_counter() - t
    con.close()
    return seconds


def postgis_url() -> str | None:
    return os.environ.get("SEWERPLAN_BENCH_POSTGRES_URL") or os.environ.get("SEWERPLAN_TEST_POSTGRES_URL")


def run_postgis(layers, profile, url: str | None = None) -> tuple[float, pd.DataFrame] | None:
    """Load the tables with GiST indexes (not timed), run peer_postgis.sql (timed); its seconds and result."""
    url = url or postgis_url()
    if not url:
        return None
    import psycopg

    types = {
        "parcels": "pid bigint, parcel_id text, connected boolean",
        "mains": "mid bigint, main_id text, sewer_type text, ownership text, status text",
        "streets": "sid bigint, row_width_ft double precision",
        "buildings": "bid bigint, occupied boolean",
    }
    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://"), autocommit=True) as con:
        con.execute("CREATE EXTENSION IF NOT EXISTS postgis")
        con.execute("DROP SCHEMA IF EXISTS sewerplan_bench CASCADE")
        con.execute("CREATE SCHEMA sewerplan_bench")
        con.execute("SET search_path = sewerplan_bench, public")
        for name, frame in _tables(layers).items():
            con.execute(f"CREATE TABLE {name} ({types[name]}, geom geometry)")
            cols = [c for c in frame.columns if c != "wkb"]
            text = frame[cols].copy()
            text["geom"] = [w.hex() for w in frame["wkb"]]
            buffer = io.StringIO()
            text.to_csv(buffer, sep="\t", header=False, index=False, na_rep="\\N")
            with con.cursor().copy(f"COPY {name} ({', '.join(cols)}, geom) FROM STDIN") as copy:
                copy.write(buffer.getvalue())
            con.execute(f"CREATE INDEX ON {name} USING gist (geom)")
            con.execute(f"ANALYZE {name}")
        t = time.perf_counter()
        con.execute(script("postgis", profile))
        seconds = time.perf_counter() - t
        rows = con.execute(
            "SELECT pid, main_id, distance_ft, abuts_sewered_street, occupied, status FROM result ORDER BY pid"
        ).fetchall()
        con.execute("DROP SCHEMA sewerplan_bench CASCADE")
    columns = ["pid", "main_id", "distance_ft", "abuts_sewered_street", "occupied", "status"]
    return seconds, pd.DataFrame(rows, columns=columns)


def compare(ours: pd.DataFrame, peer: pd.DataFrame) -> dict[str, int]:
    """Parcels whose status differs, and whose distance differs by more than 0.01 ft (or is missing in one)."""
    peer = peer.set_index("pid").reindex(np.arange(len(ours)))
    status = ours["status"].astype(str).to_numpy() != peer["status"].astype(str).to_numpy()
    a = ours["distance_ft"].to_numpy(float)
    b = peer["distance_ft"].to_numpy(float)
    distance = ~((np.abs(a - b) <= 0.01 + 1e-9) | (np.isnan(a) & np.isnan(b)))
    return {"status": int(status.sum()), "distance": int(distance.sum()), "parcels": len(ours)}


def main(argv: list[str]) -> None:
    import tempfile

    from analysis.mandate import analyze_mandates
    from analysis.profiles import load_profile
    from layers.crs import measuring_crs
    from layers.read import find_layers, load_layers
    from layers.sample import sample_town
    from layers.write import write_layers

    n = int(argv[0]) if argv else 10_000
    profile = load_profile("fort-plain")
    with tempfile.TemporaryDirectory() as tmp:
        write_layers(f"{tmp}/town.gpkg", sample_town(n))
        layers = load_layers(find_layers(f"{tmp}/town.gpkg"), target_crs=measuring_crs("EPSG:2260"))
    t = time.perf_counter()
    ours = analyze_mandates(
        layers.parcels, layers.mains, streets=layers.streets, buildings=layers.buildings, profile=profile
    ).parcels
    print(f"sewerplan: {time.perf_counter() - t:.2f} s")
    failed = False
    for name, run in (("DuckDB", run_duckdb), ("PostGIS", run_postgis)):
        done = run(layers, profile)
        if done is None:
            print(f"{name}: not available")
            continue
        seconds, table = done
        found = compare(ours, table)
        failed |= bool(found["status"] or found["distance"])
        print(f"{name}: {seconds:.2f} s; differing statuses {found['status']}, distances {found['distance']}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main(sys.argv[1:])
