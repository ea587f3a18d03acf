"""Further duties on hand-made parcels whose answers can be seen: grease interceptors, industrial users and their
control manholes, subdivisions; and the same through `sewerplan duties`."""

from __future__ import annotations

import json
import re

import geopandas as gpd
import pandas as pd
import pytest
from click.testing import CliRunner
from shapely.geometry import LineString, Point, box

from analysis.discharges import assess_discharges
from analysis.duties import assess_duties
from analysis.network import build_network
from analysis.profiles import load_profile
from analysis.subdivisions import assess_subdivisions
from analysis.trace import add_network_results
from gisapp.cli import main
from layers.write import write_layers
from tests.conftest import frame, ny_frame

FP, PK, WP = (load_profile(n) for n in ("fort-plain", "poughkeepsie", "wappinger"))
ACRE_SIDE = 208.71033  # feet: a square acre (43,560 sq ft)


def lots(*rows, status="connected"):
    """Parcels in a row along y=0..100: (id, property class, extra attributes)."""
    return frame(
        [
            {
                "parcel_id": r[0],
                "status": status,
                "property_class": r[1],
                **(r[2] if len(r) > 2 else {}),
                "geometry": box(i * 100, 0, i * 100 + 90, 100),
            }
            for i, r in enumerate(rows)
        ]
    )


# Grease interceptors -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("profile", "verdict", "words"),
    [
        (WP, "required", "grease traps shall be provided for its kitchen wastes (§ 196-19F(2))"),
        (FP, "for_decision", "when the engineer finds one necessary"),
        (PK, "for_decision", "when the Superintendent finds one necessary"),
    ],
)
def test_restaurants_and_grease(profile, verdict, words):
    r = assess_discharges(lots(("DINER", "421"), ("BAR", "425"), ("HOUSE", "210"), ("SHOP", "452")), profile=profile)
    g = r.parcels.set_index("parcel_id")["grease_interceptor"]
    assert g.to_dict() == {"DINER": verdict, "BAR": verdict, "HOUSE": None, "SHOP": None}
    duties = r.parcels.set_index("parcel_id")["discharge_duties"]
    assert words in duties["DINER"] and "(property class 421)" in duties["DINER"]
    assert (
        profile.discharges.grease_interceptor.citation
        in r.parcels.set_index("parcel_id").loc["DINER", "discharge_sections"]
    )
    if verdict == "for_decision":  # never stated as the law's requirement: a decision for the officer
        assert "shall be provided" not in duties["DINER"] and duties["DINER"].endswith("to decide.")
    assert r.summary["grease_interceptors"][verdict] == 2


def test_grease_only_for_parcels_that_use_the_sewer():
    r = assess_discharges(lots(("DINER", "421"), status="out_of_range"), profile=WP)
    assert r.parcels["grease_interceptor"].isna().all()


def test_dwellings_are_never_listed_for_an_interceptor_in_fort_plain_and_poughkeepsie():
    # Even when a village lists residential classes as food services, § 144-23A's exception holds.
    for name in ("fort-plain", "poughkeepsie"):
        wide = load_profile(name, overrides={"discharges.food_service_classes": ["42", "2", "411"]})
        assert wide.discharges.interceptor_exempt_classes.value == ["2", "411"]
        r = assess_discharges(lots(("HOUSE", "210"), ("APTS", "411"), ("DINER", "421")), profile=wide)
        assert r.parcels["grease_interceptor"].tolist() == [None, None, "for_decision"]


# Industrial users ----------------------------------------------------------------------------------------------


def _users(flow_gpd, profile, **extra):
    """One user with ``flow_gpd`` among 40 houses of 2.5 units (250 gpd per unit: 25,000 gpd in all)."""
    houses = [(f"H{i}", "210", {"units": 2.5}) for i in range(40)]
    parcels = lots(("MILL", "710", {"flow_gpd": flow_gpd}), *houses)
    return assess_discharges(parcels, profile=profile, **extra).parcels.set_index("parcel_id").loc["MILL"]


@pytest.mark.parametrize(
    ("flow", "expected"),
    [
        (400.0, None),  # 400 / 25,400 = 1.6%: below § 144-25A's 2%
        (600.0, "review"),  # 600 / 25,600 = 2.3%: the engineer's review
        (1400.0, "significant"),  # 1,400 / 26,400 = 5.3%: more than 5% of the flow in the system
    ],
)
def test_fort_plain_shares_of_the_village_flow(flow, expected):
    mill = _users(flow, FP)
    assert mill["industrial_user"] == expected
    assert mill["flow_share_pct"] == pytest.approx(flow / (25_000 + flow) * 100, abs=1e-3)
    if expected == "review":
        assert (
            "subject to the review and approval of the engineer (§ 144-25A; section number derived)"
            in mill["discharge_duties"]
        )
    if expected == "significant":
        assert (
            "a significant industrial user (more than 5% of the flow in the system, § 144-1" in mill["discharge_duties"]
        )


def test_fort_plain_25000_gallons_a_day_is_significant_whatever_the_share():
    # With the village's measured flow set large, 25,000 gpd is under 2% and still a significant user.
    big = load_profile("fort-plain", overrides={"discharges.system_flow_gpd": "5000000"})
    assert _users(25_000.0, big)["industrial_user"] == "significant"
    assert _users(24_999.0, big)["industrial_user"] is None
    assert "25,000 gallons or more per average work day" in _users(25_000.0, big)["discharge_duties"]


@pytest.mark.parametrize(("flow", "expected"), [(10_000.0, None), (10_001.0, "review")])
def test_poughkeepsie_reviews_more_than_10000_gallons_a_day(flow, expected):
    mill = _users(flow, PK)
    assert mill["industrial_user"] == expected
    if expected:
        assert (
            "Above 10,000 gallons per day: subject to the review and approval of the Superintendent"
            in mill["discharge_duties"]
        )


def test_a_dwelling_is_never_a_significant_industrial_user():
    # 100 apartments (411) send 25,000 gpd, 91% of a small system: the engineer reviews it (§ 144-25A: "any waters
    # or wastes"), but an apartment house is no industrial or commercial establishment (§ 144-1).
    houses = [(f"H{i}", "210", {"units": 1}) for i in range(10)]
    r = assess_discharges(lots(("APTS", "411", {"units": 100}), *houses), profile=FP).parcels.set_index("parcel_id")
    assert r.loc["APTS", "industrial_user"] == "review"
    assert FP.discharges.residential_classes.value == ["2", "411"]
    assert "significant" not in r.loc["APTS", "discharge_duties"]


def test_wappinger_lists_no_one_by_flow():
    assert _users(50_000.0, WP)["industrial_user"] is None


def test_an_industrial_parcel_without_a_flow_is_listed_as_unknown():
    houses = [(f"H{i}", "210", {"units": 1}) for i in range(60)]
    r = assess_discharges(lots(("MILL", "710"), *houses), profile=FP).parcels
    assert r["industrial_user"].tolist() == ["flow_unknown"] + [None] * 60
    assert "its flow is not given (a flow_gpd column)" in r.loc[0, "discharge_duties"]


def test_no_share_is_judged_against_a_system_flow_that_leaves_out_parcels_of_unknown_flow():
    """A tester's town: two parcels with a flow_gpd (300 and 2,000) and 87 with neither a flow nor living units. The
    87 were counted as nothing, the system was 2,300 gpd, and a house of 300 gpd was a "significant" industrial user
    at 13.0% (§ 144-1) while the summary said "0 with flow unknown". The system's flow is not known, and no share
    of it is judged significant: against the flow known, a share is only the most it can be, so both parcels (of no
    class: not known to be dwellings) are possibly significant, for review; the 2,000 gpd parcel is still listed
    where the law sets a number of gallons."""
    blank = [(f"U{i}", "") for i in range(87)]
    parcels = lots(("HOUSE", "", {"flow_gpd": 300.0}), ("SHOP", "", {"flow_gpd": 2000.0}), *blank)
    r = assess_discharges(parcels, profile=FP)
    assert r.summary["system_flow_gpd"] is None
    assert r.summary["system_flow_at_least_gpd"] == 2300 and r.summary["system_flow_parcels_unknown"] == 87
    assert r.summary["system_flow_source"].startswith("not known: 87 parcels connected or required to connect")
    assert r.summary["industrial_users"] == {
        "significant": 0,
        "possibly_significant": 2,
        "review": 0,
        "possibly_review": 0,  # both possibly above 2% too: listed once, as possibly significant
        "flow_unknown": 0,
    }
    assert r.parcels["industrial_user"].iloc[:2].tolist() == ["possibly_significant"] * 2
    assert "at most 13.0% of the system's flow, which is at least 2,300 gpd" in r.parcels["discharge_duties"].iloc[0]
    assert r.parcels["flow_share_pct"].isna().all()
    # Poughkeepsie's review is at 10,000 gallons a day, no share: a parcel above it is listed, its share bounded
    pk = assess_discharges(lots(("MILL", "710", {"flow_gpd": 12_000.0}), *blank), profile=PK).parcels.iloc[0]
    assert pk["industrial_user"] == "review"
    assert pk["discharge_duties"].startswith(
        "Average flow 12,000 gpd (as given), at most 100.0% of the system's flow, which is at least 12,000 gpd (87 "
        "parcels connected or required to connect have no flow given and no living units). Above 10,000 gallons per "
        "day"
    ), pk["discharge_duties"]
    # Every flow known: the share is judged as before.
    assert assess_discharges(parcels.iloc[:2], profile=FP).summary["system_flow_gpd"] == 2300


def test_control_manhole_and_system_flow_from_the_network():
    # Two laterals' worth of parcels on main A (MH1 -> MH2), one on main B (MH2 -> MH3), plant at MH3.
    mains = frame(
        [
            {"main_id": "A", "geometry": LineString([(0, -20), (300, -20)])},
            {"main_id": "B", "geometry": LineString([(300, -20), (600, -20)])},
        ]
    )
    manholes = frame(
        [{"manhole_id": k, "geometry": Point(x, -20)} for k, x in (("MH1", 0), ("MH2", 300), ("MH3", 600))]
    )
    plant = frame([{"outfall_id": "WWTP", "outfall_manhole": "MH3", "geometry": Point(620, -20)}])
    net = build_network(mains, manholes=manholes, outfalls=plant, profile=FP)
    parcels = lots(
        ("MILL", "710", {"flow_gpd": 3000.0}),
        ("H1", "210", {"units": 4}),
        ("H2", "220", {"units": 4}),
        ("H3", "210", {"units": 4}),
        ("FAR", "210", {"units": 400}),  # out of range: not part of the system's flow
    ).assign(main_id=["A", "A", "A", "B", "B"], connection_x=[45, 145, 245, 345, 445], connection_y=-20.0)
    parcels.loc[4, "status"] = "out_of_range"
    traced, _ = add_network_results(parcels, net)
    r = assess_discharges(traced, profile=FP, network=net)
    assert r.summary["system_flow_gpd"] == 3000 + 12 * 250
    assert r.summary["system_flow_source"] == "estimated: the sewershed of MH3"
    mill = r.parcels.set_index("parcel_id").loc["MILL"]
    assert mill["industrial_user"] == "significant" and mill["flow_share_pct"] == 50.0
    assert (
        "Control manhole MH2: the nearest downstream manhole (§ 144-28; section number derived)"
        in mill["discharge_duties"]
    )
    assert "§ 144-28" in mill["discharge_sections"]


# Subdivisions --------------------------------------------------------------------------------------------------


def subdivisions(*rows):
    """(id, acres, units, x offset)."""
    return frame(
        [
            {"subdivision_id": r[0], "units": r[2], "geometry": box(r[3], 0, r[3] + ACRE_SIDE, r[1] * ACRE_SIDE)}
            for r in rows
        ]
    )


def test_wappinger_plots_under_one_acre_per_unit_build_sewers():
    areas = frame([{"area_name": "outside the subdivisions", "mandates": "yes", "geometry": box(0, -900, 10, -800)}])
    subs = subdivisions(("SMALL", 10, 11, 0), ("EXACT", 10, 10, 1000), ("LARGE", 10, 5, 2000), ("NONE", 10, None, 3000))
    r = assess_subdivisions(subs, profile=WP, service_areas=areas).set_index("subdivision_id")
    assert r["sewer_duty"].to_dict() == {
        "SMALL": "must_build_sewers",  # 0.91 acre per unit: "less than one acre"
        "EXACT": "not_required",  # exactly one acre is not less than one acre
        "LARGE": "not_required",
        "NONE": "unknown",
    }
    assert r.loc["SMALL", "section"] == "§ 196-16G" and "less than 1 acre (§ 196-16G)" in r.loc["SMALL", "reason"]
    assert r.loc["EXACT", "acres_per_unit"] == pytest.approx(1.0, abs=1e-3)
    assert "its dwelling units are not given" in r.loc["NONE", "reason"]


def test_wappinger_district_and_phase_three():
    areas = frame(
        [
            {"area_name": "Phase I/II", "mandates": "yes", "geometry": box(-10, -10, 500, 5000)},
            {"area_name": "Phase III", "mandates": "no", "geometry": box(900, -10, 1500, 5000)},
        ]
    )
    subs = subdivisions(("IN", 10, 2, 0), ("P3", 10, 20, 1000), ("OUT", 10, 2, 2000))
    r = assess_subdivisions(subs, profile=WP, service_areas=areas).set_index("subdivision_id")
    assert r["sewer_duty"].to_dict() == {
        "IN": "must_build_sewers",
        "P3": "private_until_available",
        "OUT": "not_required",
    }
    assert "lies in a sewer district" in r.loc["IN", "reason"] and r.loc["P3", "section"] == "§ 196-23B"
    # § 196-16G rules both the plot size and the district: cited once, in one pair of brackets.
    assert r.loc["OUT", "reason"].endswith(
        "(2 units), not less than 1 acre, and outside every sewer district (§ 196-16G)."
    )
    # Without the service areas the district test cannot be made: large plots stay undecided.
    without = assess_subdivisions(subs, profile=WP).set_index("subdivision_id")
    assert without["sewer_duty"].to_dict() == {"IN": "unknown", "P3": "must_build_sewers", "OUT": "unknown"}
    assert "no service_areas layer was given" in without.loc["IN", "reason"]


def test_fort_plain_sewers_every_new_development_and_poughkeepsie_sets_no_rule():
    subs = subdivisions(("BIG", 40, 2, 0))
    fp = assess_subdivisions(subs, profile=FP).iloc[0]
    assert (fp["sewer_duty"], fp["section"]) == ("must_build_sewers", "§ 144-21 (section number derived)")
    assert "approved system of sanitary sewers (§ 144-21; section number derived)." in fp["reason"]
    assert assess_subdivisions(subs, profile=PK).iloc[0]["sewer_duty"] == "no_rule"


def test_parcels_inside_a_subdivision_carry_its_duty():
    parcels = lots(("TRACT", "311", {"units": None}), status="unoccupied")
    subs = subdivisions(("S-1", 0.5, 2, -10))
    r = assess_duties(parcels, profile=WP, subdivisions=subs).parcels.iloc[0]
    assert (r["in_subdivision"], r["subdivision_duty"]) == ("S-1", "must_build_sewers")
    assert r["duties"].startswith("In proposed subdivision S-1: The owners shall construct sewers")
    assert r["duties_section"] == "§ 196-16G"


def test_input_not_changed_and_index_kept():
    parcels = lots(("DINER", "421"), ("MILL", "710", {"flow_gpd": 30_000.0}))
    parcels.index = [5, 9]
    before = parcels.copy()
    out = assess_duties(parcels, profile=FP).parcels
    assert list(out.index) == [5, 9] and out.crs == parcels.crs
    pd.testing.assert_frame_equal(parcels, before)


# Through the command line ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def town(tmp_path_factory):
    """A block of four lots on a sewered street, a restaurant and a mill among them, and a subdivision behind."""
    path = tmp_path_factory.mktemp("duties") / "town.gpkg"
    street = LineString([(-100, 0), (1000, 0)])
    layers = {
        "parcels": ny_frame(
            [
                {"parcel_id": "DINER", "property_class": "421", "occupied": "yes", "geometry": box(0, 25, 90, 125)},
                {
                    "parcel_id": "MILL",
                    "property_class": "710",
                    "occupied": "yes",
                    "flow_gpd": 30_000,
                    "geometry": box(100, 25, 190, 125),
                },
                {
                    "parcel_id": "HOUSE",
                    "property_class": "210",
                    "occupied": "yes",
                    "units": 1,
                    "geometry": box(200, 25, 290, 125),
                },
                {"parcel_id": "TRACT", "property_class": "311", "occupied": "no", "geometry": box(0, 200, 900, 900)},
            ]
        ),
        "mains": ny_frame([{"main_id": "M-1", "geometry": LineString([(-100, 0), (1000, 0)])}]),
        "manholes": ny_frame(
            [{"manhole_id": "MH-1", "geometry": Point(-100, 0)}, {"manhole_id": "MH-2", "geometry": Point(1000, 0)}]
        ),
        "treatment_plants": ny_frame([{"outfall_id": "WWTP", "outfall_manhole": "MH-2", "geometry": Point(1020, 0)}]),
        "streets": ny_frame([{"street_name": "Main St", "geometry": street}]),
        "subdivisions": ny_frame([{"subdivision_id": "S-1", "units": 20, "geometry": box(0, 200, 900, 900)}]),
    }
    write_layers(str(path), layers)
    return str(path)


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def test_duties_command_json(town, tmp_path):
    result = invoke("duties", "--profile", "wappinger", "--set", "mandate.distance_ft=200", "--data", town, "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    by = {p["parcel_id"]: p for p in doc["parcels"]}
    assert set(by) == {"DINER", "TRACT"}  # the mill: Wappinger sets no flow threshold
    assert by["DINER"]["grease_interceptor"] == "required" and by["DINER"]["duties_section"] == "§ 196-19F(2)"
    assert by["TRACT"]["subdivision_duty"] == "must_build_sewers"  # 14.5 acres for 20 units: 0.72 acre each
    assert doc["subdivisions"][0]["subdivision_id"] == "S-1"

    fp = json.loads(invoke("duties", "--profile", "fort-plain", "--data", town, "--json").output)
    by = {p["parcel_id"]: p for p in fp["parcels"]}
    assert by["MILL"]["industrial_user"] == "significant" and by["MILL"]["control_manhole"] == "MH-2"
    assert by["DINER"]["grease_interceptor"] == "for_decision"
    assert by["TRACT"]["subdivision_duty"] == "must_build_sewers"
    # The diner gives no flow and no living units: the system's flow is not known, and said so with what is known.
    assert fp["summary"]["system_flow_gpd"] is None
    assert fp["summary"]["system_flow_source"] == (
        "not known: 1 parcel connected or required to connect has no flow given and no living units recorded, so "
        "the 30,250 gpd of the rest is only a lower bound"
    )
    assert fp["summary"]["system_flow_at_least_gpd"] == 30_250 and fp["summary"]["system_flow_parcels_unknown"] == 1
    assert by["MILL"]["flow_share_pct"] is None  # significant by its 30,000 gpd alone
    text = " ".join(CliRunner().invoke(main, ["duties", "--profile", "fort-plain", "--data", town]).output.split())
    assert (
        "System flow not known: 1 parcel connected or required to connect has no flow given and no living units "
        "recorded, so the 30,250 gpd of the rest is only a lower bound; a parcel's share of it is at most its share of "
        "the flow known, and an establishment with more than 5% of that is possibly a significant industrial user, "
        "for review, never significant by its share (§ 144-1, section number derived), and a parcel with more than 2% "
        "of that is possibly for review, never for review by its share (§ 144-25A, section number derived). Give the "
        "plant's measured average daily flow with "
        "--set discharges.system_flow_gpd=GPD, or the parcels' flows (a flow_gpd column) or living units."
    ) in text
    assert not re.search(r"\([^()]*\([^()]*\)[^()]*\)", text.split("Further duties under")[0]), text
    assert (
        "Average flow 30,000 gpd (as given), at most 99.2% of the system's flow, which is at least 30,250 gpd (1 "
        "parcel connected or required to connect has no flow given and no living units): a significant industrial "
        "user (25,000 gallons or more per average work day, § 144-1; section number derived)."
    ) in by["MILL"]["duties"]

    # A flow set by the user is cited inside the sentence's one pair of brackets, flags and all.
    given = ("duties", "--profile", "fort-plain", "--data", town, "--set", "discharges.system_flow_gpd=25600")
    text = " ".join(CliRunner().invoke(main, list(map(str, given)), env={"COLUMNS": "300"}).output.split())
    assert (
        "System flow 25,600 gpd (set in the profile, § 144-25A; section number derived; value set by the user)." in text
    )
    assert not re.search(r"\([^()]*\([^()]*\)[^()]*\)", text.split("Further duties under")[0]), text
    assert (
        "Average flow 30,000 gpd (as given), at most 99.2% of the system's flow, which is at least 30,250 gpd (1 "
        "parcel connected or required to connect has no flow given and no living units): a significant industrial "
        "user (25,000 gallons or more per average work day, § 144-1; section number derived)."
    ) in by["MILL"]["duties"]

    out = tmp_path / "duties.csv"
    assert invoke("duties", "--profile", "fort-plain", "--data", town, "--out", out).exit_code == 0
    written = pd.read_csv(out)
    assert {"duties", "duties_section", "grease_interceptor", "industrial_user"} <= set(written.columns)


def test_duties_command_table_and_analyze_writes_the_columns(town, tmp_path):
    text = " ".join(invoke("duties", "--profile", "fort-plain", "--data", town).output.split())
    assert "Grease interceptors: 0 required, 1 for the engineer to decide" in text
    assert "Industrial users: 1 significant, 0 with flow unknown. Flows for review, of any parcel: 0 above" in text
    out = tmp_path / "results.gpkg"
    assert invoke("analyze", "--profile", "fort-plain", "--data", town, "--out", out).exit_code == 0
    written = gpd.read_file(out, layer="parcel_results").set_index("parcel_id")
    assert written.loc["MILL", "industrial_user"] == "significant"
    assert "§ 144-1" in written.loc["MILL", "duties_section"]


def test_a_share_of_an_estimated_system_flow_says_it_is_an_estimate():
    """A two-family house was "3.6% of the system's 14,000 gpd", for review, the system being the mandated parcels
    of a town's data with none known connected, and nothing said so (a tester). The estimate says what it is; the
    plant's measured flow, set in the profile, is given as set."""
    estimated = _users(600.0, FP)["discharge_duties"]
    assert (
        "2.3% of the system's 25,600 gpd (estimated: every parcel connected or required to connect in the data, "
        "not the plant's measured flow)" in estimated
    )
    measured = load_profile("fort-plain", overrides={"discharges.system_flow_gpd": "20000"})
    said = _users(600.0, measured)["discharge_duties"]
    assert "3.0% of the system's 20,000 gpd. Above 2%" in said and "estimated" not in said
