"""Benchmark `sewerplan batch` on a synthetic state against the same towns run one by one without Dask.

1. The state is generated once (``bench/make_state.py``: N towns of varied sizes under the three profiles, one
   GeoParquet file per layer with a municipality column), not timed.
2. **Single-town runs**: in one plain Python process (no Dask), each town in turn through the very function a
   batch task runs (``gisapp.batch.run_town``: profile, ``load_layers`` on the town's rows, ``run_analysis``,
   writing its GeoParquet partition). Their times add up to what the work costs without a cluster.
3. **A pool of W plain processes** (``concurrent.futures``, no Dask) running the same towns: two towns at once
   without Dask, the baseline that tells Dask's cost from what sharing the cores costs.
4. **Batch**: ``sewerplan batch --manifest towns.toml --out ... --workers W`` in a fresh process (LocalCluster start
   included), while every process of the tree is sampled for its resident memory twice a second.

Reported: wall time of the batch; the sum of the single-town runs; the ratio of the batch's wall time to that sum
divided by the workers (1.0 would be perfect scaling; the overhead target is under 15%); the sum of the task times
inside the batch against the single runs (what running beside another worker costs each task); peak memory of
each worker process (target under 2 GB) and of the client; the machine's load average, since the machine is
shared.

    python bench/bench_batch.py                                  # 40 towns, 4,000,000 parcels, 2 workers
    python bench/bench_batch.py --towns 6 --parcels 60000        # a quick run while developing
    python bench/bench_batch.py --statewide                      # also the statewide manifest (by location)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
BIN = Path(sys.executable).parent


def single_runs(folder: Path) -> dict:
    """Every town of the manifest, one after another, in this process, without Dask."""
    import resource

    from gisapp.batch import TownJob, output_crs_for, run_town
    from layers.manifest import read_manifest

    manifest = read_manifest(folder / "towns.toml")
    out = folder / "single"
    job = TownJob(out_dir=str(out), output_crs=output_crs_for(manifest), gpkg=False)
    towns = []
    for town in manifest.towns:
        started, cpu = time.perf_counter(), time.process_time()
        record = run_town(town, job)
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        if record["status"] != "ok":
            raise SystemExit(f"{town.name} failed: {record['error']}")
        towns.append({"name": town.name, "parcels": record["parcels"], "wall_s": wall, "cpu_s": cpu})
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "towns": towns,
        "sum_s": sum(t["wall_s"] for t in towns),
        "cpu_sum_s": sum(t["cpu_s"] for t in towns),
        "process_cpu_s": usage.ru_utime + usage.ru_stime,  # imports included
        "peak_mb": usage.ru_maxrss / 1024,
    }


def _pool_task(town, job) -> dict:
    started, cpu = time.perf_counter(), time.process_time()
    record = _run_town(town, job)
    return {
        "name": town.name,
        "status": record["status"],
        "error": record.get("error"),
        "wall_s": time.perf_counter() - started,
        "cpu_s": time.process_time() - cpu,
    }


def _run_town(town, job):
    from gisapp.batch import run_town

    return run_town(town, job)


def pool_runs(folder: Path, workers: int) -> dict:
    """The same towns on ``workers`` plain worker processes, without Dask: what running W towns at once costs.

    The towns go to the processes in manifest order (largest first, as the batch gets them), each task's analysis
    on its process's share of the cores, as a LocalCluster's tasks are. Its wall time, pool start included, is the
    baseline the batch's overhead is measured against: both run W analyses at once on the same cores, so what
    differs is Dask (its scheduler, nannies, workers' event loops and monitors, the cluster's start and close).
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from gisapp.batch import TownJob, output_crs_for
    from layers.manifest import read_manifest

    manifest = read_manifest(folder / "towns.toml")
    job = TownJob(
        out_dir=str(folder / "pool"),
        output_crs=output_crs_for(manifest),
        gpkg=False,
        threads=max(1, (os.cpu_count() or 1) // workers),
    )
    started = time.perf_counter()
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        towns = list(pool.map(_pool_task, manifest.towns, [job] * len(manifest.towns)))
    failed = [t for t in towns if t["status"] != "ok"]
    if failed:
        raise SystemExit(f"{failed[0]['name']} failed in the pool: {failed[0]['error']}")
    return {
        "wall_s": time.perf_counter() - started,
        "task_sum_s": sum(t["wall_s"] for t in towns),
        "task_cpu_sum_s": sum(t["cpu_s"] for t in towns),
    }


class TreeSampler:
    """Peak resident memory of a process and each of its descendants, sampled every ``every`` seconds."""

    def __init__(self, pid: int, every: float = 0.5):
        import psutil

        self.root = psutil.Process(pid)
        self.every = every
        self.peaks: dict[int, tuple[str, float]] = {}
        self.cpu: dict[int, float] = {}  # last CPU seconds seen (user + system) of each process
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import psutil

        while not self.stop.is_set():
            try:
                procs = [self.root, *self.root.children(recursive=True)]
            except psutil.Error:
                break
            for proc in procs:
                try:
                    rss = proc.memory_info().rss / 1024**2
                    cmd = " ".join(proc.cmdline()[:3])
                    times = proc.cpu_times()
                    self.cpu[proc.pid] = times.user + times.system
                except psutil.Error:
                    continue
                if rss > self.peaks.get(proc.pid, ("", 0.0))[1]:
                    self.peaks[proc.pid] = (cmd, rss)
            self.stop.wait(self.every)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


def batch_run(folder: Path, workers: int, manifest: str = "towns.toml") -> dict:
    out = folder / ("batch" if manifest == "towns.toml" else "batch-statewide")
    cmd = [str(BIN / "sewerplan"), "batch", "--manifest", str(folder / manifest), "--out", str(out)]
    cmd += ["--workers", str(workers), "--overwrite", "--json"]
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with TreeSampler(proc.pid) as sampler:
        stdout, stderr = proc.communicate()
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"batch failed ({proc.returncode}):\n{stderr[-3000:]}\n{stdout[-3000:]}")
    doc = json.loads(stdout)
    rows = doc["municipalities"]
    by_pid: dict[int, float] = {}
    for r in rows:
        by_pid[r["worker_pid"]] = max(by_pid.get(r["worker_pid"], 0.0), r["worker_peak_mb"])
    sampled_workers = {pid: peak for pid, (cmd, peak) in sampler.peaks.items() if pid in by_pid}
    client = sampler.peaks.get(proc.pid, ("", 0.0))[1]
    return {
        "wall_s": wall,
        "batch_wall_s": doc["wall_time_s"],
        "task_sum_s": sum(r["run_time_s"] for r in rows),
        "towns": {r["municipality"]: r["run_time_s"] for r in rows},
        "worker_peak_mb": by_pid,
        "worker_peak_sampled_mb": sampled_workers,
        "client_peak_mb": client,
        "task_cpu_sum_s": sum(r["cpu_s"] for r in rows),
        "tree_cpu_s": sum(sampler.cpu.values()),  # client, scheduler, nannies, workers: imports and start included
        "cluster": doc["cluster"],
        "ok": doc["ok"],
        "failed": doc["failed"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--towns", type=int, default=40)
    parser.add_argument("--parcels", type=int, default=4_000_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--folder", help="where the state is (generated there if missing)")
    parser.add_argument("--statewide", action="store_true", help="also run statewide.toml (parcels by location)")
    parser.add_argument("--single", metavar="FOLDER", help=argparse.SUPPRESS)
    parser.add_argument("--pool", metavar="FOLDER", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.single:
        print(json.dumps(single_runs(Path(args.single))))
        return
    if args.pool:
        print(json.dumps(pool_runs(Path(args.pool), args.workers)))
        return
    folder = Path(args.folder or Path(tempfile.gettempdir()) / f"sewerplan-state-{args.towns}-{args.parcels}")
    report: dict = {"towns": args.towns, "parcels": args.parcels, "workers": args.workers, "cores": os.cpu_count()}
    if not (folder / "towns.toml").exists():
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, str(ROOT / "bench" / "make_state.py"), str(folder), "--towns", str(args.towns)]
            + ["--parcels", str(args.parcels)],
            check=True,
        )
        report["generate_s"] = time.perf_counter() - started
    report["load_before"] = os.getloadavg()
    single = subprocess.run(
        [sys.executable, __file__, "--single", str(folder)], check=True, capture_output=True, text=True
    )
    report["single"] = json.loads(single.stdout.strip().splitlines()[-1])
    report["load_between"] = os.getloadavg()
    pool = subprocess.run(
        [sys.executable, __file__, "--pool", str(folder), "--workers", str(args.workers)],
        check=True,
        capture_output=True,
        text=True,
    )
    report["pool"] = json.loads(pool.stdout.strip().splitlines()[-1])
    report["load_after_pool"] = os.getloadavg()
    report["batch"] = batch_run(folder, args.workers)
    report["load_after"] = os.getloadavg()
    if args.statewide:
        report["statewide"] = batch_run(folder, args.workers, "statewide.toml")
        report["load_after_statewide"] = os.getloadavg()
    s, b, p = report["single"], report["batch"], report["pool"]
    # Dask's overhead: the batch against the same towns on as many plain processes (both run W at once).
    report["dask_wall_vs_pool_wall"] = b["wall_s"] / p["wall_s"] - 1
    report["dask_task_cpu_vs_pool_task_cpu"] = b["task_cpu_sum_s"] / p["task_cpu_sum_s"] - 1
    report["ratio_wall_to_single_sum"] = b["wall_s"] / s["sum_s"]
    report["overhead_vs_ideal"] = b["wall_s"] / (s["sum_s"] / args.workers) - 1
    report["task_sum_vs_single_sum"] = b["task_sum_s"] / s["sum_s"] - 1
    # CPU seconds do not depend on what else the shared machine runs: the extra work the batch does.
    report["task_cpu_vs_single_cpu"] = b["task_cpu_sum_s"] / s["cpu_sum_s"] - 1
    report["tree_cpu_vs_single_process_cpu"] = b["tree_cpu_s"] / s["process_cpu_s"] - 1
    largest = max(s["towns"], key=lambda t: t["wall_s"])
    report["largest_town"] = largest
    out = folder / "bench_batch.json"
    out.write_text(json.dumps(report, indent=2, default=str))
    print(json.dumps({k: v for k, v in report.items() if k not in ("single", "batch", "pool")}, indent=2, default=str))
    print(
        f"| {args.towns} | {args.parcels:,} | {args.workers} | {b['wall_s']:.1f} | {s['sum_s']:.1f} | "
        f"{report['ratio_wall_to_single_sum']:.2f} | {report['overhead_vs_ideal']:+.0%} | "
        f"{report['task_sum_vs_single_sum']:+.0%} | {report['task_cpu_vs_single_cpu']:+.0%} | "
        f"{report['tree_cpu_vs_single_process_cpu']:+.0%} | {max(b['worker_peak_mb'].values()):,.0f} | "
        f"{max(b['worker_peak_sampled_mb'].values(), default=0):,.0f} | {b['client_peak_mb']:,.0f} | "
        f"{report['load_before'][0]:.1f} / {report['load_after'][0]:.1f} |"
    )
    print(
        f"pool of {args.workers} plain processes: wall {p['wall_s']:.1f} s, task CPU {p['task_cpu_sum_s']:.1f} s; "
        f"batch against it: wall {report['dask_wall_vs_pool_wall']:+.1%}, "
        f"task CPU {report['dask_task_cpu_vs_pool_task_cpu']:+.1%}"
    )
    if args.statewide:
        w = report["statewide"]
        print(
            f"statewide: wall {w['wall_s']:.1f} s, tasks {w['task_sum_s']:.1f} s, worker peak "
            f"{max(w['worker_peak_mb'].values()):,.0f} MB, client {w['client_peak_mb']:,.0f} MB"
        )
    print(f"full report: {out}")


if __name__ == "__main__":
    main()
