"""The duties the ordinances put on a property beyond connecting: one place that gathers them per parcel.

``assess_duties`` runs the discharge checks (``analysis.discharges``: grease interceptors, industrial users and
their control manholes) and, with a subdivisions layer, the subdivision rules (``analysis.subdivisions``), and
writes one sentence per duty into ``duties`` with the sections in ``duties_section``: the columns the map's parcel
popup, ``sewerplan duties`` and the written results show.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely

from analysis.discharges import assess_discharges, join_sections
from analysis.profiles import Profile
from analysis.subdivisions import VERDICTS, assess_subdivisions

DUTY_COLUMNS = (
    "discharge_gpd",
    "discharge_source",
    "flow_share_pct",
    "grease_interceptor",
    "industrial_user",
    "in_subdivision",
    "subdivision_duty",
    "duties",
    "duties_section",
)


@dataclass(frozen=True)
class DutiesResult:
    """Parcels with the duty columns, the assessed subdivisions (or None) and a summary."""

    parcels: gpd.GeoDataFrame
    subdivisions: gpd.GeoDataFrame | None
    summary: dict = field(default_factory=dict)

    def cases(self) -> gpd.GeoDataFrame:
        """The parcels with a duty to list."""
        return self.parcels[self.parcels["duties"].astype(str) != ""]


def assess_duties(
    parcels: gpd.GeoDataFrame,
    *,
    profile: Profile,
    network=None,
    connections=None,
    subdivisions: gpd.GeoDataFrame | None = None,
    service_areas: gpd.GeoDataFrame | None = None,
) -> DutiesResult:
    """Every parcel's further duties under the profile, as columns of the mandate results.

    Examples
    --------
    >>> from shapely.geometry import box
    >>> from analysis.profiles import load_profile
    >>> lots = gpd.GeoDataFrame({"parcel_id": ["DINER"], "status": ["connected"], "property_class": ["421"]},
    ...     geometry=[box(0, 0, 50, 50)], crs="EPSG:2260")
    >>> r = assess_duties(lots, profile=load_profile("fort-plain"))
    >>> r.parcels.loc[0, "duties_section"]
    '§ 144-23A (section number derived)'
    >>> r.parcels.loc[0, "duties"].endswith("for the engineer to decide.")
    True
    """
    found = assess_discharges(parcels, profile=profile, network=network, connections=connections)
    out = found.parcels
    summary = dict(found.summary)
    n = len(out)
    sub_text = np.full(n, "", dtype=object)
    sub_section = np.full(n, "", dtype=object)
    in_sub = np.full(n, None, dtype=object)
    duty = np.full(n, None, dtype=object)
    assessed = None
    if subdivisions is not None and len(subdivisions):
        assessed = assess_subdivisions(subdivisions, profile=profile, service_areas=service_areas)
        points = shapely.point_on_surface(np.asarray(out.geometry.values))
        p_idx, s_idx = shapely.STRtree(np.asarray(assessed.geometry.values)).query(points, predicate="within")
        first = pd.DataFrame({"p": p_idx, "s": s_idx}).drop_duplicates("p")
        p_idx, s_idx = first["p"].to_numpy(), first["s"].to_numpy()
        ids = assessed["subdivision_id"].astype(str).to_numpy(object)
        in_sub[p_idx] = ids[s_idx]
        duty[p_idx] = assessed["sewer_duty"].to_numpy(object)[s_idx]
        sub_text[p_idx] = "In proposed subdivision " + ids[s_idx] + ": " + assessed["reason"].to_numpy(object)[s_idx]
        sub_section[p_idx] = assessed["section"].to_numpy(object)[s_idx]
        summary["subdivisions"] = {v: int((assessed["sewer_duty"] == v).sum()) for v in VERDICTS}
    out["in_subdivision"] = pd.Series(in_sub, index=out.index, dtype=object)
    out["subdivision_duty"] = pd.Series(duty, index=out.index, dtype=object)
    text = pd.Series(out["discharge_duties"].to_numpy(object)) + " " + pd.Series(sub_text)
    out["duties"] = text.str.strip().to_numpy(object)
    out["duties_section"] = join_sections(out["discharge_sections"].to_numpy(object), sub_section)
    out = out.drop(columns=["discharge_duties", "discharge_sections"])
    summary["parcels_with_duties"] = int((out["duties"] != "").sum())
    return DutiesResult(out, assessed, summary)
