"""Connection notices: who gets one, mailing lists, letters and labels, and a register that never loses or
duplicates a notice (SQLite and PostgreSQL)."""

from __future__ import annotations

import csv
import datetime as dt
import json
import os
import signal
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

from analysis.errors import AnalysisError
from analysis.mandate import analyze_mandates
from analysis.notices import due_notices, mailing_list, neutralise
from analysis.profiles import load_profile
from gisapp.cli import main
from layers.letters import write_labels, write_letter, write_mailing_list
from layers.register import Register
from layers.sample import sample_town
from layers.write import write_layers

FP, PK = load_profile("fort-plain"), load_profile("poughkeepsie")
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def town():
    return sample_town(300)


@pytest.fixture(scope="module")
def results(town):
    parcels = town["parcels"].assign(connected=town["parcels"]["connected"] == "Y")
    return analyze_mandates(
        parcels, town["mains"], streets=town["streets"], buildings=town["buildings"], profile=FP
    ).parcels


def _fresh_postgres(url: str) -> None:
    """Drop every register table (from the register's own metadata) and Alembic's version table."""
    from layers.register import METADATA

    engine = create_engine(url)
    METADATA.drop_all(engine)
    with engine.begin() as con:
        con.execute(text("DROP TABLE IF EXISTS alembic_version"))
    engine.dispose()


def _pg_url():
    return os.environ.get("SEWERPLAN_TEST_POSTGRES_URL")


@pytest.fixture(params=["sqlite", "postgres"])
def register(request, tmp_path):
    if request.param == "sqlite":
        reg = Register(str(tmp_path / "register.sqlite"))
    else:
        url = _pg_url()
        if not url:
            if os.environ.get("CI"):
                pytest.fail("SEWERPLAN_TEST_POSTGRES_URL is not set: .ci/run must start PostgreSQL.")
            pytest.skip("no PostgreSQL (set SEWERPLAN_TEST_POSTGRES_URL)")
        _fresh_postgres(url)
        reg = Register(url)
    yield reg
    reg.close()


def test_due_notices_and_the_poughkeepsie_reason(results):
    due = due_notices(results, profile=FP, notice_date=dt.date(2027, 3, 1))
    assert len(due) == (results["status"] == "mandated").sum()
    assert set(due["deadline"]) == {"2027-05-30"} and set(due["section"]) == {"§ 144-4"}
    with pytest.raises(AnalysisError, match="public_health_hazard"):
        due_notices(results, profile=PK, notice_date=dt.date(2027, 3, 1))
    pk = due_notices(results, profile=PK, notice_date=dt.date(2027, 3, 1), notice_reason="highway_improvement")
    assert set(pk["notice_reason"]) == {"highway_improvement"} and set(pk["deadline"]) == {"2027-03-31"}
    with pytest.raises(AnalysisError, match="notice_period_days"):
        due_notices(results, profile=load_profile("wappinger"), notice_date=dt.date(2027, 3, 1))
    skipped = due_notices(results, profile=FP, notice_date=dt.date(2027, 3, 1), exclude={due["parcel_id"][0]})
    assert len(skipped) == len(due) - 1


def test_one_envelope_per_owner_address():
    notices = pd.DataFrame(
        {
            "parcel_id": ["A", "B", "C", "D"],
            "owner_name": ["SMITH JOHN", "Smith, John", "SMITH JOHN", "JONES MARY"],
            "mail_address": ["12 Lake Rd.", "12  LAKE RD", "12 Lake Rd", "12 Lake Rd"],
            "mail_city": ["Albany", "ALBANY", "Albany", "Albany"],
            "mail_state": ["NY", "ny", "NY", "NY"],
            "mail_zip": ["12203-4411", "12203", "12204", "12203"],
            "site_address": ["1 Main St", "3 Main St", "5 Main St", "7 Main St"],
            "site_city": "Fort Plain",
            "site_state": "NY",
            "site_zip": "13339",
            "deadline": ["2027-05-30", "2027-05-01", "2027-05-30", "2027-05-30"],
            "section": "§ 144-4",
        }
    )
    rows = mailing_list(notices)
    assert rows["parcel_ids"].tolist() == ["A; B", "C", "D"]  # case, spacing, punctuation, ZIP+4; C's ZIP differs
    assert rows.loc[0, "deadline"] == "2027-05-01" and rows.loc[0, "notices"] == 2
    assert len(mailing_list(notices, per_parcel=True)) == 4
    with_occupants = mailing_list(notices, occupant=True)
    assert (with_occupants["name_line_1"] == "Occupant").sum() == 4
    assert set(with_occupants.loc[with_occupants["name_line_1"] == "Occupant", "city"]) == {"Fort Plain"}


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
    with open(path, newline="", encoding="utf-8") as f:
        header, row = list(csv.reader(f))
    assert dict(zip(header, row, strict=True)) == {"name_line_1": safe, "zip": "01234"}


def test_bom_option(tmp_path):
    plain = write_mailing_list(tmp_path / "a.csv", pd.DataFrame({"name_line_1": ["Ñandú"]}))
    bom = write_mailing_list(tmp_path / "b.csv", pd.DataFrame({"name_line_1": ["Ñandú"]}), bom=True)
    assert not Path(plain).read_bytes().startswith(b"\xef\xbb\xbf")
    assert Path(bom).read_bytes().startswith(b"\xef\xbb\xbf")


def test_letter_and_labels_render(tmp_path, results, town):
    due = due_notices(results, profile=PK, notice_date=dt.date(2027, 3, 1), notice_reason="public_health_hazard")
    row = due.iloc[0].to_dict() | {"notice_id": "N-TEST", "reason": "public_health_hazard"}
    parcel = results.set_index("parcel_id").geometry[row["parcel_id"]]
    letter = write_letter(tmp_path / "l.pdf", row, profile=PK, parcel=parcel, mains=town["mains"].geometry.values[:5])
    words = " ".join(PdfReader(letter).pages[0].extract_text().split())
    for expected in (
        row["owner_name"],
        row["parcel_id"],
        "§ 168-22.2G",
        "2027-03-31",
        "within 300 feet",
        f"{row['distance_ft']:.1f} feet",
        "to eliminate a public health hazard",
        "N-TEST",
    ):
        assert expected in words, expected
    rows = mailing_list(due)
    labels = PdfReader(write_labels(tmp_path / "labels.pdf", rows))
    assert len(labels.pages) == -(-len(rows) // 30)
    first = " ".join(labels.pages[0].extract_text().split())
    assert rows.loc[0, "name_line_1"] in first and rows.loc[0, "address_line_1"] in first


def test_issue_is_idempotent_and_connected_parcels_stay_closed(register, results):
    due = due_notices(results, profile=FP, notice_date=dt.date(2027, 3, 1), exclude=register.excluded_parcels())
    issued, already = register.issue(due, actor="test")
    assert len(issued) == len(due) > 0 and already == 0
    again, already = register.issue(due, actor="test")  # double click, or a re-run
    assert again == [] and already == len(due)
    first = issued[0]["parcel_id"]
    register.mark(first, "connected", actor="clerk", note="inspected 2027-04-02")
    rerun = due_notices(results, profile=FP, notice_date=dt.date(2027, 6, 1), exclude=register.excluded_parcels())
    assert first not in set(rerun["parcel_id"])  # never re-noticed
    second = issued[1]["parcel_id"]
    register.mark(second, "withdrawn", actor="clerk")
    assert second in set(
        due_notices(results, profile=FP, notice_date=dt.date(2027, 6, 1), exclude=register.excluded_parcels())[
            "parcel_id"
        ]
    )
    with pytest.raises(ValueError, match="--until"):
        register.mark(issued[2]["parcel_id"], "extended", actor="clerk")
    register.mark(issued[2]["parcel_id"], "extended", actor="clerk", deadline="2027-08-01")
    listing = register.listing()
    assert listing.loc[listing["parcel_id"] == issued[2]["parcel_id"], "deadline"].iloc[0] == "2027-08-01"
    history = register.events_of(issued[0]["notice_id"])
    assert [(e["action"], e["field"], e["new_value"]) for e in history] == [
        ("issued", "status", "open"),
        ("marked", "status", "connected"),
        ("marked", "note", "inspected 2027-04-02"),
    ]
    overdue = register.listing(overdue_on=dt.date(2027, 6, 1))
    assert issued[2]["parcel_id"] not in set(overdue["parcel_id"]) and len(overdue) == len(due) - 3


def test_database_refuses_a_second_open_notice(register, results):
    due = due_notices(results, profile=FP, notice_date=dt.date(2027, 3, 1)).head(1)
    register.issue(due, actor="a")
    from sqlalchemy.exc import IntegrityError

    from layers.register import _notice_values, notices

    with pytest.raises(IntegrityError), register.transaction() as con:
        con.execute(notices.insert().values(**_notice_values(due.iloc[0].to_dict(), None)))


WRITER = textwrap.dedent("""
    import sys, time, datetime as dt, pandas as pd
    from layers.register import Register
    reg = Register(sys.argv[1])
    due = pd.read_json(sys.argv[2], dtype={"parcel_id": str, "deadline": str, "issued_date": str})
    def pause(i):
        if sys.argv[3] == "slow":
            print(f"inserted {i + 1}", flush=True)
            time.sleep(0.2)
    issued, already = reg.issue(due, actor=sys.argv[4], pause=pause)
    print(f"done {len(issued)} {already}", flush=True)
""")


def _writer(reg_url, due_path, mode, actor):
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, reg_url, str(due_path), mode, actor], cwd=REPO, stdout=subprocess.PIPE, text=True
    )


def _due_file(tmp_path, results, n=None):
    due = due_notices(results, profile=FP, notice_date=dt.date(2027, 3, 1))
    due = due.head(n) if n else due
    path = tmp_path / "due.json"
    due.to_json(path)
    return due, path


def test_kill_9_mid_batch_leaves_nothing_half_done(tmp_path, results):
    url = str(tmp_path / "register.sqlite")
    Register(url).close()
    due, path = _due_file(tmp_path, results, 20)
    writer = _writer(url, path, "slow", "killed")
    for line in writer.stdout:
        if line.startswith("inserted 5"):
            break
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait()
    writer.stdout.close()
    reg = Register(url)
    assert reg.integrity_ok()
    assert len(reg.listing()) == 0  # the batch is all there or not there: here, not there
    issued, _ = reg.issue(due, actor="retry")
    assert len(issued) == 20 and len(reg.listing()) == 20


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_two_processes_issuing_at_once_create_no_duplicates(tmp_path, results, backend):
    if backend == "postgres":
        url = _pg_url()
        if not url:
            if os.environ.get("CI"):
                pytest.fail("SEWERPLAN_TEST_POSTGRES_URL is not set")
            pytest.skip("no PostgreSQL")
        _fresh_postgres(url)
    else:
        url = str(tmp_path / "register.sqlite")
    Register(url).close()
    due, path = _due_file(tmp_path, results)
    a, b = _writer(url, path, "fast", "planner-a"), _writer(url, path, "fast", "planner-b")
    outs = [p.communicate(timeout=120)[0] for p in (a, b)]
    totals = [tuple(map(int, o.strip().split()[1:])) for o in outs]
    assert sum(t[0] for t in totals) == len(due)  # issued between them exactly once
    listing = Register(url).listing()
    assert len(listing) == len(due) and listing["parcel_id"].is_unique


def test_backup_is_a_consistent_copy(tmp_path, results):
    reg = Register(str(tmp_path / "register.sqlite"))
    reg.issue(due_notices(results, profile=FP, notice_date=dt.date(2027, 3, 1)), actor="t")
    copy = reg.backup(str(tmp_path / "copy.sqlite"))
    assert len(Register(copy).listing()) == len(reg.listing()) and Register(copy).integrity_ok()


class NoticeMachine(RuleBasedStateMachine):
    """Issue, re-run, mark and serve violations in any order: at most one open connection notice per parcel, and a
    parcel marked connected or exempt is never noticed again."""

    results = None

    def __init__(self):
        super().__init__()
        import tempfile

        self.folder = tempfile.mkdtemp(prefix="sewerplan-machine-")
        self.reg = Register(f"{self.folder}/register.sqlite")
        self.closed: set[str] = set()
        self.day = dt.date(2027, 3, 1)

    def _due(self, k):
        due = due_notices(self.results, profile=FP, notice_date=self.day, exclude=self.reg.excluded_parcels())
        return due.head(k)

    @rule(k=st.integers(0, 12))
    def issue(self, k):
        self.reg.issue(self._due(k), actor="machine")

    @rule()
    def rerun_everything(self):
        self.reg.issue(self._due(10_000), actor="machine")

    @rule(pick=st.integers(0, 500), status=st.sampled_from(["connected", "exempt", "withdrawn", "extended"]))
    def mark(self, pick, status):
        open_ = self.reg.listing()
        open_ = open_[open_["is_open"] == 1]
        if open_.empty:
            return
        parcel = open_["parcel_id"].iloc[pick % len(open_)]
        self.reg.mark(parcel, status, actor="machine", deadline="2027-12-31" if status == "extended" else None)
        if status in ("connected", "exempt"):
            self.closed.add(parcel)

    @rule(days=st.integers(1, 200))
    def violations(self, days):
        self.day += dt.timedelta(days=days)
        overdue = self.reg.listing(overdue_on=self.day, notice_type="connection")
        self.reg.issue(
            overdue.assign(
                notice_type="violation",
                issued_date=self.day.isoformat(),
                deadline=(self.day + dt.timedelta(days=30)).isoformat(),
                notice_reason=None,
            ),
            actor="machine",
        )

    @invariant()
    def one_open_notice_per_parcel_and_type(self):
        listing = self.reg.listing()
        open_ = listing[listing["is_open"] == 1]
        assert not open_.duplicated(["parcel_id", "notice_type"]).any()
        connection = listing[listing["notice_type"] == "connection"]
        for parcel in self.closed:
            assert not connection[(connection["parcel_id"] == parcel) & (connection["is_open"] == 1)].shape[0]

    def teardown(self):
        self.reg.close()


def test_notice_state_machine(results):
    NoticeMachine.results = results
    run = NoticeMachine.TestCase
    run.settings = settings(max_examples=15, stateful_step_count=12, deadline=None)
    run().runTest()


def test_cli_issue_json_and_list(tmp_path, town):
    data = tmp_path / "town.gpkg"
    write_layers(str(data), town)
    reg = str(tmp_path / "reg.sqlite")
    args = [
        "notices",
        "issue",
        "--profile",
        "fort-plain",
        "--data",
        str(data),
        "--notice-date",
        "2027-03-01",
        "--out",
        str(tmp_path / "out"),
        "--register",
        reg,
        "--json",
    ]
    first = json.loads(CliRunner().invoke(main, args, catch_exceptions=False).output)
    assert set(first) == {"issued", "already_open", "mailing_list", "labels", "letters", "notices"}
    assert first["issued"] > 0 and len(first["letters"]) == first["issued"]
    assert set(first["notices"][0]) == {"notice_id", "parcel_id", "deadline", "type"}
    again = json.loads(CliRunner().invoke(main, args, catch_exceptions=False).output)
    assert again["issued"] == 0 and again["already_open"] == first["issued"]
    listed = json.loads(CliRunner().invoke(main, ["notices", "list", "--register", reg, "--json"]).output)
    assert len(listed["notices"]) == first["issued"]
    overdue = json.loads(
        CliRunner()
        .invoke(main, ["notices", "list", "--overdue", "--as-of", "2027-06-01", "--register", reg, "--json"])
        .output
    )
    assert len(overdue["notices"]) == first["issued"]
    parcel = first["notices"][0]["parcel_id"]
    marked = CliRunner().invoke(main, ["notices", "mark", parcel, "connected", "--note", "done", "--register", reg])
    assert marked.exit_code == 0
    viol = json.loads(
        CliRunner()
        .invoke(
            main,
            [
                "notices",
                "violations",
                "--profile",
                "wappinger",
                "--as-of",
                "2027-06-01",
                "--register",
                reg,
                "--json",
                "--out",
                str(tmp_path / "v"),
            ],
        )
        .output
    )
    assert viol["issued"] == first["issued"] - 1
    assert viol["notices"][0]["deadline"] == "2027-06-11"  # Wappinger § 196-22A: 10 days
    words = " ".join(PdfReader(viol["letters"][0]).pages[0].extract_text().split())
    assert "§ 196-22A" in words and "§ 196-22B" in words
    pk = CliRunner().invoke(
        main,
        [
            "notices",
            "issue",
            "--profile",
            "poughkeepsie",
            "--data",
            str(data),
            "--notice-date",
            "2027-03-01",
            "--out",
            str(tmp_path / "pk"),
            "--register",
            str(tmp_path / "pk.sqlite"),
        ],
    )
    assert pk.exit_code == 2 and "--notice-reason public_health_hazard" in pk.output
    backup = CliRunner().invoke(main, ["notices", "backup", str(tmp_path / "b.sqlite"), "--register", reg])
    assert backup.exit_code == 0 and Path(tmp_path / "b.sqlite").exists()
    time.sleep(0)
