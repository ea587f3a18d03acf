"""The command line and the web page give the same answer for the same workspace (issue 16).

Three workspaces, each analysed through the command line into its store: the sample village under Fort Plain; the
same village under Wappinger with ``--set mandate.distance_ft=200`` (the town's period of notice from its town
settings, as a clerk gives it); and a village whose mains carry no from/to fields or inverts and are drawn against
the flow, analysed with ``--digitised-direction``. For each: the analysis counts (a web run of the same layers with
the same form), a trace, a notices preview and a plan, from ``sewerplan`` and from the web app on the same store.

The digitised-direction choice is shown to change the trace and the plan, so that their agreement means something:
before this issue, ``plan`` and the web trace ignored it.
"""

from __future__ import annotations

import re
import shutil

import pytest
import shapely

from layers.register import Register
from layers.sample import sample_town
from layers.write import write_layers
from tests.conftest import Runner, csrf, make_app, town_toml, wait_job

NOTICE_DATE = "2027-03-01"
# The Town's own period of notice; its town settings hold no resolution of a time to correct (§ 196-22A sets 10 days)
WAPPINGER_TOWN = (
    town_toml("Town of Wappinger")
    + '"mandate.notice_period_days" = { days = 60, act = "Resolution 12 of 2027 of the Town Board" }\n'
)
WORKSPACES = {
    "sample": {"flags": ["--profile", "fort-plain"], "form": {"profile": "fort-plain"}},
    "wappinger-200": {
        "flags": ["--profile", "wappinger", "--set", "mandate.distance_ft=200"],
        "form": {"profile": "wappinger", "set": "mandate.distance_ft=200"},
    },
    "digitised": {
        "flags": ["--profile", "fort-plain", "--digitised-direction"],
        "form": {"profile": "fort-plain", "digitised_direction": "1"},
    },
}


def _layers(name: str) -> dict:
    town = sample_town(300)
    if name == "digitised":  # no from/to fields, no inverts: only the drawing gives the direction, and it is reversed
        mains = town["mains"].drop(columns=["from_manhole", "to_manhole", "us_invert_ft", "ds_invert_ft"])
        town["mains"] = mains.set_geometry(shapely.reverse(mains.geometry.values))
    return town


def _analysed(name: str, folder) -> dict:
    """A workspace's raw layers and its store analysed through the command line, with an empty register."""
    raw = folder / "raw" / "town.gpkg"
    raw.parent.mkdir()
    write_layers(str(raw), _layers(name))
    store = folder / "town.gpkg"
    shutil.copy(raw, store)
    if name.startswith("wappinger"):  # the town's own period of notice (Wappinger § 196-17E leaves it to the town)
        (folder / "town.toml").write_text(WAPPINGER_TOWN, encoding="utf-8")
    summary = Runner().json("analyze", *WORKSPACES[name]["flags"], "--data", store, "--out", store)["summary"]
    register = folder / "register.sqlite"
    Register(str(register), create=True)
    return {"name": name, "raw": raw, "store": store, "summary": summary, "register": register}


@pytest.fixture(scope="module", params=list(WORKSPACES))
def workspace(request, tmp_path_factory) -> dict:
    return _analysed(request.param, tmp_path_factory.mktemp(request.param))


@pytest.fixture(scope="module")
def digitised(tmp_path_factory) -> dict:
    return _analysed("digitised", tmp_path_factory.mktemp("digitised-only"))


@pytest.fixture(scope="module")
def wappinger(tmp_path_factory) -> dict:
    return _analysed("wappinger-200", tmp_path_factory.mktemp("wappinger-only"))


@pytest.fixture
def web(workspace, tmp_path):
    """The web app on the workspace's store, with its register; a client and its CSRF token."""
    app = make_app(workspace["store"], tmp_path, REGISTER=str(workspace["register"]))
    client = app.test_client()
    return client, csrf(client)


def _mandated(workspace) -> str:
    parcels = Runner().json("analyze", "--data", workspace["store"])["mandated"]
    return parcels[0]["parcel_id"]


def test_a_web_run_counts_what_the_command_line_counts(workspace, tmp_path):
    own = tmp_path / "town.gpkg"
    shutil.copy(workspace["raw"], own)  # the same layers, never analysed: the web form gives the workspace
    client = make_app(own, tmp_path).test_client()
    form = WORKSPACES[workspace["name"]]["form"] | {"csrf_token": csrf(client)}
    job = wait_job(client, client.post("/analysis/run", data=form).get_json(), 60)
    assert job["state"] == "done", job
    cli = workspace["summary"]
    assert job["summary"]["counts"] == cli["counts"]
    assert (job["summary"]["distance_ft"], job["summary"]["distance_section"]) == (
        cli["distance_ft"],
        cli["distance_section"],
    )
    assert client.get("/api/summary").get_json()["counts"] == cli["counts"]
    assert job["summary"]["workspace"]["settings"] == cli["workspace"]["settings"]
    assert job["summary"]["workspace"]["digitised_direction"] == cli["workspace"]["digitised_direction"]


def test_a_trace_is_the_same_on_the_web(workspace, web):
    client, _ = web
    parcel = _mandated(workspace)
    cli = Runner().json("trace", "--data", workspace["store"], "--parcel", parcel)
    page = client.get("/api/trace", query_string={"parcel": parcel}).get_json()
    assert {k: v for k, v in page.items() if not k.endswith("geojson")} == cli


def test_the_digitised_direction_changes_the_trace(digitised):
    """Without the recorded choice (the raw layers, the profile alone) the same parcel traces another way."""
    workspace = digitised
    parcel = _mandated(workspace)
    recorded = Runner().json("trace", "--data", workspace["store"], "--parcel", parcel)
    given = Runner().json(
        "trace", "--data", workspace["raw"], "--profile", "fort-plain", "--digitised-direction", "--parcel", parcel
    )
    inferred = Runner().json("trace", "--data", workspace["raw"], "--profile", "fort-plain", "--parcel", parcel)
    assert recorded == given
    assert recorded["path"] != inferred["path"] and recorded["problem"] and not inferred["problem"]


def test_a_notices_preview_is_the_same_on_the_web(workspace, web):
    client, token = web
    cli = Runner().json(
        "notices",
        "preview",
        "--data",
        workspace["store"],
        "--notice-date",
        NOTICE_DATE,
        "--register",
        workspace["register"],
    )
    response = client.post("/notices/preview", data={"notice_date": NOTICE_DATE, "csrf_token": token})
    page = response.get_data(as_text=True)
    assert response.status_code == 200, re.findall(r'class="error"[^>]*>([^<]*)', page)
    heading = re.search(r"Preview: (\d+) notice\(s\) to (\d+) mailing address\(es\)", page)
    assert heading, page[:2000]
    assert (int(heading.group(1)), int(heading.group(2))) == (len(cli["notices"]), cli["mailing_addresses"])
    from gisapp.words import town_date

    deadline = town_date(cli["deadline"])  # the page writes dates as the town does; the JSON keeps ISO
    assert f"Deadline <strong>{deadline}</strong> ({cli['period']['days']} days" in page
    table = page[page.index('<table id="preview">') :]
    table = table[: table.index("</table>")]
    dated = re.findall(rf"<td>([^<]*)</td><td>{re.escape(deadline)}</td>", table)
    shown = {p for cell in dated for p in cell.split("; ")}
    assert shown == {n["parcel_id"] for n in cli["notices"]}
    assert cli["notices"]  # a preview of nothing would agree about nothing


def test_the_wappinger_preview_uses_the_towns_distance_and_period(wappinger):
    workspace = wappinger
    cli = Runner().json(
        "notices",
        "preview",
        "--data",
        workspace["store"],
        "--notice-date",
        NOTICE_DATE,
        "--register",
        workspace["register"],
    )
    assert cli["deadline"] == "2027-04-30" and cli["period"]["basis"].startswith("Resolution 12 of 2027")
    assert workspace["summary"]["distance_ft"] == 200.0


def test_a_plan_is_the_same_on_the_web(workspace, web):
    client, token = web
    street = sample_town(300)["streets"]["street_name"].iloc[3]
    cli = Runner().json("plan", "--data", workspace["store"], "--streets-run", street, "--diameter-in", "8")
    page = client.post(
        "/plans/evaluate", json={"streets_run": street, "diameter_in": 8}, headers={"X-CSRF-Token": token}
    ).get_json()
    page.pop("map")
    assert page == cli
    assert cli["profile_overrides"] == ({"mandate.distance_ft": 200.0} if workspace["name"] == "wappinger-200" else {})


def test_the_plan_follows_the_digitised_direction(digitised):
    workspace = digitised
    street = sample_town(300)["streets"]["street_name"].iloc[3]
    args = ("plan", "--streets-run", street, "--diameter-in", "8")
    recorded = Runner().json(*args, "--data", workspace["store"])
    inferred = Runner().json(*args, "--data", workspace["raw"], "--profile", "fort-plain")
    assert recorded["downstream"]["path"] != inferred["downstream"]["path"]
