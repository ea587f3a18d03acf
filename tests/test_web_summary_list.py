"""The summary lists the first ``MAX_LISTED_PARCELS`` parcels that must connect, and links to the whole list.

It said "first 500 of 520" with no way to the other 20: a planner preparing the board's list had to guess. Beside
the count is the results download of the parcels that must connect (``/api/results.csv?status=mandated``), every one.
"""

from __future__ import annotations

import csv
import io
import re

import pytest

from tests.conftest import make_app


@pytest.fixture
def app(store, tmp_path):
    return make_app(store, tmp_path, MAX_LISTED_PARCELS=5)


def _download_link(page: str) -> tuple[str, str]:
    found = re.search(r'<p id="mandated-download"><a href="([^"]+)"[^>]*>(.*?)</a>', page, re.S)
    assert found, page[:3000]
    return found.group(1).replace("&amp;", "&"), " ".join(found.group(2).split())


def test_a_list_cut_short_links_to_every_parcel_that_must_connect_as_csv(client):
    total = client.get("/api/summary").get_json()["counts"]["mandated"]
    assert total > 5
    page = client.get("/summary").get_data(as_text=True)
    assert f"(first 5 of {total:,})" in page and len(re.findall(r"<tr><td><a href=", page)) == 5
    href, words = _download_link(page)
    assert words == f"Download all {total:,} as CSV"
    got = client.get(href)
    assert got.status_code == 200 and got.mimetype == "text/csv"
    rows = list(csv.DictReader(io.StringIO(got.get_data().decode("utf-8-sig"))))  # with its BOM, for Excel
    assert len(rows) == total and {r["status"] for r in rows} == {"mandated"}
    listed = re.findall(r'<tr><td><a href="[^"]*">([^<]+)</a>', page)
    assert set(listed) <= {r["parcel_id"] for r in rows}  # the five shown are among them
    assert {"owner_name", "distance_ft", "section", "deadline"} <= set(rows[0])


def test_a_whole_list_links_to_the_same_download(store, tmp_path):
    client = make_app(store, tmp_path, MAX_LISTED_PARCELS=100_000).test_client()
    page = client.get("/summary").get_data(as_text=True)
    assert "first " not in page
    href, words = _download_link(page)
    assert words == "Download them as CSV" and href.endswith("/api/results.csv?status=mandated&workspace=town")
