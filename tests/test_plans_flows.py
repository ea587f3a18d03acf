"""A plan's flows read a parcel's given flow_gpd first (``analysis.flows.average_flows``, the one reading the
sewersheds and ``duties`` use): the present flow of the connected parcels in the mains downstream, and the design
flow of the parcels the new main reaches. A mill metered at 20,000 gpd counted its class's typical 1,250 gpd, and a
4-inch main it fills to the brim was said to have room for the extension."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from shapely.geometry import LineString

from analysis.plans import manning_capacity_gpd
from gisapp.cli import main
from layers.write import write_layers
from tests.conftest import ny_frame
from tests.test_plans import check, layout, plan_args, run

# M-1, 4 in from A (invert 100.00) to P (98.00) over 400 ft: 86,976 gpd full
CAPACITY = manning_capacity_gpd(4.0, 0.005, 0.013)


def metered_town(shift=(0, 0)):
    """Oak St's layout with a 4-inch M-1; L2 (connected) is a mill (class 710, no living units) metered at 20,000
    gpd; newly mandated L8 (two living units) is metered at 1,000 gpd; vacant L4's meter reads 0."""
    town = layout(diameter=4.0, ds_invert=98.0, shift=shift)
    lots = town["parcels"].set_index("parcel_id")
    lots["flow_gpd"] = None
    lots.loc["L2", ["property_class", "units", "flow_gpd"]] = ["710", None, 20_000.0]
    lots.loc["L8", "flow_gpd"] = 1_000.0
    lots.loc["L4", "flow_gpd"] = 0.0
    town["parcels"] = lots.reset_index()
    return town


def test_the_present_flow_in_the_mains_is_the_metered_flow_and_the_design_flow_lets_it_win():
    doc = run(town=metered_town(), diameter=8.0).as_dict()
    row = doc["downstream"]["mains"][0]
    assert row["main_id"] == "M-1" and row["capacity_gpd"] == pytest.approx(CAPACITY, abs=0.5)
    # present: the mill's 20,000 gpd x 4 (its class's typical 1,250 x 4 = 5,000 before)
    assert row["present_peak_gpd"] == 80_000 and row["present_flow_unknown"] == 0
    rows = {p["parcel_id"]: p for p in doc["parcels"]}
    assert (rows["L8"]["flow_gpd"], rows["L8"]["basis"], rows["L8"]["units"]) == (1_000, "flow_gpd given", 2.0)
    # a vacant lot's figure is its future building's, whatever its meter reads today
    assert (rows["L4"]["flow_gpd"], rows["L4"]["basis"]) == (250, "vacant: future building, typical for class 311")
    assert rows["L1"]["basis"] == "living units recorded" and rows["L1"]["flow_gpd"] == 500
    # added: L1, L3, L5, L6 2 x 250 each, L8's 1,000, two vacant lots 250 each = 3,500 gpd, x 4 = 14,000
    assert doc["flow"]["added_average_gpd"] == 3_500 and doc["downstream"]["added_peak_gpd"] == 14_000
    told = check(doc, "capacity")
    assert told["verdict"] == "does not meet", told["message"]
    assert told["message"].startswith(
        f"Not enough room in M-1: in M-1 the present peak 80,000 gpd plus the added 14,000 gpd exceeds its full-pipe "
        f"capacity of {round(CAPACITY):,} gpd."
    ), told["message"]
    # whose flow fills it, as a board asks: "present peak 80,000 gpd" did not say it was one mill's (a tester)
    assert row["largest_present"] == {
        "parcel_id": "L2",
        "flow_gpd": 20_000,
        "basis": "flow_gpd given",
        "share_pct": 100,
    }
    assert (
        "The largest present flow in M-1 is L2's 20,000 gpd (flow_gpd given), 100% of its present flow."
        in (told["message"])
    )
    assert "gpd a day" not in told["message"]  # gallons per day a day: said twice


def test_a_class_estimate_still_fills_in_where_no_flow_is_given():
    town = metered_town()
    town["parcels"]["flow_gpd"] = None  # no meter read: the mill counts its class's typical flow, as before
    doc = run(town=town, diameter=8.0).as_dict()
    assert doc["downstream"]["mains"][0]["present_peak_gpd"] == 4 * 1_250
    assert check(doc, "capacity")["verdict"] == "meets"


def test_plan_on_the_command_line_reads_the_metered_flow(tmp_path):
    data = tmp_path / "town.gpkg"
    write_layers(str(data), metered_town(shift=(1, 1)))
    ny_frame([{"geometry": LineString([(0, 0), (900, 0)])}]).to_crs(4326).to_file(tmp_path / "extension.geojson")
    result = CliRunner().invoke(main, plan_args(data, tmp_path, "--json"), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["downstream"]["mains"][0]["present_peak_gpd"] == 80_000
    assert check(doc, "capacity")["verdict"] == "does not meet"
    assert {p["parcel_id"]: p["basis"] for p in doc["parcels"]}["L8"] == "flow_gpd given"


def test_the_present_flow_counts_the_parcels_already_required_to_connect():
    """A house on Main St, above M-1, mandated before the plan and not yet connected (its notice given, its 90 days
    running): its flow comes whatever the board decides, yet the plan counted the connected parcels alone, and a main
    it will fill was said to have room (a tester: `trace` and `duties` count such parcels in a sewershed)."""
    import pandas as pd
    from shapely.geometry import box

    town = metered_town()
    w1 = {"parcel_id": "W1", "owner_name": "WEST ANN", "site_address": "10 Main St", "property_class": "210"}
    w1 |= {"units": 2.0, "connected": False, "geometry": box(-300, 25, -200, 125)}
    town["parcels"] = pd.concat([town["parcels"], type(town["parcels"])([w1], crs=town["parcels"].crs)])
    town["buildings"] = pd.concat(
        [town["buildings"], type(town["buildings"])(geometry=[box(-270, 50, -230, 90)], crs=town["buildings"].crs)]
    )
    doc = run(town=town, diameter=8.0).as_dict()
    assert "W1" not in doc["newly_mandated"]  # mandated by M-1 already
    # the mill's 20,000 gpd and W1's two living units (500 gpd), x 4
    assert doc["downstream"]["mains"][0]["present_peak_gpd"] == 80_000 + 2_000
    assert doc["downstream"]["mains"][0]["largest_present"]["share_pct"] == 98  # 20,000 of 20,500 gpd
