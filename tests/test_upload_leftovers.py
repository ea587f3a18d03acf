"""Leftovers of the upload: "(none)" chosen on purpose, coded values for a column the layer lacks, a zip of CSV tables
given to the command line, and one sentence for a zip that holds no layer wherever it is given.

Each test builds its files in ``tmp_path``, small enough to see the right answer.
"""

from __future__ import annotations

import html
import io
import re
import zipfile
from pathlib import Path

import geopandas as gpd
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
    """The app, its client, the CSRF token, and a function that uploads a GeoPackage of ``layers`` and returns its
    column-mapping page's address."""
    from tests.conftest import csrf, make_app

    app = make_app(tmp_path / "town.gpkg", tmp_path)
    client = app.test_client()
    token = csrf(client)

    def send(**layers: gpd.GeoDataFrame) -> str:
        path = tmp_path / "sent.gpkg"
        path.unlink(missing_ok=True)
        for name, frame in layers.items():
            frame.to_file(path, layer=name)
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
