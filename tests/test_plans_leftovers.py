"""Loose ends of planning: the part of a drawn main not laid, carried in the plan's export and said again when the
export is read back.

On the hand-made Oak St of ``tests/test_plans.py``, moved to Fort Plain (``ny_frame``) so that a GeoJSON export in
longitude/latitude reads back where it was drawn.
"""

from __future__ import annotations

import geopandas as gpd
import pyogrio
import pytest
from click.testing import CliRunner
from shapely.affinity import translate
from shapely.geometry import LineString, Point

from gisapp.cli import main
from layers.errors import LayerError
from layers.read import read_proposed
from layers.write import write_layers, write_plan
from tests.conftest import NY_ORIGIN, ny_frame
from tests.test_plans import check, layout, run

TOWN = layout(shift=(1, 1))
CRS = TOWN["parcels"].crs
# Drawn from 180 ft south of A up to A and east along Oak St: the 180 ft is not laid (a second main into A).
PAST_A = LineString([(0, -180), (0, 0), (900, 0)])


def moved(line):
    return translate(line, *NY_ORIGIN)


def not_laid_features(path, suffix) -> gpd.GeoDataFrame:
    if suffix == "gpkg":
        return pyogrio.read_dataframe(path, layer="not_laid")
    if suffix == "parquet":
        return gpd.read_parquet(path.with_name(f"{path.stem}.not_laid.parquet"))
    every = pyogrio.read_dataframe(path).to_crs(CRS)
    return every[every["feature"] == "not laid"]


@pytest.mark.parametrize("suffix", ["gpkg", "geojson", "parquet"])
def test_an_export_holds_the_part_not_laid_and_reads_back_as_drawn(tmp_path, suffix):
    # The export held the 900 ft main as laid and nothing of the 180 ft south of A: opened in QGIS, or read back,
    # nothing showed or said it. Now it is a feature of its own, and read back it is joined to the main again.
    result = run(proposed=moved(PAST_A), town=TOWN)
    doc = result.as_dict()
    path = tmp_path / f"plan.{suffix}"
    write_plan(str(path), doc, result.line, TOWN["parcels"], crs=CRS)
    part = not_laid_features(path, suffix)
    assert part[["at_manhole", "direction", "length_ft", "feature"]].values.tolist() == [
        ["A", "south", 180.0, "not laid"]
    ]
    assert part["along"].isna().all() or part["along"].eq("").all()
    assert part["reason"].tolist() == [
        "Not laid: the 180 ft drawn south of A, a second main draining into it, to plan on its own."
    ]
    (geometry,) = part.geometry.values
    assert geometry.hausdorff_distance(moved(LineString([(0, -180), (0, 0)]))) < 0.01

    line, note = read_proposed(str(path), target_crs=CRS)
    assert line.hausdorff_distance(moved(PAST_A)) < 0.01 and line.length == pytest.approx(1080.0, abs=0.01)
    assert "read with the 180 ft drawn and not laid joined to it again, as it was drawn" in note
    again = run(proposed=line, town=TOWN).as_dict()
    assert (again["not_laid"]["beyond_manhole"], again["not_laid"]["length_ft"]) == ("A", 180.0)
    assert again["cost"]["total"] == doc["cost"]["total"]


def test_a_plan_drawn_over_an_existing_main_read_back_from_its_export_says_so_again(tmp_path):
    # As a planner meets it: the line drawn from M-1 over it to A and up Oak St, exported, then given back.
    data = tmp_path / "town.gpkg"
    write_layers(str(data), TOWN)
    ny_frame([{"geometry": LineString([(-100, 0), (0, 0), (900, 0)])}]).to_crs(4326).to_file(tmp_path / "a.geojson")
    args = ["plan", "--profile", "fort-plain", "--data", str(data), "--diameter-in", "8", "--proposed"]
    out = tmp_path / "plan.gpkg"
    first = CliRunner().invoke(main, [*args, str(tmp_path / "a.geojson"), "--out", str(out)], terminal_width=200)
    assert first.exit_code == 0, first.output
    said = " ".join(first.output.split())
    assert "layers proposed_main, not_laid, proposed_manholes" in said
    assert (
        "The export holds the main as laid, from A, and apart from it the 100 ft drawn west of A that is not laid "
        "(its layer not_laid): read back with --proposed, the two are joined again as drawn" in said
    )
    assert pyogrio.read_dataframe(out, layer="not_laid")["along"].tolist() == ["M-1"]
    back = CliRunner().invoke(main, [*args, str(out)], terminal_width=200)
    assert back.exit_code == 0, back.output
    said = " ".join(back.output.split())
    assert "plan.gpkg is a plan's export: its proposed main was read with the 100 ft drawn and not laid" in said
    assert "Not laid: the 100 ft drawn west of A over existing main M-1, which is there already." in said
    assert "900 ft of 8-inch main, 3 new manholes" in said


@pytest.mark.parametrize("suffix", ["gpkg", "geojson"])
def test_an_export_written_before_the_part_not_laid_was_carried_still_reads_as_its_main(tmp_path, suffix):
    # An older export: its proposed main (and connecting main) only, with no not_laid layer or feature.
    main_line = moved(LineString([(0, 0), (900, 0)]))
    old = gpd.GeoDataFrame(
        {"feature": ["proposed main"], "diameter_in": [8.0], "length_ft": [900.0]}, geometry=[main_line], crs=CRS
    )
    path = tmp_path / f"old.{suffix}"
    if suffix == "gpkg":
        old.to_file(path, layer="proposed_main", driver="GPKG")
        old.iloc[:0].assign(geometry=gpd.GeoSeries([], crs=CRS)).to_file(path, layer="proposed_manholes", driver="GPKG")
    else:
        old.to_crs(4326).to_file(path, driver="GeoJSON")
    line, note = read_proposed(str(path), target_crs=CRS)
    assert line.hausdorff_distance(main_line) < 0.01
    assert note.startswith(f"old.{suffix} is a plan's export: its proposed main alone was read")


def test_a_part_not_laid_that_no_longer_meets_its_main_is_refused(tmp_path):
    # The main was moved 50 ft north in QGIS after the export: joining the part to it would be a guess.
    result = run(proposed=moved(PAST_A), town=TOWN)
    path = tmp_path / "plan.geojson"
    write_plan(str(path), result.as_dict(), result.line, TOWN["parcels"], crs=CRS)
    every = gpd.read_file(path).to_crs(CRS)
    main = every["feature"] == "proposed main"
    every.loc[main, "geometry"] = every.loc[main, "geometry"].translate(0, 50)
    every.to_crs(4326).to_file(tmp_path / "edited.geojson", driver="GeoJSON")
    with pytest.raises(LayerError) as told:
        read_proposed(str(tmp_path / "edited.geojson"), target_crs=CRS)
    said = " ".join(str(told.value).split())
    assert "edited.geojson's part not laid (the 180 ft drawn and not laid) no longer meets its proposed main" in said
    assert "50.00 ft apart" in said and 'delete the part (the "not laid" feature; in a GeoPackage' in said
    # the part alone, without its main, is no plan
    every[~main].to_crs(4326).to_file(tmp_path / "part.geojson", driver="GeoJSON")
    with pytest.raises(LayerError, match="without its proposed main \\(only its part not laid\\)"):
        read_proposed(str(tmp_path / "part.geojson"), target_crs=CRS)


def test_an_export_all_laid_written_over_one_with_a_part_not_laid_leaves_none_behind(tmp_path):
    path = tmp_path / "plan.gpkg"
    past = run(proposed=moved(PAST_A), town=TOWN)
    write_plan(str(path), past.as_dict(), past.line, TOWN["parcels"], crs=CRS)
    oak = run(proposed=moved(LineString([(0, 0), (900, 0)])), town=TOWN)
    write_plan(str(path), oak.as_dict(), oak.line, TOWN["parcels"], crs=CRS)
    info = pyogrio.read_info(path, layer="not_laid")
    assert (info["features"], info["geometry_type"]) == (0, "LineString")
    line, note = read_proposed(str(path), target_crs=CRS)
    assert line.length == pytest.approx(900.0) and "its proposed main alone was read" in note


def oak_page(tmp_path):
    """The web app on Oak St's layers in a store of their own (not analysed: a plan needs the layers alone), its
    client and form token, and the main drawn 180 ft past A as the map sends it (GeoJSON in degrees)."""
    from tests.conftest import csrf
    from tests.test_plans_web import oak_app

    store = tmp_path / "own" / "town.gpkg"
    store.parent.mkdir()
    write_layers(str(store), TOWN)
    client = oak_app(store, tmp_path).test_client()
    drawn = ny_frame([{"geometry": PAST_A}]).to_crs(4326).geometry.iloc[0]
    geometry = {"type": "LineString", "coordinates": [list(c) for c in drawn.coords]}
    return store, client, csrf(client), geometry


def test_the_webs_export_of_a_saved_scenario_holds_the_part_not_laid_and_loads_back_as_drawn(tmp_path):
    # The map's export of a saved scenario (/plans/NAME.geojson) held the main as laid alone; loaded back in the
    # panel, it was a plan that no longer said what was not laid.
    from tests.test_plans_web import evaluate

    store, client, token, geometry = oak_page(tmp_path)
    saved = evaluate(client, token, geometry=geometry, name="Past A", save=True)
    assert saved["not_laid"]["length_ft"] == 180.0
    export = client.get("/plans/Past%20A.geojson")
    assert export.status_code == 200
    (tmp_path / "past.geojson").write_bytes(export.data)
    every = gpd.read_file(tmp_path / "past.geojson")
    assert every.loc[every["feature"] == "not laid", ["at_manhole", "length_ft"]].values.tolist() == [["A", 180.0]]
    read = client.post(
        "/plans/line",
        json={"name": "past.geojson", "text": export.data.decode("utf-8")},
        headers={"X-CSRF-Token": token},
    )
    assert read.status_code == 200, read.get_data(as_text=True)[:300]
    assert "with the 180 ft drawn and not laid joined to it again" in read.get_json()["note"]
    again = evaluate(client, token, geometry=read.get_json()["line"])
    assert (again["not_laid"]["beyond_manhole"], again["not_laid"]["length_ft"]) == ("A", 180.0)
    assert again["cost"]["total"] == saved["cost"]["total"]


# -- an upper end drawn over an existing main ------------------------------------------------------------------------

# Oak St's existing sewer at its far end: M-5 runs west from C (1000, 0) to B (700, 0), and M-6 from B round to the
# plant's manhole P. A main drawn from A east up Oak St to (900, 0) lies over M-5 from B for its last 200 ft.
M5 = {"main_id": "M-5", "diameter_in": 8.0, "from_manhole": "C", "to_manhole": "B", "us_invert_ft": 104.0}
M5 |= {"ds_invert_ft": 102.0, "geometry": LineString([(1000, 0), (700, 0)])}
M6 = {"main_id": "M-6", "diameter_in": 8.0, "from_manhole": "B", "to_manhole": "P", "us_invert_ft": 102.0}
M6 |= {"ds_invert_ft": 90.0, "geometry": LineString([(700, 0), (700, -300), (-400, -300), (-400, 0)])}


def oak_with_m5() -> dict:
    import pandas as pd

    town = layout(shift=(1, 1), extra_mains=[M5, M6])
    ends = ny_frame([{"manhole_id": "B", "geometry": Point(700, 0)}, {"manhole_id": "C", "geometry": Point(1000, 0)}])
    town["manholes"] = pd.concat([town["manholes"], ends], ignore_index=True)
    return town


@pytest.mark.parametrize(
    "drawn",
    [LineString([(0, 0), (900, 0)]), LineString([(900, 0.5), (0, 0.5)])],
    ids=["from A", "drawn back, half a foot off"],
)
def test_a_main_whose_upper_end_is_drawn_over_an_existing_main_is_not_laid_over_it(drawn):
    # Laid as drawn, 200 ft of M-5, already there, were costed and leak-tested again, a new manhole went on M-5 at
    # the end, and only the crossings check said "runs along M-5": drawn over M-1 at its lower end, the same feet
    # were not laid. Now the same at either end: it ends at B, as a main drawn from A to B does.
    town = oak_with_m5()
    r = run(proposed=moved(drawn), town=town).as_dict()
    to_b = run(proposed=moved(LineString([(0, 0), (700, 0)])), town=town).as_dict()
    beyond = r["not_laid"]
    assert (beyond["beyond_manhole"], beyond["along"], beyond["direction"], beyond["length_ft"]) == (
        "B",
        "M-5",
        "east",
        200.0,
    )
    assert r["length_ft"] == r["drawn_length_ft"] == 700.0 and r["connecting_main"] is None
    assert [m["id"] for m in r["manholes"]] == [m["id"] for m in to_b["manholes"]] == ["A", "NEW-1", "B"]
    assert r["cost"]["total"] == pytest.approx(to_b["cost"]["total"], abs=0.05) and r["main_crossings"] == []
    told = " ".join(check(r, "connection")["message"].split())
    assert check(r, "connection")["verdict"] == "for the engineer"
    assert told.startswith("The main ends at existing manhole A (within 1 ft) and connects to it")
    assert (
        "Its upper end lies on existing main M-5 (within 1 ft), and the main is drawn along it from existing manhole "
        "B: it ends at B, built into it, where no new manhole is built. The 200 ft drawn east of B over M-5 is not "
        "laid, costed or checked: M-5 is there already." in told
    )
    from layers.board import summary_lines

    assert "Not laid: the 200 ft drawn east of B over existing main M-5, which is there already." in summary_lines(r)


def test_a_main_whose_upper_end_was_not_laid_reads_back_from_its_export_as_drawn(tmp_path):
    town = oak_with_m5()
    result = run(proposed=moved(LineString([(0, 0), (900, 0)])), town=town)
    write_plan(str(tmp_path / "plan.gpkg"), result.as_dict(), result.line, town["parcels"], crs=CRS)
    line, note = read_proposed(str(tmp_path / "plan.gpkg"), target_crs=CRS)
    assert line.hausdorff_distance(moved(LineString([(0, 0), (900, 0)]))) < 1e-6 and "joined to it again" in note
    from analysis.plans import as_drawn

    assert as_drawn(result.line, result.not_laid).equals(line)  # the web's reopened scenario draws the same line
    assert run(proposed=line, town=town).as_dict()["not_laid"]["length_ft"] == 200.0


def test_a_main_lying_over_an_existing_main_all_the_way_from_its_manhole_is_laid_and_flagged():
    # Nothing of it is new: cut, it would have no length. It is laid as drawn and the crossings check says so.
    r = run(proposed=moved(LineString([(700, 0), (900, 0)])), town=oak_with_m5()).as_dict()
    assert r["not_laid"] is None and r["length_ft"] == 200.0
    assert [(c["main_id"], c["kind"], c["length_ft"]) for c in r["main_crossings"]] == [("M-5", "runs along", 200.0)]


# -- a main ending a hair from a manhole -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "drawn",
    [
        LineString([(0.5, 0), (900, 0)]),  # ends half a foot short of A
        LineString([(900, 0), (0, 0.5)]),  # drawn the other way, ending half a foot north of A
    ],
    ids=["short of A", "drawn back, beside A"],
)
def test_a_main_ending_half_a_foot_from_a_manhole_is_laid_from_the_manhole(drawn):
    # It connected at A, with A at station 0, but was measured from where it was drawn to end: 899.5 ft, its cost and
    # leakage for 899.5 ft, its last manhole at station 899.5 though 900 ft up the main from A, and on the map it
    # stopped short of A. A pipe runs into the manhole it joins.
    r = run(proposed=drawn).as_dict()
    oak = run().as_dict()
    assert r["length_ft"] == pytest.approx(900.0, abs=1e-3) and r["manholes"][-1]["station_ft"] == 900.0
    assert r["cost"]["total"] == pytest.approx(oak["cost"]["total"], abs=0.01)
    assert r["exfiltration_allowance_gpd"] == oak["exfiltration_allowance_gpd"]
    assert [m["id"] for m in r["manholes"]] == ["A", "NEW-1", "NEW-2", "NEW-3"] and r["connecting_main"] is None


def test_a_main_passing_a_hair_beside_a_manhole_is_cut_at_the_manhole_itself():
    # Drawn 0.3 ft east of A from 180 ft south and on east up Oak St: laid from A, not from the point of the line
    # nearest A (899.7 ft), and the part not laid ends at A too, so the two join again where the main starts.
    from analysis.plans import as_drawn

    result = run(proposed=LineString([(0.3, -180), (0.3, 0), (900, 0)]))
    r = result.as_dict()
    assert list(result.line.coords)[0] == (0.0, 0.0) and r["length_ft"] == 900.0
    assert r["not_laid"]["coords"][-1] == [0.0, 0.0] and r["not_laid"]["length_ft"] == 180.0
    again = run(proposed=as_drawn(result.line, result.not_laid)).as_dict()
    assert (again["length_ft"], again["not_laid"]["length_ft"], again["cost"]["total"]) == (
        900.0,
        180.0,
        r["cost"]["total"],
    )


# -- a main drawn across the town line -------------------------------------------------------------------------------


def test_a_main_reaching_beyond_the_towns_parcels_says_who_it_reaches_there_is_not_known():
    # Tried on the sample village from the web, in longitude/latitude: a main from MH-45 north 2,450 ft past the
    # last parcel was costed for all its length, and its petition and split counted the village's parcels only,
    # without a word. Here Oak St's main runs on east to x 1500: the lots end at x 900, so past x 1000 (100 ft,
    # Fort Plain's § 144-4 distance) no parcel in the data could be reached.
    from layers.board import summary_lines

    r = run(proposed=LineString([(0, 0), (1500, 0)])).as_dict()
    assert r["beyond_parcels_ft"] == 500.0
    told = next(s for s in summary_lines(r) if s.startswith("Beyond the town's parcels"))
    assert told.startswith("Beyond the town's parcels: 500 ft of the main lie farther from them than a parcel can be")
    assert "who the main would reach there, and their part of the petition and the cost, are not in this plan" in told
    oak = run().as_dict()
    assert oak["beyond_parcels_ft"] == 0.0 and not any(s.startswith("Beyond") for s in summary_lines(oak))


def test_the_part_not_laid_is_styled_in_a_geopackage_export_as_the_web_map_draws_it(tmp_path):
    """QGIS drew the export's not_laid layer in a colour of its own choosing, like a main: it is grey and dotted, as
    on the web map, so the blue line is the main as laid."""
    import sqlite3
    from contextlib import closing

    result = run(proposed=moved(PAST_A), town=TOWN)
    path = tmp_path / "plan.gpkg"
    write_plan(str(path), result.as_dict(), result.line, TOWN["parcels"], crs=CRS)
    with closing(sqlite3.connect(path)) as con:
        (qml,) = con.execute("SELECT styleQML FROM layer_styles WHERE f_table_name = 'not_laid'").fetchone()
    assert 'k="line_color" v="119,119,119,255"' in qml
    assert 'k="use_custom_dash" v="1"' in qml and 'k="customdash" v="1;2"' in qml


def test_exporting_a_main_whose_upper_end_is_not_laid_says_where_the_main_as_laid_starts(tmp_path):
    # From A up Oak St and 200 ft on over M-5: the note said "the main as laid, from B", the manhole its part not
    # laid meets, where the main as laid runs from A to B.
    data = tmp_path / "town.gpkg"
    write_layers(str(data), oak_with_m5())
    # in the town's CRS: from degrees, B lies a hair nearer its end than A does, and the main connects at B
    ny_frame([{"geometry": LineString([(0, 0), (900, 0)])}]).to_file(tmp_path / "up.geojson")
    args = ["plan", "--profile", "fort-plain", "--data", str(data), "--diameter-in", "8"]
    out = tmp_path / "plan.gpkg"
    told = CliRunner().invoke(main, [*args, "--proposed", str(tmp_path / "up.geojson"), "--out", str(out)])
    assert told.exit_code == 0, told.output
    said = " ".join(told.output.split())
    assert (
        "The export holds the main as laid, from A, and apart from it the 200 ft drawn east of B that is not laid "
        "(its layer not_laid)" in said
    )
