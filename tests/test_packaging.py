"""sewerplan installed as a user installs it (``pip install .``, or a wheel built from the repository), not run from
the checkout: every file the code opens beside itself at run time (templates, static files, profiles, rule tests,
the register's migrations) is in the wheel, and the installed ``sewerplan`` finds them from any folder."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

import pytest

from tests.test_web_upload_limit import free_port

REPO = Path(__file__).resolve().parent.parent
# What the wheel installs: the packages' folders whole, and templates/, installed as gisapp/templates/.
PACKAGED = {"gisapp/": "gisapp/", "layers/": "layers/", "analysis/": "analysis/", "templates/": "gisapp/templates/"}

pytestmark = pytest.mark.slow


# What a checkout gains by being installed and tested, never part of the source: left out where git cannot say.
_NOT_SOURCE = {
    ".git",
    ".venv",
    "__pycache__",
    ".pytest_cache",
    ".ruff_cache",
    ".hypothesis",
    "build",
    "dist",
    "instance",
}


def tracked_files() -> list[str]:
    """The files git tracks; in a copy of them without git's folder (as .ci/run tests one), the files there, less
    what installing and testing made (the virtual environment, caches, egg-info, the instance folder)."""
    if (REPO / ".git").exists():
        listed = subprocess.run(
            ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True, text=True
        ).stdout.split("\0")
        return [name for name in listed if name and (REPO / name).is_file()]
    found = []
    for folder, dirs, files in os.walk(REPO):
        dirs[:] = [d for d in dirs if d not in _NOT_SOURCE and not d.endswith(".egg-info")]
        found += [str((Path(folder) / f).relative_to(REPO)) for f in files if not f.endswith((".pyc", ".lock"))]
    return found


def in_wheel(name: str) -> str | None:
    """Where tracked file ``name`` lands in the wheel (None: not part of the installed product)."""
    for folder, installed in PACKAGED.items():
        if name.startswith(folder):
            return installed + name.removeprefix(folder)
    return None


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, Path, list[str]]:
    """A wheel built from a copy of the tracked files only (a build/ folder left in the checkout cannot hide a
    missing file, and the checkout is not written to), installed into a folder of its own."""
    tracked = tracked_files()
    root = tmp_path_factory.mktemp("packaging")
    source = root / "source"
    for name in tracked:
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, source / name)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input", "-q"]
    subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(root / "dist"), str(source)],
        check=True,
        capture_output=True,
    )
    (wheel,) = (root / "dist").glob("sewerplan-*.whl")
    target = root / "site"
    subprocess.run([*pip, "install", "--no-deps", "--target", str(target), str(wheel)], check=True, capture_output=True)
    return wheel, target, tracked


def test_the_wheel_holds_every_tracked_file_of_the_installed_folders(installed):
    wheel, _, tracked = installed
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    expected = {in_wheel(name) for name in tracked} - {None}
    assert {"gisapp/templates/base.html", "gisapp/static/map.js", "analysis/rule_tests.toml"} <= expected
    assert sorted(expected - names) == []
    # Nothing from tests/, docs/ or bench/ is installed.
    assert (
        sorted(n for n in names if n.split("/")[0] not in ("gisapp", "layers", "analysis", "sewerplan-0.1.0.dist-info"))
        == []
    )


def test_the_installed_sewerplan_samples_analyses_and_serves_from_another_folder(installed, tmp_path):
    _, target, _ = installed
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SEWERPLAN_", "PYTHON"))} | {
        "PYTHONPATH": str(target)  # before the environment's site-packages, where the checkout is installed editable
    }
    sewerplan = [sys.executable, str(target / "bin" / "sewerplan")]

    def run(*args: str) -> str:
        done = subprocess.run([*sewerplan, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    run("sample", "--out", "town.gpkg", "--parcels", "60")
    run("analyze", "--profile", "poughkeepsie", "--data", "town.gpkg", "--out", "town.gpkg")  # a bundled profile
    # The README's first notices step: an installed sewerplan has no docs/ to copy the town settings template from.
    assert "Town settings template written to town.toml" in run("notices", "town-template")
    assert (tmp_path / "town.toml").read_bytes() == (REPO / "layers" / "town.example.toml").read_bytes()
    # The installed packages are the ones imported, and the register's migrations are found: a new register is
    # brought to the current schema.
    check = "from gisapp import TEMPLATES; from layers.register import Register; print(TEMPLATES)"
    check += "; print(Register('register.sqlite').count())"
    done = subprocess.run([sys.executable, "-c", check], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(target / "gisapp" / "templates"), "0"]

    # The instance folder is instance/ here, beside the store and accounts, not one beside the installed package.
    (tmp_path / "instance").mkdir(exist_ok=True)
    (tmp_path / "instance" / "config.py").write_text("SERVER_THREADS = 3\n")
    port = free_port()
    server = subprocess.Popen(
        [*sewerplan, "serve", "--store", "town.gpkg", "--port", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"

    def get(path: str) -> tuple[int, str, bytes]:
        try:
            with urllib.request.urlopen(url + path, timeout=10) as response:
                return response.status, response.headers.get_content_type(), response.read()
        except urllib.error.HTTPError as refused:
            return refused.code, refused.headers.get_content_type(), refused.read()

    try:
        for _ in range(300):
            try:
                status, kind, page = get("/")
                break
            except OSError:
                time.sleep(0.1)
        else:
            raise AssertionError("the server did not start")
        assert (status, kind) == (200, "text/html") and b"/static/map.js" in page
        for path in ("gisapp/static/map.js", "gisapp/static/vendor/leaflet/leaflet.js", "gisapp/static/blank.png"):
            assert get("/" + path.removeprefix("gisapp/"))[::2] == (200, (REPO / path).read_bytes())
        for page in ("/notices", "/summary", "/plans", "/data/upload", "/login"):
            assert get(page)[:2] == (200, "text/html"), page
        status, kind, missing = get("/no-such-page")  # error.html
        assert (status, kind) == (404, "text/html") and b"<html" in missing.lower()
    finally:
        server.terminate()
        output = server.communicate(timeout=20)[0]
    assert "Traceback" not in output, output
    assert "; 3 threads;" in output, output
    assert (tmp_path / "instance" / "secret_key").exists() and not (target / "instance").exists()
