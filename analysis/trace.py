"""Flow traces: control manholes and downstream lengths for every parcel at once, and single traces.

The control manhole, where none was specially required, is "the nearest downstream manhole in the public sewer
to the point at which the building sewer is connected" (Fort Plain § 144-28, Poughkeepsie § 168-22.5J, Wappinger
§ 196-19I). From a parcel's connection point on its main, flow runs to the main's downstream node; the control
manhole is the first manhole at or below that node, past junctions that are not manholes. The network's
pointer-jumped arrays already hold that for every node, so all parcels are answered in one vectorised pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import shapely
from scipy.sparse import csgraph

from analysis._parallel import default_workers, elementwise, nearest_of_pairs, within_pairs
from analysis.flows import GIVEN, average_flows, zero_flows_found_occupied
from analysis.network import SewerNetwork
from analysis.network_checks import plural
from analysis.profiles import Profile


@dataclass(frozen=True)
class Trace:
    """A downstream path: ``path`` node IDs in flow order to (and including) the outfall; ``mains`` alike (a main
    split at junctions is named once). ``splits`` says, for every node on the path where the flow divides, which
    main the trace followed and why. ``plant`` names the treatment plant whose inlet the outfall is, where a
    plant point was named or joined there (the outfall itself is then a manhole or pipe end, not the plant)."""

    start: str
    path: list[str]
    mains: list[str]
    control_manhole: str | None
    length_ft: float | None
    outfall: str | None
    problem: str | None
    splits: list[dict] = field(default_factory=list)
    plant: str | None = None
    # Mains on the path whose direction is unknown (kept as drawn): the path there, and a control manhole found
    # through them, are not known; ``problem`` says so.
    direction_unknown: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "start": self.start,
            "path": self.path,
            "mains": self.mains,
            "control_manhole": self.control_manhole,
            "length_ft": None if self.length_ft is None else round(self.length_ft, 1),
            "outfall": self.outfall,
            "plant": self.plant,
            "problem": self.problem,
            "splits": self.splits,
            "direction_unknown": self.direction_unknown,
        }


@dataclass(frozen=True)
class Sewershed:
    """Everything upstream of a manhole by the traces (each connection where its trace drains): mains, manholes,
    parcels, living units, the estimated flow, and the overflows into it whose upstream is counted elsewhere.

    Each parcel's flow is read as everywhere else (``analysis.flows.average_flows``): its ``flow_gpd`` where given
    (``flow_given`` of them, metered), else its living units times ``network.gallons_per_day_per_unit``; with
    neither it is not known (``flow_unknown`` of them). A mill metered at 30,000 gpd with no living units was "units
    unknown, flow not known" here while ``duties`` counted its 30,000 gpd.

    ``flow_gpd`` is None where a parcel's flow is unknown: a sum that counted those parcels as nothing was printed as
    the flow ("89 parcels with units unknown; estimated average flow 0 gallons per day", a tester), and added up to
    a system flow against which an ordinary house was a "significant" industrial user. ``flow_at_least_gpd`` is the
    flow of the parcels whose flow is known: the flow itself where none is unknown, else a lower bound, said as one.
    ``units`` adds up the living units recorded, ``units_unknown`` counts the parcels with none recorded (whose flow
    may still be given)."""

    manhole: str
    mains: list[str]
    manholes: list[str]
    parcels: list[str]
    units: float
    units_unknown: int
    flow_at_least_gpd: float
    section: str = ""
    # Every node whose flow can reach the manhole by any way out, an overflow too (a capacity check counts them).
    nodes: list[int] = field(default_factory=list, repr=False)
    # Links into the sewershed from a divide whose traces go elsewhere (an overflow): each named, and why what drains
    # to that divide is counted where its trace goes, not here.
    not_counted: list[dict] = field(default_factory=list)
    # parcels whose flow is their flow_gpd (metered, a permit's), and parcels with no flow given and no living units
    flow_given: int = 0
    flow_unknown: int = 0
    # parcels draining here that the analysis found occupied (a building on the lot, its property class) whose
    # flow_gpd is 0, which loading did not warn of: each counts as sending nothing (``zero_flows_found_occupied``)
    zero_flow_found_occupied: list[str] = field(default_factory=list)

    @property
    def flow_gpd(self) -> float | None:
        """The estimated average flow, or None where a parcel's flow is unknown (the flow is not known), or no parcel
        drains here (a model's trunk, no parcels layer given: "0 gallons per day" was said of it)."""
        return None if self.flow_unknown or not self.parcels else self.flow_at_least_gpd

    def as_dict(self) -> dict:
        return {
            "manhole": self.manhole,
            "mains": self.mains,
            "manholes": self.manholes,
            "parcels": self.parcels,
            "units": self.units,
            # parcels drained here with no living units recorded (a metered one's flow is still known)
            "units_unknown": self.units_unknown,
            # parcels whose flow is their flow_gpd, and those whose flow is not known (no flow_gpd, no living units):
            # the text says so, --json and the map must too
            "flow_given": self.flow_given,
            "flow_unknown": self.flow_unknown,
            # null where a parcel's flow is unknown, as the map's popup says "flow not known"; the known part beside it
            "flow_gpd": None if self.flow_gpd is None else round(self.flow_gpd, 1),
            "flow_at_least_gpd": round(self.flow_at_least_gpd, 1),
            "not_counted": self.not_counted,
            "zero_flow_found_occupied": {
                "parcels": len(self.zero_flow_found_occupied),
                "parcel_ids": self.zero_flow_found_occupied[:50],
            },
        }


def connect_parcels(net: SewerNetwork, parcels) -> pd.DataFrame:
    """Each parcel's connection: main piece, downstream node, control manhole and downstream length.

    ``parcels`` are mandate results (``main_id``, ``connection_x``, ``connection_y``; optionally a specially
    required ``control_manhole``). Returns, on the parcels' index: ``edge`` (-1 if none), ``control_manhole``,
    ``downstream_length_ft``, ``outfall_id`` and ``network_problem`` (None, or a sentence).
    """
    n = len(parcels)
    x = pd.to_numeric(parcels.get("connection_x"), errors="coerce").to_numpy(float) if n else np.zeros(0)
    y = pd.to_numeric(parcels.get("connection_y"), errors="coerce").to_numpy(float) if n else np.zeros(0)
    want = parcels["main_id"].astype(object).where(parcels["main_id"].notna(), None).to_numpy(object)
    edge = np.full(n, -1, dtype=np.int64)
    ok = np.isfinite(x) & np.isfinite(y) & pd.notna(want)
    points = np.full(n, None, dtype=object)
    workers = default_workers()
    if ok.any() and len(net.geometry):
        points[ok] = shapely.points(x[ok], y[ok])
        rows = np.flatnonzero(ok)
        tol = 0.5 / net.fpu
        p_idx, e_idx, d = within_pairs(net.main_tree, points[rows], tol, workers=workers)
        match = net.main_id[e_idx].astype(str) == want[rows[p_idx]].astype(str)
        p_idx, e_idx, d = p_idx[match], e_idx[match], d[match]
        # The nearest piece of the parcel's main; of two as near, the first piece.
        chosen, pick = nearest_of_pairs(p_idx, d, e_idx)
        edge[rows[chosen]] = e_idx[pick]
    has = edge >= 0
    e = np.clip(edge, 0, None)
    v = net.v[e] if len(net.v) else np.zeros(n, dtype=np.int64)
    frac = np.zeros(n)
    if has.any():
        frac[has] = elementwise(
            shapely.line_locate_point, net.geometry[edge[has]], points[has], workers=workers, normalized=True
        )
    rest_ft = np.where(has, (1 - frac) * (net.length_ft[e] if len(net.v) else 0.0), np.nan)
    control = np.where(has, net.control_manhole[v] if len(net.v) else -1, -1)
    drains = net.drains()
    downstream = np.where(has & drains[v], rest_ft + net.downstream_ft[v], np.nan) if len(net.v) else rest_ft
    terminal = np.where(has, net.terminal[v] if len(net.v) else -1, -1)

    control_id = np.where(control >= 0, net.node_id[np.clip(control, 0, None)] if net.n_nodes else None, None)
    special = np.full(n, None, dtype=object)
    if "control_manhole" in parcels.columns:
        given = parcels["control_manhole"]
        special = given.astype(object).where(given.notna(), None).to_numpy(object)
    control_id = np.where(pd.notna(special), special, control_id)
    outfall_id = (
        np.where(has & drains[v], net.node_id[np.clip(terminal, 0, None)], None)
        if net.n_nodes
        else np.full(n, None, dtype=object)
    )

    problem = np.full(n, None, dtype=object)
    problem[~has & pd.notna(want)] = "The parcel's main is not part of the public sewer network."
    problem[has & ~drains[v] & (terminal < 0)] = "The flow from this connection runs in a loop."
    stops = has & ~drains[v] & (terminal >= 0)
    has_outfall = np.zeros(int(net.piece.max()) + 1 if net.n_nodes else 0, dtype=bool)
    has_outfall[net.piece[net.node_is_outfall]] = True
    cut_off = np.zeros(n, dtype=bool)
    cut_off[stops] = ~has_outfall[net.piece[terminal[stops]]]
    problem[cut_off] = "The main lies in a piece of the network with no outfall."
    stops &= ~cut_off
    if stops.any():
        problem[stops] = (
            "The flow from this connection stops at "
            + pd.Series(net.node_id[terminal[stops]]).astype(str)
            + ", which is not a treatment plant or outfall; no main leaves it."
        ).to_numpy(object)
    problem[has & (control < 0) & pd.isna(special) & drains[v]] = "No manhole below the connection."

    # A main of unknown direction is kept as drawn: below it, nothing the network says is known. On the parcel's own
    # main or before the control manhole, the control manhole is not known (the results column is left empty and
    # the problem says why); further down, the way on to the outfall and its length.
    unknown = np.asarray(net.direction_source == "unknown", dtype=bool)
    own = has & (unknown[e] if len(unknown) else False)
    to_control = np.where(own, edge, np.where(has, net.unknown_to_control[v], -1) if net.n_nodes else -1)
    to_end = np.where(own, edge, np.where(has, net.unknown_to_end[v], -1) if net.n_nodes else -1)
    blocked = to_end >= 0
    if blocked.any():
        control_id = np.where((to_control >= 0) & pd.isna(special), None, control_id)
        downstream = np.where(blocked, np.nan, downstream)
        outfall_id = np.where(blocked, None, outfall_id)
        # One sentence per main and whether it comes before the control manhole: a few, however many parcels.
        key = to_end[blocked] * 2 + (to_control[blocked] >= 0)
        keys, which = np.unique(key, return_inverse=True)
        sentences = np.array(
            [direction_unknown_sentence(net, [str(net.main_id[k // 2])], bool(k % 2)) for k in keys], dtype=object
        )
        said = sentences[which]
        before = problem[blocked]
        problem[blocked] = np.where(pd.isna(before), said, said + " " + before.astype(str))
    return pd.DataFrame(
        {
            "edge": edge,
            "control_manhole": control_id,
            "downstream_length_ft": np.round(downstream, 1),
            "outfall_id": outfall_id,
            "network_problem": problem,
        },
        index=parcels.index,
    )


def trace_down(
    net: SewerNetwork, node: int, *, start: str | None = None, first_main: int | None = None, first_ft: float = 0.0
) -> Trace:
    """Follow next-hop mains from ``node`` to the outfall (one walk: the path is as long as the network is deep)."""
    path, mains, splits = [], [], []
    if first_main is not None:
        mains.append(str(net.main_id[first_main]))
    seen = set()
    here = node
    while True:
        path.append(str(net.node_id[here]))
        if here in seen:
            return Trace(
                start or path[0],
                path,
                mains,
                _control(net, node),
                None,
                None,
                f"The flow runs in a loop at {net.node_id[here]}.",
                splits,
            )
        seen.add(here)
        e = net.next_main[here]
        if e < 0:
            break
        if net.out_degree[here] > 1:
            splits.append(_split(net, here, e, np.flatnonzero(net.u == here), net.to_outfall_ft))
        if not mains or mains[-1] != str(net.main_id[e]):  # a main split at a junction is one main
            mains.append(str(net.main_id[e]))
        here = net.v[e]
    drains = bool(net.node_is_outfall[here])
    problem = None if drains else _stops(net, here)
    length = first_ft + float(net.downstream_ft[node]) if drains else None
    plant = str(net.outfall_plant[here]) or None if drains and net.outfall_plant is not None else None
    control = _control(net, node)
    # Mains of unknown direction on the way (kept as drawn): the path is as drawn there, and not known; before the
    # control manhole (the connection's own main, or a junction's way on to it), the control manhole is not known.
    unknown = np.asarray(net.direction_source == "unknown", dtype=bool)
    walked = ([first_main] if first_main is not None else []) + _walked(net, node)
    unsure = list(dict.fromkeys(str(net.main_id[e]) for e in walked if unknown[e]))
    if unsure:
        before_control = (first_main is not None and unknown[first_main]) or net.unknown_to_control[node] >= 0
        control = None if before_control else control
        said = direction_unknown_sentence(net, unsure, bool(before_control))
        problem = said if problem is None else f"{said} {problem}"
        length, drains, plant = None, False, None
    return Trace(
        start or path[0],
        path,
        mains,
        control,
        length,
        path[-1] if drains else None,
        problem,
        splits,
        plant,
        unsure,
    )


def _walked(net: SewerNetwork, node: int) -> list[int]:
    """The mains a trace from ``node`` follows, in order (once each: a loop ends the walk)."""
    out, seen, here = [], set(), node
    while here not in seen and net.next_main[here] >= 0:
        seen.add(here)
        out.append(int(net.next_main[here]))
        here = int(net.v[net.next_main[here]])
    return out


def direction_unknown_sentence(net: SewerNetwork, mains: list[str], control_unknown: bool) -> str:
    """Why a trace through mains of unknown direction is not known, and how to give the direction (by what it is,
    never a command-line flag: the command line and the web word it their own way)."""
    one = len(mains) == 1
    named = f"direction of main {mains[0]} is" if one else f"directions of mains {', '.join(mains)} are"
    it = "it" if one else "them"
    what = (
        f"so the control manhole is not known, and the path below follows {it} as drawn"
        if control_unknown
        else f"so the path follows {it} as drawn, and where the flow goes and how far are not known"
    )
    return (
        f"The {named} unknown (no from/to field or invert gives {it}, and no way to an outfall orients {it}; kept "
        f"as drawn), {what}. Give the mains' direction: their from and to manhole fields, their inverts, or that "
        "the mains are drawn in flow direction."
    )


def _stops(net: SewerNetwork, node: int) -> str:
    """Where and why a trace ends short of an outfall."""
    elsewhere = bool(net.node_is_outfall[net.piece == net.piece[node]].any())
    where = (
        "its piece of the network drains to an outfall by other mains, but the directions around "
        f"{net.node_id[node]} send this flow nowhere"
        if elsewhere
        else "this piece of the network reaches no treatment plant or outfall"
    )
    return (
        f"The flow stops at {net.node_id[node]}, which is not a treatment plant or outfall: no main leaves it "
        f"({where})."
    )


def _split(net: SewerNetwork, node: int, chosen: int, leaving: np.ndarray, to_outfall: np.ndarray) -> dict:
    """Which main a trace follows where the flow divides, and why: of the ways that reach an outfall, the one
    leaving lowest above the node's invert (a model's others are overflows), then, of those as low, a pipe before a
    weir, orifice, outlet, pump, inlet or channel (beside a pipe, the overflow or relief), then the shortest way to
    an outfall along the flow; between links that run side by side to one node, the pipe. Every other way out is
    named, with where it goes."""
    ahead = net.v[chosen]
    cost = net.length_ft[leaving] + to_outfall[net.v[leaving]]
    mine = net.length_ft[chosen] + to_outfall[ahead]
    height = net.inlet_ft if net.inlet_ft is not None else np.zeros(len(net.u))
    reaching = leaving[np.isfinite(cost)]
    by_height = len(reaching) > 1 and np.ptp(np.round(height[reaching], 3)) > 0
    kinds = net.link_kind if net.link_kind is not None else np.full(len(net.u), None)
    pipe = net.is_pipe()
    aside = net.diverted if net.diverted is not None else np.zeros(len(net.u), dtype=bool)
    # Links as low as the pipe followed, to another node, that are no pipe: the model's overflow or relief.
    as_low = [
        e
        for e in reaching
        if pipe[chosen]
        and not pipe[e]
        and not aside[e]
        and net.v[e] != ahead
        and round(float(height[e]), 3) == round(float(height[chosen]), 3)
    ]

    def above(e) -> str:
        return f", {height[e]:,.1f} ft above the invert" if height[e] > 0 else ", at the invert"

    def link(e) -> str:
        return f"{net.main_id[e]}" + ("" if pipe[e] or kinds[e] is None else f" ({kinds[e]})")

    text = f"The flow divides at {net.node_id[node]}; this trace follows {net.main_id[chosen]} to {net.node_id[ahead]}"
    line = text + "."  # the opening alone: the one line a map gives it, the whole sentence behind its "why"
    others = [
        f"{link(e)} to {net.node_id[net.v[e]]} "
        + (f"{c:,.0f} ft" if np.isfinite(c) else "reaches no outfall")
        + (above(e) if by_height else "")
        for e, c in zip(leaving, cost, strict=True)
        if net.v[e] != ahead
    ]
    listed = f"{mine:,.0f} ft" + (above(chosen) if by_height else "") + "".join(f"; {o}" for o in others)
    set_aside = [str(net.main_id[e]) for e in reaching if aside[e] and not aside[chosen]]
    if not np.isfinite(mine):
        text += ", the first of them: none reaches an outfall"
    elif set_aside:
        text += (
            f", the divider's way on: {', '.join(set_aside)} {'is its diverted link' if len(set_aside) == 1 else 'are'}"
            + ("" if len(set_aside) == 1 else " its diverted links")
            + f", taking only the flow the divider sends aside ({listed})"
        )
    elif by_height or as_low:
        if by_height:
            text += (
                f", the lowest way out of {net.node_id[node]} that reaches an outfall: the flow takes it first, and "
                "a link leaving higher carries only what rises above it, an overflow"
            )
        if as_low:
            names = ", ".join(f"{link(e)} to {net.node_id[net.v[e]]}" for e in as_low)
            text += (
                (";" if by_height else ",")
                + f" the pipe: {names} leave{'s' if len(as_low) == 1 else ''} as low, but a weir, orifice, outlet, "
                "pump, inlet or channel beside a pipe at the same height is taken as the overflow or relief, not "
                "the sewer's dry-weather path"
            )
        text += f" ({listed})"
    elif others:
        text += f", the shortest way to an outfall along the flow ({listed})"
    if net.controls is not None:
        ruled = [f"{net.main_id[e]} ({net.controls[e]})" for e in leaving if net.controls[e]]
        if ruled:
            text += (
                f"; the model's control rules act on {', '.join(ruled)}, and sewerplan does not run them: where "
                "they stop or close a link, the flow goes another way"
            )
    beside = [e for e in leaving if e != chosen and net.v[e] == ahead]
    if beside:
        names = ", ".join(f"{net.main_id[e]} ({kinds[e] or 'main'})" for e in beside)
        text += f"; {names} also lead{'s' if len(beside) == 1 else ''} there (a pipe is followed before a pump, weir, "
        text += "orifice or inlet)"
    return {
        "node": str(net.node_id[node]),
        "mains": [str(m) for m in net.main_id[leaving]],
        "followed": str(net.main_id[chosen]),
        "line": line,
        "reason": text + ".",
    }


def _control(net: SewerNetwork, node: int) -> str | None:
    c = net.control_manhole[node]
    return None if c < 0 else str(net.node_id[c])


def trace_parcel(net: SewerNetwork, parcel_id: str, connection: pd.Series) -> Trace:
    """The downstream trace of one parcel, from its connection main (``connect_parcels`` row)."""
    e = int(connection["edge"])
    if e < 0:
        return Trace(
            parcel_id,
            [],
            [],
            None,
            None,
            None,
            connection["network_problem"] or "The parcel has no connection point on the public sewer.",
        )
    rest = float(connection["downstream_length_ft"]) if pd.notna(connection["downstream_length_ft"]) else None
    node = int(net.v[e])
    t = trace_down(net, node, start=parcel_id, first_main=e)
    first_ft = (rest - float(net.downstream_ft[node])) if rest is not None else 0.0
    control = connection["control_manhole"] if pd.notna(connection["control_manhole"]) else t.control_manhole
    return Trace(
        parcel_id,
        t.path,
        t.mains,
        control,
        None if t.length_ft is None else first_ft + t.length_ft,
        t.outfall,
        t.problem,
        t.splits,
        t.plant,
        t.direction_unknown,
    )


def sewershed(
    net: SewerNetwork, node: int, connections: pd.DataFrame | None, parcels=None, *, profile: Profile
) -> Sewershed:
    """Everything draining through ``node``: the nodes whose traces pass it (breadth-first search up the next
    mains), so each connection is counted where its trace says it drains, once.

    Where the flow divides above ``node`` (a wet well's or regulator's overflow, a split), the way traces do not
    follow may still lead here: what drains to that divide is counted where its trace goes, and the link is named
    in ``not_counted`` with why. ``nodes`` is every node whose flow can reach ``node`` by any way out (what a
    capacity check counts, an overflow too). Each parcel's flow is read by ``analysis.flows.average_flows``.
    """
    order = csgraph.breadth_first_order(net.upstream_links, node, directed=True, return_predecessors=False)
    traced = _traced_upstream(net, node)
    upstream = np.zeros(net.n_nodes, bool)
    upstream[traced] = True
    mains = np.flatnonzero(upstream[net.u] & upstream[net.v])
    parcel_ids: list[str] = []
    zero: list[str] = []
    units, units_unknown, flow, given, unknown = 0.0, 0, 0.0, 0, 0
    drains_to = np.zeros(0, dtype=np.int64)  # each parcel's node below its connection (-1: none)
    if connections is not None and parcels is not None and len(connections):
        e = connections["edge"].to_numpy()
        ok = e >= 0
        drains_to = np.where(ok, net.v[np.clip(e, 0, None)] if len(net.v) else -1, -1)
        drains_here = np.zeros(len(e), bool)
        drains_here[ok] = upstream[drains_to[ok]]
        chosen = parcels[drains_here]
        parcel_ids = chosen["parcel_id"].astype(str).tolist()
        if "units" in chosen.columns:
            u = pd.to_numeric(chosen["units"], errors="coerce")
            units, units_unknown = float(u.sum()), int(u.isna().sum())
        else:
            units_unknown = len(chosen)
        flows, source = average_flows(chosen, profile)
        known = np.isfinite(flows)
        flow, given, unknown = float(flows[known].sum()), int((source == GIVEN).sum()), int((~known).sum())
        zero = zero_flows_found_occupied(chosen).tolist()
    gpd_rule = profile.network.gallons_per_day_per_unit
    manholes = [str(net.node_id[i]) for i in traced if net.node_is_manhole[i]]
    return Sewershed(
        str(net.node_id[node]),
        list(dict.fromkeys(str(m) for m in net.main_id[mains])),
        manholes,
        parcel_ids,
        units,
        units_unknown,
        flow,
        gpd_rule.citation,
        order.tolist(),
        _not_counted(net, node, upstream, drains_to),
        given,
        unknown,
        zero,
    )


def _traced_upstream(net: SewerNetwork, node: int) -> np.ndarray:
    """The nodes whose traces pass ``node`` (itself first), breadth first up each node's next main."""
    return csgraph.breadth_first_order(net.upstream_traces, node, directed=True, return_predecessors=False)


def _not_counted(net: SewerNetwork, node: int, upstream: np.ndarray, drains_to: np.ndarray) -> list[dict]:
    """Links into the sewershed from a node whose traces go another way (an overflow, the other way of a split):
    named, with what drains to that node and where it is counted instead."""
    entering = np.flatnonzero(upstream[net.v] & ~upstream[net.u])  # a handful: one per divide above the node
    height = net.inlet_ft if net.inlet_ft is not None else np.zeros(len(net.u))
    kinds = net.link_kind if net.link_kind is not None else np.full(len(net.u), None)
    pipe = net.is_pipe()
    parcel_nodes = drains_to[drains_to >= 0]
    out = []
    for e in entering:
        a = int(net.u[e])
        followed = int(net.next_main[a])
        if followed < 0:  # a dead end or an outfall with a link out: its flow is nowhere else
            continue
        above = _traced_upstream(net, a)  # only the nodes above ``a`` are visited
        n_manholes = int(net.node_is_manhole[above].sum())
        n_parcels = int(np.isin(parcel_nodes, above).sum())
        end = net.terminal[a]
        where = (
            f"{net.node_id[net.v[followed]]} and on to {net.node_id[end]}"
            if end >= 0 and end != net.v[followed]
            else str(net.node_id[net.v[followed]])
        )
        kind = "" if pipe[e] or kinds[e] is None else f" ({kinds[e]})"
        rise = height[e] - height[followed]
        how = (
            f"an overflow leaving {rise:,.1f} ft higher than {net.main_id[followed]}, carrying only what rises above it"
            if rise > 5e-4
            else "the other way where the flow divides"
        )
        counted = f"{plural(n_manholes, 'manhole')}" + (f" and {plural(n_parcels, 'parcel')}" if len(drains_to) else "")
        out.append(
            {
                "main": str(net.main_id[e]),
                "from": str(net.node_id[a]),
                "followed": str(net.main_id[followed]),
                "manholes": n_manholes,
                "parcels": n_parcels,
                "reason": (
                    f"{net.node_id[node]} also takes flow from {net.node_id[a]} by {net.main_id[e]}{kind}, {how}: "
                    f"traces from {net.node_id[a]} follow {net.main_id[followed]} to {where}, so what drains to "
                    f"{net.node_id[a]} ({counted}) is counted there, not here."
                ),
            }
        )
    return out


NETWORK_COLUMNS = ("control_manhole", "downstream_length_ft", "outfall_id", "network_problem")


def add_network_results(parcels, net: SewerNetwork):
    """Mandate results with each parcel's control manhole, length to the outfall, outfall and any problem."""
    connections = connect_parcels(net, parcels)
    out = parcels.copy()
    for name in NETWORK_COLUMNS:
        out[name] = connections[name]
    return out, connections
