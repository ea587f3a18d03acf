"""Columns as a town's GIS and its letters need them: ZIP codes given as numbers read as text with their leading
zeros wherever they are read (a store analysed in place too), and the results' dates and counts stored as dates and
whole numbers in every format the results are written in."""

from __future__ import annotations

import csv
import json
import sqlite3
from contextlib import closing

import geopandas as gpd
import pandas as pd
import pyarrow.parquet as pq
from click.testing import CliRunner
from shapely.geometry import LineString, Polygon

from gisapp.cli import main
from layers.sample import sample_town
from layers.store import read_results
from layers.write import write_layers
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


# -- 2. the deadline a date, living units whole numbers, in every store and file --------------------------------------


def _declared(path, table: str) -> dict[str, str]:
    """Each column's declared type in a GeoPackage table (DATE, INTEGER, REAL, TEXT ...)."""
    with closing(sqlite3.connect(path)) as con:
        return {row[1]: row[2] for row in con.execute(f'PRAGMA table_info("{table}")')}


def _mandated_with_units(path) -> tuple[str, int]:
    with closing(sqlite3.connect(path)) as con:
        return con.execute(
            "SELECT parcel_id, units FROM parcel_results WHERE status = 'mandated' AND units > 1 LIMIT 1"
        ).fetchone()


def test_the_store_holds_the_deadline_as_a_date_and_living_units_as_whole_numbers(store):
    """The deadline was TEXT and the units REAL, which QGIS neither filters by date nor counts with; the CSV's .csvt
    already said Date and Integer."""
    results = _declared(store, "parcel_results")
    assert (results["deadline"], results["units"]) == ("DATE", "INTEGER")
    assert _declared(store, "building_results")["units"] == "INTEGER"
    assert _declared(store, "parcels")["units"] == "INTEGER"  # the store's copy of the layer read
    with closing(sqlite3.connect(store)) as con:
        deadlines = {r[0] for r in con.execute("SELECT deadline FROM parcel_results WHERE status = 'mandated'")}
        kinds = {r[0] for r in con.execute("SELECT typeof(units) FROM parcel_results")}
    assert deadlines == {"2027-05-30"}
    assert kinds == {"integer", "null"}  # a parcel whose units are not known stays unknown, not 0
    # Read back, every reader gets the deadline as the text the analysis gives.
    back = read_results(store, columns=["parcel_id", "deadline"])
    assert set(back["deadline"].dropna()) == {"2027-05-30"}
    assert all(isinstance(v, str) for v in back["deadline"].dropna())


def test_every_download_holds_the_deadline_as_a_date_and_units_as_whole_numbers(store, client, tmp_path):
    parcel_id, units = _mandated_with_units(store)
    # The map's popup and the web API: the same text as before.
    shown = client.get(f"/api/parcels/{parcel_id}").get_json()["parcel"]["properties"]
    assert (shown["deadline"], shown["units"]) == ("2027-05-30", units)
    for fmt in ("gpkg", "parquet", "geojson", "csv"):
        path = tmp_path / f"results.{fmt}"
        path.write_bytes(client.get(f"/api/results.{fmt}").get_data())
        if fmt == "gpkg":
            declared = _declared(path, "parcel_results")
            assert (declared["deadline"], declared["units"]) == ("DATE", "INTEGER")
        elif fmt == "parquet":
            schema = pq.read_schema(path)
            assert (str(schema.field("deadline").type), str(schema.field("units").type)) == ("date32[day]", "int64")
        elif fmt == "geojson":
            features = {f["properties"]["parcel_id"]: f["properties"] for f in json.loads(path.read_text())["features"]}
            assert (features[parcel_id]["deadline"], features[parcel_id]["units"]) == ("2027-05-30", units)
            assert isinstance(features[parcel_id]["units"], int)
        else:
            with path.open(encoding="utf-8-sig", newline="") as f:
                rows = {r["parcel_id"]: r for r in csv.DictReader(f)}
            assert (rows[parcel_id]["deadline"], rows[parcel_id]["units"]) == ("2027-05-30", str(units))


def test_a_run_without_a_notice_date_still_stores_the_deadline_as_a_date(tmp_path):
    """No notice date: every deadline is empty, and the column is still a date column (QGIS keeps its filters)."""
    path = tmp_path / "town.gpkg"
    write_layers(str(path), sample_town(80))
    invoke("analyze", "--profile", "fort-plain", "--data", path, "--out", path)
    assert _declared(path, "parcel_results")["deadline"] == "DATE"
    assert read_results(path, columns=["deadline"])["deadline"].isna().all()


def test_only_iso_dates_and_whole_counts_change_type():
    """A fraction in living units (a layer's own 1.5, where validation did not refuse it) or text that is not an ISO
    date is written as it is, never rounded or dropped."""
    from layers.write import stored_column

    assert str(stored_column("units", pd.Series([1.0, None, 3.0])).dtype) == "Int64"
    assert stored_column("units", pd.Series([1.5, 2.0])).tolist() == [1.5, 2.0]
    assert str(stored_column("deadline", pd.Series(["2027-03-01", None])).dtype) == "date32[day][pyarrow]"
    assert stored_column("deadline", pd.Series(["2027-02-30"])).tolist() == ["2027-02-30"]
    assert stored_column("deadline", pd.Series(["soon"])).tolist() == ["soon"]
    assert stored_column("section", pd.Series(["2027-03-01"])).tolist() == ["2027-03-01"]
