"""Geometries as well-known binary (ISO WKB, little-endian) in an Arrow array, for GeoParquet files.

Shapely's ``to_wkb`` makes one Python bytes object per geometry while holding Python's lock (0.3-0.5 s per
million points or lines, and as much again to gather the objects into Arrow), during which no other thread runs.
Most geometries of a layer are 2D points, line strings, or polygons without holes, and the WKB of each is a short
header and then its coordinates as they lie in memory. Such geometries are laid out with numpy straight into
Arrow's buffers, byte for byte what GEOS writes, a group at a time: all those of one kind and one number of
points share one layout, so each group is one array of rows of equal width. A layer whose geometries are all of
one group (a run's connection points and measuring lines; the sample town's lots) is that array as it is; else
the groups, and what is left for shapely (multi-part, holed, empty or 3D geometries), are put back in row order
with one Arrow ``take``.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import shapely

from analysis.arrays import distinct

_POINT, _LINESTRING = int(shapely.GeometryType.POINT), int(shapely.GeometryType.LINESTRING)
_POLYGON = int(shapely.GeometryType.POLYGON)
_WKB_CODE = {_POINT: 1, _LINESTRING: 2, _POLYGON: 3}  # their type codes in WKB


def wkb_array(geoms: np.ndarray) -> pa.Array:
    """ISO WKB of each geometry (null where missing): the bytes ``shapely.to_wkb(geoms, flavor="iso")`` gives."""
    geoms = np.asarray(geoms, dtype=object)
    kind = shapely.get_type_id(geoms)
    laid_out = np.isin(kind, list(_WKB_CODE))
    if laid_out.any():
        laid_out[laid_out] = ~(shapely.is_empty(geoms[laid_out]) | shapely.has_z(geoms[laid_out]))
        holed = laid_out & (kind == _POLYGON)
        laid_out[holed] = shapely.get_num_interior_rings(geoms[holed]) == 0
    points = np.zeros(len(geoms), dtype=np.int64)
    points[laid_out] = shapely.get_num_coordinates(geoms[laid_out])
    # One group per kind and number of points, as one number each (kinds are below 8).
    group = np.where(laid_out, points * 8 + kind, -1)
    keys = distinct(group[laid_out])
    if len(keys) == 1 and (laid_out | (kind < 0)).all():  # one group, and gaps
        return _rows_array(geoms, int(keys[0] % 8), int(keys[0] // 8))
    pieces, rows = [], []
    for key in keys:
        where = np.flatnonzero(group == key)
        pieces.append(_rows_array(geoms[where], int(key % 8), int(key // 8)))
        rows.append(where)
    rest = np.flatnonzero(~laid_out)  # gaps too: shapely gives them None, Arrow a null
    if len(rest):
        pieces.append(pa.array(shapely.to_wkb(geoms[rest], flavor="iso"), pa.binary()))
        rows.append(rest)
    if not pieces:  # no rows
        return pa.array([], pa.binary())
    large = sum(piece.nbytes for piece in pieces) >= 2**31
    binary = pa.large_binary() if large else pa.binary()
    whole = pa.concat_arrays([piece.cast(binary) for piece in pieces])
    inverse = np.empty(len(geoms), dtype=np.int64)
    inverse[np.concatenate(rows)] = np.arange(len(geoms))
    return pc.take(whole, pa.array(inverse))


def _rows_array(geoms: np.ndarray, kind: int, points: int) -> pa.Array:
    """The WKB of geometries all of ``kind`` with ``points`` coordinates each (2D, a polygon's one ring), as
    fixed-width rows laid out in one buffer; missing geometries are nulls of no bytes."""
    present = ~shapely.is_missing(geoms)
    return _laid_out(shapely.get_coordinates(geoms[present]), present, kind, points)


def points_wkb(xy: np.ndarray) -> pa.Array:
    """The WKB of a point at each row's x, y (null where x or y is missing): what ``wkb_array`` gives for the same
    points, without a point object made per row (a million connection points are 1-1.5 s of GEOS objects)."""
    xy = np.asarray(xy, dtype=float).reshape(-1, 2)
    present = ~np.isnan(xy).any(axis=1)
    return _laid_out(xy[present], present, _POINT, 1)


def _laid_out(xy: np.ndarray, present: np.ndarray, kind: int, points: int) -> pa.Array:
    """Fixed-width WKB rows of ``kind`` with ``points`` coordinates each, from the coordinates of the rows
    ``present`` (in order, ``points`` per row); the other rows are nulls of no bytes."""
    header = np.array([1], "u1").tobytes() + np.array([_WKB_CODE[kind]], "<u4").tobytes()  # 1: little-endian
    if kind == _POLYGON:
        header += np.array([1], "<u4").tobytes()  # one ring
    if kind in (_LINESTRING, _POLYGON):
        header += np.array([points], "<u4").tobytes()
    width = len(header) + 16 * points
    rows = np.empty((int(present.sum()), width), dtype=np.uint8)
    rows[:, : len(header)] = np.frombuffer(header, dtype=np.uint8)
    xy = np.ascontiguousarray(xy, dtype="<f8")
    rows[:, len(header) :] = xy.view(np.uint8).reshape(len(rows), 16 * points)
    offsets = np.zeros(len(present) + 1, dtype=np.int64)
    np.cumsum(np.where(present, width, 0), out=offsets[1:])  # a missing geometry takes no bytes
    binary, offsets = (pa.binary(), offsets.astype(np.int32)) if rows.size < 2**31 else (pa.large_binary(), offsets)
    validity = None if present.all() else pa.py_buffer(np.packbits(present, bitorder="little"))
    return pa.Array.from_buffers(binary, len(present), [validity, pa.py_buffer(offsets), pa.py_buffer(rows)])
