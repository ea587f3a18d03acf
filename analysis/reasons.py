"""The rule, section and reason sentence for every parcel, built column-wise with Arrow string kernels.

A reason names the main, the street it lies in, the measured distance and the law, so a clerk can read it out
at a board meeting: "Sewer main M-112 (in Main St) lies 62.4 ft from the property line; § 144-4 requires an
occupied property within 100 ft to connect within 90 days of official notice."
"""

from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from analysis.profiles import Profile

STATUSES = ("connected", "mandated", "in_range_not_abutting", "out_of_range", "unoccupied", "no_public_sewer")
NOTICE_REASONS = {
    "public_health_hazard": "to eliminate a public health hazard",
    "highway_improvement": "to promote a highway improvement program",
}
OCCUPANCY_SOURCES = ("none", "occupied attribute", "buildings", "property class")
# What a distance is measured from: the parcel boundary (the tax map's property line), or the property line as
# Fort Plain's § 144-1 defines it where the data shows it.
MEASURED_FROM = ("parcel boundary", "curbline", "sewer right-of-way edge")


def feet_text(values: np.ndarray, threshold: float | None = None) -> pa.Array:
    """Distances as text with one decimal; two where one decimal would round onto the threshold."""
    values = np.nan_to_num(np.asarray(values, dtype=float))
    one = _fixed(values, 1)
    if threshold is None:
        return one
    near = pa.array(np.abs(values - threshold) < 0.1)
    return pc.if_else(near, _fixed(values, 2), one)


def _fixed(values: np.ndarray, decimals: int) -> pa.Array:
    scale = 10**decimals
    scaled = np.rint(np.abs(values) * scale).astype(np.int64)
    whole = pc.cast(pa.array(scaled // scale), pa.string())
    frac = pc.utf8_lpad(pc.cast(pa.array(scaled % scale), pa.string()), decimals, "0")
    sign = pa.array(np.where(values < 0, "-", ""))
    return pc.binary_join_element_wise(sign, whole, ".", frac, "")


def _join(*parts) -> pa.Array:
    return pc.binary_join_element_wise(*parts, "")


def explain(
    status_code: np.ndarray,
    *,
    profile: Profile,
    threshold_ft: float | None,
    distance_ft: np.ndarray,
    main_id: pa.Array,
    street: pa.Array,
    occupied_source: np.ndarray,
    property_class: pa.Array | None,
    connected_source: str | None,
    notice_date: dt.date | None,
    notice_reason: str | None,
    held=None,
    measured_from: np.ndarray | None = None,
    boundary_ft: np.ndarray | None = None,
) -> dict[str, pa.Array]:
    """``rule``, ``section``, ``reason`` and ``deadline`` columns; ``status_code`` indexes ``STATUSES``."""
    md = profile.mandate
    n = len(status_code)
    sec_dist = md.distance_ft.citation
    sec_abut = md.requires_abutting_street.citation
    sec_occ = md.requires_occupied_building.citation
    limit = f"{threshold_ft:g} ft" if threshold_ft is not None else ""

    if md.notice_period_days.value is not None:
        when = f"within {md.notice_period_days.value} days of official notice"
    else:
        when = f"when notified (no period set: {md.notice_period_days.citation})"
    notice_rule = ""
    if md.notice_reasons.value:
        chosen = NOTICE_REASONS.get(notice_reason or "", "")
        notice_rule = (
            f" Notice given {chosen} ({md.notice_reasons.citation})."
            if chosen
            else " A notice may be given only "
            + " or ".join(NOTICE_REASONS[r] for r in md.notice_reasons.value)
            + f" ({md.notice_reasons.citation})."
        )
    due = None
    if notice_date is not None and md.notice_period_days.value is not None:
        due = (notice_date + dt.timedelta(days=int(md.notice_period_days.value))).isoformat()
    min_sqft = f"{profile.measurement.min_occupied_building_sqft.value:g}"
    sec_line = md.measured_from.citation

    def from_line(rows: np.ndarray) -> pa.Array:
        """ " ft from the property line", or from the curbline or sewer right-of-way edge with the boundary's too."""
        plain = pa.scalar(" ft from the property line", pa.string())
        if measured_from is None or not np.asarray(measured_from)[rows].any():
            return pa.repeat(plain, len(rows))
        kind = np.asarray(measured_from)[rows]
        words = pc.take(
            pa.array(
                [
                    " ft from the property line",
                    f" ft from the curbline in front of the property (the property line, {sec_line}) and ",
                    f" ft from the edge of the sewer right-of-way (the property line, {sec_line}) and ",
                ]
            ),
            pa.array(kind),
        )
        boundary = _join(words, feet_text(np.asarray(boundary_ft)[rows]), " ft from the parcel boundary")
        return pc.if_else(pa.array(kind > 0), boundary, plain)

    def sentence(status: str, rows: np.ndarray) -> pa.Array:
        """The reason for the parcels at ``rows``, all of one status: only their strings are built."""
        take = pa.array(rows)
        if status == "connected":
            return pa.repeat(
                pa.scalar(
                    f"Already connected to the public sewer (from the {connected_source or 'connected attribute'}).",
                    pa.string(),
                ),
                len(rows),
            )
        if status == "no_public_sewer":
            none_text = pa.scalar(
                "No public sanitary sewer main in the data; storm, abandoned and (by this profile) "
                "private or combined mains do not count "
                f"({profile.sewers.count_private.citation}).",
                pa.string(),
            )
            area = md.applies_within
            area_text = pa.scalar(
                f"Outside {area.value}, or in a part of it where public sewer is not yet available: "
                f"no connection can be required ({area.citation}).",
                pa.string(),
            )
            if held is None:
                return pa.repeat(none_text, len(rows))
            return pc.if_else(pa.array(np.asarray(held)[rows]), area_text, none_text)
        if status == "unoccupied":
            src = pa.array(occupied_source[rows])
            why = pc.take(
                pa.array(
                    [
                        "no occupancy information",
                        "the parcel's occupied attribute says no",
                        f"no building of {min_sqft} sq ft or more, nor one marked occupied, stands on it",
                        "property class ",
                    ]
                ),
                src,
            )
            if property_class is not None:
                klass = pc.fill_null(pc.take(property_class, take), "")
                why = pc.if_else(pc.equal(src, 3), _join(why, klass, " is vacant, wild or park land"), why)
            return _join(
                "No building used for human occupancy, employment or recreation on the parcel (",
                why,
                f"); {sec_occ} applies only to occupied property.",
            )
        main = pc.fill_null(pc.take(main_id, take), "")
        street_here = pc.take(street, take)
        in_street = pc.if_else(pc.is_null(street_here), "", _join(" (in ", pc.fill_null(street_here, ""), ")"))
        dist = feet_text(distance_ft[rows], threshold_ft)
        if status == "out_of_range":
            beyond = feet_text(distance_ft[rows] - (threshold_ft or 0.0))
            return _join(
                "Nearest public sanitary main ",
                main,
                in_street,
                " lies ",
                dist,
                from_line(rows),
                ", ",
                beyond,
                f" ft beyond the {limit} of {sec_dist}; no connection can be required.",
            )
        if status == "in_range_not_abutting":
            return _join(
                "Main ",
                main,
                " lies ",
                dist,
                from_line(rows),
                f", within {limit}, but not in "
                f"a street, alley or right-of-way the parcel abuts ({sec_abut}); no connection can be "
                "required.",
            )
        text = (
            f"; {sec_dist} requires an occupied property within {limit} to connect {when}."
            + notice_rule
            + (f" Deadline {due}." if due else "")
        )
        return _join("Sewer main ", main, in_street, " lies ", dist, from_line(rows), text)

    rules = {
        "connected": ("already_connected", sec_dist),
        "no_public_sewer": ("no_public_sewer", sec_dist),
        "unoccupied": ("occupancy", sec_occ),
        "out_of_range": ("distance", sec_dist),
        "in_range_not_abutting": ("abutting_street", sec_abut),
        "mandated": ("connection_required", sec_dist),
    }

    # Build each status's sentences on its own rows, then put them back in parcel order with one take.
    order = np.argsort(status_code, kind="stable")
    bounds = np.searchsorted(status_code[order], np.arange(len(STATUSES) + 1))
    pieces = [
        sentence(status, order[bounds[i] : bounds[i + 1]])
        for i, status in enumerate(STATUSES)
        if bounds[i + 1] > bounds[i]
    ]
    inverse = np.empty(n, dtype=np.int64)
    inverse[order] = np.arange(n)
    # A chunked array is reordered without first copying the pieces into one.
    reason = pc.take(pa.chunked_array(pieces, type=pa.string()), pa.array(inverse)) if n else pa.array([], pa.string())

    code = pa.array(status_code)
    rule = pc.take(pa.array([rules[s][0] for s in STATUSES]), code)
    section = pc.take(pa.array([rules[s][1] for s in STATUSES]), code)
    mandated = pc.equal(code, STATUSES.index("mandated"))
    none = pa.nulls(n, pa.string())
    return {
        "rule": rule,
        "section": section,
        "reason": reason,
        "deadline": pc.if_else(mandated, due, none) if due else none,
        "notice_reason": pc.if_else(mandated, notice_reason, none) if notice_reason else none,
    }
