"""The printed view (``layers.mapsheet``) read back from its PDF: every word on it prints as typed."""

from __future__ import annotations

import geopandas as gpd
from pypdf import PdfReader
from shapely.geometry import LineString, box

from layers.mapsheet import SheetLayers, SheetText, write_map_sheet

CRS = "EPSG:2260"


def _layers() -> SheetLayers:
    parcels = gpd.GeoDataFrame(
        {"parcel_id": ["A", "B"], "status": ["mandated", "connected"]},
        geometry=[box(0, 0, 100, 100), box(100, 0, 200, 100)],
        crs=CRS,
    )
    streets = gpd.GeoDataFrame(
        {"street_name": ["Kościuszko St"]}, geometry=[LineString([(-100, -20), (300, -20)])], crs=CRS
    )
    return SheetLayers(parcels=parcels, streets=streets)


def test_a_polish_title_legend_and_street_name_print_as_typed(tmp_path):
    """ "Łódź" printed "■ód■": Helvetica has no Ł, ź, ś. The sheet embeds a Unicode font and prints them."""
    layers = _layers()
    w, s, e, n = layers.parcels.to_crs(4326).total_bounds
    text = SheetText(
        title="Łódź i Żółć: plan dla Gminy",
        subtitle=("Přehled: Nguyễn Văn Đức",),
        statuses=(("mandated", "musi się przyłączyć", "#d7301f"), ("connected", "przyłączone", "#1a9850")),
        footer=("Wydrukowano: Łukasz Żółć",),
    )
    write_map_sheet(tmp_path / "sheet.pdf", layers, bbox_lonlat=(w, s, e, n), text=text)
    printed = PdfReader(str(tmp_path / "sheet.pdf")).pages[0].extract_text()
    for wanted in (
        "Łódź i Żółć: plan dla Gminy",
        "Přehled: Nguyễn Văn Đức",
        "musi się przyłączyć: 1",
        "przyłączone: 1",
        "Kościuszko St",
        "Wydrukowano: Łukasz Żółć",
    ):
        assert wanted in printed, wanted
    assert "\u25a0" not in printed
