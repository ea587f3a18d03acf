"""The store's layers, held in memory for the web map: GeoJSON by bounding box, parcel and building details, search.

Everything the map draws comes from here, in WGS 84 (RFC 7946 order: longitude, latitude). Large layers are
never sent whole: a bounding-box request returns the features in view, simplified to half a screen pixel at the
requested zoom; when more than ``max_features`` parcels are in view, it returns a grid of cells with the count of
parcels per status instead, which the page draws as a coarse overview until the user zooms in.

What can be prepared once per version of the store is prepared once, so a request only picks and joins text:

- each feature's map properties as JSON text (made for the whole layer when the store is loaded);
- each feature's geometry as GeoJSON text per zoom band (simplified to half a pixel of that band, coordinates
  rounded to 7 decimals, about 1 cm), made the first time a feature is asked for at that band and then kept;
- the parcels' centroids and status codes for the grid overview, the status counts and the mandated parcels for
  the summary page, and the search text (IDs, owners, and addresses with street suffixes abbreviated).

It serves only the web app (``gisapp.state.map_data`` keeps one per store version); reading and writing stores is
``layers/``'s, the analysis ``analysis/``'s.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import geopandas as gpd
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import shapely

from analysis.errors import Fix
from analysis.profiles import bracketed
from analysis.reasons import feet_text
from gisapp.words import DEFAULT_DATE_FORMAT, number, reason_without_deadline, town_date
from layers.errors import LayerError, NotFoundError
from layers.store import latest_run, open_store
from layers.write import BUILDINGS_LAYER, LINES_LAYER, RESULT_LAYER

# The parcels' map properties: what the page colours, labels, lists in its table and filters on.
PARCEL_FIELDS = (
    "parcel_id",
    "status",
    "site_address",
    "owner_name",
    "distance_ft",
    "distance_text",  # the distance as the popup and the reason word it ("30.0 ft", "99.96 ft" within 100 ft)
    "main_id",
    "rule",
    "section",
    "reason",
    "deadline",
    "deadline_text",  # the deadline in the town's date format, as the table and the popup show it
    "control_manhole",
    "downstream_length_ft",
    "street_name_main",
)
# Further rows of the parcel popup, after its fixed ones (label, column): what the distance was measured from
# (Fort Plain's curbline), and the duties beyond connecting (grease interceptors, industrial users, subdivisions).
PARCEL_POPUP_FIELDS = (
    ("Measured from", "measured_from"),
    ("From the parcel boundary", "boundary_distance_ft"),
    ("Average flow", "discharge_gpd"),
    ("Grease interceptor", "grease_interceptor"),
    ("Industrial user", "industrial_user"),
    ("Subdivision", "subdivision_duty"),
    ("Further duties", "duties"),
    ("Their sections", "duties_section"),
)
# The unit each measured popup row is written with ("1,500 gallons per day", not "1,500.0").
POPUP_UNITS = {"boundary_distance_ft": "ft", "discharge_gpd": "gallons per day"}
MAIN_FIELDS = ("main_id", "diameter_in", "sewer_type", "ownership", "status", "street_name")
BUILDING_FIELDS = (
    "building_id",
    "parcel_id",
    "units",
    "rear_building",
    "shared_lateral",
    "required_laterals",
    "lateral_shortfall",
    "manhole_connection_case",
    "lateral_below_standard",
    "reason",
)
# ``cited``: the section worded for the label's brackets ("(§ 144-21; section number derived)"), never nested.
SUBDIVISION_FIELDS = (
    "subdivision_id",
    "subdivision_name",
    "sewer_duty",
    "section",
    "cited",
    "reason",
    "acres_per_unit",
)
# The map's layers: (the store layers that can hold it, first found wins; the properties sent with each feature).
# Parcels before any analysis are drawn from the parcels layer with the status "not_analysed".
MAP_LAYERS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "parcels": ((RESULT_LAYER, "parcels"), PARCEL_FIELDS),
    "mains": (("mains",), MAIN_FIELDS),
    "manholes": (("manholes",), ("manhole_id", "structure", "invert_ft")),
    "plants": (("treatment_plants", "outfalls"), ("plant_id", "outfall_id", "name", "outfall_name")),
    "buildings": ((BUILDINGS_LAYER, "buildings"), BUILDING_FIELDS),
    "streets": (("streets",), ("street_name",)),
    "subdivisions": (("subdivisions",), SUBDIVISION_FIELDS),
}
NOT_ANALYSED = "not_analysed"
STORE_LAYERS = (RESULT_LAYER, LINES_LAYER, BUILDINGS_LAYER, "parcels", "buildings", "mains", "manholes")
STORE_LAYERS += ("treatment_plants", "outfalls", "streets", "subdivisions")
GRID_CELLS = 48
# Bands of zoom whose features share one simplification; from band 18 on, geometries are sent as drawn.
MIN_BAND, FULL_BAND = 10, 18
# USPS street suffixes and directions (Publication 28, Appendix C1), so "Main Street" finds "Main St".
STREET_WORDS = {
    "street": "st",
    "avenue": "ave",
    "av": "ave",
    "road": "rd",
    "drive": "dr",
    "lane": "ln",
    "boulevard": "blvd",
    "court": "ct",
    "place": "pl",
    "terrace": "ter",
    "circle": "cir",
    "highway": "hwy",
    "parkway": "pkwy",
    "route": "rte",
    "square": "sq",
    "trail": "trl",
    "turnpike": "tpke",
    "extension": "ext",
    "heights": "hts",
    "alley": "aly",
    "point": "pt",
    "crossing": "xing",
    "center": "ctr",
    "mount": "mt",
    "saint": "st",
    "north": "n",
    "south": "s",
    "east": "e",
    "west": "w",
}
# Letters and digits of any script (not the underscore): "Łódź" was read as the one word "d", so it found the
# wrong owners, and "张伟" none (a tester).
_WORD = re.compile(r"[^\W_]+")
# Letters that carry no accent to strip but are written without it by whoever types a search: "lodz" finds Łódź.
_PLAIN_LETTERS = str.maketrans({"ł": "l", "ø": "o", "đ": "d", "ß": "ss", "æ": "ae", "œ": "oe", "ı": "i", "þ": "th"})


def search_text(values: pd.Series) -> pd.Series:
    """Text as search compares it: lower case, accents dropped, punctuation as spaces, street suffixes and
    directions abbreviated.

    Examples
    --------
    >>> search_text(pd.Series(["12 Main Street", "4 N. Church Av.", None])).tolist()
    [' 12 main st ', ' 4 n church ave ', ' ']
    >>> search_text(pd.Series(["ŁÓDŹ Anna", "Müller-García", "张伟"])).tolist()
    [' lodz anna ', ' muller garcia ', ' 张伟 ']
    """
    text = values.fillna("").astype(str).str.lower().str.translate(_PLAIN_LETTERS).str.normalize("NFKD")
    words = text.str.replace(r"[\u0300-\u036f]", "", regex=True).str.findall(_WORD)
    return words.map(lambda ws: " " + " ".join(STREET_WORDS.get(w, w) for w in ws) + " ")


@dataclass
class ServedLayer:
    """One layer as the map serves it: WGS 84 geometries, their index, their properties as JSON text."""

    name: str
    frame: gpd.GeoDataFrame
    geoms: np.ndarray
    tree: shapely.STRtree
    props: np.ndarray
    bands: dict[int, np.ndarray] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def of(cls, name: str, frame: gpd.GeoDataFrame, fields: tuple[str, ...]) -> ServedLayer:
        geoms = np.asarray(frame.geometry.values)
        return cls(name, frame, geoms, shapely.STRtree(geoms), _json_rows(frame, fields))

    def __len__(self) -> int:
        return len(self.geoms)

    def in_box(self, bbox: tuple[float, float, float, float]) -> np.ndarray:
        return np.sort(self.tree.query(shapely.box(*bbox)))

    def geometry_json(self, idx: np.ndarray, band: int) -> np.ndarray:
        """The features' geometries as GeoJSON text at a zoom band, made once per feature and band."""
        with self.lock:
            cache = self.bands.get(band)
            if cache is None:
                cache = self.bands[band] = np.full(len(self.geoms), None, dtype=object)
        todo = idx[pd.isna(cache[idx])]
        if len(todo):
            geoms = self.geoms[todo]
            if band < FULL_BAND:
                geoms = shapely.simplify(geoms, 180 / (256 * 2**band), preserve_topology=True)
            cache[todo] = shapely.to_geojson(_rounded(geoms))
        return cache[idx]


def _rounded(geoms: np.ndarray) -> np.ndarray:
    """Coordinates rounded to 7 decimals of a degree (about 1 cm): smaller answers, no change a map shows."""
    return shapely.transform(geoms, lambda xy: np.round(xy, 7)) if len(geoms) else geoms


def _json_rows(frame: pd.DataFrame, fields: tuple[str, ...]) -> np.ndarray:
    """Each row's ``fields`` (those the frame has) as one JSON object text, for the whole frame at once."""
    present = [f for f in fields if f in frame.columns]
    if not len(frame):
        return np.zeros(0, dtype=object)
    if not present:
        return np.full(len(frame), "{}", dtype=object)
    table = pd.DataFrame(frame[present]).reset_index(drop=True)
    text = table.to_json(orient="records", lines=True, force_ascii=False, date_format="iso")
    return np.array(text.rstrip("\n").split("\n"), dtype=object)


def _feature_texts(props: np.ndarray, geoms: np.ndarray) -> str:
    """Features as GeoJSON text from property and geometry texts (at most ``max_features`` of them)."""
    return ",".join(
        f'{{"type":"Feature","properties":{p},"geometry":{g or "null"}}}' for p, g in zip(props, geoms, strict=True)
    )


def _band(zoom: float) -> int:
    return int(np.clip(np.floor(zoom), MIN_BAND, FULL_BAND))


class NoDataYetError(NotFoundError):
    """The store does not exist yet: a new town's server (``sewerplan serve`` on a store not made yet) before its
    data is first published on the Data page. A page says so with a link to the Data page; the JSON API answers 404.
    """

    def __init__(self, store_name: str):
        super().__init__(f"No data is loaded yet: the store {store_name} does not exist yet.", fix=Fix("layer"))


@dataclass
class MapData:
    """One store, loaded: layers in WGS 84 with a spatial index each, and the original layers for analysis."""

    path: str
    mtime: float
    layers: dict[str, gpd.GeoDataFrame] = field(default_factory=dict)
    trees: dict[str, shapely.STRtree] = field(default_factory=dict)
    originals: dict[str, gpd.GeoDataFrame] = field(default_factory=dict)
    max_features: int = 5000
    served: dict[str, ServedLayer] = field(default_factory=dict)
    cache: dict[str, object] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def load(cls, path: str | Path, *, max_features: int = 5000, date_format: str = DEFAULT_DATE_FORMAT) -> MapData:
        """A store's layers for the map, read through the store (a GeoPackage file, or a PostGIS schema read from
        one snapshot of the database), each in WGS 84 with its tree, and the layers the map serves.

        Dates are sent as ISO text ("2027-05-30") whatever field type the store gives them: a store holding the
        deadline as a date field sent a count of milliseconds. The parcels' ``deadline_text`` is the deadline in the
        town's ``date_format``: the page shows the server's words and formats no date itself. Their
        ``distance_text`` is the distance as the popup words it (``feet_words``): the table said "30" and "100.0"
        beside a popup saying "30.0 ft" and "99.96 ft"."""
        path = str(path)
        store = open_store(path)
        if not store.exists():
            raise NoDataYetError(store.short_name)
        data = cls(path, store.version(), max_features=max_features)
        for name, frame in store.read_layers(STORE_LAYERS).items():
            if frame.crs is None:
                continue
            data.originals[name] = frame
            shown = _dates_as_text(frame.to_crs(4326))
            data.layers[name] = shown
            data.trees[name] = shapely.STRtree(np.asarray(shown.geometry.values))
        for kind, (candidates, fields) in MAP_LAYERS.items():
            name = next((n for n in candidates if n in data.layers), None)
            if name is None or kind == "subdivisions":  # subdivisions are served with their verdicts
                continue
            frame = data.layers[name]
            if kind == "parcels" and name != RESULT_LAYER:
                frame = frame.assign(status=NOT_ANALYSED)
            if kind == "parcels" and "deadline" in frame.columns:
                frame = frame.assign(deadline_text=_worded_dates(frame["deadline"], date_format))
            if kind == "parcels" and "distance_ft" in frame.columns:
                threshold = (data.run() or {}).get("distance_ft")
                frame = frame.assign(distance_text=feet_words(frame["distance_ft"], threshold))
            data.served[kind] = ServedLayer.of(name, frame, fields)
        return data

    def run(self) -> dict | None:
        """The store's latest run record (read once per store version)."""
        if "run" not in self.cache:
            self.cache["run"] = latest_run(self.path)
        return self.cache["run"]

    @property
    def has_results(self) -> bool:
        return RESULT_LAYER in self.layers

    @property
    def parcels_name(self) -> str | None:
        """The store layer the map's parcels come from: the results, else the parcels as uploaded."""
        return RESULT_LAYER if self.has_results else ("parcels" if "parcels" in self.layers else None)

    def layer_kinds(self) -> list[str]:
        """The map's layers this store holds with at least one feature, in ``MAP_LAYERS``' order ("parcels",
        "mains", ...): the only ones the layer switcher and the legend offer. A store of parcels and mains alone had
        "Buildings", "Streets" and "Treatment plant" offered, and the legend's building symbols, for layers it has
        not. Subdivisions count from the store's layer, as they are served with their verdicts once asked for."""
        subdivisions = self.originals.get("subdivisions")
        return [
            kind
            for kind in MAP_LAYERS
            if (kind in self.served and len(self.served[kind]) > 0)
            or (kind == "subdivisions" and subdivisions is not None and len(subdivisions) > 0)
        ]

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

    # -- the map's layers -------------------------------------------------------------------------------------------

    def serve_subdivisions(self, assess: Callable[[], gpd.GeoDataFrame | None]) -> None:
        """Serve the subdivisions with their verdicts, assessed once per store version by ``assess``."""
        with self.lock:
            if "subdivisions" in self.served or "subdivisions" not in self.originals:
                return
        frame = assess()
        if frame is None:
            return
        cited = [bracketed(str(s)) if isinstance(s, str) and s else "" for s in frame["section"]]
        layer = ServedLayer.of("subdivisions", frame.to_crs(4326).assign(cited=cited), SUBDIVISION_FIELDS)
        with self.lock:
            self.served.setdefault("subdivisions", layer)

    def features(self, kind: str, bbox: tuple[float, float, float, float], zoom: float) -> str:
        """A layer's features in the box as GeoJSON text, simplified for ``zoom``; a grid when there are too many."""
        layer = self.served.get(kind)
        if layer is None:
            return json.dumps({"type": "FeatureCollection", "features": [], "layer": kind, "missing": True})
        idx = layer.in_box(bbox)
        if len(idx) > self.max_features:
            return json.dumps(self._grid(layer, idx, bbox, kind))
        body = _feature_texts(layer.props[idx], layer.geometry_json(idx, _band(zoom)))
        return f'{{"type":"FeatureCollection","layer":"{kind}","features":[{body}]}}'

    def _grid_points(self, layer: ServedLayer) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The parcels' centroids and status codes, and the statuses the codes stand for (made once)."""
        key = f"grid:{layer.name}"
        found = self.cache.get(key)
        if found is None:
            points = shapely.get_coordinates(shapely.centroid(layer.geoms))
            frame = layer.frame
            status = frame["status"].astype(str) if "status" in frame else pd.Series("parcel", index=frame.index)
            codes, names = pd.factorize(status.to_numpy())
            found = self.cache[key] = (points, codes.astype(np.int64), np.asarray(names, dtype=object))
        return found

    def _grid(self, layer: ServedLayer, idx: np.ndarray, bbox, kind: str) -> dict:
        points, codes, names = self._grid_points(layer)
        cells = GRID_CELLS
        pts = points[idx]
        x = np.clip(((pts[:, 0] - bbox[0]) / max(bbox[2] - bbox[0], 1e-12) * cells).astype(int), 0, cells - 1)
        y = np.clip(((pts[:, 1] - bbox[1]) / max(bbox[3] - bbox[1], 1e-12) * cells).astype(int), 0, cells - 1)
        counts = np.bincount((x * cells + y) * len(names) + codes[idx], minlength=cells * cells * len(names))
        counts = counts.reshape(cells * cells, len(names))
        totals = counts.sum(axis=1)
        dominant = counts.argmax(axis=1)
        w, h = (bbox[2] - bbox[0]) / cells, (bbox[3] - bbox[1]) / cells
        features = []
        for cell in np.flatnonzero(totals):  # at most 48 x 48 cells
            cx, cy = divmod(int(cell), cells)
            x0, y0 = bbox[0] + cx * w, bbox[1] + cy * h
            ring = [[x0, y0], [x0 + w, y0], [x0 + w, y0 + h], [x0, y0 + h], [x0, y0]]
            features.append(
                {
                    "type": "Feature",
                    "properties": {"status": str(names[dominant[cell]]), "count": int(totals[cell])},
                    "geometry": {"type": "Polygon", "coordinates": [ring]},
                }
            )
        return {"type": "FeatureCollection", "features": features, "layer": kind, "aggregated": True, "total": len(idx)}

    # -- one feature ------------------------------------------------------------------------------------------------

    def _position(self, kind: str, column: str, value: str) -> int | None:
        """Where the feature whose ``column`` is ``value`` is in a served layer (an index made once)."""
        layer = self.served.get(kind)
        if layer is None or column not in layer.frame.columns:
            return None
        key = f"index:{kind}:{column}"
        index = self.cache.get(key)
        if index is None:
            ids = layer.frame[column].astype(str).to_numpy()
            index = self.cache[key] = dict(zip(ids[::-1], range(len(ids) - 1, -1, -1), strict=True))  # first wins
        return index.get(str(value))

    def _feature(self, kind: str, i: int) -> dict:
        layer = self.served[kind]
        row = layer.frame.iloc[[i]]
        props = json.loads(
            pd.DataFrame(row.drop(columns=row.geometry.name)).to_json(orient="records", date_format="iso")
        )[0]
        geometry = json.loads(layer.geometry_json(np.array([i]), FULL_BAND)[0])
        return {"type": "Feature", "properties": props, "geometry": geometry}

    def parcel(self, parcel_id: str) -> dict | None:
        """One parcel with all its attributes, the reason as its popup shows it, the popup's further rows and its
        measuring line, as GeoJSON."""
        i = self._position("parcels", "parcel_id", parcel_id)
        if i is None:
            return None
        out = {"parcel": self._feature("parcels", i)}
        props = out["parcel"]["properties"]
        out["reason"] = reason_without_deadline(props.get("reason"), props.get("deadline"))
        out["distance_text"] = feet_words([props.get("distance_ft")], (self.run() or {}).get("distance_ft"))[0]
        out["rows"] = _popup_rows(props)
        lines = self.layers.get(LINES_LAYER)
        if lines is not None:
            key = "index:lines"
            index = self.cache.get(key)
            if index is None:
                ids = lines["parcel_id"].astype(str).to_numpy()
                index = self.cache[key] = dict(zip(ids, range(len(ids)), strict=True))
            j = index.get(str(parcel_id))
            if j is not None:
                out["measuring_line"] = collection(lines.iloc[[j]], ("distance_ft", "main_id"), layer="line")[
                    "features"
                ][0]
        return out

    def building(self, building_id: str) -> dict | None:
        """One building with all its attributes (the building findings), as a GeoJSON feature."""
        i = self._position("buildings", "building_id", building_id)
        return None if i is None else {"building": self._feature("buildings", i)}

    # -- search, the summary, downloads ------------------------------------------------------------------------------

    def search(self, query: str, limit: int = 20) -> dict:
        """Parcels whose ID, site address or owner holds the query's words in order, with their bounds.

        Case, punctuation and street suffixes do not matter ("Main Street" finds "12 MAIN ST."). Returns the first
        ``limit`` as ``results`` and how many there are as ``total``.
        """
        layer = self.served.get("parcels")
        q = search_text(pd.Series([query])).iloc[0].strip()
        if layer is None or not q:
            return {"results": [], "total": 0, "query": query}
        haystack = self.cache.get("search")
        if haystack is None:
            frame = layer.frame
            parts = [search_text(frame[c]) for c in ("parcel_id", "site_address", "owner_name") if c in frame]
            joined = parts[0]
            for part in parts[1:]:
                joined = joined + "|" + part
            haystack = self.cache["search"] = joined.reset_index(drop=True)
        hits = np.zeros(0, dtype=np.int64)
        # whole words first ("main st"), then the last word begun ("main str"), then anywhere ("mith")
        for needle in (" " + q + " ", " " + q, q):
            hits = np.flatnonzero(haystack.str.contains(needle, regex=False).to_numpy())
            if len(hits):
                break
        shown = hits[:limit]
        frame = layer.frame.iloc[shown]
        bounds = shapely.bounds(layer.geoms[shown])
        results = [
            {
                "parcel_id": str(r.parcel_id),
                "site_address": _text(getattr(r, "site_address", None)),
                "owner_name": _text(getattr(r, "owner_name", None)),
                "status": _text(getattr(r, "status", None)),
                "bbox": [float(v) for v in b],
            }
            for r, b in zip(frame.itertuples(), bounds, strict=True)  # at most ``limit``
        ]
        return {"results": results, "total": len(hits), "query": query}

    def status_counts(self) -> dict[str, int]:
        """Parcels per status in the latest results (made once per store version)."""
        counts = self.cache.get("counts")
        if counts is None:
            frame = self.layers.get(RESULT_LAYER)
            counts = {} if frame is None else {str(k): int(v) for k, v in frame["status"].value_counts().items()}
            self.cache["counts"] = counts
        return counts

    def mandated(self, columns: tuple[str, ...], limit: int) -> list[dict]:
        """The first ``limit`` parcels that must connect, by parcel ID, with ``columns`` (made once per version)."""
        key = f"mandated:{limit}:{','.join(columns)}"
        rows = self.cache.get(key)
        if rows is None:
            frame = self.layers.get(RESULT_LAYER)
            rows = []
            if frame is not None:
                chosen = frame[frame["status"] == "mandated"].sort_values("parcel_id").head(limit)
                present = [c for c in columns if c in chosen.columns]
                rows = json.loads(pd.DataFrame(chosen[present]).to_json(orient="records", date_format="iso"))
            self.cache[key] = rows
        return rows

    def features_by_id(self, name: str, column: str, ids: list[str], fields: tuple[str, ...]) -> dict:
        frame = self.layers.get(name)
        if frame is None:
            return {"type": "FeatureCollection", "features": []}
        rows = frame[frame[column].astype(str).isin([str(i) for i in ids])]
        return collection(rows, fields, layer=name)

    def selection(self, bbox=None, *, ids: list[str] | None = None, status: str | None = None) -> gpd.GeoDataFrame:
        """Parcel results (in the store's CRS) for download: all, those in a WGS 84 box, those with the given IDs,
        of one status."""
        name = RESULT_LAYER
        frame = self.originals.get(name)
        if frame is None:
            raise LayerError("No analysis results in the store yet: run the analysis first.")
        if bbox is not None:
            frame = frame.iloc[self._in_box(name, bbox)]
        if ids is not None:
            frame = frame[frame["parcel_id"].astype(str).isin(set(ids))]
        if status:
            frame = frame[frame["status"].astype(str) == status]
        return frame


def feet_words(values: pd.Series | np.ndarray | list, threshold_ft: float | None = None) -> list[str | None]:
    """Distances as the reasons word them (``analysis.reasons.feet_text``): to the tenth of a foot ("0.0 ft",
    "25.0 ft"), to the hundredth where a tenth would round onto the run's distance ("99.96 ft" within 100 ft); None
    for a missing one. The popup and the summary page said "0 ft" and "100.0 ft" beside reasons saying otherwise.

    Examples
    --------
    >>> feet_words([0.0, 25, 99.96, None], 100.0)
    ['0.0 ft', '25.0 ft', '99.96 ft', None]
    >>> feet_words(pd.Series([30.0, np.nan]))  # a result column as read
    ['30.0 ft', None]
    """
    if not len(values):
        return []
    # by Arrow, not a Python pass per value: every parcel's distance is worded when the map loads a store (1.7 s at
    # a million parcels that way)
    numbers = pd.to_numeric(pd.Series(values), errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    texts = feet_text(numbers, None if threshold_ft is None else float(threshold_ft))
    worded = pc.binary_join_element_wise(texts, pa.scalar(" ft"), "")
    return pc.if_else(pa.array(np.isnan(numbers)), pa.scalar(None, pa.string()), worded).to_pylist()


def _popup_rows(props: dict) -> list[list[str]]:
    """The popup's further rows with a value, as [label, text]; the boundary distance only where it differs."""
    rows = []
    for label, column in PARCEL_POPUP_FIELDS:
        value = props.get(column)
        if value is None or value == "":
            continue
        if column == "boundary_distance_ft" and props.get("measured_from") in (None, "parcel boundary"):
            continue
        unit = POPUP_UNITS.get(column, "")
        measured = isinstance(value, int | float) and not isinstance(value, bool)
        if measured and column == "boundary_distance_ft":  # as the reason words it: "25.0 ft from the parcel boundary"
            rows.append([label, feet_words([value])[0]])
            continue
        rows.append([label, number(value, unit) if measured else str(value)])
    return rows


def _dates_as_text(frame: gpd.GeoDataFrame) -> gpd.GeoDataFrame:
    """``frame`` with its date and time columns as ISO text: "2027-05-30" for a date (or a time at midnight),
    "2027-05-30T14:05:00" for a time of day. A store may give a date field as a datetime column or as ``date``
    objects (PostGIS), which JSON would write as milliseconds or with a midnight time the page cannot word."""
    changed = {}
    for name in frame.columns:
        if name == frame.geometry.name:
            continue
        column = frame[name]
        if isinstance(column.dtype, pd.DatetimeTZDtype) or pd.api.types.is_datetime64_dtype(column.dtype):
            changed[name] = column.astype(object).map(_iso_text, na_action="ignore").where(column.notna(), None)
        elif column.dtype == object:
            values = column.to_numpy()
            present = pd.notna(values)
            if present.any() and isinstance(values[present.argmax()], dt.date):
                changed[name] = column.map(_iso_text, na_action="ignore")
    return frame.assign(**changed) if changed else frame


def _iso_text(value):
    """A date as YYYY-MM-DD, a time of day as YYYY-MM-DDTHH:MM:SS (with its offset, if it has one); else as it is."""
    if isinstance(value, dt.datetime):
        midnight = value.time() == dt.time(0) and value.utcoffset() in (None, dt.timedelta(0))
        return value.date().isoformat() if midnight else value.isoformat(timespec="seconds")
    return value.isoformat() if isinstance(value, dt.date) else value


def _worded_dates(values: pd.Series, fmt: str) -> pd.Series:
    """Each date in the town's format (``gisapp.words.town_date``), worded once per distinct date: a town's
    parcels share a few deadlines."""
    worded = {v: town_date(v, fmt) for v in pd.unique(values.dropna())}
    return values.map(worded).where(values.notna(), None)


def _text(value) -> str | None:
    return None if value is None or (isinstance(value, float) and np.isnan(value)) else str(value)


def collection(frame: gpd.GeoDataFrame, fields: tuple[str, ...], *, layer: str) -> dict:
    """A GeoJSON FeatureCollection of a few features (coordinates rounded to 7 decimals), in WGS 84."""
    if frame.crs is not None and not frame.crs.equals("EPSG:4326"):
        frame = frame.to_crs(4326)
    geoms = np.asarray(frame.geometry.values)
    texts = shapely.to_geojson(_rounded(geoms)) if len(geoms) else []
    props = [json.loads(p) for p in _json_rows(frame, fields)]
    return {
        "type": "FeatureCollection",
        "layer": layer,
        "features": [
            {"type": "Feature", "properties": p, "geometry": json.loads(g) if g else None}
            for p, g in zip(props, texts, strict=True)
        ],
    }
