"""The Data page: upload a dataset, say what its layers are, map its columns, see the validation report, add what
the report says is missing, work on it, publish it.

An upload is its uploader's workspace: working on it changes what that planner sees and analyses, nobody else's.
Only publishing makes it the town's store, and the store it replaces is kept, to be restored from this page.
A refused upload (wrong kind, bad content, too big, nothing usable in it, invalid data the column-mapping page
cannot fix) is deleted at once; uploads nobody used for ``UPLOAD_TTL_HOURS`` are deleted when the page is next used.

The report runs the checks the analysis itself makes before it measures (``services.readiness``), for the profile
chosen and for every other bundled one, so it says before any run what a profile still needs (a streets layer, a
column, a distance the town must set) and offers the field or the upload that supplies it.
"""

from __future__ import annotations

import datetime as dt
import shutil
from contextlib import contextmanager
from pathlib import Path

from flask import Blueprint, current_app, g, redirect, render_template, request, session, url_for

from gisapp import services
from gisapp.errors import field_for, problem_view, upload_too_large, web_text, without_server_folders
from gisapp.security import requires
from gisapp.state import recorded_spec
from gisapp.words import measured_in, measuring_crs_note, size_words, unanalysed_profile_note
from gisapp.workspace import WorkspaceSpec
from layers.crs import crs_label, lies_where_measured, parse_crs, suggested_measuring_crs
from layers.errors import LayerError, LayerValidationError
from layers.read import LAYER_NAMES, declared_geometry, no_layer_in, read_source
from layers.schema import SHAPE_WORDS, SPECS, column_for, columns_alike, kinds_fitting
from layers.store import (
    PUBLISHED_UPLOAD,
    StoreBusyError,
    discard_store,
    latest_run,
    layer_counts,
    open_store,
    previous_stores,
    publish_store,
    read_setting,
    restore_store,
    store_exists,
    store_writer,
    write_setting,
)
from layers.uploads import (
    LEFT_OUT,
    MEASURING_CRS,
    TOKEN,
    add_to_upload,
    discard,
    expire_uploads,
    folder_bytes,
    left_out_words,
    list_uploads,
    new_upload,
    owner_usage,
    published_as,
    read_meta,
    retire_published,
    set_kinds,
    table_words,
    update_meta,
    update_meta_entry,
    upload_folder,
    upload_layers,
    upload_sources,
    upload_tables,
)
from layers.validate import ColumnMapping, mapping_mistakes

bp = Blueprint("data", __name__, url_prefix="/data")

# What the mapping page can fix: an upload refused only for these keeps its files, to be fixed there.
FIXED_ON_MAPPING_PAGE = ("map", "layer_crs", "map_value", "data_crs", "crs")
KIND_HELP = {kind: spec.help for kind, spec in SPECS.items()}


def _root() -> Path:
    return Path(current_app.config["UPLOAD_FOLDER"])


@bp.context_processor
def _upload_limit() -> dict:
    """The upload limit for the forms that send a file (the upload, "Add a layer"): ``MAX_CONTENT_LENGTH`` is its
    one source. The forms' script (static/upload.js) refuses a larger file before sending it, with the sentence
    the server's 413 page gives, ``{size}`` standing for the file's size."""
    limit = current_app.config["MAX_CONTENT_LENGTH"]
    if not limit:
        return {"upload_limit": None}
    return {
        "upload_limit": {"bytes": limit, "words": size_words(limit), "too_large": upload_too_large(limit, "{size}")}
    }


# The uploads this session published, by token, with their names: a publish sent again (a reload of its page, or Back
# and Publish on the page as it was) finds the upload gone, and is told it became the town's store, not that it may
# have expired or been discarded.
PUBLISHED = "published_uploads"
KEPT_PUBLISHED = 8


def _folder(token: str) -> Path:
    try:
        return upload_folder(_root(), token, owner=g.user)
    except LayerError:
        name = _published_already(token)
        if name is None:
            raise
        raise LayerError(_published_words(name)) from None


def _published_already(token: str) -> str | None:
    """The name the upload ``token`` was published under: this session's record, else the upload's own (the session
    is written only with the publish's answer, which a server stopped after publishing never sent)."""
    name = dict(session.get(PUBLISHED, [])).get(token)
    if name is None and TOKEN.match(token or ""):
        folder = _root() / token
        meta = read_meta(folder)
        if meta.get("owner") == g.user:
            name = published_as(folder)
            # published, and stopped before the upload was marked so: the town's store names it
            if name is None and (folder / "store.gpkg").exists() and _town_setting(PUBLISHED_UPLOAD) == token:
                name = meta.get("name", token)
    return name


def _town_setting(key: str) -> str | None:
    """A setting of the town's store; None when it has none, or cannot be read (then nothing is taken from it)."""
    try:
        return read_setting(current_app.config["STORE"], key)
    except (LayerError, OSError):
        return None


def _published_words(name: str) -> str:
    return (
        f"{name} was published as the town's store already, so it is no longer an upload: the map shows it, and the "
        "Data page keeps the store it replaced."
    )


@bp.app_context_processor
def _workspace_banner():
    """The name of the upload this planner works on, for the banner every page shows while they do, and which
    workspace the page shows (``shown_workspace``: the upload's token, or "town"), for the forms that act on it to send
    back (``state.require_shown_workspace``)."""
    from gisapp.state import TOWN, workspace_store

    store = workspace_store() if getattr(g, "user", None) else None
    return {
        "workspace_name": read_meta(Path(store).parent).get("name", "") if store else None,
        "shown_workspace": Path(store).parent.name if store else TOWN,
    }


@bp.before_request
def _expire():
    expire_uploads(_root(), ttl_hours=current_app.config["UPLOAD_TTL_HOURS"])


@bp.get("/upload")
@requires("planner")
def upload_form(message: str | None = None, status: int = 200, *, town_busy: bool = False):
    """The Data page; ``town_busy``: a publication, restore or run is writing the town's store right now (this
    request's own publication or restore was refused for it), so its layers are not read: the file may be half-way
    through being replaced."""
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
                # cannot run yet: Publish needs its box ticked, which names what is missing
                "not_ready": not_ready_words(meta[NOT_READY]) if meta.get(NOT_READY) else None,
            }
        )
    previous = [p | {"saved": _when(p["saved_at"]), "mb": p["bytes"] / 2**20} for p in previous_stores(town)]
    page = render_template(
        "data/upload.html",
        workspaces=workspaces,
        previous=previous,
        **_town_overview(town, busy=town_busy),
        used_mb=owner_usage(_root(), g.user) / 2**20,
        quota_mb=config["UPLOAD_QUOTA_BYTES"] / 2**20,
        ttl_hours=config["UPLOAD_TTL_HOURS"],
        message=message and without_server_folders(message),
    )
    return page, status


def _town_overview(town: str, *, busy: bool) -> dict:
    """What the Data page says of the town's store: its layers' counts, its latest run, the profile and measuring CRS
    a run applies; or, while it is being replaced, why it says nothing of them (``town_unread``).

    A publish double-clicked: the second request, refused as "in progress", built its page while the first replaced
    the store file, and reading its layers there was a server error ("Layer 'buildings' could not be opened"). Such a
    page does not read them; any other page that cannot read them says so instead of failing.
    """
    if busy:
        return {
            "town_unread": "The town's store is being written right now (see above), so its layers are not shown "
            "here: reload the page in a moment to see them."
        }
    try:
        run, spec = latest_run(town), recorded_spec(town)
        return {
            "town_counts": layer_counts(town),  # {} before the store exists (a GeoPackage or a PostGIS schema)
            "town_run": run,
            # the measuring CRS given for its data (outside New York): its run's, or the one its layers were checked in
            "town_measured_in": measured_in(spec.crs),
            # never analysed: the profile a run applies, the one its layers were checked under (else the default)
            "town_profile_note": None if run else _profile_note(town, spec),
        }
    except (LayerError, OSError, RuntimeError) as exc:  # pyogrio's errors are RuntimeErrors: a file being replaced
        current_app.logger.warning("the Data page could not read the town's store: %s", exc)
        return {
            "town_unread": "The town's store could not be read just now (a publication, restore or run may be "
            "writing it): reload the page in a moment to see it."
        }


def _profile_note(store: str, spec: WorkspaceSpec) -> str:
    """Which profile a run of ``store``, never analysed, applies (``spec``, its ``recorded_spec``), and why."""
    return unanalysed_profile_note(spec.profile, spec.overrides, checked=bool(services.checked_spec(store).profile))


def _when(stamp) -> str:
    if not stamp:
        return ""
    moment = dt.datetime.fromtimestamp(float(stamp))
    from gisapp.words import town_date

    return f"{town_date(moment, current_app.config['DATE_FORMAT'])} {moment:%H:%M}"


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


def fixed_on_mapping_page(exc: LayerError) -> bool:
    """Whether a field of the mapping page fixes ``exc``: its own fix, or, for a validation report, every error's."""
    if isinstance(exc, LayerValidationError):
        errors = [p for p in exc.problems if p.severity == "error"]
        return all(p.fix is not None and p.fix.setting in FIXED_ON_MAPPING_PAGE for p in errors)
    fix = getattr(exc, "fix", None)
    return fix is not None and fix.setting in FIXED_ON_MAPPING_PAGE


@contextmanager
def _refused_deletes(folder: Path, *, kept=fixed_on_mapping_page):
    """An upload that cannot be read is refused: its folder is deleted at once, then the error is shown. One whose
    errors fields of the mapping page fix (a mistyped CRS, a layer without one, a code of the town's own) is kept,
    so the planner can fill in the fields the report names (``kept``: whether the page fixes the error)."""
    try:
        yield
    except LayerError as exc:
        if not kept(exc):
            shutil.rmtree(folder, ignore_errors=True)
        raise


def _layers(token: str) -> tuple[dict, dict]:
    """Every layer of the upload by name (its tables without shapes too, ``upload_tables``), and those whose kind is
    known by kind."""
    folder = _folder(token)
    with _refused_deletes(folder):
        available = upload_layers(folder)
        sources = upload_sources(folder)
    if not available:
        held = sorted(p.name for p in (folder / "data").iterdir())  # a GeoPackage of no layer, say
        shutil.rmtree(folder, ignore_errors=True)  # nothing in it can ever be used: refused, deleted at once
        raise LayerError(no_layer_in("The upload", held, verb="upload"))
    return available, sources


def _columns(token: str, kind: str, source) -> list[str]:
    """The layer's own columns (read once, then kept in the upload's record)."""
    return list(_read_once(token, kind, source)["names"])


def _read_once(token: str, kind: str, source) -> dict:
    """What the mapping page needs of a layer, read once and kept in the upload's record: its columns (``names``)
    and the measuring CRS to suggest for it (``suggested_crs``: the UTM zone where it lies when that is outside where
    the town's measuring CRS is used, as the check would refuse it; else None)."""
    folder = _folder(token)
    known = (read_meta(folder).get("columns") or {}).get(kind)
    if (
        known is not None
        and known.get("path") == source.path
        and known.get("layer") == source.layer
        and "at_home" in known
    ):
        return known
    with _refused_deletes(folder):
        frame = read_source(source)
    entry = {
        "path": source.path,
        "layer": source.layer,
        "names": [c for c in frame.columns if c != "geometry"],
        "suggested_crs": suggested_measuring_crs(frame, _town_measuring_crs()),
        "at_home": lies_where_measured(frame, _town_measuring_crs()),
    }
    update_meta_entry(folder, "columns", kind, entry)
    return entry


def _town_measuring_crs():
    """The CRS an upload is checked in unless its "Measuring CRS" field gives another: the town's store's."""
    town = recorded_spec(current_app.config["STORE"])
    return services.measuring_target(town, services.profile_of(town))


# What the column-mapping page posts for a field whose "(none)" the planner chose where a column was found by the
# field's name: none on purpose. An empty value (a select left at "(none)" where nothing was found, a form without the
# field) takes the column found by name, as the check itself does. A layer with a column of that very name is posted
# it in more brackets (``none_marker``): its column "(none)" could not be chosen, its option posting the marker.
NONE_CHOSEN = "(none)"


def none_marker(columns: list[str]) -> str:
    """What "(none)" posts for a layer of ``columns``: ``NONE_CHOSEN``, bracketed again until it is no column's name."""
    marker = NONE_CHOSEN
    while marker in columns:
        marker = f"({marker})"
    return marker


def _layer_columns(token: str, sources: dict) -> dict[str, list[str]]:
    """Each layer's columns by kind, as its mapping page listed them (``_columns``)."""
    return {kind: _columns(token, kind, source) for kind, source in sources.items()}


def matched_fields(kind: str, columns: list[str], chosen: dict[str, str]) -> list[tuple]:
    """Each field of the kind with the column it takes and the column found by its name: the one chosen on the form,
    else found by name (the names users give it, and those names cut to 10 characters as a shapefile keeps them);
    "" where the planner chose none (``NONE_CHOSEN``) or none is found."""
    out = []
    for f in SPECS[kind].fields:
        by_name = found_by_name(f, columns)
        picked = chosen.get(f"{kind}.{f.name}")
        if picked is None:
            picked = by_name
        out.append((f, picked if picked in columns else "", by_name))
    return out


def alike_words(kind: str, columns: list[str], chosen: dict[str, str]) -> dict[str, str]:
    """What the mapping page says, by field, where more columns than the one taken are named as it ("units" and
    "UNITS", whose values may differ; ``layers.schema.columns_alike``) and the form chose none: which is chosen, or
    that none is, the columns matching alike. Said while the field's column is the one found by name (the form, sent
    once, posts it), not once the planner chose another."""
    said = {}
    for f in SPECS[kind].fields:
        alike = columns_alike(f, columns)
        taken = found_by_name(f, columns)
        if alike and chosen.get(f"{kind}.{f.name}", taken) == taken:
            said[f.name] = _alike_words(f.name, taken, alike)
    return said


def _alike_words(field: str, taken: str, alike: list[str]) -> str:
    """One note: ``taken`` chosen for ``field`` (else none) and the columns ``alike`` not, which to check."""
    listed = " and ".join(alike) if len(alike) < 3 else ", ".join(alike[:-1]) + f" and {alike[-1]}"
    if taken:
        return (
            f"{taken} is chosen, its name being the closest to {field}; {listed} {'is' if len(alike) == 1 else 'are'} "
            f"named as {field} too but for case or spaces, and may hold other values: choose "
            f"{'it' if len(alike) == 1 else 'one of them'} if it is the one that holds {field}."
        )
    return (
        f"{listed} are named as {field} alike (but for case or spaces), so none is chosen: choose the one that "
        f"holds {field}."
    )


def found_by_name(f, columns: list[str]) -> str:
    """The column the check takes for field ``f`` when the mapping names none (``layers.schema.column_for``: its
    names in any case, or written as a spreadsheet heads it), else ""."""
    found = column_for(f, columns)
    return "" if found is None else found


@bp.get("/<token>/mapping")
@requires("planner")
def mapping(token: str, message: str | None = None, status: int = 200):
    """The upload's column-mapping page, with ``message`` above it: a refusal's text (a layer GDAL cannot read, a
    mapping that cannot be meant), naming no folder of the server (``without_server_folders``): a refused layer had
    been named by its full path in the upload's folder. The Data page and the report say theirs the same way."""
    available, sources = _layers(token)
    meta = read_meta(_folder(token))
    form = meta.get("form") or {}
    used = {s.path + "|" + str(s.layer) for s in sources.values()}
    # Tables without shapes are listed apart, each with what to do: no kind can be chosen for one.
    tables = upload_tables(_folder(token))
    unknown = [
        (name, Path(src.path).name + (f": layer {src.layer}" if src.layer else ""), _named_as_used(name, sources))
        for name, src in available.items()
        if src.path + "|" + str(src.layer) not in used and name not in tables
    ]
    # A single layer whose name says nothing is offered as the kind its shapes fit: lines as the mains, not parcels.
    offered = _offered(token, available[unknown[0][0]]) if len(unknown) == 1 and not sources else None
    table_notes = [table_words(name, src) for name, src in available.items() if name in tables]
    layers = []
    for kind, source in sources.items():
        columns = _columns(token, kind, source)
        fields = matched_fields(kind, columns, form)
        taken = {c for _, c, _ in fields if c}
        layers.append(
            {
                "kind": kind,
                "label": source.label,
                "columns": columns,
                "fields": fields,
                "alike": alike_words(kind, columns, form),
                "unused": [c for c in columns if c not in taken],
                "none_chosen": none_marker(columns),
                "crs": form.get(f"layer_crs.{kind}", ""),
                "values": form.get(f"map_value.{kind}", ""),
            }
        )
    town = recorded_spec(current_app.config["STORE"])
    # The measuring CRS to suggest: where the parcels lie (else any layer), or what the last check suggested (a layer
    # whose CRS was given on this page lies outside New York). None while any layer lies where the town measures: the
    # layer apart is in a wrong CRS (the check says so), and measuring where it landed would put the rest far off.
    kinds = sorted(sources, key=_parcels_first)
    read = [_read_once(token, kind, sources[kind]) for kind in kinds]
    found = [] if any(r.get("at_home") for r in read) else [r.get("suggested_crs") for r in read]
    suggested = next((c for c in found if c), None) or meta.get("suggested_crs")
    given = (form.get(MEASURING_CRS) or "").strip()
    town_crs = _town_measuring_crs()
    page = render_template(
        "data/mapping.html",
        token=token,
        name=meta.get("name", token),
        layers=layers,
        unknown=unknown,
        tables=table_notes,
        kinds=KIND_HELP,
        offered=offered,
        # an upload without parcels (a town's sewer layers alone) is offered the form to add them here: the
        # report, which has it too, is reached only once there are parcels
        missing_layers=[] if "parcels" in sources else ["parcels"],
        left_out=left_out_words(meta.get(LEFT_OUT) or []),
        profiles=services.profile_names(),
        profile=meta.get("profile") or town.profile,
        measuring_crs=given or suggested or "",
        measuring_placeholder=crs_label(town_crs),
        measuring_note=measuring_crs_note(
            town_crs.name, (suggested, parse_crs(suggested, what="the suggested CRS").name) if suggested else None
        ),
        message=message and without_server_folders(message),
    )
    return page, status


# The kind a single layer whose name says nothing is offered as, by the shapes it declares.
OFFERED_KIND = {"Polygon": "parcels", "LineString": "mains", "Point": "manholes"}


def _offered(token: str, source) -> dict | None:
    """The kind the column-mapping page offers a single layer whose name says nothing as (``OFFERED_KIND``), with
    its shapes in words; None where it declares no one kind of shapes (the planner chooses, nothing offered)."""
    shapes = _shapes(token, source)
    if shapes is None:
        return None
    return {"kind": OFFERED_KIND[shapes], "shapes": SHAPE_WORDS[shapes]}


def _shapes(token: str, source) -> str | None:
    """The kind of shapes an upload's layer declares (``layers.read.declared_geometry``), read once and kept in the
    upload's record by the layer's file and name."""
    folder = _folder(token)
    key = f"{Path(source.path).name}|{source.layer or ''}"
    known = read_meta(folder).get("shapes") or {}
    if key not in known:
        known = {key: declared_geometry(source)}
        update_meta_entry(folder, "shapes", key, known[key])
    return known[key]


def _named_as_used(name: str, sources: dict) -> tuple[str, str] | None:
    """The kind a layer left out is named as, with the layer used as that kind (``tax_parcels`` beside ``parcels`` in
    one GeoPackage: the first name sewerplan knows was taken, and the other was listed, unsaid, as a layer whose
    name says nothing); None for a layer whose name names no kind, or none used."""
    kind = next((k for k, names in LAYER_NAMES.items() if name in names), None)
    return (kind, sources[kind].label) if kind in sources else None


def _parcels_first(kind: str) -> tuple[bool, str]:
    return kind != "parcels", kind


@bp.post("/<token>/kinds")
@requires("planner")
def kinds(token: str):
    """What each layer whose name says nothing is (a single ``town.geojson`` is the parcels layer, say)."""
    available, _ = _layers(token)
    folder = _folder(token)
    tables = upload_tables(folder)
    given = {}
    for key, value in request.form.items():
        head, _, name = key.partition(".")
        if head == "kind" and name in available and (value in SPECS or value == ""):
            if value and name in tables:  # a form made by hand: the page offers no kind for a table
                return mapping(token, message=table_words(name, available[name]), status=400)
            given[name] = value
    try:
        set_kinds(folder, given)  # refused, changing nothing, where two layers would be of one kind
    except LayerError as exc:
        return mapping(token, message=str(exc), status=400)
    return redirect(url_for("data.mapping", token=token))


@bp.post("/<token>/mapping")
@requires("planner")
def validate(token: str):
    _, sources = _layers(token)
    folder = _folder(token)
    form = {k: v for k, v in request.form.items() if k != "csrf_token"}
    update_meta(folder, {"form": form, "profile": form.get("profile") or None})
    if "parcels" not in sources:
        return mapping(
            token,
            message="No layer of the upload is the parcels layer: say which one it is below, or add it.",
            status=422,
        )
    try:
        spec = _upload_spec(request.form, _layer_columns(token, sources))
    except LayerError as exc:  # a mapping that cannot be meant: the upload is kept, the page shows the fields again
        return mapping(token, message=str(exc), status=422)
    misfits: dict[str, tuple[str, str]] = {}

    def kept(exc: LayerError) -> bool:
        misfits.update(_chosen_kinds_not_fitting(token, sources, exc))
        return bool(misfits) or fixed_on_mapping_page(exc)

    try:
        with _refused_deletes(folder, kept=kept):
            ws = services.open_workspace(spec, sources=sources, required=("parcels",))
    except LayerValidationError as exc:
        if misfits:  # a kind chosen that the layer's shapes cannot be: chosen again, the upload kept
            set_kinds(folder, {name: "" for name, _ in misfits.values()})
            return mapping(token, message=_misfit_words(sources, misfits, exc), status=422)
        # refused and deleted by _refused_deletes (the report says to upload again) unless the mapping page fixes it
        problems = [problem_view(p, upload=True) for p in exc.problems]
        kept = fixed_on_mapping_page(exc)
        told = next((p.fix.example for p in exc.problems if p.fix and p.fix.setting == "crs"), "")
        if kept and told.startswith("EPSG:"):
            update_meta(folder, {"suggested_crs": told})  # the mapping page fills its "Measuring CRS" field in with it
        return render_template("data/report.html", token=token, problems=problems, ok=False, kept=kept), 422
    except LayerError as exc:
        if not fixed_on_mapping_page(exc):
            raise
        return mapping(token, message=web_text(exc, upload=True), status=422)  # kept: the field below fixes it
    frames = {k: getattr(ws.layers, k) for k in SPECS if getattr(ws.layers, k, None) is not None}
    # Under the upload store's writer lock, with the CRS the layers were written in when not the profile's and the
    # profile (with the values set on it) they were checked under: the store's runs are measured in that CRS and
    # run under that profile until one records its own, the upload's and, once published, the town's.
    open_store(folder / "store.gpkg").write_layers(
        frames, overwrite=True, measuring_crs=spec.crs, profile=spec.profile, profile_settings=spec.overrides
    )
    update_meta(folder, {NOT_READY: _not_ready(ws, spec)})  # the Data page's Publish asks for a confirmation then
    return _usable_report(token, ws, sources, spec)


def _chosen_kinds_not_fitting(token: str, sources: dict, exc: LayerError) -> dict[str, tuple[str, str]]:
    """The layers refused only because the kind the planner chose for them on "What is this layer?" cannot hold their
    shapes (lines chosen as the parcels), by kind: (the layer's name, the shapes it declares). Their other problems
    (no parcel_id in a layer of pipes) are the wrong kind's, not the data's; empty where any other layer's problem is
    one the column-mapping page cannot fix (the data must be fixed then), or no such layer is refused."""
    if not isinstance(exc, LayerValidationError):
        return {}
    chosen = read_meta(_folder(token)).get("kinds") or {}
    wrong = {}
    for p in exc.problems:
        name = next((n for n, k in chosen.items() if k == p.layer), None)
        if p.severity != "error" or p.check != "geometry_type" or name is None or p.layer not in sources:
            continue
        shapes = _shapes(token, sources[p.layer])
        if shapes is not None and shapes not in SPECS[p.layer].geometry:
            wrong[p.layer] = (name, shapes)
    others = [p for p in exc.problems if p.severity == "error" and p.layer not in wrong]
    if any(p.fix is None or p.fix.setting not in FIXED_ON_MAPPING_PAGE for p in others):
        return {}
    return wrong


def _misfit_words(sources: dict, misfits: dict[str, tuple[str, str]], exc: LayerValidationError) -> str:
    """What the column-mapping page says of layers whose chosen kind cannot hold their shapes: which kinds can, and
    the other problems found (each fixed on the page), so nothing is told a round later."""
    said = []
    for kind, (_, shapes) in misfits.items():
        fits = [k.replace("_", " ") for k in kinds_fitting(shapes)]
        words = kind.replace("_", " ")
        holds = " or ".join(SHAPE_WORDS[g] for g in SPECS[kind].geometry if g in SHAPE_WORDS)
        said.append(
            f"{Path(sources[kind].path).name} holds {SHAPE_WORDS[shapes]}, and the {words} layer "
            f"({SPECS[kind].help}) holds {holds}: it cannot be the {words} layer. Layers of {SHAPE_WORDS[shapes]} "
            f"can be the {', '.join(fits[:-1])}{' or ' if len(fits) > 1 else ''}{fits[-1]} layer: say below what it "
            "is. The upload is kept."
        )
    others = [
        f"{p.message} {field_for(p.fix, upload=True)}"
        for p in exc.problems
        if p.severity == "error" and p.layer not in misfits
    ]
    if others:
        said.append("Also found, to fix on this page: " + " ".join(others))
    return " ".join(said)


# What an upload's chosen profile still needs before its analysis can run (its report's "Not yet"), kept in its
# record when it is checked: the Data page then asks the planner to confirm that before publishing it.
NOT_READY = "not_ready"


def _not_ready(ws, spec: WorkspaceSpec) -> dict | None:
    """What the profile the upload was checked under still needs (``services.readiness``), or None: it can run."""
    profile = services.profile_of(spec)
    missing = services.readiness(ws.layers, [profile])[0].missing
    return {"profile": profile.id, "missing": [str(e) for e in missing]} if missing else None


def _upload_not_ready(token: str, folder: Path) -> dict | None:
    """The upload's ``_not_ready``, from its record, else (checked before it was recorded) checked again now."""
    meta = read_meta(folder)
    if NOT_READY in meta:
        return meta[NOT_READY]
    _, sources = _layers(token)
    spec = _upload_spec(meta.get("form") or {}, _layer_columns(token, sources))
    with _refused_deletes(folder):
        ws = services.open_workspace(spec, sources=sources, required=("parcels",))
    found = _not_ready(ws, spec)
    update_meta(folder, {NOT_READY: found})
    return found


def not_ready_words(not_ready: dict) -> str:
    """What an upload that cannot run lacks, in one clause: 'under fort-plain: The mains layer ...; ...'."""
    return f"under the profile {not_ready['profile']}: " + " ".join(
        m if m.endswith(".") else f"{m}." for m in not_ready["missing"]
    )


def _usable_report(token: str, ws, sources: dict, spec: WorkspaceSpec, *, message: str | None = None, status=200):
    """The validation report of an upload whose layers can be used: counts, what each profile still needs (with the
    form to add a missing layer), columns not used, the problems found; ``message`` above it."""
    layers = ws.layers
    frames = {k: getattr(layers, k) for k in SPECS if getattr(layers, k, None) is not None}
    counts = {k: len(v) for k, v in frames.items()}
    unused = {}
    for kind, frame in frames.items():
        chosen = set((frame.attrs.get("source_columns") or {}).values())
        unused[kind] = [c for c in _columns(token, kind, sources[kind]) if c not in chosen]
    # The optional fields the planner left empty on purpose ("(none)" chosen), each with the column its name would
    # have taken: said, so the report read at a board meeting shows that no owner column was used by choice.
    left_empty = [
        {
            "kind": kind,
            "field": name,
            "column": found_by_name(SPECS[kind].field(name), _columns(token, kind, sources[kind])),
        }
        for kind, given in (spec.mapping.get("columns") or {}).items()
        if kind in frames
        for name, column in given.items()
        if column == ""
    ]
    chosen_profile = services.profile_of(spec)
    others = [p for p in services.profiles() if p.id != chosen_profile.id]
    ready = services.readiness(layers, [chosen_profile, *others])
    readiness = [
        {
            "profile": r.profile,
            "municipality": r.municipality,
            "chosen": k == 0,
            "ready": r.ready,
            "missing": [
                {
                    "message": without_server_folders(str(e)),
                    "how": (
                        f'Add the {e.fix.target.replace("_", " ")} layer with "Add a layer to this upload" below.'
                        if getattr(e, "fix", None) and e.fix.setting == "layer"
                        else field_for(e.fix, upload=True)
                        if getattr(e, "fix", None)
                        else ""
                    ),
                    "layer": e.fix.target if getattr(e, "fix", None) and e.fix.setting == "layer" else None,
                }
                for e in r.missing
            ],
        }
        for k, r in enumerate(ready)
    ]
    missing_layers = sorted({m["layer"] for r in readiness for m in r["missing"] if m["layer"]})
    problems = [problem_view(p, upload=True) for p in layers.problems]
    return render_template(
        "data/report.html",
        token=token,
        problems=problems,
        ok=True,
        counts=counts,
        unused=unused,
        left_empty=left_empty,
        readiness=readiness,
        missing_layers=missing_layers,
        kinds=KIND_HELP,
        message=message and without_server_folders(message),
    ), status


def _report_again(token: str, *, message: str, status: int):
    """The upload's report, checked again from its layers without writing its store (a run holds it), with
    ``message``: the page a refused add-layer came from, its form there to send the layer again. The mapping page
    when the layers cannot be checked, and at once for an upload without parcels (the page with its form to add
    them): checked, its missing parcels refused the upload, and a refused parcels layer deleted the whole upload."""
    _, sources = _layers(token)
    if "parcels" not in sources:
        return mapping(token, message=message, status=status)
    try:
        spec = _upload_spec(read_meta(_folder(token)).get("form") or {}, _layer_columns(token, sources))
        with _refused_deletes(_folder(token)):
            ws = services.open_workspace(spec, sources=sources, required=("parcels",))
    except LayerError:
        return mapping(token, message=message, status=status)
    return _usable_report(token, ws, sources, spec, message=message, status=status)


@bp.post("/<token>/add")
@requires("planner")
def add_layer(token: str):
    """Add the layer the report says is missing (streets, say) to the upload, then check it all again."""
    folder = _folder(token)
    kind = request.form.get("kind", "")
    if kind not in SPECS:
        raise LayerError(f"Choose what the added layer is: one of {', '.join(SPECS)}.")
    file = request.files.get("layer")
    if file is None or not file.filename:
        raise LayerError("Choose the file of the layer to add.")
    config = current_app.config
    # The upload's checked store is dropped (checked again with the new layer before it is used), under its writer
    # lock: a run on the workspace would otherwise put the old store back when it ends.
    try:
        writer = store_writer(folder / "store.gpkg", who=g.user, what="adding a layer to the upload")
    except StoreBusyError as exc:
        file.close()
        return _report_again(token, message=str(exc), status=409)
    refused = None
    with writer:
        try:
            add_to_upload(
                folder,
                file.filename,
                file.stream,
                kind=kind,
                max_unzipped_bytes=config["MAX_UNZIPPED_BYTES"],
                quota_left=config["UPLOAD_QUOTA_BYTES"] - owner_usage(_root(), g.user),
            )
        except LayerError as exc:  # the upload is as it was: its report says why, above the form to add it again
            refused = exc
        finally:
            file.close()
        if refused is None:
            discard_store(folder / "store.gpkg")
    if refused is not None:
        return _report_again(token, message=str(refused), status=400)
    return redirect(url_for("data.mapping", token=token))


def _upload_spec(form, layer_columns: dict[str, list[str]] | None = None) -> WorkspaceSpec:
    """The workspace an upload is checked in: the profile chosen on the form (else the town's, as its store's latest
    run applied it), the form's measuring CRS (``measuring_crs``, as the command line's --crs; data outside New
    York) else the town's, and the form's column mapping (``KIND.FIELD``), each layer's CRS
    where it declares none (``layer_crs.KIND``, as the command line's --layer-crs KIND=CRS) and coded values
    (``map_value.KIND``: one ``FIELD.VALUE=CODE`` a line, as --map-value KIND.FIELD.VALUE=CODE). ``layer_columns``:
    each layer's columns, to tell a column named "(none)" from the marker of none chosen (``none_marker``)."""
    columns: dict[str, dict[str, str]] = {}
    values: dict[str, dict[str, dict[str, str]]] = {}
    layer_crs: dict[str, str] = {}
    for key, given in form.items():
        head, _, rest = key.partition(".")
        # A column's name is taken as the layer has it, spaces at its ends too (" Owner " from a spreadsheet export);
        # anything else typed is trimmed.
        known = (layer_columns or {}).get(head, [])
        text = given if head in SPECS and rest and given in known else (given or "").strip()
        if not text:
            continue
        if key == MEASURING_CRS:
            continue  # below
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
            # "(none)" chosen on purpose is the empty name: the check then takes no column for the field
            columns.setdefault(head, {})[rest] = "" if text == none_marker(known) else text
    # A field no layer has (a page gone stale, a form made by hand), codes for a field without codes, one column for
    # two fields: said here, the upload kept, where the check refused (and deleted) it or ignored the codes unsaid.
    mistakes = mapping_mistakes(ColumnMapping(columns=columns, values=values))
    if mistakes:
        raise LayerError(
            " ".join(mistakes) + " Nothing was checked: correct the mapping below and check the data again."
        )
    town = recorded_spec(current_app.config["STORE"])
    chosen = form.get("profile") or ""
    same = chosen in ("", town.profile)
    return WorkspaceSpec(
        profile=town.profile if same else chosen,
        settings=town.settings if same else (),
        crs=(form.get(MEASURING_CRS) or "").strip() or town.crs,
        layer_crs=tuple(layer_crs.items()),
        mapping={"columns": columns, "values": values},
    )


@bp.post("/<token>/use")
@requires("planner")
def use(token: str):
    """Work on the upload: the map, summary, runs and downloads of this planner's session use it."""
    store = _folder(token) / "store.gpkg"
    if not store.exists():
        raise LayerError('Check the upload first: press "Check the data" on its column-mapping page.')
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
    name = _published_already(token)
    left = _root() / token
    done = published_as(left) is not None or not left.exists() or _town_setting(PUBLISHED_UPLOAD) == token
    if name is not None and done:
        if left.is_dir():  # finish deleting its files (or mark it published), where a server stopped before it had
            retire_published(left, name)
        return upload_form(message=_published_words(name))  # sent again: it is done, and nothing is redone
    folder = _folder(token)
    store = folder / "store.gpkg"
    if not store.exists():
        raise LayerError('Check the upload first: press "Check the data" on its column-mapping page.')
    name = read_meta(folder).get("name", token)
    not_ready = _upload_not_ready(token, folder)
    if not_ready and request.form.get("publish_not_ready") != "1":
        # One click replaced the town's store with data no run can use: the planner confirms it, knowing what lacks.
        return upload_form(
            message=f"{name} cannot run yet {not_ready_words(not_ready)} Nothing was published. To publish it all the "
            "same, tick the box beside its Publish button, which names what is missing; the town's store it replaces "
            "is kept below, to restore.",
            status=409,
        )
    town = current_app.config["STORE"]
    replaced = latest_run(town)  # the profile the store it replaces was last analysed under, to compare
    first = not store_exists(town)  # a new town's first publication makes the store: it replaces none
    try:  # the town's store will say which upload it is (_published_already); taken under the upload's writer lock
        write_setting(store, PUBLISHED_UPLOAD, token)
    except StoreBusyError as exc:  # a run on the upload: published now, it would swap its old copy in afterwards
        return upload_form(message=_upload_busy(token, "publish", exc), status=409)
    try:
        publish_store(
            current_app.config["STORE"],
            store,
            who=g.user,
            label=f"publishing {name} by {g.user}",
            keep=current_app.config["KEEP_PREVIOUS_STORES"],
        )
    except StoreBusyError as exc:  # a publish sent twice (a double click): the first is replacing the store now
        return upload_form(message=str(exc), status=409, town_busy=True)
    if session.get("workspace") == token:
        session.pop("workspace")
    session[PUBLISHED] = [[t, n] for t, n in session.get(PUBLISHED, []) if t != token][-KEPT_PUBLISHED + 1 :] + [
        [token, name]
    ]
    retire_published(folder, name)  # it is the town's store now: its record stays, to say so if sent again
    said = _published(name, town, replaced, first=first)
    if not_ready:
        said += f" It cannot run yet {not_ready_words(not_ready)}"
    return upload_form(message=said)


def _upload_busy(token: str, verb: str, exc: StoreBusyError) -> str:
    """Why the upload was not published or discarded: a run (or another write) holds its store, and what holds it."""
    name = read_meta(_root() / token).get("name", "The upload")
    return f"{name} was not {verb}ed: a run is using this upload; {verb} it when the run ends. {exc}"


def _published(name: str, town: str, replaced: dict | None, *, first: bool = False) -> str:
    """What publishing says: the upload is the town's store, the replaced one is kept, and, when the upload was never
    run, which profile a run of it applies, and the profile the store it replaced was analysed under where another:
    a planner must not take the new data to be run under the town's ordinance of before without seeing it."""
    said = f"{name} is now the town's store." + ("" if first else " The store it replaced is kept below.")
    if latest_run(town):
        return said  # run as an upload: its run record says the profile, as the map's run line does
    spec = recorded_spec(town)
    said += f" Not analysed yet. {_profile_note(town, spec)}"
    before = (replaced or {}).get("profile")
    if before and before != spec.profile:
        said += f" The store it replaced was last analysed under the profile {before}."
    return said


@bp.post("/restore")
@requires("planner")
def restore():
    name = request.form.get("name", "")
    town = current_app.config["STORE"]
    # Told as the table shows it (when it was saved, and why), not by its file's stamp.
    kept = next((p for p in previous_stores(town) if p["name"] == name), None)
    try:
        restore_store(town, name, who=g.user, keep=current_app.config["KEEP_PREVIOUS_STORES"])
    except StoreBusyError as exc:
        return upload_form(message=str(exc), status=409, town_busy=True)
    which = name
    if kept:
        which = f"saved {_when(kept['saved_at'])}" + (f" ({kept['label']})" if kept["label"] else "")
    return upload_form(message=f"The version {which} is the town's store again; the one it replaced is kept.")


@bp.post("/<token>/discard")
@requires("planner")
def discard_upload(token: str):
    try:
        discard(_root(), token, owner=g.user)
    except StoreBusyError as exc:  # a run on it would fail with its files gone, naming the server's folders
        return upload_form(message=_upload_busy(token, "discard", exc), status=409)
    if session.get("workspace") == token:
        session.pop("workspace")
    return redirect(url_for("data.upload_form"))
