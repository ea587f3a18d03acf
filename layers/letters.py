"""What goes in the mail: the mailing list CSV, Avery 5160 labels and one letter per notice (PDF).

Letters name the owner, parcel and site address, the measured distance, the ordinance's own words and section,
the deadline, and (Poughkeepsie) the reason for the notice, with a small map of the parcel, the main and the
measuring line. CSV cells that a spreadsheet would run as formulas are neutralised.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pandas as pd
import shapely
from reportlab.lib.pagesizes import LETTER
from reportlab.lib.units import inch
from reportlab.lib.utils import simpleSplit
from reportlab.pdfgen import canvas

from analysis.profiles import Profile

REASON_TEXT = {
    "public_health_hazard": "to eliminate a public health hazard",
    "highway_improvement": "to promote a highway improvement program",
}


def write_mailing_list(path: str | Path, rows: pd.DataFrame, *, bom: bool = False) -> str:
    """The mail-merge CSV: every text cell neutralised against formula injection; UTF-8, with a BOM if asked."""
    from layers.write import write_csv

    return write_csv(path, rows, bom=bom)


def write_labels(path: str | Path, rows: pd.DataFrame) -> str:
    """Avery 5160 labels: 3 across, 10 down, 2.625 x 1 in, on US letter."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    pdf = canvas.Canvas(str(path), pagesize=LETTER)
    pdf.setTitle("Mailing labels")
    left, top, width, height, gap = 0.1875 * inch, 0.5 * inch, 2.625 * inch, 1.0 * inch, 0.125 * inch
    for k, row in enumerate(rows.to_dict("records")):  # one label per mailing-list row
        if k and k % 30 == 0:
            pdf.showPage()
        col, line = (k % 30) % 3, (k % 30) // 3
        x = left + col * (width + gap) + 0.1 * inch
        y = LETTER[1] - top - line * height - 0.22 * inch
        pdf.setFont("Helvetica", 9)
        city = ", ".join(p for p in (row.get("city"), row.get("state")) if p) + f" {row.get('zip') or ''}".rstrip()
        for text in (
            row.get("name_line_1"),
            row.get("name_line_2"),
            row.get("address_line_1"),
            row.get("address_line_2"),
            city,
        ):
            if text:
                pdf.drawString(x, y, str(text)[:44])
                y -= 11
    pdf.save()
    return str(path)


def write_letter(
    path: str | Path,
    notice: dict,
    *,
    profile: Profile,
    parcel=None,
    line=None,
    mains=None,
    today: dt.date | None = None,
) -> str:
    """One connection (or violation) letter; ``parcel``, ``line`` and ``mains`` are shapely geometries to map."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    pdf = canvas.Canvas(str(path), pagesize=LETTER)
    pdf.setTitle(f"Notice {notice['notice_id']}")
    width, height = LETTER
    margin = 0.9 * inch
    y = height - margin
    pdf.setFont("Helvetica-Bold", 13)
    pdf.drawString(margin, y, profile.municipality)
    y -= 16
    pdf.setFont("Helvetica", 9)
    pdf.drawString(margin, y, profile.law[:110])
    y -= 30
    pdf.setFont("Helvetica", 10.5)
    for text in (
        notice.get("owner_name"),
        notice.get("mail_address"),
        " ".join(str(p) for p in (notice.get("mail_city"), notice.get("mail_state"), notice.get("mail_zip")) if p),
    ):
        if text:
            pdf.drawString(margin, y, str(text))
            y -= 14
    y -= 10
    pdf.drawString(margin, y, f"Date of notice: {notice['issued_date']}    Notice {notice['notice_id']}")
    y -= 24
    kind = notice.get("notice_type", "connection")
    pdf.setFont("Helvetica-Bold", 12)
    title = "NOTICE TO CONNECT TO THE PUBLIC SEWER" if kind == "connection" else "NOTICE OF VIOLATION"
    pdf.drawString(margin, y, title)
    y -= 18
    pdf.setFont("Helvetica", 10.5)
    md = profile.mandate
    distance = notice.get("distance_ft")
    paragraphs = [
        f"Property: parcel {notice['parcel_id']}, {notice.get('site_address') or 'site address not recorded'}.",
    ]
    if kind == "connection":
        paragraphs += [
            f"The public sanitary sewer main {notice.get('main_id') or ''} lies "
            f"{float(distance):.1f} feet from the property line of this parcel."
            if distance is not None and not pd.isna(distance)
            else "A public sanitary sewer main lies within the distance the law sets.",
            f'{md.distance_ft.citation} of the law provides: "{md.requires_occupied_building.quote} ... '
            f'{md.notice_period_days.quote} ... {md.distance_ft.quote}."',
            f"You are required to connect the building to the public sewer by {notice['deadline']} "
            f"({md.notice_period_days.value} days after the date of this notice).",
        ]
        if notice.get("reason"):
            paragraphs.append(
                f"This notice is given {REASON_TEXT.get(notice['reason'], notice['reason'])} "
                f"({md.notice_reasons.citation})."
            )
    else:
        paragraphs.append(notice.get("text") or "")
    for text in paragraphs:
        for line_text in simpleSplit(text, "Helvetica", 10.5, width - 2 * margin):
            pdf.drawString(margin, y, line_text)
            y -= 14
        y -= 6
    if parcel is not None:
        _draw_map(pdf, parcel, line, mains, x=margin, y=y - 3.0 * inch, size=3.0 * inch)
        pdf.setFont("Helvetica", 8)
        pdf.drawString(
            margin,
            y - 3.0 * inch - 12,
            "Parcel (grey), sewer main (black), measuring line from the property line to the main (red).",
        )
    pdf.showPage()
    pdf.save()
    return str(path)


def _draw_map(pdf, parcel, line, mains, *, x: float, y: float, size: float) -> None:
    """Parcel, mains and measuring line, fitted to a square box with the parcel centred."""
    focus = shapely.union_all([g for g in (parcel, line) if g is not None])
    minx, miny, maxx, maxy = focus.buffer(40).bounds
    span = max(maxx - minx, maxy - miny)
    cx, cy = (minx + maxx) / 2, (miny + maxy) / 2
    box = shapely.box(cx - span / 2, cy - span / 2, cx + span / 2, cy + span / 2)
    scale = size / span

    def xy(coords):
        return [(x + (px - (cx - span / 2)) * scale, y + (py - (cy - span / 2)) * scale) for px, py in coords]

    pdf.setStrokeColorRGB(0.6, 0.6, 0.6)
    pdf.rect(x, y, size, size)

    def stroke_lines(geoms, colour, width, dash=None):
        pdf.setStrokeColorRGB(*colour)
        pdf.setLineWidth(width)
        pdf.setDash(*(dash or ()))
        for g in geoms:
            clipped = shapely.intersection(g, box)
            for part in shapely.get_parts(np.array([clipped])):
                if part.is_empty:
                    continue
                rings = [part.exterior, *part.interiors] if part.geom_type == "Polygon" else [part]
                for ring in rings:
                    points = xy(ring.coords)
                    path = pdf.beginPath()
                    path.moveTo(*points[0])
                    for p in points[1:]:
                        path.lineTo(*p)
                    pdf.drawPath(path, stroke=1, fill=0)
        pdf.setDash()

    stroke_lines([parcel], (0.45, 0.45, 0.45), 1.2)
    if mains is not None:
        stroke_lines(list(mains), (0, 0, 0), 2.2)
    if line is not None and line.length > 0:
        stroke_lines([line], (0.85, 0.1, 0.1), 1.5, (4, 3))
