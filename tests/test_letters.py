"""The letters, labels and maps as printed: read back from the PDFs.

- One connection letter per profile, its extracted text compared word for word with a golden file
  (``tests/golden/``; regenerate with SEWERPLAN_UPDATE_GOLDEN=1 and read the diff), every quoted passage checked as
  an exact substring of the ordinance (whitespace aside), and no internal annotation in the mail.
- Avery 5160 geometry measured from the labels PDF, with the longest owner names of the sample town and worse.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from pathlib import Path

import geopandas as gpd
import pandas as pd
import pytest
from pypdf import PdfReader
from reportlab.lib.units import inch
from reportlab.pdfbase.pdfmetrics import stringWidth
from shapely.geometry import LineString, box

from analysis.notices import (
    building_obligations,
    code_name,
    compose_letters,
    letter_maps,
    letter_text,
    mailing_address,
    mailing_list,
    occupant_letters,
    period,
    plan_notices,
    plan_violations,
)
from analysis.profiles import load_profile
from layers.errors import LayerError
from layers.fonts import BOLD, PRINTABLE, REGULAR
from layers.letters import (
    ADDRESS_BLOCK,
    AVERY_5160,
    address_overflow,
    label_box,
    label_texts,
    write_labels,
    write_letter,
)
from layers.sample import sample_town
from layers.town import load_town_settings

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "tests" / "golden"
ORDINANCES = REPO / "tests" / "data" / "ordinances"
DAY = dt.date(2027, 3, 1)
CRS = "EPSG:2260"
ANNOTATIONS = ("derived", "value set by the user", "§ 168-22.x", "setting", "profile", "town_setting")


def words(text: str) -> str:
    return " ".join(text.replace("\xa0", " ").split())


def pdf_text(path) -> str:
    """The letter's text, without the page footers (which would split a sentence running on to the next page)."""
    text = words(" ".join(page.extract_text() for page in PdfReader(str(path)).pages))
    return re.sub(r" ?Letter \d{4} - notices? .*? - page \d+", "", text)


def ordinance(profile) -> str:
    return words((ORDINANCES / profile.source_text).read_text(encoding="utf-8"))


def quotes(text: str) -> list[str]:
    return [words(q) for q in re.findall(r"\u201c(.*?)\u201d", text)]


TOWNS = {
    "fort-plain": "Village of Fort Plain",
    "poughkeepsie": "Town of Poughkeepsie",
    "wappinger": "Town of Wappinger",
}
# Each municipality's own letterhead: its county, its clerk's return address, and the board whose resolution sets a
# period the law leaves to it (the template's are Fort Plain's: a Wappinger letter from "Montgomery County" and
# "Fort Plain, NY 13339", under "Resolution 4 of 2027 of the Board of Trustees", was no letter Wappinger could send).
LETTERHEADS = {
    "fort-plain": ("Montgomery County, New York", "Village Clerk", "Fort Plain, NY 13339", "Board of Trustees"),
    "poughkeepsie": ("Dutchess County, New York", "Town Clerk", "Poughkeepsie, NY 12603", "Town Board"),
    "wappinger": ("Dutchess County, New York", "Town Clerk", "Wappingers Falls, NY 12590", "Town Board"),
}


def town_settings(tmp_path: Path, name: str = "fort-plain"):
    """The example town settings file, for the profile's own municipality: its name, county, return address and the
    board of its resolutions."""
    county, clerk, city, board = LETTERHEADS[name]
    extra = '"mandate.notice_period_days" = { days = 60, act = "Resolution 9 of 2027 of the Town Board" }\n'
    text = (
        (REPO / "layers" / "town.example.toml")
        .read_text(encoding="utf-8")
        .replace('"Village of Fort Plain"', f'"{TOWNS[name]}"')
        .replace('"Montgomery County, New York"', f'"{county}"')
        .replace('"Village Clerk"', f'"{clerk}"')
        .replace('"Fort Plain, NY 13339"', f'"{city}"')
        .replace("of the Board of Trustees", f"of the {board}")
    )
    # Only the periods the law leaves to the town: a resolution of one the law sets is refused (Wappinger's § 196-22A
    # sets its 10 days to correct; Fort Plain's § 144-4 and Poughkeepsie's § 168-22.2G their days to connect).
    if name == "wappinger":
        text = re.sub(r'(?m)^"notices\.correction_period_days" = .*\n', "", text)
    else:
        extra = ""
    path = tmp_path / f"{name}.toml"
    path.write_text(text + extra, encoding="utf-8")
    return load_town_settings(path)


@pytest.fixture
def town(tmp_path):
    return town_settings(tmp_path)


def _layers():
    """Two parcels of one owner beside Main St, main M-1 (8 in) under it, a 12-unit building and a school."""
    parcels = gpd.GeoDataFrame(
        {
            "parcel_id": ["12.1-1-1", "12.1-1-2"],
            "owner_name": [
                "VAN DER BERG-WILLIAMSON JOHNATHAN & MARGARET TRUST",
                "Van der Berg-Williamson, Johnathan & Margaret Trust",
            ],
            "mail_address": ["PO Box 12", "PO BOX 12"],
            "mail_city": ["Albany", "ALBANY"],
            "mail_state": ["NY", "NY"],
            "mail_zip": ["12203", "12203-0012"],
            "site_address": ["10 Main St", "12 Main St"],
            "distance_ft": [30.0, 42.5],
            "main_id": ["M-1", "M-1"],
            "street_name_main": ["Main St", "Main St"],
            "status": ["mandated", "mandated"],
        },
        geometry=[box(0, 25, 60, 125), box(60, 25, 120, 125)],
        crs=CRS,
    )
    lines = gpd.GeoDataFrame(
        {"parcel_id": ["12.1-1-1", "12.1-1-2"]},
        geometry=[LineString([(30, 25), (30, 0)]), LineString([(90, 25), (90, 0)])],
        crs=CRS,
    )
    mains = gpd.GeoDataFrame(
        {"main_id": ["M-1"], "diameter_in": [8.0]}, geometry=[LineString([(-400, 0), (500, 0)])], crs=CRS
    )
    streets = gpd.GeoDataFrame({"street_name": ["Main St"]}, geometry=[LineString([(-400, 0), (500, 0)])], crs=CRS)
    buildings = gpd.GeoDataFrame(
        {
            "building_id": ["B-1", "B-2"],
            "parcel_id": ["12.1-1-1", "12.1-1-2"],
            "units": [12.0, 0.0],
            "required_laterals": pd.array([3, 1], dtype="Int64"),
            "manhole_connection_case": [False, True],
        },
        geometry=[box(10, 50, 50, 100), box(70, 50, 110, 110)],
        crs=CRS,
    )
    return parcels, lines, mains, streets, buildings


def _connection_notices(parcels, profile, notice_period, **columns):
    """The parcels' connection notices issued on DAY, due after the profile's period, with ``columns`` added."""
    return parcels.drop(columns="geometry").assign(
        notice_type="connection",
        issued_date=DAY,
        deadline=DAY + dt.timedelta(days=notice_period.days),
        section=profile.mandate.notice_period_days.section,
        private_system=True,
        **columns,
    )


def _composed(profile_name: str, town, overrides: dict | None = None):
    """The one connection letter of the golden case, and the maps it carries (``overrides``: values set for the run)."""
    profile = load_profile(profile_name, overrides=overrides)
    parcels, lines, mains, streets, buildings = _layers()
    notice_period = period(profile, "mandate.notice_period_days", town)
    due = _connection_notices(
        parcels,
        profile,
        notice_period,
        notice_id=["N-GOLDEN000001", "N-GOLDEN000002"],
        main_diameter_in=8.0,
        notice_reason="public_health_hazard" if profile_name == "poughkeepsie" else None,
        hazard="sewage surfacing from a failing septic system" if profile_name == "poughkeepsie" else None,
    )
    rows = mailing_list(due)
    (letter,) = compose_letters(
        rows,
        due,
        profile=profile,
        town=town,
        kind="connection",
        notice_date=DAY,
        period=notice_period,
        obligations=building_obligations(buildings, profile),
    )
    maps = letter_maps(
        list(due["parcel_id"]), parcels=parcels, lines=lines, mains=mains, streets=streets, buildings=buildings
    )
    return letter, maps, profile


def _letter(profile_name: str, town, tmp_path: Path) -> tuple[Path, str, object]:
    letter, maps, profile = _composed(profile_name, town)
    path = write_letter(tmp_path / f"{profile_name}.pdf", letter, maps=maps)
    return Path(path), pdf_text(path), profile


@pytest.mark.parametrize("name", ["fort-plain", "poughkeepsie", "wappinger"])
def test_the_pdf_prints_exactly_the_words_analysis_composed(name, tmp_path):
    """The letter's words have one home (analysis.notices): the PDF lays out letter_text's words, no more, no less."""
    town = town_settings(tmp_path, name)
    letter, maps, _ = _composed(name, town)
    printed = pdf_text(write_letter(tmp_path / f"{name}.pdf", letter, maps=maps))
    # Inside each map only its drawing's labels: the data's street names and main IDs, the scale bar, the "N".
    drawn = re.findall(r"Map: parcel \S+ (.*?) Parcel outlined", printed)
    assert drawn and all(re.fullmatch(r"(Main St |M-1 8 in )*0 \d+ ft N", d) for d in drawn), drawn
    printed = re.sub(r"(Map: parcel \S+) .*? (Parcel outlined)", r"\1 \2", printed)
    assert printed == words(letter_text(letter, mapped=maps))
    assert "Map: parcel 12.1-1-1" in printed and town.officer_name in printed  # the maps and the signature too
    without_maps = pdf_text(write_letter(tmp_path / f"{name}-plain.pdf", letter))
    assert without_maps == words(letter_text(letter)) and "Map: parcel" not in without_maps


def test_layers_letters_lays_out_and_never_imports_analysis():
    """layers/letters.py draws what it is given: no import of analysis/ at run time."""
    source = (REPO / "layers" / "letters.py").read_text(encoding="utf-8")
    runtime = source.split("if TYPE_CHECKING:")[0] + source.split("if TYPE_CHECKING:")[1].split("\n\n\n", 1)[1]
    assert "from analysis" not in runtime and "import analysis" not in runtime


@pytest.mark.parametrize("name", ["fort-plain", "poughkeepsie", "wappinger"])
def test_golden_letter_quotes_the_law_word_for_word(name, tmp_path):
    town = town_settings(tmp_path, name)
    path, text, profile = _letter(name, town, tmp_path)
    golden = GOLDEN / f"letter-{name}.txt"
    if os.environ.get("SEWERPLAN_UPDATE_GOLDEN"):
        golden.write_text(text + "\n", encoding="utf-8")
    assert text == golden.read_text(encoding="utf-8").strip(), f"the letter changed: compare with {golden}"
    law = ordinance(profile)
    found = quotes(text)
    assert len(found) >= 5
    for passage in found:  # every passage in quotation marks is the law's own words
        assert passage in law, passage
    n = profile.notices
    assert (
        f"{n.connection_duty.section} of the {code_name(profile)} provides: \u201c{words(n.connection_duty.quote)}"
        in text
    )
    for rule in (n.permit, n.permit_fees, n.inspection, n.inflow_sources, n.penalty):
        assert f"{rule.section} provides: \u201c{words(rule.quote)}\u201d" in text, rule.section
    for annotation in ANNOTATIONS:
        assert annotation not in text.lower(), annotation
    # The paperwork a clerk needs: the town's own details, the notices, the date to act by, the map.
    for expected in (
        town.name,
        *town.return_address,
        town.officer_name,
        town.officer_title,
        town.phone,
        town.email,
        town.hours,
        "CERTIFIED MAIL Article No.",
        "N-GOLDEN000001",
        "N-GOLDEN000002",
        "Parcel 12.1-1-1, 10 Main St",
        "Parcel 12.1-1-2, 12 Main St",
        "VAN DER BERG-WILLIAMSON JOHNATHAN & MARGARET TRUST",
        "The 8-inch public sanitary sewer main M-1 in Main St lies 30.0 feet from the property line",
        "More time, or an objection",
        "Map: parcel 12.1-1-1",
        "M-1 8 in",
        "Main St",
        " ft ",
    ):
        assert expected in text, expected
    assert len(PdfReader(str(path)).pages) >= 2


def test_each_letter_says_what_its_law_says(tmp_path):
    _, fort_plain, fp = _letter("fort-plain", town_settings(tmp_path, "fort-plain"), tmp_path)
    assert "You are required to connect by May 30, 2027, 90 days after the date of this notice." in fort_plain
    assert "shall be abandoned and filled with suitable material" in fort_plain  # § 144-5B, the private system
    assert words(fp.notices.private_system_duty.quote) in fort_plain
    assert "Building B-1 has 12 living units. § 144-9 provides:" in fort_plain
    assert "This building needs at least 3 building sewers." in fort_plain
    assert (
        "The administrative body shall determine if and where this type of connection to the public sewer is "
        "required.\u201d Before you connect, ask whether the administrative body requires a manhole connection"
    ) in fort_plain
    assert "The fees now in force: building sewer permit $100" in fort_plain
    _, pough, _ = _letter("poughkeepsie", town_settings(tmp_path, "poughkeepsie"), tmp_path)
    assert (
        "This notice is given to eliminate a public health hazard: sewage surfacing from a failing septic system."
        in pough
    )
    assert "§ 168-22.3C provides: \u201cAt such times as a public sewer system becomes available" in pough
    assert "abandoned" not in pough  # the article has no abandonment clause: none is put in its mouth
    assert "Your buildings" not in pough  # no living-unit or manhole rule in the article
    _, wapp, _ = _letter("wappinger", town_settings(tmp_path, "wappinger"), tmp_path)
    assert (  # § 196-17E sets no period: the Town's resolution does, and is not said to be made under the section
        "§ 196-17E sets no period for making the connection: Resolution 9 of 2027 of the Town Board sets it, and "
        "under it you are required to connect by April 30, 2027, 60 days after the date of this notice."
    ) in wapp
    assert "under § 196-17E" not in wapp
    assert wapp.count("§ 196-17E") == 2  # quoted once (the duty is the private-system sentence), cited once more
    # What the owner must do to connect, beyond the permit: § 144-14A, § 196-18J notify for inspection and connect
    # under supervision; § 168-22.4I, only persons the Town authorizes make the connection.
    for text, section, words_ in (
        (fort_plain, "§ 144-14A", "notify the local governing body when the building sewer is ready for inspection"),
        (pough, "§ 168-22.4I", "No one but persons duly authorized by the Town of Poughkeepsie"),
        (wapp, "§ 196-18J", "notify the Superintendent when the building sewer is ready for inspection"),
    ):
        assert f"Inspection and connection {section} provides: \u201c" in text and words_ in text, section
    assert "§ 196-17E of the Code of the Town of Wappinger provides:" in wapp


@pytest.mark.parametrize("name", ["fort-plain", "poughkeepsie", "wappinger"])
def test_the_penalty_in_short_says_when_the_law_fines(name, tmp_path):
    """§ 168-22.9B and § 196-22B fine "any person who shall continue any violation beyond the time limit provided for
    in Subsection A", the time a written notice of violation gives (§ 168-22.9A, § 196-22A: 10 days), and only on
    conviction. The letter's plain summary of the penalty said a fine followed, as if on missing the connection
    deadline. Fort Plain § 144-40B fines whoever "fails to comply", with no such condition."""
    town = town_settings(tmp_path, name)
    _, text, profile = _letter(name, town, tmp_path)
    n = profile.notices
    summary = re.search(r"In short: (.*?)\. More time", text).group(1)
    assert summary == words(n.penalty.value)
    if "beyond the time limit provided for in Subsection A" in n.penalty.quote:
        assert summary.startswith("if a violation continues beyond the ")
        assert f"written notice of violation served under {n.correction_period_days.section}" in summary
        assert "on conviction" in summary
        assert ("misdemeanor" in summary) == ("guilty of a misdemeanor" in n.penalty.quote)
    else:
        assert name == "fort-plain" and "fails to comply" in n.penalty.quote
        assert summary.startswith("a fine not exceeding $250")


def test_a_distance_from_the_curbline_is_not_said_to_be_measured_on_the_tax_map(town):
    """Fort Plain § 144-1: the property line is "the curbline if the building sewer is to connect with the public
    sewer in a public street", the edge of a sewer right-of-way where it connects in one. With a curbs layer the
    analysis measures from there (measured_from), and the letter said "measured on the tax map" all the same."""
    from analysis.notices import plan_notices

    profile = load_profile("fort-plain")
    parcels = _layers()[0].drop(columns="geometry")
    results = parcels.assign(
        parcel_id=["1", "2"],
        measured_from=["curbline", "sewer right-of-way edge"],
    )
    results = pd.concat(
        [results, results.iloc[[0]].assign(parcel_id="3", measured_from="parcel boundary", owner_name="ROE ANN")]
    )
    plan = plan_notices(results, profile=profile, notice_date=DAY)
    due = plan.due.assign(notice_id=["N-1", "N-2", "N-3"], main_diameter_in=8.0)
    letters = compose_letters(
        mailing_list(due), due, profile=profile, town=town, kind="connection", notice_date=DAY, period=plan.period
    )
    text = " ".join(words(letter_text(letter)) for letter in letters)
    assert "lies 30.0 feet from the property line, measured from the curbline in front of the property." in text
    assert "lies 42.5 feet from the property line, measured from the edge of the sewer right-of-way." in text
    assert text.count("measured on the tax map") == 1  # parcel 3, measured from its boundary


def test_building_obligations_read_what_the_building_assessment_writes():
    """A letter's § 144-16 and § 144-9 duties come from analysis.buildings' own columns, not a hand-made frame."""
    from analysis.buildings import assess_buildings
    from analysis.mandate import analyze_mandates

    profile = load_profile("fort-plain")
    town = sample_town(600)
    result = analyze_mandates(
        town["parcels"], town["mains"], streets=town["streets"], buildings=town["buildings"], profile=profile
    )
    assessed = assess_buildings(
        town["buildings"], result.parcels, profile=profile, streets=town["streets"], mains=town["mains"]
    ).buildings
    duties = building_obligations(assessed, profile)
    cases = set(assessed.loc[assessed["manhole_connection_case"].astype(bool), "parcel_id"].astype(str))
    many = set(assessed.loc[assessed["required_laterals"].fillna(1) > 1, "parcel_id"].astype(str))
    assert cases and many  # the sample village has schools and apartment buildings
    manhole = profile.notices.manhole_connection
    assert {p for p, texts in duties.items() if any(manhole.section in t for t in texts)} == cases
    per = profile.buildings.units_per_lateral
    assert {
        p for p, texts in duties.items() if any(f"living units. {per.section} provides" in t for t in texts)
    } == many
    rear = set(assessed.loc[assessed["shared_lateral"].notna(), "parcel_id"].astype(str))
    assert rear and {p for p, texts in duties.items() if any("stands at the rear of" in t for t in texts)} == rear


@pytest.mark.parametrize(
    ("name", "verdict", "said"),
    [
        ("fort-plain", "separate_required", "It needs its own building sewer; the exception for a rear building"),
        ("fort-plain", "may_share_if_no_route", "Where no other route exists, its sewer may be the front building's"),
        ("poughkeepsie", "may_share_if_no_route", "the assessor may assess each building separately"),
        (
            "wappinger",
            "main_extension_required",
            "The owner is to ask the Town how and when the main is to be extended",
        ),
    ],
)
def test_a_letter_says_what_the_law_asks_of_a_rear_building(name, verdict, said):
    """A corner lot's rear house (its own building sewer, § 144-9) and a Wappinger rear house (the main extended,
    § 196-18D) went without a word in the owner's letter, which named only the units and manhole duties (a tester)."""
    profile = load_profile(name)
    buildings = pd.DataFrame(
        {
            "parcel_id": ["P-7", "P-7"],
            "building_id": ["B-7", "B-7R"],
            "front_building_id": [None, "B-7"],
            "rear_building": [False, True],
            "shared_lateral": [None, verdict],
        }
    )
    (text,) = building_obligations(buildings, profile)["P-7"]
    rule = (
        profile.buildings.separate_building_sewer
        if verdict == "separate_required"
        else profile.buildings.rear_building_rule
    )
    assert text.startswith("Building B-7R stands at the rear of building B-7.") and said in text
    assert re.search(f"{rule.section} provides(, in part)?: \u201c", text) and rule.quote.strip()[:40] in text
    assert not re.search(r"\w\u201d [A-Z]", text), text  # a quote ending without a full stop gets one: no run-on


@pytest.mark.parametrize("name", ["fort-plain", "poughkeepsie", "wappinger"])
def test_violation_letters_cite_the_original_notice_and_the_towns_own_period(name, tmp_path):
    town = town_settings(tmp_path, name)
    profile = load_profile(name)
    overdue = pd.DataFrame(
        {
            "notice_id": ["N-ORIGINAL0001"],
            "parcel_id": ["12.1-1-1"],
            "owner_name": ["SMITH JOHN"],
            "mail_address": ["1 Main St"],
            "mail_city": ["Fort Plain"],
            "mail_state": ["NY"],
            "mail_zip": ["13339"],
            "site_address": ["1 Main St"],
            "issued_date": [DAY],
            "deadline": [dt.date(2027, 5, 30)],
        }
    )
    plan = plan_violations(overdue, profile=profile, today=dt.date(2027, 6, 1), town=town)
    due = plan.due.assign(notice_id="N-VIOLATION001")
    (letter,) = compose_letters(
        mailing_list(due),
        due,
        profile=profile,
        town=town,
        kind="violation",
        notice_date=plan.notice_date,
        period=plan.period,
    )
    text = pdf_text(write_letter(tmp_path / "v.pdf", letter))
    assert "NOTICE OF VIOLATION" in text and "N-VIOLATION001" in text
    assert "Notice N-ORIGINAL0001, given on March 1, 2027, required the owner" in text and "by May 30, 2027" in text
    law = ordinance(profile)
    assert all(q in law for q in quotes(text))
    n = profile.notices
    assert f"{n.correction_period_days.section} provides: \u201c{words(n.correction_period_days.quote)}\u201d" in text
    assert f"{n.penalty.section} provides: \u201c{words(n.penalty.quote)}\u201d" in text
    if name == "wappinger":  # the law's own 10 days from service, and the section that sets the fine's amount
        assert (
            "by June 16, 2027, 10 days from the service of this notice, allowing 5 days for the mail to deliver it "
            "(§ 196-22A)."
        ) in text
        assert "Chapter 122, Article V, § 122-20Y of the Code per day for each violation" in text
    else:  # a reasonable time / one the Town Board determines: the town's resolution, never the section's
        board = LETTERHEADS[name][3]
        assert f"the time limit set by Resolution 4 of 2027 of the {board}, under" in text
    for annotation in ANNOTATIONS:
        assert annotation not in text.lower(), annotation


def _overdue(**columns) -> pd.DataFrame:
    """Overdue connection notices as the register lists them, one per parcel, with what ``columns`` replace."""
    n = max(len(v) for v in columns.values())
    base = {
        "notice_id": [f"N-ORIGINAL{i:04d}" for i in range(n)],
        "parcel_id": [f"12.1-1-{i}" for i in range(n)],
        "owner_name": ["SMITH JOHN"] * n,
        "mail_address": ["1 Main St"] * n,
        "mail_city": ["Fort Plain"] * n,
        "mail_state": ["NY"] * n,
        "mail_zip": ["13339"] * n,
        "site_address": ["1 Main St"] * n,
        "issued_date": [DAY] * n,
        "deadline": [dt.date(2027, 5, 30)] * n,
    }
    return pd.DataFrame(base | columns)


def test_a_violation_letter_is_held_back_for_what_a_connection_letter_is(town):
    """A violation letter is addressed to the owner as the register recorded them, and it went out without the
    checks a connection letter gets: a name the font cannot print, a malformed ZIP or a name the envelope window
    would cut was printed as it was. It now goes through the same check, and is held back with the reason."""
    overdue = _overdue(
        owner_name=["SMITH JOHN", "李 伟", "SMITH JOHN", "W" * 300],
        mail_zip=["13339", "13339", "5201", "13339"],
    )
    plan = plan_violations(
        overdue,
        profile=load_profile("fort-plain"),
        today=dt.date(2027, 6, 1),
        town=town,
        printable=PRINTABLE,
        overflow=address_overflow,
    )
    assert plan.due["parcel_id"].tolist() == ["12.1-1-0"]
    held = plan.held.set_index("parcel_id")
    assert "characters the letters' font lacks: 伟 李" in held.loc["12.1-1-1", "why"]
    assert "'5201' is not a US ZIP code" in held.loc["12.1-1-2", "why"]
    assert "do not fit the mail" in held.loc["12.1-1-3", "why"]
    assert set(held["left_out"]) == {"held"} and held.loc["12.1-1-2", "notice_id"] == "N-ORIGINAL0002"
    # without the font and the measure, what no letter prints is held back all the same
    bare = plan_violations(_overdue(owner_name=["A\x07B"]), profile=load_profile("fort-plain"), today=DAY)
    assert bare.due.empty and "control characters: U+0007" in bare.held["why"].iloc[0]


def test_an_occupant_letter_is_held_back_for_what_an_owner_letter_is():
    """`--occupant` letters go to "Occupant" at the site address, which no check had read: a site ZIP "5201", a
    direction mark or a street the envelope window would cut went out as they were. Each goes through the check
    the owner's letter does, and is held back with the reason; the owner's letter is written all the same."""
    notices = _overdue(
        mail_address=["9 Far Rd"] * 5,
        mail_city=["Albany"] * 5,
        mail_zip=["12207"] * 5,
        site_address=["1 Main St", "2 Main St", "3 Main\u202eSt", "4 " + "Long " * 80 + "St", "1 Far Rd"],
        site_city=["Fort Plain"] * 5,
        site_state=["NY"] * 5,
        site_zip=["13339", "5201", "13339", "13339", "13339"],
    ).assign(deadline=DAY, section="§ 144-4")
    occupants, held = occupant_letters(notices, printable=PRINTABLE, overflow=address_overflow)
    assert occupants["parcel_id"].tolist() == ["12.1-1-0", "12.1-1-4"]
    why = held.set_index("parcel_id")["why"]
    assert set(why.index) == {"12.1-1-1", "12.1-1-2", "12.1-1-3"}
    assert all(w.startswith("the letter to Occupant at the site address is not written") for w in why)
    assert "site ZIP code '5201' is not a US ZIP code" in why["12.1-1-1"] and "the site address" in why["12.1-1-1"]
    assert "invisible marks: U+202E" in why["12.1-1-2"] and "does not fit the mail" in why["12.1-1-3"]
    rows = mailing_list(notices.assign(notice_id="N-1"), occupants=occupants)
    assert sorted(rows.loc[rows["name_line_1"] == "Occupant", "parcel_ids"]) == ["12.1-1-0", "12.1-1-4"]
    assert (rows["name_line_1"] == "SMITH JOHN").sum() == 1  # the owner's letter, one for its five parcels
    # occupant=True takes the same check, without the font and the measure (the ZIP and the mark held back)
    plain = mailing_list(notices.assign(notice_id="N-1"), occupant=True)
    assert sorted(plain.loc[plain["name_line_1"] == "Occupant", "parcel_ids"]) == ["12.1-1-0", "12.1-1-3", "12.1-1-4"]


@pytest.mark.parametrize("name", ["fort-plain", "poughkeepsie", "wappinger"])
def test_the_occupants_copy_says_it_is_a_copy_of_the_owners_notice(name, tmp_path):
    """The letter to "Occupant" at the site address (`--occupant`) was the owner's word for word: "This letter ... is
    the official notice that section refers to. You are required to connect by ...", to a tenant who owes nothing
    and is not served (the notice is the owner's). It says it is a copy for the occupant of the notice served on
    the owner, named; that the duty and the deadline are the owner's; and what the occupant may do. Every other
    sentence is the owner's letter's."""
    town = town_settings(tmp_path, name)
    profile = load_profile(name)
    notice_period = period(profile, "mandate.notice_period_days", town)
    parcels = _layers()[0].head(1).assign(owner_name="RIVERSIDE REALTY LLC", site_city="Fort Plain", site_zip="13339")
    hazard = name == "poughkeepsie"
    due = _connection_notices(
        parcels,
        profile,
        notice_period,
        notice_id="N-OWNER0000001",
        main_diameter_in=8.0,
        notice_reason="public_health_hazard" if hazard else None,
        hazard="failing septic system" if hazard else None,
    )
    occupants, held = occupant_letters(due)
    assert held.empty
    owner_letter, copy = compose_letters(
        mailing_list(due, occupants=occupants),
        due,
        profile=profile,
        town=town,
        kind="connection",
        notice_date=DAY,
        period=notice_period,
    )
    assert owner_letter.recipient[0] == "RIVERSIDE REALTY LLC" and copy.recipient[0] == "Occupant"
    text = pdf_text(write_letter(tmp_path / "copy.pdf", copy))
    assert "NOTICE TO CONNECT TO THE PUBLIC SEWER: COPY FOR THE OCCUPANT" in text
    deadline = f"{notice_period.ends(DAY):%B} {notice_period.ends(DAY).day}, 2027"
    assert (
        f"This letter is a copy, for the occupant of the property, of the notice dated March 1, 2027 that the "
        f"{'Village' if name == 'fort-plain' else 'Town'} serves on its owner, RIVERSIDE REALTY LLC, by certified "
        "mail to the owner's mailing address. The duty to connect is the owner's."
    ) in text
    assert f"the owner is required to connect by {deadline}" in text.replace("The owner is", "the owner is")
    assert (
        "This copy is not the notice to the owner, and it asks nothing of you. Please tell the owner that you "
        "received it; with any question, call or write to the Superintendent of Public Works at the address above."
    ) in text
    for said in ("You are required", "you are required", "is the official notice", "gives you notice"):
        assert said not in text, said
    # the owner's letter is the notice, as before; the copy quotes the same law, word for word
    assert "You are required" in owner_letter.text() or "you are required" in owner_letter.text()
    assert owner_letter.title == "NOTICE TO CONNECT TO THE PUBLIC SEWER"
    assert [b for b in owner_letter.blocks if b.kind == "quote"] == [b for b in copy.blocks if b.kind == "quote"]


# What the owner's letter says to its reader as the one served and bound, and the occupant's copy must not: the
# occupant is neither (test_every_sentence_of_the_occupants_copy_is_true_for_an_occupant).
OWNER_ONLY = (
    "Your buildings",
    "Your private sewage disposal system",
    "To ask the",
    "Before you connect",
    "no building on it is occupied",
    "after the date of this notice",
    "Why this notice is given",
    "This notice is given",
)


@pytest.mark.parametrize("name", ["fort-plain", "poughkeepsie", "wappinger"])
def test_every_sentence_of_the_occupants_copy_is_true_for_an_occupant(name, tmp_path):
    """The occupant's copy said it was a copy, then kept the owner's words: "Your buildings", "Your private sewage
    disposal system", "Before you connect, ask ...", "To ask the Village for more time ... write to ...", a deadline
    "after the date of this notice" (the copy is no notice). Each is worded for a reader who neither owns nor is
    served: the buildings and the system are the property's, the deadline runs from the notice to the owner, asking
    for more time or objecting is the owner's, and what the occupant may do is to tell the owner or the office."""
    town = town_settings(tmp_path, name)
    profile = load_profile(name)
    notice_period = period(profile, "mandate.notice_period_days", town)
    parcels, _, _, _, buildings = _layers()
    hazard = name == "poughkeepsie"
    due = _connection_notices(
        parcels.assign(site_city="Fort Plain", site_zip="13339"),
        profile,
        notice_period,
        notice_id=["N-OWNER0000001", "N-OWNER0000002"],
        main_diameter_in=8.0,
        notice_reason="public_health_hazard" if hazard else None,
        hazard="failing septic system" if hazard else None,
    )
    occupants, _ = occupant_letters(due)
    obligations = building_obligations(buildings, profile)
    if name != "fort-plain":  # only § 144-9 and § 144-16 put duties on buildings; the copy's words are the same
        obligations = {"12.1-1-1": ["Building B-1 needs at least 3 building sewers."]}
    owner_letter, *copies = compose_letters(
        mailing_list(due, occupants=occupants),
        due,
        profile=profile,
        town=town,
        kind="connection",
        notice_date=DAY,
        period=notice_period,
        obligations=obligations,
    )
    assert [c.recipient[0] for c in copies] == ["Occupant", "Occupant"]
    owners = words(letter_text(owner_letter))
    said_to_owner = [w for w in OWNER_ONLY if w in owners]
    assert "Your buildings" in said_to_owner and "To ask the" in said_to_owner  # the owner's letter is unchanged
    assert ("Your private sewage disposal system" in said_to_owner) == (name != "wappinger")  # § 196-17E is both
    assert ("Before you connect" in said_to_owner) == (name == "fort-plain")  # § 144-16
    copy_text = words(" ".join(pdf_text(write_letter(tmp_path / f"{c.mailing_no}.pdf", c)) for c in copies))
    for said in OWNER_ONLY:
        assert said not in copy_text, said
    # what the copy says instead, each where the owner's letter has its own
    # parcel 12.1-1-1's copy (its 12 living units in Fort Plain), and 12.1-1-2's in Fort Plain (its § 144-16 case)
    assert copy_text.count("The buildings on the property") == (2 if name == "fort-plain" else 1)
    if name == "fort-plain":
        assert (
            "Before connecting, the owner is to ask whether the administrative body requires a manhole connection "
            "for this property."
        ) in copy_text
    assert ("The property's private sewage disposal system" in copy_text) == (name != "wappinger")
    assert f"{notice_period.days} days after the date of the notice." in copy_text
    if hazard:
        assert "Why the notice is given" in copy_text
        assert "The notice is given to eliminate a public health hazard: failing septic system." in copy_text
    deadline = f"{notice_period.ends(DAY):%B} {notice_period.ends(DAY).day}, 2027"
    ask = (
        f"Asking the {'Village' if name == 'fort-plain' else 'Town'} for more time, or objecting to the notice, is "
        f"for the owner to do, as the owner's letter says, before {deadline}. If you know that the property is already "
        "connected, please tell the owner, or write to the Superintendent of Public Works at the address above, "
        "quoting the notice number above."
    )
    assert copy_text.count(ask) == 2
    # "you" is said of the occupant only where it is true of them: what they received and what they may do
    yours = re.findall(r"[^.]*\byou\b[^.]*\.", copy_text, flags=re.IGNORECASE)
    assert {y.strip() for y in yours} == {
        "This copy is not the notice to the owner, and it asks nothing of you.",
        "Please tell the owner that you received it; with any question, call or write to the Superintendent of "
        "Public Works at the address above.",
        "If you know that the property is already connected, please tell the owner, or write to the Superintendent "
        "of Public Works at the address above, quoting the notice number above.",
    }
    assert not re.search(r"\byour\b", copy_text, flags=re.IGNORECASE)


@pytest.mark.parametrize("name", ["fort-plain", "poughkeepsie", "wappinger"])
def test_the_occupants_copy_of_a_violation_notice_says_whose_violation_it_is(name, tmp_path):
    """A violation notice now has the occupant's copy a connection notice has (`violations --occupant`): the same
    copy paragraph, the violation and its correction the owner's ("The owner must correct the violation by ..."),
    the period counted from the notice to the owner (Wappinger § 196-22A: from its service on the owner), and the
    objection the owner's to make. The site's city and ZIP code come from the latest analysis (``current``)."""
    town = town_settings(tmp_path, name)
    profile = load_profile(name)
    overdue = _overdue(parcel_id=["12.1-1-1", "12.1-1-2"], site_address=["10 Main St", "1 Main St"])
    current = pd.DataFrame(
        {
            "parcel_id": ["12.1-1-1", "12.1-1-2"],
            "status": "mandated",
            "site_city": "Fort Plain",
            "site_state": "NY",
            "site_zip": "13339",
        }
    )
    plan = plan_violations(overdue, profile=profile, today=dt.date(2027, 6, 1), town=town, current=current)
    due = plan.due.assign(notice_id=["N-VIOLATION001", "N-VIOLATION002"])
    occupants, held = occupant_letters(due)
    assert occupants["parcel_id"].tolist() == ["12.1-1-1"] and held.empty  # 12.1-1-2: the owner lives there
    letters = compose_letters(
        mailing_list(due, occupants=occupants),
        due,
        profile=profile,
        town=town,
        kind="violation",
        notice_date=plan.notice_date,
        period=plan.period,
    )
    (copy,) = [c for c in letters if c.recipient[0] == "Occupant"]
    assert copy.recipient[1:] == ("10 Main St", "Fort Plain, NY 13339")
    text = pdf_text(write_letter(tmp_path / "copy.pdf", copy))
    owner_letter = next(c for c in letters if c.recipient[0] != "Occupant")
    owner_text = words(letter_text(owner_letter))
    assert "NOTICE OF VIOLATION: COPY FOR THE OCCUPANT" in text
    assert (
        "This letter is a copy, for the occupant of the property, of the notice of violation dated June 1, 2027 that "
        f"the {'Village' if name == 'fort-plain' else 'Town'} serves on its owner, SMITH JOHN, by certified mail to "
        "the owner's mailing address. The violation is the owner's, and so is correcting it. This copy is not the "
        "notice to the owner, and it asks nothing of you."
    ) in text
    correct_by = f"{plan.deadline:%B} {plan.deadline.day}, 2027"
    if name == "wappinger":  # § 196-22A: 10 days from service, the owner's
        counted = "10 days from the service of the notice on the owner, allowing 5 days for the mail to deliver it"
        assert "10 days from the service of this notice" in owner_text
    else:
        counted = f"{plan.period.days} days after the date of the notice"
    assert f"The owner must correct the violation by {correct_by}, {counted}" in text
    objection = (
        "Objecting to the notice"
        if name == "wappinger"
        else "Asking the Town for more time, or objecting to the notice,"
    )
    objection = objection.replace("Town", "Village") if name == "fort-plain" else objection
    assert f"{objection} is for the owner to do, as the owner's letter says, before {correct_by}." in text
    for said in ("You must", "this notice", "If you believe", "To ask the", *OWNER_ONLY):
        assert said not in text, said
    assert "You must correct the violation" in owner_text  # the owner's letter is the notice, as before
    assert [b for b in owner_letter.blocks if b.kind == "quote"] == [b for b in copy.blocks if b.kind == "quote"]


def test_a_long_letterhead_wraps_inside_the_page(town, tmp_path):
    long_town = town.__class__(**{**town.__dict__, "name": "Town of Poughkeepsie, Dutchess County, New York: " * 3})
    profile = load_profile("poughkeepsie")
    due = (
        _layers()[0]
        .drop(columns="geometry")
        .head(1)
        .assign(notice_id="N-1", issued_date=DAY, deadline=DAY, section="§", notice_type="connection")
    )
    (letter,) = compose_letters(
        mailing_list(due),
        due,
        profile=profile,
        town=long_town,
        kind="connection",
        notice_date=DAY,
        period=period(profile, "mandate.notice_period_days"),
    )
    path = write_letter(tmp_path / "l.pdf", letter)
    right = 8.5 * inch - 0.9 * inch
    spans = []
    PdfReader(path).pages[0].extract_text(
        visitor_text=lambda t, cm, tm, f, size: spans.append((t.strip(), tm[4], size)) if t.strip() else None
    )
    for text, x, size in spans:
        font = BOLD if size in (14, 12.5, 10.5) else REGULAR  # the embedded faces the letter is set in
        assert x + stringWidth(text, font, size) <= right + 0.5, text


# -- Avery 5160 ---------------------------------------------------------------------------------------------------


def _label_rows():
    names = sample_town(300)["parcels"]["owner_name"].drop_duplicates()
    longest = names.loc[names.str.len().sort_values(ascending=False).index[:12]].tolist()
    hostile = [
        "THE ESTATE OF JOHN JACOB JINGLEHEIMER-SCHMIDT IRREVOCABLE LIVING TRUST DATED JANUARY 1 1999",
        "W" * 70,
        "Occupant",
    ]
    due = pd.DataFrame(
        {
            "parcel_id": [f"P-{i}" for i in range(len(longest + hostile) * 3)],
            "notice_id": [f"N-{i:012d}" for i in range(len(longest + hostile) * 3)],
            "owner_name": (longest + hostile) * 3,
            "mail_address": ["1234 COUNTY HIGHWAY 80 APARTMENT 12B REAR ENTRANCE"] * (len(longest + hostile) * 3),
            "mail_city": "SCHENECTADY",
            "mail_state": "NY",
            "mail_zip": [f"{12000 + i:05d}" for i in range(len(longest + hostile) * 3)],
            "site_address": "1 Main St",
            "deadline": DAY,
            "section": "§ 144-4",
        }
    )
    return mailing_list(due, per_parcel=True)


def test_avery_5160_geometry_measured_from_the_pdf(tmp_path):
    rows = _label_rows()
    path = write_labels(tmp_path / "labels.pdf", rows)
    reader = PdfReader(path)
    assert len(reader.pages) == -(-len(rows) // 30) == 2
    g = AVERY_5160
    labels: dict[tuple[int, int], list] = {}
    for page_no, page in enumerate(reader.pages):
        spans = []
        page.extract_text(
            visitor_text=lambda t, cm, tm, f, size, spans=spans: (
                spans.append((t.strip(), tm[4], tm[5], size)) if t.strip() else None
            )
        )
        for text, x, y, size in spans:
            k = next(k for k in range(30) if _inside(label_box(k), x, y))
            _, bx, by, w, h = label_box(k)
            # Everything inside its own label, padding included: no text runs into the next label.
            assert bx + g["pad_x"] - 0.01 <= x and x + stringWidth(text, REGULAR, size) <= bx + w - g["pad_x"] + 0.01
            assert y - 0.22 * size >= by + g["pad_y"] - 0.01 and y + 0.75 * size <= by + h - g["pad_y"] + 0.01
            assert size >= 6.0, text
            labels.setdefault((page_no, k), []).append((x, y))
    assert len(labels) == len(rows)
    # The grid itself, from where the text stands: three columns 2.75 in apart from a 3/16 in margin, ten rows 1 in
    # apart from a 1/2 in top margin.
    lefts = sorted({round(min(x for x, _ in spans), 2) for (_, k), spans in labels.items() if k < 3})
    assert lefts == [round(0.1875 * inch + g["pad_x"] + i * 2.75 * inch, 2) for i in range(3)]
    tops = [round(max(y for _, y in labels[(0, 3 * r)]), 2) for r in range(10)]
    assert [round(a - b, 2) for a, b in zip(tops, tops[1:], strict=False)] == [72.0] * 9
    assert round(11 * inch - tops[0], 2) == round(0.5 * inch + g["pad_y"] + 6.0, 2)  # the 6 pt reference line


def _inside(box, x, y) -> bool:
    _, bx, by, w, h = box
    return bx <= x <= bx + w and by <= y <= by + h


def test_labels_carry_the_mailing_number_notice_ids_and_whole_names(tmp_path):
    rows = _label_rows()
    texts = [words(t) for t in label_texts(write_labels(tmp_path / "labels.pdf", rows))]
    assert len(texts) == len(rows)
    for text, row in zip(texts, rows.to_dict("records"), strict=True):
        assert text.startswith(f"{row['mailing_no']:04d} {row['notice_ids']}")
        name = words(f"{row['name_line_1']} {row['name_line_2']}")
        assert name.replace(" ", "") in text.replace(" ", ""), name  # wrapped, never cut
        assert row["zip"] in text


def test_a_name_too_long_for_the_label_is_cut_never_the_street_or_city(tmp_path):
    """Fifteen words of owner and a 105-character street: the label still carries the street and "CITY, ST ZIP"."""
    owner = " ".join(f"VERYLONGWORD{i}" for i in range(1, 16))
    street = "1234 COUNTY HIGHWAY 80 APARTMENT 12B REAR ENTRANCE BY THE OLD MILL ACROSS FROM THE FIREHOUSE ON THE LEFT"
    due = pd.DataFrame(
        {
            "parcel_id": ["P-1"],
            "notice_id": ["N-000000000001"],
            "owner_name": [owner],
            "mail_address": [street],
            "mail_city": "BROOKLYN",
            "mail_state": "NY",
            "mail_zip": "11215",
            "site_address": "1 Main St",
            "deadline": DAY,
            "section": "§ 144-4",
        }
    )
    rows = mailing_list(due, per_parcel=True)
    text = words(label_texts(write_labels(tmp_path / "labels.pdf", rows))[0])
    assert "BROOKLYN, NY 11215" in text
    assert words(street).replace(" ", "") in text.replace(" ", "")
    assert text.replace(" ", "").find("VERYLONGWORD1") < text.replace(" ", "").find("1234COUNTY")


def test_a_poughkeepsie_letter_for_two_properties_names_each_propertys_hazard(tmp_path):
    """§ 168-22.3C: one owner, two parcels, two hazards: each named beside its property, not pooled."""
    town = town_settings(tmp_path, "poughkeepsie")
    profile = load_profile("poughkeepsie")
    parcels = _layers()[0]
    notice_period = period(profile, "mandate.notice_period_days", town)
    due = _connection_notices(
        parcels,
        profile,
        notice_period,
        notice_id=["N-H1", "N-H2"],
        notice_reason="public_health_hazard",
        hazard=["raw sewage discharging to the creek", "a cesspool overflowing onto the sidewalk"],
    )
    (letter,) = compose_letters(
        mailing_list(due), due, profile=profile, town=town, kind="connection", notice_date=DAY, period=notice_period
    )
    text = words(letter_text(letter))
    first, second = due.to_dict("records")
    assert f"Parcel {first['parcel_id']}" in text and "(notice N-H1): raw sewage discharging to the creek." in text
    assert "(notice N-H2): a cesspool overflowing onto the sidewalk." in text
    assert "for each property as follows" in text


@pytest.mark.parametrize(
    ("city", "state", "zip_code", "expected"),
    [
        ("Manchester", "", "", "Manchester"),  # no state or ZIP after the city: no comma after it
        ("MANCHESTER VT 05254,", "", "", "MANCHESTER VT 05254"),  # a joined city-state-ZIP field, comma carried over
        ("", "VT", "05254", "VT 05254"),
        (" ", " VT ", "05254 ", "VT 05254"),
        ("Manchester, ", "VT", "05254", "Manchester, VT 05254"),
        ("Manchester", "", "05254", "Manchester, 05254"),  # no state: the label printed "Manchester 05254"
        ("Manchester", None, "05254", "Manchester, 05254"),
    ],
)
def test_a_mailing_address_has_no_dangling_separator(tmp_path, city, state, zip_code, expected):
    """A letter's address block, its label and the mailing list end with what is there, never a comma or a space,
    and all three print the same last line (the mailing list's ``city_line``)."""
    profile = load_profile("fort-plain")
    town = town_settings(tmp_path, "fort-plain")
    parcels = _layers()[0].iloc[:1].assign(mail_city=city, mail_state=state, mail_zip=zip_code)
    notice_period = period(profile, "mandate.notice_period_days", town)
    due = _connection_notices(parcels, profile, notice_period, notice_id=["N-ADDRESS0001"])
    rows = mailing_list(due)
    (letter,) = compose_letters(
        rows, due, profile=profile, town=town, kind="connection", notice_date=DAY, period=notice_period
    )
    assert letter.recipient[-1] == expected
    for line in letter.recipient:
        assert line == line.strip(" ,;"), line
    for column in ("city", "state", "zip"):
        assert rows.loc[0, column] == rows.loc[0, column].strip(" ,;")
    assert rows.loc[0, "city_line"] == expected
    assert mailing_address(rows.loc[0]).endswith(expected)
    (label,) = label_texts(write_labels(tmp_path / "labels.pdf", rows))
    assert [line.strip() for line in label.splitlines() if line.strip()][-1] == expected


def test_polish_czech_and_vietnamese_owners_print_as_written_on_the_letter_and_the_label(tmp_path):
    """Helvetica printed "Łukasz Żółć" as black boxes; the letters and labels embed a font that has its letters."""
    profile = load_profile("fort-plain")
    town = town_settings(tmp_path, "fort-plain")
    owners = ["Łukasz Żółć", "Jiří Dvořák-Šťastný", "Nguyễn Văn Đức"]
    parcels = _layers()[0].iloc[[0, 0, 0]].reset_index(drop=True)
    parcels = parcels.assign(
        parcel_id=["P-1", "P-2", "P-3"],
        owner_name=owners,
        mail_address=["12 Kościuszko St", "3 Dvořákova", "45 Đường Lê Lợi"],
        mail_city=["Little Falls", "Amsterdam", "Utica"],
    )
    notice_period = period(profile, "mandate.notice_period_days", town)
    due = _connection_notices(parcels, profile, notice_period, notice_id=["N-PL1", "N-CZ1", "N-VN1"])
    rows = mailing_list(due, per_parcel=True)
    letters = compose_letters(
        rows, due, profile=profile, town=town, kind="connection", notice_date=DAY, period=notice_period
    )
    for letter in letters:
        printed = pdf_text(write_letter(tmp_path / f"{letter.mailing_no}.pdf", letter))
        assert printed == words(letter_text(letter))
        assert letter.recipient[0] in printed and letter.recipient[1] in printed, letter.recipient
    labels = [words(t) for t in label_texts(write_labels(tmp_path / "labels.pdf", rows))]
    for owner, street in zip(owners, parcels["mail_address"], strict=True):
        assert any(owner in label and street in label for label in labels), (owner, labels)
    assert "\u25a0" not in " ".join(labels)


def test_a_line_break_in_a_mailing_field_is_the_same_on_the_csv_the_letter_and_the_label(tmp_path):
    """'12 Elm St\\r\\nApt 2' stayed a two-line cell in address_line_1 (mail merge broke) while the owner's line break
    became a space. The address's first line break now starts address_line_2; every other line break or tab, in any
    mailing field, is one space: the CSV, the letter and the label print the same lines."""
    from layers.letters import write_mailing_list

    profile = load_profile("fort-plain")
    town = town_settings(tmp_path, "fort-plain")
    parcels = (
        _layers()[0]
        .iloc[:1]
        .assign(
            owner_name="ROE\r\nANN",
            mail_address="12 Elm St\r\nApt 2\nRear\tentrance",
            mail_city="Fort\nPlain",
            mail_state="NY\r\n",
            mail_zip="13339",
            site_address="10 Main\r\nSt",
        )
    )
    notice_period = period(profile, "mandate.notice_period_days", town)
    due = _connection_notices(parcels, profile, notice_period, notice_id=["N-BREAK00001"])
    rows = mailing_list(due)
    row = rows.iloc[0]
    assert (row["name_line_1"], row["name_line_2"]) == ("ROE ANN", "")
    assert (row["address_line_1"], row["address_line_2"]) == ("12 Elm St", "Apt 2 Rear entrance")
    assert (row["city"], row["state"], row["city_line"]) == ("Fort Plain", "NY", "Fort Plain, NY 13339")
    assert row["site_addresses"] == "10 Main St"
    path = write_mailing_list(tmp_path / "mailing-list.csv", rows)
    raw = Path(path).read_text(encoding="utf-8-sig")
    assert len(raw.splitlines()) == 2  # the header and one row: no cell runs over two lines
    (letter,) = compose_letters(
        rows, due, profile=profile, town=town, kind="connection", notice_date=DAY, period=notice_period
    )
    expected = ("ROE ANN", "12 Elm St", "Apt 2 Rear entrance", "Fort Plain, NY 13339")
    assert letter.recipient == expected
    assert "Parcel 12.1-1-1, 10 Main St (notice N-BREAK00001)" in letter_text(letter)
    (label,) = label_texts(write_labels(tmp_path / "labels.pdf", rows))
    assert [line.strip() for line in label.splitlines() if line.strip()][1:] == list(expected)


LONG_NAME = " ".join(["WIŚNIEWSKA-KOWALCZYK MARIA"] * 8)  # 215 characters
LONG_STREET = " ".join(["1234 COUNTY HIGHWAY 80 APARTMENT 12B REAR ENTRANCE"] * 8)  # 407 characters


def test_what_the_label_or_the_window_would_cut_is_measured_as_laid_out():
    """A 200-character name was cut with "…" on the label, and a 400-character street wrapped to more lines than the
    envelope window shows, and nobody was told. The layout says so, by the width of the text in its font."""
    city = ("SCHENECTADY, NY 12305",)
    assert address_overflow(("VAN DER BERG-WILLIAMSON", "JOHNATHAN & MARGARET TRUST"), ("PO BOX 12", *city)) == ""
    assert "mailing label would cut it" in address_overflow((LONG_NAME,), ("1 Main St", *city))
    window = address_overflow(("ANN ROE",), (LONG_STREET, *city))
    assert "address block would take" in window and "an envelope window shows 5" in window
    # Measured, not counted: 140 narrow letters fit where 140 wide ones do not.
    assert address_overflow(("i" * 140,), ("1 Main St", *city)) == ""
    assert "mailing label" in address_overflow(("W" * 140,), ("1 Main St", *city))


def test_the_letters_address_block_is_wrapped_at_the_envelope_windows_width(tmp_path):
    profile = load_profile("fort-plain")
    town = town_settings(tmp_path, "fort-plain")
    street = "1234 COUNTY HIGHWAY 80 APARTMENT 12B REAR ENTRANCE BY THE MILL"
    parcels = _layers()[0].iloc[:1].assign(mail_address=street)
    notice_period = period(profile, "mandate.notice_period_days", town)
    due = _connection_notices(parcels, profile, notice_period, notice_id=["N-WINDOW0001"])
    (letter,) = compose_letters(
        mailing_list(due), due, profile=profile, town=town, kind="connection", notice_date=DAY, period=notice_period
    )
    spans = []
    PdfReader(write_letter(tmp_path / "l.pdf", letter)).pages[0].extract_text(
        visitor_text=lambda t, cm, tm, f, size: spans.append((t.strip(), tm[4])) if t.strip() else None
    )
    block = [(t, x) for t, x in spans if t and (t in street or street.startswith(t) or "BY THE MILL" in t)]
    assert len(block) >= 2, spans  # the street wrapped in two lines
    for text, x in block:
        assert x + stringWidth(text, REGULAR, 10.5) <= 0.9 * inch + ADDRESS_BLOCK["width"] + 0.5, text


def test_labels_need_the_mailing_lists_city_line(tmp_path):
    """Labels print the last address line the letters print; rows without it are refused, not labelled without it."""
    rows = _label_rows().drop(columns="city_line")
    with pytest.raises(LayerError, match="no city_line column"):
        write_labels(tmp_path / "labels.pdf", rows)
    assert not (tmp_path / "labels.pdf").exists()


def _letters_planned(name: str, town, parcels: pd.DataFrame, occupant: bool = False, per_parcel: bool = True):
    """The connection letters of ``parcels`` as an issue composes them: planned (``plan_notices`` reads the
    private_system column, or the profile's assumption), then written per mailing address."""
    profile = load_profile(name)
    plan = plan_notices(
        parcels.drop(columns="geometry"),
        profile=profile,
        notice_date=DAY,
        notice_reason="public_health_hazard" if name == "poughkeepsie" else None,
        hazard="failing septic system" if name == "poughkeepsie" else None,
        town=town,
    )
    due = plan.due.assign(notice_id=[f"N-PRIVATE0000{i}" for i in range(len(plan.due))], main_diameter_in=8.0)
    occupants = occupant_letters(due)[0] if occupant else None
    return compose_letters(
        mailing_list(due, per_parcel=per_parcel, occupants=occupants),
        due,
        profile=profile,
        town=town,
        kind="connection",
        notice_date=DAY,
        period=plan.period,
    )


ASSUMED_HEADING = "If the property is served by a private sewage disposal system (septic tank, cesspool)"


@pytest.mark.parametrize("name", ["fort-plain", "poughkeepsie"])
def test_a_letter_asserts_a_private_system_only_where_the_parcels_layer_says_one(name, tmp_path):
    """Every connection letter said "Your private sewage disposal system" and quoted the duty to abandon and fill the
    septic tank (§ 144-5B) where the parcels layer has no private_system column and the profile merely assumes one
    (``notices.private_system_assumed``, § 144-5A): a fact the town does not know, asserted to the owner. Where the
    column says yes, the letter keeps its words; where nothing says it, it says if, and why the law presumes one."""
    town = town_settings(tmp_path, name)
    profile = load_profile(name)
    assumed_by = profile.notices.private_system_assumed.section
    duty = profile.notices.private_system_duty
    parcels = _layers()[0].assign(site_city="Fort Plain", site_zip="13339")
    said, assumed = _letters_planned(name, town, parcels.assign(private_system=["yes", None]))
    said_text, assumed_text = words(letter_text(said)), words(letter_text(assumed))
    village = "Village" if name == "fort-plain" else "Town"
    assert "Your private sewage disposal system" in said_text and ASSUMED_HEADING not in said_text
    assert "do not say" not in said_text
    assert "Your private sewage disposal system" not in assumed_text
    assert (
        f"{ASSUMED_HEADING} The {village}'s records do not say whether the property is served by a private sewage "
        f"disposal system; {assumed_by} required one where no public sewer was available. If it is, this section of "
        f"the law applies to it: {duty.section} provides:"
    ) in assumed_text
    for letter in (said, assumed):  # the law quoted word for word in both
        assert [b.text for b in letter.blocks if b.kind == "quote" and b.section == duty.section] == [f"“{duty.quote}”"]
    # A parcels layer without the column: every letter conditional, the occupant's copy too (it says no "Your").
    none_said = _letters_planned(name, town, parcels, occupant=True)
    texts = [words(letter_text(letter)) for letter in none_said]
    assert len(texts) == 4 and all(ASSUMED_HEADING in t and "private sewage disposal system" in t for t in texts)
    assert not [t for t in texts if "Your private sewage" in t or "The property's private sewage" in t]


def test_one_owners_letter_names_the_properties_the_records_say_nothing_of(tmp_path):
    """A letter covering several properties of one owner, the column saying yes of one and nothing of the other,
    says which is which."""
    town = town_settings(tmp_path)
    parcels = _layers()[0].assign(private_system=["Y", ""])
    (letter,) = _letters_planned("fort-plain", town, parcels, per_parcel=False)
    text = words(letter_text(letter))
    assert (
        "If a property is served by a private sewage disposal system (septic tank, cesspool) The Village's records "
        "say that parcel 12.1-1-1 is served by a private sewage disposal system; they do not say whether parcel "
        "12.1-1-2 is, and § 144-5A required one where no public sewer was available. This section of the law "
        "applies to each property that is: § 144-5B provides:"
    ) in text


@pytest.mark.parametrize("name", ["fort-plain", "poughkeepsie"])
def test_a_violation_letter_asserts_a_private_system_only_where_the_parcels_layer_says_one(name, tmp_path):
    """A notice of violation quoted the private system's duty (§ 144-5B: abandon and fill the septic tank) as violated,
    "as § 144-4 and § 144-5B require", where the parcels layer has no private_system column and the profile merely
    assumes one (``notices.private_system_assumed``, § 144-5A), to the owner and in the occupant's copy. Where the
    column says yes, the letter keeps its words; where nothing says it, it says if, as the connection letter does."""
    town = town_settings(tmp_path, name)
    profile = load_profile(name)
    law, duty = profile.notices.connection_duty, profile.notices.private_system_duty
    assumed_by = profile.notices.private_system_assumed.section
    overdue = _overdue(parcel_id=["12.1-1-1", "12.1-1-2"], site_address=["10 Main St", "12 Main St"])
    current = pd.DataFrame(
        {
            "parcel_id": ["12.1-1-1", "12.1-1-2"],
            "status": "mandated",
            "site_city": "Fort Plain",
            "site_state": "NY",
            "site_zip": "13339",
            "private_system": ["yes", None],  # the column says yes of one, nothing of the other
        }
    )

    def letters(current, per_parcel=True):
        plan = plan_violations(overdue, profile=profile, today=dt.date(2027, 6, 1), town=town, current=current)
        due = plan.due.assign(notice_id=["N-VIOLATION001", "N-VIOLATION002"])
        occupants = occupant_letters(due)[0]
        mailing = mailing_list(due, per_parcel=per_parcel, occupants=occupants if per_parcel else None)
        kept = compose_letters(
            mailing, due, profile=profile, town=town, kind="violation", notice_date=plan.notice_date, period=plan.period
        )
        return [words(letter_text(letter)) for letter in kept]

    cited = f"have not been connected to the public sewer as {law.section} and {duty.section} require."
    conditional = (
        f"as {law.section} requires. {ASSUMED_HEADING} The {'Village' if name == 'fort-plain' else 'Town'}'s records "
        f"do not say whether the property is served by a private sewage disposal system; {assumed_by} required one "
        f"where no public sewer was available. If it is, this section of the law applies to it: {duty.section} "
        f"provides: \u201c{words(duty.quote)}\u201d"
    )
    texts = letters(current)
    assert len(texts) == 4  # each parcel's owner letter and occupant's copy
    said = [t for t in texts if "12.1-1-1" in t]
    assumed = [t for t in texts if "12.1-1-2" in t]
    assert len(said) == len(assumed) == 2 and any("COPY FOR THE OCCUPANT" in t for t in assumed)
    for text in said:  # the column says yes: as before
        assert cited in text and f"{duty.section} provides: \u201c{words(duty.quote)}\u201d" in text
        assert ASSUMED_HEADING not in text and "do not say" not in text
    for text in assumed:
        assert conditional in text and cited not in text
    # No private_system column at all: every letter and copy says if.
    texts = letters(current.drop(columns="private_system"))
    assert len(texts) == 4 and all(conditional in t and cited not in t for t in texts)
    # One letter for the owner's two properties: which the records say it of, and which not.
    (both,) = letters(current, per_parcel=False)
    assert f"as {law.section} requires." in both and cited not in both
    assert (
        "If a property is served by a private sewage disposal system (septic tank, cesspool) The "
        f"{'Village' if name == 'fort-plain' else 'Town'}'s records say that parcel 12.1-1-1 is served by a private "
        "sewage disposal system; they do not say whether parcel 12.1-1-2 is, and "
        f"{assumed_by} required one where no public sewer was available. This section of the law applies to each "
        f"property that is: {duty.section} provides:"
    ) in both
