"""The Data page: upload a dataset, map its columns, see the validation report, work on it, publish it.

An upload is its uploader's workspace: working on it changes what that planner sees and analyses, nobody else's.
Only publishing makes it the town's store, and the store it replaces is kept, to be restored from this page.
A refused upload (wrong kind, bad content, too big, nothing usable in it, invalid data) is deleted at once;
uploads nobody used for ``UPLOAD_TTL_HOURS`` are deleted when the page is next used.
"""

from __future__ import annotations

import datetime as dt
import shutil
from contextlib import contextmanager
from pathlib import Path

from flask import Blueprint, current_app, g, redirect, render_template, request, session, url_for

from gisapp import services
from gisapp.errors import problem_view
from gisapp.security import requires
from gisapp.state import recorded_spec
from gisapp.workspace import WorkspaceSpec
from layers.errors import LayerError, LayerValidationError
from layers.read import read_source
from layers.schema import SPECS
from layers.store import StoreBusyError, latest_run, layer_counts, previous_stores, publish_store, restore_store
from layers.uploads import (
    discard,
    expire_uploads,
    folder_bytes,
    list_uploads,
    new_upload,
    owner_usage,
    read_meta,
    upload_folder,
    upload_sources,
)
from layers.write import write_layers

bp = Blueprint("data", __name__, url_prefix="/data")


def _root() -> Path:
    return Path(current_app.config["UPLOAD_FOLDER"])


def _folder(token: str) -> Path:
    return upload_folder(_root(), token, owner=g.user)


@bp.app_context_processor
def _workspace_banner():
    """The name of the upload this planner works on, for the banner every page shows while they do."""
    from gisapp.state import workspace_store

    store = workspace_store() if getattr(g, "user", None) else None
    return {"workspace_name": read_meta(Path(store).parent).get("name", "") if store else None}


@bp.before_request
def _expire():
    expire_uploads(_root(), ttl_hours=current_app.config["UPLOAD_TTL_HOURS"])


@bp.get("/upload")
@requires("planner")
def upload_form(message: str | None = None, status: int = 200):
    config = current_app.config
    town = config["STORE"]
    workspaces = []
    for folder in list_uploads(_root(), owner=g.user):
        meta = read_meta(folder)
        workspaces.append(
            {
                "token": folder.name,
                "name": meta.get("name", folder.name),
                "created": _when(meta.get("created")),
                "validated": (folder / "store.gpkg").exists(),
                "active": session.get("workspace") == folder.name,
                "mb": folder_bytes(folder) / 2**20,
            }
        )
    previous = [p | {"saved": _when(p["saved_at"]), "mb": p["bytes"] / 2**20} for p in previous_stores(town)]
    page = render_template(
        "data/upload.html",
        workspaces=workspaces,
        previous=previous,
        town_counts=layer_counts(town),  # {} before the store exists (a GeoPackage or a PostGIS schema)
        town_run=latest_run(town),
        used_mb=owner_usage(_root(), g.user) / 2**20,
        quota_mb=config["UPLOAD_QUOTA_BYTES"] / 2**20,
        ttl_hours=config["UPLOAD_TTL_HOURS"],
        message=message,
    )
    return page, status


def _when(stamp) -> str:
    return dt.datetime.fromtimestamp(float(stamp)).strftime("%Y-%m-%d %H:%M") if stamp else ""


@bp.post("/upload")
@requires("planner")
def upload():
    file = request.files.get("dataset")
    if file is None or not file.filename:
        raise LayerError("Choose a file to upload: a zipped shapefile, a GeoPackage or a GeoJSON file.")
    config = current_app.config
    try:
        folder = new_upload(
            _root(),
            file.filename,
            file.stream,
            owner=g.user,
            max_unzipped_bytes=config["MAX_UNZIPPED_BYTES"],
            quota_bytes=config["UPLOAD_QUOTA_BYTES"],
        )
    finally:
        file.close()  # werkzeug's spooled copy of the body goes now, not when the request ends
    return redirect(url_for("data.mapping", token=folder.name))


@contextmanager
def _refused_deletes(folder: Path):
    """An upload that cannot be read is refused: its folder is deleted at once, then the error is shown."""
    try:
        yield
    except LayerError:
        shutil.rmtree(folder, ignore_errors=True)
        raise


def _sources(token: str):
    folder = _folder(token)
    with _refused_deletes(folder):
        sources = upload_sources(folder)
    if not sources:
        shutil.rmtree(folder, ignore_errors=True)  # nothing in it can ever be used: refused, deleted at once
        raise LayerError(
            "No layer in the upload is named parcels, mains, streets, buildings or manholes. Name "
            "the files or layers that way (parcels.shp, mains.shp ...) and upload again."
        )
    return sources


@bp.get("/<token>/mapping")
@requires("planner")
def mapping(token: str):
    sources = _sources(token)
    layers = []
    for kind, source in sources.items():
        with _refused_deletes(_folder(token)):
            columns = [c for c in read_source(source).columns if c != "geometry"]
        by_lower = {c.lower(): c for c in columns}
        fields = [
            (f, next((by_lower[a] for a in (f.name, *f.aliases) if a in by_lower), "")) for f in SPECS[kind].fields
        ]
        layers.append((kind, source.label, columns, fields))
    return render_template("data/mapping.html", token=token, layers=layers)


@bp.post("/<token>/mapping")
@requires("planner")
def validate(token: str):
    sources = _sources(token)
    spec = _upload_spec(request.form)
    folder = _folder(token)
    try:
        with _refused_deletes(folder):
            ws = services.open_workspace(spec, sources=sources, required=("parcels", "mains"))
    except LayerValidationError as exc:
        shutil.rmtree(folder, ignore_errors=True)  # refused: deleted at once (the report says to upload again)
        problems = [problem_view(p) for p in exc.problems]
        return render_template("data/report.html", token=token, problems=problems, ok=False), 422
    layers = ws.layers
    store = folder / "store.gpkg"
    frames = {k: getattr(layers, k) for k in SPECS if getattr(layers, k, None) is not None}
    write_layers(str(store), frames, overwrite=True)
    counts = {k: len(v) for k, v in frames.items()}
    problems = [problem_view(p) for p in layers.problems]
    return render_template("data/report.html", token=token, problems=problems, ok=True, counts=counts)


def _upload_spec(form) -> WorkspaceSpec:
    """The workspace an upload is checked in: the town's profile and measuring CRS (as its store's latest run
    applied them), and the form's column mapping (``KIND.FIELD``), each layer's CRS where it declares none
    (``layer_crs.KIND``, as the command line's --layer-crs KIND=CRS) and coded values (``map_value.KIND``: one
    ``FIELD.VALUE=CODE`` a line, as --map-value KIND.FIELD.VALUE=CODE)."""
    columns: dict[str, dict[str, str]] = {}
    values: dict[str, dict[str, dict[str, str]]] = {}
    layer_crs: dict[str, str] = {}
    for key, text in form.items():
        head, _, rest = key.partition(".")
        text = (text or "").strip()
        if not text:
            continue
        if head == "layer_crs" and rest in SPECS:
            layer_crs[rest] = text
        elif head == "map_value" and rest in SPECS:
            for line in text.splitlines():
                name, sep, code = line.partition("=")
                field, dot, value = name.strip().partition(".")
                if not (sep and dot and field and value):
                    raise LayerError(
                        f"Coded values of the {rest} layer: {line.strip()!r} is not FIELD.VALUE=CODE "
                        "(e.g. sewer_type.GRAV=sanitary)."
                    )
                values.setdefault(rest, {}).setdefault(field, {})[value.strip()] = code.strip()
        elif head in SPECS and rest:
            columns.setdefault(head, {})[rest] = text
    town = recorded_spec(current_app.config["STORE"])
    return WorkspaceSpec(
        profile=town.profile,
        settings=town.settings,
        crs=town.crs,
        layer_crs=tuple(layer_crs.items()),
        mapping={"columns": columns, "values": values},
    )


@bp.post("/<token>/use")
@requires("planner")
def use(token: str):
    """Work on the upload: the map, summary, runs and downloads of this planner's session use it."""
    store = _folder(token) / "store.gpkg"
    if not store.exists():
        raise LayerError("Validate the upload first.")
    session["workspace"] = token
    return redirect(url_for("map.index"))


@bp.post("/town")
@requires("planner")
def back_to_town():
    session.pop("workspace", None)
    return redirect(url_for("map.index"))


@bp.post("/<token>/publish")
@requires("planner")
def publish(token: str):
    """Make the workspace the town's store, for everyone; the store it replaces is kept to restore."""
    folder = _folder(token)
    store = folder / "store.gpkg"
    if not store.exists():
        raise LayerError("Validate the upload first.")
    name = read_meta(folder).get("name", token)
    try:
        publish_store(
            current_app.config["STORE"],
            store,
            who=g.user,
            label=f"publishing {name} by {g.user}",
            keep=current_app.config["KEEP_PREVIOUS_STORES"],
        )
    except StoreBusyError as exc:
        return upload_form(message=str(exc), status=409)
    if session.get("workspace") == token:
        session.pop("workspace")
    shutil.rmtree(folder, ignore_errors=True)  # it is the town's store now
    return upload_form(message=f"{name} is now the town's store. The store it replaced is kept below.")


@bp.post("/restore")
@requires("planner")
def restore():
    name = request.form.get("name", "")
    try:
        restore_store(current_app.config["STORE"], name, who=g.user, keep=current_app.config["KEEP_PREVIOUS_STORES"])
    except StoreBusyError as exc:
        return upload_form(message=str(exc), status=409)
    return upload_form(message=f"The store saved as {name} is the town's store again; the one it replaced is kept.")


@bp.post("/<token>/discard")
@requires("planner")
def discard_upload(token: str):
    discard(_root(), token, owner=g.user)
    if session.get("workspace") == token:
        session.pop("workspace")
    return redirect(url_for("data.upload_form"))
