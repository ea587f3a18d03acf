"""Every profile rule is applied: changing its value changes what the tool finds on hand-made layers.

Each case names one rule (``table.key``), a profile, a new value and a scenario whose result is compared before and
after: a rule whose value changes nothing is a rule the tool does not apply. The answers themselves are checked
by the tests beside the code (test_mandate.py, test_buildings.py, ...); ``analysis/rule_tests.toml`` lists, for
every rule, the tests that cover it, and tests/test_profiles.py fails when a rule has none.
"""

from __future__ import annotations

import datetime as dt
import json

import pytest
from click.testing import CliRunner
from shapely.geometry import LineString, Point, box

from analysis.buildings import assess_buildings
from analysis.discharges import assess_discharges
from analysis.errors import AnalysisError
from analysis.mandate import analyze_mandates
from analysis.network import build_network
from analysis.network_checks import check_network
from analysis.notices import TownSettings, compose_letters, mailing_list, plan_violations
from analysis.plans import plan_extension
from analysis.profiles import load_profile
from analysis.subdivisions import assess_subdivisions
from gisapp.cli import main
from layers.write import write_layers
from tests.conftest import frame, ny_frame

# The mandate: one block per rule, far apart, each with its own street and main.


def _block(x0, *, street=None, main=None, parcels=(), row_width=None):
    """A street along y=0 from x0 to x0+1000 and a main (default: along its centreline)."""
    s = {"street_name": f"Street {x0}", "geometry": LineString([(x0, 0), (x0 + 1000, 0)]), **(street or {})}
    if row_width:
        s["row_width_ft"] = row_width
    m = {"main_id": f"M{x0}", "geometry": LineString([(x0, 0), (x0 + 1000, 0)]), **(main or {})}
    return [s], [m], list(parcels)


def _mandate_town():
    blocks = [
        # OCC occupied, VAC marked unoccupied, SHED a lot with a 120 sq ft building only; curbs at y=+-15.
        _block(
            0,
            parcels=[
                {"parcel_id": "OCC", "occupied": True, "geometry": box(0, 25, 50, 125)},
                {"parcel_id": "VAC", "occupied": False, "geometry": box(100, 25, 150, 125)},
                {"parcel_id": "SHED", "occupied": None, "geometry": box(200, 25, 250, 125)},
            ],
        ),
        # FORCE: the only main in its street is a force main.
        _block(
            2000,
            main={"sewer_type": "force"},
            parcels=[{"parcel_id": "FORCE", "occupied": True, "geometry": box(2000, 25, 2050, 125)}],
        ),
        # TOL: a 250-ft right-of-way, the main 100.05 ft from the lot.
        _block(
            4000,
            row_width=250.0,
            main={"geometry": LineString([(4000, 24.95), (5000, 24.95)])},
            parcels=[{"parcel_id": "TOL", "occupied": True, "geometry": box(4000, 125, 4050, 225)}],
        ),
        # ABUT: 3 ft short of the right-of-way (within the 5 ft tolerance). WIDE: 15 ft short of a 50-ft one.
        _block(6000, parcels=[{"parcel_id": "ABUT", "occupied": True, "geometry": box(6000, 28, 6050, 128)}]),
        _block(8000, parcels=[{"parcel_id": "WIDE", "occupied": True, "geometry": box(8000, 40, 8050, 140)}]),
        # SHORT: only 60 ft of main runs in the street (under 1.5 widths of 50 ft).
        _block(
            10000,
            main={"geometry": LineString([(10000, 0), (10060, 0)])},
            parcels=[{"parcel_id": "SHORT", "occupied": True, "geometry": box(10000, 25, 10050, 125)}],
        ),
        # OUT: outside the service area.
        _block(12000, parcels=[{"parcel_id": "OUT", "occupied": True, "geometry": box(12000, 25, 12050, 125)}]),
    ]
    streets = frame([s for b in blocks for s in b[0]])
    mains = frame([m for b in blocks for m in b[1]])
    parcels = frame([p for b in blocks for p in b[2]])
    buildings = frame([{"building_id": "B-SHED", "geometry": box(210, 40, 222, 50)}])
    curbs = frame([{"geometry": LineString([(-100, y), (1100, y)])} for y in (15, -15)])
    areas = frame([{"area_name": "district", "mandates": "yes", "geometry": box(-500, -500, 11500, 500)}])
    return parcels, mains, streets, buildings, curbs, areas


def mandate(profile, tmp=None):
    parcels, mains, streets, buildings, curbs, areas = _mandate_town()
    try:
        r = analyze_mandates(
            parcels,
            mains,
            streets=streets,
            buildings=buildings,
            curbs=curbs,
            service_areas=areas,
            profile=profile,
            notice_date=dt.date(2027, 3, 1),
        ).parcels
    except AnalysisError as exc:
        return str(exc)
    return r[["parcel_id", "status", "distance_ft", "reason", "deadline"]].astype(str).values.tolist()


def split_street(profile, tmp=None):
    """Main St drawn as two segments; its main runs 60 ft into the second, short of lot G-1."""
    streets = frame(
        [
            {"street_name": "Main St", "geometry": LineString([(0, 0), (1000, 0)])},
            {"street_name": "Main St", "geometry": LineString([(1000, 0), (3000, 0)])},
        ]
    )
    mains = frame([{"main_id": "M-1", "geometry": LineString([(0, 0), (1060, 0)])}])
    parcels = frame([{"parcel_id": "G-1", "occupied": True, "geometry": box(1100, 25, 1160, 150)}])
    r = analyze_mandates(parcels, mains, streets=streets, profile=profile).parcels
    return r[["parcel_id", "status", "reason"]].astype(str).values.tolist()


def measuring(profile, tmp):
    """The CRS the command line measures in, given the profile's value with --set."""
    path = tmp / "rules-town.gpkg"
    layers = {
        "parcels": ny_frame([{"parcel_id": "OCC", "occupied": "yes", "geometry": box(0, 25, 50, 125)}]),
        "mains": ny_frame([{"main_id": "M0", "geometry": LineString([(0, 0), (1000, 0)])}]),
        "streets": ny_frame([{"street_name": "Street 0", "geometry": LineString([(0, 0), (1000, 0)])}]),
    }
    write_layers(str(path), layers, overwrite=True)
    crs = profile.measurement.measuring_crs.value
    args = ["analyze", "--profile", "fort-plain", "--data", str(path), "--set", f"measurement.measuring_crs={crs}"]
    result = CliRunner().invoke(main, [*args, "--json"])
    return json.loads(result.output)["summary"]["measuring_crs"]


# The network: a bent main, a long run, a small pipe, a junction where slopes change, a private main, a plant.


def network(profile, tmp=None):
    mains = frame(
        [
            {"main_id": "SMALL", "diameter_in": 6.0, "geometry": LineString([(0, 0), (300, 0)])},
            {"main_id": "LONG", "diameter_in": 8.0, "geometry": LineString([(300, 0), (1200, 0)])},
            {"main_id": "BENT", "diameter_in": 8.0, "geometry": LineString([(1200, 0), (1300, 0), (1400, 100)])},
            {
                "main_id": "UP",
                "us_invert_ft": 100.0,
                "ds_invert_ft": 99.0,
                "geometry": LineString([(0, 500), (300, 500)]),
            },
            {
                "main_id": "DN",
                "us_invert_ft": 99.0,
                "ds_invert_ft": 96.0,
                "geometry": LineString([(300, 500), (600, 500)]),
            },
            {"main_id": "PVT", "ownership": "private", "geometry": LineString([(1400, 100), (1400, 300)])},
            {"main_id": "LINK", "geometry": LineString([(600, 500), (1400, 100)])},
            {"main_id": "FREE", "geometry": LineString([(3000, 0), (3300, 0)])},
        ]
    )
    manholes = frame(
        [
            {"manhole_id": k, "geometry": Point(xy)}
            for k, xy in {
                "A": (0, 0),
                "B": (300, 0),
                "C": (1200, 0),
                "D": (1400, 100),
                "E": (0, 500),
                "F": (600, 500),
                "G": (1400, 300),
                "H": (3000, 0),
                "I": (3300, 0),
            }.items()
        ]
    )
    plants = frame(
        [
            {"outfall_id": "WWTP", "outfall_manhole": "D", "geometry": Point(1420, 100)},
            {"outfall_id": "SMALL-PLANT", "geometry": Point(3450, 0)},  # 150 ft from I: joined within 200 ft
        ]
    )
    net = build_network(mains, manholes=manholes, outfalls=plants, profile=profile)
    defects = check_network(net, profile=profile, manholes=manholes)
    return (
        sorted((d.check, d.feature_id) for d in defects),
        len(net.main_id),
        sorted(map(str, net.direction_source)),
        int(net.node_is_outfall.sum()),
    )


# Buildings: a front house with a rear cottage, an apartment house, a school, two commercial buildings, laterals.

MAIN_ST = {"street_name": "Main St", "geometry": LineString([(-1000, 0), (2000, 0)])}


def buildings(profile, tmp=None):
    parcels = frame(
        [
            {
                "parcel_id": p,
                "main_id": "M-1",
                "connection_x": x + 30.0,
                "connection_y": 0.0,
                "property_class": c,
                "geometry": box(x, 25, x + 60, 225),
            }
            for p, x, c in (
                ("HOME", 0, "210"),
                ("APTS", 100, "280"),
                ("SCHOOL", 200, "612"),
                ("SHOPS", 300, "484"),
                ("HOUSE", 400, "210"),
            )
        ]
    )
    houses = frame(
        [
            {"building_id": "FRONT", "units": 1, "geometry": box(10, 50, 50, 90)},
            {"building_id": "REAR", "units": 1, "geometry": box(20, 180, 40, 205)},
            {"building_id": "APTS", "units": 6, "geometry": box(110, 50, 150, 90)},
            {"building_id": "SCHOOL", "geometry": box(210, 50, 250, 90)},
            {"building_id": "SHOP-1", "geometry": box(305, 50, 325, 90)},
            {"building_id": "SHOP-2", "geometry": box(335, 55, 355, 95)},
            {"building_id": "HOUSE", "geometry": box(410, 50, 450, 90)},
        ]
    )
    yard = frame([{"route_kind": "yard", "geometry": box(0, 225, 60, 260)}])
    laterals = frame(
        [
            {
                "lateral_id": "L-1",
                "diameter_in": 4.0,
                "us_invert_ft": 100.5,
                "ds_invert_ft": 100.0,
                "geometry": LineString([(430, 50), (430, 2)]),
            }
        ]
    )
    r = assess_buildings(
        houses,
        parcels,
        profile=profile,
        streets=frame([MAIN_ST]),
        mains=frame([{"main_id": "M-1", "geometry": LineString([(-1000, 0), (2000, 0)])}]),
        alleys=yard,
        laterals=laterals,
    ).buildings
    return (
        r[
            [
                "building_id",
                "units",
                "shared_lateral",
                "required_laterals",
                "manhole_connection_case",
                "lateral_below_standard",
                "reason",
            ]
        ]
        .astype(str)
        .values.tolist()
    )


# Notices and plans.


def notices(profile, tmp=None):
    """A violation letter for one overdue connection notice: its correction date and every sentence of it."""
    import pandas as pd

    overdue = pd.DataFrame(
        {
            "notice_id": ["N-1"],
            "parcel_id": ["P-1"],
            "issued_date": [dt.date(2027, 3, 1)],
            "deadline": [dt.date(2027, 5, 30)],
            "owner_name": ["DOE JANE"],
            "mail_address": ["1 Main St"],
            "mail_city": ["Fort Plain"],
            "mail_state": ["NY"],
            "mail_zip": ["13339"],
            "site_address": ["1 Main St"],
        }
    )
    plan = plan_violations(overdue, profile=profile, today=dt.date(2027, 6, 1))
    notices = plan.due.assign(notice_id="N-2")
    (letter,) = compose_letters(
        mailing_list(notices),
        notices,
        profile=profile,
        town=TownSettings(name="Village"),
        kind="violation",
        notice_date=plan.notice_date,
        period=plan.period,
    )
    return plan.deadline, [b.text for b in letter.blocks]


def plan(profile, tmp=None):
    """An 8-inch extension east along Hill St from the end of an existing PVC main without inverts."""
    mains = frame(
        [{"main_id": "OLD", "diameter_in": 8.0, "material": "PVC", "geometry": LineString([(-600, 0), (0, 0)])}]
    )
    manholes = frame(
        [{"manhole_id": "MH-A", "geometry": Point(-600, 0)}, {"manhole_id": "MH-B", "geometry": Point(0, 0)}]
    )
    plants = frame([{"outfall_id": "WWTP", "outfall_manhole": "MH-A", "geometry": Point(-620, 0)}])
    net = build_network(mains, manholes=manholes, outfalls=plants, profile=profile)
    streets = frame([{"street_name": "Hill St", "geometry": LineString([(-600, 0), (1500, 0)])}])
    parcels = frame(
        [
            {
                "parcel_id": f"L{i}",
                "owner_name": f"OWNER {i // 2}",
                "occupied": True,
                "units": 1,
                "geometry": box(100 * i, 25, 100 * i + 90, 125),
            }
            for i in range(8)
        ]
    )
    r = plan_extension(
        LineString([(0, 0), (900, 0)]),
        diameter_in=8.0,
        material="PVC",
        profile=profile,
        parcels=parcels,
        mains=mains,
        streets=streets,
        network=net,
    )
    return json.dumps(r.as_dict(), sort_keys=True, default=str)


# Discharges and subdivisions.


def discharges(profile, tmp=None):
    parcels = frame(
        [
            {
                "parcel_id": p,
                "status": "connected",
                "property_class": c,
                "units": u,
                "flow_gpd": f,
                "geometry": box(i * 100, 0, i * 100 + 90, 100),
            }
            for i, (p, c, u, f) in enumerate(
                [
                    ("DINER", "421", None, 500.0),
                    ("HOUSE", "210", 2, None),
                    ("APTS", "411", 40, None),
                    ("MILL", "710", None, 12_000.0),
                    ("PLANT", "714", None, None),
                    ("SHOP", "452", None, 600.0),
                ]
                + [(f"H{k}", "210", 3, None) for k in range(100)]
            )
        ]
    )
    # The plant's flow is unknown (the industrial parcel listed as such): assessed on its own, since a system flow
    # that leaves out a parcel of unknown flow is not known, and no share of it would be judged.
    plant = (parcels["parcel_id"] == "PLANT").to_numpy()
    found = [assess_discharges(parcels[~plant], profile=profile), assess_discharges(parcels[plant], profile=profile)]
    return [
        row
        for r in found
        for row in r.parcels[["parcel_id", "grease_interceptor", "industrial_user", "discharge_duties"]]
        .astype(str)
        .values.tolist()
    ]


ACRE = 208.71033


def subdivisions(profile, tmp=None):
    subs = frame(
        [
            {"subdivision_id": "SMALL", "units": 12, "geometry": box(0, 0, ACRE, 10 * ACRE)},
            {"subdivision_id": "DISTRICT", "units": 2, "geometry": box(1000, 0, 1000 + ACRE, 10 * ACRE)},
            {"subdivision_id": "PHASE-3", "units": 12, "geometry": box(2000, 0, 2000 + ACRE, 10 * ACRE)},
        ]
    )
    areas = frame(
        [
            {"mandates": "yes", "geometry": box(900, -10, 1500, 5000)},
            {"mandates": "no", "geometry": box(1900, -10, 2500, 5000)},
        ]
    )
    return assess_subdivisions(subs, profile=profile, service_areas=areas)[["sewer_duty", "reason"]].values.tolist()


CASES = {
    # rule: (profile, new value, scenario)
    "mandate.measured_from": ("fort-plain", "parcel_boundary", mandate),
    "mandate.requires_abutting_street": ("fort-plain", False, mandate),
    "mandate.requires_occupied_building": ("fort-plain", False, mandate),
    "mandate.notice_period_days": ("fort-plain", 30, mandate),
    "mandate.notice_reasons": ("fort-plain", ["public_health_hazard"], mandate),
    "mandate.applies_within": ("fort-plain", "the Village of Testville", mandate),
    "sewers.count_force_mains": ("fort-plain", True, mandate),
    "measurement.measuring_crs": ("fort-plain", "EPSG:32618", measuring),
    "measurement.distance_tolerance_ft": ("fort-plain", 0.1, mandate),
    "measurement.abut_tolerance_ft": ("fort-plain", 1.0, mandate),
    "measurement.default_row_width_ft": ("fort-plain", 80.0, mandate),
    "measurement.main_in_street_min_row_widths": ("fort-plain", 1.0, mandate),
    "measurement.join_street_segments": ("fort-plain", False, split_street),
    "measurement.min_occupied_building_sqft": ("fort-plain", 100.0, mandate),
    "network.outfall_snap_ft": ("fort-plain", 100.0, network),
    "network.include_private_mains": ("fort-plain", True, network),
    "network.trust_digitised_direction": ("fort-plain", True, network),
    "network.min_diameter_in": ("fort-plain", 4.0, network),
    "network.max_manhole_spacing_ft": ("fort-plain", 1000.0, network),
    "network.manhole_at_alignment_change": ("fort-plain", False, network),
    "network.alignment_change_deg": ("fort-plain", 60.0, network),
    "network.slope_change_ft_per_ft": ("fort-plain", 0.1, network),
    "buildings.rear_building_rule": ("poughkeepsie", "main_extension", buildings),
    "buildings.other_routes": ("fort-plain", ["alley"], buildings),
    "buildings.rear_building_note": ("poughkeepsie", "A note the town wrote.", buildings),
    "buildings.units_per_lateral": ("fort-plain", 2, buildings),
    "buildings.class_units": ("fort-plain", {"210": 5}, buildings),
    "buildings.manhole_connection_classes": ("fort-plain", [], buildings),
    "buildings.complex_classes": ("fort-plain", ["7"], buildings),
    "buildings.building_sewer_min_diameter_in": ("fort-plain", 6.0, buildings),
    "buildings.building_sewer_min_slope_in_per_ft": ("fort-plain", 0.25, buildings),
    "notices.correction_period_days": ("fort-plain", 45, notices),
    "notices.penalty": ("fort-plain", "a fine the village set", notices),
    "design.trench_width_in": ("fort-plain", {"8": 30}, plan),
    "design.exfiltration_gpd_per_inch_mile": ("fort-plain", 50.0, plan),
    "design.exfiltration_gpd_per_manhole": ("fort-plain", 9.0, plan),
    "design.max_test_section_ft": ("fort-plain", 100.0, plan),
    "design.petition_majority": ("fort-plain", False, plan),
    "design.manning_n_by_material": ("fort-plain", {"pvc": 0.02}, plan),
    "design.default_slope_ft_per_ft": ("fort-plain", 0.01, plan),
    "design.peaking_factor": ("fort-plain", 2.5, plan),
    "design.cost_per_ft": ("fort-plain", {"8": 300}, plan),
    "design.cost_per_manhole": ("fort-plain", 9000.0, plan),
    "design.cost_per_lateral": ("fort-plain", 4000.0, plan),
    "design.pipe_materials": ("fort-plain", ["pvc"], plan),
    "design.min_share_per_parcel": ("fort-plain", 20000.0, plan),
    "design.typical_flow_gpd_by_class": ("fort-plain", {"210": 900}, plan),
    "discharges.grease_interceptor": ("wappinger", "at_discretion", discharges),
    "discharges.grease_decided_by": ("fort-plain", "the village board", discharges),
    "discharges.food_service_classes": ("wappinger", ["45"], discharges),
    "discharges.interceptor_exempt_classes": ("wappinger", ["4"], discharges),
    "discharges.industrial_classes": ("fort-plain", [], discharges),
    "discharges.residential_classes": ("fort-plain", [], discharges),
    "discharges.significant_user_gpd": ("fort-plain", 10_000.0, discharges),
    "discharges.significant_user_share": ("fort-plain", 0.01, discharges),
    "discharges.flow_review_gpd": ("wappinger", 500.0, discharges),
    "discharges.flow_review_share": ("fort-plain", 0.5, discharges),
    "discharges.flow_reviewed_by": ("fort-plain", "the village board", discharges),
    "discharges.system_flow_gpd": ("fort-plain", 10_000_000.0, discharges),
    "subdivisions.all_new_developments": ("wappinger", True, subdivisions),
    "subdivisions.max_acres_per_unit": ("wappinger", 0.5, subdivisions),
    "subdivisions.in_district_builds": ("wappinger", False, subdivisions),
    "subdivisions.private_until_available": ("wappinger", False, subdivisions),
}


@pytest.mark.parametrize("key", sorted(CASES))
def test_rule_is_applied(key, tmp_path):
    name, value, scenario = CASES[key]
    base = load_profile(name)
    changed = load_profile(name, overrides={key: value})
    assert changed.rules()[key].value != base.rules()[key].value, f"{key}: the new value is the profile's own"
    assert scenario(base, tmp_path) != scenario(changed, tmp_path), f"{key}: setting it to {value!r} changes nothing"
