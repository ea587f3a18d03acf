"""The nearest-main search: its distance bounds hold, and exact ties go to the lowest rank, never the row."""

from __future__ import annotations

import numpy as np
import shapely
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from analysis._parallel import grid_neighbour, nearest
from analysis.mandate import tie_rank

coord = st.floats(-5000, 5000, allow_nan=False, allow_subnormal=False)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(coord, coord, st.floats(1, 400)), min_size=1, max_size=30),
    st.lists(st.tuples(coord, coord, coord, coord), min_size=1, max_size=8),
    st.one_of(st.none(), st.floats(1, 500)),
)
def test_the_grid_names_a_main_within_two_cells_of_the_nearest(lots, pipes, near):
    parcels = shapely.box(*np.array([(x, y, x + w, y + w) for x, y, w in lots]).T)
    mains = shapely.linestrings(np.array(pipes).reshape(-1, 2, 2))
    assume((shapely.length(mains) > 1e-6).all())  # validation drops mains drawn on one spot
    bounds = shapely.bounds(parcels)
    guess = grid_neighbour(bounds, mains, near)
    true = shapely.distance(parcels[:, None], mains[None, :]).min(axis=1)
    span = max(np.ptp(np.r_[bounds[:, [0, 2]].ravel(), shapely.bounds(mains)[:, [0, 2]].ravel()]), 1.0)
    cell = max(span / 1024, (near or 0) / 2, 1.0)
    half = np.hypot(bounds[:, 2] - bounds[:, 0], bounds[:, 3] - bounds[:, 1]) / 2
    assert (shapely.distance(parcels, mains[guess]) <= true + 2 * half + 4 * cell).all()


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(coord, coord, st.floats(1, 400)), min_size=1, max_size=30),
    st.lists(st.tuples(coord, coord, coord, coord), min_size=1, max_size=6),
    st.lists(st.integers(0, 5), max_size=4),
    st.floats(1, 300),
    st.randoms(use_true_random=False),
)
def test_nearest_is_the_brute_force_answer_with_ties_to_the_lowest_rank(lots, pipes, copies, near, rnd):
    parcels = shapely.box(*np.array([(x, y, x + w, y + w) for x, y, w in lots]).T)
    mains = shapely.linestrings(np.array(pipes).reshape(-1, 2, 2))
    assume((shapely.length(mains) > 1e-6).all())  # validation drops mains drawn on one spot
    mains = np.concatenate([mains, mains[[k % len(mains) for k in copies]]])  # exact ties
    rank = np.arange(len(mains))
    rnd.shuffle(rank)
    index, distance = nearest(shapely.STRtree(mains), parcels, near=near, workers=2, rank=rank)
    brute = shapely.distance(parcels[:, None], mains[None, :])
    np.testing.assert_array_equal(distance, brute.min(axis=1))
    expected = [min(np.flatnonzero(row == row.min()), key=lambda k: rank[k]) for row in brute]
    np.testing.assert_array_equal(index, expected)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40), st.integers(1, 6), st.integers(1, 6)), max_size=25),
    st.lists(
        st.lists(st.tuples(st.integers(0, 46), st.integers(0, 46)), min_size=2, max_size=4, unique=True),
        min_size=1,
        max_size=10,
    ),
    st.integers(0, 12),
    st.randoms(use_true_random=False),
)
def test_nearest_within_reach_measures_fewer_pairs_and_keeps_the_brute_force_answer(lots, pipes, near, rnd):
    """On a grid, envelope gaps equal distances and many mains tie, some exactly at the reach: the pairs left
    unmeasured (their envelope gap beyond the first pair's distance) never hold the answer or a tie."""
    from analysis._parallel import nearest_near

    parcels = shapely.box(*np.array([(x, y, x + w, y + h) for x, y, w, h in lots] or np.empty((0, 4))).T)
    mains = np.array([shapely.LineString(p) for p in pipes], dtype=object)
    rank = np.arange(len(mains))
    rnd.shuffle(rank)
    wanted = np.array([rnd.random() < 0.9 for _ in range(len(parcels))], dtype=bool)
    rows, found, distance = nearest_near(shapely.STRtree(parcels), parcels, mains, near, wanted, rank, 2)
    brute = shapely.distance(parcels[:, None], mains[None, :]).reshape(len(parcels), len(mains))
    expected_rows = np.flatnonzero(wanted & (brute.min(axis=1, initial=np.inf) <= near))
    np.testing.assert_array_equal(rows, expected_rows)
    np.testing.assert_array_equal(distance, brute[rows].min(axis=1, initial=np.inf))
    expected = [min(np.flatnonzero(brute[r] == brute[r].min()), key=lambda k: rank[k]) for r in rows]
    np.testing.assert_array_equal(found, expected)


def test_tie_rank_reads_the_number_at_the_end_of_an_id():
    ids = np.array(["M-10", "M-9", None, "A-2", "M-09", "M-9"], dtype=object)
    geoms = shapely.points(np.arange(len(ids)), 0)
    rank = tie_rank(ids, geoms)
    assert list(np.array(ids, dtype=object)[np.argsort(rank)]) == ["A-2", "M-09", "M-9", "M-9", "M-10", None]
    # One ID twice: the geometry decides, wherever the rows stand.
    swapped = tie_rank(ids[[0, 5, 2, 3, 4, 1]], geoms[[0, 5, 2, 3, 4, 1]])
    assert (rank[1] < rank[5]) == (swapped[5] < swapped[1])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), min_size=1, max_size=40), st.data())
def test_places_hand_each_answer_to_every_point_standing_there(points, data):
    from analysis.network import _places, _spread

    xy = np.array(points, dtype=float)
    place, at = _places(xy)
    np.testing.assert_array_equal(xy[place[at]], xy)  # every point stands at its place
    assert len(np.unique(xy, axis=0)) == len(place)
    # Pairs found for places come back as the same pairs for every point there, sorted by point, stably.
    pairs = data.draw(st.lists(st.tuples(st.integers(0, len(place) - 1), st.integers(0, 9)), max_size=30))
    u_idx = np.array([p for p, _ in pairs], dtype=np.int64)
    l_idx = np.array([line for _, line in pairs], dtype=np.int64)
    got = list(zip(*_spread(u_idx, l_idx, at), strict=True))
    expected = [(p, line) for p in range(len(xy)) for u, line in zip(u_idx, l_idx, strict=True) if at[p] == u]
    assert [(int(p), int(line)) for p, line in got] == expected


def test_beside_runs_a_step_on_its_own_thread_only_with_several_workers():
    import threading

    from analysis._parallel import beside

    def where():
        return threading.get_ident()

    with beside(where, workers=2) as result:
        assert result() != threading.get_ident()
    with beside(where, workers=1) as result:
        assert result() == threading.get_ident()

    def fails():
        raise ValueError("bad buildings")

    for workers in (1, 2):
        with beside(fails, workers=workers) as result:
            try:
                result()
            except ValueError as exc:
                assert str(exc) == "bad buildings"
            else:
                raise AssertionError("the step's error was lost")


def test_a_table_shorter_than_a_chunk_per_thread_is_split_between_the_threads():
    """About 10,000 mains (a 100k-parcel town) once went to one thread as a single chunk; the slices still cover
    every row once, in order, and a small table is not cut finer than MIN_CHUNK rows."""
    from analysis._parallel import CHUNK, MIN_CHUNK, map_chunks

    for n, workers, expected in [
        (10_700, 2, 2),
        (10_700, 4, 4),
        (3 * CHUNK, 2, 3),
        (MIN_CHUNK, 2, 1),
        (MIN_CHUNK + 1, 2, 2),
        (10, 1, 1),
        (0, 2, 0),
    ]:
        parts = map_chunks(lambda s: range(s.start, s.stop), n, workers)
        assert [i for part in parts for i in part] == list(range(n))
        assert len(parts) == expected, (n, workers)
        assert all(len(part) >= min(MIN_CHUNK, n) for part in parts[:-1])
