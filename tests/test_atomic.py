"""Files written whole, one writer at a time: what a killed writer leaves is cleared by the next writer of that file,
and nothing else is (``layers.atomic``), for every kind of output."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import geopandas as gpd
import pyogrio
import pytest
from click.testing import CliRunner

from gisapp.cli import main
from layers.atomic import StoreBusyError, writer_lock, written_whole
from layers.dataset import unify_partitions, write_partition
from layers.errors import LayerError
from layers.sample import sample_town
from layers.store import latest_run, store_writer
from layers.write import write_geoparquet, write_layers

HEX = "5e" * 16  # what uuid4 gives: 32 hex digits


@pytest.fixture(scope="module")
def town_gpkg(tmp_path_factory):
    path = tmp_path_factory.mktemp("town") / "town.gpkg"
    write_layers(str(path), sample_town(400))
    return path


def analyze(store: Path, out: Path):
    return CliRunner().invoke(main, ["analyze", "--profile", "fort-plain", "--data", str(store), "--out", str(out)])


def hidden(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_kill_9_during_analyze_to_geoparquet_leaves_a_copy_the_next_run_removes(town_gpkg, tmp_path):
    """The real thing: `sewerplan analyze --out results.parquet` killed while its files are being written leaves
    hidden half-written files (one per layer); the next run to that output removes them."""
    out = tmp_path / "results.parquet"
    command = [sys.executable, "-m", "gisapp.cli", "analyze", "--profile", "fort-plain", "--data", str(town_gpkg)]

    def copies() -> list[str]:
        return [name for name in hidden(tmp_path) if ".tmp" in name]

    left: list[str] = []
    for _ in range(10):  # until a kill lands while a file is being written (a few ms each, at 400 parcels)
        proc = subprocess.Popen([*command, "--out", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        end = time.time() + 120
        while proc.poll() is None and not copies() and time.time() < end:
            time.sleep(0.001)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        left = copies()
        if left:
            break
    assert left, "no kill landed while a file was being written: the test proved nothing"
    done = subprocess.run([*command, "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert hidden(tmp_path) == []  # no copy, and no lock file either: only the results are left
    assert len(gpd.read_parquet(out)) == 400


def test_a_write_removes_only_its_own_files_killed_writers_left(town_gpkg, tmp_path):
    """Only our own hidden names for each file written, in its folder: never another file's copy, a user's file,
    a folder or a link."""
    stale = [
        f".results.{HEX}.tmp.parquet",  # results.parquet, cut off by kill -9
        f".results.measuring_lines.{HEX}.tmp.parquet",  # the layer beside it, written by the same run
        f".results.parquet.{HEX}.tmp",  # as releases before this one named it
    ]
    for name in stale:
        (tmp_path / name).write_bytes(b"PAR1 half a file")
    unrelated = [
        f".other.{HEX}.tmp.parquet",  # another output's copy
        f".results.v2.{HEX}.tmp.parquet",  # results.v2.parquet's
        ".results.notes.tmp.parquet",  # not a name we make
        f"results.{HEX}.tmp.parquet",
        f".results.parquet.{HEX}.tmp.bak",
        "results.parquet.bak",
        f"sub/.results.{HEX}.tmp.parquet",  # another folder
    ]
    for name in unrelated:
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_bytes(b"keep me")
    (tmp_path / f".results.{'d1' * 16}.tmp.parquet").mkdir()  # a folder of our pattern's name is not ours
    (tmp_path / "kept-target.txt").write_text("a user's file")
    os.symlink(tmp_path / "kept-target.txt", tmp_path / f".results.{'1f' * 16}.tmp.parquet")  # nor a link

    result = analyze(town_gpkg, tmp_path / "results.parquet")
    assert result.exit_code == 0, result.output
    assert not [name for name in stale if (tmp_path / name).exists()]
    assert all((tmp_path / name).read_bytes() == b"keep me" for name in unrelated)
    assert (tmp_path / f".results.{'d1' * 16}.tmp.parquet").is_dir()
    assert (tmp_path / f".results.{'1f' * 16}.tmp.parquet").is_symlink()
    assert (tmp_path / "kept-target.txt").read_text() == "a user's file"
    assert len(gpd.read_parquet(tmp_path / "results.parquet")) == 400


HOLDER = (
    "import sys, time; from pathlib import Path; from layers.atomic import writer_lock; "
    "w = writer_lock(sys.argv[1], who='the other planner', what='an analysis run', place='results.parquet'); "
    "Path(sys.argv[2]).write_bytes(b'being written'); print('writing', flush=True); time.sleep(120)"
)


def test_the_file_a_running_writer_is_making_is_never_removed(tmp_path):
    """Only the writer that holds a file's lock clears its copies: a second writer at the same moment is refused
    and touches nothing; once the first is killed, the next one clears what it left, lock file and all."""
    out = tmp_path / "results.parquet"
    in_progress = tmp_path / f".results.{HEX}.tmp.parquet"
    frame = sample_town(50)["parcels"]
    busy = r"An analysis run is in progress on results\.parquet \(started by the other planner at "
    command = [sys.executable, "-c", HOLDER, str(out), str(in_progress)]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as other:
        try:
            assert other.stdout.readline() == "writing\n"
            with pytest.raises(StoreBusyError, match=busy):
                write_geoparquet(out, frame)
            assert in_progress.read_bytes() == b"being written" and not out.exists()
        finally:
            other.kill()  # SIGKILL: the OS drops its lock; its lock file and its copy stay behind
            other.wait()
    assert hidden(tmp_path) == sorted([".results.parquet.lock", in_progress.name])
    write_geoparquet(out, frame)
    assert hidden(tmp_path) == [] and len(gpd.read_parquet(out)) == len(frame)


def test_a_full_disk_when_taking_the_lock_names_the_store_and_keeps_no_lock(tmp_path, monkeypatch):
    """Taking a store's writer lock writes who holds it into the lock file. On a full disk that write failed with
    an OSError naming no file ("Cannot write: the disk is full", from `notices issue --new` recording its new
    register in a store on a full disk), and the lock stayed taken: a web server that met it refused every later
    run and settings change of the store as "in progress" until it was restarted. Now the refusal names the store
    and the lock is let go."""
    import errno

    from layers.atomic import disk_refusal

    store = tmp_path / "town.gpkg"
    written = os.write

    def full(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as m:
        m.setattr(os, "write", full)
        with pytest.raises(OSError) as caught:
            store_writer(store, who="pat")
    assert disk_refusal(caught.value).startswith(f"Cannot write {store}: the disk is full")
    assert os.write is written
    with store_writer(store, who="pat"):  # not held by the failed attempt
        pass


def test_a_file_lock_is_its_own_and_gone_when_released(tmp_path):
    """Two files side by side have their own locks; a released lock leaves no file (a GeoPackage's, the store's
    lock file shared with every version, stays)."""
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    with writer_lock(a):
        with writer_lock(b):
            assert sorted(p.name for p in tmp_path.iterdir()) == [".a.parquet.lock", ".b.parquet.lock"]
        with pytest.raises(StoreBusyError):
            writer_lock(a)
    assert list(tmp_path.iterdir()) == []
    with writer_lock(a):
        pass
    with store_writer(tmp_path / "town.gpkg", who="me"):
        pass
    assert [p.name for p in tmp_path.iterdir()] == ["town.gpkg.lock"]


def test_export_qgis_removes_what_a_killed_export_left(town_gpkg, tmp_path):
    store = tmp_path / "town.gpkg"
    store.write_bytes(town_gpkg.read_bytes())
    assert analyze(store, store).exit_code == 0
    stale = [f".town.{HEX}.tmp.qgz", ".town.qgz.tmp"]  # this release's name, and the one before
    for name in stale:
        (tmp_path / name).write_bytes(b"PK half an archive")
    (tmp_path / ".town.qgs.tmp").write_bytes(b"keep me")  # the other format's: not this output's
    result = CliRunner().invoke(main, ["export-qgis", "--store", str(store), "--out", str(tmp_path / "town.qgz")])
    assert result.exit_code == 0, result.output
    assert hidden(tmp_path) == [".town.qgs.tmp"]
    assert (tmp_path / "town.qgz").stat().st_size > 0 and latest_run(store) is not None


def test_a_batch_partition_rewritten_clears_a_killed_writers_part_and_leaves_readers_nothing_else(tmp_path):
    """A batch's dataset is read whole by Parquet readers: only the parts are left in it, never a lock file."""
    frame = sample_town(50)["parcels"]
    write_partition(tmp_path, "Fort_Plain", frame)
    write_partition(tmp_path, "Wappinger", frame.drop(columns=["owner_name"]))
    folder = tmp_path / "municipality=Fort_Plain"
    (folder / f".part.{HEX}.tmp.parquet").write_bytes(b"PAR1 half")
    (folder / ".part.parquet.tmp").write_bytes(b"PAR1 half")  # a schema unification cut off, releases ago
    write_partition(tmp_path, "Fort_Plain", frame)
    assert unify_partitions(tmp_path, ["Fort_Plain", "Wappinger"]) == 1
    assert hidden(folder) == [] and hidden(tmp_path / "municipality=Wappinger") == []
    assert len(gpd.read_parquet(tmp_path)) == 2 * len(frame)


def test_a_batch_record_is_written_whole(tmp_path):
    from layers.dataset import read_record, record_path, write_record

    write_record(tmp_path, {"partition": "Fort_Plain", "status": "ok"})
    (record_path(tmp_path, "Fort_Plain").parent / f".Fort_Plain.{HEX}.tmp.json").write_text("{")
    write_record(tmp_path, {"partition": "Fort_Plain", "status": "failed"})
    assert read_record(tmp_path, "Fort_Plain")["status"] == "failed"
    assert hidden(record_path(tmp_path, "Fort_Plain").parent) == []
    assert json.loads(record_path(tmp_path, "Fort_Plain").read_text())["partition"] == "Fort_Plain"


GEOPACKAGE_OUTPUTS = {
    "buildings": ["buildings", "--profile", "fort-plain"],
    "duties": ["duties", "--profile", "fort-plain"],
    "network check": ["network", "check", "--profile", "fort-plain"],
    "plan": ["plan", "--profile", "fort-plain", "--streets-run", "Main St", "--diameter-in", "8"],
}


@pytest.mark.parametrize("command", GEOPACKAGE_OUTPUTS)
def test_every_command_writes_its_geopackage_under_the_stores_writer_lock(command, town_gpkg, tmp_path):
    """A GeoPackage given as an output may be a store (the web app's, another run's): no command writes one while
    another writer holds its lock, and each, holding it, clears the copies killed writers left beside it."""
    out = tmp_path / "out.gpkg"
    args = [*GEOPACKAGE_OUTPUTS[command], "--data", str(town_gpkg), "--out", str(out)]
    with store_writer(out, who="another planner"):
        refused = CliRunner().invoke(main, args)
        assert refused.exit_code == 2, refused.output
        assert "in progress on this store (started by another planner" in " ".join(refused.output.split())
        assert not out.exists()
    stale = tmp_path / f".out.{HEX}.tmp.gpkg"
    stale.write_bytes(b"half a GeoPackage")
    done = CliRunner().invoke(main, args)
    assert done.exit_code == 0, done.output
    assert not stale.exists() and gpd.list_layers(out).shape[0] > 0


def test_a_failed_municipality_leaves_no_folder_of_hidden_files_in_the_dataset(tmp_path):
    """A worker killed while writing its part (out of memory) left a hidden half file: the batch takes the failed
    municipality out of the dataset, folder and all, and a reader of the dataset meets only the others."""
    from layers.dataset import partition_path, remove_results

    frame = sample_town(50)["parcels"]
    write_partition(tmp_path, "Wappinger", frame)
    part = partition_path(tmp_path, "Fort_Plain")
    part.parent.mkdir()
    (part.parent / f".part.{HEX}.tmp.parquet").write_bytes(b"PAR1 half")
    remove_results(tmp_path, "Fort_Plain")
    assert not part.parent.exists()
    assert len(gpd.read_parquet(tmp_path)) == len(frame)


@pytest.mark.parametrize("disk", ["with hard links", "without hard links (FAT, exFAT)"])
def test_a_register_backup_clears_what_a_killed_backup_left_and_never_overwrites(tmp_path, monkeypatch, disk):
    import errno

    from layers.register import Register

    if disk.startswith("without"):  # a backup to a USB stick was refused: "you may not write there"

        def refused(src, dst, **kwargs):
            raise OSError(errno.EPERM, "Operation not permitted", str(src), None, str(dst))

        monkeypatch.setattr(os, "link", refused)

    reg = Register(str(tmp_path / "register.sqlite"), create=True)
    left = [f".copy.{HEX}.tmp.sqlite", f".copy.{HEX}.tmp.sqlite-journal", ".copy.sqlite.partial-4242"]
    for name in left:  # a backup killed while copying, in this release and the one before
        (tmp_path / name).write_bytes(b"SQLite format 3\x00 half")
    (tmp_path / ".register.sqlite.partial-4242").write_bytes(b"keep me")  # not this backup's
    done = reg.backup(tmp_path / "copy.sqlite")
    assert done["integrity"] == "ok" and Register(str(tmp_path / "copy.sqlite"), create=False).integrity_ok()
    assert hidden(tmp_path) == [".register.sqlite.partial-4242"]
    with pytest.raises(LayerError, match="already exists"):
        reg.backup(tmp_path / "copy.sqlite")
    assert hidden(tmp_path) == [".register.sqlite.partial-4242"]


# -- whole-file outputs that fail half-way --------------------------------------------------------------------------

HALF = b"the first rows, then the disk was full"


def _parcels() -> gpd.GeoDataFrame:
    return sample_town(60)["parcels"].assign(status="mandated")


def _results(path: Path) -> None:
    from layers.write import write_results

    write_results(str(path), _parcels())


def _report(path: Path) -> None:
    from layers.write import write_report

    parcels = _parcels()
    write_report(str(path), parcels.set_geometry(parcels.centroid)[["parcel_id", "geometry"]])


def _mailing_list(path: Path) -> None:
    from layers.letters import write_mailing_list
    from tests.test_letters import _label_rows

    write_mailing_list(path, _label_rows())


def _labels(path: Path) -> None:
    from layers.letters import write_labels
    from tests.test_letters import _label_rows

    write_labels(path, _label_rows())


def _letter(path: Path) -> None:
    from layers.letters import write_letter
    from tests.test_letters import _composed, town_settings

    letter, maps, _ = _composed("fort-plain", town_settings(path.parent.parent))
    write_letter(path, letter, maps=maps)


def _comparison(path: Path) -> None:
    from layers.board import write_comparison_csv

    write_comparison_csv(path, ["Oak St", "=Elm St"], [{"label": "cost", "values": [1200.5, None]}])


def _board(path: Path) -> None:
    from layers.board import write_plan_summary
    from tests.test_plans import FP, layout, run

    town = layout()
    result = run(town=town)
    doc = result.as_dict() | {"name": "Oak St", "profile": FP.id, "profile_version": FP.version}
    write_plan_summary(path, "Oak St", doc, profile=FP, line=result.line, parcels=town["parcels"])


def _map_sheet(path: Path) -> None:
    from layers.mapsheet import SheetLayers, SheetText, write_map_sheet

    parcels = _parcels()
    bbox = tuple(parcels.to_crs(4326).total_bounds)
    write_map_sheet(path, SheetLayers(parcels=parcels), bbox_lonlat=bbox, text=SheetText(title="Board packet"))


def _batch_summary(path: Path) -> None:
    from layers.dataset import write_summary

    write_summary(path.parent, [{"municipality": "Fort_Plain", "status": "ok"}], {"started": "2027-03-01"})


WHOLE_FILE_OUTPUTS = {
    "results.csv": _results,
    "results.geojson": _results,
    "report.geojson": _report,
    "mailing-list.csv": _mailing_list,
    "labels.pdf": _labels,
    "0001.pdf": _letter,
    "comparison.csv": _comparison,
    "board.pdf": _board,
    "sheet.pdf": _map_sheet,
    "_summary.csv": _batch_summary,
}


def fill_disk_half_way(monkeypatch) -> list[str]:
    """Every writer underneath sewerplan's (pandas' CSV, GDAL's GeoJSON, reportlab's PDF, the csv module) writes a
    few bytes into the file it was given, then fails as a full disk does; returns the files they were given."""
    import csv
    import errno

    import pandas as pd
    import pyogrio
    from reportlab.pdfgen.canvas import Canvas

    given: list[str] = []

    def half(path) -> None:
        given.append(str(path))
        Path(path).write_bytes(HALF)
        raise OSError(errno.ENOSPC, "No space left on device")

    header = csv.DictWriter.writeheader

    def header_then_full(self):
        header(self)
        given.append("a csv.DictWriter's file")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_csv", lambda self, path, *a, **k: half(path))
    monkeypatch.setattr(pyogrio, "write_dataframe", lambda frame, path, *a, **k: half(path))
    monkeypatch.setattr(Canvas, "save", lambda self: half(self._filename))
    monkeypatch.setattr(csv.DictWriter, "writeheader", header_then_full)
    return given


@pytest.fixture
def disk_fills_half_way(monkeypatch) -> list[str]:
    return fill_disk_half_way(monkeypatch)


@pytest.mark.parametrize("before", [b"the file an earlier run wrote", None], ids=["replacing", "new"])
@pytest.mark.parametrize("name", WHOLE_FILE_OUTPUTS)
def test_a_whole_file_output_that_fails_half_way_leaves_the_earlier_file_or_none(
    name, before, tmp_path, disk_fills_half_way
):
    """A CSV, a GeoJSON file or a PDF whose write stops halfway (a full disk here; kill -9 alike) never leaves a
    partial file under its name that looks whole: the file written before is as it was, or there is none, and no
    hidden copy or lock file is left beside it."""
    target = tmp_path / "out" / name
    target.parent.mkdir()
    if before is not None:
        target.write_bytes(before)
    with pytest.raises((OSError, LayerError), match="No space left on device"):
        WHOLE_FILE_OUTPUTS[name](target)
    assert disk_fills_half_way, "the write never reached the disk: the test proved nothing"
    assert str(target) not in disk_fills_half_way  # written under another name, renamed into place when whole
    if before is None:
        assert not target.exists()
    else:
        assert target.read_bytes() == before
    assert hidden(target.parent) == []


def _plan(path: Path) -> None:
    from shapely.geometry import LineString

    from layers.write import write_plan

    parcels = _parcels()
    x0, y0, x1, _ = parcels.total_bounds
    manholes = [{"id": "MH-1", "x": x0, "y": y0, "existing": False}]
    plan = {"name": "Oak", "diameter_in": 8, "length_ft": x1 - x0, "manholes": manholes, "newly_mandated": []}
    plan["parcels"] = []
    write_plan(str(path), plan, LineString([(x0, y0), (x1, y0)]), parcels, crs=parcels.crs)


def _downloaded(path: Path) -> None:
    from tests.conftest import make_app

    store = path.parent / "town.gpkg"
    write_layers(str(store), sample_town(50))
    done = CliRunner().invoke(main, ["analyze", "--profile", "fort-plain", "--data", store, "--out", store])
    assert done.exit_code == 0, done.output
    (path.parent / "run").mkdir()
    got = make_app(store, path.parent / "run").test_client().get("/api/results.geojson")
    assert got.status_code == 200
    path.write_bytes(got.data)


@pytest.mark.parametrize(
    ("name", "layer", "writer"),
    [
        ("results.geojson", "results", _results),
        ("report.geojson", "report", _report),
        ("hancock.geojson", "hancock", _plan),
        ("sewerplan-results.geojson", "sewerplan-results", _downloaded),
    ],
)
def test_a_geojson_output_names_its_layer_after_its_own_file_not_the_hidden_copy(name, layer, writer, tmp_path):
    """`analyze --out results.geojson` wrote `"name": ".results.<32 hex>.tmp"`, the hidden name it was written
    under: QGIS showed that as the layer's name, and `--data results.geojson` said the file held it."""
    target = tmp_path / "out" / name
    target.parent.mkdir()
    writer(target)
    assert [str(n) for n in pyogrio.list_layers(target)[:, 0]] == [layer]
    assert json.loads(target.read_text())["name"] == layer


def test_analyze_to_a_csv_that_fails_half_way_keeps_the_earlier_results(town_gpkg, tmp_path, monkeypatch):
    """As a user meets it: `sewerplan analyze --out results.csv` stopped by a full disk leaves yesterday's results
    whole (and a run that completes replaces them)."""
    out = tmp_path / "results.csv"
    assert analyze(town_gpkg, out).exit_code == 0
    earlier = out.read_bytes()
    assert earlier.count(b"\r\n") == 401  # the header and 400 parcels
    with monkeypatch.context() as m:
        given = fill_disk_half_way(m)
        failed = analyze(town_gpkg, out)
    assert failed.exit_code == 2 and given
    # One sentence naming the file the user gave (not its hidden name) and what to do, never a traceback.
    said = " ".join(failed.output.split())
    assert f"Error: Cannot write {out}: the disk is full (No space left on device); free some space on it" in said
    assert "Traceback" not in failed.output and ".tmp.csv" not in said
    assert out.read_bytes() == earlier
    assert hidden(tmp_path) == []


def test_only_a_disks_refusal_of_the_file_itself_is_worded(tmp_path):
    """A full disk or a folder the user may not write to is told in one sentence with what to do; the same error
    about another file (a writer reading one it may not read), or any other error, is raised as it is."""
    import errno

    target = tmp_path / "out.csv"
    told = r"Cannot write .*out\.csv: you may not write there \(Permission denied\)"
    with pytest.raises(LayerError, match=told), written_whole(target) as where:
        raise PermissionError(errno.EACCES, "Permission denied", str(where))
    with pytest.raises(PermissionError), written_whole(target):
        raise PermissionError(errno.EACCES, "Permission denied", str(tmp_path / "parcels.csv"))
    with pytest.raises(FileNotFoundError), written_whole(target):
        raise FileNotFoundError(errno.ENOENT, "No such file or directory")
    assert hidden(tmp_path) == [] and not target.exists()


def test_a_folder_the_user_may_not_make_is_told_not_traced(town_gpkg, tmp_path, monkeypatch):
    """`sewerplan analyze --out /sys/x/results.csv`: the folder could not be made, and the command ended in a
    PermissionError traceback; it says which folder and what to do, and exits 2."""
    import errno

    def refused(self, *args, **kwargs):
        raise PermissionError(errno.EPERM, "Operation not permitted", str(self))

    monkeypatch.setattr(Path, "mkdir", refused)
    failed = analyze(town_gpkg, tmp_path / "x" / "results.csv")
    said = " ".join(failed.output.split())
    assert failed.exit_code == 2 and "Traceback" not in failed.output, failed.output
    assert f"Cannot write {tmp_path / 'x'}: you may not write there (Operation not permitted); write the" in said


@pytest.mark.parametrize("suffix", [".gpkg", ".csv"])
def test_an_output_under_a_file_or_a_folder_that_takes_no_files_is_told_not_traced(town_gpkg, tmp_path, suffix):
    """`analyze --out town.csvt/x.gpkg` (a file where the folder should be) and `--out /proc/x.gpkg` ended in a
    FileExistsError or FileNotFoundError traceback from the writer lock (a tester)."""
    (tmp_path / "town.csvt").write_text("String\n", encoding="utf-8")
    failed = analyze(town_gpkg, tmp_path / "town.csvt" / f"x{suffix}")
    said = " ".join(failed.output.split())
    assert failed.exit_code == 2 and "Traceback" not in failed.output, failed.output
    assert f"{tmp_path / 'town.csvt'} is a file, not a folder; give an output in a folder." in said
    assert (tmp_path / "town.csvt").read_text(encoding="utf-8") == "String\n"
    if Path("/proc/self").is_dir():  # Linux: /proc takes no new files
        failed = analyze(town_gpkg, Path("/proc") / f"x{suffix}")
        said = " ".join(failed.output.split())
        assert failed.exit_code == 2 and "Traceback" not in failed.output, failed.output
        assert f"Cannot write /proc/x{suffix}: its folder /proc takes no new files" in said


def _published_once(tmp_path):
    """A town's store with an upload published over it once ("the March upload"): the store, the upload, the
    opened store and the name of the earlier version the publication kept."""
    from layers.store import open_store

    store = tmp_path / "town.gpkg"
    write_layers(str(store), sample_town(60))
    upload = tmp_path / "upload.gpkg"
    write_layers(str(upload), sample_town(60, seed=7))
    town = open_store(store)
    return store, upload, town, town.publish(upload, who="pat", label="the March upload")


def test_a_previous_stores_record_that_fails_half_way_leaves_the_earlier_ones_whole(tmp_path, monkeypatch):
    """Publishing keeps the store it replaces in previous-stores/ with a small record beside it (its label, when,
    who). That record was written straight to its name: a full disk left half of it, which the list of earlier
    stores read as no label at all. Now it appears whole or not at all; the copy it describes goes with it, the
    publication is refused in one sentence, and the earlier copies and their records are as they were."""
    import errno

    store, upload, town, first = _published_once(tmp_path)
    folder = tmp_path / "previous-stores"
    records = {p.name: p.read_bytes() for p in folder.iterdir()}
    published = store.read_bytes()
    written = Path.write_text

    def half(self, text, *args, **kwargs):
        written(self, text[: len(text) // 2], *args, **kwargs)
        raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as m:
        m.setattr(Path, "write_text", half)
        with pytest.raises(LayerError, match=r"\.json: the disk is full"):
            town.publish(upload, who="pat", label="the April upload")
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == records  # nothing half, nothing hidden, no copy
    assert [(p["name"], p["label"]) for p in town.previous()] == [(first, "before the March upload")]
    assert store.read_bytes() == published


def test_a_previous_store_copied_half_way_is_never_listed_as_an_earlier_version(tmp_path, monkeypatch):
    """The copy of the store a publication replaces was written straight to its name in previous-stores/: a copy
    stopped halfway (a full disk, a kill) was listed among the earlier versions, ready to be restored. It is now
    written under a hidden name and renamed when whole; a hidden copy a killed writer left is not listed, and the
    next publication clears it."""
    import layers.store as store_module

    _, upload, town, first = _published_once(tmp_path)
    folder = tmp_path / "previous-stores"
    copied = store_module._copy_sqlite

    def half(source, target):
        Path(target).write_bytes(HALF)
        raise OSError("disk I/O error")

    with monkeypatch.context() as m:
        m.setattr(store_module, "_copy_sqlite", half)
        with pytest.raises(OSError):
            town.publish(upload, who="pat", label="the April upload")
    assert [p["name"] for p in town.previous()] == [first]
    assert sorted(p.name for p in folder.iterdir()) == sorted([first, first.replace(".gpkg", ".json")])
    killed = folder / f".20990101-000000-000000.{'0' * 32}.tmp.gpkg"  # as a writer killed while copying leaves it
    killed.write_bytes(HALF)
    assert [p["name"] for p in town.previous()] == [first]
    monkeypatch.setattr(store_module, "_copy_sqlite", copied)
    second = town.publish(upload, who="pat", label="the May upload")
    assert [p["name"] for p in town.previous()] == [second, first] and not killed.exists()


# A publication or restore killed (kill -9, a power cut) at one step, in a child process: the step is replaced by
# os._exit, so nothing after it runs, not even a finally.
KILLED = """
import os, sys
import layers.store as s
store, what, step, arg = sys.argv[1:5]
if step == "record":  # the copy of the replaced store is whole, its record not yet written
    whole = s.written_whole
    s.written_whole = lambda target, **kw: os._exit(9) if str(target).endswith(".json") else whole(target, **kw)
else:  # "replace": the copy and its record are written, the store not yet replaced
    s._replace = lambda tmp, path, attempts=20: os._exit(9)
town = s.open_store(store)
if what == "publish":
    town.publish(arg, who="pat", label="the April upload", keep=2)
else:
    town.restore(arg, who="pat", keep=2)
"""


@pytest.mark.parametrize(("what", "step"), [("publish", "record"), ("publish", "replace"), ("restore", "replace")])
def test_a_publication_killed_before_it_replaced_the_store_keeps_no_copy_of_it_as_an_earlier_version(
    tmp_path, what, step
):
    """A publication (or restore) copies the store it replaces into previous-stores/, writes the copy's record,
    then replaces the store. Killed before the store was replaced, it left a copy of the store as it still is,
    listed as an earlier version; the next publication made a second one, and the two pushed the oldest real
    version out (the newest KEEP_PREVIOUS_STORES are kept). What it left is now not listed, and the next
    publication clears it before keeping its own copy."""
    store, upload, town, first = _published_once(tmp_path)
    folder = tmp_path / "previous-stores"
    before = sorted(p.name for p in folder.iterdir())
    published = store.read_bytes()
    arg = str(upload) if what == "publish" else first
    died = subprocess.run([sys.executable, "-c", KILLED, str(store), what, step, arg], capture_output=True, text=True)
    assert died.returncode == 9, died.stderr
    assert store.read_bytes() == published  # killed before the replace: the store is as it was
    assert sorted(p.name for p in folder.iterdir()) != before  # it left a copy (and a record) behind
    assert [p["name"] for p in town.previous()] == [first]  # ... which is no earlier version
    second = town.publish(upload, who="pat", label="the May upload", keep=2)
    assert [(p["name"], p["label"]) for p in town.previous()] == [
        (second, "before the May upload"),
        (first, "before the March upload"),
    ]
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        f"{n}.{x}" for n in (second[:-5], first[:-5]) for x in ("gpkg", "json")
    )


def test_a_copy_in_previous_stores_without_its_record_is_listed_only_if_put_there_by_hand(tmp_path):
    """A copy named as a publication names it (when it was kept) with no record beside it was left by a publication
    killed before it wrote the record, or by a pruning killed after it deleted it: not listed, and deleted by the
    next publication. A GeoPackage of another name, put there by hand, is listed as it always was, and kept."""
    store, upload, town, first = _published_once(tmp_path)
    folder = tmp_path / "previous-stores"
    orphan = folder / "20990101-000000-000000.gpkg"
    orphan.write_bytes((folder / first).read_bytes())
    by_hand = folder / "before-the-flood.gpkg"
    by_hand.write_bytes((folder / first).read_bytes())
    assert sorted(p["name"] for p in town.previous()) == sorted([first, by_hand.name])
    second = town.publish(upload, who="pat", label="the May upload")
    assert not orphan.exists() and by_hand.exists()
    assert [p["name"] for p in town.previous()][0] == second and {first, by_hand.name} <= {
        p["name"] for p in town.previous()
    }


def test_a_publication_is_on_disk_when_it_is_reported_done(tmp_path, monkeypatch):
    """A store is replaced by renaming its new copy over it. The rename lives in the folder's list of names, which
    the system writes to disk when it pleases: a power cut after "published" could bring back the store as it was,
    with the previous-stores folder saying it was replaced. The folder is now flushed after the rename, as the
    notice register's backup and the letters' folders already were."""
    from layers.store import open_store

    store = tmp_path / "town.gpkg"
    write_layers(str(store), sample_town(60))
    upload = tmp_path / "upload.gpkg"
    write_layers(str(upload), sample_town(60, seed=7))
    town = open_store(store)
    events = []
    replace, fsync = os.replace, os.fsync

    def recorded_replace(src, dst, *args, **kwargs):
        replace(src, dst, *args, **kwargs)
        events.append(("renamed to", Path(dst)))

    def recorded_fsync(fd):
        fsync(fd)
        events.append(("flushed", Path(os.readlink(f"/proc/self/fd/{fd}"))))

    monkeypatch.setattr(os, "replace", recorded_replace)
    monkeypatch.setattr(os, "fsync", recorded_fsync)
    town.publish(upload, who="pat", label="the March upload")
    renamed = events.index(("renamed to", store))
    assert ("flushed", tmp_path) in events[renamed + 1 :], events
