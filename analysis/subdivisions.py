"""Proposed subdivisions: which must build sewers (Wappinger § 196-16G, § 196-23B; Fort Plain § 144-21).

Each feature of a ``subdivisions`` layer (a whole subdivision, or one of its lots) is judged on its own:

- Fort Plain § 144-21: "All new developments shall be provided with an approved system of sanitary sewers."
  (``subdivisions.all_new_developments``): every one must.
- Wappinger § 196-16G: the owners of property developed as a subdivision "having plot sizes less than one acre per
  dwelling unit or being in a legal sewer district, sewer improvement area or other municipal sewer system shall
  construct such sewers". Plot size per dwelling unit is the feature's area over its ``units`` (else its
  ``lots``, one unit each), compared with ``max_acres_per_unit`` ("less than": exactly one acre does not count);
  a district is a polygon of the ``service_areas`` layer. § 196-23B is the specific rule for Phase III (a service
  area whose ``mandates`` is no): private systems "until such time as when public sewer becomes available".
- Poughkeepsie defines a subdivision but sets no rule for sewering one.

Where a test cannot be made (no units or lots, no service areas layer) and the other does not decide, the verdict
is ``unknown`` and the reason says what is missing.
"""

from __future__ import annotations

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely
from pyproj import CRS

from analysis.profiles import Profile
from analysis.units import feet_per_unit

VERDICTS = ("must_build_sewers", "private_until_available", "not_required", "unknown", "no_rule")
SQFT_PER_ACRE = 43_560.0


def assess_subdivisions(
    subdivisions: gpd.GeoDataFrame, *, profile: Profile, service_areas: gpd.GeoDataFrame | None = None
) -> gpd.GeoDataFrame:
    """Every proposed subdivision's duty to build sewers, with the section and a reason a board can read.

    Adds ``acres``, ``dwelling_units``, ``acres_per_unit``, ``in_district`` (None without a service_areas layer),
    ``phase_iii``, ``sewer_duty`` (one of ``VERDICTS``), ``section`` and ``reason``; keeps the input's index and CRS.

    Examples
    --------
    >>> from shapely.geometry import box
    >>> from analysis.profiles import load_profile
    >>> acre = 208.71  # feet on a side of a square acre
    >>> subs = gpd.GeoDataFrame({"subdivision_id": ["S-1", "S-2"], "units": [12, 3]},
    ...     geometry=[box(0, 0, 3 * acre, 3 * acre), box(0, 1000, 3 * acre, 1000 + 3 * acre)], crs="EPSG:2260")
    >>> r = assess_subdivisions(subs, profile=load_profile("wappinger"))
    >>> r[["subdivision_id", "acres_per_unit", "sewer_duty"]].values.tolist()
    [['S-1', 0.75, 'must_build_sewers'], ['S-2', 3.0, 'unknown']]
    """
    rules = profile.subdivisions
    fpu = feet_per_unit(CRS(subdivisions.crs))
    n = len(subdivisions)
    geoms = np.asarray(subdivisions.geometry.values)
    acres = shapely.area(geoms) * fpu * fpu / SQFT_PER_ACRE

    def number(name: str) -> np.ndarray:
        if name not in subdivisions.columns:
            return np.full(n, np.nan)
        return pd.to_numeric(subdivisions[name], errors="coerce").to_numpy(float)

    units = number("units")
    units = np.where(np.isfinite(units) & (units > 0), units, number("lots"))
    units = np.where(units > 0, units, np.nan)
    per_unit = acres / units
    in_district, phase_iii = _districts(geoms, service_areas)

    limit = rules.max_acres_per_unit.value
    small = np.isfinite(per_unit) & (limit is not None) & (per_unit < (limit or 0))
    size_known = np.isfinite(per_unit) | (limit is None)
    district_test = bool(rules.in_district_builds.value)
    district = district_test & (in_district == True)  # noqa: E712 - elementwise on an object array
    district_known = (not district_test) or service_areas is not None
    held = bool(rules.private_until_available.value) & phase_iii

    verdict = np.select(
        [
            np.full(n, bool(rules.all_new_developments.value)),
            np.full(n, not (rules.all_new_developments.value or limit is not None or district_test)),
            held,
            small | district,
            ~size_known | (not district_known),
        ],
        ["must_build_sewers", "no_rule", "private_until_available", "must_build_sewers", "unknown"],
        "not_required",
    ).astype(object)
    section, reason = _reasons(verdict, small, district, per_unit, units, size_known, district_known, rules)

    out = subdivisions.copy()
    if "subdivision_id" not in out.columns:
        out["subdivision_id"] = [f"subdivisions-{i}" for i in range(1, n + 1)]
    out["acres"] = np.round(acres, 3)
    out["dwelling_units"] = units
    out["acres_per_unit"] = np.round(per_unit, 3)
    out["in_district"] = pd.Series(in_district, index=out.index, dtype=object)
    out["phase_iii"] = phase_iii
    out["sewer_duty"] = verdict
    out["section"] = section
    out["reason"] = reason
    return out


def _districts(geoms: np.ndarray, areas: gpd.GeoDataFrame | None) -> tuple[np.ndarray, np.ndarray]:
    """Inside a district that mandates connection (None without a layer), and inside only Phase III-like areas."""
    n = len(geoms)
    if areas is None or len(areas) == 0:
        return np.full(n, None, dtype=object), np.zeros(n, dtype=bool)
    mandates = np.ones(len(areas), dtype=bool)
    if "mandates" in areas.columns:
        given = areas["mandates"].notna().to_numpy()
        text = areas["mandates"].astype(str).str.strip().str.lower()
        mandates[given] = text[given].isin(["true", "1", "yes", "y"]).to_numpy()
    points = shapely.point_on_surface(geoms)
    s_idx, a_idx = shapely.STRtree(np.asarray(areas.geometry.values)).query(points, predicate="within")
    inside_mandating = np.zeros(n, dtype=bool)
    inside_mandating[s_idx[mandates[a_idx]]] = True
    inside_held = np.zeros(n, dtype=bool)
    inside_held[s_idx[~mandates[a_idx]]] = True
    return inside_mandating.astype(object), inside_held & ~inside_mandating


def _reasons(verdict, small, district, per_unit, units, size_known, district_known, rules):
    """Section and reason per feature, built with whole-array string operations (one pass per verdict)."""
    n = len(verdict)
    limit, build, area_rule = rules.max_acres_per_unit, rules.all_new_developments, rules.in_district_builds
    size = pd.Series(per_unit).map(lambda v: f"{v:.2f}" if np.isfinite(v) else "?")
    count = pd.Series(units).map(lambda v: f"{v:g}" if np.isfinite(v) else "?")
    plots = "plots of " + size + " acre per dwelling unit (" + count + " units)"
    under = plots + f", less than {limit.value or 0:g} acre {limit.cited}"
    in_area = f"it lies in a sewer district or improvement area {area_rule.cited}"
    must_why = pd.Series(
        np.select([small & district, small, district], [under + "; and " + in_area, under, in_area], ""),
        dtype=object,
    )
    size_part = pd.Series(
        np.where(
            size_known,
            plots + f", not less than {limit.value or 0:g} acre",
            "its dwelling units are not given (a units or lots column)",
        ),
        dtype=object,
    )
    district_part = (
        "" if district_known else "; no service_areas layer was given to show whether it lies in a sewer district"
    )
    texts = {
        "must_build_sewers": pd.Series(
            f"A new development: it shall be provided with an approved system of sanitary sewers {build.cited}."
            if build.value
            else "The owners shall construct sewers as shown on the approved plans: " + must_why + ".",
            index=range(n),
            dtype=object,
        ),
        "private_until_available": "In Phase III of the improvement area: private wastewater disposal systems until "
        "public sewer is available, then sewer mains connected to the town trunk lines "
        f"{rules.private_until_available.cited}.",
        "not_required": "Not required to build sewers: "
        + size_part
        + (f" {limit.cited}" if limit.citation != area_rule.citation else "")
        + f", and outside every sewer district {area_rule.cited}.",
        "unknown": "Cannot be decided: " + size_part + district_part + f" {limit.cited}.",
        "no_rule": f"The law sets no rule for sewering a subdivision {build.cited}.",
    }
    sections = {
        "must_build_sewers": np.where(
            bool(build.value), build.citation, np.where(small, limit.citation, area_rule.citation)
        ),
        "private_until_available": rules.private_until_available.citation,
        "not_required": limit.citation,
        "unknown": limit.citation,
        "no_rule": build.citation,
    }
    reason = np.full(n, "", dtype=object)
    section = np.full(n, "", dtype=object)
    for name in VERDICTS:  # five verdicts, each filled with whole arrays
        rows = verdict == name
        text = texts[name]
        reason[rows] = text.to_numpy(object)[rows] if isinstance(text, pd.Series) else text
        section[rows] = np.broadcast_to(np.asarray(sections[name], dtype=object), (n,))[rows]
    return section, reason
