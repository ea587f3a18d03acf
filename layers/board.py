"""The board's documents for a planned extension: a few-page PDF, and the side-by-side comparison as CSV.

The PDF (US letter) holds what a village board votes on: a map (the new main and its manholes, the connecting main,
the part drawn past the manhole it joins and not laid, newly mandated parcels and benefiting vacant lots coloured,
street names, existing mains, a scale bar and a north arrow), a summary, the design checks with their sections and
one verdict each, the requirements the contractor must meet, the exfiltration test sections with their allowances,
the path downstream with its capacity, the petition (owners, parcels, addresses, signatures needed) and the cost
split table (every parcel, its share by each method, totals that add up to the cent). Every page carries the date,
the preparer and the profile with its version. Both files appear whole or not at all
(``layers.atomic.written_whole``).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from xml.sax.saxutils import escape

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely
from reportlab.lib import colors
from reportlab.lib.pagesizes import LETTER
from reportlab.lib.styles import ParagraphStyle, getSampleStyleSheet
from reportlab.lib.units import inch
from reportlab.pdfgen import canvas as pdfcanvas
from reportlab.platypus import Flowable, Paragraph, SimpleDocTemplate, Spacer, Table, TableStyle

from analysis.notices import long_date
from analysis.plans import existing_mains_words, not_laid_parts
from analysis.profiles import Profile, bracketed, flagged
from analysis.units import feet_per_unit
from layers.atomic import folder_for, written_whole
from layers.errors import LayerError
from layers.fonts import BOLD, REGULAR
from layers.mapsheet import draw_street_names

NEW_MAIN = colors.HexColor("#1f78b4")
NEWLY = colors.HexColor("#fb9a99")
NEWLY_EDGE = colors.HexColor("#e31a1c")
VACANT = colors.HexColor("#fdbf6f")
VACANT_EDGE = colors.HexColor("#ff7f00")
STREET = colors.HexColor("#e8e8e8")
# As on the web map's plan: a red ring where the main meets an existing main, private parcels crossed outlined purple.
CROSSING = colors.HexColor("#e31a1c")
EASEMENT = colors.HexColor("#6a3d9a")
NOT_LAID = colors.HexColor("#777777")  # the part drawn past the manhole the main joins, grey and dotted as on the web
MARGIN = 0.7 * inch


def check_pdf_path(path: str | Path) -> None:
    """Refuse to write the board's PDF over anything but a .pdf: ``--pdf town.gpkg`` (a slip of tab completion)
    replaced the town's store with the PDF, without a word."""
    _check_suffix(path, ".pdf", "The board's PDF")


def _check_suffix(path: str | Path, suffix: str, what: str) -> None:
    name = Path(path).name
    if Path(path).suffix.lower() != suffix:
        there = f"; {name} is there and would be replaced" if Path(path).exists() else ""
        raise LayerError(
            f"{what} is written to a file ending in {suffix}, not {name}{there}: give a name such as "
            f"{Path(name).stem or 'plan'}{suffix}."
        )


def write_plan_summary(
    path: str | Path,
    name: str,
    plan: dict,
    *,
    profile: Profile,
    line,
    parcels: gpd.GeoDataFrame | None = None,
    streets: gpd.GeoDataFrame | None = None,
    mains: gpd.GeoDataFrame | None = None,
    manholes: gpd.GeoDataFrame | None = None,
    preparer: str | None = None,
    today: dt.date | None = None,
) -> str:
    """Write the board's PDF for one plan (the document ``sewerplan plan --json`` prints) and return its path.

    ``line`` is the drawn main and the layers are the town's, all in the plan's CRS; they are used for the map
    only (the parcels named in ``plan`` are coloured).
    """
    check_pdf_path(path)
    folder_for(path)
    day = today or dt.date.today()
    who = preparer or "(preparer not given)"
    styles = _styles()
    footer = (
        f"{profile.municipality}: proposed sewer extension {name}",
        f"Prepared {long_date(day)} by {who}; profile {plan.get('profile', profile.id)} "
        f"version {plan.get('profile_version', profile.version)}",
    )
    width = LETTER[0] - 2 * MARGIN
    story = [
        Paragraph(f"Proposed sewer extension: {escape(name)}", styles["Title"]),
        Paragraph(escape(f"{profile.municipality}. {profile.law}."), styles["Small"]),
        Paragraph(
            escape(
                f"Prepared {long_date(day)} by {who}, with sewerplan and the {plan.get('profile', profile.id)} "
                f"ordinance profile, version {plan.get('profile_version', profile.version)}"
                + (
                    " (values set by the user: "
                    + ", ".join(f"{k} = {v}" for k, v in plan["profile_overrides"].items())
                    + ")"
                    if plan.get("profile_overrides")
                    else ""
                )
                + ". Costs are planning-level estimates; the split among owners is for the Board to decide."
            ),
            styles["Small"],
        ),
        Spacer(1, 6),
        *[Paragraph(escape(text), styles["Bullet"], bulletText="-") for text in summary_lines(plan)],
        Spacer(1, 6),
        PlanMap(width, 4.6 * inch, plan, line=line, parcels=parcels, streets=streets, mains=mains, manholes=manholes),
        Paragraph(
            "Map: the proposed main (blue; dashed: the connecting main), its manholes (white: new, black: existing), "
            + (f"{_not_laid_where(not_laid_parts(plan))} and not laid (grey dotted), " if not_laid_parts(plan) else "")
            + "parcels newly required to connect (red), vacant lots that benefit (orange), existing sewer mains "
            "(dark grey), street names"
            + (", where the main crosses an existing main (red rings)" if plan.get("main_crossings") else "")
            + (
                ", private parcels it crosses (purple dashed outline: easements needed)"
                if plan.get("easements")
                else ""
            )
            + ". Scale bar in feet; north is up.",
            styles["Small"],
        ),
    ]
    story += _checks_part(plan, styles, width)
    story += _sections_part(plan, styles, width)
    story += _downstream_part(plan, styles, width)
    story += _petition_part(plan, styles, width)
    story += _cost_part(plan, styles, width)
    with written_whole(path) as where:  # the board never gets half a PDF (``layers.atomic``)
        doc = SimpleDocTemplate(
            str(where),
            pagesize=LETTER,
            leftMargin=MARGIN,
            rightMargin=MARGIN,
            topMargin=MARGIN,
            bottomMargin=MARGIN,
            title=f"Sewer extension: {name}",
            author=who,
            subject=f"{profile.municipality}: proposed sewer extension",
            initialFontName=REGULAR,  # no Helvetica in the PDF: it cannot print every owner's name
        )
        doc.build(story, canvasmaker=_numbered(footer))
    return str(path)


# A split by frontage where no benefiting parcel has any falls back to equal shares (allocate_cents): a column headed
# "by frontage" that is the split by parcel, with nothing to say so, for a main in no street the parcels front on.
NO_FRONTAGE = (
    "No benefiting parcel fronts on the streets the main serves (or on the main, where it lies in no street), so the "
    "split by frontage is the same as the split by parcel."
)


def _no_frontage(plan: dict) -> bool:
    rows = [p for p in plan.get("parcels", []) if p.get("benefits")]
    return bool(rows) and not any(p.get("frontage_ft") for p in rows)


def _not_laid_where(parts: list[dict]) -> str:
    """Where the parts not laid were drawn, for the map's caption: past the manhole, or over an existing main."""
    where = [f"over {p['along']}" if p.get("along") else f"past {p['beyond_manhole']}" for p in parts]
    return f"the part drawn {where[0]}" if len(where) == 1 else f"the parts drawn {' and '.join(where)}"


def not_laid_sentence(beyond: dict) -> str:
    """What of the drawn main is not laid, a part of ``not_laid_parts``: the summary's sentence, and the export's."""
    if beyond.get("along"):  # drawn over an existing main to the manhole it joins
        return (
            f"Not laid: the {beyond['length_words']} drawn {beyond['direction']} of {beyond['beyond_manhole']} over "
            f"{existing_mains_words(beyond['along'])}, which {'are' if ', ' in beyond['along'] else 'is'} there "
            "already."
        )
    # a main drawn on past the manhole it passes through (analysis.plans._laid_from_manhole)
    return (
        f"Not laid: the {beyond['length_words']} drawn {beyond['direction']} of {beyond['beyond_manhole']}, "
        "a second main draining into it, to plan on its own."
    )


def beyond_parcels_sentence(feet: float) -> str:
    """What the plan does not know of a main reaching beyond the town's parcels (``beyond_parcels_ft``)."""
    return (
        f"Beyond the town's parcels: {feet:,.0f} ft of the main lie farther from them than a parcel can be reached "
        "from (across the town line, or past where the parcels layer stops): no parcel there is in the data, so who "
        "the main would reach there, and their part of the petition and the cost, are not in this plan."
    )


def summary_lines(plan: dict) -> list[str]:
    """The plan in a few sentences, as the PDF's summary and the CLI print it."""
    lines = []
    run = plan.get("connecting_main")
    holes = plan["manholes"]
    new = sum(1 for m in holes if not m.get("existing"))
    material = f" {plan['material']}" if plan.get("material") else ""
    lines.append(
        f"{plan['length_ft']:,.0f} ft of {plan['diameter_in']:g}-inch{material} main"
        + (
            f" ({plan['drawn_length_ft']:,.0f} ft drawn and a {run['length_ft']:,.0f} ft connecting main)"
            if run
            else ""
        )
        + f", {new} new manhole{'s' if new != 1 else ''}"
        + (
            f" (it joins existing manhole {', '.join(m['id'] for m in holes if m.get('existing'))})"
            if any(m.get("existing") for m in holes)
            else ""
        )
        + "."
    )
    lines += [
        not_laid_sentence(beyond) for beyond in not_laid_parts(plan)
    ]  # each, a main drawn over mains at both ends
    if (plan.get("beyond_parcels_ft") or 0) >= 1:  # across the town line, or past where the parcels layer stops
        lines.append(beyond_parcels_sentence(plan["beyond_parcels_ft"]))
    newly = plan["newly_mandated"]
    vacant = plan.get("vacant_benefiting", [])
    units = plan.get("flow", {}).get("units", plan.get("units"))
    unknown = plan.get("flow", {}).get("units_unknown", [])
    lines.append(
        f"Newly required to connect: {len(newly)} parcel{'s' if len(newly) != 1 else ''} ({units:g} living units"
        + (f"; units unknown for {len(unknown)}" if unknown else "")
        + f"); {len(plan['private_systems'])} septic or other private systems to be abandoned."
    )
    if vacant:
        lines.append(f"Vacant lots on the new main that benefit and share the cost: {len(vacant)}.")
    if plan.get("made_available"):
        lines.append(
            f"In areas held on private systems until sewer is available (Phase III): {len(plan['made_available'])} "
            "parcels, made available by this main."
        )
    if plan["held_by_service_area"]:
        lines.append(f"Outside every service area, so not required to connect: {len(plan['held_by_service_area'])}.")
    pet = plan["petition"]
    if pet["applies"] and not pet["benefiting_owners"]:
        # "0 benefiting owners; a majority is 0 signatures" read as a petition already carried
        lines.append(f"Petition {bracketed(pet['section'])}: no owner benefits, so there is no petition to sign.")
    elif pet["applies"]:
        lines.append(
            f"Petition {bracketed(pet['section'])}: {pet['benefiting_owners']} benefiting owners; a majority is "
            f"{pet['signatures_needed']} signatures."
        )
    cost = plan["cost"]
    per_unit = cost["total"] / units if units else None
    lines.append(
        f"Estimated cost ${cost['total']:,.2f}"
        + (f", ${per_unit:,.0f} per newly connected living unit" if per_unit else "")
        + "."
    )
    if _no_frontage(plan):
        lines.append(NO_FRONTAGE)
    verdicts = [c for c in plan["design_checks"] if c.get("verdict", "meets") != "meets"]
    lines.append(
        "Design checks: all met."
        if not verdicts
        else "Design checks not met or open: "
        + "; ".join(f"{c['check'].replace('_', ' ')} ({c.get('verdict')})" for c in verdicts)
        + "."
    )
    return lines


# -- tables ----------------------------------------------------------------------------------------------------


def _styles() -> dict:
    base = getSampleStyleSheet()
    return {
        "Title": ParagraphStyle(
            "T", parent=base["Title"], fontName=BOLD, fontSize=16, leading=19, alignment=0, spaceAfter=4
        ),
        "H": ParagraphStyle(
            "H", parent=base["Heading2"], fontName=BOLD, fontSize=12, leading=15, spaceBefore=10, spaceAfter=4
        ),
        "Body": ParagraphStyle("B", parent=base["BodyText"], fontName=REGULAR, fontSize=9, leading=11.5),
        "Small": ParagraphStyle("S", parent=base["BodyText"], fontName=REGULAR, fontSize=8, leading=10),
        "Cell": ParagraphStyle("C", parent=base["BodyText"], fontName=REGULAR, fontSize=7.5, leading=9),
        "Bullet": ParagraphStyle(
            "L",
            parent=base["BodyText"],
            fontName=REGULAR,
            bulletFontName=REGULAR,
            fontSize=9,
            leading=11.5,
            leftIndent=10,
        ),
    }


def _table(rows: list[list], widths: list[float], styles: dict, *, numeric: tuple[int, ...] = (), total=False):
    cells = [[Paragraph(escape(str(c)), styles["Cell"]) if isinstance(c, str) else c for c in r] for r in rows]
    table = Table(cells, colWidths=widths, repeatRows=1)
    style = [
        ("FONT", (0, 0), (-1, -1), REGULAR, 7.5),
        ("BACKGROUND", (0, 0), (-1, 0), colors.HexColor("#eeeeee")),
        ("LINEBELOW", (0, 0), (-1, 0), 0.6, colors.black),
        ("LINEBELOW", (0, 1), (-1, -1), 0.25, colors.HexColor("#cccccc")),
        ("VALIGN", (0, 0), (-1, -1), "TOP"),
        ("TOPPADDING", (0, 0), (-1, -1), 2),
        ("BOTTOMPADDING", (0, 0), (-1, -1), 2),
    ]
    style += [("ALIGN", (c, 1), (c, -1), "RIGHT") for c in numeric]
    if total:
        style += [("LINEABOVE", (0, -1), (-1, -1), 0.6, colors.black)]
    table.setStyle(TableStyle(style))
    return table


def _money(value) -> str:
    return "" if value is None else f"${value:,.2f}"


def _checks_part(plan, styles, width) -> list:
    rows = [["Check", "Verdict", "Section", "Finding"]]
    for c in plan["design_checks"]:
        verdict = c.get("verdict") or ("meets" if c.get("passed") else "does not meet")
        # flagged: a scenario saved before citations took one bracket said "(value set by the user) (profile setting)"
        rows.append([c["check"].replace("_", " "), verdict, flagged(c["section"] or ""), c["message"]])
    part = [
        Paragraph("Design checks", styles["H"]),
        Paragraph(
            "Each check of the plan against the rule the profile holds, with one verdict: meets, does not meet, "
            "for the engineer (a judgement the law leaves to the village engineer or the Board), or not known "
            "(the data cannot tell).",
            styles["Small"],
        ),
        _table(rows, [0.95 * inch, 0.85 * inch, 0.95 * inch, width - 2.75 * inch], styles),
    ]
    reqs = plan.get("requirements", [])
    if reqs:
        rows = [["Requirement", "Section", "What the contractor must meet"]]
        rows += [[r["requirement"].replace("_", " "), flagged(r["section"] or ""), r["text"]] for r in reqs]
        part += [
            Paragraph("Requirements for construction", styles["H"]),
            Paragraph(
                "These are not results of the plan: they are limits the work must meet when built and tested.",
                styles["Small"],
            ),
            _table(rows, [1.1 * inch, 0.95 * inch, width - 2.05 * inch], styles),
        ]
    return part


def _sections_part(plan, styles, width) -> list:
    sections = plan.get("test_sections") or []
    if not sections:
        return []
    rows = [["Test section", "From manhole", "To manhole", "Length (ft)", "New manholes", "Allowance (gal/day)"]]
    rows += [
        [
            str(s["number"]) + (" (too long: add a manhole)" if s.get("too_long") else ""),
            s["from_manhole"],
            s["to_manhole"],
            f"{s['length_ft']:,.1f}",
            str(s["manholes"]),
            f"{s['allowance_gpd']:,.1f}",
        ]
        for s in sections
    ]
    rows.append(
        [
            "All sections",
            "",
            "",
            f"{sum(s['length_ft'] for s in sections):,.1f}",
            str(sum(s["manholes"] for s in sections)),
            f"{plan['exfiltration_allowance_gpd']:,.1f}",
        ]
    )
    w = width / 6
    return [
        Paragraph("Exfiltration test sections", styles["H"]),
        Paragraph(
            "Manhole to manhole from the connection upward, grouped up to the longest test length allowed; each "
            "new manhole is counted in one section, an existing manhole in none.",
            styles["Small"],
        ),
        _table(rows, [w] * 6, styles, numeric=(3, 4, 5), total=True),
    ]


def _slope_cell(row: dict) -> str:
    """A downstream main's slope as the table shows it: from its inverts, the profile's default (said so), or not
    applicable with the reason (a force main, a model's pump: no gravity slope; it showed the default slope)."""
    if row.get("slope") is None:
        return "n/a" + (f" ({row['slope_note']})" if row.get("slope_note") else "")
    return f"{row['slope']:.4f}" + (" (default)" if row["slope_source"] != "inverts" else "")


def _downstream_part(plan, styles, width) -> list:
    down = plan["downstream"]
    rows = [["Main", "Diameter (in)", "Slope", "Capacity (gpd)", "Present peak (gpd)", "Added peak (gpd)", "Verdict"]]
    for r in down.get("mains", []):
        rows.append(
            [
                r["main_id"],
                "unknown" if r["diameter_in"] is None else f"{r['diameter_in']:g}",
                _slope_cell(r),
                "unknown" if r["capacity_gpd"] is None else f"{r['capacity_gpd']:,}",
                f"{r['present_peak_gpd']:,}",
                f"{r['added_peak_gpd']:,}",
                r.get("verdict") or ("meets" if r.get("capacity_ok") else "does not meet"),
            ]
        )
    text = (
        f"The extension joins the sewer at {down.get('connects_at')}; its flow runs through "
        f"{len(down.get('mains', []))} main{'' if len(down.get('mains', [])) == 1 else 's'} to "
        f"{down.get('outfall') or 'no outfall'}. Peak flows: a parcel's flow_gpd where given (metered), else "
        f"living units x gallons per unit {bracketed(down.get('sections', {}).get('flow', ''))}, or the typical flow "
        "of the property class where units are unknown, x the peaking factor; full-pipe capacity by Manning's "
        "equation "
        f"{bracketed(down.get('sections', {}).get('capacity', ''))}."
    )
    if down.get("present_flow_recorded") is False:  # the table's present peaks, as the capacity check counts them
        text += (
            " No parcel is recorded as connected, so each present peak counts the parcels upstream required to "
            "connect alone; parcels connected but not required to connect are not known and not counted (the "
            "capacity check)."
        )
    part = [Paragraph("Downstream", styles["H"]), Paragraph(escape(text), styles["Small"])]
    if len(rows) > 1:
        w = width / 7
        part.append(_table(rows, [w] * 7, styles, numeric=(1, 2, 3, 4, 5)))
    return part


def _petition_part(plan, styles, width) -> list:
    pet = plan["petition"]
    owners = pet.get("owners", [])
    head = (
        f"No owner benefits {bracketed(pet['section'])}, so there is no petition to sign."
        if pet["applies"] and not pet["benefiting_owners"]
        else f"{pet['benefiting_owners']} benefiting owners; a written petition signed by {pet['signatures_needed']} "
        f"of them is a majority {bracketed(pet['section'])}: more than half; exactly half is not."
        if pet["applies"]
        else f"{pet['benefiting_owners']} benefiting owners. This town's law has no owners' petition for extensions."
    )
    if pet.get("no_owner_recorded"):
        head += f" {pet['no_owner_recorded']} parcel(s) have no owner recorded: each is counted as one owner."
    rows = [["Owner", "Parcels", "Site addresses"]]
    rows += [[o["owner"], ", ".join(o["parcels"]), "; ".join(o["addresses"])] for o in owners]
    part = [Paragraph("Petition of the benefiting owners", styles["H"]), Paragraph(escape(head), styles["Small"])]
    if owners:
        part.append(_table(rows, [2.4 * inch, 1.6 * inch, width - 4.0 * inch], styles))
    return part


def _cost_part(plan, styles, width) -> list:
    cost = plan["cost"]
    items = [
        ["Item", "Quantity", "Unit cost", "Amount"],
        [
            "Main",
            f"{plan.get('drawn_length_ft', plan['length_ft']):,.1f} ft",
            f"${cost['cost_per_ft']:,.2f} per ft",
            _money(cost["main"]),
        ],
    ]
    if cost.get("connecting_main"):
        items.append(
            [
                "Connecting main",
                f"{plan['connecting_main']['length_ft']:,.1f} ft",
                f"${cost['cost_per_ft']:,.2f} per ft",
                _money(cost["connecting_main"]),
            ]
        )
    items += [
        [
            "New manholes",
            str(cost.get("new_manholes", "")),
            _money(cost.get("cost_per_manhole")),
            _money(cost["manholes"]),
        ],
        [
            "Building sewers to the property line",
            str(cost.get("laterals_count", "")),
            _money(cost.get("cost_per_lateral")),
            _money(cost["laterals"]),
        ],
        ["Total", "", "", _money(cost["total"])],
    ]
    rows = [["Parcel", "Owner", "Kind", "Frontage (ft)", "Units", "By frontage", "By parcel", "By living unit"]]
    parcels = [p for p in plan.get("parcels", []) if p.get("benefits", True)]
    for p in parcels:
        rows.append(
            [
                p["parcel_id"],
                p.get("owner_name") or "",
                p["category"],
                f"{p['frontage_ft']:,.1f}",
                p["units_text"],
                _money(p["by_frontage"]),
                _money(p["by_parcel"]),
                _money(p["by_unit"]),
            ]
        )
    rows.append(
        [
            "Total",
            f"{len(parcels)} parcels",
            "",
            f"{sum(p['frontage_ft'] for p in parcels):,.1f}",
            "",
            *[_money(round(sum(cost[m].values()), 2)) for m in ("by_frontage", "by_parcel", "by_unit")],
        ]
    )
    note = (
        "Three ways to split the total among the benefiting parcels; the Board decides"
        + (f" {bracketed(cost['section'])}" if cost.get("section") else "")
        + ". By frontage: the property line along the streets the main serves. By living unit: a parcel whose units "
        "are unknown counts its flow (its flow_gpd where given, else its class's typical flow) in equivalent units; a "
        "vacant lot has none. No parcel pays less than "
        f"${cost.get('min_share_per_parcel', 0):,.2f} (a profile setting). Cents are allocated by largest remainder, "
        "so each column adds up exactly to the total." + (f" {NO_FRONTAGE}" if _no_frontage(plan) else "")
    )
    part = [
        Paragraph("Cost", styles["H"]),
        _table(items, [2.6 * inch, 1.2 * inch, 1.4 * inch, width - 5.2 * inch], styles, numeric=(1, 2, 3), total=True),
        Paragraph("Cost split", styles["H"]),
        Paragraph(escape(note), styles["Small"]),
    ]
    w = [0.95, 1.55, 0.9, 0.7, 0.5]
    rest = (width - sum(w) * inch) / 3
    part.append(_table(rows, [x * inch for x in w] + [rest] * 3, styles, numeric=(3, 4, 5, 6, 7), total=True))
    return part


def _numbered(footer: tuple[str, str]):
    """A canvas class that writes the footer with "page N of M" on every page (two passes over the pages)."""

    class NumberedCanvas(pdfcanvas.Canvas):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._pages = []

        def showPage(self):  # noqa: N802 - reportlab's name
            self._pages.append(dict(self.__dict__))
            self._startPage()

        def save(self):
            total = len(self._pages)
            for state in self._pages:
                self.__dict__.update(state)
                self.setFont(REGULAR, 7)
                self.setFillColor(colors.HexColor("#555555"))
                self.drawString(MARGIN, 0.5 * inch, footer[0][:130])
                self.drawString(MARGIN, 0.5 * inch - 9, footer[1][:130])
                self.drawRightString(LETTER[0] - MARGIN, 0.5 * inch, f"page {self._pageNumber} of {total}")
                super().showPage()
            super().save()

    return NumberedCanvas


# -- the map ----------------------------------------------------------------------------------------------------


class PlanMap(Flowable):
    """The plan on a map: parcels, streets with names, existing mains, the new main and manholes, scale, north."""

    def __init__(self, width, height, plan, *, line, parcels=None, streets=None, mains=None, manholes=None):
        super().__init__()
        self.width, self.height = width, height
        self.plan, self.line = plan, line
        self.parcels, self.streets, self.mains, self.manholes = parcels, streets, mains, manholes
        crs = next((f.crs for f in (parcels, streets, mains) if f is not None and f.crs is not None), None)
        self.fpu = feet_per_unit(crs) if crs is not None else 1.0

    def wrap(self, available_width, available_height):
        return self.width, self.height

    def _extent(self):
        run = self.plan.get("connecting_main")
        parts = [self.line] + [shapely.LineString(p["coords"]) for p in [run, *not_laid_parts(self.plan)] if p]
        if self.parcels is not None:
            ids = set(self.plan["newly_mandated"]) | set(self.plan.get("vacant_benefiting", []))
            chosen = self.parcels[self.parcels["parcel_id"].astype(str).isin(ids)]
            parts += list(chosen.geometry.values)
        minx, miny, maxx, maxy = shapely.union_all(parts).buffer(80 / self.fpu).bounds
        span_x, span_y = maxx - minx, maxy - miny
        ratio = self.width / self.height
        if span_x / span_y < ratio:
            grow = span_y * ratio - span_x
            minx, maxx = minx - grow / 2, maxx + grow / 2
        else:
            grow = span_x / ratio - span_y
            miny, maxy = miny - grow / 2, maxy + grow / 2
        return minx, miny, maxx, maxy

    def draw(self):
        c = self.canv
        minx, miny, maxx, maxy = self._extent()
        scale = self.width / (maxx - minx)
        frame = shapely.box(minx, miny, maxx, maxy)

        def xy(coords):
            return [((px - minx) * scale, (py - miny) * scale) for px, py in np.asarray(coords)[:, :2]]

        def path(coords, close=False):
            points = xy(coords)
            p = c.beginPath()
            p.moveTo(*points[0])
            for q in points[1:]:
                p.lineTo(*q)
            if close:
                p.close()
            return p

        def visible(frame_gdf):
            if frame_gdf is None or len(frame_gdf) == 0:
                return frame_gdf, np.zeros(0, dtype=object)
            hits = frame_gdf.sindex.query(frame, predicate="intersects")
            sub = frame_gdf.iloc[np.sort(hits)]
            return sub, shapely.intersection(np.asarray(sub.geometry.values), frame)

        def lines_of(geom):
            return [g for g in shapely.get_parts(geom) if not g.is_empty and g.geom_type == "LineString"]

        c.saveState()
        clip = c.beginPath()
        clip.rect(0, 0, self.width, self.height)
        c.clipPath(clip, stroke=0, fill=0)
        c.setFillColor(colors.white)
        c.rect(0, 0, self.width, self.height, stroke=0, fill=1)

        streets, street_geoms = visible(self.streets)
        if streets is not None and len(streets):
            width_ft = (
                pd.to_numeric(streets.get("row_width_ft"), errors="coerce") if "row_width_ft" in streets else None
            )
            c.setStrokeColor(STREET)
            c.setLineCap(0)
            for i, g in enumerate(street_geoms):  # the streets in view: tens
                ft = float(width_ft.iloc[i]) if width_ft is not None and np.isfinite(width_ft.iloc[i]) else 50.0
                c.setLineWidth(max(ft / self.fpu * scale * 0.9, 2))
                for part in lines_of(g):
                    c.drawPath(path(part.coords), stroke=1, fill=0)

        ids = set(self.plan["newly_mandated"])
        vacant = set(self.plan.get("vacant_benefiting", []))
        lots, lot_geoms = visible(self.parcels)
        if lots is not None and len(lots):
            pids = lots["parcel_id"].astype(str).to_numpy()
            for pid, g in zip(pids, lot_geoms, strict=True):  # the parcels in view: a few hundred at most
                fill, edge, lw = None, colors.HexColor("#9a9a9a"), 0.4
                if pid in ids:
                    fill, edge, lw = NEWLY, NEWLY_EDGE, 0.9
                elif pid in vacant:
                    fill, edge, lw = VACANT, VACANT_EDGE, 0.9
                c.setStrokeColor(edge)
                c.setLineWidth(lw)
                if fill is not None:
                    c.setFillColor(fill)
                for poly in shapely.get_parts(g):
                    if poly.geom_type != "Polygon" or poly.is_empty:
                        continue
                    c.drawPath(path(poly.exterior.coords, close=True), stroke=1, fill=1 if fill is not None else 0)
            crossed = {str(e["parcel_id"]) for e in self.plan.get("easements") or []}
            c.setStrokeColor(EASEMENT)
            c.setLineWidth(1.6)
            c.setDash(3, 2)
            for pid, g in zip(pids, lot_geoms, strict=True):  # over the fills: a parcel crossed may be newly mandated
                if pid in crossed:
                    for poly in shapely.get_parts(g):
                        if poly.geom_type == "Polygon" and not poly.is_empty:
                            c.drawPath(path(poly.exterior.coords, close=True), stroke=1, fill=0)
            c.setDash()

        sewer = self.mains
        if sewer is not None and "sewer_type" in sewer.columns:
            sewer = sewer[~sewer["sewer_type"].astype("string").str.lower().isin(["storm"]).fillna(False)]
        mains, main_geoms = visible(sewer)
        if mains is not None and len(mains):
            c.setStrokeColor(colors.HexColor("#444444"))
            c.setLineWidth(1.2)
            for g in main_geoms:
                for part in lines_of(g):
                    c.drawPath(path(part.coords), stroke=1, fill=0)
        holes, hole_geoms = visible(self.manholes)
        if holes is not None and len(holes):
            c.setFillColor(colors.HexColor("#444444"))
            for g in hole_geoms:
                if g.geom_type == "Point":
                    ((px, py),) = xy([(g.x, g.y)])
                    c.circle(px, py, 1.6, stroke=0, fill=1)

        run = self.plan.get("connecting_main")
        for beyond in not_laid_parts(self.plan):  # drawn past the manhole it joins and not laid: grey and dotted,
            c.setStrokeColor(NOT_LAID)  # as on the web map; each part, one at each end of a main drawn so
            c.setLineWidth(2)
            c.setDash(1.5, 4)
            c.drawPath(path(beyond["coords"]), stroke=1, fill=0)
            c.setDash()
        c.setStrokeColor(NEW_MAIN)
        c.setLineWidth(3)
        c.setLineCap(1)
        c.drawPath(path(self.line.coords), stroke=1, fill=0)
        if run:
            c.setDash(6, 4)
            c.drawPath(path(run["coords"]), stroke=1, fill=0)
            c.setDash()
        c.setStrokeColor(CROSSING)
        c.setLineWidth(1.5)
        for crossing in self.plan.get("main_crossings") or []:
            ((px, py),) = xy([(crossing["x"], crossing["y"])])
            c.circle(px, py, 6, stroke=1, fill=0)
        c.setFont(REGULAR, 6)
        for m in self.plan["manholes"]:
            ((px, py),) = xy([(m["x"], m["y"])])
            c.setStrokeColor(NEW_MAIN if not m.get("existing") else colors.black)
            c.setFillColor(colors.white if not m.get("existing") else colors.black)
            c.setLineWidth(1.2)
            c.circle(px, py, 3.4, stroke=1, fill=1)
            c.setFillColor(colors.black)
            c.drawString(px + 4.5, py + 3, str(m.get("id", "")))

        if streets is not None and len(streets) and "street_name" in streets.columns:
            # beside the centreline, where a main would hide it
            draw_street_names(c, streets, street_geoms, lambda x, y: tuple(xy([(x, y)])[0]), lift=5)
        c.restoreState()
        c.setStrokeColor(colors.HexColor("#666666"))
        c.setLineWidth(0.6)
        c.rect(0, 0, self.width, self.height, stroke=1, fill=0)
        self._scale_bar(scale)
        self._north_arrow()

    def _scale_bar(self, scale):
        """A bar of a round number of feet, about a quarter of the map wide, at the lower left."""
        c = self.canv
        points_per_ft = scale / self.fpu
        target = self.width / 4 / points_per_ft
        nice = [n for n in (25, 50, 100, 200, 250, 500, 1000, 2000, 2500, 5000, 10000) if n <= target] or [10]
        feet = nice[-1]
        length = feet * points_per_ft
        x, y = 10, 10
        c.setFillColor(colors.white)
        c.rect(x - 4, y - 4, length + 40, 20, stroke=0, fill=1)
        for k in range(4):
            c.setFillColor(colors.black if k % 2 == 0 else colors.white)
            c.setStrokeColor(colors.black)
            c.rect(x + k * length / 4, y, length / 4, 4, stroke=1, fill=1)
        c.setFillColor(colors.black)
        c.setFont(REGULAR, 6.5)
        c.drawString(x, y + 6, "0")
        c.drawString(x + length - 6, y + 6, f"{feet:,} ft")

    def _north_arrow(self):
        c = self.canv
        x, y = self.width - 18, self.height - 34
        c.setFillColor(colors.black)
        p = c.beginPath()
        p.moveTo(x, y + 20)
        p.lineTo(x - 6, y)
        p.lineTo(x, y + 5)
        p.lineTo(x + 6, y)
        p.close()
        c.drawPath(p, stroke=0, fill=1)
        c.setFont(BOLD, 8)
        c.drawCentredString(x, y - 9, "N")


# -- comparison ------------------------------------------------------------------------------------------------


def _cell(value):
    """A comparison's value as its CSV cell: a whole number without ".0" (11 living units, not "11.0"), none empty."""
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def write_comparison_csv(path: str | Path, names: list[str], rows: list[dict]) -> str:
    """The side-by-side comparison as CSV: one row per measure, one column per scenario.

    Text cells that a spreadsheet would run as formulas are neutralised (scenario names are typed by users). Only a
    .csv is written (``--csv town.gpkg`` replaced the town's store with the table).
    """
    _check_suffix(path, ".csv", "The comparison")
    folder_for(path)
    table = pd.DataFrame(
        [[r["label"], *[_cell(v) for v in r["values"]]] for r in rows],
        columns=["measure", *names],
    )
    # As every CSV sewerplan writes: formulas neutralised, whole or not at all, and marked UTF-8 so that a
    # spreadsheet reads "O'Brien-Müller" as typed (it was the one comparison written without the mark).
    from layers.write import write_csv

    return write_csv(path, table.astype({c: str for c in table.columns if table[c].dtype == object}))
