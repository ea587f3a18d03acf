"""The last loose ends of planning: a main drawn over the sewer at both ends, parcels beyond a concave town's edge,
and whether a main can fall to its manhole.

On the hand-made Oak St of ``tests/test_plans.py``, with M-5 and its manholes B and C at Oak St's far end
(``tests/test_plans_leftovers.py``).
"""

from __future__ import annotations

import json

from click.testing import CliRunner
from shapely.geometry import LineString

from gisapp.cli import main
from layers.write import write_layers
from tests.conftest import ny_frame
from tests.test_plans import check, run
from tests.test_plans_leftovers import moved, oak_with_m5

# -- a main drawn over the sewer at both ends -------------------------------------------------------------------------

# From 100 ft west of A over M-1 to A, up Oak St to B and on over M-5 for 200 ft.
BOTH_ENDS = LineString([(-100, 0), (0, 0), (900, 0)])


def test_a_main_drawn_over_the_sewer_at_both_ends_says_its_upper_part_is_laid_and_why():
    # A plan carries one part not laid (its export one not_laid feature, joined back to one end): the upper 200 ft
    # over M-5 are laid and costed. Nothing said why, where drawn over M-5 alone they are not laid.
    r = run(proposed=moved(BOTH_ENDS), town=oak_with_m5()).as_dict()
    assert (r["not_laid"]["beyond_manhole"], r["not_laid"]["along"], r["length_ft"]) == ("A", "M-1", 900.0)
    told = " ".join(check(r, "connection")["message"].split())
    assert check(r, "connection")["verdict"] == "for the engineer"
    assert (
        "Its upper end lies on existing main M-5 too, drawn along it from existing manhole B: the 200 ft drawn east "
        "of B over M-5 are laid, costed and checked in this plan, as a plan leaves out only one part drawn over the "
        "sewer, its lower end's. To plan the main without them, end it at B." in told
    )
    assert r["not_laid"]["upper_laid_along"]["length_ft"] == 200.0
    # over M-1 alone (ending on Oak St short of B): nothing more is said
    short = run(proposed=moved(LineString([(-100, 0), (0, 0), (600, 0)])), town=oak_with_m5()).as_dict()
    assert "Its upper end" not in check(short, "connection")["message"]
    assert short["not_laid"]["upper_laid_along"] is None


def test_a_main_drawn_over_the_sewer_at_both_ends_read_from_degrees_is_found_running_along_the_upper(tmp_path):
    # As a planner meets it: the line in a GeoJSON (longitude/latitude), evaluated by the CLI. Its upper end read
    # back lies a hair off M-5, and the crossings check found nothing: the 200 ft over M-5 were costed unsaid.
    data = tmp_path / "town.gpkg"
    write_layers(str(data), oak_with_m5())
    ny_frame([{"geometry": BOTH_ENDS}]).to_crs(4326).to_file(tmp_path / "both.geojson")
    args = ["plan", "--profile", "fort-plain", "--data", str(data), "--diameter-in", "8", "--json"]
    out = CliRunner().invoke(main, [*args, "--proposed", str(tmp_path / "both.geojson")])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    assert [(c["main_id"], c["kind"], c["length_ft"]) for c in doc["main_crossings"]] == [("M-5", "runs along", 200.0)]
    assert "the 200 ft drawn east of B over M-5 are laid" in " ".join(check(doc, "connection")["message"].split())
