"""A sewershed's flow read from the parcels as the rest of the product reads it: a parcel's flow_gpd where given
(metered), else its living units x gpd per unit; with neither, not known. A mill metered at 30,000 gpd with no living
units was, in a sewershed, "units unknown, flow not known", while `duties` counted its 30,000 gpd."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from click.testing import CliRunner
from shapely.geometry import LineString, Point, box

from analysis.discharges import assess_discharges
from analysis.network import build_network
from analysis.profiles import load_profile
from analysis.trace import add_network_results, sewershed
from gisapp.cli import main
from layers.write import write_layers
from tests.conftest import frame, ny_frame

FP = load_profile("fort-plain")


def network():
    """Main A (MH1 -> MH2), main B (MH2 -> MH3), the plant at MH3."""
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
    return build_network(mains, manholes=manholes, outfalls=plant, profile=FP)


def parcels(rows):
    """(id, property class, units, flow_gpd, main, connection x), connected, in a row along main A then B."""
    return frame(
        [
            {
                "parcel_id": pid,
                "status": "connected",
                "property_class": klass,
                "units": units,
                "flow_gpd": flow,
                "main_id": main,
                "connection_x": x,
                "connection_y": -20.0,
                "geometry": box(i * 100, 0, i * 100 + 90, 100),
            }
            for i, (pid, klass, units, flow, main, x) in enumerate(rows)
        ]
    )


MILL = ("MILL", "710", None, 30_000.0, "A", 45.0)  # metered, no living units
HOUSE = ("HOUSE", "210", 4, None, "A", 145.0)  # 1,000 gpd by its units
METERED = ("METERED", "220", 2, 900.0, "B", 345.0)  # both: its metered flow counts, its units are still its units
BLANK = ("BLANK", "", None, None, "B", 445.0)  # neither: its flow is not known


def test_a_sewershed_counts_metered_flows_and_the_parcels_whose_flow_is_unknown():
    net = network()
    traced, conn = add_network_results(parcels([MILL, HOUSE, METERED, BLANK]), net)
    shed = sewershed(net, net.node_index["MH3"], conn, traced, profile=FP)
    assert shed.parcels == ["MILL", "HOUSE", "METERED", "BLANK"]
    # the keys users read mean what their names say; flow_given and flow_unknown say the rest
    doc = shed.as_dict()
    assert (doc["units"], doc["units_unknown"]) == (6.0, 2)
    assert (doc["flow_given"], doc["flow_unknown"]) == (2, 1)
    assert doc["flow_at_least_gpd"] == 30_000 + 1_000 + 900 and doc["flow_gpd"] is None
    # every flow known: the flow itself, the mill's 30,000 gpd in it
    known = sewershed(net, net.node_index["MH3"], conn.iloc[:3], traced.iloc[:3], profile=FP)
    assert known.flow_unknown == 0 and known.flow_gpd == known.flow_at_least_gpd == 31_900
    # above MH2: the mill and the house alone
    above = sewershed(net, net.node_index["MH2"], conn, traced, profile=FP)
    assert above.parcels == ["MILL", "HOUSE"] and above.flow_gpd == 31_000 and above.units_unknown == 1


def test_the_system_flow_of_duties_is_the_outfalls_sewersheds():
    """`duties` adds up the outfalls' sewersheds, which read each parcel's flow as `duties` does (it passed the
    flows to them dressed as living units)."""
    net = network()
    traced, conn = add_network_results(parcels([MILL, HOUSE, METERED, BLANK]), net)
    shed = sewershed(net, net.node_index["MH3"], conn, traced, profile=FP)
    summary = assess_discharges(traced, profile=FP, network=net, connections=conn).summary
    assert summary["system_flow_gpd"] is None
    assert summary["system_flow_at_least_gpd"] == shed.flow_at_least_gpd == 31_900
    assert summary["system_flow_parcels_unknown"] == shed.flow_unknown == 1
    assert summary["flow_given"] == shed.flow_given == 2


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A mill metered at 30,000 gpd, a house of 2 living units and a shop with neither, on one main to the plant."""
    path = tmp_path_factory.mktemp("trace-flows") / "town.gpkg"
    lots = [
        ("MILL", "710", {"flow_gpd": 30_000}),
        ("HOUSE", "210", {"units": 2}),
        ("SHOP", "482", {}),
    ]
    layers = {
        "parcels": ny_frame(
            [
                {"parcel_id": pid, "property_class": klass, "occupied": "yes", **extra}
                | {"geometry": box(i * 100, 25, i * 100 + 90, 125)}
                for i, (pid, klass, extra) in enumerate(lots)
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


def trace(*args):
    return CliRunner().invoke(main, ["trace", "--manhole", "MH-2", "--upstream", *args], catch_exceptions=False)


def test_trace_upstream_says_the_metered_flows_and_the_bound(store):
    doc = json.loads(trace("--data", store, "--json").stdout)
    assert doc["parcels"] == ["MILL", "HOUSE", "SHOP"]
    assert (doc["units"], doc["units_unknown"], doc["flow_given"], doc["flow_unknown"]) == (2.0, 2, 1, 1)
    assert doc["flow_gpd"] is None and doc["flow_at_least_gpd"] == 30_500.0
    said = " ".join(trace("--data", store).stdout.split())
    assert (
        "3 parcels (connected or required to connect) with 2 living units and 1 metered flow; average flow not "
        "known: at least 30,500 gallons per day from the flows known, the metered flows as given and 250 gpd per "
        "living unit for the rest (a profile setting, network.gallons_per_day_per_unit, from the default fort-plain "
        "profile: give --profile for the town's), and more from the 1 parcel whose flow is unknown. Give their "
        "metered flows in the parcels' flow_gpd column or their living units in the units column"
    ) in said, said


def test_trace_upstream_with_every_flow_known(store, tmp_path):
    """The shop metered too: the flow is known, the mill's 30,000 gpd in it ("units unknown, flow not known")."""
    import geopandas as gpd

    parcels = gpd.read_file(store, layer="parcels")
    parcels.loc[parcels["parcel_id"] == "SHOP", "flow_gpd"] = 400.0
    layers = {name: gpd.read_file(store, layer=name) for name in ("mains", "manholes", "treatment_plants", "streets")}
    path = tmp_path / "metered.gpkg"
    write_layers(str(path), {"parcels": parcels, **layers})
    doc = json.loads(trace("--data", path, "--json").stdout)
    assert (doc["flow_given"], doc["flow_unknown"], doc["flow_gpd"]) == (2, 0, 30_900.0)
    said = " ".join(trace("--data", path).stdout.split())
    assert (
        "3 parcels (connected or required to connect) with 2 living units and 2 metered flows; estimated average "
        "flow 30,900 gallons per day from the metered flows as given and 250 gpd per living unit for the rest"
    ) in said, said


def _mill_read(given):
    """A mill whose flow_gpd cell holds ``given``, as the layers' check reads it: (the layer, its problems)."""
    import geopandas as gpd
    import pyproj
    import shapely

    from layers.validate import SPECS, ColumnMapping, prepare_layer

    parcels = gpd.GeoDataFrame(
        {"parcel_id": ["MILL"], "flow_gpd": pd.Series([given], dtype=object)},
        geometry=[shapely.box(457_000, 1_490_000, 457_100, 1_490_100)],
        crs="EPSG:2260",
    )
    return prepare_layer(
        parcels, SPECS["parcels"], label="parcels", target_crs=pyproj.CRS("EPSG:2260"), mapping=ColumnMapping()
    )


@pytest.mark.parametrize(
    ("given", "read"),
    [("16,000", 16000.0), ("1500", 1500.0), ("n/a", None), ("", None), (None, None)],
)
def test_a_metered_flow_written_as_text_is_read_as_the_number_it_says(given, read):
    """A tax roll joined from a spreadsheet gives flow_gpd as text ("16,000"): it was dropped without a word, the mill
    counted as of unknown flow, and a plan's capacity check said "meets" of a main the mill fills (a tester)."""
    out, problems = _mill_read(given)
    assert not [p for p in problems if p.severity == "error"], problems
    value = out["flow_gpd"].iloc[0]
    assert (pd.isna(value) and read is None) or value == read


@pytest.mark.parametrize(("given", "told"), [("16,000 gpd", "should hold numbers"), ("-5000", "cannot be negative")])
def test_a_metered_flow_that_is_no_flow_is_refused_with_its_row(given, told):
    out, problems = _mill_read(given)
    errors = [str(p) for p in problems if p.severity == "error"]
    assert out is None and any(told in e and "flow_gpd" in e for e in errors), errors


def test_a_sewershed_with_no_parcels_has_no_flow_estimate_not_zero(store, tmp_path):
    """A model's trunk, or a network given without parcels: "estimated average flow 0 gallons per day" was said of a
    sewer carrying a town's flow (Manchester's, a SWMM model's; a tester). None in the JSON, as the map says it."""
    import geopandas as gpd

    layers = {name: gpd.read_file(store, layer=name) for name in ("mains", "manholes", "treatment_plants")}
    path = tmp_path / "network-only.gpkg"
    write_layers(str(path), layers)
    doc = json.loads(trace("--data", path, "--json").stdout)
    assert doc["parcels"] == [] and doc["flow_gpd"] is None
    said = " ".join(trace("--data", path).stdout.split())
    assert "0 parcels (connected or required to connect) draining here; no flow estimate: the estimate is of" in said
    assert "0 gallons per day" not in said
