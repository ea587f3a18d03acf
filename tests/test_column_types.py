"""Columns as a town's GIS and its letters need them: ZIP codes given as numbers read as text with their leading
zeros wherever they are read (a store analysed in place too), and the results' dates and counts stored as dates and
whole numbers in every format the results are written in."""

from __future__ import annotations

import csv

import geopandas as gpd
from click.testing import CliRunner
from shapely.geometry import LineString, Polygon

from gisapp.cli import main
from tests import conftest
from tests.conftest import NY_ORIGIN


def invoke(*args):
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result


def hand_town(path) -> None:
    """Six parcels on Main St whose tax roll holds ZIP codes as numbers (GeoPackage Integer64): every owner mails to
    501 (Holtsville, NY 00501), odd sites are at 1234 (01234), and one parcel's living units are not known."""
    x0, y0 = NY_ORIGIN
    rows = []
    for i in range(6):
        x = x0 + i * 120
        rows.append(
            {
                "parcel_id": f"H-{i}",
                "owner_name": f"Owner {i}",
                "mail_address": f"{i} Far Rd",
                "mail_city": "Holtsville",
                "mail_state": "NY",
                "mail_zip": 501,
                "site_address": f"{i} Main St",
                "site_city": "Fort Plain",
                "site_zip": 1234 if i % 2 else 12345,
                "units": [1, 2, 0, 3, None, 1][i],
                "occupied": "no" if i == 2 else "yes",
                "geometry": Polygon([(x, y0 + 20), (x + 100, y0 + 20), (x + 100, y0 + 150), (x, y0 + 150)]),
            }
        )
    parcels = gpd.GeoDataFrame(rows, crs="EPSG:2260").astype({"mail_zip": "int64", "site_zip": "int64"})
    line = LineString([(x0 - 50, y0), (x0 + 750, y0)])
    mains = gpd.GeoDataFrame(
        [{"main_id": "HM-1", "sewer_type": "sanitary", "ownership": "public", "status": "active", "geometry": line}],
        crs="EPSG:2260",
    )
    streets = gpd.GeoDataFrame(
        [{"street_id": "S1", "street_name": "Main St", "geometry": line.buffer(20)}], crs="EPSG:2260"
    )
    # Written as a tax roll comes, not through sewerplan (whose own writer already turns ZIP codes into text).
    for name, layer in (("parcels", parcels), ("mains", mains), ("streets", streets)):
        layer.to_file(path, layer=name, driver="GPKG")


# -- 1. a numeric ZIP code in a store analysed in place --------------------------------------------------------------


def test_numeric_zip_codes_in_a_store_analysed_in_place_are_mailed_with_their_leading_zeros(tmp_path):
    """The results said 00501, but the notices read the parcels layer's 501 and held every letter back as "not a
    US ZIP code"; only a copy of the layers elsewhere (written as text) worked."""
    store = tmp_path / "hand.gpkg"
    hand_town(store)
    (tmp_path / "town.toml").write_text(conftest.town_toml(), encoding="utf-8")
    day = "today"
    invoke("analyze", "--profile", "fort-plain", "--data", store, "--out", store, "--notice-date", day)
    issued = invoke(
        "notices", "issue", "--profile", "fort-plain", "--data", store, "--notice-date", day,
        "--out", tmp_path / "batches", "--new", "--occupant",
    )  # fmt: skip
    words = " ".join(issued.output.split())
    assert "Held back" not in words, words
    assert "5 notice(s) issued" in words
    (listed,) = (tmp_path / "batches").glob("*/mailing-list.csv")
    with listed.open(encoding="utf-8-sig", newline="") as f:
        rows = list(csv.DictReader(f))
    owners = [r for r in rows if r["name_line_1"].startswith("Owner")]
    assert {r["zip"] for r in owners} == {"00501"}
    assert {r["city_line"] for r in owners} == {"Holtsville, NY 00501"}
    # The occupants' letters go to the site, whose ZIP code was 1234 or 12345 in the roll.
    sites = {r["zip"] for r in rows if not r["name_line_1"].startswith("Owner")}
    assert sites == {"01234", "12345"}
