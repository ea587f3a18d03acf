"""SWMM models as real ones are written: quoted names, shapes that are not round, barrels, control rules, storage
units that are manholes and storage units that are not.

Each model is a few lines whose right answer can be read off the text, run through the CLI as a user would.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest
from click.testing import CliRunner

from gisapp.cli import main
from layers import swmm
from layers.swmm import read_inp
from tests.conftest import DATA


def cli(*args):
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def trace(path, node):
    code, out, err = cli("trace", "--data", path, "--data-crs", "local", "--manhole", node, "--json")
    assert code == 0, err
    return json.loads(out)


def check(path, profile="fort-plain"):
    code, out, err = cli("network", "check", "--profile", profile, "--data", path, "--data-crs", "local", "--json")
    assert code == 0, err
    return json.loads(out)


def write(tmp_path, text, name="model.inp"):
    path = tmp_path / name
    path.write_text(text)
    return path


# SWMM 5.2 lets a name hold spaces when it is in double quotes. "MH 1" and "MH 2" share their first word: read
# word by word, both were the node '"MH' (the second row dropped as a repeat), with no coordinates.
QUOTED = """[OPTIONS]
FLOW_UNITS  CFS

[JUNCTIONS]
;;Name    Elev  MaxDepth
"MH 1"    100   10   ; the top manhole
"MH 2"    99    10
MH3       98    10

[OUTFALLS]
"Out fall"  90  FREE

[CONDUITS]
;;Name     From    To          Length  Roughness  InOffset  OutOffset
"Main 1"   "MH 1"  "MH 2"      300     0.013      0         0
"Main 2"   "MH 2"  MH3         250     0.013      0         0  ;"a quoted comment"
C3         MH3     "Out fall"  100     0.013      0         0

[XSECTIONS]
"Main 1"  CIRCULAR  0.5  0  0  0  1
"Main 2"  CIRCULAR  0.5  0  0  0  1
C3        CIRCULAR  1    0  0  0  1

[COORDINATES]
"MH 1"      0    0
"MH 2"      300  0
MH3         550  0   ;  x y
"Out fall"  650  0

[VERTICES]
"Main 2"    400  50
"""


def test_names_in_quotes_are_read_whole_in_every_section(tmp_path):
    path = write(tmp_path, QUOTED)
    layers = read_inp(str(path))
    mains = layers["mains"].set_index("main_id")
    assert list(mains.index) == ["Main 1", "Main 2", "C3"]
    assert list(mains["from_manhole"]) == ["MH 1", "MH 2", "MH3"]
    assert list(mains["to_manhole"]) == ["MH 2", "MH3", "Out fall"]
    assert mains.loc["Main 2", "diameter_in"] == pytest.approx(6.0)  # its [XSECTIONS] row, found by its name
    assert mains.loc["Main 2", "geometry"].coords[1] == (400, 50)  # its [VERTICES] row
    nodes = layers["manholes"].set_index("manhole_id")
    assert list(nodes.index) == ["MH 1", "MH 2", "MH3", "Out fall"]
    assert nodes.loc["MH 1", "invert_ft"] == 100 and nodes.loc["MH 2", "geometry"].x == 300
    doc = trace(path, "MH 1")
    assert doc["path"] == ["MH 1", "MH 2", "MH3", "Out fall"] and doc["mains"] == ["Main 1", "Main 2", "C3"]
    assert doc["length_ft"] == 650 and doc["outfall"] == "Out fall"


@pytest.mark.parametrize(
    ("line", "fields"),
    [
        ('"MH 12"  100  10', ["MH 12", "100", "10"]),
        ('KRO3001  FLOW  1  "" "" "DWF"', ["KRO3001", "FLOW", "1", "", "", "DWF"]),
        ('"unclosed name', ["unclosed name"]),  # SWMM ends a quote left open at the end of the line
        ("a\tb", ["a", "b"]),
    ],
)
def test_tokens_are_swmms(line, fields):
    assert swmm.tokens(line) == fields


# A wet well WW (a storage unit) takes C1 and is pumped (P1) up to J3; S2, a manhole drawn as a storage unit as
# Bellinge draws all of its manholes, has a conduit in and a conduit out.
WET_WELL = """[OPTIONS]
FLOW_UNITS  CFS

[JUNCTIONS]
;;Name  Elev  MaxDepth
J1      100   10
J3      120   10

[STORAGE]
;;Name  Elev  MaxDepth  InitDepth  Shape       Curve
WW      90    15        0          FUNCTIONAL  100  0  0
S2      115   10        0          FUNCTIONAL  10   0  0

[OUTFALLS]
OUT     110   FREE

[CONDUITS]
;;Name  From  To   Length  Roughness  InOffset  OutOffset
C1      J1    WW   200     0.013      0         0
C3      J3    S2   150     0.013      0         0
C4      S2    OUT  100     0.013      0         0

[PUMPS]
;;Name  From  To   Curve   Status  Startup  Shutoff
P1      WW    J3   *       ON      2        0.5

[XSECTIONS]
C1      CIRCULAR  1  0  0  0  1
C3      CIRCULAR  1  0  0  0  1
C4      CIRCULAR  1  0  0  0  1

[COORDINATES]
J1      0    0
WW      200  0
J3      300  0
S2      450  0
OUT     550  0
"""


def test_a_wet_well_is_no_control_manhole_and_a_storage_manhole_is_one(tmp_path):
    # WW was a manhole, so every connection above the pump station had the wet well as its control manhole.
    path = write(tmp_path, WET_WELL)
    assert trace(path, "WW")["control_manhole"] == "J3"  # the first manhole below the pump station
    assert trace(path, "J1")["control_manhole"] == "J1"
    assert trace(path, "S2")["control_manhole"] == "S2"  # a storage unit with a pipe in and out is a manhole
    report = check(path)
    said = [d for d in report if d["check"] == "storage_not_manhole"]
    assert [d["feature_id"] for d in said] == ["WW"] and "pump P1" in said[0]["message"], said
    assert "J3, as their control manhole" in said[0]["message"]
    assert not [d for d in report if d["check"] == "junction_without_manhole"]  # the wet well is a structure


def test_bellinge_manholes_drawn_as_storage_units_are_manholes():
    path = DATA / "bellinge-swmm" / "bellinge_small.inp"
    nodes = read_inp(str(path))["manholes"]
    storage = nodes.loc[nodes["structure"] == "storage", "manhole_id"].tolist()
    assert len(storage) == 15
    for node in storage[:3]:
        assert trace(path, node)["control_manhole"] == node
    assert not [d for d in check(path) if d["check"] == "storage_not_manhole"]


def test_a_pump_stations_wet_well_in_a_real_model_is_said_to_be_no_manhole():
    path = DATA / "swmm-swmmio" / "Pump_Control_Model.inp"
    assert trace(path, "SU1")["control_manhole"] == "KRO1014"
    said = [d["feature_id"] for d in check(path) if d["check"] == "storage_not_manhole"]
    assert said == ["SU1"]


# TWIN is two 6 in pipes side by side; BOX a box culvert 24 in high and 6 in wide; EGGY an egg 10.8 in high, so
# 7.2 in wide (SWMM makes an egg 2/3 as wide as high); TALL a box 48 in high and 12 in wide, 500 ft between
# manholes. Each was read by its Geom1 alone: BOX 24 in and TALL 48 in, above every limit; TWIN "6 in".
SHAPES = """[OPTIONS]
FLOW_UNITS  CFS

[JUNCTIONS]
J1  110  10
J2  108  10
J3  106  10
J4  104  10
J5  102  10

[OUTFALLS]
OUT  100  FREE

[CONDUITS]
TWIN  J1  J2   300  0.013  0  0
BOX   J2  J3   300  0.013  0  0
EGGY  J3  J4   300  0.013  0  0
TALL  J4  J5   500  0.013  0  0
C5    J5  OUT  300  0.013  0  0

[XSECTIONS]
;;Link  Shape        Geom1  Geom2  Geom3  Geom4  Barrels
TWIN    CIRCULAR     0.5    0      0      0      2
BOX     RECT_CLOSED  2      0.5    0      0      1
EGGY    EGG          0.9    0      0      0      1
TALL    RECT_CLOSED  4      1      0      0
C5      CIRCULAR     1      0      0      0      1

[COORDINATES]
J1  0    0
J2  300  0
J3  600  0
J4  900  0
J5  1400 0
OUT 1700 0
"""


def test_sizes_are_said_as_the_model_gives_them_and_ruled_on_one_barrel_at_its_narrowest(tmp_path):
    path = write(tmp_path, SHAPES)
    mains = read_inp(str(path))["mains"].set_index("main_id")
    assert mains["diameter_in"].round(3).to_dict() == {"TWIN": 6, "BOX": 6, "EGGY": 7.2, "TALL": 12, "C5": 12}
    assert pd.isna(mains.loc["C5", "swmm_size"])  # one round pipe: said by its diameter, as before
    report = check(path, "wappinger")
    small = {d["feature_id"]: d["message"] for d in report if d["check"] == "min_diameter"}
    assert sorted(small) == ["BOX", "EGGY", "TWIN"]
    assert small["TWIN"].startswith("Existing main TWIN is 2 x 6 in (6 in across one barrel at its narrowest): below")
    assert "is RECT_CLOSED 24 in high x 6 in wide (6 in across" in small["BOX"]
    assert "is EGG 10.8 in high x 7.2 in wide (7.2 in across" in small["EGGY"]
    # Wappinger's 400 ft holds for sewers of 15 in or less: TALL is 12 in wide.
    spacing = [d["message"] for d in report if d["check"] == "manhole_spacing"]
    assert spacing == [
        "500 ft of existing RECT_CLOSED 48 in high x 12 in wide sewer from manhole J4 to the next manhole J5: more "
        "than the 400 ft this profile sets as the design standard for new sewers (a setting, "
        "network.max_manhole_spacing_ft, not a number the law states; see § 196-23D) on mains of 15 in or less. "
        "The standard governs new sewers and extensions, not mains already built."
    ], spacing


# J2 leaves by MAIN at its invert and by the orifice REL 2 ft up to the CSO outfall; rule R1 opens REL when J2 is
# deep, R2 runs the pump P1 (and, with an AND, closes REL). A trace follows MAIN and the pump as if always open.
CONTROLS = """[OPTIONS]
FLOW_UNITS  CFS

[JUNCTIONS]
J1   100  10
J2   98   10
J3   97   10
J4   99   10

[OUTFALLS]
PLANT  90  FREE
CSO    95  FREE

[CONDUITS]
C1    J1  J2     100  0.013  0  0
MAIN  J2  J3     200  0.013  0  0
C4    J4  PLANT  300  0.013  0  0

[ORIFICES]
;;Name  From  To   Type  Offset  Qcoeff
REL     J2    CSO  SIDE  2       0.65

[PUMPS]
P1      J3    J4   *     ON      0  0

[XSECTIONS]
C1    CIRCULAR  1  0  0  0  1
MAIN  CIRCULAR  1  0  0  0  1
C4    CIRCULAR  1  0  0  0  1
REL   CIRCULAR  1  0  0  0

[CONTROLS]
RULE R1 ; a comment
IF NODE J2 DEPTH > 3
THEN ORIFICE REL SETTING = 1
ELSE ORIFICE REL SETTING = 0
PRIORITY 1

RULE R2
IF NODE J3 DEPTH > 1
OR LINK C1 FLOW > 2
THEN PUMP P1 STATUS = ON
AND ORIFICE REL SETTING = 0

[COORDINATES]
J1     0    0
J2     100  0
J3     300  0
J4     400  0
PLANT  700  0
CSO    100  50
"""


def test_links_the_models_control_rules_act_on_are_named(tmp_path):
    path = write(tmp_path, CONTROLS)
    ruled = {d["feature_id"]: d for d in check(path) if d["check"] == "control_rules"}
    assert sorted(ruled) == ["P1", "REL"]  # C1 and the nodes are only watched by the rules' conditions
    rel, pump = ruled["REL"], ruled["P1"]
    assert rel["severity"] == "warning" and "control rules (R1, R2) act on orifice REL, out of J2" in rel["message"]
    assert "does not follow control rules" in rel["message"]
    assert "MAIN also leaves it; traces follow MAIN" in rel["message"], rel
    assert pump["severity"] == "info" and "control rules (R2) act on pump P1" in pump["message"]
    doc = trace(path, "J1")
    assert doc["mains"] == ["C1", "MAIN", "P1", "C4"]
    # The trace says it too, where it passes the divide the rules act at.
    assert "control rules act on REL (R1, R2), and sewerplan does not run them" in doc["splits"][0]["reason"]


# The street ST1 drains by its inlet GRATE into the pipe P1, which runs to OUT: a street inlet in a model that
# states no sewage flow (a storm drainage model), unless a [DWF] or a baseline [INFLOWS] row gives J1 some.
STREETS = """[OPTIONS]
FLOW_UNITS  CFS

[JUNCTIONS]
A1   105  0
A2   104  0
J1   100  5
J2   99   5

[OUTFALLS]
OUT  95  FREE

[CONDUITS]
ST1  A1  A2   100  0.016  0  0
P1   J1  J2   100  0.013  0  0
P2   J2  OUT  100  0.013  0  0

[XSECTIONS]
ST1  STREET    FullStreet
P1   CIRCULAR  1  0  0  0  1
P2   CIRCULAR  1  0  0  0  1

[INLETS]
GRATE  GRATE  2  2  GENERIC

[INLET_USAGE]
ST1  GRATE  J1  1  0  0  0  0

{sewage}

[COORDINATES]
A1   0    50
A2   100  50
J1   0    0
J2   100  0
OUT  200  0
"""


@pytest.mark.parametrize(
    ("sewage", "storm"),
    [
        ("", True),
        ("[DWF]\nJ1  FLOW  0.1", False),  # a combined sewer: streets and sewage
        ('[INFLOWS]\nJ1  FLOW  ""  FLOW  1.0  1  0.2', False),  # sewage as a constant baseline
        ("[DWF]\nJ1  FLOW  0\nJ1  TSS  10", True),  # no flow in dry weather
    ],
)
def test_a_model_of_street_inlets_with_no_sewage_is_said_to_look_like_storm_drainage(tmp_path, sewage, storm):
    path = write(tmp_path, STREETS.format(sewage=sewage))
    said = [d for d in check(path) if d["check"] == "storm_model"]
    assert bool(said) == storm, said
    if storm:
        assert said[0]["severity"] == "warning"
        assert "1 street inlet ([INLET_USAGE]) and 1 street conduit (STREET" in said[0]["message"]
        assert "looks like a storm drainage model" in said[0]["message"]
    assert trace(path, "J1")["mains"] == ["P1", "P2"]  # traced as given either way


def test_the_dual_drainage_model_is_said_to_look_like_storm_drainage_and_bellinge_is_not():
    said = [d["message"] for d in check(DATA / "swmm-swmmio" / "test_inlet_drains.inp") if d["check"] == "storm_model"]
    assert said and "4 street inlets ([INLET_USAGE]) and 5 street conduits" in said[0]
    # Bellinge is a combined sewer modelled for rain alone: no [DWF], but no street inlet either. Nothing said.
    assert not [d for d in check(DATA / "bellinge-swmm" / "bellinge_small.inp") if d["check"] == "storm_model"]


def test_a_junction_a_pump_draws_from_is_a_wet_well_as_a_storage_unit_is(tmp_path):
    # The same pump station with its wet well WW written in [JUNCTIONS]: it was a manhole, the control manhole of
    # every connection on C1, and counted among the manholes, while the storage unit WW was not.
    text = WET_WELL.replace("WW      90    15        0          FUNCTIONAL  100  0  0\n", "")
    path = write(tmp_path, text.replace("J3      120   10\n", "J3      120   10\nWW      90    15\n"))
    assert read_inp(str(path))["manholes"].set_index("manhole_id").loc["WW", "structure"] == "junction"
    assert trace(path, "WW")["control_manhole"] == "J3"
    assert trace(path, "J1")["control_manhole"] == "J1"
    report = check(path)
    said = [d for d in report if d["check"] == "storage_not_manhole"]
    assert [d["feature_id"] for d in said] == ["WW"], said
    assert "written as a junction, but the flow leaves it by pump P1" in said[0]["message"]
    assert "J3, as their control manhole" in said[0]["message"]
    assert not [d for d in report if d["check"] == "junction_without_manhole"]
    code, out, err = cli("network", "check", "--profile", "fort-plain", "--data", path, "--data-crs", "local")
    head = " ".join(out.split())
    assert code == 0 and "3 manholes (not counting 1" in head and "WW: not a manhole" in head, err or head[:300]


def test_a_junction_a_gravity_pipe_drains_stays_a_manhole_beside_a_pump():
    # model_full_features_network_xy's J2 is left by the conduit C2.1 and the pump C2, side by side to J3: the
    # pipe takes the flow, so J2 is a manhole (the model's evidence for a wet well is not clear).
    path = DATA / "swmm-swmmio" / "model_full_features_network_xy.inp"
    assert trace(path, "J2")["control_manhole"] == "J2"
    assert not [d for d in check(path) if d["check"] == "storage_not_manhole"]


def _renamed(tmp_path, line: int, old: str, new: str, name: str):
    """Example1.inp with one row's name changed (``line``, 1-based), as a model edited by hand is."""
    rows = (DATA / "swmm-swmmio" / "Example1.inp").read_text().splitlines()
    assert rows[line - 1].startswith(old + " ")
    rows[line - 1] = new + rows[line - 1][len(old) :]
    return write(tmp_path, "\n".join(rows) + "\n", name)


def test_a_model_giving_one_name_to_two_links_or_two_nodes_is_refused_naming_them(tmp_path):
    # Conduit 8 (22 -> 16) renamed 7 was dropped without a word: the report blamed "a link missing from the model"
    # for the piece it cut off, and a trace from 19 stopped at 22 (a tester). SWMM refuses such a model too.
    links = _renamed(tmp_path, 130, "8", "7", "links.inp")
    code, out, err = cli("network", "check", "--profile", "fort-plain", "--data", links, "--data-crs", "local")
    said = " ".join(err.split())
    assert code == 2 and "Traceback" not in err
    assert "gives one name to two objects (link 7 in [CONDUITS] and [CONDUITS])" in said
    # a junction named as an outfall is: one node, two rows
    nodes = _renamed(tmp_path, 94, "10", "18", "nodes.inp")
    with pytest.raises(Exception, match=r"node 18 in \[JUNCTIONS\] and \[OUTFALLS\]"):
        read_inp(str(nodes))
    assert len(read_inp(str(DATA / "swmm-swmmio" / "Example1.inp"))["mains"]) > 0  # the model as it is reads
