"""Geometries as well-known binary (ISO WKB, little-endian) in an Arrow array, for GeoParquet files.

Shapely's ``to_wkb`` makes one Python bytes object per geometry while holding Python's lock (0.3-0.5 s per
million points or lines, and as much again to gather the objects into Arrow), during which no other thread runs.
A run's connection points and measuring lines are all 2D points, or all 2D line strings of two points: each one's
WKB is the same short header and then its coordinates as they lie in memory, so the whole layer is laid out with
numpy straight into Arrow's buffers, byte for byte what GEOS writes. Any other layer (polygons, mixed kinds or
point counts, multi-part, empty or 3D geometries) goes through shapely as before: laying out geometries of
varying sizes row by row was slower than GEOS.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import shapely

_POINT, _LINESTRING = int(shapely.GeometryType.POINT), int(shapely.GeometryType.LINESTRING)
_WKB_CODE = {_POINT: 1, _LINESTRING: 2}  # their type codes in WKB


def wkb_array(geoms: np.ndarray) -> pa.Array:
    """ISO WKB of each geometry (null where missing): the bytes ``shapely.to_wkb(geoms, flavor="iso")`` gives."""
    geoms = np.asarray(geoms, dtype=object)
    kind = shapely.get_type_id(geoms)
    present = kind >= 0
    shape = _one_shape(geoms[present], kind[present])
    if shape is None:
        return pa.array(shapely.to_wkb(geoms, flavor="iso"), pa.binary())
    kind, points = shape
    header = np.array([1], "u1").tobytes() + np.array([_WKB_CODE[kind]], "<u4").tobytes()  # 1: little-endian
    if kind == _LINESTRING:
        header += np.array([points], "<u4").tobytes()
    width = len(header) + 16 * points
    rows = np.empty((int(present.sum()), width), dtype=np.uint8)
    rows[:, : len(header)] = np.frombuffer(header, dtype=np.uint8)
    xy = np.ascontiguousarray(shapely.get_coordinates(geoms[present]), dtype="<f8")
    rows[:, len(header) :] = xy.view(np.uint8).reshape(len(rows), 16 * points)
    offsets = np.zeros(len(geoms) + 1, dtype=np.int64)
    np.cumsum(np.where(present, width, 0), out=offsets[1:])  # a missing geometry takes no bytes
    binary, offsets = (pa.binary(), offsets.astype(np.int32)) if rows.size < 2**31 else (pa.large_binary(), offsets)
    validity = None if present.all() else pa.py_buffer(np.packbits(present, bitorder="little"))
    return pa.Array.from_buffers(binary, len(geoms), [validity, pa.py_buffer(offsets), pa.py_buffer(rows)])


def _one_shape(geoms: np.ndarray, kind: np.ndarray) -> tuple[int, int] | None:
    """(kind, number of points) when every geometry is a 2D point, or every one a 2D line string with the same
    number of points, none empty; None otherwise."""
    if not len(kind) or kind.min() != kind.max() or kind[0] not in _WKB_CODE:
        return None
    if (shapely.is_empty(geoms) | shapely.has_z(geoms)).any():
        return None
    points = shapely.get_num_coordinates(geoms)
    if points.min() != points.max():
        return None
    return int(kind[0]), int(points[0])
