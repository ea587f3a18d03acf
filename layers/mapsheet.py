"""A map view printed on one page: the PDF a planner puts in a board packet.

One US-letter page, landscape: the title; the map of the view (parcels coloured by status, streets with their
names, sewer mains, manholes, and what the planner has selected or searched around, outlined) with a scale bar and
a north arrow; beside it the legend with the number of parcels of each status in the view; and under it the date,
the profile (ordinance and version) the results come from, the analysis run and the source of the data.

Every word is set in the embedded DejaVu Sans (``layers.fonts``), so a title, a legend label or a street name in
Polish, Czech or Vietnamese ("Łódź", "Kościuszko St") prints as typed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely
from pyproj import CRS, Transformer
from reportlab.lib import colors
from reportlab.lib.pagesizes import LETTER, landscape
from reportlab.lib.units import inch
from reportlab.pdfgen import canvas as pdfcanvas

from analysis.units import feet_per_unit
from layers.atomic import written_whole
from layers.errors import LayerError
from layers.fonts import BOLD, REGULAR, printable

PAGE = landscape(LETTER)
MARGIN = 0.5 * inch
LEGEND_WIDTH = 2.55 * inch
# The most parcels one printed view draws; a larger view is refused with the advice to zoom in.
MAX_PRINTED_PARCELS = 20_000
SELECTED = colors.HexColor("#00b7eb")
BUFFER = colors.HexColor("#ff7f00")
# Street names lean by this much (about 11 degrees), as an oblique face would: DejaVu Sans ships upright and bold only.
_SLANT = 0.2


@dataclass(frozen=True)
class SheetText:
    """The words on the sheet: title, the lines under it, the legend's statuses (code, label, colour) and the footer.

    ``statuses`` lists what the legend shows, in order; the count of each comes from the parcels in the view.
    """

    title: str
    subtitle: tuple[str, ...] = ()
    statuses: tuple[tuple[str, str, str], ...] = ()
    footer: tuple[str, ...] = ()
    selection_label: str = "selected parcels"
    buffer_label: str = "searched area"


@dataclass(frozen=True)
class SheetLayers:
    """The layers drawn, all in one projected CRS: parcels (with ``status``), streets, mains, manholes."""

    parcels: gpd.GeoDataFrame
    streets: gpd.GeoDataFrame | None = None
    mains: gpd.GeoDataFrame | None = None
    manholes: gpd.GeoDataFrame | None = None
    selected: tuple[str, ...] = ()
    buffer: shapely.Geometry | None = None


def write_map_sheet(
    path: str | Path, layers: SheetLayers, *, bbox_lonlat: tuple[float, float, float, float], text: SheetText
) -> dict:
    """Write the one-page PDF of the view ``bbox_lonlat`` (west, south, east, north in degrees) and return what it
    shows: ``{"parcels": n, "counts": {status: n}, "scale_ft": bar length}``.

    ``LayerError`` when the view holds more than ``MAX_PRINTED_PARCELS`` parcels (zoom in) or nothing at all.
    """
    _check_title(text.title)
    crs = CRS(layers.parcels.crs)
    frame_w = PAGE[0] - 2 * MARGIN - LEGEND_WIDTH - 0.2 * inch
    frame_h = PAGE[1] - 2 * MARGIN - 1.0 * inch
    extent = _extent(bbox_lonlat, crs, frame_w / frame_h)
    box = shapely.box(*extent)
    parcels = _visible(layers.parcels, box)
    if len(parcels) > MAX_PRINTED_PARCELS:
        raise LayerError(
            f"The view holds {len(parcels):,} parcels; a printed map draws at most {MAX_PRINTED_PARCELS:,}. "
            "Zoom in on the map and print again."
        )
    counts = (
        {str(k): int(v) for k, v in parcels["status"].astype(str).value_counts().items()} if "status" in parcels else {}
    )
    footer = list(text.footer[:2])
    unprinted = _unprintable_names(_visible(layers.streets, box))
    if unprinted:  # left off the map, not printed as boxes; the sheet says so, as a board member would ask
        one = len(unprinted) == 1
        footer.append(
            f"{_count(unprinted, 'street name')} in view {'is' if one else 'are'} not printed: "
            f"{'its' if one else 'their'} letters are not in the sheet's typeface."
        )
    with written_whole(path) as where:  # printed whole or not at all (``layers.atomic``)
        c = pdfcanvas.Canvas(str(where), pagesize=PAGE, initialFontName=REGULAR)
        c.setTitle(text.title)
        width = PAGE[0] - 2 * MARGIN
        c.setFont(BOLD, 15)
        c.drawString(MARGIN, PAGE[1] - MARGIN - 12, _fitted(text.title, BOLD, 15, width))
        c.setFont(REGULAR, 8.5)
        c.setFillColor(colors.HexColor("#333333"))
        for k, line in enumerate(text.subtitle[:3]):
            c.drawString(MARGIN, PAGE[1] - MARGIN - 27 - 11 * k, _fitted(line, REGULAR, 8.5, width))
        c.setFillColor(colors.black)
        origin = (MARGIN, MARGIN + 0.35 * inch)
        scale_ft = _draw_map(c, origin, (frame_w, frame_h), extent, box, crs, layers, parcels, text)
        _legend(c, (MARGIN + frame_w + 0.2 * inch, origin[1] + frame_h), text, counts, layers)
        c.setFont(REGULAR, 7.5)
        c.setFillColor(colors.HexColor("#555555"))
        for k, line in enumerate(footer):
            c.drawString(MARGIN, MARGIN + 0.12 * inch - 9 * k, _fitted(line, REGULAR, 7.5, width))
        c.showPage()
        c.save()
    return {"parcels": len(parcels), "counts": counts, "scale_ft": scale_ft}


def _check_title(title: str) -> None:
    """Refuse a title with letters DejaVu Sans cannot draw (Chinese, Japanese, Arabic ...): they printed as black
    boxes on a sheet meant for a board packet, without a word."""
    missing = list(dict.fromkeys(c for c in title if not printable(c)))  # in the order typed
    if missing:
        raise LayerError(
            f"The title {title!r} holds letters the printed map's typeface (DejaVu Sans: Latin, Greek and Cyrillic) "
            f"cannot draw ({', '.join(missing[:10])}): they would print as boxes. Write the title in those letters, "
            "or leave it empty for the town's own title, and print again."
        )


def _unprintable_names(streets: gpd.GeoDataFrame) -> list[str]:
    """The street names in view that DejaVu Sans cannot draw whole (each once); ``draw_street_names`` leaves them
    off the map."""
    if len(streets) == 0 or "street_name" not in streets:
        return []
    names = streets["street_name"].dropna().astype(str).drop_duplicates()
    return [n for n in names if not printable(n)]


def _count(items: list, noun: str) -> str:
    return f"1 {noun}" if len(items) == 1 else f"{len(items)} {noun}s"


def _extent(bbox_lonlat, crs: CRS, ratio: float) -> tuple[float, float, float, float]:
    """The view in the layers' CRS, grown to the map frame's proportions."""
    west, south, east, north = bbox_lonlat
    if not (-180 <= west < east <= 180 and -90 <= south < north <= 90):
        raise LayerError("The view to print must be west,south,east,north in degrees, west < east, south < north.")
    to_crs = Transformer.from_crs(4326, crs, always_xy=True)
    xs, ys = to_crs.transform(np.linspace(west, east, 5).repeat(5), np.tile(np.linspace(south, north, 5), 5))
    minx, miny, maxx, maxy = float(np.min(xs)), float(np.min(ys)), float(np.max(xs)), float(np.max(ys))
    if not all(map(math.isfinite, (minx, miny, maxx, maxy))):
        raise LayerError("The view to print lies outside the area the data's coordinate system covers.")
    span_x, span_y = maxx - minx, maxy - miny
    if span_x / span_y < ratio:
        grow = span_y * ratio - span_x
        minx, maxx = minx - grow / 2, maxx + grow / 2
    else:
        grow = span_x / ratio - span_y
        miny, maxy = miny - grow / 2, maxy + grow / 2
    return minx, miny, maxx, maxy


def _visible(frame: gpd.GeoDataFrame | None, box) -> gpd.GeoDataFrame:
    if frame is None or len(frame) == 0:
        return gpd.GeoDataFrame(geometry=[], crs=None)
    hits = frame.sindex.query(box, predicate="intersects")
    return frame.iloc[np.sort(hits)]


def _draw_map(c, origin, size, extent, box, crs, layers: SheetLayers, parcels, text: SheetText) -> int:
    ox, oy = origin
    width, height = size
    minx, miny, maxx, maxy = extent
    scale = width / (maxx - minx)
    fpu = feet_per_unit(crs)

    def path(coords, close=False):
        xy = (np.asarray(coords)[:, :2] - (minx, miny)) * scale + (ox, oy)
        p = c.beginPath()
        p.moveTo(*xy[0])
        for q in xy[1:]:
            p.lineTo(*q)
        if close:
            p.close()
        return p

    def rings(geom):
        for poly in shapely.get_parts(geom):
            if poly.geom_type == "Polygon" and not poly.is_empty:
                yield poly.exterior.coords

    def lines(geom):
        for part in shapely.get_parts(geom):
            if part.geom_type == "LineString" and not part.is_empty:
                yield part.coords
            elif part.geom_type == "Polygon" and not part.is_empty:
                yield part.exterior.coords

    c.saveState()
    clip = c.beginPath()
    clip.rect(ox, oy, width, height)
    c.clipPath(clip, stroke=0, fill=0)
    c.setFillColor(colors.white)
    c.rect(ox, oy, width, height, stroke=0, fill=1)

    streets = _visible(layers.streets, box)
    c.setStrokeColor(colors.HexColor("#e6e6e6"))
    c.setLineWidth(max(40 / fpu * scale, 2.0))
    for g in streets.geometry.values:  # the streets in view
        for coords in lines(g):
            c.drawPath(path(coords), stroke=1, fill=0)

    colour = {code: colors.HexColor(hexa) for code, _, hexa in text.statuses}
    status = parcels["status"].astype(str).to_numpy() if "status" in parcels else np.full(len(parcels), "")
    c.setLineWidth(0.3)
    c.setStrokeColor(colors.HexColor("#666666"))
    for s, g in zip(status, parcels.geometry.values, strict=True):  # the parcels in view (at most 20,000)
        c.setFillColor(colour.get(s, colors.HexColor("#eeeeee")))
        for coords in rings(g):
            c.drawPath(path(coords, close=True), stroke=1, fill=1)

    mains = _visible(layers.mains, box)
    if len(mains):
        diameter = pd.to_numeric(mains.get("diameter_in"), errors="coerce") if "diameter_in" in mains else None
        c.setStrokeColor(colors.HexColor("#3a3a3a"))
        for k, g in enumerate(mains.geometry.values):
            d = float(diameter.iloc[k]) if diameter is not None and np.isfinite(diameter.iloc[k]) else 8.0
            c.setLineWidth(min(max(d / 6, 0.8), 3.0))
            for coords in lines(g):
                c.drawPath(path(coords), stroke=1, fill=0)
    holes = _visible(layers.manholes, box)
    c.setFillColor(colors.white)
    c.setStrokeColor(colors.HexColor("#222222"))
    c.setLineWidth(0.5)
    for g in holes.geometry.values:
        if g.geom_type == "Point":
            px, py = (g.x - minx) * scale + ox, (g.y - miny) * scale + oy
            c.circle(px, py, 1.8, stroke=1, fill=1)

    if layers.buffer is not None and not shapely.is_empty(layers.buffer):
        c.setStrokeColor(BUFFER)
        c.setLineWidth(1.6)
        c.setDash(5, 3)
        for coords in lines(shapely.intersection(layers.buffer, box.buffer((maxx - minx) * 0.05))):
            c.drawPath(path(coords), stroke=1, fill=0)
        c.setDash()
    if layers.selected and "parcel_id" in parcels:
        chosen = parcels[parcels["parcel_id"].astype(str).isin(set(layers.selected))]
        c.setStrokeColor(SELECTED)
        c.setLineWidth(2.0)
        for g in chosen.geometry.values:
            for coords in rings(g):
                c.drawPath(path(coords, close=True), stroke=1, fill=0)

    if len(streets) and "street_name" in streets:
        draw_street_names(
            c,
            streets,
            np.asarray(streets.geometry.values),
            lambda x, y: ((x - minx) * scale + ox, (y - miny) * scale + oy),
            lift=4,
        )
    c.restoreState()
    c.setStrokeColor(colors.HexColor("#444444"))
    c.setLineWidth(0.8)
    c.rect(ox, oy, width, height, stroke=1, fill=0)
    feet = _scale_bar(c, (ox + 10, oy + 10), scale / fpu, width)
    _north_arrow(c, (ox + width - 20, oy + height - 36))
    return feet


def draw_street_names(c, streets, geoms: np.ndarray, to_page, *, lift: float) -> None:
    """Each street's name once, along its longest piece in view, kept upright, ``lift`` points beside its line.

    ``to_page(x, y)`` gives a map point's place on the page. The map sheet and the board's plan both label so.
    """
    table = pd.DataFrame({"name": streets["street_name"].astype("string").to_numpy(), "length": shapely.length(geoms)})
    table["i"] = np.arange(len(table))
    best = table.dropna(subset=["name"]).sort_values(["length", "i"], ascending=[False, True]).drop_duplicates("name")
    best = best[[printable(str(n)) for n in best["name"]]]  # a name of letters the font lacks would print as boxes
    c.setFont(REGULAR, 7)
    c.setFillColor(colors.HexColor("#333333"))
    for name, i in zip(best["name"], best["i"], strict=True):  # one label per street name in view
        parts = [p for p in shapely.get_parts(geoms[i]) if p.geom_type == "LineString" and not p.is_empty]
        if not parts:
            continue
        piece = max(parts, key=lambda p: p.length)
        mid = piece.interpolate(0.5, normalized=True)
        a = piece.interpolate(max(0.0, piece.length / 2 - 1))
        b = piece.interpolate(min(piece.length, piece.length / 2 + 1))
        angle = math.degrees(math.atan2(b.y - a.y, b.x - a.x))
        angle = angle - 180 if angle > 90 else angle + 180 if angle < -90 else angle
        c.saveState()
        c.translate(*to_page(mid.x, mid.y))
        c.rotate(angle)
        c.transform(1, 0, _SLANT, 1, 0, 0)  # slanted as maps letter street names; the embedded font has no italic
        c.drawCentredString(0, lift, str(name))
        c.restoreState()


def _scale_bar(c, at, points_per_ft: float, width: float) -> int:
    """A bar of a round number of feet, about a quarter of the map wide; returns its length in feet."""
    target = width / 4 / points_per_ft
    steps = [n * 10**k for k in range(0, 6) for n in (1, 2, 2.5, 5)]
    feet = int(max([s for s in steps if s <= target] or [1]))
    length = feet * points_per_ft
    x, y = at
    c.setFillColor(colors.white)
    c.rect(x - 4, y - 4, length + 44, 22, stroke=0, fill=1)
    for k in range(4):
        c.setFillColor(colors.black if k % 2 == 0 else colors.white)
        c.setStrokeColor(colors.black)
        c.rect(x + k * length / 4, y, length / 4, 4, stroke=1, fill=1)
    c.setFillColor(colors.black)
    c.setFont(REGULAR, 7)
    c.drawString(x, y + 7, "0")
    c.drawString(x + length - 8, y + 7, f"{feet:,} ft")
    return feet


def _north_arrow(c, at):
    x, y = at
    c.setFillColor(colors.white)
    c.rect(x - 10, y - 14, 20, 40, stroke=0, fill=1)
    c.setFillColor(colors.black)
    p = c.beginPath()
    p.moveTo(x, y + 22)
    p.lineTo(x - 7, y)
    p.lineTo(x, y + 6)
    p.lineTo(x + 7, y)
    p.close()
    c.drawPath(p, stroke=0, fill=1)
    c.setFont(BOLD, 9)
    c.drawCentredString(x, y - 11, "N")


def _legend(c, top_left, text: SheetText, counts: dict[str, int], layers: SheetLayers) -> None:
    x, y = top_left
    c.setFillColor(colors.black)
    c.setFont(BOLD, 10)
    c.drawString(x, y - 10, "Legend")
    c.setFont(REGULAR, 7.5)
    c.drawString(x, y - 22, "Parcels in this view, by status:")
    y -= 38
    for code, label, hexa in text.statuses:
        n = counts.get(code, 0)
        c.setFillColor(colors.HexColor(hexa))
        c.setStrokeColor(colors.HexColor("#666666"))
        c.rect(x, y - 2, 11, 9, stroke=1, fill=1)
        c.setFillColor(colors.black)
        c.drawString(x + 16, y, f"{label}: {n:,}")
        y -= 14
    c.setStrokeColor(colors.HexColor("#3a3a3a"))
    c.setLineWidth(1.6)
    c.line(x, y + 2, x + 11, y + 2)
    c.drawString(x + 16, y, "sewer main (thicker = larger)")
    y -= 14
    c.setFillColor(colors.white)
    c.setLineWidth(0.5)
    c.circle(x + 5.5, y + 2.5, 2, stroke=1, fill=1)
    c.setFillColor(colors.black)
    c.drawString(x + 16, y, "manhole")
    y -= 14
    c.setStrokeColor(colors.HexColor("#d0d0d0"))
    c.setLineWidth(5)
    c.line(x, y + 2, x + 11, y + 2)
    c.drawString(x + 16, y, "street")
    y -= 14
    if layers.selected:
        c.setStrokeColor(SELECTED)
        c.setLineWidth(2)
        c.rect(x, y - 2, 11, 9, stroke=1, fill=0)
        c.drawString(x + 16, y, f"{text.selection_label} ({len(layers.selected):,})")
        y -= 14
    if layers.buffer is not None:
        c.setStrokeColor(BUFFER)
        c.setLineWidth(1.6)
        c.setDash(4, 2)
        c.line(x, y + 2, x + 11, y + 2)
        c.setDash()
        c.drawString(x + 16, y, text.buffer_label)
        y -= 14


def _fitted(line: str, font: str, size: float, width: float) -> str:
    """``line`` as it fits on the page: whole, or cut at a word with an ellipsis (never past the margin)."""
    from reportlab.pdfbase.pdfmetrics import stringWidth

    if stringWidth(line, font, size) <= width:
        return line
    words = line.split()
    while words and stringWidth(" ".join(words) + " \u2026", font, size) > width:
        words.pop()
    if words:
        return " ".join(words) + " \u2026"
    cut = line
    while cut and stringWidth(cut + "\u2026", font, size) > width:
        cut = cut[:-1]
    return cut + "\u2026"
