"""The sewer network on hand-made layouts whose answers can be seen, on the sample town, and on real data."""

from __future__ import annotations

import json
import re

import geopandas as gpd
import networkx as nx
import numpy as np
import pandas as pd
import pytest
from shapely.geometry import LineString, Point, box

from analysis.mandate import analyze_mandates
from analysis.network import build_network
from analysis.network_checks import check_network
from analysis.profiles import load_profile
from analysis.trace import add_network_results, connect_parcels, sewershed, trace_down, trace_parcel
from layers.crs import measuring_crs
from layers.read import LayerSource, load_layers
from layers.sample import sample_town
from tests.conftest import frame

FP = load_profile("fort-plain")


def mains(*rows):
    return frame([{"main_id": r[0], "geometry": LineString(r[1]), **(r[2] if len(r) > 2 else {})} for r in rows])


def manholes(**points):
    return frame([{"manhole_id": k, "geometry": Point(v)} for k, v in points.items()])


def plant(at, manhole=None):
    return frame([{"outfall_id": "WWTP", "outfall_manhole": manhole, "geometry": Point(at)}])


def build(m, mh=None, out=None, profile=FP, **kw):
    return build_network(m, manholes=mh, outfalls=out, profile=profile, **kw)


def checks(net, mh=None, profile=FP):
    return check_network(net, profile=profile, manholes=mh)


def names(net, nodes):
    return [str(net.node_id[i]) for i in nodes]


def test_y_junction_control_manhole_is_past_the_junction():
    # A and B meet at (100, 0) where there is no manhole; C runs on to MH3 at the plant.
    m = mains(("A", [(0, 100), (100, 0)]), ("B", [(0, -100), (100, 0)]), ("C", [(100, 0), (300, 0)]))
    mh = manholes(MH1=(0, 100), MH2=(0, -100), MH3=(300, 0))
    net = build(m, mh, plant((320, 0), "MH3"))
    j = net.node_index["J-1"]
    assert not net.node_is_manhole[j]
    assert set(net.direction_source) == {"inferred"}
    assert names(net, net.v) == ["J-1", "J-1", "MH3"]
    assert net.node_id[net.control_manhole[j]] == "MH3"
    t = trace_down(net, net.node_index["MH1"])
    assert t.path == ["MH1", "J-1", "MH3"] and t.mains == ["A", "C"]
    assert t.control_manhole == "MH1" and t.outfall == "MH3"
    assert t.length_ft == pytest.approx(100 * 2**0.5 + 200)
    found = {(d.check, d.feature_id) for d in checks(net, mh)}
    assert ("junction_without_manhole", "J-1") in found
    assert "dangling_end" not in {c for c, _ in found}


def test_crossing_mains_are_not_connected_without_a_manhole():
    m = mains(("NS", [(0, -200), (0, 200)]), ("EW", [(-200, 0), (200, 0)]))
    apart = build(m, manholes(N=(0, 200), S=(0, -200), W=(-200, 0), E=(200, 0)))
    assert apart.piece.max() == 1  # two pieces
    joined = build(m, manholes(N=(0, 200), S=(0, -200), W=(-200, 0), E=(200, 0), X=(0, 0)))
    assert joined.piece.max() == 0
    assert len(joined.main_id) == 4  # both split at the manhole
    assert sum(d.check == "main_through_manhole" for d in checks(joined)) == 2


def test_unsplit_t_junction_is_split_and_reported():
    m = mains(("TRUNK", [(0, 0), (400, 0)]), ("BRANCH", [(200, 150), (200, 0)]))
    mh = manholes(A=(0, 0), B=(400, 0), C=(200, 150))
    net = build(m, mh, plant((420, 0), "B"))
    assert list(net.main_id).count("TRUNK") == 2
    defects = checks(net, mh)
    t_split = [d for d in defects if d.check == "unsplit_junction"]
    assert len(t_split) == 1 and t_split[0].feature_id == "TRUNK" and (t_split[0].x, t_split[0].y) == (200, 0)
    assert net.drains().all()


def test_two_manholes_at_the_same_spot_are_one_node():
    m = mains(("A", [(0, 0), (300, 0)]))
    net = build(m, manholes(MH1=(0, 0), MH1b=(0.2, 0), MH2=(300, 0)))
    assert net.n_nodes == 2
    dup = [d for d in checks(net, manholes(MH1=(0, 0), MH1b=(0.2, 0), MH2=(300, 0))) if d.check == "duplicate_manhole"]
    assert dup and "MH1, MH1b" in dup[0].message


def test_abandoned_manholes_are_not_part_of_the_network():
    m = mains(("A", [(0, 0), (300, 0)]))
    mh = frame(
        [
            {"manhole_id": "MH1", "geometry": Point(0, 0)},
            {"manhole_id": "MH2", "geometry": Point(300, 0)},
            {"manhole_id": "OLD", "status": "abandoned", "geometry": Point(900, 0)},
            {"manhole_id": "OLD2", "status": "abandoned", "geometry": Point(0, 0.3)},
        ]
    )
    net = build(m, mh)
    assert set(net.node_id) == {"MH1", "MH2"}
    assert not [d for d in checks(net, mh) if d.check in ("manhole_without_main", "duplicate_manhole")]


def test_zero_length_main_is_left_out_and_reported():
    m = mains(("A", [(0, 0), (300, 0)]), ("Z", [(300, 0), (300, 0)]))
    net = build(m, manholes(MH1=(0, 0), MH2=(300, 0)))
    assert list(net.main_id) == ["A"]
    assert any(d.check == "zero_length_main" and d.feature_id == "Z" for d in checks(net))


def test_loop_is_a_cycle_and_the_trace_says_so():
    fields = lambda a, b: {"from_manhole": a, "to_manhole": b}  # noqa: E731
    m = mains(
        ("L1", [(0, 0), (100, 0)], fields("P", "Q")),
        ("L2", [(100, 0), (100, 100)], fields("Q", "R")),
        ("L3", [(100, 100), (0, 0)], fields("R", "P")),
    )
    net = build(m, manholes(P=(0, 0), Q=(100, 0), R=(100, 100)))
    cycles = [d for d in checks(net) if d.check == "cycle"]
    assert len(cycles) == 1 and all(x in cycles[0].message for x in ("L1", "L2", "L3"))
    assert net.terminal[net.node_index["P"]] == -1
    t = trace_down(net, net.node_index["P"])
    assert "loop" in t.problem and t.length_ft is None


def test_piece_without_outfall():
    m = mains(("A", [(0, 0), (300, 0)]), ("ISLAND", [(0, 1000), (300, 1000)]))
    mh = manholes(A1=(0, 0), A2=(300, 0), I1=(0, 1000), I2=(300, 1000))
    net = build(m, mh, plant((320, 0), "A2"))
    found = {(d.check, d.feature_id) for d in checks(net, mh)}
    assert ("no_outfall", "ISLAND") in found and ("disconnected_piece", "ISLAND") in found
    (island,) = [d for d in checks(net, mh) if d.check == "no_outfall"]
    assert "A piece of 1 main (300 ft)" in island.message and "direction cannot be inferred" in island.message
    assert net.direction_source[list(net.main_id).index("ISLAND")] == "unknown"
    parcels = gpd.GeoDataFrame(
        {"parcel_id": ["ON_ISLAND"], "main_id": ["ISLAND"], "connection_x": [150.0], "connection_y": [1000.0]},
        geometry=[box(100, 1010, 200, 1100)],
        crs="EPSG:2260",
    )
    c = connect_parcels(net, parcels)
    # Its direction is unknown too (no outfall to orient it toward): said first, with the piece's own problem
    assert c.loc[0, "network_problem"].startswith("The direction of main ISLAND is unknown")
    assert c.loc[0, "network_problem"].endswith(" The main lies in a piece of the network with no outfall.")
    assert c.loc[0, "control_manhole"] is None
    assert np.isnan(c.loc[0, "downstream_length_ft"])
    assert "no treatment plant or outfall" in trace_parcel(net, "ON_ISLAND", c.iloc[0]).problem


def test_force_main_flows_uphill_without_defects():
    m = mains(
        (
            "FM",
            [(0, 0), (500, 0)],
            {
                "sewer_type": "force",
                "from_manhole": "PS",
                "to_manhole": "MH",
                "us_invert_ft": 90.0,
                "ds_invert_ft": 110.0,
                "diameter_in": 4.0,
            },
        )
    )
    mh = manholes(PS=(0, 0), MH=(500, 0))
    net = build(m, mh, plant((520, 0), "MH"))
    assert net.direction_source[0] == "from_to_fields"
    found = {d.check for d in checks(net, mh)}
    assert not found & {"adverse_slope", "min_diameter"}


@pytest.mark.parametrize(
    ("attrs", "source", "reversed_"),
    [
        ({"from_manhole": "A", "to_manhole": "B"}, "from_to_fields", False),
        ({"from_manhole": "B", "to_manhole": "A"}, "from_to_fields", True),
        ({"us_invert_ft": 98.0, "ds_invert_ft": 100.0}, "inverts", True),
        # The inverts fall toward B, where nothing leaves and no plant is: a gravity main laid uphill, kept
        # flowing to the plant at A (and reported as an adverse slope), never reversed into a dead end.
        ({"us_invert_ft": 100.0, "ds_invert_ft": 98.0}, "inferred", True),
        ({"sewer_type": "force", "us_invert_ft": 100.0, "ds_invert_ft": 98.0}, "digitised", False),
        ({}, "inferred", True),  # the plant is at A: flow runs B -> A against the digitised direction
    ],
)
def test_direction_sources(attrs, source, reversed_):
    m = mains(("M", [(0, 0), (300, 0)], attrs))
    mh = manholes(A=(0, 0), B=(300, 0))
    net = build(m, mh, plant((-20, 0), "A"))
    assert net.direction_source[0] == source
    assert (names(net, net.u)[0] == "B") is reversed_
    adverse = [d for d in checks(net) if d.check == "adverse_slope"]
    assert len(adverse) == (source == "inferred" and "us_invert_ft" in attrs)


def test_digitised_direction_only_when_trusted():
    m = mains(("M", [(0, 0), (300, 0)]))
    mh = manholes(A=(0, 0), B=(300, 0))
    assert build(m, mh).direction_source[0] == "unknown"
    trusted = build(m, mh, trust_digitised=True)
    assert trusted.direction_source[0] == "digitised"
    # B only receives flow, but nothing says it is an outfall: the flow stops there, and the check says so.
    assert not trusted.drains().any() and not trusted.node_is_outfall.any()
    (stop,) = [d for d in checks(trusted) if d.check == "no_outfall"]
    assert "flow stops at B" in stop.message
    assert "stops at B" in trace_down(trusted, trusted.node_index["A"]).problem


def test_adverse_slope_keeps_the_fields_direction_and_a_split_is_reported():
    m = mains(
        (
            "UP",
            [(0, 0), (300, 0)],
            {"from_manhole": "A", "to_manhole": "B", "us_invert_ft": 100.0, "ds_invert_ft": 101.0},
        ),
        ("AWAY", [(300, 0), (600, 0)], {"from_manhole": "C", "to_manhole": "B"}),
        ("OUT", [(300, 0), (300, -300)], {"from_manhole": "B", "to_manhole": "D"}),
    )
    mh = manholes(A=(0, 0), B=(300, 0), C=(600, 0), D=(300, -300))
    net = build(m, mh, plant((300, -320), "D"))
    found = {(d.check, d.feature_id) for d in checks(net, mh)}
    assert ("adverse_slope", "UP") in found  # from/to fields decide; the inverts then read uphill
    assert names(net, net.u)[list(net.main_id).index("UP")] == "A"
    assert not {c for c, _ in found} & {"no_outfall", "cycle"}
    m2 = mains(
        ("BACK", [(0, 0), (300, 0)], {"from_manhole": "B", "to_manhole": "A"}),
        ("OUT", [(300, 0), (300, -300)], {"from_manhole": "B", "to_manhole": "D"}),
    )
    net2 = build(m2, manholes(A=(0, 0), B=(300, 0), D=(300, -300)), plant((300, -320), "D"))
    assert ("split_flow", "B") in {(d.check, d.feature_id) for d in checks(net2)}


def test_design_rules_of_fort_plain():
    m = mains(
        ("SMALL", [(0, 0), (300, 0)], {"diameter_in": 6.0}),
        ("LONG", [(300, 0), (1200, 0)], {"diameter_in": 8.0}),
        ("BENT", [(1200, 0), (1300, 0), (1400, 100)], {"diameter_in": 8.0}),
    )
    mh = manholes(A=(0, 0), B=(300, 0), C=(1200, 0), D=(1400, 100))
    net = build(m, mh, plant((1420, 100), "D"))
    defects = checks(net, mh)
    by = {(d.check, d.feature_id): d for d in defects}
    assert by[("min_diameter", "SMALL")].section == "§ 144-18B"
    spacing = by[("manhole_spacing", "B")]
    assert spacing.section == "§ 144-18K" and "900 ft" in spacing.message
    bend = by[("alignment_change", "BENT")]
    assert (bend.x, bend.y) == (1300, 0) and "45 degrees" in bend.message
    # Poughkeepsie's article sets no design rule: none of these are errors there.
    pk = {
        d.check
        for d in checks(
            build(m, mh, plant((1420, 100), "D"), load_profile("poughkeepsie")), mh, load_profile("poughkeepsie")
        )
    }
    assert not pk & {"min_diameter", "manhole_spacing", "alignment_change"}


def test_a_manhole_every_400_ft_passes_and_401_fails():
    def run(length):
        m = mains(("M1", [(0, 0), (length, 0)]), ("M2", [(length, 0), (2 * length, 0)]))
        mh = manholes(A=(0, 0), C=(2 * length, 0), B=(length, 0))
        return [d for d in checks(build(m, mh, plant((2 * length + 5, 0), "C")), mh) if d.check == "manhole_spacing"]

    assert run(400.0) == [] and len(run(401.0)) == 2


def test_every_gravity_pipe_leaving_a_manhole_is_measured_where_the_flow_divides():
    # A divides: traces follow AB (300 ft) to the plant at B; AC (500 ft) runs on to the manhole C. Only the run
    # traces follow was measured: AC's 500 ft between manholes went unreported.
    m = mains(
        ("AB", [(0, 0), (300, 0)], {"from_manhole": "A", "to_manhole": "B", "diameter_in": 8.0}),
        ("AC", [(0, 0), (0, 500)], {"from_manhole": "A", "to_manhole": "C", "diameter_in": 8.0}),
    )
    mh = manholes(A=(0, 0), B=(300, 0), C=(0, 500))
    net = build(m, mh, plant((310, 0), "B"))
    assert net.main_id[net.next_main[net.node_index["A"]]] == "AB"
    (spacing,) = [d for d in checks(net, mh) if d.check == "manhole_spacing"]
    assert spacing.feature_id == "A"
    assert spacing.message.startswith("500 ft of existing 8-in sewer from manhole A by AC to the next manhole C")
    # An open channel (a model's swale, test_inlet_drains' C_Aux3) or a force main leaving A begins no run.
    net = build(m.assign(sewer_type=["sanitary", "force"]), mh, plant((310, 0), "B"))
    assert not [d for d in checks(net, mh) if d.check == "manhole_spacing"]


def test_special_control_manhole_is_kept_and_sewershed_counts_units():
    m = mains(("A", [(0, 0), (300, 0)]), ("B", [(300, 0), (600, 0)]))
    mh = manholes(MH1=(0, 0), MH2=(300, 0), MH3=(600, 0))
    net = build(m, mh, plant((620, 0), "MH3"))
    parcels = gpd.GeoDataFrame(
        {
            "parcel_id": ["P1", "P2", "P3"],
            "main_id": ["A", "A", "B"],
            "units": [2, None, 9],
            "connection_x": [100.0, 200.0, 450.0],
            "connection_y": [0.0, 0.0, 0.0],
            "control_manhole": [None, "MH-SPECIAL", None],
        },
        geometry=[box(0, 10, 1, 11)] * 3,
        crs="EPSG:2260",
    )
    out, conn = add_network_results(parcels, net)
    assert out["control_manhole"].tolist() == ["MH2", "MH-SPECIAL", "MH3"]
    assert out["downstream_length_ft"].tolist() == [500.0, 400.0, 150.0]
    shed = sewershed(net, net.node_index["MH2"], conn, parcels, profile=FP)
    assert shed.parcels == ["P1", "P2"] and shed.units == 2 and shed.units_unknown == 1
    # P2's units are unknown: the flow is not known, and the units known give a lower bound (it was 500 gpd, the
    # flow, as if P2 sent nothing; a tester's 89 parcels of unknown units were "0 gallons per day")
    assert shed.flow_gpd is None and shed.as_dict()["flow_gpd"] is None
    assert shed.flow_at_least_gpd == 2 * FP.network.gallons_per_day_per_unit.value
    assert shed.as_dict()["flow_at_least_gpd"] == 500.0
    below = sewershed(net, net.node_index["MH3"], conn, parcels, profile=FP)
    assert below.units == 11 and below.flow_gpd is None
    # P2's living units known as none and no flow given: its flow is still unknown (as `duties` reads it); its
    # metered flow makes it known
    none = sewershed(net, net.node_index["MH3"], conn, parcels.assign(units=[2, 0, 9]), profile=FP)
    assert none.units_unknown == 0 and none.flow_unknown == 1 and none.flow_gpd is None
    metered = parcels.assign(units=[2, 0, 9], flow_gpd=[None, 400.0, None])
    known = sewershed(net, net.node_index["MH3"], conn, metered, profile=FP)
    assert known.flow_unknown == 0 and known.flow_gpd == known.flow_at_least_gpd == 11 * 250 + 400


def test_pointer_jumping_agrees_with_networkx_on_the_sample():
    town = sample_town(1500)
    net = build(town["mains"], town["manholes"], town["treatment_plants"])
    g = nx.DiGraph()
    g.add_weighted_edges_from(zip(net.u, net.v, net.length_ft, strict=True))
    outfall = int(np.flatnonzero(net.node_is_outfall)[0])
    lengths = nx.single_source_dijkstra_path_length(g.reverse(), outfall)
    for node, expected in lengths.items():
        assert net.downstream_ft[node] == pytest.approx(expected)
    assert len(lengths) == net.n_nodes
    # Every parcel of the sample gets a control manhole and a length to the plant.
    parcels = town["parcels"].assign(connected=town["parcels"]["connected"] == "Y")
    result = analyze_mandates(
        parcels, town["mains"], streets=town["streets"], buildings=town["buildings"], profile=FP
    ).parcels
    out, _ = add_network_results(result, net)
    assert out["control_manhole"].str.startswith("MH-").all()
    assert (out["downstream_length_ft"] > 0).all() and out["network_problem"].isna().all()
    graph = net.graph
    assert graph.number_of_edges() == len(net.main_id) and graph.nodes["MH-1"]["manhole"]


def test_manchester_real_network(real_data):
    base = real_data / "vt-sewer" / "manchester"
    layers = load_layers(
        {
            "mains": LayerSource("mains", str(base / "ManchesterLinearFeatures.geojson")),
            "manholes": LayerSource("manholes", str(base / "ManchesterPointFeatures.geojson")),
            "outfalls": LayerSource("outfalls", str(base / "ManchesterWWTF.geojson")),
        },
        target_crs=measuring_crs("EPSG:2260"),
        required=("mains",),
    )
    # Manholes are about 0.5 m from pipe ends: a 2 ft snap tolerance, as a user would set for this data.
    profile = load_profile("wappinger", overrides={"network.snap_tolerance_ft": "2"})
    net = build_network(layers.mains, manholes=layers.manholes, outfalls=layers.outfalls, profile=profile)
    assert len(set(net.main_id)) == 448  # the 45 abandoned pipes are left out
    # Three pieces reach the plant from different sides (44 to 50 ft from it): each gets an inlet.
    assert net.node_is_outfall.sum() == 3
    defects = check_network(net, profile=profile, manholes=layers.manholes)
    kinds = {d.check for d in defects}
    assert {"disconnected_piece", "no_outfall", "unsplit_junction"} <= kinds
    lost = [d for d in defects if d.check == "no_outfall"]
    assert 1 <= len(lost) <= 5 and all("reaches no treatment plant" in d.message for d in lost)
    # The plant's pieces: every main's direction inferred toward the plant, and all of it drains there.
    in_piece = np.isin(net.piece[net.u], net.piece[net.node_is_outfall])
    assert in_piece.sum() > 440
    assert set(net.direction_source[in_piece]) == {"inferred"}
    assert net.drains()[net.u[in_piece]].all()
    # About half the pipes were digitised against the flow (the data's README): inference reversed them.
    raw = layers.mains.set_index("main_id").geometry
    first = np.array([raw[mid].coords[0] for mid in net.main_id[in_piece]])
    flows_from_first = np.hypot(*(first - net.node_xy[net.u[in_piece]]).T) < 3
    assert 0.25 < 1 - flows_from_first.mean() < 0.75


def test_bellinge_swmm_directions_and_paths(real_data):
    base = real_data / "bellinge-swmm"
    inp = base / "bellinge_small.inp"
    layers = load_layers(
        {"mains": LayerSource("mains", str(inp), "mains"), "manholes": LayerSource("manholes", str(inp), "manholes")},
        target_crs=measuring_crs("EPSG:32632"),
        assume_crs={"mains": "EPSG:32632", "manholes": "EPSG:32632"},
        required=("mains",),
    )
    net = build_network(layers.mains, manholes=layers.manholes, profile=FP)
    graph = json.loads((base / "bellinge_small_graph.json").read_text())
    links = graph.get("links") or graph.get("edges")
    pipes = {(str(e["source"]), str(e["target"])) for e in links}
    assert len(pipes) == 14
    ours = set(zip(names(net, net.u), names(net, net.v), strict=True))
    assert pipes <= ours  # all 14 real pipes, in the model's direction
    assert set(net.direction_source) == {"from_to_fields"}
    assert ("G72F050", "G72F050_outfall") in ours and net.node_is_outfall[net.node_index["G72F050_outfall"]]
    # Every node's downstream path follows the model's From/To to G72F050.
    succ = dict(pipes)
    for node in {s for s, _ in pipes}:
        expected = [node]
        while expected[-1] in succ:
            expected.append(succ[expected[-1]])
        assert expected[-1] == "G72F050"
        got = trace_down(net, net.node_index[node]).path
        assert got[: len(expected)] == expected and got[-1] == "G72F050_outfall"
    # No pipe runs uphill in the model: inverts fall along every real pipe.
    assert not [d for d in check_network(net, profile=FP) if d.check == "adverse_slope"]
    widths = pd.Series(net.diameter_in, index=net.main_id)
    assert widths["G72F821_G72F820_l1"] == pytest.approx(0.2 * 3937 / 1200 * 12)


def test_manchester_through_the_cli(real_data):
    """The real town's layers as a user gives them: the plant joins the end of each piece that reaches it."""
    from click.testing import CliRunner

    from gisapp.cli import main

    base = real_data / "vt-sewer" / "manchester"
    layers = [
        "--layer",
        f"mains={base / 'ManchesterLinearFeatures.geojson'}",
        "--layer",
        f"manholes={base / 'ManchesterPointFeatures.geojson'}",
        "--layer",
        f"outfalls={base / 'ManchesterWWTF.geojson'}",
        "--set",
        "network.snap_tolerance_ft=2",
    ]
    run = CliRunner().invoke(
        main, ["network", "check", "--profile", "wappinger", *map(str, layers), "--json"], catch_exceptions=False
    )
    assert run.exit_code == 0, run.stderr
    report = json.loads(run.stdout)
    joined = [d for d in report if d["check"] == "outfall_joined"]
    # Three pieces reach the plant (its program category: "Municipal Discharge"); each is joined at its end.
    assert len(joined) == 3 and all("Plant Manchester is joined to J-" in d["message"] for d in joined)
    assert all(60 < float(d["message"].split(" ft away")[0].rsplit(", ", 1)[1]) < 80 for d in joined)
    assert not [d for d in report if d["check"] in ("plant_mid_run", "not_a_plant", "several_outfalls")]
    # Said as the town knows it: one plant, reached from three separate pieces (it read "3 outfalls, 5 pieces"),
    # each piece with its mains, adding up to the network's 448; the fourth piece reaches no plant.
    said = " ".join(
        CliRunner().invoke(main, ["network", "check", "--profile", "wappinger", *map(str, layers)]).stdout.split()
    )
    inlets = sorted(d["message"].split(" is joined to ")[1].split(",")[0] for d in joined)
    plant_said = re.search(
        r"1 treatment plant: Manchester, reached from 3 separate pieces of the network \(outfall nodes ([^)]*)\)\.",
        said,
    )
    assert plant_said and sorted(plant_said.group(1).split(", ")) == inlets and "3 outfalls" not in said
    assert "448 mains," in said and "The mains are in 4 separate pieces of the network" in said
    # The table shows one finding of each check; the rest are not lost from sight: the user is told how to get them.
    assert f"The table shows one example of each check. All {len(report)} findings," in said
    assert "--out network.csv" in said
    pieces = re.findall(
        r"([\d,]+) mains? \(([\d,]+) ft\) (?:ending at Manchester \((J-\d+)\)|reaching no treatment plant)", said
    )
    assert len(pieces) == 4 and sum(int(n.replace(",", "")) for n, _, _ in pieces) == 448
    assert sorted(node for _, _, node in pieces if node) == inlets
    # The pieces apart from the largest are the disconnected_piece findings, mains and feet alike.
    apart = sorted(d["message"].split(" is not connected")[0] for d in report if d["check"] == "disconnected_piece")
    assert apart == sorted(f"A piece of {n} main{'s' if n != '1' else ''} ({ft} ft)" for n, ft, _ in pieces[1:])
    assert all(isinstance(d["x"], float) and isinstance(d["y"], float) for d in report if d["check"] != "no_outfall")
    # Wappinger's design numbers are the profile's settings: information, citing no section as requiring them.
    design = [d for d in report if d["check"] in ("min_diameter", "manhole_spacing", "alignment_change")]
    assert design and {d["severity"] for d in design} == {"info"} and {d["section"] for d in design} == {""}
    assert not any("196-23D requires" in d["message"] for d in report)
    # A trace from a manhole far up the largest piece reaches the plant's inlet with its length.
    loaded = load_layers(
        {
            "mains": LayerSource("mains", str(base / "ManchesterLinearFeatures.geojson")),
            "manholes": LayerSource("manholes", str(base / "ManchesterPointFeatures.geojson")),
            "outfalls": LayerSource("outfalls", str(base / "ManchesterWWTF.geojson")),
        },
        target_crs=measuring_crs("EPSG:2260"),
        required=("mains",),
    )
    profile = load_profile("wappinger", overrides={"network.snap_tolerance_ft": "2"})
    net = build_network(loaded.mains, manholes=loaded.manholes, outfalls=loaded.outfalls, profile=profile)
    far = int(np.nanargmax(np.where(net.node_is_manhole, net.downstream_ft, np.nan)))
    expected = trace_down(net, far)
    args = ["trace", *map(str, layers), "--manhole", str(net.node_id[far]), "--json"]
    doc = json.loads(CliRunner().invoke(main, args, catch_exceptions=False).stdout)
    inlets = {d["message"].split(" is joined to ")[1].split(",")[0] for d in joined}
    assert doc["path"] == expected.path and doc["outfall"] in inlets and doc["plant"] == "Manchester"
    said = CliRunner().invoke(main, args[:-1], catch_exceptions=False).stdout
    assert f"to the outfall {doc['outfall']}, the inlet of the treatment plant Manchester." in " ".join(said.split())
    assert doc["length_ft"] == pytest.approx(float(net.downstream_ft[far]), abs=0.1) and doc["length_ft"] > 5000


def test_the_docs_quote_manchester_as_the_documented_command_gives_it(real_data):
    """README and docs/network.md quoted Manchester as "4 pieces ... (outfall nodes J-10, J-11, J-9)", which is what
    a 2 ft snap tolerance gives (the test above); a user running the command as documented, at the default 1 ft,
    saw 5 pieces and outfalls J-11, J-13, J-10 (a tester). The quotes are checked against that run."""
    from pathlib import Path

    from click.testing import CliRunner

    from gisapp.cli import main

    base = real_data / "vt-sewer" / "manchester"
    layers = [
        f"--layer=mains={base / 'ManchesterLinearFeatures.geojson'}",
        f"--layer=manholes={base / 'ManchesterPointFeatures.geojson'}",
        f"--layer=outfalls={base / 'ManchesterWWTF.geojson'}",
    ]
    said = " ".join(CliRunner().invoke(main, ["network", "check", "--profile", "wappinger", *layers]).stdout.split())
    root = Path(__file__).resolve().parent.parent
    quoted = re.compile(r'"(1 treatment plant: Manchester, reached from [^"]*\))"')
    for doc in ("README.md", "docs/network.md"):
        found = quoted.findall(" ".join((root / doc).read_text().split()))
        assert found, doc
        assert all(q in said for q in found), (doc, found)
    assert "The mains are in 5 separate pieces of the network" in said
    network_md = " ".join((root / "docs" / "network.md").read_text().split())
    assert "the mains are in 5 pieces" in network_md


@pytest.mark.parametrize(
    ("plant", "manhole_structure", "named"),
    [
        ({"outfall_name": ["Village WWTP"], "outfall_manhole": ["MH3"]}, None, "Village WWTP"),  # named inlet
        ({"outfall_name": ["Village WWTP"]}, None, "Village WWTP"),  # joined by distance (50 ft)
        (None, "outfall", None),  # the manholes layer says MH3 is an outfall: no plant to name
    ],
)
def test_a_trace_names_the_plant_its_outfall_is_the_inlet_of(plant, manhole_structure, named):
    """A trace on the real Manchester network ended "to the outfall J-10", a generated node name, where the plant
    point had been joined: the plant the sewage reaches is what a board asks about."""

    def layer(columns: dict, geoms: list) -> gpd.GeoDataFrame:
        return gpd.GeoDataFrame(columns, geometry=geoms, crs="EPSG:2260")

    mains = layer({"main_id": ["A", "B"]}, [LineString([(0, 0), (300, 0)]), LineString([(600, 0), (300, 0)])])
    structure = ["manhole", "manhole", manhole_structure or "manhole"]
    mhs = layer(
        {"manhole_id": ["MH1", "MH2", "MH3"], "structure": structure}, [Point(0, 0), Point(300, 0), Point(600, 0)]
    )
    plants = layer(plant, [Point(650, 0)]) if plant else None
    net = build_network(mains, manholes=mhs, outfalls=plants, profile=load_profile("fort-plain"))
    t = trace_down(net, net.node_index["MH1"])
    assert (t.outfall, t.plant, t.length_ft) == ("MH3", named, 600.0)
    assert t.as_dict()["plant"] == named


def test_a_main_of_unknown_direction_leaves_the_control_manhole_unknown_and_says_so():
    """A tester's parcel on a main of unknown direction (a piece reaching no outfall, no from/to fields or inverts;
    `network check` said "kept as drawn") got "control manhole 466" in the trace and in its results. Its own main,
    or the way from a junction to the next manhole, decides the control manhole: through a main of unknown
    direction it is not known, left empty with the reason. Further down, the control manhole stands and the trace
    says the way on is not known."""
    m = mains(
        ("K", [(0, 0), (300, 0)]),
        ("P", [(0, 1000), (300, 1000)], {"from_manhole": "MH10"}),  # to a junction: the one field gives it
        ("Q", [(300, 1000), (600, 1000)]),  # unknown: drawn from the junction to MH11
        ("R", [(600, 1000), (900, 1000)], {"from_manhole": "MH11", "to_manhole": "MH12"}),
        ("S", [(900, 1000), (1200, 1000)]),  # unknown: drawn from MH12 to MH13
    )
    mh = manholes(MH1=(0, 0), MH2=(300, 0), MH10=(0, 1000), MH11=(600, 1000), MH12=(900, 1000), MH13=(1200, 1000))
    net = build(m, mh, plant((320, 0), "MH2"))
    assert dict(zip(net.main_id, net.direction_source, strict=True)) == {
        "K": "inferred",
        "P": "from_to_fields",
        "Q": "unknown",
        "R": "from_to_fields",
        "S": "unknown",
    }
    parcels = gpd.GeoDataFrame(
        {
            "parcel_id": ["OK", "ON_Q", "ON_P", "ON_R"],
            "main_id": ["K", "Q", "P", "R"],
            "connection_x": [100.0, 450.0, 150.0, 750.0],
            "connection_y": [0.0, 1000.0, 1000.0, 1000.0],
        },
        geometry=[box(0, 10, 1, 11)] * 4,
        crs="EPSG:2260",
    )
    out, conn = add_network_results(parcels, net)
    row = out.set_index("parcel_id")
    # Its own main (Q), or the junction's way on to the next manhole (Q again): not known, empty, and why.
    assert row["control_manhole"].astype(object).where(row["control_manhole"].notna(), None).tolist() == [
        "MH2",
        None,
        None,
        "MH12",
    ]
    assert pd.isna(row.loc["OK", "network_problem"])
    for pid in ("ON_Q", "ON_P"):
        assert row.loc[pid, "network_problem"].startswith(
            "The direction of main Q is unknown (no from/to field or invert gives it, and no way to an outfall "
            "orients it; kept as drawn), so the control manhole is not known"
        ), row.loc[pid, "network_problem"]
        assert (
            "Give the mains' direction: their from and to manhole fields, their inverts"
            in (row.loc[pid, "network_problem"])
        )
        assert "no outfall" in row.loc[pid, "network_problem"]  # the piece's own problem is still said
    assert row.loc["ON_R", "network_problem"].startswith(
        "The direction of main S is unknown (no from/to field or invert gives it, and no way to an outfall orients "
        "it; kept as drawn), so the path follows it as drawn, and where the flow goes and how far are not known."
    )
    assert out["downstream_length_ft"].isna().tolist() == [False, True, True, True]
    # The trace says the same as the results column: no control manhole where it is not known, and why.
    traces = {pid: trace_parcel(net, pid, conn.iloc[i]) for i, pid in enumerate(parcels["parcel_id"])}
    assert [traces[p].control_manhole for p in ("OK", "ON_Q", "ON_P", "ON_R")] == ["MH2", None, None, "MH12"]
    assert traces["OK"].direction_unknown == [] and traces["OK"].problem is None
    # The trace names every such main on its way (Q, and S below MH12); the results column the first.
    assert traces["ON_Q"].direction_unknown == ["Q", "S"] and traces["ON_P"].direction_unknown == ["Q", "S"]
    assert traces["ON_R"].direction_unknown == ["S"]
    for pid in ("ON_Q", "ON_P"):
        assert traces[pid].problem.startswith(
            "The directions of mains Q, S are unknown (no from/to field or invert gives them, and no way to an "
            "outfall orients them; kept as drawn), so the control manhole is not known"
        ), traces[pid].problem
    assert traces["ON_R"].problem.split(". Give")[0] == row.loc["ON_R", "network_problem"].split(". Give")[0]
    assert traces["ON_P"].as_dict()["direction_unknown"] == ["Q", "S"]
    # From a manhole the control manhole is itself; a trace passing S says the way on is not known.
    down = trace_down(net, net.node_index["MH11"])
    assert down.control_manhole == "MH11" and down.direction_unknown == ["S"] and down.length_ft is None
    assert down.problem.startswith("The direction of main S is unknown")
    # Where the network leaves no main unknown, nothing changes: the sample town's traces name no such main.
    town = sample_town(300)
    full = build(town["mains"], town["manholes"], town["treatment_plants"])
    assert not (full.direction_source == "unknown").any()
    assert (full.unknown_to_control < 0).all() and (full.unknown_to_end < 0).all()
