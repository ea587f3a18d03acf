"""No page, JSON answer or kept sentence of the web app names the server's own folders (the instance folder, the
uploads, the store's folder, the notices folder, a register's folder): each names the file alone
(``gisapp.errors.without_server_folders``). A layer refused on an upload's "Add a layer" form had shown
"GDAL says: GPKG:/srv/.../uploads/TOKEN/incoming-.../data/streets.gpkg: No such file or directory" on the
column-mapping page and the validation report, which showed their message as it came."""

from __future__ import annotations

import io
import sqlite3
import warnings
from pathlib import Path

import pytest

from gisapp.users import add_user
from layers.errors import Problem
from layers.sample import sample_town
from layers.write import write_layers
from tests.conftest import csrf, make_app, posted_upload


@pytest.fixture
def planner(tmp_path):
    """The web app on a small village, with a planner signed in: (app, client)."""
    store = tmp_path / "town.gpkg"
    write_layers(str(store), sample_town(60))
    app = make_app(store, tmp_path)
    add_user(app.config["USERS_DB"], "pat", "planner", "planner-password")
    client = app.test_client()
    client.post("/login", data={"name": "pat", "password": "planner-password", "csrf_token": csrf(client)})
    return app, client


def unreadable_gpkg(tmp_path: Path, name: str = "streets") -> bytes:
    """A GeoPackage that passes the upload's checks (its signature) but GDAL cannot open: without its
    gpkg_geometry_columns table, GDAL says "GPKG:/full/path/streets.gpkg: No such file or directory"."""
    path = tmp_path / f"broken-{name}.gpkg"
    write_layers(str(path), {name: sample_town(50)[name]})
    with sqlite3.connect(path) as db:
        db.execute("DROP TABLE gpkg_geometry_columns")
    db.close()
    return path.read_bytes()


def upload_of(tmp_path: Path, *, mains_crs: bool = True, parcels: bool = True) -> bytes:
    """The sample village as one GeoPackage; ``mains_crs=False``: its mains declare no CRS (an error the mapping page's
    "CRS" field fixes, so the upload is kept and refusals come back on that page)."""
    layers = sample_town(60)
    if not mains_crs:
        layers["mains"] = layers["mains"].set_crs(None, allow_override=True)
    if not parcels:
        del layers["parcels"]
    path = tmp_path / "upload-source.gpkg"
    with warnings.catch_warnings():  # pyogrio's "'crs' was not provided": meant
        warnings.simplefilter("ignore", UserWarning)
        write_layers(str(path), layers)
    return path.read_bytes()


def add_layer(client, token: str, payload: bytes, name: str, kind: str):
    return client.post(
        f"/data/{token}/add",
        data={"kind": kind, "layer": (io.BytesIO(payload), name), "csrf_token": csrf(client)},
        content_type="multipart/form-data",
    )


def assert_no_folder(app, text: str) -> None:
    uploads = app.config["UPLOAD_FOLDER"]
    assert uploads not in text and str(Path(uploads).parent) not in text and app.instance_path not in text, text


@pytest.mark.parametrize(
    ("page", "source", "shown"),
    [
        # checked: the add is refused on the validation report
        ("the validation report", {}, "Validation report"),
        # mains without a CRS: the report cannot be made, the refusal is said on the column-mapping page
        ("the column-mapping page", {"mains_crs": False}, "which column holds what"),
        # no parcels: the column-mapping page, with its form to add them
        ("the column-mapping page", {"parcels": False}, "which column holds what"),
    ],
)
def test_a_refused_layer_is_named_by_its_file_not_the_uploads_folder(planner, tmp_path, page, source, shown):
    app, client = planner
    mapping = posted_upload(client, upload_of(tmp_path, **source), "hill.gpkg")
    token = mapping.split("/")[2]
    if not source:
        assert "The data can be used" in client.post(mapping, data={"csrf_token": csrf(client)}).get_data(as_text=True)
    kind = "parcels" if source.get("parcels") is False else "streets"
    answer = add_layer(client, token, unreadable_gpkg(tmp_path, kind), f"{kind}.gpkg", kind)
    text = answer.get_data(as_text=True)
    assert answer.status_code == 400 and shown in text, text[:1500]
    assert f"GDAL could not open {kind}.gpkg as a GeoPackage: the file is there" in text, page
    assert "No such file" not in text, page  # GDAL's words of the file that is there
    assert_no_folder(app, text)
    # refused, the upload is as it was: its page is there to add the layer again
    assert client.get(mapping).status_code == 200


def test_a_problem_on_a_page_or_in_json_names_its_file_not_the_uploads_folder(planner):
    """What GDAL warned of while reading a layer is a problem's message, as GDAL says it: a GeoPackage's
    "user_version=... on '/srv/.../uploads/TOKEN/data/hill.gpkg' may only be partially supported"."""
    from gisapp.errors import problem_view

    app, _ = planner
    told = f"GDAL warned: user_version=99999 on '{app.config['UPLOAD_FOLDER']}/acShDKi1/data/hill.gpkg' may only be."
    with app.test_request_context("/data/acShDKi1/mapping"):
        shown = problem_view(Problem("parcels", "read_warning", "warning", told, 1), upload=True)
    assert shown["message"] == "GDAL warned: user_version=99999 on 'hill.gpkg' may only be.", shown


def test_a_failed_runs_sentence_names_its_file_not_the_uploads_folder(planner):
    """A run's process words its failure (``web_text``) without the app, which knows the folders: the job's JSON,
    which the map shows as "Failed: ...", names the file alone."""
    from gisapp.state import Job, state

    app, client = planner
    gone = f"{app.config['UPLOAD_FOLDER']}/acShDKi1/store.gpkg"
    with app.app_context():
        job = Job(id="failed-run", store=gone, state="failed", error=f"{gone} does not exist: check its name.")
        state().jobs[job.id] = job
    answer = client.get("/api/jobs/failed-run").get_json()
    assert answer["error"] == "store.gpkg does not exist: check its name.", answer
    assert_no_folder(app, str(answer))


def test_a_sentence_kept_for_the_next_page_names_its_file_not_the_server_folders(planner):
    """A refusal said on the page a redirect lands on is kept in the session, a cookie the browser can read: it is
    kept naming the file alone, not only shown so."""
    from flask import session

    from gisapp.views._said import SESSION_KEY, say

    app, _ = planner
    told = f"Cannot write {app.config['NOTICES_FOLDER']}/batch-1/letters.pdf: the disk is full."
    with app.test_request_context("/notices/issue", method="POST"):
        say(error=told)
        kept = session[SESSION_KEY]
    assert kept[0][1] == {"error": "Cannot write letters.pdf: the disk is full."}, kept


def test_the_mapping_page_names_a_refused_layer_by_its_file_in_chromium(planner, tmp_path, browser):
    """The column-mapping page of an upload without parcels, as a planner sees it in Chromium: a parcels layer GDAL
    cannot open, sent with its "Add a layer" form, is named by its file, and the upload is kept to try again."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from tests.conftest import serving

    app, _ = planner
    (tmp_path / "sent").mkdir()
    broken = tmp_path / "sent" / "parcels.gpkg"
    broken.write_bytes(unreadable_gpkg(tmp_path, "parcels"))
    source = tmp_path / "sent" / "hill.gpkg"
    source.write_bytes(upload_of(tmp_path, parcels=False))
    with serving(app) as base:
        browser.get(f"{base}/login?next=/data/upload")
        browser.find_element(By.NAME, "name").send_keys("pat")
        browser.find_element(By.NAME, "password").send_keys("planner-password")
        browser.find_element(By.CSS_SELECTOR, "form button").click()
        WebDriverWait(browser, 30).until(lambda d: d.current_url.endswith("/data/upload"))
        browser.find_element(By.CSS_SELECTOR, "#upload-form input[name=dataset]").send_keys(str(source))
        browser.find_element(By.CSS_SELECTOR, "#upload-form button").click()
        WebDriverWait(browser, 60).until(lambda d: d.current_url.endswith("/mapping"))
        browser.find_element(By.CSS_SELECTOR, "#add-layer-form input[name=layer]").send_keys(str(broken))
        browser.find_element(By.CSS_SELECTOR, "#add-layer-form button[type=submit]").click()
        WebDriverWait(browser, 60).until(lambda d: d.current_url.endswith("/add"))
        said = browser.find_element(By.ID, "message").text
        heading = browser.find_element(By.TAG_NAME, "h2").text
    assert "which column holds what" in heading, heading
    assert said.startswith("GDAL could not open parcels.gpkg as a GeoPackage: the file is there"), said
    assert "No such file" not in said, said
    assert_no_folder(app, said)
