"""``analysis.arrays``: ``distinct`` gives ``np.unique``'s answer, the same values in the same type, whatever the ints;
``joined_runs`` gives a per-group join's answer."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from analysis.arrays import distinct, joined_runs

_INTS = st.sampled_from([np.bool_, np.int8, np.uint8, np.int32, np.int64, np.uint64])


@given(hnp.arrays(_INTS, st.integers(0, 300)))
def test_distinct_is_np_unique_for_integers_of_every_kind(values):
    found, expected = distinct(values), np.unique(values)
    assert found.dtype == expected.dtype
    assert np.array_equal(found, expected)


def test_distinct_counts_a_narrow_span_and_sorts_a_wide_one():
    """Both ways are taken (a span beyond the count's limit goes to the sort), and other types go to np.unique."""
    narrow = np.array([7, -3, 7, 1000, -3])
    wide = np.array([2**61, -(2**61), 5, 5])
    assert distinct(narrow).tolist() == [-3, 7, 1000]
    assert distinct(wide).tolist() == [-(2**61), 5, 2**61]
    assert distinct(np.array([2.5, np.nan, 2.5, np.nan])).tolist()[:1] == [2.5]
    assert distinct(np.array(["b", "a", "b"])).tolist() == ["a", "b"]


@given(
    st.lists(
        st.tuples(st.integers(0, 5), st.text(alphabet="ab ,\u00e9", max_size=4)),
        max_size=40,
    )
)
def test_joined_runs_is_pandas_groupby_join(rows):
    """Each text gets its whole run joined, in order, as a per-group ``str.join`` gives it (runs kept consecutive)."""
    rows = sorted(rows, key=lambda r: r[0])
    run = np.array([r[0] for r in rows], dtype=np.int64)
    texts = np.array([r[1] for r in rows], dtype=object)
    expected = pd.Series(texts, dtype=object).groupby(run).transform(", ".join).tolist() if rows else []
    assert joined_runs(texts, run, ", ").tolist() == expected
