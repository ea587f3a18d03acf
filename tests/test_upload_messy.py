"""Messy real-world uploads on the Data page: what a town's files look like when they come from three offices.

Each test writes its own small files. The upload must be read as meant, or refused in one sentence that says what
is wrong and how to fix it; never read silently as something else.
"""

from __future__ import annotations

import html
import io
import zipfile
from pathlib import Path

import geopandas as gpd
import pytest
import shapely

from layers.errors import LayerError
from layers.uploads import new_upload, upload_layers

CRS = "EPSG:2260"


def lots(n: int, *, first: int = 1) -> gpd.GeoDataFrame:
    """``n`` square lots in a row, near Fort Plain, IDs ``L{first}`` ..."""
    x0, y0 = 457_000.0, 1_490_000.0
    return gpd.GeoDataFrame(
        {"parcel_id": [f"L{first + i}" for i in range(n)], "owner_name": ["SMITH"] * n},
        geometry=[shapely.box(x0 + 60 * i, y0, x0 + 60 * i + 50, y0 + 100) for i in range(n)],
        crs=CRS,
    )


def shapefile_parts(frame: gpd.GeoDataFrame, folder: Path, name: str = "parcels") -> dict[str, bytes]:
    folder.mkdir(parents=True, exist_ok=True)
    frame.to_file(folder / f"{name}.shp")
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.stem == name}


def zipped(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, content in members.items():
            zf.writestr(name, content)
    return buf.getvalue()


def upload(root: Path, name: str, payload: bytes) -> Path:
    return new_upload(root, name, io.BytesIO(payload), owner="pat", max_unzipped_bytes=1 << 28)


def test_one_shapefile_name_in_two_folders_of_a_zip_is_refused_not_read_one_over_the_other(tmp_path):
    """Last year's and this year's parcels, each in its folder: unpacked without their folders, the second was
    written over the first (or their parts mixed), and the report said "The data can be used: 3 parcels" of a
    town of 5, with nothing to say which year's were read."""
    old = shapefile_parts(lots(5), tmp_path / "2024")
    new = shapefile_parts(lots(3, first=10), tmp_path / "2025")
    members = {f"2024/{k}": v for k, v in old.items()} | {f"2025/{k}": v for k, v in new.items()}
    with pytest.raises(LayerError) as refused:
        upload(tmp_path / "uploads", "town.zip", zipped(members))
    said = str(refused.value)
    assert "parcels.shp twice (2024/parcels.shp and 2025/parcels.shp)" in said
    assert "zip only the one you mean" in said
    assert list((tmp_path / "uploads").iterdir()) == []  # a refused upload leaves nothing behind


@pytest.mark.parametrize("other", ["PARCELS.shp", "parcels.geojson", "gpkg"])
def test_two_layers_of_one_name_are_refused_not_one_dropped(tmp_path, other):
    """parcels.shp beside PARCELS.shp, parcels.geojson or a GeoPackage's layer parcels: one was dropped without a
    word, and the report counted the parcels of whichever came first."""
    members = shapefile_parts(lots(5), tmp_path / "a")
    if other == "PARCELS.shp":
        members |= {k.replace("parcels", "PARCELS"): v for k, v in shapefile_parts(lots(3), tmp_path / "b").items()}
    elif other == "parcels.geojson":
        members["parcels.geojson"] = lots(3).to_json().encode()
    else:
        lots(3).to_file(tmp_path / "town.gpkg", layer="parcels")
        members["town.gpkg"] = (tmp_path / "town.gpkg").read_bytes()
    with pytest.raises(LayerError) as refused:
        upload(tmp_path / "uploads", "town.zip", zipped(members))
    said = str(refused.value).lower()
    assert "two layers named parcels" in said or "parcels.shp twice (parcels.shp and parcels.shp)" in said, said
    assert "upload only the one you mean" in said or "zip only the one you mean" in said, said
    assert list((tmp_path / "uploads").iterdir()) == []


def test_one_layer_of_each_name_in_folders_is_read_whole(tmp_path):
    """Folders alone are no trouble: parcels in one, mains in another, read as they are."""
    members = {f"lots/{k}": v for k, v in shapefile_parts(lots(5), tmp_path / "a").items()}
    members["sewer/mains.geojson"] = (
        gpd.GeoDataFrame(
            {"main_id": ["M1"]}, geometry=[shapely.LineString([(457_000, 1_490_110), (457_300, 1_490_110)])], crs=CRS
        )
        .to_json()
        .encode()
    )
    folder = upload(tmp_path / "uploads", "town.zip", zipped(members))
    assert sorted(upload_layers(folder)) == ["mains", "parcels"]


def mains(codes: list[str]) -> gpd.GeoDataFrame:
    return gpd.GeoDataFrame(
        {"main_id": [f"M{i}" for i in range(len(codes))], "sewer_type": codes},
        geometry=[
            shapely.LineString([(457_000, 1_490_110 + 10 * i), (457_300, 1_490_110 + 10 * i)])
            for i in range(len(codes))
        ],
        crs=CRS,
    )


def prepared(frame: gpd.GeoDataFrame, kind: str, values: dict[str, dict[str, str]]):
    import pyproj

    from layers.schema import SPECS
    from layers.validate import ColumnMapping, prepare_layer

    return prepare_layer(
        frame, SPECS[kind], label=kind, target_crs=pyproj.CRS(CRS), mapping=ColumnMapping(values={kind: values})
    )


@pytest.mark.parametrize(
    ("code", "read"), [("sanitary", "sanitary"), ("Sanitary", "sanitary"), ("gravity", "sanitary")]
)
def test_a_coded_value_is_read_as_the_code_it_names(code, read):
    """GRAV=Sanitary was written as "Sanitary", which no part of the analysis takes for a sanitary sewer."""
    out, problems = prepared(mains(["GRAV", "STM"]), "mains", {"sewer_type": {"GRAV": code, "STM": "storm"}})
    assert out is not None, [p.message for p in problems]
    assert out["sewer_type"].tolist() == [read, "storm"]


def test_a_coded_value_naming_no_code_is_refused_with_the_codes_to_choose_from():
    """GRAV=sanitry: every main it named was written as "sanitry", the report said the data could be used, every
    profile could run, and no parcel was ever found near a sanitary sewer."""
    out, problems = prepared(mains(["GRAV", "GRAV"]), "mains", {"sewer_type": {"GRAV": "sanitry"}})
    assert out is None
    (problem,) = [p for p in problems if p.severity == "error"]
    assert "'GRAV' in column sewer_type means 'sanitry', which is not a code sewerplan knows" in problem.message
    assert "combined, force, sanitary, storm" in problem.message
    assert (problem.fix.setting, problem.fix.target) == ("map_value", "mains.sewer_type.GRAV")


def test_a_code_that_no_synonym_spells_is_a_code():
    """A manholes layer saying pump_station, as sewerplan writes it, was refused as a value it "does not know",
    the refusal listing pump_station among the codes to choose."""
    points = gpd.GeoDataFrame(
        {"manhole_id": ["A", "B"], "structure": ["pump_station", "Manhole"]},
        geometry=[shapely.Point(457_000, 1_490_000), shapely.Point(457_100, 1_490_000)],
        crs=CRS,
    )
    out, problems = prepared(points, "manholes", {})
    assert out is not None, [p.message for p in problems]
    assert out["structure"].tolist() == ["pump_station", "manhole"]
    out, _ = prepared(points.assign(structure=["LS", "MH"]), "manholes", {"structure": {"LS": "pump_station"}})
    assert out is not None and out["structure"].tolist() == ["pump_station", "manhole"]


def test_a_coded_value_naming_no_code_keeps_the_upload_for_the_field_to_be_corrected(tmp_path):
    from tests.conftest import csrf, make_app

    app = make_app(tmp_path / "town.gpkg", tmp_path)
    client = app.test_client()
    token = csrf(client)
    lots(3).to_file(tmp_path / "codes.gpkg", layer="parcels")
    mains(["GRAV"]).to_file(tmp_path / "codes.gpkg", layer="mains")
    sent = client.post(
        "/data/upload",
        data={"dataset": (io.BytesIO((tmp_path / "codes.gpkg").read_bytes()), "codes.gpkg"), "csrf_token": token},
        content_type="multipart/form-data",
    )
    report = client.post(
        sent.headers["Location"], data={"csrf_token": token, "map_value.mains": "sewer_type.GRAV=sanitry"}
    )
    said = html.unescape(report.get_data(as_text=True))
    assert report.status_code == 422 and "not a code sewerplan knows" in said
    assert 'Fill in the "Coded values" field of the mains layer' in said
    assert client.get(sent.headers["Location"]).status_code == 200  # kept, to be corrected there
    fixed = client.post(
        sent.headers["Location"], data={"csrf_token": token, "map_value.mains": "sewer_type.GRAV=sanitary"}
    )
    assert fixed.status_code == 200
    assert gpd.read_file(
        Path(app.config["UPLOAD_FOLDER"]) / sent.headers["Location"].split("/")[2] / "store.gpkg", layer="mains"
    )["sewer_type"].tolist() == ["sanitary"]


def _web(tmp_path):
    from tests.conftest import csrf, make_app

    app = make_app(tmp_path / "town.gpkg", tmp_path)
    client = app.test_client()
    return app, client, csrf(client)


def _sent(client, token, path: Path) -> str:
    sent = client.post(
        "/data/upload",
        data={"dataset": (io.BytesIO(path.read_bytes()), path.name), "csrf_token": token},
        content_type="multipart/form-data",
    )
    assert sent.status_code == 302, sent.get_data(as_text=True)[:500]
    return sent.headers["Location"]


def test_a_parcel_id_column_with_no_id_at_all_keeps_the_upload_to_choose_the_right_one(tmp_path):
    """The county's export has an empty parcel_id column and the numbers under SBL: the upload was deleted, and the
    report told the planner to fix the data ("50 feature(s) have no parcel_id"), plus a duplicate ID (the empty
    one). The column-mapping page fixes it, so the upload is kept and the page's field is named."""
    frame = lots(4).assign(parcel_id="", SBL=[f"1.1-1-{i}" for i in range(4)])
    frame.to_file(tmp_path / "parcels.gpkg", layer="parcels")
    app, client, token = _web(tmp_path)
    page = _sent(client, token, tmp_path / "parcels.gpkg")
    report = client.post(page, data={"csrf_token": token})
    said = html.unescape(report.get_data(as_text=True))
    assert report.status_code == 422 and "has column parcel_id empty: it holds no parcel_id" in said
    assert "Choose the column that holds parcel_id for the parcels layer on the column-mapping page" in said
    assert "more than one feature" not in said and "upload it again" not in said
    fixed = client.post(page, data={"csrf_token": token, "parcels.parcel_id": "SBL"})
    assert fixed.status_code == 200 and "The data can be used: 4 parcels" in fixed.get_data(as_text=True)


def test_one_parcel_id_on_every_parcel_names_the_column_to_choose(tmp_path):
    """A town code chosen as the parcel ID (every lot "3601"): not a duplicated parcel to merge, the wrong column."""
    out, problems = prepared_columns(lots(4).assign(parcel_id="3601", SBL=["a", "b", "c", "d"]))
    (problem,) = [p for p in problems if p.severity == "error"]
    assert "Every one of the 4 features of parcels has parcel_id '3601' (column parcel_id)" in problem.message
    assert "merge" not in problem.message
    assert (problem.fix.setting, problem.fix.target) == ("map", "parcels.parcel_id")


def test_some_parcels_without_an_id_are_not_also_a_duplicate_id():
    out, problems = prepared_columns(lots(4).assign(parcel_id=["A", "", "B", ""]))
    assert out is None
    assert [p.check for p in problems if p.severity == "error"] == ["missing_id"]


def prepared_columns(frame: gpd.GeoDataFrame):
    import pyproj

    from layers.schema import SPECS
    from layers.validate import prepare_layer

    return prepare_layer(frame, SPECS["parcels"], label="parcels", target_crs=pyproj.CRS(CRS))
