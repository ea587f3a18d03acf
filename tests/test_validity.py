"""Geometry validity: convex polygons proved valid in numpy, everything else GEOS's; the answers always GEOS's."""

from __future__ import annotations

import numpy as np
import pytest
import shapely
from shapely.geometry import LineString, MultiPolygon, Point, Polygon, box

from layers.validity import is_valid, proved_valid

STAR = Polygon([(0, 10), (6, -8), (-9, 3), (9, 3), (-6, -8)])  # every corner turns the same way, twice round
BOWTIE = Polygon([(0, 0), (2, 2), (2, 0), (0, 2)])
L_SHAPE = Polygon([(0, 0), (30, 0), (30, 10), (10, 10), (10, 40), (0, 40)])  # concave, valid
STRAIGHT = Polygon([(0, 0), (1, 0), (2, 0), (0, 0)])  # all on one line
SPIKE = Polygon([(0, 0), (10, 0), (10, 10), (10, 20), (10, 10), (0, 10)])  # folds back on itself
REPEATED = Polygon([(0, 0), (10, 0), (10, 0), (10, 10), (0, 10)])  # a repeated corner: valid, not proved
HOLED = box(0, 0, 10, 10).difference(box(2, 2, 3, 3))


def test_convex_polygons_are_proved_and_the_rest_left_to_geos():
    geoms = np.array(
        [box(0, 0, 50, 80), Polygon([(0, 0), (4, 0), (0, 3)]), STAR, BOWTIE, L_SHAPE, STRAIGHT, SPIKE, REPEATED, HOLED],
        dtype=object,
    )
    assert proved_valid(geoms).tolist() == [True, True, False, False, False, False, False, False, False]
    assert is_valid(geoms, workers=2).tolist() == shapely.is_valid(geoms).tolist()
    assert shapely.is_valid(geoms).tolist() == [True, True, False, False, True, False, False, True, True]


def test_odd_inputs_get_geos_answer():
    with np.errstate(invalid="ignore"):
        odd = np.array(
            [
                None,
                Polygon(),
                Polygon([(0, 0), (np.nan, 0), (1, 1), (0, 0)]),
                Polygon([(0, 0), (np.inf, 0), (1, 1), (0, 0)]),
                Polygon([(0, 0, 1), (1, 0, 2), (1, 1, 3), (0, 0, 1)]),
                MultiPolygon([box(0, 0, 1, 1), box(2, 2, 3, 3)]),
                MultiPolygon([box(0, 0, 2, 2), box(1, 1, 3, 3)]),  # overlapping parts
                LineString([(0, 0), (1, 1)]),
                Point(0, 0),
            ],
            dtype=object,
        )
    assert proved_valid(odd).tolist() == [False, False, False, False, True, False, False, False, False]
    assert is_valid(odd, workers=1).tolist() == shapely.is_valid(odd).tolist()
    assert is_valid(odd[:0], workers=2).dtype == bool


@pytest.mark.parametrize("corners", [3, 4, 5, 7, 12])
@pytest.mark.parametrize("scale", [1.0, 1e6])
def test_random_rings_never_proved_where_geos_says_invalid(corners, scale):
    """Rings round a circle, some with their corners shuffled (crossing), some with a corner on or a hair's
    breadth beside the line of its neighbours, some with a corner repeated, some twice round."""
    rng = np.random.default_rng(corners * 7 + int(scale))
    m = 6000
    angle = np.sort(rng.uniform(0, 2 * np.pi, (m, corners)), axis=1)
    shuffled = rng.random(m) < 0.3
    angle[shuffled] = rng.permuted(angle[shuffled], axis=1)
    points = np.stack([np.cos(angle), np.sin(angle)], axis=2) * scale + rng.uniform(-1e6, 1e6, (m, 1, 2))
    on_line = rng.random(m) < 0.3
    t = rng.random((int(on_line.sum()), 1))
    hair = rng.choice([0.0, 1e-12, 1e-9, 1e-6], size=(int(on_line.sum()), 1)) * scale
    points[on_line, 1] = points[on_line, 0] + t * (points[on_line, 2] - points[on_line, 0]) + hair
    repeated = rng.random(m) < 0.05
    points[repeated, 1] = points[repeated, 0]
    if corners >= 5:
        twice = rng.random(m) < 0.1
        round_twice = np.linspace(0, 4 * np.pi, corners, endpoint=False)
        points[twice] = np.stack([np.cos(round_twice), np.sin(round_twice)], axis=1) * scale
    rings = shapely.polygons(points)
    geos = shapely.is_valid(rings)
    proved = proved_valid(rings)
    assert not (proved & ~geos).any()
    assert (is_valid(rings, workers=2) == geos).all()
    assert proved.sum() > m // 3  # the proof did work here


def test_a_corner_too_nearly_straight_for_doubles_is_left_to_geos():
    """Triangles whose three corners lie exactly on one line (so GEOS finds them invalid), one corner far out:
    subtracting it rounds, and the plain double determinant then calls many of them bent. None may be proved."""
    rng = np.random.default_rng(0)
    m = 5000
    rise, run = rng.integers(1, 50, (2, m)).astype(float)
    near, further = rng.integers(1, 1000, (2, m)).astype(float)
    far = 2.0 ** rng.integers(54, 62, m)
    corners = np.stack(
        [np.stack([near * run, near * rise], 1), np.stack([(near + further) * run, (near + further) * rise], 1)]
        + [np.stack([far * run, far * rise], 1)],
        axis=1,
    )
    triangles = shapely.polygons(corners)
    assert not shapely.is_valid(triangles).any()
    assert not proved_valid(triangles).any()
    assert not is_valid(triangles, workers=1).any()
