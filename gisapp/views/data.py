"""Uploading a dataset: save it safely, map its columns, see the validation report, then work on it."""

from __future__ import annotations

from pathlib import Path

from flask import Blueprint, current_app, redirect, render_template, request, url_for

from analysis.profiles import load_profile
from gisapp.security import requires
from layers.crs import measuring_crs
from layers.errors import LayerError, LayerValidationError
from layers.read import find_layers, load_layers, read_source
from layers.schema import SPECS
from layers.uploads import new_upload, upload_folder
from layers.validate import ColumnMapping
from layers.write import write_layers

bp = Blueprint("data", __name__, url_prefix="/data")


def _root() -> Path:
    return Path(current_app.config["UPLOAD_FOLDER"])


@bp.get("/upload")
@requires("planner")
def upload_form():
    return render_template("data/upload.html")


@bp.post("/upload")
@requires("planner")
def upload():
    file = request.files.get("dataset")
    if file is None or not file.filename:
        raise LayerError("Choose a file to upload: a zipped shapefile, a GeoPackage or a GeoJSON file.")
    folder = new_upload(
        _root(), file.filename, file.stream, max_unzipped_bytes=current_app.config["MAX_UNZIPPED_BYTES"]
    )
    return redirect(url_for("data.mapping", token=folder.name))


def _sources(token: str):
    data = upload_folder(_root(), token) / "data"
    files = sorted(data.iterdir())
    target = files[0] if len(files) == 1 and files[0].suffix.lower() == ".gpkg" else data
    sources = find_layers(str(target))
    if not sources:
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
    mapping = ColumnMapping()
    for key, column in request.form.items():
        kind, _, field = key.partition(".")
        if kind in SPECS and field and column:
            mapping.columns.setdefault(kind, {})[field] = column
    crs = measuring_crs(load_profile("fort-plain").measurement.measuring_crs.value)
    try:
        layers = load_layers(sources, target_crs=crs, mapping=mapping)
    except LayerValidationError as exc:
        return render_template("data/report.html", token=token, problems=exc.problems, ok=False), 422
    folder = upload_folder(_root(), token)
    store = folder / "store.gpkg"
    frames = {k: getattr(layers, k) for k in SPECS if getattr(layers, k, None) is not None}
    write_layers(str(store), frames, overwrite=True)
    counts = {k: len(v) for k, v in frames.items()}
    return render_template("data/report.html", token=token, problems=layers.problems, ok=True, counts=counts)


@bp.post("/<token>/use")
@requires("planner")
def use(token: str):
    store = upload_folder(_root(), token) / "store.gpkg"
    if not store.exists():
        raise LayerError("Validate the upload first.")
    current_app.config["STORE"] = str(store)
    return redirect(url_for("map.index"))
