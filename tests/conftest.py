"""Tiny layers in EPSG:2260 whose answers can be seen, and the path to the vendored real data (tests/data/)."""

from __future__ import annotations

from pathlib import Path

import geopandas as gpd
import pytest
from shapely.affinity import translate
from shapely.geometry import LineString, box

from analysis.profiles import load_profile

CRS = "EPSG:2260"
REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"


# Fort Plain, NY in New York East feet: hand-made layers that go through layers/ validation are placed here, since
# a layer whose coordinates fall outside its CRS's area of use is refused.
NY_ORIGIN = (457_000.0, 1_490_000.0)


def ny_frame(rows: list[dict], crs: str | None = CRS) -> gpd.GeoDataFrame:
    """Like ``frame``, with every geometry moved from (0, 0) to Fort Plain."""
    moved = [{**r, "geometry": None if r["geometry"] is None else translate(r["geometry"], *NY_ORIGIN)} for r in rows]
    return frame(moved, crs=crs)


def frame(rows: list[dict], crs: str | None = CRS) -> gpd.GeoDataFrame:
    """A GeoDataFrame from dicts with a ``geometry`` key."""
    geoms = [r["geometry"] for r in rows]
    data = [{k: v for k, v in r.items() if k != "geometry"} for r in rows]
    return gpd.GeoDataFrame(data, geometry=geoms, crs=crs)


@pytest.fixture
def fort_plain():
    return load_profile("fort-plain")


@pytest.fixture
def street_block():
    """One east-west street: centreline y=0, 50 ft right-of-way (y -25..25), main M-1 along y=0.

    Parcels lie north of the street, their front lot line on the right-of-way edge (y=25), 25 ft from the main.
    """
    streets = frame([{"street_id": "S-1", "street_name": "Main St", "geometry": LineString([(-1000, 0), (2000, 0)])}])
    mains = frame([{"main_id": "M-1", "geometry": LineString([(-1000, 0), (2000, 0)])}])
    return streets, mains


def lot(parcel_id: str, x0: float, y0: float, w: float = 50, d: float = 100, **attrs) -> dict:
    return {"parcel_id": parcel_id, "occupied": True, **attrs, "geometry": box(x0, y0, x0 + w, y0 + d)}


@pytest.fixture
def real_data() -> Path:
    """Real data nobody here drew, vendored with its licences (tests/data/README.md)."""
    return DATA
