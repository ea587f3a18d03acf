"""The town settings file: the municipality's own details for its letters (letterhead, return address, the officer
who signs, how to reach the office, fees, and the resolutions that set periods the law leaves to the town).

Not part of an ordinance profile: a profile is the law, shared by every copy of the tool; these are one office's
facts. The file is ``town.toml`` beside the store (the GeoPackage), or any file given by name. A template with every
key: ``layers/town.example.toml``, installed with sewerplan and written by ``sewerplan notices town-template``.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from analysis.errors import Fix
from analysis.notices import Resolution, TownSettings
from analysis.profiles import DAYS, period_keys, rule_keys
from layers.errors import LayerError

TOWN_FILE = "town.toml"
TEMPLATE = Path(__file__).with_name("town.example.toml")  # package data: a pip-installed sewerplan has no docs/
MAKE_ONE = "`sewerplan notices town-template` writes a template to fill in"
_KEYS = {
    "letterhead": {"name": str, "lines": list},
    "return_address": {"lines": list},
    "officer": {"name": str, "title": str},
    "contact": {"phone": str, "email": str, "hours": str},
    "fees": {"text": str},
    "requests": {"text": str},
    "penalty": {"amount": str},
}


def town_file(given: str | Path | None = None, *, store: str | Path | None = None) -> Path | None:
    """The town settings file: ``given``, else ``town.toml`` in the store's folder (None when there is none)."""
    if given:
        return Path(given).expanduser()
    if store and "://" not in str(store):
        inside = Path(store).is_dir() and Path(store).suffix.lower() != ".gdb"  # a folder of layers holds it
        folder = Path(store) if inside else Path(store).resolve().parent
        candidate = folder / TOWN_FILE
        return candidate if candidate.is_file() else None
    return None


def write_town_template(target: str | Path) -> Path:
    """Write the town settings template to ``target`` (never over an existing file) and return its path."""
    target = Path(target).expanduser()
    if target.is_dir():
        raise LayerError(f"{target} is a folder: give the file to write, such as {target / TOWN_FILE}.")
    if not target.parent.is_dir():
        raise LayerError(f"The folder {target.parent} does not exist: make it first, or write the template elsewhere.")
    try:
        with target.open("x", encoding="utf-8") as out:
            out.write(TEMPLATE.read_text(encoding="utf-8"))
    except FileExistsError:
        raise LayerError(
            f"{target} exists already: it is not written over. Edit it, or give another file name."
        ) from None
    return target


def load_town_settings(path: str | Path | None) -> TownSettings | None:
    """Read a town settings file; None for no file. Every problem in the file is reported at once."""
    if path is None:
        return None
    path = Path(path)
    if path.is_dir():
        raise LayerError(f"{path} is a folder: give the town settings file ({TOWN_FILE}).")
    if not path.is_file():
        raise LayerError(f"The town settings file {path} does not exist ({MAKE_ONE}).")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise LayerError(f"{path.name} is not valid TOML: {exc}") from exc
    problems: list[str] = []
    values: dict[str, dict] = {}
    for table, content in data.items():
        if table == "resolutions":
            continue
        if table not in _KEYS:
            problems.append(f"unknown table [{table}] (known: {', '.join([*_KEYS, 'resolutions'])})")
            continue
        if not isinstance(content, dict):
            problems.append(f"[{table}] must be a table")
            continue
        for key, value in content.items():
            expected = _KEYS[table].get(key)
            if expected is None:
                problems.append(f"[{table}] unknown key {key!r} (known: {', '.join(_KEYS[table])})")
            elif not isinstance(value, expected) or (expected is list and not all(isinstance(v, str) for v in value)):
                kind = "a list of text lines" if expected is list else "text"
                problems.append(f"[{table}] {key} must be {kind}, got {value!r}")
        values[table] = content
    resolutions: dict[str, Resolution] = {}
    fix = None
    for key, act in (data.get("resolutions") or {}).items():
        if key not in period_keys():
            # A distance set by the Town's resolution ("mandate.distance_ft" = { days = 100, ... }) was read and
            # ignored without a word: the run measured by another distance than the file said (a tester).
            problems.append(_not_a_period(key))
            if key in rule_keys() and isinstance(act, dict):
                value = act.get("value", act.get("days"))
                fix = Fix("rule", key, example=str(value) if isinstance(value, int | float) else "N")
            continue
        if not isinstance(act, dict) or set(act) != {"days", "act"}:
            problems.append(f'[resolutions] "{key}" must be {{ days = N, act = "the resolution that set it" }}')
            continue
        days, text = act["days"], act["act"]
        if isinstance(days, bool) or not isinstance(days, int) or not DAYS["least"] <= days <= DAYS["most"]:
            # The profiles' own range for a period (analysis.profiles.DAYS): a slip such as 100000000 days
            # overflowed the calendar when a letter's deadline was computed.
            problems.append(
                f'[resolutions] "{key}" days must be a whole number of days from {DAYS["least"]:,} to '
                f"{DAYS['most']:,} (ten years), got {days!r}"
            )
        elif not isinstance(text, str) or not text.strip():
            problems.append(f'[resolutions] "{key}" act must name the resolution or local law that set the period')
        else:
            resolutions[key] = Resolution(days, text.strip())
    if problems:
        raise LayerError(f"{path}: " + "; ".join(problems) + ".", fix=fix if len(problems) == 1 else None)

    def get(table: str, key: str, default=""):
        value = values.get(table, {}).get(key, default)
        return tuple(v.strip() for v in value if v.strip()) if isinstance(value, list) else str(value).strip()

    return TownSettings(
        name=get("letterhead", "name"),
        letterhead=get("letterhead", "lines", []),
        return_address=get("return_address", "lines", []),
        officer_name=get("officer", "name"),
        officer_title=get("officer", "title"),
        phone=get("contact", "phone"),
        email=get("contact", "email"),
        hours=get("contact", "hours"),
        fees=get("fees", "text"),
        requests=get("requests", "text"),
        penalty_amount=get("penalty", "amount"),
        resolutions=resolutions,
        source=str(path),
    )


def _not_a_period(key: str) -> str:
    """Why a ``[resolutions]`` key is refused: the town's acts set periods only. A rule of the profile that is not a
    period (a distance the Town decided) is set on the run instead, and the results cite it as set for the run."""
    periods = " and ".join(f'"{k}"' for k in period_keys())
    head = f'[resolutions] "{key}" is not a period the town\'s resolutions can set (they set only {periods}, in days)'
    if key in rule_keys():
        return (
            f"{head}: set the value the Town decided on the profile for each run instead ({key}), which the "
            "results cite as set for the run, and remove it from [resolutions]"
        )
    return f"{head}, and no profile has a rule {key}: remove it from [resolutions]"


__all__ = ["TOWN_FILE", "load_town_settings", "town_file"]
