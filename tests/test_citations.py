"""Citations as a planner reads them: never a bracket inside a bracket, never two brackets side by side.

A citation is flagged "(section number derived)", "(value set by the user)" or, as a plan cites a rule,
"(profile setting)". Set in brackets within a sentence those flags became "(§ 144-21 (section number derived))";
``analysis.profiles.bracketed``, ``citation_clause`` and ``citations_clause`` word them as clauses instead. Checked
here where a planner reads them: the industrial-user reasons, `network check`, the plan on the command line, the
plan panel and the subdivisions on the web map (in real Chromium), the scenarios page and the board's PDF.
"""

from __future__ import annotations

import json
import re

import geopandas as gpd
import numpy as np
import pytest
from click.testing import CliRunner
from pypdf import PdfReader
from shapely.geometry import LineString, Point, box

from analysis.discharges import assess_discharges
from analysis.profiles import (
    FLAGS,
    PROFILE_DIR,
    citations_clause,
    flagged,
    joined_citations,
    load_profile,
    split_citations,
)
from gisapp.cli import main
from layers.register import Register
from layers.write import write_layers
from tests.conftest import csrf, ny_frame, serving
from tests.test_duties import lots
from tests.test_plans_web import analysed_oak_town, evaluate, oak_app
from tests.test_web import open_map, wait_for

NESTED = re.compile(r"\([^()]*\([^()]*\)[^()]*\)")
SIDE_BY_SIDE = re.compile(r"\)\s*\(")


FLAG_WORDS = "|".join(re.escape(f) for f in FLAGS)
# Two flags of one citation in two brackets: "§ 144-17A (value set by the user) (profile setting)".
FLAGS_SIDE_BY_SIDE = re.compile(rf"\((?:{FLAG_WORDS})[^()]*\)\s*\((?:{FLAG_WORDS})")


def readable(text: str) -> str:
    """``text`` with its whitespace made single, after checking no bracket nests or follows another: in a sentence
    and in a table's section column alike ("§ 144-17A (value set by the user; profile setting)")."""
    text = " ".join(str(text).split())
    assert not NESTED.search(text), text
    assert not SIDE_BY_SIDE.search(text), text
    return text


@pytest.fixture(scope="module")
def oak_store(tmp_path_factory):
    return analysed_oak_town(tmp_path_factory.mktemp("oak") / "town.gpkg")


def test_an_industrial_user_of_unknown_flow_cites_fort_plains_thresholds_in_words():
    houses = [(f"H{i}", "210", {"units": 1}) for i in range(60)]
    r = assess_discharges(lots(("MILL", "710"), *houses), profile=load_profile("fort-plain")).parcels
    text = readable(r.loc[0, "discharge_duties"])
    assert "above the thresholds of the law (§ 144-1 and § 144-25A, section numbers derived) cannot be told" in text
    # The section column keeps each citation as the law is cited in every other column.
    assert r.loc[0, "discharge_sections"] == "§ 144-1 (section number derived); § 144-25A (section number derived)"

    # Two rules of § 144-25A, one set by the user: the section named once, with both its flags.
    given = load_profile("fort-plain", overrides={"discharges.flow_review_gpd": "10000"})
    mill = assess_discharges(lots(("MILL", "710"), *houses), profile=given).parcels.loc[0]
    text = readable(mill["discharge_duties"])
    assert "(§ 144-1, section number derived; § 144-25A, section number derived and value set by the user)" in text
    assert text.count("§ 144-25A") == 1
    assert readable(mill["discharge_sections"]) == (
        "§ 144-1 (section number derived); § 144-25A (section number derived; value set by the user)"
    )


@pytest.mark.parametrize(
    ("citation", "flags", "column"),
    [
        (
            "§ 144-17A",
            ("value set by the user", "profile setting"),
            "§ 144-17A (value set by the user; profile setting)",
        ),
        (
            "§ 144-28 (section number derived)",
            ("profile setting",),
            "§ 144-28 (section number derived; profile setting)",
        ),
        # As a run or scenario stored before one bracket kept it: read back in one bracket.
        (
            "§ 144-17A (value set by the user) (profile setting)",
            (),
            "§ 144-17A (value set by the user; profile setting)",
        ),
        (
            "§ 144-9 (value set by the user)",
            ("section number derived", "value set by the user", ""),
            "§ 144-9 (section number derived; value set by the user)",
        ),
        ("§ 144-4", ("",), "§ 144-4"),
        ("§ 144-4(A)", (), "§ 144-4(A)"),  # a bracket of the section's own is not a flag
    ],
)
def test_a_section_column_prints_every_flag_in_one_bracket(citation, flags, column):
    assert flagged(citation, *flags) == column


def test_every_rule_citation_of_every_profile_has_one_bracket_whatever_the_user_sets():
    from analysis.plans import cite

    for name in ("fort-plain", "poughkeepsie", "wappinger"):
        plain = load_profile(name)
        numbers = {k: "1" for k, r in plain.rules().items() if isinstance(r.value, int | float) and r.value is not None}
        numbers = {k: v for k, v in numbers.items() if not isinstance(plain.rules()[k].value, bool)}
        given = load_profile(name, overrides=numbers)
        both = [r for r in given.rules().values() if r.overridden and (r.derived or r.setting)]
        assert both, name  # the case that printed two brackets is there to be printed
        for rule in given.rules().values():
            for text in (rule.citation, cite(rule)):
                assert not FLAGS_SIDE_BY_SIDE.search(text) and text.count(" (") <= 1, text


@pytest.mark.parametrize(
    ("citations", "clause", "column"),
    [
        # Two rules of one section, one set by the user: named once, with both rules' flags.
        (
            ["§ 144-4", "§ 144-4 (value set by the user)"],
            "§ 144-4, value set by the user",
            "§ 144-4 (value set by the user)",
        ),
        (["§ 144-4", "§ 144-4"], "§ 144-4", "§ 144-4"),
        (
            [
                "§ 144-25A (section number derived; value set by the user)",
                "§ 144-1",
                "§ 144-25A (section number derived)",
            ],
            "§ 144-25A, section number derived and value set by the user; § 144-1",
            "§ 144-25A (section number derived; value set by the user); § 144-1",
        ),
        (
            ["§ 144-1 (section number derived)", "§ 144-9 (section number derived)", "§ 144-1 (value set by the user)"],
            "§ 144-1, section number derived and value set by the user; § 144-9, section number derived",
            "§ 144-1 (section number derived; value set by the user); § 144-9 (section number derived)",
        ),
    ],
)
def test_several_citations_name_each_section_once(citations, clause, column):
    assert citations_clause(citations) == clause
    assert joined_citations(citations) == column
    # A column read back (as join_sections adds one column's citations to another's) splits between citations only.
    assert len(split_citations(column)) == column.count("§") and joined_citations(split_citations(column)) == column


def test_joining_section_columns_names_a_citation_of_two_flags_once():
    from analysis.discharges import join_sections

    both = "§ 144-25A (section number derived; value set by the user)"  # its "; " is not between two citations
    significant = np.array([both, "§ 144-23A (section number derived)", ""], dtype=object)
    review = np.array(["§ 144-1", "§ 144-25A (section number derived)", "§ 144-1"], dtype=object)
    control = np.array([both, "", ""], dtype=object)
    assert join_sections(significant, review, control).tolist() == [
        f"{both}; § 144-1",
        "§ 144-23A (section number derived); § 144-25A (section number derived)",
        "§ 144-1",
    ]
    # A column that already joins several (as the industrial column does) is read citation by citation.
    several = np.array([f"§ 144-1; {both}"], dtype=object)
    assert join_sections(np.array([both], dtype=object), several).tolist() == [f"{both}; § 144-1"]


def test_network_check_words_a_derived_design_standard_in_one_bracket(tmp_path):
    # A copy of Fort Plain's profile whose design standards were counted, not printed: as a town's own file may be.
    text = (PROFILE_DIR / "fort-plain.toml").read_text(encoding="utf-8")
    for key in ("min_diameter_in", "max_manhole_spacing_ft", "manhole_at_alignment_change"):
        text, n = re.subn(rf'^({key} = {{ value = [^,]+, section = "[^"]+",)', r"\1 derived = true,", text, flags=re.M)
        assert n == 1, key
    profile = tmp_path / "counted.toml"
    profile.write_text(text, encoding="utf-8")
    path = tmp_path / "town.gpkg"
    manholes = [("MH1", 0, 0), ("MH2", 900, 200)]
    ny_frame([{"manhole_id": i, "geometry": Point(x, y)} for i, x, y in manholes]).to_file(path, layer="manholes")
    bent = LineString([(0, 0), (450, 0), (900, 200)])  # 6 in, 900 ft between manholes, a bend at 450 ft
    ny_frame([{"main_id": "M-1", "diameter_in": 6.0, "geometry": bent}]).to_file(path, layer="mains")
    ny_frame([{"outfall_id": "WWTP", "geometry": Point(930, 200)}]).to_file(path, layer="treatment_plants")
    result = CliRunner().invoke(main, ["network", "check", "--profile", str(profile), "--data", str(path), "--json"])
    assert result.exit_code == 0, result.output
    found = dict(enumerate(json.loads(result.stdout)))
    small = readable(next(d["message"] for d in found.values() if "6 in: below" in d["message"]))
    assert "below the design standard for new sewers (8 in, § 144-18B; section number derived)" in small
    spacing = readable(next(d["message"] for d in found.values() if "to the next manhole" in d["message"]))
    assert "more than the design standard for new sewers (400 ft, § 144-18K; section number derived)" in spacing
    bend = readable(next(d["message"] for d in found.values() if "change in alignment" in d["message"]))
    assert "the design standard for new sewers (§ 144-18K; section number derived) puts a manhole" in bend


def oak_cli(store, *args):
    result = CliRunner().invoke(main, ["plan", "--profile", "fort-plain", "--data", str(store), *map(str, args)])
    assert result.exit_code == 0, result.output
    return result


def test_a_plan_cites_its_settings_in_one_bracket_on_the_command_line_and_in_the_board_pdf(oak_store, tmp_path):
    proposed = tmp_path / "oak.geojson"
    ny_frame([{"geometry": LineString([(0, 0), (900, 0)])}]).to_file(proposed, driver="GeoJSON")
    pdf = tmp_path / "board.pdf"
    # A setting the user changed: "§ 144-17A (value set by the user) (profile setting)" as the section.
    given = ("--set", "design.manning_n=0.012", "--set", "design.max_test_section_ft=800")
    doc = json.loads(oak_cli(oak_store, "--proposed", proposed, "--diameter-in", 8, *given, "--json").stdout)
    capacity = next(c for c in doc["design_checks"] if c["check"] == "capacity")
    assert capacity["section"] == "§ 144-17A (value set by the user; profile setting)"  # the column: one bracket
    test = next(r for r in doc["requirements"] if r["requirement"] == "exfiltration_test")
    assert "(at most 800 ft, § 144-19B; value set by the user)" in readable(test["text"])
    oak_cli(oak_store, "--proposed", proposed, "--diameter-in", 8, *given, "--pdf", pdf)
    text = readable(" ".join(page.extract_text() for page in PdfReader(pdf).pages))
    assert "full-pipe capacity by Manning's equation (§ 144-17A; value set by the user; profile setting)" in text
    assert "capacity meets § 144-17A (value set by the user; profile setting)" in text  # the check table
    # The command line's check table, wide enough that rich does not fold the section column.
    args = ["plan", "--profile", "fort-plain", "--data", str(oak_store), "--proposed", str(proposed), "--diameter-in"]
    table = CliRunner().invoke(main, [*args, "8", *given], env={"COLUMNS": "250"})
    assert table.exit_code == 0, table.output
    assert "│ § 144-17A (value set by the user; profile setting) │" in table.stdout
    assert not FLAGS_SIDE_BY_SIDE.search(" ".join(table.stdout.split()))
    assert "is a majority (§ 144-17B): more than half" in text


def test_the_plan_panel_and_scenarios_page_get_their_citations_worded(oak_store, tmp_path):
    app = oak_app(oak_store, tmp_path)
    client = app.test_client()
    doc = evaluate(client, csrf(client), name="Worded", save=True, replace=True)
    by = {c["check"]: c for c in doc["design_checks"]}
    assert by["capacity"]["cited"] == "(§ 144-17A; profile setting)"
    assert by["connection"]["cited"] == "(snap tolerance; profile setting)"
    assert doc["petition"]["cited"] == "(§ 144-17B)"
    assert all(readable(item["cited"]) for item in doc["design_checks"] + doc["requirements"])
    # A scenario saved before plans carried ``cited`` is worded as it is served, not shown "undefined".
    register = Register(app.config["REGISTER"], store=str(oak_store))
    saved = next(p for p in register.saved_plans() if p["name"] == "Worded")
    older = saved["result"] | {
        "design_checks": [{k: v for k, v in c.items() if k != "cited"} for c in saved["result"]["design_checks"]],
        "requirements": [{k: v for k, v in r.items() if k != "cited"} for r in saved["result"]["requirements"]],
        "petition": {k: v for k, v in saved["result"]["petition"].items() if k != "cited"},
    }
    keep = ("profile", "diameter_in", "crs")
    register.save_plan("Older", wkt=saved["geometry_wkt"], result=older, replace=True, **{k: saved[k] for k in keep})
    reopened = client.get("/plans/Older.json").get_json()
    assert {c["check"]: c["cited"] for c in reopened["design_checks"]} == {k: c["cited"] for k, c in by.items()}
    assert reopened["petition"]["cited"] == "(§ 144-17B)"
    page = client.get("/plans?compare=Worded").get_data(as_text=True)
    assert "meets (§ 144-17A; profile setting)" in page and "(profile setting)" not in page


@pytest.mark.browser
def test_plan_results_and_subdivision_labels_in_chromium_nest_no_bracket(oak_store, browser, tmp_path):
    from selenium.webdriver.common.by import By

    town = tmp_path / "town.gpkg"
    layers = {name: gpd.read_file(oak_store, layer=name) for name in ("parcels", "mains", "manholes", "streets")}
    layers["treatment_plants"] = gpd.read_file(oak_store, layer="treatment_plants")
    layers["subdivisions"] = ny_frame([{"subdivision_id": "S-1", "units": 20, "geometry": box(100, 200, 800, 700)}])
    write_layers(str(town), layers)
    done = CliRunner().invoke(main, ["analyze", "--profile", "fort-plain", "--data", str(town), "--out", str(town)])
    assert done.exit_code == 0, done.output
    app = oak_app(town, tmp_path)
    with serving(app) as url:
        open_map(browser, url)
        # Leaflet fades a permanent label in (opacity 0 at first, which WebDriver reads as no text), and the layer
        # is drawn again when the map settles: the label is read once it shows.
        shown = wait_for(
            browser, lambda: [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".subdivision-label") if e.text]
        )
        assert readable(shown[0]) == "S-1: must build sewers (§ 144-21; section number derived)"
        browser.execute_script(
            "document.getElementById('plan-streets').value = 'Oak St';"
            "document.getElementById('plan-streets').dispatchEvent(new Event('input'));"
        )
        browser.find_element(By.ID, "plan-evaluate").click()
        output = browser.find_element(By.ID, "plan-result")
        wait_for(browser, lambda: "Newly required to connect" in output.text)
        text = readable(output.text)
        assert "Capacity downstream: meets (§ 144-17A; profile setting)." in text
        assert "Connection to the existing sewer: meets (snap tolerance; profile setting)." in text
        assert "Petition (§ 144-17B):" in text and "undefined" not in text


def test_no_output_anywhere_prints_two_flags_in_two_brackets(tmp_path):
    """The sample village with values set whose sections were counted (so a citation carries two flags), through
    every command that prints or writes a section: their tables, files and the board's PDF."""
    from layers.sample import sample_town

    town = tmp_path / "town.gpkg"
    write_layers(str(town), sample_town(300))
    given = [
        *("--set", "mandate.distance_ft=120", "--set", "mandate.measured_from=parcel_boundary"),
        *("--set", "buildings.units_per_lateral=3", "--set", "discharges.flow_review_gpd=10000"),
    ]
    base = ["--profile", "fort-plain", "--data", str(town), *given]
    outputs: list[str] = []

    def run(*args):
        result = CliRunner().invoke(main, [*args[:1], *base, *map(str, args[1:])], env={"COLUMNS": "250"})
        assert result.exit_code == 0, result.output
        outputs.append(result.stdout)
        return result

    for command, out in (("duties", "duties.csv"), ("buildings", "buildings.csv")):
        run(command, "--out", tmp_path / out)
        outputs.append((tmp_path / out).read_text(encoding="utf-8-sig"))
    run("analyze", "--json")
    pdf = tmp_path / "board.pdf"
    plan = ("plan", "--streets-run", "Hancock Rd", "--diameter-in", 8, "--set", "design.manning_n=0.012")
    run(*plan, "--pdf", pdf)
    run(*plan, "--json")
    outputs.append(" ".join(page.extract_text() for page in PdfReader(pdf).pages))
    text = " ".join(" ".join(outputs).split())
    # The flags a citation of two came to carry, each citation in one bracket.
    for both in ("(section number derived; value set by the user)", "(value set by the user; profile setting)"):
        assert both in text, both
    found = [text[max(0, m.start() - 60) : m.end() + 20] for m in FLAGS_SIDE_BY_SIDE.finditer(text)]
    assert not found, found
    assert "§ 144-25A, section number derived and value set by the user; § 144-25A" not in text


def test_a_scenario_saved_with_two_brackets_is_printed_with_one_on_the_board_pdf(oak_store, tmp_path):
    """A scenario saved before citations took one bracket: the board's check table reads it in one."""
    from layers.board import write_plan_summary

    proposed = tmp_path / "oak.geojson"
    ny_frame([{"geometry": LineString([(0, 0), (900, 0)])}]).to_file(proposed, driver="GeoJSON")
    doc = json.loads(oak_cli(oak_store, "--proposed", proposed, "--diameter-in", 8, "--json").stdout)
    for item in doc["design_checks"] + doc["requirements"]:
        item["section"] = item["section"].replace("; ", ") (")  # as an earlier version stored it
    assert "snap tolerance (profile setting)" in {c["section"] for c in doc["design_checks"]}
    doc["design_checks"][0]["section"] = "§ 144-18B (section number derived) (value set by the user)"
    line = LineString([(0, 0), (900, 0)])
    layers = {name: gpd.read_file(oak_store, layer=name) for name in ("parcels", "streets", "mains", "manholes")}
    path = write_plan_summary(tmp_path / "old.pdf", "Old", doc, profile=load_profile("fort-plain"), line=line, **layers)
    text = readable(" ".join(page.extract_text() for page in PdfReader(path).pages))
    assert "min diameter meets § 144-18B (section number derived; value set by the user)" in text


def test_a_plans_connection_check_says_when_the_user_set_the_snap_tolerance(oak_store, tmp_path):
    """`--set network.snap_tolerance_ft=2`: the connection check's message used the 2 ft, its section still read
    "snap tolerance (profile setting)" as if the profile's value had decided."""
    proposed = tmp_path / "oak.geojson"
    ny_frame([{"geometry": LineString([(0, 0), (900, 0)])}]).to_file(proposed, driver="GeoJSON")

    def connection(*given):
        doc = json.loads(oak_cli(oak_store, "--proposed", proposed, "--diameter-in", 8, *given, "--json").stdout)
        return next(c["section"] for c in doc["design_checks"] if c["check"] == "connection")

    assert connection() == "snap tolerance (profile setting)"
    set_by_user = "snap tolerance (value set by the user; profile setting)"
    assert connection("--set", "network.snap_tolerance_ft=2") == set_by_user


def as_stored_before_one_bracket(path) -> dict[str, str]:
    """Write the citations of ``path``'s results as a store analysed before citations took one bracket holds them;
    returns the parcel ID of a parcel whose further duties carry two flags, and the building ID of a finding."""
    parcels = gpd.read_file(path, layer="parcel_results")
    parcels["section"] = "§ 144-4 (value set by the user) (profile setting)"
    duties = parcels["duties_section"].fillna("").str.endswith("§ 144-25A (section number derived)")
    assert duties.any()
    parcels.loc[duties, "duties_section"] += " (value set by the user)"
    parcels.to_file(path, layer="parcel_results", driver="GPKG")
    buildings = gpd.read_file(path, layer="building_results")
    found = buildings["section"].fillna("") != ""
    buildings.loc[found, "section"] += " (profile setting)"
    buildings.to_file(path, layer="building_results", driver="GPKG")
    return {
        "parcel": str(parcels.loc[duties, "parcel_id"].iloc[0]),
        "building": str(buildings.loc[found, "building_id"].iloc[0]),
    }


def test_a_store_analysed_before_one_bracket_is_shown_and_downloaded_with_one(store, tmp_path):
    """Its stored section columns, worded as they are read: the popup, the building's details, the downloads."""
    import shutil

    from tests.conftest import Auth, make_app

    old = tmp_path / "old.gpkg"
    shutil.copy(store, old)
    ids = as_stored_before_one_bracket(old)
    app = make_app(old, tmp_path)
    client = app.test_client()
    auth = Auth(app, client)
    auth.add()
    auth.login()
    found = client.get("/api/parcel", query_string={"id": ids["parcel"]}).get_json()
    assert found["parcel"]["properties"]["section"] == "§ 144-4 (value set by the user; profile setting)"
    rows = dict(found["rows"])
    assert rows["Their sections"].endswith("§ 144-25A (section number derived; value set by the user)")
    building = client.get("/api/building", query_string={"id": ids["building"]}).get_json()["building"]
    assert building["properties"]["section"].endswith("(section number derived; profile setting)")
    for fmt in ("csv", "geojson"):
        text = client.get(f"/api/results.{fmt}").get_data(as_text=True)
        assert "(value set by the user; profile setting)" in text
        assert not FLAGS_SIDE_BY_SIDE.search(text), fmt


def test_a_store_worded_on_reading_words_each_distinct_section_once(store, tmp_path, monkeypatch):
    """A million parcels hold a handful of sections: each is worded once, not once a row (the command line's read
    of a store's results, ``read_results``, words them as the map does)."""
    import shutil

    import layers.store
    from layers.store import read_results

    old = tmp_path / "old.gpkg"
    shutil.copy(store, old)
    as_stored_before_one_bracket(old)
    worded: list[str] = []

    def counted(citations):
        worded.append("; ".join(citations))
        return joined_citations(citations)

    monkeypatch.setattr(layers.store, "joined_citations", counted, raising=False)
    results = read_results(old)
    columns = [results["section"], results["duties_section"]]
    assert len(worded) == sum(c.nunique() for c in columns) < len(results) / 10
    assert set(results["section"]) == {"§ 144-4 (value set by the user; profile setting)"}
    assert not any(FLAGS_SIDE_BY_SIDE.search(s) for c in columns for s in c.dropna())
