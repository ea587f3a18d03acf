"""Industrial users where the system's flow is not known: its lower bound (the flow known) bounds every share from
above. An establishment whose share of the bound is more than the law's share is possibly a significant industrial
user, listed for review, never as significant; one at or under it certainly is not one by its share. No share was
judged at all: a shop sending 40% of all the flow known passed unlisted because one parcel's flow was unknown."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner
from shapely.geometry import LineString, Point, box

from analysis.discharges import assess_discharges
from analysis.profiles import load_profile
from gisapp.cli import main
from layers.write import write_layers
from tests.conftest import frame, ny_frame

FP, PK = load_profile("fort-plain"), load_profile("poughkeepsie")

# 5,000 gpd known: the shop 2,000 (40%), a shop at exactly 5% (250), an office at 3% (150), a metered house of
# 100 gpd and ten houses of one living unit (2,500); and a parcel with no flow given and no living units.
ROWS = [
    ("SHOP", "482", {"flow_gpd": 2000.0}),
    ("EXACT", "482", {"flow_gpd": 250.0}),
    ("OFFICE", "464", {"flow_gpd": 150.0}),
    ("METERED", "210", {"flow_gpd": 100.0}),
    *[(f"H{i}", "210", {"units": 1}) for i in range(10)],
    ("BLANK", "", {}),
]


def lots(rows=ROWS, **given):
    return frame(
        [
            {
                "parcel_id": pid,
                "status": "connected",
                "property_class": klass,
                **extra,
                **({"flow_gpd": given[pid]} if pid in given else {}),
                "geometry": box(i * 70, 0, i * 70 + 60, 100),
            }
            for i, (pid, klass, extra) in enumerate(rows)
        ]
    )


def test_a_share_of_the_flow_known_above_the_law_is_possibly_significant_never_significant():
    r = assess_discharges(lots(), profile=FP)
    assert r.summary["system_flow_gpd"] is None and r.summary["system_flow_at_least_gpd"] == 5000
    users = r.parcels.set_index("parcel_id")["industrial_user"]
    # 40% of the flow known: possibly more than 5%; exactly 5% and 3% of it: at most 5%, certainly not "more than"
    # 5%, but possibly more than § 144-25A's 2%, as each house's 5% (test_the_review_share_is_bounded_the_same_way)
    assert users[users != "possibly_review"].dropna().to_dict() == {"SHOP": "possibly_significant"}
    assert r.summary["industrial_users"] == {
        "significant": 0,
        "possibly_significant": 1,
        "review": 0,
        "possibly_review": 12,
        "flow_unknown": 0,
    }
    shop = r.parcels.set_index("parcel_id").loc["SHOP"]
    assert shop["discharge_duties"].startswith(
        "Average flow 2,000 gpd (as given), at most 40.0% of the system's flow, which is at least 5,000 gpd (1 parcel "
        "connected or required to connect has no flow given and no living units): possibly a significant industrial "
        "user, for review (more than 5% of the flow in the system, § 144-1; section number derived): its share is 5% "
        "or less only if the 1 parcel of unknown flow sends 35,000 gpd or more."
    ), shop["discharge_duties"]
    assert shop["discharge_sections"].startswith("§ 144-1 (section number derived)")
    # the share itself is not known: the column holds shares, not bounds
    assert r.parcels["flow_share_pct"].isna().all()


@pytest.mark.parametrize(("blank_gpd", "expected"), [(35_000.0, "review"), (34_999.0, "significant")])
def test_the_gpd_the_sentence_names_is_where_the_share_crosses_the_law(blank_gpd, expected):
    """Once the blank parcel's flow is given, the share is judged: at the 35,000 gpd the sentence named the shop is
    5% of 40,000 gpd, not more (still above 2%, for the engineer's review); a gallon less, it is more."""
    r = assess_discharges(lots(BLANK=blank_gpd), profile=FP)
    assert r.summary["system_flow_gpd"] == 5000 + blank_gpd
    assert r.parcels.set_index("parcel_id").loc["SHOP", "industrial_user"] == expected


def test_dwellings_a_set_system_flow_and_laws_without_a_share_are_as_before():
    houses = [(f"H{i}", "210", {"units": 1}) for i in range(3)]
    # a dwelling of 96% of the flow known is no industrial user (§ 144-1: an establishment); § 144-25A's review is
    # of any flow, a dwelling's too: possibly above its 2%, as a known share above it is for review
    r = assess_discharges(lots([("APTS", "411", {"flow_gpd": 20_000.0}), *houses, ("BLANK", "", {})]), profile=FP)
    assert r.parcels["industrial_user"].tolist() == ["possibly_review", None, None, None, None]
    # the plant's measured flow set: the share is judged against it
    measured = load_profile("fort-plain", overrides={"discharges.system_flow_gpd": "100000"})
    assert assess_discharges(lots(), profile=measured).parcels["industrial_user"].isna().all()
    # Poughkeepsie sets no share: nothing is possibly significant
    assert assess_discharges(lots(), profile=PK).summary["industrial_users"]["possibly_significant"] == 0


@pytest.fixture(scope="module")
def town(tmp_path_factory):
    """The lots of ROWS along one sewered street, occupied: mandated under Fort Plain."""
    path = tmp_path_factory.mktemp("bound") / "town.gpkg"
    layers = {
        "parcels": ny_frame(
            [
                {"parcel_id": pid, "property_class": klass, "occupied": "yes", **extra}
                | {"geometry": box(i * 70 - 90, 25, i * 70 - 30, 125)}
                for i, (pid, klass, extra) in enumerate(ROWS)
            ]
        ),
        "mains": ny_frame([{"main_id": "M-1", "geometry": LineString([(-100, 0), (1000, 0)])}]),
        "manholes": ny_frame(
            [{"manhole_id": "MH-1", "geometry": Point(-100, 0)}, {"manhole_id": "MH-2", "geometry": Point(1000, 0)}]
        ),
        "treatment_plants": ny_frame([{"outfall_id": "WWTP", "outfall_manhole": "MH-2", "geometry": Point(1020, 0)}]),
        "streets": ny_frame([{"street_name": "Main St", "geometry": LineString([(-100, 0), (1000, 0)])}]),
    }
    write_layers(str(path), layers)
    return str(path)


def duties(*args):
    result = CliRunner().invoke(
        main, ["duties", "--profile", "fort-plain", *map(str, args)], env={"COLUMNS": "300"}, catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    return result.output


def test_duties_lists_the_possibly_significant_user_for_review(town):
    doc = json.loads(duties("--data", town, "--json"))
    s = doc["summary"]
    assert s["system_flow_gpd"] is None and s["system_flow_source"].endswith(
        "the 5,000 gpd of the rest is only a lower bound"
    )
    assert s["industrial_users"]["possibly_significant"] == 1 and s["industrial_users"]["significant"] == 0
    by = {p["parcel_id"]: p for p in doc["parcels"]}
    assert set(by) == {"SHOP", "EXACT", "OFFICE", *(f"H{i}" for i in range(10))}  # METERED: exactly 2%, not more
    assert by["SHOP"]["industrial_user"] == "possibly_significant" and by["SHOP"]["control_manhole"] == "MH-2"
    assert (
        "its share is 5% or less only if the 1 parcel of unknown flow sends 35,000 gpd or more" in by["SHOP"]["duties"]
    )
    text = " ".join(duties("--data", town).split())
    assert (
        "Industrial users: 0 significant, 1 possibly significant, for review, 0 with flow unknown. Flows for review, "
        "of any parcel: 0 above the threshold, 12 possibly above it." in (text)
    )
    assert (
        "only a lower bound; a parcel's share of it is at most its share of the flow known, and an establishment with "
        "more than 5% of that is possibly a significant industrial user, for review, never significant by its share "
        "(§ 144-1, section number derived), and a parcel with more than 2% of that is possibly for review, never for "
        "review by its share (§ 144-25A, section number derived). Give the plant's measured average daily flow"
    ) in text, text
    assert "possibly_significant" in text  # the table's industrial column, as it shows "significant"


def test_the_review_share_is_bounded_the_same_way():
    """§ 144-25A puts a flow above 2% of the village's to the engineer's review. Where the system's flow is not known,
    a share of the flow known is the most the share can be: above 2% of it is possibly for review, worded as the
    possibly significant user is, never for review; at 2% or less, certainly not. It was not judged at all: the
    office at 3% of all the flow known passed unlisted because one parcel's flow was unknown."""
    r = assess_discharges(lots(), profile=FP)
    users = r.parcels.set_index("parcel_id")
    assert users.loc["OFFICE", "industrial_user"] == "possibly_review"
    assert users.loc["EXACT", "industrial_user"] == "possibly_review"  # 5% of the known: not "more than" 5%, > 2%
    assert users.loc["METERED", "industrial_user"] is None  # 100 gpd: exactly 2% of the flow known, not more
    assert (r.parcels["industrial_user"] == "review").sum() == 0
    office = users.loc["OFFICE"]
    assert office["discharge_duties"].startswith(
        "Average flow 150 gpd (as given), at most 3.0% of the system's flow, which is at least 5,000 gpd (1 parcel "
        "connected or required to connect has no flow given and no living units). Possibly above 2% of the system's "
        "average daily flow, for review (a flow above it is subject to the review and approval of the engineer, "
        "§ 144-25A; section number derived): its share is 2% or less only if the 1 parcel of unknown flow sends 2,500 "
        "gpd or more."
    ), office["discharge_duties"]
    assert office["discharge_sections"].startswith("§ 144-25A (section number derived)")
    # the shop, possibly significant, is possibly above the review's share too: both said, both sections cited
    shop = users.loc["SHOP"]
    assert "possibly a significant industrial user" in shop["discharge_duties"]
    assert "Possibly above 2% of the system's average daily flow" in shop["discharge_duties"]
    assert shop["discharge_sections"].startswith("§ 144-1 (section number derived); § 144-25A")


@pytest.mark.parametrize(("blank_gpd", "expected"), [(2_500.0, None), (2_499.0, "review")])
def test_the_gpd_the_review_sentence_names_is_where_the_share_crosses_2_percent(blank_gpd, expected):
    """The office's 150 gpd is 2% of 7,500: once the blank parcel sends the 2,500 gpd named, not more; less, more."""
    r = assess_discharges(lots(BLANK=blank_gpd), profile=FP)
    assert r.parcels.set_index("parcel_id").loc["OFFICE", "industrial_user"] == expected


def test_duties_lists_the_possibly_for_review_users(town):
    doc = json.loads(duties("--data", town, "--json"))
    assert doc["summary"]["industrial_users"]["possibly_review"] == 12
    assert doc["summary"]["industrial_users"]["review"] == 0
    office = {p["parcel_id"]: p for p in doc["parcels"]}["OFFICE"]
    assert office["industrial_user"] == "possibly_review" and office["control_manhole"] == "MH-2"
    assert "its share is 2% or less only if the 1 parcel of unknown flow sends 2,500 gpd or more" in office["duties"]


def test_houses_possibly_for_review_by_their_living_units_alone_are_one_line_not_a_row_each(town):
    """With few flows known, every house of one living unit is above 2% of the flow known: ten houses were ten table
    rows of the same fifteen lines, the metered office among them hard to find. The command line says them in one
    line, with the gallons the parcel of unknown flow must send for all of them to be at or under 2% (250 gpd is 2%
    of 12,500: 7,500 more than the 5,000 known); --json, --out and --all still give each."""
    r = assess_discharges(lots(), profile=FP)
    assert r.summary["possibly_review_by_units"] == {"parcels": 10, "clear_if_unknown_send_gpd": 7_500.0}
    said = duties("--data", town)
    text = " ".join(said.split())
    assert (
        "Possibly above 2% of the system's flow, for review (§ 144-25A, section number derived), by their living "
        "units alone and with no other duty: 10 parcels (H0, H1, H2, H3, H4 and 5 more), not listed one by one below "
        "(--json and --out list each). Every one of them is at or under it if the 1 parcel of unknown flow sends "
        "7,500 gpd or more in all."
    ) in text, text
    rows = set(re.findall(r"^│ (\S+) ", said, flags=re.M))
    assert rows == {"SHOP", "EXACT", "OFFICE"}, rows  # metered: each its own figure, each its own row
    everything = set(re.findall(r"^│ (\S+) ", duties("--data", town, "--all"), flags=re.M))
    assert {f"H{i}" for i in range(10)} <= everything
    doc = json.loads(duties("--data", town, "--json"))
    assert {f"H{i}" for i in range(10)} <= {p["parcel_id"] for p in doc["parcels"]}
