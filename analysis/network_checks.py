"""Checks of a built sewer network: what a superintendent must fix, each with its feature and location.

Findings are reported, never silently fixed. Structural checks (pieces, dead ends, cycles, direction, slope,
dangling ends, junctions, duplicates, splits, manholes without mains) always run.

The design rules (least diameter, manholes at most ``max_manhole_spacing_ft`` apart and at every change in slope
or alignment) run where the profile gives them a value. They govern the design of new sewers and extensions
(Fort Plain § 144-18, applied through § 144-17A and C), so on the existing mains of the network they are
information: "below the design standard for new sewers", never an error the law requires fixed. Planned
extensions are checked against them in ``analysis.plans``. Where a profile's value is a setting (Wappinger's
Ten States Standards readings) or was set by the user, the message says so and cites no section as requiring it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
import pandas as pd
import shapely
from scipy.sparse import csgraph

from analysis.arrays import distinct
from analysis.network import LARGEST_PIPE_IN, Defect, SewerNetwork, _adjacency, active_manholes, link_kind_words
from analysis.profiles import Profile, Rule, citation_clause

SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


def check_network(net: SewerNetwork, *, profile: Profile, manholes=None) -> list[Defect]:
    """Every finding about the network: those found while building it, then the checks below, errors first."""
    rules = profile.network
    found = list(net.defects)
    found += _pieces(net)
    found += _dead_ends(net)
    found += _shared_outfalls(net)
    found += _cycles(net)
    found += _direction(net)
    found += _slopes(net)
    found += _dangling(net)
    found += _junctions(net)
    found += _duplicates(net)
    found += _diversions(net)
    found += _storage_not_manholes(net)
    found += _control_rules(net)
    found += _storm_model(net)
    found += _implausible_sizes(net)
    manholes = active_manholes(manholes)
    if manholes is not None and len(manholes):
        found += _manholes_without_mains(net, manholes, rules.snap_tolerance_ft.value / net.fpu)
    if rules.min_diameter_in.value is not None:
        found += _diameters(net, rules.min_diameter_in)
    if rules.max_manhole_spacing_ft.value is not None:
        found += _spacing(net, rules.max_manhole_spacing_ft, rules.manhole_spacing_by_diameter)
    if rules.manhole_at_alignment_change.value and not net.explicit:
        # A model's drawing is not its geometry (its lengths are its own): bends are read from GIS mains only.
        found += _alignment(net, profile)
    return sorted(found, key=lambda d: (SEVERITY_ORDER.get(d.severity, 3), d.check, d.feature_id))


def plural(n: int, word: str) -> str:
    """``1 main``, ``2 mains``."""
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def unique_in_order(values) -> list[str]:
    """Main IDs without repeats, in order: a main split at junctions is one main to the reader."""
    return list(dict.fromkeys(str(v) for v in values))


def mains_per_piece(net: SewerNetwork) -> np.ndarray:
    """How many mains each piece of the network holds, counted as the data has them: a main split at a junction is
    one main to the reader, so the pieces add up to the network's count of mains."""
    n_pieces = int(net.piece.max()) + 1 if net.n_nodes else 0
    pairs = pd.DataFrame({"piece": net.piece[net.u], "main": net.main_id.astype(str)}).drop_duplicates()
    return np.bincount(pairs["piece"].to_numpy(np.int64), minlength=n_pieces)


@dataclass(frozen=True)
class NetworkEnd:
    """A node where the sewer ends (an outfall node), and what the data says ends it there.

    ``plant`` is the treatment plant (its name in the plants layer) the node is the inlet of, named or joined;
    ``structure`` is what the manholes layer or the model calls the node (``outfall``, ``plant`` for a plant inlet;
    ``""`` for a junction node a plant point was joined to).
    """

    node: str
    plant: str
    structure: str
    piece: int


@dataclass(frozen=True)
class Piece:
    """One piece of the network, not connected to any other: its mains, their length and where its flow ends."""

    mains: int
    length_ft: float
    ends: tuple[NetworkEnd, ...]


@dataclass(frozen=True)
class NetworkOutline:
    """The network as the engineer knows the town: its treatment plants and outfalls, not only its outfall nodes
    (one plant joined to three separate pieces is one plant, reached from three pieces), and its separate pieces,
    largest first, each with its mains and where it ends."""

    mains: int
    manholes: int
    junctions: int
    directions: tuple[tuple[str, int], ...]
    ends: tuple[NetworkEnd, ...]
    pieces: tuple[Piece, ...]
    explicit: bool
    # Storage units the flow leaves by a pump, orifice, weir, outlet or force main (wet wells, tanks): not manholes,
    # so not in ``manholes``. Each as (node, what the flow leaves it by: "pump", "weir", "force main" ...).
    wet_wells: tuple[tuple[str, str], ...] = ()
    # The evidence that put each main's inverts at its ends (``invert_ends_source``), mains counted once; none for
    # a model, whose inverts are its From and To nodes'.
    invert_ends: tuple[tuple[str, int], ...] = ()

    def plants(self) -> dict[str, list[NetworkEnd]]:
        """Each treatment plant the network reaches, with the outfall nodes it was named or joined at."""
        found: dict[str, list[NetworkEnd]] = {}
        for end in self.ends:
            if end.plant:
                found.setdefault(end.plant, []).append(end)
        return found

    def outfalls(self) -> list[NetworkEnd]:
        """Ends that are no plant of the plants layer: outfalls and plant inlets the manholes layer or model names."""
        return [end for end in self.ends if not end.plant]


def network_outline(net: SewerNetwork) -> NetworkOutline:
    """What the network is made of, for the head of its report: counts, plants and outfalls, separate pieces.

    Examples
    --------
    >>> from shapely.geometry import LineString, Point
    >>> import geopandas as gpd
    >>> from analysis.network import build_network
    >>> from analysis.profiles import load_profile
    >>> mains = gpd.GeoDataFrame({"main_id": ["A", "B"]}, geometry=[
    ...     LineString([(0, 0), (300, 0)]), LineString([(0, 100), (300, 100)])], crs="EPSG:2260")
    >>> plant = gpd.GeoDataFrame({"outfall_name": ["WWTP"]}, geometry=[Point(350, 50)], crs="EPSG:2260")
    >>> outline = network_outline(build_network(mains, outfalls=plant, profile=load_profile("fort-plain")))
    >>> {name: [e.node for e in ends] for name, ends in outline.plants().items()}
    {'WWTP': ['J-3', 'J-4']}
    >>> [(p.mains, [e.node for e in p.ends]) for p in outline.pieces]
    [(1, ['J-3']), (1, ['J-4'])]
    """
    n_pieces = int(net.piece.max()) + 1 if net.n_nodes else 0
    mains = mains_per_piece(net)
    length = np.bincount(net.piece[net.u], weights=net.length_ft, minlength=n_pieces)
    order = sorted(np.flatnonzero(mains > 0), key=lambda p: (-mains[p], -length[p], p))  # a handful of pieces
    rank = {int(p): i for i, p in enumerate(order)}
    kinds = net.node_kind if net.node_kind is not None else np.full(net.n_nodes, "", dtype=object)
    plants = net.outfall_plant if net.outfall_plant is not None else np.full(net.n_nodes, "", dtype=object)
    nodes = sorted(np.flatnonzero(net.node_is_outfall), key=lambda k: (rank.get(int(net.piece[k]), n_pieces), k))
    ends = tuple(
        NetworkEnd(str(net.node_id[k]), str(plants[k] or ""), str(kinds[k] or ""), int(net.piece[k])) for k in nodes
    )
    pieces = tuple(Piece(int(mains[p]), float(length[p]), tuple(e for e in ends if e.piece == p)) for p in order)
    # Each main once under the evidence that set its direction (a split main's pieces share it, as a rule).
    sources = dict.fromkeys(zip(map(str, net.main_id), map(str, net.direction_source), strict=True))
    sources = [source for _, source in sources]
    placed = net.invert_ends_source if net.invert_ends_source is not None and not net.explicit else None
    ends_by = dict.fromkeys(zip(map(str, net.main_id), map(str, placed), strict=True)) if placed is not None else {}
    ends_by = [how for _, how in ends_by if how]
    return NetworkOutline(
        mains=len(set(map(str, net.main_id))),
        manholes=int(net.node_is_manhole.sum()),
        junctions=int((kinds == "").sum()) if net.node_kind is not None else 0,
        directions=tuple(Counter(sources).most_common()),
        ends=ends,
        pieces=pieces,
        explicit=net.explicit,
        wet_wells=tuple((str(net.node_id[k]), _leaving_kind(net, k)) for k in _wet_wells(net)),
        invert_ends=tuple(Counter(ends_by).most_common()),
    )


def _findings(check: str, severity, feature_ids, messages, places, section: str = "") -> list[Defect]:
    """The defects one check found: one per feature, each with its message and place (x, y).

    ``severity`` is one for all, or one per finding. Every check reports through here, so a finding always has the
    same fields in the same order.
    """
    messages = list(messages)
    severities = [severity] * len(messages) if isinstance(severity, str) else list(severity)
    return [
        Defect(check, sev, str(feature), section, message, float(x), float(y))
        for sev, feature, message, (x, y) in zip(severities, feature_ids, messages, places, strict=True)
    ]


def _at(net: SewerNetwork, node: int) -> tuple[float, float]:
    return float(net.node_xy[node, 0]), float(net.node_xy[node, 1])


def _mid(net: SewerNetwork, e: int) -> tuple[float, float]:
    """The middle of a main as drawn; its upstream node where it has no drawn length (a model's pump, weir ...)."""
    line = net.geometry[e]
    if line is None or shapely.is_empty(line) or shapely.length(line) == 0:
        return _at(net, int(net.u[e]))
    p = shapely.line_interpolate_point(line, 0.5, normalized=True)
    return p.x, p.y


def _pieces(net: SewerNetwork) -> list[Defect]:
    """Pieces not connected to the largest, and pieces that reach no outfall at all."""
    if net.n_nodes == 0:
        return []
    labels = net.piece
    n_pieces = labels.max() + 1
    mains_per = mains_per_piece(net)  # a main split at a junction counts once, as in the summary
    length_per = np.bincount(labels[net.u], weights=net.length_ft, minlength=n_pieces)
    has_outfall = np.zeros(n_pieces, bool)
    has_outfall[labels[net.node_is_outfall]] = True
    biggest = int(np.argmax(length_per))
    dead = _dead_end_nodes(net)
    pieces = np.flatnonzero(mains_per > 0)  # the pieces of the network: a handful
    first = {p: net.main_id[np.flatnonzero(labels[net.u] == p)[0]] for p in pieces}
    place = {p: _at(net, np.flatnonzero(labels == p)[0]) for p in pieces}

    def size(p: int) -> str:
        return f"{plural(int(mains_per[p]), 'main')} ({length_per[p]:,.0f} ft)"

    def why(p: int) -> str:
        stops = [str(net.node_id[k]) for k in dead if labels[k] == p]
        if np.any((net.direction_source == "unknown") & (labels[net.u] == p)):
            return "its flow direction cannot be inferred, "
        if stops:
            return "its flow stops at " + ", ".join(stops[:5]) + (" ..." if len(stops) > 5 else "") + ", "
        return "its flow runs in a loop, "

    apart = [p for p in pieces if p != biggest]
    stranded = [p for p in pieces if not has_outfall[p]]
    return _findings(
        "disconnected_piece",
        "warning",
        [first[p] for p in apart],
        [f"A piece of {size(p)} is not connected to the rest of the network." for p in apart],
        [place[p] for p in apart],
    ) + _findings(
        "no_outfall",
        "error",
        [first[p] for p in stranded],
        [
            f"A piece of {size(p)} reaches no treatment plant or outfall: {why(p)}and its parcels have no downstream "
            "path."
            for p in stranded
        ],
        [place[p] for p in stranded],
    )


def _dead_end_nodes(net: SewerNetwork) -> np.ndarray:
    """Nodes where flow arrives and stops: mains flow in, none leaves, and the data does not call it an outfall."""
    out_degree = np.bincount(net.u, minlength=net.n_nodes)
    in_degree = np.bincount(net.v, minlength=net.n_nodes)
    return np.flatnonzero((in_degree > 0) & (out_degree == 0) & ~net.node_is_outfall)


def _dead_ends(net: SewerNetwork) -> list[Defect]:
    """Dead ends in pieces that do reach an outfall elsewhere (pieces with none are reported whole)."""
    dead = _dead_end_nodes(net)
    if len(dead) == 0:
        return []
    has_outfall = np.zeros(int(net.piece.max()) + 1, bool)
    has_outfall[net.piece[net.node_is_outfall]] = True
    upstream = np.bincount(net.terminal[net.u][net.terminal[net.u] >= 0], minlength=net.n_nodes)
    nodes = dead[has_outfall[net.piece[dead]]]

    def message(node: int) -> str:
        arriving = unique_in_order(net.main_id[net.v == node])
        sources = sorted(set(map(str, net.direction_source[net.v == node])))
        return (
            f"The flow stops at {net.node_id[node]}: {', '.join(arriving[:5])} flow into it "
            f"({', '.join(sources)}) and no main leaves it, and it is not a treatment plant or outfall. "
            f"{plural(int(upstream[node]), 'main')} drain to it and reach no outfall. Check the directions "
            "of the mains around it."
        )

    return _findings("no_outfall", "error", net.node_id[nodes], map(message, nodes), [_at(net, node) for node in nodes])


def _shared_outfalls(net: SewerNetwork) -> list[Defect]:
    """A piece of GIS layers whose flow two or more outfalls share: never silently.

    Outfalls a plant point was joined to by distance, and those the manholes layer names (an outfall structure, a
    plant inlet), alike: a piece between two outfall structures was said only as a ``split_flow`` where the flow
    divided between them. A model's [OUTFALLS] are its design (overflows beside the plant's outfall), not a
    finding: the model's own topology says where each link drains.
    """
    if net.outfall_how is None or net.n_nodes == 0 or net.explicit:
        return []
    outfalls = np.flatnonzero(net.node_is_outfall)
    pieces = distinct(net.piece[outfalls])
    # where each main's flow ends, from its lower end: from its upper end, a main that leaves a node where the flow
    # divides was counted to where traces from that node go (B, draining to MH3, counted to MH1)
    ends = net.terminal[net.v]
    draining = np.bincount(ends[ends >= 0], minlength=net.n_nodes)
    groups = [here for p in pieces if len(here := outfalls[net.piece[outfalls] == p]) >= 2]
    how = {"joined": "joined", "structure": "named by the manholes layer"}

    def message(here: np.ndarray) -> str:
        total = max(int(draining[here].sum()), 1)
        shares = ", ".join(
            f"{net.node_id[k]} ({how.get(net.outfall_how[k], net.outfall_how[k])}: "
            f"{plural(int(draining[k]), 'main')}, {100 * draining[k] / total:.0f}%)"
            for k in here[np.argsort(-draining[here], kind="stable")]
        )
        if (net.outfall_how[here] == "joined").any():
            fix = (
                "If only one of them is the treatment plant, name its inlet manhole (outfall_manhole) and give the "
                "plant layer a facility_type."
            )
        else:
            fix = (
                "If one of them is an overflow, not where the sewer's flow goes, give the mains' directions (from "
                "and to manholes, or inverts) so that the flow is traced to the one it reaches."
            )
        return (
            f"One piece of the network ends at {len(here)} outfalls, each draining the mains nearest it: "
            f"{shares}. {fix}"
        )

    return _findings(
        "several_outfalls",
        "warning",
        [net.node_id[here[0]] for here in groups],
        map(message, groups),
        [_at(net, here[0]) for here in groups],
    )


def _cycles(net: SewerNetwork) -> list[Defect]:
    if net.n_nodes == 0:
        return []
    n_comp, labels = csgraph.connected_components(
        _adjacency(net.n_nodes, net.u, net.v), directed=True, connection="strong"
    )
    sizes = np.bincount(labels, minlength=n_comp)
    looped = np.flatnonzero(sizes > 1)
    drains = net.drains()
    insides = [np.flatnonzero((labels[net.u] == comp) & (labels[net.v] == comp)) for comp in looped]
    # A model may loop by design (a relief pipe back to a junction); its flow still leaves for an outfall.
    by_design = [bool(net.explicit and drains[labels == comp].all()) for comp in looped]

    def message(inside: np.ndarray, designed: bool) -> str:
        mains = ", ".join(unique_in_order(net.main_id[inside]))
        if designed:
            return f"The model's links form a loop through {mains}; traces leave it by the shortest way to an outfall."
        return f"Flow runs in a loop through mains {mains}: check their directions."

    return _findings(
        "cycle",
        ["info" if designed else "error" for designed in by_design],
        [net.main_id[inside[0]] for inside in insides],
        [message(inside, designed) for inside, designed in zip(insides, by_design, strict=True)],
        [_mid(net, inside[0]) for inside in insides],
    )


def _direction(net: SewerNetwork) -> list[Defect]:
    unknown = np.flatnonzero(net.direction_source == "unknown")
    if len(unknown) == 0:
        return []
    names = unique_in_order(net.main_id[unknown])
    return _findings(
        "direction_unknown",
        "warning",
        [net.main_id[unknown[0]]],
        [
            f"{plural(len(names), 'main')} have no direction: no from/to field names a manhole at their ends, "
            "they have no inverts, and their piece reaches no outfall to orient toward; kept as drawn (e.g. "
            + ", ".join(names[:5])
            + ")."
        ],
        [_mid(net, unknown[0])],
    )


# How a main's inverts were put at its ends (``SewerNetwork.invert_ends_source``), said after an adverse slope.
_INVERT_ENDS_WORDS = {
    "manholes": " Its inverts are read at the ends whose manholes' own inverts they match.",
    "from_to_fields": " Its upstream invert is read at the end its from/to fields name as upstream.",
    "first_vertex": (
        " Its upstream invert is read at its first vertex as drawn: no manhole invert at its ends matches, and "
        "its invert columns' names, or no from/to field, do not say which end is upstream."
    ),
}


def _slopes(net: SewerNetwork) -> list[Defect]:
    gravity = net.is_gravity()
    adverse = (
        gravity
        & np.isfinite(net.us_invert_ft)
        & np.isfinite(net.ds_invert_ft)
        & (net.ds_invert_ft > net.us_invert_ft + 1e-3)
    )
    mains = np.flatnonzero(adverse)

    def message(e: int) -> str:
        if net.direction_source[e] == "inferred":
            why = (
                f" Its inverts alone would send the flow to {net.node_id[net.u[e]]}, where it could go no "
                "further: it is kept in the direction the network drains to its outfall."
            )
        else:
            why = (
                f" Flow runs from {net.node_id[net.u[e]]} to {net.node_id[net.v[e]]} by its {net.direction_source[e]}."
            )
        ends = net.invert_ends_source[e] if net.invert_ends_source is not None else ""
        return (
            f"Main {net.main_id[e]} runs uphill: downstream invert {net.ds_invert_ft[e]:.2f} ft above "
            f"upstream invert {net.us_invert_ft[e]:.2f} ft.{why}{_INVERT_ENDS_WORDS.get(ends, '')}"
        )

    return _findings("adverse_slope", "error", net.main_id[mains], map(message, mains), [_mid(net, e) for e in mains])


def _degree(net: SewerNetwork) -> np.ndarray:
    return np.bincount(net.u, minlength=net.n_nodes) + np.bincount(net.v, minlength=net.n_nodes)


def _mapped(net: SewerNetwork) -> np.ndarray:
    """Nodes that are points of the manholes layer (manholes, cleanouts, caps ...), not junctions found by us."""
    if net.node_kind is None:
        return net.node_is_manhole
    return net.node_kind != ""


def _dangling(net: SewerNetwork) -> list[Defect]:
    nodes = np.flatnonzero((_degree(net) == 1) & ~_mapped(net) & ~net.node_is_outfall)
    mains = [net.main_id[np.flatnonzero((net.u == node) | (net.v == node))[0]] for node in nodes]
    return _findings(
        "dangling_end",
        "warning",
        mains,
        [
            f"Main {m} ends at {net.node_id[node]} with no manhole and no other main."
            for m, node in zip(mains, nodes, strict=True)
        ],
        [_at(net, node) for node in nodes],
    )


def _storage(net: SewerNetwork) -> np.ndarray:
    """Storage units (a model's [STORAGE] nodes, a layer's wet wells), manholes or not, and a model's junctions
    that are a pump's wet well (the flow leaves them by a pump: ``analysis.network.manhole_nodes``)."""
    if net.node_kind is None:
        return np.zeros(net.n_nodes, dtype=bool)
    kind = pd.Series(net.node_kind, dtype=object)
    return (kind.eq("storage") | (kind.eq("junction") & ~net.node_is_manhole)).to_numpy()


def _wet_wells(net: SewerNetwork) -> np.ndarray:
    """The nodes of the storage units the flow leaves by a pump, orifice, weir, outlet or force main, and of the
    junctions it leaves by a pump: wet wells and tanks, not manholes (``analysis.network.manhole_nodes``)."""
    return np.flatnonzero(_storage(net) & ~net.node_is_manhole & (net.next_main >= 0))


def _leaving_kind(net: SewerNetwork, node: int) -> str:
    """What the flow leaves ``node`` by: the model's link kind ("pump", "weir" ...), "force main", else "main"."""
    return link_kind_words(net, int(net.next_main[node]))


def _storage_not_manholes(net: SewerNetwork) -> list[Defect]:
    """Storage units the flow leaves by a pump, orifice, weir, outlet or force main: wet wells and tanks, which are
    never a control manhole. Said, as the manholes counted and the control manholes named leave them out."""
    nodes = _wet_wells(net)

    def message(node: int) -> str:
        e = int(net.next_main[node])
        kind = _leaving_kind(net, node)
        below = net.control_manhole[node]
        after = (
            f"mains draining to it have the next manhole below it, {net.node_id[below]}, as their control manhole"
            if below >= 0
            else "no manhole lies below it"
        )
        if net.node_kind[node] == "junction":  # a model's junction that a pump draws from
            others = unique_in_order(net.main_id[(net.u == node) & (np.arange(len(net.u)) != e)])
            beside = f" ({', '.join(others)} also leave{'s' if len(others) == 1 else ''} it)" if others else ""
            return (
                f"{net.node_id[node]} is written as a junction, but the flow leaves it by {kind} "
                f"{net.main_id[e]}{beside}: it is the pump's wet well, not a manhole, as a storage unit pumped "
                f"out is. It is never taken as a control manhole: {after}."
            )
        return (
            f"{net.node_id[node]} is a storage unit the flow leaves by {kind} {net.main_id[e]}: a wet well or a "
            f"tank, not a manhole. It is never taken as a control manhole: {after}."
        )

    return _findings(
        "storage_not_manhole", "info", net.node_id[nodes], map(message, nodes), [_at(net, node) for node in nodes]
    )


def _junctions(net: SewerNetwork) -> list[Defect]:
    """Places where two or more mains meet with no manhole: a junction node, or a cleanout, cap ... there."""
    # A storage unit that is no manhole (a wet well, a tank), or a pump station, is a structure where mains meet by
    # design: gravity sewer ends there and a force main begins.
    nodes = np.flatnonzero((_degree(net) >= 2) & ~net.node_is_manhole & ~net.node_is_outfall & ~_pumped_from(net))

    def message(node: int) -> str:
        mains = ", ".join(unique_in_order(net.main_id[(net.u == node) | (net.v == node)]))
        kind = str(net.node_kind[node]).replace("_", " ") if net.node_kind is not None else ""
        where = f"{net.node_id[node]}, a {kind}, not a manhole" if kind else f"{net.node_id[node]} with no manhole"
        return f"Mains {mains} meet at {where} mapped there."

    return _findings(
        "junction_without_manhole",
        "warning",
        net.node_id[nodes],
        map(message, nodes),
        [_at(net, node) for node in nodes],
    )


def _duplicates(net: SewerNetwork) -> list[Defect]:
    """Two mains of the same kind joining the same two nodes with the same length (a pump beside a conduit, or a
    force main beside a gravity main, is two things, not one drawn twice)."""
    lo, hi = np.minimum(net.u, net.v), np.maximum(net.u, net.v)
    kind = pd.Series(net.link_kind if net.link_kind is not None else np.full(len(lo), None)).fillna("").astype(str)
    frame = pd.DataFrame(
        {
            "lo": lo,
            "hi": hi,
            "len": np.round(net.length_ft, 0),
            "type": pd.Series(net.sewer_type).fillna("").astype(str),
            "kind": kind,
            "e": np.arange(len(lo)),
        }
    )
    keys = ["lo", "hi", "len", "type", "kind"]
    dup = frame[frame.duplicated(keys, keep=False)]
    groups = [group["e"].to_numpy() for _, group in dup.groupby(keys)]
    return _findings(
        "duplicate_main",
        "warning",
        [net.main_id[es[1]] for es in groups],
        [
            f"Mains {', '.join(unique_in_order(net.main_id[es]))} join the same two nodes with the same length: one "
            "is probably drawn twice."
            for es in groups
        ],
        [_mid(net, es[0]) for es in groups],
    )


def _diversions(net: SewerNetwork) -> list[Defect]:
    """Nodes where flow leaves by more than one main. In a model that is its design (an overflow weir, a pump
    beside a gravity outlet): information. In GIS layers it is usually a direction to check."""
    nodes = np.flatnonzero(np.bincount(net.u, minlength=net.n_nodes) > 1)

    def message(node: int) -> str:
        mains = unique_in_order(net.main_id[net.u == node])
        e = net.next_main[node]
        followed = net.main_id[e] if e >= 0 else None
        follows = f"traces follow {followed}, " + _why_followed(net, node, e) if followed else "none reaches an outfall"
        return f"Flow leaves {net.node_id[node]} through {len(mains)} mains ({', '.join(mains)}); {follows}."

    return _findings(
        "split_flow",
        "info" if net.explicit else "warning",
        net.node_id[nodes],
        map(message, nodes),
        [_at(net, node) for node in nodes],
    )


def _storm_model(net: SewerNetwork) -> list[Defect]:
    """A model that drains streets and states no sewage flow: it looks like storm drainage, not a sanitary sewer.
    Traced as given; said, as a notice to connect to a storm drain would be wrong."""
    if not net.storm_evidence:
        return []
    return _findings(
        "storm_model",
        "warning",
        ["model"],
        [
            f"The model has {net.storm_evidence}, and states no dry-weather (sewage) flow ([DWF], or a baseline "
            "flow in [INFLOWS]): it looks like a storm drainage model, not a sanitary sewer. Its links are traced "
            "as given, every conduit as a sewer; before any parcel is told to connect, make sure its pipes carry "
            "sewage."
        ],
        [(float("nan"), float("nan"))],
    )


def _control_rules(net: SewerNetwork) -> list[Defect]:
    """Links a model's [CONTROLS] rules open, close, start, stop or set: sewerplan does not run the rules, so every
    link is taken as open. Where the link leaves a node the flow divides at, the rules may send the flow another way
    than the traces go: a warning; elsewhere they change when or how much it carries, not where: information."""
    if net.controls is None:
        return []
    ruled = np.flatnonzero(pd.notna(net.controls) & (pd.Series(net.controls, dtype=object).astype(str) != ""))
    divides = net.out_degree[net.u[ruled]] > 1
    kinds = net.link_kind if net.link_kind is not None else np.full(len(net.u), None)

    def message(e: int, divide: bool) -> str:
        node = net.node_id[net.u[e]]
        text = (
            f"The model's control rules ({net.controls[e]}) act on {kinds[e] or 'link'} {net.main_id[e]}, out of "
            f"{node}; sewerplan does not follow control rules: it takes every link as open and every pump as "
            "running."
        )
        if divide:
            others = unique_in_order(net.main_id[(net.u == net.u[e]) & (np.arange(len(net.u)) != e)])
            followed = net.main_id[net.next_main[net.u[e]]] if net.next_main[net.u[e]] >= 0 else "none"
            text += (
                f" The flow divides at {node} ({', '.join(others)} also leave{'s' if len(others) == 1 else ''} "
                f"it; traces follow {followed}): where the rules stop or close {net.main_id[e]}, the flow goes "
                f"another way. Check the traces through {node} against the rules."
            )
        return text

    return _findings(
        "control_rules",
        ["warning" if d else "info" for d in divides],
        net.main_id[ruled],
        [message(e, d) for e, d in zip(ruled, divides, strict=True)],
        [_mid(net, e) for e in ruled],
    )


def _why_followed(net: SewerNetwork, node: int, e: int) -> str:
    """Why traces take main ``e`` out of ``node``: the divider's way on, the lowest way out (the others overflows),
    the pipe beside a weir, orifice, outlet, pump, inlet or channel as low, or the shortest."""
    leaving = np.flatnonzero(net.u == node)
    height = net.inlet_ft if net.inlet_ft is not None else np.zeros(len(net.u))
    reaching = leaving[np.isfinite(net.length_ft[leaving] + net.to_outfall_ft[net.v[leaving]])]
    aside = net.diverted if net.diverted is not None else np.zeros(len(net.u), dtype=bool)
    if not aside[e] and aside[reaching].any():
        return f"the divider's way on ({', '.join(unique_in_order(net.main_id[reaching[aside[reaching]]]))} takes " + (
            "only the flow the divider sends aside)"
        )
    higher = [m for m in unique_in_order(net.main_id[reaching[height[reaching] > height[e] + 5e-4]])]
    pipe = net.is_pipe()
    level = np.round(height, 3)
    kinds = net.link_kind if net.link_kind is not None else np.full(len(net.u), None)
    as_low = [
        k
        for k in reaching
        if pipe[e] and not pipe[k] and not aside[k] and net.v[k] != net.v[e] and level[k] == level[e]
    ]
    kind_words = ""
    if as_low:
        names = ", ".join(f"{net.main_id[k]} ({kinds[k] or 'main'})" for k in as_low)
        kind_words = (
            f"the pipe ({names} leave{'s' if len(as_low) == 1 else ''} as low: beside a pipe at the same height, a "
            "weir, orifice, outlet, pump, inlet or channel is taken as the overflow or relief, not the dry-weather "
            "path)"
        )
    # Links as low to the node ``e`` leads to, side by side with it: no way is shorter, the kind of link decides (a
    # pipe first), as ``analysis.network._next_mains`` orders them and ``analysis.trace._split`` says it.
    beside = [k for k in reaching if k != e and not aside[k] and net.v[k] == net.v[e] and level[k] == level[e]]
    beside_words = ""
    if beside:
        names = ", ".join(f"{net.main_id[k]} ({kinds[k] or 'main'})" for k in beside)
        rule = (
            "a pipe is followed before a pump, weir, orifice or inlet"
            if pipe[e] and not pipe[beside].all()
            else "of links side by side, the first in the data is followed"
        )
        beside_words = f"{names} also lead{'s' if len(beside) == 1 else ''} to {net.node_id[net.v[e]]}: {rule}"
    elsewhere = [
        k
        for k in reaching
        if k != e and not aside[k] and net.v[k] != net.v[e] and level[k] == level[e] and k not in as_low
    ]
    if not higher:
        if beside_words and not (kind_words or elsewhere):
            return (
                f"the pipe: {beside_words.replace(': ', ', and ', 1)}"
                if pipe[e] and not pipe[beside].all()
                else beside_words
            )
        said = kind_words or "the shortest way to an outfall"
        return said + (f"; {beside_words}" if beside_words else "")
    where = f"{height[e]:,.1f} ft above the invert" if height[e] > 0 else "at the invert"
    return (
        f"the lowest way out ({where}; {', '.join(higher)} leave{'s' if len(higher) == 1 else ''} higher, an "
        "overflow carrying only what rises above it)"
        + (f", and of the ways out as low, {kind_words}" if as_low else "")
        + (f"; {beside_words}" if beside_words else "")
    )


def _manholes_without_mains(net: SewerNetwork, manholes, tol: float) -> list[Defect]:
    used = set(map(str, net.node_id[distinct(np.concatenate([net.u, net.v]))])) if len(net.u) else set()
    geoms = np.asarray(manholes.geometry.values)
    ids = manholes["manhole_id"].astype(str).to_numpy() if "manhole_id" in manholes else np.array([])
    touching = np.zeros(len(geoms), bool)
    if len(net.geometry) and not net.explicit:  # a model's nodes are joined by name, never by distance
        hit, _ = net.main_tree.query(geoms, predicate="dwithin", distance=tol)
        touching[hit] = True
    alone = np.flatnonzero(~np.isin(ids, list(used)) & ~touching)
    return _findings(
        "manhole_without_main",
        "warning",
        ids[alone],
        [f"Manhole {ids[k]} has no main ending at it." for k in alone],
        [(geoms[k].x, geoms[k].y) for k in alone],
    )


def _standard(rule: Rule, key: str, unit: str) -> tuple[str, str]:
    """The section column and the words naming a design standard: the law's, or the profile's own setting."""
    if rule.overridden:
        return "", f"the {rule.value:g} {unit} set for this run (network.{key}) as the design standard for new sewers"
    if rule.setting:
        return "", (
            f"the {rule.value:g} {unit} this profile sets as the design standard for new sewers (a setting, "
            f"network.{key}, not a number the law states; see {rule.section})"
        )
    return (
        rule.citation,
        f"the design standard for new sewers ({rule.value:g} {unit}, {citation_clause(rule.citation)})",
    )


def _diameters(net: SewerNetwork, rule: Rule) -> list[Defect]:
    small = net.is_gravity() & np.isfinite(net.diameter_in) & (net.diameter_in < rule.value)
    section, standard = _standard(rule, "min_diameter_in", "in")
    mains = np.flatnonzero(small)
    return _findings(
        "min_diameter",
        "info",
        net.main_id[mains],
        [
            f"Existing main {net.main_id[e]} is {_size_said(net, e)}: below {standard}. The standard governs "
            "new sewers and extensions, not mains already built."
            for e in mains
        ],
        [_mid(net, e) for e in mains],
        section,
    )


def _implausible_sizes(net: SewerNetwork) -> list[Defect]:
    """Mains given a diameter larger than any sewer pipe made: a typo (1000 for 10), or a model's dummy link (Bellinge's
    15 m G72F050-G72F050_outfall), which a plan's capacity table took as a real pipe with room for 199 billion gpd."""
    mains = np.flatnonzero(np.isfinite(net.diameter_in) & (net.diameter_in > LARGEST_PIPE_IN))
    return _findings(
        "implausible_diameter",
        "warning",
        net.main_id[mains],
        [
            f"Existing main {net.main_id[e]} is given {net.diameter_in[e]:g} in across, larger than any sewer pipe "
            f"made ({LARGEST_PIPE_IN:g} in): most likely a typo, or a model's dummy link. Plans give it no capacity; "
            "correct its diameter in the mains layer or the model."
            for e in mains
        ],
        [_mid(net, e) for e in mains],
    )


def _size_said(net: SewerNetwork, e: int) -> str:
    """A main's size as its data gives it; for a model's conduit that is not one round pipe, with the size the
    design rules take (the smallest inside dimension of one barrel)."""
    said = net.size_said[e] if net.size_said is not None else None
    if not said:
        return f"{net.diameter_in[e]:g} in"
    return f"{said} ({net.diameter_in[e]:.3g} in across one barrel at its narrowest)"


def spacing_limits_ft(diameter_in: np.ndarray, rule: Rule, by_diameter: Rule) -> np.ndarray:
    """The greatest manhole spacing (ft) for mains of each diameter; NaN where the profile sets none.

    ``by_diameter`` maps a largest diameter (in) to its spacing; larger mains get none. Empty: ``rule`` for every
    main. A main of unknown diameter gets ``rule``.
    """
    limits = np.full(len(diameter_in), float(rule.value))
    table = sorted((float(k), float(v)) for k, v in (by_diameter.value or {}).items())
    if not table:
        return limits
    known = np.isfinite(diameter_in)
    sizes = np.array([k for k, _ in table])
    spacing = np.array([v for _, v in table] + [np.nan])
    limits[known] = spacing[np.searchsorted(sizes, diameter_in[known], side="left")]
    return limits


def _spacing(net: SewerNetwork, rule: Rule, by_diameter: Rule) -> list[Defect]:
    """Length of gravity sewer from each manhole to the next manhole downstream, by pointer jumping: a run for every
    gravity pipe leaving a manhole, going on as traces go below it (an open channel, a force main or a pump
    begins none)."""
    n = net.n_nodes
    has = net.next_main >= 0
    step_to = np.where(has, net.v[np.clip(net.next_main, 0, None)] if len(net.v) else 0, np.arange(n))
    step_len = np.where(has, net.length_ft[np.clip(net.next_main, 0, None)] if len(net.v) else 0.0, 0.0)
    ptr, acc = step_to.copy(), step_len.copy()
    gravity = net.is_gravity()  # a force main needs no manholes along it
    # A run of gravity sewer ends at a manhole, at a wet well, tank or pump station, or where the flow goes on by a
    # force main or a model's pump: S1 to MH-27 was 795 ft counting the 495 ft pumped from PS (a tester).
    # (no main at all, every one storm: no run; it crashed with an IndexError)
    pumped_on = has & ~gravity[np.clip(net.next_main, 0, None)] if len(gravity) else np.zeros(n, dtype=bool)
    stop = net.node_is_manhole | _pumped_from(net) | pumped_on
    for _ in range(max(1, int(np.ceil(np.log2(max(n, 2)))) + 1)):
        go = ~stop[ptr] & (net.next_main[ptr] >= 0)
        acc = np.where(go, acc + acc[ptr], acc)
        ptr = np.where(go, ptr[ptr], ptr)
    # Every gravity pipe leaving a manhole begins a run, not only the one traces follow: where the flow divides at a
    # manhole, the other pipe's run had gone unmeasured. Past the pipe's lower end, the run goes on as traces do.
    mains = np.flatnonzero(gravity & net.node_is_manhole[net.u]) if len(net.v) else np.empty(0, dtype=np.int64)
    lower = net.v[mains]
    goes_on = ~stop[lower] & (net.next_main[lower] >= 0)
    length = net.length_ft[mains] + np.where(goes_on, acc[lower], 0.0)
    end = np.where(goes_on, ptr[lower], lower)
    diameter = net.diameter_in[mains]
    limit = spacing_limits_ft(diameter, rule, by_diameter)
    long_run = stop[end] & np.isfinite(limit) & (length > limit + 0.5)
    section, standard = _standard(rule, "max_manhole_spacing_ft", "ft")
    if by_diameter.value:
        standard += " on mains of " + ", ".join(f"{float(k):g} in or less" for k in by_diameter.value)
    runs = np.flatnonzero(long_run)
    runs = runs[np.lexsort((mains[runs], net.u[mains[runs]]))]  # by manhole, as the report lists them
    several = np.bincount(net.u[mains], minlength=n) > 1  # manholes more than one gravity pipe leaves

    def message(k: int) -> str:
        e, node = mains[k], net.u[mains[k]]
        said = net.size_said[e] if net.size_said is not None else None
        size = f"{said} " if said else f"{diameter[k]:g}-in " if np.isfinite(diameter[k]) else ""
        by = f" by {net.main_id[e]}" if several[node] else ""
        return (
            f"{length[k]:,.0f} ft of existing {size}sewer from manhole {net.node_id[node]}{by} to "
            f"{_run_end(net, end[k])}: more than {standard}. The standard governs new sewers and extensions, "
            "not mains already built."
        )

    nodes = net.u[mains[runs]]
    return _findings(
        "manhole_spacing", "info", net.node_id[nodes], map(message, runs), [_at(net, node) for node in nodes], section
    )


def _pumped_from(net: SewerNetwork) -> np.ndarray:
    """Wet wells, tanks and pump stations: where gravity sewer ends by design and the flow is pumped on."""
    kind = net.node_kind if net.node_kind is not None else np.full(net.n_nodes, "", dtype=object)
    return _storage(net) | (kind == "pump_station")


def _run_end(net: SewerNetwork, node: int) -> str:
    """Where a run of gravity sewer ends, as the manhole spacing finding names it."""
    if net.node_is_manhole[node]:
        return f"the next manhole {net.node_id[node]}"
    kind = net.node_kind[node] if net.node_kind is not None else ""
    if kind == "pump_station":
        return f"pump station {net.node_id[node]}"
    if _storage(net)[node]:
        return f"wet well or tank {net.node_id[node]}"
    e = int(net.next_main[node])
    return f"{net.node_id[node]}, where {link_kind_words(net, e)} {net.main_id[e]} takes the flow on"


def _alignment(net: SewerNetwork, profile: Profile) -> list[Defect]:
    """Bends and slope changes away from manholes: inside a main, or where mains meet at a junction."""
    rules = profile.network
    limit = rules.alignment_change_deg.value
    rule = rules.manhole_at_alignment_change
    if rule.setting or rule.overridden:
        section, standard = "", "the profile's design standard for new sewers (a setting, not a rule the law states)"
    else:
        section, standard = rule.citation, f"the design standard for new sewers {rule.cited}"
    tail = f"; {standard} puts a manhole at every change in alignment or slope. It governs new sewers, not mains built."
    out = []
    coords, which = shapely.get_coordinates(net.geometry, return_index=True)
    if len(coords) >= 3:
        d = np.diff(coords, axis=0)
        same = which[1:] == which[:-1]
        heading = np.degrees(np.arctan2(d[:, 1], d[:, 0]))
        turn = np.abs((heading[1:] - heading[:-1] + 180) % 360 - 180)
        inner = same[1:] & same[:-1] & net.is_gravity()[which[1:-1]]  # a force main's bends need no manhole
        bends = np.flatnonzero(inner & (turn > limit))
        out += _findings(
            "alignment_change",
            "info",
            net.main_id[which[bends + 1]],
            [
                f"Existing main {net.main_id[which[k + 1]]} bends {turn[k]:.0f} degrees with no manhole at the "
                f"bend{tail}"
                for k in bends
            ],
            coords[bends + 1],
            section,
        )
    # Junction nodes (not manholes) with one main in and one out.
    indeg = np.bincount(net.v, minlength=net.n_nodes)
    outdeg = np.bincount(net.u, minlength=net.n_nodes)
    nodes = np.flatnonzero(
        ~net.node_is_manhole & (indeg == 1) & (outdeg == 1) & ~net.node_is_outfall & ~_pumped_from(net)
    )
    if len(nodes):  # where a force main meets a gravity main, the gravity sewer ends or begins: no run bends there
        e_in = pd.Series(np.arange(len(net.v))).groupby(net.v).first().reindex(nodes).to_numpy()
        gravity = net.is_gravity()
        nodes = nodes[gravity[e_in] & gravity[net.next_main[nodes]]]
    if len(nodes):
        e_in = pd.Series(np.arange(len(net.v))).groupby(net.v).first().reindex(nodes).to_numpy()
        e_out = net.next_main[nodes]
        h_in = _end_heading(net.geometry[e_in], -1)
        h_out = _end_heading(net.geometry[e_out], 0)
        turn = np.abs((h_out - h_in + 180) % 360 - 180)
        with np.errstate(divide="ignore", invalid="ignore"):
            slope_in = (net.us_invert_ft[e_in] - net.ds_invert_ft[e_in]) / net.length_ft[e_in]
            slope_out = (net.us_invert_ft[e_out] - net.ds_invert_ft[e_out]) / net.length_ft[e_out]
        slope_jump = np.abs(slope_in - slope_out) > rules.slope_change_ft_per_ft.value
        changes = np.flatnonzero((turn > limit) | slope_jump)

        def message(k: int) -> str:
            what = (
                f"changes alignment by {turn[k]:.0f} degrees"
                if turn[k] > limit
                else f"changes slope from {slope_in[k]:.4f} to {slope_out[k]:.4f} ft/ft"
            )
            return (
                f"The existing sewer {what} at {net.node_id[nodes[k]]}, where mains {net.main_id[e_in[k]]} and "
                f"{net.main_id[e_out[k]]} meet without a manhole{tail}"
            )

        out += _findings(
            "alignment_change",
            "info",
            net.main_id[e_out[changes]],
            map(message, changes),
            [_at(net, nodes[k]) for k in changes],
            section,
        )
    return out


def _end_heading(lines: np.ndarray, end: int) -> np.ndarray:
    a = shapely.get_point(lines, 0 if end == 0 else -2)
    b = shapely.get_point(lines, 1 if end == 0 else -1)
    return np.degrees(np.arctan2(shapely.get_y(b) - shapely.get_y(a), shapely.get_x(b) - shapely.get_x(a)))
