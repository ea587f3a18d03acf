"""Geometry validity, GEOS's answer, with the plain polygons proved valid in numpy first.

GEOS's validity check (``shapely.is_valid``) was the costliest check of reading a large layer: about 1.6 CPU
seconds for a million parcels and as much for a million buildings. Most parcels and building footprints are
convex polygons without holes, and such a polygon is valid exactly when its corners all turn the same way and its
edges go round once. That is proved here in numpy with orientation tests whose sign is certain (Shewchuk's
error bound for the floating-point determinant); every polygon not so proved, because it is concave, has holes,
is a multipolygon, or a turn is too nearly straight for the sign to be certain, is asked of GEOS. The answers are
GEOS's own for every geometry: the proof only ever says "valid" where GEOS would.
"""

from __future__ import annotations

import numpy as np
import shapely

from analysis._parallel import elementwise
from analysis.arrays import distinct

# Shewchuk's bound on the error of a 2D orientation determinant computed in doubles ("Adaptive Precision
# Floating-Point Arithmetic and Fast Robust Geometric Predicates", 1997: ccwerrboundA): where the determinant's
# magnitude exceeds this times the sum of its two products' magnitudes, its sign is the exact one.
_EPSILON = 2.0**-53
_ORIENTATION_BOUND = (3.0 + 16.0 * _EPSILON) * _EPSILON
_POLYGON = int(shapely.GeometryType.POLYGON)


def is_valid(geoms: np.ndarray, *, workers: int) -> np.ndarray:
    """``shapely.is_valid`` of every geometry (False where missing), in chunks on ``workers`` threads."""
    return elementwise(_valid_part, np.asarray(geoms, dtype=object), workers=workers).astype(bool)


def _valid_part(geoms: np.ndarray) -> np.ndarray:
    valid = proved_valid(geoms)
    rest = ~valid
    if rest.any():
        valid[rest] = shapely.is_valid(geoms[rest])
    return valid


def proved_valid(geoms: np.ndarray) -> np.ndarray:
    """True where a geometry is a polygon without holes whose ring is strictly convex and goes round once: valid
    as GEOS judges validity. False says only "not proved" (GEOS decides those).

    A ring whose every corner turns strictly the same way and whose edges turn through one full circle is a
    convex polygon, so it does not touch or cross itself, has three or more distinct corners and finite
    coordinates. A corner's turn is the sign of its orientation determinant, taken only where the rounding of
    the determinant cannot have changed it. One full circle: along such a ring, the edges' direction in x
    changes sign exactly twice (a pentagram, twice round, changes four times).

    >>> from shapely.geometry import Polygon, box
    >>> star = Polygon([(0, 10), (6, -8), (-9, 3), (9, 3), (-6, -8)])
    >>> proved_valid(np.array([box(0, 0, 50, 80), star, Polygon([(0, 0), (2, 2), (2, 0), (0, 2)])]))
    array([ True, False, False])
    """
    geoms = np.asarray(geoms, dtype=object)
    proved = np.zeros(len(geoms), dtype=bool)
    candidate = np.flatnonzero((shapely.get_type_id(geoms) == _POLYGON) & (shapely.get_num_interior_rings(geoms) == 0))
    # The ring's coordinates, its first repeated at the end: a triangle or more (empty rings are GEOS's to judge).
    closed_count = shapely.get_num_coordinates(geoms[candidate])
    for count in distinct(closed_count[closed_count >= 4]):  # rings of one size at a time
        rows = candidate[closed_count == count]
        proved[rows] = _convex_once(shapely.get_coordinates(geoms[rows]).reshape(len(rows), count, 2))
    return proved


def _convex_once(xy: np.ndarray) -> np.ndarray:
    """For closed rings of one size, as a (rings, coordinates, 2) array: every corner turns strictly the same
    way, and the edges' x direction changes sign exactly twice round the ring.

    A loop over the corners of a ring (a handful), each step on all the rings at once.
    """
    corners = xy.shape[1] - 1  # the last coordinate repeats the first
    left = np.ones(len(xy), dtype=bool)
    right = np.ones(len(xy), dtype=bool)
    changes = np.zeros(len(xy), dtype=np.int64)
    # The sign of each edge's x step, exact for doubles. Where an edge is vertical it keeps the sign of the edge
    # before it: along a ring that turns one way, two vertical edges never follow each other (their corner would
    # be straight, and so not proved). The last edge's sign starts the count round the ring.
    step = _x_step(xy, corners - 1)
    step = np.where(step != 0, step, _x_step(xy, corners - 2))
    for k in range(corners):
        turn = _certain_turn(xy[:, k - 1 if k else corners - 1], xy[:, k], xy[:, k + 1])
        left &= turn == 1
        right &= turn == -1
        now = _x_step(xy, k)
        now = np.where(now != 0, now, step)
        changes += now != step
        step = now
    return (left | right) & (changes == 2)


def _x_step(xy: np.ndarray, edge: int) -> np.ndarray:
    """-1, 0 or +1: the sign of the x step along each ring's edge from coordinate ``edge`` to the next."""
    dx = xy[:, edge + 1, 0] - xy[:, edge, 0]
    return (dx > 0).astype(np.int8) - (dx < 0)


def _certain_turn(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """+1 where points a, b, c (each an (n, 2) array) turn left, -1 where right, 0 where straight or where
    rounding leaves the sign uncertain (and where a coordinate is not finite)."""
    with np.errstate(invalid="ignore", over="ignore"):  # NaN and infinite coordinates: not certain
        left = (a[:, 0] - c[:, 0]) * (b[:, 1] - c[:, 1])
        right = (a[:, 1] - c[:, 1]) * (b[:, 0] - c[:, 0])
        det = left - right
        certain = np.abs(det) > _ORIENTATION_BOUND * (np.abs(left) + np.abs(right))
    return np.where(certain, np.sign(det), 0).astype(np.int8)
