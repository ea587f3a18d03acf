"""The last loose ends of planning: a main drawn over the sewer at both ends, parcels beyond a concave town's edge,
and whether a main can fall to its manhole.

On the hand-made Oak St of ``tests/test_plans.py``, with M-5 and its manholes B and C at Oak St's far end
(``tests/test_plans_leftovers.py``).
"""

from __future__ import annotations

import json

import geopandas as gpd
import pytest
from click.testing import CliRunner
from shapely.geometry import LineString

from analysis.profiles import load_profile
from gisapp.cli import main
from layers.write import write_layers
from tests.conftest import ny_frame
from tests.test_plans import check, run
from tests.test_plans_leftovers import moved, oak_with_m5


def slope(value):
    return load_profile("fort-plain", overrides={"design.min_main_slope_ft_per_ft": value})


# -- a main drawn from a manhole along existing mains, and on -------------------------------------------------------


@pytest.mark.parametrize(
    "drawn, connects, along, not_laid_ft, laid_ft",
    [
        # from P at the plant east over M-1 to A, then up Oak St to (600, 0)
        (LineString([(-400, 0), (0, 0), (600, 0)]), "A", "M-1", 400.0, 600.0),
        (LineString([(600, 0), (0, 0), (-400, 0)]), "A", "M-1", 400.0, 600.0),  # drawn the other way
        # from B over M-5 to C, then 300 ft north
        (LineString([(700, 0), (1000, 0), (1000, 300)]), "C", "M-5", 300.0, 300.0),
    ],
    ids=["P over M-1 to A", "drawn back", "B over M-5 to C"],
)
def test_a_main_drawn_from_a_manhole_along_existing_mains_connects_where_it_leaves_them(
    drawn, connects, along, not_laid_ft, laid_ft
):
    # Drawn from MH-1 over M-1 and M-2 to MH-19 and on 220 ft (the sample village, a tester), the whole 820 ft were
    # laid and costed, and the plan drained them back down the new pipe to MH-1 and up the sewer again.
    from layers.board import summary_lines

    r = run(proposed=moved(drawn), town=oak_with_m5()).as_dict()
    assert r["downstream"]["connects_at"] == connects and r["length_ft"] == laid_ft
    assert [(p["beyond_manhole"], p["along"], p["length_ft"]) for p in r["not_laid_parts"]] == [
        (connects, along, not_laid_ft)
    ]
    assert r["manholes"][0]["id"] == connects and r["main_crossings"] == []
    start = "P" if connects == "A" else "B"
    told = " ".join(check(r, "connection")["message"].split())
    assert told.startswith(
        f"The drawn main starts at existing manhole {start} (within 1 ft) and is drawn along existing main {along} to "
        f"existing manhole {connects}, where it leaves it: it connects at {connects}"
    )
    assert any(s.startswith(f"Not laid: the {not_laid_ft:,.0f} ft drawn") for s in summary_lines(r))


@pytest.mark.parametrize(
    "drawn",
    [
        LineString([(1000, 0), (700, 0), (700, -300), (-400, -300), (-400, 0)]),
        LineString([(-400, 0), (-400, -300), (700, -300), (700, 0), (1000, 0)]),
    ],
    ids=["C over M-5 and M-6 to P", "drawn back"],
)
def test_a_main_lying_over_two_existing_mains_from_a_manhole_all_the_way_is_laid_and_flagged(drawn):
    # It crashed ("The indices should be sorted": the runs along two mains were gathered unsorted). Nothing of it is
    # new, so it is laid as drawn and the crossings check names both mains it runs along.
    r = run(proposed=moved(drawn), town=oak_with_m5()).as_dict()
    assert r["not_laid_parts"] == [] and r["length_ft"] == 2000.0
    assert sorted((c["main_id"], c["kind"]) for c in r["main_crossings"]) == [
        ("M-5", "runs along"),
        ("M-6", "runs along"),
    ]


def test_parts_drawn_over_several_mains_are_named_in_the_plural():
    from analysis.plans import existing_mains_words
    from layers.board import not_laid_sentence

    part = {"length_words": "500 ft", "direction": "west", "beyond_manhole": "MH-45", "along": "M-195, M-196"}
    assert not_laid_sentence(part) == (
        "Not laid: the 500 ft drawn west of MH-45 over existing mains M-195 and M-196, which are there already."
    )
    assert existing_mains_words("M-5") == "existing main M-5"


# -- a main drawn over the sewer at both ends -------------------------------------------------------------------------

# From 100 ft west of A over M-1 to A, up Oak St to B and on over M-5 for 200 ft.
BOTH_ENDS = LineString([(-100, 0), (0, 0), (900, 0)])


# What the plan says of each part, as the summary and each export's reason word it.
BOTH_SAID = [
    "Not laid: the 100 ft drawn west of A over existing main M-1, which is there already.",
    "Not laid: the 200 ft drawn east of B over existing main M-5, which is there already.",
]


def parts(doc) -> list[tuple]:
    return [(p["beyond_manhole"], p["along"], p["direction"], p["length_ft"]) for p in doc["not_laid_parts"]]


def test_a_main_drawn_over_the_sewer_at_both_ends_is_the_main_between_the_two_manholes():
    # A plan carried one part not laid: the lower 100 ft over M-1 were left out, and the upper 200 ft over M-5 laid,
    # costed, leak-tested and given a new manhole on M-5. Drawn so, the main is meant from A to B.
    from layers.board import summary_lines

    town = oak_with_m5()
    r = run(proposed=moved(BOTH_ENDS), town=town).as_dict()
    to_b = run(proposed=moved(LineString([(0, 0), (700, 0)])), town=town).as_dict()
    assert parts(r) == [("A", "M-1", "west", 100.0), ("B", "M-5", "east", 200.0)]
    assert r["not_laid"] == r["not_laid_parts"][0]  # the lower end's, where a plan of one part carried it
    assert r["length_ft"] == r["drawn_length_ft"] == 700.0 and r["connecting_main"] is None
    assert [m["id"] for m in r["manholes"]] == [m["id"] for m in to_b["manholes"]] == ["A", "NEW-1", "B"]
    assert r["cost"]["total"] == pytest.approx(to_b["cost"]["total"], abs=0.05)
    assert r["exfiltration_allowance_gpd"] == to_b["exfiltration_allowance_gpd"]
    assert r["main_crossings"] == []  # neither part is laid, so neither runs along a main
    told = " ".join(check(r, "connection")["message"].split())
    assert check(r, "connection")["verdict"] == "for the engineer"
    assert "The 100 ft drawn west of A over M-1 is not laid, costed or checked: M-1 is there already." in told
    assert (
        "Its upper end lies on existing main M-5 too (within 1 ft), and the main is drawn along it from existing "
        "manhole B: it ends at B, built into it, where no new manhole is built. The 200 ft drawn east of B over M-5 "
        "is not laid, costed or checked: M-5 is there already." in told
    )
    assert "are laid, costed and checked in this plan" not in told
    assert [s for s in summary_lines(r) if s.startswith("Not laid")] == BOTH_SAID
    # over M-1 alone (ending on Oak St short of B): one part, and nothing said of an upper end
    short = run(proposed=moved(LineString([(-100, 0), (0, 0), (600, 0)])), town=town).as_dict()
    assert "Its upper end" not in check(short, "connection")["message"]
    assert parts(short) == [("A", "M-1", "west", 100.0)] and short["length_ft"] == 600.0


@pytest.mark.parametrize("suffix", ["gpkg", "geojson", "parquet"])
def test_a_main_drawn_over_the_sewer_at_both_ends_exports_both_parts_and_reads_back_as_drawn(tmp_path, suffix):
    # The export's not_laid was one row, and its read-back joined one part to one end (two pieces were refused).
    from layers.read import read_proposed
    from layers.write import write_plan
    from tests.test_plans_leftovers import CRS, not_laid_features

    town = oak_with_m5()
    result = run(proposed=moved(BOTH_ENDS), town=town)
    doc = result.as_dict()
    path = tmp_path / f"plan.{suffix}"
    write_plan(str(path), doc, result.line, town["parcels"], crs=CRS)
    part = not_laid_features(path, suffix)
    assert part[["at_manhole", "along", "direction", "length_ft", "feature"]].values.tolist() == [
        ["A", "M-1", "west", 100.0, "not laid"],
        ["B", "M-5", "east", 200.0, "not laid"],
    ]
    assert part["reason"].tolist() == BOTH_SAID
    lower, upper = part.geometry.values
    assert lower.hausdorff_distance(moved(LineString([(-100, 0), (0, 0)]))) < 0.01
    assert upper.hausdorff_distance(moved(LineString([(700, 0), (900, 0)]))) < 0.01

    line, note = read_proposed(str(path), target_crs=CRS)
    assert line.hausdorff_distance(moved(BOTH_ENDS)) < 0.01 and line.length == pytest.approx(1000.0, abs=0.01)
    assert "read with the 100 ft and the 200 ft drawn and not laid, one at each end, joined to it again" in note
    again = run(proposed=line, town=town).as_dict()
    assert parts(again) == parts(doc) and again["cost"]["total"] == doc["cost"]["total"]
    from analysis.plans import as_drawn

    # the web's reopened scenario draws the same line as drawn
    assert as_drawn(result.line, result.not_laid_parts).hausdorff_distance(line) < 0.01


def test_a_main_drawn_over_the_sewer_at_both_ends_from_the_cli_leaves_out_both_and_reads_back(tmp_path):
    # As a planner meets it: the line in a GeoJSON (longitude/latitude), evaluated by the CLI, exported and given
    # back. Its upper end read from degrees lies a hair off M-5: it is found drawn over M-5 all the same.
    data = tmp_path / "town.gpkg"
    write_layers(str(data), oak_with_m5())
    ny_frame([{"geometry": BOTH_ENDS}]).to_crs(4326).to_file(tmp_path / "both.geojson")
    args = ["plan", "--profile", "fort-plain", "--data", str(data), "--diameter-in", "8"]
    out = CliRunner().invoke(main, [*args, "--json", "--proposed", str(tmp_path / "both.geojson")])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    assert parts(doc) == [("A", "M-1", "west", 100.0), ("B", "M-5", "east", 200.0)]
    assert doc["length_ft"] == 700.0 and doc["main_crossings"] == []
    export = tmp_path / "plan.gpkg"
    first = CliRunner().invoke(
        main, [*args, "--proposed", str(tmp_path / "both.geojson"), "--out", str(export)], terminal_width=200
    )
    assert first.exit_code == 0, first.output
    said = " ".join(first.output.split())
    # from the manhole it connects at: A or B, whichever lies nearer its end (as read from degrees, to a hair)
    assert (
        f"The export holds the main as laid, from {doc['manholes'][0]['id']}, and apart from it the 100 ft drawn west "
        "of A and the 200 ft drawn east of B that are not laid (its layer not_laid): read back with --proposed, the "
        "three are joined again as drawn" in said
    )
    back = CliRunner().invoke(main, [*args, "--proposed", str(export)], terminal_width=200)
    assert back.exit_code == 0, back.output
    said = " ".join(back.output.split())
    assert "its proposed main was read with the 100 ft and the 200 ft drawn and not laid, one at each end" in said
    assert all(sentence in said for sentence in BOTH_SAID) and "700 ft of 8-inch main, 1 new manhole" in said


def test_two_parts_not_laid_meeting_the_same_end_of_the_main_are_refused(tmp_path):
    # One part at each end is joined back; two at one end (a part copied in QGIS) would be a guess, not the drawing.
    import geopandas as gpd

    from layers.errors import LayerError
    from layers.read import read_proposed
    from layers.write import write_plan
    from tests.test_plans_leftovers import CRS

    town = oak_with_m5()
    result = run(proposed=moved(BOTH_ENDS), town=town)
    write_plan(str(tmp_path / "plan.geojson"), result.as_dict(), result.line, town["parcels"], crs=CRS)
    every = gpd.read_file(tmp_path / "plan.geojson").to_crs(CRS)
    upper = every.index[every["feature"].eq("not laid")][1]
    every.loc[upper, "geometry"] = moved(LineString([(0, 0), (0, -150)]))  # moved to A, beside the lower part
    every.to_crs(4326).to_file(tmp_path / "edited.geojson", driver="GeoJSON")
    with pytest.raises(LayerError) as told:
        read_proposed(str(tmp_path / "edited.geojson"), target_crs=CRS)
    said = " ".join(str(told.value).split())
    assert "edited.geojson's part not laid is in 2 pieces that do not join, the 100 ft and the 150 ft" in said
    assert "both meeting the same end of its proposed main: there is at most one part at each end" in said


def test_a_main_drawn_over_the_sewer_at_both_ends_on_the_web_map_gives_both_parts_and_the_line_as_drawn(tmp_path):
    from tests.conftest import csrf
    from tests.test_plans_web import evaluate, oak_app

    store = tmp_path / "own" / "town.gpkg"  # not analysed: a plan needs the layers alone
    store.parent.mkdir()
    write_layers(str(store), oak_with_m5())
    client = oak_app(store, tmp_path).test_client()
    token = csrf(client)
    drawn = ny_frame([{"geometry": BOTH_ENDS}]).to_crs(4326).geometry.iloc[0]
    geometry = {"type": "LineString", "coordinates": [list(c) for c in drawn.coords]}
    doc = evaluate(client, token, geometry=geometry, name="A to B", save=True)
    assert parts(doc) == [("A", "M-1", "west", 100.0), ("B", "M-5", "east", 200.0)]
    assert [len(g["coordinates"]) for g in doc["map"]["not_laid_parts"]] == [2, 2]
    assert doc["map"]["not_laid"] == doc["map"]["not_laid_parts"][0] and len(doc["map"]["drawn"]["coordinates"]) == 4
    reopened = client.get("/plans/A%20to%20B.json").get_json()
    assert len(reopened["map"]["not_laid_parts"]) == 2 and len(reopened["map"]["drawn"]["coordinates"]) == 4
    export = client.get("/plans/A%20to%20B.geojson")
    (tmp_path / "a-to-b.geojson").write_bytes(export.data)
    every = pyogrio_frame(tmp_path / "a-to-b.geojson")
    assert every.loc[every["feature"] == "not laid", "at_manhole"].tolist() == ["A", "B"]


def test_a_scenario_saved_when_a_plan_carried_one_part_still_reopens_exports_and_reads_back(tmp_path):
    # Saved by an earlier version: its document has not_laid (one part, with upper_laid_along) and no
    # not_laid_parts. The map, the /plans page, the export and its read-back take its one part as before.
    import geopandas as gpd

    from layers.read import read_proposed
    from layers.register import Register
    from tests.test_plans_leftovers import CRS, oak_page
    from tests.test_plans_web import evaluate

    store, client, token, geometry = oak_page(tmp_path)
    evaluate(client, token, geometry=geometry, name="Old", save=True)
    register = Register(str(store.parent / "register.sqlite"), create=False)
    saved = register.saved_plan("Old")
    old = {k: v for k, v in saved["result"].items() if k != "not_laid_parts"}
    old["not_laid"] = old["not_laid"] | {"upper_laid_along": None}
    register.save_plan(
        "Old",
        profile=saved["profile"],
        diameter_in=saved["diameter_in"],
        wkt=saved["geometry_wkt"],
        crs=saved["crs"],
        result=old,
        replace=True,
    )
    reopened = client.get("/plans/Old.json").get_json()
    assert [len(g["coordinates"]) for g in reopened["map"]["not_laid_parts"]] == [2]
    assert len(reopened["map"]["drawn"]["coordinates"]) == 3
    assert client.get("/plans").status_code == 200
    export = client.get("/plans/Old.geojson")
    (tmp_path / "old.geojson").write_bytes(export.data)
    every = gpd.read_file(tmp_path / "old.geojson")
    assert every.loc[every["feature"] == "not laid", ["at_manhole", "length_ft"]].values.tolist() == [["A", 180.0]]
    line, note = read_proposed(str(tmp_path / "old.geojson"), target_crs=CRS)
    assert line.length == pytest.approx(1080.0, abs=0.01)
    assert "read with the 180 ft drawn and not laid joined to it again" in note


def pyogrio_frame(path):
    import pyogrio

    return pyogrio.read_dataframe(path)


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


# -- whether the main can fall to its manhole ------------------------------------------------------------------------

# Oak St's inverts: M-1 leaves A at 100.00 ft; M-5 enters B (700, 0) at 102.00 ft and M-6 leaves it at 102.00 ft.
# None of our three laws sets a main's least slope (a building sewer's only: § 144-11B, § 196-18F), so it is the
# town engineer's number, given to the plan; without one no gravity check is made.


def gravity(doc) -> tuple[str, str]:
    found = check(doc, "gravity")
    return found["verdict"], " ".join(found["message"].split())


def test_no_gravity_check_is_made_without_the_town_engineers_least_slope():
    # none of the three laws sets a main's slope: each profile leaves min_main_slope_ft_per_ft to the town
    for name in ("fort-plain", "poughkeepsie", "wappinger"):
        rule = load_profile(name).design.min_main_slope_ft_per_ft
        assert (rule.value, rule.kind) == (None, "municipality") and "town's engineer's number" in rule.note
    assert "gravity" not in [c["check"] for c in run().as_dict()["design_checks"]]


def test_a_main_ending_at_a_manhole_too_little_above_its_connection_cannot_fall_to_it():
    # Drawn from A up Oak St and over M-5 past B: laid from A to B (700 ft). At 0.004 ft/ft it must fall 2.80 ft;
    # B's invert is 2.00 ft above A's. At 0.002 ft/ft, 1.40 ft is needed: it can.
    town, drawn = oak_with_m5(), moved(LineString([(0, 0), (900, 0)]))
    verdict, told = gravity(run(proposed=drawn, town=town, profile=slope(0.004)).as_dict())
    assert verdict == "does not meet"
    assert told.startswith(
        "The main cannot fall to A at 0.004 ft/ft: existing manhole B, 700 ft up the main, has its invert at "
        "102.00 ft, 2.00 ft above A's invert (100.00 ft, M-1's), and at that slope the main must fall 2.80 ft over "
        "those 700 ft (0.0029 ft/ft is all there is)."
    )
    low = oak_with_m5()  # B half a foot below A: the main between them drains down to B, and falls 0.50 ft
    low["mains"].loc[low["mains"]["main_id"].isin(["M-5", "M-6"]), ["us_invert_ft", "ds_invert_ft"]] = 99.5
    doc = run(proposed=drawn, town=low, profile=slope(0.002)).as_dict()
    verdict, told = gravity(doc)
    assert doc["downstream"]["connects_at"] == "B"
    assert (
        "meets existing manhole A too: of the manholes at its ends, B has the lowest invert"
        in check(doc, "connection")["message"]
    )
    assert verdict == "does not meet" and "invert at 100.00 ft, 0.50 ft above B's invert (99.50 ft, M-6's)" in told
    assert "must fall 1.40 ft over those 700 ft (0.0007 ft/ft is all there is)" in told
    doc = run(proposed=drawn, town=town, profile=slope(0.002)).as_dict()
    verdict, told = gravity(doc)
    assert verdict == "meets"
    assert check(doc, "gravity")["cited"] == "(§ 144-17A; value set by the user)"
    assert (
        "from existing manhole B at its upper end (invert 102.00 ft) to A's invert (100.00 ft, M-1's) it falls "
        "2.00 ft over 700 ft, and 1.40 ft is needed" in told
    )


def test_a_main_through_a_manhole_too_little_above_its_connection_cannot_fall_to_it():
    # From A east to B and on 300 ft north: built into B at station 700, whose invert is too high at 0.004 ft/ft.
    # At 0.002 it can fall from B; its upper end, at a new manhole, has no invert in the data: not checked there.
    town, drawn = oak_with_m5(), moved(LineString([(0, 0), (700, 0), (700, 300)]))
    assert gravity(run(proposed=drawn, town=town, profile=slope(0.004)).as_dict())[0] == "does not meet"
    verdict, told = gravity(run(proposed=drawn, town=town, profile=slope(0.002)).as_dict())
    assert verdict == "not known" and told.startswith("Not checked: the invert the main would need at its upper end")
    assert "its upper end's invert must be at least 102.00 ft, 1,000 ft up the main" in told
    assert (
        "From each existing manhole it runs through whose invert is known (B), it can fall to A at that slope." in told
    )


@pytest.mark.parametrize(
    ("drawn", "said"),
    [
        (
            LineString([(0, 0), (900, 0)]),
            "Laid at 0.004 ft/ft from A's invert (100.00 ft, M-1's), its upper end's "
            "invert must be at least 103.60 ft, 900 ft up the main",
        ),
        # on M-1 half way from A (100.00) to P (98.00): a new manhole on it at 99.00 ft
        (
            LineString([(-200, 0), (-200, 500)]),
            "Laid at 0.004 ft/ft from the invert of M-1 where the new manhole is "
            "built on it (99.00 ft), its upper end's invert must be at least 101.00 ft, 500 ft up the main",
        ),
    ],
    ids=["at a manhole", "on a main"],
)
def test_a_main_ending_at_a_new_manhole_is_not_checked_and_says_the_least_invert_its_upper_end_needs(drawn, said):
    verdict, told = gravity(run(proposed=drawn, profile=slope(0.004)).as_dict())
    assert verdict == "not known"
    assert told.startswith(
        "Not checked: the invert the main would need at its upper end is not known (it ends at a new manhole, and no "
        "ground or rim elevation is in the data)."
    )
    assert said in told


def test_where_the_connections_invert_is_not_in_the_data_the_gravity_check_is_not_made():
    from tests.test_plans import layout

    town = layout()
    town["mains"][["us_invert_ft", "ds_invert_ft"]] = float("nan")
    verdict, told = gravity(run(town=town, profile=slope(0.004)).as_dict())
    assert verdict == "not known"
    assert told == (
        "Not checked: the invert where the main joins the sewer, at A, is not in the data (no main at it has an "
        "invert): give the inverts of the mains at A to check that the main can fall to it at 0.004 ft/ft."
    )


@pytest.mark.parametrize(
    "drawn", [LineString([(0, 0), (700, 0)]), LineString([(700, 0), (0, 0)])], ids=["A to B", "B to A"]
)
@pytest.mark.parametrize(("b_invert", "connects"), [(102.0, "A"), (99.5, "B")])
def test_a_main_between_two_manholes_drains_to_the_lower_whichever_its_id(drawn, b_invert, connects):
    # Taken by ID, a main drawn between MH-9 (invert 421.58 ft) and MH-45 (419.18 ft) connected at MH-9, uphill of
    # its other end, and failed the gravity check at any slope (a tester on the sample village).
    town = oak_with_m5()
    town["mains"].loc[town["mains"]["main_id"].isin(["M-5", "M-6"]), ["us_invert_ft", "ds_invert_ft"]] = b_invert
    doc = run(proposed=moved(drawn), town=town).as_dict()
    assert doc["downstream"]["connects_at"] == connects and doc["not_laid_parts"] == []
    other = "B" if connects == "A" else "A"
    said = " ".join(check(doc, "connection")["message"].split())
    # the inverts decide, and the sentence says so, also where the lower is the lower ID (it said "exactly as near:
    # the lowest ID, A, is taken" there, and nothing at all read back from degrees with A's end the nearer)
    assert f"meets existing manhole {other} too: of the manholes at its ends, {connects} has the lowest invert" in said
    # read back from degrees (the web map's lines, a GeoJSON export), its ends lie a hair off the manholes: the same
    from layers.crs import measuring_crs

    crs = measuring_crs("EPSG:2260")
    there = gpd.GeoSeries([moved(drawn)], crs=crs).to_crs(4326).to_crs(crs).iloc[0]
    again = run(proposed=there, town=town).as_dict()
    assert again["downstream"]["connects_at"] == connects and again["not_laid_parts"] == []
    assert " ".join(check(again, "connection")["message"].split()) == said


@pytest.mark.parametrize("b_invert", [102.0, 99.5])
def test_a_main_between_two_manholes_says_the_same_drawn_in_feet_or_in_degrees(tmp_path, b_invert):
    """A plan's line in a GeoJSON file in EPSG:2260 and the same line in EPSG:4326 give the same findings, word for
    word. In degrees the main between MH-9 and MH-45 of the sample village lost "meets existing manhole MH-9 too":
    read back, MH-45's end lay a hair nearer than MH-9's, and the sentence was said only where the nearer end's
    manhole was not the lower."""
    town = oak_with_m5()
    town["mains"].loc[town["mains"]["main_id"].isin(["M-5", "M-6"]), ["us_invert_ft", "ds_invert_ft"]] = b_invert
    data = tmp_path / "town.gpkg"
    write_layers(str(data), town)
    drawn = gpd.GeoDataFrame(geometry=[moved(LineString([(0, 0), (700, 0)]))], crs="EPSG:2260")
    docs = {}
    for crs in ("EPSG:2260", "EPSG:4326"):
        path = tmp_path / f"main_{crs[5:]}.geojson"
        drawn.to_crs(crs).to_file(path)
        args = ["plan", "--profile", "fort-plain", "--data", str(data), "--proposed", str(path), "--diameter-in", "8"]
        result = CliRunner().invoke(main, [*args, "--json"], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        docs[crs] = json.loads(result.output)
    feet, degrees = ({c["check"]: " ".join(c["message"].split()) for c in docs[crs]["design_checks"]} for crs in docs)
    assert degrees == feet
    lower, other = ("A", "B") if b_invert > 100 else ("B", "A")
    told = f"meets existing manhole {other} too: of the manholes at its ends, {lower} has the lowest invert"
    assert told in feet["connection"]
