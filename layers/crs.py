"""Coordinate reference systems: refuse what cannot be trusted, reproject what can.

A layer without a CRS, or whose declared CRS does not fit its coordinates, is refused with a message that says how
to fix it; nothing is guessed. A layer in degrees (or in any other CRS that fits) is reprojected to the profile's
measuring CRS, in which distances are converted to US survey feet.

Where a layer lies is checked against two published areas of use (the layer's own CRS and the measuring CRS, each
grown by ``AREA_OF_USE_MARGIN_DEG``): a layer that lands outside them, but inside them with x and y exchanged, has
its axes swapped ([lat, lon] GeoJSON, northing before easting) and is refused as such. Single features outside the
areas (a vertex at 1e300, a parcel typed in another state's coordinates) are refused by ID; features far from the
rest of their layer, and layers far from the parcels, are reported. The checks use each feature's bounding box,
so they cost a few array operations, not a reprojection per feature.
"""

from __future__ import annotations

import re
from functools import lru_cache

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely
from pyproj import CRS, Transformer
from pyproj.exceptions import CRSError

from analysis._parallel import elementwise
from analysis.errors import Fix
from analysis.units import feet_per_unit
from layers.errors import LayerError, Problem

WGS84 = CRS.from_epsg(4326)
# How far outside a CRS's published area of use a layer may reach before it is called a misfit (degrees).
AREA_OF_USE_MARGIN_DEG = 2.0
# How closely a projected layer must fit once its x and y are exchanged to be called swapped (degrees).
SWAPPED_MARGIN_DEG = 0.5
# A feature is far from the rest of its layer beyond this distance from the layer's middle, or beyond
# FAR_FEATURE_FACTOR times the median feature's distance from it, whichever is larger (a town-wide layer of a mile
# across flags a parcel 5 miles out; a county layer only much farther). Layers of fewer features are not judged.
FAR_FEATURE_FT = 26_400.0
FAR_FEATURE_FACTOR = 10.0
FAR_FEATURE_MIN_COUNT = 5
# Layers farther apart than this (or than their own size) do not lie together: one is misplaced or swapped.
FAR_LAYER_FT = 52_800.0
# Layers that may lie apart from the others: a regional treatment plant can be miles from the village it serves.
# Any other layer apart from the rest is refused: none of its features is within reach of any parcel, so the
# results would read as if it were missing (a mains layer ten miles off: nobody must connect).
MAY_LIE_AWAY = frozenset({"outfalls"})
# A layer's extent, to tell where it lies among the others, is taken from an even sample of this many features.
EXTENT_SAMPLE = 100_001
# With no published area of use, a coordinate beyond this many CRS units (a billion metres or feet) is absurd.
ABSURD_COORDINATE = 1e9
# Sizes no town has (square feet): a median building footprint or lot this small means the coordinates are in a
# smaller unit than the CRS says (metres read as feet make every area 10.76 times too small and every distance
# 3.28 times too short). A house is 1,000-2,500 sq ft, a village lot 5,000-20,000; a layer's sheds and garages pull
# its median down, not under 300. (Feet read as metres put a layer 3.28 times farther from the CRS's origin, outside
# where the CRS is used: the placement check refuses it.)
SMALL_BUILDING_SQFT = 300.0
SMALL_PARCEL_SQFT = 1_200.0
# Fewer polygons than this are not judged (a hand-drawn test case); more are sampled evenly, this many at most.
SIZE_MIN_COUNT = 20
SIZE_SAMPLE = 20_001
SQFT_PER_SQM = (1 / 0.3048) ** 2


def crs_label(crs: CRS | None) -> str:
    """How a file names the CRS of the coordinates in its columns: its authority code (EPSG:2260), else its name
    (a SWMM model's own coordinates: 'Model coordinates (no real-world CRS)'); '' when there is none.

    Examples
    --------
    >>> crs_label(CRS.from_epsg(2260)), crs_label(None)
    ('EPSG:2260', '')
    """
    if crs is None:
        return ""
    code = CRS.from_user_input(crs).to_authority()
    return ":".join(code) if code else CRS.from_user_input(crs).name


def parse_crs(text: str, *, what: str, fix: Fix | None = None) -> CRS:
    """A CRS from user text (``EPSG:2260``, ``2260``, WKT, PROJ), or a LayerError that says what was wrong.

    ``what`` names the CRS in the message ("the measuring CRS"); ``fix`` the setting that gives it.
    """
    try:
        return CRS.from_user_input(int(text) if str(text).isdigit() else text)
    except CRSError as exc:
        raise LayerError(
            f"{what[:1].upper()}{what[1:]}: {text!r} is not a coordinate reference system (try EPSG:2260).", fix=fix
        ) from exc


def measuring_crs(text: str) -> CRS:
    """The CRS distances are measured in; must be projected with a linear unit."""
    crs = parse_crs(text, what="the measuring CRS", fix=Fix("crs", example="EPSG:2260"))
    if not crs.is_projected:
        raise LayerError(
            f"The measuring CRS {crs.to_string()} is not projected: distances cannot be measured in degrees. "
            "Measure in a projected CRS in feet or metres, e.g. EPSG:2260 (New York East, US survey feet).",
            fix=Fix("crs", example="EPSG:2260"),
        )
    return crs


def check_and_reproject(
    gdf: gpd.GeoDataFrame,
    *,
    layer: str,
    label: str,
    target: CRS,
    assume: str | None = None,
    ids: pd.Series | None = None,
    override: str | None = None,
    workers: int = 1,
    example: str = "EPSG:2260",
    town_measured: bool = False,
    beside: tuple[str, ...] = (),
) -> tuple[gpd.GeoDataFrame | None, list[Problem]]:
    """Check the layer's CRS against its coordinates, then reproject it to ``target``.

    ``assume`` is the CRS the user told us to use for a layer that declares none; ``override`` the CRS the user
    gave for this layer by name, which replaces a declared one (a .prj that lies: the replacement is reported, and
    the coordinates must fit the CRS given as they must fit a declared one, and a layer that does not is told to
    give the right one for it, not to measure elsewhere); ``ids`` name the features in
    problems (row numbers when absent); ``workers``: threads for the features' boxes; ``example`` the CRS a fix
    offers for a layer that declares none. ``town_measured``: the town's layers are measured in ``target`` already
    (a proposed main read for a store), so a layer lying outside where it is used is in a wrong CRS itself, and is
    not told to measure the town in another. ``beside``: the kinds of the other layers given with it, which lie where
    ``target`` is used (parcels, streets): a layer outside it is in a wrong CRS itself, for the same reason. Returns
    ``None`` with an error problem when the layer cannot be trusted: no CRS, a CRS its coordinates do not fit,
    swapped axes, or features outside where the CRSs are used. Features far from the rest of the layer are kept and
    reported as a warning. The result remembers the CRS it came in (``attrs["source_crs"]``) so that
    :func:`check_layers_together` can tell a swapped layer from a distant one.
    """
    given = gdf
    replaced: list[Problem] = []
    if override is not None:
        chosen = parse_crs(override, what=f"the CRS given for the {layer} layer", fix=Fix("layer_crs", layer, example))
        if gdf.crs is not None and not CRS(gdf.crs).equals(chosen):
            replaced.append(
                Problem(
                    layer,
                    "crs_replaced",
                    "warning",
                    f"{label} declares {CRS(gdf.crs).name}; the CRS given for the {layer} layer, {chosen.name}, is "
                    "used instead.",
                )
            )
        gdf = gdf.set_crs(chosen, allow_override=True)
    elif gdf.crs is None:
        if assume is None:
            # the .prj is a shapefile's: a GeoPackage, DXF or FlatGeobuf without a CRS was sent to look for one
            other = re.search(r"\.(gpkg|geojson|json|fgb|dxf|kml|csv|gdb|parquet|sqlite)\b", label, re.I)
            where = "the file declares none" if other else "a shapefile's .prj file declares it"
            said = f"{label} has no coordinate reference system ({where})"
            lonlat = _degrees_where_measured(gdf, target, workers)
            if lonlat is not None:
                # Named the measuring CRS, a file of degrees was refused a second time, now as degrees in feet.
                return None, [
                    Problem(
                        layer,
                        "no_crs",
                        "error",
                        f"{said}, and its coordinates look like degrees of longitude and latitude "
                        f"({lonlat[0]:.4f}, {lonlat[1]:.4f}) lying where the town's measuring CRS, {target.name}, is "
                        f"used: give EPSG:4326 (longitude/latitude) as the {layer} layer's CRS; otherwise give the CRS "
                        "it was drawn in.",
                        fix=Fix("layer_crs", layer, "EPSG:4326"),
                    )
                ]
            return None, [
                Problem(
                    layer,
                    "no_crs",
                    "error",
                    f"{said}: give the CRS it was drawn in.",
                    fix=Fix("layer_crs", layer, example),
                )
            ]
        gdf = gdf.set_crs(
            parse_crs(assume, what=f"the CRS given for the {layer} layer", fix=Fix("layer_crs", layer, example))
        )
    crs = CRS(gdf.crs)
    if crs.is_geographic and len(crs.axis_info) > 2:
        # A 3-D geographic CRS (EPSG:4979): the Z values were dropped already; measure in its 2-D form.
        crs = crs.to_2d()
        gdf = gdf.set_crs(crs, allow_override=True)
    bounds = elementwise(shapely.bounds, np.asarray(gdf.geometry.values), workers=workers)
    usable = np.isfinite(bounds).all(axis=1)
    # A model's own coordinates (an engineering CRS, a schematic SWMM model) lie nowhere on Earth: there is no
    # area of use to check them against, and they are never measured against real-world layers.
    centre = None
    if usable.any() and not crs.is_engineering:
        centre = _middle(bounds, usable)
        wrong = _placement(
            crs,
            target,
            centre,
            layer=layer,
            label=label,
            town_measured=town_measured,
            example=example,
            given=override is not None,
            beside=beside,
        )
        if wrong is not None:
            return None, [_declared_fits(wrong, given, crs, target, centre, layer=layer, label=label)]
        outside = _outside_features(crs, target, bounds, usable, centre, layer=layer, label=label, ids=ids)
        if outside is not None:
            return None, [outside]
    problems: list[Problem] = list(replaced)
    if not crs.equals(target):
        with np.errstate(all="ignore"):
            gdf = gdf.to_crs(target)
            moved = shapely.bounds(np.asarray(gdf.geometry.values))
            # GEOS's bounds skip a NaN vertex; a line's length or a polygon's perimeter does not.
            lost = usable & ~(np.isfinite(moved).all(axis=1) & np.isfinite(shapely.length(gdf.geometry.values)))
        if lost.any():
            return None, [
                Problem(
                    layer,
                    "crs_mismatch",
                    "error",
                    f"{label}: {int(lost.sum())} feature(s) cannot be expressed in the measuring CRS {target.name} "
                    "(reprojecting them gives no coordinates); check where they lie, or measure in a CRS made for "
                    "that place.",
                    int(lost.sum()),
                    _named(ids, lost),
                )
            ]
        bounds, centre = moved, None  # the middle moved with the layer
    problems += _far_features(bounds, usable, feet_per_unit(target), layer=layer, label=label, ids=ids, centre=centre)
    if gdf is given:  # already in the measuring CRS: a new frame all the same, the caller's is not changed
        gdf = gdf.copy(deep=False)
    gdf.attrs["source_crs"] = crs.to_wkt()
    gdf.attrs["crs_given"] = override is not None  # check_layers_together: a layer apart points to the CRS given
    return gdf, problems


def suggested_measuring_crs(gdf: gpd.GeoDataFrame, target: CRS) -> str | None:
    """The CRS to measure ``gdf`` in when it lies outside where ``target`` is used, else None.

    The same judgement, and the same suggestion (the WGS 84 / UTM zone where the layer lies), as the refusal
    :func:`check_and_reproject` gives such a layer (``crs_mismatch`` whose fix is the measuring CRS): the web's
    column-mapping page offers it before the data is checked. None for a layer inside ``target``'s area, one
    without a CRS, one whose CRS does not fit its coordinates (its own refusal says what to do), and one in a model's
    own coordinates.

    Examples
    --------
    >>> from shapely.geometry import box
    >>> bellinge = gpd.GeoDataFrame(geometry=[box(583_000, 6_134_000, 583_050, 6_134_030)], crs="EPSG:32632")
    >>> fort_plain = gpd.GeoDataFrame(geometry=[box(-74.63, 42.93, -74.62, 42.94)], crs="EPSG:4326")
    >>> new_york_east = CRS.from_epsg(2260)
    >>> suggested_measuring_crs(bellinge, new_york_east), suggested_measuring_crs(fort_plain, new_york_east)
    ('EPSG:32632', None)
    """
    found = _placed(gdf, target)
    if not isinstance(found, Problem) or found.fix is None or found.fix.setting != "crs":
        return None
    return found.fix.example if found.fix.example.startswith("EPSG:") else None


def lies_where_measured(gdf: gpd.GeoDataFrame, target: CRS) -> bool:
    """Whether ``gdf``, read in the CRS it declares, lies where ``target`` is used (the check takes its place): the
    web's mapping page suggests measuring elsewhere only when no layer of the upload does (mains whose file declared
    UTM zone 18N beside parcels in New York are in a wrong CRS, not a town to measure off Central America)."""
    return _placed(gdf, target) is None


def _placed(gdf: gpd.GeoDataFrame, target: CRS) -> Problem | None | bool:
    """The check of where ``gdf`` lies (``_placement``): None where it lies where ``target`` is used, a Problem where
    it does not, False where there is nothing to judge (no CRS, no geometry, a model's own coordinates)."""
    if getattr(gdf, "crs", None) is None or len(gdf) == 0:  # a table without geometry (CSV parcels) too
        return False
    crs = CRS(gdf.crs)
    if crs.is_engineering:
        return False
    bounds = shapely.bounds(np.asarray(gdf.geometry.values))
    usable = np.isfinite(bounds).all(axis=1)
    if not usable.any():
        return False
    return _placement(crs, target, _middle(bounds, usable), layer="", label="")


def check_layers_together(frames: dict[str, gpd.GeoDataFrame], labels: dict[str, str]) -> list[Problem]:
    """Compare where validated layers (all in one measuring CRS) lie: swapped axes, or a layer far from the rest.

    The layers that lie together (within ``FAR_LAYER_FT`` of each other, or of their own size) are the consensus:
    the largest such group, the parcels' on a tie. A layer apart from it is refused when exchanging its x and y in
    the CRS it came in brings it among them (its axes are swapped), and refused as far otherwise (``far_layer``),
    except a layer that may lie away (``MAY_LIE_AWAY``: a treatment plant), which is a warning. Two layers apart
    with no third to tell which is right are refused together when exchanging either one's axes would join them.
    """
    boxes = {k: b for k, f in frames.items() if (b := _extent(f)) is not None}
    if len(boxes) < 2:
        return []
    crs = CRS(next(iter(frames.values())).crs)
    fpu = feet_per_unit(crs)

    def near(a: tuple, b: tuple) -> bool:
        reach = max(FAR_LAYER_FT / fpu, _size(a), _size(b))
        return _box_gap(a, b) <= reach

    groups = {k: [j for j in boxes if near(boxes[k], boxes[j])] for k in boxes}
    rank = {k: (len(g), k == "parcels", k == "mains") for k, g in groups.items()}
    anchor = max(boxes, key=lambda k: rank[k])
    together = groups[anchor]
    apart = [k for k in boxes if k not in together]
    if not apart:
        return []
    box = _union([boxes[k] for k in together])
    reach = max(FAR_LAYER_FT / fpu, _size(box))
    if len(together) == 1 and len(apart) == 1:
        (a,), (b,) = together, apart
        if _gap(_swapped_in(frames[a], _box_centre(boxes[a]), crs), boxes[b]) <= reach or (
            _gap(_swapped_in(frames[b], _box_centre(boxes[b]), crs), boxes[a]) <= reach
        ):
            return [
                Problem(
                    a,
                    "swapped_axes",
                    "error",
                    f"{labels[a]} and {labels[b]} lie {_box_gap(boxes[a], boxes[b]) * fpu / 5280:,.1f} miles apart, "
                    "and exchanging x and y in either one brings them together: one of them has its x and y "
                    "swapped (latitude before longitude, or northing before easting). Look at both on a map, swap "
                    "the wrong one back (QGIS: Processing, 'Swap X and Y coordinates') and save it with x first.",
                )
            ]
    problems = []
    for kind in apart:
        gap_mi = _box_gap(boxes[kind], box) * fpu / 5280
        if _gap(_swapped_in(frames[kind], _box_centre(boxes[kind]), crs), box) <= reach:
            problems.append(
                _swapped_problem(
                    kind,
                    labels[kind],
                    f"it lies {gap_mi:,.1f} miles from the {_and(together)}, but read as y, x it lies among them",
                )
            )
        elif kind in MAY_LIE_AWAY:
            problems.append(
                Problem(
                    kind,
                    "far_layer",
                    "warning",
                    f"{labels[kind]} lies {gap_mi:,.1f} miles from the {_and(together)}: check that they are "
                    "of the same place and that each declares the CRS it was drawn in.",
                )
            )
        else:
            problems.append(_far_layer(frames, kind, together, labels[kind], gap_mi))
    return problems


def _far_layer(frames: dict[str, gpd.GeoDataFrame], kind: str, together: list[str], label: str, gap_mi: float):
    """The error for a layer that lies apart from the ``together`` layers. A layer read in a CRS given for it by name
    (``attrs["crs_given"]``) is told to give the right one (the fix: the CRS the others came in, where they share
    one EPSG code): the .prj of the others fits where they lie, and the one given is the likely mistake."""
    told = (
        f"{label} lies {gap_mi:,.1f} miles from the {_and(together)}: nothing in it is within reach of anything in "
        "them, so every result would read as if it had not been given."
    )
    if not frames[kind].attrs.get("crs_given"):
        return Problem(
            kind,
            "far_layer",
            "error",
            f"{told} Check that they are of the same place and that each declares the CRS it was drawn in (its .prj, "
            "or the CRS given for the layer).",
        )
    given = CRS.from_wkt(frames[kind].attrs["source_crs"]).name
    codes = {_epsg(frames[k]) for k in together}
    example = codes.pop() if len(codes) == 1 and None not in codes else "EPSG:2260"
    return Problem(
        kind,
        "far_layer",
        "error",
        f"{told} It was read in {given}, the CRS given for the {kind} layer: if that is not the CRS it was drawn in, "
        f"give the right one as the {kind} layer's CRS; if it is, check that the layers are of the same place.",
        fix=Fix("layer_crs", kind, example),
    )


def _epsg(frame: gpd.GeoDataFrame) -> str | None:
    """The EPSG code of the CRS a validated layer came in (``attrs["source_crs"]``), as EPSG:N; None without one."""
    wkt = frame.attrs.get("source_crs")
    code = CRS.from_wkt(wkt).to_epsg() if wkt else None
    return f"EPSG:{code}" if code else None


def miles_from_layers(geometry, frames: list[gpd.GeoDataFrame]) -> float | None:
    """How many miles ``geometry`` lies from where ``frames`` lie (all in one measuring CRS), when it lies apart
    from them as ``check_layers_together`` reckons a layer apart (beyond ``FAR_LAYER_FT`` and their own size);
    None when it lies with them, or when they are empty."""
    boxes = [b for f in frames if (b := _extent(f)) is not None]
    if not boxes:
        return None
    fpu = feet_per_unit(CRS(frames[0].crs))
    box = _union(boxes)
    gap = _box_gap(tuple(float(v) for v in shapely.bounds(geometry)), box)
    return gap * fpu / 5280 if gap > max(FAR_LAYER_FT / fpu, _size(box)) else None


def check_sizes(frames: dict[str, gpd.GeoDataFrame], labels: dict[str, str]) -> list[Problem]:
    """Warn when the parcels' or buildings' median area says a layer said to be in feet was drawn in metres.

    A layer in metres whose .prj (or the CRS given for it) says feet passes every placement check when it lies
    where the feet would, yet every distance comes out 3.28 times too short and every building 10.76 times too
    small (so most stand under the least occupied building). Its median building footprint (or lot) is then
    smaller than any town's. Medians are of an even sample of the polygons, in the measuring CRS; a warning, not
    a refusal, since a layer of sheds could be real.
    """
    problems = []
    for kind, low in (("buildings", SMALL_BUILDING_SQFT), ("parcels", SMALL_PARCEL_SQFT)):
        frame = frames.get(kind)
        median = None if frame is None else _median_area_sqft(frame)
        if median is None:
            continue
        drawn = CRS.from_wkt(frame.attrs["source_crs"]) if frame.attrs.get("source_crs") else CRS(frame.crs)
        in_feet = drawn.is_projected and abs(feet_per_unit(drawn) - 1) < 0.01
        if in_feet and median < low:
            what = "building footprint" if kind == "buildings" else "parcel"
            told = f"{labels[kind]}: the median {what} is {median:,.0f} sq ft, reading its coordinates in {drawn.name}"
            problems.append(
                Problem(
                    kind,
                    "implausible_size",
                    "warning",
                    f"{told}; no town's are that small. If the layer was drawn in metres (a median of "
                    f"{median * SQFT_PER_SQM:,.0f} sq ft), its CRS is wrong, and every distance measured in it is 3.28 "
                    "times too short: give the CRS it was drawn in, in metres, for this layer and every layer drawn "
                    "the same way.",
                    fix=Fix("layer_crs", kind, _in_metres(drawn)),
                )
            )
    return problems


def _in_metres(crs: CRS) -> str:
    """The EPSG code of ``crs``'s projection in metres, found by EPSG's names; "" when there is none."""
    name = crs.name.removesuffix(" (ftUS)").removesuffix(" (ft)")
    code = _epsg_projected().get(name) if name != crs.name else None
    return f"EPSG:{code}" if code else ""


@lru_cache(maxsize=1)
def _epsg_projected() -> dict[str, str]:
    """EPSG's projected CRSs that are in use, by name (0.1 s, once, and only when a size looks wrong)."""
    from pyproj.database import query_crs_info
    from pyproj.enums import PJType

    infos = query_crs_info(auth_name="EPSG", pj_types=PJType.PROJECTED_CRS)
    return {i.name: i.code for i in reversed(infos) if not i.deprecated}


def _median_area_sqft(frame: gpd.GeoDataFrame) -> float | None:
    """Median area of the polygons among an even sample of a layer's features, in square feet; None for too few."""
    sample = _even_sample(np.asarray(frame.geometry.values), SIZE_SAMPLE)
    polygons = sample[np.isin(shapely.get_type_id(sample), (3, 6))]
    if len(polygons) < SIZE_MIN_COUNT:
        return None
    return float(np.median(shapely.area(polygons))) * feet_per_unit(CRS(frame.crs)) ** 2


def _even_sample(values: np.ndarray, most: int) -> np.ndarray:
    """Every k-th value, k chosen so that about ``most`` are kept (all of them when there are fewer)."""
    return values[:: max(1, len(values) // most)]


def _and(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


@lru_cache(maxsize=64)
def _transformer(source: CRS, target: CRS) -> Transformer:
    """A lon/lat-ordered transformer, made once per pair of CRSs (making one costs more than using it)."""
    return Transformer.from_crs(source, target, always_xy=True)


def _named(ids: pd.Series | None, mask: np.ndarray) -> tuple[str, ...]:
    """The IDs of the features under ``mask``; their row numbers (1-based) without IDs."""
    if ids is None:
        return tuple(f"row {i + 1}" for i in np.flatnonzero(mask))
    return tuple(ids[mask].astype(str))


def _degrees_where_measured(gdf: gpd.GeoDataFrame, target: CRS, workers: int = 1) -> tuple[float, float] | None:
    """The middle of a layer that declares no CRS, where its coordinates look like degrees (every feature within
    longitude -180 to 180 and latitude -90 to 90) that lie where ``target``, the measuring CRS, is used; else None.

    Such a file (a shapefile of the main without its .prj, drawn in longitude/latitude) was told to give the
    measuring CRS, and then refused a second time as degrees in a projected CRS. Coordinates a town's grid might
    hold (a schematic model's 0 to 500) lie elsewhere on the earth read as degrees, and are told as before."""
    bounds = elementwise(shapely.bounds, np.asarray(gdf.geometry.values), workers=workers)
    usable = np.isfinite(bounds).all(axis=1)
    if not usable.any():
        return None
    inside = bounds[usable]
    if not ((np.abs(inside[:, [0, 2]]) <= 180).all() and (np.abs(inside[:, [1, 3]]) <= 90).all()):
        return None
    centre = _middle(bounds, usable)
    area = _lonlat_area(target)
    return centre if area is not None and _inside(centre, area) else None


def _middle(bounds: np.ndarray, usable: np.ndarray) -> tuple[float, float]:
    """Where most of a layer lies: the median of its usable features' box centres (one stray vertex does not move
    it). The centres are taken from the whole array and only they are masked: copying a million boxes to mask them
    cost more than the medians."""
    cx, cy = (bounds[:, 0] + bounds[:, 2]) / 2, (bounds[:, 1] + bounds[:, 3]) / 2
    if not usable.all():
        cx, cy = cx[usable], cy[usable]
    return float(np.median(cx)), float(np.median(cy))


def _lonlat_area(crs: CRS, margin: float = AREA_OF_USE_MARGIN_DEG) -> tuple[float, float, float, float] | None:
    """The CRS's area of use in degrees, grown by ``margin``; ``None`` when the CRS publishes none."""
    area = crs.area_of_use
    if area is None:
        return None
    m = margin
    west, east = area.west - m, area.east + m
    if area.west > area.east:  # it crosses the antimeridian (NAD83 reaches from the Aleutians east)
        west, east = -180.0, 180.0
    return max(west, -180.0), max(area.south - m, -90.0), min(east, 180.0), min(area.north + m, 90.0)


def _to_lonlat(crs: CRS, x: float, y: float) -> tuple[float, float] | None:
    if crs.is_geographic:
        return (x, y) if abs(x) <= 180 and abs(y) <= 90 else None
    try:
        with np.errstate(invalid="ignore", over="ignore"):
            lon, lat = _transformer(crs, WGS84).transform(x, y)
    except Exception:  # a point the projection cannot invert lies nowhere on Earth
        return None
    return (float(lon), float(lat)) if np.isfinite(lon) and np.isfinite(lat) else None


def _inside(point: tuple[float, float] | None, box: tuple[float, float, float, float] | None) -> bool:
    if point is None:
        return False
    return box is None or (box[0] <= point[0] <= box[2] and box[1] <= point[1] <= box[3])


def _where(point: tuple[float, float] | None) -> str:
    return (
        "where no coordinates can be computed"
        if point is None
        else f"near longitude {point[0]:.2f}, latitude {point[1]:.2f}"
    )


def _placement(
    crs: CRS,
    target: CRS,
    centre: tuple[float, float],
    *,
    layer,
    label,
    town_measured=False,
    example="EPSG:2260",
    given=False,
    beside=(),
) -> Problem | None:
    """An error when the layer as a whole does not lie where its CRS and the measuring CRS are used.

    ``given``: ``crs`` is the CRS the user gave the layer by name, not one it declares: where it places the layer
    outside where the measuring CRS is used, that CRS is the first suspect (a mistyped zone, feet read as metres),
    and the fix named is the layer's CRS; measuring elsewhere is told as the way for data that really lies there.
    """
    x, y = centre
    degrees = abs(x) <= 180 and abs(y) <= 90
    own, measuring = _lonlat_area(crs), _lonlat_area(target)
    here, there = _to_lonlat(crs, x, y), _to_lonlat(crs, y, x)
    if crs.is_projected and degrees:
        return Problem(
            layer,
            "crs_mismatch",
            "error",
            f"{label} declares {crs.name} (projected) but its coordinates look like degrees "
            f"({x:.4f}, {y:.4f}). If it is longitude/latitude, give EPSG:4326 as the {layer} layer's CRS; otherwise "
            "give the CRS it was drawn in.",
            fix=Fix("layer_crs", layer, "EPSG:4326"),
        )
    if _inside(here, own) and _inside(here, measuring):
        return None
    # Exchanged x and y must fit closely: in a projected CRS a mislabelled zone (New York East feet labelled Long
    # Island) can land within the margin either way round, and is a wrong CRS, not swapped axes.
    close = AREA_OF_USE_MARGIN_DEG if crs.is_geographic else SWAPPED_MARGIN_DEG
    if _inside(there, _lonlat_area(crs, close)) and _inside(there, _lonlat_area(target, close)):
        # Coordinates that lie where the measuring CRS is used when read in it were drawn in it, whatever the layer
        # declares: the sample village's parcels declared in a custom transverse Mercator were told their x and y
        # were swapped, and swapping them back would have ruined them (a tester).
        as_target = _to_lonlat(target, x, y) if crs.is_projected and not crs.equals(target) else None
        if as_target is not None and not target.is_geographic and _inside(as_target, _lonlat_area(target)):
            code = target.to_epsg()
            return Problem(
                layer,
                "crs_mismatch",
                "error",
                f"{label} declares {crs.name}, in which it lies {_where(here)}, but its coordinates read in the "
                f"measuring CRS {target.name} lie {_where(as_target)}, where that CRS is used. It was most likely "
                f"drawn in {target.name}: give that as the {layer} layer's CRS (its x and y are not swapped).",
                fix=Fix("layer_crs", layer, f"EPSG:{code}") if code else None,
            )
        return _swapped_problem(
            layer,
            label,
            f"read as x, y it lies {_where(here)}, but read as y, x it lies {_where(there)}, where {crs.name}"
            + (" is used" if crs.equals(target) else f" and the measuring CRS {target.name} are used"),
        )
    if crs.is_geographic and not degrees:
        return Problem(
            layer,
            "crs_mismatch",
            "error",
            f"{label} declares {crs.name} (degrees) but its coordinates lie near ({x:.0f}, {y:.0f}), which are not "
            f"longitudes and latitudes. Give the CRS it was really drawn in as the {layer} layer's CRS (e.g. "
            "EPSG:2260).",
            fix=Fix("layer_crs", layer, "EPSG:2260"),
        )
    if not _inside(here, own):
        check = "Give the CRS it was drawn in" if given else "Check the .prj, or give the right CRS"
        return Problem(
            layer,
            "crs_mismatch",
            "error",
            f"{label} {_read_in(crs, layer, given)}, but its coordinates fall {_where(here)}, outside where that CRS "
            f"is used. {check} as the {layer} layer's CRS.",
            fix=Fix("layer_crs", layer, "EPSG:2260"),
        )
    if town_measured:
        # Manchester, VT's line in Vermont feet given as New York East: told to measure in UTM zone 18N instead,
        # which the town's layers, measured in Vermont's CRS already, did not need.
        return Problem(
            layer,
            "crs_mismatch",
            "error",
            f"{label} lies {_where(here)} read in {crs.name}, outside where the town's measuring CRS {target.name} "
            f"is used: {crs.name} is most likely not the CRS it was drawn in. Give the CRS it was drawn in as the "
            f"{layer} layer's CRS.",
            fix=Fix("layer_crs", layer, example),
        )
    if beside:
        # Mains whose .prj said UTM zone 18N, beside parcels in New York East: told to measure the town in UTM zone
        # 18N (off Central America), where the parcels then lay 2,000 miles away.
        check = "Give the CRS it was drawn in" if given else "Check its .prj, or give the CRS it was drawn in"
        return Problem(
            layer,
            "crs_mismatch",
            "error",
            f"{label} lies {_where(here)} read in {crs.name}, outside where the measuring CRS {target.name} is used, "
            f"while the {_and(list(beside))} {'layer' if len(beside) == 1 else 'layers'} given with it "
            f"{'lies' if len(beside) == 1 else 'lie'} where it is used: {crs.name} is most likely not the CRS it was "
            f"drawn in. {check} as the {layer} layer's CRS; if it is, the layers are not of one place.",
            fix=Fix("layer_crs", layer, example),
        )
    utm = _utm_zone(here)
    elsewhere = f", such as {utm} ({CRS(utm).name})" if utm else ""
    if given:
        # EPSG:32618 given for parcels drawn in New York East feet put them in the Caribbean: told to measure in
        # UTM zone 18N, the planner did, and the parcels then lay 2,000 miles from every other layer.
        return Problem(
            layer,
            "crs_mismatch",
            "error",
            f"{label} lies {_where(here)} read in {crs.name}, the CRS given for the {layer} layer, outside where the "
            f"measuring CRS {target.name} is used. If {crs.name} is not the CRS it was drawn in, give the right one "
            f"as the {layer} layer's CRS; if it is, measure in a projected CRS made for where it lies{elsewhere}.",
            fix=Fix("layer_crs", layer, example),
        )
    return Problem(
        layer,
        "crs_mismatch",
        "error",
        f"{label} lies {_where(here)}, outside where the measuring CRS {target.name} is used, so distances measured "
        f"in it would be distorted; measure in a projected CRS made for that place{elsewhere}.",
        fix=Fix("crs", "", utm or "CRS"),
    )


def _declared_fits(
    wrong: Problem, given: gpd.GeoDataFrame, crs: CRS, target: CRS, centre, *, layer: str, label: str
) -> Problem:
    """``wrong`` (the layer refused in ``crs``), or, where ``crs`` was given for the layer in place of the CRS its file
    declares and the declared one fits its coordinates, a refusal saying so: EPSG:2260 given for parcels whose .prj
    said UTM zone 18N, rightly, was told "Use --layer-crs parcels=EPSG:2260", the value just given (a tester)."""
    declared = CRS(given.crs) if given.crs is not None else None
    if declared is None or declared.equals(crs) or declared.is_engineering:
        return wrong
    if _placement(declared, target, centre, layer=layer, label=label) is not None:
        return wrong
    code = crs_label(declared)
    return Problem(
        layer,
        "crs_mismatch",
        "error",
        f"{label} is read in {crs.name}, the CRS given for the {layer} layer, but its coordinates do not fit it; the "
        f"CRS its file declares, {declared.name} ({code}), does: give that one, or none, for the {layer} layer.",
        fix=Fix("layer_crs", layer, code),
    )


def _read_in(crs: CRS, layer: str, given: bool) -> str:
    """How the layer came to be read in ``crs``: the CRS it declares, or the one given for it by name."""
    return f"is read in {crs.name}, the CRS given for the {layer} layer" if given else f"declares {crs.name}"


def _utm_zone(point: tuple[float, float] | None) -> str | None:
    """The WGS 84 / UTM zone holding a lon/lat point (a projected CRS made for any place but the poles), or None.

    Examples
    --------
    >>> _utm_zone((10.31, 55.34)), _utm_zone((-74.0, 40.7)), _utm_zone((151.2, -33.9)), _utm_zone(None)
    ('EPSG:32632', 'EPSG:32618', 'EPSG:32756', None)
    """
    if point is None or not (-80 <= point[1] <= 84):
        return None
    zone = min(int((point[0] + 180) // 6) + 1, 60)
    return f"EPSG:{(32600 if point[1] >= 0 else 32700) + zone}"


def _swapped_problem(layer: str, label: str, evidence: str) -> Problem:
    return Problem(
        layer,
        "swapped_axes",
        "error",
        f"{label} has its x and y swapped (latitude before longitude, or northing before easting): {evidence}. "
        "Swap them back (QGIS: Processing, 'Swap X and Y coordinates') and save the layer with x (longitude or "
        "easting) first, as GeoJSON requires.",
    )


def _box_in(crs: CRS, lonlat: tuple[float, float, float, float] | None) -> tuple[float, float, float, float] | None:
    """A lon/lat box as a box in ``crs`` units (densified edges); ``None`` when it cannot be computed."""
    if lonlat is None:
        return None
    if crs.is_geographic:
        return lonlat
    try:
        with np.errstate(invalid="ignore", over="ignore"):
            box = _transformer(WGS84, crs).transform_bounds(*lonlat, densify_pts=21)
    except Exception:
        return None
    return tuple(float(v) for v in box) if np.isfinite(box).all() and box[0] < box[2] and box[1] < box[3] else None


def _outside_features(crs, target, bounds, usable, centre, *, layer, label, ids) -> Problem | None:
    """An error listing the features that reach outside where the layer's CRS and the measuring CRS are used."""
    allowed = [b for b in (_box_in(crs, _lonlat_area(crs)), _box_in(crs, _lonlat_area(target))) if b is not None]
    if allowed:
        x0, y0 = max(b[0] for b in allowed), max(b[1] for b in allowed)
        x1, y1 = min(b[2] for b in allowed), min(b[3] for b in allowed)
        both = "" if crs.equals(target) else f" and the measuring CRS {target.name} are"
        where = f"outside where {crs.name}{both or ' is'} used"
    else:
        x0 = y0 = -ABSURD_COORDINATE
        x1 = y1 = ABSURD_COORDINATE
        where = f"more than {ABSURD_COORDINATE:.0e} units from the origin of {crs.name}"
    if not (x0 <= centre[0] <= x1 and y0 <= centre[1] <= y1):
        return None  # the boxes are too coarse here; the layer as a whole was placed already
    inside = (bounds[:, 0] >= x0) & (bounds[:, 1] >= y0) & (bounds[:, 2] <= x1) & (bounds[:, 3] <= y1)
    outside = usable & ~inside
    if not outside.any():
        return None
    first = int(np.flatnonzero(outside)[0])
    far = bounds[first]
    names = _named(ids, outside)
    corner = (far[2] if far[2] > x1 else far[0], far[3] if far[3] > y1 else far[1])
    return Problem(
        layer,
        "outside_area",
        "error",
        f"{label}: {int(outside.sum())} feature(s) reach {where} (the first, {names[0]}, reaches "
        f"({corner[0]:.6g}, {corner[1]:.6g})); a mistyped or misplaced vertex is measured where it lies, so fix "
        "or delete them in the source data.",
        int(outside.sum()),
        names,
    )


def _far_features(bounds, usable, fpu, *, layer, label, ids, centre=None) -> list[Problem]:
    """A warning listing features far from the middle of their layer (measured in the measuring CRS); ``centre``:
    that middle, when the caller has it for these bounds."""
    if usable.sum() < FAR_FEATURE_MIN_COUNT:
        return []
    cx = (bounds[:, 0] + bounds[:, 2]) / 2
    cy = (bounds[:, 1] + bounds[:, 3]) / 2
    mx, my = centre if centre is not None else _middle(bounds, usable)
    away_ft = np.hypot(cx - mx, cy - my) * fpu
    typical = float(np.median(away_ft if usable.all() else away_ft[usable]))
    limit = max(FAR_FEATURE_FT, FAR_FEATURE_FACTOR * typical)
    far = usable & (away_ft > limit)
    if not far.any():
        return []
    return [
        Problem(
            layer,
            "far_feature",
            "warning",
            f"{label}: {int(far.sum())} feature(s) lie far from the rest of the layer (up to "
            f"{away_ft[far].max() / 5280:,.1f} miles from its middle, where half the features lie within "
            f"{typical / 5280:,.2f} miles); check their coordinates, since each is measured where it lies.",
            int(far.sum()),
            _named(ids, far),
        )
    ]


def _extent(frame: gpd.GeoDataFrame) -> tuple[float, float, float, float] | None:
    """The box holding the middle 98% of a layer's feature centres (a few strays do not stretch it), from an even
    sample of at most ``EXTENT_SAMPLE`` features: a million parcels' boxes and quantiles took 0.3 s of reading them,
    to place the layer within miles."""
    b = shapely.bounds(_even_sample(np.asarray(frame.geometry.values), EXTENT_SAMPLE))
    b = b[np.isfinite(b).all(axis=1)]
    if not len(b):
        return None
    cx, cy = (b[:, 0] + b[:, 2]) / 2, (b[:, 1] + b[:, 3]) / 2
    (x0, x1), (y0, y1) = np.quantile(cx, [0.01, 0.99]), np.quantile(cy, [0.01, 0.99])
    return float(x0), float(y0), float(x1), float(y1)


def _box_centre(box: tuple[float, float, float, float]) -> tuple[float, float]:
    return (box[0] + box[2]) / 2, (box[1] + box[3]) / 2


def _size(box: tuple[float, float, float, float]) -> float:
    return float(np.hypot(box[2] - box[0], box[3] - box[1]))


def _union(boxes: list[tuple[float, float, float, float]]) -> tuple[float, float, float, float]:
    return (
        min(b[0] for b in boxes),
        min(b[1] for b in boxes),
        max(b[2] for b in boxes),
        max(b[3] for b in boxes),
    )


def _box_gap(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> float:
    """Distance between two boxes (0 when they overlap)."""
    dx = max(b[0] - a[2], 0.0, a[0] - b[2])
    dy = max(b[1] - a[3], 0.0, a[1] - b[3])
    return float(np.hypot(dx, dy))


def _gap(point: tuple[float, float] | None, box: tuple[float, float, float, float]) -> float:
    """Distance from a point to a box (0 inside it); infinite for no point."""
    if point is None:
        return float("inf")
    dx = max(box[0] - point[0], 0.0, point[0] - box[2])
    dy = max(box[1] - point[1], 0.0, point[1] - box[3])
    return float(np.hypot(dx, dy))


def _swapped_in(frame: gpd.GeoDataFrame, point: tuple[float, float], crs: CRS) -> tuple[float, float] | None:
    """Where ``point`` (in ``crs``) would lie had the layer's x and y been exchanged in the CRS it came in."""
    source = frame.attrs.get("source_crs")
    if source is None:
        return None
    source = CRS.from_wkt(source)
    try:
        with np.errstate(invalid="ignore", over="ignore"):
            x, y = _transformer(crs, source).transform(*point)
            sx, sy = _transformer(source, crs).transform(y, x)
    except Exception:
        return None
    return (float(sx), float(sy)) if np.isfinite(sx) and np.isfinite(sy) else None
