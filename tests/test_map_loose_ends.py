"""The web map's loose ends, through the Flask client on a town of three lots whose answers can be seen.

One street, Main St, along y=0 with main M-1 in it. P-CROSSED is crossed by the main (0 ft), P-FRONT fronts the
street 25 ft from it, and P-BACK lies behind, 99.96 ft from the main and abutting no street: in range but not
abutting under Fort Plain (§ 144-4), mandated under Wappinger with a 100 ft distance set (§ 196-17E has no
abutting-street test).
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest
from shapely.geometry import LineString, box

from analysis.profiles import load_profile
from analysis.reasons import STATUSES
from layers.write import write_layers
from tests.conftest import Runner, make_app, ny_frame


def three_lots() -> dict:
    line = LineString([(-100, 0), (700, 0)])
    return {
        "streets": ny_frame([{"street_id": "S-1", "street_name": "Main St", "geometry": line}]),
        "mains": ny_frame([{"main_id": "M-1", "geometry": line}]),
        "parcels": ny_frame(
            [
                {"parcel_id": "P-CROSSED", "occupied": True, "geometry": box(0, -10, 50, 90)},
                {"parcel_id": "P-FRONT", "occupied": True, "geometry": box(100, 25, 150, 125)},
                {"parcel_id": "P-BACK", "occupied": True, "geometry": box(200, 99.96, 250, 199.96)},
            ]
        ),
    }


PROFILES = {"fort-plain": (), "wappinger": ("--set", "mandate.distance_ft=100")}


def analysed_lots(tmp_path_factory, profiles: dict) -> dict:
    """Per profile (its name: the values set on it, as command-line arguments): the store of the three lots analysed
    under it, and a test client of the web app on it."""
    made = {}
    for name, settings in profiles.items():
        folder = tmp_path_factory.mktemp(name)
        store = folder / "town.gpkg"
        write_layers(str(store), three_lots())
        Runner().invoke("analyze", "--profile", name, *settings, "--data", store, "--out", store, ok=True)
        made[name] = (store, make_app(store, folder).test_client())
    return made


@pytest.fixture(scope="module")
def clients(tmp_path_factory) -> dict:
    """A test client per profile, each on the three lots analysed under it."""
    return {name: client for name, (_, client) in analysed_lots(tmp_path_factory, PROFILES).items()}


def _legend(page: str) -> list[str]:
    return re.findall(r'data-status="(\w+)"', page[page.index('id="legend"') : page.index("<h3>Sewer")])


def _counts_table(page: str) -> str:
    return page[page.index('id="counts"') : page.index("</table>", page.index('id="counts"'))]


def test_the_legend_lists_only_the_statuses_the_runs_profile_can_give(clients):
    """Under Wappinger (no abutting-street test, § 196-17E) the legend listed "near a main, but not on its street",
    which no parcel can be under it; Fort Plain's (§ 144-4) lists it, with P-BACK in it."""
    wappinger = clients["wappinger"].get("/").get_data(as_text=True)
    fort_plain = clients["fort-plain"].get("/").get_data(as_text=True)
    assert "in_range_not_abutting" not in _legend(wappinger)
    assert _legend(wappinger) == ["connected", "mandated", "out_of_range", "unoccupied", "no_public_sewer"]
    assert "in_range_not_abutting" in _legend(fort_plain)
    # The table's status filter offers the same, and so does the summary's count of parcels per status.
    table_filter = wappinger[
        wappinger.index('id="table-status"') : wappinger.index("</select>", wappinger.index('id="table-status"'))
    ]
    assert "in_range_not_abutting" not in table_filter and "mandated" in table_filter
    assert "not on its street" not in _counts_table(clients["wappinger"].get("/summary").get_data(as_text=True))
    assert "not on its street" in _counts_table(clients["fort-plain"].get("/summary").get_data(as_text=True))


def test_a_run_whose_profile_file_has_since_moved_lists_every_status(tmp_path):
    """The map finds the run's profile from its record, as the QGIS styles do (``layers.qgis_styles.run_statuses``).
    A run under a town's own profile file (Wappinger's, with no abutting-street test), since moved away, cannot say
    which statuses its profile gives: the legend lists every one rather than guess, and the page still opens."""
    own = tmp_path / "our-village.toml"
    own.write_text(Path(load_profile("wappinger").path).read_text())
    store = tmp_path / "town.gpkg"
    write_layers(str(store), three_lots())
    Runner().invoke(
        "analyze", "--profile", own, "--set", "mandate.distance_ft=100", "--data", store, "--out", store, ok=True
    )
    client = make_app(store, tmp_path).test_client()
    assert "in_range_not_abutting" not in _legend(client.get("/").get_data(as_text=True))
    own.rename(tmp_path / "moved.toml")
    moved = make_app(store, tmp_path).test_client().get("/")
    assert moved.status_code == 200
    assert _legend(moved.get_data(as_text=True)) == list(STATUSES)


def _distance_cells(page: str) -> dict[str, str]:
    table = page[page.index('id="mandated"') :]
    rows = re.findall(r'parcel=([\w-]+)">.*?<td class="num">([^<]*)</td>.*?<td>([^<]*)</td></tr>', table, re.S)
    return {pid: (distance, reason) for pid, distance, reason in rows}


def test_the_summary_gives_each_distance_as_its_reason_does(clients):
    """The summary's list said "0 ft" where the parcel's reason said "0.0 ft", and "100.0 ft" for P-BACK, whose
    reason says "99.96 ft" (a tenth would round it onto the 100 ft it is within). The list words it as the reason."""
    listed = _distance_cells(clients["wappinger"].get("/summary").get_data(as_text=True))
    assert {pid: distance for pid, (distance, _) in listed.items()} == {
        "P-BACK": "99.96 ft",
        "P-CROSSED": "0.0 ft",
        "P-FRONT": "25.0 ft",
    }
    for distance, reason in listed.values():
        assert f"lies {distance} from the property line" in reason


def test_the_popups_distance_is_worded_as_its_reason(clients):
    """The popup's Distance row said "0 ft" above a reason saying "0.0 ft", and "100.0 ft" for P-BACK, whose reason
    says "99.96 ft": the server words it as the reason does (``distance_text``), as the summary now does."""
    for pid, wanted in {"P-CROSSED": "0.0 ft", "P-FRONT": "25.0 ft", "P-BACK": "99.96 ft"}.items():
        answer = clients["wappinger"].get("/api/parcel", query_string={"id": pid}).get_json()
        assert answer["distance_text"] == wanted
        assert f"lies {wanted} from the property line" in answer["reason"]


def test_the_tables_distances_are_worded_as_the_popups(clients):
    """The attribute table said "0" and "100.0" for P-CROSSED and P-BACK beside popups saying "0.0 ft" and "99.96 ft"
    (it worded the number itself): each parcel the map serves carries ``distance_text``, the popup's words, which the
    table shows, and keeps ``distance_ft``, the number it sorts by. The table's CSV keeps the number."""
    client = clients["wappinger"]
    served = client.get("/api/layers/parcels", query_string={"bbox": "-180,-90,180,90", "zoom": 19}).get_json()
    rows = {f["properties"]["parcel_id"]: f["properties"] for f in served["features"]}
    for pid, row in rows.items():
        popup = client.get("/api/parcel", query_string={"id": pid}).get_json()
        assert row["distance_text"] == popup["distance_text"]
    assert {pid: (r["distance_ft"], r["distance_text"]) for pid, r in rows.items()} == {
        "P-CROSSED": (0.0, "0.0 ft"),
        "P-FRONT": (25.0, "25.0 ft"),
        "P-BACK": (pytest.approx(99.96), "99.96 ft"),
    }
    table = client.get("/api/results.csv", query_string={"id": list(rows)}).get_data(as_text=True).lstrip("\ufeff")
    downloaded = list(csv.DictReader(io.StringIO(table)))
    assert "distance_text" not in downloaded[0]
    assert sorted(float(r["distance_ft"]) for r in downloaded) == [0.0, 25.0, pytest.approx(99.96)]


def test_printing_a_view_titled_in_letters_the_sheet_cannot_draw_says_so(clients):
    """A title typed in Chinese on the map's print box: the sheet printed boxes; it is refused with what to do."""
    from urllib.parse import urlencode

    query = urlencode({"bbox": "-74.7,42.9,-74.6,43.0", "title": "村 board packet"})
    refused = clients["fort-plain"].get(f"/print.pdf?{query}")
    assert refused.status_code == 400 and refused.mimetype != "application/pdf"
    told = " ".join(refused.get_data(as_text=True).split())
    assert "cannot draw (村): they would print as boxes" in told
