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


def zero_flows_found_occupied(parcels: pd.DataFrame) -> np.ndarray:
    """The IDs of the parcels the analysis found occupied (``occupied`` of the mandate results) by a building on the
    lot or by its property class whose ``flow_gpd`` is 0, in the parcels' order.

    A 0 is taken as given (``average_flows``): such a parcel sends nothing, and every other parcel's share of the
    system's flow comes out larger. Loading warns of a 0 on a lot the parcels layer itself marks occupied or gives
    living units (``layers.validate._zero_flows``); a lot found occupied only by the analysis is known so only
    after it, and its 0 was counted without a word. Those the loading named (occupied by the layer's own
    ``occupied`` attribute, or holding living units) are left out here, so no parcel is warned of twice.

    Examples
    --------
    >>> found = pd.DataFrame({"parcel_id": ["A", "B", "C", "D"], "flow_gpd": [0, 0, 0, 120],
    ...     "units": [None, None, 2, None], "occupied": [True, False, True, True],
    ...     "occupied_source": ["buildings", "buildings", "buildings", "property class"]})
    >>> zero_flows_found_occupied(found).tolist()
    ['A']
    """
    if not {"flow_gpd", "occupied", "parcel_id"} <= set(parcels.columns):
        return np.array([], dtype=object)
    zero = pd.to_numeric(parcels["flow_gpd"], errors="coerce").to_numpy(float) == 0
    occupied = parcels["occupied"].astype(object).eq(True).to_numpy(bool)
    # named at loading: occupied by the layer's own attribute, or holding living units
    by_layer = (
        parcels["occupied_source"].astype(object).eq("occupied attribute").to_numpy(bool)
        if "occupied_source" in parcels.columns
        else np.ones(len(parcels), bool)
    )
    units = (
        pd.to_numeric(parcels["units"], errors="coerce").to_numpy(float) > 0
        if "units" in parcels.columns
        else np.zeros(len(parcels), bool)
    )
    found = zero & occupied & ~by_layer & ~units
    return parcels["parcel_id"].astype(str).to_numpy(object)[found]
