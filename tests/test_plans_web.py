"""The plans page and the plan panel: evaluate, save, compare side by side, export, reopen on the map, delete.

With the Flask test client on the hand-made Oak St town (tests/test_plans.py), and in a real headless Chromium.
"""

from __future__ import annotations

import csv
import json
import re
from urllib.parse import quote

import geopandas as gpd
import numpy as np
import pytest
import shapely
from click.testing import CliRunner
from pypdf import PdfReader
from shapely.geometry import LineString, MultiLineString, Point

from analysis.profiles import load_profile
from gisapp.cli import main
from gisapp.users import add_user
from layers.register import Register, RegisterMissingError
from layers.write import write_layers
from tests.conftest import csrf, make_app, ny_frame, serving
from tests.test_plans import M9, layout
from tests.test_web import open_map, shot, wait_for

ODD_NAME = "Oak St #2 ?50% six"  # no "/": refused in a name (test_a_name_that_reads_as_folders_is_refused)
HOSTILE = "<img src=x onerror=alert(1)>"
FP_VERSION = load_profile("fort-plain").version


@pytest.fixture(scope="module")
def oak_store(tmp_path_factory):
    return analysed_oak_town(tmp_path_factory.mktemp("oak") / "town.gpkg")


def analysed_oak_town(path):
    write_layers(str(path), layout(shift=(1, 1)))
    result = CliRunner().invoke(main, ["analyze", "--profile", "fort-plain", "--data", str(path), "--out", str(path)])
    assert result.exit_code == 0, result.output
    return path


def oak_app(store, tmp_path):
    """The web app on the shared Oak St store, with the one register that store keeps its notices and plans in."""
    return make_app(store, tmp_path, REGISTER=str(store.parent / "register.sqlite"))


def oak_line() -> list[list[float]]:
    line = ny_frame([{"geometry": LineString([(0, 0), (900, 0)])}]).to_crs(4326).geometry.iloc[0]
    return [list(c) for c in line.coords]


def evaluate(client, token, **body):
    body = {"geometry": {"type": "LineString", "coordinates": oak_line()}, "diameter_in": 8} | body
    response = client.post("/plans/evaluate", json=body, headers={"X-CSRF-Token": token})
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_json()


def test_evaluate_gives_verdicts_requirements_sections_and_the_map(oak_store, tmp_path):
    client = oak_app(oak_store, tmp_path).test_client()
    token = csrf(client)
    doc = evaluate(client, token, material="PVC", name="Oak")
    assert doc["newly_mandated"] == ["L1", "L3", "L5", "L6", "L8"] and doc["vacant_benefiting"] == ["L4", "L7"]
    verdicts = {c["check"]: c["verdict"] for c in doc["design_checks"]}
    assert verdicts["pipe_material"] == "for the engineer" and verdicts["connection"] == "meets"
    assert [s["allowance_gpd"] for s in doc["test_sections"]] == [pytest.approx(149.9, abs=0.06)]
    assert doc["map"]["manholes"][0]["existing"] and doc["map"]["manholes"][0]["id"] == "A"
    assert len(doc["map"]["parcels"]) == 5 and len(doc["map"]["vacant"]) == 2 and doc["map"]["connecting"] is None
    bad = client.post(
        "/plans/evaluate",
        json={"geometry": {"type": "LineString", "coordinates": oak_line()}, "diameter_in": -8},
        headers={"X-CSRF-Token": token},
    )
    assert bad.status_code == 400 and "positive" in bad.get_json()["error"]["message"]
    one_point = client.post(  # GEOS's "point array must contain 0 or >1 elements" was the answer
        "/plans/evaluate",
        json={"geometry": {"type": "LineString", "coordinates": oak_line()[:1]}, "diameter_in": 8},
        headers={"X-CSRF-Token": token},
    )
    said = one_point.get_json()["error"]["message"]
    assert one_point.status_code == 400 and "The drawn main is not a line of at least two points" in said, said
    for given in (True, "8 in", [8]):  # true was float(True), a 1-inch pipe
        bad = client.post(
            "/plans/evaluate",
            json={"geometry": {"type": "LineString", "coordinates": oak_line()}, "diameter_in": given},
            headers={"X-CSRF-Token": token},
        )
        assert bad.status_code == 400 and "number of inches" in bad.get_json()["error"]["message"], given
    # A line drawn with an absurd vertex, or out past where the measuring CRS is used: a sentence, never a 500.
    start = oak_line()[0]
    for far in ([1e308, 1e308], [-60.0, 10.0], [float("nan"), 42.9]):
        odd = client.post(
            "/plans/evaluate",
            data=json.dumps({"geometry": {"type": "LineString", "coordinates": [far, start]}, "diameter_in": 8}),
            content_type="application/json",
            headers={"X-CSRF-Token": token},
        )
        assert odd.status_code == 400, (far, odd.status_code, odd.get_data(as_text=True)[:300])
        assert "the drawn main" in odd.get_json()["error"]["message"].lower()


def test_a_main_drawn_on_past_its_manhole_is_saved_and_mapped_as_laid(oak_store, tmp_path):
    """The map and the saved scenario hold the main from manhole A, and the 180 ft drawn past it apart, not laid."""
    app = oak_app(oak_store, tmp_path)
    client = app.test_client()
    token = csrf(client)
    past = ny_frame([{"geometry": LineString([(0, -180), (0, 0), (900, 0)])}]).to_crs(4326).geometry.iloc[0]
    doc = evaluate(
        client,
        token,
        geometry={"type": "LineString", "coordinates": [list(c) for c in past.coords]},
        name="past A",
        save=True,
    )
    assert doc["not_laid"]["length_ft"] == 180.0 and doc["length_ft"] == 900.0 and doc["connecting_main"] is None
    assert len(doc["map"]["line"]["coordinates"]) == 2 and len(doc["map"]["not_laid"]["coordinates"]) == 2
    saved = Register(str(oak_store.parent / "register.sqlite"), create=False).saved_plan("past A")
    assert shapely.from_wkt(saved["geometry_wkt"]).length == pytest.approx(900.0, abs=0.01)  # the main as laid
    client.post("/plans/delete", data={"name": "past A", "csrf_token": token})


def test_a_reopened_scenario_evaluated_again_as_drawn_still_says_what_is_not_laid(oak_store, tmp_path):
    """Reopened, the map had the main as laid alone to evaluate again: the plan it gave (and saved over the
    scenario) no longer said the 180 ft drawn past A were not laid. The scenario's JSON gives the line as drawn."""
    client = oak_app(oak_store, tmp_path).test_client()
    token = csrf(client)
    past = ny_frame([{"geometry": LineString([(0, -180), (0, 0), (900, 0)])}]).to_crs(4326).geometry.iloc[0]
    drawn = {"type": "LineString", "coordinates": [list(c) for c in past.coords]}
    first = evaluate(client, token, geometry=drawn, name="past A again", save=True)
    reopened = client.get(f"/plans/{quote('past A again')}.json").get_json()
    assert reopened["not_laid"]["length_ft"] == 180.0  # shown as saved
    assert len(reopened["map"]["drawn"]["coordinates"]) == 3
    again = evaluate(client, token, geometry=reopened["map"]["drawn"], name="past A again", save=True, replace=True)
    assert again["not_laid"]["length_ft"] == 180.0 and again["not_laid"]["direction"] == "south"
    assert (again["length_ft"], again["cost"]) == (first["length_ft"], first["cost"])
    assert client.get(f"/plans/{quote('past A again')}.json").get_json()["not_laid"]["length_ft"] == 180.0
    # A plan with nothing left out is drawn as laid.
    assert evaluate(client, token)["map"]["drawn"] == evaluate(client, token)["map"]["line"]
    client.post("/plans/delete", data={"name": "past A again", "csrf_token": token})


def test_a_main_drawn_far_from_the_town_is_refused(oak_store, tmp_path):
    client = oak_app(oak_store, tmp_path).test_client()
    far = ny_frame([{"geometry": LineString([(264_000, 0), (264_900, 0)])}]).to_crs(4326).geometry.iloc[0]
    refused = client.post(
        "/plans/evaluate",
        json={"geometry": {"type": "LineString", "coordinates": [list(c) for c in far.coords]}, "diameter_in": 8},
        headers={"X-CSRF-Token": csrf(client)},
    )
    assert refused.status_code == 400, refused.get_data(as_text=True)[:300]
    message = refused.get_json()["error"]["message"]
    assert message.startswith("The drawn main lies 49.8 miles from the town's parcels and mains")
    assert "CRS" not in message  # a line drawn on the map has no CRS to fix


def qgis_file(path, crs="EPSG:2260"):
    """The Oak St main as QGIS saves a line layer: a MultiLineString, in the layer's CRS (here the town's feet)."""
    main = ny_frame([{"name": "Oak St", "geometry": MultiLineString([[(0, 0), (900, 0)]])}]).to_crs(crs)
    main.to_file(path, driver="GeoJSON")
    return path


@pytest.mark.parametrize("crs", ["EPSG:2260", "EPSG:4326"])
def test_a_loaded_file_is_read_as_the_cli_reads_it(oak_store, tmp_path, crs):
    """The page read a file as a LineString in degrees: QGIS's MultiLineString was "no line", and a file in the
    town's state plane CRS was drawn at latitude 1,490,000."""
    client = oak_app(oak_store, tmp_path).test_client()
    token = csrf(client)
    text = qgis_file(tmp_path / "oak.geojson", crs).read_text(encoding="utf-8")
    read = client.post("/plans/line", json={"name": "oak.geojson", "text": text}, headers={"X-CSRF-Token": token})
    assert read.status_code == 200, read.get_data(as_text=True)[:300]
    drawn = read.get_json()["line"]
    assert drawn["type"] == "LineString"
    np.testing.assert_allclose(drawn["coordinates"], oak_line(), atol=1e-7)  # back in degrees, where it lies
    doc = evaluate(client, token, geometry=drawn)
    assert doc["newly_mandated"] == ["L1", "L3", "L5", "L6", "L8"]  # the same answer as the CLI's


def test_a_plans_own_export_loads_as_its_proposed_main_alone(oak_store, tmp_path):
    """The plan panel's load of a plan export (`sewerplan plan --out plan.geojson`) drew and evaluated its proposed
    main merged with its connecting main: the same plan came back longer."""
    short = tmp_path / "short.geojson"
    ny_frame([{"geometry": LineString([(300, 0), (900, 0)])}]).to_file(short, driver="GeoJSON")
    export = tmp_path / "plan.geojson"
    args = ["plan", "--profile", "fort-plain", "--data", str(oak_store), "--diameter-in", "8", "--proposed", str(short)]
    written = CliRunner().invoke(main, [*args, "--out", str(export), "--json"])
    assert written.exit_code == 0, written.output
    before = json.loads(written.stdout)
    assert before["connecting_main"] is not None
    client = oak_app(oak_store, tmp_path).test_client()
    token = csrf(client)
    text = export.read_text(encoding="utf-8")
    read = client.post("/plans/line", json={"name": "plan.geojson", "text": text}, headers={"X-CSRF-Token": token})
    assert read.status_code == 200, read.get_data(as_text=True)[:300]
    assert read.get_json()["note"].startswith("plan.geojson is a plan's export: its proposed main alone was read")
    doc = evaluate(client, token, geometry=read.get_json()["line"])
    assert doc["drawn_length_ft"] == pytest.approx(before["drawn_length_ft"], abs=1e-3)
    assert doc["connecting_main"]["length_ft"] == before["connecting_main"]["length_ft"]
    assert doc["cost"]["total"] == before["cost"]["total"]
    plain = qgis_file(tmp_path / "oak.geojson").read_text(encoding="utf-8")
    read = client.post("/plans/line", json={"name": "oak.geojson", "text": plain}, headers={"X-CSRF-Token": token})
    assert read.get_json()["note"] is None  # any other file, as it was


def test_a_loaded_file_in_the_wrong_crs_is_given_its_crs_on_the_panel(oak_store, tmp_path):
    """A file in the town's feet that declares no CRS is read as degrees and refused. The refusal told the planner
    to fill in the proposed layer's CRS on an upload's column-mapping page, which a plan has none of: a dead end.
    It now names the panel's "CRS of the file" field, and the file loads with it, as --layer-crs proposed= does."""
    client = oak_app(oak_store, tmp_path).test_client()
    token = csrf(client)
    doc = json.loads(qgis_file(tmp_path / "oak.geojson").read_text(encoding="utf-8"))
    doc.pop("crs", None)  # as a hand-made or older file: GeoJSON without a crs member is longitude/latitude
    text = json.dumps(doc)
    refused = client.post("/plans/line", json={"name": "oak.geojson", "text": text}, headers={"X-CSRF-Token": token})
    assert refused.status_code == 422
    message = refused.get_json()["error"]["message"]
    assert "declares WGS 84 (degrees) but its coordinates lie near" in message
    panel = 'Fill in "CRS of the file" beside "or load" in the map\'s "Plan an extension" panel'
    assert f"{panel} with EPSG:2260, then load the file again." in message
    assert "column-mapping page" not in message
    read = client.post(
        "/plans/line", json={"name": "oak.geojson", "text": text, "crs": "EPSG:2260"}, headers={"X-CSRF-Token": token}
    )
    assert read.status_code == 200, read.get_data(as_text=True)[:300]
    np.testing.assert_allclose(read.get_json()["line"]["coordinates"], oak_line(), atol=1e-9)


def test_a_loaded_file_that_is_no_main_is_refused_with_its_name(oak_store, tmp_path):
    client = oak_app(oak_store, tmp_path).test_client()
    token = csrf(client)

    def load(name, text):
        return client.post("/plans/line", json={"name": name, "text": text}, headers={"X-CSRF-Token": token})

    far = ny_frame([{"geometry": LineString([(264_000, 0), (264_900, 0)])}])
    far.to_file(tmp_path / "far.geojson", driver="GeoJSON")
    for name, text, said in (
        ("far.geojson", (tmp_path / "far.geojson").read_text(encoding="utf-8"), "(far.geojson) lies 49.8 miles"),
        ("empty.geojson", "  ", "empty.geojson is empty: load the GeoJSON file of the proposed main."),
        ("oak.kml", "<kml/>", "oak.kml is not GeoJSON (a JSON object)"),
    ):
        refused = load(name, text)
        assert refused.status_code == 400, (name, refused.get_data(as_text=True)[:300])
        message = refused.get_json()["error"]["message"]
        assert said in message and "sewerplan-line-" not in message  # named as the planner knows it


def test_plans_page_side_by_side_compare_export_reopen_delete(oak_store, tmp_path):
    app = oak_app(oak_store, tmp_path)
    client = app.test_client()
    token = csrf(client)
    # The store's one register is shared with the module's other tests: a scenario they saved is replaced.
    evaluate(client, token, name="Eight", save=True, replace=True)
    evaluate(client, token, name=ODD_NAME, diameter_in=6, save=True, replace=True)
    evaluate(client, token, name=HOSTILE, save=True, replace=True)
    page = client.get("/plans").get_data(as_text=True)
    assert page.count('class="scenario"') == 3 and HOSTILE not in page  # one column each; names escaped
    for measure in ("cost", "newly_mandated", "septic_retired", "signatures_needed", "cost_per_unit"):
        assert f'data-measure="{measure}"' in page
    assert 'data-check="min_diameter"' in page and "does not meet (§ 144-18B)" in page
    assert "$26,900.00" in page  # cost per newly connected living unit: $269,000 / 10
    one = client.get("/plans?compare=Eight").get_data(as_text=True)
    assert one.count('class="scenario"') == 1
    table = client.get("/plans/compare.csv?compare=Eight&compare=" + quote(ODD_NAME))
    assert table.data.startswith(b"\xef\xbb\xbf")  # marked UTF-8, as every CSV sewerplan writes
    rows = list(csv.reader(table.data.decode("utf-8-sig").splitlines()))
    assert table.mimetype == "text/csv" and rows[0] == ["measure", "Eight", ODD_NAME]
    assert {r[0]: r[1:] for r in rows}["Septic systems retired"] == ["5", "5"]

    reopened = client.get(f"/plans/{quote(ODD_NAME)}.json").get_json()
    assert reopened["name"] == ODD_NAME and reopened["diameter_in"] == 6 and len(reopened["map"]["manholes"]) == 4
    assert reopened["map"]["line"]["type"] == "LineString"
    pdf = client.get(f"/plans/{quote(ODD_NAME)}.pdf")
    assert pdf.status_code == 200 and pdf.data[:4] == b"%PDF"
    (tmp_path / "odd.pdf").write_bytes(pdf.data)
    text = " ".join(" ".join(p.extract_text().split()) for p in PdfReader(tmp_path / "odd.pdf").pages)
    assert "by local planner" in text and "6-inch pipe is below the 8-inch minimum" in text
    gpkg = client.get(f"/plans/{quote(ODD_NAME)}.gpkg")
    (tmp_path / "odd.gpkg").write_bytes(gpkg.data)
    assert "benefiting_parcels" in set(gpd.list_layers(tmp_path / "odd.gpkg")["name"])
    assert client.get("/plans/nothing.json").status_code == 404
    assert client.get("/plans/Eight.csv").status_code == 404  # not an export format

    assert client.post("/plans/delete", data={"name": "Eight"}).status_code == 400  # no CSRF token
    gone = client.post("/plans/delete", data={"name": ODD_NAME, "csrf_token": token})
    assert gone.status_code == 302
    after = client.get(gone.headers["Location"]).get_data(as_text=True)
    assert "Deleted scenario" in after and after.count('class="scenario"') == 2
    again = client.post("/plans/delete", data={"name": ODD_NAME, "csrf_token": token})
    assert again.status_code == 404


def test_viewers_see_scenarios_but_cannot_delete_them(oak_store, tmp_path):
    app = oak_app(oak_store, tmp_path)
    planner = app.test_client()
    evaluate(planner, csrf(planner), name="Eight", save=True, replace=True)
    add_user(app.config["USERS_DB"], "vera", "viewer", "viewer-password")
    viewer = app.test_client()
    token = csrf(viewer)
    viewer.post("/login", data={"name": "vera", "password": "viewer-password", "csrf_token": token})
    token = csrf(viewer)
    page = viewer.get("/plans").get_data(as_text=True)
    assert "Eight" in page and "delete-plan" not in page
    assert viewer.post("/plans/delete", data={"name": "Eight", "csrf_token": token}).status_code == 403
    assert viewer.get("/plans/Eight.json").status_code == 200


def test_looking_at_scenarios_never_creates_a_register(tmp_path):
    """A viewer opening /plans created the town's register where none existed; only saving a scenario does."""
    (tmp_path / "own").mkdir()
    own = analysed_oak_town(tmp_path / "own" / "town.gpkg")  # the shared store records the other tests' register
    client = make_app(own, tmp_path, REGISTER=None).test_client()
    token = csrf(client)
    assert client.get("/plans").status_code == 200 and client.get("/plans/compare.csv").status_code == 200
    assert client.get("/plans/Eight.json").status_code == 404
    assert client.post("/plans/delete", data={"name": "Eight", "csrf_token": token}).status_code == 404
    evaluate(client, token, name="Eight")  # evaluated, not saved
    with pytest.raises(RegisterMissingError):
        Register(store=str(own), create=False)
    evaluate(client, token, name="Eight", save=True)
    assert [p["name"] for p in Register(store=str(own)).saved_plans()] == ["Eight"]
    # A name with a line break was saved and could then never be opened by name (its page answered 404).
    body = {
        "geometry": {"type": "LineString", "coordinates": oak_line()},
        "diameter_in": 8,
        "name": "a\nb",
        "save": True,
    }
    refused = client.post("/plans/evaluate", json=body, headers={"X-CSRF-Token": token})
    assert refused.status_code == 400 and "one line of text" in refused.get_json()["error"]["message"]
    assert [p["name"] for p in Register(store=str(own)).saved_plans()] == ["Eight"]


def test_saving_over_a_saved_name_on_the_map_points_at_the_replace_box(oak_store, tmp_path):
    """The map's refusal told a planner to use the command line's --replace; it names the form's checkbox, as the
    command line names its flag (the same refusal, worded by each from its ``fix``)."""
    client = oak_app(oak_store, tmp_path).test_client()
    token = csrf(client)
    evaluate(client, token, name="Twice", save=True, replace=True)
    body = {"geometry": {"type": "LineString", "coordinates": oak_line()}, "diameter_in": 10, "name": "Twice"}
    refused = client.post("/plans/evaluate", json=body | {"save": True}, headers={"X-CSRF-Token": token})
    error = refused.get_json()["error"]
    assert refused.status_code == 400 and "'Twice' is saved already (8-inch main" in error["message"]
    assert 'Tick "replace the saved scenario of this name"' in error["message"] and "--" not in error["message"]
    assert error["fix"]["setting"] == "replace"


def _qgis_plan_loaded(browser, url: str, tmp_path):
    """The map's plan panel with a QGIS export of the Oak St line loaded, ready to evaluate; its output."""
    from selenium.webdriver.common.by import By

    open_map(browser, url)
    output = browser.find_element(By.ID, "plan-result")
    browser.find_element(By.ID, "plan-file").send_keys(str(qgis_file(tmp_path / "oak.geojson")))
    wait_for(browser, lambda: browser.find_element(By.ID, "plan-evaluate").is_enabled())
    return output


@pytest.mark.browser
def test_a_qgis_file_loads_on_the_map_and_evaluates_in_chromium(oak_store, browser, tmp_path):  # noqa: F811
    from selenium.webdriver.common.by import By

    app = oak_app(oak_store, tmp_path)
    with serving(app) as url:
        output = _qgis_plan_loaded(browser, url, tmp_path)
        assert output.text == ""
        (west, south), (east, north) = oak_line()[0], oak_line()[-1]
        lat, lon = browser.execute_script("const c = window.sewerplanMap.getCenter(); return [c.lat, c.lng];")
        assert south - 0.01 < lat < north + 0.01 and west - 0.01 < lon < east + 0.01  # on Oak St, not at the pole
        browser.find_element(By.ID, "plan-evaluate").click()
        wait_for(browser, lambda: "Newly required to connect" in output.text)
        assert "5 parcels" in output.text
        shot(browser, "plan-loaded-from-qgis")
        far = ny_frame([{"geometry": LineString([(264_000, 0), (264_900, 0)])}])
        far.to_file(tmp_path / "far.geojson", driver="GeoJSON")
        browser.find_element(By.ID, "plan-file").send_keys(str(tmp_path / "far.geojson"))
        wait_for(browser, lambda: "lies 49.8 miles from the town's parcels and mains" in output.text)
        # A file in the town's feet that declares no CRS: the refusal names the panel's field, and with it the
        # file loads on Oak St.
        doc = json.loads(qgis_file(tmp_path / "oak.geojson").read_text(encoding="utf-8"))
        doc.pop("crs", None)
        (tmp_path / "bare.geojson").write_text(json.dumps(doc), encoding="utf-8")
        browser.find_element(By.ID, "plan-file").send_keys(str(tmp_path / "bare.geojson"))
        wait_for(browser, lambda: 'Fill in "CRS of the file" beside "or load"' in output.text)
        # The refused file replaced nothing, and the panel says which line Evaluate would evaluate.
        assert "The main on the map is still the one from before this file: Evaluate evaluates that one." in output.text
        browser.find_element(By.ID, "plan-file-crs").send_keys("EPSG:2260")
        browser.find_element(By.ID, "plan-file").send_keys(str(tmp_path / "bare.geojson"))
        wait_for(browser, lambda: output.text == "")
        lat, lon = browser.execute_script("const c = window.sewerplanMap.getCenter(); return [c.lat, c.lng];")
        assert south - 0.01 < lat < north + 0.01 and west - 0.01 < lon < east + 0.01
        browser.find_element(By.ID, "plan-file-crs").clear()
        # A plan's own export: its proposed main alone is drawn, and the panel says so.
        export = tmp_path / "plan.geojson"
        ny_frame([{"geometry": LineString([(300, 0), (900, 0)])}]).to_file(tmp_path / "short.geojson")
        args = ["plan", "--profile", "fort-plain", "--data", str(oak_store), "--diameter-in", "8"]
        written = CliRunner().invoke(main, [*args, "--proposed", str(tmp_path / "short.geojson"), "--out", str(export)])
        assert written.exit_code == 0, written.output
        browser.find_element(By.ID, "plan-file").send_keys(str(export))
        wait_for(browser, lambda: "plan.geojson is a plan's export: its proposed main alone was read" in output.text)
        browser.find_element(By.ID, "plan-evaluate").click()
        wait_for(browser, lambda: "Newly required to connect" in output.text)
        assert "with a 300 ft connecting main to A" in output.text
        # A main drawn on 180 ft past manhole A, which it passes through: laid from A, and the rest said not laid.
        ny_frame([{"geometry": LineString([(0, -180), (0, 0), (900, 0)])}]).to_file(tmp_path / "past.geojson")
        browser.find_element(By.ID, "plan-file").send_keys(str(tmp_path / "past.geojson"))
        wait_for(browser, lambda: output.text == "")
        browser.find_element(By.ID, "plan-evaluate").click()
        wait_for(browser, lambda: "Newly required to connect" in output.text)
        assert "Not laid: the 180 ft drawn south of A, a second main draining into it" in output.text
        assert "connecting main" not in output.text.split("Newly required")[0]
        # Saved, then reopened (?plan=NAME) and evaluated again: from the line as drawn, so it still says so.
        client = app.test_client()
        past = ny_frame([{"geometry": LineString([(0, -180), (0, 0), (900, 0)])}]).to_crs(4326).geometry.iloc[0]
        drawn = {"type": "LineString", "coordinates": [list(c) for c in past.coords]}
        evaluate(client, csrf(client), geometry=drawn, name="past A reopened", save=True, replace=True)
        browser.get(f"{url}/?plan={quote('past A reopened')}")
        output = browser.find_element(By.ID, "plan-result")
        wait_for(browser, lambda: browser.find_element(By.ID, "plan-evaluate").is_enabled())
        browser.execute_script("arguments[0].textContent = '';", output)  # the saved plan, shown on reopening
        browser.find_element(By.ID, "plan-evaluate").click()
        wait_for(browser, lambda: "Newly required to connect" in output.text)
        assert "Not laid: the 180 ft drawn south of A" in output.text
        client.post("/plans/delete", data={"name": "past A reopened", "csrf_token": csrf(client)})


@pytest.mark.browser
def test_evaluate_double_clicked_evaluates_and_saves_once_in_chromium(oak_store, browser, tmp_path):  # noqa: F811
    """A double click on "Evaluate" sent two evaluations; with "save" ticked the second was refused as "saved
    already" (by the first) and its refusal replaced the saved plan in the panel."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    app = oak_app(oak_store, tmp_path)
    with serving(app) as url:
        output = _qgis_plan_loaded(browser, url, tmp_path)
        browser.execute_script(
            "const real = window.fetch; window.evaluations = {sent: 0, answered: 0};"
            "window.fetch = async (u, o) => { const mine = String(u).includes('/plans/evaluate');"
            " if (mine) window.evaluations.sent++;"
            " try { return await real(u, o); } finally { if (mine) window.evaluations.answered++; } };"
        )
        name = browser.find_element(By.ID, "plan-name")
        name.clear()
        name.send_keys("Clicked twice")
        browser.find_element(By.ID, "plan-save").click()
        ActionChains(browser).double_click(browser.find_element(By.ID, "plan-evaluate")).perform()
        counts = "return window.evaluations;"
        wait_for(browser, lambda: (c := browser.execute_script(counts))["sent"] and c["sent"] == c["answered"])
        wait_for(browser, lambda: "Newly required to connect" in output.text)
        assert browser.execute_script(counts)["sent"] == 1
        assert "saved already" not in output.text and "Clicked twice" in output.text
        assert browser.find_element(By.ID, "plan-evaluate").is_enabled()  # ready to evaluate again
    saved = Register(str(oak_store.parent / "register.sqlite")).saved_plans()
    assert [p["name"] for p in saved].count("Clicked twice") == 1


@pytest.mark.browser
def test_the_panel_names_the_profile_a_plan_was_evaluated_under_in_chromium(browser, tmp_path):  # noqa: F811
    """The panel never said which law a plan was evaluated under: a run under another profile landing between two
    evaluations (one run at a time, but evaluations go on) left the map on one profile beside a plan of another."""
    from selenium.webdriver.common.by import By

    (tmp_path / "own").mkdir()
    store = analysed_oak_town(tmp_path / "own" / "town.gpkg")
    app = make_app(store, tmp_path, REGISTER=None)
    with serving(app) as url:
        output = _qgis_plan_loaded(browser, url, tmp_path)
        browser.find_element(By.ID, "plan-evaluate").click()
        wait_for(browser, lambda: "Newly required to connect" in output.text)
        assert f"Evaluated under the fort-plain profile, version {FP_VERSION}" in output.text
        args = ["analyze", "--profile", "poughkeepsie", "--data", str(store), "--out", str(store)]
        rerun = CliRunner().invoke(main, [*args, "--set", "measurement.abut_tolerance_ft=2"])
        assert rerun.exit_code == 0, rerun.output
        browser.find_element(By.ID, "plan-evaluate").click()
        wait_for(browser, lambda: "poughkeepsie" in output.text)
        assert "Evaluated under the poughkeepsie profile, version " in output.text
        assert "with measurement.abut_tolerance_ft=2" in output.text and "fort-plain" not in output.text


@pytest.mark.browser
def test_a_main_that_benefits_nobody_has_no_petition_to_sign_in_chromium(oak_store, browser, tmp_path):  # noqa: F811
    """The panel said "Petition (§ 144-17B): 0 of 0 benefiting owners make a majority" for a main reaching no one."""
    from selenium.webdriver.common.by import By

    from tests.test_plans import NOBODYS_MAIN

    app = oak_app(oak_store, tmp_path)
    with serving(app) as url:
        open_map(browser, url)
        output = browser.find_element(By.ID, "plan-result")
        ny_frame([{"geometry": NOBODYS_MAIN}]).to_file(tmp_path / "south.geojson", driver="GeoJSON")
        browser.find_element(By.ID, "plan-file").send_keys(str(tmp_path / "south.geojson"))
        wait_for(browser, lambda: browser.find_element(By.ID, "plan-evaluate").is_enabled())
        browser.find_element(By.ID, "plan-evaluate").click()
        wait_for(browser, lambda: "Newly required to connect" in output.text)
        assert "Newly required to connect: no parcels" in output.text
        assert "Petition (§ 144-17B): no owner benefits, so there is no petition to sign" in output.text
        assert "0 of 0" not in output.text


# Across M-1 at (-200, 0) away from its manholes, east along Oak St inside its right-of-way, then 40 ft into L5.
CROSSING_INTO_L5 = LineString([(-200, -60), (-200, 10), (520, 10), (520, 65)])


def test_evaluate_says_where_the_main_crosses_a_main_and_which_parcels_need_easements(oak_store, tmp_path):
    client = oak_app(oak_store, tmp_path).test_client()
    line = ny_frame([{"geometry": CROSSING_INTO_L5}]).to_crs(4326).geometry.iloc[0]
    geometry = {"type": "LineString", "coordinates": [list(c) for c in line.coords]}
    doc = evaluate(client, csrf(client), geometry=geometry)
    assert [(c["main_id"], c["kind"]) for c in doc["main_crossings"]] == [("M-1", "crosses")]
    assert [(e["parcel_id"], e["length_ft"]) for e in doc["easements"]] == [("L5", 40.0)]
    cited = {c["check"]: (c["verdict"], c["cited"]) for c in doc["design_checks"]}
    assert cited["main_crossings"] == cited["easements"] == ("for the engineer", "(design check; profile setting)")
    # On the map: the crossing as a point where M-1 lies (y = 0 in the town's feet), and L5 outlined.
    (lon, lat) = doc["map"]["crossings"][0]["geometry"]["coordinates"]
    x, y = gpd.GeoSeries(gpd.points_from_xy([lon], [lat]), crs=4326).to_crs(2260).iloc[0].coords[0]
    origin = ny_frame([{"geometry": LineString([(0, 0), (1, 0)])}]).geometry.iloc[0].coords[0]
    assert (x - origin[0], y - origin[1]) == (pytest.approx(-200, abs=0.01), pytest.approx(0, abs=0.01))
    assert len(doc["map"]["easements"]) == 1


def test_a_saved_scenarios_download_holds_its_crossings_and_easements(oak_store, tmp_path):
    """The scenario's .gpkg and .geojson downloads carry the crossing as a point and the main across L5 as a line,
    drawn from the saved plan, as `plan --out` does."""
    import pyogrio

    client = oak_app(oak_store, tmp_path).test_client()
    line = ny_frame([{"geometry": CROSSING_INTO_L5}]).to_crs(4326).geometry.iloc[0]
    geometry = {"type": "LineString", "coordinates": [list(c) for c in line.coords]}
    evaluate(client, csrf(client), geometry=geometry, name="Into L5", save=True, replace=True)
    origin = ny_frame([{"geometry": LineString([(0, 0), (1, 0)])}]).geometry.iloc[0].coords[0]
    for fmt in ("gpkg", "geojson"):
        (tmp_path / f"l5.{fmt}").write_bytes(client.get(f"/plans/{quote('Into L5')}.{fmt}").data)
        if fmt == "gpkg":
            crossings = pyogrio.read_dataframe(tmp_path / "l5.gpkg", layer="main_crossings")
            easements = pyogrio.read_dataframe(tmp_path / "l5.gpkg", layer="easements_needed")
        else:
            every = pyogrio.read_dataframe(tmp_path / "l5.geojson").to_crs(2260)
            crossings, easements = (every[every["feature"] == k] for k in ("main crossing", "easement needed"))
        assert crossings[["main_id", "kind"]].values.tolist() == [["M-1", "crosses"]]
        assert easements[["parcel_id", "owner_name", "length_ft"]].values.tolist() == [["L5", "NG MAI", 40.0]]
        (x, y), _ = easements.geometry.iloc[0].geoms[0].coords
        assert (x - origin[0], y - origin[1]) == (pytest.approx(520, abs=0.01), pytest.approx(25, abs=0.01))


@pytest.mark.browser
def test_the_panel_says_where_the_main_crosses_a_main_and_needs_easements_in_chromium(oak_store, browser, tmp_path):  # noqa: F811
    from selenium.webdriver.common.by import By

    app = oak_app(oak_store, tmp_path)
    with serving(app) as url:
        open_map(browser, url)
        output = browser.find_element(By.ID, "plan-result")
        ny_frame([{"geometry": CROSSING_INTO_L5}]).to_file(tmp_path / "yard.geojson", driver="GeoJSON")
        browser.find_element(By.ID, "plan-file").send_keys(str(tmp_path / "yard.geojson"))
        wait_for(browser, lambda: browser.find_element(By.ID, "plan-evaluate").is_enabled())
        browser.find_element(By.ID, "plan-evaluate").click()
        wait_for(browser, lambda: "Newly required to connect" in output.text)
        said = " ".join(output.text.split())
        assert "Crossings of existing mains: for the engineer (design check; profile setting)." in said
        assert "crosses M-1 at station" in said and "not a section of the law" in said
        assert "Easements across private land: for the engineer (design check; profile setting)." in said
        assert "L5 (NG MAI, 500 Oak St) 40.0 ft" in said and "needs an easement from each owner" in said
        shot(browser, "plan-crossing-and-easement")


# Up Oak St and into the back yards: a bend at a new manhole inside L3 (x 380, clear of its house at x 330-370), then
# east across the existing main M-9 (x = 450, running north into L4) at (450, 75), inside L4, to its end in L4.
INTO_THE_YARDS = LineString([(0, 0), (380, 0), (380, 75), (480, 75)])


def lat_lon(x: float, y: float) -> tuple[float, float]:
    """Where the Oak St town's point (x, y) in feet lies, as (lat, lon)."""
    point = ny_frame([{"geometry": Point(x, y)}]).to_crs(4326).geometry.iloc[0]
    return point.y, point.x


@pytest.mark.browser
def test_a_click_on_a_plans_ring_or_manhole_opens_the_parcel_under_it_in_chromium(browser, tmp_path):  # noqa: F811
    """A plan's red ring where it crosses a main, and its manholes, took the click inside them: the parcel under
    one opened no popup, so the planner could not see that parcel's result. A click there is the parcel's (or the
    manhole's under it) and the mark still names itself in its tooltip; so is a click on a main across a lot."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    from tests.test_web_map import click_at, popup_text, settle

    (tmp_path / "town").mkdir()
    store = tmp_path / "town" / "town.gpkg"
    write_layers(str(store), layout(shift=(1, 1), extra_mains=[M9]))
    analysed = CliRunner().invoke(
        main, ["analyze", "--profile", "fort-plain", "--data", str(store), "--out", str(store)]
    )
    assert analysed.exit_code == 0, analysed.output
    ny_frame([{"geometry": INTO_THE_YARDS}]).to_file(tmp_path / "yards.geojson", driver="GeoJSON")
    tooltips = "return [...document.querySelectorAll('.leaflet-tooltip')].map((t) => t.textContent).join(' | ')"

    def opens(x, y, parcel_id, mark):
        """The mark at (x, y) names itself under the pointer, and a click there opens the parcel's popup."""
        lat, lon = lat_lon(x, y)
        if browser.find_elements(By.CSS_SELECTOR, ".leaflet-popup"):  # the last popup may lie over the mark
            browser.execute_script("document.querySelector('.leaflet-popup-close-button').click();")
            wait_for(browser, lambda: not browser.find_elements(By.CSS_SELECTOR, ".leaflet-popup"))
        px, py = browser.execute_script(
            "const p = window.sewerplanMap.latLngToContainerPoint([arguments[0], arguments[1]]); return [p.x, p.y];",
            lat,
            lon,
        )
        box = browser.find_element(By.CSS_SELECTOR, "#mapcell .folium-map")
        offset = int(px - box.size["width"] / 2), int(py - box.size["height"] / 2)
        ActionChains(browser).move_to_element_with_offset(box, *offset).perform()
        wait_for(browser, lambda: mark in browser.execute_script(tooltips))  # its own words, on hover
        click_at(browser, lat, lon)
        said = popup_text(browser, parcel_id)
        shown = browser.execute_script("return document.querySelector('.parcel-popup').dataset.parcelId")
        assert shown == parcel_id, said

    with serving(make_app(store, tmp_path, REGISTER=str(tmp_path / "register.sqlite"))) as url:
        open_map(browser, url)
        output = browser.find_element(By.ID, "plan-result")
        browser.find_element(By.ID, "plan-file").send_keys(str(tmp_path / "yards.geojson"))
        wait_for(browser, lambda: browser.find_element(By.ID, "plan-evaluate").is_enabled())
        settle(browser)
        browser.find_element(By.ID, "plan-evaluate").click()
        wait_for(browser, lambda: "Newly required to connect" in output.text)
        assert "crosses M-9 (sanitary) at station 525 ft" in " ".join(output.text.split())
        # As evaluated (the plan drawn last), then after the view is moved (the layers drawn again under it).
        for zoom in (None, 19):
            if zoom:
                browser.execute_script(
                    "window.sewerplanMap.setView([arguments[0], arguments[1]], 19, {animate: false});",
                    *lat_lon(430, 60),
                )
                settle(browser)
            opens(450, 75, "L4", "crosses M-9 at station 525 ft")  # the ring, on the main M-9, inside L4
            opens(380, 75, "L3", "NEW-2: change in alignment")  # the planned manhole inside L3
            opens(480, 75, "L4", "NEW-3: end of the main")
        opens(450, 95, "L4", "Main M-9")  # the existing main running through L4's yard
        # The plan's mark of the existing manhole it connects to: a click there is that manhole's, as without a plan.
        browser.execute_script(
            "window.sewerplanMap.setView([arguments[0], arguments[1]], 19, {animate: false});", *lat_lon(0, 0)
        )
        settle(browser)
        click_at(browser, *lat_lon(0, 0))
        said = wait_for(
            browser,
            lambda: browser.execute_script(
                "const p = document.querySelector('.sewershed-popup'); return p && p.textContent;"
            ),
        )
        assert said.startswith("Manhole A")
        # A layer switched off and on again in the layer panel is drawn in its place: the parcels' fill came back
        # over the plan's ring until the map was next moved.
        ring_over_parcels = """
            let ring = null;
            window.sewerplanMap.eachLayer((l) => {
              const t = l.getTooltip && l.getTooltip();
              const words = t && (typeof t.getContent() === 'function' ? t.getContent()(l) : t.getContent());
              if (words && (words.textContent || String(words)).includes('crosses M-9')) ring = l;
            });
            let order = [], item = ring._renderer._drawFirst;
            for (; item; item = item.next) order.push(item.layer);
            const parcels = order.map((l, k) => (l.feature && l.feature.properties.parcel_id ? k : -1));
            return order.indexOf(ring) > Math.max(...parcels);"""
        assert browser.execute_script(ring_over_parcels)
        browser.execute_script(
            "document.querySelector('.leaflet-control-layers').classList.add('leaflet-control-layers-expanded');"
        )
        toggle = browser.find_element(By.XPATH, "//label[contains(., 'Parcels by status')]//input[@type='checkbox']")
        toggle.click()
        toggle.click()
        assert browser.execute_script(ring_over_parcels)
        shot(browser, "plan-marks-pass-clicks-to-parcels")


@pytest.mark.browser
def test_a_run_of_streets_evaluated_is_shown_on_the_map_in_chromium(oak_store, browser, tmp_path):  # noqa: F811
    """A plan laid along named streets was drawn wherever they lie, and the map stayed where it was: on Manchester,
    VT's town-wide view the new main was a few pixels, nowhere the planner was looking."""
    from selenium.webdriver.common.by import By

    app = oak_app(oak_store, tmp_path)
    with serving(app) as url:
        open_map(browser, url)
        output = browser.find_element(By.ID, "plan-result")
        browser.execute_script("window.sewerplanMap.setView([42.0, -75.5], 12, {animate: false});")  # miles away
        browser.find_element(By.ID, "plan-streets").send_keys("Oak St")
        browser.find_element(By.ID, "plan-evaluate").click()
        wait_for(browser, lambda: "Newly required to connect" in output.text)
        (west, south), (east, north) = oak_line()[0], oak_line()[-1]
        shown = (
            "const b = window.sewerplanMap.getBounds(); return [b.getWest(), b.getSouth(), b.getEast(), b.getNorth()];"
        )
        wait_for(browser, lambda: (b := browser.execute_script(shown))[0] <= west and b[2] >= east)
        w, s, e, n = browser.execute_script(shown)
        assert w <= west and e >= east and s <= south and n >= north  # the whole run in view
        assert e - w < 0.05  # and zoomed to it, not to the county


@pytest.mark.browser
def test_a_proxys_page_in_place_of_an_answer_is_told_not_waited_on_in_chromium(oak_store, browser, tmp_path):  # noqa: F811
    """Behind a proxy, "Evaluate" answered by an HTML "502 Bad Gateway" page left the panel at "Evaluating…" for
    good (the page read every answer as JSON, and the failed read was never caught); it now says what happened."""
    from selenium.webdriver.common.by import By

    app = oak_app(oak_store, tmp_path)
    with serving(app) as url:
        output = _qgis_plan_loaded(browser, url, tmp_path)
        browser.execute_script(
            "const real = window.fetch;"
            "window.fetch = (u, o) => String(u).includes('/plans/evaluate') ? Promise.resolve(new Response("
            "'<html><body><h1>502 Bad Gateway</h1></body></html>', {status: 502, headers: {'Content-Type': "
            "'text/html'}})) : real(u, o);"
        )
        browser.find_element(By.ID, "plan-evaluate").click()
        said = wait_for(browser, lambda: "Could not evaluate." in output.text and output.text)
        assert "The server answered 502 without a message" in said and "Evaluating" not in said


@pytest.mark.browser
def test_a_file_loaded_while_drawing_ends_the_drawing_and_loads_again_in_chromium(oak_store, browser, tmp_path):  # noqa: F811
    """A planner who pressed "Draw a main" and then loaded a file was left with "Finish" enabled and the crosshair;
    choosing the same file again after drawing over it did nothing (the file input had not changed)."""
    from selenium.webdriver.common.by import By

    app = oak_app(oak_store, tmp_path)
    path = str(qgis_file(tmp_path / "oak.geojson"))
    by_id = browser.find_element
    drawn = "return window.sewerplanMap.getPane('sewerplan-evidence').querySelectorAll('path').length"
    with serving(app) as url:
        open_map(browser, url)
        by_id(By.ID, "plan-file").send_keys(path)
        wait_for(browser, lambda: by_id(By.ID, "plan-evaluate").is_enabled())
        for _ in range(2):  # the second time, the same file chosen again after "Draw a main" cleared the line
            by_id(By.ID, "draw-start").click()
            assert by_id(By.ID, "draw-finish").is_enabled() and not by_id(By.ID, "plan-evaluate").is_enabled()
            by_id(By.ID, "plan-file").send_keys(path)
            wait_for(browser, lambda: by_id(By.ID, "plan-evaluate").is_enabled() and browser.execute_script(drawn))
            assert not by_id(By.ID, "draw-finish").is_enabled()
            assert browser.execute_script("return window.sewerplanMap.getContainer().style.cursor") == ""


@pytest.mark.browser
def test_scenarios_side_by_side_reopen_on_the_map_and_delete_in_chromium(oak_store, browser, tmp_path):  # noqa: F811
    from selenium.webdriver.common.by import By

    app = oak_app(oak_store, tmp_path)
    register = Register(app.config["REGISTER"], store=str(oak_store))
    for saved in register.saved_plans():  # the store's one register holds the other tests' scenarios too
        register.delete_plan(saved["name"])
    client = app.test_client()
    token = csrf(client)
    evaluate(client, token, name="Eight", material="reinforced concrete", save=True)
    evaluate(client, token, name=ODD_NAME, diameter_in=6, save=True)
    with serving(app) as url:
        open_map(browser, url)
        browser.get(url + "/plans")
        heads = [th.text for th in browser.find_elements(By.CSS_SELECTOR, "#scenarios th.scenario")]
        assert heads == ["Eight", ODD_NAME]
        shot(browser, "plans-side-by-side")
        browser.find_elements(By.CSS_SELECTOR, "a.reopen")[1].click()
        items = wait_for(browser, lambda: browser.find_elements(By.CSS_SELECTOR, "#plan-result li"))
        text = " ".join(li.get_attribute("textContent") for li in items)
        assert text.startswith(ODD_NAME) and "6-inch" in text and "does not meet (§ 144-18B)" in text
        assert "Requirement, trench width (§ 144-18F): Not covered by § 144-18F" in text
        assert browser.find_element(By.ID, "plan-diameter").get_attribute("value") == "6"
        assert browser.find_element(By.ID, "plan-name").get_attribute("value") == ODD_NAME
        assert browser.find_element(By.ID, "plan-evaluate").is_enabled()
        shot(browser, "plan-reopened")
        # The replace tick is for the reopened name: renamed to another saved scenario, saving is refused, not an
        # overwrite of that one (helper's finding); back to its own name, the tick returns.
        replace, name = browser.find_element(By.ID, "plan-replace"), browser.find_element(By.ID, "plan-name")
        assert replace.is_selected()
        name.clear()
        name.send_keys("Eight")
        assert not replace.is_selected()
        browser.find_element(By.ID, "plan-save").click()
        browser.find_element(By.ID, "plan-evaluate").click()
        wait_for(browser, lambda: "saved already" in browser.find_element(By.ID, "plan-result").text)
        said = browser.find_element(By.ID, "plan-result").text
        assert 'Tick "replace the saved scenario of this name"' in said and "--replace" not in said
        assert client.get("/plans/Eight.json").get_json()["diameter_in"] == 8
        browser.find_element(By.ID, "plan-save").click()
        name.clear()
        name.send_keys(ODD_NAME)
        assert replace.is_selected()
        browser.find_element(By.ID, "plan-material").send_keys("PVC")
        browser.find_element(By.ID, "plan-evaluate").click()
        wait_for(browser, lambda: "for the engineer" in browser.find_element(By.ID, "plan-result").text)
        browser.get(url + "/plans")
        browser.find_elements(By.CSS_SELECTOR, "form.delete-plan button")[0].click()
        wait_for(browser, lambda: browser.find_elements(By.ID, "message"))
        assert "Deleted scenario Eight" in browser.find_element(By.ID, "message").text
        heads = [th.text for th in browser.find_elements(By.CSS_SELECTOR, "#scenarios th.scenario")]
        assert heads == [ODD_NAME]
        assert json.loads(client.get("/plans/" + quote(ODD_NAME) + ".json").data)["name"] == ODD_NAME


def test_a_bend_clicked_twice_while_drawing_is_one_manhole(oak_store, tmp_path):
    """A line drawn on the map with its bend clicked twice (a double click, as most drawing tools finish a vertex)
    got two manholes at the bend, both charged and leak-tested."""
    client = oak_app(oak_store, tmp_path).test_client()
    token = csrf(client)
    start, end = oak_line()[0], oak_line()[-1]
    bend = [(start[0] + end[0]) / 2, (start[1] + end[1]) / 2 + 0.0005]
    once = evaluate(client, token, geometry={"type": "LineString", "coordinates": [start, bend, end]})
    twice = evaluate(client, token, geometry={"type": "LineString", "coordinates": [start, bend, bend, end]})
    assert [m["reason"] for m in twice["manholes"]].count("change in alignment") == 1
    assert [m["id"] for m in twice["manholes"]] == [m["id"] for m in once["manholes"]]
    assert twice["cost"]["total"] == once["cost"]["total"]
    assert twice["exfiltration_allowance_gpd"] == once["exfiltration_allowance_gpd"]


def test_a_json_file_that_is_not_map_data_is_named_as_loaded(oak_store, tmp_path):
    """A JSON object GDAL cannot read as map data (a settings file picked by mistake) was refused naming the hidden
    copy the page reads it from ('/tmp/sewerplan-line-.../proposed.geojson', as 'proposed (proposed.geojson)'),
    never the file the planner loaded."""
    client = oak_app(oak_store, tmp_path).test_client()
    read = client.post(
        "/plans/line", json={"name": "settings.json", "text": '{"zoom": 3}'}, headers={"X-CSRF-Token": csrf(client)}
    )
    assert read.status_code == 400, read.get_data(as_text=True)[:300]
    message = read.get_json()["error"]["message"]
    assert message.startswith("settings.json cannot be read as map data"), message
    assert "sewerplan-line-" not in message and "proposed.geojson" not in message


@pytest.mark.parametrize("body", [[1, 2], 8, "text"])
def test_a_request_whose_json_is_not_an_object_gets_a_sentence(oak_store, tmp_path, body):
    """A JSON list or number as the body was read with .get: a server error (500) instead of a sentence."""
    client = oak_app(oak_store, tmp_path).test_client()
    token = csrf(client)
    for url in ("/plans/evaluate", "/plans/line"):
        answer = client.post(
            url, data=json.dumps(body), content_type="application/json", headers={"X-CSRF-Token": token}
        )
        assert answer.status_code == 400, (url, answer.status_code, answer.get_data(as_text=True)[:300])
        assert answer.get_json()["error"]["message"]


def test_a_loop_drawn_on_the_map_is_refused(oak_store, tmp_path):
    """A main drawn round the block back to where it began was evaluated, joining manhole "A, A"."""
    client = oak_app(oak_store, tmp_path).test_client()
    ring = ny_frame([{"geometry": LineString([(0, 0), (900, 0), (900, 300), (0, 300), (0, 0)])}]).to_crs(4326)
    answer = client.post(
        "/plans/evaluate",
        json={
            "geometry": {"type": "LineString", "coordinates": [list(c) for c in ring.geometry.iloc[0].coords]},
            "diameter_in": 8,
        },
        headers={"X-CSRF-Token": csrf(client)},
    )
    assert answer.status_code == 400, answer.get_data(as_text=True)[:300]
    assert "ends where it begins, a closed loop" in answer.get_json()["error"]["message"]


@pytest.mark.parametrize(
    ("name", "told"),
    [("Option A/../draft", "holds /"), ("Option A\\draft", "holds \\"), ("..", "only dots"), (".", "only dots")],
)
def test_a_name_that_reads_as_folders_is_refused_on_the_web_and_the_command_line(oak_store, tmp_path, name, told):
    """``Option A/../draft`` was saved, and the scenarios page linked its board PDF as
    ``/plans/Option%20A/../draft.pdf``, which the browser opened as ``/plans/draft.pdf``: another scenario's. Refused
    by the one function both save through, naming the characters."""
    client = oak_app(oak_store, tmp_path).test_client()
    body = {"geometry": {"type": "LineString", "coordinates": oak_line()}, "name": name, "save": True}
    refused = client.post("/plans/evaluate", json=body, headers={"X-CSRF-Token": csrf(client)})
    message = refused.get_json()["error"]["message"]
    assert refused.status_code == 400 and "cannot contain / or \\, nor be . or .. alone" in message and told in message
    register = Register(url=str(oak_store.parent / "register.sqlite"))
    assert register.saved_plan(name) is None
    proposed = tmp_path / "proposed.geojson"
    ny_frame([{"geometry": LineString([(0, 0), (900, 0)])}]).to_file(proposed)
    args = ["plan", "--profile", "fort-plain", "--data", str(oak_store), "--proposed", str(proposed)]
    args += ["--diameter-in", "8", "--name", name, "--save", "--register", str(oak_store.parent / "register.sqlite")]
    result = CliRunner().invoke(main, args)
    assert result.exit_code != 0 and "cannot contain / or \\" in result.output and told in result.output
    assert register.saved_plan(name) is None


def test_a_scenario_saved_before_with_folders_in_its_name_links_to_its_own_files(oak_store, tmp_path):
    """A name saved before names were checked keeps working: its links quote ``/`` (``%2F``), so the browser cannot
    read ``..`` in it as a folder and open another scenario's files."""
    from urllib.parse import unquote, urljoin, urlsplit

    client = oak_app(oak_store, tmp_path).test_client()
    evaluate(client, csrf(client), name="draft", save=True, replace=True)
    register = Register(url=str(oak_store.parent / "register.sqlite"))
    draft = register.saved_plan("draft")
    odd = "Option A/../draft"
    register.save_plan(  # as the register took it before the name was checked
        odd,
        profile=draft["profile"],
        diameter_in=12,
        wkt=draft["geometry_wkt"],
        crs=draft["crs"],
        result=draft["result"] | {"name": odd, "diameter_in": 12},
        replace=True,
    )
    page = client.get("/plans?compare=draft&compare=" + quote(odd)).get_data(as_text=True)
    links = [h for h in re.findall(r'href="(/plans/[^"]+\.(?:pdf|geojson|gpkg))"', page) if "Option" in h]
    assert len(links) == 3
    for href in links:
        resolved = urljoin("http://localhost/plans", href.replace("&amp;", "&"))  # as the browser resolves it
        assert unquote(urlsplit(resolved).path).startswith(f"/plans/{odd}."), href
    pdf = client.get(urlsplit(urljoin("http://localhost/plans", links[0])).path)
    assert pdf.status_code == 200 and pdf.data[:4] == b"%PDF"
    (tmp_path / "odd.pdf").write_bytes(pdf.data)
    text = " ".join(" ".join(p.extract_text().split()) for p in PdfReader(tmp_path / "odd.pdf").pages)
    assert f"Proposed sewer extension: {odd}" in text
    assert client.get(f"/plans/{quote(odd, safe='')}.json").get_json()["diameter_in"] == 12
    register.delete_plan(odd)
