"""What a property discharges: grease interceptors by property class, industrial users by flow.

Two duties the ordinances tie to what a property is and how much it sends to the sewer, checked for the parcels
connected or required to connect (status ``connected`` or ``mandated``):

- **Grease interceptors.** Wappinger § 196-19F(2): "Grease traps shall be provided by all food preparation
  services, processing operations and restaurants": ``required``. Fort Plain § 144-23A and Poughkeepsie
  § 168-22.5E require one only when the engineer (Superintendent) finds it necessary, and never for dwelling
  units: ``for_decision``, a case for that officer. Food services are recognised by New York property class
  (``discharges.food_service_classes``, 42x); ``interceptor_exempt_classes`` (dwellings) are never listed.
- **Industrial users.** A parcel's average daily flow is its ``flow_gpd`` where given (metered water use, the
  permit's figure), else its living units times ``network.gallons_per_day_per_unit`` (``analysis.flows``, as the
  sewersheds read it). Fort Plain § 144-1 makes a
  *significant industrial user* of one discharging 25,000 gallons or more per average work day or more than 5% of
  the flow in the system (an establishment: never a dwelling, ``residential_classes``); § 144-25A puts any flow
  above 2% of the village's average daily flow to the engineer's
  review; Poughkeepsie § 168-22.5G(4) one above 10,000 gallons per day to the Superintendent's. The system's flow
  is ``discharges.system_flow_gpd`` where the municipality sets it (the plant's records), else the sewershed
  estimate of every outfall (``analysis.trace.sewershed``) from the same flows. Each listed user gets its control
  manhole (the parcels' ``control_manhole`` column, which ``analysis.trace`` fills from the network). Industrial
  parcels (``industrial_classes``) whose flow is unknown are listed as ``flow_unknown``: no user passes unseen for
  want of data. Where the system's flow is not known (some parcels' flow is unknown), the flow known is a lower
  bound of it, and a share of the bound the most a share can be: an establishment with more than
  ``significant_user_share`` of the flow known is ``possibly_significant``, for review (never ``significant``);
  one with that share or less is certainly not more, and is not flagged. The same for the review by share
  (``flow_review_share``, § 144-25A's 2%): more than it of the flow known is ``possibly_review``, never ``review``.
  The arithmetic of a bound, no new law.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import geopandas as gpd
import numpy as np
import pandas as pd

from analysis.flows import BY_UNITS, GIVEN, average_flows, zero_flows_found_occupied
from analysis.profiles import Profile, citation_clause, citations_clause, joined_citations, split_citations
from analysis.reasons import text_column

GREASE = ("required", "for_decision")
INDUSTRIAL = ("significant", "possibly_significant", "review", "possibly_review", "flow_unknown")
DISCHARGING = ("connected", "mandated")


@dataclass(frozen=True)
class DischargesResult:
    """The parcels with their discharge columns, and a summary (counts, the system flow and where it came from)."""

    parcels: gpd.GeoDataFrame
    summary: dict = field(default_factory=dict)


def assess_discharges(
    parcels: gpd.GeoDataFrame, *, profile: Profile, network=None, connections=None
) -> DischargesResult:
    """Grease interceptors and industrial users for mandate results (``status``; optionally ``property_class``,
    ``units``, ``flow_gpd``, ``control_manhole``).

    ``network`` (an ``analysis.network.SewerNetwork``) gives the system's flow as the sewersheds of its outfalls;
    without one, the flows of all parcels connected or required to connect are added up. ``connections`` are the
    parcels' ``analysis.trace.connect_parcels`` rows, where already found (else they are found here).

    Adds ``discharge_gpd``, ``discharge_source``, ``flow_share_pct``, ``grease_interceptor``, ``industrial_user``,
    ``discharge_duties`` and ``discharge_sections``; the input is not changed.

    Examples
    --------
    >>> from shapely.geometry import box
    >>> from analysis.profiles import load_profile
    >>> lots = gpd.GeoDataFrame({"parcel_id": ["DINER", "MILL", "HOUSE"], "status": ["mandated"] * 3,
    ...     "property_class": ["421", "710", "210"], "units": [None, None, 1], "flow_gpd": [None, 30000, None]},
    ...     geometry=[box(0, 0, 50, 50), box(60, 0, 110, 50), box(120, 0, 170, 50)], crs="EPSG:2260")
    >>> r = assess_discharges(lots, profile=load_profile("wappinger"))
    >>> r.parcels[["parcel_id", "grease_interceptor", "discharge_gpd"]].astype(object).fillna("-").values.tolist()
    [['DINER', 'required', '-'], ['MILL', '-', 30000.0], ['HOUSE', '-', 250.0]]
    >>> load_profile("fort-plain").discharges.significant_user_gpd.value
    25000.0
    >>> assess_discharges(lots, profile=load_profile("fort-plain")).parcels["industrial_user"].tolist()
    [None, 'significant', None]
    """
    rules = profile.discharges
    n = len(parcels)
    status = parcels["status"].astype(str).to_numpy() if "status" in parcels.columns else np.full(n, "")
    discharging = np.isin(status, DISCHARGING)
    klass = (
        parcels["property_class"].astype(object).where(parcels["property_class"].notna(), "").astype(str).str.strip()
        if "property_class" in parcels.columns
        else pd.Series("", index=parcels.index)
    ).reset_index(drop=True)

    flow, source = average_flows(parcels, profile)
    system = _system_flow(parcels, flow, discharging, profile, network, connections)
    # No share of a flow that is not known: judged against the part known, every share comes out too large.
    share = flow / system.gpd if system.gpd and system.gpd > 0 else np.full(n, np.nan)

    grease, grease_text = _grease(klass, discharging, rules)
    industrial, industrial_text, sections_i = _industrial(
        parcels, klass, discharging, flow, source, share, system, profile
    )

    out = parcels.copy()
    out["discharge_gpd"] = np.round(flow, 1)
    out["discharge_source"] = text_column(source)
    out["flow_share_pct"] = np.round(share * 100, 3)
    out["grease_interceptor"] = pd.Series(grease, index=out.index, dtype=object)
    out["industrial_user"] = pd.Series(industrial, index=out.index, dtype=object)
    sections_g = np.where(grease != None, rules.grease_interceptor.citation, "").astype(object)  # noqa: E711
    out["discharge_duties"] = (pd.Series(grease_text) + " " + pd.Series(industrial_text)).str.strip().to_numpy(object)
    out["discharge_sections"] = join_sections(sections_g, sections_i)
    summary = {
        "grease_interceptors": {g: int((grease == g).sum()) for g in GREASE},
        "industrial_users": {k: int((industrial == k).sum()) for k in INDUSTRIAL},
        "system_flow_gpd": None if system.gpd is None else round(system.gpd, 1),
        "system_flow_source": system.source,
        # the flow of the parcels whose flow is known, and how many are not: a lower bound where any is not
        "system_flow_at_least_gpd": round(system.at_least_gpd, 1),
        "system_flow_parcels_unknown": system.unknown,
        "system_flow_parcels_no_outfall": system.no_outfall,
        "flow_given": int((source == GIVEN).sum()),
        "possibly_review_by_units": _possibly_review_by_units(industrial, flow, source, system, rules),
        "zero_flow_found_occupied": _zero_flows_found_occupied(parcels),
    }
    return DischargesResult(out, summary)


def _zero_flows_found_occupied(parcels: gpd.GeoDataFrame) -> dict:
    """The parcels found occupied by the analysis (a building on the lot, its property class) whose ``flow_gpd`` is
    0, which loading did not warn of (``analysis.flows.zero_flows_found_occupied``): how many, and the first IDs.
    Each counts as sending nothing, and every other parcel's share of the system's flow comes out larger (the
    command line, ``--json`` and the Summary page warn of them)."""
    ids = zero_flows_found_occupied(parcels)
    return {"parcels": len(ids), "parcel_ids": ids[:_IDS_KEPT].tolist()}


# The parcel IDs a summary keeps of a warning's parcels: the first, as loading's problems keep them.
_IDS_KEPT = 50


def _possibly_review_by_units(industrial, flow, source, system: SystemFlow, rules) -> dict:
    """The parcels possibly above the review's share by their living units alone, and the gallons a day the parcels
    of unknown flow must send in all for every one of them to be at or under it (None where there are none).

    Where few parcels' flows are known, the bound puts every house of one living unit above 2% of the flow known
    (§ 144-25A): ten houses each "possibly for review" with the same sentence told a board nothing of the houses and
    everything of the unknown flow, which this one number says once (``sewerplan duties`` prints it as one line)."""
    chosen = (industrial == "possibly_review") & (source == BY_UNITS)
    cleared = None
    if chosen.any():
        cleared = float(_needed_gpd(flow[chosen], rules.flow_review_share.value, system).max())
    return {"parcels": int(chosen.sum()), "clear_if_unknown_send_gpd": cleared}


@dataclass(frozen=True)
class SystemFlow:
    """The system's average daily flow (gpd), or None where it is not known, and where it comes from.

    An estimate that would leave out parcels whose flow is unknown (no ``flow_gpd`` given, no living units) is not
    known: ``at_least_gpd`` is the flow of the rest, ``unknown`` how many were left out. Counted as nothing, 87
    parcels of unknown flow made a system of 2,300 gpd in which an ordinary house (300 gpd) was a "significant"
    industrial user at 13% (a tester)."""

    gpd: float | None
    source: str
    at_least_gpd: float
    unknown: int = 0
    # Of ``unknown``, the parcels whose connection reaches no outfall of the network: their flow reaches no plant the
    # network knows, so it is in no sewershed. Counted in neither the flow nor the unknown, they went unsaid.
    no_outfall: int = 0

    def lacking(self) -> str:
        """Which parcels the estimate leaves out, and why, in words."""
        no_flow, out = self.unknown - self.no_outfall, self.no_outfall
        said = []
        if no_flow:
            said.append(f"{'has' if no_flow == 1 else 'have'} no flow given and no living units")
        if out:
            said.append(
                f"{'reaches' if out == 1 else 'reach'} no outfall of the sewer network (the mains below "
                f"{'its' if out == 1 else 'their'} connection lead to no treatment plant in the data)"
            )
        first = no_flow or out
        words = f"{first:,} parcel{'' if first == 1 else 's'} connected or required to connect {said[0]}"
        return words + (f", and {out:,} {said[1]}" if len(said) > 1 else "")

    def left_out(self) -> str:
        """``the 1 parcel of unknown flow sends``, as the bound's arithmetic says it."""
        n = self.unknown
        what = "of unknown flow" if not self.no_outfall else "left out"
        return f"the {n:,} parcel{'' if n == 1 else 's'} {what} send{'s' if n == 1 else ''}"


def _system_flow(parcels, flow, discharging, profile, network, connections) -> SystemFlow:
    """The system's average daily flow: the profile's, else the outfalls' sewersheds, else all discharging parcels;
    not known where the estimate would leave out a parcel whose flow is unknown."""
    rule = profile.discharges.system_flow_gpd
    if rule.value is not None:
        value = float(rule.value)
        return SystemFlow(value, f"set in the profile, {citation_clause(rule.citation)}", value)  # said in brackets
    known = discharging & np.isfinite(flow)
    total, unknown = float(flow[known].sum()), int((discharging & ~np.isfinite(flow)).sum())
    no_outfall = 0
    source = "estimated: every parcel connected or required to connect"
    if network is not None and network.n_nodes and "main_id" in parcels.columns:
        from analysis.trace import connect_parcels, sewershed

        chosen = parcels[discharging]
        connections = connect_parcels(network, chosen) if connections is None else connections[discharging]
        outfalls = np.flatnonzero(network.node_is_outfall)
        if len(outfalls):
            # each sewershed reads the parcels' flows as ``flow`` above was read (analysis.flows)
            sheds = [sewershed(network, int(o), connections, chosen, profile=profile) for o in outfalls]
            total = float(sum(s.flow_at_least_gpd for s in sheds))
            unknown = int(sum(s.flow_unknown for s in sheds))
            # a parcel in no outfall's sewershed: its flow reaches no plant the network knows, so it is not known
            reached = set().union(*(s.parcels for s in sheds))
            no_outfall = int((~chosen["parcel_id"].astype(str).isin(reached)).sum())
            unknown += no_outfall
            names = ", ".join(str(network.node_id[o]) for o in outfalls[:5]) + (" ..." if len(outfalls) > 5 else "")
            source = f"estimated: the sewershed of {names}"
    if unknown:
        bound = SystemFlow(None, "", total, unknown, no_outfall)
        lacking = bound.lacking().replace("no living units", "no living units recorded", 1)
        return SystemFlow(
            None,
            f"not known: {lacking}, so the {total:,.0f} gpd of the rest is only a lower bound",
            total,
            unknown,
            no_outfall,
        )
    return SystemFlow(total, source, total)


def _grease(klass: pd.Series, discharging: np.ndarray, rules) -> tuple[np.ndarray, np.ndarray]:
    n = len(klass)
    out = np.full(n, None, dtype=object)
    text = np.full(n, "", dtype=object)
    kind = rules.grease_interceptor.value
    food = tuple(rules.food_service_classes.value)
    if kind == "none" or not food:
        return out, text
    exempt = tuple(rules.interceptor_exempt_classes.value)
    listed = discharging & klass.str.startswith(food).to_numpy()
    if exempt:
        listed &= ~klass.str.startswith(exempt).to_numpy()
    if not listed.any():
        return out, text
    cited = rules.grease_interceptor.cited
    label = ("A food service (property class " + klass[listed] + ")").to_numpy(object)
    if kind == "required":
        out[listed] = "required"
        text[listed] = label + f": grease traps shall be provided for its kitchen wastes {cited}."
    else:
        who = rules.grease_decided_by.value or "the municipality"
        out[listed] = "for_decision"
        text[listed] = label + (
            f": a grease interceptor is required when {who} finds one necessary for liquid wastes containing grease "
            f"in excessive amounts {cited}; for {who} to decide."
        )
    return out, text


def _industrial(parcels, klass, discharging, flow, source, share, system, profile):
    """Significant industrial users and flows above the review threshold, with their control manhole.

    ``system``: the system's flow and where it comes from (``_system_flow``). An estimate is said beside the share:
    from a town's data with no parcel known to be connected it is the flow of the mandated parcels alone, and a
    two-family house was "3.6% of the system's 14,000 gpd", for review, with nothing to say why the system was so
    small (a tester)."""
    system_gpd, system_source = system.gpd, system.source
    rules = profile.discharges
    n = len(klass)
    out = np.full(n, None, dtype=object)
    text = np.full(n, "", dtype=object)
    sections = np.full(n, "", dtype=object)
    known = discharging & np.isfinite(flow)
    sig_gpd, sig_share = rules.significant_user_gpd.value, rules.significant_user_share.value
    rev_gpd, rev_share = rules.flow_review_gpd.value, rules.flow_review_share.value
    share0 = np.nan_to_num(share, nan=-1.0)
    # A significant industrial user is an industrial or commercial establishment, never a dwelling.
    establishment = known & ~klass.str.startswith(tuple(rules.residential_classes.value) or ("\0",)).to_numpy()
    by_gpd = establishment & (sig_gpd is not None) & (flow >= (sig_gpd or 0))
    by_share = establishment & (sig_share is not None) & (share0 > (sig_share or 0))
    significant = by_gpd | by_share
    # The system's flow not known, its lower bound is: a share of the bound is the most the true share can be. Not
    # more than the threshold, the user is certainly not more; more, it possibly is, for review (never significant).
    bounded = _share_at_most(flow, system)
    possibly = (
        establishment & ~significant & (sig_share is not None) & (np.nan_to_num(bounded, nan=-1.0) > (sig_share or 0))
    )
    review = known & (
        ((rev_gpd is not None) & (flow > (rev_gpd or 0))) | ((rev_share is not None) & (share0 > (rev_share or 0)))
    )
    # The same bound for the review by share (§ 144-25A's 2%): more than it of the flow known, possibly for review.
    possibly_review = known & ~review & (rev_share is not None) & (np.nan_to_num(bounded, nan=-1.0) > (rev_share or 0))
    unknown = (
        discharging
        & ~np.isfinite(flow)
        & klass.str.startswith(tuple(rules.industrial_classes.value) or ("\0",)).to_numpy()
    )
    out[possibly_review] = "possibly_review"
    out[review] = "review"
    out[possibly] = "possibly_significant"
    out[significant] = "significant"
    out[unknown] = "flow_unknown"
    listed = significant | possibly | review | possibly_review
    if not (listed.any() or unknown.any()):
        return out, text, sections

    rows = np.flatnonzero(listed)
    if len(rows):
        gpd_text = pd.Series(flow[rows]).map("{:,.0f}".format)
        src = pd.Series(np.where(source[rows] == GIVEN, "as given", "estimated from its living units"))
        pct = pd.Series(share[rows] * 100).map(lambda v: "" if not np.isfinite(v) else f"{v:.1f}% of ")
        lacking = system.lacking() if system.unknown else "none is set or estimated"
        if system_gpd:
            said = f", {{}}the system's {system_gpd:,.0f} gpd"
            if system_source.startswith("estimated"):
                said += f" ({system_source} in the data, not the plant's measured flow)"
            shared = pct.map(said.format)
        elif system.unknown and system.at_least_gpd > 0:
            # the share of the flow known: the most the share can be, said as a bound with what it leaves out
            shared = pd.Series(bounded[rows] * 100).map(
                lambda v: (
                    f", at most {v:.1f}% of the system's flow, which is at least "
                    f"{system.at_least_gpd:,.0f} gpd ({lacking})"
                )
            )
        else:
            # why no share is given: "the system's unknown" said nothing of it
            shared = f", its share of the system's flow not judged (that flow is not known: {lacking})"
        head = "Average flow " + gpd_text + " gpd (" + src + ")" + shared
        sig_rule = rules.significant_user_gpd if sig_gpd is not None else rules.significant_user_share
        criteria = pd.Series(
            np.where(
                by_gpd[rows] & by_share[rows],
                f"{sig_gpd:,.0f} gallons or more per average work day and more than {_pct(sig_share)} of the flow in "
                "the system"
                if sig_gpd is not None and sig_share is not None
                else "",
                np.where(
                    by_gpd[rows],
                    f"{(sig_gpd or 0):,.0f} gallons or more per average work day",
                    f"more than {_pct(sig_share)} of the flow in the system",
                ),
            )
        )
        cited = citation_clause(sig_rule.citation)
        possibly_text = pd.Series("", index=range(len(rows)))
        if possibly.any():
            # its share is the law's or less only where the system holds flow / share, the parcels of unknown flow
            # sending the rest: the arithmetic of the bound, said in gallons a board can weigh
            possibly_text = (
                f": possibly a significant industrial user, for review (more than {_pct(sig_share)} of the flow in "
                f"the system, {citation_clause(rules.significant_user_share.citation)}): "
                + _share_only_if(flow[rows], sig_share, system)
            )
        sig_text = np.where(
            significant[rows],
            (": a significant industrial user (" + criteria + f", {cited}).").to_numpy(object),
            np.where(possibly[rows], possibly_text.to_numpy(object), "."),
        )
        who = rules.flow_reviewed_by.value or "the municipality"
        review_rule = rules.flow_review_gpd if rev_gpd is not None else rules.flow_review_share
        threshold = (
            f"{rev_gpd:,.0f} gallons per day"
            if rev_gpd is not None
            else f"{_pct(rev_share)} of the system's average daily flow"
        )
        review_text = np.where(
            review[rows],
            f" Above {threshold}: subject to the review and approval of {who} {review_rule.cited}.",
            "",
        )
        if possibly_review.any():
            # as the possibly significant case: the bound, and the gallons that would bring the share under the law's
            rule = rules.flow_review_share
            maybe = (
                f" Possibly above {_pct(rev_share)} of the system's average daily flow, for review (a flow above it "
                f"is subject to the review and approval of {who}, {citation_clause(rule.citation)}): "
                + _share_only_if(flow[rows], rev_share, system)
            )
            review_text = np.where(possibly_review[rows], maybe.to_numpy(object), review_text)
        control = _control_manholes(parcels, rows, profile)
        text[rows] = (head + pd.Series(sig_text) + pd.Series(review_text) + control).to_numpy(object)
        sections[rows] = join_sections(
            np.where(significant[rows], sig_rule.citation, "").astype(object),
            np.where(possibly[rows], rules.significant_user_share.citation, "").astype(object),
            np.where(review[rows], review_rule.citation, "").astype(object),
            np.where(possibly_review[rows], rules.flow_review_share.citation, "").astype(object),
            np.full(len(rows), profile.network.control_manhole.citation, dtype=object),
        )
    if unknown.any():
        u = np.flatnonzero(unknown)
        citations = _industrial_citations(profile)
        text[u] = (
            "An industrial parcel (property class "
            + klass.iloc[u].reset_index(drop=True)
            + "): its flow is not given (a flow_gpd column), so whether it is an industrial user "
            + f"above the thresholds of the law ({citations_clause(citations)}) cannot be told."
        ).to_numpy(object)
        sections[u] = joined_citations(citations)  # the section column's way, as join_sections writes it
    return out, text, sections


def _share_at_most(flow: np.ndarray, system: SystemFlow) -> np.ndarray:
    """Each parcel's share of the flow known, where the system's flow is not known (NaN elsewhere): the system's
    flow being at least the flow known, this is the most the parcel's share of it can be."""
    if system.gpd is not None or not system.unknown or system.at_least_gpd <= 0:
        return np.full(len(flow), np.nan)
    return flow / system.at_least_gpd


def _control_manholes(parcels, rows: np.ndarray, profile: Profile) -> pd.Series:
    rule = profile.network.control_manhole
    if "control_manhole" not in parcels.columns:
        return pd.Series(" Control manhole: not found (no sewer network was given).", index=range(len(rows)))
    given = parcels["control_manhole"].iloc[rows].reset_index(drop=True)
    return pd.Series(
        np.where(
            given.notna(),
            " Control manhole " + given.astype(str) + f": the nearest downstream manhole {rule.cited}.",
            " Control manhole: none found below its connection.",
        )
    )


def _industrial_citations(profile: Profile) -> list[str]:
    """The citations of the industrial-user thresholds the profile sets, each once."""
    r = profile.discharges
    rules = [r.significant_user_gpd, r.significant_user_share, r.flow_review_gpd, r.flow_review_share]
    seen: list[str] = []
    for rule in rules:
        if rule.value is not None and rule.citation not in seen:
            seen.append(rule.citation)
    return seen


def join_sections(*columns: np.ndarray) -> np.ndarray:
    """Citations of several columns joined with "; " row by row, blanks left out and each section named once with
    all its flags (``joined_citations``; whole arrays)."""
    out = np.asarray(columns[0], dtype=object).copy() if columns else np.array([], dtype=object)
    for col in columns[1:]:
        col = np.asarray(col, dtype=object)
        out = np.where(out == "", col, out)
        both = np.flatnonzero((col != "") & (out != col))  # only the rows with two duties: few
        out[both] = [joined_citations(split_citations(f"{o}; {c}")) for o, c in zip(out[both], col[both], strict=True)]
    return out


def _share_only_if(flow: np.ndarray, share: float | None, system: SystemFlow) -> pd.Series:
    """ "its share is 5% or less only if the 1 parcel of unknown flow sends 35,000 gpd or more.": where the system's
    flow is not known, the gallons the parcels of unknown flow must send for each ``flow``'s share of the whole to
    come down to ``share`` (the arithmetic of the bound, said in gallons a board can weigh)."""
    return (
        f"its share is {_pct(share)} or less only if {system.left_out()} "
        + pd.Series(_needed_gpd(flow, share, system)).map("{:,.0f}".format)
        + (" gpd or more.")
    )


def _needed_gpd(flow: np.ndarray, share: float | None, system: SystemFlow) -> np.ndarray:
    """The gallons a day the parcels of unknown flow must send in all for each ``flow``'s share to be ``share``."""
    return np.clip(flow / (share or 1) - system.at_least_gpd, 0, None)


def _pct(fraction: float | None) -> str:
    return f"{(fraction or 0) * 100:g}%"
