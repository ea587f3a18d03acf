"""A law that binds only an area (Poughkeepsie § 168-22.2G "situated within the area", the Fourth Ward Sewer
Improvement Area; Wappinger § 196-17A, Phases I/II) analysed without a service_areas layer: every parcel was taken to
lie inside, mandated and noticed, and nothing said so (a tester). The run, its record, the Summary page and the
notices preview and issue now warn; a law binding the whole municipality (Fort Plain's "within the village") and a
run given the area say nothing."""

from __future__ import annotations

import json
import re

import geopandas as gpd
import pytest
from shapely.geometry import box

from analysis.areas import binds_part_only, unmapped_area
from analysis.profiles import load_profile
from layers.sample import sample_town
from layers.write import write_layers
from tests.conftest import Runner, csrf, make_app, town_toml

WARNED = "Warning: the law binds only property within"
SET = {"wappinger": ("--set", "mandate.distance_ft=150")}
REASON = ("--notice-reason", "public_health_hazard", "--hazard", "a failing septic system")


@pytest.fixture(scope="module")
def village():
    return sample_town(60)


def _store(tmp_path, village, *, areas: bool = False):
    path = tmp_path / "town.gpkg"
    layers = dict(village)
    if areas:  # one area around every parcel: the law binds them all, and the run knows it
        w, s, e, n = village["parcels"].total_bounds
        layers["service_areas"] = gpd.GeoDataFrame(
            {"area_id": ["A-1"], "area_name": ["Fourth Ward"], "mandates": ["yes"]},
            geometry=[box(w - 100, s - 100, e + 100, n + 100)],
            crs=village["parcels"].crs,
        )
    write_layers(str(path), layers)
    return path


def test_the_profile_says_whether_its_law_binds_only_part_of_the_municipality():
    assert [binds_part_only(load_profile(p)) for p in ("fort-plain", "poughkeepsie", "wappinger")] == [
        False,
        True,
        True,
    ]
    assert unmapped_area(load_profile("poughkeepsie"), None) == {
        "area": "the Fourth Ward Sewer Improvement Area",
        "section": "§ 168-22.2G",
        "quote": "situated within the area",
    }


@pytest.mark.parametrize("profile", ["poughkeepsie", "wappinger"])
def test_analyze_warns_that_every_parcel_was_taken_inside_the_area(profile, village, tmp_path):
    store = _store(tmp_path, village)
    args = ["analyze", "--profile", profile, "--data", store, *SET.get(profile, ())]
    doc = json.loads(Runner().invoke(*args, "--json", ok=True).stdout)
    area = load_profile(profile).mandate.applies_within
    mandated = doc["summary"]["counts"]["mandated"]
    assert mandated > 0
    (warning,) = [w for w in doc["warnings"] if w.startswith(WARNED)]
    assert f"within {area.value} ({area.section}" in warning
    assert f"no service area was given, so every parcel in the data was taken to lie inside it: the {mandated}" in (
        warning
    )
    assert "Give the area as a service_areas layer" in warning
    said = " ".join(Runner().invoke(*args, ok=True).stdout.split())
    assert warning in said


def test_no_warning_under_a_law_of_the_whole_village_or_with_the_area_given(village, tmp_path):
    bare = _store(tmp_path, village)
    fort_plain = json.loads(Runner().invoke("analyze", "--profile", "fort-plain", "--data", bare, "--json").stdout)
    assert not [w for w in fort_plain["warnings"] if w.startswith(WARNED)]
    (tmp_path / "with").mkdir()
    given = _store(tmp_path / "with", village, areas=True)
    args = ["analyze", "--profile", "poughkeepsie", "--data", given, "--json"]
    doc = json.loads(Runner().invoke(*args, ok=True).stdout)
    assert doc["summary"]["area_unmapped"] is None and not [w for w in doc["warnings"] if w.startswith(WARNED)]


def test_the_summary_page_says_it_from_the_runs_record(village, tmp_path):
    store = _store(tmp_path, village)
    Runner().invoke("analyze", "--profile", "poughkeepsie", "--data", store, "--out", store, ok=True)
    page = " ".join(make_app(store, tmp_path).test_client().get("/summary").get_data(as_text=True).split())
    assert (
        '<p class="warning run-warning">Warning: the law binds only property within the Fourth Ward Sewer '
        "Improvement Area (§ 168-22.2G: &#34;situated within the area&#34;), and no service area was given" in page
    )


def test_notices_preview_and_issue_say_it_before_the_letters_go_out(village, tmp_path, monkeypatch):
    store = _store(tmp_path, village)
    (tmp_path / "town.toml").write_text(town_toml("Town of Poughkeepsie"), encoding="utf-8")
    monkeypatch.setenv("SEWERPLAN_TODAY", "2027-03-01")
    args = ["--profile", "poughkeepsie", "--data", store, "--notice-date", "2027-03-01", *REASON]
    doc = json.loads(Runner().invoke("notices", "preview", *args, "--json", ok=True).stdout)
    assert doc["area_unmapped"]["area"] == "the Fourth Ward Sewer Improvement Area" and doc["notices"]
    said = " ".join(Runner().invoke("notices", "preview", *args, ok=True).stdout.split())
    assert f'{WARNED} the Fourth Ward Sewer Improvement Area (§ 168-22.2G: "situated within the area")' in said
    issued = Runner().invoke("notices", "issue", *args, "--out", tmp_path / "out", "--new", ok=True).stdout
    said = " ".join(issued.split())
    assert "notice(s) issued" in said and f"{WARNED} the Fourth Ward Sewer Improvement Area" in said


def test_the_notices_page_says_it_with_the_preview(village, tmp_path, monkeypatch):
    store = _store(tmp_path, village)
    Runner().invoke("analyze", "--profile", "poughkeepsie", "--data", store, "--out", store, ok=True)
    (tmp_path / "town.toml").write_text(town_toml("Town of Poughkeepsie"), encoding="utf-8")
    monkeypatch.setenv("SEWERPLAN_TODAY", "2027-03-01")
    client = make_app(store, tmp_path, REGISTER=None).test_client()
    token = csrf(client)
    client.post("/notices/register", data={"csrf_token": token})
    form = {
        "notice_date": "2027-03-01",
        "notice_reason": "public_health_hazard",
        "hazard": "a failing septic system",
        "csrf_token": token,
    }
    page = client.post("/notices/preview", data=form).get_data(as_text=True)
    found = re.search(r'<p id="area-unmapped" class="warning">([^<]*)</p>', page)
    assert found, page[:2000]
    assert "the law binds only property within the Fourth Ward Sewer Improvement Area" in found.group(1)
