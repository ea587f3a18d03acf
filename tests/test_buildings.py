"""Buildings on hand-made lots whose answers can be seen: rear buildings, lots, routes, units, laterals."""

from __future__ import annotations

import geopandas as gpd
import pandas as pd
import pytest
from shapely.geometry import LineString, box

from analysis.buildings import assess_buildings
from analysis.profiles import load_profile
from tests.conftest import frame

FP, PK, WP = (load_profile(n) for n in ("fort-plain", "poughkeepsie", "wappinger"))

# Main St: centreline y=0, 50 ft right-of-way (y -25..25), main along y=0. Lots north of it, 60 x 200 ft.
MAIN_ST = {"street_name": "Main St", "geometry": LineString([(-1000, 0), (1000, 0)])}
MAINS = frame([{"main_id": "M-1", "geometry": LineString([(-1000, 0), (1000, 0)])}])


def parcels(*rows):
    return frame(
        [
            {
                "parcel_id": r[0],
                "main_id": "M-1",
                "connection_x": (r[1].bounds[0] + r[1].bounds[2]) / 2,
                "connection_y": 0.0,
                **(r[2] if len(r) > 2 else {}),
                "geometry": r[1],
            }
            for r in rows
        ]
    )


def buildings(*rows):
    return frame([{"building_id": r[0], "geometry": r[1], **(r[2] if len(r) > 2 else {})} for r in rows])


def run(b, p, profile=FP, streets=(MAIN_ST,), alleys=None, laterals=None):
    return assess_buildings(
        b, p, profile=profile, streets=frame(list(streets)), mains=MAINS, alleys=alleys, laterals=laterals
    ).buildings.set_index("building_id")


LOT = box(0, 25, 60, 225)
FRONT = box(10, 50, 50, 90)  # 1,600 sq ft, 25 ft back from the street
REAR = box(20, 180, 40, 205)  # 500 sq ft cottage behind it
FRONT_REAR = (("FRONT", FRONT, {"units": 1}), ("REAR", REAR, {"units": 1}))


def test_front_and_rear_on_an_interior_lot_three_profiles():
    b, p = buildings(*FRONT_REAR), parcels(("P", LOT))
    fp, pk, wp = (run(b, p, prof) for prof in (FP, PK, WP))
    for r in (fp, pk, wp):
        assert bool(r.loc["REAR", "rear_building"]) and r.loc["REAR", "front_building_id"] == "FRONT"
        assert r.loc["REAR", "lot_type"] == "interior"
        assert pd.isna(r.loc["FRONT", "shared_lateral"]) and not r.loc["FRONT", "rear_building"]
    assert (
        fp.loc["REAR", "shared_lateral"] == "may_share_if_no_route"
        and fp.loc["REAR", "section"] == "§ 144-9 (section number derived)"
    )
    assert pk.loc["REAR", "shared_lateral"] == "may_share_if_no_route"
    assert "assessor may assess each building separately" in pk.loc["REAR", "reason"]
    assert wp.loc["REAR", "shared_lateral"] == "main_extension_required"
    assert wp.loc["REAR", "section"] == "§ 196-18D" and "sewer main must be extended" in wp.loc["REAR", "reason"]


def test_a_yard_behind_gives_three_different_verdicts():
    # Fort Plain lists "alley, court, yard or driveway"; Poughkeepsie "alley, courtyard or driveway".
    yard = frame([{"route_kind": "yard", "geometry": box(0, 225, 60, 260)}])
    b, p = buildings(*FRONT_REAR), parcels(("P", LOT))
    verdicts = [run(b, p, prof, alleys=yard).loc["REAR", "shared_lateral"] for prof in (FP, PK, WP)]
    assert verdicts == ["separate_required", "may_share_if_no_route", "main_extension_required"]


def test_an_alley_behind_means_a_separate_sewer():
    alley = frame([{"route_kind": "Alley", "geometry": LineString([(-100, 230), (200, 230)])}])
    r = run(buildings(*FRONT_REAR), parcels(("P", LOT)), FP, alleys=alley)
    assert r.loc["REAR", "shared_lateral"] == "separate_required"
    assert "found an adjoining alley (alleys-1): a separate building sewer can reach it" in r.loc["REAR", "reason"]


def test_a_public_alley_in_the_streets_layer_is_a_route():
    alley = {"street_name": "Mill Alley", "row_width_ft": 16.0, "geometry": LineString([(-1000, 233), (1000, 233)])}
    r = run(buildings(*FRONT_REAR), parcels(("P", LOT)), FP, streets=(MAIN_ST, alley))
    assert r.loc["REAR", "lot_type"] == "interior"  # an alley behind is no second frontage
    assert r.loc["REAR", "shared_lateral"] == "separate_required"


def test_corner_lot_with_a_second_sewered_street():
    side = {"street_name": "Church St", "geometry": LineString([(-25, -1000), (-25, 1000)])}
    mains = gpd.GeoDataFrame(
        pd.concat(
            [MAINS, frame([{"main_id": "M-2", "geometry": LineString([(-25, -1000), (-25, 1000)])}])], ignore_index=True
        ),
        crs=MAINS.crs,
    )
    r = assess_buildings(
        buildings(*FRONT_REAR), parcels(("P", LOT)), profile=FP, streets=frame([MAIN_ST, side]), mains=mains
    ).buildings.set_index("building_id")
    assert r.loc["REAR", "lot_type"] == "corner" and bool(r.loc["REAR", "rear_building"])
    assert r.loc["REAR", "shared_lateral"] == "separate_required"


def test_through_lot():
    back = {"street_name": "Canal St", "geometry": LineString([(-1000, 250), (1000, 250)])}
    r = run(buildings(*FRONT_REAR), parcels(("P", LOT)), FP, streets=(MAIN_ST, back))
    assert r.loc["REAR", "lot_type"] == "through"
    assert r.loc["REAR", "shared_lateral"] == "separate_required"  # the exception is for interior lots


def test_side_by_side_neither_is_rear():
    b = buildings(("LEFT", box(5, 50, 25, 90)), ("RIGHT", box(35, 55, 55, 95)))
    r = run(b, parcels(("P", LOT)))
    assert not r["rear_building"].any()
    assert r.loc["RIGHT", "front_building_id"] == "LEFT" and r.loc["RIGHT", "shared_lateral"] == "separate_required"
    assert "stands beside LEFT" in r.loc["RIGHT", "reason"]
    # § 144-9: "A separate and independent building sewer shall be provided for every building".
    assert FP.buildings.separate_building_sewer.value is True
    assert "each building needs its own building sewer (§ 144-9; section number derived)" in r.loc["RIGHT", "reason"]


def test_rear_building_hidden_behind_a_wide_front_building():
    # Offset sideways but its straight route to the street crosses the front building's wing.
    b = buildings(("FRONT", box(5, 50, 55, 120)), ("BACK", box(40, 150, 58, 170)))
    assert bool(run(b, parcels(("P", LOT))).loc["BACK", "rear_building"])


def test_shed_is_not_a_building_to_decide():
    b = buildings(("HOUSE", FRONT, {"units": 1}), ("SHED", box(45, 200, 55, 212)))
    r = run(b, parcels(("P", LOT)))
    assert not r.loc["SHED", "qualifies"] and pd.isna(r.loc["SHED", "shared_lateral"])
    assert pd.isna(r.loc["HOUSE", "shared_lateral"]) and not r["rear_building"].any()


def test_nine_units_need_three_laterals_in_fort_plain_only():
    b = buildings(("APTS", FRONT, {"units": 9}))
    p = parcels(("P", LOT))
    assert run(b, p, FP).loc["APTS", "required_laterals"] == 3
    assert "9 living units need at least 3 building sewers" in run(b, p, FP).loc["APTS", "reason"]
    assert run(b, p, PK).loc["APTS", "required_laterals"] == 1
    assert run(b, p, WP).loc["APTS", "required_laterals"] == 1
    assert run(buildings(("FOUR", FRONT, {"units": 4})), p, FP).loc["FOUR", "required_laterals"] == 1
    assert run(buildings(("FIVE", FRONT, {"units": 5})), p, FP).loc["FIVE", "required_laterals"] == 2


@pytest.mark.parametrize(
    ("klass", "units", "unknown"),
    [
        ("210", 1, False),
        ("215", 2, False),
        ("220", 2, False),
        ("230", 3, False),
        ("280", None, True),
        ("411", None, True),
        ("484", 0, False),
    ],
)
def test_units_from_property_class(klass, units, unknown):
    r = run(buildings(("B", FRONT)), parcels(("P", LOT, {"property_class": klass})))
    assert bool(r.loc["B", "units_unknown"]) is unknown
    if unknown:
        assert pd.isna(r.loc["B", "required_laterals"]) and "Living units unknown" in r.loc["B", "reason"]
    else:
        assert r.loc["B", "units"] == units and r.loc["B", "required_laterals"] == 1


def test_parcel_units_go_to_its_only_building():
    r = run(buildings(("B", FRONT)), parcels(("P", LOT, {"units": 8})))
    assert r.loc["B", "units"] == 8 and r.loc["B", "units_source"] == "parcel" and r.loc["B", "required_laterals"] == 2


def test_existing_laterals_and_shortfall():
    laterals = frame([{"geometry": LineString([(30, 50), (30, 0)])}])
    r = run(buildings(("APTS", FRONT, {"units": 9})), parcels(("P", LOT)), FP, laterals=laterals)
    assert r.loc["APTS", "existing_laterals"] == 1 and r.loc["APTS", "lateral_shortfall"] == 2
    assert "It has 1: 2 short." in r.loc["APTS", "reason"]


def test_school_is_a_manhole_connection_case_for_the_administrative_body():
    """§ 144-16: "The administrative body shall determine if and where this type of connection ... is required"."""
    p = parcels(("SCHOOL", LOT, {"property_class": "612"}))
    r = run(buildings(("S", FRONT)), p, FP)
    assert bool(r.loc["S", "manhole_connection_case"]) and r.loc["S", "section"] == "§ 144-16 (section number derived)"
    reason = r.loc["S", "reason"]
    assert "a case for the administrative body to determine if and where" in reason and "(property class 612)" in reason
    assert "requires" not in reason and "connects through a manhole (" not in reason
    assert FP.buildings.manhole_connection_decided_by.value == "the administrative body"
    assert not run(buildings(("S", FRONT)), p, PK).loc["S", "manhole_connection_case"]
    assert not run(buildings(("S", FRONT)), p, WP).loc["S", "manhole_connection_case"]


@pytest.mark.parametrize(
    ("klass", "n_buildings", "case"),
    [
        ("710", 1, False),  # one industrial building is not "a complex of industrial or commercial buildings"
        ("710", 2, True),
        ("484", 1, False),
        ("484", 2, True),
        ("210", 2, False),
        ("651", 1, True),  # a public building: one is enough
    ],
)
def test_a_complex_needs_more_than_one_building(klass, n_buildings, case):
    b = buildings(("A", box(5, 50, 25, 90)), ("B", box(35, 55, 55, 95)))[:n_buildings]
    r = run(b, parcels(("P", LOT, {"property_class": klass})), FP)
    assert r["manhole_connection_case"].tolist() == [case] * n_buildings
    if case and klass == "710":
        assert "One of a complex of 2 industrial or commercial buildings (property class 710)" in r.loc["A", "reason"]
    # The setting decides what a complex is: with three buildings required, two are none.
    three = load_profile("fort-plain", overrides={"buildings.commercial_complex_min_buildings": "3"})
    if klass in ("710", "484"):
        assert not run(b, parcels(("P", LOT, {"property_class": klass})), three)["manhole_connection_case"].any()


def test_rear_building_reason_says_what_was_looked_for_and_leaves_the_conclusion_to_the_reviewer():
    b, p = buildings(*FRONT_REAR), parcels(("P", LOT))
    without = run(b, p, FP).loc["REAR", "reason"]
    assert "no alleys layer was given, so adjoining alleys, courts, yards or driveways were not looked for" in without
    assert "it fronts no second sewered street" in without and "no street named as an alley adjoins it" in without
    assert "the reviewer confirms this on the ground" in without and "no other route exists" not in without
    # An alleys layer with nothing beside this lot: now the absence is what the layer shows.
    far = frame([{"route_kind": "driveway", "geometry": box(500, 25, 510, 225)}])
    searched = run(b, p, FP, alleys=far).loc["REAR", "reason"]
    assert "no alley, court, yard or driveway of the alleys layer adjoins the lot" in searched
    assert run(b, p, FP, alleys=far).loc["REAR", "shared_lateral"] == "may_share_if_no_route"
    # Poughkeepsie lists no yard; Wappinger shares nothing, so looks for nothing.
    assert (
        "no alley, court or driveway of the alleys layer adjoins the lot"
        in run(b, p, PK, alleys=far).loc["REAR", "reason"]
    )
    assert "Looked for" not in run(b, p, WP, alleys=far).loc["REAR", "reason"]


def test_a_second_sewered_street_is_named_as_the_route_found():
    back = {"street_name": "Canal St", "geometry": LineString([(-1000, 250), (1000, 250)])}
    mains = gpd.GeoDataFrame(
        pd.concat([MAINS, frame([{"main_id": "M-2", "geometry": LineString([(-1000, 250), (1000, 250)])}])]),
        crs=MAINS.crs,
    )
    r = assess_buildings(
        buildings(*FRONT_REAR), parcels(("P", LOT)), profile=FP, streets=frame([MAIN_ST, back]), mains=mains
    ).buildings.set_index("building_id")
    assert "found frontage on a second sewered street, Canal St" in r.loc["REAR", "reason"]


def _lateral(x, y_building, y_main, diameter=None, building_invert=None, main_invert=None, reverse=False, **extra):
    """A lateral from the front wall of FRONT (y=50) toward the main; drawn main-first when ``reverse``."""
    ends = [(x, y_building), (x, y_main)]
    inverts = [building_invert, main_invert]
    if reverse:
        ends, inverts = ends[::-1], inverts[::-1]
    return {
        "diameter_in": diameter,
        "us_invert_ft": inverts[0],
        "ds_invert_ft": inverts[1],
        **extra,
        "geometry": LineString(ends),
    }


@pytest.mark.parametrize(
    ("profile", "diameter", "fall_ft", "reverse", "below", "words"),
    [
        # Fort Plain § 144-11B: 4 in, 1/8 in per ft. 48 ft long: 0.5 ft of fall is 0.125 in per ft exactly.
        (FP, 4.0, 0.5, False, False, None),
        (FP, 3.0, 0.5, False, True, "is 3 in, less than the 4 in § 144-11B (section number derived) requires"),
        (FP, 4.0, 0.4, False, True, "falls 0.100 in per ft, less than the 0.125 in per ft"),
        (FP, 4.0, 0.4, True, True, "falls 0.100 in per ft"),  # drawn from the main to the building
        (FP, 4.0, -0.2, False, True, "it runs uphill to the main"),
        # Wappinger § 196-18F: 1/4 in per ft. 1 ft over 48 ft is exactly 0.25.
        (WP, 4.0, 1.0, False, False, None),
        (WP, 4.0, 0.5, False, True, "less than the 0.25 in per ft § 196-18F requires"),
        # Poughkeepsie leaves it to the Town Plumbing Code: nothing is checked.
        (PK, 3.0, -0.2, False, False, None),
    ],
)
def test_building_sewer_size_and_slope(profile, diameter, fall_ft, reverse, below, words):
    lat = frame([_lateral(30, 50, 2, diameter, 100.0 + fall_ft, 100.0, reverse, lateral_id="L-1")])
    r = run(buildings(("HOUSE", FRONT, {"units": 1})), parcels(("P", LOT)), profile, laterals=lat).loc["HOUSE"]
    assert bool(r["lateral_below_standard"]) is below
    if words:
        assert words in r["reason"] and "L-1" in r["reason"]
    if profile is not PK:
        assert r["lateral_diameter_in"] == diameter
        assert r["lateral_slope_in_per_ft"] == pytest.approx(fall_ft / 48 * 12, abs=1e-4)


def test_building_sewer_without_inverts_or_diameter_is_not_judged():
    lat = frame([{"geometry": LineString([(30, 50), (30, 2)])}])
    r = run(buildings(("HOUSE", FRONT, {"units": 1})), parcels(("P", LOT)), FP, laterals=lat).loc["HOUSE"]
    assert (
        not r["lateral_below_standard"] and pd.isna(r["lateral_slope_in_per_ft"]) and pd.isna(r["lateral_diameter_in"])
    )
    assert r["existing_laterals"] == 1


def test_input_kept_and_index_preserved():
    b = buildings(*FRONT_REAR)
    b.index = [7, 9]
    out = assess_buildings(b, parcels(("P", LOT)), profile=FP, streets=frame([MAIN_ST]), mains=MAINS).buildings
    assert list(out.index) == [7, 9] and out.crs == b.crs and list(b.columns) == ["building_id", "units", "geometry"]


def test_buildings_command_shows_cases_for_the_administrative_body_and_building_sewers(tmp_path):
    """Through `sewerplan buildings`: a school (a case for the administrative body), a rear cottage with no other
    route mapped (for the reviewer), and a house whose 3-inch lateral is below § 144-11B."""
    import json

    from click.testing import CliRunner

    from gisapp.cli import main
    from layers.write import write_layers
    from tests.conftest import ny_frame

    path = tmp_path / "town.gpkg"
    write_layers(
        str(path),
        {
            "parcels": ny_frame(
                [
                    {"parcel_id": "HOME", "property_class": "210", "geometry": box(0, 25, 60, 225)},
                    {"parcel_id": "SCHOOL", "property_class": "612", "geometry": box(100, 25, 160, 225)},
                    {"parcel_id": "HOUSE", "property_class": "210", "geometry": box(200, 25, 260, 225)},
                ]
            ),
            "buildings": ny_frame(
                [
                    {"building_id": "FRONT", "units": 1, "geometry": FRONT},
                    {"building_id": "REAR", "units": 1, "geometry": REAR},
                    {"building_id": "S", "geometry": box(110, 50, 150, 90)},
                    {"building_id": "H", "units": 1, "geometry": box(210, 50, 250, 90)},
                ]
            ),
            "streets": ny_frame([MAIN_ST]),
            "mains": ny_frame([{"main_id": "M-1", "geometry": LineString([(-1000, 0), (1000, 0)])}]),
            "laterals": ny_frame(
                [
                    {
                        "lateral_id": "L-H",
                        "diameter": 3,
                        "inv_up": 100.5,
                        "inv_dn": 100.0,
                        "geometry": LineString([(230, 50), (230, 2)]),
                    }
                ]
            ),
        },
    )
    result = CliRunner().invoke(main, ["buildings", "--profile", "fort-plain", "--data", str(path), "--json"])
    assert result.exit_code == 0, result.output
    by = {b["building_id"]: b for b in json.loads(result.output)}
    assert by["S"]["manhole_connection_case"] and "a case for the administrative body to determine" in by["S"]["reason"]
    assert by["REAR"]["shared_lateral"] == "may_share_if_no_route"
    assert "no alleys layer was given" in by["REAR"]["reason"]
    assert by["H"]["lateral_diameter_in"] == 3.0 and by["H"]["lateral_slope_in_per_ft"] == pytest.approx(0.125)
    assert "Its building sewer L-H is 3 in, less than the 4 in § 144-11B" in by["H"]["reason"]
    text = " ".join(
        CliRunner(env={"COLUMNS": "400"})
        .invoke(main, ["buildings", "--profile", "fort-plain", "--data", str(path)])
        .output.split()
    )
    assert "1 manhole connection(s) for the administrative body to determine" in text
    assert "1 with a building sewer below the least size or slope" in text


def test_a_cottage_behind_the_second_house_on_a_lot_stands_at_the_rear_of_that_house():
    """Two houses side by side on one interior lot, a cottage behind the second: the law's "one building stands at
    the rear of another" is about any other building, not only the one nearest the street. The cottage was called
    "beside" the first house and told it needs its own building sewer, though it stands at the rear of the second."""
    wide = box(0, 25, 120, 225)
    b = buildings(
        ("HOUSE-A", box(10, 50, 50, 90), {"units": 1}),  # nearest the street: the lot's front building
        ("HOUSE-B", box(70, 55, 110, 95), {"units": 1}),  # beside it
        ("COTTAGE", box(80, 170, 100, 200), {"units": 1}),  # behind HOUSE-B
    )
    p = parcels(("P", wide))
    fp, wp = run(b, p, FP), run(b, p, WP)
    for r in (fp, wp):
        assert not r.loc["HOUSE-B", "rear_building"] and r.loc["HOUSE-B", "shared_lateral"] == "separate_required"
        assert bool(r.loc["COTTAGE", "rear_building"]) and r.loc["COTTAGE", "front_building_id"] == "HOUSE-B"
        assert r.loc["COTTAGE", "reason"].startswith("COTTAGE stands at the rear of HOUSE-B on an interior lot")
    assert fp.loc["COTTAGE", "shared_lateral"] == "may_share_if_no_route"
    assert wp.loc["COTTAGE", "shared_lateral"] == "main_extension_required"


def test_buildings_command_does_not_count_a_house_beside_another_among_the_rear_buildings(tmp_path):
    """One lot with a cottage behind its house, one with two houses side by side. The summary said "1 rear
    building(s) (1 may share ..., 1 need their own ...)": the house beside the other, which is no rear building,
    was counted as a rear building that needs its own building sewer."""
    from click.testing import CliRunner

    from gisapp.cli import main
    from layers.write import write_layers
    from tests.conftest import ny_frame

    path = tmp_path / "town.gpkg"
    write_layers(
        str(path),
        {
            "parcels": ny_frame(
                [
                    {"parcel_id": "COTTAGE-LOT", "geometry": LOT},
                    {"parcel_id": "TWO-HOUSES", "geometry": box(100, 25, 160, 225)},
                ]
            ),
            "buildings": ny_frame(
                [
                    {"building_id": "FRONT", "units": 1, "geometry": FRONT},
                    {"building_id": "REAR", "units": 1, "geometry": REAR},
                    {"building_id": "LEFT", "units": 1, "geometry": box(105, 50, 125, 90)},
                    {"building_id": "RIGHT", "units": 1, "geometry": box(135, 55, 155, 95)},
                ]
            ),
            "streets": ny_frame([MAIN_ST]),
            "mains": ny_frame([{"main_id": "M-1", "geometry": LineString([(-1000, 0), (1000, 0)])}]),
        },
    )
    result = CliRunner(env={"COLUMNS": "400"}).invoke(
        main, ["buildings", "--profile", "fort-plain", "--data", str(path)]
    )
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert (
        "1 rear building(s) (1 may share the front building's sewer if no other route exists, 0 need their own, "
        "0 need a main extension); 1 beside another building on its lot need(s) its own building sewer;"
    ) in text


@pytest.mark.parametrize("turn", [0, 90, 45])
def test_a_lot_measured_from_its_connection_point_gives_the_same_answer_turned(turn):
    """A lot that abuts no sewered street is measured from its connection point on the main behind it. A house
    near the unsewered street stands behind the cottage as seen from that point (their extents across the line of
    sight overlap by 2 ft; the straight route passes beside the cottage). Turned 90 degrees, the extents were taken
    along the x axis, which then runs along the line of sight: the house was called "beside" the cottage."""
    from shapely.affinity import rotate

    def turned(g):
        return rotate(g, turn, origin=(0, 0))

    streets = frame(
        [
            {"street_name": "Main St", "geometry": turned(LineString([(-1000, 0), (1000, 0)]))},
            {"street_name": "Back St", "geometry": turned(LineString([(-1000, 260), (1000, 260)]))},
        ]
    )
    mains = frame([{"main_id": "M-B", "geometry": turned(LineString([(-1000, 260), (1000, 260)]))}])
    at = turned(LineString([(30, 260), (30, 261)])).coords[0]
    p = frame(
        [{"parcel_id": "P", "main_id": "M-B", "connection_x": at[0], "connection_y": at[1], "geometry": turned(LOT)}]
    )
    b = buildings(
        ("HOUSE", turned(box(10, 50, 30, 90)), {"units": 1}),  # near Main St, which has no main
        ("COTTAGE", turned(box(28, 180, 53, 205)), {"units": 1}),  # near the main in Back St
    )
    r = assess_buildings(b, p, profile=FP, streets=streets, mains=mains).buildings.set_index("building_id")
    assert r.loc["HOUSE", "front_building_id"] == "COTTAGE"
    assert bool(r.loc["HOUSE", "rear_building"]), r.loc["HOUSE", "reason"]


@pytest.mark.parametrize("turn", [0, 90, 30])
def test_a_rear_building_on_a_street_that_does_not_run_east_west(turn):
    """The cottage overlaps the house by 2 ft across the lot and its straight route to the street passes beside
    the house. The overlap was taken along the x axis whatever the street's direction (the frontage, cut from the
    lot's boundary, begins and ends at one corner, so it gave no direction): on a north-south street the cottage
    was called "beside" the house and told it needs its own building sewer."""
    from shapely.affinity import rotate

    def turned(g):
        return rotate(g, turn, origin=(0, 0))

    street = LineString([(-1000, 0), (1000, 0)])
    at = turned(LineString([(30, 0), (30, 1)])).coords[0]
    p = frame(
        [{"parcel_id": "P", "main_id": "M-1", "connection_x": at[0], "connection_y": at[1], "geometry": turned(LOT)}]
    )
    b = buildings(("HOUSE", turned(box(10, 50, 30, 90))), ("COTTAGE", turned(box(28, 180, 53, 205))))
    r = assess_buildings(
        b,
        p,
        profile=FP,
        streets=frame([{"street_name": "Main St", "geometry": turned(street)}]),
        mains=frame([{"main_id": "M-1", "geometry": turned(street)}]),
    ).buildings.set_index("building_id")
    assert bool(r.loc["COTTAGE", "rear_building"]), r.loc["COTTAGE", "reason"]
    assert r.loc["COTTAGE", "shared_lateral"] == "may_share_if_no_route"


@pytest.mark.parametrize(
    ("front_units", "rear_units", "rear_needs", "words"),
    [
        (3, 2, 1, "would serve 5 living units (FRONT 3, REAR 2), which need at least 2 building sewers"),
        (2, 1, 0, "would serve 3 living units (FRONT 2, REAR 1), which need at least 1 building sewer,"),
        (7, 1, 0, "would serve 8 living units (FRONT 7, REAR 1), which need at least 2 building sewers"),
    ],
)
def test_a_rear_building_that_may_share_is_judged_with_the_front_buildings_units(
    front_units, rear_units, rear_needs, words
):
    """§ 144-9: the front building's sewer extended to the rear building is "the whole considered as one building
    sewer", so the rule of one building sewer "for each group of four living units" counts both buildings' units.
    RB-4R (2 units) behind RB-4F (3 units) said 1 building sewer and, with a laterals layer, "1 short" of its own,
    contradicting "may share", while nothing said the shared sewer would serve 5 units, which need 2."""
    b = buildings(("FRONT", FRONT, {"units": front_units}), ("REAR", REAR, {"units": rear_units}))
    elsewhere = frame([{"lateral_id": "L-9", "geometry": LineString([(500, 0), (500, 40)])}])
    r = run(b, parcels(("P", LOT)), FP, laterals=elsewhere)
    assert r.loc["REAR", "shared_lateral"] == "may_share_if_no_route"
    assert r.loc["REAR", "required_laterals"] == rear_needs
    assert pd.isna(r.loc["REAR", "lateral_shortfall"])  # no shortfall of its own: it may share
    assert words in r.loc["REAR", "reason"]
    assert ("one shared building sewer is not enough" in r.loc["REAR", "reason"]) is (rear_needs > 0)
    # Poughkeepsie has no units rule: a rear building that may share needs no building sewer of its own.
    pk = run(b, parcels(("P", LOT)), PK, laterals=elsewhere)
    assert pk.loc["REAR", "required_laterals"] == 0 and pd.isna(pk.loc["REAR", "lateral_shortfall"])
    assert "living units" not in pk.loc["REAR", "reason"]


@pytest.mark.parametrize("unknown", ["REAR", "FRONT"])
def test_a_shared_sewer_with_a_building_of_unknown_units_is_not_counted(unknown):
    """A rear building of unknown units was counted as none: "would serve 3 living units (F 3, R1 0) ... this
    building needs none of its own" (a tester). Unknown on either building, the whole is unknown and said so."""
    units = {"FRONT": {"units": 3}, "REAR": {"units": 1}}
    units[unknown] = {}
    b = buildings(("FRONT", FRONT, units["FRONT"]), ("REAR", REAR, units["REAR"]))
    r = run(b, parcels(("P", LOT, {"property_class": "210"})), FP)
    assert bool(r.loc[unknown, "units_unknown"])
    assert r.loc["REAR", "shared_lateral"] == "may_share_if_no_route"
    assert pd.isna(r.loc["REAR", "required_laterals"])
    assert "would serve living units that are not all known" in r.loc["REAR", "reason"]
    assert "needs none of its own" not in r.loc["REAR", "reason"]


def test_a_building_sewer_is_short_only_where_the_parcel_must_connect_and_the_reason_says_so(tmp_path):
    """With a laterals layer, every building without a mapped lateral was a case with section "-", an empty reason
    and lateral_shortfall 1, the summary counting none of them; a house out of range (LB-1 on LT-1, 150 ft from the
    main) among them, though it owes no building sewer. Now: a shortfall only on a parcel that must connect, and
    each case with its section and reason, counted in the summary line."""
    import json

    from click.testing import CliRunner

    from gisapp.cli import main
    from layers.write import write_layers
    from tests.conftest import ny_frame

    path = tmp_path / "town.gpkg"
    write_layers(
        str(path),
        {
            "parcels": ny_frame(
                [
                    {"parcel_id": "NEAR", "property_class": "210", "geometry": box(0, 25, 60, 225)},
                    {"parcel_id": "FAR", "property_class": "210", "geometry": box(300, 150, 360, 300)},
                    {"parcel_id": "LAID", "property_class": "210", "geometry": box(400, 25, 460, 225)},
                ]
            ),
            "buildings": ny_frame(
                [
                    {"building_id": "N", "units": 1, "geometry": FRONT},
                    {"building_id": "F", "units": 1, "geometry": box(310, 200, 350, 240)},
                    {"building_id": "L", "units": 1, "geometry": box(410, 50, 450, 90)},
                ]
            ),
            "streets": ny_frame([MAIN_ST]),
            "mains": ny_frame([{"main_id": "M-1", "geometry": LineString([(-1000, 0), (1000, 0)])}]),
            "laterals": ny_frame([{"lateral_id": "L-L", "geometry": LineString([(430, 50), (430, 2)])}]),
        },
    )
    out = tmp_path / "b.csv"
    args = ["buildings", "--profile", "fort-plain", "--data", str(path)]
    result = CliRunner().invoke(main, [*args, "--json"])
    assert result.exit_code == 0, result.output
    by = {b["building_id"]: b for b in json.loads(result.output)}
    assert set(by) == {"N"}  # F owes nothing (out of range); L has its lateral
    assert by["N"]["section"] == "§ 144-9 (section number derived)"
    assert "No building sewer of the laterals layer reaches it: it needs its own (§ 144-9" in by["N"]["reason"]
    CliRunner().invoke(main, [*args, "--all", "--out", str(out)])
    shortfall = pd.read_csv(out, dtype=str, keep_default_na=False).set_index("building_id")["lateral_shortfall"]
    assert shortfall.to_dict() == {"N": "1", "F": "", "L": "0"}
    text = " ".join(CliRunner(env={"COLUMNS": "400"}).invoke(main, args).output.split())
    assert "1 with fewer building sewers mapped than required" in text
    # analyze's line on the buildings counts them too (it did not)
    run = CliRunner(env={"COLUMNS": "400"}).invoke(main, ["analyze", *args[1:]])
    assert "1 with fewer building sewers mapped than required (sewerplan buildings lists them)" in " ".join(
        run.output.split()
    )


def test_apartments_are_no_commercial_complex_and_a_parcels_units_for_two_buildings_are_said_so():
    """Class 411 is apartments (NYS property classes: 400s commercial, but 411 apartments). Two apartment houses on a
    411 parcel were "a complex of 2 industrial or commercial buildings", a § 144-16 case; and with the parcel's
    8 units, "Living units unknown (property class needs a count)" though the parcel gives a count."""
    b = buildings(("A", box(5, 50, 25, 90)), ("B", box(35, 55, 55, 95)))
    r = run(b, parcels(("P", LOT, {"property_class": "411", "units": 8})), FP)
    assert not r["manhole_connection_case"].any()
    assert r["units_unknown"].all() and r["required_laterals"].isna().all()
    assert (
        "the parcel's 8 are for its 2 buildings, and the data does not say how many each holds" in r.loc["A", "reason"]
    )
    assert "property class needs a count" not in r.loc["A", "reason"]
    r = run(b, parcels(("P", LOT, {"property_class": "230"})), FP)
    assert "property class 230 gives 3 for the whole parcel, with its 2 buildings" in r.loc["A", "reason"]
    # A commercial class is still a complex, and a 411 parcel without a count still needs one.
    assert run(b, parcels(("P", LOT, {"property_class": "484"})), FP)["manhole_connection_case"].all()
    one = run(buildings(("A", FRONT)), parcels(("P", LOT, {"property_class": "411"})), FP)
    assert "Living units unknown (property class needs a count)" in one.loc["A", "reason"]


def test_each_law_is_quoted_in_its_own_words_for_a_rear_building():
    """Fort Plain's reason paraphrased "If no sewer is available or can be constructed", Poughkeepsie's § 168-22.4D
    wording, under § 144-9, which says "no private sewer"; and Wappinger's rear building on a through lot read "the
    exception is for interior lots only", though § 196-18D has no exception: it extends the main."""
    b, p = buildings(*FRONT_REAR), parcels(("P", LOT))
    fp, pk = run(b, p, FP).loc["REAR", "reason"], run(b, p, PK).loc["REAR", "reason"]
    assert (
        "no private sewer is available or can be constructed to the rear building through an adjoining alley, "
        "court, yard or driveway" in fp
    )
    assert "(§ 144-9; section number derived): \u201c\u2026where one building stands at the rear" in fp
    assert (
        "no sewer is available or can be constructed to the rear building through an adjoining alley, courtyard"
        " or driveway" in pk
    )
    assert "private sewer" not in pk
    assert "If no sewer is available" not in fp and "If no sewer is available" not in pk
    back = {"street_name": "Canal St", "geometry": LineString([(-1000, 250), (1000, 250)])}
    wp = run(b, p, WP, streets=(MAIN_ST, back)).loc["REAR", "reason"]
    assert "exception" not in wp
    assert "the law lets no building share another's building sewer, so it needs its own (§ 196-18D)." in wp
    # Fort Plain's exception is for interior lots: there, a through lot's rear building still reads so.
    assert "the exception is for interior lots only" in run(b, p, FP, streets=(MAIN_ST, back)).loc["REAR", "reason"]
