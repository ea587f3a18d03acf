"""How each notice was served: the method its letter names, recorded with it (``served_by``), and the certified mail
article number the office records after mailing (``sewerplan notices record-mailing``); migration 0006 for the
notices written before. Tests marked by backend run on SQLite here and on PostgreSQL where
SEWERPLAN_TEST_POSTGRES_URL is set (skipped otherwise)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from pathlib import Path

import pandas as pd
import pytest

from analysis.errors import AnalysisError
from analysis.notices import (
    CERTIFIED_MAIL,
    SERVED_BY,
    Letter,
    article_number,
    mailing_record,
    mailing_words,
    service_words,
)
from gisapp import notices as service
from gisapp.notices import _letters_of
from layers.errors import LayerError
from layers.register import HEAD, MailingConflictError, Register, new_batch_id
from tests.conftest import receipt_number, register_at

REPO = Path(__file__).resolve().parents[1]
DAY = dt.date(2027, 3, 1)
# Certified mail article numbers as the receipts print them (20 and 22 digits), each with its check digit (the
# register refuses one whose check digit does not match).
N1 = "7019 0700 0000 1234 5670"
N2 = "7019 0700 0000 1234 5687"
N3 = "9589 0710 5270 0123 4567 81"


def _due(*parcels: str) -> pd.DataFrame:
    return pd.DataFrame(
        {"parcel_id": list(parcels), "issued_date": DAY.isoformat(), "section": "§ 144-4", "owner_name": "A. OWNER"}
    )


def _prepare(reg: Register, parcels: tuple[str, ...]) -> tuple[str, dict]:
    """A connection batch of ``parcels``' notices prepared (its letters not yet written): its ID, and what the
    register said."""
    batch_id = new_batch_id(DAY)
    return batch_id, reg.prepare_batch(
        _due(*parcels),
        batch_id=batch_id,
        kind="connection",
        notice_date=DAY,
        deadline=DAY + dt.timedelta(days=90),
        folder="/nowhere",
        actor="t",
        profile=("fort-plain", "v"),
    )


def _issue(reg: Register, parcels: tuple[str, ...], letters: dict[str, int], served=SERVED_BY) -> dict[str, str]:
    """A batch of notices, issued as a run writes it: ``letters`` gives each parcel its mailing-list row (two parcels
    of one owner share one). Returns each parcel's notice ID."""
    batch_id, done = _prepare(reg, parcels)
    ids = {n["parcel_id"]: n["notice_id"] for n in done["notices"]}
    sent = {ids[p]: (f"{batch_id}/letters/{letters[p]:04d}.pdf", letters[p], served) for p in parcels}
    reg.finish_batch(batch_id, letters=sent, actor="t")
    return ids


def _given_back(path: Path, rows: list[tuple[int, str, str]], *, occupant: int | None = None) -> Path:
    """The mailing list as the office gives it back: (mailing_no, notice_ids, certified_article_no) per row."""
    frame = pd.DataFrame(
        [
            {"mailing_no": str(no), "name_line_1": "Occupant" if no == occupant else "A. OWNER", "notice_ids": ids}
            | {"certified_article_no": number}
            for no, ids, number in rows
        ]
    )
    frame.to_csv(path, index=False, encoding="utf-8-sig")
    return path


def _state(reg: Register) -> tuple:
    listing = reg.listing()
    numbers = tuple(None if pd.isna(v) else v for v in listing["certified_article_no"])
    return numbers, reg.table_counts()["events"]


# -- the method: the letter's words, recorded with the notice -------------------------------------------------------


def test_the_letter_says_how_it_is_served_in_the_words_the_register_records():
    letter = Letter(1, "letters/0001.pdf", "connection", "T", ("N-1",), ("P1",), ("A",), DAY, ())
    assert letter.served_by == SERVED_BY == "certified mail"
    assert letter.mail_line == CERTIFIED_MAIL and letter.mail_line.startswith(SERVED_BY.upper() + " ")
    with pytest.raises(AnalysisError, match="served by certified mail"):
        _ = Letter(1, "f", "connection", "T", (), (), (), DAY, (), served_by="personal service").mail_line


def test_a_batch_records_how_its_manifest_says_each_letter_was_served(register):
    manifest = {
        "letters": {"N-A": [["letters/0001.pdf", 1, False, SERVED_BY]], "N-B": [["letters/0002.pdf", 2, False]]}
    }
    assert _letters_of("B1", manifest) == {
        "N-A": ("B1/letters/0001.pdf", 1, SERVED_BY),
        "N-B": ("B1/letters/0002.pdf", 2, SERVED_BY),  # a manifest from before: its letter printed CERTIFIED MAIL
    }
    ids = _issue(register, ("P1", "P2"), {"P1": 1, "P2": 2})
    listing = register.listing().set_index("notice_id")
    assert list(listing.loc[list(ids.values()), "served_by"]) == [SERVED_BY, SERVED_BY]
    assert listing["certified_article_no"].isna().all()


@pytest.fixture(scope="module")
def village():
    """The sample village analysed for Fort Plain, and its town settings."""
    from analysis.mandate import analyze_mandates
    from analysis.profiles import load_profile
    from layers.sample import sample_town

    town = sample_town(50)
    parcels = town["parcels"].assign(connected=town["parcels"]["connected"] == "Y")
    profile = load_profile("fort-plain")
    result = analyze_mandates(
        parcels, town["mains"], streets=town["streets"], buildings=town["buildings"], profile=profile
    )
    inputs = service.NoticeInputs(
        results=result.parcels,
        lines=result.measuring_lines,
        mains=town["mains"],
        streets=town["streets"],
        buildings=town["buildings"],
        summary=result.summary,
    )
    return profile, inputs


def test_the_letters_say_certified_mail_the_register_records_it_then_the_article_numbers(village, runner, tmp_path):
    """End to end as the clerk works: issue, mail, fill in the article numbers in the mailing list, give it back with
    the command; `notices list` then says how each owner was served and with which number."""
    from pypdf import PdfReader

    from layers.town import load_town_settings
    from tests.conftest import town_toml

    profile, inputs = village
    (tmp_path / "town.toml").write_text(town_toml(), encoding="utf-8")
    town = load_town_settings(tmp_path / "town.toml")
    reg = Register(str(tmp_path / "register.sqlite"), create=True)
    plan, _, _ = service.preview(reg, inputs, profile=profile, town=town, notice_date=DAY)
    plan = dataclasses.replace(plan, due=plan.due.head(3))  # three letters are enough, and quick
    doc = service.issue_batch(reg, plan, kind="connection", profile=profile, town=town, root=tmp_path, actor="t")
    for notice in doc["notices"]:
        words = " ".join(PdfReader(notice["letter"]).pages[0].extract_text().split())
        assert "CERTIFIED MAIL Article No." in words  # what the letter says ...
    assert set(reg.listing()["served_by"]) == {SERVED_BY}  # ... the register records
    reg.close()
    mailing = pd.read_csv(doc["mailing_list"], dtype=str, keep_default_na=False, encoding="utf-8-sig")
    mailing["certified_article_no"] = [receipt_number(i) for i in range(len(mailing))]
    mailing.loc[len(mailing) - 1, "certified_article_no"] = ""  # not mailed yet
    mailing.to_csv(tmp_path / "back.csv", index=False)
    where = ("--register", tmp_path / "register.sqlite")
    said = runner.invoke("notices", "record-mailing", "--from", tmp_path / "back.csv", *where, ok=True).stdout
    assert f"Recorded the article numbers of {len(mailing) - 1} letter(s)" in said
    assert "1 row(s) have no article number yet" in said
    listed = json.loads(runner.invoke("notices", "list", *where, "--json", ok=True).stdout)["notices"]
    numbers = {n["notice_id"]: n["certified_article_no"] for n in listed}
    for row in mailing.to_dict("records"):
        for notice_id in row["notice_ids"].split("; "):
            assert numbers[notice_id] == (row["certified_article_no"].replace(" ", "") or None)
    table = " ".join(runner.invoke("notices", "list", *where, ok=True).stdout.split())
    assert f"Served by certified mail: {len(listed)} notices, {len(mailing) - 1} with the article number" in table


def test_a_batch_issued_with_occupant_letters_keeps_both_numbers_end_to_end(village, runner, tmp_path):
    """`issue --occupant`, then the list given back with every envelope's number through the command: the occupants'
    copies' numbers reach the register beside the owners' (they were left out)."""
    from analysis.notices import occupant_letters
    from layers.town import load_town_settings
    from tests.conftest import town_toml

    profile, inputs = village
    (tmp_path / "town.toml").write_text(town_toml(), encoding="utf-8")
    town = load_town_settings(tmp_path / "town.toml")
    reg = Register(str(tmp_path / "register.sqlite"), create=True)
    plan, _, _ = service.preview(reg, inputs, profile=profile, town=town, notice_date=DAY)
    away = set(occupant_letters(plan.due)[0]["parcel_id"])  # owners who mail elsewhere
    plan = dataclasses.replace(plan, due=plan.due[plan.due["parcel_id"].isin(sorted(away)[:2])])
    assert len(plan.due) == 2
    doc = service.issue_batch(
        reg, plan, kind="connection", profile=profile, town=town, root=tmp_path, actor="t", occupant=True
    )
    reg.close()
    mailing = pd.read_csv(doc["mailing_list"], dtype=str, keep_default_na=False, encoding="utf-8-sig")
    assert (mailing["name_line_1"] == "Occupant").sum() == 2
    mailing["certified_article_no"] = [receipt_number(i) for i in range(len(mailing))]
    mailing.to_csv(tmp_path / "back.csv", index=False)
    where = ("--register", tmp_path / "register.sqlite")
    said = runner.invoke("notices", "record-mailing", "--from", tmp_path / "back.csv", *where, ok=True).stdout
    assert "And of 2 copy(ies) to the occupant at the site address: 2 notice(s) newly" in said
    listed = {
        n["notice_id"]: n for n in json.loads(runner.invoke("notices", "list", *where, "--json").stdout)["notices"]
    }
    for row in mailing.to_dict("records"):
        column = "occupant_article_no" if row["name_line_1"] == "Occupant" else "certified_article_no"
        assert listed[row["notice_ids"]][column] == row["certified_article_no"].replace(" ", "")


# -- recording the article numbers ----------------------------------------------------------------------------------


def test_record_mailing_records_each_envelopes_number_on_every_notice_it_served_with_events(register, tmp_path):
    ids = _issue(register, ("P1", "P2", "P3"), {"P1": 1, "P2": 1, "P3": 2})  # P1 and P2: one owner, one envelope
    back = _given_back(tmp_path / "back.csv", [(1, f"{ids['P1']}; {ids['P2']}", N1), (2, ids["P3"], "")])
    done = service.record_mailing(register, back, actor="clerk")
    assert (done["letters"], done["recorded"], done["empty"]) == (1, 2, 1)
    listing = register.listing().set_index("parcel_id")
    assert list(listing.loc[["P1", "P2"], "certified_article_no"]) == [N1.replace(" ", "")] * 2
    assert pd.isna(listing.loc["P3", "certified_article_no"])
    mailed = [e for e in register.events_of(ids["P1"]) if e["field"] == "certified_article_no"]
    assert [(e["actor"], e["action"], e["old_value"], e["new_value"]) for e in mailed] == [
        ("clerk", "mailed", None, N1.replace(" ", ""))
    ]
    # Given back again with the next receipt typed in: what was recorded stays, the new one is added.
    back = _given_back(tmp_path / "back.csv", [(1, f"{ids['P1']}; {ids['P2']}", N1), (2, ids["P3"], N3)])
    again = service.record_mailing(register, back, actor="clerk")
    assert (again["recorded"], again["unchanged"]) == (1, 2)
    assert register.listing().set_index("parcel_id").loc["P3", "certified_article_no"] == N3.replace(" ", "")


@pytest.mark.parametrize(
    ("rows", "says"),
    [
        ([(1, "N-NOT-THERE", N1)], r"row 2 of back.csv \(letter 0001\): the register holds no notice N-NOT-THERE"),
        (
            [(1, "{P1}", N1), (2, "{P2}", N1)],
            r"article number 7019 0700 0000 1234 5670 is given on rows 2 and 3 of back.csv",
        ),
        ([(2, "{P1}", N1)], r"notice N-\w+ went in letter 0001 of batch B\d{8}-\w{6}, not this row's"),
        (
            [(1, "{P1}", N1), (2, "{P2}", N2), (3, "{P3}", "9.58907E+21")],
            r"row 4 of back.csv: 9.58907E\+21 is a number a spreadsheet",
        ),
        ([(1, "{P1}", "7019 0700 0000 1234")], r"has 16 digit\(s\)"),
        (
            [(1, "{P1}", N1), (1, "{P1}", N2)],
            r"notice N-\w+ is listed on rows 2 and 3 of back.csv: it went in one letter",
        ),
    ],
)
def test_record_mailing_refuses_a_list_it_cannot_trust_by_name_and_writes_nothing(register, tmp_path, rows, says):
    ids = _issue(register, ("P1", "P2", "P3"), {"P1": 1, "P2": 2, "P3": 3})
    before = _state(register)
    back = _given_back(tmp_path / "back.csv", [(no, n.format(**ids), number) for no, n, number in rows])
    with pytest.raises((LayerError, AnalysisError), match=says) as refused:
        service.record_mailing(register, back, actor="clerk")
    assert "nothing was written" in str(refused.value)
    assert _state(register) == before


def test_every_problem_of_a_list_is_named_at_once_its_own_and_the_registers(register, tmp_path):
    """A clerk fixing a list wants the whole list of what is wrong: a number a spreadsheet rounded (found in the list
    itself) and a notice the register does not hold (found in the register) come back in one refusal."""
    ids = _issue(register, ("P1", "P2"), {"P1": 1, "P2": 2})
    back = _given_back(tmp_path / "back.csv", [(1, "N-TYPO", N1), (2, ids["P2"], "9.58907E+21")])
    with pytest.raises(LayerError, match=r"\(2 problem\(s\)\)") as refused:
        service.record_mailing(register, back, actor="clerk")
    assert "row 3 of back.csv: 9.58907E+21 is a number a spreadsheet rounded" in str(refused.value)
    assert "row 2 of back.csv (letter 0001): the register holds no notice N-TYPO" in str(refused.value)


def test_a_number_held_by_another_envelope_or_a_notice_holding_another_is_refused_by_name(register, tmp_path):
    ids = _issue(register, ("P1", "P2", "P3"), {"P1": 1, "P2": 2, "P3": 3})
    service.record_mailing(register, _given_back(tmp_path / "a.csv", [(1, ids["P1"], N1)]), actor="clerk")
    before = _state(register)
    # A later list (another batch's, or a slip of the pen) gives P1's number to P2's envelope, and P1 another one;
    # P3's good row is not written either: all or nothing.
    back = _given_back(tmp_path / "b.csv", [(2, ids["P2"], N1), (1, ids["P1"], N2), (3, ids["P3"], N3)])
    with pytest.raises(MailingConflictError) as refused:
        service.record_mailing(register, back, actor="clerk")
    said = str(refused.value)
    assert f"article number {N1} is already recorded for notice {ids['P1']} (letter 0001" in said
    assert f"notice {ids['P1']} already holds article number {N1}, not {N2}" in said
    assert "record the list again as a correction" in said and "--" not in said
    assert _state(register) == before
    # The clerk checks the receipts: the register's number for P1 was the wrong one. A correction keeps the old one
    # in the event.
    fixed = _given_back(tmp_path / "c.csv", [(1, ids["P1"], N2), (3, ids["P3"], N3)])
    done = service.record_mailing(register, fixed, actor="clerk", correct=True)
    assert (done["corrected"], done["recorded"]) == (1, 1)
    last = [e for e in register.events_of(ids["P1"]) if e["field"] == "certified_article_no"][-1]
    assert (last["action"], last["old_value"], last["new_value"]) == (
        "corrected",
        N1.replace(" ", ""),
        N2.replace(" ", ""),
    )


def test_a_cancelled_notice_and_a_record_take_no_article_number(register, tmp_path):
    batch_id, prepared = _prepare(register, ("P9",))
    register.cancel_batch(batch_id, actor="t", why="test")
    record = register.record("P8", "connected", on="2027-02-10", actor="clerk")["record_id"]
    cancelled = prepared["notices"][0]["notice_id"]
    back = _given_back(tmp_path / "back.csv", [(1, cancelled, N1), (2, record, N2)])
    with pytest.raises(LayerError) as refused:
        service.record_mailing(register, back, actor="clerk")
    assert f"row 2 of back.csv: batch {batch_id} was cancelled, never issued" in str(refused.value)
    assert f"{record} is a record, not a notice given by letter" in str(refused.value)
    assert register.listing()["served_by"].isna().all()  # never served: no method recorded either


def test_the_copy_to_the_occupant_keeps_its_own_number_beside_the_owners(register, tmp_path):
    """The occupant's copy is its own certified envelope: its number was left out ("the register records the owner's
    letter"), so the office could not prove the occupant was sent one. It is kept as ``occupant_article_no``."""
    ids = _issue(register, ("P1",), {"P1": 1})
    back = _given_back(tmp_path / "back.csv", [(1, ids["P1"], N1), (2, ids["P1"], N2)], occupant=2)
    done = service.record_mailing(register, back, actor="clerk")
    assert (done["letters"], done["recorded"], done["occupant_copies"], done["occupant_recorded"]) == (1, 1, 1, 1)
    row = register.listing().iloc[0]
    assert (row["certified_article_no"], row["occupant_article_no"]) == (N1.replace(" ", ""), N2.replace(" ", ""))
    assert [
        (e["action"], e["field"], e["new_value"]) for e in register.events_of(ids["P1"]) if e["action"] == "mailed"
    ] == [
        ("mailed", "certified_article_no", N1.replace(" ", "")),
        ("mailed", "occupant_article_no", N2.replace(" ", "")),
    ]
    assert mailing_words(done | {"empty": 0}).endswith(
        "And of 1 copy(ies) to the occupant at the site address: 1 notice(s) newly, 0 corrected, 0 already recorded."
    )
    assert service_words(
        row["served_by"], row["certified_article_no"], occupant_article_no=row["occupant_article_no"]
    ) == (f"certified mail, article no. {N1}; the occupant's copy, article no. {N2}")
    again = service.record_mailing(register, back, actor="clerk")  # the same list again changes nothing
    assert (again["unchanged"], again["occupant_unchanged"], again["recorded"], again["occupant_recorded"]) == (
        1,
        1,
        0,
        0,
    )


def test_an_occupants_copy_is_checked_as_an_owners_envelope_is(register, tmp_path):
    ids = _issue(register, ("P1", "P2"), {"P1": 1, "P2": 2})
    service.record_mailing(
        register, _given_back(tmp_path / "a.csv", [(1, ids["P1"], N1), (3, ids["P1"], N2)], occupant=3), actor="clerk"
    )
    before = _state(register)
    # the owner's number of P1 given again as P2's occupant copy: one envelope, one number
    with pytest.raises(LayerError, match=f"row 2 of b.csv \\(letter 0004\\): article number {N1} is already "
                       f"recorded for notice {ids['P1']} \\(letter 0001 of batch"):  # fmt: skip
        service.record_mailing(register, _given_back(tmp_path / "b.csv", [(4, ids["P2"], N1)], occupant=4), actor="c")
    # another number for P1's occupant copy: refused unless a correction, then kept in the events
    with pytest.raises(
        MailingConflictError, match=f"already holds article number {N2} for its copy to the occupant, not {N3}"
    ):
        service.record_mailing(register, _given_back(tmp_path / "c.csv", [(3, ids["P1"], N3)], occupant=3), actor="c")
    assert _state(register) == before
    done = service.record_mailing(
        register, _given_back(tmp_path / "c.csv", [(3, ids["P1"], N3)], occupant=3), actor="c", correct=True
    )
    assert done["occupant_corrected"] == 1
    assert [(e["field"], e["old_value"]) for e in register.events_of(ids["P1"]) if e["action"] == "corrected"] == [
        ("occupant_article_no", N2.replace(" ", ""))
    ]


def _before_batches(backend: str, tmp_path: Path) -> str:
    """A register holding a notice issued before batches (0002: no batch, no mailing number), migrated to HEAD."""
    columns = "notice_id, parcel_id, notice_type, issued_date, deadline, status, is_open, section, created_at"
    return register_at(
        backend,
        tmp_path,
        "0002",
        f"INSERT INTO notices ({columns}) VALUES ('N-OLD', 'P4', 'connection', '2026-03-01', '2026-05-30', 'open', 1, "
        "'§ 144-4', 'x'), ('N-OLD2', 'P5', 'connection', '2026-03-01', '2026-05-30', 'open', 1, '§ 144-4', 'x')",
    )


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_notice_issued_before_batches_is_refused_in_a_list_saying_how_and_recorded_by_its_id(tmp_path, backend):
    """Its letter had no mailing-list row: a list naming it was refused "went in no numbered letter of batch None",
    with no way to record it. The refusal says how, and the number is recorded by the notice's ID."""
    reg = Register(_before_batches(backend, tmp_path), create=False)
    ids = _issue(reg, ("P1",), {"P1": 1})
    with pytest.raises(LayerError) as refused:
        service.record_mailing(reg, _given_back(tmp_path / "a.csv", [(1, "N-OLD", N1)]), actor="clerk")
    assert (
        "row 2 of a.csv (letter 0001): notice N-OLD was issued before batches (before migration 0003): its letter had "
        "no mailing-list row, so no list can be matched to it; record its article number by the notice's ID, one "
        "notice at a time" in str(refused.value)
    )
    assert "batch None" not in str(refused.value)
    done = reg.record_article_number("N-OLD", N1, actor="clerk")
    assert (done["letters"], done["recorded"]) == (1, 1)
    assert reg.listing().set_index("notice_id").loc["N-OLD", "certified_article_no"] == N1.replace(" ", "")
    assert [(e["action"], e["field"]) for e in reg.events_of("N-OLD")][-1] == ("mailed", "certified_article_no")
    assert reg.record_article_number("N-OLD", N1, actor="clerk")["unchanged"] == 1  # again: nothing changes
    with pytest.raises(LayerError, match="is already recorded for notice N-OLD \\(its letter, issued before batches"):
        reg.record_article_number("N-OLD2", N1, actor="clerk")  # one envelope, one number
    with pytest.raises(MailingConflictError, match=f"notice N-OLD already holds article number {N1}, not {N2}"):
        reg.record_article_number("N-OLD", N2, actor="clerk")
    with pytest.raises(LayerError, match=f"notice {ids['P1']} went in letter 0001 of batch .*: record its number from"):
        reg.record_article_number(ids["P1"], N2, actor="clerk")  # a batch's notice: its list checks the letter
    with pytest.raises(LayerError, match="is not a certified mail article number"):
        reg.record_article_number("N-OLD2", "1234", actor="clerk")
    with pytest.raises(LayerError, match="the register holds no notice N-NOPE"):
        reg.record_article_number("N-NOPE", N3, actor="clerk")
    reg.close()


def test_the_cli_names_the_way_to_record_a_notice_issued_before_batches_and_takes_it(runner, tmp_path):
    path = _before_batches("sqlite", tmp_path)
    where = ("--register", path)
    refused = runner.invoke(
        "notices", "record-mailing", "--from", _given_back(tmp_path / "a.csv", [(1, "N-OLD", N1)]), *where
    )
    assert refused.exit_code == 2
    assert "(`sewerplan notices record-mailing --notice NOTICE --article-no NUMBER`)" in " ".join(
        refused.stderr.split()
    )
    done = runner.json("notices", "record-mailing", "--notice", "N-OLD", "--article-no", N1, *where)
    assert (done["recorded"], done["letters"]) == (1, 1)
    both = runner.invoke("notices", "record-mailing", "--notice", "N-OLD", *where)
    assert both.exit_code == 2 and "--notice and --article-no go together" in both.stderr


def test_the_notices_page_records_a_notice_issued_before_batches_by_its_id(client, app, tmp_path):
    import io
    import re

    from tests.conftest import csrf

    (tmp_path / "page").mkdir()
    app.config["REGISTER"] = _before_batches("sqlite", tmp_path / "page")
    token = csrf(client)

    def said(sent):
        page = client.get(sent.headers["Location"]).get_data(as_text=True)
        return " ".join(re.findall(r'id="(?:message|error)"[^>]*>([^<]*)<', page)).replace("&#34;", '"'), page

    data = _given_back(tmp_path / "mailing-list.csv", [(1, "N-OLD", N1)]).read_bytes()
    form = {"csrf_token": token, "mailing_list": (io.BytesIO(data), "mailing-list.csv")}
    error, page = said(client.post("/notices/mailing", data=form, content_type="multipart/form-data"))
    assert 'one notice at a time ("A notice issued before batches" below the list)' in error
    assert 'id="article-form"' in page
    # the one-notice form takes no list: its checkbox said "This list corrects ..." (a tester)
    one = re.search(r'<form[^>]*id="article-form".*?</form>', page, re.S).group(0)
    assert "This corrects a number recorded wrongly" in one and "This list" not in one
    message, page = said(
        client.post("/notices/mailing", data={"csrf_token": token, "notice_id": "N-OLD", "article_no": N1})
    )
    assert message.startswith("Recorded the article numbers of 1 letter(s): 1 notice(s) newly")
    assert f"article no. {N1}" in page


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        ("7019 0700 0000 1234 5670", "70190700000012345670"),
        ("9589-0710-5270-0123-4567-81", "9589071052700123456781"),
        ("'70190700000012345670", "70190700000012345670"),
    ],
)
def test_an_article_number_is_kept_as_its_digits(given, kept):
    assert article_number(given) == kept


@pytest.mark.parametrize("given", ["9.58907E+21", "7.019E+19", "7019 0700 0000 1234 567", "7019 O700 0000 1234 5678"])
def test_what_is_not_an_article_number_is_refused(given):
    with pytest.raises(AnalysisError, match="spreadsheet rounded|not a certified mail article number"):
        article_number(given)


def test_a_list_without_its_columns_is_refused_naming_them():
    with pytest.raises(AnalysisError, match="no mailing_no, certified_article_no column"):
        mailing_record(pd.DataFrame({"notice_ids": ["N-1"]}))


def test_the_cli_says_how_to_correct_a_number_with_its_flag(runner, tmp_path):
    reg = Register(str(tmp_path / "register.sqlite"), create=True)
    ids = _issue(reg, ("P1",), {"P1": 1})
    service.record_mailing(reg, _given_back(tmp_path / "a.csv", [(1, ids["P1"], N1)]), actor="clerk")
    reg.close()
    back = _given_back(tmp_path / "b.csv", [(1, ids["P1"], N2)])
    cmd = ("notices", "record-mailing", "--from", back, "--register", tmp_path / "register.sqlite")
    refused = runner.invoke(*cmd)
    assert refused.exit_code == 2 and "record the list again with --correct" in refused.stderr
    assert "now recorded" not in refused.stdout
    done = runner.invoke(*cmd, "--correct", "--json", ok=True)
    assert json.loads(done.stdout)["corrected"] == 1


# -- migration 0006 -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_migration_0006_says_how_old_notices_were_served_only_as_far_as_it_is_known(tmp_path, backend):
    columns = "notice_id, parcel_id, notice_type, issued_date, deadline, status, is_open, section, created_at, batch_id"
    rows = (
        "('N-BATCH', 'P1', 'connection', '2027-03-01', '2027-05-30', 'open', 1, '§ 144-4', 'x', 'B1')",
        "('N-GONE', 'P2', 'connection', '2027-03-01', '2027-05-30', 'connected', 0, '§ 144-4', 'x', 'B1')",
        "('N-VIOL', 'P3', 'violation', '2027-06-01', '2027-07-01', 'open', 1, '§ 144-40A', 'x', 'B2')",
        "('N-OLD', 'P4', 'connection', '2026-03-01', '2026-05-30', 'extended', 1, '§ 144-4', 'x', NULL)",
        "('N-CANC', 'P5', 'connection', '2027-03-01', NULL, 'cancelled', 0, '§ 144-4', 'x', 'B3')",
        "('N-PREP', 'P6', 'connection', '2027-03-01', NULL, 'prepared', 1, '§ 144-4', 'x', 'B4')",
        "('R-REC', 'P7', 'record', '2027-02-10', NULL, 'connected', 0, '', 'x', NULL)",
    )
    batches = ", ".join(
        f"('{b}', 'connection', '{s}', '2027-03-01', '2027-05-30', '/x', 'fort-plain', 'v', 't', 'x')"
        for b, s in (("B1", "issued"), ("B2", "issued"), ("B3", "cancelled"), ("B4", "prepared"))
    )
    url = register_at(
        backend,
        tmp_path,
        "0005",
        "INSERT INTO batches (batch_id, kind, status, notice_date, deadline, folder, profile, profile_version, actor, "
        f"created_at) VALUES {batches}",
        f"INSERT INTO notices ({columns}) VALUES {', '.join(rows)}",
    )
    reg = Register(url, create=False)
    assert reg._version() == HEAD  # 0006, then every revision after it
    listing = reg.listing().set_index("notice_id")
    said = "certified mail (as its letter said; entered by migration 0006)"
    assert {n: None if pd.isna(v) else v for n, v in listing["served_by"].items()} == {
        "N-BATCH": said,
        "N-GONE": said,  # connected since: it was served all the same
        "N-VIOL": said,
        "N-OLD": "not recorded (its letter, written before 0003, named no method of service)",
        "N-CANC": None,  # never mailed
        "N-PREP": None,  # issued later with its own letters' words
        "R-REC": None,  # no notice was given
    }
    assert listing["certified_article_no"].isna().all()  # none was recorded: none is made up
    assert [(e["actor"], e["field"], e["old_value"], e["new_value"]) for e in reg.events_of("N-BATCH")] == [
        ("migration 0006", "served_by", None, said)
    ]
    assert reg.events_of("N-CANC") == []
    assert [e["actor"] for e in reg.events_of("R-REC")] == ["migration 0008"]  # its day connected (0008), no service
    assert service_words(listing.loc["N-BATCH", "served_by"], None) == f"{said}; article no. not recorded"
    assert reg.integrity_ok()
    reg.close()


# -- the notices page -----------------------------------------------------------------------------------------------


def test_the_notices_page_shows_how_each_notice_was_served_and_its_number(app, client, tmp_path):
    reg = Register(app.config["REGISTER"], create=True)
    ids = _issue(reg, ("P1", "P2"), {"P1": 1, "P2": 2})
    back = _given_back(tmp_path / "a.csv", [(1, ids["P1"], N3), (3, ids["P1"], N1)], occupant=3)
    service.record_mailing(reg, back, actor="clerk")
    reg.close()
    page = client.get("/notices").get_data(as_text=True)
    assert "<th>served</th>" in page
    assert f"certified mail, article no. 9589 0710 5270 0123 4567 81; the occupant&#39;s copy, article no. {N1}" in page
    assert "certified mail; article no. not recorded" in page


def test_the_notices_page_records_a_mailing_list_given_back_all_or_nothing(app, client, tmp_path):
    import io
    import re

    from tests.conftest import csrf

    reg = Register(app.config["REGISTER"], create=True)
    ids = _issue(reg, ("P1", "P2"), {"P1": 1, "P2": 2})
    reg.close()
    token = csrf(client)

    def give(rows, **extra):
        data = _given_back(tmp_path / "mailing-list.csv", rows).read_bytes()
        form = {"csrf_token": token, "mailing_list": (io.BytesIO(data), "mailing-list.csv")} | extra
        sent = client.post("/notices/mailing", data=form, content_type="multipart/form-data")
        assert sent.status_code == 302
        page = client.get(sent.headers["Location"]).get_data(as_text=True)
        return " ".join(re.findall(r'id="(?:message|error)"[^>]*>([^<]*)<', page)).replace("&#34;", '"'), page

    said, page = give([(1, ids["P1"], N1), (2, ids["P2"], "")])
    assert said.startswith("Recorded the article numbers of 1 letter(s): 1 notice(s) newly")
    assert "certified mail, article no. 7019 0700 0000 1234 5670" in page and 'id="mailing-form"' in page
    said, page = give([(1, ids["P1"], N2), (2, ids["P2"], N3)])  # P1's number differs: nothing is written
    assert f"notice {ids['P1']} already holds article number {N1}, not {N2}" in said
    assert 'tick "This list corrects numbers recorded wrongly" and record the list again' in said
    assert "--correct" not in said and "9589 0710 5270 0123 4567 81" not in page
    said, page = give([(1, ids["P1"], N2), (2, ids["P2"], N3)], correct="1")
    assert "1 notice(s) newly, 1 corrected" in said and "article no. 9589 0710 5270 0123 4567 81" in page


def test_a_list_wrong_in_every_row_names_the_first_ten_and_counts_the_rest(register, tmp_path):
    """A batch's list typed again after it was recorded, every number different: the refusal named all 520 problems
    in one 70,000-character sentence, on the command line and the notices page. It names ten and counts the rest."""
    parcels = tuple(f"P{i}" for i in range(1, 13))
    ids = _issue(register, parcels, {p: i for i, p in enumerate(parcels, 1)})
    numbers = [receipt_number(i) for i in range(12)]
    service.record_mailing(
        register,
        _given_back(tmp_path / "a.csv", [(i, ids[p], numbers[i - 1]) for i, p in enumerate(parcels, 1)]),
        actor="clerk",
    )
    again = [(i, ids[p], receipt_number(i, "9589 0710 5270 0123 999")) for i, p in enumerate(parcels, 1)]
    with pytest.raises(MailingConflictError) as refused:
        service.record_mailing(register, _given_back(tmp_path / "b.csv", again), actor="clerk")
    said = str(refused.value)
    assert said.startswith(
        "The mailing list was not recorded (12 problem(s)); nothing was written: row 2 of b.csv (letter"
    )
    assert "row 11 of b.csv (letter 0010)" in said and "row 12 of b.csv (letter" not in said
    assert "; and 2 more problem(s)." in said


def test_an_empty_mailing_list_is_said_to_be_empty(register, tmp_path):
    """pandas' own words reached the clerk: "cannot be read: No columns to parse from file"."""
    empty = tmp_path / "mailing-list.csv"
    empty.write_text("\n \n", encoding="utf-8")
    with pytest.raises(LayerError, match=r"is empty: save it again from the spreadsheet, with its header row\.$"):
        service.record_mailing(register, empty, actor="clerk")
