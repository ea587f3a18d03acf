"""Many municipalities in one run: every municipality is one Dask task, on a LocalCluster or on a cluster.

A task receives a :class:`~layers.manifest.TownSpec` (names and paths, a few hundred bytes) and does on its worker
exactly what ``sewerplan analyze`` does: load the profile by name, find and read the layers (``load_layers``),
run the analysis (``gisapp.pipeline.run_analysis``), then write the municipality's partition of the results
dataset. Layers and profiles never travel through the scheduler as pickled frames; only a small record (counts,
run time, error) comes back, so the client's memory stays flat however many parcels the state has.

A municipality that fails (bad data, a profile that needs a setting, a worker killed for memory) gets a record with
its error; the others go on. Records are saved as each municipality ends, so ``resume`` after an interruption
runs only those without a good record.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import os
import resource
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from analysis._parallel import paused_gc
from analysis.errors import AnalysisError, Fix
from analysis.profiles import load_profile
from gisapp.pipeline import run_analysis
from layers.crs import measuring_crs, parse_crs
from layers.dataset import (
    STATUS_COLUMNS,
    clear_batch,
    gpkg_path,
    holds_batch,
    is_done,
    read_record,
    remove_results,
    staged_folder,
    unify_partitions,
    write_partition,
    write_record,
    write_summary,
)
from layers.errors import LayerError, LayerValidationError
from layers.manifest import Manifest, TownSpec
from layers.read import find_layers, load_layers, parse_source, read_connected_ids, read_mapping, sources_of
from layers.schema import SPECS

GIB = 1024**3
# Memory a worker should have at least: a 500,000-parcel municipality needs about 1.5 GB (3 GB per million).
MIN_WORKER_MEMORY = 2 * GIB


# Messages from the analysis name the options of `analyze`; in a manifest each is a key of the municipality.
MANIFEST_HINT = (
    ' (In the manifest, an option is a key of the municipality: --set K=V is set = { "K" = V }, --map is map, '
    "--map-value is map_value, --LAYER-crs is layer_crs = { LAYER = CRS }.)"
)


def _manifest_fix(fix: Fix | None) -> str:
    """The municipality's manifest key that fixes an error, as the command line names its flag (" In the manifest:
    layer_crs = { parcels = "EPSG:2260" }."); "" when no key of a municipality fixes it."""
    if fix is None:
        return ""
    target, example = fix.target, fix.example
    key = {
        "rule": f'set = {{ "{target}" = {example or "VALUE"} }}',
        "layer": f'{target} = "{example or "PATH"}"' if target else 'data = "PATH"',
        "layer_crs": f'layer_crs = {{ {target} = "{example or "CRS"}" }}',
        "data_crs": f'data_crs = "{example or "CRS"}"',
        "crs": f'crs = "{example or "CRS"}"',
        "map": f'map = {{ "{target}" = "{example or "COLUMN"}" }}',
        "map_value": f'map_value = {{ "{target}" = "{example or "CODE"}" }}',
        "notice_reason": f'notice_reason = "{"|".join(fix.choices) or "REASON"}"',
        "notice_date": f"notice_date = {example or 'YYYY-MM-DD'}",
        "profile": f'profile = "{"|".join(fix.choices) or "NAME"}"',
        "connected": f'connected = "{example or "FILE"}"',
    }.get(fix.setting)
    return f" In the manifest: {key}." if key else ""


@dataclass(frozen=True)
class TownJob:
    """What a worker needs besides the municipality itself: where to write and how."""

    out_dir: str
    output_crs: str
    gpkg: bool
    threads: int | None = None  # the analysis's threads per task: the worker's share of its machine's cores


def run_town(spec: TownSpec, job: TownJob) -> dict:
    """Analyse one municipality on a worker and write its partition; return its record (never raises).

    The same steps as ``sewerplan analyze``: profile (with the manifest's settings), measuring CRS, layers found
    by name or given one by one, column mapping, connected list, ``load_layers``, ``run_analysis``.
    """
    started, cpu = time.perf_counter(), time.process_time()
    record: dict = {
        "municipality": spec.name,
        "partition": spec.partition,
        "profile": spec.profile,
        "fingerprint": spec.fingerprint(),
        "status": "failed",
        "error": None,
        "problems": [],
    }
    try:
        with paused_gc():
            record |= _analyse(spec, job)
        record["status"] = "ok"
    except LayerValidationError as exc:
        errors = [p for p in exc.problems if p.severity == "error"]
        lines = "\n".join(f"  - {p}{_manifest_fix(p.fix)}" for p in errors)
        record["error"] = f"{len(errors)} problem(s) in the input layers:\n{lines}"
        record["problems"] = [p.as_dict() for p in exc.problems]
    except (LayerError, AnalysisError) as exc:
        record["error"] = str(exc)
        fix = getattr(exc, "fix", None)
        if fix is not None and fix.setting == "profile_file":  # a manifest, unlike --set, can give a list or table
            record["error"] += (
                f" In the manifest, give {fix.target} as TOML writes a list or table, e.g. "
                'set = { "mandate.notice_reasons" = ["public_health_hazard"] }.'
            )
        else:
            record["error"] += _manifest_fix(fix)
    except Exception as exc:  # a defect, not bad input: still only this municipality fails
        record["error"] = f"unexpected {type(exc).__name__}: {exc}"
    if record["error"] and " --" in record["error"]:
        record["error"] += MANIFEST_HINT
    record["run_time_s"] = round(time.perf_counter() - started, 3)
    record["cpu_s"] = round(time.process_time() - cpu, 3)  # the worker process's, all its threads
    record["worker_peak_mb"] = round(_peak_rss_mb(), 1)
    record["worker"] = _worker_address()
    record["worker_pid"] = os.getpid()
    record["threads"] = job.threads
    record["finished_at"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    return record


def _analyse(spec: TownSpec, job: TownJob) -> dict:
    profile = load_profile(spec.profile, overrides=spec.settings)
    target = measuring_crs(spec.crs or profile.measurement.measuring_crs.value)
    sources = sources_of(spec.data, spec.layers)
    assume = {k: spec.layer_crs.get(k) or spec.data_crs for k in SPECS if spec.layer_crs.get(k) or spec.data_crs}
    extra: dict = {}
    if spec.statewide is not None:
        from layers.partition import stage_municipality

        sources, extra = stage_municipality(
            spec.name,
            municipalities=spec.statewide.municipalities,
            name_column=spec.statewide.name_column,
            margin_ft=spec.statewide.margin_ft,
            sources=sources,
            measuring=target,
            assume_crs=assume,
            folder=staged_folder(job.out_dir, spec.partition),
        )
        extra["parcels_assigned"] = extra.pop("parcels")
    elif spec.filter_column:
        sources = {
            kind: source
            if kind in spec.unfiltered
            else dataclasses.replace(source, where=(spec.filter_column, spec.filter_value))
            for kind, source in sources.items()
        }
    mapping = read_mapping(
        spec.mapping,
        tuple(f"{k}={v}" for k, v in spec.map.items()),
        tuple(f"{k}={v}" for k, v in spec.map_value.items()),
    )
    connected = read_connected_ids(spec.connected, column=spec.connected_column) if spec.connected else None
    layers = load_layers(
        sources,
        target_crs=target,
        mapping=mapping,
        assume_crs=assume,
        connected_ids=connected,
        required=("parcels", "mains"),
        threads=job.threads,
    )
    gpkg = gpkg_path(job.out_dir, spec.partition) if job.gpkg else None
    if gpkg is not None:
        gpkg.unlink(missing_ok=True)
    run = run_analysis(
        layers,
        profile,
        notice_date=spec.notice_date,
        notice_reason=spec.notice_reason,
        trust_digitised=spec.digitised_direction or None,
        out_path=str(gpkg) if gpkg is not None else None,
        threads=job.threads,
    )
    write_partition(job.out_dir, spec.partition, run.parcels, crs=parse_crs(job.output_crs, what="output CRS"))
    summary = run.summary
    counts = summary["counts"]
    period = profile.mandate.notice_period_days
    deadline = period.period_end(spec.notice_date).isoformat() if spec.notice_date and period.value else None
    return {
        "profile": profile.id,
        "profile_version": profile.version,
        "parcels": int(summary["parcels"]),
        **{status: int(counts.get(status, 0)) for status in STATUS_COLUMNS},
        # A connection notice is owed to every mandated parcel but those the notice reason may not reach (a
        # property on a private system, for a highway improvement, under § 168-22.3C); no register is consulted.
        "notices_due": int(counts.get("mandated", 0)) - int(summary.get("notices_held") or 0),
        "notice_deadline": deadline,
        "parcels_straddling": extra.get("parcels_straddling"),
        "parcels_assigned": extra.get("parcels_assigned"),
        "problems": [p.as_dict() for p in layers.problems],
        "gpkg": str(gpkg) if gpkg is not None else None,
        "summary": {k: v for k, v in summary.items() if k != "counts"},
    }


def _worker_address() -> str | None:
    try:
        from distributed import get_worker

        return get_worker().address
    except (ImportError, ValueError):
        return None


def _peak_rss_mb() -> float:
    """The worker process's peak resident memory so far (ru_maxrss is KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024**2 if sys.platform == "darwin" else peak / 1024


def output_crs_for(manifest: Manifest) -> str:
    """The CRS of the results dataset: the manifest's, else the municipalities' one measuring CRS, else WGS 84.

    One dataset has one CRS. The bundled New York profiles all measure in EPSG:2260, so a New York batch keeps it;
    a batch mixing measuring CRSs is written in longitude/latitude (distances stay in feet, as measured).
    """
    if manifest.output_crs:
        return parse_crs(manifest.output_crs, what="output CRS").to_string()
    found = set()
    for town in manifest.towns:
        try:
            profile = load_profile(town.profile, overrides=town.settings)
        except (AnalysisError, LayerError):
            continue  # that municipality will fail with its own message
        found.add(parse_crs(town.crs or profile.measurement.measuring_crs.value, what="measuring CRS").to_string())
    return found.pop() if len(found) == 1 else "EPSG:4326"


@dataclass
class Cluster:
    client: object
    description: str
    dashboard: str | None
    threads: int | None = None  # threads per task (a LocalCluster's share of the cores; None: the analysis's own)


@contextmanager
def dask_client(
    scheduler: str | None = None, *, workers: int | None = None, memory_limit: str | None = None
) -> Iterator[Cluster]:
    """A Dask client on the scheduler at ``scheduler``, or on a LocalCluster sized to this machine.

    The LocalCluster has one single-threaded worker process per core, as many as the memory allows with at least
    2 GB each; the machine's memory is shared equally between them, and so are its cores: each task's analysis
    threads its vectorised steps over its worker's share (``Cluster.threads``), so W workers use W cores rather
    than each sizing its threads to the whole machine. On a scheduler given by address each task uses the
    analysis's own default (the worker's cores, up to 4).
    """
    from distributed import Client, LocalCluster

    if scheduler:
        try:
            client = Client(scheduler, timeout="30s")
        except (OSError, TimeoutError) as exc:
            raise LayerError(f"Cannot reach the Dask scheduler at {scheduler}: {exc}") from exc
        try:
            n = len(client.scheduler_info().get("workers", {}))
            yield Cluster(client, f"Dask scheduler {scheduler} ({n} workers)", client.dashboard_link)
        finally:
            client.close()
        return
    import dask
    from dask.system import CPU_COUNT

    n_workers, limit = local_cluster_size(workers, memory_limit)
    dashboard = _has_bokeh()
    # Every local worker has the same memory: a municipality that got its worker killed once would only be killed
    # again, so it is reported at once instead of being retried on the next worker.
    with (
        dask.config.set({"distributed.scheduler.allowed-failures": 0}),
        LocalCluster(
            n_workers=n_workers,
            threads_per_worker=1,
            processes=True,
            memory_limit=limit,
            dashboard_address="127.0.0.1:0",  # loopback, a free port: never the 8787 of another cluster
            silence_logs=logging.ERROR,
        ) as cluster,
        Client(cluster) as client,
    ):
        memory = limit if isinstance(limit, str) else f"{limit / GIB:.1f} GB"
        yield Cluster(
            client,
            f"LocalCluster: {n_workers} worker process(es), {memory} each",
            client.dashboard_link if dashboard else None,
            threads=max(1, CPU_COUNT // n_workers),
        )


def local_cluster_size(workers: int | None, memory_limit: str | None) -> tuple[int, int | str]:
    """Worker processes and memory per worker for a LocalCluster on this machine."""
    from dask.system import CPU_COUNT
    from distributed.system import MEMORY_LIMIT

    if workers is None:
        workers = max(1, min(CPU_COUNT, MEMORY_LIMIT // MIN_WORKER_MEMORY))
    return workers, memory_limit or int(MEMORY_LIMIT // workers)


def _has_bokeh() -> bool:
    try:
        import bokeh  # noqa: F401
    except ImportError:
        return False
    return True


@dataclass
class BatchResult:
    rows: list[dict]
    batch: dict
    summary_csv: str
    summary_json: str

    @property
    def failed(self) -> list[dict]:
        return [r for r in self.rows if r.get("status") != "ok"]


def refuse_over_a_batch(
    out_dir: str | os.PathLike, *, resume: bool, overwrite: bool, how: tuple[str, str] = ("resume it", "overwrite it")
) -> None:
    """Refuse a batch into a folder holding another's results unless told to resume or overwrite them; ``how``
    words the two (the command line names its options, and checks before it starts a cluster: it started one, then
    said "resume it or overwrite it" without naming either; a tester)."""
    if holds_batch(out_dir) and not (resume or overwrite):
        raise LayerError(
            f"{out_dir} already holds the results of a batch: {how[0]} (only failed and missing municipalities run) "
            f"or {how[1]} (its results are deleted first)."
        )


def run_batch(
    manifest: Manifest,
    out_dir: str,
    *,
    client,
    cluster_description: str = "",
    gpkg: bool = False,
    threads: int | None = None,
    resume: bool = False,
    overwrite: bool = False,
    on_start: Callable[[int, int], None] = lambda todo, skipped: None,
    on_done: Callable[[dict], None] = lambda record: None,
) -> BatchResult:
    """Run every municipality of ``manifest`` as its own task on ``client``; write the dataset and the summary.

    With ``resume``, municipalities whose record says ok (with the same manifest entry) and whose results are on
    disk are kept as they are; the failed, the missing and the changed run again.
    """
    from distributed import as_completed

    started = time.perf_counter()
    refuse_over_a_batch(out_dir, resume=resume, overwrite=overwrite)
    if overwrite and not resume:
        clear_batch(out_dir)
    output_crs = output_crs_for(manifest)
    previous = _previous_batch(out_dir)
    if resume and previous and previous.get("output_crs") not in (None, output_crs):
        raise LayerError(
            f"The results in {out_dir} are in {previous['output_crs']}, this manifest's in {output_crs}: "
            "a dataset has one CRS. Set output_crs in the manifest's [batch] table, or start again."
        )
    job = TownJob(out_dir=str(out_dir), output_crs=output_crs, gpkg=gpkg, threads=threads)
    todo = [t for t in manifest.towns if not (resume and is_done(out_dir, t.partition, t.fingerprint(), gpkg=gpkg))]
    on_start(len(todo), len(manifest.towns) - len(todo))
    by_key = {}
    for rank, town in enumerate(todo):
        future = client.submit(
            run_town, town, job, key=f"sewerplan-{town.partition}-{town.fingerprint()}", pure=False, priority=-rank
        )
        by_key[future.key] = (future, town)
    for future in as_completed([f for f, _ in by_key.values()]):
        _, town = by_key[future.key]
        try:
            record = future.result()
        except Exception as exc:  # the task never returned: its worker died (memory) or the cluster went away
            record = _lost(town, exc)
        if record["status"] != "ok":
            remove_results(out_dir, town.partition)
        write_record(out_dir, record)
        on_done(record)
        future.release()
    unify_partitions(out_dir, [t.partition for t in manifest.towns])
    rows = [read_record(out_dir, t.partition) or _missing(t) for t in manifest.towns]
    batch = {
        "manifest": manifest.path,
        "output_crs": output_crs,
        "cluster": cluster_description,
        "municipalities_run": len(todo),
        "municipalities_kept": len(manifest.towns) - len(todo),
        "ok": sum(r.get("status") == "ok" for r in rows),
        "failed": sum(r.get("status") != "ok" for r in rows),
        "wall_time_s": round(time.perf_counter() - started, 3),
        "finished_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }
    if manifest.statewide is not None:
        batch["parcels_in_no_municipality"] = _unassigned(manifest, rows)
    csv_path, json_path = write_summary(out_dir, rows, batch)
    return BatchResult(rows, batch, csv_path, json_path)


def _lost(town: TownSpec, exc: Exception) -> dict:
    from distributed import KilledWorker

    if isinstance(exc, KilledWorker):
        error = (
            f"The worker analysing {town.name} died before finishing, most often because the municipality needs more "
            "memory than a worker has (about 3 GB per million parcels). Give each worker more memory and resume."
        )
    else:
        error = f"The task for {town.name} was lost: {type(exc).__name__}: {exc}"
    return {
        "municipality": town.name,
        "partition": town.partition,
        "profile": town.profile,
        "fingerprint": town.fingerprint(),
        "status": "failed",
        "error": error,
        "problems": [],
        "finished_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }


def _missing(town: TownSpec) -> dict:
    return {"municipality": town.name, "partition": town.partition, "profile": town.profile, "status": "missing"}


def _previous_batch(out_dir: str) -> dict | None:
    import json
    from pathlib import Path

    try:
        return json.loads((Path(out_dir) / "_summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _unassigned(manifest: Manifest, rows: list[dict]) -> int | None:
    """Statewide parcels that fell in no municipality (known only when every municipality ran and counts are cheap)."""
    from layers.partition import count_features

    if any(r.get("status") != "ok" for r in rows):
        return None
    town = manifest.towns[0]
    sources = find_layers(town.data) if town.data else {}
    if "parcels" in town.layers:
        sources["parcels"] = parse_source("parcels", town.layers["parcels"])
    total = count_features(sources["parcels"]) if "parcels" in sources else None
    return None if total is None else total - sum(int(r.get("parcels_assigned") or 0) for r in rows)
