"""Load test of the web app as `sewerplan serve` runs it (waitress), on loopback only; it stops by itself.

    .venv/bin/python bench/bench_web.py                 # 2,000 parcels, 20 users, 60 s, 3 runs, then 8 runs
    .venv/bin/python bench/bench_web.py --parcels 500 --seconds 10 --after-runs 2

Setup (not timed): the sample town in a GeoPackage store, analysed, with its connection notices issued into a
SQLite register, in a temporary folder. Then ``sewerplan serve`` starts in its own process (local mode: no
accounts) and a bounded pool of ``--users`` threads, each a browser session with its own cookies, loops for
``--seconds``: the map API (parcels, mains, streets, manholes in a random view), searches, the register page
(/notices), parcel popups, and now and then the map and summary pages, waiting ``--think`` seconds (0.2 to 1 by
default, a brisk human) between requests. ``--runs`` analysis runs are started
during the load. Afterwards ``--after-runs`` more runs are made one after another, to see whether memory comes
back. The server's resident memory is sampled from /proc (Linux).

Prints a Markdown table (requests, errors, p50/p95/p99 per kind) and the memory line for bench/README.md, and
writes the raw numbers to build/bench_web.json.
"""

from __future__ import annotations

import argparse
import http.cookiejar
import json
import os
import random
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import quote

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

TARGETS_MS = {"map API": 300, "page": 1000}


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sewerplan(*args: str, cwd: Path, env: dict) -> None:
    subprocess.run([sys.executable, "-m", "gisapp.cli", *args], cwd=cwd, env=env, check=True, capture_output=True)


class Session:
    """One user: a cookie jar and a CSRF token, like a browser tab."""

    def __init__(self, base: str):
        self.base = base
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        self.csrf = ""

    def get(self, path: str, timeout: float = 60) -> tuple[int, bytes]:
        return self._open(urllib.request.Request(self.base + path), timeout)

    def post(self, path: str, form: dict, timeout: float = 60) -> tuple[int, bytes]:
        body = urllib.parse.urlencode(form).encode()
        headers = {"X-CSRF-Token": self.csrf, "Content-Type": "application/x-www-form-urlencoded"}
        return self._open(urllib.request.Request(self.base + path, data=body, headers=headers), timeout)

    def _open(self, request, timeout) -> tuple[int, bytes]:
        try:
            with self.opener.open(request, timeout=timeout) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()
        except OSError as exc:  # timed out or refused: an error, counted, and the user goes on
            return 0, repr(exc).encode()

    def sign_on(self) -> None:
        status, page = self.get("/")
        assert status == 200, status
        self.csrf = re.search(rb'data-csrf="([^"]+)"', page).group(1).decode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parcels", type=int, default=2000)
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--after-runs", type=int, default=8)
    parser.add_argument("--threads", type=int, default=8, help="server threads (SERVER_THREADS)")
    parser.add_argument(
        "--no-warm-run", dest="warm_run", action="store_false", help="start measuring before any analysis run"
    )
    parser.add_argument(
        "--think", type=float, nargs=2, default=(0.2, 1.0), metavar=("MIN", "MAX"),
        help="seconds a user waits between requests (0 0: back to back, a stress test)",
    )  # fmt: skip
    args = parser.parse_args()

    import geopandas as gpd

    from layers.sample import sample_town
    from layers.write import write_layers

    work = Path(tempfile.mkdtemp(prefix="sewerplan-bench-web-"))
    env = os.environ | {"SEWERPLAN_INSTANCE": str(work / "instance"), "PYTHONPATH": str(REPO)}
    store = work / "sewerplan.gpkg"
    write_layers(str(store), sample_town(args.parcels))
    sewerplan("analyze", "--profile", "fort-plain", "--data", str(store), "--out", str(store), cwd=work, env=env)
    register = work / "instance" / "register.sqlite"
    (work / "instance").mkdir(exist_ok=True)
    (work / "instance" / "config.py").write_text(f"REGISTER = {str(register)!r}\n")
    (work / "town.toml").write_text((REPO / "layers" / "town.example.toml").read_text())  # the letters' letterhead
    sewerplan(
        "notices", "issue", "--profile", "fort-plain", "--data", str(store), "--notice-date", "2027-03-01",
        "--register", str(register), "--new", "--out", str(work / "notices"), cwd=work, env=env,
    )  # fmt: skip
    results = gpd.read_file(store, layer="parcel_results").to_crs(4326)
    ids = list(results["parcel_id"].astype(str))
    west, south, east, north = results.total_bounds
    words = ["main", "st", "ave", "smith", "hill", "1", "2", "church", "river"]

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [sys.executable, "-m", "gisapp.cli", "serve", "--store", str(store), "--port", str(port),
         "--threads", str(args.threads), "--users-db", str(work / "instance" / "users.sqlite")],
        cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(base + "/tiles/blank/0/0/0.png", timeout=2).read()
                break
            except OSError:
                time.sleep(0.1)
        memory: list[tuple[float, float]] = []
        sampling = threading.Event()

        def sample() -> None:
            while not sampling.is_set():
                memory.append((time.time(), rss_mb(server.pid)))
                time.sleep(0.5)

        # warm up: every kind of request once, so caches are built before the start is measured
        warm = Session(base)
        warm.sign_on()
        for path in ("/summary", "/notices", f"/api/parcel?id={quote(ids[0])}", "/api/search?q=main"):
            warm.get(path)
        for layer in ("parcels", "mains", "streets", "manholes"):
            warm.get(f"/api/layers/{layer}?bbox={west},{south},{east},{north}&zoom=16")
        warm.get("/")
        if args.warm_run:  # a run is a kind of request too: its first one imports and builds what later ones reuse
            status, body = warm.post("/analysis/run", {"profile": "fort-plain"})
            job = json.loads(body)
            while status == 202 and job.get("state") in ("queued", "running"):
                time.sleep(0.3)
                polled, raw = warm.get(f"/api/jobs/{job['id']}")
                job = json.loads(raw) if polled == 200 else job
            for path in ("/", "/summary", f"/api/parcel?id={quote(ids[0])}"):  # the reloaded store, once
                warm.get(path)
        time.sleep(1)
        start_mb = rss_mb(server.pid)
        threading.Thread(target=sample, daemon=True).start()

        timings: dict[str, list[float]] = {}
        errors: dict[str, int] = {}
        lock = threading.Lock()
        deadline = time.time() + args.seconds

        def record(kind: str, seconds: float, ok: bool) -> None:
            with lock:
                timings.setdefault(kind, []).append(seconds)
                if not ok:
                    errors[kind] = errors.get(kind, 0) + 1

        def view() -> str:
            zoom = random.choice([15, 16, 17, 18])
            span = 0.02 / 2 ** (zoom - 15)
            x = random.uniform(west, east - span)
            y = random.uniform(south, north - span)
            return f"bbox={x:.6f},{y:.6f},{x + span:.6f},{y + span:.6f}&zoom={zoom}"

        def user(seed: int) -> None:
            rng = random.Random(seed)
            me = Session(base)
            me.sign_on()
            while time.time() < deadline:
                roll = rng.random()
                if roll < 0.45:
                    kind, path = (
                        "map API",
                        f"/api/layers/{rng.choice(['parcels', 'mains', 'streets', 'manholes'])}?{view()}",
                    )
                elif roll < 0.65:
                    kind, path = "parcel popup", f"/api/parcel?id={quote(rng.choice(ids))}"
                elif roll < 0.80:
                    kind, path = "search", f"/api/search?q={rng.choice(words)}"
                elif roll < 0.92:
                    kind, path = "register page (/notices)", "/notices"
                elif roll < 0.96:
                    kind, path = "map page", "/"
                else:
                    kind, path = "summary page", "/summary"
                t0 = time.perf_counter()
                status, _ = me.get(path, timeout=30)
                record(kind, time.perf_counter() - t0, status == 200)
                time.sleep(rng.uniform(*args.think))

        run_log: list[dict] = []

        def runs(count: int, spaced: float | None) -> None:
            me = Session(base)
            me.sign_on()
            for k in range(count):
                if spaced is not None:
                    time.sleep(max(0.0, start + spaced * (k + 1) - time.time()))
                t0 = time.perf_counter()
                status, body = me.post("/analysis/run", {"profile": "fort-plain"})
                job = json.loads(body)
                while status == 202 and job.get("state") in ("queued", "running"):
                    time.sleep(0.3)
                    polled, raw = me.get(f"/api/jobs/{job['id']}")
                    if polled == 200:
                        job = json.loads(raw)
                run_log.append(
                    {"status": status, "state": job.get("state"), "seconds": time.perf_counter() - t0,
                     "rss_mb": rss_mb(server.pid)}
                )  # fmt: skip

        start = time.time()
        with ThreadPoolExecutor(max_workers=args.users + 1) as pool:
            futures = [pool.submit(user, k) for k in range(args.users)]
            futures.append(pool.submit(runs, args.runs, args.seconds / (args.runs + 1)))
            for f in futures:
                f.result()
        time.sleep(2)
        after_load_mb = rss_mb(server.pid)
        during = [m for t, m in memory]
        runs(args.after_runs, None)
        time.sleep(2)
        end_mb = rss_mb(server.pid)
        sampling.set()
    finally:
        server.terminate()
        server.communicate(timeout=30)

    rows = []
    for kind, values in sorted(timings.items()):
        ms = sorted(v * 1000 for v in values)
        q = statistics.quantiles(ms, n=100, method="inclusive") if len(ms) > 1 else ms * 99
        target = TARGETS_MS["map API"] if kind == "map API" else TARGETS_MS["page"]
        rows.append(
            {"kind": kind, "requests": len(ms), "errors": errors.get(kind, 0), "p50": q[49], "p95": q[94],
             "p99": q[98], "target_p95": target}
        )  # fmt: skip
    doc = {
        "parcels": args.parcels,
        "users": args.users,
        "seconds": args.seconds,
        "server_threads": args.threads,
        "rows": rows,
        "runs_during_load": run_log[: args.runs],
        "runs_after": run_log[args.runs :],
        "memory_mb": {
            "start": start_mb,
            "peak_during_load": max(during) if during else None,
            "after_load_and_runs": after_load_mb,
            "after_sequential_runs": end_mb,
        },
    }
    out = REPO / "build" / "bench_web.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(doc, indent=2))
    total = sum(r["requests"] for r in rows)
    print(f"{args.users} users (think {args.think[0]}-{args.think[1]} s), {args.seconds:.0f} s, {args.parcels:,} "
          f"parcels, {args.threads} server threads: "
          f"{total:,} requests ({total / args.seconds:.0f}/s), {sum(r['errors'] for r in rows)} errors")  # fmt: skip
    print(
        "\n| request | requests | errors | p50 ms | p95 ms | p99 ms | target p95 | |\n|---|---|---|---|---|---|---|---|"
    )
    for r in rows:
        met = "met" if r["p95"] < r["target_p95"] and r["errors"] == 0 else "**not met**"
        print(f"| {r['kind']} | {r['requests']:,} | {r['errors']} | {r['p50']:.0f} | {r['p95']:.0f} | "
              f"{r['p99']:.0f} | < {r['target_p95']} | {met} |")  # fmt: skip
    print(
        "\nRuns:", ", ".join(f"{r['status']} {r['state']} {r['seconds']:.1f} s ({r['rss_mb']:.0f} MB)" for r in run_log)
    )
    mem = doc["memory_mb"]
    growth = (mem["after_sequential_runs"] - mem["start"]) / mem["start"] * 100
    print(
        f"\nServer memory: {mem['start']:.0f} MB at start, {mem['peak_during_load'] or 0:.0f} MB peak under load, "
        f"{mem['after_load_and_runs']:.0f} MB after the load and its {args.runs} runs, "
        f"{mem['after_sequential_runs']:.0f} MB after {args.after_runs} more runs ({growth:+.1f}% from start)"
    )


if __name__ == "__main__":
    main()
