"""Connection and violation notices: who is due one, the mailing list, and the words of each letter. Pure functions.

A connection notice goes to the owner of every mandated parcel that has no open notice and was never recorded as
connected or exempt (the register says which). Owners are grouped by their normalised mailing address (case,
spacing, punctuation, ZIP+4 folded to 5 digits), so one owner of five parcels gets one envelope and one letter
listing all five.

Every word of a letter is composed here (``compose_letters``, ``letter_text``): the letterhead and the signature
from the town settings, the date, the certified-mail line, the blocks of the body, each map's heading and caption,
the page footer. Every passage of law is the profile's quote, printed verbatim with its section, and never an
internal annotation ("section number derived", "value set by the user"). A period the law leaves to the town (Fort
Plain § 144-40A's "reasonable time limit", a time "determined by the Town Board") is printed with the town's own
resolution, from the town settings, never as the section's. ``layers.letters`` only lays the words out on paper.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import difflib
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from pathlib import PurePath

import numpy as np
import pandas as pd
import shapely

from analysis.errors import AnalysisError, Fix, ProfileError
from analysis.mandate import check_notice, private_system
from analysis.profiles import Profile, Rule
from analysis.reasons import NOTICE_REASONS

# The fields a letter prints on its envelope: the owner's name and mailing address, and the site address an
# occupant's letter goes to (``layers.validate`` names control characters in them when the parcels are loaded).
LETTER_FIELDS = (
    "owner_name",
    "mail_address",
    "mail_city",
    "mail_state",
    "mail_zip",
    "site_address",
    "site_city",
    "site_state",
    "site_zip",
)
# A character that could not be read: what a NUL becomes where the parcels are loaded (``layers.validate``), or a
# byte of another encoding. A letter holding one is held back.
UNREADABLE = "\ufffd"
NOTICE_FIELDS = (
    "parcel_id",
    *LETTER_FIELDS,
    "distance_ft",
    "measured_from",
    "main_id",
    "street_name_main",
    "section",
    "reason",
    "deadline",
)
MAILING_COLUMNS = (
    "mailing_no",
    "letter_file",
    "name_line_1",
    "name_line_2",
    "address_line_1",
    "address_line_2",
    "city",
    "state",
    "zip",
    "city_line",
    "country_line",
    "parcel_ids",
    "notice_ids",
    "site_addresses",
    "deadline",
    "section",
    "notices",
    "mail_service",
    "certified_article_no",
)
# A name line longer than this goes on to name_line_2: an Avery 5160 label holds about 32 capitals at 9 pt.
NAME_LINE_CHARS = 32
HAZARD_REASON = "public_health_hazard"
# What the settings template (layers/town.example.toml) fills in so that nobody mistakes it for a real office: a name or
# street with the word "Example", a fictional 555-01xx telephone number, an e-mail address at a reserved domain.
_EXAMPLE_WORD = re.compile(r"\bexample\b", re.IGNORECASE)
_EXAMPLE_PHONE = re.compile(r"555\W{0,2}01\d\d\b")
_EXAMPLE_EMAIL = re.compile(r"@(?:[\w-]+\.)*example(?:\.(?:com|org|net))?$", re.IGNORECASE)


# -- periods and town settings ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Resolution:
    """A period the town set itself where the law leaves it open: the days and the act that set them."""

    days: int
    act: str


@dataclass(frozen=True)
class TownSettings:
    """The municipality's own details for its letters (``layers.town`` reads them from the town settings file)."""

    name: str = ""
    letterhead: tuple[str, ...] = ()
    return_address: tuple[str, ...] = ()
    officer_name: str = ""
    officer_title: str = ""
    phone: str = ""
    email: str = ""
    hours: str = ""
    fees: str = ""
    requests: str = ""
    penalty_amount: str = ""
    resolutions: Mapping[str, Resolution] = field(default_factory=dict)
    source: str = ""

    def missing_for_letters(self) -> list[str]:
        """What a letter a clerk can sign needs and these settings lack (the keys of the settings file)."""
        missing = [
            key
            for key, value in (
                ("letterhead.name", self.name),
                ("return_address.lines", self.return_address),
                ("officer.name", self.officer_name),
                ("officer.title", self.officer_title),
            )
            if not value
        ]
        if not (self.phone or self.email):
            missing.append("contact.phone or contact.email")
        return missing

    def placeholders(self) -> list[str]:
        """The keys that still hold the settings template's placeholder values (a letter signed "A. N. Example",
        with a 555-0100 telephone number, is no letter a clerk can defend).

        Examples
        --------
        >>> TownSettings(officer_name="A. N. Example", phone="(518) 555-0100", email="clerk@example.org").placeholders()
        ['officer.name', 'contact.phone', 'contact.email']
        """
        texts = (
            ("letterhead.name", (self.name,)),
            ("letterhead.lines", self.letterhead),
            ("return_address.lines", self.return_address),
            ("officer.name", (self.officer_name,)),
            ("officer.title", (self.officer_title,)),
        )
        found = [key for key, values in texts if any(_EXAMPLE_WORD.search(v) for v in values)]
        if _EXAMPLE_PHONE.search(self.phone):
            found.append("contact.phone")
        if _EXAMPLE_EMAIL.search(self.email.strip()):
            found.append("contact.email")
        return found

    def other_municipality(self, municipality: str) -> str | None:
        """The letterhead's name where it names a municipality other than ``municipality`` (a profile's, e.g.
        "Town of Poughkeepsie, Dutchess County, New York (...)", whose name is the part before the first comma);
        None where the letterhead names it, or names nothing yet.

        Examples
        --------
        >>> TownSettings(name="Village of Fort Plain").other_municipality("Town of Poughkeepsie, Dutchess County")
        'Village of Fort Plain'
        >>> TownSettings(name="TOWN OF POUGHKEEPSIE").other_municipality("Town of Poughkeepsie, Dutchess County")
        """
        own = _plain(municipality_name(municipality))
        if not self.name or not own or f" {own} " in f" {_plain(self.name)} ":
            return None
        return self.name


def municipality_name(municipality: str) -> str:
    """A profile's municipality without its county and state: "Village of Fort Plain" of "Village of Fort Plain,
    Montgomery County, New York"."""
    return re.split(r"[,(]", municipality, maxsplit=1)[0].strip()


def _plain(text: str) -> str:
    """Lower case, letters and digits only, single spaces: names compared as a reader would."""
    return " ".join(re.sub(r"[^0-9a-z]+", " ", text.casefold()).split())


@dataclass(frozen=True)
class Period:
    """A number of days a letter states, and what it rests on: the law's section, or the town's act under it."""

    key: str
    days: int | None
    section: str
    quote: str
    act: str | None = None  # the town's resolution, where the law leaves the period to the town
    left_to_town: bool = False
    law_silent: bool = False  # the law sets no period at all (Wappinger § 196-17E), rather than leaving it to the town
    counted_from: str = "notice"  # or "service": the days run from the notice's service on the owner
    mail_days: int = 0  # counted from service: the days allowed for the mailed notice to be served
    # the law's own days, where a run set others in their place (``--set mandate.notice_period_days=60`` under Fort
    # Plain's § 144-4): "60 days (§ 144-4)" credited the section with them
    law_days: int | None = None

    @property
    def basis(self) -> str:
        """As a letter cites it: "§ 144-4", "Resolution 4 of 2027, under § 144-40A", or, where the section sets no
        period and the resolution is the town's alone, "Resolution 9 of 2027; § 196-17E sets no period" (no bracket, as
        the preview prints it inside one)."""
        if self.law_days is not None:
            return f"the period set for this run; {self.section} sets {self.law_days} days"
        if not self.act:  # no act of the town: the law's own period, or, where it sets none, a run's value alone
            return f"no resolution of the town yet; {self.section} sets no period" if self.law_silent else self.section
        return f"{self.act}; {self.section} sets no period" if self.law_silent else f"{self.act}, under {self.section}"

    def ends(self, notice_date: dt.date) -> dt.date:
        """The last day of the period of a notice dated ``notice_date``: its days after that date, or, counted from
        service, after the days allowed for the mail to serve it (Wappinger § 196-22A, 10 days from service).

        Examples
        --------
        >>> Period("notices.correction_period_days", 10, "§ 196-22A", "", counted_from="service", mail_days=5).ends(
        ...     dt.date(2027, 6, 1))
        datetime.date(2027, 6, 16)
        """
        return notice_date + dt.timedelta(days=int(self.days) + self.mail_days)

    @property
    def ready_for_letters(self) -> bool:
        return self.days is not None and (self.act is not None or not self.left_to_town)


def period(profile: Profile, key: str, town: TownSettings | None = None) -> Period:
    """The period ``key`` ("mandate.notice_period_days", "notices.correction_period_days") as letters state it.

    Where the law sets the period (Fort Plain § 144-4's 90 days) the profile's value and section are used. Where the
    law leaves it to the town (``setting`` or ``town_setting`` in the profile), the town's resolution decides the days
    and is cited; without one the profile's reading is returned with ``ready_for_letters`` false.
    """
    section_name, name = key.split(".")
    rule: Rule = getattr(getattr(profile, section_name), name)
    refuse_resolutions_of_the_laws_periods(profile, town)
    left = bool(rule.setting or rule.town_setting)
    act = (town.resolutions.get(key) if town else None) if left else None
    if act:
        _refuse_a_run_value_beside_the_act(key, rule, act)
    days = act.days if act else (int(rule.value) if rule.value is not None else None)
    counted_from = rule.counted_from or "notice"
    mail_days = rule.mail_days if counted_from == "service" else 0
    return Period(
        key,
        days,
        rule.section,
        rule.quote,
        act.act if act else None,
        left,
        bool(rule.town_setting),
        counted_from,
        mail_days,
        int(rule.law_value) if rule.law_set else None,
    )


def period_problem(p: Period, *, town_word: str = "town") -> str | None:
    """Why a period cannot go into a letter yet, or None."""
    if p.ready_for_letters:
        return None
    reading = f"this profile reads it as {p.days} days" if p.days is not None else "the profile sets no number"
    return (
        f"{p.section} leaves the period to the {town_word} ({reading}). A letter must cite the {town_word}'s own "
        f'decision: add [resolutions] "{p.key}" = {{ days = N, act = "the resolution that set it" }} to the town '
        "settings file."
    )


# -- who is due a notice ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NoticePlan:
    """The notices due, the parcels held back and why, and the period and deadline the letters will state."""

    due: pd.DataFrame
    held: pd.DataFrame
    period: Period
    notice_date: dt.date
    deadline: dt.date | None
    reason: str | None = None
    # The parcels of the analysis a choice took in (``NoticeChoice``: by ID, by street), mandated or not; None where
    # no choice was made, and every mandated parcel was taken.
    chosen: frozenset[str] | None = None


@dataclass(frozen=True)
class NoticeChoice:
    """Which mandated parcels a batch notices, where a town notices one street or a few properties first: the
    parcels named by ID, and those on ``street`` (its site address's street, or the sewered street whose main
    decided it, ``street_name_main``). Both given: the parcels of either. Neither: every mandated parcel."""

    parcel_ids: tuple[str, ...] = ()
    street: str | None = None

    def __post_init__(self) -> None:
        ids = tuple(dict.fromkeys(str(i).strip() for i in self.parcel_ids if str(i).strip()))
        object.__setattr__(self, "parcel_ids", ids)
        object.__setattr__(self, "street", (self.street or "").strip() or None)

    def __bool__(self) -> bool:
        return bool(self.parcel_ids or self.street)

    def key(self) -> str:
        """The choice as one text, the same for the same choice however it was typed (order, case of the street,
        "Street" or "St"): what a confirmation covers."""
        street = street_key(pd.Series([self.street]))[0] if self.street else ""
        return "\x1f".join([street, *sorted(self.parcel_ids)])


# The street suffixes and directions an address writes in full or abbreviated (USPS Publication 28), read as one:
# "Canal Street" and "CANAL ST." are the same street.
_STREET_WORDS = {
    "STREET": "ST",
    "STR": "ST",
    "AVENUE": "AVE",
    "AV": "AVE",
    "ROAD": "RD",
    "DRIVE": "DR",
    "LANE": "LN",
    "PLACE": "PL",
    "COURT": "CT",
    "BOULEVARD": "BLVD",
    "TERRACE": "TER",
    "HIGHWAY": "HWY",
    "PARKWAY": "PKWY",
    "CIRCLE": "CIR",
    "EXTENSION": "EXT",
    "NORTH": "N",
    "SOUTH": "S",
    "EAST": "E",
    "WEST": "W",
}
# A site address's house number: "12", "12A", "12-14", "12 1/2" before the street's name.
_HOUSE_NUMBER = re.compile(r"^\s*\d[\dA-Z/-]*(?:\s+\d+/\d+)?\s+")


def street_key(names: pd.Series) -> pd.Series:
    """Street names as compared: upper case, punctuation and repeated spaces dropped, suffixes and directions
    abbreviated as the post office does ("Canal Street" -> "CANAL ST")."""
    text = names.astype("string").fillna("").str.upper().str.replace(r"[.,#']", " ", regex=True)
    text = text.str.replace(r"\s+", " ", regex=True).str.strip()
    # one vectorised pass per word (no abbreviation is itself a word replaced), not a Python call per match
    for word, short in _STREET_WORDS.items():
        text = text.str.replace(rf"\b{word}\b", short, regex=True)
    return text


def site_street(site_address: pd.Series) -> pd.Series:
    """The street of each site address, without its house number ("12 Canal Street" -> "CANAL ST")."""
    return street_key(site_address).str.replace(_HOUSE_NUMBER, "", regex=True)


def chosen_parcels(results: pd.DataFrame, choice: NoticeChoice) -> np.ndarray:
    """Which parcels of ``results`` the choice takes in (a boolean per row): those named by ID, and those whose site
    address's street or sewered street (``street_name_main``) is the street. A street no parcel lies on is refused,
    naming the streets nearest in spelling: a typo must not read as a street with nobody to notice.

    Examples
    --------
    >>> results = pd.DataFrame({"parcel_id": ["A", "B", "C"], "site_address": ["1 Canal St", "3 Main Street", None],
    ...     "street_name_main": [None, None, "Canal Street"]})
    >>> chosen_parcels(results, NoticeChoice(street="canal street")).tolist()
    [True, False, True]
    >>> chosen_parcels(results, NoticeChoice(parcel_ids=("B",))).tolist()
    [False, True, False]
    """
    ids = results["parcel_id"].astype(str).str.strip()
    taken = ids.isin(choice.parcel_ids).to_numpy(bool, copy=True)
    if choice.street:
        wanted = street_key(pd.Series([choice.street]))[0]
        blank = pd.Series("", index=results.index)
        site = site_street(results["site_address"]) if "site_address" in results.columns else blank
        main = street_key(results["street_name_main"]) if "street_name_main" in results.columns else blank
        on_street = ((site == wanted) | (main == wanted)).to_numpy(bool)
        if not on_street.any():
            raise AnalysisError(_no_such_street(choice.street, pd.concat([site, main])))
        taken |= on_street
    return taken


def _no_such_street(street: str, known: pd.Series) -> str:
    names = sorted(set(known[known != ""]))
    near = difflib.get_close_matches(street_key(pd.Series([street]))[0], names, n=5, cutoff=0.6)
    said = f"the nearest in spelling: {', '.join(near)}" if near else f"{len(names)} street(s) in all"
    return (
        f'No parcel lies on the street "{street}": no site address is on it, and no sewered street of that name '
        f"decided a parcel ({said}). Give the street as the parcels' site addresses write it."
    )


def plan_notices(
    results: pd.DataFrame,
    *,
    profile: Profile,
    notice_date: dt.date,
    notice_reason: str | None = None,
    hazard: str | Mapping[str, str] | None = None,
    exclude: set[str] | frozenset[str] = frozenset(),
    town: TownSettings | None = None,
    printable: AbstractSet[str] | None = None,
    overflow: Callable[[Sequence[str], Sequence[str]], str] | None = None,
    choice: NoticeChoice | None = None,
) -> NoticePlan:
    """Connection notices due on ``notice_date``: mandated parcels not in ``exclude`` (the register's open, connected
    and exempt parcels), less those the law does not allow to be noticed for ``notice_reason``.

    ``choice``: only the mandated parcels it takes in (``chosen_parcels``); each parcel it names by ID that is not
    due a notice is held back saying why (no such parcel, not mandated, already noticed, or why its letter is held).

    Poughkeepsie § 168-22.3C: a property served by a private sewage disposal system is noticed "only when it shall
    be necessary to eliminate a public health hazard". Such parcels (the ``private_system`` column where the data
    has one, else every parcel not connected, by the profile's ``notices.private_system_assumed`` reading) are held
    back for any other reason. With ``public_health_hazard`` the hazard must be named: one text for every parcel,
    or a mapping parcel ID -> hazard, which also limits the notices to the parcels it names.

    A parcel whose owner has no name or mailing address, or whose name or address holds what a letter cannot print,
    is held back (``_mailable``). ``printable`` is the set of characters the letters' font draws, from the caller
    (``layers.fonts.PRINTABLE``; analysis reads no font): without it no character is held back for want of a glyph,
    only control characters, invisible marks and right-to-left text, which no letter prints. ``overflow`` measures
    an envelope's name and address lines as the label and the letter lay them out (``layers.letters.
    address_overflow``: what would be cut or hidden, "" for nothing); without it their length is not checked.

    Raises AnalysisError where the profile needs a reason (§ 168-22.2G) and none is given, or a hazard is missing.

    Examples
    --------
    >>> import pandas as pd
    >>> from analysis.profiles import load_profile
    >>> results = pd.DataFrame({"parcel_id": ["A", "B", "C"], "status": ["mandated", "out_of_range", "mandated"],
    ...     "owner_name": ["Ann Roe", "Bo Poe", None], "mail_address": "1 Main St", "mail_city": "Fort Plain"})
    >>> plan = plan_notices(results, profile=load_profile("fort-plain"), notice_date=dt.date(2027, 3, 1))
    >>> plan.due["parcel_id"].tolist(), plan.deadline.isoformat(), plan.period.basis
    (['A'], '2027-05-30', '§ 144-4')
    >>> plan.held["parcel_id"].tolist()  # no owner name: a letter cannot be addressed
    ['C']
    """
    check_notice(profile, notice_date, notice_reason)
    notice_period = period(profile, "mandate.notice_period_days", town)
    if notice_period.days is None:
        # Letters cite the town's own act: a value set for the run (the fix this named) only led to a second
        # refusal asking for the resolution (a tester). A preview may still assume days set for it.
        raise AnalysisError(
            f"The {profile.id} profile sets no period for connecting after notice: {notice_period.section} leaves "
            "it to the town. Add the town's resolution to the town settings file: [resolutions] "
            '"mandate.notice_period_days" = { days = N, act = "the resolution that set it" } (a preview may assume '
            "days set for it alone, as the profile's mandate.notice_period_days)."
        )
    hazards = _hazards(profile, notice_reason, hazard)
    is_mandated = (results["status"] == "mandated").to_numpy()
    taken = chosen_parcels(results, choice) if choice else np.ones(len(results), dtype=bool)
    mandated = results[is_mandated & taken]
    mandated = mandated[~mandated["parcel_id"].astype(str).isin(exclude)]
    out = pd.DataFrame(
        {name: (mandated[name] if name in mandated.columns else None) for name in NOTICE_FIELDS}, index=mandated.index
    )
    out["parcel_id"] = out["parcel_id"].astype(str)
    # Whether each is served by a private system, and whether its private_system column says so or the profile's
    # reading (notices.private_system_assumed) takes it: a letter asserts to the owner only what the column says.
    out["private_system"], out["private_system_said"] = private_system(mandated, profile, said=True)
    deadline = notice_period.ends(notice_date)
    out["deadline"] = deadline
    out["section"] = profile.mandate.notice_period_days.section
    out["notice_type"] = "connection"
    out["notice_reason"] = notice_reason
    out["issued_date"] = notice_date
    out["hazard"] = None
    held: list[pd.DataFrame] = []
    chosen = frozenset(results["parcel_id"].astype(str).str.strip()[taken]) if choice else None
    if choice and (absent := set(choice.parcel_ids) - set(out["parcel_id"])):
        held.append(_not_due_of_list(absent, results, is_mandated, "chosen by its ID"))
    if isinstance(hazards, Mapping):
        named = out["parcel_id"].isin(hazards)
        out["hazard"] = out["parcel_id"].map(hazards)
        if absent := set(hazards) - set(out["parcel_id"]) - (set(choice.parcel_ids) if choice else set()):
            if chosen is not None and (other := (absent - chosen) & set(results["parcel_id"].astype(str))):
                held.append(pd.DataFrame({"parcel_id": sorted(other), "why": _NOT_CHOSEN}))
                absent -= other
            if absent:
                held.append(_not_due_of_list(absent, results, is_mandated, "named in the hazard list"))
        out = out[named]
    elif hazards:
        out["hazard"] = hazards
    allowed = profile.notices.private_system_reasons
    if allowed.value and notice_reason not in allowed.value:
        private = out["private_system"].to_numpy(bool)
        held.append(
            pd.DataFrame(
                {
                    "parcel_id": out.loc[private, "parcel_id"],
                    "why": f'{allowed.section}: served by a private sewage disposal system, and "{allowed.quote}"',
                }
            )
        )
        out = out[~private]
    only = profile.notices.private_system_only
    if only.value:  # Wappinger § 196-17E: the duty binds a property served by a private system, and no other
        served = out["private_system"].to_numpy(bool)
        held.append(
            pd.DataFrame(
                {
                    "parcel_id": out.loc[~served, "parcel_id"],
                    "why": f"{only.section}: not served by a private sewage disposal system (its private_system "
                    f'column says no), and the duty to connect binds only "{only.quote}"',
                }
            )
        )
        out = out[served]
    out, unmailable = _mailable(out, printable, overflow)
    held += unmailable
    held_frame = pd.concat(held, ignore_index=True) if held else pd.DataFrame(columns=["parcel_id", "why"])
    return NoticePlan(
        due=out.sort_values("parcel_id").reset_index(drop=True),
        held=held_frame.sort_values("parcel_id").reset_index(drop=True),
        period=notice_period,
        notice_date=notice_date,
        deadline=deadline,
        reason=notice_reason,
        chosen=chosen,
    )


_NOT_CHOSEN = "named in the hazard list but not among the parcels chosen for this batch"


def _not_due_of_list(
    named: AbstractSet[str], results: pd.DataFrame, is_mandated: np.ndarray, listed: str
) -> pd.DataFrame:
    """The parcels a hazard list (or a choice, ``listed`` saying which) names that are not due a notice
    (``parcel_id``, ``why``), each told apart: an ID
    no parcel of the analysed layers has (a typo, or a leading zero a spreadsheet dropped: the clerk checks the ID),
    a parcel not mandated to connect (its status in the analysis), and a mandated one the register already has a
    notice for, or records connected or exempt. All three were "not mandated, or already noticed", so a mistyped ID
    read as a parcel that needed no notice."""
    ids = results["parcel_id"].astype(str)
    status = pd.Series(results["status"].astype(str).to_numpy(), index=ids.to_numpy())
    status = status[~status.index.duplicated(keep="first")]
    absent = pd.Series(sorted(named), dtype=object)
    why = np.select(
        [~absent.isin(status.index).to_numpy(), absent.isin(set(ids[is_mandated])).to_numpy()],
        [
            f"{listed} but not a parcel of this town's layers (no parcel has this ID): check the ID "
            "against the parcels layer (a typo, or a leading zero a spreadsheet dropped)",
            f"{listed} but the register already holds its notice (open, or being prepared), or "
            "records it connected or exempt",
        ],
        default=f"{listed} but not mandated to connect (the analysis finds it "
        + absent.map(status).fillna("").astype(str)
        + ")",
    )
    return pd.DataFrame({"parcel_id": absent.to_numpy(), "why": why})


# What no letter prints, whatever its font: control characters (a NUL cut an owner's name at it when the store was
# written, and the letter went to "A"; a BEL or ESC prints nothing or a box), invisible format characters (direction
# marks such as U+202E turn the text around; zero-width spaces and joiners), private-use and unassigned code points.
# Line breaks and tabs are spacing, not among them: every mailing field prints them as one space.
_SPACING = "\t\n\v\f\r\x85\u2028\u2029"
# Right-to-left scripts (Hebrew, Arabic, Syriac, Thaana, N'Ko ...): the letters are laid out left to right, one glyph
# after another, so such a name would print backwards and unjoined even where the font has its letters.
_RIGHT_TO_LEFT = frozenset({"R", "AL"})
# Where a US ZIP code is checked: an address with no state, or one of the USPS's state, territory and armed-forces
# (APO/FPO) codes, or a state's name. Any other state field ("ON", "ONTARIO", "ENGLAND") is an address abroad, whose
# postcode is printed as the owner record writes it.
_US_CODES = (
    "AL AK AZ AR CA CO CT DE DC FL GA HI ID IL IN IA KS KY LA ME MD MA MI MN MS MO MT NE NV NH NJ NM NY NC ND OH OK OR "
    "PA RI SC SD TN TX UT VT VA WA WV WI WY PR VI GU AS MP FM MH PW AA AE AP"
)
_US_NAMES = (
    "Alabama,Alaska,Arizona,Arkansas,California,Colorado,Connecticut,Delaware,District of Columbia,Florida,Georgia,"
    "Hawaii,Idaho,Illinois,Indiana,Iowa,Kansas,Kentucky,Louisiana,Maine,Maryland,Massachusetts,Michigan,Minnesota,"
    "Mississippi,Missouri,Montana,Nebraska,Nevada,New Hampshire,New Jersey,New Mexico,New York,North Carolina,"
    "North Dakota,Ohio,Oklahoma,Oregon,Pennsylvania,Rhode Island,South Carolina,South Dakota,Tennessee,Texas,Utah,"
    "Vermont,Virginia,Washington,West Virginia,Wisconsin,Wyoming,Puerto Rico,Virgin Islands,Guam,American Samoa,"
    "Northern Mariana Islands"
)
# The older abbreviations an assessment roll keeps ("Mass.", "Calif.", "N. Y."), and the country itself, written in
# the state field: read as US addresses, their ZIP codes checked and their letters sent by certified mail. Read as
# abroad, an owner in Fort Plain whose roll said "N. Y." was sent "REGISTERED MAIL (INTERNATIONAL)" (a tester).
_US_OLD = (
    "ALA ARIZ ARK CAL CALIF COLO CONN DEL FLA ILL IND KAN KANS MASS MICH MINN MISS MONT NEB NEBR NEV OKLA ORE OREG "
    "PENN PENNA TENN TEX WASH WVA WISC WIS WYO US USA"
)
US_STATES = frozenset(_US_CODES.split()) | frozenset(_US_OLD.split())
US_STATE_NAMES = frozenset(name.upper() for name in _US_NAMES.split(",")) | {
    "UNITED STATES",
    "UNITED STATES OF AMERICA",
    "WASHINGTON DC",
    "WASHINGTON D C",
    "WEST VA",
}
US_ZIP = re.compile(r"\d{5}(?:-\d{4})?")
# How many of a kind the reason names: enough to find them in the owner record, never a wall of them.
_SHOWN = 12


# What a held-back letter's reason says, for the owner's letter and for the occupant's at the site address.
# Field values that stand for an empty field, not a name or an address (read in lower case).
PLACEHOLDER_WORDS = ("none", "null", "nan", "<null>", "n/a", "#n/a")
_TO_OWNER = {
    "missing": "no owner name or no mailing address (street, and city or ZIP) on record: a letter cannot be "
    "addressed; complete the owner record and give notice again",
    "complete": "complete the owner record and give notice again",
    "what": "the owner's name or mailing address",
    "correct": "correct the owner record (the name in Latin letters, as the assessment roll writes it) and give "
    "notice again",
    "zip": "the mailing ZIP code ",
    "zip_fix": ": correct it in the owner record and give notice again (an owner abroad: give the province or "
    "country in the mailing state, and the postcode is printed as written)",
    "fit": "the owner's name and mailing address do not fit the mail: ",
    "shorten": ". Shorten them in the owner record (as the post office abbreviates: ST, AVE, APT, PO BOX) and give "
    "notice again",
}
_TO_SITE = {
    "missing": "no site address (street, and city or ZIP) in the parcels layer: the letter cannot be addressed; "
    "complete the parcel's site address",
    "what": "the site address",
    "complete": "complete the parcel's site address in the parcels layer",
    "correct": "correct the parcel's site address in the parcels layer",
    "zip": "the site ZIP code ",
    "zip_fix": ": correct the parcel's site address in the parcels layer",
    "fit": "the site address does not fit the mail: ",
    "shorten": ". Shorten it in the parcels layer (as the post office abbreviates: ST, AVE, APT)",
}
OCCUPANT = "Occupant"
_OCCUPANT_HELD = f"the letter to {OCCUPANT} at the site address is not written (the owner's letter is): "


def _mailable(
    due: pd.DataFrame,
    printable: AbstractSet[str] | None = None,
    overflow: Callable[[Sequence[str], Sequence[str]], str] | None = None,
    *,
    at_site: bool = False,
) -> tuple[pd.DataFrame, list[pd.DataFrame]]:
    """The notices a letter can be addressed and printed for, and those held back with why: every letter sewerplan
    writes goes through this one check (connection and violation letters to the owner, ``occupant_letters`` to the
    site; ``at_site`` words its reasons for the site address).

    A notice starts its deadline when it is mailed: one with no owner name or no mailing address (a street line
    and a city or ZIP) cannot be, and one whose owner or address holds characters the letter cannot print would
    reach nobody legibly. Both are held back for the clerk to complete or correct the owner record. ``printable``
    is the set of characters the letters' font draws (``layers.fonts.PRINTABLE``, given by the caller: analysis
    never reads a font); without it only what no letter prints is held back (``_unprintable``). ``overflow``
    says what of an envelope's name and address lines the label or the letter would cut or hide (a 200-character
    name, a 400-character street): such a letter is held back too, for the clerk to shorten the owner record.
    """

    def text(column: str) -> pd.Series:
        values = due[column] if column in due.columns else pd.Series(None, index=due.index, dtype=object)
        return values.astype(object).where(values.notna(), "").astype(str).str.strip()

    name, street = text("owner_name"), text("mail_address")
    place = text("mail_city") + text("mail_zip")
    missing = (name == "") | (street == "") | (place == "")
    # "None", "null", "nan": an export's word for an empty field, printed on the letter as if a name or a city
    fields = [text(c) for c in ("owner_name", "mail_address", "mail_city", "mail_state", "mail_zip")]
    word = pd.Series("", index=due.index, dtype=object)
    for value in reversed(fields):  # the first field holding one is named
        word = value.where(value.str.lower().isin(PLACEHOLDER_WORDS), word)
    placeholder = ~missing & (word != "")
    missing = missing | placeholder
    shown = name + " " + street + " " + text("mail_city") + " " + text("mail_state") + " " + text("mail_zip")
    odd = shown.map(lambda t: _unprintable(t, printable))
    unprintable = ~missing & (odd != "")
    zip_code = text("mail_zip")
    bad_zip = (
        ~missing & ~unprintable & (zip_code != "") & in_us(text("mail_state")) & ~zip_code.map(us_zip).astype(bool)
    )
    cut = pd.Series("", index=due.index, dtype=object)
    fine = ~(missing | unprintable | bad_zip)
    if overflow is not None and fine.any():
        names, addresses = envelope_lines(due[fine.to_numpy()])
        cut[fine] = [overflow(n, a) for n, a in zip(names, addresses, strict=True)]
    too_long = cut != ""
    say = _TO_SITE if at_site else _TO_OWNER
    start = _OCCUPANT_HELD if at_site else ""
    whys = (
        (missing & ~placeholder, start + say["missing"]),
        (
            placeholder,
            start
            + say["what"]
            + " holds "
            + word.map(repr)
            + ", a spreadsheet's or database's word for an empty field, where a name or an address should be: "
            + say["complete"],
        ),
        (
            unprintable,
            start + say["what"] + " holds characters the letter cannot print (" + odd + "): " + say["correct"],
        ),
        (
            bad_zip,
            start
            + say["zip"]
            + zip_code.map(repr)
            + " is not a US ZIP code (5 digits, or ZIP+4 as 12345-6789)"
            + say["zip_fix"],
        ),
        (too_long, start + say["fit"] + cut + say["shorten"]),
    )
    held = [
        pd.DataFrame({"parcel_id": due.loc[rows, "parcel_id"], "why": why if isinstance(why, str) else why[rows]})
        for rows, why in whys
        if rows.any()
    ]
    return due[~(missing | unprintable | bad_zip | too_long)], held


def occupant_letters(
    notices: pd.DataFrame,
    *,
    printable: AbstractSet[str] | None = None,
    overflow: Callable[[Sequence[str], Sequence[str]], str] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The notices that also get a letter to "Occupant" at the site address (their owner mails elsewhere), as
    ``mailing_list(occupants=...)`` takes them, and those whose occupant letter is held back (``parcel_id``,
    ``why``), by the same check as every owner's letter (``_mailable``, given the font's characters and the
    envelope's measure as ``plan_notices`` is). The owner's letter covers the notice either way.

    Examples
    --------
    >>> notices = pd.DataFrame({"parcel_id": ["A", "B", "C"], "owner_name": "ROE ANN", "mail_address": "9 Far Rd",
    ...     "mail_city": "Albany", "mail_zip": "12207", "site_address": ["1 Main St", "2 Main St", "9 Far Rd"],
    ...     "site_city": ["Fort Plain", "Fort Plain", "Albany"], "site_zip": ["13339", "5201", "12207"]})
    >>> occupants, held = occupant_letters(notices)
    >>> occupants["parcel_id"].tolist(), held["parcel_id"].tolist()  # C: the owner lives there
    (['A'], ['B'])
    """

    def column(name: str) -> pd.Series:
        return notices[name] if name in notices.columns else pd.Series(None, index=notices.index, dtype=object)

    site = notices.assign(
        owner_name=OCCUPANT,
        mail_address=column("site_address"),
        mail_city=column("site_city"),
        mail_state=column("site_state"),
        mail_zip=column("site_zip"),
    )
    away = (address_key(notices.assign(owner_name="")) != address_key(site.assign(owner_name=""))).to_numpy()
    ok, held = _mailable(site[away], printable, overflow, at_site=True)
    held_frame = pd.concat(held, ignore_index=True) if held else pd.DataFrame(columns=["parcel_id", "why"])
    return notices.loc[ok.index], held_frame


def envelope_lines(frame: pd.DataFrame) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]]]:
    """Each notice's name lines and address lines as its mailing-list row will have them (``mailing_list``): the
    owner name in two lines (``split_name``), the street in one or two (``address_lines``), and the city line.

    Examples
    --------
    >>> names, addresses = envelope_lines(pd.DataFrame({"owner_name": ["ROE ANN"],
    ...     "mail_address": ["12 Elm St\\nApt 2"], "mail_city": ["Fort Plain"], "mail_state": ["NY"],
    ...     "mail_zip": ["13339"]}))
    >>> names, addresses
    ([('ROE ANN',)], [('12 Elm St', 'Apt 2', 'Fort Plain, NY 13339')])
    """

    def column(name: str) -> pd.Series:
        return frame[name] if name in frame.columns else pd.Series("", index=frame.index, dtype=object)

    first, second = split_name(column("owner_name"))
    street_1, street_2 = address_lines(column("mail_address"))
    parts = [address_part(p) for p in (first, second, street_1, street_2)]
    city, country = city_and_country_lines(*(address_part(column(c)) for c in ("mail_city", "mail_state", "mail_zip")))
    names = [tuple(t for t in pair if t) for pair in zip(parts[0], parts[1], strict=True)]
    addresses = [tuple(t for t in four if t) for four in zip(parts[2], parts[3], city, country, strict=True)]
    return names, addresses


def in_us(state: pd.Series) -> pd.Series:
    """Whether each mailing address is in the US, by its state field: empty (the roll names no state), a USPS state,
    territory or APO/FPO code ("NY", "N.Y.", "AE") or a state's name; anything else is an address abroad.

    Examples
    --------
    >>> in_us(pd.Series(["NY", "n.y.", "", "New York", "ON", "ENGLAND"])).tolist()
    [True, True, True, True, False, False]
    >>> in_us(pd.Series(["N. Y.", "Mass.", "Calif.", "USA", "New York State", "Washington, D.C.", "Ontario"])).tolist()
    [True, True, True, True, True, True, False]
    """
    words, code = _state_keys(state)
    name = words.str.removesuffix(" STATE")  # "NEW YORK STATE"
    return (words == "") | code.isin(US_STATES) | name.isin(US_STATE_NAMES)


def _state_keys(state: pd.Series) -> tuple[pd.Series, pd.Series]:
    """A state field as it is looked up: its words in capitals without dots or commas ("N. Y." is "N Y", "Washington,
    D.C." is "WASHINGTON D C"), and those words run together as a code ("NY"). One reading for the US's states and
    Canada's provinces alike."""
    words = address_part(state).str.upper().str.replace(r"[.,]", " ", regex=True).str.split().str.join(" ")
    words = words.fillna("")
    return words, words.str.replace(" ", "", regex=False)


def mail_service(state: pd.Series) -> pd.Series:
    """How a letter to each mailing address is served, by its state field (``in_us``): certified mail in the US
    (``SERVED_BY``), registered mail (international) abroad (``SERVED_ABROAD``), USPS Certified Mail being for US
    destinations only.

    Examples
    --------
    >>> mail_service(pd.Series(["NY", "", "ON"])).tolist()
    ['certified mail', 'certified mail', 'registered mail (international)']
    """
    return pd.Series(np.where(in_us(state), SERVED_BY, SERVED_ABROAD), index=state.index, dtype=object)


def us_zip(code: str) -> bool:
    """Whether ``code`` is written as a US ZIP code: 5 digits, or ZIP+4 as 12345-6789 (spaces around aside).

    >>> [us_zip(z) for z in ("13339", "13339-1234", "013339", "5201", "133391234", "K1A 0B1")]
    [True, True, False, False, False, False]
    """
    return US_ZIP.fullmatch(str(code).strip()) is not None


def _unprintable(text: str, printable: AbstractSet[str] | None = None) -> str:
    """What in ``text`` a letter cannot print, by kind, each character shown (a code point where it is invisible);
    "" if none.

    Control characters, invisible format characters (direction marks included), private-use and unassigned code
    points never print; U+FFFD stands for a character that could not be read (a NUL where the layer was loaded, a
    byte of another encoding), and printed it would leave the name or address wrong; right-to-left letters cannot
    be laid out; and, given ``printable`` (the font's characters), any other character outside it would print as a
    black box. Line breaks and tabs are spacing (``_SPACING``).

    Examples
    --------
    >>> _unprintable("A\\x00NN ROE")
    'control characters: U+0000'
    >>> _unprintable("Łukasz Żółć", frozenset("ukasz ó"))
    "characters the letters' font lacks: ć Ł ł Ż"
    """
    kinds: dict[str, set[str]] = {}
    for c in set(text):
        if c in _SPACING or c == " ":
            continue
        category = unicodedata.category(c)
        if c == UNREADABLE:
            kind = "characters that could not be read (U+FFFD)"
        elif category == "Cc":
            kind = "control characters"
        elif category == "Cf":
            kind = "invisible marks"
        elif category in ("Co", "Cs", "Cn"):
            kind = "code points with no character"
        elif unicodedata.bidirectional(c) in _RIGHT_TO_LEFT:
            kind = "right-to-left text a letter cannot lay out"
        elif printable is not None and c not in printable:
            kind = "characters the letters' font lacks"
        else:
            continue
        kinds.setdefault(kind, set()).add(c)
    parts = []
    for kind, chars in kinds.items():
        visible = kind in ("right-to-left text a letter cannot lay out", "characters the letters' font lacks")
        if kind.startswith("characters that could not be read"):
            parts.append(kind)
            continue
        named = [c if visible else f"U+{ord(c):04X}" for c in sorted(chars)]
        more = f" and {len(named) - _SHOWN} more" if len(named) > _SHOWN else ""
        parts.append(f"{kind}: {' '.join(named[:_SHOWN])}{more}")
    return "; ".join(sorted(parts))


def due_notices(results: pd.DataFrame, **options) -> pd.DataFrame:
    """The notices due, as ``plan_notices(...).due``."""
    return plan_notices(results, **options).due


def _hazards(profile: Profile, reason: str | None, hazard) -> str | Mapping[str, str] | None:
    if isinstance(hazard, str):
        hazard = hazard.strip() or None
    if isinstance(hazard, Mapping):
        hazard = {str(k): str(v).strip() for k, v in hazard.items()}
        blank = sorted(k for k, v in hazard.items() if not v)
        if blank:
            raise AnalysisError(f"The hazard list names no hazard for parcel(s) {', '.join(blank[:10])}.")
    if reason == HAZARD_REASON and not hazard:
        rule = profile.notices.private_system_reasons
        raise AnalysisError(
            f'A notice "to eliminate a public health hazard" ({rule.section}) must say which hazard: name it for '
            "every parcel, or give a list of parcels and their hazards.",
            fix=Fix("hazard"),
        )
    if hazard and reason != HAZARD_REASON:
        raise AnalysisError(
            "A hazard is named only with a notice given to eliminate a public health hazard "
            f"(the reason {HAZARD_REASON}); this notice's reason is {reason or 'none'}."
        )
    return hazard


# -- New York legal holidays (a deadline on one is flagged; the town decides) ---------------------------------------

# New York General Construction Law § 24: the public holidays, with the next day observed when one falls on a Sunday
# (Flag Day excepted), and each general election day (the Tuesday after the first Monday in November).
_FIXED = {(1, 1): "New Year's Day", (2, 12): "Lincoln's Birthday", (6, 19): "Juneteenth", (7, 4): "Independence Day"}
_FIXED |= {(11, 11): "Veterans' Day", (12, 25): "Christmas Day"}


def _nth_weekday(year: int, month: int, weekday: int, n: int) -> dt.date:
    first = dt.date(year, month, 1)
    day = first + dt.timedelta(days=(weekday - first.weekday()) % 7)
    if n > 0:
        return day + dt.timedelta(weeks=n - 1)
    last = dt.date(year + (month == 12), month % 12 + 1, 1) - dt.timedelta(days=1)
    return last - dt.timedelta(days=(last.weekday() - weekday) % 7)


def ny_holidays(year: int) -> dict[dt.date, str]:
    """New York's public holidays in ``year`` (General Construction Law § 24), observed days included.

    Examples
    --------
    >>> ny_holidays(2027)[dt.date(2027, 5, 31)]
    'Memorial Day'
    >>> ny_holidays(2027)[dt.date(2027, 7, 5)]
    'Independence Day (observed)'
    """
    days = {dt.date(year, m, d): name for (m, d), name in _FIXED.items()}
    days[_nth_weekday(year, 1, 0, 3)] = "Martin Luther King, Jr. Day"
    days[_nth_weekday(year, 2, 0, 3)] = "Washington's Birthday"
    days[_nth_weekday(year, 5, 0, -1)] = "Memorial Day"
    days[_nth_weekday(year, 6, 6, 2)] = "Flag Day"
    days[_nth_weekday(year, 9, 0, 1)] = "Labor Day"
    days[_nth_weekday(year, 10, 0, 2)] = "Columbus Day"
    days[_nth_weekday(year, 11, 0, 1) + dt.timedelta(days=1)] = "General Election Day"
    days[_nth_weekday(year, 11, 3, 4)] = "Thanksgiving Day"
    observed = {
        day + dt.timedelta(days=1): f"{name} (observed)"
        for day, name in days.items()
        if day.weekday() == 6 and name != "Flag Day"
    }
    return days | observed


def deadline_flag(day: dt.date | None) -> str | None:
    """ "Saturday", "Sunday" or the holiday's name when ``day`` is not a business day in New York; else None."""
    if day is None:
        return None
    holiday = ny_holidays(day.year).get(day)
    weekend = {5: "Saturday", 6: "Sunday"}.get(day.weekday())
    parts = [p for p in (weekend, f"{holiday}, a New York public holiday" if holiday else None) if p]
    return " and ".join(parts) or None


def business_deadline(day: dt.date) -> dt.date:
    """The day an act due on ``day`` may still be done: the next business day when ``day`` is a Saturday, a Sunday or
    a New York public holiday (General Construction Law § 25-a).

    Examples
    --------
    >>> business_deadline(dt.date(2027, 5, 30))  # a Sunday, then Memorial Day
    datetime.date(2027, 6, 1)
    >>> business_deadline(dt.date(2027, 6, 2))
    datetime.date(2027, 6, 2)
    """
    while deadline_flag(day):
        day += dt.timedelta(days=1)
    return day


def overdue_before(today: dt.date) -> dt.date:
    """The first deadline not yet passed on ``today``: a deadline before this day is overdue, one on or after it is
    not (General Construction Law § 25-a, by ``business_deadline``). ``today`` itself, unless the days just
    before it are a weekend or public holidays, whose deadlines run to ``today`` or later.

    Examples
    --------
    >>> overdue_before(dt.date(2027, 6, 1))  # Sunday 30 May and Memorial Day run to Tuesday 1 June
    datetime.date(2027, 5, 29)
    >>> overdue_before(dt.date(2027, 6, 2))
    datetime.date(2027, 6, 2)
    """
    day = today
    while business_deadline(day - dt.timedelta(days=1)) >= today:
        day -= dt.timedelta(days=1)
    return day


def past_deadline(overdue: pd.DataFrame, today: dt.date) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The notices (register rows with a ``deadline`` before ``today``) whose deadline has passed on ``today`` under
    General Construction Law § 25-a, and those whose deadline fell on a weekend or public holiday and so runs to a
    business day not yet past (``parcel_id``, ``notice_id``, ``deadline``, ``runs_to``)."""
    days = {d: business_deadline(d) for d in overdue["deadline"].unique()}  # a batch's notices share one deadline
    runs_to = overdue["deadline"].map(days).astype(object)
    past = (overdue["deadline"].astype(object) < overdue_before(today)).to_numpy(dtype=bool)
    moved = overdue.loc[~past, ["parcel_id", "notice_id", "deadline"]].assign(runs_to=runs_to[~past])
    return overdue.loc[past], moved.reset_index(drop=True)


# -- mailing list -------------------------------------------------------------------------------------------------


def address_key(frame: pd.DataFrame) -> pd.Series:
    """A mailing address as a comparable key: upper case, punctuation and repeated spaces dropped, ZIP5."""
    blank = pd.Series("", index=frame.index)

    def clean(col: str) -> pd.Series:
        text = frame[col].fillna("").astype(str) if col in frame.columns else blank
        text = text.str.upper().str.replace(r"[^\w\s]", " ", regex=True)
        return text.str.replace(r"\s+", " ", regex=True).str.strip()

    zip5 = frame["mail_zip"].fillna("").astype(str) if "mail_zip" in frame.columns else blank
    zip5 = zip5.str.extract(r"(\d{5})", expand=False).fillna("")
    return (
        clean("owner_name")
        + "|"
        + clean("mail_address")
        + "|"
        + clean("mail_city")
        + "|"
        + clean("mail_state")
        + "|"
        + zip5
    )


def split_name(names: pd.Series, width: int = NAME_LINE_CHARS) -> tuple[pd.Series, pd.Series]:
    """Owner names as two lines: the first at most ``width`` characters, broken at a space, the rest on the second.

    Examples
    --------
    >>> first, second = split_name(pd.Series(["SMITH JOHN", "VAN DER BERG-WILLIAMSON JOHNATHAN & MARGARET TRUST"]))
    >>> first.tolist(), second.tolist()
    (['SMITH JOHN', 'VAN DER BERG-WILLIAMSON'], ['', 'JOHNATHAN & MARGARET TRUST'])
    """
    text = address_part(names)
    pattern = re.compile(rf"^(.{{1,{width}}})(?:\s+(.*))?$")
    parts = text.map(lambda s: pattern.match(s) if len(s) > width else None)
    first = text.where(parts.isna(), parts.map(lambda m: m.group(1) if m else ""))
    second = parts.map(lambda m: (m.group(2) or "") if m else "")
    # No space within the first ``width`` characters: break the word itself.
    unbroken = (first.str.len() > width) & (second == "")
    first, second = first.where(~unbroken, text.str[:width]), second.where(~unbroken, text.str[width:])
    return first, second


def mailing_list(
    notices: pd.DataFrame,
    *,
    per_parcel: bool = False,
    occupant: bool = False,
    occupants: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Rows for mail merge in mailing order (ZIP, then name): one per owner mailing address listing all its parcels
    and notice IDs, or one per parcel. Each row is one envelope, one label and one letter (``letter_file``).

    ``occupants`` (from ``occupant_letters``): an extra row "Occupant" at the site address of each. ``occupant``
    alone takes ``occupant_letters(notices)``: every parcel whose owner mails elsewhere, less those whose site
    address no letter could print (without the font's characters and the envelope's measure, which the caller has).
    """
    if notices.empty:
        return pd.DataFrame(columns=list(MAILING_COLUMNS))
    frame = notices.copy()
    if "notice_id" not in frame.columns:
        frame["notice_id"] = ""
    frame["key"] = address_key(frame) if not per_parcel else frame["parcel_id"].astype(str)
    grouped = frame.groupby("key", sort=False)

    def joined(column: str) -> pd.Series:
        return grouped[column].agg(lambda s: "; ".join(s.fillna("").astype(str)))

    first, second = split_name(grouped["owner_name"].first())
    street_1, street_2 = address_lines(grouped["mail_address"].first())
    rows = pd.DataFrame(
        {
            "name_line_1": first,
            "name_line_2": second,
            "address_line_1": street_1,
            "address_line_2": street_2,
            "city": grouped["mail_city"].first().fillna("").astype(str),
            "state": grouped["mail_state"].first().fillna("").astype(str),
            "zip": grouped["mail_zip"].first().fillna("").astype(str),
            "parcel_ids": joined("parcel_id"),
            "notice_ids": joined("notice_id"),
            "site_addresses": joined("site_address"),
            "deadline": grouped["deadline"].min(),
            "section": grouped["section"].first(),
            "notices": grouped.size(),
        }
    ).reset_index(drop=True)
    if occupants is None and occupant:
        occupants = occupant_letters(frame)[0]
    if occupants is not None and not occupants.empty:
        extra = occupants.assign(notice_id=occupants.get("notice_id", ""))

        def site_column(name: str) -> pd.Series:
            return extra.get(name, pd.Series("", index=extra.index)).fillna("").astype(str)

        site_1, site_2 = address_lines(site_column("site_address"))
        occupants = pd.DataFrame(
            {
                "name_line_1": OCCUPANT,
                "name_line_2": "",
                "address_line_1": site_1,
                "address_line_2": site_2,
                "city": site_column("site_city"),
                "state": site_column("site_state"),
                "zip": site_column("site_zip"),
                "parcel_ids": extra["parcel_id"].astype(str),
                "notice_ids": extra["notice_id"].fillna("").astype(str),
                "site_addresses": extra["site_address"].fillna("").astype(str),
                "deadline": extra["deadline"],
                "section": extra["section"],
                "notices": 1,
            }
        )
        rows = pd.concat([rows, occupants], ignore_index=True)
    order = rows["zip"].str.extract(r"(\d{5})", expand=False).fillna("99999")
    rows = rows.assign(_zip=order, _name=rows["name_line_1"].str.upper()).sort_values(
        ["_zip", "_name", "address_line_1", "parcel_ids"], kind="stable"
    )
    rows = rows.drop(columns=["_zip", "_name"]).reset_index(drop=True)
    for column in (
        "name_line_1",
        "name_line_2",
        "address_line_1",
        "address_line_2",
        "city",
        "state",
        "zip",
        "site_addresses",
    ):  # each one line, as the CSV, the letter and the label all print it
        rows[column] = address_part(rows[column])
    # The address's last lines, worded once here: the letter, the labels and the preview all print these columns.
    rows["city_line"], rows["country_line"] = city_and_country_lines(rows["city"], rows["state"], rows["zip"])
    rows["mailing_no"] = np.arange(1, len(rows) + 1)
    rows["letter_file"] = letter_files(rows["mailing_no"])
    # How each envelope goes, beside the column its number is typed into: certified mail in the US, registered mail
    # (international) abroad, as its letter's mail line says (``mail_service``).
    rows["mail_service"] = mail_service(rows["state"])
    rows["certified_article_no"] = ""
    return rows[list(MAILING_COLUMNS)]


# What may be left at either end of an address part: spaces, and separators a record carries over from a joined
# field ("MANCHESTER," with the state in a column of its own, "12 Elm St;").
_DANGLING = " \t,;"
# A line break in a record (CR LF from a spreadsheet cell, LF, the Unicode line and paragraph separators), with the
# spaces around it; and any run of whitespace at all, which a mailing field prints as one space.
_LINE_BREAK = r"\s*[\n\r\v\f\x85\u2028\u2029]+\s*"
_BREAKS = r"\s+"


def address_part(values: pd.Series) -> pd.Series:
    """An address part as one line of text: every run of spaces, tabs and line breaks one space (a CSV cell of two
    lines broke mail merge), composed characters (NFC: "Z" and a combining dot are "Ż", as the font draws it), and no
    dangling separator or space at either end ("" for none).

    Examples
    --------
    >>> address_part(pd.Series(["MANCHESTER, ", None, " VT ", ",", "FORT\\r\\nPLAIN"])).tolist()
    ['MANCHESTER', '', 'VT', '', 'FORT PLAIN']
    """
    text = values.astype(object).where(values.notna(), "").astype(str)
    text = text.map(lambda t: unicodedata.normalize("NFC", t)).str.replace(_BREAKS, " ", regex=True)
    return text.str.strip(_DANGLING)


def address_lines(street: pd.Series) -> tuple[pd.Series, pd.Series]:
    """A mailing street address as the mailing list's ``address_line_1`` and ``address_line_2``: the record's first
    line break starts the second line ("12 Elm St\\r\\nApt 2"), where the mail-merge column for it is; any further
    break is a space.

    Examples
    --------
    >>> first, second = address_lines(pd.Series(["12 Elm St\\r\\nApt 2\\nRear", "PO Box 12", None]))
    >>> first.tolist(), second.tolist()
    (['12 Elm St', 'PO Box 12', ''], ['Apt 2\\nRear', '', ''])
    """
    text = street.astype(object).where(street.notna(), "").astype(str).str.strip()
    parts = text.map(lambda t: [*re.split(_LINE_BREAK, t, maxsplit=1), ""][:2])
    return parts.str[0].astype(object), parts.str[1].astype(object)


def city_lines(city: pd.Series, state: pd.Series, zip_code: pd.Series) -> pd.Series:
    """The last line of each mailing address: "CITY, ST ZIP", with the comma only between a city and what follows.

    The parts are address parts (``address_part``: text, nothing dangling). One pass of string kernels over the
    list, not a Python call per address.

    Examples
    --------
    >>> parts = ["Manchester", "", "Manchester"], ["VT", "VT", ""], ["05254", "05254", ""]
    >>> city_lines(*(pd.Series(p) for p in parts)).tolist()
    ['Manchester, VT 05254', 'VT 05254', 'Manchester']
    """
    rest = state.str.cat(zip_code, sep=" ").str.strip()
    both = (city != "") & (rest != "")
    return city.where(~both, city + ", ").str.cat(rest)


# Canada's provinces and territories, by Canada Post's codes and their names (older codes PQ, NF too): an address
# abroad whose state field holds one is in CANADA, the line its envelope ends with.
_CANADA = frozenset(
    ["AB", "BC", "MB", "NB", "NL", "NS", "NT", "NU", "ON", "PE", "QC", "SK", "YT", "PQ", "NF"]
    + [
        "ALBERTA", "BRITISH COLUMBIA", "MANITOBA", "NEW BRUNSWICK", "NEWFOUNDLAND AND LABRADOR", "NEWFOUNDLAND",
        "NOVA SCOTIA", "NORTHWEST TERRITORIES", "NUNAVUT", "ONTARIO", "PRINCE EDWARD ISLAND", "QUEBEC", "QUÉBEC",
        "SASKATCHEWAN", "YUKON", "CANADA",
    ]
)  # fmt: skip


def city_and_country_lines(city: pd.Series, state: pd.Series, zip_code: pd.Series) -> tuple[pd.Series, pd.Series]:
    """The last lines of each mailing address: the city line (``city_lines``) and, for an address abroad (``in_us``),
    the country in capitals on a line of its own, as the post office asks of mail abroad: CANADA for a province or
    territory (the city line keeps it: "Kingston, ON K7L 3C4"), else what the state field holds, which abroad is the
    country ("London, SW1A 1AA", then "ENGLAND"). Empty in the US. Letters to Canada had ended at "Kingston, ON K7L
    3C4", with no country on them (a tester).

    Examples
    --------
    >>> parts = ["Kingston", "London", "Fort Plain"], ["ON", "England", "NY"], ["K7L 3C4", "SW1A 1AA", "13339"]
    >>> city, country = city_and_country_lines(*(pd.Series(p) for p in parts))
    >>> city.tolist(), country.tolist()
    (['Kingston, ON K7L 3C4', 'London, SW1A 1AA', 'Fort Plain, NY 13339'], ['CANADA', 'ENGLAND', ''])
    """
    abroad = ~in_us(state).to_numpy()
    key = state.fillna("").astype(str).str.upper().str.replace(".", "", regex=False).str.strip()  # as printed
    words, code = _state_keys(state)
    canada = abroad & (code.isin(_CANADA) | words.isin(_CANADA)).to_numpy()
    in_city = state.where(~abroad | (canada & (key != "CANADA")).astype(bool), "")
    country = np.where(canada, "CANADA", np.where(abroad, key, ""))
    return city_lines(city, in_city, zip_code), pd.Series(country, index=state.index, dtype=object)


def mailing_address(row: Mapping[str, str]) -> str:
    """A mailing-list row's address on one line, its parts separated by commas, none dangling; the last part is the
    row's ``city_line``, as the letter and the label print it.

    Examples
    --------
    >>> mailing_address({"address_line_1": "12 Elm St", "address_line_2": "", "city_line": "VT 05254"})
    '12 Elm St, VT 05254'
    """
    parts = (
        str(row.get("address_line_1") or "").strip(_DANGLING),
        str(row.get("address_line_2") or "").strip(_DANGLING),
        str(row["city_line"]),
        str(row.get("country_line") or ""),  # a list from before the column has none
    )
    return ", ".join(p for p in parts if p)


def letter_files(mailing_no: pd.Series) -> pd.Series:
    """Each letter's file in its batch folder, named by the mailing-list row that carries it ("letters/0007.pdf")."""
    return "letters/" + mailing_no.astype(str).str.zfill(4) + ".pdf"


# -- recording the mailing: article numbers -------------------------------------------------------------------------

# A USPS certified mail article number: 20 digits (the PS Form 3800 receipts before 2015, "7019 0700 0000 1234 5670")
# or 22 (the Intelligent Mail package barcode, "9589 0710 5270 0123 4567 81"), printed in groups of four. Its last
# digit is a check digit (USPS Publication 199, the IMpb specification: mod 10, the digits before it weighted 3 and 1
# from the right).
ARTICLE_DIGITS = (20, 22)
_USPS_WEIGHTS = (3, 1)
# A registered mail article number abroad: the UPU S10 form, two letters, eight digits, a check digit and the
# country's two letters ("RR 123 456 785 US"); the check digit is mod 11 over the eight, weighted 8 6 4 2 3 5 9 7.
S10 = re.compile(r"([A-Z]{2})(\d{8})(\d)([A-Z]{2})")
_S10_WEIGHTS = (8, 6, 4, 2, 3, 5, 9, 7)
# What a spreadsheet makes of a 20-digit number typed into a cell it reads as a number: 9.58907E+21, the digits lost.
_SPREADSHEET_NUMBER = re.compile(r"\d(?:[.,]\d+)?E\+?\d+", re.IGNORECASE)
MAILING_RECORD_COLUMNS = ("mailing_no", "notice_ids", "certified_article_no")


@dataclass(frozen=True)
class Mailing:
    """One mailing-list row given back with its certified mail article number: the envelope that served the notices
    it lists."""

    row: int  # the row as a spreadsheet shows the list given back: the header is row 1, the first envelope row 2
    mailing_no: int | None  # None: one notice named by its ID, issued before batches (no mailing-list row)
    notice_ids: tuple[str, ...]
    article_no: str  # as ``article_number`` keeps it: a certified mail number's digits, a registered one's 13
    occupant: bool  # the copy to the occupant at the site address, not the owner's letter
    list_name: str = "the mailing list"  # the file given back, as the clerk named it ("mailing-list.csv")

    @property
    def place(self) -> str:
        """Where the row is, as the clerk finds it in the spreadsheet: "row 4 of mailing-list.csv"."""
        return row_place(self.row, self.list_name)


def row_place(row: int | str, list_name: str) -> str:
    """A row of a mailing list given back, named as a spreadsheet shows it (the header is row 1), with the file, so
    every message naming a row points at the line the clerk sees.

    Examples
    --------
    >>> row_place(4, "mailing-list.csv")
    'row 4 of mailing-list.csv'
    """
    return f"row {row} of {list_name}"


def usps_check_digit(body: str) -> int:
    """The check digit of a USPS tracking number whose other digits are ``body`` (USPS Publication 199: from the
    right, the digits weighted 3, 1, 3, ...; the digit that brings the sum to a multiple of 10).

    Examples
    --------
    >>> usps_check_digit("958907105270012345678")
    1
    """
    total = sum(int(d) * _USPS_WEIGHTS[i % 2] for i, d in enumerate(reversed(body)))
    return (10 - total % 10) % 10


def s10_check_digit(serial: str) -> int:
    """The check digit of a UPU S10 article number's eight-digit serial (weights 8 6 4 2 3 5 9 7; 11 less the sum
    mod 11, 10 being 0 and 11 being 5).

    Examples
    --------
    >>> s10_check_digit("12345678"), s10_check_digit("00071758"), s10_check_digit("96633102")
    (5, 1, 0)
    """
    check = 11 - sum(int(d) * w for d, w in zip(serial, _S10_WEIGHTS, strict=True)) % 11
    return {10: 0, 11: 5}.get(check, check)


def article_number(text: str) -> str:
    """An article number as the register keeps it, from the receipt as typed: a certified mail number's digits
    (the receipt prints them in groups of four), or a registered mail number abroad as its 13 characters
    ("RR123456785US"). A number whose check digit does not match the rest was mistyped: refused.

    Examples
    --------
    >>> article_number(" 9589 0710 5270 0123 4567 81 ")
    '9589071052700123456781'
    >>> article_number("rr 123 456 785 us")
    'RR123456785US'
    >>> article_number("9589 0710 5270 0123 4567 89")
    Traceback (most recent call last):
    ...
    analysis.errors.AnalysisError: '9589 0710 5270 0123 4567 89' is not the number on any receipt: ...
    >>> article_number("9.58907E+21")
    Traceback (most recent call last):
    ...
    analysis.errors.AnalysisError: 9.58907E+21 is a number a spreadsheet rounded, not an article number: ...
    """
    raw = str(text).strip().lstrip("'")
    if _SPREADSHEET_NUMBER.fullmatch(raw):
        raise AnalysisError(
            f"{raw} is a number a spreadsheet rounded, not an article number: its digits are lost. Format the "
            "certified_article_no column as text, type the numbers again from the receipts and save the list as CSV."
        )
    compact = re.sub(r"[\s-]", "", raw)
    if compact[:2].isascii() and compact[:2].isalpha():
        return _s10_number(raw, compact.upper())
    digits = compact
    if not digits.isascii() or not digits.isdigit() or len(digits) not in ARTICLE_DIGITS:
        count = sum(c.isdigit() for c in digits)
        raise AnalysisError(
            f"{raw!r} is not a certified mail article number, which has 20 or 22 digits (the receipt prints them in "
            f"groups of four; spaces and hyphens may be kept), and this has {count} digit(s)"
            + (" and other characters" if count != len(digits) else "")
            + ". Copy it again from the receipt. (A letter abroad goes by registered mail, whose number is two "
            "letters, nine digits and two letters, as RR 123 456 785 US.)"
        )
    if usps_check_digit(digits[:-1]) != int(digits[-1]):
        raise AnalysisError(
            f"{raw!r} is not the number on any receipt: its last digit, the check digit, does not match the digits "
            "before it, so the number was probably mistyped. Type it again from the receipt."
        )
    return digits


def _s10_number(raw: str, compact: str) -> str:
    """A registered mail number abroad (UPU S10), its letters in capitals, or why it is not one."""
    found = S10.fullmatch(compact)
    if not found:
        raise AnalysisError(
            f"{raw!r} is not a registered mail article number, which is two letters, nine digits and two letters "
            "(the receipt prints it as RR 123 456 785 US; spaces may be kept). Copy it again from the receipt."
        )
    if s10_check_digit(found[2]) != int(found[3]):
        raise AnalysisError(
            f"{raw!r} is not the number on any receipt: its ninth digit, the check digit, does not match the eight "
            "before it, so the number was probably mistyped. Type it again from the receipt."
        )
    return compact


def article_service(number: str) -> str:
    """The mail service an article number belongs to: registered mail (international) for a UPU S10 number,
    certified mail for a USPS one (``article_number``'s forms).

    Examples
    --------
    >>> article_service("RR123456785US"), article_service("70190700000012345670")
    ('registered mail (international)', 'certified mail')
    """
    return SERVED_ABROAD if S10.fullmatch(str(number)) else SERVED_BY


def letter_service(served_by: str | None) -> str | None:
    """The mail service a register row's ``served_by`` says its letter went by, or None where it does not say (in
    person, or a letter from before the register recorded it).

    Examples
    --------
    >>> letter_service("registered mail (international)"), letter_service("certified mail"), letter_service("in person")
    ('registered mail (international)', 'certified mail', None)
    """
    said = "" if _absent(served_by) else str(served_by)
    for service in (SERVED_ABROAD, SERVED_BY):
        if said.startswith(service):
            return service
    return None


def wrong_service(number: str, service: str | None, *, copy: bool = False) -> str | None:
    """Why ``number`` cannot be the receipt of a letter served by ``service`` (``letter_service``), in the clerk's
    words, or None where it can: a certified mail number for a letter abroad (USPS Certified Mail is for US addresses
    only), or a registered mail number abroad for a letter to a US address. ``copy``: the copy to the occupant at
    the site address.

    Examples
    --------
    >>> wrong_service("70190700000012345670", "registered mail (international)").split(":")[0]
    'article number 7019 0700 0000 1234 5670 is a certified mail number, but the letter went abroad by registered mail (international), as its mail line says'
    >>> wrong_service("RR123456785US", "registered mail (international)") is None
    True
    """  # noqa: E501
    given = article_service(number)
    if service is None or given == service:
        return None
    if service == SERVED_ABROAD:
        return (
            f"article number {article_groups(number)} is a certified mail number, but the letter went abroad by "
            f"{SERVED_ABROAD}, as its mail line says: certified mail is for US addresses only. Type the number from "
            "its registered mail receipt (PS Form 3806), two letters, nine digits and two letters, as "
            "RR 123 456 785 US"
        )
    whose = "the copy to the occupant went to the site address" if copy else "the letter went to a US address"
    return (
        f"article number {article_groups(number)} is a registered mail number for a letter abroad, but {whose} by "
        f"{SERVED_BY}, as its mail line says. Type the number from its certified mail receipt (PS Form 3800), 20 or "
        "22 digits"
    )


def article_groups(number: str | None) -> str:
    """An article number as its receipt prints it, for reading beside it ("" for none): a certified mail number in
    groups of four, a registered mail number abroad as "RR 123 456 785 US".

    Examples
    --------
    >>> article_groups("9589071052700123456781"), article_groups("RR123456785US")
    ('9589 0710 5270 0123 4567 81', 'RR 123 456 785 US')
    """
    if not number or (not isinstance(number, str) and pd.isna(number)):
        return ""
    number = str(number)
    found = S10.fullmatch(number)
    if found:
        serial = found[2] + found[3]
        return " ".join((found[1], serial[:3], serial[3:6], serial[6:], found[4]))
    return " ".join(number[i : i + 4] for i in range(0, len(number), 4))


def service_words(
    served_by: str | None,
    article_no: str | None,
    served_on: dt.date | str | None = None,
    served_by_name: str | None = None,
    occupant_article_no: str | None = None,
) -> str:
    """How a register row says its notice was served, with the article number or that none is recorded yet ("" for a
    notice never served). Served in person: the day and who served it, and the mailed letter's number too where
    it was also mailed; the occupant's copy's number where one is recorded.

    Examples
    --------
    >>> service_words("certified mail", "70190700000012345670")
    'certified mail, article no. 7019 0700 0000 1234 5670'
    >>> service_words("certified mail", None)
    'certified mail; article no. not recorded'
    >>> service_words("registered mail (international)", "RR123456785US")
    'registered mail (international), article no. RR 123 456 785 US'
    >>> service_words("in person", "70190700000012345670", dt.date(2027, 6, 3), "J. Ruiz, code enforcement")
    'in person on 2027-06-03 by J. Ruiz, code enforcement; also certified mail, article no. 7019 0700 0000 1234 5670'
    """
    if _absent(served_by) or not served_by:
        return ""
    occupant = "" if _absent(occupant_article_no) or not occupant_article_no else occupant_article_no
    copy = f"; the occupant's copy, article no. {article_groups(occupant)}" if occupant else ""
    if served_by == SERVED_IN_PERSON:
        day = served_on.isoformat() if isinstance(served_on, dt.date) else str(served_on)
        said = f"{SERVED_IN_PERSON} on {day} by {served_by_name}"
        if not _absent(article_no) and article_no:
            said += f"; also {article_service(article_no)}, article no. {article_groups(article_no)}"
        return said + copy
    return _mail_words(served_by, article_no) + copy


def _mail_words(served_by: str, article_no: str | None) -> str:
    if not _absent(article_no) and article_no:
        return f"{served_by}, article no. {article_groups(article_no)}"
    return f"{served_by}; article no. not recorded" if letter_service(served_by) else str(served_by)


# -- service otherwise than by mail ----------------------------------------------------------------------------------

# None of the three laws names a method of service, and none provides for posting a notice on the property (Fort
# Plain's only "posted" notice is the one on an industrial user's bulletin board about accidental discharges): the
# other way a notice is served is by hand, to the owner, which the register records with the day and who served it
# (``Register.record_service``).
SERVED_IN_PERSON = "in person"
# The period each kind of notice runs, as the profile names it.
PERIOD_OF = {"connection": "mandate.notice_period_days", "violation": "notices.correction_period_days"}


@dataclass(frozen=True)
class ServiceRule:
    """What a notice's period is counted from under its profile's law, and the days its letter allowed for the
    mail."""

    section: str
    counted_from: str  # "notice" or "service"
    mail_days: int
    law_silent: bool = False  # the section sets no period (Wappinger § 196-17E): the town's resolution does
    left_to_town: bool = True  # the days are the town's to set (a resolution, a setting), so it may give more

    def no_extension(self, notice_type: str) -> bool:
        """A violation notice whose days the law sets itself (Wappinger § 196-22A's 10): its letter says the law
        "provides for no extension", so none is recorded (one was, without a word; a tester)."""
        return notice_type == "violation" and not self.left_to_town


def service_rule(profile_name: str | None, notice_type: str) -> ServiceRule | None:
    """The rule of the period a notice of ``notice_type`` runs under the bundled profile ``profile_name`` (the one its
    batch recorded), or None where it cannot be known: a notice issued before batches (no profile recorded), or a
    profile given as a file this machine does not hold by name.

    Examples
    --------
    >>> service_rule("wappinger", "violation")
    ServiceRule(section='§ 196-22A', counted_from='service', mail_days=5, law_silent=False, left_to_town=False)
    >>> service_rule("fort-plain", "connection").counted_from
    'notice'
    """
    from analysis.profiles import available_profiles, load_profile

    if not profile_name or profile_name not in available_profiles() or notice_type not in PERIOD_OF:
        return None
    try:
        profile = load_profile(profile_name)
    except ProfileError:
        return None
    section_name, key = PERIOD_OF[notice_type].split(".")
    rule: Rule = getattr(getattr(profile, section_name), key)
    counted_from = rule.counted_from or "notice"
    mail_days = rule.mail_days if counted_from == "service" else 0
    return ServiceRule(
        rule.section, counted_from, mail_days, bool(rule.town_setting), bool(rule.setting or rule.town_setting)
    )


def service_record_words(done: Mapping) -> str:
    """What recording a service did (``Register.record_service``), as the command line and the notices page both
    say it: the service, and what became of the deadline and why.

    Examples
    --------
    >>> service_record_words({"notice_id": "N-1", "parcel_id": "P1", "served_on": "2027-06-09", "corrected": False,
    ...                       "served_by_name": "J. Ruiz", "why": "The deadline stays 2027-06-16."})
    'Notice N-1 (parcel P1): recorded served in person on 2027-06-09 by J. Ruiz. The deadline stays 2027-06-16.'
    """
    verb = "corrected: served" if done.get("corrected") else "recorded served"
    return (
        f"Notice {done['notice_id']} (parcel {done['parcel_id']}): {verb} {SERVED_IN_PERSON} on {done['served_on']} "
        f"by {done['served_by_name']}. {done['why']}"
    )


def connection_day_problem(
    day: dt.date, *, today: dt.date, notice_id: str | None = None, notice_date: dt.date | None = None
) -> str | None:
    """Why ``day`` cannot be recorded as the day a parcel connected, or None: a day after ``today`` (a connection
    is recorded once it is made), or one before the date of the notice it is marked on (``notice_id``,
    ``notice_date``: a mistyped year, or a notice given to a parcel already connected, to withdraw instead).
    Recording a connection without a notice and marking a notice connected both ask it.

    Examples
    --------
    >>> connection_day_problem(dt.date(2027, 3, 2), today=dt.date(2027, 3, 5), notice_date=dt.date(2027, 3, 1)) is None
    True
    >>> connection_day_problem(dt.date(2027, 2, 6), today=dt.date(2027, 3, 5), notice_id="N-1",
    ...                        notice_date=dt.date(2027, 3, 1)).split(":")[0]
    'The day it connected, 2027-02-06, is before notice N-1 was given (2027-03-01)'
    """
    if day > today:
        return (
            f"The day it connected, {day.isoformat()}, is after today ({today.isoformat()}): record a connection once "
            "it is made, with the day it was made."
        )
    if notice_date is not None and day < notice_date:
        return (
            f"The day it connected, {day.isoformat()}, is before notice {notice_id} was given "
            f"({notice_date.isoformat()}): check the day; a notice given to a parcel already connected is withdrawn, "
            "and the connection recorded as one made without a notice."
        )
    return None


def deadline_after_service(
    rule: ServiceRule | None,
    *,
    notice_date: dt.date,
    letter_deadline: dt.date | None,
    deadline: dt.date | None,
    status: str,
    served_on: dt.date,
) -> tuple[dt.date | None, str]:
    """A notice's deadline once it is recorded served on ``served_on`` otherwise than by mail, and the sentence that
    says why it moved or did not.

    Only where the law counts the period from service (Wappinger § 196-22A, "shall be served ... and shall have 10
    days") does the day of service move it: to that day plus the period's days, with no days for the mail (the
    letter's date, ``letter_deadline``, allowed ``mail_days`` for them). Never earlier than the date the letter
    states: the owner was told that date in writing, so where the notice was served twice (mailed, and handed over)
    the later end counts, and a fine is never sought before a date the town itself gave. An extended notice keeps
    the town's extension. A period counted from the notice's date (Fort Plain § 144-4, "after the date of official
    notice") does not move, and neither does one whose law is not recorded (``rule`` None).

    Examples
    --------
    >>> rule = ServiceRule("§ 196-22A", "service", 5)
    >>> june = dict(notice_date=dt.date(2027, 6, 1), letter_deadline=dt.date(2027, 6, 16), status="open")
    >>> deadline_after_service(rule, deadline=dt.date(2027, 6, 16), served_on=dt.date(2027, 6, 9), **june)[0]
    datetime.date(2027, 6, 19)
    >>> deadline_after_service(rule, deadline=dt.date(2027, 6, 16), served_on=dt.date(2027, 6, 2), **june)[0]
    datetime.date(2027, 6, 16)
    """
    kept = deadline.isoformat() if deadline else "none"
    if rule is None:
        return deadline, (
            f"Its law is not recorded (a notice issued before batches, or under a profile file not bundled), so "
            f"whether its period runs from service cannot be told: its deadline stays {kept}; if the service gives "
            "the owner more time, record an extension."
        )
    if rule.counted_from != "service" and rule.law_silent:  # the days are the town's resolution's, not the section's
        return deadline, (
            f"{rule.section} sets no period; the town's, as the letter states it, runs from the date of the notice, "
            f"not from its service: the deadline stays {kept}."
        )
    if rule.counted_from != "service":
        return deadline, (
            f"{rule.section} counts its days from the date of the notice, not from its service: the deadline stays "
            f"{kept}."
        )
    if letter_deadline is None or deadline is None:
        return deadline, f"It has no deadline to count from service: it stays {kept}."
    days = (letter_deadline - notice_date).days - rule.mail_days
    by_service = served_on + dt.timedelta(days=days)
    if status == "extended":
        return deadline, (
            f"{rule.section} counts {days} days from service ({by_service.isoformat()}), but the notice was extended "
            f"to {kept}: the extension stands."
        )
    if by_service < letter_deadline:
        back = "" if letter_deadline == deadline else f" (the deadline was {kept})"
        return letter_deadline, (
            f"{rule.section}: {days} days from service on {served_on.isoformat()} end on {by_service.isoformat()}, "
            f"before the date its letter states ({letter_deadline.isoformat()}, allowing {rule.mail_days} days for "
            f"the mail): the owner was told that date in writing, so it stands{back}."
        )
    moved = "" if by_service == deadline else f" (was {kept})"
    return by_service, (
        f"{rule.section}: {days} days from service on {served_on.isoformat()}, with no days for the mail: the deadline "
        f"is {by_service.isoformat()}{moved}."
    )


def mailing_words(done: Mapping) -> str:
    """What recording a mailing list given back did (``Register.record_mailing``), as the command line and the
    notices page both say it: the owners' letters, the rows with no number yet, and the copies to the occupant.

    Examples
    --------
    >>> mailing_words({"letters": 1, "recorded": 1, "corrected": 0, "unchanged": 0, "empty": 0, "occupant_copies": 1,
    ...                "occupant_recorded": 1, "occupant_corrected": 0, "occupant_unchanged": 0})
    'Recorded the article numbers of 1 letter(s): 1 notice(s) newly, 0 corrected, 0 already recorded. And of 1 copy(ies) to the occupant at the site address: 1 notice(s) newly, 0 corrected, 0 already recorded.'
    """  # noqa: E501
    said = [
        f"Recorded the article numbers of {done['letters']} letter(s): {done['recorded']} notice(s) newly, "
        f"{done['corrected']} corrected, {done['unchanged']} already recorded."
    ]
    if done.get("empty"):
        said.append(
            f"{done['empty']} row(s) have no article number yet (not mailed, or not typed in): give the list back "
            "again when they are."
        )
    if done.get("occupant_copies"):
        said.append(
            f"And of {done['occupant_copies']} copy(ies) to the occupant at the site address: "
            f"{done.get('occupant_recorded', 0)} notice(s) newly, {done.get('occupant_corrected', 0)} corrected, "
            f"{done.get('occupant_unchanged', 0)} already recorded."
        )
    return " ".join(said)


def mailing_warnings(done: Mapping) -> list[str]:
    """What recording a mailing list must not leave unsaid, one paragraph each, said apart from ``mailing_words``
    so that it stands out (the command prints each on its own line, the notices page as a warning): article numbers
    recorded before the date their letters state (``before_date_words``)."""
    return [before_date_words(b, done["today"]) for b in done.get("before_date") or ()]


def before_date_words(batch: Mapping, today: str) -> str:
    """The warning for article numbers recorded before the date their letters state (``Register.record_mailing``'s
    ``before_date``): a receipt postmarked before a letter's date does not show it was mailed on that date, and the
    notice period runs from that date. What to do either way, in words for the command line and the page alike.

    Examples
    --------
    >>> print(before_date_words({"batch_id": "B1", "dated": "2027-02-22", "notices": 2, "days": 7}, "2027-02-15"))
    Warning: the letters of batch B1 are dated 2027-02-22, 7 day(s) after today (2027-02-15), and the article numbers of 2 of its notices were recorded today. A certified mail receipt postmarked before the date a letter states does not show the letter was mailed on that date, and the notice period runs from that date. If they are not mailed yet, mail them on 2027-02-22 or later (the numbers recorded stay right). If they were mailed already, the notices' date is not the day they were mailed: withdraw those notices and give notice again dated the day the letters are mailed. Each notice's events record this warning.

    A notice issued before batches, its number recorded by its ID, is named by itself:

    >>> print(before_date_words({"batch_id": None, "notice_id": "N-1", "dated": "2027-02-22", "notices": 1, "days": 7},
    ...                         "2027-02-15"))
    Warning: the letter of notice N-1 (issued before batches) is dated 2027-02-22, 7 day(s) after today (2027-02-15), and its article number was recorded today. A certified mail receipt postmarked before the date a letter states does not show the letter was mailed on that date, and the notice period runs from that date. If it is not mailed yet, mail it on 2027-02-22 or later (the number recorded stays right). If it was mailed already, the notice's date is not the day it was mailed: withdraw the notice and give notice again dated the day the letter is mailed. Its events record this warning.
    """  # noqa: E501
    dated = batch["dated"]
    if not batch.get("batch_id") and batch.get("notice_id"):
        return (
            f"Warning: the letter of notice {batch['notice_id']} (issued before batches) is dated {dated}, "
            f"{batch['days']} day(s) after today ({today}), and its article number was recorded today. "
            "A certified mail receipt postmarked before the date a letter states does not show the letter was mailed "
            "on that date, and the notice period runs from that date. "
            f"If it is not mailed yet, mail it on {dated} or later (the number recorded stays right). "
            "If it was mailed already, the notice's date is not the day it was mailed: withdraw the notice and give "
            "notice again dated the day the letter is mailed. Its events record this warning."
        )
    return (
        f"Warning: the letters of batch {batch['batch_id']} are dated {dated}, {batch['days']} day(s) after today "
        f"({today}), and the article numbers of {batch['notices']} of its notices were recorded today. "
        "A certified mail receipt postmarked before the date a letter states does not show the letter was mailed on "
        "that date, and the notice period runs from that date. "
        f"If they are not mailed yet, mail them on {dated} or later (the numbers recorded stay right). "
        "If they were mailed already, the notices' date is not the day they were mailed: withdraw those notices and "
        "give notice again dated the day the letters are mailed. Each notice's events record this warning."
    )


@dataclass(frozen=True)
class MailingRecord:
    """What a mailing list given back holds: its envelopes with their article numbers, how many rows have none yet,
    and what is wrong in it (each row named), for ``Register.record_mailing`` to refuse with what it finds itself."""

    mailings: tuple[Mailing, ...]
    empty: int
    problems: tuple[str, ...]


def mailing_record(rows: pd.DataFrame, *, list_name: str = "the mailing list") -> MailingRecord:
    """The envelopes a batch's mailing list, given back with ``certified_article_no`` filled in, names with their
    article numbers, and how many rows have none yet (not mailed, or not typed in: they are left as they are).

    Its problems are listed, every one, not raised: a row with a number but no notice, a ``mailing_no`` that is not a
    number, a number that is not an article number, and one article number given on two rows (each envelope has its
    own; a row that lists several notices is one envelope and gives them one), or one notice on two owners' rows.
    The register adds what it finds (an
    unknown notice, a number it holds for another envelope) and refuses them all at once. A list without the columns
    is refused at once (``AnalysisError``). Each row is named as a spreadsheet shows it, the header being row 1,
    in ``list_name`` (the file's name): "row 4 of mailing-list.csv" is the fourth line the clerk sees.

    Examples
    --------
    >>> rows = pd.DataFrame({"mailing_no": ["1", "2"], "name_line_1": ["ANN", "BO"], "notice_ids": ["N-1; N-2", "N-3"],
    ...                      "certified_article_no": ["7019 0700 0000 1234 5670", ""]})
    >>> found = mailing_record(rows)
    >>> found.mailings[0].notice_ids, found.mailings[0].article_no, found.empty, found.problems
    (('N-1', 'N-2'), '70190700000012345670', 1, ())
    >>> found.mailings[0].place
    'row 2 of the mailing list'
    """
    missing = [c for c in MAILING_RECORD_COLUMNS if c not in rows.columns]
    if missing:
        raise AnalysisError(
            f"The mailing list has no {', '.join(missing)} column: give back the batch's mailing-list.csv with its "
            f"columns as written ({', '.join(MAILING_RECORD_COLUMNS)} at least), certified_article_no filled in."
        )
    problems: list[str] = []
    mailings: list[Mailing] = []
    empty = 0
    seen: dict[str, int] = {}  # each number's row
    listed: dict[str, int] = {}  # each notice's row
    for i, row in enumerate(rows.to_dict("records")):
        line = i + 2  # as the spreadsheet numbers it: the header is row 1
        at = row_place(line, list_name)
        given = str(row["certified_article_no"] if not _absent(row["certified_article_no"]) else "").strip()
        if not given:
            empty += 1
            continue
        try:
            number = article_number(given)
        except AnalysisError as exc:
            problems.append(f"{at}: {str(exc).rstrip('.')}")
            continue
        ids = tuple(n for n in (s.strip() for s in str(row["notice_ids"] or "").split(";")) if n)
        if not ids:
            problems.append(f"{at} gives article number {given} but lists no notice (its notice_ids is empty)")
            continue
        try:
            mailing_no = int(str(row["mailing_no"]).strip())
        except ValueError:
            problems.append(
                f"{at}: its mailing_no {row['mailing_no']!r} is not a number: give it back as the batch wrote it"
            )
            continue
        if number in seen:
            problems.append(
                f"article number {article_groups(number)} is given on rows {seen[number]} and {line} of {list_name}: "
                "each envelope "
                "has its own number"
            )
            continue
        seen[number] = line
        occupant = str(row.get("name_line_1") or "").strip() == OCCUPANT
        if not occupant:  # the occupant's copy lists the owner's notice again; two owner rows never do
            twice = [n for n in ids if n in listed]
            if twice:
                problems.append(
                    f"notice {twice[0]} is listed on rows {listed[twice[0]]} and {line} of {list_name}: it went in one "
                    "letter, "
                    "with one number"
                )
                continue
            listed |= dict.fromkeys(ids, line)
        mailings.append(Mailing(line, mailing_no, ids, number, occupant, list_name))
    return MailingRecord(tuple(mailings), empty, tuple(problems))


def listed_notices(rows: pd.DataFrame) -> list[str]:
    """Every notice ID a mailing list names, on every row (with an article number or not), once each, in order: what
    tells whose list it is.

    Examples
    --------
    >>> listed_notices(pd.DataFrame({"notice_ids": ["N-1; N-2", "", None, "N-2"]}))
    ['N-1', 'N-2']
    """
    if "notice_ids" not in rows.columns:
        return []
    cells = rows["notice_ids"].dropna().astype(str).str.split(";").explode().str.strip()
    return list(dict.fromkeys(cells[cells != ""]))


# Below this share of its notices held by the register, a mailing list is another register's (another town's, or
# another store's batch), said once rather than as one "the register holds no notice" per row.
FOREIGN_LIST_SHARE = 0.1


def not_this_registers(listed: int, held: int) -> bool:
    """Whether a mailing list naming ``listed`` notices, of which the register holds ``held``, is another register's:
    none or almost none (under ``FOREIGN_LIST_SHARE``) of at least two. A list of one notice the register lacks is
    no clue (a typed ID): its row is named as any other.

    Examples
    --------
    >>> not_this_registers(90, 0), not_this_registers(90, 3), not_this_registers(90, 45), not_this_registers(1, 0)
    (True, True, False, False)
    """
    return listed >= 2 and held < listed * FOREIGN_LIST_SHARE


def _absent(value) -> bool:
    return value is None or (not isinstance(value, str) and pd.isna(value))


# -- building obligations -----------------------------------------------------------------------------------------


def building_obligations(buildings: pd.DataFrame | None, profile: Profile) -> dict[str, list[str]]:
    """Per parcel, the duties its buildings put on the connection, worded as the law words them.

    A building whose living units need more than one building sewer (Fort Plain § 144-9: one for each group of four
    living units), and a building whose sewer may have to connect through a manhole, which the administrative body
    decides (§ 144-16). ``buildings`` is ``analysis.buildings.assess_buildings(...).buildings``.
    """
    out: dict[str, list[str]] = {}
    if buildings is None or buildings.empty or "parcel_id" not in buildings.columns:
        return out
    frame = buildings[buildings["parcel_id"].notna()]
    per = profile.buildings.units_per_lateral
    if per.value and "required_laterals" in frame.columns:
        required = pd.to_numeric(frame["required_laterals"], errors="coerce")
        many = frame[required.fillna(1) > 1]
        for row in many.to_dict("records"):
            units = pd.to_numeric(pd.Series([row.get("units")]), errors="coerce").iloc[0]
            out.setdefault(str(row["parcel_id"]), []).append(
                f"Building {row.get('building_id')} has {units:g} living units. {per.section} provides: "
                f"\u201c{per.quote}\u201d This building needs at least {int(row['required_laterals'])} building sewers."
            )
    if "shared_lateral" in frame.columns:
        for row in frame[frame["shared_lateral"].notna()].to_dict("records"):
            if (said := _rear_building_duty(row, profile)) is not None:
                out.setdefault(str(row["parcel_id"]), []).append(said)
    manhole = profile.notices.manhole_connection
    if manhole.value and "manhole_connection_case" in frame.columns:  # analysis.buildings: a case for the body
        cases = frame[frame["manhole_connection_case"].fillna(False).astype(bool)]
        for parcel_id, group in cases.groupby("parcel_id"):
            ids = ", ".join(str(b) for b in group.get("building_id", pd.Series(dtype=str)))
            out.setdefault(str(parcel_id), []).append(
                f"Building(s) {ids} on this parcel may be of a kind the following section covers. "
                f"{manhole.section} provides: "
                f"\u201c{manhole.quote}\u201d {MANHOLE_ASK}"
            )
    return out


def _rear_building_duty(row: dict, profile: Profile) -> str | None:
    """What a second building on the lot (``analysis.buildings``' ``shared_lateral`` verdict) asks of the connection,
    in the law's words: its own building sewer, the front building's extended to it where no other route exists, or
    the main extended to it (Wappinger § 196-18D). The letters had said none of it: a corner lot's rear house, which
    Fort Plain's § 144-9 gives its own building sewer, and a Wappinger rear house, whose 60 days cannot be met
    without the main extended, went without a word (a tester)."""
    rules = profile.buildings
    building, front = row.get("building_id"), row.get("front_building_id")
    where = f"stands at the rear of building {front}" if bool(row.get("rear_building")) else f"stands beside {front}"
    if front is None or pd.isna(front):
        where = "is a second building on the lot"
    verdict = row["shared_lateral"]
    if verdict == "separate_required":
        law = rules.separate_building_sewer
        said = (
            f"Building {building} {where}. {law.section} provides: {_quoted(law.quote)} It needs its own building "
            "sewer; the exception for a rear building does not apply to it."
        )
    elif verdict == "may_share_if_no_route":
        law = rules.rear_building_rule
        said = (
            f"Building {building} {where}. {law.section} provides, in part: {_quoted(law.quote)} Where no other "
            f"route exists, its sewer may be the front building's, extended to it; otherwise it needs its own."
        )
    elif verdict == "main_extension_required":
        law = rules.rear_building_rule
        said = (
            f"Building {building} {where}. {law.section} provides: {_quoted(law.quote)} The owner is to ask the "
            f"{_town_word(profile)} how and when the main is to be extended to it before connecting it."
        )
    else:
        return None
    note = rules.rear_building_note
    if verdict != "separate_required" and note.value:  # Poughkeepsie § 168-22.4D: the assessment of each building
        said += f" {note.section} provides: {_quoted(note.quote)}"
    return said


def _quoted(quote: str) -> str:
    """The law's words in quotation marks, with a full stop after the marks where the words end without one, so the
    letter's next sentence does not run on from them."""
    text = quote.strip()
    return f"\u201c{text}\u201d" + ("" if text.endswith((".", "?", "!", ":", ";")) else ".")


# What the owner is to ask before connecting where a building may need a manhole connection (``building_obligations``),
# and the same said to the occupant, in whose copy it is the owner's to ask (``_obligation_blocks``).
MANHOLE_ASK = "Before you connect, ask whether the administrative body requires a manhole connection for this property."
MANHOLE_ASK_COPY = (
    "Before connecting, the owner is to ask whether the administrative body requires a manhole connection for this "
    "property."
)


# -- letters ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    """One piece of a letter: ``kind`` is heading, text, quote (the law's words, ``section`` says whose) or item."""

    kind: str
    text: str
    section: str = ""


# How a letter is served, in one place: the letter's mail line prints it, the batch's manifest keeps it beside each
# letter, and the register records it with each notice the letter carries (``served_by``), so the letter and the
# register never say two things. None of the three laws names a method of service (each says "served" or "official
# notice"); the letters go by certified mail, whose article number the office records after mailing
# (``mailing_record``): a receipt and a record of delivery. USPS Certified Mail is for US destinations only, so a
# letter to an owner abroad (``in_us``) goes by its international counterpart, registered mail with a return receipt
# (``SERVED_ABROAD``), its number in the UPU S10 form; that is the product's reading, for the same reason. A letter is
# always written for one of the two; a notice served otherwise (handed to the owner) is recorded afterwards, with the
# day (``SERVED_IN_PERSON``, ``deadline_after_service``).
SERVED_BY = "certified mail"
SERVED_ABROAD = "registered mail (international)"
CERTIFIED_MAIL = "CERTIFIED MAIL    Article No. ________________________________"
REGISTERED_MAIL = "REGISTERED MAIL (INTERNATIONAL)    Article No. ____________________"
MAIL_LINES = {SERVED_BY: CERTIFIED_MAIL, SERVED_ABROAD: REGISTERED_MAIL}
CLOSING = "Sincerely,"
MAP_CAPTION = (
    "Parcel outlined in dark grey, buildings shaded, streets with their names, public sewer mains in black with their "
    "ID and diameter, the measuring line from the property line to the main dashed red. North is up."
)


@dataclass(frozen=True)
class Letter:
    """One envelope's letter, every word of it: the letterhead (``sender``, ``sender_lines``, ``contact``), the
    recipient, the title, the notices it covers, the blocks of its body and the signature (``closing``).

    ``date_line``, ``mail_line``, ``reference``, ``map_heading``, ``map_caption`` and ``footer`` give the rest of
    its words; ``letter_text`` puts them all in reading order.
    """

    mailing_no: int
    file_name: str
    kind: str
    title: str
    notice_ids: tuple[str, ...]
    parcel_ids: tuple[str, ...]
    recipient: tuple[str, ...]
    date: dt.date
    blocks: tuple[Block, ...]
    sender: str = ""
    sender_lines: tuple[str, ...] = ()
    contact: str = ""
    closing: tuple[str, ...] = ()
    served_by: str = SERVED_BY  # how the letter is served: its mail line says so, and the register records it

    def text(self) -> str:
        """The body as plain text (for tests and previews)."""
        return "\n".join(b.text for b in self.blocks)

    @property
    def date_line(self) -> str:
        return long_date(self.date)

    @property
    def mail_line(self) -> str:
        """The line above the recipient that says how the letter is served (``served_by``), with the article
        number's line to fill in: certified mail in the US, registered mail (international) abroad."""
        if self.served_by not in MAIL_LINES:
            raise AnalysisError(
                f"A letter is served by {SERVED_BY} or {SERVED_ABROAD}; {self.served_by!r} has no mail line."
            )
        return MAIL_LINES[self.served_by]

    @property
    def reference(self) -> str:
        """The notices the letter covers and its mailing number: "Notices N-1, N-2    (letter 0001)"."""
        word = "Notices" if len(self.notice_ids) > 1 else "Notice"
        return f"{word} {', '.join(self.notice_ids)}    (letter {self.mailing_no:04d})"

    def map_heading(self, parcel_id: str) -> str:
        return f"Map: parcel {parcel_id}"

    @property
    def map_caption(self) -> str:
        return MAP_CAPTION

    def footer(self, page: int) -> str:
        """The line at the foot of each page: the letter, its notices and the page number."""
        word = "notices" if len(self.notice_ids) > 1 else "notice"
        return f"Letter {self.mailing_no:04d} - {word} {', '.join(self.notice_ids)} - page {page}"


def letter_text(letter: Letter, *, mapped=()) -> str:
    """Every word of a letter in reading order, one line each, as the PDF prints it (page footers aside).

    ``mapped`` names the parcels whose map the letter carries (those ``letter_maps`` could draw).
    """
    lines = [letter.sender, *letter.sender_lines]
    if letter.contact:
        lines.append(letter.contact)
    lines += [letter.date_line, letter.mail_line, *letter.recipient, letter.title, letter.reference]
    lines += [b.text for b in letter.blocks]
    lines += list(letter.closing)
    mapped = set(mapped)
    for parcel_id in letter.parcel_ids:
        if parcel_id in mapped:
            lines += [letter.map_heading(parcel_id), letter.map_caption]
    return "\n".join(line for line in lines if line)


def town_contact(town: TownSettings) -> str:
    """The letterhead's contact line: the return address, telephone and e-mail."""
    return "  |  ".join(p for p in (" / ".join(town.return_address), town.phone, town.email) if p)


def words_of(text: str) -> str:
    """Text with every run of whitespace (non-breaking spaces included) as one space."""
    return " ".join(str(text).replace("\xa0", " ").split())


def long_date(day) -> str:
    """March 1, 2027."""
    day = day if isinstance(day, dt.date) else dt.date.fromisoformat(str(day))
    return f"{day:%B} {day.day}, {day.year}"


def code_name(profile: Profile) -> str:
    """The code the sections belong to, as printed on a letter: "Code of the Village of Fort Plain"."""
    return profile.law.split(",")[0].strip()


def _quote(rule: Rule, code: str = "") -> list[Block]:
    """The rule's section and its words, verbatim; ``code`` names the code the first citation belongs to."""
    head = f"{rule.section} of the {code} provides:" if code else f"{rule.section} provides:"
    return [Block("text", head), Block("quote", f"\u201c{rule.quote}\u201d", rule.section)]


def _town_word(profile: Profile) -> str:
    return "Village" if "village" in profile.municipality.lower() else "Town"


def compose_letters(
    rows: pd.DataFrame,
    notices: pd.DataFrame,
    *,
    profile: Profile,
    town: TownSettings,
    kind: str,
    notice_date: dt.date,
    period: Period,
    obligations: Mapping[str, list[str]] | None = None,
) -> list[Letter]:
    """One letter per mailing-list row: every parcel and notice it covers, the law verbatim, what to do and by when.

    ``rows`` is ``mailing_list(...)``; ``notices`` holds one row per notice (``notice_id``, ``parcel_id``, the
    measured distance, ``main_id``, ``main_diameter_in``; for violations ``original_notice_id``,
    ``original_issued_date``, ``original_deadline`` and, where an extension moved it, ``original_deadline_in_notice``).
    ``kind`` is "connection" or "violation"; ``period`` the notice or correction period. A row to "Occupant" at the
    site address of a notice whose owner is someone else is the occupant's copy, and says so.
    """
    by_id = notices.set_index("notice_id", drop=False)
    letters = []
    for row in rows.to_dict("records"):
        ids = tuple(i for i in str(row["notice_ids"]).split("; ") if i)
        parcels = by_id.loc[list(ids)].to_dict("records") if ids else []
        recipient = tuple(
            str(t)
            for t in (
                row["name_line_1"],
                row["name_line_2"],
                row["address_line_1"],
                row["address_line_2"],
                row["city_line"],
                row.get("country_line"),  # abroad: the country on the last line; a list from before has none
            )
            if t and not pd.isna(t)
        )
        owner = _owner_of_copy(row, parcels)
        service = str(row.get("mail_service") or SERVED_BY)  # a list from before the column: the US, as it was
        if kind == "connection":
            blocks = _connection_blocks(
                parcels, profile=profile, town=town, period=period, notice_date=notice_date, copy_of=owner
            )
        else:
            blocks = _violation_blocks(
                parcels, profile=profile, town=town, period=period, notice_date=notice_date, copy_of=owner
            )
        if kind == "connection":
            blocks += _obligation_blocks(parcels, obligations or {}, copy=bool(owner))
        blocks += _common_blocks(
            parcels,
            profile=profile,
            town=town,
            kind=kind,
            period=period,
            act_by=period.ends(notice_date),
            copy=bool(owner),
        )
        title = "NOTICE TO CONNECT TO THE PUBLIC SEWER" if kind == "connection" else "NOTICE OF VIOLATION"
        if owner:
            title += f": {OCCUPANT_COPY}"
        letters.append(
            Letter(
                mailing_no=int(row["mailing_no"]),
                file_name=str(row["letter_file"]),
                kind=kind,
                title=title,
                notice_ids=ids,
                parcel_ids=tuple(str(p["parcel_id"]) for p in parcels),
                recipient=recipient,
                date=notice_date,
                blocks=tuple(blocks),
                sender=town.name,
                sender_lines=tuple(town.letterhead),
                contact=town_contact(town),
                closing=(CLOSING, town.officer_name, town.officer_title, town.name),
                served_by=service,
            )
        )
    return letters


OCCUPANT_COPY = "COPY FOR THE OCCUPANT"


def _owner_of_copy(row: Mapping, parcels: list[dict]) -> str | None:
    """The owner's name where the mailing-list row is the copy to "Occupant" at the site address of a notice served
    on someone else (``occupant_letters``), else None: that letter is no notice to its reader, and says whose it is.
    """
    if words_of(row.get("name_line_1") or "").upper() != OCCUPANT.upper():
        return None
    owners = [words_of(p["owner_name"]) for p in parcels if not _absent(p.get("owner_name"))]
    named = [o for o in owners if o and o.upper() != OCCUPANT.upper()]
    return "; ".join(dict.fromkeys(named)) or None


def _parcel_line(p: dict) -> str:
    site = p.get("site_address")
    site = "" if site is None or pd.isna(site) else words_of(site)  # one line, as the mailing list has it
    site = site or "site address not recorded"
    return f"Parcel {p['parcel_id']}, {site} (notice {p['notice_id']})"


# How a letter says where the distance was measured from (the analysis' ``measured_from``): Fort Plain § 144-1 makes
# the property line the curbline, or the edge of a sewer right-of-way, where the building sewer connects there. Only
# a distance from the parcel boundary is "measured on the tax map".
_MEASURED_WORDS = {
    "parcel boundary": "measured on the tax map",
    "curbline": "measured from the curbline in front of the property",
    "sewer right-of-way edge": "measured from the edge of the sewer right-of-way",
}


def _main_text(p: dict) -> str:
    distance = p.get("distance_ft")
    if distance is None or pd.isna(distance):
        return "A public sanitary sewer lies within the distance the law sets."
    main = str(p.get("main_id") or "").strip()
    size = p.get("main_diameter_in")
    size_text = f"{float(size):g}-inch " if size is not None and not pd.isna(size) else ""
    street = p.get("street_name_main")
    where = f" in {street}" if street is not None and not pd.isna(street) and str(street).strip() else ""
    measured = p.get("measured_from")
    how = _MEASURED_WORDS.get("" if measured is None or pd.isna(measured) else str(measured), "measured on the tax map")
    return (
        f"The {size_text}public sanitary sewer main {main}{where} lies {float(distance):.1f} feet from the property "
        f"line, {how}."
    )


def _connection_blocks(parcels, *, profile, town, period, notice_date, copy_of: str | None = None) -> list[Block]:
    """The notice itself: the property, the law's duty and the deadline, why it is given. ``copy_of`` names the
    owner where the letter is the occupant's copy (``_owner_of_copy``): it tells the occupant whose duty it is."""
    n = profile.notices
    md = profile.mandate
    blocks = [Block("heading", "Property" if len(parcels) == 1 else "Properties")]
    for p in parcels:
        blocks.append(Block("item", _parcel_line(p)))
        blocks.append(Block("text", _main_text(p)))
    deadline = period.ends(notice_date)
    blocks += [Block("heading", "What the law requires"), *_quote(n.connection_duty, code_name(profile))]
    given = (
        "is the official notice that section refers to"
        if "official notice" in n.connection_duty.quote
        else "gives you notice of that requirement"
    )
    by = f"{long_date(deadline)}, {_days_after(period, copy=bool(copy_of))}"
    who = "the owner is" if copy_of else "you are"
    if period.act and period.law_silent:  # Wappinger § 196-17E: no period at all; the Town's resolution sets one
        when = (
            f"{period.section} sets no period for making the connection: {period.act} sets it, and under it {who} "
            f"required to connect by {by}."
        )
    elif period.act:  # the law leaves the period to the town, which set it
        when = (
            f"{who.capitalize()} required to connect by {by} (the period set by {period.act}, under {period.section})."
        )
    elif period.law_days is not None:  # the law's days replaced for the run: said, never credited to the section
        when = (
            f"{who.capitalize()} required to connect by {by} (the period set for these notices; {period.section} sets "
            f"{period.law_days} days)."
        )
    else:
        when = f"{who.capitalize()} required to connect by {by}."
    if md.distance_ft.law_set:  # "within 150 feet" beside a quote of "within 100 feet" read as the law's
        when += (
            f" This notice is given to properties within {md.distance_ft.value:g} feet of a public sewer, the "
            f"distance set for these notices ({md.distance_ft.law_sets('feet')})."
        )
    if copy_of:  # the occupant's copy: not the notice, and no duty of its reader (the owner's letter is the notice)
        blocks += _copy_blocks(
            "notice",
            copy_of,
            f"The duty to connect is the owner's. {when}",
            profile=profile,
            town=town,
            day=notice_date,
            parcels=parcels,
        )
    else:
        blocks.append(Block("text", f"This letter, dated {long_date(notice_date)}, {given}. {when}"))
    reason = parcels[0].get("notice_reason") if parcels else None
    if reason and not pd.isna(reason):
        the = "the" if copy_of else "this"  # the copy is not the notice: it speaks of the owner's
        blocks += [Block("heading", f"Why {the} notice is given"), *_quote(md.notice_reasons)]
        named = [p for p in parcels if p.get("hazard") and not pd.isna(p.get("hazard"))]
        hazards = sorted({str(p["hazard"]) for p in named})
        text = f"{the.capitalize()} notice is given {NOTICE_REASONS.get(reason, reason)}"
        if len(hazards) > 1:  # § 168-22.3C: each property's own hazard, named beside it
            blocks.append(Block("text", text + ", for each property as follows:"))
            blocks += [Block("text", f"{_parcel_line(p)}: {p['hazard']}.") for p in named]
        else:
            blocks.append(Block("text", text + (f": {hazards[0]}." if hazards else ".")))
    same = words_of(n.private_system_duty.quote) == words_of(n.connection_duty.quote)  # Wappinger § 196-17E is both
    private = [p for p in parcels if bool(p.get("private_system"))]
    if private and not same:
        blocks += _private_system_blocks(private, profile=profile, copy=bool(copy_of), several=len(parcels) > 1)
    return blocks


def _private_system_blocks(private: list[dict], *, profile: Profile, copy: bool, several: bool) -> list[Block]:
    """The private system's own duty (Fort Plain § 144-5B: abandon and fill the septic tank), quoted for the
    properties taken to be served by one. Where the parcels' ``private_system`` column says so, as a fact ("Your
    private sewage disposal system"); where only the profile's reading (``notices.private_system_assumed``) takes it,
    the town does not know it, and the letter says so: "If the property is served by ...", the records do not say,
    the law required one where no public sewer was available. A row without ``private_system_said`` (a caller that
    set ``private_system`` itself) is taken as said."""
    n = profile.notices
    told = _told(private)
    if all(told):
        heading = "The property's private sewage disposal system" if copy else "Your private sewage disposal system"
        return [Block("heading", heading), *_quote(n.private_system_duty)]
    said = [p for p, t in zip(private, told, strict=True) if t]
    assumed = [p for p, t in zip(private, told, strict=True) if not t]
    records = f"The {_town_word(profile)}'s records"
    required = f"{n.private_system_assumed.section} required one where no public sewer was available"
    if not several:
        lead = (
            f"{records} do not say whether the property is served by a private sewage disposal system; {required}. "
            "If it is, this section of the law applies to it:"
        )
    else:  # one owner's properties: each named, the column saying it of some of them perhaps
        unknown = f"{_parcels_named(assumed)} {'is' if len(assumed) == 1 else 'are'}"
        if said:
            lead = (
                f"{records} say that {_parcels_named(said)} {'is' if len(said) == 1 else 'are'} served by a private "
                f"sewage disposal system; they do not say whether {unknown}, and {required}."
            )
        else:
            lead = f"{records} do not say whether {unknown} served by a private sewage disposal system; {required}."
        lead += " This section of the law applies to each property that is:"
    the = "a property" if several else "the property"
    heading = f"If {the} is served by a private sewage disposal system (septic tank, cesspool)"
    return [Block("heading", heading), Block("text", lead), *_quote(n.private_system_duty)]


def _told(rows: Sequence[Mapping], key: str = "private_system_said") -> list[bool]:
    """Whether the parcels' ``private_system`` column said each of ``rows`` is served by a private system (``key``),
    rather than the profile's reading (``notices.private_system_assumed``) taking it. A row without ``key`` (a caller
    that set the private system itself) is taken as said."""
    return [_absent(r.get(key)) or bool(r[key]) for r in rows]


def _parcels_named(parcels: list[dict]) -> str:
    """ "parcel 12.1-1-1", "parcels 12.1-1-1 and 12.1-1-2": the parcels a sentence of a letter speaks of."""
    ids = [str(p["parcel_id"]) for p in parcels]
    listed = ids[0] if len(ids) == 1 else f"{', '.join(ids[:-1])} and {ids[-1]}"
    return f"parcel{'s' if len(ids) > 1 else ''} {listed}"


def _copy_blocks(what: str, owner: str, duty: str, *, profile, town, day: dt.date, parcels=()) -> list[Block]:
    """What makes a letter the occupant's copy of ``what`` ("notice", "notice of violation") served on ``owner``: whose
    notice it is, how it was sent to the owner (``mail_service`` of the owner's mailing state, from ``parcels``),
    ``duty`` (whose duty, and by when), and that it asks nothing of its reader."""
    officer = town.officer_title or "office"
    states = pd.Series([p.get("mail_state") for p in parcels], dtype=object)
    served_by = " or ".join(dict.fromkeys(mail_service(states))) or SERVED_BY
    return [
        Block(
            "text",
            f"This letter is a copy, for the occupant of the property, of the {what} dated {long_date(day)} that the "
            f"{_town_word(profile)} serves on its owner, {owner}, by {served_by} to the owner's mailing address. "
            + duty,
        ),
        Block(
            "text",
            "This copy is not the notice to the owner, and it asks nothing of you. Please tell the owner that you "
            f"received it; with any question, call or write to the {officer} at the address above.",
        ),
    ]


def _violation_blocks(parcels, *, profile, town, period, notice_date, copy_of: str | None = None) -> list[Block]:
    """The property, the original notice and the violation, and the time to correct it. ``copy_of`` names the owner
    where the letter is the occupant's copy (``_owner_of_copy``): the violation, and its correction, are the owner's."""
    n = profile.notices
    correct_by = period.ends(notice_date)
    blocks = [Block("heading", "Property" if len(parcels) == 1 else "Properties")]
    for p in parcels:
        blocks.append(Block("item", _parcel_line(p)))
        original = p.get("original_notice_id")
        by = long_date(p["original_deadline"])
        stated = p.get("original_deadline_in_notice")
        if not _absent(stated) and long_date(stated) != by:  # extended since: the notice's own date, and the new one
            by = f"{long_date(stated)}, extended to {by}"
        blocks.append(
            Block(
                "text",
                f"Notice {original}, given on {long_date(p['original_issued_date'])}{_given_for(p)}, required the "
                f"owner of this property to connect it to the public sewer by {by}. Our register records no "
                "connection.",
            )
        )
    # The duties the connection notice quoted: the private system's own (§ 168-22.3C) beside the general one where
    # the property is served by one and the law says it apart (Wappinger's § 196-17E is both). Cited as violated only
    # where the parcels' private_system column says each property is served by one; where only the profile's reading
    # (notices.private_system_assumed, § 144-5A) takes it, the letter says if, as the connection letter did.
    same = words_of(n.private_system_duty.quote) == words_of(n.connection_duty.quote)
    private = [p for p in parcels if not same and not _absent(p.get("original_private_system"))]
    private = [p for p in private if bool(p["original_private_system"])]
    cited = bool(private) and all(_told(private, "original_private_system_said"))
    duties = [n.connection_duty, *([n.private_system_duty] if cited else [])]
    blocks += [Block("heading", "The violation"), *_quote(n.connection_duty, code_name(profile))]
    if cited:
        blocks += _quote(n.private_system_duty)
    sections = " and ".join(d.section for d in duties)
    blocks.append(
        Block(
            "text",
            "The nature of the violation: the building(s) on the property listed above have not been connected to the "
            f"public sewer as {sections} {'require' if cited else 'requires'}.",
        )
    )
    if private and not cited:
        rows = [
            {"parcel_id": p["parcel_id"], "private_system_said": p.get("original_private_system_said")} for p in private
        ]
        blocks += _private_system_blocks(rows, profile=profile, copy=bool(copy_of), several=len(parcels) > 1)
    if copy_of:
        duty = "The violation is the owner's, and so is correcting it."
        blocks += _copy_blocks(
            "notice of violation", copy_of, duty, profile=profile, town=town, day=notice_date, parcels=parcels
        )
    blocks += [Block("heading", "Time to correct it"), *_quote(n.correction_period_days)]
    who = "The owner must" if copy_of else "You must"
    by = f"{who} correct the violation by {long_date(correct_by)}, {_days_after(period, copy=bool(copy_of))}"
    if period.act:
        by += f": the time limit set by {period.act}, under {period.section}."
    else:
        by += f" ({period.section})."
    blocks.append(Block("text", by))
    return blocks


def _given_for(p: Mapping) -> str:
    """ " to eliminate a public health hazard (a failing septic system)", as the connection notice said why it was
    given and named the hazard (§ 168-22.2G, § 168-22.3C); "" for a notice the law needs no reason for."""
    reason, hazard = p.get("original_notice_reason"), p.get("original_hazard")
    if _absent(reason):
        return ""
    said = f" {NOTICE_REASONS.get(str(reason), str(reason).replace('_', ' '))}"
    return said + ("" if _absent(hazard) else f" ({hazard})")


def _days_after(period: Period, *, copy: bool = False) -> str:
    """What a period's last day is counted from, as the letter says it: the notice's date (Fort Plain § 144-4 "after
    the date of official notice"), or its service with the days allowed for the mail (Wappinger § 196-22A).
    ``copy``: the occupant's copy, which is not the notice and is served on nobody: the owner's notice is meant."""
    if period.counted_from == "service":
        served = "the service of the notice on the owner" if copy else "the service of this notice"
        return f"{period.days} days from {served}, allowing {period.mail_days} days for the mail to deliver it"
    return f"{period.days} days after the date of {'the' if copy else 'this'} notice"


def _obligation_blocks(parcels, obligations: Mapping[str, list[str]], *, copy: bool = False) -> list[Block]:
    """The duties each parcel's buildings put on its connection (``building_obligations``); ``copy``: worded for the
    occupant's copy, whose reader neither owns the buildings nor connects them."""
    blocks: list[Block] = []
    for p in parcels:
        for text in obligations.get(str(p["parcel_id"]), []):
            if not blocks:
                blocks.append(Block("heading", "The buildings on the property" if copy else "Your buildings"))
            if copy:
                text = text.replace(MANHOLE_ASK, MANHOLE_ASK_COPY)
            blocks.append(Block("text", f"Parcel {p['parcel_id']}: {text}"))
    return blocks


def _common_blocks(parcels, *, profile, town, kind, period: Period, act_by: dt.date, copy: bool = False) -> list[Block]:
    """The permit, the law on inflow and penalties, how to ask for more time or object, and whom to ask. ``copy``: the
    occupant's copy, whose reader is not the one to ask for more time or to object (the owner is)."""
    n = profile.notices
    word = _town_word(profile)
    blocks: list[Block] = []
    if kind == "connection":  # the permit, and what else the law requires first (Fort Plain § 144-46A, a licence)
        also = [block for passage in n.permit.also for block in _quote(passage)]
        blocks += [Block("heading", "Permit and fees"), *_quote(n.permit), *also, *_quote(n.permit_fees)]
        if town.fees:
            blocks.append(Block("text", f"The fees now in force: {town.fees}"))
        if n.inspection.value:  # § 144-14A, § 168-22.4I, § 196-18J: who makes the connection, and under whom
            blocks += [Block("heading", "Inspection and connection"), *_quote(n.inspection)]
    blocks += [Block("heading", "Keep rain and ground water out of the sewer"), *_quote(n.inflow_sources)]
    blocks += [Block("heading", "If the law is not complied with"), *_quote(n.penalty)]
    if n.penalty.value:  # the profile's plain summary of the quoted penalty
        blocks.append(Block("text", f"In short: {n.penalty.value}."))
    if town.penalty_amount:
        blocks.append(Block("text", f"The amount of the fine: {town.penalty_amount}"))
    contact = _contact(town)
    number = "notice numbers" if len(parcels) > 1 else "notice number"
    officer = town.officer_title or "office"
    if copy:  # the town's [requests] words are the owner's way to ask, so the copy does not print them
        no_extension = kind == "violation" and not period.left_to_town
        heading = "An objection" if no_extension else "More time, or an objection"
        what = "Objecting to the notice"
        if not no_extension:
            what = f"Asking the {word} for more time, or objecting to the notice,"
        ask = (
            f"{what} is for the owner to do, as the owner's letter says, before {long_date(act_by)}. If you know that "
            f"the property is already connected, please tell the owner, or write to the {officer} at the address "
            f"above, quoting the {number} above."
        )
    elif kind == "violation" and not period.left_to_town:
        # Wappinger § 196-22A: "shall have 10 days", the law's own, with no extension in the article: the letter
        # offers no more time than the law gives, only the objection, and not the town's words on asking for more
        # time ([requests]), which are for the periods the town sets.
        heading = "An objection"
        ask = (
            f"If you believe this notice is wrong (for example, the property is already connected), write to the "
            f"{officer} at the address above before {long_date(act_by)}, quoting the {number} above. The "
            f"{period.days} days to correct the violation are set by {period.section}, which provides for no "
            "extension."
        )
    else:
        heading = "More time, or an objection"
        ask = town.requests or (
            f"To ask the {word} for more time, or if you believe this notice is wrong (for example, the property is "
            f"already connected, or no building on it is occupied), write to the {officer} at "
            f"the address above before {long_date(act_by)}, quoting the {number} above."
        )
    blocks += [Block("heading", heading), Block("text", ask)]
    if contact:
        blocks += [Block("heading", "Questions"), Block("text", contact)]
    return blocks


def _contact(town: TownSettings) -> str:
    parts = [p for p in (f"telephone {town.phone}" if town.phone else "", town.email) if p]
    text = " or ".join(parts)
    if town.hours:
        text += f" ({town.hours})"
    return (f"Call or write to the {town.officer_title or 'office'}: " + text + ".") if text else ""


# -- maps for letters ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LetterMap:
    """What a letter's map of one parcel shows, in the measuring CRS (feet): all clipped to a square ``frame``."""

    parcel_id: str
    frame: tuple[float, float, float, float]
    parcel: object
    line: object | None
    mains: tuple[tuple[object, str, float | None], ...]
    streets: tuple[tuple[object, str], ...]
    buildings: tuple[object, ...]
    feet_per_unit: float = 1.0


def letter_maps(
    parcel_ids: list[str],
    *,
    parcels: pd.DataFrame,
    lines: pd.DataFrame | None = None,
    mains: pd.DataFrame | None = None,
    streets: pd.DataFrame | None = None,
    buildings: pd.DataFrame | None = None,
    margin_ft: float = 60.0,
    feet_per_unit: float = 1.0,
) -> dict[str, LetterMap]:
    """For each parcel to be mapped: a square frame around it and its measuring line, and the mains (ID, diameter),
    streets (name) and buildings inside the frame. One bulk STRtree query per layer."""
    ids = pd.Index([str(p) for p in parcel_ids]).unique()
    if len(ids) == 0:
        return {}
    by_parcel = pd.Series(parcels.geometry.values, index=parcels["parcel_id"].astype(str)).groupby(level=0).first()
    ids = ids[ids.isin(by_parcel.index)]
    geoms = by_parcel.loc[ids].to_numpy(object)
    measure = None
    if lines is not None and len(lines):
        measure = pd.Series(lines.geometry.values, index=lines["parcel_id"].astype(str)).groupby(level=0).first()
    line_geoms = np.array([measure.get(i) if measure is not None else None for i in ids], dtype=object)
    focus = np.array(
        [shapely.union_all([g for g in (p, ln) if g is not None]) for p, ln in zip(geoms, line_geoms, strict=True)],
        dtype=object,
    )
    bounds = shapely.bounds(focus)
    pad = margin_ft / feet_per_unit
    span = np.maximum(bounds[:, 2] - bounds[:, 0], bounds[:, 3] - bounds[:, 1]) + 2 * pad
    cx, cy = (bounds[:, 0] + bounds[:, 2]) / 2, (bounds[:, 1] + bounds[:, 3]) / 2
    frames = np.column_stack([cx - span / 2, cy - span / 2, cx + span / 2, cy + span / 2])
    boxes = shapely.box(frames[:, 0], frames[:, 1], frames[:, 2], frames[:, 3])

    def inside(layer: pd.DataFrame | None) -> dict[int, np.ndarray]:
        if layer is None or not len(layer):
            return {}
        layer_geoms = np.asarray(layer.geometry.values)
        box_i, feat_i = shapely.STRtree(layer_geoms).query(boxes, predicate="intersects")
        return {int(k): feat_i[box_i == k] for k in np.unique(box_i)}

    main_hits, street_hits, building_hits = inside(mains), inside(streets), inside(buildings)

    def column(layer, name):
        if layer is None or name not in layer.columns:
            return np.full(len(layer) if layer is not None else 0, None, dtype=object)
        return layer[name].to_numpy(object)

    main_ids, main_diams = column(mains, "main_id"), column(mains, "diameter_in")
    street_names = column(streets, "street_name")
    main_geoms = np.asarray(mains.geometry.values) if mains is not None else np.array([], dtype=object)
    street_geoms = np.asarray(streets.geometry.values) if streets is not None else np.array([], dtype=object)
    building_geoms = np.asarray(buildings.geometry.values) if buildings is not None else np.array([], dtype=object)
    out = {}
    for k, pid in enumerate(ids):
        m = main_hits.get(k, np.array([], dtype=int))
        s = street_hits.get(k, np.array([], dtype=int))
        b = building_hits.get(k, np.array([], dtype=int))
        out[pid] = LetterMap(
            parcel_id=pid,
            frame=tuple(float(v) for v in frames[k]),
            parcel=geoms[k],
            line=line_geoms[k],
            mains=tuple(
                (main_geoms[i], "" if main_ids[i] is None else str(main_ids[i]), _number(main_diams[i])) for i in m
            ),
            streets=tuple(
                (street_geoms[i], "" if street_names[i] is None or pd.isna(street_names[i]) else str(street_names[i]))
                for i in s
            ),
            buildings=tuple(building_geoms[i] for i in b),
            feet_per_unit=feet_per_unit,
        )
    return out


def _number(value) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if np.isnan(number) else number


# -- violations ---------------------------------------------------------------------------------------------------


def plan_violations(
    overdue: pd.DataFrame,
    *,
    profile: Profile,
    today: dt.date,
    town: TownSettings | None = None,
    current: pd.DataFrame | None = None,
    printable: AbstractSet[str] | None = None,
    overflow: Callable[[Sequence[str], Sequence[str]], str] | None = None,
) -> NoticePlan:
    """Violation notices for overdue connection notices (the register's rows), citing each original notice.

    ``overdue`` may say, as ``deadline_in_notice``, the deadline each original notice's letter stated where an
    extension has moved its ``deadline`` since (``Register.deadlines_in_notices``): the letter cites both.

    Each is addressed to the owner as the register recorded them, and held back as a connection letter is
    (``_mailable``, with ``printable`` and ``overflow`` as ``plan_notices`` takes them): in ``held`` with
    ``left_out`` "held" and why.

    The correction period is the law's (Wappinger § 196-22A: 10 days) or the town's own where the law leaves it open
    (Fort Plain § 144-40A, Poughkeepsie § 168-22.9A): see ``period``.

    ``current`` is the latest analysis (``parcel_id`` and ``status``). A parcel it finds ``connected`` is no
    violation, whatever the register says, and one it no longer finds ``mandated`` (a changed threshold, a parcel
    gone from the data) was noticed under an earlier run: neither gets a violation notice. Both are in ``held``
    (``parcel_id``, ``notice_id``, ``status``, ``why``, ``left_out``: "connected" or "review"), for the clerk.
    ``current`` must be a run under ``profile``: another law's distance and rules answer another question. Where it
    has the parcels' ``site_city``, ``site_state`` and ``site_zip``, which the register does not keep, each notice
    gets them, for a copy to the occupant at the site address (``occupant_letters``).
    """
    correction = period(profile, "notices.correction_period_days", town)
    correct_by = correction.ends(today)
    overdue, held = _against_current(overdue, current)
    overdue = _site_places(overdue, current)
    mailable, unmailable = _mailable(overdue, printable, overflow)
    if unmailable:  # each held row keeps its notice's index: its original notice ID is the one cited
        letters = pd.concat(unmailable)
        letters = letters.assign(notice_id=overdue.loc[letters.index, "notice_id"].to_numpy(), status=None)
        letters = letters.assign(left_out="held")[list(held.columns)]
        held = letters.reset_index(drop=True) if held.empty else pd.concat([held, letters], ignore_index=True)
    overdue = mailable
    # What the connection notice was given under, which its letter said: why it was given and the hazard it named
    # (§ 168-22.2G, § 168-22.3C), and whether the property is served by a private system, so that the letter quoted
    # the private system's own duty (§ 168-22.3C) too. The violation letter cites the same (a tester: it cited
    # § 168-22.2G alone for a notice given under § 168-22.3C, and named no hazard).
    blank = pd.Series(None, index=overdue.index, dtype=object)
    # Whether the private_system column said so, or the profile's reading took it: the letter asserts only the first.
    private, said = private_system(overdue, profile, said=True)
    due = overdue.assign(
        original_notice_reason=overdue["reason"] if "reason" in overdue.columns else blank,
        original_hazard=overdue["hazard"] if "hazard" in overdue.columns else blank,
        original_private_system=private if len(overdue) else blank,
        original_private_system_said=said if len(overdue) else blank,
        original_notice_id=overdue["notice_id"],
        original_issued_date=overdue["issued_date"],
        original_deadline=overdue["deadline"],
        original_deadline_in_notice=overdue.get("deadline_in_notice", overdue["deadline"]),
        notice_type="violation",
        issued_date=today,
        deadline=correct_by,
        section=profile.notices.correction_period_days.section,
        notice_reason=None,
        hazard=None,
        private_system=False,
    ).drop(columns=["notice_id"])
    return NoticePlan(
        due=due.reset_index(drop=True),
        held=held,
        period=correction,
        notice_date=today,
        deadline=correct_by,
    )


_SITE_PLACE = ("site_city", "site_state", "site_zip")


def _site_places(overdue: pd.DataFrame, current: pd.DataFrame | None) -> pd.DataFrame:
    """``overdue`` with each parcel's site city, state and ZIP code from the latest analysis where it has them: the
    register keeps the site's street only, and a copy to the occupant goes to the whole site address. Likewise its
    ``private_system`` column, where the town's data has one: whether the notice quoted a private system's duty."""
    wanted = (*_SITE_PLACE, "private_system")
    have = [c for c in wanted if current is not None and c in current.columns and c not in overdue.columns]
    if not have:
        return overdue
    places = current.assign(parcel_id=current["parcel_id"].astype(str)).drop_duplicates("parcel_id", keep="last")
    places = places.set_index("parcel_id")[have]
    ids = overdue["parcel_id"].astype(str)
    return overdue.assign(**{c: ids.map(places[c]).to_numpy() for c in have})


def _against_current(overdue: pd.DataFrame, current: pd.DataFrame | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The overdue notices whose parcel the latest analysis still finds mandated, and those it does not (held)."""
    columns = ["parcel_id", "notice_id", "status", "why", "left_out"]
    if current is None:
        return overdue, pd.DataFrame(columns=columns)
    status = current.assign(parcel_id=current["parcel_id"].astype(str)).drop_duplicates("parcel_id", keep="last")
    status = status.set_index("parcel_id")["status"].astype(str)
    now = overdue["parcel_id"].astype(str).map(status).fillna("not in the data")
    keep = (now == "mandated").to_numpy()
    left = overdue.loc[~keep, ["parcel_id", "notice_id"]].assign(status=now[~keep])
    connected = left["status"] == "connected"
    held = left.assign(
        why=np.where(
            connected,
            "the latest analysis finds it connected",
            "the latest analysis no longer finds it mandated (" + left["status"] + "); the notice was issued under "
            "an earlier run",
        ),
        left_out=np.where(connected, "connected", "review"),
    )
    return overdue.loc[keep], held[columns].reset_index(drop=True)


# -- CSV safety (the mailing list) --------------------------------------------------------------------------------

_FORMULA = re.compile(r"^[=+\-@\t\r]")


def neutralise(values: pd.Series) -> pd.Series:
    """Cells a spreadsheet would run as a formula (=, +, -, @, tab, carriage return first) get a leading quote."""
    text = values.astype(object).where(values.notna(), "").astype(str)
    risky = text.str.match(_FORMULA)
    return text.where(~risky, "'" + text)


def _refuse_a_run_value_beside_the_act(key: str, rule: Rule, act) -> None:
    """Refuse a period set for one run that differs from the town's resolution for it: the letters cite the act, and
    the value set was dropped without a word (``mandate.notice_period_days=45`` beside a resolution of 60 days)."""
    if rule.overridden and rule.value is not None and int(rule.value) != act.days:
        raise AnalysisError(
            f"{key} was set to {int(rule.value)} days for this run, but the town settings' resolution ({act.act}) sets"
            f" {act.days} days, and the letters cite it: leave the setting out (or set it to {act.days}, where a "
            "store's latest run recorded it), or change the resolution in the town settings file."
        )


def refuse_resolutions_of_the_laws_periods(profile: Profile, town: TownSettings | None) -> None:
    """Refuse a town settings' ``[resolutions]`` key naming a period the law itself sets (Fort Plain's § 144-4, 90
    days to connect; Wappinger's § 196-22A, 10 days to correct): it was read and silently ignored, the letters
    stating the law's days while the file said the town's."""
    if town is None or not town.resolutions:
        return
    refused: list[str] = []
    for key, act in town.resolutions.items():
        section_name, _, name = key.partition(".")
        rule = getattr(getattr(profile, section_name, None), name, None)
        if not isinstance(rule, Rule) or rule.setting or rule.town_setting:
            continue
        law = rule.law_value if rule.overridden else rule.value
        refused.append(
            f'[resolutions] "{key}" ({act.days} days, {act.act}) names a period the law sets: {rule.section} sets '
            f"{int(law)} days, and a resolution of the town cannot change it here"
        )
    if refused:
        name = PurePath(town.source).name if town.source else "the town settings file"
        key = next(k for k in town.resolutions if any(f'"{k}"' in r for r in refused))
        raise AnalysisError(
            f"{name}: " + "; ".join(refused) + ". Remove it from [resolutions] (the letters state the law's days); "
            f"for a what-if run with other days, set {key} for that run instead.",
            fix=Fix("rule", key, "N"),
        )


def with_resolutions(profile: Profile, town: TownSettings | None) -> Profile:
    """The profile with the town's own periods where the law leaves them to the town (for previews and deadlines).
    A resolution of a period the law sets is refused (``refuse_resolutions_of_the_laws_periods``)."""
    if town is None or not town.resolutions:
        return profile
    refuse_resolutions_of_the_laws_periods(profile, town)
    changes: dict[str, object] = {}
    for key, act in town.resolutions.items():
        section_name, _, name = key.partition(".")
        section = getattr(profile, section_name, None)
        rule = getattr(section, name, None) if section is not None else None
        if isinstance(rule, Rule) and (rule.setting or rule.town_setting):
            _refuse_a_run_value_beside_the_act(key, rule, act)
            section = changes.get(section_name, section)
            changed = dataclasses.replace(rule, value=act.days, act=act.act)
            changes[section_name] = dataclasses.replace(section, **{name: changed})
    return dataclasses.replace(profile, **changes) if changes else profile


__all__ = [
    "NOTICE_FIELDS",
    "connection_day_problem",
    "SERVED_ABROAD",
    "SERVED_BY",
    "SERVED_IN_PERSON",
    "ServiceRule",
    "deadline_after_service",
    "service_record_words",
    "service_rule",
    "Mailing",
    "MailingRecord",
    "article_groups",
    "article_number",
    "article_service",
    "letter_service",
    "mail_service",
    "s10_check_digit",
    "usps_check_digit",
    "wrong_service",
    "mailing_record",
    "before_date_words",
    "mailing_warnings",
    "listed_notices",
    "not_this_registers",
    "row_place",
    "mailing_words",
    "service_words",
    "MAILING_COLUMNS",
    "Block",
    "Letter",
    "LetterMap",
    "NoticeChoice",
    "NoticePlan",
    "Period",
    "chosen_parcels",
    "site_street",
    "street_key",
    "Resolution",
    "TownSettings",
    "address_key",
    "letter_text",
    "town_contact",
    "building_obligations",
    "compose_letters",
    "code_name",
    "deadline_flag",
    "due_notices",
    "letter_files",
    "letter_maps",
    "long_date",
    "mailing_list",
    "municipality_name",
    "neutralise",
    "ny_holidays",
    "occupant_letters",
    "period",
    "past_deadline",
    "business_deadline",
    "period_problem",
    "plan_notices",
    "plan_violations",
    "split_name",
    "with_resolutions",
    "refuse_resolutions_of_the_laws_periods",
]
