"""`network check` at a pump station, by hand, through the CLI: gravity sewer ends where the flow is pumped on.

Manhole S1 (0, 0) drains by 8 in gravity main G1 east to pump station PS (300, 0); force main F1 (4 in, inverts
rising 416 -> 421 ft) runs 495 ft north from PS to manhole MH2 (300, 495), and gravity main G2 east to MH3 and the
plant.
"""

from __future__ import annotations

import pytest

from tests.test_network_cases import by_check, check_json, line, mh, plant, write_town


def pumped(tmp_path, *, g1_ft=300.0, structure="pump station", force_bend=False):
    x = g1_ft
    f1 = [(x, 0), (x, 495)] if not force_bend else [(x, 0), (x, 200), (x + 150, 200), (x + 150, 495)]
    top = f1[-1]
    mains = [
        line("G1", (0, 0), (x, 0), us_invert_ft=418.0, ds_invert_ft=416.0, diameter_in=8.0),
        line("F1", *f1, sewer_type="force", us_invert_ft=416.0, ds_invert_ft=421.0, diameter_in=4.0),
        line("G2", top, (top[0] + 300, top[1]), us_invert_ft=420.0, ds_invert_ft=419.0, diameter_in=8.0),
    ]
    manholes = [
        mh("S1", 0, 0),
        mh("PS", x, 0, structure=structure),
        mh("MH2", *top),
        mh("MH3", top[0] + 300, top[1]),
    ]
    plants = [plant("WWTP", top[0] + 330, top[1])]
    return write_town(tmp_path / "pumped.gpkg", mains, manholes, plants)


@pytest.mark.parametrize("structure", ["pump station", "wet well"])
def test_manhole_spacing_stops_at_the_pump_station_and_no_bend_is_found_there(tmp_path, structure):
    # S1 to MH2 was "795 ft of existing 8-in sewer ... to the next manhole MH2", counting the 495 ft force main, and
    # PS's right angle between G1 and F1 was "a change of alignment without a manhole" (a tester).
    report = check_json(pumped(tmp_path, structure=structure))
    assert not by_check(report, "manhole_spacing")
    assert not [d for d in by_check(report, "alignment_change") if "PS" in d["message"]]
    assert not [d for d in by_check(report, "junction_without_manhole") if d["feature_id"] == "PS"]


def test_a_long_gravity_run_to_the_pump_station_is_measured_to_it(tmp_path):
    report = check_json(pumped(tmp_path, g1_ft=600.0))
    [found] = by_check(report, "manhole_spacing")
    assert found["feature_id"] == "S1"
    assert found["message"].startswith("600 ft of existing 8-in sewer from manhole S1 to pump station PS: more than")


def test_a_force_main_bends_without_a_manhole(tmp_path):
    # A force main needs no manholes along it (fittings and thrust blocks at its bends), as the spacing rule says.
    report = check_json(pumped(tmp_path, force_bend=True))
    assert not [d for d in by_check(report, "alignment_change") if d["feature_id"] == "F1"]
    assert not by_check(report, "manhole_spacing")


def test_an_existing_main_larger_than_any_pipe_made_is_a_warning(tmp_path):
    # A plan refuses a new main over 144 in; an existing one (a typo, a model's dummy link) was taken as real.
    path = write_town(
        tmp_path / "huge.gpkg",
        [line("A", (0, 0), (300, 0), diameter_in=8.0), line("B", (300, 0), (600, 0), diameter_in=590.55)],
        [mh("MH1", 0, 0), mh("MH2", 300, 0), mh("MH3", 600, 0)],
        [plant("WWTP", 630, 0)],
    )
    [found] = by_check(check_json(path), "implausible_diameter")
    assert (found["feature_id"], found["severity"]) == ("B", "warning")
    assert found["message"].startswith("Existing main B is given 590.55 in across, larger than any sewer pipe made")
