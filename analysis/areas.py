"""Service areas: sewer districts and improvement areas that limit where a connection can be required.

Poughkeepsie's mandate applies "within the area" (the Fourth Ward Sewer Improvement Area, § 168-22.2G); Wappinger's
Phase III stays on private systems "until such time as public sewer is available" (§ 196-17A). With a
``service_areas`` layer, a parcel is held back when its representative point lies in no area, or only in areas
whose ``mandates`` attribute is no.
"""

from __future__ import annotations

import geopandas as gpd
import numpy as np
import shapely


def held_by_service_area(parcels: gpd.GeoDataFrame, areas: gpd.GeoDataFrame | None) -> np.ndarray:
    """True for parcels outside every service area, or inside only areas that do not mandate connection."""
    if areas is None or len(areas) == 0:
        return np.zeros(len(parcels), dtype=bool)
    mandates = np.ones(len(areas), dtype=bool)
    if "mandates" in areas.columns:
        given = areas["mandates"].notna().to_numpy()
        text = areas["mandates"].astype(str).str.strip().str.lower()
        mandates[given] = text[given].isin(["true", "1", "yes", "y"]).to_numpy()
    points = shapely.point_on_surface(np.asarray(parcels.geometry.values))
    p_idx, a_idx = shapely.STRtree(np.asarray(areas.geometry.values)).query(points, predicate="within")
    inside_mandating = np.zeros(len(parcels), dtype=bool)
    inside_mandating[p_idx[mandates[a_idx]]] = True
    return ~inside_mandating
