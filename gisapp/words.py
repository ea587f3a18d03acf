"""Plain words for the codes the analysis writes, and dates in the town's format: what every page shows.

The analysis keeps short codes in its results (``mandated``, ``connection_required``, ``for_decision`` ...), which
are right for files and the command line. A page says what they mean. One list here serves the templates (the
``words`` and ``town_date`` filters), the map's script (sent with the page) and the printed map.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from pathlib import Path
from typing import TYPE_CHECKING

from analysis.notices import deadline_flag
from analysis.reasons import deadline_sentence
from layers.legend import (
    GREASE_WORDS,
    INDUSTRIAL_WORDS,
    NOTICE_REASON_WORDS,
    RULE_WORDS,
    SHARED_LATERAL_WORDS,
    STATUS_WORDS,
    SUBDIVISION_WORDS,
)
from layers.legend import STATUS_COLOURS as LEGEND_COLOURS
from layers.write import column_types_path

if TYPE_CHECKING:
    from analysis.network_checks import NetworkEnd, NetworkOutline

# The colours of each parcel status on the map, its legend and the printed map.
# The web map's colours are the legend's (layers/legend.py), which the QGIS styles use too: one source.
STATUS_COLOURS = {**LEGEND_COLOURS, "not_analysed": "#e0e0e0"}

WORDS: dict[str, str] = {
    # the codes of the result columns: the words of the legend (layers/legend.py), which the QGIS styles show too
    **STATUS_WORDS,
    "not_analysed": "not analysed yet",
    **RULE_WORDS,
    **GREASE_WORDS,
    **INDUSTRIAL_WORDS,
    **SUBDIVISION_WORDS,
    **SHARED_LATERAL_WORDS,
    # plan checks and requirements
    "min_diameter": "pipe size",
    "manhole_spacing": "distance between manholes",
    "alignment_change": "manholes at changes of direction",
    "pipe_material": "pipe material",
    "connection": "connection to the existing sewer",
    "capacity": "capacity downstream",
    "main_crossings": "crossings of existing mains",
    "easements": "easements across private land",
    "buildings_crossed": "buildings the main passes through",
    "crosses": "crosses",
    "ends on": "ends on",
    "runs along": "runs along",
    "trench_width": "trench width",
    "exfiltration_test": "leakage test",
    **NOTICE_REASON_WORDS,
}
# A date as a town writes it (strftime codes; %-d and %-m are the day and month without a leading zero).
DEFAULT_DATE_FORMAT = "%B %-d, %Y"
_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})")


def words(code) -> str:
    """The plain words for a code; a code not listed is shown with spaces for its underscores."""
    if code is None or (isinstance(code, float) and math.isnan(code)):
        return ""
    text = str(code)
    return WORDS.get(text, text.replace("_", " "))


def town_date(value, fmt: str = DEFAULT_DATE_FORMAT) -> str:
    """A date (a ``date``, ``datetime`` or text starting YYYY-MM-DD) in the town's format; other text as it is.

    Examples
    --------
    >>> town_date("2027-05-30"), town_date("2027-05-03", "%m/%d/%Y"), town_date(None)
    ('May 30, 2027', '05/03/2027', '')
    """
    if value is None or value == "" or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, dt.datetime):
        day = value.date()
    elif isinstance(value, dt.date):
        day = value
    else:
        found = _DATE.match(str(value))
        if not found:
            return str(value)
        try:
            day = dt.date(*(int(g) for g in found.groups()))
        except ValueError:
            return str(value)
    portable = fmt.replace("%-d", str(day.day)).replace("%-m", str(day.month))
    return day.strftime(portable)


_DAY_IN_TEXT = re.compile(r"(?<![\w-])(\d{4}-\d{2}-\d{2})(?![\w-])")


def town_dates_in(text: str | None, fmt: str = DEFAULT_DATE_FORMAT) -> str | None:
    """Every day written YYYY-MM-DD in a sentence, in the town's format: the register's refusals name days as the
    command line reads them, and the notices page said "due 2027-03-14" beside its own "March 14, 2027" (a tester).
    A day the calendar does not have stays as typed, for the sentence that says so.

    Examples
    --------
    >>> town_dates_in("The day it connected, 2027-02-01, is after today (2026-12-07).")
    'The day it connected, February 1, 2027, is after today (December 7, 2026).'
    >>> town_dates_in("2027-02-30 does not exist: February 2027 has 28 days")
    '2027-02-30 does not exist: February 2027 has 28 days'
    """
    if not text:
        return text
    return _DAY_IN_TEXT.sub(lambda m: town_date(m.group(1), fmt), text)


def reason_without_deadline(reason: str | None, deadline: str | None) -> str | None:
    """A parcel's reason without the run's closing deadline sentence, as the map's popup shows it: the popup's
    Deadline row gives the deadline that holds (the notice's once one is issued), labelled and in the town's date
    format, so the sentence does not repeat the run's. A reason that does not end with it is shown as it is.

    Examples
    --------
    >>> reason_without_deadline("... within 90 days of official notice. Deadline 2027-05-30.", "2027-05-30")
    '... within 90 days of official notice.'
    >>> reason_without_deadline("Already connected to the public sewer.", None)
    'Already connected to the public sewer.'
    """
    if not reason or not deadline:
        return reason
    ending = deadline_sentence(str(deadline))
    return reason[: -len(ending)] if reason.endswith(ending) else reason


def layer_count(n: int, layer: str) -> str:
    """A layer's count in words: "2,000 parcels", "1 treatment plant" (the layer's name, not "1 treatment_plants"),
    as the command line and the Data page both say it ("1 outfalls, 1 service areas" on the page).

    Examples
    --------
    >>> layer_count(1, "treatment_plants"), layer_count(2000, "parcels"), layer_count(1, "service_areas")
    ('1 treatment plant', '2,000 parcels', '1 service area')
    """
    words = layer.replace("_", " ")
    return f"{n:,} {words.removesuffix('s') if n == 1 else words}"


def count(n: int, one: str, many: str | None = None) -> str:
    """``n`` with its noun: "1 main", "3 mains", "no mains".

    Examples
    --------
    >>> count(1, "main"), count(3, "main"), count(0, "living unit"), count(2, "property", "properties")
    ('1 main', '3 mains', 'no living units', '2 properties')
    """
    many = many or one + "s"
    if n == 0:
        return f"no {many}"
    return f"{n:,} {one if n == 1 else many}"


def already_noticed(n: int) -> str:
    """Why a preview has fewer notices than the analysis has mandated parcels; '' when none are left out.

    Examples
    --------
    >>> already_noticed(519).split(":")[0], already_noticed(0)
    ('519 mandated parcels are not noticed again', '')
    """
    if not n:
        return ""
    are = "is" if n == 1 else "are"
    return (
        f"{count(n, 'mandated parcel')} {are} not noticed again: the register has an open notice for each, or marks it "
        "connected or exempt."
    )


def sentence_end(text: str) -> str:
    """``text`` ending in a full stop, once: the reasons letters cannot be written are phrases, one or two
    sentences long, that the CLI and the Notices page each show as the end of a sentence.

    Examples
    --------
    >>> sentence_end("the town settings lack signer"), sentence_end("add it to the file.")
    ('the town settings lack signer.', 'add it to the file.')
    """
    text = text.rstrip()
    return text if text.endswith((".", "!", "?")) else text + "."


def before_issuing(problem: str) -> str:
    """One reason letters cannot be written yet, as the notices preview says it (CLI and Notices page).

    Examples
    --------
    >>> before_issuing("the town settings (town.toml) lack signer")
    'Before issuing: the town settings (town.toml) lack signer.'
    """
    return f"Before issuing: {sentence_end(problem)}"


def number(value, unit: str = "") -> str:
    """A measure without a needless ".0": 8 in, 70 units, 12.5 ft; '' for a missing value.

    Examples
    --------
    >>> number(8.0, "in"), number(12.46, "ft"), number(1500.0), number(None, "in")
    ('8 in', '12.5 ft', '1,500', '')
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    v = float(value)
    text = f"{v:,.0f}" if v == round(v) else f"{v:,.1f}"
    return f"{text} {unit}".strip()


def size_words(n: int) -> str:
    """A file's size as a planner reads it: "250.3 MB", "12 KB", "900 bytes" (1 MB = 1,048,576 bytes).

    Rounded to a tenth, half up, in whole numbers: the upload form's script (gisapp/static/upload.js) words a
    file's size the same way, so the sentence the browser shows is the one the server would give.

    Examples
    --------
    >>> size_words(200 * 1024 * 1024), size_words(262_459_392), size_words(1536), size_words(900)
    ('200 MB', '250.3 MB', '1.5 KB', '900 bytes')
    """
    for unit, name in ((1024 * 1024, "MB"), (1024, "KB")):
        if n >= unit:
            tenths = (n * 10 + unit // 2) // unit
            whole, tenth = divmod(tenths, 10)
            return f"{whole}.{tenth} {name}" if tenth else f"{whole} {name}"
    return f"{n} bytes"


def settings_text(settings: dict | None) -> str:
    """The values set on a run's profile, as the map's run line and popup name them; '' for none.

    Examples
    --------
    >>> settings_text({"mandate.distance_ft": "250"}), settings_text({})
    ('mandate.distance_ft=250 (value set by the user)', '')
    >>> settings_text({"b.y": 2, "a.x": "1"})
    'a.x=1, b.y=2 (values set by the user)'
    >>> settings_text({"mandate.distance_ft": 250.0, "mandate.requires_abutting_street": False})  # as a profile reads
    'mandate.distance_ft=250, mandate.requires_abutting_street=false (values set by the user)'
    """
    if not settings:
        return ""
    pairs = ", ".join(f"{k}={_setting_value(v)}" for k, v in sorted(settings.items()))
    return f"{pairs} (value{'' if len(settings) == 1 else 's'} set by the user)"


def _setting_value(value) -> str:
    """A value set on a profile as it is typed after ``--set KEY=``: 250 (not 250.0), true, 12.5."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def other_run(run: dict | None, given: dict | None, fmt: str = DEFAULT_DATE_FORMAT) -> str | None:
    """Why a parcel's reason, from the map's ``run``, is not the notice on record, which was ``given`` on another
    run: one sentence naming what differs (profile, values set on it, distance); None when nothing known does.

    ``run`` and ``given`` hold ``profile``, ``settings`` (a dict; None where not recorded), ``distance_ft`` and
    ``analysed_at``. A what-if run under the notice's own profile at another distance showed its reason beside the
    notice with nothing to say the notice was not given on it. The settings are compared as values: give them as
    the profile reads them, without those equal to its own (``gisapp.services.settings_changed``), or ``250`` and
    ``250.0``, or a value set to the profile's own, would count as a difference.

    Examples
    --------
    >>> now = {"profile": "fort-plain", "settings": {"mandate.distance_ft": 250.0}, "distance_ft": 250.0}
    >>> then = {"profile": "fort-plain", "settings": {}, "distance_ft": 100.0, "analysed_at": "2026-12-03 17:49"}
    >>> print(other_run(now, then))  # doctest: +NORMALIZE_WHITESPACE
    This run measured with mandate.distance_ft=250 (value set by the user); the notice on record was given on the
    run of December 3, 2026 with the profile's own values, within 100 ft.
    >>> print(other_run({"profile": "poughkeepsie", "settings": {}, "distance_ft": 150.0}, then))
    ... # doctest: +NORMALIZE_WHITESPACE
    This run measured under profile poughkeepsie, within 150 ft; the notice on record was given on the run of
    December 3, 2026 under profile fort-plain, within 100 ft.
    >>> other_run(then, then) is None
    True
    """
    if not run or not given:
        return None
    mine, theirs = run.get("settings"), given.get("settings")
    profiles = bool(run.get("profile") and given.get("profile")) and run.get("profile") != given.get("profile")
    settings = mine is not None and theirs is not None and mine != theirs
    near, far = run.get("distance_ft"), given.get("distance_ft")
    distances = near is not None and far is not None and float(near) != float(far)
    if not (profiles or settings or distances):
        return None

    def measured(side: dict, values: dict | None) -> str:
        """How one run measured, in the words that differ: 'under profile P with K=V, within 100 ft'."""
        words = [f"under profile {side['profile']}"] if profiles else []
        if settings:
            words.append(f"with {settings_text(values)}" if values else "with the profile's own values")
        text = " ".join(words)
        if distances and not (settings and "mandate.distance_ft" in (values or {})):
            text += f"{', ' if text else ''}within {number(side['distance_ft'], 'ft')}"
        return text

    when = town_date(str(given.get("analysed_at") or "")[:10], fmt)
    given_on = f"given on the run of {when}" if when else "given"
    return f"This run measured {measured(run, mine)}; the notice on record was {given_on} {measured(given, theirs)}."


def notice_in_force(notices: list[dict]) -> dict | None:
    """Of a parcel's notices (oldest first, ``Register.notices_of``), the one whose deadline is the parcel's, as the
    map popup picks it: a connection recorded without a notice stands whatever came before it; else the latest
    notice not cancelled (a cancelled one was never mailed). None where there is none. The Summary's list and the
    results downloaded beside it (``gisapp.services.with_notices_in_force``) both take it.

    Examples
    --------
    >>> notice_in_force([{"notice_id": "N-1", "status": "open", "notice_type": "connection"},
    ...                  {"notice_id": "N-2", "status": "cancelled", "notice_type": "connection"}])["notice_id"]
    'N-1'
    """
    live = [n for n in notices if n["status"] != "cancelled"]
    records = [n for n in live if n["notice_type"] == "record"]
    return (records or live or [None])[-1]


def register_record(notices: list[dict] | None) -> dict | None:
    """The notice by which the register records a parcel connected or exempt, or None: of the parcel's ``notices``
    (oldest first) a connection recorded without a notice (type ``record``) decides, else the latest not cancelled.

    Examples
    --------
    >>> register_record([{"notice_id": "N-7", "status": "connected"}, {"notice_id": "N-8", "status": "cancelled"}])
    {'notice_id': 'N-7', 'status': 'connected'}
    >>> register_record([{"notice_id": "N-7", "status": "exempt"}, {"notice_id": "N-9", "status": "open"}]) is None
    True
    """
    recorded = [n for n in notices or [] if n.get("notice_type") == "record" and n.get("status") == "connected"]
    if recorded:  # a connection recorded without a notice stands, whatever notices were withdrawn before it
        return recorded[-1]
    latest = [n for n in notices or [] if n.get("status") != "cancelled"][-1:]
    return latest[0] if latest and latest[0].get("status") in ("connected", "exempt") else None


# How a run comes to count as connected the parcels the register records connected, as the web pages say it (the
# popup and the Summary page alike): with what the web offers, since a web user cannot type a command. The web has no
# connected-parcels list (the command line's --connected FILE.csv); its way is a connected column of the parcels,
# uploaded on the Data page and matched to the parcels' "connected" field on its column-mapping page.
READ_CONNECTED = (
    "upload the data again on the Data page with a connected column in the parcels (yes where the billing records "
    "show a connection), run the analysis on that upload and publish it as the town's store"
)


def register_note(
    status: str | None,
    notices: list[dict] | None = None,
    *,
    recorded: dict[str, int] | None = None,
    fmt: str = DEFAULT_DATE_FORMAT,
) -> str | None:
    """What the notice register records about a parcel that the map's run does not show, or None.

    A clerk marks a parcel connected (or exempt) in the register; the run the map shows read the data as it was
    and still finds the parcel must connect. The popup said "Status: must connect" above "Notice …, already
    connected" with nothing to say which holds. ``notices`` are the parcel's, oldest first; the latest not
    cancelled decides (``register_record``).

    With ``recorded`` instead (how many of the run's parcels of ``status`` the register records ``connected`` and
    ``exempt``) the same for them all, as the Summary page says it under its parcels that must connect: the Summary
    counted them there with nothing to say the register holds otherwise.

    The day a connection recorded without a notice was made is written in the town's date format ``fmt``
    (``town_date``), as the popup's other dates: it read 2027-02-10 beside "Issued February 10, 2027".

    The sentences are the web pages' (the popup, the Summary page, and ``register_note`` in ``/api/parcel`` and
    ``/api/summary``): the way to show a parcel connected is said as the web does it (``READ_CONNECTED``: a connected
    column uploaded on the Data page), never as the command line's ``--connected FILE.csv``, which a web user cannot
    type.

    Examples
    --------
    >>> print(register_note("mandated", [{"notice_id": "N-7", "status": "connected"}]))
    The notice register records this parcel connected (notice N-7); this run did not read the register, so it still
    finds the parcel must connect: to show it connected, upload the data again on the Data page with a connected
    column in the parcels (yes where the billing records show a connection), run the analysis on that upload and
    publish it as the town's store.
    >>> print(register_note("mandated", [{"notice_id": "N-7", "status": "exempt"}]))
    The notice register records this parcel exempt (notice N-7): it is given no further notice, whatever this run finds.
    >>> register_note("connected", [{"notice_id": "N-7", "status": "connected"}]) is None
    True
    >>> print(register_note("mandated", recorded={"connected": 3, "exempt": 1}))
    The notice register records 3 of these parcels connected and 1 exempt; this run did not read the register, so it
    still counts them as must connect: to show the connected ones connected, upload the data again on the Data page
    with a connected column in the parcels (yes where the billing records show a connection), run the analysis on
    that upload and publish it as the town's store (an exempt parcel is given no further notice, whatever this run
    finds).
    >>> print(register_note("mandated", recorded={"connected": 1, "exempt": 0}))
    The notice register records 1 of these parcels connected; this run did not read the register, so it still counts
    it as must connect: to show it connected, upload the data again on the Data page with a connected column in the
    parcels (yes where the billing records show a connection), run the analysis on that upload and publish it as the
    town's store.
    >>> print(register_note("mandated", recorded={"connected": 0, "exempt": 2}))
    The notice register records 2 of these parcels exempt: they are given no further notice, whatever this run finds.
    >>> register_note("mandated", recorded={"connected": 0, "exempt": 0}) is None
    True
    """
    if recorded is not None:
        return _register_counts(status, recorded.get("connected", 0), recorded.get("exempt", 0))
    notice = register_record(notices)
    if status != "mandated" or notice is None:
        return None
    if notice["status"] == "exempt":
        return (
            f"The notice register records this parcel exempt (notice {notice['notice_id']}): it is given no further "
            "notice, whatever this run finds."
        )
    which = (
        f"connected on {town_date(notice['issued_date'], fmt)}, recorded without a notice ({notice['notice_id']})"
        if notice.get("notice_type") == "record"
        else f"connected (notice {notice['notice_id']})"
    )
    return (
        f"The notice register records this parcel {which}; this run did not read the register, so it still finds the "
        f"parcel must connect: to show it connected, {READ_CONNECTED}."
    )


def _register_counts(status: str | None, connected: int, exempt: int) -> str | None:
    if status != "mandated" or not (connected or exempt):
        return None
    start = "The notice register records "
    if not connected:
        they = "it is" if exempt == 1 else "they are"
        return f"{start}{exempt:,} of these parcels exempt: {they} given no further notice, whatever this run finds."
    them = "it" if connected == 1 and not exempt else "them"
    also = f" and {exempt:,} exempt" if exempt else ""
    which = "the connected ones" if exempt else them
    exempt_note = " (an exempt parcel is given no further notice, whatever this run finds)" if exempt else ""
    return (
        f"{start}{connected:,} of these parcels connected{also}; this run did not read the register, so it still "
        f"counts {them} as must connect: to show {which} connected, {READ_CONNECTED}{exempt_note}."
    )


# -- the network report's head ------------------------------------------------------------------------------------

_LISTED = 12  # outfall nodes named in one sentence; a storm model may have dozens
_PIECES_LISTED = 8


def _names(values: list[str], limit: int = _LISTED) -> str:
    more = len(values) - limit
    return ", ".join(values[:limit]) + (f" and {more:,} more" if more > 0 else "")


def _end_words(end: NetworkEnd) -> str:
    """One place the sewer ends: the plant it is the inlet of, or what the data calls the node."""
    if end.plant:
        return f"{end.plant} ({end.node})"
    return f"{'plant inlet' if end.structure == 'plant' else 'outfall'} {end.node}"


def _plant_words(name: str, ends: list[NetworkEnd]) -> str:
    nodes = [end.node for end in ends]
    pieces = len({end.piece for end in ends})
    if len(nodes) == 1:
        return f"{name} at {nodes[0]}"
    if pieces == len(nodes):
        return f"{name}, reached from {pieces:,} separate pieces of the network (outfall nodes {_names(nodes)})"
    return (
        f"{name}, reached at {len(nodes):,} outfall nodes ({_names(nodes)}) in {count(pieces, 'piece')} of the network"
    )


def network_outline(outline: NetworkOutline, *, snap_ft: float | None = None) -> list[str]:
    """The head of a network report in sentences: what it holds, where the sewer ends, and its separate pieces.

    An outfall node is where the data ends the sewer; an engineer counts treatment plants. One plant joined to three
    pieces of the network is said as one plant reached from three pieces, and each piece is named with its mains,
    so a gap in the data (a missing main) that split one sewer shows. ``snap_ft`` is the snap tolerance the pieces
    were joined with (GIS layers; a model's pieces are its own).

    Examples
    --------
    >>> from analysis.network_checks import NetworkEnd, NetworkOutline, Piece
    >>> ends = (NetworkEnd("J-10", "Manchester", "", 1), NetworkEnd("J-9", "Manchester", "", 4))
    >>> pieces = (Piece(300, 24000.0, ends[:1]), Piece(1, 733.0, ends[1:]), Piece(2, 325.0, ()))
    >>> outline = NetworkOutline(303, 300, 2, (("inferred", 303),), ends, pieces, explicit=False)
    >>> for line in network_outline(outline, snap_ft=2):
    ...     print(line)
    303 mains, 300 manholes, 2 junctions. Direction from: inferred 303.
    1 treatment plant: Manchester, reached from 2 separate pieces of the network (outfall nodes J-10, J-9).
    The mains are in 3 separate pieces of the network, not connected to each other: 300 mains (24,000 ft) ending at
    Manchester (J-10); 1 main (733 ft) ending at Manchester (J-9); 2 mains (325 ft) reaching no treatment plant or
    outfall. If the sewer is one system, a gap in the data split it (a main missing, or main ends more than 2 ft
    apart, the snap tolerance (network.snap_tolerance_ft)): look where each piece ends (disconnected_piece).
    >>> model = NetworkOutline(9, 8, 0, (), (NetworkEnd("O1", "", "outfall", 0), NetworkEnd("O2", "", "outfall", 0)),
    ...                        (Piece(9, 900.0, ()),), explicit=True)
    >>> network_outline(model)[1:]
    ['2 outfalls: O1, O2.', 'The mains are one connected piece of the network.']
    """
    head = (
        f"{count(outline.mains, 'main')}, {count(outline.manholes, 'manhole')}{_wet_well_words(outline.wet_wells)}, "
        f"{count(outline.junctions, 'junction')}."
    )
    if outline.directions:
        head += " Direction from: " + ", ".join(f"{k} {v:,}" for k, v in outline.directions) + "."
    if outline.invert_ends:
        head += " Inverts at their ends by: " + ", ".join(f"{k} {v:,}" for k, v in outline.invert_ends) + "."
    lines = [head]

    plants = outline.plants()
    others = outline.outfalls()
    inlets = [end.node for end in others if end.structure == "plant"]
    outfalls = [end.node for end in others if end.structure != "plant"]
    ends = []
    if plants:
        ends.append(
            f"{count(len(plants), 'treatment plant')}: "
            + "; ".join(_plant_words(name, found) for name, found in plants.items())
            + "."
        )
    if inlets:
        ends.append(f"{count(len(inlets), 'plant inlet')} named by the manholes layer: {_names(inlets)}.")
    if outfalls:
        ends.append(f"{count(len(outfalls), 'outfall')}: {_names(outfalls)}.")
    if outline.pieces:
        lines.append(
            " ".join(ends) or "No treatment plant or outfall is on the network: no flow reaches one (no_outfall)."
        )

    if len(outline.pieces) == 1:
        lines.append("The mains are one connected piece of the network.")
    elif len(outline.pieces) > 1:
        described = [
            f"{count(p.mains, 'main')} ({p.length_ft:,.0f} ft) "
            + (
                "ending at " + ", ".join(map(_end_words, p.ends))
                if p.ends
                else "reaching no treatment plant or outfall"
            )
            for p in outline.pieces[:_PIECES_LISTED]
        ]
        rest = outline.pieces[_PIECES_LISTED:]
        if rest:
            described.append(f"and {len(rest):,} smaller pieces ({count(sum(p.mains for p in rest), 'main')})")
        apart = f"{snap_ft:g} ft apart, the snap tolerance" if snap_ft is not None else "the snap tolerance apart"
        gap = (
            "a link missing from the model"
            if outline.explicit
            else f"a main missing, or main ends more than {apart} (network.snap_tolerance_ft)"
        )
        lines.append(
            f"The mains are in {len(outline.pieces):,} separate pieces of the network, not connected to each other: "
            + "; ".join(described)
            + f". If the sewer is one system, a gap in the data split it ({gap}): look where each piece ends "
            "(disconnected_piece)."
        )
    return lines


def _wet_well_words(wet_wells: tuple[tuple[str, str], ...]) -> str:
    """The wet wells and tanks (storage units, and junctions a pump draws from) the manhole count leaves out, after
    it: an engineer counting the model's nodes finds them there, not a manhole count short by them. '' for none.

    Examples
    --------
    >>> _wet_well_words((("SU1", "pump"),))
    ' (not counting 1 wet well or tank the flow leaves by a pump, SU1: not a manhole)'
    >>> print(_wet_well_words((("S1", "orifice"), ("S2", "weir"), ("S3", "orifice")))[1:])
    (not counting 3 wet wells or tanks the flow leaves by an orifice or weir, S1, S2, S3: not manholes)
    """
    if not wet_wells:
        return ""
    kinds = list(dict.fromkeys(kind for _, kind in wet_wells))
    by = ", ".join(kinds[:-1]) + " or " + kinds[-1] if len(kinds) > 1 else kinds[0]
    by = ("an " if by[0] in "aeiou" else "a ") + by
    # A model's storage unit, or its junction a pump draws from (written as a junction, a pump's wet well all the same)
    what = "1 wet well or tank" if len(wet_wells) == 1 else f"{len(wet_wells):,} wet wells or tanks"
    return (
        f" (not counting {what} the flow leaves by {by}, {_names([node for node, _ in wet_wells])}: "
        f"{'not a manhole' if len(wet_wells) == 1 else 'not manholes'})"
    )


def measured_in(crs: str | None) -> str | None:
    """A measuring CRS given for the data (an upload's "Measuring CRS", a run's --crs), as the map's run line and the
    Data page name it: its code and its name; None where none was given (the profile's own, New York East).

    Examples
    --------
    >>> measured_in("EPSG:32632"), measured_in(None)
    ('EPSG:32632 (WGS 84 / UTM zone 32N)', None)
    """
    if not crs:
        return None
    from layers.crs import parse_crs
    from layers.errors import LayerError

    try:
        name = parse_crs(crs, what="the measuring CRS").name
    except LayerError:  # a record naming a CRS this PROJ does not know: its code alone
        return crs
    return f"{crs} ({name})" if name and name != crs else crs


def unanalysed_profile_note(profile: str, settings: dict | None, *, checked: bool) -> str:
    """Which profile a run of a store never analysed applies, as the map's run line and the Data page say it:
    the one its layers were checked under on the Data page (``checked``, kept with them, published with them), with
    the values set on it, else the default the run form starts from.

    Examples
    --------
    >>> unanalysed_profile_note("poughkeepsie", {}, checked=True)
    'A run applies the profile poughkeepsie, the one its layers were checked under.'
    >>> unanalysed_profile_note("wappinger", {"mandate.distance_ft": "200"}, checked=True)
    'A run applies the profile wappinger with mandate.distance_ft=200 (value set by the user), the one its layers were checked under.'
    >>> unanalysed_profile_note("fort-plain", {}, checked=False)
    'No profile was chosen for this data: a run applies fort-plain, the default, unless another is chosen.'
    """  # noqa: E501
    if not checked:
        return f"No profile was chosen for this data: a run applies {profile}, the default, unless another is chosen."
    values = settings_text(settings)
    named = f"{profile} with {values}" if values else profile
    return f"A run applies the profile {named}, the one its layers were checked under."


def measuring_crs_note(town: str, suggested: tuple[str, str] | None) -> str:
    """What the column-mapping page says under its "Measuring CRS" field: what the field is, the town's CRS used when
    it is left empty, and, for data lying outside where that is used, the CRS filled in (``suggested``: its code and
    name, the UTM zone where the data lies, as ``layers.crs.suggested_measuring_crs`` gives it and as the command
    line's refusal suggests it for ``--crs``).

    Examples
    --------
    >>> measuring_crs_note("NAD83 / New York East (ftUS)", None)
    'The projected CRS distances are measured in; left empty, NAD83 / New York East (ftUS).'
    >>> measuring_crs_note("NAD83 / New York East (ftUS)", ("EPSG:32632", "WGS 84 / UTM zone 32N"))
    'The projected CRS distances are measured in. The data lies outside where NAD83 / New York East (ftUS) is used, ...'
    """
    if suggested is None:
        return f"The projected CRS distances are measured in; left empty, {town}."
    code, name = suggested
    return (
        f"The projected CRS distances are measured in. The data lies outside where {town} is used, so distances "
        f"measured in it would be distorted: {code} ({name}), the UTM zone where the data lies, is filled in. Keep "
        "it, or give the CRS your office measures in there."
    )


def written_words(path: str, layers: list[str], lead: str = "Results written to") -> str:
    """Where a command wrote its results, as the user finds them: a GeoPackage's layers by name, a GeoParquet
    file's sibling files, a CSV with the ``.csvt`` beside it (``layers.write.column_types_path``: every CSV an
    ``--out`` writes has one), a GeoJSON file alone (its one layer is the file: "(r)" after r.csv said nothing).
    ``lead`` names what was written ("Plan exported to", "Report written to").

    Examples
    --------
    >>> written_words("out/r.csv", ["r"])
    'Results written to out/r.csv, with r.csvt beside it (the type of each column, so QGIS keeps ZIP codes as text).'
    >>> written_words("p.parquet", ["p", "p.proposed_manholes"], lead="Plan exported to")
    'Plan exported to p.parquet, with p.proposed_manholes.parquet beside it.'
    """
    suffix = Path(str(path)).suffix.lower()
    if suffix == ".gpkg":
        return f"{lead} {path} (layer{'s' if len(layers) > 1 else ''} {', '.join(layers)})."
    if suffix == ".parquet" and len(layers) > 1:
        beside = ", ".join(f"{name}.parquet" for name in layers[1:])
        return f"{lead} {path}, with {beside} beside it."
    if suffix == ".csv":
        types = column_types_path(path).name
        return f"{lead} {path}, with {types} beside it (the type of each column, so QGIS keeps ZIP codes as text)."
    return f"{lead} {path}."


def weekend_words(summary: dict) -> str | None:
    """Where the run's deadline falls on a Saturday, a Sunday or a New York public holiday, the sentence that says so,
    as `notices preview` says it: the run's deadline column and map gave a Sunday with no word (a tester)."""
    flag = deadline_flag(dt.date.fromisoformat(summary["deadline"]) if summary.get("deadline") else None)
    if not flag:
        return None
    return (
        f"The deadline {summary['deadline']} falls on a {flag}: the town decides whether to give a later date "
        "(General Construction Law § 25-a lets an act due then be done the next business day)."
    )


def run_warnings(summary: dict) -> list[str]:
    """The warnings a run's summary prints, for `--json` too (it carried neither; a tester)."""
    said = (
        none_in_reach_words(summary),
        unmapped_area_words(summary.get("area_unmapped"), (summary.get("counts") or {}).get("mandated")),
        weekend_words(summary),
        zero_flow_words((summary.get("duties") or {}).get("zero_flow_found_occupied")),
    )
    return [w for w in said if w]


def zero_flow_words(found: dict | None) -> str | None:
    """The warning of parcels the analysis found occupied (a building on the lot, or its property class) whose
    ``flow_gpd`` is 0 (``analysis.flows.zero_flows_found_occupied``): the first five IDs and the count, and what to
    do, in the words of loading's ``zero_flow`` problem, which warns of a 0 on a lot the parcels layer itself marks
    occupied or gives living units. Such a lot is known to be occupied only after the analysis, and its 0 was
    counted as sending nothing without a word. ``analyze`` (its text, ``--json``, the Summary page), ``duties``,
    ``trace --upstream`` and ``plan`` say it.

    Examples
    --------
    >>> print(zero_flow_words({"parcels": 1, "parcel_ids": ["A"]}))
    Warning: column flow_gpd of the parcels is 0 for 1 parcel the analysis found occupied by a building on it or
    by its property class (A), so it counts as sending nothing to the sewer ...
    """
    if not found or not found.get("parcels"):
        return None
    n, ids = int(found["parcels"]), [str(i) for i in found.get("parcel_ids") or ()]
    shown = ", ".join(ids[:5]) + (f" and {n - 5:,} more" if n > 5 else "")
    return (
        f"Warning: column flow_gpd of the parcels is 0 for {n:,} parcel{'' if n == 1 else 's'} the analysis found "
        f"occupied by a building on {'it' if n == 1 else 'them'} or by {'its' if n == 1 else 'their'} property "
        f"class ({shown}), so {'it counts' if n == 1 else 'each counts'} as sending nothing to the sewer and every "
        "other parcel's share of the system's flow comes out larger; a 0 there is most likely a flow nobody read, "
        "written as zero. Leave the cell empty where the flow is not known (the parcel's living units times the "
        "gallons per day per unit are used then, and without living units its flow is counted as not known rather "
        "than as nothing); keep 0 only where the parcel truly sends nothing."
    )


# A quote short enough to say inside the warning; a longer one (Wappinger's § 196-17A) is named by its section.
_QUOTED_AT_MOST = 80


def unmapped_area_words(area: dict | None, mandated: int | None = None) -> str | None:
    """The warning where the law binds only an area and no service area showed which parcels lie in it
    (``analysis.areas.unmapped_area``): every parcel was taken to lie inside, so a run mandated, and letters would
    quote "situated within the area" to, owners the law may not bind, without a word (a tester). ``mandated``: the
    parcels the run found mandated, said where given. The run (its text, ``--json``, the Summary page) and the notices
    preview and issue (command line and notices page) say it.

    Examples
    --------
    >>> area = {"area": "the Fourth Ward Sewer Improvement Area", "section": "§ 168-22.2G",
    ...         "quote": "situated within the area"}
    >>> print(unmapped_area_words(area, 9))
    Warning: the law binds only property within the Fourth Ward Sewer Improvement Area (§ 168-22.2G: "situated
    within the area"), and no service area was given, so every parcel in the data was taken to lie inside it: the 9
    parcels found mandated include any that lie outside. ...
    """
    if not area:
        return None
    quote = area.get("quote") or ""
    cited = f'{area["section"]}: "{quote}"' if quote and len(quote) <= _QUOTED_AT_MOST else area["section"]
    which = (
        f"the {mandated:,} parcel{'s' if mandated != 1 else ''} found mandated include any that lie outside"
        if mandated is not None
        else "a notice may go to an owner outside it"
    )
    return (
        f"Warning: the law binds only property within {area['area']} ({cited}), and no service area was given, so "
        f"every parcel in the data was taken to lie inside it: {which}. Give the area as a service_areas layer "
        "(a parcel outside it, or only in a part of it whose mandates attribute is no, is then not mandated), or "
        "load only the parcels inside it, before notices go out."
    )


def none_in_reach_words(summary: dict) -> str | None:
    """A warning where no parcel lies within the distance: how near the nearest came, and what to check. Parcels
    drawn five miles from their mains (a wrong CRS within the ten miles the layer check allows) were all
    "out_of_range" without a word (a tester).

    Examples
    --------
    >>> print(none_in_reach_words({"parcels": 381, "distance_ft": 100.0, "nearest_main_ft": 26_412.5}))
    Warning: none of the 381 parcels lies within 100 ft of a public sewer main; the nearest lies 26,412.5 ft away. If
    the town has sewered streets, check that the parcels and mains are drawn in the CRSs they declare.
    """
    parcels, nearest, limit = summary.get("parcels") or 0, summary.get("nearest_main_ft"), summary.get("distance_ft")
    if not parcels or nearest is None or limit is None or nearest <= limit + 0.01:  # the measuring tolerance
        return None
    return (
        f"Warning: {'the one parcel does not lie' if parcels == 1 else f'none of the {parcels:,} parcels lies'} "
        f"within {summary['distance_ft']:g} ft of a public sewer main; "
        f"the nearest lies {nearest:,.1f} ft away. If the town has sewered streets, check that the parcels and mains "
        "are drawn in the CRSs they declare."
    )


def letters_written(doc: dict) -> str:
    """The letters a batch wrote: the owners', and the copies to the occupant at the site beside them (with
    ``--occupant``, or "copies to the occupant" on the notices page: "8 notice(s) issued ... in 8 letter(s)" above 9
    files left the copy uncounted; a tester). The command line and the notices page say it alike.

    Examples
    --------
    >>> letters_written({"letters": ["a.pdf", "b.pdf"], "occupant_letters": 1})
    '2 letter(s) to the owners and 1 copy(ies) to the occupant at the site, 3 letter(s) in all'
    >>> letters_written({"letters": ["a.pdf"], "occupant_letters": 0})
    '1 letter(s)'
    """
    return letter_count_words(len(doc["letters"]), int(doc.get("occupant_letters") or 0))


def letter_count_words(owners: int, copies: int) -> str:
    """Letters to the owners and copies to the occupant at the site, and the letters in all: as a batch wrote them
    (``letters_written``) and as a preview's Confirm button says it will write them.

    Examples
    --------
    >>> letter_count_words(516, 146)
    '516 letter(s) to the owners and 146 copy(ies) to the occupant at the site, 662 letter(s) in all'
    """
    if not copies:
        return f"{owners} letter(s)"
    return (
        f"{owners} letter(s) to the owners and {copies} copy(ies) to the occupant at the site, "
        f"{owners + copies} letter(s) in all"
    )


def file_words(location: str | Path) -> str:
    """A register's or store's location as a web page names it: a file's name, never the server's folders (a
    viewer was shown ``/srv/sewerplan/instance/sewerplan.gpkg``); a database's schema, or "its database".

    Examples
    --------
    >>> [file_words(p) for p in ("/srv/town/instance/sewerplan.gpkg", "sqlite:////srv/town/register.sqlite")]
    ['sewerplan.gpkg', 'register.sqlite']
    >>> file_words("postgresql://town@db.example/gis#fort_plain")
    'fort_plain'
    """
    from layers.errors import split_fragment

    text = str(location)
    if text.startswith("sqlite:///"):
        text = text.removeprefix("sqlite:///")
    elif "://" in text:
        return split_fragment(text)[1] or "its database"
    return Path(text).name or text


def without_folders(text: str, locations: list[str]) -> str:
    """``text`` (a message the command line gives whole) with each of ``locations`` named by ``file_words``, longest
    first, so a page tells web users no folder of the server. A location given as a path is replaced as well in the
    ``sqlite:///`` form a register's URL has.

    Examples
    --------
    >>> without_folders("No register for /srv/t/town.gpkg: sqlite:////srv/t/town-register.sqlite exists.",
    ...                 ["/srv/t/town.gpkg", "/srv/t/town-register.sqlite"])
    'No register for town.gpkg: town-register.sqlite exists.'
    """
    forms = {str(p) for p in locations if p}
    forms |= {f"sqlite:///{p}" for p in forms if "://" not in p}
    for place in sorted(forms, key=len, reverse=True):
        text = text.replace(place, file_words(place))
    return text


def register_clash_words(store: str, named: str, recorded: str, named_by: str, *, web: bool) -> str:
    """Why a register named is refused beside the store's own (``layers.register.RegisterClashError``), and what to
    do, in two sentences: on the command line by its flag or SEWERPLAN_DATABASE_URL, with full paths; on the web by
    the server's setting, each file by its name (two of one name told apart), for whoever runs the server.

    ``named`` and ``recorded`` are the registers' URLs without passwords; ``named_by`` ``"given"`` or
    ``"environment"``. Moving the store to another register is a change of the store's record, which no command
    makes: said as the table and key to change (docs/notices.md gives the statements).

    Examples
    --------
    >>> print(register_clash_words("/srv/t/town.gpkg", "sqlite:////old/register.sqlite",
    ...                            "sqlite:////srv/t/town-register.sqlite", "given", web=True))
    The store town.gpkg already keeps its notices in the register town-register.sqlite, but this server's
    REGISTER setting names register.sqlite: notices issued from both would give the same owners second notices with
    other deadlines and split the town's record between two registers, so neither is used. Ask whoever runs the
    server to set REGISTER in instance/config.py to the store's register, or to remove it, and to restart sewerplan;
    if the town really moved its register to register.sqlite, they record that one in the store instead (the value
    of the key register in the store's sewerplan_settings table).
    """
    env = named_by == "environment"
    if web:
        shown, kept = (file_words(u) if u.startswith("sqlite:///") else u for u in (named, recorded))
        if shown == kept:  # two files of one name: the page names no folder, so it says they are two
            shown = f"another {shown}, in another folder"
        where = "this server's " + ("SEWERPLAN_DATABASE_URL" if env else "REGISTER setting")
        store_name = file_words(store)
    else:
        # an SQLite register by its path, as --register takes it
        shown, kept = (u.removeprefix("sqlite:///") for u in (named, recorded))
        store_name = store
        where = "SEWERPLAN_DATABASE_URL" if env else "--register"
    said = (
        f"The store {store_name} already keeps its notices in the register {kept}, but {where} names {shown}: notices "
        "issued from both would give the same owners second notices with other deadlines and split the town's record "
        "between two registers, so neither is used."
    )
    moved = f"if the town really moved its register to {shown}, "
    table = "(the value of the key register in the store's sewerplan_settings table)"
    if web:
        setting = (
            "to set SEWERPLAN_DATABASE_URL in the server's environment to the store's register, or to unset it"
            if env
            else "to set REGISTER in instance/config.py to the store's register, or to remove it"
        )
        return (
            f"{said} Ask whoever runs the server {setting}, and to restart sewerplan; {moved}they record that one in "
            f"the store instead {table}."
        )
    fix = (
        f"Unset SEWERPLAN_DATABASE_URL (the store's register is found without it) or set it to {kept}"
        if env
        else f"Leave out --register (the store's register is found without it) or give --register {kept}"
    )
    return f"{said} {fix}; {moved}record that one in the store first {table}."


def not_yet_overdue(moved: list[dict]) -> str:
    """What ``violations`` says of the notices whose deadline fell on a weekend or public holiday (``deadline``,
    ``runs_to``): not yet overdue, on the notices page and the command line alike."""
    days = sorted({f"{m['deadline']} runs to {m['runs_to']}" for m in moved})
    return (
        f"Not yet overdue: {len(moved)} notice(s) whose deadline fell on a weekend or public holiday may still be "
        f"met on the next business day (General Construction Law § 25-a): {'; '.join(days[:6])}."
    )
