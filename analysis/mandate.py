"""The connection mandate: which occupied properties must connect to the public sewer, and why.

For every parcel, vectorised over STRtrees (no Python loop over parcels):

1. ``distance_ft``: shortest distance from the property line (the parcel polygon, so 0 when a main crosses it)
   to the nearest *counting* main (public sanitary; combined, private and force mains by profile setting; storm
   and abandoned mains never), for every parcel, out-of-range ones included. With it ``main_id``, the connection
   point on the main and the measuring line from the property line to it.
2. ``abuts_sewered_street``: the parcel comes within ``abut_tolerance_ft`` of a street right-of-way in which a
   counting main lies: runs inside it for at least ``main_in_street_min_row_widths`` times its width, so a main
   that merely crosses the street or ends in an intersection does not count. Right-of-way polygons are
   used as given; centrelines are buffered by half their ``row_width_ft`` (else the profile default).
   Where the profile requires it (§ 144-4, § 168-22.2G), the main that decides is "said public sewer": a main
   lying in a street the parcel abuts. When the nearest main is not one, the nearest in-range main that is
   decides, and ``distance_ft`` / ``main_id`` describe that main.
3. ``occupied``: the parcel's own occupied attribute, else a building on it (its representative point inside the
   parcel) that is marked occupied or is at least ``min_occupied_building_sqft``, else the property class.
4. ``status`` in order: connected, no_public_sewer, unoccupied, out_of_range, in_range_not_abutting, mandated;
   with ``rule``, ``section`` and a ``reason`` sentence a clerk can read, and ``deadline`` given a notice date.
"""

from __future__ import annotations

import datetime as dt
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely
from pyproj import CRS

from analysis.errors import AnalysisError
from analysis.profiles import Profile

STATUSES = ("connected", "mandated", "in_range_not_abutting", "out_of_range", "unoccupied", "no_public_sewer")
CHUNK = 20_000


@dataclass(frozen=True)
class MandateResult:
    """Parcels with their classification, the measuring lines as evidence, and a summary."""

    parcels: gpd.GeoDataFrame
    measuring_lines: gpd.GeoDataFrame
    summary: dict = field(default_factory=dict)


def analyze_mandates(
    parcels: gpd.GeoDataFrame,
    mains: gpd.GeoDataFrame,
    *,
    profile: Profile,
    streets: gpd.GeoDataFrame | None = None,
    buildings: gpd.GeoDataFrame | None = None,
    notice_date: dt.date | None = None,
    notice_reason: str | None = None,
    workers: int | None = None,
) -> MandateResult:
    """Classify every parcel under the profile's connection mandate.

    Inputs are normalised layers (``layers.read.load_layers``) in one projected CRS: parcels with
    ``parcel_id`` (and optionally ``connected``, ``occupied``, ``property_class``), mains with optional
    ``main_id``, ``sewer_type``, ``ownership``, ``status``. The input frames are not changed.

    Examples
    --------
    >>> from shapely.geometry import box, LineString
    >>> from analysis.profiles import load_profile
    >>> crs = "EPSG:2260"
    >>> parcels = gpd.GeoDataFrame({"parcel_id": ["A", "B"], "occupied": [True, True]},
    ...     geometry=[box(0, 100, 50, 200), box(60, 201, 110, 301)], crs=crs)
    >>> mains = gpd.GeoDataFrame({"main_id": ["M-1"]}, geometry=[LineString([(-100, 0), (300, 0)])], crs=crs)
    >>> streets = gpd.GeoDataFrame({"row_width_ft": [200.0]}, geometry=[LineString([(-100, 0), (300, 0)])], crs=crs)
    >>> r = analyze_mandates(parcels, mains, streets=streets, profile=load_profile("fort-plain"))
    >>> r.parcels[["parcel_id", "distance_ft", "status"]].to_string(index=False)
    'parcel_id  distance_ft        status\\n        A        100.0      mandated\\n        B        201.0  out_of_range'
    """
    _check_inputs(parcels, mains, streets, buildings, profile)
    check_notice(profile, notice_date, notice_reason)
    crs = CRS(parcels.crs)
    fpu = _feet_per_unit(crs)
    threshold_ft = _threshold(profile)
    workers = workers or min(4, os.cpu_count() or 1)
    m = profile.measurement

    counting = _counting_mains(mains, profile)
    main_geoms = np.asarray(mains.geometry.values)[counting]
    main_ids = np.asarray(mains["main_id"].astype(str))[counting] if "main_id" in mains else np.array(
        [f"mains-{i + 1}" for i in np.flatnonzero(counting)], dtype=object)
    parcel_geoms = np.asarray(parcels.geometry.values)
    n = len(parcels)

    main_index = np.full(n, -1, dtype=np.int64)
    distance = np.full(n, np.nan)
    tree = None
    if len(main_geoms):
        tree = shapely.STRtree(main_geoms)
        main_index, distance = _nearest(tree, parcel_geoms, threshold_ft / fpu if threshold_ft else None, workers)

    abuts = np.zeros(n, dtype=bool)
    street_of_main = np.full(n, None, dtype=object)
    has_streets = streets is not None and len(streets) > 0
    if has_streets and tree is not None:
        rows = _rights_of_way(streets, profile, fpu)
        pr, mr, sewered_row = _street_pairs(rows, parcel_geoms, main_geoms, m.abut_tolerance_ft.value / fpu,
                                            m.main_in_street_min_row_widths.value)
        abuts[pr["parcel"][sewered_row[pr["row"]]].unique()] = True
        if profile.mandate.requires_abutting_street.value and threshold_ft is not None:
            main_index, distance, street_of_main = _said_sewer(
                tree, parcel_geoms, main_geoms, main_index, distance, pr, mr,
                (threshold_ft + m.distance_tolerance_ft.value) / fpu, rows["street_name"].to_numpy(object))
    distance_ft = distance * fpu

    occupied, occupied_source = _occupancy(parcels, buildings, profile, fpu)
    connected = _connected(parcels)
    lines = _measuring_lines(parcel_geoms, main_geoms, main_index, workers)
    connection = shapely.get_point(lines, -1)

    in_range = (distance_ft <= threshold_ft + m.distance_tolerance_ft.value) if threshold_ft is not None \
        else np.zeros(n, bool)
    needs_abut = profile.mandate.requires_abutting_street.value
    needs_occupied = profile.mandate.requires_occupied_building.value
    status = np.select(
        [connected, main_index < 0, needs_occupied & ~occupied, ~in_range, needs_abut & ~abuts],
        ["connected", "no_public_sewer", "unoccupied", "out_of_range", "in_range_not_abutting"],
        default="mandated",
    ).astype(object)

    has_main = main_index >= 0
    out = parcels.copy()
    out["distance_ft"] = np.round(distance_ft, 2)
    out["main_id"] = np.where(has_main, main_ids[np.clip(main_index, 0, None)] if len(main_ids) else None, None)
    out["abuts_sewered_street"] = abuts if has_streets else pd.array([pd.NA] * n, dtype="boolean")
    out["occupied"] = occupied
    out["occupied_source"] = occupied_source
    out["connected_flag"] = connected
    out["status"] = status
    out["street_name_main"] = street_of_main
    out["connection_x"] = np.where(has_main, shapely.get_x(connection), np.nan)
    out["connection_y"] = np.where(has_main, shapely.get_y(connection), np.nan)
    _explain(out, profile, threshold_ft, notice_date, notice_reason, parcels.attrs.get("connected_source"))

    measuring = gpd.GeoDataFrame(
        {"parcel_id": out["parcel_id"].to_numpy()[has_main], "main_id": out["main_id"].to_numpy()[has_main],
         "distance_ft": out["distance_ft"].to_numpy()[has_main], "status": status[has_main]},
        geometry=lines[has_main], crs=parcels.crs, index=parcels.index[has_main],
    )
    counts = {s: int((status == s).sum()) for s in STATUSES}
    summary = {
        "profile": profile.id, "profile_version": profile.version, "municipality": profile.municipality,
        "parcels": n, "counts": counts, "distance_ft": threshold_ft,
        "distance_section": profile.mandate.distance_ft.citation, "measuring_crs": crs.to_string(),
        "notice_date": notice_date.isoformat() if notice_date else None,
        "notice_period_days": profile.mandate.notice_period_days.value,
        "counting_mains": int(counting.sum()), "mains": len(mains),
    }
    return MandateResult(parcels=out, measuring_lines=measuring, summary=summary)


def _check_inputs(parcels, mains, streets, buildings, profile: Profile) -> None:
    if parcels.crs is None or not CRS(parcels.crs).is_projected:
        raise AnalysisError("Parcels must be in a projected CRS before measuring (layers.read.load_layers "
                            "reprojects them).")
    for name, frame in (("mains", mains), ("streets", streets), ("buildings", buildings)):
        if frame is not None and not CRS(frame.crs).equals(CRS(parcels.crs)):
            raise AnalysisError(f"{name} are in {frame.crs}, parcels in {parcels.crs}: reproject both to one CRS.")
    if "parcel_id" not in parcels.columns:
        raise AnalysisError("Parcels have no parcel_id column.")
    if profile.mandate.requires_abutting_street.value and (streets is None or len(streets) == 0):
        rule = profile.mandate.requires_abutting_street
        raise AnalysisError(
            f"The {profile.id} profile applies the abutting-street test of {rule.section} (\"{rule.quote}\"), "
            "which needs a streets layer (centrelines or right-of-way polygons). Add a 'streets' layer to the data "
            "or give one with --streets PATH."
        )
    if profile.mandate.requires_occupied_building.value and buildings is None and not (
        {"occupied", "property_class"} & set(parcels.columns)
    ):
        rule = profile.mandate.requires_occupied_building
        raise AnalysisError(
            f"The occupancy test of {rule.section} needs a buildings layer, or an occupied or property_class "
            "column on the parcels; none was given. Add a 'buildings' layer or map a column with "
            "--map parcels.occupied=COLUMN."
        )


def _threshold(profile: Profile) -> float | None:
    rule = profile.mandate.distance_ft
    if rule.value is None:
        raise AnalysisError(
            f"The {profile.id} profile has no mandate distance: {rule.section} leaves it to the municipality "
            f"({rule.note}) Set it with --set mandate.distance_ft=N (feet)."
        )
    return float(rule.value)


def _feet_per_unit(crs: CRS) -> float:
    return crs.axis_info[0].unit_conversion_factor / (1200 / 3937)


def _counting_mains(mains: gpd.GeoDataFrame, profile: Profile) -> np.ndarray:
    """Which mains are a public sewer a parcel can be required to connect to, by the profile's sewer rules."""
    s = profile.sewers
    n = len(mains)

    def column(name: str) -> np.ndarray:
        return mains[name].to_numpy(object) if name in mains.columns else np.full(n, None, dtype=object)

    kind, owner, status = column("sewer_type"), column("ownership"), column("status")
    ok = pd.isna(kind) | (kind == "sanitary")
    if s.count_combined.value:
        ok |= kind == "combined"
    if s.count_force_mains.value:
        ok |= kind == "force"
    if not s.count_private.value:
        ok &= owner != "private"
    ok &= ~np.isin(status, ["abandoned", "proposed"])
    geoms = np.asarray(mains.geometry.values)
    return ok & ~(shapely.is_missing(geoms) | shapely.is_empty(geoms))


def _chunks(n: int) -> list[slice]:
    return [slice(i, min(i + CHUNK, n)) for i in range(0, n, CHUNK)]


def _nearest(tree: shapely.STRtree, geoms: np.ndarray, near: float | None, workers: int):
    """Index of and distance to the nearest tree geometry for every input, searched near first, then far.

    The bounded search (``max_distance``) answers most parcels of a sewered town cheaply; only the rest are searched
    without a bound. Chunks run on a thread pool: shapely releases the GIL.
    """
    n = len(geoms)
    index = np.full(n, -1, dtype=np.int64)
    distance = np.full(n, np.nan)

    def run(part: slice, max_distance: float | None, subset: np.ndarray | None = None) -> None:
        targets = geoms[part] if subset is None else geoms[subset[part]]
        (i_in, i_tree), d = tree.query_nearest(targets, max_distance=max_distance, return_distance=True,
                                               all_matches=False)
        rows = np.arange(n)[part][i_in] if subset is None else subset[part][i_in]
        index[rows] = i_tree
        distance[rows] = d

    with ThreadPoolExecutor(workers) as pool:
        if near is not None:
            list(pool.map(lambda p: run(p, near * 1.0001 + 1e-9), _chunks(n)))
        rest = np.flatnonzero(index < 0)
        list(pool.map(lambda p: run(p, None, rest), _chunks(len(rest))))
    return index, distance


def _rights_of_way(streets: gpd.GeoDataFrame, profile: Profile, fpu: float) -> pd.DataFrame:
    """Right-of-way polygons: polygons as given, centrelines buffered by half their width."""
    geoms = np.asarray(streets.geometry.values)
    linear = np.isin(shapely.get_type_id(geoms), [1, 2, 5])
    width_ft = np.full(len(geoms), float(profile.measurement.default_row_width_ft.value))
    if "row_width_ft" in streets.columns:
        given = pd.to_numeric(streets["row_width_ft"], errors="coerce").to_numpy(float)
        width_ft = np.where(np.isfinite(given) & (given > 0), given, width_ft)
    polygons = geoms.copy()
    polygons[linear] = shapely.buffer(geoms[linear], width_ft[linear] / 2 / fpu)
    names = streets["street_name"].astype(object).where(streets["street_name"].notna(), None) \
        if "street_name" in streets.columns else pd.Series([None] * len(geoms))
    return pd.DataFrame({"geometry": polygons, "street_name": names.to_numpy(object), "width": width_ft / fpu})


def _street_pairs(rows: pd.DataFrame, parcels: np.ndarray, mains: np.ndarray, abut_tol: float,
                  min_row_widths: float):
    """Parcel-abuts-street and main-lies-in-street pairs, by integer positions, and which streets are sewered.

    ``mr`` carries the length of each main inside each street, longest first, so the street a main runs along
    is named before one it only touches.
    """
    polys = rows["geometry"].to_numpy(object)
    row_tree = shapely.STRtree(polys)
    p_idx, r_idx = row_tree.query(parcels, predicate="dwithin", distance=abut_tol)
    m_idx, mr_idx = row_tree.query(mains, predicate="intersects")
    inside = shapely.length(shapely.intersection(mains[m_idx], polys[mr_idx]))
    keep = inside >= min_row_widths * rows["width"].to_numpy(float)[mr_idx]
    mr = pd.DataFrame({"main": m_idx[keep], "row": mr_idx[keep], "inside": inside[keep]})
    mr = mr.sort_values("inside", ascending=False, kind="stable").drop(columns="inside")
    sewered = np.zeros(len(polys), dtype=bool)
    sewered[mr["row"].to_numpy()] = True
    pr = pd.DataFrame({"parcel": p_idx, "row": r_idx})
    return pr, mr, sewered


def _said_sewer(tree, parcels, mains, main_index, distance, pr, mr, reach, street_names):
    """Make the deciding main one that lies in a street the parcel abuts, where one is within reach.

    § 144-4 and § 168-22.2G require "said public sewer" (the one in the abutting street) to be within the distance.
    """
    # mr is ordered longest-inside first; merging from it keeps that order, so the first pair per parcel names
    # the street the main runs along.
    pairs = mr.merge(pr.assign(main=main_index[pr["parcel"].to_numpy()]), on=["main", "row"])
    ok = np.zeros(len(parcels), dtype=bool)
    ok[pairs["parcel"].to_numpy()] = True
    street = np.full(len(parcels), None, dtype=object)
    first = pairs.drop_duplicates("parcel")
    street[first["parcel"].to_numpy()] = street_names[first["row"].to_numpy()]

    # Parcels whose nearest main is in range but not in an abutting street: look at every main within reach.
    todo = np.flatnonzero(~ok & (distance <= reach) & (main_index >= 0))
    if len(todo):
        t_in, m_near = tree.query(parcels[todo], predicate="dwithin", distance=reach)
        cand = pd.DataFrame({"parcel": todo[t_in], "main": m_near})
        cand = cand.merge(pr, on="parcel").merge(mr, on=["main", "row"])
        if len(cand):
            cand["d"] = shapely.distance(parcels[cand["parcel"].to_numpy()], mains[cand["main"].to_numpy()])
            best = cand.sort_values(["parcel", "d", "main"], kind="stable").drop_duplicates("parcel")
            rows = best["parcel"].to_numpy()
            main_index = main_index.copy()
            distance = distance.copy()
            main_index[rows] = best["main"].to_numpy()
            distance[rows] = best["d"].to_numpy()
            street[rows] = street_names[best["row"].to_numpy()]
    return main_index, distance, street


def _measuring_lines(parcels: np.ndarray, mains: np.ndarray, main_index: np.ndarray, workers: int) -> np.ndarray:
    """Shortest line from each property line to its deciding main; its end is the connection point."""
    lines = np.full(len(parcels), None, dtype=object)
    has = np.flatnonzero(main_index >= 0)

    def run(part: slice) -> None:
        rows = has[part]
        lines[rows] = shapely.shortest_line(parcels[rows], mains[main_index[rows]])

    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(run, _chunks(len(has))))
    return lines


# Property classes (New York RPS codes, first digit) read as occupied when no building or occupied attribute
# decides: 1 agricultural, 2 residential, 4 commercial, 5 recreation, 6 community services, 7 industrial,
# 8 public services; 3 vacant land and 9 wild, forested and park land are not.
OCCUPIED_CLASS_DIGITS = ("1", "2", "4", "5", "6", "7", "8")


def _occupancy(parcels: gpd.GeoDataFrame, buildings: gpd.GeoDataFrame | None, profile: Profile, fpu: float):
    n = len(parcels)
    occupied = np.zeros(n, dtype=bool)
    source = np.full(n, "none", dtype=object)
    decided = np.zeros(n, dtype=bool)
    if "occupied" in parcels.columns:
        attr = parcels["occupied"].to_numpy(object)
        decided = pd.notna(parcels["occupied"]).to_numpy()
        occupied[decided] = attr[decided].astype(bool)
        source[decided] = "occupied attribute"
    if buildings is not None:
        geoms = np.asarray(buildings.geometry.values)
        area_sqft = shapely.area(geoms) * fpu * fpu
        is_point = shapely.get_dimensions(geoms) == 0
        qualifies = is_point | (area_sqft >= profile.measurement.min_occupied_building_sqft.value)
        if "occupied" in buildings.columns:
            flag = buildings["occupied"]
            qualifies = np.where(flag.notna().to_numpy(), flag.fillna(False).astype(bool).to_numpy(), qualifies)
        points = shapely.point_on_surface(geoms[qualifies])
        p_tree = shapely.STRtree(np.asarray(parcels.geometry.values))
        _, p_idx = p_tree.query(points, predicate="within")
        by_building = np.zeros(n, dtype=bool)
        by_building[p_idx] = True
        occupied[~decided] = by_building[~decided]
        source[~decided] = "buildings"
    elif "property_class" in parcels.columns:
        code = parcels["property_class"].astype(object).where(parcels["property_class"].notna(), "")
        first = code.astype(str).str.strip().str[:1].to_numpy(object)
        known = np.isin(first, list("123456789"))
        use = ~decided & known
        occupied[use] = np.isin(first[use], OCCUPIED_CLASS_DIGITS)
        source[use] = "property class"
    return occupied, source


def _connected(parcels: gpd.GeoDataFrame) -> np.ndarray:
    if "connected" not in parcels.columns:
        return np.zeros(len(parcels), dtype=bool)
    return parcels["connected"].fillna(False).astype(bool).to_numpy()


def _fmt_ft(values: np.ndarray, threshold: float | None) -> np.ndarray:
    """Distances as text, one decimal; two where one would round onto the threshold and blur the verdict."""
    one = np.char.mod("%.1f", np.nan_to_num(values))
    if threshold is None:
        return one.astype(object)
    near = np.abs(values - threshold) < 0.1
    two = np.char.mod("%.2f", np.nan_to_num(values))
    return np.where(near, two, one).astype(object)


def _explain(out: gpd.GeoDataFrame, profile: Profile, threshold_ft: float | None, notice_date: dt.date | None,
             notice_reason: str | None, connected_source: str | None) -> None:
    """Add rule, section, reason and deadline columns (in place on the new frame)."""
    md = profile.mandate
    status = out["status"].to_numpy(object)
    sec_dist = md.distance_ft.citation
    sec_abut = md.requires_abutting_street.citation
    sec_occ = md.requires_occupied_building.citation
    main = out["main_id"].astype(object).fillna("").to_numpy(object)
    dist = _fmt_ft(out["distance_ft"].to_numpy(float), threshold_ft)
    limit = f"{threshold_ft:g} ft" if threshold_ft is not None else ""
    street = out["street_name_main"].to_numpy(object)
    in_street = np.where(pd.notna(street), " (in " + pd.Series(street).fillna("").to_numpy(object) + ")", "")
    period = md.notice_period_days.value
    reason_text = {"public_health_hazard": "to eliminate a public health hazard",
                   "highway_improvement": "to promote a highway improvement program"}

    reason = np.full(len(out), "", dtype=object)
    rule = np.full(len(out), "", dtype=object)
    section = np.full(len(out), "", dtype=object)

    def put(mask, r, s, text):
        rule[mask], section[mask], reason[mask] = r, s, text[mask] if isinstance(text, np.ndarray) else text

    occ_src = out["occupied_source"].to_numpy(object)
    min_sqft = f"{profile.measurement.min_occupied_building_sqft.value:g}"
    src = np.select(
        [occ_src == "occupied attribute", occ_src == "property class", occ_src == "buildings"],
        ["the parcel's occupied attribute says no",
         "property class " + out.get("property_class", pd.Series("", index=out.index)).astype(str).to_numpy(object)
         + " is vacant, wild or park land",
         f"no building of {min_sqft} sq ft or more, nor one marked occupied, stands on it"],
        "no occupancy information")
    put(status == "connected", "already_connected", sec_dist,
        f"Already connected to the public sewer (from the {connected_source or 'connected attribute'}).")
    put(status == "no_public_sewer", "no_public_sewer", sec_dist,
        "No public sanitary sewer main in the data; storm, abandoned and (by this profile) private or combined "
        f"mains do not count ({profile.sewers.count_private.citation}).")
    put(status == "unoccupied", "occupancy", sec_occ,
        "No building used for human occupancy, employment or recreation on the parcel (" + src + f"); {sec_occ} "
        "applies only to occupied property.")
    beyond = _fmt_ft(out["distance_ft"].to_numpy(float) - (threshold_ft or 0), None)
    put(status == "out_of_range", "distance", sec_dist,
        "Nearest public sanitary main " + main + in_street + " lies " + dist + " ft from the property line, "
        + beyond + f" ft beyond the {limit} of {sec_dist}; no connection can be required.")
    put(status == "in_range_not_abutting", "abutting_street", sec_abut,
        "Main " + main + " lies " + dist + f" ft from the property line, within {limit}, but not in a street, "
        f"alley or right-of-way the parcel abuts ({sec_abut}); no connection can be required.")
    if md.notice_period_days.value is not None:
        when = f"within {period} days of official notice"
    else:
        when = f"when notified (no period set: {md.notice_period_days.citation})"
    notice_rule = ""
    if md.notice_reasons.value:
        chosen = reason_text.get(notice_reason or "", "")
        notice_rule = (f" Notice given {chosen} ({md.notice_reasons.citation})." if chosen else
                       f" A notice may be given only {' or '.join(reason_text[r] for r in md.notice_reasons.value)} "
                       f"({md.notice_reasons.citation}).")
    text = ("Sewer main " + main + in_street + " lies " + dist + " ft from the property line"
            + f"; {sec_dist} requires an occupied property within {limit} to connect {when}." + notice_rule)
    put(status == "mandated", "connection_required", sec_dist, text)

    deadline = np.full(len(out), None, dtype=object)
    if notice_date is not None and period is not None:
        deadline[status == "mandated"] = (notice_date + dt.timedelta(days=int(period))).isoformat()
        reason[status == "mandated"] = reason[status == "mandated"] + " Deadline " + \
            deadline[status == "mandated"] + "."
    out["rule"], out["section"], out["reason"], out["deadline"] = rule, section, reason, deadline
    out["notice_reason"] = np.where(status == "mandated", notice_reason, None) if notice_reason else None


def check_notice(profile: Profile, notice_date: dt.date | None, notice_reason: str | None) -> None:
    """Refuse a notice the profile does not allow: Poughkeepsie's § 168-22.2G needs one of its reasons."""
    rule = profile.mandate.notice_reasons
    if notice_reason is not None and notice_reason not in rule.value:
        allowed = ", ".join(rule.value) or "none (this profile sets no notice reasons)"
        raise AnalysisError(f"Notice reason {notice_reason!r} is not one the {profile.id} profile knows: {allowed}.")
    if notice_date is not None and rule.value and notice_reason is None:
        raise AnalysisError(
            f"{rule.section}: \"{rule.quote}\" Give the reason for these notices with --notice-reason "
            f"{' or --notice-reason '.join(rule.value)}."
        )
