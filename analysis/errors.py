"""Errors raised by the analysis and by ordinance profiles; plain ``ValueError`` subclasses."""


class AnalysisError(ValueError):
    """The analysis cannot run on what it was given (a rule needs a layer or a setting that is missing)."""


class ProfileError(AnalysisError):
    """An ordinance profile file is malformed: unknown or missing keys, wrong types. Names file and key."""
