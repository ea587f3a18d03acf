"""Benchmark of the notices page with a full register: response times under concurrent requests, with and without a
writer holding the register's write lock (as a batch being issued elsewhere does).

Builds a store big enough for about 2,000 mandated parcels, records one notice for each in its register (the
register's own bookkeeping: prepared, then issued, without writing letters), serves the app on loopback and sends
GET /notices (first page, later pages, a search, a status filter) from several threads at once.

    python bench/bench_notices.py            # 8,000 parcels (about 2,000 notices), 8 clients x 40 requests
    python bench/bench_notices.py 4000 4
"""

from __future__ import annotations

import datetime as dt
import logging
import shutil
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from analysis.notices import due_notices  # noqa: E402
from analysis.profiles import load_profile  # noqa: E402
from gisapp import create_app  # noqa: E402
from gisapp.pipeline import run_analysis  # noqa: E402
from layers.crs import measuring_crs  # noqa: E402
from layers.read import find_layers, load_layers  # noqa: E402
from layers.register import Register, new_batch_id  # noqa: E402
from layers.sample import sample_town  # noqa: E402
from layers.store import read_results  # noqa: E402
from layers.write import write_layers  # noqa: E402
from tests.conftest import serving  # noqa: E402

URLS = ("/notices", "/notices?page=7", "/notices?q=smith", "/notices?status=open&page=3", "/notices?overdue=1")


def fill(store: Path) -> tuple[Register, int]:
    day = dt.date(2027, 3, 1)
    register = Register(store=store, create=True)
    due = due_notices(read_results(store), profile=load_profile("fort-plain"), notice_date=day)
    batch = register.prepare_batch(
        due,
        batch_id=new_batch_id(day),
        kind="connection",
        notice_date=day,
        deadline=day + dt.timedelta(days=90),
        folder=str(store.parent),
        actor="bench",
        profile=("fort-plain", "bench"),
    )
    letters = {
        n["notice_id"]: (f"{batch['batch_id']}/letters/{i:04d}.pdf", i) for i, n in enumerate(batch["notices"], 1)
    }
    register.finish_batch(batch["batch_id"], letters=letters, actor="bench")
    return register, len(letters)


def measure(url: str, clients: int, requests: int) -> list[float]:
    times: list[float] = []
    lock = threading.Lock()

    def client(k: int) -> None:
        for i in range(requests):
            start = time.perf_counter()
            with urllib.request.urlopen(url + URLS[(k + i) % len(URLS)], timeout=120) as response:
                response.read()
            with lock:
                times.append(time.perf_counter() - start)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return times


def report(name: str, times: list[float]) -> None:
    times = sorted(times)
    p95 = times[int(0.95 * (len(times) - 1))]
    print(f"| {name} | {len(times)} | {statistics.median(times):.3f} | {p95:.3f} | {times[-1]:.3f} |")


def main(n: int, clients: int) -> None:
    folder = Path(tempfile.mkdtemp(prefix="sewerplan-bench-notices-"))
    store = folder / "store.gpkg"
    write_layers(str(store), sample_town(n))
    layers = load_layers(find_layers(str(store)), target_crs=measuring_crs("EPSG:2260"))
    run_analysis(layers, load_profile("fort-plain"), out_path=str(store))
    register, count = fill(store)
    app = create_app(
        {"STORE": str(store), "USERS_DB": str(folder / "u.sqlite"), "SECRET_KEY": "bench", "LOCAL_MODE": True}
    )
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    try:
        with serving(app) as url:
            urllib.request.urlopen(url + "/notices").read()  # warm up
            print(f"{n:,} parcels, {count:,} notices in the register, {clients} clients x 40 requests")
            print("| case | requests | p50 s | p95 s | max s |\n|---|---|---|---|---|")
            report("idle register", measure(url, clients, 40))
            writer = sqlite3.connect(register.path, timeout=1)
            writer.execute("BEGIN IMMEDIATE")  # a batch being recorded elsewhere holds the write lock meanwhile
            try:
                report("a writer holds the write lock", measure(url, clients, 40))
            finally:
                writer.rollback()
                writer.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 8000, int(sys.argv[2]) if len(sys.argv) > 2 else 8)
