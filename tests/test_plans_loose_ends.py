"""Where a planned main meets the sewer: ties, and the one test both of its ends are read by.

On the hand-made Oak St of ``tests/test_plans.py``, with manhole A renamed MH-10 so that a tie with MH-9 shows
whether IDs are read as numbers (MH-9 before MH-10) and whether the town's row order decides.
"""

from __future__ import annotations

import pandas as pd
import pytest
import shapely
from shapely.geometry import LineString, Point

from analysis.profiles import load_profile
from tests.conftest import frame
from tests.test_plans import check, layout, run

FP = load_profile("fort-plain")
SNAP_10 = load_profile("fort-plain", overrides={"network.snap_tolerance_ft": "10"})


def town_with(extra_mains: list[dict], extra_manholes: list[dict], *, reverse: bool = False) -> dict:
    """Oak St's town with A called MH-10, more mains and manholes; ``reverse`` lists every row the other way."""
    town = layout(extra_mains=extra_mains)
    town["mains"]["from_manhole"] = town["mains"]["from_manhole"].replace({"A": "MH-10"})
    town["manholes"] = pd.concat(
        [town["manholes"].replace({"manhole_id": {"A": "MH-10"}}), frame(extra_manholes)], ignore_index=True
    )
    if reverse:
        for kind in ("mains", "manholes"):
            town[kind] = town[kind].iloc[::-1].reset_index(drop=True)
    return town


def test_ids_sort_by_their_numbers():
    from analysis.plans import id_key

    assert sorted(["MH-10", "MH-9", "MH-9A", "B", "A-2"], key=id_key) == ["A-2", "B", "MH-9", "MH-9A", "MH-10"]


# MH-9 at (0, 16) starts M-8, running west 16 ft north of M-1: Oak St's main drawn from (0, 8) ends 8 ft from
# MH-10 and 8 ft from MH-9, both within a 10 ft snap tolerance.
M8 = {"main_id": "M-8", "diameter_in": 8.0, "from_manhole": "MH-9", "geometry": LineString([(0, 16), (-400, 16)])}
MH9_NORTH = {"manhole_id": "MH-9", "geometry": Point(0, 16)}


@pytest.mark.parametrize("reverse", [False, True], ids=["rows as listed", "rows the other way"])
def test_two_manholes_equally_near_an_end_take_the_lower_id_whatever_the_row_order(reverse):
    town = town_with([M8], [MH9_NORTH], reverse=reverse)
    r = run(proposed=LineString([(0, 8), (900, 8)]), town=town, profile=SNAP_10).as_dict()
    assert r["manholes"][0]["id"] == "MH-9" and r["manholes"][0]["existing"]
    told = " ".join(check(r, "connection")["message"].split())
    assert "MH-10 is exactly as near: of those equally near, the lowest ID, MH-9, is taken" in told


def test_a_manhole_nearer_than_another_is_taken_and_no_tie_is_said():
    town = town_with([M8], [MH9_NORTH], reverse=True)
    r = run(proposed=LineString([(0, 7.5), (900, 7.5)]), town=town, profile=SNAP_10).as_dict()
    assert r["manholes"][0]["id"] == "MH-10"  # 7.5 ft from MH-10, 8.5 ft from MH-9: the nearer, for all its ID
    assert "exactly as near" not in check(r, "connection")["message"]


# MH-9 at (900, 0) starts M-7, running south: Oak St's main drawn from MH-10 to MH-9 has an existing manhole at
# each end. The start of the line was taken, so the main drawn the other way connected at the other manhole.
M7 = {"main_id": "M-7", "diameter_in": 8.0, "from_manhole": "MH-9", "geometry": LineString([(900, 0), (900, -100)])}
MH9_EAST = {"manhole_id": "MH-9", "geometry": Point(900, 0)}


@pytest.mark.parametrize("proposed", [LineString([(0, 0), (900, 0)]), LineString([(900, 0), (0, 0)])])
def test_a_main_between_two_manholes_connects_at_the_same_one_whichever_way_it_was_drawn(proposed):
    r = run(proposed=proposed, town=town_with([M7], [MH9_EAST])).as_dict()
    assert [m["id"] for m in r["manholes"]][::3] == ["MH-9", "MH-10"]
    told = " ".join(check(r, "connection")["message"].split())
    assert "ends at existing manhole MH-9" in told and "MH-10 is exactly as near" in told


@pytest.mark.parametrize(
    "proposed",
    [LineString([(0, -100), (0, 0), (800, 0), (800, 100)]), LineString([(800, 100), (800, 0), (0, 0), (0, -100)])],
    ids=["drawn east", "drawn west"],
)
@pytest.mark.parametrize("reverse", [False, True], ids=["rows as listed", "rows the other way"])
def test_a_main_through_two_manholes_equally_near_its_ends_joins_the_lower_id(proposed, reverse):
    # Neither end meets the sewer; the main runs through MH-10 100 ft from one end and MH-9 (800, 0), where M-7
    # starts, 100 ft from the other. It was joined at whichever the network listed first.
    m7 = M7 | {"geometry": LineString([(800, 0), (800, -100)])}
    town = town_with([m7], [{"manhole_id": "MH-9", "geometry": Point(800, 0)}], reverse=reverse)
    r = run(proposed=proposed, town=town).as_dict()
    assert r["not_laid"]["beyond_manhole"] == "MH-9" and r["not_laid"]["direction"] == "north"
    assert r["not_laid"]["tied"] == ["MH-10"] and r["drawn_length_ft"] == 900.0
    told = " ".join(check(r, "connection")["message"].split())
    assert "MH-10 is exactly as near: of those equally near, the lowest ID, MH-9, is taken" in told


# -- one test of whether an end meets the sewer --------------------------------------------------------------------


def test_an_end_at_a_manhole_on_no_main_is_not_connected_there():
    # S (500, 0) is in the manholes layer but no main meets it (a storm structure): the main ending on it was
    # "connected" to S, a manhole its flow leaves by no pipe, while a main passing S is not joined there. Both now
    # read "meets the sewer" one way: the main ending at S gets a connecting main to the sewer's manhole MH-10.
    town = town_with([], [{"manhole_id": "S", "geometry": Point(500, 0)}])
    r = run(proposed=LineString([(500, 0), (900, 0)]), town=town).as_dict()
    assert r["connecting_main"]["to_manhole"] == "MH-10" and r["connecting_main"]["length_ft"] == 500.0
    assert check(r, "capacity")["verdict"] == "meets"


def test_whether_an_end_meets_the_sewer_measures_only_the_nodes_of_mains_near_it(monkeypatch):
    # Measured from both ends to every node of the network (2 x n distances) in two places; now the mains' tree
    # gives the mains near an end, and only their nodes are measured.
    from analysis.plans import _end_meets
    from tests.test_plans import build_network

    town = town_with([M7], [MH9_EAST])
    net = build_network(town["mains"], manholes=town["manholes"], outfalls=town["treatment_plants"], profile=FP)
    measured = []
    real = shapely.distance

    def counting(a, b, *args, **kw):
        measured.append(max(shapely.get_num_geometries(a).size, shapely.get_num_geometries(b).size))
        return real(a, b, *args, **kw)

    monkeypatch.setattr(shapely, "distance", counting)
    met = _end_meets(LineString([(100, 300), (900, 0.5)]), net, snap=1.0)
    assert (met.kind, met.label, met.end, met.gap) == ("manhole", "MH-9", -1, 0.5)
    assert max(measured) <= 2  # M-7's two nodes, never all of the network's
    assert _end_meets(LineString([(100, 300), (500, 300)]), net, snap=1.0) is None


# -- an end on a main, drawn along it to a manhole -------------------------------------------------------------------


@pytest.mark.parametrize(
    "proposed",
    [
        LineString([(-100, 0), (0, 0), (900, 0)]),
        LineString([(900, 0.5), (0, 0.5), (-100, 0.5)]),  # drawn the other way, half a foot off M-1
    ],
    ids=["on M-1", "drawn back, half a foot off"],
)
def test_a_main_drawn_over_an_existing_main_to_its_manhole_connects_at_the_manhole(proposed):
    # From a point on M-1, 100 ft west of A, over M-1 to A and up Oak St. Built as drawn, a new manhole went on M-1
    # 100 ft below A, and 100 ft of pipe already there were costed and tested again; drawn half a foot off M-1 (as
    # a line read back from degrees is), the crossings check did not see it either.
    r = run(proposed=proposed).as_dict()
    assert r["not_laid"]["along"] == "M-1" and r["not_laid"]["beyond_manhole"] == "A"
    assert (r["not_laid"]["length_ft"], r["not_laid"]["direction"]) == (100.0, "west")
    assert r["length_ft"] == r["drawn_length_ft"] == 900.0 and r["connecting_main"] is None
    assert [m["id"] for m in r["manholes"]] == ["A", "NEW-1", "NEW-2", "NEW-3"]
    # Oak St's main from A, as drawn from A (to a few cents: moved onto A, the main half a foot off runs 0.00014 ft
    # longer)
    assert r["cost"]["total"] == pytest.approx(run().as_dict()["cost"]["total"], abs=0.05)
    told = check(r, "connection")
    assert told["verdict"] == "for the engineer"
    assert "The 100 ft drawn west of A over M-1 is not laid, costed or checked: M-1 is there already" in " ".join(
        told["message"].split()
    )
    from layers.board import summary_lines

    assert "Not laid: the 100 ft drawn west of A over existing main M-1, which is there already." in summary_lines(r)


def test_a_main_from_a_point_on_a_main_that_leaves_it_connects_there_as_before():
    # From the same point on M-1, but north off it and round to A: not drawn over M-1, so it connects where its end
    # lies, with a new manhole on M-1, and runs through A on its way (for the engineer).
    r = run(proposed=LineString([(-100, 0), (-50, 100), (0, 0), (900, 0)])).as_dict()
    assert r["not_laid"] is None and r["manholes"][0]["id"] == "NEW-1" and "M-1" in r["manholes"][0]["reason"]
    assert "runs through 1 more existing manhole" in check(r, "connection")["message"]


def test_plan_cli_says_the_part_drawn_over_an_existing_main_is_not_laid(tmp_path):
    # As a planner meets it: a line drawn in QGIS from M-1 over it to A and up Oak St, saved in degrees.
    from click.testing import CliRunner

    from gisapp.cli import main
    from layers.write import write_layers
    from tests.conftest import ny_frame

    write_layers(str(tmp_path / "town.gpkg"), layout(shift=(1, 1)))
    drawn = ny_frame([{"geometry": LineString([(-100, 0), (0, 0), (900, 0)])}]).to_crs(4326)
    drawn.to_file(tmp_path / "along.geojson")
    args = ["plan", "--profile", "fort-plain", "--data", str(tmp_path / "town.gpkg"), "--proposed"]
    pdf = tmp_path / "along.pdf"
    res = CliRunner().invoke(
        main, [*args, str(tmp_path / "along.geojson"), "--diameter-in", "8", "--pdf", str(pdf)], terminal_width=200
    )
    assert res.exit_code == 0, res.output
    said = " ".join(res.output.split())
    assert "900 ft of 8-inch main, 3 new manholes" in said
    assert "Not laid: the 100 ft drawn west of A over existing main M-1, which is there already." in said
    from pypdf import PdfReader

    board = " ".join(" ".join(page.extract_text() for page in PdfReader(pdf).pages).split())
    assert "the part drawn over M-1 and not laid (grey dotted)" in board
    assert "Not laid: the 100 ft drawn west of A over existing main M-1, which is there already." in board


# -- what a plan's export holds --------------------------------------------------------------------------------------


def test_exporting_a_plan_with_a_part_not_laid_says_the_export_holds_it_apart(tmp_path):
    # The export holds the main as laid and, apart from it, the part not laid; read back (README's second command)
    # the two are joined again, and the plan says again what is not laid (it said nothing of it before, and the
    # command told the planner so). Saved or not, the same words.
    from click.testing import CliRunner

    from gisapp.cli import main
    from layers.write import write_layers
    from tests.conftest import ny_frame

    write_layers(str(tmp_path / "town.gpkg"), layout(shift=(1, 1)))
    ny_frame([{"geometry": LineString([(0, -180), (0, 0), (900, 0)])}]).to_crs(4326).to_file(tmp_path / "past.geojson")
    args = ["plan", "--profile", "fort-plain", "--data", str(tmp_path / "town.gpkg"), "--diameter-in", "8"]
    res = CliRunner().invoke(
        main, [*args, "--proposed", str(tmp_path / "past.geojson"), "--out", str(tmp_path / "plan.geojson")]
    )
    assert res.exit_code == 0, res.output
    said = " ".join(res.output.split())
    assert (
        "The export holds the main as laid, from A, and apart from it the 180 ft drawn south of A that is not laid "
        '(its feature "not laid"): read back with --proposed, the two are joined again as drawn, and the plan says '
        "again what is not laid." in said
    )
    assert "Save (--save)" not in said
    back = CliRunner().invoke(main, [*args, "--proposed", str(tmp_path / "plan.geojson")], terminal_width=200)
    assert back.exit_code == 0, back.output
    said = " ".join(back.output.split())
    assert "Not laid: the 180 ft drawn south of A, a second main draining into it, to plan on its own." in said
    assert "900 ft of 8-inch main, 3 new manholes" in said
    # nothing left out, nothing said
    ny_frame([{"geometry": LineString([(0, 0), (900, 0)])}]).to_crs(4326).to_file(tmp_path / "oak.geojson")
    res = CliRunner().invoke(
        main, [*args, "--proposed", str(tmp_path / "oak.geojson"), "--out", str(tmp_path / "oak-plan.geojson")]
    )
    assert res.exit_code == 0 and "The export holds" not in res.output


def test_a_main_drawn_a_hair_beside_an_existing_main_is_found_running_along_it():
    # R lies 0.3 ft north of Oak St's centreline from x 300 to 500 (a line read back from degrees, or drawn without
    # snapping, lies so): within the 1 ft the network reads "meets" by, the new main lies over it for 200 ft, and
    # the crossings check said it met no main. Drawn exactly on R, the same.
    for off in (0.3, 0.0):
        old = {"main_id": "R", "sewer_type": "sanitary", "geometry": LineString([(300, off), (500, off)])}
        r = run(town=layout(extra_mains=[old])).as_dict()
        found = [(c["main_id"], c["kind"], c["station_ft"], c["length_ft"]) for c in r["main_crossings"]]
        assert (
            found == [("R", "runs along", 400.0, 200.0)] and check(r, "main_crossings")["verdict"] == "for the engineer"
        )
    # 2 ft off is clear of it by the tolerance: nothing met
    old = {"main_id": "R", "sewer_type": "sanitary", "geometry": LineString([(300, 2), (500, 2)])}
    assert run(town=layout(extra_mains=[old])).as_dict()["main_crossings"] == []


def three_sewers(*, reverse: bool = False) -> dict:
    """``two_sewers`` (a full 4-inch M-1 at A, an ample 12-inch sewer from C (100, -300)) and a third as ample from D
    (100, 300) north-west to its own plant: C and D lie 300 ft from (100, 0)."""
    from tests.test_plans import two_sewers

    town = two_sewers()
    m3 = {"main_id": "M-3", "diameter_in": 12.0, "from_manhole": "D", "to_manhole": "R", "us_invert_ft": 100.0}
    m3 |= {"ds_invert_ft": 95.0, "geometry": LineString([(100, 300), (-400, 300)])}
    town["mains"] = pd.concat([town["mains"], frame([m3])], ignore_index=True)
    town["manholes"] = pd.concat(
        [
            town["manholes"],
            frame(
                [{"manhole_id": "D", "geometry": Point(100, 300)}, {"manhole_id": "R", "geometry": Point(-400, 300)}]
            ),
        ],
        ignore_index=True,
    )
    plant = {"outfall_id": "WWTP-3", "outfall_manhole": "R", "geometry": Point(-420, 300)}
    town["treatment_plants"] = pd.concat([town["treatment_plants"], frame([plant])], ignore_index=True)
    if reverse:
        for kind in ("mains", "manholes", "treatment_plants"):
            town[kind] = town[kind].iloc[::-1].reset_index(drop=True)
    return town


@pytest.mark.parametrize("reverse", [False, True], ids=["rows as listed", "rows the other way"])
def test_a_connecting_main_to_one_of_two_equally_near_manholes_with_room_goes_to_the_lower_id(reverse):
    r = run(proposed=LineString([(100, 0), (900, 0)]), town=three_sewers(reverse=reverse)).as_dict()
    assert (r["connecting_main"]["to_manhole"], r["connecting_main"]["length_ft"]) == ("C", 300.0)
    told = " ".join(check(r, "connection")["message"].split())
    assert "D is exactly as near: of those equally near, the lowest ID, C, is taken" in told


def test_a_connecting_main_says_no_tie_where_the_other_as_near_has_no_room():
    # M-2 made a 4-inch main with almost no fall: C, as near as D, has no room, so D is the nearest with room, and
    # no tie is said.
    town = three_sewers()
    town["mains"].loc[town["mains"]["main_id"] == "M-2", ["diameter_in", "ds_invert_ft"]] = [4.0, 99.98]
    r = run(proposed=LineString([(100, 0), (900, 0)]), town=town).as_dict()
    assert r["connecting_main"]["to_manhole"] == "D" and check(r, "capacity")["verdict"] == "meets"
    assert "exactly as near" not in check(r, "connection")["message"]
