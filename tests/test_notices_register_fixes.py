"""Four defects a tester found in connection notices on the sample town, each checked as the clerk met it:

1. Two certified mail article numbers swapped in a mailing list could not be put right with ``record-mailing
   --correct``: the list was checked against the numbers it was replacing.
2. A register on a read-only disk was called "not a notice register (it has no notices table)".
3. ``notices mark PARCEL connected`` recorded no day of connection (``--on``).
4. An issue with nothing new to issue left an empty ``--out`` folder behind.

A read-only disk cannot be mounted in a test (and the suite runs as root, whom file modes do not stop): it is
simulated as SQLite and the system meet one, a folder ``os.access`` says cannot be written and an SQLite that
cannot open a WAL register there except ``immutable`` (what a read-only mount does to a register whose write-ahead
log was checkpointed away when its last connection closed)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import sqlite3
from pathlib import Path
from urllib.parse import unquote

import pandas as pd
import pytest

from gisapp import notices as service
from layers.errors import LayerError
from layers.register import HEAD, MailingConflictError, Register, RegisterReadOnlyError
from tests import test_notices as _cli
from tests import test_notices_service as _service
from tests.conftest import register_at
from tests.test_notices import _issue_cli, invoke
from tests.test_notices_service import DAY, N1, N2, N3, _given_back, _issue, _state

# The fixtures this file shares: the small town's store and its first batch issued through the command line, and
# the sample village analysed with its letters' inputs.
small_town, store, first_batch, village = _cli.small_town, _cli.store, _cli.first_batch, _service.village

D1, D2, D3 = (n.replace(" ", "") for n in (N1, N2, N3))


def _numbers(reg: Register) -> dict[str, tuple]:
    rows = reg.listing().set_index("parcel_id")
    return {
        p: tuple(None if pd.isna(v) else v for v in rows.loc[p, ["certified_article_no", "occupant_article_no"]])
        for p in rows.index
    }


# -- 1. a correction is checked against the register as the list leaves it -------------------------------------------


def test_two_owners_numbers_swapped_are_put_right_with_a_correction(register, tmp_path):
    ids = _issue(register, ("P1", "P2", "P3"), {"P1": 1, "P2": 2, "P3": 3})
    first = [(1, ids["P1"], N1), (2, ids["P2"], N2), (3, ids["P3"], N3)]
    service.record_mailing(register, _given_back(tmp_path / "a.csv", first), actor="clerk")
    # The receipts of letters 1 and 2 were typed into each other's rows: the list given back has them in place.
    swapped = _given_back(tmp_path / "b.csv", [(1, ids["P1"], N2), (2, ids["P2"], N1), (3, ids["P3"], N3)])
    before = _state(register)
    with pytest.raises(MailingConflictError, match="record the list again as a correction"):
        service.record_mailing(register, swapped, actor="clerk")  # not asked to correct: refused as before
    assert _state(register) == before
    done = service.record_mailing(register, swapped, actor="clerk", correct=True)
    assert (done["letters"], done["corrected"], done["unchanged"], done["recorded"]) == (3, 2, 1, 0)
    assert _numbers(register) == {"P1": (D2, None), "P2": (D1, None), "P3": (D3, None)}
    for parcel, old, new in (("P1", D1, D2), ("P2", D2, D1)):
        last = [e for e in register.events_of(ids[parcel]) if e["field"] == "certified_article_no"][-1]
        assert (last["actor"], last["action"], last["old_value"], last["new_value"]) == ("clerk", "corrected", old, new)


def test_an_owners_and_an_occupants_numbers_swapped_are_put_right_with_a_correction(register, tmp_path):
    ids = _issue(register, ("P1", "P2"), {"P1": 1, "P2": 2})
    rows = [(1, ids["P1"], N1), (3, ids["P1"], N2), (2, ids["P2"], N3)]  # row 3: P1's copy to the occupant
    service.record_mailing(register, _given_back(tmp_path / "a.csv", rows, occupant=3), actor="clerk")
    swapped = [(1, ids["P1"], N2), (3, ids["P1"], N1), (2, ids["P2"], N3)]
    done = service.record_mailing(
        register, _given_back(tmp_path / "b.csv", swapped, occupant=3), actor="clerk", correct=True
    )
    assert (done["corrected"], done["occupant_corrected"], done["unchanged"]) == (1, 1, 1)
    assert _numbers(register) == {"P1": (D2, D1), "P2": (D3, None)}
    corrected = [(e["field"], e["old_value"], e["new_value"]) for e in register.events_of(ids["P1"])]
    assert ("certified_article_no", D1, D2) in corrected and ("occupant_article_no", D2, D1) in corrected


@pytest.mark.parametrize(
    ("rows", "says"),
    [
        # P2 keeps N2 (it is not in the list): a number another envelope still holds
        ([(1, "{P1}", N2)], "article number {N2} is already recorded for notice {P2} (letter 0002"),
        # P1 takes P2's number and P2 P3's, but P3 is not in the list and still holds it
        ([(1, "{P1}", N2), (2, "{P2}", N3)], "article number {N3} is already recorded for notice {P3} (letter 0003"),
        # one number on two rows of the list
        ([(1, "{P1}", N2), (2, "{P2}", N2)], "article number {N2} is given on rows 2 and 3 of "),
    ],
)
def test_a_correction_still_refuses_a_number_held_elsewhere_or_given_twice(register, tmp_path, rows, says):
    ids = _issue(register, ("P1", "P2", "P3"), {"P1": 1, "P2": 2, "P3": 3})
    first = [(1, ids["P1"], N1), (2, ids["P2"], N2), (3, ids["P3"], N3)]
    service.record_mailing(register, _given_back(tmp_path / "a.csv", first), actor="clerk")
    before = _state(register)
    back = _given_back(tmp_path / "b.csv", [(no, n.format(**ids), number) for no, n, number in rows])
    with pytest.raises(LayerError) as refused:
        service.record_mailing(register, back, actor="clerk", correct=True)
    assert says.format(**ids, N2=N2, N3=N3) in str(refused.value) and "nothing was written" in str(refused.value)
    assert _state(register) == before


def test_the_command_corrects_swapped_numbers(runner, tmp_path):
    reg = Register(str(tmp_path / "register.sqlite"), create=True)
    ids = _issue(reg, ("P1", "P2"), {"P1": 1, "P2": 2})
    service.record_mailing(reg, _given_back(tmp_path / "a.csv", [(1, ids["P1"], N1), (2, ids["P2"], N2)]), actor="c")
    reg.close()
    swapped = _given_back(tmp_path / "b.csv", [(1, ids["P1"], N2), (2, ids["P2"], N1)])
    where = ("--register", tmp_path / "register.sqlite")
    said = runner.invoke("notices", "record-mailing", "--from", swapped, *where, "--correct", ok=True).stdout
    assert "0 notice(s) newly, 2 corrected, 0 already recorded" in said
    listed = runner.json("notices", "list", *where)["notices"]
    assert {n["parcel_id"]: n["certified_article_no"] for n in listed} == {"P1": D2, "P2": D1}


# -- 2. a register on a read-only disk ------------------------------------------------------------------------------


def _read_only_disk(monkeypatch, folder: Path, *, permissions_tell: bool = True) -> None:
    """``folder`` as on a read-only mount: SQLite opens a WAL register there only ``immutable`` (a plain or
    ``mode=ro`` open says "unable to open database file"; a write to an immutable one "attempt to write a readonly
    database", SQLite's own), and, where ``permissions_tell``, ``os.access`` says nothing there can be written."""
    real_connect, real_access = sqlite3.connect, os.access
    inside = str(folder.resolve())

    def connect(database, *args, **kwargs):
        where = unquote(str(database))
        if inside in where and "immutable=1" not in where:
            raise sqlite3.OperationalError("unable to open database file")
        return real_connect(database, *args, **kwargs)

    def access(path, mode, *args, **kwargs):
        if mode & os.W_OK and str(Path(path).resolve()).startswith(inside):
            return False
        return real_access(path, mode, *args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", connect)
    monkeypatch.setattr(sqlite3.dbapi2, "connect", connect)  # the module SQLAlchemy connects through
    if permissions_tell:
        monkeypatch.setattr(os, "access", access)


@pytest.fixture
def on_disk(tmp_path) -> tuple[Path, dict[str, str]]:
    """A register holding three issued notices in its own folder, closed (no write-ahead log left beside it)."""
    path = tmp_path / "share" / "register.sqlite"
    path.parent.mkdir()
    reg = Register(str(path), create=True)
    ids = _issue(reg, ("P1", "P2", "P3"), {"P1": 1, "P2": 2, "P3": 3})
    reg.close()
    assert not path.with_name("register.sqlite-wal").exists()
    return path, ids


@pytest.mark.parametrize("permissions_tell", [True, False], ids=["read-only-folder", "found-by-sqlite"])
def test_a_register_on_a_read_only_disk_is_read_and_a_change_is_refused_saying_why(
    on_disk, runner, tmp_path, monkeypatch, permissions_tell
):
    path, ids = on_disk
    before = path.read_bytes()
    _read_only_disk(monkeypatch, path.parent, permissions_tell=permissions_tell)
    where = ("--register", path)
    listed = runner.json("notices", "list", *where)["notices"]
    assert sorted(n["parcel_id"] for n in listed) == ["P1", "P2", "P3"]
    (tmp_path / "copies").mkdir()
    copied = runner.json("notices", "backup", tmp_path / "copies" / "register.sqlite", *where)
    assert copied["integrity"] == "ok" and copied["tables"]["notices"] == 3
    for args in (
        ("notices", "mark", "P1", "connected", "--on", "2027-02-15"),
        ("notices", "record", "P9", "connected", "--on", "2027-02-10"),
        ("notices", "record-mailing", "--from", _given_back(tmp_path / "back.csv", [(1, ids["P1"], N1)])),
    ):
        refused = runner.invoke(*args, *where)
        said = " ".join(refused.stderr.split())
        assert refused.exit_code == 2 and "Traceback" not in refused.output, refused.output
        assert "not a notice register" not in said
        assert said == (
            f"Error: The register {path} cannot be written, it is on a read-only disk or in a folder this user cannot "
            f"write ({path.parent}): nothing was changed; make the change where the register can be written, or ask "
            "for write access to that folder."
        )
    monkeypatch.undo()
    assert path.read_bytes() == before


def test_an_issue_into_a_read_only_register_is_refused_before_its_folder_is_made(
    village, on_disk, tmp_path, monkeypatch
):
    from layers.town import load_town_settings
    from tests.conftest import town_toml

    profile, inputs = village
    (tmp_path / "town.toml").write_text(town_toml(), encoding="utf-8")
    town = load_town_settings(tmp_path / "town.toml")
    path, _ = on_disk
    _read_only_disk(monkeypatch, path.parent)
    reg = Register(str(path), create=False)
    assert reg.read_only
    plan, _, _ = service.preview(reg, inputs, profile=profile, town=town, notice_date=DAY)  # a preview reads it
    assert not plan.due.empty
    with pytest.raises(RegisterReadOnlyError, match="cannot be written"):
        service.issue_batch(reg, plan, kind="connection", profile=profile, town=town, root=tmp_path / "out", actor="t")
    assert not (tmp_path / "out").exists()


def test_writes_sqlite_refuses_as_read_only_are_said_so_too(on_disk, monkeypatch):
    """A disk that opens and reads but refuses writes ("attempt to write a readonly database"), not told by the
    permissions: the write is refused in the same sentence, not a traceback."""
    path, _ = on_disk
    real_connect = sqlite3.connect

    def read_only(database, *args, **kwargs):
        if str(database) == str(path):
            return real_connect(f"file:{path}?mode=ro", *args, **(kwargs | {"uri": True}))
        return real_connect(database, *args, **kwargs)

    monkeypatch.setattr(sqlite3.dbapi2, "connect", read_only)
    reg = Register(str(path), create=False)
    assert len(reg.listing()) == 3
    with pytest.raises(RegisterReadOnlyError, match=r"cannot be written, it is on a read-only disk"):
        reg.mark("P1", "withdrawn", actor="clerk")
    assert set(reg.listing()["status"]) == {"open"}


# -- 3. the day a parcel connected ------------------------------------------------------------------------------------


def test_mark_connected_records_the_day_and_list_shows_it(store, first_batch, monkeypatch):
    monkeypatch.setenv("SEWERPLAN_TODAY", "2027-03-10")
    one, two = (n["parcel_id"] for n in first_batch["notices"][:2])
    said = invoke("notices", "mark", one, "connected", "--on", "2027-03-04", "--store", store).stdout
    assert said.strip() == f"{one}: connected on 2027-03-04 (1 notice(s))."
    said = invoke("notices", "mark", two, "connected", "--store", store).stdout
    assert said.strip() == f"{two}: connected on 2027-03-10 (today: no --on was given) (1 notice(s))."
    listed = {
        n["parcel_id"]: n for n in json.loads(invoke("notices", "list", "--store", store, "--json").stdout)["notices"]
    }
    assert (listed[one]["connected_on"], listed[two]["connected_on"]) == ("2027-03-04", "2027-03-10")
    table = invoke("notices", "list", "--store", store).stdout
    assert "connected" in table.splitlines()[1] and "2027-03-04" in table  # the column, where one has a day
    events = Register(store=store, create=False).events_of(listed[one]["notice_id"])
    assert ("marked", "connected_on", None, "2027-03-04") in [
        (e["action"], e["field"], e["old_value"], e["new_value"]) for e in events
    ]


def test_a_day_marked_wrongly_is_corrected_and_the_old_day_kept(store, first_batch, monkeypatch):
    """Marked without --on (today taken), the day could not be put right: marking again said "no open notice" and
    pointed to `notices record`, which refused it as recorded already (a tester). --correct replaces the day."""
    monkeypatch.setenv("SEWERPLAN_TODAY", "2027-03-10")
    parcel = first_batch["notices"][0]["parcel_id"]
    invoke("notices", "mark", parcel, "connected", "--store", store)  # today: 2027-03-10
    again = invoke("notices", "mark", parcel, "connected", "--on", "2027-03-04", "--store", store, ok=False)
    told = " ".join(again.stderr.split())
    assert again.exit_code == 2 and "is marked connected already" in told and "connected on 2027-03-10" in told
    assert "mark it again with --on DAY --correct" in told
    said = invoke("notices", "mark", parcel, "connected", "--on", "2027-03-04", "--correct", "--store", store).stdout
    assert said.strip() == f"{parcel}: day it connected corrected to 2027-03-04 (1 notice(s))."
    (notice,) = [
        n
        for n in json.loads(invoke("notices", "list", "--store", store, "--json").stdout)["notices"]
        if n["parcel_id"] == parcel
    ]
    assert (notice["status"], notice["connected_on"]) == ("connected", "2027-03-04")
    events = [
        (e["action"], e["field"], e["old_value"], e["new_value"])
        for e in Register(store=store, create=False).events_of(notice["notice_id"])
    ]
    assert ("corrected", "connected_on", "2027-03-10", "2027-03-04") in events
    # a day before the notice, or a parcel never marked connected, is refused as before
    early = invoke(
        "notices", "mark", parcel, "connected", "--on", "2027-02-01", "--correct", "--store", store, ok=False
    )
    assert early.exit_code == 2 and "is before notice" in early.stderr
    other = first_batch["notices"][1]["parcel_id"]
    none = invoke("notices", "mark", other, "connected", "--on", "2027-03-04", "--correct", "--store", store, ok=False)
    assert none.exit_code == 2 and "has no notice marked connected" in none.stderr


def test_a_list_of_open_notices_keeps_its_room_for_the_owner(store, first_batch):
    header = invoke("notices", "list", "--store", store).stdout.splitlines()[1]
    assert "connected" not in header and "owner" in header


@pytest.mark.parametrize(
    ("day", "says"),
    [
        ("2027-03-11", "The day it connected, 2027-03-11, is after today (2027-03-10): record a connection once it is"),
        ("2027-02-28", "The day it connected, 2027-02-28, is before notice N-"),
    ],
)
def test_mark_refuses_a_day_to_come_and_one_before_the_notice_as_record_does(
    store, first_batch, monkeypatch, day, says
):
    monkeypatch.setenv("SEWERPLAN_TODAY", "2027-03-10")
    parcel = first_batch["notices"][0]["parcel_id"]
    refused = invoke("notices", "mark", parcel, "connected", "--on", day, "--store", store, ok=False)
    assert refused.exit_code == 2 and says in " ".join(refused.stderr.split())
    assert set(Register(store=store, create=False).listing()["status"]) == {"open"}
    if day > "2027-03-10":  # the same check, the same sentence, as a connection recorded without a notice
        recorded = invoke("notices", "record", "P-NEVER", "connected", "--on", day, "--store", store, ok=False)
        assert says in " ".join(recorded.stderr.split())


def test_on_goes_only_with_connected(store, first_batch):
    parcel = first_batch["notices"][0]["parcel_id"]
    refused = invoke("notices", "mark", parcel, "exempt", "--on", "2027-03-01", "--store", store, ok=False)
    assert refused.exit_code == 2 and "--on goes only with connected" in refused.stderr
    with pytest.raises(LayerError, match="goes only with connected"):
        Register(store=store, create=False).mark(parcel, "exempt", actor="t", connected_on="2027-03-01")


def test_a_record_keeps_its_day_where_a_marked_notice_does(register):
    done = register.record("P8", "connected", on="2027-02-10", actor="clerk")
    row = register.listing().set_index("notice_id").loc[done["record_id"]]
    assert row["connected_on"] == row["issued_date"] == dt.date(2027, 2, 10)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_migration_0008_gives_a_record_its_day_and_a_marked_notice_none(tmp_path, backend):
    columns = "notice_id, parcel_id, notice_type, issued_date, deadline, status, is_open, section, created_at"
    url = register_at(
        backend,
        tmp_path,
        "0007",
        f"INSERT INTO notices ({columns}) VALUES "
        "('R-1', 'P1', 'record', '2027-02-10', NULL, 'connected', 0, '', 'x'), "
        "('N-1', 'P2', 'connection', '2027-03-01', '2027-05-30', 'connected', 0, '§ 144-4', 'x'), "
        "('N-2', 'P3', 'connection', '2027-03-01', '2027-05-30', 'open', 1, '§ 144-4', 'x')",
    )
    reg = Register(url, create=False)
    assert reg._version() == HEAD
    days = reg.listing().set_index("notice_id")["connected_on"]
    assert days["R-1"] == dt.date(2027, 2, 10) and pd.isna(days["N-1"]) and pd.isna(days["N-2"])
    assert [(e["actor"], e["field"], e["new_value"]) for e in reg.events_of("R-1")] == [
        ("migration 0008", "connected_on", "2027-02-10")
    ]
    assert reg.events_of("N-1") == [] and reg.integrity_ok()
    reg.close()


# -- 4. nothing new to issue: no folder ------------------------------------------------------------------------------


def test_an_issue_with_nothing_new_makes_no_out_folder(store, first_batch, tmp_path):
    again = json.loads(_issue_cli(store, tmp_path / "new" / "batches").stdout)
    assert again["batch"] is None and again["issued"] == 0
    assert not (tmp_path / "new").exists()


def test_an_issue_whose_parcels_were_noticed_meanwhile_leaves_no_folder(village, tmp_path):
    from layers.town import load_town_settings
    from tests.conftest import town_toml

    profile, inputs = village
    (tmp_path / "town.toml").write_text(town_toml(), encoding="utf-8")
    town = load_town_settings(tmp_path / "town.toml")
    reg = Register(str(tmp_path / "register.sqlite"), create=True)
    plan, _, _ = service.preview(reg, inputs, profile=profile, town=town, notice_date=DAY)
    plan = dataclasses.replace(plan, due=plan.due.head(2))
    args = {"kind": "connection", "profile": profile, "town": town, "actor": "t"}
    first = service.issue_batch(reg, plan, root=tmp_path / "first", **args)
    assert first["issued"] == 2
    # The same preview issued again (another clerk's, read before the first batch): every parcel is noticed now.
    late = service.issue_batch(reg, plan, root=tmp_path / "late" / "batches", **args)
    assert late["batch"] is None and late["already_open"] == 2
    assert not (tmp_path / "late").exists()
    reg.close()
