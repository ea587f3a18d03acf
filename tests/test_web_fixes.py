"""The web app words a fix as the field to fill in, never as a command-line flag, and that field fixes it.

The same errors the command line words as ``--set``, ``--layer-crs`` and ``--map-value`` (tests/test_cli.py,
tests/test_error_shape.py) are worded here as the run form's "Settings" field and the column-mapping page's "CRS" and
"Coded values" fields; filling them in as told makes the run or the upload go through.
"""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path

import pytest

from layers.sample import sample_town
from layers.write import write_layers
from tests.conftest import csrf, make_app, posted_upload, serving, wait_job
from tests.test_web import open_map, shot, wait_for

FLAG = re.compile(r"--[a-z]")


@pytest.fixture
def store(tmp_path):
    """The sample village, never analysed (its own file: a run rewrites it)."""
    path = tmp_path / "town.gpkg"
    write_layers(str(path), sample_town(80))
    return path


def _run(client, **form) -> dict:
    job = wait_job(client, client.post("/analysis/run", data=form | {"csrf_token": csrf(client)}).get_json(), 60)
    if job["state"] not in ("done", "failed"):
        raise AssertionError(f"the run did not end: {job}")
    return job


def test_a_run_that_needs_a_setting_names_the_settings_field(client):
    failed = _run(client, profile="wappinger")
    assert failed["state"] == "failed"
    assert 'Fill in the "Settings" field of "Run the analysis"' in failed["error"]
    assert "mandate.distance_ft=N" in failed["error"] and not FLAG.search(failed["error"])


def test_the_settings_field_as_told_makes_the_run_go_through(client):
    done = _run(client, profile="wappinger", set="mandate.distance_ft=200")
    assert done["state"] == "done", done
    assert done["summary"]["distance_ft"] == 200.0 and done["summary"]["workspace"]["settings"] == {
        "mandate.distance_ft": "200"
    }
    page = client.get("/").get_data(as_text=True)  # the next run starts from what this one used
    assert re.search(r'<textarea name="set"[^>]*>mandate.distance_ft=200', page)


def test_a_run_without_the_settings_field_keeps_the_runs_settings(client):
    assert _run(client, profile="wappinger", set="mandate.distance_ft=200")["state"] == "done"
    again = _run(client, profile="wappinger")  # an older page: no "set" field sent
    assert again["state"] == "done" and again["summary"]["distance_ft"] == 200.0


def test_a_malformed_setting_is_refused_before_a_run(client):
    refused = client.post(
        "/analysis/run", data={"profile": "wappinger", "set": "distance 200", "csrf_token": csrf(client)}
    )
    assert refused.status_code == 400 and refused.is_json
    assert "SECTION.KEY=VALUE" in refused.get_json()["error"]["message"]
    unknown = client.post(
        "/analysis/run", data={"profile": "wappinger", "set": "mandate.distance=200", "csrf_token": csrf(client)}
    )
    assert unknown.status_code == 400 and "names no rule" in unknown.get_json()["error"]["message"]
    for value in ("nan", "inf"):
        silly = client.post(
            "/analysis/run",
            data={"profile": "wappinger", "set": f"mandate.distance_ft={value}", "csrf_token": csrf(client)},
        )
        assert silly.status_code == 400 and "finite number" in silly.get_json()["error"]["message"]
    # The Settings box gets the command line's sentence: before, a period of 100000000 days failed the run itself
    # with "Unexpected error: date value out of range", and text for a number said "not a int".
    for setting, message in (
        (
            "mandate.distance_ft=200\nmandate.notice_period_days=100000000",
            "mandate.notice_period_days (§ 196-17E) must be from 1 to 3,650 days, not 100000000.",
        ),
        ("mandate.distance_ft=abc", "mandate.distance_ft must be a number, not 'abc'."),
        (
            "mandate.distance_ft=200\nmandate.notice_reasons=board_order",
            # "use the copy as the profile": the web offers only the bundled profiles, so it says who can add one
            "mandate.notice_reasons is a list in the profile file, which a setting cannot give. The map page runs "
            "only the bundled profiles, so mandate.notice_reasons is changed in a copy of wappinger.toml under a "
            "name of its own: ask whoever runs the server to add the copy to the bundled profiles (it is then "
            'offered under "Profile"), or run the copy with the command line.',
        ),
    ):
        refused = client.post(
            "/analysis/run", data={"profile": "wappinger", "set": setting, "csrf_token": csrf(client)}
        )
        assert refused.status_code == 400 and refused.get_json()["error"]["message"] == message


def test_a_setting_given_twice_with_two_values_is_refused_by_the_web_and_the_cli(client, store):
    """The Settings box and --set took the last of two values for one key silently; both now name the key."""
    from click.testing import CliRunner

    from gisapp.cli import main

    refused = client.post(
        "/analysis/run",
        data={
            "profile": "wappinger",
            "set": "mandate.distance_ft=200\nmandate.distance_ft=300",
            "csrf_token": csrf(client),
        },
    )
    assert refused.status_code == 400 and refused.get_json()["error"]["message"] == (
        "Settings: mandate.distance_ft is given twice, as 200 and 300: keep one line for it, with the value you mean."
    )
    cli = CliRunner().invoke(
        main,
        ["analyze", "--profile", "wappinger", "--data", str(store)]
        + ["--set", "mandate.distance_ft=200", "--set", "mandate.distance_ft=300"],
    )
    assert cli.exit_code == 2
    assert "--set mandate.distance_ft is given twice, as 200 and 300: give it once" in cli.output
    same = _run(client, profile="wappinger", set="mandate.distance_ft=200\nmandate.distance_ft=200")
    assert same["state"] == "done" and same["summary"]["distance_ft"] == 200.0  # one value, given twice


@pytest.mark.parametrize(
    ("option", "first", "second"),
    [("--layer", "mains=old.gpkg", "mains=new.gpkg"), ("--layer-crs", "parcels=EPSG:2260", "parcels=EPSG:2261")],
)
def test_a_layer_given_twice_with_two_sources_is_refused(store, option, first, second):
    """``--layer mains=old.gpkg --layer mains=new.gpkg`` analysed the second without a word, as --set did."""
    from click.testing import CliRunner

    from gisapp.cli import main

    args = ["analyze", "--profile", "fort-plain", "--data", str(store), option, first, option, second]
    cli = CliRunner().invoke(main, args)
    kind, one, two = first.split("=")[0], first.split("=")[1], second.split("=")[1]
    assert cli.exit_code == 2, cli.output
    assert f"{option} {kind} is given twice, as {one} and {two}: give it once" in " ".join(cli.output.split())


# -- uploads ------------------------------------------------------------------------------------------------------


def _zipped(tmp_path, *, parcels_prj: bool = True, mains_code: str | None = None) -> bytes:
    town = sample_town(60)
    if mains_code:
        town["mains"].loc[town["mains"].index[0], "sewer_type"] = mains_code
    folder = tmp_path / "shp"
    folder.mkdir()
    for name in ("parcels", "mains", "streets", "buildings"):
        frame = town[name]
        frame[[c for c in frame.columns if len(c) <= 10]].to_file(folder / f"{name}.shp")
    if not parcels_prj:
        (folder / "parcels.prj").unlink()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for f in folder.iterdir():
            zf.write(f, f.name)
    return buf.getvalue()


def _validate(client, payload: bytes, **fields):
    token = csrf(client)
    sent = client.post(
        "/data/upload",
        data={"dataset": (io.BytesIO(payload), "town.zip"), "csrf_token": token},
        content_type="multipart/form-data",
    )
    assert sent.status_code == 302, sent.get_data(as_text=True)[:500]
    form = client.get(sent.headers["Location"]).get_data(as_text=True)
    assert 'name="layer_crs.parcels"' in form and 'name="map_value.mains"' in form
    return client.post(sent.headers["Location"], data={"csrf_token": token, **fields})


@pytest.fixture
def web(store, tmp_path):
    return make_app(store, tmp_path).test_client()


@pytest.fixture
def app_folder(tmp_path):
    """The folder the ``web`` app keeps its uploads in (``UPLOAD_FOLDER`` is ``uploads/`` in it)."""
    return tmp_path


def test_the_mapping_page_explains_fields_in_words_not_the_codes_names(web, tmp_path):
    """The manholes' structure field was explained as "... pump station ... (STRUCTURE_VALUES)" and the plants'
    facility_type as "(FACILITY_TYPE_VALUES)": names of tables in the code, which mean nothing to a clerk. No field's
    explanation (on this page, or any layer's) names one."""
    from layers.schema import SPECS

    token = csrf(web)
    sent = web.post(
        "/data/upload",
        data={"dataset": (io.BytesIO(_zipped(tmp_path)), "town.zip"), "csrf_token": token},
        content_type="multipart/form-data",
    )
    page = web.get(sent.headers["Location"]).get_data(as_text=True)
    shown = re.findall(r'<td class="muted">([^<]*)</td>', page)
    assert any("pipe cap" in t for t in [f.help for spec in SPECS.values() for f in spec.fields])
    helps = [f.help for spec in SPECS.values() for f in spec.fields if f.help]
    for text in [*shown, *helps]:
        assert not re.search(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b", text), text


def test_an_upload_without_a_crs_names_the_crs_field(web, tmp_path):
    report = _validate(web, _zipped(tmp_path, parcels_prj=False))
    text = report.get_data(as_text=True)
    assert report.status_code == 422
    assert "Fill in the &#34;CRS&#34; field of the parcels layer on the column-mapping page" in text
    assert not FLAG.search(re.sub(r"<[^>]+>", " ", text))
    # Said once: the sentence above the field's told the planner to give the CRS "as the parcels layer's CRS" with
    # its own example, then the field's did again.
    (row,) = [r for r in re.findall(r"<tr>.*?</tr>", text, re.S) if "no crs" in r]
    assert row.count("EPSG:2260") == 1 and "give the CRS it was drawn in." in row
    # A problem of the whole layer has no count: the table showed 0, as if no feature had it.
    assert '<td class="num"></td>' in row


def test_the_crs_field_as_told_makes_the_upload_go_through(web, tmp_path):
    report = _validate(web, _zipped(tmp_path, parcels_prj=False), **{"layer_crs.parcels": "EPSG:2260"})
    assert report.status_code == 200 and "The data can be used" in report.get_data(as_text=True)


def test_a_mistyped_crs_keeps_the_upload_for_the_field_to_be_corrected(web, tmp_path):
    """EPSG:22600 for EPSG:2260: the page says so beside the field, and the upload is still there to try again."""
    token = csrf(web)
    sent = web.post(
        "/data/upload",
        data={"dataset": (io.BytesIO(_zipped(tmp_path, parcels_prj=False)), "town.zip"), "csrf_token": token},
        content_type="multipart/form-data",
    )
    page = sent.headers["Location"]
    typo = web.post(page, data={"csrf_token": token, "layer_crs.parcels": "EPSG:22600"})
    text = typo.get_data(as_text=True)
    assert typo.status_code == 422 and 'name="layer_crs.parcels"' in text and "EPSG:22600" in text
    again = web.post(page, data={"csrf_token": token, "layer_crs.parcels": "EPSG:2260"})
    assert again.status_code == 200 and "The data can be used" in again.get_data(as_text=True)


def test_an_upload_the_mapping_page_can_fix_is_kept_to_be_fixed_there(web, tmp_path):
    """The report said "Every problem below is fixed on the column-mapping page" and linked to it, but the upload had
    been deleted already: the page answered "No such upload (it may have expired or been discarded)". A planner
    without a .prj for the parcels and with a code of their own in the mains now fills both fields in and goes on."""
    token = csrf(web)
    sent = web.post(
        "/data/upload",
        data={
            "dataset": (io.BytesIO(_zipped(tmp_path, parcels_prj=False, mains_code="GRAV")), "x.zip"),
            "csrf_token": token,
        },
        content_type="multipart/form-data",
    )
    page = sent.headers["Location"]
    report = web.post(page, data={"csrf_token": token})
    text = report.get_data(as_text=True)
    assert report.status_code == 422 and 'id="fix-on-mapping"' in text
    assert f'href="{page}" id="fix-on-mapping"' in text
    form = web.get(page)
    assert form.status_code == 200 and 'name="layer_crs.parcels"' in form.get_data(as_text=True)
    fields = {"layer_crs.parcels": "EPSG:2260", "map_value.mains": "sewer_type.GRAV=sanitary"}
    again = web.post(page, data={"csrf_token": token, **fields})
    assert again.status_code == 200 and "The data can be used" in again.get_data(as_text=True)


def test_an_upload_without_parcels_is_offered_the_form_to_add_them(web, tmp_path):
    """A town's sewer layers alone (Manchester's, as the state gives them): the page said "No layer of the upload is
    the parcels layer: say which one it is below, or add it", but the form to add a layer was only on the report,
    which is reached once there are parcels. The mapping page has it, parcels first, and adding them goes on."""
    town = sample_town(60)
    folder = tmp_path / "sewer"
    folder.mkdir()
    for name in ("mains", "streets"):
        town[name].to_file(folder / f"{name}.geojson")
    token = csrf(web)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for f in folder.iterdir():
            zf.write(f, f.name)
    sent = web.post(
        "/data/upload",
        data={"dataset": (io.BytesIO(buf.getvalue()), "sewer.zip"), "csrf_token": token},
        content_type="multipart/form-data",
    )
    page = sent.headers["Location"]
    refused = web.post(page, data={"csrf_token": token})
    text = refused.get_data(as_text=True)
    assert refused.status_code == 422 and "No layer of the upload is the parcels layer" in text
    form = re.search(r'<form[^>]*id="add-layer-form".*?</form>', text, re.S)
    assert form and re.search(r'<select name="kind">\s*<option value="parcels">', form.group(0))
    parcels = tmp_path / "parcels.geojson"
    town["parcels"].to_file(parcels)
    add = re.search(r'action="([^"]+)"', form.group(0)).group(1)
    added = web.post(
        add,
        data={"kind": "parcels", "layer": (io.BytesIO(parcels.read_bytes()), "parcels.geojson"), "csrf_token": token},
        content_type="multipart/form-data",
    )
    assert added.status_code == 302 and added.headers["Location"] == page
    assert 'id="add-layer-form"' not in web.get(page).get_data(as_text=True)  # it has parcels now
    report = web.post(page, data={"csrf_token": token})
    assert report.status_code == 200 and "The data can be used: 60 parcels" in report.get_data(as_text=True)


def test_an_unknown_code_names_the_coded_values_field(web, tmp_path):
    report = _validate(web, _zipped(tmp_path, mains_code="GRAV"))
    text = report.get_data(as_text=True)
    assert report.status_code == 422
    assert "Fill in the &#34;Coded values&#34; field of the mains layer" in text and "sewer_type.GRAV=CODE" in text
    assert not FLAG.search(re.sub(r"<[^>]+>", " ", text))
    # One way to write it: the field takes FIELD.VALUE=CODE, and the sentence above it no longer said
    # mains.sewer_type.GRAV=CODE (the command line's form, which the field does not take).
    assert "mains.sewer_type.GRAV" not in text
    assert "say which of combined, force, sanitary, storm each one means" in text


def test_the_coded_values_field_as_told_makes_the_upload_go_through(web, tmp_path):
    payload = _zipped(tmp_path, mains_code="GRAV")
    report = _validate(web, payload, **{"map_value.mains": "sewer_type.GRAV=sanitary"})
    assert report.status_code == 200 and "The data can be used" in report.get_data(as_text=True)


# -- data outside New York: the measuring CRS ---------------------------------------------------------------------


def _abroad_layers() -> dict:
    """The sample village moved to Bellinge, Denmark, in metres (EPSG:32632): every distance in feet is as at home,
    only the place and the unit differ."""
    town = sample_town(60)
    x0, y0 = town["parcels"].total_bounds[:2]
    layers = {}
    for name in ("parcels", "mains", "streets", "buildings", "manholes"):
        frame = town[name]
        moved = frame.geometry.translate(-x0, -y0).scale(0.3048006, 0.3048006, origin=(0, 0))
        layers[name] = frame.set_geometry(moved.translate(583_000, 6_134_000)).set_crs(
            "EPSG:32632", allow_override=True
        )
    return layers


def _abroad(tmp_path) -> Path:
    """The sample village in Bellinge, Denmark (``_abroad_layers``), as zipped shapefiles."""
    folder = tmp_path / "abroad"
    folder.mkdir()
    for name, frame in _abroad_layers().items():
        frame[[c for c in frame.columns if len(c) <= 10]].to_file(folder / f"{name}.shp")
    archive = tmp_path / "bellinge.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for f in folder.iterdir():
            zf.write(f, f.name)
    return archive


def _cli_suggestion(runner, archive) -> str:
    """The measuring CRS the command line tells this data to use (its --crs)."""
    refused = runner.invoke(
        "analyze", "--profile", "fort-plain", "--data", archive, "--out", archive.with_suffix(".gpkg")
    )
    assert refused.exit_code == 2
    return re.search(r"Use --crs (EPSG:\d+)\.", refused.output).group(1)


def _measuring_field(page: str) -> str:
    return re.search(r'<input name="measuring_crs" id="measuring-crs"[^>]*value="([^"]*)"', page).group(1)


def test_the_mapping_page_fills_in_the_clis_crs_for_data_outside_new_york_and_nothing_inside(web, tmp_path, runner):
    """The "Measuring CRS" field holds the UTM zone the command line names for --crs; for data in New York it is
    empty, and the upload is checked in the town's CRS as before."""
    archive = _abroad(tmp_path)
    page = web.get(posted_upload(web, archive.read_bytes(), "bellinge.zip")).get_data(as_text=True)
    assert _measuring_field(page) == _cli_suggestion(runner, archive)
    note = re.search(r'id="measuring-crs-note">([^<]*)<', page).group(1)
    assert "outside where NAD83 / New York East (ftUS) is used" in note and "WGS 84 / UTM zone 32N" in note
    home = posted_upload(web, _zipped(tmp_path), "town.zip")
    assert _measuring_field(web.get(home).get_data(as_text=True)) == ""
    checked = web.post(home, data={"csrf_token": csrf(web), "measuring_crs": ""})
    assert checked.status_code == 200 and "The data can be used" in checked.get_data(as_text=True)


def test_one_layer_declaring_a_far_crs_beside_a_town_in_new_york_is_told_its_crs_is_wrong(web, tmp_path):
    """Mains whose .prj said UTM zone 18N (New York East feet read as metres, off Central America), beside parcels in
    New York: the mapping page filled in "Measuring CRS" with EPSG:32618, and the check told the planner to measure
    there, where every other layer then lay 2,000 miles off (session 23). The field stays empty, and the refusal
    names the mains' CRS as the suspect."""
    import pyproj

    archive = tmp_path / "upload.zip"
    archive.write_bytes(_zipped(tmp_path))
    with zipfile.ZipFile(archive) as zf:
        files = {name: zf.read(name) for name in zf.namelist()}
    files["mains.prj"] = pyproj.CRS.from_epsg(32618).to_wkt("WKT1_ESRI").encode()
    with zipfile.ZipFile(archive, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    page = posted_upload(web, archive.read_bytes(), "town.zip")
    assert _measuring_field(web.get(page).get_data(as_text=True)) == ""
    refused = web.post(page, data={"csrf_token": csrf(web), "measuring_crs": ""})
    text = " ".join(re.sub(r"<[^>]+>", " ", refused.get_data(as_text=True)).split())
    assert refused.status_code == 422 and "WGS 84 / UTM zone 18N is most likely not the CRS it was drawn in" in text
    assert "EPSG:32618" not in text and "measure in a projected CRS" not in text


def test_data_outside_new_york_is_kept_and_told_the_measuring_crs_field(web, tmp_path, runner, app_folder):
    """Checked in New York East (the field emptied), the upload was told to fill in the run form's "Settings" and
    deleted: the run form was never reached. It is kept, told the mapping page's field, and goes through with it."""
    archive = _abroad(tmp_path)
    suggested = _cli_suggestion(runner, archive)
    page = posted_upload(web, archive.read_bytes(), "bellinge.zip")
    refused = web.post(page, data={"csrf_token": csrf(web), "measuring_crs": ""})
    text = refused.get_data(as_text=True)
    assert refused.status_code == 422 and f'href="{page}" id="fix-on-mapping"' in text
    field = "Fill in the &#34;Measuring CRS&#34; field on the column-mapping page of the upload (Data page)"
    told = f"{field} with {suggested}."
    assert told in text and "Settings" not in text and not FLAG.search(re.sub(r"<[^>]+>", " ", text))
    assert (app_folder / "uploads" / page.split("/")[2] / "meta.json").exists()  # kept, to be fixed there
    again = web.get(page).get_data(as_text=True)
    assert _measuring_field(again) == suggested  # filled in again: the planner emptied it, and was refused
    checked = web.post(page, data={"csrf_token": csrf(web), "measuring_crs": suggested})
    assert checked.status_code == 200 and "The data can be used: 60 parcels" in checked.get_data(as_text=True)


def _run_line(client) -> str:
    line = re.search(r'id="run-info">(.*?)</p>', client.get("/").get_data(as_text=True), re.S).group(1)
    return " ".join(re.sub(r"<[^>]+>", "", line).split())


def _distances(path) -> dict:
    import geopandas as gpd

    results = gpd.read_file(path, layer="parcel_results")
    return dict(zip(results["parcel_id"], results["distance_ft"].round(6), strict=True))


def test_an_upload_outside_new_york_published_before_any_run_keeps_its_measuring_crs(web, store, tmp_path, runner):
    """Checked in the "Measuring CRS" it came filled in with, then published as the town's store before any run:
    the CRS lived only in the upload's record, deleted with it, so the town's store was measured in New York East and
    refused, from the map's Run form and from `sewerplan analyze` alike. The store keeps it with its layers now: the
    map and the Data page say it, and both runs measure in it, as the command line does with --crs."""
    archive = _abroad(tmp_path)
    suggested = _cli_suggestion(runner, archive)
    at_home = tmp_path / "cli-crs.gpkg"
    runner.invoke(
        "analyze", "--profile", "fort-plain", "--data", archive, "--out", at_home, "--crs", suggested, ok=True
    )
    page = posted_upload(web, archive.read_bytes(), "bellinge.zip")
    assert _measuring_field(web.get(page).get_data(as_text=True)) == suggested
    checked = web.post(page, data={"csrf_token": csrf(web), "measuring_crs": suggested})
    assert checked.status_code == 200 and "The data can be used: 60 parcels" in checked.get_data(as_text=True)
    published = web.post(f"/data/{page.split('/')[2]}/publish", data={"csrf_token": csrf(web)})
    assert published.status_code == 200 and "is now the town&#39;s store" in published.get_data(as_text=True)

    # The command line on the published store: no --crs typed, the store's own used, and said on stderr.
    elsewhere = tmp_path / "cli-store.gpkg"
    cli = runner.invoke("analyze", "--profile", "fort-plain", "--data", store, "--out", elsewhere, ok=True)
    assert f"were checked in (no run has recorded one yet): --crs {suggested}." in " ".join(cli.stderr.split())
    assert _distances(elsewhere) == _distances(at_home)

    named = f"{suggested} (WGS 84 / UTM zone 32N)"
    assert f"A run measures in {named}, the measuring CRS its layers were checked in." in _run_line(web)
    data_page = web.get("/data/upload").get_data(as_text=True)
    assert f"A run measures in {named}, the measuring CRS its layers were checked in." in data_page

    # The map's Run form, as the page sends it.
    done = _run(web, profile="fort-plain", set="", notice_date="", notice_reason="", digitised_direction="0")
    assert done["state"] == "done", done
    assert done["summary"]["workspace"]["crs"] == suggested and done["summary"]["measuring_crs"] == suggested
    assert _distances(store) == _distances(at_home)
    assert f"measured in {named}, 60 parcels" in _run_line(web)


# -- the profile an upload was checked under, published before any run -------------------------------------------


def _chosen_profile(page: str) -> list[str]:
    form = re.search(r'<select name="profile">(.*?)</select>', page, re.S).group(1)
    return re.findall(r'<option value="([^"]+)"\s*selected', form)


def _settings_box(page: str) -> str:
    return re.search(r'<textarea name="set"[^>]*>(.*?)</textarea>', page, re.S).group(1).strip()


def test_an_upload_published_before_any_run_keeps_the_profile_it_was_checked_under(web, store, tmp_path, runner):
    """The town's store was analysed under fort-plain; a planner checks new data under poughkeepsie (its
    column-mapping page's "Profile") and publishes it before running it. The choice lived only in the upload's record,
    deleted with it: the map's Run form offered fort-plain, the default, and `sewerplan trace` took fort-plain too, so
    the town could be run under the wrong ordinance unnoticed. The store keeps the profile with its layers now: the
    publish message, the Data page and the run line say it, the Run form starts from it and the command line takes it
    (saying so on stderr); from the first run on, the run record decides, as before."""
    assert _run(web, profile="fort-plain")["state"] == "done"
    page = posted_upload(web, _zipped(tmp_path), "town.zip")
    assert _chosen_profile(web.get(page).get_data(as_text=True)) == ["fort-plain"]  # the town's, to confirm or change
    checked = web.post(page, data={"csrf_token": csrf(web), "profile": "poughkeepsie"})
    assert checked.status_code == 200 and "The data can be used: 60 parcels" in checked.get_data(as_text=True)
    published = web.post(f"/data/{page.split('/')[2]}/publish", data={"csrf_token": csrf(web)})
    assert published.status_code == 200
    page = web.get("/").get_data(as_text=True)
    assert _chosen_profile(page) == ["poughkeepsie"]
    assert "A run applies the profile poughkeepsie, the one its layers were checked under." in _run_line(web)
    said = " ".join(published.get_data(as_text=True).replace("&#39;", "'").split())
    assert (
        "is now the town's store. The store it replaced is kept below. Not analysed yet. A run applies the profile "
        "poughkeepsie, the one its layers were checked under. The store it replaced was last analysed under the "
        "profile fort-plain." in said
    )
    town = " ".join(re.sub(r"<[^>]+>", "", web.get("/data/upload").get_data(as_text=True)).split())
    assert "Not analysed yet. A run applies the profile poughkeepsie, the one its layers were checked under." in town

    # The command line on the published store, no --profile typed: the store's own, said on stderr.
    parcel = sample_town(60)["parcels"]["parcel_id"].iloc[5]
    traced = runner.invoke("trace", "--data", store, "--parcel", parcel, ok=True)
    said = " ".join(traced.stderr.split())
    assert "were checked under (no run has recorded one yet): --profile poughkeepsie." in said
    elsewhere = tmp_path / "cli.gpkg"
    cli = runner.invoke("analyze", "--data", store, "--out", elsewhere, "--json", ok=True)
    assert "--profile poughkeepsie." in " ".join(cli.stderr.split())
    assert latest_run_of(elsewhere)["profile"] == "poughkeepsie"

    # The map's Run form, as the page sends it; then the run record decides.
    done = _run(web, profile=_chosen_profile(page)[0], set="", notice_date="", notice_reason="")
    assert done["state"] == "done" and done["summary"]["profile"] == "poughkeepsie", done
    assert "profile poughkeepsie, analysed" in _run_line(web)
    again = runner.invoke("analyze", "--data", store, "--out", tmp_path / "again.gpkg", ok=True)
    assert "Using what the latest run recorded" in again.stderr and "checked under" not in again.stderr


def latest_run_of(path) -> dict:
    from layers.store import latest_run

    return latest_run(path)


def test_an_upload_checked_under_the_towns_profile_keeps_the_values_set_on_it(web, store, tmp_path, runner):
    """Checked under the town's own profile, an upload is checked with the values set on it (Wappinger leaves the
    distance to the town: 200 ft here). Published before any run, the store keeps them with the profile: the Run
    form's Settings come filled in with them and the command line takes them, so the run measures 200 ft, not
    whatever the profile says without them."""
    assert _run(web, profile="wappinger", set="mandate.distance_ft=200")["state"] == "done"
    page = posted_upload(web, _zipped(tmp_path), "town.zip")
    checked = web.post(page, data={"csrf_token": csrf(web), "profile": "wappinger"})
    assert checked.status_code == 200 and "The data can be used: 60 parcels" in checked.get_data(as_text=True)
    web.post(f"/data/{page.split('/')[2]}/publish", data={"csrf_token": csrf(web)})
    page = web.get("/").get_data(as_text=True)
    assert _chosen_profile(page) == ["wappinger"] and _settings_box(page) == "mandate.distance_ft=200"
    assert (
        "A run applies the profile wappinger with mandate.distance_ft=200 (value set by the user), the one its layers "
        "were checked under." in _run_line(web)
    )
    cli = runner.invoke("analyze", "--data", store, "--out", tmp_path / "cli.gpkg", ok=True)
    assert "--profile wappinger --set mandate.distance_ft=200." in " ".join(cli.stderr.split())
    assert latest_run_of(tmp_path / "cli.gpkg")["distance_ft"] == 200.0
    done = _run(web, profile="wappinger", set=_settings_box(page), notice_date="", notice_reason="")
    assert done["state"] == "done" and done["summary"]["distance_ft"] == 200.0, done


def test_a_run_refused_for_its_layers_names_the_field_for_each_problem(tmp_path):
    """A store of data outside New York that no check gave a measuring CRS (written by other tools): its run was
    refused with every problem but no word of what to fill in, where the command line names --crs for each. Each
    problem now names the run form's field, and filling it in as told makes the run go through."""
    store = tmp_path / "bellinge.gpkg"
    write_layers(str(store), _abroad_layers())
    client = make_app(store, tmp_path).test_client()
    failed = _run(client, profile="fort-plain")
    told = (
        'Fill in the "Settings" field of "Run the analysis" on the map page with measurement.measuring_crs=EPSG:32632.'
    )
    assert failed["state"] == "failed" and failed["error"].count(told) == 5, failed["error"]
    assert not FLAG.search(failed["error"])
    done = _run(client, profile="fort-plain", set="measurement.measuring_crs=EPSG:32632")
    assert done["state"] == "done" and done["summary"]["measuring_crs"] == "EPSG:32632", done


# -- in a real headless Chromium ------------------------------------------------------------------------------------


@pytest.mark.browser
def test_the_run_form_takes_settings_and_the_direction_in_chromium(store, tmp_path, browser):  # noqa: F811
    """A planner fills in the Settings field the error names, ticks the direction and runs, as a clerk would."""

    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    app = make_app(store, tmp_path)
    with serving(app) as url:
        open_map(browser, url)
        Select(browser.find_element(By.NAME, "profile")).select_by_value("wappinger")
        browser.find_element(By.CSS_SELECTOR, "#run-form button[type=submit]").click()
        failed = wait_for(browser, lambda: "Failed" in (text := browser.find_element(By.ID, "job").text) and text, 60)
        assert 'Fill in the "Settings" field' in failed and not FLAG.search(failed)
        settings = browser.find_element(By.NAME, "set")
        settings.clear()
        settings.send_keys("mandate.distance_ft=200")
        browser.find_element(By.CSS_SELECTOR, "#run-form input[type=checkbox][name=digitised_direction]").click()
        browser.find_element(By.CSS_SELECTOR, "#run-form button[type=submit]").click()
        wait_for(
            browser, lambda: any("profile wappinger" in e.text for e in browser.find_elements(By.ID, "run-info")), 60
        )
        shot(browser, "run-form-settings")
        # The run line names the value set, as the popup does beside a notice given on another run.
        run_line = " ".join(browser.find_element(By.ID, "run-info").text.split())
        assert "profile wappinger with mandate.distance_ft=200 (value set by the user), analysed" in run_line
        assert browser.find_element(By.NAME, "set").get_attribute("value").strip() == "mandate.distance_ft=200"
        box = browser.find_element(By.CSS_SELECTOR, "#run-form input[type=checkbox][name=digitised_direction]")
        assert box.is_selected()  # the next run starts from what this one used
    run = app.test_client().get("/api/summary").get_json()["run"]
    assert run["distance_ft"] == 200.0 and run["workspace"]["digitised_direction"] is True


def _upload_in_chromium(browser, url: str, archive: Path):
    """``archive`` uploaded on the Data page in Chromium: its column-mapping page's "Measuring CRS" field."""
    from selenium.webdriver.common.by import By

    browser.get(url + "/data/upload")
    browser.find_element(By.NAME, "dataset").send_keys(str(archive))
    browser.find_element(By.CSS_SELECTOR, "form button").click()
    return wait_for(browser, lambda: browser.find_elements(By.ID, "measuring-crs"))[0]


def _check_and_publish_in_chromium(browser, url: str):
    """The upload on its column-mapping page checked ("Check the data") and published at once: the message saying so."""
    from selenium.webdriver.common.by import By

    from tests.test_web import message_saying

    browser.find_element(By.CSS_SELECTOR, "#mapping-form button[type=submit]").click()
    wait_for(browser, lambda: browser.find_elements(By.ID, "use-dataset"))
    browser.get(url + "/data/upload")
    browser.find_element(By.CSS_SELECTOR, ".publish-form button").click()
    return message_saying(browser, "is now the town's store")


def _run_from_the_map(browser) -> str:
    """Press the map's Run and wait: the run line once it says what must connect, or the job's failure."""
    from selenium.webdriver.common.by import By

    browser.find_element(By.CSS_SELECTOR, "#run-form button[type=submit]").click()
    return wait_for(
        browser,
        lambda: (
            (
                "must connect" in (t := " ".join(browser.find_element(By.ID, "run-info").text.split()))
                or "Failed" in (t := browser.find_element(By.ID, "job").text)
            )
            and t
        ),
        180,
    )


@pytest.mark.browser
def test_data_outside_new_york_uploaded_checked_and_run_in_chromium(store, tmp_path, browser, runner):  # noqa: F811
    """A planner uploads data from Bellinge, Denmark, sets nothing (the "Measuring CRS" field comes filled in), checks
    it, works on it and runs it: the parcels are drawn and each popup gives the distance the command line measures
    with --crs."""
    import geopandas as gpd
    from selenium.webdriver.common.by import By

    from gisapp.mapdata import feet_words
    from tests.test_web import open_popup

    archive = _abroad(tmp_path)
    suggested = _cli_suggestion(runner, archive)
    measured = tmp_path / "cli.gpkg"
    runner.invoke(
        "analyze", "--profile", "fort-plain", "--data", archive, "--out", measured, "--crs", suggested, ok=True
    )
    results = gpd.read_file(measured, layer="parcel_results")
    mandated = results[results["status"] == "mandated"].iloc[0]
    app = make_app(store, tmp_path / "web")
    with serving(app) as url:
        field = _upload_in_chromium(browser, url, archive)
        assert field.get_attribute("value") == suggested
        shot(browser, "upload-abroad-mapping")
        browser.find_element(By.CSS_SELECTOR, "#mapping-form button[type=submit]").click()
        wait_for(browser, lambda: browser.find_elements(By.ID, "use-dataset"))[0].click()
        wait_for(browser, lambda: browser.execute_script("return document.body.dataset.loaded"))
        info = _run_from_the_map(browser)
        assert f"60 parcels, {(results['status'] == 'mandated').sum()} must connect" in info, info
        popup = open_popup(browser, url, mandated["parcel_id"])
        shot(browser, "upload-abroad-popup")
        assert "must connect" in popup.text
        # worded as its reason words it (fort-plain, 100 ft): "30.0 ft", "99.96 ft"
        assert f"{feet_words([mandated['distance_ft']], 100.0)[0]} to main {mandated['main_id']}" in popup.text
        summary = browser.execute_async_script("fetch('/api/summary').then(r => r.json()).then(arguments[0]);")
    assert summary["run"]["workspace"]["crs"] == suggested


@pytest.mark.browser
def test_data_outside_new_york_published_before_any_run_runs_in_chromium(store, tmp_path, browser, runner):  # noqa: F811
    """A planner uploads data from Bellinge, checks it in the "Measuring CRS" it comes filled in with, publishes it as
    the town's store at once and runs it from the map: the run failed, measured in New York East (the upload's CRS
    was deleted with the upload); it is measured in the upload's, and the run line says so."""
    from selenium.webdriver.common.by import By

    archive = _abroad(tmp_path)
    suggested = _cli_suggestion(runner, archive)
    app = make_app(store, tmp_path / "web")
    with serving(app) as url:
        field = _upload_in_chromium(browser, url, archive)
        assert field.get_attribute("value") == suggested
        assert _check_and_publish_in_chromium(browser, url).is_displayed()
        browser.get(url + "/")
        wait_for(browser, lambda: browser.execute_script("return document.body.dataset.loaded"))
        info = _run_from_the_map(browser)
        shot(browser, "upload-abroad-published-run")
        assert f"measured in {suggested} (WGS 84 / UTM zone 32N), 60 parcels" in info, info
        browser.get(url + "/data/upload")
        assert f"measured in {suggested}" in browser.find_element(By.ID, "town-run").text


@pytest.mark.browser
def test_the_run_form_starts_from_the_profile_a_published_upload_was_checked_under_in_chromium(
    store,
    tmp_path,
    browser,  # noqa: F811
):
    """A planner checks an upload under poughkeepsie on its column-mapping page and publishes it at once: the map's
    Run form preselected fort-plain, the default (the choice was deleted with the upload); it preselects poughkeepsie,
    and the run line says a run applies it and why."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    archive = tmp_path / "town.zip"
    archive.write_bytes(_zipped(tmp_path))
    app = make_app(store, tmp_path / "web")
    with serving(app) as url:
        _upload_in_chromium(browser, url, archive)
        Select(browser.find_element(By.CSS_SELECTOR, "select[name=profile]")).select_by_value("poughkeepsie")
        said = _check_and_publish_in_chromium(browser, url).text
        open_map(browser, url)
        shot(browser, "upload-published-run-form-profile")
        profile = Select(browser.find_element(By.CSS_SELECTOR, "#run-form select[name=profile]"))
        assert profile.first_selected_option.get_attribute("value") == "poughkeepsie"
        line = " ".join(browser.find_element(By.ID, "run-info").text.split())
        assert "A run applies the profile poughkeepsie, the one its layers were checked under." in line
    assert "A run applies the profile poughkeepsie, the one its layers were checked under." in said
