"""Streets, alleys and rights-of-way: which parcels abut which streets, and which streets hold a sewer main.

§ 144-4 and § 168-22.2G tie the connection duty to a property "abutting on any street, alley or right-of-way in
which there is ... a public sanitary sewer". The geometric tests, all settings in the profile:

- A street's right-of-way is its polygon when the layer holds polygons, else its centreline buffered by half
  its ``row_width_ft`` (or ``default_row_width_ft``) with flat ends (a rectangle per straight segment).
- A parcel *abuts* a street when it comes within ``abut_tolerance_ft`` of the right-of-way: the right-of-way is
  grown by the tolerance once, and parcels are tested for ``intersects`` against it.
- A main *lies in* a street when at least ``main_in_street_min_row_widths`` times the street's width of the main
  runs inside the right-of-way, so a main that only crosses the street, or ends in an intersection, does not.
- A street is *sewered* when a main lies in it. Street layers are split at intersections, so with
  ``join_street_segments`` a street is all its segments: those that meet (an end within ``abut_tolerance_ft`` of
  the other, at its end or along it) and carry the same ``street_name`` (case and spacing aside) are one street,
  sewered when a main lies in any of them. Unnamed segments, and same-named streets that do not meet, stay apart;
  a main that only crosses a street still lies in none of its segments, so it sewers none.
"""

from __future__ import annotations

from dataclasses import dataclass

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely
from scipy.sparse import coo_array
from scipy.sparse.csgraph import connected_components

from analysis._parallel import elementwise, query_pairs
from analysis.profiles import Profile


@dataclass(frozen=True)
class StreetPairs:
    """Integer pairs: ``abuts`` (parcel, street) and ``holds`` (main, street, longest inside first), where a street
    is one row of the streets layer (a segment); ``street_of`` gives each row the street it is part of (a position
    shared by the segments of one street, see ``same_street``), and ``sewered`` is per row, true for every segment
    of a street in which a main lies."""

    abuts: pd.DataFrame
    holds: pd.DataFrame
    sewered: np.ndarray
    street_names: np.ndarray
    street_of: np.ndarray


def street_pairs(
    streets: gpd.GeoDataFrame,
    parcels: np.ndarray,
    mains: np.ndarray,
    *,
    profile: Profile,
    fpu: float,
    workers: int,
    parcel_tree: shapely.STRtree | None = None,
) -> StreetPairs:
    """Which parcels abut which streets, which mains lie in which streets, and which streets are sewered.

    With ``parcel_tree`` (a tree of ``parcels``), the rights-of-way are looked up in it: a town has far fewer
    streets than parcels, so that is fewer queries than one per parcel. The pairs come out the same either way,
    ordered by parcel, then street.
    """
    m = profile.measurement
    geoms = np.asarray(streets.geometry.values)
    width_ft = _row_width_ft(streets, profile)
    half = width_ft / 2 / fpu
    tol = m.abut_tolerance_ft.value / fpu

    row, straight = _rights_of_way(geoms, half, workers)
    reach = geoms.copy()
    reach[straight] = _rectangles(geoms[straight], half[straight] + tol, tol)
    rest = np.flatnonzero(~straight)
    reach[rest] = (
        elementwise(
            shapely.buffer, row[rest], np.full(len(rest), tol), workers=workers, join_style="mitre", mitre_limit=2
        )
        if tol > 0
        else row[rest]
    )

    if parcel_tree is not None:
        r_idx, p_idx = query_pairs(parcel_tree, reach, workers=workers, predicate="intersects")
    else:
        p_idx, r_idx = query_pairs(shapely.STRtree(reach), parcels, workers=workers, predicate="intersects")
    order = np.lexsort((r_idx, p_idx))
    p_idx, r_idx = p_idx[order], r_idx[order]

    m_idx, mr_idx = query_pairs(shapely.STRtree(row), mains, workers=workers, predicate="intersects")
    inside = np.empty(len(m_idx))
    # A two-point main in a straight street's rectangle: clip analytically. Anything else: GEOS overlay.
    fast = (
        straight[mr_idx] & (shapely.get_num_coordinates(mains[m_idx]) == 2) & (shapely.get_type_id(mains[m_idx]) == 1)
    )
    inside[fast] = _length_inside(mains[m_idx[fast]], geoms[mr_idx[fast]], half[mr_idx[fast]])
    slow = ~fast
    inside[slow] = shapely.length(
        elementwise(shapely.intersection, mains[m_idx[slow]], row[mr_idx[slow]], workers=workers)
    )
    keep = inside * fpu >= m.main_in_street_min_row_widths.value * width_ft[mr_idx]
    holds = pd.DataFrame({"main": m_idx[keep], "row": mr_idx[keep], "inside": inside[keep]})
    holds = holds.sort_values("inside", ascending=False, kind="stable").drop(columns="inside")
    names = streets["street_name"] if "street_name" in streets.columns else pd.Series([None] * len(geoms))
    names = names.astype(object).where(names.notna(), None).to_numpy(object)
    street_of = same_street(geoms, names, tol) if m.join_street_segments.value else np.arange(len(geoms))
    in_sewered_street = np.zeros(len(geoms), dtype=bool)
    in_sewered_street[street_of[holds["row"].to_numpy()]] = True
    return StreetPairs(
        abuts=pd.DataFrame({"parcel": p_idx, "row": r_idx}),
        holds=holds,
        sewered=in_sewered_street[street_of],
        street_names=_as_most_segments_spell_it(names, street_of),
        street_of=street_of,
    )


def _as_most_segments_spell_it(names: np.ndarray, street_of: np.ndarray) -> np.ndarray:
    """Each segment's street name as most of its street's segments spell it: a street joined across segments typed
    "Elm St", "elm st" and "ELM  ST" was named in a reason by whichever segment its main lay in ("in elm st", on the
    board's record; a tester). Unjoined segments keep their own.

    Examples
    --------
    >>> names = np.array(["Elm St", "elm st", "Elm St", "Oak St", None], dtype=object)
    >>> _as_most_segments_spell_it(names, np.array([0, 0, 0, 3, 4])).tolist()
    ['Elm St', 'Elm St', 'Elm St', 'Oak St', None]
    """
    if not len(names) or (street_of == np.arange(len(names))).all():
        return names
    spelled = pd.DataFrame({"street": street_of, "name": names}).dropna()
    if spelled.empty:
        return names
    counts = spelled.value_counts(["street", "name"], sort=False).reset_index(name="n")
    counts = counts.sort_values(["street", "n", "name"], ascending=[True, False, True], kind="stable")
    chosen = counts.drop_duplicates("street").set_index("street")["name"]
    out = pd.Series(street_of).map(chosen).to_numpy(object)
    return np.where(pd.isna(names), None, out).astype(object)


def same_street(geoms: np.ndarray, names: np.ndarray, tol: float) -> np.ndarray:
    """Each segment's street: the lowest position among the segments it is joined to, directly or through others.

    Two segments are joined when they carry the same non-empty name (letter case and runs of spaces aside) and an
    end of one lies within ``tol`` (CRS units) of the other, at its end or anywhere along it (a T-junction); a
    right-of-way polygon's every point is an end. Unnamed segments are streets of their own, and so are two
    same-named streets that never meet.

    Examples
    --------
    >>> from shapely.geometry import LineString
    >>> geoms = np.array([LineString([(0, 0), (10, 0)]), LineString([(10, 0), (20, 0)]),
    ...                   LineString([(10, -5), (10, 5)]), LineString([(90, 0), (99, 0)])])
    >>> same_street(geoms, np.array(["Main St", " main  st", "Oak St", "Main St"], dtype=object), 0.5).tolist()
    [0, 0, 2, 3]
    """
    n = len(geoms)
    code = _name_codes(names)
    named = np.flatnonzero(code >= 0)
    if len(named) < 2:
        return np.arange(n)
    multi = shapely.get_num_geometries(geoms[named]) > 1  # only multi-part streets are taken apart
    parts, owner = shapely.get_parts(geoms[named[multi]], return_index=True)
    parts, owner = np.concatenate([geoms[named[~multi]], parts]), np.concatenate([named[~multi], named[multi][owner]])
    linear = shapely.get_dimensions(parts) == 1
    # A line's ends from its coordinates; each is joined to every part it lies within ``tol`` of, anywhere along it:
    # a same-named segment ending on the middle of another (a T-junction not split there) is the same street, as
    # the same junction digitised split is (a tester: the answer depended on how the street was drawn).
    xy, part = shapely.get_coordinates(parts[linear], return_index=True)
    first = np.r_[True, part[1:] != part[:-1]] if len(part) else np.zeros(0, dtype=bool)
    last = np.r_[part[1:] != part[:-1], True] if len(part) else np.zeros(0, dtype=bool)
    ends = np.concatenate([xy[first], xy[last]])
    end_owner = owner[linear][np.concatenate([part[first], part[last]])]
    areas = parts[~linear]  # right-of-way polygons (and any points): every point of one is an end
    probes = np.concatenate([shapely.points(ends), areas])
    i, j = shapely.STRtree(parts).query(probes, predicate="dwithin", distance=tol)
    a, b = np.concatenate([end_owner, owner[~linear]])[i], owner[j]
    join = (a != b) & (code[a] == code[b])
    graph = coo_array((np.ones(int(join.sum()), dtype=np.int32), (a[join], b[join])), shape=(n, n))
    _, label = connected_components(graph, directed=False)
    _, lowest = np.unique(label, return_index=True)  # each street's first segment
    return lowest[label]


def _name_codes(names: np.ndarray) -> np.ndarray:
    """A number per street name, equal for names that differ only in letter case and spacing; -1 for no name.

    Each distinct name is read once (a town has far fewer names than segments).
    """
    raw, distinct = pd.factorize(pd.Series(names, dtype=object), use_na_sentinel=True)
    key = pd.Series(distinct, dtype="string").str.strip().str.lower().str.replace(r"\s+", " ", regex=True)
    key_code = pd.factorize(key.where(key != ""), use_na_sentinel=True)[0]
    return np.where(raw >= 0, key_code[np.maximum(raw, 0)] if len(key_code) else -1, -1)


def rights_of_way(streets: gpd.GeoDataFrame, *, profile: Profile, fpu: float, workers: int = 1) -> np.ndarray:
    """Each street's right-of-way as a polygon, as the analysis reads it (see the module docstring): a proposed main
    is tested against the same streets the mandate measures a parcel's abutting against.

    Examples
    --------
    >>> from analysis.profiles import load_profile
    >>> from shapely.geometry import LineString
    >>> streets = gpd.GeoDataFrame({"row_width_ft": [40.0]}, geometry=[LineString([(0, 0), (100, 0)])])
    >>> rights_of_way(streets, profile=load_profile("fort-plain"), fpu=1.0)[0].bounds
    (0.0, -20.0, 100.0, 20.0)
    """
    geoms = np.asarray(streets.geometry.values)
    return _rights_of_way(geoms, _row_width_ft(streets, profile) / 2 / fpu, workers)[0]


def _row_width_ft(streets: gpd.GeoDataFrame, profile: Profile) -> np.ndarray:
    """Each street's right-of-way width: its ``row_width_ft``, else the profile's ``default_row_width_ft``."""
    width_ft = np.full(len(streets), float(profile.measurement.default_row_width_ft.value))
    if "row_width_ft" in streets.columns:
        given = pd.to_numeric(streets["row_width_ft"], errors="coerce").to_numpy(float)
        width_ft = np.where(np.isfinite(given) & (given > 0), given, width_ft)
    return width_ft


def _rights_of_way(geoms: np.ndarray, half: np.ndarray, workers: int) -> tuple[np.ndarray, np.ndarray]:
    """The right-of-way polygons of ``geoms`` (a polygon is its own), and which were straight two-point lines."""
    linear = shapely.get_dimensions(geoms) == 1
    row = geoms.copy()
    straight = linear & (shapely.get_num_coordinates(geoms) == 2) & (shapely.get_type_id(geoms) == 1)
    row[straight] = _rectangles(geoms[straight], half[straight], 0.0)
    bent = np.flatnonzero(linear & ~straight)
    row[bent] = elementwise(
        shapely.buffer, geoms[bent], half[bent], workers=workers, cap_style="flat", join_style="mitre", mitre_limit=2
    )
    return row, straight


def _rectangles(segments: np.ndarray, half: np.ndarray, extend: float) -> np.ndarray:
    """The right-of-way of straight two-point centrelines: ``half`` to each side, ``extend`` past each end.

    The same polygons as a flat-capped buffer (grown by ``extend`` with mitred corners), built from
    coordinates at once instead of one GEOS buffer per street.
    """
    xy = shapely.get_coordinates(segments).reshape(-1, 2, 2)
    d = xy[:, 1] - xy[:, 0]
    length = np.hypot(d[:, 0], d[:, 1])
    u = d / np.where(length > 0, length, 1.0)[:, None]
    normal = np.stack([-u[:, 1], u[:, 0]], axis=1) * half[:, None]
    a, b = xy[:, 0] - u * extend, xy[:, 1] + u * extend
    ring = np.stack([a + normal, b + normal, b - normal, a - normal, a + normal], axis=1)
    return shapely.polygons(ring)


def _length_inside(mains: np.ndarray, centrelines: np.ndarray, half: np.ndarray) -> np.ndarray:
    """Length of each straight main inside its straight street's rectangle (Liang-Barsky, street's own frame).

    The street runs from a to b; in its frame a point is (along, across) and the rectangle is
    0 <= along <= |ab|, -half <= across <= half. The main p0 -> p1 is clipped to that box.
    """
    m = shapely.get_coordinates(mains).reshape(-1, 2, 2)
    c = shapely.get_coordinates(centrelines).reshape(-1, 2, 2)
    d = c[:, 1] - c[:, 0]
    length = np.hypot(d[:, 0], d[:, 1])
    u = d / np.where(length > 0, length, 1.0)[:, None]
    nrm = np.stack([-u[:, 1], u[:, 0]], axis=1)
    rel0, rel1 = m[:, 0] - c[:, 0], m[:, 1] - c[:, 0]
    p0 = np.stack([(rel0 * u).sum(1), (rel0 * nrm).sum(1)], axis=1)
    step = np.stack([((rel1 - rel0) * u).sum(1), ((rel1 - rel0) * nrm).sum(1)], axis=1)
    lo = np.stack([np.zeros_like(length), -half], axis=1)
    hi = np.stack([length, half], axis=1)
    t0, t1 = np.zeros(len(m)), np.ones(len(m))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for axis in (0, 1):
            dv, pv = step[:, axis], p0[:, axis]
            a, b = (lo[:, axis] - pv) / dv, (hi[:, axis] - pv) / dv
            enter, leave = np.minimum(a, b), np.maximum(a, b)
            parallel = dv == 0
            outside = parallel & ((pv < lo[:, axis]) | (pv > hi[:, axis]))
            t0 = np.where(parallel, t0, np.maximum(t0, enter))
            t1 = np.where(parallel, t1, np.minimum(t1, leave))
            t1 = np.where(outside, -1.0, t1)
    seg = np.hypot(step[:, 0], step[:, 1])
    return np.clip(t1 - t0, 0.0, None) * seg


def abuts_sewered(pairs: StreetPairs, n_parcels: int) -> np.ndarray:
    """True for parcels that abut a street in which a counting main lies."""
    out = np.zeros(n_parcels, dtype=bool)
    a = pairs.abuts
    out[a["parcel"].to_numpy()[pairs.sewered[a["row"].to_numpy()]]] = True
    return out


def said_sewer(
    pairs: StreetPairs,
    tree: shapely.STRtree,
    parcels: np.ndarray,
    mains: np.ndarray,
    main_index: np.ndarray,
    distance: np.ndarray,
    reach: float,
    rank: np.ndarray | None = None,
    ties: float | None = None,
):
    """Make the deciding main one that lies in a street the parcel abuts, where one is within ``reach``.

    Of two such mains exactly as near, the one of lower ``rank`` (``mandate.tie_rank``: by main ID) decides.
    With ``ties`` (a distance), a fourth item: for the parcels whose main this changed, the other mains in a street
    they abut within ``ties`` of the new main's distance, as (parcels, mains, distances).

    Returns the new main positions and distances, and each parcel's street position (-1 where none): the
    street the deciding main runs along, for the reason sentence. A main lying in any segment of a street the
    parcel abuts is in that street (``StreetPairs.street_of``); the segment named is the one the main lies in,
    the parcel's own where it lies there too.
    """
    holds, abuts = _holds_and_abuts(pairs)
    has_main = np.flatnonzero(main_index >= 0)
    street = np.full(len(parcels), -1, dtype=np.int64)
    street[has_main] = street_of_pairs(pairs, has_main, main_index[has_main])

    todo = np.flatnonzero((street < 0) & (distance <= reach) & (main_index >= 0))
    tied = (np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0))
    if len(todo):
        t_in, m_near = tree.query(parcels[todo], predicate="dwithin", distance=reach)
        cand = pd.DataFrame({"parcel": todo[t_in], "main": m_near})
        cand = holds.merge(cand.merge(abuts, on="parcel"), on=["main", "street"])
        if len(cand):
            cand["d"] = shapely.distance(parcels[cand["parcel"].to_numpy()], mains[cand["main"].to_numpy()])
            cand["rank"] = (np.arange(len(mains)) if rank is None else rank)[cand["main"].to_numpy()]
            best = _in_own_segment_first(cand, ["parcel", "d", "rank"]).drop_duplicates("parcel")
            rows = best["parcel"].to_numpy()
            main_index, distance = main_index.copy(), distance.copy()
            main_index[rows] = best["main"].to_numpy()
            distance[rows] = best["d"].to_numpy()
            street[rows] = best["row"].to_numpy()
            if ties is not None:
                p, m, d = (cand[c].to_numpy() for c in ("parcel", "main", "d"))
                other = (m != main_index[p]) & (d <= distance[p] + ties)
                pairs_ = np.unique(np.column_stack([p[other], m[other]]), axis=0, return_index=True)[1]
                keep = np.flatnonzero(other)[pairs_]
                tied = (p[keep], m[keep], d[keep])
    if ties is None:
        return main_index, distance, street
    return main_index, distance, street, tied


def street_of_pairs(pairs: StreetPairs, parcel: np.ndarray, main: np.ndarray) -> np.ndarray:
    """For each (parcel, main) pair, the street row the reason names when that main decides: a segment of a street
    the parcel abuts in which the main lies (the segment it runs along longest; the parcel's own where the main lies
    there too), -1 where the main lies in no street the parcel abuts."""
    holds, abuts = _holds_and_abuts(pairs)
    asked = pd.DataFrame({"pair": np.arange(len(parcel)), "parcel": parcel, "main": main})
    # holds is ordered longest-inside first; merging from it keeps that order, so the first row per pair names the
    # street the main runs along (a segment the parcel abuts first).
    found = _in_own_segment_first(holds.merge(asked.merge(abuts, on="parcel"), on=["main", "street"]), ["pair"])
    first = found.drop_duplicates("pair")
    row = np.full(len(parcel), -1, dtype=np.int64)
    row[first["pair"].to_numpy()] = first["row"].to_numpy()
    return row


def _holds_and_abuts(pairs: StreetPairs) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The (main, row) and (parcel, abut_row) pairs, each with the street its row is a segment of."""
    holds = pairs.holds.assign(street=pairs.street_of[pairs.holds["row"].to_numpy()])
    abuts = pairs.abuts.rename(columns={"row": "abut_row"})
    abuts["street"] = pairs.street_of[abuts["abut_row"].to_numpy()]
    return holds, abuts


def _in_own_segment_first(pairs: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """``pairs`` sorted by ``by``, then the pairs whose main lies in the very segment the parcel abuts before those
    whose main lies in another segment of the same street, keeping the order they came in otherwise."""
    elsewhere = pairs["row"].to_numpy() != pairs["abut_row"].to_numpy()
    return pairs.assign(elsewhere=elsewhere).sort_values([*by, "elsewhere"], kind="stable")


def with_sewer_rights_of_way(
    streets: gpd.GeoDataFrame | None, rights_of_way: gpd.GeoDataFrame, fpu: float
) -> gpd.GeoDataFrame:
    """The streets followed by the sewer rights-of-way, as one layer of ways a parcel may abut.

    § 144-4 and § 168-22.2G speak of "any street, alley or right-of-way" holding a public sanitary sewer: a sewer
    easement across private land is such a right-of-way. Each is named "sewer right-of-way <id>" and given its
    mean width (twice its area over its perimeter: the width of a long strip), so the in-street test of
    ``main_in_street_min_row_widths`` measures a main against the easement's own width. Sewer rights-of-way come
    after the streets: a position at or past ``len(streets)`` is one of them.
    """
    geoms = np.asarray(rights_of_way.geometry.values)
    ids = (
        rights_of_way["row_id"].astype(str)
        if "row_id" in rights_of_way.columns
        else pd.Series(np.arange(1, len(geoms) + 1), index=rights_of_way.index).astype(str)
    )
    perimeter = shapely.length(geoms)
    width_ft = np.where(perimeter > 0, 2 * shapely.area(geoms) / np.where(perimeter > 0, perimeter, 1.0), 0.0) * fpu
    rows = gpd.GeoDataFrame(
        {"street_name": ("sewer right-of-way " + ids).to_numpy(object), "row_width_ft": width_ft},
        geometry=geoms,
        crs=rights_of_way.crs,
    )
    if streets is None or len(streets) == 0:
        return rows
    keep = [c for c in ("street_name", "row_width_ft") if c in streets.columns]
    base = gpd.GeoDataFrame(streets[keep].reset_index(drop=True), geometry=streets.geometry.values, crs=streets.crs)
    return gpd.GeoDataFrame(pd.concat([base, rows], ignore_index=True), geometry="geometry", crs=streets.crs)


def property_line_distance(
    parcels: np.ndarray,
    lines: np.ndarray,
    mains: np.ndarray,
    main_index: np.ndarray,
    street_pos: np.ndarray,
    n_streets: int,
    *,
    curbs: gpd.GeoDataFrame | None,
    sewer_rights_of_way: gpd.GeoDataFrame | None,
    fpu: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distances from the property line as Fort Plain's § 144-1 defines it, where the data shows that line.

    "PROPERTY LINE: The curbline if the building sewer is to connect with the public sewer in a public street";
    the edge of a sewer right-of-way where it connects in one. ``lines`` are the measuring lines from each parcel
    to its deciding main (position ``main_index``), ``street_pos`` the street or right-of-way that main lies in
    (-1 where none; at or past ``n_streets`` a sewer right-of-way). The curb in front of a parcel is the first
    curb its measuring line crosses (a building sewer taking the shortest route to the main crosses it there); the
    right-of-way edge is the boundary of the right-of-way holding the main. Of it, only the stretch in front of
    the property counts (``_in_front_of``): from that stretch the shortest distance to the main is measured, and
    the measuring line redrawn from it. Measured from the point where the measuring line crosses the curb, a lot
    past the end of a main was measured from the curb in front of its neighbour, which slides toward the main: a
    lot 157 ft from a main's end was mandated at "94.2 ft from the curbline in front of the property" (a tester).
    Where no stretch of that curb lies in front of the parcel, the parcel boundary's distance stands.

    Returns the distances in feet (the parcel boundary's where no such crossing exists), the measuring lines, and
    per parcel the position in ``MEASURED_FROM`` of what was measured from (0 parcel boundary, 1 curbline, 2 sewer
    right-of-way edge).
    """
    n = len(lines)
    has = (main_index >= 0) & ~shapely.is_missing(lines)
    distance_ft = np.full(n, np.nan)
    distance_ft[has] = shapely.length(lines[has]) * fpu
    lines = lines.copy()
    measured = np.zeros(n, dtype=np.int8)
    starts = shapely.get_point(lines, 0)

    found_rows, found_points, found_edges, found_kind = [], [], [], []
    in_street = np.flatnonzero(has & (street_pos >= 0) & (street_pos < n_streets) & (shapely.length(lines) > 0))
    if curbs is not None and len(curbs) and len(in_street):
        curb_geoms = np.asarray(curbs.geometry.values)
        polygonal = shapely.get_dimensions(curb_geoms) == 2
        curb_geoms = np.where(polygonal, shapely.boundary(curb_geoms), curb_geoms)
        i_line, i_curb = shapely.STRtree(curb_geoms).query(lines[in_street], predicate="intersects")
        if len(i_line):
            rows = in_street[i_line]
            crossing = shapely.intersection(lines[rows], curb_geoms[i_curb])
            found_rows.append(rows)
            found_points.append(shapely.get_point(shapely.shortest_line(starts[rows], crossing), -1))
            found_edges.append(curb_geoms[i_curb])
            found_kind.append(np.full(len(rows), 1, dtype=np.int8))
    in_row = np.flatnonzero(has & (street_pos >= n_streets) & (shapely.length(lines) > 0))
    if sewer_rights_of_way is not None and len(sewer_rights_of_way) and len(in_row):
        edges = shapely.boundary(np.asarray(sewer_rights_of_way.geometry.values))[street_pos[in_row] - n_streets]
        crossing = shapely.intersection(lines[in_row], edges)
        ok = ~shapely.is_empty(crossing)
        rows = in_row[ok]
        found_rows.append(rows)
        found_points.append(shapely.get_point(shapely.shortest_line(starts[rows], crossing[ok]), -1))
        found_edges.append(edges[ok])
        found_kind.append(np.full(len(rows), 2, dtype=np.int8))
    if not found_rows:
        return distance_ft, lines, measured

    rows = np.concatenate(found_rows)
    points = np.concatenate(found_points)
    edges = np.concatenate(found_edges)
    kind = np.concatenate(found_kind)
    valid = ~shapely.is_missing(points) & ~shapely.is_empty(points)
    rows, points, edges, kind = rows[valid], points[valid], edges[valid], kind[valid]
    # The first crossing from the parcel: nearest to the measuring line's start.
    along = shapely.distance(starts[rows], points)
    first = pd.DataFrame({"row": rows, "along": along, "i": np.arange(len(rows))}).sort_values(["row", "along"])
    first = first.drop_duplicates("row")["i"].to_numpy()
    rows, edges, kind = rows[first], edges[first], kind[first]
    front = _in_front_of(parcels[rows], edges, beyond=1 / fpu)
    ok = ~shapely.is_empty(front)
    rows, front, kind = rows[ok], front[ok], kind[ok]
    main_geoms = mains[main_index[rows]]
    lines[rows] = shapely.shortest_line(front, main_geoms)
    distance_ft[rows] = shapely.distance(front, main_geoms) * fpu
    measured[rows] = kind
    return distance_ft, lines, measured


def _in_front_of(parcels: np.ndarray, edges: np.ndarray, *, beyond: float) -> np.ndarray:
    """The stretch of each curb (or right-of-way edge) in front of its parcel: the part of it inside the convex
    hull of the parcel and, for each of the parcel's vertices, the nearest point on the curb carried ``beyond`` it
    (so the curb crosses the hull rather than running along its edge, where rounding would decide), the strip
    between the lot and the curb, as wide as the lot. Empty where the curb passes nowhere in front of the lot. A
    flag lot's hull is as wide as its body, not its pole: the curb in front of it is taken as wide as the lot."""
    coords, which = shapely.get_coordinates(shapely.boundary(parcels), return_index=True)
    on_edge = shapely.get_coordinates(shapely.shortest_line(shapely.points(coords), edges[which]))[1::2]
    away = on_edge - coords
    length = np.hypot(away[:, 0], away[:, 1])[:, None]
    past = np.where(length > 0, on_edge + away / np.where(length > 0, length, 1) * beyond, on_edge)
    both, of = np.concatenate([coords, past]), np.concatenate([which, which])
    order = np.argsort(of, kind="stable")
    hulls = shapely.convex_hull(shapely.multipoints(both[order], indices=of[order]))
    return shapely.intersection(edges, hulls)
