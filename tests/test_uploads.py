"""Uploads that cannot reach the server (issue 11, findings 1, 3 and 4), through the web app.

The exact payloads of the issue: a zip holding ``parcels.geojson`` whose content is an OGR VRT document reading
the instance's secret key through ``CSV:``, and ``/vsicurl/`` URLs (a VRT source, a GeoJSON ``crs`` link, an upload
named so). A local HTTP server counts the requests GDAL makes; the secret must never appear in any answer.
"""

from __future__ import annotations

import contextlib
import http.server
import io
import os
import secrets
import threading
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from layers.errors import LayerError
from layers.sample import sample_town
from layers.uploads import expire_uploads, gdal_path, new_upload
from layers.write import write_layers
from tests.conftest import csrf, make_app


class Recorder(http.server.BaseHTTPRequestHandler):
    requests: list[str] = []

    def do_GET(self):  # noqa: N802 - http.server's name
        Recorder.requests.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "text/csv")
        self.end_headers()
        self.wfile.write(b"leaked\n1\n")

    do_HEAD = do_GET  # noqa: N815 - http.server's name

    def log_message(self, *args):
        pass


@pytest.fixture
def listener():
    Recorder.requests = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}", Recorder.requests
    server.shutdown()
    server.server_close()


@pytest.fixture
def secret(tmp_path):
    """The instance's secret_key file, as the app writes it."""
    path = tmp_path / "instance" / "secret_key"
    path.parent.mkdir()
    key = secrets.token_hex(32)
    path.write_text(key)
    return path, key


@pytest.fixture
def app(tmp_path, secret):
    store = tmp_path / "town.gpkg"
    write_layers(str(store), sample_town(60))
    return make_app(store, tmp_path, SECRET_KEY=secret[1])


def vrt(source: str, layer: str) -> str:
    return (
        '<OGRVRTDataSource><OGRVRTLayer name="parcels">'
        f"<SrcDataSource>{source}</SrcDataSource><SrcLayer>{layer}</SrcLayer>"
        "</OGRVRTLayer></OGRVRTDataSource>"
    )


def zipped(members: dict[str, str | bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, content in members.items():
            zf.writestr(name, content)
    return buf.getvalue()


def attempt(client, payload: bytes, filename: str) -> list:
    """Upload, then go through every page an upload reaches; return every answer."""
    token = csrf(client)
    sent = client.post(
        "/data/upload",
        data={"dataset": (io.BytesIO(payload), filename), "csrf_token": token},
        content_type="multipart/form-data",
    )
    answers = [sent]
    if sent.status_code == 302:
        answers.append(client.get(sent.headers["Location"]))
        answers.append(client.post(sent.headers["Location"], data={"csrf_token": token}))
    return answers


def assert_refused_without_leak(answers, key: str, uploads: Path) -> None:
    for answer in answers:
        assert key not in answer.get_data(as_text=True)
        assert key[:16] not in answer.get_data(as_text=True)
    assert answers[0].status_code == 400, answers[0].get_data(as_text=True)[:300]
    assert not uploads.exists() or not list(uploads.iterdir()), "the refused upload was kept"


def test_vrt_in_parcels_geojson_never_reads_the_secret_key(app, secret, tmp_path):
    path, key = secret
    payload = zipped({"town/parcels.geojson": vrt(f"CSV:{path}", "secret_key")})
    answers = attempt(app.test_client(), payload, "town.zip")
    assert_refused_without_leak(answers, key, tmp_path / "uploads")
    assert "is not GeoJSON" in answers[0].get_data(as_text=True)


def test_vrt_uploaded_directly_as_geojson_is_refused(app, secret, tmp_path):
    path, key = secret
    answers = attempt(app.test_client(), vrt(f"CSV:{path}", "secret_key").encode(), "parcels.geojson")
    assert_refused_without_leak(answers, key, tmp_path / "uploads")


@pytest.mark.parametrize("name", ["parcels.geojson", "parcels.json", "parcels.fgb", "parcels.gpkg"])
def test_vsicurl_source_makes_no_request(app, secret, tmp_path, listener, name):
    url, requests = listener
    payload = zipped({name: vrt(f"/vsicurl/{url}/parcels.csv", "parcels")})
    answers = attempt(app.test_client(), payload, "town.zip")
    assert_refused_without_leak(answers, secret[1], tmp_path / "uploads")
    time.sleep(0.2)
    assert requests == []


def test_upload_named_like_a_vsicurl_url_makes_no_request(app, secret, tmp_path, listener):
    url, requests = listener
    answers = attempt(app.test_client(), b'{"type": "FeatureCollection"', f"/vsicurl/{url}/parcels.geojson")
    for answer in answers:
        assert secret[1] not in answer.get_data(as_text=True)
    time.sleep(0.2)
    assert requests == []


def test_geojson_crs_link_makes_no_request(app, tmp_path, listener):
    """A valid GeoJSON whose ``crs`` is a link: GDAL would fetch it to read the projection; here it cannot."""
    url, requests = listener
    town = sample_town(60)
    doc = town["parcels"].to_crs(4326).to_json()
    doc = doc.replace(
        '{"type": "FeatureCollection"',
        f'{{"type": "FeatureCollection", "crs": {{"type": "link", '
        f'"properties": {{"href": "{url}/crs", "type": "proj4"}}}}',
        1,
    )
    mains = town["mains"].to_crs(4326).to_json()
    payload = zipped({"parcels.geojson": doc, "mains.geojson": mains})
    attempt(app.test_client(), payload, "town.zip")
    time.sleep(0.2)
    assert requests == []


def test_gdal_pipeline_json_is_not_run(app, secret, tmp_path):
    """A GDALG document starts with '{' like GeoJSON: it is opened by the GeoJSON driver alone, and refused."""
    path, key = secret
    command = f"gdal vector pipeline ! read CSV:{path} ! write streamed"
    doc = '{"type": "gdal_streamed_alg", "command_line": "' + command + '"}'
    answers = attempt(app.test_client(), zipped({"parcels.geojson": doc}), "town.zip")
    for answer in answers:
        assert key not in answer.get_data(as_text=True)


def test_only_the_named_driver_and_plain_paths_are_opened(tmp_path):
    good = tmp_path / "parcels.geojson"
    good.write_text('{"type": "FeatureCollection", "features": []}')
    assert gdal_path(good, "GeoJSON") == f"GeoJSON:{good.resolve()}"
    for bad, driver in [
        ("/vsicurl/http://127.0.0.1:9/x.geojson", "GeoJSON"),
        (f"/vsizip/{tmp_path}/a.zip/parcels.geojson", "GeoJSON"),
        (str(good), "OGR_VRT"),
        (str(good), "GPKG"),
        (f"CSV:{good}", "GeoJSON"),
    ]:
        with pytest.raises(LayerError):
            gdal_path(bad, driver)
    link = tmp_path / "link.geojson"
    os.symlink(good, link)
    with pytest.raises(LayerError, match="link"):
        gdal_path(link, "GeoJSON")


def test_gdal_has_no_unsafe_driver_in_the_server_process(app):
    import pyogrio

    drivers = set(pyogrio.list_drivers())
    assert not {"OGR_VRT", "GDALG", "HTTP", "WFS", "GPSBabel", "LIBKML"} & drivers
    assert {"GPKG", "ESRI Shapefile", "GeoJSON", "OpenFileGDB", "FlatGeobuf"} <= drivers


def test_serve_keeps_only_the_allowed_drivers():
    """What `sewerplan serve` does to its own process, run in a child so this test process keeps its drivers."""
    import subprocess
    import sys

    code = (
        "from layers.uploads import harden_gdal, SERVER_DRIVERS; import pyogrio;"
        "left = harden_gdal(keep_only=SERVER_DRIVERS); print(sorted(pyogrio.list_drivers()))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "OGR_VRT" not in out and "'CSV'" not in out and "'GPKG'" in out


# --- sizes, expiry, quota, ownership -----------------------------------------------------------------------------


class DiskWatcher:
    """Samples the bytes under a folder while an upload runs; ``peak`` is the most seen at once."""

    def __init__(self, folder: Path):
        self.folder, self.peak, self._stop = folder, 0, threading.Event()

    def _size(self) -> int:
        total = 0
        for root, _, files in os.walk(self.folder):
            for f in files:
                with contextlib.suppress(OSError):
                    total += os.path.getsize(os.path.join(root, f))
        return total

    def __enter__(self):
        def run():
            while not self._stop.is_set():
                self.peak = max(self.peak, self._size())
                time.sleep(0.002)

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


class SlowStream(io.BytesIO):
    """An upload arriving over a network: the watcher sees every stage."""

    def read(self, size=-1):
        time.sleep(0.001)
        return super().read(size)


def bomb(expanded_mb: int) -> bytes:
    """A real zip bomb: one shapefile part of zeros, deflated about 1000 to 1."""
    buf = io.BytesIO()
    with (
        zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf,
        zf.open("parcels.shp", "w", force_zip64=True) as member,
    ):
        block = b"\0" * (1 << 20)
        for _ in range(expanded_mb):
            member.write(block)
    return buf.getvalue()


def test_zip_bomb_writes_nothing_past_the_archive(tmp_path):
    payload = bomb(200)
    assert len(payload) < 1 << 20  # under 1 MB on the wire
    root = tmp_path / "uploads"
    root.mkdir()
    with DiskWatcher(root) as watch, pytest.raises(LayerError, match="unpacks to more than 64 MB"):
        new_upload(root, "town.zip", SlowStream(payload), owner="pat", max_unzipped_bytes=64 << 20)
    assert watch.peak <= len(payload) + 4096, f"{watch.peak:,} bytes written for a {len(payload):,}-byte zip"
    assert list(root.iterdir()) == []


def test_zip_bomb_with_lying_headers_stops_at_the_limit(tmp_path):
    """Headers that claim a small size: Python's zip reader stops at the claimed size, and we count as we write."""
    payload = bytearray(bomb(40))
    # shrink the promised size in the local header and the central directory (zip64 extra: 8-byte sizes)
    real = (40 << 20).to_bytes(8, "little")
    small = (1 << 20).to_bytes(8, "little")
    payload = bytes(payload).replace(real, small)
    root = tmp_path / "uploads"
    root.mkdir()
    with DiskWatcher(root) as watch, pytest.raises(LayerError):
        new_upload(root, "town.zip", io.BytesIO(payload), owner="pat", max_unzipped_bytes=4 << 20)
    assert watch.peak <= len(payload) + (5 << 20)
    assert list(root.iterdir()) == []


def test_unused_uploads_expire_and_a_users_quota_holds(tmp_path):
    root = tmp_path / "uploads"
    gj = sample_town(60)["parcels"].to_crs(4326).to_json().encode()
    first = new_upload(root, "parcels.geojson", io.BytesIO(gj), owner="pat", max_unzipped_bytes=1 << 30)
    quota = len(gj) + 4096
    with pytest.raises(LayerError, match="Your uploads already take|left of your quota"):
        for _ in range(3):
            new_upload(
                root, "parcels.geojson", io.BytesIO(gj), owner="pat", max_unzipped_bytes=1 << 30, quota_bytes=quota
            )
    assert len(list(root.iterdir())) == 1  # the refused ones left nothing
    new_upload(root, "parcels.geojson", io.BytesIO(gj), owner="vera", max_unzipped_bytes=1 << 30, quota_bytes=quota)
    assert expire_uploads(root, ttl_hours=24) == []
    assert first.name in expire_uploads(root, ttl_hours=24, now=time.time() + 25 * 3600)
    assert list(root.iterdir()) == []


def test_an_upload_is_its_owners_workspace(app, tmp_path):
    from gisapp.users import add_user

    add_user(app.config["USERS_DB"], "pat", "planner", "planner-password")
    add_user(app.config["USERS_DB"], "alex", "planner", "planner-password")
    pat, alex = app.test_client(), app.test_client()
    for client, name in ((pat, "pat"), (alex, "alex")):
        client.post("/login", data={"name": name, "password": "planner-password", "csrf_token": csrf(client)})
    gj = sample_town(60)["parcels"].to_crs(4326).to_json().encode()
    sent = pat.post(
        "/data/upload",
        data={"dataset": (io.BytesIO(gj), "parcels.geojson"), "csrf_token": csrf(pat)},
        content_type="multipart/form-data",
    )
    location = sent.headers["Location"]
    assert pat.get(location).status_code == 200
    assert alex.get(location).status_code == 400  # another planner's workspace: "No such upload"
    token = location.split("/")[2]
    assert alex.post(f"/data/{token}/publish", data={"csrf_token": csrf(alex)}).status_code == 400


def test_the_default_gdal_would_have_read_the_secret(tmp_path, secret):
    """The payload is real: opened by GDAL's guesswork (a child process with every driver), it leaks the key."""
    import subprocess
    import sys

    path, key = secret
    target = tmp_path / "parcels.geojson"
    target.write_text(vrt(f"CSV:{path}", "secret_key"))
    code = f"import pyogrio; print(list(pyogrio.read_dataframe({str(target)!r}).columns))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout
    assert key in out


def _damaged_zip(kind: str) -> bytes:
    """A zipped parcels.geojson that cannot be unpacked: a bad CRC, a password, or an unknown compression."""
    body = sample_town(50)["parcels"].to_crs(4326).to_json().encode()
    raw = bytearray(zipped({"parcels.geojson": body}))
    if kind == "bad_crc":
        at = raw.index(b"PK\x03\x04") + 14  # the local header's CRC-32
        raw[at : at + 4] = b"\x00\x00\x00\x00"
        central = raw.index(b"PK\x01\x02") + 16  # and the central directory's, so only the data disagrees
        raw[central : central + 4] = b"\x00\x00\x00\x00"
    elif kind == "encrypted":
        raw[raw.index(b"PK\x03\x04") + 6] |= 1  # the general-purpose flag's "encrypted" bit
        raw[raw.index(b"PK\x01\x02") + 8] |= 1
    else:  # compression method 99 (AES), which Python's zipfile cannot read
        raw[raw.index(b"PK\x03\x04") + 8] = 99
        raw[raw.index(b"PK\x01\x02") + 10] = 99
    return bytes(raw)


@pytest.mark.parametrize(
    ("kind", "words"),
    [
        ("bad_crc", "the archive is damaged"),
        ("encrypted", "protected by a password"),
        ("method99", "compression method that cannot be read"),
    ],
)
def test_a_damaged_zip_is_refused_with_a_sentence_not_a_server_error(app, tmp_path, kind, words):
    from gisapp.users import add_user

    add_user(app.config["USERS_DB"], "pat", "planner", "planner-password")
    client = app.test_client()
    client.post("/login", data={"name": "pat", "password": "planner-password", "csrf_token": csrf(client)})
    answers = attempt(client, _damaged_zip(kind), "town.zip")
    assert answers[0].status_code == 400, answers[0].get_data(as_text=True)[:300]
    assert words in answers[0].get_data(as_text=True)
    with pytest.raises(LayerError, match="cannot be unpacked"):
        new_upload(
            tmp_path / "direct", "town.zip", io.BytesIO(_damaged_zip(kind)), owner="pat", max_unzipped_bytes=1 << 30
        )
    assert list((tmp_path / "direct").iterdir()) == []


def test_a_geoparquet_that_decodes_past_the_limit_is_refused_before_it_is_read(tmp_path):
    """Dictionary encoding lets a file of kilobytes hold a million rows: counted as what it decodes to."""
    import geopandas as gpd
    import pyarrow as pa
    import pyarrow.parquet as pq
    import shapely

    one = shapely.to_wkb(shapely.box(0, 0, 1, 1))
    n = 1_000_000
    table = pa.table(
        {
            "parcel_id": pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, dtype=np.int32)), pa.array(["P"])),
            "geometry": pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, dtype=np.int32)), pa.array([one])),
        }
    )
    meta = pa.table(gpd.GeoDataFrame(geometry=[shapely.box(0, 0, 1, 1)], crs="EPSG:2260").to_arrow()).schema.metadata
    path = tmp_path / "parcels.parquet"
    pq.write_table(table.replace_schema_metadata(meta), path, compression="zstd")
    assert path.stat().st_size < 100_000
    with pytest.raises(LayerError, match="decodes to more than 16 MB"), open(path, "rb") as sent:
        new_upload(tmp_path / "up", "parcels.parquet", sent, owner="pat", max_unzipped_bytes=16 << 20)
    assert list((tmp_path / "up").iterdir()) == []
    # The same file within the limit is taken.
    with open(path, "rb") as sent:
        assert new_upload(tmp_path / "up", "parcels.parquet", sent, owner="pat", max_unzipped_bytes=1 << 30)


def test_uploads_sent_at_once_cannot_together_pass_the_quota(tmp_path):
    """Each upload alone is within the quota, two together are not: one of two sent at the same moment is refused."""
    root = tmp_path / "uploads"
    gj = sample_town(60)["parcels"].to_crs(4326).to_json().encode()
    quota = int(len(gj) * 1.5)
    start, results = threading.Barrier(2), []

    def send():
        start.wait()
        try:
            new_upload(
                root, "parcels.geojson", SlowStream(gj), owner="pat", max_unzipped_bytes=1 << 30, quota_bytes=quota
            )
            results.append("taken")
        except LayerError as exc:
            results.append(str(exc))

    threads = [threading.Thread(target=send) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r == "taken" for r in results) == [False, True], results
    assert len(list(root.iterdir())) == 1


# -- the upload's record (meta.json) -------------------------------------------------------------------------------


def _upload(tmp_path) -> Path:
    gj = sample_town(60)["parcels"].to_crs(4326).to_json().encode()
    return new_upload(tmp_path / "uploads", "parcels.geojson", io.BytesIO(gj), owner="pat", max_unzipped_bytes=1 << 30)


def _at_once(*writers) -> list[str]:
    """Run ``writers`` on threads of their own, released together; the failures they raised (none when all went
    well: every writer's failure is reported)."""
    start, errors = threading.Barrier(len(writers)), []

    def run(writer) -> None:
        start.wait()
        try:
            writer()
        except Exception as exc:
            errors.append(repr(exc))

    threads = [threading.Thread(target=run, args=(w,)) for w in writers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def _hidden(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_two_requests_saving_an_uploads_settings_at_once_both_count(tmp_path):
    """Two writers of one upload's record (two tabs: the columns of one layer, the kind of another) each write under
    a name of their own, one after the other, neither refused: every change is kept and nothing else is left.
    The record was written through one fixed name, ``.meta.json.tmp``: one writer renamed the other's file or
    failed to find its own, and a change read before the other's write was lost."""
    from layers.uploads import read_meta, set_kinds, update_meta

    folder = _upload(tmp_path)

    def save(k: int) -> None:
        for n in range(40):
            if k % 2:
                set_kinds(folder, {f"layer{k}": f"kind{k}-{n}"})  # one kind per layer, as set_kinds keeps them
            else:
                update_meta(folder, {f"columns{k}": n})

    assert _at_once(*(lambda k=k: save(k) for k in range(4))) == []
    meta = read_meta(folder)
    assert meta["owner"] == "pat" and meta["name"] == "parcels.geojson"
    assert meta["kinds"] == {"layer1": "kind1-39", "layer3": "kind3-39"}
    assert (meta["columns0"], meta["columns2"]) == (39, 39)
    assert _hidden(folder) == []


def test_two_layers_are_never_recorded_as_one_kind(tmp_path):
    """A page gone stale in a second tab said pipes were the parcels, after lots had been: both were recorded as
    parcels, lots was read and the mains layer lost, without a word. Refused, changing nothing, as two layers given
    one kind in one form are."""
    from layers.errors import LayerError
    from layers.uploads import read_meta, set_kinds

    folder = _upload(tmp_path)
    set_kinds(folder, {"lots": "parcels", "pipes": "mains"})
    with pytest.raises(LayerError, match="Layers lots and pipes would both be the parcels layer"):
        set_kinds(folder, {"pipes": "parcels"})
    with pytest.raises(LayerError, match="Layers a and b would both be the parcels layer"):
        set_kinds(folder, {"a": "parcels", "b": "parcels", "lots": ""})
    assert read_meta(folder)["kinds"] == {"lots": "parcels", "pipes": "mains"}
    set_kinds(folder, {"lots": "", "pipes": "parcels"})  # said again in one form: pipes are the parcels now
    assert read_meta(folder)["kinds"] == {"pipes": "parcels"}


def test_two_requests_recording_the_columns_of_different_layers_at_once_keep_both(tmp_path):
    """The mapping page records each layer's columns in the upload's record (``columns[kind]``). Two requests for
    different layers at once each read the record, then wrote it with their own entry added: the one written last
    dropped the other's. Each entry is now added under the record's lock, the others kept, and nothing is left."""
    from layers.uploads import read_meta, update_meta, update_meta_entry

    folder = _upload(tmp_path)
    kinds = ("parcels", "mains", "streets", "buildings")

    def record(kind: str) -> None:
        for n in range(40):
            update_meta_entry(folder, "columns", kind, {"path": f"{kind}.shp", "names": [f"c{n}"]})

    def save_form() -> None:  # the form saved at the same time, another entry of the record
        for n in range(40):
            update_meta(folder, {"form": {"n": n}})

    assert _at_once(*(lambda k=k: record(k) for k in kinds), save_form) == []
    meta = read_meta(folder)
    assert meta["columns"] == {k: {"path": f"{k}.shp", "names": ["c39"]} for k in kinds}
    assert meta["form"] == {"n": 39} and meta["owner"] == "pat"
    assert _hidden(folder) == []
    with pytest.raises(ValueError, match="never replaced"):
        update_meta_entry(folder, "owner", "name", "mallory")


def test_an_uploads_record_is_written_whole_and_a_killed_writers_copy_cleared(tmp_path, monkeypatch):
    """A write of the record that fails half-way leaves the record as it was; the copies killed writers left (this
    release's hidden name, and the fixed ``.meta.json.tmp`` of the one before) are removed by the next writer."""
    from layers.uploads import read_meta, update_meta

    folder = _upload(tmp_path)
    update_meta(folder, {"profile": "fort-plain"})
    before = (folder / "meta.json").read_bytes()
    left = [".meta.json.tmp", f".meta.{'5e' * 16}.tmp.json"]
    for name in left:
        (folder / name).write_text('{"owner": "pat", "prof')
    written = Path.write_text

    def half(self, text, *args, **kwargs):
        written(self, text[: len(text) // 2], *args, **kwargs)
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as m:
        m.setattr(Path, "write_text", half)
        with pytest.raises(LayerError, match="meta.json: the disk is full"):
            update_meta(folder, {"profile": "wappinger"})
    assert (folder / "meta.json").read_bytes() == before
    assert _hidden(folder) == []  # the killed writers' copies went when the lock was taken; the failed one's too
    update_meta(folder, {"profile": "wappinger"})
    assert read_meta(folder)["profile"] == "wappinger" and _hidden(folder) == []


def test_an_uploaded_files_name_keeps_its_letters():
    """ "Tax Parcels Łódź.shp" was kept as "Tax_Parcels___d_.shp", and the Data page listed the layer so (a tester):
    letters of any alphabet stay; spaces and separators become "_" (so "Sewer Mains" is still found as sewer_mains)."""
    from pathlib import PurePosixPath

    from layers.uploads import _member_target

    assert str(_member_target(PurePosixPath("Tax Parcels Łódź.shp"))) == "Tax_Parcels_Łódź.shp"
    assert str(_member_target(PurePosixPath("Sewer Mains.dbf"))) == "Sewer_Mains.dbf"
    assert str(_member_target(PurePosixPath("a;b|c.geojson"))) == "a_b_c.geojson"
