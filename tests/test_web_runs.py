"""Analysis runs started together cannot wipe a store (issue 11, finding 2), through the web API over HTTP."""

from __future__ import annotations

import json
import shutil
import threading
import time
import urllib.error
import urllib.request

import geopandas as gpd
import pyogrio
import pytest
from click.testing import CliRunner

from gisapp import create_app
from gisapp.cli import main
from layers.sample import sample_town
from layers.store import latest_run, layer_counts, store_writer
from layers.write import write_layers
from tests.conftest import serving

INPUTS = ("parcels", "buildings", "streets", "mains", "manholes", "treatment_plants")


@pytest.fixture(scope="module")
def town(tmp_path_factory):
    path = tmp_path_factory.mktemp("runs") / "town.gpkg"
    write_layers(str(path), sample_town(300))
    assert (
        CliRunner()
        .invoke(main, ["analyze", "--profile", "fort-plain", "--data", str(path), "--out", str(path)])
        .exit_code
        == 0
    )
    return path


@pytest.fixture
def served(town, tmp_path):
    store = tmp_path / "sewerplan.gpkg"
    shutil.copy(town, store)
    app = create_app(
        {
            "TESTING": True,
            "STORE": str(store),
            "USERS_DB": str(tmp_path / "users.sqlite"),
            "UPLOAD_FOLDER": str(tmp_path / "uploads"),
            "SECRET_KEY": "test",
        }
    )
    client = app.test_client()
    client.get("/login")
    with client.session_transaction() as s:
        token = s["csrf"]
    cookie = client.get_cookie("session").value
    with serving(app) as url:
        yield url, {"Cookie": f"session={cookie}", "X-CSRF-Token": token}, store


def call(url, headers, data: bytes | None = None) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=data, headers=headers, method="POST" if data is not None else "GET")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def wait(base, headers, job_id) -> dict:
    for _ in range(600):
        _, job = call(f"{base}/api/jobs/{job_id}", headers)
        if job["state"] in ("done", "failed"):
            return job
        time.sleep(0.1)
    raise AssertionError("the run did not finish")


def start_together(base, headers, profiles) -> list[tuple[int, dict]]:
    barrier = threading.Barrier(len(profiles))
    answers: list = [None] * len(profiles)

    def one(k, profile):
        body = f"profile={profile}".encode()
        barrier.wait()
        answers[k] = call(f"{base}/analysis/run", headers | {"Content-Type": "application/x-www-form-urlencoded"}, body)

    threads = [threading.Thread(target=one, args=(k, p)) for k, p in enumerate(profiles)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return answers


def test_five_concurrent_runs_leave_the_store_intact(served):
    base, headers, store = served
    before = layer_counts(store)
    profiles = ["fort-plain", "poughkeepsie", "fort-plain", "poughkeepsie", "fort-plain"]
    answers = start_together(base, headers, profiles)
    statuses = sorted(status for status, _ in answers)
    assert statuses == [202, 409, 409, 409, 409], answers
    for status, doc in answers:
        if status == 409:
            assert "in progress" in doc["error"]["message"]
    job = wait(base, headers, next(doc for status, doc in answers if status == 202)["id"])
    assert job["state"] == "done", job
    # the last run, once the first is over, is accepted and its results are complete
    status, last = call(
        f"{base}/analysis/run", headers | {"Content-Type": "application/x-www-form-urlencoded"}, b"profile=poughkeepsie"
    )
    assert status == 202
    assert wait(base, headers, last["id"])["state"] == "done"
    after = layer_counts(store)
    for name in INPUTS:
        assert after[name] == before[name], name
    assert after["parcel_results"] == before["parcels"]
    assert after["measuring_lines"] == before["measuring_lines"] and after["connection_points"] > 0
    assert latest_run(store)["profile"] == "poughkeepsie"
    results = gpd.read_file(store, layer="parcel_results")
    assert results["status"].notna().all() and results["parcel_id"].is_unique


def test_readers_never_see_a_half_written_store(served):
    base, headers, store = served
    seen, stop = [], threading.Event()

    def read():
        while not stop.is_set():
            try:
                names = {str(n) for n, _ in pyogrio.list_layers(str(store))}
                seen.append(set(INPUTS) <= names and "parcel_results" in names)
            except Exception as exc:  # noqa: BLE001 - a torn file is what we look for
                seen.append(repr(exc))

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for profile in ("poughkeepsie", "fort-plain"):
            status, doc = call(
                f"{base}/analysis/run",
                headers | {"Content-Type": "application/x-www-form-urlencoded"},
                f"profile={profile}".encode(),
            )
            assert status == 202 and wait(base, headers, doc["id"])["state"] == "done"
    finally:
        stop.set()
        reader.join()
    assert seen and all(s is True for s in seen), [s for s in seen if s is not True][:3]


def test_the_cli_is_refused_while_the_web_app_writes(served, tmp_path):
    _, _, store = served
    with store_writer(store, who="pat"):
        result = CliRunner().invoke(
            main, ["analyze", "--profile", "fort-plain", "--data", str(store), "--out", str(store)]
        )
    assert result.exit_code == 2 and "in progress" in result.output and "pat" in result.output
