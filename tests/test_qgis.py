"""Results QGIS opens styled: the layer_styles table in every GeoPackage sewerplan writes, and ``export-qgis``.

The project is checked twice: its XML against the structure QGIS reads (groups, layers, sources that resolve), and
(where Debian's python3-qgis is installed, as .ci/run installs it) by opening it headless with PyQGIS.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import xml.etree.ElementTree as ET
import zipfile
from contextlib import closing
from pathlib import Path

import pyogrio
import pytest

from analysis.mandate import STATUSES
from gisapp.words import STATUS_COLOURS as WEB_MAP_COLOURS
from gisapp.words import words
from layers.legend import RESULT_COLUMNS, STATUS_LEGEND
from layers.qgis_project import GROUPS
from tests.conftest import Runner

REPO = Path(__file__).resolve().parents[1]
SYSTEM_PYTHON = "/usr/bin/python3"  # Debian's, where python3-qgis installs PyQGIS


@pytest.fixture(scope="module")
def analysed(tmp_path_factory) -> Path:
    """The sample village analysed into its own GeoPackage store by the command line."""
    from layers.sample import sample_town
    from layers.write import write_layers

    path = tmp_path_factory.mktemp("qgis") / "town.gpkg"
    write_layers(str(path), sample_town(300))
    Runner().invoke("analyze", "--profile", "fort-plain", "--data", path, "--out", path, ok=True)
    return path


def _styles(path: Path) -> dict[str, tuple]:
    with closing(sqlite3.connect(path)) as con:
        rows = con.execute("SELECT f_table_name, styleName, useAsDefault, styleQML FROM layer_styles").fetchall()
    return {r[0]: r for r in rows}


def _rgb(hex_colour: str) -> str:
    h = hex_colour.lstrip("#")
    return ",".join(str(int(h[i : i + 2], 16)) for i in (0, 2, 4))


def test_the_status_legend_is_the_web_maps():
    """Every analysed status is coloured on the web map as in QGIS; the map adds only "not analysed yet"."""
    assert {s: WEB_MAP_COLOURS[s] for s in STATUS_LEGEND} == {s: style.colour for s, style in STATUS_LEGEND.items()}
    assert set(WEB_MAP_COLOURS) - set(STATUS_LEGEND) == {"not_analysed"}
    assert set(STATUS_LEGEND) == set(STATUSES)


def test_a_geopackage_written_by_the_tool_carries_qgis_styles(analysed):
    styles = _styles(analysed)
    assert {"parcel_results", "measuring_lines", "connection_points", "building_results", "mains"} <= set(styles)
    _, name, default, qml = styles["parcel_results"]
    assert name == "sewerplan" and default == 1
    root = ET.fromstring(qml.split("\n", 1)[1])
    assert root.get("labelsEnabled") == "0"
    renderer = root.find("renderer-v2")
    assert renderer.get("type") == "categorizedSymbol" and renderer.get("attr") == "status"
    symbols = {s.get("name"): s for s in renderer.find("symbols")}
    shown = {}
    for category in renderer.find("categories"):
        colour = symbols[category.get("symbol")].find("layer/prop[@k='color']").get("v")
        shown[category.get("value")] = (colour.rsplit(",", 1)[0], category.get("label"))
    assert shown == {s: (_rgb(style.colour), style.label) for s, style in STATUS_LEGEND.items()}
    # Mains by diameter (wider lines for larger pipes), measuring lines dashed.
    mains = ET.fromstring(_styles(analysed)["mains"][3].split("\n", 1)[1]).find("renderer-v2")
    assert mains.get("type") == "RuleRenderer"
    widths = [float(p.get("v")) for p in mains.iter("prop") if p.get("k") == "line_width"]
    assert len(set(widths)) >= 4
    assert all('"diameter_in"' in r.get("filter") for r in mains.iter("rule") if r.get("filter") != "ELSE")
    lines = styles["measuring_lines"][3]
    assert 'k="use_custom_dash" v="1"' in lines and 'k="line_style" v="dash"' in lines
    # GDAL still sees the results as before: layer_styles is a table, not a map layer.
    spatial = {str(n) for n, g in pyogrio.list_layers(analysed) if g}
    assert "layer_styles" not in spatial and "parcel_results" in spatial


def test_every_result_column_is_described_in_the_docs():
    page = (REPO / "docs" / "postgis.md").read_text(encoding="utf-8")
    for layer, columns in RESULT_COLUMNS.items():
        for name in columns:
            assert f"`{name}`" in page, (layer, name)


def _project(path: Path) -> ET.Element:
    with zipfile.ZipFile(path) as archive:
        (name,) = archive.namelist()
        assert name.endswith(".qgs")
        return ET.fromstring(archive.read(name).decode("utf-8").split("\n", 1)[1])


def test_export_qgis_writes_a_project_whose_layers_resolve(analysed, tmp_path):
    out = tmp_path / "project" / "town.qgz"
    done = Runner().json("export-qgis", "--store", analysed, "--out", out)
    assert done["crs"] == "EPSG:2260" and Path(done["output"]) == out
    root = _project(out)
    assert root.tag == "qgis" and root.find("projectCrs/spatialrefsys/authid").text == "EPSG:2260"
    groups = root.find("layer-tree-group").findall("layer-tree-group")
    assert [g.get("name") for g in groups] == [g for g in GROUPS if done["layers"][g]]
    assert [leaf.get("name") for leaf in groups[0].findall("layer-tree-layer")] == [
        "connection_points",
        "measuring_lines",
        "building_results",
        "parcel_results",
    ]
    assert {leaf.get("name") for leaf in groups[1].findall("layer-tree-layer")} == {
        "mains",
        "manholes",
        "treatment_plants",
    }
    layers = {m.find("layername").text: m for m in root.find("projectlayers")}
    tree_ids = {leaf.get("id") for g in groups for leaf in g.findall("layer-tree-layer")}
    assert tree_ids == {m.find("id").text for m in layers.values()}
    assert {e.get("id") for e in root.find("layerorder")} == tree_ids
    in_store = {str(n) for n, g in pyogrio.list_layers(analysed) if g}
    assert set(layers) == in_store
    for name, layer in layers.items():
        source = layer.find("datasource").text
        path, _, layername = source.partition("|layername=")
        assert path.startswith("./")  # relative: the project and the store move together
        assert (out.parent / path).resolve() == analysed.resolve() and layername == name
        assert layer.find("provider").text == "ogr" and layer.find("renderer-v2") is not None
        assert layer.get("labelsEnabled") == "0"
    assert layers["parcel_results"].find("renderer-v2").get("type") == "categorizedSymbol"


def test_export_qgis_refuses_what_it_cannot_write(analysed, tmp_path):
    wrong = Runner().invoke("export-qgis", "--store", analysed, "--out", tmp_path / "town.zip")
    assert wrong.exit_code != 0 and "as .qgz" in wrong.output
    missing = Runner().invoke("export-qgis", "--store", tmp_path / "none.gpkg", "--out", tmp_path / "x.qgz")
    assert missing.exit_code != 0 and "does not exist" in missing.output


OPEN_PROJECT = """
import json, os, sys
os.environ["QT_QPA_PLATFORM"] = "offscreen"
from qgis.core import QgsApplication, QgsProject, QgsVectorLayer
from qgis.PyQt.QtCore import QVariant
app = QgsApplication([], False)
app.initQgis()
project = QgsProject.instance()
report = {"read": project.read(sys.argv[1]), "error": project.error(), "layers": {}}

def value_maps(layer):  # per field with a ValueMap widget: {value stored: what QGIS shows for it}
    formatter = QgsApplication.fieldFormatterRegistry().fieldFormatter("ValueMap")
    found = {}
    for index, field in enumerate(layer.fields()):
        setup = layer.editorWidgetSetup(index)
        if setup.type() == "ValueMap":
            stored = [v for item in setup.config()["map"] for v in item.values()]
            found[field.name()] = {v: formatter.representValue(layer, index, setup.config(), None, v) for v in stored}
            found[field.name()]["(empty)"] = formatter.representValue(layer, index, setup.config(), None, QVariant())
    return found

for layer in project.mapLayers().values():
    report["layers"][layer.name()] = {
        "valid": layer.isValid(), "features": layer.featureCount(), "renderer": layer.renderer().type(),
        "crs": layer.crs().authid(), "labels": layer.labelsEnabled(), "value_maps": value_maps(layer),
    }
report["groups"] = [g.name() for g in project.layerTreeRoot().children()]
if len(sys.argv) > 2:  # the GeoPackage's own default style, as QGIS applies it to a layer added alone
    alone = QgsVectorLayer(sys.argv[2] + "|layername=parcel_results", "alone", "ogr")
    report["alone"] = {"valid": alone.isValid(), "renderer": alone.renderer().type(),
                       "categories": [c.value() for c in alone.renderer().categories()],
                       "value_maps": value_maps(alone)}
    del alone
print(json.dumps(report), flush=True)
project.clear()
app.exitQgis()
"""


def _pyqgis():
    found = Path(SYSTEM_PYTHON).exists() and shutil.which(SYSTEM_PYTHON)
    if found:
        probe = subprocess.run([SYSTEM_PYTHON, "-c", "import qgis.core"], capture_output=True, timeout=120)
        if probe.returncode == 0:
            return SYSTEM_PYTHON
    if os.environ.get("CI"):
        pytest.fail("PyQGIS is missing: .ci/run installs Debian's python3-qgis.")
    pytest.skip("no PyQGIS (Debian: apt-get install python3-qgis qgis-providers)")


def run_in_qgis(script: str, path: Path, *extra: str, env: dict | None = None) -> dict:
    """Run ``script`` in Debian's PyQGIS on ``path`` (and ``extra``); the JSON report its last line prints."""
    done = subprocess.run(
        [_pyqgis(), "-c", script, str(path), *extra],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "XDG_RUNTIME_DIR": str(Path(path).parent), **(env or {})},
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def open_in_qgis(project: Path, *extra: str, env: dict | None = None) -> dict:
    return run_in_qgis(OPEN_PROJECT, project, *extra, env=env)


def test_qgis_opens_the_project_with_every_layer_valid(analysed, tmp_path):
    out = tmp_path / "town.qgz"
    Runner().invoke("export-qgis", "--store", analysed, "--out", out, ok=True)
    report = open_in_qgis(out, str(analysed))
    assert report["read"] is True and report["error"] == ""
    in_store = {str(n) for n, g in pyogrio.list_layers(analysed) if g}
    assert set(report["layers"]) == in_store
    for name, layer in report["layers"].items():
        assert layer["valid"] and layer["features"] > 0 and layer["crs"] == "EPSG:2260", (name, layer)
        assert layer["labels"] is False
    assert report["layers"]["parcel_results"]["renderer"] == "categorizedSymbol"
    assert report["layers"]["mains"]["renderer"] == "RuleRenderer"
    assert report["groups"] == ["results", "network", "base"]
    assert report["alone"]["valid"] and report["alone"]["renderer"] == "categorizedSymbol"
    assert set(report["alone"]["categories"]) == set(STATUSES)
    # QGIS's attribute table and Identify panel showed the codes ("mandated") where the web popup says "must connect":
    # the coded columns have a ValueMap widget, in the project and in the GeoPackage's own style alike.
    for shown in (report["layers"]["parcel_results"]["value_maps"], report["alone"]["value_maps"]):
        assert shown["status"]["mandated"] == "must connect"
        assert shown["rule"]["abutting_street"] == words("abutting_street")
        assert shown["grease_interceptor"]["(empty)"] == "NULL"  # as without the widget, not "(NULL)"
        assert {code: text for code, text in shown["status"].items() if code in STATUSES} == {
            s: words(s) for s in STATUSES
        }
    assert report["layers"]["measuring_lines"]["value_maps"]["status"]["mandated"] == "must connect"
    assert report["layers"]["building_results"]["value_maps"]["shared_lateral"]["separate_required"] == words(
        "separate_required"
    )


# The parcel results' legend as QGIS shows it on opening the project: [value, label] per category, in order.
PROJECT_LEGEND = """
import json, os, sys
os.environ["QT_QPA_PLATFORM"] = "offscreen"
from qgis.core import QgsApplication, QgsProject
app = QgsApplication([], False)
app.initQgis()
project = QgsProject.instance()
project.read(sys.argv[1])
(layer,) = project.mapLayersByName("parcel_results")
print(json.dumps([[c.value(), c.label()] for c in layer.renderer().categories()]), flush=True)
project.clear()
app.exitQgis()
"""


def test_qgis_lists_the_web_legends_statuses_in_its_words_under_wappinger(tmp_path):
    """Opened in QGIS, the project of a run under Wappinger (§ 196-17E: no abutting-street test) listed "in range not
    abutting" and called the statuses by other names than the web map's legend; it lists what that legend lists, in
    its words and order (tests/test_words_agree.py checks the XML under the three profiles)."""
    from layers.write import write_layers
    from tests.test_map_loose_ends import three_lots

    store, out = tmp_path / "town.gpkg", tmp_path / "town.qgz"
    write_layers(str(store), three_lots())
    wappinger = ("--profile", "wappinger", "--set", "mandate.distance_ft=100")
    Runner().invoke("analyze", *wappinger, "--data", store, "--out", store, ok=True)
    Runner().invoke("export-qgis", "--store", store, "--out", out, ok=True)
    assert run_in_qgis(PROJECT_LEGEND, out) == [
        ["connected", "already connected"],
        ["mandated", "must connect"],
        ["out_of_range", "farther than the distance"],
        ["unoccupied", "no occupied building"],
        ["no_public_sewer", "no public sewer"],
    ]


@pytest.mark.postgres
def test_qgis_opens_a_postgis_store_project(tmp_path, analysed):
    from tests.conftest import postgres_url

    url = postgres_url()
    import uuid

    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url
    from sqlalchemy.pool import NullPool

    schema = f"qgis_{uuid.uuid4().hex[:8]}"
    store = f"{url}#{schema}"
    try:
        Runner().invoke("analyze", "--profile", "fort-plain", "--data", analysed, "--out", store, ok=True)
        out = tmp_path / "county.qgz"
        Runner().invoke("export-qgis", "--store", store, "--out", out, ok=True)
        password = make_url(url).password
        with zipfile.ZipFile(out) as archive:
            document = archive.read(archive.namelist()[0]).decode("utf-8")
        assert password and f"password={password}" not in document and f":{password}@" not in document
        sources = re.findall(r"<datasource>(.*?)</datasource>", document)
        assert sources and all(f'table="{schema}".' in s and "key='fid'" in s for s in sources)
        report = open_in_qgis(out, env={"PGPASSWORD": password})
        assert report["read"] is True
        # the results, and the input layers the run copied into the schema (read from a GeoPackage elsewhere)
        engine = create_engine(url, poolclass=NullPool)
        with engine.connect() as con:
            tables = set(
                con.execute(
                    text("SELECT f_table_name FROM geometry_columns WHERE f_table_schema = :s"), {"s": schema}
                ).scalars()
            )
        engine.dispose()
        results = {"parcel_results", "measuring_lines", "connection_points", "building_results"}
        assert set(report["layers"]) == tables and results | {"parcels", "mains", "manholes"} <= tables
        for name, layer in report["layers"].items():
            assert layer["valid"] and layer["features"] > 0 and layer["crs"] == "EPSG:2260", (name, layer)
        assert report["layers"]["parcel_results"]["renderer"] == "categorizedSymbol"
    finally:
        engine = create_engine(url, poolclass=NullPool)
        with engine.begin() as con:
            con.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
            con.execute(text("DELETE FROM public.layer_styles WHERE f_table_schema = :s"), {"s": schema})
        engine.dispose()


OPEN_PLAN_LAYERS = """
import json, os, sys
os.environ["QT_QPA_PLATFORM"] = "offscreen"
from qgis.core import QgsApplication, QgsVectorLayer, QgsWkbTypes
app = QgsApplication([], False)
app.initQgis()
report = {}
for name in sys.argv[2:]:
    layer = QgsVectorLayer(sys.argv[1] + "|layername=" + name, name, "ogr")
    mark = layer.renderer().symbol().symbolLayer(0)
    report[name] = {
        "valid": layer.isValid(), "features": layer.featureCount(), "crs": layer.crs().authid(),
        "geometry": QgsWkbTypes.displayString(layer.wkbType()), "renderer": layer.renderer().type(),
        "colour": (mark.strokeColor() if name == "main_crossings" else mark.color()).name(),
        "aliases": {f.name(): f.alias() for f in layer.fields()},
        "features_seen": [{k: f[k] for k in ("feature", "station_ft" if name == "main_crossings" else "to_station_ft")}
                          for f in layer.getFeatures()],
    }
    del layer
print(json.dumps(report), flush=True)
app.exitQgis()
"""


def test_qgis_opens_a_plans_crossings_and_easements_styled(tmp_path):
    """A plan's export opened in QGIS: the crossing a red ring, the easement a purple line, in the town's CRS, with
    the columns titled."""
    from layers.write import write_layers
    from tests.conftest import ny_frame
    from tests.test_plans import INTO_L5, M9, layout

    _pyqgis()  # skip before the work when there is no PyQGIS
    data, out = tmp_path / "town.gpkg", tmp_path / "plan.gpkg"
    write_layers(str(data), layout(shift=(1, 1), extra_mains=[M9]))
    ny_frame([{"geometry": INTO_L5}]).to_file(tmp_path / "extension.geojson")
    Runner().invoke(
        "plan", "--profile", "fort-plain", "--data", data, "--proposed", tmp_path / "extension.geojson",
        "--diameter-in", "8", "--out", out, ok=True,
    )  # fmt: skip
    report = run_in_qgis(OPEN_PLAN_LAYERS, out, "main_crossings", "easements_needed")
    crossings, easements = report["main_crossings"], report["easements_needed"]
    assert (crossings["valid"], crossings["crs"], crossings["geometry"]) == (True, "EPSG:2260", "Point")
    assert (easements["valid"], easements["crs"], easements["geometry"]) == (True, "EPSG:2260", "MultiLineString")
    assert (crossings["colour"], easements["colour"]) == ("#e31a1c", "#6a3d9a")
    assert crossings["features_seen"] == [{"feature": "main crossing", "station_ft": 450.0}]
    assert easements["features_seen"] == [{"feature": "easement needed", "to_station_ft": 585.0}]
    assert crossings["aliases"]["station_ft"] == "Station (ft)" and easements["aliases"]["owner_name"] == "Owner"


OPEN_CSV = """
import json, os, sys
os.environ["QT_QPA_PLATFORM"] = "offscreen"
from qgis.core import QgsApplication, QgsVectorLayer
app = QgsApplication([], False)
app.initQgis()
path = sys.argv[1]
layer = QgsVectorLayer("file://" + path + "?delimiter=,&xField=connection_x&yField=connection_y&crs=EPSG:2260",
                       "results", "delimitedtext")
types = {f.name(): f.typeName() for f in layer.fields()}
zips = sorted({str(f["mail_zip"]) for f in layer.getFeatures()})
print(json.dumps({"valid": layer.isValid(), "features": layer.featureCount(), "types": types, "zips": zips}))
del layer
app.exitQgis()
"""


def test_qgis_adds_the_results_csv_with_zip_codes_as_text(tmp_path):
    """QGIS's "Add Delimited Text Layer" guessed the ZIP-code columns to be integers (01234 read as 1234); with the
    .csvt beside the CSV they are text, the distances numbers and the deadline a date."""
    from layers.sample import sample_town
    from layers.write import write_layers

    _pyqgis()  # skip before the work when there is no PyQGIS
    town = sample_town(60)
    town["parcels"].loc[0, "mail_zip"] = "01234"
    write_layers(str(tmp_path / "town.gpkg"), town)
    out = tmp_path / "results.csv"
    Runner().invoke(
        "analyze", "--profile", "fort-plain", "--data", tmp_path / "town.gpkg", "--out", out,
        "--notice-date", "2027-03-01", ok=True,
    )  # fmt: skip
    report = run_in_qgis(OPEN_CSV, out)
    assert report["valid"] and report["features"] == 60
    assert report["types"]["mail_zip"] == report["types"]["site_zip"] == "text" and "01234" in report["zips"]
    assert report["types"]["distance_ft"] == "double" and report["types"]["deadline"] == "date"
