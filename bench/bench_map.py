"""Browser benchmark of the web map at county scale, in headless Chromium.

Builds a store of N parcels (default 100,000) with the sample generator and the analysis, serves it on loopback,
and measures in Debian's Chromium (driven by Selenium): the first render (page request until the first data
layers are drawn), and panning at street level (each pan until the new view's layers are drawn), plus the size of
the page and of a view's data.

    python bench/bench_map.py              # 100k parcels
    python bench/bench_map.py 20000
"""

from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from analysis.profiles import load_profile  # noqa: E402
from gisapp import create_app  # noqa: E402
from gisapp.pipeline import run_analysis  # noqa: E402
from gisapp.state import map_data  # noqa: E402
from layers.crs import measuring_crs  # noqa: E402
from layers.read import find_layers, load_layers  # noqa: E402
from layers.sample import sample_town  # noqa: E402
from layers.write import write_layers  # noqa: E402
from tests.conftest import headless_chromium, serving  # noqa: E402


def wait(driver, script, timeout=60):
    end = time.time() + timeout
    while time.time() < end:
        if driver.execute_script(script):
            return
        time.sleep(0.02)
    raise TimeoutError(script)


def browse(driver, url: str) -> tuple[float, float, bool, list[float], float]:
    """The first render of the map at ``url`` (seconds), the page's size (KB), whether it opened on the grid
    overview, each pan's seconds at street level, and the size of a street-level view's parcels (KB)."""
    t = time.perf_counter()
    driver.get(url)
    wait(driver, "return document.body.dataset.loaded")
    first_s = time.perf_counter() - t
    page_kb = len(driver.page_source) / 1024
    aggregated = driver.execute_script("return document.body.dataset.aggregated") == "1"

    # Street level in the middle of the town, then pan around.
    driver.execute_script("const m = window.sewerplanMap; m.setView(m.getCenter(), 17, {animate: false});")
    wait(driver, "return document.body.dataset.loading === '0'")
    pans = []
    for dx, dy in [(400, 0), (0, 300), (-400, 0), (0, -300)] * 3:
        before = driver.execute_script("return document.body.dataset.loaded")
        t = time.perf_counter()
        driver.execute_script(f"window.sewerplanMap.panBy([{dx}, {dy}], {{animate: false}});")
        wait(driver, f"return document.body.dataset.loaded !== '{before}' && document.body.dataset.loading === '0'")
        pans.append(time.perf_counter() - t)
    view_kb = driver.execute_async_script(
        "const done = arguments[0]; const b = window.sewerplanMap.getBounds();"
        "fetch(`/api/layers/parcels?bbox=${b.getWest()},${b.getSouth()},${b.getEast()},${b.getNorth()}&zoom=17`)"
        ".then(r => r.text()).then(t => done(t.length / 1024));"
    )
    return first_s, page_kb, aggregated, pans, view_kb


def main(n: int) -> None:
    folder = Path(tempfile.mkdtemp(prefix="sewerplan-bench-map-"))
    store = folder / "store.gpkg"
    write_layers(str(store), sample_town(n))
    profile = load_profile("fort-plain")
    layers = load_layers(find_layers(str(store)), target_crs=measuring_crs("EPSG:2260"))
    run_analysis(layers, profile, out_path=str(store))

    app = create_app(
        {
            "STORE": str(store),
            "USERS_DB": str(folder / "users.sqlite"),
            "SECRET_KEY": "bench",
            "UPLOAD_FOLDER": str(folder / "uploads"),
        }
    )
    t = time.perf_counter()
    with app.app_context():
        map_data()
    load_s = time.perf_counter() - t
    try:
        with serving(app) as url:
            driver = headless_chromium(folder / "profile")
            try:
                first_s, page_kb, aggregated, pans, view_kb = browse(driver, f"{url}/")
            finally:
                driver.quit()
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    print(
        "| parcels | store load s (at serve) | first render s | page KB | first view | pan median s | pan max s | "
        "street-level view data KB |"
    )
    print("|---|---|---|---|---|---|---|---|")
    print(
        f"| {n:,} | {load_s:.1f} | {first_s:.2f} | {page_kb:.0f} | {'grid overview' if aggregated else 'parcels'} "
        f"| {statistics.median(pans):.2f} | {max(pans):.2f} | {view_kb:.0f} |"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
