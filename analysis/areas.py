"""Service areas: sewer districts and improvement areas that limit where a connection can be required.

Poughkeepsie's mandate applies "within the area" (the Fourth Ward Sewer Improvement Area, § 168-22.2G); Wappinger's
Phase III stays on private systems "until such time as public sewer is available" (§ 196-17A). With a
``service_areas`` layer, a parcel is held back when its representative point lies in no area, or only in areas
whose ``mandates`` attribute is no. Without one every parcel is taken to lie inside, and ``unmapped_area`` says so
where the law binds less than the whole municipality.
"""

from __future__ import annotations

import re

import geopandas as gpd
import numpy as np
import shapely

from analysis.profiles import Profile


def held_by_service_area(parcels: gpd.GeoDataFrame, areas: gpd.GeoDataFrame | None) -> np.ndarray:
    """True for parcels outside every service area, or inside only areas that do not mandate connection."""
    if areas is None or len(areas) == 0:
        return np.zeros(len(parcels), dtype=bool)
    mandates = np.ones(len(areas), dtype=bool)
    if "mandates" in areas.columns:
        given = areas["mandates"].notna().to_numpy()
        text = areas["mandates"].astype(str).str.strip().str.lower()
        mandates[given] = text[given].isin(["true", "1", "yes", "y"]).to_numpy()
    points = shapely.point_on_surface(np.asarray(parcels.geometry.values))
    p_idx, a_idx = shapely.STRtree(np.asarray(areas.geometry.values)).query(points, predicate="within")
    inside_mandating = np.zeros(len(parcels), dtype=bool)
    inside_mandating[p_idx[mandates[a_idx]]] = True
    return ~inside_mandating


def _plain(text: str) -> str:
    """Lower case, letters and digits only, without a leading "the": names compared as a reader would."""
    words = re.sub(r"[^0-9a-z]+", " ", text.casefold()).split()
    return " ".join(words[1:] if words[:1] == ["the"] else words)


def binds_part_only(profile: Profile) -> bool:
    """Whether the law binds only part of the municipality: its ``mandate.applies_within`` names an area other than
    the municipality itself (Poughkeepsie's "situated within the area", the Fourth Ward Sewer Improvement Area;
    Wappinger's Phases I/II, § 196-17A), not the municipality (Fort Plain's "situated within the village", the
    Village of Fort Plain, whose data is the village).

    Examples
    --------
    >>> from analysis.profiles import load_profile
    >>> [binds_part_only(load_profile(p)) for p in ("fort-plain", "poughkeepsie", "wappinger")]
    [False, True, True]
    """
    area = str(profile.mandate.applies_within.value or "")
    municipality = re.split(r"[,(]", profile.municipality, maxsplit=1)[0]
    return bool(_plain(area)) and _plain(area) != _plain(municipality)


def unmapped_area(profile: Profile, areas: gpd.GeoDataFrame | None) -> dict | None:
    """Where the law binds only part of the municipality (``binds_part_only``) and no service area was given to show
    which part, the area, its section (as cited) and quote: every parcel in the data was then taken to lie inside it,
    mandated and noticed as if the law bound it. None where service areas were given or the law binds the whole
    municipality. The run's summary keeps it (``area_unmapped``), so the run, its record and the notices say it.

    Examples
    --------
    >>> from analysis.profiles import load_profile
    >>> unmapped_area(load_profile("poughkeepsie"), None)["area"]
    'the Fourth Ward Sewer Improvement Area'
    >>> unmapped_area(load_profile("fort-plain"), None) is None
    True
    """
    if (areas is not None and len(areas) > 0) or not binds_part_only(profile):
        return None
    rule = profile.mandate.applies_within
    return {"area": str(rule.value), "section": rule.citation, "quote": rule.quote}
