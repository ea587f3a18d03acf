"""A parcel's average daily flow, read one way wherever the product adds flows up.

A parcel's flow is its ``flow_gpd`` where the parcels give one (metered water use, a permit's figure), else its
living units times ``network.gallons_per_day_per_unit``; with neither, it is not known. The sewershed of a manhole
(``analysis.trace.sewershed``: ``trace --upstream``, the map's manhole popup) and the industrial users and the
system's flow (``analysis.discharges``: ``duties``) read it here. A sewershed had counted living units alone: a mill
metered at 30,000 gpd with no living units was "units unknown, flow not known" there while ``duties`` counted its
30,000 gpd.

A plan (``analysis.plans.parcel_flows``: the present flow in the mains downstream, the design flow of the parcels
it reaches) reads it here too, and estimates by property class only where it knows none; a vacant lot's figure is
its future building's. The present flow had counted a mill metered at 30,000 gpd as its class's typical 1,250.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.profiles import Profile

GIVEN = "flow_gpd"
BY_UNITS = "living units"


def average_flows(parcels: pd.DataFrame, profile: Profile) -> tuple[np.ndarray, np.ndarray]:
    """Each parcel's average daily flow (gpd; NaN where not known) and its source (``"flow_gpd"``, ``"living
    units"``, or None where not known), in the parcels' order.

    A ``flow_gpd`` that is a number of zero or more is taken as given; else living units above zero times the
    profile's gallons per day per unit. A parcel with neither (no units, or 0) has no flow known: an occupied
    building with no living units sends what its use sends, which its units cannot say.

    Examples
    --------
    >>> from analysis.profiles import load_profile
    >>> lots = pd.DataFrame({"flow_gpd": [30000, None, None, None], "units": [None, 2, 0, None]})
    >>> flow, source = average_flows(lots, load_profile("fort-plain"))
    >>> flow.tolist(), source.tolist()
    ([30000.0, 500.0, nan, nan], ['flow_gpd', 'living units', None, None])
    """
    n = len(parcels)

    def number(name: str) -> np.ndarray:
        if name not in parcels.columns:
            return np.full(n, np.nan)
        return pd.to_numeric(parcels[name], errors="coerce").to_numpy(float)

    given, units = number("flow_gpd"), number("units")
    per_unit = float(profile.network.gallons_per_day_per_unit.value)
    by_units = np.where(units > 0, units * per_unit, np.nan)
    use_given = np.isfinite(given) & (given >= 0)
    flow = np.where(use_given, given, by_units)
    source = np.where(use_given, GIVEN, np.where(np.isfinite(by_units), BY_UNITS, None)).astype(object)
    return flow, source
