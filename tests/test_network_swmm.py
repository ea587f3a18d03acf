"""Real SWMM models nobody here drew: every node's trace against the model's own topology, through the CLI.

The five swmmio test models (tests/data/swmm-swmmio/) hold storage units, pumps, orifices, weirs, outlets, street
inlets, a loop and schematic coordinates. The expected answers are read from the .inp text by the small parser
below, which shares no code with ``layers.swmm``: a link section row names its From and To node; a street inlet
([INLET_USAGE]) sends its conduit's downstream node's flow to the node it names; [OUTFALLS] are the outfalls.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

import networkx as nx
import pandas as pd
import pytest
from click.testing import CliRunner

from gisapp.cli import main
from tests.conftest import DATA

MODELS = sorted((DATA / "swmm-swmmio").glob("*.inp"))
LINK_SECTIONS = ("CONDUITS", "PUMPS", "ORIFICES", "WEIRS", "OUTLETS")
NODE_SECTIONS = ("JUNCTIONS", "STORAGE", "DIVIDERS", "OUTFALLS")
# Findings about a model that the model's own topology can never justify.
NEVER = {
    "zero_length_main",
    "unsplit_junction",
    "main_through_manhole",
    "duplicate_manhole",
    "duplicate_id",
    "from_to_mismatch",
    "direction_unknown",
    "dangling_end",
    "junction_without_manhole",
    "duplicate_main",
    "outfall_joined",
    "plant_mid_run",
    "several_outfalls",
    "manhole_without_main",
    "link_without_node",
}


def rows(path: Path) -> dict[str, list[list[str]]]:
    """Section name -> its data rows, split on whitespace (comments and blank lines dropped)."""
    out: dict[str, list[list[str]]] = {}
    section = None
    for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
        text = raw.split(";", 1)[0].strip()
        if text.startswith("[") and text.endswith("]"):
            section = text[1:-1].upper()
        elif text and section:
            out.setdefault(section, []).append(text.split())
    return out


@cache
def model(path: Path) -> dict:
    """The model's graph (one edge per link, keyed by link name), its nodes, outfalls and conduit lengths."""
    r = rows(path)
    g = nx.MultiDiGraph()
    nodes = [row[0] for s in NODE_SECTIONS for row in r.get(s, [])]
    g.add_nodes_from(nodes)
    to_node, lengths = {}, {}
    for section in LINK_SECTIONS:
        for name, frm, to, *rest in r.get(section, []):
            g.add_edge(frm, to, key=name)
            to_node[name] = to
            lengths[name] = float(rest[0]) if section == "CONDUITS" else 0.0
    for conduit, inlet, node, *_ in r.get("INLET_USAGE", []):
        name = f"{conduit}:{inlet}"
        g.add_edge(to_node[conduit], node, key=name)
        lengths[name] = 0.0
    units = dict((row[0].upper(), row[1:]) for row in r.get("OPTIONS", []))["FLOW_UNITS"][0].upper()
    to_ft = 3937 / 1200 if units in ("CMS", "LPS", "MLD") else 1.0
    return {
        "graph": g,
        "nodes": nodes,
        "outfalls": {row[0] for row in r.get("OUTFALLS", [])},
        "length_ft": {k: v * to_ft for k, v in lengths.items()},
    }


def unique_route(m: dict, node: str) -> tuple[list[str], list[str]] | None:
    """The model's path from ``node`` when every node on it has one outgoing link; None where the flow divides."""
    g, path, links = m["graph"], [node], []
    while g.out_degree(path[-1]) == 1:
        (_, nxt, name), *_ = g.out_edges(path[-1], keys=True)
        if nxt in path:
            return None  # a loop with one way round: not a route to an end
        path.append(nxt)
        links.append(name)
    return (path, links) if g.out_degree(path[-1]) == 0 else None


def cli(*args):
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@cache
def check_report(path: Path) -> list[dict]:
    code, out, err = cli("network", "check", "--profile", "fort-plain", "--data", path, "--data-crs", "local", "--json")
    assert code == 0, err
    return json.loads(out)


NODES = [pytest.param(path, node, id=f"{path.stem}:{node}") for path in MODELS for node in model(path)["nodes"]]


def test_the_five_models_are_all_here():
    assert [p.name for p in MODELS] == [
        "Example1.inp",
        "Pump_Control_Model.inp",
        "SWMMExtCntrlModel.inp",
        "model_full_features_network_xy.inp",
        "test_inlet_drains.inp",
    ]
    kinds = {name for p in MODELS for name in rows(p)}
    assert {"PUMPS", "ORIFICES", "WEIRS", "OUTLETS", "STORAGE", "INLET_USAGE", "VERTICES"} <= kinds
    assert len(NODES) > 100


@pytest.mark.parametrize(("path", "node"), NODES)
def test_trace_of_every_node_follows_the_model(path, node):
    m = model(path)
    code, out, err = cli("trace", "--data", path, "--data-crs", "local", "--manhole", node, "--json")
    assert code == 0, err
    doc = json.loads(out)
    route = unique_route(m, node)
    if route is not None:
        # One outgoing link all the way: exactly the model's path, links and lengths (the model's Length field).
        path_nodes, links = route
        assert doc["path"] == path_nodes and doc["mains"] == links and doc["splits"] == []
        end = path_nodes[-1]
        if end in m["outfalls"]:
            assert doc["outfall"] == end and doc["problem"] is None
            assert doc["length_ft"] == pytest.approx(sum(m["length_ft"][k] for k in links), abs=0.1)
        else:
            assert doc["outfall"] is None and f"stops at {end}" in doc["problem"]
        return
    # Where the flow divides: a walk along the model's own links, to one of its outfalls, each divide explained.
    g = m["graph"]
    walked = list(zip(doc["path"][:-1], doc["path"][1:], doc["mains"], strict=True))
    assert all(g.has_edge(a, b, key=k) for a, b, k in walked)
    divides = [a for a, _, _ in walked if g.out_degree(a) > 1]
    assert [s["node"] for s in doc["splits"]] == divides and all(s["reason"] for s in doc["splits"])
    followed = [k for a, _, k in walked if a in divides]
    assert [s["followed"] for s in doc["splits"]] == followed
    assert (doc["outfall"] in m["outfalls"]) or doc["problem"]
    if doc["outfall"] is not None:
        assert doc["outfall"] == doc["path"][-1]


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.stem)
def test_network_check_raises_nothing_the_model_contradicts(path):
    m = model(path)
    g = nx.DiGraph(m["graph"])
    report = check_report(path)
    found = {d["check"] for d in report}
    assert not found & NEVER, [d for d in report if d["check"] in NEVER]
    cyclic = any(len(c) > 1 for c in nx.strongly_connected_components(g))
    dead = [n for n in g if g.out_degree(n) == 0 and n not in m["outfalls"]]
    pieces = nx.number_weakly_connected_components(g)
    assert ("cycle" in found) == cyclic
    assert ("no_outfall" in found) == bool(dead)
    assert ("disconnected_piece" in found) == (pieces > 1)
    assert ("split_flow" in found) == any(m["graph"].out_degree(n) > 1 for n in g)  # parallel links count
    # Nothing the model itself states is an error: its loops drain, its splits are by design.
    assert {d["severity"] for d in report if d["check"] in ("cycle", "split_flow")} <= {"info"}
    # Design rules on a model's existing pipes are information, never errors.
    assert {d["severity"] for d in report if d["check"] in ("min_diameter", "manhole_spacing")} <= {"info"}


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.stem)
def test_outfalls_are_the_models_own(path):
    m = model(path)
    code, out, err = cli("network", "check", "--profile", "fort-plain", "--data", path, "--data-crs", "local")
    assert code == 0, err
    # Every one of the model's [OUTFALLS] is an outfall, said as many as there are and named: several stay several.
    n = len(m["outfalls"])
    said = " ".join(out.split())
    listed = re.search(rf"\b{n} outfalls?: ([^.]*)\.", said)
    assert listed and set(listed.group(1).split(", ")) == m["outfalls"], said[:400]
    assert "treatment plant:" not in said
    assert "in no real-world CRS" in out
    # Every other node is a manhole, or a storage unit the flow leaves by a pump, orifice, weir or outlet (a wet well,
    # not a manhole), which the head names after the manhole count: Pump_Control_Model's "31 manholes" had looked one
    # short of its 32 nodes besides the outfalls to an engineer counting them, SU1 said nowhere.
    head = re.search(
        r"\b(\d+) manholes?(?: \(not counting (\d+) wet wells? (?:or tanks? )?the flow leaves by [^,]+, ([^:]+):)?",
        said,
    )
    wells = head.group(3).split(", ") if head.group(3) else []
    r = rows(path)
    storage = {row[0] for row in r.get("STORAGE", [])}
    regulated = {row[1] for section in LINK_SECTIONS[1:] for row in r.get(section, []) if row[1] in storage}
    assert int(head.group(1)) + len(wells) == len(m["nodes"]) - n, said[:400]
    assert set(wells) == regulated and len(wells) == int(head.group(2) or 0)


def test_lengths_come_from_the_model_not_the_drawing():
    # Example1's schematic drawing is not to scale: conduit 1 (9 -> 10) is 400 ft in the model.
    path = DATA / "swmm-swmmio" / "Example1.inp"
    code, out, _ = cli("trace", "--data", path, "--data-crs", "local", "--manhole", "9", "--json")
    doc = json.loads(out)
    m = model(path)
    assert doc["length_ft"] == pytest.approx(sum(m["length_ft"][k] for k in doc["mains"]))
    assert doc["mains"][0] == "1" and m["length_ft"]["1"] == 400.0


def test_local_coordinates_refuse_what_needs_a_real_place(tmp_path):
    path = DATA / "swmm-swmmio" / "Pump_Control_Model.inp"
    local = ("--data", path, "--data-crs", "local")
    code, _, err = cli("network", "check", "--profile", "fort-plain", *local, "--out", tmp_path / "r.geojson")
    assert code == 2 and "in no real-world CRS" in err and ".csv" in err
    code, _, err = cli("network", "check", "--profile", "fort-plain", *local, "--out", tmp_path / "r.csv")
    assert code == 0 and (tmp_path / "r.csv").exists(), err
    # its x, y are the model's own: the crs column says so, not a real CRS (nor nothing)
    rows = pd.read_csv(tmp_path / "r.csv", encoding="utf-8-sig")
    assert len(rows) and set(rows["crs"]) == {"Model coordinates (no real-world CRS)"}
    code, _, err = cli("analyze", "--profile", "fort-plain", *local)
    assert code == 2 and "only 'network check' and 'trace'" in err
    code, _, err = cli("buildings", "--profile", "fort-plain", *local)
    assert code == 2 and "only 'network check' and 'trace'" in err
    code, _, err = cli("trace", *local, "--manhole", "KRO1014", "--crs", "EPSG:2260")
    assert code == 2 and "leave out --crs" in err
    # Without --data-crs local, a schematic model put in a CRS it does not fit is refused with the way out.
    schematic = DATA / "swmm-swmmio" / "Example1.inp"
    code, _, err = cli("trace", "--data", schematic, "--data-crs", "EPSG:2260", "--manhole", "9")
    assert code == 2 and "outside where that CRS is used" in err and "--data-crs local" in err
    code, _, err = cli("trace", "--data", schematic, "--data-crs", "local", "--manhole", "9")
    assert code == 0, err


def test_a_model_given_without_its_crs_is_told_data_crs_not_a_shapefile_prj():
    """`sewerplan trace --data Example1.inp --manhole 9`, as a user first types it: it said each of the model's
    layers "has no coordinate reference system (a shapefile's .prj file declares it)", with --layer-crs mains=... and
    --layer-crs manholes=... to give, where one --data-crs gives the model's CRS (a .inp never declares one)."""
    code, _, err = cli("trace", "--data", DATA / "swmm-swmmio" / "Example1.inp", "--manhole", "9")
    assert code == 2 and ".prj" not in err and "--layer-crs" not in err
    assert "Example1.inp declares no coordinate reference system (a SWMM .inp file never does)" in err
    assert "Use --data-crs EPSG:2260." in err and "--data-crs local" in err


def test_bellinge_in_its_real_crs_through_the_cli():
    path = DATA / "bellinge-swmm" / "bellinge_small.inp"
    graph = json.loads((DATA / "bellinge-swmm" / "bellinge_small_graph.json").read_text())
    links = graph.get("links") or graph.get("edges")
    succ = {str(e["source"]): str(e["target"]) for e in links}
    real = ("--data", path, "--data-crs", "EPSG:32632", "--crs", "EPSG:32632")
    for node in sorted(succ):
        expected = [node]
        while expected[-1] in succ:
            expected.append(succ[expected[-1]])
        code, out, err = cli("trace", *real, "--manhole", node, "--json")
        assert code == 0, err
        doc = json.loads(out)
        assert doc["path"] == [*expected, "G72F050_outfall"] and doc["outfall"] == "G72F050_outfall"
        # Metric model: the model's lengths (m) in feet, the same as the graph's own pipe lengths.
        # Metric model: the pipes' lengths in metres (the graph's own), in feet, plus the package's added link.
        metres = sum(e["length"] for e in links if str(e["source"]) in expected[:-1])
        added_ft = model(path)["length_ft"]["G72F050-G72F050_outfall"]
        assert doc["length_ft"] == pytest.approx(metres * 3937 / 1200 + added_ft, abs=0.1)
    code, out, err = cli("network", "check", "--profile", "fort-plain", *real, "--json")
    assert code == 0, err
    found = json.loads(out)
    assert {d["check"] for d in found} == {"min_diameter", "implausible_diameter"}  # 0.2 m pipes: 7.9 in, information
    # and the model's 15 m dummy link to its outfall, 590.55 in across, which no pipe is
    assert [d["feature_id"] for d in found if d["check"] == "implausible_diameter"] == ["G72F050-G72F050_outfall"]


def test_a_model_outside_new_york_is_told_which_crs_to_measure_in():
    """Bellinge (Denmark) in its real CRS without --crs was told only to "measure in a projected CRS made for that
    place", after the 26 counties where New York East is used, and never which option does it: now it names a CRS
    made for the place and the option, and doing as told traces."""
    path = DATA / "bellinge-swmm" / "bellinge_small.inp"
    code, out, err = cli("trace", "--data", path, "--data-crs", "EPSG:32632", "--manhole", "G72F820")
    said = " ".join(err.split())
    assert code == 2 and "such as EPSG:32632 (WGS 84 / UTM zone 32N). Use --crs EPSG:32632." in said
    assert "Montgomery" not in said
    # The model's CRS is right: "a schematic model ... --data-crs local" would send its user the wrong way.
    assert "schematic" not in said and "--data-crs local" not in said
    code, out, err = cli(
        "trace", "--data", path, "--data-crs", "EPSG:32632", "--crs", "EPSG:32632", "--manhole", "G72F820"
    )
    assert code == 0 and "G72F050_outfall" in out, err


TINY_MODEL = """[TITLE]
A hand-made model: conduit C2 joins two nodes drawn on one spot (no [VERTICES]), as real models do.

[OPTIONS]
FLOW_UNITS           {units}

[JUNCTIONS]
;;Name  Elev  MaxDepth
J1      {e1}   10
J2      {e2}   10
J3      {e3}   10

[OUTFALLS]
;;Name  Elev  Type
OUT     {e4}   FREE

[CONDUITS]
;;Name  From  To   Length  Roughness  InOffset  OutOffset
C1      J1    J2   100     0.013      0         0
C2      J2    J3   18      0.013      0         0
C3      J3    OUT  50      0.013      0         0

[XSECTIONS]
C1      CIRCULAR  1  0  0  0  1
C2      CIRCULAR  1  0  0  0  1
C3      CIRCULAR  1  0  0  0  1

[COORDINATES]
J1      0      0
J2      500    0
J3      500    0
OUT     900    0
"""


@pytest.mark.parametrize(("units", "to_ft"), [("CFS", 1.0), ("CMS", 3937 / 1200)])
def test_conduit_between_two_nodes_on_one_spot(tmp_path, units, to_ft):
    # Validation empties C2's drawing (a line from a point to itself); the model's Length still joins J2 to J3.
    path = tmp_path / "tiny.inp"
    path.write_text(TINY_MODEL.format(units=units, e1=10, e2=9, e3=8.5, e4=8))
    code, out, err = cli("trace", "--data", path, "--data-crs", "local", "--manhole", "J1", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["path"] == ["J1", "J2", "J3", "OUT"] and doc["mains"] == ["C1", "C2", "C3"]
    assert doc["length_ft"] == pytest.approx(168 * to_ft, abs=0.1)  # the model's lengths, never the drawing's 900
    report = check_report(path)
    assert not {d["check"] for d in report} & (NEVER | {"no_outfall", "cycle", "adverse_slope"})
    if units == "CMS":  # 1 m pipes are 39.4 in: no design note; 18 m between J2 and J3 is 59 ft
        assert not [d for d in report if d["check"] == "min_diameter"]


@pytest.mark.parametrize(
    ("text", "code", "says"),
    [
        ("[TITLE]\nnot a model\n", 2, "has no links"),
        ("[JUNCTIONS]\nJ1 1\n[CONDUITS]\nC1 J1 X 10\n[COORDINATES]\nJ1 0 0\n", 2, "C1 (J1 -> X)"),
        ("[JUNCTIONS]\nJ1 1\nJ2 1\n[CONDUITS]\nC1 J1 J2 10\n[COORDINATES]\nJ1 0\nJ2 1 1\n", 2, "J1 have no"),
        # Short rows everywhere: no length, no elevation, no cross-section, half a vertex. A finding, not a crash.
        (
            "[OPTIONS]\nFLOW_UNITS\n[JUNCTIONS]\nJ1\nJ2 1\n[OUTFALLS]\nO 0\n[CONDUITS]\nC1 J1 J2 ten\nC2 J2 O 5\n"
            "[XSECTIONS]\nC1\n[COORDINATES]\nJ1 0 0\nJ2 3 4\nO 9 9\n[VERTICES]\nC1 5\n",
            0,
            "length_from_drawing",
        ),
    ],
)
def test_malformed_models_are_refused_or_reported(tmp_path, text, code, says):
    path = tmp_path / "model.inp"
    path.write_text(text)
    for args in (["network", "check", "--profile", "fort-plain", "--json"], ["trace", "--manhole", "J1", "--json"]):
        result = CliRunner().invoke(main, [*args, "--data", str(path), "--data-crs", "local"])
        assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
        assert result.exit_code == code, result.output
        if args[0] == "network":
            assert says in result.output
    if code == 0:
        doc = json.loads(cli("trace", "--data", path, "--data-crs", "local", "--manhole", "J1", "--json")[1])
        assert doc["path"] == ["J1", "J2", "O"] and doc["length_ft"] == pytest.approx(5 + 5)  # drawn 3-4-5, then 5


@pytest.mark.parametrize(
    ("model_name", "start", "divide", "followed", "outfall"),
    [
        # The wet well SU1 is pumped (PUMP1, on at 4 ft by the model's [CONTROLS]) to KRO1014 and on to KRO2005;
        # SU1-PSO leaves it 6 ft up, to the pump station overflow PSO. Traces followed the overflow (66 ft away).
        ("Pump_Control_Model.inp", "KRO4019", "SU1", "PUMP1", "KRO2005"),
        # The storage units leave by a side orifice at their invert (OR1 to J3 ... J8) and by a conduit 12 ft up
        # to an overflow outfall (C9 to OF2).
        ("SWMMExtCntrlModel.inp", "J9", "SU1", "OR1", "J8"),
        ("SWMMExtCntrlModel.inp", "J19", "SU2", "OR3", "J8"),
    ],
)
def test_a_trace_takes_the_lowest_way_out_not_the_overflow(model_name, start, divide, followed, outfall):
    path = DATA / "swmm-swmmio" / model_name
    code, out, err = cli("trace", "--data", path, "--data-crs", "local", "--manhole", start, "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["outfall"] == outfall and followed in doc["mains"], doc
    split = next(s for s in doc["splits"] if s["node"] == divide)
    assert split["followed"] == followed and "lowest way out" in split["reason"], split
    assert "above the invert" in split["reason"]
    report = check_report(path)
    said = [d["message"] for d in report if d["check"] == "split_flow" and d["feature_id"] == divide]
    assert said and f"traces follow {followed}, the lowest way out" in said[0], said


HEIGHTS_MODEL = """[OPTIONS]
FLOW_UNITS           CMS
LINK_OFFSETS         {offsets}

[JUNCTIONS]
;;Name  Elev
J1      10
J2      9
J3      8

[STORAGE]
;;Name  Elev  MaxDepth  InitDepth  Shape       Curve
S1      5     4         0          FUNCTIONAL  100  0  0

[OUTFALLS]
;;Name  Elev  Type
NEAR    1     FREE
FAR     0     FREE

[CONDUITS]
;;Name  From  To    Length  Roughness  InOffset  OutOffset
C1      J1    S1    100     0.013      0         {c1_out}
OVER    S1    NEAR  10      0.013      {over}    0
C2      J2    J3    100     0.013      0         0
C3      J3    FAR   100     0.013      0         0

[{section}]
{low}

[XSECTIONS]
C1      CIRCULAR  0.3  0  0  0  1
OVER    CIRCULAR  0.3  0  0  0  1
C2      CIRCULAR  0.3  0  0  0  1
C3      CIRCULAR  0.3  0  0  0  1
LOW     CIRCULAR  0.3  0  0  0

[COORDINATES]
J1      0    0
S1      10   0
NEAR    20   0
J2      10   10
J3      10   20
FAR     10   30
"""


@pytest.mark.parametrize("offsets", ["DEPTH", "ELEVATION"])
@pytest.mark.parametrize(
    ("section", "low"),
    [
        ("ORIFICES", "LOW  S1  J2  SIDE  {h}  0.65  NO  0"),
        ("WEIRS", "LOW  S1  J2  TRANSVERSE  {h}  3.33  NO  0  0"),
        ("OUTLETS", "LOW  S1  J2  {h}  FUNCTIONAL/DEPTH  10  0.5  NO"),
    ],
)
def test_the_lowest_way_out_of_a_storage_unit_in_either_offset_convention(tmp_path, offsets, section, low):
    # S1 (invert 5 m) leaves by LOW 0.5 m above its invert, toward FAR (300 m on), and by the conduit OVER 2 m
    # above it, to NEAR (10 m): the flow takes LOW first. With LINK_OFFSETS ELEVATION the offsets are elevations.
    base = 5.0 if offsets == "ELEVATION" else 0.0
    text = HEIGHTS_MODEL.format(
        offsets=offsets, section=section, low=low.format(h=base + 0.5), over=base + 2, c1_out=base
    )
    path = tmp_path / "heights.inp"
    path.write_text(text)
    code, out, err = cli("trace", "--data", path, "--data-crs", "local", "--manhole", "J1", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["path"] == ["J1", "S1", "J2", "J3", "FAR"] and doc["mains"] == ["C1", "LOW", "C2", "C3"], doc
    assert "1.6 ft above the invert" in doc["splits"][0]["reason"]  # 0.5 m, in feet
    assert "6.6 ft above the invert" in doc["splits"][0]["reason"]  # OVER's 2 m


FORCE_MAIN_MODEL = """[OPTIONS]
FLOW_UNITS  CFS

[JUNCTIONS]
;;Name  Elev  MaxDepth
J1      100   10
WW      90    15
J3      120   10

[OUTFALLS]
OUT     110   FREE

[CONDUITS]
;;Name  From  To   Length  Roughness  InOffset  OutOffset
C1      J1    WW   200     0.013      0         0
FM      WW    J3   800     120        0         0
C3      J3    OUT  300     0.013      0         0

[XSECTIONS]
C1      CIRCULAR    1    0    0  0  1
FM      FORCE_MAIN  0.5  120  0  0  1
C3      CIRCULAR    1    0    0  0  1

[COORDINATES]
J1      0    0
WW      100  0
J3      200  0
OUT     300  0
"""


def test_a_force_main_conduit_is_a_force_main(tmp_path):
    # SWMM's FORCE_MAIN cross-section is a pressurised pipe: FM rises 30 ft from the wet well WW, as force mains do.
    # It was read as a gravity sewer: an adverse_slope error, and the gravity design rules (8 in, 400 ft) on it.
    path = tmp_path / "force.inp"
    path.write_text(FORCE_MAIN_MODEL)
    from layers.swmm import read_inp

    mains = read_inp(str(path))["mains"].set_index("main_id")
    assert mains.loc["FM", "sewer_type"] == "force" and mains.loc["FM", "diameter_in"] == pytest.approx(6.0)
    assert mains.loc["C1", "sewer_type"] == "sanitary"
    code, out, err = cli("network", "check", "--profile", "wappinger", "--data", path, "--data-crs", "local", "--json")
    assert code == 0, err
    about_fm = [d for d in json.loads(out) if d["feature_id"] in ("FM", "WW")]
    assert about_fm == [], about_fm
    doc = json.loads(cli("trace", "--data", path, "--data-crs", "local", "--manhole", "J1", "--json")[1])
    assert doc["outfall"] == "OUT" and doc["mains"] == ["C1", "FM", "C3"] and doc["length_ft"] == 1300


DIVIDER_MODEL = """[OPTIONS]
FLOW_UNITS  CFS

[JUNCTIONS]
J1      100   10
J2      95    10
J3      94    10

[DIVIDERS]
;;Name  Elev  DivLink  Type    Cutoff
D1      98    SPILL    CUTOFF  2.0     0  0  0  0

[OUTFALLS]
PLANT   90    FREE
CSO     96    FREE

[CONDUITS]
;;Name  From  To     Length  Roughness  InOffset  OutOffset
C1      J1    D1     100     0.013      0         0
SPILL   D1    CSO    20      0.013      0         0
MAIN    D1    J2     200     0.013      0         0
C3      J2    J3     100     0.013      0         0
C4      J3    PLANT  100     0.013      0         0

[XSECTIONS]
C1      CIRCULAR  1  0  0  0  1
SPILL   CIRCULAR  1  0  0  0  1
MAIN    CIRCULAR  1  0  0  0  1
C3      CIRCULAR  1  0  0  0  1
C4      CIRCULAR  1  0  0  0  1

[COORDINATES]
J1      0    0
D1      100  0
J2      200  0
J3      300  0
PLANT   400  0
CSO     100  50
"""


def test_a_divider_sends_the_trace_on_not_down_its_diverted_link(tmp_path):
    # D1 diverts flow above 2 cfs into SPILL (its DivLink), 20 ft to the CSO outfall; the rest goes on by MAIN to
    # the plant. Traces took SPILL, the shorter way to an outfall.
    path = tmp_path / "divider.inp"
    path.write_text(DIVIDER_MODEL)
    code, out, err = cli("trace", "--data", path, "--data-crs", "local", "--manhole", "J1", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["path"] == ["J1", "D1", "J2", "J3", "PLANT"] and doc["length_ft"] == 500, doc
    assert "SPILL is its diverted link" in doc["splits"][0]["reason"]
    said = [d["message"] for d in check_report(path) if d["check"] == "split_flow"]
    assert said and "traces follow MAIN, the divider's way on" in said[0], said
