"""Loose ends of the upload found with hostile and messy files: a form naming what no page offers, files that are no
layer, GDAL's own words, text in the wrong code page, a name with nothing before its dot, a clash when adding.

Each test builds its files in ``tmp_path``. The planner is told, in one sentence, what is wrong and how to fix it,
and an upload that a field of its column-mapping page fixes is kept.
"""

from __future__ import annotations

import html
import io
import json
import re
from pathlib import Path

import geopandas as gpd
import pyproj
import pytest
import shapely

from layers.errors import LayerError
from layers.read import EXTRA_NUMBERS, TEXT_AS_UTF8, LayerSource, _in_words, read_source
from layers.schema import SPECS
from layers.uploads import add_to_upload, upload_layers
from layers.validate import ColumnMapping, mapping_mistakes, prepare_layer
from tests.test_upload_messy import upload, zipped

CRS = "EPSG:2260"


def lots(n: int = 3, **columns) -> gpd.GeoDataFrame:
    """``n`` square lots in a row near Fort Plain, IDs L1 ..."""
    x0, y0 = 457_000.0, 1_490_000.0
    return gpd.GeoDataFrame(
        {"parcel_id": [f"L{i + 1}" for i in range(n)], "owner_name": ["SMITH"] * n, **columns},
        geometry=[shapely.box(x0 + 60 * i, y0, x0 + 60 * i + 50, y0 + 100) for i in range(n)],
        crs=CRS,
    )


def said(response) -> str:
    """A page's words, without its tags, as the planner reads them."""
    text = re.sub(r"<[^>]+>", " ", response.get_data(as_text=True))
    return " ".join(html.unescape(text).split())


@pytest.fixture
def web(tmp_path):
    """The app, its client, the CSRF token, and the column-mapping page of an upload of three lots (a GeoPackage)."""
    from tests.conftest import csrf, make_app

    app = make_app(tmp_path / "town.gpkg", tmp_path)
    client = app.test_client()
    token = csrf(client)
    lots().to_file(tmp_path / "lots.gpkg", layer="parcels")
    sent = client.post(
        "/data/upload",
        data={"dataset": (io.BytesIO((tmp_path / "lots.gpkg").read_bytes()), "lots.gpkg"), "csrf_token": token},
        content_type="multipart/form-data",
    )
    assert sent.status_code == 302, said(sent)[:500]
    return app, client, token, sent.headers["Location"]


def prepared(frame: gpd.GeoDataFrame, kind: str, mapping: ColumnMapping):
    return prepare_layer(frame, SPECS[kind], label=kind, target_crs=pyproj.CRS(CRS), mapping=mapping)


# --- 1. a field no layer has --------------------------------------------------------------------------------------


def test_an_unknown_field_in_the_column_mapping_is_refused_by_name_and_the_upload_kept(web):
    """A stale page or a hand-made form sent parcels.no_such=owner_name: the check refused it with a problem no field
    of the mapping page fixes, so the whole upload was deleted."""
    _, client, token, page = web
    answer = client.post(page, data={"csrf_token": token, "parcels.no_such": "owner_name"})
    words = said(answer)
    assert answer.status_code == 422
    assert "The column mapping of the parcels layer names a field 'no_such', which the parcels layer does not have" in (
        words
    )
    assert "its fields are connected, control_manhole," in words and "parcel_id" in words
    assert client.get(page).status_code == 200  # kept
    checked = client.post(page, data={"csrf_token": token, "parcels.parcel_id": "parcel_id"})
    assert checked.status_code == 200 and "The data can be used: 3 parcels" in said(checked)


def test_a_field_named_by_another_of_its_names_says_which_field_it_is():
    (text,) = mapping_mistakes(ColumnMapping(columns={"parcels": {"owner": "OWNER1"}}))
    assert "names a field 'owner', which the parcels layer does not have (owner is a name of its owner_name" in text


# --- 2. coded values for a field without codes --------------------------------------------------------------------


def test_coded_values_for_a_free_text_field_are_refused_not_ignored(web):
    """map_value.parcels "owner.SMITH=JONES": owner (owner_name) is free text, and the line changed nothing, unsaid."""
    _, client, token, page = web
    answer = client.post(page, data={"csrf_token": token, "map_value.parcels": "owner.SMITH=JONES"})
    words = said(answer)
    assert answer.status_code == 422
    assert "Coded values of the parcels layer are given for owner (a name of its owner_name field)" in words
    assert "not as codes, so they would change nothing" in words
    assert "Its fields with codes are occupied (yes or no), connected (yes or no)." in words
    assert client.get(page).status_code == 200  # kept


def test_coded_values_under_another_name_of_a_coded_field_name_the_field():
    mains = gpd.GeoDataFrame(
        {"main_id": ["M1"], "type": ["GRAV"]},
        geometry=[shapely.LineString([(457_000, 1_490_110), (457_300, 1_490_110)])],
        crs=CRS,
    )
    out, problems = prepared(mains, "mains", ColumnMapping(values={"mains": {"type": {"GRAV": "sanitary"}}}))
    assert out is None
    (problem,) = [p for p in problems if p.check == "mapping"]
    assert "given for type, a name of its sewer_type field: write them as sewer_type.VALUE=CODE" in problem.message
    assert "Its fields with codes are sewer_type, ownership, status." in problem.message


def test_coded_values_for_a_coded_field_are_not_refused():
    assert mapping_mistakes(ColumnMapping(values={"mains": {"sewer_type": {"GRAV": "sanitary"}}})) == []


# --- 7. one column for two fields ---------------------------------------------------------------------------------


def test_one_column_chosen_for_two_fields_is_refused_naming_both(web):
    """The owner column chosen for site_address as well as owner_name: each letter would have gone to the owner's
    name as an address, and the check said the data could be used."""
    _, client, token, page = web
    answer = client.post(
        page,
        data={"csrf_token": token, "parcels.owner_name": "owner_name", "parcels.site_address": "owner_name"},
    )
    words = said(answer)
    assert answer.status_code == 422
    assert "chooses column 'owner_name' of the parcels layer for both owner_name and site_address" in words
    assert client.get(page).status_code == 200  # kept


def test_one_column_for_two_fields_refuses_the_layer_on_the_command_line_too():
    mapping = ColumnMapping(columns={"parcels": {"site_address": "owner_name", "mail_address": "owner_name"}})
    out, problems = prepared(lots(), "parcels", mapping)
    assert out is None
    (problem,) = [p for p in problems if p.severity == "error"]
    assert "for both mail_address and site_address" in problem.message
    assert (problem.fix.setting, problem.fix.target) == ("map", "parcels.site_address")


# --- 3. a zip of no layer -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("members", "words"),
    [
        ({"wells.csv": b"x,y\n1,2\n"}, ["it holds wells.csv).", "A CSV table is not accepted", "Add Delimited Text"]),
        ({"town.kml": b"<kml/>"}, ["it holds town.kml).", "KML (Google Earth) is not accepted"]),
        ({"inner.zip": zipped({"parcels.geojson": b"{}"})}, ["it holds inner.zip).", "A zip inside the zip is not"]),
        ({"d/a.csv": b"x\n", "b.kml": b"<kml/>", "__MACOSX/._a.csv": b""}, ["it holds a.csv, b.kml).", "KML"]),
    ],
)
def test_a_zip_of_no_layer_names_what_it_holds_and_what_is_accepted(tmp_path, members, words):
    with pytest.raises(LayerError) as refused:
        upload(tmp_path / "up", "town.zip", zipped(members))
    text = str(refused.value)
    assert text.startswith("The upload holds no map layer sewerplan reads (it holds")
    assert "sewerplan reads shapefiles (.shp with .shx, .dbf), GeoPackage (.gpkg)" in text
    for w in words:
        assert w in text
    assert "__MACOSX" not in text and not any((tmp_path / "up").iterdir())


def test_a_csv_uploaded_on_its_own_is_told_it_is_not_accepted_and_why(tmp_path):
    with pytest.raises(LayerError, match=r"'wells.csv': A CSV table is not accepted, as it has no shapes"):
        upload(tmp_path / "up", "wells.csv", b"x,y\n1,2\n")


def test_a_file_added_to_an_upload_that_holds_no_layer_names_what_it_holds(tmp_path):
    folder = upload(tmp_path / "up", "parcels.geojson", lots().to_crs(4326).to_json().encode())
    with pytest.raises(LayerError, match=r"^The file holds no map layer sewerplan reads \(it holds streets.csv\)\."):
        add_to_upload(
            folder,
            "streets.zip",
            io.BytesIO(zipped({"streets.csv": b"a\n"})),
            kind="streets",
            max_unzipped_bytes=1 << 20,
        )
    assert list(upload_layers(folder)) == ["parcels"]


# --- 6. a name with nothing before its dot ------------------------------------------------------------------------


@pytest.mark.parametrize("name", [".geojson", ".GPKG", "folder/.zip"])
def test_a_file_named_only_by_its_extension_is_told_so_not_to_upload_what_it_is(tmp_path, name):
    """'.geojson': upload ... GeoJSON (.geojson): the GeoJSON file was refused for not being one."""
    with pytest.raises(LayerError) as refused:
        upload(tmp_path / "up", name, b"{}")
    text = str(refused.value)
    assert "has no name before its extension" in text and f"(parcels{Path(name).name.lower()}, say)" in text
    assert "upload a zipped shapefile" not in text.lower()


def test_a_file_named_only_by_its_extension_is_told_so_when_added(tmp_path):
    folder = upload(tmp_path / "up", "parcels.geojson", lots().to_crs(4326).to_json().encode())
    with pytest.raises(LayerError, match=r"has no name before its extension.*add it again"):
        add_to_upload(folder, ".geojson", io.BytesIO(b"{}"), kind="streets", max_unzipped_bytes=1 << 20)


# --- 8. a clash when adding a layer -------------------------------------------------------------------------------


def test_adding_a_layer_of_a_name_the_upload_has_says_which_two_clash(web, tmp_path):
    """A GeoPackage whose layer is also named parcels, added as the streets: the clash's sentence (which names both)
    was swallowed for "already has a layer named 'parcels'", on a page without the form to add it again."""
    app, client, token, page = web
    lots(2).to_file(tmp_path / "more.gpkg", layer="parcels")
    answer = client.post(
        page.replace("/mapping", "/add"),
        data={
            "csrf_token": token,
            "kind": "streets",
            "layer": (io.BytesIO((tmp_path / "more.gpkg").read_bytes()), "more.gpkg"),
        },
        content_type="multipart/form-data",
    )
    words = said(answer)
    assert answer.status_code == 400
    assert "The upload holds a layer named parcels already (lots.gpkg's layer parcels)" in words
    assert "and the layer in more.gpkg has that name too" in words
    assert 'id="add-layer-form"' in answer.get_data(as_text=True)  # the form to add it again, on the page
    folder = Path(app.config["UPLOAD_FOLDER"]) / page.split("/")[2]
    assert sorted(p.name for p in (folder / "data").iterdir()) == ["lots.gpkg"]  # the upload as it was


# --- 4. positions of four numbers ---------------------------------------------------------------------------------


def test_gdals_words_for_positions_of_four_numbers_are_said_plainly():
    heard = (
        "OGRGeoJSONReadRawPoint(): too many members in array '[ -74.6, 42.9, 0, 0 ]': 4. At most 3 are handled. "
        "Ignoring extra members. Further messages of this type will be suppressed."
    )
    assert _in_words(heard) == EXTRA_NUMBERS


def test_a_geojson_of_xyzm_positions_is_read_by_its_first_two_numbers_and_said_plainly(tmp_path):
    """GDAL warns once a process, so the report says either the plain sentence or only that Z/M were dropped; never
    GDAL's words, and the lot is where its x and y say."""
    ring = [[-74.6, 42.9, 5, 7], [-74.6, 42.901, 5, 7], [-74.599, 42.901, 5, 7], [-74.6, 42.9, 5, 7]]
    feature = {
        "type": "Feature",
        "properties": {"parcel_id": "A"},
        "geometry": {"type": "Polygon", "coordinates": [ring]},
    }
    path = tmp_path / "parcels.geojson"
    path.write_text(json.dumps({"type": "FeatureCollection", "features": [feature]}))
    frame = read_source(LayerSource("parcels", str(path), None, "GeoJSON"))
    out, problems = prepare_layer(frame, SPECS["parcels"], label="parcels", target_crs=pyproj.CRS(4326))
    assert out is not None and out.geometry.iloc[0].bounds == pytest.approx((-74.6, 42.9, -74.599, 42.901))
    words = [p.message for p in problems]
    assert not any("GDAL warned" in w or "OGRGeoJSON" in w for w in words), words
    assert any("had Z or M values; dropped" in w for w in words)


# --- 5. a .cpg that says 1252 over UTF-8 text ---------------------------------------------------------------------


def _shapefile(folder: Path, names: list[str], *, written: str, cpg: str) -> LayerSource:
    folder.mkdir()
    lots(len(names)).assign(owner_name=names).to_file(folder / "parcels.shp", engine="pyogrio", encoding=written)
    (folder / "parcels.cpg").write_text(cpg)
    return LayerSource("parcels", str(folder / "parcels.shp"), None, "ESRI Shapefile")


def test_utf8_text_under_a_cpg_that_says_1252_is_read_as_utf8_and_said_so(tmp_path):
    """The county's export wrote UTF-8 and a .cpg of 1252: "Müller" was read as "MÃ¼ller" without a word, and went
    into the letters so."""
    names = ["Müller", "ÁLVAREZ", "SMITH"]
    frame = read_source(_shapefile(tmp_path / "shp", names, written="UTF-8", cpg="1252"))
    assert frame["owner_name"].tolist() == names
    (warned,) = frame.attrs["read_warnings"]
    assert warned == TEXT_AS_UTF8.format(seen="MÃ¼ller", meant="Müller")
    assert "Put UTF-8 in the .cpg file" in warned


def test_windows_1252_text_under_its_cpg_is_read_as_it_is(tmp_path):
    """A real cp1252 file is left alone: JOÃO and curly quotes hold no UTF-8 byte pair."""
    names = ["JOÃO PEÑA", "O’BRIEN “€” TRUST", "MÜLLER"]
    frame = read_source(_shapefile(tmp_path / "shp", names, written="cp1252", cpg="1252"))
    assert frame["owner_name"].tolist() == names
    assert not frame.attrs.get("read_warnings")


def test_a_refused_parcels_layer_keeps_an_upload_without_parcels(tmp_path):
    """A sewer department's layers alone (mains, no parcels), then a parcels file GDAL cannot open sent with the
    mapping page's "Add a layer" form: the upload was checked again for its report, its missing parcels refused it,
    and the whole upload was deleted ("No such upload"). Its mapping page says why, the upload kept."""
    import sqlite3

    from tests.conftest import csrf, make_app, posted_upload

    mains = gpd.GeoDataFrame(
        {"main_id": ["M1"]}, geometry=[shapely.LineString([(457_000, 1_489_990), (457_200, 1_489_990)])], crs=CRS
    )
    mains.to_file(tmp_path / "sewers.gpkg", layer="mains")
    lots().to_file(tmp_path / "parcels.gpkg", layer="parcels")
    with sqlite3.connect(tmp_path / "parcels.gpkg") as db:  # passes the upload's checks; GDAL cannot open it
        db.execute("DROP TABLE gpkg_geometry_columns")
    db.close()
    client = make_app(tmp_path / "town.gpkg", tmp_path).test_client()
    mapping = posted_upload(client, (tmp_path / "sewers.gpkg").read_bytes(), "sewers.gpkg")
    sent = (tmp_path / "parcels.gpkg").read_bytes()
    answer = client.post(
        mapping.replace("/mapping", "/add"),
        data={"kind": "parcels", "layer": (io.BytesIO(sent), "parcels.gpkg"), "csrf_token": csrf(client)},
        content_type="multipart/form-data",
    )
    assert answer.status_code == 400, said(answer)[:600]
    assert "which column holds what" in said(answer)
    assert "GDAL could not open parcels.gpkg as a GeoPackage" in said(answer)
    assert client.get(mapping).status_code == 200
