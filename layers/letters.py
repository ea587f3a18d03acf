"""What goes in the mail: the mailing list CSV, Avery 5160 labels, and one letter per envelope (PDF), written as one
batch folder that appears whole or not at all.

A batch is written into a hidden partial folder beside its final place, every file fsynced, a ``manifest.json`` with
each file's SHA-256 and each notice's letter written last, and the folder then renamed into place (``<root>/<batch
ID>``). ``verify_batch`` checks a folder against its manifest before the register counts a notice as issued. Each
file is also written whole on its own (``layers.atomic.written_whole``): the mailing list written by itself (``sewerplan
notices list --csv``), labels or a letter never appear half-written under their name.

Letters are laid out, never worded, here: every word comes from the ``analysis.notices.Letter`` that
``compose_letters`` made (``letter_text`` lists them in reading order). The layout: the town's letterhead (wrapped
to the page), the date and a certified-mail article number field, the recipient, the notices it covers, the blocks
of the body (headings, text, the law quoted verbatim with its section), the signature, then a map of each parcel
(buildings, street names, the main's ID and diameter, the measuring line, a scale bar and a north arrow), and a
footer on every page. CSV cells that a spreadsheet would run as formulas are neutralised.

Letters and labels are set in DejaVu Sans, embedded (``layers.fonts``): an owner named "Łukasz Żółć" or "Nguyễn Văn
Đức" is printed as the roll writes it. What that font cannot draw is held back before any letter is made
(``analysis.notices.plan_notices`` is given ``layers.fonts.PRINTABLE``).
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import shapely
from pypdf import PdfReader, PdfWriter
from reportlab.lib.pagesizes import LETTER
from reportlab.lib.units import inch
from reportlab.lib.utils import simpleSplit
from reportlab.pdfbase.pdfmetrics import stringWidth
from reportlab.pdfgen import canvas

from layers.atomic import sync_to_disk, written_whole
from layers.errors import LayerError
from layers.fonts import BOLD, REGULAR

if TYPE_CHECKING:  # the letters are made in analysis/; laying them out needs nothing else from it
    from analysis.notices import Letter, LetterMap

MAILING_LIST = "mailing-list.csv"
LABELS = "labels.pdf"
ALL_LETTERS = "letters-all.pdf"
MANIFEST = "manifest.json"

# Avery 5160 / 8160: US letter, 3 across and 10 down, each label 2 5/8 x 1 in; 3/16 in side and 1/2 in top margins,
# 1/8 in between columns, none between rows.
AVERY_5160 = {
    "columns": 3,
    "rows": 10,
    "left": 0.1875 * inch,
    "top": 0.5 * inch,
    "width": 2.625 * inch,
    "height": 1.0 * inch,
    "gap": 0.125 * inch,
    "pad_x": 0.12 * inch,
    "pad_y": 0.08 * inch,
}


@contextmanager
def _pdf(path: str | Path, *, locked: bool = False) -> Iterator[canvas.Canvas]:
    """A reportlab canvas for the PDF ``path``, saved under a hidden name and renamed into place when the block
    ends (``layers.atomic.written_whole``): a write stopped halfway leaves the PDF that was there before, or none.
    ``locked``: the caller writes the folder alone (a batch's own hidden partial folder)."""
    with written_whole(path, locked=locked) as where:
        pdf = canvas.Canvas(str(where), pagesize=LETTER, invariant=1, initialFontName=REGULAR)
        yield pdf
        pdf.save()


def write_mailing_list(
    path: str | Path, rows: pd.DataFrame, *, bom: bool = True, locked: bool = False, replace: bool = True
) -> str:
    """The mail-merge CSV, through the one CSV writer (formula-safe, every field quoted, ZIP codes as text, whole or
    not at all); ``locked``: the caller writes the folder alone (a batch's hidden partial folder); ``replace=False``:
    never over a file, not even one that appears meanwhile (``FileExistsError``)."""
    from layers.write import write_csv

    return write_csv(path, rows, bom=bom, locked=locked, replace=replace)


# -- labels -------------------------------------------------------------------------------------------------------


def label_box(k: int) -> tuple[int, float, float, float, float]:
    """Page number and the (x, y, width, height) of the ``k``-th label (0-based) on Avery 5160, in points."""
    g = AVERY_5160
    per_page = g["columns"] * g["rows"]
    page, slot = divmod(k, per_page)
    col, row = slot % g["columns"], slot // g["columns"]
    x = g["left"] + col * (g["width"] + g["gap"])
    y = LETTER[1] - g["top"] - (row + 1) * g["height"]
    return page, x, y, g["width"], g["height"]


def _fit(
    lines: list[str], width: float, height: float, *, keep: int = 0, sizes=(9.0, 8.5, 8.0, 7.5, 7.0, 6.5)
) -> tuple[float, list]:
    """The largest font size at which ``lines`` (wrapped at spaces, long words broken) fit the box, and the lines.

    Where they do not fit even at the smallest size, the last ``keep`` lines (a label's street and city) are kept
    whole and the lines before them (the name) are cut, the last one kept saying so: mail can still be delivered to
    a shortened name, never to a missing address.
    """
    for size in sizes:
        wrapped = [part for line in lines for part in _wrap(line, REGULAR, size, width)]
        if (len(wrapped) * 1.15 + 0.1) * size <= height:  # the last line's descenders stay inside too
            return size, wrapped
    size = sizes[-1]
    split = len(lines) - keep
    head = [part for line in lines[:split] for part in _wrap(line, REGULAR, size, width)]
    tail = [part for line in lines[split:] for part in _wrap(line, REGULAR, size, width)]
    room = max(1, int((height / size - 0.1) // 1.15))
    head_room = max(1, room - len(tail))
    if len(head) > head_room:
        head = [*head[: head_room - 1], _clip(" ".join(head[head_room - 1 :]), REGULAR, size, width)]
    wrapped = head + tail
    if len(wrapped) > room:  # never drawn outside the label: the last line says text was cut
        wrapped = [*wrapped[: room - 1], _clip(" ".join(wrapped[room - 1 :]), REGULAR, size, width)]
    return size, wrapped


# The label's first line, in small type: the mailing number and notice IDs (``_reference``).
_REFERENCE_SIZE = 6.0


def _label_room() -> tuple[float, float]:
    """The width and height a label's name and address lines have: inside its padding, under the reference line."""
    g = AVERY_5160
    return g["width"] - 2 * g["pad_x"], g["height"] - 2 * g["pad_y"] - _REFERENCE_SIZE * 1.25


def _fits(lines: Sequence[str], width: float, height: float, sizes=(9.0, 8.5, 8.0, 7.5, 7.0, 6.5)) -> float | None:
    """The largest size at which ``lines`` fit the box whole (wrapped, never cut), or None: ``_fit`` would cut."""
    for size in sizes:
        wrapped = [part for line in lines for part in _wrap(line, REGULAR, size, width)]
        if (len(wrapped) * 1.15 + 0.1) * size <= height:  # the last line's descenders stay inside too
            return size
    return None


def address_overflow(name: Sequence[str], address: Sequence[str]) -> str:
    """What would not print whole of an envelope's name and address lines, measured as they are laid out: on the
    Avery 5160 label (``write_labels``: wrapped and shrunk down to 6.5 pt, then cut) and in the letter's address
    block (``ADDRESS_BLOCK``: wrapped at the window's width, more lines than it shows are hidden by the envelope).
    "" when both take them whole. ``analysis.notices.plan_notices`` is given this, to hold such a letter back.
    """
    lines = [str(t) for t in (*name, *address) if str(t).strip()]
    problems = []
    if _fits(lines, *_label_room()) is None:
        problems.append("the mailing label would cut it (2 5/8 x 1 in, even at 6.5 pt)")
    width, most, font, size = (ADDRESS_BLOCK[k] for k in ("width", "lines", "font", "size"))
    taken = sum(len(_wrap(line, font, size, width)) for line in lines)
    if taken > most:
        problems.append(
            f"the letter's address block would take {taken} lines, and an envelope window shows {most} "
            f"({width / inch:g} in wide at {size:g} pt)"
        )
    return "; ".join(problems)


@functools.lru_cache(maxsize=8192)
def _wrap(text: str, font: str, size: float, width: float) -> tuple[str, ...]:
    """``text`` broken into lines no wider than ``width`` (cached: every letter of a batch quotes the same law)."""
    out: list[str] = []
    for part in simpleSplit(text, font, size, width) or [""]:
        while stringWidth(part, font, size) > width and len(part) > 1:  # one word wider than the box: break it
            cut = max(1, int(len(part) * width / stringWidth(part, font, size)))
            while cut > 1 and stringWidth(part[:cut], font, size) > width:
                cut -= 1
            out.append(part[:cut])
            part = part[cut:]
        out.append(part)
    return tuple(out)


def _clip(text: str, font: str, size: float, width: float) -> str:
    if stringWidth(text, font, size) <= width:
        return text
    while text and stringWidth(text + "\u2026", font, size) > width:
        text = text[:-1]
    return text + "\u2026"


def _reference(row: dict, font: str, size: float, width: float) -> str:
    """The label's first line: the mailing number and the notice IDs, as many as fit, then how many more."""
    ids = [i for i in str(row.get("notice_ids") or "").split("; ") if i]
    head = f"{int(row['mailing_no']):04d}" if str(row.get("mailing_no") or "").strip() else ""
    for shown in range(len(ids), -1, -1):
        more = f" +{len(ids) - shown} more" if shown < len(ids) else ""
        text = " ".join(p for p in (head, ", ".join(ids[:shown]) + more) if p).strip()
        if stringWidth(text, font, size) <= width:
            return text
    return _clip(head, font, size, width)


def write_labels(path: str | Path, rows: pd.DataFrame, *, locked: bool = False) -> str:
    """Avery 5160 labels, one per mailing-list row in its order: the mailing number and notice IDs in small type,
    then the name (two lines), the address and the row's ``city_line`` (worded where the letter's is, so the two
    agree), each shrunk and wrapped to stay inside its label. Whole or not at all; ``locked`` as for letters."""
    if "city_line" not in rows.columns:
        raise LayerError(
            "The mailing list has no city_line column, so the labels would lose each address's last line: make it "
            "with analysis.notices.mailing_list, which words that line as the letters print it."
        )
    with _pdf(path, locked=locked) as pdf:
        pdf.setTitle("Mailing labels (Avery 5160)")
        g = AVERY_5160
        records = rows.to_dict("records")
        last_page = 0
        for k, row in enumerate(records):
            page, x, y, w, h = label_box(k)
            if page != last_page:
                pdf.showPage()
                last_page = page
            inner_w = w - 2 * g["pad_x"]
            ref_size = _REFERENCE_SIZE
            reference = _reference(row, REGULAR, ref_size, inner_w) if "notice_ids" in row else ""

            def present(*values) -> list[str]:
                return [str(t) for t in values if t is not None and not pd.isna(t) and str(t).strip()]

            name = present(row.get("name_line_1"), row.get("name_line_2"))
            address = present(
                row.get("address_line_1"), row.get("address_line_2"), row["city_line"], row.get("country_line")
            )
            top = y + h - g["pad_y"]
            if reference:
                pdf.setFont(REGULAR, ref_size)
                pdf.drawString(x + g["pad_x"], top - ref_size, reference)
                top -= ref_size * 1.25
            size, fitted = _fit(name + address, inner_w, top - (y + g["pad_y"]), keep=len(address))
            pdf.setFont(REGULAR, size)
            for i, text in enumerate(fitted):
                pdf.drawString(x + g["pad_x"], top - size - i * size * 1.15, text)
    return str(path)


# -- letters ------------------------------------------------------------------------------------------------------

_MARGIN = 0.9 * inch
# The letter's recipient lines: what a #10 window envelope (its window 4 1/2 x 1 1/8 in) shows of a letter folded in
# three, with room to shift in the envelope: 4 in wide, 5 lines of 10.5 pt.
ADDRESS_BLOCK = {"width": 4.0 * inch, "lines": 5, "font": REGULAR, "size": 10.5}
_TOP = 0.7 * inch
_BOTTOM = 0.8 * inch
_STYLES = {
    "heading": (BOLD, 10.5, 0, 8),
    "text": (REGULAR, 10.0, 0, 3),
    "quote": (REGULAR, 10.0, 0.3 * inch, 4),
    "item": (BOLD, 10.0, 0.15 * inch, 1),
}


class _Page:
    """A letter being written: the cursor, page breaks with a footer on each page."""

    def __init__(self, pdf, letter: Letter):
        self.pdf, self.letter = pdf, letter
        self.width, self.height = LETTER
        self.y = self.height - _TOP
        self.page = 1

    def need(self, points: float) -> None:
        if self.y - points < _BOTTOM:
            self.footer()
            self.pdf.showPage()
            self.page += 1
            self.y = self.height - _TOP

    def footer(self) -> None:
        pdf = self.pdf
        pdf.setFont(REGULAR, 7.5)
        text = _clip(self.letter.footer(self.page), REGULAR, 7.5, self.width - 2 * _MARGIN)
        pdf.drawString(_MARGIN, 0.45 * inch, text)

    def lines(
        self, text: str, font: str, size: float, indent: float = 0.0, after: float = 3.0, width: float | None = None
    ) -> None:
        width = min(width or math.inf, self.width - 2 * _MARGIN - indent)
        for part in _wrap(text, font, size, width):
            self.need(size * 1.3)
            self.pdf.setFont(font, size)
            self.pdf.drawString(_MARGIN + indent, self.y - size, part)
            self.y -= size * 1.3
        self.y -= after


def _letterhead(page: _Page, letter: Letter) -> None:
    width = page.width - 2 * _MARGIN
    page.lines(letter.sender, BOLD, 14, after=1)
    for line in letter.sender_lines:
        page.lines(line, REGULAR, 9, after=0)
    if letter.contact:
        page.lines(letter.contact, REGULAR, 8.5, after=0)
    page.y -= 4
    page.pdf.setLineWidth(0.6)
    page.pdf.line(_MARGIN, page.y, _MARGIN + width, page.y)
    page.y -= 14


def render_letter(pdf, letter: Letter, *, maps: dict[str, LetterMap] | None = None) -> None:
    """Draw one letter, from its first page to its last map, on ``pdf`` (a reportlab canvas)."""
    page = _Page(pdf, letter)
    _letterhead(page, letter)
    page.lines(letter.date_line, REGULAR, 10, after=8)
    page.lines(letter.mail_line, BOLD, 9.5, after=10)
    block = ADDRESS_BLOCK
    for line in letter.recipient:  # wrapped at the envelope window's width, as address_overflow measured it
        page.lines(line, block["font"], block["size"], after=0, width=block["width"])
    page.y -= 16
    page.lines(letter.title, BOLD, 12.5, after=1)
    page.lines(letter.reference, REGULAR, 9, after=6)
    for block in letter.blocks:
        font, size, indent, after = _STYLES.get(block.kind, _STYLES["text"])
        if block.kind == "heading":
            page.need(size * 1.3 + 40)  # a heading never ends a page alone
        elif block.kind == "quote":  # the law's words stay on one page, so they are read (and copied) whole
            lines = _wrap(block.text, font, size, page.width - 2 * _MARGIN - indent)
            page.need(min(len(lines) * size * 1.3, page.height - _TOP - _BOTTOM))
        page.lines(block.text, font, size, indent, after)
    page.need(70)
    page.y -= 6
    if letter.closing:
        page.lines(letter.closing[0], REGULAR, 10, after=26)  # the signature goes in the space below
        for line in letter.closing[1:]:
            page.lines(line, REGULAR, 10, after=0)
    for parcel_id in letter.parcel_ids:
        extract = (maps or {}).get(parcel_id)
        if extract is None:
            continue
        size = 3.4 * inch
        page.need(size + 60)
        page.lines(letter.map_heading(parcel_id), BOLD, 10, after=4)
        _draw_map(pdf, extract, x=_MARGIN, y=page.y - size, size=size)
        page.y -= size + 6
        page.lines(letter.map_caption, REGULAR, 7.5, after=6)
    page.footer()
    pdf.showPage()


def write_letter(
    path: str | Path, letter: Letter, *, maps: dict[str, LetterMap] | None = None, locked: bool = False
) -> str:
    """One letter as a PDF file, whole or not at all; ``locked``: the caller writes the folder alone (a batch's
    hidden partial folder, where a writer lock per letter would only cost time)."""
    with _pdf(path, locked=locked) as pdf:
        pdf.setTitle(f"{letter.title.title()} - {', '.join(letter.notice_ids)}")
        pdf.setAuthor(letter.sender)
        render_letter(pdf, letter, maps=maps)
    return str(path)


# -- the letter's map ---------------------------------------------------------------------------------------------

_NICE_FT = (10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000)


def _draw_map(pdf, m: LetterMap, *, x: float, y: float, size: float) -> None:
    """The parcel and what lies around it inside ``m.frame``, drawn into the square (x, y, size) and clipped to it."""
    minx, miny, maxx, maxy = m.frame
    scale = size / (maxx - minx)
    frame = shapely.box(minx, miny, maxx, maxy)

    def xy(px: float, py: float) -> tuple[float, float]:
        return x + (px - minx) * scale, y + (py - miny) * scale

    def path_of(geom, close: bool):
        p = pdf.beginPath()
        parts = shapely.get_parts(geom)
        for part in parts:
            rings = [part.exterior, *part.interiors] if part.geom_type == "Polygon" else [part]
            for ring in rings:
                coords = list(ring.coords)
                if len(coords) < 2:
                    continue
                p.moveTo(*xy(*coords[0][:2]))
                for c in coords[1:]:
                    p.lineTo(*xy(*c[:2]))
                if close:
                    p.close()
        return p

    pdf.saveState()
    clip = pdf.beginPath()
    clip.rect(x, y, size, size)
    pdf.clipPath(clip, stroke=0, fill=0)
    pdf.setFillColorRGB(1, 1, 1)
    pdf.rect(x, y, size, size, stroke=0, fill=1)
    for geom, _name in m.streets:  # right-of-way polygons shaded, centrelines as wide pale lines
        if geom is None:
            continue
        if geom.geom_type.endswith("Polygon"):
            pdf.setFillColorRGB(0.93, 0.93, 0.93)
            pdf.drawPath(path_of(geom, True), stroke=0, fill=1)
        else:
            pdf.setStrokeColorRGB(0.88, 0.88, 0.88)
            pdf.setLineWidth(max(6.0, 30 / m.feet_per_unit * scale))
            pdf.drawPath(path_of(geom, False), stroke=1, fill=0)
    pdf.setFillColorRGB(0.99, 0.96, 0.80)
    pdf.setStrokeColorRGB(0.3, 0.3, 0.3)
    pdf.setLineWidth(1.6)
    pdf.drawPath(path_of(m.parcel, True), stroke=1, fill=1)
    pdf.setFillColorRGB(0.72, 0.72, 0.72)
    pdf.setStrokeColorRGB(0.45, 0.45, 0.45)
    pdf.setLineWidth(0.5)
    for geom in m.buildings:
        if geom is not None and geom.geom_type.endswith("Polygon"):
            pdf.drawPath(path_of(geom, True), stroke=1, fill=1)
        elif geom is not None:
            px, py = xy(*shapely.get_coordinates(geom)[0])
            pdf.rect(px - 2, py - 2, 4, 4, stroke=1, fill=1)
    pdf.setStrokeColorRGB(0, 0, 0)
    pdf.setLineWidth(2.2)
    for geom, _main_id, _diameter in m.mains:
        if geom is not None:
            pdf.drawPath(path_of(geom, False), stroke=1, fill=0)
    if m.line is not None and m.line.length > 0:
        pdf.setStrokeColorRGB(0.85, 0.1, 0.1)
        pdf.setLineWidth(1.5)
        pdf.setDash(4, 3)
        pdf.drawPath(path_of(m.line, False), stroke=1, fill=0)
        pdf.setDash()
    for geom, name in m.streets:
        _label_line(pdf, geom, name, frame, xy, size=7, colour=(0.25, 0.25, 0.25), offset=0)
    for geom, main_id, diameter in m.mains:
        text = " ".join(p for p in (main_id, f"{diameter:g} in" if diameter else "") if p)
        _label_line(pdf, geom, text, frame, xy, size=6.5, colour=(0, 0, 0), offset=4)
    _scale_bar(pdf, x, y, size, scale * m.feet_per_unit)
    _north_arrow(pdf, x + size - 18, y + size - 34)
    pdf.restoreState()
    pdf.setStrokeColorRGB(0.5, 0.5, 0.5)
    pdf.setLineWidth(0.8)
    pdf.rect(x, y, size, size, stroke=1, fill=0)


def _label_line(pdf, geom, text: str, frame, xy, *, size: float, colour, offset: float) -> None:
    """``text`` along the longest piece of ``geom`` inside the frame, upright, at its middle."""
    if not text or geom is None:
        return
    if geom.geom_type.endswith("Polygon"):
        geom = geom.boundary
    inside = shapely.intersection(geom, frame.buffer(-(frame.bounds[2] - frame.bounds[0]) * 0.04))
    pieces = [p for p in shapely.get_parts(inside) if p.geom_type == "LineString" and p.length > 0]
    if not pieces:
        return
    piece = max(pieces, key=lambda p: p.length)
    mid = piece.interpolate(0.5, normalized=True)
    ahead = piece.interpolate(min(piece.length, piece.project(mid) + piece.length * 0.05))
    behind = piece.interpolate(max(0.0, piece.project(mid) - piece.length * 0.05))
    (x0, y0), (x1, y1) = xy(behind.x, behind.y), xy(ahead.x, ahead.y)
    angle = math.degrees(math.atan2(y1 - y0, x1 - x0))
    if angle > 90 or angle <= -90:
        angle -= 180 if angle > 0 else -180
    px, py = xy(mid.x, mid.y)
    pdf.saveState()
    pdf.translate(px, py)
    pdf.rotate(angle)
    width = stringWidth(text, REGULAR, size)
    pdf.setFillColorRGB(1, 1, 1)
    pdf.rect(-width / 2 - 1.5, offset - 1.5, width + 3, size + 2, stroke=0, fill=1)
    pdf.setFillColorRGB(*colour)
    pdf.setFont(REGULAR, size)
    pdf.drawCentredString(0, offset, text)
    pdf.restoreState()


def _scale_bar(pdf, x: float, y: float, size: float, points_per_ft: float) -> None:
    """A bar of a round number of feet, at most a third of the map wide, bottom left."""
    feet = max((f for f in _NICE_FT if f * points_per_ft <= size / 3), default=_NICE_FT[0])
    length = feet * points_per_ft
    bx, by = x + 8, y + 10
    pdf.setFillColorRGB(1, 1, 1)
    pdf.rect(bx - 4, by - 5, length + 40, 18, stroke=0, fill=1)
    pdf.setFillColorRGB(0, 0, 0)
    pdf.setStrokeColorRGB(0, 0, 0)
    pdf.setLineWidth(1)
    pdf.rect(bx, by, length / 2, 3, stroke=1, fill=1)
    pdf.rect(bx + length / 2, by, length / 2, 3, stroke=1, fill=0)
    pdf.setFont(REGULAR, 6.5)
    pdf.drawString(bx, by + 5, "0")
    pdf.drawString(bx + length + 3, by, f"{feet:,} ft")


def _north_arrow(pdf, x: float, y: float) -> None:
    pdf.setFillColorRGB(1, 1, 1)
    pdf.rect(x - 9, y - 4, 18, 32, stroke=0, fill=1)
    pdf.setFillColorRGB(0, 0, 0)
    arrow = pdf.beginPath()
    arrow.moveTo(x, y + 18)
    arrow.lineTo(x - 5, y + 4)
    arrow.lineTo(x, y + 8)
    arrow.lineTo(x + 5, y + 4)
    arrow.close()
    pdf.drawPath(arrow, stroke=0, fill=1)
    pdf.setFont(BOLD, 8)
    pdf.drawCentredString(x, y + 20, "N")


# -- the batch folder ---------------------------------------------------------------------------------------------


def write_batch(
    root: str | Path,
    batch_id: str,
    *,
    rows: pd.DataFrame,
    letters: Sequence[Letter],
    maps: dict[str, LetterMap] | None = None,
    bom: bool = True,
    progress=None,
) -> tuple[Path, dict]:
    """Write a batch's files into ``<root>/<batch_id>``, whole or not at all; returns the folder and its manifest.

    The files go first into a hidden partial folder in ``root``: the mailing list, the labels, one letter per
    mailing-list row (``letters/0001.pdf`` ...), all letters merged in mailing order (``letters-all.pdf``), and
    ``manifest.json`` last; each is fsynced, then the folder is renamed into place and ``root`` fsynced. A folder
    already at that place is never replaced.
    """
    root = Path(root)
    final = root / batch_id
    if final.exists():
        raise LayerError(f"{final} already exists: a batch never overwrites another batch's files.")
    partial = root / f".{batch_id}.partial-{os.getpid()}"
    if partial.exists():
        shutil.rmtree(partial)
    try:
        (partial / "letters").mkdir(parents=True)
        # The folder is this process's own (its ID in the name, the batch's lock held): no writer lock per file, whose
        # lock file Windows would leave in the batch.
        write_mailing_list(partial / MAILING_LIST, rows, bom=bom, locked=True)
        write_labels(partial / LABELS, rows, locked=True)
        merged = PdfWriter()
        notices: dict[str, list] = {}
        for letter in letters:
            path = write_letter(partial / letter.file_name, letter, maps=maps, locked=True)
            merged.append(path)
            occupant = bool(letter.recipient) and letter.recipient[0] == "Occupant"
            for notice_id in letter.notice_ids:  # [file, mailing number, addressed to the occupant, served by]
                notices.setdefault(notice_id, []).append(
                    [letter.file_name, letter.mailing_no, occupant, letter.served_by]
                )
            if progress:
                progress(letter)
        with written_whole(partial / ALL_LETTERS, locked=True) as where, open(where, "wb") as out:
            merged.write(out)
        merged.close()
        files = sorted(p for p in partial.rglob("*") if p.is_file())
        manifest = {
            "batch_id": batch_id,
            "rows": len(rows),
            "letters": notices,
            "files": {str(p.relative_to(partial)): _sha256(p) for p in files},
        }
        (partial / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True), encoding="utf-8")
        for p in [*files, partial / MANIFEST]:
            sync_to_disk(p)
        sync_to_disk(partial / "letters")
        sync_to_disk(partial)
        if final.exists():
            raise LayerError(f"{final} already exists: a batch never overwrites another batch's files.")
        os.rename(partial, final)
        sync_to_disk(root)
    except BaseException:
        with suppress(OSError):
            shutil.rmtree(partial)
        raise
    return final, manifest


def occupant_copies(folder: str | Path) -> dict[str, tuple[str, int]]:
    """Each notice's copy to the occupant at the site in the batch folder ``folder`` (written with ``occupant``):
    its file in the folder (``letters/0002.pdf``) and its mailing number, from the batch's manifest. The register
    keeps each notice's own letter (the owner's) only, so the notices page read no copy and linked none.

    Empty where the batch wrote no copies, or its folder or manifest cannot be read (a folder on another machine):
    the page then links the owner's letter alone, as before. A batch's folder never changes once written, so each
    manifest is read once while its file stays the same (a page lists the latest batches on every view).
    """
    path = Path(folder) / MANIFEST
    try:
        seen = path.stat()
    except OSError:
        return {}
    return _copies_in(str(path), seen.st_mtime_ns, seen.st_size)


@functools.lru_cache(maxsize=64)
def _copies_in(path: str, _mtime_ns: int, _size: int) -> dict[str, tuple[str, int]]:
    try:
        letters = json.loads(Path(path).read_text(encoding="utf-8")).get("letters") or {}
    except (OSError, ValueError, AttributeError):
        return {}
    copies = {}
    for notice_id, entries in letters.items():  # [file, mailing number, addressed to the occupant, served by]
        for entry in entries:
            if len(entry) > 2 and entry[2]:
                copies[str(notice_id)] = (str(entry[0]), int(entry[1]))
    return copies


def verify_batch(folder: str | Path, notice_ids: Sequence[str]) -> list[str]:
    """What is wrong with a batch folder: a missing or changed file, a notice with no letter, or no mailing-list row.

    An empty list means every notice has its letter, its row in the mailing list and (by the manifest's checksums)
    the labels written with it.
    """
    folder = Path(folder)
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return [f"{folder / MANIFEST} cannot be read ({exc})"]
    problems = []
    for name, digest in manifest.get("files", {}).items():
        path = folder / name
        if not path.is_file():
            problems.append(f"{name} is missing")
        elif _sha256(path) != digest:
            problems.append(f"{name} has changed since it was written")
    for needed in (MAILING_LIST, LABELS, ALL_LETTERS):
        if needed not in manifest.get("files", {}):
            problems.append(f"{needed} was never written")
    letters = manifest.get("letters", {})
    problems += [f"notice {n} has no letter" for n in notice_ids if n not in letters]
    try:
        rows = pd.read_csv(folder / MAILING_LIST, dtype=str, keep_default_na=False)
        listed = {i for cell in rows.get("notice_ids", pd.Series(dtype=str)) for i in str(cell).split("; ") if i}
        problems += [f"notice {n} is not in the mailing list" for n in notice_ids if n not in listed]
    except (OSError, ValueError) as exc:
        problems.append(f"{MAILING_LIST} cannot be read ({exc})")
    return problems


def label_texts(path: str | Path) -> list[str]:
    """The text of each label of a labels PDF, in order (for checking what was printed)."""
    out: list[str] = []
    for page in PdfReader(str(path)).pages:
        boxes: dict[int, list[tuple[float, float, str]]] = {}

        def visit(text, cm, tm, _font, _size, boxes=boxes):
            if not text.strip():
                return
            x, y = tm[4] * cm[0] + cm[4], tm[5] * cm[3] + cm[5]
            k = _label_at(x, y)
            if k is not None:
                boxes.setdefault(k, []).append((-y, x, text))

        page.extract_text(visitor_text=visit)
        out += [" ".join(t for _, _, t in sorted(boxes[k])) for k in sorted(boxes)]
    return out


def _label_at(x: float, y: float) -> int | None:
    for k in range(AVERY_5160["columns"] * AVERY_5160["rows"]):
        _, bx, by, w, h = label_box(k)
        if bx <= x <= bx + w and by <= y <= by + h:
            return k
    return None


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
