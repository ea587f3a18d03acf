"""The sewerplan command: what a user types, what they see, what files they get."""

from __future__ import annotations

import json
import re
from pathlib import Path

import geopandas as gpd
import pandas as pd
import pyogrio
import pytest
from click.testing import CliRunner
from shapely import affinity
from shapely.geometry import LineString, box

from gisapp.cli import main
from layers.sample import sample_town
from layers.store import latest_run, open_store
from layers.write import write_layers
from tests.conftest import Runner


@pytest.fixture(scope="module")
def town_gpkg(tmp_path_factory):
    path = tmp_path_factory.mktemp("town") / "town.gpkg"
    write_layers(str(path), sample_town(400))
    return path


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def test_analyze_prints_a_summary_table(town_gpkg):
    result = invoke("analyze", "--profile", "fort-plain", "--data", town_gpkg)
    assert result.exit_code == 0, result.output
    assert "Village of Fort Plain" in result.output
    for status in ("connected", "mandated", "in_range_not_abutting", "out_of_range", "unoccupied"):
        assert status in result.output
    assert "100 ft from the property line (§ 144-4)" in result.output


def test_analyze_json_shape(town_gpkg, tmp_path):
    out = tmp_path / "results.gpkg"
    result = invoke(
        "analyze", "--profile", "fort-plain", "--data", town_gpkg, "--out", out, "--notice-date", "2027-03-01", "--json"
    )
    assert result.exit_code == 0
    doc = json.loads(result.output)
    assert set(doc) == {"summary", "warnings", "problems", "mandated"}
    s = doc["summary"]
    assert s["parcels"] == 400 and sum(s["counts"].values()) == 400
    assert s["profile"] == "fort-plain" and s["distance_ft"] == 100.0 and s["notice_date"] == "2027-03-01"
    assert s["layers_written"] == ["parcel_results", "measuring_lines", "connection_points", "building_results"]
    assert s["buildings"]["buildings"] == len(gpd.read_file(town_gpkg, layer="buildings"))
    assert len(doc["mandated"]) == s["counts"]["mandated"] > 0
    first = doc["mandated"][0]
    assert set(first) == {
        "parcel_id",
        "distance_ft",
        "boundary_distance_ft",
        "measured_from",
        "main_id",
        "section",
        "deadline",
        "reason",
        "control_manhole",
        "downstream_length_ft",
    }
    assert first["control_manhole"].startswith("MH-") and first["downstream_length_ft"] > 0
    assert s["traced"] == 400
    assert first["deadline"] == "2027-05-30" and first["section"] == "§ 144-4"
    assert first["distance_ft"] <= 100
    # The GeoPackage holds results beside the run record.
    layers = {name for name, _ in pyogrio.list_layers(out)}
    assert {"parcel_results", "measuring_lines", "connection_points"} <= layers
    assert latest_run(out)["counts"] == s["counts"]


def test_outputs_keep_input_attributes_geojson_rfc7946_and_csv(town_gpkg, tmp_path):
    gj, csv = tmp_path / "r.geojson", tmp_path / "r.csv"
    assert invoke("analyze", "--profile", "fort-plain", "--data", town_gpkg, "--out", gj).exit_code == 0
    assert invoke("analyze", "--profile", "fort-plain", "--data", town_gpkg, "--out", csv).exit_code == 0
    raw = json.loads(gj.read_text())
    assert "crs" not in raw  # RFC 7946: WGS 84 lon/lat, no crs member
    lon, lat = raw["features"][0]["geometry"]["coordinates"][0][0]
    assert -75 < lon < -74 and 42 < lat < 43.5  # Fort Plain, NY
    source = gpd.read_file(town_gpkg, layer="parcels").set_index("parcel_id")
    result = gpd.read_file(gj).set_index("parcel_id")
    assert (result["owner_name"] == source.loc[result.index, "owner_name"]).all()
    assert {"status", "distance_ft", "rule", "section", "reason", "main_id"} <= set(result.columns)
    table = pd.read_csv(csv, dtype={"property_class": str})
    assert len(table) == 400 and "geometry" not in table.columns
    assert table["mail_zip"].astype(str).str.len().min() >= 4


def test_analyze_says_where_it_wrote_as_the_user_finds_it(town_gpkg, tmp_path):
    """A GeoPackage's layers by name, a GeoParquet file's siblings, a CSV with its .csvt, a GeoJSON alone: `--out
    r.csv` said "Results written to .../r.csv (r).", its file's stem read as a layer, and later not the r.csvt it
    wrote beside it (which QGIS needs to keep ZIP codes as text, and which a user copying the CSV left behind)."""
    said = {}
    for name in ("r.csv", "r.geojson", "r.parquet", "r.gpkg"):
        result = CliRunner(env={"COLUMNS": "400"}).invoke(
            main, ["analyze", "--profile", "fort-plain", "--data", str(town_gpkg), "--out", str(tmp_path / name)]
        )
        assert result.exit_code == 0, result.output
        said[name] = next(line for line in result.output.splitlines() if line.startswith("Results written to"))
    assert said["r.csv"] == (
        f"Results written to {tmp_path / 'r.csv'}, with r.csvt beside it (the type of each column, so QGIS keeps ZIP "
        "codes as text)."
    )
    assert (tmp_path / "r.csvt").exists()
    assert said["r.geojson"] == f"Results written to {tmp_path / 'r.geojson'}."
    assert said["r.parquet"] == (
        f"Results written to {tmp_path / 'r.parquet'}, with r.measuring_lines.parquet, r.connection_points.parquet, "
        "r.building_results.parquet beside it."
    )
    assert all((tmp_path / f).exists() for f in ("r.measuring_lines.parquet", "r.building_results.parquet"))
    assert said["r.gpkg"] == (
        f"Results written to {tmp_path / 'r.gpkg'} (layers parcel_results, measuring_lines, connection_points, "
        "building_results)."
    )


def test_layers_given_one_by_one_with_a_mapping(town_gpkg, tmp_path):
    parcels = gpd.read_file(town_gpkg, layer="parcels").rename(columns={"parcel_id": "TAXMAPNO", "owner_name": "OWN"})
    parcels[["TAXMAPNO", "OWN", "units", "connected", "geometry"]].to_file(tmp_path / "p.shp")
    result = invoke(
        "analyze",
        "--profile",
        "fort-plain",
        "--layer",
        f"parcels={tmp_path / 'p.shp'}",
        "--layer",
        f"mains={town_gpkg}:mains",
        "--layer",
        f"streets={town_gpkg}:streets",
        "--layer",
        f"buildings={town_gpkg}:buildings",
        "--map",
        "parcels.parcel_id=TAXMAPNO",
        "--map",
        "parcels.owner_name=OWN",
        "--json",
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["summary"]["parcels"] == 400


def test_connected_csv(town_gpkg, tmp_path):
    parcels = gpd.read_file(town_gpkg, layer="parcels")
    ids = parcels["parcel_id"].tolist()
    (tmp_path / "billing.csv").write_text("SBL\n" + "\n".join(ids) + "\n")
    result = invoke(
        "analyze", "--profile", "fort-plain", "--data", town_gpkg, "--connected", tmp_path / "billing.csv", "--json"
    )
    assert json.loads(result.output)["summary"]["counts"]["connected"] == 400


@pytest.mark.parametrize(
    "text",
    ["parcel_id\n", "SBL,owner\r\n,,\r\n,,\r\n", "parcel_id,owner\n ,ROE\n"],
    ids=["header only", "header and blank rows", "blank IDs"],
)
def test_a_connected_list_naming_no_parcel_is_refused(town_gpkg, tmp_path, text):
    """A billing list holding only its header row was taken as "none is connected": every parcel in reach was
    mandated, and a plan's capacity check said "meets" as if the connections were known (a tester). It is refused
    before the run, as an empty file is, and nothing is written."""
    (tmp_path / "billing.csv").write_text(text)
    out = tmp_path / "results.gpkg"
    result = invoke(
        "analyze", "--profile", "fort-plain", "--data", town_gpkg, "--connected", tmp_path / "billing.csv", "--out", out
    )
    assert result.exit_code != 0
    said = " ".join(result.output.split())
    assert f"Connected-parcels list {tmp_path / 'billing.csv'} names no parcel" in said, said
    assert "leave the list out and give the parcels layer a connected column saying so" in said
    assert not out.exists()


def test_a_recorded_connected_list_emptied_since_is_refused_not_stood_in_for(town_gpkg, tmp_path):
    """A store analysed with a billing list, the list then saved again with its header alone: the next run read the
    store's kept copy as if the file were "moved or deleted", and went on counting connections the list no longer
    names. The list is there and names no parcel: it is refused, as when first given."""
    store = tmp_path / "town.gpkg"
    store.write_bytes(Path(town_gpkg).read_bytes())
    billing = tmp_path / "billing.csv"
    billing.write_text("parcel_id\n" + "\n".join(gpd.read_file(store, layer="parcels")["parcel_id"].head(7)) + "\n")
    assert (
        invoke("analyze", "--profile", "fort-plain", "--data", store, "--out", store, "--connected", billing).exit_code
        == 0
    )
    billing.write_text("parcel_id\n")
    result = invoke("analyze", "--data", store, "--out", store)
    assert result.exit_code != 0
    said = " ".join(result.output.split())
    assert "names no parcel" in said and "moved or deleted" not in said, said


HOUSE = box(22, 50, 62, 80)  # 1,200 sq ft across the line x = 50: 840 sq ft (its middle) on lot 101, 360 on 102


def _two_lots(tmp_path, lots, houses, footprints):
    """A GeoPackage of parcels 101 and 102 (``lots``) north of Main St and its main M-1 (y = 0), and the buildings
    ``houses`` (columns) drawn as ``footprints``, in Fort Plain, where EPSG:2260 is used."""

    def layer(rows, geoms):
        moved = [affinity.translate(g, 457025, 1490000) for g in geoms]
        return gpd.GeoDataFrame(rows, geometry=moved, crs="EPSG:2260")

    data = tmp_path / "lots.gpkg"
    street = LineString([(-1000, 0), (2000, 0)])
    layer({"parcel_id": ["101", "102"]}, lots).to_file(data, layer="parcels")
    layer({"main_id": ["M-1"]}, [street]).to_file(data, layer="mains")
    layer({"street_name": ["Main St"]}, [street]).to_file(data, layer="streets")
    layer(houses, footprints).to_file(data, layer="buildings")
    return data


def test_a_house_across_a_lot_line_is_named_in_the_other_lots_reason(tmp_path):
    """Two 50 x 100 ft lots and a house drawn across their line, 70 % on lot 101: lot 102 read "no building of 150
    sq ft or more ... stands on it" in the results a clerk reads out. The results now name the house on it."""
    data = _two_lots(tmp_path, [box(0, 25, 50, 125), box(50, 25, 100, 125)], {"building_id": ["B-12"]}, [HOUSE])
    out = tmp_path / "results.csv"
    assert invoke("analyze", "--profile", "fort-plain", "--data", data, "--out", out).exit_code == 0
    results = pd.read_csv(out, dtype=str).set_index("parcel_id")
    assert results["status"].to_dict() == {"101": "mandated", "102": "unoccupied"}
    assert results.loc["102", "reason"] == (
        "No building used for human occupancy, employment or recreation is counted on the parcel (building B-12 "
        "covers 360 sq ft of it but is counted on parcel 101, where its middle stands; no other building of 150 sq "
        "ft or more, nor one marked occupied, stands on it); § 144-4 applies only to occupied property."
    )


def test_a_house_marked_unoccupied_across_a_lot_line_is_named_on_both_lots(tmp_path):
    """The house across the line of lots 101 and 102, marked unoccupied in the buildings layer: 101 named it, but 102
    read "no building of 150 sq ft or more, nor one marked occupied, stands on it" with 360 sq ft of it there."""
    houses = {"building_id": ["B-12"], "occupied": [False]}
    data = _two_lots(tmp_path, [box(0, 25, 50, 125), box(50, 25, 100, 125)], houses, [HOUSE])
    out = tmp_path / "results.csv"
    assert invoke("analyze", "--profile", "fort-plain", "--data", data, "--out", out).exit_code == 0
    results = pd.read_csv(out, dtype=str).set_index("parcel_id")
    assert results["status"].to_dict() == {"101": "unoccupied", "102": "unoccupied"}
    rest = "; no other building of 150 sq ft or more, nor one marked occupied, stands on it); § 144-4 applies only to"
    assert results.loc["101", "reason"] == (
        "No building used for human occupancy, employment or recreation on the parcel (building B-12 of 1,200 sq ft "
        f"stands on it but the buildings layer marks it unoccupied{rest} occupied property."
    )
    assert results.loc["102", "reason"] == (
        "No building used for human occupancy, employment or recreation is counted on the parcel (building B-12 "
        "covers 360 sq ft of it but the buildings layer marks it unoccupied, and it is assigned to parcel 101, where "
        f"its middle stands{rest} occupied property."
    )


def test_a_value_set_to_the_laws_own_is_not_said_to_be_set_for_the_run(tmp_path):
    """`analyze --profile fort-plain --set mandate.distance_ft=100` (§ 144-4 says 100 ft) printed "Distance: 100 ft
    from the property line (§ 144-4; value set by the user)" and wrote "25.0 ft beyond 100 ft, the distance set for
    this run (§ 144-4 sets 100 ft)": at a board meeting, a run that departed from the law. It reads as the law's."""
    lots, houses = [box(0, 25, 50, 125), box(60, 125, 110, 225)], [box(10, 50, 40, 80), box(70, 150, 100, 180)]
    data = _two_lots(tmp_path, lots, {"building_id": ["B-1", "B-2"]}, houses)

    def analysed(*sets):
        (tmp_path / f"run{len(sets)}").mkdir()
        out = tmp_path / f"run{len(sets)}" / "results.csv"
        args = ("analyze", "--profile", "fort-plain", "--data", data, "--out", out, "--notice-date", "2027-03-01")
        result = CliRunner().invoke(main, list(map(str, (*args, *sets))), env={"COLUMNS": "300"})
        assert result.exit_code == 0, result.output
        said = " ".join(result.output.replace(str(out), "OUT").split())
        return said, pd.read_csv(out, dtype=str).set_index("parcel_id")[["status", "section", "reason"]]

    law_said, law = analysed()
    said, results = analysed("--set", "mandate.distance_ft=100", "--set", "mandate.notice_period_days=90")
    assert "Distance: 100 ft from the property line (§ 144-4), measured in" in said
    assert "deadline 90 days after it (§ 144-4)." in said
    assert "value set by the user" not in said and said == law_said
    assert results["status"].to_dict() == {"101": "mandated", "102": "out_of_range"}
    assert results.loc["102", "reason"] == (
        "Nearest public sanitary main M-1 lies 125.0 ft from the property line, 25.0 ft beyond the 100 ft of § 144-4; "
        "no connection can be required."
    )
    pd.testing.assert_frame_equal(results, law)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--profile", "albany"], "No profile named 'albany'"),
        (["--profile", "wappinger"], "--set mandate.distance_ft=N"),
        (["--profile", "poughkeepsie", "--notice-date", "2027-03-01"], "notice reason): public_health_hazard or"),
        (["--profile", "poughkeepsie", "--notice-date", "2027-03-01"], "Use --notice-reason public_health_hazard|"),
        (["--profile", "poughkeepsie", "--notice-reason", "whim"], "Use --notice-reason public_health_hazard|"),
        (["--profile", "fort-plain", "--set", "mandate.distance=3"], "names no rule"),
        (["--profile", "fort-plain", "--set", "mandate.distance_ft=nan"], "must be a finite number"),
        (
            ["--profile", "fort-plain", "--notice-date", "2030-03-01", "--set", "mandate.notice_period_days=100000000"],
            "Error: mandate.notice_period_days (§ 144-4) must be from 1 to 3,650 days, not 100000000.",
        ),
        (
            ["--profile", "fort-plain", "--set", "mandate.distance_ft=abc"],
            "mandate.distance_ft must be a number, not 'abc'.",
        ),
        (["--profile", "fort-plain", "--out", "results.shp"], "give an output ending in .gpkg, .parquet"),
        (["--profile", "fort-plain", "--crs", "EPSG:4326"], "not projected"),
        (["--profile", "fort-plain", "--crs", "EPSG:999999"], "is not a coordinate reference system"),
    ],
)
def test_user_errors_exit_2_without_traceback(runner, town_gpkg, args, message):
    result = runner.invoke("analyze", "--data", town_gpkg, *args)
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert "Traceback" not in result.output
    assert isinstance(result.exception, SystemExit)  # an exit with a message, not an exception escaping


def test_a_missing_data_file_exits_2(runner, tmp_path):
    result = runner.invoke("analyze", "--profile", "fort-plain", "--data", tmp_path / "x.gpkg")
    assert result.exit_code == 2 and "does not exist" in result.stderr


@pytest.fixture(scope="module")
def no_crs_gpkg(town_gpkg, tmp_path_factory):
    """The town's parcels with their CRS taken away, and its mains."""
    bad = tmp_path_factory.mktemp("no-crs") / "bad.gpkg"
    parcels = gpd.read_file(town_gpkg, layer="parcels").set_crs(None, allow_override=True)
    with pytest.warns(UserWarning, match="'crs' was not provided"):
        parcels.to_file(bad, layer="parcels")
    gpd.read_file(town_gpkg, layer="mains").to_file(bad, layer="mains")
    return bad


def test_a_layer_without_a_crs_is_refused_naming_the_flag_that_fixes_it(runner, no_crs_gpkg):
    result = runner.invoke("analyze", "--profile", "fort-plain", "--data", no_crs_gpkg, "--json")
    assert result.exit_code == 2
    problem = json.loads(result.stdout)["problems"][0]
    assert problem["check"] == "no_crs" and problem["fix"]["setting"] == "layer_crs"
    assert "--" not in problem["message"]  # the problem names the setting; the command line words it as a flag
    assert "Use --layer-crs parcels=EPSG:2260." in result.stderr


def test_the_flag_the_error_names_fixes_it(runner, no_crs_gpkg, town_gpkg):
    fixed = runner.invoke(
        "analyze",
        "--profile",
        "fort-plain",
        "--data",
        no_crs_gpkg,
        "--layer-crs",
        "parcels=EPSG:2260",
        "--layer",
        f"streets={town_gpkg}:streets",
        "--json",
    )
    assert fixed.exit_code == 0, fixed.output
    assert json.loads(fixed.stdout)["summary"]["parcels"] == 400


def test_a_prj_that_lies_is_fixed_by_the_flag_its_refusal_names(runner, town_gpkg, tmp_path):
    """Parcels in New York East feet whose file says Long Island feet: refused, then fixed by --layer-crs."""
    lying = tmp_path / "lying.gpkg"
    parcels = gpd.read_file(town_gpkg, layer="parcels").set_crs("EPSG:2263", allow_override=True)
    parcels.to_file(lying, layer="parcels")
    for layer in ("mains", "streets", "buildings"):
        gpd.read_file(town_gpkg, layer=layer).to_file(lying, layer=layer)
    refused = runner.invoke("analyze", "--profile", "fort-plain", "--data", lying)
    assert refused.exit_code == 2 and "Use --layer-crs parcels=EPSG:2260." in refused.stderr
    fixed = runner.invoke(
        "analyze", "--profile", "fort-plain", "--data", lying, "--layer-crs", "parcels=EPSG:2260", "--json"
    )
    assert fixed.exit_code == 0, fixed.output
    doc = json.loads(fixed.stdout)
    assert doc["summary"]["parcels"] == 400
    replaced = [p for p in doc["problems"] if p["check"] == "crs_replaced"]
    assert replaced and replaced[0]["layer"] == "parcels" and "is used instead" in replaced[0]["message"]


def test_a_list_rule_set_on_the_command_line_is_refused_naming_the_file_to_copy_and_how_to_give_it(
    runner, town_gpkg, tmp_path
):
    """'use the copy as the profile' named neither the file to copy nor that a copy is given as --profile FILE."""
    from analysis.profiles import PROFILE_DIR

    refused = runner.invoke(
        "analyze", "--profile", "wappinger", "--data", town_gpkg, "--set", "mandate.notice_reasons=board_order"
    )
    assert refused.exit_code == 2
    assert (
        f"Copy {PROFILE_DIR / 'wappinger.toml'}, change mandate.notice_reasons in the copy and give the copy's path "
        "as --profile FILE.toml in place of the profile's name." in refused.stderr
    )
    # Done as told, the copy runs; set again on the copy, the user is sent to that file itself.
    copy = tmp_path / "my-village.toml"
    copy.write_text((PROFILE_DIR / "wappinger.toml").read_text(encoding="utf-8"), encoding="utf-8")
    done = runner.invoke(
        "analyze", "--profile", copy, "--data", town_gpkg, "--set", "mandate.distance_ft=200", "--json"
    )
    assert done.exit_code == 0, done.output
    again = runner.invoke("analyze", "--profile", copy, "--data", town_gpkg, "--set", "design.cost_per_ft=3", "--json")
    assert again.exit_code == 2
    assert f"Change design.cost_per_ft in {copy} itself." in again.stderr
    assert json.loads(again.stdout)["fix"] == {
        "setting": "profile_file",
        "target": "design.cost_per_ft",
        "example": str(copy),
        "choices": [],
    }


def test_no_streets_for_the_abutting_test(tmp_path, town_gpkg):
    data = tmp_path / "nostreets.gpkg"
    for layer in ("parcels", "mains", "buildings"):
        gpd.read_file(town_gpkg, layer=layer).to_file(data, layer=layer)
    result = CliRunner().invoke(main, ["analyze", "--profile", "fort-plain", "--data", str(data)])
    assert result.exit_code == 2 and "needs a streets layer" in result.output


def test_wappinger_with_the_town_distance(town_gpkg):
    result = invoke(
        "analyze", "--profile", "wappinger", "--data", town_gpkg, "--set", "mandate.distance_ft=150", "--json"
    )
    doc = json.loads(result.output)
    assert doc["summary"]["distance_ft"] == 150.0
    assert doc["summary"]["distance_section"] == "§ 196-17E (value set by the user)"


def test_a_test_the_run_set_off_is_not_said_to_be_absent_from_the_law(town_gpkg):
    """With requires_occupied_building and requires_abutting_street set false under Fort Plain, the table read "not
    used: § 144-4 does not require an occupied building" (and "... abutting a sewered street"): § 144-4 requires
    both. The table says the run did not test them."""
    sets = ("--set", "mandate.requires_occupied_building=false", "--set", "mandate.requires_abutting_street=false")
    result = CliRunner().invoke(
        main, ["analyze", "--profile", "fort-plain", "--data", town_gpkg, *sets], env={"COLUMNS": "300"}
    )
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "does not require" not in text
    for test in ("an occupied building", "abutting a sewered street"):
        assert f"not used: this run did not test it (a value set for the run; § 144-4 requires {test})" in text


def test_wappinger_summary_says_what_its_law_rules(town_gpkg):
    """§ 196-17E sets no notice period and no abutting-street test: the summary says so, never "None days"."""
    args = ("--data", town_gpkg, "--notice-date", "2027-03-01")
    wide = {"COLUMNS": "300"}  # the table's cells unwrapped
    result = CliRunner().invoke(
        main, ["analyze", "--profile", "wappinger", "--set", "mandate.distance_ft=150", *map(str, args)], env=wide
    )
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "None" not in text
    assert "no deadline computed: the law sets no period to connect (§ 196-17E)" in text
    assert "--set mandate.notice_period_days=N" in text
    assert "abutting a sewered street, within" not in text
    assert "must connect (occupied, within the distance)" in text
    assert "not used: § 196-17E does not require abutting a sewered street" in text
    fort = CliRunner().invoke(main, ["analyze", "--profile", "fort-plain", *map(str, args)], env=wide)
    fort_text = " ".join(fort.output.split())
    assert "must connect (occupied, abutting a sewered street, within the distance)" in fort_text
    assert "deadline 90 days after it (§ 144-4)" in fort_text


def test_summary_cites_a_value_set_by_the_user_without_nested_brackets(town_gpkg):
    """A --set threshold is flagged inside the sentence's one pair of brackets: "(§ 196-17E; value set by ...)"."""
    sets = ("--set", "mandate.distance_ft=150", "--set", "mandate.notice_period_days=60")
    args = ("analyze", "--profile", "wappinger", "--data", town_gpkg, "--notice-date", "2027-03-01", *sets)
    result = CliRunner().invoke(main, list(map(str, args)), env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "150 ft from the property line (§ 196-17E; value set by the user), measured in" in text
    assert "deadline 60 days after it (§ 196-17E; value set by the user)." in text
    assert not re.search(r"\([^()]*\([^()]*\)[^()]*\)", text), text


def test_three_profiles_give_different_counts(town_gpkg):
    counts = {}
    for profile, extra in (
        ("fort-plain", []),
        ("poughkeepsie", []),
        ("wappinger", ["--set", "mandate.distance_ft=100"]),
    ):
        doc = json.loads(invoke("analyze", "--profile", profile, "--data", town_gpkg, *extra, "--json").output)
        counts[profile] = doc["summary"]["counts"]
    # 300 ft reaches more than 100 ft; Wappinger has no abutting test, so nothing is in range but not abutting.
    assert counts["poughkeepsie"]["out_of_range"] < counts["fort-plain"]["out_of_range"]
    assert counts["poughkeepsie"]["in_range_not_abutting"] > counts["fort-plain"]["in_range_not_abutting"]
    assert counts["wappinger"]["in_range_not_abutting"] == 0 < counts["fort-plain"]["in_range_not_abutting"]


def test_sample_command(tmp_path):
    out = tmp_path / "s.gpkg"
    result = invoke("sample", "--out", out, "--parcels", 120, "--json")
    doc = json.loads(result.output)
    assert doc["layers"]["parcels"] == 120 and doc["crs"] == "EPSG:2260"
    again = CliRunner().invoke(main, ["sample", "--out", str(out)])
    assert again.exit_code == 2 and "--overwrite" in again.output
    assert invoke("sample", "--out", out, "--parcels", 120, "--overwrite").exit_code == 0


def test_sample_overwrite_starts_the_sample_afresh_but_keeps_the_notice_register(tmp_path):
    """`sample --overwrite` replaced a GeoPackage store's file whole, its settings with it: the notice register it
    recorded (here in another folder, which nothing else names) was no longer the store's, without a word, and the
    next "Create the notice register" made a second, empty one beside it. The register is kept, as a PostGIS store's
    settings and a publication keep it, and said; the run and what the old layers were checked in are not."""
    from layers.register import Register
    from layers.store import LAYERS_CRS, read_setting, write_setting

    store = tmp_path / "town.gpkg"
    invoke("sample", "--out", store, "--parcels", 60)
    invoke("analyze", "--profile", "fort-plain", "--data", store, "--out", store)
    assert latest_run(str(store)) is not None
    register = tmp_path / "clerk" / "register.sqlite"
    Register(str(register), store=str(store), create=True).engine.dispose()
    write_setting(str(store), LAYERS_CRS, "EPSG:32618")
    assert read_setting(str(store), "register") == str(register)

    doc = json.loads(invoke("sample", "--out", store, "--parcels", 60, "--overwrite", "--json").output)
    assert doc["register"] == str(register)
    assert read_setting(str(store), "register") == str(register)
    assert read_setting(str(store), LAYERS_CRS) is None and latest_run(str(store)) is None
    said = invoke("sample", "--out", store, "--parcels", 60, "--overwrite").output
    assert f"keeps its notice register, {register}" in said


def test_sample_and_export_qgis_use_the_store_the_server_shows(tmp_path, monkeypatch):
    """Without --out (--store), `sample` and `export-qgis` used ./instance/sewerplan.gpkg whatever SEWERPLAN_INSTANCE
    or config.py's STORE said, so `sewerplan sample` wrote a store `serve` did not show: they now take the STORE
    setting, as `serve` does."""
    monkeypatch.chdir(tmp_path)
    service = tmp_path / "service"
    monkeypatch.setenv("SEWERPLAN_INSTANCE", str(service))
    assert invoke("sample", "--parcels", 60).exit_code == 0
    assert (service / "sewerplan.gpkg").is_file() and not (tmp_path / "instance").exists()
    town = tmp_path / "srv" / "town.gpkg"
    service.joinpath("config.py").write_text(f"STORE = {str(town)!r}\n")
    written = json.loads(invoke("sample", "--parcels", 60, "--json").output)
    assert written["output"] == str(town) and town.is_file()
    done = json.loads(invoke("export-qgis", "--out", tmp_path / "town.qgz", "--json").output)
    assert done["store"] == str(town)


def test_profiles_commands():
    listed = json.loads(invoke("profiles", "list", "--json").output)
    assert [p["id"] for p in listed] == ["fort-plain", "poughkeepsie", "wappinger"]
    shown = json.loads(invoke("profiles", "show", "poughkeepsie", "--json").output)
    assert shown["rules"]["mandate.notice_period_days"]["value"] == 30
    text = invoke("profiles", "show", "fort-plain").output
    assert "§ 144-4" in text and "within 100 feet" in text
    assert CliRunner().invoke(main, ["profiles", "show", "nowhere"]).exit_code == 2


def test_serve_refuses_a_store_in_a_folder_that_does_not_exist(tmp_path):
    """A store that does not exist yet is served (a new town: tests/test_web_new_town.py), but not in a folder that
    does not exist: a typo in the path."""
    result = CliRunner().invoke(main, ["serve", "--store", str(tmp_path / "nowhere" / "none.gpkg")])
    assert result.exit_code == 2 and "The folder" in result.output and "does not exist" in result.output


def test_network_check_json_and_report(town_gpkg, tmp_path):
    data = tmp_path / "small_main.gpkg"
    for layer in ("mains", "manholes", "treatment_plants"):
        frame = gpd.read_file(town_gpkg, layer=layer)
        if layer == "mains":
            frame.loc[frame["main_id"] == "M-3", "diameter_in"] = 6.0
        frame.to_file(data, layer=layer)
    result = invoke("network", "check", "--profile", "fort-plain", "--data", data, "--json")
    assert result.exit_code == 0
    report = json.loads(result.output)
    # x, y with the CRS they are in, as results files name their connection point's (connection_crs)
    assert all(set(d) == {"check", "severity", "feature_id", "section", "message", "x", "y", "crs"} for d in report)
    assert {d["crs"] for d in report} == {"EPSG:2260"}
    small = [d for d in report if d["check"] == "min_diameter"]
    assert [d["feature_id"] for d in small] == ["M-3"] and small[0]["section"] == "§ 144-18B"
    out, table = tmp_path / "report.geojson", tmp_path / "report.csv"
    text = invoke("network", "check", "--profile", "fort-plain", "--data", data, "--out", out, "--out", table)
    assert "§ 144-18B" in text.output and out.exists()
    # The head names the sample's one plant at the inlet its layer names, and the network as one piece.
    plant = gpd.read_file(data, layer="treatment_plants").iloc[0]
    said = " ".join(text.output.split())
    assert f"1 treatment plant: {plant['name']} at {plant['outfall_manhole']}." in said
    assert "The mains are one connected piece of the network." in said
    assert len(gpd.read_file(out)) == len(report) == len(pd.read_csv(table))
    # the .csv's x, y were feet in a CRS the file did not name (the .geojson beside it is in degrees)
    rows = pd.read_csv(table, encoding="utf-8-sig")
    assert list(rows.columns[-3:]) == ["x", "y", "crs"] and set(rows["crs"]) == {"EPSG:2260"}
    assert rows["x"].tolist() == [d["x"] for d in report]


@pytest.fixture(scope="module")
def parcel_trace(town_gpkg) -> dict:
    parcel = gpd.read_file(town_gpkg, layer="parcels")["parcel_id"].iloc[5]
    return Runner().json("trace", "--profile", "fort-plain", "--data", town_gpkg, "--parcel", parcel)


def test_trace_from_a_parcel_reaches_the_outfall_through_its_control_manhole(parcel_trace):
    doc = parcel_trace
    keys = {
        "start",
        "path",
        "mains",
        "control_manhole",
        "length_ft",
        "outfall",
        "plant",
        "problem",
        "splits",
        "direction_unknown",
    }
    assert set(doc) == keys
    assert doc["path"][0] == doc["control_manhole"] and doc["problem"] is None
    # the sample's plant names its inlet manhole (outfall_manhole): the trace ends there and names the plant
    assert doc["plant"] == "Sample Village Wastewater Treatment Plant"
    assert doc["outfall"] == doc["path"][-1] and len(doc["mains"]) == len(doc["path"])


def test_a_parcel_id_the_layer_lacks_is_told_with_one_it_has(town_gpkg):
    """README's `trace --parcel 12.34-1-5` on the sample village said only "No parcel '12.34-1-5' in the parcels
    layer.": nothing on how the town writes its IDs."""
    first = gpd.read_file(town_gpkg, layer="parcels")["parcel_id"].iloc[0]
    told = Runner().invoke("trace", "--profile", "fort-plain", "--data", town_gpkg, "--parcel", "12.34-1-5")
    assert told.exit_code == 2, told.output
    assert " ".join(told.stderr.split()) == (
        f"Error: No parcel '12.34-1-5' in the parcels layer: give a parcel ID as the parcels layer writes it, such as "
        f"{first!r}."
    )


def test_trace_down_from_the_control_manhole_follows_the_same_path(runner, town_gpkg, parcel_trace):
    down = runner.json("trace", "--profile", "fort-plain", "--data", town_gpkg, "--manhole", parcel_trace["path"][0])
    assert down["path"] == parcel_trace["path"] and down["length_ft"] < parcel_trace["length_ft"]


def test_upstream_of_the_outfall_counts_units_at_the_profiles_rate(runner, town_gpkg, parcel_trace):
    up = runner.json(
        "trace", "--profile", "fort-plain", "--data", town_gpkg, "--manhole", parcel_trace["outfall"], "--upstream"
    )
    assert set(up) == {
        "manhole",
        "mains",
        "manholes",
        "parcels",
        "units",
        "units_unknown",
        "flow_given",
        "flow_unknown",
        "flow_gpd",
        "flow_at_least_gpd",
        "not_counted",
        "zero_flow_found_occupied",
    }
    assert up["parcels"] and up["flow_at_least_gpd"] == up["units"] * 250
    # the sample has parcels whose units are unknown (shops, a mill) and no flow_gpd: their flow is not known, nor
    # the whole
    assert up["flow_given"] == 0 and up["flow_unknown"] == up["units_unknown"] > 0 and up["flow_gpd"] is None


def test_trace_says_the_loadings_warnings_for_a_sewershed_too(tmp_path):
    """`trace --upstream` returned before saying what loading found (a parcel left out of the analysis), which
    `trace --parcel` and every other command say before their answer."""
    town = sample_town(60)
    town["parcels"].loc[town["parcels"].index[-1], "geometry"] = None  # left out, with a warning
    data = tmp_path / "town.gpkg"
    write_layers(str(data), town)
    outfall = town["treatment_plants"]["outfall_manhole"].iloc[0]
    warned = "warning: parcels: 1 feature(s) have no geometry and were left out of the analysis."
    for how in (["--manhole", outfall, "--upstream"], ["--parcel", town["parcels"]["parcel_id"].iloc[0]]):
        said = Runner().invoke("trace", "--profile", "fort-plain", "--data", data, *how, ok=True)
        assert warned in " ".join(said.stderr.split()), (how, said.output)
    quiet = Runner().invoke(
        "trace", "--profile", "fort-plain", "--data", data, "--manhole", outfall, "--upstream", "--json"
    )
    assert "warning" not in quiet.stderr and json.loads(quiet.stdout)["manhole"] == outfall


@pytest.mark.parametrize(
    ("args", "says"),
    [(["--manhole", "MH-NOPE"], "No manhole"), ([], "--parcel ID or --manhole ID"), (["--upstream"], "--manhole")],
)
def test_trace_refuses_what_it_cannot_trace(runner, town_gpkg, args, says):
    result = runner.invoke("trace", "--profile", "fort-plain", "--data", town_gpkg, *args)
    assert result.exit_code == 2 and says in result.output


def test_swmm_inp_through_the_cli(real_data):
    inp = real_data / "bellinge-swmm" / "bellinge_small.inp"
    no_crs = CliRunner().invoke(main, ["network", "check", "--profile", "fort-plain", "--data", str(inp)])
    # A model never declares its CRS: one --data-crs gives every layer of it one (not a --layer-crs per layer)
    assert no_crs.exit_code == 2 and "declares no coordinate reference system" in no_crs.output
    assert "Use --data-crs EPSG:" in no_crs.output and "--layer-crs" not in no_crs.output
    doc = json.loads(
        invoke(
            "trace",
            "--profile",
            "fort-plain",
            "--data",
            inp,
            "--data-crs",
            "EPSG:32632",
            "--crs",
            "EPSG:32632",
            "--manhole",
            "G72F833",
            "--json",
        ).output
    )
    assert doc["path"] == [
        "G72F833",
        "G72F832",
        "G72F831",
        "G72F830",
        "G72F820",
        "G72F810",
        "G72F800",
        "G72F050",
        "G72F050_outfall",
    ]


BUILDING_FIELDS = {
    "building_id",
    "parcel_id",
    "units",
    "rear_building",
    "front_building_id",
    "shared_lateral",
    "required_laterals",
    "existing_laterals",
    "manhole_connection_case",
    "lateral_diameter_in",
    "lateral_slope_in_per_ft",
    "section",
    "reason",
}


def test_buildings_json_lists_cases_with_every_field(runner, town_gpkg):
    doc = runner.json("buildings", "--profile", "wappinger", "--set", "mandate.distance_ft=100", "--data", town_gpkg)
    assert doc and all(set(d) == BUILDING_FIELDS for d in doc)


def test_wappinger_rear_buildings_on_interior_lots_need_a_main_extension(runner, town_gpkg):
    doc = runner.json("buildings", "--profile", "wappinger", "--set", "mandate.distance_ft=100", "--data", town_gpkg)
    interior = [d for d in doc if d["rear_building"] and "interior lot" in d["reason"]]
    assert interior  # the sample town has some: the check below is about them, never about none
    assert all(d["shared_lateral"] == "main_extension_required" and d["section"] == "§ 196-18D" for d in interior)


def test_buildings_all_lists_every_building(runner, town_gpkg):
    cases = runner.json("buildings", "--profile", "fort-plain", "--data", town_gpkg)
    everything = runner.json("buildings", "--profile", "fort-plain", "--data", town_gpkg, "--all")
    assert len(everything) == len(gpd.read_file(town_gpkg, layer="buildings")) > len(cases)


def test_analyze_writes_the_building_results_into_a_geopackage(runner, town_gpkg, tmp_path):
    out = tmp_path / "results.gpkg"
    runner.invoke("analyze", "--profile", "fort-plain", "--data", town_gpkg, "--out", out, ok=True)
    assert "building_results" in {name for name, _ in pyogrio.list_layers(out)}


def test_analyze_holds_the_stores_lock_from_before_it_reads_to_after_it_writes(town_gpkg, tmp_path, monkeypatch):
    """Results are never written over layers another writer changed meanwhile: the run locks its store first."""
    import gisapp.services as services
    from layers.store import StoreBusyError, store_writer

    store = tmp_path / "town.gpkg"
    store.write_bytes(town_gpkg.read_bytes())
    seen = []
    real = services.mandates

    def probe(*args, **kwargs):
        try:
            with store_writer(str(store), who="another planner"):
                seen.append("free")
        except StoreBusyError:
            seen.append("locked")
        return real(*args, **kwargs)

    monkeypatch.setattr(services, "mandates", probe)
    result = CliRunner().invoke(main, ["analyze", "--profile", "fort-plain", "--data", str(store), "--out", str(store)])
    assert result.exit_code == 0, result.output
    assert seen == ["locked"]
    with store_writer(str(store), who="after the run"):  # and released at the end
        pass


def test_analyze_removes_the_hidden_copies_killed_runs_left_beside_its_store_and_nothing_else(town_gpkg, tmp_path):
    """A run killed while writing leaves its hidden copy of the store (tens of MB for a town) and its journal; the
    next writer, holding the store's lock, removes them: only our own names for that store, in its folder."""
    import os

    store = tmp_path / "town.gpkg"
    store.write_bytes(town_gpkg.read_bytes())
    half = town_gpkg.read_bytes()[: town_gpkg.stat().st_size // 2]
    stale = [
        ".town.k3v_9qz1.tmp.gpkg",  # an analysis's copy of the store (tempfile.mkstemp), cut off by kill -9
        ".town.k3v_9qz1.tmp.gpkg-journal",  # with the journal of the copy it was making
        f".town.{'3f' * 16}.tmp.gpkg",  # a killed `sewerplan sample --overwrite` (uuid4)
    ]
    for name in stale:
        (tmp_path / name).write_bytes(half)
    unrelated = [
        ".town.v2.k3v_9qz1.tmp.gpkg",  # the copy of another store, town.v2.gpkg
        ".other.k3v_9qz1.tmp.gpkg",  # of another store, other.gpkg
        ".town.K3V_9QZ1.tmp.gpkg",  # not a name we make
        ".town.notes.tmp.gpkg",
        ".town.k3v_9qz1.tmp.gpkg.bak",
        "town.k3v_9qz1.tmp.gpkg",
        "town.gpkg.bak",
        "sub/.town.k3v_9qz1.tmp.gpkg",  # another folder
    ]
    for name in unrelated:
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_bytes(b"keep me")
    (tmp_path / ".town.dirdir12.tmp.gpkg").mkdir()  # a folder of our pattern's name is not ours
    (tmp_path / "kept-target.txt").write_text("a user's file")
    os.symlink(tmp_path / "kept-target.txt", tmp_path / ".town.link1234.tmp.gpkg")  # nor a link

    result = CliRunner().invoke(main, ["analyze", "--profile", "fort-plain", "--data", str(store), "--out", str(store)])
    assert result.exit_code == 0, result.output
    assert not [name for name in stale if (tmp_path / name).exists()]
    assert all((tmp_path / name).read_bytes() == b"keep me" for name in unrelated)
    assert (tmp_path / ".town.dirdir12.tmp.gpkg").is_dir()
    assert (tmp_path / ".town.link1234.tmp.gpkg").is_symlink()
    assert (tmp_path / "kept-target.txt").read_text() == "a user's file"
    assert latest_run(store) is not None and len(gpd.read_file(store, layer="parcel_results")) == 400


def test_the_copy_a_running_writer_is_making_is_never_removed(town_gpkg, tmp_path):
    """Only the writer that holds the lock clears copies: one refused while another writes touches nothing."""
    from layers.store import StoreBusyError, store_writer

    store = tmp_path / "town.gpkg"
    store.write_bytes(town_gpkg.read_bytes())
    in_progress = tmp_path / ".town.ab12cd34.tmp.gpkg"
    with store_writer(str(store), who="the web app"):
        in_progress.write_bytes(b"being written")  # the lock holder's copy, made after it took the lock
        result = CliRunner().invoke(
            main, ["analyze", "--profile", "fort-plain", "--data", str(store), "--out", str(store)]
        )
        assert result.exit_code == 2 and "in progress" in result.output
        assert in_progress.read_bytes() == b"being written"
        with pytest.raises(StoreBusyError):
            open_store(store).write_layers(sample_town(60), overwrite=True)  # a sample over it waits its turn too
        assert in_progress.exists()
    with store_writer(str(store), who="the next run"):  # the holder died without finishing: the next one clears
        assert not in_progress.exists()


def test_kill_9_during_analyze_leaves_a_copy_the_next_run_removes(town_gpkg, tmp_path):
    """The real thing: `sewerplan analyze --out STORE` killed while its copy is being written, then run again."""
    import os
    import signal
    import subprocess
    import sys
    import time

    store = tmp_path / "town.gpkg"
    store.write_bytes(town_gpkg.read_bytes())
    command = [sys.executable, "-m", "gisapp.cli", "analyze", "--profile", "fort-plain", "--data", str(store)]

    def copies() -> list[str]:
        return sorted(p.name for p in tmp_path.glob(".town.*.tmp.gpkg*"))

    left: list[str] = []
    for _ in range(5):  # until a kill lands while the copy is there (it is there for most of a second)
        proc = subprocess.Popen([*command, "--out", str(store)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        end = time.time() + 120
        while proc.poll() is None and not copies() and time.time() < end:
            time.sleep(0.005)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        left = copies()
        if left:
            break
    assert left, "no kill landed while the copy was being written: the test proved nothing"
    assert latest_run(store) is None  # the store as it was: the killed run wrote nothing into it
    done = subprocess.run([*command, "--out", str(store)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert copies() == [] and latest_run(store) is not None


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o600])
def test_a_store_rewritten_by_a_run_keeps_who_may_read_it(town_gpkg, tmp_path, mode):
    """The first run into a new store made it readable as the user's files are (0644 here); every later run replaced
    it with its temporary copy, made readable by its owner only (0600): a colleague's QGIS on a shared folder
    could open the first results and not the next."""
    import os
    import stat

    store = tmp_path / "town.gpkg"
    store.write_bytes(town_gpkg.read_bytes())
    os.chmod(store, mode)
    result = CliRunner().invoke(main, ["analyze", "--profile", "fort-plain", "--data", str(store), "--out", str(store)])
    assert result.exit_code == 0, result.output
    assert stat.S_IMODE(store.stat().st_mode) == mode


def test_sample_and_an_empty_notice_list_are_said_in_words(tmp_path):
    """`sewerplan sample` said "1 treatment_plants"; `notices list --overdue` with nothing overdue printed a table's
    title over an empty header row."""
    store = tmp_path / "town.gpkg"
    made = CliRunner().invoke(main, ["sample", "--out", str(store), "--parcels", "60"])
    assert made.exit_code == 0, made.output
    assert made.output.strip().endswith(", 1 treatment plant") and "_" not in made.output.split(":")[-1]
    from layers.register import Register

    Register(store=str(store), create=True)  # the town's register, no notice in it yet
    listed = CliRunner().invoke(main, ["notices", "list", "--overdue", "--as-of", "2027-01-04", "--store", str(store)])
    assert listed.exit_code == 0, listed.output
    assert listed.output == "No notices overdue on 2027-01-04.\n"


def test_bellinge_subcatchments_as_parcels_write_a_geopackage_store(real_data, tmp_path):
    """Bellinge's real subcatchments carry "Area" and "area": the analysis ran, then the GeoPackage store refused
    ("A field with the same name already exists"), naming its hidden copy, since SQLite holds the two as one
    column. The second is kept as area_2, and the load says so."""
    base = real_data / "bellinge-swmm"
    parcels = json.loads((base / "bellinge_small_subcatchments.geojson").read_text())
    for feature in parcels["features"]:
        feature["properties"]["occupied"] = "yes"
    (tmp_path / "parcels.geojson").write_text(json.dumps(parcels))
    out = tmp_path / "results.gpkg"
    result = CliRunner().invoke(
        main,
        [
            "analyze",
            "--profile",
            "wappinger",
            "--set",
            "mandate.distance_ft=150",
            "--data",
            str(base / "bellinge_small.inp"),
            "--data-crs",
            "EPSG:32632",
            "--crs",
            "EPSG:32632",
            "--layer",
            f"parcels={tmp_path / 'parcels.geojson'}",
            "--map",
            "parcels.parcel_id=Name",
            "--out",
            str(out),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["summary"]["parcels"] == 13
    (told,) = [p for p in doc["problems"] if p["check"] == "column_case"]
    assert told["layer"] == "parcels" and "area as area_2" in told["message"]
    for layer in ("parcel_results", "parcels"):
        read = pyogrio.read_dataframe(out, layer=layer, read_geometry=False)
        assert {"Area", "area_2"} <= set(read.columns) and len(read) == 13, layer
        assert read["area_2"].round(3).tolist() == [round(f["properties"]["area"], 3) for f in parcels["features"]]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            ("analyze", "--profile", "fort-plain", "--profile", "wappinger"),
            "--profile is given twice, as fort-plain and wappinger",
        ),
        (
            ("notices", "preview", "--notice-date", "2027-03-01", "--notice-date=2027-09-01"),
            "--notice-date is given twice, as 2027-03-01 and 2027-09-01",
        ),
        (("trace", "--manhole", "MH-17", "--manhole", "MH-40"), "--manhole is given twice, as MH-17 and MH-40"),
    ],
)
def test_an_option_given_twice_with_two_values_is_refused(args, said):
    """Click kept the last of the two without a word: 90 notices were recorded dated September, a run meant for
    Fort Plain ran Wappinger. Refused before anything is read or written, naming both values."""
    result = Runner().invoke(*args, "--data", "nowhere.gpkg")
    assert result.exit_code == 2 and said in " ".join(result.output.split())


def test_an_option_given_twice_with_one_value_is_that_value(tmp_path):
    store = tmp_path / "town.gpkg"
    Runner().invoke("sample", "--out", store, "--parcels", "60", ok=True)
    twice = Runner().invoke("analyze", "--profile", "fort-plain", "--profile", "fort-plain", "--data", store, "--json")
    assert twice.exit_code == 0, twice.output


@pytest.mark.parametrize("store", ["notes.gpkg", "owners.csv"])
def test_export_qgis_of_a_file_that_is_no_store_says_so(tmp_path, store):
    """A text file given as the store: `analyze` and `trace` said so in a sentence, export-qgis in SQLite's
    traceback ("file is not a database")."""
    (tmp_path / store).write_text("parcel_id,owner\n1,SMITH\n")
    result = Runner().invoke("export-qgis", "--store", tmp_path / store, "--out", tmp_path / "town.qgz")
    said = " ".join(result.output.split())
    assert result.exit_code != 0 and "Traceback" not in said and "cannot be read as map data" in said, said
    assert not (tmp_path / "town.qgz").exists()


def test_a_manhole_not_in_the_network_is_told_why_and_given_one_that_is(town_gpkg, real_data):
    """ "No manhole or node '29' in the network." said nothing of why (Manchester's manhole 29 is abandoned) nor how a
    manhole ID is written (mh-17 for MH-17), where a parcel not found is given one that is."""
    lower = invoke("trace", "--profile", "fort-plain", "--data", town_gpkg, "--manhole", "mh-17")
    assert lower.exit_code != 0 and "No manhole or node 'mh-17' in the network: it is written 'MH-17'" in lower.output
    nope = invoke("trace", "--profile", "fort-plain", "--data", town_gpkg, "--manhole", "MH-NOPE")
    assert "a manhole of the network is, for example, 'MH-" in nope.output
    town = real_data / "vt-sewer" / "manchester"
    layers = ("--layer", f"mains={town / 'ManchesterLinearFeatures.geojson'}")
    layers += ("--layer", f"manholes={town / 'ManchesterPointFeatures.geojson'}")
    gone = invoke("trace", *layers, "--manhole", "29")
    said = " ".join(gone.output.split())
    assert "manhole 29 is abandoned (its status in the manholes layer), so no flow passes it" in said


def test_data_given_to_a_command_that_reads_the_store_is_told_to_give_store():
    """`notices list --data town.gpkg` was told only click's "No such option: --data"."""
    result = Runner().invoke("notices", "list", "--data", "town.gpkg")
    said = " ".join(result.output.split())
    assert result.exit_code == 2
    assert "`sewerplan notices list` reads the town's store, not layers: give --store town.gpkg" in said


def test_store_given_to_a_command_that_reads_layers_is_told_to_give_data():
    """`notices preview --store town.gpkg` was told only click's "No such option '--store'" (a tester)."""
    result = Runner().invoke("notices", "preview", "--store", "town.gpkg", "--notice-date", "2027-03-01")
    said = " ".join(result.output.split())
    assert result.exit_code == 2
    assert (
        "`sewerplan notices preview` reads layers, a store among them: give --data town.gpkg in place of --store"
        in said
    )


def test_a_database_password_is_masked_where_an_option_is_named_back():
    """`notices preview --store URL` and `--data URL --data URL` echoed the URLs, the password in full (a tester)."""
    url = "postgresql://sewerplan:S3cretPW@127.0.0.1:5432/gis#fort_plain"
    store = Runner().invoke("notices", "preview", "--store", url, "--notice-date", "2027-03-01")
    listed = Runner().invoke("notices", "list", "--data", url)
    twice = Runner().invoke("analyze", "--data", url, "--data", url.replace("fort_plain", "other"))
    for result in (store, listed, twice):
        said = " ".join(result.output.split())
        assert result.exit_code == 2 and "S3cretPW" not in said, said
        assert "postgresql://sewerplan:***@127.0.0.1:5432/gis#" in said, said


def test_ctrl_c_while_the_command_loads_says_aborted_not_a_traceback(tmp_path):
    """Ctrl+C in the first second of `sewerplan analyze` (the libraries still loading) printed a traceback ending in
    KeyboardInterrupt from inside an import, three times of three; later, click's "Aborted!"."""
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    command = Path(sys.executable).with_name("sewerplan")  # the console script a user runs
    proc = subprocess.Popen(
        [str(command), "sample", "--out", str(tmp_path / "town.gpkg")],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(0.3)  # loading the libraries takes a second or more
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert "Aborted!" in err and proc.returncode != 0
