"""Leftovers of the upload: "(none)" chosen on purpose, coded values for a column the layer lacks, a zip of CSV tables
given to the command line, one sentence for a zip that holds no layer wherever it is given, and a GeoPackage's
attribute table named as a layer, and a column whose name has spaces at its ends.

Each test builds its files in ``tmp_path``, small enough to see the right answer.
"""

from __future__ import annotations

import html
import io
import re
import zipfile
from pathlib import Path

import geopandas as gpd
import pandas as pd
import pyogrio
import pyproj
import pytest
import shapely

from layers.errors import LayerError
from layers.read import find_layers, no_layer_in
from layers.schema import SPECS
from layers.validate import ColumnMapping, prepare_layer
from tests.test_upload_messy import upload, zipped

CRS = "EPSG:2260"
X0, Y0 = 457_000.0, 1_490_000.0


def lots(n: int = 2, **columns) -> gpd.GeoDataFrame:
    """``n`` square lots in a row near Fort Plain, IDs L1 ..."""
    return gpd.GeoDataFrame(
        {"parcel_id": [f"L{i + 1}" for i in range(n)], **columns},
        geometry=[shapely.box(X0 + 60 * i, Y0, X0 + 60 * i + 50, Y0 + 100) for i in range(n)],
        crs=CRS,
    )


def mains(**columns) -> gpd.GeoDataFrame:
    """One main along the lots' front."""
    return gpd.GeoDataFrame(
        {"main_id": ["M1"], **columns},
        geometry=[shapely.LineString([(X0, Y0 + 110), (X0 + 300, Y0 + 110)])],
        crs=CRS,
    )


def said(response) -> str:
    """A page's words, without its tags, as the planner reads them."""
    text = re.sub(r"<[^>]+>", " ", response.get_data(as_text=True))
    return " ".join(html.unescape(text).split())


def prepared(frame: gpd.GeoDataFrame, kind: str, mapping: ColumnMapping):
    return prepare_layer(frame, SPECS[kind], label=f"{kind} ({kind}.shp)", target_crs=pyproj.CRS(CRS), mapping=mapping)


@pytest.fixture
def web(tmp_path):
    """The app, its client, the CSRF token, and a function that uploads a GeoPackage of ``layers`` (GeoDataFrames, or
    DataFrames for tables without shapes) and returns its column-mapping page's address."""
    from tests.conftest import csrf, make_app

    app = make_app(tmp_path / "town.gpkg", tmp_path)
    client = app.test_client()
    token = csrf(client)

    def send(**layers: gpd.GeoDataFrame) -> str:
        path = tmp_path / "sent.gpkg"
        path.unlink(missing_ok=True)
        for name, frame in layers.items():
            pyogrio.write_dataframe(frame, path, layer=name)  # a DataFrame: an attribute table, without shapes
        sent = client.post(
            "/data/upload",
            data={"dataset": (io.BytesIO(path.read_bytes()), "sent.gpkg"), "csrf_token": token},
            content_type="multipart/form-data",
        )
        assert sent.status_code == 302, said(sent)[:500]
        return sent.headers["Location"]

    return app, client, token, send


def _zip(path: Path, members: dict[str, bytes | str]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, content in members.items():
            zf.writestr(name, content)
    return path


def _folder(app, page: str) -> Path:
    return Path(app.config["UPLOAD_FOLDER"]) / page.split("/")[2]


def _select(page_html: str, name: str) -> str:
    (found,) = re.findall(rf'<select name="{re.escape(name)}".*?</select>', page_html, re.S)
    return found


# --- 1. "(none)" chosen on purpose --------------------------------------------------------------------------------


def test_none_chosen_where_a_column_was_found_by_name_means_none(web):
    """The planner says the layer has no owner column: its column "owner" (a name of owner_name) was used all the
    same, on the report and again when the checked store was read for the analysis."""
    app, client, token, send = web
    page = send(parcels=lots(owner=["SMITH", "JONES"]))
    select = _select(client.get(page).get_data(as_text=True), "parcels.owner_name")
    assert '<option value="(none)">(none)</option>' in select  # what "(none)" posts where a column was found
    assert '<option value="owner" selected>' in select  # the page's default: the column found by name
    answer = client.post(page, data={"csrf_token": token, "parcels.owner_name": "(none)"})
    words = said(answer)
    assert answer.status_code == 200 and "The data can be used: 2 parcels" in words
    assert (
        'Fields left empty on purpose parcels: owner_name is empty, as "(none)" was chosen for it; its column owner, '
        "which its name would have taken, is not used." in words
    )
    assert "Columns not used parcels: owner" in words
    fields = list(pyogrio.read_info(_folder(app, page) / "store.gpkg", layer="parcels")["fields"])
    assert "owner_name" not in fields and "owner" not in fields and "input_owner" in fields
    again = _select(client.get(page).get_data(as_text=True), "parcels.owner_name")
    assert '<option value="(none)" selected>(none)</option>' in again  # the page shows the choice kept


def test_the_analysis_of_the_checked_store_does_not_find_the_column_by_name_again(web):
    app, client, token, send = web
    page = send(parcels=lots(owner=["SMITH", "JONES"]))
    client.post(page, data={"csrf_token": token, "parcels.owner_name": "(none)"})
    found = find_layers(str(_folder(app, page) / "store.gpkg"))
    frame, _ = prepared(gpd.read_file(found["parcels"].path, layer="parcels"), "parcels", ColumnMapping())
    assert "owner_name" not in frame.columns and frame["input_owner"].tolist() == ["SMITH", "JONES"]


@pytest.mark.parametrize("sent", [{"parcels.owner_name": "owner"}, {"parcels.owner_name": ""}, {}])
def test_a_select_left_as_the_page_had_it_takes_the_column_found_by_name(web, sent):
    """The default stays: the column the page chose (posted), an empty value, or no value at all, all take the
    column found by the field's name."""
    app, client, token, send = web
    page = send(parcels=lots(owner=["SMITH", "JONES"]))
    answer = client.post(page, data={"csrf_token": token, **sent})
    words = said(answer)
    assert answer.status_code == 200 and "Columns not used parcels: every column is used" in words
    assert "left empty on purpose" not in words
    fields = list(pyogrio.read_info(_folder(app, page) / "store.gpkg", layer="parcels")["fields"])
    assert "owner_name" in fields


def test_none_where_no_column_was_found_posts_the_default():
    """Where nothing is found by name, "(none)" is the page's default and posts "" (nothing to leave out)."""
    from gisapp.views.data import matched_fields

    fields = {f.name: (chosen, by_name) for f, chosen, by_name in matched_fields("parcels", ["parcel_id", "x"], {})}
    assert fields["owner_name"] == ("", "") and fields["parcel_id"] == ("parcel_id", "parcel_id")
    kept = {f.name: c for f, c, _ in matched_fields("parcels", ["owner"], {"parcels.owner_name": "(none)"})}
    assert kept["owner_name"] == ""


def test_an_empty_name_sets_aside_a_column_of_the_fields_own_name():
    """owner_name left empty beside a column named owner_name: kept under the field's name, it was the field still."""
    frame, problems = prepared(
        lots(owner_name=["SMITH", "JONES"]), "parcels", ColumnMapping({"parcels": {"owner_name": ""}})
    )
    assert "owner_name" not in frame.columns and frame["input_owner_name"].tolist() == ["SMITH", "JONES"]
    assert [p for p in problems if p.severity == "error"] == []


def test_none_chosen_for_a_required_field_is_refused_naming_it(web):
    app, client, token, send = web
    page = send(parcels=lots())
    answer = client.post(page, data={"csrf_token": token, "parcels.parcel_id": "(none)"})
    words = said(answer)
    assert answer.status_code == 422
    assert "The column mapping leaves parcel_id of the parcels layer empty, and the parcels layer needs it" in words
    assert client.get(page).status_code == 200  # kept: the mapping page fixes it


# --- 2. coded values for a column the layer lacks -----------------------------------------------------------------


def test_coded_values_for_a_coded_field_without_a_column_are_refused_naming_field_and_layer():
    out, problems = prepared(
        mains(kind=["GRAV"]), "mains", ColumnMapping(values={"mains": {"sewer_type": {"GRAV": "sanitary"}}})
    )
    assert out is None
    (problem,) = [p for p in problems if p.severity == "error"]
    assert problem.message.startswith(
        "Coded values are given for the sewer_type field of the mains layer (GRAV=sanitary), but mains (mains.shp) "
        "has no sewer_type column, so they would change nothing. Columns: main_id, kind."
    )
    assert (problem.check, problem.fix.setting, problem.fix.target) == ("mapping", "map", "mains.sewer_type")


def test_coded_values_for_a_field_left_empty_on_purpose_say_so():
    mapping = ColumnMapping(columns={"mains": {"sewer_type": ""}}, values={"mains": {"sewer_type": {"G": "sanitary"}}})
    out, problems = prepared(mains(sewer_type=["G"]), "mains", mapping)
    assert out is None
    (problem,) = [p for p in problems if p.severity == "error"]
    assert "(G=sanitary), but the column mapping leaves it empty, so they would change nothing" in problem.message


def test_coded_values_for_a_missing_column_are_refused_on_the_web_and_the_upload_kept(web):
    """map_value.mains "sewer_type.GRAV=sanitary" for mains without a sewer_type column: "The data can be used", and
    the codes changed nothing."""
    app, client, token, send = web
    page = send(parcels=lots(), mains=mains(kind=["GRAV"]))
    answer = client.post(page, data={"csrf_token": token, "map_value.mains": "sewer_type.GRAV=sanitary"})
    words = said(answer)
    assert answer.status_code == 422 and "The data can be used" not in words
    assert "Coded values are given for the sewer_type field of the mains layer (GRAV=sanitary)" in words
    assert "Choose the column that holds sewer_type for the mains layer on the column-mapping page" in words
    assert client.get(page).status_code == 200  # kept
    fixed = client.post(
        page, data={"csrf_token": token, "mains.sewer_type": "kind", "map_value.mains": "sewer_type.GRAV=sanitary"}
    )
    assert fixed.status_code == 200 and "The data can be used" in said(fixed)


# --- 3. a zip of CSV tables given to the command line -------------------------------------------------------------


def test_a_zip_of_one_csv_given_as_data_is_told_it_is_a_table_not_no_mains(tmp_path):
    """GDAL reads a zip of parcels.csv as a table named parcels: the command line said "No mains layer found"."""
    from tests.conftest import Runner

    data = _zip(tmp_path / "town.zip", {"parcels.csv": "parcel_id,x,y\nL1,457000,1490000\n"})
    result = Runner().invoke("analyze", "--profile", "fort-plain", "--data", data)
    assert result.exit_code != 0
    text = " ".join(result.output.split())
    assert "No mains layer found" not in text
    assert "town.zip holds no map layer sewerplan reads (it holds parcels.csv)." in text
    assert "A CSV table is not accepted, as it has no shapes" in text and "Add Delimited Text Layer" in text


@pytest.mark.parametrize("inside", ["", "town/"])
def test_a_table_in_a_zip_named_as_a_missing_layer_beside_real_layers_is_named(tmp_path, inside):
    """parcels.shp beside mains.csv: the CSV was left out without a word, and the user told "No mains layer found"."""
    folder = tmp_path / "town"
    folder.mkdir()
    lots().to_file(folder / "parcels.shp")
    (folder / "mains.csv").write_text("main_id\nM1\n")
    data = _zip(tmp_path / "town.zip", {inside + p.name: p.read_bytes() for p in folder.iterdir()})
    with pytest.raises(
        LayerError, match=r"^town\.zip holds mains\.csv where the mains layer was looked for, and a CSV"
    ):
        find_layers(str(data))


@pytest.mark.parametrize("where", ["zip", "folder"])
def test_a_table_beside_the_layer_of_its_name_or_in_a_folder_is_left_alone(tmp_path, where):
    """The assessor's parcels.csv beside the parcels layer; a folder's buildings.csv, which `sewerplan buildings
    --out buildings.csv` may have written there."""
    folder = tmp_path / "town"
    folder.mkdir()
    lots().to_file(folder / "parcels.shp")
    mains().to_file(folder / "mains.shp")
    (folder / "parcels.csv").write_text("parcel_id,assessed\nL1,100\n")
    if where == "folder":
        (folder / "buildings.csv").write_text("parcel_id,status\nL1,ok\n")
    data = folder if where == "folder" else _zip(tmp_path / "t.zip", {p.name: p.read_bytes() for p in folder.iterdir()})
    assert sorted(find_layers(str(data))) == ["mains", "parcels"]


@pytest.mark.parametrize(
    ("members", "kinds"),
    [({"parcels.geojson": 1, "mains.geojson": 2}, ["mains", "parcels"]), ({"parcels.geojson": 1}, ["parcels"])],
)
def test_geojson_files_at_a_zips_top_are_read_by_their_names(tmp_path, members, kinds):
    """Two GeoJSON files at the top: "holds no map layer sewerplan reads (it holds parcels.geojson, mains.geojson)";
    one parcels.geojson in town.zip: a layer named town."""
    frames = {1: lots(), 2: mains()}
    data = _zip(tmp_path / "town.zip", {n: frames[k].to_crs(4326).to_json() for n, k in members.items()})
    found = find_layers(str(data))
    assert sorted(found) == kinds
    assert found["parcels"].label == "parcels (parcels.geojson)"


# --- 4. one sentence for a zip of no layer ------------------------------------------------------------------------


def test_a_zip_of_no_layer_is_told_in_the_same_words_on_the_command_line_and_the_web(tmp_path):
    members = {"wells.csv": b"x,y\n1,2\n", "notes.xlsx": b"PK"}
    with pytest.raises(LayerError) as web:
        upload(tmp_path / "up", "town.zip", zipped(members))
    with pytest.raises(LayerError) as cli:
        find_layers(str(_zip(tmp_path / "town.zip", members)))
    web_text, cli_text = str(web.value), str(cli.value)
    head = " holds no map layer sewerplan reads (it holds wells.csv, notes.xlsx). A CSV table is not accepted"
    assert web_text.startswith("The upload" + head) and cli_text.startswith("town.zip" + head)
    assert (
        web_text.split(". Upload the layers themselves")[0]
        == "The upload" + cli_text[len("town.zip") :].split(". Zip the layers themselves")[0]
    )
    assert "A spreadsheet is not accepted" in web_text and "A spreadsheet is not accepted" in cli_text


def test_the_sentence_keeps_each_callers_verb():
    assert no_layer_in("The file", ["a.kml"], verb="add").endswith(
        "Add the layer itself: sewerplan reads shapefiles (.shp with .shx, .dbf), GeoPackage (.gpkg), GeoJSON "
        "(.geojson), FlatGeobuf (.fgb), GeoParquet (.parquet) or a File Geodatabase folder (.gdb)."
    )
    assert "KML (Google Earth) is not accepted" in no_layer_in("The upload", ["a.kml"], verb="upload")
    assert "KML" not in no_layer_in("town.zip", ["a.kml"], verb="zip")  # the command line reads KML


# --- 5. hostile uploads -------------------------------------------------------------------------------------------

LOCAL_GRID = (
    'LOCAL_CS["Town grid",LOCAL_DATUM["Local",0],UNIT["US survey foot",0.304800609601219],'
    'AXIS["X",EAST],AXIS["Y",NORTH]]'
)


def _shapefile_zip(folder: Path, frame: gpd.GeoDataFrame, **replaced: bytes | str) -> bytes:
    """A zipped parcels shapefile of ``frame``, its parts given in ``replaced`` (``prj=...``) written instead."""
    folder.mkdir()
    frame.to_file(folder / "parcels.shp")
    parts = {p.name: p.read_bytes() for p in folder.iterdir()}
    parts |= {f"parcels.{suffix}": content for suffix, content in replaced.items()}
    return zipped(parts)


def _upload_zip(client, token: str, payload: bytes):
    return client.post(
        "/data/upload",
        data={"dataset": (io.BytesIO(payload), "town.zip"), "csrf_token": token},
        content_type="multipart/form-data",
    )


def test_a_shapefile_whose_prj_is_a_local_grid_is_told_to_give_its_crs_not_an_error_page(web, tmp_path):
    """A .prj of LOCAL_CS (a town's grid): PROJ cannot place it on the earth, and the check crashed ("Error creating
    Transformer from CRS"), an error page on the web and a traceback on the command line."""
    app, client, token, _ = web
    sent = _upload_zip(client, token, _shapefile_zip(tmp_path / "shp", lots(), prj=LOCAL_GRID))
    page = sent.headers["Location"]
    answer = client.post(page, data={"csrf_token": token})
    words = said(answer)
    assert answer.status_code == 422
    assert (
        "parcels (parcels.shp) declares a local grid (Town grid), which no coordinate reference system places" in words
    )
    assert 'Fill in the "CRS" field of the parcels layer on the column-mapping page' in words
    given = client.post(page, data={"csrf_token": token, "layer_crs.parcels": "EPSG:2260"})  # kept, and fixed there
    assert given.status_code == 200 and "The data can be used: 2 parcels" in said(given)


def test_a_layer_in_a_local_grid_is_measured_when_its_model_is_local():
    """The refusal is for a grid measured in another CRS only: a layer already in the measuring CRS is not refused."""
    grid = pyproj.CRS.from_wkt(LOCAL_GRID)
    frame = gpd.GeoDataFrame({"main_id": ["M1"]}, geometry=[shapely.LineString([(0, 0), (100, 0)])], crs=grid)
    out, problems = prepare_layer(frame, SPECS["mains"], label="mains", target_crs=grid)
    assert out is not None and [p for p in problems if p.severity == "error"] == []


@pytest.mark.parametrize(
    ("part", "told"),
    [
        ("shp", "parcels.shp is empty (0 bytes): it was cut short when copied or zipped, or its export failed."),
        ("dbf", "parcels.dbf is empty (0 bytes): export the layer again from the GIS as a shapefile, and zip its"),
        ("shx", "parcels.shx is empty (0 bytes): export the layer again"),
    ],
    ids=["shp", "dbf", "shx"],
)
def test_an_empty_shapefile_part_is_said_to_be_empty(tmp_path, part, told):
    """A 0-byte .shp was "not a shapefile: it starts with ''"; a 0-byte .dbf "not the .dbf part of a shapefile.",
    with nothing to say what to do."""
    with pytest.raises(LayerError) as refused:
        upload(tmp_path / "up", "town.zip", _shapefile_zip(tmp_path / "shp", lots(), **{part: b""}))
    assert str(refused.value).startswith(told)
    assert not any((tmp_path / "up").iterdir())


def test_an_empty_geojson_is_said_to_be_empty(tmp_path):
    with pytest.raises(LayerError, match=r"^parcels\.geojson is empty \(0 bytes\)"):
        upload(tmp_path / "up", "parcels.geojson", b"")


def test_a_second_parcels_layer_is_named_as_such_and_can_be_chosen_instead(web):
    """A GeoPackage of parcels and tax_parcels: parcels was taken, and tax_parcels listed as a layer "whose name does
    not say what it is", with nothing to say a choice had been made between two parcels layers."""
    app, client, token, send = web
    page = send(parcels=lots(2), tax_parcels=lots(3))
    words = said(client.get(page))
    assert "Layers not used" in words and "Layers whose names do not say" not in words
    assert (
        "sent.gpkg: layer tax_parcels named as a parcels layer too, and an upload has one layer of each kind: "
        "parcels (sent.gpkg:parcels) is used now; choose parcels here to use this one instead" in words
    )
    client.post(page.replace("/mapping", "/kinds"), data={"csrf_token": token, "kind.tax_parcels": "parcels"})
    answer = client.post(page, data={"csrf_token": token})
    assert answer.status_code == 200 and "The data can be used: 3 parcels" in said(answer)
    assert "sent.gpkg: layer parcels named as a parcels layer too" in said(client.get(page))


def test_a_table_zipped_beside_the_layers_is_named_on_the_mapping_page(web, tmp_path):
    """parcels.shp, mains.csv and a README: the upload was the parcels alone, and the report asked for a mains
    layer without a word of the mains.csv the planner had zipped (the command line refuses such a zip)."""
    app, client, token, _ = web
    folder = tmp_path / "shp"
    folder.mkdir()
    lots().to_file(folder / "parcels.shp")
    members = {p.name: p.read_bytes() for p in folder.iterdir()} | {"mains.csv": b"main_id\nM1\n", "README.txt": b"hi"}
    members |= {"parcels.sbn": b"x", "parcels.shp.xml": b"<metadata/>"}  # ArcGIS's own files: not named
    page = _upload_zip(client, token, zipped(members)).headers["Location"]
    words = said(client.get(page))
    assert "Not read from the upload, as they are no layers sewerplan reads: mains.csv, README.txt." in words
    assert "mains.csv is named as the mains layer, and a CSV table is not accepted, as it has no shapes" in words
    assert "README.txt is named" not in words


# --- 6. a GeoPackage's attribute table named as a layer -------------------------------------------------------------


def inspections() -> pd.DataFrame:
    """A county's manhole inspection table: attributes, no shapes."""
    return pd.DataFrame({"mh_id": ["MH1", "MH2"], "inspected": ["2024-05-01", "2024-06-12"]})


def test_a_table_named_as_an_optional_layer_keeps_the_upload_and_is_listed_as_not_used(web):
    """parcels, mains and an inspection table named manholes: the check refused the table as the manholes layer, and
    the whole upload was deleted, its good parcels and mains with it."""
    app, client, token, send = web
    page = send(parcels=lots(), mains=mains(), manholes=inspections())
    words = said(client.get(page))
    assert "Layers not used" in words
    assert (
        "sent.gpkg's layer manholes has no shapes (it is a table, attributes only), so sewerplan does not use it as "
        "the manholes layer its name says. To use it as the manholes layer, export that layer from the GIS with its "
        "geometry and add it to this upload (or upload the data again); leave it out if it is not meant as a layer."
        in words
    )
    assert "Add Delimited Text Layer" in words and '"Create points layer from table"' in words
    assert '<select name="kind.manholes"' not in client.get(page).get_data(as_text=True)  # no kind to choose for it
    answer = client.post(page, data={"csrf_token": token})
    assert answer.status_code == 200 and "The data can be used: 2 parcels" in said(answer)
    assert sorted(n for n, _ in pyogrio.list_layers(_folder(app, page) / "store.gpkg") if n in SPECS) == [
        "mains",
        "parcels",
    ]


def test_a_table_named_mains_keeps_the_upload_and_the_report_asks_for_the_mains(web):
    """The mains are required: the report says they are missing, as it does for an upload without them."""
    app, client, token, send = web
    without = said(client.post(send(parcels=lots()), data={"csrf_token": token}))
    page = send(parcels=lots(), mains=inspections())
    assert "sent.gpkg's layer mains has no shapes (it is a table, attributes only)" in said(client.get(page))
    answer = client.post(page, data={"csrf_token": token})
    words = said(answer)
    assert answer.status_code == 200 and "The data can be used: 2 parcels" in words
    missing = "Not yet: The analysis needs a sewer mains layer to measure to. Add the mains layer with"
    assert missing in without and missing in words
    assert client.get(page).status_code == 200  # kept


def test_a_table_named_mains_beside_a_sewer_mains_layer_leaves_that_layer_used(web):
    app, client, token, send = web
    page = send(parcels=lots(), mains=inspections(), sewer_mains=mains())
    words = said(client.get(page))
    assert "mains (sent.gpkg:sewer_mains)" in words and "does not use it as the mains layer its name says" in words
    answer = client.post(page, data={"csrf_token": token})
    assert answer.status_code == 200 and "needs a sewer mains layer" not in said(answer)


def test_a_table_named_parcels_keeps_the_upload_and_asks_for_the_parcels(web):
    app, client, token, send = web
    page = send(parcels=inspections(), mains=mains())
    words = said(client.get(page))
    assert "sent.gpkg's layer parcels has no shapes (it is a table, attributes only)" in words
    assert "Add a layer to this upload" in words  # the form to add the parcels
    answer = client.post(page, data={"csrf_token": token})
    assert answer.status_code == 422
    assert "No layer of the upload is the parcels layer: say which one it is below, or add it." in said(answer)
    assert client.get(page).status_code == 200  # kept


def test_a_table_given_a_kind_by_a_form_made_by_hand_is_refused_and_the_upload_kept(web):
    app, client, token, send = web
    page = send(parcels=lots(), mains=mains(), inspections=inspections())
    words = said(client.get(page))
    assert (
        "sent.gpkg's layer inspections has no shapes (it is a table, attributes only), so sewerplan does not use"
        in (words)
    )
    answer = client.post(page.replace("/mapping", "/kinds"), data={"csrf_token": token, "kind.inspections": "manholes"})
    assert answer.status_code == 400 and "sent.gpkg's layer inspections has no shapes" in said(answer)
    checked = client.post(page, data={"csrf_token": token})
    assert checked.status_code == 200 and "The data can be used: 2 parcels" in said(checked)


def test_a_table_added_as_a_missing_layer_is_refused_and_the_upload_kept(tmp_path):
    from layers.uploads import add_to_upload, upload_sources

    sent = tmp_path / "sent.gpkg"
    lots().to_file(sent, layer="parcels")
    folder = upload(tmp_path / "up", "sent.gpkg", sent.read_bytes())
    table = tmp_path / "mh.gpkg"
    pyogrio.write_dataframe(inspections(), table, layer="inspections")
    with pytest.raises(LayerError, match=r"^mh\.gpkg holds inspections, a table without shapes \(attributes only\)"):
        add_to_upload(folder, "mh.gpkg", io.BytesIO(table.read_bytes()), kind="manholes", max_unzipped_bytes=1 << 28)
    assert sorted(upload_sources(folder)) == ["parcels"] and folder.is_dir()


@pytest.mark.parametrize("beside", [True, False], ids=["beside-sewer_mains", "alone"])
def test_the_command_line_names_a_table_named_mains_or_takes_the_layer_beside_it(tmp_path, beside):
    """sewerplan analyze --data town.gpkg of parcels, a mains table and a sewer_mains layer: the table was taken as
    the mains and the run refused, where the web uses sewer_mains. Alone, the table is named for what it is."""
    from tests.conftest import Runner

    data = tmp_path / "town.gpkg"
    lots().to_file(data, layer="parcels")
    pyogrio.write_dataframe(inspections(), data, layer="mains")
    if beside:
        mains().to_file(data, layer="sewer_mains")
    found = find_layers(str(data))
    assert found["mains"].layer == ("sewer_mains" if beside else "mains")
    result = Runner().invoke("analyze", "--profile", "wappinger", "--set", "mandate.distance_ft=200", "--data", data)
    text = " ".join(result.output.split())
    told = "mains (town.gpkg:mains) is a table without geometry (attributes only), so it cannot be the mains layer"
    assert (told in text) is not beside and "Traceback" not in text


# --- 7. a column literally named "(none)" -------------------------------------------------------------------------


def test_a_column_named_like_the_none_marker_can_be_chosen(web):
    """A column named "(none)": its option posted "(none)", the marker of none chosen on purpose, and the field was
    left empty, the column unused, whatever the planner chose."""
    app, client, token, send = web
    page = send(parcels=lots(**{"(none)": ["SMITH", "JONES"]}))
    select = _select(client.get(page).get_data(as_text=True), "parcels.owner_name")
    assert '<option value="(none)" >(none)</option>' in select  # the column
    answer = client.post(page, data={"csrf_token": token, "parcels.owner_name": "(none)"})
    words = said(answer)
    assert answer.status_code == 200 and "Columns not used parcels: every column is used" in words
    assert "left empty on purpose" not in words
    fields = list(pyogrio.read_info(_folder(app, page) / "store.gpkg", layer="parcels")["fields"])
    assert "owner_name" in fields


def test_beside_a_column_named_like_the_none_marker_none_can_still_be_chosen(web):
    app, client, token, send = web
    page = send(parcels=lots(owner=["SMITH", "JONES"], **{"(none)": ["a", "b"]}))
    select = _select(client.get(page).get_data(as_text=True), "parcels.owner_name")
    (marker,) = re.findall(r'<option value="([^"]*)"[^>]*>\(none\)</option>', select)[:1]
    assert marker not in ("", "(none)", "owner")
    answer = client.post(page, data={"csrf_token": token, "parcels.owner_name": marker})
    words = said(answer)
    assert answer.status_code == 200 and 'owner_name is empty, as "(none)" was chosen for it' in words
    fields = list(pyogrio.read_info(_folder(app, page) / "store.gpkg", layer="parcels")["fields"])
    assert "owner_name" not in fields and "input_owner" in fields


# --- 8. a column whose name has spaces at its ends ----------------------------------------------------------------


def test_a_column_whose_name_has_spaces_at_its_ends_can_be_chosen(web):
    """A column named " Owner Name " (a spreadsheet's header exported as typed), chosen on the mapping page: the form
    trimmed it to "Owner Name" and the check refused the upload ("no such column. Columns: parcel_id, Owner Name")."""
    app, client, token, send = web
    page = send(parcels=lots(**{" Owner Name ": ["SMITH", "JONES"]}))
    # found by name as a spreadsheet heads it (layers.schema.column_for), so the page suggests it
    assert '<option value=" Owner Name " selected>' in _select(
        client.get(page).get_data(as_text=True), "parcels.owner_name"
    )
    answer = client.post(page, data={"csrf_token": token, "parcels.owner_name": " Owner Name "})
    assert answer.status_code == 200 and "no such column" not in said(answer)
    store = _folder(app, page) / "store.gpkg"
    assert gpd.read_file(store, layer="parcels")["owner_name"].tolist() == ["SMITH", "JONES"]


def test_of_two_columns_alike_but_for_spaces_the_one_chosen_is_taken(web):
    """ "Owner" and " Owner" (the owner of record and a typed-in correction): " Owner" chosen was trimmed by the form
    and the other column taken, without a word."""
    app, client, token, send = web
    page = send(parcels=lots(Owner=["SMITH", "JONES"], **{" Owner": ["ROE", "POE"]}))
    answer = client.post(page, data={"csrf_token": token, "parcels.owner_name": " Owner"})
    assert answer.status_code == 200
    store = _folder(app, page) / "store.gpkg"
    assert gpd.read_file(store, layer="parcels")["owner_name"].tolist() == ["ROE", "POE"]


def test_a_column_named_without_the_spaces_at_its_ends_is_that_column():
    """On the command line (--map parcels.owner_name="Owner Name", or a mapping file) the name is typed without the
    spaces the layer's header has; it is that column where only one column has that name once trimmed. A column
    found by its own name ("PARCEL_ID ") is found with them too."""
    frame = lots(**{" Owner Name ": ["SMITH", "JONES"]}).rename(columns={"parcel_id": "PARCEL_ID "})
    out, problems = prepared(frame, "parcels", ColumnMapping({"parcels": {"owner_name": "Owner Name"}}))
    assert [p.message for p in problems if p.severity == "error"] == []
    assert out["owner_name"].tolist() == ["SMITH", "JONES"] and out["parcel_id"].tolist() == ["L1", "L2"]


def test_two_columns_alike_but_for_spaces_are_not_guessed_between():
    frame = lots(**{"Owner ": ["SMITH", "JONES"], " Owner": ["A", "B"]})
    _, problems = prepared(frame, "parcels", ColumnMapping({"parcels": {"owner_name": "Owner"}}))
    assert any("has no such column" in p.message for p in problems if p.severity == "error")


# --- 9. a shapefile's .dbf without its .shp, given to the command line ----------------------------------------------


def _shapefiles_without_parcels_shp(folder: Path) -> Path:
    folder.mkdir()
    lots().to_file(folder / "parcels.shp")
    mains().to_file(folder / "mains.shp")
    (folder / "parcels.shp").unlink()
    return folder


@pytest.mark.parametrize("given", ["zip", "folder"])
def test_a_dbf_without_its_shp_is_said_to_lack_it(tmp_path, given):
    """parcels.dbf without parcels.shp: in a zip GDAL read it as a table, and the run said "a table without
    geometry ... export it with its shapes"; in a folder it was passed over and the run said no parcels layer was
    found. Both now name the missing file."""
    from tests.conftest import Runner

    folder = _shapefiles_without_parcels_shp(tmp_path / "town")
    data = folder
    if given == "zip":
        data = tmp_path / "town.zip"
        with zipfile.ZipFile(data, "w") as archive:
            for part in sorted(folder.iterdir()):
                archive.write(part, part.name)
    result = Runner().invoke("analyze", "--profile", "wappinger", "--set", "mandate.distance_ft=200", "--data", data)
    text = " ".join(result.output.split())
    assert result.exit_code != 0 and "Traceback" not in text
    assert f"parcels.dbf in {data.name} has no parcels.shp beside it" in text


# --- 10. two layers of one GeoPackage named for the same kind, given to the command line --------------------------


def test_two_layers_that_could_be_the_parcels_are_not_chosen_between_without_a_word(tmp_path):
    """tax_parcels (the first 2 lots) beside lots (all 5): the run took tax_parcels, by the order of the names it
    knows, and left the other 3 parcels out without a word. It is refused, naming both; the one given is used."""
    from tests.conftest import Runner

    data = tmp_path / "county.gpkg"
    pyogrio.write_dataframe(lots(2, occupied=[True] * 2), data, layer="tax_parcels")
    pyogrio.write_dataframe(lots(5, occupied=[True] * 5), data, layer="lots")
    pyogrio.write_dataframe(mains(), data, layer="mains")
    run = ("analyze", "--profile", "wappinger", "--set", "mandate.distance_ft=200", "--data", data, "--json")
    refused = Runner().invoke(*run)
    said = " ".join(refused.output.split())
    assert refused.exit_code != 0 and "Traceback" not in said
    assert "county.gpkg holds 2 layers that could be the parcels layer: tax_parcels and lots" in said
    assert "--layer parcels=county.gpkg:lots" in said
    chosen = Runner().invoke(*run, "--layer", f"parcels={data}:lots", ok=True)
    assert '"parcels": 5' in chosen.output


def test_the_report_counts_one_layers_feature_in_the_singular(web):
    """ "The data can be used: 1 parcels, 1 mains" (and "1 outfalls, 1 service areas"): one of each is said so."""
    app, client, token, send = web
    page = send(parcels=lots(1), mains=mains())
    answer = client.post(page, data={"csrf_token": token})
    assert answer.status_code == 200 and "The data can be used: 1 parcel, 1 main." in said(answer)
