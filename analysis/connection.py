"""Where a lot's building sewer connects: the connection point on the deciding main, and which main decides when two
are equally near.

The control manhole (the nearest manhole downstream of where the building sewer connects) and the length to the
plant are read from the connection point, so it must be a fact of the map, never of floating-point noise. The
shortest line between a lot and its main is not: a frontage parallel to the main is at the nearest distance all
along, and which of its ends ``shapely.shortest_line`` returns (80 ft apart on a lot 80 ft wide) depended on the
last bits of the coordinates, so measuring in another CRS, or reading the same lots in feet rather than degrees,
moved connection points, changed the main named in the notice (two mains meeting at a manhole in front of a lot)
and the control manhole (a tester, on Manchester, Vermont's sewer).

The rule (``connection_points``), for a lot at a distance ``d`` from its deciding main (``d`` > the tolerance):

1. The *nearest stretch* is the part of the lot's boundary within ``d`` + the profile's measuring tolerance
   (``measurement.distance_tolerance_ft``, 0.01 ft) of the deciding main or of a main tied with it: another
   counting main within that tolerance of the same distance (one the said-sewer rule allows, where it applies).
   Where it has several pieces, the longest (lengths within the tolerance equal: the first along the boundary
   from the ring's first vertex).
2. Its middle (half way along it) is where the building sewer is taken to leave the lot.
3. Of the tied mains, the one whose nearest point to that middle is nearest it decides (within the tolerance
   equal: then one in a street the lot abuts, then the lowest main ID, as ``mandate.tie_rank`` orders them), and
   that nearest point is the connection point. For a frontage parallel to its main it is the foot of the
   frontage's middle; for a lot whose nearest point is a corner it is that corner's foot (within a foot or so).

The distance the mandate compares is unchanged: the shortest distance from the property line to the deciding main.
A main touching or crossing the lot (``d`` within the tolerance) keeps the shortest line's point, where the main
meets the lot.

Everything is numpy over (lot edge, main segment) pairs: the part of an edge within ``r`` of a segment is the edge
clipped to the segment's capsule (a Liang-Barsky clip in the segment's frame, and the two end discs), and the
stretch is the union of those parts along the boundary. No geometry is built per lot but the measuring line.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import shapely

from analysis._parallel import envelope_gap, map_chunks

# A gap (in CRS units) put between rings on the one arc-length axis all rings share, so parts never join across
# rings; and the slack under which two parts of one ring touch (far below the tolerance, far above rounding).
_RING_GAP = 1.0
_TOUCH = 1e-7


@dataclass(frozen=True)
class MainSegments:
    """The counting mains cut into straight segments (x0, y0, x1, y1), each with its main; ``first`` and ``count``
    give each main's run of segments."""

    xy: np.ndarray
    main: np.ndarray
    first: np.ndarray
    count: np.ndarray
    box: np.ndarray

    @classmethod
    def of(cls, mains: np.ndarray) -> MainSegments:
        """The segments of ``mains`` (line strings or multi-line strings; empty and missing ones have none)."""
        parts, part_main = shapely.get_parts(mains, return_index=True)
        coords, vertex_part = shapely.get_coordinates(parts, return_index=True)
        same = vertex_part[:-1] == vertex_part[1:]
        xy = np.column_stack([coords[:-1][same], coords[1:][same]])
        main = part_main[vertex_part[:-1][same]]
        count = np.bincount(main, minlength=len(mains))
        first = np.r_[0, np.cumsum(count)[:-1]]
        return cls(xy, main, first, count, _segment_boxes(xy))


@dataclass(frozen=True)
class Connections:
    """For the lots asked about (``lot``: positions), the deciding main, its distance, the middle of the nearest
    stretch (``middle``: x, y, on the lot's boundary) and the connection point (``point``: x, y, on the main)."""

    lot: np.ndarray
    main: np.ndarray
    distance: np.ndarray
    middle: np.ndarray
    point: np.ndarray


def connection_points(
    parcels: np.ndarray,
    segments: MainSegments,
    candidates: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    reach: np.ndarray,
    *,
    tolerance: float,
    rank: np.ndarray,
    workers: int,
) -> Connections:
    """The connection point and deciding main of each lot by the module's rule.

    ``candidates`` are (lot, main, distance, in_abutting_street) rows: each lot's deciding main and the mains tied
    with it, grouped by lot in ascending lot order; ``reach`` is, per candidate row, the lot's nearest distance
    plus ``tolerance`` (CRS units). Lots for which no stretch is found (an empty or broken geometry) are left out
    of the answer; the caller keeps the shortest line for them.
    """
    lot, main, distance, abutting = candidates
    if len(lot) == 0:
        empty = np.empty(0, np.int64)
        return Connections(empty, empty, np.empty(0), np.empty((0, 2)), np.empty((0, 2)))
    # Chunks of whole lots: each lot's candidate rows are consecutive.
    first = np.r_[np.flatnonzero(np.r_[True, lot[1:] != lot[:-1]]), len(lot)]

    def run(part: slice):
        rows = slice(first[part.start], first[part.stop])
        return _connections(
            parcels, segments, lot[rows], main[rows], distance[rows], abutting[rows], reach[rows], tolerance, rank
        )

    done = map_chunks(run, len(first) - 1, workers)
    return Connections(*(np.concatenate([d[k] for d in done]) for k in range(5)))


def _connections(parcels, segments, lot, main, distance, abutting, reach, tolerance, rank):
    """``connection_points`` for one chunk of lots (their candidate rows)."""
    lots = lot[np.r_[True, lot[1:] != lot[:-1]]]  # the rows come grouped by lot, in ascending order
    xy, length, ring_lot, ring_start, ring_perimeter, edge_ring, edge_arc = _edges(parcels[lots])
    # (candidate, segment) pairs: every segment of each candidate main whose envelope comes within reach of the lot.
    seg_count = segments.count[main]
    cand = np.repeat(np.arange(len(lot)), seg_count)
    seg = np.repeat(segments.first[main] - np.r_[0, np.cumsum(seg_count)[:-1]], seg_count) + np.arange(len(cand))
    lot_local = np.searchsorted(lots, lot)
    lot_box = shapely.bounds(parcels[lots])
    near = envelope_gap(lot_box[lot_local[cand]], segments.box[seg]) <= reach[cand]
    cand, seg = cand[near], seg[near]
    if len(cand) == 0:
        return lot[:0], main[:0], distance[:0], np.empty((0, 2)), np.empty((0, 2))
    # (edge, segment) pairs: every edge of the lot with every segment near it.
    lot_of_edge = ring_lot[edge_ring]
    edge_first = np.searchsorted(lot_of_edge, np.arange(len(lots)))
    edge_count = np.diff(np.r_[edge_first, len(lot_of_edge)])
    owner = lot_local[cand]
    per = edge_count[owner]
    pair = np.repeat(np.arange(len(cand)), per)
    edge = np.repeat(edge_first[owner] - np.r_[0, np.cumsum(per)[:-1]], per) + np.arange(len(pair))
    r = reach[cand[pair]]
    t0, t1 = _capsule_clip(xy[edge], segments.xy[seg[pair]], r)
    hit = t1 >= t0
    edge, t0, t1 = edge[hit], t0[hit], t1[hit]
    start, end = edge_arc[edge] + t0 * length[edge], edge_arc[edge] + t1 * length[edge]
    middle_arc, has_stretch = _middles(
        start, end, edge_ring[edge], ring_lot, ring_start, ring_perimeter, len(lots), tolerance
    )
    middle = _point_at(xy, length, edge_arc, middle_arc[has_stretch])
    # The point of each candidate main nearest the middle, over that main's segments within reach.
    at = np.full((len(lots), 2), np.nan)
    at[has_stretch] = middle
    foot, gap = _feet(at[lot_local[cand]], segments.xy[seg])
    order = np.lexsort((gap, cand))
    first = order[np.r_[True, cand[order][1:] != cand[order][:-1]]]
    cand_gap = np.full(len(lot), np.inf)
    cand_foot = np.full((len(lot), 2), np.nan)
    cand_gap[cand[first]], cand_foot[cand[first]] = gap[first], foot[first]
    # The deciding main: nearest the middle (within the tolerance), then in an abutting street, then by rank.
    least = np.full(len(lots), np.inf)
    np.minimum.at(least, lot_local, cand_gap)
    level = cand_gap <= least[lot_local] + tolerance
    order = np.lexsort((rank[main], ~abutting, ~level, lot_local))
    pick = order[np.r_[True, lot_local[order][1:] != lot_local[order][:-1]]]
    ok = has_stretch[lot_local[pick]] & np.isfinite(cand_gap[pick])
    pick = pick[ok]
    return lot[pick], main[pick], distance[pick], at[lot_local[pick]], cand_foot[pick]


def _edges(geoms: np.ndarray):
    """Every ring's edges (x0, y0, x1, y1) of the lots ``geoms`` and their lengths, with each ring's lot (position in
    ``geoms``), start and perimeter on a shared arc-length axis, each edge's ring and its start on that axis.

    A polygon without holes (nearly every lot) is its own ring: its coordinates are read as they are, with no ring
    geometry made for it."""
    simple = (shapely.get_type_id(geoms) == shapely.GeometryType.POLYGON) & (shapely.get_num_interior_rings(geoms) == 0)
    parts, part_lot = shapely.get_parts(geoms[~simple], return_index=True)
    rings, ring_part = shapely.get_rings(parts, return_index=True)
    ring_lot = np.r_[np.flatnonzero(simple), np.flatnonzero(~simple)[part_lot[ring_part]]]
    order = np.argsort(ring_lot, kind="stable")
    ring_lot, rings = ring_lot[order], np.r_[geoms[simple], rings][order]
    coords, vertex_ring = shapely.get_coordinates(rings, return_index=True)
    same = vertex_ring[:-1] == vertex_ring[1:]
    xy = np.column_stack([coords[:-1][same], coords[1:][same]])
    edge_ring = vertex_ring[:-1][same]
    length = np.hypot(xy[:, 2] - xy[:, 0], xy[:, 3] - xy[:, 1])
    keep = length > 0
    xy, edge_ring, length = xy[keep], edge_ring[keep], length[keep]
    perimeter = np.bincount(edge_ring, weights=length, minlength=len(rings))
    ring_start = np.r_[0.0, np.cumsum(perimeter + _RING_GAP)[:-1]]
    within = np.cumsum(length) - length
    ring_first_edge = np.searchsorted(edge_ring, np.arange(len(rings)))
    offset = np.zeros(len(rings))
    has = ring_first_edge < len(edge_ring)
    offset[has] = within[ring_first_edge[has]]
    edge_arc = ring_start[edge_ring] + within - offset[edge_ring]
    return xy, length, ring_lot, ring_start, perimeter, edge_ring, edge_arc


def _middles(start, end, ring, ring_lot, ring_start, ring_perimeter, n_lots, tolerance):
    """Each lot's middle of its nearest stretch on the arc axis, from the pieces (start, end, ring) that lie within
    reach: pieces that meet are one part, a part running through a ring's first vertex is one part, and of a
    lot's parts the longest (lengths within ``tolerance`` equal: the first along the boundary) gives the middle."""
    middle = np.full(n_lots, np.nan)
    if len(start) == 0:
        return middle, np.zeros(n_lots, dtype=bool)
    order = np.argsort(start, kind="stable")
    start, end, ring = start[order], end[order], ring[order]
    reach_so_far = np.maximum.accumulate(end)
    new = np.r_[True, start[1:] > reach_so_far[:-1] + _TOUCH]
    heads = np.flatnonzero(new)
    p_start, p_end, p_ring = start[heads], np.maximum.reduceat(end, heads), ring[heads]
    # A part from the ring's first vertex and one to its last are one part through that vertex.
    ring_end = ring_start + ring_perimeter
    first_of_ring = np.r_[True, p_ring[1:] != p_ring[:-1]]
    last_of_ring = np.r_[p_ring[1:] != p_ring[:-1], True]
    last_index, first_index = np.flatnonzero(last_of_ring), np.flatnonzero(first_of_ring)
    joins = (
        (first_index != last_index)
        & (p_start[first_index] <= ring_start[p_ring[first_index]] + _TOUCH)
        & (p_end[last_index] >= ring_end[p_ring[last_index]] - _TOUCH)
    )
    p_len = p_end - p_start
    p_len[last_index[joins]] += p_len[first_index[joins]]
    p_len[first_index[joins]] = -np.inf  # folded into the ring's last part
    lot = ring_lot[p_ring]
    longest = np.full(n_lots, -np.inf)
    np.maximum.at(longest, lot, p_len)
    level = p_len >= longest[lot] - tolerance
    order = np.lexsort((p_start, ~level, lot))
    pick = order[np.r_[True, lot[order][1:] != lot[order][:-1]]]
    mid = p_start[pick] + p_len[pick] / 2
    over = mid > ring_end[p_ring[pick]]
    mid[over] -= ring_perimeter[p_ring[pick][over]]
    middle[lot[pick]] = mid
    return middle, np.isfinite(middle)


def _point_at(xy: np.ndarray, length: np.ndarray, edge_arc: np.ndarray, arc: np.ndarray) -> np.ndarray:
    """The points at positions ``arc`` on the shared arc axis."""
    edge = np.clip(np.searchsorted(edge_arc, arc, side="right") - 1, 0, len(edge_arc) - 1)
    t = np.clip((arc - edge_arc[edge]) / length[edge], 0.0, 1.0)
    return np.column_stack(
        [xy[edge, 0] + t * (xy[edge, 2] - xy[edge, 0]), xy[edge, 1] + t * (xy[edge, 3] - xy[edge, 1])]
    )


def _feet(points: np.ndarray, seg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The nearest point of each segment to its point, and the distance to it."""
    wx, wy = seg[:, 2] - seg[:, 0], seg[:, 3] - seg[:, 1]
    px, py = points[:, 0] - seg[:, 0], points[:, 1] - seg[:, 1]
    w2 = wx * wx + wy * wy
    t = np.clip(np.divide(px * wx + py * wy, w2, out=np.zeros_like(w2), where=w2 > 0), 0.0, 1.0)
    fx, fy = seg[:, 0] + t * wx, seg[:, 1] + t * wy
    gap = np.hypot(points[:, 0] - fx, points[:, 1] - fy)
    return np.column_stack([fx, fy]), np.where(np.isfinite(gap), gap, np.inf)


def _capsule_clip(edge: np.ndarray, seg: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The part [t0, t1] of each edge (as a fraction of it) within ``r`` of its segment: the edge clipped to the
    segment's capsule, the union of a rectangle (clipped in the segment's frame) and two end discs, whose union
    on a line is one interval as the capsule is convex. Empty where t1 < t0. Worked relative to the edge's start,
    so large coordinates lose no precision."""
    ax, ay = edge[:, 0], edge[:, 1]
    ux, uy = edge[:, 2] - ax, edge[:, 3] - ay
    t0 = np.full(len(edge), np.inf)
    t1 = np.full(len(edge), -np.inf)
    for cx, cy in ((seg[:, 0], seg[:, 1]), (seg[:, 2], seg[:, 3])):
        lo, hi = _disc_clip(ax - cx, ay - cy, ux, uy, r)
        t0, t1 = np.where(hi >= lo, np.minimum(t0, lo), t0), np.where(hi >= lo, np.maximum(t1, hi), t1)
    wx, wy = seg[:, 2] - seg[:, 0], seg[:, 3] - seg[:, 1]
    wl = np.hypot(wx, wy)
    ok = wl > 0
    wl = np.where(ok, wl, 1.0)
    ex, ey = wx / wl, wy / wl
    rx, ry = ax - seg[:, 0], ay - seg[:, 1]
    along0, along_d = rx * ex + ry * ey, ux * ex + uy * ey
    across0, across_d = -rx * ey + ry * ex, -ux * ey + uy * ex
    lo, hi = np.zeros(len(edge)), np.ones(len(edge))
    for value, rate, low, high in ((along0, along_d, 0.0, wl), (across0, across_d, -r, r)):
        lo, hi = _slab(value, rate, low, high, lo, hi)
    box_hit = ok & (hi >= lo)
    t0 = np.where(box_hit, np.minimum(t0, lo), t0)
    t1 = np.where(box_hit, np.maximum(t1, hi), t1)
    return t0, t1


def _slab(value, rate, low, high, lo, hi):
    """Liang-Barsky: narrow [lo, hi] to the t where low <= value + rate * t <= high."""
    with np.errstate(divide="ignore", invalid="ignore"):
        a, b = (low - value) / rate, (high - value) / rate
    moving = rate != 0
    enter = np.where(moving, np.minimum(a, b), np.where((value >= low) & (value <= high), -np.inf, np.inf))
    leave = np.where(moving, np.maximum(a, b), np.where((value >= low) & (value <= high), np.inf, -np.inf))
    return np.maximum(lo, enter), np.minimum(hi, leave)


def _disc_clip(px, py, ux, uy, r):
    """The t in [0, 1] where |p + t u| <= r (p: the edge's start relative to the disc's centre)."""
    a = ux * ux + uy * uy
    b = px * ux + py * uy
    c = px * px + py * py - r * r
    disc = b * b - a * c
    root = np.sqrt(np.maximum(disc, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        lo, hi = (-b - root) / a, (-b + root) / a
    lo, hi = np.maximum(lo, 0.0), np.minimum(hi, 1.0)
    empty = (disc < 0) | (a == 0)
    return np.where(empty, np.inf, lo), np.where(empty, -np.inf, hi)


def _segment_boxes(seg: np.ndarray) -> np.ndarray:
    return np.column_stack(
        [
            np.minimum(seg[:, 0], seg[:, 2]),
            np.minimum(seg[:, 1], seg[:, 3]),
            np.maximum(seg[:, 0], seg[:, 2]),
            np.maximum(seg[:, 1], seg[:, 3]),
        ]
    )
