"""A notice served otherwise than by mail: handed to the owner on a day, by someone (``Register.record_service``,
``sewerplan notices record-service``, the notices page's form), and what that does to its deadline under the law of
the notice's profile; migration 0007. Tests marked by backend run on SQLite here and on PostgreSQL where
SEWERPLAN_TEST_POSTGRES_URL is set (skipped otherwise)."""

from __future__ import annotations

import datetime as dt
import json
import re

import pandas as pd
import pytest
import sqlalchemy as sa

from analysis.notices import SERVED_BY, SERVED_IN_PERSON, service_words
from layers import register as register_module
from layers.errors import LayerError
from layers.register import HEAD, Register, ServiceRecordedError, new_batch_id
from tests.conftest import register_at

JUNE = dt.date(2027, 6, 1)  # a Wappinger violation notice's date: to be corrected by June 16 (10 days + 5 for mail)
LATER = dt.date(2027, 7, 1)  # today, in these tests
CLERK = "J. Ruiz, code enforcement officer"


def _issue(
    reg: Register, parcels: tuple[str, ...], *, profile="wappinger", kind="violation", day=JUNE, days=15
) -> dict[str, str]:
    """A batch of ``kind`` notices of ``parcels`` under ``profile``, dated ``day``, whose letters state ``day`` plus
    ``days`` as the deadline, issued as a run writes it (each its own letter, served by certified mail). Returns
    each parcel's notice ID."""
    batch_id = new_batch_id(day)
    due = pd.DataFrame({"parcel_id": list(parcels), "issued_date": day.isoformat(), "section": "§ 196-22A"})
    done = reg.prepare_batch(
        due,
        batch_id=batch_id,
        kind=kind,
        notice_date=day,
        deadline=day + dt.timedelta(days=days),
        folder="/nowhere",
        actor="t",
        profile=(profile, "v"),
    )
    ids = {n["parcel_id"]: n["notice_id"] for n in done["notices"]}
    letters = {ids[p]: (f"{batch_id}/letters/{i:04d}.pdf", i, SERVED_BY) for i, p in enumerate(parcels, 1)}
    reg.finish_batch(batch_id, letters=letters, actor="t")
    return ids


def _row(reg: Register, notice_id: str) -> dict:
    return reg.listing().set_index("notice_id").loc[notice_id].to_dict()


def _snapshot(reg: Register) -> tuple:
    """Every row of the register as it is, and how many rows each table holds (events too)."""
    listing = reg.listing()
    return listing.astype(object).where(listing.notna(), None).to_dict("records"), reg.table_counts()


def _serve(reg: Register, notice_id: str, on: dt.date, **extra) -> dict:
    return reg.record_service(notice_id, on=on, by=extra.pop("by", CLERK), actor="clerk", today=LATER, **extra)


# -- the deadline follows the law of the notice's profile ----------------------------------------------------------


def test_served_in_hand_after_the_mail_days_a_wappinger_violation_runs_10_days_from_that_day(register):
    """§ 196-22A: "shall be served by the Town with written notice ... and shall have 10 days". The certified letter
    came back unclaimed; the officer handed the notice over on June 9: due June 19, not the letter's June 16."""
    ids = _issue(register, ("P1",))
    done = _serve(register, ids["P1"], dt.date(2027, 6, 9))
    assert (done["deadline"], done["old_deadline"], done["deadline_moved"]) == ("2027-06-19", "2027-06-16", True)
    assert "§ 196-22A: 10 days from service on 2027-06-09, with no days for the mail" in done["why"]
    row = _row(register, ids["P1"])
    assert (row["served_by"], row["served_on"], row["served_by_name"]) == (SERVED_IN_PERSON, dt.date(2027, 6, 9), CLERK)
    assert row["deadline"] == dt.date(2027, 6, 19)
    events = {(e["action"], e["field"]): (e["old_value"], e["new_value"]) for e in register.events_of(ids["P1"])}
    assert events[("served", "served_by")] == (SERVED_BY, SERVED_IN_PERSON)  # the letter's method kept
    assert events[("served", "served_on")] == (None, "2027-06-09")
    assert events[("served", "deadline")] == ("2027-06-16", "2027-06-19")
    assert events[("served", "served_by_name")] == (None, CLERK)
    # overdue follows the register's deadline: not on June 18 (it was, under the letter's date); Saturday June 19
    # (Juneteenth too) runs to Monday June 21 (General Construction Law § 25-a), so overdue from June 22
    assert register.listing(overdue_on=dt.date(2027, 6, 21)).empty
    assert register.listing(overdue_on=dt.date(2027, 6, 22))["notice_id"].tolist() == [ids["P1"]]


def test_served_in_hand_before_the_mail_would_have_the_letters_date_stands(register):
    """Handed over on the notice's own day, 10 days from service end June 11; the letter in the owner's hand says
    June 16. The town does not fine before a date it gave in writing: the later end counts."""
    ids = _issue(register, ("P1",))
    done = _serve(register, ids["P1"], JUNE)
    assert (done["deadline"], done["deadline_moved"]) == ("2027-06-16", False)
    assert "end on 2027-06-11, before the date its letter states (2027-06-16" in done["why"]
    assert "so it stands" in done["why"]
    assert _row(register, ids["P1"])["served_on"] == JUNE
    assert not [e for e in register.events_of(ids["P1"]) if e["field"] == "deadline" and e["action"] == "served"]


def test_a_period_counted_from_the_notices_date_does_not_move_and_says_so(register):
    """Fort Plain § 144-4: "within 90 days after the date of official notice": service changes nothing."""
    ids = _issue(register, ("P1",), profile="fort-plain", kind="connection", day=dt.date(2027, 3, 1), days=90)
    done = _serve(register, ids["P1"], dt.date(2027, 3, 20))
    assert (done["deadline"], done["deadline_moved"], done["counted_from"]) == ("2027-05-30", False, "notice")
    assert done["why"] == (
        "§ 144-4 counts its days from the date of the notice, not from its service: the deadline stays 2027-05-30."
    )
    assert _row(register, ids["P1"])["served_by"] == SERVED_IN_PERSON


def test_an_extended_notice_keeps_the_towns_extension(register):
    # extended before `mark` refused to extend a notice the law gives no extension (a register of an older version)
    ids = _issue(register, ("P1",))
    with register.transaction() as con:
        con.execute(
            sa.text("UPDATE notices SET status = 'extended', deadline = :d WHERE notice_id = :n"),
            {"d": dt.date(2027, 7, 30), "n": ids["P1"]},
        )
    done = _serve(register, ids["P1"], dt.date(2027, 6, 9))
    assert done["deadline"] == "2027-07-30" and "the extension stands" in done["why"]


def test_a_notice_issued_before_batches_keeps_its_deadline_its_law_not_being_recorded(tmp_path):
    columns = "notice_id, parcel_id, notice_type, issued_date, deadline, status, is_open, section, created_at"
    url = register_at(
        "sqlite",
        tmp_path,
        "0002",
        f"INSERT INTO notices ({columns}) VALUES ('N-OLD', 'P4', 'connection', '2026-03-01', '2026-05-30', 'open', 1, "
        "'§ 144-4', 'x')",
    )
    reg = Register(url, create=False)
    done = _serve(reg, "N-OLD", dt.date(2026, 3, 5))
    assert done["deadline"] == "2026-05-30" and done["counted_from"] is None
    assert "Its law is not recorded" in done["why"] and "record an extension" in done["why"]
    reg.close()


# -- refused by name, nothing written ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("which", "on", "says"),
    [
        ("unknown", dt.date(2027, 6, 5), "The register holds no notice N-NOPE"),
        ("open", dt.date(2027, 5, 31), "is dated 2027-06-01: it cannot have been served on 2027-05-31"),
        ("open", dt.date(2027, 7, 2), "2027-07-02 is after today (2027-07-01)"),
        ("withdrawn", dt.date(2027, 6, 5), "was withdrawn: it is no longer in force"),
        ("connected", dt.date(2027, 6, 5), "is closed (marked connected)"),
        ("cancelled", dt.date(2027, 6, 5), "was cancelled with its batch"),
        ("prepared", dt.date(2027, 6, 5), "which was never issued, so it has no letter to serve yet"),
    ],
)
def test_a_service_that_cannot_be_is_refused_by_name_and_nothing_is_written(register, which, on, says):
    ids = _issue(register, ("P1", "P2"))
    target = {"unknown": "N-NOPE", "open": ids["P1"], "withdrawn": ids["P1"], "connected": ids["P2"]}.get(which)
    if which == "withdrawn":
        register.mark("P1", "withdrawn", actor="t")
    if which == "connected":
        register.mark("P2", "connected", actor="t")
    if which in ("cancelled", "prepared"):
        batch_id = new_batch_id(JUNE)
        due = pd.DataFrame({"parcel_id": ["P3"], "issued_date": JUNE.isoformat(), "section": "§ 196-22A"})
        done = register.prepare_batch(
            due,
            batch_id=batch_id,
            kind="violation",
            notice_date=JUNE,
            deadline=dt.date(2027, 6, 16),
            folder="/nowhere",
            actor="t",
            profile=("wappinger", "v"),
        )
        target = done["notices"][0]["notice_id"]
        if which == "cancelled":
            register.cancel_batch(batch_id, actor="t", why="test")
    before = _snapshot(register)
    with pytest.raises(LayerError, match=re.escape(says)):
        _serve(register, target, on)
    assert _snapshot(register) == before


def test_a_withdrawn_notice_names_the_one_in_force_in_its_place(register):
    old = _issue(register, ("P1",))["P1"]
    register.mark("P1", "withdrawn", actor="t")
    new = _issue(register, ("P1",), day=dt.date(2027, 6, 10))["P1"]
    with pytest.raises(LayerError, match=f"notice {new} is the one in force for parcel P1: record its service instead"):
        _serve(register, old, dt.date(2027, 6, 12))


def test_a_record_and_a_nameless_server_are_refused(register):
    register.record("P9", "connected", on="2027-02-10", actor="t")
    record_id = register.notices_of("P9")[0]["notice_id"]
    with pytest.raises(LayerError, match=f"{record_id} is a record of parcel P9, not a notice"):
        _serve(register, record_id, dt.date(2027, 6, 5))
    ids = _issue(register, ("P1",))
    with pytest.raises(LayerError, match="Say who served notice"):
        _serve(register, ids["P1"], dt.date(2027, 6, 5), by="   ")


def test_a_second_service_is_refused_unless_it_corrects_the_first_whose_values_stay_in_the_events(register):
    ids = _issue(register, ("P1",))
    _serve(register, ids["P1"], dt.date(2027, 6, 20))  # typed wrongly: it was the 10th
    with pytest.raises(ServiceRecordedError, match="already recorded served in person on 2027-06-20 by J. Ruiz"):
        _serve(register, ids["P1"], dt.date(2027, 6, 10), by="A. Chen")
    done = _serve(register, ids["P1"], dt.date(2027, 6, 10), by="A. Chen", correct=True)
    assert done["corrected"] and done["deadline"] == "2027-06-20"  # from the 10th, not from the 20th's June 30
    corrected = {(e["field"]): (e["old_value"], e["new_value"]) for e in register.events_of(ids["P1"])
                 if e["action"] == "corrected"}  # fmt: skip
    assert corrected == {
        "served_on": ("2027-06-20", "2027-06-10"),
        "served_by_name": (CLERK, "A. Chen"),
        "deadline": ("2027-06-30", "2027-06-20"),
    }
    back = _serve(register, ids["P1"], dt.date(2027, 6, 1), by="A. Chen", correct=True)  # in hand the first day
    assert back["deadline"] == "2027-06-16" and back["why"].endswith("so it stands (the deadline was 2027-06-20).")


def test_a_service_is_written_whole_or_not_at_all(register, monkeypatch):
    """One transaction: a failure after the first event is written (a crash, a full disk) leaves the notice, its
    deadline and its events as they were."""
    ids = _issue(register, ("P1",))
    before = _snapshot(register)
    real, calls = register_module._event, []

    def fail_on_second(*args):
        calls.append(args)
        if len(calls) == 2:
            raise OSError("disk full")
        real(*args)

    monkeypatch.setattr(register_module, "_event", fail_on_second)
    with pytest.raises(OSError):
        _serve(register, ids["P1"], dt.date(2027, 6, 9))
    assert _snapshot(register) == before


def test_the_register_says_how_it_was_served_and_by_whom_with_the_mailing_too():
    said = service_words(SERVED_IN_PERSON, "9589071052700123456781", dt.date(2027, 6, 9), CLERK)
    assert said == (f"in person on 2027-06-09 by {CLERK}; also certified mail, article no. 9589 0710 5270 0123 4567 81")


# -- the command line and the page ---------------------------------------------------------------------------------


def test_the_cli_records_a_service_in_person_and_says_what_became_of_the_deadline(runner, tmp_path, monkeypatch):
    monkeypatch.setenv("SEWERPLAN_TODAY", LATER.isoformat())
    path = tmp_path / "register.sqlite"
    reg = Register(str(path), create=True)
    ids = _issue(reg, ("P1",))
    reg.close()
    cmd = ("notices", "record-service", ids["P1"], "--on", "2027-06-09", "--by", CLERK, "--register", path)
    done = runner.invoke(*cmd, ok=True)
    assert done.stdout.strip() == (
        f"Notice {ids['P1']} (parcel P1): recorded served in person on 2027-06-09 by {CLERK}. § 196-22A: 10 days "
        "from service on 2027-06-09, with no days for the mail: the deadline is 2027-06-19 (was 2027-06-16)."
    )
    again = runner.invoke(*cmd[:4], "2027-06-10", *cmd[5:])
    assert again.exit_code == 2 and "record it again with --correct" in again.stderr
    fixed = runner.json(*cmd[:4], "2027-06-10", *cmd[5:], "--correct")
    assert (fixed["deadline"], fixed["corrected"]) == ("2027-06-20", True)
    future = runner.invoke(*cmd[:4], "2027-07-05", *cmd[5:], "--correct")
    assert future.exit_code == 2 and "2027-07-05 is after today (2027-07-01)" in future.stderr
    listed = runner.json("notices", "list", "--register", path)
    row = next(r for r in (listed["notices"] if isinstance(listed, dict) else listed) if r["notice_id"] == ids["P1"])
    assert row["served_by"] == SERVED_IN_PERSON and row["served_on"] == "2027-06-10"


def test_the_notices_page_records_a_service_in_person_through_the_same_function(app, client, monkeypatch):
    from tests.conftest import csrf

    monkeypatch.setenv("SEWERPLAN_TODAY", LATER.isoformat())
    reg = Register(app.config["REGISTER"], create=True)
    ids = _issue(reg, ("P1",))
    reg.close()
    token = csrf(client)

    def serve(**form):
        sent = client.post("/notices/service", data={"csrf_token": token} | form)
        page = sent.get_data(as_text=True)
        if sent.status_code == 302:
            page = client.get(sent.headers["Location"]).get_data(as_text=True)
        said = " ".join(re.findall(r'id="(?:message|error)"[^>]*>([^<]*)<', page))
        said = said.replace("&#39;", "'").replace("&#34;", '"')
        return sent.status_code, said, page

    status, said, page = serve(notice_id=ids["P1"], on="2027-05-20", by=CLERK)
    assert status == 400 and "cannot have been served on May 20, 2027" in said  # the town's date format
    assert f'value="{ids["P1"]}"' in page and 'value="2027-05-20"' in page  # the form kept as typed
    status, said, page = serve(notice_id=ids["P1"], on="2027-06-09", by=CLERK)
    assert status == 302 and "the deadline is June 19, 2027 (was June 16, 2027)" in said
    assert f"in person on June 9, 2027 by {CLERK}" in page
    status, said, _ = serve(notice_id=ids["P1"], on="2027-06-10", by=CLERK)
    assert status == 400 and 'tick "This corrects a service recorded wrongly"' in said and "--correct" not in said
    status, said, _ = serve(notice_id=ids["P1"], on="2027-06-10", by=CLERK, correct="1")
    assert status == 302 and "corrected: served in person on June 10, 2027" in said


# -- migration 0007 ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_migration_0007_gives_old_notices_no_invented_service(tmp_path, backend):
    columns = (
        "notice_id, parcel_id, notice_type, issued_date, deadline, status, is_open, section, created_at, batch_id, "
        "served_by"
    )
    url = register_at(
        backend,
        tmp_path,
        "0006",
        "INSERT INTO batches (batch_id, kind, status, notice_date, deadline, folder, profile, profile_version, actor, "
        "created_at) VALUES "
        "('B1', 'violation', 'issued', '2027-06-01', '2027-06-16', '/x', 'wappinger', 'v', 't', 'x')",
        f"INSERT INTO notices ({columns}) VALUES ('N-1', 'P1', 'violation', '2027-06-01', '2027-06-16', 'open', 1, "
        "'§ 196-22A', 'x', 'B1', 'certified mail')",
    )
    reg = Register(url, create=False)
    assert reg._version() == HEAD  # 0007, then every revision after it
    row = _row(reg, "N-1")
    assert row["served_by"] == SERVED_BY
    assert all(pd.isna(row[c]) for c in ("served_on", "served_by_name", "occupant_article_no"))
    assert reg.events_of("N-1") == []  # nothing written, nothing to say
    if backend == "sqlite":  # the day is a date, as every date of the register
        with pytest.raises(sa.exc.IntegrityError), reg.transaction() as con:
            con.execute(sa.text("UPDATE notices SET served_on = '2027-06-31' WHERE notice_id = 'N-1'"))
    assert _serve(reg, "N-1", dt.date(2027, 6, 9))["deadline"] == "2027-06-19"
    assert reg.integrity_ok()
    reg.close()


def test_notices_list_json_carries_the_service(register):
    ids = _issue(register, ("P1",))
    _serve(register, ids["P1"], dt.date(2027, 6, 9))
    row = json.loads(register.listing().to_json(orient="records", date_format="iso"))[0]
    assert row["served_by_name"] == CLERK


def test_a_wappinger_violation_notice_is_not_extended(register):
    """§ 196-22A sets the 10 days, and the violation letter says the law "provides for no extension"; `mark
    extended` moved the violation notice's deadline all the same, without a word (a tester). It is refused, saying
    what the town may do; a Fort Plain violation notice, whose days the town's resolution sets, is extended."""
    ids = _issue(register, ("P1",))
    with pytest.raises(LayerError, match="is a violation notice whose days § 196-22A sets itself"):
        register.mark("P1", "extended", actor="clerk", deadline="2027-07-31")
    assert _row(register, ids["P1"])["deadline"] == dt.date(2027, 6, 16)
    fp = _issue(register, ("P2",), profile="fort-plain", day=dt.date(2027, 6, 2), days=30)
    register.mark("P2", "extended", actor="clerk", deadline="2027-08-31")
    assert _row(register, fp["P2"])["deadline"] == dt.date(2027, 8, 31)
