"""A ``flow_gpd`` of 0 on a lot the analysis found occupied, warned of after the analysis.

Loading warns of a 0 on a lot the parcels layer itself marks occupied or gives living units (``zero_flow``,
``layers.validate._zero_flows``). A lot found occupied only by the analysis (a house standing on it, from the
buildings layer) is known so only after it, and its 0 was counted as sending nothing without a word: the system's
flow came out smaller and every other parcel's share of it larger. Now ``duties`` (and ``analyze``) warn of it,
once: a lot loading named is not named again, and a vacant lot's 0 is no one's concern.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from shapely.geometry import LineString, Point, box

from analysis.flows import zero_flows_found_occupied
from analysis.mandate import analyze_mandates
from analysis.profiles import load_profile
from gisapp.cli import main
from layers.write import write_layers
from tests.conftest import ny_frame

FP = load_profile("fort-plain")


def _layers(*, with_occupied: bool = False) -> dict:
    """Lots along one sewered street. A: a house stands on it, flow_gpd 0 (found occupied only by the analysis). B:
    vacant, flow_gpd 0. C: a house, one living unit, flow_gpd 0 (loading names it). D: a house metered at 300 gpd.
    With ``with_occupied``, an occupied column: left empty for A, B, D (the buildings decide) and yes for E, a
    lot with no building and flow_gpd 0 (loading names it)."""
    rows = [
        {"parcel_id": "A", "flow_gpd": 0.0, "units": None},
        {"parcel_id": "B", "flow_gpd": 0.0, "units": None},
        {"parcel_id": "C", "flow_gpd": 0.0, "units": 1},
        {"parcel_id": "D", "flow_gpd": 300.0, "units": None},
    ]
    if with_occupied:
        rows = [r | {"occupied": None} for r in rows] + [{"parcel_id": "E", "flow_gpd": 0.0, "occupied": "yes"}]
    lots = [r | {"geometry": box(i * 70, 25, i * 70 + 60, 125)} for i, r in enumerate(rows)]
    houses = [  # 900 sq ft each, on A, C and D; none on B (or E)
        {"building_id": f"H-{pid}", "geometry": box(i * 70 + 15, 60, i * 70 + 45, 90)}
        for i, pid in enumerate("ABCD")
        if pid != "B"
    ]
    return {
        "parcels": ny_frame(lots),
        "mains": ny_frame([{"main_id": "M-1", "geometry": LineString([(-100, 0), (1000, 0)])}]),
        "buildings": ny_frame(houses),
        "manholes": ny_frame(
            [{"manhole_id": "MH-1", "geometry": Point(-100, 0)}, {"manhole_id": "MH-2", "geometry": Point(1000, 0)}]
        ),
        "treatment_plants": ny_frame([{"outfall_id": "WWTP", "outfall_manhole": "MH-2", "geometry": Point(1020, 0)}]),
        "streets": ny_frame([{"street_name": "Main St", "geometry": LineString([(-100, 0), (1000, 0)])}]),
    }


def test_a_house_lot_of_zero_flow_is_found_and_a_vacant_one_or_one_loading_named_is_not():
    layers = _layers()
    found = analyze_mandates(
        layers["parcels"], layers["mains"], streets=layers["streets"], buildings=layers["buildings"], profile=FP
    ).parcels
    occupied = found.set_index("parcel_id")["occupied"]
    assert occupied.to_dict() == {"A": True, "B": False, "C": True, "D": True}  # by the houses standing on them
    # C holds a living unit: loading named it already; B is vacant; D's flow is metered
    assert zero_flows_found_occupied(found).tolist() == ["A"]
    # the parcels as loaded, before any analysis: nothing found occupied, nothing said
    assert zero_flows_found_occupied(layers["parcels"]).tolist() == []


@pytest.fixture(scope="module")
def towns(tmp_path_factory):
    folder = tmp_path_factory.mktemp("zero_found")
    paths = {}
    for name, with_occupied in (("bare", False), ("marked", True)):
        paths[name] = str(folder / f"{name}.gpkg")
        write_layers(paths[name], _layers(with_occupied=with_occupied))
    return paths


def _run(*args) -> str:
    result = CliRunner().invoke(main, [*map(str, args)], env={"COLUMNS": "300"}, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_duties_warns_of_the_house_lot_of_zero_flow_once(towns):
    said = _run("duties", "--profile", "fort-plain", "--data", towns["bare"])
    assert "column flow_gpd of the parcels is 0 for 1 parcel the analysis found occupied" in said, said
    assert "by its property class (A), so it counts as sending nothing to the sewer" in said
    assert "Leave the cell empty where the flow is not known" in said
    # loading named C (its living unit), in its own words; not again after the analysis
    assert "is 0 for 1 parcel marked occupied or holding living units in this layer (C)" in said

    doc = json.loads(_run("duties", "--profile", "fort-plain", "--data", towns["bare"], "--json"))
    assert doc["summary"]["zero_flow_found_occupied"] == {"parcels": 1, "parcel_ids": ["A"]}
    (warning,) = doc["warnings"]
    assert "(A)" in warning and "(B" not in warning and "C)" not in warning


def test_a_lot_the_occupied_column_leaves_to_its_buildings_is_warned_of_after_the_analysis(towns):
    """With an occupied column, loading names the lots it marks occupied (E) and those with living units (C); a lot
    whose cell is empty is decided by its building (A), and only the analysis can warn of it."""
    doc = json.loads(_run("duties", "--profile", "fort-plain", "--data", towns["marked"], "--json"))
    assert doc["summary"]["zero_flow_found_occupied"] == {"parcels": 1, "parcel_ids": ["A"]}


def test_analyze_says_it_in_its_text_and_json_as_a_run_warning(towns):
    said = _run("analyze", "--profile", "fort-plain", "--data", towns["bare"])
    assert "the analysis found occupied by a building on it or by its property class (A)" in said, said
    doc = json.loads(_run("analyze", "--profile", "fort-plain", "--data", towns["bare"], "--json"))
    assert doc["summary"]["duties"]["zero_flow_found_occupied"]["parcel_ids"] == ["A"]
    assert [w for w in doc["warnings"] if "flow_gpd" in w]


def test_trace_upstream_and_plan_say_it_too(towns, tmp_path):
    """The sewershed of MH-2 counts A's 0 in its flow, and a plan counts it in the present flow downstream."""
    said = _run("trace", "--profile", "fort-plain", "--data", towns["bare"], "--manhole", "MH-2", "--upstream")
    assert "the analysis found occupied by a building on it or by its property class (A)" in said, said
    doc = json.loads(
        _run("trace", "--profile", "fort-plain", "--data", towns["bare"], "--manhole", "MH-2", "--upstream", "--json")
    )
    assert doc["zero_flow_found_occupied"] == {"parcels": 1, "parcel_ids": ["A"]}

    proposed = tmp_path / "proposed.geojson"
    ny_frame([{"geometry": LineString([(-100, 0), (-100, 400)])}]).to_file(proposed)
    args = ("plan", "--profile", "fort-plain", "--data", towns["bare"], "--proposed", proposed, "--diameter-in", 8)
    said = _run(*args)
    assert "the analysis found occupied by a building on it or by its property class (A)" in said, said
    assert json.loads(_run(*args, "--json"))["zero_flow_found_occupied"]["parcel_ids"] == ["A"]


def test_the_summary_page_says_it_among_the_runs_warnings():
    """The Summary page shows ``run_warnings`` of the recorded run, as ``analyze --json`` does: the run's duties
    summary carries the lots, and the warning names the first five and the count."""
    from gisapp.words import run_warnings

    found = {"parcels": 7, "parcel_ids": list("ABCDEFG")}
    (said,) = [w for w in run_warnings({"duties": {"zero_flow_found_occupied": found}}) if "flow_gpd" in w]
    assert "is 0 for 7 parcels the analysis found occupied" in said and "(A, B, C, D, E and 2 more)" in said
    assert not run_warnings({"duties": {"zero_flow_found_occupied": {"parcels": 0, "parcel_ids": []}}})
