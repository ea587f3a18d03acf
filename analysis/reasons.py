"""The rule, section and reason sentence for every parcel, built column-wise with Arrow string kernels.

A reason names the main, the street it lies in, the measured distance and the law, so a clerk can read it out
at a board meeting: "Sewer main M-112 (in Main St) lies 62.4 ft from the property line; § 144-4 requires an
occupied property within 100 ft to connect within 90 days of official notice."
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from analysis.arrays import joined_runs
from analysis.profiles import OVERRIDDEN_FLAG, Profile, Rule, citation_clause, flagged

STATUSES = ("connected", "mandated", "in_range_not_abutting", "out_of_range", "unoccupied", "no_public_sewer")
NOTICE_REASONS = {
    "public_health_hazard": "to eliminate a public health hazard",
    "highway_improvement": "to promote a highway improvement program",
}
OCCUPANCY_SOURCES = ("none", "occupied attribute", "buildings", "property class")
# What a distance is measured from: the parcel boundary (the tax map's property line), or the property line as
# Fort Plain's § 144-1 defines it where the data shows it.
MEASURED_FROM = ("parcel boundary", "curbline", "sewer right-of-way edge")


def deadline_sentence(due: str) -> str:
    """The sentence a mandated parcel's reason ends with when a notice date gives it a deadline (an ISO date).

    One wording, so that a page which gives the deadline on a line of its own (the map's popup) can leave this
    sentence out of the reason it shows (``gisapp.words.reason_without_deadline``).

    Examples
    --------
    >>> deadline_sentence("2027-05-30")
    ' Deadline 2027-05-30.'
    """
    return f" Deadline {due}."


def text_column(values: np.ndarray) -> pd.api.extensions.ExtensionArray:
    """Python strings and None as a pandas ``string`` array, made through Arrow.

    The same array ``pd.array(values, dtype="string")`` makes, several times faster on a million mostly empty
    rows (a building's front building, lot type, verdict).
    """
    arrow = pa.array(np.asarray(values, dtype=object), type=pa.large_string(), from_pandas=True)
    return pd.array(arrow, dtype="string")


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


# Why no notice may be given to a parcel (``analysis.mandate.not_noticed_for``): the run's notice reason is not one
# the law allows for a property on a private system (§ 168-22.3C), or the law binds only a property on one
# (§ 196-17E).
# HELD_AS_ASSUMED: held for the notice reason, on a private system by the profile's reading (no private_system column
# value), where HELD_FOR_REASON is by the column's yes.
NOTICED, HELD_FOR_REASON, NOT_BOUND, HELD_AS_ASSUMED = 0, 1, 2, 3


@dataclass(frozen=True)
class PartlyOn:
    """Counting buildings that stand partly on a lot found unoccupied while counted on another (``mandate._partly_on``):
    one row per (lot, building), by lot position, the most square feet first.

    ``how`` says why the building is counted on the other lot: its middle stands there (``MIDDLE``), or its middle
    lies on no lot and more of it stands there (``MOST``), or as much, and that lot's ID comes first (``AS_MUCH``).
    ``marked``: the buildings layer marks it unoccupied, so it is counted on neither lot, though assigned to the other
    (None where no building is so marked).
    """

    MIDDLE, MOST, AS_MUCH = 0, 1, 2

    parcel: np.ndarray
    building_id: np.ndarray
    sqft: np.ndarray
    counted_on: np.ndarray
    how: np.ndarray
    marked: np.ndarray | None = None


@dataclass(frozen=True)
class MarkedUnoccupied:
    """Buildings standing on a lot found unoccupied that would count by their size, or as points, but which the
    buildings layer marks unoccupied (``mandate._marked_unoccupied``): one row per (lot, building), by lot position,
    the most square feet first. ``point``: drawn as a point, so of no size the data gives."""

    parcel: np.ndarray
    building_id: np.ndarray
    sqft: np.ndarray
    point: np.ndarray


_COUNTED_THERE = (
    ", where its middle stands",
    ", which holds more of it",
    ", which holds as much of it and comes first by parcel ID",
)


def _join(*parts) -> pa.Array:
    return pc.binary_join_element_wise(*parts, "")


@dataclass(frozen=True)
class _Facts:
    """What the reason sentences are made of: the measurements per parcel and the profile's words, worked out once."""

    profile: Profile
    threshold_ft: float | None
    distance_ft: np.ndarray
    main_id: pa.Array
    street: pa.Array
    occupied_source: np.ndarray
    property_class: pa.Array | None
    connected_source: str | None
    held: np.ndarray | None
    measured_from: np.ndarray | None
    boundary_ft: np.ndarray | None
    due: str | None
    notice_rule: str
    unnoticed: np.ndarray | None = None  # no notice may be given for the run's reason (``mandate.not_noticed_for``)
    notice_reason: str | None = None
    partly_on: PartlyOn | None = None
    marked_unoccupied: MarkedUnoccupied | None = None

    @property
    def limit(self) -> str:
        return f"{self.threshold_ft:g} ft" if self.threshold_ft is not None else ""


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
    unnoticed: np.ndarray | None = None,
    partly_on: PartlyOn | None = None,
    marked_unoccupied: MarkedUnoccupied | None = None,
) -> dict[str, pa.Array]:
    """``rule``, ``section``, ``reason`` and ``deadline`` columns; ``status_code`` indexes ``STATUSES``.

    ``partly_on``: the buildings that stand partly on a lot found unoccupied while counted on another; that lot's
    reason names them rather than say no building stands on it. ``marked_unoccupied``: the buildings on such a lot
    that would count by their size but which the buildings layer marks unoccupied; its reason names them too.

    ``unnoticed``: the parcels to which no notice may be given for ``notice_reason`` (Poughkeepsie's § 168-22.3C, a
    property on a private system; ``analysis.mandate.not_noticed_for``): they get no deadline, and their reason says
    why, as the letters hold them back.

    Each status's sentences are built on its own rows only, then put back in parcel order with one take.
    """
    md = profile.mandate
    n = len(status_code)
    due = None
    if notice_date is not None and md.notice_period_days.value is not None:
        due = md.notice_period_days.period_end(notice_date).isoformat()
    facts = _Facts(
        profile,
        threshold_ft,
        distance_ft,
        main_id,
        street,
        occupied_source,
        property_class,
        connected_source,
        held,
        measured_from,
        boundary_ft,
        due,
        _notice_rule(profile, notice_reason),
        unnoticed,
        notice_reason,
        partly_on,
        marked_unoccupied,
    )
    order = np.argsort(status_code, kind="stable")
    bounds = np.searchsorted(status_code[order], np.arange(len(STATUSES) + 1))
    pieces = [
        _SENTENCES[status](facts, order[bounds[i] : bounds[i + 1]])
        for i, status in enumerate(STATUSES)
        if bounds[i + 1] > bounds[i]
    ]
    inverse = np.empty(n, dtype=np.int64)
    inverse[order] = np.arange(n)
    # One array first, then reordered: Arrow's take on the chunked pieces was ten times slower (0.4-0.6 s at 1M).
    # Large strings, whose offsets do not overflow at 2 GB of text (ten million parcels' reasons).
    whole = pa.concat_arrays([pa.array([], pa.large_string())] + [piece.cast(pa.large_string()) for piece in pieces])
    reason = pc.take(whole, pa.array(inverse))

    rules = _rules(profile)
    code = pa.array(status_code)
    mandated = pc.equal(code, STATUSES.index("mandated"))
    if unnoticed is not None:  # no notice, so no deadline and no notice reason, for these
        mandated = pc.and_(mandated, pa.array(np.asarray(unnoticed) == 0))
    none = pa.nulls(n, pa.string())
    section = pc.take(pa.array([rules[s][1] for s in STATUSES]), code)
    # No public sewer: the section the reason cites, the service area's where the parcel is held by it (§ 196-17A),
    # else what counts as a public sewer; not the distance's, flagged "value set by the user" beside a reason that
    # never spoke of a distance (a tester).
    sewerless = pc.equal(code, STATUSES.index("no_public_sewer"))
    held_here = pa.array(np.asarray(held, dtype=bool)) if held is not None else pa.repeat(False, n)
    area, counted = profile.mandate.applies_within.citation, profile.sewers.count_private.citation
    section = pc.if_else(sewerless, pc.if_else(held_here, area, counted), section)
    return {
        "rule": pc.take(pa.array([rules[s][0] for s in STATUSES]), code),
        "section": section,
        "reason": reason,
        "deadline": pc.if_else(mandated, due, none) if due else none,
        "notice_reason": pc.if_else(mandated, notice_reason, none) if notice_reason else none,
    }


def _rules(profile: Profile) -> dict[str, tuple[str, str]]:
    """Each status's rule key and the section that decides it, as the section column gives it (``_section``)."""
    md = profile.mandate
    distance, abutting, occupied = md.distance_ft, md.requires_abutting_street, md.requires_occupied_building
    return {
        "connected": ("already_connected", _section(distance)),
        "no_public_sewer": ("no_public_sewer", _section(distance)),
        "unoccupied": ("occupancy", _section(occupied)),
        "out_of_range": ("distance", _section(distance)),
        # the reason says the distance too ("within 150 ft, the distance set for this run")
        "in_range_not_abutting": ("abutting_street", _section(abutting, distance)),
        "mandated": (
            "connection_required",
            _section(distance, abutting, occupied, md.notice_period_days, md.notice_reasons),
        ),
    }


def _section(rule: Rule, *cited: Rule) -> str:
    """``rule``'s citation, flagged "value set by the user" where it or any other rule the status rests on from the
    same section (``cited``) was set for the run.

    With only the period set (``mandate.notice_period_days=60`` under Fort Plain), a mandated parcel's section read
    "§ 144-4" unflagged, beside a reason giving 60 days as the run's: a board reading the section column did not see
    that the run changed what § 144-4 states, as it did when the distance was set.
    """
    set_here = any(r.overridden and r.section == rule.section for r in (rule, *cited))
    return flagged(rule.citation, OVERRIDDEN_FLAG if set_here else "")


def _notice_rule(profile: Profile, notice_reason: str | None) -> str:
    """The sentence on why a notice may be given, where the law limits the reasons (§ 168-22.2G)."""
    md = profile.mandate
    if not md.notice_reasons.value:
        return ""
    chosen = NOTICE_REASONS.get(notice_reason or "", "")
    if chosen:
        return f" Notice given {chosen} {md.notice_reasons.cited}."
    allowed = " or ".join(NOTICE_REASONS[r] for r in md.notice_reasons.value)
    return f" A notice may be given only {allowed} {md.notice_reasons.cited}."


def _from_line(facts: _Facts, rows: np.ndarray) -> pa.Array:
    """ " ft from the property line", or from the curbline or sewer right-of-way edge with the boundary's too."""
    plain = pa.scalar(" ft from the property line", pa.string())
    if facts.measured_from is None or not np.asarray(facts.measured_from)[rows].any():
        return pa.repeat(plain, len(rows))
    kind = np.asarray(facts.measured_from)[rows]
    sec_line = citation_clause(facts.profile.mandate.measured_from.citation)
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
    boundary = _join(words, feet_text(np.asarray(facts.boundary_ft)[rows]), " ft from the parcel boundary")
    return pc.if_else(pa.array(kind > 0), boundary, plain)


def _connected(facts: _Facts, rows: np.ndarray) -> pa.Array:
    source = facts.connected_source or "connected attribute"
    text = pa.scalar(f"Already connected to the public sewer (from the {source}).", pa.string())
    return pa.repeat(text, len(rows))


def _no_public_sewer(facts: _Facts, rows: np.ndarray) -> pa.Array:
    """No counting main at all, or outside the service area (or in a part not yet served)."""
    area = facts.profile.mandate.applies_within
    none_text = pa.scalar(
        "No public sanitary sewer main in the data; storm, abandoned and (by this profile) "
        f"private or combined mains do not count {facts.profile.sewers.count_private.cited}.",
        pa.string(),
    )
    area_text = pa.scalar(
        f"Outside {area.value}, or in a part of it where public sewer is not yet available: "
        f"no connection can be required {area.cited}.",
        pa.string(),
    )
    if facts.held is None:
        return pa.repeat(none_text, len(rows))
    return pc.if_else(pa.array(np.asarray(facts.held)[rows]), area_text, none_text)


def _unoccupied(facts: _Facts, rows: np.ndarray) -> pa.Array:
    """Why the parcel counts as unoccupied: the source that decided, in words."""
    min_sqft = f"{facts.profile.measurement.min_occupied_building_sqft.value:g}"
    src = pa.array(facts.occupied_source[rows])
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
    if facts.property_class is not None:
        klass = pc.fill_null(pc.take(facts.property_class, pa.array(rows)), "")
        why = pc.if_else(pc.equal(src, 3), _join(why, klass, " is vacant, wild or park land"), why)
        # The buildings layer decides, but the assessment roll says a dwelling stands there (2xx, residential): said,
        # so a house missing from the layer is looked for rather than left unmandated without a word (a tester).
        dwelling = pc.and_(pc.equal(src, 2), pc.starts_with(pc.utf8_trim_whitespace(klass), "2"))
        why = pc.if_else(
            dwelling,
            _join(
                why,
                "; yet the assessment roll's property class ",
                pc.utf8_trim_whitespace(klass),
                " is a residential property: if a house stands there, the buildings layer lacks it",
            ),
            why,
        )
    head = "No building used for human occupancy, employment or recreation on the parcel ("
    partly, marked = _partly_words(facts, rows), _marked_words(facts, rows)
    if partly is not None or marked is not None:
        # A building across the lot line, counted on the lot where its middle stands, or one on the lot that the
        # buildings layer marks unoccupied: "no building ... stands on it" was false, and the owner would say so at
        # the board meeting. Each is named, and the rest said of others.
        unsaid = pa.nulls(len(rows), pa.string())
        partly = unsaid if partly is None else partly
        marked = unsaid if marked is None else marked
        by_buildings = pc.equal(src, 2)
        named = pc.and_(by_buildings, pc.or_(pc.is_valid(partly), pc.is_valid(marked)))
        both = pc.and_(pc.is_valid(partly), pc.is_valid(marked))
        said = pc.if_else(both, _join(partly, "; ", marked), pc.fill_null(pc.coalesce(partly, marked), ""))
        others = f"no other building of {min_sqft} sq ft or more, nor one marked occupied, stands on it"
        why = pc.if_else(named, _join(said, "; ", others), why)
        head = pc.if_else(
            pc.and_(by_buildings, pc.is_valid(partly)),
            "No building used for human occupancy, employment or recreation is counted on the parcel (",
            head,
        )
    return _join(
        head,
        why,
        f"); {facts.profile.mandate.requires_occupied_building.citation} applies only to occupied property.",
    )


def _partly_words(facts: _Facts, rows: np.ndarray) -> pa.Array | None:
    """For the lots ``rows``, what stands partly on each while counted on another lot ("building B-12 covers 360 sq
    ft of it but is counted on parcel 101, where its middle stands"; several joined by "; "), or assigned to it and
    marked unoccupied ("building B-12 covers 360 sq ft of it but the buildings layer marks it unoccupied, and it is
    assigned to parcel 101, where its middle stands": it is counted on neither), null where nothing does; None where
    nothing does on any."""
    partly = facts.partly_on
    if partly is None or not len(partly.parcel):
        return None
    sqft = pc.cast(pa.array(np.rint(partly.sqft).astype(np.int64)), pa.string())
    marked = np.zeros(len(partly.parcel), bool) if partly.marked is None else np.asarray(partly.marked, bool)
    said = _join(
        "building ",
        pa.array(partly.building_id, pa.string()),
        " covers ",
        sqft,
        pc.if_else(
            pa.array(marked),
            " sq ft of it but the buildings layer marks it unoccupied, and it is assigned to parcel ",
            " sq ft of it but is counted on parcel ",
        ),
        pa.array(partly.counted_on, pa.string()),
        pc.take(pa.array(_COUNTED_THERE), pa.array(partly.how)),
    )
    return _per_lot(said, partly.parcel, rows)


def _marked_words(facts: _Facts, rows: np.ndarray) -> pa.Array | None:
    """For the lots ``rows``, the buildings on each that would count by their size but which the buildings layer
    marks unoccupied ("building B-3 of 1,200 sq ft stands on it but the buildings layer marks it unoccupied";
    several joined by "; "), null where none does; None where none does on any."""
    marked = facts.marked_unoccupied
    if marked is None or not len(marked.parcel):
        return None
    size = pc.if_else(
        pa.array(np.asarray(marked.point, dtype=bool)), "", _join(" of ", grouped_text(marked.sqft), " sq ft")
    )
    said = _join(
        "building ",
        pa.array(marked.building_id, pa.string()),
        size,
        " stands on it but the buildings layer marks it unoccupied",
    )
    return _per_lot(said, marked.parcel, rows)


def _per_lot(said: pa.Array, lots: np.ndarray, rows: np.ndarray) -> pa.Array:
    """For the lots ``rows``, the texts ``said`` of each (``lots``: each text's lot, in runs, ascending) joined by
    "; ", null where a lot has none."""
    joined = joined_runs(said.to_numpy(zero_copy_only=False), lots, "; ")
    heads = np.flatnonzero(np.r_[True, lots[1:] != lots[:-1]])
    lots, texts = lots[heads], joined[heads]
    at = np.clip(np.searchsorted(lots, rows), 0, len(lots) - 1)
    found = lots[at] == rows
    return pc.if_else(pa.array(found), pa.array(texts[at], pa.string()), pa.nulls(len(rows), pa.string()))


def grouped_text(values: np.ndarray) -> pa.Array:
    """Whole numbers (rounded) as text with a comma between thousands, a loop over the groups of digits only.

    Examples
    --------
    >>> grouped_text(np.array([0, 999.6, 1200, 1234567])).to_pylist()
    ['0', '1,000', '1,200', '1,234,567']
    """
    whole = np.rint(np.abs(np.asarray(values, dtype=float))).astype(np.int64)
    out = pa.repeat(pa.scalar("", pa.string()), len(whole))
    groups = len(str(int(whole.max()))) // 3 + 1 if len(whole) else 1
    for k in range(groups - 1, -1, -1):
        group = pc.cast(pa.array((whole // 1000**k) % 1000), pa.string())
        above = pa.array(whole >= 1000 ** (k + 1))  # a group of digits stands before this one
        piece = _join(pc.if_else(above, ",", ""), pc.if_else(above, pc.utf8_lpad(group, 3, "0"), group))
        out = pc.if_else(pa.array((whole >= 1000**k) | (k == 0)), _join(out, piece), out)
    return out


def _main_words(facts: _Facts, rows: np.ndarray) -> tuple[pa.Array, pa.Array, pa.Array]:
    """The main's ID, " (in STREET)" where the main lies in a named street, and the distance in feet."""
    take = pa.array(rows)
    main = pc.fill_null(pc.take(facts.main_id, take), "")
    street_here = pc.take(facts.street, take)
    in_street = pc.if_else(pc.is_null(street_here), "", _join(" (in ", pc.fill_null(street_here, ""), ")"))
    return main, in_street, feet_text(facts.distance_ft[rows], facts.threshold_ft)


def _out_of_range(facts: _Facts, rows: np.ndarray) -> pa.Array:
    main, in_street, dist = _main_words(facts, rows)
    # from the distance as the results give it, to the hundredth near the limit: "0.0 ft beyond" read as at it
    beyond = feet_text(np.round(facts.distance_ft[rows], 2) - (facts.threshold_ft or 0.0), 0.0)
    return _join(
        "Nearest public sanitary main ",
        main,
        in_street,
        " lies ",
        dist,
        _from_line(facts, rows),
        ", ",
        beyond,
        f" ft beyond {_limit_of(facts)}; no connection can be required.",
    )


def _limit_of(facts: _Facts) -> str:
    """The distance a parcel lies beyond: "the 100 ft of § 144-4", or, where the run set another than the law's,
    "150 ft, the distance set for this run (§ 144-4 sets 100 ft)": "the 150 ft of § 144-4" credited the law with it."""
    distance = facts.profile.mandate.distance_ft
    if distance.overridden:  # Wappinger's too: "the 150 ft of § 196-17E (value set by the user)" credited § 196-17E
        return f"{facts.limit}, {_distance_for_run(distance)}"
    return f"the {facts.limit} of {distance.citation}"


def _distance_for_run(distance) -> str:
    """ "the distance set for this run (§ 144-4 sets 100 ft)", "(§ 196-17E sets none)" where the law gives none."""
    return f"the distance set for this run ({distance.law_sets('ft')})"


def _in_range_not_abutting(facts: _Facts, rows: np.ndarray) -> pa.Array:
    main, _, dist = _main_words(facts, rows)
    return _join(
        "Main ",
        main,
        " lies ",
        dist,
        _from_line(facts, rows),
        # the distance cited where it was set for the run: "within 250 ft (§ 144-4)" read as the ordinance's own
        f", within {facts.limit}{_set_for_run(facts.profile.mandate.distance_ft)}, but not in a street, alley or "
        f"right-of-way the parcel abuts {facts.profile.mandate.requires_abutting_street.cited}; no connection can be "
        "required.",
    )


def _set_for_run(rule) -> str:
    """ ", the distance set for this run (§ 144-4 sets 100 ft)" where the run replaced the law's distance, or
    "(§ 196-17E sets none)" where it set one the law does not state; "" for the law's own."""
    return f", {_distance_for_run(rule)}" if rule.overridden else ""


def _over(facts: _Facts, rows: np.ndarray) -> pa.Array:
    """ " (0.01 ft over 100 ft, counted as at it: within the profile's 0.01 ft measuring tolerance)" where a parcel is
    mandated over the distance by no more than the tolerance; "" for the rest. "100.01 ft ... requires ... within
    100 ft" read as a contradiction."""
    if facts.threshold_ft is None:
        return pa.repeat(pa.scalar("", pa.string()), len(rows))
    over = np.round(facts.distance_ft[rows], 2) - facts.threshold_ft
    tol = facts.profile.measurement.distance_tolerance_ft
    said = _join(
        " (",
        feet_text(over, 0.0),
        f" ft over {facts.limit}, counted as at it: within the profile's {tol.value:g} ft measuring tolerance)",
    )
    return pc.if_else(pa.array(over > 1e-9), said, "")


def _notice_words(period) -> str:
    """ "official notice" where the law's words for the period say it (§ 144-4, § 168-22.2G "after the date of
    official notice"); "the notice" where they do not (Wappinger's § 196-17E names no notice at all)."""
    return "official notice" if "official notice" in period.quote else "the notice"


def _duty(facts: _Facts) -> str:
    """The clause after the distance: the law's duty, the distance and the period, each cited where it comes from.

    Where the law sets the distance (§ 144-4, § 168-22.2G): "; § 144-4 requires an occupied property within 100 ft to
    connect within 90 days of official notice." Where it sets none (Wappinger's § 196-17E, a town setting), that
    sentence put the run's distance, the profile's occupancy test and "official notice" in the section's mouth (a
    tester): the distance is said as the run's, the duty in the law's own words, the period as its act or the run
    sets it (``_duty_in_the_laws_words``).
    """
    md = facts.profile.mandate
    if md.distance_ft.town_setting or md.distance_ft.law_set:
        # a distance the run set: "§ 144-4 (value set by the user) requires ... within 150 ft" credited the law
        # with a requirement it does not make at 150 ft (a village attorney would object)
        return _duty_in_the_laws_words(facts)
    period = md.notice_period_days
    which, untested = _occupancy_words(md.requires_occupied_building)
    if period.law_set and not period.act:  # the law's duty, then the run's period beside the law's own
        return (
            f"; {md.distance_ft.citation} requires {which} within {facts.limit} to connect{untested}."
            f"{_period_words(period)}"
        )
    if period.value is not None:
        when = f"within {period.value} days of {_notice_words(period)}"
        if period.act:  # the town's resolution set the days: cited as the letters cite it (analysis.notices.Period)
            sets = f"; {period.section} sets no period" if period.town_setting else f", under {period.section}"
            when += f" ({period.act}{sets})"
    else:
        when = f"when notified (no period set: {citation_clause(md.notice_period_days.citation)})"
    return f"; {md.distance_ft.citation} requires {which} within {facts.limit} to connect {when}{untested}."


def _occupancy_words(occupied) -> tuple[str, str]:
    """Whom the law's duty binds, in its words ("an occupied property", or "a property" where it tests no
    occupancy), and the clause said after it where the run set the test off: "; this run did not test occupancy (a
    value set for the run)". A run with requires_occupied_building set false read "§ 144-4 requires a property
    within 100 ft to connect", which § 144-4 does not say: it binds "any house, building or property used for human
    occupancy"."""
    law = occupied.law_value if occupied.overridden else occupied.value
    which = "an occupied property" if law else "a property"
    return which, (_UNTESTED if law and not occupied.value else "")


_UNTESTED = "; this run did not test occupancy (a value set for the run)"


def _duty_in_the_laws_words(facts: _Facts) -> str:
    """The duty of a law that sets no distance (Wappinger's § 196-17E: "At such time as a public sewer becomes
    available to a property served by a private wastewater disposal system ... a direct connection shall be made"),
    or whose distance the run replaced (Fort Plain's § 144-4 at 150 ft): the distance as the run's ("within 100 ft,
    the distance set for this run (§ 196-17E sets none)", "(§ 144-4 sets 100 ft)"), the law quoted, and the period
    as the Town's act sets it, as the run sets it, or as unset."""
    md = facts.profile.mandate
    distance = md.distance_ft
    if distance.overridden:
        said = f", within {facts.limit}, {_distance_for_run(distance)}."
    else:
        said = f", within {facts.limit}, the distance this profile reads it as ({distance.section} sets none)."
    if distance.quote:
        said += f' {distance.section}: "{distance.quote.rstrip(".")}."'
    if md.requires_occupied_building.overridden and not md.requires_occupied_building.value:
        # the law quoted says nothing of occupancy: that the run did not test it is said on its own
        said += " This run did not test occupancy (a value set for the run)."
    return said + _period_words(md.notice_period_days)


def _period_words(period) -> str:
    """The sentence on the period to connect, beside a duty that does not state it: " The period to connect: within
    60 days of official notice (the period set for this run; § 144-4 sets 90 days).", as the Town's act or the law
    sets it, or " No period to connect is set (...)."."""
    if period.value is None:
        return f" No period to connect is set ({period.section} sets none; the Town sets it)."
    if period.act:  # the town's resolution set the days: cited as the letters cite it (analysis.notices.Period)
        basis = (
            f"{period.act}; {period.section} sets no period"
            if period.town_setting
            else (f"{period.act}, under {period.section}")
        )
    elif period.overridden or period.town_setting:
        basis = f"the period set for this run; {period.law_sets('days')}"
    else:
        basis = citation_clause(period.citation)
    return f" The period to connect: within {period.value} days of {_notice_words(period)} ({basis})."


def _mandated(facts: _Facts, rows: np.ndarray) -> pa.Array:
    """The main, the distance, the section and the period to connect in (and the deadline, given a notice date)."""
    main, in_street, dist = _main_words(facts, rows)
    duty = _duty(facts)
    text = duty + facts.notice_rule + (deadline_sentence(facts.due) if facts.due else "")
    said = _join("Sewer main ", main, in_street, " lies ", dist, _from_line(facts, rows), _over(facts, rows), text)
    why = None if facts.unnoticed is None else np.asarray(facts.unnoticed)[rows]
    if why is None or not why.any():
        return said
    # Poughkeepsie's § 168-22.3C: a property on a private system is noticed only for a public health hazard.
    notices = facts.profile.notices
    rule, assumed = notices.private_system_reasons, notices.private_system_assumed
    # which says it is on a private system, the data or the profile's reading: "(by its private_system column, else
    # as § 168-22.3A reads it)" left a clerk to guess (a tester)
    by = pc.if_else(
        pa.array(why == HELD_AS_ASSUMED),
        f"its private_system column does not say, and {assumed.section} is read so for an occupied property not "
        "connected to the public sewer",
        "by its private_system column",
    )
    held = _join(
        duty + " It is served by a private sewage disposal system (",
        by,
        f'), and {rule.section} says "{rule.quote.rstrip(".")}": no notice may be given to it '
        f"{NOTICE_REASONS.get(facts.notice_reason or '', 'for this reason')}, so no deadline is set.",
    )
    # Wappinger's § 196-17E binds only a property served by a private system: one whose column says no is not
    # bound, and is told so in place of the duty (no period, no deadline).
    only = notices.private_system_only
    unbound = (
        f", within {facts.limit}. Its private_system column says it is not served by a private wastewater disposal "
        f'system, and {only.section} binds only "{only.quote.rstrip(".")}": no notice is given to it under that '
        "section, so no deadline is set."
    )
    head = _join("Sewer main ", main, in_street, " lies ", dist, _from_line(facts, rows), _over(facts, rows))
    chosen = pc.if_else(pa.array(why == NOT_BOUND), _join(head, unbound), _join(head, held))
    return pc.if_else(pa.array(why > 0), chosen, said)


_SENTENCES = {
    "connected": _connected,
    "no_public_sewer": _no_public_sewer,
    "unoccupied": _unoccupied,
    "out_of_range": _out_of_range,
    "in_range_not_abutting": _in_range_not_abutting,
    "mandated": _mandated,
}
