"""Connection notices: who gets one, the mailing list, and a register that never counts a notice without its
paperwork, never duplicates one, and is never created by accident (SQLite and PostgreSQL)."""

from __future__ import annotations

import contextlib
import csv
import datetime as dt
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule
from pypdf import PdfReader
from sqlalchemy import create_engine, text
from sqlalchemy.exc import DBAPIError

from analysis.errors import AnalysisError
from analysis.mandate import analyze_mandates, check_notice
from analysis.notices import (
    deadline_flag,
    due_notices,
    mailing_list,
    neutralise,
    period,
    plan_notices,
    split_name,
    with_resolutions,
)
from analysis.profiles import load_profile
from gisapp.cli import main
from layers.errors import LayerError
from layers.letters import label_texts, verify_batch, write_mailing_list
from layers.register import HEAD, OpenNoticeError, Register, RegisterMissingError, new_batch_id
from layers.sample import sample_town
from layers.store import read_results, read_setting
from layers.town import TEMPLATE, load_town_settings
from layers.write import write_layers
from tests.conftest import fresh_postgres_register, postgres_url, register_at, register_url, town_toml

FP, PK, WP = load_profile("fort-plain"), load_profile("poughkeepsie"), load_profile("wappinger")
REPO = Path(__file__).resolve().parents[1]
EXAMPLE_TOWN = TEMPLATE  # what `sewerplan notices town-template` writes
DAY = dt.date(2027, 3, 1)


@pytest.fixture(scope="module")
def town():
    return sample_town(300)


@pytest.fixture(scope="module")
def results(town):
    parcels = town["parcels"].assign(connected=town["parcels"]["connected"] == "Y")
    return analyze_mandates(
        parcels, town["mains"], streets=town["streets"], buildings=town["buildings"], profile=FP
    ).parcels


def town_file(folder: Path, extra: str = "") -> Path:
    path = folder / "town.toml"
    path.write_text(town_toml() + extra, encoding="utf-8")
    return path


def wappinger_town(folder: Path):
    """Wappinger's town settings: the Town Board's resolution of the period to connect, which § 196-17E leaves to the
    town, and not the example's of a time to correct (§ 144-40A's; Wappinger's § 196-22A sets its own 10 days)."""
    text = town_toml("Town of Wappinger")
    path = folder / "town.toml"
    path.write_text(text + '"mandate.notice_period_days" = { days = 60, act = "Resolution 9 of 2027" }\n', "utf-8")
    return load_town_settings(path)


def _prepare(reg: Register, due: pd.DataFrame, *, kind="connection", day=DAY, deadline=None, actor="t") -> dict:
    batch_id = new_batch_id(day)
    return reg.prepare_batch(
        due,
        batch_id=batch_id,
        kind=kind,
        notice_date=day,
        deadline=deadline or day + dt.timedelta(days=90),
        folder="/nowhere",
        actor=actor,
        profile=("fort-plain", FP.version),
    )


def _issue(reg: Register, due: pd.DataFrame, **kw) -> dict:
    """Prepare and finish a batch with stand-in letter paths (the register's own bookkeeping, no files)."""
    batch = _prepare(reg, due, **kw)
    if batch["notices"]:
        letters = {
            n["notice_id"]: (f"{batch['batch_id']}/letters/{i:04d}.pdf", i) for i, n in enumerate(batch["notices"], 1)
        }
        reg.finish_batch(batch["batch_id"], letters=letters, actor="t")
    return batch


# -- who is due a notice ------------------------------------------------------------------------------------------


def test_the_register_search_finds_what_was_typed_and_only_that(register, results):
    """The notices page's "Parcel or owner" filter: "müller" found no MÜLLER in a SQLite register (its lower()
    folds only A to Z), and "_" or "%" were wildcards: "O_BRIEN" listed OXBRIEN too and "100%" every parcel
    holding 100."""
    due = plan_notices(results, profile=FP, notice_date=DAY).due.head(4).copy()
    due["parcel_id"] = ["100-1", "1001", "P_7", "PX7"]
    due["owner_name"] = ["MÜLLER ANNA", "O'BRIEN PAT", "OXBRIEN SAM", "ROE JO"]
    _issue(register, due)

    def found(query: str) -> list[str]:
        assert register.count(query=query) == len(listed := sorted(register.listing(query=query)["parcel_id"]))
        return listed

    assert found("müller") == found("Müller") == found("MÜLLER") == ["100-1"]
    assert found("P_7") == ["P_7"] and found("o'brien") == ["1001"]
    assert found("100%") == [] and found("%") == [] and found("1001") == ["1001"]


def test_due_notices_carry_real_dates_and_the_section(results):
    plan = plan_notices(results, profile=FP, notice_date=DAY)
    assert len(plan.due) == (results["status"] == "mandated").sum() > 0
    assert set(plan.due["deadline"]) == {dt.date(2027, 5, 30)} and set(plan.due["section"]) == {"§ 144-4"}
    assert plan.period.basis == "§ 144-4" and plan.period.ready_for_letters
    skipped = due_notices(results, profile=FP, notice_date=DAY, exclude={plan.due["parcel_id"][0]})
    assert len(skipped) == len(plan.due) - 1


def test_the_reason_error_names_no_command_line_flag():
    with pytest.raises(AnalysisError) as info:
        check_notice(PK, DAY, None)
    assert "--" not in str(info.value) and "public_health_hazard or highway_improvement" in str(info.value)


@pytest.mark.parametrize(
    ("day", "says"),
    [
        (dt.date(1, 1, 1), "The notice date 0001-01-01 lies before 1900: give the day"),
        (dt.date(1899, 12, 31), "lies before 1900"),
        (dt.date(3000, 1, 1), "lies after 2999"),
        (dt.date(1900, 1, 1), None),
        (dt.date(2999, 12, 31), None),
        (dt.date.today().replace(day=1) - dt.timedelta(days=365), None),  # last year's notices, reconstructed
    ],
)
def test_a_notice_date_is_refused_only_outside_1900_to_2999(day, says):
    """0001-01-01 was accepted (only years after 2999 were refused); a past date is legitimate, an absurd one not."""
    if says is None:
        check_notice(FP, day, None)
        return
    with pytest.raises(AnalysisError, match=says) as info:
        check_notice(FP, day, None)
    assert "--" not in str(info.value) and info.value.fix.setting == "notice_date"


def test_poughkeepsie_private_systems_are_noticed_only_for_a_named_hazard(results):
    """§ 168-22.3C: "Such notice shall be given only when it shall be necessary to eliminate a public health hazard"."""
    assert PK.notices.private_system_reasons.value == ["public_health_hazard"]
    assert PK.notices.private_system_assumed.value is True  # no private_system column: every such parcel has one
    mandated = int((results["status"] == "mandated").sum())
    highway = plan_notices(results, profile=PK, notice_date=DAY, notice_reason="highway_improvement")
    assert highway.due.empty and len(highway.held) == mandated  # every unconnected occupied parcel has a private system
    assert set(highway.held["why"].str[:12]) == {"§ 168-22.3C:"}
    with pytest.raises(AnalysisError, match="must say which hazard"):
        plan_notices(results, profile=PK, notice_date=DAY, notice_reason="public_health_hazard")
    hazard = plan_notices(
        results, profile=PK, notice_date=DAY, notice_reason="public_health_hazard", hazard="failing septic systems"
    )
    assert len(hazard.due) == mandated and set(hazard.due["hazard"]) == {"failing septic systems"}
    assert set(hazard.due["deadline"]) == {dt.date(2027, 3, 31)}
    # The data may say which parcels have no private system: only those may be noticed for a highway program.
    ids = list(results.loc[results["status"] == "mandated", "parcel_id"])
    marked = results.assign(private_system=results["parcel_id"].isin(ids[:3]).map({True: "Y", False: "N"}))
    partial = plan_notices(marked, profile=PK, notice_date=DAY, notice_reason="highway_improvement")
    assert set(partial.held["parcel_id"]) == set(ids[:3]) and len(partial.due) == mandated - 3
    # A hazard list names the parcels: only those are noticed, each with its own hazard.
    listed = plan_notices(
        results,
        profile=PK,
        notice_date=DAY,
        notice_reason="public_health_hazard",
        hazard={ids[0]: "sewage on the ground", "NOT-A-PARCEL": "x"},
    )
    assert list(listed.due["parcel_id"]) == [ids[0]] and listed.due["hazard"].iloc[0] == "sewage on the ground"
    assert list(listed.held["parcel_id"]) == ["NOT-A-PARCEL"]
    with pytest.raises(AnalysisError, match="only with a notice given to eliminate a public health hazard"):
        plan_notices(results, profile=FP, notice_date=DAY, hazard="anything")


def test_a_period_the_law_leaves_to_the_town_needs_the_towns_resolution(results, tmp_path):
    with pytest.raises(AnalysisError, match="sets no period"):
        plan_notices(results, profile=WP, notice_date=DAY)
    correction = period(FP, "notices.correction_period_days")
    assert correction.left_to_town and not correction.ready_for_letters and correction.days == 30
    village = load_town_settings(town_file(tmp_path))  # the example's resolution: § 144-40A's days to correct
    cited = period(FP, "notices.correction_period_days", village)
    assert cited.ready_for_letters and cited.basis == "Resolution 4 of 2027 of the Board of Trustees, under § 144-40A"
    (tmp_path / "wappinger").mkdir()
    town = wappinger_town(tmp_path / "wappinger")
    wappinger = plan_notices(results, profile=WP, notice_date=DAY, town=town)
    assert (
        wappinger.deadline == dt.date(2027, 4, 30)
        and wappinger.period.basis == "Resolution 9 of 2027; § 196-17E sets no period"
    )
    law = period(WP, "notices.correction_period_days", town)  # set by the law itself: the town cannot change it
    assert law.days == 10 and law.basis == "§ 196-22A"


@pytest.mark.parametrize(
    ("profile", "resolution", "said"),
    [
        (
            FP,
            '"mandate.notice_period_days" = { days = 60, act = "Resolution 9 of 2027" }\n',
            '"mandate.notice_period_days" (60 days, Resolution 9 of 2027) names a period the law sets: § 144-4 sets '
            "90 days, and a resolution of the town cannot change it here",
        ),
        (  # the example's resolution of § 144-40A's time limit, under Wappinger's § 196-22A, which sets 10 days
            WP,
            "",
            '"notices.correction_period_days" (30 days, Resolution 4 of 2027 of the Board of Trustees) names a period '
            "the law sets: § 196-22A sets 10 days",
        ),
    ],
)
def test_a_resolution_of_a_period_the_law_sets_is_refused_not_ignored(results, tmp_path, profile, resolution, said):
    """Fort Plain's town.toml with [resolutions] "mandate.notice_period_days" = { days = 60, ... } was read and
    ignored: the preview and the letters stated § 144-4's 90 days with no word of the 60 the file gave. The law sets
    that period; the file is refused, naming the section and its days, for the letters and the preview alike."""
    town = load_town_settings(town_file(tmp_path, resolution))
    for step in (
        lambda: plan_notices(results, profile=profile, notice_date=DAY, town=town),
        lambda: with_resolutions(profile, town),
        lambda: period(profile, "notices.correction_period_days", town),
    ):
        with pytest.raises(AnalysisError) as refused:
            step()
        assert said in str(refused.value) and "town.toml: [resolutions]" in str(refused.value)
        assert "Remove it from [resolutions]" in str(refused.value) and "--set" not in str(refused.value)
        assert refused.value.fix.target in str(refused.value)


def test_wappinger_notices_only_a_property_served_by_a_private_system(results, tmp_path):
    """§ 196-17E, the article's only duty to connect, binds "a property served by a private wastewater disposal
    system": a parcel the data says has none is held back, not sent a letter quoting a section that does not bind it.
    Fort Plain § 144-4 and Poughkeepsie § 168-22.2G bind every owner, so there nothing is held back for it."""
    assert WP.notices.private_system_only.value is True and WP.notices.private_system_only.section == "§ 196-17E"
    assert FP.notices.private_system_only.value is False and PK.notices.private_system_only.value is False
    town = wappinger_town(tmp_path)
    ids = list(results.loc[results["status"] == "mandated", "parcel_id"])
    marked = results.assign(private_system=results["parcel_id"].isin(ids[:3]).map({True: "N", False: "Y"}))
    wappinger = plan_notices(marked, profile=WP, notice_date=DAY, town=town)
    assert set(wappinger.held["parcel_id"]) == set(ids[:3]) and len(wappinger.due) == len(ids) - 3
    assert set(wappinger.held["why"].str[:10]) == {"§ 196-17E:"}
    assert all("served by a private wastewater disposal system" in why for why in wappinger.held["why"])
    fort_plain = plan_notices(marked, profile=FP, notice_date=DAY)
    assert fort_plain.held.empty and len(fort_plain.due) == len(ids)


@pytest.mark.parametrize(
    ("day", "flag"),
    [
        (dt.date(2027, 5, 30), "Sunday"),
        (dt.date(2027, 5, 31), "Memorial Day, a New York public holiday"),
        (dt.date(2027, 7, 5), "Independence Day (observed), a New York public holiday"),
        (dt.date(2027, 11, 2), "General Election Day, a New York public holiday"),
        (dt.date(2027, 2, 12), "Lincoln's Birthday, a New York public holiday"),
        (dt.date(2027, 6, 13), "Sunday and Flag Day, a New York public holiday"),
        (dt.date(2027, 12, 25), "Saturday and Christmas Day, a New York public holiday"),
        (dt.date(2027, 3, 31), None),
    ],
)
def test_deadline_flags_weekends_and_new_york_holidays(day, flag):
    assert deadline_flag(day) == flag


def test_the_town_settings_file_reports_every_problem_at_once(tmp_path):
    bad = tmp_path / "town.toml"
    bad.write_text(
        '[letterhead]\nname = 3\nmotto = "x"\n[officer]\ntitle = ["a"]\n[signature]\n'
        '[resolutions]\n"notices.correction_period_days" = { days = 0, act = "R 1" }\n'
        '"mandate.notice_period_days" = { days = 30 }\n',
        encoding="utf-8",
    )
    huge = tmp_path / "huge.toml"  # a slip of the keyboard overflowed the calendar when the deadline was computed
    huge.write_text(
        '[resolutions]\n"mandate.notice_period_days" = { days = 100000000, act = "R 9" }\n', encoding="utf-8"
    )
    with pytest.raises(
        LayerError, match=r"days must be a whole number of days from 1 to 3,650 \(ten years\), got 100000000"
    ):
        load_town_settings(huge)
    with pytest.raises(LayerError) as info:
        load_town_settings(bad)
    for part in (
        "name must be text",
        "unknown key 'motto'",
        "title must be text",
        "unknown table [signature]",
        "from 1 to 3,650 (ten years), got 0",
        "must be { days = N",
    ):
        assert part in str(info.value), part
    example = load_town_settings(EXAMPLE_TOWN)
    assert example.missing_for_letters() == [] and example.resolutions["notices.correction_period_days"].days == 30
    empty = tmp_path / "empty.toml"
    empty.write_text('[letterhead]\nname = "Village of X"\n', encoding="utf-8")
    assert load_town_settings(empty).missing_for_letters() == [
        "return_address.lines",
        "officer.name",
        "officer.title",
        "contact.phone or contact.email",
    ]


# -- the mailing list ---------------------------------------------------------------------------------------------


def test_one_envelope_per_owner_address_in_mailing_order():
    notices = pd.DataFrame(
        {
            "parcel_id": ["A", "B", "C", "D"],
            "notice_id": ["N-A", "N-B", "N-C", "N-D"],
            "owner_name": ["SMITH JOHN", "Smith, John", "SMITH JOHN", "JONES MARY"],
            "mail_address": ["12 Lake Rd.", "12  LAKE RD", "12 Lake Rd", "12 Lake Rd"],
            "mail_city": ["Albany", "ALBANY", "Albany", "Albany"],
            "mail_state": ["NY", "ny", "NY", "NY"],
            "mail_zip": ["12203-4411", "12203", "12204", "12203"],
            "site_address": ["1 Main St", "3 Main St", "5 Main St", "7 Main St"],
            "site_city": "Fort Plain",
            "site_state": "NY",
            "site_zip": "13339",
            "deadline": [dt.date(2027, 5, 30), dt.date(2027, 5, 1), dt.date(2027, 5, 30), dt.date(2027, 5, 30)],
            "section": "§ 144-4",
        }
    )
    rows = mailing_list(notices)
    # ZIP 12203 first (Jones, then Smith), then 12204; case, spacing, punctuation and ZIP+4 fold into one envelope.
    assert rows["parcel_ids"].tolist() == ["D", "A; B", "C"]
    assert rows["notice_ids"].tolist() == ["N-D", "N-A; N-B", "N-C"]
    assert rows["mailing_no"].tolist() == [1, 2, 3] and rows["letter_file"].tolist()[1] == "letters/0002.pdf"
    assert rows.loc[1, "deadline"] == dt.date(2027, 5, 1) and rows.loc[1, "notices"] == 2
    assert (rows["certified_article_no"] == "").all()
    assert len(mailing_list(notices, per_parcel=True)) == 4
    with_occupants = mailing_list(notices, occupant=True)
    assert (with_occupants["name_line_1"] == "Occupant").sum() == 4
    assert set(with_occupants.loc[with_occupants["name_line_1"] == "Occupant", "city"]) == {"Fort Plain"}


def test_long_owner_names_go_on_a_second_line(town):
    names = town["parcels"]["owner_name"]
    longest = names[names.str.len() == names.str.len().max()].iloc[0]
    trust = "THE ESTATE OF JOHN JACOB JINGLEHEIMER-SCHMIDT IRREVOCABLE TRUST"
    first, second = split_name(pd.Series([longest, trust, "X" * 40]))
    for whole, a, b in zip([longest, trust, "X" * 40], first, second, strict=True):
        assert len(a) <= 32 and whole.startswith(a) and whole.replace(" ", "") == (a + b).replace(" ", "")
    assert (first[1], second[1]) == ("THE ESTATE OF JOHN JACOB", "JINGLEHEIMER-SCHMIDT IRREVOCABLE TRUST")
    assert first[2] + second[2] == "X" * 40


@pytest.mark.parametrize(
    ("value", "safe"),
    [
        ('=HYPERLINK("http://x")', '\'=HYPERLINK("http://x")'),
        ("+1+1", "'+1+1"),
        ("-2", "'-2"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\tx", "'\tx"),
        ("\rx", "'\rx"),
        ("O'Brien", "O'Brien"),
        ("12 Main", "12 Main"),
    ],
)
def test_csv_injection_neutralised(tmp_path, value, safe):
    assert neutralise(pd.Series([value]))[0] == safe
    path = write_mailing_list(tmp_path / "m.csv", pd.DataFrame({"name_line_1": [value], "zip": ["01234"]}))
    with open(path, newline="", encoding="utf-8-sig") as f:
        header, row = list(csv.reader(f))
    assert dict(zip(header, row, strict=True)) == {"name_line_1": safe, "zip": "01234"}


def test_the_mailing_list_has_a_byte_order_mark_unless_asked_not_to(tmp_path):
    """A spreadsheet opens a UTF-8 CSV without the mark as its own code page: "Ñandú" would read "Ã‘andÃº"."""
    marked = write_mailing_list(tmp_path / "a.csv", pd.DataFrame({"name_line_1": ["Ñandú"]}))
    plain = write_mailing_list(tmp_path / "b.csv", pd.DataFrame({"name_line_1": ["Ñandú"]}), bom=False)
    assert Path(marked).read_bytes().startswith(b"\xef\xbb\xbf")
    assert not Path(plain).read_bytes().startswith(b"\xef\xbb\xbf")


# -- the register: prepared, issued, cancelled --------------------------------------------------------------------


def test_prepared_notices_have_no_deadline_and_never_reach_violations(register, results):
    due = due_notices(results, profile=FP, notice_date=DAY)
    batch = _prepare(register, due)
    listing = register.listing()
    assert set(listing["status"]) == {"prepared"} and listing["deadline"].isna().all()
    assert register.listing(overdue_on=dt.date(2030, 1, 1)).empty  # never overdue, never a violation
    assert register.excluded_parcels() == set(due["parcel_id"])  # but never noticed twice meanwhile
    assert _prepare(register, due)["notices"] == []  # a second run prepares nothing for the same parcels
    with pytest.raises(LayerError, match="have no letter"):
        register.finish_batch(batch["batch_id"], letters={}, actor="t")
    assert set(register.listing()["status"]) == {"prepared"}  # refused whole: nothing half issued
    register.cancel_batch(batch["batch_id"], actor="t", why="files never written")
    assert set(register.listing()["status"]) == {"cancelled"} and register.excluded_parcels() == set()
    again = _issue(register, due)
    issued = register.listing(status="open")
    assert len(issued) == len(due) and set(issued["deadline"]) == {dt.date(2027, 5, 30)}
    assert set(issued["batch_id"]) == {again["batch_id"]} and issued["letter_file"].notna().all()
    # Due Sunday 2027-05-30, with Memorial Day on the Monday: met on Tuesday 1 June (§ 25-a), overdue from 2 June.
    assert len(register.listing(overdue_on=dt.date(2027, 6, 2))) == len(due)
    assert register.listing(overdue_on=dt.date(2027, 6, 1)).empty
    assert len(register.listing(deadline_before=dt.date(2027, 5, 31))) == len(due)  # the deadline as written
    assert register.listing(overdue_on=dt.date(2027, 5, 30)).empty  # due on the day itself is not yet overdue
    assert [b["status"] for b in register.batches()] == ["issued", "cancelled"]


def test_issuing_twice_never_duplicates_and_connected_parcels_stay_closed(register, results):
    due = due_notices(results, profile=FP, notice_date=DAY, exclude=register.excluded_parcels())
    first = _issue(register, due)
    assert len(first["notices"]) == len(due) > 0 and first["already"] == 0
    again = _prepare(register, due)  # double click, or a re-run
    assert again["notices"] == [] and again["already"] == len(due) and register.batch(again["batch_id"]) is None
    parcels = [n["parcel_id"] for n in first["notices"]]
    register.mark(parcels[0], "connected", actor="clerk", note="inspected 2027-04-02")
    rerun = due_notices(results, profile=FP, notice_date=dt.date(2027, 6, 1), exclude=register.excluded_parcels())
    assert parcels[0] not in set(rerun["parcel_id"])  # never re-noticed
    register.mark(parcels[1], "withdrawn", actor="clerk")
    rerun = due_notices(results, profile=FP, notice_date=dt.date(2027, 6, 1), exclude=register.excluded_parcels())
    assert set(rerun["parcel_id"]) == {parcels[1]}  # a withdrawn notice may be given again
    history = register.events_of(first["notices"][0]["notice_id"])
    assert [(e["action"], e["field"], e["new_value"]) for e in history] == [
        ("prepared", "status", "prepared"),
        ("issued", "status", "open"),
        ("marked", "status", "connected"),
        ("marked", "note", "inspected 2027-04-02"),
    ]


@pytest.mark.parametrize(
    ("status", "until", "message"),
    [
        ("extended", None, "needs the new deadline"),
        ("connected", "2027-08-01", "only with an extension"),
        ("extended", "next tuesday", "is not a date"),
        ("extended", "2027-02-30", "does not exist: February 2027 has 28 days"),
        ("extended", "1999-01-01", "moves the deadline later"),
        ("extended", "2027-05-30", "moves the deadline later"),
        # a mistyped year: 3,651 days after the deadline of 2027-05-30 (3500-01-01 was recorded, a tester)
        ("extended", "3500-01-01", r"more than any period a profile may set \(3,650 days\): check the year"),
        ("extended", "2037-05-28", r"3,651 days later, more than any period"),
    ],
)
def test_marking_refuses_deadlines_that_are_not_a_later_date(register, results, status, until, message):
    due = due_notices(results, profile=FP, notice_date=DAY).head(2)
    _issue(register, due)
    parcel = due["parcel_id"].iloc[0]
    with pytest.raises(LayerError, match=message):
        register.mark(parcel, status, actor="clerk", deadline=until)
    listing = register.listing().set_index("parcel_id")
    assert listing.loc[parcel, "status"] == "open" and listing.loc[parcel, "deadline"] == dt.date(2027, 5, 30)
    register.mark(parcel, "extended", actor="clerk", deadline="2027-08-01")
    assert register.listing().set_index("parcel_id").loc[parcel, "deadline"] == dt.date(2027, 8, 1)
    assert parcel not in set(register.listing(overdue_on=dt.date(2027, 7, 1))["parcel_id"])


def test_the_database_refuses_non_dates_and_a_second_open_notice(register, results):
    due = due_notices(results, profile=FP, notice_date=DAY).head(1)
    _issue(register, due)
    from sqlalchemy.exc import IntegrityError

    from layers.register import _notice_values, notices

    with pytest.raises(IntegrityError), register.transaction() as con:
        con.execute(notices.insert().values(**_notice_values(due.iloc[0].to_dict(), None, None, "connection")))
    for bad in ("2027-02-30", "next tue"):
        with pytest.raises(DBAPIError), register.transaction() as con:
            con.execute(text("UPDATE notices SET deadline = :d"), {"d": bad})
    assert register.listing()["deadline"].tolist() == [dt.date(2027, 5, 30)]


# -- the register: migration, discovery, backup --------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_migration_keeps_old_notices_and_empties_deadlines_that_are_not_dates(tmp_path, backend):
    url = register_at(  # a register as the previous version wrote it
        backend,
        tmp_path,
        "0002",
        "INSERT INTO notices (notice_id, parcel_id, notice_type, issued_date, deadline, status, is_open, "
        "section, created_at) VALUES ('N-OLD1', 'P1', 'connection', '2027-03-01', '2027-02-30', 'extended', "
        "1, '§ 144-4', 'x'), ('N-OLD2', 'P2', 'connection', '2027-03-01', '2027-05-30', 'open', 1, "
        "'§ 144-4', 'x')",
    )
    reg = Register(url, create=False)
    listing = reg.listing().set_index("notice_id")
    assert listing.loc["N-OLD2", "deadline"] == dt.date(2027, 5, 30) and listing.loc["N-OLD2", "status"] == "open"
    assert listing.loc["N-OLD1", "deadline"] is None and "2027-02-30" in listing.loc["N-OLD1", "note"]
    assert [(e["actor"], e["field"], e["old_value"]) for e in reg.events_of("N-OLD1")] == [
        ("migration 0003", "deadline", "2027-02-30"),
        ("migration 0006", "served_by", None),  # issued before batches: how it was served is not known, and says so
    ]
    assert list(reg.listing(overdue_on=dt.date(2027, 6, 2))["notice_id"]) == ["N-OLD2"]
    assert reg.integrity_ok()
    reg.close()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_migration_keeps_old_runs_with_their_settings_unknown(tmp_path, backend):
    """0004 records what a batch's run set on its profile and its distance; a run recorded before keeps NULL (not
    known), never {} (which would say it set nothing)."""
    url = register_at(  # a register as 0003 wrote it, with one batch's run
        backend,
        tmp_path,
        "0003",
        "INSERT INTO analysis_runs (run_at, profile, profile_version, fingerprints, counts) "
        "VALUES ('2027-03-01T10:00:00Z', 'fort-plain', 'v', '{}', '{}')",
    )
    reg = Register(url, create=False)
    old = reg.run(1)
    assert (old["profile"], old["settings"], old["distance_ft"], old["analysed_at"]) == ("fort-plain", None, None, None)
    summary = {"profile": "fort-plain", "profile_version": "v", "distance_ft": 250.0, "run_at": "2027-03-02 09:00:00"}
    with reg.transaction() as con:
        new = reg.record_run(con, summary | {"workspace": {"settings": {"mandate.distance_ft": "250"}}}, {})
    assert {k: reg.run(new)[k] for k in ("settings", "distance_ft", "analysed_at")} == {
        "settings": {"mandate.distance_ft": "250"},
        "distance_ft": 250.0,
        "analysed_at": "2027-03-02 09:00:00",
    }
    reg.close()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_migration_0005_sets_apart_second_records_of_a_parcel_and_deletes_none(tmp_path, backend):
    """Before 0005 two clerks recording one parcel at the same moment on PostgreSQL both wrote a record; 0005's
    unique index could not be built over them and the upgrade failed, leaving the register unusable. Each parcel's
    first record (the earliest written) stays its record; the later ones are kept as type duplicate, with a note
    naming the record kept and events saying what changed, so a board asking about either finds both."""
    columns = "notice_id, parcel_id, notice_type, issued_date, status, is_open, section, note, created_at"
    rows = (  # R-B written first, R-A a moment later, R-C later still (with an earlier day): P-1 recorded three times
        "('R-A', 'P-1', 'record', '2027-02-10', 'connected', 0, '', 'permit 14', '2027-02-12T09:00:00.000002Z')",
        "('R-B', 'P-1', 'record', '2027-02-11', 'connected', 0, '', NULL, '2027-02-12T09:00:00.000001Z')",
        "('R-C', 'P-1', 'record', '2027-02-09', 'connected', 0, '', 'seen', '2027-02-13T10:00:00.000000Z')",
        "('R-D', 'P-2', 'record', '2027-02-10', 'connected', 0, '', NULL, '2027-02-12T09:00:00.000000Z')",
        "('N-1', 'P-1', 'connection', '2027-01-04', 'withdrawn', 0, '§ 144-4', NULL, '2027-01-04T09:00:00.000000Z')",
    )
    url = register_at(backend, tmp_path, "0004", f"INSERT INTO notices ({columns}) VALUES {', '.join(rows)}")
    reg = Register(url, create=False)  # upgrades to HEAD: refused before, with the index's unique violation
    assert reg._version() == HEAD
    found = {r["notice_id"]: r for r in reg.notices_of("P-1") + reg.notices_of("P-2")}
    assert set(found) == {"R-A", "R-B", "R-C", "R-D", "N-1"}  # nothing deleted
    assert {n: found[n]["notice_type"] for n in found} == {
        "R-A": "duplicate",
        "R-B": "record",
        "R-C": "duplicate",
        "R-D": "record",
        "N-1": "connection",
    }
    # What the clerks recorded is as they recorded it; the notes say which record stands.
    assert [(found[n]["status"], found[n]["issued_date"]) for n in ("R-A", "R-C")] == [
        ("connected", dt.date(2027, 2, 10)),
        ("connected", dt.date(2027, 2, 9)),
    ]
    assert found["R-A"]["note"].startswith("permit 14; A second record of parcel P-1's connection")
    assert "R-B (connected 2027-02-11), which stays its record" in found["R-C"]["note"]
    assert found["R-B"]["note"] is None and found["R-D"]["note"] is None
    changed = [(e["actor"], e["field"], e["old_value"], e["new_value"]) for e in reg.events_of("R-A")]
    assert changed[0] == ("migration 0005", "notice_type", "record", "duplicate")
    assert changed[1][:3] == ("migration 0005", "note", "permit 14")
    assert [e["actor"] for e in reg.events_of("R-B")] == ["migration 0008"]  # only its day connected, 0008
    # The parcel is still recorded connected, once: never noticed, refused a third record, and the index now holds.
    assert {"P-1", "P-2"} <= reg.excluded_parcels()
    with pytest.raises(LayerError, match=r"already recorded connected \(R-B\)"):
        reg.record("P-1", "connected", on="2027-02-10", actor="clerk")
    with pytest.raises(DBAPIError), reg.transaction() as con:
        con.execute(text("UPDATE notices SET notice_type = 'record' WHERE notice_id = 'R-A'"))
    assert reg.integrity_ok()
    reg.close()


@pytest.mark.postgres
def test_a_new_postgres_register_opened_by_several_processes_at_once_migrates_once(tmp_path):
    url = postgres_url()
    fresh_postgres_register(url)
    script = "import sys; from layers.register import Register; Register(sys.argv[1], create=True).close()"
    procs = [subprocess.Popen([sys.executable, "-c", script, url], cwd=REPO, stderr=subprocess.PIPE) for _ in range(6)]
    errors = [p.communicate(timeout=120)[1].decode() for p in procs]
    assert [p.returncode for p in procs] == [0] * 6, errors
    engine = create_engine(url)
    with engine.connect() as con:
        assert con.execute(text("SELECT version_num FROM alembic_version")).scalars().all() == [HEAD]
    engine.dispose()


def test_the_register_is_found_through_the_store_from_any_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("SEWERPLAN_DATABASE_URL", raising=False)
    store = tmp_path / "town" / "town.gpkg"
    store.parent.mkdir()
    write_layers(str(store), sample_town(50))
    with pytest.raises(RegisterMissingError, match="No notice register is set up"):
        Register(store=store, create=False)
    created = Register(store=store, create=True)
    assert created.path == tmp_path / "town" / "town-register.sqlite" and read_setting(store, "register")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert Register(store=str(store), create=False).url == created.url  # the same register from another folder
    assert not (elsewhere / "instance").exists()
    with pytest.raises(LayerError, match="already keeps its notices"):
        Register(str(tmp_path / "second.sqlite"), store=store, create=True)
    monkeypatch.setenv("SEWERPLAN_DATABASE_URL", str(tmp_path / "town" / "town-register.sqlite"))
    assert Register(create=False).url == created.url


def test_a_mistyped_register_is_refused_and_the_existing_ones_named(tmp_path, monkeypatch):
    monkeypatch.delenv("SEWERPLAN_DATABASE_URL", raising=False)
    Register(str(tmp_path / "register.sqlite"), create=True).close()
    with pytest.raises(RegisterMissingError) as info:
        Register(str(tmp_path / "registre.sqlite"), create=False)
    assert str(tmp_path / "register.sqlite") in str(info.value) and "--" not in str(info.value)
    assert not (tmp_path / "registre.sqlite").exists()  # nothing created
    (tmp_path / "other.sqlite").write_bytes(b"SQLite format 3\x00" + b"\x00" * 100)
    with pytest.raises(LayerError):
        Register(str(tmp_path / "other.sqlite"), create=True)


@pytest.mark.parametrize(
    ("make_target", "message"),
    [
        (lambda d: d / "exists.sqlite", "already exists"),
        (lambda d: d, "is a folder"),
        (lambda d: d / "no-such-folder" / "b.sqlite", "does not exist"),
        (lambda d: d / "exists.sqlite" / "b.sqlite", "exists.sqlite is a file, not a folder; back up into a folder"),
        (
            lambda d: Path("/proc/sewerplan-backup.sqlite"),
            "Cannot write /proc/sewerplan-backup.sqlite: its folder /proc",
        ),
    ],
)
def test_backup_refuses_to_overwrite_and_explains(tmp_path, results, make_target, message):
    reg = Register(str(tmp_path / "register.sqlite"), create=True)
    _issue(reg, due_notices(results, profile=FP, notice_date=DAY))
    (tmp_path / "exists.sqlite").write_bytes(b"keep me")
    with pytest.raises(LayerError, match=message):
        reg.backup(make_target(tmp_path))
    assert (tmp_path / "exists.sqlite").read_bytes() == b"keep me"


def test_backup_is_a_verified_copy(tmp_path, results):
    reg = Register(str(tmp_path / "register.sqlite"), create=True)
    _issue(reg, due_notices(results, profile=FP, notice_date=DAY))
    done = reg.backup(tmp_path / "copy.sqlite")
    copy = Register(str(tmp_path / "copy.sqlite"), create=False)
    assert done["tables"] == copy.table_counts() == reg.table_counts() and done["tables"]["notices"] > 0
    assert copy.integrity_ok() and len(copy.listing()) == len(reg.listing())
    assert not list(tmp_path.glob(".copy*"))  # no hidden copy, no lock file


WRITER = textwrap.dedent("""
    import sys, datetime as dt, pandas as pd
    from layers.register import Register, new_batch_id
    reg = Register(sys.argv[1], create=False)
    due = pd.read_json(sys.argv[2], dtype={"parcel_id": str})
    due["issued_date"] = dt.date(2027, 3, 1)
    batch = reg.prepare_batch(due, batch_id=new_batch_id(dt.date(2027, 3, 1)), kind="connection",
        notice_date=dt.date(2027, 3, 1), deadline=dt.date(2027, 5, 30), folder="/x", actor=sys.argv[3],
        profile=("fort-plain", "1"))
    print(f"done {len(batch['notices'])} {batch['already']}", flush=True)
""")


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_two_processes_preparing_at_once_create_no_duplicates(tmp_path, results, backend):
    url = register_url(backend, tmp_path)
    Register(url, create=True).close()
    due = due_notices(results, profile=FP, notice_date=DAY).drop(columns=["deadline", "issued_date"])
    path = tmp_path / "due.json"
    due.to_json(path)
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, url, str(path), a], cwd=REPO, stdout=subprocess.PIPE, text=True)
        for a in ("planner-a", "planner-b")
    ]
    totals = [tuple(map(int, p.communicate(timeout=120)[0].split()[1:])) for p in procs]
    assert sum(t[0] for t in totals) == len(due) and all(sum(t) == len(due) for t in totals)
    listing = Register(url, create=False).listing()
    assert len(listing) == len(due) and listing["parcel_id"].is_unique


class NoticeMachine(RuleBasedStateMachine):
    """Prepare, finish, cancel, mark and serve violations in any order: at most one open or prepared notice per parcel
    and type, a parcel marked connected or exempt is never noticed again, and a notice has a deadline exactly when it
    was issued."""

    results = None

    def __init__(self):
        super().__init__()
        import tempfile

        self.folder = tempfile.mkdtemp(prefix="sewerplan-machine-")
        self.reg = Register(f"{self.folder}/register.sqlite", create=True)
        self.closed: set[str] = set()
        self.prepared: list[str] = []
        self.day = DAY

    def _due(self, k):
        return due_notices(self.results, profile=FP, notice_date=self.day, exclude=self.reg.excluded_parcels()).head(k)

    @rule(k=st.integers(0, 12))
    def prepare(self, k):
        batch = _prepare(self.reg, self._due(k), day=self.day)
        if batch["notices"]:
            self.prepared.append(batch["batch_id"])

    @rule(finish=st.booleans())
    def settle(self, finish):
        if not self.prepared:
            return
        batch_id = self.prepared.pop()
        if finish:
            ids = self.reg.batch_notices(batch_id)["notice_id"]
            self.reg.finish_batch(batch_id, letters={n: (f"{batch_id}/x.pdf", 1) for n in ids}, actor="m")
        else:
            self.reg.cancel_batch(batch_id, actor="m", why="test")

    @rule(pick=st.integers(0, 500), status=st.sampled_from(["connected", "exempt", "withdrawn", "extended"]))
    def mark(self, pick, status):
        open_ = self.reg.listing()
        open_ = open_[open_["status"].isin(["open", "extended"])]
        if open_.empty:
            return
        row = open_.iloc[pick % len(open_)]
        later = max(open_.loc[open_["parcel_id"] == row["parcel_id"], "deadline"]) + dt.timedelta(days=30)
        self.reg.mark(row["parcel_id"], status, actor="m", deadline=later if status == "extended" else None)
        if status in ("connected", "exempt"):
            self.closed.add(row["parcel_id"])

    @rule(days=st.integers(1, 200))
    def violations(self, days):
        self.day += dt.timedelta(days=days)
        overdue = self.reg.listing(overdue_on=self.day, notice_type="connection")
        due = overdue.assign(issued_date=self.day, notice_type="violation", notice_reason=None)
        batch = _prepare(self.reg, due, kind="violation", day=self.day, deadline=self.day + dt.timedelta(days=30))
        if batch["notices"]:
            self.prepared.append(batch["batch_id"])

    @invariant()
    def one_open_notice_per_parcel_and_type_and_deadlines_only_when_issued(self):
        listing = self.reg.listing()
        live = listing[listing["is_open"] == 1]
        assert not live.duplicated(["parcel_id", "notice_type"]).any()
        assert listing.loc[listing["status"].isin(["prepared", "cancelled"]), "deadline"].isna().all()
        assert listing.loc[listing["status"].isin(["open", "extended"]), "deadline"].notna().all()
        connection = live[live["notice_type"] == "connection"]
        assert not set(connection["parcel_id"]) & self.closed

    def teardown(self):
        self.reg.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def test_notice_state_machine(results):
    NoticeMachine.results = results
    run = NoticeMachine.TestCase
    run.settings = settings(max_examples=15, stateful_step_count=12, deadline=None)
    run().runTest()


# -- the command line ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_town():
    """A town small enough that writing its letters takes a moment (about 30 notices)."""
    return sample_town(80)


@pytest.fixture(scope="module")
def small_results(small_town):
    parcels = small_town["parcels"].assign(connected=small_town["parcels"]["connected"] == "Y")
    return analyze_mandates(
        parcels, small_town["mains"], streets=small_town["streets"], buildings=small_town["buildings"], profile=FP
    ).parcels


@pytest.fixture
def store(tmp_path, small_town):
    path = tmp_path / "town.gpkg"
    write_layers(str(path), small_town)
    town_file(tmp_path)
    return path


def invoke(*args, ok=True):
    result = CliRunner().invoke(main, [str(a) for a in args])
    if ok:
        assert result.exit_code == 0, result.output
    return result


def _issue_cli(store, out, *extra):
    args = ["notices", "issue", "--profile", "fort-plain", "--data", store, "--notice-date", "2027-03-01"]
    return invoke(*args, "--out", out, "--json", *extra)


@pytest.fixture
def first_batch(store, tmp_path) -> dict:
    """The first batch of the town's connection notices, issued through the command line (the register made)."""
    return json.loads(_issue_cli(store, tmp_path / "out", "--new").stdout)


def test_cli_issue_writes_one_verified_folder_with_a_letter_per_envelope(first_batch):
    first = first_batch
    assert first["issued"] > 0 and Path(first["folder"]).name == first["batch"]
    assert len(first["letters"]) == len(pd.read_csv(first["mailing_list"]))  # one letter per envelope
    assert first["deadline_flag"] == "Sunday"  # 2027-05-30, flagged for the town to decide
    assert verify_batch(first["folder"], [n["notice_id"] for n in first["notices"]]) == []


def test_cli_issue_names_every_file_it_wrote_in_the_batch_folder(store, tmp_path):
    """The batch folder holds a manifest.json beside the letters and mailing list (each file's checksum, which
    `notices resume` checks), and the output did not list it: a clerk copying the files named left it behind."""
    args = ["notices", "issue", "--profile", "fort-plain", "--data", store, "--notice-date", "2027-03-01"]
    said = " ".join(invoke(*args, "--out", tmp_path / "out", "--new").stdout.split())
    (folder,) = [p for p in (tmp_path / "out").iterdir() if not p.name.startswith(".")]
    named = said.split(f"Files in {folder}: ")[1]
    for entry in folder.iterdir():
        assert entry.name + ("/" if entry.is_dir() else "") in named, (entry.name, said)
    assert "manifest.json (each file's checksum" in named


def test_the_readme_issues_notices_dated_today_whatever_day_it_is(store, tmp_path, monkeypatch):
    """README's `notices issue --notice-date 2027-03-01` was refused from 2027-03-02 on (a notice date before today
    is refused), so the README's example stopped working; `--notice-date today` is the day it is run."""
    monkeypatch.setenv("SEWERPLAN_TODAY", "2027-04-06")
    preview = ["notices", "preview", "--profile", "fort-plain", "--data", store, "--notice-date", "today", "--json"]
    assert json.loads(invoke(*preview).stdout)["notice_date"] == "2027-04-06"
    args = ["notices", "issue", "--profile", "fort-plain", "--data", store, "--notice-date", "Today"]
    issued = json.loads(invoke(*args, "--out", tmp_path / "out", "--new", "--json").stdout)
    assert issued["issued"] > 0 and issued["deadline"] == "2027-07-05"  # 90 days after 2027-04-06


def test_cli_issue_records_the_values_set_on_the_run_it_gives_notice_on(store, tmp_path):
    """The batch's run keeps what its analysis set on the profile and the distance it measured by: the map tells a
    later what-if run at another distance from the run the notice was given on."""
    issued = json.loads(_issue_cli(store, tmp_path / "out", "--new", "--set", "mandate.distance_ft=150").stdout)
    reg = Register(store=store, create=False)
    run = reg.run(reg.batch(issued["batch"])["run_id"])
    reg.close()
    assert (run["settings"], run["distance_ft"]) == ({"mandate.distance_ft": "150"}, 150.0)


def test_cli_issue_links_each_notice_to_its_mailing_row_and_letter(first_batch):
    rows = pd.read_csv(first_batch["mailing_list"], dtype=str)
    for n in first_batch["notices"]:
        row = rows[rows["mailing_no"] == str(n["mailing_no"])].iloc[0]
        assert n["notice_id"] in row["notice_ids"].split("; ") and n["letter"].endswith(row["letter_file"])


def test_cli_issue_again_issues_nothing_new_and_writes_no_folder(store, tmp_path, first_batch):
    again = json.loads(_issue_cli(store, tmp_path / "out").stdout)
    assert again["issued"] == 0 and again["already_open"] == first_batch["issued"] and again["batch"] is None
    assert [p.name for p in (tmp_path / "out").iterdir() if not p.name.startswith(".")] == [first_batch["batch"]]


def test_a_preview_after_a_batch_says_why_it_has_fewer_notices(store, first_batch, monkeypatch):
    """A preview after the batch listed 0 notices and stopped there, as if nobody were mandated any more."""
    listed = json.loads(invoke("notices", "list", "--store", store, "--json").stdout)["notices"]
    with monkeypatch.context() as later:  # the owner connects after the notice's date, the suite's today before it
        later.setenv("SEWERPLAN_TODAY", "2027-03-05")
        invoke("notices", "mark", listed[0]["parcel_id"], "connected", "--store", store)
    args = ["notices", "preview", "--profile", "fort-plain", "--data", store, "--notice-date", "2027-03-01"]
    shown = " ".join(invoke(*args).stdout.split())
    assert "0 notice(s) to 0 mailing address(es)" in shown
    n = first_batch["issued"]  # one of them now marked connected: still not noticed again
    assert f"{n} mandated parcels are not noticed again: the register has an open notice for each" in shown
    assert json.loads(invoke(*args, "--json").stdout)["already_noticed"] == n


def test_a_preview_says_what_its_deadline_rests_on(store, monkeypatch):
    """The command's preview gave each address its deadline, but not its days and section, which the page and
    ``--json`` give (and the letter states)."""
    monkeypatch.setenv("SEWERPLAN_TODAY", "2027-03-01")
    args = ["notices", "preview", "--profile", "fort-plain", "--data", store, "--notice-date", "2027-03-01"]
    assert "Deadline 2027-05-30: 90 days (§ 144-4)." in " ".join(invoke(*args).stdout.split())


def test_a_preview_dated_before_today_says_issuing_will_refuse_it(store, monkeypatch):
    """The Notices page refuses to preview a date `issue` would refuse; the CLI's preview, which offers nothing to
    confirm, showed it without a word, and the clerk learnt it only when `issue` refused."""
    args = ["notices", "preview", "--profile", "fort-plain", "--data", store, "--notice-date", "2027-03-01"]
    monkeypatch.setenv("SEWERPLAN_TODAY", "2027-03-02")
    shown = " ".join(invoke(*args).stdout.split())
    assert "Before issuing: The notice date 2027-03-01 is before today (2027-03-02)." in shown
    blocked = json.loads(invoke(*args, "--json").stdout)["letters_blocked_by"]
    assert [p for p in blocked if "is before today" in p]
    monkeypatch.setenv("SEWERPLAN_TODAY", "2027-03-01")  # mailed today: nothing to say
    assert "before today" not in invoke(*args).stdout


def test_a_withdrawn_notice_goes_out_again_in_a_new_batch_and_the_first_is_untouched(store, tmp_path, first_batch):
    first = first_batch
    listed = json.loads(invoke("notices", "list", "--store", store, "--json").stdout)["notices"]
    invoke("notices", "mark", listed[0]["parcel_id"], "withdrawn", "--store", store)
    second = json.loads(_issue_cli(store, tmp_path / "out").stdout)
    assert second["issued"] == 1 and second["folder"] != first["folder"]
    assert len(pd.read_csv(first["mailing_list"])) == len(first["letters"])  # the first batch's files untouched
    assert verify_batch(first["folder"], [n["notice_id"] for n in first["notices"]]) == []
    assert sorted(p.name for p in (tmp_path / "out").iterdir() if not p.name.startswith(".")) == sorted(
        [first["batch"], second["batch"]]
    )


def test_each_batch_records_the_input_data_checksum(store, tmp_path, first_batch):
    """The same data gives the same checksum, in every batch and its run."""
    listed = json.loads(invoke("notices", "list", "--store", store, "--json").stdout)["notices"]
    invoke("notices", "mark", listed[0]["parcel_id"], "withdrawn", "--store", store)
    _issue_cli(store, tmp_path / "out")
    register = Register(store=store, create=False)
    with register.engine.connect() as con:
        runs = con.execute(text("SELECT input_checksum FROM analysis_runs")).scalars().all()
    checksums = {b["input_checksum"] for b in register.batches()} | set(runs)
    assert len(runs) == 2 and len(checksums) == 1 and len(checksums.pop()) == 64


def test_a_preview_prints_the_layers_warnings(small_town, tmp_path):
    """The notices commands say what validation found, as analyze does (they once read the layers silently)."""
    town = {k: v.copy() for k, v in small_town.items()}
    town["parcels"].loc[town["parcels"].index[-1], "geometry"] = None  # dropped from the analysis, with a warning
    path = tmp_path / "town.gpkg"
    write_layers(str(path), town)
    Register(str(tmp_path / "register.sqlite"), create=True)
    args = ["notices", "preview", "--profile", "fort-plain", "--data", path, "--notice-date", "2027-03-01"]
    shown = invoke(*args, "--register", tmp_path / "register.sqlite")
    said = " ".join(shown.stderr.split())
    assert "warning: parcels: 1 feature(s) have no geometry and were left out of the analysis." in said
    quiet = invoke(*args, "--register", tmp_path / "register.sqlite", "--json")
    assert "warning" not in quiet.stderr and json.loads(quiet.stdout)["notices"]


def test_cli_out_that_is_a_file_records_nothing(store, tmp_path):
    (tmp_path / "afile").write_text("x")
    failed = CliRunner().invoke(
        main,
        ["notices", "issue", "--profile", "fort-plain", "--data", str(store), "--notice-date", "2027-03-01"]
        + ["--out", str(tmp_path / "afile"), "--new"],
    )
    assert failed.exit_code == 2 and "is a file" in failed.output and "Traceback" not in failed.output
    assert (tmp_path / "afile").read_text() == "x"
    with pytest.raises(RegisterMissingError):  # refused before a register was made for the town
        Register(store=store, create=False)
    assert not read_setting(str(store), "register")


def _files(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (hidden ones too) and its SHA-256: what a refused command must leave as it was."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize(
    ("settings", "says"), [("none", "no town settings file"), ("placeholders", "the template's placeholder values")]
)
def test_a_refused_first_issue_leaves_no_register_no_folder_and_the_store_as_it_was(store, tmp_path, settings, says):
    """`issue --new` refused for the town settings made the register (recorded in the store) and an empty --out
    folder before it refused, so the town had a register nobody issued from, and the next --new found it there."""
    (tmp_path / "town.toml").unlink()
    if settings == "placeholders":
        shutil.copy(EXAMPLE_TOWN, tmp_path / "town.toml")
    Path(f"{store}.lock").unlink(missing_ok=True)
    before = _files(tmp_path)
    result = CliRunner().invoke(
        main,
        ["notices", "issue", "--profile", "fort-plain", "--data", str(store), "--notice-date", "2027-03-01"]
        + ["--out", str(tmp_path / "out" / "2027"), "--new"],
    )
    said = " ".join(result.output.split())
    assert result.exit_code == 2 and "Letters cannot be written yet" in said and says in said
    assert _files(tmp_path) == before  # no register, no lock file, the store unchanged (no register recorded)
    assert not (tmp_path / "out").exists()
    with pytest.raises(RegisterMissingError):
        Register(store=store, create=False)
    town_file(tmp_path)  # with the settings in place, the same command makes the register and issues
    done = json.loads(_issue_cli(store, tmp_path / "out" / "2027", "--new").stdout)
    assert done["issued"] > 0 and Path(done["folder"]).parent == tmp_path / "out" / "2027"
    assert read_setting(str(store), "register")


def test_a_refused_issue_leaves_an_existing_register_and_its_folder_untouched(store, tmp_path, first_batch):
    """Through the installed command, as a clerk runs it: the register, its batch folder and the store are byte for
    byte as they were, and SQLite's -wal and -shm files are not left beside the register."""
    listed = json.loads(invoke("notices", "list", "--store", store, "--json").stdout)["notices"]
    invoke("notices", "mark", listed[0]["parcel_id"], "withdrawn", "--store", store)  # one notice due again
    (tmp_path / "town.toml").unlink()
    before = _files(tmp_path)
    args = ["notices", "issue", "--profile", "fort-plain", "--data", store, "--notice-date", "2027-03-01"]
    for extra in ([], ["--new"]):
        result = subprocess.run(
            [Path(sys.executable).with_name("sewerplan"), *args, "--out", tmp_path / "out", *extra],
            capture_output=True,
            text=True,
        )
        assert result.returncode == 2 and "no town settings file" in result.stderr, result.stderr
        assert _files(tmp_path) == before


def test_cli_mistyped_register_is_refused_with_the_flag_to_create_one(store, tmp_path):
    _issue_cli(store, tmp_path / "out", "--new")
    result = CliRunner().invoke(main, ["notices", "list", "--register", str(tmp_path / "town-registr.sqlite")])
    assert result.exit_code == 2 and "town-register.sqlite" in result.output and "--new" in result.output
    assert not (tmp_path / "town-registr.sqlite").exists()


def test_cli_list_fits_80_columns_and_exports_every_column(store, tmp_path):
    _issue_cli(store, tmp_path / "out", "--new")
    result = CliRunner().invoke(main, ["notices", "list", "--store", str(store)], env={"COLUMNS": "80"})
    lines = result.output.splitlines()
    assert max(len(line) for line in lines) <= 80
    header = lines[1].split()
    assert header == ["notice", "parcel", "type", "status", "issued", "deadline", "owner", "article"]
    rows = [line for line in lines[2:] if line.startswith("N-")]
    assert rows and all(len(line.split()[4]) == 10 and len(line.split()[5]) == 10 for line in rows)  # whole dates
    assert all(line.split()[-1] == "-" for line in rows)  # no article number recorded yet
    assert lines[2 + len(rows)].startswith("Served by certified mail: ")  # below the table, in the 80 columns
    records = json.loads(invoke("notices", "list", "--store", store, "--json").output)["notices"]
    register = Register(store=store, create=False)
    assert set(records[0]) == set(register.listing().columns)
    assert records[0]["deadline"] == "2027-05-30" and records[0]["status"] == "open"
    invoke("notices", "list", "--store", store, "--csv", tmp_path / "all.csv")
    exported = pd.read_csv(tmp_path / "all.csv", dtype=str)
    assert list(exported.columns) == list(register.listing().columns) and len(exported) == len(records)
    refused = CliRunner().invoke(main, ["notices", "list", "--store", str(store), "--csv", str(tmp_path / "all.csv")])
    assert refused.exit_code == 2 and "already exists" in refused.output


def test_cli_list_never_replaces_a_csv_that_appears_while_it_writes(store, tmp_path, monkeypatch):
    """Two exports to one name at once: the one that finds the file there when its own is whole is refused with
    the same sentence as a file there before, and the other's file is left as it was."""
    import layers.atomic

    _issue_cli(store, tmp_path / "out", "--new")
    target = tmp_path / "all.csv"
    hidden = layers.atomic.scratch_path

    def other_export_first(path):  # the other export finishes after this one looked, before this one is whole
        target.write_text("the other export\n", encoding="utf-8")
        return hidden(path)

    monkeypatch.setattr(layers.atomic, "scratch_path", other_export_first)
    refused = CliRunner().invoke(main, ["notices", "list", "--store", str(store), "--csv", str(target)])
    assert refused.exit_code == 2, refused.output
    assert f"{target} already exists: give a new file name for the export." in " ".join(refused.output.split())
    assert target.read_text(encoding="utf-8") == "the other export\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".all.csv")] == []  # no hidden file left


def _no_hard_links(monkeypatch):
    """A disk without hard links, as a FAT or exFAT USB stick is: every link refused with EPERM."""
    import errno
    import os

    def refused(src, dst, **kwargs):
        raise OSError(errno.EPERM, "Operation not permitted", str(src), None, str(dst))

    monkeypatch.setattr(os, "link", refused)


def test_cli_list_exports_to_a_disk_without_hard_links(store, tmp_path, monkeypatch):
    """A USB stick formatted FAT or exFAT has no hard links: the export was refused with "you may not write
    there". It is written whole, and still never over a file that appears while it writes."""
    import layers.atomic

    _issue_cli(store, tmp_path / "out", "--new")
    _no_hard_links(monkeypatch)
    stick = tmp_path / "stick"
    written = CliRunner().invoke(main, ["notices", "list", "--store", str(store), "--csv", str(stick / "all.csv")])
    assert written.exit_code == 0, written.output
    assert len(pd.read_csv(stick / "all.csv", dtype=str)) == len(Register(store=store, create=False).listing())

    target = stick / "again.csv"
    hidden = layers.atomic.scratch_path

    def other_export_first(path):
        target.write_text("the other export\n", encoding="utf-8")
        return hidden(path)

    monkeypatch.setattr(layers.atomic, "scratch_path", other_export_first)
    refused = CliRunner().invoke(main, ["notices", "list", "--store", str(store), "--csv", str(target)])
    assert refused.exit_code == 2, refused.output
    assert f"{target} already exists: give a new file name for the export." in " ".join(refused.output.split())
    assert target.read_text(encoding="utf-8") == "the other export\n"
    assert sorted(p.name for p in stick.iterdir()) == ["again.csv", "all.csv"]  # no hidden file left


def test_cli_list_on_a_disk_that_can_neither_link_nor_rename_without_replacing(store, tmp_path, monkeypatch):
    import ctypes
    import errno

    import layers.atomic

    _issue_cli(store, tmp_path / "out", "--new")
    _no_hard_links(monkeypatch)

    def no_such_rename(*args):
        ctypes.set_errno(errno.EINVAL)
        return -1

    monkeypatch.setattr(layers.atomic, "_renameat2", no_such_rename)
    target = tmp_path / "stick" / "all.csv"
    refused = CliRunner().invoke(main, ["notices", "list", "--store", str(store), "--csv", str(target)])
    assert refused.exit_code == 2, refused.output
    assert (
        f"Cannot write {target}: this disk supports neither hard links nor renaming a file without replacing "
        "another" in " ".join(refused.output.split())
    )
    assert list(target.parent.iterdir()) == []


def test_cli_until_goes_only_with_extended(store, tmp_path):
    doc = json.loads(_issue_cli(store, tmp_path / "out", "--new").output)
    parcel = doc["notices"][0]["parcel_id"]
    bad = CliRunner().invoke(
        main, ["notices", "mark", parcel, "connected", "--until", "2027-09-01", "--store", str(store)]
    )
    assert bad.exit_code == 2 and "--until goes only with extended" in bad.output
    register = Register(store=store, create=False)
    assert register.listing().set_index("parcel_id").loc[parcel, "status"] == "open"
    invoke("notices", "mark", parcel, "extended", "--until", "2027-09-01", "--store", store)
    assert register.listing().set_index("parcel_id").loc[parcel, "deadline"] == dt.date(2027, 9, 1)


def test_violation_notices_are_issued_only_on_the_day_they_are_dated(store, tmp_path, monkeypatch):
    """`violations --as-of 2028-01-04 --out DIR` on 2027-02-15 recorded violation notices against owners whose
    connection deadline was months away (overdue "as of" a day still to come), and an --as-of in the past dated the
    letters, and their time to correct, before the day they could be mailed. Issuing takes today's date (a preview
    may look at any day); the refusal records nothing."""
    first = json.loads(_issue_cli(store, tmp_path / "out", "--new").output)
    args = ["notices", "violations", "--profile", "fort-plain", "--store", store, "--json", "--as-of"]
    assert len(json.loads(invoke(*args, "2027-06-02").output)["notices"]) == first["issued"]  # a preview: any day
    for today, as_of, said in (
        ("2027-02-15", "2027-06-02", "2027-06-02 is after today (2027-02-15): a violation notice is given once"),
        ("2027-06-03", "2027-06-02", "2027-06-02 is before today (2027-06-03): a violation notice is dated the"),
    ):
        monkeypatch.setenv("SEWERPLAN_TODAY", today)
        refused = invoke(*args, as_of, "--out", tmp_path / "violations", ok=False)
        assert refused.exit_code == 2 and said in " ".join(refused.output.split()), refused.output
    assert Register(store=store, create=False).listing(notice_type="violation").empty
    assert not (tmp_path / "violations").exists()
    monkeypatch.setenv("SEWERPLAN_TODAY", "2027-06-02")
    issued = json.loads(invoke(*args, "2027-06-02", "--out", tmp_path / "violations").output)
    assert issued["issued"] == first["issued"] and issued["correct_by"] == "2027-07-02"


def test_cli_violations_record_nothing_without_out_and_write_their_paperwork_with_it(store, tmp_path, monkeypatch):
    first = json.loads(_issue_cli(store, tmp_path / "out", "--new").output)
    connected = first["notices"][0]
    with monkeypatch.context() as later:  # the owner connects after the notice's date, the suite's today before it
        later.setenv("SEWERPLAN_TODAY", "2027-03-05")
        invoke("notices", "mark", connected["parcel_id"], "connected", "--store", store)
    args = ["notices", "violations", "--profile", "fort-plain", "--as-of", "2027-06-02", "--store", store, "--json"]
    preview = json.loads(invoke(*args).output)
    assert preview["recorded"] is False and len(preview["notices"]) == first["issued"] - 1
    assert Register(store=store, create=False).listing(notice_type="violation").empty
    said = " ".join(invoke(*args[:-1]).stdout.split())  # issued from a fresh analysis: the store holds none
    assert f"not checked against an analysis: {store} holds no analysis yet: run `sewerplan analyze" in said
    # a date to correct by on a weekend is said, as `issue` says it of a deadline (--json alone had it; a tester)
    saturday = " ".join(invoke(*[a if a != "2027-06-02" else "2027-06-03" for a in args[:-1]]).stdout.split())
    assert "Note: the date to correct by, 2027-07-03, falls on a Saturday: the town decides" in saturday
    monkeypatch.setenv("SEWERPLAN_TODAY", "2027-06-02")  # violation notices are issued on their day
    viol = json.loads(invoke(*args, "--out", tmp_path / "violations").output)
    assert viol["issued"] == first["issued"] - 1 and viol["correct_by"] == "2027-07-02"
    assert Path(viol["mailing_list"]).is_file() and Path(viol["labels"]).is_file()
    originals = {n["notice_id"]: n for n in first["notices"]}
    letter = viol["notices"][0]
    words = " ".join(" ".join(p.extract_text() for p in PdfReader(letter["letter"]).pages).split())
    register = Register(store=store, create=False)
    original = register.listing(notice_type="violation").set_index("notice_id").loc[letter["notice_id"]]
    assert original["original_notice_id"] in originals
    assert f"Notice {original['original_notice_id']}, given on March 1, 2027" in words
    assert "Resolution 4 of 2027 of the Board of Trustees, under § 144-40A" in words  # the village's own choice
    labels = label_texts(viol["labels"])
    assert len(labels) == len(pd.read_csv(viol["mailing_list"])) and letter["notice_id"] in " ".join(labels)
    again = json.loads(invoke(*args, "--out", tmp_path / "violations").output)
    assert again["issued"] == 0 and again["already_open"] == viol["issued"]
    # The preview agrees with issuing: it listed every overdue parcel again as due a violation notice, then issuing
    # said "0 issued; N already open".
    after = json.loads(invoke(*args).output)
    assert after["notices"] == [] and after["already_open"] == viol["issued"]
    said = " ".join(invoke(*args[:-1]).stdout.split())
    assert "0 connection notice(s) overdue on 2027-06-02" in said
    assert f"{viol['issued']} more overdue already have an open violation notice and get none." in said


def test_cli_violations_name_every_file_of_their_batch(store, tmp_path, monkeypatch):
    """An issued violation batch said only "Files in FOLDER.", where a connection batch names its files."""
    _issue_cli(store, tmp_path / "out", "--new")
    monkeypatch.setenv("SEWERPLAN_TODAY", "2027-06-02")  # violation notices are issued on their day
    args = ["notices", "violations", "--profile", "fort-plain", "--as-of", "2027-06-02", "--store", store]
    said = " ".join(invoke(*args, "--out", tmp_path / "violations").stdout.split())
    folder = next(p for p in (tmp_path / "violations").iterdir() if p.is_dir() and not p.name.startswith("."))
    names = sorted(p.name for p in folder.iterdir())
    assert f"Files in {folder}: " in said and "letters/" in said, said
    assert all(name in said for name in names if name != "letters"), (names, said)


def test_cli_violations_follow_the_law_each_notice_was_given_under(store, tmp_path, first_batch):
    """A re-run under another profile made it the default: Fort Plain's overdue § 144-4 notices got violation
    notices on Poughkeepsie's law, periods and letterhead."""
    invoke("analyze", "--profile", "poughkeepsie", "--data", store, "--out", store)
    args = ["notices", "violations", "--as-of", "2027-06-02", "--store", store]
    doc = json.loads(invoke(*args, "--json").stdout)  # the latest run's profile: poughkeepsie
    assert doc["notices"] == [] and len(doc["other_profile"]) == first_batch["issued"]
    assert {h["profile"] for h in doc["other_profile"]} == {"fort-plain"}
    assert {h["section"] for h in doc["other_profile"]} == {"§ 144-4"}
    said = " ".join(invoke(*args).stdout.split())
    assert f"Left out {first_batch['issued']} overdue notice(s) given under the fort-plain profile" in said
    rerun = f"`sewerplan analyze --profile fort-plain --data {store} --out {store}`"  # see the test below
    # The command given can be typed as it is: without the store it found no register.
    assert f"run {rerun}, then `sewerplan notices violations --profile fort-plain --store {store}` for them." in said
    # The JSON carries the same command, worded once by the service.
    assert {h["analyse_again"] for h in doc["other_profile"]} == {rerun.strip("`")}
    invoke("analyze", "--profile", "fort-plain", "--data", store, "--out", store)
    under_its_law = json.loads(invoke(*args, "--profile", "fort-plain", "--json").stdout)
    assert under_its_law["other_profile"] == [] and under_its_law["notices"]
    assert under_its_law["analysis"]["profile"] == "fort-plain"


def test_cli_violations_refuse_a_store_whose_latest_run_is_under_another_profile(store, tmp_path, first_batch):
    """`--profile fort-plain` after a Poughkeepsie what-if run decided who had connected or was no longer mandated
    on Poughkeepsie's 300 ft and rules; the store keeps only its latest run, so the clerk is told which run to make."""
    invoke("analyze", "--profile", "poughkeepsie", "--data", store, "--out", store)
    args = ["notices", "violations", "--profile", "fort-plain", "--as-of", "2027-06-02", "--store", store]
    for extra in ((), ("--out", tmp_path / "violations")):
        refused = invoke(*args, *extra, ok=False)
        said = " ".join(refused.output.split())
        assert refused.exit_code == 2 and "ran under the poughkeepsie profile, not fort-plain" in said, said
        assert "a store keeps only its latest run" in said and said.count(". ") == 0
        assert f"run `sewerplan analyze --profile fort-plain --data {store} --out {store}` first" in said
    assert not (tmp_path / "violations").exists()
    assert Register(store=str(store), create=False).listing(notice_type="violation").empty
    invoke("analyze", "--profile", "fort-plain", "--data", store, "--out", store)
    doc = json.loads(invoke(*args, "--json").stdout)
    assert doc["analysis"]["profile"] == "fort-plain" and len(doc["notices"]) == first_batch["issued"]


def test_cli_violations_follow_the_stores_latest_analysis(store, tmp_path, monkeypatch):
    """A parcel the current analysis finds connected is no violation (the town's billing data says so), and one it no
    longer finds mandated (a smaller distance) is set aside for review: the notice was issued under an earlier run."""
    first = json.loads(_issue_cli(store, tmp_path / "out", "--new").output)
    noticed = {n["parcel_id"]: n for n in first["notices"]}
    billing = tmp_path / "billing.csv"
    billing.write_text("parcel_id\n" + "\n".join(sorted(noticed)[:2]) + "\n", encoding="utf-8")
    analyse = ["analyze", "--profile", "fort-plain", "--data", store, "--out", store, "--connected", billing]
    invoke(*analyse, "--set", "mandate.distance_ft=25")
    now = read_results(store).set_index("parcel_id")["status"]
    args = ["notices", "violations", "--as-of", "2027-06-02", "--store", store]
    doc = json.loads(invoke(*args, "--json").stdout)
    connected = {h["parcel_id"] for h in doc["connected"]}
    review = {h["parcel_id"]: h["status"] for h in doc["review"]}
    listed = {n["parcel_id"] for n in doc["notices"]}
    assert connected == set(sorted(noticed)[:2]) == {p for p in noticed if now[p] == "connected"}
    assert review and review == {p: now[p] for p in noticed if now[p] not in ("connected", "mandated")}
    assert listed == {p for p in noticed if now[p] == "mandated"} and not listed & (connected | set(review))
    said = invoke(*args).stdout
    assert (
        f"Left out 2 overdue parcel(s) that the latest analysis ({doc['analysis']['run_at']}) finds connected" in said
    )
    assert (
        "sewerplan notices mark PARCEL connected" in said
        and f"For review, not listed as violations: {len(review)}" in said
    )
    monkeypatch.setenv("SEWERPLAN_TODAY", "2027-06-02")  # violation notices are issued on their day
    viol = json.loads(invoke(*args, "--out", tmp_path / "violations", "--json").stdout)
    assert {n["parcel_id"] for n in viol["notices"]} == listed


def test_cli_violations_read_the_latest_analysis_once(store, first_batch, monkeypatch):
    """`violations --occupant` read the store's results five times (the statuses, then once for each optional column:
    the site's city, state and ZIP code, a private system), a pass over a town's results each, from five snapshots
    of a database: the columns the results have are listed from their schema and read together, once."""
    from layers.store import GeoPackageStore

    invoke("analyze", "--profile", "fort-plain", "--data", store, "--out", store)
    reads = []
    read_columns = GeoPackageStore.read_columns

    def counted(self, name, columns):
        reads.append((name, tuple(columns)))
        return read_columns(self, name, columns)

    monkeypatch.setattr(GeoPackageStore, "read_columns", counted)
    args = ["notices", "violations", "--profile", "fort-plain", "--as-of", "2027-06-02", "--store", store]
    doc = json.loads(invoke(*args, "--occupant", "--json").output)
    have = set(read_results(store).columns)
    optional = [c for c in ("site_city", "site_state", "site_zip", "private_system") if c in have]
    assert reads == [("parcel_results", ("parcel_id", "status", *optional))]
    assert "site_zip" in optional and doc["occupant_copies"] > 0 and doc["occupant_held"] == []


def test_cli_violations_send_the_occupant_a_copy_as_a_connection_batch_does(store, tmp_path, monkeypatch):
    """`issue --occupant` sent the occupant a copy of the connection notice; `violations` had no copy, so the tenant
    told of the connection notice heard nothing of the violation. None of the three laws names the occupant (each
    serves the owner, or "any person found to be violating"), so the violation notice is read as the connection
    notice is: served on the owner, a copy to the occupant at the office's choice (`--occupant`). The copy's city
    and ZIP code come from the store's latest analysis, which the register does not keep."""
    first = json.loads(_issue_cli(store, tmp_path / "out", "--new").output)
    invoke("analyze", "--profile", "fort-plain", "--data", store, "--out", store)
    args = ["notices", "violations", "--profile", "fort-plain", "--as-of", "2027-06-02", "--store", store]
    sites = read_results(store).set_index("parcel_id")
    noticed = sites.loc[[n["parcel_id"] for n in first["notices"]]]
    away = noticed[noticed["mail_address"].str.upper() != noticed["site_address"].str.upper()]
    assert 0 < len(away) < len(noticed)  # the sample village: some owners live elsewhere
    preview = json.loads(invoke(*args, "--occupant", "--json").output)
    assert preview["occupant_copies"] == len(away) and preview["occupant_held"] == []
    said = " ".join(invoke(*args, "--occupant").output.split())
    assert f"With {len(away)} copy(ies) to the occupant at the site." in said
    assert json.loads(invoke(*args, "--json").output)["occupant_copies"] == 0  # only when asked for
    refused = invoke(*args[:-2], "--occupant", ok=False)  # no store: the register keeps no site city or ZIP
    assert refused.exit_code == 2 and "--occupant needs the town's --store" in " ".join(refused.output.split())
    monkeypatch.setenv("SEWERPLAN_TODAY", "2027-06-02")  # violation notices are issued on their day
    viol = json.loads(invoke(*args, "--occupant", "--out", tmp_path / "violations", "--json").output)
    assert viol["issued"] == first["issued"] and viol["occupant_copies"] == len(away)
    folder = Path(viol["folder"])
    mailing = pd.read_csv(viol["mailing_list"], dtype=str, keep_default_na=False)
    copies = mailing[mailing["name_line_1"] == "Occupant"]
    assert sorted(copies["parcel_ids"]) == sorted(away.index)
    assert set(copies["city"]) == set(away["site_city"]) and set(copies["zip"]) == set(away["site_zip"])
    listed = Register(store=store, create=False).listing(notice_type="violation").set_index("parcel_id")
    for row in copies.to_dict("records"):
        text = " ".join(" ".join(p.extract_text() for p in PdfReader(folder / row["letter_file"]).pages).split())
        owner = sites.loc[row["parcel_ids"], "owner_name"]
        assert "NOTICE OF VIOLATION: COPY FOR THE OCCUPANT" in text
        assert (
            "This letter is a copy, for the occupant of the property, of the notice of violation dated June 2, 2027 "
            f"that the Village serves on its owner, {owner}, by certified mail to the owner's mailing address. The "
            "violation is the owner's, and so is correcting it."
        ) in text
        assert "The owner must correct the violation by July 2, 2027, 30 days after the date of the notice" in text
        assert "You must" not in text and "this notice" not in text and "To ask the" not in text
        # the register keeps the owner's letter as the notice's, never the copy
        assert listed.loc[row["parcel_ids"], "letter_file"] != f"{viol['batch']}/{row['letter_file']}"
    owners = mailing[mailing["name_line_1"] != "Occupant"]
    owner_text = " ".join(PdfReader(folder / owners["letter_file"].iloc[0]).pages[0].extract_text().split())
    assert "NOTICE OF VIOLATION" in owner_text and "COPY FOR THE OCCUPANT" not in owner_text


def test_notices_town_template_writes_the_installed_template_from_any_folder(tmp_path, monkeypatch):
    """The README's `cp docs/town.example.toml town.toml` failed in any folder but the checkout ("cannot stat"), and
    a pip-installed sewerplan has no docs/ at all: `sewerplan notices town-template` writes the installed template
    into the folder it runs in, never over a town's own settings, and the messages that ask for the file name it."""
    monkeypatch.chdir(tmp_path)
    said = " ".join(invoke("notices", "town-template").output.split())
    assert "Town settings template written to town.toml: replace every value" in said
    assert (tmp_path / "town.toml").read_text(encoding="utf-8") == EXAMPLE_TOWN.read_text(encoding="utf-8")
    (tmp_path / "town.toml").write_text(town_toml(), encoding="utf-8")
    kept = invoke("notices", "town-template", "town.toml", "--json", ok=False)
    assert kept.exit_code == 2 and "town.toml exists already: it is not written over" in kept.output
    assert (tmp_path / "town.toml").read_text(encoding="utf-8") == town_toml()
    assert json.loads(invoke("notices", "town-template", "other.toml", "--json").stdout) == {"written": "other.toml"}
    with pytest.raises(LayerError, match="`sewerplan notices town-template` writes a template to fill in"):
        load_town_settings(tmp_path / "missing.toml")


def test_letters_are_refused_while_the_town_settings_hold_the_templates_placeholders(store, tmp_path):
    """`sewerplan notices town-template` and nothing more must not sign letters "A. N. Example"."""
    (tmp_path / "town.toml").unlink()
    invoke("notices", "town-template", tmp_path / "town.toml")
    fields = "officer.name, contact.phone, contact.email"
    preview = ["notices", "preview", "--profile", "fort-plain", "--data", store, "--notice-date", "2027-03-01"]
    said = invoke(*preview).output
    assert f"still hold the template's placeholder values in return_address.lines, {fields}" in " ".join(said.split())
    issue = ["notices", "issue", *preview[2:], "--out", tmp_path / "out", "--new"]
    refused = invoke(*issue, ok=False)
    assert refused.exit_code == 2 and "replace them with the office's own" in refused.output
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
    with contextlib.suppress(RegisterMissingError):
        assert Register(store=str(store), create=False).listing().empty
    assert load_town_settings(EXAMPLE_TOWN).placeholders() == ["return_address.lines", *fields.split(", ")]
    filled = tmp_path / "filled.toml"
    filled.write_text(town_toml(), encoding="utf-8")
    assert load_town_settings(filled).placeholders() == []


@pytest.mark.parametrize("letterhead", ["Village of Fort Plain", "Town of Wappinger"])
def test_letters_are_refused_when_the_town_settings_name_another_municipality(tmp_path, results, letterhead):
    """A Poughkeepsie batch printed "Village of Fort Plain" as its letterhead: the settings are for another town."""
    from gisapp.notices import town_problems

    path = tmp_path / "town.toml"
    path.write_text(town_toml(letterhead), encoding="utf-8")
    plan = plan_notices(results, profile=PK, notice_date=DAY, notice_reason="highway_improvement")
    problems = " ".join(town_problems(PK, load_town_settings(path), plan))
    assert f"name {letterhead} in letterhead.name, but the ordinance profile is Town of Poughkeepsie's" in problems
    path.write_text(town_toml("TOWN OF POUGHKEEPSIE"), encoding="utf-8")
    assert "letterhead.name" not in " ".join(town_problems(PK, load_town_settings(path), plan))


@pytest.mark.parametrize(
    ("due", "runs_to"),
    [
        (dt.date(2027, 5, 29), dt.date(2027, 6, 1)),  # Saturday, Sunday, then Memorial Day
        (dt.date(2027, 7, 4), dt.date(2027, 7, 6)),  # Independence Day on a Sunday, observed on the Monday
        (dt.date(2027, 11, 2), dt.date(2027, 11, 3)),  # General Election Day
        (dt.date(2028, 2, 12), dt.date(2028, 2, 14)),  # Lincoln's Birthday on a Saturday
        (dt.date(2027, 6, 2), dt.date(2027, 6, 2)),  # a Wednesday
    ],
)
def test_a_deadline_on_a_weekend_or_holiday_runs_to_the_next_business_day(due, runs_to):
    from analysis.notices import business_deadline

    assert business_deadline(due) == runs_to


def test_cli_violations_wait_for_the_next_business_day_after_a_weekend_or_holiday_deadline(store, tmp_path):
    """General Construction Law § 25-a: the batch's 2027-05-30 deadline is a Sunday and 2027-05-31 Memorial Day, so
    the owners may still connect on Tuesday 2027-06-01; only from 2027-06-02 are they in violation."""
    first = json.loads(_issue_cli(store, tmp_path / "out", "--new").output)
    assert first["deadline"] == "2027-05-30"
    args = ["notices", "violations", "--profile", "fort-plain", "--store", store, "--as-of"]
    for day in ("2027-05-31", "2027-06-01"):
        doc = json.loads(invoke(*args, day, "--json").stdout)
        assert doc["notices"] == [] and len(doc["next_business_day"]) == first["issued"]
        assert {str(m["runs_to"]) for m in doc["next_business_day"]} == {"2027-06-01"}
    assert "may still be met on the next business day (General Construction Law § 25-a)" in invoke(*args, day).stdout
    doc = json.loads(invoke(*args, "2027-06-02", "--json").stdout)
    assert len(doc["notices"]) == first["issued"] and doc["next_business_day"] == []


def test_cli_overdue_list_follows_the_business_day_rule_as_violations_do(store, tmp_path):
    """`notices list --overdue` compared the deadline as written: on Monday 2027-05-31 (Memorial Day) it listed as
    overdue the notices due Sunday 2027-05-30 that `violations` rightly waits for. Both now use § 25-a."""
    first = json.loads(_issue_cli(store, tmp_path / "out", "--new").output)
    listed = ["notices", "list", "--store", store, "--overdue", "--json", "--as-of"]
    for day in ("2027-05-31", "2027-06-01"):
        assert json.loads(invoke(*listed, day).stdout)["notices"] == []
        violations = json.loads(
            invoke(
                "notices", "violations", "--profile", "fort-plain", "--store", store, "--json", "--as-of", day
            ).stdout
        )
        assert violations["notices"] == []
    assert len(json.loads(invoke(*listed, "2027-06-02").stdout)["notices"]) == first["issued"]


def test_cli_violations_refuse_a_period_the_law_leaves_to_the_town_without_its_resolution(store, tmp_path, monkeypatch):
    _issue_cli(store, tmp_path / "out", "--new")
    town_file(tmp_path).write_text(
        town_toml().replace('"notices.correction_period_days"', "# none"),
        encoding="utf-8",
    )
    monkeypatch.setenv("SEWERPLAN_TODAY", "2027-06-02")  # violation notices are issued on their day
    result = CliRunner().invoke(
        main,
        ["notices", "violations", "--profile", "fort-plain", "--as-of", "2027-06-02", "--store", str(store)]
        + ["--out", str(tmp_path / "v")],
    )
    assert result.exit_code == 2 and "§ 144-40A leaves the period to the village" in result.output
    assert Register(store=store, create=False).listing(notice_type="violation").empty


def test_a_violation_letter_gives_the_original_notices_deadline_and_its_extension(store, tmp_path, monkeypatch):
    """A notice of March 1 (due May 30, 2027) extended to June 15, then to July 1, and still not connected: its
    violation letter said the notice "required the owner ... by July 1, 2027". The notice said May 30; July 1 came
    from the extension. It now says both, the notice's date from the register's events; a notice never extended is
    cited as before."""
    first = json.loads(_issue_cli(store, tmp_path / "out", "--new").output)
    extended, plain = first["notices"][0]["parcel_id"], first["notices"][1]["parcel_id"]
    for until in ("2027-06-15", "2027-07-01"):
        invoke("notices", "mark", extended, "extended", "--until", until, "--store", store)
    assert Register(store=store, create=False).deadlines_in_notices([n["notice_id"] for n in first["notices"][:2]]) == {
        first["notices"][0]["notice_id"]: dt.date(2027, 5, 30)
    }
    monkeypatch.setenv("SEWERPLAN_TODAY", "2027-07-06")  # July 1 passed; July 5 is Independence Day's Monday
    args = ["notices", "violations", "--profile", "fort-plain", "--store", store, "--json"]
    viol = json.loads(invoke(*args, "--out", tmp_path / "violations").output)
    letters = {n["parcel_id"]: n["letter"] for n in viol["notices"]}

    def text(parcel_id: str) -> str:
        return " ".join(" ".join(p.extract_text() for p in PdfReader(letters[parcel_id]).pages).split())

    assert (
        "given on March 1, 2027, required the owner of this property to connect it to the public sewer by May 30, "
        "2027, extended to July 1, 2027. Our register records no connection."
    ) in text(extended)
    assert "to the public sewer by May 30, 2027. Our register records no connection." in text(plain)
    assert "extended" not in text(plain)


def test_violation_and_occupant_letters_are_held_back_as_connection_letters_are(register, results, tmp_path):
    """Violation letters (the owner as the register recorded them) and occupant letters (the site address) were
    written without the checks a connection letter gets. Both now go through the same check when issued: a ZIP
    "5201" recorded before ZIPs were checked holds the violation letter back, and a site ZIP "5201" holds the
    occupant's letter back while the owner's letter covers the notice."""
    import csv as csv_module

    from gisapp.notices import issue_batch, violations

    town = load_town_settings(town_file(tmp_path))
    due = due_notices(results, profile=FP, notice_date=DAY).head(3).copy()
    ids = due["parcel_id"].astype(str).tolist()
    due.loc[due.index[1], "mail_zip"] = "5201"  # given before the ZIP was checked
    _issue(register, due)
    doc = violations(register, profile=FP, town=town, today=dt.date(2027, 6, 15), root=None, actor="t")
    assert [n["parcel_id"] for n in doc["notices"]] == [ids[0], ids[2]]
    (held,) = doc["held"]
    assert held["parcel_id"] == ids[1] and "the mailing ZIP code '5201' is not a US ZIP code" in held["why"]
    assert held["notice_id"] == register.notices_of(ids[1])[0]["notice_id"]

    fresh = plan_notices(results, profile=FP, notice_date=DAY, exclude=register.excluded_parcels(), town=town)
    plan = fresh.__class__(**{**fresh.__dict__, "due": fresh.due.head(2).copy()})
    away = {"mail_address": "9 Far Rd", "mail_city": "Albany", "mail_state": "NY", "mail_zip": "12207"}
    plan.due.loc[:, list(away)] = list(away.values())
    plan.due.loc[:, ["site_city", "site_state", "site_zip"]] = ["Fort Plain", "NY", "13339"]
    plan.due.loc[plan.due.index[1], "site_zip"] = "5201"
    first, second = plan.due["parcel_id"].astype(str)
    done = issue_batch(
        register, plan, kind="connection", profile=FP, town=town, root=tmp_path / "out", actor="t", occupant=True
    )
    assert done["issued"] == 2
    (told,) = done["occupant_held"]
    assert told["parcel_id"] == second and told["why"].startswith("the letter to Occupant at the site address is")
    assert "the site ZIP code '5201'" in told["why"]
    with open(done["mailing_list"], encoding="utf-8-sig", newline="") as f:
        rows = list(csv_module.DictReader(f))
    assert sorted(
        (r["name_line_1"] == "Occupant", r["parcel_ids"]) for r in rows if r["name_line_1"] == "Occupant"
    ) == [(True, first)]


def test_cli_resume_finishes_a_complete_batch_and_cancels_an_incomplete_one(store, tmp_path, small_results):
    results = small_results
    from gisapp.notices import NoticeInputs, write_files

    doc = json.loads(_issue_cli(store, tmp_path / "out", "--new").output)
    register = Register(store=store, create=False)
    for n in doc["notices"][:4]:
        register.mark(n["parcel_id"], "withdrawn", actor="t")
    town = load_town_settings(tmp_path / "town.toml")
    plans = []
    for k in range(2):  # two batches left prepared, as a killed run leaves them
        plan = plan_notices(results, profile=FP, notice_date=DAY, exclude=register.excluded_parcels(), town=town)
        plan = plan.__class__(**{**plan.__dict__, "due": plan.due.head(2)})
        batch_id = new_batch_id(DAY)
        prepared = register.prepare_batch(
            plan.due,
            batch_id=batch_id,
            kind="connection",
            notice_date=DAY,
            deadline=plan.deadline,
            folder=str(tmp_path / "out"),
            actor="t",
            profile=("fort-plain", FP.version),
        )
        if k == 0:  # its files were written and moved into place before the process died
            write_files(
                batch_id, prepared, plan, "connection", FP, town, tmp_path / "out", NoticeInputs(results=results)
            )
        plans.append(batch_id)
    done = json.loads(invoke("notices", "resume", plans[0], "--store", store, "--json").output)
    assert done["action"] == "issued" and set(register.batch_notices(plans[0])["status"]) == {"open"}
    cancelled = json.loads(invoke("notices", "resume", plans[1], "--store", store, "--json").output)
    assert cancelled["action"] == "cancelled" and set(register.batch_notices(plans[1])["status"]) == {"cancelled"}
    assert cancelled["why"] == "its files were never moved into place"  # said once, not "not all written (...)"
    assert register.batch_notices(plans[1])["deadline"].isna().all()
    again = CliRunner().invoke(main, ["notices", "resume", plans[1], "--store", str(store)])
    assert again.exit_code == 2 and "already cancelled" in again.output


def test_a_batch_whose_folder_is_not_here_is_left_for_the_clerk(store, tmp_path, small_results):
    from gisapp.notices import settle

    register = Register(store=store, create=True)
    batch = _prepare(register, due_notices(small_results, profile=FP, notice_date=DAY).head(3))  # folder /nowhere
    assert settle(register, actor="t") == [] and register.batch(batch["batch_id"])["status"] == "prepared"
    refused = CliRunner().invoke(main, ["notices", "resume", batch["batch_id"], "--store", str(store)])
    assert refused.exit_code == 2 and "cannot see" in refused.output
    done = json.loads(invoke("notices", "resume", batch["batch_id"], "--cancel", "--store", store, "--json").output)
    assert done["action"] == "cancelled" and set(register.batch_notices(batch["batch_id"])["status"]) == {"cancelled"}


def test_resuming_a_batch_the_register_lacks_names_the_batches_it_has(store, small_results):
    """'No batch B1 in the register ...' alone left the clerk to guess the ID."""
    register = Register(store=store, create=True)

    def refusal(batch_id: str) -> str:
        said = CliRunner().invoke(main, ["notices", "resume", batch_id, "--store", str(store)])
        assert said.exit_code == 2
        return " ".join(said.output.split())

    assert refusal("B1").endswith("which holds no batch yet: there is nothing to resume.")
    due = due_notices(small_results, profile=FP, notice_date=DAY)
    first = _prepare(register, due.head(2))["batch_id"]
    second = _prepare(register, due.iloc[2:4])["batch_id"]
    said = refusal("B1")
    assert "give the ID of one of its 2 unfinished batches (the name of its batch folder):" in said
    assert said.endswith(f": {second}, {first}.") or said.endswith(f": {first}, {second}.")
    for batch_id in (first, second):
        invoke("notices", "resume", batch_id, "--cancel", "--store", store)
    assert refusal("B1").endswith(
        f"and it has no unfinished batch: there is nothing to resume (its latest: {second}, cancelled; "
        f"{first}, cancelled)."
    ) or refusal("B1").endswith(f"(its latest: {first}, cancelled; {second}, cancelled).")


def test_cli_backup_prints_what_it_verified(store, tmp_path):
    _issue_cli(store, tmp_path / "out", "--new")
    result = invoke("notices", "backup", tmp_path / "b.sqlite", "--store", store)
    assert "verified (integrity ok;" in result.output and "notices" in result.output
    again = CliRunner().invoke(main, ["notices", "backup", str(tmp_path / "b.sqlite"), "--store", str(store)])
    assert again.exit_code == 2 and "already exists" in again.output and "Traceback" not in again.output
    folder = CliRunner().invoke(main, ["notices", "backup", str(tmp_path), "--store", str(store)])
    assert folder.exit_code == 2 and "is a folder" in folder.output


def test_cli_poughkeepsie_needs_a_reason_and_a_named_hazard(store, tmp_path):
    base = ["notices", "preview", "--profile", "poughkeepsie", "--data", str(store), "--notice-date", "2027-03-01"]
    Register(store=store, create=True).close()
    missing = CliRunner().invoke(main, base)
    assert missing.exit_code == 2 and "public_health_hazard or highway_improvement" in missing.output
    highway = json.loads(invoke(*base, "--notice-reason", "highway_improvement", "--json").output)
    assert highway["notices"] == [] and highway["held"] and "§ 168-22.3C" in highway["held"][0]["why"]
    (tmp_path / "hazards.csv").write_text(f"parcel_id,hazard\n{highway['held'][0]['parcel_id']},sewage on the lawn\n")
    named = json.loads(
        invoke(
            *base, "--notice-reason", "public_health_hazard", "--hazard-file", tmp_path / "hazards.csv", "--json"
        ).output
    )
    assert [n["parcel_id"] for n in named["notices"]] == [highway["held"][0]["parcel_id"]]


def test_cli_hazard_file_tells_a_mistyped_parcel_from_one_not_due(store, small_results, tmp_path):
    """A hazard list naming a parcel ID no parcel of the town's layers has (a typo) held it back as "not mandated, or
    already noticed, connected or exempt": the clerk read it as a parcel needing no notice, and the hazard went
    unnoticed. It says the ID is no parcel of this town's layers and to check it, apart from a parcel that exists and
    is not mandated (with its status) and from one the register already has a notice for."""
    base = ["notices", "preview", "--profile", "poughkeepsie", "--data", str(store), "--notice-date", "2027-03-01"]
    Register(store=store, create=True).close()
    highway = json.loads(invoke(*base, "--notice-reason", "highway_improvement", "--json").output)
    due = highway["held"][0]["parcel_id"]  # mandated, on a private system: a hazard notice may reach it
    connected = str(small_results.loc[small_results["status"] == "connected", "parcel_id"].iloc[0])
    (tmp_path / "hazards.csv").write_text(
        f"parcel_id,hazard\n{due},sewage on the lawn\n{connected},odour\n99.99-9-999,sewage in the ditch\n"
    )
    args = [*base, "--notice-reason", "public_health_hazard", "--hazard-file", tmp_path / "hazards.csv"]
    found = json.loads(invoke(*args, "--json").output)
    assert [n["parcel_id"] for n in found["notices"]] == [due]
    why = {h["parcel_id"]: h["why"] for h in found["held"]}
    assert why["99.99-9-999"] == (
        "named in the hazard list but not a parcel of this town's layers (no parcel has this ID): check the ID against "
        "the parcels layer (a typo, or a leading zero a spreadsheet dropped)"
    )
    assert why[connected] == "named in the hazard list but not mandated to connect (the analysis finds it connected)"
    said = " ".join(invoke(*args).output.split())
    assert (
        "Held back, 1 parcel(s): named in the hazard list but not a parcel of this town's layers (no parcel has this "
        "ID): check the ID against the parcels layer (a typo, or a leading zero a spreadsheet dropped) (99.99-9-999)."
    ) in said
    assert f"not mandated to connect (the analysis finds it connected) ({connected})." in said
    assert "not mandated, or already noticed" not in said


def test_a_hazard_list_names_a_parcel_already_noticed_apart():
    """The third kind of parcel a hazard list may name and no notice reaches: mandated, and noticed already."""
    results = pd.DataFrame(
        {
            "parcel_id": ["A", "B", "C"],
            "status": ["mandated", "mandated", "out_of_range"],
            "owner_name": "ROE ANN",
            "mail_address": "1 Main St",
            "mail_city": "Poughkeepsie",
            "mail_zip": "12603",
            "private_system": True,
        }
    )
    plan = plan_notices(
        results,
        profile=PK,
        notice_date=DAY,
        notice_reason="public_health_hazard",
        hazard={"A": "sewage on the lawn", "B": "odour", "C": "odour", "Z": "odour"},
        exclude={"B"},
    )
    assert plan.due["parcel_id"].tolist() == ["A"]
    why = dict(zip(plan.held["parcel_id"], plan.held["why"], strict=True))
    assert why["B"] == (
        "named in the hazard list but the register already holds its notice (open, or being prepared), or records it "
        "connected or exempt"
    )
    assert why["C"].endswith("not mandated to connect (the analysis finds it out_of_range)")
    assert "not a parcel of this town's layers" in why["Z"]


def test_cli_hazard_file_saved_by_excel_is_read(store, tmp_path):
    """A hazard list kept in Excel and saved as "CSV (Comma delimited)" is Windows-1252: its curly apostrophe (0x92)
    was refused as "Cannot read the hazard file ...: 'utf-8' codec can't decode byte 0x92", with no way to fix it
    given; "CSV UTF-8" (with a byte-order mark) is read as before."""
    base = ["notices", "preview", "--profile", "poughkeepsie", "--data", str(store), "--notice-date", "2027-03-01"]
    Register(store=store, create=True).close()
    highway = json.loads(invoke(*base, "--notice-reason", "highway_improvement", "--json").output)
    parcel = highway["held"][0]["parcel_id"]
    for encoding in ("utf-8-sig", "cp1252"):
        (tmp_path / "hazards.csv").write_bytes(
            f"parcel_id,hazard\n{parcel},owner’s septic overflowing\n".encode(encoding)
        )
        named = json.loads(
            invoke(
                *base, "--notice-reason", "public_health_hazard", "--hazard-file", tmp_path / "hazards.csv", "--json"
            ).output
        )
        assert [n["parcel_id"] for n in named["notices"]] == [parcel], encoding


def _planned_for(owners: dict[str, tuple[str, str, str]]):
    """Parcels that must connect, each with its owner (name, mailing street, city), and their notices planned with
    the letters' font, as the command line and the web plan them."""
    from analysis.notices import plan_notices
    from layers.fonts import PRINTABLE

    results = pd.DataFrame(
        {
            "parcel_id": list(owners),
            "status": "mandated",
            "owner_name": [o[0] for o in owners.values()],
            "mail_address": [o[1] for o in owners.values()],
            "mail_city": [o[2] for o in owners.values()],
        }
    )
    return results, plan_notices(
        results, profile=load_profile("fort-plain"), notice_date=dt.date(2027, 3, 1), printable=PRINTABLE
    )


def test_notices_that_cannot_be_addressed_or_printed_are_held_back_not_mailed():
    """A letter to nobody, or one whose owner prints as black boxes, never starts a deadline."""
    owners = {
        "OK": ("MÜLLER-ŽÁK Ørsted", "1 Main St", "Fort Plain"),
        "NO-NAME": ("", "2 Main St", "Fort Plain"),
        "NO-ADDR": ("Ann Roe", "", ""),
        "CJK": ("李小龍", "3 Main St", "Fort Plain"),
        "RTL": ("\u202eEVIL OVERRIDE", "4 Main St", "Fort Plain"),
        "ARABIC": ("Ann Roe", "شارع النيل", "Fort Plain"),
    }
    results, plan = _planned_for(owners)
    assert plan.due["parcel_id"].tolist() == ["OK"]
    why = dict(zip(plan.held["parcel_id"], plan.held["why"], strict=True))
    assert set(why) == set(owners) - {"OK"}
    assert why["NO-NAME"].startswith("no owner name or no mailing address") and why["NO-ADDR"] == why["NO-NAME"]
    assert "李" in why["CJK"] and "龍" in why["CJK"] and "U+202E" in why["RTL"] and "cannot print" in why["ARABIC"]


def test_an_owner_record_holding_an_exports_word_for_empty_is_held_back_not_printed():
    """An owner "null", a street "None", a city "nan" were printed on the letter as "null / None / nan, NY 13339"
    (a tester): a database's or spreadsheet's word for an empty field. Such a letter is held back, naming the word;
    a real name that merely contains one (Nanette Noneman) is mailed."""
    owners = {
        "OK": ("Nanette Noneman", "1 Nullarbor Rd", "Fort Plain"),
        "NULL": ("null", "2 Main St", "Fort Plain"),
        "NONE": ("Ann Roe", "None", "Fort Plain"),
        "NAN": ("Ann Roe", "3 Main St", "nan"),
        "NA": ("N/A", "4 Main St", "Fort Plain"),
    }
    results, plan = _planned_for(owners)
    assert plan.due["parcel_id"].tolist() == ["OK"]
    why = dict(zip(plan.held["parcel_id"], plan.held["why"], strict=True))
    assert set(why) == set(owners) - {"OK"} and len(plan.held) == 4  # each held once
    assert why["NULL"] == (
        "the owner's name or mailing address holds 'null', a spreadsheet's or database's word for an empty field, "
        "where a name or an address should be: complete the owner record and give notice again"
    )
    assert "'None'" in why["NONE"] and "'nan'" in why["NAN"] and "'N/A'" in why["NA"]


def test_polish_czech_and_vietnamese_owners_are_noticed_and_what_the_font_lacks_is_held_back():
    """The letters embed DejaVu Sans: "Łukasz Żółć" is noticed. What it cannot draw (Chinese), what a letter cannot lay
    out (Hebrew and Arabic run right to left; invisible direction marks) and control characters (a NUL cut the name
    at it after a GeoPackage round trip: the letter went to "A") are held back, each named."""
    from analysis.notices import plan_notices

    owners = {
        "PL": ("Łukasz Żółć", "12 Kościuszko St", "Little Falls"),
        "CZ": ("Jiří Dvořák-Šťastný", "1 Main St", "Fort Plain"),
        "VN": ("Nguyễn Văn Đức", "2 Main St", "Fort Plain"),
        "MU": ("MÜLLER-ŽÁK Ørsted", "3 Main St", "Fort Plain"),
        "CJK": ("李小龍", "3 Main St", "Fort Plain"),
        "RTL": ("\u202eEVIL OVERRIDE", "4 Main St", "Fort Plain"),
        "LRM": ("Ann\u200e Roe", "4 Main St", "Fort Plain"),
        "HEBREW": ("דוד כהן", "5 Main St", "Fort Plain"),
        "ARABIC": ("Ann Roe", "شارع النيل", "Fort Plain"),
        "NUL": ("A\x00NN ROE", "6 Main St", "Fort Plain"),
        "BEL": ("ANN ROE", "7 Main\x07 St", "Fort Plain"),
        "C1": ("ANN ROE\x9b", "8 Main St", "Fort Plain"),
    }
    results, plan = _planned_for(owners)
    assert sorted(plan.due["parcel_id"]) == ["CZ", "MU", "PL", "VN"]
    why = dict(zip(plan.held["parcel_id"], plan.held["why"], strict=True))
    assert set(why) == set(owners) - {"CZ", "MU", "PL", "VN"}
    assert "李" in why["CJK"] and "U+202E" in why["RTL"] and "U+200E" in why["LRM"]
    assert "right-to-left text" in why["HEBREW"] and "right-to-left text" in why["ARABIC"]
    assert "U+0000" in why["NUL"] and "U+0007" in why["BEL"] and "U+009B" in why["C1"]
    for held in why.values():
        assert "cannot print" in held
    # Without the font's characters (a caller with no letters to print), nothing is held back for its glyphs, but
    # control characters and right-to-left text still are.
    bare = plan_notices(results, profile=load_profile("fort-plain"), notice_date=dt.date(2027, 3, 1))
    assert sorted(bare.due["parcel_id"]) == ["CJK", "CZ", "MU", "PL", "VN"]


@pytest.mark.parametrize(
    ("state", "zip_code", "held"),
    [
        ("NY", "13339", False),
        ("NY", "13339-1234", False),
        ("N.Y.", " 13339 ", False),
        ("", "13339", False),
        ("NY", "", False),  # no ZIP, a city: addressed as before
        ("NY", "013339", True),  # six digits: the tester's case
        ("VT", "5201", True),  # a ZIP read as a number, its leading zero lost
        ("NY", "133391234", True),
        ("NY", "13339-12", True),
        ("New York", "1333", True),
        ("", "K1A 0B1", True),  # no state: taken as a US address
        ("PR", "00901", False),
        ("AE", "09012", False),  # an APO/FPO address
        ("ON", "K1A 0B1", False),  # Ontario: a foreign postcode, printed as written
        ("ENGLAND", "SW1A 1AA", False),
        ("BAVARIA", "80331", False),
    ],
)
def test_a_malformed_us_zip_is_held_back_and_a_foreign_postcode_is_not(state, zip_code, held):
    """mail_zip '013339' was accepted and printed. A US ZIP is 5 digits or ZIP+4 (12345-6789); an address whose state
    is no US state, territory or APO/FPO code is abroad, and its postcode is not a ZIP."""
    results = pd.DataFrame(
        {
            "parcel_id": ["P-1"],
            "status": "mandated",
            "owner_name": "ANN ROE",
            "mail_address": "1 Main St",
            "mail_city": "Somewhere",
            "mail_state": state,
            "mail_zip": zip_code,
        }
    )
    plan = plan_notices(results, profile=FP, notice_date=DAY)
    assert plan.due.empty is held
    if held:
        (why,) = plan.held["why"]
        assert f"the mailing ZIP code {zip_code.strip()!r} is not a US ZIP code" in why
        assert "5 digits, or ZIP+4 as 12345-6789" in why


def test_a_name_or_address_the_label_or_window_would_cut_is_held_back_with_why():
    """A 200-character owner name, a 400-character street: the label cut one, the window hid the other, and the
    letters went out. Measured as the label and the letter lay them out (layers.letters.address_overflow)."""
    from layers.letters import address_overflow

    long_name = " ".join(["WIŚNIEWSKA-KOWALCZYK MARIA"] * 8)
    long_street = " ".join(["1234 COUNTY HIGHWAY 80 APARTMENT 12B REAR ENTRANCE"] * 8)
    results = pd.DataFrame(
        {
            "parcel_id": ["OK", "NAME", "STREET"],
            "status": "mandated",
            "owner_name": ["VAN DER BERG-WILLIAMSON JOHNATHAN & MARGARET TRUST", long_name, "ANN ROE"],
            "mail_address": ["PO BOX 12", "1 Main St", long_street],
            "mail_city": "Fort Plain",
            "mail_state": "NY",
            "mail_zip": "13339",
        }
    )
    plan = plan_notices(results, profile=FP, notice_date=DAY, overflow=address_overflow)
    assert plan.due["parcel_id"].tolist() == ["OK"]
    why = dict(zip(plan.held["parcel_id"], plan.held["why"], strict=True))
    assert "do not fit the mail: the mailing label would cut it" in why["NAME"]
    assert "the letter's address block would take" in why["STREET"] and "Shorten them" in why["STREET"]
    assert plan_notices(results, profile=FP, notice_date=DAY).due["parcel_id"].tolist() == ["NAME", "OK", "STREET"]


def test_cli_notices_a_polish_owner_and_holds_back_what_the_letters_font_cannot_print(
    small_town, small_results, tmp_path
):
    """Through the command line, as a clerk works: "Łukasz Żółć" is previewed, issued and printed on the letter and
    the label; a Chinese name (no glyphs in the font) and a Hebrew one (right to left) are held back, named."""
    mandated = small_results.loc[small_results["status"] == "mandated", "parcel_id"].astype(str).tolist()[:4]
    owners = dict(zip(mandated, ["Łukasz Żółć", "李小龍", "דוד כהן", "WIŚNIEWSKA MARIA " * 12], strict=True))
    layers = dict(small_town)
    parcels = layers["parcels"].copy()
    named = parcels["parcel_id"].astype(str).map(owners)
    parcels["owner_name"] = named.where(named.notna(), parcels["owner_name"])
    parcels.loc[parcels["parcel_id"].astype(str) == mandated[0], "mail_address"] = "12 Kościuszko St"
    layers["parcels"] = parcels
    store = tmp_path / "town.gpkg"
    write_layers(str(store), layers)
    town_file(tmp_path)
    args = ["notices", "preview", "--profile", "fort-plain", "--data", store, "--notice-date", "2027-03-01", "--json"]
    doc = json.loads(invoke(*args).stdout)
    held = {h["parcel_id"]: h["why"] for h in doc["held"]}
    assert mandated[0] in {n["parcel_id"] for n in doc["notices"]} and mandated[0] not in held
    assert "characters the letters' font lacks: 小 李 龍" in held[mandated[1]]  # in code point order
    assert "right-to-left text" in held[mandated[2]]
    assert "the mailing label would cut it" in held[mandated[3]]
    issued = json.loads(_issue_cli(store, tmp_path / "out", "--new").stdout)
    (notice,) = [n for n in issued["notices"] if n["parcel_id"] == mandated[0]]
    letter = " ".join(" ".join(p.extract_text() for p in PdfReader(notice["letter"]).pages).split())
    assert "Łukasz Żółć 12 Kościuszko St" in letter
    labels = label_texts(Path(issued["folder"]) / "labels.pdf")
    assert any("Łukasz Żółć" in t and "12 Kościuszko St" in t for t in labels)


def test_a_notice_dated_before_today_is_refused_before_anything_is_recorded(runner, tmp_path, monkeypatch):
    """A notice's date is the day it is mailed: a past date would start a deadline (then fines) nobody saw run."""
    from layers.sample import sample_town
    from layers.write import write_layers

    store = tmp_path / "town.gpkg"
    write_layers(str(store), sample_town(120))
    runner.invoke("analyze", "--profile", "fort-plain", "--data", store, "--out", store, ok=True)
    monkeypatch.setenv("SEWERPLAN_TODAY", "2027-03-02")
    (tmp_path / "town.toml").write_text(town_toml(), encoding="utf-8")
    args = ("notices", "issue", "--data", store, "--out", tmp_path / "out", "--new", "--town", tmp_path / "town.toml")
    refused = runner.invoke(*args, "--notice-date", "2027-03-01")
    assert refused.exit_code == 2, refused.output
    assert "is before today (2027-03-02)" in refused.stderr and "Use --notice-date 2027-03-02." in refused.stderr
    with contextlib.suppress(RegisterMissingError):  # refused before the register was set up, or with it empty
        assert Register(store=str(store), create=False).listing().empty
    taken = runner.invoke(*args, "--notice-date", "2027-03-02", "--json")
    assert taken.exit_code == 0, taken.output


def test_a_disk_that_fills_while_letters_are_written_is_told_in_a_sentence(store, tmp_path, monkeypatch):
    """A full disk while the letters are written: a sentence (no traceback), the batch cancelled, none issued."""
    import errno

    import gisapp.notices as notices_module

    def full_disk(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(notices_module, "write_batch", full_disk)
    args = ["notices", "issue", "--profile", "fort-plain", "--data", str(store), "--notice-date", "2027-03-01"]
    done = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "out"), "--new"])
    assert done.exit_code == 2, done.output
    assert "could not be written" in done.stderr and "No space left on device" in done.stderr
    assert done.exception is None or isinstance(done.exception, SystemExit)
    issued = Register(store=store, create=False).listing()
    assert issued.empty or set(issued["status"]) <= {"cancelled"}


def test_two_processes_creating_the_towns_first_register_at_once_both_get_it(tmp_path):
    """A brand-new SQLite register opened twice at the same moment: the second waits for the first's schema
    instead of calling the half-made file 'not a notice register'."""
    from layers.sample import sample_town

    script = (
        "import sys, time; from layers.register import Register; t = float(sys.argv[2]);\n"
        "time.sleep(max(0.0, t - time.time())); Register(store=sys.argv[1], create=True).close(); print('ok')"
    )
    failures = []
    for trial in range(6):
        store = tmp_path / f"town{trial}.gpkg"
        write_layers(str(store), sample_town(50))
        start = str(time.time() + 1.5)
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", script, str(store), start],
                cwd=REPO,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(2)
        ]
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            if proc.returncode != 0 or out.strip() != "ok":
                failures.append(err.strip().splitlines()[-1:] or [f"exit {proc.returncode}"])
        assert Register(store=str(store), create=False).listing().empty
    assert failures == []


def test_a_register_whose_schema_is_committed_between_the_two_looks_is_opened(tmp_path, monkeypatch):
    """The race above, at its narrowest: the first look finds no notices table (the other process's schema not yet
    committed), the second, a moment later, finds tables, so the database is no longer empty. It was called "not a
    notice register" (seen once on a fresh clone); it is looked at again, and opened."""
    from layers import register as register_module

    path = tmp_path / "register.sqlite"
    Register(str(path), create=True).close()
    real, looks = register_module._is_register_file, []

    def first_look_too_early(p) -> bool:  # the first look, before the schema's commit, finds no notices table
        looks.append(p)
        return len(looks) > 1 and real(p)

    monkeypatch.setattr(register_module, "_is_register_file", first_look_too_early)
    opened = Register(str(path), create=False)
    assert opened.listing().empty
    opened.close()


def test_a_new_register_waits_for_another_short_write_of_the_store(tmp_path, monkeypatch):
    """The race above, made certain: the store's lock is held (another clerk recording the same register) while a
    new register is opened. It used to be refused at once ("a settings change is in progress"); it now waits for
    the short write, and for no longer than ``RECORD_WAIT_S``."""
    import threading

    from layers import register as register_module
    from layers.sample import sample_town
    from layers.store import StoreBusyError, store_writer

    store = tmp_path / "town.gpkg"
    write_layers(str(store), sample_town(50))
    held = store_writer(str(store), who="the other clerk", what="a settings change")
    threading.Timer(0.5, held.release).start()
    Register(store=str(store), create=True).close()
    assert read_setting(str(store), "register")

    other = tmp_path / "other.gpkg"
    write_layers(str(other), sample_town(50))
    monkeypatch.setattr(register_module, "RECORD_WAIT_S", 0.3)
    with store_writer(str(other), who="an analysis run"), pytest.raises(StoreBusyError, match="an analysis run"):
        Register(store=str(other), create=True)


def test_a_towns_first_preview_needs_no_register_and_creates_none(store, tmp_path):
    """The README's order: preview first, then issue with --new. The preview says nobody has been noticed yet."""
    args = ["notices", "preview", "--profile", "fort-plain", "--data", str(store), "--notice-date", "2027-03-01"]
    shown = CliRunner().invoke(main, args)
    assert shown.exit_code == 0, shown.output
    assert "No notice register yet" in shown.stderr and "notice(s) to" in shown.stdout
    assert not list(tmp_path.glob("*register*")) and not read_setting(str(store), "register")
    doc = json.loads(CliRunner().invoke(main, [*args, "--json"]).stdout)
    assert doc["notices"]
    # A register named by path must exist: a typo is never previewed against an empty one.
    typo = CliRunner().invoke(main, [*args, "--register", str(tmp_path / "town-registr.sqlite")])
    assert typo.exit_code == 2 and "There is no notice register" in typo.output


# -- a connection made without a notice ---------------------------------------------------------------------------


def test_a_connection_made_without_a_notice_is_recorded_with_who_and_when(register, results):
    """A parcel held back (its letter could not be written) or never noticed could not be recorded connected:
    `notices mark` said it "has no open notice", so it stayed one to notice in every later batch. A record of its
    own (type record, no letter, no deadline) keeps the day it connected, who recorded it and when."""
    due = due_notices(results, profile=FP, notice_date=DAY)
    parcel = str(due["parcel_id"].iloc[0])
    with pytest.raises(LayerError, match="has no open notice.*notices record"):
        register.mark(parcel, "connected", actor="clerk")
    done = register.record(parcel, "connected", on="2027-02-10", actor="cli:clerk", note="permit 2027-14")
    assert done["parcel_id"] == parcel and done["record_id"].startswith("R-")
    rows = register.notices_of(parcel)
    assert len(rows) == 1 and rows[0]["notice_type"] == "record" and rows[0]["status"] == "connected"
    assert _day(rows[0]["issued_date"]) == dt.date(2027, 2, 10) and rows[0]["deadline"] is None
    assert rows[0]["note"] == "permit 2027-14" and rows[0]["is_open"] == 0 and rows[0]["letter_file"] is None
    events = register.events_of(done["record_id"])
    assert [(e["actor"], e["action"], e["new_value"]) for e in events][0] == ("cli:clerk", "recorded", "connected")
    assert parcel in register.excluded_parcels()  # never noticed again
    again = _issue(register, due_notices(results, profile=FP, notice_date=DAY, exclude=register.excluded_parcels()))
    assert parcel not in {n["parcel_id"] for n in again["notices"]}
    with pytest.raises(LayerError, match="already recorded connected"):
        register.record(parcel, "connected", on="2027-02-11", actor="clerk")
    # A parcel with an open notice is marked, not recorded: its notice would stay open beside the record.
    noticed = again["notices"][0]["parcel_id"]
    with pytest.raises(OpenNoticeError, match="open notice.*record the connection on that notice .mark it connected."):
        register.record(noticed, "connected", on="2027-02-10", actor="clerk")
    # A parcel exempted whose owner connects all the same is recorded connected (it was refused "already recorded
    # exempt", while `mark` sent the clerk to `record`; a tester).
    exempted = again["notices"][1]["parcel_id"]
    register.mark(exempted, "exempt", actor="clerk", note="hardship")
    register.record(exempted, "connected", on="2027-03-05", actor="clerk")
    assert [(r["notice_type"], r["status"]) for r in register.notices_of(exempted)][-1] == ("record", "connected")
    with pytest.raises(LayerError, match="does not exist"):
        register.record("x", "connected", on="2027-02-30", actor="clerk")
    with pytest.raises(LayerError, match="Only a connection is recorded without a notice.*provide no exemption"):
        register.record("x", "exempt", on="2027-02-10", actor="clerk")


def test_two_clerks_recording_one_parcel_at_once_make_one_record(register, results, monkeypatch):
    """On PostgreSQL two clerks recording the same parcel at the same moment both read "no record yet" and both
    wrote one (SQLite's BEGIN IMMEDIATE queues the second behind the first). One record per parcel is the register's
    own rule now (a partial unique index): the second is refused, saying the parcel is already recorded."""
    import threading
    import uuid

    parcel = str(due_notices(results, profile=FP, notice_date=DAY)["parcel_id"].iloc[0])
    meet = threading.Barrier(2, timeout=3)
    made = uuid.uuid4

    def both_have_read():  # called once a clerk has read the parcel's rows and is about to write its record
        with contextlib.suppress(threading.BrokenBarrierError):  # SQLite: the other waits for the write lock
            meet.wait()
        return made()

    monkeypatch.setattr(uuid, "uuid4", both_have_read)
    done, refused = [], []

    def clerk(name: str) -> None:
        try:
            done.append(register.record(parcel, "connected", on="2027-02-10", actor=name))
        except LayerError as exc:
            refused.append(str(exc))

    clerks = [threading.Thread(target=clerk, args=(f"clerk{i}",)) for i in (1, 2)]
    for t in clerks:
        t.start()
    for t in clerks:
        t.join(30)
    monkeypatch.undo()
    assert len(done) == 1 and len(refused) == 1, (done, refused)
    assert re.search(rf"Parcel {re.escape(parcel)} is already recorded connected \(R-", refused[0]), refused[0]
    rows = register.notices_of(parcel)
    assert [(r["notice_type"], r["notice_id"]) for r in rows] == [("record", done[0]["record_id"])]


def _day(value) -> dt.date:
    return value if isinstance(value, dt.date) else dt.date.fromisoformat(value)


def test_cli_records_a_connection_for_a_parcel_held_back_or_never_noticed(tmp_path, small_town, small_results):
    """`notices mark 1.1-1-5 connected` said "Parcel 1.1-1-5 has no open notice." for a parcel held back (its owner
    had no mailing address): the clerk could not record that its owner connected on their own."""
    town = {k: v.copy() for k, v in small_town.items()}
    parcel = str(small_results.loc[small_results["status"] == "mandated", "parcel_id"].iloc[0])
    town["parcels"].loc[town["parcels"]["parcel_id"].astype(str) == parcel, "mail_address"] = None
    store = tmp_path / "town.gpkg"
    write_layers(str(store), town)
    town_file(tmp_path)
    first = json.loads(_issue_cli(store, tmp_path / "out", "--new").stdout)
    assert parcel in {str(h["parcel_id"]) for h in first["held"]}
    refused = invoke("notices", "mark", parcel, "connected", "--store", store, ok=False)
    assert refused.exit_code == 2 and f"notices record {parcel} connected" in refused.output
    later = invoke("notices", "record", parcel, "connected", "--on", "2027-03-01", "--store", store, ok=False)
    assert later.exit_code == 2 and "after today" in later.output
    done = invoke("notices", "record", parcel, "connected", "--on", "2027-02-10", "--note", "seen", "--store", store)
    assert f"{parcel}: recorded connected on 2027-02-10" in done.output
    rows = json.loads(invoke("notices", "list", "--store", store, "--json").stdout)["notices"]
    mine = [r for r in rows if r["parcel_id"] == parcel]
    assert [(r["notice_type"], r["status"], r["issued_date"]) for r in mine] == [("record", "connected", "2027-02-10")]
    # The table said "viol" for the record (no violation was ever given) and "nan" for its owner.
    table = CliRunner(env={"COLUMNS": "200"}).invoke(main, ["notices", "list", "--store", str(store)])
    row = next(line for line in table.output.splitlines() if parcel in line and "2027-02-10" in line)
    assert " record " in f" {row} " and " viol " not in f" {row} " and "nan" not in row, row
    typo = invoke("notices", "record", "NO-SUCH-PARCEL", "connected", "--on", "2027-02-10", "--store", store, ok=False)
    assert typo.exit_code == 2 and "NO-SUCH-PARCEL" in typo.output
    noticed = next(str(n["parcel_id"]) for n in first["notices"])  # one with an open notice: the command that marks it
    open_one = invoke("notices", "record", noticed, "connected", "--on", "2027-02-10", "--store", store, ok=False)
    said = " ".join(open_one.output.split())
    how = f"`sewerplan notices mark {noticed} connected --on 2027-02-10`"
    assert f"record the connection on that notice ({how})" in said
    again = json.loads(_issue_cli(store, tmp_path / "out").stdout)  # the next batch neither notices nor holds it
    assert again["issued"] == 0 and parcel not in {str(h["parcel_id"]) for h in again["held"]}


# -- a register a killed `issue --new` left unrecorded ------------------------------------------------------------

_LEFT = {
    # `issue --new` killed after the register's schema was written, before the store recorded it
    "migrated": "from layers.register import Register; Register(sys.argv[1], create=True); os._exit(0)",
    # killed while SQLite was creating the file: the database has no table yet
    "empty": "import sqlite3; c = sqlite3.connect(sys.argv[1].removeprefix('sqlite:///')); c.execute('PRAGMA "
    "journal_mode=WAL'); c.execute('BEGIN IMMEDIATE'); os._exit(0)",
    # killed with the schema in the write-ahead log, not yet in the file: -wal and -shm beside it
    "wal": "import sqlite3; from layers.register import Register; c = sqlite3.connect(sys.argv[1].removeprefix("
    "'sqlite:///')); c.execute('PRAGMA journal_mode=WAL'); c.execute('PRAGMA wal_autocheckpoint=0'); "
    "c.execute('SELECT 1 FROM sqlite_master').fetchall(); Register(sys.argv[1], create=True); os._exit(0)",
    # killed while SQLite switched the new file to WAL, in a rollback journal: its first page written and a hot
    # -journal beside it, which a read-only check cannot roll back ("is not a notice register", even with --new)
    "journal": "import sqlite3; c = sqlite3.connect(sys.argv[1].removeprefix('sqlite:///'), isolation_level=None); "
    "c.execute('PRAGMA cache_size=1'); c.execute('BEGIN IMMEDIATE'); c.execute('CREATE TABLE t (x)'); "
    "c.executemany('INSERT INTO t VALUES (?)', [('x' * 500,)] * 200); os._exit(0)",
}


@pytest.mark.parametrize("left", sorted(_LEFT))
def test_a_register_a_killed_first_issue_left_unrecorded_is_named_and_taken_with_new(store, tmp_path, left):
    """`notices issue --new` killed right after creating the register left town-register.sqlite (sometimes with
    -wal and -shm) beside the store, not recorded in it; the rerun without --new said "No register exists yet"."""
    path = store.with_name("town-register.sqlite")
    code = f"import os, sys\n{_LEFT[left]}"
    subprocess.run([sys.executable, "-c", code, f"sqlite:///{path}"], check=True, cwd=Path(__file__).parents[1])
    assert path.exists() and read_setting(store, "register") is None
    assert path.with_name(path.name + "-wal").exists() == (left in ("empty", "wal"))
    assert path.with_name(path.name + "-journal").exists() == (left == "journal")
    args = ["notices", "issue", "--profile", "fort-plain", "--data", store, "--notice-date", "2027-03-01"]
    refused = invoke(*args, "--out", tmp_path / "out", ok=False)
    said = " ".join(refused.output.split())
    assert refused.exit_code == 2 and "No register exists yet" not in said, said
    assert f"{path}" in said and "the store does not record" in said and "--new" in said, said
    listed = invoke("notices", "list", "--store", store, ok=False)
    assert listed.exit_code == 2 and "the store does not record" in " ".join(listed.output.split())
    done = json.loads(_issue_cli(store, tmp_path / "out", "--new").stdout)  # takes it as the town's register
    assert done["issued"] > 0 and read_setting(store, "register") == str(path)


# -- a batch's lock file a killed process left ---------------------------------------------------------------------


def test_the_lock_file_of_a_batch_killed_before_it_was_recorded_goes_with_the_next_issue(store, tmp_path, first_batch):
    """`notices issue` takes the batch's lock (``.<batch ID>.lock`` in the output folder) before it records the
    batch. Killed in between, it left the lock file, which nothing deleted: no batch of that ID is in the register
    for ``settle`` to take it. The next issue into that folder deletes it, since no process holds its lock."""
    out = tmp_path / "out"
    register = Register(store=store, create=False)
    for n in first_batch["notices"][:2]:
        register.mark(n["parcel_id"], "withdrawn", actor="t")
    killed = (
        "import os, sys; from layers.register import Register; "
        "Register.prepare_batch = lambda *a, **k: os._exit(9); "
        "from gisapp.cli import main; main(sys.argv[1:])"
    )
    args = ["notices", "issue", "--profile", "fort-plain", "--data", store, "--notice-date", "2027-03-01"]
    died = subprocess.run([sys.executable, "-c", killed, *map(str, args), "--out", str(out)], capture_output=True)
    assert died.returncode == 9, died.stderr
    left = sorted(p.name for p in out.glob(".B*.lock"))
    assert len(left) == 1 and register.batch(left[0][1:-5]) is None  # never recorded
    again = json.loads(_issue_cli(store, out).stdout)
    assert again["issued"] == 2 and list(out.glob(".*.lock")) == []


def test_a_batch_lock_deleted_between_its_open_and_its_lock_is_taken_anew(tmp_path, monkeypatch):
    """The lock file is deleted by whoever holds the lock when done, a killed process's by the next issue
    (``clear_stale_locks``). A process that opened it just before and locked it just after held a lock on a file
    nobody else could find: a second process made a new file, locked it too, and both worked on the batch (a
    ``settle`` cancelling the batch its live writer was writing). Once locked, the file must still be there."""
    import fcntl

    from gisapp import notices

    batch = new_batch_id(DAY)
    path = tmp_path / f".{batch}.lock"
    flock = fcntl.flock
    deleted = []

    def deleted_first(fd, how):
        if not deleted:  # the holder (or the next issue, for a killed one's) deletes it just now
            deleted.append(path.name)
            path.unlink()
        return flock(fd, how)

    monkeypatch.setattr(fcntl, "flock", deleted_first)
    with notices.batch_lock(tmp_path, batch) as mine:
        assert mine and deleted and path.exists()
        with notices.batch_lock(tmp_path, batch, wait=False) as other:
            assert other is False  # one holder at a time
        assert notices.clear_stale_locks(tmp_path) == [] and path.exists()  # a live writer's lock stays
    assert not path.exists()


def test_the_notices_page_asks_of_a_lock_its_writer_deletes_meanwhile_without_an_error(tmp_path, monkeypatch):
    """The notices page asks of each prepared batch whether its writer is gone (``interrupted``). It looked for the
    lock file, then opened it: a writer finishing between the two deleted it, and the page failed with "No such
    file". And a file it locked after its writer deleted it was taken for the batch's lock, though a live writer
    held the one under the name. Now a lock gone is a writer gone, and the file under the name is the one asked."""
    import fcntl

    from gisapp import notices

    batch = new_batch_id(DAY)
    prepared = {"batch_id": batch, "status": "prepared", "folder": str(tmp_path)}
    path = tmp_path / f".{batch}.lock"
    opened = os.open

    def deleted_first(where, *args, **kwargs):
        if Path(where) == path and path.exists():
            path.unlink()  # its writer is done, just now
        return opened(where, *args, **kwargs)

    path.touch()
    with monkeypatch.context() as m:
        m.setattr(os, "open", deleted_first)
        assert notices.interrupted(prepared) is True

    flock = fcntl.flock
    live = []

    def replaced_first(fd, how):
        if not live and how & fcntl.LOCK_SH:  # the old file goes, a live writer makes and locks a new one
            path.unlink()
            live.append(os.open(path, os.O_RDWR | os.O_CREAT, 0o644))
            flock(live[0], fcntl.LOCK_EX)
        return flock(fd, how)

    path.touch()
    with monkeypatch.context() as m:
        m.setattr(fcntl, "flock", replaced_first)
        try:
            assert notices.interrupted(prepared) is False
        finally:
            os.close(live[0])


def test_cli_issue_with_occupant_counts_the_copies_among_the_letters_it_wrote(store, tmp_path):
    """`issue --occupant` said "8 notice(s) issued ... in 8 letter(s)" while 9 files were written: the copy to the
    occupant at the site was not counted (a tester). The letters said are the files in the batch's letters/."""
    args = ["notices", "issue", "--profile", "fort-plain", "--data", store, "--notice-date", "2027-03-01"]
    said = " ".join(invoke(*args, "--out", tmp_path / "out", "--new", "--occupant").output.split())
    batch = next(p for p in (tmp_path / "out").iterdir() if p.is_dir() and not p.name.startswith("."))
    files = len(list((batch / "letters").glob("*.pdf")))
    mailing = pd.read_csv(batch / "mailing-list.csv", dtype=str, keep_default_na=False, encoding="utf-8-sig")
    copies = int((mailing["name_line_1"] == "Occupant").sum())
    assert 0 < copies < files
    assert (
        f"in {files - copies} letter(s) to the owners and {copies} copy(ies) to the occupant at the site, "
        f"{files} letter(s) in all." in said
    )


def test_cli_violations_say_how_many_enforced_notices_have_no_proof_of_service(
    first_batch, store, tmp_path, monkeypatch
):
    """`notices violations` gave violation notices on connection notices with no article number and no service
    recorded without a word (a tester): the preview and the issue say how many have no proof of service, and the
    commands that record it; a notice whose receipt's number is recorded is not counted."""
    args = ["notices", "violations", "--profile", "fort-plain", "--as-of", "2027-06-02", "--store", store]
    preview = json.loads(invoke(*args, "--json").output)
    enforced = {n["original_notice_id"] for n in preview["notices"]}
    assert len(enforced) > 1 and set(preview["without_proof_of_service"]) == enforced
    said = " ".join(invoke(*args).output.split())
    assert (
        f"Warning: {len(enforced)} of the {len(enforced)} connection notices these violation notices enforce have no "
        "proof of service recorded (no certified mail article number, no service in person)" in said
    )
    assert "`sewerplan notices record-mailing --from mailing-list.csv`" in said
    assert "`sewerplan notices record-service NOTICE --on DATE --by NAME`" in said
    mailed = sorted(enforced)[0]  # one receipt's number recorded: that notice is proven
    mailing = pd.read_csv(first_batch["mailing_list"], dtype=str, keep_default_na=False, encoding="utf-8-sig")
    row = mailing[mailing["notice_ids"].str.split("; ").map(lambda ids: mailed in ids)].index[0]
    mailing["certified_article_no"] = ""
    mailing.loc[row, "certified_article_no"] = "9589 0710 5270 0123 4567 81"
    mailing.to_csv(tmp_path / "back.csv", index=False)
    invoke("notices", "record-mailing", "--from", tmp_path / "back.csv", "--store", store)
    monkeypatch.setenv("SEWERPLAN_TODAY", "2027-06-02")  # violation notices are issued on their day
    said = " ".join(invoke(*args, "--out", tmp_path / "violations").output.split())
    assert "violation notice(s) issued" in said and mailed not in said
    assert f"Warning: {len(enforced) - 1} of the {len(enforced)} connection notices" in said


@pytest.mark.parametrize(
    ("resolution", "says"),
    [
        ('"mandate.distance_ft" = { days = 100, act = "Resolution 10 of 2027" }', "Use --set mandate.distance_ft=100."),
        (
            '"mandate.distance_ft" = { value = 100, act = "Resolution 10 of 2027" }',
            "Use --set mandate.distance_ft=100.",
        ),
        ('"mandate.notice_days" = { days = 60, act = "Resolution 9 of 2027" }', "no profile has a rule"),
    ],
)
def test_a_resolution_the_town_settings_cannot_apply_is_refused_never_ignored(store, tmp_path, resolution, says):
    """A distance put in [resolutions] (`"mandate.distance_ft" = { days = 100, act = ... }`) was accepted and ignored
    without a word (a tester): the town's acts set periods only, so any other key is refused, naming the periods and,
    for a rule of the profile, the way to set it on the run."""
    town_file(tmp_path, f"{resolution}\n")  # the example town settings end in [resolutions]
    args = ["notices", "preview", "--profile", "wappinger", "--data", store, "--notice-date", "2027-03-01"]
    refused = invoke(*args, "--set", "mandate.distance_ft=150", ok=False)
    said = " ".join(refused.output.split())
    assert refused.exit_code != 0 and "is not a period the town's resolutions can set" in said, said
    assert '(they set only "mandate.notice_period_days" and "notices.correction_period_days", in days)' in said
    assert says in said


def test_a_resolution_of_the_laws_own_period_is_refused_by_the_run_and_the_preview(store, tmp_path):
    """town.toml's [resolutions] "mandate.notice_period_days" = { days = 60, ... } beside a Fort Plain store was read
    and ignored: the run's deadlines and the preview counted § 144-4's 90 days with no word of the file's 60."""
    town_file(tmp_path, '"mandate.notice_period_days" = { days = 60, act = "Resolution 9 of 2027" }\n')
    data = ["--profile", "fort-plain", "--data", store, "--notice-date", "2027-03-01"]
    for args in (["analyze", *data, "--out", store], ["notices", "preview", *data]):
        refused = invoke(*args, ok=False)
        said = " ".join(refused.output.split())
        assert refused.exit_code != 0, said
        assert (
            'town.toml: [resolutions] "mandate.notice_period_days" (60 days, Resolution 9 of 2027) names a period the '
            "law sets: § 144-4 sets 90 days, and a resolution of the town cannot change it here. Remove it from "
            "[resolutions]"
        ) in said
        assert "Use --set mandate.notice_period_days=N." in said


def test_a_broken_town_file_does_not_stop_a_run_whose_law_sets_the_period(store, tmp_path):
    """Fort Plain's § 144-4 sets the 90 days: the run reads town.toml only to refuse a resolution replacing them, so
    a file that does not load (a typo in the office's phone table) leaves the run's deadlines to the law, and the
    letters refuse the file; it had stopped `analyze --notice-date` with the town file's error."""
    (tmp_path / "town.toml").write_text("[office\nphone = 1\n", encoding="utf-8")
    data = ["--profile", "fort-plain", "--data", store, "--notice-date", "2027-03-01"]
    ran = invoke("analyze", *data, "--out", store, "--json")
    assert json.loads(ran.output[ran.output.index("{") :])["summary"]["counts"]["mandated"] > 0
    refused = invoke("notices", "preview", *data, ok=False)
    assert refused.exit_code != 0 and "is not valid TOML" in " ".join(refused.output.split())
