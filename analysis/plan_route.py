"""Where a proposed main runs: across existing mains, across private parcels, and under buildings.

Three things a municipal engineer looks for first in a drawn extension, all design checks rather than rules of the
sewer-use laws sewerplan encodes:

- **Crossings.** Two pipes crossing at one place with no manhole there is not a design an engineer submits: either
  the new main joins the old one (in a manhole) or it must clear it. Every place the main as built (the drawn main
  and its connecting main) meets an existing main is found, except where it connects and at an existing manhole:
  within ``network.snap_tolerance_ft``, the tolerance by which the network and the plan's connection already read
  "meets". A main it runs along (a street's main drawn over again) is found too, with the length it duplicates,
  also where drawn a hair beside it (within that tolerance).
- **Private land.** The main's length outside every street right-of-way (``analysis.streets.rights_of_way``, as the
  mandate reads the streets) and every sewer right-of-way, across each parcel: a main there needs an easement from
  each owner. A parcel crossed for less than ``design.easement_min_ft`` in all is not counted: the street edge of a
  tax map and of a streets layer rarely meet, so a main crossing a street edge at a slant shows a sliver of
  "parcel" that is street.
- **Buildings.** Every building whose footprint the main passes through, the parcel it stands on and the length of
  main under it. None of the three laws sets a clearance between a main and a building (Fort Plain's three feet
  from a bearing wall is for a building sewer laid along it), so the test is the footprint itself.

All return frames, one row per finding, with the station (feet along the built main from where it connects), so
a board can be told where; ``analysis.plans`` words them as checks.
"""

from __future__ import annotations

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely

from analysis.mandate import locate_buildings
from analysis.profiles import Profile
from analysis.streets import rights_of_way

CROSSES, ENDS_ON, RUNS_ALONG = "crosses", "ends on", "runs along"
CROSSING_COLUMNS = ["main_id", "sewer_type", "status", "described", "kind", "x", "y", "station_ft", "length_ft"]
PARCEL_COLUMNS = ["parcel_id", "owner_name", "site_address", "length_ft", "from_station_ft", "to_station_ft"]
BUILDING_COLUMNS = ["building_id", "parcel_id", "length_ft", "from_station_ft", "to_station_ft"]


def mains_crossed(
    built,
    mains: gpd.GeoDataFrame,
    *,
    connects_at: list[tuple[float, float]],
    manholes_xy: np.ndarray,
    tolerance: float,
    fpu: float = 1.0,
) -> pd.DataFrame:
    """Every place the built main meets an existing main other than where it connects or at an existing manhole.

    ``built`` runs from the connection up (``PlanResult.built``); ``connects_at`` are the points where it joins
    the sewer (empty where that is not known: then both its ends are taken as joins), ``manholes_xy`` the existing
    manholes, ``tolerance`` in the layers' units. One row per meeting: ``kind`` is ``crosses`` (the main passes
    through), ``ends on`` (its upper end lies on the existing main) or ``runs along`` (it lies over the existing
    main for ``length_ft``); ``x``, ``y`` where (the middle of a run along), ``station_ft`` its distance along the
    built main from the connection.

    Examples
    --------
    >>> from shapely.geometry import LineString
    >>> mains = gpd.GeoDataFrame({"main_id": ["M-7"]}, geometry=[LineString([(200, -50), (200, 50)])])
    >>> found = mains_crossed(LineString([(0, 0), (400, 0)]), mains, connects_at=[(0, 0)],
    ...                       manholes_xy=np.zeros((0, 2)), tolerance=1.0)
    >>> found[["main_id", "kind", "x", "y", "station_ft"]].values.tolist()
    [['M-7', 'crosses', 200.0, 0.0, 200.0]]
    """
    empty = pd.DataFrame(columns=CROSSING_COLUMNS)
    if mains is None or len(mains) == 0:
        return empty
    geoms = np.asarray(mains.geometry.values)
    # Within the tolerance, as the network reads "meets": a main drawn a hair beside an existing one (a line read
    # back from degrees, or drawn without snapping) lies along it, and was found meeting nothing. Snapped to each
    # main's vertices within the tolerance, the built main overlaps it where it lies along it.
    hit = mains.sindex.query(built, predicate="dwithin", distance=tolerance)
    if len(hit) == 0:
        return empty
    snapped = shapely.snap(built, geoms[hit], tolerance)
    # and each main to the built main's vertices: a main whose upper end lies a hair off an existing main (a line
    # read back from degrees) gained the existing main's manhole as a vertex but still met it at that point only, so
    # its 200 ft over M-5 were found running along nothing
    parts, which = shapely.get_parts(
        shapely.intersection(shapely.snap(geoms[hit], snapped, tolerance), snapped), return_index=True
    )
    keep = ~shapely.is_empty(parts)
    parts, which = parts[keep], hit[which[keep]]
    # GEOS cuts a run along a main at the built main's vertices (a street run's segment ends): one run, one row
    lines = shapely.get_dimensions(parts) == 1
    if lines.any():
        mains_along, group = np.unique(which[lines], return_inverse=True)
        order = np.argsort(group, kind="stable")  # shapely gathers a collection's parts from sorted indices only
        merged, index = shapely.get_parts(
            shapely.line_merge(shapely.multilinestrings(parts[lines][order], indices=group[order])), return_index=True
        )
        parts, which = np.concatenate([parts[~lines], merged]), np.concatenate([which[~lines], mains_along[index]])
    ends = np.asarray(built.coords)[[0, -1], :2]
    joins = np.asarray(connects_at, dtype=float).reshape(-1, 2) if len(connects_at) else ends
    exempt = np.concatenate([joins, np.asarray(manholes_xy, dtype=float).reshape(-1, 2)])
    zone = shapely.union_all(shapely.buffer(shapely.points(exempt), tolerance)) if len(exempt) else None
    if zone is not None:
        away = ~shapely.covered_by(parts, zone)
        parts, which = parts[away], which[away]
    if len(parts) == 0:
        return empty
    along = shapely.get_dimensions(parts) == 1
    where = shapely.centroid(parts)
    where[along] = shapely.line_interpolate_point(parts[along], 0.5, normalized=True)
    xy = shapely.get_coordinates(where)
    station = shapely.line_locate_point(built, where)
    upper_end = shapely.dwithin(where, shapely.points(ends[1]), tolerance) & ~along
    column = _text_column(mains, "main_id", fallback=pd.Series(mains.index.astype(str), index=mains.index))
    out = pd.DataFrame(
        {
            "main_id": column[which],
            "sewer_type": _text_column(mains, "sewer_type")[which],
            "status": _text_column(mains, "status")[which],
            "described": _described(mains)[which],
            "kind": np.where(along, RUNS_ALONG, np.where(upper_end, ENDS_ON, CROSSES)),
            "x": np.round(xy[:, 0], 2),
            "y": np.round(xy[:, 1], 2),
            "station_ft": np.round(station * fpu, 1),
            "length_ft": np.round(shapely.length(parts) * fpu, 1),
        }
    )
    return out.sort_values(["station_ft", "main_id"], kind="stable").reset_index(drop=True)


def parcels_crossed(
    built,
    parcels: gpd.GeoDataFrame,
    *,
    profile: Profile,
    streets: gpd.GeoDataFrame | None = None,
    sewer_rights_of_way: gpd.GeoDataFrame | None = None,
    fpu: float = 1.0,
) -> pd.DataFrame:
    """The parcels the built main crosses outside every street and sewer right-of-way, and for how long.

    One row per parcel crossed for at least ``design.easement_min_ft`` in all: its ID, owner and address, the
    length of main across it (feet), the stations (feet along the built main from the connection) where that
    begins and ends, and that part of the main as its geometry (running as the main runs, its pieces joined where
    they meet). A main laid along a lot line lies on the parcels of both sides, and is in both rows: the length of
    main on private land is that of the geometries' union. A tax map whose parcels run to the middle of the road is
    read right: the street's right-of-way is taken out first.

    Examples
    --------
    >>> from shapely.geometry import LineString, box
    >>> from analysis.profiles import load_profile
    >>> parcels = gpd.GeoDataFrame({"parcel_id": ["L5"]}, geometry=[box(500, 25, 600, 125)])
    >>> streets = gpd.GeoDataFrame({"street_name": ["Oak St"]}, geometry=[LineString([(0, 0), (900, 0)])])
    >>> main = LineString([(0, 0), (520, 0), (520, 65)])  # in the street, then 40 ft into L5
    >>> parcels_crossed(main, parcels, profile=load_profile("fort-plain"), streets=streets)[
    ...     ["parcel_id", "length_ft", "from_station_ft", "to_station_ft"]].values.tolist()
    [['L5', 40.0, 545.0, 585.0]]
    """
    empty = gpd.GeoDataFrame(columns=PARCEL_COLUMNS, geometry=gpd.GeoSeries([], crs=parcels.crs), crs=parcels.crs)
    ways = []
    if streets is not None and len(streets):
        ways.append(rights_of_way(streets, profile=profile, fpu=fpu))
    if sewer_rights_of_way is not None and len(sewer_rights_of_way):
        ways.append(np.asarray(sewer_rights_of_way.geometry.values))
    off_street = built
    if ways:
        ways = np.concatenate(ways)
        near = shapely.STRtree(ways).query(built, predicate="intersects")
        if len(near):
            off_street = shapely.difference(built, shapely.union_all(ways[near]))
    if off_street.is_empty:
        return empty
    geoms = np.asarray(parcels.geometry.values)
    hit = parcels.sindex.query(off_street, predicate="intersects")
    if len(hit) == 0:
        return empty
    across = shapely.intersection(geoms[hit], off_street)
    length_ft = shapely.length(across) * fpu
    # a parcel the main only touches (0 ft) needs no easement, whatever the setting
    keep = (length_ft > 0) & (length_ft >= float(profile.design.easement_min_ft.value) - 1e-9)
    hit, across, length_ft = hit[keep], across[keep], length_ft[keep]
    if len(hit) == 0:
        return empty
    low, high, across = _along_main(built, across, fpu)
    out = gpd.GeoDataFrame(
        {
            "parcel_id": parcels["parcel_id"].astype(str).to_numpy()[hit],
            "owner_name": _text_column(parcels, "owner_name")[hit],
            "site_address": _text_column(parcels, "site_address")[hit],
            "length_ft": np.round(length_ft, 1),
            "from_station_ft": np.round(low, 1),
            "to_station_ft": np.round(high, 1),
        },
        geometry=across,
        crs=parcels.crs,
    )
    return out.sort_values(["from_station_ft", "parcel_id"], kind="stable").reset_index(drop=True)


def buildings_crossed(
    built,
    buildings: gpd.GeoDataFrame,
    *,
    parcels: gpd.GeoDataFrame,
    profile: Profile,
    fpu: float = 1.0,
) -> gpd.GeoDataFrame:
    """The buildings whose footprint the built main passes through, the parcel each stands on, and for how long.

    One row per building whose footprint's inside the main enters (a main along a wall, or touching a corner, is
    not under the building): its ID (``buildings-N``, its row from 1, where the layer gives none), the parcel it
    stands on (``analysis.mandate.locate_buildings``, as the mandate reads it; None for one on no parcel), the length
    of main under it (feet), the stations where that begins and ends, and that part of the main as its geometry.
    A plain geometric test: none of the laws sewerplan encodes sets a clearance between a main and a building, so a
    main passing a foot beside a house is not found. Buildings given as points have no footprint and are not tested.
    Only the buildings whose envelopes the main meets are looked at (the layer's tree), and only the parcels near them.

    Examples
    --------
    >>> from shapely.geometry import LineString, box
    >>> from analysis.profiles import load_profile
    >>> parcels = gpd.GeoDataFrame({"parcel_id": ["L1", "L2"]}, geometry=[box(0, 0, 100, 100), box(100, 0, 200, 100)])
    >>> houses = gpd.GeoDataFrame({"building_id": ["B1", "B2"]},
    ...                           geometry=[box(30, 40, 70, 80), box(130, 60, 170, 90)])
    >>> found = buildings_crossed(LineString([(0, 50), (200, 50)]), houses, parcels=parcels,
    ...                           profile=load_profile("fort-plain"))
    >>> found[["building_id", "parcel_id", "length_ft", "from_station_ft", "to_station_ft"]].values.tolist()
    [['B1', 'L1', 40.0, 30.0, 70.0]]
    """
    crs = buildings.crs
    empty = gpd.GeoDataFrame(columns=BUILDING_COLUMNS, geometry=gpd.GeoSeries([], crs=crs), crs=crs)
    geoms = np.asarray(buildings.geometry.values)
    hit = buildings.sindex.query(built, predicate="intersects")
    hit = hit[shapely.get_dimensions(geoms[hit]) == 2]
    # the main's inside meets the footprint's inside: through it, or ending in it; not along a wall or at a corner
    hit = np.sort(hit[shapely.relate_pattern(built, geoms[hit], "T********")])
    if len(hit) == 0:
        return empty
    low, high, under = _along_main(built, shapely.intersection(geoms[hit], built), fpu)
    stands = np.full(len(hit), None, dtype=object)
    if parcels is not None and len(parcels):
        near = np.unique(parcels.sindex.query(geoms[hit], predicate="intersects"))
        if len(near):
            lots = parcels.iloc[near]
            on, lot = locate_buildings(
                geoms[hit], lots, shapely.STRtree(np.asarray(lots.geometry.values)), profile, fpu, 1
            )
            stands[on] = lots["parcel_id"].astype(str).to_numpy(object)[lot]
    ids = (
        buildings["building_id"].astype("string").to_numpy(object)[hit]
        if "building_id" in buildings
        else np.full(len(hit), None, dtype=object)
    )
    unnamed = pd.isna(ids) | (ids == "")
    ids[unnamed] = np.char.add("buildings-", (hit[unnamed] + 1).astype(str)).astype(object)
    out = gpd.GeoDataFrame(
        {
            "building_id": ids,
            "parcel_id": stands,
            "length_ft": np.round(shapely.length(under) * fpu, 1),
            "from_station_ft": np.round(low, 1),
            "to_station_ft": np.round(high, 1),
        },
        geometry=under,
        crs=crs,
    )
    return out.sort_values(["from_station_ft", "building_id"], kind="stable").reset_index(drop=True)


def _along_main(built, across: np.ndarray, fpu: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where each of ``across`` (the built main cut by one polygon each) begins and ends along the main (stations in
    feet from the connection), and its pieces as the main runs, joined where they meet.

    An overlay follows the polygon's boundary, so a piece along a lot line came back reversed: each piece is turned
    to run as the main runs, and the pieces are joined in station order, the line a surveyor describes an easement
    (or a building's crossing) by. Points where the main only touches the polygon are left out."""
    pieces, owner = shapely.get_parts(across, return_index=True)
    lines = shapely.get_dimensions(pieces) == 1
    pieces, owner = pieces[lines], owner[lines]
    stations = np.stack([shapely.line_locate_point(built, shapely.get_point(pieces, i)) * fpu for i in (0, -1)], axis=1)
    span = pd.DataFrame({"owner": np.repeat(owner, 2), "station": stations.ravel()}).groupby("owner")["station"]
    low, high = span.min().reindex(range(len(across))), span.max().reindex(range(len(across)))
    backwards = stations[:, 0] > stations[:, 1]
    pieces[backwards] = shapely.reverse(pieces[backwards])
    order = np.lexsort((stations.min(axis=1), owner))
    joined = shapely.line_merge(shapely.multilinestrings(pieces[order], indices=owner[order]), directed=True)
    return low.to_numpy(float), high.to_numpy(float), joined


def _described(mains: pd.DataFrame) -> np.ndarray:
    """Each main's type and status as the layer words them ("Storm Drain, Existing"), for the sentence a planner reads.

    ``sewer_type`` and ``status`` hold the codes the logic reads ("storm", "active"); where the layers' check kept
    the layer's own words beside them (``<name>_as_given``) those are said, else the codes (a layer given to
    ``plan_extension`` as it is, or a model's links).
    """
    kind, status = (
        pd.Series(
            _text_column(mains, f"{name}_as_given", fallback=pd.Series(_text_column(mains, name), index=mains.index))
        ).where(lambda v: v != "")
        for name in ("sewer_type", "status")
    )
    return kind.str.cat(status, sep=", ", na_rep="").str.strip(", ").to_numpy(object)


def _text_column(frame: pd.DataFrame, name: str, *, fallback: pd.Series | None = None) -> np.ndarray:
    """A column as text ('' where missing), or ``fallback`` (else '') where the layer has none."""
    if name in frame.columns:
        return frame[name].astype("string").fillna("").to_numpy(object)
    if fallback is not None:
        return fallback.to_numpy(object)
    return np.full(len(frame), "", dtype=object)
