"""Kill -9 at random moments while a batch of notices is being issued, the way it failed before (7 of 24 kill
trials left notices with a running deadline and no letter): every notice the register counts as issued must have its
letter, its mailing-list row and its label, and a re-run must finish or cancel what was left and issue the rest.

A helper process imports everything once and forks a child per trial; the child runs the same code as
`sewerplan notices issue` (settle what an earlier run left, preview, issue a batch) and is killed with SIGKILL at a
random moment within the time a whole run takes. The last re-run is the real command line.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import pickle
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest
import sqlalchemy as sa

from analysis.mandate import analyze_mandates
from analysis.profiles import load_profile
from gisapp.notices import NoticeInputs
from layers.letters import label_texts, verify_batch
from layers.register import Register
from layers.sample import sample_town
from layers.town import load_town_settings
from layers.write import write_layers
from tests.conftest import receipt_number, town_toml

REPO = Path(__file__).resolve().parents[1]
DAY = dt.date(2027, 3, 1)
TRIALS = 22
PER_TRIAL = 8  # notices each trial's run issues

ZYGOTE = textwrap.dedent("""
    import os, pickle, sys, traceback
    from gisapp import notices as service
    from layers.register import Register
    url, root, inputs_path = sys.argv[1:4]
    with open(inputs_path, "rb") as f:
        profile, town, inputs, day = pickle.load(f)
    for line in sys.stdin:
        pid = os.fork()
        if pid == 0:
            try:
                register = Register(url, create=False)
                service.settle(register, actor="kill-test")
                plan, _, _ = service.preview(register, inputs, profile=profile, town=town, notice_date=day)
                service.issue_batch(register, plan, kind="connection", profile=profile, town=town, root=root,
                                    actor="kill-test", inputs=inputs)
            except BaseException:
                traceback.print_exc()
                os._exit(1)
            os._exit(0)
        print(pid, flush=True)
        sys.stdin.readline()  # reaped only when the test says so: until then the pid cannot belong to anyone else
        _, status = os.waitpid(pid, 0)
        print(f"exit {status}", flush=True)
""")


def _check(register: Register, root: Path, verified: set[str]) -> dict:
    """Every notice counted as issued has its letter, mailing-list row and label; the others have no deadline."""
    listing = register.listing()
    live = listing[listing["is_open"] == 1]
    assert not live.duplicated(["parcel_id", "notice_type"]).any()
    unissued = listing["status"].isin(["prepared", "cancelled"])
    assert listing.loc[unissued, "deadline"].isna().all() and listing.loc[~unissued, "deadline"].notna().all()
    assert not set(register.listing(overdue_on=dt.date(2031, 1, 1))["status"]) & {"prepared", "cancelled"}
    issued = listing[~unissued]
    for batch_id, group in issued.groupby("batch_id"):
        if batch_id in verified:
            continue
        folder = root / batch_id
        assert register.batch(batch_id)["status"] == "issued"
        assert verify_batch(folder, list(group["notice_id"])) == [], batch_id
        rows = pd.read_csv(folder / "mailing-list.csv", dtype=str, keep_default_na=False)
        labels = [" ".join(t.split()) for t in label_texts(folder / "labels.pdf")]
        assert len(labels) == len(rows)
        for notice in group.to_dict("records"):
            assert (root / notice["letter_file"]).is_file()
            row = rows[rows["mailing_no"] == str(int(notice["mailing_no"]))].iloc[0]
            assert notice["notice_id"] in row["notice_ids"].split("; ")
            assert (root / batch_id / row["letter_file"]) == root / notice["letter_file"]
            label = labels[int(notice["mailing_no"]) - 1]
            assert label.startswith(f"{int(notice['mailing_no']):04d}")
            assert notice["notice_id"] in label or " more" in label
        verified.add(batch_id)
    return {
        "prepared": int((listing["status"] == "prepared").sum()),
        "batches": {s: sum(b["status"] == s for b in register.batches()) for s in ("prepared", "issued", "cancelled")},
    }


@pytest.mark.slow
def test_kill_9_at_random_moments_never_leaves_a_notice_without_its_paperwork(tmp_path):
    profile = load_profile("fort-plain")
    town = sample_town(80)
    store = tmp_path / "town.gpkg"
    write_layers(str(store), town)
    (tmp_path / "town.toml").write_text(town_toml(), encoding="utf-8")
    settings = load_town_settings(tmp_path / "town.toml")
    parcels = town["parcels"].assign(connected=town["parcels"]["connected"] == "Y")
    result = analyze_mandates(
        parcels, town["mains"], streets=town["streets"], buildings=town["buildings"], profile=profile
    )
    inputs = NoticeInputs(
        results=result.parcels,
        lines=result.measuring_lines,
        mains=town["mains"],
        streets=town["streets"],
        buildings=town["buildings"],
        summary=result.summary,
    )
    with open(tmp_path / "inputs.pickle", "wb") as f:
        pickle.dump((profile, settings, inputs, DAY), f)
    register = Register(store=store, create=True)
    root = tmp_path / "out"
    root.mkdir()
    env = os.environ | {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    zygote = subprocess.Popen(
        [
            sys.executable,
            "-c",
            ZYGOTE,
            register.url.removeprefix("sqlite:///"),
            str(root),
            str(tmp_path / "inputs.pickle"),
        ],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )

    def run(kill_after: float | None) -> int:
        return _run_killed(zygote, kill_after)

    mandated = set(result.parcels.loc[result.parcels["status"] == "mandated", "parcel_id"])
    verified: set[str] = set()
    rng = random.Random(1982)

    def withdraw(k: int) -> None:  # give the next run work: the clerk withdrew some open notices
        open_ = sorted(register.listing(status="open")["parcel_id"])
        for parcel in rng.sample(open_, min(k, len(open_))):
            register.mark(parcel, "withdrawn", actor="kill-test")

    assert run(None) == 0  # every mandated parcel noticed once, whole
    assert set(register.listing(status="open")["parcel_id"]) == mandated
    _check(register, root, verified)
    withdraw(PER_TRIAL)
    started = time.monotonic()
    assert run(None) == 0  # how long a run of PER_TRIAL notices takes, here and now
    whole = time.monotonic() - started
    _check(register, root, verified)
    killed = left_prepared = 0
    for trial in range(TRIALS):
        withdraw(PER_TRIAL if trial < TRIALS - 1 else 3 * PER_TRIAL)  # the last run leaves the most to finish
        status = run(rng.uniform(0.0, whole))
        killed += os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        left_prepared += _check(register, root, verified)["prepared"] > 0
    zygote.stdin.close()
    zygote.wait(timeout=60)
    zygote.stdout.close()
    assert killed >= 5, f"only {killed} of {TRIALS} runs were killed before they ended"
    assert left_prepared >= 1, "no kill landed between preparing and issuing a batch"
    # The real command line finishes or cancels what the last kill left, and issues the rest.
    rerun = subprocess.run(
        [
            str(Path(sys.executable).parent / "sewerplan"),
            "notices",
            "issue",
            "--profile",
            "fort-plain",
            "--data",
            str(store),
        ]
        + ["--notice-date", DAY.isoformat(), "--out", str(root), "--json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert rerun.returncode == 0, rerun.stderr
    doc = json.loads(rerun.stdout)
    final = _check(register, root, verified)
    assert final["prepared"] == 0 and final["batches"]["prepared"] == 0
    open_ = register.listing(status="open")
    assert set(open_["parcel_id"]) == mandated and open_["parcel_id"].is_unique
    assert doc["issued"] + doc["already_open"] == len(mandated)
    register.close()


MAILING_ZYGOTE = textwrap.dedent("""
    import os, sys, time, traceback
    from gisapp import notices as service
    from layers.register import Register
    url, csv_path, began = sys.argv[1:4]

    def pause(i):  # a moment between writes, so a kill lands inside the transaction as well as around it
        if i == 0:
            open(began, "w").close()
        time.sleep(0.002)

    for line in sys.stdin:
        pid = os.fork()
        if pid == 0:
            try:
                service.record_mailing(Register(url, create=False), csv_path, actor="kill-test", pause=pause)
            except BaseException:
                traceback.print_exc()
                os._exit(1)
            os._exit(0)
        print(pid, flush=True)
        sys.stdin.readline()
        _, status = os.waitpid(pid, 0)
        print(f"exit {status}", flush=True)
""")
MAILED = 200  # envelopes in the mailing list given back


@pytest.mark.slow
def test_kill_9_while_recording_article_numbers_records_all_of_them_or_none(tmp_path):
    """`notices record-mailing` writes a number and an event per notice: killed at any moment, the register holds
    every number of the list with its event, or none, never part of a list."""
    register = Register(str(tmp_path / "register.sqlite"), create=True)
    batch_id = "B20270301-000001"
    due = pd.DataFrame(
        {"parcel_id": [f"P{i}" for i in range(MAILED)], "issued_date": DAY.isoformat(), "section": "§ 144-4"}
    )
    prepared = register.prepare_batch(
        due,
        batch_id=batch_id,
        kind="connection",
        notice_date=DAY,
        deadline=DAY + dt.timedelta(days=90),
        folder=str(tmp_path),
        actor="t",
        profile=("fort-plain", "v"),
    )
    ids = [n["notice_id"] for n in prepared["notices"]]
    register.finish_batch(
        batch_id, letters={n: (f"{batch_id}/letters/{i:04d}.pdf", i) for i, n in enumerate(ids, 1)}, actor="t"
    )
    numbers = [receipt_number(i) for i in range(MAILED)]
    given = tmp_path / "mailing-list.csv"
    pd.DataFrame({"mailing_no": range(1, MAILED + 1), "notice_ids": ids, "certified_article_no": numbers}).to_csv(
        given, index=False
    )
    began = tmp_path / "began"
    zygote = subprocess.Popen(
        [sys.executable, "-c", MAILING_ZYGOTE, register.url.removeprefix("sqlite:///"), str(given), str(began)],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=os.environ | {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"},
    )

    def run(kill_after: float | None) -> int:
        began.unlink(missing_ok=True)
        return _run_killed(zygote, kill_after)

    def recorded() -> int:
        """How many notices hold their number, after checking it is all of them with their events, or none."""
        with register.engine.connect() as con:
            held = con.execute(sa.text("SELECT count(*) FROM notices WHERE certified_article_no IS NOT NULL")).scalar()
            events = con.execute(sa.text("SELECT count(*) FROM events WHERE field = 'certified_article_no'")).scalar()
        assert held in (0, MAILED) and events == held
        assert register.integrity_ok()
        return int(held)

    def forget() -> None:  # the next trial records the list afresh
        with register.transaction() as con:
            con.execute(sa.text("UPDATE notices SET certified_article_no = NULL"))
            con.execute(sa.text("DELETE FROM events WHERE field = 'certified_article_no'"))

    assert run(None) == 0 and recorded() == MAILED  # the helper's imports, once
    forget()
    started = time.monotonic()
    assert run(None) == 0  # how long a whole run takes, here and now
    whole = time.monotonic() - started
    assert recorded() == MAILED
    rng = random.Random(2027)
    inside = killed = 0
    for _ in range(TRIALS):
        forget()
        status = run(rng.uniform(0.0, whole))
        killed += os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        inside += began.exists() and recorded() == 0  # killed between its first write and its commit
        recorded()
    zygote.stdin.close()
    zygote.wait(timeout=60)
    zygote.stdout.close()
    assert killed >= 5, f"only {killed} of {TRIALS} runs were killed before they ended"
    assert inside >= 1, "no kill landed inside the transaction"
    # The real command line records what the last kill left unrecorded, or finds it all recorded.
    done = subprocess.run(
        [str(Path(sys.executable).parent / "sewerplan"), "notices", "record-mailing", "--from", str(given)]
        + ["--register", str(tmp_path / "register.sqlite"), "--json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["letters"] == MAILED and recorded() == MAILED
    register.close()


def _run_killed(zygote: subprocess.Popen, kill_after: float | None) -> int:
    """One run forked by ``zygote``, killed ``kill_after`` seconds in (None: let it finish); its exit code."""
    zygote.stdin.write("go\n")
    zygote.stdin.flush()
    pid = int(zygote.stdout.readline())
    if kill_after is not None:
        time.sleep(kill_after)
        os.kill(pid, signal.SIGKILL)  # our own child, running or not yet reaped
    zygote.stdin.write("reap\n")
    zygote.stdin.flush()
    return int(zygote.stdout.readline().split()[1])
