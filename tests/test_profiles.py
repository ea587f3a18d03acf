"""Ordinance profiles: loading, refusing malformed files, and quoting the law truthfully."""

from __future__ import annotations

import hashlib
import json
import re
import shutil

import pytest

from analysis.errors import ProfileError
from analysis.profiles import PROFILE_DIR, available_profiles, covering_tests, load_profile, rule_tests, values_set
from tests.conftest import DATA, REPO


def test_bundled_profiles():
    assert available_profiles() == ["fort-plain", "poughkeepsie", "wappinger"]
    fp, pk, wp = (load_profile(n) for n in available_profiles())
    assert (fp.mandate.distance_ft.value, fp.mandate.notice_period_days.value) == (100.0, 90)
    assert (pk.mandate.distance_ft.value, pk.mandate.notice_period_days.value) == (300.0, 30)
    assert pk.mandate.notice_reasons.value == ["public_health_hazard", "highway_improvement"]
    assert fp.mandate.distance_ft.section == "§ 144-4"
    assert pk.mandate.distance_ft.section == "§ 168-22.2G"
    # Wappinger states no distance: required configuration, no invented default.
    assert wp.mandate.distance_ft.value is None and wp.mandate.distance_ft.town_setting
    assert wp.mandate.requires_abutting_street.value is False
    assert all(p.measurement.measuring_crs.value == "EPSG:2260" for p in (fp, pk, wp))


def _spaces(text: str) -> str:
    """Whitespace collapsed to single spaces (line breaks, tabs and the non-breaking spaces of the published text)."""
    return " ".join(text.split())


@pytest.mark.parametrize("name", ["fort-plain", "poughkeepsie", "wappinger"])
def test_every_quote_is_an_exact_substring_of_the_ordinance(name):
    """Only whitespace is normalised: no case folding, no punctuation dropped, no "..." cuts, no rewritten terms."""
    profile = load_profile(name)
    law = _spaces((DATA / "ordinances" / profile.source_text).read_text(encoding="utf-8"))
    wrong = []
    for key, rule in profile.rules().items():
        assert rule.section.startswith("§ "), key
        assert rule.quote, f"{key} has no quote"
        if _spaces(rule.quote) not in law:
            wrong.append(f"{key}: {rule.quote!r}")
    assert wrong == [], f"{name}: quotes not in {profile.source_text}:\n" + "\n".join(wrong)


def test_the_quote_check_refuses_what_the_law_does_not_say(tmp_path):
    """The strict check itself: a changed letter, a "..." cut or a rewritten definition is not in the text."""
    law = _spaces((DATA / "ordinances" / load_profile("fort-plain").source_text).read_text(encoding="utf-8"))
    assert _spaces("PUBLIC SEWER\nA sewer in which all owners") in law
    for bad in (
        "PUBLIC SEWER: A sewer in which all owners",
        "public sewer\nA sewer in which all owners",
        "any street ... in which there is now located",
        "provided that said public sewer is within 100 feet of the property line",
    ):
        assert _spaces(bad) not in law, bad


def _printed(number: str, text: str) -> bool:
    """The section number stands in the text as itself: "§ 144-1" is not read out of "§ 144-18K"."""
    return re.search(rf"§§? {re.escape(number)}(?!\d|\.\d)", text) is not None


def test_cited_sections_appear_in_the_text_or_are_marked_derived():
    """A section number either stands in the ordinance text, or the profile says it was derived by counting."""
    assert not _printed("144-1", "pursuant to § 144-18K and") and _printed("144-18", "pursuant to § 144-18K and")
    for name in available_profiles():
        profile = load_profile(name)
        text = _spaces((DATA / "ordinances" / profile.source_text).read_text(encoding="utf-8"))
        for key, rule in profile.rules().items():
            number = re.match(r"§ (\d+-\d+(?:\.\d+)?)", rule.section).group(1)  # without the subsection letter
            assert _printed(number, text) or rule.derived, (
                f"{name} {key}: {rule.section} is neither in the text nor derived"
            )


def _copy(tmp_path, name="fort-plain"):
    path = tmp_path / f"{name}.toml"
    shutil.copy(PROFILE_DIR / f"{name}.toml", path)
    return path


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda t: t.replace("[sewers]", '[sewers]\ncount_storm = { value = true, section = "§ 1" }'),
            r"fort-plain.toml: .*\[sewers\] unknown key 'count_storm'",
        ),
        (lambda t: re.sub(r"\nnotice_period_days = .*", "", t), r"\[mandate\] missing key 'notice_period_days'"),
        (
            lambda t: t.replace("distance_ft = { value = 100.0", 'distance_ft = { value = "100"'),
            r"mandate.distance_ft: expected int/float, got '100'",
        ),
        (
            lambda t: t.replace(
                'distance_ft = { value = 100.0, section = "§ 144-4", ', "distance_ft = { value = 100.0, "
            ),
            r"mandate.distance_ft: missing key 'section'",
        ),
        (lambda t: t.replace("[measurement]", "[measurements]"), r"unknown table \[measurements\]"),
        (lambda t: t.replace('version = "2026-12-07.3"\n', ""), r"\[profile\] missing key 'version'"),
        (lambda t: t.replace("distance_ft = { value = 100.0", "distance_ft = { value = -1.0"), "must not be negative"),
        (lambda t: t.replace("distance_ft = { value = 100.0", "distance_ft = { value = nan"), "finite number"),
        (lambda t: t + "\n[[", "is not valid TOML"),
    ],
)
def test_malformed_profiles_name_file_and_key(tmp_path, edit, message):
    path = _copy(tmp_path)
    path.write_text(edit(path.read_text(encoding="utf-8")), encoding="utf-8")
    with pytest.raises(ProfileError, match=message):
        load_profile(path)


def test_all_problems_reported_at_once(tmp_path):
    path = _copy(tmp_path)
    text = path.read_text(encoding="utf-8").replace("[sewers]", "[sewers]\nbogus = 1")
    path.write_text(re.sub(r"\nnotice_period_days = .*", "", text), encoding="utf-8")
    with pytest.raises(ProfileError) as info:
        load_profile(path)
    assert "bogus" in str(info.value) and "notice_period_days" in str(info.value)


def test_unknown_profile_lists_the_bundled_ones():
    with pytest.raises(ProfileError, match="fort-plain, poughkeepsie, wappinger"):
        load_profile("albany")


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"mandate.distance": "5"},
            r"^mandate\.distance names no rule of the profile \(did you mean mandate\.distance_ft\?\)\.$",
        ),
        (
            {"paint.colour": "5"},
            r"^paint\.colour names no rule of the profile fort-plain\.$",
        ),
        ({"mandate.distance_ft": "far"}, r"^mandate\.distance_ft must be a number, not 'far'\.$"),
        ({"mandate.notice_period_days": "abc"}, r"^mandate\.notice_period_days must be a whole number, not 'abc'\.$"),
        ({"mandate.notice_period_days": "12.5"}, "must be a whole number, not '12.5'"),
        ({"sewers.count_private": "maybe"}, r"^sewers\.count_private must be true or false, not 'maybe'\.$"),
        ({"mandate.distance_ft": "nan"}, "must be a finite number"),
        ({"mandate.distance_ft": "inf"}, "must be a finite number"),
        ({"mandate.distance_ft": "-inf"}, "must be a finite number"),
        # "expected list, got '[...]'" said neither that a typed value cannot be one nor where to change it
        (
            {"mandate.notice_reasons": '["board_order"]'},
            r"^mandate\.notice_reasons is a list in the profile file, which a setting cannot give\.$",
        ),
        ({"design.cost_per_ft": "300"}, r"^design\.cost_per_ft is a table in the profile file, which a setting"),
    ],
)
def test_bad_overrides(overrides, message):
    with pytest.raises(ProfileError, match=message):
        load_profile("fort-plain", overrides=overrides)


@pytest.mark.parametrize(
    ("profile", "overrides", "message"),
    [
        (
            "fort-plain",
            {"mandate.notice_period_days": "100000000"},
            "mandate.notice_period_days (§ 144-4) must be from 1 to 3,650 days, not 100000000.",
        ),
        (
            "fort-plain",
            {"notices.correction_period_days": 0},
            "notices.correction_period_days (§ 144-40A) must be from 1 to 3,650 days, not 0.",
        ),
        (
            "fort-plain",
            {"mandate.distance_ft": "1e300"},
            "mandate.distance_ft (§ 144-4) must be from 0 to 5,280 ft, not 1e+300.",
        ),
        (
            "wappinger",
            {"mandate.distance_ft": "5280.5"},
            "mandate.distance_ft (§ 196-17E) must be from 0 to 5,280 ft, not 5280.5.",
        ),
        (
            "fort-plain",
            {"measurement.abut_tolerance_ft": "500"},
            "measurement.abut_tolerance_ft (§ 144-4) must be from 0 to 100 ft, not 500.",
        ),
    ],
)
def test_day_counts_and_distances_out_of_range_are_refused_naming_key_range_and_section(profile, overrides, message):
    """--set mandate.notice_period_days=100000000 was accepted, and the deadline then overflowed the calendar
    ("OverflowError: date value out of range") in the CLI and the web run alike. Refused where it is set."""
    with pytest.raises(ProfileError) as info:
        load_profile(profile, overrides=overrides)
    assert str(info.value) == message


def test_day_counts_and_distances_at_their_bounds_are_kept():
    profile = load_profile(
        "fort-plain",
        overrides={
            "mandate.notice_period_days": "3650",
            "mandate.distance_ft": "5280",
            "notices.correction_period_days": "1",
        },
    )
    assert (profile.mandate.notice_period_days.value, profile.mandate.distance_ft.value) == (3650, 5280.0)


def test_a_profile_file_with_a_period_out_of_range_names_file_key_range_and_section(tmp_path):
    path = _copy(tmp_path)
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("notice_period_days = { value = 90", "notice_period_days = { value = 100000000"))
    with pytest.raises(ProfileError, match=r"fort-plain\.toml: mandate\.notice_period_days \(§ 144-4\) must be from 1"):
        load_profile(path)


def test_override_is_marked_in_the_citation():
    rule = load_profile("wappinger", overrides={"mandate.distance_ft": "200"}).mandate.distance_ft
    assert rule.value == 200.0 and rule.citation == "§ 196-17E (value set by the user)"


@pytest.mark.parametrize(
    ("name", "key", "value"),
    [
        ("fort-plain", "mandate.distance_ft", "100"),  # § 144-4's 100 ft, typed as a whole number
        ("fort-plain", "mandate.distance_ft", "100.0"),
        ("fort-plain", "mandate.distance_ft", 100),  # a manifest's number: 100 is 100.0
        ("fort-plain", "mandate.notice_period_days", "90"),
        ("fort-plain", "mandate.requires_occupied_building", "TRUE"),
        ("poughkeepsie", "mandate.requires_abutting_street", True),
        ("wappinger", "mandate.requires_abutting_street", "false"),
        ("fort-plain", "measurement.distance_tolerance_ft", "0.01"),  # a setting the profile reads, not the law
        ("fort-plain", "discharges.food_service_classes", ["42"]),
    ],
)
def test_a_value_set_to_the_profiles_own_is_not_marked_set(name, key, value):
    """--set mandate.distance_ft=100 under Fort Plain, where § 144-4 says 100 ft, marked the rule set: the section
    read "§ 144-4 (value set by the user)" and the reason "the distance set for this run (§ 144-4 sets 100 ft)",
    which told a board the run departed from the law where it had not. The profile's own value is not set."""
    own = load_profile(name).rules()[key]
    rule = load_profile(name, overrides={key: value}).rules()[key]
    assert rule == own and not rule.overridden and "value set by the user" not in rule.citation


@pytest.mark.parametrize(
    ("key", "value", "law_value"),
    [
        ("mandate.distance_ft", "100.5", 100.0),
        ("mandate.requires_occupied_building", "false", True),
        ("mandate.notice_period_days", "89", 90),
    ],
)
def test_a_value_other_than_the_profiles_own_is_marked_set(key, value, law_value):
    rule = load_profile("fort-plain", overrides={key: value}).rules()[key]
    assert rule.overridden and rule.law_value == law_value and rule.citation.endswith("(value set by the user)")


def test_a_period_left_to_the_town_set_to_the_profiles_reading_is_still_weighed_against_the_towns_resolution():
    """Fort Plain leaves the days to correct to the village (§ 144-40A, a setting the profile reads as 30 days). 30
    days set for the run beside a resolution of 45 is the user's value, not the profile's silently replaced by the
    act: it is refused as 29 or 31 would be, not dropped."""
    from analysis.errors import AnalysisError
    from analysis.notices import Resolution, TownSettings, with_resolutions

    set_30 = load_profile("fort-plain", overrides={"notices.correction_period_days": "30"})
    assert set_30.notices.correction_period_days.overridden
    town = TownSettings(resolutions={"notices.correction_period_days": Resolution(45, "Resolution 4 of 2027")})
    with pytest.raises(AnalysisError, match=r"was set to 30 days for this run, but the town settings' resolution"):
        with_resolutions(set_30, town)
    assert with_resolutions(load_profile("fort-plain"), town).notices.correction_period_days.value == 45


def test_profile_as_dict_has_every_rule_with_section():
    data = load_profile("poughkeepsie").as_dict()
    assert data["id"] == "poughkeepsie"
    assert data["rules"]["mandate.distance_ft"]["section"] == "§ 168-22.2G"
    assert all("section" in r for r in data["rules"].values())


def _test_sources() -> dict[str, dict[str, str]]:
    """Each test file's module-level test functions and their source, decorators included."""
    import ast

    out: dict[str, dict[str, str]] = {}
    for path in sorted((REPO / "tests").glob("test_*.py")):
        text = path.read_text(encoding="utf-8")
        lines = text.split("\n")
        funcs = {}
        for node in ast.parse(text).body:
            if isinstance(node, ast.FunctionDef):
                start = min([d.lineno for d in node.decorator_list] + [node.lineno])
                funcs[node.name] = "\n".join(lines[start - 1 : node.end_lineno])
        out[f"tests/{path.name}"] = {"__file__": text, **funcs}
    return out


def test_every_rule_of_every_profile_has_a_covering_test():
    """analysis/rule_tests.toml names, for every rule, tests that exist and that name the rule."""
    table = rule_tests()
    sources = _test_sources()
    known = set()
    problems = []
    for name in available_profiles():
        profile = load_profile(name)
        for key in profile.rules():
            known.add(key)
            tests = covering_tests(profile, key, table)
            if not tests:
                problems.append(f"{name} {key}: no test in analysis/rule_tests.toml")
                continue
            field_name = key.split(".")[1]
            names_it = False
            for test in tests:
                m = re.fullmatch(r"(tests/test_\w+\.py)::(\w+)(?:\[([^\]]+)\])?", test)
                if m is None or m.group(1) not in sources or m.group(2) not in sources[m.group(1)]:
                    problems.append(f"{name} {key}: {test} does not exist")
                    continue
                if m.group(3) is not None:
                    if f'"{m.group(3)}"' not in sources[m.group(1)]["__file__"]:
                        problems.append(f"{name} {key}: {test} has no case {m.group(3)!r}")
                        continue
                    names_it |= m.group(3) == key
                names_it |= re.search(rf"\b{field_name}\b", sources[m.group(1)][m.group(2)]) is not None
            if not names_it:
                problems.append(f"{name} {key}: none of {tests} names the rule")
    stale = [k for k in table if k.rpartition(":")[2] not in known]
    assert problems == [] and stale == [], "\n".join(problems + [f"{k}: no such rule" for k in stale])


def test_the_coverage_check_catches_a_missing_or_wrong_test():
    table = rule_tests()
    fp = load_profile("fort-plain")
    assert covering_tests(fp, "mandate.distance_ft", table)
    assert covering_tests(
        fp, "mandate.distance_ft", {"fort-plain:mandate.distance_ft": ["x"], "mandate.distance_ft": []}
    )
    assert (
        covering_tests(fp, "mandate.distance_ft", {k: v for k, v in table.items() if k != "mandate.distance_ft"}) == []
    )
    # A test that does not name the rule does not cover it.
    sources = _test_sources()
    assert not re.search(r"\bunits_per_lateral\b", sources["tests/test_profiles.py"]["test_bundled_profiles"])


def test_profiles_show_rules_prints_kind_section_quote_and_tests():
    from click.testing import CliRunner

    from gisapp.cli import main

    doc = json.loads(CliRunner().invoke(main, ["profiles", "show", "wappinger", "--rules", "--json"]).output)
    rules = doc["rules"]
    assert rules["mandate.distance_ft"]["kind"] == "municipality"
    assert rules["buildings.building_sewer_min_slope_in_per_ft"] | {"tests": None} == {
        "value": 0.25,
        "section": "§ 196-18F",
        "quote": "with a slope of no less than 1/4 inch per foot",
        "note": rules["buildings.building_sewer_min_slope_in_per_ft"]["note"],
        "kind": "law",
        "tests": None,
    }
    assert rules["discharges.food_service_classes"]["kind"] == "setting"
    assert all(r["tests"] for r in rules.values())
    assert (
        "tests/test_buildings.py::test_building_sewer_size_and_slope"
        in rules["buildings.building_sewer_min_slope_in_per_ft"]["tests"]
    )
    plain = json.loads(CliRunner().invoke(main, ["profiles", "show", "wappinger", "--json"]).output)
    assert "kind" not in plain["rules"]["mandate.distance_ft"]
    wide = CliRunner(env={"COLUMNS": "1000"})
    text = " ".join(wide.invoke(main, ["profiles", "show", "fort-plain", "--rules"]).output.split())
    assert "left to the municipality" in text and "setting (the profile's reading)" in text
    assert "tests/test_buildings.py::test_building_sewer_size_and_slope" in text
    assert "NONE" not in text


@pytest.mark.parametrize("name", ["fort-plain", "poughkeepsie", "wappinger"])
def test_docs_list_every_rule_of_each_town_and_which_are_settings(name):
    from analysis.profiles import rules_markdown

    docs = (REPO / "docs" / "analysis.md").read_text(encoding="utf-8")
    table = rules_markdown(load_profile(name))
    assert table in docs, (
        f"docs/analysis.md does not list the rules of {name} as the profile holds them; replace its table with "
        f"analysis.profiles.rules_markdown(load_profile({name!r})):\n{table}"
    )
    assert "| law |" in table and "| setting |" in table


@pytest.mark.parametrize(
    ("settings", "changed"),
    [
        ({"mandate.distance_ft": "100"}, {}),  # the profile's own value, typed: not set
        ({"mandate.distance_ft": "100.0", "mandate.notice_period_days": "90"}, {}),
        ({"mandate.requires_abutting_street": "TRUE"}, {}),
        ({"mandate.distance_ft": 250}, {"mandate.distance_ft": 250.0}),  # a manifest's number, not text
        ({"mandate.requires_abutting_street": "false"}, {"mandate.requires_abutting_street": False}),
        ({"mandate.notice_period_days": "60"}, {"mandate.notice_period_days": 60}),
        ({"mandate.notice_period_days": "sixty"}, {"mandate.notice_period_days": "sixty"}),  # unreadable: as given
        ({"mandate.no_such_rule": "1"}, {"mandate.no_such_rule": "1"}),
    ],
)
def test_values_set_are_read_as_the_profile_reads_them(settings, changed):
    """Two runs are told apart by the values they set that change the profile, not by how they were typed."""
    assert values_set(load_profile("fort-plain"), settings) == changed


# Each bundled profile's version and a digest of everything else in it. A changed rule, quote, note or header
# field changes the digest: give the profile a new version (the day of the change) and pin both here.
PINNED_VERSIONS = {
    "fort-plain": ("2026-12-07.3", "b1af9c5fdfac107d"),
    "poughkeepsie": ("2026-12-07.3", "195fcd11e9eb71ac"),
    "wappinger": ("2026-12-07.3", "ab46f278c2e85643"),
}


def _rules_digest(profile) -> str:
    body = profile.as_dict()
    body.pop("version")
    text = json.dumps(body, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@pytest.mark.parametrize("name", sorted(PINNED_VERSIONS))
def test_a_changed_profile_has_a_new_version(name):
    """Runs, batches and notices record the profile's version: rules changed under an old version would make results
    of two different rule sets look alike (the bundled profiles kept 2026-11-30 through a week of changes)."""
    profile = load_profile(name)
    version, digest = PINNED_VERSIONS[name]
    found = (profile.version, _rules_digest(profile))
    assert found == (version, digest), (
        f"{name}: pinned {version} {digest}, found {found[0]} {found[1]}. A rule changed: set the profile's version "
        f"to the day of the change and pin the new version and digest in PINNED_VERSIONS."
    )


def test_the_version_pin_sees_a_changed_note(tmp_path):
    """The digest covers notes and quotes too, not only values: a copy with one note reworded differs."""
    text = (PROFILE_DIR / "fort-plain.toml").read_text(encoding="utf-8")
    changed = tmp_path / "fort-plain.toml"
    changed.write_text(text.replace("The law sets no precondition", "The law sets no condition", 1), encoding="utf-8")
    assert _rules_digest(load_profile(changed)) != _rules_digest(load_profile("fort-plain"))
