"""Messy real-world uploads on the Data page: what a town's files look like when they come from three offices.

Each test writes its own small files. The upload must be read as meant, or refused in one sentence that says what
is wrong and how to fix it; never read silently as something else.
"""

from __future__ import annotations

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
