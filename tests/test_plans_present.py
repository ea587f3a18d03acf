"""The present flow a plan's capacity check counts where no parcel is recorded as connected, said one way in the
finding and in the table beside it.

A tester's town had no connected column: the finding said "Counting none, ... the least room left is 473,959 gpd",
while the Downstream table and the JSON showed present peaks of 8,000 to 20,000 gpd from the parcels already
required to connect (the room left counting them: 453,959 gpd). It also said "no list of connected parcels was
given" to a planner whose `plan` has no option for one: the list reaches a plan only as the store's latest analysis
was given it.

Oak St's layout (tests/test_plans.py) with no connected column and a lot L0 on Main St, 25 ft from M-1, with two
living units: required to connect before the plan, so it is M-1's present flow, 2 x 250 gpd x 4 = 2,000 gpd peak.
"""

from __future__ import annotations

import json

import pandas as pd
from click.testing import CliRunner
from pypdf import PdfReader
from shapely.geometry import box

from gisapp.cli import main
from layers.write import write_layers
from tests.conftest import frame, ny_frame
from tests.test_plans import OAK_ST_MAIN, check, layout, plan_args, run

CAPACITY = 552_263  # M-1, 8 in at 2 ft fall over 400 ft, n 0.013 (test_plans.py's golden board)
PRESENT = 2 * 250 * 4  # L0
ADDED = 4 * 3_500  # Oak St: 6 houses x 2 units x 250 + 2 vacant lots x 250, x 4 (L2 not recorded connected)
ROOM = CAPACITY - PRESENT - ADDED  # 536,263


def unrecorded_town(shift=(0, 0)):
    town = layout(shift=shift)
    f = ny_frame if shift != (0, 0) else frame
    lot = f(
        [
            {
                "parcel_id": "L0",
                "owner_name": "MAIN ST OWNER",
                "site_address": "20 Main St",
                "property_class": "210",
                "units": 2.0,
                "geometry": box(-300, 25, -200, 125),
            }
        ]
    )
    house = f([{"geometry": box(-270, 50, -230, 90)}])
    town["parcels"] = pd.concat([town["parcels"].drop(columns="connected"), lot], ignore_index=True)
    town["buildings"] = pd.concat([town["buildings"], house], ignore_index=True)
    return town


def test_the_finding_counts_the_present_flow_the_table_shows():
    doc = run(town=unrecorded_town()).as_dict()
    assert "L0" not in doc["newly_mandated"]  # required to connect before the plan: present flow, not added
    row = doc["downstream"]["mains"][0]
    assert (row["main_id"], row["capacity_gpd"], row["present_peak_gpd"], row["added_peak_gpd"]) == (
        "M-1",
        CAPACITY,
        PRESENT,
        ADDED,
    )
    assert doc["downstream"]["present_flow_recorded"] is False
    told = check(doc, "capacity")
    assert told["verdict"] == "not known"
    said = told["message"]
    assert said.startswith("Capacity not known: no parcel is recorded as connected to the sewer")
    # what is counted, and what is not known
    assert "the present flow counts the parcels required to connect alone" in said
    assert "parcels connected but not required to connect (beyond the law's reach, or by choice) are not known" in said
    # the room left from the present peak the table shows (it was 538,263: the added flow alone)
    assert (
        "Counting those, the 1 main from A to P (the inlet of the treatment plant WWTP) would carry their present peak "
        f"flow plus the added {ADDED:,} gpd; the least room left is {ROOM:,} gpd, in M-1. The largest present flow in "
        "M-1 is L0's 500 gpd (living units recorded), 100% of its present flow."
    ) in said
    assert "Counting none" not in said and "flow the mains to the plant carry today is not known" not in said
    # plan takes no list of its own: the list comes with the store's latest analysis
    assert "no list of connected parcels was given" not in said
    assert "a plan reads one only as the store's latest analysis was given it" in said


def test_the_board_and_the_command_line_give_one_account_of_the_present_flow(tmp_path):
    data = tmp_path / "town.gpkg"
    write_layers(str(data), unrecorded_town(shift=(1, 1)))
    ny_frame([{"geometry": OAK_ST_MAIN}]).to_crs(4326).to_file(tmp_path / "extension.geojson")
    pdf = tmp_path / "board.pdf"
    result = CliRunner().invoke(main, plan_args(data, tmp_path, "--json", "--pdf", str(pdf)), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["downstream"]["mains"][0]["present_peak_gpd"] == PRESENT
    text = " ".join(" ".join(p.extract_text().split()) for p in PdfReader(pdf).pages)
    # the table's row and the finding's room, from the one present peak
    assert f"M-1 8 0.0050 {CAPACITY:,} {PRESENT:,} {ADDED:,}" in text
    assert f"the least room left is {ROOM:,} gpd, in M-1" in text
    assert (
        "No parcel is recorded as connected, so each present peak counts the parcels upstream required to connect"
        in (text)
    )
    # the command line says how the list reaches a plan, as the flag it is
    shown = CliRunner().invoke(main, plan_args(data, tmp_path), catch_exceptions=False)
    assert shown.exit_code == 0, shown.output
    said = " ".join(shown.output.split())
    assert (
        f"To count the parcels connected today, analyse the store again with the billing list (`sewerplan analyze "
        f"--data {data} --out {data} --connected FILE.csv`) and plan again: a plan reads the connected-parcels list of "
        "the store's latest analysis and takes none of its own."
    ) in said


def test_a_plan_with_parcels_recorded_connected_says_nothing_of_a_list(tmp_path):
    town = layout(shift=(1, 1))
    data = tmp_path / "town.gpkg"
    write_layers(str(data), town)
    ny_frame([{"geometry": OAK_ST_MAIN}]).to_crs(4326).to_file(tmp_path / "extension.geojson")
    shown = CliRunner().invoke(main, plan_args(data, tmp_path), catch_exceptions=False)
    assert shown.exit_code == 0, shown.output
    assert "To count the parcels connected today" not in shown.output
