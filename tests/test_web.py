"""The summary page and its API: Flask test client for every route, and a real headless Chromium."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner
from werkzeug.serving import make_server

from gisapp import SETTINGS, create_app
from gisapp.cli import main
from layers.sample import sample_town
from layers.write import write_layers

SCREENSHOTS = Path(__file__).resolve().parents[1] / "build" / "screenshots"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("store") / "sewerplan.gpkg"
    town = sample_town(300)
    town["parcels"].loc[0, "owner_name"] = "<img src=x onerror=alert(1)>"
    town["parcels"].loc[0, "site_address"] = "${alert(1)}"
    write_layers(str(path), town)
    result = CliRunner().invoke(main, ["analyze", "--profile", "fort-plain", "--data", str(path), "--out", str(path),
                                       "--notice-date", "2027-03-01", "--connected", str(_billing(path))])
    assert result.exit_code == 0, result.output
    return path


def _billing(path: Path) -> Path:
    # Connect nothing, so the first parcel (with the hostile owner name) is listed as mandated.
    csv = path.parent / "billing.csv"
    csv.write_text("parcel_id\n")
    return csv


@pytest.fixture
def client(store):
    return create_app({"TESTING": True, "STORE": str(store)}).test_client()


def test_index_lists_counts_and_mandated_parcels(client):
    page = client.get("/")
    assert page.status_code == 200 and page.mimetype == "text/html"
    html = page.get_data(as_text=True)
    assert "Village of Fort Plain" in html and "§ 144-4" in html
    assert 'id="counts"' in html and "2027-05-30" in html


def test_owner_names_are_escaped(client):
    html = client.get("/").get_data(as_text=True)
    assert "<img src=x" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html


def test_api_summary(client, store):
    doc = client.get("/api/summary").get_json()
    assert sum(doc["counts"].values()) == 300
    assert doc["run"]["profile"] == "fort-plain"


def test_store_without_results(tmp_path):
    empty = tmp_path / "empty.gpkg"
    write_layers(str(empty), {"parcels": sample_town(60)["parcels"]})
    c = create_app({"TESTING": True, "STORE": str(empty)}).test_client()
    assert "No analysis in" in c.get("/").get_data(as_text=True)
    assert c.get("/api/summary").status_code == 404


def test_error_shape(client):
    api = client.get("/api/nothing-here")
    assert api.status_code == 404 and api.is_json
    assert set(api.get_json()["error"]) == {"status", "title", "message", "problems"}
    page = client.get("/nothing-here")
    assert page.status_code == 404 and page.mimetype == "text/html"


def test_security_headers(client):
    headers = client.get("/").headers
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert "frame-ancestors 'none'" in headers["Content-Security-Policy"]


def test_settings_have_help():
    assert all(help_text for _, help_text in SETTINGS.values())


@pytest.fixture
def live_server(store):
    app = create_app({"TESTING": True, "STORE": str(store)})
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


@pytest.fixture
def browser(tmp_path):
    webdriver = pytest.importorskip("selenium.webdriver")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    if not (chromium and driver_path):
        if os.environ.get("CI"):
            pytest.fail("CI must have Debian's chromium and chromium-driver installed (see .ci/run).")
        pytest.skip("chromium / chromedriver not installed (apt-get install chromium chromium-driver)")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
                 f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1400,1000"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    yield driver
    driver.quit()


@pytest.mark.browser
def test_summary_page_in_chromium(live_server, browser):
    from selenium.webdriver.common.by import By

    browser.get(live_server + "/")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SCREENSHOTS / "summary.png"))
    rows = browser.find_elements(By.CSS_SELECTOR, "#counts tr")
    counts = {r.find_elements(By.TAG_NAME, "td")[0].text: int(r.find_elements(By.TAG_NAME, "td")[1].text)
              for r in rows[1:]}
    assert sum(counts.values()) == 300 and counts["mandated"] > 0
    # The hostile owner name is shown as text and no script ran.
    assert "<img src=x onerror=alert(1)>" in browser.find_element(By.ID, "mandated").text
    assert "${alert(1)}" in browser.find_element(By.ID, "mandated").text
    assert browser.find_elements(By.CSS_SELECTOR, "#mandated img") == []
    from selenium.common.exceptions import NoAlertPresentException

    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text  # noqa: B018 - reading it raises when no alert is open
