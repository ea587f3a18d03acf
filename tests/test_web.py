"""The web app: every route with the Flask test client, and the map in a real headless Chromium."""

from __future__ import annotations

import html
import io
import json
import re
import shutil
import time
import zipfile
from pathlib import Path

import geopandas as gpd
import pandas as pd
import pytest
from click.testing import CliRunner

from analysis.profiles import available_profiles, load_profile
from gisapp import SETTINGS
from gisapp.cli import main
from gisapp.words import town_date
from layers.sample import sample_town
from layers.store import read_results
from layers.write import write_layers
from tests.conftest import csrf, make_app, serving, wait_job

SCREENSHOTS = Path(__file__).resolve().parents[1] / "build" / "screenshots"
HOSTILE_OWNER = "<img src=x onerror=alert(1)>"
HOSTILE_ADDRESS = "${alert(1)}"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("store") / "sewerplan.gpkg"
    town = sample_town(300)
    town["parcels"].loc[0, "owner_name"] = HOSTILE_OWNER
    town["parcels"].loc[0, "site_address"] = HOSTILE_ADDRESS
    town["parcels"].loc[0, "connected"] = "N"
    write_layers(str(path), town)
    result = CliRunner().invoke(
        main,
        ["analyze", "--profile", "fort-plain", "--data", str(path), "--out", str(path), "--notice-date", "2027-03-01"],
    )
    assert result.exit_code == 0, result.output
    return path


def test_map_page(client):
    page = client.get("/")
    assert page.status_code == 200 and page.mimetype == "text/html"
    html = page.get_data(as_text=True)
    assert "/static/vendor/leaflet/leaflet.js" in html and "cdn." not in html  # works offline
    assert "Plain background (offline)" in html and "/tiles/blank/{z}/{x}/{y}" in html
    assert HOSTILE_OWNER not in html  # no parcel data inlined in the page


@pytest.mark.parametrize("path", ["/", "/summary", "/notices", "/plans", "/data/upload", "/no-such-page"])
def test_every_page_names_an_icon_the_app_serves(client, path):
    """Without one the browser asked for /favicon.ico on every page, and each page's console began with a 404 error
    that hid the page's own errors from whoever looked."""
    import re

    html = client.get(path).get_data(as_text=True)
    found = re.search(r'<link rel="icon" [^>]*href="([^"]+)"', html)
    assert found, html[:400]
    with client.get(found.group(1)) as icon:
        assert icon.status_code == 200 and icon.mimetype == "image/svg+xml"


def test_summary_page_escapes_owner_names(client):
    html = client.get("/summary").get_data(as_text=True)
    assert "Village of Fort Plain" in html and "May 30, 2027" in html
    assert "<img src=x" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html


def test_the_summary_says_the_runs_warnings(client):
    """The run's deadline, 2027-05-30, is a Sunday: the command line says so, the Summary said nothing (a tester)."""
    html = " ".join(client.get("/summary").get_data(as_text=True).split())
    assert '<p class="warning run-warning">The deadline May 30, 2027 falls on a Sunday: the town decides' in html
    # the reasons listed give their deadline as the deadline column does, not "Deadline 2027-05-30."
    assert "Deadline May 30, 2027." in html and "Deadline 2027-05-30." not in html


def test_summary_and_printed_sheet_cite_a_value_set_by_the_user_without_nested_brackets(tmp_path):
    """A Wappinger store analysed with --set: the summary page and the printed sheet flag the value inside the
    sentence's one pair of brackets, as the command line does."""
    from pypdf import PdfReader

    path = tmp_path / "wappinger.gpkg"
    write_layers(str(path), sample_town(60))
    args = ["analyze", "--profile", "wappinger", "--data", str(path), "--out", str(path)]
    result = CliRunner().invoke(main, [*args, "--set", "mandate.distance_ft=150"])
    assert result.exit_code == 0, result.output
    client = make_app(path, tmp_path).test_client()
    page = " ".join(html.unescape(client.get("/summary").get_data(as_text=True)).split())
    assert "must connect (§ 196-17E; value set by the user), measured in" in page
    results = gpd.read_file(path, layer="parcel_results").to_crs(4326)
    w, s, e, n = results.total_bounds
    sheet = client.get(f"/print.pdf?bbox={w},{s},{e},{n}")
    assert sheet.status_code == 200, sheet.get_data(as_text=True)
    text = " ".join(PdfReader(io.BytesIO(sheet.data)).pages[0].extract_text().split())
    assert "of a public sewer (§ 196-17E; value set by the user) must connect" in text
    for said in (page, text):
        assert not re.search(r"\([^()<>]*\([^()<>]*\)[^()<>]*\)", said)


def test_layers_api(client):
    doc = client.get("/api/layers/parcels?bbox=-75,42,-74,43.5&zoom=17").get_json()
    assert len(doc["features"]) == 300 and not doc.get("aggregated")
    props = doc["features"][0]["properties"]
    assert {"parcel_id", "status", "distance_ft", "section", "reason"} <= set(props)
    mains = client.get("/api/layers/mains?bbox=-75,42,-74,43.5&zoom=17").get_json()
    assert mains["features"] and "diameter_in" in mains["features"][0]["properties"]
    streets = client.get("/api/layers/streets?bbox=-75,42,-74,43.5&zoom=17").get_json()
    assert streets["features"] and "street_name" in streets["features"][0]["properties"]
    houses = client.get("/api/layers/buildings?bbox=-75,42,-74,43.5&zoom=17").get_json()
    assert any(f["properties"]["rear_building"] for f in houses["features"])
    empty = client.get("/api/layers/parcels?bbox=10,10,11,11&zoom=17").get_json()
    assert empty["features"] == []


def test_large_views_are_aggregated(store, tmp_path):
    c = make_app(store, tmp_path, MAP_MAX_FEATURES=50).test_client()
    doc = c.get("/api/layers/parcels?bbox=-75,42,-74,43.5&zoom=12").get_json()
    assert doc["aggregated"] and doc["total"] == 300
    assert sum(f["properties"]["count"] for f in doc["features"]) == 300


def test_parcel_trace_search_sewershed(client):
    parcel = client.get("/api/search?q=main").get_json()["results"][0]
    detail = client.get(f"/api/parcels/{parcel['parcel_id']}").get_json()
    assert detail["parcel"]["properties"]["parcel_id"] == parcel["parcel_id"]
    trace = client.get(f"/api/trace?parcel={parcel['parcel_id']}").get_json()
    assert trace["control_manhole"] and trace["geojson"]["features"]
    shed = client.get(f"/api/sewershed?manhole={trace['outfall']}").get_json()
    assert shed["parcels"] and shed["flow_at_least_gpd"] == shed["units"] * 250
    assert shed["units_unknown"] and shed["flow_gpd"] is None  # as the popup says: no flow estimate


# Each profile's deadline sentence, noticed on 2027-03-01: Fort Plain's 90 days, Poughkeepsie's 30 after the sentence
# on its notice reason, and Wappinger's period as a town sets it (its law names none).
PROFILE_RUNS = {
    "fort-plain": ((), "2027-05-30", "May 30, 2027"),
    "poughkeepsie": (("--notice-reason", "public_health_hazard"), "2027-03-31", "March 31, 2027"),
    "wappinger": (
        ("--set", "mandate.distance_ft=200", "--set", "mandate.notice_period_days=60"),
        "2027-04-30",
        "April 30, 2027",
    ),
}


@pytest.fixture(scope="module")
def profile_stores(tmp_path_factory):
    """The sample village (60 parcels) analysed under each profile with a notice date."""
    town = sample_town(60)
    stores = {}
    for name, (extra, _, _) in PROFILE_RUNS.items():
        path = tmp_path_factory.mktemp(name) / "town.gpkg"
        write_layers(str(path), town)
        run = ["analyze", "--profile", name, "--data", str(path), "--out", str(path), "--notice-date", "2027-03-01"]
        result = CliRunner().invoke(main, [*run, *extra])
        assert result.exit_code == 0, result.output
        stores[name] = path
    return stores


def popup_reasons(store) -> dict[str, tuple[str, str]]:
    """One parcel of each status in ``store``: its stored reason, and that reason as the popup must show it (a
    mandated parcel's without the closing deadline sentence, which the popup's Deadline row gives)."""
    # Read as sewerplan reads its store: the deadline is a date field, given back as the run's ISO text.
    results = read_results(store).drop_duplicates("status").set_index("status")
    shown = {}
    for status, row in results.iterrows():
        ending = f" Deadline {row['deadline']}." if status == "mandated" else ""
        assert row["reason"].endswith(ending)
        shown[row["parcel_id"]] = (row["reason"], row["reason"][: len(row["reason"]) - len(ending)])
    assert "mandated" in results.index and len(shown) >= 3
    return shown


@pytest.mark.parametrize("profile", PROFILE_RUNS)
def test_the_server_words_the_popups_reason_without_the_runs_deadline(profile, profile_stores, tmp_path):
    """The map's script cut the deadline sentence out of the reason with its own copy of its wording: the server
    sends the reason as the popup shows it, and the parcel's properties keep the whole sentence."""
    store = profile_stores[profile]
    client = make_app(store, tmp_path).test_client()
    for parcel_id, (stored, shown) in popup_reasons(store).items():
        doc = client.get("/api/parcel", query_string={"id": parcel_id}).get_json()
        assert doc["parcel"]["properties"]["reason"] == stored
        assert doc["reason"] == shown and "Deadline" not in shown
    mandated = read_results(store).query("status == 'mandated'")
    assert set(mandated["deadline"]) == {PROFILE_RUNS[profile][1]}


# A town date format the map's script never knew (%j, the day of the year): only the server's words show it right.
OTHER_DATE_FORMAT = "%d %B %Y (day %j)"


def _deadlines(store) -> tuple[str, str]:
    """A mandated parcel's ID (its deadline is the run's) and a parcel's without a deadline."""
    results = gpd.read_file(store, layer="parcel_results")
    mandated = results.loc[results["status"] == "mandated", "parcel_id"].iloc[0]
    return mandated, results.loc[results["deadline"].isna(), "parcel_id"].iloc[0]


@pytest.mark.parametrize("profile", PROFILE_RUNS)
def test_the_server_words_the_popups_and_the_tables_deadline(profile, profile_stores, tmp_path):
    """The map's script formatted dates with its own copy of the town's format: the parcel's answer and the parcels
    in view carry the deadline worded by the server (``deadline_text``), beside the ISO date."""
    store, iso = profile_stores[profile], PROFILE_RUNS[profile][1]
    worded = town_date(iso, OTHER_DATE_FORMAT)
    assert "(day " in worded and "%" not in worded
    client = make_app(store, tmp_path, DATE_FORMAT=OTHER_DATE_FORMAT).test_client()
    mandated, other = _deadlines(store)
    for parcel_id, dates in ((mandated, (iso, worded)), (other, (None, None))):
        props = client.get("/api/parcel", query_string={"id": parcel_id}).get_json()["parcel"]["properties"]
        assert (props["deadline"], props["deadline_text"]) == dates
    layer = client.get("/api/layers/parcels", query_string={"bbox": "-75,42,-74,43", "zoom": 19}).get_json()
    shown = {f["properties"]["parcel_id"]: f["properties"] for f in layer["features"]}
    assert (shown[mandated]["deadline"], shown[mandated]["deadline_text"]) == (iso, worded)
    assert "dateFormat" not in client.get("/").get_data(as_text=True)  # the page formats no date itself


def test_a_store_holding_the_deadline_as_a_date_field_sends_a_date(profile_stores, tmp_path):
    """A store whose results keep the deadline as a GeoPackage date field (another tool wrote them, or a PostGIS
    date column) sent it as milliseconds, 1811635200000: the popup showed that number as the deadline, and the
    reason kept the run's "Deadline 2027-05-30." sentence."""
    store = tmp_path / "dated.gpkg"
    shutil.copy(profile_stores["fort-plain"], store)
    results = gpd.read_file(store, layer="parcel_results")
    dated = results.assign(deadline=pd.to_datetime(results["deadline"]))
    dated.to_file(store, layer="parcel_results", driver="GPKG")
    assert pd.api.types.is_datetime64_dtype(gpd.read_file(store, layer="parcel_results")["deadline"])
    client = make_app(store, tmp_path, DATE_FORMAT="%m/%d/%Y").test_client()
    mandated, _ = _deadlines(store)
    doc = client.get("/api/parcel", query_string={"id": mandated}).get_json()
    props = doc["parcel"]["properties"]
    assert (props["deadline"], props["deadline_text"]) == ("2027-05-30", "05/30/2027")
    assert doc["reason"] == popup_reasons(profile_stores["fort-plain"])[mandated][1]
    layer = client.get("/api/layers/parcels", query_string={"bbox": "-75,42,-74,43", "zoom": 19}).get_json()
    (feature,) = [f for f in layer["features"] if f["properties"]["parcel_id"] == mandated]
    assert feature["properties"]["deadline"] == "2027-05-30"
    assert client.get("/summary").status_code == 200


@pytest.mark.parametrize(
    ("url", "status"),
    [
        ("/api/layers/nope?bbox=0,0,1,1", 404),
        ("/api/layers/parcels", 400),
        ("/api/layers/parcels?bbox=a,b", 400),
        ("/api/layers/parcels?bbox=10,10,5,5", 400),
        ("/api/parcels/NOPE", 404),
        ("/api/trace?parcel=NOPE", 404),
        ("/api/sewershed?manhole=NOPE", 404),
        ("/api/results.shp", 404),
        ("/api/results.geojson?status=required", 400),  # a typo downloaded an empty FeatureCollection
        ("/api/jobs/nope", 404),
    ],
)
def test_api_error_shape(client, url, status):
    response = client.get(url)
    assert response.status_code == status and response.is_json
    assert set(response.get_json()["error"]) == {"status", "title", "message", "problems", "fix"}


def test_downloads(client):
    gj = client.get("/api/results.geojson")
    assert gj.status_code == 200 and gj.mimetype == "application/geo+json"
    doc = json.loads(gj.data)
    assert len(doc["features"]) == 300 and "crs" not in doc
    w, s_, e, n = client.get("/api/search?q=main").get_json()["results"][0]["bbox"]
    part = client.get(f"/api/results.csv?bbox={w - 0.001},{s_ - 0.001},{e + 0.001},{n + 0.001}")
    assert part.status_code == 200 and 1 < part.data.count(b"\n") < 301
    assert client.get("/api/results.gpkg").data[:15] == b"SQLite format 3"
    refused = client.get("/api/results.csv?status=Mandated").get_json()["error"]["message"]
    assert refused == (
        "No parcel status is called 'Mandated': give one of connected, mandated, in_range_not_abutting, "
        "out_of_range, unoccupied, no_public_sewer."
    )


def test_security_headers_and_csrf(client):
    headers = client.get("/").headers
    assert "frame-ancestors 'none'" in headers["Content-Security-Policy"]
    assert "script-src 'self' 'nonce-" in headers["Content-Security-Policy"]
    assert headers["X-Content-Type-Options"] == "nosniff"
    refused = client.post("/analysis/run", data={"profile": "fort-plain"})
    assert refused.status_code == 400 and "security token" in refused.get_data(as_text=True)


def test_run_analysis_job(store, tmp_path):
    own = tmp_path / "own.gpkg"
    shutil.copy(store, own)  # the run rewrites the store: keep the shared one as it is
    client = make_app(own, tmp_path).test_client()
    token = csrf(client)
    started = client.post("/analysis/run", data={"profile": "poughkeepsie", "csrf_token": token})
    assert started.status_code == 202
    job = started.get_json()
    job = wait_job(client, job)
    assert job["state"] == "done", job
    assert job["summary"]["profile"] == "poughkeepsie" and "analysing" in job["steps"]
    assert client.get("/api/summary").get_json()["run"]["profile"] == "poughkeepsie"


def test_running_again_keeps_the_runs_notice_date(store, tmp_path):
    """The map's run form starts from the latest run's notice date and reason, and a request without them keeps
    them for the same profile: running again from the map no longer dropped the run's deadlines."""
    own = tmp_path / "own.gpkg"
    shutil.copy(store, own)
    client = make_app(own, tmp_path).test_client()
    page = client.get("/").get_data(as_text=True)
    assert re.search(r'name="notice_date" value="2027-03-01"', page)
    token = csrf(client)
    job = wait_job(client, client.post("/analysis/run", data={"profile": "fort-plain", "csrf_token": token}).get_json())
    assert job["state"] == "done", job
    run = client.get("/api/summary").get_json()["run"]
    assert run["notice_date"] == "2027-03-01" and run["notice_reason"] is None
    # An empty field sent on purpose clears it.
    job = wait_job(
        client,
        client.post("/analysis/run", data={"profile": "fort-plain", "notice_date": "", "csrf_token": token}).get_json(),
    )
    assert client.get("/api/summary").get_json()["run"]["notice_date"] is None
    # Another profile starts without them: Poughkeepsie requires a reason with any notice date.
    job = wait_job(
        client,
        client.post(
            "/analysis/run",
            data={
                "profile": "poughkeepsie",
                "notice_date": "2027-05-01",
                "notice_reason": "highway_improvement",
                "csrf_token": token,
            },
        ).get_json(),
    )
    assert job["state"] == "done", job
    page = client.get("/").get_data(as_text=True)
    assert re.search(r'name="notice_date" value="2027-05-01"', page)
    assert re.search(r'<option value="highway_improvement" selected>', page)


def test_with_accounts_every_page_needs_a_sign_in(app, client, auth):
    auth.add("vera", "viewer", "viewer-password")
    assert client.get("/").status_code == 302 and client.get("/api/summary").status_code == 401
    assert auth.login("vera", "nope-nope").status_code == 401
    assert client.get("/").status_code == 302


def test_a_viewer_sees_but_cannot_run_or_upload(app, client, auth):
    auth.add("vera", "viewer", "viewer-password")
    assert auth.login("vera", "viewer-password").status_code == 302
    assert client.get("/").status_code == 200
    assert client.post("/analysis/run", data={"profile": "fort-plain", "csrf_token": auth.csrf()}).status_code == 403
    assert client.get("/data/upload").status_code == 403


def zipped_shapefile(town, tmp_path, evil_member: str | None = None) -> bytes:
    folder = tmp_path / "shp"
    folder.mkdir(exist_ok=True)
    for name in ("parcels", "mains", "streets", "buildings"):
        frame = town[name]
        keep = [c for c in frame.columns if len(c) <= 10]
        frame[keep].to_file(folder / f"{name}.shp")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for f in folder.iterdir():
            zf.write(f, f"town/{f.name}")
        zf.writestr("town/readme.vrt", "<OGRVRTDataSource/>")
        if evil_member:
            zf.writestr(evil_member, "x")
    return buf.getvalue()


def test_upload_zipped_shapefile_flow(store, tmp_path):
    """Upload, map, validate, work on it (only this planner sees it), publish it, restore the previous store."""
    own = tmp_path / "town.gpkg"
    shutil.copy(store, own)
    app = make_app(own, tmp_path)
    client, other = app.test_client(), app.test_client()
    town = sample_town(80)
    token = csrf(client)
    data = {"dataset": (io.BytesIO(zipped_shapefile(town, tmp_path)), "town.zip"), "csrf_token": token}
    sent = client.post("/data/upload", data=data, content_type="multipart/form-data")
    assert sent.status_code == 302 and "/mapping" in sent.headers["Location"]
    upload_token = sent.headers["Location"].split("/")[2]
    assert not list((Path(app.config["UPLOAD_FOLDER"]) / upload_token / "data").glob("*.vrt"))
    form = client.get(sent.headers["Location"]).get_data(as_text=True)
    assert 'name="parcels.parcel_id"' in form and "selected>parcel_id<" in form.replace('"parcel_id" ', "")
    report = client.post(sent.headers["Location"], data={"csrf_token": token, "parcels.parcel_id": "parcel_id"})
    assert report.status_code == 200 and "The data can be used" in report.get_data(as_text=True)
    used = client.post(f"/data/{upload_token}/use", data={"csrf_token": token})
    assert used.status_code == 302 and app.config["STORE"] == str(own)

    def mains_seen(c):
        return len(c.get("/api/layers/mains?bbox=-75,42,-74,43.5&zoom=17").get_json()["features"])

    town_mains, upload_mains = len(gpd.read_file(own, layer="mains")), len(town["mains"])
    assert town_mains != upload_mains
    assert mains_seen(client) == upload_mains and mains_seen(other) == town_mains  # a workspace, not the town's
    assert "workspace-banner" in client.get("/summary").get_data(as_text=True)
    assert client.get("/api/summary").status_code == 404 and other.get("/api/summary").status_code == 200  # no run yet
    town_run = other.get("/api/summary").get_json()["run"]
    job = client.post("/analysis/run", data={"profile": "poughkeepsie", "csrf_token": token}).get_json()
    job = wait_job(client, job)
    assert job["state"] == "done", job
    assert sum(client.get("/api/summary").get_json()["counts"].values()) == 80  # the run wrote the workspace
    assert other.get("/api/summary").get_json()["run"] == town_run  # and not the town's store
    published = client.post(f"/data/{upload_token}/publish", data={"csrf_token": token})
    assert published.status_code == 200 and "is now the town" in published.get_data(as_text=True)
    assert mains_seen(other) == upload_mains and mains_seen(client) == upload_mains
    page = client.get("/data/upload").get_data(as_text=True)
    kept = re.findall(r'name="name" value="([^"]+)"', page)
    assert len(kept) == 1
    # The town's store in words, the analysis dated as the town writes dates (no layer codes, no ISO timestamp).
    assert "parcel results" in page and "parcel_results" not in page
    assert re.search(r"Latest analysis: [A-Z][a-z]+ \d{1,2}, \d{4} \(", page), page[page.find("Latest analysis") :][:80]
    saved = re.search(r"<tr><td[^>]*>([^<]+)</td><td[^>]*>([^<]+)</td>", page[page.find('id="previous-stores"') :])
    restored = client.post("/data/restore", data={"csrf_token": token, "name": kept[0]})
    assert restored.status_code == 200 and mains_seen(other) == town_mains
    # Told as the table showed it (when, and why), not by the file's stamp.
    said = re.search(r"The [^<]*is the town's store again", html.unescape(restored.get_data(as_text=True)))
    assert said and said[0] == f"The version saved {saved[1]} ({saved[2]}) is the town's store again", said
    assert len(re.findall(r'name="name" value="([^"]+)"', client.get("/data/upload").get_data(as_text=True))) == 2


def _town_and_upload(store, tmp_path):
    """A town's own store (``tmp_path / "town.gpkg"``) and a checked upload of 60 parcels beside it, ready to
    publish: (app, client, CSRF token, upload token)."""
    own = tmp_path / "town.gpkg"
    shutil.copy(store, own)
    app = make_app(own, tmp_path)
    client = app.test_client()
    token = csrf(client)
    data = {"dataset": (io.BytesIO(zipped_shapefile(sample_town(60), tmp_path)), "town.zip"), "csrf_token": token}
    sent = client.post("/data/upload", data=data, content_type="multipart/form-data")
    upload_token = sent.headers["Location"].split("/")[2]
    client.post(sent.headers["Location"], data={"csrf_token": token, "parcels.parcel_id": "parcel_id"})
    return app, client, token, upload_token


def test_publishing_again_after_a_reload_says_it_is_published_already(store, tmp_path):
    """The publish page is the answer to a POST: a reload (or Back, then Publish on the page as it was) sent it again,
    and the planner whose data had just become the town's store read "400 Cannot use this input: No such upload (it
    may have expired or been discarded)", as if it were lost."""
    _, client, token, upload_token = _town_and_upload(store, tmp_path)
    published = client.post(f"/data/{upload_token}/publish", data={"csrf_token": token})
    assert published.status_code == 200 and "is now the town" in published.get_data(as_text=True)
    kept = len(re.findall(r'name="name" value="([^"]+)"', client.get("/data/upload").get_data(as_text=True)))
    again = client.post(f"/data/{upload_token}/publish", data={"csrf_token": token})
    said = html.unescape(again.get_data(as_text=True))
    assert again.status_code == 200 and "town.zip was published as the town's store already" in said
    assert "expired" not in said and len(re.findall(r'name="name" value="([^"]+)"', said)) == kept  # nothing redone
    # Its pages, reached again by Back, say the same rather than that it may have expired.
    page = client.get(f"/data/{upload_token}/mapping")
    assert page.status_code == 400 and "published as the town's store already" in html.unescape(
        page.get_data(as_text=True)
    )


@pytest.mark.parametrize("stopped", ["before the answer", "while deleting the upload", "before marking it published"])
def test_publishing_again_after_the_server_stopped_says_it_is_published_already(store, tmp_path, monkeypatch, stopped):
    """The server killed (kill -9) after it published an upload and before its answer reached the browser: the
    session that says "published already" was never written, and the planner who pressed Publish again read "No such
    upload (it may have expired or been discarded)" for data that was the town's store. Killed while deleting the
    upload's files, the next Publish published the same data a second time (a duplicate earlier version, pruning a
    real one), and the half-deleted upload stayed listed as a workspace."""
    app, client, token, upload_token = _town_and_upload(store, tmp_path)
    own = tmp_path / "town.gpkg"  # the town's store
    if stopped == "while deleting the upload":

        def killed(path, *args, **kwargs):  # the process dies with the upload's files half deleted
            raise SystemExit(137)

        monkeypatch.setattr(shutil, "rmtree", killed)
        with pytest.raises(SystemExit):
            client.post(f"/data/{upload_token}/publish", data={"csrf_token": token})
        monkeypatch.undo()
    elif stopped == "before marking it published":  # the town's store replaced, the upload not yet marked published

        def killed_before(*args, **kwargs):
            raise SystemExit(137)

        monkeypatch.setattr("gisapp.views.data.retire_published", killed_before)
        with pytest.raises(SystemExit):
            client.post(f"/data/{upload_token}/publish", data={"csrf_token": token})
        monkeypatch.undo()
    else:
        assert "is now the town" in client.post(f"/data/{upload_token}/publish", data={"csrf_token": token}).text
    assert len(gpd.read_file(own, layer="parcels")) == 60  # published
    kept = sorted(p.name for p in (tmp_path / "previous-stores").glob("*.gpkg"))
    browser = app.test_client()  # the session as the browser still has it: the answer never came
    ready = csrf(browser)
    again = browser.post(f"/data/{upload_token}/publish", data={"csrf_token": ready})
    said = html.unescape(again.get_data(as_text=True))
    assert again.status_code == 200 and "town.zip was published as the town's store already" in said, said[:2000]
    assert sorted(p.name for p in (tmp_path / "previous-stores").glob("*.gpkg")) == kept  # nothing redone
    assert f"/data/{upload_token}/" not in browser.get("/data/upload").get_data(as_text=True)  # no workspace listed
    assert sorted(p.name for p in (Path(app.config["UPLOAD_FOLDER"]) / upload_token).iterdir()) == ["meta.json"]
    page = browser.get(f"/data/{upload_token}/mapping")
    assert page.status_code == 400 and "published as the town's store already" in html.unescape(page.text)


def test_upload_refusals(client, tmp_path, app):
    town = sample_town(60)
    token = csrf(client)

    def send(payload, name):
        return client.post(
            "/data/upload",
            data={"dataset": (io.BytesIO(payload), name), "csrf_token": token},
            content_type="multipart/form-data",
        )

    slip = send(zipped_shapefile(town, tmp_path, evil_member="../../etc/evil.shp"), "town.zip")
    assert slip.status_code == 400 and "outside the archive" in slip.get_data(as_text=True)
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("parcels.shp", b"\0" * (3 * 1024 * 1024))
    small = make_app(app.config["STORE"], tmp_path / "b", MAX_UNZIPPED_BYTES=1024 * 1024).test_client()
    t2 = csrf(small)
    refused = small.post(
        "/data/upload",
        data={"dataset": (io.BytesIO(bomb.getvalue()), "bomb.zip"), "csrf_token": t2},
        content_type="multipart/form-data",
    )
    assert refused.status_code == 400 and "unpacks to more than 1 MB" in refused.get_data(as_text=True)
    assert send(b"<VRTDataset/>", "evil.vrt").status_code == 400
    assert send(b"not sqlite at all", "fake.gpkg").status_code == 400
    big = make_app(app.config["STORE"], tmp_path / "c", MAX_CONTENT_LENGTH=1000).test_client()
    t3 = csrf(big)
    too_large = big.post(
        "/data/upload",
        data={"dataset": (io.BytesIO(b"x" * 5000), "a.zip"), "csrf_token": t3},
        content_type="multipart/form-data",
    )
    assert too_large.status_code == 413 and "this server accepts at most 1000 bytes" in too_large.get_data(as_text=True)
    invalid = make_app(app.config["STORE"], tmp_path / "d").test_client()
    t4 = csrf(invalid)
    bad_parcels = town["parcels"].copy()
    bad_parcels.loc[1, "parcel_id"] = bad_parcels.loc[0, "parcel_id"]
    gpkg = tmp_path / "dup.gpkg"
    write_layers(str(gpkg), {"parcels": bad_parcels, "mains": town["mains"]})
    sent = invalid.post(
        "/data/upload",
        data={"dataset": (io.BytesIO(gpkg.read_bytes()), "dup.gpkg"), "csrf_token": t4},
        content_type="multipart/form-data",
    )
    report = invalid.post(sent.headers["Location"], data={"csrf_token": t4})
    assert report.status_code == 422 and "duplicate id" in report.get_data(as_text=True)
    for folder in (app.config["UPLOAD_FOLDER"], tmp_path / "b" / "uploads", tmp_path / "d" / "uploads"):
        assert not Path(folder).exists() or not list(Path(folder).iterdir()), "a refused upload was kept"


def test_settings_have_help():
    assert all(help_text for _, help_text in SETTINGS.values())


def test_serve_refuses_a_public_address_without_accounts(store, tmp_path):
    result = CliRunner().invoke(
        main, ["serve", "--store", str(store), "--host", "0.0.0.0", "--users-db", str(tmp_path / "none.sqlite")]
    )
    assert result.exit_code == 2 and "sewerplan users add" in result.output


def test_users_add_command(tmp_path):
    db = tmp_path / "u.sqlite"
    result = CliRunner().invoke(
        main,
        ["users", "add", "pat", "--role", "planner", "--users-db", str(db)],
        input="long-password\nlong-password\n",
    )
    assert result.exit_code == 0 and "planner" in result.output
    listed = CliRunner().invoke(main, ["users", "list", "--users-db", str(db), "--json"])
    assert json.loads(listed.output) == [{"name": "pat", "role": "planner"}]
    short = CliRunner().invoke(
        main, ["users", "add", "x1", "--role", "viewer", "--users-db", str(db), "--password", "short"]
    )
    assert short.exit_code == 2 and "at least 8" in short.output


def test_the_accounts_follow_the_instance_folder_setting(store, tmp_path, monkeypatch):
    """With SEWERPLAN_INSTANCE set, `users add` wrote ./instance/users.sqlite, `users list` printed nothing and
    `serve --host 0.0.0.0` refused for want of an account: the accounts now live in the instance folder the app
    uses, for every command; an explicit --users-db still wins."""
    import os

    import gisapp.cli
    import layers.uploads

    monkeypatch.chdir(tmp_path)
    service = tmp_path / "service"
    monkeypatch.setenv("SEWERPLAN_INSTANCE", str(service))
    runner = CliRunner()
    added = runner.invoke(main, ["users", "add", "pat", "--role", "planner", "--password", "long-password"])
    assert added.exit_code == 0, added.output
    assert (service / "users.sqlite").exists() and not (tmp_path / "instance").exists()
    listed = runner.invoke(main, ["users", "list", "--json"])
    assert json.loads(listed.output) == [{"name": "pat", "role": "planner"}]
    elsewhere = runner.invoke(main, ["users", "list", "--json", "--users-db", str(tmp_path / "other.sqlite")])
    assert json.loads(elsewhere.output) == []

    served = {}

    class Server:
        def run(self):
            served["ran"] = True

    def listen(app, host, port, options):
        served["users_db"] = app.config["USERS_DB"]
        return Server()

    monkeypatch.setattr(gisapp.cli, "listen", listen)
    monkeypatch.setattr(layers.uploads, "harden_gdal", lambda **kw: None)  # keep this process's GDAL drivers
    umask = os.umask(0o022)
    try:
        done = runner.invoke(main, ["serve", "--store", str(store), "--host", "0.0.0.0"])
    finally:
        os.umask(umask)
    assert done.exit_code == 0, done.output
    assert served == {"users_db": str((service / "users.sqlite").resolve()), "ran": True}
    assert "sign-in required" in done.output
    # and the store: without --store, the instance folder's sewerplan.gpkg is served, not ./instance/sewerplan.gpkg
    shutil.copy(store, service / "sewerplan.gpkg")
    listen_store = {}
    monkeypatch.setattr(
        gisapp.cli, "listen", lambda app, host, port, options: listen_store.update(s=app.config["STORE"]) or Server()
    )
    umask = os.umask(0o022)
    try:
        done = runner.invoke(main, ["serve", "--host", "0.0.0.0"])
    finally:
        os.umask(umask)
    assert done.exit_code == 0, done.output
    assert listen_store == {"s": str((service / "sewerplan.gpkg").resolve())}


def test_the_accounts_are_the_file_config_py_names_for_every_command(store, tmp_path, monkeypatch):
    """With USERS_DB = ".../accounts.sqlite" in instance/config.py, `users add` wrote ./instance/users.sqlite (the
    default), `users list` and `serve` read that too, and the web app (config.py's file) found no account: every
    `users` command and `serve` now use the file config.py names, as the app does; --users-db still wins."""
    import os

    import gisapp.cli
    import layers.uploads

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SEWERPLAN_INSTANCE", raising=False)
    accounts = tmp_path / "srv" / "accounts.sqlite"
    accounts.parent.mkdir()
    (tmp_path / "instance").mkdir()
    (tmp_path / "instance" / "config.py").write_text(f"USERS_DB = {str(accounts)!r}\n")
    runner = CliRunner()
    for name in ("pat", "lee"):
        added = runner.invoke(main, ["users", "add", name, "--role", "planner", "--password", "long-password"])
        assert added.exit_code == 0, added.output
    assert accounts.exists() and not (tmp_path / "instance" / "users.sqlite").exists()
    removed = runner.invoke(main, ["users", "remove", "lee"])
    assert removed.exit_code == 0, removed.output
    listed = runner.invoke(main, ["users", "list", "--json"])
    assert json.loads(listed.output) == [{"name": "pat", "role": "planner"}]
    elsewhere = runner.invoke(main, ["users", "list", "--json", "--users-db", str(tmp_path / "other.sqlite")])
    assert json.loads(elsewhere.output) == []

    served = {}

    class Server:
        def run(self):
            pass

    monkeypatch.setattr(gisapp.cli, "listen", lambda app, host, port, options: served.update(app.config) or Server())
    monkeypatch.setattr(layers.uploads, "harden_gdal", lambda **kw: None)  # keep this process's GDAL drivers
    umask = os.umask(0o022)
    try:
        done = runner.invoke(main, ["serve", "--store", str(store), "--host", "0.0.0.0"])
    finally:
        os.umask(umask)
    assert done.exit_code == 0, done.output
    assert served["USERS_DB"] == str(accounts.resolve()) and "sign-in required" in done.output


@pytest.fixture(scope="module")
def hill_store(tmp_path_factory):
    """A town of 1,200 parcels, big enough to have a street with no sewer (Prospect St)."""
    path = tmp_path_factory.mktemp("hill") / "town.gpkg"
    write_layers(str(path), sample_town(1200))
    assert (
        CliRunner()
        .invoke(main, ["analyze", "--profile", "fort-plain", "--data", str(path), "--out", str(path)])
        .exit_code
        == 0
    )
    return path


def hill_street(store):
    """Prospect St, which has parcels but no sewer, as WGS 84 line coordinates."""
    from shapely import line_merge

    streets = gpd.read_file(store, layer="streets")
    hill = streets[streets["street_name"] == "Prospect St"]
    line = gpd.GeoSeries([line_merge(hill.geometry.union_all())], crs=streets.crs).to_crs(4326).iloc[0]
    return [list(c) for c in line.coords]


def test_plan_evaluate_save_compare_export(hill_store, tmp_path):
    store = hill_store
    client = make_app(store, tmp_path).test_client()
    token = csrf(client)
    body = {
        "geometry": {"type": "LineString", "coordinates": hill_street(store)},
        "diameter_in": 8,
        "name": "Hill main",
        "save": True,
    }
    doc = client.post("/plans/evaluate", json=body, headers={"X-CSRF-Token": token}).get_json()
    assert doc["newly_mandated"] and doc["manholes"] and doc["map"]["parcels"]
    assert len(doc["map"]["manholes"]) == len(doc["manholes"])
    checks = {c["check"]: c for c in doc["design_checks"]}
    # The connecting main to MH-7 crosses the storm main M-154 5 ft short of it, as `sewerplan plan` says of the same
    # line; read back from lon/lat, a hair off its street, the web's check had missed it (it now snaps the main to
    # the existing mains within the tolerance first). Its status in the layer's own word, "existing", not the code.
    crossing = checks.pop("main_crossings")
    assert crossing["verdict"] == "for the engineer" and "crosses M-154 (storm, existing)" in crossing["message"]
    assert all(c["passed"] for c in checks.values())
    six = client.post(
        "/plans/evaluate", json=body | {"diameter_in": 6, "name": "Hill 6in"}, headers={"X-CSRF-Token": token}
    ).get_json()
    assert not next(c for c in six["design_checks"] if c["check"] == "min_diameter")["passed"]
    page = client.get("/plans").get_data(as_text=True)
    assert "Hill main" in page and "Hill 6in" in page and "does not meet (§ 144-18B)" in page
    gj = client.get("/plans/Hill main.geojson")
    assert gj.status_code == 200 and len(json.loads(gj.data)["features"]) == 1 + bool(doc["connecting_main"]) + len(
        doc["manholes"]
    ) + len(doc["newly_mandated"]) + len(doc["vacant_benefiting"]) + len(doc["main_crossings"]) + len(doc["easements"])
    assert client.get("/plans/Hill main.gpkg").data[:15] == b"SQLite format 3"
    assert client.get("/plans/Hill main.pdf").data[:4] == b"%PDF"
    assert client.get("/plans/nothing.pdf").status_code == 404
    by_name = client.post(
        "/plans/evaluate", json={"streets_run": "Prospect St", "diameter_in": 8}, headers={"X-CSRF-Token": token}
    ).get_json()
    assert by_name["newly_mandated"] == doc["newly_mandated"]
    refused = client.post("/plans/evaluate", json=body)
    assert refused.status_code == 400  # no CSRF token
    resaved = client.post("/plans/evaluate", json=body | {"diameter_in": 12}, headers={"X-CSRF-Token": token})
    assert resaved.status_code == 400 and "'Hill main' is saved already" in resaved.get_json()["error"]["message"]
    assert client.get("/plans/Hill main.json").get_json()["diameter_in"] == 8
    replaced = body | {"diameter_in": 12, "replace": True}
    assert client.post("/plans/evaluate", json=replaced, headers={"X-CSRF-Token": token}).status_code == 200
    assert client.get("/plans/Hill main.json").get_json()["diameter_in"] == 12
    long = client.post("/plans/evaluate", json=body | {"name": "x" * 81}, headers={"X-CSRF-Token": token})
    assert long.status_code == 400 and "at most 80 characters" in long.get_json()["error"]["message"]
    bad = client.post(
        "/plans/evaluate", json={"geometry": {"type": "Point", "coordinates": [0, 0]}}, headers={"X-CSRF-Token": token}
    )
    assert bad.status_code == 400 and "line" in bad.get_json()["error"]["message"]


# --- real browser ------------------------------------------------------------------------------------------


@pytest.fixture
def live_server(store, tmp_path):
    app = make_app(store, tmp_path)
    with serving(app) as url:
        yield url, app


def wait_for(driver, condition, timeout=15.0):
    """Poll ``condition`` until it holds; an element gone stale or not there yet (the page being replaced: a form's
    POST navigates, and for a moment the new page has no body) counts as not yet. Chromium sometimes says stale as
    "Node with given id does not belong to the document" (an inspector error), seen with two test workers."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException, WebDriverException

    end = time.time() + timeout
    while time.time() < end:
        try:
            value = condition()
        except (StaleElementReferenceException, NoSuchElementException):
            value = None
        except WebDriverException as exc:
            if "does not belong to the document" not in str(exc):
                raise
            value = None
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError("timed out waiting in the browser")


def open_popup(driver, url: str, parcel_id: str, showing: str | None = None):
    """The map at ``url`` opened on ``parcel_id`` (``/?parcel=``), and its popup once it shows ``showing`` (by
    default the parcel's ID): the popup of the page before, or one still loading its notices, is not it."""
    from urllib.parse import quote

    from selenium.webdriver.common.by import By

    driver.get(f"{url}/?parcel=" + quote(parcel_id, safe=""))
    text = showing or parcel_id
    return wait_for(
        driver, lambda: [p for p in driver.find_elements(By.CSS_SELECTOR, ".parcel-popup") if text in p.text]
    )[0]


def message_saying(driver, text: str, timeout: float = 30.0):
    """The page's #message once it says ``text``: the message of the page before may still be on screen."""
    from selenium.webdriver.common.by import By

    return wait_for(driver, lambda: [m for m in driver.find_elements(By.ID, "message") if text in m.text], timeout)[0]


def shot(driver, name):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(SCREENSHOTS / f"{name}.png"))


def open_map(driver, url):
    driver.get(url + "/")
    wait_for(driver, lambda: driver.execute_script("return document.body.dataset.loaded"))


def click_parcel(driver, parcel_id, store):
    """Zoom to the parcel, click inside it clear of buildings and mains as a mouse does, and give its popup."""
    from selenium.webdriver.common.by import By

    from tests.test_web_map import click_at, click_points, settle

    lat, lon = click_points(store, [parcel_id])[parcel_id]
    driver.execute_script("window.sewerplanMap.setView([arguments[0], arguments[1]], 19, {animate: false});", lat, lon)
    settle(driver)
    click_at(driver, lat, lon)
    popup = wait_for(driver, lambda: driver.find_elements(By.CSS_SELECTOR, ".parcel-popup"))[0]
    wait_for(driver, lambda: parcel_id in popup.get_attribute("textContent"))
    return popup


@pytest.mark.browser
def test_map_click_popup_and_trace_in_chromium(live_server, browser, store):
    from selenium.webdriver.common.by import By

    url, _ = live_server
    open_map(browser, url)
    shot(browser, "map")
    results = gpd.read_file(store, layer="parcel_results")
    target = results[(results["status"] == "mandated") & (results.index > 0)]["parcel_id"].iloc[0]
    popup = click_parcel(browser, target, store)
    shot(browser, "popup")
    text = popup.get_attribute("textContent")
    assert target in text and "§ 144-4" in text and "May 30, 2027 (if noticed on this run's notice date)" in text
    from tests.test_web_map import click_in_popup  # here: test_web_map imports this module

    click_in_popup(browser, ".parcel-popup .trace-button")
    result = wait_for(
        browser,
        lambda: (
            (t := popup.find_element(By.CSS_SELECTOR, ".trace-result").get_attribute("textContent"))
            and "Tracing" not in t
            and t
        ),
    )
    assert "Control manhole MH-" in result and "ft through" in result
    shot(browser, "trace")


@pytest.mark.browser
def test_the_popups_reason_and_deadline_under_each_profile_in_chromium(profile_stores, browser, tmp_path):
    """The popup shows the reason the server words (without the run's deadline) and the deadline on its own row, in
    the town's date format, under each profile's wording."""

    rows = "return [...arguments[0].querySelectorAll('dt')].map((d) => [d.textContent, d.nextSibling.textContent]);"
    for profile, (_, _, day) in PROFILE_RUNS.items():
        store = profile_stores[profile]
        with serving(make_app(store, tmp_path / profile)) as url:
            for parcel_id, (stored, shown) in popup_reasons(store).items():
                popup = open_popup(browser, url, parcel_id)
                said = dict(browser.execute_script(rows, popup))
                assert said["Reason"] == shown, (profile, parcel_id)
                if shown != stored:
                    assert said["Deadline"] == f"{day} (if noticed on this run's notice date)"
                else:
                    assert "Deadline" not in said


@pytest.mark.browser
def test_the_popup_and_the_table_show_the_servers_dates_under_each_profile_in_chromium(
    profile_stores, browser, tmp_path
):
    """The popup's Deadline row and the table's deadline are the server's words, in a town date format the map's
    script never knew (``%j``), under each profile."""

    rows = "return [...arguments[0].querySelectorAll('dt')].map((d) => [d.textContent, d.nextSibling.textContent]);"
    cells = (
        "const at = [...document.querySelectorAll('#attribute-table th')].findIndex((th) => th.dataset.key === "
        "'deadline'); const rows = [...document.querySelectorAll('#attribute-table tbody tr')];"
        "return rows.length ? Object.fromEntries(rows.map((r) => [r.dataset.parcelId, r.children[at].textContent]))"
        " : null;"
    )
    for profile, (_, iso, _) in PROFILE_RUNS.items():
        store, worded = profile_stores[profile], town_date(iso, OTHER_DATE_FORMAT)
        mandated, _ = _deadlines(store)
        with serving(make_app(store, tmp_path / profile, DATE_FORMAT=OTHER_DATE_FORMAT)) as url:
            popup = open_popup(browser, url, mandated)
            said = dict(browser.execute_script(rows, popup))
            assert said["Deadline"] == f"{worded} (if noticed on this run's notice date)", profile
            table = wait_for(browser, lambda: browser.execute_script(cells))
            assert table[mandated] == worded, profile


@pytest.mark.browser
def test_the_run_form_keeps_its_fields_for_the_runs_profile_only_in_chromium(live_server, browser):
    """A 600 ft setting filled in for the Fort Plain run was carried into a Poughkeepsie run (helper's finding):
    another profile starts with no settings and no reason, and the run's profile brings its own back."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    url, _ = live_server
    open_map(browser, url)
    form = browser.find_element(By.ID, "run-form")
    profile, settings = Select(form.find_element(By.NAME, "profile")), form.find_element(By.NAME, "set")
    reason = Select(form.find_element(By.NAME, "notice_reason"))
    assert profile.first_selected_option.get_attribute("value") == "fort-plain"
    assert form.find_element(By.NAME, "notice_date").get_attribute("value") == "2027-03-01"
    settings.send_keys("mandate.distance_ft=600")
    profile.select_by_value("poughkeepsie")
    assert settings.get_attribute("value") == ""
    reason.select_by_value("highway_improvement")
    settings.send_keys("mandate.distance_ft=150")
    profile.select_by_value("fort-plain")  # the run's profile: its own (empty) settings and reason again
    assert settings.get_attribute("value") == "" and reason.first_selected_option.get_attribute("value") == ""


def _run_form_reasons(page: str) -> list[str]:
    form = re.search(r'<form id="run-form".*?</form>', page, re.S).group(0)
    select = re.search(r'<select name="notice_reason">(.*?)</select>', form, re.S).group(1)
    return re.findall(r'<option value="([^"]*)"', select)


def test_the_run_form_offers_only_the_run_profiles_notice_reasons(client):
    """Every notice reason was offered under every profile, and a Fort Plain run with Poughkeepsie's reason was
    refused: the form offers the reasons the profile file accepts (Fort Plain's none), and map.js each one's."""
    page = client.get("/").get_data(as_text=True)
    assert _run_form_reasons(page) == ["", *load_profile("fort-plain").mandate.notice_reasons.value] == [""]
    config = json.loads(html.unescape(re.search(r"data-page='([^']*)'", page).group(1)))
    assert config["noticeReasons"] == {
        name: list(load_profile(name).mandate.notice_reasons.value) for name in available_profiles()
    }
    assert config["noticeReasons"]["poughkeepsie"] == ["public_health_hazard", "highway_improvement"]


@pytest.mark.browser
def test_the_run_form_offers_each_profiles_own_notice_reasons_in_chromium(live_server, browser):
    """Switching the profile in the run form offers that profile's notice reasons only, and none is kept that the
    new profile does not accept."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    url, _ = live_server
    open_map(browser, url)
    form = browser.find_element(By.ID, "run-form")
    profile, reason = Select(form.find_element(By.NAME, "profile")), Select(form.find_element(By.NAME, "notice_reason"))

    def offered() -> list[str]:
        return [o.get_attribute("value") for o in reason.options]

    assert offered() == [""]  # Fort Plain, the run's profile, sets no notice reasons
    profile.select_by_value("poughkeepsie")
    assert offered() == ["", "public_health_hazard", "highway_improvement"]
    assert [o.text for o in reason.options] == ["(none)", "public health hazard", "highway improvement"]
    reason.select_by_value("highway_improvement")
    profile.select_by_value("wappinger")
    assert offered() == [""] and reason.first_selected_option.get_attribute("value") == ""
    profile.select_by_value("poughkeepsie")
    assert reason.first_selected_option.get_attribute("value") == ""  # not the run's profile: no reason kept


@pytest.mark.browser
def test_hostile_names_shown_as_text_in_chromium(live_server, browser, store):
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By

    url, _ = live_server
    open_map(browser, url)
    hostile = gpd.read_file(store, layer="parcel_results")["parcel_id"].iloc[0]
    popup = click_parcel(browser, hostile, store)
    text = popup.get_attribute("textContent")
    assert HOSTILE_OWNER in text and HOSTILE_ADDRESS in text
    assert popup.find_elements(By.TAG_NAME, "img") == []
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text  # noqa: B018 - raises when no alert is open
    shot(browser, "hostile-popup")
    browser.find_element(By.ID, "search").send_keys("onerror")
    browser.find_element(By.CSS_SELECTOR, "#search-form button").click()
    item = wait_for(browser, lambda: browser.find_elements(By.CSS_SELECTOR, "#search-results li"))[0]
    assert HOSTILE_OWNER in item.get_attribute("textContent")
    assert browser.find_elements(By.CSS_SELECTOR, "#search-results img") == []
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text  # noqa: B018


@pytest.mark.browser
def test_search_zooms_and_download_in_chromium(live_server, browser):
    from selenium.webdriver.common.by import By

    url, _ = live_server
    open_map(browser, url)
    before = browser.execute_script("return window.sewerplanMap.getZoom()")
    browser.find_element(By.ID, "search").send_keys("Main St")
    browser.find_element(By.CSS_SELECTOR, "#search-form button").click()
    wait_for(browser, lambda: browser.find_elements(By.CSS_SELECTOR, "#search-results li"))
    wait_for(browser, lambda: browser.execute_script("return window.sewerplanMap.getZoom()") > before)
    doc = browser.execute_async_script(
        "const done = arguments[0]; fetch('/api/results.geojson').then(r => r.json()).then(done);"
    )
    assert doc["type"] == "FeatureCollection" and len(doc["features"]) == 300
    shot(browser, "search")


@pytest.mark.browser
def test_draw_and_evaluate_an_extension_in_chromium(hill_store, browser, tmp_path):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    store = hill_store
    app = make_app(store, tmp_path)
    with serving(app) as url:
        open_map(browser, url)
        coords = hill_street(store)
        (x0, y0), (x1, y1) = coords[0], coords[-1]
        browser.execute_script(f"window.sewerplanMap.fitBounds([[{y0}, {x0}], [{y1}, {x1}]], {{animate: false}});")
        wait_for(browser, lambda: browser.execute_script("return document.body.dataset.loading") == "0")
        browser.find_element(By.ID, "draw-start").click()
        element = browser.find_element(By.CSS_SELECTOR, "#mapcell .folium-map")
        size = element.size
        for lon, lat in (coords[0], coords[-1]):
            px = browser.execute_script(
                f"const p = window.sewerplanMap.latLngToContainerPoint([{lat}, {lon}]);return [p.x, p.y];"
            )
            ActionChains(browser).move_to_element_with_offset(
                element, int(px[0] - size["width"] / 2), int(px[1] - size["height"] / 2)
            ).click().perform()
        browser.find_element(By.ID, "draw-finish").click()
        browser.find_element(By.ID, "plan-evaluate").click()
        result = wait_for(browser, lambda: browser.find_elements(By.CSS_SELECTOR, "#plan-result li"))
        text = " ".join(li.get_attribute("textContent") for li in result)
        assert "Newly required to connect" in text and "§ 144-18B" in text
        assert int(browser.find_element(By.ID, "plan-result").get_attribute("data-newly-mandated")) > 0
        shot(browser, "plan")


@pytest.mark.browser
def test_upload_in_chromium(store, browser, tmp_path):
    """Upload, map, validate, work on it, publish it from the Data page, then restore the previous store."""
    from selenium.webdriver.common.by import By

    own = tmp_path / "town.gpkg"
    shutil.copy(store, own)
    app = make_app(own, tmp_path)
    archive = tmp_path / "town.zip"
    archive.write_bytes(zipped_shapefile(sample_town(80), tmp_path))
    with serving(app) as url:
        browser.get(url + "/data/upload")
        browser.find_element(By.NAME, "dataset").send_keys(str(archive))
        browser.find_element(By.CSS_SELECTOR, "form button").click()
        wait_for(browser, lambda: browser.find_elements(By.ID, "mapping-form"))
        shot(browser, "upload-mapping")
        browser.find_element(By.CSS_SELECTOR, "#mapping-form button").click()
        wait_for(browser, lambda: browser.find_elements(By.ID, "problems"))
        assert "The data can be used" in browser.page_source
        browser.find_element(By.ID, "use-dataset").click()
        wait_for(browser, lambda: browser.find_elements(By.ID, "sewerplan-config"))
        assert browser.find_elements(By.ID, "workspace-banner")  # the planner's own workspace, not the town's
        shot(browser, "upload-done")
        browser.get(url + "/data/upload")
        browser.find_element(By.CSS_SELECTOR, ".publish-form button").click()
        assert message_saying(browser, "is now the town's store").is_displayed()
        assert len(gpd.read_file(own, layer="parcels")) == 80
        shot(browser, "published")
        browser.find_element(By.CSS_SELECTOR, ".restore-form button").click()
        assert message_saying(browser, "town's store again").is_displayed()
        assert len(gpd.read_file(own, layer="parcels")) == 300
        assert len(browser.find_elements(By.CSS_SELECTOR, ".restore-form")) == 2  # the restore can be undone
        shot(browser, "restored")


# -- publishing an upload that cannot run yet ---------------------------------------------------------------------


def _parcels_only(tmp_path) -> Path:
    path = tmp_path / "parcels-only.gpkg"
    sample_town(60)["parcels"].to_file(path, layer="parcels", driver="GPKG")
    return path


def _checked_upload(client, path: Path) -> str:
    token = csrf(client)
    data = {"dataset": (io.BytesIO(path.read_bytes()), path.name), "csrf_token": token}
    sent = client.post("/data/upload", data=data, content_type="multipart/form-data")
    assert sent.status_code == 302, sent.get_data(as_text=True)
    report = client.post(sent.headers["Location"], data={"csrf_token": token, "parcels.parcel_id": "parcel_id"})
    page = report.get_data(as_text=True)
    assert report.status_code == 200 and "The data can be used" in page and "Not yet:" in page
    return sent.headers["Location"].split("/")[2]


def test_an_upload_that_cannot_run_is_published_only_once_the_planner_confirms_what_is_missing(store, tmp_path):
    """Parcels alone, no mains ("Not yet" on its report), replaced the town's store with one click on Publish, with
    no confirmation: every later run of the town's store was refused until someone restored the old one. Such an
    upload needs a ticked box naming what is missing; a ready upload is still published with one click."""
    own = tmp_path / "town.gpkg"
    shutil.copy(store, own)
    app = make_app(own, tmp_path)
    client = app.test_client()
    before = own.read_bytes()
    upload = _checked_upload(client, _parcels_only(tmp_path))
    page = html.unescape(client.get("/data/upload").get_data(as_text=True))
    form = re.search(rf'<form method="post" action="/data/{upload}/publish".*?</form>', page, re.S).group(0)
    assert 'name="publish_not_ready"' in form and "required" in form and "mains" in form
    assert "kept" in form and "restore" in form  # the store it replaces is kept to restore, said on the confirmation
    token = csrf(client)
    refused = client.post(f"/data/{upload}/publish", data={"csrf_token": token})
    said = html.unescape(refused.get_data(as_text=True))
    assert refused.status_code == 409 and "cannot run yet" in said and "mains" in said, said[:3000]
    assert own.read_bytes() == before  # not published
    done = client.post(f"/data/{upload}/publish", data={"csrf_token": token, "publish_not_ready": "1"})
    said = html.unescape(done.get_data(as_text=True))
    assert done.status_code == 200 and "is now the town's store" in said and "cannot run yet" in said
    assert len(gpd.read_file(own, layer="parcels")) == 60
    kept = re.findall(r'name="name" value="([^"]+)"', said)
    assert len(kept) == 1  # the store it replaced, to restore
    # A ready upload: one click, no box.
    ready = csrf(client)
    data = {"dataset": (io.BytesIO(zipped_shapefile(sample_town(80), tmp_path)), "town.zip"), "csrf_token": ready}
    sent = client.post("/data/upload", data=data, content_type="multipart/form-data")
    client.post(sent.headers["Location"], data={"csrf_token": ready, "parcels.parcel_id": "parcel_id"})
    token2 = sent.headers["Location"].split("/")[2]
    page = client.get("/data/upload").get_data(as_text=True)
    form = re.search(rf'<form method="post" action="/data/{token2}/publish".*?</form>', page, re.S).group(0)
    assert "publish_not_ready" not in form
    published = client.post(f"/data/{token2}/publish", data={"csrf_token": ready})
    assert published.status_code == 200 and "is now the town" in published.get_data(as_text=True)


@pytest.mark.browser
def test_an_upload_that_cannot_run_needs_its_box_ticked_to_publish_in_chromium(store, browser, tmp_path):
    from selenium.webdriver.common.by import By

    own = tmp_path / "town.gpkg"
    shutil.copy(store, own)
    app = make_app(own, tmp_path)
    path = _parcels_only(tmp_path)
    with serving(app) as url:
        browser.get(url + "/data/upload")
        browser.find_element(By.NAME, "dataset").send_keys(str(path))
        browser.find_element(By.CSS_SELECTOR, "form button").click()
        wait_for(browser, lambda: browser.find_elements(By.ID, "mapping-form"))
        browser.find_element(By.CSS_SELECTOR, "#mapping-form button").click()
        wait_for(browser, lambda: browser.find_elements(By.ID, "problems"))
        browser.get(url + "/data/upload")
        form = browser.find_element(By.CSS_SELECTOR, ".publish-form")
        form.find_element(By.TAG_NAME, "button").click()  # the box not ticked: the browser stops it
        time.sleep(0.5)
        assert len(gpd.read_file(own, layer="parcels")) == 300 and not browser.find_elements(By.ID, "message")
        box = form.find_element(By.NAME, "publish_not_ready")
        assert "mains" in form.text and "kept" in form.text
        shot(browser, "publish-not-ready")
        box.click()
        form.find_element(By.TAG_NAME, "button").click()
        assert message_saying(browser, "is now the town's store").is_displayed()
        assert len(gpd.read_file(own, layer="parcels")) == 60


def test_search_finds_owners_of_any_alphabet_with_or_without_accents(tmp_path):
    """The map's search read "Łódź" as the word "d" and listed D'AGOSTINO; "lodz" and "muller", typed as a clerk
    types them, found nothing (a tester). The table's filter found them."""
    from layers.sample import sample_town
    from layers.write import write_layers
    from tests.conftest import Runner, make_app

    town = sample_town(60)
    parcels = town["parcels"]
    first, second = parcels["parcel_id"].iloc[:2]
    parcels.loc[parcels.index[0], "owner_name"] = "ŁÓDŹ ANNA"
    parcels.loc[parcels.index[1], "owner_name"] = "MÜLLER HANS"
    store = tmp_path / "town.gpkg"
    write_layers(str(store), town)
    Runner().invoke("analyze", "--profile", "fort-plain", "--data", store, "--out", store, ok=True)
    client = make_app(store, tmp_path).test_client()

    def found(q: str) -> list[str]:
        return [h["parcel_id"] for h in client.get("/api/search", query_string={"q": q}).get_json()["results"]]

    assert found("Łódź") == found("lodz") == found("LODZ anna") == [first]
    assert found("Müller") == found("muller") == [second]


@pytest.mark.browser
def test_a_map_opened_before_another_tabs_run_says_its_popups_are_of_the_newer_run(town_copy, tmp_path, browser):
    """Tab A ran the analysis with 250 ft; tab B, opened before, showed the new run's popups under the old run's
    line, colours and counts, with no word (a tester). B now says so above the map."""
    from tests.conftest import make_app

    app = make_app(town_copy, tmp_path)
    with serving(app) as url:
        open_map(browser, url)
        assert not browser.find_elements("id", "stale-workspace")
        other = app.test_client()  # the other tab: the planner runs the analysis again there
        token = csrf(other)
        started = other.post(
            "/analysis/run",
            data={"profile": "fort-plain", "set": "mandate.distance_ft=250", "csrf_token": token},
        ).get_json()
        assert wait_job(other, started)["state"] == "done"
        parcel = other.get("/api/search?q=main").get_json()["results"][0]["parcel_id"]
        from selenium.webdriver.common.by import By
        from selenium.webdriver.common.keys import Keys

        browser.find_element(By.ID, "search").send_keys(parcel, Keys.ENTER)  # the first hit's popup opens
        note = wait_for(browser, lambda: browser.find_elements("id", "stale-workspace"), timeout=30)[0]
        assert "A newer analysis of this data was run since this page was opened" in note.text
