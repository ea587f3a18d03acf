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


# -- beyond the parcels of a concave town ------------------------------------------------------------------------------


def lakeside_town() -> dict:
    """Oak St's town with a lake south of it: its far shore is a row of eight lots 100 ft square, S1 to S8, from
    x 100 to 900 and y -1000 to -900. Between the two rows lies water, and no parcel."""
    import pandas as pd
    from shapely.geometry import box

    from tests.conftest import frame
    from tests.test_plans import layout

    town = layout()
    shore = frame(
        [
            {"parcel_id": f"S{i}", "owner_name": f"SHORE {i}", "property_class": "311", "units": None}
            | {"connected": False, "geometry": box(100 * i, -1000, 100 * i + 100, -900)}
            for i in range(1, 9)
        ]
    )
    town["parcels"] = type(shore)(pd.concat([town["parcels"], shore], ignore_index=True), crs=shore.crs)
    return town


def test_a_main_drawn_into_a_bay_of_a_concave_town_is_beyond_its_parcels():
    # From A south 500 ft into the lake and east 800 ft along the middle of it. The convex hull of every parcel
    # covered the lake, so none of it was beyond the parcels. Measured from the lots themselves, grown 100 ft (Fort
    # Plain's § 144-4) with square corners: L1's reaches down to y -75, S1's up to y -800; so 425 ft of the leg south
    # and all 800 ft east lie farther from every lot than a lot can be reached from.
    from layers.board import summary_lines

    r = run(proposed=LineString([(0, 0), (0, -500), (800, -500)]), town=lakeside_town()).as_dict()
    assert r["beyond_parcels_ft"] == 1225.0
    assert any(s.startswith("Beyond the town's parcels: 1,225 ft of the main lie farther") for s in summary_lines(r))
    # Oak St itself, in the same town: a street between lots, and the manhole at its end short of L1, are not
    oak = run(town=lakeside_town()).as_dict()
    assert oak["beyond_parcels_ft"] == 0.0


def test_beyond_the_parcels_looks_only_at_the_parcels_near_the_main(monkeypatch):
    # The convex hull was built from every parcel's vertices on each plan; now the parcels' tree gives those near
    # the main, and only they are grown and measured.
    import shapely

    from analysis.plans import _beyond_parcels_ft
    from analysis.profiles import load_profile

    grown = []
    real = shapely.buffer

    def counting(geoms, *args, **kw):
        grown.append(shapely.get_num_geometries(geoms).size)
        return real(geoms, *args, **kw)

    monkeypatch.setattr(shapely, "buffer", counting)
    lots = lakeside_town()["parcels"]
    # in the middle of the lake, 300 ft from either shore: no lot is near enough to be grown, all of it is beyond
    feet = _beyond_parcels_ft(LineString([(450, -250), (450, -650)]), lots, load_profile("fort-plain"), 1.0)
    assert feet == 400.0 and grown == []
    # from Oak St south: L1, L2, L3 lie within twice the 100 ft (a square corner's reach), of the town's 16 lots;
    # L1 grown reaches down to y -75
    feet = _beyond_parcels_ft(LineString([(150, 0), (150, -400)]), lots, load_profile("fort-plain"), 1.0)
    assert feet == 325.0 and grown == [3]
