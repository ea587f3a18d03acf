"""What each result means and how it is drawn: one source for the web map, QGIS, PostGIS comments and the docs.

``STATUS_LEGEND`` gives each parcel status its colour and the label the web map's legend shows; the QGIS styles
(``layers.qgis_styles``) colour ``parcel_results`` from it, so QGIS and the web map agree. ``RESULT_COLUMNS`` says,
per result layer, what each column the analysis writes means (a short title and a sentence): the PostGIS store
writes them as column comments, GeoPackages carry them in ``gpkg_data_columns``, the QGIS styles use the titles
as field aliases, and docs/postgis.md lists them (tests/test_qgis.py checks that the page holds every one).
``CODED_COLUMNS`` gives the web map's words for the codes some columns hold (``rule``'s ``abutting_street`` ...):
``gisapp.words.WORDS`` takes them from here, and the QGIS styles show them in place of the codes.
Columns a result layer carries over from an input layer (owner names, addresses ...) are described by
``column_description`` from the input layer's field help in ``layers.schema``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from analysis.profiles import Profile, load_profile
from layers.schema import SPECS


@dataclass(frozen=True)
class StatusStyle:
    """How one parcel status is drawn and named: its fill colour and the legend's words for it."""

    colour: str
    label: str
    meaning: str


# In the order the web map's legend lists them (``analysis.reasons.STATUSES``), each labelled with the words the web map
# shows for it (``gisapp.words.WORDS`` takes them from here): QGIS's legend said "mandated" and "in range not
# abutting" beside a web legend saying "must connect" and "near a main, but not on its street".
STATUS_LEGEND: dict[str, StatusStyle] = {
    "connected": StatusStyle("#2b8cbe", "already connected", "already connected to the public sewer"),
    "mandated": StatusStyle(
        "#d7301f", "must connect", "must connect (occupied, abutting a sewered street, within the distance)"
    ),
    "in_range_not_abutting": StatusStyle(
        "#fc8d59",
        "near a main, but not on its street",
        "a main is within the distance, but not in a street the parcel abuts",
    ),
    "out_of_range": StatusStyle(
        "#fdcc8a", "farther than the distance", "the nearest public main is farther than the distance"
    ),
    "unoccupied": StatusStyle("#bdbdbd", "no occupied building", "no building used for occupancy on the parcel"),
    "no_public_sewer": StatusStyle("#756bb1", "no public sewer", "no public sanitary main in the data"),
}
STATUS_COLOURS = {status: style.colour for status, style in STATUS_LEGEND.items()}
# The web map's words for the codes the result columns hold (``gisapp.words.WORDS`` takes them from here, as it takes
# the statuses' from ``STATUS_LEGEND``). The QGIS styles show them in place of the codes in the attribute table, the
# form and the Identify panel (a ValueMap widget, ``CODED_COLUMNS``), keeping the codes as the values stored: QGIS
# showed "mandated" and "abutting_street" where the web popup says "must connect" and "the main is not in a street
# the parcel abuts".
STATUS_WORDS = {status: style.label for status, style in STATUS_LEGEND.items()}
# the rule that decided (``analysis.reasons``; the rule of no_public_sewer is the status's own code)
RULE_WORDS = {
    "connection_required": "connection required",
    "already_connected": "already connected",
    "occupancy": "no occupied building",
    "distance": "farther than the distance",
    "abutting_street": "the main is not in a street the parcel abuts",
    "no_public_sewer": STATUS_WORDS["no_public_sewer"],
}
# grease interceptors and industrial users (``analysis.discharges.GREASE``, ``INDUSTRIAL``)
GREASE_WORDS = {"required": "required", "for_decision": "for the town's engineer or superintendent to decide"}
INDUSTRIAL_WORDS = {
    "significant": "a significant industrial user",
    "possibly_significant": "possibly a significant industrial user: for review",
    "review": "for engineering review",
    "possibly_review": "possibly for engineering review (its share of the system's flow is not known)",
    "flow_unknown": "flow not known: cannot be told",
}
# subdivisions (``analysis.subdivisions.VERDICTS``)
SUBDIVISION_WORDS = {
    "must_build_sewers": "must build sewers",
    "private_until_available": "private systems until the public sewer is available",
    "not_required": "not required",
    "unknown": "cannot be told from the data",
    "no_rule": "the town's law sets no rule",
}
# rear buildings (``analysis.buildings.VERDICTS``)
SHARED_LATERAL_WORDS = {
    "may_share_if_no_route": "may share the front building's sewer if no other route exists",
    "separate_required": "needs its own building sewer",
    "main_extension_required": "needs a main extended to it",
}
# notice reasons (``analysis.reasons.NOTICE_REASONS``: Poughkeepsie's § 168-22.2G)
NOTICE_REASON_WORDS = {"public_health_hazard": "public health hazard", "highway_improvement": "highway improvement"}
# Per result layer, each coded column and the words for its codes.
CODED_COLUMNS: dict[str, dict[str, dict[str, str]]] = {
    "parcel_results": {
        "status": STATUS_WORDS,
        "rule": RULE_WORDS,
        "grease_interceptor": GREASE_WORDS,
        "industrial_user": INDUSTRIAL_WORDS,
        "subdivision_duty": SUBDIVISION_WORDS,
        "notice_reason": NOTICE_REASON_WORDS,
    },
    "measuring_lines": {"status": STATUS_WORDS},
    "connection_points": {"status": STATUS_WORDS},
    "building_results": {"shared_lateral": SHARED_LATERAL_WORDS},
}
# A status only one test of the mandate gives, and that test's rule (under [mandate]): a profile that switches the
# test off never gives the status.
STATUS_TESTS = {"in_range_not_abutting": "requires_abutting_street", "unoccupied": "requires_occupied_building"}


def legend_statuses(
    profile: Profile | None, statuses: Iterable[str] = tuple(STATUS_LEGEND), *, counts: Mapping[str, int] | None = None
) -> list[str]:
    """The statuses a legend lists for results under ``profile`` (as the run applied it): those it can give, in the
    order of ``statuses``.

    Wappinger's § 196-17E does not tie the duty to abutting a street, so no parcel is ever in range but not
    abutting: a legend listing "near a main, but not on its street" (0 of them) told a board the test was made.
    A status some parcel has (``counts``) is listed whatever the profile, so no colour on the map goes unexplained;
    without a profile (a run whose profile file cannot be read now) every status is.

    Examples
    --------
    >>> from analysis.profiles import load_profile
    >>> legend_statuses(load_profile("wappinger"))
    ['connected', 'mandated', 'out_of_range', 'unoccupied', 'no_public_sewer']
    >>> "in_range_not_abutting" in legend_statuses(load_profile("fort-plain"))
    True
    """
    given = counts or {}

    def can_give(status: str) -> bool:
        test = STATUS_TESTS.get(status)
        return profile is None or test is None or bool(getattr(profile.mandate, test).value) or bool(given.get(status))

    return [s for s in statuses if can_give(s)]


def recorded_profile(run: Mapping | None) -> Profile | None:
    """The profile a run record says the run applied, with the values set on it (its workspace's ``profile`` and
    ``settings``; a run recorded before runs kept their workspace, its ``profile``), for ``legend_statuses``. None
    for no record, or where the profile cannot be read now (its file moved): every status is then listed.

    Examples
    --------
    >>> recorded_profile({"workspace": {"profile": "wappinger", "settings": {"mandate.distance_ft": 100}}}).id
    'wappinger'
    >>> recorded_profile({"profile": "a-file-since-moved.toml"}) is None, recorded_profile(None) is None
    (True, True)
    """
    saved = (run or {}).get("workspace")
    name = saved.get("profile") if isinstance(saved, Mapping) else (run or {}).get("profile")
    if not name:
        return None
    settings = saved.get("settings") if isinstance(saved, Mapping) else None
    try:
        return load_profile(str(name), overrides=dict(settings or {}) or None)
    except ValueError:  # ProfileError: a profile file since moved, a value it no longer takes
        return None


@dataclass(frozen=True)
class Column:
    """One result column: a short title (QGIS shows it as the field's alias) and what it means."""

    title: str
    description: str


_PARCEL_RESULTS = {
    "status": Column(
        "Status",
        "The parcel's status under the connection mandate: mandated, in_range_not_abutting, out_of_range, "
        "connected, unoccupied or no_public_sewer.",
    ),
    "distance_ft": Column(
        "Distance to main (ft)",
        "Shortest distance in feet from the property line to the sewer main that decides (measured in the "
        "measuring CRS); 0 where the main crosses the parcel.",
    ),
    "boundary_distance_ft": Column(
        "Distance from boundary (ft)",
        "The same distance measured from the parcel boundary, kept where the profile measures from the curbline "
        "or a sewer right-of-way edge.",
    ),
    "measured_from": Column(
        "Measured from",
        "What the distance was measured from: parcel boundary, curbline or sewer right-of-way edge.",
    ),
    "main_id": Column("Main", "The sewer main the distance is measured to (the main that decides the status)."),
    "abuts_sewered_street": Column(
        "Abuts a sewered street",
        "True where the parcel abuts a street right-of-way in which a counting sewer main runs; empty without a "
        "streets layer.",
    ),
    "occupied": Column("Occupied", "True where the parcel has a building used for human occupancy."),
    "occupied_source": Column(
        "Occupancy from",
        "What decided occupancy: the occupied attribute, the buildings layer, the property class, or none.",
    ),
    "connected_flag": Column(
        "Connected (as read)",
        "True where the parcel is already connected, from its connected attribute or the connected-parcels list.",
    ),
    "rule": Column("Rule", "The profile rule that decided the status."),
    "section": Column("Section", "The ordinance section that decided the status."),
    "reason": Column(
        "Reason",
        "One sentence a clerk can read out: the main, the street it lies in, the measured distance and the law.",
    ),
    "deadline": Column(
        "Deadline", "The date by which a mandated parcel must connect (given a notice date); empty otherwise."
    ),
    "notice_reason": Column(
        "Notice reason", "Why notice is given, where the profile requires a reason (Poughkeepsie)."
    ),
    "street_name_main": Column("Street of the main", "The street the deciding main lies in."),
    "connection_x": Column(
        "Connection point x",
        "Easting of the point on the main the distance is measured to, in the measuring CRS that connection_crs "
        "names (not the file's geometry CRS where it differs: a GeoJSON's is degrees).",
    ),
    "connection_y": Column(
        "Connection point y",
        "Northing of the point on the main the distance is measured to, in the measuring CRS that connection_crs "
        "names.",
    ),
    "connection_crs": Column(
        "Connection point CRS", "The CRS connection_x and connection_y are in: the run's measuring CRS (EPSG:2260)."
    ),
    "control_manhole": Column(
        "Control manhole",
        "The parcel's control manhole: the one specially required for it, else the nearest manhole downstream of "
        "its connection point.",
    ),
    "downstream_length_ft": Column(
        "Length to the outfall (ft)", "Length in feet along the sewer from the connection point to the outfall."
    ),
    "outfall_id": Column("Outfall", "The treatment plant or outfall the parcel's sewage reaches."),
    "network_problem": Column(
        "Network problem", "Why the parcel could not be traced to an outfall (empty where it could)."
    ),
    "discharge_gpd": Column(
        "Average flow (gpd)", "The parcel's average daily flow in gallons per day (given, else from living units)."
    ),
    "discharge_source": Column("Flow from", "Where the flow came from: flow_gpd (given) or living units."),
    "flow_share_pct": Column(
        "Share of system flow (%)", "The parcel's flow as a percentage of the system's average daily flow."
    ),
    "grease_interceptor": Column(
        "Grease interceptor", "required, or for_decision (the engineer or superintendent decides); empty otherwise."
    ),
    "industrial_user": Column(
        "Industrial user",
        "significant, possibly_significant (more than the law's share of the flow known, the system's flow not being "
        "known: for review), review (subject to review and approval), possibly_review (more than the review's share "
        "of the flow known, the system's flow not being known) or flow_unknown for an industrial parcel without a "
        "flow; empty otherwise.",
    ),
    "in_subdivision": Column("Subdivision", "The proposed subdivision the parcel lies in."),
    "subdivision_duty": Column(
        "Subdivision duty",
        "The subdivision's sewer duty: must_build_sewers, private_until_available, not_required, unknown or no_rule.",
    ),
    "duties": Column("Further duties", "One sentence per duty beyond connecting (grease, industrial, subdivision)."),
    "duties_section": Column("Their sections", "The ordinance sections of the further duties."),
}
_EVIDENCE = {
    "parcel_id": Column("Parcel", "The parcel the measurement belongs to."),
    "main_id": Column("Main", "The sewer main measured to."),
    "distance_ft": Column("Distance (ft)", "The measured distance in feet (the parcel's distance_ft)."),
    "status": Column("Status", "The parcel's status."),
}
_BUILDING_RESULTS = {
    "parcel_id": Column("Parcel", "The parcel the building stands on (empty where it stands on none)."),
    "units_source": Column(
        "Units from", "Where the living units came from: the building, its parcel, or the property class."
    ),
    "units_unknown": Column(
        "Units unknown", "True where no count of living units is known, so no number of building sewers is set."
    ),
    "rear_building": Column("Rear building", "True for a building at the rear of another on its lot."),
    "front_building_id": Column("Front building", "The building in front of a rear building."),
    "lot_type": Column(
        "Lot type", "The lot of a parcel with several buildings: interior (one street), corner or through."
    ),
    "shared_lateral": Column(
        "Shared building sewer",
        "For a rear building: may_share_if_no_route, separate_required or main_extension_required.",
    ),
    "required_laterals": Column(
        "Building sewers required",
        "How many building sewers (laterals) the building needs for its living units; for a rear building that may "
        "share the front building's, how many it adds to the two buildings' shared whole.",
    ),
    "existing_laterals": Column(
        "Building sewers mapped", "The laterals mapped at the building (empty without a laterals layer)."
    ),
    "lateral_shortfall": Column(
        "Building sewers missing",
        "Required minus mapped building sewers (empty for a rear building that may share: judged with the whole).",
    ),
    "manhole_connection_case": Column(
        "Manhole connection case",
        "True for a building whose connection through a manhole the administrative body is to determine.",
    ),
    "lateral_diameter_in": Column("Smallest lateral (in)", "The diameter of the building's smallest lateral."),
    "lateral_slope_in_per_ft": Column(
        "Flattest lateral slope (in/ft)", "The slope of the building's flattest lateral, in inches per foot."
    ),
    "lateral_below_standard": Column(
        "Lateral below standard", "True where a lateral is smaller or flatter than the ordinance allows."
    ),
    "section": Column("Section", "The ordinance section of the building's finding."),
    "reason": Column("Reason", "One sentence saying what the building needs and why."),
    "qualifies": Column("Counts as occupied", "True for a building that counts (used for occupancy, on a parcel)."),
}
_RUNS = {
    "id": Column("Run", "The run's number in this store."),
    "run_at": Column("Run at", "When the run was written."),
    "summary": Column(
        "Summary",
        "The run's summary as JSON: profile and version, counts per status, the workspace it used (profile, values "
        "set on it, layers, CRS, mapping).",
    ),
}

_MAIN_CROSSINGS = {
    "main_id": Column("Existing main", "The existing main the proposed main meets here."),
    "sewer_type": Column("Type", "The existing main's type (a storm main needs clearance)."),
    "status": Column("Status", "The existing main's status (an abandoned one may be gone)."),
    "described": Column(
        "As the mains layer says",
        "The existing main's type and status in the mains layer's own words (Storm Drain, Existing); Type and Status "
        "are the codes sewerplan read them as.",
    ),
    "kind": Column(
        "Kind", "crosses (passes through it), ends on (the upper end lies on it) or runs along (lies over it)."
    ),
    "station_ft": Column("Station (ft)", "Feet along the proposed main from where it connects to the sewer."),
    "length_ft": Column("Length along (ft)", "For a main it runs along: the feet it lies over it; else 0."),
    "feature": Column("Feature", "main crossing: what this feature of the plan's export is."),
}
_EASEMENTS = {
    "parcel_id": Column("Parcel", "The private parcel the proposed main crosses outside every right-of-way."),
    "owner_name": Column("Owner", "The parcel's owner, from whom the easement is needed."),
    "site_address": Column("Address", "The parcel's site address."),
    "length_ft": Column("Length (ft)", "Feet of proposed main across the parcel."),
    "from_station_ft": Column("From station (ft)", "Where the main enters the parcel: feet from where it connects."),
    "to_station_ft": Column("To station (ft)", "Where the main leaves the parcel: feet from where it connects."),
    "feature": Column("Feature", "easement needed: what this feature of the plan's export is."),
}

_BUILDINGS_CROSSED = {
    "building_id": Column("Building", "The building whose footprint the proposed main passes through."),
    "parcel_id": Column("Parcel", "The parcel the building stands on (empty for one on no parcel)."),
    "length_ft": Column("Length (ft)", "Feet of proposed main through the building's footprint."),
    "from_station_ft": Column("From station (ft)", "Where the main enters the building: feet from where it connects."),
    "to_station_ft": Column("To station (ft)", "Where the main leaves the building: feet from where it connects."),
    "feature": Column("Feature", "building crossed: what this feature of the plan's export is."),
}

RESULT_COLUMNS: dict[str, dict[str, Column]] = {
    "parcel_results": _PARCEL_RESULTS,
    "measuring_lines": _EVIDENCE,
    "connection_points": _EVIDENCE,
    "building_results": _BUILDING_RESULTS,
    "analysis_runs": _RUNS,
}
# The layers of a plan's export that carry findings of their own (``layers.write.write_plan``): titles for QGIS.
PLAN_COLUMNS: dict[str, dict[str, Column]] = {
    "main_crossings": _MAIN_CROSSINGS,
    "easements_needed": _EASEMENTS,
    "buildings_crossed": _BUILDINGS_CROSSED,
}
# The input layer a result layer carries columns over from.
CARRIED_FROM = {"parcel_results": "parcels", "building_results": "buildings"}
LAYER_DESCRIPTIONS = {
    "parcel_results": "Every parcel with its status under the connection mandate, the measured distance and the law.",
    "measuring_lines": "The measuring line of each parcel: from its property line to the main it was measured to.",
    "connection_points": "The point on the main each parcel's distance was measured to.",
    "building_results": "Every building: rear buildings, living units, building sewers required and mapped.",
    "analysis_runs": "One row per analysis run written to this store: its summary and workspace as JSON.",
}


def column(layer: str, name: str) -> Column | None:
    """The title and meaning of a column of a result layer (or one carried over from its input layer)."""
    known = (RESULT_COLUMNS.get(layer) or PLAN_COLUMNS.get(layer) or {}).get(name)
    if known is not None:
        return known
    source = CARRIED_FROM.get(layer) or (layer if layer in SPECS else None)
    if source is None:
        return None
    spec = SPECS[source]
    kept = name.removeprefix("input_")
    field = next((f for f in spec.fields if f.name == kept), None)
    if name.startswith("input_"):
        return Column(kept, f"The {source} layer's own {kept} column, kept under this name beside the result.")
    if field is not None:
        words = field.help or kept.replace("_", " ")
        return Column(kept.replace("_", " ").capitalize(), f"From the {source} layer: {words}.")
    return Column(name, f"As given in the {source} layer.")


def column_description(layer: str, name: str) -> str | None:
    """The sentence saying what a column means (``None`` for a layer sewerplan does not describe)."""
    found = column(layer, name)
    return found.description if found else None


__all__ = [
    "CARRIED_FROM",
    "CODED_COLUMNS",
    "GREASE_WORDS",
    "INDUSTRIAL_WORDS",
    "LAYER_DESCRIPTIONS",
    "NOTICE_REASON_WORDS",
    "PLAN_COLUMNS",
    "RESULT_COLUMNS",
    "RULE_WORDS",
    "SHARED_LATERAL_WORDS",
    "STATUS_COLOURS",
    "STATUS_LEGEND",
    "Column",
    "STATUS_TESTS",
    "STATUS_WORDS",
    "SUBDIVISION_WORDS",
    "StatusStyle",
    "column",
    "column_description",
    "legend_statuses",
    "recorded_profile",
]
