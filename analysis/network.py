"""The sewer network as a directed graph: nodes (manholes, junctions, outfalls) and mains in flow direction.

Built from arrays, never row by row:

1. Mains that are part of the public sewer: storm, abandoned and proposed mains never; private ones only when
   the profile says. Multi-part mains are split into their parts; zero-length mains are dropped and reported.
2. A main whose interior passes within the snap tolerance of another main's end (a T not split at the junction),
   or of a manhole, is split there and reported. Mains that cross without a shared point stay unconnected.
3. Every main end is snapped to the nearest manhole within ``snap_tolerance_ft``; ends meeting no manhole are
   clustered into junction nodes (``J-1`` ...). Manholes closer together than the tolerance are one node.
4. Direction, first that applies, recorded per main in ``direction_source``: ``from_to_fields`` (the main names
   its from and to manholes), ``inverts`` (higher invert upstream), ``digitised`` (only when the user says the
   data is drawn in flow direction), ``inferred`` (each piece oriented toward its outfall by network distance),
   else ``unknown`` (kept as digitised, and reported).
5. Outfalls: nodes named by a treatment-plant/outfall layer (``outfall_manhole``), else for each piece of the
   network that comes within ``outfall_snap_ft`` of a plant point its nearest node (a plant may have several
   inlets); manholes whose structure says outfall or plant; otherwise nodes with no downstream main.

Every node then gets, in one vectorised pass of pointer jumping over its next-hop main: the node it finally
drains to, the length in feet to it, and its control manhole (the first manhole at or below it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import geopandas as gpd
import networkx as nx
import numpy as np
import pandas as pd
import shapely
import shapely.ops
from pyproj import CRS
from scipy import sparse
from scipy.sparse import csgraph

from analysis._parallel import map_chunks, nearest_within, paused_gc, within_pairs
from analysis.errors import AnalysisError
from analysis.profiles import Profile
from analysis.units import feet_per_unit

OUTFALL_WORDS = r"outfall|plant|wwtp|wwtf|treatment|outlet"


@dataclass(frozen=True)
class Defect:
    """One thing wrong with the network, located, with the rule it breaks."""

    check: str
    severity: str
    feature_id: str
    section: str
    message: str
    x: float = float("nan")
    y: float = float("nan")

    def as_dict(self) -> dict:
        return {
            "check": self.check,
            "severity": self.severity,
            "feature_id": self.feature_id,
            "section": self.section,
            "message": self.message,
        }


@dataclass(frozen=True)
class SewerNetwork:
    """Nodes and mains as arrays; ``u -> v`` is the flow direction of main ``e``."""

    node_id: np.ndarray
    node_xy: np.ndarray
    node_is_manhole: np.ndarray
    node_is_outfall: np.ndarray
    main_id: np.ndarray
    u: np.ndarray
    v: np.ndarray
    length_ft: np.ndarray
    geometry: np.ndarray
    diameter_in: np.ndarray
    us_invert_ft: np.ndarray
    ds_invert_ft: np.ndarray
    sewer_type: np.ndarray
    material: np.ndarray
    direction_source: np.ndarray
    next_main: np.ndarray
    terminal: np.ndarray
    downstream_ft: np.ndarray
    control_manhole: np.ndarray
    piece: np.ndarray
    crs: CRS
    fpu: float
    defects: list[Defect] = field(default_factory=list)

    @property
    def n_nodes(self) -> int:
        return len(self.node_id)

    @cached_property
    def node_index(self) -> dict[str, int]:
        return {str(k): i for i, k in enumerate(self.node_id)}

    def drains(self) -> np.ndarray:
        """True for nodes whose flow reaches an outfall."""
        return (self.terminal >= 0) & self.node_is_outfall[np.clip(self.terminal, 0, None)]

    @cached_property
    def graph(self) -> nx.DiGraph:
        """The network as a networkx DiGraph (built on first use): node and edge attributes as documented."""
        g = nx.MultiDiGraph()
        g.add_nodes_from(
            (str(n), {"x": float(x), "y": float(y), "manhole": bool(m), "outfall": bool(o)})
            for n, (x, y), m, o in zip(
                self.node_id, self.node_xy, self.node_is_manhole, self.node_is_outfall, strict=True
            )
        )
        g.add_edges_from(
            (
                str(self.node_id[a]),
                str(self.node_id[b]),
                {
                    "main_id": str(mid),
                    "length_ft": float(length),
                    "diameter_in": float(d),
                    "direction_source": str(src),
                },
            )
            for a, b, mid, length, d, src in zip(
                self.u, self.v, self.main_id, self.length_ft, self.diameter_in, self.direction_source, strict=True
            )
        )
        return g


def build_network(
    mains: gpd.GeoDataFrame,
    *,
    profile: Profile,
    manholes: gpd.GeoDataFrame | None = None,
    outfalls: gpd.GeoDataFrame | None = None,
    trust_digitised: bool | None = None,
) -> SewerNetwork:
    """Build the directed sewer network from validated layers (one projected CRS). See the module docstring.

    Examples
    --------
    >>> from shapely.geometry import LineString, Point
    >>> from analysis.profiles import load_profile
    >>> mains = gpd.GeoDataFrame({"main_id": ["A", "B"]}, geometry=[
    ...     LineString([(0, 0), (300, 0)]), LineString([(600, 0), (300, 0)])], crs="EPSG:2260")
    >>> mhs = gpd.GeoDataFrame({"manhole_id": ["MH1", "MH2", "MH3"]},
    ...     geometry=[Point(0, 0), Point(300, 0), Point(600, 0)], crs="EPSG:2260")
    >>> plant = gpd.GeoDataFrame({"outfall_manhole": ["MH3"]}, geometry=[Point(650, 0)], crs="EPSG:2260")
    >>> net = build_network(mains, manholes=mhs, outfalls=plant, profile=load_profile("fort-plain"))
    >>> [str(net.node_id[i]) for i in net.v], list(net.direction_source)
    (['MH2', 'MH3'], ['inferred', 'inferred'])
    >>> float(net.downstream_ft[net.node_index["MH1"]])
    600.0
    """
    crs = CRS(mains.crs)
    if not crs.is_projected:
        raise AnalysisError("Mains must be in a projected CRS before the network is built.")
    manholes = active_manholes(manholes)
    with paused_gc():
        return _build(
            mains,
            manholes,
            outfalls,
            profile,
            crs,
            profile.network.trust_digitised_direction.value if trust_digitised is None else trust_digitised,
        )


def active_manholes(manholes: gpd.GeoDataFrame | None) -> gpd.GeoDataFrame | None:
    """Manholes that are part of the live sewer: abandoned and proposed ones are left out, as mains are."""
    if manholes is None or "status" not in manholes.columns:
        return manholes
    return manholes[~manholes["status"].isin(["abandoned", "proposed"]).to_numpy()]


def _col(frame: gpd.GeoDataFrame | None, name: str, n: int, default=None) -> np.ndarray:
    if frame is None or name not in frame.columns:
        return np.full(n, default, dtype=object)
    return frame[name].astype(object).where(frame[name].notna(), default).to_numpy(object)


def _num(frame: gpd.GeoDataFrame, name: str) -> np.ndarray:
    if name not in frame.columns:
        return np.full(len(frame), np.nan)
    return pd.to_numeric(frame[name], errors="coerce").to_numpy(float)


def _build(mains, manholes, outfalls, profile: Profile, crs: CRS, trust_digitised: bool) -> SewerNetwork:
    net_rules = profile.network
    fpu = feet_per_unit(crs)
    tol = net_rules.snap_tolerance_ft.value / fpu
    defects: list[Defect] = []

    # 1. Which mains, as single lines.
    kind = _col(mains, "sewer_type", len(mains))
    status = _col(mains, "status", len(mains))
    owner = _col(mains, "ownership", len(mains))
    keep = (kind != "storm") & ~np.isin(status, ["abandoned", "proposed"])
    if not net_rules.include_private_mains.value:
        keep &= owner != "private"
    kept = mains[keep]
    ids = _col(kept, "main_id", len(kept), None)
    parts, part_of = shapely.get_parts(np.asarray(kept.geometry.values), return_index=True)
    lines = parts
    row = part_of  # position in ``kept``
    length = shapely.length(lines)
    zero = length * fpu < 0.01
    for i in np.flatnonzero(zero):
        p = shapely.get_point(lines[i], 0)
        defects.append(
            Defect(
                "zero_length_main",
                "error",
                str(ids[row[i]]),
                "",
                f"Main {ids[row[i]]} has no length; left out of the network.",
                p.x,
                p.y,
            )
        )
    lines, row = lines[~zero], row[~zero]

    mh_geoms = np.asarray(manholes.geometry.values) if manholes is not None and len(manholes) else np.empty(0, object)
    mh_ids = _col(manholes, "manhole_id", len(mh_geoms)) if len(mh_geoms) else np.empty(0, object)

    # 2. Split mains at interior points where another main ends, or where a manhole stands.
    lines, row, split_defects = _split_at_junctions(lines, row, ids, mh_geoms, mh_ids, tol)
    defects += split_defects

    # 3. Nodes.
    starts, ends = shapely.get_point(lines, 0), shapely.get_point(lines, -1)
    node_id, node_xy, node_is_manhole, end_node, mh_node, node_defects = _nodes(
        np.concatenate([starts, ends]), mh_geoms, mh_ids, tol
    )
    defects += node_defects
    a, b = end_node[: len(lines)], end_node[len(lines) :]
    n_nodes = len(node_id)

    # Outfalls.
    piece = csgraph.connected_components(_adjacency(n_nodes, a, b), directed=False)[1]
    structure = _col(manholes, "structure", len(mh_geoms), "") if len(mh_geoms) else np.empty(0, object)
    is_outfall = np.zeros(n_nodes, dtype=bool)
    if len(mh_geoms):
        marked = pd.Series(structure, dtype=object).fillna("").astype(str).str.lower().str.contains(OUTFALL_WORDS)
        marked &= mh_node >= 0
        is_outfall[mh_node[marked.to_numpy()]] = True
    if outfalls is not None and len(outfalls):
        is_outfall |= _outfall_nodes(outfalls, node_id, node_xy, piece, net_rules.outfall_snap_ft.value / fpu, defects)

    # 4. Direction.
    main_ids = ids[row]
    geoms = lines
    forward, source = _directions(kept, row, a, b, node_id, main_ids, trust_digitised)
    u0, v0 = np.where(forward, a, b), np.where(forward, b, a)
    length_ft = shapely.length(geoms) * fpu
    unknown = source == "unknown"
    dist = _distance_to_outfalls(n_nodes, a, b, length_ft, is_outfall)
    if unknown.any():
        da, db = dist[a], dist[b]
        can = unknown & np.isfinite(da) & np.isfinite(db) & (da != db)
        # inferred: flow from the end farther (by network distance) from an outfall to the nearer one
        forward = np.where(can, da > db, forward)
        source = np.where(can, "inferred", source)
        u0, v0 = np.where(forward, a, b), np.where(forward, b, a)

    # When no outfall is named, nodes that only receive flow are the outfalls of their pieces.
    out_degree = np.bincount(u0, minlength=n_nodes)
    in_degree = np.bincount(v0, minlength=n_nodes)
    has_outfall = np.zeros(piece.max() + 1 if n_nodes else 0, dtype=bool)
    has_outfall[piece[is_outfall]] = True
    undirected_piece = piece[a[source == "unknown"]]
    sinks = (out_degree == 0) & (in_degree > 0) & ~has_outfall[piece] & ~np.isin(piece, undirected_piece)
    is_outfall |= sinks

    reverse = ~forward
    oriented = geoms.copy()
    oriented[reverse] = shapely.reverse(geoms[reverse])
    us_inv, ds_inv = _inverts(kept, row, forward)
    diameter = _num(kept, "diameter_in")[row]
    sewer_type = _col(kept, "sewer_type", len(kept), "sanitary")[row]
    material = _col(kept, "material", len(kept), None)[row]

    # 5. Next-hop main for every node, then pointer jumping for terminal, length and control manhole.
    next_main = _next_mains(n_nodes, u0, v0, dist)
    terminal, downstream = _jump(next_main, v0, length_ft)
    control = _first_manhole(next_main, v0, node_is_manhole)
    drains = (terminal >= 0) & is_outfall[np.clip(terminal, 0, None)]
    downstream = np.where(drains, downstream, np.nan)

    return SewerNetwork(
        node_id=node_id,
        node_xy=node_xy,
        node_is_manhole=node_is_manhole,
        node_is_outfall=is_outfall,
        main_id=main_ids.astype(object),
        u=u0,
        v=v0,
        length_ft=length_ft,
        geometry=oriented,
        diameter_in=diameter,
        us_invert_ft=us_inv,
        ds_invert_ft=ds_inv,
        sewer_type=sewer_type,
        material=material,
        direction_source=source.astype(object),
        next_main=next_main,
        terminal=terminal,
        downstream_ft=downstream,
        control_manhole=control,
        piece=piece,
        crs=crs,
        fpu=fpu,
        defects=defects,
    )


def _split_at_junctions(lines, row, ids, mh_geoms, mh_ids, tol):
    """Split mains where another main's end, or a manhole, lies on their interior."""
    defects: list[Defect] = []
    if len(lines) == 0:
        return lines, row, defects
    ends = np.concatenate([shapely.get_point(lines, 0), shapely.get_point(lines, -1)])
    owner = np.concatenate([np.arange(len(lines)), np.arange(len(lines))])
    points = np.concatenate([ends, mh_geoms])
    what = np.concatenate([np.full(len(ends), "end"), np.full(len(mh_geoms), "manhole")])
    point_owner = np.concatenate([owner, np.full(len(mh_geoms), -1)])
    tree = shapely.STRtree(lines)
    first, last = shapely.get_coordinates(ends[: len(lines)]), shapely.get_coordinates(ends[len(lines) :])
    xy = shapely.get_coordinates(points)

    def candidates(part: slice):
        # Pairs by envelope; a point within the tolerance of one of the line's own ends is a shared node, not a
        # junction on its interior: dropped with plain arithmetic before any GEOS distance is computed.
        b = xy[part]
        i_in, i_line = tree.query(shapely.box(b[:, 0] - tol, b[:, 1] - tol, b[:, 0] + tol, b[:, 1] + tol))
        i_in += part.start
        at_end = (np.hypot(*(xy[i_in] - first[i_line]).T) <= tol) | (np.hypot(*(xy[i_in] - last[i_line]).T) <= tol)
        keep = ~at_end & (point_owner[i_in] != i_line)
        return i_in[keep], i_line[keep]

    parts = map_chunks(candidates, len(points), 2)
    p_idx = np.concatenate([c[0] for c in parts]) if parts else np.zeros(0, np.int64)
    l_idx = np.concatenate([c[1] for c in parts]) if parts else np.zeros(0, np.int64)
    near = shapely.distance(points[p_idx], lines[l_idx]) <= tol
    p_idx, l_idx = p_idx[near], l_idx[near]
    along = shapely.line_locate_point(lines[l_idx], points[p_idx])
    interior = (along > tol) & (along < shapely.length(lines[l_idx]) - tol)
    p_idx, l_idx, along = p_idx[interior], l_idx[interior], along[interior]
    if len(p_idx) == 0:
        return lines, row, defects
    cuts = pd.DataFrame({"line": l_idx, "along": along, "point": p_idx}).sort_values(["line", "along"])
    cuts = cuts.drop_duplicates(["line", "along"])
    new_lines, new_rows = [lines[np.setdiff1d(np.arange(len(lines)), cuts["line"].unique())]], []
    new_rows.append(row[np.setdiff1d(np.arange(len(lines)), cuts["line"].unique())])
    # Only mains with a junction in their interior are visited here: a handful in real data.
    for line_i, group in cuts.groupby("line", sort=False):
        marks = [0.0, *group["along"].tolist(), float(shapely.length(lines[line_i]))]
        pieces = [
            shapely.ops.substring(lines[line_i], s, e) for s, e in zip(marks[:-1], marks[1:], strict=True) if e - s > 0
        ]
        new_lines.append(np.array(pieces, dtype=object))
        new_rows.append(np.full(len(pieces), row[line_i]))
        for _, cut in group.iterrows():
            pt = points[int(cut["point"])]
            if what[int(cut["point"])] == "manhole":
                mh = mh_ids[int(cut["point"]) - len(ends)]
                check, msg = (
                    "main_through_manhole",
                    (f"Main {ids[row[line_i]]} passes through manhole {mh} without a break; split there."),
                )
            else:
                other = ids[row[owner[int(cut["point"])]]]
                check, msg = (
                    "unsplit_junction",
                    (
                        f"Main {other} ends on the middle of main {ids[row[line_i]]} (a "
                        "junction not split in the data); split there."
                    ),
                )
            defects.append(Defect(check, "warning", str(ids[row[line_i]]), "", msg, pt.x, pt.y))
    return np.concatenate(new_lines), np.concatenate(new_rows), defects


def _clusters(points: np.ndarray, tol: float) -> np.ndarray:
    """Cluster label per point: points within ``tol`` of each other (transitively) share one."""
    if len(points) == 0:
        return np.zeros(0, dtype=np.int64)
    i, j, _ = within_pairs(shapely.STRtree(points), points, tol, workers=2)
    graph = sparse.coo_matrix((np.ones(len(i), dtype=np.int8), (i, j)), shape=(len(points), len(points)))
    return csgraph.connected_components(graph, directed=False)[1]


def _nodes(ends: np.ndarray, mh_geoms: np.ndarray, mh_ids: np.ndarray, tol: float):
    """Nodes: manholes (co-located ones merged), then junctions for ends that meet no manhole."""
    defects: list[Defect] = []
    mh_label = _clusters(mh_geoms, tol)
    first_of = (
        pd.Series(np.arange(len(mh_geoms))).groupby(mh_label).first().to_numpy()
        if len(mh_geoms)
        else np.zeros(0, dtype=np.int64)
    )
    if len(mh_geoms) and len(first_of) < len(mh_geoms):
        for label in np.flatnonzero(np.bincount(mh_label) > 1):
            members = mh_ids[mh_label == label]
            pt = mh_geoms[first_of[label]]
            defects.append(
                Defect(
                    "duplicate_manhole",
                    "warning",
                    str(members[0]),
                    "",
                    f"Manholes {', '.join(map(str, members))} stand at the same spot; treated as one "
                    f"node ({members[0]}).",
                    pt.x,
                    pt.y,
                )
            )
    mh_node = mh_label.astype(np.int64)  # manhole i -> node position (manhole nodes come first)
    n_mh = len(first_of)
    node_ids = [mh_ids[first_of].astype(object)]
    node_xy = [shapely.get_coordinates(mh_geoms[first_of]).reshape(-1, 2)]

    end_node = np.full(len(ends), -1, dtype=np.int64)
    if n_mh:
        e_idx, m_idx = nearest_within(shapely.STRtree(mh_geoms[first_of]), ends, tol, workers=2)
        end_node[e_idx] = m_idx
    loose = np.flatnonzero(end_node < 0)
    labels = _clusters(ends[loose], tol)
    n_j = int(labels.max()) + 1 if len(labels) else 0
    end_node[loose] = n_mh + labels
    firsts = pd.Series(loose).groupby(labels).first().to_numpy() if len(loose) else np.zeros(0, dtype=np.int64)
    node_ids.append(np.array([f"J-{k + 1}" for k in range(n_j)], dtype=object))
    node_xy.append(shapely.get_coordinates(ends[firsts]).reshape(-1, 2))
    is_mh = np.concatenate([np.ones(n_mh, bool), np.zeros(n_j, bool)])
    return (np.concatenate(node_ids), np.concatenate(node_xy), is_mh, end_node, mh_node, defects)


def _outfall_nodes(outfalls, node_id, node_xy, piece, reach, defects) -> np.ndarray:
    """Nodes named by the outfall layer's ``outfall_manhole``; else, for every piece of the network that comes
    within ``reach`` of the plant, that piece's nearest node (a plant often has several inlets)."""
    flags = np.zeros(len(node_id), dtype=bool)
    named = _col(outfalls, "outfall_manhole", len(outfalls))
    labels = _col(outfalls, "outfall_name", len(outfalls))
    fallback = _col(outfalls, "outfall_id", len(outfalls))
    index = {str(k): i for i, k in enumerate(node_id)}
    pts = np.asarray(outfalls.geometry.values)
    tree = shapely.STRtree(shapely.points(node_xy)) if len(node_id) else None
    for k in range(len(outfalls)):  # a town has one plant or a few outfalls
        label = labels[k] or fallback[k]
        if named[k] is not None and str(named[k]) in index:
            flags[index[str(named[k])]] = True
            continue
        near = tree.query(pts[k], predicate="dwithin", distance=reach) if tree is not None else np.zeros(0, int)
        if len(near) == 0:
            defects.append(
                Defect(
                    "outfall_not_on_network",
                    "error",
                    str(label),
                    "",
                    f"Outfall {label} is more than the outfall reach from any main end; name its inlet "
                    "manhole in an outfall_manhole column.",
                    pts[k].x,
                    pts[k].y,
                )
            )
            continue
        d = np.hypot(*(node_xy[near] - [pts[k].x, pts[k].y]).T)
        nearest = pd.DataFrame({"node": near, "d": d, "piece": piece[near]}).sort_values(["d", "node"])
        flags[nearest.drop_duplicates("piece")["node"].to_numpy()] = True
    return flags


def _directions(kept, row, a, b, node_id, main_ids, trust_digitised):
    """``forward`` (flow runs from the first vertex to the last) and its source, per main piece."""
    n = len(row)
    forward = np.ones(n, dtype=bool)
    source = np.full(n, "unknown", dtype=object)
    names_a, names_b = node_id[a].astype(str), node_id[b].astype(str)
    # The whole main's ends: first piece's start, last piece's end (pieces of a split main keep its direction).
    first_a = pd.Series(names_a).groupby(row).transform("first").to_numpy()
    last_b = pd.Series(names_b).groupby(row).transform("last").to_numpy()
    frm = _col(kept, "from_manhole", len(kept))[row]
    to = _col(kept, "to_manhole", len(kept))[row]
    given = pd.notna(frm) & pd.notna(to)
    frm_s, to_s = frm.astype(str), to.astype(str)
    same = given & (frm_s == first_a) & (to_s == last_b)
    flipped = given & (frm_s == last_b) & (to_s == first_a)
    forward = np.where(flipped, False, forward)
    source = np.where(same | flipped, "from_to_fields", source)

    us = _num(kept, "us_invert_ft")[row]
    ds = _num(kept, "ds_invert_ft")[row]
    by_invert = (source == "unknown") & np.isfinite(us) & np.isfinite(ds) & (np.abs(us - ds) > 1e-3)
    forward = np.where(by_invert, us > ds, forward)
    source = np.where(by_invert, "inverts", source)
    if trust_digitised:
        source = np.where(source == "unknown", "digitised", source)
    return forward, source


def _inverts(kept, row, forward):
    us = _num(kept, "us_invert_ft")[row]
    ds = _num(kept, "ds_invert_ft")[row]
    return np.where(forward, us, ds), np.where(forward, ds, us)


def _adjacency(n: int, a: np.ndarray, b: np.ndarray, weight: np.ndarray | None = None):
    w = np.ones(len(a)) if weight is None else weight
    return sparse.coo_matrix((w, (a, b)), shape=(n, n)).tocsr()


def _distance_to_outfalls(n, a, b, length_ft, is_outfall) -> np.ndarray:
    """Network distance (ft) from every node to its nearest outfall, ignoring direction; inf where none."""
    if not is_outfall.any() or n == 0:
        return np.full(n, np.inf)
    graph = _adjacency(n, a, b, np.maximum(length_ft, 1e-6))
    return csgraph.dijkstra(graph, directed=False, indices=np.flatnonzero(is_outfall), min_only=True)


def _next_mains(n: int, u: np.ndarray, v: np.ndarray, dist: np.ndarray) -> np.ndarray:
    """For every node, the main it drains through (-1 at an outfall or dead end); at a split, the one whose far
    end is nearest an outfall (then the lowest position)."""
    nxt = np.full(n, -1, dtype=np.int64)
    if len(u) == 0:
        return nxt
    order = np.lexsort((np.arange(len(u)), dist[v], u))
    first = order[np.r_[True, u[order][1:] != u[order][:-1]]]
    nxt[u[first]] = first
    return nxt


def _jump(next_main: np.ndarray, v: np.ndarray, length_ft: np.ndarray):
    """Pointer jumping: the node each node finally drains to (-1 inside a cycle) and the length to it."""
    n = len(next_main)
    has = next_main >= 0
    ptr = np.where(has, v[np.clip(next_main, 0, None)] if len(v) else 0, np.arange(n))
    acc = np.where(has, length_ft[np.clip(next_main, 0, None)] if len(v) else 0.0, 0.0)
    for _ in range(max(1, int(np.ceil(np.log2(max(n, 2)))) + 1)):
        acc = acc + np.where(ptr != np.arange(n), acc[ptr], 0.0)
        ptr = ptr[ptr]
    cycle = next_main[ptr] >= 0  # still moving after log2(n) doublings: the path loops
    return np.where(cycle, -1, ptr), np.where(cycle, np.nan, acc)


def _first_manhole(next_main: np.ndarray, v: np.ndarray, is_manhole: np.ndarray) -> np.ndarray:
    """For every node, the first manhole at or downstream of it (-1 if the path meets none)."""
    n = len(next_main)
    has = next_main >= 0
    ptr = np.where(is_manhole | ~has, np.arange(n), v[np.clip(next_main, 0, None)] if len(v) else 0)
    for _ in range(max(1, int(np.ceil(np.log2(max(n, 2)))) + 1)):
        ptr = ptr[ptr]
    return np.where(is_manhole[ptr], ptr, -1)
