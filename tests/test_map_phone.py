"""The map page's phone layout, without a browser: what the stylesheet and map.js must agree on."""

from __future__ import annotations

import re
from pathlib import Path

STATIC = Path(__file__).resolve().parents[1] / "gisapp" / "static"


def test_the_stylesheet_and_map_js_take_a_screen_for_a_phone_alike():
    """The stylesheet shows the sidebar's button below its media query's size, and map.js opens and closes the
    sidebar (and folds the layer panel) only where its own query matches: queries that differ leave a button on
    screen that does nothing, or a desktop's layer panel over a phone's map."""
    css = (STATIC / "sewerplan.css").read_text(encoding="utf-8")
    js = (STATIC / "map.js").read_text(encoding="utf-8")
    in_css = re.findall(r"@media ([^{]+?)\s*\{[^@]*?#sidebar-toggle \{ display: block", css, flags=re.S)
    in_js = re.findall(r'const small = window\.matchMedia\("([^"]+)"\)', js)
    assert len(in_css) == 1 and len(in_js) == 1, (in_css, in_js)
    assert in_css[0] == in_js[0]
    assert "max-height" in in_js[0]  # a phone on its side (844 x 390) is a phone
