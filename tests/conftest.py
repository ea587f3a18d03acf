"""Tiny layers in EPSG:2260 whose answers can be seen, the path to the vendored real data (tests/data/), and the
web app and the command line as fixtures, as flaskr's tests/conftest.py has them.

- ``store``: the sample village analysed for Fort Plain (a module may define its own ``store`` fixture).
- ``app``: ``create_app`` on that store with everything else in the test's own folder (``make_app``).
- ``client``: the app's test client; ``auth``: signs that client in (``auth.login()``) and gives its CSRF token.
- ``runner``: ``sewerplan`` as a user types it (``runner.invoke("analyze", "--data", path)``).
"""

from __future__ import annotations

import functools
import io
import os
import re
import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import geopandas as gpd
import pytest
from click.testing import CliRunner, Result
from shapely.affinity import translate
from shapely.geometry import LineString, box

from analysis.profiles import load_profile

# The suite's notices are dated March 2027: the tests run as on a day before that, whatever the calendar says, so a
# notice date is never refused as past (gisapp.notices.today). Subprocesses the tests start inherit it.
os.environ["SEWERPLAN_TODAY"] = TEST_TODAY = "2027-02-15"

CRS = "EPSG:2260"
REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
EXAMPLE_TOWN = REPO / "layers" / "town.example.toml"
# The template's placeholders, and what a town writes instead (letters are refused while a placeholder is left).
FILLED_IN = {
    "1 Example Street": "168 Canal Street",
    "A. N. Example": "Ruth Vandenburgh",
    "(518) 555-0100": "(518) 993-4021",
    "clerk@example.org": "clerk@village-office.test",
}


def receipt_number(i: int, prefix: str = "9589 0710 5270 0123") -> str:
    """A certified mail article number as its receipt prints it (22 digits in groups of four), the ``i``-th of a
    made-up run: ``prefix``'s digits, then ``i``, then the check digit (USPS mod 10: weights 3 and 1 from the right),
    computed here apart from the product's. The register refuses a number whose check digit does not match (one
    typed with a wrong digit), so a made-up number must carry the right one."""
    digits = prefix.replace(" ", "")
    body = digits + str(i).zfill(21 - len(digits))
    assert len(body) == 21, (prefix, i)
    total = sum(int(d) * (3 if k % 2 == 0 else 1) for k, d in enumerate(reversed(body)))
    number = body + str((10 - total % 10) % 10)
    return " ".join(number[j : j + 4] for j in range(0, 22, 4))


def town_toml(municipality: str = "Village of Fort Plain") -> str:
    """The town settings template filled in as a town would, its letterhead naming ``municipality``. The Town of
    Wappinger's leaves out the template's resolution of a time to correct: its § 196-22A sets 10 days, and a
    resolution of a period the law sets is refused."""
    text = EXAMPLE_TOWN.read_text(encoding="utf-8").replace('"Village of Fort Plain"', f'"{municipality}"')
    for placeholder, value in FILLED_IN.items():
        text = text.replace(placeholder, value)
    if municipality == "Town of Wappinger":
        text = re.sub(r'(?m)^"notices\.correction_period_days" = .*\n', "", text)
    return text


# Fort Plain, NY in New York East feet: hand-made layers that go through layers/ validation are placed here, since
# a layer whose coordinates fall outside its CRS's area of use is refused.
NY_ORIGIN = (457_000.0, 1_490_000.0)


def ny_frame(rows: list[dict], crs: str | None = CRS) -> gpd.GeoDataFrame:
    """Like ``frame``, with every geometry moved from (0, 0) to Fort Plain."""
    moved = [{**r, "geometry": None if r["geometry"] is None else translate(r["geometry"], *NY_ORIGIN)} for r in rows]
    return frame(moved, crs=crs)


def frame(rows: list[dict], crs: str | None = CRS) -> gpd.GeoDataFrame:
    """A GeoDataFrame from dicts with a ``geometry`` key."""
    geoms = [r["geometry"] for r in rows]
    data = [{k: v for k, v in r.items() if k != "geometry"} for r in rows]
    return gpd.GeoDataFrame(data, geometry=geoms, crs=crs)


@pytest.fixture
def fort_plain():
    return load_profile("fort-plain")


@pytest.fixture
def street_block():
    """One east-west street: centreline y=0, 50 ft right-of-way (y -25..25), main M-1 along y=0.

    Parcels lie north of the street, their front lot line on the right-of-way edge (y=25), 25 ft from the main.
    """
    streets = frame([{"street_id": "S-1", "street_name": "Main St", "geometry": LineString([(-1000, 0), (2000, 0)])}])
    mains = frame([{"main_id": "M-1", "geometry": LineString([(-1000, 0), (2000, 0)])}])
    return streets, mains


def lot(parcel_id: str, x0: float, y0: float, w: float = 50, d: float = 100, **attrs) -> dict:
    return {"parcel_id": parcel_id, "occupied": True, **attrs, "geometry": box(x0, y0, x0 + w, y0 + d)}


@pytest.fixture
def real_data() -> Path:
    """Real data nobody here drew, vendored with its licences (tests/data/README.md)."""
    return DATA


# -- the services the suite needs: PostgreSQL/PostGIS and a headless Chromium ---------------------------------------


def postgres_url() -> str:
    """The test database; outside CI a missing server skips the test, in CI (``.ci/run`` sets CI) it fails it.

    Under pytest-xdist each worker has a database of its own, the given one's name with the worker's
    (``sewerplan_test_gw0``): some tests read the whole database (an empty one is told so), and a register's
    tables made by two workers at once would meet. ``.ci/run`` makes them; elsewhere a missing one fails the test
    with the two statements that make it.
    """
    url = os.environ.get("SEWERPLAN_TEST_POSTGRES_URL")
    if not url:
        if os.environ.get("CI"):
            pytest.fail("SEWERPLAN_TEST_POSTGRES_URL is not set: .ci/run must start PostgreSQL/PostGIS.")
        pytest.skip("no PostgreSQL/PostGIS (set SEWERPLAN_TEST_POSTGRES_URL; .ci/run does)")
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    return _worker_database(url, worker) if worker else url


@functools.cache
def _worker_database(url: str, worker: str) -> str:
    """The worker's own test database beside the given one, checked to exist and to have PostGIS."""
    from sqlalchemy import create_engine, make_url, text
    from sqlalchemy.exc import OperationalError
    from sqlalchemy.pool import NullPool

    given = make_url(url)
    name = f"{given.database}_{worker}"
    own = given.set(database=name).render_as_string(hide_password=False)
    how = (
        f"as the postgres user: CREATE DATABASE {name} OWNER {given.username}; then in it: CREATE EXTENSION postgis; "
        "(.ci/run does this)"
    )
    engine = create_engine(own, poolclass=NullPool)
    try:
        with engine.connect() as con:
            has_postgis = con.execute(text("SELECT 1 FROM pg_extension WHERE extname = 'postgis'")).first()
    except OperationalError as exc:
        pytest.fail(f"Test worker {worker} has no database {name} ({str(exc.orig).strip()}): make it {how}")
    finally:
        engine.dispose()
    if not has_postgis:
        pytest.fail(f"The test database {name} has no PostGIS: make it {how}")
    return own


@pytest.fixture(scope="module")
def pg_url() -> str:
    return postgres_url()


# -- notice registers: on SQLite, and on the test database with its register tables dropped first ------------------


def fresh_postgres_register(url: str) -> None:
    """Drop every register table (from the register's own metadata) and Alembic's version table."""
    from sqlalchemy import create_engine, text

    from layers.register import METADATA

    engine = create_engine(url)
    METADATA.drop_all(engine)
    with engine.begin() as con:
        con.execute(text("DROP TABLE IF EXISTS alembic_version"))
    engine.dispose()


def register_url(backend: str, tmp_path: Path) -> str:
    """A new register's URL: a SQLite file in ``tmp_path``, or the (worker's) test database emptied of registers."""
    if backend == "postgres":
        url = postgres_url()
        fresh_postgres_register(url)
        return url
    return str(tmp_path / "register.sqlite")


def register_at(backend: str, tmp_path: Path, revision: str, *inserts: str) -> str:
    """A register migrated only up to ``revision`` (as an earlier version wrote it), with ``inserts`` run in it; its
    URL or path."""
    from alembic import command
    from alembic.config import Config
    from sqlalchemy import create_engine, text

    url = register_url(backend, tmp_path)
    engine = create_engine(url if "://" in url else f"sqlite:///{url}")
    config = Config()
    config.set_main_option("script_location", str(REPO / "layers" / "migrations"))
    with engine.begin() as con:
        config.attributes["connection"] = con
        command.upgrade(config, revision)
        for insert in inserts:
            con.execute(text(insert))
    engine.dispose()
    return url


@pytest.fixture(params=["sqlite", "postgres"])
def register(request, tmp_path):
    """A new register, on each backend."""
    from layers.register import Register

    reg = Register(register_url(request.param, tmp_path), create=True)
    yield reg
    reg.close()


def headless_chromium(profile_dir: Path, chromium: str | None = None, driver_path: str | None = None):
    """Debian's Chromium, headless, through its chromedriver: the browser of the web tests and the map benchmark."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium or shutil.which("chromium") or shutil.which("chromium-browser")
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={profile_dir}",
        "--window-size=1400,1000",
    ):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(driver_path or shutil.which("chromedriver")), options=options)


@pytest.fixture
def browser(tmp_path):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    if not (chromium and driver_path):
        if os.environ.get("CI"):
            pytest.fail("CI must have Debian's chromium and chromium-driver installed (see .ci/run).")
        pytest.skip("chromium / chromedriver not installed (apt-get install chromium chromium-driver)")
    driver = headless_chromium(tmp_path / "profile", chromium, driver_path)
    driver.set_script_timeout(20)
    yield driver
    driver.quit()


def wait_job(client, job: dict, timeout: float = 180.0) -> dict:
    """The job once it is done or failed (a run takes seconds alone, a minute on a loaded 2-core machine)."""
    end = time.time() + timeout
    while job["state"] not in ("done", "failed") and time.time() < end:
        time.sleep(0.05)
        job = client.get(f"/api/jobs/{job['id']}").get_json()
    return job


# -- the web app and the command line (flaskr's fixtures) ---------------------------------------------------------


def make_app(store, tmp_path: Path, **extra):
    """The web app on ``store``, with its accounts, uploads, register and notices in ``tmp_path``."""
    from gisapp import create_app

    return create_app(
        {
            "TESTING": True,
            "STORE": str(store),
            "USERS_DB": str(tmp_path / "users.sqlite"),
            "UPLOAD_FOLDER": str(tmp_path / "uploads"),
            "SECRET_KEY": "test",
            "REGISTER": str(tmp_path / "register.sqlite"),
            "NOTICES_FOLDER": str(tmp_path / "notices"),
            **extra,
        }
    )


@contextmanager
def serving(app) -> Iterator[str]:
    """``app`` served on a free local port for a real browser to open: the block gets its address, and the server
    stops when the block ends, however it ends."""
    from werkzeug.serving import make_server

    server = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def csrf(client) -> str:
    """The CSRF token of ``client``'s session (made by its first page)."""
    client.get("/login")
    with client.session_transaction() as s:
        return s["csrf"]


class Runner:
    """``sewerplan`` as typed: every argument a string; stdout and stderr apart (``result.stdout``, ``.stderr``)."""

    def invoke(self, *args, ok: bool | None = None) -> Result:
        from gisapp.cli import main

        result = CliRunner().invoke(main, [str(a) for a in args])
        if ok is True:
            assert result.exit_code == 0, result.output
        return result

    def json(self, *args):
        """The one JSON document a ``--json`` command prints (it must succeed)."""
        import json

        result = self.invoke(*args, "--json", ok=True)
        return json.loads(result.stdout)


class Auth:
    """Signs the test client in and out (flaskr's AuthActions): accounts are added to the app's accounts file."""

    def __init__(self, app, client):
        self.app, self.client = app, client

    def csrf(self) -> str:
        return csrf(self.client)

    def add(self, name: str = "pat", role: str = "planner", password: str = "planner-password") -> None:
        from gisapp.users import add_user

        add_user(self.app.config["USERS_DB"], name, role, password)

    def login(self, name: str = "pat", password: str = "planner-password", *, address: str | None = None):
        extra = {"environ_base": {"REMOTE_ADDR": address}} if address else {}
        return self.client.post("/login", data={"name": name, "password": password, "csrf_token": self.csrf()}, **extra)

    def logout(self):
        return self.client.post("/logout", data={"csrf_token": self.csrf()})


def posted_upload(client, payload: bytes, name: str) -> str:
    """``payload`` sent on the Data page's upload form as the file ``name``: the upload's column-mapping page."""
    sent = client.post(
        "/data/upload",
        data={"dataset": (io.BytesIO(payload), name), "csrf_token": csrf(client)},
        content_type="multipart/form-data",
    )
    assert sent.status_code == 302, sent.get_data(as_text=True)[:500]
    return sent.headers["Location"]


def checked_upload(client, tmp_path: Path, parcels: int = 80) -> str:
    """An upload of ``parcels`` parcels of the sample village ("hill.gpkg"), checked on the Data page: its token."""
    from layers.sample import sample_town
    from layers.write import write_layers

    source = tmp_path / "upload-source.gpkg"
    write_layers(str(source), sample_town(parcels))
    page = posted_upload(client, source.read_bytes(), "hill.gpkg")
    checked = client.post(page, data={"csrf_token": csrf(client)})
    assert "The data can be used" in checked.get_data(as_text=True), checked.get_data(as_text=True)[:2000]
    return page.split("/")[2]


@pytest.fixture
def town_copy(store, tmp_path):
    """A copy of the analysed sample village (``store``): a test that runs, publishes or refuses on it must not touch
    the module's shared one."""
    own = tmp_path / "town.gpkg"
    shutil.copy(store, own)
    return own


@pytest.fixture
def town_copy_app(town_copy, tmp_path):
    """The web app on ``town_copy``."""
    return make_app(town_copy, tmp_path)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """The sample village (300 parcels) analysed for Fort Plain with a notice date, in a GeoPackage store."""
    from layers.sample import sample_town
    from layers.write import write_layers

    path = tmp_path_factory.mktemp("store") / "sewerplan.gpkg"
    write_layers(str(path), sample_town(300))
    Runner().invoke(
        "analyze", "--profile", "fort-plain", "--data", path, "--out", path, "--notice-date", "2027-03-01", ok=True
    )
    return path


@pytest.fixture
def app(store, tmp_path):
    return make_app(store, tmp_path)


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def auth(app, client):
    return Auth(app, client)


@pytest.fixture
def runner():
    return Runner()
