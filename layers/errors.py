"""Errors raised while reading and validating input layers.

They subclass ``ValueError`` and know nothing of HTTP or the command line: the CLI prints them and exits 2,
the web app maps them to a status. A message says what was expected, what arrived and how to fix it.
"""

from __future__ import annotations

from dataclasses import dataclass, field


class LayerError(ValueError):
    """A layer cannot be read or used as given (missing file, unknown layer, unreadable source)."""


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

    def as_dict(self) -> dict:
        return {
            "layer": self.layer,
            "check": self.check,
            "severity": self.severity,
            "count": self.count,
            "feature_ids": list(self.feature_ids),
            "message": self.message,
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
