"""The same parcel in the same words wherever it is shown: the web map's legend and the QGIS styles, under each profile.

The three lots of ``tests/test_map_loose_ends.py`` (P-CROSSED under main M-1, P-FRONT 25 ft from it, P-BACK 99.96 ft
behind and abutting no street), analysed under Fort Plain, Poughkeepsie and Wappinger (with a 100 ft distance set:
§ 196-17E sets none), each into its own store. The QGIS project is read as XML; opening it in QGIS is
``tests/test_qgis.py``'s.
"""

from __future__ import annotations

import re
import sqlite3
import xml.etree.ElementTree as ET
import zipfile
from contextlib import closing

import pytest

from layers.qgis_styles import style_geopackage
from layers.store import latest_run
from tests.conftest import Runner
from tests.test_map_loose_ends import analysed_lots

PROFILES = {"fort-plain": (), "poughkeepsie": (), "wappinger": ("--set", "mandate.distance_ft=100")}


@pytest.fixture(scope="module")
def towns(tmp_path_factory) -> dict:
    """Per profile: the store of the three lots analysed under it, and a test client of the web app on it."""
    return analysed_lots(tmp_path_factory, PROFILES)


def _web_legend(client) -> list[str]:
    return [status for status, _ in _web_legend_words(client)]


def _web_legend_words(client) -> list[tuple[str, str]]:
    """The web map's legend of parcels, in order: (status, the words shown for it)."""
    page = client.get("/").get_data(as_text=True)
    legend = page[page.index('id="legend"') : page.index("<h3>Sewer")]
    return [(s, " ".join(w.split())) for s, w in re.findall(r'data-status="(\w+)"><span[^>]*></span>([^<]*)<', legend)]


def _categories(qml: str) -> list[str]:
    """The status values the parcel_results style's legend lists, in order."""
    root = ET.fromstring(qml.split("\n", 1)[1]) if qml.startswith("<!DOCTYPE") else qml
    return [c.get("value") for c in root.find("renderer-v2").find("categories")]


def _project_categories(path) -> list[tuple[str, str]]:
    """The QGIS project's legend of parcel_results, in order: (status, its label)."""
    with zipfile.ZipFile(path) as archive:
        (name,) = archive.namelist()
        root = ET.fromstring(archive.read(name).decode("utf-8").split("\n", 1)[1])
    (layer,) = [m for m in root.iter("maplayer") if m.findtext("layername") == "parcel_results"]
    return [(c.get("value"), c.get("label")) for c in layer.find("renderer-v2").find("categories")]


@pytest.mark.parametrize("profile", PROFILES)
def test_the_qgis_project_lists_the_statuses_the_web_legend_lists(towns, profile, tmp_path):
    """Under Wappinger (§ 196-17E has no abutting-street test) the QGIS project's legend listed "in range not
    abutting", which no parcel can be there and the web map's legend leaves out: one function decides both
    (``layers.legend.legend_statuses``). Fort Plain's and Poughkeepsie's list it (P-BACK is in it)."""
    store, client = towns[profile]
    out = tmp_path / "town.qgz"
    Runner().invoke("export-qgis", "--store", store, "--out", out, ok=True)
    listed = [status for status, _ in _project_categories(out)]
    assert set(listed) == set(_web_legend(client))
    assert ("in_range_not_abutting" in listed) == (profile != "wappinger")


@pytest.mark.parametrize("profile", PROFILES)
def test_the_qgis_legend_words_each_status_as_the_web_legend_in_its_order(towns, profile, tmp_path):
    """QGIS's legend said "mandated", "in range not abutting", "out of range", "connected" and "unoccupied", listing
    "mandated" first, beside a web legend saying "must connect", "near a main, but not on its street", "farther than
    the distance", "already connected" and "no occupied building", "already connected" first: one list of words
    (``layers.legend.STATUS_LEGEND``) and one order now serve both."""
    store, client = towns[profile]
    out = tmp_path / "town.qgz"
    Runner().invoke("export-qgis", "--store", store, "--out", out, ok=True)
    assert _project_categories(out) == _web_legend_words(client)
    assert ("mandated", "must connect") in _project_categories(out)


@pytest.mark.parametrize("profile", PROFILES)
def test_a_geopackages_style_given_its_run_lists_the_web_legends_statuses(towns, profile, tmp_path):
    """The GeoPackage's own ``layer_styles`` style, written with the record of the run whose results it styles."""
    store, client = towns[profile]
    copy = tmp_path / "copy.gpkg"
    copy.write_bytes(store.read_bytes())
    style_geopackage(copy, ["parcel_results"], run=latest_run(copy))
    with closing(sqlite3.connect(copy)) as con:
        (qml,) = con.execute("SELECT styleQML FROM layer_styles WHERE f_table_name = 'parcel_results'").fetchone()
    assert set(_categories(qml)) == set(_web_legend(client))


@pytest.mark.parametrize("profile", PROFILES)
def test_the_style_analyze_leaves_in_the_store_lists_the_web_legends_statuses(towns, profile):
    """The style ``sewerplan analyze`` itself writes into the store: it styled the results before the run was
    recorded, so every status was listed under Wappinger too."""
    store, client = towns[profile]
    with closing(sqlite3.connect(store)) as con:
        (qml,) = con.execute("SELECT styleQML FROM layer_styles WHERE f_table_name = 'parcel_results'").fetchone()
    assert set(_categories(qml)) == set(_web_legend(client))
    assert ("in_range_not_abutting" in _categories(qml)) == (profile != "wappinger")


def test_the_qgis_building_style_outlines_and_words_what_the_web_map_does(client):
    """The web map outlines in red, and its legend lists, "a finding on its building sewer" (a building sewer below
    the standard, or a manhole connection to decide); QGIS drew those buildings plain, as any building. Its rules
    now say each of the web legend's Buildings entries, in the same colour. On the sample village (``client``): the
    legend lists the buildings' symbols only for a store that has buildings, and the three lots have none."""
    from layers.qgis_styles import qml

    page = client.get("/").get_data(as_text=True)
    buildings = page[page.index("<h3>Buildings</h3>") : page.index("</section>", page.index("<h3>Buildings</h3>"))]
    web = dict(
        (" ".join(words.split()), colour)
        for colour, words in re.findall(r'border: 2px \w+ (#[0-9a-f]{6})"></span>([^<]+)<', buildings)
    )
    fields = ("rear_building", "required_laterals", "lateral_below_standard", "manhole_connection_case")
    root = ET.fromstring(qml("building_results", fields).split("\n", 1)[1])
    symbols = {s.get("name"): s for s in root.find("renderer-v2").find("symbols")}
    drawn = {
        rule.get("label"): symbols[rule.get("symbol")].find("layer/prop[@k='outline_color']").get("v")
        for rule in root.iter("rule")
        if rule.get("filter") != "ELSE"
    }
    rgb = {label: ",".join(str(int(c[i : i + 2], 16)) for i in (1, 3, 5)) for label, c in web.items()}
    assert {label: colour.rsplit(",", 1)[0] for label, colour in drawn.items()} == {
        k: v for k, v in rgb.items() if "subdivision" not in k
    }


def _value_maps(root) -> dict[str, dict[str, str]]:
    """A style's ValueMap widgets as QGIS reads them: per field, {value stored: the words shown}."""
    found = {}
    for field in root.iter("field"):
        widget = field.find("editWidget")
        if widget is not None and widget.get("type") == "ValueMap":
            entries = widget.find("config/Option/Option[@name='map']")
            found[field.get("name")] = {o.get("value"): o.get("name") for o in entries.iter("Option") if o.get("value")}
    return found


@pytest.mark.parametrize("profile", PROFILES)
def test_qgis_shows_the_web_popups_words_for_the_coded_columns(towns, profile, tmp_path):
    """QGIS's attribute table and Identify panel showed ``mandated`` and ``abutting_street`` where the web popup says
    "must connect" and "the main is not in a street the parcel abuts": the style the store holds and the QGIS
    project's give each coded column a ValueMap widget with the popup's words (``gisapp.words.words``), one list."""
    from gisapp.words import words
    from layers.qgis_styles import VALUE_MAP_NULL

    store, _ = towns[profile]
    with closing(sqlite3.connect(store)) as con:
        (qml,) = con.execute("SELECT styleQML FROM layer_styles WHERE f_table_name = 'parcel_results'").fetchone()
        rules = {r for (r,) in con.execute("SELECT DISTINCT rule FROM parcel_results")}
    out = tmp_path / "town.qgz"
    Runner().invoke("export-qgis", "--store", store, "--out", out, ok=True)
    with zipfile.ZipFile(out) as archive:
        (name,) = archive.namelist()
        project = ET.fromstring(archive.read(name).decode("utf-8").split("\n", 1)[1])
    (layer,) = [m for m in project.iter("maplayer") if m.findtext("layername") == "parcel_results"]
    for shown in (_value_maps(ET.fromstring(qml.split("\n", 1)[1])), _value_maps(layer)):
        assert shown["status"]["mandated"] == "must connect"
        assert set(shown) >= {"status", "rule", "grease_interceptor", "industrial_user", "subdivision_duty"}
        for column, codes in shown.items():
            assert codes.pop(VALUE_MAP_NULL) == "NULL", column  # an empty cell stays NULL, not "(NULL)"
            assert codes == {code: words(code) for code in codes}, column
        assert rules <= set(shown["rule"])  # every rule the run wrote has its words


def test_every_code_the_analysis_writes_has_words_for_qgis():
    """Each coded column's words list every code the analysis can write there: a code left out, QGIS shows in
    brackets, "(for_decision)"."""
    from analysis.buildings import VERDICTS as SHARED_LATERAL
    from analysis.discharges import GREASE, INDUSTRIAL
    from analysis.profiles import load_profile
    from analysis.reasons import NOTICE_REASONS, STATUSES, _rules
    from analysis.subdivisions import VERDICTS as SUBDIVISION
    from layers.legend import CODED_COLUMNS
    from layers.qgis_styles import qml

    parcels = CODED_COLUMNS["parcel_results"]
    assert set(parcels["status"]) == set(STATUSES)
    for profile in PROFILES:
        assert {rule for rule, _ in _rules(load_profile(profile)).values()} == set(parcels["rule"])
    assert set(parcels["grease_interceptor"]) == set(GREASE)
    assert set(parcels["industrial_user"]) == set(INDUSTRIAL)
    assert set(parcels["subdivision_duty"]) == set(SUBDIVISION)
    assert set(parcels["notice_reason"]) == set(NOTICE_REASONS)
    assert set(CODED_COLUMNS["building_results"]["shared_lateral"]) == set(SHARED_LATERAL)
    for evidence in ("measuring_lines", "connection_points"):
        assert CODED_COLUMNS[evidence]["status"] == parcels["status"]
    buildings = ET.fromstring(qml("building_results", ["shared_lateral", "reason"]).split("\n", 1)[1])
    assert set(_value_maps(buildings)) == {"shared_lateral"}
