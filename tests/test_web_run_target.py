"""A form acts on the workspace its page showed, or is refused: never on another one the session moved to meanwhile.

"Work on it" and "Back to the town's store" change the planner's session, so every tab at once. A tester's tab A
said "You are working on your upload ..." above its Run form; tab B went back to the town's store; Run in tab A ran a
what-if on the town's store, replacing the results its notices were given on. Each page's Run form (a hidden
``workspace`` field) and the map's plan posts (the ``X-Sewerplan-Workspace`` header) now say which workspace the page
showed, and a request whose workspace is no longer the session's is refused with 409 and a sentence saying so.
"""

from __future__ import annotations

import re

import pytest

from layers.sample import sample_town
from layers.store import latest_run
from layers.write import write_layers
from tests.conftest import checked_upload, csrf, serving, wait_job


@pytest.fixture
def town(town_copy):
    return town_copy


@pytest.fixture
def app(town_copy_app):
    return town_copy_app


def _work_on(client, token: str) -> None:
    assert client.post(f"/data/{token}/use", data={"csrf_token": csrf(client)}).status_code == 302


def _back_to_town(client) -> None:
    assert client.post("/data/town", data={"csrf_token": csrf(client)}).status_code == 302


def _shown(page: str) -> str:
    """The workspace the map page's Run form sends back."""
    form = re.search(r'<form id="run-form".*?</form>', page, re.S).group(0)
    return re.search(r'<input type="hidden" name="workspace" value="([^"]*)">', form).group(1)


def _run(client, workspace: str | None, **form):
    data = {"profile": "poughkeepsie", "csrf_token": csrf(client)} | form
    if workspace is not None:
        data["workspace"] = workspace
    return client.post("/analysis/run", data=data)


def test_a_run_from_a_page_on_the_upload_is_refused_once_the_session_went_back_to_the_town(app, town, tmp_path):
    client = app.test_client()
    token = checked_upload(client, tmp_path)
    _work_on(client, token)
    tab_a = client.get("/").get_data(as_text=True)
    assert "You are working on your upload" in tab_a and _shown(tab_a) == token
    assert f'data-workspace="{token}"' in tab_a  # the map's script sends it with its JSON posts

    _back_to_town(client)  # "Back to the town's store", pressed in tab B
    assert _shown(client.get("/").get_data(as_text=True)) == "town"
    before = latest_run(town)
    refused = _run(client, token)  # Run, pressed in tab A
    assert refused.status_code == 409
    message = refused.get_json()["error"]["message"]
    assert "This page was opened on your upload hill.gpkg" in message
    assert "you are working on the town's store now" in message and "Reload the page" in message
    assert "Nothing was done." in message
    assert latest_run(town) == before  # the town's results, on which notices were given, are untouched


def test_a_run_from_a_page_on_the_town_is_refused_once_the_session_works_on_an_upload(app, town, tmp_path):
    client = app.test_client()
    token = checked_upload(client, tmp_path)
    tab_a = client.get("/").get_data(as_text=True)
    assert _shown(tab_a) == "town" and "You are working on your upload" not in tab_a
    _work_on(client, token)  # "Work on it", pressed in tab B
    refused = _run(client, "town")
    assert refused.status_code == 409
    message = refused.get_json()["error"]["message"]
    assert "opened on the town's store" in message and "you are working on your upload hill.gpkg now" in message

    accepted = _run(client, token)  # the page as it is now: the run goes to the upload
    assert accepted.status_code == 202, accepted.get_json()
    job = wait_job(client, accepted.get_json(), 120)
    assert job["state"] == "done", job
    assert latest_run(app.config["UPLOAD_FOLDER"] + f"/{token}/store.gpkg")["profile"] == "poughkeepsie"


def test_a_run_that_names_no_workspace_keeps_acting_on_the_sessions(client):
    """A script posting the form as before (no ``workspace``) is not refused: only a page that showed another one."""
    assert _run(client, None, profile="no-such-profile").status_code == 400  # past the check, to the profile's


def test_an_upload_gone_since_the_page_was_opened_is_named_without_its_token(app, tmp_path):
    client = app.test_client()
    token = checked_upload(client, tmp_path)
    _work_on(client, token)
    assert client.post(f"/data/{token}/discard", data={"csrf_token": csrf(client)}).status_code == 302
    refused = _run(client, token)
    assert refused.status_code == 409
    message = refused.get_json()["error"]["message"]
    assert "an upload of yours that is no longer there" in message and token not in message


@pytest.mark.parametrize("route", ["/plans/evaluate", "/plans/line"])
def test_the_maps_plan_posts_are_refused_for_a_workspace_the_session_left(app, tmp_path, route):
    client = app.test_client()
    token = checked_upload(client, tmp_path)
    _work_on(client, token)
    _back_to_town(client)
    body = {"streets_run": "Main St", "save": True, "text": "{}", "name": "x.geojson"}
    headers = {"X-CSRF-Token": csrf(client), "X-Sewerplan-Workspace": token}
    refused = client.post(route, json=body, headers=headers)
    assert refused.status_code == 409
    assert "opened on your upload hill.gpkg" in refused.get_json()["error"]["message"]
    assert client.get("/plans").status_code == 200 and "x.geojson" not in client.get("/plans").get_data(as_text=True)


def test_the_maps_reads_and_links_are_refused_for_a_workspace_the_session_left(app, tmp_path):
    """Reads as posts are: the layers, a popup, a download and the printed sheet from a page that showed the upload
    are refused (409) once the session went back to the town's store; without a workspace named (a script), the
    session's is read as before."""
    client = app.test_client()
    token = checked_upload(client, tmp_path)
    _work_on(client, token)
    page = client.get("/").get_data(as_text=True)
    assert f'data-workspace="{token}"' in page  # the map's reads and links name the page's workspace
    _back_to_town(client)
    bbox = "-180,-90,180,90"
    for path, kwargs in (
        ("/api/layers/parcels", {"query_string": {"bbox": bbox}, "headers": {"X-Sewerplan-Workspace": token}}),
        ("/api/results.csv", {"query_string": {"workspace": token}}),
        ("/api/search", {"query_string": {"q": "Main", "workspace": token}}),
        ("/print.pdf", {"query_string": {"bbox": bbox, "workspace": token}}),
    ):
        refused = client.get(path, **kwargs)
        assert refused.status_code == 409, (path, refused.status_code)
        assert "opened on your upload hill.gpkg" in refused.get_data(as_text=True), path
    assert client.get("/api/layers/parcels", query_string={"bbox": bbox}).status_code == 200
    assert client.get("/api/results.csv", query_string={"workspace": "town"}).status_code == 200


@pytest.mark.browser
def test_run_in_a_tab_on_the_upload_after_another_tab_went_back_to_the_town_in_chromium(app, town, tmp_path, browser):
    """The tester's two tabs: the map on the upload, the session sent back to the town's store from elsewhere, then
    Run pressed on the map: the page says why nothing ran, and the town's results stay."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    from tests.test_web import open_map, wait_for

    with serving(app) as url:
        open_map(browser, url)
        browser.get(url + "/data/upload")
        hill = tmp_path / "hill.gpkg"
        write_layers(str(hill), sample_town(80))
        browser.find_element(By.NAME, "dataset").send_keys(str(hill))
        browser.find_element(By.CSS_SELECTOR, "#upload-form button[type=submit]").click()
        wait_for(browser, lambda: "/mapping" in browser.current_url)
        browser.find_element(By.CSS_SELECTOR, "form button[type=submit]:not([name])").click()
        wait_for(browser, lambda: "The data can be used" in browser.page_source)
        browser.get(url + "/data/upload")
        browser.find_element(By.XPATH, "//button[text()='Work on it']").click()
        wait_for(browser, lambda: browser.find_elements(By.ID, "workspace-banner"))
        open_map(browser, url)
        # tab B: "Back to the town's store", as its form posts it, with this browser's session
        browser.execute_script(
            "const f = new FormData(); f.append('csrf_token', arguments[0]);"
            "return fetch('/data/town', {method: 'POST', body: f, credentials: 'same-origin'}).then((r) => r.ok);",
            browser.find_element(By.ID, "sewerplan-config").get_attribute("data-csrf"),
        )
        # the map's reads are refused too, and the page says so once: moved, it showed the town's parcels under a
        # banner saying "You are working on your upload" (a tester)
        browser.execute_script("window.sewerplanMap.panBy([60, 0]);")
        stale = wait_for(browser, lambda: (n := browser.find_elements(By.ID, "stale-workspace")) and n[0].text)
        assert "opened on your upload hill.gpkg" in stale and "Reload the page" in stale
        before = latest_run(town)
        form = browser.find_element(By.ID, "run-form")
        Select(form.find_element(By.NAME, "profile")).select_by_value("poughkeepsie")
        form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        said = wait_for(browser, lambda: "Reload the page" in (t := browser.find_element(By.ID, "job").text) and t)
        assert "opened on your upload hill.gpkg" in said and "the town's store now" in said
        assert latest_run(town) == before


@pytest.mark.browser
def test_a_map_opened_during_a_run_follows_it_and_run_is_pressed_once(app, town, browser):
    """Reloaded mid-run, the map showed the old results with an empty job line, no sign a run was going; and a
    double click on Run told the planner "a run is in progress" of their own (a tester). The page follows a run
    going on its store, and Run stays pressed while one goes."""
    from selenium.webdriver.common.by import By

    from gisapp.state import Job
    from tests.test_web import open_map, wait_for

    job = Job(id="f" * 32, store=app.config["STORE"], state="running", step="reading the layers")
    app.extensions["sewerplan"].jobs[job.id] = job  # a run as the worker holds it, going on the town's store
    assert _page_config(app)["runningJob"] == job.id
    with serving(app) as url:
        open_map(browser, url)
        status = wait_for(
            browser, lambda: "Running: reading the layers" in (t := browser.find_element(By.ID, "job").text) and t
        )
        assert status.startswith("Running")
        button = browser.find_element(By.CSS_SELECTOR, "#run-form button[type=submit]")
        assert not button.is_enabled()
        job.state, job.error = "failed", "The analysis stopped unexpectedly."
        wait_for(
            browser, lambda: "Failed: The analysis stopped unexpectedly." in browser.find_element(By.ID, "job").text
        )
        assert button.is_enabled()
    job.state = "done"
    assert _page_config(app)["runningJob"] is None


def _page_config(app) -> dict:
    """The map page's settings for its script (``data-page``), as the browser reads them."""
    import html
    import json

    page = app.test_client().get("/").get_data(as_text=True)
    return json.loads(html.unescape(re.search(r"data-page='([^']*)'", page).group(1)))


def test_an_upload_a_run_is_using_is_not_discarded_until_the_run_ends(app, tmp_path):
    """Discard pressed while a run on the upload went deleted its files under the run, which failed with
    "/tmp/.../uploads/<token>/store.gpkg does not exist". Refused now, as Publish is: both take the upload store's
    writer lock, which the run holds from the moment it is started until it ends."""
    client = app.test_client()
    token = checked_upload(client, tmp_path)
    folder = tmp_path / "uploads" / token
    _work_on(client, token)
    started = _run(client, token)
    assert started.status_code == 202, started.get_json()
    refused = client.post(f"/data/{token}/discard", data={"csrf_token": csrf(client)})
    said = re.search(r'id="message"[^>]*>([^<]*)<', refused.get_data(as_text=True))[1]
    assert refused.status_code == 409 and (folder / "store.gpkg").exists()
    assert "hill.gpkg was not discarded: a run is using this upload; discard it when the run ends." in said
    published = client.post(f"/data/{token}/publish", data={"csrf_token": csrf(client), "publish_not_ready": "1"})
    said = re.search(r'id="message"[^>]*>([^<]*)<', published.get_data(as_text=True))[1]
    assert published.status_code == 409 and "a run is using this upload; publish it when the run ends." in said
    job = wait_job(client, started.get_json(), 120)
    assert job["state"] == "done", job  # it failed, its store deleted under it
    assert client.post(f"/data/{token}/discard", data={"csrf_token": csrf(client)}).status_code == 302
    assert not folder.exists()
