"""Select by distance: the parcels within a distance of a feature, and their owners' mailing list.

This is the public notification workflow planners know from Esri's Public Notification widget: pick a feature (a
parcel, or a point, line or area drawn on the map), give a distance, and get every parcel that lies within that
distance of it, with one mailing row per owner address for the letters. A parcel is within the distance when any
part of it is (its nearest point, not its centre), as a buffer of the feature drawn on the map shows; the feature's
own parcel is within at 0 ft and is listed (marked ``source``), as the widget lists it.

Distances are in US survey feet, measured in the parcels' projected CRS. Pure: frames and geometries in, a
dataclass out.
"""

from __future__ import annotations

from dataclasses import dataclass

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely
from pyproj import CRS

from analysis.errors import AnalysisError
from analysis.notices import mailing_list
from analysis.units import feet_per_unit

# The farthest a selection reaches: ten miles. A notification area is a few hundred feet; past ten miles a buffer
# says nothing about neighbours, and past a few thousand miles it cannot even be drawn (its coordinates overflow).
MAX_DISTANCE_FT = 52_800.0

# The mailing list's columns, in order; ``parcels`` counts each owner address's parcels within the distance.
NOTIFICATION_COLUMNS = (
    "name_line_1",
    "name_line_2",
    "address_line_1",
    "city",
    "state",
    "zip",
    "city_line",
    "country_line",  # abroad, the country on a line of its own, as the notices' mailing list has it
    "parcels",
    "parcel_ids",
    "site_addresses",
)
_OWNER_COLUMNS = ("owner_name", "mail_address", "mail_city", "mail_state", "mail_zip", "site_address")


@dataclass(frozen=True)
class Notification:
    """The parcels within ``distance_ft`` of the feature, the area searched, and the owners' mailing list.

    ``parcels`` keeps the input's index and CRS and adds ``distance_to_feature_ft`` and ``source`` (the parcel the
    feature is); ``buffer`` is the feature grown by the distance, for the map; ``mailing`` has one row per owner
    mailing address (``NOTIFICATION_COLUMNS``), in mailing order; ``no_address`` counts parcels whose owner has no
    mailing address in the data.
    """

    parcels: gpd.GeoDataFrame
    buffer: shapely.Geometry
    mailing: pd.DataFrame
    distance_ft: float
    no_address: int


def parcels_within(
    parcels: gpd.GeoDataFrame, feature: shapely.Geometry, *, distance_ft: float, source_id: str | None = None
) -> Notification:
    """Every parcel any part of which lies within ``distance_ft`` of ``feature`` (in the parcels' CRS).

    ``source_id`` names the parcel the feature is, when it is one.

    Examples
    --------
    >>> from shapely.geometry import Point, box
    >>> lots = gpd.GeoDataFrame({"parcel_id": ["A", "B", "C"], "owner_name": ["ANN", "BOB", "ANN"],
    ...     "mail_address": ["1 Elm St", "2 Oak St", "1 Elm St"]},
    ...     geometry=[box(0, 0, 50, 100), box(60, 0, 110, 100), box(400, 0, 450, 100)], crs="EPSG:2260")
    >>> found = parcels_within(lots, Point(25, 50), distance_ft=40)
    >>> found.parcels["parcel_id"].tolist(), found.parcels["distance_to_feature_ft"].tolist()
    (['A', 'B'], [0.0, 35.0])
    >>> found.mailing[["name_line_1", "parcels", "parcel_ids"]].values.tolist()
    [['ANN', 1, 'A'], ['BOB', 1, 'B']]

    An owner abroad ends with the country, as a notice's envelope does:

    >>> lots["mail_city"], lots["mail_state"] = "Kingston", ["NY", "ON", "NY"]
    >>> lots["mail_zip"] = ["12401", "K7L 3C4", ""]
    >>> parcels_within(lots, Point(25, 50), distance_ft=40).mailing[["city_line", "country_line"]].values.tolist()
    [['Kingston, NY 12401', ''], ['Kingston, ON K7L 3C4', 'CANADA']]
    """
    _check(parcels, feature, distance_ft)
    fpu = feet_per_unit(CRS(parcels.crs))
    geoms = np.asarray(parcels.geometry.values)
    reach = distance_ft / fpu
    hits = np.sort(shapely.STRtree(geoms).query(feature, predicate="dwithin", distance=reach))
    within = parcels.iloc[hits].copy()
    within["distance_to_feature_ft"] = np.round(shapely.distance(geoms[hits], feature) * fpu, 1)
    ids = within["parcel_id"].astype(str) if "parcel_id" in within else pd.Series("", index=within.index)
    within["source"] = (ids == str(source_id)).to_numpy() if source_id is not None else False
    owners = pd.DataFrame(
        {c: (within[c] if c in within else pd.Series(None, index=within.index, dtype=object)) for c in _OWNER_COLUMNS}
    )
    owners["parcel_id"] = ids.to_numpy()
    owners["deadline"] = None
    owners["section"] = None
    rows = mailing_list(owners).rename(columns={"notices": "parcels"})
    blank = owners["mail_address"].isna() | (owners["mail_address"].astype(str).str.strip() == "")
    return Notification(
        parcels=within,
        buffer=shapely.buffer(feature, reach, quad_segs=16) if reach > 0 else feature,
        mailing=rows[list(NOTIFICATION_COLUMNS)].reset_index(drop=True),
        distance_ft=float(distance_ft),
        no_address=int(blank.sum()),
    )


def _shown(distance_ft: float) -> str:
    """What a refused distance was, in words: 1e400 arrives as infinity, "nan" as not a number."""
    if np.isnan(distance_ft):
        return "it was not a number"
    if np.isinf(distance_ft):
        return "it was too large to be a finite number" if distance_ft > 0 else "it was negative and infinite"
    return f"it was {distance_ft:,g}"


def _check(parcels: gpd.GeoDataFrame, feature, distance_ft: float) -> None:
    problems = []
    if parcels.crs is None or not CRS(parcels.crs).is_projected:
        problems.append("the parcels must be in a projected CRS to measure feet (they are read into one)")
    if feature is None or shapely.is_empty(feature) or not shapely.is_valid(feature):
        problems.append("the feature to measure from is empty or not a valid geometry: draw or pick it again")
    if not 0 <= distance_ft <= MAX_DISTANCE_FT:  # NaN fails this too
        problems.append(
            f"the distance must be a number of feet from 0 to {MAX_DISTANCE_FT:,.0f} (ten miles); {_shown(distance_ft)}"
        )
    if problems:
        raise AnalysisError("Cannot select parcels by distance: " + "; ".join(problems) + ".")
