"""What the running app keeps between requests: the loaded store, its network, and background analysis jobs.

The store is reloaded when its file changes (a new analysis or upload). Jobs run in a thread each; their state is
polled by the page. Nothing here is module-global: it all hangs off ``app.extensions["sewerplan"]``.
"""

from __future__ import annotations

import datetime as dt
import threading
import traceback
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from flask import current_app

from analysis.network import SewerNetwork, build_network
from analysis.profiles import load_profile
from analysis.trace import connect_parcels
from layers.mapdata import MapData
from layers.read import find_layers, load_layers
from layers.store import latest_run
from layers.write import RESULT_LAYER


@dataclass
class Job:
    id: str
    state: str = "queued"
    step: str = ""
    steps: list[str] = field(default_factory=list)
    error: str | None = None
    summary: dict | None = None

    def as_dict(self) -> dict:
        return {
            "id": self.id,
            "state": self.state,
            "step": self.step,
            "steps": self.steps,
            "error": self.error,
            "summary": self.summary,
        }


@dataclass
class AppState:
    lock: threading.Lock = field(default_factory=threading.Lock)
    data: MapData | None = None
    network: tuple[float, SewerNetwork, object] | None = None
    layers: tuple[float, object, object] | None = None
    jobs: dict[str, Job] = field(default_factory=dict)


def state() -> AppState:
    return current_app.extensions["sewerplan"]


def store_path() -> str:
    return current_app.config["STORE"]


def map_data() -> MapData:
    """The store's layers, loaded once per version of the file."""
    s = state()
    path = store_path()
    with s.lock:
        mtime = Path(path).stat().st_mtime if Path(path).exists() else -1
        if s.data is None or s.data.path != path or s.data.mtime != mtime:
            s.data = MapData.load(path, max_features=current_app.config["MAP_MAX_FEATURES"])
            s.network = None
        return s.data


def network():
    """The store's sewer network and every parcel's connection on it, built once per version of the store."""
    data = map_data()
    s = state()
    with s.lock:
        if s.network is not None and s.network[0] == data.mtime:
            return s.network[1], s.network[2]
    run = latest_run(data.path) or {}
    profile = load_profile(run.get("profile", "fort-plain"))
    originals = data.originals
    if "mains" not in originals:
        return None, None
    net = build_network(
        originals["mains"],
        manholes=originals.get("manholes"),
        outfalls=originals.get("treatment_plants"),
        profile=profile,
    )
    results = originals.get(RESULT_LAYER)
    connections = connect_parcels(net, results) if results is not None else None
    with s.lock:
        s.network = (data.mtime, net, connections)
    return net, connections


def store_layers():
    """The store's input layers, validated and normalised (as the CLI reads them), once per version of the store."""
    data = map_data()
    s = state()
    with s.lock:
        if s.layers is not None and s.layers[0] == data.mtime:
            return s.layers[1], s.layers[2]
    profile = load_profile((latest_run(data.path) or {}).get("profile", "fort-plain"))
    layers = load_layers(find_layers(data.path), target_crs=_crs(profile))
    with s.lock:
        s.layers = (data.mtime, layers, profile)
    return layers, profile


def start_analysis(app, profile_name: str, notice_date: dt.date | None, notice_reason: str | None) -> Job:
    """Run the analysis on the current store in a background thread; the job reports its steps."""
    from gisapp.pipeline import run_analysis

    job = Job(id=uuid.uuid4().hex)
    s = app.extensions["sewerplan"]
    s.jobs[job.id] = job
    path = app.config["STORE"]

    def work():
        def progress(text: str) -> None:
            job.step = text
            job.steps.append(text)

        try:
            job.state = "running"
            progress("reading the store")
            profile = load_profile(profile_name)
            layers = load_layers(find_layers(path), target_crs=_crs(profile))
            run = run_analysis(
                layers, profile, notice_date=notice_date, notice_reason=notice_reason, out_path=path, progress=progress
            )
            job.summary = run.summary
            job.state = "done"
            progress("done")
        except ValueError as exc:  # domain errors: a message for the user
            job.state, job.error = "failed", str(exc)
        except Exception as exc:  # noqa: BLE001 - report, do not kill the server
            job.state, job.error = "failed", f"Unexpected error: {exc}"
            app.logger.error("analysis job failed:\n%s", traceback.format_exc())

    threading.Thread(target=work, daemon=True, name=f"analysis-{job.id[:8]}").start()
    return job


def _crs(profile):
    from layers.crs import measuring_crs

    return measuring_crs(profile.measurement.measuring_crs.value)
