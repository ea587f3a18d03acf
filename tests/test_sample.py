"""The sample village: deterministic, realistic, and the shape the analysis and later issues rely on."""

from __future__ import annotations

import numpy as np
import pytest
import shapely
from geopandas.testing import assert_geodataframe_equal

from analysis.mandate import analyze_mandates
from analysis.profiles import load_profile
from layers.sample import sample_town


@pytest.fixture(scope="module")
def town():
    return sample_town(2000)


def test_deterministic():
    a, b = sample_town(300, seed=7), sample_town(300, seed=7)
    for name in a:
        assert_geodataframe_equal(a[name], b[name])
    assert not sample_town(300, seed=8)["parcels"]["owner_name"].equals(a["parcels"]["owner_name"])


@pytest.mark.parametrize("n", [50, 777, 20_000])
def test_scales_to_the_parcel_count(n):
    assert len(sample_town(n)["parcels"]) == n


def test_layers_are_clean(town):
    for name, layer in town.items():
        assert layer.crs.to_epsg() == 2260, name
        assert layer.geometry.is_valid.all(), name
    parcels = town["parcels"]
    assert parcels["parcel_id"].is_unique
    # Parcels do not overlap one another.
    tree = shapely.STRtree(parcels.geometry.values)
    a, b = tree.query(parcels.geometry.values, predicate="overlaps")
    assert len(a) == 0


def test_owners_and_mailing_addresses(town):
    p = town["parcels"]
    owners = p.groupby(["owner_name", "mail_address"]).size()
    assert (owners > 1).sum() >= 10  # owners of several parcels
    assert (p["mail_city"] != "Fort Plain").mean() > 0.1  # some mail from out of town
    assert p["site_address"].str.match(r"^\d+ \w+").all()


def test_buildings_include_rear_multi_unit_and_sheds(town):
    b = town["buildings"]
    assert (b["building_use"] == "rear").sum() >= 10
    assert (b["units"] >= 4).sum() >= 20
    sheds = b[b["building_use"] == "shed"]
    assert len(sheds) > 0 and (sheds.area < 150).all()
    # Every building stands on the parcel it names.
    parcels = town["parcels"].set_index("parcel_id").geometry
    inside = parcels.loc[b["parcel_id"]].contains(b.geometry.representative_point(), align=False)
    assert inside.all()


def test_network_manholes_and_slopes(town):
    mains, manholes = town["mains"], town["manholes"]
    public = mains[(mains["sewer_type"] == "sanitary") & (mains["ownership"] == "public")]
    assert (public.length <= 400).all()  # § 144-18K: at most 400 ft between manholes
    live = public[public["status"] == "existing"]
    ends = np.concatenate([shapely.get_point(live.geometry.values, 0), shapely.get_point(live.geometry.values, -1)])
    tree = shapely.STRtree(manholes.geometry.values)
    _, dist = tree.query_nearest(ends, return_distance=True)
    assert dist.max() < 0.1  # a manhole at every end of the live public sewer
    real = mains[mains["sewer_type"] == "sanitary"]
    assert (real["us_invert_ft"] > real["ds_invert_ft"]).all()  # digitised in flow direction, downhill
    assert set(mains["sewer_type"]) == {"sanitary", "storm"}
    assert (mains["ownership"] == "private").sum() == 1 and (mains["status"] == "abandoned").sum() >= 1
    assert len(town["treatment_plants"]) == 1
    assert set(town["treatment_plants"]["outfall_manhole"]) <= set(manholes["manhole_id"])


def test_network_is_one_piece_draining_to_the_plant(town):
    from analysis.network import build_network
    from analysis.network_checks import check_network

    profile = load_profile("fort-plain")
    net = build_network(town["mains"], manholes=town["manholes"], outfalls=town["treatment_plants"], profile=profile)
    assert net.drains().all()
    assert set(net.direction_source) == {"from_to_fields"}
    defects = check_network(net, profile=profile, manholes=town["manholes"])
    # Only the deliberate design defects (the old 6-inch mains, information on existing mains) and the plant's join.
    assert {d.check for d in defects} == {"min_diameter", "outfall_joined"}
    assert {d.severity for d in defects} == {"info"}


def test_every_status_but_no_sewer_occurs(town):
    r = analyze_mandates(
        town["parcels"].assign(connected=town["parcels"]["connected"] == "Y"),
        town["mains"],
        streets=town["streets"],
        buildings=town["buildings"],
        profile=load_profile("fort-plain"),
    )
    counts = r.parcels["status"].value_counts()
    for status in ("connected", "mandated", "in_range_not_abutting", "out_of_range", "unoccupied"):
        assert counts.get(status, 0) >= 20, status
