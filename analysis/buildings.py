"""Building sewers: rear buildings on interior lots, one building sewer per group of living units, manhole
connections, and the size and slope of existing building sewers. Whole-array work; no loop over buildings or parcels.

Geometric tests, for each parcel with two or more qualifying buildings (sheds under
``min_occupied_building_sqft`` and buildings marked unoccupied do not count):

- **Frontage**: the part of the property line along the sewered street in which the parcel's deciding main lies
  (the right-of-way grown by the abut tolerance, intersected with the parcel boundary). A parcel that fronts no
  sewered street measures from its connection point on the main instead.
- **Front building**: the qualifying building nearest the frontage.
- **Rear building**: another building whose straight route to the frontage (from its centroid to the nearest
  point of the frontage) crosses the front building, or that stands farther from the frontage than the front
  building while overlapping it along the frontage (their extents, projected on the frontage's direction, overlap).
  A building beside the front building (no overlap, route clear) is tested the same way against the other
  buildings nearer the frontage: behind one of them, it is at the rear of that one ("at the rear of another").
- **Lot**: *interior* when it abuts one street (distinct street names; right-of-way features without a name count
  one each), *corner* when two abutting streets' rights-of-way meet, *through* otherwise.
- **Another route** for a separate building sewer: an adjoining feature of the alleys layer whose kind is one the
  profile lists (Fort Plain § 144-9: alley, court, yard or driveway; Poughkeepsie § 168-22.4D: alley, courtyard or
  driveway), a public alley in the streets layer (named "... Alley"), or frontage on a second sewered street.
  Whether a private sewer "is available or can be constructed" is a fact on the ground the map cannot settle: where
  none of these is mapped, the verdict is ``may_share_if_no_route`` and the reason lists what was looked for and
  not found, so the reviewer confirms it before the front building's sewer is extended.
- **Manhole connections** (Fort Plain § 144-16): the administrative body "shall determine if and where" a building
  sewer connects through a manhole. Schools, hospitals, institutions and public buildings (by property class), and
  complexes of industrial or commercial buildings (two or more occupied buildings on such a parcel) are listed as
  cases for it to determine, never as connections the law requires.
- **Size and slope** of existing building sewers (Fort Plain § 144-11B, Wappinger § 196-18F): with a laterals layer
  that gives ``diameter_in`` and inverts at both ends, each building's laterals are checked against the profile's
  least diameter and slope; the slope is the fall from the building end to the main end over the lateral's length.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely

from analysis._parallel import elementwise, paused_gc
from analysis.arrays import distinct, joined_runs
from analysis.mandate import counting_buildings, counting_mains, locate_buildings
from analysis.profiles import Profile
from analysis.reasons import text_column
from analysis.streets import StreetPairs, street_pairs
from analysis.units import feet_per_unit

VERDICTS = ("may_share_if_no_route", "separate_required", "main_extension_required")
ALLEY_NAME = r"\b(?:alley|aly)\b"


@dataclass(frozen=True)
class BuildingsResult:
    """One row per building (the input's index), and a summary."""

    buildings: gpd.GeoDataFrame
    summary: dict = field(default_factory=dict)

    def cases(self) -> gpd.GeoDataFrame:
        """The buildings with a case to decide: rear or sharing lots, several laterals, units unknown, manhole
        connections for the administrative body, building sewers missing on a parcel that must connect, building
        sewers below the least size or slope."""
        b = self.buildings
        case = (
            b["shared_lateral"].notna()
            | (b["required_laterals"].fillna(1) > 1)
            | b["units_unknown"]
            | b["manhole_connection_case"]
            | (b["lateral_shortfall"].fillna(0) > 0)
            | b["lateral_below_standard"]
        )
        return b[case]


def assess_buildings(
    buildings: gpd.GeoDataFrame,
    parcels: gpd.GeoDataFrame,
    *,
    profile: Profile,
    streets: gpd.GeoDataFrame | None = None,
    mains: gpd.GeoDataFrame | None = None,
    alleys: gpd.GeoDataFrame | None = None,
    laterals: gpd.GeoDataFrame | None = None,
    workers: int = 2,
    building_parcels: np.ndarray | None = None,
    street_pairs: StreetPairs | None = None,
) -> BuildingsResult:
    """Every building's rear-building verdict, living units, laterals required and manhole connection.

    ``parcels`` are mandate results (``parcel_id``, ``main_id``, ``connection_x``/``connection_y``; optionally
    ``units``, ``property_class``); ``mains`` the same mains the analysis used (to find the frontage street).
    ``building_parcels`` (``MandateResult.building_parcels``, for these buildings and parcels in the same
    order) saves finding again which parcel each building stands on, and ``street_pairs``
    (``MandateResult.street_pairs``, for these parcels, streets and mains) which streets each parcel abuts.

    Examples
    --------
    >>> from shapely.geometry import LineString, box
    >>> from analysis.profiles import load_profile
    >>> crs = "EPSG:2260"
    >>> streets = gpd.GeoDataFrame({"street_name": ["Main St"]}, geometry=[LineString([(-500, 0), (500, 0)])],
    ...     crs=crs)
    >>> mains = gpd.GeoDataFrame({"main_id": ["M-1"]}, geometry=[LineString([(-500, 0), (500, 0)])], crs=crs)
    >>> parcels = gpd.GeoDataFrame({"parcel_id": ["P"], "main_id": ["M-1"], "connection_x": [25.0],
    ...     "connection_y": [0.0]}, geometry=[box(0, 25, 50, 225)], crs=crs)
    >>> houses = gpd.GeoDataFrame({"building_id": ["FRONT", "BACK"], "units": [1, 1]},
    ...     geometry=[box(10, 50, 40, 90), box(15, 170, 35, 200)], crs=crs)
    >>> r = assess_buildings(houses, parcels, streets=streets, mains=mains, profile=load_profile("fort-plain"))
    >>> cols = ["building_id", "rear_building", "front_building_id", "shared_lateral"]
    >>> r.buildings[cols].astype(object).fillna("-").values.tolist()
    [['FRONT', False, '-', '-'], ['BACK', True, 'FRONT', 'may_share_if_no_route']]
    """
    with paused_gc():
        return _assess(
            buildings, parcels, profile, streets, mains, alleys, laterals, workers, building_parcels, street_pairs
        )


def _assess(
    buildings, parcels, profile, streets, mains, alleys, laterals, workers, building_parcels, given_pairs
) -> BuildingsResult:
    rules = profile.buildings
    fpu = feet_per_unit(buildings.crs)
    n = len(buildings)
    geoms = np.asarray(buildings.geometry.values)
    parcel_geoms = np.asarray(parcels.geometry.values)

    # Which parcel each building stands on (its centroid, else a surface point, inside the parcel).
    if building_parcels is not None and len(building_parcels) == n:
        parcel_of = np.asarray(building_parcels, dtype=np.int64)
    else:
        b_idx, p_idx = locate_buildings(geoms, parcels, shapely.STRtree(parcel_geoms), profile, fpu, workers)
        parcel_of = np.full(n, -1, dtype=np.int64)
        parcel_of[b_idx] = p_idx

    qualifies = counting_buildings(buildings, profile, fpu) & (parcel_of >= 0)
    count = np.bincount(parcel_of[qualifies], minlength=len(parcels))
    several = qualifies & (count[np.clip(parcel_of, 0, None)] >= 2)

    out = buildings.copy()
    ids = (
        out["building_id"].astype(str).to_numpy(object)
        if "building_id" in out
        else np.char.add("buildings-", np.arange(1, n + 1).astype(str)).astype(object)
    )
    out["parcel_id"] = np.where(
        parcel_of >= 0, parcels["parcel_id"].to_numpy(object)[np.clip(parcel_of, 0, None)], None
    )
    rear = np.zeros(n, dtype=bool)
    front = np.full(n, -1, dtype=np.int64)
    verdict = np.full(n, None, dtype=object)
    lot_type = np.full(n, None, dtype=object)
    reason = np.full(n, "", dtype=object)

    lots = distinct(parcel_of[several])
    if len(lots) and streets is not None and len(streets) and mains is not None:
        rear, front, verdict, lot_type, reason = _rear_buildings(
            geoms,
            ids,
            parcel_of,
            several,
            lots,
            parcels,
            parcel_geoms,
            streets,
            mains,
            alleys,
            profile,
            fpu,
            workers,
            given_pairs if given_pairs is not None and len(given_pairs.sewered) == len(streets) else None,
        )

    parcel_classes = _classes(parcels)  # once, for the units and the manhole cases
    units, units_source, units_unknown = _units(
        out, parcels, parcel_of, qualifies, count, rules, parcel_classes, profile.discharges.residential_classes.value
    )
    per = rules.units_per_lateral.value
    required = np.where(qualifies, 1.0, np.nan)
    if per:
        required = np.where(qualifies & ~units_unknown, np.maximum(1, np.ceil(np.nan_to_num(units) / per)), required)
        required = np.where(qualifies & units_unknown, np.nan, required)
    existing = _existing_laterals(geoms, laterals, profile, fpu) if laterals is not None else np.full(n, np.nan)
    # A building sewer is short only where the parcel must connect (or has): a lot out of range owes none.
    owed = np.isfinite(existing) & np.isfinite(required) & _duty_to_connect(parcels, parcel_of, profile)
    shortfall = np.where(owed, np.maximum(required - existing, 0), np.nan)
    # A rear building that may share: "the whole considered as one building sewer" (§ 144-9), so its units are
    # counted with the front building's, and what it lacks is judged for the whole, never as a shortfall of its own.
    shared = qualifies & (verdict == "may_share_if_no_route") & (front >= 0)
    if shared.any():
        rows = np.flatnonzero(shared)
        required[rows], shared_text = _shared_sewers(rows, front[rows], ids, units, required, existing, rules)
        shortfall[rows] = np.nan
        reason[rows] = (pd.Series(reason[rows], dtype=object) + shared_text).str.strip().to_numpy(object)
    manhole, manhole_why = _manhole_connection(
        out, parcels, parcel_of, qualifies, count, rules, parcel_classes, profile.discharges.residential_classes.value
    )
    pipes = _lateral_sizes(geoms, laterals, profile, fpu)

    more = qualifies & (np.nan_to_num(required) > 1) & ~shared
    unknown_rule = qualifies & units_unknown & bool(per) & ~shared
    short = np.nan_to_num(shortfall) > 0
    missing = short & ~more  # one building sewer owed and none mapped (the units sentence says the rest)
    # The section cited: the first that applies of the rear-building rule, the units rule, the manhole rule and
    # the lateral standard (a finding exactly where a lateral is below it). Chosen as a code per building, so no
    # comparison of a million texts.
    cited = np.select([pd.notna(verdict), more | unknown_rule, manhole, missing, pipes["below"]], [1, 2, 3, 4, 5], 0)
    section = np.full(n, "", dtype=object)
    section[cited == 1] = rules.rear_building_rule.citation
    section[cited == 2] = rules.units_per_lateral.citation
    section[cited == 3] = rules.manhole_connection_classes.citation
    section[cited == 4] = rules.separate_building_sewer.citation
    section[cited == 5] = pipes["section"][cited == 5]
    # The further sentences, built only for the buildings they are about (elementwise, so row by row the same).
    reason = np.asarray(reason, dtype=object).copy()
    rows = np.flatnonzero(more | unknown_rule | manhole)
    if len(rows):
        unknown_why = _units_unknown_why(rows, parcels, parcel_of, count, rules, parcel_classes)
        reason[rows] = _more_reasons(
            reason[rows],
            more[rows],
            np.where(unknown_rule[rows], unknown_why, ""),
            manhole[rows],
            manhole_why[rows],
            units[rows],
            required[rows],
            existing[rows],
            shortfall[rows],
            rules,
        )
    rows = np.flatnonzero(missing)
    if len(rows):
        own = f": it needs its own {rules.separate_building_sewer.cited}."
        reason[rows] = (
            (
                pd.Series(reason[rows], dtype=object)
                + " No building sewer of the laterals layer reaches it"
                + np.where(pd.isna(verdict[rows]), own, ".")  # a rear or beside building's reason says it already
            )
            .str.strip()
            .to_numpy(object)
        )
    rows = np.flatnonzero(pipes["below"])
    if len(rows):
        reason[rows] = pd.Series(reason[rows] + " " + pipes["finding"][rows]).str.strip().to_numpy(object)

    out["building_id"] = ids
    out["units"] = units
    out["units_source"] = units_source
    out["units_unknown"] = units_unknown & qualifies
    out["rear_building"] = rear
    out["front_building_id"] = text_column(np.where(front >= 0, ids[np.clip(front, 0, None)], None))
    out["lot_type"] = text_column(lot_type)
    out["shared_lateral"] = text_column(verdict)
    out["required_laterals"] = (
        pd.array(np.where(np.isfinite(required), required, np.nan), dtype="Int64") if n else pd.array([], dtype="Int64")
    )
    out["existing_laterals"] = (
        pd.array(np.where(np.isfinite(existing), existing, np.nan), dtype="Int64") if n else pd.array([], dtype="Int64")
    )
    out["lateral_shortfall"] = (
        pd.array(np.where(np.isfinite(shortfall), shortfall, np.nan), dtype="Int64")
        if n
        else pd.array([], dtype="Int64")
    )
    out["manhole_connection_case"] = manhole
    out["lateral_diameter_in"] = pipes["diameter_in"]
    out["lateral_slope_in_per_ft"] = pipes["slope_in_per_ft"]
    out["lateral_below_standard"] = pipes["below"]
    out["section"] = section
    out["reason"] = reason
    out["qualifies"] = qualifies
    summary = {
        "buildings": n,
        "rear_buildings": int(rear.sum()),
        **{v: int((verdict == v).sum()) for v in VERDICTS},
        # separate_required also holds the buildings beside another (no rear building): counted apart, so the
        # rear buildings' verdicts add up to the rear buildings.
        "rear_separate_required": int(((verdict == "separate_required") & rear).sum()),
        "beside_separate_required": int(((verdict == "separate_required") & ~rear).sum()),
        "units_unknown": int((units_unknown & qualifies).sum()),
        "needing_more_laterals": int(more.sum()),
        # Fewer building sewers mapped than required, on parcels that must connect (with a laterals layer).
        "short_of_building_sewers": int(short.sum()),
        "manhole_connection_cases": int(manhole.sum()),
        "laterals_below_standard": int(pipes["below"].sum()),
    }
    return BuildingsResult(out, summary)


def _rear_buildings(
    geoms, ids, parcel_of, several, lots, parcels, parcel_geoms, streets, mains, alleys, profile, fpu, workers, given
):
    """Front and rear buildings, lot type and verdict for the buildings on ``lots`` (parcel positions)."""
    rules = profile.buildings
    n = len(geoms)
    rear = np.zeros(n, dtype=bool)
    front = np.full(n, -1, dtype=np.int64)
    verdict = np.full(n, None, dtype=object)
    lot_type = np.full(n, None, dtype=object)
    reason = np.full(n, "", dtype=object)

    counting = counting_mains(mains, profile)
    main_ids = (
        mains["main_id"].astype(str).to_numpy()
        if "main_id" in mains
        else np.char.add("mains-", np.arange(1, len(mains) + 1).astype(str))
    )[counting]
    if given is not None:  # the analysis's pairs for every parcel: the lots' rows, in the same order
        pairs = given
        mine = np.isin(given.abuts["parcel"].to_numpy(), lots)
        abuts = given.abuts[mine].reset_index(drop=True)
    else:
        pairs = street_pairs(
            streets,
            parcel_geoms[lots],
            np.asarray(mains.geometry.values)[counting],
            profile=profile,
            fpu=fpu,
            workers=workers,
        )
        abuts = pairs.abuts.assign(parcel=lots[pairs.abuts["parcel"].to_numpy()])  # back to parcel positions
    reach_polys = _ReachPolygons(streets, profile, fpu)
    names = (
        pd.Series(pairs.street_names)
        .fillna(pd.Series(np.arange(len(pairs.street_names))).astype(str).radd("#"))
        .to_numpy(object)
    )

    # Frontage: the sewered abutting street holding the parcel's main; else any sewered abutting street.
    want_main = parcels["main_id"].astype(str).to_numpy()
    want = want_main[abuts["parcel"].to_numpy()]
    held = pairs.holds.assign(main_id=main_ids[pairs.holds["main"].to_numpy()])
    cand = abuts.assign(main_id=want, sewered=pairs.sewered[abuts["row"].to_numpy()])
    cand = cand.merge(
        held[["row", "main_id"]].drop_duplicates().assign(holds_main=True), on=["row", "main_id"], how="left"
    )
    cand["holds_main"] = cand["holds_main"].fillna(False).astype(bool)
    cand = cand[cand["sewered"]].sort_values(["parcel", "holds_main", "row"], ascending=[True, False, True])
    frontage_row = cand.drop_duplicates("parcel").set_index("parcel")["row"]
    reference = np.empty(len(parcels), dtype=object)
    cx = pd.to_numeric(parcels["connection_x"], errors="coerce").to_numpy(float)
    cy = pd.to_numeric(parcels["connection_y"], errors="coerce").to_numpy(float)
    located = lots[np.isfinite(cx[lots]) & np.isfinite(cy[lots])]  # no counting main: no connection point
    reference[located] = shapely.points(cx[located], cy[located])
    with_front = frontage_row.index.to_numpy()
    if len(with_front):
        edge = elementwise(
            shapely.intersection,
            shapely.boundary(parcel_geoms[with_front]),
            reach_polys[frontage_row.to_numpy()],
            workers=workers,
        )
        ok = ~shapely.is_empty(edge)
        reference[with_front[ok]] = edge[ok]

    # Distances to the frontage; the nearest qualifying building is the front one.
    members = np.flatnonzero(several)
    lot = parcel_of[members]
    ref = reference[lot]
    valid = ~shapely.is_missing(ref) & ~shapely.is_empty(ref)
    members, lot, ref = members[valid], lot[valid], ref[valid]
    if not len(members):  # no lot has a frontage or a connection point to measure from (no counting main)
        return rear, front, verdict, lot_type, reason
    d = elementwise(shapely.distance, geoms[members], ref, workers=workers)
    order = np.lexsort((members, d, lot))
    is_first = np.r_[True, lot[order][1:] != lot[order][:-1]]
    front_of_lot = pd.Series(members[order][is_first], index=lot[order][is_first])
    lot_front = front_of_lot.reindex(lot).to_numpy()
    others = members != lot_front
    b, f, r = members[others], lot_front[others], ref[others]

    # Blocked route: centroid to the nearest point of the frontage crosses the front building.
    route = elementwise(shapely.shortest_line, shapely.centroid(geoms[b]), r, workers=workers)
    blocked = elementwise(_crosses_inside, route, geoms[f], workers=workers)
    # Behind: farther from the frontage and overlapping the front building along the frontage's direction.
    # A lot measured from its connection point: "along the frontage" is along its main there.
    main_geom = pd.Series(np.asarray(mains.geometry.values)[counting], index=main_ids)
    main_geom = main_geom[~main_geom.index.duplicated()]
    direction = _direction(r, geoms[f], main_geom.reindex(want_main[parcel_of[b]]).to_numpy(object))
    lo_b, hi_b = _extent(geoms[b], direction)
    lo_f, hi_f = _extent(geoms[f], direction)
    overlap = np.minimum(hi_b, hi_f) - np.maximum(lo_b, lo_f)
    farther = elementwise(_farther, geoms[b], geoms[f], r, workers=workers)
    is_rear = blocked | (farther & (overlap > 0))
    # The law's exception is for a building "at the rear of another", not only of the one nearest the street: a
    # building beside the front one may stand behind a second house on the lot (two houses side by side, a cottage
    # behind one). Test each such building against the others nearer the frontage; the nearest of them it stands
    # behind (the one directly ahead of it) is its front building.
    side = np.flatnonzero(~is_rear)
    if len(side):
        d_b = d[others]
        cand = pd.DataFrame({"k": side, "lot": parcel_of[b[side]], "db": d_b[side]}).merge(
            pd.DataFrame({"a": members, "lot": lot, "da": d}), on="lot"
        )
        cand = cand[
            (cand["a"].to_numpy() != b[cand["k"].to_numpy()]) & (cand["a"].to_numpy() != f[cand["k"].to_numpy()])
        ]
        cand = cand[cand["da"] < cand["db"]]
        if len(cand):
            k, a = cand["k"].to_numpy(), cand["a"].to_numpy()
            lo_a, hi_a = _extent(geoms[a], direction[k])
            behind = (np.minimum(hi_b[k], hi_a) - np.maximum(lo_b[k], lo_a) > 0) | elementwise(
                _crosses_inside, route[k], geoms[a], workers=workers
            )
            ahead = cand[behind].sort_values(["k", "da", "a"], ascending=[True, False, True]).drop_duplicates("k")
            is_rear[ahead["k"].to_numpy()] = True
            f = f.copy()
            f[ahead["k"].to_numpy()] = ahead["a"].to_numpy()

    kinds = _lot_types(abuts, names, reach_polys, len(parcels))
    found = _other_routes(abuts, pairs.sewered, names, frontage_row, parcel_geoms, alleys, profile, fpu, len(parcels))
    lot_kind = kinds[parcel_of[b]]
    route_found = found[parcel_of[b]]
    has_route = pd.notna(route_found)
    verdict_b = np.full(len(b), "separate_required", dtype=object)
    if rules.rear_building_rule.value == "main_extension":
        verdict_b = np.where(is_rear & (lot_kind == "interior"), "main_extension_required", verdict_b)
    else:
        verdict_b = np.where(is_rear & (lot_kind == "interior") & ~has_route, "may_share_if_no_route", verdict_b)

    rear[b] = is_rear
    front[b] = f
    verdict[b] = verdict_b
    lot_type[members] = kinds[parcel_of[members]]
    searched = alleys is not None and len(alleys) > 0
    reason[b] = _rear_reasons(ids[b], ids[f], is_rear, lot_kind, route_found, verdict_b, profile, searched)
    return rear, front, verdict, lot_type, reason


def _shared_sewers(rows, fronts, ids, units, required, existing, rules) -> tuple[np.ndarray, np.ndarray]:
    """The building sewers each rear building that may share adds to the whole, and the sentence saying so.

    Shared, "the whole [is] considered as one building sewer" (Fort Plain § 144-9), so the units rule counts the
    front building's units with those of every rear building sharing its sewer. The rear buildings of one front
    building are taken in layer order, each adding what the whole then needs beyond what it needed before: the
    front building's own sewers can serve a small rear building (it adds 0); five units in all need a second.
    Unknown units anywhere in the whole leave every share of it unknown.
    """
    per = rules.units_per_lateral
    frame = pd.DataFrame({"row": rows, "front": fronts, "units": units[rows], "lat": existing[rows]})
    frame = frame.sort_values(["front", "row"], kind="stable")
    front_units = units[frame["front"].to_numpy()]
    by_front = frame.groupby("front", sort=False)
    after = front_units + by_front["units"].cumsum().to_numpy()
    total = front_units + by_front["units"].transform("sum").to_numpy()
    # pandas' sum skips a missing value: a rear building of unknown units was counted as none ("(F 3, R1 0)") and
    # told it needs no building sewer of its own (a tester). Unknown anywhere, the whole is unknown.
    total[frame["units"].isna().groupby(frame["front"], sort=False).transform("max").to_numpy(bool)] = np.nan

    def need(u: np.ndarray) -> np.ndarray:
        return np.maximum(1, np.ceil(np.nan_to_num(u) / per.value)) if per.value else np.ones(len(u))

    known = np.isfinite(total)
    adds = np.where(known, need(after) - need(after - np.nan_to_num(frame["units"].to_numpy())), np.nan)
    whole_need = need(total)
    text = pd.Series("", index=frame.index, dtype=object)
    if per.value:
        f_ids = pd.Series(ids[frame["front"].to_numpy()], index=frame.index, dtype=object)
        sharers = pd.Series(ids[frame["row"].to_numpy()], index=frame.index, dtype=object)
        u = pd.Series(np.nan_to_num(frame["units"].to_numpy()), index=frame.index).map("{:g}".format)
        listed = pd.Series(joined_runs((sharers + " " + u).to_numpy(), frame["front"].to_numpy(), ", "), frame.index)
        fu = pd.Series(np.nan_to_num(front_units), index=frame.index).map("{:g}".format)
        lead = " Shared with " + f_ids + ", the whole considered as one building sewer"
        counted = (
            lead
            + " would serve "
            + pd.Series(total, index=frame.index).map("{:g}".format)
            + np.where(total == 1, " living unit (", " living units (")
            + f_ids
            + " "
            + fu
            + ", "
            + listed
            + "), which need at least "
            + pd.Series(whole_need, index=frame.index).map("{:g}".format)
            + np.where(whole_need > 1, " building sewers", " building sewer")
            + f", one for each group of {per.value} living units {per.cited}"
        )
        f_need = pd.Series(required[frame["front"].to_numpy()], index=frame.index).map("{:g}".format)
        a = pd.Series(np.nan_to_num(adds), index=frame.index).map("{:g}".format)
        verdict = np.where(
            np.nan_to_num(adds) > 0,
            ": "
            + f_ids
            + " needs "
            + f_need
            + " for its own units, so one shared building sewer is not enough and this "
            "building needs " + a + " of its own.",
            ": this building needs none of its own.",
        )
        text = pd.Series(
            np.where(
                known,
                counted + verdict,
                lead + " would serve living units that are not all known, so "
                f"the number of building sewers it needs cannot be set {per.cited}.",
            ),
            index=frame.index,
            dtype=object,
        )
        lat_total = (
            frame["lat"].groupby(frame["front"]).transform("sum").to_numpy() + existing[frame["front"].to_numpy()]
        )
        mapped = np.isfinite(lat_total) & known
        short = np.maximum(whole_need - np.nan_to_num(lat_total), 0)
        text = text + np.where(
            mapped,
            " Together they have "
            + pd.Series(np.nan_to_num(lat_total), index=frame.index).map("{:g}".format)
            + " building sewer(s) mapped"
            + np.where(short > 0, ": " + pd.Series(short, index=frame.index).map("{:g}".format) + " short.", "."),
            "",
        )
    back = np.argsort(frame.index.to_numpy())  # frame.index is the position in rows: back to rows' order
    return adds[back], text.to_numpy(object)[back]


def _crosses_inside(route: np.ndarray, front: np.ndarray) -> np.ndarray:
    """A route that meets the front building other than only along its edge (it would pass through it)."""
    return shapely.intersects(route, front) & ~shapely.touches(route, front)


def _farther(rear: np.ndarray, front: np.ndarray, frontage: np.ndarray) -> np.ndarray:
    """Each building farther from the frontage than the front building of its lot."""
    return shapely.distance(rear, frontage) > shapely.distance(front, frontage)


class _ReachPolygons:
    """Rights-of-way grown by the abut tolerance (as streets.street_pairs builds them), each made when first used.

    Only the streets that front a lot with several buildings, or meet another at a corner lot, are ever looked
    at: buffering every street of a state for them would cost more than all the rest of the assessment.
    """

    def __init__(self, streets, profile, fpu):
        m = profile.measurement
        self.geoms = np.asarray(streets.geometry.values)
        width = np.full(len(self.geoms), float(m.default_row_width_ft.value))
        if "row_width_ft" in streets.columns:
            given = pd.to_numeric(streets["row_width_ft"], errors="coerce").to_numpy(float)
            width = np.where(np.isfinite(given) & (given > 0), given, width)
        self.width = width
        self.linear = shapely.get_dimensions(self.geoms) == 1
        self.grow = m.abut_tolerance_ft.value / fpu
        self.fpu = fpu
        self.made = np.full(len(self.geoms), None, dtype=object)

    def __getitem__(self, rows: np.ndarray) -> np.ndarray:
        rows = np.asarray(rows, dtype=np.int64)
        new = distinct(rows[shapely.is_missing(self.made[rows])])
        line, area = new[self.linear[new]], new[~self.linear[new]]
        self.made[line] = shapely.buffer(
            self.geoms[line],
            self.width[line] / 2 / self.fpu + self.grow,
            cap_style="flat",
            join_style="mitre",
            mitre_limit=2,
        )
        self.made[area] = shapely.buffer(self.geoms[area], self.grow, join_style="mitre", mitre_limit=2)
        return self.made[rows]


def _direction(reference: np.ndarray, front: np.ndarray, main: np.ndarray) -> np.ndarray:
    """Unit vector along each frontage: its longest straight piece. A point reference (the connection point on
    the main) has no direction of its own: along the main there, else across the line of sight from it to the
    front building.

    Taken from the frontage's first and last coordinate, it was mostly no direction at all (the frontage, cut from
    the lot's boundary, begins and ends at the same corner of it), and then the x axis: a lot on a north-south
    street, or measured from a point, had a building straight behind another called beside it.
    """
    n = len(reference)
    vec = np.zeros((n, 2))
    parts, owner = shapely.get_parts(reference, return_index=True)
    coords, part = shapely.get_coordinates(parts, return_index=True)
    if len(coords) > 1:
        same = part[1:] == part[:-1]
        step = (coords[1:] - coords[:-1])[same]
        whose = owner[part[1:][same]]
        if len(whose):
            longest = pd.DataFrame({"r": whose, "len": np.hypot(step[:, 0], step[:, 1])}).groupby("r")["len"].idxmax()
            vec[longest.index.to_numpy()] = step[longest.to_numpy()]
    point = np.hypot(vec[:, 0], vec[:, 1]) == 0
    if point.any():
        centre = shapely.centroid(front[point])
        at = shapely.point_on_surface(reference[point])
        sight = np.stack([shapely.get_x(centre) - shapely.get_x(at), shapely.get_y(centre) - shapely.get_y(at)], axis=1)
        across = np.stack([-sight[:, 1], sight[:, 0]], axis=1)
        line = main[point]
        has = ~shapely.is_missing(line) & ~shapely.is_empty(line) & (shapely.get_dimensions(line) == 1)
        tangent = np.zeros_like(across)
        if has.any():
            where = shapely.line_locate_point(line[has], at[has])
            length = shapely.length(line[has])
            step = np.maximum(length * 1e-3, 1e-6)
            p0 = shapely.line_interpolate_point(line[has], np.clip(where - step, 0, length))
            p1 = shapely.line_interpolate_point(line[has], np.clip(where + step, 0, length))
            tangent[has] = np.stack([shapely.get_x(p1) - shapely.get_x(p0), shapely.get_y(p1) - shapely.get_y(p0)], 1)
        good = np.isfinite(tangent).all(axis=1) & (np.hypot(tangent[:, 0], tangent[:, 1]) > 0)
        vec[point] = np.where(good[:, None], tangent, across)
    vec = np.where(np.isfinite(vec), vec, 0.0)
    norm = np.hypot(vec[:, 0], vec[:, 1])
    return np.where(norm[:, None] > 0, vec / np.where(norm > 0, norm, 1.0)[:, None], [1.0, 0.0])


def _extent(geoms: np.ndarray, direction: np.ndarray):
    """Min and max of each geometry's vertices projected on its direction vector."""
    coords, which = shapely.get_coordinates(geoms, return_index=True)
    proj = (coords * direction[which]).sum(axis=1)
    frame = pd.DataFrame({"g": which, "p": proj}).groupby("g")["p"]
    return frame.min().reindex(range(len(geoms))).to_numpy(), frame.max().reindex(range(len(geoms))).to_numpy()


def _lot_types(abuts: pd.DataFrame, names: np.ndarray, reach: np.ndarray, n_parcels: int) -> np.ndarray:
    """interior (one street), corner (two streets whose rights-of-way meet) or through."""
    a = abuts.assign(name=names[abuts["row"].to_numpy()])
    # An alley behind a lot is a route, not frontage on a second street.
    a = a[~a["name"].astype(str).str.contains(ALLEY_NAME, case=False, regex=True)]
    distinct = a.drop_duplicates(["parcel", "name"])
    streets_per = distinct.groupby("parcel").size().reindex(range(n_parcels), fill_value=0).to_numpy()
    kind = np.where(streets_per <= 1, "interior", "through").astype(object)
    multi = distinct[streets_per[distinct["parcel"].to_numpy()] >= 2]
    if len(multi):
        pairs = multi.merge(multi, on="parcel")
        pairs = pairs[pairs["name_x"] < pairs["name_y"]]
        meet = shapely.intersects(reach[pairs["row_x"].to_numpy()], reach[pairs["row_y"].to_numpy()])
        corner = pairs.loc[meet, "parcel"].unique()
        kind[corner] = "corner"
    return kind


def _other_routes(abuts, sewered, names, frontage_row, parcel_geoms, alleys, profile, fpu, n_parcels) -> np.ndarray:
    """What was found that a separate building sewer could reach a rear building through, per parcel (else None).

    The first found, in the order: an adjoining feature of the alleys layer of a kind the profile lists, a public
    alley of the streets layer, a second sewered street.
    """
    kinds = list(profile.buildings.other_routes.value)
    found = []
    if not kinds:
        return np.full(n_parcels, None, dtype=object)
    # An adjoining alley, court, yard or driveway of a kind the profile lists.
    if alleys is not None and len(alleys):
        kind = (
            alleys["route_kind"].fillna("alley").astype(str).str.strip().str.lower().to_numpy()
            if "route_kind" in alleys
            else np.full(len(alleys), "alley")
        )
        alley_ids = (
            alleys["alley_id"].astype(str).to_numpy(object)
            if "alley_id" in alleys
            else np.char.add("alleys-", np.arange(1, len(alleys) + 1).astype(str)).astype(object)
        )
        usable = np.flatnonzero(np.isin(kind, kinds))
        if len(usable):
            tol = profile.measurement.abut_tolerance_ft.value / fpu
            tree = shapely.STRtree(np.asarray(alleys.geometry.values)[usable])
            p, a = tree.query(parcel_geoms, predicate="dwithin", distance=tol)
            text = "an adjoining " + pd.Series(kind[usable[a]], dtype=object) + " (" + alley_ids[usable[a]] + ")"
            found.append(pd.DataFrame({"parcel": p, "text": text.to_numpy(object)}))
    # A public alley in the streets layer (named as one) that the parcel abuts.
    if "alley" in kinds:
        named = pd.Series(names[abuts["row"].to_numpy()], dtype=object).astype(str)
        alley = named.str.contains(ALLEY_NAME, case=False, regex=True).to_numpy()
        found.append(
            pd.DataFrame(
                {
                    "parcel": abuts["parcel"].to_numpy()[alley],
                    "text": ("the adjoining " + named[alley]).to_numpy(object),
                }
            )
        )
    # A second sewered street.
    front_name = pd.Series(names[frontage_row.to_numpy()], index=frontage_row.index)
    a = abuts[sewered[abuts["row"].to_numpy()]]
    a = a.assign(name=names[a["row"].to_numpy()], front=front_name.reindex(a["parcel"]).to_numpy())
    second = a[a["name"] != a["front"]]
    found.append(
        pd.DataFrame(
            {
                "parcel": second["parcel"].to_numpy(),
                "text": ("frontage on a second sewered street, " + second["name"].astype(str)).to_numpy(object),
            }
        )
    )
    out = np.full(n_parcels, None, dtype=object)
    table = pd.concat(found, ignore_index=True).drop_duplicates("parcel")
    out[table["parcel"].to_numpy()] = table["text"].to_numpy(object)
    return out


def _kinds_text(kinds: list[str]) -> str:
    """The kinds as a list in words: alley, court, yard or driveway."""
    if len(kinds) <= 1:
        return "".join(kinds)
    return ", ".join(kinds[:-1]) + " or " + kinds[-1]


def _looked_for(profile: Profile, searched: bool) -> str:
    """What was looked for as another route and not found, said plainly: the data shows only what was drawn."""
    kinds = list(profile.buildings.other_routes.value)
    plural = {"alley": "alleys", "court": "courts", "yard": "yards", "driveway": "driveways"}
    parts = [
        f"no {_kinds_text(kinds)} of the alleys layer adjoins the lot"
        if searched
        else f"no alleys layer was given, so adjoining {_kinds_text([plural.get(k, k) for k in kinds])} "
        "were not looked for"
    ]
    if "alley" in kinds:
        parts.append("no street named as an alley adjoins it")
    parts.append("it fronts no second sewered street")
    return "; ".join(parts)


def _rear_reasons(b_ids, f_ids, is_rear, lot_kind, route_found, verdict, profile, searched) -> np.ndarray:
    rules = profile.buildings
    cited = rules.rear_building_rule.cited
    side = (
        pd.Series(b_ids, dtype=object)
        + " stands beside "
        + pd.Series(f_ids, dtype=object)
        + f" (not at its rear): each building needs its own building sewer {rules.separate_building_sewer.cited}."
    )
    base = (
        pd.Series(b_ids, dtype=object)
        + " stands at the rear of "
        + pd.Series(f_ids, dtype=object)
        + " on "
        + np.where(lot_kind == "interior", "an interior lot", "a " + pd.Series(lot_kind).astype(str) + " lot")
    )
    # The law's own words for its condition (Fort Plain "no private sewer", Poughkeepsie "no sewer"), never one
    # paraphrase printed under every section.
    law = rules.rear_building_rule.quote.strip().rstrip(".")
    share = (
        ". Looked for another route for its own building sewer and found none mapped: "
        f"{_looked_for(profile, searched)}. "
        f"The law {cited}: \u201c\u2026{law}.\u201d The map shows only what was drawn, so the reviewer "
        "confirms this on the ground."
        + (f" {rules.rear_building_note.value}" if rules.rear_building_note.value else "")
    )
    via = "; found " + pd.Series(route_found, dtype=object).fillna("").astype(str)
    tail = np.select(
        [verdict == "may_share_if_no_route", verdict == "main_extension_required", pd.notna(route_found)],
        [
            share,
            f"; the sewer main must be extended so that each building has its own lateral {cited}.",
            (via + f": a separate building sewer can reach it that way, so it needs its own {cited}.").to_numpy(object),
        ],
        np.where(
            lot_kind != "interior",
            # Wappinger (§ 196-18D) has no exception to lose: it lets no building share, on any lot.
            f"; the law lets no building share another's building sewer, so it needs its own {cited}."
            if rules.rear_building_rule.value == "main_extension"
            else f"; the exception is for interior lots only, so it needs its own building sewer {cited}.",
            f"; it needs its own building sewer {cited}.",
        ),
    )
    return np.where(is_rear, (base + pd.Series(tail)).to_numpy(object), side.to_numpy(object))


def _classes(parcels: gpd.GeoDataFrame) -> tuple[np.ndarray, pd.Series]:
    """Each parcel's property class as a code into a short Series of the distinct classes (text, stripped).

    A town has a few dozen classes and a million parcels: tests on the class run once per distinct class, and
    their answers are spread to the parcels by code.
    """
    if "property_class" not in parcels.columns:
        return np.zeros(len(parcels), dtype=np.int64), pd.Series([""], dtype=object)
    text = parcels["property_class"].astype(str).str.strip().to_numpy(object)
    codes, uniques = pd.factorize(text, use_na_sentinel=False)
    return codes, pd.Series(np.asarray(uniques, dtype=object), dtype=object)


def _units(out, parcels, parcel_of, qualifies, count, rules, parcel_classes, dwellings):
    """Living units: the building's, else the parcel's (when it has one qualifying building), else by class; a
    building of a class not in ``dwellings`` (``discharges.residential_classes``) holds none."""
    n = len(out)
    units = pd.to_numeric(out["units"], errors="coerce").to_numpy(float) if "units" in out else np.full(n, np.nan)
    source = np.where(np.isfinite(units), "building", None).astype(object)
    p = np.clip(parcel_of, 0, None)
    sole = qualifies & (count[p] == 1)
    if "units" in parcels.columns:
        pu = pd.to_numeric(parcels["units"], errors="coerce").to_numpy(float)[p]
        use = ~np.isfinite(units) & sole & np.isfinite(pu)
        units = np.where(use, pu, units)
        source = np.where(use, "parcel", source)
    codes, classes = parcel_classes
    klass = codes[p] if len(parcels) else np.zeros(n, dtype=np.int64)
    table = rules.class_units.value
    by_class = classes.map(table).to_numpy(float)[klass]
    use = ~np.isfinite(units) & sole & np.isfinite(by_class)
    units = np.where(use, by_class, units)
    source = np.where(use, "property class", source)
    residential = _residential(classes, dwellings)[klass]
    # Non-residential buildings hold no living units; residential ones without a count are unknown.
    nonres = ~np.isfinite(units) & ~residential & (parcel_of >= 0)
    units = np.where(nonres, 0.0, units)
    source = np.where(nonres, "non-residential class", source)
    unknown = ~np.isfinite(units)
    return units, source, unknown


def _duty_to_connect(parcels: gpd.GeoDataFrame, parcel_of: np.ndarray, profile: Profile) -> np.ndarray:
    """Each building's parcel must connect, or is connected (the mandate analysis's ``status``), so a building sewer
    is owed. Parcels without a status (not from the analysis), or whose statuses no distance of the law decided (the
    town left ``mandate.distance_ft`` unset: a search distance found the connection points), are taken to owe one."""
    if "status" not in parcels.columns or profile.mandate.distance_ft.value is None:
        return np.ones(len(parcel_of), dtype=bool)
    owes = parcels["status"].isin(["connected", "mandated"]).to_numpy(bool)
    return (parcel_of >= 0) & owes[np.clip(parcel_of, 0, None)] if len(parcels) else np.zeros(len(parcel_of), bool)


def _units_unknown_why(rows, parcels, parcel_of, count, rules, parcel_classes) -> np.ndarray:
    """Why the living units of the buildings at ``rows`` are unknown, in words: a parcel's count (given, or by its
    class) is for all its buildings and says not how many each holds; else the class needs a count."""
    n = len(rows)
    if not len(parcels):
        return np.full(n, "property class needs a count", dtype=object)
    p = np.clip(parcel_of[rows], 0, None)
    many = count[p] >= 2
    parcel_units = (
        pd.to_numeric(parcels["units"], errors="coerce").to_numpy(float)[p]
        if "units" in parcels.columns
        else np.full(n, np.nan)
    )
    codes, classes = parcel_classes
    by_class = classes.map(rules.class_units.value).to_numpy(float)[codes[p]]
    k = pd.Series(count[p]).astype(str)
    split = ", and the data does not say how many each holds: give each building its units in the buildings layer"
    given = "the parcel's " + pd.Series(parcel_units).map("{:g}".format) + " are for its " + k + " buildings" + split
    klass = (
        "property class "
        + pd.Series(classes.to_numpy(object)[codes[p]], dtype=object)
        + " gives "
        + pd.Series(by_class).map("{:g}".format)
        + " for the whole parcel, with its "
        + k
        + " buildings"
        + split
    )
    return np.select(
        [many & np.isfinite(parcel_units), many & np.isfinite(by_class)],
        [given.to_numpy(object), klass.to_numpy(object)],
        "property class needs a count",
    ).astype(object)


def _existing_laterals(geoms, laterals, profile, fpu) -> np.ndarray:
    tol = profile.network.snap_tolerance_ft.value / fpu
    tree = shapely.STRtree(np.asarray(laterals.geometry.values))
    b, _ = tree.query(geoms, predicate="dwithin", distance=tol)
    return np.bincount(b, minlength=len(geoms)).astype(float)


def _residential(classes: pd.Series, dwellings: list[str]) -> np.ndarray:
    """Each distinct class is a dwelling's (the profile's ``discharges.residential_classes``: 2xx, 411 apartments)."""
    return classes.str.startswith(tuple(dwellings) or ("\0",)).to_numpy(bool)


def _manhole_connection(
    out, parcels, parcel_of, qualifies, count, rules, parcel_classes, dwellings
) -> tuple[np.ndarray, np.ndarray]:
    """Cases for the administrative body (§ 144-16), and what each is: an institution or a complex of buildings.

    A class in ``manhole_connection_classes`` (schools, hospitals, institutions, public buildings) is a case with
    one building; a class in ``complex_classes`` (industrial, commercial) only when at least
    ``commercial_complex_min_buildings`` occupied buildings stand on the parcel: one building is no complex. A
    dwelling's class (``dwellings``: 411 apartments, though it starts with the 4 of commercial) is never one.
    """
    n = len(out)
    why = np.full(n, "", dtype=object)
    if "property_class" not in parcels.columns or not (
        rules.manhole_connection_classes.value or rules.complex_classes.value
    ):
        return np.zeros(n, dtype=bool), why
    p = np.clip(parcel_of, 0, None)
    codes, classes = parcel_classes
    klass = codes[p]
    institution = (
        qualifies & classes.str.startswith(tuple(rules.manhole_connection_classes.value) or ("\0",)).to_numpy()[klass]
    )
    complex_min = rules.commercial_complex_min_buildings.value
    in_complex = (
        qualifies
        & (
            classes.str.startswith(tuple(rules.complex_classes.value) or ("\0",)).to_numpy()
            & ~_residential(classes, dwellings)
        )[klass]
        & (count[p] >= (complex_min or np.inf))
    )
    # The sentences only for the buildings that are a case.
    rows = np.flatnonzero(institution | in_complex)
    label = " (property class " + pd.Series(classes.to_numpy(object)[klass[rows]], dtype=object) + ")"
    complex_text = (
        "One of a complex of " + pd.Series(count[p[rows]]).astype(str) + " industrial or commercial buildings" + label
    )
    why[rows] = np.where(
        institution[rows],
        ("A school, hospital, similar institution or public building" + label).to_numpy(object),
        np.where(in_complex[rows], complex_text.to_numpy(object), ""),
    )
    return institution | in_complex, why


def _lateral_sizes(geoms, laterals, profile, fpu) -> dict[str, np.ndarray]:
    """Each building's laterals against the least diameter and slope (§ 144-11B, § 196-18F), where data allows.

    A lateral belongs to the buildings within the snap tolerance of it. Its slope is the fall from the end nearer the
    building to the other end, over its length, in inches per foot (negative: it runs uphill to the main). A
    building reports its smallest lateral and its flattest, and a sentence for each shortfall.
    """
    rules = profile.buildings
    n = len(geoms)
    out = {
        "diameter_in": np.full(n, np.nan),
        "slope_in_per_ft": np.full(n, np.nan),
        "below": np.zeros(n, dtype=bool),
        "finding": np.full(n, "", dtype=object),
        "section": np.full(n, "", dtype=object),
    }
    min_d, min_s = rules.building_sewer_min_diameter_in, rules.building_sewer_min_slope_in_per_ft
    if laterals is None or not len(laterals) or (min_d.value is None and min_s.value is None):
        return out
    lat_geoms = np.asarray(laterals.geometry.values)
    tol = profile.network.snap_tolerance_ft.value / fpu
    b, lat = shapely.STRtree(lat_geoms).query(geoms, predicate="dwithin", distance=tol)
    if not len(b):
        return out

    def number(name: str) -> np.ndarray:
        if name not in laterals.columns:
            return np.full(len(laterals), np.nan)
        return pd.to_numeric(laterals[name], errors="coerce").to_numpy(float)

    diameter = number("diameter_in")[lat]
    first, last = number("us_invert_ft")[lat], number("ds_invert_ft")[lat]
    lines = lat_geoms[lat]
    start = shapely.get_point(shapely.get_geometry(lines, 0), 0)
    end = shapely.get_point(shapely.get_geometry(lines, -1), -1)
    starts_at_building = shapely.distance(start, geoms[b]) <= shapely.distance(end, geoms[b])
    fall_ft = np.where(starts_at_building, first - last, last - first)
    length_ft = shapely.length(lines) * fpu
    slope = np.where(length_ft > 0, fall_ft / np.where(length_ft > 0, length_ft, 1.0) * 12.0, np.nan)
    ids = (
        laterals["lateral_id"].astype(str).to_numpy(object)
        if "lateral_id" in laterals
        else np.char.add("laterals-", np.arange(1, len(laterals) + 1).astype(str)).astype(object)
    )[lat]

    eps = 1e-9
    small = np.isfinite(diameter) & (min_d.value is not None) & (diameter < (min_d.value or 0) - eps)
    flat = np.isfinite(slope) & (min_s.value is not None) & (slope < (min_s.value or 0) - eps)
    text = np.full(len(b), "", dtype=object)
    if small.any():
        text[small] = (
            "Its building sewer "
            + pd.Series(ids[small], dtype=object)
            + " is "
            + pd.Series(diameter[small]).map("{:g}".format)
            + f" in, less than the {min_d.value:g} in {min_d.citation} requires."
        ).to_numpy(object)
    if flat.any():
        text[flat] = (
            (
                pd.Series(text[flat], dtype=object)
                + (
                    " Its building sewer "
                    + pd.Series(ids[flat], dtype=object)
                    + " falls "
                    + pd.Series(slope[flat]).map("{:.3f}".format)
                    + f" in per ft, less than the {min_s.value:g} in per ft {min_s.citation} requires"
                    + np.where(slope[flat] < 0, " (it runs uphill to the main).", ".")
                )
            )
            .str.strip()
            .to_numpy(object)
        )
    pairs = pd.DataFrame({"b": b, "d": diameter, "s": slope, "bad": small | flat, "text": text})
    per = pairs.groupby("b").agg(d=("d", "min"), s=("s", "min"), bad=("bad", "any"))
    rows = per.index.to_numpy()
    out["diameter_in"][rows] = per["d"].to_numpy()
    out["slope_in_per_ft"][rows] = np.round(per["s"].to_numpy(), 4)
    out["below"][rows] = per["bad"].to_numpy()
    bad = pairs[pairs["bad"]]
    if len(bad):
        joined = bad.groupby("b")["text"].agg(" ".join)
        out["finding"][joined.index.to_numpy()] = joined.to_numpy(object)
        sections = np.where(small, min_d.citation, min_s.citation)
        first_section = pd.Series(sections[pairs["bad"].to_numpy()], index=bad.index).groupby(bad["b"]).first()
        out["section"][first_section.index.to_numpy()] = first_section.to_numpy(object)
    return out


def _more_reasons(
    reason, more, unknown_rule, manhole, manhole_why, units, required, existing, shortfall, rules
) -> np.ndarray:
    """``reason`` with the units, unknown-units and manhole sentences added, each only where it applies.

    ``unknown_rule`` is why each building's living units are unknown, empty where they are known."""
    out = np.asarray(reason, dtype=object).copy()
    per = rules.units_per_lateral

    def add(where: np.ndarray, text) -> None:
        out[where] = (pd.Series(out[where], dtype=object) + text).str.strip().to_numpy(object)

    rows = np.flatnonzero(more)
    if len(rows):
        u = pd.Series(np.nan_to_num(units[rows])).map("{:g}".format)
        r = pd.Series(np.nan_to_num(required[rows])).map("{:g}".format)
        lots = (
            (
                " " + u + " living units need at least " + r + f" building sewers, one for each group of {per.value} "
                f"living units {per.cited}."
            )
            if per.value
            else pd.Series("", index=u.index)
        )
        have, short = np.isfinite(existing[rows]), np.nan_to_num(shortfall[rows])
        lots = lots + np.where(
            have & (short > 0),
            " It has "
            + pd.Series(np.nan_to_num(existing[rows])).map("{:g}".format)
            + ": "
            + pd.Series(short).map("{:g}".format)
            + " short.",
            "",
        )
        add(rows, lots)
    rows = np.flatnonzero(unknown_rule != "")
    if len(rows):
        add(
            rows,
            " Living units unknown ("
            + pd.Series(unknown_rule[rows], dtype=object)
            + f"): the number of building sewers required cannot be set {per.cited}.",
        )
    rows = np.flatnonzero(manhole)
    if len(rows):
        cited = rules.manhole_connection_classes.cited
        body = rules.manhole_connection_decided_by.value or "the municipality"
        add(
            rows,
            " "
            + pd.Series(manhole_why[rows], dtype=object)
            + f": a case for {body} to determine if and where its building sewer connects to the public sewer "
            f"through a manhole {cited}.",
        )
    return out
