"""The store's layers, held in memory for the web map: GeoJSON by bounding box, parcel details, search.

Everything the map draws comes from here, in WGS 84 (RFC 7946 order: longitude, latitude). Large layers are
never sent whole: a bounding-box request returns the features in view, simplified to half a screen pixel at the
requested zoom; when more than ``max_features`` parcels are in view, it returns a grid of cells with the count of
parcels per status instead, which the page draws as a coarse overview until the user zooms in.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import geopandas as gpd
import numpy as np
import pandas as pd
import pyogrio
import shapely

from layers.errors import LayerError
from layers.write import LINES_LAYER, RESULT_LAYER

PARCEL_FIELDS = (
    "parcel_id",
    "status",
    "site_address",
    "owner_name",
    "distance_ft",
    "main_id",
    "rule",
    "section",
    "reason",
    "deadline",
    "control_manhole",
    "downstream_length_ft",
    "street_name_main",
)
# Further rows of the parcel popup, after its fixed ones (label, column): what the distance was measured from
# (Fort Plain's curbline), and the duties beyond connecting (grease interceptors, industrial users, subdivisions).
PARCEL_POPUP_FIELDS = (
    ("Measured from", "measured_from"),
    ("From the parcel boundary (ft)", "boundary_distance_ft"),
    ("Average flow (gpd)", "discharge_gpd"),
    ("Grease interceptor", "grease_interceptor"),
    ("Industrial user", "industrial_user"),
    ("Subdivision", "subdivision_duty"),
    ("Further duties", "duties"),
    ("Their sections", "duties_section"),
)
MAIN_FIELDS = ("main_id", "diameter_in", "sewer_type", "ownership", "status", "street_name")
INPUT_LAYERS = ("mains", "manholes", "treatment_plants", "buildings")


@dataclass
class MapData:
    """One store, loaded: layers in WGS 84 with a spatial index each, and the original layers for analysis."""

    path: str
    mtime: float
    layers: dict[str, gpd.GeoDataFrame] = field(default_factory=dict)
    trees: dict[str, shapely.STRtree] = field(default_factory=dict)
    originals: dict[str, gpd.GeoDataFrame] = field(default_factory=dict)
    max_features: int = 5000

    @classmethod
    def load(cls, path: str | Path, *, max_features: int = 5000) -> MapData:
        path = str(path)
        if not Path(path).exists():
            raise LayerError(f"The store {path} does not exist.")
        names = {str(n) for n, _ in pyogrio.list_layers(path)}
        data = cls(path, os.path.getmtime(path), max_features=max_features)
        for name in (RESULT_LAYER, LINES_LAYER, "building_results", *INPUT_LAYERS, "parcels", "streets"):
            if name in names:
                frame = gpd.read_file(path, layer=name, engine="pyogrio", use_arrow=True)
                if frame.crs is None:
                    continue
                data.originals[name] = frame
                shown = frame.to_crs(4326)
                data.layers[name] = shown
                data.trees[name] = shapely.STRtree(np.asarray(shown.geometry.values))
        return data

    @property
    def has_results(self) -> bool:
        return RESULT_LAYER in self.layers

    def bounds(self) -> tuple[float, float, float, float] | None:
        """(west, south, east, north) of the parcels, else of anything in the store."""
        for name in (RESULT_LAYER, "parcels", "mains"):
            if name in self.layers and len(self.layers[name]):
                return tuple(float(v) for v in self.layers[name].total_bounds)
        return None

    def _in_box(self, name: str, bbox: tuple[float, float, float, float]) -> np.ndarray:
        if name not in self.trees:
            return np.zeros(0, dtype=np.int64)
        return np.sort(self.trees[name].query(shapely.box(*bbox)))

    def geojson(self, name: str, bbox, zoom: float, fields: tuple[str, ...]) -> dict:
        """Features of one layer in the box, simplified to half a pixel at ``zoom``; or a grid when too many."""
        if name not in self.layers:
            return {"type": "FeatureCollection", "features": [], "layer": name, "missing": True}
        idx = self._in_box(name, bbox)
        frame = self.layers[name]
        if len(idx) > self.max_features:
            return self._grid(frame, idx, bbox, name)
        geoms = np.asarray(frame.geometry.values)[idx]
        tolerance = 180 / (256 * 2 ** max(zoom, 0)) if zoom < 18 else 0.0
        if tolerance:
            geoms = shapely.simplify(geoms, tolerance, preserve_topology=True)
        props = frame.iloc[idx][[f for f in fields if f in frame.columns]]
        return _collection(geoms, props, layer=name)

    def _grid(self, frame, idx, bbox, name) -> dict:
        cells = 48
        pts = shapely.get_coordinates(shapely.centroid(np.asarray(frame.geometry.values)[idx]))
        x = np.clip(((pts[:, 0] - bbox[0]) / max(bbox[2] - bbox[0], 1e-12) * cells).astype(int), 0, cells - 1)
        y = np.clip(((pts[:, 1] - bbox[1]) / max(bbox[3] - bbox[1], 1e-12) * cells).astype(int), 0, cells - 1)
        status = frame["status"].astype(str).to_numpy()[idx] if "status" in frame else np.full(len(idx), "parcel")
        table = pd.DataFrame({"x": x, "y": y, "status": status}).value_counts().reset_index(name="n")
        dominant = table.sort_values("n", ascending=False).drop_duplicates(["x", "y"])
        totals = table.groupby(["x", "y"])["n"].sum()
        w, h = (bbox[2] - bbox[0]) / cells, (bbox[3] - bbox[1]) / cells
        features = [
            {
                "type": "Feature",
                "properties": {"status": s, "count": int(totals[(cx, cy)])},
                "geometry": {
                    "type": "Polygon",
                    "coordinates": [
                        [
                            [bbox[0] + cx * w, bbox[1] + cy * h],
                            [bbox[0] + (cx + 1) * w, bbox[1] + cy * h],
                            [bbox[0] + (cx + 1) * w, bbox[1] + (cy + 1) * h],
                            [bbox[0] + cx * w, bbox[1] + (cy + 1) * h],
                            [bbox[0] + cx * w, bbox[1] + cy * h],
                        ]
                    ],
                },
            }
            for cx, cy, s in dominant[["x", "y", "status"]].itertuples(index=False)  # at most 48 x 48 cells
        ]
        return {
            "type": "FeatureCollection",
            "features": features,
            "layer": name,
            "aggregated": True,
            "total": int(len(idx)),
        }

    def parcel(self, parcel_id: str) -> dict | None:
        """One parcel with all its result attributes, and its measuring line, as GeoJSON features."""
        frame = self.layers.get(RESULT_LAYER)
        if frame is None:
            return None
        hit = np.flatnonzero(frame["parcel_id"].astype(str).to_numpy() == str(parcel_id))
        if not len(hit):
            return None
        row = frame.iloc[hit[:1]]
        out = {
            "parcel": _collection(np.asarray(row.geometry.values), row.drop(columns=row.geometry.name), layer="parcel")[
                "features"
            ][0]
        }
        out["rows"] = _popup_rows(out["parcel"]["properties"])
        lines = self.layers.get(LINES_LAYER)
        if lines is not None:
            line = lines[lines["parcel_id"].astype(str) == str(parcel_id)]
            if len(line):
                out["measuring_line"] = _collection(
                    np.asarray(line.geometry.values), line[["distance_ft", "main_id"]], layer="line"
                )["features"][0]
        return out

    def search(self, query: str, limit: int = 20) -> list[dict]:
        """Parcels whose ID, site address or owner contains the query (case-insensitive), with their bounds."""
        frame = self.layers.get(RESULT_LAYER) if self.has_results else self.layers.get("parcels")
        q = query.strip().lower()
        if frame is None or not q:
            return []
        hit = np.zeros(len(frame), dtype=bool)
        for name in ("parcel_id", "site_address", "owner_name"):
            if name in frame.columns:
                hit |= frame[name].astype(str).str.lower().str.contains(q, regex=False).fillna(False).to_numpy()
        rows = frame[hit].head(limit)
        bounds = shapely.bounds(np.asarray(rows.geometry.values))
        return [
            {
                "parcel_id": str(r.parcel_id),
                "site_address": _text(getattr(r, "site_address", None)),
                "owner_name": _text(getattr(r, "owner_name", None)),
                "bbox": [float(v) for v in b],
            }
            for r, b in zip(rows.itertuples(), bounds, strict=True)
        ]

    def features_by_id(self, name: str, column: str, ids: list[str], fields: tuple[str, ...]) -> dict:
        frame = self.layers.get(name)
        if frame is None:
            return {"type": "FeatureCollection", "features": []}
        rows = frame[frame[column].astype(str).isin([str(i) for i in ids])]
        return _collection(np.asarray(rows.geometry.values), rows[[f for f in fields if f in rows.columns]], layer=name)

    def selection(self, bbox=None) -> gpd.GeoDataFrame:
        """Parcel results (in the store's CRS) for download: all, or those in a WGS 84 box."""
        frame = self.originals.get(RESULT_LAYER)
        if frame is None:
            raise LayerError("No analysis results in the store yet.")
        if bbox is None:
            return frame
        return frame.iloc[self._in_box(RESULT_LAYER, bbox)]


def _popup_rows(props: dict) -> list[list[str]]:
    """The popup's further rows with a value, as [label, text]; the boundary distance only where it differs."""
    rows = []
    for label, column in PARCEL_POPUP_FIELDS:
        value = props.get(column)
        if value is None or value == "":
            continue
        if column == "boundary_distance_ft" and props.get("measured_from") in (None, "parcel boundary"):
            continue
        rows.append([label, f"{value:,.1f}" if isinstance(value, float) else str(value)])
    return rows


def _text(value) -> str | None:
    return None if value is None or (isinstance(value, float) and np.isnan(value)) else str(value)


def _collection(geoms: np.ndarray, props: pd.DataFrame, *, layer: str) -> dict:
    """A GeoJSON FeatureCollection (coordinates rounded to 7 decimals, about 1 cm) from geometries and columns."""
    import json

    rounded = shapely.set_precision(geoms, 1e-7) if len(geoms) else geoms
    geo = [json.loads(g) if g else None for g in shapely.to_geojson(rounded)] if len(geoms) else []
    clean = props.astype(object).where(props.notna(), None)
    records = clean.to_dict("records")
    for r in records:
        for k, v in r.items():
            if isinstance(v, np.generic):
                r[k] = v.item()
    return {
        "type": "FeatureCollection",
        "layer": layer,
        "features": [{"type": "Feature", "properties": p, "geometry": g} for p, g in zip(records, geo, strict=True)],
    }
