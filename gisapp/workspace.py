"""A workspace: the store, the layers as loaded, the profile as applied, the network, the register.

``WorkspaceSpec`` says how a workspace is made: the profile (a bundled id or a ``.toml`` file) and every value set
on it, the measuring CRS, where each layer came from and the CRS given for layers that declare none, the column
mapping, whether the mains are drawn in flow direction, the connected-parcels list and the register. Every run
records it in the store's run record (``summary["workspace"]``), so any later command or page rebuilds exactly what
the run used (``WorkspaceSpec.from_record``). ``Workspace`` is one opened: the profile as applied and the validated
layers, with the network built once, on demand, by ``gisapp.services.network``.

The same spec has one name per option everywhere (the command line's ``--set``, ``--layer``, ``--layer-crs``,
``--digitised-direction`` ...; the web form's ``set``, ``digitised_direction``; the record's keys below).
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import geopandas as gpd

from analysis.profiles import Profile
from layers.errors import LayerError, redact_url
from layers.read import Layers
from layers.store import same_store

# The record's version: a record without one (an older sewerplan's run) holds only the profile's id.
RECORD_VERSION = 1


def _pairs(value) -> tuple[tuple[str, str], ...]:
    items = value.items() if isinstance(value, dict) else (value or ())
    return tuple((str(k), v) for k, v in items)


def distinct_settings(pairs, given_as: str, fix: str) -> tuple[tuple[str, str], ...]:
    """``pairs`` (KEY, VALUE) as given, refusing a key given twice with different values.

    The command line's ``--set`` and the web form's Settings box took the last value silently, so a planner who
    changed one line and forgot the other ran with a value they did not mean. The same value twice is one value.
    ``given_as`` names where the pairs were typed ("--set", "Settings:"); ``fix`` says how to keep one.
    """
    seen: dict[str, str] = {}
    for key, value in pairs:
        if key in seen and seen[key] != value:
            raise LayerError(f"{given_as} {key} is given twice, as {seen[key]} and {value}: {fix}")
        seen.setdefault(key, value)
    return tuple(pairs)


@dataclass(frozen=True)
class WorkspaceSpec:
    """How a workspace is made; see the module docstring. Paths are absolute once ``resolved``.

    ``data`` None means the store's own layers (the run read the store it wrote into). ``mapping`` is the column
    mapping's content (``{"columns": {...}, "values": {...}}``), not the file it came from, so a rebuild does not
    depend on the file.
    """

    profile: str | None = None
    settings: tuple[tuple[str, Any], ...] = ()
    crs: str | None = None
    data: str | None = None
    layers: tuple[tuple[str, str], ...] = ()
    layer_crs: tuple[tuple[str, str], ...] = ()
    data_crs: str | None = None
    mapping: dict = field(default_factory=dict)
    digitised_direction: bool = False
    connected: str | None = None
    connected_column: str | None = None
    register: str | None = None

    @property
    def overrides(self) -> dict[str, Any]:
        """The values set on the profile, by rule key (the last one given wins, as on the command line)."""
        return dict(self.settings)

    @property
    def is_local(self) -> bool:
        """The data's coordinates are a model's own (``data_crs`` "local": a schematic SWMM model)."""
        return str(self.data_crs or "").strip().lower() == "local"

    def replace(self, **changes) -> WorkspaceSpec:
        return dataclasses.replace(self, **changes)

    def merged_over(self, recorded: WorkspaceSpec) -> WorkspaceSpec:
        """This spec (what a user gave now) over ``recorded`` (what a run used): what is given wins, the rest is
        the run's. Values set on the profile are merged key by key; a different profile drops the recorded ones."""
        same_profile = self.profile is None or self.profile == recorded.profile
        settings = dict(recorded.settings) if same_profile else {}
        settings.update(self.settings)
        layers = dict(recorded.layers) | dict(self.layers)
        layer_crs = dict(recorded.layer_crs) | dict(self.layer_crs)
        mapping = self.mapping if _has_mapping(self.mapping) else recorded.mapping
        return WorkspaceSpec(
            profile=self.profile or recorded.profile,
            settings=tuple(settings.items()),
            crs=self.crs or recorded.crs,
            data=self.data or recorded.data,
            layers=tuple(layers.items()),
            layer_crs=tuple(layer_crs.items()),
            data_crs=self.data_crs or recorded.data_crs,
            mapping=mapping,
            digitised_direction=self.digitised_direction or recorded.digitised_direction,
            connected=self.connected or recorded.connected,
            connected_column=self.connected_column or recorded.connected_column,
            register=self.register or recorded.register,
        )

    def as_record(self, *, store: str | Path | None = None) -> dict:
        """The spec as the run record keeps it (plain JSON): paths absolute, passwords masked, and ``data`` null
        when it is the store the run is written into (so the record stays true when the store is copied)."""
        data = self.data
        if data is not None and store is not None and _same_file(data, store):
            data = None
        return {
            "version": RECORD_VERSION,
            "profile": _absolute(self.profile) if _is_file(self.profile) else self.profile,
            "settings": {k: _plain(v) for k, v in self.settings},
            "crs": self.crs,
            "data": _source_text(data) if data else None,
            "layers": {k: _source_text(v) for k, v in self.layers},
            "layer_crs": dict(self.layer_crs),
            "data_crs": self.data_crs,
            "mapping": {
                "columns": dict(self.mapping.get("columns", {})),
                "values": dict(self.mapping.get("values", {})),
            },
            "digitised_direction": bool(self.digitised_direction),
            "connected": _absolute(self.connected) if self.connected else None,
            "connected_column": self.connected_column,
            "register": redact_url(self.register) if self.register and "://" in self.register else self.register,
        }

    @classmethod
    def from_record(cls, record: dict | None) -> WorkspaceSpec | None:
        """The spec a run record holds; for a run recorded before workspaces were, the profile's id alone."""
        if not record:
            return None
        saved = record.get("workspace")
        if not isinstance(saved, dict):
            profile = record.get("profile")
            return cls(profile=str(profile)) if profile else None
        mapping = saved.get("mapping") or {}
        return cls(
            profile=saved.get("profile"),
            settings=_pairs(saved.get("settings")),
            crs=saved.get("crs"),
            data=saved.get("data"),
            layers=_pairs(saved.get("layers")),
            layer_crs=_pairs(saved.get("layer_crs")),
            data_crs=saved.get("data_crs"),
            mapping={"columns": mapping.get("columns") or {}, "values": mapping.get("values") or {}},
            digitised_direction=bool(saved.get("digitised_direction")),
            connected=saved.get("connected"),
            connected_column=saved.get("connected_column"),
            register=saved.get("register"),
        )


@dataclass
class StoredRun:
    """A run's results as its store keeps them: the parcel results, measuring lines, building results, its record."""

    parcels: gpd.GeoDataFrame | None
    lines: gpd.GeoDataFrame | None = None
    buildings: gpd.GeoDataFrame | None = None
    record: dict | None = None


@dataclass
class Workspace:
    """One workspace opened: the spec, the profile as applied, the validated layers and the store (if any).

    ``stored`` holds the results the store's latest run wrote, where the workspace was rebuilt from that run (the
    web app reads them rather than analysing again). The network and each parcel's connection on it are built
    once, when first asked for, by ``gisapp.services`` (``cache``).
    """

    spec: WorkspaceSpec
    profile: Profile
    layers: Layers
    store: str | None = None
    stored: StoredRun | None = None
    # The parcel IDs of the connected-parcels list (``spec.connected``) as read, kept by a run in its store.
    connected_ids: frozenset[str] | None = None
    cache: dict = field(default_factory=dict, repr=False)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)


def _has_mapping(mapping: dict) -> bool:
    return bool(mapping and (mapping.get("columns") or mapping.get("values")))


def _is_file(text: str | None) -> bool:
    return bool(text) and str(text).lower().endswith(".toml")


def _absolute(text: str) -> str:
    return str(Path(text).expanduser().resolve())


def _same_file(a: str | Path, b: str | Path) -> bool:
    """The same store: one GeoPackage file, or one PostGIS schema (whether or not a password is masked)."""
    return same_store(a, b)


def _source_text(text: str) -> str:
    """A source as recorded: a URL with its password masked; a file (``FILE`` or ``FILE:LAYER``) made absolute."""
    text = str(text)
    if "://" in text:
        return redact_url(text)
    if Path(text).exists():
        return _absolute(text)
    path, sep, layer = text.rpartition(":")
    if sep and Path(path).exists():
        return f"{_absolute(path)}:{layer}"
    return text


def _plain(value: Any) -> Any:
    """A value set on a profile, as JSON keeps it (tuples as lists)."""
    if isinstance(value, tuple):
        return list(value)
    return value


__all__ = ["RECORD_VERSION", "StoredRun", "Workspace", "WorkspaceSpec"]
