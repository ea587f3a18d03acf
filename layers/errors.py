"""Errors raised while reading and validating input layers.

They subclass ``ValueError`` and know nothing of HTTP or the command line: the CLI prints them and exits 2,
the web app maps them to a status. A message says what was expected, what arrived and how to fix it; where the fix
is one setting, ``fix`` names it (``analysis.errors.Fix``: a layer kind, a column mapping, a CRS) and the CLI words
it as its flag, the web page as the field to fill in. No message here names a command-line flag.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import unquote

from analysis.errors import Fix


class LayerError(ValueError):
    """A layer cannot be read or used as given (missing file, unknown layer, unreadable source).

    ``fix`` names the setting that fixes it, where one does.
    """

    def __init__(self, message: str, *, fix: Fix | None = None):
        super().__init__(message)
        self.fix = fix


class NotFoundError(LayerError):
    """A feature asked for by its ID (a parcel, a manhole) is not in the data."""


@dataclass(frozen=True)
class Problem:
    """One finding about one layer, with the features it concerns.

    ``severity`` is ``"error"`` (the layer is refused), ``"fixed"`` (repaired, and the repair reported) or
    ``"warning"`` (kept as is, but the user should know).
    """

    layer: str
    check: str
    severity: str
    message: str
    count: int = 0
    feature_ids: tuple[str, ...] = field(default_factory=tuple)
    fix: Fix | None = None

    def as_dict(self) -> dict:
        return {
            "layer": self.layer,
            "check": self.check,
            "severity": self.severity,
            "count": self.count,
            "feature_ids": list(self.feature_ids),
            "message": self.message,
            "fix": self.fix.as_dict() if self.fix else None,
        }

    def __str__(self) -> str:
        shown = ", ".join(self.feature_ids[:10])
        more = f" (+{len(self.feature_ids) - 10} more)" if len(self.feature_ids) > 10 else ""
        ids = f" [{shown}{more}]" if shown else ""
        return f"{self.layer}: {self.message}{ids}"


class LayerValidationError(LayerError):
    """Every problem found in the input layers, raised once so the user can fix them all in one go."""

    def __init__(self, problems: list[Problem]):
        self.problems = list(problems)
        errors = [p for p in self.problems if p.severity == "error"]
        lines = "\n".join(f"  - {p}" for p in errors)
        super().__init__(f"{len(errors)} problem(s) in the input layers:\n{lines}")


# scheme://user:PASSWORD@host...: the password runs to the last '@' (a password may itself hold '@', '/' or ':').
_CREDENTIALS = re.compile(r"^(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^:/@]*:)(?P<password>.*)@(?P<tail>[^@]*)$", re.S)


def redact_url(url: str, within: str | None = None) -> str:
    """``url`` with its password replaced by ``***``; given ``within``, that text with the password masked.

    The password is everything between ``user:`` and the *last* ``@``, so one that holds ``@`` is masked whole
    rather than leaking its tail. Masking ``within`` (a driver's error message) masks the password where it stands
    as a password (as written and percent-decoded): in the URL's userinfo (``user:***@``), in a connection string's
    ``password=***``, and where libpq quotes it alone (``invalid percent-encoded token: "***"``), unless it is the
    user's name too, which the masked URL shows anyway. Elsewhere its text is left alone: the password ``sewerplan``
    had turned the table ``sewerplan_writer`` into ``***_writer`` in a message.

    Examples
    --------
    >>> redact_url("postgresql://town:p@ss@Wrong@db.example/gis")
    'postgresql://town:***@db.example/gis'
    >>> redact_url("postgresql://town@db.example/gis")
    'postgresql://town@db.example/gis'
    >>> redact_url("postgresql://pat:sewerplan@db/gis", 'lock on "sewerplan_writer"; token: "sewerplan"')
    'lock on "sewerplan_writer"; token: "***"'
    """
    found = _CREDENTIALS.match(url)
    masked = url if found is None else f"{found['head']}***@{found['tail']}"
    if within is None:
        return masked
    text = within.replace(url, masked)
    if found is not None:
        user = found["head"].partition("://")[2].removesuffix(":")
        for secret in sorted({found["password"], unquote(found["password"])}, key=len, reverse=True):
            if not secret:
                continue
            shown = re.escape(secret)
            text = re.sub(rf"(://[^\s:/@]*:){shown}@", r"\1***@", text)  # any URL's userinfo
            text = re.sub(rf"(\bpassword\s*=\s*'?){shown}(?=['\s]|$)", r"\1***", text)  # a connection string's
            if secret not in (user, unquote(user)):
                text = text.replace(f'"{secret}"', '"***"')  # libpq quoting the value it could not take
    return text


def split_fragment(text: str) -> tuple[str, str]:
    """A ``postgresql://...#schema`` text split into the URL and what follows its ``#`` (the schema or table).

    The fragment is looked for after the credentials, so a password holding ``#`` stays whole in the URL rather
    than being cut there (and its tail shown as a "schema name").

    Examples
    --------
    >>> split_fragment("postgresql://town:Wr#ng@db.example/gis#fort_plain")
    ('postgresql://town:Wr#ng@db.example/gis', 'fort_plain')
    >>> split_fragment("postgresql://db.example/gis#public.parcels")
    ('postgresql://db.example/gis', 'public.parcels')
    """
    scheme, sep, rest = text.partition("://")
    if not sep:
        url, _, fragment = text.partition("#")
        return url, fragment
    credentials, at, place = rest.rpartition("@")
    where, _, fragment = place.partition("#")
    return f"{scheme}://{credentials}{at}{where}", fragment


def quote_password(url: str) -> str:
    """The URL with every ``@``, ``#``, ``/`` and ``?`` in its password percent-encoded: SQLAlchemy ends a password
    at its first ``@`` and a URL at its ``#``.

    The credentials end at the last ``@`` before the host, so ``user:p@ss@host/db`` connects as ``p@ss`` instead
    of to a host named ``ss@host`` (whose name would then appear in error messages).
    """
    scheme, sep, rest = url.partition("://")
    credentials, at, host = rest.rpartition("@")
    user, colon, password = credentials.partition(":")
    if not (sep and at and colon) or "/" in user or not any(c in password for c in "@#/?"):
        return url
    for c, code in (("@", "%40"), ("#", "%23"), ("/", "%2F"), ("?", "%3F")):
        password = password.replace(c, code)
    return f"{scheme}://{user}:{password}@{host}"
