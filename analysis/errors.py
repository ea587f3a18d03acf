"""Errors raised by the analysis and by ordinance profiles; plain ``ValueError`` subclasses.

An error whose way out is one setting names that setting with a ``Fix``: what it is (a rule key, a layer kind, a
column mapping), never a command-line flag or a web-page field. The command line words a fix as its flag
(``--set mandate.distance_ft=N``), the web page as the field to fill in; both from the same ``Fix``.
"""

from __future__ import annotations

from dataclasses import dataclass

# What a fix can set, and what ``Fix.target`` then holds.
FIX_SETTINGS = {
    "rule": "a profile rule key (mandate.distance_ft)",
    "layer": "a layer kind (streets): the layer to give",
    "layer_crs": "a layer kind (parcels): the CRS of a layer that declares none",
    "data_crs": "'' : the CRS of every layer that declares none",
    "crs": "'' : the measuring CRS",
    "map": "LAYER.FIELD (parcels.parcel_id): the column holding a field",
    "map_value": "LAYER.FIELD.VALUE (mains.sewer_type.GRAV): what a coded value means",
    "notice_reason": "'' : why notice is given",
    "notice_date": "'' : the date of the notices (the day the letters are mailed)",
    "hazard": "'' : the public health hazard a notice is given to eliminate (Poughkeepsie § 168-22.3C)",
    "profile": "'' : the ordinance profile",
    "profile_file": "rule keys (mandate.notice_reasons) only a copy of the profile file (example: its path) can change",
    "register": "'' (none named) or the register's URL (one that does not exist)",
    "overwrite": "'' : replace a file that exists",
    "replace": "'' : save over the saved scenario of the same name",
    "connected": "'' : the connected-parcels list (billing records)",
    "rules": "a profile ID (fort-plain): where its rules are listed, for a setting that names none of them",
    "notice_id": "'' : a notice's ID, as the notices list shows it",
}


@dataclass(frozen=True)
class Fix:
    """The one setting that fixes an error, named by what it is.

    ``setting`` is a key of ``FIX_SETTINGS``; ``target`` the rule key, layer kind or mapping key it applies to;
    ``example`` a value to show (``EPSG:2260``, ``N``, ``COLUMN``); ``choices`` the values allowed, where few.
    """

    setting: str
    target: str = ""
    example: str = ""
    choices: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.setting not in FIX_SETTINGS:
            raise ValueError(f"unknown fix setting {self.setting!r} (known: {', '.join(FIX_SETTINGS)})")

    def as_dict(self) -> dict:
        return {"setting": self.setting, "target": self.target, "example": self.example, "choices": list(self.choices)}


class AnalysisError(ValueError):
    """The analysis cannot run on what it was given (a rule needs a layer or a setting that is missing).

    ``fix`` names the setting that fixes it, where one does.
    """

    def __init__(self, message: str, *, fix: Fix | None = None):
        super().__init__(message)
        self.fix = fix


class ProfileError(AnalysisError):
    """An ordinance profile file is malformed: unknown or missing keys, wrong types. Names file and key."""
