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
    assert doc["unfinished"] == [
        {"batch_id": b, "mandated_parcels": n, "notice_date": "2027-03-01", "deadline": "2027-05-30"}
    ]
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


# -- 5. a batch killed once written, found again days later ---------------------------------------------------------

LATER = "2027-03-01"  # 14 days after the suite's today (2027-02-15), the day the batch is dated


class _Killed(BaseException):
    """The process killed (kill -9) between its batch folder appearing and the register recording it issued."""


def _killed_once_written(store, out, monkeypatch) -> dict:
    """`notices issue --notice-date today --out OUT --new`, killed as soon as `OUT/B2027...` appears: its files all
    written and moved into place, the batch still prepared in the register. Returns the batch's register row."""
    import gisapp.notices

    def killed(*args, **kwargs):
        raise _Killed

    with monkeypatch.context() as patch:
        patch.setattr(Register, "finish_batch", killed)
        patch.setattr(gisapp.notices, "_abandon", lambda *args, **kwargs: None)  # a killed process cleans nothing
        with pytest.raises(_Killed):
            CliRunner().invoke(main, [str(a) for a in _issue(store, "today", out, "--new")], catch_exceptions=False)
    (batch,) = Register(store=store, create=False).batches()
    assert batch["status"] == "prepared" and (Path(out) / batch["batch_id"] / "manifest.json").is_file()
    return batch


def _dated_refusal(batch: dict) -> str:
    b = batch["batch_id"]
    days = (batch["deadline"] - batch["notice_date"]).days
    return (
        f"Batch {b} was left unfinished, and its letters are dated 2027-02-15 while today is {LATER}, so 14 of the "
        f"{days} days to its deadline {batch['deadline'].isoformat()} are gone, and it is not finished without your "
        f"word: cancel it and issue again dated today (`sewerplan notices resume {b} --cancel`, then `sewerplan "
        "notices issue --notice-date today`), or, if its letters were in fact mailed on 2027-02-15, finish it as "
        f"dated (`sewerplan notices resume {b} --as-dated`; the register's events record it)."
    )


def test_a_batch_killed_once_written_is_not_finished_days_later_as_dated(store, tmp_path, monkeypatch):
    """Killed as soon as its folder appeared, the batch was finished by the next `issue` two weeks later ("Finished
    batch ... left from an earlier run: 83 notice(s) issued"), and by `resume`, dated the day it was written: letters
    dated two weeks ago, 14 of the 90 days gone, what `issue` refuses for a past --notice-date. Both now refuse,
    saying so and the two ways on; the preview says the same; `resume --as-dated` finishes it, and the events say
    who did, when, and on what word."""
    out = tmp_path / "batches"
    batch = _killed_once_written(store, out, monkeypatch)
    b, register = batch["batch_id"], Register(store=store, create=False)
    monkeypatch.setenv("SEWERPLAN_TODAY", LATER)
    refused = invoke(*_issue(store, "today", out), ok=False)
    assert refused.exit_code == 2 and _dated_refusal(batch) in said(refused)
    assert "Finished batch" not in refused.output and len(register.batches()) == 1
    assert set(register.batch_notices(b)["status"]) == {"prepared"}
    refused = invoke("notices", "resume", b, "--store", store, ok=False)
    assert refused.exit_code == 2 and _dated_refusal(batch) in said(refused)
    previewed = said(invoke(*_preview(store, "today")))
    assert "finishes it when its folder holds every letter" not in previewed
    assert f"were prepared and never issued. Its letters are dated 2027-02-15 while today is {LATER}" in previewed
    assert f"`sewerplan notices resume {b} --as-dated`" in previewed
    assert register.batch(b)["status"] == "prepared"
    done = said(invoke("notices", "resume", b, "--as-dated", "--store", store))
    n = len(register.batch_notices(b))
    note = f"Issued on {LATER} as dated 2027-02-15, 14 days after that date, on the word of cli:"
    assert done.startswith(f"Batch {b}: {n} notice(s) issued as dated 2027-02-15") and note in done
    notices = register.batch_notices(b)
    assert set(notices["status"]) == {"open"} and set(notices["deadline"]) == {batch["deadline"]}
    assert register.batch(b)["note"].startswith(note)
    events = register.events_of(notices["notice_id"].iloc[0])
    assert [e["action"] for e in events][-2:] == ["issued", "issued as dated"]
    assert events[-1]["new_value"] == register.batch(b)["note"]


def test_a_batch_killed_once_written_is_cancelled_and_issued_again_dated_today(store, tmp_path, monkeypatch):
    """The other way on: cancelled, its parcels are noticed again by an issue dated today, with the full period."""
    out = tmp_path / "batches"
    batch = _killed_once_written(store, out, monkeypatch)
    monkeypatch.setenv("SEWERPLAN_TODAY", LATER)
    refused = invoke("notices", "resume", batch["batch_id"], "--as-dated", "--cancel", "--store", store, ok=False)
    assert refused.exit_code == 2 and "not both" in refused.output
    invoke("notices", "resume", batch["batch_id"], "--cancel", "--store", store)
    again = json.loads(invoke(*_issue(store, "today", out, "--json")).stdout)
    n = len(Register(store=store, create=False).batch_notices(batch["batch_id"]))
    assert (
        again["issued"] == n
        and again["deadline"] == (dt.date(2027, 3, 1) + (batch["deadline"] - batch["notice_date"])).isoformat()
    )


def test_a_batch_whose_files_were_not_all_written_is_never_finished_as_dated(store, tmp_path, monkeypatch):
    """No complete set of its letters can have been mailed from it: refused, nothing changed."""
    out = tmp_path / "batches"
    batch = _killed_once_written(store, out, monkeypatch)
    (out / batch["batch_id"] / "labels.pdf").unlink()
    monkeypatch.setenv("SEWERPLAN_TODAY", LATER)
    refused = said(invoke("notices", "resume", batch["batch_id"], "--as-dated", "--store", store, ok=False))
    assert f"Batch {batch['batch_id']} cannot be finished as dated: its files were not all written" in refused
    assert Register(store=store, create=False).batch(batch["batch_id"])["status"] == "prepared"


def test_changes_to_a_notice_of_an_interrupted_batch_name_the_batch_and_what_settles_it(store, tmp_path, monkeypatch):
    """After the kill, `mark` said "has no open notice" and sent the clerk to `record`, which said "its batch is being
    written" and sent them back to `mark`; `record-service` said "still being written" though the writer was dead;
    `list` showed the prepared notices and said nothing. Each now names the batch and how to settle it."""
    out = tmp_path / "batches"
    batch = _killed_once_written(store, out, monkeypatch)
    b, register = batch["batch_id"], Register(store=store, create=False)
    first = register.batch_notices(b).iloc[0]
    parcel, notice = first["parcel_id"], first["notice_id"]
    settles = (
        f"atch {b} was left unfinished by a process that stopped: `sewerplan notices resume {b}` finishes it when "
        "its folder holds every letter and cancels it, never mailed, otherwise, and `sewerplan notices resume "
        f"{b} --cancel` cancels it whatever its files hold"
    )
    marked = said(invoke("notices", "mark", parcel, "connected", "--store", store, ok=False))
    assert marked.startswith(f"Error: Parcel {parcel}'s notice {notice} is in batch {b}, which was never issued")
    assert settles in marked and "no open notice" not in marked
    assert marked.endswith(
        "once it is issued, mark the parcel again; once it is cancelled, record the connection as "
        "one made without a notice."
    )
    recorded = said(invoke("notices", "record", parcel, "connected", "--on", "today", "--store", store, ok=False))
    assert settles in recorded and "being written" not in recorded
    served = said(
        invoke("notices", "record-service", notice, "--on", "today", "--by", "J. Ruiz", "--store", store, ok=False)
    )
    assert settles in served and "being written" not in served
    listed = said(invoke("notices", "list", "--store", store, env={"COLUMNS": "200"}))
    n = len(register.batch_notices(b))
    assert listed.count(f"{n} notices listed as prepared belong to batch {b}") == 1 and settles in listed
    monkeypatch.setenv("SEWERPLAN_TODAY", LATER)  # days later, what settles it is the choice of the two ways
    marked = said(invoke("notices", "mark", parcel, "connected", "--store", store, ok=False))
    assert _dated_refusal(batch)[:-1] in marked
    assert set(register.batch_notices(b)["status"]) == {"prepared"}


@pytest.mark.parametrize("way", ["cancel", "as_dated"])
def test_the_notices_page_does_not_settle_a_batch_dated_before_today_without_the_clerk(
    client, app, store, tmp_path, monkeypatch, way
):
    """The page's "Settle interrupted batches" and its preview finished such a batch as the command did. They now
    refuse, naming the row's buttons, and the row offers "Cancel this batch" and "Issue it as dated"."""
    batch = _killed_once_written(store, tmp_path / "batches", monkeypatch)
    b, register = batch["batch_id"], Register(store=store, create=False)
    monkeypatch.setenv("SEWERPLAN_TODAY", LATER)
    token = csrf(client)
    page = client.get("/notices").get_data(as_text=True)
    assert 'id="settle"' not in page and 'value="as_dated"' in page and 'value="cancel"' in page
    refused = client.post("/notices/preview", data={"notice_date": LATER, "csrf_token": token})
    text = " ".join(refused.get_data(as_text=True).split()).replace("&#34;", '"')
    assert refused.status_code == 400 and "14 of the" in text
    assert '"Cancel this batch" on its row under Batches, then Preview and Confirm, dated today' in text
    assert '"Issue it as dated" on its row' in text and "--as-dated" not in text
    settled = client.post("/notices/settle", data={"csrf_token": token})
    text = " ".join(client.get(settled.headers["Location"]).get_data(as_text=True).split()).replace("&#34;", '"')
    assert f"Batch {b} was left unfinished, and its letters are dated" in text and "--cancel" not in text
    assert register.batch(b)["status"] == "prepared"
    done = client.post("/notices/settle", data={"csrf_token": token, "batch_id": b, "way": way})
    assert done.status_code == 302
    assert register.batch(b)["status"] == ("cancelled" if way == "cancel" else "issued")
    if way == "as_dated":
        assert register.batch(b)["note"].startswith(f"Issued on {LATER} as dated 2027-02-15")


# -- issue --new with every parcel held back creates no register -----------------------------------------------------


def test_issue_new_with_every_parcel_held_back_creates_no_register(tmp_path):
    """It created the town's register (and recorded it in the store) though nothing was issued, every mandated
    parcel held back for want of an owner's address; now nothing is made, and the command says so."""
    from layers.store import open_store

    path = tmp_path / "town.gpkg"
    town = sample_town(80)
    town["parcels"] = town["parcels"].assign(owner_name=None, mail_address=None)
    write_layers(str(path), town)
    (tmp_path / "town.toml").write_text(conftest.town_toml(), encoding="utf-8")
    invoke("analyze", "--profile", "fort-plain", "--data", path, "--out", path)
    result = invoke(*_issue(path, "2027-03-01", tmp_path / "out", "--new"))
    assert "0 notice(s) issued (0 already noticed); no files written; no register created" in said(result)
    assert re.search(r"Held back, [1-9]\d* parcel\(s\): no owner name or no mailing address", said(result))
    assert not (tmp_path / "town-register.sqlite").exists() and open_store(path).read_setting("register") is None
    assert not (tmp_path / "out").exists()
