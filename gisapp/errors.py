"""One place that maps domain errors to HTTP statuses: JSON under /api/ (and for JSON requests), a page elsewhere."""

from __future__ import annotations

from flask import Flask, jsonify, render_template, request
from werkzeug.exceptions import HTTPException

from analysis.errors import AnalysisError
from layers.errors import LayerError, LayerValidationError


def _respond(status: int, title: str, message: str, problems: list | None = None):
    if request.path.startswith("/api/") or request.is_json:
        body = {"error": {"status": status, "title": title, "message": message, "problems": problems or []}}
        return jsonify(body), status
    return render_template("error.html", status=status, title=title, message=message, problems=problems or []), status


def register(app: Flask) -> None:
    @app.errorhandler(LayerValidationError)
    def validation_error(exc: LayerValidationError):
        return _respond(422, "Invalid input layers", str(exc), [p.as_dict() for p in exc.problems])

    @app.errorhandler(LayerError)
    @app.errorhandler(AnalysisError)
    def domain_error(exc: ValueError):
        return _respond(400, "Cannot use this input", str(exc))

    @app.errorhandler(413)
    def too_large(exc: HTTPException):
        limit = app.config["MAX_CONTENT_LENGTH"] // (1024 * 1024)
        return _respond(
            413,
            "Upload too large",
            f"The file is larger than the {limit} MB this server accepts. "
            "Upload only the layers needed (parcels, buildings, streets, mains, manholes).",
        )

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException):
        return _respond(exc.code or 500, exc.name, exc.description or "")
