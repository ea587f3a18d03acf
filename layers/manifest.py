"""The batch manifest: which municipalities to analyse, each with its profile, data, column mapping and settings.

A manifest is a TOML file. Every key of a municipality mirrors an option of ``sewerplan analyze``; ``[defaults]``
gives keys once for every municipality (a municipality's own value wins; ``map``, ``map_value``, ``set`` and
``layer_crs`` are merged key by key)::

    [defaults]
    data = "postgresql://gis@county/db"        # any data source, layers found by name
    filter_column = "municipality"             # only the rows whose column holds the municipality's name
    unfiltered = ["treatment_plants"]          # layers shared by every municipality, read whole
    notice_date = 2027-03-01

    [[municipality]]
    name = "Fort Plain"
    profile = "fort-plain"                     # a bundled profile, or a .toml file (relative to the manifest)

    [[municipality]]
    name = "Wappinger"
    profile = "wappinger"
    data = "wappinger/town.gpkg"               # its own data instead
    mapping = "wappinger/mapping.toml"
    set = { "mandate.distance_ft" = 200 }

Or one statewide parcels layer (and the other layers) with a layer of municipality polygons that carry each
municipality's name and profile; parcels are then assigned to municipalities by location (``layers.partition``)::

    [statewide]
    municipalities = "state/municipalities.parquet"
    name_column = "name"
    profile_column = "profile"
    margin_ft = 1000

    [defaults]
    data = "state/"                            # parcels.parquet, mains.parquet ... found by name

    [[municipality]]                           # optional: settings for some of them, by name
    name = "Wappinger"
    set = { "mandate.distance_ft" = 200 }

Relative paths are resolved against the manifest's folder, so the manifest can be moved with its data. Nothing is
read here but the manifest (and, in statewide mode, the names and profiles of the municipalities layer); each
municipality's data is read where it is analysed.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import re
import tomllib
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from analysis.dates import parse_day
from analysis.errors import AnalysisError
from layers.errors import LayerError
from layers.read import is_postgres
from layers.schema import SPECS

# Keys a municipality (or [defaults]) may hold, with the type the TOML value must have.
TOWN_KEYS: dict[str, type | tuple[type, ...]] = {
    "name": str,
    "profile": str,
    "data": str,
    **{kind: str for kind in SPECS},
    "layer_crs": dict,
    "data_crs": str,
    "crs": str,
    "mapping": str,
    "map": dict,
    "map_value": dict,
    "set": dict,
    "connected": str,
    "connected_column": str,
    "notice_date": (dt.date, str),
    "notice_reason": str,
    "digitised_direction": bool,
    "filter_column": str,
    "filter_value": (str, int),
    "unfiltered": list,
}
MERGED_KEYS = ("layer_crs", "map", "map_value", "set")
STATEWIDE_KEYS: dict[str, type | tuple[type, ...]] = {
    "municipalities": str,
    "name_column": str,
    "profile_column": str,
    "margin_ft": (int, float),
}
BATCH_KEYS: dict[str, type | tuple[type, ...]] = {"output_crs": str}
DEFAULT_MARGIN_FT = 1000.0


class ManifestError(LayerError):
    """The manifest cannot be used: every problem found, listed at once."""

    def __init__(self, path: str | Path, problems: list[str]):
        self.problems = list(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"{len(self.problems)} problem(s) in the manifest {path}:\n{lines}")


@dataclass(frozen=True)
class Statewide:
    """Where the municipality polygons are and which of their columns hold the name and the profile."""

    municipalities: str
    name_column: str = "name"
    profile_column: str = "profile"
    margin_ft: float = DEFAULT_MARGIN_FT


@dataclass
class TownSpec:
    """One municipality as the manifest gives it: plain strings and numbers, so it travels to a worker cheaply.

    Paths are absolute (resolved against the manifest's folder); ``profile`` is a bundled name or an absolute
    ``.toml`` path. ``partition`` is the path-safe name of its results folder.
    """

    name: str
    profile: str
    partition: str = ""
    data: str | None = None
    layers: dict[str, str] = field(default_factory=dict)
    layer_crs: dict[str, str] = field(default_factory=dict)
    data_crs: str | None = None
    crs: str | None = None
    mapping: str | None = None
    map: dict[str, str] = field(default_factory=dict)
    map_value: dict[str, str] = field(default_factory=dict)
    settings: dict[str, object] = field(default_factory=dict)
    connected: str | None = None
    connected_column: str | None = None
    notice_date: dt.date | None = None
    notice_reason: str | None = None
    digitised_direction: bool = False
    filter_column: str | None = None
    filter_value: str | int | None = None
    unfiltered: tuple[str, ...] = ()
    statewide: Statewide | None = None

    def fingerprint(self) -> str:
        """A digest of everything that decides this municipality's results (a resumed batch reruns on change)."""
        doc = dataclasses.asdict(self)
        return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()[:16]


@dataclass
class Manifest:
    path: str
    towns: list[TownSpec]
    statewide: Statewide | None = None
    output_crs: str | None = None


def read_manifest(path: str | Path) -> Manifest:
    """Read and check a manifest; raise ``ManifestError`` with every problem at once."""
    path = Path(path)
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise LayerError(f"The manifest {path} cannot be read: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise LayerError(f"The manifest {path} is not valid TOML: {exc}") from exc
    base = path.resolve().parent
    problems: list[str] = []
    problems += [
        f"unknown table or key {k!r} (expected [defaults], [[municipality]], [statewide], [batch])"
        for k in doc
        if k not in ("defaults", "municipality", "statewide", "batch")
    ]
    batch = _table(doc, "batch", BATCH_KEYS, problems)
    defaults = _table(doc, "defaults", TOWN_KEYS, problems)
    for key in ("name",):
        if key in defaults:
            problems.append(f"[defaults] cannot hold {key!r}: every municipality has its own")
    entries = doc.get("municipality", [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        problems.append("municipality must be an array of tables: [[municipality]] with name = ...")
        entries = []
    state = None
    if "statewide" in doc:
        raw = _table(doc, "statewide", STATEWIDE_KEYS, problems)
        if "municipalities" not in raw:
            problems.append("[statewide] needs municipalities = the layer of municipality polygons")
        else:
            state = Statewide(
                municipalities=_resolve(raw["municipalities"], base),
                name_column=raw.get("name_column", "name"),
                profile_column=raw.get("profile_column", "profile"),
                margin_ft=float(raw.get("margin_ft", DEFAULT_MARGIN_FT)),
            )
        for key in ("filter_column", "filter_value", "unfiltered"):
            if key in defaults or any(key in e for e in entries):
                problems.append(f"{key!r} has no meaning in statewide mode: municipalities are cut out by location")
        for key in ("profile", "data", *SPECS):
            named = sorted(str(e.get("name")) for e in entries if key in e)
            if named:
                where = "the municipalities layer" if key == "profile" else "[defaults] (the statewide layers)"
                problems.append(f"{', '.join(named)}: {key!r} comes from {where} in statewide mode")
    elif not entries:
        problems.append("no [[municipality]] listed (and no [statewide] layer of municipalities)")

    raw_towns: list[dict] = []
    for i, entry in enumerate(entries, 1):
        where = f"municipality #{i}" + (f" ({entry['name']})" if isinstance(entry.get("name"), str) else "")
        checked = _check_keys(entry, TOWN_KEYS, where, problems)
        if not str(checked.get("name", "")).strip():
            problems.append(f"{where}: needs name = ...")
            continue
        raw_towns.append(checked)
    names = [t["name"].strip() for t in raw_towns]
    dupes = sorted({n for n in names if names.count(n) > 1})
    problems += [f"municipality {n!r} is listed more than once" for n in dupes]

    if state is not None:
        if "profile" in defaults:
            problems.append("in statewide mode each municipality's profile comes from the municipalities layer")
        if problems:
            raise ManifestError(path, problems)
        listed = read_municipality_list(state)
        known = {n for n, _ in listed}
        problems += [f"municipality {n!r} is not in the municipalities layer" for n in names if n not in known]
        extra = {t["name"].strip(): t for t in raw_towns}
        raw_towns = [{**extra.get(name, {}), "name": name, "profile": profile} for name, profile in listed]
    towns = []
    for raw in raw_towns:
        merged = _merge(defaults, raw)
        if "profile" not in merged:
            problems.append(f"{merged['name']}: needs profile = a bundled profile name or a .toml file")
            continue
        if state is None and "data" not in merged and "parcels" not in merged:
            problems.append(
                f"{merged['name']}: needs data = ... (or its layers one by one: parcels = ..., mains = ...)"
            )
            continue
        towns.append(_town(merged, base, state, problems))
    if problems:
        raise ManifestError(path, problems)
    for town, safe in zip(towns, partition_names([t.name for t in towns]), strict=True):
        town.partition = safe
    return Manifest(str(path), towns, state, batch.get("output_crs"))


def _table(doc: dict, name: str, keys: dict, problems: list[str]) -> dict:
    raw = doc.get(name, {})
    if not isinstance(raw, dict):
        problems.append(f"[{name}] must be a table")
        return {}
    return _check_keys(raw, keys, f"[{name}]", problems)


def _check_keys(raw: dict, keys: dict, where: str, problems: list[str]) -> dict:
    out = {}
    for key, value in raw.items():
        if key not in keys:
            problems.append(f"{where}: unknown key {key!r} (known: {', '.join(keys)})")
        elif not isinstance(value, keys[key]) or isinstance(value, bool) is not (keys[key] is bool):
            problems.append(f"{where}: {key} = {value!r} has the wrong type")
        else:
            out[key] = value
    return out


def _merge(defaults: dict, town: dict) -> dict:
    merged = {**defaults, **town}
    for key in MERGED_KEYS:
        merged[key] = {**defaults.get(key, {}), **town.get(key, {})}
    return merged


def _resolve(text: str, base: Path) -> str:
    """A path relative to the manifest made absolute (``FILE:LAYER`` kept); URLs untouched."""
    if is_postgres(text):
        return text
    whole = base / text
    if not whole.exists() and ":" in text:
        path, _, layer = text.rpartition(":")
        if path and (base / path).exists():
            return f"{(base / path).resolve()}:{layer}"
    return str(whole.resolve())


def _town(raw: dict, base: Path, state: Statewide | None, problems: list[str]) -> TownSpec:
    name = raw["name"].strip()
    profile = raw["profile"]
    if profile.endswith(".toml"):
        profile = _resolve(profile, base)
    notice = raw.get("notice_date")
    if isinstance(notice, str):
        try:
            notice = parse_day(notice, "notice_date")
        except AnalysisError as exc:
            problems.append(f"{name}: {str(exc).rstrip('.')}")
            notice = None
    layer_crs = {str(k): str(v) for k, v in raw.get("layer_crs", {}).items()}
    problems += [f"{name}: layer_crs names no layer {k!r}" for k in layer_crs if k not in SPECS]
    unfiltered = tuple(str(v) for v in raw.get("unfiltered", ()))
    problems += [f"{name}: unfiltered names no layer {k!r}" for k in unfiltered if k not in SPECS]
    if "filter_value" in raw and "filter_column" not in raw:
        problems.append(f"{name}: filter_value needs filter_column (the column holding the municipality)")
    if raw.get("filter_column") and not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", raw["filter_column"]):
        problems.append(f"{name}: filter_column {raw['filter_column']!r} is not a column name (letters, digits, _)")
    for key in ("map", "map_value", "set"):
        problems += [f"{name}: {key} values must be text or numbers" for v in raw[key].values() if isinstance(v, dict)]
    return TownSpec(
        name=name,
        profile=profile,
        data=_resolve(raw["data"], base) if "data" in raw else None,
        layers={kind: _resolve(raw[kind], base) for kind in SPECS if kind in raw},
        layer_crs=layer_crs,
        data_crs=raw.get("data_crs"),
        crs=raw.get("crs"),
        mapping=_resolve(raw["mapping"], base) if "mapping" in raw else None,
        map={str(k): str(v) for k, v in raw["map"].items()},
        map_value={str(k): str(v) for k, v in raw["map_value"].items()},
        settings={str(k): v for k, v in raw["set"].items()},
        connected=_resolve(raw["connected"], base) if "connected" in raw else None,
        connected_column=raw.get("connected_column"),
        notice_date=notice,
        notice_reason=raw.get("notice_reason"),
        digitised_direction=bool(raw.get("digitised_direction", False)),
        filter_column=raw.get("filter_column"),
        filter_value=raw.get("filter_value", name) if raw.get("filter_column") else None,
        unfiltered=unfiltered,
        statewide=state,
    )


def read_municipality_list(state: Statewide) -> list[tuple[str, str]]:
    """(name, profile) of every municipality in the statewide layer, in name order; attributes only, no geometry."""
    from layers.partition import read_municipality_table

    table = read_municipality_table(state.municipalities, [state.name_column, state.profile_column])
    problems = []
    pairs: dict[str, set[str]] = {}
    for name, profile in zip(table[state.name_column], table[state.profile_column], strict=True):
        if name is None or not str(name).strip():
            problems.append("a municipality polygon has no name")
            continue
        if profile is None or not str(profile).strip():
            problems.append(f"municipality {name!r} has no profile in the layer")
            continue
        pairs.setdefault(str(name).strip(), set()).add(str(profile).strip())
    for name, profiles in pairs.items():
        if len(profiles) > 1:
            problems.append(
                f"municipality {name!r} has polygons with different profiles: {', '.join(sorted(profiles))}"
            )
    if problems:
        raise ManifestError(state.municipalities, sorted(set(problems)))
    base = Path(state.municipalities.partition(":")[0] if not is_postgres(state.municipalities) else ".").parent
    return [
        (name, _resolve(p, base) if p.endswith(".toml") else p)
        for name, (p,) in sorted((n, tuple(ps)) for n, ps in pairs.items())
    ]


_RESERVED = {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)), *(f"LPT{i}" for i in range(1, 10))}


def partition_names(names: list[str]) -> list[str]:
    """Path-safe folder names for municipalities, one per name, all different.

    Letters are folded to ASCII, anything but letters, digits, ``-`` and ``_`` becomes ``_``. Where two
    names fold to the same text (``St. Johnsville``/``St Johnsville``), where the result is empty or a name
    Windows reserves, each such name gets a short digest of its full name, so folders never collide.

    Examples
    --------
    >>> partition_names(["Fort Plain", "Poughkeepsie (T)", "Saint-Jean/Baptiste"])
    ['Fort_Plain', 'Poughkeepsie_T', 'Saint-Jean_Baptiste']
    >>> a, b = partition_names(["St. Johnsville", "St Johnsville"])
    >>> a != b and a.startswith("St_Johnsville-") and b.startswith("St_Johnsville-")
    True
    """
    folded = []
    for name in names:
        ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
        safe = re.sub(r"[^A-Za-z0-9_-]+", "_", ascii_name).strip("_-")[:80]
        folded.append(safe)
    lowered = [f.lower() for f in folded]
    out = []
    for name, safe, low in zip(names, folded, lowered, strict=True):
        if not safe or lowered.count(low) > 1 or safe.upper() in _RESERVED:
            safe = (safe or "municipality") + "-" + hashlib.sha256(name.encode()).hexdigest()[:8]
        out.append(safe)
    return out
