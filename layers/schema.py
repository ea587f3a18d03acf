"""What each input layer must hold, and the names users give those fields.

Every layer kind has canonical field names (``parcel_id``, ``owner_name``, ``diameter_in`` ...). A user's
columns are matched to them by an explicit mapping first (``--map parcels.parcel_id=SBL`` or a TOML file), then
by the common names listed here, case-insensitively, then by those names cut to the 10 characters a shapefile's
.dbf keeps (``diameter_i``, ``us_invert_``, ``down_inver``). The canonical columns are added beside the user's own,
which are kept untouched, so outputs still carry owner names exactly as given.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

# A shapefile's .dbf keeps at most this many characters of a column name.
DBF_NAME_CHARS = 10

# The most living units believed on one parcel or one building. The largest apartment complexes in New York hold a
# few thousand; a village parcel holds one to a few hundred. More is a typo (1e15, an area or a value in cents typed
# into the units column): taken as given, it made the system flow infinite and every flow share meaningless.
MAX_LIVING_UNITS = 10_000
# The most gallons per day believed of one parcel's average flow: a large city's whole plant treats a few hundred
# million; a village's largest user a few hundred thousand. More is a typo, read as given it made every share absurd.
MAX_FLOW_GPD = 100_000_000


@dataclass(frozen=True)
class FieldSpec:
    """One canonical field: its name, whether the layer is refused without it, and names users give it.

    ``number`` marks a field read as a number: text that is not one (``'three'``) is refused with its row, blanks
    and the words in ``UNKNOWN_NUMBER_VALUES`` mean "not known". ``counted`` marks a number that cannot be
    negative (living units, a right-of-way's width): a negative one is refused with its row, as text is.
    ``whole`` marks a count of things (living units): 2.5 is refused. ``at_most`` is the largest value a careful
    engineer would believe (``MAX_LIVING_UNITS``): a larger one is a typo (1e15 units) that would make every flow
    and building-sewer count absurd, so it is refused with its row rather than carried into the results.
    """

    name: str
    required: bool = False
    aliases: tuple[str, ...] = ()
    help: str = ""
    number: bool = False
    counted: bool = False
    whole: bool = False
    at_most: float | None = None


@dataclass(frozen=True)
class LayerSpec:
    """One layer kind: the geometry it must have and its fields. ``id_field`` names its features in reports."""

    kind: str
    geometry: tuple[str, ...]
    fields: tuple[FieldSpec, ...]
    id_field: str
    required_layer: bool = False
    help: str = ""

    def __post_init__(self):
        object.__setattr__(self, "fields", _with_truncated_names(self.fields))

    def field(self, name: str) -> FieldSpec:
        return next(f for f in self.fields if f.name == name)


def column_words(name: object) -> str:
    """A column's name as a field's names are written: lower case, each run of spaces, dots or dashes one
    underscore, none at the ends ("Site Address" -> site_address, "PARCEL-ID " -> parcel_id).

    Examples
    --------
    >>> column_words(" Site  Address "), column_words("Mail.Zip"), column_words("Owner__Name")
    ('site_address', 'mail_zip', 'owner_name')
    """
    return re.sub(r"[^0-9a-z]+", "_", str(name).strip().lower()).strip("_")


def column_for(field: FieldSpec, columns: list) -> object | None:
    """The column found for ``field`` by name when no mapping names one: one of its names as it is ("units"), else in
    another case ("UNITS"), else with spaces at its ends, else written as a spreadsheet heads it ("Site Address",
    "Parcel ID", "Mailing Address"), which no name matched; None where none is, or where two columns match alike
    ("Units" and "UNITS": ``columns_alike`` names them), as sewerplan cannot tell which is meant. The check
    (``layers.validate``) and the Data page's mapping form (its suggestion) find columns by this one function.

    Examples
    --------
    >>> units = PARCELS.field("units")
    >>> column_for(units, ["UNITS", "units"]), column_for(units, ["Units", "UNITS"])
    ('units', None)
    """
    found = _found_by_name(field, columns)
    if not found or (len(found) > 1 and found[0][1] == found[1][1]):
        return None
    return found[0][0]


def columns_alike(field: FieldSpec, columns: list) -> list:
    """The columns named as ``field`` (as ``column_for`` finds it) that it does not take: "UNITS" beside the "units"
    it takes, or both "Units" and "UNITS", which match alike and neither is taken. Their values may differ (4 living
    units in one, 8 in the other), so the check and the Data page say which was taken and which were not."""
    found = [c for c, _ in _found_by_name(field, columns)]
    taken = column_for(field, columns)
    return [c for c in found if c is not taken and c != taken]


def _found_by_name(field: FieldSpec, columns: list) -> list[tuple[object, int]]:
    """The columns matching the first of ``field``'s names any column has, each with how closely (0: as it is, 1: in
    another case, 2: with spaces at its ends, 3: as a spreadsheet heads it), closest first, then as the layer lists
    them."""
    names = (field.name, *field.aliases)
    for a in names:
        found = sorted(
            (
                (c, 0 if str(c) == a else 1 if str(c).lower() == a else 2)
                for c in columns
                if str(c).strip().lower() == a
            ),
            key=lambda pair: pair[1],
        )
        if found:
            return found
    by_words: dict[str, list] = {}
    for c in columns:
        by_words.setdefault(column_words(c), []).append(c)
    return next(([(c, 3) for c in by_words[a]] for a in names if a in by_words), [])


def _with_truncated_names(fields: tuple[FieldSpec, ...]) -> tuple[FieldSpec, ...]:
    """Each field's names also as a shapefile cuts them (10 characters), after its full names.

    A cut name that two fields of the layer would share (``downstream`` from ``downstream_mh`` and
    ``downstream_invert``), or that is another field's full name, is matched to neither: the user maps it.
    """
    full = {n for f in fields for n in (f.name, *f.aliases)}
    cuts: dict[str, set[str]] = {}
    for f in fields:
        for n in (f.name, *f.aliases):
            if len(n) > DBF_NAME_CHARS:
                cuts.setdefault(n[:DBF_NAME_CHARS], set()).add(f.name)
    out = []
    for f in fields:
        names = (f.name, *f.aliases)
        extra = []
        for n in names:
            cut = n[:DBF_NAME_CHARS]
            if len(n) > DBF_NAME_CHARS and cuts[cut] == {f.name} and cut not in full and cut not in extra:
                extra.append(cut)
        out.append(replace(f, aliases=(*f.aliases, *extra)) if extra else f)
    return tuple(out)


# Words in an invert column's name that say which end of the main it belongs to: the flow's (us_invert,
# upstream_invert, from_invert, dn_invert ...) or the drawing's (start_invert, end_invert).
_FLOW_END_WORDS = re.compile(
    r"(^|_)(us|up|upstream|ups|ds|dn|down|downstream|dns|from|to|inlet|outlet|in|out)(_|$)|^(up|dn|down)invert"
)
_DRAWN_END_WORDS = re.compile(r"(^|_)(start|end|first|last|begin|beginning)(_|$)")


def invert_reading(us_column: object | None, ds_column: object | None) -> str:
    """How the columns a main's two inverts came from name their ends: ``flow`` (us, up, upstream, from, inlet;
    ds, dn, down, to, outlet: the upstream and downstream ends), ``drawing`` (start, end: the first and last
    vertex), or ``""`` where a name says neither (a column the mapping chose, INV_A). The network reads the
    inverts at their ends by it where the manholes' own inverts do not decide (``analysis.network``). A column
    missing (None) says nothing; two that disagree, or one that names the drawing, read as the drawing.

    Examples
    --------
    >>> invert_reading("us_invert_ft", "ds_invert_ft"), invert_reading("UP_INVERT", None)
    ('flow', 'flow')
    >>> invert_reading("start_invert", "end_invert"), invert_reading("from_invert", "end_invert")
    ('drawing', 'drawing')
    >>> invert_reading("INV_A", "INV_B")
    ''
    """
    words = [column_words(c) for c in (us_column, ds_column) if c is not None]
    if not words or any(_DRAWN_END_WORDS.search(w) for w in words):
        return "drawing" if words else ""
    return "flow" if all(_FLOW_END_WORDS.search(w) for w in words) else ""


POLYGONAL = ("Polygon", "MultiPolygon")
LINEAR = ("LineString", "MultiLineString")
PUNCTUAL = ("Point", "MultiPoint")

PARCELS = LayerSpec(
    kind="parcels",
    geometry=POLYGONAL,
    id_field="parcel_id",
    required_layer=True,
    help="tax parcels (property lines)",
    fields=(
        FieldSpec(
            "parcel_id",
            True,
            (
                "sbl",
                "print_key",
                "printkey",
                "swis_sbl",
                "swissbl",
                "parcelid",
                "parcel_no",
                "pin",
                "apn",
                "tax_id",
                "taxid",
                "sbl_id",
                "id",
            ),
            "the tax map number (section-block-lot)",
        ),
        FieldSpec(
            "owner_name",
            False,
            ("owner", "owner_name", "ownername", "owner1", "primary_owner", "own_name", "owner_nam"),
            "owner as on the roll",
        ),
        FieldSpec(
            "mail_address",
            False,
            (
                "mail_addr",
                "mailing_address",
                "mail_address",
                "mailaddr",
                "mail_add",
                "owner_addr",
                "mailing_add",
                "mail_addr1",
            ),
            "owner's mailing street address",
        ),
        FieldSpec("mail_city", False, ("mail_city", "mailing_city", "owner_city", "mailcity")),
        FieldSpec("mail_state", False, ("mail_state", "mailing_state", "owner_state", "mailstate")),
        FieldSpec("mail_zip", False, ("mail_zip", "mailing_zip", "owner_zip", "mailzip", "zip_code")),
        FieldSpec(
            "site_address",
            False,
            ("site_addr", "site_address", "address", "loc_addr", "location", "prop_addr", "parcel_addr", "situs"),
            "street address of the property",
        ),
        FieldSpec("site_city", False, ("site_city", "loc_city", "prop_city", "municipality")),
        FieldSpec("site_state", False, ("site_state", "loc_state", "prop_state")),
        FieldSpec("site_zip", False, ("site_zip", "loc_zip", "prop_zip", "zip")),
        FieldSpec(
            "property_class",
            False,
            ("prop_class", "property_class", "propclass", "class", "pcl_class", "land_use"),
            "New York property class code (210, 311, ...)",
        ),
        FieldSpec(
            "units",
            False,
            ("units", "living_units", "dwelling_units", "nbr_units", "num_units", "du"),
            number=True,
            counted=True,
            whole=True,
            at_most=MAX_LIVING_UNITS,
        ),
        FieldSpec("occupied", False, ("occupied", "is_occupied"), "yes/no: a building used for human occupancy"),
        FieldSpec(
            "connected",
            False,
            ("connected", "sewer_connected", "is_connected", "on_sewer"),
            "yes/no: already connected to the public sewer",
        ),
        FieldSpec(
            "private_system",
            False,
            ("private_system", "septic", "on_septic", "septic_system", "private_sewage", "private_sewage_system"),
            "yes/no: served by a septic tank, cesspool or other private sewage disposal system (the notices use it)",
        ),
        FieldSpec(
            "control_manhole",
            False,
            ("control_manhole", "control_mh", "sampling_manhole"),
            "a control manhole specially required for the parcel (its manhole ID)",
        ),
        FieldSpec(
            "flow_gpd",
            False,
            ("flow_gpd", "avg_flow_gpd", "average_flow_gpd", "daily_flow_gpd", "water_use_gpd", "sewer_flow_gpd"),
            "average daily flow to the sewer in gallons per day (metered water use or a permit's figure)",
            # read as a number when the layers are loaded: "16,000" as 16000, and text that is no number refused with
            # its row; it had been dropped without a word, and a mill metered at "16,000" counted as unknown (a tester)
            number=True,
            counted=True,
            at_most=MAX_FLOW_GPD,
        ),
    ),
)

BUILDINGS = LayerSpec(
    kind="buildings",
    geometry=POLYGONAL + PUNCTUAL,
    id_field="building_id",
    help="building footprints (or building points)",
    fields=(
        FieldSpec("building_id", False, ("building_id", "bldg_id", "bldgid", "buildingid", "objectid", "fid", "id")),
        FieldSpec(
            "units",
            False,
            ("units", "living_units", "dwelling_units", "num_units", "du"),
            number=True,
            counted=True,
            whole=True,
            at_most=MAX_LIVING_UNITS,
        ),
        FieldSpec("occupied", False, ("occupied", "is_occupied"), "yes/no: used for human occupancy"),
    ),
)

STREETS = LayerSpec(
    kind="streets",
    geometry=LINEAR + POLYGONAL,
    id_field="street_id",
    help="street centrelines, or right-of-way polygons",
    fields=(
        FieldSpec("street_id", False, ("street_id", "segment_id", "road_id", "objectid", "fid", "id")),
        FieldSpec(
            "street_name", False, ("street_name", "name", "st_name", "fullname", "full_name", "road_name", "stname")
        ),
        FieldSpec(
            "row_width_ft",
            False,
            ("row_width_ft", "row_width", "row_ft", "rowwidth", "right_of_way"),
            number=True,
            counted=True,
        ),
    ),
)

MAINS = LayerSpec(
    kind="mains",
    geometry=LINEAR,
    id_field="main_id",
    required_layer=True,
    help="sewer mains (pipes)",
    fields=(
        FieldSpec(
            "main_id",
            False,
            ("main_id", "pipe_id", "pipeid", "facilityid", "facility_id", "asset_id", "objectid", "fid", "id"),
        ),
        FieldSpec(
            "sewer_type",
            False,
            ("sewer_type", "system_type", "type", "pipe_type", "main_type", "system", "subtype"),
            "sanitary, storm, combined, force",
        ),
        FieldSpec("ownership", False, ("ownership", "owner", "owned_by", "ownedby", "audience"), "public or private"),
        FieldSpec("status", False, ("status", "lifecycle", "life_cycle", "condition_status", "active")),
        FieldSpec(
            "diameter_in",
            False,
            ("diameter_in", "diameter", "diam", "size_in", "pipe_size", "pipesize"),
            number=True,
        ),
        FieldSpec("street_name", False, ("street_name", "street", "location", "st_name")),
        FieldSpec("material", False, ("material", "pipe_material", "matl", "mat"), "PVC, VCP, RCP, DIP, AC ..."),
        FieldSpec(
            "from_manhole",
            False,
            (
                "from_manhole",
                "from_mh",
                "from_node",
                "fromnode",
                "us_node",
                "us_mh",
                "upstream_mh",
                "inlet_node",
                "start_node",
            ),
        ),
        FieldSpec(
            "to_manhole",
            False,
            (
                "to_manhole",
                "to_mh",
                "to_node",
                "tonode",
                "ds_node",
                "ds_mh",
                "downstream_mh",
                "outlet_node",
                "end_node",
            ),
        ),
        FieldSpec(
            "us_invert_ft",
            False,
            (
                "us_invert_ft",
                "us_invert",
                "up_invert",
                "up_invert_ft",
                "upinvert",
                "inv_up",
                "invert_up",
                "start_invert",
                "from_invert",
                "upstream_invert",
            ),
            "invert at the main's upstream end (ft); which end it is read at: see invert_reading",
            number=True,
        ),
        FieldSpec(
            "ds_invert_ft",
            False,
            (
                "ds_invert_ft",
                "ds_invert",
                "dn_invert",
                "dninvert",
                "down_invert",
                "down_invert_ft",
                "inv_dn",
                "invert_dn",
                "end_invert",
                "to_invert",
                "downstream_invert",
            ),
            "invert at the main's downstream end (ft); which end it is read at: see invert_reading",
            number=True,
        ),
        FieldSpec(
            "length_ft",
            False,
            ("length_ft", "len_ft", "lengthft", "pipe_length_ft", "length_feet"),
            "the main's length in feet as the utility records it; used instead of the drawn length",
            number=True,
        ),
        FieldSpec(
            "link_kind",
            False,
            ("link_kind", "link_type"),
            "conduit, pump, orifice, weir or outlet (the links of a SWMM model)",
        ),
    ),
)

MANHOLES = LayerSpec(
    kind="manholes",
    geometry=PUNCTUAL,
    id_field="manhole_id",
    help="sewer manholes",
    fields=(
        FieldSpec(
            "manhole_id",
            False,
            ("manhole_id", "mh_id", "mhid", "structure_id", "facilityid", "asset_id", "objectid", "fid", "id"),
        ),
        FieldSpec("status", False, ("status", "lifecycle", "life_cycle")),
        FieldSpec(
            "structure",
            False,
            ("structure", "structure_type", "mh_type", "node_type", "type", "subtype"),
            "manhole, cleanout, pipe cap, outfall, plant inlet, storage, pump station ... (common spellings are read)",
        ),
        FieldSpec(
            "invert_ft", False, ("invert_ft", "invert", "inv_elev", "invert_elev", "invert_elevation"), number=True
        ),
    ),
)

OUTFALLS = LayerSpec(
    kind="outfalls",
    geometry=PUNCTUAL,
    id_field="outfall_id",
    help="treatment plants or outfalls the sewer drains to",
    fields=(
        FieldSpec(
            "outfall_id",
            False,
            ("outfall_id", "plant_id", "facilityid", "facility_id", "npdes", "objectid", "fid", "id"),
        ),
        FieldSpec("outfall_name", False, ("outfall_name", "name", "facilityname", "facility_name", "plant_name")),
        FieldSpec(
            "outfall_manhole",
            False,
            ("outfall_manhole", "inlet_manhole", "manhole_id", "node_id"),
            "the manhole or node where the sewer enters the plant",
        ),
        FieldSpec(
            "facility_type",
            False,
            (
                "facility_type",
                "facilitytype",
                "fac_type",
                "facility_class",
                "programcategory",
                "program_category",
                "permit_type",
                "category",
                "type",
            ),
            "plant, outfall or other (common spellings are read): only plants and outfalls end the sewer",
        ),
    ),
)

ALLEYS = LayerSpec(
    kind="alleys",
    geometry=LINEAR + POLYGONAL,
    id_field="alley_id",
    help="alleys, courts, yards and driveways a private sewer could run through",
    fields=(
        FieldSpec("alley_id", False, ("alley_id", "objectid", "fid", "id")),
        FieldSpec(
            "route_kind",
            False,
            ("route_kind", "kind", "type", "feature", "class"),
            "alley, court (courtyard), yard or driveway; alley when absent",
        ),
    ),
)

LATERALS = LayerSpec(
    kind="laterals",
    geometry=LINEAR,
    id_field="lateral_id",
    help="existing building sewers (laterals) from buildings to mains",
    fields=(
        FieldSpec("lateral_id", False, ("lateral_id", "service_id", "objectid", "fid", "id")),
        FieldSpec(
            "diameter_in",
            False,
            ("diameter_in", "diameter", "diam", "size_in", "pipe_size", "pipesize"),
            "inside diameter of the building sewer (inches)",
        ),
        FieldSpec(
            "us_invert_ft",
            False,
            MAINS.field("us_invert_ft").aliases,
            "invert at the lateral's first vertex (ft)",
        ),
        FieldSpec(
            "ds_invert_ft",
            False,
            MAINS.field("ds_invert_ft").aliases,
            "invert at the lateral's last vertex (ft)",
        ),
    ),
)

SERVICE_AREAS = LayerSpec(
    kind="service_areas",
    geometry=POLYGONAL,
    id_field="area_id",
    help="sewer districts and improvement areas; mandates=no holds parcels on private systems (Phase III)",
    fields=(
        FieldSpec("area_id", False, ("area_id", "district_id", "objectid", "fid", "id")),
        FieldSpec("area_name", False, ("area_name", "name", "district", "phase")),
        FieldSpec(
            "mandates",
            False,
            ("mandates", "mandate", "sewer_available", "available"),
            "yes where connection can be required now; no for areas such as Wappinger's Phase III",
        ),
    ),
)

CURBS = LayerSpec(
    kind="curbs",
    geometry=LINEAR + POLYGONAL,
    id_field="curb_id",
    help="curblines, or pavement polygons whose outlines are the curbs (Fort Plain measures from the curbline)",
    fields=(FieldSpec("curb_id", False, ("curb_id", "objectid", "fid", "id")),),
)

SEWER_RIGHTS_OF_WAY = LayerSpec(
    kind="sewer_rights_of_way",
    geometry=POLYGONAL,
    id_field="row_id",
    help="sewer rights-of-way (easements) in which mains run outside streets",
    fields=(FieldSpec("row_id", False, ("row_id", "easement_id", "objectid", "fid", "id")),),
)

SUBDIVISIONS = LayerSpec(
    kind="subdivisions",
    geometry=POLYGONAL,
    id_field="subdivision_id",
    help="proposed subdivisions (or their lots): which must build sewers",
    fields=(
        FieldSpec(
            "subdivision_id", False, ("subdivision_id", "subdiv_id", "sub_id", "plat_id", "objectid", "fid", "id")
        ),
        FieldSpec("subdivision_name", False, ("subdivision_name", "subdiv_name", "plat_name", "name")),
        FieldSpec(
            "units",
            False,
            ("units", "dwelling_units", "living_units", "num_units", "du"),
            "dwelling units planned",
            number=True,
            counted=True,
            whole=True,
            at_most=MAX_LIVING_UNITS,
        ),
        FieldSpec(
            "lots",
            False,
            ("lots", "num_lots", "lot_count", "nbr_lots"),
            "lots planned (one unit each)",
            number=True,
            counted=True,
            whole=True,
            at_most=MAX_LIVING_UNITS,
        ),
    ),
)

SPECS: dict[str, LayerSpec] = {
    s.kind: s
    for s in (
        PARCELS,
        BUILDINGS,
        STREETS,
        MAINS,
        MANHOLES,
        OUTFALLS,
        ALLEYS,
        LATERALS,
        SERVICE_AREAS,
        CURBS,
        SEWER_RIGHTS_OF_WAY,
        SUBDIVISIONS,
    )
}

# The kinds of shapes a layer declares (``layers.read.declared_geometry``), as its user says them.
SHAPE_WORDS = {"Point": "points", "LineString": "lines", "Polygon": "areas (polygons)"}


def kinds_fitting(geometry: str) -> list[str]:
    """The layer kinds whose features may be of ``geometry`` ("LineString": streets, mains, alleys ...), in the
    order ``SPECS`` lists them.

    Examples
    --------
    >>> kinds_fitting("Point")
    ['buildings', 'manholes', 'outfalls']
    """
    return [kind for kind, spec in SPECS.items() if geometry in spec.geometry]


# Columns the analysis adds; a user's column of the same name is kept as ``input_<name>``.
RESULT_COLUMNS = (
    "distance_ft",
    "main_id",
    "abuts_sewered_street",
    "occupied",
    "occupied_source",
    "connected_flag",
    "status",
    "rule",
    "section",
    "reason",
    "deadline",
    "connection_x",
    "connection_y",
    "street_name_main",
    "downstream_length_ft",
    "outfall_id",
    "network_problem",
    "boundary_distance_ft",
    "measured_from",
    "discharge_gpd",
    "discharge_source",
    "flow_share_pct",
    "grease_interceptor",
    "industrial_user",
    "in_subdivision",
    "subdivision_duty",
    "duties",
    "duties_section",
)

# Values users put in the mains' type, ownership and status columns, normalised. Keys are lower-case.
SEWER_TYPE_VALUES = {
    "sanitary": "sanitary",
    "san": "sanitary",
    "ss": "sanitary",
    "sewer": "sanitary",
    "sewer pipe": "sanitary",
    "sanitary sewer": "sanitary",
    "gravity": "sanitary",
    "gravity main": "sanitary",
    "gravity sewer": "sanitary",
    "wastewater": "sanitary",
    "sanitary main": "sanitary",
    "interceptor": "sanitary",
    "trunk": "sanitary",
    "storm": "storm",
    "stm": "storm",
    "sd": "storm",
    "storm sewer": "storm",
    "storm drain": "storm",
    "drainage": "storm",
    "stormwater": "storm",
    "culvert": "storm",
    "combined": "combined",
    "cso": "combined",
    "combined sewer": "combined",
    "comb": "combined",
    "force": "force",
    "force main": "force",
    "forcemain": "force",
    "fm": "force",
    "pressure": "force",
}
OWNERSHIP_VALUES = {
    "public": "public",
    "municipal": "public",
    "village": "public",
    "town": "public",
    "city": "public",
    "county": "public",
    "district": "public",
    "pub": "public",
    "private": "private",
    "pvt": "private",
    "priv": "private",
    "privately owned": "private",
}
STATUS_VALUES = {
    "existing": "active",
    "active": "active",
    "in service": "active",
    "inservice": "active",
    "in use": "active",
    "operational": "active",
    "act": "active",
    "proposed": "proposed",
    "planned": "proposed",
    "abandoned": "abandoned",
    "aband": "abandoned",
    "abn": "abandoned",
    "removed": "abandoned",
    "retired": "abandoned",
    "inactive": "abandoned",
    "out of service": "abandoned",
}
ROUTE_KIND_VALUES = {
    "alley": "alley",
    "aly": "alley",
    "lane": "alley",
    "court": "court",
    "courtyard": "court",
    "ct": "court",
    "yard": "yard",
    "driveway": "driveway",
    "drive": "driveway",
    "dwy": "driveway",
    "drwy": "driveway",
}
# What users write in a number field for "not known"; read as missing, never as a number.
UNKNOWN_NUMBER_VALUES = {"", "n/a", "na", "nan", "none", "null", "unknown", "unk", "?", "-", "--"}
# What a point of the manholes layer is. Manholes (and a SWMM model's junctions, storage units and dividers, and
# a plant's inlet manhole) are manholes; cleanouts, pipe caps, pump stations and outfalls are nodes of the network
# but not manholes, so a control manhole is never one of them. Keys are lower-case.
STRUCTURE_VALUES = {
    "manhole": "manhole",
    "mh": "manhole",
    "smh": "manhole",
    "sewer manhole": "manhole",
    "sanitary manhole": "manhole",
    "sanitary sewer manhole": "manhole",
    "san manhole": "manhole",
    "san mh": "manhole",
    "standard manhole": "manhole",
    "drop manhole": "manhole",
    "maintenance hole": "manhole",
    "junction": "junction",
    "storage": "storage",
    "storage unit": "storage",
    "wet well": "storage",
    "wetwell": "storage",
    "divider": "divider",
    "flow divider": "divider",
    "outfall": "outfall",
    "sewer outfall": "outfall",
    "outfall structure": "outfall",
    "plant": "plant",
    "plant inlet": "plant",
    "treatment plant": "plant",
    "wwtp": "plant",
    "wwtf": "plant",
    "headworks": "plant",
    "cleanout": "cleanout",
    "clean out": "cleanout",
    "clean-out": "cleanout",
    "co": "cleanout",
    "cap": "cap",
    "pipe cap": "cap",
    "end cap": "cap",
    "plug": "cap",
    "end of line": "cap",
    "eol": "cap",
    "pump station": "pump_station",
    "pumping station": "pump_station",
    "lift station": "pump_station",
    "other": "other",
    "fitting": "other",
    "valve": "other",
}
# What a point of the treatment-plant layer is. A state layer of "wastewater facilities" also holds industrial
# and other dischargers: only plants and sewer outfalls end the public sewer. Keys are lower-case.
FACILITY_TYPE_VALUES = {
    "plant": "plant",
    "treatment plant": "plant",
    "wastewater treatment plant": "plant",
    "wastewater treatment facility": "plant",
    "sewage treatment plant": "plant",
    "wwtp": "plant",
    "wwtf": "plant",
    "stp": "plant",
    "potw": "plant",
    "publicly owned treatment works": "plant",
    "water pollution control plant": "plant",
    "wpcp": "plant",
    "water resource recovery facility": "plant",
    "wrrf": "plant",
    "municipal": "plant",
    "municipal discharge": "plant",
    "municipal wastewater": "plant",
    "outfall": "outfall",
    "sewer outfall": "outfall",
    "other": "other",
    "industrial": "other",
    "industrial discharge": "other",
    "industrial discharger": "other",
    "industrial stormwater": "other",
    "commercial": "other",
    "commercial discharge": "other",
    "private": "other",
    "pretreatment": "other",
    "indirect discharge": "other",
    "indirect discharger": "other",
    "non-municipal": "other",
    "septage": "other",
    "pump station": "other",
    "lift station": "other",
    "stormwater": "other",
    "storm water": "other",
}
TRUE_VALUES = {"1", "y", "yes", "true", "t", "connected", "occupied", "x"}
FALSE_VALUES = {"0", "n", "no", "false", "f", "", "none", "not connected", "vacant"}
