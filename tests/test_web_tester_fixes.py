"""Defects a tester found in the web app (headless Chromium), each checked with the Flask test client, and the command
line's wording of the same case beside it:

1. a layer given a wrong CRS on the column-mapping page was told to fill in the "Measuring CRS"; doing so deleted the
   upload ("upload it again"), where the mapping page's own fields fix it;
2. web messages told a clerk to type commands (`sewerplan profiles show ...`, `sewerplan notices list`);
3. the Notices page's notice-ID forms matched an ID only as the register writes it (capitals, no spaces).
"""

from __future__ import annotations

import html
import io
import re
import zipfile

import pytest

from layers.register import Register
from layers.sample import sample_town
from layers.write import write_layers
from tests.conftest import csrf, make_app, posted_upload
from tests.test_notices_service_in_person import _issue

MAPPING_FIELD = 'Fill in the "CRS" field of the parcels layer on the column-mapping page of the upload (Data page)'
KEPT = 'id="fix-on-mapping"'  # the report of an upload kept to be fixed on its column-mapping page


@pytest.fixture
def store(tmp_path):
    """The sample village, never analysed (its own file)."""
    path = tmp_path / "town.gpkg"
    write_layers(str(path), sample_town(60))
    return path


@pytest.fixture
def web(store, tmp_path):
    return make_app(store, tmp_path).test_client()


def _text(response) -> str:
    """A page's words as a reader sees them: no tags, entities read, spaces collapsed."""
    page = re.sub(r"<script.*?</script>", " ", response.get_data(as_text=True), flags=re.S)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def _shapefiles(tmp_path, *, without_prj=("parcels",), crs: str | None = None) -> bytes:
    """The sample village as zipped shapefiles, the layers ``without_prj`` without their .prj (as the tester made it:
    ``sewerplan sample``, exported with pyogrio, zipped, parcels.prj dropped); ``crs``: moved to Bellinge, Denmark,
    in that CRS's metres."""
    town = sample_town(60)
    folder = tmp_path / "shp"
    folder.mkdir()
    x0, y0 = town["parcels"].total_bounds[:2]
    for name in ("parcels", "buildings", "streets", "mains", "manholes"):
        frame = town[name]
        if crs:
            moved = frame.geometry.translate(-x0, -y0).scale(0.3048006, 0.3048006, origin=(0, 0))
            frame = frame.set_geometry(moved.translate(583_000, 6_134_000)).set_crs(crs, allow_override=True)
        frame[[c for c in frame.columns if len(c) <= 10]].to_file(folder / f"{name}.shp")
        if name in without_prj:
            (folder / f"{name}.prj").unlink()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for f in sorted(folder.iterdir()):
            zf.write(f, f.name)
    return buf.getvalue()


def _upload(client, payload: bytes, name: str = "town.zip") -> str:
    """The upload's column-mapping page."""
    return posted_upload(client, payload, name)


def _kept(tmp_path, page: str) -> bool:
    return (tmp_path / "uploads" / page.split("/")[2] / "meta.json").exists()


# -- 1. a CRS given on the mapping page, a column chosen there: told that field, the upload kept ---------------------


def test_a_wrong_crs_given_for_a_layer_points_to_that_layers_field_and_the_upload_is_kept(web, tmp_path):
    """EPSG:32618 given for parcels drawn in New York East feet puts them in the Caribbean: the report said to fill in
    the "Measuring CRS" with EPSG:32618; doing so, the parcels lay 2,000 miles from every other layer, and the upload
    was deleted ("upload it again"), the mapping page then saying "No such upload". Both are told the parcels layer's
    CRS field now, the upload kept, and the right CRS there makes it usable."""
    page = _upload(web, _shapefiles(tmp_path))
    wrong = web.post(page, data={"csrf_token": csrf(web), "layer_crs.parcels": "EPSG:32618"})
    said = _text(wrong)
    assert wrong.status_code == 422 and KEPT in wrong.get_data(as_text=True), said[:2000]
    assert "read in WGS 84 / UTM zone 18N, the CRS given for the parcels layer" in said
    assert MAPPING_FIELD in said and '"Measuring CRS"' not in said
    # the advice the tester was given, taken: still the layer's field, and the upload still there to fix
    measured = web.post(
        page, data={"csrf_token": csrf(web), "layer_crs.parcels": "EPSG:32618", "measuring_crs": "EPSG:32618"}
    )
    said = _text(measured)
    assert measured.status_code == 422 and KEPT in measured.get_data(as_text=True), said[:2000]
    assert "lies 2,0" in said and "the CRS given for the parcels layer" in said
    assert f"{MAPPING_FIELD} (e.g. EPSG:2260)" in said  # the CRS the other layers came in
    assert "has been deleted" not in said and _kept(tmp_path, page)
    form = web.get(page)
    assert form.status_code == 200 and 'value="EPSG:32618"' in form.get_data(as_text=True)  # as the planner typed it
    right = web.post(page, data={"csrf_token": csrf(web), "layer_crs.parcels": "EPSG:2260", "measuring_crs": ""})
    assert right.status_code == 200 and "The data can be used: 60 parcels" in _text(right)


def test_the_command_line_words_the_same_case_as_its_flag(tmp_path, runner):
    """The command line gave the same advice (--crs EPSG:32618): it names --layer-crs now, from the same problem."""
    archive = tmp_path / "town.zip"
    archive.write_bytes(_shapefiles(tmp_path))
    base = ("analyze", "--profile", "fort-plain", "--data", archive, "--layer-crs", "parcels=EPSG:32618")
    refused = runner.invoke(*base)
    assert refused.exit_code == 2 and "Use --layer-crs parcels=EPSG:2260." in refused.stderr
    assert "Use --crs" not in refused.stderr
    apart = runner.invoke(*base, "--crs", "EPSG:32618")
    assert apart.exit_code == 2 and "lies 2,0" in apart.stderr
    assert (
        "the CRS given for the parcels layer" in apart.stderr and "Use --layer-crs parcels=EPSG:2260." in apart.stderr
    )
    # a layer's CRS given where it declares one of its own that fits nowhere near: the same words, not "Check the .prj"
    utm = runner.invoke("analyze", "--profile", "fort-plain", "--data", archive, "--layer-crs", "parcels=EPSG:26918")
    assert utm.exit_code == 2 and "is read in NAD83 / UTM zone 18N, the CRS given for the parcels layer" in utm.stderr
    assert "Check the .prj" not in utm.stderr


def test_data_abroad_without_a_prj_given_its_right_crs_is_told_to_measure_there(web, tmp_path):
    """The other way the same words read: Bellinge, Denmark, with no .prj at all, each layer given its right CRS on
    the page. The refusal names the measuring CRS made for where it lies, and with it filled in the data is used."""
    layers = ("parcels", "buildings", "streets", "mains", "manholes")
    page = _upload(web, _shapefiles(tmp_path, without_prj=layers, crs="EPSG:32632"), "bellinge.zip")
    given = {f"layer_crs.{k}": "EPSG:32632" for k in layers}
    refused = web.post(page, data={"csrf_token": csrf(web), "measuring_crs": "", **given})
    said = _text(refused)
    assert refused.status_code == 422 and KEPT in refused.get_data(as_text=True), said[:2000]
    assert "if it is, measure in a projected CRS made for where it lies, such as EPSG:32632" in said
    used = web.post(page, data={"csrf_token": csrf(web), "measuring_crs": "EPSG:32632", **given})
    assert used.status_code == 200 and "The data can be used: 60 parcels" in _text(used)


def _gpkg(tmp_path) -> bytes:
    source = tmp_path / "hill.gpkg"
    write_layers(str(source), sample_town(60))
    return source.read_bytes()


@pytest.mark.parametrize(
    ("field", "told"),
    [("parcels.units", "should hold numbers"), ("parcels.connected", "should say yes or no")],
)
def test_values_refused_in_a_column_chosen_on_the_page_keep_the_upload(web, tmp_path, field, told):
    """The owner's name chosen as the units (or as connected): refused for its values, the upload was deleted, though
    choosing the right column on the page fixes it. It is kept and told that field."""
    page = _upload(web, _gpkg(tmp_path), "hill.gpkg")
    wrong = web.post(page, data={"csrf_token": csrf(web), field: "owner_name"})
    said = _text(wrong)
    assert wrong.status_code == 422 and KEPT in wrong.get_data(as_text=True), said[:2000]
    layer, name = field.split(".")
    assert told in said and f"Choose the column that holds {name} for the {layer} layer" in said
    assert _kept(tmp_path, page)
    right = web.post(page, data={"csrf_token": csrf(web), field: name})
    assert right.status_code == 200 and "The data can be used" in _text(right)


def test_wrong_values_in_the_column_found_by_its_name_are_the_datas_to_correct(runner, tmp_path):
    """Only a column picked by hand is offered another pick: the units column found by its name, with "three" in it,
    is told to be corrected, no --map; picked by hand (--map), the same values are offered the mapping."""
    town = sample_town(60)
    town["parcels"]["units"] = town["parcels"]["units"].astype(object)
    town["parcels"].loc[town["parcels"].index[0], "units"] = "three"
    town["parcels"]["lots"] = town["parcels"]["units"]
    path = tmp_path / "town.gpkg"
    write_layers(str(path), town)
    by_name = runner.invoke("analyze", "--profile", "fort-plain", "--data", path)
    assert by_name.exit_code == 2 and "should hold numbers" in by_name.stderr and "--map" not in by_name.stderr
    picked = runner.invoke("analyze", "--profile", "fort-plain", "--data", path, "--map", "parcels.units=lots")
    assert picked.exit_code == 2 and "Use --map parcels.units=COLUMN." in picked.stderr


# -- 2. web words for the web ----------------------------------------------------------------------------------------


def test_an_unknown_setting_is_told_the_settings_field_on_the_web_and_the_command_on_the_command_line(
    web, runner, store
):
    refused = web.post(
        "/analysis/run", data={"profile": "fort-plain", "set": "mandate.nonsense=1", "csrf_token": csrf(web)}
    )
    said = refused.get_json()["error"]["message"]
    assert refused.status_code == 400 and said.startswith("mandate.nonsense names no rule of the profile fort-plain.")
    assert 'the "Settings" field of "Run the analysis" on the map page' in said
    assert "sewerplan" not in said and "`" not in said
    cli = runner.invoke("analyze", "--profile", "fort-plain", "--data", store, "--set", "mandate.nonsense=1")
    assert cli.exit_code == 2
    assert (
        "mandate.nonsense names no rule of the profile fort-plain. `sewerplan profiles show fort-plain` lists its "
        in (cli.stderr)
    )
    close = runner.invoke("analyze", "--profile", "fort-plain", "--data", store, "--set", "mandate.distance=1")
    assert "(did you mean mandate.distance_ft?)" in close.stderr and "profiles show" not in close.stderr


def _notice(path) -> str:
    """One Wappinger violation notice, issued in a batch (``test_notices_service_in_person._issue``); its ID."""
    reg = Register(str(path), create=True)
    notice_id = _issue(reg, ("P1",))["P1"]
    reg.close()
    return notice_id


def _said(response) -> str:
    """What the Notices page says of the form sent: its message or error line."""
    page = response.get_data(as_text=True)
    return html.unescape(" ".join(re.findall(r'id="(?:message|error)"[^>]*>([^<]*)<', page)))


def _serve(client, notice_id: str):
    sent = client.post(
        "/notices/service",
        data={"csrf_token": csrf(client), "notice_id": notice_id, "on": "2027-06-09", "by": "J. Ruiz"},
    )
    if sent.status_code == 302:
        return sent.status_code, _said(client.get(sent.headers["Location"]))
    return sent.status_code, _said(sent)


def test_a_notice_id_not_in_the_register_is_told_where_the_page_lists_them(web, tmp_path, runner, monkeypatch):
    monkeypatch.setenv("SEWERPLAN_TODAY", "2027-07-01")
    register = tmp_path / "register.sqlite"  # the app's (make_app)
    _notice(register)
    status, said = _serve(web, "N-NOT-THERE")
    assert status == 400 and "The register holds no notice N-NOT-THERE." in said
    assert 'Copy its ID from the "notice" column of the register on the Notices page' in said
    assert "sewerplan" not in said and "`" not in said
    cli = runner.invoke(
        "notices", "record-service", "N-NOT-THERE", "--on", "2027-06-09", "--by", "J. Ruiz", "--register", register
    )
    assert cli.exit_code == 2 and "Copy its ID from `sewerplan notices list`." in cli.stderr


# -- 3. a notice ID typed as a clerk types it ------------------------------------------------------------------------


def test_a_notice_id_typed_in_lower_case_with_spaces_is_found(web, tmp_path, monkeypatch):
    """IDs are N- and twelve hex digits in capitals (layers.register): "n-1d575e7979e9 " copied by hand was "not in
    the register"."""
    monkeypatch.setenv("SEWERPLAN_TODAY", "2027-07-01")
    notice_id = _notice(tmp_path / "register.sqlite")
    assert notice_id == notice_id.upper()
    status, said = _serve(web, f" {notice_id.lower()} ")
    assert status == 302 and f"Notice {notice_id} (parcel P1): recorded served in person" in said
    sent = web.post(
        "/notices/mailing",
        data={
            "csrf_token": csrf(web),
            "notice_id": f"{notice_id.lower()}\t",
            "article_no": "9407 1118 9876 5432 1012 38",
        },
    )
    said = _said(web.get(sent.headers["Location"])) if sent.status_code == 302 else _said(sent)
    # found: refused only as a notice of a batch, whose number its batch's mailing list records
    assert said and "holds no notice" not in said and notice_id in said, said
