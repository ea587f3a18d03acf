"""Noticing one street or a few properties first: the mandated parcels chosen by ID and by street, the same on the
command line (`--parcels`, `--parcels-file`, `--street`) and on the notices page, through one service
(``services.preview_notices``). The sample village's 80 parcels: Willow St holds four mandated parcels (3.1-1-1,
3.1-1-3, 3.1-1-4, 3.1-1-8), 2.1-1-1 on Canal St is connected, and 2.2-1-11 (220 Canal St) is decided by the main in
Hancock Rd."""

from __future__ import annotations

import datetime as dt
import json
import re

import pandas as pd
import pytest

from analysis.errors import AnalysisError
from analysis.notices import NoticeChoice, plan_notices
from analysis.profiles import load_profile
from layers.register import Register
from tests.conftest import csrf, serving
from tests.test_notices import invoke, town_file
from tests.test_notices_web import make_app, store  # noqa: F401 (the store fixture: the sample village analysed)
from tests.test_web import message_saying, wait_for

WILLOW = ["3.1-1-1", "3.1-1-3", "3.1-1-4", "3.1-1-8"]
FP = load_profile("fort-plain")


def _results() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "parcel_id": ["A", "B", "C", "D", "E"],
            "status": ["mandated", "mandated", "out_of_range", "mandated", "mandated"],
            "owner_name": "Ann Roe",
            "mail_address": "1 Main St",
            "mail_city": "Fort Plain",
            "site_address": ["1 Canal Street", "2 Main St", "3 Canal St", "4 CANAL ST.", "5 Main St"],
            "street_name_main": [None, None, None, None, "Canal St"],
        }
    )


def test_a_choice_takes_the_parcels_named_and_those_on_the_street_and_says_why_a_named_one_is_not_due():
    plan = plan_notices(
        _results(),
        profile=FP,
        notice_date=dt.date(2027, 3, 1),
        exclude={"D"},
        choice=NoticeChoice(parcel_ids=("B", "C", "Z", "D"), street="canal st"),
    )
    # A (site address), E (its deciding main lies in Canal St), B by ID; D is noticed already, C is not mandated.
    assert plan.due["parcel_id"].tolist() == ["A", "B", "E"]
    why = dict(zip(plan.held["parcel_id"], plan.held["why"], strict=True))
    assert set(why) == {"C", "D", "Z"}
    assert why["C"] == "chosen by its ID but not mandated to connect (the analysis finds it out_of_range)"
    assert why["D"].startswith("chosen by its ID but the register already holds its notice")
    assert why["Z"].startswith("chosen by its ID but not a parcel of this town's layers")
    assert plan.chosen == frozenset("ABCDE")
    everyone = plan_notices(_results(), profile=FP, notice_date=dt.date(2027, 3, 1))
    assert everyone.due["parcel_id"].tolist() == ["A", "B", "D", "E"] and everyone.chosen is None


def test_a_hazard_lists_parcels_outside_the_choice_are_said_to_be_so_not_a_typo():
    """Poughkeepsie's hazard list beside a choice: a parcel it names that the choice leaves out is not in this
    batch, which is said as such; an ID no parcel has is still a typo to check."""
    plan = plan_notices(
        _results(),
        profile=load_profile("poughkeepsie"),
        notice_date=dt.date(2027, 3, 1),
        notice_reason="public_health_hazard",
        hazard={"A": "a failing septic tank", "B": "sewage surfacing", "Q": "sewage surfacing"},
        choice=NoticeChoice(street="Canal St"),
    )
    assert plan.due["parcel_id"].tolist() == ["A"]
    why = dict(zip(plan.held["parcel_id"], plan.held["why"], strict=True))
    assert why["B"] == "named in the hazard list but not among the parcels chosen for this batch"
    assert why["Q"].startswith("named in the hazard list but not a parcel of this town's layers")


def test_a_street_no_parcel_lies_on_is_refused_naming_the_nearest_in_spelling():
    with pytest.raises(AnalysisError, match=r'No parcel lies on the street "Canel Street".*nearest in spelling: CANAL'):
        plan_notices(
            _results(), profile=FP, notice_date=dt.date(2027, 3, 1), choice=NoticeChoice(street="Canel Street")
        )


def test_the_same_choice_typed_another_way_is_the_same_choice():
    one = NoticeChoice(parcel_ids=("B", " A", "B"), street="Canal Street")
    assert one.parcel_ids == ("B", "A") and one.key() == NoticeChoice(parcel_ids=("A", "B"), street="CANAL ST.").key()
    assert not NoticeChoice(parcel_ids=("", " "), street=" ")


# -- the command line ---------------------------------------------------------------------------------------------


@pytest.fixture
def cli_store(tmp_path, store):  # noqa: F811 (the module's store fixture, copied with town settings beside it)
    path = tmp_path / "town.gpkg"
    path.write_bytes(store.read_bytes())
    town_file(tmp_path)
    return path


def _cli(command: str, path, *extra, ok=True):
    args = ["notices", command, "--profile", "fort-plain", "--data", path, "--notice-date", "2027-03-01", *extra]
    return invoke(*args, ok=ok)


def test_cli_preview_notices_only_the_street_and_the_parcels_chosen(cli_store):
    doc = json.loads(
        _cli(
            "preview", cli_store, "--street", "Willow Street", "--parcel-ids", "2.2-1-2,2.1-1-1,9.9-9-9", "--json"
        ).stdout
    )
    assert sorted(n["parcel_id"] for n in doc["notices"]) == sorted([*WILLOW, "2.2-1-2"])
    chosen = doc["chosen"]
    assert (chosen["street"], chosen["mandated"], chosen["due"]) == ("Willow Street", 5, 5)
    not_due = {h["parcel_id"]: h["why"] for h in chosen["not_due"]}
    assert not_due == {
        "2.1-1-1": "chosen by its ID but not mandated to connect (the analysis finds it connected)",
        "9.9-9-9": "chosen by its ID but not a parcel of this town's layers (no parcel has this ID): check the ID "
        "against the parcels layer (a typo, or a leading zero a spreadsheet dropped)",
    }
    assert doc["mandated"] == 5  # the mandated parcels chosen, not the village's
    shown = " ".join(_cli("preview", cli_store, "--street", "Willow Street", "--parcel-ids", "2.1-1-1").stdout.split())
    assert "Chosen: 1 parcel ID and the street Willow Street, taking in 4 mandated parcels, 4 of them due" in shown
    assert "Not due, though chosen: 2.1-1-1: chosen by its ID but not mandated to connect" in shown


def test_cli_street_is_the_sewered_street_too_and_a_misspelt_one_is_refused(cli_store):
    doc = json.loads(_cli("preview", cli_store, "--street", "hancock road", "--json").stdout)
    assert [n["parcel_id"] for n in doc["notices"]] == ["2.2-1-11"]  # 220 Canal St, decided by the main in Hancock Rd
    refused = _cli("preview", cli_store, "--street", "Wilow St", ok=False)
    assert refused.exit_code != 0 and 'No parcel lies on the street "Wilow St"' in refused.output
    assert "WILLOW ST" in refused.output


def test_cli_issue_from_a_parcels_file_issues_those_alone(cli_store, tmp_path):
    listed = tmp_path / "first.csv"
    listed.write_text("parcel_id,note\n3.1-1-1,corner\n3.1-1-4,\n", encoding="utf-8")
    issued = json.loads(
        _cli("issue", cli_store, "--parcel-ids-file", listed, "--out", tmp_path / "out", "--new", "--json").stdout
    )
    assert sorted(n["parcel_id"] for n in issued["notices"]) == ["3.1-1-1", "3.1-1-4"]
    assert issued["chosen"]["parcel_ids"] == ["3.1-1-1", "3.1-1-4"]
    assert sorted(Register(store=cli_store, create=False).listing()["parcel_id"]) == ["3.1-1-1", "3.1-1-4"]
    bare = tmp_path / "bare.csv"
    bare.write_text("3.1-1-1\n3.1-1-4\n", encoding="utf-8")  # no header: its first ID would be taken for one
    refused = _cli("preview", cli_store, "--parcel-ids-file", bare, ok=False)
    assert refused.exit_code != 0 and "needs a parcel_id column" in refused.output


# -- the notices page ---------------------------------------------------------------------------------------------


def _preview(client, token, **fields):
    form = {"notice_date": "2027-03-01", "csrf_token": token} | fields
    return form, client.post("/notices/preview", data=form).get_data(as_text=True)


def _hidden(page: str) -> dict:
    form = page.split('id="confirm-form"', 1)[1].split("</form>", 1)[0]
    return dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', form))


def test_the_page_previews_and_issues_the_parcels_pasted_and_the_street(store, tmp_path):  # noqa: F811
    app = make_app(store, tmp_path)
    client = app.test_client()
    token = csrf(client)
    client.post("/notices/register", data={"csrf_token": token})
    _, page = _preview(client, token, parcels="2.2-1-2\n2.1-1-1\r\n", street="Willow Street")
    assert "Preview: 5 notice(s)" in page
    assert "Chosen: 2 parcel ID(s) and the street Willow Street, taking in 5 mandated parcel(s)" in page
    assert "2.1-1-1: chosen by its ID but not mandated to connect (the analysis finds it connected)" in page
    hidden = _hidden(page)
    assert hidden["parcels"] == "2.2-1-2, 2.1-1-1" and hidden["street"] == "Willow Street"
    register = Register(store=app.config["STORE"], create=False)
    # The same notices, another choice (2.1-1-1 is not mandated): refused, nothing recorded.
    other = client.post("/notices/issue", data=hidden | {"parcels": "2.2-1-2"}).get_data(as_text=True)
    assert "The parcels chosen (the parcel IDs, the street) are not those of the preview" in other
    assert register.listing().empty
    # A confirm without the choice's own token (a page from before it) is refused all the same.
    hidden.pop("choice_token")
    other = client.post("/notices/issue", data=hidden | {"street": "Willow St", "parcels": "2.2-1-2"})
    assert 'id="confirm-needed"' in other.get_data(as_text=True) and register.listing().empty
    done = client.post("/notices/issue", data=_hidden(page))
    assert done.status_code == 302
    assert sorted(register.listing()["parcel_id"]) == sorted([*WILLOW, "2.2-1-2"])


def test_a_misspelt_street_on_the_page_is_refused_and_kept_to_correct(store, tmp_path):  # noqa: F811
    client = make_app(store, tmp_path).test_client()
    token = csrf(client)
    client.post("/notices/register", data={"csrf_token": token})
    response = client.post(
        "/notices/preview", data={"notice_date": "2027-03-01", "csrf_token": token, "street": "Wilow St"}
    )
    page = response.get_data(as_text=True)
    assert response.status_code == 400 and "No parcel lies on the street" in page and "WILLOW ST" in page
    assert 'value="Wilow St"' in page


@pytest.mark.browser
def test_the_page_notices_one_street_in_chromium(store, tmp_path, browser):  # noqa: F811
    from selenium.webdriver.common.by import By

    app = make_app(store, tmp_path)
    with serving(app) as url:
        browser.get(url + "/notices")
        browser.find_element(By.ID, "create-register").click()
        wait_for(browser, lambda: browser.find_elements(By.ID, "notice-form"))
        browser.find_element(By.NAME, "notice_date").send_keys("03012027")
        browser.find_element(By.ID, "street-box").send_keys("Willow Street")
        browser.find_element(By.ID, "parcels-box").send_keys("9.9-9-9")
        browser.find_element(By.ID, "preview-button").click()
        button = wait_for(browser, lambda: browser.find_elements(By.ID, "issue-button"))[0]
        chosen = browser.find_element(By.ID, "chosen").text
        assert "taking in 4 mandated parcel(s), 4 of them due a notice now" in chosen
        assert "9.9-9-9: chosen by its ID but not a parcel of this town's layers" in chosen
        assert "Confirm: issue 4 notice(s)" in button.text
        button.click()
        assert message_saying(browser, "4 notice(s) issued", timeout=120).is_displayed()
    assert sorted(Register(store=app.config["STORE"], create=False).listing()["parcel_id"]) == WILLOW
