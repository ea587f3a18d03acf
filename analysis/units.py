"""Units: distances are reported in US survey feet whatever the projected CRS's own unit."""

from __future__ import annotations

from pyproj import CRS

US_SURVEY_FOOT_M = 1200 / 3937


def feet_per_unit(crs: CRS) -> float:
    """US survey feet in one unit of the CRS's first axis: exactly 1.0 for EPSG:2260, 3.2808... for metres."""
    ratio = crs.axis_info[0].unit_conversion_factor / US_SURVEY_FOOT_M
    return 1.0 if abs(ratio - 1.0) < 1e-12 else ratio
