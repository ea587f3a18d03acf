"""The board's PDF for a planned extension: rendered, read back, and compared with a golden text.

The golden text is the whole document's text, whitespace normalised, for the Oak St plan of tests/test_plans.py
(date and preparer fixed). After a deliberate change to the document, regenerate it with
``SEWERPLAN_UPDATE_GOLDEN=1 pytest tests/test_plan_board.py`` and read the diff before committing.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from pathlib import Path

import pytest
from pypdf import PdfReader
from shapely.geometry import LineString

from analysis.notices import long_date
from gisapp.services import plan_pdf
from layers.board import write_plan_summary
from layers.read import Layers
from tests.test_plans import FP, layout, run, two_sewers

GOLDEN = Path(__file__).parent / "golden" / "plan-board-oak-st.txt"
DAY = dt.date(2027, 3, 1)


def render(tmp_path, town=None, **kw):
    town = town or layout()
    result = run(town=town, **kw)
    doc = result.as_dict() | {"name": "Oak St", "profile": FP.id, "profile_version": FP.version}
    path = write_plan_summary(
        tmp_path / "board.pdf",
        "Oak St",
        doc,
        profile=FP,
        line=result.line,
        parcels=town["parcels"],
        streets=town["streets"],
        mains=town["mains"],
        manholes=town["manholes"],
        preparer="Village Engineer",
        today=DAY,
    )
    return doc, PdfReader(path)


def words(reader) -> str:
    return " ".join(" ".join(page.extract_text().split()) for page in reader.pages)


def test_board_pdf_holds_what_the_board_votes_on(tmp_path):
    doc, reader = render(tmp_path)
    text = words(reader)
    assert 2 <= len(reader.pages) <= 4
    assert reader.metadata.title == "Sewer extension: Oak St" and reader.metadata.author == "Village Engineer"
    # Date, preparer and profile version on every page, with page numbers.
    for k, page in enumerate(reader.pages, start=1):
        page_text = " ".join(page.extract_text().split())
        assert "Prepared March 1, 2027 by Village Engineer; profile fort-plain version " + FP.version in page_text
        assert f"page {k} of {len(reader.pages)}" in page_text
    # The map: street names, manhole labels, scale bar and north arrow.
    for label in ("Oak St", "Main St", "NEW-1", "NEW-3", " A ", " N "):
        assert label in text, label
    assert re.search(r" 0 (50|100|200|250|500) ft ", text)
    # The checks with sections, one verdict each; requirements shown as requirements.
    assert "min diameter meets § 144-18B" in text and "connection meets" in text and "PASS" not in text
    assert "Requirements for construction" in text and "3 ft 3 in" in text and "§ 144-18A" in text
    # The test sections with allowances.
    assert "1 A NEW-3 900.0 3 149.9" in text and "All sections 900.0 3 149.9" in text
    # The petition: owners, parcels, addresses, signatures needed.
    assert "5 benefiting owners; a written petition signed by 3 of them is a majority (§ 144-17B" in text
    assert "SMITH JOHN L1, L3 100 Oak St; 300 Oak St" in text and "VACANT LLC L4, L7" in text
    # The cost split: every parcel, its share by each method, and totals that add up.
    for row in doc["parcels"]:
        assert f"{row['parcel_id']} {row['owner_name']}" in text
    assert "L1 SMITH JOHN newly mandated 100.0 2 $38,428.58 $38,428.58 $52,400.00" in text
    assert "L4 VACANT LLC vacant lot 100.0 0 $38,428.57 $38,428.57 $3,500.00" in text
    assert "Total 7 parcels 700.0 $269,000.00 $269,000.00 $269,000.00" in text


def test_board_pdf_prints_every_owners_name_in_the_embedded_font(tmp_path):
    """The petition lists the benefiting owners: Helvetica printed "Łukasz Żółć" as black boxes. The board's PDF
    draws in the embedded DejaVu Sans (``layers.fonts``), as the letters and the printed map do, and no other font."""
    town = layout()
    town["parcels"].loc[town["parcels"]["parcel_id"] == "L1", "owner_name"] = "ŁUKASZ ŻÓŁĆ"
    _, reader = render(tmp_path, town=town)
    assert "L1 ŁUKASZ ŻÓŁĆ" in words(reader)
    fonts = {
        str(font["/BaseFont"]).split("+")[-1]
        for page in reader.pages
        for font in page["/Resources"]["/Font"].get_object().values()
    }
    assert fonts and all(name.startswith("DejaVuSans") for name in fonts), fonts


def test_board_pdf_matches_the_golden_text(tmp_path):
    _, reader = render(tmp_path)
    text = "\n".join(" ".join(page.extract_text().split()) for page in reader.pages) + "\n"
    text = re.sub(r"version \d{4}-\d{2}-\d{2}(?:\.\d+)?", "version <profile version>", text)  # 2026-12-07.2 too
    if os.environ.get("SEWERPLAN_UPDATE_GOLDEN"):
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(text, encoding="utf-8")
    assert text == GOLDEN.read_text(encoding="utf-8")


def test_board_pdf_of_a_plan_with_a_connecting_main_and_unknown_units(tmp_path):
    town = two_sewers()
    school = town["parcels"]["parcel_id"] == "L8"
    town["parcels"].loc[school, ["units", "property_class", "owner_name"]] = [None, "612", "FORT PLAIN CSD & <b>"]
    doc, reader = render(tmp_path, town=town, proposed=LineString([(100, 0), (900, 0)]), material="PVC")
    text = words(reader)
    assert "(800 ft drawn and a 300 ft connecting main)" in text and "Connecting main 300.0 ft" in text
    assert "units unknown for 1" in text and "FORT PLAIN CSD & <b>" in text  # escaped, printed as given
    assert "pipe material for the engineer § 144-18A" in text


def test_pipeline_pdf_uses_the_town_layers(tmp_path):
    town = layout()
    result = run(town=town)
    doc = result.as_dict() | {"name": "Oak/St #2"}
    layers = Layers(parcels=town["parcels"], mains=town["mains"], streets=town["streets"], manholes=town["manholes"])
    path = plan_pdf(tmp_path / "p.pdf", doc, layers, FP, line=result.line, preparer=None, today=DAY)
    text = words(PdfReader(path))
    assert "Proposed sewer extension: Oak/St #2" in text and "(preparer not given)" in text
    assert long_date(DAY) == "March 1, 2027"


@pytest.mark.parametrize("day", [dt.date(2027, 12, 31), dt.date(2028, 2, 29)])
def test_long_date(day):
    assert long_date(day) == f"{day:%B} {day.day}, {day.year}"


def test_board_pdf_of_a_scenario_saved_by_an_earlier_version(tmp_path):
    """Scenarios saved before this version lack most of today's keys: the web export must still render them."""
    town = layout()
    result = run(town=town)
    doc = result.as_dict()
    for key in (
        "benefiting",
        "vacant_benefiting",
        "requirements",
        "test_sections",
        "parcels",
        "flow",
        "connecting_main",
        "drawn_length_ft",
        "made_available",
    ):
        doc.pop(key)
    doc["manholes"] = [{"x": m["x"], "y": m["y"], "reason": m["reason"]} for m in doc["manholes"]]
    doc["design_checks"] = [{k: c[k] for k in ("check", "passed", "section", "message")} for c in doc["design_checks"]]
    doc["petition"] = {k: doc["petition"][k] for k in ("benefiting_owners", "signatures_needed", "section", "applies")}
    path = write_plan_summary(
        tmp_path / "old.pdf",
        "Old",
        doc,
        profile=FP,
        line=result.line,
        parcels=town["parcels"],
        streets=town["streets"],
        today=DAY,
    )
    text = words(PdfReader(path))
    assert "Proposed sewer extension: Old" in text and "min diameter meets § 144-18B" in text


def test_board_pdf_draws_and_says_each_part_not_laid_of_a_main_drawn_over_the_sewer_at_both_ends(tmp_path):
    # Drawn over M-1 to A and on over M-5 past B: the plan is A to B, and the board sees both parts left out, each
    # grey and dotted on the map and said in the summary, as on the web map.
    from tests.test_plans_final import BOTH_ENDS, BOTH_SAID
    from tests.test_plans_leftovers import moved, oak_with_m5

    doc, reader = render(tmp_path, town=oak_with_m5(), proposed=moved(BOTH_ENDS))
    text = words(reader)
    assert all(sentence in text for sentence in BOTH_SAID)
    assert "the parts drawn over M-1 and over M-5 and not laid (grey dotted)," in text
    drawn = reader.pages[0].get_contents().get_data().decode("latin-1")
    assert drawn.count(".466667 .466667 .466667 RG") == 2  # one grey stroke for each part
