"""What the running app keeps between requests: the loaded stores, their workspaces, and background analysis jobs.

Which store a request works on: the signed-in planner's workspace (an upload they chose to work on, seen by them
alone) or else the town's store (``STORE``). Notices are only ever issued from the town's store. Each store is
loaded once per version of its file (a run or a publication replaces the file, so its identity changes); a few
are kept at most, each with its workspace (``gisapp.services.open_store``: the profile as applied, the layers and
the network exactly as the store's latest run used them), made once per version when a job first needs it.

Jobs run one after another, each in a child process started by one worker thread, each holding its store's
writer lock from the moment it is accepted: a second run on the same store is refused at once with "a run is in
progress", and the memory a run takes is the child's, returned to the system when it ends. Nothing here is
module-global: it all hangs off ``app.extensions["sewerplan"]``.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import datetime as dt
import gc
import multiprocessing
import os
import threading
import traceback
import uuid
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from flask import current_app, g, has_request_context, request, session
from werkzeug.exceptions import Conflict

from gisapp import services
from gisapp.mapdata import MapData
from gisapp.workspace import StoredRun, Workspace, WorkspaceSpec
from layers.errors import LayerError
from layers.store import latest_run, open_store, store_writer
from layers.uploads import read_meta, touch, upload_folder
from layers.write import LINES_LAYER, RESULT_LAYER

CACHED_STORES = 3
KEPT_JOBS = 50


@dataclass
class Job:
    id: str
    store: str = ""
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
    # path -> loaded store; path -> (the loaded store it was rebuilt from, its workspace)
    data: OrderedDict[str, MapData] = field(default_factory=OrderedDict)
    workspaces: dict[str, tuple[MapData, Workspace]] = field(default_factory=dict)
    jobs: OrderedDict[str, Job] = field(default_factory=OrderedDict)
    worker: ThreadPoolExecutor = field(
        default_factory=lambda: ThreadPoolExecutor(max_workers=1, thread_name_prefix="sewerplan-analysis")
    )


def state() -> AppState:
    return current_app.extensions["sewerplan"]


def town_store() -> str:
    return current_app.config["STORE"]


def workspace_store() -> str | None:
    """The signed-in user's workspace store, if they chose to work on one of their uploads (and it still exists)."""
    if not has_request_context():
        return None
    token = session.get("workspace")
    user = getattr(g, "user", None)
    if not token or not user:
        return None
    try:
        folder = upload_folder(current_app.config["UPLOAD_FOLDER"], token, owner=user)
    except LayerError:
        session.pop("workspace", None)
        return None
    store = folder / "store.gpkg"
    if not store.exists():
        return None
    touch(folder)
    return str(store)


def store_path() -> str:
    """The store this request works on: the user's workspace, else the town's store (always, for notices)."""
    if has_request_context() and request.blueprint == "notices":
        return town_store()
    return workspace_store() or town_store()


# Which workspace a page showed, as its state-changing forms send it back: the upload's token, or TOWN.
TOWN = "town"
SHOWN_FIELD = "workspace"  # the form field (the run form's hidden input)
SHOWN_HEADER = "X-Sewerplan-Workspace"  # the header (the map page's scripts, for the JSON posts)


def workspace_tag() -> str:
    """The request's workspace as a page carries it: the upload's token while the planner works on one, else TOWN."""
    store = workspace_store()
    return Path(store).parent.name if store else TOWN


def _workspace_words(tag: str) -> str:
    if tag == TOWN:
        return "the town's store"
    try:
        name = read_meta(upload_folder(current_app.config["UPLOAD_FOLDER"], tag, owner=getattr(g, "user", None)))
    except LayerError:  # published, discarded or expired since: its name is not told (nor another user's)
        return "an upload of yours that is no longer there (published, discarded or expired)"
    return f"your upload {name.get('name') or tag}"


def require_shown_workspace() -> None:
    """Refuse (409) a request from a page that showed another workspace than the one this session works on now.

    "Work on it" and "Back to the town's store" change the session, so every open tab: a Run pressed in a tab whose
    banner said "You are working on your upload" ran on the town's store, after another tab had gone back to it,
    replacing the results its notices were given on. Each page's forms send the workspace it showed (``workspace``
    field or ``X-Sewerplan-Workspace`` header, ``workspace_tag``); a request that sends neither (a script) acts on
    the session's workspace as before. Called first by each view that acts on "the current workspace", and before
    every read of the map's data (``gisapp.views.api``, the printed sheet): a tab whose banner said "your upload"
    showed, downloaded and printed the town's parcels once another tab had gone back to the town's store. The
    map's reads and links send it as the header or the ``workspace`` query parameter.
    """
    shown = request.form.get(SHOWN_FIELD) or request.headers.get(SHOWN_HEADER) or request.args.get(SHOWN_FIELD)
    if not shown:
        return
    current = workspace_tag()
    if shown == current:
        return
    raise WorkspaceChanged(
        description=(
            f"This page was opened on {_workspace_words(shown)}, but you are working on {_workspace_words(current)} "
            "now (changed in another tab or window, or on the Data page). Nothing was done. Reload the page to see "
            "what you are working on now, and try again there."
        ),
    )


class WorkspaceChanged(Conflict):
    """409 from ``require_shown_workspace``, titled so that the map page tells it from another conflict (a run in
    progress) and says it once above the map."""

    name = "Workspace changed"


def _signature(path: str) -> float:
    """Changes whenever the store is written (a GeoPackage replaced or rewritten; a PostGIS store's write counter
    and row changes), so every server showing the store reloads it after a run from any machine."""
    return open_store(path).version()


def _load(path: str, *, max_features: int, date_format: str) -> MapData:
    """A store's layers for the map (``MapData.load`` reads any store, GeoPackage or PostGIS, through its interface)."""
    return MapData.load(path, max_features=max_features, date_format=date_format)


def map_data(path: str | None = None) -> MapData:
    """A store's layers, loaded once per version of the file (the request's store by default)."""
    s = state()
    path = path or store_path()
    with s.lock:
        mark = _signature(path)
        data = s.data.get(path)
        if data is None or data.mtime != mark:
            stale = s.data.pop(path, None) is not None
            s.workspaces.pop(path, None)
            replaced = stale or len(s.data) >= CACHED_STORES
            config = current_app.config
            data = _load(path, max_features=config["MAP_MAX_FEATURES"], date_format=config["DATE_FORMAT"])
            data.mtime = mark
            s.data[path] = data
            while len(s.data) > CACHED_STORES:
                old, _ = s.data.popitem(last=False)
                s.workspaces.pop(old, None)
            if replaced:
                release_memory()  # the version just dropped: give its pages back, in every thread's arena
        s.data.move_to_end(path)
        return data


def workspace() -> Workspace:
    """The request's store's workspace, rebuilt from its latest run once per version of the store.

    Its results are the ones the page shows (read with the map data), its profile the one the run applied with
    every value set on it, its network built as the run built it (the digitised-direction choice too).
    """
    data = map_data()
    s = state()
    with s.lock:
        cached = s.workspaces.get(data.path)
        if cached is not None and cached[0] is data:
            return cached[1]
    originals = data.originals
    stored = StoredRun(
        parcels=originals.get(RESULT_LAYER),
        lines=originals.get(LINES_LAYER),
        buildings=originals.get("building_results"),
        record=latest_run(data.path),
    )
    spec = WorkspaceSpec.from_record(stored.record) or unanalysed_spec(data.path)
    ws = services.open_store(data.path, spec=spec, stored=stored)
    with s.lock:
        if data.path in s.data:
            s.workspaces[data.path] = (data, ws)
    return ws


def recorded_spec(path: str | None = None) -> WorkspaceSpec:
    """The workspace spec the store's latest run recorded (``unanalysed_spec`` for a store never analysed)."""
    path = path or store_path()
    return services.recorded_spec(path) or unanalysed_spec(path)


def unanalysed_spec(path: str) -> WorkspaceSpec:
    """The workspace of a store never analysed (``services.unanalysed_spec``): the default profile, measured in the
    CRS its layers were checked and written in (the upload's "Measuring CRS", on its own store and on the town's once
    published), else in the profile's."""
    return services.unanalysed_spec(path)


def running_job(store: str) -> Job | None:
    """The run queued or going on ``store`` in this server, if any: a map page opened (or reloaded) during a run
    follows it, where it showed the old results with no sign that a run was going."""
    s = state()
    with s.lock:
        going = [j for j in s.jobs.values() if j.store == store and j.state in ("queued", "running")]
    return going[-1] if going else None


def start_analysis(
    app, store: str, who: str, spec: WorkspaceSpec, notice_date: dt.date | None, notice_reason: str | None
) -> Job:
    """Queue an analysis of ``store``; the job reports its steps.

    The store's writer lock is taken here, before anything starts: a second run on the same store gets
    ``StoreBusyError`` at once. The run itself happens in a child process (``_run_in_child``), which reads the
    store, analyses and swaps its results in atomically (``layers.store.write_run``; the input layers are never
    written). All the memory a run takes goes back to the system when the child ends, so the server does not grow
    run after run, and a crash in the analysis cannot take the server down.
    """
    writer = store_writer(store, who=who)
    job = Job(id=uuid.uuid4().hex, store=store)
    s = app.extensions["sewerplan"]
    with s.lock:
        s.jobs[job.id] = job
        while len(s.jobs) > KEPT_JOBS:
            oldest = next(iter(s.jobs.values()))
            if oldest.state in ("queued", "running"):
                break
            s.jobs.popitem(last=False)

    def progress(text: str) -> None:
        job.step = text
        job.steps.append(text)

    def work():
        context = multiprocessing.get_context("spawn")
        receive, send = context.Pipe(duplex=False)
        child = context.Process(
            target=_run_in_child,
            args=(send, store, spec, notice_date, notice_reason),
            name=f"sewerplan-analysis-{job.id[:8]}",
            daemon=True,
        )
        outcome: tuple[str, object] = ("failed", "The analysis stopped unexpectedly.")
        try:
            job.state = "running"
            progress("starting the analysis process")
            child.start()
            send.close()
            while True:
                if receive.poll(0.2):
                    try:
                        kind, value = receive.recv()
                    except EOFError:
                        break
                    if kind == "step":
                        progress(value)
                    else:
                        outcome = (kind, value)
                elif not child.is_alive():
                    break
            child.join()
            if outcome[0] == "failed" and outcome[1] == "The analysis stopped unexpectedly.":
                outcome = ("failed", f"The analysis stopped unexpectedly (exit code {child.exitcode}).")
        except Exception as exc:  # noqa: BLE001 - report, do not kill the server
            outcome = ("error", (str(exc), traceback.format_exc()))
        finally:
            receive.close()
            writer.release()  # before the job says it is over, so the next run is accepted
            release_memory()
        kind, value = outcome
        if kind == "done":
            job.summary, job.state = value, "done"
            progress("done")
        elif kind == "failed":
            job.state, job.error = "failed", value
        else:  # an unexpected error: its traceback goes to the log, its message to the page
            job.state, job.error = "failed", f"Unexpected error: {value[0]}"
            app.logger.error("analysis job failed:\n%s", value[1])

    try:
        s.worker.submit(work)
    except RuntimeError:  # the worker was shut down (the app is stopping)
        writer.release()
        raise
    return job


def _run_in_child(send, store: str, spec: WorkspaceSpec, notice_date, notice_reason) -> None:
    """One analysis run, in its own process; reports ``(kind, value)`` messages through ``send``.

    The parent holds the store's writer lock for the whole run, so the results are written under it.
    """
    from layers.uploads import SERVER_DRIVERS, harden_gdal

    harden_gdal(keep_only=SERVER_DRIVERS)

    def progress(text: str) -> None:
        send.send(("step", text))

    try:
        progress("reading the store")
        ws = services.open_workspace(spec, store=store)
        run = services.analyse(
            ws,
            notice_date=notice_date,
            notice_reason=notice_reason,
            out_path=store,
            locked=True,
            who="the web app",
            progress=progress,
        )
        send.send(("done", run.summary))
    except ValueError as exc:  # domain errors: a message for the user, the fix in the page's words
        from gisapp.errors import web_text

        send.send(("failed", web_text(exc)))
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which logs it
        send.send(("error", (str(exc), traceback.format_exc())))
    finally:
        send.close()


def limit_malloc_arenas(arenas: int = 2) -> None:
    """Let glibc keep at most ``arenas`` heaps for all threads (it makes up to 8 per core otherwise).

    Each server thread would get its own heap, and the memory a request frees in one is never reused by
    another: with 8 threads the server grew by hundreds of MB under load. Call before the threads start.
    """
    name = ctypes.util.find_library("c")
    if name and os.name == "posix":
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(name).mallopt(-8, arenas)  # M_ARENA_MAX


def release_memory() -> None:
    """Give freed memory back to the operating system (glibc keeps freed heap pages otherwise)."""
    gc.collect()
    name = ctypes.util.find_library("c")
    if name and os.name == "posix":
        with contextlib.suppress(OSError, AttributeError):  # not glibc (musl, macOS): nothing to trim
            ctypes.CDLL(name).malloc_trim(0)
