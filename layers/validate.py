"""Validate and normalise one input layer: columns, geometry, CRS, identifiers and coded values.

Every check collects its findings as ``Problem`` records; the caller raises once with all errors of all layers,
so a user fixing a shapefile gets the whole list. Repairs (``make_valid``, dropping Z) are applied and reported.
The result carries canonical columns (``parcel_id``, ``sewer_type`` ...) beside the user's own. Problems that
concern single values name their row: the feature's 1-based position in the layer as read, as a GIS attribute
table lists it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely
from pyproj import CRS

from analysis._parallel import default_workers, elementwise
from analysis.arrays import distinct
from analysis.errors import Fix
from analysis.notices import LETTER_FIELDS, UNREADABLE
from analysis.profiles import MAX_ROW_WIDTH_FT
from analysis.units import feet_per_unit
from layers.crs import check_and_reproject
from layers.errors import LayerError, Problem
from layers.schema import (
    FACILITY_TYPE_VALUES,
    FALSE_VALUES,
    OWNERSHIP_VALUES,
    RESULT_COLUMNS,
    ROUTE_KIND_VALUES,
    SEWER_TYPE_VALUES,
    SPECS,
    STATUS_VALUES,
    STRUCTURE_VALUES,
    TRUE_VALUES,
    UNKNOWN_NUMBER_VALUES,
    LayerSpec,
    column_for,
    columns_alike,
    invert_reading,
)
from layers.validity import is_valid
from layers.write import zip_text

# A working column holding each feature's row in the layer as read (1-based), dropped before the layer is returned.
_ROW = "__sewerplan_row__"
# The mains' coded columns whose value as the layer writes it is kept beside the code, as <name>_as_given, for the
# words a finding describes a main in (analysis/plan_route.py).
_KEPT_AS_GIVEN = ("sewer_type", "status")


@dataclass
class ColumnMapping:
    """A user's names for canonical fields, and their codes for coded values, per layer kind.

    ``columns["parcels"]["parcel_id"] = "SBL"``; ``values["mains"]["sewer_type"]["GRAV"] = "sanitary"``.
    A field given the empty name (``columns["parcels"]["owner_name"] = ""``) has no column, chosen so on purpose:
    the layer's column of the field's own name (``owner``) is not taken for it. A field not given at all takes the
    column found by its names.
    """

    columns: dict[str, dict[str, str]] = field(default_factory=dict)
    values: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)


_RESULT_NAMES = frozenset(c.lower() for c in RESULT_COLUMNS)


def prepare_layer(
    gdf: gpd.GeoDataFrame,
    spec: LayerSpec,
    *,
    label: str,
    target_crs: CRS,
    mapping: ColumnMapping | None = None,
    assume_crs: str | None = None,
    override_crs: str | None = None,
    workers: int | None = None,
    beside: tuple[str, ...] = (),
) -> tuple[gpd.GeoDataFrame | None, list[Problem]]:
    """Check and normalise a layer read from ``label``; ``None`` when it has errors (listed in the problems).

    ``assume_crs`` is used where the layer declares no CRS; ``override_crs`` (the CRS the user gave this layer by
    name) even where it declares one. ``workers``: threads for the geometry checks (None: the machine's cores, up
    to 4), as for the analysis. ``beside``: the kinds of the other layers, lying where ``target_crs`` is used
    (``layers.crs.check_and_reproject``).
    """
    mapping = mapping or ColumnMapping()
    kind = spec.kind
    if getattr(gdf, "active_geometry_name", None) is None:
        return None, [
            Problem(
                kind,
                "no_geometry",
                "error",
                f"{label} is a table without geometry (attributes only), so it cannot be the {kind} layer "
                f"({spec.help}): export it with its shapes, as {' or '.join(spec.geometry)} features, or give it "
                f"another name if it is not meant as the {kind} layer.",
            )
        ]
    problems = _read_warnings(gdf, kind, label)
    if len(gdf) == 0:
        told = f"{label} has no features: export it again with its features (a filter or selection may have left none)"
        if kind not in ("parcels", "mains"):  # a layer the analysis can do without may be left out
            told += f", or leave the {kind} layer out if the town has none to give"
        return None, [*problems, Problem(kind, "empty", "error", f"{told}.")]

    gdf = _drop_other_geometries(gdf, spec, label, problems)
    gdf_as_read = gdf
    mistakes = [
        Problem(kind, "mapping", "error", text, fix=fix)
        for text, fix in _mapping_mistakes(spec, mapping.columns.get(kind, {}), mapping.values.get(kind, {}))
    ]
    shapes = np.asarray(gdf.geometry.values)
    gdf, found = _map_columns(gdf, spec, label, mapping.columns.get(kind, {}), mapping.values.get(kind, {}))
    problems += mistakes + found
    if gdf is None or mistakes:
        # Said now too, not after the columns are fixed: mains given as the parcels were told only of a missing
        # parcel_id, and of their lines once it was mapped (a tester). Every problem at once, as the README says.
        problems += _wrong_geometry_kinds(shapes, spec, label)
        # and its CRS: a shapefile without a .prj and an unknown ID column was told of the column, then, once it
        # was mapped, of the CRS (a tester).
        problems += _crs_problems(
            gdf_as_read,
            kind,
            label,
            target_crs,
            assume_crs=assume_crs,
            override_crs=override_crs,
            workers=default_workers(workers),
            beside=beside,
        )
        return None, problems
    gdf[_ROW] = np.arange(1, len(gdf) + 1)
    gdf = _assign_ids(gdf, spec, problems)

    gdf = _drop_missing_geometry(gdf, spec, problems)
    if len(gdf) == 0:
        problems.append(Problem(kind, "empty", "error", f"{label} has no feature with a geometry."))
        return None, problems
    gdf = _drop_z(gdf, spec, problems)
    if not _check_finite(gdf, spec, label, problems, default_workers(workers)):
        return None, problems
    if not _check_geometry_types(gdf, spec, label, problems):
        return None, problems

    local = _local_grid(gdf, kind, label, target_crs, override_crs)
    if local is not None:
        return None, [*problems, local]
    as_read = gdf
    gdf, crs_problems = check_and_reproject(
        gdf,
        layer=kind,
        label=label,
        target=target_crs,
        assume=assume_crs,
        ids=gdf[spec.id_field],
        override=override_crs,
        workers=default_workers(workers),
        beside=beside,
    )
    problems += crs_problems
    if gdf is None:
        # The IDs are checked all the same, so one report lists both (a layer misplaced and with one ID for every
        # parcel was told the second fault only after it was uploaded again with the first fixed; a tester).
        _check_duplicate_ids(as_read.copy(), spec, label, problems)
        return None, problems
    gdf = _repair_invalid(gdf, spec, problems, feet_per_unit(target_crs), default_workers(workers))
    if not _check_duplicate_ids(gdf, spec, label, problems):
        return None, problems
    if not _normalise_values(gdf, spec, label, mapping.values.get(kind, {}), problems):
        return None, problems
    _control_characters(gdf, spec, label, problems)
    _zero_flows(gdf, spec, label, problems)
    return gdf.drop(columns=_ROW), problems


def check_streets_hold_no_lots(frames: dict[str, gpd.GeoDataFrame], labels: dict[str, str]) -> list[Problem]:
    """Refuse a streets layer whose polygons are too wide for a right-of-way and hold whole parcels: another layer
    (a service area, a town boundary) given as the streets.

    A service-area polygon given as the streets layer was taken as one right-of-way containing every parcel, and
    the mandated parcels went from 57 to 275 without a word (a tester). A right-of-way may hold road parcels (the
    road's own tax lots, one a block along a 3,000-ft avenue), so what tells the two apart is the polygon's mean
    width (twice its area over its perimeter): a polygon holding a whole parcel and wider on average than any
    right-of-way a profile may set (``MAX_ROW_WIDTH_FT``) is refused, naming it and the parcels it holds.
    Centreline streets hold nothing and are not checked.
    """
    streets, parcels = frames.get("streets"), frames.get("parcels")
    if streets is None or parcels is None or not len(streets) or not len(parcels):
        return []
    geoms = np.asarray(streets.geometry.values)
    areas = np.flatnonzero(np.isin(shapely.get_type_id(geoms), (3, 6)))
    if not len(areas):
        return []
    fpu = feet_per_unit(CRS(streets.crs))
    width_ft = 2 * shapely.area(geoms[areas]) / np.maximum(shapely.length(geoms[areas]), 1e-9) * fpu
    wide = areas[width_ft > MAX_ROW_WIDTH_FT]
    if not len(wide):
        return []
    street, parcel = shapely.STRtree(np.asarray(parcels.geometry.values)).query(
        geoms[wide], predicate="contains_properly"
    )
    if not len(street):
        return []
    rows = wide[np.unique(street)]
    ids = streets["street_id"].astype(str).to_numpy()[rows] if "street_id" in streets.columns else rows.astype(str)
    held = parcels["parcel_id"].astype(str).to_numpy()[np.unique(parcel)]
    shown = ", ".join(held[:5]) + (f" and {len(held) - 5:,} more" if len(held) > 5 else "")
    one = len(rows) == 1
    return [
        Problem(
            "streets",
            "street_holds_lots",
            "error",
            f"{labels['streets']}: {len(rows):,} of its polygons {'is' if one else 'are'} wider than any street "
            f"right-of-way ({MAX_ROW_WIDTH_FT:,} ft on average) and {'holds' if one else 'hold'} whole parcels "
            f"({shown}): this looks like another layer (a service area, a town boundary) given as the streets. Give "
            "the streets' rights-of-way or centrelines, or leave the streets layer out.",
            len(rows),
            tuple(ids[:50]),
            fix=Fix("layer", "streets", "PATH"),
        )
    ]


def _local_grid(
    gdf: gpd.GeoDataFrame, kind: str, label: str, target_crs: CRS, override_crs: str | None
) -> Problem | None:
    """A layer whose file declares a local grid (a .prj's ``LOCAL_CS``, an engineering CRS), to be measured in
    another CRS: no transformation places a local grid on the earth, and the check crashed in PROJ ("Error creating
    Transformer from CRS"), a traceback on the command line and an error page on the web. Said as a CRS to give
    (the CRS given for the layer replaces the declared one). A SWMM model's own coordinates declare none."""
    if override_crs is not None or gdf.crs is None:
        return None
    declared = CRS(gdf.crs)
    if not declared.is_engineering or declared.equals(target_crs):
        return None
    return Problem(
        kind,
        "no_crs",
        "error",
        f"{label} declares a local grid ({declared.name}), which no coordinate reference system places on the earth, "
        f"so it cannot be measured in {target_crs.name} with the town's other layers: give the CRS it was drawn in "
        "(the state plane CRS its coordinates are in), or, if they are a grid of the town's own, place the layer "
        "in the GIS (georeference it) and export it again.",
        fix=Fix("layer_crs", kind, "EPSG:2260"),
    )


def _crs_problems(
    gdf: gpd.GeoDataFrame,
    kind: str,
    label: str,
    target_crs: CRS,
    *,
    assume_crs: str | None,
    override_crs: str | None,
    workers: int,
    beside: tuple[str, ...],
) -> list[Problem]:
    """The CRS check of a layer refused before its CRS is checked (a column missing), for one report to list both:
    the problems ``check_and_reproject`` finds (no CRS, a CRS its coordinates do not fit ...), the layer's features
    named by row. A CRS given that is no CRS is one of them, not raised over the layer's other problems."""
    local = _local_grid(gdf, kind, label, target_crs, override_crs)
    if local is not None:
        return [local]
    try:
        _, found = check_and_reproject(
            gdf,
            layer=kind,
            label=label,
            target=target_crs,
            assume=assume_crs,
            override=override_crs,
            workers=workers,
            beside=beside,
        )
    except LayerError as exc:
        return [Problem(kind, "no_crs", "error", str(exc), fix=exc.fix)]
    return found


def _read_warnings(gdf: gpd.GeoDataFrame, kind: str, label: str) -> list[Problem]:
    """What the reader (GDAL) warned about while reading the layer, as warnings the user sees with the rest."""
    return [
        Problem(kind, "read_warning", "warning", f"{label}: while reading it, {text}")
        for text in gdf.attrs.get("read_warnings", ())
    ]


def _drop_other_geometries(
    gdf: gpd.GeoDataFrame, spec: LayerSpec, label: str, problems: list[Problem]
) -> gpd.GeoDataFrame:
    """Leave out geometry columns besides the layer's own (a GeoParquet file with a label point beside each parcel):
    the results have one geometry, and a second made every writer fail once the whole analysis had run.

    Where the layer's own column holds none of the features its kind needs (label points as a parcels file's
    primary geometry) and exactly one other column holds nothing else, that column is the layer's geometry
    instead, and the swap is reported: refused, the user was told only that parcels cannot be points.
    """
    own = gdf.geometry.name
    other = [c for c in gdf.columns if c != own and isinstance(gdf[c].dtype, gpd.array.GeometryDtype)]
    if not other:
        return gdf
    fitting = [c for c in other if _only_of_kind(gdf[c], spec)]
    if len(fitting) == 1 and not _any_of_kind(gdf[own], spec):
        (chosen,) = fitting
        other = [own] + [c for c in other if c != chosen]
        gdf = gdf.set_geometry(chosen)
        told = (
            f"{label}: its geometry column {other[0]} holds no {' or '.join(spec.geometry)}; column {chosen} holds "
            f"the {spec.kind}' shapes, and the layer is measured by it. Column(s) {', '.join(other)} were left out."
        )
    else:
        told = (
            f"{label}: column(s) {', '.join(other)} hold geometries besides the layer's own ({own}); they were left "
            "out, and the layer is measured by its own."
        )
    problems.append(Problem(spec.kind, "other_geometry", "warning", told))
    return gdf.drop(columns=other)


def _only_of_kind(column: gpd.GeoSeries, spec: LayerSpec) -> bool:
    """Every geometry in ``column`` of a type the layer's kind allows (and at least one geometry)."""
    types = shapely.get_type_id(np.asarray(column.values))
    given = types >= 0
    return bool(given.any()) and bool(np.isin(types[given], _allowed(spec)).all())


def _any_of_kind(column: gpd.GeoSeries, spec: LayerSpec) -> bool:
    return bool(np.isin(shapely.get_type_id(np.asarray(column.values)), _allowed(spec)).any())


def _allowed(spec: LayerSpec) -> list[int]:
    return [_TYPE_IDS[name.upper()] for name in spec.geometry]


def _map_columns(
    gdf: gpd.GeoDataFrame,
    spec: LayerSpec,
    label: str,
    user_map: dict[str, str],
    values: dict[str, dict[str, str]] | None = None,
) -> tuple[gpd.GeoDataFrame | None, list[Problem]]:
    """The layer with each field's column (``user_map``'s, else the one found by the field's names; none where
    ``user_map`` gives the empty name), and the problems: a column that is not there, a required field without one,
    coded values (``values``) for a field that has no column, which would change nothing."""
    kind = spec.kind
    problems: list[Problem] = []
    geom_name = gdf.geometry.name
    existing = [c for c in gdf.columns if c != geom_name]
    # Found by name (``column_for``): without case, without spaces at a name's ends ("PARCEL_ID "), as a spreadsheet
    # heads it ("Site Address"); a name as it is wins.
    trimmed = [str(c).strip() for c in existing]
    spaced = {t: c for t, c in zip(trimmed, existing, strict=True) if t != c and trimmed.count(t) == 1}
    known = {f.name for f in spec.fields}
    # Result columns the analysis will add: keep a user's column of that name as input_<name>. Names are compared
    # without case: a GeoPackage (SQLite) holds "Status" and "status" as one column, and refused the results.
    clashes = {c: f"input_{c}" for c in existing if c.lower() in _RESULT_NAMES and c not in known}
    out = gdf.rename(columns=clashes) if clashes else gdf.copy()
    chosen: dict[str, str] = {}
    picked: list[str] = []  # fields whose column the mapping chose, where their names find another or none
    without: list[str] = []  # fields with no column, and no problem said of them
    for f in spec.fields:
        source = user_map.get(f.name)
        by_name = column_for(f, existing)
        if source == "":  # none, chosen on purpose: the column of the field's name is not taken for it
            source = None
            if f.required:
                problems.append(
                    Problem(
                        kind,
                        "missing_column",
                        "error",
                        f"The column mapping leaves {f.name} of the {kind} layer empty, and the {kind} layer needs it "
                        f"({f.help}): choose the column of {label} that holds it. Columns: "
                        f"{', '.join(existing) or 'none'}.",
                        fix=Fix("map", f"{kind}.{f.name}", "COLUMN"),
                    )
                )
                continue
        elif source is not None:
            if source not in existing:  # a name typed without the spaces at its ends (" Owner " from a spreadsheet)
                source = spaced.get(source.strip(), source)
            if source not in existing:  # the geometry is no column to take a field from (IDs read as WKT)
                problems.append(
                    Problem(
                        kind,
                        "mapping",
                        "error",
                        f"the mapping says {f.name} is column {source!r}, but "
                        + (
                            f"that is {label}'s shapes, not a column of values"
                            if source == geom_name
                            else f"{label} has no such column"
                        )
                        + f". Columns: {', '.join(existing)}.",
                        fix=Fix("map", f"{kind}.{f.name}", "COLUMN"),
                    )
                )
                continue
            if source != by_name:
                picked.append(f.name)
        else:
            source = by_name
            problems += _alike(f, existing, by_name, kind, label)
        if source is None:
            without.append(f.name)
            if f.required and not columns_alike(f, existing):  # two named as it, neither taken: said by _alike
                problems.append(
                    Problem(
                        kind,
                        "missing_column",
                        "error",
                        f"{label} has no {f.name} column ({f.help}). Columns: "
                        f"{', '.join(existing) or 'none'}. Map the column that holds it to {kind}.{f.name} (in the "
                        "column mapping).",
                        fix=Fix("map", f"{kind}.{f.name}", "COLUMN"),
                    )
                )
            continue
        chosen[f.name] = source
    problems += _codes_without_column(kind, label, existing, without, user_map, values or {})
    if any(p.severity == "error" for p in problems) or set(user_map) - known:  # unknown: _mapping_mistakes said
        return None, problems
    # Every field's values are taken before any is written: two fields given each other's columns (owner_name and
    # site_address swapped by the mapping) both got the one written first.
    moved = {name: out[clashes.get(source, source)] for name, source in chosen.items() if source != name}
    # A column of a field's name that the mapping takes the field from elsewhere (site_address=owner_name beside the
    # layer's own site_address) is the user's: kept as input_<name>, as a result name's column is, not overwritten.
    displaced = {name: f"input_{name}" for name in moved if name in out.columns and name not in chosen.values()}
    out = out.rename(columns=displaced) if displaced else out
    for name, values in moved.items():
        out[name] = values
    # A field the mapping leaves empty on purpose: the columns its names would find (owner_name, owner ...) are kept
    # as input_<column>. Under their own names the field was read from them all the same, by this check (the column
    # of the field's own name) or when the checked store was read again (the owner column of a layer said to have
    # no owner, found by name by the analysis of the upload).
    empty = {n for f in spec.fields if user_map.get(f.name) == "" for n in (f.name, *f.aliases)}
    set_aside = {
        c: f"input_{c}"
        for c in out.columns
        if str(c).lower() in empty and (c not in known or user_map.get(c) == "") and c != out.geometry.name
    }
    out = out.rename(columns=set_aside) if set_aside else out
    # A column named as a field but for its case ("UNITS" read as units, or kept beside a units column) is kept as
    # input_<column>: a GeoPackage's column names ignore case, and "UNITS" beside "units" refused the results.
    fields = {f.name.lower() for f in spec.fields}
    kept = {c: f"input_{c}" for c in out.columns if c.lower() in fields and c not in known}
    out = out.rename(columns=kept) if kept else out
    out = _distinct_without_case(out, kind, known, problems)
    # Each field's column as the user's file names it ("Status", not the input_Status it is kept as): messages and
    # the upload's "Columns not used" speak of the file's own columns.
    out.attrs["source_columns"] = chosen
    out.attrs["picked_columns"] = picked  # _picked_fix: values refused there may be the wrong column's
    if kind == "mains" and {"us_invert_ft", "ds_invert_ft"} & set(chosen):
        out.attrs["invert_reading"] = invert_reading(*(_named_by(out, spec, chosen, f) for f in _INVERT_FIELDS))
    return out, problems


def _alike(f, existing: list, taken, kind: str, label: str) -> list[Problem]:
    """What is said of columns named as field ``f`` that it is not read from (``layers.schema.columns_alike``):
    "units" taken and "UNITS" beside it, whose values may differ, a warning naming both; "Units" and "UNITS" alike,
    neither taken, a warning, or an error where the layer needs the field."""
    alike = columns_alike(f, existing)
    if not alike:
        return []
    fix = Fix("map", f"{kind}.{f.name}", "COLUMN")
    listed = ", ".join(repr(str(c)) for c in alike)
    what = f" ({f.help})" if f.help else ""
    if taken is not None:
        one = len(alike) == 1
        return [
            Problem(
                kind,
                "columns_alike",
                "warning",
                f"{label}: {f.name}{what} is read from column {str(taken)!r}; {listed} {'is' if one else 'are'} "
                f"named as {f.name} too (but for case or spaces) and not read: if {'it' if one else 'one of them'} "
                f"holds {f.name}, choose that column for the field.",
                fix=fix,
            )
        ]
    return [
        Problem(
            kind,
            "columns_alike",
            "error" if f.required else "warning",
            f"{label} has {len(alike)} columns named as {f.name}{what} alike: {listed}; sewerplan cannot tell which "
            f"holds it, so {'the layer cannot be read' if f.required else 'none is read'}: choose the one that does "
            "for the field.",
            fix=fix,
        )
    ]


_INVERT_FIELDS = ("us_invert_ft", "ds_invert_ft")


def _named_by(out: gpd.GeoDataFrame, spec: LayerSpec, chosen: dict[str, str], name: str) -> str | None:
    """The name of the user's column a field was taken from (None where it has none). Read again from a store,
    the field is found under its own name (us_invert_ft) beside the user's column it was copied from, which is
    kept (start_invert): that column, where it holds the same values, is the one the user named."""
    source = chosen.get(name)
    if source != name:
        return source
    field_spec = spec.field(name)
    others = [c for c in out.columns if c != name and c != out.geometry.name]
    original = column_for(replace(field_spec, aliases=tuple(a for a in field_spec.aliases if a != name)), others)
    if original is None:
        return source
    mine = pd.to_numeric(out[name], errors="coerce")
    theirs = pd.to_numeric(out[original], errors="coerce")
    same = ((mine == theirs) | (mine.isna() & theirs.isna())).all()
    return str(original) if same else source


def _codes_without_column(
    kind: str, label: str, existing: list[str], without: list[str], user_map: dict[str, str], values: dict
) -> list[Problem]:
    """Coded values given for a field of codes that has no column in the layer: they would change nothing, and the
    user who wrote them believes the layer holds that field. Refused, naming the field and the layer, as a mapping
    naming a field the layer has not is (an upload is kept: the column-mapping page fixes it)."""
    said = []
    for name in without:
        if name not in values or name not in CODED_FIELDS:
            continue  # codes for a field without codes: _mapping_mistakes says so
        codes = ", ".join(f"{v}={c}" for v, c in list(values[name].items())[:3])
        more = " ..." if len(values[name]) > 3 else ""
        why = "the column mapping leaves it empty" if user_map.get(name) == "" else f"{label} has no {name} column"
        said.append(
            Problem(
                kind,
                "mapping",
                "error",
                f"Coded values are given for the {name} field of the {kind} layer ({codes}{more}), but {why}, so "
                f"they would change nothing. Columns: {', '.join(existing) or 'none'}. Choose the column that holds "
                f"{name} (in the column mapping), or leave out the coded values for {name}.",
                fix=Fix("map", f"{kind}.{name}", "COLUMN"),
            )
        )
    return said


# The fields whose values are codes sewerplan knows, which the coded values (``ColumnMapping.values``) may name:
# those ``_normalise_values`` reads through ``_code_column``, and connected and occupied, read as yes or no words,
# whose coded values say which of a column's own words mean yes and which no (a footprint layer's use column:
# garage=no, house=yes).
YES_NO_FIELDS = ("connected", "occupied")
CODED_FIELDS = ("sewer_type", "ownership", "status", "route_kind", "structure", "facility_type", *YES_NO_FIELDS)
# At most this many words other than yes and no in a yes/no column are offered the coded values (a use column's).
_FEW_WORDS = 12


def mapping_mistakes(mapping: ColumnMapping) -> list[str]:
    """What a column mapping says that cannot be meant, one sentence each, before any layer is read.

    A field the layer kind has not (a form from a page gone stale, or made by hand), coded values for a field whose
    values are not codes (they would change nothing, without a word), one column chosen for two fields. The page
    that made the mapping says so and keeps the upload; ``prepare_layer`` refuses a layer for the same reasons.
    """
    said = []
    for kind in sorted(set(mapping.columns) | set(mapping.values)):
        if kind not in SPECS:
            said.append(
                f"The column mapping names a {kind} layer, which sewerplan does not know; the layers it knows are "
                f"{', '.join(SPECS)}."
            )
            continue
        said += [
            text
            for text, _ in _mapping_mistakes(SPECS[kind], mapping.columns.get(kind, {}), mapping.values.get(kind, {}))
        ]
    return said


def _mapping_mistakes(
    spec: LayerSpec, columns: dict[str, str], values: dict[str, dict[str, str]]
) -> list[tuple[str, Fix | None]]:
    """``mapping_mistakes`` for one layer kind: each sentence with the field that fixes it, where one does."""
    kind = spec.kind
    known = [f.name for f in spec.fields]
    coded = [n for n in known if n in CODED_FIELDS]
    said: list[tuple[str, Fix | None]] = []
    for name in sorted(set(columns) - set(known)):
        meant = _field_called(spec, name)
        said.append(
            (
                f"The column mapping of the {kind} layer names a field {name!r}, which the {kind} layer does not "
                "have"
                + (f" ({name} is a name of its {meant} field: choose the column for {meant})" if meant else "")
                + f"; its fields are {', '.join(sorted(known))}.",
                None,
            )
        )
    for name in sorted(set(values) - set(coded)):
        meant = _field_called(spec, name) if name not in known else name
        if meant in coded:
            what = f"{name}, a name of its {meant} field: write them as {meant}.VALUE=CODE"
        elif meant:
            alias = f" (a name of its {meant} field)" if meant != name else ""
            helps = f" ({spec.field(meant).help})" if spec.field(meant).help else ""
            what = (
                f"{name}{alias}, whose values sewerplan reads as they stand{helps}, not as codes, so they would "
                "change nothing: leave them out"
            )
        else:
            what = f"{name}, which is not a field of the {kind} layer: leave them out"
        has = (
            f"Its fields with codes are {', '.join(f'{n} (yes or no)' if n in YES_NO_FIELDS else n for n in coded)}."
            if coded
            else f"The {kind} layer has no field with codes, so it takes no coded values."
        )
        said.append((f"Coded values of the {kind} layer are given for {what}. {has}", None))
    by_column: dict[str, list[str]] = {}
    for name in known:  # in the layer's own order of fields
        if columns.get(name):
            by_column.setdefault(columns[name], []).append(name)
    for column, names in by_column.items():
        if len(names) > 1:
            said.append(
                (
                    f"The column mapping chooses column {column!r} of the {kind} layer for both "
                    f"{', '.join(names[:-1])} and {names[-1]}, and a column holds one field: choose for each the "
                    "column that holds it.",
                    Fix("map", f"{kind}.{names[-1]}", "COLUMN"),
                )
            )
    return said


def _field_called(spec: LayerSpec, name: str) -> str | None:
    """The field of ``spec`` that ``name`` is another name of (``owner`` for parcels' ``owner_name``), or None."""
    lower = name.lower()
    return next((f.name for f in spec.fields if lower in (f.name, *f.aliases)), None)


def _distinct_without_case(gdf: gpd.GeoDataFrame, kind: str, known: set[str], problems: list[Problem]):
    """Columns whose names differ only in case ("Area" and "area" in Bellinge's subcatchments), the later one kept
    as ``area_2``: a GeoPackage (SQLite) holds them as one column, and refused the results and the store after the
    whole analysis had run. A field's own column keeps its name."""
    seen = {str(c).lower() for c in gdf.columns if c in known or c == gdf.geometry.name}
    renamed = {}
    for column in gdf.columns:
        if column in known or column == gdf.geometry.name:
            continue
        name, n = str(column), 1
        while name.lower() in seen:
            n += 1
            name = f"{column}_{n}"
        seen.add(name.lower())
        if name != column:
            renamed[column] = name
    if not renamed:
        return gdf
    pairs = ", ".join(f"{old} as {new}" for old, new in renamed.items())
    problems.append(
        Problem(
            kind,
            "column_case",
            "fixed",
            f"{len(renamed)} column(s) named as another but for case, which a GeoPackage holds as one column, kept "
            f"under a name of their own: {pairs}.",
            count=len(renamed),
        )
    )
    return gdf.rename(columns=renamed)


def _assign_ids(gdf: gpd.GeoDataFrame, spec: LayerSpec, problems: list[Problem]) -> gpd.GeoDataFrame:
    """Give every feature a text ID; generate ``<kind>-<n>`` for layers whose IDs are optional and absent."""
    idf = spec.id_field
    if idf in gdf.columns:
        ids = gdf[idf]
        text = _text_values(ids)
        missing = (text == "").to_numpy()  # _text_values gives '' where the value is missing
        if missing.any() and not spec.field(idf).required:
            text[missing] = generated_ids(spec.kind, np.flatnonzero(missing))
        elif missing.all():
            # Not one ID: the column read is not the IDs' (an empty column of that name, or the wrong one chosen),
            # and the column-mapping page fixes it, where the upload is kept.
            column = gdf.attrs.get("source_columns", {}).get(idf, idf)
            problems.append(
                Problem(
                    spec.kind,
                    "missing_id",
                    "error",
                    f"Every one of the {len(gdf)} features has column {column} empty: it holds no {idf} (tax map "
                    "numbers).",
                    int(missing.sum()),
                    fix=Fix("map", f"{spec.kind}.{idf}", "COLUMN"),
                )
            )
        elif missing.any():
            problems.append(
                Problem(
                    spec.kind,
                    "missing_id",
                    "error",
                    f"{int(missing.sum())} feature(s) have no {idf}; every parcel needs its tax map number.",
                    int(missing.sum()),
                    tuple(f"row {i + 1}" for i in np.flatnonzero(missing)[:50]),
                )
            )
        gdf[idf] = text.astype(object)
    else:
        gdf[idf] = generated_ids(spec.kind, np.arange(len(gdf)))
        cut = [str(c) for c in gdf.columns if _cut_from(str(c), idf)]
        if cut:  # a shapefile cut the ID column's name ("subdivisio", "subdivis_1"): the IDs may be there, unmapped
            problems.append(
                Problem(
                    spec.kind,
                    "generated_ids",
                    "warning",
                    f"No {idf} column was matched, so the {spec.kind} got IDs {spec.kind}-1, {spec.kind}-2 ...; "
                    f"{' or '.join(cut)} may hold them (a shapefile cuts column names to 10 characters): map the one "
                    f"that does to {spec.kind}.{idf}.",
                    len(gdf),
                    fix=Fix("map", f"{spec.kind}.{idf}", cut[0]),
                )
            )
    return gdf


def _cut_from(column: str, name: str) -> bool:
    """``column`` is ``name`` as a shapefile cuts it: its first 10 characters, or its first 8 and ``_1``, ``_2`` ...

    Examples
    --------
    >>> [_cut_from(c, "subdivision_id") for c in ("subdivisio", "SUBDIVIS_1", "subdivision_id", "building_u", "sub")]
    [True, True, False, False, False]
    """
    column, name = column.lower(), name.lower()
    if len(name) <= 10:
        return False
    stem, sep, number = column.rpartition("_")
    return column == name[:10] or (bool(sep) and number.isdigit() and len(stem) == 8 and name.startswith(stem))


def generated_ids(kind: str, positions: np.ndarray) -> np.ndarray:
    """IDs ``<kind>-<row number>`` (1-based) for features that have none, built as whole columns."""
    return (kind + "-" + pd.Series(positions + 1).astype(str)).to_numpy(object)


def _text_values(values: pd.Series) -> pd.Series:
    """Values as stripped text, whole numbers without ``.0`` (IDs read from numeric columns); '' where missing."""
    if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
        numbers = values.to_numpy(float, na_value=np.nan)
        whole = np.isfinite(numbers) & (numbers == np.round(numbers))
        text = np.where(whole, np.nan_to_num(numbers).astype(np.int64).astype(str), numbers.astype(str))
        return pd.Series(np.where(np.isnan(numbers), "", text), index=values.index, dtype=object)
    return values.astype("str").fillna("").str.strip().astype(object)


def _drop_missing_geometry(gdf: gpd.GeoDataFrame, spec: LayerSpec, problems: list[Problem]) -> gpd.GeoDataFrame:
    geoms = gdf.geometry.values
    missing = shapely.is_missing(geoms) | shapely.is_empty(geoms)
    return _left_out(
        gdf, missing, spec, problems, "null_geometry", "have no geometry and were left out of the analysis."
    )


def _left_out(
    gdf: gpd.GeoDataFrame, rows: np.ndarray, spec: LayerSpec, problems: list[Problem], check: str, why: str
) -> gpd.GeoDataFrame:
    """The layer without ``rows``, and a warning naming them: "<n> feature(s) <why>"."""
    if not rows.any():
        return gdf
    ids = tuple(gdf.loc[rows, spec.id_field].astype(str))
    problems.append(Problem(spec.kind, check, "warning", f"{len(ids)} feature(s) {why}", len(ids), ids))
    return gdf.loc[~rows]


def _drop_z(gdf: gpd.GeoDataFrame, spec: LayerSpec, problems: list[Problem]) -> gpd.GeoDataFrame:
    geoms = np.asarray(gdf.geometry.values)
    # One pass says which features have more than x and y (most layers: none); Z and M are told apart only there.
    more = np.flatnonzero(shapely.get_coordinate_dimension(geoms) > 2)
    has_z, has_m = np.zeros(len(geoms), bool), np.zeros(len(geoms), bool)
    has_z[more] = shapely.has_z(geoms[more])
    if hasattr(shapely, "has_m"):
        has_m[more] = shapely.has_m(geoms[more])
    if has_z.any() or has_m.any():
        gdf = gdf.set_geometry(gpd.GeoSeries(shapely.force_2d(geoms), index=gdf.index, crs=gdf.crs))
        problems.append(
            Problem(
                spec.kind,
                "z_values",
                "fixed",
                f"{int((has_z | has_m).sum())} feature(s) had Z or M values; dropped (distances "
                "are measured on the map plane).",
                int((has_z | has_m).sum()),
            )
        )
    return gdf


def _check_finite(gdf: gpd.GeoDataFrame, spec: LayerSpec, label: str, problems: list[Problem], workers: int) -> bool:
    """Refuse features with a NaN or infinite coordinate: no distance can be measured to or from them.

    GEOS treats such a vertex inconsistently (a polygon may be "repaired" around it, a line keeps it and a later
    step fails), so the layer is refused and the features are named.
    """
    geoms = np.asarray(gdf.geometry.values)
    # A NaN or infinite vertex makes a line's length or a polygon's perimeter so (GEOS's bounds skip NaN), as can
    # an absurd but finite one: only those, and points, have their coordinates looked at one by one.
    with np.errstate(all="ignore"):
        length = elementwise(_length_quietly, geoms, workers=workers)
        suspect = ~np.isfinite(length) | (shapely.get_dimensions(geoms) == 0)
    if not suspect.any():
        return True
    coords, index = shapely.get_coordinates(geoms[suspect], return_index=True)
    bad = np.zeros(len(geoms), dtype=bool)
    bad[np.flatnonzero(suspect)[index[~np.isfinite(coords).all(axis=1)]]] = True
    if not bad.any():
        return True
    rows = gdf[_ROW].to_numpy()[bad]
    problems.append(
        Problem(
            spec.kind,
            "invalid_geometry",
            "error",
            f"{label}: {int(bad.sum())} feature(s) have a vertex whose coordinates are not numbers (NaN or "
            f"infinite), in row(s) {_rows_text(rows)}; no distance can be measured to such a vertex, so fix or "
            "delete it in the source data.",
            int(bad.sum()),
            tuple(gdf.loc[bad, spec.id_field].astype(str)),
        )
    )
    return False


def _length_quietly(geoms: np.ndarray) -> np.ndarray:
    """Lengths, silent about NaN vertices (numpy's error state holds per thread, and this runs on threads)."""
    with np.errstate(all="ignore"):
        return shapely.length(geoms)


def _values_text(rows: np.ndarray, values: pd.Series, limit: int = 20) -> str:
    """``row 3 'three', row 7 '-2'`` for the first ``limit`` rows, and how many more."""
    shown = ", ".join(f"row {int(r)} {v!r}" for r, v in zip(rows[:limit], values.astype(str)[:limit], strict=True))
    return shown + (f" and {len(rows) - limit} more" if len(rows) > limit else "")


def _rows_text(rows: np.ndarray, limit: int = 20) -> str:
    shown = ", ".join(str(int(r)) for r in rows[:limit])
    return shown + (f" and {len(rows) - limit} more" if len(rows) > limit else "")


# shapely's geometry type IDs by name (``shapely.get_type_id``): types compared as small integers, not as text.
_TYPE_IDS = {name: int(member) for name, member in shapely.GeometryType.__members__.items()}


def _wrong_geometry_kinds(shapes: np.ndarray, spec: LayerSpec, label: str) -> list[Problem]:
    """The geometry-type refusal of a layer whose columns could not be read yet (no IDs to name its features)."""
    found = _geometry_type_problem(shapes, spec, label)
    return [found] if found is not None else []


def _check_geometry_types(gdf: gpd.GeoDataFrame, spec: LayerSpec, label: str, problems: list[Problem]) -> bool:
    found = _geometry_type_problem(np.asarray(gdf.geometry.values), spec, label, gdf[spec.id_field])
    if found is not None:
        problems.append(found)
    return found is None


def _geometry_type_problem(
    shapes: np.ndarray, spec: LayerSpec, label: str, ids: pd.Series | None = None
) -> Problem | None:
    """The refusal of a layer holding features of a kind it may not ("... must hold Polygon or MultiPolygon
    features ... but has 493 LineString"), naming them by ``ids`` where the layer's IDs are read; None if none."""
    wrong = ~np.isin(shapely.get_type_id(shapes), _allowed(spec)) & ~shapely.is_missing(shapes)
    if not wrong.any():
        return None
    counts = gpd.GeoSeries(shapes[wrong]).geom_type.value_counts().to_dict()
    named = tuple(ids[wrong].astype(str)) if ids is not None else ()
    return Problem(
        spec.kind,
        "geometry_type",
        "error",
        f"{label} must hold {' or '.join(spec.geometry)} features ({spec.help}) but has "
        + ", ".join(f"{n} {t}" for t, n in counts.items())
        + ".",
        int(wrong.sum()),
        named,
    )


def _repair_invalid(
    gdf: gpd.GeoDataFrame, spec: LayerSpec, problems: list[Problem], fpu: float, workers: int
) -> gpd.GeoDataFrame:
    geoms = np.asarray(gdf.geometry.values)
    # GEOS's validity check is the costliest check of a large layer: convex polygons are proved valid in numpy
    # first (layers/validity.py), and GEOS judges the rest, without the GIL, in chunks.
    invalid = ~is_valid(geoms, workers=workers)
    if not invalid.any():
        return gdf
    before = shapely.area(geoms[invalid])
    fixed = shapely.make_valid(geoms[invalid], method="structure", keep_collapsed=False)
    if spec.geometry[0] in ("Polygon", "LineString"):
        fixed = _keep_family(fixed, spec.geometry)
    after = shapely.area(fixed)
    geoms = geoms.copy()
    geoms[invalid] = fixed
    # A sliver of no area, or a ring of fewer than three distinct points, repairs to no polygon at all: kept, it
    # would be measured as if it stood nowhere (a parcel "with no public sewer" beside a main). A main emptied so
    # stays: the network reports it as a main of no length, with the manhole it names.
    collapsed = np.zeros(len(geoms), bool)
    if spec.geometry[0] == "Polygon":
        collapsed[np.flatnonzero(invalid)] = shapely.is_empty(fixed) | shapely.is_missing(fixed)
    repaired = invalid & ~collapsed
    if repaired.any():
        ids = tuple(gdf.loc[repaired, spec.id_field].astype(str))
        change = float(np.abs(after - before)[~collapsed[invalid]].sum()) * fpu * fpu
        problems.append(
            Problem(
                spec.kind,
                "invalid_geometry",
                "fixed",
                f"{len(ids)} invalid geometr{'y' if len(ids) == 1 else 'ies'} repaired with make_valid; "
                f"area changed by {change:,.1f} sq ft in all.",
                len(ids),
                ids,
            )
        )
    gdf = gdf.set_geometry(gpd.GeoSeries(geoms, index=gdf.index, crs=gdf.crs))
    return _left_out(
        gdf,
        collapsed,
        spec,
        problems,
        "collapsed_geometry",
        "are invalid and have no area left once repaired (a sliver of no area, or a ring of fewer than three "
        "distinct points), so they were left out of the analysis; redraw them in the GIS.",
    )


def _keep_family(geoms: np.ndarray, family: tuple[str, ...]) -> np.ndarray:
    """Keep only the polygonal (or linear) parts of repaired geometries, which make_valid may return mixed."""
    dim = 2 if "Polygon" in family else 1
    parts, index = shapely.get_parts(geoms, return_index=True)
    keep = shapely.get_dimensions(parts) == dim
    out = shapely.multipolygons if dim == 2 else shapely.multilinestrings
    collected = out(parts[keep], indices=index[keep]) if keep.any() else np.array([], dtype=object)
    result = np.empty(len(geoms), dtype=object)
    result[:] = shapely.from_wkt("POLYGON EMPTY" if dim == 2 else "LINESTRING EMPTY")
    result[distinct(index[keep])] = collected
    single = shapely.get_num_geometries(result) == 1
    result[single] = shapely.get_geometry(result[single], 0)
    return result


def _check_duplicate_ids(gdf: gpd.GeoDataFrame, spec: LayerSpec, label: str, problems: list[Problem]) -> bool:
    ids = gdf[spec.id_field]
    if ids.is_unique:  # one hash of the IDs, half the cost of marking every repeat (0.2 s per million)
        return True
    dup = ids.duplicated(keep=False)
    dups = tuple(sorted(ids[dup].unique()))
    if spec.field(spec.id_field).required:
        dups = tuple(d for d in dups if d != "")  # features without an ID: told already, as missing
        if not dups:
            return False
        if len(dups) == 1 and dup.all() and len(ids) > 2:
            # One ID for every parcel: the column read is not the tax map number (a town or SWIS code, say).
            column = gdf.attrs.get("source_columns", {}).get(spec.id_field, spec.id_field)
            problems.append(
                Problem(
                    spec.kind,
                    "duplicate_id",
                    "error",
                    f"Every one of the {len(ids)} features of {label} has {spec.id_field} {dups[0]!r} (column "
                    f"{column}): it is not the tax map number.",
                    1,
                    dups,
                    fix=Fix("map", f"{spec.kind}.{spec.id_field}", "COLUMN"),
                )
            )
            return False
        problems.append(
            Problem(
                spec.kind,
                "duplicate_id",
                "error",
                f"{label} has {len(dups)} {spec.id_field} value(s) used by more than one feature; "
                "each parcel must appear once (merge the parts into one multipolygon).",
                len(dups),
                dups,
                fix=_picked_fix(gdf, spec, spec.id_field),
            )
        )
        return False
    # Optional IDs (mains, manholes ...) are made unique so reports can still name every feature.
    seq = ids.groupby(ids).cumcount()
    gdf.loc[dup, spec.id_field] = ids[dup] + np.where(seq[dup] > 0, "#" + (seq[dup] + 1).astype(str), "")
    problems.append(
        Problem(
            spec.kind,
            "duplicate_id",
            "warning",
            f"{len(dups)} {spec.id_field} value(s) repeat; repeats were suffixed #2, #3 ...",
            len(dups),
            dups,
        )
    )
    return True


def _normalise_values(
    gdf: gpd.GeoDataFrame,
    spec: LayerSpec,
    label: str,
    value_maps: dict[str, dict[str, str]],
    problems: list[Problem],
) -> bool:
    ok = True
    vocab = {
        "sewer_type": SEWER_TYPE_VALUES,
        "ownership": OWNERSHIP_VALUES,
        "status": STATUS_VALUES,
        "route_kind": ROUTE_KIND_VALUES,
    }
    for name, table in vocab.items():
        if name not in gdf.columns or spec.kind not in ("mains", "manholes", "alleys"):
            continue
        ok &= _code_column(gdf, spec, name, table, value_maps.get(name, {}), label, problems)
    for name in YES_NO_FIELDS:
        if name in gdf.columns:
            ok &= _bool_column(gdf, spec, name, label, value_maps.get(name, {}), problems)
    for f in spec.fields:
        if f.number and f.name in gdf.columns:
            ok &= _number_column(gdf, spec, f.name, label, problems)
        elif f.name in gdf.columns:
            # A tax roll's ZIP codes given as numbers (a DBF, a GeoPackage's Integer64): 501 is read as the text
            # 00501 every written store holds, so a layer analysed in place mails as a copy of it does.
            gdf[f.name] = zip_text(f.name, gdf[f.name])
    ok &= _network_codes(gdf, spec, label, value_maps, problems)
    return ok


def _network_codes(
    gdf: gpd.GeoDataFrame,
    spec: LayerSpec,
    label: str,
    value_maps: dict[str, dict[str, str]],
    problems: list[Problem],
) -> bool:
    """What a manhole-layer point is (``structure``) and what a plant-layer point is (``facility_type``).

    Unknown values are errors, as for the mains' codes: a cleanout taken for a manhole names the wrong control
    manhole, an industrial discharger taken for the plant drains the town to itself.
    """
    ok = True
    for kind, name, table in (
        ("manholes", "structure", STRUCTURE_VALUES),
        ("outfalls", "facility_type", FACILITY_TYPE_VALUES),
    ):
        if spec.kind == kind and name in gdf.columns:
            ok &= _code_column(gdf, spec, name, table, value_maps.get(name, {}), label, problems)
    return ok


def _number_column(gdf: gpd.GeoDataFrame, spec: LayerSpec, name: str, label: str, problems: list[Problem]) -> bool:
    """Parse a number field; refuse text that is not a number (``'three'``), naming each value and its row.

    Blank cells and the usual words for "not known" (``n/a``, ``unknown`` ...) become missing values, which the
    analysis treats as unknown and says so. Thousands separators (``1,200``) are read as such. Per the field's
    spec, a negative count, a fraction of a whole count (2.5 living units) and a value above its ``at_most``
    (1e15 living units) are refused the same way: each would be carried into flows and building-sewer counts.
    """
    raw = gdf[name]
    if pd.api.types.is_numeric_dtype(raw):  # numbers already (shapefile, GeoPackage): infinity is not a number
        numbers = text = raw
        bad = np.isinf(raw.to_numpy(float, na_value=np.nan)) if raw.dtype.kind == "f" else np.zeros(len(raw), bool)
    else:
        text = raw.astype(object).where(raw.notna(), "").astype(str).str.strip()
        blank = text.str.lower().isin(UNKNOWN_NUMBER_VALUES)
        plain = text.str.replace(r"(?<=\d),(?=\d{3}(?:\D|$))", "", regex=True)
        numbers = pd.to_numeric(plain.where(~blank), errors="coerce").astype(float)
        bad = (~blank & ~np.isfinite(numbers)).to_numpy()
    field = spec.field(name)
    values = numbers.to_numpy(float, na_value=np.nan)
    negative = fraction = too_large = np.zeros(len(raw), bool)
    with np.errstate(invalid="ignore"):
        if field.counted:
            negative = (values < 0) & ~bad
        if field.whole:
            fraction = np.isfinite(values) & (values != np.round(values)) & ~bad & ~negative
        if field.at_most is not None:
            too_large = (values > field.at_most) & ~bad & ~negative & ~fraction
    for rows, check, what in (
        (
            bad,
            "not_a_number",
            "should hold numbers but has something else in {count} row(s): {shown}. Write each "
            "as a number (e.g. 3), or leave the cell empty where the value is not known.",
        ),
        (
            negative,
            "negative_number",
            "counts or measures something and cannot be negative, but is in {count} "
            "row(s): {shown}. Correct each, or leave the cell empty where the value is not known.",
        ),
        (
            fraction,
            "not_whole_number",
            "counts whole things but has a fraction in {count} row(s): {shown}. Write each as a whole "
            "number (e.g. 2), or leave the cell empty where the value is not known.",
        ),
        (
            too_large,
            "implausible_number",
            f"holds more than {field.at_most or 0:,.0f}, more than one feature holds in any town (a typo?), in "
            "{count} row(s): {shown}. Correct each, or leave the cell empty where the value is not known.",
        ),
    ):
        if rows.any():
            problems.append(
                Problem(
                    spec.kind,
                    check,
                    "error",
                    f"{label}: column {_column_label(gdf, name)} "
                    + what.format(count=int(rows.sum()), shown=_values_text(gdf[_ROW].to_numpy()[rows], text[rows])),
                    int(rows.sum()),
                    tuple(gdf.loc[rows, spec.id_field].astype(str)),
                    fix=_picked_fix(gdf, spec, name),
                )
            )
    if bad.any() or negative.any() or fraction.any() or too_large.any():
        return False
    gdf[name] = numbers
    return True


def _code_column(
    gdf: gpd.GeoDataFrame,
    spec: LayerSpec,
    name: str,
    table: dict[str, str],
    user: dict[str, str],
    label: str,
    problems: list[Problem],
) -> bool:
    raw = gdf[name]
    text = raw.astype(object).where(raw.notna(), "").astype(str).str.strip()
    allowed = sorted(set(table.values()))
    column = _column_label(gdf, name)
    # The user's code is read as the column's own values are ("Sanitary", "gravity" are sanitary): a code that is
    # none of sewerplan's ("sanitry") was written as it was typed, and every main it named was taken for a storm sewer.
    said = {str(k).strip().lower(): str(v).strip().lower() for k, v in user.items()}
    user_lower = {k: _code_of(v, table, allowed) for k, v in said.items()}
    wrong = [(k, v) for k, v in user.items() if user_lower[str(k).strip().lower()] is None]
    if wrong:
        value, code = wrong[0]
        problems.append(
            Problem(
                spec.kind,
                "unknown_value",
                "error",
                f"{label}: the coded values say {value!r} in column {column} means {code!r}, which is not a code "
                f"sewerplan knows; say which of {', '.join(allowed)} it means"
                + (f" (and for {', '.join(repr(k) for k, _ in wrong[1:20])})." if len(wrong) > 1 else "."),
                len(wrong),
                tuple(str(k) for k, _ in wrong[:50]),
                fix=Fix("map_value", f"{spec.kind}.{name}.{value}", "CODE", tuple(allowed)),
            )
        )
        return False
    lower = text.str.lower()
    # Each distinct value is looked up once (a layer of 100,000 mains has a handful of codes), then spread back.
    codes, distinct = pd.factorize(lower)
    _unused_codes(spec, name, column, label, said, distinct, problems)
    looked_up = np.array([user_lower.get(v, _code_of(v, table, allowed)) for v in distinct] + [None], dtype=object)
    mapped = pd.Series(looked_up[codes], index=text.index, dtype=object)
    if name == "ownership":
        # Free text such as "Village of Fort Plain" or "Private - Smith": look for the telling word.
        loose = lower.str.contains(r"\b(?:village|town|city|county|district|municipal|public)\b", regex=True)
        mapped = mapped.where(mapped.notna() | ~loose, "public")
        mapped = mapped.where(mapped.notna() | ~lower.str.contains("private"), "private")
    blank = lower == ""
    unknown = mapped.isna() & ~blank
    if unknown.any():
        values = sorted(text[unknown].unique())
        problems.append(
            Problem(
                spec.kind,
                "unknown_value",
                "error",
                f"{label}: column {column} has value(s) sewerplan does not know: "
                f"{', '.join(repr(v) for v in values[:20])}; say which of {', '.join(allowed)} each one means.",
                int(unknown.sum()),
                tuple(values[:50]),
                fix=Fix("map_value", f"{spec.kind}.{name}.{values[0]}", "CODE", tuple(allowed)),
            )
        )
        return False
    if spec.kind == "mains" and name in _KEPT_AS_GIVEN and f"{name}_as_given" not in gdf.columns:
        # The layer's own word beside the code: the code is for the logic (an abandoned main is left out), the word
        # for what a planner reads. A plan's crossing of a main the layer calls "Existing" said "(storm, active)".
        # A layer read again after it was written with this column keeps the words it had.
        gdf[f"{name}_as_given"] = text.where(~blank, None).astype(object)
    gdf[name] = mapped.where(~blank, None).astype(object)
    return True


def _unused_codes(
    spec: LayerSpec, name: str, column: str, label: str, said: dict[str, str], distinct, problems: list[Problem]
) -> None:
    """Warn of coded values naming a word the column never holds: ``garage=no`` on a layer whose use column says
    "Garage " or has no garages changed nothing and said nothing (a tester). A warning: a town's mapping file may
    well list words another year's layer lacks."""
    held = {str(v) for v in distinct}
    unused = sorted(k for k in said if k not in held)
    if not unused:
        return
    shown = ", ".join(repr(v) for v in sorted(held - {""})[:12])
    problems.append(
        Problem(
            spec.kind,
            "unused_value",
            "warning",
            f"{label}: the coded values of {name} name {', '.join(repr(v) for v in unused[:12])}, which column "
            f"{column} never holds, so they change nothing; check their spelling (its values: {shown or 'none'}).",
            len(unused),
            tuple(unused[:50]),
        )
    )


def _code_of(text: str, table: dict[str, str], codes: list[str]) -> str | None:
    """The code ``text`` (lower case) says: a code itself (``pump_station``, which no synonym spells so), else the
    code of the synonym it is (``lift station``), else None."""
    return text if text in codes else table.get(text)


# C0 and C1 control characters (and DEL) but tab, LF and CR, which are spacing: every mailing field prints a tab or
# a line break as one space.
_CONTROL = "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]"
_NAMED = 5  # how many parcels a warning names before "and N more"


def _control_characters(gdf: gpd.GeoDataFrame, spec: LayerSpec, label: str, problems: list[Problem]) -> None:
    """Warn of control characters in the fields a letter prints, naming the column, the first parcels and how many.

    A warning, not an error: distances, statuses and the mandate never read these fields, so refusing the parcels
    would stop a whole town's analysis over one cell. But a letter must not go out wrong: GDAL cuts text at a NUL
    when the store is written ('A\\x00NUL' kept as "A", and the letter addressed to "A" with nothing to see), so each
    NUL becomes U+FFFD here, which the notices hold back as unreadable; the other control characters reach the store
    as they are and the notices hold those letters back too. Either way the clerk cleans the cell in the source.
    Whole columns at a time (pandas string operations), never a loop over rows.
    """
    for name in LETTER_FIELDS:
        if name not in gdf.columns:
            continue
        raw = gdf[name]
        if isinstance(raw.dtype, pd.StringDtype):  # text already (Arrow): searched as it is, no copy made per cell
            bad = raw.str.contains(_CONTROL, regex=True, na=False).to_numpy(bool)
            if not bad.any():
                continue
        text = raw.astype(object).where(raw.notna(), "").astype(str)
        bad = text.str.contains(_CONTROL, regex=True).to_numpy(bool)
        if not bad.any():
            continue
        found = text[bad].str.findall(_CONTROL).explode().unique()
        codes = " ".join(f"U+{ord(c):04X}" for c in sorted(found))
        ids = gdf.loc[bad, spec.id_field].astype(str).to_numpy()
        shown = ", ".join(ids[:_NAMED]) + (f" and {len(ids) - _NAMED} more" if len(ids) > _NAMED else "")
        cut = "\x00" in found
        problems.append(
            Problem(
                spec.kind,
                "control_characters",
                "warning",
                f"{label}: column {_column_label(gdf, name)} holds control characters ({codes}) in "
                f"{_counted(len(ids), spec.kind)}: {shown}. A letter cannot print them"
                + (
                    ", and a NUL (U+0000) would cut the text where it stands when the store is written (kept as "
                    "U+FFFD, so the letter is not addressed to what comes before it)"
                    if cut
                    else ""
                )
                + ". The analysis is not affected, but these parcels' letters are held back: clean the cell in the "
                "source (delete the character) and load the layer again.",
                len(ids),
                tuple(ids[:50]),
            )
        )
        if cut:
            has_nul = bad & text.str.contains("\x00", regex=False).to_numpy(bool)
            gdf.loc[has_nul, name] = text[has_nul].str.replace("\x00", UNREADABLE, regex=False)


def _zero_flows(gdf: gpd.GeoDataFrame, spec: LayerSpec, label: str, problems: list[Problem]) -> None:
    """Warn of parcels the layer itself marks occupied (its occupied column) or gives living units, whose flow_gpd
    is 0, naming the first few and how many.

    A 0 is taken as given (``analysis.flows``): such a parcel sends nothing, and the system's flow comes out smaller,
    every other user's share of it larger (a review or a significant user judged by its share). A house's meter cell
    filled with 0 for "not read" is far likelier than an occupied house sending nothing, so the user is told to leave
    the cell empty where the flow is not known (its living units are used then, else its flow is not known, which
    the duties bound rather than count as nothing). A warning, not a refusal: a lot can truly send nothing. Only
    what this layer says is judged: a lot found occupied by its buildings or its property class is known so only
    after the analysis, and is warned of then (``analysis.flows.zero_flows_found_occupied``; docs/layers.md).
    """
    if spec.kind != "parcels" or "flow_gpd" not in gdf.columns:
        return
    zero = pd.to_numeric(gdf["flow_gpd"], errors="coerce").to_numpy(float) == 0
    if not zero.any():
        return
    none = np.zeros(len(gdf), bool)
    occupied = gdf["occupied"].astype(object).eq(True).to_numpy(bool) if "occupied" in gdf.columns else none
    units = pd.to_numeric(gdf["units"], errors="coerce").to_numpy(float) > 0 if "units" in gdf.columns else none
    said = zero & (occupied | units)
    if not said.any():
        return
    ids = gdf.loc[said, spec.id_field].astype(str).to_numpy()
    shown = ", ".join(ids[:_NAMED]) + (f" and {len(ids) - _NAMED:,} more" if len(ids) > _NAMED else "")
    problems.append(
        Problem(
            spec.kind,
            "zero_flow",
            "warning",
            f"{label}: column {_column_label(gdf, 'flow_gpd')} is 0 for {_counted(len(ids), spec.kind)} marked "
            f"occupied or holding living units in this layer ({shown}), so each counts as sending nothing to the "
            "sewer and every other parcel's share of the system's flow comes out larger; a 0 there is most likely "
            "a flow nobody read, written as zero. Leave the cell empty where the flow is not known (the parcel's "
            "living units times the gallons per day per unit are used then, and without living units its flow is "
            "counted as not known rather than as nothing); keep 0 only where the parcel truly sends nothing.",
            len(ids),
            tuple(ids[:50]),
        )
    )


def _counted(n: int, kind: str) -> str:
    """``1 parcel``, ``1,200 parcels``: the layer's features, counted."""
    return f"{n:,} {kind.removesuffix('s') if n == 1 else kind}"


def _picked_fix(gdf: gpd.GeoDataFrame, spec: LayerSpec, name: str) -> Fix | None:
    """The mapping of ``name``, where the mapping chose its column (not the one its names find): values refused in a
    column picked by hand are as likely the wrong column's as wrong values (an owner column chosen for the units),
    and on the web the column-mapping page fixes it, the upload kept; None for a column found by its name."""
    return Fix("map", f"{spec.kind}.{name}", "COLUMN") if name in gdf.attrs.get("picked_columns", ()) else None


def _column_label(gdf: gpd.GeoDataFrame, name: str) -> str:
    source = gdf.attrs.get("source_columns", {}).get(name, name)
    return name if source == name else f"{source} ({name})"


def _bool_column(
    gdf: gpd.GeoDataFrame, spec: LayerSpec, name: str, label: str, user: dict[str, str], problems: list[Problem]
) -> bool:
    """Read a yes/no field: the usual words for yes and no, and the column's own words the coded values say mean
    yes or no (a buildings layer's use column chosen for occupied: ``garage=no``, ``house=yes``). Any other word is
    refused, naming it and how to say what it means: a garage read as occupied is told it needs a building sewer."""
    raw = gdf[name]
    said = {str(k).strip().lower(): str(v).strip().lower() for k, v in user.items()}
    wrong = [k for k, v in user.items() if said[str(k).strip().lower()] not in TRUE_VALUES | FALSE_VALUES - {""}]
    if wrong:
        problems.append(
            Problem(
                spec.kind,
                "unknown_value",
                "error",
                f"{label}: the coded values say {wrong[0]!r} in column {_column_label(gdf, name)} means "
                f"{user[wrong[0]]!r}; {name} is yes or no, so say which of the two it means"
                + (f" (and for {', '.join(repr(k) for k in wrong[1:20])})." if len(wrong) > 1 else "."),
                len(wrong),
                tuple(str(k) for k in wrong[:50]),
                fix=Fix("map_value", f"{spec.kind}.{name}.{wrong[0]}", "yes", ("yes", "no")),
            )
        )
        return False
    if pd.api.types.is_bool_dtype(raw):
        gdf[name] = raw.astype(object)
        return True
    # Each distinct value is read once (a million parcels say yes or no in a handful of ways), then spread back.
    codes, distinct = pd.factorize(raw)
    words = _text_values(pd.Series(distinct, dtype=raw.dtype)).str.lower()
    if said:  # the column's own words the coded values name (per distinct word, by one lookup)
        _unused_codes(spec, name, _column_label(gdf, name), label, said, words, problems)
        words = words.map(said).where(words.isin(said.keys()), words)
    lower = pd.Series(np.append(words.to_numpy(object), None)[codes], index=raw.index, dtype=object)
    truthy = lower.isin(TRUE_VALUES)
    falsy = lower.isin(FALSE_VALUES)
    unknown = lower.notna() & ~truthy & ~falsy
    if unknown.any():
        values = sorted(set(lower[unknown]))
        # A few words (a use column: garage, house, shed) are said in the coded values; many (owners' names, IDs)
        # are a wrong column, which the mapping, where it chose it, chooses again.
        few = len(values) <= _FEW_WORDS
        problems.append(
            Problem(
                spec.kind,
                "unknown_value",
                "error",
                f"{label}: column {_column_label(gdf, name)} should say yes or no but has "
                f"{', '.join(repr(v) for v in values[:20])}"
                + (
                    f". Say which of them mean yes and which no in the coded values of {name} ({name}.{values[0]}="
                    "yes or no), or choose a column that says yes or no."
                    if few
                    else f" (and {len(values) - 20:,} more)." * (len(values) > 20) or "."
                ),
                int(unknown.sum()),
                tuple(gdf.loc[unknown, spec.id_field].astype(str)),
                fix=Fix("map_value", f"{spec.kind}.{name}.{values[0]}", "yes", ("yes", "no"))
                if few
                else _picked_fix(gdf, spec, name),
            )
        )
        return False
    # A blank cell is "no" in a column whose no is the blank (X or yes marked, the rest left empty), but not known in
    # a column that says no in words: there it is a cell nobody filled in (a shapefile's empty text), and read as
    # "no" it made an occupied house's lot "unoccupied" by "the parcel's occupied attribute" (a helper's review).
    blank = lower == ""
    if (falsy & ~blank).any():
        falsy &= ~blank
    gdf[name] = pd.Series(np.where(truthy, True, np.where(falsy, False, None)), index=gdf.index, dtype=object)
    return True
