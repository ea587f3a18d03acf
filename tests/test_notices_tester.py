"""What a tester found in the notices, each reproduced through the command line (click's runner) or the web app
(Flask's test client): a notice date centuries ahead, a preview after a killed issue, the list's parcel IDs cut at
80 columns, and the summary without the deadlines the register holds."""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
from pathlib import Path

import geopandas as gpd
import pytest
from click.testing import CliRunner

from analysis.notices import due_notices
from analysis.profiles import load_profile
from gisapp.cli import main
from layers.register import Register, new_batch_id
from layers.sample import sample_town
from layers.write import write_layers
from tests import conftest
from tests.conftest import csrf

FP = load_profile("fort-plain")


def invoke(*args, ok=True, env=None):
    result = CliRunner(env=env).invoke(main, [str(a) for a in args])
    if ok:
        assert result.exit_code == 0, result.output
    return result


def said(result) -> str:
    return " ".join(result.output.split())


@pytest.fixture(scope="module")
def analysed(tmp_path_factory):
    """The sample village (about 30 mandated parcels) analysed for Fort Plain into its store, with town settings."""
    folder = tmp_path_factory.mktemp("tester-store")
    path = folder / "town.gpkg"
    write_layers(str(path), sample_town(80))
    invoke("analyze", "--profile", "fort-plain", "--data", path, "--out", path)
    return path


@pytest.fixture
def store(analysed, tmp_path):
    """A copy of the analysed store of this test's own, with the example town settings beside it."""
    own = tmp_path / "store" / "town.gpkg"
    own.parent.mkdir()
    shutil.copy(analysed, own)
    (own.parent / "town.toml").write_text(conftest.town_toml(), encoding="utf-8")
    return own


@pytest.fixture
def app(store, tmp_path):
    return conftest.make_app(store, tmp_path, REGISTER=None)


def _preview(store, day, *extra):
    return ["notices", "preview", "--profile", "fort-plain", "--data", store, "--notice-date", day, *extra]


def _issue(store, day, out, *extra):
    args = ["notices", "issue", "--profile", "fort-plain", "--data", store, "--notice-date", day, "--out", out]
    return [*args, *extra]


# -- 1. a notice date centuries ahead -----------------------------------------------------------------------------


def test_a_notice_date_too_far_ahead_is_refused_for_preview_and_issue(store, tmp_path):
    """`issue --notice-date 2999-12-31` issued every notice with deadlines in the year 3000 (a past date was refused):
    a typo year went into the register and kept those parcels from being noticed again. The profile's
    notices.notice_date_max_days_ahead (90 days) refuses it, saying how to change it; the test suite's today is
    2027-02-15, so 2027-05-16 is the last day allowed."""
    refused = invoke(*_preview(store, "2999-12-31"), ok=False)
    assert refused.exit_code != 0
    text = said(refused)
    assert "The notice date 2999-12-31 is 355,335 days after today (2027-02-15)" in text
    assert "a notice may be dated at most 90 days ahead (notices.notice_date_max_days_ahead" in text
    assert "No setting allows a notice dated more than 3,650 days ahead." in text  # a typo: nothing to set
    typo = said(invoke(*_preview(store, "2027-05-17"), ok=False))  # 91 days: the town may date further ahead
    assert "set it to 91 days or more. Use --set notices.notice_date_max_days_ahead=91." in typo
    assert json.loads(invoke(*_preview(store, "2027-05-16", "--json")).stdout)["notices"]  # 90 days
    # issued: refused, and nothing made (no register, no folder)
    out = tmp_path / "letters2999"
    refused = invoke(*_issue(store, "2999-12-31", out, "--new"), ok=False)
    assert refused.exit_code != 0 and "at most 90 days ahead" in said(refused)
    assert not out.exists() and not list(store.parent.glob("*.sqlite"))
    # a town that prepares its letters further ahead sets it, as the refusal says
    later = _preview(store, "2027-08-01", "--json", "--set", "notices.notice_date_max_days_ahead=200")
    assert json.loads(invoke(*later).stdout)["notices"]


def test_the_notices_page_refuses_a_notice_date_too_far_ahead(client, app):
    """The page's Preview (and so its Confirm) goes through the same check, worded as the field to fill in."""
    token = csrf(client)
    client.post("/notices/register", data={"csrf_token": token})
    far = client.post("/notices/preview", data={"notice_date": "2027-06-01", "csrf_token": token})
    page = " ".join(far.get_data(as_text=True).split())
    assert far.status_code == 400 and 'name="confirm"' not in page
    assert "at most 90 days ahead" in page and "set it to 106 days or more." in page
    assert "Settings" in page and "notices.notice_date_max_days_ahead=106" in page and "--set" not in page
    refused = client.post("/notices/issue", data={"notice_date": "2999-12-31", "csrf_token": token, "confirm": "x"})
    assert refused.status_code == 400
    assert Register(store=app.config["STORE"], create=False).listing().empty


# -- 2. the preview after a killed issue ----------------------------------------------------------------------------


def _unfinished_batch(store, folder) -> dict:
    """Every mandated parcel's notice prepared and the batch never finished, as `notices issue` killed with SIGKILL
    while writing the letters leaves it (the register made and recorded in the store, as `issue --new` does)."""
    register = Register(store=store, create=True)
    results = gpd.read_file(store, layer="parcel_results")
    day = dt.date(2027, 3, 1)
    Path(folder).mkdir(parents=True, exist_ok=True)
    return register.prepare_batch(
        due_notices(results, profile=FP, notice_date=day),
        batch_id=new_batch_id(day),
        kind="connection",
        notice_date=day,
        deadline=day + dt.timedelta(days=90),
        folder=str(folder),
        actor="t",
        profile=("fort-plain", FP.version),
    )


def test_a_preview_after_a_killed_issue_says_the_batch_is_unfinished_not_noticed(store, tmp_path):
    """After `timeout -s KILL 14 sewerplan notices issue ... --new`, the preview said "0 notice(s) ... 520 mandated
    parcels are not noticed again: the register has an open notice for each" though all 520 were prepared, never
    mailed; only --json listed the unfinished batch. It now names the batch and how to finish or cancel it."""
    batch = _unfinished_batch(store, tmp_path / "letters")
    n = len(batch["notices"])
    text = said(invoke(*_preview(store, "2027-03-01")))
    assert "0 notice(s) to 0 mailing address(es)" in text
    assert "open notice" not in text
    b = batch["batch_id"]
    assert f"Batch {b} was left unfinished: its notices of {n} mandated parcels were prepared and never mailed." in text
    assert f"`sewerplan notices resume {b}` finishes it" in text
    assert f"`sewerplan notices resume {b} --cancel` cancels it" in text
    doc = json.loads(invoke(*_preview(store, "2027-03-01", "--json")).stdout)
    assert doc["unfinished_batches"] == [b] and doc["already_noticed"] == n and doc["already_prepared"] == n
    assert doc["unfinished"] == [{"batch_id": b, "mandated_parcels": n}]
    # resumed (cancelled: its letters were never written), the parcels are due again, and nothing more is said
    invoke("notices", "resume", b, "--store", store)
    text = said(invoke(*_preview(store, "2027-03-01")))
    assert f"{n} notice(s) to" in text and "unfinished" not in text and "not noticed again" not in text


def test_the_notices_page_preview_does_not_call_prepared_notices_open(client, app, tmp_path):
    """The page's preview settles an interrupted batch first; one whose process still holds its lock is left, and
    the preview said its parcels had an open notice each."""
    from gisapp.notices import batch_lock

    token = csrf(client)
    batch = _unfinished_batch(app.config["STORE"], app.config["NOTICES_FOLDER"])
    n = len(batch["notices"])
    with batch_lock(Path(app.config["NOTICES_FOLDER"]), batch["batch_id"]):
        page = client.post("/notices/preview", data={"notice_date": "2027-03-01", "csrf_token": token})
        (text,) = re.findall(r'<p id="already-noticed">([^<]*)</p>', " ".join(page.get_data(as_text=True).split()))
    assert page.status_code == 200 and "open notice" not in text
    assert f"Batch {batch['batch_id']} was left unfinished: its notices of {n} mandated parcels were prepared" in text
    assert "&#34;Settle interrupted batches&#34; finishes it" in text and "--cancel" not in text


# -- 3. `notices list` on an 80-column terminal ---------------------------------------------------------------------


def test_notices_list_never_cuts_the_notice_or_parcel_id_at_80_columns(store, tmp_path):
    """`notices list` cut the parcel ID at 80 columns ("1.1-1…"), so every parcel on a block looked the same (fine
    only with COLUMNS=200). The key columns are whole on every line; the owner is cut instead."""
    issued = json.loads(invoke(*_issue(store, "2027-03-01", tmp_path / "out", "--new", "--json")).stdout)
    long_id = max((n["parcel_id"] for n in issued["notices"]), key=len)
    listed = json.loads(invoke("notices", "list", "--store", store, "--json").stdout)["notices"]
    for columns in ("80", "60"):
        shown = invoke("notices", "list", "--store", store, env={"COLUMNS": columns}).output
        lines = shown.splitlines()
        for n in listed:
            (line,) = [x for x in lines if n["notice_id"] in x.split()]
            assert n["parcel_id"] in line.split(), (n["parcel_id"], line)
        assert any(long_id in x.split() for x in lines)
    # the owner is what gives way: cut with an ellipsis, one line per notice, in the 80 columns
    narrow = invoke("notices", "list", "--store", store, env={"COLUMNS": "80"}).output.splitlines()
    rows = [x for x in narrow if x.startswith("N-")]
    assert len(rows) == len(listed) and max(len(x) for x in narrow) <= 80
    assert any("\u2026" in x for x in rows)  # a long owner name, cut


# -- 4. the summary's deadlines after notices are issued -------------------------------------------------------------


def _issue_on_the_page(client) -> None:
    token = csrf(client)
    client.post("/notices/register", data={"csrf_token": token})
    form = {"notice_date": "2027-03-01", "csrf_token": token}
    preview = client.post("/notices/preview", data=form).get_data(as_text=True)
    confirm = re.search(r'name="confirm" value="([0-9a-f]+)"', preview).group(1)
    assert client.post("/notices/issue", data=form | {"confirm": confirm}).status_code == 302


def _deadline_cells(page: str) -> dict[str, str]:
    """The Summary's mandated table: each parcel's deadline cell, as text."""
    table = page.split('id="mandated"')[1].split("</table>")[0]
    cells = {}
    for row in re.findall(r"<tr>(.*?)</tr>", table, flags=re.S)[1:]:
        tds = re.findall(r"<td[^>]*>(.*?)</td>", row, flags=re.S)
        parcel = re.sub(r"<[^>]+>", "", tds[0]).strip()
        cells[parcel] = " ".join(re.sub(r"<[^>]+>", " ", tds[6]).split())
    return cells


def test_the_summary_gives_each_parcels_deadline_from_its_notice_in_the_register(client, app):
    """After a batch was issued the Summary's deadline column was empty for every row (the run had no notice date)
    and nothing mentioned the notices, while the popup said "Deadline May 30, 2027 (in the notice)". The Summary
    takes each parcel's notice from the register, as the popup does (``notices_of``), and labels it."""
    before = client.get("/summary").get_data(as_text=True)
    assert set(_deadline_cells(before).values()) == {""}  # the run set no notice date, and nothing is noticed yet
    assert 'id="deadlines-noticed"' not in before
    _issue_on_the_page(client)
    register = Register(store=app.config["STORE"], create=False)
    listing = register.listing()
    page = client.get("/summary").get_data(as_text=True)
    cells = _deadline_cells(page)
    assert cells and set(cells) <= set(listing["parcel_id"])
    for parcel, cell in cells.items():
        notice = listing[listing["parcel_id"] == parcel].iloc[0]
        assert cell == f"May 30, 2027 (in the notice) {notice['notice_id']}", (parcel, cell)
    said = " ".join(page.split())
    assert (
        f"{len(cells)} listed parcels have a notice in the town's register: the deadline shown is the notice's" in said
    )
    # the popup's source gives the same day, in the same words
    first = next(iter(cells))
    popup = client.get("/api/parcel", query_string={"id": first}).get_json()["notices"]
    assert popup[-1]["deadline_text"] == "May 30, 2027"
    # a notice marked connected keeps its deadline, with the day it connected beside it (the Summary gave the
    # deadline alone, and a board could not tell it was met); an extension gives the new day
    marked, extended, withdrawn = list(cells)[:3]
    register.mark(marked, "connected", actor="t", connected_on="2027-03-04", today=dt.date(2027, 3, 10))
    register.mark(extended, "extended", actor="t", deadline="2027-07-01")
    register.mark(withdrawn, "withdrawn", actor="t")
    cells = _deadline_cells(client.get("/summary").get_data(as_text=True))
    assert cells[marked].startswith("May 30, 2027 (in the notice); connected on March 4, 2027")
    assert cells[extended].startswith("July 1, 2027 (extended)")
    assert cells[withdrawn].startswith("May 30, 2027 (in the notice; it no longer runs)")


def test_the_spreadsheet_beside_the_summary_gives_each_notices_deadline_too(client, app):
    """The Summary said "May 30, 2027 (in the notice)" while "Download all ... as CSV" beside it gave the run's own
    deadline alone (a run dated March 7 beside letters saying May 30; a tester), with no notice column. The download
    carries the notice in force beside the run's deadline: notice_id, notice_status, notice_deadline."""
    import io

    import pandas as pd

    link = 'href="/api/results.csv?status=mandated&amp;workspace=town"'
    assert link in client.get("/summary").get_data(as_text=True)
    plain = pd.read_csv(io.BytesIO(client.get("/api/results.csv?status=mandated").data), dtype=str)
    assert "notice_id" not in plain.columns  # no register yet: the run's results as they are
    _issue_on_the_page(client)
    register = Register(store=app.config["STORE"], create=False)
    listing = register.listing().set_index("parcel_id")
    marked = listing.index[0]
    register.mark(marked, "extended", actor="t", deadline="2027-07-01")
    rows = pd.read_csv(io.BytesIO(client.get("/api/results.csv?status=mandated").data), dtype=str)
    columns = list(rows.columns)
    assert columns[columns.index("deadline") + 1 : columns.index("deadline") + 5] == [
        "notice_id",
        "notice_status",
        "notice_deadline",
        "connected_on",
    ]
    rows = rows.set_index("parcel_id")
    noticed = rows[rows["notice_id"].notna()]
    assert len(noticed) == len(listing) and set(noticed.index) == set(listing.index)
    assert (noticed["notice_id"] == listing.loc[noticed.index, "notice_id"]).all()
    assert noticed.loc[marked, ["notice_status", "notice_deadline"]].tolist() == ["extended", "2027-07-01"]
    other = noticed.index[noticed.index != marked][0]
    register.mark(other, "connected", actor="t", connected_on="2027-03-04", today=dt.date(2027, 3, 5))
    rows = pd.read_csv(io.BytesIO(client.get("/api/results.csv?status=mandated").data), dtype=str).set_index(
        "parcel_id"
    )
    noticed = rows[rows["notice_id"].notna()]
    assert noticed.loc[other, ["notice_status", "connected_on"]].tolist() == ["connected", "2027-03-04"]
    assert pd.isna(noticed.loc[marked, "connected_on"])
    others = noticed.drop(index=[marked, other])
    assert set(others["notice_status"]) == {"open"} and set(others["notice_deadline"]) == {"2027-05-30"}
    held = rows[rows["notice_id"].isna()]  # parcels the batch held back have no notice, and say none
    assert held["notice_status"].isna().all() and held["notice_deadline"].isna().all()
