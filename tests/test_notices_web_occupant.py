"""The notices page does the two jobs `sewerplan notices` did alone: copies to the occupant at the site
(`issue --occupant`) and violation notices (`notices violations`, with `--occupant`), through the same service
functions, for a clerk who works on the web. With the Flask test client, and in a real headless Chromium."""

from __future__ import annotations

import html
import io
import re

import pandas as pd
import pytest
from click.testing import CliRunner
from pypdf import PdfReader

from analysis.profiles import load_profile
from gisapp.cli import main
from layers.register import Register
from tests.conftest import csrf, serving
from tests.test_notices_web import make_app, store  # noqa: F401  (the module's store fixture)
from tests.test_web import message_saying, shot, wait_for

FORM = {"notice_date": "2027-03-01"}


@pytest.fixture
def app(store, tmp_path):  # noqa: F811
    return make_app(store, tmp_path)


def _words(pdf: bytes) -> str:
    return " ".join(" ".join(p.extract_text() for p in PdfReader(io.BytesIO(pdf)).pages).split())


def _confirm(page: str) -> str:
    return re.search(r'name="confirm" value="([0-9a-f]+)"', page).group(1)


def _issue(client, *, occupant: bool) -> str:
    """Connection notices issued from the page (the copies to the occupant ticked or not); the page it returns to."""
    token = csrf(client)
    client.post("/notices/register", data={"csrf_token": token})
    form = FORM | {"csrf_token": token} | ({"occupant": "1"} if occupant else {})
    preview = client.post("/notices/preview", data=form).get_data(as_text=True)
    done = client.post("/notices/issue", data=form | {"confirm": _confirm(preview)})
    assert done.status_code == 302, done.get_data(as_text=True)[:2000]
    return client.get(done.headers["Location"]).get_data(as_text=True)


def _copies(client, batch: str) -> pd.DataFrame:
    mailing = client.get(f"/notices/files/{batch}/mailing-list.csv").data.decode("utf-8-sig")
    rows = pd.read_csv(io.StringIO(mailing), dtype=str, keep_default_na=False)
    return rows[rows["name_line_1"] == "Occupant"]


# -- copies to the occupant of the connection notices ---------------------------------------------------------------


def test_the_issue_form_offers_copies_to_the_occupant_off_by_default(client, app):
    client.post("/notices/register", data={"csrf_token": csrf(client)})
    page = client.get("/notices").get_data(as_text=True)
    box = re.search(r'<input type="checkbox" name="occupant"[^>]*>', page).group(0)
    assert "checked" not in box
    said = " ".join(page.split())
    assert "a courtesy copy of the owner's notice" in said and "It is never service" in said


def test_copies_to_the_occupant_are_written_counted_and_linked_as_the_owners_letters(client, app):
    """`notices issue --occupant` wrote a copy to "Occupant" at the site of each property whose owner lives
    elsewhere; the page's issue form had no such choice, so a clerk on the web could not send one."""
    token = csrf(client)
    client.post("/notices/register", data={"csrf_token": token})
    form = FORM | {"csrf_token": token, "occupant": "1"}
    preview = client.post("/notices/preview", data=form).get_data(as_text=True)
    assert re.search(r'name="occupant" value="1"', preview)  # carried to the confirm form, and the box stays ticked
    assert "copy(ies) to the occupant at the site" in preview
    # the clerk's confirmation covers the copies: a confirm of the preview without them issues nothing
    plain = client.post("/notices/preview", data=FORM | {"csrf_token": token}).get_data(as_text=True)
    register = Register(store=app.config["STORE"], create=False)
    stale = client.post("/notices/issue", data=form | {"confirm": _confirm(plain)}).get_data(as_text=True)
    # it said "The notices due have changed since the preview", which they had not: it says what changed
    assert "The copies to the occupant were not asked for in the preview: preview again" in stale
    assert "have changed since the preview" not in stale and register.listing().empty
    plain_form = FORM | {"csrf_token": token}
    dropped = client.post("/notices/issue", data=plain_form | {"confirm": _confirm(preview)}).get_data(as_text=True)
    assert "The copies to the occupant were asked for in the preview: preview again" in dropped
    assert "have changed since the preview" not in dropped and register.listing().empty
    done = client.post("/notices/issue", data=form | {"confirm": _confirm(preview)})
    page = client.get(done.headers["Location"]).get_data(as_text=True)
    listing = register.listing()
    batch = listing["batch_id"].iloc[0]
    copies = _copies(client, batch)
    owners = listing["mailing_no"].nunique()
    assert 0 < len(copies) < len(listing)  # the sample village: some owners live elsewhere
    said = (
        f"{owners} letter(s) to the owners and {len(copies)} copy(ies) to the occupant at the site, "
        f"{owners + len(copies)} letter(s) in all: download them below."
    )
    assert said in page, re.findall(r'id="message"[^>]*>([^<]*)<', page)
    assert f"{len(copies)} copy(ies) to the occupant at the site, among the letters and labels" in page
    rows = re.findall(r'<tr><td class="nowrap">(N-[^<]+)</td>(.*?)</tr>', page.split('id="register"')[1], re.S)
    links = {n: m.group(1) for n, row in rows if (m := re.search(r'class="copy-link" href="([^"]+)"', row))}
    parcels = listing.set_index("notice_id")["parcel_id"]
    assert sorted(parcels[list(links)]) == sorted(copies["parcel_ids"])  # each beside its own notice's letter
    notice, link = next(iter(links.items()))
    got = client.get(link.replace("&amp;", "&"))
    assert got.status_code == 200 and "COPY FOR THE OCCUPANT" in _words(got.data)
    assert parcels[notice] in _words(got.data)


def test_the_preview_counts_the_copies_to_the_occupant_the_issue_writes(client, app):
    """With "copies to the occupant" ticked the preview said "Confirm: issue 524 notice(s) and write 516 letter(s),
    with copies to the occupant ..." and the issue then wrote 146 copies too, 662 letters in all: the button now
    counts the copies, and the letters in all, as the issue writes them."""
    token = csrf(client)
    client.post("/notices/register", data={"csrf_token": token})
    form = FORM | {"csrf_token": token, "occupant": "1"}
    preview = client.post("/notices/preview", data=form).get_data(as_text=True)
    button = " ".join(html.unescape(re.search(r'id="issue-button">([^<]*)<', preview).group(1)).split())
    done = client.post("/notices/issue", data=form | {"confirm": _confirm(preview)})
    assert done.status_code == 302
    listing = Register(store=app.config["STORE"], create=False).listing()
    copies = len(_copies(client, listing["batch_id"].iloc[0]))
    owners = listing["mailing_no"].nunique()
    assert copies > 0
    assert button == (
        f"Confirm: issue {len(listing)} notice(s) and write {owners} letter(s) to the owners and {copies} "
        f"copy(ies) to the occupant at the site, {owners + copies} letter(s) in all"
    )


def test_without_the_box_no_copy_is_written(client, app):
    page = _issue(client, occupant=False)
    batch = Register(store=app.config["STORE"], create=False).listing()["batch_id"].iloc[0]
    assert _copies(client, batch).empty and 'class="copy-link"' not in page and "to the owners and" not in page


# -- violation notices ----------------------------------------------------------------------------------------------


def _overdue(client, monkeypatch, *, occupant: bool = False) -> pd.DataFrame:
    """Connection notices issued from the page on 2027-03-01 (deadline Sunday May 30, met on Tuesday June 1 after
    Memorial Day), then today moved to June 2, when they are overdue: the register's connection notices."""
    _issue(client, occupant=occupant)
    monkeypatch.setenv("SEWERPLAN_TODAY", "2027-06-02")
    return Register(store=client.application.config["STORE"], create=False).listing(notice_type="connection")


def _error(page: str) -> str:
    found = re.search(r'id="error"[^>]*>(.*?)</p>', page, re.S)
    return html.unescape(" ".join(found.group(1).split())) if found else ""


def test_violation_notices_are_previewed_then_issued_on_the_page(client, app, monkeypatch):
    """`sewerplan notices violations --out DIR` was the only way to give violation notices: the page had none."""
    noticed = _overdue(client, monkeypatch)
    token = csrf(client)
    register = Register(store=app.config["STORE"], create=False)
    preview = client.post("/notices/violations", data={"csrf_token": token})
    page = preview.get_data(as_text=True)
    assert preview.status_code == 200, _error(page)
    said = " ".join(page.split())
    assert f"Preview: {len(noticed)} violation notice(s) as of June 2, 2027, nothing recorded yet" in said
    assert "To be corrected by <strong>July 2, 2027</strong>" in said
    assert register.listing(notice_type="violation").empty
    assert sorted(re.findall(r"<td>(N-[0-9A-F]+)</td>", page.split('id="violations-preview"')[1])) == sorted(
        noticed["notice_id"]
    )
    stale = client.post("/notices/violations", data={"csrf_token": token, "confirm": "0" * 24}).get_data(as_text=True)
    assert "have changed since the preview" in stale and register.listing(notice_type="violation").empty
    done = client.post("/notices/violations", data={"csrf_token": token, "confirm": _confirm_violations(page)})
    page = done.get_data(as_text=True)
    assert done.status_code == 200, _error(page)
    issued = register.listing(notice_type="violation")
    assert len(issued) == len(noticed) and set(issued["status"]) == {"open"}
    batch = issued["batch_id"].iloc[0]
    said = " ".join(page.split())
    assert f"Violation notices issued: batch {batch}" in said
    assert (
        f"{len(noticed)} violation notice(s) issued as of June 2, 2027, to be corrected by <strong>July 2, 2027" in said
    )
    for name in ("letters-all.pdf", "mailing-list.csv", "labels.pdf"):
        link = f"/notices/files/{batch}/{name}"
        assert page.count(link) == 2  # in what was issued, and on the batch's row
        assert client.get(link).status_code == 200
    assert "NOTICE OF VIOLATION" in _words(client.get(f"/notices/files/{batch}/letters-all.pdf").data).upper()
    # issued again: every overdue notice has its violation notice open, so none is due, and the page says why
    again = client.post("/notices/violations", data={"csrf_token": token})
    assert again.status_code == 400 and len(register.listing(notice_type="violation")) == len(noticed)
    refusal = _error(again.get_data(as_text=True))
    assert refusal == (
        f"No violation notice to give on June 2, 2027: none of the overdue connection notices is due one "
        f"({len(noticed)} already have an open violation notice)."
    )


def _confirm_violations(page: str) -> str:
    form = page.split('id="violations-confirm-form"')[1]
    return re.search(r'name="confirm" value="([0-9a-f]+)"', form).group(1)


def test_violation_notices_with_copies_to_the_occupant_say_what_they_wrote(client, app, monkeypatch):
    noticed = _overdue(client, monkeypatch)
    token = csrf(client)
    form = {"csrf_token": token, "occupant": "1"}
    page = client.post("/notices/violations", data=form).get_data(as_text=True)
    copies = int(re.search(r"With (\d+) copy\(ies\) to the occupant at the site", page).group(1))
    assert 0 < copies < len(noticed)
    # the preview without copies is not the one confirmed with them
    plain = client.post("/notices/violations", data={"csrf_token": token}).get_data(as_text=True)
    stale = client.post("/notices/violations", data=form | {"confirm": _confirm_violations(plain)})
    said = stale.get_data(as_text=True)
    assert "The copies to the occupant were not asked for in the preview: preview again" in said
    assert "have changed since the preview" not in said
    dropped = client.post("/notices/violations", data={"csrf_token": token, "confirm": _confirm_violations(page)})
    assert "The copies to the occupant were asked for in the preview: preview again" in dropped.get_data(as_text=True)
    assert Register(store=app.config["STORE"], create=False).listing(notice_type="violation").empty
    done = client.post("/notices/violations", data=form | {"confirm": _confirm_violations(page)}).get_data(as_text=True)
    issued = Register(store=app.config["STORE"], create=False).listing(notice_type="violation")
    batch = issued["batch_id"].iloc[0]
    owners = issued["mailing_no"].nunique()
    assert len(_copies(client, batch)) == copies
    said = " ".join(done.split())
    assert f"in {owners} letter(s) to the owners and {copies} copy(ies) to the occupant at the site" in said
    rows = re.findall(r'<tr><td class="nowrap">(N-[^<]+)</td>(.*?)</tr>', done.split('id="register"')[1], re.S)
    links = [
        m.group(1)
        for n, row in rows
        if n in set(issued["notice_id"]) and (m := re.search(r'class="copy-link" href="([^"]+)"', row))
    ]
    assert len(links) == copies
    assert "COPY FOR THE OCCUPANT" in _words(client.get(links[0].replace("&amp;", "&")).data)


def test_violations_are_refused_on_the_page_in_the_clerks_words(client, app, monkeypatch, tmp_path):
    token = csrf(client)
    folders = [str(tmp_path), str(app.config["NOTICES_FOLDER"])]
    # no register yet
    refused = client.post("/notices/violations", data={"csrf_token": token})
    said = _error(refused.get_data(as_text=True))
    assert refused.status_code == 400 and "No notice register is set up for the store town.gpkg" in said
    assert not any(f in said for f in folders)
    # nothing overdue yet: the notices' deadlines are to come
    _issue(client, occupant=False)
    monkeypatch.setenv("SEWERPLAN_TODAY", "2027-05-31")  # Memorial Day: the Sunday deadline runs to June 1
    refused = client.post("/notices/violations", data={"csrf_token": token})
    said = _error(refused.get_data(as_text=True))
    assert refused.status_code == 400 and said.startswith(
        "No violation notice to give on May 31, 2027: no connection notice is overdue. Not yet overdue:"
    ), said
    # the latest run under another profile: the overdue notices were given under Fort Plain's law
    monkeypatch.setenv("SEWERPLAN_TODAY", "2027-06-02")
    town = app.config["STORE"]
    done = CliRunner().invoke(main, ["analyze", "--profile", "poughkeepsie", "--data", town, "--out", town])
    assert done.exit_code == 0, done.output
    refused = client.post("/notices/violations", data={"csrf_token": token})
    said = _error(refused.get_data(as_text=True))
    assert refused.status_code == 400 and "given under the fort-plain profile" in said
    assert said.startswith("No violation notice to give on June 2, 2027: none of the overdue connection notices")
    assert 'Run the analysis under the fort-plain profile ("Run the analysis" on the map page)' in said
    for words in ("sewerplan", "--", *folders):
        assert words not in said, (words, said)
    from gisapp.views import notices as view

    monkeypatch.setattr(view, "_profile", lambda: load_profile("fort-plain"))  # the run changed under the page
    refused = client.post("/notices/violations", data={"csrf_token": token})
    said = _error(refused.get_data(as_text=True))
    assert refused.status_code == 400 and "ran under the poughkeepsie profile, not fort-plain" in said
    for words in ("sewerplan", "--", *folders):
        assert words not in said, (words, said)
    assert Register(store=town, create=False).listing(notice_type="violation").empty


def test_the_violations_preview_says_whom_the_latest_analysis_leaves_out_and_what_to_do(
    client, app, monkeypatch, tmp_path
):
    """The command line lists the parcels the store's latest analysis finds connected, or no longer mandated, and
    names commands to record them; the page lists them with its own rows' forms."""
    noticed = _overdue(client, monkeypatch)
    town = app.config["STORE"]
    billing = tmp_path / "billing.csv"
    billing.write_text("parcel_id\n" + "\n".join(sorted(noticed["parcel_id"])[:2]) + "\n", encoding="utf-8")
    analyse = ["analyze", "--profile", "fort-plain", "--data", town, "--out", town, "--connected", str(billing)]
    done = CliRunner().invoke(main, [*analyse, "--set", "mandate.distance_ft=25"])
    assert done.exit_code == 0, done.output
    page = client.post("/notices/violations", data={"csrf_token": csrf(client)}).get_data(as_text=True)
    left = [
        html.unescape(" ".join(li.split()))
        for li in re.findall(r"<li>(.*?)</li>", page.split("violations-left-out")[1], re.S)
    ]
    connected = next(line for line in left if "finds connected" in line)
    assert connected.startswith("Left out 2 overdue parcel(s) that the latest analysis (")
    assert "record each connection in the register on its notice's row below" in connected
    review = next(line for line in left if line.startswith("For review"))
    assert "no longer finds mandated" in review and "withdraw one that no longer stands on its notice's row" in review
    assert not any("sewerplan" in line or "--" in line for line in left)


def test_viewers_are_not_offered_violation_notices_and_cannot_give_them(client, auth, app):
    Register(store=app.config["STORE"], create=True).close()
    auth.add("pat")
    auth.add("vera", "viewer", "viewer-password")
    assert auth.login("vera", "viewer-password").status_code == 302
    assert 'id="violations-form"' not in client.get("/notices").get_data(as_text=True)
    assert client.post("/notices/violations", data={"csrf_token": auth.csrf()}).status_code == 403
    auth.logout()
    assert auth.login().status_code == 302
    assert 'id="violations-form"' in client.get("/notices").get_data(as_text=True)
    assert client.post("/notices/violations", data={}).status_code in (400, 403)  # no CSRF token


# -- in a real browser ----------------------------------------------------------------------------------------------


@pytest.mark.browser
def test_copies_to_the_occupant_and_violation_notices_in_chromium(store, tmp_path, browser, monkeypatch):  # noqa: F811
    """A clerk in Chromium: connection notices with copies to the occupant ticked, then, once they are overdue,
    violation notices with their copies, each previewed and confirmed, and the files linked to download."""
    from selenium.webdriver.common.by import By

    app = make_app(store, tmp_path)
    with serving(app) as url:
        browser.get(url + "/notices")
        browser.find_element(By.ID, "create-register").click()
        wait_for(browser, lambda: browser.find_elements(By.ID, "notice-form"))
        box = browser.find_element(By.ID, "occupant-box")
        assert not box.is_selected()  # off by default
        browser.find_element(By.NAME, "notice_date").send_keys("03012027")
        box.click()
        browser.find_element(By.ID, "preview-button").click()
        button = wait_for(browser, lambda: browser.find_elements(By.ID, "issue-button"))[0]
        assert "copy(ies) to the occupant at the site" in button.text and "letter(s) in all" in button.text
        button.click()
        said = message_saying(browser, "copy(ies) to the occupant at the site", timeout=120).text
        assert "letter(s) to the owners and" in said, said
        copies = browser.find_elements(By.CSS_SELECTOR, "#register .copy-link")
        assert copies and all(a.text.startswith("occupant's copy ") for a in copies)
        shot(browser, "notices-occupant-copies")

        monkeypatch.setenv("SEWERPLAN_TODAY", "2027-06-02")  # the notices are overdue: the server reads today anew
        browser.get(url + "/notices")
        wait_for(browser, lambda: browser.find_elements(By.ID, "violations-form"))
        browser.find_element(By.ID, "violations-occupant-box").click()
        browser.find_element(By.ID, "violations-button").click()
        button = wait_for(browser, lambda: browser.find_elements(By.ID, "violations-issue-button"), 120)[0]
        heading = browser.find_element(By.CSS_SELECTOR, "#violations-section h3").text
        assert "violation notice(s) as of June 2, 2027, nothing recorded yet" in heading
        assert Register(store=app.config["STORE"], create=False).listing(notice_type="violation").empty
        shot(browser, "notices-violations-preview")
        button.click()
        done = wait_for(browser, lambda: browser.find_elements(By.ID, "violations-done"), 120)[0]
        assert "violation notice(s) issued as of June 2, 2027" in done.text
        assert "copy(ies) to the occupant at the site" in done.text
        issued = Register(store=app.config["STORE"], create=False).listing(notice_type="violation")
        heading = browser.find_element(By.CSS_SELECTOR, "#violations-section h3").text
        assert len(issued) and heading == f"Violation notices issued: batch {issued['batch_id'].iloc[0]}"
        links = [a.text for a in done.find_elements(By.TAG_NAME, "a")]
        assert links == ["all letters (PDF, mailing order)", "mailing list (CSV)", "labels (Avery 5160)"]
        shot(browser, "notices-violations-issued")


def test_a_failed_issue_names_no_folder_of_the_server(store, tmp_path):  # noqa: F811
    """The notices folder outside the instance folder, unwritable (a file stands where it should be): the page's
    error named its full path ("/srv/.../letters/... is not a folder"); it names the file alone."""
    blocked = tmp_path / "county" / "letters"
    blocked.parent.mkdir()
    blocked.write_text("not a folder")
    client = make_app(store, tmp_path, NOTICES_FOLDER=str(blocked)).test_client()
    token = csrf(client)
    client.post("/notices/register", data={"csrf_token": token})
    form = FORM | {"csrf_token": token}
    preview = client.post("/notices/preview", data=form).get_data(as_text=True)
    done = client.post("/notices/issue", data=form | {"confirm": _confirm(preview)})
    page = (
        done.get_data(as_text=True)
        if done.status_code != 302
        else client.get(done.headers["Location"]).get_data(as_text=True)
    )
    error = html.unescape(re.search(r'id="error"[^>]*>(.*?)</', page, re.S).group(1))
    assert "letters" in error, error
    assert str(blocked.parent) not in page and str(tmp_path) not in error, error
