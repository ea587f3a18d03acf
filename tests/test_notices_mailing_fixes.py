"""Recording the mailing of connection notices (`sewerplan notices record-mailing`, the notices page's mailing list
form): the rows named as the clerk's spreadsheet shows them, a list that is not this register's, letters mailed
before their date, a notice of a batch never issued, and the unfinished batches in `notices list --json`."""

from __future__ import annotations

import datetime as dt
import html
import io
import json
import re

import pytest

from gisapp import notices as service
from layers.errors import LayerError
from layers.register import Register
from tests.conftest import csrf, receipt_number
from tests.test_notices_service import N1, N2, N3, _given_back, _issue


def _page_words(client, sent) -> str:
    assert sent.status_code == 302
    page = client.get(sent.headers["Location"]).get_data(as_text=True)
    return html.unescape(" ".join(re.findall(r'id="(?:message|error)"[^>]*>([^<]*)<', page)))


# -- 1. rows as the spreadsheet numbers them --------------------------------------------------------------------------


def test_a_row_is_named_as_the_spreadsheet_shows_it_with_its_file(runner, tmp_path):
    """The third envelope's number is wrong: a spreadsheet shows it on line 4 (the header is line 1). It was called
    "row 3", which is the second envelope's line."""
    reg = Register(str(tmp_path / "register.sqlite"), create=True)
    ids = _issue(reg, ("P1", "P2", "P3"), {"P1": 1, "P2": 2, "P3": 3})
    reg.close()
    rows = [(1, ids["P1"], N1), (2, ids["P2"], N2), (3, ids["P3"], "12345"), (4, "N-NOT-THERE", N3)]
    back = _given_back(tmp_path / "mailing-list.csv", rows)
    said = runner.invoke("notices", "record-mailing", "--from", back, "--register", tmp_path / "register.sqlite")
    assert said.exit_code != 0
    words = " ".join(said.stderr.split())
    assert "row 4 of mailing-list.csv: '12345' is not a certified mail article number" in words
    assert "row 5 of mailing-list.csv (letter 0004): the register holds no notice N-NOT-THERE" in words
    assert "row 3:" not in words and "row 3 " not in words
    twice = _given_back(tmp_path / "mailing-list.csv", [(1, ids["P1"], N1), (2, ids["P2"], N1)])
    said = runner.invoke("notices", "record-mailing", "--from", twice, "--register", tmp_path / "register.sqlite")
    assert "is given on rows 2 and 3 of mailing-list.csv" in " ".join(said.stderr.split())


def test_the_notices_page_names_a_row_as_the_spreadsheet_shows_it_in_the_file_uploaded(app, client, tmp_path):
    reg = Register(app.config["REGISTER"], create=True)
    ids = _issue(reg, ("P1", "P2"), {"P1": 1, "P2": 2})
    reg.close()
    data = _given_back(tmp_path / "x.csv", [(1, ids["P1"], N1), (2, ids["P2"], "9.58907E+21")]).read_bytes()
    form = {"csrf_token": csrf(client), "mailing_list": (io.BytesIO(data), "Batch March (2).csv")}
    said = _page_words(client, client.post("/notices/mailing", data=form, content_type="multipart/form-data"))
    assert "row 3 of Batch March (2).csv: 9.58907E+21 is a number a spreadsheet rounded" in said


# -- 2. a list that is not this register's ---------------------------------------------------------------------------


def test_another_registers_list_is_said_once_naming_its_batch_and_nothing_is_recorded(runner, tmp_path):
    """Another store's batch list given to this register was refused with one "the register holds no notice" per
    row (90 of them in a real batch). It is said once, naming the batch its folder is called after."""
    ours = Register(str(tmp_path / "ours.sqlite"), create=True)
    _issue(ours, ("P1",), {"P1": 1})
    events = ours.table_counts()["events"]
    ours.close()
    theirs = Register(str(tmp_path / "theirs.sqlite"), create=True)
    parcels = tuple(f"Q{i}" for i in range(1, 13))
    ids = _issue(theirs, parcels, {p: i for i, p in enumerate(parcels, 1)})
    batch_id = theirs.batches()[0]["batch_id"]
    theirs.close()
    (tmp_path / batch_id).mkdir()
    rows = [(i, ids[p], receipt_number(i)) for i, p in enumerate(parcels, 1)]
    back = _given_back(tmp_path / batch_id / "mailing-list.csv", rows)
    said = runner.invoke("notices", "record-mailing", "--from", back, "--register", tmp_path / "ours.sqlite")
    assert said.exit_code != 0
    words = " ".join(said.stderr.split())
    assert "mailing-list.csv is not this register's mailing list: none of its 12 notices is in the register" in words
    assert f"it looks like batch {batch_id}'s list" in words and "(its --store or --register)" in words
    assert "holds no notice" not in words and "problem(s)" not in words
    ours = Register(str(tmp_path / "ours.sqlite"))
    assert ours.table_counts()["events"] == events and ours.listing()["certified_article_no"].isna().all()
    ours.close()


def test_a_list_with_one_notice_mistyped_is_still_checked_row_by_row(register, tmp_path):
    ids = _issue(register, ("P1", "P2"), {"P1": 1, "P2": 2})
    back = _given_back(tmp_path / "back.csv", [(1, ids["P1"], N1), (2, "N-TYPO", N2)])
    with pytest.raises(LayerError) as refused:
        service.record_mailing(register, back, actor="clerk")
    said = str(refused.value)
    assert "row 3 of back.csv (letter 0002): the register holds no notice N-TYPO" in said
    assert "not this register's" not in said


# -- 3. letters mailed before their date -----------------------------------------------------------------------------


def test_numbers_recorded_before_the_letters_date_are_warned_about_in_the_output_and_the_events(runner, tmp_path):
    """Letters dated 2027-03-01 (the tests' batches), numbers recorded on 2027-02-15: they were recorded with no
    word that the receipts would be postmarked two weeks before the date the letters state."""
    reg = Register(str(tmp_path / "register.sqlite"), create=True)
    ids = _issue(reg, ("P1", "P2"), {"P1": 1, "P2": 2})
    batch_id = reg.batches()[0]["batch_id"]
    reg.close()
    back = _given_back(tmp_path / "back.csv", [(1, ids["P1"], N1), (2, ids["P2"], "")])
    where = ("--register", tmp_path / "register.sqlite")
    said = runner.invoke("notices", "record-mailing", "--from", back, *where, ok=True).stdout
    assert said.startswith("Recorded the article numbers of 1 letter(s)")
    warning = " ".join(said.split("\n", 1)[1].split())
    assert warning.startswith(
        f"Warning: the letters of batch {batch_id} are dated 2027-03-01, 14 day(s) after today (2027-02-15), and the "
        "article numbers of 1 of its notices were recorded today."
    )
    assert "mail them on 2027-03-01 or later" in warning
    reg = Register(str(tmp_path / "register.sqlite"))
    early = [e for e in reg.events_of(ids["P1"]) if e["action"] == "mailed before its date"]
    assert [e["new_value"] for e in early] == [
        f"article number {N1} recorded on 2027-02-15, 14 day(s) before the date of its letter, 2027-03-01"
    ]
    assert not [e for e in reg.events_of(ids["P2"]) if e["action"] == "mailed before its date"]
    reg.close()
    # The same list again changes nothing, and warns of nothing new.
    again = runner.invoke("notices", "record-mailing", "--from", back, *where, "--json", ok=True).stdout
    assert '"before_date": []' in again


def test_numbers_recorded_on_the_letters_date_are_not_warned_about(runner, tmp_path, monkeypatch):
    monkeypatch.setenv("SEWERPLAN_TODAY", "2027-03-01")
    reg = Register(str(tmp_path / "register.sqlite"), create=True)
    ids = _issue(reg, ("P1",), {"P1": 1})
    reg.close()
    back = _given_back(tmp_path / "back.csv", [(1, ids["P1"], N1)])
    said = runner.invoke("notices", "record-mailing", "--from", back, "--register", tmp_path / "register.sqlite")
    assert said.exit_code == 0 and "Warning" not in said.stdout


def test_the_notices_page_warns_of_numbers_recorded_before_the_letters_date(app, client, tmp_path):
    reg = Register(app.config["REGISTER"], create=True)
    ids = _issue(reg, ("P1",), {"P1": 1})
    reg.close()
    data = _given_back(tmp_path / "x.csv", [(1, ids["P1"], N1)]).read_bytes()
    form = {"csrf_token": csrf(client), "mailing_list": (io.BytesIO(data), "mailing-list.csv")}
    said = _page_words(client, client.post("/notices/mailing", data=form, content_type="multipart/form-data"))
    assert "Recorded the article numbers of 1 letter(s)" in said
    assert "Warning: the letters of batch" in said and "14 day(s) after today" in said


def _dated_before_batches(tmp_path) -> str:
    """A register holding a notice issued before batches (0002: no batch, no mailing number) dated 2027-03-01, two
    weeks after the tests' today, migrated to HEAD."""
    from tests.conftest import register_at

    columns = "notice_id, parcel_id, notice_type, issued_date, deadline, status, is_open, section, created_at"
    path = register_at(
        "sqlite",
        tmp_path,
        "0002",
        f"INSERT INTO notices ({columns}) VALUES ('N-OLD', 'P4', 'connection', '2027-03-01', '2027-05-30', 'open', 1, "
        "'§ 144-4', 'x')",
    )
    Register(path, create=False).close()  # migrated to HEAD
    return path


def _early_events(path) -> list[str]:
    reg = Register(path, create=False)
    try:
        return [e["new_value"] for e in reg.events_of("N-OLD") if e["action"] == "mailed before its date"]
    finally:
        reg.close()


def test_a_number_recorded_by_the_notices_id_before_its_letters_date_is_warned_about_as_a_lists_is(runner, tmp_path):
    """`record-mailing --notice N --article-no NUMBER` recorded a number two weeks before the date its letter states
    with no word of it, where the list form warns and records a "mailed before its date" event: both go through the
    same service now, which compares the letter's date with today."""
    path = _dated_before_batches(tmp_path)
    args = ("notices", "record-mailing", "--notice", "N-OLD", "--article-no", N1, "--register", path)
    said = runner.invoke(*args, ok=True).stdout
    assert said.startswith("Recorded the article numbers of 1 letter(s): 1 notice(s) newly")
    warning = " ".join(said.split("\n", 1)[1].split())
    assert warning.startswith(
        "Warning: the letter of notice N-OLD (issued before batches) is dated 2027-03-01, 14 day(s) after today "
        "(2027-02-15), and its article number was recorded today."
    )
    assert "batch None" not in warning and "mail it on 2027-03-01 or later" in warning
    assert _early_events(path) == [
        f"article number {N1} recorded on 2027-02-15, 14 day(s) before the date of its letter, 2027-03-01"
    ]
    again = json.loads(runner.invoke(*args, "--json", ok=True).stdout)  # the same number again: nothing new
    assert (again["unchanged"], again["before_date"], again["today"]) == (1, [], "2027-02-15")
    assert len(_early_events(path)) == 1


def test_the_notices_page_warns_of_a_number_recorded_by_the_notices_id_before_its_letters_date(app, client, tmp_path):
    (tmp_path / "page").mkdir()
    app.config["REGISTER"] = path = _dated_before_batches(tmp_path / "page")
    form = {"csrf_token": csrf(client), "notice_id": "n-old ", "article_no": N1}
    said = _page_words(client, client.post("/notices/mailing", data=form))
    assert "Recorded the article numbers of 1 letter(s)" in said
    assert "Warning: the letter of notice N-OLD (issued before batches) is dated March 1, 2027" in said
    assert len(_early_events(path)) == 1


# -- 4. a notice of a batch never issued -----------------------------------------------------------------------------


def _prepared(reg: Register, parcels: tuple[str, ...], folder) -> tuple[str, list[str]]:
    """A batch left prepared by an `issue` that stopped: its folder is there, no process holds its lock."""
    from layers.register import new_batch_id
    from tests.test_notices_service import DAY, _due

    batch_id = new_batch_id(DAY)
    done = reg.prepare_batch(
        _due(*parcels),
        batch_id=batch_id,
        kind="connection",
        notice_date=DAY,
        deadline=DAY + dt.timedelta(days=90),
        folder=str(folder),
        actor="t",
        profile=("fort-plain", "v"),
    )
    return batch_id, [n["notice_id"] for n in done["notices"]]


def test_a_notice_of_an_unfinished_batch_is_said_to_be_unfinished_once_with_how_to_settle_it(runner, tmp_path):
    """The batch's writer stopped long ago; its rows were each called "still being written"."""
    reg = Register(str(tmp_path / "register.sqlite"), create=True)
    ids = _issue(reg, ("P1",), {"P1": 1})
    (tmp_path / "out").mkdir()
    batch_id, unfinished = _prepared(reg, ("P2", "P3"), tmp_path / "out")
    reg.close()
    rows = [(1, ids["P1"], N1), (1, unfinished[0], N2), (2, unfinished[1], N3)]
    back = _given_back(tmp_path / "mailing-list.csv", rows)
    said = runner.invoke("notices", "record-mailing", "--from", back, "--register", tmp_path / "register.sqlite")
    assert said.exit_code != 0
    words = " ".join(said.stderr.split())
    assert "being written" not in words
    assert "(1 problem(s))" in words
    assert f"rows 3 and 4 of mailing-list.csv: batch {batch_id} was never issued: it is unfinished" in words
    assert (
        f"To settle: batch {batch_id} was left unfinished by a process that stopped: `sewerplan notices resume "
        in words
    )


def test_a_notice_of_a_cancelled_batch_is_said_to_be_of_a_batch_never_issued(register, tmp_path):
    batch_id, notices = _prepared(register, ("P9",), tmp_path)
    register.cancel_batch(batch_id, actor="t", why="test")
    back = _given_back(tmp_path / "back.csv", [(1, notices[0], N1)])
    with pytest.raises(LayerError) as refused:
        service.record_mailing(register, back, actor="clerk")
    said = str(refused.value)
    assert f"row 2 of back.csv: batch {batch_id} was cancelled, never issued: its letters were not to be mailed" in said
    assert "To settle" not in said


def test_the_docs_quote_the_refusal_of_a_service_of_a_batch_never_issued_as_it_is_said(tmp_path):
    """docs/notices.md listed "a notice still being written (its batch not issued)" among the refusals of
    `record-service`, which says the batch was never issued, and what settles it, of a batch whose writer is dead
    as of one still being written: the page quotes what the command says."""
    from pathlib import Path

    from gisapp.notices import unfinished_batch
    from layers.register import UnfinishedBatchError

    reg = Register(str(tmp_path / "register.sqlite"), create=True)
    (tmp_path / "out").mkdir()
    batch_id, (notice_id,) = _prepared(reg, ("P2",), tmp_path / "out")
    with pytest.raises(UnfinishedBatchError) as refused:
        reg.record_service(notice_id, on="2027-02-15", by="J. Ruiz", actor="t", today=dt.date(2027, 2, 15))
    said = " ".join(str(unfinished_batch(reg, refused.value)).split())
    reg.close()
    docs = " ".join((Path(__file__).parents[1] / "docs" / "notices.md").read_text(encoding="utf-8").split())
    start = docs.index("Refused, by name, nothing written: a notice the register does not hold (copy its ID")
    refusals = docs[start : docs.index("On the notices page a refused service", start)]
    assert "being written (its batch not issued)" not in refusals
    quoted = re.findall(r'"([^"]+)"', refusals)
    assert quoted[0].replace("N-...", notice_id).replace("B...", batch_id) in said
    assert f"; {quoted[-1]}." in said and said.endswith("once it is issued, record the service.")
    assert "left unfinished by a process that stopped" in said and "left unfinished by a process that" in refusals


# -- 5. `notices list --json` names the unfinished batches as the text does ---------------------------------------


def test_notices_list_json_carries_the_unfinished_batch_and_what_settles_it(runner, tmp_path):
    reg = Register(str(tmp_path / "register.sqlite"), create=True)
    _issue(reg, ("P1",), {"P1": 1})
    (tmp_path / "out").mkdir()
    batch_id, _ = _prepared(reg, ("P2", "P3"), tmp_path / "out")
    reg.close()
    where = ("--register", tmp_path / "register.sqlite")
    text = " ".join(runner.invoke("notices", "list", *where, ok=True).stdout.split())
    doc = json.loads(runner.invoke("notices", "list", *where, "--json", ok=True).stdout)
    assert len(doc["notices"]) == 3
    [batch] = doc["unfinished"]
    assert (batch["batch_id"], batch["notices"], batch["notice_date"]) == (batch_id, 2, "2027-03-01")
    assert batch["settle"].startswith(f"Batch {batch_id} was left unfinished by a process that stopped: `sewerplan")
    assert f"`sewerplan notices resume {batch_id}`" in batch["settle"]
    assert batch["said"] in text
    issued = json.loads(runner.invoke("notices", "list", *where, "--status", "open", "--json", ok=True).stdout)
    assert issued["unfinished"] == []


def test_the_notices_page_says_a_list_is_another_registers_and_how_an_unfinished_batch_is_settled(
    app, client, tmp_path
):
    """The page's upload goes through the same function: once, in the page's words (its buttons, no commands)."""
    other = Register(str(tmp_path / "other.sqlite"), create=True)
    theirs = _issue(other, ("Q1", "Q2", "Q3"), {"Q1": 1, "Q2": 2, "Q3": 3})
    other.close()
    reg = Register(app.config["REGISTER"], create=True)
    ours = _issue(reg, ("P1",), {"P1": 1})
    (tmp_path / "out").mkdir()
    batch_id, unfinished = _prepared(reg, ("P2",), tmp_path / "out")
    reg.close()
    token = csrf(client)

    def give(rows, name="mailing-list.csv"):
        data = _given_back(tmp_path / "x.csv", rows).read_bytes()
        form = {"csrf_token": token, "mailing_list": (io.BytesIO(data), name)}
        return _page_words(client, client.post("/notices/mailing", data=form, content_type="multipart/form-data"))

    said = give([(i, theirs[p], "") for i, p in enumerate(("Q1", "Q2", "Q3"), 1)], "B20270301-ABC123 list.csv")
    assert "B20270301-ABC123 list.csv is not this register's mailing list: none of its 3 notices is" in said
    assert "it looks like batch B20270301-ABC123's list" in said and "--" not in said
    said = give([(1, ours["P1"], N1), (2, unfinished[0], N2)])
    assert f"row 3 of mailing-list.csv: batch {batch_id} was never issued: it is unfinished" in said
    assert '"Settle interrupted batches" under Batches' in said and "sewerplan" not in said
