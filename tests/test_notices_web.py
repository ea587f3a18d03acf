"""The notices page as a clerk uses it: create the register once, preview, confirm, issue, download the letters,
change a notice's status (parcel IDs with "/", "#", "?", "%" and spaces), and error pages with a way back. With the
Flask test client, and in a real headless Chromium."""

from __future__ import annotations

import datetime as dt
import re
import shutil
import sqlite3
from pathlib import Path
from urllib.parse import quote

import geopandas as gpd
import pandas as pd
import pytest
from click.testing import CliRunner
from pypdf import PdfReader

from analysis.mandate import analyze_mandates
from analysis.profiles import load_profile
from gisapp.cli import main
from gisapp.words import town_date
from layers.register import Register
from layers.sample import sample_town
from layers.store import latest_run, read_setting
from layers.write import write_layers
from tests import conftest
from tests.conftest import csrf, receipt_number, serving
from tests.test_web import message_saying, open_popup, wait_for

REPO = Path(__file__).resolve().parents[1]
SCREENSHOTS = REPO / "build" / "screenshots"
HOSTILE_IDS = ("12.1-1-2/A", "12.1-1-3#B", "12.1-1-4?C=1", "12.1-1-5%2F", "12.1-1-6 D")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """The sample village, with five mandated parcels renamed to IDs a URL path would break on."""
    folder = tmp_path_factory.mktemp("notices-store")
    town = sample_town(80)
    parcels = town["parcels"].assign(connected=town["parcels"]["connected"] == "Y")
    result = analyze_mandates(
        parcels, town["mains"], streets=town["streets"], buildings=town["buildings"], profile=load_profile("fort-plain")
    )
    mandated = result.parcels.index[result.parcels["status"] == "mandated"][: len(HOSTILE_IDS)]
    town["parcels"].loc[mandated, "parcel_id"] = list(HOSTILE_IDS)
    path = folder / "town.gpkg"
    write_layers(str(path), town)
    # The run's own notice date differs from the notices issued here: their deadlines must not be confused.
    done = CliRunner().invoke(
        main,
        ["analyze", "--profile", "fort-plain", "--data", str(path), "--out", str(path), "--notice-date", "2027-04-01"],
    )
    assert done.exit_code == 0, done.output
    return path


def make_app(store: Path, tmp_path: Path, *, town: bool = True, municipality: str = "Village of Fort Plain", **extra):
    """The web app on a copy of the notices store (an issue records the register in it), with the example town
    settings filled in for ``municipality`` beside it, and the register the store records (none until one is
    created)."""
    own = tmp_path / "store" / "town.gpkg"
    own.parent.mkdir(exist_ok=True)
    if not own.exists():
        shutil.copy(store, own)
    if town:
        (own.parent / "town.toml").write_text(conftest.town_toml(municipality), encoding="utf-8")
    return conftest.make_app(own, tmp_path, REGISTER=None, **extra)


@pytest.fixture
def app(store, tmp_path):
    return make_app(store, tmp_path)


def _message(response) -> str:
    return " ".join(re.findall(r'id="(?:message|error)"[^>]*>([^<]*)<', response.get_data(as_text=True)))


def _issue(client) -> str:
    token = csrf(client)
    client.post("/notices/register", data={"csrf_token": token})
    preview = client.post("/notices/preview", data={"notice_date": "2027-03-01", "csrf_token": token}).get_data(
        as_text=True
    )
    confirm = re.search(r'name="confirm" value="([0-9a-f]+)"', preview).group(1)
    done = client.post("/notices/issue", data={"notice_date": "2027-03-01", "confirm": confirm, "csrf_token": token})
    assert done.status_code == 302
    return client.get(done.headers["Location"]).get_data(as_text=True)


def _days_later(monkeypatch, day: str = "2027-03-05") -> None:
    """Today moved past the notices' date (2027-03-01; the suite's today is before it), as when an owner connects
    after their notice: a notice is marked connected on a day from its date to today, never before it."""
    monkeypatch.setenv("SEWERPLAN_TODAY", day)


def test_a_preview_the_confirm_would_refuse_is_refused_at_the_preview(client, app):
    """A notice date before today was previewed (520 notices, a Confirm button) and refused only at Confirm, 400
    "The notice date ... is before today": the page offered a batch it would not issue."""
    token = csrf(client)
    client.post("/notices/register", data={"csrf_token": token})
    past = client.post("/notices/preview", data={"notice_date": "2027-02-01", "csrf_token": token})
    page = past.get_data(as_text=True)
    assert past.status_code == 400 and "before today" in _message(past) and 'name="confirm"' not in page
    fine = client.post("/notices/preview", data={"notice_date": "2027-03-01", "csrf_token": token})
    assert fine.status_code == 200 and 'name="confirm"' in fine.get_data(as_text=True)


def test_without_a_register_the_page_offers_to_create_the_towns_one(client, app):
    folder = str(Path(app.config["STORE"]).parent)
    page = client.get("/notices").get_data(as_text=True)
    assert "No notice register is set up for the store town.gpkg" in page and 'id="create-register"' in page
    assert "would be created at <code>town-register.sqlite</code>" in page
    assert folder not in page  # the server's folders are no web user's business (the command line names them)
    assert not list(Path(app.config["STORE"]).parent.glob("*.sqlite"))  # looking never creates one
    token = csrf(client)
    created = client.post("/notices/register", data={"csrf_token": token})
    assert created.status_code == 302 and created.headers["Location"].startswith("/notices?said=")
    said = _message(client.get(created.headers["Location"]))
    assert said == "The notice register was created as town-register.sqlite, beside the store." and folder not in said
    assert "was created" not in _message(client.get(created.headers["Location"]))  # said once
    register = Path(app.config["STORE"]).with_name("town-register.sqlite")
    assert register.is_file() and read_setting(app.config["STORE"], "register") == str(register)
    assert 'id="notice-form"' in client.get("/notices").get_data(as_text=True)


def test_issuing_needs_a_confirmed_preview_and_links_the_letters(client, app, store):
    token = csrf(client)
    client.post("/notices/register", data={"csrf_token": token})
    form = {"notice_date": "2027-03-01", "csrf_token": token}
    preview = client.post("/notices/preview", data=form).get_data(as_text=True)
    assert "nothing recorded yet" in preview and 'id="confirm-form"' in preview
    assert "It falls on a Sunday" in preview  # 2027-05-30
    assert "Deadline <strong>May 30, 2027</strong>" in preview  # in the town's date format, not ISO
    register = Register(store=app.config["STORE"], create=False)
    unconfirmed = client.post("/notices/issue", data=form).get_data(as_text=True)
    assert "Check the preview below, then confirm" in unconfirmed and register.listing().empty
    stale = client.post("/notices/issue", data=form | {"confirm": "0" * 24}).get_data(as_text=True)
    assert "have changed since the preview" in stale and register.listing().empty
    confirm = re.search(r'name="confirm" value="([0-9a-f]+)"', preview).group(1)
    done = client.post("/notices/issue", data=form | {"confirm": confirm})
    page = client.get(done.headers["Location"]).get_data(as_text=True)
    mandated = (gpd.read_file(app.config["STORE"], layer="parcel_results")["status"] == "mandated").sum()
    assert f"{mandated} notice(s) issued, 0 already noticed" in page
    listing = register.listing()
    assert len(listing) == mandated and set(listing["status"]) == {"open"}
    letter_links = re.findall(r'class="letter-link" href="([^"]+)"', page)
    assert len(letter_links) == mandated
    letter = client.get(letter_links[0].replace("&amp;", "&"))
    assert letter.status_code == 200 and letter.data.startswith(b"%PDF")
    batch = listing["batch_id"].iloc[0]
    for name in ("letters-all.pdf", "mailing-list.csv", "labels.pdf"):
        assert f"/notices/files/{batch}/{name}" in page
        assert client.get(f"/notices/files/{batch}/{name}").status_code == 200
    merged = client.get(f"/notices/files/{batch}/letters-all.pdf").data
    assert len(PdfReader(__import__("io").BytesIO(merged)).pages) >= len(set(listing["mailing_no"]))
    assert client.get(f"/notices/files/{batch}/../../town.gpkg").status_code == 404
    assert client.get("/notices/files/B00000000-NOPE/labels.pdf").status_code == 404
    again = client.post("/notices/preview", data=form).get_data(as_text=True)
    assert "Preview: 0 notice(s)" in again and 'id="confirm-form"' not in again
    # and why none: "0 notices" alone read as if nobody were mandated any more
    said = f"{mandated:,} mandated parcels are not noticed again: the register has an open notice for each"
    assert said in again


def test_an_issue_refused_on_the_page_makes_no_folder_and_leaves_the_register_as_it_was(client, app):
    """The page's issue is refused where `notices issue` is (``services.issue_notices``): the town settings taken
    away between the preview and the clerk's confirmation, the issue is refused before the notices folder is made
    or the register is written."""
    token = csrf(client)
    client.post("/notices/register", data={"csrf_token": token})  # the clerk's own step, before any issue
    register = Path(app.config["STORE"]).with_name("town-register.sqlite")
    form = {"notice_date": "2027-03-01", "csrf_token": token}
    preview = client.post("/notices/preview", data=form).get_data(as_text=True)
    confirm = re.search(r'name="confirm" value="([0-9a-f]+)"', preview).group(1)
    Path(app.config["STORE"]).with_name("town.toml").unlink()
    before = register.read_bytes()
    refused = client.post("/notices/issue", data=form | {"confirm": confirm})
    assert refused.status_code == 400 and "Letters cannot be written yet: no town settings file" in _message(refused)
    assert not Path(app.config["NOTICES_FOLDER"]).exists() and register.read_bytes() == before


def test_marking_works_for_parcel_ids_a_url_path_would_break(client, app, monkeypatch):
    _issue(client)
    _days_later(monkeypatch)
    token = csrf(client)
    for parcel in HOSTILE_IDS:
        page = client.get(f"/notices?q={quote(parcel)}").get_data(as_text=True)
        assert f'name="parcel_id" value="{parcel}"' in page.replace("&#34;", '"')
        form = _mark_form(page, parcel) | {"parcel_id": parcel}  # as the browser sends it, unescaped
        done = client.post("/notices/mark", data=form | {"status": "connected", "note": "seen", "csrf_token": token})
        said = _message(client.get(done.headers["Location"]))
        assert done.status_code == 302 and f"{parcel}: connected on March 5, 2027 (today: no day was given)." in said
    listing = Register(store=app.config["STORE"], create=False).listing().set_index("parcel_id")
    assert set(listing.loc[list(HOSTILE_IDS), "status"]) == {"connected"}


@pytest.mark.parametrize(
    ("form", "says"),
    [
        ({}, "Choose what happened to parcel"),
        ({"status": "extended"}, "An extension needs the new deadline"),
        ({"status": "extended", "until": "next tuesday"}, "is not a date"),
        ({"status": "extended", "until": "2027-02-30"}, "does not exist: February 2027 has 28 days"),
        ({"status": "extended", "until": "1999-01-01"}, "moves the deadline later"),
        ({"status": "connected", "until": "2027-09-01"}, "A new deadline goes only with an extension"),
    ],
)
def test_a_plain_save_explains_itself_and_changes_nothing(client, app, form, says):
    _issue(client)
    register = Register(store=app.config["STORE"], create=False)
    parcel, notice = register.listing()[["parcel_id", "notice_id"]].iloc[0]
    sent = {"parcel_id": parcel, "notice_id": notice, "csrf_token": csrf(client)}
    done = client.post("/notices/mark", data=sent | form)
    assert done.status_code == 302
    assert says in _message(client.get(done.headers["Location"]))
    row = register.listing().set_index("parcel_id").loc[parcel]
    assert row["status"] == "open" and row["deadline"] == dt.date(2027, 5, 30)


def test_a_save_marking_a_notice_connected_keeps_the_day_it_connected(client, app, monkeypatch):
    """`notices mark PARCEL connected` and the row's Save recorded no day, so a board could not tell whether the
    owner connected before the deadline. The form has the day beside the status (empty: today, said), refused after
    today and before the notice's date, and the register shows it after the status."""
    page = _issue(client)
    assert '<input type="date" name="on"' in re.search(
        r'<form method="post" action="/notices/mark".*?</form>', page, re.S
    ).group(0)
    _days_later(monkeypatch, "2027-03-10")
    register = Register(store=app.config["STORE"], create=False)
    (p1, n1), (p2, n2) = register.listing()[["parcel_id", "notice_id"]].head(2).itertuples(index=False)
    token = csrf(client)
    for on, says in (
        ("2027-03-11", "The day it connected, March 11, 2027, is after today (March 10, 2027)"),
        ("2027-02-27", f"The day it connected, February 27, 2027, is before notice {n1} was given (March 1, 2027)"),
        ("2027-03-04", f"{p1}: connected on March 4, 2027."),
    ):
        sent = {"parcel_id": p1, "notice_id": n1, "status": "connected", "on": on, "csrf_token": token}
        done = client.post("/notices/mark", data=sent)
        assert done.status_code == 302 and _message(client.get(done.headers["Location"])).startswith(says)
    sent = {"parcel_id": p2, "notice_id": n2, "status": "connected", "csrf_token": token}
    done = client.post("/notices/mark", data=sent)
    assert (
        _message(client.get(done.headers["Location"]))
        == f"{p2}: connected on March 10, 2027 (today: no day was given)."
    )
    days = register.listing().set_index("notice_id")["connected_on"]
    assert (days[n1], days[n2]) == (dt.date(2027, 3, 4), dt.date(2027, 3, 10))
    shown = client.get(f"/notices?q={quote(p1)}").get_data(as_text=True)
    assert "connected on March 4, 2027" in shown
    sent = {"parcel_id": p1, "notice_id": n1, "status": "exempt", "on": "2027-03-04", "csrf_token": token}
    refused = client.post("/notices/mark", data=sent)
    assert "The day it connected goes only with connected" in _message(client.get(refused.headers["Location"]))


def test_a_connected_rows_day_is_corrected_on_the_page(client, app, monkeypatch):
    """A day it connected mistyped on the page (or today taken) could be put right only on the command line
    (`notices mark PARCEL connected --on DAY --correct`). A connected row now has the day in a date field and
    "Correct the day": the day is replaced, the old one kept in the notice's events."""
    _issue(client)
    _days_later(monkeypatch, "2027-03-10")
    register = Register(store=app.config["STORE"], create=False)
    parcel, notice = register.listing()[["parcel_id", "notice_id"]].iloc[0]
    token = csrf(client)
    sent = {"parcel_id": parcel, "notice_id": notice, "status": "connected", "on": "2027-03-09", "csrf_token": token}
    client.post("/notices/mark", data=sent)
    page = client.get(f"/notices?q={quote(parcel)}").get_data(as_text=True)
    form = re.search(
        r'<form method="post" action="/notices/mark" class="inline correct-day-form">.*?</form>', page, re.S
    )
    fields = dict(
        re.findall(r'<input type="(?:hidden|date)" name="(\w+)"(?: required)? value="([^"]*)"', form.group(0))
    )
    assert fields["on"] == "2027-03-09" and fields["correct"] == "1" and fields["notice_id"] == notice
    for on, says in (
        ("", f"Pick the right day parcel {parcel} connected"),
        ("2027-03-09", f"Parcel {parcel} is recorded connected on March 9, 2027 already: nothing was changed."),
        ("2027-03-11", "The day it connected, March 11, 2027, is after today (March 10, 2027)"),
        (
            "2027-03-04",
            f"{parcel}: the day it connected corrected to March 4, 2027 (the old day stays in its history).",
        ),
    ):
        done = client.post("/notices/mark", data=fields | {"on": on, "csrf_token": token})
        assert _message(client.get(done.headers["Location"])).startswith(says)
    row = register.listing().set_index("notice_id").loc[notice]
    assert row["status"] == "connected" and row["connected_on"] == dt.date(2027, 3, 4)
    corrected = [e for e in register.events_of(notice) if e["action"] == "corrected"]
    assert [(e["field"], e["old_value"], e["new_value"]) for e in corrected] == [
        ("connected_on", "2027-03-09", "2027-03-04")
    ]


def test_a_second_extension_without_a_note_keeps_the_first_ones_note(client, app):
    """Extended with the note "owner asked", then extended again with the note left empty: the note was wiped, and
    no event said so, so the events still read "owner asked" as the note (a tester). An empty note keeps it."""
    _issue(client)
    register = Register(store=app.config["STORE"], create=False)
    parcel, notice = register.listing()[["parcel_id", "notice_id"]].iloc[0]
    token = csrf(client)
    sent = {"parcel_id": parcel, "notice_id": notice, "status": "extended", "csrf_token": token}
    client.post("/notices/mark", data=sent | {"until": "2027-06-30", "note": "owner asked"})
    client.post("/notices/mark", data=sent | {"until": "2027-07-31", "note": ""})
    row = register.listing().set_index("notice_id").loc[notice]
    assert (str(row["deadline"]), row["note"]) == ("2027-07-31", "owner asked")
    assert "owner asked" in client.get(f"/notices?q={quote(parcel)}").get_data(as_text=True)
    client.post("/notices/mark", data=sent | {"until": "2027-08-31", "note": "second call"})
    notes = [(e["old_value"], e["new_value"]) for e in register.events_of(notice) if e["field"] == "note"]
    assert notes == [(None, "owner asked"), ("owner asked", "second call")]


def test_the_status_form_has_no_default_status(client):
    page = _issue(client)
    form = re.search(r'<form method="post" action="/notices/mark".*?</form>', page, re.S).group(0)
    assert '<option value="" selected disabled>' in form and "required" in form
    assert not re.search(r'<option value="(connected|extended|exempt|withdrawn)" selected', form)


def test_error_pages_offer_a_way_back(client):
    client.post("/notices/register", data={"csrf_token": csrf(client)})
    missing = client.get("/notices/files/B1/x.pdf", headers={"Referer": "http://localhost/notices?status=open"})
    page = missing.get_data(as_text=True)
    assert missing.status_code == 404 and 'id="way-back"' in page
    assert 'href="http://localhost/notices?status=open"' in page and 'href="/notices"' in page and 'href="/"' in page
    foreign = client.get("/notices/files/B1/x.pdf", headers={"Referer": "http://evil.example/x"}).get_data(as_text=True)
    assert "evil.example" not in foreign and 'href="/"' in foreign


def _poughkeepsie_register(app):
    """The store analysed under Poughkeepsie, its register created from the page: the client and its CSRF token."""
    store = app.config["STORE"]
    done = CliRunner().invoke(main, ["analyze", "--profile", "poughkeepsie", "--data", store, "--out", store])
    assert done.exit_code == 0, done.output
    c = app.test_client()
    token = csrf(c)
    c.post("/notices/register", data={"csrf_token": token})
    return c, token


def test_poughkeepsie_needs_a_reason_and_holds_private_systems_back_without_a_hazard(store, tmp_path):
    app = make_app(store, tmp_path, municipality="Town of Poughkeepsie")
    c, token = _poughkeepsie_register(app)
    page = c.get("/notices").get_data(as_text=True)
    assert 'name="notice_reason"' in page and 'name="hazard"' in page
    refused = c.post("/notices/preview", data={"notice_date": "2027-03-01", "csrf_token": token})
    text = refused.get_data(as_text=True)
    assert (
        refused.status_code == 400
        and "public_health_hazard or highway_improvement" in text
        and "--" not in _message(refused)
    )
    assert 'value="2027-03-01"' in text  # the form keeps what was typed
    highway = c.post(
        "/notices/preview",
        data={"notice_date": "2027-03-01", "notice_reason": "highway_improvement", "csrf_token": token},
    ).get_data(as_text=True)
    assert "Preview: 0 notice(s)" in highway and "§ 168-22.3C: served by a private sewage disposal system" in highway
    form = {"notice_date": "2027-03-01", "notice_reason": "public_health_hazard", "csrf_token": token}
    no_hazard = c.post("/notices/preview", data=form)
    assert no_hazard.status_code == 400 and "must say which hazard" in no_hazard.get_data(as_text=True)
    # Each says where the hazard is given: the page's field, the command line's options.
    assert "Fill in &#34;The public health hazard&#34; field of the Notices page" in no_hazard.get_data(as_text=True)
    said = CliRunner().invoke(
        main,
        ["notices", "preview", "--data", app.config["STORE"], "--notice-date", "2027-03-01"]
        + ["--notice-reason", "public_health_hazard"],
    )
    assert said.exit_code == 2 and "must say which hazard" in said.output
    assert "Use --hazard TEXT (one hazard for every parcel) or --hazard-file FILE" in said.output
    form["hazard"] = "sewage surfacing from failing septic systems"
    preview = c.post("/notices/preview", data=form).get_data(as_text=True)
    confirm = re.search(r'name="confirm" value="([0-9a-f]+)"', preview).group(1)
    issued = c.post("/notices/issue", data=form | {"confirm": confirm})
    assert issued.status_code == 302 and "notice(s) issued" in _message(c.get(issued.headers["Location"]))
    listing = Register(store=app.config["STORE"], create=False).listing()
    assert set(listing["reason"]) == {"public_health_hazard"} and set(listing["hazard"]) == {form["hazard"]}


def test_what_to_do_before_issuing_ends_its_sentence_on_the_page_and_the_command_line(store, tmp_path):
    """Poughkeepsie's preview beside Fort Plain's town settings said 'Before issuing: ... or Village of Fort Plain's
    profile' with no full stop, on the Notices page and the command line alike."""
    app = make_app(store, tmp_path)  # Fort Plain's town settings
    c, token = _poughkeepsie_register(app)
    form = {
        "notice_date": "2027-03-01",
        "notice_reason": "public_health_hazard",
        "hazard": "sewage",
        "csrf_token": token,
    }
    page = c.post("/notices/preview", data=form).get_data(as_text=True)
    said = re.findall(r'<ul id="blocked" class="error"><li>([^<]*)</li>', page)
    assert said and said[0].startswith("Before issuing: the town settings")
    assert said[0].endswith("or Village of Fort Plain&#39;s profile.")
    cli = CliRunner().invoke(
        main,
        ["notices", "preview", "--data", app.config["STORE"], "--notice-date", "2027-03-01"]
        + ["--notice-reason", "public_health_hazard", "--hazard", "sewage"],
    )
    assert cli.exit_code == 0, cli.output
    text = " ".join(cli.output.split())
    assert re.search(r"Before issuing: the town settings \(.*\) name Village of Fort Plain in letterhead\.name", text)
    assert text.endswith("or Village of Fort Plain's profile.")


def test_before_issuing_keeps_the_period_problems_resolutions_table_on_the_command_line(store, tmp_path):
    """Printed through rich markup, 'add [resolutions] "mandate.notice_period_days" = ...' lost '[resolutions]',
    the one word that says where in the town settings the period goes."""
    app = make_app(store, tmp_path, municipality="Town of Wappinger")
    args = ["--data", app.config["STORE"], "--set", "mandate.notice_period_days=60", "--set", "mandate.distance_ft=200"]
    done = CliRunner().invoke(main, ["analyze", "--profile", "wappinger", "--out", app.config["STORE"], *args])
    assert done.exit_code == 0, done.output
    cli = CliRunner().invoke(main, ["notices", "preview", "--notice-date", "2027-03-01", *args])
    assert cli.exit_code == 0, cli.output
    text = " ".join(cli.output.split())
    assert "Before issuing: § 196-17E leaves the period to the town (this profile reads it as 60 days)." in text
    assert 'add [resolutions] "mandate.notice_period_days" = { days = N' in text


def test_viewers_cannot_issue_or_mark(client, auth):
    auth.add("vera", "viewer", "viewer-password")
    assert auth.login("vera", "viewer-password").status_code == 302
    token = auth.csrf()
    assert client.get("/notices").status_code == 200
    for path in ("/notices/issue", "/notices/preview", "/notices/mark", "/notices/register"):
        assert client.post(path, data={"notice_date": "2027-03-01", "csrf_token": token}).status_code == 403


def test_a_page_view_never_waits_for_a_writer(client, app):
    """The page reads without the write lock: a batch being written elsewhere never holds it up."""
    _issue(client)
    register = Path(app.config["STORE"]).with_name("town-register.sqlite")
    writer = sqlite3.connect(register, timeout=1)
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("UPDATE notices SET note = 'being written' WHERE 0")
    try:
        page = client.get("/notices?page=1")
        assert page.status_code == 200 and "Register (" in page.get_data(as_text=True)
    finally:
        writer.rollback()
        writer.close()


def _interrupted_batch(app) -> dict:
    """A batch of three notices left prepared, its letters never moved into place, as a killed server leaves it."""
    from analysis.notices import due_notices
    from layers.register import new_batch_id

    register = Register(store=app.config["STORE"], create=False)
    results = gpd.read_file(app.config["STORE"], layer="parcel_results")
    day = dt.date(2027, 3, 1)
    folder = Path(app.config["NOTICES_FOLDER"])
    folder.mkdir(parents=True, exist_ok=True)
    return register.prepare_batch(
        due_notices(results, profile=load_profile("fort-plain"), notice_date=day).head(3),
        batch_id=new_batch_id(day),
        kind="connection",
        notice_date=day,
        deadline=day + dt.timedelta(days=90),
        folder=str(folder),
        actor="t",
        profile=("fort-plain", load_profile("fort-plain").version),
    )


def test_a_batch_whose_writer_died_is_shown_interrupted_and_settled_from_the_page(client, app):
    """A batch left prepared by a killed server read "being written" on the page for ever; only a preview or
    `notices resume` settled it. The page now tells it from one a live process is writing, and settles it."""
    from gisapp.notices import batch_lock

    token = csrf(client)
    client.post("/notices/register", data={"csrf_token": token})
    register = Register(store=app.config["STORE"], create=False)
    batch = _interrupted_batch(app)
    with batch_lock(Path(app.config["NOTICES_FOLDER"]), batch["batch_id"]):  # its process alive: left alone
        page = client.get("/notices").get_data(as_text=True)
        assert "being written" in page and "interrupted" not in page and 'id="settle"' not in page
        kept = client.post("/notices/settle", data={"csrf_token": token})
        assert "No unfinished batch to settle" in _message(client.get(kept.headers["Location"]))
        assert register.batch(batch["batch_id"])["status"] == "prepared"
    page = client.get("/notices").get_data(as_text=True)
    assert "interrupted: the process writing it stopped" in page and 'id="settle"' in page
    assert register.batch(batch["batch_id"])["status"] == "prepared"  # looking changes nothing
    done = client.post("/notices/settle", data={"csrf_token": token})
    said = _message(client.get(done.headers["Location"]))
    assert f"batch {batch['batch_id']} (3 notice(s)) was cancelled, never mailed" in said
    assert register.batch(batch["batch_id"])["status"] == "cancelled"
    assert "never mailed" in client.get("/notices").get_data(as_text=True)


@pytest.mark.parametrize("reason", [None, "highway_improvement"])
def test_a_preview_that_settles_an_interrupted_batch_says_so_once(client, app, reason):
    """The preview settled an interrupted batch silently: the clerk saw the preview, not that a batch of
    notices had just been cancelled, never mailed. The page says it once, also when the preview is refused."""
    token = csrf(client)
    client.post("/notices/register", data={"csrf_token": token})
    batch = _interrupted_batch(app)
    form = {"notice_date": "2027-03-01", "csrf_token": token} | ({"notice_reason": reason} if reason else {})
    preview = client.post("/notices/preview", data=form)
    page = preview.get_data(as_text=True)
    assert preview.status_code == (400 if reason else 200)  # fort-plain knows no notice reasons
    said = re.findall(r'<p id="settled"[^>]*>([^<]*)<', page)
    assert len(said) == 1 and page.count(batch["batch_id"] + " (3 notice(s))") == 1
    assert said[0] == (
        f"1 interrupted batch settled: batch {batch['batch_id']} (3 notice(s)) was cancelled, never mailed: its "
        "files were never moved into place."
    )
    again = client.post("/notices/preview", data=form).get_data(as_text=True)
    assert 'id="settled"' not in again  # said once: the next preview has nothing left to settle


def test_the_register_filter_after_a_preview_asks_the_register_page(client):
    """The filter form had no action: after a preview it sent GET /notices/preview, 405 Method Not Allowed."""
    token = csrf(client)
    client.post("/notices/register", data={"csrf_token": token})
    preview = client.post("/notices/preview", data={"notice_date": "2027-03-01", "csrf_token": token})
    action = re.search(r'<form method="get" id="filters" action="([^"]+)"', preview.get_data(as_text=True)).group(1)
    assert action == "/notices" and client.get(f"{action}?status=&q=MILLER").status_code == 200


def test_the_map_popup_gives_the_notice_and_its_deadline_from_the_register(client, app):
    """The popup gave the deadline of the latest analysis run's notice date, contradicting the letter the owner got
    (helper's finding: map 2027-04-04, register 2027-03-15). It now carries the register's notices."""
    noticed = HOSTILE_IDS[1]
    assert client.get("/api/parcel", query_string={"id": noticed}).get_json()["notices"] == []  # no register yet
    _issue(client)
    row = Register(store=app.config["STORE"], create=False).listing().set_index("parcel_id").loc[noticed]
    (notice,) = client.get("/api/parcel", query_string={"id": noticed}).get_json()["notices"]
    assert notice["notice_id"] == row["notice_id"] and notice["status"] == "open"
    assert (notice["issued_date"], notice["deadline"]) == ("2027-03-01", str(row["deadline"]))
    results = gpd.read_file(app.config["STORE"], layer="parcel_results")
    quiet = results.loc[results["status"] != "mandated", "parcel_id"].iloc[0]
    assert client.get("/api/parcel", query_string={"id": quiet}).get_json()["notices"] == []


def test_the_parcels_notice_dates_come_worded_in_the_towns_format(store, tmp_path):
    """The map's script worded the notice's issued date and deadline itself: the parcel's answer sends them in the
    town's date format, beside the ISO dates, an extended deadline as the register has it."""
    fmt = "%d %B %Y (day %j)"  # %j: a code the map's script never knew
    app = make_app(store, tmp_path, DATE_FORMAT=fmt)
    client = app.test_client()
    _issue(client)
    Register(store=app.config["STORE"], create=False).mark(
        HOSTILE_IDS[0], "extended", deadline=dt.date(2027, 9, 1), note="asked in writing", actor="clerk"
    )
    for parcel_id, deadline in ((HOSTILE_IDS[0], "2027-09-01"), (HOSTILE_IDS[1], "2027-05-30")):
        (notice,) = client.get("/api/parcel", query_string={"id": parcel_id}).get_json()["notices"]
        assert (notice["issued_date"], notice["issued_date_text"]) == ("2027-03-01", "01 March 2027 (day 060)")
        assert (notice["deadline"], notice["deadline_text"]) == (deadline, town_date(deadline, fmt))


def test_the_popup_says_the_day_a_parcel_connected_where_the_register_holds_it(store, tmp_path):
    """A notice marked connected keeps the day (connected_on, migration 0008): the popup's answer words it, as it
    words the notice's other dates, and the map says "connected on ..."; a notice still open has none."""
    app = make_app(store, tmp_path)
    client = app.test_client()
    _issue(client)
    Register(store=app.config["STORE"], create=False).mark(
        HOSTILE_IDS[0], "connected", connected_on=dt.date(2027, 3, 4), actor="clerk", today=dt.date(2027, 3, 5)
    )
    (marked,) = client.get("/api/parcel", query_string={"id": HOSTILE_IDS[0]}).get_json()["notices"]
    assert (marked["status"], marked["connected_on_text"]) == (
        "connected",
        town_date("2027-03-04", app.config["DATE_FORMAT"]),
    )
    (still,) = client.get("/api/parcel", query_string={"id": HOSTILE_IDS[1]}).get_json()["notices"]
    assert still["connected_on_text"] is None
    script = (Path(__file__).parents[1] / "gisapp" / "static" / "map.js").read_text(encoding="utf-8")
    assert "notice.connected_on_text" in script  # the popup's Notice row reads it


def _what_if_under_poughkeepsie(app) -> str:
    """Fort Plain's notices issued from the notices page, then a what-if run under Poughkeepsie written to the same
    store (a highway program as its reason): a noticed parcel's ID."""
    _issue(app.test_client())
    own = app.config["STORE"]
    run = ["analyze", "--profile", "poughkeepsie", "--data", own, "--out", own, "--notice-date", "2027-04-01"]
    done = CliRunner().invoke(main, [*run, "--notice-reason", "highway_improvement"])
    assert done.exit_code == 0, done.output
    return HOSTILE_IDS[1]


def test_the_map_popup_says_which_profile_the_notice_and_the_runs_reason_come_from(client, app):
    """After a what-if run under Poughkeepsie, the popup's reason was Poughkeepsie's ("Notice given to promote a
    highway improvement program") beside the notice on record, given under Fort Plain, with nothing to tell them apart:
    the parcel's answer carries the run's profile and each notice's."""
    noticed = _what_if_under_poughkeepsie(app)
    doc = client.get("/api/parcel", query_string={"id": noticed}).get_json()
    assert "highway improvement program" in doc["parcel"]["properties"]["reason"]
    assert doc["run"]["profile"] == "poughkeepsie" and doc["run"]["municipality"].startswith("Town of Poughkeepsie")
    (notice,) = doc["notices"]
    assert (notice["profile"], notice["section"]) == ("fort-plain", "§ 144-4")


def _what_if_at_250_ft(app) -> str:
    """After Fort Plain's notices were issued on the store's run (at § 144-4's 100 ft), a what-if run under Fort
    Plain again with the distance set to 250 ft, written to the same store: a noticed parcel's ID."""
    own = app.config["STORE"]
    run = ["analyze", "--profile", "fort-plain", "--data", own, "--out", own, "--set", "mandate.distance_ft=250"]
    done = CliRunner().invoke(main, run)
    assert done.exit_code == 0, done.output
    return HOSTILE_IDS[1]


def test_the_map_popup_says_when_the_notice_was_given_on_a_run_with_other_settings(client, app):
    """After a what-if run under the notice's own profile with the distance set to 250 ft, the popup showed that
    run's reason ("within 250 ft") above a notice given at 100 ft, unmarked: the profiles were the same. The parcel's
    answer now says, in one sentence, how the run measured otherwise than the notice's."""
    noticed = HOSTILE_IDS[1]
    given_on = latest_run(app.config["STORE"])["run_at"]
    _issue(client)
    (notice,) = client.get("/api/parcel", query_string={"id": noticed}).get_json()["notices"]
    assert notice["other_run"] is None  # the map shows the run the notice was given on
    _what_if_at_250_ft(app)
    doc = client.get("/api/parcel", query_string={"id": noticed}).get_json()
    assert "within 250 ft" in doc["parcel"]["properties"]["reason"]
    assert doc["run"]["settings"] == {"mandate.distance_ft": "250"}
    run_line = re.search(r'id="run-info">(.*?)</p>', client.get("/").get_data(as_text=True), re.S).group(1)
    assert "<b>fort-plain</b> with mandate.distance_ft=250 (value set by the user), analysed" in run_line
    (notice,) = doc["notices"]
    assert notice["other_run"] == (
        "This run measured with mandate.distance_ft=250 (value set by the user); the notice on record was given on "
        f"the run of {town_date(given_on)} with the profile's own values, within 100 ft."
    )


@pytest.mark.parametrize(
    ("given_with", "what_if"),
    [
        ((), "mandate.distance_ft=100"),  # Fort Plain's own distance (§ 144-4), set by the user: nothing differs
        ((), "mandate.distance_ft=100.0"),
        (("--set", "mandate.distance_ft=250"), "mandate.distance_ft=250.0"),  # one value, typed two ways
    ],
)
def test_a_run_setting_the_notices_values_again_is_the_notices_run(client, app, given_with, what_if):
    """Settings were compared as text: a what-if run with mandate.distance_ft=250.0 after notices given on a run at
    250, or with Fort Plain's own 100 set by the user, marked the popup's reason "not the notice on record", though
    the run measured as the notice's did. They are compared as the profile reads them."""
    noticed, own = HOSTILE_IDS[1], app.config["STORE"]
    run = ["analyze", "--profile", "fort-plain", "--data", own, "--out", own]
    if given_with:
        done = CliRunner().invoke(main, [*run, *given_with])
        assert done.exit_code == 0, done.output
    _issue(client)
    done = CliRunner().invoke(main, [*run, "--set", what_if])
    assert done.exit_code == 0, done.output
    doc = client.get("/api/parcel", query_string={"id": noticed}).get_json()
    assert doc["run"]["settings"] == dict([what_if.split("=")])  # the run line still names what was typed
    (notice,) = doc["notices"]
    assert notice["other_run"] is None
    # A value that does differ is still told, however it was typed.
    done = CliRunner().invoke(main, [*run, "--set", "mandate.distance_ft=175.0"])
    assert done.exit_code == 0, done.output
    (notice,) = client.get("/api/parcel", query_string={"id": noticed}).get_json()["notices"]
    assert notice["other_run"].startswith("This run measured with mandate.distance_ft=175 (value set by the user);")


def test_a_violation_notice_is_marked_apart_from_a_what_if_run_as_its_connection_notice_is(
    client, app, tmp_path, monkeypatch
):
    """After `notices violations --out`, a what-if run at 250 ft showed its reason beside the violation notice (the
    one the popup shows) unmarked: a violation batch records no run of its own. It enforces the connection notice it
    cites, so it is measured against the run that one was given on, and the popup says what differs."""
    noticed = HOSTILE_IDS[1]
    given_on = latest_run(app.config["STORE"])["run_at"]
    _issue(client)
    store = app.config["STORE"]
    late = ["notices", "violations", "--store", store, "--as-of", "2027-06-15", "--out", tmp_path / "violations"]
    monkeypatch.setenv("SEWERPLAN_TODAY", "2027-06-15")  # violation notices are issued on their day
    done = CliRunner().invoke(main, [str(a) for a in late])
    assert done.exit_code == 0, done.output
    _what_if_at_250_ft(app)
    connection, violation = client.get("/api/parcel", query_string={"id": noticed}).get_json()["notices"]
    assert (connection["notice_type"], violation["notice_type"]) == ("connection", "violation")
    said = (
        "This run measured with mandate.distance_ft=250 (value set by the user); the notice on record was given on "
        f"the run of {town_date(given_on)} with the profile's own values, within 100 ft."
    )
    assert violation["other_run"] == connection["other_run"] == said


def test_the_register_table_is_paged(client, app):
    _issue(client)
    register = Register(store=app.config["STORE"], create=False)
    total = len(register.listing())
    from gisapp.views import notices as view

    view.PAGE_ROWS, saved = 5, view.PAGE_ROWS
    try:
        first = client.get("/notices").get_data(as_text=True)
        assert first.count('class="inline mark-form"') == 5 and f"page 1 of {-(-total // 5)}" in first
        second = client.get("/notices?page=2").get_data(as_text=True)
        ids = re.findall(r'name="parcel_id" value="([^"]+)"', first + second)
        assert len(set(ids)) == 10
        # A page past the last, even past SQLite's integers, shows the last page rather than a server error.
        last = -(-total // 5)
        for page in (last + 7, "999999999999999999999"):
            answer = client.get(f"/notices?page={page}")
            assert answer.status_code == 200 and f"page {last} of {last}" in answer.get_data(as_text=True)
    finally:
        view.PAGE_ROWS = saved


def test_marking_a_notice_keeps_the_registers_filters_and_page(client, app, monkeypatch):
    """A clerk who filtered the register (open notices, page 2) and saved a row's change was sent back to page 1 of
    every notice, to find the next row again."""
    from gisapp.views import notices as view

    _issue(client)
    _days_later(monkeypatch)
    monkeypatch.setattr(view, "PAGE_ROWS", 2)
    page = client.get("/notices?status=open&page=2").get_data(as_text=True)
    form = re.search(r'<form method="post" action="/notices/mark".*?</form>', page, re.S).group(0)
    sent = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', form))
    for status, says in (("connected", ": connected on March 5, 2027"), ("extended", "needs the new deadline")):
        done = client.post("/notices/mark", data=sent | {"status": status})
        assert done.status_code == 302
        back = client.get(done.headers["Location"])
        assert back.request.args.to_dict() == {"status": "open", "page": "2", "said": back.request.args["said"]}
        assert says in _message(back) and "page 2 of" in back.get_data(as_text=True)


# -- in a real browser --------------------------------------------------------------------------------------------


def _shot(driver, name):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(SCREENSHOTS / f"{name}.png"))


@pytest.mark.browser
def test_notices_page_in_chromium(store, tmp_path, browser, monkeypatch):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    app = make_app(store, tmp_path)
    with serving(app) as url:
        browser.get(url + "/notices")
        browser.find_element(By.ID, "create-register").click()
        wait_for(browser, lambda: browser.find_elements(By.ID, "notice-form"))
        browser.find_element(By.NAME, "notice_date").send_keys("03012027")
        browser.find_element(By.ID, "preview-button").click()
        button = wait_for(browser, lambda: browser.find_elements(By.ID, "issue-button"))[0]
        assert "Confirm: issue" in button.text and browser.find_elements(By.ID, "deadline-flag")
        assert Register(store=app.config["STORE"], create=False).listing().empty  # nothing until confirmed
        _shot(browser, "notices-preview")
        button.click()
        assert message_saying(browser, "notice(s) issued", timeout=120).is_displayed()
        links = browser.find_elements(By.CSS_SELECTOR, "#batches a")
        assert [a.text for a in links][:1] == ["all letters (PDF, mailing order)"]
        assert browser.find_elements(By.CSS_SELECTOR, ".letter-link")
        forms = browser.find_elements(By.CSS_SELECTOR, ".mark-form")
        hostile = next(
            f for f in forms if f.find_element(By.NAME, "parcel_id").get_attribute("value") == HOSTILE_IDS[0]
        )
        # A plain Save is stopped by the browser (no status chosen) and the page stays as it was.
        hostile.find_element(By.TAG_NAME, "button").click()
        assert not browser.find_elements(By.ID, "error") and browser.current_url.endswith("issued.") is False
        Select(hostile.find_element(By.NAME, "status")).select_by_value("extended")
        hostile.find_element(By.NAME, "until").send_keys("09012027")
        hostile.find_element(By.NAME, "note").send_keys("asked in writing")
        hostile.find_element(By.TAG_NAME, "button").click()
        done = message_saying(browser, f"{HOSTILE_IDS[0]}: extended.")
        assert done.is_displayed()
        row = Register(store=app.config["STORE"], create=False).listing().set_index("parcel_id").loc[HOSTILE_IDS[0]]
        assert row["status"] == "extended" and row["deadline"] == dt.date(2027, 9, 1)
        _shot(browser, "notices-issued")
        popup = open_popup(browser, url, HOSTILE_IDS[0], row["notice_id"])  # the map's popup tells the same deadline
        assert "extended" in popup.text and "(extended)" in popup.text and "2027" in popup.text
        assert "this run's notice date" not in popup.text
        # The reason no longer ends with the run's own deadline, which contradicted the extended one.
        assert "requires an occupied property" in popup.text and "Deadline 2027-" not in popup.text
        browser.get(url + "/notices/files/B1/nothing.pdf")
        browser.find_element(By.LINK_TEXT, "Notices").click()
        wait_for(browser, lambda: browser.find_elements(By.ID, "register"))
        # The batch's mailing list given back with each receipt's article number, through the page's form (a file
        # field in a multipart form): every notice of every letter gets its number, and the register's served
        # column says it.
        (listed,) = (tmp_path / "notices").glob("*/mailing-list.csv")
        back = pd.read_csv(listed, dtype=str, keep_default_na=False, encoding="utf-8-sig")
        back["certified_article_no"] = [receipt_number(i) for i in range(len(back))]
        back.to_csv(tmp_path / "given-back.csv", index=False)
        browser.find_element(By.CSS_SELECTOR, "#mailing-section summary").click()
        form = browser.find_element(By.ID, "mailing-form")
        form.find_element(By.NAME, "mailing_list").send_keys(str(tmp_path / "given-back.csv"))
        form.find_element(By.ID, "mailing-button").click()
        assert message_saying(browser, f"Recorded the article numbers of {len(back)} letter(s)").is_displayed()
        served = [td.text for td in browser.find_elements(By.CSS_SELECTOR, "#register td.served")]
        assert served and all(text.startswith("certified mail, article no. 9589 0710 5270 0123") for text in served)
        # A notice handed to its owner four days after the letters went out, through the page's form: Fort Plain
        # § 144-4 counts from the notice's date, so the deadline stays and the message says why; the served column
        # says both services.
        monkeypatch.setenv("SEWERPLAN_TODAY", "2027-03-10")
        handed = Register(store=app.config["STORE"], create=False).listing(status="open").iloc[0]
        browser.find_element(By.CSS_SELECTOR, "#service-section summary").click()
        form = browser.find_element(By.ID, "service-form")
        form.find_element(By.NAME, "notice_id").send_keys(handed["notice_id"])
        form.find_element(By.NAME, "on").send_keys("03052027")
        form.find_element(By.NAME, "by").send_keys("J. Ruiz, code enforcement")
        form.find_element(By.ID, "service-button").click()
        said = message_saying(browser, f"Notice {handed['notice_id']} (parcel {handed['parcel_id']}): recorded served")
        assert "§ 144-4 counts its days from the date of the notice, not from its service" in said.text
        cells = [td.text for td in browser.find_elements(By.CSS_SELECTOR, "#register td.served")]
        assert any(
            t.startswith("in person on March 5, 2027 by J. Ruiz, code enforcement; also certified mail") for t in cells
        )
        assert (
            Register(store=app.config["STORE"], create=False)
            .listing()
            .set_index("notice_id")
            .loc[handed["notice_id"], "deadline"]
            == handed["deadline"]
        )


@pytest.mark.browser
def test_the_popup_marks_a_what_if_runs_reason_apart_from_the_notice_in_chromium(store, tmp_path, browser):

    app = make_app(store, tmp_path)
    noticed = _what_if_under_poughkeepsie(app)
    notice_id = Register(store=app.config["STORE"], create=False).notices_of(noticed)[0]["notice_id"]
    with serving(app) as url:
        popup = open_popup(browser, url, noticed, notice_id)
        said = " ".join(popup.text.split())
        _shot(browser, "popup-what-if-run")
        assert "Reason (this run, profile poughkeepsie, not the notice on record) Sewer main" in said
        assert "highway improvement program" in said and "This run measured under profile poughkeepsie" in said
        assert "issued March 1, 2027 under profile fort-plain (§ 144-4)" in said


@pytest.mark.browser
def test_the_popup_marks_a_what_if_run_at_another_distance_apart_from_the_notice_in_chromium(store, tmp_path, browser):
    """A what-if run under the notice's own profile, at 250 ft: the popup marks its reason and says what differs,
    and the map's run line names the value set."""
    from selenium.webdriver.common.by import By

    app = make_app(store, tmp_path)
    given_on = town_date(latest_run(app.config["STORE"])["run_at"])
    _issue(app.test_client())
    noticed = _what_if_at_250_ft(app)
    notice_id = Register(store=app.config["STORE"], create=False).notices_of(noticed)[0]["notice_id"]
    with serving(app) as url:
        popup = open_popup(browser, url, noticed, notice_id)
        said = " ".join(popup.text.split())
        _shot(browser, "popup-what-if-250-ft")
        assert "Reason (this run, not the notice on record) Sewer main" in said and "within 250 ft" in said
        assert (
            "This run measured with mandate.distance_ft=250 (value set by the user); the notice on record was given "
            f"on the run of {given_on} with the profile's own values, within 100 ft." in said
        )
        run_line = " ".join(browser.find_element(By.ID, "run-info").text.split())
        assert "profile fort-plain with mandate.distance_ft=250 (value set by the user), analysed" in run_line


def test_the_overdue_filter_waits_for_the_business_day_as_violations_do(client, app, monkeypatch):
    """The page's "overdue today" compared the deadline as written: on Memorial Day 2027-05-31 it showed the notices
    due Sunday 2027-05-30 as overdue, though § 25-a gives the owners until Tuesday 2027-06-01."""
    _issue(client)
    issued = len(Register(store=app.config["STORE"], create=False).listing(status="open"))
    for today, shown in (("2027-05-31", "no notices"), ("2027-06-01", "no notices"), ("2027-06-02", f"{issued} ")):
        monkeypatch.setenv("SEWERPLAN_TODAY", today)
        page = client.get("/notices?overdue=1").get_data(as_text=True)
        assert f"<h3>Register ({shown}" in page, (today, re.search(r"<h3>Register[^<]*", page))


def test_a_notice_date_too_far_ahead_is_refused_plainly(client, app):
    """9999-12-31 gave a server error in the preview and a failed run ("date value out of range")."""
    Register(store=app.config["STORE"], create=True).close()
    token = csrf(client)
    preview = client.post("/notices/preview", data={"notice_date": "9999-12-31", "csrf_token": token})
    assert preview.status_code == 400 and "lies after 2999" in preview.get_data(as_text=True)
    run = client.post("/analysis/run", data={"profile": "fort-plain", "notice_date": "9999-12-31", "csrf_token": token})
    assert run.status_code == 400 and "lies after 2999" in run.get_json()["error"]["message"]


def test_an_absurd_past_notice_date_is_refused_by_the_cli_and_the_map_alike(client, app):
    """`analyze --notice-date 0001-01-01` and the map's run took any past date; both now refuse one before 1900 with
    the same sentence (the one check, analysis.mandate.check_notice), and still take last century's."""
    store = app.config["STORE"]
    said = "The notice date 0001-01-01 lies before 1900"
    cli = CliRunner().invoke(
        main, ["analyze", "--profile", "fort-plain", "--data", store, "--out", store, "--notice-date", "0001-01-01"]
    )
    assert cli.exit_code == 2 and said in cli.output and "Use --notice-date" in cli.output
    token = csrf(client)
    run = client.post("/analysis/run", data={"profile": "fort-plain", "notice_date": "0001-01-01", "csrf_token": token})
    assert run.status_code == 400 and said in run.get_json()["error"]["message"]
    kept = CliRunner().invoke(
        main, ["analyze", "--profile", "fort-plain", "--data", store, "--out", store, "--notice-date", "1999-03-01"]
    )
    assert kept.exit_code == 0, kept.output


def test_a_day_the_calendar_does_not_have_is_told_so_by_the_cli_and_the_web_alike(client, app):
    """2027-02-30 was reported as not matching the format YYYY-MM-DD, which it does: February 2027 has 28 days.
    The command line, the map's run and the notices preview read it with the one function, analysis.dates."""
    store = app.config["STORE"]
    said = "2027-02-30 does not exist: February 2027 has 28 days."
    for command in (["analyze", "--profile", "fort-plain"], ["notices", "preview", "--profile", "fort-plain"]):
        cli = CliRunner().invoke(main, [*command, "--data", store, "--notice-date", "2027-02-30"])
        assert cli.exit_code == 2 and said in cli.output and "format" not in cli.output, cli.output
    Register(store=store, create=True).close()
    token = csrf(client)
    run = client.post("/analysis/run", data={"profile": "fort-plain", "notice_date": "2027-02-30", "csrf_token": token})
    assert run.status_code == 400 and said in run.get_json()["error"]["message"]
    preview = client.post("/notices/preview", data={"notice_date": "2027-02-30", "csrf_token": token})
    assert preview.status_code == 400 and said in preview.get_data(as_text=True)
    leap = CliRunner().invoke(
        main, ["analyze", "--profile", "fort-plain", "--data", store, "--notice-date", "2028-02-29"]
    )
    assert leap.exit_code == 0, leap.output


def test_what_an_action_did_is_said_on_the_page_it_sends_back_to_and_nowhere_else(client, app, monkeypatch):
    """A row's change whose redirect was not followed (sent by a script, or the clerk opened another register page
    in a second tab first) was said on whichever notices page came next: "12.1-1-2/A: connected." above a register
    filtered to withdrawn notices, out of context, and then never on the page it was for."""
    _issue(client)
    _days_later(monkeypatch)
    token = csrf(client)
    parcel, notice = Register(store=app.config["STORE"], create=False).listing()[["parcel_id", "notice_id"]].iloc[0]
    sent = {"parcel_id": parcel, "notice_id": notice, "csrf_token": token}
    done = client.post("/notices/mark", data=sent | {"status": "connected"})
    refused = client.post("/notices/mark", data=sent)
    assert done.status_code == refused.status_code == 302
    for elsewhere in ("/notices?status=withdrawn", "/notices", "/plans"):  # opened before either redirect
        page = client.get(elsewhere)
        assert f"{parcel}: connected" not in page.get_data(as_text=True) and not _message(page), elsewhere
    assert _message(client.get(refused.headers["Location"])).startswith(f"Choose what happened to parcel {parcel}")
    assert (
        _message(client.get(done.headers["Location"]))
        == f"{parcel}: connected on March 5, 2027 (today: no day was given)."
    )
    assert not _message(client.get(done.headers["Location"]))  # said once: a reload says nothing again


@pytest.mark.parametrize("path", ["/notices", "/plans"])
def test_a_crafted_link_cannot_put_words_in_the_success_banner(client, path):
    """/notices?message=... showed any text from the address in the green banner: a link could make the page say
    that notices were issued. The banner says only what the request before did (kept in the signed session, the
    address carrying only its key: a made-up key says nothing)."""
    client.post("/notices/register", data={"csrf_token": csrf(client)})  # its "created" sentence kept, not said
    crafted = "48 notice(s) issued, 0 already noticed; batch B-2027-03-01-01, 48 letter(s)"
    asked = {"message": crafted, "error": "Your register is corrupt", "said": "made-up"}
    page = client.get(path, query_string=asked)
    text = page.get_data(as_text=True)
    assert page.status_code == 200 and "48 notice(s)" not in text and "corrupt" not in text
    assert 'id="message"' not in text and 'id="error"' not in text


def test_a_map_run_takes_its_workspace_and_its_notice_from_one_run_record(client, app, monkeypatch):
    """POST /analysis/run read the latest run twice: once for its workspace, once for its notice. A run landing
    between the two reads gave the new run one run's settings and the other's notice date. It now reads once."""
    from gisapp import services
    from gisapp.views import analysis as view

    first = {
        "notice_date": "2027-03-01",
        "workspace": {"profile": "fort-plain", "settings": {"mandate.distance_ft": 150}},
    }
    landed = {"notice_date": "2027-09-01", "workspace": {"profile": "fort-plain", "settings": {}}}
    records = iter([first, landed, landed])
    monkeypatch.setattr(services, "latest_run", lambda store: next(records))
    started = {}

    def start(app, store, who, spec, notice_date, notice_reason):
        started.update(spec=spec, notice_date=notice_date)
        raise view.StoreBusyError("captured")

    monkeypatch.setattr(view, "start_analysis", start)
    answer = client.post("/analysis/run", data={"profile": "fort-plain", "csrf_token": csrf(client)})
    assert answer.status_code == 409
    assert started["spec"].settings == (("mandate.distance_ft", 150),)
    assert started["notice_date"] == dt.date(2027, 3, 1)


@pytest.mark.browser
def test_the_popup_says_when_the_register_records_a_mandated_parcel_connected_in_chromium(
    store, tmp_path, browser, monkeypatch
):
    """After `notices mark PARCEL connected`, the popup read "Status: must connect" above "Notice …, already
    connected", with nothing to say which holds: the run the map shows read the data before the owner connected. A
    Register row now says so and how to show it connected; a parcel exempt in the register is told too."""

    app = make_app(store, tmp_path)
    client = app.test_client()
    _issue(client)
    _days_later(monkeypatch)
    connected, exempt = HOSTILE_IDS[0], HOSTILE_IDS[1]
    for parcel, status in ((connected, "connected"), (exempt, "exempt")):
        done = CliRunner().invoke(main, ["notices", "mark", parcel, status, "--store", str(app.config["STORE"])])
        assert done.exit_code == 0, done.output
    doc = client.get("/api/parcel", query_string={"id": connected}).get_json()
    assert doc["parcel"]["properties"]["status"] == "mandated"
    assert doc["register_note"].startswith("The notice register records this parcel connected (notice ")
    told = client.get("/api/parcel", query_string={"id": exempt}).get_json()["register_note"]
    assert told.endswith("it is given no further notice, whatever this run finds.")
    unmarked = HOSTILE_IDS[2]  # noticed, its notice still open
    assert client.get("/api/parcel", query_string={"id": unmarked}).get_json()["register_note"] is None
    with serving(app) as url:
        popup = open_popup(browser, url, connected, "Register")
        said = " ".join(popup.text.split())
        _shot(browser, "popup-register-connected")
        assert "Status must connect Register The notice register records this parcel connected" in said
        # What to do is said as the web does it: a web user cannot type `sewerplan analyze --connected FILE.csv`.
        assert "to show it connected, upload the data again on the Data page with a connected column" in said
        assert "sewerplan" not in said and "--connected" not in said


@pytest.mark.browser
def test_the_summary_says_how_many_parcels_that_must_connect_the_register_records_connected_in_chromium(
    store, tmp_path, browser, monkeypatch
):
    """The Summary counted a parcel under "must connect" with nothing to say that the register records it connected
    (`notices mark PARCEL connected`): the popup said so, the page the board reads did not. One sentence now says how
    many, and how to make the run read them; the run's own counts stay as the run found them."""
    from selenium.webdriver.common.by import By

    app = make_app(store, tmp_path)
    client = app.test_client()
    _issue(client)
    _days_later(monkeypatch)
    page = client.get("/summary").get_data(as_text=True)
    assert 'id="register-recorded"' not in page  # every notice still open: nothing to say
    counts = re.search(r'<table id="counts">.*?</table>', page, re.S).group(0)
    marks = [(HOSTILE_IDS[0], "connected"), (HOSTILE_IDS[1], "connected"), (HOSTILE_IDS[2], "exempt")]
    marks += [(HOSTILE_IDS[3], "withdrawn")]  # neither: still counted as must connect, and not in the sentence
    for parcel, status in marks:
        done = CliRunner().invoke(main, ["notices", "mark", parcel, status, "--store", str(app.config["STORE"])])
        assert done.exit_code == 0, done.output
    page = client.get("/summary").get_data(as_text=True)
    assert re.search(r'<table id="counts">.*?</table>', page, re.S).group(0) == counts  # the run's counts unchanged
    expected = (
        "The notice register records 2 of these parcels connected and 1 exempt; this run did not read the register, "
        "so it still counts them as must connect: to show the connected ones connected, upload the data again on the "
        "Data page with a connected column in the parcels (yes where the billing records show a connection), run the "
        "analysis on that upload and publish it as the town's store (an exempt parcel is given no further notice, "
        "whatever this run finds)."
    )
    with serving(app) as url:
        browser.get(url + "/summary")
        said = wait_for(browser, lambda: browser.find_element(By.ID, "register-recorded").text)
        _shot(browser, "summary-register-recorded")
        assert " ".join(said.split()) == expected
        heading = browser.find_element(By.XPATH, "//p[@id='register-recorded']/preceding-sibling::h3[1]").text
        assert heading.startswith("Parcels that must connect")


def test_the_summary_api_gives_the_register_counts_the_summary_page_says(store, tmp_path, monkeypatch):
    """/api/summary gave the run's counts alone: a program or a QGIS user reading it saw parcels under "mandated"
    with nothing saying the register records some of them connected or exempt, which the Summary page said. It now
    gives the numbers and the page's sentence, from the one function the page uses; the counts stay the run's. The
    sentence says what to do on the web (the Data page), not a command a web user cannot type."""
    import html

    app = make_app(store, tmp_path)
    client = app.test_client()

    def page_says() -> str | None:
        found = re.search(r'<p id="register-recorded">(.*?)</p>', client.get("/summary").get_data(as_text=True), re.S)
        return None if found is None else html.unescape(found.group(1))

    answer = client.get("/api/summary")
    assert answer.status_code == 200 and answer.content_type == "application/json"
    doc = answer.get_json()
    assert doc["register_recorded"] is None and doc["register_note"] is None  # no register yet
    # the store by its file's name: a viewer was given the server's folders (/srv/.../instance/sewerplan.gpkg)
    assert doc["store"] == Path(store).name and str(Path(store).parent) not in answer.get_data(as_text=True)
    counts = doc["counts"]
    _issue(client)
    _days_later(monkeypatch)
    doc = client.get("/api/summary").get_json()
    assert doc["register_recorded"] == {"connected": 0, "exempt": 0} and doc["register_note"] is None
    assert page_says() is None
    marks = [(HOSTILE_IDS[0], "connected"), (HOSTILE_IDS[1], "connected"), (HOSTILE_IDS[2], "exempt")]
    marks += [(HOSTILE_IDS[3], "withdrawn")]  # neither: not counted
    for parcel, status in marks:
        done = CliRunner().invoke(main, ["notices", "mark", parcel, status, "--store", str(app.config["STORE"])])
        assert done.exit_code == 0, done.output
    doc = client.get("/api/summary").get_json()
    assert doc["counts"] == counts  # the run's, which did not read the register
    assert doc["register_recorded"] == {"connected": 2, "exempt": 1}
    said = page_says()
    assert said is not None and doc["register_note"] == said
    assert said.startswith("The notice register records 2 of these parcels connected and 1 exempt;")
    assert "upload the data again on the Data page with a connected column in the parcels" in said
    assert "sewerplan" not in said and "--connected" not in said


# -- a stale tab: the Save form names the notice the clerk saw ------------------------------------------------------


def _mark_form(page: str, parcel: str) -> dict:
    """The hidden fields of ``parcel``'s Save form on a notices page, as the browser would send them."""
    for form in re.findall(r'<form method="post" action="/notices/mark".*?</form>', page, re.S):
        fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', form))
        if fields.get("parcel_id", "").replace("&#34;", '"') == parcel:
            return fields
    raise AssertionError(f"no Save form for {parcel}")


def _issue_again(client, day: str = "2027-03-02") -> None:
    token = csrf(client)
    preview = client.post("/notices/preview", data={"notice_date": day, "csrf_token": token}).get_data(as_text=True)
    confirm = re.search(r'name="confirm" value="([0-9a-f]+)"', preview).group(1)
    done = client.post("/notices/issue", data={"notice_date": day, "confirm": confirm, "csrf_token": token})
    assert done.status_code == 302


def test_a_save_from_a_stale_page_never_changes_a_notice_the_clerk_did_not_see(client, app):
    """The Save form sent the parcel ID alone: with notice N1 withdrawn and N2 issued for that parcel in another tab
    (or by a colleague), an extension saved from the old page changed N2, which the clerk never saw. The form names
    its notice now, and a notice that is no longer open is refused (409) with what changed and to reload."""
    page = _issue(client)
    register = Register(store=app.config["STORE"], create=False)
    parcel = register.listing()["parcel_id"].iloc[0]
    form = _mark_form(page, parcel)
    first = register.notices_of(parcel)[0]["notice_id"]
    assert form["notice_id"] == first
    register.mark(parcel, "withdrawn", actor="web:colleague", note="wrong owner")  # in another tab
    _issue_again(client)  # N2 for the same parcel
    second = register.notices_of(parcel)[-1]
    assert second["notice_id"] != first and second["status"] == "open"
    stale = client.post("/notices/mark", data=form | {"status": "extended", "until": "2027-09-01"})
    said = _message(stale)
    assert stale.status_code == 409, said
    assert f"Notice {first} of parcel {parcel} was withdrawn" in said and second["notice_id"] in said
    assert "Reload the notices page" in said and "nothing was changed" in said.lower()
    now = register.notices_of(parcel)
    assert [n["status"] for n in now] == ["withdrawn", "open"] and now[-1]["deadline"] == second["deadline"]
    unnamed = client.post("/notices/mark", data=form | {"status": "connected", "notice_id": ""})  # an older page
    assert unnamed.status_code == 409 and "Reload the notices page" in _message(unnamed)
    assert register.notices_of(parcel)[-1]["status"] == "open"
    # The fresh page's form names N2 and saves it.
    fresh = _mark_form(client.get(f"/notices?q={quote(parcel)}").get_data(as_text=True), parcel)
    assert fresh["notice_id"] == second["notice_id"]
    done = client.post("/notices/mark", data=fresh | {"status": "extended", "until": "2027-09-01"})
    assert done.status_code == 302 and f"{parcel}: extended." in _message(client.get(done.headers["Location"]))
    assert register.notices_of(parcel)[-1]["deadline"] == dt.date(2027, 9, 1)


def test_a_save_changes_only_the_notice_of_its_row(client, app, monkeypatch):
    """A parcel with an open connection notice and an open violation notice: the connection notice's row changes
    that notice alone (the violation notice has its own row and form)."""
    _issue(client)
    _days_later(monkeypatch)
    register = Register(store=app.config["STORE"], create=False)
    parcel = register.listing()["parcel_id"].iloc[0]
    notice = register.notices_of(parcel)[0]
    row = notice | {"issued_date": dt.date(2027, 6, 1), "notice_type": "violation", "notice_reason": None}
    row |= {"original_notice_id": notice["notice_id"]}
    import pandas as pd

    batch = register.prepare_batch(
        pd.DataFrame([row]),
        batch_id="B20270601-AAAAAA",
        kind="violation",
        notice_date=dt.date(2027, 6, 1),
        deadline=dt.date(2027, 6, 11),
        folder="/nowhere",
        actor="t",
        profile=("fort-plain", "1"),
    )
    register.finish_batch(
        batch["batch_id"], letters={n["notice_id"]: ("B/x.pdf", 1) for n in batch["notices"]}, actor="t"
    )
    page = client.get(f"/notices?q={quote(parcel)}").get_data(as_text=True)
    forms = re.findall(r'name="notice_id" value="([^"]+)"', page)
    assert len(forms) == 2 and notice["notice_id"] in forms
    done = client.post(
        "/notices/mark",
        data={"parcel_id": parcel, "notice_id": notice["notice_id"], "status": "connected", "csrf_token": csrf(client)},
    )
    assert done.status_code == 302
    assert [n["status"] for n in register.notices_of(parcel)] == ["connected", "open"]


@pytest.mark.browser
def test_a_save_from_a_stale_tab_is_refused_in_chromium(store, tmp_path, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    app = make_app(store, tmp_path)
    client = app.test_client()
    _issue(client)
    register = Register(store=app.config["STORE"], create=False)
    parcel = HOSTILE_IDS[0]
    with serving(app) as url:
        browser.get(url + f"/notices?q={quote(parcel)}")  # the clerk's tab, showing N1
        form = wait_for(browser, lambda: browser.find_elements(By.CSS_SELECTOR, ".mark-form"))[0]
        register.mark(parcel, "withdrawn", actor="web:colleague")  # meanwhile, elsewhere
        _issue_again(client)
        second = register.notices_of(parcel)[-1]
        Select(form.find_element(By.NAME, "status")).select_by_value("connected")
        form.find_element(By.TAG_NAME, "button").click()
        said = wait_for(browser, lambda: browser.find_elements(By.ID, "error"))[0]
        assert "was withdrawn" in said.text and "Reload the notices page" in said.text
        _shot(browser, "notices-stale-tab")
        assert register.notices_of(parcel)[-1]["status"] == "open" and second["status"] == "open"


# -- a connection made without a notice ---------------------------------------------------------------------------


def test_the_page_records_a_connection_made_without_a_notice(client, app):
    """A parcel never noticed (or held back) whose owner connected could not be recorded connected: the Summary
    kept counting it as must connect with nothing from the register, and every later batch offered it again."""
    _issue(client)
    register = Register(store=app.config["STORE"], create=False)
    parcel = HOSTILE_IDS[0]
    notice = register.notices_of(parcel)[0]
    register.mark(parcel, "withdrawn", actor="web:pat")  # wrong owner: the notice is withdrawn, never noticed again
    token = csrf(client)
    done = client.post(
        "/notices/record", data={"parcel_id": parcel, "on": "2027-02-10", "note": "permit 14", "csrf_token": token}
    )
    assert done.status_code == 302
    said = _message(client.get(done.headers["Location"]))
    # Its day written as every other date on the pages (the town's format, long by default), not 2027-02-10.
    assert said.startswith(f"{parcel}: recorded connected on February 10, 2027 (R-") and "without a notice" in said
    rows = register.notices_of(parcel)  # by the day: the connection (Feb 10) before the notice withdrawn (Mar 1)
    assert [(n["notice_type"], n["status"]) for n in rows] == [("record", "connected"), ("connection", "withdrawn")]
    assert register.events_of(rows[0]["notice_id"])[0]["actor"] == "web:local"  # the one local planner
    # The register on the page shows each notice's note: a record's permit, or why a record is a duplicate.
    row = re.search(
        rf"<tr><td class=\"nowrap\">{rows[0]['notice_id']}</td>.*?</tr>",
        client.get("/notices").get_data(as_text=True),
        re.S,
    )
    assert '<span class="note">: permit 14</span>' in row.group(0)
    # The popup and the Summary say the register records it connected, though its withdrawn notice came later.
    doc = client.get("/api/parcel", query_string={"id": parcel}).get_json()
    assert "connected on February 10, 2027, recorded without a notice" in doc["register_note"]
    app.config["DATE_FORMAT"] = "%m/%d/%Y"  # a town that writes its dates short has them short here too
    doc = client.get("/api/parcel", query_string={"id": parcel}).get_json()
    assert "connected on 02/10/2027, recorded without a notice" in doc["register_note"]
    app.config["DATE_FORMAT"] = "%B %-d, %Y"
    assert client.get("/api/summary").get_json()["register_recorded"]["connected"] == 1
    preview = client.post("/notices/preview", data={"notice_date": "2027-03-02", "csrf_token": token})
    assert parcel not in preview.get_data(as_text=True).replace("&#34;", '"').split("Register (")[0]
    # Refused, each with what to do: a parcel with an open notice, one recorded already, a typo, a day to come.
    for form, says in (
        ({"parcel_id": HOSTILE_IDS[1], "on": "2027-02-10"}, "has an open notice"),
        ({"parcel_id": parcel, "on": "2027-02-11"}, "already recorded connected"),
        ({"parcel_id": "NO-SUCH", "on": "2027-02-10"}, "is not among the parcels"),
        ({"parcel_id": HOSTILE_IDS[1], "on": "2027-12-01"}, "after today"),
    ):
        refused = client.post("/notices/record", data=form | {"csrf_token": token})
        assert refused.status_code == 400 and says in _message(refused), form
        assert "sewerplan" not in _message(refused)  # a clerk is told the page's way, never a command (a tester)
    assert notice["notice_id"] == rows[1]["notice_id"]


def _record_form(page: str) -> dict:
    """The values the page's "Record connected" form comes filled in with, and whether its section is open."""
    found = re.search(r'<details id="record-section"([^>]*)>.*?</form>', page, re.S)
    values = dict(
        re.findall(r'<input (?:type="date" )?name="(parcel_id|on|note)"[^>]*?value="([^"]*)"', found.group(0))
    )
    return values | {"open": "open" in found.group(1)}


def test_a_refused_record_comes_back_filled_in_as_the_clerk_typed_it(client, app):
    """A record the server refused (a typo in the parcel ID, a day to come, a parcel with an open notice) came back
    through a redirect with the form empty and closed: the clerk lost the parcel, the day and the note they typed."""
    _issue(client)
    token = csrf(client)
    typed = {"parcel_id": "12.1-1-2/Ä", "on": "2027-02-10", "note": 'permit "14" & inspected'}
    refused = client.post(
        "/notices/record", data=typed | {"csrf_token": token, "back_q": "12.1", "back_status": "open"}
    )
    page = refused.get_data(as_text=True)
    assert refused.status_code == 400 and "is not among the parcels" in _message(refused)
    assert _record_form(page) == {
        "parcel_id": "12.1-1-2/Ä",
        "on": "2027-02-10",
        "note": "permit &#34;14&#34; &amp; inspected",
        "open": True,
    }
    # The clerk's register filters travel on, so the corrected record returns to the register as they had it.
    assert 'name="back_q" value="12.1"' in page and 'name="back_status" value="open"' in page
    missing = client.post("/notices/record", data={"parcel_id": HOSTILE_IDS[1], "note": "n", "csrf_token": token})
    assert missing.status_code == 400 and "Give the parcel ID and the day it connected" in _message(missing)
    assert _record_form(missing.get_data(as_text=True)) == {
        "parcel_id": HOSTILE_IDS[1],
        "on": "",
        "note": "n",
        "open": True,
    }
    # A page not refusing a record keeps the form empty and closed.
    assert _record_form(client.get("/notices").get_data(as_text=True)) == {
        "parcel_id": "",
        "on": "",
        "note": "",
        "open": False,
    }


@pytest.mark.browser
def test_a_connection_made_without_a_notice_is_recorded_in_chromium(store, tmp_path, browser):
    from selenium.webdriver.common.by import By

    app = make_app(store, tmp_path)
    client = app.test_client()
    _issue(client)
    register = Register(store=app.config["STORE"], create=False)
    parcel = HOSTILE_IDS[2]
    register.mark(parcel, "withdrawn", actor="web:pat")
    with serving(app) as url:
        browser.get(url + "/notices")
        browser.find_element(By.CSS_SELECTOR, "#record-section summary").click()
        form = browser.find_element(By.ID, "record-form")
        form.find_element(By.NAME, "parcel_id").send_keys(parcel)
        form.find_element(By.NAME, "on").send_keys("02102027")
        form.find_element(By.NAME, "note").send_keys("inspected")
        form.find_element(By.ID, "record-button").click()
        assert message_saying(browser, f"{parcel}: recorded connected on February 10, 2027").is_displayed()
        _shot(browser, "notices-recorded-without-notice")
        # The record's row names no owner (a record has none): its owner cell was "nan".
        # (found by its type cell, "record": every issued notice's "served" cell says "... article no. not recorded")
        rows = browser.find_elements(By.CSS_SELECTOR, "#register tr")
        row = [tr for tr in rows if [td.text for td in tr.find_elements(By.TAG_NAME, "td")][3:4] == ["record"]][0]
        assert row.find_elements(By.TAG_NAME, "td")[2].text == "" and "nan" not in row.text
        # A parcel with an open notice is refused with what to do on this page (its row's Save), not a command.
        browser.find_element(By.CSS_SELECTOR, "#record-section summary").click()
        form = browser.find_element(By.ID, "record-form")
        form.find_element(By.NAME, "parcel_id").send_keys(HOSTILE_IDS[1])
        form.find_element(By.NAME, "on").send_keys("02102027")
        form.find_element(By.ID, "record-button").click()
        said = wait_for(browser, lambda: [e.text for e in browser.find_elements(By.ID, "error")])[0]
        assert "has an open notice" in said, said
        assert "Save on its row of the register" in said and "sewerplan" not in said, said
        assert register.notices_of(parcel)[0]["notice_type"] == "record"
        popup = open_popup(browser, url, parcel, "recorded without a notice")
        assert "none: no notice was given" in popup.text


@pytest.mark.browser
def test_a_refused_record_keeps_what_the_clerk_typed_in_chromium(store, tmp_path, browser):
    """Refused (a day to come, a typo in the parcel ID, a parcel with an open notice), the "Record connected" form
    came back empty and closed: the clerk had to open it and type the parcel, the day and the note again."""
    from selenium.webdriver.common.by import By

    app = make_app(store, tmp_path)
    _issue(app.test_client())
    register = Register(store=app.config["STORE"], create=False)
    before = len(register.listing())

    def record(parcel: str, day: str, note: str):
        form = browser.find_element(By.ID, "record-form")
        if not browser.find_element(By.ID, "record-section").get_attribute("open"):
            browser.find_element(By.CSS_SELECTOR, "#record-section summary").click()
        for name, text in (("parcel_id", parcel), ("on", day), ("note", note)):
            form.find_element(By.NAME, name).clear()
            form.find_element(By.NAME, name).send_keys(text)
        form.find_element(By.ID, "record-button").click()

    def shown() -> dict:
        form = browser.find_element(By.ID, "record-form")
        return {n: form.find_element(By.NAME, n).get_attribute("value") for n in ("parcel_id", "on", "note")}

    with serving(app) as url:
        browser.get(url + "/notices")
        for parcel, day, typed_day, says in (
            ("NO-SUCH-PARCEL", "2027-02-10", "02102027", "is not among the parcels"),
            (HOSTILE_IDS[3], "2027-12-01", "12012027", "after today"),
            (HOSTILE_IDS[1], "2027-02-10", "02102027", "has an open notice"),
        ):
            record(parcel, typed_day, "permit 2027-14, inspected")
            said = wait_for(
                browser, lambda says=says: [e for e in browser.find_elements(By.ID, "error") if says in e.text]
            )
            assert said[0].is_displayed()
            section = browser.find_element(By.ID, "record-section")
            assert section.get_attribute("open") and browser.find_element(By.ID, "record-form").is_displayed()
            assert shown() == {"parcel_id": parcel, "on": day, "note": "permit 2027-14, inspected"}, says
            _shot(browser, "notices-record-refused")
        # The clerk corrects only what was wrong (the parcel) and records it from the form as it came back.
        register.mark(HOSTILE_IDS[4], "withdrawn", actor="web:pat")
        form = browser.find_element(By.ID, "record-form")
        form.find_element(By.NAME, "parcel_id").clear()
        form.find_element(By.NAME, "parcel_id").send_keys(HOSTILE_IDS[4])
        form.find_element(By.ID, "record-button").click()
        assert message_saying(browser, f"{HOSTILE_IDS[4]}: recorded connected on February 10, 2027").is_displayed()
    rows = register.notices_of(HOSTILE_IDS[4])
    assert [(r["notice_type"], r["note"]) for r in rows][0] == ("record", "permit 2027-14, inspected")
    assert len(register.listing()) == before + 1


def test_the_page_names_a_register_a_stopped_first_creation_left_and_takes_it(client, app):
    """A register left beside the store, not recorded in it (the first creation stopped), was met by "No register
    exists yet" while the file was there."""
    path = Path(app.config["STORE"]).with_name("town-register.sqlite")
    Register(f"sqlite:///{path}", create=True).close()  # made, never recorded: as a killed `issue --new` leaves it
    page = " ".join(client.get("/notices").get_data(as_text=True).split())
    assert "No register exists yet" not in page and f"{path.name} beside it is an empty notice register" in page
    assert str(path.parent) not in page  # named by its file's name: the server's folders are not the web's
    assert 'id="create-register"' in page
    client.post("/notices/register", data={"csrf_token": csrf(client)})
    assert read_setting(app.config["STORE"], "register") == str(path)
    assert 'id="notice-form"' in client.get("/notices").get_data(as_text=True)


def test_the_missing_register_fix_names_the_button_as_the_page_labels_it():
    """Told to press "Create the register" on the Notices page, a planner found only "Create the notice register"."""
    from analysis.errors import Fix
    from gisapp.errors import field_for

    page = (Path(__file__).parents[1] / "templates" / "notices" / "index.html").read_text(encoding="utf-8")
    button = re.search(r'id="create-register">([^<]+)<', page).group(1)
    assert f'"{button}" button on the Notices page' in field_for(Fix("register", ""))
