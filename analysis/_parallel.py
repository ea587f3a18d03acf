"""Chunked, threaded runs of vectorised shapely work.

Shapely 2 releases the GIL inside its vectorised functions and STRtree queries, so chunks of a large array run
in parallel on a small thread pool. Results are put back in input order; nothing here loops over features.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import numpy as np
import shapely

CHUNK = 25_000


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


def chunks(n: int, size: int = CHUNK) -> list[slice]:
    return [slice(i, min(i + size, n)) for i in range(0, n, size)]


def map_chunks(func: Callable[[slice], object], n: int, workers: int) -> list:
    """``func`` over consecutive slices of ``range(n)``, in order."""
    parts = chunks(n)
    if workers <= 1 or len(parts) <= 1:
        return [func(part) for part in parts]
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(func, parts))


def elementwise(func: Callable, *arrays: np.ndarray, workers: int, **kwargs) -> np.ndarray:
    """A vectorised shapely function (``shortest_line``, ``intersection`` ...) applied chunk by chunk."""
    n = len(arrays[0])
    if n == 0:
        return np.empty(0, dtype=object)
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
    tree: shapely.STRtree, geoms: np.ndarray, *, near: float | None, workers: int
) -> tuple[np.ndarray, np.ndarray]:
    """Position of, and distance to, the nearest tree geometry for every input; -1 and NaN with an empty tree.

    Inputs are visited in Hilbert order, so neighbouring queries touch the same tree nodes. Most parcels of a
    sewered town have a main within ``near``: they are answered by a bounded ``dwithin`` query and the
    distances of the few pairs it finds (ties go to the lower tree position); a second pass reaches ten times
    as far. Only those left are searched without a bound, so every input gets its distance.
    """
    n = len(geoms)
    index = np.full(n, -1, dtype=np.int64)
    distance = np.full(n, np.nan)
    if n == 0:
        return index, distance
    order = hilbert_order(geoms)

    def bounded(rows: np.ndarray, reach: float) -> None:
        i_in, i_tree, d = within_pairs(tree, geoms[rows], reach, workers=1)
        if len(i_in) == 0:
            return
        pick = np.lexsort((i_tree, d, i_in))
        first = pick[np.r_[True, i_in[pick][1:] != i_in[pick][:-1]]]
        index[rows[i_in[first]]] = i_tree[first]
        distance[rows[i_in[first]]] = d[first]

    def unbounded(s: slice) -> None:
        rows = rest[s]
        (i_in, i_tree), d = tree.query_nearest(geoms[rows], return_distance=True, all_matches=False)
        index[rows[i_in]] = i_tree
        distance[rows[i_in]] = d

    if near is not None:
        # Near first; then ten times as far, which still answers most of the rest faster than an unbounded search.
        for reach in (near, near * 10):
            todo = order[index[order] < 0]
            map_chunks(lambda s, todo=todo, reach=reach: bounded(todo[s], reach), len(todo), workers)
    rest = order[index[order] < 0]
    map_chunks(unbounded, len(rest), workers)
    return index, distance


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
