"""A parcel whose connection reaches no outfall of the network (a break in the mains below it, a main the data does
not join to the plant's) is in no outfall's sewershed: the system's flow estimated from the sewersheds left it out,
counted in neither the flow nor the parcels of unknown flow, and the estimate was said to be the system's flow. Its
flow reaches no plant the network knows: the system's flow is not known, and the parcels are said apart."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from click.testing import CliRunner
from shapely.geometry import LineString, Point, box

from analysis.discharges import assess_discharges
from analysis.network import build_network
from analysis.profiles import load_profile
from analysis.trace import add_network_results
from gisapp.cli import main
from layers.write import write_layers
from tests.conftest import frame, ny_frame
from tests.test_duties import lots

FP = load_profile("fort-plain")


def network(shift=frame):
    # A (MH1 -> MH2) and B (MH2 -> MH3) to the plant at MH3; C (MH4 -> MH5) on a street of its own, joined to
    # nothing: its end MH5 is a dead end, no outfall.
    mains = shift(
        [
            {"main_id": "A", "geometry": LineString([(0, -20), (300, -20)])},
            {"main_id": "B", "geometry": LineString([(300, -20), (600, -20)])},
            {"main_id": "C", "geometry": LineString([(0, -420), (300, -420)])},
        ]
    )
    manholes = shift(
        [
            {"manhole_id": k, "geometry": Point(x, y)}
            for k, x, y in (("MH1", 0, -20), ("MH2", 300, -20), ("MH3", 600, -20), ("MH4", 0, -420), ("MH5", 300, -420))
        ]
    )
    plant = shift([{"outfall_id": "WWTP", "outfall_manhole": "MH3", "geometry": Point(620, -20)}])
    return mains, manholes, plant


def assessed(cut_units=4):
    mains, manholes, plant = network()
    net = build_network(mains, manholes=manholes, outfalls=plant, profile=FP)
    parcels = lots(
        ("MILL", "710", {"flow_gpd": 3000.0}),
        ("H1", "210", {"units": 4}),
        ("H2", "220", {"units": 4}),
        ("H3", "210", {"units": 4}),
        ("CUT", "210", {"units": cut_units}),  # on C: reaches no outfall
    ).assign(main_id=["A", "A", "A", "B", "C"], connection_x=[45, 145, 245, 345, 145])
    parcels["connection_y"] = [-20.0] * 4 + [-420.0]
    traced, _ = add_network_results(parcels, net)
    return assess_discharges(traced, profile=FP, network=net)


def test_a_parcel_reaching_no_outfall_leaves_the_system_flow_not_known():
    r = assessed()
    s = r.summary
    # 3,000 + 12 x 250 reach the plant; CUT's 1,000 gpd reach no plant the network knows
    assert s["system_flow_gpd"] is None and s["system_flow_at_least_gpd"] == 6000
    assert s["system_flow_parcels_unknown"] == 1 and s["system_flow_parcels_no_outfall"] == 1
    assert s["system_flow_source"] == (
        "not known: 1 parcel connected or required to connect reaches no outfall of the sewer network (the mains "
        "below its connection lead to no treatment plant in the data), so the 6,000 gpd of the rest is only a lower "
        "bound"
    )
    mill = r.parcels.set_index("parcel_id").loc["MILL"]
    # 50% of the 6,000 gpd known: possibly significant, not "significant" at 50% of a system that leaves CUT out
    assert mill["industrial_user"] == "possibly_significant"
    assert (
        "at most 50.0% of the system's flow, which is at least 6,000 gpd (1 parcel connected or required to connect "
        "reaches no outfall of the sewer network (the mains below its connection lead to no treatment plant in the "
        "data)): possibly a significant industrial user"
    ) in mill["discharge_duties"]
    assert "its share is 5% or less only if the 1 parcel left out sends 54,000 gpd or more" in mill["discharge_duties"]


def test_both_kinds_left_out_are_said_apart():
    r = assessed(cut_units=None)  # CUT has no units either: counted once, as reaching no outfall
    assert r.summary["system_flow_parcels_unknown"] == 1 and r.summary["system_flow_parcels_no_outfall"] == 1
    blank = lots(("BLANK", "", {})).assign(main_id="A", connection_x=195.0, connection_y=-20.0)
    mains, manholes, plant = network()
    net = build_network(mains, manholes=manholes, outfalls=plant, profile=FP)
    parcels = lots(("MILL", "710", {"flow_gpd": 3000.0}), ("CUT", "210", {"units": 4})).assign(
        main_id=["A", "C"], connection_x=[45.0, 145.0], connection_y=[-20.0, -420.0]
    )

    traced, _ = add_network_results(pd.concat([parcels, blank], ignore_index=True), net)
    s = assess_discharges(traced, profile=FP, network=net).summary
    assert s["system_flow_parcels_unknown"] == 2 and s["system_flow_parcels_no_outfall"] == 1
    assert s["system_flow_source"].startswith(
        "not known: 1 parcel connected or required to connect has no flow given and no living units recorded, and 1 "
        "reaches no outfall of the sewer network"
    ), s["system_flow_source"]


@pytest.fixture(scope="module")
def town(tmp_path_factory):
    """Main St (mains A and B to the plant) and Cut Rd (main C, joined to nothing), a lot on each, occupied."""
    path = tmp_path_factory.mktemp("no_outfall") / "town.gpkg"
    mains, manholes, plant = network(ny_frame)
    lot = {"occupied": "yes", "property_class": "210"}
    layers = {
        "parcels": ny_frame(
            [
                {"parcel_id": "MILL", **lot, "property_class": "710", "flow_gpd": 3000.0}
                | {"geometry": box(20, 5, 80, 105)},
                *[
                    {"parcel_id": f"H{i}", **lot, "units": 4} | {"geometry": box(x, 5, x + 60, 105)}
                    for i, x in ((1, 120), (2, 220), (3, 320))
                ],
                {"parcel_id": "CUT", **lot, "units": 4} | {"geometry": box(120, -405, 180, -305)},
            ]
        ),
        "mains": mains,
        "manholes": manholes,
        "treatment_plants": plant,
        "streets": ny_frame(
            [
                {"street_name": "Main St", "geometry": LineString([(0, -20), (600, -20)])},
                {"street_name": "Cut Rd", "geometry": LineString([(0, -420), (300, -420)])},
            ]
        ),
    }
    write_layers(str(path), layers)
    return str(path)


def duties(*args):
    result = CliRunner().invoke(
        main, ["duties", "--profile", "fort-plain", *map(str, args)], env={"COLUMNS": "300"}, catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    return result.output


def test_duties_says_the_parcels_that_reach_no_outfall(town):
    doc = json.loads(duties("--data", town, "--json"))
    s = doc["summary"]
    assert s["system_flow_gpd"] is None and s["system_flow_parcels_no_outfall"] == 1, s
    assert s["system_flow_at_least_gpd"] == 6000
    assert {p["parcel_id"]: p["industrial_user"] for p in doc["parcels"]}["MILL"] == "possibly_significant"
    text = " ".join(duties("--data", town).split())
    assert "1 parcel connected or required to connect reaches no outfall of the sewer network" in text, text
    assert "join the mains below them to the plant's in the mains layer (sewerplan network check" in text, text
