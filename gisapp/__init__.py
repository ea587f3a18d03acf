"""The sewerplan web app: ``create_app(test_config=None)`` builds it (flaskr's factory pattern).

Settings come from ``SETTINGS`` defaults, then ``instance/config.py`` if present, then ``test_config``. Every
setting is listed in ``SETTINGS`` with its help text (documented in docs/web.md, checked by tests/test_docs.py).
"""

from __future__ import annotations

import os
import signal
import sys


def _interrupted_while_starting(signum, frame) -> None:
    """Ctrl+C while the command line loads its libraries (its first second or two): "Aborted!", as click says once
    the command runs, not a traceback from inside an import. Nothing is written before the command runs, so the
    process ends at once: a SystemExit raised here, inside some library's import, was once swallowed, and the
    command went on to exit 0 after saying "Aborted!" (the suite caught it, one run in many)."""
    sys.stderr.write("\nAborted!\n")
    sys.stderr.flush()
    os._exit(130)


# Only for the `sewerplan` command, until gisapp.cli has loaded and gives Ctrl+C back to Python and click
# (``gisapp.cli.main``): a test run or a program importing the app keeps its own handling.
if os.path.basename(sys.argv[0] if sys.argv else "") == "sewerplan":
    signal.signal(signal.SIGINT, _interrupted_while_starting)

import secrets  # noqa: E402 - after the handler above: importing the web stack takes a moment
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from flask import Config, Flask  # noqa: E402

SETTINGS: dict[str, tuple[Any, str]] = {
    "STORE": ("instance/sewerplan.gpkg", "The GeoPackage store whose layers and latest results are shown."),
    "MAX_LISTED_PARCELS": (500, "How many mandated parcels the summary page lists."),
    "SECRET_KEY": (None, "Signs the session cookie; generated once into instance/secret_key when not set."),
    "MAX_CONTENT_LENGTH": (200 * 1024 * 1024, "Largest upload accepted, in bytes (HTTP 413 beyond it)."),
    "MAX_UNZIPPED_BYTES": (1024 * 1024 * 1024, "Largest total an uploaded zip may unpack to, counted while unpacking."),
    "UPLOAD_FOLDER": ("instance/uploads", "Where uploads are kept: outside the served static folder."),
    "USERS_DB": ("instance/users.sqlite", "The accounts file (sewerplan users add)."),
    "LOCAL_MODE": (True, "Bound to 127.0.0.1: with no accounts, run as one local planner without a login."),
    "MAP_MAX_FEATURES": (5000, "Most parcels sent for one map view; beyond it a grid overview is sent instead."),
    "DATE_FORMAT": (
        "%B %-d, %Y",
        "How the pages and the printed map write dates (strftime codes; %-d and %-m drop the leading zero): "
        "'%B %-d, %Y' is May 30, 2027, '%m/%d/%Y' is 05/30/2027.",
    ),
    "SESSION_COOKIE_SECURE": (False, "Send the session cookie over HTTPS only (set True behind HTTPS)."),
    "SESSION_COOKIE_SAMESITE": ("Lax", "The session cookie's SameSite attribute: not sent on cross-site POSTs."),
    "SESSION_COOKIE_HTTPONLY": (True, "The session cookie is not readable by page scripts."),
    "LOGIN_MAX_FAILURES": (5, "Failed sign-ins for one account name before it is locked."),
    "LOGIN_MAX_FAILURES_PER_ADDRESS": (20, "Failed sign-ins from one client address before it is locked."),
    "LOGIN_LOCKOUT_MINUTES": (15, "How long a lock lasts, and the window in which failures are counted."),
    "UPLOAD_TTL_HOURS": (24, "Uploads not used for this many hours are deleted (published stores are kept)."),
    "UPLOAD_QUOTA_BYTES": (
        2 * 1024 * 1024 * 1024,
        "Most bytes one user's uploads may take on disk together, counted while unpacking.",
    ),
    "KEEP_PREVIOUS_STORES": (5, "How many earlier versions of the town's store are kept to restore from."),
    "SERVER_THREADS": (8, "Request threads of the production server (sewerplan serve)."),
    "REQUEST_TIMEOUT": (60, "Seconds a connection may sit idle (a slow or stalled client) before it is closed."),
    "TRUSTED_PROXY": (
        None,
        "Address of the HTTPS reverse proxy in front of the server, whose X-Forwarded-For/-Proto are believed.",
    ),
    "REGISTER": (
        None,
        "The notice register: a SQLite path or database URL (default SEWERPLAN_DATABASE_URL, else the register "
        "recorded in the store; the notices page offers to create one beside the store). It must be the register the "
        "store records, if it records one: another is refused (one register per town).",
    ),
    "NOTICES_FOLDER": ("instance/notices", "Where issued batches (mailing lists, labels, letters) are written."),
}


def _templates() -> Path:
    """The Jinja templates: installed inside the package (gisapp/templates/, pyproject.toml's package-dir), or, run
    from a checkout or an editable install, the top-level templates/ beside gisapp/."""
    here = Path(__file__).resolve().parent
    installed = here / "templates"
    return installed if installed.is_dir() else here.parent / "templates"


TEMPLATES = _templates()


def instance_folder() -> Path:
    """The instance folder: ``SEWERPLAN_INSTANCE`` (a service's data folder) when set, else ``instance/`` in the
    folder sewerplan runs in. The app's config.py and every ``instance/...`` default (``settings``) come from here,
    for the app and the command line alike, so they never part."""
    return Path(os.environ.get("SEWERPLAN_INSTANCE") or "instance").resolve()


def settings(test_config: dict | None = None) -> dict[str, Any]:
    """Every setting as the web app and every command see it: ``SETTINGS``' defaults, then the instance folder's
    ``config.py`` if present (or, for tests, ``test_config`` instead), then each folder or file left at its
    ``instance/...`` default moved into ``SEWERPLAN_INSTANCE`` when that is set.

    The one reading of the settings: ``create_app`` builds its config from it, and a command that uses a setting
    outside the app (the accounts file of ``sewerplan users``) reads it here. `users add` read only the default, so
    with ``USERS_DB = "/srv/accounts.sqlite"`` in config.py it wrote ./instance/users.sqlite, where the server
    never looked."""
    config = Config(str(instance_folder()))
    config.from_mapping({name: default for name, (default, _) in SETTINGS.items()})
    if test_config is None:
        config.from_pyfile("config.py", silent=True)
    else:
        config.from_mapping(test_config)
    if os.environ.get("SEWERPLAN_INSTANCE"):  # the folders left at their defaults follow the instance folder
        for name, (default, _) in SETTINGS.items():
            if isinstance(default, str) and default.startswith("instance/") and config.get(name) == default:
                config[name] = str(instance_folder() / default.removeprefix("instance/"))
    return dict(config)


def users_db() -> Path:
    """The accounts file the server uses: the ``USERS_DB`` setting (``users.sqlite`` in the instance folder unless
    config.py names another), for ``sewerplan users`` and ``serve`` alike."""
    return Path(settings()["USERS_DB"])


def create_app(test_config: dict | None = None) -> Flask:
    """Build the Flask app: settings, blueprints, error handlers, security headers."""
    app = Flask(
        __name__,
        instance_relative_config=True,
        template_folder=str(TEMPLATES),
        # instance/ in the folder sewerplan runs in, where every other instance/... default (the store, accounts,
        # uploads, notices) is: Flask's own default is beside the package, which for an installed sewerplan is
        # <prefix>/var/gisapp-instance, where nobody puts config.py and a service account may not write.
        instance_path=str(instance_folder()),
    )
    app.config.update(settings(test_config))
    if not app.config.get("SECRET_KEY"):
        app.config["SECRET_KEY"] = _secret_key(Path(app.instance_path))

    from gisapp import errors, security
    from gisapp.state import AppState
    from layers.uploads import harden_gdal

    harden_gdal()  # no GDAL driver that reads other files or the network, no GDAL network access, in this process
    from gisapp.views import analysis, api, auth, data, notices, plans, summary
    from gisapp.views import map as map_view

    app.extensions["sewerplan"] = AppState()
    security.init_app(app)
    app.url_map.converters["scenario"] = plans.ScenarioName  # before the plans routes that use it
    for blueprint in (map_view.bp, analysis.bp, api.bp, summary.bp, data.bp, auth.bp, notices.bp, plans.bp):
        app.register_blueprint(blueprint)
    errors.register(app)
    return app


def _secret_key(instance: Path) -> str:
    """The key in ``instance/secret_key``, made once; the file is created 0600 (never readable by others)."""
    path = instance / "secret_key"
    if path.exists():
        os.chmod(path, 0o600)
        return path.read_text().strip()
    instance.mkdir(parents=True, exist_ok=True, mode=0o700)
    key = secrets.token_hex(32)
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:  # another worker made it first
        return path.read_text().strip()
    with os.fdopen(fd, "w") as f:
        f.write(key)
    return key
