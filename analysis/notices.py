"""Connection and violation notices: who is due one, and the mailing list that goes with them. Pure functions.

A connection notice goes to the owner of every mandated parcel that has no open notice and was never recorded as
connected or exempt (the register says which). Owners are grouped by their normalised mailing address (case,
spacing, punctuation, ZIP+4 folded to 5 digits), so one owner of five parcels gets one envelope listing all five.
"""

from __future__ import annotations

import datetime as dt
import re

import pandas as pd

from analysis.errors import AnalysisError
from analysis.mandate import check_notice
from analysis.profiles import Profile

NOTICE_FIELDS = (
    "parcel_id",
    "owner_name",
    "mail_address",
    "mail_city",
    "mail_state",
    "mail_zip",
    "site_address",
    "site_city",
    "site_state",
    "site_zip",
    "distance_ft",
    "main_id",
    "section",
    "reason",
    "deadline",
)
MAILING_COLUMNS = (
    "name_line_1",
    "name_line_2",
    "address_line_1",
    "address_line_2",
    "city",
    "state",
    "zip",
    "parcel_ids",
    "site_addresses",
    "deadline",
    "section",
    "notices",
)


def due_notices(
    results: pd.DataFrame,
    *,
    profile: Profile,
    notice_date: dt.date,
    notice_reason: str | None = None,
    exclude: set[str] | frozenset[str] = frozenset(),
) -> pd.DataFrame:
    """Connection notices due: mandated parcels not in ``exclude`` (open, connected or exempt in the register).

    Raises AnalysisError where the profile requires a reason (Poughkeepsie § 168-22.2G) and none is given, or where
    the profile sets no notice period (Wappinger: set one with --set mandate.notice_period_days=N).
    """
    check_notice(profile, notice_date, notice_reason)
    period = profile.mandate.notice_period_days
    if period.value is None:
        raise AnalysisError(
            f"The {profile.id} profile sets no period for connecting after notice ({period.citation}); "
            "set one with --set mandate.notice_period_days=N before issuing notices."
        )
    mandated = results[(results["status"] == "mandated") & ~results["parcel_id"].astype(str).isin(exclude)]
    out = pd.DataFrame(
        {name: (mandated[name] if name in mandated.columns else None) for name in NOTICE_FIELDS}, index=mandated.index
    )
    out["parcel_id"] = out["parcel_id"].astype(str)
    out["deadline"] = (notice_date + dt.timedelta(days=int(period.value))).isoformat()
    out["section"] = period.citation
    out["notice_type"] = "connection"
    out["notice_reason"] = notice_reason
    out["issued_date"] = notice_date.isoformat()
    return out.sort_values("parcel_id").reset_index(drop=True)


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


def mailing_list(notices: pd.DataFrame, *, per_parcel: bool = False, occupant: bool = False) -> pd.DataFrame:
    """Rows for mail merge: one per owner mailing address (all its parcels listed), or one per parcel.

    With ``occupant``, an extra row "Occupant" at the site address of each parcel whose owner mails elsewhere.
    """
    if notices.empty:
        return pd.DataFrame(columns=list(MAILING_COLUMNS))
    frame = notices.copy()
    frame["key"] = address_key(frame) if not per_parcel else frame["parcel_id"].astype(str)
    grouped = frame.groupby("key", sort=False)
    rows = pd.DataFrame(
        {
            "name_line_1": grouped["owner_name"].first().fillna("").astype(str),
            "name_line_2": "",
            "address_line_1": grouped["mail_address"].first().fillna("").astype(str),
            "address_line_2": "",
            "city": grouped["mail_city"].first().fillna("").astype(str),
            "state": grouped["mail_state"].first().fillna("").astype(str),
            "zip": grouped["mail_zip"].first().fillna("").astype(str),
            "parcel_ids": grouped["parcel_id"].agg(lambda s: "; ".join(s.astype(str))),
            "site_addresses": grouped["site_address"].agg(lambda s: "; ".join(s.fillna("").astype(str))),
            "deadline": grouped["deadline"].min(),
            "section": grouped["section"].first(),
            "notices": grouped.size(),
        }
    ).reset_index(drop=True)
    if occupant:
        away = address_key(frame.assign(owner_name="", mail_address=frame["mail_address"])) != address_key(
            frame.assign(
                owner_name="",
                mail_address=frame["site_address"],
                mail_city=frame.get("site_city"),
                mail_state=frame.get("site_state"),
                mail_zip=frame.get("site_zip"),
            )
        )
        extra = frame[away.to_numpy()]
        occupants = pd.DataFrame(
            {
                "name_line_1": "Occupant",
                "name_line_2": "",
                "address_line_1": extra["site_address"].fillna("").astype(str),
                "address_line_2": "",
                "city": extra.get("site_city", pd.Series("", index=extra.index)).fillna("").astype(str),
                "state": extra.get("site_state", pd.Series("", index=extra.index)).fillna("").astype(str),
                "zip": extra.get("site_zip", pd.Series("", index=extra.index)).fillna("").astype(str),
                "parcel_ids": extra["parcel_id"].astype(str),
                "site_addresses": extra["site_address"].fillna(""),
                "deadline": extra["deadline"],
                "section": extra["section"],
                "notices": 1,
            }
        )
        rows = pd.concat([rows, occupants], ignore_index=True)
    return rows[list(MAILING_COLUMNS)]


def violation_deadline(profile: Profile, today: dt.date) -> str:
    """The date by which an overdue owner must correct, after a violation notice served ``today``."""
    return (today + dt.timedelta(days=int(profile.notices.correction_period_days.value))).isoformat()


def violation_text(profile: Profile, parcel_id: str, deadline: str, correct_by: str) -> str:
    """The violation sentence for a letter or the register."""
    rules = profile.notices
    return (
        f"Parcel {parcel_id} was required to connect to the public sewer by {deadline} and has not. Under "
        f"{rules.correction_period_days.citation} the violation must be corrected by {correct_by}; continuing "
        f"it makes the owner liable to {rules.penalty.value} ({rules.penalty.citation})."
    )


_FORMULA = re.compile(r"^[=+\-@\t\r]")


def neutralise(values: pd.Series) -> pd.Series:
    """Cells a spreadsheet would run as a formula (=, +, -, @, tab, carriage return first) get a leading quote."""
    text = values.astype(object).where(values.notna(), "").astype(str)
    risky = text.str.match(_FORMULA)
    return text.where(~risky, "'" + text)


__all__ = [
    "NOTICE_FIELDS",
    "MAILING_COLUMNS",
    "due_notices",
    "address_key",
    "mailing_list",
    "violation_deadline",
    "violation_text",
    "neutralise",
]
