"""Notices to owners abroad, and article numbers checked by their check digit.

USPS Certified Mail is for US destinations only: a letter to an owner in Ontario goes by registered mail
(international), its mail line says so, the mailing list says so beside the number column, and the register takes
only a registered mail number (UPU S10, "RR 123 456 785 US") for it, and only a certified mail number for a US row.
A number typed with one wrong digit fails its check digit (USPS mod 10; S10 mod 11) and is refused.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from pypdf import PdfReader

from analysis.errors import AnalysisError
from analysis.mandate import analyze_mandates
from analysis.notices import (
    REGISTERED_MAIL,
    SERVED_ABROAD,
    SERVED_BY,
    Letter,
    article_groups,
    article_number,
    article_service,
    mailing_list,
    s10_check_digit,
    service_words,
    usps_check_digit,
    wrong_service,
)
from analysis.profiles import load_profile
from layers.sample import sample_town
from layers.write import write_layers
from tests.conftest import Runner, town_toml

# Tracking numbers nobody here made up (their check digits are the carriers'): IMpb numbers from a public tracking
# library's tests, and S10 numbers from the S10 check-digit package's tests and the UPU's own example form.
VALID_USPS = ["9400 1118 9922 3818 2184 07", "9400 1118 9956 1482 6100 74", "9400111899223830191139"]
VALID_S10 = ["EB000717595HK", "RR 123 456 785 US", "rr123456785us"]
ONTARIO = {"mail_address": "100 King St W", "mail_city": "Toronto", "mail_state": "ON", "mail_zip": "M5H 1J9"}
S10_NUMBER = "RR 123 456 785 US"


def _certified(i: int) -> str:
    """A valid 22-digit certified mail number, as its receipt prints it (the check digit computed here, apart from
    the product's: weights 3 and 1 from the right, to a multiple of 10)."""
    body = f"958907105270012345{i:03d}"
    total = sum(int(d) * (3 if k % 2 == 0 else 1) for k, d in enumerate(reversed(body)))
    digits = body + str((10 - total % 10) % 10)
    return " ".join(digits[j : j + 4] for j in range(0, 22, 4))


def _one_off(number: str, at: int) -> str:
    """``number`` with its ``at``-th digit (counting digits only) changed by one."""
    seen = -1
    out = []
    for c in number:
        if c.isdigit():
            seen += 1
            if seen == at:
                c = str((int(c) + 1) % 10)
        out.append(c)
    return "".join(out)


# -- check digits ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("number", VALID_USPS + [_certified(i) for i in range(3)] + ["7019 0700 0000 1234 5670"])
def test_a_certified_mail_number_with_its_check_digit_is_kept_as_its_digits(number):
    assert article_number(number) == number.replace(" ", "")
    assert article_service(article_number(number)) == SERVED_BY


@pytest.mark.parametrize("number", VALID_S10)
def test_a_registered_mail_number_abroad_is_kept_in_capitals_and_printed_as_its_receipt_prints_it(number):
    kept = article_number(number)
    assert kept == number.replace(" ", "").upper() and article_service(kept) == SERVED_ABROAD
    assert article_groups("RR123456785US") == S10_NUMBER


@pytest.mark.parametrize("number", VALID_USPS[:2] + ["7019 0700 0000 1234 5670"])
@pytest.mark.parametrize("at", [0, 7, 13, -1])
def test_a_certified_mail_number_typed_with_one_wrong_digit_is_refused(number, at):
    digits = sum(c.isdigit() for c in number)
    wrong = _one_off(number, at % digits)
    with pytest.raises(AnalysisError, match="check digit, does not match .* probably mistyped. Type it again"):
        article_number(wrong)


@pytest.mark.parametrize("number", ["EB000717595HK", "RR123456785US"])
@pytest.mark.parametrize("at", [0, 3, 7, 8])
def test_a_registered_mail_number_typed_with_one_wrong_digit_is_refused(number, at):
    with pytest.raises(AnalysisError, match="ninth digit, the check digit, does not match the eight before it"):
        article_number(_one_off(number, at))


def test_the_check_digits_are_the_carriers_rules():
    assert usps_check_digit("940011189922381821840") == 7
    # S10: 11 - (sum mod 11), a 10 being 0 and an 11 being 5
    assert [s10_check_digit(s) for s in ("12345678", "00071758", "96633102", "76129403")] == [5, 1, 0, 8]
    assert s10_check_digit("00000000") == 5  # 11 - 0 = 11: 5
    assert s10_check_digit("00000008") == 0  # 8 x 7 = 56, 56 mod 11 = 1, 11 - 1 = 10: 0


def test_a_number_of_the_other_service_is_refused_saying_why_in_the_clerks_words():
    certified = article_number(_certified(1))
    said = wrong_service(certified, SERVED_ABROAD)
    assert said.startswith(f"article number {_certified(1)} is a certified mail number, but the letter went abroad")
    assert "certified mail is for US addresses only" in said and "RR 123 456 785 US" in said
    said = wrong_service("RR123456785US", SERVED_BY)
    assert said.startswith(f"article number {S10_NUMBER} is a registered mail number for a letter abroad, but the ")
    assert "letter went to a US address by certified mail" in said and "--" not in said
    assert "copy to the occupant went to the site address" in wrong_service("RR123456785US", SERVED_BY, copy=True)
    assert wrong_service("RR123456785US", SERVED_ABROAD) is None and wrong_service(certified, SERVED_BY) is None
    assert wrong_service(certified, None) is None  # in person, or a letter from before: its service not recorded


def test_the_register_shows_the_service_and_the_number_as_the_receipt_prints_it():
    said = service_words(SERVED_ABROAD, "RR123456785US")
    assert said == f"registered mail (international), article no. {S10_NUMBER}"
    assert service_words(SERVED_ABROAD, None) == "registered mail (international); article no. not recorded"
    handed = service_words("in person", "RR123456785US", "2027-06-03", "J. Ruiz")
    assert (
        handed == f"in person on 2027-06-03 by J. Ruiz; also registered mail (international), article no. {S10_NUMBER}"
    )


# -- the letter and the mailing list ---------------------------------------------------------------------------------


def test_the_mailing_list_says_which_rows_go_by_registered_mail_abroad():
    notices = pd.DataFrame(
        {
            "parcel_id": ["A", "B"],
            "notice_id": ["N-1", "N-2"],
            "owner_name": ["ROE ANN", "TREMBLAY LUC"],
            "mail_address": ["9 Elm St", ONTARIO["mail_address"]],
            "mail_city": ["Fort Plain", ONTARIO["mail_city"]],
            "mail_state": ["NY", "ON"],
            "mail_zip": ["13339", ONTARIO["mail_zip"]],
            "site_address": ["9 Elm St", "12 Main St"],
            "site_city": "Fort Plain",
            "site_state": "NY",
            "site_zip": "13339",
            "deadline": "2027-05-30",
            "section": "§ 144-4",
        }
    )
    rows = mailing_list(notices, occupant=True).set_index("name_line_1")
    assert list(rows.columns[-2:]) == ["mail_service", "certified_article_no"]  # beside the number the clerk types
    assert rows.loc["TREMBLAY LUC", "mail_service"] == SERVED_ABROAD
    assert rows.loc["ROE ANN", "mail_service"] == SERVED_BY
    assert rows.loc["Occupant", "mail_service"] == SERVED_BY  # the occupant's copy goes to the site, in the US


def test_a_letter_abroad_prints_the_registered_mail_line():
    letter = Letter(
        1,
        "letters/0001.pdf",
        "connection",
        "T",
        ("N-1",),
        ("P1",),
        ("A",),
        pd.Timestamp(2027, 3, 1).date(),
        (),
        served_by=SERVED_ABROAD,
    )
    assert letter.mail_line == REGISTERED_MAIL and letter.mail_line.startswith("REGISTERED MAIL (INTERNATIONAL) ")


# -- end to end through the command line ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def village():
    """The sample village with one owner of a mandated parcel living in Ontario: (the layers, that parcel)."""
    town = sample_town(80)
    parcels = town["parcels"]
    result = analyze_mandates(
        parcels.assign(connected=parcels["connected"] == "Y"),
        town["mains"],
        streets=town["streets"],
        buildings=town["buildings"],
        profile=load_profile("fort-plain"),
    ).parcels
    mandated = set(result.loc[result["status"] == "mandated", "parcel_id"])
    owners = parcels[parcels["parcel_id"].isin(mandated)].drop_duplicates("owner_name", keep=False)
    abroad = owners["parcel_id"].iloc[0]
    at = parcels["parcel_id"] == abroad
    for column, value in (ONTARIO | {"owner_name": "TREMBLAY LUC"}).items():
        parcels.loc[at, column] = value
    return town, abroad


def _letter_words(path) -> str:
    return " ".join(" ".join(page.extract_text() for page in PdfReader(path).pages).split())


def test_an_owner_in_ontario_is_served_by_registered_mail_end_to_end(village, tmp_path, monkeypatch):
    """issue --occupant, then the mailing list given back through `notices record-mailing`: the Ontario owner's letter
    says registered mail (international), the list says so, the register records it; a certified mail number for
    that row, a registered one for a US row and a number with a wrong check digit are each refused, nothing
    written; the right numbers are recorded and `notices list` says how the owner was served."""
    town, abroad = village
    monkeypatch.setenv("SEWERPLAN_TODAY", "2027-03-01")
    store = tmp_path / "town.gpkg"
    write_layers(str(store), town)
    (tmp_path / "town.toml").write_text(town_toml(), encoding="utf-8")
    runner = Runner()
    args = ["notices", "issue", "--profile", "fort-plain", "--data", store, "--notice-date", "2027-03-01"]
    issued = runner.json(*args, "--out", tmp_path / "out", "--new", "--occupant")
    mailing = pd.read_csv(issued["mailing_list"], dtype=str, keep_default_na=False, encoding="utf-8-sig")
    owner = mailing["name_line_1"] != "Occupant"
    there = owner & (mailing["parcel_ids"] == abroad)
    assert there.sum() == 1 and mailing.loc[there, "state"].item() == "ON"
    assert set(mailing.loc[there, "mail_service"]) == {SERVED_ABROAD}
    assert set(mailing.loc[~there, "mail_service"]) == {SERVED_BY}  # the US owners, and every occupant's copy
    folder = Path(issued["folder"])
    words = _letter_words(folder / mailing.loc[there, "letter_file"].item())
    assert "REGISTERED MAIL (INTERNATIONAL) Article No." in words and "CERTIFIED MAIL" not in words
    # the country on the address's last line, as mail abroad needs it: the letter had ended at "Toronto, ON M5H 1J9"
    assert mailing.loc[there, "country_line"].item() == "CANADA" and set(mailing.loc[~there, "country_line"]) == {""}
    assert "Toronto, ON M5H 1J9 CANADA" in words
    labels = " ".join(" ".join(p.extract_text() for p in PdfReader(issued["labels"]).pages).split())
    assert "Toronto, ON M5H 1J9 CANADA" in labels
    copy = (mailing["name_line_1"] == "Occupant") & (mailing["parcel_ids"] == abroad)
    assert copy.sum() == 1  # the owner mails elsewhere: the occupant gets a copy, by certified mail
    words = _letter_words(folder / mailing.loc[copy, "letter_file"].item())
    assert "CERTIFIED MAIL Article No." in words and "REGISTERED MAIL" not in words
    assert "serves on its owner, TREMBLAY LUC, by registered mail (international) to the owner's mailing" in words
    notice_id = mailing.loc[there, "notice_ids"].item()
    where = ("--store", store)
    listed = {n["notice_id"]: n for n in runner.json("notices", "list", *where)["notices"]}
    assert listed[notice_id]["served_by"] == SERVED_ABROAD
    assert {n["served_by"] for i, n in listed.items() if i != notice_id} == {SERVED_BY}

    good = mailing.copy()
    good["certified_article_no"] = [_certified(i) for i in range(len(good))]
    good.loc[there, "certified_article_no"] = S10_NUMBER
    us_row = good.index[owner & ~there][0]

    def give_back(frame: pd.DataFrame):
        frame.to_csv(tmp_path / "back.csv", index=False)
        return runner.invoke("notices", "record-mailing", "--from", tmp_path / "back.csv", *where)

    abroad_row = good.index[there][0]
    for row, number, said in (
        (abroad_row, _certified(900), "is a certified mail number, but the letter went abroad by registered mail"),
        (us_row, "EB 000 717 595 HK", "is a registered mail number for a letter abroad, but the letter went to"),
        (abroad_row, "RR 123 456 784 US", "does not match the eight before it, so the number was probably mistyped"),
        (us_row, _one_off(_certified(us_row), 20), "the check digit, does not match the digits before it"),
    ):
        wrong = good.copy()
        wrong.loc[row, "certified_article_no"] = number
        result = give_back(wrong)
        assert result.exit_code != 0 and said in " ".join(result.output.split()), result.output
        notices = runner.json("notices", "list", *where)["notices"]
        assert all(n["certified_article_no"] is None for n in notices)  # nothing written

    done = give_back(good)
    assert done.exit_code == 0, done.output
    listed = {n["notice_id"]: n for n in runner.json("notices", "list", *where)["notices"]}
    assert listed[notice_id]["certified_article_no"] == "RR123456785US"
    assert service_words(SERVED_ABROAD, listed[notice_id]["certified_article_no"]).endswith(S10_NUMBER)
    table = " ".join(runner.invoke("notices", "list", *where, ok=True).stdout.split())
    assert "Served by registered mail (international): 1 notice, 1 with the article number recorded." in table
    # handed to the owner on a visit too: the list says the letter's service, not "certified mail"
    args = ("notices", "record-service", notice_id, "--on", "2027-03-01", "--by", "J. Ruiz, code enforcement")
    runner.invoke(*args, *where, ok=True)
    table = " ".join(runner.invoke("notices", "list", *where, ok=True).stdout.split())
    assert "Served in person: 1 notice, on the day and by the person recorded (1 also by registered mail" in table


@pytest.mark.parametrize("state", ["N. Y.", "Mass.", "Calif.", "USA", "New York State", "Washington, D.C.", "n y"])
def test_an_owner_whose_roll_writes_the_state_the_old_way_is_in_the_us(state):
    """A roll's "N. Y." or "Mass." was read as an address abroad: the owner in Fort Plain was sent "REGISTERED MAIL
    (INTERNATIONAL)", a ZIP code that lost its leading zero went unchecked, and the certified receipt's number was
    refused (a tester)."""
    from analysis.notices import in_us

    assert in_us(pd.Series([state])).tolist() == [True]
    rows = mailing_list(
        pd.DataFrame(
            {
                "parcel_id": ["A"],
                "notice_id": ["N-1"],
                "owner_name": ["KELLY SEAN"],
                "mail_address": ["1 Beacon St"],
                "mail_city": ["Boston"],
                "mail_state": [state],
                "mail_zip": ["02108"],
                "site_address": ["9 Elm St"],
                "deadline": "2027-05-30",
                "section": "§ 144-4",
            }
        )
    )
    assert rows["mail_service"].tolist() == [SERVED_BY] and rows["country_line"].tolist() == [""]
