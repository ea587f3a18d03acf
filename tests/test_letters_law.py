"""The connection and violation letters read beside the three laws: what each says of the period and when it starts,
more time, the private system, and the permits and licences required before connecting.

Each test names the section it holds the letter to. Letters are composed (``analysis.notices.compose_letters``) and
read as plain words; ``tests/test_letters.py`` checks the PDF prints exactly those words.
"""

from __future__ import annotations

import re

import pytest

from tests.test_letters import GOLDEN, LETTERHEADS, TOWNS

NAMES = ["fort-plain", "poughkeepsie", "wappinger"]


# Item 7: letterheads ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_each_golden_letter_has_its_own_municipalitys_letterhead(name):
    """The golden Poughkeepsie and Wappinger letters were headed "Montgomery County, New York" with Fort Plain's
    return address, under a Fort Plain resolution: a test of what a town's letter says must use that town's head."""
    text = (GOLDEN / f"letter-{name}.txt").read_text(encoding="utf-8")
    county, clerk, city, _ = LETTERHEADS[name]
    head = text.split(" March 1, 2027 ", 1)[0]
    assert head.startswith(TOWNS[name]) and county in head and f"{clerk} / " in head and city in head
    others = {c for n, (c, _, _, _) in LETTERHEADS.items() if c != county} | {
        c for n, (_, _, c, _) in LETTERHEADS.items() if n != name
    }
    assert not any(other in text for other in others), others
    assert not re.search(r"Board of Trustees", text) or name == "fort-plain"
