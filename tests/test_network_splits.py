"""Where the flow splits at a passed manhole: which way traces go, that they say so, and what drains where.

Each model is a few lines whose right answer can be read off the text, run through the CLI as a user would; the
real models are counted as they are.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from tests.conftest import DATA
from tests.test_swmm_loose_ends import cli, trace


def check(path):
    code, out, err = cli("network", "check", "--profile", "fort-plain", "--data", path, "--data-crs", "local", "--json")
    assert code == 0, err
    return json.loads(out)


# Every node of the real models that the flow leaves by more than one link, and by which: an overflow above a pump
# or an orifice, a pump beside a pipe, street channels beside inlets and overflow channels above pipes.
REAL_SPLITS = {
    "bellinge-swmm/bellinge_small.inp": {},
    "swmm-swmmio/Example1.inp": {},
    "swmm-swmmio/Pump_Control_Model.inp": {"SU1": "PUMP1"},
    "swmm-swmmio/SWMMExtCntrlModel.inp": {"SU1": "OR1", "SU2": "OR3", "SU3": "OR2"},
    "swmm-swmmio/model_full_features_network_xy.inp": {"J2": "C2.1"},
    "swmm-swmmio/test_inlet_drains.inp": {
        "Aux2": "Street1:ComboInlet",
        "Aux3": "P4",
        "Aux5": "Street4",
        "Aux6": "Street5",
        "J4": "P6",
        "J5": "P5",
        "J7": "P7",
        "J10": "P8",
    },
}


@pytest.mark.parametrize("name", REAL_SPLITS)
def test_every_split_in_the_real_models_is_said_with_the_way_followed(name):
    # 13 nodes in 4 of the 6 real models: each a split_flow finding naming the link traces follow and every other.
    found = {d["feature_id"]: d["message"] for d in check(DATA / name) if d["check"] == "split_flow"}
    assert set(found) == set(REAL_SPLITS[name])
    for node, followed in REAL_SPLITS[name].items():
        assert f"traces follow {followed}, " in found[node], found[node]


CSO_MODEL = """[OPTIONS]
FLOW_UNITS  CFS

[JUNCTIONS]
;;Name  Elev  MaxDepth
MH1     100   10
MH2     98    10
MH3     96    10

[OUTFALLS]
PLANT   90    FREE
CSO     97    FREE

[CONDUITS]
;;Name  From  To     Length  Roughness  InOffset  OutOffset
C1      MH1   MH2    200     0.013      0         0
C2      MH2   MH3    300     0.013      0         0
C3      MH3   PLANT  400     0.013      0         0

[{section}]
{spill}

[XSECTIONS]
C1      CIRCULAR  1  0  0  0  1
C2      CIRCULAR  1  0  0  0  1
C3      CIRCULAR  1  0  0  0  1
SPILL   RECT_OPEN 1  2  0  0

[COORDINATES]
MH1     0    0
MH2     200  0
MH3     500  0
PLANT   900  0
CSO     200  30
"""


@pytest.mark.parametrize(
    ("section", "spill", "kind"),
    [
        ("WEIRS", "SPILL  MH2  CSO  TRANSVERSE  0  3.33  NO  0  0", "weir"),
        ("ORIFICES", "SPILL  MH2  CSO  SIDE  0  0.65  NO  0", "orifice"),
        ("OUTLETS", "SPILL  MH2  CSO  0  FUNCTIONAL/DEPTH  10  0.5  NO", "outlet"),
    ],
)
def test_a_spill_as_low_as_the_pipe_is_the_overflow_not_the_sewers_way(tmp_path, section, spill, kind):
    # MH2, a combined-sewer regulator: the pipe C2 at its invert goes on 700 ft to the plant; SPILL, a weir (an
    # orifice, an outlet) also at the invert, 0 ft to the overflow outfall CSO. Traces took SPILL, the shorter way,
    # and named CSO as where the connections at MH1 drain.
    path = tmp_path / "cso.inp"
    path.write_text(CSO_MODEL.format(section=section, spill=spill))
    doc = trace(path, "MH1")
    assert doc["path"] == ["MH1", "MH2", "MH3", "PLANT"] and doc["length_ft"] == 900, doc
    (split,) = doc["splits"]
    assert split["node"] == "MH2" and split["followed"] == "C2"
    assert f"SPILL ({kind}) to CSO" in split["reason"] and "not the sewer's dry-weather path" in split["reason"]
    said = [d["message"] for d in check(path) if d["check"] == "split_flow"]
    assert said and "traces follow C2, the pipe (SPILL" in said[0], said


def test_a_spill_above_the_pipe_and_a_pipe_at_the_invert_keep_the_lowest_way(tmp_path):
    # The height decides before the kind: an orifice at the invert is the way on, a pipe above it the overflow
    # (SWMMExtCntrlModel's storage units).
    text = CSO_MODEL.format(section="ORIFICES", spill="SPILL  MH2  CSO  SIDE  0  0.65  NO  0")
    text = text.replace("C2      MH2   MH3    300     0.013      0 ", "C2      MH2   MH3    300     0.013      2 ")
    path = tmp_path / "cso.inp"
    path.write_text(text)
    doc = trace(path, "MH1")
    assert doc["path"] == ["MH1", "MH2", "CSO"] and doc["splits"][0]["followed"] == "SPILL", doc
    assert "lowest way out" in doc["splits"][0]["reason"]


# A pump station: MH1 drains by C1 into the wet well WW (a storage unit), pumped by P1 to MH3 and on to the plant;
# OVER leaves WW 5 ft up to the overflow outfall CSO.
WET_WELL_OVERFLOW = """[OPTIONS]
FLOW_UNITS  CFS

[JUNCTIONS]
;;Name  Elev  MaxDepth
MH1     100   10
MH3     110   10

[STORAGE]
;;Name  Elev  MaxDepth  InitDepth  Shape       Curve
WW      90    15        0          FUNCTIONAL  100  0  0

[OUTFALLS]
PLANT   100   FREE
CSO     95    FREE

[CONDUITS]
;;Name  From  To     Length  Roughness  InOffset  OutOffset
C1      MH1   WW     200     0.013      0         0
OVER    WW    CSO    30      0.013      5         0
C3      MH3   PLANT  400     0.013      0         0

[PUMPS]
;;Name  From  To   Curve  Status  Startup  Shutoff
P1      WW    MH3  *      ON      0        0

[XSECTIONS]
C1      CIRCULAR  1  0  0  0  1
OVER    CIRCULAR  1  0  0  0  1
C3      CIRCULAR  1  0  0  0  1

[COORDINATES]
MH1     0    0
WW      200  0
MH3     300  0
PLANT   700  0
CSO     200  30
"""


def model_network(tmp_path, text):
    from analysis.network import build_network
    from analysis.profiles import load_profile
    from layers.swmm import LOCAL_CRS, read_inp

    path = tmp_path / "model.inp"
    path.write_text(text)
    layers = {k: v.set_crs(LOCAL_CRS) for k, v in read_inp(str(path)).items()}
    profile = load_profile("fort-plain")
    return path, build_network(layers["mains"], manholes=layers["manholes"], profile=profile), profile


def test_a_wet_wells_overflow_outfall_is_not_where_the_connections_above_drain(tmp_path):
    # The sewershed of CSO took in everything above WW by its overflow: the parcel on C1 drained to CSO and to the
    # plant at once, and the system's flow (the outfalls' sewersheds added up) counted it twice.
    from analysis.trace import sewershed

    path, net, profile = model_network(tmp_path, WET_WELL_OVERFLOW)
    parcels = pd.DataFrame({"parcel_id": ["A", "B"], "units": [2, 3]})
    edge = {str(m): k for k, m in enumerate(net.main_id)}
    conn = pd.DataFrame({"edge": [edge["C1"], edge["C3"]]})
    cso = sewershed(net, net.node_index["CSO"], conn, parcels, profile=profile)
    assert cso.parcels == [] and cso.units == 0 and cso.mains == [] and cso.manholes == []
    (over,) = cso.not_counted
    assert (over["main"], over["from"], over["followed"], over["manholes"], over["parcels"]) == (
        "OVER",
        "WW",
        "P1",
        1,
        1,
    )
    plant = sewershed(net, net.node_index["PLANT"], conn, parcels, profile=profile)
    assert plant.parcels == ["A", "B"] and plant.units == 5 and plant.not_counted == []
    assert set(plant.mains) == {"C1", "P1", "C3"}
    # Each connection once, where its trace drains.
    outfalls = np.flatnonzero(net.node_is_outfall)
    assert sum(sewershed(net, int(o), conn, parcels, profile=profile).units for o in outfalls) == 5
    code, out, err = cli("trace", "--data", path, "--data-crs", "local", "--manhole", "CSO", "--upstream")
    said = " ".join(out.split())
    assert code == 0 and "Upstream of CSO: 0 mains, 0 other manholes" in said, err
    assert "CSO also takes flow from WW by OVER, an overflow leaving 5.0 ft higher than P1" in said
    assert "follow P1 to MH3 and on to PLANT, so what drains to WW (1 manhole) is counted there" in said


@pytest.mark.parametrize("name", REAL_SPLITS)
def test_the_outfalls_sewersheds_hold_every_draining_manhole_once(name):
    # Pump_Control_Model's overflow outfall PSO held the 16 manholes above its wet well SU1, which KRO2005's held
    # too; SWMMExtCntrlModel's OF1-OF3 the 27 above their storage units, which J8's held.
    from analysis.network import build_network
    from analysis.profiles import load_profile
    from analysis.trace import sewershed
    from layers.swmm import LOCAL_CRS, read_inp

    layers = {k: v.set_crs(LOCAL_CRS) for k, v in read_inp(str(DATA / name)).items()}
    profile = load_profile("fort-plain")
    net = build_network(layers["mains"], manholes=layers["manholes"], profile=profile)
    counted = [
        m for o in np.flatnonzero(net.node_is_outfall) for m in sewershed(net, int(o), None, profile=profile).manholes
    ]
    draining = net.node_id[net.node_is_manhole & net.drains()]
    assert sorted(counted) == sorted(map(str, draining))


def test_a_pipe_beside_a_pump_is_said_as_the_rule_the_trace_uses():
    """model_full_features_network_xy's J2 leaves by pipe C2.1 and pump C2, both to J3: `network check` said traces
    follow C2.1 as "the shortest way to an outfall" though the pump (0 ft) is shorter; the trace's rule is the
    kind of link (a tester). The check says that rule, as the trace does."""
    path = DATA / "swmm-swmmio/model_full_features_network_xy.inp"
    said = next(d["message"] for d in check(path) if d["check"] == "split_flow" and d["feature_id"] == "J2")
    rule = "a pipe is followed before a pump, weir, orifice or inlet"
    assert "shortest" not in said
    assert said.endswith(f"traces follow C2.1, the pipe: C2 (pump) also leads to J3, and {rule}."), said
    code, out, err = cli("trace", "--data", path, "--data-crs", "local", "--manhole", "1", "--json")
    assert code == 0, err
    (split,) = json.loads(out)["splits"]
    assert split["node"] == "J2" and split["followed"] == "C2.1" and rule in split["reason"]
