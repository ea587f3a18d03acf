"""The street tests' fast paths agree with GEOS on random geometry."""

from __future__ import annotations

import numpy as np
import shapely
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from analysis._parallel import _hilbert_key, nearest
from analysis.streets import _length_inside, _rectangles

coord = st.floats(-500, 500, allow_nan=False, allow_subnormal=False)


@settings(max_examples=300, deadline=None)
@given(st.tuples(coord, coord, coord, coord), st.tuples(coord, coord, coord, coord), st.floats(0.5, 60))
def test_clipped_length_matches_geos_overlay(centre, main, half):
    line = shapely.linestrings([centre[:2], centre[2:]])
    pipe = shapely.linestrings([main[:2], main[2:]])
    assume(shapely.length(line) > 1e-6)
    rect = _rectangles(np.array([line]), np.array([half]), 0.0)[0]
    # A main lying exactly along the rectangle's edge is a zero-area boundary case: either answer is defensible.
    assume(shapely.length(shapely.intersection(pipe, shapely.buffer(rect.boundary, 1e-7))) < 1e-6)
    expected = shapely.length(shapely.intersection(pipe, rect))
    got = _length_inside(np.array([pipe]), np.array([line]), np.array([half]))[0]
    assert abs(got - expected) < 1e-6 * max(1.0, expected)


@settings(max_examples=100, deadline=None)
@given(st.tuples(coord, coord, coord, coord), st.floats(0.5, 60), st.one_of(st.just(0.0), st.floats(0.01, 10)))
def test_rectangles_match_a_flat_capped_buffer(centre, half, extend):
    line = shapely.linestrings([centre[:2], centre[2:]])
    assume(shapely.length(line) > 0.1)  # GEOS buffers of millimetre lines come out malformed
    rect = _rectangles(np.array([line]), np.array([half + extend]), extend)[0]  # as street_pairs grows it
    buffered = shapely.buffer(line, half, cap_style="flat")
    if extend:
        buffered = shapely.buffer(buffered, extend, join_style="mitre")
    assert rect.symmetric_difference(buffered).area < 1e-6 * buffered.area + 1e-6


def test_hilbert_key_visits_neighbours():
    grid = np.array([(x, y) for x in range(16) for y in range(16)])
    keys = _hilbert_key(grid[:, 0], grid[:, 1], 4)
    assert sorted(keys) == list(range(256))
    path = grid[np.argsort(keys)]
    assert np.abs(np.diff(path, axis=0)).sum(axis=1).max() == 1


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(coord, coord), min_size=1, max_size=40), st.floats(1, 300))
def test_nearest_matches_brute_force(points, near):
    geoms = shapely.buffer(shapely.points(np.array(points)), 3)
    mains = shapely.linestrings([[(-400, -300), (300, 200)], [(100, 400), (450, -100)], [(-50, 0), (-50, 5)]])
    index, distance = nearest(shapely.STRtree(mains), geoms, near=near, workers=2)
    brute = shapely.distance(geoms[:, None], mains[None, :])
    np.testing.assert_allclose(distance, brute.min(axis=1), atol=1e-9)
    assert (brute[np.arange(len(geoms)), index] <= brute.min(axis=1) + 1e-9).all()
