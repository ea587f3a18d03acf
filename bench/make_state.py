"""Generate a synthetic "state": N sample-like towns of varied sizes under the three profiles.

Each town is the sample village (``layers/sample.py``) with its own seed and size, moved to its own place on a
grid (far enough apart that no town's layers come within a few thousand feet of another's). Written to FOLDER:

- ``parcels.parquet``, ``buildings.parquet``, ``streets.parquet``, ``mains.parquet``, ``manholes.parquet``,
  ``treatment_plants.parquet``: one GeoParquet file per layer, every feature with a ``municipality`` column,
  sorted by municipality (so a reader that filters on it skips the other towns' row groups);
- ``municipalities.parquet``: one polygon per town (its extent, grown by 100 ft) with ``name`` and ``profile``;
- ``towns.toml``: a manifest that filters every layer by the ``municipality`` column;
- ``statewide.toml``: a manifest that assigns the parcels to towns by location instead;
- ``towns/NAME.gpkg`` (with ``--per-town``): each town on its own, for ``sewerplan analyze``.

Profiles cycle fort-plain, poughkeepsie, wappinger (Wappinger gets ``mandate.distance_ft = 200``, which its law
leaves to the Town). The data is generated, not committed: run this before the benchmark.

    python bench/make_state.py FOLDER --towns 40 --parcels 4000000 [--per-town]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import geopandas as gpd  # noqa: E402
import numpy as np  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
import shapely  # noqa: E402

from layers.sample import ORIGIN, sample_town  # noqa: E402
from layers.write import write_geoparquet, write_layers  # noqa: E402

PROFILES = ("fort-plain", "poughkeepsie", "wappinger")
GAP_FT = 10_000.0
PROFILE_SETTINGS = {"wappinger": {"mandate.distance_ft": 200}}
TOWN_NAMES = (
    "Fort Plain",
    "Poughkeepsie",
    "Wappinger",
    "St. Johnsville",
    "Canajoharie",
    "Nelliston",
    "Palatine Bridge",
    "Mohawk",
    "Dolgeville",
    "Little Falls",
    "Frankfort",
    "Ilion",
    "Herkimer",
    "Middleville",
    "Newport",
    "Cold Brook",
    "Poland",
    "Remsen",
    "Holland Patent",
    "Whitesboro",
)


def town_sizes(n_towns: int, total: int, *, seed: int = 7) -> list[int]:
    """Sizes from a quarter to one and three quarters of the mean, shuffled, summing to ``total``."""
    weights = np.linspace(0.25, 1.75, n_towns)
    np.random.default_rng(seed).shuffle(weights)
    sizes = np.maximum(50, np.floor(weights / weights.sum() * total)).astype(int)
    sizes[np.argmax(sizes)] += total - sizes.sum()
    return [int(s) for s in sizes]


def town_name(i: int) -> str:
    base = TOWN_NAMES[i % len(TOWN_NAMES)]
    return base if i < len(TOWN_NAMES) else f"{base} {i // len(TOWN_NAMES) + 1}"


def make_state(
    folder: str | Path, *, n_towns: int, total_parcels: int, per_town: bool = False, seed: int = 1982
) -> dict:
    """Write the state's layers, municipalities and manifests to ``folder``; returns what was written."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    sizes = town_sizes(n_towns, total_parcels)
    columns = max(1, int(np.ceil(np.sqrt(n_towns))))
    pieces = folder / "_pieces"
    kinds: set[str] = set()
    towns = []
    x, y, row_height = ORIGIN[0], ORIGIN[1], 0.0
    for i, size in enumerate(sizes):
        name, profile = town_name(i), PROFILES[i % len(PROFILES)]
        town = sample_town(size, seed=seed + i)
        x0, y0, x1, y1 = np.array([t.total_bounds for t in town.values()]).T
        bounds = (x0.min(), y0.min(), x1.max(), y1.max())
        if i and i % columns == 0:
            x, y, row_height = ORIGIN[0], y + row_height + GAP_FT, 0.0
        dx, dy = x - bounds[0] + 0.0, y - bounds[1] + 0.0
        x += bounds[2] - bounds[0] + GAP_FT
        row_height = max(row_height, bounds[3] - bounds[1])
        for kind, frame in town.items():
            moved = frame.set_geometry(shapely.transform(frame.geometry.values, lambda c, dx=dx, dy=dy: c + [dx, dy]))
            moved.insert(0, "municipality", name)
            write_geoparquet(pieces / kind / f"{i:05d}.parquet", moved)
            kinds.add(kind)
            if per_town:
                town[kind] = moved.drop(columns="municipality")
        if per_town:
            write_layers(str(folder / "towns" / f"{name}.gpkg"), town, overwrite=True)
        area = shapely.box(bounds[0] + dx, bounds[1] + dy, bounds[2] + dx, bounds[3] + dy).buffer(100.0, join_style=2)
        towns.append({"name": name, "profile": profile, "parcels": size, "geometry": area})
    written = {
        kind: _concatenate(sorted((pieces / kind).glob("*.parquet")), folder / f"{kind}.parquet") for kind in kinds
    }
    shutil.rmtree(pieces)
    muni = gpd.GeoDataFrame(towns, crs="EPSG:2260")
    write_geoparquet(folder / "municipalities.parquet", muni.drop(columns="parcels"))
    _manifests(folder, towns)
    return {"towns": [{k: t[k] for k in ("name", "profile", "parcels")} for t in towns], "layers": written}


def _concatenate(files: list[Path], target: Path) -> str:
    """One GeoParquet file from the towns' pieces, streamed piece by piece (memory: one town at a time).

    The file-level bbox of the first piece's metadata is dropped (it would describe that town only); each row
    keeps its covering bbox, which is what readers filter on.
    """
    first = pq.read_schema(files[0])
    geo = json.loads(first.metadata[b"geo"])
    for column in geo["columns"].values():
        column.pop("bbox", None)
    schema = first.with_metadata({**first.metadata, b"geo": json.dumps(geo).encode()})
    schema = schema.remove_metadata().with_metadata({b"geo": json.dumps(geo).encode()})
    with pq.ParquetWriter(target, schema) as writer:
        for path in files:
            writer.write_table(pq.read_table(path).select(schema.names).cast(schema), row_group_size=65_536)
    return str(target)


def _manifests(folder: Path, towns: list[dict]) -> None:
    """towns.toml (filter by column; largest towns first, so the longest tasks start first) and statewide.toml."""
    ordered = sorted(towns, key=lambda t: -t["parcels"])
    lines = [
        "# Generated by bench/make_state.py: every layer filtered by its municipality column.",
        "[defaults]",
        'data = "."',
        'filter_column = "municipality"',
        "",
    ]
    for t in ordered:
        lines += ["[[municipality]]", f'name = "{t["name"]}"', f'profile = "{t["profile"]}"']
        lines += [f"set = {{ {_inline(PROFILE_SETTINGS[t['profile']])} }}"] if t["profile"] in PROFILE_SETTINGS else []
        lines.append("")
    (folder / "towns.toml").write_text("\n".join(lines), encoding="utf-8")
    state = [
        "# Generated by bench/make_state.py: parcels assigned to the municipality polygons by location.",
        "[statewide]",
        'municipalities = "municipalities.parquet"',
        "",
        "[defaults]",
        'data = "."',
        "",
    ]
    for t in towns:
        if t["profile"] in PROFILE_SETTINGS:
            state += [
                "[[municipality]]",
                f'name = "{t["name"]}"',
                f"set = {{ {_inline(PROFILE_SETTINGS[t['profile']])} }}",
            ]
            state.append("")
    (folder / "statewide.toml").write_text("\n".join(state), encoding="utf-8")


def _inline(values: dict) -> str:
    return ", ".join(f'"{k}" = {v}' for k, v in values.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder")
    parser.add_argument("--towns", type=int, default=40)
    parser.add_argument("--parcels", type=int, default=4_000_000)
    parser.add_argument("--per-town", action="store_true", help="also write each town as its own GeoPackage")
    args = parser.parse_args()
    done = make_state(args.folder, n_towns=args.towns, total_parcels=args.parcels, per_town=args.per_town)
    print(f"{len(done['towns'])} towns, {sum(t['parcels'] for t in done['towns']):,} parcels in {args.folder}")


if __name__ == "__main__":
    main()
