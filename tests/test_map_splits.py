"""The map says where the flow divides on a trace, and what a sewershed leaves to where its traces go, in the words
``sewerplan trace`` prints.

The sample village with an overflow added: M-OVER leaves MH-25 on Main St, at the invert as every GIS main is, and
runs 2,580 ft (south, then west) to the outfall CSO-1, while Main St goes on 1,600 ft to the plant. Traces from
above MH-25 divide there and follow M-7 toward the plant (the shorter way); CSO-1's sewershed counts nothing above
MH-25 and names M-OVER.
"""

from __future__ import annotations

import json

import geopandas as gpd
import pandas as pd
import pytest
import shapely
from click.testing import CliRunner

from gisapp.cli import main
from layers.sample import sample_town
from layers.write import write_layers
from tests.conftest import DATA, make_app, serving
from tests.test_network_splits import REAL_SPLITS, WET_WELL_OVERFLOW
from tests.test_web import open_map, shot, wait_for
from tests.test_web_map import SET_VIEW, click_at, click_points, popup_text, settle

LINE = "The flow divides at MH-25; this trace follows M-7 to MH-29."
NOT_COUNTED = (
    "CSO-1 also takes flow from MH-25 by M-OVER, the other way where the flow divides: traces from MH-25 follow M-7 "
    "to MH-29 and on to MH-45, so what drains to MH-25"
)


def cli(*args) -> str:
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return " ".join(result.stdout.split())  # the console wraps its lines


@pytest.fixture(scope="module")
def overflow_store(tmp_path_factory):
    town = sample_town(300)
    mains, manholes = town["mains"], town["manholes"]
    over = mains[mains["main_id"] == "M-7"].copy()
    over[["main_id", "from_manhole", "to_manhole", "diameter_in", "us_invert_ft", "ds_invert_ft"]] = [
        "M-OVER",
        "MH-25",
        "CSO-1",
        12.0,
        407.42,
        400.0,
    ]
    line = shapely.LineString([(458800, 1490180), (458800, 1489400), (457000, 1489400)])
    over = over.set_geometry(gpd.GeoSeries([line], index=over.index, crs=mains.crs))
    town["mains"] = pd.concat([mains, over], ignore_index=True)
    outfall = manholes.iloc[[0]].copy()
    outfall[["manhole_id", "structure", "invert_ft"]] = ["CSO-1", "outfall", 400.0]
    outfall = outfall.set_geometry(gpd.GeoSeries([shapely.Point(457000, 1489400)], index=outfall.index, crs=mains.crs))
    town["manholes"] = pd.concat([manholes, outfall], ignore_index=True)
    path = tmp_path_factory.mktemp("overflow") / "town.gpkg"
    write_layers(str(path), town)
    cli("analyze", "--profile", "fort-plain", "--data", path, "--out", path)
    return path


def _parcels_on(store, mains) -> list[str]:
    results = gpd.read_file(store, layer="parcel_results")
    return results[results["main_id"].isin(mains)].sort_values("parcel_id")["parcel_id"].tolist()


@pytest.fixture(scope="module")
def client(overflow_store, tmp_path_factory):
    return make_app(overflow_store, tmp_path_factory.mktemp("overflow-app")).test_client()


def test_the_map_trace_gives_each_split_a_line_of_the_clis_sentence(overflow_store, client):
    above = _parcels_on(overflow_store, ["M-1", "M-2", "M-3"])[0]
    doc = client.get("/api/trace", query_string={"parcel": above}).get_json()
    assert doc["outfall"] == "MH-45" and "M-OVER" not in doc["mains"], doc
    (split,) = doc["splits"]
    assert split["node"] == "MH-25" and split["followed"] == "M-7"
    assert split["line"] == LINE
    # The CLI prints the whole sentence; the map's line is its opening, word for word.
    printed = cli("trace", "--data", overflow_store, "--parcel", above)
    assert split["reason"] in printed and split["reason"].startswith(LINE[:-1] + ", the shortest way"), printed
    assert "M-OVER to CSO-1 2,580 ft" in split["reason"]
    # Below the split, nothing divides: nothing new.
    below = _parcels_on(overflow_store, ["M-8", "M-9"])[0]
    assert client.get("/api/trace", query_string={"parcel": below}).get_json()["splits"] == []


def test_the_map_sewershed_names_the_overflow_counted_where_its_traces_go(overflow_store, client):
    doc = client.get("/api/sewershed", query_string={"manhole": "CSO-1"}).get_json()
    (other,) = doc["not_counted"]
    assert (other["main"], other["from"], other["followed"]) == ("M-OVER", "MH-25", "M-7")
    assert other["reason"].startswith(NOT_COUNTED) and other["reason"].endswith("is counted there, not here.")
    printed = cli("trace", "--data", overflow_store, "--manhole", "CSO-1", "--upstream")
    assert other["reason"] in printed
    assert client.get("/api/sewershed", query_string={"manhole": "MH-45"}).get_json()["not_counted"] == []


@pytest.mark.parametrize("name", [n for n, found in REAL_SPLITS.items() if found])
def test_each_split_of_the_real_models_has_a_line_that_opens_its_sentence(name):
    # Every divide of the real models, as a trace from it gives it: the line is the sentence's opening (the node and
    # the link followed to the next node), never the whole sentence left as it is.
    for node, followed in REAL_SPLITS[name].items():
        doc = json.loads(cli_json("trace", "--data", DATA / name, "--data-crs", "local", "--manhole", node, "--json"))
        split = doc["splits"][0]
        line = split["line"]
        ahead = doc["path"][1]
        assert line == f"The flow divides at {node}; this trace follows {followed} to {ahead}.", split["reason"]
        assert split["reason"].startswith(line[:-1]) and len(line) < len(split["reason"])


def test_a_wet_wells_split_line(tmp_path):
    path = tmp_path / "ww.inp"
    path.write_text(WET_WELL_OVERFLOW)
    doc = json.loads(cli_json("trace", "--data", path, "--data-crs", "local", "--manhole", "MH1", "--json"))
    (split,) = doc["splits"]
    assert split["line"] == "The flow divides at WW; this trace follows P1 to MH3."
    assert split["reason"].startswith(split["line"][:-1])


def cli_json(*args) -> str:
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.browser
def test_the_trace_popup_shows_the_split_and_the_sewershed_the_overflow(overflow_store, browser, tmp_path):
    """A clerk traces a house on Main St to the plant: the popup says the flow divides at MH-25 (the line, and the
    whole sentence behind "why"); the overflow outfall's popup says what drains above MH-25 is counted there."""
    from selenium.webdriver.common.by import By

    target = _parcels_on(overflow_store, ["M-1", "M-2", "M-3"])[0]
    points = click_points(overflow_store, [target])
    with serving(make_app(overflow_store, tmp_path)) as url:
        open_map(browser, url)
        browser.execute_script(SET_VIEW, *points[target], 18)
        settle(browser)
        click_at(browser, *points[target])
        popup_text(browser, target)
        browser.execute_script(
            "arguments[0].click()", browser.find_element(By.CSS_SELECTOR, ".parcel-popup .trace-button")
        )
        item = wait_for(browser, lambda: browser.find_elements(By.CSS_SELECTOR, ".parcel-popup .trace-splits li"), 90)
        assert len(item) == 1
        text = item[0].get_attribute("textContent")
        assert text.startswith(LINE) and "the shortest way to an outfall" in text  # the sentence, behind "why"
        why = item[0].find_element(By.CSS_SELECTOR, "details")
        assert why.get_attribute("open") is None and why.find_element(By.CSS_SELECTOR, "summary").text == "why"
        assert "Control manhole" in browser.find_element(By.CSS_SELECTOR, ".trace-result").get_attribute("textContent")
        shot(browser, "trace-split")
        why.find_element(By.CSS_SELECTOR, "summary").click()
        sentence = why.find_element(By.CSS_SELECTOR, "span")
        wait_for(browser, lambda: sentence.is_displayed() and "M-OVER to CSO-1 2,580 ft" in sentence.text)
        shot(browser, "trace-split-why")
        # The overflow outfall's popup.
        lat, lon = gpd.GeoSeries([shapely.Point(457000, 1489400)], crs=2260).to_crs(4326).iloc[0].coords[0][::-1]
        browser.execute_script(SET_VIEW, lat, lon, 19)
        settle(browser)
        click_at(browser, lat, lon)
        said = wait_for(
            browser,
            lambda: browser.execute_script(
                "const p = document.querySelector('.sewershed-popup .not-counted'); return p && p.textContent;"
            ),
            60,
        )
        assert said.startswith(NOT_COUNTED), said
        shot(browser, "sewershed-not-counted")
