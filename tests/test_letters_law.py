"""The connection and violation letters read beside the three laws: what each says of the period and when it starts,
more time, the private system, and the permits and licences required before connecting.

Each test names the section it holds the letter to. Letters are composed (``analysis.notices.compose_letters``) and
read as plain words; ``tests/test_letters.py`` checks the PDF prints exactly those words.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from analysis.errors import ProfileError
from analysis.notices import compose_letters, letter_text, mailing_list, period, plan_notices, plan_violations
from analysis.profiles import PROFILE_DIR, load_profile
from tests.test_letters import (
    DAY,
    GOLDEN,
    LETTERHEADS,
    TOWNS,
    _composed,
    _overdue,
    ordinance,
    quotes,
    town_settings,
    words,
)

NAMES = ["fort-plain", "poughkeepsie", "wappinger"]
TODAY = dt.date(2027, 6, 1)  # the day violations are given: the connection deadline (May 30, 2027) has passed


def _violation_text(name: str, tmp_path) -> tuple[str, object]:
    """The one violation letter for an overdue notice, given on TODAY under ``name``'s own town settings."""
    town = town_settings(tmp_path, name)
    profile = load_profile(name)
    plan = plan_violations(_overdue(owner_name=["SMITH JOHN"]), profile=profile, today=TODAY, town=town)
    due = plan.due.assign(notice_id="N-VIOLATION001")
    (letter,) = compose_letters(
        mailing_list(due), due, profile=profile, town=town, kind="violation", notice_date=TODAY, period=plan.period
    )
    return words(letter_text(letter)), plan


def _connection_text(name: str, tmp_path) -> str:
    letter, _, _ = _composed(name, town_settings(tmp_path, name))
    return words(letter_text(letter))


# Item 1: Wappinger § 196-17E sets no period ------------------------------------------------------------------------


def test_wappinger_letter_does_not_say_the_towns_period_is_set_under_196_17e(tmp_path):
    """§ 196-17E: "a direct connection shall be made to the public sewer" "at such time as a public sewer becomes
    available". It sets no period and delegates none; the letter said the Town Board's resolution set the period
    "under § 196-17E", a power the section does not give. Fort Plain § 144-40A ("a reasonable time limit") does leave
    its period to the village, and its letters still cite the resolution as made under it."""
    text = _connection_text("wappinger", tmp_path)
    assert "under § 196-17E" not in text
    assert (
        "This letter, dated March 1, 2027, gives you notice of that requirement. § 196-17E sets no period for making "
        "the connection: Resolution 9 of 2027 of the Town Board sets it, and under it you are required to connect by "
        "April 30, 2027, 60 days after the date of this notice."
    ) in text
    wp, fp = load_profile("wappinger"), load_profile("fort-plain")
    town = town_settings(tmp_path, "wappinger")
    assert period(wp, "mandate.notice_period_days", town).basis == (
        "Resolution 9 of 2027 of the Town Board; § 196-17E sets no period"
    )
    village = town_settings(tmp_path, "fort-plain")
    assert period(fp, "notices.correction_period_days", village).basis == (
        "Resolution 4 of 2027 of the Board of Trustees, under § 144-40A"
    )


def test_a_period_the_law_does_not_set_is_not_credited_to_its_section(tmp_path):
    """Wappinger § 196-17E sets no period. A preview with 60 days set for the run and no resolution said "Deadline
    2027-02-13: 60 days (§ 196-17E)", and a notice served in person was told "§ 196-17E counts its days from the
    date of the notice" (a tester). Fort Plain's § 144-4 does set its 90 days, and keeps its wording."""
    from analysis.notices import deadline_after_service, service_rule

    wp = load_profile("wappinger", overrides={"mandate.notice_period_days": 60})
    assert period(wp, "mandate.notice_period_days").basis == "no resolution of the town yet; § 196-17E sets no period"
    assert period(load_profile("fort-plain"), "mandate.notice_period_days").basis == "§ 144-4"
    day = dt.date(2027, 5, 1)
    june = dict(notice_date=dt.date(2027, 3, 1), letter_deadline=day, status="open", served_on=dt.date(2027, 3, 9))
    _, said = deadline_after_service(service_rule("wappinger", "connection"), deadline=day, **june)
    assert said == (
        "§ 196-17E sets no period; the town's, as the letter states it, runs from the date of the notice, not from its "
        "service: the deadline stays 2027-05-01."
    )
    _, said = deadline_after_service(service_rule("fort-plain", "connection"), deadline=day, **june)
    assert said.startswith("§ 144-4 counts its days from the date of the notice, not from its service")


def test_a_distance_and_period_the_law_sets_replaced_for_a_run_are_not_credited_to_its_section(tmp_path):
    """With --set mandate.notice_period_days=60 under Fort Plain, the preview said "Deadline ...: 60 days (§ 144-4)" and
    the letter quoted § 144-4's 90 days, then required the connection in 60 with no word that the 60 were not the
    law's; at --set mandate.distance_ft=150 it quoted "within 100 feet" beside a demand on a lot further off. Both now
    say the value was set for these notices, and what the section sets."""
    town = town_settings(tmp_path, "fort-plain")
    overrides = {"mandate.notice_period_days": "60", "mandate.distance_ft": "150"}
    profile = load_profile("fort-plain", overrides=overrides)
    assert period(profile, "mandate.notice_period_days", town).basis == (
        "the period set for this run; § 144-4 sets 90 days"
    )
    letter, _, _ = _composed("fort-plain", town, overrides=overrides)
    text = words(letter_text(letter))
    assert (
        "You are required to connect by April 30, 2027, 60 days after the date of this notice (the period set for "
        "these notices; § 144-4 sets 90 days). This notice is given to properties within 150 feet of a public sewer, "
        "the distance set for these notices (§ 144-4 sets 100 feet)."
    ) in text
    plain = _connection_text("fort-plain", tmp_path)
    assert "set for these notices" not in plain


def test_a_period_set_for_a_run_beside_the_towns_resolution_is_refused_not_dropped(tmp_path):
    """`notices preview --set mandate.notice_period_days=45` beside a resolution of 60 days printed "Deadline ...: 60
    days (Resolution 9 ...)" with no word that the 45 was dropped (a tester). The same value is no conflict."""
    from analysis.errors import AnalysisError
    from analysis.notices import with_resolutions

    town = town_settings(tmp_path, "wappinger")  # Resolution 9 of 2027: 60 days
    set_45 = load_profile("wappinger", overrides={"mandate.notice_period_days": 45})
    for step in (lambda: with_resolutions(set_45, town), lambda: period(set_45, "mandate.notice_period_days", town)):
        with pytest.raises(AnalysisError, match=r"was set to 45 days for this run, but the town settings' resolution"):
            step()
    set_60 = load_profile("wappinger", overrides={"mandate.notice_period_days": 60})
    assert period(with_resolutions(set_60, town), "mandate.notice_period_days", town).days == 60


def test_a_wappinger_run_takes_its_deadlines_from_the_towns_resolution_beside_the_store(town_copy):
    """§ 196-17E leaves the period to the town. `analyze` read no town settings: beside a resolution of 60 days it
    computed no deadline, and with 45 days set for the run it wrote 45-day deadlines that the notices then refused
    beside the resolution (a tester). The run now counts the resolution's days and cites it, and refuses 45."""
    import sqlite3

    from tests.conftest import Runner

    Path(town_settings(town_copy.parent, "wappinger").source).rename(town_copy.parent / "town.toml")  # 60 days
    run = ("analyze", "--data", town_copy, "--out", town_copy, "--profile", "wappinger", "--notice-date", "2027-03-01")
    done = Runner().invoke(*run, "--set", "mandate.distance_ft=200", ok=True)
    said = " ".join(done.stdout.split())
    assert "deadline 60 days after it (Resolution 9 of 2027 of the Town Board; § 196-17E sets no period)." in said
    with sqlite3.connect(town_copy) as db:
        deadlines = dict(db.execute("SELECT status, group_concat(DISTINCT deadline) FROM parcel_results GROUP BY 1"))
        reasons = {r for (r,) in db.execute("SELECT reason FROM parcel_results WHERE deadline IS NOT NULL")}
    assert deadlines["mandated"] == "2027-04-30"  # March 1 and 60 days
    # each parcel's reason cites the resolution for its 60 days, as the summary and the letters do (a tester: it
    # read "§ 196-17E ... requires ... to connect within 60 days of official notice")
    # ("official notice" is not § 196-17E's: "the notice", as the letters say; a tester)
    said = "within 60 days of the notice (Resolution 9 of 2027 of the Town Board; § 196-17E sets no period)"
    assert reasons and all(said in r for r in reasons)

    refused = Runner().invoke(*run, "--set", "mandate.distance_ft=200", "--set", "mandate.notice_period_days=45")
    assert refused.exit_code != 0
    assert "was set to 45 days for this run, but the town settings' resolution" in refused.output
    with sqlite3.connect(town_copy) as db:  # the run before it stands
        assert {d for (d,) in db.execute("SELECT DISTINCT deadline FROM parcel_results")} == {None, "2027-04-30"}


# Item 3: when the clock starts ---------------------------------------------------------------------------------


def test_wappinger_10_days_run_from_service_so_the_date_allows_for_the_mail(tmp_path):
    """§ 196-22A: the person "shall be served by the Town with written notice ... and shall have 10 days". The letter
    printed, and the register recorded, 10 days after the letter's own date: a notice delivered by certified mail on
    its fourth day left 6. The period now runs from service, the profile allowing 5 days for the mail (a setting), and
    the letter says so; the register's deadline (the plan's) is the date the letter prints."""
    rule = load_profile("wappinger").notices.correction_period_days
    assert (rule.counted_from, rule.mail_days, rule.value) == ("service", 5, 10)
    text, plan = _violation_text("wappinger", tmp_path)
    assert plan.deadline == dt.date(2027, 6, 16) and set(plan.due["deadline"]) == {dt.date(2027, 6, 16)}
    assert (
        "You must correct the violation by June 16, 2027, 10 days from the service of this notice, allowing 5 days "
        "for the mail to deliver it (§ 196-22A)."
    ) in text
    assert "10 days after the date of this notice" not in text


@pytest.mark.parametrize("name", NAMES)
def test_connection_periods_run_from_the_date_of_the_notice_as_the_law_says(name, tmp_path):
    """§ 144-4 and § 168-22.2G: "within 90 (30) days after the date of official notice": from the notice's date,
    which the letter prints, as it says. Wappinger's period is the Town's resolution, read the same way (a setting,
    said in the profile); Fort Plain § 144-40A and Poughkeepsie § 168-22.9A have the notice state its own limit."""
    profile = load_profile(name)
    for key in ("mandate.notice_period_days", "notices.correction_period_days"):
        section, rule_name = key.split(".")
        rule = getattr(getattr(profile, section), rule_name)
        expected = "service" if (name, key) == ("wappinger", "notices.correction_period_days") else "notice"
        assert rule.counted_from == expected, key
        assert ("after the date of official notice" in rule.quote) == (
            key.startswith("mandate") and name != "wappinger"
        )
    text = _connection_text(name, tmp_path)
    days = {"fort-plain": 90, "poughkeepsie": 30, "wappinger": 60}[name]
    assert f"{days} days after the date of this notice" in text


def test_a_period_counted_from_service_is_checked_when_the_profile_is_read(tmp_path):
    """A misspelt start, or days for the mail on a period counted from the notice, is refused by name."""
    source = (PROFILE_DIR / "wappinger.toml").read_text(encoding="utf-8")
    bad = tmp_path / "wappinger-bad.toml"
    bad.write_text(source.replace('counted_from = "service", mail_days = 5', 'counted_from = "receipt", mail_days = 5'))
    with pytest.raises(ProfileError, match="counted_from must be one of notice, service, got 'receipt'"):
        load_profile(bad)
    bad.write_text(source.replace('counted_from = "service", mail_days = 5', 'counted_from = "notice", mail_days = 5'))
    with pytest.raises(ProfileError, match="mail_days is for a period counted from service"):
        load_profile(bad)


# Item 4: more time --------------------------------------------------------------------------------------------


def test_a_wappinger_violation_letter_offers_no_more_time_than_196_22a_gives(tmp_path):
    """§ 196-22A gives 10 days and provides for no extension; the violation letter invited the owner "to ask the Town
    for more time". It now offers the objection only and says the 10 days are the section's. Fort Plain's time limit
    is the village's own resolution (§ 144-40A), which the village may change: its letter still offers more time."""
    text, _ = _violation_text("wappinger", tmp_path)
    assert "more time" not in text
    assert "An objection If you believe this notice is wrong" in text
    assert "The 10 days to correct the violation are set by § 196-22A, which provides for no extension." in text
    village, _ = _violation_text("fort-plain", tmp_path)
    assert "To ask the Village for more time" in village
    # The town's own words on asking for more time are for the periods the town sets, not the law's 10 days.
    asked = dataclasses.replace(town_settings(tmp_path, "wappinger"), requests="Ask the clerk for more time.")
    profile = load_profile("wappinger")
    plan = plan_violations(_overdue(owner_name=["SMITH JOHN"]), profile=profile, today=TODAY, town=asked)
    due = plan.due.assign(notice_id="N-VIOLATION001")
    (letter,) = compose_letters(
        mailing_list(due), due, profile=profile, town=asked, kind="violation", notice_date=TODAY, period=plan.period
    )
    assert "more time" not in words(letter_text(letter))


def test_a_wappinger_connection_letter_says_what_follows_the_deadline(tmp_path):
    """What the law gives after the Town's deadline is not omitted: a written notice of violation and its 10 days
    (§ 196-22A) before any fine (§ 196-22B), on conviction. The Town's own period may be extended on request."""
    text = _connection_text("wappinger", tmp_path)
    assert "beyond the 10 days a written notice of violation served under § 196-22A gives to correct it" in text
    assert "To ask the Town for more time" in text


# Item 5: Poughkeepsie has no abandonment clause ----------------------------------------------------------------


@pytest.mark.parametrize("kind", ["connection", "violation"])
def test_no_poughkeepsie_letter_requires_the_private_system_to_be_abandoned(kind, tmp_path):
    """The article has no clause requiring a private system to be abandoned or filled (§ 168-22.3C requires only the
    connection); no letter, connection or violation, puts one in its mouth. Fort Plain § 144-5B and Wappinger
    § 196-17E do require it, and their connection letters quote it."""
    law = ordinance(load_profile("poughkeepsie"))
    assert "abandon" not in law.lower()
    text = (
        _connection_text("poughkeepsie", tmp_path)
        if kind == "connection"
        else _violation_text("poughkeepsie", tmp_path)[0]
    )
    assert "abandon" not in text.lower()
    for name in ("fort-plain", "wappinger"):
        assert "shall be abandoned and filled with suitable material" in _connection_text(name, tmp_path)


# Item 6: permits and licences ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_each_letter_quotes_the_permits_and_licence_its_law_requires_before_connecting(name, tmp_path):
    """Fort Plain § 144-46A requires a licence from the Village Clerk of everyone but the owner who does the work, and
    § 144-38 a contractor's certificate of insurance before a permit; Poughkeepsie § 168-22.4B(3), no work before the
    Plumbing Inspector's permit, and § 168-22.4G, road-opening permits first; Wappinger § 196-18B(2), the permit
    application, and § 196-18K, road opening permits before any excavation. The letters quoted the permit alone. Each
    passage is the law's own words, under "Permit and fees"."""
    profile = load_profile(name)
    also = profile.notices.permit.also
    assert also
    law = ordinance(profile)
    text = _connection_text(name, tmp_path)
    permits = text.split("Permit and fees", 1)[1].split("Inspection and connection", 1)[0]
    for passage in also:
        assert words(passage.quote) in law, passage.section
        assert f"{passage.section} provides: \u201c{words(passage.quote)}\u201d" in permits, passage.section
    licence = "license issued by the Village Clerk" in permits
    assert licence == (name == "fort-plain")  # the only one of the three that requires a licence


# Item 7: letterheads ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_each_golden_letter_has_its_own_municipalitys_letterhead(name):
    """The golden Poughkeepsie and Wappinger letters were headed "Montgomery County, New York" with Fort Plain's
    return address, under a Fort Plain resolution: a test of what a town's letter says must use that town's head."""
    text = (GOLDEN / f"letter-{name}.txt").read_text(encoding="utf-8")
    county, clerk, city, _ = LETTERHEADS[name]
    head = text.split(" March 1, 2027 ", 1)[0]
    assert head.startswith(TOWNS[name]) and county in head and f"{clerk} / " in head and city in head
    others = {c for n, (c, _, _, _) in LETTERHEADS.items() if c != county} | {
        c for n, (_, _, c, _) in LETTERHEADS.items() if n != name
    }
    assert not any(other in text for other in others), others
    assert not re.search(r"Board of Trustees", text) or name == "fort-plain"


def test_each_connection_plan_deadline_is_the_date_its_letter_prints(tmp_path):
    """The register's deadline (the plan's) and the letter's date are one computation (``Period.ends``)."""
    results = pd.DataFrame(
        {"parcel_id": ["A"], "status": ["mandated"], "owner_name": ["ROE ANN"], "mail_address": ["1 Main St"]}
        | {"mail_city": ["Fort Plain"], "mail_state": ["NY"], "mail_zip": ["13339"], "site_address": ["1 Main St"]}
    )
    for name in NAMES:
        town = town_settings(tmp_path, name)
        profile = load_profile(name)
        reason = "public_health_hazard" if name == "poughkeepsie" else None
        hazard = "sewage on the lawn" if reason else None
        plan = plan_notices(results, profile=profile, notice_date=DAY, town=town, notice_reason=reason, hazard=hazard)
        due = plan.due.assign(notice_id="N-1")
        (letter,) = compose_letters(
            mailing_list(due), due, profile=profile, town=town, kind="connection", notice_date=DAY, period=plan.period
        )
        assert f"connect by {plan.deadline:%B} {plan.deadline.day}, 2027" in words(letter_text(letter)), name
        assert all(q in ordinance(profile) for q in quotes(words(letter_text(letter))))


def test_wappinger_cites_the_subsection_each_permit_sentence_is_in(tmp_path):
    """Wappinger letters cited "§ 196-18B" twice, with two different quotes, as if B said each; B is "There shall
    be two classes of building sewer permits: (1) For residential and commercial service; and (2) For service to
    establishments producing industrial wastes. In either case, ..." and both sentences quoted are in (2), as
    published. Each is cited as § 196-18B(2)."""
    law = ordinance(load_profile("wappinger"))
    b = law.split("B. There shall be two classes of building sewer permits:", 1)[1].split(" C. ", 1)[0]
    second = b.split("(2)", 1)[1]
    text = _connection_text("wappinger", tmp_path)
    for quote in (
        "In either case, the owner or his agent shall make application on a special form furnished by the town.",
        "A permit and inspection fee as set from time to time by resolution of the Town Board for a residential or "
        "commercial building sewer permit shall be paid to the Town at the time the application is filed.",
    ):
        assert quote in second
        assert f"§ 196-18B(2) provides: \u201c{quote}\u201d" in text
    assert "§ 196-18B provides" not in text


def test_a_malformed_also_passage_is_refused_when_the_profile_is_read(tmp_path):
    """An ``also`` passage without its section, or with a key of its own, is refused by name, as a rule would be."""
    source = (PROFILE_DIR / "wappinger.toml").read_text(encoding="utf-8")
    bad = tmp_path / "wappinger-bad.toml"
    bad.write_text(source.replace('also = [{ section = "§ 196-18B(2)", ', "also = [{ page = 3, "), encoding="utf-8")
    with pytest.raises(ProfileError, match=r"notices.permit: also: unknown key 'page'"):
        load_profile(bad)
    bad.write_text(source.replace('also = [{ section = "§ 196-18B(2)", ', "also = [{ "), encoding="utf-8")
    with pytest.raises(ProfileError, match=r"notices.permit: also must be a list of tables like"):
        load_profile(bad)


def test_analyze_says_when_its_deadline_falls_on_a_weekend(town_copy):
    """`analyze --notice-date 2027-03-01` printed "deadline 90 days after it" and wrote 2027-05-30, a Sunday, into
    the results with no word, where `notices preview` flags it (a tester)."""
    from tests.conftest import Runner

    run = ("analyze", "--data", town_copy, "--profile", "fort-plain", "--notice-date")
    sunday = " ".join(Runner().invoke(*run, "2027-03-01", ok=True).stdout.split())
    assert "The deadline 2027-05-30 falls on a Sunday: the town decides whether to give a later date" in sunday
    tuesday = " ".join(Runner().invoke(*run, "2027-03-03", ok=True).stdout.split())
    assert "falls on a" not in tuesday
    # --json carries it too, with the run's other warnings (it carried neither; a tester)
    doc = Runner().json(*run, "2027-03-01")
    assert any(w.startswith("The deadline 2027-05-30 falls on a Sunday") for w in doc["warnings"])
    assert Runner().json(*run, "2027-03-03")["warnings"] == []


def test_wappinger_without_a_resolution_is_told_to_add_one_not_to_set_days():
    """With no resolution, issuing was told "Use --set mandate.notice_period_days=N", which only led to a second
    refusal asking for the resolution (a tester). It names the resolution the letters need."""
    from analysis.errors import AnalysisError

    results = pd.DataFrame(
        {
            "parcel_id": ["A"],
            "status": ["mandated"],
            "owner_name": ["Ann"],
            "mail_address": ["1 Main"],
            "mail_city": ["X"],
        }
    )
    with pytest.raises(AnalysisError) as refused:
        plan_notices(results, profile=load_profile("wappinger"), notice_date=DAY)
    assert 'add the town\'s resolution to the town settings file: [resolutions] "mandate.notice_period_days"' in (
        str(refused.value).lower()
    )
    assert refused.value.fix is None


def test_a_violation_letter_cites_the_section_its_notice_was_given_under_and_names_the_hazard(tmp_path, monkeypatch):
    """A Poughkeepsie property on a private system noticed "to eliminate a public health hazard" (§ 168-22.3C, the
    hazard named) got a violation letter citing § 168-22.2G alone in "The nature of the violation", and no hazard (a
    tester). It quotes § 168-22.3C too (citing both where the private_system column says the property is on a private
    system, else saying if, as the connection letter does), and names the hazard as the connection notice did."""
    from pypdf import PdfReader

    from layers.sample import sample_town
    from layers.write import write_layers
    from tests.conftest import Runner, town_toml

    store = tmp_path / "town.gpkg"
    write_layers(str(store), sample_town(50))
    (tmp_path / "town.toml").write_text(town_toml("Town of Poughkeepsie"), encoding="utf-8")
    hazard = "a failing septic system reported by the County Health Department"
    issue = ["notices", "issue", "--profile", "poughkeepsie", "--data", store, "--notice-date", "2027-03-01"]
    issue += ["--notice-reason", "public_health_hazard", "--hazard", hazard, "--out", tmp_path / "out", "--new"]
    first = json.loads(Runner().invoke(*issue, "--json", ok=True).stdout)
    assert first["issued"] > 0
    connection = " ".join(PdfReader(first["letters"][0]).pages[0].extract_text().split())
    assert "§ 168-22.3C" in connection and hazard in connection  # what the notice was given under
    Runner().invoke("analyze", "--profile", "poughkeepsie", "--data", store, "--out", store, ok=True)
    monkeypatch.setenv("SEWERPLAN_TODAY", "2027-04-05")
    args = ["notices", "violations", "--profile", "poughkeepsie", "--store", store, "--out", tmp_path / "viol"]
    viol = json.loads(Runner().invoke(*args, "--json", ok=True).stdout)
    assert viol["issued"] == first["issued"]
    for letter in viol["letters"][:3]:
        text = " ".join(" ".join(p.extract_text() for p in PdfReader(letter).pages).split())
        assert f"to eliminate a public health hazard ({hazard}), required the owner" in text
        assert "§ 168-22.3C provides:" in text
        # The sample town's parcels have no private_system column: § 168-22.3C is quoted as the law for a property
        # that is on a private system (§ 168-22.3A's reading), not cited as violated by one the Town knows nothing of.
        assert "have not been connected to the public sewer as § 168-22.2G requires." in text
        assert "If the property is served by a private sewage disposal system (septic tank, cesspool)" in text
