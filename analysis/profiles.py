"""Ordinance profiles: one TOML file per municipality, loaded into frozen dataclasses.

Every threshold the analysis applies lives in a profile with the section of the local law it comes from and a
short quote, so a result can always say which rule decided it. Settings the law leaves open (how far a street's
right-of-way reaches when only centrelines are mapped, how close a parcel must come to a street to "abut" it) are
in the same files, marked ``setting = true`` with a note saying why that reading was chosen.

A rule in a file looks like::

    distance_ft = { value = 100.0, section = "§ 144-4", quote = "within 100 feet of the property line" }

Keys: ``value`` (absent only where the law leaves the number to the municipality: then ``town_setting = true``
and the analysis refuses to run until the user sets it), ``section``, ``quote``, and optionally ``derived``
(the section number was counted, not printed in the text), ``setting`` (not law: a reading the profile chose)
and ``note``.

Examples
--------
>>> profile = load_profile("fort-plain")
>>> profile.mandate.distance_ft.value, profile.mandate.distance_ft.section
(100.0, '§ 144-4')
>>> load_profile("wappinger", overrides={"mandate.distance_ft": "250"}).mandate.distance_ft.value
250.0
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import difflib
import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analysis.errors import Fix, ProfileError

PROFILE_DIR = Path(__file__).parent / "profiles"
RULE_TESTS = Path(__file__).parent / "rule_tests.toml"

_RULE_KEYS = {
    "value",
    "section",
    "quote",
    "derived",
    "setting",
    "town_setting",
    "note",
    "counted_from",
    "mail_days",
    "also",
}
# What a period's days are counted from: the date of the notice (Fort Plain § 144-4 "within 90 days after the date of
# official notice"), or its service on the owner (Wappinger § 196-22A "shall be served ... and shall have 10 days").
COUNTED_FROM = ("notice", "service")
# The most days a profile may allow a mailed notice to reach the owner (``mail_days``): a month.
MAX_MAIL_DAYS = 30
# The flags a citation carries after its section, in this order: the section was counted, the value was set, or
# (as a plan cites a rule) the value is a reading the profile chose where the law gives no number.
DERIVED_FLAG = "section number derived"
OVERRIDDEN_FLAG = "value set by the user"
SETTING_FLAG = "profile setting"
FLAGS = (DERIVED_FLAG, OVERRIDDEN_FLAG, SETTING_FLAG)
# Several citations in one clause: the flag said once for a run of sections that share it.
_PLURAL_FLAGS = {
    DERIVED_FLAG: "section numbers derived",
    OVERRIDDEN_FLAG: "values set by the user",
    SETTING_FLAG: "profile settings",
}


@dataclass(frozen=True)
class Passage:
    """A further passage of the law a letter quotes with a rule: its section and its words."""

    section: str
    quote: str
    derived: bool = False


@dataclass(frozen=True)
class Rule:
    """One threshold or choice, with where it comes from."""

    value: Any
    section: str
    quote: str = ""
    derived: bool = False
    setting: bool = False
    town_setting: bool = False
    note: str = ""
    overridden: bool = False
    # A period only: what its days are counted from (``COUNTED_FROM``; "" is the notice's date), and, counted from
    # service, the days allowed for a mailed notice to be served, which the date printed adds.
    counted_from: str = ""
    mail_days: int = 0
    # Further passages a letter quotes with this rule, each ``{section, quote}`` (``derived`` where counted): the
    # licence and the other permits a law requires before connecting, beside the permit.
    also: tuple[Passage, ...] = ()
    # A period the town set itself (``analysis.notices.with_resolutions``): the resolution that set its days, which
    # a reason cites beside them ("within 60 days of official notice (Resolution 9 of 2027; § 196-17E sets no
    # period)"). Never in a profile file.
    act: str = ""
    # A value set for the run (``overridden``): the value the profile file gives, which the law sets unless the rule
    # is a setting (None where the file gives none: Wappinger's § 196-17E sets no distance). Never in a profile file.
    law_value: Any = None

    def period_end(self, start: dt.date) -> dt.date:
        """The last day of this period (its value, in days) for a notice dated ``start``: the days after it, and,
        counted from service, the days allowed for the mail to serve it too. The one count of a deadline: the
        analysis' column, a batch's summary and the letters (``analysis.notices.Period``) give the same day."""
        mail = self.mail_days if self.counted_from == "service" else 0
        return start + dt.timedelta(days=int(self.value) + mail)

    @property
    def citation(self) -> str:
        """The section as a clerk would cite it, flagged when counted or set rather than printed in the law."""
        return flagged(self.section, DERIVED_FLAG if self.derived else "", OVERRIDDEN_FLAG if self.overridden else "")

    @property
    def cited(self) -> str:
        """The citation set in brackets within a sentence, its flags as clauses so that no bracket nests."""
        return bracketed(self.citation)

    @property
    def kind(self) -> str:
        """``law`` (the value is the ordinance's), ``setting`` (a reading the profile chose where the law gives no
        number) or ``municipality`` (the law leaves it to the municipality, or has no such rule: unset until set)."""
        if self.town_setting and self.value is None:
            return "municipality"
        return "setting" if self.setting or self.town_setting else "law"

    def law_sets(self, unit: str) -> str:
        """What the law itself sets for this rule, said beside a value set for the run: "§ 144-4 sets 100 ft", or
        "§ 196-17E sets none" where the law leaves the number to the town or the profile reads one (a setting).

        Examples
        --------
        >>> load_profile("fort-plain", overrides={"mandate.distance_ft": "150"}).mandate.distance_ft.law_sets("ft")
        '§ 144-4 sets 100 ft'
        >>> load_profile("wappinger", overrides={"mandate.distance_ft": "150"}).mandate.distance_ft.law_sets("ft")
        '§ 196-17E sets none'
        """
        law = self.law_value if self.overridden else self.value
        if law is None or self.setting or self.town_setting:
            return f"{self.section} sets none"
        return f"{self.section} sets {law:g} {unit}"

    @property
    def law_set(self) -> bool:
        """The law's own number was replaced for this run (a distance or period the ordinance states)."""
        return self.overridden and self.law_value is not None and not (self.setting or self.town_setting)

    def as_dict(self) -> dict:
        return {
            k: v
            for k, v in dataclasses.asdict(self).items()
            if (v not in ("", False, ()) or k == "value") and not (k == "law_value" and v is None)
        }


def flagged(citation: str, *flags: str) -> str:
    """A citation with every flag in one bracket after its section, as a table's section column prints it:
    "§ 144-17A (value set by the user; profile setting)", never "§ 144-17A (value set by the user) (profile
    setting)". The one way a citation is flagged: ``Rule.citation``, a plan's ``cite`` and a stored citation read
    back (of either form) all come through here. Blank flags are left out; each flag is said once, in ``FLAGS``
    order.

    Examples
    --------
    >>> flagged("§ 144-17A", "value set by the user", "profile setting")
    '§ 144-17A (value set by the user; profile setting)'
    >>> flagged("§ 144-28 (section number derived)", "profile setting")
    '§ 144-28 (section number derived; profile setting)'
    >>> flagged("§ 144-17A (value set by the user) (profile setting)"), flagged("§ 144-4", "")
    ('§ 144-17A (value set by the user; profile setting)', '§ 144-4')
    """
    text, carried = _flags(citation)
    said = [f for f in FLAGS if f in carried or f in flags]
    return f"{text} ({'; '.join(said)})".lstrip() if said else text


def bracketed(citation: str) -> str:
    """A citation (``Rule.citation``, or one a stored run kept as text) in brackets within a sentence: its flags
    become clauses after a semicolon, so a sentence never reads "(§ 196-17E (value set by the user))".

    Examples
    --------
    >>> bracketed("§ 196-17E (value set by the user)"), bracketed("§ 144-4")
    ('(§ 196-17E; value set by the user)', '(§ 144-4)')
    >>> bracketed("§ 144-28 (section number derived; value set by the user)")
    '(§ 144-28; section number derived; value set by the user)'
    >>> bracketed("§ 144-17A (value set by the user) (profile setting)")  # as a run stored before one bracket
    '(§ 144-17A; value set by the user; profile setting)'
    """
    return f"({citation_clause(citation)})"


def citation_clause(citation: str) -> str:
    """A citation written to stand inside brackets another text opened: "§ 144-28; section number derived".

    Examples
    --------
    >>> "(more than 25% of the flow, " + citation_clause("§ 144-28 (section number derived)") + ")"
    '(more than 25% of the flow, § 144-28; section number derived)'
    """
    text, flags = _flags(citation)
    return "; ".join([text, *flags])


def citations_clause(citations: list[str]) -> str:
    """Several citations written to stand inside one pair of brackets, read aloud one way: each section named once
    with every flag any of its citations carries, the sections that share their flags joined with "and", the flags
    said once after a comma, each such run apart from the next by "; ".

    Examples
    --------
    >>> citations_clause(["§ 144-1 (section number derived)", "§ 144-25A (section number derived)"])
    '§ 144-1 and § 144-25A, section numbers derived'
    >>> citations_clause(["§ 144-1 (section number derived)", "§ 144-25A (value set by the user)", "§ 144-26"])
    '§ 144-1, section number derived; § 144-25A, value set by the user; § 144-26'
    >>> citations_clause(["§ 144-4", "§ 144-4 (value set by the user)"])  # two rules of one section
    '§ 144-4, value set by the user'
    >>> citations_clause(["§ 196-17E"])
    '§ 196-17E'
    """
    runs: list[tuple[list[str], list[str]]] = []
    for text, flags in _by_section(citations):
        if runs and runs[-1][1] == flags:
            runs[-1][0].append(text)
        else:
            runs.append(([text], flags))
    out = []
    for texts, flags in runs:
        many = len(texts) > 1
        said = " and ".join(_PLURAL_FLAGS[f] if many else f for f in flags)
        out.append(" and ".join(texts) + (f", {said}" if said else ""))
    return "; ".join(out)


def joined_citations(citations: list[str]) -> str:
    """Several citations as one section column holds them: each section once, with every flag any of its
    citations carries (as ``citations_clause`` names it), apart by "; ".

    Examples
    --------
    >>> joined_citations(["§ 144-1 (section number derived)", "§ 144-25A (section number derived)",
    ...                   "§ 144-25A (section number derived; value set by the user)", "§ 144-1"])
    '§ 144-1 (section number derived); § 144-25A (section number derived; value set by the user)'
    """
    return "; ".join(flagged(text, *flags) for text, flags in _by_section(citations))


def split_citations(text: str) -> list[str]:
    """The citations of a section column ("§ 144-1 (section number derived); § 144-25A (section number derived;
    value set by the user)"), split at the "; " between them, never at one inside a citation's bracket.

    Examples
    --------
    >>> split_citations("§ 144-1 (section number derived); § 144-25A (section number derived; value set by the user)")
    ['§ 144-1 (section number derived)', '§ 144-25A (section number derived; value set by the user)']
    >>> split_citations("")
    []
    """
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0 and text.startswith("; ", i):
            parts.append(text[start:i])
            start = i + 2
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _by_section(citations: list[str]) -> list[tuple[str, list[str]]]:
    """Each section once, in the order first cited, with every flag its citations carry (in ``FLAGS`` order)."""
    grouped: dict[str, set[str]] = {}
    for citation in citations:
        text, flags = _flags(citation)
        grouped.setdefault(text, set()).update(flags)
    return [(text, [f for f in FLAGS if f in flags]) for text, flags in grouped.items()]


def _flags(citation: str) -> tuple[str, list[str]]:
    """A citation's section and its flags (in ``FLAGS`` order, each once), whether they are in one bracket, "§ 144-17A
    (value set by the user; profile setting)", or as a run stored before that kept them, one bracket each."""
    text, flags = citation.strip(), set()
    while found := _LAST_BRACKET.fullmatch(text):
        said = {f.strip() for f in found["inside"].split(";")}
        if not said <= set(FLAGS):  # a bracket of the section's own, "§ 144-4(A)": not flags
            break
        text, flags = found["text"].rstrip(), flags | said
    return text, [f for f in FLAGS if f in flags]


_LAST_BRACKET = re.compile(r"(?P<text>.*?)\s*\((?P<inside>[^()]*)\)", re.S)


# The ranges a day count or a distance may take, in a profile file or set by the user. Not thresholds of any law
# (those are the values, with their sections, in the files): the bounds of what a careful engineer would believe,
# so that a slip (100000000 days, a distance in inches) is refused by name instead of overflowing the calendar
# ("date value out of range") or measuring every parcel in the county. A notice or correction period runs 1 day to
# ten years; the distance within which a property must connect, a manhole spacing or a test section, at most a
# mile; a right-of-way at most 500 ft wide; the tolerances of measuring and snapping at most 10 ft and 100 ft.
MAX_PERIOD_DAYS = 3650
MAX_RUN_FT = 5280
MAX_ROW_WIDTH_FT = 500
MAX_MEASURING_TOLERANCE_FT = 10
MAX_SNAP_FT = 100
DAYS = {"least": 1, "most": MAX_PERIOD_DAYS, "unit": "days"}


def _rule(
    value_type: type | tuple[type, ...],
    *,
    nullable: bool = False,
    choices: tuple = (),
    least: float = 0,
    most: float | None = None,
    unit: str = "",
) -> Any:
    """A rule field of a section: the type its value must have and, for a day count or a distance, its range
    (``least`` to ``most`` ``unit``; a table of numbers, such as spacings by diameter, holds each to it)."""
    meta = {"type": value_type, "nullable": nullable, "choices": choices, "least": least, "most": most, "unit": unit}
    return field(metadata=meta)


def _feet(most: float) -> dict[str, Any]:
    return {"most": most, "unit": "ft"}


@dataclass(frozen=True)
class MandateRules:
    """Who must connect: § 144-4 (Fort Plain), § 168-22.2G (Poughkeepsie), § 196-17 (Wappinger)."""

    distance_ft: Rule = _rule((int, float), nullable=True, **_feet(MAX_RUN_FT))
    measured_from: Rule = _rule(str, choices=("parcel_boundary", "curbline"))
    requires_abutting_street: Rule = _rule(bool)
    requires_occupied_building: Rule = _rule(bool)
    notice_period_days: Rule = _rule(int, nullable=True, **DAYS)
    notice_reasons: Rule = _rule(list)
    applies_within: Rule = _rule(str)


@dataclass(frozen=True)
class SewerRules:
    """Which mains count as the public sewer a parcel must connect to. Storm sewers never count."""

    count_combined: Rule = _rule(bool)
    count_private: Rule = _rule(bool)
    count_force_mains: Rule = _rule(bool)


@dataclass(frozen=True)
class MeasurementSettings:
    """How the geometric tests are carried out where the law gives no number (all ``setting = true``)."""

    measuring_crs: Rule = _rule(str)
    distance_tolerance_ft: Rule = _rule((int, float), **_feet(MAX_MEASURING_TOLERANCE_FT))
    abut_tolerance_ft: Rule = _rule((int, float), **_feet(MAX_SNAP_FT))
    default_row_width_ft: Rule = _rule((int, float), **_feet(MAX_ROW_WIDTH_FT))
    main_in_street_min_row_widths: Rule = _rule((int, float))
    join_street_segments: Rule = _rule(bool)
    min_occupied_building_sqft: Rule = _rule((int, float))


@dataclass(frozen=True)
class NetworkRules:
    """How the sewer network is built and checked, and the design rules it is checked against."""

    snap_tolerance_ft: Rule = _rule((int, float), **_feet(MAX_SNAP_FT))
    connect_at_manhole_within_ft: Rule = _rule((int, float), **_feet(MAX_SNAP_FT))
    outfall_snap_ft: Rule = _rule((int, float), **_feet(MAX_RUN_FT))
    include_private_mains: Rule = _rule(bool)
    trust_digitised_direction: Rule = _rule(bool)
    control_manhole: Rule = _rule(str, choices=("nearest_downstream",))
    min_diameter_in: Rule = _rule((int, float), nullable=True)
    max_manhole_spacing_ft: Rule = _rule((int, float), nullable=True, **_feet(MAX_RUN_FT))
    manhole_spacing_by_diameter: Rule = _rule(dict, **_feet(MAX_RUN_FT))
    manhole_at_alignment_change: Rule = _rule(bool)
    alignment_change_deg: Rule = _rule((int, float))
    slope_change_ft_per_ft: Rule = _rule((int, float))
    gallons_per_day_per_unit: Rule = _rule((int, float))


@dataclass(frozen=True)
class BuildingRules:
    """Building sewers: one per building, rear buildings, living units per building sewer, manhole connections,
    and the least size and slope of a building sewer."""

    separate_building_sewer: Rule = _rule(bool)
    rear_building_rule: Rule = _rule(str, choices=("may_share", "main_extension"))
    other_routes: Rule = _rule(list)
    rear_building_note: Rule = _rule(str)
    units_per_lateral: Rule = _rule(int, nullable=True)
    class_units: Rule = _rule(dict)
    manhole_connection_classes: Rule = _rule(list)
    complex_classes: Rule = _rule(list)
    commercial_complex_min_buildings: Rule = _rule(int, nullable=True)
    manhole_connection_decided_by: Rule = _rule(str)
    building_sewer_min_diameter_in: Rule = _rule((int, float), nullable=True)
    building_sewer_min_slope_in_per_ft: Rule = _rule((int, float), nullable=True)


@dataclass(frozen=True)
class NoticeRules:
    """What notices and their letters say: the duties quoted whole, who may be noticed, correcting and penalties."""

    correction_period_days: Rule = _rule(int, **DAYS)
    penalty: Rule = _rule(str)
    connection_duty: Rule = _rule(bool)
    private_system_duty: Rule = _rule(bool)
    private_system_reasons: Rule = _rule(list)
    private_system_only: Rule = _rule(bool)
    private_system_assumed: Rule = _rule(bool)
    notice_date_max_days_ahead: Rule = _rule(int, least=0, most=MAX_PERIOD_DAYS, unit="days")
    permit: Rule = _rule(bool)
    permit_fees: Rule = _rule(bool)
    inspection: Rule = _rule(bool)
    inflow_sources: Rule = _rule(bool)
    manhole_connection: Rule = _rule(bool)


@dataclass(frozen=True)
class DischargeRules:
    """What a property discharges: grease interceptors by property class, industrial users by flow."""

    grease_interceptor: Rule = _rule(str, choices=("required", "at_discretion", "none"))
    grease_decided_by: Rule = _rule(str)
    food_service_classes: Rule = _rule(list)
    interceptor_exempt_classes: Rule = _rule(list)
    industrial_classes: Rule = _rule(list)
    residential_classes: Rule = _rule(list)
    significant_user_gpd: Rule = _rule((int, float), nullable=True)
    significant_user_share: Rule = _rule((int, float), nullable=True)
    flow_review_gpd: Rule = _rule((int, float), nullable=True)
    flow_review_share: Rule = _rule((int, float), nullable=True)
    flow_reviewed_by: Rule = _rule(str)
    system_flow_gpd: Rule = _rule((int, float), nullable=True)


@dataclass(frozen=True)
class SubdivisionRules:
    """Which proposed subdivisions must build sewers (Wappinger § 196-16G, § 196-23; Fort Plain § 144-21)."""

    all_new_developments: Rule = _rule(bool)
    max_acres_per_unit: Rule = _rule((int, float), nullable=True)
    in_district_builds: Rule = _rule(bool)
    private_until_available: Rule = _rule(bool)


@dataclass(frozen=True)
class DesignRules:
    """Planning a sewer extension: design checks, leakage allowance, capacity and cost, the owners' petition."""

    trench_width_in: Rule = _rule(dict)
    exfiltration_gpd_per_inch_mile: Rule = _rule((int, float), nullable=True)
    exfiltration_gpd_per_manhole: Rule = _rule((int, float), nullable=True)
    max_test_section_ft: Rule = _rule((int, float), nullable=True, **_feet(MAX_RUN_FT))
    petition_majority: Rule = _rule(bool)
    manning_n: Rule = _rule((int, float))
    manning_n_by_material: Rule = _rule(dict)
    default_slope_ft_per_ft: Rule = _rule((int, float))
    peaking_factor: Rule = _rule((int, float))
    cost_per_ft: Rule = _rule(dict)
    cost_per_manhole: Rule = _rule((int, float))
    cost_per_lateral: Rule = _rule((int, float))
    pipe_materials: Rule = _rule(list)
    vacant_lots_benefit: Rule = _rule(bool)
    min_share_per_parcel: Rule = _rule((int, float))
    typical_flow_gpd_by_class: Rule = _rule(dict)
    easements_in_law: Rule = _rule(bool)
    easement_min_ft: Rule = _rule((int, float), **_feet(MAX_SNAP_FT))
    min_main_slope_ft_per_ft: Rule = _rule((int, float), nullable=True, least=0.0001, most=1.0, unit="ft/ft")


@dataclass(frozen=True)
class Profile:
    """A municipality's sewer-use law as the analysis applies it."""

    id: str
    municipality: str
    law: str
    source_text: str
    version: str
    summary: str
    mandate: MandateRules
    sewers: SewerRules
    measurement: MeasurementSettings
    network: NetworkRules
    buildings: BuildingRules
    notices: NoticeRules
    design: DesignRules
    discharges: DischargeRules
    subdivisions: SubdivisionRules
    path: str = ""

    def rules(self) -> dict[str, Rule]:
        """Every rule keyed ``section.name`` (``mandate.distance_ft``), in file order."""
        out: dict[str, Rule] = {}
        for section_name, cls in _SECTIONS.items():
            section = getattr(self, section_name)
            for f in dataclasses.fields(cls):
                out[f"{section_name}.{f.name}"] = getattr(section, f.name)
        return out

    def as_dict(self) -> dict:
        head = {k: getattr(self, k) for k in _HEADER_KEYS}
        return head | {"rules": {k: r.as_dict() for k, r in self.rules().items()}}


_SECTIONS: dict[str, type] = {
    "mandate": MandateRules,
    "sewers": SewerRules,
    "measurement": MeasurementSettings,
    "network": NetworkRules,
    "buildings": BuildingRules,
    "notices": NoticeRules,
    "design": DesignRules,
    "discharges": DischargeRules,
    "subdivisions": SubdivisionRules,
}
_HEADER_KEYS = ("id", "municipality", "law", "source_text", "version", "summary")


def period_keys() -> tuple[str, ...]:
    """The rules that are periods, a number of days to act in (``section.name``): the only values a town's own act
    may set (the town settings' ``[resolutions]``, ``analysis.notices.with_resolutions``), so a key that names no
    period there is refused, never ignored.

    Examples
    --------
    >>> period_keys()
    ('mandate.notice_period_days', 'notices.correction_period_days')
    """
    return tuple(
        f"{name}.{f.name}"
        for name, cls in _SECTIONS.items()
        for f in dataclasses.fields(cls)
        if {k: f.metadata.get(k) for k in DAYS} == DAYS
    )


def rule_keys() -> tuple[str, ...]:
    """Every rule key a profile has (``section.name``), whichever profile."""
    return tuple(f"{name}.{f.name}" for name, cls in _SECTIONS.items() for f in dataclasses.fields(cls))


def rule_tests() -> dict[str, list[str]]:
    """The tests that cover each rule: ``table.key`` (or ``profile:table.key`` for one profile) -> test IDs.

    Read from ``analysis/rule_tests.toml``; ``tests/test_profiles.py`` fails when a rule of a bundled profile has
    no entry there, or an entry names a test that does not exist or does not name the rule.
    """
    data = tomllib.loads(RULE_TESTS.read_text(encoding="utf-8"))
    return {str(k): [str(t) for t in v] for k, v in data.get("tests", {}).items()}


def covering_tests(profile: Profile, key: str, table: dict[str, list[str]] | None = None) -> list[str]:
    """The tests listed for one rule of a profile (its own entry first, else the one all profiles share)."""
    table = rule_tests() if table is None else table
    return table.get(f"{profile.id}:{key}") or table.get(key, [])


KIND_WORDS = {"law": "law", "setting": "setting", "municipality": "left to the municipality"}


def rules_markdown(profile: Profile) -> str:
    """A Markdown table of the profile's rules (value, section, law or setting), as docs/analysis.md lists them."""
    lines = ["| rule | value | section | law or setting |", "|---|---|---|---|"]
    for key, rule in profile.rules().items():
        value = "unset" if rule.value is None else str(rule.value)
        value = value if len(value) <= 60 else value[:57] + "..."
        value = value.replace("|", "\\|")
        lines.append(f"| `{key}` | {value} | {rule.citation} | {KIND_WORDS[rule.kind]} |")
    return "\n".join(lines)


def available_profiles() -> list[str]:
    """The names of the bundled profiles (file names without ``.toml``)."""
    return sorted(p.stem for p in PROFILE_DIR.glob("*.toml"))


def load_profile(name_or_path: str | Path, *, overrides: dict[str, Any] | None = None) -> Profile:
    """Load a bundled profile by name, or any profile file by path, and apply ``section.key=value`` overrides.

    Raises ``ProfileError`` naming the file and key for unknown keys, missing keys and wrong types.
    """
    path = Path(name_or_path)
    if path.suffix != ".toml":
        path = PROFILE_DIR / f"{name_or_path}.toml"
        if not path.exists():
            raise ProfileError(
                f"No profile named {str(name_or_path)!r}. Bundled profiles: {', '.join(available_profiles())}; "
                "or give the path of a .toml profile file."
            )
    if not path.exists():
        raise ProfileError(f"Profile file {path} does not exist.")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"{path.name} is not valid TOML: {exc}") from exc
    return _build_profile(data, path, overrides or {})


def values_set(profile: Profile, settings: dict[str, Any]) -> dict[str, Any]:
    """The values ``settings`` set on ``profile`` (as its file gives them) that change it, read as the profile reads
    a value set on it: text as the rule's type, so ``250`` and ``250.0`` are one value, and a value equal to the
    profile's own is left out, as not set. A key the profile has no rule for, or a value it cannot read, is kept as
    given: it is not the profile's own value.

    Two runs set different values on a profile only where these differ: the map tells a what-if run from the run a
    notice was given on by them.

    Examples
    --------
    >>> fort_plain = load_profile("fort-plain")
    >>> values_set(fort_plain, {"mandate.distance_ft": "250.0"}), values_set(fort_plain, {"mandate.distance_ft": "100"})
    ({'mandate.distance_ft': 250.0}, {})
    >>> values_set(fort_plain, {"mandate.distance_ft": "far"})
    {'mandate.distance_ft': 'far'}
    """
    rules = profile.rules()
    meta = {f"{s}.{f.name}": f.metadata for s, cls in _SECTIONS.items() for f in dataclasses.fields(cls)}
    out: dict[str, Any] = {}
    for key, raw in settings.items():
        own = rules.get(key)
        if own is None:
            out[key] = raw
            continue
        read, problems = _override(key, own, raw, meta[key])
        if problems:
            out[key] = raw
        elif read.value != own.value:
            out[key] = read.value
    return out


def _build_profile(data: dict, path: Path, overrides: dict[str, Any]) -> Profile:
    """The profile, or one ``ProfileError`` listing every problem: the file's prefixed by its name, the values the
    user set (which are not in the file) by their key alone."""
    problems: list[str] = []
    set_problems: list[str] = []
    in_file_only: list[str] = []  # rules set by the user that only a copy of the profile file can change
    header = data.get("profile")
    if not isinstance(header, dict):
        raise ProfileError(f"{path.name}: missing [profile] table with {', '.join(_HEADER_KEYS)}.")
    problems += [f"[profile] unknown key {k!r}" for k in header if k not in _HEADER_KEYS]
    problems += [f"[profile] missing key {k!r}" for k in _HEADER_KEYS if k not in header]
    problems += [f"unknown table [{k}]" for k in data if k not in _SECTIONS and k != "profile"]

    sections: dict[str, Any] = {}
    for section_name, cls in _SECTIONS.items():
        table = data.get(section_name)
        if not isinstance(table, dict):
            problems.append(f"missing table [{section_name}]")
            continue
        names = {f.name for f in dataclasses.fields(cls)}
        problems += [f"[{section_name}] unknown key {k!r}" for k in table if k not in names]
        rules = {}
        for f in dataclasses.fields(cls):
            key = f"{section_name}.{f.name}"
            if f.name not in table:
                problems.append(f"[{section_name}] missing key {f.name!r}")
                continue
            rule, rule_problems = _build_rule(key, table[f.name], f.metadata)
            problems += rule_problems
            if rule is not None and key in overrides:
                rule, rule_problems = _override(key, rule, overrides[key], f.metadata)
                set_problems += rule_problems
                if isinstance(overrides[key], str) and f.metadata["type"] in (list, dict):
                    in_file_only.append(key)
            rules[f.name] = rule
        if len(rules) == len(names) and all(r is not None for r in rules.values()):
            sections[section_name] = cls(**rules)

    known = {f"{s}.{f.name}" for s, cls in _SECTIONS.items() for f in dataclasses.fields(cls)}
    name = str(header.get("id") or path.stem)
    unknown = [k for k in overrides if k not in known]
    set_problems += [_unknown_setting(k, known, name) for k in unknown]
    if problems or set_problems:
        parts = ([f"{path.name}: " + "; ".join(problems)] if problems else []) + set_problems
        # "use the copy as the profile" named neither the file to copy nor how a copy is given (a path, not a name)
        fix = Fix("profile_file", target=" and ".join(in_file_only), example=str(path)) if in_file_only else None
        if fix is None and any(not _close_setting(k, known) for k in unknown):
            fix = Fix("rules", name)  # where the profile's rules are listed: a command, or a page's field
        raise ProfileError("; ".join(parts) + ".", fix=fix)
    return Profile(**{k: str(header[k]) for k in _HEADER_KEYS}, **sections, path=str(path))


def _unknown_setting(key: str, known: set[str], profile: str) -> str:
    """A setting that names no rule, told as a user who mistyped it needs it: the rule meant, where one is close,
    else the profile it is not a rule of ("override 'mandate.distnce_ft' names no rule (known: mandate.distance_ft,
    ...)" read as a program's message), where every rule is listed being the error's ``Fix("rules")``: a command on
    the command line, the Settings field's own words on the web."""
    close = _close_setting(key, known)
    if close:
        return f"{key} names no rule of the profile (did you mean {close}?)"
    return f"{key} names no rule of the profile {profile}"


def _close_setting(key: str, known: set[str]) -> str | None:
    """The rule a mistyped setting most likely meant, or None."""
    close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.8)
    return close[0] if close else None


def _build_rule(key: str, raw: Any, meta: dict) -> tuple[Rule | None, list[str]]:
    if not isinstance(raw, dict):
        return None, [f'{key} must be a table like {{ value = ..., section = "§ ...", quote = "..." }}']
    problems = [f"{key}: unknown key {k!r}" for k in raw if k not in _RULE_KEYS]
    if not raw.get("section"):
        problems.append(f"{key}: missing key 'section' (every rule cites its section)")
    if "value" not in raw:
        if not (meta["nullable"] and raw.get("town_setting")):
            problems.append(f"{key}: missing key 'value'")
        value = None
    else:
        value = raw["value"]
        problems += _check_value(key, value, meta, raw.get("section", ""))
    also, also_problems = _passages(key, raw.get("also", []))
    problems += also_problems + _period_keys(key, raw)
    if problems:
        return None, problems
    fields = {k: raw[k] for k in _RULE_KEYS if k in raw and k not in ("value", "also")}
    fields["also"] = also
    return Rule(value=float(value) if isinstance(value, int) and meta["type"] == (int, float) else value, **fields), []


def _passages(key: str, raw: Any) -> tuple[tuple[Passage, ...], list[str]]:
    """A rule's ``also``: a list of tables ``{ section = "§ ...", quote = "..." }`` (``derived`` where counted)."""
    shape = f'{key}: also must be a list of tables like {{ section = "§ ...", quote = "..." }}'
    if not isinstance(raw, list) or not all(isinstance(p, dict) for p in raw):
        return (), [shape]
    problems = [f"{key}: also: unknown key {k!r}" for p in raw for k in p if k not in ("section", "quote", "derived")]
    if any(not isinstance(p.get("section"), str) or not isinstance(p.get("quote"), str) for p in raw):
        problems.append(shape)
    if problems:
        return (), problems
    return tuple(Passage(p["section"], p["quote"], bool(p.get("derived", False))) for p in raw), []


def _period_keys(key: str, raw: dict) -> list[str]:
    """What is wrong with a rule's ``counted_from`` and ``mail_days`` (a period's start, and the days for the mail)."""
    problems = []
    if "counted_from" in raw and raw["counted_from"] not in COUNTED_FROM:
        problems.append(f"{key}: counted_from must be one of {', '.join(COUNTED_FROM)}, got {raw['counted_from']!r}")
    days = raw.get("mail_days", 0)
    if isinstance(days, bool) or not isinstance(days, int) or not 0 <= days <= MAX_MAIL_DAYS:
        problems.append(f"{key}: mail_days must be a whole number of days from 0 to {MAX_MAIL_DAYS}, got {days!r}")
    elif days and raw.get("counted_from") != "service":
        problems.append(f'{key}: mail_days is for a period counted from service (counted_from = "service")')
    return problems


def _check_value(key: str, value: Any, meta: dict, section: str) -> list[str]:
    """What is wrong with a rule's value (from the file or set by the user): its type, choices and range."""
    expected = meta["type"]
    if isinstance(value, bool) and expected is not bool:
        return [f"{key}: expected a number, got {value!r}"]
    if not isinstance(value, expected):
        names = "/".join(t.__name__ for t in (expected if isinstance(expected, tuple) else (expected,)))
        return [f"{key}: expected {names}, got {value!r}"]
    if meta["choices"] and value not in meta["choices"]:
        return [f"{key}: expected one of {', '.join(meta['choices'])}, got {value!r}"]
    if isinstance(value, dict) and not all(isinstance(v, int | float) for v in value.values()):
        return [f"{key}: every value must be a number, got {value!r}"]
    numbers = list(value.values()) if isinstance(value, dict) else [value]
    if any(isinstance(v, float) and not math.isfinite(v) for v in numbers):
        return [f"{key}: must be a finite number (not nan or inf), got {value!r}"]
    if isinstance(value, int | float) and not isinstance(value, bool) and value < 0:
        return [f"{key}: must not be negative, got {value!r}"]
    out_of_range = [v for v in numbers if isinstance(v, int | float) and not _in_range(v, meta)]
    if out_of_range:
        least, most, unit = meta["least"], meta["most"], meta["unit"]
        return [f"{key} ({section}) must be from {least:,g} to {most:,g} {unit}, not {_number_text(out_of_range[0])}"]
    return []


def _in_range(value: float, meta: dict) -> bool:
    return meta["most"] is None or meta["least"] <= value <= meta["most"]


def _number_text(value: float) -> str:
    """A number as the user would have typed it: 100000000, 2.5, 1e+300 (not 100000000.0)."""
    return f"{value:,.0f}".replace(",", "") if float(value).is_integer() and abs(value) < 1e15 else repr(value)


# What a value typed for a rule must be, in words (``--set mandate.distance_ft=abc`` must be a number).
_TYPE_WORDS: dict[Any, str] = {int: "a whole number", (int, float): "a number", bool: "true or false"}


def _override(key: str, rule: Rule, raw: Any, meta: dict) -> tuple[Rule, list[str]]:
    """The rule with the user's value (``--set``, the web's Settings box): text is read as the rule's type, then
    checked as a file's value is, so 100000000 days is refused here rather than overflowing a deadline later."""
    value: Any = raw
    if isinstance(raw, str) and meta["type"] in (list, dict):
        # "expected list, got '[...]'" said neither that a typed value cannot be one nor where it can be changed
        kind = "a list" if meta["type"] is list else "a table"
        return rule, [f"{key} is {kind} in the profile file, which a setting cannot give"]
    if isinstance(raw, str):
        expected = meta["type"] if isinstance(meta["type"], tuple) else (meta["type"],)
        try:
            if bool in expected:
                if raw.lower() not in ("true", "false"):
                    raise ValueError
                value = raw.lower() == "true"
            elif int in expected and float not in expected:
                value = int(raw)
            elif float in expected:
                value = float(raw)
        except ValueError:
            return rule, [f"{key} must be {_TYPE_WORDS.get(meta['type'], 'a ' + expected[0].__name__)}, not {raw!r}"]
    problems = _check_value(key, value, meta, rule.section)
    if isinstance(value, int) and meta["type"] == (int, float):
        value = float(value)
    own = rule.law_value if rule.overridden else rule.value
    if not problems and _same_value(value, own) and not _left_to_an_act(key, rule):
        # the profile's own value (100 under § 144-4's 100 ft): "(value set by the user)" and "the distance set for
        # this run (§ 144-4 sets 100 ft)" told a board the run departed from the law where it had not
        return dataclasses.replace(rule, value=own, overridden=False, law_value=None), []
    return dataclasses.replace(rule, value=value, overridden=True, law_value=own), problems


def _same_value(value: Any, own: Any) -> bool:
    """The value set is the profile's own: equal, and of one kind (a number is never a yes/no, though True == 1)."""
    return own is not None and isinstance(value, bool) == isinstance(own, bool) and value == own


def _left_to_an_act(key: str, rule: Rule) -> bool:
    """A period the law leaves to the town (``setting`` or ``town_setting``): a resolution of the town may set it
    (``analysis.notices.with_resolutions``), and a value set for the run is weighed against that resolution, the
    profile's own reading too, so that 30 days set beside a resolution of 45 is refused rather than dropped."""
    return bool(rule.setting or rule.town_setting) and key in period_keys()
