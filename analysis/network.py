"""The sewer network as a directed graph: nodes (manholes, junctions, outfalls) and mains in flow direction.

Two ways in, one graph out:

- **GIS layers** (geometry is the topology). Mains that are part of the public sewer (storm, abandoned and
  proposed mains never; private ones only when the profile says) are split into their parts; empty and
  zero-length mains are left out and reported. A main whose interior passes within the snap tolerance of another
  main's end (a T not split at the junction), or of a manhole, is split there and reported. Every main end snaps
  to the nearest manhole within ``snap_tolerance_ft``; ends meeting no manhole are clustered into junction nodes
  (``J-1`` ...). Lengths are a ``length_ft`` column where the layer has one, else the measured geometry.
- **A SWMM model** (mains with a ``swmm_section`` column, as ``layers.swmm`` reads them). The topology is the
  model's: each link joins the nodes its From and To name; nothing is split, snapped or joined by geometry, and
  the lengths are the model's. Coordinates may be schematic (no real-world CRS).

Direction, first that applies, recorded per main in ``direction_source``:

1. ``from_to_fields``: the main names its from or to manhole and that name is at one of its ends (a SWMM link
   always: the model's From and To).
2. A force main (``sewer_type`` force, pumped) keeps its drawn direction (``digitised``): its inverts may rise.
3. ``inverts``: the higher invert is upstream, unless that would leave the lower end a dead end (no main leaves
   it, not an outfall) while the network leads the other way to an outfall: then the main is a gravity main laid
   uphill, kept in the direction the network drains (``inferred``) and reported as ``adverse_slope``. Each invert
   is read at the end it belongs to (``_invert_ends``, recorded in ``invert_ends_source``): where the manholes'
   own inverts place it, else at the end the from/to fields name for columns named by the flow, else as drawn.
4. ``digitised``: only when the user says the data is drawn in flow direction.
5. ``inferred``: toward the nearest outfall by network distance, in pieces that have one.
6. else ``unknown`` (kept as digitised, and reported).

Outfalls are only what the data says: manholes whose ``structure`` is an outfall or a plant (inlet), a SWMM
model's [OUTFALLS], and the points of a treatment-plant layer (whose ``facility_type``, where given, says plant or
outfall). A plant point joins the node its ``outfall_manhole`` names; otherwise, in every piece of the network
within ``outfall_snap_ft``, the nearest node that is an end of the sewer (one main, or only mains flowing in).
A plant beside a node in the middle of a run is refused and reported, a plant point in a piece that already has a
named outfall is reported and not joined, and every join is reported with its distance. Any other downstream end
is a dead end: traces say where the flow stops, and ``network check`` reports it as ``no_outfall``.

Every node then gets its next main (at a split, of the ways that reach an outfall: a divider's way on, the
lowest way out, a pipe before a weir, orifice, outlet or pump as low, then the shortest), and in one
vectorised pass of pointer jumping: the node it finally drains to, the length in feet to it, and its control
manhole (the first manhole at or below it).
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

from analysis._parallel import map_chunks, nearest_of_pairs, paused_gc, query_pairs
from analysis.arrays import distinct
from analysis.errors import AnalysisError
from analysis.profiles import Profile
from analysis.units import feet_per_unit

# What a manholes-layer point is (``layers.schema.STRUCTURE_VALUES`` normalises users' values to these).
MANHOLE_STRUCTURES = ("manhole", "junction", "storage", "divider", "plant")
OUTFALL_STRUCTURES = ("outfall", "plant")
# Raw values in layers that did not pass validation (a store's original layers): the words that say the same.
_STRUCTURE_WORDS = (
    ("plant", r"plant|wwtp|wwtf|treatment|headworks"),
    ("outfall", r"outfall|discharge"),
    ("cleanout", r"clean ?-?out|\bco\b"),
    ("cap", r"\bcap\b|\bplug\b|end of line|\beol\b"),
    ("pump_station", r"pump|lift station"),
    ("other", r"valve|fitting|\bother\b"),
)
# What a treatment-plant-layer point is (``layers.schema.FACILITY_TYPE_VALUES``): only these end the sewer.
PLANT_FACILITIES = ("plant", "outfall")
_PLANT_WORDS = r"plant|outfall|wwtp|wwtf|potw|treatment|municipal|wpcp|wrrf"
# The largest sewer pipe made (reinforced concrete, ASTM C76's tables end at 144 in): a larger diameter is a typo
# (1000 for 10) or a model's dummy link, and was priced, checked and given capacity as if real.
LARGEST_PIPE_IN = 144.0
# Links of a SWMM model that are pipes; pumps, orifices, weirs and outlets are structures with no length.
PIPE_LINKS = ("conduit",)
# How near a manhole's own invert must be to one of a main's two inverts (and not to the other) to say the main's
# invert belongs at that manhole's end (ft): inverts are surveyed to the hundredth of a foot.
INVERT_MATCH_FT = 0.05


@dataclass(frozen=True)
class Defect:
    """One finding about the network, located, with the rule it concerns (``section``; empty for structure)."""

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
            "x": float(self.x) if np.isfinite(self.x) else None,
            "y": float(self.y) if np.isfinite(self.y) else None,
        }


@dataclass(frozen=True)
class SewerNetwork:
    """Nodes and mains as arrays; ``u -> v`` is the flow direction of main ``e``.

    ``node_kind`` is what each node is (``manhole``, ``cleanout``, ``outfall`` ... from the manholes layer; ``""``
    for a junction node where mains meet and no point is mapped). ``outfall_how`` says why a node is an outfall
    (``structure``, ``named`` by a plant's ``outfall_manhole``, ``joined`` from a plant point within reach; ``""``
    for other nodes). ``explicit`` networks come from a model's stated topology (SWMM); ``measurable`` is False
    when the coordinates are a model's own, in no real-world CRS.
    """

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
    node_kind: np.ndarray | None = None
    outfall_how: np.ndarray | None = None
    # The treatment plant (its name in the plants layer) that a node named or joined as its inlet ends at; "".
    outfall_plant: np.ndarray | None = None
    link_kind: np.ndarray | None = None
    # How far above its upstream node's invert each main takes flow (ft; a model's link offsets, 0 for GIS mains).
    inlet_ft: np.ndarray | None = None
    # Which evidence put each main's two inverts at its ends (``invert_ends``): "manholes", "from_to_fields",
    # "first_vertex", a model's "model"; "" where the main has no invert.
    invert_ends_source: np.ndarray | None = None
    # A model's flow divider's diverted link (its DivLink), which takes only the flow the divider sends aside.
    diverted: np.ndarray | None = None
    # A model's conduit's size as the model gives it, where it is not one round pipe ("2 x 12 in"); None elsewhere.
    # Its ``diameter_in`` is then the smallest inside dimension of one barrel.
    size_said: np.ndarray | None = None
    # The model's [CONTROLS] rules that act on each link ("R1, R2"; None where none), which traces do not follow.
    controls: np.ndarray | None = None
    # What says a model is a storm drainage model, not a sanitary sewer (street inlets, no dry-weather flow); "".
    storm_evidence: str = ""
    explicit: bool = False
    measurable: bool = True
    # The tree of the mains (its positions are the mains'), when the build already made one: see ``main_tree``.
    built_tree: shapely.STRtree | None = field(default=None, repr=False, compare=False)

    @property
    def n_nodes(self) -> int:
        return len(self.node_id)

    @cached_property
    def main_tree(self) -> shapely.STRtree:
        """An STRtree of the mains, positions as in ``geometry``: the build's when it made one, else made once here.

        The build's tree holds the mains as drawn, before some were reversed to run with the flow: the same
        envelopes and distances, so queries and distances give the same answers.
        """
        return self.built_tree if self.built_tree is not None else shapely.STRtree(self.geometry)

    @cached_property
    def node_index(self) -> dict[str, int]:
        return {str(k): i for i, k in enumerate(self.node_id)}

    @cached_property
    def out_degree(self) -> np.ndarray:
        """How many mains leave each node (more than one: the flow divides there)."""
        return np.bincount(self.u, minlength=self.n_nodes)

    @cached_property
    def upstream_links(self) -> sparse.csr_matrix:
        """Every main as an edge pointing upstream (``v -> u``): a search from a node finds every node whose flow can
        reach it by any way out, an overflow too. Made once per network (a plan asks for many mains)."""
        return _adjacency(self.n_nodes, self.v, self.u)

    @cached_property
    def upstream_traces(self) -> sparse.csr_matrix:
        """Each node's next main as an edge pointing upstream: a search from a node finds the nodes whose traces pass
        it, where the flow divides only the way traces follow."""
        src = np.flatnonzero(self.next_main >= 0)
        return _adjacency(self.n_nodes, self.v[self.next_main[src]], src)

    @cached_property
    def to_outfall_ft(self) -> np.ndarray:
        """Every node's shortest way to an outfall along the flow, in feet (inf where there is none)."""
        return outfall_distance_along_flow(self.n_nodes, self.u, self.v, self.length_ft, self.node_is_outfall)

    @cached_property
    def unknown_to_control(self) -> np.ndarray:
        """For every node, the first main of unknown direction (``direction_source`` unknown, kept as drawn) on its
        way down to its control manhole, -1 for none: a control manhole found through such a main is not known."""
        unknown = np.asarray(self.direction_source == "unknown", dtype=bool)
        return _first_flagged(self.next_main, self.v, unknown, self.node_is_manhole)

    @cached_property
    def unknown_to_end(self) -> np.ndarray:
        """For every node, the first main of unknown direction on its whole way down (to the outfall or where the
        flow stops), -1 for none: the way on and its length are then not known."""
        unknown = np.asarray(self.direction_source == "unknown", dtype=bool)
        return _first_flagged(self.next_main, self.v, unknown, np.zeros(self.n_nodes, dtype=bool))

    def drains(self) -> np.ndarray:
        """True for nodes whose flow reaches an outfall."""
        return (self.terminal >= 0) & self.node_is_outfall[np.clip(self.terminal, 0, None)]

    def is_pipe(self) -> np.ndarray:
        """True for mains that are pipes (every GIS main; a SWMM model's conduits, not its pumps, weirs ...)."""
        return _is_pipe(self.link_kind, len(self.u))

    def is_gravity(self) -> np.ndarray:
        """True for gravity pipes: pipes that are no force main (``sewer_type`` force: pumped, under pressure). Only a
        gravity main takes a gravity main's flow, needs manholes along it, or has a capacity by Manning's equation."""
        return self.is_pipe() & (self.sewer_type != "force")

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
    explicit: bool | None = None,
) -> SewerNetwork:
    """Build the directed sewer network from validated layers (one CRS). See the module docstring.

    ``explicit`` (default: mains with a ``swmm_section`` column) takes the topology from the mains' from/to
    fields instead of their geometry.

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
    explicit = "swmm_section" in mains.columns if explicit is None else explicit
    crs = CRS(mains.crs) if mains.crs is not None else None
    if crs is None or crs.is_geographic or not (crs.is_projected or explicit):
        raise AnalysisError(
            "Mains must be in a projected CRS before the network is built (a SWMM model may keep its own coordinates)."
        )
    if explicit and (manholes is None or len(manholes) == 0):
        raise AnalysisError("A network from a model's from/to topology needs its nodes (the manholes layer).")
    manholes = active_manholes(manholes)
    with paused_gc():
        return _build(
            mains,
            manholes,
            outfalls,
            profile,
            crs,
            profile.network.trust_digitised_direction.value if trust_digitised is None else trust_digitised,
            explicit,
        )


def link_kind_words(net: SewerNetwork, e: int) -> str:
    """What main ``e`` is, as the engineer names it: a model's link kind ("pump", "weir" ...), "force main", else
    "main"."""
    kind = net.link_kind[e] if net.link_kind is not None else None
    return "force main" if net.sewer_type[e] == "force" and kind in (None, "conduit") else str(kind or "main")


def active_manholes(manholes: gpd.GeoDataFrame | None) -> gpd.GeoDataFrame | None:
    """Manholes that are part of the live sewer: abandoned and proposed ones are left out, as mains are."""
    if manholes is None or "status" not in manholes.columns:
        return manholes
    return manholes[~manholes["status"].isin(["abandoned", "proposed"]).to_numpy()]


def manhole_nodes(
    node_kind: np.ndarray, next_main: np.ndarray, gravity: np.ndarray, pumped: np.ndarray | None = None
) -> np.ndarray:
    """True for the nodes that are manholes: a ``MANHOLE_STRUCTURES`` point, except a pump station's wet well or a
    tank, which is never a control manhole:

    - a storage unit whose flow leaves by anything but a gravity pipe (a pump, orifice, weir, outlet, force main
      or open channel);
    - a model's junction whose flow leaves by a pump (``pumped``: the links that are a model's [PUMPS]): SWMM pumps
      draw from the node they leave, so a junction the traces leave by a pump is the pump's wet well, however the
      model writes it. One a gravity pipe drains, a pump beside it, stays a manhole.

    A storage unit the flow leaves by a gravity pipe is a manhole, as a model that draws its manholes as storage
    nodes (Bellinge) means it; one no link leaves stays one.

    Examples
    --------
    >>> kinds = np.array(["storage", "storage", "junction", "cleanout", "junction"], dtype=object)
    >>> gravity, pumped = np.array([True, False, False]), np.array([False, True, False])
    >>> manhole_nodes(kinds, np.array([0, 1, 0, -1, 1]), gravity, pumped).tolist()
    [True, False, True, False, False]
    """
    is_manhole = pd.Series(node_kind, dtype=object).isin(MANHOLE_STRUCTURES).to_numpy()
    leaves = next_main >= 0
    by_pipe = np.zeros(len(next_main), dtype=bool)
    by_pipe[leaves] = np.asarray(gravity, dtype=bool)[next_main[leaves]]
    asked = np.flatnonzero(is_manhole & leaves & ~by_pipe)  # few: those a gravity pipe does not drain
    kind = np.asarray(node_kind, dtype=object)[asked]
    by_pump = np.zeros(len(asked), dtype=bool) if pumped is None else np.asarray(pumped, dtype=bool)[next_main[asked]]
    structure = np.zeros(len(is_manhole), dtype=bool)
    structure[asked] = (kind == "storage") | ((kind == "junction") & by_pump)
    return is_manhole & ~structure


def _is_pipe(link_kind: np.ndarray | None, n: int = 0) -> np.ndarray:
    """Mains that are pipes: no link kind (GIS mains), or a model's conduit."""
    if link_kind is None:
        return np.ones(n, dtype=bool)
    codes, uniques = pd.factorize(pd.Series(link_kind, dtype=object), sort=False)
    pipe_kind = np.array([str(k) in PIPE_LINKS for k in uniques] + [True])  # code -1: no kind
    return pipe_kind[codes]


def _first_given(frame: gpd.GeoDataFrame, name: str) -> str:
    """The first value a column gives (a model-wide fact every row carries), as text; "" where none does."""
    if name not in frame.columns:
        return ""
    given = frame[name].dropna()
    return str(given.iloc[0]) if len(given) else ""


def _col(frame: gpd.GeoDataFrame | None, name: str, n: int, default=None) -> np.ndarray:
    if frame is None or name not in frame.columns:
        return np.full(n, default, dtype=object)
    return frame[name].astype(object).where(frame[name].notna(), default).to_numpy(object)


def _num(frame: gpd.GeoDataFrame, name: str) -> np.ndarray:
    if name not in frame.columns:
        return np.full(len(frame), np.nan)
    return pd.to_numeric(frame[name], errors="coerce").to_numpy(float)


def structure_kinds(values) -> np.ndarray:
    """What each manholes-layer point is (``MANHOLE_STRUCTURES``, ``outfall``, ``cleanout`` ...), from its
    ``structure`` value: normalised values as they are, raw text by its words, and blank as a manhole."""
    codes, uniques = pd.factorize(pd.Series(np.asarray(values, dtype=object)).fillna(""), sort=False)
    text = pd.Series(uniques, dtype=object).astype(str).str.strip().str.lower()  # a layer has a few values
    canonical = ("manhole", "junction", "storage", "divider", "outfall", "plant", "cleanout", "cap")
    kinds = np.select(
        [text.isin([*canonical, "pump_station", "other"]).to_numpy()]
        + [text.str.contains(words, regex=True).to_numpy() for _, words in _STRUCTURE_WORDS],
        [text.to_numpy(object)] + [kind for kind, _ in _STRUCTURE_WORDS],
        default="manhole",
    ).astype(object)
    return kinds[codes] if len(kinds) else np.full(len(codes), "manhole", dtype=object)


@dataclass
class _Graph:
    """The undirected graph before directions: one row per main piece (``a`` its first vertex's node)."""

    lines: np.ndarray
    row: np.ndarray  # position of the piece's main in ``kept``
    a: np.ndarray
    b: np.ndarray
    length_ft: np.ndarray
    node_id: np.ndarray
    node_xy: np.ndarray
    node_kind: np.ndarray
    mh_node: np.ndarray  # manhole position -> node
    tree: shapely.STRtree | None = None  # of ``lines``, when the junction search made one for these very lines


def _build(mains, manholes, outfalls, profile: Profile, crs: CRS, trust_digitised: bool, explicit: bool):
    """The network in named steps: which mains, the graph, direction from the data, the outfalls, direction toward
    them, then the flow path (next main, terminal, control manhole) from every node."""
    measurable = bool(crs.is_projected)
    fpu = feet_per_unit(crs) if measurable else 1.0
    defects: list[Defect] = []

    kept = _network_mains(mains, profile)
    ids = _col(kept, "main_id", len(kept), None)
    mh_geoms = np.asarray(manholes.geometry.values) if manholes is not None and len(manholes) else np.empty(0, object)
    mh_ids = _col(manholes, "manhole_id", len(mh_geoms)) if len(mh_geoms) else np.empty(0, object)
    mh_kind = structure_kinds(_col(manholes, "structure", len(mh_geoms), "")) if len(mh_geoms) else mh_ids
    _report_shared_manhole_ids(mh_ids, mh_geoms, defects)
    if explicit:
        g = _explicit_graph(kept, ids, mh_geoms, mh_ids, mh_kind, fpu, defects)
    else:
        tol = profile.network.snap_tolerance_ft.value / fpu
        g = _geometric_graph(kept, ids, mh_geoms, mh_ids, mh_kind, fpu, tol, defects)
    a, b, n_nodes = g.a, g.b, len(g.node_id)
    piece = csgraph.connected_components(_adjacency(n_nodes, a, b), directed=False)[1]
    sewer_type = _col(kept, "sewer_type", len(kept), "sanitary")[g.row]
    link_kind = _col(kept, "link_kind", len(kept), None)[g.row]
    pipe = _is_pipe(link_kind)
    gravity = (sewer_type != "force") & pipe

    if explicit:
        forward, source = np.ones(len(a), dtype=bool), np.full(len(a), "from_to_fields", dtype=object)
        first_inv, last_inv = _num(kept, "us_invert_ft")[g.row], _num(kept, "ds_invert_ft")[g.row]
        ends = np.where(np.isfinite(first_inv) | np.isfinite(last_inv), "model", "").astype(object)
    else:
        mh_inv = _num(manholes, "invert_ft") if len(mh_geoms) else np.empty(0)
        reading = str(mains.attrs.get("invert_reading", "flow"))
        forward, source, first_inv, last_inv, ends = _directions(
            kept, g, gravity, mh_geoms, mh_ids, mh_inv, reading, fpu, defects
        )
        if trust_digitised:
            source = np.where(source == "unknown", "digitised", source)
    outfall_how, outfall_plant = _outfalls(outfalls, g, piece, forward, source, profile, fpu, explicit, defects)
    is_outfall = outfall_how != ""
    forward, source = _toward_outfalls(g, forward, source, gravity, is_outfall)

    u0, v0 = np.where(forward, a, b), np.where(forward, b, a)
    oriented = g.lines.copy()
    oriented[~forward] = shapely.reverse(g.lines[~forward])
    us_inv, ds_inv = np.where(forward, first_inv, last_inv), np.where(forward, last_inv, first_inv)

    # The next-hop main for every node, then pointer jumping for terminal, length and control manhole.
    inlet_ft = np.clip(np.nan_to_num(_num(kept, "inlet_offset_ft")[g.row], nan=0.0), 0.0, None)
    diverted = _col(kept, "diverted", len(kept), False)[g.row].astype(bool)
    next_main = _next_mains(n_nodes, u0, v0, g.length_ft, is_outfall, pipe, inlet_ft, diverted)
    pumped = np.asarray(link_kind, dtype=object) == "pump"
    node_is_manhole = manhole_nodes(g.node_kind, next_main, gravity, pumped if explicit else None)
    terminal, downstream = _jump(next_main, v0, g.length_ft)
    control = _first_manhole(next_main, v0, node_is_manhole)
    drains = (terminal >= 0) & is_outfall[np.clip(terminal, 0, None)]
    downstream = np.where(drains, downstream, np.nan)

    return SewerNetwork(
        node_id=g.node_id,
        node_xy=g.node_xy,
        node_is_manhole=node_is_manhole,
        node_is_outfall=is_outfall,
        main_id=ids[g.row].astype(object),
        u=u0,
        v=v0,
        length_ft=g.length_ft,
        geometry=oriented,
        diameter_in=_num(kept, "diameter_in")[g.row],
        us_invert_ft=us_inv,
        ds_invert_ft=ds_inv,
        sewer_type=sewer_type,
        material=_col(kept, "material", len(kept), None)[g.row],
        direction_source=source.astype(object),
        next_main=next_main,
        terminal=terminal,
        downstream_ft=downstream,
        control_manhole=control,
        piece=piece,
        crs=crs,
        fpu=fpu,
        defects=defects,
        node_kind=g.node_kind,
        outfall_how=outfall_how,
        outfall_plant=outfall_plant,
        link_kind=link_kind,
        inlet_ft=inlet_ft,
        invert_ends_source=ends,
        diverted=diverted,
        size_said=_col(kept, "swmm_size", len(kept), None)[g.row] if "swmm_size" in kept.columns else None,
        controls=_col(kept, "swmm_controls", len(kept), None)[g.row] if "swmm_controls" in kept.columns else None,
        storm_evidence=_first_given(kept, "swmm_storm_evidence"),
        explicit=explicit,
        measurable=measurable,
        built_tree=g.tree,
    )


def _network_mains(mains: gpd.GeoDataFrame, profile: Profile) -> gpd.GeoDataFrame:
    """The mains sewage flows in: not storm, abandoned or proposed; private only where the profile includes them."""
    kind = _col(mains, "sewer_type", len(mains))
    status = _col(mains, "status", len(mains))
    owner = _col(mains, "ownership", len(mains))
    keep = (kind != "storm") & ~np.isin(status, ["abandoned", "proposed"])
    if not profile.network.include_private_mains.value:
        keep &= owner != "private"
    return mains[keep]


def _outfalls(
    outfalls, g: _Graph, piece, forward, source, profile, fpu, explicit, defects
) -> tuple[np.ndarray, np.ndarray]:
    """How each node is an outfall ("structure", a treatment plant near it, or "" for none), and the name of the
    plant a node is the inlet of ("" for none): only what the data says. A SWMM model's [OUTFALLS] are its
    outfalls; there the plants layer is not used, and the report says so."""
    outfall_how = np.full(len(g.node_id), "", dtype=object)
    outfall_how[pd.Series(g.node_kind, dtype=object).isin(OUTFALL_STRUCTURES).to_numpy()] = "structure"
    plant = np.full(len(g.node_id), "", dtype=object)
    if outfalls is None or not len(outfalls):
        return outfall_how, plant
    if explicit:
        defects.append(
            Defect(
                "plants_not_used",
                "info",
                "outfalls",
                "",
                "The model's [OUTFALLS] are its outfalls: the treatment-plant layer was not used.",
            )
        )
        return outfall_how, plant
    given = source != "unknown"
    u_given = np.where(forward, g.a, g.b)[given]
    v_given = np.where(forward, g.b, g.a)[given]
    reach = profile.network.outfall_snap_ft.value / fpu
    _plant_outfalls(outfalls, g, piece, u_given, v_given, reach, fpu, outfall_how, plant, defects)
    return outfall_how, plant


def _toward_outfalls(g: _Graph, forward, source, gravity, is_outfall) -> tuple[np.ndarray, np.ndarray]:
    """Direction inferred toward the outfalls for mains the data leaves unknown (flow from the end farther, by
    network distance, from an outfall to the nearer one), and gravity mains whose inverts would end the flow."""
    unknown = source == "unknown"
    inverted = (source == "inverts") & gravity
    if not is_outfall.any() or not (unknown.any() or inverted.any()):
        return forward, source
    dist = _distance_to_outfalls(len(g.node_id), g.a, g.b, g.length_ft, is_outfall)
    if unknown.any():
        da, db = dist[g.a], dist[g.b]
        can = unknown & np.isfinite(da) & np.isfinite(db) & (da != db)
        forward = np.where(can, da > db, forward)
        source = np.where(can, "inferred", source)
    if inverted.any():
        forward, source = _uphill_gravity_mains(forward, source, inverted, g.a, g.b, dist, is_outfall, len(g.node_id))
    return forward, source


def _explicit_graph(kept, ids, mh_geoms, mh_ids, mh_kind, fpu, defects) -> _Graph:
    """A model's graph: every node a node, every link joining the nodes its From and To name, its own length."""
    node_id = mh_ids.astype(object)
    node_xy = shapely.get_coordinates(mh_geoms).reshape(-1, 2) if len(mh_geoms) else np.zeros((0, 2))
    index = pd.Index(node_id.astype(str))
    if index.has_duplicates:
        raise AnalysisError("The model's nodes must have distinct names: " + ", ".join(index[index.duplicated()][:5]))
    frm = pd.Series(_col(kept, "from_manhole", len(kept), "")).astype(str).to_numpy()
    to = pd.Series(_col(kept, "to_manhole", len(kept), "")).astype(str).to_numpy()
    a, b = index.get_indexer(frm), index.get_indexer(to)
    lost = (a < 0) | (b < 0)
    for i in np.flatnonzero(lost):  # a model that passed the reader has none
        defects.append(
            Defect(
                "link_without_node",
                "error",
                str(ids[i]),
                "",
                f"Link {ids[i]} joins {frm[i]} and {to[i]}, not both of which are nodes of the model; left out.",
            )
        )
    row = np.flatnonzero(~lost)
    lines = np.asarray(kept.geometry.values)[row]
    given = _num(kept, "length_ft")[row]
    drawn = shapely.length(lines) * fpu
    recorded = np.isfinite(given) & (given >= 0)
    length_ft = np.where(recorded, given, np.nan_to_num(drawn))
    for i in np.flatnonzero(~recorded)[:50]:  # a model that states its lengths has none
        defects.append(
            Defect(
                "length_from_drawing",
                "warning",
                str(ids[row[i]]),
                "",
                f"Link {ids[row[i]]} states no length in the model; its drawn length, {length_ft[i]:,.1f}, was "
                "used: check it, as a schematic drawing is not to scale.",
                float(node_xy[a[row[i]], 0]) if len(node_xy) else float("nan"),
                float(node_xy[a[row[i]], 1]) if len(node_xy) else float("nan"),
            )
        )
    return _Graph(lines, row, a[row], b[row], length_ft, node_id, node_xy, mh_kind, np.arange(len(node_id)))


def _geometric_graph(kept, ids, mh_geoms, mh_ids, mh_kind, fpu, tol, defects) -> _Graph:
    """GIS layers' graph: single lines, split at junctions and manholes on their interior, ends snapped."""
    parts, row = shapely.get_parts(np.asarray(kept.geometry.values), return_index=True)
    measured = shapely.length(parts) * fpu
    empty = np.ones(len(kept), dtype=bool)
    empty[row] = False  # mains with no part at all (an empty geometry) have no row here
    whole_ft = np.bincount(row, weights=measured, minlength=len(kept))
    zero = whole_ft < 0.01
    _report_zero_length(kept, ids, np.flatnonzero(zero | empty), mh_geoms, mh_ids, defects)
    keep = ~zero[row] & (measured > 0)
    lines, row = parts[keep], row[keep]
    # A main's recorded length (length_ft), shared among its parts and pieces in proportion to their drawn length.
    given = _num(kept, "length_ft")
    scale = np.where(np.isfinite(given) & (given > 0) & ~zero, given / np.where(zero, 1.0, whole_ft), 1.0)

    unsplit = lines
    end_xy = _end_coordinates(lines)
    lines, row, split_defects, places, tree = _split_at_junctions(lines, row, ids, mh_geoms, mh_ids, tol, end_xy)
    defects += split_defects
    if lines is not unsplit:  # some main was split: its pieces have new ends
        end_xy = _end_coordinates(lines)
        places = None
    node_id, node_xy, node_kind, end_node, mh_node, node_defects = _nodes(
        end_xy, mh_geoms, mh_ids, mh_kind, tol, places
    )
    defects += node_defects
    length_ft = shapely.length(lines) * fpu * scale[row]
    a, b = end_node[: len(lines)], end_node[len(lines) :]
    return _Graph(lines, row, a, b, length_ft, node_id, node_xy, node_kind, mh_node, tree)


def _report_zero_length(kept, ids, rows, mh_geoms, mh_ids, defects) -> None:
    """Mains with no length (drawn on one spot, or emptied by validation): left out, located where possible."""
    if len(rows) == 0:
        return
    geoms = np.asarray(kept.geometry.values)[rows]
    first = shapely.get_point(geoms, 0)
    xy = np.full((len(rows), 2), np.nan)
    present = ~shapely.is_missing(first) & ~shapely.is_empty(first)
    xy[present] = shapely.get_coordinates(first[present]).reshape(-1, 2)
    # An empty geometry has no place: the manhole its from (or to) field names has one.
    named = pd.Series(_col(kept, "from_manhole", len(kept))[rows]).fillna(
        pd.Series(_col(kept, "to_manhole", len(kept))[rows])
    )
    if len(mh_geoms):
        at = first_position(mh_ids, named.to_numpy(object))
        use = ~present & (at >= 0)
        if use.any():
            xy[use] = shapely.get_coordinates(mh_geoms[at[use]]).reshape(-1, 2)
    recorded = _num(kept, "length_ft")[rows]
    for k, i in enumerate(rows):
        note = f" (its length_ft says {recorded[k]:,.1f} ft)" if np.isfinite(recorded[k]) and recorded[k] > 0 else ""
        drawn = (
            "is drawn on one spot"
            if present[k]
            else "has no line (empty, or drawn on one spot and emptied by validation)"
        )
        defects.append(
            Defect(
                "zero_length_main",
                "error",
                str(ids[i]),
                "",
                f"Main {ids[i]} {drawn}{note}: its two ends cannot be told apart, so it is left out of the "
                "network. Redraw it from its upstream to its downstream manhole.",
                float(xy[k, 0]),
                float(xy[k, 1]),
            )
        )


def _end_coordinates(lines: np.ndarray) -> np.ndarray:
    """The first vertex of every line, then the last (x, y): ``get_point(lines, 0)`` and ``-1``'s coordinates,
    read in one pass over the vertices."""
    if len(lines) == 0:  # every main left out (all storm, say): no ends
        return np.empty((0, 2))
    xy, which = shapely.get_coordinates(lines, return_index=True)
    first = np.searchsorted(which, np.arange(len(lines)))
    last = np.r_[first[1:], len(which)] - 1
    return np.concatenate([xy[first], xy[last]])


def _points_at(positions: np.ndarray, end_xy: np.ndarray, mh_geoms: np.ndarray) -> np.ndarray:
    """The points at ``positions`` among the line ends (``end_xy``) followed by the manholes.

    A point geometry is made only for the ends asked for: most of the two million ends of a state's mains are
    never measured.
    """
    out = np.empty(len(positions), dtype=object)
    is_end = positions < len(end_xy)
    out[is_end] = shapely.points(end_xy[positions[is_end]])
    out[~is_end] = mh_geoms[positions[~is_end] - len(end_xy)]
    return out


def _split_at_junctions(lines, row, ids, mh_geoms, mh_ids, tol, end_xy):
    """Split mains where another main's end, or a manhole, lies on their interior (``end_xy``: the lines' first
    vertices, then their last, as ``_end_coordinates`` gives them).

    When no main was split, also returns the places (``_places``) of the ends followed by the manholes, which
    ``_nodes`` reuses, and the tree of the lines, which the network keeps for the traces (else ``None``, ``None``).
    """
    defects: list[Defect] = []
    if len(lines) == 0:
        return lines, row, defects, None, None
    n_ends = len(end_xy)
    owner = np.concatenate([np.arange(len(lines)), np.arange(len(lines))])
    point_owner = np.concatenate([owner, np.full(len(mh_geoms), -1)])
    tree = shapely.STRtree(lines)
    xy = np.concatenate([end_xy, shapely.get_coordinates(mh_geoms)])  # validated manholes are never empty
    first, last = xy[: len(lines)], xy[len(lines) : n_ends]
    # Most points stand where two or three others do (main ends and the manhole they meet at): each place is
    # searched once, and its pairs handed back to every point standing there.
    place, at = _places(xy)

    def candidates(part: slice):
        # Pairs by envelope; a point within the tolerance of one of the line's own ends is a shared node, not a
        # junction on its interior: dropped with plain arithmetic before any GEOS distance is computed.
        b = xy[place[part]]
        i_in, i_line = tree.query(shapely.box(b[:, 0] - tol, b[:, 1] - tol, b[:, 0] + tol, b[:, 1] + tol))
        i_in += part.start
        p = place[i_in]
        at_end = (np.hypot(*(xy[p] - first[i_line]).T) <= tol) | (np.hypot(*(xy[p] - last[i_line]).T) <= tol)
        keep = ~at_end
        return i_in[keep], i_line[keep]

    parts = map_chunks(candidates, len(place), 2)
    u_idx = np.concatenate([c[0] for c in parts]) if parts else np.zeros(0, np.int64)
    l_idx = np.concatenate([c[1] for c in parts]) if parts else np.zeros(0, np.int64)
    near = shapely.distance(_points_at(place[u_idx], end_xy, mh_geoms), lines[l_idx]) <= tol
    u_idx, l_idx = u_idx[near], l_idx[near]
    # Back to every point at each place, in point order (and, per point, in the order the tree gave the lines).
    p_idx, l_idx = _spread(u_idx, l_idx, at)
    own = point_owner[p_idx] != l_idx
    p_idx, l_idx = p_idx[own], l_idx[own]
    along = shapely.line_locate_point(lines[l_idx], _points_at(p_idx, end_xy, mh_geoms))
    interior = (along > tol) & (along < shapely.length(lines[l_idx]) - tol)
    p_idx, l_idx, along = p_idx[interior], l_idx[interior], along[interior]
    if len(p_idx) == 0:
        return lines, row, defects, (place, at), tree
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
            pt = _points_at(np.array([int(cut["point"])]), end_xy, mh_geoms)[0]
            if int(cut["point"]) >= n_ends:  # a manhole (the points are the ends, then the manholes)
                mh = mh_ids[int(cut["point"]) - n_ends]
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
    return np.concatenate(new_lines), np.concatenate(new_rows), defects, None, None


def _places(xy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct coordinates among the points: one point standing at each (``place``), and each point's place."""
    at, _ = pd.factorize(xy[:, 0] + 1j * xy[:, 1])  # one hash per point: x + iy is the coordinate pair, exactly
    place = np.full(int(at.max()) + 1 if len(at) else 0, -1, dtype=np.int64)
    place[at[::-1]] = np.arange(len(at))[::-1]  # the first point at each place
    return place, at


def _spread(u_idx: np.ndarray, l_idx: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (place, line) as pairs (point, line) for every point at the place, sorted by point (stably)."""
    if len(u_idx) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    by_place = np.argsort(at, kind="stable")
    start = np.searchsorted(at[by_place], np.arange(int(at.max()) + 1))
    count = np.bincount(at, minlength=len(start))
    repeat = count[u_idx]
    pair = np.repeat(np.arange(len(u_idx)), repeat)
    offset = np.arange(len(pair)) - np.repeat(np.cumsum(repeat) - repeat, repeat)
    points = by_place[start[u_idx[pair]] + offset]
    order = np.argsort(points, kind="stable")
    return points[order], l_idx[pair][order]


def _clusters(points: np.ndarray, tol: float) -> np.ndarray:
    """Cluster label per point: points within ``tol`` of each other (transitively) share one."""
    if len(points) == 0:
        return np.zeros(0, dtype=np.int64)
    # Point to point, GEOS's dwithin is as cheap as the envelope test: no box is made per point.
    i, j = query_pairs(shapely.STRtree(points), points, workers=2, predicate="dwithin", distance=tol)
    graph = sparse.coo_matrix((np.ones(len(i), dtype=np.int8), (i, j)), shape=(len(points), len(points)))
    return csgraph.connected_components(graph, directed=False)[1]


def _nodes(
    end_xy: np.ndarray,
    mh_geoms: np.ndarray,
    mh_ids: np.ndarray,
    mh_kind: np.ndarray,
    tol: float,
    places: tuple[np.ndarray, np.ndarray] | None = None,
):
    """Nodes: manholes (co-located ones merged), then junctions for line ends (``end_xy``) that meet no manhole.

    ``places``: ``_places`` of the ends followed by every manhole, when the caller has them (no main was split).
    """
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

    end_node = np.full(len(end_xy), -1, dtype=np.int64)
    if n_mh:
        # Each place where ends meet is matched to its manhole once (two or three ends share most places).
        # Places are taken among the ends and the manholes together: where a manhole stands exactly at the place
        # (most ends in a drawn network), it is the nearest, at distance 0, with no search. Manholes are a tol
        # or more apart once merged, so no other stands there.
        reps = mh_geoms[first_of]
        mh_xy = np.c_[shapely.get_x(reps), shapely.get_y(reps)]
        located = np.isfinite(mh_xy).all(axis=1)
        if places is not None and n_mh == len(mh_geoms) and located.all():  # the same points, in the same order
            place, at = places
        else:
            place, at = _places(np.concatenate([end_xy, mh_xy[located]]))
        matched = np.full(len(place), -1, dtype=np.int64)
        matched[at[len(end_xy) :]] = np.flatnonzero(located)
        end_at = at[: len(end_xy)]
        search = distinct(end_at[matched[end_at] < 0])  # places of ends with no manhole standing exactly there
        if len(search):
            # Point to point, a dwithin query makes no box per place; of two manholes as near, the first decides.
            tree = shapely.STRtree(reps)
            where = shapely.points(end_xy[place[search]])  # an end stands first at each place searched
            i_end, i_mh = query_pairs(tree, where, workers=2, predicate="dwithin", distance=tol)
            rows, pick = nearest_of_pairs(i_end, shapely.distance(where[i_end], tree.geometries[i_mh]), i_mh)
            matched[search[rows]] = i_mh[pick]
        end_node = matched[end_at]
    loose = np.flatnonzero(end_node < 0)
    labels = _clusters(shapely.points(end_xy[loose]), tol)
    n_j = int(labels.max()) + 1 if len(labels) else 0
    end_node[loose] = n_mh + labels
    firsts = pd.Series(loose).groupby(labels).first().to_numpy() if len(loose) else np.zeros(0, dtype=np.int64)
    node_ids.append(np.array([f"J-{k + 1}" for k in range(n_j)], dtype=object))
    node_xy.append(end_xy[firsts].reshape(-1, 2))
    kinds = np.concatenate([mh_kind[first_of].astype(object), np.full(n_j, "", dtype=object)])
    return (np.concatenate(node_ids), np.concatenate(node_xy), kinds, end_node, mh_node, defects)


def _plant_outfalls(outfalls, g: _Graph, piece, u_given, v_given, reach, fpu, how, plant, defects) -> None:
    """Mark the nodes where treatment plants (and outfalls) end the sewer (``how``) and which plant each is the
    inlet of (``plant``); report every join and every refusal.

    A plant joins the node its ``outfall_manhole`` names. Otherwise, in each piece of the network within
    ``reach``, the nearest node that is an end of the sewer: one main meets it, or every main meeting it flows
    in by its from/to fields or inverts, and none flows out. A plant beside a node in the middle of a run is
    refused; a plant point in a piece that already has an outfall named by the data is not joined.
    """
    n = len(g.node_id)
    degree = np.bincount(g.a, minlength=n) + np.bincount(g.b, minlength=n)
    flows_out = np.bincount(u_given, minlength=n) > 0
    given_in = np.bincount(v_given, minlength=n)
    plausible_end = ~flows_out & ((degree == 1) | (given_in == degree))
    named = _col(outfalls, "outfall_manhole", len(outfalls))
    labels = _col(outfalls, "outfall_name", len(outfalls))
    fallback = _col(outfalls, "outfall_id", len(outfalls))
    facility = _col(outfalls, "facility_type", len(outfalls))
    named_node = first_position(g.node_id, named)
    pts = np.asarray(outfalls.geometry.values)
    # A town has one plant or a few: a scan of the node coordinates; a state layer of many facilities: a tree.
    tree = shapely.STRtree(shapely.points(g.node_xy)) if n and len(outfalls) > 16 else None
    snapped: list[tuple[int, int, float, str]] = []  # (plant, node, distance in ft, other ends within reach)
    for k in range(len(outfalls)):  # a town has one plant or a few outfalls
        label = str(labels[k] or fallback[k] or f"treatment plant {k + 1}")
        p = pts[k]
        px, py = (p.x, p.y) if p is not None and not p.is_empty else (np.nan, np.nan)
        kind = str(facility[k]).strip().lower() if facility[k] is not None else ""
        if kind and kind not in PLANT_FACILITIES and not pd.Series([kind]).str.contains(_PLANT_WORDS).iloc[0]:
            defects.append(
                Defect(
                    "not_a_plant",
                    "info",
                    label,
                    "",
                    f"{label} is a facility of type {facility[k]!r}, not a treatment plant or sewer outfall: it "
                    "does not end the sewer, and was not joined to the network.",
                    px,
                    py,
                )
            )
            continue
        if named_node[k] >= 0:
            node = int(named_node[k])
            how[node] = "named"
            plant[node] = plant[node] or label
            d = float(np.hypot(g.node_xy[node, 0] - px, g.node_xy[node, 1] - py) * fpu)
            defects.append(
                Defect(
                    "outfall_joined",
                    "info",
                    label,
                    "",
                    f"Plant {label} is joined to {g.node_id[node]}, which its outfall_manhole column names"
                    + (f" ({d:,.0f} ft from the plant point)." if np.isfinite(d) else "."),
                    px,
                    py,
                )
            )
            continue
        if named[k] is not None:
            defects.append(
                Defect(
                    "outfall_manhole_unknown",
                    "warning",
                    label,
                    "",
                    f"{label} names {named[k]} as its inlet manhole, but no node of the network has that ID "
                    "(abandoned, proposed, or mistyped?); the plant point is joined by distance instead.",
                    px,
                    py,
                )
            )
        if not np.isfinite(px) or n == 0:
            near = np.zeros(0, dtype=np.int64)
        elif tree is not None:
            near = tree.query(p, predicate="dwithin", distance=reach)
        else:
            near = np.flatnonzero(np.hypot(g.node_xy[:, 0] - px, g.node_xy[:, 1] - py) <= reach)
        if len(near) == 0:
            defects.append(
                Defect(
                    "outfall_not_on_network",
                    "error",
                    label,
                    "",
                    f"{label} is more than {reach * fpu:,.0f} ft (network.outfall_snap_ft) from every node of "
                    "the network; name its inlet manhole in an outfall_manhole column.",
                    px,
                    py,
                )
            )
            continue
        d = np.hypot(*(g.node_xy[near] - [px, py]).T) * fpu
        table = pd.DataFrame({"node": near, "d": d, "piece": piece[near], "end": plausible_end[near]})
        table = table.sort_values(["piece", "d", "node"])
        for _, rows in table.groupby("piece", sort=False):
            ends = rows[rows["end"]]
            if len(ends):
                others = ends.iloc[1:4]
                also = "; ".join(
                    f"{g.node_id[e]} {dd:,.0f} ft" for e, dd in zip(others["node"], others["d"], strict=True)
                )
                snapped.append((k, int(ends["node"].iloc[0]), float(ends["d"].iloc[0]), also))
                continue
            node = int(rows["node"].iloc[0])
            mains = np.flatnonzero((g.a == node) | (g.b == node))
            defects.append(
                Defect(
                    "plant_mid_run",
                    "warning",
                    label,
                    "",
                    f"{label} is {rows['d'].iloc[0]:,.0f} ft from {g.node_id[node]}, where the sewer runs on "
                    f"({len(mains)} mains meet there, and no evidence says they all end there): a plant sits at "
                    "the end of the sewer, so it was not taken as an outfall. If the sewer does end there, name "
                    f"{g.node_id[node]} in the plant's outfall_manhole column.",
                    px,
                    py,
                )
            )
    # A piece with an outfall the data names (a structure, an outfall_manhole) takes no plant point by distance.
    named_piece = np.zeros(int(piece.max()) + 1 if n else 0, dtype=bool)
    named_piece[piece[how != ""]] = True
    for k, node, d, also in snapped:
        label = str(labels[k] or fallback[k] or f"treatment plant {k + 1}")
        p = pts[k]
        if named_piece[piece[node]] and how[node] == "":
            others = ", ".join(map(str, g.node_id[(piece == piece[node]) & (how != "")][:3]))
            defects.append(
                Defect(
                    "outfall_not_joined",
                    "info",
                    label,
                    "",
                    f"{label} is {d:,.0f} ft from {g.node_id[node]}, in a piece of the network that already ends "
                    f"at {others}, named as an outfall by the data: not joined there.",
                    p.x,
                    p.y,
                )
            )
            continue
        how[node] = how[node] or "joined"
        plant[node] = plant[node] or label
        size = len(distinct(g.row[piece[g.a] == piece[node]]))  # a main split at a junction is one main
        text = (
            f"Plant {label} is joined to {g.node_id[node]}, the nearest end of a piece of {size:,} "
            f"main{'s' if size != 1 else ''}, {d:,.0f} ft away (within network.outfall_snap_ft): the sewer ends there."
        )
        if also:  # other ends of the same piece are as plausible by distance: the user should know which was taken
            text += (
                f" Other ends of that piece are within reach too ({also}); if the sewer enters the plant at one of "
                "them, name it in the plant's outfall_manhole column."
            )
        defects.append(Defect("outfall_joined", "warning" if also else "info", label, "", text, p.x, p.y))


def _directions(kept, g: _Graph, gravity, mh_geoms, mh_ids, mh_inv, reading, fpu, defects):
    """``forward`` (flow runs from the first vertex to the last) and its source, per main piece, from the data; and
    the main's inverts at its first and last vertex, with the evidence that put them there (``_invert_ends``)."""
    row, a, b = g.row, g.a, g.b
    n = len(row)
    forward = np.ones(n, dtype=bool)
    source = np.full(n, "unknown", dtype=object)
    # The whole main's ends: first piece's start, last piece's end (pieces of a split main keep its direction).
    first_node = pd.Series(a).groupby(row).transform("first").to_numpy()
    last_node = pd.Series(b).groupby(row).transform("last").to_numpy()
    if {"from_manhole", "to_manhole"} & set(kept.columns):
        frm = _field_nodes(kept, "from_manhole", g, mh_ids)[row]
        to = _field_nodes(kept, "to_manhole", g, mh_ids)[row]
        ahead = ((frm >= 0) & (frm == first_node)) | ((to >= 0) & (to == last_node))
        behind = ((frm >= 0) & (frm == last_node)) | ((to >= 0) & (to == first_node))
        decided = ahead ^ behind
        forward = np.where(decided, ahead, forward)
        source = np.where(decided, "from_to_fields", source)
        _report_unmatched_ends(kept, g, first_node, last_node, forward, mh_geoms, mh_ids, fpu, defects)

    # A force main is pumped: uphill inverts are its nature. It keeps its drawn direction.
    force = (source == "unknown") & ~gravity & (_col(kept, "sewer_type", len(kept))[row] == "force")
    source = np.where(force, "digitised", source)
    node_inv = np.full(len(g.node_id), np.nan)
    has = np.flatnonzero(np.isfinite(mh_inv)) if len(g.mh_node) else np.empty(0, dtype=np.int64)
    if len(has):  # manholes at one spot are one node: the first's invert
        first_inv = pd.Series(mh_inv[has]).groupby(g.mh_node[has]).first()
        node_inv[first_inv.index.to_numpy()] = first_inv.to_numpy()
    first, last, ends = _invert_ends(
        _num(kept, "us_invert_ft")[row],
        _num(kept, "ds_invert_ft")[row],
        node_inv[first_node],
        node_inv[last_node],
        (reading == "flow") & (source == "from_to_fields"),
        forward,
    )
    by_invert = (source == "unknown") & np.isfinite(first) & np.isfinite(last) & (np.abs(first - last) > 1e-3)
    forward = np.where(by_invert, first > last, forward)
    source = np.where(by_invert, "inverts", source)
    return forward, source, first, last, ends


def _invert_ends(us, ds, at_first, at_last, fields_name_ends, forward):
    """Each main's inverts at its first and last vertex, and the evidence that put them there, as an engineer
    reads them:

    1. ``manholes``: the manholes' own inverts at the main's ends: an end whose manhole's invert is within
       ``INVERT_MATCH_FT`` of one of the main's inverts and not of the other holds that one (one end may decide;
       ends that disagree decide nothing). A main drawn against the flow keeps its inverts at their manholes.
    2. ``from_to_fields``: columns named by the flow (us, upstream, from ...) where the from/to fields name the
       main's ends (``fields_name_ends``): the upstream invert at the end the flow leaves.
    3. ``first_vertex``: as given, the upstream invert at the first vertex (columns named start and end, or
       named by neither).

    Examples
    --------
    >>> us, ds = np.array([103.6, 103.6, 103.6, 100.0]), np.array([102.4, 102.4, 102.4, 101.0])
    >>> at_first, at_last = np.array([102.4, np.nan, np.nan, 100.0]), np.array([103.6, np.nan, np.nan, 101.0])
    >>> first, last, ends = _invert_ends(us, ds, at_first, at_last, np.array([1, 1, 0, 1], bool), np.zeros(4, bool))
    >>> first.tolist(), ends.tolist()
    ([102.4, 102.4, 103.6, 100.0], ['manholes', 'from_to_fields', 'first_vertex', 'manholes'])
    """

    def near(x, y):
        return np.abs(x - y) <= INVERT_MATCH_FT  # False where either is unknown

    given = np.isfinite(us) | np.isfinite(ds)
    straight = (near(at_first, us) & ~near(at_first, ds)) | (near(at_last, ds) & ~near(at_last, us))
    swapped = (near(at_first, ds) & ~near(at_first, us)) | (near(at_last, us) & ~near(at_last, ds))
    by_manholes = given & (straight ^ swapped)
    by_fields = given & ~by_manholes & np.asarray(fields_name_ends, dtype=bool)
    flipped = (by_manholes & swapped) | (by_fields & ~np.asarray(forward, dtype=bool))
    ends = np.select([by_manholes, by_fields, given], ["manholes", "from_to_fields", "first_vertex"], "")
    return np.where(flipped, ds, us), np.where(flipped, us, ds), ends.astype(object)


def _field_nodes(kept, name: str, g: _Graph, mh_ids: np.ndarray) -> np.ndarray:
    """The node each main's from (or to) field names, through its manhole (-1 where none, or no such manhole)."""
    at = first_position(mh_ids, _col(kept, name, len(kept)))
    return np.where(at >= 0, g.mh_node[np.clip(at, 0, None)] if len(g.mh_node) else -1, -1)


def first_position(ids: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Position of each value's first match among ``ids`` (as text); -1 where missing or not found."""
    out = np.full(len(values), -1, dtype=np.int64)
    given = pd.notna(values)
    if not given.any() or len(ids) == 0:
        return out
    index = pd.Index(np.asarray(ids).astype(str))
    first = np.flatnonzero(~index.duplicated())
    at = pd.Index(index[first]).get_indexer(np.asarray(values)[given].astype(str))
    out[given] = np.where(at >= 0, first[np.clip(at, 0, None)], -1)
    return out


def _report_shared_manhole_ids(mh_ids: np.ndarray, mh_geoms: np.ndarray, defects: list) -> None:
    """Manholes that came with one ID, told by name: the layers' check keeps the first and suffixes the others
    (MH-45, MH-45#2), so a main's from or to field naming MH-45 is matched to the first, wherever the main ends,
    and the findings that follow (a from/to mismatch, a split flow at MH-45#2) named everything but the cause."""
    if not len(mh_ids):
        return
    text = pd.Series(np.asarray(mh_ids, dtype=object)).astype("string")
    base = text.str.extract(r"^(.*)#\d+$", expand=False)
    shared = base.notna() & base.isin(set(text.dropna()))
    if not shared.any():
        return
    for name in sorted(set(base[shared])):  # data errors: a handful
        rows = np.flatnonzero(((text == name) | (base == name)).fillna(False).to_numpy(bool))
        places = ", ".join(f"{mh_ids[r]} at ({mh_geoms[r].x:,.1f}, {mh_geoms[r].y:,.1f})" for r in rows[:5])
        second = mh_geoms[rows[1]]
        defects.append(
            Defect(
                "duplicate_id",
                "warning",
                str(name),
                "",
                f"{len(rows)} manholes came with the ID {name} ({places}): the first keeps it and the others were "
                f"suffixed, and a main whose from or to field names {name} is matched to the first, wherever it ends, "
                "so findings about those mains may name the wrong manhole. Give each manhole its own ID.",
                float(second.x),
                float(second.y),
            )
        )


def _report_unmatched_ends(kept, g, first_node, last_node, forward, mh_geoms, mh_ids, fpu, defects) -> None:
    """Mains whose from/to fields name a manhole that is not at the end the flow says: how far it is, and why."""
    rows = pd.DataFrame({"row": g.row, "first": first_node, "last": last_node, "fwd": forward})
    whole = rows.drop_duplicates("row")
    r = whole["row"].to_numpy()
    f_field = _col(kept, "from_manhole", len(kept))[r]
    t_field = _col(kept, "to_manhole", len(kept))[r]
    fwd = whole["fwd"].to_numpy()
    up = np.where(fwd, whole["first"].to_numpy(), whole["last"].to_numpy())
    down = np.where(fwd, whole["last"].to_numpy(), whole["first"].to_numpy())
    names = g.node_id.astype(str)
    bad_from = pd.notna(f_field) & (_field_nodes(kept, "from_manhole", g, mh_ids)[r] != up)
    bad_to = pd.notna(t_field) & (_field_nodes(kept, "to_manhole", g, mh_ids)[r] != down)
    if not (bad_from | bad_to).any():
        return
    ids = _col(kept, "main_id", len(kept))[r]
    for k in np.flatnonzero(bad_from | bad_to):  # data errors: a handful
        for bad, field_value, end, word in ((bad_from, f_field, up, "from"), (bad_to, t_field, down, "to")):
            if not bad[k]:
                continue
            name = str(field_value[k])
            x, y = g.node_xy[end[k]]
            at = first_position(mh_ids, np.array([name], dtype=object))[0]
            if at >= 0:
                mx, my = mh_geoms[at].x, mh_geoms[at].y
                gap = f"{np.hypot(mx - x, my - y) * fpu:,.1f} ft from {name}"
            else:
                gap = f"and no live manhole is named {name}"
            defects.append(
                Defect(
                    "from_to_mismatch",
                    "warning",
                    str(ids[k]),
                    "",
                    f"Main {ids[k]}'s {word} field names {name}, but that end of the main meets "
                    f"{names[end[k]]}, {gap} (beyond network.snap_tolerance_ft): the main is not connected to "
                    f"{name} there. Move the main's end onto the manhole, or correct the field.",
                    float(x),
                    float(y),
                )
            )


def _uphill_gravity_mains(forward, source, inverted, a, b, dist, is_outfall, n):
    """Gravity mains oriented by inverts whose lower end would be a dead end while the network drains the other
    way: keep the network's direction (``inferred``); the inverts then read as an adverse slope."""
    for _ in range(64):  # each pass frees the next main up a run of uphill mains; real data needs one or two
        u0, v0 = np.where(forward, a, b), np.where(forward, b, a)
        dead = (np.bincount(u0, minlength=n) == 0) & ~is_outfall
        flip = inverted & (source == "inverts") & dead[v0] & np.isfinite(dist[v0]) & (dist[v0] > dist[u0])
        if not flip.any():
            break
        forward = np.where(flip, ~forward, forward)
        source = np.where(flip, "inferred", source)
    return forward, source


def _adjacency(n: int, a: np.ndarray, b: np.ndarray, weight: np.ndarray | None = None):
    """Sparse adjacency ``a -> b``; with weights, parallel mains count once, at their shortest."""
    if weight is None:
        return sparse.coo_matrix((np.ones(len(a)), (a, b)), shape=(n, n)).tocsr()
    key = a.astype(np.int64) * n + b
    order = np.lexsort((weight, key))
    first = order[np.r_[True, key[order][1:] != key[order][:-1]]] if len(order) else order
    return sparse.coo_matrix((weight[first], (a[first], b[first])), shape=(n, n)).tocsr()


def _distance_to_outfalls(n, a, b, length_ft, is_outfall) -> np.ndarray:
    """Network distance (ft) from every node to its nearest outfall, ignoring direction; inf where none."""
    if not is_outfall.any() or n == 0:
        return np.full(n, np.inf)
    graph = _adjacency(n, a, b, np.maximum(length_ft, 1e-6))
    return csgraph.dijkstra(graph, directed=False, indices=np.flatnonzero(is_outfall), min_only=True)


def outfall_distance_along_flow(n, u, v, length_ft, is_outfall) -> np.ndarray:
    """Length (ft) of the shortest way from every node to an outfall along the flow; inf where there is none."""
    if not is_outfall.any() or n == 0:
        return np.full(n, np.inf)
    graph = _adjacency(n, v, u, np.maximum(length_ft, 1e-6))  # edges point upstream: search from the outfalls
    return csgraph.dijkstra(graph, directed=True, indices=np.flatnonzero(is_outfall), min_only=True)


def _next_mains(n, u, v, length_ft, is_outfall, pipe, inlet_ft=None, diverted=None) -> np.ndarray:
    """For every node, the main it drains through (-1 at an outfall or dead end); where flow divides, of the mains
    that reach an outfall, a divider's way on before its ``diverted`` link, then the one leaving lowest above the
    node's invert (``inlet_ft``: in a model, the others are overflows, carrying only what rises above them), then,
    of those leaving as low, a pipe before a pump, weir, orifice, outlet, inlet or channel (a weir beside a pipe at
    the same height is the overflow, not the sewer's dry-weather path), then the one that begins the shortest way
    to an outfall along the flow; then the lowest position."""
    nxt = np.full(n, -1, dtype=np.int64)
    if len(u) == 0:
        return nxt
    out_degree = np.bincount(u, minlength=n)
    if not (out_degree > 1).any():
        nxt[u] = np.arange(len(u))
    else:
        cost = length_ft + outfall_distance_along_flow(n, u, v, length_ft, is_outfall)[v]
        to_node = pd.Series(cost).groupby([u, v]).transform("min").to_numpy()
        height = np.zeros(len(u)) if inlet_ft is None else np.round(inlet_ft, 3)
        aside = np.zeros(len(u), dtype=bool) if diverted is None else diverted
        order = np.lexsort((np.arange(len(u)), to_node, ~pipe, height, aside, ~np.isfinite(cost), u))
        first = order[np.r_[True, u[order][1:] != u[order][:-1]]]
        nxt[u[first]] = first
    nxt[is_outfall] = -1  # flow that reaches an outfall has arrived
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


def _first_flagged(next_main: np.ndarray, v: np.ndarray, flagged: np.ndarray, stop: np.ndarray) -> np.ndarray:
    """For every node, the first ``flagged`` main on its way down by the next mains, up to a ``stop`` node (not
    passed; a stop node itself has none), -1 for none. Pointer jumping: the first within 2**k steps, else the first
    within the next 2**k."""
    n = len(next_main)
    moving = (next_main >= 0) & ~stop
    e = np.clip(next_main, 0, None)
    ptr = np.where(moving, v[e] if len(v) else 0, np.arange(n))
    first = np.where(moving & (flagged[e] if len(flagged) else False), next_main, -1)
    for _ in range(max(1, int(np.ceil(np.log2(max(n, 2)))) + 1)):
        first = np.where(first >= 0, first, first[ptr])
        ptr = ptr[ptr]
    return first


def _first_manhole(next_main: np.ndarray, v: np.ndarray, is_manhole: np.ndarray) -> np.ndarray:
    """For every node, the first manhole at or downstream of it (-1 if the path meets none)."""
    n = len(next_main)
    has = next_main >= 0
    ptr = np.where(is_manhole | ~has, np.arange(n), v[np.clip(next_main, 0, None)] if len(v) else 0)
    for _ in range(max(1, int(np.ceil(np.log2(max(n, 2)))) + 1)):
        ptr = ptr[ptr]
    return np.where(is_manhole[ptr], ptr, -1)
