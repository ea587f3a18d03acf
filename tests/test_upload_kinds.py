"""What a layer whose name says nothing is offered as on the Data page, a kind chosen that its shapes cannot be,
problems told in one round, and two columns named as one field.

From a web tester, with the Town of Manchester's sewer (tests/data/vt-sewer/manchester): its pipes uploaded alone
were offered as the parcels, and choosing that deleted the upload with "fix the data"; a shapefile without a .prj
was told of its ID column, then of its CRS; a layer with ``units`` and ``UNITS`` read ``UNITS`` unsaid.
"""

from __future__ import annotations

import html
import io
import re
import zipfile
from pathlib import Path

import geopandas as gpd
import pytest
import shapely
from pyproj import CRS as PROJ_CRS

from layers.schema import PARCELS, column_for, columns_alike
from layers.validate import prepare_layer

MANCHESTER = Path(__file__).resolve().parent / "data" / "vt-sewer" / "manchester"  # vendored (tests/data/README.md)
PIPES = MANCHESTER / "ManchesterLinearFeatures.geojson"
CRS = "EPSG:2260"
X0, Y0 = 457_000.0, 1_490_000.0


def _web(tmp_path):
    from tests.conftest import csrf, make_app

    app = make_app(tmp_path / "town.gpkg", tmp_path)
    client = app.test_client()
    return app, client, csrf(client)


def _sent(client, token, name: str, payload: bytes) -> str:
    sent = client.post(
        "/data/upload",
        data={"dataset": (io.BytesIO(payload), name), "csrf_token": token},
        content_type="multipart/form-data",
    )
    assert sent.status_code == 302, sent.get_data(as_text=True)[:500]
    return sent.headers["Location"]


def _text(answer) -> str:
    return re.sub(r"\s+", " ", html.unescape(answer.get_data(as_text=True)))


def _selected_kind(page: str) -> str | None:
    """The kind the "What is this layer?" form has selected, None for "not used"."""
    found = re.search(r'<select name="kind\.[^"]+"[^>]*>(.*?)</select>', page, re.S)
    assert found, "no kind to choose on the page"
    chosen = re.search(r'<option value="([^"]*)"[^>]*selected', found.group(1))
    return chosen.group(1) if chosen and chosen.group(1) else None


def _geojson(shapes) -> bytes:
    frame = gpd.GeoDataFrame({"ref": [f"R{i}" for i in range(len(shapes))]}, geometry=shapes, crs=CRS)
    return frame.to_json().encode()


# --- 1. a single layer is offered as the kind its shapes fit, and a kind that does not fit is chosen again ---------


def test_the_manchester_pipes_alone_are_offered_as_the_mains_not_the_parcels(tmp_path):
    app, client, token = _web(tmp_path)
    page = _sent(client, token, PIPES.name, PIPES.read_bytes())
    answer = client.get(page)
    said = _text(answer)
    assert _selected_kind(answer.get_data(as_text=True)) == "mains"
    assert "A single layer is offered as the kind its shapes fit: lines, as the mains layer." in said
    assert "offered as the parcels" not in said


@pytest.mark.parametrize(
    ("shapes", "kind"),
    [
        ([shapely.Point(X0, Y0), shapely.Point(X0 + 100, Y0)], "manholes"),
        ([shapely.box(X0, Y0, X0 + 50, Y0 + 100)], "parcels"),
        ([shapely.MultiLineString([[(X0, Y0), (X0 + 100, Y0)]])], "mains"),
    ],
)
def test_a_single_layer_whose_name_says_nothing_is_offered_as_its_shapes_kind(tmp_path, shapes, kind):
    app, client, token = _web(tmp_path)
    page = _sent(client, token, "town.geojson", _geojson(shapes))
    assert _selected_kind(client.get(page).get_data(as_text=True)) == kind


def test_a_layer_of_mixed_shapes_is_offered_as_nothing(tmp_path):
    app, client, token = _web(tmp_path)
    mixed = [shapely.Point(X0, Y0), shapely.LineString([(X0, Y0), (X0 + 100, Y0)])]
    page = client.get(_sent(client, token, "town.geojson", _geojson(mixed))).get_data(as_text=True)
    assert _selected_kind(page) is None and 'id="offered"' not in page


def test_pipes_chosen_as_the_parcels_keep_the_upload_and_ask_again_what_they_are(tmp_path):
    """Lines chosen as the parcels: not "the upload has been deleted, fix the data" (nothing in it is wrong), but
    the "What is this layer?" page again, the kinds lines can be named, and the upload kept to choose the mains."""
    app, client, token = _web(tmp_path)
    page = _sent(client, token, PIPES.name, PIPES.read_bytes())
    folder = Path(app.config["UPLOAD_FOLDER"]) / page.split("/")[2]
    kinds = client.post(
        page.replace("/mapping", "/kinds"), data={"csrf_token": token, "kind.manchesterlinearfeatures": "parcels"}
    )
    assert kinds.status_code == 302
    checked = client.post(page, data={"csrf_token": token})
    said = _text(checked)
    assert checked.status_code == 422 and folder.is_dir()
    assert "has been deleted" not in said and "upload it again" not in said
    assert (
        "ManchesterLinearFeatures.geojson holds lines, and the parcels layer (tax parcels (property lines)) holds "
        "areas (polygons): it cannot be the parcels layer. Layers of lines can be the streets, mains, alleys, "
        "laterals or curbs layer: say below what it is. The upload is kept." in said
    )
    assert "no parcel_id column" not in said  # the wrong kind's, not the data's
    assert "What is this layer?" in said and _selected_kind(checked.get_data(as_text=True)) == "mains"
    # chosen as the mains, the page asks for the parcels, the upload's pipes kept
    client.post(
        page.replace("/mapping", "/kinds"), data={"csrf_token": token, "kind.manchesterlinearfeatures": "mains"}
    )
    again = client.post(page, data={"csrf_token": token})
    assert again.status_code == 422 and "No layer of the upload is the parcels layer" in _text(again)
    assert folder.is_dir()


def test_a_layer_named_parcels_that_holds_lines_is_still_refused_as_data(tmp_path):
    """Its name, not the planner, said it is the parcels: the data is what to fix (the page asks for no kind)."""
    app, client, token = _web(tmp_path)
    lines = [shapely.LineString([(X0, Y0), (X0 + 100, Y0)])]
    page = _sent(client, token, "parcels.geojson", _geojson(lines))
    checked = client.post(page, data={"csrf_token": token})
    assert checked.status_code == 422 and "has been deleted" in _text(checked)


# --- 2. every problem of a layer in one round ------------------------------------------------------------------


def _lots_without_prj(tmp_path: Path) -> bytes:
    frame = gpd.GeoDataFrame(
        {"SPAN": ["375-117-10001", "375-117-10002"], "owner": ["SMITH", "ROE"]},
        geometry=[shapely.box(X0 + 60 * i, Y0, X0 + 60 * i + 50, Y0 + 100) for i in range(2)],
        crs=CRS,
    )
    frame.to_file(tmp_path / "parcels.shp")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for part in tmp_path.glob("parcels.*"):
            if part.suffix != ".prj":
                zf.write(part, part.name)
    return buf.getvalue()


def test_a_shapefile_without_a_prj_and_an_unknown_id_column_is_told_both_at_once(tmp_path):
    app, client, token = _web(tmp_path)
    page = _sent(client, token, "town.zip", _lots_without_prj(tmp_path))
    checked = client.post(page, data={"csrf_token": token})
    said = _text(checked)
    assert checked.status_code == 422
    assert "has no parcel_id column" in said and "has no coordinate reference system" in said
    fixed = client.post(page, data={"csrf_token": token, "parcels.parcel_id": "SPAN", "layer_crs.parcels": CRS})
    assert fixed.status_code == 200 and "The data can be used: 2 parcels" in _text(fixed)


def test_a_layer_missing_a_column_is_told_of_its_crs_too():
    frame = gpd.GeoDataFrame({"SPAN": ["a"]}, geometry=[shapely.box(X0, Y0, X0 + 50, Y0 + 100)])  # no CRS
    out, problems = prepare_layer(frame, PARCELS, label="parcels (parcels.shp)", target_crs=PROJ_CRS(CRS))
    assert out is None
    assert [p.check for p in problems if p.severity == "error"] == ["missing_column", "no_crs"]


def test_a_crs_given_that_is_no_crs_is_told_with_the_missing_column_not_over_it():
    frame = gpd.GeoDataFrame({"SPAN": ["a"]}, geometry=[shapely.box(X0, Y0, X0 + 50, Y0 + 100)])
    out, problems = prepare_layer(
        frame, PARCELS, label="parcels (parcels.shp)", target_crs=PROJ_CRS(CRS), override_crs="EPSG:99999999"
    )
    assert out is None and {p.check for p in problems if p.severity == "error"} == {"missing_column", "no_crs"}


# --- 3. two columns named as one field --------------------------------------------------------------------------


def test_the_column_named_exactly_as_the_field_is_taken_and_the_other_named():
    units = PARCELS.field("units")
    assert column_for(units, ["UNITS", "units"]) == "units" and columns_alike(units, ["UNITS", "units"]) == ["UNITS"]
    assert column_for(units, ["units", "UNITS"]) == "units"
    assert column_for(units, ["Units", "UNITS"]) is None and columns_alike(units, ["Units", "UNITS"]) == [
        "Units",
        "UNITS",
    ]
    assert column_for(units, ["UNITS"]) == "UNITS" and columns_alike(units, ["UNITS"]) == []


def _lots_with_units(*names: str) -> gpd.GeoDataFrame:
    return gpd.GeoDataFrame(
        {"parcel_id": ["L1"], **{name: [4 * (k + 1)] for k, name in enumerate(names)}},
        geometry=[shapely.box(X0, Y0, X0 + 50, Y0 + 100)],
        crs=CRS,
    )


def test_the_check_reads_units_not_its_upper_case_twin_and_warns_of_it():
    out, problems = prepare_layer(
        _lots_with_units("units", "UNITS"), PARCELS, label="parcels", target_crs=PROJ_CRS(CRS)
    )
    assert out["units"].tolist() == [4]
    (warned,) = [p for p in problems if p.check == "columns_alike"]
    assert warned.severity == "warning" and "'UNITS'" in warned.message and "read from column 'units'" in warned.message
    assert (warned.fix.setting, warned.fix.target) == ("map", "parcels.units")


def test_two_columns_named_as_a_field_alike_are_neither_read():
    out, problems = prepare_layer(
        _lots_with_units("Units", "UNITS"), PARCELS, label="parcels", target_crs=PROJ_CRS(CRS)
    )
    assert "units" not in out.columns
    (warned,) = [p for p in problems if p.check == "columns_alike"]
    assert warned.severity == "warning" and "'Units', 'UNITS'" in warned.message and "none is read" in warned.message


def test_two_id_columns_alike_refuse_the_layer_naming_both_not_as_missing():
    frame = gpd.GeoDataFrame(
        {"Parcel_ID": ["a"], "PARCEL_ID": ["b"]}, geometry=[shapely.box(X0, Y0, X0 + 50, Y0 + 100)], crs=CRS
    )
    out, problems = prepare_layer(frame, PARCELS, label="parcels", target_crs=PROJ_CRS(CRS))
    assert out is None
    assert [p.check for p in problems if p.severity == "error"] == ["columns_alike"]


def test_the_command_line_warns_of_units_beside_its_upper_case_twin(tmp_path):
    from layers.sample import sample_town
    from layers.write import write_layers
    from tests.conftest import Runner

    town = tmp_path / "town.gpkg"
    write_layers(str(town), sample_town(50))
    parcels = gpd.read_file(town, layer="parcels")
    parcels.assign(UNITS=parcels["units"] * 2).to_file(tmp_path / "parcels.geojson")
    result = Runner().invoke(
        "analyze", "--profile", "fort-plain", "--data", town, "--layer", f"parcels={tmp_path / 'parcels.geojson'}"
    )
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert (
        "units is read from column 'units'; 'UNITS' is named as units too (but for case or spaces) and not read: if "
        "it holds units, choose that column for the field. Use --map parcels.units=COLUMN." in said
    ), said


def test_the_mapping_page_chooses_units_and_says_its_upper_case_twin_is_named_so_too(tmp_path):
    app, client, token = _web(tmp_path)
    page = client.get(_sent(client, token, "parcels.geojson", _lots_with_units("units", "UNITS").to_json().encode()))
    body = page.get_data(as_text=True)
    select = re.search(r'<select name="parcels\.units".*?</select>', body, re.S).group(0)
    assert re.search(r'<option value="units"\s*selected', select) and not re.search(r'value="UNITS"\s*selected', select)
    said = _text(page)
    assert "units is chosen, its name being the closest to units; UNITS is named as units too" in said


def test_the_mapping_page_says_two_columns_alike_are_neither_chosen(tmp_path):
    app, client, token = _web(tmp_path)
    said = _text(
        client.get(_sent(client, token, "parcels.geojson", _lots_with_units("Units", "UNITS").to_json().encode()))
    )
    assert "Units and UNITS are named as units alike (but for case or spaces), so none is chosen" in said


# --- in a real headless Chromium ------------------------------------------------------------------------------------


@pytest.mark.browser
def test_the_manchester_pipes_uploaded_alone_become_the_mains_in_chromium(tmp_path, browser):
    """A planner uploads the town's pipes alone and clicks on as offered: the pipes are the mains, and the page
    asks for the parcels; chosen as the parcels by hand, the page asks again what they are, the upload kept."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    from tests.conftest import serving
    from tests.test_web import wait_for

    app, _, _ = _web(tmp_path)
    with serving(app) as url:
        browser.get(url + "/data/upload")
        browser.find_element(By.CSS_SELECTOR, "#upload-form input[name=dataset]").send_keys(str(PIPES))
        browser.find_element(By.CSS_SELECTOR, "#upload-form button[type=submit]").click()
        kind = wait_for(browser, lambda: browser.find_element(By.CSS_SELECTOR, "#kinds-form select"))
        assert Select(kind).first_selected_option.get_attribute("value") == "mains"
        Select(kind).select_by_value("parcels")  # the planner overrides the offer: lines as the parcels
        browser.find_element(By.ID, "set-kinds").click()
        wait_for(browser, lambda: browser.find_element(By.ID, "mapping-form"))
        browser.find_element(By.CSS_SELECTOR, "#mapping-form button[type=submit]").click()
        said = wait_for(browser, lambda: browser.find_element(By.ID, "message").text)
        assert "holds lines, and the parcels layer" in said and "The upload is kept." in said
        kind = browser.find_element(By.CSS_SELECTOR, "#kinds-form select")
        assert Select(kind).first_selected_option.get_attribute("value") == "mains"
        browser.find_element(By.ID, "set-kinds").click()  # as offered
        wait_for(browser, lambda: browser.find_element(By.ID, "mapping-form"))
        assert browser.find_element(By.CSS_SELECTOR, "table.mapping").get_attribute("data-kind") == "mains"
        added = Select(browser.find_element(By.CSS_SELECTOR, "#add-layer-form select[name=kind]"))
        assert added.first_selected_option.get_attribute("value") == "parcels"  # the form to add the parcels
