"""A new town starts on the web: `sewerplan serve --store town.gpkg` on a store that does not exist yet.

`serve` refused it ("Run `make demo`, or `sewerplan sample` and `sewerplan analyze ...` first"), so an engineer who
works only in the browser had to build the fake sample village before reaching the Data page to load the town's own
data. Now the server starts and creates nothing: every page says no data is loaded yet and links to the Data page,
the JSON API answers 404 saying so (never a 500), and the first publication on the Data page writes the store. A
path whose folder does not exist (a typo), a folder, or a file not named .gpkg is still refused, in one sentence;
so is a PostGIS schema that does not exist (the server's role may not create one).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
from click.testing import CliRunner

from gisapp.cli import main
from tests.conftest import Auth, checked_upload, csrf, make_app, serving
from tests.test_web import wait_for

NO_DATA = "No data is loaded yet"


@pytest.fixture
def new_town(tmp_path):
    """The web app on a store that does not exist yet, in a folder that does."""
    store = tmp_path / "town" / "town.gpkg"
    store.parent.mkdir()
    return make_app(store, tmp_path), store


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- the command ----------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_serve_starts_on_a_store_that_does_not_exist_yet_and_creates_nothing(tmp_path):
    store = tmp_path / "town.gpkg"
    port = free_port()
    instance = tmp_path / "instance"
    proc = subprocess.Popen(
        [sys.executable, "-m", "gisapp.cli", "serve", "--store", str(store), "--port", str(port)],
        cwd=tmp_path,
        env=os.environ | {"SEWERPLAN_INSTANCE": str(instance)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        for _ in range(300):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as answer:
                    status, page = answer.status, answer.read().decode()
                break
            except OSError:
                if proc.poll() is not None:
                    break
                time.sleep(0.1)
        else:
            raise AssertionError("the server did not start")
    finally:
        proc.terminate()
        output = proc.communicate(timeout=20)[0]
    assert proc.returncode != 2, output  # not refused
    assert status == 200 and NO_DATA in page and 'href="/data/upload"' in page, output
    said = " ".join(output.split())
    assert f"The store {store} does not exist yet" in said and f"Serving {store}" in said
    assert not store.exists()  # made by the first publication, not by starting


@pytest.mark.parametrize(
    ("given", "said"),
    [
        (
            "typo/town.gpkg",
            "Error: The folder {tmp}/typo does not exist, so the store {tmp}/typo/town.gpkg cannot be made there: "
            "check the path for a typo, or create the folder first.",
        ),
        (".", "Error: The store {tmp} is a folder: give a GeoPackage file, such as {tmp}/town.gpkg."),
        (
            "town.gpk",
            "Error: The store {tmp}/town.gpk does not exist, and a new store is a GeoPackage file: give a name ending "
            "in .gpkg (such as {tmp}/town.gpkg), or check the path for a typo.",
        ),
    ],
)
def test_serve_refuses_a_store_no_publication_could_make(tmp_path, monkeypatch, given, said):
    monkeypatch.setenv("SEWERPLAN_INSTANCE", str(tmp_path / "instance"))
    store = str(tmp_path) if given == "." else str(tmp_path / given)
    result = CliRunner().invoke(main, ["serve", "--store", store, "--port", str(free_port())])
    assert result.exit_code == 2, result.output
    assert " ".join(result.output.split()) == said.format(tmp=tmp_path)
    assert not (tmp_path / "typo").exists()


# -- the pages and the API ------------------------------------------------------------------------------------------

PAGES = ["/", "/summary", "/notices", "/plans", "/print.pdf?bbox=-74.7,42.9,-74.6,43.0"]
API = [
    "/api/summary",
    "/api/layers/parcels?bbox=-74.7,42.9,-74.6,43.0&zoom=16",
    "/api/parcels/1",
    "/api/parcel?id=1",
    "/api/building?id=1",
    "/api/search?q=main",
    "/api/trace?parcel=1",
    "/api/sewershed?manhole=MH-1",
    "/api/results.csv",
    "/api/results.geojson",
    "/api/results.gpkg",
    "/api/within?parcel=1&distance_ft=100",
    "/api/within.csv?parcel=1&distance_ft=100",
]


@pytest.mark.parametrize("path", PAGES)
def test_each_page_of_a_new_town_says_no_data_yet_and_links_to_the_data_page(new_town, path):
    app, store = new_town
    page = app.test_client().get(path)
    text = page.get_data(as_text=True)
    assert page.status_code == 200 and page.content_type.startswith("text/html"), text[:500]
    assert NO_DATA in text and 'id="no-data-link" href="/data/upload"' in text
    assert not store.exists() and not store.parent.joinpath("town-register.sqlite").exists()


@pytest.mark.parametrize("path", API)
def test_the_api_of_a_new_town_answers_404_saying_no_data_yet(new_town, path):
    app, store = new_town
    answer = app.test_client().get(path)
    assert answer.status_code == 404 and answer.is_json, answer.get_data(as_text=True)[:500]
    error = answer.get_json()["error"]
    assert error["title"] == "No data yet"
    assert error["message"] == (
        "No data is loaded yet: the store town.gpkg does not exist yet. Upload the town's data (Data page)."
    )
    assert not store.exists()


def test_a_run_or_a_register_asked_for_before_any_data_is_refused_without_writing(new_town):
    """The Run button's post would have been queued, to fail in its process; "Create the notice register" failed
    telling the clerk to press it. Neither writes a file (nor the store's lock)."""
    app, store = new_town
    client = app.test_client()
    token = csrf(client)
    run = client.post("/analysis/run", data={"profile": "fort-plain", "csrf_token": token})
    assert run.status_code == 404 and run.get_json()["error"]["title"] == "No data yet"
    made = client.post("/notices/register", data={"csrf_token": token})
    assert made.status_code == 200 and NO_DATA in made.get_data(as_text=True)
    assert list(store.parent.iterdir()) == []


def test_a_viewer_of_a_new_town_is_told_a_planner_loads_the_data(new_town):
    app, _ = new_town
    client = app.test_client()
    auth = Auth(app, client)
    auth.add("vic", "viewer", "viewer-password")
    auth.login("vic", "viewer-password")
    text = client.get("/").get_data(as_text=True)
    assert NO_DATA in text and "A planner loads them on the Data page" in text and "no-data-link" not in text


def test_the_first_publication_on_the_data_page_makes_the_new_towns_store(new_town, tmp_path):
    app, store = new_town
    client = app.test_client()
    overview = client.get("/data/upload").get_data(as_text=True)
    assert "No data yet: upload the town's layers above, check them, then publish them" in overview
    token = checked_upload(client, tmp_path, parcels=60)
    published = client.post(f"/data/{token}/publish", data={"csrf_token": csrf(client)})
    said = published.get_data(as_text=True).replace("&#39;", "'")
    assert published.status_code == 200, said[:2000]
    # it replaced no store: none is "kept below"
    assert "hill.gpkg is now the town's store. Not analysed yet." in said and "replaced" not in said
    assert store.is_file()
    page = client.get("/").get_data(as_text=True)
    assert NO_DATA not in page and "&#34;parcels&#34;: 60," in page
    assert client.get("/api/summary").status_code == 404  # no analysis yet: the summary's own 404
    assert "No analysis of this data yet" in client.get("/summary").get_data(as_text=True)


# -- in Chromium ----------------------------------------------------------------------------------------------------


@pytest.mark.browser
def test_the_map_of_a_new_town_leads_to_the_data_page(new_town, browser):
    from selenium.webdriver.common.by import By

    app, _ = new_town
    with serving(app) as url:
        browser.get(url + "/")
        said = wait_for(browser, lambda: browser.find_elements(By.ID, "no-data"))[0]
        assert said.is_displayed()
        assert NO_DATA in browser.find_element(By.TAG_NAME, "h2").text
        browser.find_element(By.ID, "no-data-link").click()
        wait_for(browser, lambda: browser.current_url.endswith("/data/upload"))
        assert browser.find_elements(By.CSS_SELECTOR, 'input[type="file"]')
