"""The printed view (``layers.mapsheet``) read back from its PDF: every word on it prints as typed."""

from __future__ import annotations

import geopandas as gpd
import pytest
from pypdf import PdfReader
from shapely.geometry import LineString, box

from layers.errors import LayerError
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


def test_a_title_in_letters_the_typeface_lacks_is_refused_with_a_sentence(tmp_path):
    """A Chinese title printed as black boxes on a sheet meant for a board packet, without a word."""
    layers = _layers()
    w, s, e, n = layers.parcels.to_crs(4326).total_bounds
    with pytest.raises(LayerError) as refused:
        write_map_sheet(tmp_path / "sheet.pdf", layers, bbox_lonlat=(w, s, e, n), text=SheetText(title="北京路 plan"))
    told = str(refused.value)
    assert "cannot draw (北, 京, 路): they would print as boxes" in told and "leave it empty" in told
    assert not (tmp_path / "sheet.pdf").exists()


def test_a_street_name_the_typeface_lacks_is_left_off_and_the_sheet_says_so(tmp_path):
    layers = _layers()
    streets = gpd.GeoDataFrame(
        {"street_name": ["Kościuszko St", "北京路"]},
        geometry=[LineString([(-100, -20), (300, -20)]), LineString([(-100, 120), (300, 120)])],
        crs=CRS,
    )
    w, s, e, n = layers.parcels.to_crs(4326).total_bounds
    sheet = tmp_path / "sheet.pdf"
    write_map_sheet(
        sheet,
        SheetLayers(parcels=layers.parcels, streets=streets),
        bbox_lonlat=(w, s, e, n),
        text=SheetText(title="Board packet", footer=("Printed by the clerk.",)),
    )
    printed = " ".join(PdfReader(str(sheet)).pages[0].extract_text().split())
    assert "Kościuszko St" in printed and "北" not in printed and "\u25a0" not in printed
    assert "Printed by the clerk." in printed
    assert "1 street name in view is not printed: its letters are not in the sheet's typeface." in printed
