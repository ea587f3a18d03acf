"""The connection point and the deciding main among equals (``analysis.connection``), on lots whose answer can be
seen: a frontage parallel to its main connects at the foot of the frontage's middle, whatever CRS or position the
same lots are drawn in."""

from __future__ import annotations

import math

import numpy as np
import pytest
import shapely
from pyproj import Transformer
from shapely import affinity
from shapely.geometry import LineString, Polygon, box

from analysis.mandate import analyze_mandates
from analysis.profiles import load_profile
from tests.conftest import NY_ORIGIN, frame

X0, Y0 = NY_ORIGIN


def town(angle: float = 0.0, shift: tuple[float, float] = (X0, Y0)):
    """Lots 80 ft wide with their frontage 27 ft from a main along y = 0 (frontage middles at x = 40 + 100 k), and
    two mains meeting at a manhole at x = 530 in front of three more lots; rotated by ``angle`` degrees about the
    origin, then shifted."""
    lots = {f"L{k}": box(100 * k, 27, 100 * k + 80, 177) for k in range(5)}
    lots |= {f"L{k}S": box(100 * k, -177, 100 * k + 80, -27) for k in range(5)}  # across the street
    lots |= {"AHEAD": box(500, 27, 580, 177), "BEHIND": box(460, -177, 540, -27), "ON": box(490, 27, 570, 177)}
    mains = {"M-1": LineString([(-100, 0), (530, 0)]), "M-2": LineString([(530, 0), (900, 0)])}
    street = LineString([(-100, 0), (900, 0)])

    def place(g):
        return affinity.translate(affinity.rotate(g, angle, origin=(0, 0)), *shift)

    parcels = frame([{"parcel_id": k, "occupied": True, "geometry": place(g)} for k, g in lots.items()])
    main_layer = frame([{"main_id": k, "geometry": place(g)} for k, g in mains.items()])
    streets = frame([{"street_name": "Main St", "row_width_ft": 50.0, "geometry": place(street)}])
    return parcels, main_layer, streets


def connections(parcels, mains, streets, profile, angle: float = 0.0, shift=(X0, Y0)):
    """The results, with each connection point put back in the town's own frame (unrotated, unshifted)."""
    r = analyze_mandates(parcels, mains, streets=streets, profile=profile).parcels.set_index("parcel_id")
    x, y = r["connection_x"].to_numpy() - shift[0], r["connection_y"].to_numpy() - shift[1]
    a = math.radians(-angle)
    r["x"], r["y"] = x * math.cos(a) - y * math.sin(a), x * math.sin(a) + y * math.cos(a)
    return r


# The answers: the foot of each frontage's middle on the main in front of it.
EXPECTED = {f"L{k}": (100 * k + 40, "M-1") for k in range(5)} | {f"L{k}S": (100 * k + 40, "M-1") for k in range(5)}
EXPECTED |= {"AHEAD": (540, "M-2"), "BEHIND": (500, "M-1"), "ON": (530, "M-1")}


@pytest.mark.parametrize("profile_name", ["fort-plain", "wappinger"])
def test_a_frontage_parallel_to_its_main_connects_at_the_foot_of_its_middle(profile_name):
    """Every point of the frontage is 27 ft from the main; the shortest line's end was one end of it or the other
    by floating-point noise (80 ft apart). Two mains meeting at a manhole in front of a lot: the one in front of the
    frontage's middle decides (AHEAD: M-2, though M-1 comes first by ID; BEHIND: M-1), and with the middle right at
    the manhole (ON) both are as near it and the lower ID decides."""
    profile = load_profile(profile_name, overrides={"mandate.distance_ft": "150"})
    r = connections(*town(), profile)
    for pid, (x, main) in EXPECTED.items():
        assert (r.loc[pid, "x"], r.loc[pid, "y"]) == pytest.approx((x, 0.0), abs=0.01), pid
        assert r.loc[pid, "main_id"] == main, pid
        assert r.loc[pid, "distance_ft"] == 27.0
    assert r.loc["AHEAD", "status"] == "mandated"


def test_the_measuring_line_runs_from_the_middle_of_the_frontage():
    parcels, mains, streets = town()
    result = analyze_mandates(parcels, mains, streets=streets, profile=load_profile("fort-plain"))
    line = result.measuring_lines.set_index("parcel_id").loc["L1"].geometry
    assert np.allclose(shapely.get_coordinates(line), [[X0 + 140, Y0 + 27], [X0 + 140, Y0]], atol=1e-6)


@pytest.mark.parametrize("angle", [0.0, 17.0, 33.3, 90.0, 123.4567, 200.0])
@pytest.mark.parametrize("shift", [(X0, Y0), (X0 + 12345.678, Y0 - 98765.4321)])
def test_the_same_lots_turned_or_moved_connect_at_the_same_place(angle, shift):
    """The rule is of the map, not of the coordinates: turned and moved, every lot connects where it did, to the
    same main."""
    r = connections(*town(angle, shift), load_profile("fort-plain"), angle, shift)
    for pid, (x, main) in EXPECTED.items():
        assert (r.loc[pid, "x"], r.loc[pid, "y"]) == pytest.approx((x, 0.0), abs=0.01), (pid, angle)
        assert r.loc[pid, "main_id"] == main, (pid, angle)


def test_the_same_lots_in_another_crs_connect_at_the_same_place():
    """Measured in Vermont State Plane metres (EPSG:32145) rather than New York feet: the same mains decide, and
    each connection point, brought back to EPSG:2260, lies within 0.01 ft of the one measured there."""
    profile = load_profile("fort-plain")
    layers = town(angle=21.0)
    feet = analyze_mandates(layers[0], layers[1], streets=layers[2], profile=profile).parcels.set_index("parcel_id")
    metres = [layer.to_crs("EPSG:32145") for layer in layers]
    other = analyze_mandates(metres[0], metres[1], streets=metres[2], profile=profile).parcels.set_index("parcel_id")
    other = other.loc[feet.index]
    back = Transformer.from_crs("EPSG:32145", "EPSG:2260", always_xy=True)
    x, y = back.transform(other["connection_x"].to_numpy(), other["connection_y"].to_numpy())
    moved_ft = np.hypot(x - feet["connection_x"].to_numpy(), y - feet["connection_y"].to_numpy())
    assert moved_ft.max() < 0.01
    assert (other["main_id"] == feet["main_id"]).all()
    assert (other["status"] == feet["status"]).all()


def test_a_lot_nearest_the_main_at_a_corner_connects_at_that_corners_foot():
    """A lot set diagonally: its nearest point is a corner, 30 ft from the main; the connection point is that
    corner's foot, as the shortest line had it."""
    diamond = Polygon([(X0, Y0 + 30), (X0 + 40, Y0 + 70), (X0, Y0 + 110), (X0 - 40, Y0 + 70)])
    parcels = frame([{"parcel_id": "D", "occupied": True, "geometry": diamond}])
    mains = frame([{"main_id": "M-1", "geometry": LineString([(X0 - 500, Y0), (X0 + 500, Y0)])}])
    streets = frame([{"street_name": "Main St", "row_width_ft": 50.0, "geometry": mains.geometry.iloc[0]}])
    r = analyze_mandates(parcels, mains, streets=streets, profile=load_profile("fort-plain")).parcels
    assert (r["connection_x"].iloc[0] - X0, r["connection_y"].iloc[0] - Y0) == pytest.approx((0.0, 0.0), abs=0.01)
    assert r["distance_ft"].iloc[0] == 30.0


def test_lots_in_chunks_on_several_threads_connect_as_on_one():
    """Thousands of lots are worked in chunks of whole lots, on threads: the answers are those of one pass."""
    from analysis.connection import MainSegments, connection_points

    k = np.arange(6000)
    lots = shapely.box(k * 100.0, 27.0, k * 100.0 + 80.0, 177.0)
    mains = np.array([LineString([(-100, 0), (300_000, 0)]), LineString([(300_000, 0), (700_000, 0)])])
    main = np.where(k * 100 + 40 < 300_000, 0, 1)
    rows = (k, main, np.full(len(k), 27.0), np.zeros(len(k), dtype=bool))
    ask = {"tolerance": 0.01, "rank": np.arange(2)}
    one = connection_points(lots, MainSegments.of(mains), rows, np.full(len(k), 27.01), workers=1, **ask)
    many = connection_points(lots, MainSegments.of(mains), rows, np.full(len(k), 27.01), workers=4, **ask)
    assert np.array_equal(one.lot, k) and np.array_equal(many.lot, k)
    assert np.allclose(many.point, one.point) and np.allclose(one.point, np.c_[k * 100.0 + 40, np.zeros(len(k))])
