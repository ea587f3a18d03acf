"""The connection mandate: which occupied properties must connect to the public sewer, and why.

For every parcel, vectorised over STRtrees (no Python loop over parcels):

1. ``distance_ft``: shortest distance from the property line (the parcel polygon, so 0 when a main crosses it)
   to the nearest *counting* main (public sanitary; combined, private and force mains by profile setting; storm
   and abandoned mains never), for every parcel, out-of-range ones included. With it ``main_id``, the connection
   point on the main and the measuring line from the property line to it. Where the profile reads the property
   line as Fort Plain's § 144-1 defines it (``measured_from = "curbline"``), a parcel whose main lies in a public
   street is measured from the curbline the measuring line crosses (a ``curbs`` layer), and one whose main lies in
   a sewer right-of-way from that right-of-way's edge (a ``sewer_rights_of_way`` layer); ``boundary_distance_ft``
   always keeps the distance from the parcel boundary and ``measured_from`` says which was used.
2. ``abuts_sewered_street``: the parcel comes within ``abut_tolerance_ft`` of a street right-of-way in which a
   counting main lies: runs inside it for at least ``main_in_street_min_row_widths`` times its width, so a main
   that merely crosses the street or ends in an intersection does not count. A street drawn in segments is one
   street (``join_street_segments``): a main in any of its segments sewers it. Right-of-way polygons are
   used as given; centrelines are buffered by half their ``row_width_ft`` (else the profile default).
   Where the profile requires it (§ 144-4, § 168-22.2G), the main that decides is "said public sewer": a main
   lying in a street the parcel abuts. When the nearest main is not one, the nearest in-range main that is
   decides, and ``distance_ft`` / ``main_id`` describe that main.
3. ``occupied``: the parcel's own occupied attribute, else a building on it (its representative point inside the
   parcel) that is marked occupied or is at least ``min_occupied_building_sqft``, else the property class. A
   building across a lot line counts on one lot; the reason of another it covers, found unoccupied, names it.
4. ``status`` in order: connected, no_public_sewer, unoccupied, out_of_range, in_range_not_abutting, mandated;
   with ``rule``, ``section`` and a ``reason`` sentence a clerk can read, and ``deadline`` given a notice date.
"""

from __future__ import annotations

import datetime as dt
import functools
from dataclasses import dataclass, field

import geopandas as gpd
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import shapely
from pyproj import CRS

from analysis._parallel import beside, default_workers, elementwise, map_chunks, nearest, paused_gc
from analysis.areas import held_by_service_area, unmapped_area
from analysis.connection import Connections, MainSegments, connection_points
from analysis.errors import AnalysisError, Fix
from analysis.profiles import Profile
from analysis.reasons import (
    HELD_AS_ASSUMED,
    HELD_FOR_REASON,
    MEASURED_FROM,
    NOT_BOUND,
    NOTICED,
    OCCUPANCY_SOURCES,
    STATUSES,
    MarkedUnoccupied,
    PartlyOn,
    explain,
)
from analysis.streets import (
    StreetPairs,
    abuts_sewered,
    property_line_distance,
    said_sewer,
    street_of_pairs,
    street_pairs,
    with_sewer_rights_of_way,
)
from analysis.units import feet_per_unit

__all__ = [
    "MEASURED_FROM",
    "STATUSES",
    "MandateResult",
    "analyze_mandates",
    "check_notice",
    "counting_mains",
    "missing_inputs",
]


@dataclass(frozen=True)
class MandateResult:
    """Parcels with their classification, the measuring lines as evidence, and a summary.

    ``building_parcels`` is the position in ``parcels`` of the parcel each building stands on (-1 where none),
    found once for the occupancy test and handed to ``buildings.assess_buildings`` so it is not found again;
    ``street_pairs`` likewise, the parcels' abutting streets and the streets' mains (only where the streets layer
    alone was used, no sewer rights-of-way, as the assessment uses it).
    """

    parcels: gpd.GeoDataFrame
    measuring_lines: gpd.GeoDataFrame
    summary: dict = field(default_factory=dict)
    building_parcels: np.ndarray | None = None
    street_pairs: StreetPairs | None = None


def analyze_mandates(
    parcels: gpd.GeoDataFrame,
    mains: gpd.GeoDataFrame,
    *,
    profile: Profile,
    streets: gpd.GeoDataFrame | None = None,
    buildings: gpd.GeoDataFrame | None = None,
    service_areas: gpd.GeoDataFrame | None = None,
    curbs: gpd.GeoDataFrame | None = None,
    sewer_rights_of_way: gpd.GeoDataFrame | None = None,
    notice_date: dt.date | None = None,
    notice_reason: str | None = None,
    workers: int | None = None,
) -> MandateResult:
    """Classify every parcel under the profile's connection mandate.

    Inputs are normalised layers (``layers.read.load_layers``) in one projected CRS: parcels with
    ``parcel_id`` (and optionally ``connected``, ``occupied``, ``property_class``), mains with optional
    ``main_id``, ``sewer_type``, ``ownership``, ``status``. ``curbs`` (curb lines, or pavement polygons whose
    outlines are the curbs) and ``sewer_rights_of_way`` (polygons of sewer easements outside streets) are used
    where the profile measures from the property line of Fort Plain's § 144-1; a sewer right-of-way is also a
    "right-of-way" a parcel may abut. The input frames are not changed.

    Examples
    --------
    >>> from shapely.geometry import box, LineString
    >>> from analysis.profiles import load_profile
    >>> crs = "EPSG:2260"
    >>> parcels = gpd.GeoDataFrame({"parcel_id": ["A", "B"], "occupied": [True, True]},
    ...     geometry=[box(0, 100, 50, 200), box(60, 201, 110, 301)], crs=crs)
    >>> mains = gpd.GeoDataFrame({"main_id": ["M-1"]}, geometry=[LineString([(-100, 0), (300, 0)])], crs=crs)
    >>> streets = gpd.GeoDataFrame({"row_width_ft": [200.0]}, geometry=[LineString([(-100, 0), (300, 0)])], crs=crs)
    >>> r = analyze_mandates(parcels, mains, streets=streets, profile=load_profile("fort-plain"))
    >>> r.parcels[["parcel_id", "distance_ft", "status"]].to_string(index=False)
    'parcel_id  distance_ft        status\\n        A        100.0      mandated\\n        B        201.0  out_of_range'
    """
    _check_inputs(parcels, mains, streets, buildings, profile, curbs=curbs, sewer_rights_of_way=sewer_rights_of_way)
    check_notice(profile, notice_date, notice_reason)
    with paused_gc():
        return _analyze(
            parcels,
            mains,
            profile=profile,
            streets=streets,
            buildings=buildings,
            service_areas=service_areas,
            curbs=curbs,
            sewer_rights_of_way=sewer_rights_of_way,
            notice_date=notice_date,
            notice_reason=notice_reason,
            workers=workers,
        )


@dataclass(frozen=True)
class _Mains:
    """The mains that count for the mandate, their IDs, their tree and their order when two are exactly as near."""

    geoms: np.ndarray
    ids: np.ndarray
    counting: np.ndarray
    tree: shapely.STRtree | None
    rank: np.ndarray
    segments: MainSegments


@dataclass
class _Nearest:
    """Each parcel's deciding main (-1: none in reach), its distance in CRS units, and the street it lies in."""

    main_index: np.ndarray
    distance: np.ndarray
    abuts: np.ndarray
    street: pa.Array
    street_pos: np.ndarray
    pairs: StreetPairs | None = None
    # Other mains within the measuring tolerance of the deciding main's distance: (parcels, mains, distances).
    tied: tuple[np.ndarray, np.ndarray, np.ndarray] = field(
        default_factory=lambda: (np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0))
    )


@dataclass(frozen=True)
class _Measured:
    """Each parcel's measuring line, the connection point on its main (``connection``: x, y; NaN without a main),
    and the distances: the one the mandate compares (``distance_ft``), the one from the parcel boundary, and which
    property line was measured from."""

    lines: np.ndarray
    connection: np.ndarray
    distance_ft: np.ndarray
    boundary_ft: np.ndarray
    measured_from: np.ndarray


def _analyze(
    parcels,
    mains,
    *,
    profile,
    streets,
    buildings,
    service_areas,
    curbs,
    sewer_rights_of_way,
    notice_date,
    notice_reason,
    workers,
) -> MandateResult:
    """The mandate in named steps: the mains, the nearest main and the streets, occupancy, the measuring line,
    the status and its reason, then the frames the caller gets."""
    fpu = feet_per_unit(CRS(parcels.crs))
    threshold_ft = _threshold(profile)
    reach = (threshold_ft + profile.measurement.distance_tolerance_ft.value) / fpu
    workers = default_workers(workers)
    parcel_geoms = np.asarray(parcels.geometry.values)
    parcel_tree = shapely.STRtree(parcel_geoms)  # shared by the nearest-main search and the buildings

    # Where the buildings stand does not depend on the mains: it is worked out beside the nearest-main search.
    where_buildings_stand = functools.partial(_occupancy_of, parcels, parcel_tree, buildings, profile, fpu, workers)
    with beside(where_buildings_stand, workers=workers) as occupancy:
        counted = _counted_mains(mains, profile)
        tie_tolerance = profile.measurement.distance_tolerance_ft.value / fpu
        near = _nearest_mains(parcel_geoms, parcel_tree, counted, reach, tie_tolerance, workers)
        near = _said_sewer(
            near, parcel_geoms, parcel_tree, counted, streets, sewer_rights_of_way, profile, fpu, reach, workers
        )
        joined = _connections(parcel_geoms, counted, near, profile, fpu, workers)
        located, occupied, occupied_source = occupancy()
    has_rows = sewer_rights_of_way is not None and len(sewer_rights_of_way) > 0
    measure = _measure(parcel_geoms, counted, near, joined, streets, curbs, sewer_rights_of_way, profile, fpu, workers)
    connected = _connected(parcels)
    held = held_by_service_area(parcels, service_areas)
    code = _status_codes(profile, connected, near, held, occupied, measure.distance_ft, threshold_ft)
    unnoticed = not_noticed_for(parcels, profile, notice_reason)

    main_text = pc.take(pa.array(counted.ids, pa.string()), pa.array(near.main_index, mask=near.main_index < 0))
    klass = pa.array(_text(parcels["property_class"]), pa.string()) if "property_class" in parcels else None
    has_streets = streets is not None and len(streets) > 0
    # The sentences (Arrow's string kernels) are written beside the assembly of the other result columns (pandas),
    # with the buildings that stand partly on a parcel found unoccupied (its reason names them).
    words = functools.partial(
        explain,
        code,
        profile=profile,
        threshold_ft=threshold_ft,
        distance_ft=measure.distance_ft,
        main_id=main_text,
        street=near.street,
        occupied_source=occupied_source,
        property_class=klass,
        connected_source=parcels.attrs.get("connected_source"),
        notice_date=notice_date,
        notice_reason=notice_reason,
        held=held,
        unnoticed=unnoticed,
        measured_from=measure.measured_from,
        boundary_ft=measure.boundary_ft,
    )

    def reasons() -> dict[str, pa.Array]:
        if buildings is None:
            return words()
        vacant = (code == STATUSES.index("unoccupied")) & (occupied_source == OCCUPANCY_SOURCES.index("buildings"))
        return words(
            partly_on=_partly_on(parcel_geoms, parcels, vacant, buildings, located, profile, fpu, workers),
            marked_unoccupied=_marked_unoccupied(vacant, buildings, located, profile, fpu),
        )

    with beside(reasons, workers=workers) as text:
        out, measuring = _result_frames(
            parcels, counted, near, measure, code, text, main_text, (occupied, occupied_source, connected), has_streets
        )
    return MandateResult(
        parcels=out,
        measuring_lines=measuring,
        summary=_summary(profile, parcels, mains, counted, code, threshold_ft, notice_date, notice_reason, unnoticed)
        | {"nearest_main_ft": _nearest(measure.distance_ft), "area_unmapped": unmapped_area(profile, service_areas)},
        building_parcels=located.parcels if located is not None else None,
        street_pairs=near.pairs if has_streets and not has_rows else None,
    )


def _result_frames(
    parcels, counted: _Mains, near: _Nearest, measure: _Measured, code, text, main_text, occupancy, has_streets
) -> tuple[gpd.GeoDataFrame, gpd.GeoDataFrame]:
    """The parcels with every result column beside the user's own, and the measuring lines as evidence.

    ``text()`` gives the rule, section and reason columns (``explain``); it is asked for last, so that the
    sentences can be written on another thread while the rest is put together.
    """
    occupied, occupied_source, connected = occupancy
    has_main = near.main_index >= 0
    out = parcels.copy(deep=False)  # the user's columns shared, not copied (pandas copies on write)
    distance_ft = np.round(measure.distance_ft, 2)
    # Text columns made by Arrow's kernels, as the parcels' own result columns are: no million Python strings.
    status = pc.take(pa.array(STATUSES), pa.array(code))
    lined = pa.array(has_main)
    measuring = gpd.GeoDataFrame(
        {
            "parcel_id": out["parcel_id"].to_numpy()[has_main],
            "main_id": _strings(main_text.filter(lined), out.index[has_main]),
            "distance_ft": distance_ft[has_main],
            "status": _strings(status.filter(lined), out.index[has_main]),
        },
        geometry=measure.lines[has_main],
        crs=parcels.crs,
        index=parcels.index[has_main],
    )
    before_text = {
        "distance_ft": distance_ft,
        "boundary_distance_ft": np.round(measure.boundary_ft, 2),
        "measured_from": _strings(pc.take(pa.array(MEASURED_FROM), pa.array(measure.measured_from)), out.index),
        "main_id": _strings(main_text, out.index),
        "abuts_sewered_street": near.abuts if has_streets else pd.array([pd.NA] * len(out), dtype="boolean"),
        "occupied": occupied,
        "occupied_source": _strings(pc.take(pa.array(OCCUPANCY_SOURCES), pa.array(occupied_source)), out.index),
        "connected_flag": connected,
        "status": _strings(status, out.index),
    }
    after_text = {
        "street_name_main": _strings(near.street, out.index),
        "connection_x": measure.connection[:, 0],
        "connection_y": measure.connection[:, 1],
    }
    texts = {name: _strings(values, out.index) for name, values in text().items()}
    for name, values in {**before_text, **texts, **after_text}.items():
        out[name] = values
    return out, measuring


def _counted_mains(mains: gpd.GeoDataFrame, profile: Profile) -> _Mains:
    """The mains the profile counts, their IDs (generated ``mains-N`` where the layer has none) and their tree."""
    counting = counting_mains(mains, profile)
    geoms = np.asarray(mains.geometry.values)[counting]
    ids = _text(
        mains["main_id"]
        if "main_id" in mains
        else "mains-" + pd.Series(np.arange(1, len(mains) + 1), index=mains.index).astype(str)
    )[counting]
    tree = shapely.STRtree(geoms) if len(geoms) else None
    return _Mains(geoms, ids, counting, tree, tie_rank(ids, geoms), MainSegments.of(geoms))


def _nearest_mains(parcel_geoms, parcel_tree, counted: _Mains, reach: float, tie: float, workers: int) -> _Nearest:
    """Each parcel's nearest counting main within ``reach`` (CRS units), exact ties broken by ``counted.rank``, and
    the other mains within ``tie`` of as near (``analysis.connection`` decides between those)."""
    n = len(parcel_geoms)
    near = _Nearest(
        np.full(n, -1, dtype=np.int64),
        np.full(n, np.nan),
        np.zeros(n, dtype=bool),
        pa.nulls(n, pa.string()),
        np.full(n, -1, dtype=np.int64),
    )
    if counted.tree is not None:
        near.main_index, near.distance, near.tied = nearest(
            counted.tree,
            parcel_geoms,
            near=reach,
            workers=workers,
            rank=counted.rank,
            geoms_tree=parcel_tree,
            ties=tie,
        )
    return near


def _said_sewer(
    near: _Nearest, parcel_geoms, parcel_tree, counted, streets, sewer_rights_of_way, profile, fpu, reach, workers
) -> _Nearest:
    """Which parcels abut a street (or sewer right-of-way) with a counting main in it, and, where the profile
    requires the main to be "said public sewer", the nearest in-range main lying in a street the parcel abuts."""
    has_streets = streets is not None and len(streets) > 0
    has_rows = sewer_rights_of_way is not None and len(sewer_rights_of_way) > 0
    if not (has_streets or has_rows) or counted.tree is None:
        return near
    ways = with_sewer_rights_of_way(streets if has_streets else None, sewer_rights_of_way, fpu) if has_rows else streets
    pairs = street_pairs(
        ways, parcel_geoms, counted.geoms, profile=profile, fpu=fpu, workers=workers, parcel_tree=parcel_tree
    )
    near.pairs, near.abuts = pairs, abuts_sewered(pairs, len(parcel_geoms))
    if profile.mandate.requires_abutting_street.value:
        tie = profile.measurement.distance_tolerance_ft.value / fpu
        was = near.main_index
        near.main_index, near.distance, near.street_pos, said_ties = said_sewer(
            pairs, counted.tree, parcel_geoms, counted.geoms, was, near.distance, reach, counted.rank, ties=tie
        )
        # Where the said-sewer rule changed the main, the mains tied with the new one are those it found.
        kept = near.main_index[near.tied[0]] == was[near.tied[0]]
        near.tied = tuple(np.r_[a[kept], b] for a, b in zip(near.tied, said_ties, strict=True))
        near.street = pc.take(
            pa.array(pairs.street_names, pa.string()), pa.array(near.street_pos, mask=near.street_pos < 0)
        )
    return near


@dataclass(frozen=True)
class _Located:
    """Where the buildings stand: the parcel of each (-1 where none), which count for occupancy, and the (building,
    parcel) pairs of the other parcels each building's envelope reaches (``_locate``)."""

    parcels: np.ndarray
    qualifies: np.ndarray
    near: tuple[np.ndarray, np.ndarray]


def _occupancy_of(parcels, parcel_tree, buildings, profile, fpu, workers):
    """Where the buildings stand (``_Located``, None without buildings), and each parcel's occupancy and its
    source."""
    if buildings is None:
        occupied, source = _occupancy(parcels, None, profile, None)
        return None, occupied, source
    b_idx, p_idx, *near = _locate(np.asarray(buildings.geometry.values), parcels, parcel_tree, profile, fpu, workers)
    building_parcels = np.full(len(buildings), -1, dtype=np.int64)
    building_parcels[b_idx] = p_idx
    qualifies = counting_buildings(buildings, profile, fpu)
    occupied, source = _occupancy(parcels, qualifies, profile, (b_idx, p_idx))
    return _Located(building_parcels, qualifies, (near[0], near[1])), occupied, source


def _connections(parcel_geoms, counted: _Mains, near: _Nearest, profile: Profile, fpu: float, workers: int):
    """Each lot's connection point by ``analysis.connection``'s rule, and the deciding main among mains equally near.

    The mains tied with a lot's deciding main are the counting mains within the profile's measuring tolerance of
    its distance (found by the nearest-main search and the said-sewer rule). Where the said-sewer rule made a main
    in an abutting street decide, only such mains tie with it. ``near`` is updated where another tied
    main decides (its main, distance and street); returns the ``Connections`` of the lots measured so.
    """
    tol = profile.measurement.distance_tolerance_ft.value / fpu
    # A main touching or crossing the lot keeps the shortest line's point: where the main meets the lot.
    lots = np.flatnonzero((near.main_index >= 0) & (near.distance > tol))
    if counted.tree is None or not len(lots):
        return connection_points(
            parcel_geoms,
            counted.segments,
            (lots[:0], lots[:0], np.empty(0), np.zeros(0, bool)),
            np.empty(0),
            tolerance=tol,
            rank=counted.rank,
            workers=workers,
        )
    reach = near.distance[lots] + tol
    position = np.full(len(parcel_geoms), -1, dtype=np.int64)
    position[lots] = np.arange(len(lots))
    t_i, t_main, t_d = near.tied
    keep = (position[t_i] >= 0) & (t_main != near.main_index[t_i])
    t_i, t_main, t_d = position[t_i[keep]], t_main[keep], t_d[keep]
    # Rows: every lot's deciding main, then the mains tied with it; in an abutting street or not, where it matters.
    row_lot = np.r_[np.arange(len(lots)), t_i]
    row_main = np.r_[near.main_index[lots], t_main]
    row_d = np.r_[near.distance[lots], t_d]
    row_street = np.full(len(row_lot), -1, dtype=np.int64)
    if near.pairs is not None and len(t_i):
        asked = np.isin(row_lot, t_i)
        row_street[asked] = street_of_pairs(near.pairs, lots[row_lot[asked]], row_main[asked])
        if profile.mandate.requires_abutting_street.value:
            # Where "said public sewer" decided, only a main in a street the lot abuts ties with it.
            deciding = np.arange(len(row_lot)) < len(lots)
            keep = deciding | (row_street >= 0) | (near.street_pos[lots[row_lot]] < 0)
            row_lot, row_main, row_d, row_street = row_lot[keep], row_main[keep], row_d[keep], row_street[keep]
    order = np.argsort(row_lot, kind="stable")
    row_lot, row_main, row_d, row_street = row_lot[order], row_main[order], row_d[order], row_street[order]
    joined = connection_points(
        parcel_geoms,
        counted.segments,
        (lots[row_lot], row_main, row_d, row_street >= 0),
        reach[row_lot],
        tolerance=tol,
        rank=counted.rank,
        workers=workers,
    )
    moved = joined.main != near.main_index[joined.lot]
    if moved.any():
        lot, main = joined.lot[moved], joined.main[moved]
        near.main_index, near.distance = near.main_index.copy(), near.distance.copy()
        near.main_index[lot], near.distance[lot] = main, joined.distance[moved]
        if profile.mandate.requires_abutting_street.value and near.pairs is not None:
            near.street_pos = near.street_pos.copy()
            near.street_pos[lot] = street_of_pairs(near.pairs, lot, main)
            near.street = pc.take(
                pa.array(near.pairs.street_names, pa.string()),
                pa.array(near.street_pos, mask=near.street_pos < 0),
            )
    return joined


def _measure(
    parcel_geoms, counted, near, joined: Connections, streets, curbs, sewer_rights_of_way, profile, fpu, workers
) -> _Measured:
    """The measuring line from each parcel to its main, the connection point on the main, and the distance the
    mandate compares: from the parcel boundary, or from the property line as § 144-1 defines it (the curbline for
    a main in a public street, the right-of-way's edge for one in a sewer right-of-way) where the profile says so.

    The measuring line runs from the middle of the lot's nearest stretch to the connection point (``joined``, see
    ``analysis.connection``); for a main touching or crossing the lot it is the shortest line. The distance is
    the shortest distance either way, to the hundredth."""
    n = len(parcel_geoms)
    has_main = near.main_index >= 0
    lines = np.full(n, None, dtype=object)
    lines[joined.lot] = shapely.linestrings(
        np.stack([joined.middle, joined.point], axis=1).reshape(-1, 2), indices=np.repeat(np.arange(len(joined.lot)), 2)
    )
    rest = has_main.copy()
    rest[joined.lot] = False
    lines[rest] = elementwise(
        shapely.shortest_line, parcel_geoms[rest], counted.geoms[near.main_index[rest]], workers=workers
    )
    connection = np.full((n, 2), np.nan)
    if has_main.any():  # the shortest line's last vertex, read from its coordinates: no million Point objects
        drawn = lines[has_main]
        connection[has_main] = shapely.get_coordinates(drawn)[np.cumsum(shapely.get_num_coordinates(drawn)) - 1]
    boundary_ft = near.distance * fpu
    measured = np.zeros(n, dtype=np.int8)
    distance_ft = boundary_ft
    has_rows = sewer_rights_of_way is not None and len(sewer_rights_of_way) > 0
    if profile.mandate.measured_from.value == "curbline" and (curbs is not None or has_rows):
        n_streets = len(streets) if streets is not None and len(streets) > 0 else 0
        distance_ft, lines, measured = property_line_distance(
            parcel_geoms,
            lines,
            counted.geoms,
            near.main_index,
            near.street_pos,
            n_streets,
            curbs=curbs,
            sewer_rights_of_way=sewer_rights_of_way,
            fpu=fpu,
        )
    return _Measured(lines, connection, distance_ft, boundary_ft, measured)


def _status_codes(profile, connected, near, held, occupied, distance_ft, threshold_ft) -> np.ndarray:
    """Each parcel's status as its position in ``STATUSES``, the first that applies in the module's order.
    Outside the service area (or in Phase III) no public sewer is available to require a connection to."""
    # Judged on the distance as the results give it (to the hundredth of a foot): 100.009 and 100.010 ft both read
    # "100.01 ft", one mandated and one not, and a board could not tell them apart (a tester).
    in_range = np.round(distance_ft, 2) <= threshold_ft + profile.measurement.distance_tolerance_ft.value + 1e-9
    needs_abut = profile.mandate.requires_abutting_street.value
    needs_occupied = profile.mandate.requires_occupied_building.value
    return np.select(
        [connected, (near.main_index < 0) | held, needs_occupied & ~occupied, ~in_range, needs_abut & ~near.abuts],
        [
            STATUSES.index(s)
            for s in ("connected", "no_public_sewer", "unoccupied", "out_of_range", "in_range_not_abutting")
        ],
        default=STATUSES.index("mandated"),
    )


def _nearest(distance_ft: np.ndarray) -> float | None:
    """The least distance from any parcel to a counting main (feet, to the hundredth), None where none was measured:
    a run in which every parcel is out of range says how near the nearest came (parcels drawn five miles from
    their mains, in a wrong CRS, were all "out_of_range" without a word; a tester)."""
    finite = np.asarray(distance_ft, dtype=float)
    finite = finite[np.isfinite(finite)]
    return round(float(finite.min()), 2) if len(finite) else None


def _summary(profile, parcels, mains, counted, code, threshold_ft, notice_date, notice_reason, unnoticed) -> dict:
    """The run's counts per status and what it measured by, as the run record and the summary page show them;
    ``notices_held``: the parcels that must connect to which no notice may be given (``not_noticed_for``), of which
    ``notices_not_bound`` are so because the law does not bind them (§ 196-17E)."""
    mandated = code == STATUSES.index("mandated")
    return {
        "profile": profile.id,
        "profile_version": profile.version,
        "municipality": profile.municipality,
        "parcels": len(parcels),
        "counts": {s: int((code == i).sum()) for i, s in enumerate(STATUSES)},
        "distance_ft": threshold_ft,
        "distance_section": profile.mandate.distance_ft.citation,
        "measuring_crs": CRS(parcels.crs).to_string(),
        "notice_date": notice_date.isoformat() if notice_date else None,
        "notice_reason": notice_reason,
        "notices_held": int((mandated & (unnoticed > 0)).sum()) if unnoticed is not None else 0,
        "notices_not_bound": int((mandated & (unnoticed == NOT_BOUND)).sum()) if unnoticed is not None else 0,
        "notice_period_days": profile.mandate.notice_period_days.value,
        "deadline": (
            profile.mandate.notice_period_days.period_end(notice_date).isoformat()
            if notice_date is not None and profile.mandate.notice_period_days.value is not None
            else None
        ),
        "counting_mains": int(counted.counting.sum()),
        "mains": len(mains),
    }


def private_system(parcels: pd.DataFrame, profile: Profile, *, said: bool = False):
    """Whether each parcel is served by a private sewage disposal system: its ``private_system`` column (yes/no,
    true/false, 1/0), else the profile's reading (``notices.private_system_assumed``). With ``said``, also whether
    the column said it, for each parcel (a pair of arrays)."""
    assumed = bool(profile.notices.private_system_assumed.value)
    default = np.full(len(parcels), assumed)
    if "private_system" not in parcels.columns:
        return (default, np.zeros(len(parcels), dtype=bool)) if said else default
    words = parcels["private_system"].astype("string").str.strip().str.lower().fillna("")
    yes, no = words.isin(("y", "yes", "true", "t", "1")).to_numpy(bool), words.isin(("n", "no", "false", "f", "0"))
    private = np.where(yes, True, np.where(no.to_numpy(bool), False, default))
    return (private, yes | no.to_numpy(bool)) if said else private


def not_noticed_for(parcels: pd.DataFrame, profile: Profile, notice_reason: str | None) -> np.ndarray | None:
    """Why no notice may be given to each parcel (``NOTICED``, ``HELD_FOR_REASON``, ``HELD_AS_ASSUMED``,
    ``NOT_BOUND``), or None where nothing limits the notices. Such a parcel gets no deadline and its reason says why,
    as the letters hold it back (``analysis.notices.plan_notices``):

    - under Poughkeepsie's § 168-22.3C a property served by a private system is noticed "only when it shall be
      necessary to eliminate a public health hazard" (``notices.private_system_reasons``): a run noticing for a
      highway improvement program holds them (``HELD_FOR_REASON`` where their private_system column says so,
      ``HELD_AS_ASSUMED`` where the profile's reading does);
    - Wappinger's § 196-17E binds only "a property served by a private wastewater disposal system"
      (``notices.private_system_only``): a parcel whose ``private_system`` column says no is not bound by it
      (``NOT_BOUND``), notice date or not. The run gave it a deadline the letters then held back.
    """
    allowed = profile.notices.private_system_reasons.value
    limited = notice_reason is not None and bool(allowed) and notice_reason not in allowed
    only = bool(profile.notices.private_system_only.value)
    if not (limited or only):
        return None
    private, said = private_system(parcels, profile, said=True)
    why = np.full(len(parcels), NOTICED, dtype=np.int8)
    if limited:
        why[private] = np.where(said[private], HELD_FOR_REASON, HELD_AS_ASSUMED)
    if only:
        why[~private] = NOT_BOUND
    return why


def tie_rank(ids: np.ndarray, geoms: np.ndarray) -> np.ndarray:
    """Each main's place in line when two are exactly as near a parcel: never its row.

    By main ID, a number at the end of the ID read as a number (M-9 before M-10), then by the whole ID, then by
    the geometry's bytes (two rows with one ID); a main without an ID comes after those with one. Arrow sorts
    the keys in C++: nothing here runs per main in Python.
    """
    text = pa.array(ids, pa.string())
    digits = pc.fill_null(pc.struct_field(pc.extract_regex(text, r"(?P<n>[0-9]+)$"), [0]), "")
    number = pc.utf8_ltrim(digits, "0")
    keys = pa.table(
        {
            "prefix": pc.replace_substring_regex(text, r"[0-9]+$", ""),
            "size": pc.utf8_length(number),
            "number": number,
            "id": text,
            "wkb": pa.array(shapely.to_wkb(geoms), pa.binary()),
        }
    )
    order = pc.sort_indices(keys, sort_keys=[(name, "ascending", "at_end") for name in keys.column_names]).to_numpy()
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return rank


def _text(column: pd.Series) -> np.ndarray:
    """A column as an object array of str, None where missing."""
    missing = pd.isna(column).to_numpy()
    out = np.full(len(column), None, dtype=object)
    out[~missing] = column[~missing].astype(str).to_numpy(object)
    return out


def _strings(values: pa.Array | pa.ChunkedArray, index: pd.Index) -> pd.Series:
    """An Arrow string array as a pandas string column, without copying through Python objects."""
    return pd.Series(pd.arrays.ArrowStringArray(values), index=index)


def _check_inputs(parcels, mains, streets, buildings, profile: Profile, **more) -> None:
    if parcels.crs is None or not CRS(parcels.crs).is_projected:
        raise AnalysisError(
            "Parcels must be in a projected CRS before measuring (layers.read.load_layers reprojects them)."
        )
    for name, frame in (("mains", mains), ("streets", streets), ("buildings", buildings), *more.items()):
        if frame is not None and not CRS(frame.crs).equals(CRS(parcels.crs)):
            raise AnalysisError(f"{name} are in {frame.crs}, parcels in {parcels.crs}: reproject both to one CRS.")
    if "parcel_id" not in parcels.columns:
        raise AnalysisError("Parcels have no parcel_id column.")
    missing = missing_inputs(profile, parcels=parcels, streets=streets, buildings=buildings, settings=False)
    if missing:
        raise missing[0]


def missing_inputs(
    profile: Profile,
    *,
    parcels: pd.DataFrame | None,
    streets: gpd.GeoDataFrame | None = None,
    buildings: gpd.GeoDataFrame | None = None,
    mains: gpd.GeoDataFrame | None | bool = True,
    settings: bool = True,
) -> list[AnalysisError]:
    """What the analysis under ``profile`` would refuse these layers for, every reason at once (none: it can run).

    The same checks ``analyze_mandates`` makes before it measures, so a validation report can say before a run
    what a profile still needs: a layer (``fix`` names its kind), a column, or (with ``settings``) a value the town
    must set. ``mains`` True means "not asked" (the caller has checked them); None or an empty layer is missing.
    """
    found: list[AnalysisError] = []
    if parcels is None:
        found.append(AnalysisError("The analysis needs a parcels layer.", fix=Fix("layer", "parcels", "PATH")))
    if mains is not True and (mains is None or len(mains) == 0):
        found.append(
            AnalysisError("The analysis needs a sewer mains layer to measure to.", fix=Fix("layer", "mains", "PATH"))
        )
    if profile.mandate.requires_abutting_street.value and (streets is None or len(streets) == 0):
        rule = profile.mandate.requires_abutting_street
        found.append(
            AnalysisError(
                f'The {profile.id} profile applies the abutting-street test of {rule.section} ("{rule.quote}"), '
                "which needs a streets layer (centrelines or right-of-way polygons). Add a 'streets' layer to the "
                "data or give one on its own.",
                fix=Fix("layer", "streets", "PATH"),
            )
        )
    columns = set(parcels.columns) if parcels is not None else set()
    if (
        profile.mandate.requires_occupied_building.value
        and buildings is None
        and not ({"occupied", "property_class"} & columns)
    ):
        rule = profile.mandate.requires_occupied_building
        found.append(
            AnalysisError(
                f"The occupancy test of {rule.section} needs a buildings layer, or an occupied or property_class "
                "column on the parcels; none was given. Add a 'buildings' layer, or map a column of the parcels to "
                "parcels.occupied.",
                fix=Fix("map", "parcels.occupied", "COLUMN"),
            )
        )
    if settings:
        try:
            _threshold(profile)
        except AnalysisError as exc:
            found.append(exc)
    return found


def _threshold(profile: Profile) -> float | None:
    rule = profile.mandate.distance_ft
    if rule.value is None:
        raise AnalysisError(
            f"The {profile.id} profile has no mandate distance: {rule.section} leaves it to the municipality "
            f"({rule.note}) Set the town's distance in feet as mandate.distance_ft.",
            fix=Fix("rule", "mandate.distance_ft", "N"),
        )
    return float(rule.value)


def counting_mains(mains: gpd.GeoDataFrame, profile: Profile) -> np.ndarray:
    """Which mains are a public sewer a parcel can be required to connect to, by the profile's sewer rules.

    A SWMM model's links are all mains to the network (flow passes pumps, weirs, orifices, outlets, street channels
    and inlets), but only its pipes are sewers: a parcel beside a weir or a street gutter was told to connect to it.
    """
    s = profile.sewers
    n = len(mains)

    def column(name: str) -> np.ndarray:
        return mains[name].to_numpy(object) if name in mains.columns else np.full(n, None, dtype=object)

    kind, owner, status = column("sewer_type"), column("ownership"), column("status")
    ok = pd.isna(kind) | (kind == "sanitary")
    if s.count_combined.value:
        ok |= kind == "combined"
    if s.count_force_mains.value:
        ok |= kind == "force"
    if not s.count_private.value:
        ok &= owner != "private"
    ok &= ~np.isin(status, ["abandoned", "proposed"])
    if "link_kind" in mains.columns:  # a SWMM model's links: only its pipes are sewers a building connects to
        from analysis.network import PIPE_LINKS  # here: GIS mains have no link kinds, and need no network code

        link = column("link_kind")
        ok &= pd.isna(link) | np.isin(link.astype(str), PIPE_LINKS)
    geoms = np.asarray(mains.geometry.values)
    return ok & ~(shapely.is_missing(geoms) | shapely.is_empty(geoms))


# Property classes (New York RPS codes, first digit) read as occupied when no building or occupied attribute
# decides: 1 agricultural, 2 residential, 4 commercial, 5 recreation, 6 community services, 7 industrial,
# 8 public services; 3 vacant land and 9 wild, forested and park land are not.
OCCUPIED_CLASS_DIGITS = ("1", "2", "4", "5", "6", "7", "8")


def counting_buildings(buildings: gpd.GeoDataFrame, profile: Profile, fpu: float) -> np.ndarray:
    """Which buildings count for occupancy: one marked occupied (or not), else a point or a footprint of at least
    ``measurement.min_occupied_building_sqft`` (so garden sheds do not)."""
    qualifies, _ = _big_enough(np.asarray(buildings.geometry.values), profile, fpu)
    if "occupied" in buildings.columns:
        flag = buildings["occupied"]
        given = flag.notna().to_numpy()
        qualifies[given] = flag.to_numpy(object)[given].astype(bool)
    return qualifies


def _big_enough(geoms: np.ndarray, profile: Profile, fpu: float) -> tuple[np.ndarray, np.ndarray]:
    """Which buildings count by their size alone (a point, or a footprint of at least
    ``measurement.min_occupied_building_sqft``), and each one's square feet."""
    area_sqft = shapely.area(geoms) * fpu * fpu
    qualifies = (shapely.get_dimensions(geoms) == 0) | (
        area_sqft >= profile.measurement.min_occupied_building_sqft.value
    )
    return qualifies, area_sqft


def _occupancy(
    parcels: gpd.GeoDataFrame,
    qualifies: np.ndarray | None,
    profile: Profile,
    located: tuple[np.ndarray, np.ndarray] | None,
) -> tuple[np.ndarray, np.ndarray]:
    """Occupied flags, and which source decided each (positions in ``OCCUPANCY_SOURCES``). ``qualifies``: which
    buildings count (``counting_buildings``), None without a buildings layer."""
    n = len(parcels)
    occupied = np.zeros(n, dtype=bool)
    source = np.zeros(n, dtype=np.int8)
    decided = np.zeros(n, dtype=bool)
    if "occupied" in parcels.columns:
        decided = pd.notna(parcels["occupied"]).to_numpy()
        occupied[decided] = parcels["occupied"].to_numpy(object)[decided].astype(bool)
        source[decided] = OCCUPANCY_SOURCES.index("occupied attribute")
    if qualifies is not None:
        b_idx, p_idx = located
        by_building = np.zeros(n, dtype=bool)
        by_building[p_idx[qualifies[b_idx]]] = True
        occupied[~decided] = by_building[~decided]
        source[~decided] = OCCUPANCY_SOURCES.index("buildings")
    elif "property_class" in parcels.columns:
        first = pd.Series(_text(parcels["property_class"]), dtype=object).fillna("").str.strip().str[:1]
        first = first.to_numpy(object)
        known = np.isin(first, list("123456789"))
        use = ~decided & known
        occupied[use] = np.isin(first[use], OCCUPIED_CLASS_DIGITS)
        source[use] = OCCUPANCY_SOURCES.index("property class")
    return occupied, source


def locate_buildings(
    geoms: np.ndarray,
    parcels: gpd.GeoDataFrame,
    parcel_tree: shapely.STRtree,
    profile: Profile,
    fpu: float,
    workers: int,
) -> tuple[np.ndarray, np.ndarray]:
    """(building, parcel) positions of every building and each parcel it stands on.

    A building stands on the parcel its inside point lies within: candidates by the building's envelope, then one
    point-in-polygon test per candidate on the point's coordinates (the same pairs as a ``within`` query of the
    points, in the same order, at half the cost; the candidates it is not within are kept for ``_partly_on``). A
    building whose inside point lies within no parcel (a twin house drawn as one footprint, centred on the lot line;
    a footprint whose middle falls in a gap between the parcels, as layers from two sources often leave) stands on
    the parcel its footprint covers most, or, for a point on a lot line, the parcel it touches; on a tie, the parcel
    with the lower ID. Before, such a building stood nowhere, and its parcel was unoccupied. The footprint must
    cover the profile's least occupied building of that parcel (``measurement.min_occupied_building_sqft``) or half
    of itself: a building in the street that crosses a lot's front line by an inch stands on no lot. ``parcel_tree``
    is the tree of ``parcels``' geometries.
    """
    return _locate(geoms, parcels, parcel_tree, profile, fpu, workers)[:2]


def _locate(geoms, parcels, parcel_tree, profile, fpu, workers) -> tuple[np.ndarray, ...]:
    """``locate_buildings``' (building, parcel) pairs, and the pairs of each building and the other parcels its
    envelope reaches, which its middle is not in (``_partly_on`` finds the buildings across a lot line among them).

    Candidates by the building's envelope, which holds its inside point: the same pairs, in the same order, at
    about the cost of candidates by the point alone."""
    points = _inside_points(geoms, workers)
    x, y = shapely.get_x(points), shapely.get_y(points)

    def run(part: slice):
        i_b, i_p = parcel_tree.query(geoms[part])
        i_b = i_b + part.start
        inside = shapely.contains_xy(parcel_tree.geometries[i_p], x[i_b], y[i_b])
        return i_b[inside], i_p[inside], i_b[~inside], i_p[~inside]

    parts = map_chunks(run, len(points), workers)
    if not parts:
        return (np.empty(0, np.int64),) * 4
    b_idx, p_idx, near_b, near_p = (np.concatenate([p[i] for p in parts]) for i in range(4))
    astray = np.ones(len(geoms), dtype=bool)
    astray[b_idx] = False
    rows = np.flatnonzero(astray)
    rows = rows[~shapely.is_missing(geoms[rows]) & ~shapely.is_empty(geoms[rows])]
    if not len(rows):
        return b_idx, p_idx, near_b, near_p
    enough_area = profile.measurement.min_occupied_building_sqft.value / fpu**2
    more_b, more_p = _most_covered(geoms, rows, parcel_tree, parcels["parcel_id"].to_numpy(), enough_area)
    order = np.argsort(np.concatenate([b_idx, more_b]), kind="stable")
    return np.concatenate([b_idx, more_b])[order], np.concatenate([p_idx, more_p])[order], near_b, near_p


def _most_covered(geoms, rows, parcel_tree, parcel_ids, enough_area) -> tuple[np.ndarray, np.ndarray]:
    """For the buildings ``rows``, the parcel each footprint covers most (a point: one it touches), ties by parcel
    ID as mains' ties are (M-9 before M-10). A footprint that only touches a parcel (a building in the street,
    sharing the lot's front line) stands on none."""
    i_b, i_p = parcel_tree.query(geoms[rows], predicate="intersects")
    b = rows[i_b]
    footprint = shapely.get_dimensions(geoms[b]) == 2
    covered, enough = _covers_enough(geoms[b], parcel_tree.geometries[i_p], enough_area)
    keep = ~footprint | enough
    b, i_p, covered = b[keep], i_p[keep], covered[keep]
    if len(b) == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    tie = tie_rank(np.asarray(parcel_ids, dtype=object)[i_p], parcel_tree.geometries[i_p])
    pick = np.lexsort((tie, -covered, b))
    first = pick[np.r_[True, b[pick][1:] != b[pick][:-1]]]
    return b[first], i_p[first]


def _covers_enough(
    footprints: np.ndarray, parcels: np.ndarray, enough_area: float, workers: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """The area of each footprint that lies on its parcel (pairwise), and whether that is enough to stand on the
    parcel: at least ``enough_area`` (the profile's least occupied building) or half the footprint. Areas to a
    ten-thousandth of a square unit: a footprint split evenly along a slanting lot line is a tie."""
    covered = np.round(shapely.area(elementwise(shapely.intersection, footprints, parcels, workers=workers)), 4)
    enough = np.minimum(enough_area, shapely.area(footprints) / 2)
    return covered, (covered > 0) & (covered >= np.round(enough, 4))


def _partly_on(parcel_geoms, parcels, vacant, buildings, located: _Located, profile, fpu, workers) -> PartlyOn | None:
    """The counting buildings that stand partly on the parcels ``vacant`` (a mask) while counted on another parcel,
    with the square feet on each, the parcel they are counted on and why there (``analysis.reasons.PartlyOn``); and
    the buildings the buildings layer marks unoccupied that stand so, which would count by their size (``marked``).

    A house drawn across the line between two lots is counted once, on the lot where its middle stands
    (``locate_buildings``); the other lot stays unoccupied, and its reason said that no building stood on it, which
    the owner could show false. A building stands partly on a lot by the test ``locate_buildings`` uses to put a
    building whose middle lies on no parcel on the lot it covers most: its footprint covers the profile's least
    occupied building (``measurement.min_occupied_building_sqft``) of the lot, or half of itself. So a house
    crossing the line by a few square feet is not named. The candidates are the pairs of a building and a parcel
    its envelope reaches that ``_locate`` kept, on a parcel found unoccupied by the buildings layer: no tree is
    queried again, and only those few pairs' footprints are cut.

    A building marked unoccupied whose middle stands on the neighbour lot was named on neither side of the line but
    its own: this lot read "no building of 150 sq ft or more, nor one marked occupied, stands on it" with 360 sq ft
    of a 1,200 sq ft house on it. It is named as a counting building is, and said to be marked unoccupied.
    """
    geoms = np.asarray(buildings.geometry.values)
    b, q = located.near
    keep = vacant[q] & (located.parcels[b] >= 0) & (located.parcels[b] != q)
    b, q = b[keep], q[keep]
    # counting, or marked unoccupied though its size would count (a shed, marked or not, is not named)
    keep = located.qualifies[b] | _big_enough(geoms[b], profile, fpu)[0]
    b, q = b[keep], q[keep]
    # envelopes that meet, footprints that may not (a lot set at an angle): a predicate before the overlay
    footprint = (shapely.get_dimensions(geoms[b]) == 2) & shapely.intersects(geoms[b], parcel_geoms[q])
    b, q = b[footprint], q[footprint]
    enough_area = profile.measurement.min_occupied_building_sqft.value / fpu**2
    covered, enough = _covers_enough(geoms[b], parcel_geoms[q], enough_area, workers)
    b, q, covered = b[enough], q[enough], covered[enough]
    if not len(b):
        return None
    p = located.parcels[b]
    points = _inside_points(geoms[b], workers)
    middle = shapely.contains_xy(parcel_geoms[p], shapely.get_x(points), shapely.get_y(points))
    how = np.full(len(b), PartlyOn.MIDDLE, dtype=np.int8)
    astray = np.flatnonzero(~middle)  # counted where it covers most (or as much, and comes first by parcel ID)
    covered_there, _ = _covers_enough(geoms[b[astray]], parcel_geoms[p[astray]], enough_area, workers)
    how[astray] = np.where(covered_there > covered[astray], PartlyOn.MOST, PartlyOn.AS_MUCH)
    ids = _building_ids(buildings, b)
    # The lot's buildings by the square feet on it, then by ID as mains' ties are: never by the row order.
    order = np.lexsort((tie_rank(ids, geoms[b]), -covered, q))
    return PartlyOn(
        parcel=q[order],
        building_id=ids[order],
        sqft=(covered * fpu * fpu)[order],
        counted_on=_text(parcels["parcel_id"].iloc[p[order]]),
        how=how[order],
        marked=~located.qualifies[b[order]],
    )


def _marked_unoccupied(vacant, buildings, located: _Located, profile, fpu) -> MarkedUnoccupied | None:
    """The buildings standing on the parcels ``vacant`` (a mask) that would count by their size, or as points, but
    which the buildings layer marks unoccupied (``analysis.reasons.MarkedUnoccupied``).

    Such a lot's reason said "no building of 150 sq ft or more, nor one marked occupied, stands on it", which the
    owner of a 1,200 sq ft house marked vacant could show false. The facts are the occupancy step's own: where each
    building stands and whether it counts (``counting_buildings``); a building that does not count though its size
    would have it count is one marked unoccupied.
    """
    if located is None:
        return None
    b = np.flatnonzero((located.parcels >= 0) & ~located.qualifies)
    b = b[vacant[located.parcels[b]]]
    geoms = np.asarray(buildings.geometry.values)[b]
    sized, sqft = _big_enough(geoms, profile, fpu)
    b, geoms, sqft = b[sized], geoms[sized], sqft[sized]
    if not len(b):
        return None
    ids = _building_ids(buildings, b)
    q = located.parcels[b]
    # The lot's buildings by their square feet, then by ID as mains' ties are: never by the row order.
    order = np.lexsort((tie_rank(ids, geoms), -sqft, q))
    point = shapely.get_dimensions(geoms) == 0
    return MarkedUnoccupied(parcel=q[order], building_id=ids[order], sqft=sqft[order], point=point[order])


def _building_ids(buildings: gpd.GeoDataFrame, rows: np.ndarray) -> np.ndarray:
    """The buildings' IDs at positions ``rows``, "buildings-N" (its row, from 1) where the layer gives none."""
    given = (
        _text(buildings["building_id"].iloc[rows]) if "building_id" in buildings else np.full(len(rows), None, object)
    )
    return np.where(pd.isna(given), np.char.add("buildings-", (rows + 1).astype(str)).astype(object), given)


def _inside_points(geoms: np.ndarray, workers: int) -> np.ndarray:
    """A point inside each building: its centroid where that lies inside (nearly always), else a surface point."""
    points = elementwise(shapely.centroid, geoms, workers=workers)
    outside = ~shapely.intersects(geoms, points)
    if outside.any():
        points[outside] = shapely.point_on_surface(geoms[outside])
    return points


def _connected(parcels: gpd.GeoDataFrame) -> np.ndarray:
    if "connected" not in parcels.columns:
        return np.zeros(len(parcels), dtype=bool)
    return parcels["connected"].fillna(False).astype(bool).to_numpy()


# A notice date outside these years is a typo (9999-12-31 broke the deadline's date arithmetic with a server error;
# 0001-01-01 was accepted). Past dates are legitimate, to reconstruct earlier notices, but not before 1900.
EARLIEST_NOTICE_YEAR = 1900
LATEST_NOTICE_YEAR = 2999


def check_notice(profile: Profile, notice_date: dt.date | None, notice_reason: str | None) -> None:
    """Refuse a notice the profile does not allow: Poughkeepsie's § 168-22.2G needs one of its reasons."""
    rule = profile.mandate.notice_reasons
    if notice_date is not None and not EARLIEST_NOTICE_YEAR <= notice_date.year <= LATEST_NOTICE_YEAR:
        outside = (
            f"after {LATEST_NOTICE_YEAR}" if notice_date.year > LATEST_NOTICE_YEAR else f"before {EARLIEST_NOTICE_YEAR}"
        )
        raise AnalysisError(
            f"The notice date {notice_date.isoformat()} lies {outside}: give the day the letters were or will be "
            "mailed, as YYYY-MM-DD.",
            fix=Fix("notice_date", example=dt.date.today().isoformat()),
        )
    if notice_reason is not None and notice_reason not in rule.value:
        allowed = ", ".join(rule.value) or "none (this profile sets no notice reasons)"
        raise AnalysisError(
            f"Notice reason {notice_reason!r} is not one the {profile.id} profile knows: {allowed}.",
            fix=Fix("notice_reason", choices=tuple(rule.value)) if rule.value else None,
        )
    if notice_date is not None and rule.value and notice_reason is None:
        raise AnalysisError(
            f'{rule.section}: "{rule.quote}" Give the reason for these notices (the notice reason): '
            f"{' or '.join(rule.value)}.",
            fix=Fix("notice_reason", choices=tuple(rule.value)),
        )
