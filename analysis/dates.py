"""Reading a day a user typed (a notice date, a new deadline, the day to judge overdue by). Pure.

One function for the command line, the web pages and the register, so that every place says the same thing:
text not written YYYY-MM-DD is told the format, and a day written right that the calendar does not have
(2027-02-30, 2027-13-01) is told that it does not exist and why, not that its format is wrong.
"""

from __future__ import annotations

import calendar
import datetime as dt
import re

from analysis.errors import AnalysisError

_WRITTEN = re.compile(r"(\d{4})-(\d{2})-(\d{2})")


def parse_day(value: object, what: str = "The date") -> dt.date:
    """A real calendar day from a date or strict ``YYYY-MM-DD`` text; AnalysisError naming ``what`` otherwise.

    Examples
    --------
    >>> parse_day("2027-03-01")
    datetime.date(2027, 3, 1)
    >>> parse_day("2027-02-30", "The notice date")
    Traceback (most recent call last):
    ...
    analysis.errors.AnalysisError: The notice date 2027-02-30 does not exist: February 2027 has 28 days.
    """
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    text = str(value).strip()
    written = _WRITTEN.fullmatch(text)
    if not written:
        raise AnalysisError(f"{what} {text!r} is not a date: write it as YYYY-MM-DD, e.g. 2027-03-01.")
    year, month, day = (int(part) for part in written.groups())
    if year < 1:
        raise AnalysisError(f"{what} {text} does not exist: there is no year 0; write the year with four digits.")
    if not 1 <= month <= 12:
        raise AnalysisError(f"{what} {text} does not exist: a year has 12 months, and {month:02d} is not one of them.")
    days = calendar.monthrange(year, month)[1]
    if not 1 <= day <= days:
        raise AnalysisError(f"{what} {text} does not exist: {calendar.month_name[month]} {year} has {days} days.")
    return dt.date(year, month, day)
