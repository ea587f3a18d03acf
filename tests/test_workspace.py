"""The workspace a run records, and what later commands make of it; one name per option; the old spellings.

A run written into a store records its workspace (the profile as applied with every --set, the measuring CRS, the
column mapping, the layer CRSs, the direction choice), and a later command given that store rebuilds it without
being told again, saying on stderr what it took.
"""

from __future__ import annotations

import json

import geopandas as gpd
import pytest

from gisapp import services
from gisapp.workspace import WorkspaceSpec
from layers.sample import sample_town
from layers.store import latest_run
from layers.write import write_layers


@pytest.fixture
def raw_store(tmp_path):
    """The sample town with its parcel IDs in a column named SBL, not yet analysed."""
    town = sample_town(120)
    town["parcels"] = town["parcels"].rename(columns={"parcel_id": "SBL"})
    path = tmp_path / "town.gpkg"
    write_layers(str(path), town)
    return path


def _analyse(runner, store, *extra):
    return runner.invoke(
        "analyze",
        "--profile",
        "wappinger",
        "--set",
        "mandate.distance_ft=200",
        "--map",
        "parcels.parcel_id=SBL",
        "--digitised-direction",
        "--data",
        store,
        "--out",
        store,
        *extra,
        ok=True,
    )


def test_a_run_records_the_workspace_it_used(runner, raw_store):
    _analyse(runner, raw_store)
    saved = latest_run(raw_store)["workspace"]
    assert saved["profile"] == "wappinger" and saved["settings"] == {"mandate.distance_ft": "200"}
    assert saved["mapping"]["columns"] == {"parcels": {"parcel_id": "SBL"}}
    assert saved["digitised_direction"] is True
    assert saved["data"] is None  # the store's own layers: the record stays true when the store is copied
    spec = WorkspaceSpec.from_record(latest_run(raw_store))
    assert services.profile_of(spec).mandate.distance_ft.value == 200.0


def test_a_later_command_rebuilds_the_recorded_workspace_and_says_so(runner, raw_store):
    first = json.loads(_analyse(runner, raw_store, "--json").stdout)["summary"]
    again = runner.invoke("analyze", "--data", raw_store, "--json", ok=True)
    assert json.loads(again.stdout)["summary"]["counts"] == first["counts"]
    assert "Using what the latest run recorded in" in again.stderr
    for flag in ("--profile wappinger", "--set mandate.distance_ft=200", "its column mapping", "--digitised-direction"):
        assert flag in again.stderr, flag


def test_a_value_given_wins_over_the_recorded_one(runner, raw_store):
    _analyse(runner, raw_store)
    nearer = runner.json("analyze", "--data", raw_store, "--set", "mandate.distance_ft=50")["summary"]
    assert nearer["distance_ft"] == 50.0 and nearer["profile"] == "wappinger"


def test_another_profile_drops_the_recorded_settings(runner, raw_store):
    _analyse(runner, raw_store)
    fort_plain = runner.json("analyze", "--data", raw_store, "--profile", "fort-plain")["summary"]
    assert fort_plain["distance_ft"] == 100.0 and fort_plain["distance_section"] == "§ 144-4"


def test_without_a_record_the_profile_is_asked_for(runner, raw_store):
    result = runner.invoke("analyze", "--data", raw_store, "--map", "parcels.parcel_id=SBL")
    assert result.exit_code == 2 and "Give the town's ordinance profile with --profile" in result.output


def test_a_record_from_before_workspaces_gives_its_profile():
    spec = WorkspaceSpec.from_record({"profile": "poughkeepsie", "counts": {}})
    assert spec == WorkspaceSpec(profile="poughkeepsie")
    assert WorkspaceSpec.from_record(None) is None


def test_the_record_never_keeps_a_password():
    spec = WorkspaceSpec(
        profile="fort-plain",
        layers=(("parcels", "postgresql://town:s3cret-pw@db.example/gis#public.parcels"),),
        register="postgresql://town:s3cret-pw@db.example/notices",
    )
    text = json.dumps(spec.as_record())
    assert "s3cret" not in text and "town:***@db.example" in text


def test_the_record_round_trips():
    spec = WorkspaceSpec(
        profile="wappinger",
        settings=(("mandate.distance_ft", "200"),),
        crs="EPSG:2260",
        layer_crs=(("parcels", "EPSG:2260"),),
        mapping={"columns": {"parcels": {"parcel_id": "SBL"}}, "values": {}},
        digitised_direction=True,
    )
    assert WorkspaceSpec.from_record({"workspace": spec.as_record()}) == spec


# -- the measuring CRS a store's layers were checked in, before any run records one ------------------------------


def test_the_measuring_crs_of_the_layers_goes_with_them_when_published_and_restored(tmp_path):
    """An upload checked in a measuring CRS of its own (data outside New York) keeps it with its layers; publishing
    it made the town's store forget it, since it lived only in the upload's record. It now goes with the layers,
    published or restored, while the town's own settings (its register) stay with the town; and a store of layers
    in the profile's CRS published over it does not inherit it."""
    from layers.store import layers_crs, open_store, read_setting

    town = tmp_path / "town.gpkg"
    write_layers(str(town), sample_town(60))
    store = open_store(town)
    store.write_setting("register", "kept")
    abroad, home = tmp_path / "abroad.gpkg", tmp_path / "home.gpkg"
    open_store(abroad).write_layers(sample_town(60, seed=7), measuring_crs="EPSG:32632")
    open_store(home).write_layers(sample_town(60, seed=8))
    assert (layers_crs(abroad), layers_crs(home), layers_crs(town)) == ("EPSG:32632", None, None)

    original = store.publish(abroad, who="pat", label="the Bellinge upload")
    assert layers_crs(town) == "EPSG:32632" and read_setting(town, "register") == "kept"
    assert services.unanalysed_spec(str(town)) == WorkspaceSpec(profile=services.DEFAULT_PROFILE, crs="EPSG:32632")
    bellinge = store.publish(home, who="pat", label="the March upload")
    assert layers_crs(town) is None and read_setting(town, "register") == "kept"
    store.restore(bellinge, who="pat")
    assert layers_crs(town) == "EPSG:32632"
    store.restore(original, who="pat")
    assert layers_crs(town) is None and read_setting(town, "register") == "kept"


def test_the_profile_the_layers_were_checked_under_goes_with_them_when_published_and_restored(tmp_path):
    """An upload checked under a profile (with values set on it) keeps it with its layers; publishing it made the
    town's store forget it, and a store never analysed was run under the default profile. It now goes with the layers,
    published or restored, while the town's own settings stay; layers written without a check carry none."""
    from layers.store import layers_profile, open_store, read_setting

    town = tmp_path / "town.gpkg"
    open_store(town).write_layers(sample_town(60), profile="fort-plain")
    store = open_store(town)
    store.write_setting("register", "kept")
    checked, plain = tmp_path / "checked.gpkg", tmp_path / "plain.gpkg"
    open_store(checked).write_layers(
        sample_town(60, seed=7), profile="wappinger", profile_settings={"mandate.distance_ft": "200"}
    )
    open_store(plain).write_layers(sample_town(60, seed=8))
    assert layers_profile(checked) == ("wappinger", {"mandate.distance_ft": "200"})
    assert layers_profile(plain) == (None, {})

    original = store.publish(checked, who="pat", label="the March upload")
    assert layers_profile(town) == ("wappinger", {"mandate.distance_ft": "200"})
    assert read_setting(town, "register") == "kept"
    assert services.unanalysed_spec(str(town)) == WorkspaceSpec(
        profile="wappinger", settings=(("mandate.distance_ft", "200"),)
    )
    wappinger = store.publish(plain, who="pat", label="a sample")
    assert layers_profile(town) == (None, {}) and services.unanalysed_spec(str(town)).profile == "fort-plain"
    store.restore(wappinger, who="pat")
    assert layers_profile(town) == ("wappinger", {"mandate.distance_ft": "200"})
    store.restore(original, who="pat")
    assert layers_profile(town) == ("fort-plain", {}) and read_setting(town, "register") == "kept"


def test_the_command_line_takes_the_profile_the_layers_were_checked_under_unless_another_is_given(runner, tmp_path):
    """No --profile: the checked one with its values, said on stderr. The same --profile: its values too. Another
    --profile: that one alone, nothing said. A run records what it used, and from then on the record decides."""
    from layers.store import open_store

    store = tmp_path / "town.gpkg"
    open_store(store).write_layers(
        sample_town(60), profile="wappinger", profile_settings={"mandate.distance_ft": "200"}
    )
    taken = runner.invoke("analyze", "--data", store, "--out", tmp_path / "a.gpkg", ok=True)
    assert (
        "were checked under (no run has recorded one yet): --profile wappinger --set mandate.distance_ft=200."
        in " ".join(taken.stderr.split())
    )
    assert latest_run(tmp_path / "a.gpkg")["distance_ft"] == 200.0
    same = runner.invoke("analyze", "--profile", "wappinger", "--data", store, "--out", tmp_path / "b.gpkg", ok=True)
    assert "checked under (no run has recorded one yet): --set mandate.distance_ft=200." in " ".join(
        same.stderr.split()
    )
    other = runner.invoke("analyze", "--profile", "fort-plain", "--data", store, "--out", tmp_path / "c.gpkg", ok=True)
    assert "checked under" not in other.stderr and latest_run(tmp_path / "c.gpkg")["profile"] == "fort-plain"
    runner.invoke("analyze", "--profile", "fort-plain", "--data", store, "--out", store, ok=True)
    after = runner.invoke("analyze", "--data", store, "--out", store, ok=True)
    assert "checked under" not in after.stderr and "--profile fort-plain" in after.stderr


def test_a_run_records_the_measuring_crs_it_took_from_the_layers(runner, tmp_path):
    """A store never analysed is measured in the CRS its layers were checked in; the run records it, and the record
    then says it for every later command."""
    from layers.store import open_store

    store = tmp_path / "town.gpkg"
    open_store(store).write_layers(sample_town(60), measuring_crs="EPSG:2260")
    first = runner.invoke("analyze", "--profile", "fort-plain", "--data", store, "--out", store, ok=True)
    assert "were checked in (no run has recorded one yet): --crs EPSG:2260." in " ".join(first.stderr.split())
    assert latest_run(store)["workspace"]["crs"] == "EPSG:2260"
    again = runner.invoke("analyze", "--data", store, "--out", store, ok=True)
    assert "Using what the latest run recorded" in again.stderr and "--crs EPSG:2260" in again.stderr


# -- one name per option, and the old spellings for one release ---------------------------------------------------


def test_sewerplan_layers_lists_every_kind(runner):
    kinds = runner.json("layers")
    from layers.schema import SPECS

    assert [k["kind"] for k in kinds] == list(SPECS)
    parcels = kinds[0]
    assert parcels["required"] and "tax_parcels" in parcels["names"] and "parcel_id" in parcels["fields"]
    assert "outfalls" in runner.invoke("layers", ok=True).stdout


def test_the_old_layer_spellings_still_work_with_a_note(runner, tmp_path):
    town = tmp_path / "town.gpkg"
    write_layers(str(town), sample_town(80))
    new = runner.invoke(
        "analyze", "--profile", "fort-plain", "--layer", f"parcels={town}:parcels", "--data", town, "--json", ok=True
    )
    old = runner.invoke(
        "analyze", "--profile", "fort-plain", "--parcels", f"{town}:parcels", "--data", town, "--json", ok=True
    )
    assert json.loads(old.stdout)["summary"]["counts"] == json.loads(new.stdout)["summary"]["counts"]
    assert "Deprecated: --parcels PATH will be removed in the next release; use --layer parcels=PATH." in old.stderr
    assert "Deprecated" not in new.stderr


def test_the_old_layer_crs_spelling_still_works_with_a_note(runner, tmp_path):
    town = tmp_path / "town.gpkg"
    write_layers(str(town), sample_town(80))
    bare = tmp_path / "bare.gpkg"
    parcels = gpd.read_file(town, layer="parcels").set_crs(None, allow_override=True)
    with pytest.warns(UserWarning, match="'crs' was not provided"):
        parcels.to_file(bare, layer="parcels")
    for layer in ("mains", "streets", "buildings"):
        gpd.read_file(town, layer=layer).to_file(bare, layer=layer)
    old = runner.invoke("analyze", "--profile", "fort-plain", "--data", bare, "--parcels-crs", "EPSG:2260", ok=True)
    assert "use --layer-crs parcels=CRS" in old.stderr


def test_the_old_diameter_spelling_still_works_with_a_note(runner, tmp_path):
    town = tmp_path / "town.gpkg"
    write_layers(str(town), sample_town(80))
    street = gpd.read_file(town, layer="streets")["street_name"].iloc[0]
    args = ("plan", "--profile", "fort-plain", "--data", town, "--streets-run", street, "--json")
    new = runner.invoke(*args, "--diameter-in", "8", ok=True)
    old = runner.invoke(*args, "--diameter", "8", ok=True)
    assert json.loads(old.stdout)["diameter_in"] == json.loads(new.stdout)["diameter_in"] == 8
    assert "use --diameter-in INCHES" in old.stderr


def test_an_unknown_layer_kind_names_the_kinds(runner, tmp_path):
    result = runner.invoke("analyze", "--profile", "fort-plain", "--layer", f"zoning={tmp_path}")
    assert (
        result.exit_code == 2
        and "'zoning' is not a layer kind" in result.output
        and "sewerplan layers" in result.output
    )


@pytest.mark.parametrize(
    ("given", "kind"), [("--layer", "treatment_plants=wwtf.geojson"), ("--layer-crs", "roads=EPSG:2260")]
)
def test_a_layer_name_given_as_a_kind_is_told_its_kind(runner, given, kind):
    """`--layer treatment_plants=...` (the sample store's layer name, and the README's) was refused with the list
    of kinds, leaving the user to guess that a plant is an outfall."""
    result = runner.invoke("network", "check", "--profile", "fort-plain", given, kind)
    told = {
        "--layer": "'treatment_plants' is not a layer kind, but a layer of that name is read as outfalls: give "
        "--layer outfalls=wwtf.geojson.",
        "--layer-crs": "'roads' is not a layer kind, but a layer of that name is read as streets: give --layer-crs "
        "streets=EPSG:2260.",
    }[given]
    assert result.exit_code == 2 and told in " ".join(result.output.split())
