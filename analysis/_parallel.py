"""Chunked, threaded runs of vectorised shapely work.

Shapely 2 releases the GIL inside its vectorised functions and STRtree queries, so chunks of a large array run
in parallel on a small thread pool. Results are put back in input order; nothing here loops over features.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import numpy as np
import shapely
from scipy.ndimage import distance_transform_edt  # at import: 0.2-0.6 s, paid once when sewerplan starts

CHUNK = 25_000
# An input shorter than CHUNK per thread is cut into one slice per thread, each of at least MIN_CHUNK rows: a
# 100k-parcel town has about 10,000 mains, which as one chunk left the second core idle in the nearest search.
MIN_CHUNK = 2_000
# The distance grid of ``grid_bounds`` has at most this many cells along its longer side.
GRID_CELLS = 1024


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while millions of geometry objects are made.

    Geometries hold no reference cycles, but every few thousand new objects the collector walks all live ones:
    with a million parcels in memory that makes vectorised steps several times slower and their timing erratic.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def default_workers(workers: int | None = None) -> int:
    """Threads for the vectorised steps: ``workers`` when given, else the machine's cores up to 4."""
    return workers or min(4, os.cpu_count() or 1)


@contextmanager
def beside(task: Callable[[], object], *, workers: int) -> Iterator[Callable[[], object]]:
    """Run ``task()`` on a thread of its own while the caller goes on; yields a function that returns its result
    (or raises its error) when the caller needs it.

    For independent steps that do not keep both cores busy on their own (the analysis is about one core's work
    for long stretches). With ``workers`` 1 nothing runs beside: ``task`` runs when its result is asked for, in
    the caller's order, as it would without this.
    """
    if workers <= 1:
        yield task
        return
    with ThreadPoolExecutor(1) as pool:
        yield pool.submit(task).result


def chunks(n: int, size: int | None = None) -> list[slice]:
    size = size or CHUNK
    return [slice(i, min(i + size, n)) for i in range(0, n, size)]


def map_chunks(func: Callable[[slice], object], n: int, workers: int) -> list:
    """``func`` over consecutive slices of ``range(n)``, in order: slices of ``CHUNK`` rows, or, for an input
    shorter than that per thread, one slice per thread (none under ``MIN_CHUNK`` rows)."""
    parts = chunks(n, max(MIN_CHUNK, min(CHUNK, -(-n // max(workers, 1)))))
    if workers <= 1 or len(parts) <= 1:
        return [func(part) for part in parts]
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(func, parts))


def elementwise(func: Callable, *arrays: np.ndarray, workers: int, **kwargs) -> np.ndarray:
    """A vectorised shapely function (``shortest_line``, ``intersection`` ...) applied chunk by chunk.

    With no rows, ``func`` itself answers the empty input, so the result has the type it always has (floats from
    ``distance``, booleans from a predicate, geometries otherwise).
    """
    n = len(arrays[0])
    if n == 0:
        return func(*(np.asarray(a)[:0] for a in arrays), **kwargs)
    parts = map_chunks(lambda s: func(*(a[s] for a in arrays), **kwargs), n, workers)
    return np.concatenate(parts)


def query_pairs(
    tree: shapely.STRtree, geoms: np.ndarray, *, workers: int, predicate: str, distance: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``tree.query`` for every input geometry: (input positions, tree positions) of the matching pairs."""

    def run(part: slice):
        kwargs = {"distance": distance} if distance is not None else {}
        i_in, i_tree = tree.query(geoms[part], predicate=predicate, **kwargs)
        return i_in + part.start, i_tree

    parts = map_chunks(run, len(geoms), workers)
    if not parts:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def within_pairs(
    tree: shapely.STRtree, geoms: np.ndarray, reach: float, *, workers: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every (input, tree) pair within ``reach`` of each other, with its distance.

    Candidates by envelope (grown by the reach), then one exact distance per candidate: cheaper than a
    ``dwithin`` query, which computes the same distances and throws them away.
    """
    targets = tree.geometries

    def run(part: slice):
        b = shapely.bounds(geoms[part])
        i_in, i_tree = tree.query(shapely.box(b[:, 0] - reach, b[:, 1] - reach, b[:, 2] + reach, b[:, 3] + reach))
        d = shapely.distance(geoms[part][i_in], targets[i_tree])
        keep = d <= reach
        return i_in[keep] + part.start, i_tree[keep], d[keep]

    parts = map_chunks(run, len(geoms), workers)
    if not parts:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0)
    return tuple(np.concatenate([p[k] for p in parts]) for k in range(3))


def nearest_within(tree: shapely.STRtree, geoms: np.ndarray, reach: float, *, workers: int):
    """For every input, the nearest tree geometry within ``reach`` (ties: lowest position): (inputs, tree)."""
    i_in, i_tree, d = within_pairs(tree, geoms, reach, workers=workers)
    if len(i_in) == 0:
        return i_in, i_tree
    pick = np.lexsort((i_tree, d, i_in))
    first = pick[np.r_[True, i_in[pick][1:] != i_in[pick][:-1]]]
    return i_in[first], i_tree[first]


def nearest(
    tree: shapely.STRtree,
    geoms: np.ndarray,
    *,
    near: float | None,
    workers: int,
    rank: np.ndarray | None = None,
    geoms_tree: shapely.STRtree | None = None,
    ties: float | None = None,
):
    """Position of, and distance to, the nearest tree geometry for every input; -1 and NaN with an empty tree.

    With ``ties`` (a distance), also the other tree geometries within ``ties`` of each input's nearest distance,
    as (inputs, tree positions, distances): a third item. They are among the pairs measured anyway (the bounds are
    grown by ``ties``), so asking costs next to nothing.

    Of two tree geometries exactly as near, the one with the lower ``rank`` wins (default: the lower position),
    so a caller that ranks them by something the rows carry (a main's ID) gets answers that never depend on the
    order of the rows.

    Two bounded searches, each with one exact distance per candidate pair (cheaper than ``dwithin``, which
    computes the same distances and throws them away):

    1. Inputs with a tree geometry within ``near`` (most parcels of a sewered town): ``nearest_near``, with
       candidates from the tree geometries' envelopes grown by ``near``, looked up in a tree of the inputs
       (``geoms_tree``, built here when not given), so no box is made per input.
    2. The rest, far from every tree geometry: a coarse grid (``grid_neighbour``) names a tree geometry near
       each, whose exact distance bounds the search; only tree geometries whose envelopes lie within that bound
       are measured. No unbounded search is left.
    """
    n = len(geoms)
    index = np.full(n, -1, dtype=np.int64)
    distance = np.full(n, np.nan)
    targets = tree.geometries
    tied = [(np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0))]
    if n == 0 or len(targets) == 0:
        return (index, distance) if ties is None else (index, distance, tied[0])
    rank = np.arange(len(targets)) if rank is None else np.asarray(rank)
    bounds = shapely.bounds(geoms)
    located = np.isfinite(bounds).all(axis=1)
    slack = ties or 0.0
    if near is not None:
        if geoms_tree is None:
            geoms_tree = shapely.STRtree(geoms)
        rows, found, d, *more = nearest_near(geoms_tree, geoms, targets, near, located, rank, workers, ties=ties)
        index[rows], distance[rows] = found, d
        tied += more
    rest = np.flatnonzero(located & (index < 0))
    if len(rest):
        rest = rest[hilbert_order(geoms[rest])]
        guess = grid_neighbour(bounds[rest], targets, near)
        target_bounds = shapely.bounds(targets)

        def run(part: slice):
            rows = rest[part]
            b = bounds[rows]
            reach = _loosen(shapely.distance(geoms[rows], targets[guess[part]]) + slack, b)
            i_in, i_tree = tree.query(shapely.box(b[:, 0] - reach, b[:, 1] - reach, b[:, 2] + reach, b[:, 3] + reach))
            # The envelope distance is a lower bound on the distance: only targets whose envelopes lie within
            # the guess's distance (most lie in the box's corners) may be as near, and only they are measured.
            keep = envelope_gap(b[i_in], target_bounds[i_tree]) <= reach[i_in]
            i_in, i_tree = i_in[keep], i_tree[keep]
            d = shapely.distance(geoms[rows[i_in]], targets[i_tree])
            return rows[i_in], i_tree, d

        parts = map_chunks(run, len(rest), workers)
        i_in, i_tree, d = (np.concatenate([p[k] for p in parts]) for k in range(3))
        rows, pick = nearest_of_pairs(i_in, d, rank[i_tree])
        index[rows], distance[rows] = i_tree[pick], d[pick]
        if ties is not None:
            tied.append(_tied(i_in, i_tree, d, pick, index, distance, ties))
    if ties is None:
        return index, distance
    return index, distance, tuple(np.concatenate([t[k] for t in tied]) for k in range(3))


def _tied(i_in, i_t, d, pick, index, distance, ties):
    """The measured pairs other than each input's chosen one within ``ties`` of its nearest distance."""
    other = np.ones(len(i_in), dtype=bool)
    other[pick] = False
    keep = other & (d <= distance[i_in] + ties) & (i_t != index[i_in])
    return i_in[keep], i_t[keep], d[keep]


def _loosen(distance: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """A distance grown by far more than the rounding error of an envelope distance, so a bound stays a bound."""
    return distance * (1 + 1e-9) + 1e-9 * (1 + np.abs(bounds).max(axis=1))


def nearest_near(geoms_tree, geoms, targets, reach, wanted, rank, workers, *, ties=None):
    """For every input ``wanted`` says with a target within ``reach``: (input, target, distance) of its nearest;
    with ``ties``, a fourth item: the other pairs within ``ties`` of the nearest distance (see ``nearest``).

    Candidates come from the targets' envelopes grown by ``reach``. The gap between a pair's envelopes is a lower
    bound on its distance, so each input's pair with the least gap is measured first, and of its other pairs
    only those whose gap lies within that distance (grown by far more than rounding) can be as near: only they
    are measured. The answer, ties to the lowest ``rank`` included, is the one measuring every pair gives. On
    the sample town's grid this measures 0.4 pairs per candidate, on Manchester's real mains about half.
    """
    tb = shapely.bounds(targets)
    gb = shapely.bounds(geoms)
    coordinates = np.r_[gb[wanted].ravel(), tb[np.isfinite(tb).all(axis=1)].ravel(), 0.0]
    reach_bound = _loosen(np.array([reach]), coordinates[None, :])[0]

    def candidates(part: slice):
        b = tb[part]
        i_t, i_in = geoms_tree.query(shapely.box(b[:, 0] - reach, b[:, 1] - reach, b[:, 2] + reach, b[:, 3] + reach))
        keep = wanted[i_in]
        i_t, i_in = i_t[keep] + part.start, i_in[keep]
        gap = envelope_gap(gb[i_in], tb[i_t])
        keep = gap <= reach_bound
        return i_in[keep], i_t[keep], gap[keep]

    parts = map_chunks(candidates, len(targets), workers)
    if not parts:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0)
    i_in, i_t, gap = (np.concatenate([p[k] for p in parts]) for k in range(3))
    rows, first = nearest_of_pairs(i_in, gap, rank[i_t])  # each input's pair with the least envelope gap
    d_first = elementwise(shapely.distance, geoms[rows], targets[i_t[first]], workers=workers)
    bound = np.full(len(geoms), -np.inf)
    bound[rows] = _loosen(np.minimum(d_first + (ties or 0.0), reach), gb[rows])
    others = gap <= bound[i_in]
    others[first] = False
    o_in, o_t = i_in[others], i_t[others]
    d_others = elementwise(shapely.distance, geoms[o_in], targets[o_t], workers=workers)
    i_in, i_t, d = np.r_[rows, o_in], np.r_[i_t[first], o_t], np.r_[d_first, d_others]
    keep = d <= reach
    i_in, i_t, d = i_in[keep], i_t[keep], d[keep]
    rows, pick = nearest_of_pairs(i_in, d, rank[i_t])
    if ties is None:
        return rows, i_t[pick], d[pick]
    index, distance = np.full(len(geoms), -1, dtype=np.int64), np.full(len(geoms), np.nan)
    index[rows], distance[rows] = i_t[pick], d[pick]
    return rows, i_t[pick], d[pick], _tied(i_in, i_t, d, pick, index, distance, ties)


def envelope_gap(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The distance between the envelopes (``shapely.bounds`` rows) of each pair: a lower bound on theirs."""
    gap_x = np.maximum(0.0, np.maximum(b[:, 0] - a[:, 2], a[:, 0] - b[:, 2]))
    gap_y = np.maximum(0.0, np.maximum(b[:, 1] - a[:, 3], a[:, 1] - b[:, 3]))
    return np.hypot(gap_x, gap_y)


def nearest_of_pairs(i_in: np.ndarray, d: np.ndarray, rank: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each input among the pairs, the pair with the least distance, of those the lowest rank.

    Returns the inputs and the position of each one's chosen pair. One integer sort and three reductions,
    rather than a three-key sort of every pair.
    """
    if len(i_in) == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    order = np.argsort(i_in, kind="stable")
    i_sorted = i_in[order]
    starts = np.flatnonzero(np.r_[True, i_sorted[1:] != i_sorted[:-1]])
    d_sorted = d[order]
    least = np.minimum.reduceat(d_sorted, starts)
    size = np.diff(np.r_[starts, len(order)])
    best = d_sorted == np.repeat(least, size)
    r_sorted = np.where(best, rank[order], np.iinfo(np.int64).max)
    low = np.minimum.reduceat(r_sorted, starts)
    chosen = best & (r_sorted == np.repeat(low, size))
    # The first chosen pair of each input (one per input unless a pair repeats).
    first = np.flatnonzero(chosen)
    first = first[np.r_[True, i_sorted[first][1:] != i_sorted[first][:-1]]]
    return i_sorted[first], order[first]


def grid_neighbour(bounds: np.ndarray, targets: np.ndarray, near: float | None) -> np.ndarray:
    """For each input envelope (finite ``bounds``), a target near it, found on a coarse grid.

    Targets are cut into pieces no longer than a grid cell and each vertex marks its cell with its target; a
    Euclidean distance transform finds, for every cell, the nearest marked cell. The target marking the cell
    nearest an input's envelope centre is within about two cells of its nearest target, and its exact distance
    is a true upper bound on the nearest distance: the search needs look no farther.
    """
    tb = shapely.bounds(targets)
    ok = np.isfinite(tb).all(axis=1)
    x0, y0 = min(bounds[:, 0].min(), tb[ok, 0].min()), min(bounds[:, 1].min(), tb[ok, 1].min())
    x1, y1 = max(bounds[:, 2].max(), tb[ok, 2].max()), max(bounds[:, 3].max(), tb[ok, 3].max())
    span = max(x1 - x0, y1 - y0)
    cell = max(span / GRID_CELLS, (near or 0.0) / 2, 1e-6 * max(span, 1.0), 1e-9)
    cols, rows = int((x1 - x0) // cell) + 1, int((y1 - y0) // cell) + 1
    pieces = targets.copy()
    long = shapely.length(targets) > cell  # GEOS refuses to segmentize a line of zero length
    pieces[long] = shapely.segmentize(targets[long], cell)
    xy, which = shapely.get_coordinates(pieces, return_index=True)
    finite = np.isfinite(xy).all(axis=1)
    xy, which = xy[finite], which[finite]
    owner = np.full((rows, cols), -1, dtype=np.int64)
    owner[
        np.clip(((xy[:, 1] - y0) // cell).astype(np.int64), 0, rows - 1),
        np.clip(((xy[:, 0] - x0) // cell).astype(np.int64), 0, cols - 1),
    ] = which
    nearest_cell = distance_transform_edt(owner < 0, return_distances=False, return_indices=True)
    cx, cy = (bounds[:, 0] + bounds[:, 2]) / 2, (bounds[:, 1] + bounds[:, 3]) / 2
    r = np.clip(((cy - y0) // cell).astype(np.int64), 0, rows - 1)
    c = np.clip(((cx - x0) // cell).astype(np.int64), 0, cols - 1)
    return owner[nearest_cell[0][r, c], nearest_cell[1][r, c]]


def hilbert_order(geoms: np.ndarray) -> np.ndarray:
    """Positions of ``geoms`` sorted along a Hilbert curve through their bounding-box centres."""
    bounds = shapely.bounds(geoms)
    cx = (bounds[:, 0] + bounds[:, 2]) / 2
    cy = (bounds[:, 1] + bounds[:, 3]) / 2
    ok = np.isfinite(cx) & np.isfinite(cy)
    if not ok.any():
        return np.arange(len(geoms))
    x0, x1, y0, y1 = cx[ok].min(), cx[ok].max(), cy[ok].min(), cy[ok].max()
    side = (1 << 16) - 1
    xi = np.where(ok, (cx - x0) / max(x1 - x0, 1e-9) * side, 0).astype(np.int64)
    yi = np.where(ok, (cy - y0) / max(y1 - y0, 1e-9) * side, 0).astype(np.int64)
    return np.argsort(_hilbert_key(xi, yi, 16), kind="stable")


def _hilbert_key(x: np.ndarray, y: np.ndarray, bits: int) -> np.ndarray:
    """Hilbert curve index of integer grid cells (the classic xy2d, on whole arrays at once)."""
    key = np.zeros(len(x), dtype=np.int64)
    x, y = x.copy(), y.copy()
    s = 1 << (bits - 1)
    while s > 0:
        rx = (x & s) > 0
        ry = (y & s) > 0
        key += s * s * ((3 * rx) ^ ry)
        # rotate the quadrant
        flip = ~ry
        swap_x = np.where(flip & rx, s - 1 - x, x)
        swap_y = np.where(flip & rx, s - 1 - y, y)
        x = np.where(flip, swap_y, swap_x)
        y = np.where(flip, swap_x, swap_y)
        s >>= 1
    return key
