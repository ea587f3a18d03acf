"""One analysis run on layers already loaded: a thin wrapper over ``gisapp.services.analyse``.

The commands and the web page open a workspace and call ``services.analyse``; ``run_analysis`` is kept, with its
signature, for code that loads the layers itself (the batch runner, the benchmarks): it wraps the layers and the
profile in a workspace whose spec records the profile's id, the values set on it and the direction choice.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from analysis.profiles import Profile
from gisapp import services
from gisapp.services import RunResult
from gisapp.workspace import Workspace, WorkspaceSpec
from layers.read import Layers
from layers.write import output_format


def spec_of(profile: Profile, *, trust_digitised: bool | None = None) -> WorkspaceSpec:
    """The workspace spec a profile object stands for: its id and every value set on it."""
    settings = tuple((key, rule.value) for key, rule in profile.rules().items() if rule.overridden)
    return WorkspaceSpec(profile=profile.id, settings=settings, digitised_direction=bool(trust_digitised))


def run_analysis(
    layers: Layers,
    profile: Profile,
    *,
    notice_date: dt.date | None = None,
    notice_reason: str | None = None,
    trust_digitised: bool | None = None,
    out_path: str | None = None,
    progress: Callable[[str], None] = lambda text: None,
    spec: WorkspaceSpec | None = None,
    threads: int | None = None,
) -> RunResult:
    """Analyse ``layers`` under ``profile`` and write to ``out_path`` (a GeoPackage store records the run).

    ``spec`` says how the layers were loaded, for the run record; without it the record holds the profile as
    applied and the direction choice, and names the store's own layers as the data. ``threads`` caps the
    analysis's threads (``services.analyse``).
    """
    store = out_path if out_path and output_format(out_path) == "GPKG" else None
    workspace = Workspace(spec or spec_of(profile, trust_digitised=trust_digitised), profile, layers, store=store)
    return services.analyse(
        workspace,
        notice_date=notice_date,
        notice_reason=notice_reason,
        out_path=out_path,
        progress=progress,
        threads=threads,
    )


__all__ = ["RunResult", "run_analysis", "spec_of"]
