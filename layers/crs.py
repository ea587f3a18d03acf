"""Coordinate reference systems: refuse what cannot be trusted, reproject what can.

A layer without a CRS, or whose declared CRS does not fit its coordinates, is refused with a message that says how
to fix it; nothing is guessed. A layer in degrees (or in any other CRS that fits) is reprojected to the profile's
measuring CRS, in which distances are converted to US survey feet.
"""

from __future__ import annotations

import geopandas as gpd
import numpy as np
import shapely
from pyproj import CRS, Transformer
from pyproj.exceptions import CRSError

from layers.errors import LayerError, Problem

US_SURVEY_FOOT_M = 1200 / 3937
# How far outside a CRS's published area of use a layer may reach before it is called a misfit (degrees).
AREA_OF_USE_MARGIN_DEG = 2.0


def parse_crs(text: str, *, what: str) -> CRS:
    """A CRS from user text (``EPSG:2260``, ``2260``, WKT, PROJ), or a LayerError that says what was wrong."""
    try:
        return CRS.from_user_input(int(text) if str(text).isdigit() else text)
    except CRSError as exc:
        raise LayerError(f"{what}: {text!r} is not a coordinate reference system (try EPSG:2260).") from exc


def measuring_crs(text: str) -> CRS:
    """The CRS distances are measured in; must be projected with a linear unit."""
    crs = parse_crs(text, what="measuring CRS")
    if not crs.is_projected:
        raise LayerError(
            f"The measuring CRS {crs.to_string()} is not projected: distances cannot be measured in degrees. "
            "Use a projected CRS in feet or metres, e.g. --crs EPSG:2260 (New York East, US survey feet)."
        )
    return crs


def feet_per_unit(crs: CRS) -> float:
    """US survey feet in one unit of the CRS's first axis (1.0 for EPSG:2260, 3.2808... for metres)."""
    ratio = crs.axis_info[0].unit_conversion_factor / US_SURVEY_FOOT_M
    return 1.0 if abs(ratio - 1.0) < 1e-12 else ratio


def check_and_reproject(
    gdf: gpd.GeoDataFrame, *, layer: str, label: str, target: CRS, assume: str | None = None
) -> tuple[gpd.GeoDataFrame | None, list[Problem]]:
    """Check the layer's CRS against its coordinates, then reproject it to ``target``.

    ``assume`` is the CRS the user told us to use for a layer that declares none. Returns ``None`` with an error
    problem when the layer cannot be trusted.
    """
    option = f"--{layer}-crs"
    if gdf.crs is None:
        if assume is None:
            return None, [
                Problem(
                    layer,
                    "no_crs",
                    "error",
                    f"{label} has no coordinate reference system. Set it with {option} EPSG:2260 "
                    "(or the CRS it was drawn in), or add a .prj file beside the shapefile.",
                )
            ]
        gdf = gdf.set_crs(parse_crs(assume, what=option))
    crs = CRS(gdf.crs)
    problems: list[Problem] = []
    if crs.is_geographic and len(crs.axis_info) > 2:
        # A 3-D geographic CRS (EPSG:4979): the Z values were dropped already; measure in its 2-D form.
        crs = crs.to_2d()
        gdf = gdf.set_crs(crs, allow_override=True)
    bounds = _finite_bounds(gdf)
    if bounds is not None:
        looks_like_degrees = bounds[0] >= -180 and bounds[2] <= 180 and bounds[1] >= -90 and bounds[3] <= 90
        if crs.is_geographic and not looks_like_degrees:
            return None, [
                Problem(
                    layer,
                    "crs_mismatch",
                    "error",
                    f"{label} declares {crs.name} (degrees) but its coordinates reach "
                    f"({bounds[2]:.0f}, {bounds[3]:.0f}), which are not longitudes and latitudes. "
                    f"Give the CRS it was really drawn in with {option}, e.g. {option} EPSG:2260.",
                )
            ]
        if crs.is_projected and looks_like_degrees:
            return None, [
                Problem(
                    layer,
                    "crs_mismatch",
                    "error",
                    f"{label} declares {crs.name} (projected) but its coordinates look like degrees "
                    f"({bounds[0]:.4f}, {bounds[1]:.4f}). If it is longitude/latitude, set "
                    f"{option} EPSG:4326; otherwise give the CRS it was drawn in.",
                )
            ]
        misfit = _outside_area_of_use(crs, bounds)
        if misfit:
            return None, [
                Problem(
                    layer,
                    "crs_mismatch",
                    "error",
                    f"{label} declares {crs.name}, but its coordinates fall {misfit}, outside where "
                    f"that CRS is used. Check the .prj or give the right CRS with {option}.",
                )
            ]
    if not crs.equals(target):
        gdf = gdf.to_crs(target)
    return gdf, problems


def _finite_bounds(gdf: gpd.GeoDataFrame) -> tuple[float, float, float, float] | None:
    geoms = gdf.geometry.values
    present = ~(shapely.is_missing(geoms) | shapely.is_empty(geoms))
    if not present.any():
        return None
    b = shapely.total_bounds(np.asarray(geoms[present]))
    return tuple(float(v) for v in b) if np.isfinite(b).all() else None


def _outside_area_of_use(crs: CRS, bounds: tuple[float, float, float, float]) -> str:
    """A phrase saying where the layer lands, when that is far from the CRS's area of use; '' when it fits."""
    area = crs.area_of_use
    if area is None or crs.is_geographic:
        return ""
    try:
        to_lonlat = Transformer.from_crs(crs, CRS.from_epsg(4326), always_xy=True)
        west, south, east, north = to_lonlat.transform_bounds(*bounds)
    except Exception:  # a transform that fails is itself a misfit
        return "where no coordinates can be computed"
    if not all(np.isfinite((west, south, east, north))):
        return "where no coordinates can be computed"
    m = AREA_OF_USE_MARGIN_DEG
    fits = west <= area.east + m and east >= area.west - m and south <= area.north + m and north >= area.south - m
    return "" if fits else f"near longitude {west:.2f}, latitude {south:.2f}"
