"""The sewerplan web app: ``create_app(test_config=None)`` builds it (flaskr's factory pattern).

Settings come from ``DEFAULTS``, then ``instance/config.py`` if present, then ``test_config``. Every setting is
listed in ``SETTINGS`` with its help text (documented in docs/web.md, checked by tests/test_docs.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flask import Flask

SETTINGS: dict[str, tuple[Any, str]] = {
    "STORE": ("instance/sewerplan.gpkg", "The GeoPackage store whose layers and latest results are shown."),
    "MAX_LISTED_PARCELS": (500, "How many mandated parcels the summary page lists."),
}
TEMPLATES = Path(__file__).resolve().parent.parent / "templates"


def create_app(test_config: dict | None = None) -> Flask:
    """Build the Flask app: settings, blueprints, error handlers, security headers."""
    app = Flask(__name__, instance_relative_config=True, template_folder=str(TEMPLATES))
    app.config.from_mapping({name: default for name, (default, _) in SETTINGS.items()})
    if test_config is None:
        app.config.from_pyfile("config.py", silent=True)
    else:
        app.config.from_mapping(test_config)

    from gisapp import errors
    from gisapp.views import summary

    app.register_blueprint(summary.bp)
    errors.register(app)

    @app.after_request
    def security_headers(response):
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Content-Security-Policy",
                                    "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'")
        response.headers.setdefault("Referrer-Policy", "same-origin")
        return response

    return app
