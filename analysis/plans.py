"""Try a sewer extension before building it: who becomes mandated, whether the design meets the law, what it costs.

``plan_extension`` takes a proposed main (a line, drawn in any direction), its diameter and the town's layers:

- **Manholes**: at both ends, at every bend sharper than ``network.alignment_change_deg``, and evenly between them
  so that no run is longer than ``network.max_manhole_spacing_ft`` (§ 144-18K): a 900 ft straight run gets one at
  each end and two between (300 ft apart).
- **Newly mandated**: the mandate analysis is run with and without the proposed main (as a public sanitary main);
  parcels mandated only with it are the newly mandated. Those not connected today are on private systems that
  would have to be abandoned (Fort Plain § 144-5B, Wappinger § 196-17E). Service-area polygons marked as not
  mandating (Wappinger's Phase III, § 196-17A) hold their parcels back.
- **Petition** (Fort Plain § 144-17B): the benefiting owners are the distinct owners of the newly mandated parcels;
  a majority is more than half.
- **Cost** from the profile's unit costs, split three ways: by frontage on the new main, by parcel, by living unit.
- **Design checks**: minimum diameter (§ 144-18B), manhole spacing and changes in alignment (§ 144-18K), trench
  width (§ 144-18F), and the exfiltration test allowance (§ 144-19C, test sections at most 1,000 ft, § 144-19B).
- **Downstream**: the end of the proposed main nearest the existing network is where it connects; the path from
  there to the plant, and whether each main on it has Manning full-pipe capacity for its present flow plus the
  added flow (units x gallons per unit x peaking factor).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely

from analysis.areas import held_by_service_area
from analysis.errors import AnalysisError
from analysis.mandate import analyze_mandates
from analysis.network import SewerNetwork
from analysis.profiles import Profile
from analysis.trace import connect_parcels, sewershed, trace_down
from analysis.units import feet_per_unit

GPD_PER_CFS = 646_317.0
PROPOSED_ID = "PROPOSED"


@dataclass
class Check:
    check: str
    passed: bool
    section: str
    message: str

    def __post_init__(self):
        self.passed = bool(self.passed)  # numpy comparisons give numpy booleans


@dataclass
class PlanResult:
    """Everything `sewerplan plan --json` prints, and the geometry to map and export."""

    newly_mandated: list[str]
    private_systems: list[str]
    held_by_service_area: list[str]
    manholes: list[dict]
    length_ft: float
    diameter_in: float
    design_checks: list[Check]
    exfiltration_allowance_gpd: float | None
    petition: dict
    cost: dict
    downstream: dict
    units: float
    parcels: gpd.GeoDataFrame = field(repr=False, default=None)
    line: object = field(repr=False, default=None)

    def as_dict(self) -> dict:
        return {
            "newly_mandated": self.newly_mandated,
            "private_systems": self.private_systems,
            "held_by_service_area": self.held_by_service_area,
            "manholes": self.manholes,
            "length_ft": round(self.length_ft, 1),
            "diameter_in": self.diameter_in,
            "design_checks": [asdict(c) for c in self.design_checks],
            "exfiltration_allowance_gpd": None
            if self.exfiltration_allowance_gpd is None
            else round(self.exfiltration_allowance_gpd, 1),
            "petition": self.petition,
            "cost": self.cost,
            "downstream": self.downstream,
            "units": self.units,
        }


def place_manholes(line, *, max_spacing: float, bend_deg: float) -> list[tuple[float, float, str]]:
    """Manhole positions along a line: ends, bends, and evenly spaced between so no gap exceeds ``max_spacing``.

    Examples
    --------
    >>> from shapely.geometry import LineString
    >>> [(x, y) for x, y, _ in place_manholes(LineString([(0, 0), (900, 0)]), max_spacing=400, bend_deg=10)]
    [(0.0, 0.0), (300.0, 0.0), (600.0, 0.0), (900.0, 0.0)]
    """
    coords = np.asarray(line.coords)[:, :2]
    keep = [0]
    for i in range(1, len(coords) - 1):  # vertices of one proposed main: a handful
        a, b = coords[i] - coords[keep[-1]], coords[i + 1] - coords[i]
        turn = abs((math.degrees(math.atan2(b[1], b[0]) - math.atan2(a[1], a[0])) + 180) % 360 - 180)
        if turn > bend_deg:
            keep.append(i)
    keep.append(len(coords) - 1)
    points: list[tuple[float, float, str]] = []
    for k, (i, j) in enumerate(zip(keep[:-1], keep[1:], strict=True)):
        run = shapely.LineString(coords[i : j + 1])
        n_between = max(0, math.ceil(run.length / max_spacing - 1e-9) - 1) if max_spacing else 0
        reason = "end of the proposed main" if k == 0 else "change in alignment"
        points.append((float(coords[i][0]), float(coords[i][1]), reason))
        for m in range(1, n_between + 1):
            p = run.interpolate(run.length * m / (n_between + 1))
            points.append((float(p.x), float(p.y), f"spacing at most {max_spacing:g} ft"))
    points.append((float(coords[-1][0]), float(coords[-1][1]), "end of the proposed main"))
    return points


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
) -> PlanResult:
    """Evaluate a proposed main (a shapely LineString in the layers' CRS). See the module docstring."""
    line = shapely.line_merge(proposed) if proposed.geom_type == "MultiLineString" else proposed
    if line.geom_type != "LineString" or line.length == 0:
        raise AnalysisError("The proposed main must be one line (draw it as a single connected line).")
    fpu = feet_per_unit(parcels.crs)
    net_rules, design = profile.network, profile.design
    length_ft = line.length * fpu

    spacing = (net_rules.max_manhole_spacing_ft.value or 400.0) / fpu
    manholes = place_manholes(line, max_spacing=spacing, bend_deg=net_rules.alignment_change_deg.value)

    # The service areas are applied below, so that held parcels can be reported as such.
    before = analyze_mandates(parcels, mains, profile=profile, streets=streets, buildings=buildings).parcels
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
    after = analyze_mandates(parcels, with_new, profile=profile, streets=streets, buildings=buildings).parcels
    newly = (after["status"].to_numpy() == "mandated") & (before["status"].to_numpy() != "mandated")
    held = held_by_service_area(after, service_areas) & newly
    newly &= ~held
    chosen = after[newly]
    ids = chosen["parcel_id"].astype(str).tolist()
    private = (
        chosen[~chosen["connected_flag"].astype(bool)]["parcel_id"].astype(str).tolist()
        if "connected_flag" in chosen
        else ids
    )

    units = (
        pd.to_numeric(chosen["units"], errors="coerce").fillna(1).clip(lower=1)
        if "units" in chosen
        else pd.Series(1.0, index=chosen.index)
    )
    petition = _petition(chosen, design)
    cost = _cost(chosen, units, line, length_ft, diameter_in, len(manholes), design, fpu, streets, profile)
    checks, leakage = _design_checks(line, length_ft, diameter_in, manholes, profile, fpu)
    downstream = _downstream(line, network, before, units.sum(), profile)
    return PlanResult(
        ids,
        private,
        after[held]["parcel_id"].astype(str).tolist(),
        [{"x": round(x, 2), "y": round(y, 2), "reason": r} for x, y, r in manholes],
        length_ft,
        float(diameter_in),
        checks,
        leakage,
        petition,
        cost,
        downstream,
        float(units.sum()),
        parcels=chosen,
        line=line,
    )


def _petition(chosen, design) -> dict:
    owners = (
        chosen["owner_name"].fillna("").astype(str).str.upper().str.replace(r"[^\w]+", " ", regex=True).str.strip()
        if "owner_name" in chosen
        else chosen["parcel_id"].astype(str)
    )
    n = int(owners.replace("", np.nan).dropna().nunique())
    rule = design.petition_majority
    return {
        "benefiting_owners": n,
        "signatures_needed": n // 2 + 1 if n else 0,
        "section": rule.citation if rule.value else None,
        "applies": bool(rule.value),
    }


def petition_passes(signatures: int, benefiting_owners: int) -> bool:
    """A majority is more than half: exactly half is not enough."""
    return signatures * 2 > benefiting_owners


def _frontage_ft(chosen, line, fpu, streets, profile) -> pd.Series:
    """Each parcel's property line along the new main: its boundary within the street's half width of the line."""
    reach = profile.measurement.default_row_width_ft.value / 2 / fpu + profile.measurement.abut_tolerance_ft.value / fpu
    band = line.buffer(reach, cap_style="flat")
    edge = shapely.intersection(shapely.boundary(np.asarray(chosen.geometry.values)), band)
    return pd.Series(shapely.length(edge) * fpu, index=chosen.index)


def _cost(chosen, units, line, length_ft, diameter, n_manholes, design, fpu, streets, profile) -> dict:
    table = {float(k): float(v) for k, v in design.cost_per_ft.value.items()}
    per_ft = table.get(float(diameter)) or (table[min(table, key=lambda d: abs(d - diameter))] if table else 0.0)
    main_cost = length_ft * per_ft
    manhole_cost = n_manholes * design.cost_per_manhole.value
    lateral_cost = len(chosen) * design.cost_per_lateral.value
    total = main_cost + manhole_cost + lateral_cost
    ids = chosen["parcel_id"].astype(str).to_numpy()

    def split(weights: pd.Series) -> dict:
        w = weights.to_numpy(float)
        if len(w) == 0 or w.sum() <= 0:
            return {}
        return {pid: round(total * wi / w.sum(), 2) for pid, wi in zip(ids, w, strict=True)}

    return {
        "total": round(total, 2),
        "main": round(main_cost, 2),
        "manholes": round(manhole_cost, 2),
        "laterals": round(lateral_cost, 2),
        "cost_per_ft": per_ft,
        "by_frontage": split(_frontage_ft(chosen, line, fpu, streets, profile)),
        "by_parcel": split(pd.Series(1.0, index=chosen.index)),
        "by_unit": split(units),
    }


def _design_checks(line, length_ft, diameter, manholes, profile, fpu):
    net_rules, design = profile.network, profile.design
    checks: list[Check] = []
    rule = net_rules.min_diameter_in
    if rule.value is not None:
        ok = diameter >= rule.value
        checks.append(
            Check(
                "min_diameter",
                ok,
                rule.citation,
                f"{diameter:g} in {'meets' if ok else 'is below'} the {rule.value:g} in minimum.",
            )
        )
    rule = net_rules.max_manhole_spacing_ft
    if rule.value is not None:
        pts = np.array([(x, y) for x, y, _ in manholes])
        along = [line.project(shapely.Point(p)) * fpu for p in pts]
        gap = max(np.diff(sorted(along))) if len(along) > 1 else 0.0
        ok = gap <= rule.value + 0.01
        checks.append(
            Check(
                "manhole_spacing",
                ok,
                rule.citation,
                f"{len(manholes)} manholes placed (ends, bends and between); the longest run between "
                f"them is {gap:,.0f} ft, at most {rule.value:g} ft allowed.",
            )
        )
    if net_rules.manhole_at_alignment_change.value:
        bends = sum(1 for _, _, r in manholes if r == "change in alignment")
        checks.append(
            Check(
                "alignment_change",
                True,
                net_rules.manhole_at_alignment_change.citation,
                f"A manhole is placed at each of the {bends} change(s) in alignment.",
            )
        )
    widths = {float(k): v for k, v in design.trench_width_in.value.items()}
    if widths:
        limit = widths.get(float(diameter))
        if limit is None:
            checks.append(
                Check(
                    "trench_width",
                    False,
                    design.trench_width_in.citation,
                    f"No trench width is set for {diameter:g}-inch pipe (the table covers "
                    f"{', '.join(f'{d:g}' for d in sorted(widths))} in): ask the engineer.",
                )
            )
        else:
            checks.append(
                Check(
                    "trench_width",
                    True,
                    design.trench_width_in.citation,
                    f"Trench at most {int(limit) // 12} ft {int(limit) % 12} in wide above the crown of "
                    f"{diameter:g}-inch pipe; wider needs 6 in of concrete encasement (§ 144-18G).",
                )
            )
    leakage = None
    if design.exfiltration_gpd_per_inch_mile.value is not None:
        per_mh = design.exfiltration_gpd_per_manhole.value or 0.0
        leakage = design.exfiltration_gpd_per_inch_mile.value * (length_ft / 5280) * diameter + len(manholes) * per_mh
        sections = math.ceil(length_ft / design.max_test_section_ft.value) if design.max_test_section_ft.value else 1
        checks.append(
            Check(
                "exfiltration_allowance",
                True,
                design.exfiltration_gpd_per_inch_mile.citation,
                f"Allowed leakage in the exfiltration test: {leakage:,.1f} gallons per day for "
                f"{length_ft:,.0f} ft of {diameter:g}-inch pipe and {len(manholes)} manholes, tested in "
                f"{sections} section(s) of at most "
                f"{design.max_test_section_ft.value or length_ft:,.0f} ft.",
            )
        )
    return checks, leakage


def manning_capacity_gpd(diameter_in: float, slope: float, n: float) -> float:
    """Full-pipe capacity (gallons per day) of a circular pipe by Manning's equation (US units)."""
    d_ft = diameter_in / 12
    area = math.pi * d_ft**2 / 4
    radius = d_ft / 4
    return (1.486 / n) * area * radius ** (2 / 3) * math.sqrt(max(slope, 0.0)) * GPD_PER_CFS


def _downstream(line, net, before, added_units, profile) -> dict:
    if net is None or len(net.main_id) == 0:
        return {"path": [], "mains": [], "capacity_ok": None, "problem": "No existing network to connect to."}
    # Present flow: the parcels connected today, by their connection points on the existing network.
    connected = before[before["status"].to_numpy() == "connected"]
    connections = connect_parcels(net, connected) if len(connected) else None
    ends = [shapely.Point(line.coords[0]), shapely.Point(line.coords[-1])]
    nodes = shapely.points(net.node_xy)
    dists = [shapely.distance(e, nodes) for e in ends]
    which = int(np.argmin([d.min() for d in dists]))
    node = int(np.argmin(dists[which]))
    gap_ft = float(dists[which][node]) * net.fpu
    trace = trace_down(net, node)
    design = profile.design
    gpd_unit = profile.network.gallons_per_day_per_unit.value
    added = added_units * gpd_unit * design.peaking_factor.value
    rows = []
    main_index = {str(m): i for i, m in enumerate(net.main_id)}
    ok = True
    for mid in trace.mains:  # the mains on one downstream path
        e = main_index[mid]
        slope = (net.us_invert_ft[e] - net.ds_invert_ft[e]) / net.length_ft[e]
        slope_source = "inverts"
        if not np.isfinite(slope) or slope <= 0:
            slope, slope_source = design.default_slope_ft_per_ft.value, "profile default"
        diameter = net.diameter_in[e]
        material = str(net.material[e] or "").strip().lower()
        n = design.manning_n_by_material.value.get(material, design.manning_n.value)
        capacity = manning_capacity_gpd(diameter, slope, n) if np.isfinite(diameter) else None
        shed = sewershed(
            net, int(net.u[e]), connections, connected if connections is not None else None, profile=profile
        )
        present = shed.units * gpd_unit * design.peaking_factor.value
        fits = capacity is None or present + added <= capacity
        ok &= fits
        rows.append(
            {
                "main_id": mid,
                "diameter_in": None if not np.isfinite(diameter) else float(diameter),
                "slope": round(float(slope), 5),
                "slope_source": slope_source,
                "manning_n": n,
                "capacity_gpd": None if capacity is None else round(capacity),
                "present_peak_gpd": round(present),
                "added_peak_gpd": round(added),
                "capacity_ok": bool(fits),
            }
        )
    problem = trace.problem
    if gap_ft > profile.network.snap_tolerance_ft.value:
        problem = ((problem + " ") if problem else "") + (
            f"The proposed main ends {gap_ft:,.0f} ft from {trace.path[0]}: a connecting main is needed."
        )
    return {
        "connects_at": trace.path[0] if trace.path else None,
        "connection_gap_ft": round(gap_ft, 1),
        "path": trace.path,
        "mains": rows,
        "capacity_ok": bool(ok),
        "outfall": trace.outfall,
        "problem": problem,
        "added_peak_gpd": round(added),
        "sections": {"flow": profile.network.gallons_per_day_per_unit.citation, "capacity": design.manning_n.citation},
    }
