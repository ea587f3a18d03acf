"""One place that maps domain errors to HTTP statuses: JSON under /api/ (and for JSON requests), a page elsewhere.

A domain error's ``fix`` (``analysis.errors.Fix``: a rule key, a layer kind, a column mapping) is worded here as the
field of the web app to fill in, never as a command-line flag (the CLI words the same fix as its flag).
"""

from __future__ import annotations

import os
import re

from flask import Flask, current_app, jsonify, render_template, request
from werkzeug.exceptions import HTTPException

from analysis.errors import AnalysisError, Fix
from gisapp.mapdata import NoDataYetError
from gisapp.words import register_clash_words, size_words
from layers.errors import LayerError, LayerValidationError, NotFoundError, Problem
from layers.register import RegisterClashError

MAPPING_PAGE = "the column-mapping page of the upload (Data page)"
RUN_FORM = '"Run the analysis" on the map page'


def field_for(fix: Fix, *, upload: bool = False) -> str:
    """The web app's words for the setting a ``Fix`` names: the field to fill in, and where it is.

    ``upload``: said on an upload's pages (its validation report, its column-mapping page), where the measuring CRS
    is the column-mapping page's "Measuring CRS" field (the run form's "Settings" elsewhere: a store's layers).
    """
    target, example = fix.target, fix.example
    layer, _, rest = target.partition(".")
    words = {
        "rule": f'Fill in the "Settings" field of {RUN_FORM} with {target}={example or "VALUE"}, then run it.',
        "layer": f"Upload the data again with a {target} layer (Data page)."
        if target
        else "Upload the town's data (Data page).",
        "layer_crs": (
            f'Fill in "CRS of the file" beside "or load" in the map\'s "Plan an extension" panel with '
            f"{example or 'the CRS it was drawn in'}, then load the file again."
            if target == "proposed"  # a proposed main's file is loaded on the map, not uploaded
            else f'Fill in the "CRS" field of the {target} layer on {MAPPING_PAGE}'
            + (f" (e.g. {example})." if example else ".")
        ),
        "data_crs": f'Fill in the "CRS" field of each layer on {MAPPING_PAGE} (e.g. {example or "EPSG:2260"}).',
        "crs": f'Fill in the "Measuring CRS" field on {MAPPING_PAGE} with {example or "a projected CRS"}.'
        if upload
        else f'Fill in the "Settings" field of {RUN_FORM} with measurement.measuring_crs={example or "CRS"}.',
        "map": f"Choose the column that holds {rest} for the {layer} layer on {MAPPING_PAGE}.",
        "map_value": f'Fill in the "Coded values" field of the {layer} layer on {MAPPING_PAGE} with '
        f"{rest}={example or 'CODE'}" + (f" (CODE one of {', '.join(fix.choices)})." if fix.choices else "."),
        "notice_reason": 'Choose the "Notice reason".',
        "notice_date": 'Choose the "Notice date": today or the day the letters will be mailed.',
        "hazard": 'Fill in "The public health hazard" field of the Notices page (named on each letter).',
        "profile": 'Choose the "Profile".',
        # the web runs only the bundled profiles: a copy of the file is run where the server runs, or bundled there
        "profile_file": f"The map page runs only the bundled profiles, so {target} is changed in a copy of "
        f"{_file_name(example)} under a name of its own: ask whoever runs the server to add the copy to the bundled "
        'profiles (it is then offered under "Profile"), or run the copy with the command line.',
        "register": 'Create the town\'s register with the "Create the notice register" button on the Notices page.',
        "overwrite": "Give another name.",
        "replace": 'Tick "replace the saved scenario of this name" to save over it.',
        # the profile's rules are listed by a command, not on a page: the Settings field is where the line is
        "rules": f'Correct or delete that line of the "Settings" field of {RUN_FORM}: each line sets a rule of the '
        "profile, such as mandate.distance_ft=200.",
        "notice_id": 'Copy its ID from the "notice" column of the register on the Notices page (find its parcel '
        'with "Parcel or owner").',
        "connected": "The connected-parcels list is given where the analysis was run (the command line): run it "
        "there again, or run the analysis here without it.",
    }
    return words[fix.setting]


def _file_name(path: str) -> str:
    """A profile file by its name alone: the server's folders are no business of a web page."""
    return path.replace("\\", "/").rsplit("/", 1)[-1] or "the profile file"


def web_text(exc: ValueError, *, upload: bool = False) -> str:
    """A domain error's message with its fix worded as the field to fill in (``upload``: on an upload's pages); for
    invalid layers, every problem with its own (a run refused for its layers said what was wrong, not what to fill
    in, where the command line says which flag fixes each)."""
    if isinstance(exc, LayerValidationError):
        errors = [p for p in exc.problems if p.severity == "error"]
        lines = "\n".join(f"  - {p} {field_for(p.fix, upload=upload)}" if p.fix else f"  - {p}" for p in errors)
        return f"{len(errors)} problem(s) in the input layers:\n{lines}"
    if isinstance(exc, RegisterClashError):  # the server's setting that named the other register, files by name
        return register_clash_words(exc.store, exc.named, exc.recorded, exc.named_by, web=True)
    fix = getattr(exc, "fix", None)
    return f"{exc} {field_for(fix, upload=upload)}" if fix else str(exc)


def upload_too_large(limit: int, size: int | str | None = None) -> str:
    """What a planner whose upload is over the limit is told: how large it is (when known), the limit, what to do.

    One sentence for both places that refuse: the server's 413 page (``size`` the request's length in bytes, None
    when the client did not say) and the upload forms' script, which checks the file before sending it and is
    given this sentence with ``size`` the placeholder ``"{size}"`` to put the file's size in (words.size_words).
    """
    if size is None:
        start = f"The upload is larger than the {size_words(limit)} this server accepts."
    else:
        shown = size_words(size) if isinstance(size, int) else size
        start = f"The upload is {shown}; this server accepts at most {size_words(limit)}."
    return (
        f"{start} Upload only the layers the analysis needs (parcels, buildings, streets, mains, manholes), zipped, "
        'or split them: upload the parcels first, then add each other layer with "Add a layer to this upload" on '
        "its validation report. Data this large is best loaded where the server runs, with the command line "
        "(no size limit): sewerplan analyze --profile NAME --data town.gpkg --out town.gpkg, then "
        "sewerplan serve --store town.gpkg."
    )


def problem_view(p: Problem, *, upload: bool = False) -> dict:
    """A problem for a page or the JSON API: its fields, and ``how`` (the fix, worded for the web; ``upload``: on an
    upload's pages). Its message names no folder of the server: what GDAL warned of while reading a layer can name
    the file's full path in the upload's folder."""
    return p.as_dict() | {
        "message": without_server_folders(p.message),
        "how": field_for(p.fix, upload=upload) if p.fix else "",
    }


def without_server_folders(message: str) -> str:
    """``message`` with every path under the server's own folders (the instance folder, the uploads, the store's
    folder, the notices folder, a register's folder) named by its file alone: an error page told web users the
    server's folders ("/srv/.../instance/uploads/TOKEN/store.gpkg does not exist"; a tester). The command line's
    messages keep their paths."""
    config = current_app.config
    store = str(config.get("STORE") or "")
    folders = [current_app.instance_path, str(config.get("UPLOAD_FOLDER") or "")]
    # where the letters are written, and a register kept outside the instance folder (a path, or sqlite:///path)
    folders.append(os.path.abspath(str(config.get("NOTICES_FOLDER") or "")) if config.get("NOTICES_FOLDER") else "")
    register = str(config.get("REGISTER") or "").removeprefix("sqlite:///")
    if register and "://" not in register:
        folders.append(os.path.dirname(os.path.abspath(register)))
    if store and "://" not in store:
        folders.append(os.path.dirname(os.path.abspath(store)))
    for folder in sorted({f.rstrip("/") for f in folders if f and f.rstrip("/")}, key=len, reverse=True):
        pattern = re.escape(folder) + r"(?:/[^\s'\"<>:;,()]+)*"
        message = re.sub(pattern, _file_of, message)
    return message


def _file_of(found: re.Match) -> str:
    """A path's last name, keeping a sentence's full stop after it."""
    path = found.group(0)
    bare = path.rstrip(".")
    return (os.path.basename(bare.rstrip("/")) or bare) + path[len(bare) :]


def _wants_json() -> bool:
    """The request is the JSON API's (or sends JSON): its errors are JSON documents, not pages."""
    return request.path.startswith(("/api/", "/analysis/")) or request.is_json


def _respond(status: int, title: str, message: str, problems: list | None = None, fix: Fix | None = None):
    message = without_server_folders(message)
    if _wants_json():
        body = {
            "error": {
                "status": status,
                "title": title,
                "message": message,
                "problems": problems or [],
                "fix": fix.as_dict() if fix else None,
            }
        }
        return jsonify(body), status
    return render_template("error.html", status=status, title=title, message=message, problems=problems or []), status


def register(app: Flask) -> None:
    @app.errorhandler(LayerValidationError)
    def validation_error(exc: LayerValidationError):
        # each problem with the field that fixes it, in the message a page shows as well as in ``problems``
        return _respond(422, "Invalid input layers", web_text(exc), [problem_view(p) for p in exc.problems])

    @app.errorhandler(NoDataYetError)
    def no_data_yet(exc: NoDataYetError):
        # A new town's server, before its data is first published: the JSON API says so (404); a page (the map, the
        # summary) says it plainly, with the way to the Data page, as the answer to a page asked for, not an error.
        if _wants_json():
            return _respond(404, "No data yet", web_text(exc), fix=exc.fix)
        return render_template("no_data.html"), 200

    @app.errorhandler(NotFoundError)
    def not_found(exc: NotFoundError):
        return _respond(404, "Not found", web_text(exc), fix=exc.fix)

    @app.errorhandler(LayerError)
    @app.errorhandler(AnalysisError)
    def domain_error(exc: ValueError):
        return _respond(400, "Cannot use this input", web_text(exc), fix=getattr(exc, "fix", None))

    @app.errorhandler(413)
    def too_large(exc: HTTPException):
        # The limit this request was held to (the sign-in form's is smaller than an upload's).
        limit = request.max_content_length or app.config["MAX_CONTENT_LENGTH"]
        if not limit:  # no limit set here: a 413 from elsewhere says its own reason
            return _respond(413, "Upload too large", exc.description or "")
        return _respond(413, "Upload too large", upload_too_large(limit, request.content_length))

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException):
        return _respond(exc.code or 500, exc.name, exc.description or "")
