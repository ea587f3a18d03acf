"""Checks of a built sewer network: what a superintendent must fix, each with its feature and location.

Defects are reported, never silently fixed. Structural checks (pieces, cycles, direction, slope, dangling ends,
manholes without mains, duplicates) always run; the design rules run where the profile gives them a value:
minimum diameter (Fort Plain § 144-18B), manholes at most ``max_manhole_spacing_ft`` apart and at every change in
slope or alignment (§ 144-18K).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import shapely
from scipy.sparse import csgraph

from analysis.network import Defect, SewerNetwork, _adjacency, active_manholes
from analysis.profiles import Profile

SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


def check_network(net: SewerNetwork, *, profile: Profile, manholes=None) -> list[Defect]:
    """Every defect of the network: those found while building it, then the checks below, errors first."""
    rules = profile.network
    found = list(net.defects)
    found += _pieces(net)
    found += _cycles(net)
    found += _direction(net)
    found += _slopes(net)
    found += _dangling(net)
    found += _junctions(net)
    found += _duplicates(net)
    found += _diversions(net)
    manholes = active_manholes(manholes)
    if manholes is not None and len(manholes):
        found += _manholes_without_mains(net, manholes, rules.snap_tolerance_ft.value / net.fpu)
    if rules.min_diameter_in.value is not None:
        found += _diameters(net, rules.min_diameter_in)
    if rules.max_manhole_spacing_ft.value is not None:
        found += _spacing(net, rules.max_manhole_spacing_ft)
    if rules.manhole_at_alignment_change.value:
        found += _alignment(net, profile)
    return sorted(found, key=lambda d: (SEVERITY_ORDER.get(d.severity, 3), d.check, d.feature_id))


def _at(net: SewerNetwork, node: int) -> tuple[float, float]:
    return float(net.node_xy[node, 0]), float(net.node_xy[node, 1])


def _mid(net: SewerNetwork, e: int) -> tuple[float, float]:
    p = shapely.line_interpolate_point(net.geometry[e], 0.5, normalized=True)
    return p.x, p.y


def _pieces(net: SewerNetwork) -> list[Defect]:
    if net.n_nodes == 0:
        return []
    labels = net.piece
    n_pieces = labels.max() + 1
    mains_per = np.bincount(labels[net.u], minlength=n_pieces)
    length_per = np.bincount(labels[net.u], weights=net.length_ft, minlength=n_pieces)
    has_outfall = np.zeros(n_pieces, bool)
    has_outfall[labels[net.node_is_outfall]] = True
    biggest = int(np.argmax(length_per))
    out = []
    for p in range(n_pieces):  # one row per piece of the network: a handful
        nodes = np.flatnonzero(labels == p)
        x, y = _at(net, nodes[0])
        first = str(net.main_id[np.flatnonzero(labels[net.u] == p)[0]]) if mains_per[p] else str(net.node_id[nodes[0]])
        if p != biggest and mains_per[p]:
            out.append(
                Defect(
                    "disconnected_piece",
                    "warning",
                    first,
                    "",
                    f"A piece of {mains_per[p]} main(s), {length_per[p]:,.0f} ft, is not connected to the "
                    "rest of the network.",
                    x,
                    y,
                )
            )
        if not has_outfall[p] and mains_per[p]:
            out.append(
                Defect(
                    "no_outfall",
                    "error",
                    first,
                    "",
                    f"A piece of {mains_per[p]} main(s) ({length_per[p]:,.0f} ft) reaches no treatment "
                    "plant or outfall; its flow direction cannot be inferred and its parcels have no "
                    "downstream path.",
                    x,
                    y,
                )
            )
    return out


def _cycles(net: SewerNetwork) -> list[Defect]:
    if net.n_nodes == 0:
        return []
    n_comp, labels = csgraph.connected_components(
        _adjacency(net.n_nodes, net.u, net.v), directed=True, connection="strong"
    )
    sizes = np.bincount(labels, minlength=n_comp)
    looped = np.flatnonzero(sizes > 1)
    out = []
    for comp in looped:
        inside = np.flatnonzero((labels[net.u] == comp) & (labels[net.v] == comp))
        x, y = _mid(net, inside[0])
        mains = ", ".join(map(str, net.main_id[inside]))
        out.append(
            Defect(
                "cycle",
                "error",
                str(net.main_id[inside[0]]),
                "",
                f"Flow runs in a loop through mains {mains}: check their directions.",
                x,
                y,
            )
        )
    return out


def _direction(net: SewerNetwork) -> list[Defect]:
    out = []
    unknown = np.flatnonzero(net.direction_source == "unknown")
    if len(unknown):
        x, y = _mid(net, unknown[0])
        out.append(
            Defect(
                "direction_unknown",
                "warning",
                str(net.main_id[unknown[0]]),
                "",
                f"{len(unknown)} main(s) have no from/to fields, no inverts and no outfall to orient "
                "toward; kept as digitised (e.g. " + ", ".join(map(str, net.main_id[unknown[:5]])) + ").",
                x,
                y,
            )
        )
    # Mains whose given direction (fields or inverts) runs away from the outfall the network leads to.
    given = np.isin(net.direction_source, ["from_to_fields", "inverts", "digitised"])
    drains = net.drains()
    d = net.downstream_ft
    against = given & drains[net.u] & drains[net.v] & (d[net.v] > d[net.u] + 1e-6)
    for e in np.flatnonzero(against):
        x, y = _mid(net, e)
        out.append(
            Defect(
                "against_flow",
                "warning",
                str(net.main_id[e]),
                "",
                f"Main {net.main_id[e]} flows ({net.direction_source[e]}) from "
                f"{net.node_id[net.u[e]]} to {net.node_id[net.v[e]]}, away from the outfall its "
                "piece drains to.",
                x,
                y,
            )
        )
    return out


def _slopes(net: SewerNetwork) -> list[Defect]:
    gravity = net.sewer_type != "force"
    adverse = (
        gravity
        & np.isfinite(net.us_invert_ft)
        & np.isfinite(net.ds_invert_ft)
        & (net.ds_invert_ft > net.us_invert_ft + 1e-3)
    )
    out = []
    for e in np.flatnonzero(adverse):
        x, y = _mid(net, e)
        out.append(
            Defect(
                "adverse_slope",
                "error",
                str(net.main_id[e]),
                "",
                f"Main {net.main_id[e]} runs uphill: downstream invert {net.ds_invert_ft[e]:.2f} ft above "
                f"upstream invert {net.us_invert_ft[e]:.2f} ft.",
                x,
                y,
            )
        )
    return out


def _degree(net: SewerNetwork) -> np.ndarray:
    return np.bincount(net.u, minlength=net.n_nodes) + np.bincount(net.v, minlength=net.n_nodes)


def _dangling(net: SewerNetwork) -> list[Defect]:
    loose = (_degree(net) == 1) & ~net.node_is_manhole & ~net.node_is_outfall
    out = []
    for node in np.flatnonzero(loose):
        x, y = _at(net, node)
        e = np.flatnonzero((net.u == node) | (net.v == node))[0]
        out.append(
            Defect(
                "dangling_end",
                "warning",
                str(net.main_id[e]),
                "",
                f"Main {net.main_id[e]} ends at {net.node_id[node]} with no manhole and no other main.",
                x,
                y,
            )
        )
    return out


def _junctions(net: SewerNetwork) -> list[Defect]:
    """Places where two or more mains meet with no manhole: the network has a junction node there."""
    meeting = (_degree(net) >= 2) & ~net.node_is_manhole & ~net.node_is_outfall
    out = []
    for node in np.flatnonzero(meeting):
        x, y = _at(net, node)
        mains = net.main_id[(net.u == node) | (net.v == node)]
        out.append(
            Defect(
                "junction_without_manhole",
                "warning",
                str(net.node_id[node]),
                "",
                f"Mains {', '.join(map(str, mains))} meet at {net.node_id[node]} with no manhole mapped there.",
                x,
                y,
            )
        )
    return out


def _duplicates(net: SewerNetwork) -> list[Defect]:
    lo, hi = np.minimum(net.u, net.v), np.maximum(net.u, net.v)
    frame = pd.DataFrame({"lo": lo, "hi": hi, "len": np.round(net.length_ft, 0), "e": np.arange(len(lo))})
    dup = frame[frame.duplicated(["lo", "hi", "len"], keep=False)]
    out = []
    for _, group in dup.groupby(["lo", "hi", "len"]):
        es = group["e"].to_numpy()
        x, y = _mid(net, es[0])
        out.append(
            Defect(
                "duplicate_main",
                "warning",
                str(net.main_id[es[1]]),
                "",
                f"Mains {', '.join(map(str, net.main_id[es]))} join the same two nodes with the same "
                "length: one is probably drawn twice.",
                x,
                y,
            )
        )
    return out


def _diversions(net: SewerNetwork) -> list[Defect]:
    out_degree = np.bincount(net.u, minlength=net.n_nodes)
    out = []
    for node in np.flatnonzero(out_degree > 1):
        x, y = _at(net, node)
        mains = net.main_id[net.u == node]
        out.append(
            Defect(
                "split_flow",
                "warning",
                str(net.node_id[node]),
                "",
                f"Flow leaves {net.node_id[node]} through {len(mains)} mains ({', '.join(map(str, mains))});"
                f" traces follow {net.main_id[net.next_main[node]]}.",
                x,
                y,
            )
        )
    return out


def _manholes_without_mains(net: SewerNetwork, manholes, tol: float) -> list[Defect]:
    used = set(map(str, net.node_id[np.unique(np.concatenate([net.u, net.v]))])) if len(net.u) else set()
    geoms = np.asarray(manholes.geometry.values)
    ids = manholes["manhole_id"].astype(str).to_numpy() if "manhole_id" in manholes else np.array([])
    touching = np.zeros(len(geoms), bool)
    if len(net.geometry):
        hit, _ = shapely.STRtree(net.geometry).query(geoms, predicate="dwithin", distance=tol)
        touching[hit] = True
    out = []
    for k in np.flatnonzero(~np.isin(ids, list(used)) & ~touching):
        p = geoms[k]
        out.append(
            Defect(
                "manhole_without_main",
                "warning",
                str(ids[k]),
                "",
                f"Manhole {ids[k]} has no main ending at it.",
                p.x,
                p.y,
            )
        )
    return out


def _diameters(net: SewerNetwork, rule) -> list[Defect]:
    small = (net.sewer_type != "force") & np.isfinite(net.diameter_in) & (net.diameter_in < rule.value)
    out = []
    for e in np.flatnonzero(small):
        x, y = _mid(net, e)
        out.append(
            Defect(
                "min_diameter",
                "error",
                str(net.main_id[e]),
                rule.citation,
                f"Main {net.main_id[e]} is {net.diameter_in[e]:g} in; {rule.citation} requires at least "
                f"{rule.value:g} in.",
                x,
                y,
            )
        )
    return out


def _spacing(net: SewerNetwork, rule) -> list[Defect]:
    """Length of flow path from each manhole to the next manhole downstream, by pointer jumping."""
    n = net.n_nodes
    has = net.next_main >= 0
    step_to = np.where(has, net.v[np.clip(net.next_main, 0, None)] if len(net.v) else 0, np.arange(n))
    step_len = np.where(has, net.length_ft[np.clip(net.next_main, 0, None)] if len(net.v) else 0.0, 0.0)
    ptr, acc = step_to.copy(), step_len.copy()
    for _ in range(max(1, int(np.ceil(np.log2(max(n, 2)))) + 1)):
        go = ~net.node_is_manhole[ptr] & (net.next_main[ptr] >= 0)
        acc = np.where(go, acc + acc[ptr], acc)
        ptr = np.where(go, ptr[ptr], ptr)
    long_run = net.node_is_manhole & has & net.node_is_manhole[ptr] & (acc > rule.value + 0.5)
    out = []
    for node in np.flatnonzero(long_run):
        x, y = _at(net, node)
        out.append(
            Defect(
                "manhole_spacing",
                "error",
                str(net.node_id[node]),
                rule.citation,
                f"{acc[node]:,.0f} ft of sewer from manhole {net.node_id[node]} to the next manhole "
                f"{net.node_id[ptr[node]]}; {rule.citation} allows at most {rule.value:g} ft.",
                x,
                y,
            )
        )
    return out


def _alignment(net: SewerNetwork, profile: Profile) -> list[Defect]:
    """Bends and slope changes away from manholes: inside a main, or where mains meet at a junction."""
    rules = profile.network
    limit = rules.alignment_change_deg.value
    section = rules.manhole_at_alignment_change.citation
    out = []
    coords, which = shapely.get_coordinates(net.geometry, return_index=True)
    if len(coords) >= 3:
        d = np.diff(coords, axis=0)
        same = which[1:] == which[:-1]
        heading = np.degrees(np.arctan2(d[:, 1], d[:, 0]))
        turn = np.abs((heading[1:] - heading[:-1] + 180) % 360 - 180)
        inner = same[1:] & same[:-1]
        for k in np.flatnonzero(inner & (turn > limit)):
            e = which[k + 1]
            out.append(
                Defect(
                    "alignment_change",
                    "error",
                    str(net.main_id[e]),
                    section,
                    f"Main {net.main_id[e]} bends {turn[k]:.0f} degrees with no manhole at the bend; "
                    f"{section} requires manholes at all changes in alignment.",
                    float(coords[k + 1, 0]),
                    float(coords[k + 1, 1]),
                )
            )
    # Junction nodes (not manholes) with one main in and one out.
    indeg = np.bincount(net.v, minlength=net.n_nodes)
    outdeg = np.bincount(net.u, minlength=net.n_nodes)
    nodes = np.flatnonzero(~net.node_is_manhole & (indeg == 1) & (outdeg == 1) & ~net.node_is_outfall)
    if len(nodes):
        e_in = pd.Series(np.arange(len(net.v))).groupby(net.v).first().reindex(nodes).to_numpy()
        e_out = net.next_main[nodes]
        h_in = _end_heading(net.geometry[e_in], -1)
        h_out = _end_heading(net.geometry[e_out], 0)
        turn = np.abs((h_out - h_in + 180) % 360 - 180)
        slope_in = (net.us_invert_ft[e_in] - net.ds_invert_ft[e_in]) / net.length_ft[e_in]
        slope_out = (net.us_invert_ft[e_out] - net.ds_invert_ft[e_out]) / net.length_ft[e_out]
        slope_jump = np.abs(slope_in - slope_out) > rules.slope_change_ft_per_ft.value
        for k in np.flatnonzero((turn > limit) | slope_jump):
            node = nodes[k]
            x, y = _at(net, node)
            what = (
                f"changes alignment by {turn[k]:.0f} degrees"
                if turn[k] > limit
                else f"changes slope from {slope_in[k]:.4f} to {slope_out[k]:.4f} ft/ft"
            )
            out.append(
                Defect(
                    "alignment_change",
                    "error",
                    str(net.main_id[e_out[k]]),
                    section,
                    f"The sewer {what} at {net.node_id[node]}, where mains {net.main_id[e_in[k]]} and "
                    f"{net.main_id[e_out[k]]} meet without a manhole; {section} requires one.",
                    x,
                    y,
                )
            )
    return out


def _end_heading(lines: np.ndarray, end: int) -> np.ndarray:
    a = shapely.get_point(lines, 0 if end == 0 else -2)
    b = shapely.get_point(lines, 1 if end == 0 else -1)
    return np.degrees(np.arctan2(shapely.get_y(b) - shapely.get_y(a), shapely.get_x(b) - shapely.get_x(a)))
