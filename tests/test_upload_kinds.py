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
import shapely
from pyproj import CRS as PROJ_CRS

from layers.schema import PARCELS
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
