"""Try a sewer extension before building it: who becomes mandated, whether the design meets the law, what it costs.

``plan_extension`` takes a proposed main (a line, drawn in any direction), its diameter and material, and the
town's layers. Every rule comes from the profile; a rule the profile does not have is not applied.

- **Connection** (the downstream end): an end of the drawn main at (within ``network.snap_tolerance_ft`` of) an
  existing manhole connects to it: no new manhole is built or charged there. An end on an existing main gets a
  new manhole on that main. A main neither of whose ends meets the sewer but that passes through an existing
  manhole joins it there, and the part drawn beyond it is not laid (``_laid_from_manhole``); so does a main drawn
  from a point on an existing main over that main to its manhole, the feet over the main not laid. A main that reaches
  none of these gets a *connecting run*: a straight main from its nearer
  end to the nearest existing manhole whose path to the plant has capacity for the added flow; the run is built
  with the main, so it is in the length, manholes, cost, leakage and checks.
- **Manholes** (where the profile has the rules, Fort Plain § 144-18K): at every bend sharper than
  ``network.alignment_change_deg`` when ``network.manhole_at_alignment_change`` is set, and evenly between so no
  run exceeds ``network.max_manhole_spacing_ft`` when set; always at the upper end.
- **Newly mandated**: the mandate analysis with and without the built main (a public sanitary main); parcels
  mandated only with it. Those not connected today are on private systems to abandon (§ 144-5B, § 196-17E). A
  parcel outside every service area stays held; one only in areas marked as not mandating (Wappinger's Phase
  III) is made available by the new main (§ 196-17A: "until such time as public sewer is available").
- **Benefiting**: the newly mandated, and (``design.vacant_lots_benefit``) the vacant lots the mandate would reach
  if they were built on. They make up the petition's owners (Fort Plain § 144-17B, a majority is more than half)
  and share the cost.
- **Flow**: living units x ``network.gallons_per_day_per_unit``; where a parcel's units are unknown, its property
  class's ``design.typical_flow_gpd_by_class`` (said "unknown", never counted as one unit).
- **Cost** from the profile's unit costs, split three ways to the cent (largest remainder, so every split sums to
  the total): by frontage along the streets the main serves, by parcel, by living unit; no benefiting parcel
  pays less than ``design.min_share_per_parcel``.
- **Checks**, one plain verdict each: diameter (§ 144-18B), manhole spacing and alignment (§ 144-18K), material
  (§ 144-18A, flagged for the engineer, never failed), connection, downstream capacity (Manning, full pipe), and
  where the main runs (``analysis.plan_route``): the existing mains it crosses away from where it connects, and the
  private parcels it crosses outside the rights-of-way (easements). These two are design checks no section of our
  laws sets, and say so; Wappinger's easements cite § 196-21B (``design.easements_in_law``).
  Where the town's engineer gives a main's least slope (none of our laws does), whether the main can fall to its
  manhole (``_gravity_check``).
- **Requirements** the contractor must meet, shown as such (not as results): trench widths (§ 144-18F), the
  exfiltration test in sections of at most ``design.max_test_section_ft`` between manholes (§ 144-19B), each with
  its leakage allowance (§ 144-19C).
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely
import shapely.ops

from analysis.areas import held_by_service_area
from analysis.arrays import distinct
from analysis.errors import AnalysisError
from analysis.flows import GIVEN, average_flows, zero_flows_found_occupied
from analysis.mandate import analyze_mandates
from analysis.network import LARGEST_PIPE_IN, SewerNetwork, link_kind_words
from analysis.network_checks import spacing_limits_ft
from analysis.plan_route import CROSSES, ENDS_ON, RUNS_ALONG, buildings_crossed, mains_crossed, parcels_crossed
from analysis.profiles import OVERRIDDEN_FLAG, SETTING_FLAG, Profile, bracketed, citation_clause, flagged
from analysis.streets import street_pairs
from analysis.trace import connect_parcels, sewershed, trace_down
from analysis.units import feet_per_unit

GPD_PER_CFS = 646_317.0
PROPOSED_ID = "PROPOSED"
MEETS, FAILS, REVIEW, UNKNOWN = "meets", "does not meet", "for the engineer", "not known"
VERDICTS = (MEETS, FAILS, REVIEW, UNKNOWN)
CANDIDATE_MANHOLES = 10  # how many of the nearest manholes are tried for a connecting run
NO_DIAMETER = "has no diameter: give it in the mains layer"  # why a main on the path has no capacity
# Why no parcel is known to drain anywhere today, and what the present flow then counts. A plan takes no list of
# connected parcels of its own: it reads the list the store's latest analysis was given. It said "no list of
# connected parcels was given" to a planner whose command has no way to give one, and "the flow ... is not known"
# with "Counting none" beside a table whose present peaks counted the parcels required to connect (a tester).
NOT_RECORDED = (
    "No parcel is recorded as connected to the sewer (the parcels layer has no connected column, and no list of "
    "connected parcels came with the layers: a plan reads one only as the store's latest analysis was given it), so "
    "the present flow counts the parcels required to connect alone: parcels connected but not required to connect "
    "(beyond the law's reach, or by choice) are not known and not counted."
)


def cite(rule) -> str:
    """A rule's section as a board should read it: a value the profile chose, not the law, says so.

    Its flags in the one bracket of ``Rule.citation``: "§ 144-17A (value set by the user; profile setting)"."""
    return flagged(rule.citation, SETTING_FLAG if rule.setting else "")


@dataclass
class Check:
    """A check of the plan against a rule, with one plain verdict (``VERDICTS``)."""

    check: str
    verdict: str
    section: str
    message: str

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict {self.verdict!r} is not one of {VERDICTS}")

    @property
    def passed(self) -> bool | None:
        """True when it meets the rule, False when it does not, None when it is for the engineer or not known."""
        return {MEETS: True, FAILS: False}.get(self.verdict)

    def as_dict(self) -> dict:
        """With ``cited``: the section as a sentence sets it in brackets, "(§ 144-17A; profile setting)"."""
        return {**asdict(self), "cited": bracketed(self.section), "passed": self.passed}


@dataclass
class Requirement:
    """Something the contractor must meet when building (not a result of the plan)."""

    requirement: str
    section: str
    text: str

    def as_dict(self) -> dict:
        return {**asdict(self), "cited": bracketed(self.section)}


@dataclass
class TestSection:
    """One exfiltration test section: manhole to manhole, at most the profile's test length."""

    __test__ = False  # not a pytest class

    number: int
    from_manhole: str
    to_manhole: str
    length_ft: float
    manholes: int
    allowance_gpd: float
    too_long: bool = False

    def as_dict(self) -> dict:
        return {
            "number": self.number,
            "from_manhole": self.from_manhole,
            "to_manhole": self.to_manhole,
            "length_ft": round(self.length_ft, 1),
            "manholes": self.manholes,
            "allowance_gpd": round(self.allowance_gpd, 1),
            "too_long": self.too_long,
        }


@dataclass
class PlanResult:
    """Everything `sewerplan plan --json` prints, and the geometry to map and export."""

    newly_mandated: list[str]
    benefiting: list[str]
    vacant_benefiting: list[str]
    private_systems: list[str]
    held_by_service_area: list[str]
    made_available: list[str]
    manholes: list[dict]
    drawn_length_ft: float  # the drawn main as laid: without a part beyond the manhole it passes through
    connecting: dict | None
    diameter_in: float
    material: str | None
    design_checks: list[Check]
    requirements: list[Requirement]
    test_sections: list[TestSection]
    exfiltration_allowance_gpd: float | None
    petition: dict
    cost: dict
    flow: dict
    downstream: dict
    units: float
    parcel_rows: list[dict]
    main_crossings: list[dict] = field(default_factory=list)
    easements: list[dict] = field(default_factory=list)
    easement_length_ft: float = 0.0  # the main's length on private land (a lot line's counts once)
    # the buildings whose footprint the main passes through; None where the town gave no building footprints
    buildings_crossed: list[dict] | None = None
    # what of the drawn main is not laid: past the manhole it passes through, or drawn over an existing main at
    # either end (the lower end's, or the middle's, first); at most one at each end
    not_laid_parts: list[dict] = field(default_factory=list)
    beyond_parcels_ft: float = 0.0  # the main as built beyond the town's parcels (``_beyond_parcels_ft``)
    # the parcels the analysis found occupied (a building on the lot, its property class) whose flow_gpd is 0, which
    # loading did not warn of: each counts as sending nothing downstream (``zero_flows_found_occupied``)
    zero_flow_found_occupied: list[str] = field(default_factory=list)
    parcels: gpd.GeoDataFrame = field(repr=False, default=None)
    line: object = field(repr=False, default=None)
    built: object = field(repr=False, default=None)

    @property
    def length_ft(self) -> float:
        return self.drawn_length_ft + (self.connecting["length_ft"] if self.connecting else 0.0)

    @property
    def not_laid(self) -> dict | None:
        """The first part not laid (the lower end's, or the one past the manhole it passes through), else None: the
        document's ``not_laid``, as a plan carried it when it carried one part only."""
        return self.not_laid_parts[0] if self.not_laid_parts else None

    def as_dict(self) -> dict:
        return {
            "newly_mandated": self.newly_mandated,
            "benefiting": self.benefiting,
            "vacant_benefiting": self.vacant_benefiting,
            "private_systems": self.private_systems,
            "held_by_service_area": self.held_by_service_area,
            "made_available": self.made_available,
            "manholes": self.manholes,
            "length_ft": round(self.length_ft, 1),
            "drawn_length_ft": round(self.drawn_length_ft, 1),
            "connecting_main": self.connecting,
            # the first part, as a plan carried it before it carried every part (``not_laid_parts``)
            "not_laid": self.not_laid,
            "not_laid_parts": self.not_laid_parts,
            "diameter_in": self.diameter_in,
            "material": self.material,
            "design_checks": [c.as_dict() for c in self.design_checks],
            "requirements": [r.as_dict() for r in self.requirements],
            "test_sections": [s.as_dict() for s in self.test_sections],
            "exfiltration_allowance_gpd": None
            if self.exfiltration_allowance_gpd is None
            else round(self.exfiltration_allowance_gpd, 1),
            "petition": self.petition,
            "cost": self.cost,
            "flow": self.flow,
            "downstream": self.downstream,
            "units": self.units,
            "parcels": self.parcel_rows,
            "main_crossings": self.main_crossings,
            "easements": self.easements,
            "easement_length_ft": self.easement_length_ft,
            "buildings_crossed": self.buildings_crossed,
            "beyond_parcels_ft": round(self.beyond_parcels_ft, 1),
            "zero_flow_found_occupied": {
                "parcels": len(self.zero_flow_found_occupied),
                "parcel_ids": self.zero_flow_found_occupied[:50],
            },
        }


# -- manholes ----------------------------------------------------------------------------------------------------


THROUGH = "existing manhole the main runs through"  # a place_manholes reason: a manhole of the sewer on the way


def place_manholes(
    line,
    *,
    max_spacing: float | None,
    bend_deg: float | None,
    feet_per_unit: float = 1.0,
    through: np.ndarray | None = None,
) -> list[tuple[float, float, str]]:
    """Manhole positions along a line: both ends; bends sharper than ``bend_deg`` and evenly spaced between so
    no gap exceeds ``max_spacing``, each only when given (a town whose law has no such rule gets none).

    ``through`` are the distances along the line of existing manholes it runs through: a pipe laid through a
    manhole is built into it, so each is one of the main's manholes (reason ``THROUGH``), and the spacing is
    counted from it; new manholes beside them were placed and charged as if they were not there.

    ``max_spacing`` is in the line's CRS units, ``feet_per_unit`` converts it for the reasons, which are in feet (a
    town measured in metres read "spacing at most 121.92 ft" for Fort Plain's 400 ft).

    Examples
    --------
    >>> from shapely.geometry import LineString
    >>> [(x, y) for x, y, _ in place_manholes(LineString([(0, 0), (900, 0)]), max_spacing=400, bend_deg=10)]
    [(0.0, 0.0), (300.0, 0.0), (600.0, 0.0), (900.0, 0.0)]
    >>> len(place_manholes(LineString([(0, 0), (900, 0), (900, 900)]), max_spacing=None, bend_deg=None))
    2
    >>> [x for x, _, _ in place_manholes(LineString([(0, 0), (900, 0)]), max_spacing=400, bend_deg=10,
    ...                                  through=np.array([350.0]))]
    [0.0, 350.0, 625.0, 900.0]
    """
    coords = np.asarray(line.coords)[:, :2]
    # A vertex given twice (a double click on the map's drawing, a snapped vertex in QGIS) is one bend: read as two,
    # it placed, charged and leak-tested two manholes at one spot.
    coords = coords[np.r_[True, (np.diff(coords, axis=0) != 0).any(axis=1)]]
    along = np.r_[0.0, np.cumsum(np.hypot(*np.diff(coords, axis=0).T))]
    stops: dict[float, str] = {0.0: "end of the main"}  # distance along the line -> why a manhole is there
    if bend_deg is not None:
        last = 0
        for i in range(1, len(coords) - 1):  # vertices of one proposed main: a handful
            a, b = coords[i] - coords[last], coords[i + 1] - coords[i]
            turn = abs((math.degrees(math.atan2(b[1], b[0]) - math.atan2(a[1], a[0])) + 180) % 360 - 180)
            if turn > bend_deg:
                stops[float(along[i])] = "change in alignment"
                last = i
    for d in np.asarray(through if through is not None else [], dtype=float):  # the few manholes on the way
        if 0 < d < along[-1]:
            near = [k for k in stops if abs(k - d) <= 1e-6 * max(along[-1], 1)]  # a bend at the manhole: one
            for k in near:
                del stops[k]
            stops[float(d)] = THROUGH
    stops[float(along[-1])] = "end of the main"
    at = sorted(stops)
    points: list[tuple[float, float, str]] = []
    for d0, d1 in zip(at[:-1], at[1:], strict=True):
        n_between = max(0, math.ceil((d1 - d0) / max_spacing - 1e-9) - 1) if max_spacing else 0
        p = line.interpolate(d0)
        points.append((float(p.x), float(p.y), stops[d0]))
        for m in range(1, n_between + 1):
            p = line.interpolate(d0 + (d1 - d0) * m / (n_between + 1))
            points.append((float(p.x), float(p.y), f"spacing at most {round(max_spacing * feet_per_unit, 1):g} ft"))
    points.append((float(coords[-1][0]), float(coords[-1][1]), "end of the main"))
    return points


# -- money -------------------------------------------------------------------------------------------------------


def allocate_cents(total_cents: int, weights, *, minimum_cents: int = 0) -> np.ndarray:
    """Split a total in whole cents in proportion to ``weights``, each share at least ``minimum_cents``.

    Shares below the minimum are raised to it and the rest is split again among the others; the cents left by
    rounding down go one each to the largest remainders (ties to the earlier parcel), so the shares always sum to
    the total exactly. When the minimum cannot be met by every parcel, the total is split equally. Parcels whose
    weights are all zero share equally.

    Examples
    --------
    >>> allocate_cents(100, [1, 1, 1]).tolist()
    [34, 33, 33]
    >>> allocate_cents(10_000, [0, 1, 3], minimum_cents=1_000).tolist()
    [1000, 2250, 6750]
    """
    w = np.asarray(weights, dtype=float)
    n = len(w)
    total_cents = int(total_cents)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    w = np.where(np.isfinite(w) & (w > 0), w, 0.0)
    minimum = int(minimum_cents)
    if minimum * n >= total_cents:  # the minimum cannot be met: equal shares
        w, minimum = np.ones(n), 0
    fixed = np.zeros(n, dtype=bool)
    while True:  # at most n rounds: each fixes at least one more parcel at the minimum
        free = ~fixed
        rest = total_cents - minimum * int(fixed.sum())
        wf = np.where(free, w, 0.0)
        exact = rest * wf / wf.sum() if wf.sum() > 0 else np.where(free, rest / free.sum(), 0.0)
        below = free & (exact < minimum)
        if not below.any():
            break
        fixed |= below
    exact = np.where(fixed, float(minimum), exact)
    cents = np.floor(exact + 1e-9).astype(np.int64)
    left = total_cents - int(cents.sum())
    if left > 0:
        order = np.lexsort((np.arange(n), -(exact - cents)))
        cents[order[:left]] += 1
    return cents


# -- the plan ----------------------------------------------------------------------------------------------------


@dataclass
class _Connection:
    kind: str  # "manhole" (an existing one), "main" (a new manhole on an existing main), "run", "none"
    label: str | None
    node: int | None
    first_main: int | None
    end: int  # 0 or -1: the end of the drawn main that connects
    xy: tuple[float, float] | None  # where the built main starts
    gap_ft: float
    capacity: dict | None = None
    not_laid_parts: list = field(default_factory=list)  # what of the drawn main is not laid (``_laid_from_manhole``)
    passes: list = field(default_factory=list)  # the sewer's manholes it runs through on its way up
    tied: list = field(default_factory=list)  # manholes (or mains) exactly as near as the one taken, of higher IDs
    lower_invert: bool = False  # taken for its lower invert of the manholes its ends meet (``_nearest_met``)
    # The force main (or a model's pump ...) the main would end on, "force main F1"; "" where it meets gravity sewer.
    pressurised: str = ""
    # Where the drawn end lay on an existing main a few feet from the manhole it connects at (``_onto_manhole``):
    # {"on": "existing main M-195", "gap_ft": 3.0}; None where it was drawn at the manhole.
    near_miss: dict | None = None


def plan_extension(
    proposed,
    *,
    diameter_in: float,
    profile: Profile,
    parcels: gpd.GeoDataFrame,
    mains: gpd.GeoDataFrame,
    streets: gpd.GeoDataFrame | None = None,
    buildings: gpd.GeoDataFrame | None = None,
    service_areas: gpd.GeoDataFrame | None = None,
    network: SewerNetwork | None = None,
    material: str | None = None,
    curbs: gpd.GeoDataFrame | None = None,
    sewer_rights_of_way: gpd.GeoDataFrame | None = None,
) -> PlanResult:
    """Evaluate a proposed main (a shapely LineString in the layers' CRS). See the module docstring.

    ``curbs`` and ``sewer_rights_of_way`` are measured from as the analysis measures (the property line of Fort
    Plain's § 144-1), so a plan's "before" is the town's analysis and its "after" is measured the same way.
    Where the profile has ``design.min_main_slope_ft_per_ft`` (the town engineer's least slope for a main: none of
    our three laws sets one, so it is unset until the town sets it), the gravity check says whether the main can
    fall to its manhole (``_gravity_check``).

    Examples
    --------
    >>> from shapely.geometry import LineString, box
    >>> from analysis.profiles import load_profile
    >>> crs = "EPSG:2260"
    >>> parcels = gpd.GeoDataFrame({"parcel_id": ["A", "B"], "occupied": [True, False], "owner_name": ["X", "Y"]},
    ...     geometry=[box(0, 25, 100, 125), box(100, 25, 200, 125)], crs=crs)
    >>> streets = gpd.GeoDataFrame({"street_name": ["Oak St"]}, geometry=[LineString([(0, 0), (300, 0)])], crs=crs)
    >>> mains = gpd.GeoDataFrame({"main_id": []}, geometry=[], crs=crs)
    >>> r = plan_extension(LineString([(0, 0), (300, 0)]), diameter_in=8, profile=load_profile("fort-plain"),
    ...     parcels=parcels, mains=mains, streets=streets)
    >>> r.newly_mandated, r.vacant_benefiting, r.petition["signatures_needed"]
    (['A'], ['B'], 2)
    """
    line = shapely.line_merge(proposed) if proposed.geom_type == "MultiLineString" else proposed
    if line.geom_type != "LineString":
        raise AnalysisError("The proposed main must be one line (draw it as a single connected line).")
    if line.length == 0:
        raise AnalysisError("The proposed main has no length: its points all lie in one place; draw it end to end.")
    if line.is_closed:  # a ring is "simple" to GEOS, but a main that ends where it began has no upper end
        raise AnalysisError(
            "The proposed main ends where it begins, a closed loop: draw it from where it joins the sewer to its "
            "upper end, without coming back."
        )
    if not line.is_simple:  # a pipe cannot cross or retrace itself: its length, cost and parcels would be counted twice
        raise AnalysisError(
            "The proposed main crosses or runs back over itself: draw it again as a line that does not cross its own "
            "path."
        )
    if not (np.isfinite(diameter_in) and diameter_in > 0):
        raise AnalysisError(f"The diameter of the proposed main must be a positive number of inches: {diameter_in}.")
    if diameter_in > LARGEST_PIPE_IN:
        raise AnalysisError(
            f"A {diameter_in:g}-inch main is larger than any sewer pipe made ({LARGEST_PIPE_IN:g} in): give the "
            "internal diameter in inches."
        )
    fpu = feet_per_unit(parcels.crs)
    _refuse_longer_than_the_town(line, parcels, fpu)
    line, not_laid = _laid_from_manhole(line, network, profile.network.snap_tolerance_ft.value / fpu, fpu)
    near = profile.network.connect_at_manhole_within_ft.value / fpu
    line, not_laid, tied = _onto_manhole(
        line, not_laid, network, profile.network.snap_tolerance_ft.value / fpu, fpu, near=near
    )
    drawn_ft = line.length * fpu
    material = (material or "").strip() or None

    layers = {"streets": streets, "buildings": buildings, "curbs": curbs, "sewer_rights_of_way": sewer_rights_of_way}
    before = analyze_mandates(parcels, mains, profile=profile, **layers).parcels
    present = _Present(network, before, profile)
    reach = _served(line, parcels, mains, before, profile, layers, service_areas, diameter_in, fpu)
    connection = _connect(line, network, profile, fpu, present, reach.added_peak_gpd)
    connection.not_laid_parts = not_laid
    if tied and connection.kind == "manhole" and connection.label == tied[0]:  # as near before it was moved onto it
        connection.tied, connection.lower_invert, connection.near_miss = tied[1], tied[2], tied[3]
    built = _built_line(line, connection)
    if connection.kind == "run":  # the connecting run is built too: parcels along it are reached as well
        reach = _served(built, parcels, mains, before, profile, layers, service_areas, diameter_in, fpu)
    if connection.kind != "none" and not connection.pressurised:
        connection.capacity = present.capacity(connection.node, connection.first_main, reach.added_peak_gpd)

    connection.passes, through = _passed_manholes(
        built, connection, network, profile.network.snap_tolerance_ft.value / fpu, fpu
    )
    manholes = _manholes(built, connection, network, profile, fpu, diameter_in, through=through)
    new_manholes = sum(1 for m in manholes if not m["existing"])
    connecting = None
    if connection.kind == "run":
        connecting = {
            "to_manhole": connection.label,
            "length_ft": round(connection.gap_ft, 1),
            "coords": [list(connection.xy), [float(v) for v in line.coords[connection.end][:2]]],
        }
    chosen = reach.chosen
    petition = _petition(chosen, profile)
    frontage = _frontage_ft(chosen, built, streets, profile, fpu)
    cost, shares = _cost(chosen, reach.flows, frontage, drawn_ft, connecting, diameter_in, new_manholes, profile)
    checks = _design_checks(built, diameter_in, material, manholes, connection, profile, fpu)
    requirements, sections, leakage = _requirements(built, diameter_in, material, manholes, profile, fpu)
    downstream = _downstream(connection, network, profile, reach.added_peak_gpd, present_recorded=present.recorded)
    checks += _downstream_checks(connection, downstream, network, profile)
    slope = profile.design.min_main_slope_ft_per_ft
    if slope.value is not None:
        checks.append(_gravity_check(connection, manholes, network, float(slope.value), cite(slope), fpu))
    snap = profile.network.snap_tolerance_ft.value / fpu
    crossings = mains_crossed(
        built,
        mains,
        connects_at=[connection.xy] if connection.xy is not None else [],
        manholes_xy=network.node_xy[network.node_is_manhole] if network is not None else np.zeros((0, 2)),
        tolerance=snap,
        fpu=fpu,
    )
    crossed = parcels_crossed(
        built, parcels, profile=profile, streets=streets, sewer_rights_of_way=sewer_rights_of_way, fpu=fpu
    )
    ways_known = any(layer is not None and len(layer) for layer in (streets, sewer_rights_of_way))
    # along a lot line the main lies on both parcels: its length on private land is their union's, not their sum
    private_ft = float(shapely.length(shapely.union_all(crossed.geometry.values))) * fpu if len(crossed) else 0.0
    checks += _route_checks(
        crossings, crossed, connection, profile, crs=parcels.crs, ways_known=ways_known, private_ft=private_ft
    )
    footprints = _footprints(buildings)
    under = None
    if footprints:
        under = buildings_crossed(built, buildings, parcels=parcels, profile=profile, fpu=fpu)
    checks.append(_buildings_check(under, footprints, len(buildings) if buildings is not None else 0))

    flows = reach.flows
    newly = chosen["category"].to_numpy() == "newly mandated"
    rows = _parcel_rows(chosen, flows, frontage, shares)
    return PlanResult(
        newly_mandated=chosen.loc[newly, "parcel_id"].astype(str).tolist(),
        benefiting=chosen.loc[chosen["benefits"].to_numpy(), "parcel_id"].astype(str).tolist(),
        vacant_benefiting=chosen.loc[(~newly) & chosen["benefits"].to_numpy(), "parcel_id"].astype(str).tolist(),
        private_systems=chosen.loc[newly & ~chosen["connected_flag"].astype(bool).to_numpy(), "parcel_id"]
        .astype(str)
        .tolist(),
        held_by_service_area=reach.held,
        made_available=reach.made_available,
        manholes=manholes,
        drawn_length_ft=drawn_ft,
        connecting=connecting,
        not_laid_parts=not_laid,
        diameter_in=float(diameter_in),
        material=material,
        design_checks=checks,
        requirements=requirements,
        test_sections=sections,
        exfiltration_allowance_gpd=leakage,
        petition=petition,
        cost=cost,
        flow={
            "units": float(np.nansum(flows["units"].to_numpy()[newly])),
            "units_unknown": chosen.loc[newly & flows["units"].isna().to_numpy(), "parcel_id"].astype(str).tolist(),
            "flow_unknown": chosen.loc[flows["flow_gpd"].isna().to_numpy(), "parcel_id"].astype(str).tolist(),
            "added_average_gpd": round(float(np.nansum(flows["flow_gpd"].to_numpy()))),
            "added_peak_gpd": round(reach.added_peak_gpd),
            "gallons_per_unit": profile.network.gallons_per_day_per_unit.value,
            "section": cite(profile.design.typical_flow_gpd_by_class),
        },
        downstream=downstream,
        units=float(np.nansum(flows["units"].to_numpy()[newly])),
        parcel_rows=rows,
        main_crossings=crossings.to_dict("records"),
        easements=easement_rows(crossed),
        easement_length_ft=round(private_ft, 1),
        buildings_crossed=None if under is None else rows_with_lines(under),
        beyond_parcels_ft=_beyond_parcels_ft(built, parcels, profile, fpu),
        zero_flow_found_occupied=zero_flows_found_occupied(before).tolist(),
        parcels=chosen,
        line=line,
        built=built,
    )


# A drawn main longer than these is refused before it is evaluated (``_refuse_longer_than_the_town``).
LONGEST_MAIN_FT = 52_800.0  # 10 miles
LONGEST_MAIN_TOWN_DIAGONALS = 3.0


def _refuse_longer_than_the_town(line, parcels: gpd.GeoDataFrame, fpu: float) -> None:
    """Refuse a drawn main longer than any extension: most likely a line in the wrong units or CRS.

    A 50-mile main from MH-45 of the sample village (whose parcels lie within 1.5 miles corner to corner) was
    laid, given 660 manholes and costed at $70 million, with only the warning that most of it lay beyond the town's
    parcels. Refused where it is longer than both ``LONGEST_MAIN_FT`` (10 miles, the distance a layer may lie from
    the rest before it is taken for one in the wrong CRS, ``layers.crs.FAR_LAYER_FT``) and
    ``LONGEST_MAIN_TOWN_DIAGONALS`` (3) times the diagonal of the parcels' extent. No real extension reaches either:
    a main is a route through the town or to its edge, and at most a trunk to a neighbouring plant a few miles off;
    one three times as long as the town is wide crosses it and back again and again. Both must be passed, so that
    neither a hamlet's small parcels layer (a real 2-mile trunk to the plant is 10 times its width) nor a county's
    wide one refuses a real main. Not a profile setting: no law sets it, and it tells a mistake from a main, not
    a town's practice. The extent is measured only for a main longer than 10 miles: a town's million parcels'
    bounds take most of a second, which no ordinary plan should pay.

    Examples
    --------
    >>> from shapely.geometry import LineString, box
    >>> lots = gpd.GeoDataFrame(geometry=[box(0, 0, 4000, 3000)], crs="EPSG:2260")
    >>> _refuse_longer_than_the_town(LineString([(0, 0), (0, 50_000)]), lots, 1.0)  # under 10 miles: never
    >>> _refuse_longer_than_the_town(LineString([(0, 0), (0, 264_000)]), lots, 1.0)
    Traceback (most recent call last):
    ...
    analysis.errors.AnalysisError: The proposed main is 50.0 miles long (264,000 ft), ...
    """
    length_ft = line.length * fpu
    if length_ft <= LONGEST_MAIN_FT or len(parcels) == 0:
        return
    west, south, east, north = (float(v) * fpu for v in parcels.total_bounds)
    diagonal_ft = float(np.hypot(east - west, north - south))
    if length_ft <= LONGEST_MAIN_TOWN_DIAGONALS * diagonal_ft:
        return
    raise AnalysisError(
        f"The proposed main is {length_ft / 5280:,.1f} miles long ({length_ft:,.0f} ft), more than "
        f"{LONGEST_MAIN_TOWN_DIAGONALS:g} times the {diagonal_ft / 5280:,.1f} miles across the town's parcels (their "
        f"extent, {east - west:,.0f} by {north - south:,.0f} ft, corner to corner) and more than "
        f"{LONGEST_MAIN_FT / 5280:g} miles: no extension is that long. It is most likely in the wrong units or CRS "
        "(a line in feet read as metres is 3.28 times too long, and one point in another CRS reaches miles away): "
        "give the CRS the line was drawn in, or draw it again."
    )


# How far a parcel's square corner reaches, as a multiple of the distance it is grown by: a right angle's is the
# square root of two; a sharper corner is cut off (bevelled) at this, so no parcel farther than it can reach a main.
CORNER_REACH = 2.0


def _beyond_parcels_ft(built, parcels: gpd.GeoDataFrame, profile: Profile, fpu: float) -> float:
    """Feet of the main as built farther from every parcel of the town, each grown with square corners, than a
    parcel can be reached from (``mandate.distance_ft``, else a street's ``measurement.default_row_width_ft``).

    There no parcel is in the data: a main drawn across the town line, or past where the parcels layer stops, was
    costed for all its length while who it reached, the petition and the split counted only the town's parcels, and
    nothing said so. Measured from the parcels themselves, so a main drawn into a bay of a concave town (a lake, a
    neighbouring village cut out of it) is counted; the convex hull of every parcel, used before, covered the bay,
    and was built again from every parcel's vertices on each plan (seconds at a million parcels). Now only the parcels
    near the main are looked at (the parcels' tree, which the plan's easements check queries too), so the cost is the
    main's, not the town's. A street, or a gap between lots, is within reach of the lots beside it. Grown with square
    corners, as the hull was, so that a main leaving a corner of the town (or the manhole at a street's end, short of
    its first lot) is counted only past them, not for the few feet a round growth cuts off the corner.

    Examples
    --------
    >>> from shapely.geometry import LineString, box
    >>> from analysis.profiles import load_profile
    >>> lots = gpd.GeoDataFrame(geometry=[box(0, 0, 1000, 1000)], crs="EPSG:2260")
    >>> _beyond_parcels_ft(LineString([(500, 500), (500, 1600)]), lots, load_profile("fort-plain"), 1.0)
    500.0
    >>> lake = gpd.GeoDataFrame(geometry=[box(0, 0, 1000, 100), box(0, 900, 1000, 1000)], crs="EPSG:2260")
    >>> _beyond_parcels_ft(LineString([(500, 100), (500, 500)]), lake, load_profile("fort-plain"), 1.0)
    300.0
    """
    if parcels is None or not len(parcels):
        return 0.0
    reach = profile.mandate.distance_ft.value
    if reach is None:
        reach = profile.measurement.default_row_width_ft.value
    grow = float(reach) / fpu
    near = parcels.sindex.query(built, predicate="dwithin", distance=grow * CORNER_REACH * 1.01)
    if not len(near):
        return round(float(built.length) * fpu, 1)
    geoms = np.asarray(parcels.geometry.values)[near]
    # mitred: a main passing a corner of a lot (or leaving the town from a manhole at its edge) is not counted beyond
    # it for the few feet a rounded buffer cuts off the corner
    grown = shapely.buffer(geoms, grow, join_style="mitre", mitre_limit=CORNER_REACH)
    reached = shapely.union_all(shapely.intersection(grown, built))  # lines: cheap to join
    return round(max(float(built.length) - float(shapely.length(reached)), 0.0) * fpu, 1)


@dataclass
class _Reach:
    chosen: gpd.GeoDataFrame  # newly mandated and vacant lots reached, with ``category`` and ``benefits``
    flows: pd.DataFrame
    added_peak_gpd: float
    held: list[str]
    made_available: list[str]


def _served(line, parcels, mains, before, profile, layers, service_areas, diameter_in, fpu) -> _Reach:
    """Who the built main newly reaches: the mandate analysis with it, on the parcels near enough to change.

    Measured from the curbline (or a sewer right-of-way's edge), a parcel can be in range though its boundary is
    not: there every parcel is analysed again rather than guessing how far the curb lies in front of it.
    """
    md = profile.mandate
    threshold = md.distance_ft.value
    tolerance = profile.measurement.distance_tolerance_ft.value
    rows = layers["sewer_rights_of_way"]
    from_curbs = md.measured_from.value == "curbline" and (
        layers["curbs"] is not None or (rows is not None and len(rows) > 0)
    )
    if threshold is not None and not from_curbs:
        near = shapely.dwithin(np.asarray(parcels.geometry.values), line, (threshold + tolerance + 1.0) / fpu)
    else:
        near = np.ones(len(parcels), dtype=bool)  # the analysis explains that the distance must be set
    subset = parcels[near]
    new_main = gpd.GeoDataFrame(
        {
            "main_id": [PROPOSED_ID],
            "sewer_type": ["sanitary"],
            "ownership": ["public"],
            "status": ["active"],
            "diameter_in": [diameter_in],
        },
        geometry=[line],
        crs=parcels.crs,
    )
    with_new = gpd.GeoDataFrame(pd.concat([mains, new_main], ignore_index=True), crs=parcels.crs)
    after = analyze_mandates(subset, with_new, profile=profile, **layers).parcels
    was = before[near]
    newly = (after["status"].to_numpy() == "mandated") & (was["status"].to_numpy() != "mandated")
    vacant = _vacant_reached(after, profile) & ~_vacant_reached(was, profile)

    outside = held_by_service_area(after, None if service_areas is None else service_areas.assign(mandates="yes"))
    not_mandating = held_by_service_area(after, service_areas) & ~outside
    held = (newly | vacant) & outside
    newly &= ~outside
    vacant &= ~outside
    chosen = after[newly | vacant].copy()
    chosen["category"] = np.where(newly[newly | vacant], "newly mandated", "vacant lot")
    chosen["benefits"] = newly[newly | vacant] | bool(profile.design.vacant_lots_benefit.value)
    flows = parcel_flows(chosen, profile, vacant=chosen["category"].to_numpy() == "vacant lot")
    peak = float(np.nansum(flows["flow_gpd"].to_numpy())) * profile.design.peaking_factor.value
    return _Reach(
        chosen,
        flows,
        peak,
        after.loc[held, "parcel_id"].astype(str).tolist(),
        after.loc[(newly | vacant) & not_mandating, "parcel_id"].astype(str).tolist(),
    )


def _vacant_reached(results: gpd.GeoDataFrame, profile: Profile) -> np.ndarray:
    """Unoccupied parcels the mandate would reach if they were built on: in range, and abutting where required."""
    md = profile.mandate
    if md.distance_ft.value is None:
        return np.zeros(len(results), dtype=bool)
    in_range = results["distance_ft"].to_numpy(float) <= md.distance_ft.value + (
        profile.measurement.distance_tolerance_ft.value
    )
    abuts = (
        results["abuts_sewered_street"].fillna(False).to_numpy(bool)
        if md.requires_abutting_street.value
        else np.ones(len(results), dtype=bool)
    )
    return (results["status"].to_numpy() == "unoccupied") & in_range & abuts


def parcel_flows(parcels: pd.DataFrame, profile: Profile, *, vacant=None) -> pd.DataFrame:
    """Living units and average daily flow of each parcel, and what each rests on.

    Units: the parcel's own ``units``, else its property class's ``buildings.class_units``, else unknown (a
    vacant lot has none). Flow: what ``analysis.flows.average_flows`` knows (its ``flow_gpd`` where given, the
    metered figure; else its own living units x ``network.gallons_per_day_per_unit``); else the class's units x
    that rate; else (and for a vacant lot: its future building, § 144-17A) the class's
    ``design.typical_flow_gpd_by_class`` by the longest listed prefix, else unknown. A mill metered at 30,000 gpd
    counted its class's typical 1,250 gpd, and a main near capacity was said to have room. Returns ``units``,
    ``flow_gpd``, ``basis`` on the parcels' index.

    Examples
    --------
    >>> from analysis.profiles import load_profile
    >>> frame = pd.DataFrame({"units": [2, None, None, None], "property_class": ["220", "220", "612", "999"]})
    >>> parcel_flows(frame, load_profile("fort-plain"))[["units", "flow_gpd"]].values.tolist()
    [[2.0, 500.0], [2.0, 500.0], [nan, 4500.0], [nan, nan]]
    """
    n = len(parcels)
    gpd_unit = float(profile.network.gallons_per_day_per_unit.value)
    units = (
        pd.to_numeric(parcels["units"], errors="coerce").to_numpy(float)
        if "units" in parcels.columns
        else np.full(n, np.nan)
    )
    units = np.where(units > 0, units, np.nan)
    klass = (
        parcels["property_class"].astype("string").fillna("").str.strip().to_numpy(object)
        if "property_class" in parcels.columns
        else np.full(n, "", dtype=object)
    )
    basis = np.where(np.isfinite(units), "living units recorded", "").astype(object)
    by_class = (
        pd.Series(klass).map({str(k): float(v) for k, v in profile.buildings.class_units.value.items()}).to_numpy(float)
    )
    use = ~np.isfinite(units) & np.isfinite(by_class)
    units = np.where(use, by_class, units)
    basis[use] = "living units by property class"
    vacant = np.zeros(n, dtype=bool) if vacant is None else np.asarray(vacant, dtype=bool)
    units = np.where(vacant, 0.0, units)
    flow = units * gpd_unit
    typical = np.full(n, np.nan)
    matched = np.zeros(n, dtype=bool)
    table = profile.design.typical_flow_gpd_by_class.value
    text = pd.Series(klass, dtype="string")
    for prefix in sorted(table, key=len, reverse=True):  # a handful of classes, longest first
        hit = ~matched & text.str.startswith(str(prefix)).fillna(False).to_numpy(bool)
        typical[hit] = float(table[prefix])
        matched |= hit
    fill = (~np.isfinite(units)) | vacant
    flow = np.where(fill, typical, flow)
    cls = pd.Series(klass).replace("", "none").to_numpy(object)
    basis = np.where(
        fill & np.isfinite(typical),
        np.char.add("typical flow for property class ", cls.astype(str)),
        basis,
    ).astype(object)
    basis[fill & ~np.isfinite(typical)] = "unknown"
    basis[vacant & np.isfinite(typical)] = np.char.add(
        "vacant: future building, typical for class ", cls[vacant & np.isfinite(typical)].astype(str)
    )
    # The one reading of a flow known (the sewersheds' and duties'): a given flow_gpd first, then the recorded units;
    # the class's figures only where it knows none. Not for a vacant lot: its figure is its future building's.
    known, source = average_flows(parcels, profile)
    use = np.isfinite(known) & ~vacant
    flow = np.where(use, known, flow)
    basis[use & (source == GIVEN)] = "flow_gpd given"
    return pd.DataFrame({"units": units, "flow_gpd": flow, "basis": basis}, index=parcels.index)


def _owner_keys(chosen: pd.DataFrame) -> pd.Series:
    ids = chosen["parcel_id"].astype(str)
    if "owner_name" not in chosen.columns:
        return "parcel " + ids
    names = chosen["owner_name"].astype("string").fillna("").str.upper()
    names = names.str.replace(r"[^\w]+", " ", regex=True).str.strip()
    return names.where(names != "", "(no owner recorded) parcel " + ids)


def _petition(chosen: pd.DataFrame, profile: Profile) -> dict:
    """The benefiting owners (normalised names; a parcel with no owner recorded counts as one) and a majority."""
    benefiting = chosen[chosen["benefits"].to_numpy()]
    keys = _owner_keys(benefiting)
    shown = (
        benefiting["owner_name"].astype("string").fillna("(no owner recorded)")
        if "owner_name" in benefiting
        else pd.Series("(no owner recorded)", index=benefiting.index)
    )
    address = (
        benefiting["site_address"].astype("string").fillna("")
        if "site_address" in benefiting
        else pd.Series("", index=benefiting.index)
    )
    table = pd.DataFrame(
        {"key": keys, "owner": shown, "parcel": benefiting["parcel_id"].astype(str), "address": address}
    )
    owners = [
        {
            "owner": str(group["owner"].iloc[0]),
            "parcels": group["parcel"].tolist(),
            "addresses": [a for a in group["address"].tolist() if a],
        }
        for _, group in table.groupby("key", sort=True)
    ]
    n = len(owners)
    rule = profile.design.petition_majority
    return {
        "benefiting_owners": n,
        "signatures_needed": n // 2 + 1 if n else 0,
        "section": rule.citation if rule.value else None,
        "cited": rule.cited if rule.value else None,
        "applies": bool(rule.value),
        "owners": owners,
        "no_owner_recorded": int(keys.str.startswith("(no owner recorded)").sum()),
    }


def petition_passes(signatures: int, benefiting_owners: int) -> bool:
    """A majority is more than half: exactly half is not enough."""
    return signatures * 2 > benefiting_owners


def _frontage_ft(chosen, built, streets, profile, fpu) -> np.ndarray:
    """Each parcel's frontage along the streets the main serves: every segment of a street in which the main lies,
    the street's segments joined as the mandate joins them (``measurement.join_street_segments``; without streets,
    or for a main in no street: the main itself).

    The parcel's boundary within the street's right-of-way grown by the abutting tolerance is cut into segments,
    and each counts by its length along the street (times the cosine of its angle to the nearest street segment),
    so the ends of side lot lines that reach into the tolerance band add nothing.
    """
    m = profile.measurement
    tol = m.abut_tolerance_ft.value / fpu
    if len(chosen) == 0:
        return np.zeros(0)
    guide = np.array([built])
    band = built.buffer(m.default_row_width_ft.value / 2 / fpu + tol, cap_style="flat")
    if streets is not None and len(streets):
        pairs = street_pairs(
            streets, np.asarray(chosen.geometry.values), np.array([built]), profile=profile, fpu=fpu, workers=1
        )
        rows = distinct(pairs.holds["row"].to_numpy())
        if len(rows):
            # the whole street the main lies in, as the mandate reads it (``streets.same_street``): by name, two
            # Main Streets that never meet were both counted
            served = np.isin(pairs.street_of, pairs.street_of[rows])
            geoms = np.asarray(streets.geometry.values)[served]
            width = np.full(len(geoms), float(m.default_row_width_ft.value))
            if "row_width_ft" in streets.columns:
                given = pd.to_numeric(streets["row_width_ft"], errors="coerce").to_numpy(float)[served]
                width = np.where(np.isfinite(given) & (given > 0), given, width)
            linear = shapely.get_dimensions(geoms) == 1
            band = shapely.union_all(
                np.where(
                    linear,
                    shapely.buffer(geoms, np.where(linear, width / 2 / fpu + tol, tol), cap_style="flat"),
                    shapely.buffer(geoms, tol),
                )
            )
            guide = np.where(linear, geoms, shapely.boundary(geoms))
    edge = shapely.intersection(shapely.boundary(np.asarray(chosen.geometry.values)), band)
    seg_owner, seg_a, seg_b = _segments(edge)
    if len(seg_owner) == 0:
        return np.zeros(len(chosen))
    _, ga, gb = _segments(guide)
    tree = shapely.STRtree(shapely.linestrings(np.stack([ga, gb], axis=1)))
    mid = shapely.points((seg_a + seg_b) / 2)
    near = tree.nearest(mid)
    d = seg_b - seg_a
    g = gb[near] - ga[near]
    g_len = np.hypot(g[:, 0], g[:, 1])
    along = np.abs((d * g).sum(axis=1)) / np.where(g_len > 0, g_len, 1.0)
    return np.bincount(seg_owner, weights=along, minlength=len(chosen)) * fpu


def _segments(geoms: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every straight segment of the lines in ``geoms``: the index of its geometry, its start and end points."""
    parts, owner = shapely.get_parts(np.asarray(geoms, dtype=object), return_index=True)
    lines = shapely.get_type_id(parts) == 1
    parts, owner = parts[lines], owner[lines]
    coords, part = shapely.get_coordinates(parts, return_index=True)
    same = part[1:] == part[:-1]
    return owner[part[:-1][same]], coords[:-1][same], coords[1:][same]


def _cost(chosen, flows, frontage, drawn_ft, connecting, diameter, n_manholes, profile):
    design = profile.design
    table = {float(k): float(v) for k, v in design.cost_per_ft.value.items()}
    nearest = min(table, key=lambda d: (abs(d - diameter), d)) if table else None
    per_ft = table.get(float(diameter), table[nearest] if table else 0.0)
    run_ft = connecting["length_ft"] if connecting else 0.0
    benefiting = chosen["benefits"].to_numpy()
    items = {
        "main": round(drawn_ft * per_ft, 2),
        "connecting_main": round(run_ft * per_ft, 2),
        "manholes": round(n_manholes * design.cost_per_manhole.value, 2),
        "laterals": round(int(benefiting.sum()) * design.cost_per_lateral.value, 2),
    }
    total_cents = round(sum(items.values()) * 100)
    minimum = round(design.min_share_per_parcel.value * 100)
    gpd_unit = float(profile.network.gallons_per_day_per_unit.value)
    units = flows["units"].to_numpy(float)
    equivalent = np.where(np.isfinite(units), units, flows["flow_gpd"].to_numpy(float) / gpd_unit)
    ids = chosen["parcel_id"].astype(str).to_numpy()[benefiting]
    shares = {}
    for method, weights in (
        ("by_frontage", np.asarray(frontage)[benefiting]),
        ("by_parcel", np.ones(int(benefiting.sum()))),
        ("by_unit", equivalent[benefiting]),
    ):
        cents = allocate_cents(total_cents, weights, minimum_cents=minimum)
        shares[method] = {pid: int(c) / 100 for pid, c in zip(ids, cents, strict=True)}
    cost = {
        "total": total_cents / 100,
        **items,
        "cost_per_ft": per_ft,
        "cost_per_ft_diameter_in": float(diameter) if float(diameter) in table else nearest,
        "cost_per_manhole": design.cost_per_manhole.value,
        "cost_per_lateral": design.cost_per_lateral.value,
        "new_manholes": n_manholes,
        "laterals_count": int(benefiting.sum()),
        "min_share_per_parcel": design.min_share_per_parcel.value,
        "section": design.petition_majority.citation if design.petition_majority.value else None,
        **shares,
    }
    return cost, shares


def _parcel_rows(chosen, flows, frontage, shares) -> list[dict]:
    """One row per parcel reached: who, what, how much flow, and its share by each method."""
    out = []
    frame = pd.DataFrame(
        {
            "parcel_id": chosen["parcel_id"].astype(str).to_numpy(),
            "owner_name": chosen["owner_name"].astype("string").fillna("").to_numpy(object)
            if "owner_name" in chosen
            else "",
            "site_address": chosen["site_address"].astype("string").fillna("").to_numpy(object)
            if "site_address" in chosen
            else "",
            "property_class": chosen["property_class"].astype("string").fillna("").to_numpy(object)
            if "property_class" in chosen
            else "",
            "category": chosen["category"].to_numpy(object),
            "benefits": chosen["benefits"].to_numpy(bool),
            "private_system": ~chosen["connected_flag"].astype(bool).to_numpy(),
            "distance_ft": chosen["distance_ft"].to_numpy(float),
            "frontage_ft": np.round(np.asarray(frontage, dtype=float), 1),
            "units": flows["units"].to_numpy(float),
            "flow_gpd": flows["flow_gpd"].to_numpy(float),
            "basis": flows["basis"].to_numpy(object),
        }
    )
    for row in frame.to_dict("records"):  # one dict per parcel reached: tens, for the report
        pid = row["parcel_id"]
        units, flow = row["units"], row["flow_gpd"]
        out.append(
            row
            | {
                "private_system": bool(row["private_system"]) and row["category"] == "newly mandated",
                "benefits": bool(row["benefits"]),
                "units": None if not np.isfinite(units) else float(units),
                "units_text": "unknown" if not np.isfinite(units) else f"{units:g}",
                "flow_gpd": None if not np.isfinite(flow) else round(float(flow)),
                "distance_ft": None if not np.isfinite(row["distance_ft"]) else round(float(row["distance_ft"]), 1),
                **{method: shares[method].get(pid) for method in ("by_frontage", "by_parcel", "by_unit")},
            }
        )
    return out


# -- connection and downstream -------------------------------------------------------------------------------------


class _Present:
    """Present peak flow in each existing main, computed once per main: the parcels upstream that are connected or
    already required to connect (mandated before the plan, their notices' days running), as a sewershed and
    ``duties`` count them; the plan had counted the connected alone, and a main a mandated mill will fill had room."""

    def __init__(self, net: SewerNetwork | None, before: gpd.GeoDataFrame, profile: Profile):
        self.net, self.profile = net, profile
        self.cache: dict[int, float] = {}
        self.top: dict[int, tuple[int, float] | None] = {}  # each main's largest present flow: (row, share of all)
        # Without a connected column (nor a list of connected parcels) no parcel is known to drain anywhere today:
        # the present flow counts the parcels required to connect alone, and the connected others are not known.
        self.recorded = "connected" in before.columns
        if net is None or len(net.main_id) == 0:
            return
        connected = before[np.isin(before["status"].to_numpy(), ("connected", "mandated"))]
        self.edges = connect_parcels(net, connected)["edge"].to_numpy() if len(connected) else np.zeros(0, int)
        flows = parcel_flows(connected, profile)  # the metered flow_gpd first (analysis.flows), then by class
        self.flow = np.nan_to_num(flows["flow_gpd"].to_numpy(float))
        self.unknown = ~np.isfinite(flows["flow_gpd"].to_numpy(float))
        self.ids = connected["parcel_id"].astype(str).to_numpy(object) if "parcel_id" in connected else None
        self.basis = flows["basis"].to_numpy(object)

    def largest(self, e: int) -> dict | None:
        """The parcel sending the most of main ``e``'s present flow: its ID, average flow and what it is read from
        (a board asks whose flow fills a main: "present peak 69,000 gpd" did not say 64,000 of it was one mill's)."""
        self.peak_gpd(e)
        found = self.top.get(e)
        if found is None or self.ids is None:
            return None
        at, share = found
        return {
            "parcel_id": self.ids[at],
            "flow_gpd": round(float(self.flow[at])),
            "basis": str(self.basis[at]),
            "share_pct": round(100 * share),
        }

    def peak_gpd(self, e: int) -> tuple[float, int]:
        """Present peak flow in main ``e`` and how many parcels draining through it have an unknown flow."""
        if e not in self.cache:
            net = self.net
            shed = sewershed(net, int(net.u[e]), None, None, profile=self.profile)
            upstream = np.zeros(net.n_nodes, dtype=bool)
            upstream[shed.nodes] = True
            ok = self.edges >= 0
            through = np.zeros(len(self.edges), dtype=bool)
            through[ok] = upstream[net.v[self.edges[ok]]] | (self.edges[ok] == e)
            peak = float(self.flow[through].sum()) * self.profile.design.peaking_factor.value
            self.cache[e] = (peak, int(self.unknown[through].sum()))
            rows = np.flatnonzero(through)
            total = float(self.flow[rows].sum())
            at = int(rows[np.argmax(self.flow[rows])]) if total > 0 else None
            self.top[e] = None if at is None else (at, float(self.flow[at]) / total)
        return self.cache[e]

    def capacity(self, node: int | None, first_main: int | None, added_peak: float) -> dict:
        """The path from ``node`` (or from ``first_main``) to the plant, each main's capacity and the verdict."""
        net, design = self.net, self.profile.design
        start = int(net.v[first_main]) if first_main is not None else node
        trace = trace_down(net, start, first_main=first_main)
        index = {str(m): i for i, m in enumerate(net.main_id)}
        rows, exceeded, unknown = [], [], []
        pipe = net.is_pipe()
        for mid in trace.mains:  # the mains on one downstream path
            e = index[mid]
            length = float(net.length_ft[e])
            us, ds = float(net.us_invert_ft[e]), float(net.ds_invert_ft[e])
            slope = (us - ds) / length if length > 0 else np.nan
            slope_source, problem, slope_note = "inverts", None, None
            forced = pipe[e] and net.sewer_type[e] == "force"
            if forced or not pipe[e]:
                # Pumped full under pressure (or a model's pump, weir, orifice): no gravity slope to give. Its row
                # showed the profile's default slope for a gravity main, "0.0040 (default)", as if it had one.
                what = "force main, pumped under pressure" if forced else str(net.link_kind[e])
                slope, slope_source = np.nan, "not applicable"
                slope_note = f"a {what}: no gravity slope"
            elif np.isfinite(slope) and slope <= 0:
                # Inverts that do not fall are known, not missing: the default slope (for unknown inverts) hid a
                # main that `network check` reports as laid uphill, and its capacity read as met.
                problem = (
                    f"runs uphill by its inverts (downstream {ds:.2f} ft above upstream {us:.2f} ft): check them"
                    if ds > us + 1e-3
                    else f"is laid level by its inverts ({us:.2f} ft at both ends): check them"
                )
            elif not np.isfinite(slope):
                slope, slope_source = design.default_slope_ft_per_ft.value, "profile default"
            # Manning's equation is for gravity pipes: a model's pump, weir or orifice has a capacity of its own.
            diameter = net.diameter_in[e] if pipe[e] else np.nan
            material = str(net.material[e] or "").strip().lower()
            n = design.manning_n_by_material.value.get(material, design.manning_n.value)
            sized = np.isfinite(diameter) and diameter > 0
            # A model's box, egg or twin pipe ("2 x 12 in"): its diameter is the narrowest of one barrel, for the
            # size rules; a full round pipe of that size is not its capacity (less for a box, half for a twin).
            shaped = net.size_said[e] if net.size_said is not None and pipe[e] else None
            implausible = sized and diameter > LARGEST_PIPE_IN
            round_pipe = sized and problem is None and not shaped and not forced and not implausible
            capacity = manning_capacity_gpd(diameter, slope, n) if round_pipe else None
            if not pipe[e]:
                problem = f"is a {net.link_kind[e]}, whose capacity Manning's equation does not give: the engineer's"
            elif forced:
                # Pumped full under pressure: what it carries is what the pumps feeding it deliver, not a gravity
                # pipe's full flow at its slope (F1, 4 in, read as 77,794 gpd and "meets": a tester).
                problem = (
                    f"is a force main, whose capacity is that of the pump station feeding it (at "
                    f"{net.node_id[net.u[e]]}), not Manning's gravity equation's: the engineer's"
                )
            elif not sized:
                problem = problem or NO_DIAMETER
            elif implausible:  # a model's dummy link to its outfall (Bellinge's 590.55 in) read as 199 billion gpd
                problem = problem or (
                    f"is given {diameter:g} in across, larger than any sewer pipe made ({LARGEST_PIPE_IN:g} in): "
                    "diameter implausible: correct it in the mains layer or the model"
                )
            elif shaped:
                problem = problem or (
                    f"is {shaped}, not one round pipe, whose capacity the full-pipe equation for a round pipe does "
                    "not give: the engineer's"
                )
            present, present_unknown = self.peak_gpd(e)
            if capacity is None:
                verdict = UNKNOWN
                unknown.append(mid)
            elif present + added_peak <= capacity:
                verdict = MEETS
            else:
                verdict = FAILS
                exceeded.append(mid)
            rows.append(
                {
                    "main_id": mid,
                    "diameter_in": None if not np.isfinite(diameter) else float(diameter),
                    "slope": round(float(slope), 5) if np.isfinite(slope) else None,
                    "slope_source": slope_source,
                    "slope_note": slope_note,
                    "problem": problem,
                    "manning_n": n,
                    "capacity_gpd": None if capacity is None else round(capacity),
                    "present_peak_gpd": round(present),
                    "present_flow_unknown": present_unknown,
                    "largest_present": self.largest(e),
                    "added_peak_gpd": round(added_peak),
                    "verdict": verdict,
                    "capacity_ok": verdict == MEETS,
                }
            )
        if trace.problem:
            verdict = UNKNOWN
        elif exceeded:
            verdict = FAILS
        elif unknown:
            verdict = UNKNOWN
        else:
            verdict = MEETS
        return {
            "trace": trace,
            "mains": rows,
            "verdict": verdict,
            "exceeded": exceeded,
            "unknown": unknown,
        }


def _connect(line, net, profile, fpu, present: _Present, added_peak: float) -> _Connection:
    """Where the extension joins the public sewer; see the module docstring."""
    if net is None or net.n_nodes == 0 or len(net.main_id) == 0:
        return _Connection("none", None, None, None, 0, None, float("nan"))
    snap = profile.network.snap_tolerance_ft.value / fpu
    met = _end_meets(line, net, snap)
    if met is not None:
        return _Connection(
            met.kind,
            met.label,
            met.node,
            met.main,
            met.end,
            met.xy,
            met.gap * fpu if met.kind == "manhole" else 0.0,
            tied=met.tied,
            lower_invert=met.lower_invert,
            pressurised=_pressurised(met, net),
        )
    # A connecting run to the nearest manhole whose path to the plant has room for the added flow; else to the
    # nearest. Only here is every manhole measured: no end meets the sewer, and the nearest may lie anywhere.
    ends = shapely.points([line.coords[0][:2], line.coords[-1][:2]])
    manholes = _sewer_manholes(net)
    if not len(manholes):
        return _Connection("none", None, None, None, 0, None, float("nan"))
    d_mh = np.stack([shapely.distance(e, shapely.points(net.node_xy[manholes])) for e in ends])  # 2 x manholes
    order = _nearest_first(d_mh, net.node_id[manholes], CANDIDATE_MANHOLES * 2, _north_first(line))
    tried: set[int] = set()
    first = None
    for end, k in order:
        node = int(manholes[k])
        if node in tried:
            continue
        tried.add(node)
        found = present.capacity(node, None, added_peak)
        conn = _Connection(
            "run",
            str(net.node_id[node]),
            node,
            None,
            0 if end == 0 else -1,
            tuple(float(v) for v in net.node_xy[node]),
            float(d_mh[end, k]) * fpu,
            found,
        )
        first = first or conn
        if found["verdict"] == MEETS:
            break
        if len(tried) >= CANDIDATE_MANHOLES:
            break
    chosen = conn if conn.capacity["verdict"] == MEETS else first
    # Others exactly as near, that would have served as well (with room, where the one taken has it): a tie, which
    # the lower ID decided.
    same = {
        int(manholes[k])
        for end, k in order
        if np.isclose(d_mh[end, k] * fpu, chosen.gap_ft, rtol=1e-9, atol=1e-9) and int(manholes[k]) != chosen.node
    }
    if chosen.capacity["verdict"] == MEETS:
        same = {n for n in same if present.capacity(n, None, added_peak)["verdict"] == MEETS}
    chosen.tied = sorted((str(net.node_id[n]) for n in same), key=id_key)
    return chosen


def id_key(label) -> tuple:
    """How IDs sort when one is chosen over another equally near: by their numbers as numbers (MH-9 before MH-10),
    so the choice follows the IDs, never the order of the rows in the town's layers."""
    return tuple((0, int(t), "") if t.isdigit() else (1, 0, t) for t in re.split(r"(\d+)", str(label)) if t)


def _nearest_first(d: np.ndarray, ids: np.ndarray, count: int, north_first) -> list[tuple[int, int]]:
    """The ``count`` nearest (end, position) pairs of a 2 x n distance array, nearest first; equally near ones by
    ID (``id_key``), then the end lying further north (then east) first (the start of the line would otherwise win
    a tie, and a main drawn the other way connect elsewhere). Every pair as near as the last one taken is kept."""
    flat = d.ravel()
    if len(flat) > count:
        cut = np.partition(flat, count - 1)[count - 1]
        picked = np.flatnonzero(flat <= cut)
    else:
        picked = np.arange(len(flat))
    pairs = [divmod(int(f), d.shape[1]) for f in picked]
    return sorted(pairs, key=lambda p: (float(d[p]), id_key(ids[p[1]]), north_first[p[0]]))


@dataclass
class _Met:
    """Where an end of the drawn main meets the sewer (``_end_meets``)."""

    kind: str  # "manhole": an existing manhole of the sewer; "main": on a main, or a junction of mains
    label: str
    node: int | None
    main: int | None
    end: int  # 0 or -1
    xy: tuple[float, float]
    gap: float  # from the end to it, in the line's units
    tied: list[str] = field(default_factory=list)  # others exactly as near, passed over for a higher ID
    lower_invert: bool = False  # of the manholes its ends meet, taken for its lower invert, not the nearest or its ID


def _sewer_manholes(net) -> np.ndarray:
    """Node positions of the sewer's manholes: those a main enters or leaves (a storm structure, or the manhole of
    an abandoned main, in the manholes layer is not the sewer); every node of the sewer where none is a manhole."""
    on_main = np.bincount(np.r_[net.u, net.v], minlength=net.n_nodes) > 0
    return np.flatnonzero((net.node_is_manhole if net.node_is_manhole.any() else True) & on_main)


# Where gravity sewers end by design: a pump station's wet well takes a gravity main's flow, as a manhole does.
_PUMPED_FROM = ("pump_station", "storage")


def _structure_of(net, node: int | None) -> str:
    """What the node is in the manholes layer ("manhole", "pump_station" ...), "" where not known."""
    if net is None or node is None or net.node_kind is None:
        return ""
    return str(net.node_kind[node] or "")


def _pressurised(met: _Met, net) -> str:
    """The force main (or a model's pump, weir ...) an end of the drawn main meets, where it meets no gravity sewer;
    "" otherwise. A gravity main cannot discharge into a pressurised main: it was given a new manhole on force main
    F1, and its gravity check run from an invert read along the pumped main (a tester). A manhole, or a pump
    station's wet well, takes its flow."""
    gravity = net.is_gravity()
    if met.main is not None:
        return "" if gravity[met.main] else f"{link_kind_words(net, met.main)} {net.main_id[met.main]}"
    if met.kind == "manhole" or met.node is None:
        return ""
    kind = net.node_kind[met.node] if net.node_kind is not None else ""
    at = np.flatnonzero((net.u == met.node) | (net.v == met.node))
    if kind in _PUMPED_FROM or gravity[at].any() or not len(at):
        return ""
    return f"{link_kind_words(net, int(at[0]))} {net.main_id[at[0]]}"


def _end_meets(line, net, snap: float) -> _Met | None:
    """Where an end of ``line`` meets the sewer within ``snap``, or None: the one test of ``_connect`` and
    ``_laid_from_manhole``.

    Only the mains near an end are looked at (the mains' tree), and the nodes they run between: a node of the sewer
    lies on a main, so no other node can be within ``snap``. Of those, an existing manhole first, else a junction of
    mains that is not a manhole, else the main itself (where a new manhole is built on it); the nearest, and of ones
    exactly as near, the lower ID (``id_key``), whichever end and whatever order the layers list them in."""
    if net is None or net.n_nodes == 0 or len(net.main_id) == 0:
        return None
    xy = np.array([line.coords[0][:2], line.coords[-1][:2]], dtype=float)
    ends = shapely.points(xy)
    at_end, mains = net.main_tree.query(ends, predicate="dwithin", distance=snap)
    if not len(mains):
        return None
    end_pos = np.r_[at_end, at_end]
    nodes = np.r_[net.u[mains], net.v[mains]]
    gap = shapely.distance(ends[end_pos], shapely.points(net.node_xy[nodes]))
    sewer = net.node_is_manhole[nodes] if net.node_is_manhole.any() else np.ones(len(nodes), dtype=bool)  # on a main
    if net.node_kind is not None:  # a pump station's wet well takes the flow as a manhole does: no new manhole there
        sewer |= np.isin(np.asarray(net.node_kind, dtype=object)[nodes], _PUMPED_FROM)
    north = _north_first(line)
    for kind, keep in (("manhole", sewer & (gap <= snap)), ("main", ~sewer & (gap <= snap))):
        if keep.any():
            inverts = None
            if kind == "manhole":  # a main drawn between two manholes drains to the lower, where inverts say which
                inverts = np.array([(node_invert_ft(net, int(n)) or (np.nan, ""))[0] for n in nodes[keep]])
            return _nearest_met(
                kind,
                gap[keep],
                north[end_pos[keep]],
                end_pos[keep],
                nodes[keep],
                net.node_id,
                net.node_xy,
                is_node=True,
                inverts=inverts,
            )
    gravity = net.is_gravity()[mains]
    if gravity.any():  # a gravity main within reach is where a gravity main can join; a force main beside it is not
        at_end, mains = at_end[gravity], mains[gravity]
    gap = shapely.distance(ends[at_end], net.geometry[mains])
    met = _nearest_met("main", gap, north[at_end], at_end, mains, net.main_id, None, is_node=False)
    on = shapely.line_interpolate_point(
        net.geometry[met.main], shapely.line_locate_point(net.geometry[met.main], ends[0 if met.end == 0 else 1])
    )
    met.xy = (on.x, on.y)
    return met


def _north_first(line) -> np.ndarray:
    """0 for the end of ``line`` lying further north (then east), 1 for the other: the order of its two ends where
    they tie, so that the answer does not turn on which way the line was drawn."""
    (x0, y0), (x1, y1) = line.coords[0][:2], line.coords[-1][:2]
    return np.array([0, 1]) if (y0, x0) >= (y1, x1) else np.array([1, 0])


def _nearest_met(kind, gap, north, end_pos, which, ids, node_xy, *, is_node: bool, inverts=None) -> _Met:
    """The nearest of the candidates (an end's position 0 or 1, and a node's or main's position); of ones exactly as
    near, the lower ID, then the end further north (``_north_first``); the others exactly as near are ``tied``.

    Of the manholes (all within the tolerance of an end) whose ``inverts`` are all known and not all the same (a
    main drawn from one existing manhole to another), the lowest: the main drains down to it, and the others are
    ``tied``, whichever is the nearest, so that the sentence naming them does not turn on a hair's difference.
    Taken by ID, a main drawn between MH-9 (invert 421.58 ft) and MH-45 (419.18 ft) connected at MH-9 and failed the
    gravity check at any slope (a tester)."""
    rows = sorted(range(len(gap)), key=lambda i: (float(gap[i]), id_key(ids[which[i]]), int(north[i])))
    best = rows[0]
    close = np.isclose(gap, gap[best], rtol=1e-9, atol=1e-9)  # "exactly": to within rounding
    lower_invert = False
    if inverts is not None:
        # Every candidate is within the tolerance of an end: a main drawn from one manhole to another meets both,
        # and drains to the lower, however near each end was drawn (read back from degrees, two ends exactly on
        # their manholes lie a hair apart, and the nearer, uphill, was taken).
        known = np.asarray(inverts, dtype=float)[rows]
        if len({str(ids[which[i]]) for i in rows}) > 1 and np.isfinite(known).all() and np.ptp(known) > 1e-6:
            # ``rows`` is nearest first, then by ID: of two as low, that one. The others the main meets are named in
            # the connection's sentence also where the lowest is the nearest: said only where it was not, the same
            # main said "meets existing manhole MH-9 too" drawn in feet (both ends exactly on their manholes, MH-9
            # first by ID) and not read back from degrees (MH-45's end a hair nearer than MH-9's).
            close = np.zeros(len(gap), dtype=bool)
            close[rows] = True
            lower_invert, best = True, rows[int(np.argmin(known))]
    tied = sorted({str(ids[which[i]]) for i in np.flatnonzero(close)} - {str(ids[which[best]])}, key=id_key)
    k = int(which[best])
    return _Met(
        kind,
        str(ids[k]),
        k if is_node else None,
        None if is_node else k,
        0 if end_pos[best] == 0 else -1,
        tuple(float(v) for v in node_xy[k]) if is_node else (float("nan"), float("nan")),
        float(gap[best]),
        tied,
        lower_invert,
    )


def _laid_from_manhole(line, net, snap: float, fpu: float):
    """The drawn main from the existing manhole it passes through, when neither of its ends meets the sewer.

    A main drawn through a manhole is joined to it there: a connecting main from an end back to that manhole would
    lie on the drawn main and be counted twice (a run of streets that carries on past the sewer, as the sample
    village's Hancock Rd does 180 ft past MH-37). Of the manholes within ``snap`` of the line that a main of the sewer
    meets, the one nearest an end (along the line) is taken; the drawn main is laid from it over the longer part, and
    the part beyond it is not laid: it would be a second main draining into that manhole, to plan on its own. A
    manhole on no main is passed by, as it is not the sewer; the main is joined as it would be without it. A manhole
    at the very middle leaves two parts equally long: the one ending further north (then east) is laid, so the answer
    does not turn on which way the line was drawn, and ``middle`` says so.

    An end drawn over an existing main to a manhole of the sewer meets the sewer at that manhole (``_drawn_along``),
    the feet over the main not laid, and so does the other end where it too is drawn over one
    (``_upper_end_along``): drawn over the sewer at both ends, the main is laid between the two manholes, as a
    careful engineer means it. Returns the line to lay and the parts not laid (the lower end's, or the middle's,
    first; none when the line is laid as drawn)."""
    if net is None or net.n_nodes == 0 or not net.node_is_manhole.any():
        return line, []
    met = _end_meets(line, net, snap)
    # A manhole no main enters or leaves (a storm structure in the manholes layer, one of an abandoned main) is not
    # the sewer: joined there, the main was cut short at a manhole its flow could leave by no pipe.
    on, at = _sewer_manholes_on(line, net, snap)
    along = None
    if met is not None:  # an end meets the sewer: it connects there (``_connect``), unless drawn over a main to one
        along = _drawn_along(line, met, net, snap, on, at)
        if along is None:
            laid, upper = _upper_end_along(line, met, net, snap, on, at, fpu)
            return laid, [upper] if upper else []
        on, at = on[[along[0]]], at[[along[0]]]
    if not len(on):
        return line, []
    from_end = np.minimum(at, line.length - at)
    # of two as near an end (one near each end, or two beside the line), the lower ID: not the layers' row order
    near = np.flatnonzero(np.isclose(from_end, from_end.min(), rtol=1e-9, atol=1e-9))
    near = sorted(near, key=lambda i: id_key(net.node_id[on[i]]))
    k = int(near[0])
    tied = [str(net.node_id[on[i]]) for i in near[1:]]
    where = float(at[k])
    first, last = line.coords[0][:2], line.coords[-1][:2]
    # At the middle neither part is the longer: drawn the other way, the same line was laid the other way.
    middle = abs(where - line.length / 2) <= 1e-9 * line.length
    # lay from the manhole to the end when the start is the nearer end, or at the middle when the end lies further
    # north (then east)
    to_end = (last[1], last[0]) >= (first[1], first[0]) if middle else where < line.length / 2
    if along is not None:  # laid from the manhole away from the main it was drawn over, however long each part
        middle, to_end = False, met.end == 0
    if to_end:
        laid, beyond = shapely.ops.substring(line, where, line.length), shapely.ops.substring(line, 0, where)
        far = beyond.coords[0]
    else:
        laid = shapely.ops.substring(line, where, 0)  # from the manhole back to the start: flow runs to it
        beyond = shapely.ops.substring(line, where, line.length)
        far = beyond.coords[-1]
    # a cut at a vertex repeats it (to within rounding)
    laid, cut = _cut(laid, beyond, far, int(on[k]), net, fpu, middle=middle, tied=tied, along=along)
    if along is not None and met.kind == "manhole":  # drawn from a manhole over mains: the sentences say from which
        cut["from_manhole"] = met.label
    if along is None:
        return laid, [cut]
    # Drawn over the sewer at its upper end too: not laid either. Laid, the 200 ft drawn on over M-5 past B were
    # costed, leak-tested and given a new manhole on M-5, where drawn over M-5 alone they were not: a plan carried
    # one part not laid. The main as laid starts at the manhole its lower end was drawn over a main to.
    point = laid.coords[0][:2]
    start = _Met("manhole", cut["beyond_manhole"], None, None, 0, (float(point[0]), float(point[1])), 0.0)
    laid, upper = _upper_end_along(laid, start, net, snap, *_sewer_manholes_on(laid, net, snap), fpu)
    return laid, [cut, upper] if upper else [cut]


def _cut(laid, beyond, far, node: int, net, fpu: float, *, middle=False, tied=(), along=None):
    """The main as laid and a part of the drawn main not laid (``PlanResult.not_laid_parts``), cut at ``node``."""
    laid, beyond = (shapely.remove_repeated_points(g, tolerance=1e-3) for g in (laid, beyond))
    x, y = (float(v) for v in net.node_xy[node])
    return laid, {
        "beyond_manhole": str(net.node_id[node]),
        "length_ft": round(float(beyond.length) * fpu, 1),
        # as every sentence says it: a few feet past the manhole to the tenth, not "2 ft" for 1.5 beside "within 1 ft"
        "length_words": f"{past:,.0f} ft" if (past := beyond.length * fpu) >= 10 else f"{past:.1f} ft",
        "direction": compass(far[0] - x, far[1] - y),
        "coords": [[float(c[0]), float(c[1])] for c in beyond.coords],
        "middle": middle,
        "tied": list(tied),  # manholes of higher IDs exactly as near an end as the one it joins
        "along": along[1] if along is not None else None,  # the existing main(s) it was drawn over, else None
    }


def _upper_end_along(line, met: _Met, net, snap: float, on: np.ndarray, at: np.ndarray, fpu: float):
    """The drawn main whose one end meets the sewer (``met``: it connects there) and whose other, upper, end lies on
    an existing main, drawn over it (within ``snap`` all the way) from a manhole of the sewer: laid from its
    connection to that manhole, the feet over the existing main not laid, as at a lower end drawn so
    (``_drawn_along``). Laid as drawn, those feet of a main already there were costed and tested a second time, a new
    manhole went on it at the end, and only the crossings check said "runs along". The drawn main otherwise.

    A main lying over existing mains all the way from where it connects has nothing left to lay: it is laid as
    drawn, and the crossings check says what it runs along."""
    upper = -1 if met.end == 0 else 0
    point = line.coords[upper][:2]
    far = _end_meets(shapely.LineString([point, point]), net, snap)
    if far is None or far.kind != "main" or far.node is not None:
        return line, None
    far.end = upper
    along = _drawn_along(line, far, net, snap, on, at)
    if along is None:
        return line, None
    where = float(at[along[0]])
    if (where if upper == -1 else line.length - where) <= snap:  # from its connection: nothing of it is new
        return line, None
    if upper == -1:  # as drawn, from its lower end up to the manhole
        laid, beyond = shapely.ops.substring(line, 0, where), shapely.ops.substring(line, where, line.length)
        far_xy = beyond.coords[-1]
    else:
        laid, beyond = shapely.ops.substring(line, where, line.length), shapely.ops.substring(line, 0, where)
        far_xy = beyond.coords[0]
    return _cut(laid, beyond, far_xy, int(on[along[0]]), net, fpu, along=along)


def _onto_manhole(line, not_laid: list[dict], net, snap: float, fpu: float, *, near: float = 0.0):
    """The main as laid with the end that connects at an existing manhole (within ``snap``) moved onto it, and the
    part not laid that was cut at that manhole ending there too.

    A pipe runs into the manhole it joins, and is measured from it: a main drawn to end half a foot short of MH-45
    was planned 1,294.5 ft long, costed and tested so, with MH-45 at station 0 and the last manhole at 1,294.5 ft
    though it lies 1,295 ft up the main from MH-45; on the map the main stopped short of the manhole. Only the end
    it connects by is moved (``_end_meets``' choice, so which end connects is unchanged).

    An end on an existing main within ``near`` of a manhole of the sewer at an end of that main is moved onto that
    manhole too (``network.connect_at_manhole_within_ft``): drawn 3 ft east of MH-27 on M-195, a new manhole was built
    and charged 3 ft from MH-27, and MH-27 was never named (a tester). Returns the line, the parts not laid, and the
    manhole it was moved onto with those exactly as near it before (a tie the check says) and where the end lay when
    it lay on a main (``_Connection.near_miss``), or None."""
    met = _end_meets(line, net, snap) if net is not None and net.n_nodes else None
    near_miss = None
    if met is not None and met.kind == "main" and near > snap:
        met, near_miss = _manhole_near(line, met, net, snap, near, fpu)
    if met is None or met.kind != "manhole" or met.gap == 0:
        return line, not_laid, None
    coords = [tuple(c[:2]) for c in line.coords]
    was = coords[met.end]
    coords[met.end] = met.xy
    moved = shapely.remove_repeated_points(shapely.LineString(coords), tolerance=1e-3)
    if moved.length == 0 or not moved.is_simple or moved.is_closed:  # a main shorter than the tolerance: as drawn
        return line, not_laid, None
    not_laid = [
        _ending_at(beyond, was, met, fpu) if beyond["beyond_manhole"] == met.label else beyond for beyond in not_laid
    ]
    # the manholes exactly as near the end before it was moved (``_nearest_met``'s tie), for the connection to say
    return moved, not_laid, (met.label, met.tied, met.lower_invert, near_miss)


def _manhole_near(line, met: _Met, net, snap: float, near: float, fpu: float) -> tuple[_Met, dict | None]:
    """The manhole of the sewer nearest the end ``met`` found on a main (or at a junction), among the ends of the
    mains within ``snap`` of it, where it lies within ``near``: as a manhole the end meets, with where the end lay;
    else ``met`` as it was. Of two as near, the lower ID."""
    point = shapely.Point(line.coords[met.end][:2])
    mains = net.main_tree.query(point, predicate="dwithin", distance=snap)
    nodes = np.unique(np.r_[net.u[mains], net.v[mains]])
    nodes = nodes[net.node_is_manhole[nodes]]
    gap = shapely.distance(point, shapely.points(net.node_xy[nodes])) if len(nodes) else np.zeros(0)
    keep = gap <= near
    if not keep.any():
        return met, None
    k = min(np.flatnonzero(keep), key=lambda i: (float(gap[i]), id_key(net.node_id[nodes[i]])))
    node = int(nodes[k])
    on = f"existing main {met.label}" if met.main is not None else f"{met.label}, where mains meet"
    found = _Met(
        "manhole",
        str(net.node_id[node]),
        node,
        None,
        met.end,
        tuple(float(v) for v in net.node_xy[node]),
        float(gap[k]),
    )
    return found, {"on": on, "gap_ft": round(float(gap[k]) * fpu, 1)}


def _ending_at(beyond: dict, was, met: _Met, fpu: float) -> dict:
    """The part not laid cut at the manhole the main's end was moved onto (``_onto_manhole``), ending there too."""
    part = [list(c) for c in beyond["coords"]]
    nearer = 0 if math.dist(part[0], was) <= math.dist(part[-1], was) else -1
    part[nearer] = list(met.xy)
    feet = shapely.LineString(part).length * fpu
    return beyond | {
        "coords": part,
        "length_ft": round(feet, 1),
        "length_words": f"{feet:,.0f} ft" if feet >= 10 else f"{feet:.1f} ft",
    }


def not_laid_parts(plan: dict) -> list[dict]:
    """Every part of the drawn main not laid, from a plan's document: its ``not_laid_parts``, or, in a document
    written when a plan carried one part only (a saved scenario, an older ``--json``), its ``not_laid``.

    Examples
    --------
    >>> not_laid_parts({"not_laid": {"beyond_manhole": "A"}})
    [{'beyond_manhole': 'A'}]
    >>> not_laid_parts({"not_laid": None}), len(not_laid_parts({"not_laid_parts": [{}, {}]}))
    ([], 2)
    """
    if "not_laid_parts" in plan:
        return list(plan["not_laid_parts"] or [])
    return [plan["not_laid"]] if plan.get("not_laid") else []


def as_drawn(laid, not_laid: dict | list[dict] | None):
    """The main as drawn, from the main as laid and what was not laid (``PlanResult.not_laid_parts``, or one part):
    evaluated again it is the same plan, and says again what is not laid; the main as laid alone is a plan that no
    longer knows of it. Each part is joined to the end of the main it meets.

    Examples
    --------
    >>> from shapely.geometry import LineString
    >>> as_drawn(LineString([(0, 0), (900, 0)]), {"coords": [[0, -180], [0, 0]]}).wkt
    'LINESTRING (0 -180, 0 0, 900 0)'
    >>> as_drawn(LineString([(0, 0), (700, 0)]), {"coords": [[700, 0], [900, 0]]}).wkt  # an upper end's
    'LINESTRING (0 0, 700 0, 900 0)'
    >>> both = [{"coords": [[-100, 0], [0, 0]]}, {"coords": [[700, 0], [900, 0]]}]  # drawn over mains at both ends
    >>> as_drawn(LineString([(0, 0), (700, 0)]), both).wkt
    'LINESTRING (-100 0, 0 0, 700 0, 900 0)'
    """
    parts = [not_laid] if isinstance(not_laid, dict) else list(not_laid or [])
    if not parts:
        return laid
    own = [tuple(c[:2]) for c in laid.coords]
    before, after = [], []
    for beyond in parts:
        part = [tuple(c[:2]) for c in beyond["coords"]]
        _, at_end, tip = min(
            (shapely.Point(own[m]).distance(shapely.Point(part[p])), m, p) for m in (0, -1) for p in (0, -1)
        )
        if at_end == 0:  # drawn up to the manhole the main as laid starts at
            before = (part if tip == -1 else part[::-1])[:-1]
        else:  # drawn on from the manhole the main as laid ends at (an upper end drawn over an existing main)
            after = (part if tip == 0 else part[::-1])[1:]
    return shapely.LineString([*before, *own, *after])


def _drawn_along(line, met: _Met, net, snap: float, on: np.ndarray, at: np.ndarray) -> tuple[int, str] | None:
    """Where an end of ``line`` lies on an existing main (not at a manhole) and the line is drawn from it over
    existing mains (within ``snap`` all the way) to a manhole of the sewer: that manhole's position in ``on`` and
    the mains' IDs; else None.

    Drawn so, the main's first feet are the existing main itself, by the tolerance the network reads "meets" by:
    built as drawn, a new manhole went on the existing main at the end, its feet were costed and tested a second
    time, and the crossings check saw them only when drawn exactly on it. The main meets the sewer at that manhole.
    A main drawn over a main but to no manhole (it leaves it between two) connects where its end lies."""
    if not len(on) or (met.kind == "main") != (met.node is None) or met.kind not in ("main", "manhole"):
        return None
    from_met = at if met.end == 0 else line.length - at
    ahead = np.flatnonzero(from_met > snap)
    if not len(ahead):
        return None
    ahead = ahead[np.argsort(from_met[ahead], kind="stable")]
    # From an end on a main, the nearest manhole ahead must be reached over mains (as before); from there, and from
    # an end at a manhole, the main meets the sewer at the last manhole it is drawn over mains to before leaving
    # them: drawn from MH-1 over M-1 and M-2 to MH-19 and on 220 ft, it connects at MH-19 and 220 ft are laid (the
    # 600 ft over the two mains were laid, costed and drained back up the sewer to MH-1). A manhole at the other end
    # is not one to leave from: a main over existing mains all the way is laid as drawn (``_upper_end_along``).
    reach = [int(k) for k in ahead if from_met[k] < line.length - snap]
    if met.kind == "manhole" and _over_mains(line, met.end, line.length if met.end == 0 else 0.0, net, snap):
        return None  # over existing mains from the manhole all the way: laid as drawn, the crossings check says so
    if met.kind == "main":
        reach = [int(ahead[0])] + [k for k in reach if k != int(ahead[0])]
    best = None
    for k in reach:
        mains = _over_mains(line, met.end, float(at[k]), net, snap)
        if mains is None:
            break
        best = (k, ", ".join(mains or [met.label]))
    return best


def _over_mains(line, end: int, where: float, net, snap: float) -> list[str] | None:
    """The existing mains the drawn main lies over (within ``snap`` all the way) from its end ``end`` (0 or -1) to
    ``where`` along it, by ID; None where some of that stretch lies off them."""
    stretch = shapely.ops.substring(line, 0, where) if end == 0 else shapely.ops.substring(line, where, line.length)
    near = net.main_tree.query(stretch, predicate="dwithin", distance=snap)
    if not len(near):
        return None
    over = shapely.union_all(shapely.buffer(net.geometry[near], snap * (1 + 1e-9)))
    if shapely.length(shapely.difference(stretch, over)) > 1e-6 * stretch.length:
        return None
    return sorted(
        {
            str(net.main_id[e])
            for e in near
            # more than the tolerance around an end: a main that only meets the stretch's first manhole is not one it
            # runs along (M-2 ending at MH-19, west of a stretch drawn east from it a hair off, read back from degrees)
            if shapely.length(shapely.intersection(stretch, shapely.buffer(net.geometry[e], snap))) > 2 * snap
        },
        key=id_key,
    )


def _sewer_manholes_on(line, net, snap: float) -> tuple[np.ndarray, np.ndarray]:
    """The sewer's manholes within ``snap`` of ``line`` (node positions) and their distances along it. The sewer's
    are those a main enters or leaves: a storm structure, or the manhole of an abandoned main, in the manholes layer
    is not."""
    mains = net.main_tree.query(line, predicate="dwithin", distance=snap)  # only their nodes can be near it
    sewer = np.unique(np.r_[net.u[mains], net.v[mains]])
    sewer = sewer[net.node_is_manhole[sewer]]
    points = shapely.points(net.node_xy[sewer])
    near = shapely.dwithin(points, line, snap)
    return sewer[near], shapely.line_locate_point(line, points[near])


def _passed_manholes(built, conn: _Connection, net, snap: float, fpu: float) -> tuple[list[dict], np.ndarray]:
    """The sewer's manholes the main as built runs through on its way up, other than where it connects: each is
    one of its manholes (``place_manholes``' ``through``), and the plan takes all of the main to drain to its
    connection, where at each a designer may send part of its flow down the mains that leave it. By station from
    the connection; and their distances along ``built``, in its units."""
    if net is None or net.n_nodes == 0:
        return [], np.zeros(0)
    found, at = _sewer_manholes_on(built, net, snap)
    # where it connects, and one at its upper end, are its ends' manholes (``_manholes``)
    inside = (net.node_id[found].astype(str) != str(conn.label)) & (at > snap) & (at < built.length - snap)
    found, at = found[inside], at[inside]
    order = np.argsort(at, kind="stable")
    found, at = found[order], at[order]
    rows = [{"id": str(net.node_id[k]), "station_ft": round(float(d) * fpu, 1)} for k, d in zip(found, at, strict=True)]
    return rows, at


def existing_mains_words(along: str) -> str:
    """The existing mains a part not laid was drawn over (its ``along``: IDs apart by ", "), as a sentence names them.

    Examples
    --------
    >>> existing_mains_words("M-195")
    'existing main M-195'
    >>> existing_mains_words("M-1, M-2, M-3")
    'existing mains M-1, M-2 and M-3'
    """
    mains = [m for m in str(along).split(", ") if m]
    if len(mains) < 2:
        return f"existing main {along}"
    return f"existing mains {', '.join(mains[:-1])} and {mains[-1]}"


def _is_are(along: str) -> str:
    return "are" if ", " in str(along) else "is"


def compass(dx: float, dy: float) -> str:
    """The direction of a vector in the measuring CRS's grid, in the eight words a board reads: "north-east"."""
    names = ("east", "north-east", "north", "north-west", "west", "south-west", "south", "south-east")
    return names[round(math.degrees(math.atan2(dy, dx)) / 45) % 8]


def _built_line(line, conn: _Connection):
    """The main as built, from its connection upstream: the drawn line, after the connecting run if any."""
    coords = [tuple(c[:2]) for c in line.coords]
    if conn.end == -1:
        coords = coords[::-1]
    if conn.kind == "run":
        return shapely.LineString([conn.xy, *coords])
    return shapely.LineString(coords) if conn.end == -1 else line


def planned_spacing_ft(diameter_in: float, profile: Profile) -> float | None:
    """The greatest manhole spacing for a planned main of this size; None where the profile sets none for it.

    Wappinger's 400 ft applies to mains of 15 in or less (``network.manhole_spacing_by_diameter``).
    """
    rules = profile.network
    if rules.max_manhole_spacing_ft.value is None:
        return None
    limit = spacing_limits_ft(
        np.array([float(diameter_in)]), rules.max_manhole_spacing_ft, rules.manhole_spacing_by_diameter
    )
    return float(limit[0]) if np.isfinite(limit[0]) else None


def _manholes(built, conn: _Connection, net, profile, fpu, diameter_in: float, *, through=None) -> list[dict]:
    rules = profile.network
    spacing = planned_spacing_ft(diameter_in, profile)
    bend = rules.alignment_change_deg.value if rules.manhole_at_alignment_change.value else None
    points = place_manholes(
        built,
        max_spacing=None if spacing is None else spacing / fpu,
        bend_deg=bend,
        feet_per_unit=fpu,
        through=through,
    )
    existing_xy = net.node_xy[net.node_is_manhole] if net is not None and net.n_nodes else np.zeros((0, 2))
    existing_id = net.node_id[net.node_is_manhole] if net is not None and net.n_nodes else np.zeros(0)
    snap = rules.snap_tolerance_ft.value / fpu
    out, k = [], 0
    for i, (x, y, reason) in enumerate(points):  # tens of manholes on one extension
        station = built.project(shapely.Point(x, y)) * fpu
        if i == 0 and conn.kind in ("manhole", "run"):
            out.append(_mh(conn.label, conn.xy[0], conn.xy[1], "existing manhole: the extension connects to it", True))
        elif i == 0 and conn.kind == "main":
            k += 1
            out.append(_mh(f"NEW-{k}", x, y, f"new manhole on the existing sewer at {conn.label}", False))
        else:
            near = np.hypot(existing_xy[:, 0] - x, existing_xy[:, 1] - y) if len(existing_xy) else np.zeros(0)
            if len(near) and near.min() <= snap:
                j = int(np.argmin(near))
                # where the main needs a manhole (its end, a bend, the spacing) and one is there already
                why = (
                    "existing manhole at the end of the main"
                    if i == len(points) - 1
                    else reason
                    if reason == THROUGH
                    else f"existing manhole where the main needs one ({reason})"
                )
                out.append(_mh(str(existing_id[j]), *existing_xy[j], why, True))
            else:
                k += 1
                out.append(_mh(f"NEW-{k}", x, y, reason, False))
        out[-1]["station_ft"] = round(station, 1)
    return out


def _mh(mid, x, y, reason, existing) -> dict:
    return {"id": mid, "x": round(float(x), 2), "y": round(float(y), 2), "reason": reason, "existing": existing}


def manning_capacity_gpd(diameter_in: float, slope: float, n: float) -> float:
    """Full-pipe capacity (gallons per day) of a circular pipe by Manning's equation (US units)."""
    d_ft = diameter_in / 12
    area = math.pi * d_ft**2 / 4
    radius = d_ft / 4
    return (1.486 / n) * area * radius ** (2 / 3) * math.sqrt(max(slope, 0.0)) * GPD_PER_CFS


def _downstream(conn: _Connection, net, profile, added_peak: float, *, present_recorded: bool = True) -> dict:
    """The path to the plant and its capacity. Room found with no parcel recorded as connected is room for the added
    flow alone: the verdict is not known (a real town's sewer with no connected column read as having room)."""
    sections = {
        "flow": cite(profile.network.gallons_per_day_per_unit),
        "capacity": cite(profile.design.manning_n),
    }
    unknown = {"path": [], "mains": [], "verdict": UNKNOWN, "capacity_ok": None, "exceeded": [], "outfall": None}
    unknown |= {"added_peak_gpd": round(added_peak), "sections": sections}
    if conn.pressurised:  # refused by the connection check: no flow of it reaches the sewer there
        return {
            "connects_at": conn.label,
            "connection": conn.kind,
            "connection_gap_ft": round(conn.gap_ft, 1),
            **unknown,
            "problem": f"The main cannot discharge into {conn.pressurised} (the connection check).",
        }
    if conn.kind == "none" or conn.capacity is None:
        return {
            "connects_at": None,
            "connection": "none",
            "connection_gap_ft": None,
            **unknown,
            "problem": "No existing sewer network (mains and manholes) to connect to.",
        }
    found = conn.capacity
    trace = found["trace"]
    verdict = found["verdict"]
    if verdict == MEETS and not present_recorded:
        verdict = UNKNOWN
    return {
        "connects_at": conn.label,
        "connection": conn.kind,
        "connection_gap_ft": round(conn.gap_ft, 1),
        "path": trace.path,
        "mains": found["mains"],
        "verdict": verdict,
        "capacity_ok": verdict == MEETS,
        "present_flow_recorded": present_recorded,
        "exceeded": found["exceeded"],
        "outfall": trace.outfall,
        "plant": trace.plant,
        "problem": trace.problem,
        "added_peak_gpd": round(added_peak),
        "sections": sections,
    }


# -- checks and requirements ----------------------------------------------------------------------------------------


def _design_checks(built, diameter, material, manholes, conn, profile, fpu) -> list[Check]:
    rules, design = profile.network, profile.design
    checks: list[Check] = []
    rule = rules.min_diameter_in
    if rule.value is not None:
        ok = diameter >= rule.value
        checks.append(
            Check(
                "min_diameter",
                MEETS if ok else FAILS,
                cite(rule),
                f"{diameter:g}-inch pipe {'meets' if ok else 'is below'} the {rule.value:g}-inch minimum.",
            )
        )
    rule = rules.max_manhole_spacing_ft
    spacing = planned_spacing_ft(diameter, profile)
    if spacing is not None:
        stations = sorted(m["station_ft"] for m in manholes)
        gap = float(np.max(np.diff(stations))) if len(stations) > 1 else 0.0
        ok = gap <= spacing + 0.01
        checks.append(
            Check(
                "manhole_spacing",
                MEETS if ok else FAILS,
                cite(rule),
                f"{len(manholes)} manholes, the longest run between two {gap:,.0f} ft "
                f"({'within' if ok else 'over'} the {spacing:g} ft allowed).",
            )
        )
    rule = rules.manhole_at_alignment_change
    if rule.value:
        bends = sum(1 for m in manholes if m["reason"] == "change in alignment")
        checks.append(
            Check(
                "alignment_change",
                MEETS,
                cite(rule),
                f"A manhole at each of the {bends} changes in alignment (bends sharper than "
                f"{rules.alignment_change_deg.value:g} degrees)."
                if bends
                else f"No bend sharper than {rules.alignment_change_deg.value:g} degrees: no change in alignment.",
            )
        )
    rule = design.pipe_materials
    if rule.value and material:
        allowed = {str(m).strip().lower() for m in rule.value}
        ok = material.strip().lower() in allowed
        checks.append(
            Check(
                "pipe_material",
                MEETS if ok else REVIEW,
                cite(rule),
                f"{material} is one of the materials the section lists."
                if ok
                else f"{material} is not among the materials the section lists: "
                f'"{rule.quote}" For the village engineer to decide.',
            )
        )
    return checks


def _tie_words(taken: str, tied: list[str], lower_invert: bool = False) -> str:
    """The sentence saying that others were exactly as near as the one taken, and why that one: only on a tie."""
    if not tied:
        return ""
    others = ", ".join(tied)
    if lower_invert:
        return (
            f" The drawn main meets existing manhole{'s' if len(tied) > 1 else ''} {others} too: of the manholes at its"
            f" ends, {taken} has the lowest invert, and the main drains down to it."
        )
    return (
        f" {others} {'is' if len(tied) == 1 else 'are'} exactly as near: of those equally near, the lowest ID, "
        f"{taken}, is taken (whatever order the layers list them in, or the main was drawn in)."
    )


def _downstream_checks(conn: _Connection, downstream: dict, net, profile) -> list[Check]:
    """Two checks, one verdict each: where the main joins the sewer, and whether the mains below carry the flow."""
    snap = profile.network.snap_tolerance_ft
    # Where the drawn main meets the sewer is the snap tolerance's reading, a setting (and the user's, when set).
    cited = flagged("snap tolerance", OVERRIDDEN_FLAG if snap.overridden else "", SETTING_FLAG)
    if conn.kind == "none":
        return [
            Check(
                "connection",
                UNKNOWN,
                cited,
                "No sewer network in the data (mains and manholes): where the main would connect is not known.",
            )
        ]
    # the part not laid where the main connects (drawn over a main to it, or past it), and at the upper end (drawn
    # over an existing main from the manhole the main ends at); a main drawn over the sewer at both ends has both
    lower = next((p for p in conn.not_laid_parts if p["beyond_manhole"] == conn.label), None)
    upper = next((p for p in conn.not_laid_parts if p["beyond_manhole"] != conn.label), None)
    along = (lower or {}).get("along") if conn.kind == "manhole" else None
    if along:
        beyond = lower
        mains, it = existing_mains_words(along), "them" if ", " in along else "it"
        start = (
            f"The drawn main starts at existing manhole {beyond['from_manhole']} (within {snap.value:g} ft) and is "
            f"drawn along {mains} to existing manhole {conn.label}, where it leaves {it}"
            if beyond.get("from_manhole")
            else f"The drawn main's end lies on {mains} (within {snap.value:g} ft), and the main is drawn along {it} "
            f"to existing manhole {conn.label}"
        )
        text = (
            f"{start}: it connects at {conn.label}, where no new manhole is built. "
            f"The {beyond['length_words']} drawn {beyond['direction']} of {conn.label} over {along} is not laid, "
            f"costed or checked: {along} {_is_are(along)} there already. If a new main is meant to relieve or replace "
            f"{along}, that is for the engineer to design: it is not an extension."
        )
    elif conn.kind == "manhole" and lower:
        beyond = lower
        text = (
            f"The drawn main passes through existing manhole {conn.label} (within {snap.value:g} ft) and connects "
            f"to it there; no new manhole is built there. The {beyond['length_words']} drawn {beyond['direction']}"
            f" of {conn.label} is not laid, costed or checked: it would be a second main draining into "
            f"{conn.label}. Plan it on its own if the parcels along it need it."
        )
        if beyond.get("middle"):  # neither part is the longer: say which was taken and why
            text += (
                f" {conn.label} is at the middle of the drawn main, so the two parts are equally long: the one ending "
                "further north (then east) is the one laid."
            )
    elif conn.kind == "manhole" and conn.near_miss:
        within = profile.network.connect_at_manhole_within_ft
        text = (
            f"The drawn main's end lies on {conn.near_miss['on']}, {conn.near_miss['gap_ft']:,.1f} ft from existing "
            f"manhole {conn.label} (within the {within.value:g} ft of network.connect_at_manhole_within_ft, "
            f"{'set for this run' if within.overridden else 'a setting'}): it connects at {conn.label}, its end "
            "moved onto it, and no new manhole is built there beside it."
        )
    elif conn.kind == "manhole" and _structure_of(net, conn.node) in _PUMPED_FROM:
        # a main drawn to a pump station was given (and charged) a new manhole "on the existing sewer" there (a helper)
        text = (
            f"The main ends at existing {_structure_of(net, conn.node).replace('_', ' ')} {conn.label} (within "
            f"{snap.value:g} ft), whose wet well takes its flow; no new manhole is built there."
        )
    elif conn.kind == "manhole":
        text = (
            f"The main ends at existing manhole {conn.label} (within {snap.value:g} ft) and connects to it; "
            "no new manhole is built there."
        )
    elif conn.kind == "main" and conn.pressurised:
        text = (
            f"The main ends on {conn.pressurised} (within {snap.value:g} ft), which is pumped under pressure: a "
            "gravity main cannot discharge into it, so the main cannot connect there. Connect it to a gravity main or "
            "to a manhole of the sewer instead (move its end there)."
        )
    elif conn.kind == "main":
        text = f"The main ends on the existing sewer at {conn.label}: a new manhole is built on it there."
    if conn.kind in ("manhole", "main"):
        text += _tie_words(conn.label, conn.tied or (lower or {}).get("tied") or [], conn.lower_invert)
    else:
        room = conn.capacity["verdict"] if conn.capacity is not None else UNKNOWN
        # Mains without a diameter (Manchester, VT's) leave the room not known, which is not "none has room".
        which = {
            MEETS: "whose mains to the plant have room for the added flow",
            FAILS: "one (none near has room)",
        }.get(room, "one (whether the mains to the plant have room is not known: see the capacity check)")
        text = (
            f"The drawn main ends {conn.gap_ft:,.0f} ft from existing manhole {conn.label}, the nearest {which}"
            f": a {conn.gap_ft:,.0f} ft connecting main to it is included in the length, manholes, cost and leakage."
        ) + _tie_words(conn.label, conn.tied)
    if upper:  # as at a lower end drawn over a main: the main is there already
        top, over = upper["beyond_manhole"], upper["along"]
        text += (
            f" Its upper end lies on {existing_mains_words(over)}{' too' if along else ''} (within {snap.value:g} ft),"
            f" and the main is drawn along {'them' if ', ' in over else 'it'} "
            f"from existing manhole {top}: it ends at {top}, built into it, where no new manhole is built. The "
            f"{upper['length_words']} drawn {upper['direction']} of {top} over {over} is not laid, costed or checked:"
            f" {over} {_is_are(over)} there already. If a new main is meant to relieve or replace {over}, that is for"
            " the engineer to design: it is not an extension."
        )
    # drawn over a main: whether it meant to relieve that main, the engineer says
    verdict = FAILS if conn.pressurised else REVIEW if along or upper else MEETS
    if conn.passes:  # the plan drains all of it to its connection; joined to these, its flow would go another way
        listing = ", ".join(f"{p['id']} (station {p['station_ft']:,.0f} ft)" for p in conn.passes)
        n = len(conn.passes)
        text += (
            f" On its way up it runs through {n} more existing manhole{'s' if n != 1 else ''} of the sewer, built into"
            f" {'each' if n != 1 else 'it'} as one of its manholes: {listing}. The plan takes all of its flow to "
            f"{conn.label} (the capacity check); at {'each' if n != 1 else 'that manhole'} part of it may go down "
            "the mains that leave it instead: for the engineer."
        )
        verdict = FAILS if conn.pressurised else REVIEW
    checks = [Check("connection", verdict, cited, text)]
    rule = profile.design.manning_n
    rows = downstream["mains"]
    where = f"{len(rows)} main{'s' if len(rows) != 1 else ''} from {conn.label} to {downstream['outfall']}" + (
        f" (the inlet of the treatment plant {downstream['plant']})" if downstream.get("plant") else ""
    )
    unknown_present = max((r["present_flow_unknown"] for r in rows), default=0)
    note = (
        f" {unknown_present} parcel(s) upstream, connected or required to connect, have no known flow and are not "
        "counted."
        if unknown_present
        else ""
    )
    verdict = downstream["verdict"]
    if downstream["problem"]:
        text = f"{downstream['problem']} The capacity of the path to the plant is not known."
    elif verdict == FAILS:
        worst = next(r for r in rows if r["verdict"] == FAILS)
        text = (
            f"Not enough room in {', '.join(downstream['exceeded'])}: in {worst['main_id']} the present peak "
            f"{worst['present_peak_gpd']:,} gpd plus the added {worst['added_peak_gpd']:,} gpd exceeds its "
            f"full-pipe capacity of {worst['capacity_gpd']:,} gpd"
            + (" (its present peak alone exceeds it)." if worst["present_peak_gpd"] > worst["capacity_gpd"] else ".")
            + _largest_words(worst)
        )
    elif verdict == UNKNOWN and any(r["verdict"] == UNKNOWN for r in rows):
        text = f"Capacity not known: {_unknown_mains(rows)}."
        if not downstream.get("present_flow_recorded", True):
            text += f" {NOT_RECORDED}"
    else:
        spare = min(rows, key=lambda r: r["capacity_gpd"] - r["present_peak_gpd"]) if rows else None
        verb = "carries its" if len(rows) == 1 else "carry their"
        text = f"The {where} {verb} present peak flow plus the added {downstream['added_peak_gpd']:,} gpd" + (
            f"; the least room left is {spare['capacity_gpd'] - spare['present_peak_gpd'] - spare['added_peak_gpd']:,}"
            f" gpd, in {spare['main_id']}." + _largest_words(spare)
            if spare
            else "."
        )
        if verdict == UNKNOWN:  # room counting the parcels required to connect: the connected others not known
            # The room left is from the present peaks the table beside it shows: it had counted none of them.
            counted = any(r["present_peak_gpd"] for r in rows)
            text = f"Capacity not known: {NOT_RECORDED[0].lower()}{NOT_RECORDED[1:]} " + (
                f"Counting those, the {where} would carry their present peak flow plus the added "
                if counted
                else f"None of those drains to these mains: counting none, the {where} would carry the added "
            )
            text += f"{downstream['added_peak_gpd']:,} gpd" + (
                f"; the least room left is "
                f"{spare['capacity_gpd'] - spare['present_peak_gpd'] - spare['added_peak_gpd']:,} gpd, in "
                f"{spare['main_id']}." + _largest_words(spare)
                if spare
                else "."
            )
    checks.append(Check("capacity", verdict, cite(rule), text + note))
    return checks


def _largest_words(row: dict) -> str:
    """ " The largest present flow in M-11 is MILL's 16,000 gpd (flow_gpd given)." for a capacity row, where a
    parcel sends any; "" where none does (a row of a plan saved before has no ``largest_present``)."""
    top = row.get("largest_present")
    if not top:
        return ""
    return (
        f" The largest present flow in {row['main_id']} is {top['parcel_id']}'s {top['flow_gpd']:,} gpd "
        f"({top['basis']}), {top['share_pct']}% of its present flow."
    )


def node_invert_ft(net, node: int) -> tuple[float, str] | None:
    """A node's invert, the lowest of the mains' inverts at it (where each leaves or enters it), and the main it is
    of; None where no main at it has one. The manhole's bottom: a main laid into it can leave it no lower."""
    leaving = np.flatnonzero(net.u == node)
    entering = np.flatnonzero(net.v == node)
    inverts = np.r_[net.us_invert_ft[leaving], net.ds_invert_ft[entering]]
    mains = np.r_[leaving, entering]
    known = np.isfinite(inverts)
    if not known.any():
        return None
    k = int(np.argmin(np.where(known, inverts, np.inf)))
    return float(inverts[k]), str(net.main_id[mains[k]])


def _connection_invert(conn: _Connection, net) -> tuple[float, str] | None:
    """The invert where the main joins the sewer, and what gives it: its manhole's (``node_invert_ft``), or, for a
    new manhole on an existing main, that main's invert there, between its two ends' by where it lies along it."""
    if conn.node is not None:
        found = node_invert_ft(net, conn.node)
        return None if found is None else (found[0], f"{conn.label}'s invert ({found[0]:,.2f} ft, {found[1]}'s)")
    e = conn.first_main
    if e is None or not (np.isfinite(net.us_invert_ft[e]) and np.isfinite(net.ds_invert_ft[e])):
        return None
    along = shapely.line_locate_point(net.geometry[e], shapely.Point(conn.xy), normalized=True)
    invert = float(net.us_invert_ft[e] + (net.ds_invert_ft[e] - net.us_invert_ft[e]) * along)
    return invert, f"the invert of {conn.label} where the new manhole is built on it ({invert:,.2f} ft)"


def _gravity_check(conn: _Connection, manholes: list[dict], net, slope: float, section: str, fpu: float) -> Check:
    """Whether the main can fall to its manhole at ``slope`` (ft/ft, the town engineer's least slope for a main).

    From where it connects (the invert of its manhole, or of the main it is built on there) the main rises at least
    ``slope`` per foot going up. At each existing manhole it is built into on its way up, or ends at, whose invert is
    known, it must leave that manhole no lower than the manhole's invert (else the main's flow drops into it and goes
    down its mains, not to the connection): the fall between the two inverts must be at least ``slope`` x the feet
    between them. A main ending at a new manhole has no invert the data gives at its upper end (no ground or rim
    elevation is read): there the check is not made, and the least invert the upper end must have is said, for the
    engineer to set against the ground and the cellars it must serve."""
    label = conn.label or "its manhole"
    if conn.kind == "none" or net is None:
        return Check("gravity", UNKNOWN, section, "Not checked: where the main joins the sewer is not known.")
    if conn.pressurised:  # a pumped main's inverts say nothing of where a gravity main could fall to
        return Check(
            "gravity",
            UNKNOWN,
            section,
            f"Not checked: the main cannot connect to {conn.pressurised}, a pressurised main (the connection check).",
        )
    start = _connection_invert(conn, net)
    if start is None:
        return Check(
            "gravity",
            UNKNOWN,
            section,
            f"Not checked: the invert where the main joins the sewer, at {label}, is not in the data (no main at it "
            f"has an invert): give the inverts of the mains at {label} to check that the main can fall to it at "
            f"{slope:g} ft/ft.",
        )
    base, said = start
    ids = net.node_id.astype(str)
    known = []  # (station ft, manhole, invert, main)
    for m in manholes:
        if not m["existing"] or m["station_ft"] <= 0:
            continue
        at = np.flatnonzero(ids == str(m["id"]))
        found = node_invert_ft(net, int(at[0])) if len(at) else None
        if found is not None:
            known.append((float(m["station_ft"]), str(m["id"]), *found))
    length = float(manholes[-1]["station_ft"]) if manholes else 0.0
    low = []
    for station, mid, invert, _ in known:
        need = slope * station
        if invert - base < need - 0.005:  # elevations are given to the hundredth of a foot
            low.append((need - (invert - base), station, mid, invert, need))
    if low:
        _, station, mid, invert, need = max(low)
        fall = invert - base
        has = f"{fall / station:.4f} ft/ft is all there is" if fall > 0 else "it has no fall at all"
        where = f"{fall:,.2f} ft above" if fall > 0 else f"{-fall:,.2f} ft below" if fall < 0 else "level with"
        return Check(
            "gravity",
            FAILS,
            section,
            f"The main cannot fall to {label} at {slope:g} ft/ft: existing manhole {mid}, {station:,.0f} ft up the "
            f"main, has its invert at {invert:,.2f} ft, {where} {said}, and at that "
            f"slope the main must fall {need:,.2f} ft over those {station:,.0f} ft ({has}). Lower the connection, "
            "end the main below that manhole, or have the engineer design it otherwise (a drop, a pump).",
        )
    top = base + slope * length
    upper = manholes[-1] if manholes else None
    if upper is not None and upper["existing"] and known and known[-1][1] == str(upper["id"]):
        return Check(
            "gravity",
            MEETS,
            section,
            f"The main can fall to {label} at {slope:g} ft/ft: from existing manhole {upper['id']} at its upper end "
            f"(invert {known[-1][2]:,.2f} ft) to {said} it falls {known[-1][2] - base:,.2f} ft over "
            f"{length:,.0f} ft, and {slope * length:,.2f} ft is needed"
            + (
                f"; so it does from each existing manhole it runs through ({', '.join(k[1] for k in known[:-1])})."
                if len(known) > 1
                else "."
            ),
        )
    passed = (
        f" From each existing manhole it runs through whose invert is known ({', '.join(k[1] for k in known)}), it "
        f"can fall to {label} at that slope."
        if known
        else ""
    )
    return Check(
        "gravity",
        UNKNOWN,
        section,
        f"Not checked: the invert the main would need at its upper end is not known (it ends at a new manhole, and no "
        f"ground or rim elevation is in the data). Laid at {slope:g} ft/ft from {said}, its upper "
        f"end's invert must be at least {top:,.2f} ft, {length:,.0f} ft up the main: for the engineer to set against "
        f"the ground there and the cellars it must serve.{passed}",
    )


def easement_rows(crossed: gpd.GeoDataFrame) -> list[dict]:
    """Each private parcel the main crosses (``plan_route.parcels_crossed``) as the plan's document carries it, with
    the main's pieces across it as ``lines`` (lists of x, y in the measuring CRS, running as the main runs).

    The lines are where the easement runs: a plan's export (``layers.write.write_plan``, for the CLI's ``--out`` and
    a saved scenario's download alike) draws them from the document, so a surveyor is handed the main across each
    lot, not only the lot.
    """
    return rows_with_lines(crossed)


def rows_with_lines(crossed: gpd.GeoDataFrame) -> list[dict]:
    """A route finding's rows (parcels crossed, buildings crossed) as the plan's document carries them: each row's
    columns, and its geometry (the main's pieces across it) as ``lines``, lists of x, y in the measuring CRS."""
    rows = pd.DataFrame(crossed.drop(columns="geometry")).to_dict("records")
    parts, index = shapely.get_parts(crossed.geometry.values, return_index=True)
    coords, which = shapely.get_coordinates(parts, return_index=True)
    pieces = np.split(np.round(coords, 3), np.flatnonzero(np.diff(which)) + 1) if len(coords) else []
    for row in rows:
        row["lines"] = []
    for owner, xy in zip(index, pieces, strict=True):  # a piece or two per parcel crossed: a handful
        rows[owner]["lines"].append(xy.tolist())
    return rows


def _route_checks(
    crossings, crossed, conn: _Connection, profile: Profile, *, crs, ways_known: bool, private_ft: float
) -> list[Check]:
    """Two design checks of where the main runs (``analysis.plan_route``): the existing mains it crosses away from
    where it connects, and the private parcels it crosses (easements), each saying where and what to do.

    Neither is a rule of the laws sewerplan encodes, so each says it is a design check and cites no section; where
    the profile holds a section on easements (``design.easements_in_law``: Wappinger's § 196-21B), the easements
    check cites it.
    """
    snap, design = profile.network.snap_tolerance_ft, profile.design
    where = getattr(crs, "to_string", lambda: str(crs))()
    joins = f"where it connects ({conn.label})" if conn.label else "its ends"
    counted = (
        f"A design check, not a section of the law; a main met within {snap.value:g} ft of where it connects or of "
        "an existing manhole (the snap tolerance) is met there, not crossed."
    )
    if len(crossings) == 0:
        text = f"The main as built meets no existing main except {joins}. {counted}"
        verdict = MEETS
    else:
        listing = "; ".join(_crossing_text(r, where) for r in crossings.to_dict("records"))
        n = len(crossings)
        kinds = set(crossings["kind"])
        # A main laid over an existing one is no crossing: the advice for crossings (a manhole, a clearance) is
        # not the way out of it.
        advice = (
            "Two pipes crossing at one place without a manhole is not a design to submit: move the main clear of "
            "them, join them in a manhole there, or have the engineer show the clearance between the pipes at each "
            "crossing. "
            if kinds - {RUNS_ALONG}
            else ""
        ) + (
            "A new main laid where an existing main already lies is not a design to submit: move it clear of that "
            "main, or serve the parcels there from the existing main. "
            if RUNS_ALONG in kinds
            else ""
        )
        text = (
            f"The main as built meets existing mains in {n} place{'s' if n != 1 else ''} away from {joins}, with no "
            f"manhole there: {listing}. {advice}{counted}"
        )
        verdict = REVIEW
    checks = [
        Check(
            "main_crossings",
            verdict,
            flagged("design check", OVERRIDDEN_FLAG if snap.overridden else "", SETTING_FLAG),
            text,
        )
    ]

    rule, least = design.easements_in_law, design.easement_min_ft
    set_flag = OVERRIDDEN_FLAG if least.overridden else ""
    section = (
        flagged(rule.citation, set_flag, SETTING_FLAG)
        if rule.value
        else flagged("design check", set_flag, SETTING_FLAG)
    )
    law = (
        f"The law lets the municipality hold and maintain a sewer on private land only through an easement "
        f"{rule.cited}."
        if rule.value
        else "A design check, not a section of the law: the law says nothing of where a main may be laid."
    )
    slivers = (
        f"A parcel crossed for less than {least.value:g} ft in all (a sliver where the street edge and the tax map "
        "do not meet) is not counted."
    )
    ways = "every street and sewer right-of-way" if ways_known else "every street right-of-way"
    unknown_ways = (
        ""
        if ways_known
        else " No streets layer was given, so where the streets lie is not known: a parcel that runs to the middle "
        "of the road is counted as private land here."
    )
    if len(crossed) == 0:
        text = f"The main as built crosses no private parcel outside {ways}. {slivers}{unknown_ways}"
        return [*checks, Check("easements", MEETS, section, text)]
    n = len(crossed)
    both_sides = float(crossed["length_ft"].sum()) > private_ft + 0.05
    shared = " (where it runs along a lot line it lies on the parcels of both sides, and is listed for each)"
    listing = "; ".join(
        f"{r['parcel_id']}"
        + (
            f" ({', '.join(v for v in (r['owner_name'], r['site_address']) if v)})"
            if r["owner_name"] or r["site_address"]
            else ""
        )
        + f" {r['length_ft']:,.1f} ft, stations {r['from_station_ft']:,.0f} to {r['to_station_ft']:,.0f} ft"
        for r in crossed.to_dict("records")
    )
    text = (
        f"The main as built runs {private_ft:,.1f} ft across {n} private parcel{'s' if n != 1 else ''} outside {ways}"
        f"{shared if both_sides else ''}: "
        f"{listing}. A main on private land needs an easement from each owner before it is built: get the easements, "
        f"or move the main into the street. {law} {slivers}{unknown_ways}"
    )
    return [*checks, Check("easements", REVIEW, section, text)]


def _footprints(buildings: gpd.GeoDataFrame | None) -> int:
    """How many of the buildings are footprints (polygons): those a main can be found passing through."""
    if buildings is None or len(buildings) == 0:
        return 0
    return int(np.count_nonzero(shapely.get_dimensions(np.asarray(buildings.geometry.values)) == 2))


def _buildings_check(under: gpd.GeoDataFrame | None, footprints: int, given: int) -> Check:
    """The buildings whose footprint the main as built passes through (``plan_route.buildings_crossed``), each with
    the parcel it stands on and the feet of main under it; *for the engineer* where there are any.

    No section of the laws sewerplan encodes sets a clearance between a main and a building, so it is a design
    check, cites none, and tests the footprint itself. Without footprints (no buildings layer, or one of points)
    whether the main passes under a building is not known, and the check says so: never "none found".
    """
    law = (
        "A design check, not a section of the law: the law sets no clearance between a main and a building, so only "
        "a main through a building's footprint is found, not one passing beside it."
    )
    if under is None:
        why = (
            f"The buildings layer holds {given} point{'s' if given != 1 else ''} and no footprints"
            if given
            else "No buildings layer was given"
        )
        text = f"{why}, so whether the main as built passes under a building is not known. {law}"
        return Check("buildings_crossed", UNKNOWN, "design check", text)
    points = given - footprints
    unchecked = (
        f" {points} building{'s' if points != 1 else ''} of the layer {'are points' if points != 1 else 'is a point'}, "
        "not footprints, and not tested."
        if points
        else ""
    )
    if len(under) == 0:
        text = f"The main as built passes through no building. {law}{unchecked}"
        return Check("buildings_crossed", MEETS, "design check", text)
    n = len(under)
    listing = "; ".join(
        f"{r['building_id']} (" + (f"on parcel {r['parcel_id']}" if r["parcel_id"] else "on no parcel") + ") "
        f"{r['length_ft']:,.1f} ft under it, stations {r['from_station_ft']:,.0f} to {r['to_station_ft']:,.0f} ft"
        for r in under.to_dict("records")
    )
    text = (
        f"The main as built passes through {n} building{'s' if n != 1 else ''}: {listing}. A main under a building "
        "cannot be dug up to repair or replace it without the building: move the main clear of "
        f"{'them' if n != 1 else 'it'} (into the street), or have the engineer show why it must run there. "
        f"{law}{unchecked}"
    )
    return Check("buildings_crossed", REVIEW, "design check", text)


def _crossing_text(row: dict, crs: str) -> str:
    """One place the main meets an existing main, as a board reads it: which main, how, and where."""
    # the layer's own words ("storm, active" was said of a main the layer calls "Existing"); a scenario saved before
    # crossings carried them has the codes alone
    kind = row.get("described", ", ".join(v for v in (row["sewer_type"], row["status"]) if v))
    main = f"{row['main_id']}" + (f" ({kind})" if kind else "")
    at = f"(x {row['x']:,.1f}, y {row['y']:,.1f} in {crs})"
    if row["kind"] == RUNS_ALONG:
        return f"runs along {main} for {row['length_ft']:,.1f} ft around station {row['station_ft']:,.0f} ft {at}"
    verb = {CROSSES: "crosses", ENDS_ON: "its upper end lies on"}[row["kind"]]
    return f"{verb} {main} at station {row['station_ft']:,.0f} ft {at}"


def _unknown_mains(rows: list[dict]) -> str:
    """Why each main on the path has no capacity, each reason once with the mains it holds for.

    A town whose mains carry no diameters (Manchester, VT) got "350 has no diameter: give it in the mains layer"
    39 times over, as a page of the board's PDF.
    """
    by_problem: dict[str, list[str]] = {}
    for r in rows:
        if r["verdict"] == UNKNOWN:
            # a scenario saved before rows said why: a main without a diameter was then the only kind not known
            by_problem.setdefault(r.get("problem") or NO_DIAMETER, []).append(str(r["main_id"]))
    parts = []
    for problem, mains in by_problem.items():
        if len(mains) == 1:
            parts.append(f"{mains[0]} {problem}")
        elif problem == NO_DIAMETER:
            parts.append(f"{len(mains)} mains have no diameter ({', '.join(mains)}): give theirs in the mains layer")
        else:
            parts.append(f"{', '.join(mains[:-1])} and {mains[-1]} each {problem}")
    return "; ".join(parts)


def _requirements(built, diameter, material, manholes, profile, fpu):
    """What the contractor must meet (trench, material, exfiltration test by section), as requirements."""
    design = profile.design
    out: list[Requirement] = []
    widths = {float(k): v for k, v in design.trench_width_in.value.items()}
    if widths:
        limit = widths.get(float(diameter))
        listed = ", ".join(f"{d:g}" for d in sorted(widths))
        out.append(
            Requirement(
                "trench_width",
                cite(design.trench_width_in),
                f"Trench at most {int(limit) // 12} ft {int(limit) % 12} in wide just above the crown of the "
                f"{diameter:g}-inch pipe (wider trenches found on inspection need concrete encasement)."
                if limit is not None
                else f"Not covered by {design.trench_width_in.section}: it gives trench widths for {listed}-inch "
                f"pipe only, not {diameter:g}-inch.",
            )
        )
    if design.pipe_materials.value and not material:
        out.append(Requirement("pipe_material", cite(design.pipe_materials), design.pipe_materials.quote))
    sections: list[TestSection] = []
    leakage = None
    rate = design.exfiltration_gpd_per_inch_mile.value
    if rate is not None:
        per_mh = design.exfiltration_gpd_per_manhole.value or 0.0
        sections = exfiltration_sections(
            manholes,
            diameter_in=diameter,
            rate=rate,
            per_manhole=per_mh,
            max_section_ft=design.max_test_section_ft.value,
        )
        leakage = float(sum(s.allowance_gpd for s in sections))
        limit = design.max_test_section_ft.value
        out.append(
            Requirement(
                "exfiltration_test",
                cite(design.exfiltration_gpd_per_inch_mile),
                "Before use, an exfiltration test of each section"
                + (f" (at most {limit:,.0f} ft, {citation_clause(cite(design.max_test_section_ft))})" if limit else "")
                + f": leakage at most {rate:g} gallons per mile per inch of diameter per day"
                + (f" plus {per_mh:g} gallons per new manhole" if per_mh else "")
                + f"; {len(sections)} section(s), {leakage:,.1f} gallons per day in all.",
            )
        )
    return out, sections, leakage


def exfiltration_sections(
    manholes: list[dict], *, diameter_in: float, rate: float, per_manhole: float, max_section_ft: float | None
) -> list[TestSection]:
    """Group the runs between manholes, from the connection up, into test sections of at most ``max_section_ft``.

    A section starts and ends at a manhole. Each new manhole is counted in one section (its start or an interior
    manhole; the last section also counts its upper end); an existing manhole is not tested. A single run longer
    than the limit is its own section, marked ``too_long`` (a manhole must be added to test it).

    Examples
    --------
    >>> mh = [{"id": i, "station_ft": s, "existing": i == "MH-1"}
    ...       for i, s in (("MH-1", 0), ("N1", 400), ("N2", 800), ("N3", 1200))]
    >>> [(s.from_manhole, s.to_manhole, s.length_ft, s.manholes) for s in
    ...  exfiltration_sections(mh, diameter_in=8, rate=100, per_manhole=4.5, max_section_ft=1000)]
    [('MH-1', 'N2', 800.0, 1), ('N2', 'N3', 400.0, 2)]
    """
    ordered = sorted(manholes, key=lambda m: m["station_ft"])
    if len(ordered) < 2:
        return []
    runs = np.diff([m["station_ft"] for m in ordered])
    groups: list[list[int]] = [[0]]
    length = 0.0
    for i, run in enumerate(runs):  # runs between consecutive manholes: tens
        if max_section_ft and length > 0 and length + run > max_section_ft + 0.01:
            groups.append([i])
            length = 0.0
        groups[-1].append(i + 1)
        length += run
    out = []
    for number, members in enumerate(groups, start=1):
        first, last = members[0], members[-1]
        counted = [ordered[j] for j in members[:-1]] + ([ordered[last]] if number == len(groups) else [])
        n_new = sum(1 for m in counted if not m["existing"])
        section_ft = float(ordered[last]["station_ft"] - ordered[first]["station_ft"])
        out.append(
            TestSection(
                number,
                str(ordered[first]["id"]),
                str(ordered[last]["id"]),
                section_ft,
                n_new,
                rate * (section_ft / 5280) * diameter_in + n_new * per_manhole,
                bool(max_section_ft) and section_ft > max_section_ft + 0.01,
            )
        )
    return out


# -- comparing scenarios ---------------------------------------------------------------------------------------------

COMPARE_MEASURES = (
    ("cost", "Estimated cost ($)"),
    ("newly_mandated", "Parcels newly mandated"),
    ("septic_retired", "Septic systems retired"),
    ("signatures_needed", "Petition signatures needed"),
    ("cost_per_unit", "Cost per newly connected living unit ($)"),
    ("units", "Newly connected living units"),
    ("units_unknown", "Newly mandated parcels with units unknown"),
    ("benefiting_owners", "Benefiting owners"),
    ("vacant_benefiting", "Vacant lots that benefit"),
    ("length_ft", "Length of main (ft)"),
    ("diameter_in", "Diameter (in)"),
    ("connecting_ft", "Connecting main (ft)"),
    ("new_manholes", "New manholes"),
    ("main_crossings", "Crossings of existing mains away from a manhole"),
    ("easement_parcels", "Private parcels crossed (easements needed)"),
    ("easement_ft", "Length of main across private parcels (ft)"),
    ("checks_not_met", "Design checks not met"),
    ("open_checks", "Checks for the engineer or not known"),
    ("capacity", "Downstream capacity"),
    ("profile", "Profile"),
)


def compare_plans(saved: list[dict]) -> list[dict]:
    """Saved scenarios side by side: one row per measure (``COMPARE_MEASURES``), one value per scenario.

    ``saved`` are register rows (``name``, ``profile``, ``diameter_in``, ``result``: the plan's document). The cost
    per newly connected living unit divides the total by the living units of the newly mandated parcels (None
    when there are none). Scenarios saved by earlier versions, without some measures, show None for them.

    Examples
    --------
    >>> doc = {"cost": {"total": 100_000.0}, "newly_mandated": ["A", "B"], "private_systems": ["A"],
    ...        "petition": {"applies": True, "signatures_needed": 2, "benefiting_owners": 2}, "units": 4,
    ...        "length_ft": 500.0, "manholes": [], "design_checks": [], "downstream": {"capacity_ok": True}}
    >>> rows = compare_plans([{"name": "A", "profile": "fort-plain", "diameter_in": 8, "result": doc}])
    >>> {r["measure"]: r["values"][0] for r in rows}["cost_per_unit"]
    25000.0
    """
    columns = [_measures(p) for p in saved]
    return [
        {"measure": key, "label": label, "values": [c.get(key) for c in columns]} for key, label in COMPARE_MEASURES
    ]


def _measures(saved: dict) -> dict:
    r = saved["result"]
    units = r.get("flow", {}).get("units", r.get("units"))
    total = r["cost"]["total"]
    pet = r["petition"]
    checks = r.get("design_checks", [])

    def verdict(c: dict) -> str:
        return c.get("verdict") or (MEETS if c.get("passed") else FAILS)

    down = r.get("downstream", {})
    capacity = down.get("verdict") or (MEETS if down.get("capacity_ok") else UNKNOWN)
    return {
        "cost": round(float(total), 2),
        "newly_mandated": len(r["newly_mandated"]),
        "septic_retired": len(r.get("private_systems", [])),
        "signatures_needed": pet["signatures_needed"] if pet.get("applies") else None,
        "cost_per_unit": round(total / units, 2) if units else None,
        "units": units,
        "units_unknown": len(r.get("flow", {}).get("units_unknown", [])),
        "benefiting_owners": pet.get("benefiting_owners"),
        "vacant_benefiting": len(r.get("vacant_benefiting", [])),
        "length_ft": r["length_ft"],
        "diameter_in": saved.get("diameter_in", r.get("diameter_in")),
        "connecting_ft": (r.get("connecting_main") or {}).get("length_ft", 0.0),
        "new_manholes": sum(1 for m in r["manholes"] if not m.get("existing")),
        # None for a scenario saved before plans looked for crossings and easements: not known, not none
        "main_crossings": len(r["main_crossings"]) if "main_crossings" in r else None,
        "easement_parcels": len(r["easements"]) if "easements" in r else None,
        "easement_ft": r.get("easement_length_ft"),
        "checks_not_met": ", ".join(_plain(c) for c in checks if verdict(c) == FAILS) or "none",
        "open_checks": ", ".join(_plain(c) for c in checks if verdict(c) in (REVIEW, UNKNOWN)) or "none",
        "capacity": capacity,
        "profile": f"{saved.get('profile', r.get('profile'))} {r.get('profile_version', '')}".strip(),
    }


def _plain(check: dict) -> str:
    return check["check"].replace("_", " ")
