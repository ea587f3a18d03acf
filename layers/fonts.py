"""The typeface of everything sewerplan prints: DejaVu Sans, embedded in each PDF.

ReportLab's built-in Helvetica prints only Western European letters (WinAnsi): "Łukasz Żółć" came out as black
boxes, so owners with Polish, Czech or Vietnamese names were held back from their notices and a printed map titled
"Łódź" read "■ód■". DejaVu Sans (regular and bold, ``layers/fonts/``, Bitstream Vera licence in
``layers/fonts/LICENSE``) covers Latin, Greek and Cyrillic whole and ships with the package, so a machine with no
fonts of its own and no internet prints the same letters. ReportLab embeds only the glyphs a PDF uses.

Every module that draws text takes its font names from here (``REGULAR``, ``BOLD``) and measures with the same
names (``reportlab.pdfbase.pdfmetrics.stringWidth(text, REGULAR, size)``). Importing this module registers the
fonts, once per process, and the family, so ``<b>`` in a Platypus ``Paragraph`` of ``REGULAR`` prints in ``BOLD``.
``PRINTABLE`` is the set of characters both faces draw: what the notices' check (``analysis.notices``, which never
reads a font file) is given as the characters a letter can print.
"""

from __future__ import annotations

from pathlib import Path

from reportlab.lib.fonts import addMapping
from reportlab.pdfbase import pdfmetrics
from reportlab.pdfbase.ttfonts import TTFont

FOLDER = Path(__file__).with_name("fonts")
REGULAR = "DejaVuSans"
BOLD = "DejaVuSans-Bold"
_FILES = {REGULAR: "DejaVuSans.ttf", BOLD: "DejaVuSans-Bold.ttf"}


def _register() -> frozenset[str]:
    """Register both faces and their family with ReportLab (once), and return the characters both can draw."""
    faces = []
    for name, file_name in _FILES.items():
        try:
            font = pdfmetrics.getFont(name)
        except KeyError:
            font = TTFont(name, str(FOLDER / file_name))
            pdfmetrics.registerFont(font)
        faces.append(font)
    for bold in (0, 1):  # Platypus' <b> and <i>: bold maps to BOLD; there is no italic face, so italic stays upright
        for italic in (0, 1):
            addMapping(REGULAR, bold, italic, BOLD if bold else REGULAR)
    drawn = [{c for c, glyph in face.face.charToGlyph.items() if glyph} for face in faces]
    return frozenset(chr(c) for c in set.intersection(*drawn))


PRINTABLE: frozenset[str] = _register()


def printable(text: str) -> bool:
    """Whether both faces draw every character of ``text`` (a glyph each: no black box, no blank)."""
    return all(c in PRINTABLE for c in text)


__all__ = ["BOLD", "FOLDER", "PRINTABLE", "REGULAR", "printable"]
