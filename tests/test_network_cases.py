"""The network on hand-made GeoPackages, each a way real data broke it, end to end: load_layers, then the CLI.

Every case is a small town in Fort Plain's New York East feet (validation refuses layers outside their CRS's area
of use), written to a GeoPackage and read back as a user's data would be: through ``load_layers`` and through
``sewerplan network check``, ``trace`` and ``analyze``. Each answer can be seen from the drawing.
"""

from __future__ import annotations

import json

import geopandas as gpd
import pandas as pd
import pytest
from click.testing import CliRunner
from shapely.geometry import LineString, Point, box

from analysis.network import build_network
from analysis.network_checks import check_network
from analysis.profiles import load_profile
from gisapp.cli import main
from layers.crs import measuring_crs
from layers.read import find_layers, load_layers
from tests.conftest import NY_ORIGIN, ny_frame

FP = load_profile("fort-plain")
X0, Y0 = NY_ORIGIN


def write_town(path, mains, manholes, plants=None, parcels=None, buildings=None):
    """A GeoPackage of the given layers (rows as dicts in local feet, moved to Fort Plain); with parcels, the
    street the mains run along (y = 0)."""
    layers = {"mains": mains, "manholes": manholes, "treatment_plants": plants, "parcels": parcels}
    layers["buildings"] = buildings
    if parcels:
        layers["streets"] = [{"street_name": "Main St", "geometry": LineString([(-200, 0), (1200, 0)])}]
    for name, rows in layers.items():
        if rows:
            ny_frame(rows).to_file(path, layer=name)
    return path


def line(main_id, *xy, **attrs):
    return {"main_id": main_id, **attrs, "geometry": LineString(xy)}


def mh(manhole_id, x, y, **attrs):
    return {"manhole_id": manhole_id, **attrs, "geometry": Point(x, y)}


def plant(plant_id, x, y, **attrs):
    return {"plant_id": plant_id, **attrs, "geometry": Point(x, y)}


def run(*args):
    """The CLI as a user runs it: exit status, stdout, stderr; a traceback fails the test."""
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def check_json(path, *extra, profile="fort-plain"):
    code, out, err = run("network", "check", "--profile", profile, "--data", path, "--json", *extra)
    assert code == 0, err
    return json.loads(out)


def trace_json(path, manhole, *extra):
    code, out, err = run("trace", "--data", path, "--manhole", manhole, "--json", *extra)
    assert code == 0, err
    return json.loads(out)


def loaded(path):
    return load_layers(find_layers(str(path)), target_crs=measuring_crs("EPSG:2260"), required=("mains",))


def network_of(layers, profile=FP):
    return build_network(layers.mains, manholes=layers.manholes, outfalls=layers.outfalls, profile=profile)


def by_check(report, name):
    return [d for d in report if d["check"] == name]


# A straight run MH1 -> MH2 -> MH3 along y = 0, 300 ft apart, and the plant 30 ft past MH3.
RUN = [mh("MH1", 0, 0), mh("MH2", 300, 0), mh("MH3", 600, 0)]
PLANT = [plant("WWTP", 630, 0)]


def test_zero_length_main_through_validation_and_every_command(tmp_path):
    # Z is drawn on one spot at MH2: validation's make_valid empties it; the network must report it, not crash.
    path = write_town(
        tmp_path / "zero.gpkg",
        [line("A", (0, 0), (300, 0)), line("Z", (300, 0), (300, 0)), line("B", (300, 0), (600, 0))],
        RUN,
        PLANT,
        parcels=[{"parcel_id": "P1", "occupied": True, "geometry": box(100, 30, 200, 130)}],
    )
    layers = loaded(path)
    z = layers.mains.set_index("main_id").geometry["Z"]
    assert z.is_empty  # what validation hands over
    net = network_of(layers)
    assert sorted(set(net.main_id)) == ["A", "B"]
    zero = [d for d in check_network(net, profile=FP) if d.check == "zero_length_main"]
    assert len(zero) == 1 and zero[0].feature_id == "Z" and zero[0].severity == "error"

    report = check_json(path)
    (found,) = by_check(report, "zero_length_main")
    assert found["feature_id"] == "Z" and "left out of the network" in found["message"]
    assert found["x"] is None and found["y"] is None  # emptied: no place left, and JSON says so (no NaN)
    t = trace_json(path, "MH1")
    assert t["path"] == ["MH1", "MH2", "MH3"] and t["outfall"] == "MH3" and t["length_ft"] == 600.0
    code, out, err = run("analyze", "--profile", "fort-plain", "--data", path, "--json")
    assert code == 0, err
    summary = json.loads(out)["summary"]
    assert summary["counts"]["mandated"] == 1 and summary["traced"] == 1
    # Drawn on one spot with a from field: located at the manhole it names.
    path2 = write_town(
        tmp_path / "zero_named.gpkg",
        [line("A", (0, 0), (300, 0)), line("Z", (300, 0), (300, 0), from_manhole="MH2"), line("B", (300, 0), (600, 0))],
        RUN,
        PLANT,
    )
    (found,) = by_check(check_json(path2), "zero_length_main")
    assert (found["x"], found["y"]) == (X0 + 300, Y0)


def test_a_discharger_beside_a_manhole_mid_run_is_not_an_outfall(tmp_path):
    # The real plant is 30 ft past the end MH4; an industrial discharger stands 44 ft from MH2, mid-run.
    mains = [line("A", (0, 0), (300, 0)), line("B", (300, 0), (600, 0)), line("C", (600, 0), (900, 0))]
    manholes = [*RUN, mh("MH4", 900, 0)]
    plants = [plant("WWTP", 930, 0, name="Village WWTP"), plant("ACME", 300, 44, name="Acme Dairy")]
    path = write_town(tmp_path / "plants.gpkg", mains, manholes, plants)
    net = network_of(loaded(path))
    assert [str(n) for n in net.node_id[net.node_is_outfall]] == ["MH4"]
    report = check_json(path)
    (mid,) = by_check(report, "plant_mid_run")
    assert mid["feature_id"] == "Acme Dairy" and "44 ft from MH2" in mid["message"]
    (joined,) = by_check(report, "outfall_joined")
    assert joined["feature_id"] == "Village WWTP" and "MH4" in joined["message"] and "30 ft" in joined["message"]
    assert joined["severity"] == "info" and joined["x"] == X0 + 930
    assert trace_json(path, "MH1")["path"] == ["MH1", "MH2", "MH3", "MH4"]

    # With a facility-type column (a state layer's program category), the discharger is left out by its type.
    typed = [
        plant("WWTP", 930, 0, name="Village WWTP", ProgramCategory="Municipal Discharge"),
        plant("ACME", 300, 44, name="Acme Dairy", ProgramCategory="Industrial Discharge"),
    ]
    path2 = write_town(tmp_path / "typed.gpkg", mains, manholes, typed)
    report2 = check_json(path2)
    (other,) = by_check(report2, "not_a_plant")
    assert other["feature_id"] == "Acme Dairy" and "'other'" in other["message"]
    assert not by_check(report2, "plant_mid_run") and len(by_check(report2, "outfall_joined")) == 1
    # A type nobody mapped is refused with the way to map it.
    odd = [plant("WWTP", 930, 0, ProgramCategory="MUN"), plant("ACME", 300, 44, ProgramCategory="IND")]
    path3 = write_town(tmp_path / "odd.gpkg", mains, manholes, odd)
    code, _, err = run("network", "check", "--profile", "fort-plain", "--data", path3)
    assert code == 2 and "facility_type" in err and "--map-value outfalls.facility_type.IND=CODE" in err
    mapped = check_json(
        path3, "--map-value", "outfalls.facility_type.MUN=plant", "--map-value", "outfalls.facility_type.IND=other"
    )
    assert len(by_check(mapped, "not_a_plant")) == 1 and len(by_check(mapped, "outfall_joined")) == 1


def test_two_plant_points_at_ends_of_one_piece_are_reported_with_their_shares(tmp_path):
    # Both points sit at ends of the sewer (no type column): both are kept, and the split is said out loud.
    mains = [line("A", (0, 0), (300, 0)), line("B", (300, 0), (600, 0)), line("C", (600, 0), (900, 0))]
    manholes = [*RUN, mh("MH4", 900, 0)]
    path = write_town(tmp_path / "two.gpkg", mains, manholes, [plant("WWTP", 930, 0), plant("OTHER", -40, 0)])
    report = check_json(path)
    (shared,) = by_check(report, "several_outfalls")
    assert "MH4" in shared["message"] and "MH1" in shared["message"] and "%" in shared["message"]
    # A plant layer naming its inlet takes precedence: the other point is not joined to that piece.
    named = [plant("WWTP", 930, 0, outfall_manhole="MH4"), plant("OTHER", -40, 0)]
    report2 = check_json(write_town(tmp_path / "named.gpkg", mains, manholes, named))
    assert not by_check(report2, "several_outfalls")
    (skipped,) = by_check(report2, "outfall_not_joined")
    assert skipped["feature_id"] == "OTHER" and "MH4" in skipped["message"]


def test_a_plant_near_two_ends_of_one_piece_says_which_it_took(tmp_path):
    # The run ends at MH3, 30 ft from the plant; a branch from MH2 ends at MHX, 122 ft from it. No evidence says
    # which end enters the plant: the nearer is taken, and the other named, as a warning.
    mains = [*[line(k, *xy) for k, xy in (("A", ((0, 0), (300, 0))), ("B", ((300, 0), (600, 0))))]]
    mains.append(line("X", (300, 0), (560, 100)))
    path = write_town(tmp_path / "ends.gpkg", mains, [*RUN, mh("MHX", 560, 100)], PLANT)
    (joined,) = by_check(check_json(path), "outfall_joined")
    assert joined["severity"] == "warning" and "joined to MH3" in joined["message"]
    assert "MHX 122 ft" in joined["message"] and "outfall_manhole" in joined["message"]


def check_text(path, *extra, profile="fort-plain"):
    """``network check`` as printed, its words on one line (the console wraps them)."""
    code, out, err = run("network", "check", "--profile", profile, "--data", path, *extra)
    assert code == 0, err
    return " ".join(out.split())


def test_one_plant_joined_to_two_pieces_is_one_plant_reached_from_both(tmp_path):
    # Piece 1: A, B from MH1 to MH3 (30 ft from the plant), and D ending on the middle of A (split there: still 3
    # mains, 800 ft). Piece 2: C from MH4 to MH5 (104 ft from the plant), 240 ft, not connected to piece 1: as if
    # the main from MH5 to MH3 were missing from the data. The plant point joins the end of each: two outfall nodes,
    # one plant. The head said "2 outfalls, 2 pieces".
    mains = [
        line("A", (0, 0), (300, 0)),
        line("B", (300, 0), (600, 0)),
        line("D", (150, -200), (150, 0)),
        line("C", (900, 100), (660, 100)),
    ]
    manholes = [*RUN, mh("MH4", 900, 100), mh("MH5", 660, 100)]
    path = write_town(tmp_path / "gap.gpkg", mains, manholes, [plant("WWTP", 630, 0)])
    said = check_text(path)
    assert "1 treatment plant: WWTP, reached from 2 separate pieces of the network (outfall nodes MH3, MH5)." in said
    assert (
        "The mains are in 2 separate pieces of the network, not connected to each other: 3 mains (800 ft) ending at "
        "WWTP (MH3); 1 main (240 ft) ending at WWTP (MH5). If the sewer is one system, a gap in the data split it (a "
        "main missing, or main ends more than 1 ft apart, the snap tolerance (network.snap_tolerance_ft))"
    ) in said
    # D's free end and the point where it meets A are junction nodes; A's two pieces are one main in the counts.
    assert "4 mains, 5 manholes, 2 junctions. Direction from: inferred 4." in said and "2 outfalls" not in said
    # The findings count mains as the data has them too: A, split where D meets it, is one main.
    report = check_json(path)
    joined = sorted(d["message"] for d in by_check(report, "outfall_joined"))
    assert "joined to MH3, the nearest end of a piece of 3 mains, 30 ft away" in joined[0]
    assert "joined to MH5, the nearest end of a piece of 1 main, 104 ft away" in joined[1]
    (apart,) = by_check(report, "disconnected_piece")
    assert apart["message"].startswith("A piece of 1 main (240 ft) is not connected")


def test_outfalls_the_data_names_are_each_an_outfall(tmp_path):
    # MH1 and MH3 are outfalls by the manholes layer, at both ends of one piece; MH6 ends a second piece. Three
    # outfalls, said as three, each piece with its own; no treatment plant is named where the data names none.
    mains = [line("A", (0, 0), (300, 0)), line("B", (300, 0), (600, 0)), line("C", (0, 500), (300, 500))]
    manholes = [
        mh("MH1", 0, 0, structure="outfall"),
        mh("MH2", 300, 0),
        mh("MH3", 600, 0, structure="outfall"),
        mh("MH7", 0, 500),
        mh("MH6", 300, 500, structure="outfall"),
    ]
    said = check_text(write_town(tmp_path / "outfalls.gpkg", mains, manholes))
    assert "3 outfalls: MH1, MH3, MH6." in said and "treatment plant:" not in said
    assert (
        "separate pieces of the network, not connected to each other: 2 mains (600 ft) ending at outfall MH1, "
        "outfall MH3; 1 main (300 ft) ending at outfall MH6."
    ) in said
    # One piece of them alone: one connected piece, still two outfalls.
    one = write_town(tmp_path / "one.gpkg", mains[:2], manholes[:3])
    said = check_text(one)
    assert "2 outfalls: MH1, MH3. The mains are one connected piece of the network." in said
    # A plant inlet the manholes layer names, with no plant layer: a plant inlet, not an outfall.
    inlet = [*RUN[:2], mh("MH3", 600, 0, structure="plant inlet")]
    said = check_text(write_town(tmp_path / "inlet.gpkg", mains[:2], inlet))
    assert "1 plant inlet named by the manholes layer: MH3." in said and "outfall:" not in said
    # None at all (the plant point 1,000 ft off, not joined): said, not left as "0 outfalls".
    far = write_town(tmp_path / "far.gpkg", mains[:2], RUN, [plant("WWTP", 1600, 0)])
    said = check_text(far)
    assert "No treatment plant or outfall is on the network: no flow reaches one (no_outfall)." in said
    assert "outfall_not_on_network" in said


def test_one_piece_between_two_outfalls_the_manholes_layer_names_is_said_as_shared(tmp_path):
    # MH1 and MH3, both outfalls by the manholes layer, end one piece: the flow divides at MH2 between them. Only
    # split_flow said so; several_outfalls was raised for outfalls a plant point was joined to alone.
    mains = [line("A", (0, 0), (300, 0)), line("B", (300, 0), (600, 0)), line("C", (0, 500), (300, 500))]
    manholes = [
        mh("MH1", 0, 0, structure="outfall"),
        mh("MH2", 300, 0),
        mh("MH3", 600, 0, structure="outfall"),
        mh("MH7", 0, 500),
        mh("MH6", 300, 500, structure="outfall"),
    ]
    report = check_json(write_town(tmp_path / "outfalls.gpkg", mains, manholes))
    (shared,) = by_check(report, "several_outfalls")
    assert (shared["severity"], shared["feature_id"]) == ("warning", "MH1")
    assert shared["message"].startswith(
        "One piece of the network ends at 2 outfalls, each draining the mains nearest it: MH1 (named by the "
        "manholes layer: 1 main, 50%), MH3 (named by the manholes layer: 1 main, 50%). If one of them is an overflow"
    )
    assert [d["feature_id"] for d in by_check(report, "split_flow")] == ["MH2"]
    # MH6 ends a piece of its own: nothing shared there
    assert "MH6" not in shared["message"]


def test_force_main_pumped_uphill_keeps_its_drawn_direction(tmp_path):
    # A wet well PS pumps up to MH2 (inverts rise 20 ft); gravity runs on to MH3 and the plant. No from/to fields.
    mains = [
        line("FM", (0, 0), (300, 0), sewer_type="force", us_invert_ft=90.0, ds_invert_ft=110.0, diameter_in=4.0),
        line("G", (300, 0), (600, 0), us_invert_ft=108.0, ds_invert_ft=106.0, diameter_in=8.0),
    ]
    manholes = [mh("PS", 0, 0, structure="pump station"), mh("MH2", 300, 0), mh("MH3", 600, 0)]
    path = write_town(tmp_path / "force.gpkg", mains, manholes, PLANT)
    net = network_of(loaded(path))
    fm = list(net.main_id).index("FM")
    assert net.direction_source[fm] == "digitised" and net.node_id[net.u[fm]] == "PS"
    report = check_json(path)
    assert not by_check(report, "adverse_slope") and not by_check(report, "min_diameter")
    t = trace_json(path, "PS")
    assert t["path"] == ["PS", "MH2", "MH3"] and t["outfall"] == "MH3"
    assert t["control_manhole"] == "MH2"  # a pump station is not a manhole


def test_adverse_gravity_main_with_inverts_only_is_reported_not_reversed(tmp_path):
    # B was laid uphill (inverts 99 -> 100 in its drawn direction, MH2 -> MH3); reversing it by its inverts would
    # leave MH2 a dead end with A flowing in and the plant beyond MH3 unreachable.
    mains = [
        line("A", (0, 0), (300, 0), us_invert_ft=101.0, ds_invert_ft=100.0),
        line("B", (300, 0), (600, 0), us_invert_ft=99.0, ds_invert_ft=100.0),
        line("C", (600, 0), (900, 0), us_invert_ft=98.0, ds_invert_ft=97.0),
    ]
    path = write_town(tmp_path / "adverse.gpkg", mains, [*RUN, mh("MH4", 900, 0)], [plant("WWTP", 930, 0)])
    net = network_of(loaded(path))
    b = list(net.main_id).index("B")
    assert net.node_id[net.u[b]] == "MH2" and net.direction_source[b] == "inferred"
    assert list(net.direction_source) == ["inverts", "inferred", "inverts"]
    report = check_json(path)
    (adverse,) = by_check(report, "adverse_slope")
    assert adverse["feature_id"] == "B" and "100.00 ft above" in adverse["message"] and "MH2" in adverse["message"]
    assert not by_check(report, "no_outfall")
    t = trace_json(path, "MH1")
    assert t["path"] == ["MH1", "MH2", "MH3", "MH4"] and t["problem"] is None and t["length_ft"] == 900.0


def test_inverts_still_decide_where_they_agree_with_the_network(tmp_path):
    # Drawn against the flow, but the inverts fall toward the plant: the inverts decide, nothing is adverse.
    mains = [
        line("A", (300, 0), (0, 0), us_invert_ft=100.0, ds_invert_ft=101.0),
        line("B", (600, 0), (300, 0), us_invert_ft=99.0, ds_invert_ft=100.0),
    ]
    path = write_town(tmp_path / "backwards.gpkg", mains, RUN, PLANT)
    net = network_of(loaded(path))
    assert list(net.direction_source) == ["inverts", "inverts"]
    assert [str(n) for n in net.node_id[net.v]] == ["MH2", "MH3"]
    assert not by_check(check_json(path), "adverse_slope")


def test_piece_with_from_to_fields_and_no_plant_says_where_flow_stops(tmp_path):
    # The main piece reaches the plant; an island with from/to fields (K1 -> K2 -> K3) reaches none.
    mains = [
        line("A", (0, 0), (300, 0)),
        line("B", (300, 0), (600, 0)),
        line("K-1", (0, 1000), (300, 1000), from_manhole="K1", to_manhole="K2"),
        line("K-2", (300, 1000), (600, 1000), from_manhole="K2", to_manhole="K3"),
    ]
    manholes = [*RUN, mh("K1", 0, 1000), mh("K2", 300, 1000), mh("K3", 600, 1000)]
    path = write_town(tmp_path / "island.gpkg", mains, manholes, PLANT)
    t = trace_json(path, "K1")
    assert t["path"] == ["K1", "K2", "K3"] and t["outfall"] is None and t["length_ft"] is None
    assert "stops at K3" in t["problem"] and "reaches no treatment plant or outfall" in t["problem"]
    report = check_json(path)
    island = [d for d in by_check(report, "no_outfall") if d["feature_id"] == "K-1"]
    assert len(island) == 1 and "flow stops at K3" in island[0]["message"]
    assert "no from/to fields" not in json.dumps(report)
    # Printed: the trace's problem, and no length to an outfall.
    code, out, _ = run("trace", "--data", path, "--manhole", "K1")
    assert code == 0 and "stops at K3" in out and "ft of sewer to the outfall" not in out


def test_end_five_feet_from_its_manhole_is_named_with_the_gap(tmp_path):
    # B's to field names MH3, but its end stops 5 ft short of it (beyond the 1 ft snap tolerance).
    mains = [
        line("A", (0, 0), (300, 0), from_manhole="MH1", to_manhole="MH2"),
        line("B", (300, 0), (595, 0), from_manhole="MH2", to_manhole="MH3"),
        line("C", (600, 0), (900, 0), from_manhole="MH3", to_manhole="MH4"),
    ]
    path = write_town(tmp_path / "gap.gpkg", mains, [*RUN, mh("MH4", 900, 0)], [plant("WWTP", 930, 0)])
    report = check_json(path)
    (gap,) = by_check(report, "from_to_mismatch")
    assert gap["feature_id"] == "B" and "5.0 ft from MH3" in gap["message"] and "to field names MH3" in gap["message"]
    assert "no from/to fields" not in json.dumps(report)
    t = trace_json(path, "MH1")
    assert t["path"] == ["MH1", "MH2", "J-1"] and t["outfall"] is None
    assert "stops at J-1" in t["problem"]
    stop = [d for d in by_check(report, "no_outfall") if "J-1" in d["message"]]
    assert len(stop) == 1
    # B's direction still comes from its fields: the end that does meet its manhole says which way it runs.
    net = network_of(loaded(path))
    assert net.direction_source[list(net.main_id).index("B")] == "from_to_fields"


def test_cleanouts_and_caps_are_nodes_but_never_control_manholes(tmp_path):
    mains = [line("A", (0, 0), (300, 0)), line("B", (300, 0), (600, 0))]
    manholes = [mh("CO-1", 0, 0, structure="Cleanout"), mh("CAP", 300, 0, structure="pipe cap"), mh("MH3", 600, 0)]
    path = write_town(tmp_path / "cleanout.gpkg", mains, manholes, PLANT)
    t = trace_json(path, "CO-1")
    assert t["path"] == ["CO-1", "CAP", "MH3"] and t["control_manhole"] == "MH3"
    junction = by_check(check_json(path), "junction_without_manhole")
    assert [d["feature_id"] for d in junction] == ["CAP"] and "a cap, not a manhole" in junction[0]["message"]
    odd = write_town(tmp_path / "odd.gpkg", mains, [mh("X1", 0, 0, structure="WIDGET"), *RUN[1:]], PLANT)
    code, _, err = run("trace", "--data", odd, "--manhole", "X1")
    assert code == 2 and "--map-value manholes.structure.WIDGET=CODE" in err


def test_split_main_is_named_once_and_upstream_counts_read_right(tmp_path):
    # BRANCH ends on TRUNK's middle: TRUNK is split there, but a trace names it once.
    mains = [line("TRUNK", (0, 0), (600, 0)), line("BRANCH", (300, 300), (300, 0))]
    manholes = [mh("MH1", 0, 0), mh("MH3", 600, 0), mh("MHB", 300, 300)]
    path = write_town(tmp_path / "split.gpkg", mains, manholes, PLANT)
    t = trace_json(path, "MH1")
    assert t["mains"] == ["TRUNK"] and t["path"] == ["MH1", "J-1", "MH3"]
    shed = trace_json(path, "MH3", "--upstream")
    assert sorted(shed["mains"]) == ["BRANCH", "TRUNK"] and sorted(shed["manholes"]) == ["MH1", "MH3", "MHB"]
    code, out, _ = run("trace", "--data", path, "--manhole", "MH3", "--upstream")
    assert code == 0 and "Upstream of MH3: 2 mains, 2 other manholes, 0 parcels" in out
    one = write_town(tmp_path / "one.gpkg", [line("A", (0, 0), (300, 0))], RUN[:2], [plant("WWTP", 330, 0)])
    code, out, _ = run("trace", "--data", one, "--manhole", "MH2", "--upstream")
    assert code == 0 and "Upstream of MH2: 1 main, 1 other manhole" in out and "1 mains" not in out
    # no parcel drains there: no flow estimate, and so no gpd per unit of the default profile to name
    assert "0 parcels (connected or required to connect) draining here; no flow estimate" in " ".join(out.split())
    # with a house of 2 living units on the main, the gpd per unit is said, and whose number it is: the command's
    # default profile where none is given
    lot = [{"parcel_id": "P1", "occupied": True, "units": 2, "geometry": box(100, 30, 200, 130)}]
    one = write_town(tmp_path / "lot.gpkg", [line("A", (0, 0), (300, 0))], RUN[:2], [plant("WWTP", 330, 0)], lot)
    code, out, _ = run("trace", "--data", one, "--manhole", "MH2", "--upstream")
    assert code == 0 and "from the default fort-plain profile" in " ".join(out.split()), out
    # fort-plain given (or recorded by the store's run) is the town's profile, not the command's default
    code, out, _ = run("trace", "--profile", "fort-plain", "--data", one, "--manhole", "MH2", "--upstream")
    assert (
        code == 0
        and "default" not in out
        and "(a profile setting, network.gallons_per_day_per_unit)" in " ".join(out.split())
    ), out
    # Wappinger's 250 gpd per unit is the profile's setting, not § 196-23D's number: never cited as the law's.
    code, out, _ = run("trace", "--profile", "wappinger", "--data", one, "--manhole", "MH2", "--upstream")
    assert code == 0 and "a profile setting, network.gallons_per_day_per_unit" in " ".join(out.split())
    assert "196-23D" not in out


@pytest.mark.parametrize("profile", ["fort-plain", "wappinger"])
def test_design_rules_on_existing_mains_are_information(tmp_path, profile):
    mains = [line("SMALL", (0, 0), (300, 0), diameter_in=6.0), line("LONG", (300, 0), (1200, 0), diameter_in=8.0)]
    manholes = [mh("A", 0, 0), mh("B", 300, 0), mh("C", 1200, 0)]
    path = write_town(tmp_path / "design.gpkg", mains, manholes, [plant("WWTP", 1230, 0)])
    report = check_json(path, profile=profile)
    small, spacing = by_check(report, "min_diameter"), by_check(report, "manhole_spacing")
    assert len(small) == 1 and len(spacing) == 1
    assert {d["severity"] for d in small + spacing} == {"info"}
    assert "below" in small[0]["message"] and "new sewers" in small[0]["message"]
    assert "requires" not in small[0]["message"] + spacing[0]["message"]
    if profile == "fort-plain":
        assert small[0]["section"] == "§ 144-18B" and spacing[0]["section"] == "§ 144-18K"
    else:
        # Wappinger's numbers are the profile's readings of the Ten States Standards, not § 196-23D's words.
        assert small[0]["section"] == spacing[0]["section"] == ""
        assert "a setting" in small[0]["message"] and "not a number the law states" in small[0]["message"]


def test_design_values_set_for_a_run_are_cited_as_such(tmp_path):
    # Poughkeepsie's article sets no pipe size: a value given with --set is the user's, not the law's.
    mains = [line("SMALL", (0, 0), (300, 0), diameter_in=6.0)]
    path = write_town(tmp_path / "pk.gpkg", mains, RUN[:2], [plant("WWTP", 330, 0)])
    assert not by_check(check_json(path, profile="poughkeepsie"), "min_diameter")
    (small,) = by_check(check_json(path, "--set", "network.min_diameter_in=8", profile="poughkeepsie"), "min_diameter")
    assert small["section"] == "" and "the 8 in set for this run" in small["message"]


def test_wappinger_spacing_applies_to_mains_of_15_in_or_less(tmp_path):
    mains = [line("BIG", (0, 0), (900, 0), diameter_in=24.0), line("SMALL", (900, 0), (1800, 0), diameter_in=12.0)]
    manholes = [mh("A", 0, 0), mh("B", 900, 0), mh("C", 1800, 0)]
    path = write_town(tmp_path / "sizes.gpkg", mains, manholes, [plant("WWTP", 1830, 0)])
    wp = [d["feature_id"] for d in by_check(check_json(path, profile="wappinger"), "manhole_spacing")]
    fp = [d["feature_id"] for d in by_check(check_json(path, profile="fort-plain"), "manhole_spacing")]
    assert wp == ["B"] and fp == ["A", "B"]  # Fort Plain's § 144-18K sets 400 ft for every size
    assert load_profile("wappinger").network.manhole_spacing_by_diameter.value == {"15": 400.0}
    assert load_profile("fort-plain").network.manhole_spacing_by_diameter.value == {}


def test_trace_needs_no_profile_and_buildings_no_wappinger_distance(tmp_path):
    mains = [line("A", (0, 0), (300, 0)), line("B", (300, 0), (600, 0))]
    parcels = [{"parcel_id": "P1", "geometry": box(100, 30, 200, 230)}]
    buildings = [
        {"building_id": "FRONT", "units": 1, "geometry": box(120, 50, 180, 90)},
        {"building_id": "BACK", "units": 1, "geometry": box(120, 170, 180, 210)},
    ]
    path = write_town(tmp_path / "town.gpkg", mains, RUN, PLANT, parcels=parcels, buildings=buildings)
    code, out, err = run("trace", "--data", path, "--parcel", "P1", "--json")
    assert code == 0, err
    assert json.loads(out)["control_manhole"] == "MH2"
    code, out, err = run("buildings", "--profile", "wappinger", "--data", path, "--all", "--json")
    assert code == 0, err
    back = {b["building_id"]: b for b in json.loads(out)}["BACK"]
    assert back["rear_building"] and back["shared_lateral"] == "main_extension_required"
    # The mandate itself still refuses to run without the town's distance.
    code, _, err = run("analyze", "--profile", "wappinger", "--data", path)
    assert code == 2 and "mandate.distance_ft" in err
    # network check still needs the town's rules.
    code, _, err = run("network", "check", "--data", path)
    assert code == 2 and "--profile" in err


HOSTILE = [
    "zero",
    "midrun",
    "force",
    "adverse",
    "island",
    "gap",
    "Example1",
    "Pump_Control_Model",
    "SWMMExtCntrlModel",
    "model_full_features_network_xy",
    "test_inlet_drains",
    "Example1-wrong-crs",
    "bellinge",
    "manchester",
]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> dict[str, tuple[list[str], str]]:
    """Every input this file and the real-data tests use: name -> (data options, a node to trace from)."""
    from tests.conftest import DATA

    tmp = tmp_path_factory.mktemp("hostile")
    swmm = DATA / "swmm-swmmio"
    manchester = DATA / "vt-sewer" / "manchester"
    parcels = [{"parcel_id": "P1", "occupied": True, "geometry": box(100, 30, 200, 130)}]
    towns = {
        "zero": ([line("A", (0, 0), (300, 0)), line("Z", (300, 0), (300, 0)), line("B", (300, 0), (600, 0))], RUN),
        "midrun": ([line("A", (0, 0), (300, 0)), line("B", (300, 0), (600, 0))], RUN),
        "force": (
            [line("F", (0, 0), (300, 0), sewer_type="force", us_invert_ft=90.0, ds_invert_ft=110.0)],
            RUN[:2],
        ),
        "adverse": ([line("A", (0, 0), (300, 0), us_invert_ft=99.0, ds_invert_ft=100.0)], RUN[:2]),
        "island": ([line("K", (0, 1000), (300, 1000), from_manhole="K1", to_manhole="K2")], RUN[:1]),
        "gap": ([line("A", (0, 0), (295, 0), from_manhole="MH1", to_manhole="MH2")], RUN[:2]),
    }
    plants = {"midrun": [plant("WWTP", 630, 0), plant("ACME", 300, 44)]}
    inputs = {}
    for name, (mains, manholes) in towns.items():
        path = write_town(tmp / f"{name}.gpkg", mains, manholes, plants.get(name, PLANT), parcels=parcels)
        inputs[name] = (["--data", str(path)], "MH1")
    for model in sorted(swmm.glob("*.inp")):
        inputs[model.stem] = (["--data", str(model), "--data-crs", "local"], "J1")
    inputs["Example1-wrong-crs"] = (["--data", str(swmm / "Example1.inp"), "--data-crs", "EPSG:2260"], "9")
    bellinge = DATA / "bellinge-swmm" / "bellinge_small.inp"
    inputs["bellinge"] = (["--data", str(bellinge), "--data-crs", "EPSG:32632", "--crs", "EPSG:32632"], "G72F050")
    inputs["manchester"] = (
        [
            "--layer",
            f"mains={manchester / 'ManchesterLinearFeatures.geojson'}",
            "--layer",
            f"manholes={manchester / 'ManchesterPointFeatures.geojson'}",
            "--layer",
            f"outfalls={manchester / 'ManchesterWWTF.geojson'}",
        ],
        "1",
    )
    inputs["register"] = ([str(tmp / "register.db")], "")
    return inputs


@pytest.mark.parametrize("name", HOSTILE)
def test_no_command_prints_a_traceback(hostile, name):
    """A clear finding or a clear refusal (exit 2 with a message), never a traceback, from every command."""
    data, node = hostile[name]
    register = hostile["register"][0][0]
    commands = [
        ["network", "check", "--profile", "fort-plain", *data],
        ["network", "check", "--profile", "wappinger", *data, "--json"],
        ["trace", *data, "--manhole", node],
        ["trace", *data, "--manhole", node, "--upstream", "--json"],
        ["trace", *data, "--parcel", "P1"],
        ["analyze", "--profile", "fort-plain", *data],
        ["buildings", "--profile", "wappinger", *data],
        ["plan", "--profile", "fort-plain", *data, "--streets-run", "Main St", "--diameter-in", "8"],
        ["notices", "preview", "--profile", "fort-plain", *data, "--notice-date", "2027-03-01", "--register", register],
    ]
    for args in commands:
        result = CliRunner().invoke(main, args)
        assert result.exception is None or isinstance(result.exception, SystemExit), (args, result.exception)
        assert result.exit_code in (0, 2), (args, result.output)
        assert "Traceback" not in result.output, args
        if result.exit_code == 2:
            assert "Error" in result.output, args


def test_two_manholes_with_one_id_are_named_as_the_cause_in_the_report(tmp_path):
    # MH3 renamed MH2 by a typo: the layers' check suffixed the second MH2#2 (a warning on stderr), and the report
    # gave a from/to mismatch and more at MH2#2 without naming the cause (a tester, on the sample village).
    mains = [
        line("A", (0, 0), (300, 0), from_manhole="MH1", to_manhole="MH2"),
        line("B", (300, 0), (600, 0), from_manhole="MH2", to_manhole="MH2"),
    ]
    manholes = [mh("MH1", 0, 0), mh("MH2", 300, 0), mh("MH2", 600, 0)]
    report = check_json(write_town(tmp_path / "twice.gpkg", mains, manholes, PLANT))
    (shared,) = by_check(report, "duplicate_id")
    assert shared["feature_id"] == "MH2" and shared["severity"] == "warning"
    said = shared["message"]
    assert said.startswith("2 manholes came with the ID MH2 (MH2 at (") and "MH2#2 at (" in said
    assert "a main whose from or to field names MH2 is matched to the first" in shared["message"]
    one = check_json(write_town(tmp_path / "once.gpkg", mains[:1], manholes[:2], PLANT))
    assert not by_check(one, "duplicate_id")


def test_a_parcel_on_a_main_of_unknown_direction_has_no_control_manhole_anywhere(tmp_path):
    """No plant and no from/to fields: the mains' direction is unknown, kept as drawn. A tester's trace named the
    manhole the drawing leads to as the control manhole, and the results stored it. The results column is empty
    with the reason, the trace says the same in text and JSON with how to give the direction, and once the user
    says the mains are drawn in flow direction, the control manhole is found."""
    mains = [line("A", (0, 0), (300, 0)), line("B", (300, 0), (600, 0))]
    manholes = [mh("MH1", 0, 0), mh("MH2", 300, 0), mh("MH3", 600, 0)]
    parcels = [{"parcel_id": "P1", "occupied": "yes", "geometry": box(100, 30, 200, 230)}]
    path = write_town(tmp_path / "town.gpkg", mains, manholes, parcels=parcels)
    out = tmp_path / "results.gpkg"
    code, _, err = run("analyze", "--profile", "fort-plain", "--data", path, "--out", out)
    assert code == 0, err
    stored = gpd.read_file(out, layer="parcel_results").iloc[0]
    assert pd.isna(stored["control_manhole"])
    assert stored["network_problem"].startswith(
        "The direction of main A is unknown (no from/to field or invert gives it, and no way to an outfall orients "
        "it; kept as drawn), so the control manhole is not known"
    )
    code, text, err = run("trace", "--data", path, "--parcel", "P1", "--json")
    assert code == 0, err
    doc = json.loads(text)
    assert doc["control_manhole"] is None and doc["direction_unknown"] == ["A", "B"]
    assert doc["problem"].startswith("The directions of mains A, B are unknown")
    code, text, err = run("trace", "--data", path, "--parcel", "P1")
    said = " ".join(text.split())
    assert "From P1: control manhole not known." in said and "--digitised-direction" in said
    assert "--map mains.from_manhole=COLUMN" in said
    code, text, err = run("trace", "--data", path, "--parcel", "P1", "--json", "--digitised-direction")
    doc = json.loads(text)
    assert doc["control_manhole"] == "MH2" and doc["direction_unknown"] == []
