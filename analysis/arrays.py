"""Small numpy helpers for the whole-town arrays the analysis and the layers pass around.

``np.unique`` in numpy 2.3 and later finds the distinct values of a plain call by hashing them, which costs
0.1 s for a million values of a few kinds and 0.7 s for a million different ones (a main per row, a node per
end), against 0.005-0.02 s for a count or a sort. ``distinct`` gives the same sorted answer those ways.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

# A count per possible value is used while the values span at most this many times their number (plus a little):
# the counts then take about as much memory as the values, and a sort is not needed.
_SPAN_PER_VALUE = 4


def distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values of a 1-D array, sorted: ``np.unique(values)`` for integers and booleans, by a count
    where their span is small and by a sort where not. Any other type is given to ``np.unique`` as it is."""
    values = np.asarray(values)
    if values.ndim != 1 or values.dtype.kind not in "biu" or len(values) == 0:
        return np.unique(values)
    low, high = int(values.min()), int(values.max())
    if high < 2**62 and high - low <= _SPAN_PER_VALUE * len(values) + 1024:
        counts = np.bincount((values.astype(np.int64) - low) if low else values.astype(np.int64))
        return (np.flatnonzero(counts) + low).astype(values.dtype)
    ordered = np.sort(values)
    return ordered[np.r_[True, ordered[1:] != ordered[:-1]]]


def joined_runs(texts: np.ndarray, run: np.ndarray, separator: str) -> np.ndarray:
    """For texts grouped in runs (``run``: each text's group, equal values consecutive), each text's whole run
    joined by ``separator``, in order: ``pd.Series(texts).groupby(run).transform(separator.join)`` without a
    Python call per group (40,000 rear buildings' groups took 5 s at a million parcels)."""
    texts, run = np.asarray(texts, dtype=object), np.asarray(run)
    if len(texts) == 0:
        return texts
    heads = np.flatnonzero(np.r_[True, run[1:] != run[:-1]])
    lists = pa.ListArray.from_arrays(pa.array(np.r_[heads, len(texts)], pa.int32()), pa.array(texts, pa.string()))
    joined = pc.binary_join(lists, separator).to_numpy(zero_copy_only=False)
    return joined[np.repeat(np.arange(len(heads)), np.diff(np.r_[heads, len(texts)]))]
