"""Cut one municipality's layers out of statewide layers, by location, for a batch run.

Given a layer of municipality polygons (one feature per municipality, carrying its name and profile) and
statewide layers, each municipality gets:

- **parcels** by the assignment rule of :func:`assign_parcels` (each parcel to exactly one municipality);
- **buildings** that touch one of its parcels;
- **every other layer** (mains, streets, manholes, plants, alleys, laterals, service areas): the features within
  ``margin_ft`` of its boundary, so a main across the line from a border parcel is still measured.

The cut layers are written as GeoParquet files in their stored CRS and read back through ``load_layers`` like any
``--parcels FILE``: the analysis of a municipality is exactly ``sewerplan analyze`` on those files.

Only the bounding box of the municipality is read from each statewide layer (GeoParquet row groups, OGR spatial
indexes and PostGIS's ``&&`` skip the rest), so a worker's memory follows the municipality's size, not the state's.
"""

from __future__ import annotations

from pathlib import Path

import geopandas as gpd
import numpy as np
import pandas as pd
import pyogrio
import shapely
from pyproj import CRS

from analysis.arrays import distinct
from layers.crs import feet_per_unit
from layers.errors import LayerError
from layers.read import LayerSource, is_postgres, parse_source, read_subset
from layers.write import write_geoparquet

# A share of a parcel's area at least this close to one half counts as one half (floating-point slack).
_HALF = 0.5 - 1e-9


def assign_parcels(parcels: gpd.GeoSeries, municipalities: gpd.GeoDataFrame, *, name_column: str) -> pd.DataFrame:
    """The municipality each parcel belongs to, and how much of it lies there.

    The rule, in order:

    1. a parcel inside one municipality belongs to it;
    2. a parcel in several belongs to the **smallest municipality holding at least half of its area** (a village
       inside a town takes the parcels that lie mostly in the village; a parcel split evenly between two
       neighbours goes to the smaller);
    3. if none holds half (a parcel across three or more), to the one holding the **largest part**;
    4. remaining ties go to the smaller municipality, then to the first name in alphabetical order.

    A parcel touching no municipality polygon belongs to none (``municipality`` is missing).

    Returns a frame on ``parcels``' index with ``municipality``, ``share`` (the fraction of the parcel's area in
    it, 1.0 for a parcel inside one) and ``straddles`` (it crosses a municipal boundary: some municipality holds
    part of it but not all; a parcel inside a village inside a town does not). Both inputs must be in the same CRS.

    Examples
    --------
    >>> from shapely.geometry import box
    >>> towns = gpd.GeoDataFrame({"name": ["Town", "Village", "East"]},
    ...     geometry=[box(0, 0, 100, 100), box(0, 0, 40, 40), box(100, 0, 200, 100)])
    >>> lots = gpd.GeoSeries([box(10, 10, 20, 20), box(35, 10, 55, 20), box(90, 50, 130, 60), box(95, 0, 105, 5)])
    >>> # inside the village; mostly in the town; mostly east; half and half between equals: the first name
    >>> assign_parcels(lots, towns, name_column="name")["municipality"].tolist()
    ['Village', 'Town', 'East', 'East']
    """
    geoms = np.asarray(parcels.values if isinstance(parcels, gpd.GeoSeries) else parcels)
    m_geoms = np.asarray(municipalities.geometry.values)
    names = municipalities[name_column].astype(str).to_numpy()
    n = len(geoms)
    out = pd.DataFrame({"municipality": pd.Series([None] * n, dtype=object), "share": np.nan, "straddles": False})
    out.index = parcels.index if isinstance(parcels, gpd.GeoSeries) else pd.RangeIndex(n)
    if n == 0 or len(m_geoms) == 0:
        return out
    shapely.prepare(m_geoms)
    pi, mi = shapely.STRtree(m_geoms).query(geoms, predicate="intersects")
    if len(pi) == 0:
        return out
    count = np.bincount(pi, minlength=n)
    share = np.ones(len(pi))
    several = count[pi] > 1
    if several.any():
        inside = shapely.contains_properly(m_geoms[mi[several]], geoms[pi[several]])
        part = np.flatnonzero(several)[~inside]
        area = shapely.area(geoms[pi[part]])
        # Only parcels across a boundary get here (GEOS clips the large polygon to the parcel's envelope first).
        overlap = shapely.area(shapely.intersection(m_geoms[mi[part]], geoms[pi[part]]))
        share[part] = np.where(area > 0, overlap / np.where(area > 0, area, 1.0), 1.0)
    m_area = shapely.area(m_geoms)
    name_rank = np.argsort(np.argsort(names, kind="stable"), kind="stable")
    majority = share >= _HALF
    order = np.lexsort((name_rank[mi], m_area[mi], np.where(majority, 0.0, -share), ~majority, pi))
    first = order[np.r_[True, pi[order][1:] != pi[order][:-1]]]
    rows = pi[first]
    out.iloc[rows, 0] = names[mi[first]]
    out.iloc[rows, 1] = share[first]
    crossing = np.bincount(pi, weights=share < 1 - 1e-9, minlength=n) > 0
    out.iloc[rows, 2] = crossing[rows]
    return out


def read_municipality_table(source_text: str, columns: list[str]) -> pd.DataFrame:
    """The attribute columns of the municipalities layer (no geometry), checked to exist; one row per feature."""
    source = parse_source("municipalities", source_text)
    try:
        if source.path.lower().endswith((".parquet", ".geoparquet")):
            import pyarrow.parquet as pq

            schema = pq.read_schema(source.path)
            missing = [c for c in columns if c not in schema.names]
            names = schema.names
            table = None if missing else pq.read_table(source.path, columns=columns).to_pandas()
        elif is_postgres(source.path):
            frame = read_subset(source)
            names = list(frame.columns)
            missing = [c for c in columns if c not in names]
            table = None if missing else pd.DataFrame(frame[columns])
        else:
            info = pyogrio.read_info(source.path, layer=source.layer)
            names = list(info["fields"])
            missing = [c for c in columns if c not in names]
            table = (
                None
                if missing
                else pyogrio.read_dataframe(source.path, layer=source.layer, columns=columns, read_geometry=False)
            )
    except LayerError:
        raise
    except Exception as exc:
        raise LayerError(f"The municipalities layer {source_text} cannot be read: {exc}") from exc
    if missing:
        raise LayerError(
            f"The municipalities layer {source.label} has no column {', '.join(map(repr, missing))}; its columns "
            f"are {', '.join(map(str, names))}. Name the columns holding each municipality's name and profile."
        )
    dupes = table[columns[0]][table[columns[0]].duplicated()].astype(str).unique()
    if len(dupes):
        raise LayerError(
            f"The municipalities layer {source.label} has several features named {', '.join(sorted(dupes)[:5])}: "
            "give one (multi-)polygon per municipality (dissolve the layer by its name column)."
        )
    return table


def count_features(source: LayerSource) -> int | None:
    """How many features a layer holds, from its metadata where that is cheap; None where it is not."""
    try:
        if source.path.lower().endswith((".parquet", ".geoparquet")):
            import pyarrow.parquet as pq

            return int(pq.ParquetFile(source.path).metadata.num_rows)
        if is_postgres(source.path):
            return None
        return int(pyogrio.read_info(source.path, layer=source.layer, force_feature_count=True)["features"])
    except Exception:
        return None


def stage_municipality(
    name: str,
    *,
    municipalities: str,
    name_column: str,
    margin_ft: float,
    sources: dict[str, LayerSource],
    measuring: CRS,
    assume_crs: dict[str, str],
    folder: str | Path,
) -> tuple[dict[str, LayerSource], dict]:
    """Cut ``name``'s layers out of the statewide ``sources`` and write them to ``folder`` as GeoParquet.

    Returns the sources to analyse (the written files) and what the cut found: ``parcels`` assigned,
    ``parcels_straddling`` (assigned here but touching another municipality too).
    """
    folder = Path(folder)
    muni_source = parse_source("municipalities", municipalities)
    own = read_subset(muni_source, where=(name_column, name))
    if own.empty or own.crs is None:
        raise LayerError(f"The municipalities layer has no polygon (with a CRS) for {name!r}.")
    own_geom = shapely.union_all(own.geometry.values)
    if "parcels" not in sources:
        raise LayerError("No parcels layer found among the statewide layers.")
    parcels = read_subset(
        sources["parcels"], bbox=own_geom.bounds, bbox_crs=own.crs, assume_crs=assume_crs.get("parcels")
    )
    p_crs = parcels.crs or CRS.from_user_input(assume_crs["parcels"])
    own_here = gpd.GeoSeries([own_geom], crs=own.crs).to_crs(p_crs).iloc[0]
    touching = parcels[shapely.intersects(own_here, parcels.geometry.values)]
    stats = {"parcels": 0, "parcels_straddling": 0}
    if touching.empty:
        raise LayerError(f"No statewide parcel lies in {name!r}.")
    neighbours = read_subset(muni_source, bbox=tuple(touching.total_bounds), bbox_crs=p_crs).to_crs(p_crs)
    assigned = assign_parcels(touching.geometry, neighbours, name_column=name_column)
    mine = assigned["municipality"].eq(name).to_numpy()
    kept = touching[mine]
    if kept.empty:
        raise LayerError(f"Every parcel touching {name!r} belongs to a neighbouring municipality by the rule.")
    stats["parcels"] = len(kept)
    stats["parcels_straddling"] = int(assigned["straddles"].to_numpy()[mine].sum())
    out = {"parcels": LayerSource("parcels", write_geoparquet(folder / "parcels.parquet", kept))}

    zone = _grown(own_geom, own.crs, measuring, margin_ft)
    for kind, source in sources.items():
        if kind == "parcels":
            continue
        if kind == "buildings":
            frame = read_subset(source, bbox=tuple(kept.total_bounds), bbox_crs=p_crs, assume_crs=assume_crs.get(kind))
            here = frame.to_crs(p_crs) if frame.crs is not None else frame
            _, hits = shapely.STRtree(here.geometry.values).query(kept.geometry.values, predicate="intersects")
            frame = frame.iloc[distinct(hits)]
        else:
            frame = read_subset(source, bbox=zone.bounds, bbox_crs=measuring, assume_crs=assume_crs.get(kind))
            layer_crs = frame.crs or (CRS.from_user_input(assume_crs[kind]) if kind in assume_crs else None)
            if layer_crs is None:
                raise LayerError(f"{source.label} declares no CRS: give the CRS of the layer.")
            zone_here = gpd.GeoSeries([zone], crs=measuring).to_crs(layer_crs).iloc[0]
            frame = frame[shapely.intersects(zone_here, frame.geometry.values)]
        if frame.empty:
            continue  # the layer has nothing here: analysed as if the municipality had no such layer
        out[kind] = LayerSource(kind, write_geoparquet(folder / f"{kind}.parquet", frame))
    return out, stats


def _grown(geom, crs: CRS, measuring: CRS, margin_ft: float):
    """The municipality grown by ``margin_ft`` US survey feet, in the measuring CRS."""
    here = gpd.GeoSeries([geom], crs=crs).to_crs(measuring).iloc[0]
    return shapely.buffer(here, margin_ft / feet_per_unit(measuring), quad_segs=4)
