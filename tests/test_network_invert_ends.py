"""A main's two inverts read at the ends they belong to, as an engineer reads them (docs/network.md, step 3).

Real mains are drawn in any direction (about half of Manchester's point away from the plant). A tester's town drawn
against the flow, every field agreeing that the flow runs MH-4 -> MH-3 (from/to fields, inverts, the manholes'
own inverts), had every main reported as running uphill, and ``plan`` found negative slopes and no capacity: the
upstream invert had been read at the first vertex, whatever the data said.

The town: MH-4 (900 ft north) -> MH-3 -> MH-2 -> MH-1 -> MH-0, the plant's inlet, each 300 ft (MH-0 100 ft) apart,
inverts falling 1.2 ft a main (0.004 ft/ft), every main drawn from its downstream manhole to its upstream one.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from shapely.geometry import LineString, box

from tests.conftest import ny_frame
from tests.test_network_cases import by_check, check_json, line, loaded, mh, network_of, plant, run, write_town

# (manhole, y, invert)
MANHOLES = [("MH-0", -100, 99.6), ("MH-1", 0, 100.0), ("MH-2", 300, 101.2), ("MH-3", 600, 102.4), ("MH-4", 900, 103.6)]
INVERT = {m: inv for m, _, inv in MANHOLES}
Y = {m: y for m, y, _ in MANHOLES}
# (main, from manhole, to manhole): the flow's direction.
FLOW = [("M-0", "MH-1", "MH-0"), ("M-1", "MH-2", "MH-1"), ("M-2", "MH-3", "MH-2"), ("M-3", "MH-4", "MH-3")]


def backwards_mains(us="us_invert_ft", ds="ds_invert_ft", fields=True, inverts=None):
    """Every main drawn from its downstream manhole to its upstream one; ``us`` and ``ds`` name the invert
    columns, holding the upstream and downstream manholes' inverts (``inverts`` overrides per main)."""
    rows = []
    for main_id, up, down in FLOW:
        attrs = {"sewer_type": "sanitary", "diameter_in": 8}
        if fields:
            attrs |= {"from_manhole": up, "to_manhole": down}
        first, last = (inverts or {}).get(main_id, (INVERT[up], INVERT[down]))
        attrs |= {us: first, ds: last}
        rows.append(line(main_id, (0, Y[down]), (0, Y[up]), **attrs))
    return rows


def manholes(with_inverts=True, inverts=None):
    given = INVERT | (inverts or {})
    rows = []
    for name, y, _ in MANHOLES:
        attrs = {"structure": "plant inlet" if name == "MH-0" else "manhole"}
        if with_inverts:
            attrs["invert_ft"] = given[name]
        rows.append(mh(name, 0, y, **attrs))
    return rows


def town(path, mains, mhs, parcels=False):
    lots, houses = [], []
    if parcels:
        for i in range(20):
            for side, (x0, x1) in (("E", (25, 175)), ("W", (-175, -25))):
                lots.append({"parcel_id": f"{side}-{i}", "units": 1, "geometry": box(x0, i * 100, x1, i * 100 + 100)})
                cx = (x0 + x1) / 2
                houses.append(
                    {"units": 1, "occupied": "yes", "geometry": box(cx - 20, i * 100 + 35, cx + 20, i * 100 + 65)}
                )
    path = write_town(path, mains, mhs, [plant("WWTP", 0, -100, outfall_manhole="MH-0")], lots or None, houses or None)
    if parcels:  # the street runs north along the sewer
        ny_frame([{"street_name": "Oak St", "geometry": LineString([(0, -200), (0, 2000)])}]).to_file(
            path, layer="streets"
        )
    return path


def ends_of(net):
    return dict(zip(map(str, net.main_id), map(str, net.invert_ends_source), strict=True))


def test_a_town_drawn_against_the_flow_reads_each_invert_at_its_manhole(tmp_path):
    path = town(tmp_path / "backwards.gpkg", backwards_mains(), manholes(), parcels=True)
    net = network_of(loaded(path))
    assert set(ends_of(net).values()) == {"manholes"}
    assert np.all(net.us_invert_ft > net.ds_invert_ft)
    for e in range(len(net.main_id)):  # each invert is its own manhole's
        assert net.us_invert_ft[e] == INVERT[str(net.node_id[net.u[e]])]
        assert net.ds_invert_ft[e] == INVERT[str(net.node_id[net.v[e]])]
    report = check_json(path)
    assert not by_check(report, "adverse_slope") and {d["severity"] for d in report} == {"info"}
    code, out, err = run("network", "check", "--profile", "fort-plain", "--data", path)
    assert code == 0, err
    assert "Inverts at their ends by: manholes 4." in " ".join(out.split())

    proposed = tmp_path / "north.gpkg"
    ny_frame([{"name": "north", "geometry": LineString([(0, 900), (0, 1900)])}]).to_file(proposed)
    code, out, err = run(
        "plan", "--profile", "fort-plain", "--data", path, "--proposed", proposed, "--diameter-in", 8, "--json"
    )
    assert code == 0, err
    down = json.loads(out)["downstream"]
    assert down["path"] == ["MH-4", "MH-3", "MH-2", "MH-1", "MH-0"]
    for main in down["mains"]:  # it had been slope -0.004, "runs uphill", no capacity
        assert main["slope"] == pytest.approx(0.004) and main["slope_source"] == "inverts"
        assert main["problem"] is None and main["capacity_gpd"] > 0 and main["capacity_ok"]


def test_inverts_alone_give_the_direction_where_the_manholes_place_them(tmp_path):
    # No from/to fields: the inverts, read at their manholes, give the flow's direction; read at the first vertex
    # they sent every main uphill, away from the plant.
    path = town(tmp_path / "inverts_only.gpkg", backwards_mains(fields=False), manholes())
    net = network_of(loaded(path))
    assert set(net.direction_source) == {"inverts"} and set(ends_of(net).values()) == {"manholes"}
    assert [str(net.node_id[net.u[e]]) for e in range(4)] == [up for _, up, _ in FLOW]
    assert not by_check(check_json(path), "adverse_slope")


@pytest.mark.parametrize(("us", "ds"), [("us_invert_ft", "ds_invert_ft"), ("upstream_invert", "downstream_invert")])
def test_without_manhole_inverts_columns_named_by_the_flow_go_to_the_ends_the_from_to_fields_name(tmp_path, us, ds):
    path = town(tmp_path / "no_mh_inverts.gpkg", backwards_mains(us, ds), manholes(with_inverts=False))
    net = network_of(loaded(path))
    assert set(ends_of(net).values()) == {"from_to_fields"}
    assert np.all(net.us_invert_ft > net.ds_invert_ft)
    assert not by_check(check_json(path), "adverse_slope")


def test_columns_named_start_and_end_stay_at_the_first_and_last_vertex(tmp_path):
    # start_invert is the invert at the first vertex as drawn: here the downstream manhole's. The flow runs from
    # the last vertex (MH-4 for M-3) by the from/to fields, downhill: nothing is adverse.
    drawn = {m: (INVERT[down], INVERT[up]) for m, up, down in FLOW}
    mains = backwards_mains("start_invert", "end_invert", inverts=drawn)
    path = town(tmp_path / "start_end.gpkg", mains, manholes(with_inverts=False))
    layers = loaded(path)
    assert layers.mains.attrs["invert_reading"] == "drawing"
    net = network_of(layers)
    assert set(ends_of(net).values()) == {"first_vertex"}
    assert np.all(net.us_invert_ft > net.ds_invert_ft)
    assert not by_check(check_json(path), "adverse_slope")
    # The same values under names that say upstream: read at the from manhole, every main runs uphill.
    path = town(tmp_path / "us_ds.gpkg", backwards_mains(inverts=drawn), manholes(with_inverts=False))
    assert len(by_check(check_json(path), "adverse_slope")) == 4

    # Read again from a store the checked layer was written to (start_invert kept beside the us_invert_ft taken
    # from it), the names still say first and last vertex.
    again = tmp_path / "again.gpkg"
    layers.mains.to_file(again, layer="mains")
    layers.manholes.to_file(again, layer="manholes")
    reread = loaded(again)
    assert reread.mains.attrs["invert_reading"] == "drawing"
    assert set(ends_of(network_of(reread)).values()) == {"first_vertex"}


def test_a_main_laid_uphill_by_every_evidence_is_still_reported(tmp_path):
    # M-2 leaves MH-3 at 101.0 and enters MH-2 at 101.2: its manholes say so, its fields say MH-3 -> MH-2.
    mains = backwards_mains(inverts={"M-3": (103.6, 101.0), "M-2": (101.0, 101.2)})
    path = town(tmp_path / "uphill.gpkg", mains, manholes(inverts={"MH-3": 101.0}))
    net = network_of(loaded(path))
    assert set(ends_of(net).values()) == {"manholes"}
    (adverse,) = by_check(check_json(path), "adverse_slope")
    assert adverse["feature_id"] == "M-2"
    assert "downstream invert 101.20 ft above upstream invert 101.00 ft" in adverse["message"]
    assert "manholes' own inverts" in adverse["message"]
    # Without the manholes' inverts, by the fields and the columns' names: the same.
    path = town(tmp_path / "uphill_fields.gpkg", mains, manholes(with_inverts=False))
    (adverse,) = by_check(check_json(path), "adverse_slope")
    assert adverse["feature_id"] == "M-2" and "from/to fields name as upstream" in adverse["message"]


def test_manholes_that_disagree_decide_nothing(tmp_path):
    # MH-3's invert matches M-3's downstream invert at M-3's first vertex, MH-4's matches the same invert at the
    # last vertex: the manholes contradict each other, and the fields' reading is used.
    mains = backwards_mains()
    path = town(tmp_path / "disagree.gpkg", mains, manholes(inverts={"MH-4": 102.4}))
    net = network_of(loaded(path))
    assert ends_of(net)["M-3"] == "from_to_fields"
    assert ends_of(net)["M-2"] == "manholes"
