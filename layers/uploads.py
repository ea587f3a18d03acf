"""Uploaded datasets: saved within limits, checked by content, opened only by the driver their extension names.

Every file a user gives us is hostile until its driver and content are checked (GDAL's own security advice):

- **Kinds.** An upload is a zip, a GeoPackage, a GeoJSON file, a FlatGeobuf or a GeoParquet file. Inside a zip
  only the files of those formats are kept, with a shapefile's parts (``.shp .shx .dbf .prj .cpg``) and the
  files of a File Geodatabase folder (``*.gdb/``); nothing else is unpacked (no VRT, no GDAL pipeline, no readme).
- **Content.** Each kept file must start with its format's signature (``UPLOAD_DRIVERS`` and ``_SIGNATURES``): a
  ``parcels.geojson`` holding an OGR VRT document is refused by its first byte, whatever its name.
- **Opening.** ``read.read_upload_source`` opens a checked file with its one driver: ``GPKG:`` and ``GeoJSON:``
  prefixes make GDAL try no other driver; a shapefile, FlatGeobuf or geodatabase is opened only after its binary
  signature, which no text-sniffing driver (VRT, GDALG, GML, CSV) can claim. GeoParquet is read by pyarrow, not
  GDAL. A path with ``/vsi`` or ``:`` in it, a link, or a path outside the upload's folder is refused.
- **GDAL in the server process** (``harden_gdal``): the drivers that read other files or the network are
  deregistered and GDAL's HTTP is pointed at nothing, so even a GeoJSON ``crs`` link cannot make it fetch a URL.
- **Size.** The bytes actually decompressed are counted while unpacking, and a block that would pass the limit
  (``MAX_UNZIPPED_BYTES`` or what is left of the user's quota, whichever is less) is never written; a zip whose
  headers already promise more is refused before anything is unpacked. A refused upload's folder is deleted at
  once; an unused one is deleted after ``UPLOAD_TTL_HOURS``; one user's uploads together stay under a quota.
- **Ownership.** An upload is its uploader's workspace (``meta.json`` names the owner) until a planner publishes
  it as the town's store (layers/store.py).

Uploads live under ``instance/uploads/<random token>/``, never in the served static folder.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import time
import zipfile
import zlib
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

from layers.atomic import StoreBusyError, StoreWriter, writer_lock, written_whole
from layers.errors import LayerError

# The drivers an upload may be opened with, by extension (the allow-list). CSV is not accepted: a town's layers
# come as one of these, and CSV with geometry text adds a parser for no user.
UPLOAD_DRIVERS = {
    ".gpkg": "GPKG",
    ".shp": "ESRI Shapefile",
    ".geojson": "GeoJSON",
    ".json": "GeoJSON",
    ".fgb": "FlatGeobuf",
    ".gdb": "OpenFileGDB",
    ".parquet": "GeoParquet",
}
UPLOAD_SUFFIXES = (".zip", ".gpkg", ".geojson", ".json", ".fgb", ".parquet")
SHAPEFILE_PARTS = {".shx", ".dbf", ".prj", ".cpg"}
_GDB_FILE = re.compile(r"^(a[0-9a-f]{8}\.(gdbtable|gdbtablx|gdbindexes|atx|spx|freelist|horizon|cdf)|gdb|timestamps)$")
_DBF_VERSIONS = {0x02, 0x03, 0x04, 0x05, 0x30, 0x31, 0x32, 0x43, 0x63, 0x83, 0x8B, 0xCB, 0xE5, 0xF5, 0xFB}
# Drivers that read other files, run programs or reach the network: never registered in the server process.
UNSAFE_DRIVERS = (
    "OGR_VRT",
    "GDALG",
    "GPSBabel",
    "HTTP",
    "WFS",
    "OAPIF",
    "OGCAPI",
    "CSW",
    "Carto",
    "AmigoCloud",
    "Elasticsearch",
    "NGW",
    "PLSCENES",
    "EEDA",
    "AIVector",
    "ADBC",
    "LIBKML",
    "GML",
    "MVT",
    "PMTiles",
    "SQLite",
)
# What `sewerplan serve` keeps registered: the upload formats, and MEM for in-memory work.
SERVER_DRIVERS = ("GPKG", "ESRI Shapefile", "GeoJSON", "OpenFileGDB", "FlatGeobuf", "MEM")
TOKEN = re.compile(r"^[A-Za-z0-9_-]{16,64}$")
CHUNK = 1 << 20
META = "meta.json"
STORE = "store.gpkg"  # the upload's checked layers, and its runs' results (the workspace's store)
PUBLISHED = "published"  # meta.json key: the name an upload was published under (``retire_published``)
# The record's key for the measuring CRS an upload's checked store was written in, when not the town's (data outside
# New York, given on its column-mapping page): its runs are measured in it until a run records its own.
MEASURING_CRS = "measuring_crs"


# --- GDAL in the server process ---------------------------------------------------------------------------------


def harden_gdal(*, keep_only: tuple[str, ...] | None = None) -> list[str]:
    """Deregister GDAL's unsafe drivers and turn its network access off, for this whole process.

    ``keep_only`` (``sewerplan serve``) deregisters every driver but those named instead. The network is cut at
    GDAL's HTTP layer (an unusable proxy, no /vsicurl/ file allowed), so a ``crs`` link in a GeoJSON or a
    ``/vsicurl/`` path is refused without a request. Returns the drivers still registered.
    """
    import pyogrio
    from pyogrio import _ogr

    registered = set(pyogrio.list_drivers())
    drop = sorted(registered - set(keep_only)) if keep_only is not None else [d for d in UNSAFE_DRIVERS]
    pyogrio.set_gdal_config_options(
        {
            "GDAL_SKIP": ",".join(drop),  # comma-separated: some names have spaces ("MapInfo File")
            "GDAL_HTTP_PROXY": "http://0.0.0.0:0",  # every GDAL HTTP request fails before connecting
            "CPL_VSIL_CURL_ALLOWED_FILENAME": "/nonexistent/sewerplan-allows-no-network-file",
            "GDAL_HTTP_TIMEOUT": "1",
            "GDAL_HTTP_MAX_RETRY": "0",
            "CPL_VSIL_CURL_USE_HEAD": "NO",
        }
    )
    _ogr._register_drivers()  # GDALAllRegister again: it drops the drivers named in GDAL_SKIP
    try:
        import pyproj

        pyproj.network.set_network_enabled(False)
    except (ImportError, AttributeError):  # pragma: no cover - pyproj always has it
        pass
    left = set(pyogrio.list_drivers())
    still = left & set(drop)
    if still:
        raise RuntimeError(f"GDAL drivers {', '.join(sorted(still))} could not be turned off in this process.")
    return sorted(left)


# --- saving an upload -------------------------------------------------------------------------------------------


def new_upload(
    root: str | Path,
    filename: str,
    stream,
    *,
    owner: str,
    max_unzipped_bytes: int,
    quota_bytes: int | None = None,
    max_members: int = 500,
) -> Path:
    """Save and unpack one upload into ``root/<token>/data``; returns the folder. Raises LayerError when refused.

    The upload's bytes (the archive while it is unpacked, then what it unpacked to) count against ``owner``'s
    quota; a refused upload leaves nothing behind.
    """
    suffix = _accepted_suffix(filename, "upload")
    # The quota is checked and the upload written under the owner's lock: two uploads sent at once are counted
    # one after the other, so together they cannot pass a quota each would pass alone.
    with _uploads_lock(root):
        left = None
        if quota_bytes is not None:
            used = owner_usage(root, owner)
            left = quota_bytes - used
            if left <= 0:
                raise LayerError(
                    f"Your uploads already take {used / 2**20:.0f} MB of your {quota_bytes / 2**20:.0f} MB: discard "
                    "one you no longer need on the Data page, then upload again."
                )
        folder = Path(root) / secrets.token_urlsafe(18)
        (folder / "data").mkdir(parents=True)
        try:
            _write_meta(folder, {"owner": owner, "name": Path(filename).name[:120], "created": time.time()})
            raw = folder / f"upload{suffix}"
            if left is not None and left < max_unzipped_bytes:
                _save_stream(
                    stream, raw, left, f"The upload is larger than the {left / 2**20:.1f} MB left of your quota"
                )
            else:
                _save_stream(stream, raw, max_unzipped_bytes, "The upload is larger than the server accepts")
            if suffix == ".zip":
                limit = max_unzipped_bytes if left is None else min(max_unzipped_bytes, left - raw.stat().st_size)
                left_out = _unzip(raw, folder / "data", limit, max_members)
                raw.unlink()
            else:
                stem = re.sub(r"[^\w.-]", "_", Path(filename).stem)[:60].lstrip(".") or "layer"
                target = folder / "data" / f"{stem}{suffix}"
                raw.rename(target)
                limit = max_unzipped_bytes if left is None else min(max_unzipped_bytes, left)
                check_content(target, UPLOAD_DRIVERS[suffix], decoded_limit=limit)
                left_out = []
            if not any(_vector_files(folder / "data")):
                from layers.read import no_layer_in  # read.py imports this module

                raise LayerError(no_layer_in("The upload", _held(folder / "data", left_out), verb="upload"))
            upload_layers(folder)  # two layers of one name are refused now, not found out on the next page
            if left_out:  # said on its column-mapping page (left_out_words)
                names = [PurePosixPath(n.replace("\\", "/")).name for n in left_out]
                _write_meta(folder, read_meta(folder) | {LEFT_OUT: names})
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        return folder


@contextmanager
def _uploads_lock(root: str | Path):
    """An exclusive lock while an owner's quota is checked and an upload written, across the server's threads and
    processes: an OS lock on the uploads folder itself (uploads are few; one at a time costs nothing)."""
    import fcntl

    Path(root).mkdir(parents=True, exist_ok=True)
    fd = os.open(root, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def _save_stream(stream, target: Path, limit: int, refusal: str) -> None:
    total = 0
    with open(target, "wb") as out:
        while block := stream.read(CHUNK):
            total += len(block)
            if total > limit:
                raise LayerError(f"{refusal}; refused. Discard uploads you no longer need on the Data page.")
            out.write(block)


def _unzip(archive: Path, target: Path, limit: int, max_members: int) -> list[str]:
    """Unpack the members sewerplan reads, counting the bytes actually decompressed; never write past ``limit``.

    Returns the names of the members left packed (a CSV, a KML, a zip inside the zip ...), hidden files and a Mac's
    ``__MACOSX`` copies aside, for the refusal of an archive that holds no layer to name what it does hold."""
    try:
        zf = zipfile.ZipFile(archive)
    except zipfile.BadZipFile as exc:
        raise LayerError("The upload is not a valid zip archive.") from exc
    with zf:
        members = [m for m in zf.infolist() if not m.is_dir()]
        if len(members) > max_members:
            raise LayerError(f"The archive holds {len(members)} files; at most {max_members} are accepted.")
        chosen = []
        left_out = []
        taken: dict[str, zipfile.ZipInfo] = {}
        for member in members:
            if outside_archive(member.filename):
                raise LayerError(f"The archive member {member.filename!r} points outside the archive; refused.")
            dest = _member_target(PurePosixPath(member.filename.replace("\\", "/")))
            if dest is None:
                if not hidden_member(PurePosixPath(member.filename.replace("\\", "/"))):
                    left_out.append(member.filename)
                continue
            # Members are unpacked without their folders: two files of one name in two folders (last year's and
            # this year's parcels) would be written one over the other, or the parts of two shapefiles mixed.
            first = taken.setdefault(str(dest).lower(), member)
            if first is not member:
                raise LayerError(
                    f"The archive holds {PurePosixPath(member.filename).name} twice ({first.filename} and "
                    f"{member.filename}), and sewerplan knows a layer by its file's name: zip only the one you mean "
                    "(or rename the other) and upload the new zip."
                )
            chosen.append((member, dest))
        promised = sum(m.file_size for m, _ in chosen)
        if promised > limit:  # honest headers: refused before a byte is written
            raise LayerError(f"The archive unpacks to more than {limit / 2**20:.0f} MB; refused.")
        total = 0
        for member, dest in chosen:
            out_path = target / dest
            out_path.parent.mkdir(parents=True, exist_ok=True)
            try:
                with zf.open(member) as src, open(out_path, "wb") as out:
                    while block := src.read(CHUNK):
                        total += len(block)
                        if total > limit:  # lying headers: stopped before this block is written
                            raise LayerError(f"The archive unpacks to more than {limit / 2**20:.0f} MB; refused.")
                        out.write(block)
            except (zipfile.BadZipFile, zlib.error, EOFError, RuntimeError, NotImplementedError) as exc:
                # A damaged member (bad CRC, cut short), an encrypted one, or a compression zipfile cannot read.
                raise LayerError(
                    f"The archive member {member.filename!r} cannot be unpacked ({_zip_trouble(exc)}). Zip the "
                    "files again without a password, with ordinary (deflate) compression, and upload the new zip."
                ) from exc
    for path in _vector_files(target):
        check_content(path, UPLOAD_DRIVERS[path.suffix.lower()], decoded_limit=limit)
    return left_out


_ACCEPTED = (
    "shapefiles (.shp with .shx, .dbf), GeoPackage (.gpkg), GeoJSON (.geojson), FlatGeobuf (.fgb), GeoParquet "
    "(.parquet) or a File Geodatabase folder (.gdb)"
)
# Files users send that are not layers sewerplan reads, each with what to do instead (``read.no_layer_in`` says them,
# for an upload, a file added to one and a zip given to the command line alike). sewerplan takes no CSV table
# of points (the comment on UPLOAD_DRIVERS says why), so a table is made a layer in the GIS, where its X and Y
# columns and their CRS are chosen by someone who knows them.
_NOT_ACCEPTED = {
    ".csv": "a CSV table is not accepted, as it has no shapes: if it lists points by X and Y (or longitude and "
    "latitude) columns, make it a layer in QGIS (Layer > Add Layer > Add Delimited Text Layer, with its X and Y "
    "columns and their CRS) and export that layer as a GeoPackage",
    ".txt": "a text table is not accepted, as it has no shapes: make it a layer in the GIS (in QGIS, Add Delimited "
    "Text Layer) and export that as a GeoPackage",
    ".xlsx": "a spreadsheet is not accepted, as it has no shapes: make it a layer in the GIS and export that as a "
    "GeoPackage",
    ".xls": "a spreadsheet is not accepted, as it has no shapes: make it a layer in the GIS and export that as a "
    "GeoPackage",
    ".kml": "KML (Google Earth) is not accepted: open it in the GIS and export it as a GeoPackage or GeoJSON",
    ".kmz": "KMZ (Google Earth) is not accepted: open it in the GIS and export it as a GeoPackage or GeoJSON",
    ".zip": "a zip inside the zip is not unpacked: unzip it, and zip its files with the others",
    ".dbf": "a shapefile's table without its .shp and .shx: zip the .shp, .shx, .dbf and .prj together",
    ".shx": "a shapefile's index without its .shp: zip the .shp, .shx, .dbf and .prj together",
}


# The record's key for the files of an uploaded zip that were not unpacked (a CSV, a README ...), by name.
LEFT_OUT = "left_out"
# A GIS's own files beside a shapefile (ArcGIS's spatial indexes and metadata, QGIS's): never data, never named.
_SIDECARS = (
    ".sbn",
    ".sbx",
    ".fbn",
    ".fbx",
    ".ain",
    ".aih",
    ".atx",
    ".ixs",
    ".mxs",
    ".qix",
    ".qmd",
    ".shp.xml",
    ".aux.xml",
)


def left_out_words(names: list[str]) -> str | None:
    """What the column-mapping page says of the files an uploaded zip held that are no layer: named, and one named
    as a layer (``mains.csv``) with what to do instead. A zip of parcels.shp and mains.csv was unpacked as the
    parcels alone, and the report asked for a mains layer without a word of the mains.csv the planner had zipped
    (the command line refuses such a zip, ``read._tables_named_as_layers``)."""
    names = [n for n in names if not n.lower().endswith(_SIDECARS)]
    if not names:
        return None
    from layers.read import LAYER_NAMES  # read.py imports this module

    shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
    said = f"Not read from the upload, as they are no layers sewerplan reads: {shown}."
    for name in names:
        stem, suffix = PurePosixPath(name).stem.lower(), PurePosixPath(name).suffix.lower()
        kind = next((k for k, known in LAYER_NAMES.items() if stem in known), None)
        if kind is not None and suffix in _NOT_ACCEPTED:
            said += f" {name} is named as the {kind.replace('_', ' ')} layer, and {_NOT_ACCEPTED[suffix]}."
    return said


def _held(unpacked: Path, left_out: list[str]) -> list[str]:
    """The files an upload or an added file holds that are no layer: those left packed in its zip, and those unpacked
    that are not (a shapefile's .dbf without its .shp), for ``read.no_layer_in`` to name."""
    return [*left_out, *(p.name for p in sorted(unpacked.iterdir()) if p.suffix.lower() not in UPLOAD_DRIVERS)]


def _accepted_suffix(filename: str, verb: str) -> str:
    """The extension of a file sent to be uploaded (``verb`` "upload") or added to an upload ("add"), lower-case;
    a LayerError saying what is accepted when it is not, or when the name has nothing before its extension."""
    name = PurePosixPath((filename or "").replace("\\", "/")).name
    suffix = Path(name).suffix.lower()
    if not suffix and name.startswith(".") and name.lower() in UPLOAD_SUFFIXES:
        # ".geojson" is a name without an extension to Python (a hidden file's): told "upload GeoJSON (.geojson)",
        # the user saw their GeoJSON file refused for not being one.
        raise LayerError(
            f"The file {name!r} has no name before its extension, and sewerplan knows a layer by its file's name: "
            f"rename it to say what it holds (parcels{name.lower()}, say) and {verb} it again."
        )
    if suffix not in UPLOAD_SUFFIXES:
        said = _NOT_ACCEPTED.get(suffix)
        zipped = "a zipped shapefile or File Geodatabase (.zip)" if verb == "upload" else "a zipped shapefile (.zip)"
        raise LayerError(
            f"{name!r}: "
            + (f"{said[0].upper()}{said[1:]}. " if said else "")
            + f"{verb.capitalize()} {zipped}, a GeoPackage (.gpkg), GeoJSON (.geojson), FlatGeobuf (.fgb) or "
            "GeoParquet (.parquet)."
        )
    return suffix


def _zip_trouble(exc: BaseException) -> str:
    """What went wrong with a zip member, in a few words."""
    text = str(exc).lower()
    if "encrypted" in text or "password" in text:
        return "it is protected by a password"
    if "compression method" in text:
        return "it uses a compression method that cannot be read"
    return "the archive is damaged"


def outside_archive(member: str) -> bool:
    r"""Whether a zip member's name points outside the archive: absolute (``/x``, ``\x``, ``C:x``) or through ``..``
    (with either slash), checked before anything of the archive is unpacked.

    Examples
    --------
    >>> [outside_archive(n) for n in ("parcels.shp", "data/parcels.shp", "../x", "a\\..\\b", "/etc/x", "C:x")]
    [False, False, True, True, True, True]
    """
    name = PurePosixPath(member.replace("\\", "/"))
    return name.is_absolute() or ".." in name.parts or bool(re.match(r"^[A-Za-z]:", member))


def hidden_member(name: PurePosixPath) -> bool:
    """A zip member that is no one's data: a hidden file or folder, or a Mac's ``__MACOSX`` copy of a file."""
    return any(p.startswith(".") or p == "__MACOSX" for p in name.parts)


def _member_target(name: PurePosixPath) -> PurePosixPath | None:
    """Where a zip member goes in the upload's data folder, or None for a member that is not kept."""
    if hidden_member(name):
        return None
    gdb = next((i for i, p in enumerate(name.parts[:-1]) if p.lower().endswith(".gdb")), None)
    if gdb is not None:
        if gdb != len(name.parts) - 2 or not _GDB_FILE.match(name.name):
            return None
        return PurePosixPath(_safe_name(name.parts[gdb]), name.name)
    suffix = name.suffix.lower()
    if suffix in UPLOAD_DRIVERS and suffix != ".gdb" or suffix in SHAPEFILE_PARTS:
        return PurePosixPath(_safe_name(name.name))
    return None


def _safe_name(text: str) -> str:
    """A file name as kept in the upload's folder: letters (any alphabet's: "Łódź" stayed "___d_" on the Data page; a
    tester), digits, ``_ . -``; anything else, spaces and separators among them, ``_``. Never hidden (a leading dot)."""
    safe = re.sub(r"[^\w.-]", "_", text)[:80]
    return f"_{safe[1:]}" if safe.startswith(".") else safe


def _vector_files(folder: Path):
    for path in sorted(folder.iterdir()):
        suffix = path.suffix.lower()
        if suffix in UPLOAD_DRIVERS and (path.is_dir() == (suffix == ".gdb")):
            yield path


# --- checking content -------------------------------------------------------------------------------------------


def check_content(path: str | Path, driver: str, *, decoded_limit: int | None = None, name: str | None = None) -> None:
    """Refuse a file whose first bytes are not those of ``driver``'s format (names prove nothing); ``name`` is the
    file as its user knows it, for the message, where ``path`` is a copy.

    With ``decoded_limit``, a GeoParquet file is also refused when its columns decode to more bytes than that:
    dictionary encoding and compression let a file of a few kilobytes hold millions of rows, which the limit on
    unpacked bytes must count as what they are once read.
    """
    path = Path(path)
    label = name or path.name
    if path.is_symlink():
        raise LayerError(f"{label} is a link; refused.")
    if driver == "OpenFileGDB":
        _check_gdb(path)
        return
    if not path.is_file():
        raise LayerError(f"{label} is not a file.")
    with path.open("rb") as f:
        head = f.read(1024)
    if not head:  # "it starts with ''" told a planner nothing
        raise LayerError(
            f"{label} is empty (0 bytes): it was cut short when copied or zipped, or its export failed. Export the "
            "layer again from the GIS and upload it again."
        )
    ok, expected = _SIGNATURES[driver](head, path)
    if not ok:
        shown = head[:24].decode("latin-1").encode("unicode_escape").decode("ascii")
        raise LayerError(
            f"{label} is not {expected}: it starts with {shown!r}. Export the layer again as {expected} "
            "(a file renamed to another extension is not converted)."
        )
    if driver == "GeoParquet" and decoded_limit is not None:
        _check_decoded_size(path, decoded_limit)


def _decoded_nbytes(column) -> int:
    """Bytes of an Arrow column once every value is its own (a dictionary column counted row by row)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not pa.types.is_dictionary(column.type):
        return column.nbytes
    values = column.dictionary
    if pa.types.is_binary(values.type) or pa.types.is_string(values.type) or pa.types.is_large_binary(values.type):
        sizes = pc.binary_length(values)
    else:
        sizes = pa.array([values.nbytes / max(1, len(values))] * len(values))
    taken = pc.take(sizes, column.indices)
    return column.indices.nbytes + int(pc.sum(taken).as_py() or 0)


def _check_decoded_size(path: Path, limit: int) -> None:
    """Decode a GeoParquet file batch by batch (memory bounded by one batch), refusing it past ``limit`` bytes."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    total = 0
    try:
        with pq.ParquetFile(path) as parquet:
            for batch in parquet.iter_batches(batch_size=65_536):
                total += sum(_decoded_nbytes(column) for column in batch.columns)
                if total > limit:
                    raise LayerError(
                        f"{path.name} decodes to more than {limit / 2**20:.0f} MB (its rows are stored compressed); "
                        "refused. Upload the municipality's own features only."
                    )
    except (pa.ArrowException, OSError) as exc:
        raise LayerError(f"{path.name} is not a readable GeoParquet file: {exc}") from exc


def _gpkg(head: bytes, path: Path) -> tuple[bool, str]:
    return head.startswith(b"SQLite format 3\x00") and head[68:72] in (b"GPKG", b"GP10", b"GP11"), "a GeoPackage"


def _geojson(head: bytes, path: Path) -> tuple[bool, str]:
    return head.removeprefix(b"\xef\xbb\xbf").lstrip(b" \t\r\n").startswith(b"{"), "GeoJSON (a JSON object)"


def _shapefile(head: bytes, path: Path) -> tuple[bool, str]:
    expected = "a shapefile (.shp with its .shx and .dbf)"
    if not head.startswith(b"\x00\x00\x27\x0a") or len(head) < 100:
        return False, expected
    for part, check in ((".shx", lambda h: h.startswith(b"\x00\x00\x27\x0a")), (".dbf", _dbf)):
        sibling = next((p for p in path.parent.iterdir() if p.stem == path.stem and p.suffix.lower() == part), None)
        if sibling is None or sibling.is_symlink():
            raise LayerError(f"{path.name} has no {part} file beside it: zip the .shp, .shx, .dbf and .prj together.")
        with sibling.open("rb") as f:
            start = f.read(100)
        if not check(start):
            what = "is empty (0 bytes)" if not start else f"is not the {part} part of a shapefile"
            raise LayerError(
                f"{sibling.name} {what}: export the layer again from the GIS as a shapefile, and zip its .shp, "
                ".shx, .dbf and .prj together."
            )
    return True, expected


def _dbf(head: bytes) -> bool:
    return len(head) >= 32 and head[0] in _DBF_VERSIONS


def _flatgeobuf(head: bytes, path: Path) -> tuple[bool, str]:
    return head[:3] == b"fgb" and head[4:7] == b"fgb", "a FlatGeobuf file"


def _parquet(head: bytes, path: Path) -> tuple[bool, str]:
    with path.open("rb") as f:
        f.seek(-4, os.SEEK_END)
        tail = f.read(4)
    return head.startswith(b"PAR1") and tail == b"PAR1", "a GeoParquet file"


_SIGNATURES = {
    "GPKG": _gpkg,
    "GeoJSON": _geojson,
    "ESRI Shapefile": _shapefile,
    "FlatGeobuf": _flatgeobuf,
    "GeoParquet": _parquet,
}


def _check_gdb(path: Path) -> None:
    if not path.is_dir():
        raise LayerError(f"{path.name} is not a File Geodatabase folder.")
    names = [p.name for p in path.iterdir()]
    odd = [n for n in names if not _GDB_FILE.match(n) or (path / n).is_symlink() or not (path / n).is_file()]
    if odd or "a00000001.gdbtable" not in names:
        raise LayerError(f"{path.name} is not a File Geodatabase (unexpected: {', '.join(odd[:3]) or 'no tables'}).")
    with (path / "a00000001.gdbtable").open("rb") as f:
        if f.read(4) not in (b"\x03\x00\x00\x00", b"\x04\x00\x00\x00"):
            raise LayerError(f"{path.name} is not a File Geodatabase (its catalogue table is not a .gdbtable).")


def gdal_path(path: str | Path, driver: str, root: str | Path | None = None) -> str:
    """The name GDAL opens a checked upload by: only ``driver`` can claim it; anything else is refused.

    The path must be a plain local path (no ``/vsi...``, no ``DRIVER:`` prefix, no URL), inside ``root`` if
    given, and its content must match the driver (``check_content``).
    """
    text = str(path)
    if driver not in _SIGNATURES and driver != "OpenFileGDB":
        raise LayerError(f"{Path(text).name}: {driver} files are not accepted as uploads.")
    if "/vsi" in text.lower() or "\\vsi" in text.lower() or "://" in text or ":" in Path(text).name:
        raise LayerError(f"{text!r} is not a file in the upload; refused.")
    if Path(text).is_symlink():
        raise LayerError(f"{Path(text).name} is a link; refused.")
    resolved = Path(text).resolve()
    if root is not None and not resolved.is_relative_to(Path(root).resolve()):
        raise LayerError(f"{Path(text).name} is outside the upload's folder; refused.")
    if UPLOAD_DRIVERS.get(resolved.suffix.lower()) != driver:
        raise LayerError(f"{resolved.name} is not opened as {driver}: its extension names another format.")
    check_content(resolved, driver)
    if driver in ("GPKG", "GeoJSON"):
        return f"{driver}:{resolved}"  # GDAL tries no other driver on a prefixed name
    return str(resolved)


# --- the upload's folder, owner and life ------------------------------------------------------------------------


def upload_folder(root: str | Path, token: str, *, owner: str | None = None) -> Path:
    """The upload's folder; a LayerError when there is none, or when it is not ``owner``'s (given)."""
    if not TOKEN.match(token or ""):
        raise LayerError("No such upload.")
    folder = Path(root) / token
    if not (folder / "data").is_dir() or published_as(folder) is not None:
        raise LayerError("No such upload (it may have expired or been discarded).")
    if owner is not None and read_meta(folder).get("owner") != owner:
        raise LayerError("No such upload.")  # another user's workspace: not even its existence is told
    return folder


def published_as(folder: str | Path) -> str | None:
    """The name an upload was published under, once ``retire_published`` has recorded it; None for a live upload."""
    return read_meta(Path(folder)).get(PUBLISHED)


def retire_published(folder: str | Path, name: str) -> None:
    """An upload just published as the town's store: record that in its ``meta.json`` first (whole or not at all),
    then delete its files, keeping that record until the upload would have expired.

    The record is what tells a publish sent again that it is done: the session that would say so is written only with
    the answer, which a server killed (or a connection lost) after the publication never sends. A folder deleted
    first, or in part (kill -9 during the deletion), answered "No such upload (it may have expired ...)", listed a
    half-deleted workspace, or published its store a second time."""
    folder = Path(folder)
    update_meta(folder, {PUBLISHED: name, "published_at": time.time()})
    for entry in folder.iterdir():
        if entry.name == META or entry.name.startswith(f".{META}."):  # the record, its lock and its writes
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def read_meta(folder: Path) -> dict:
    try:
        return json.loads((folder / META).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _write_meta(folder: Path, meta: dict, *, locked: bool = False) -> None:
    """The upload's record, whole or not at all, under its writer lock (``layers.atomic``): a hidden name of its own
    per write, renamed over ``meta.json``; what a killed writer left is cleared by the next one."""
    with written_whole(folder / META, locked=locked) as where:
        where.write_text(json.dumps(meta), encoding="utf-8")


def _meta_writer(folder: Path) -> StoreWriter:
    """The upload record's writer lock, waited for: a record is written in a moment, and two requests saving an
    upload's settings at once (two tabs, a double click) are taken one after the other, neither refused."""
    end = time.monotonic() + 10
    while True:
        try:
            return writer_lock(folder / META, what="saving this upload's settings", place="this upload")
        except StoreBusyError:
            if time.monotonic() > end:
                raise
            time.sleep(0.01)


def touch(folder: Path, *, every_s: float = 300.0) -> None:
    """Mark the upload used now (at most every ``every_s`` seconds), so it does not expire while worked on."""
    meta = folder / META
    try:
        if time.time() - meta.stat().st_mtime > every_s:
            os.utime(meta)
    except OSError:
        pass


def last_used(folder: Path) -> float:
    try:
        return (folder / META).stat().st_mtime
    except OSError:
        return folder.stat().st_mtime


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def owner_usage(root: str | Path, owner: str) -> int:
    """Bytes on disk of ``owner``'s uploads together."""
    return sum(folder_bytes(f) for f in list_uploads(root, owner=owner))


def list_uploads(root: str | Path, *, owner: str | None = None) -> list[Path]:
    """The upload folders (of ``owner`` when given), newest first."""
    base = Path(root)
    if not base.is_dir():
        return []
    found = [
        f
        for f in base.iterdir()
        if f.is_dir()
        and TOKEN.match(f.name)
        and (owner is None or read_meta(f).get("owner") == owner)
        and published_as(f) is None  # the record of a published upload, not a workspace
    ]
    return sorted(found, key=last_used, reverse=True)


def discard(root: str | Path, token: str, *, owner: str) -> None:
    """Delete ``owner``'s upload, under its store's writer lock: ``StoreBusyError`` while a run (or a publication, or
    a layer being added) holds it. Deleted during a run, the run failed with "store.gpkg does not exist", naming the
    server's folders; a publication of it is refused the same way (its ``write_setting`` takes the lock)."""
    folder = upload_folder(root, token, owner=owner)
    with writer_lock(folder / STORE, who=owner, what="discarding this upload"):
        shutil.rmtree(folder, ignore_errors=True)
    shutil.rmtree(folder, ignore_errors=True)  # the lock file, where an open file cannot be deleted (Windows)


def expire_uploads(root: str | Path, *, ttl_hours: float, now: float | None = None) -> list[str]:
    """Delete uploads unused for ``ttl_hours`` (and leftover folders of that age without a record); returns them."""
    base = Path(root)
    if not base.is_dir():
        return []
    now = time.time() if now is None else now
    gone = []
    for folder in base.iterdir():
        if folder.is_dir() and TOKEN.match(folder.name) and now - last_used(folder) > ttl_hours * 3600:
            shutil.rmtree(folder, ignore_errors=True)
            gone.append(folder.name)
    return gone


def upload_layers(folder: str | Path) -> dict:
    """Every layer in an upload by its lower-case name (a file's stem, a GeoPackage's or geodatabase's layer name),
    each to be opened only by its checked driver. A GeoPackage's or geodatabase's layer names are listed through
    that driver alone."""
    return _upload_layers(folder)[0]


def upload_tables(folder: str | Path) -> set[str]:
    """The layers of an upload (by lower-case name) that are tables without shapes: a GeoPackage's or geodatabase's
    attribute tables (a county's manhole inspections, named ``manholes``). They are never taken as a layer of any
    kind (``upload_sources``): taken by name, the check refused the table and the whole upload was deleted with it,
    its parcels and mains as well. The column-mapping page names them (``table_words``)."""
    return _upload_layers(folder)[1]


def table_words(name: str, source) -> str:
    """What the column-mapping page says of a table without shapes in an upload: that it is not used, and, for one
    named as a layer kind (``mains``), what to do to give that layer."""
    from layers.read import LAYER_NAMES  # read.py imports this module

    kind = next((k for k, known in LAYER_NAMES.items() if name in known), None)
    said = f"{_layer_words(source)} has no shapes (it is a table, attributes only), so sewerplan does not use it"
    if kind is None:
        return f"{said}."
    kind_words = kind.replace("_", " ")
    return (
        f"{said} as the {kind_words} layer its name says. To use it as the {kind_words} layer, export that layer "
        "from the GIS with its geometry and add it to this upload (or upload the data again); leave it out if it is "
        f"not meant as a layer. {_POINTS_FROM_TABLE}"
    )


# What to do with a table of points listed by their X and Y columns (a GeoPackage's attribute table): sewerplan
# makes no points of columns, whose CRS only someone who knows the table can say.
_POINTS_FROM_TABLE = (
    "If it lists points by X and Y (or longitude and latitude) columns, make it a layer in QGIS first (Layer > Add "
    'Layer > Add Delimited Text Layer, or Processing\'s "Create points layer from table", with its X and Y columns '
    "and their CRS), then export that layer as a GeoPackage."
)


def _upload_layers(folder: str | Path) -> tuple[dict, set[str]]:
    """``upload_layers`` and ``upload_tables`` at once: a GeoPackage's layers are listed once for both."""
    import pyogrio

    from layers.read import LayerSource, unreadable_message

    data = Path(folder) / "data"
    available: dict[str, LayerSource] = {}
    tables: set[str] = set()

    def add(name: str, source: LayerSource) -> None:
        # Two layers of one name (parcels.shp and parcels.geojson, PARCELS.shp and parcels.shp, a GeoPackage's
        # parcels beside parcels.shp): one was silently dropped, and the parcels read were perhaps not the ones meant.
        first = available.setdefault(name.lower(), source)
        if first is not source:
            raise LayerError(
                f"The upload holds two layers named {name.lower()} ({_layer_words(first)} and "
                f"{_layer_words(source)}), and sewerplan cannot tell which one is meant: upload only the one you "
                "mean, or rename the other, and upload again."
            )

    for path in _vector_files(data):
        driver = UPLOAD_DRIVERS[path.suffix.lower()]
        if driver in ("GPKG", "OpenFileGDB"):
            try:
                listed = [(str(n), g) for n, g in pyogrio.list_layers(gdal_path(path, driver, root=data))]
            except LayerError:
                raise
            except Exception as exc:
                raise LayerError(unreadable_message(path, exc)) from exc
            for name, geometry_type in listed:
                if geometry_type is None and name.lower() in GIS_OWN_TABLES:
                    continue
                add(name, LayerSource("", str(path), name, driver))
                if geometry_type is None:  # an attribute table: GDAL gives no geometry type
                    tables.add(name.lower())
        else:
            add(path.stem, LayerSource("", str(path), None, driver))
    return available, tables


# Tables a GIS keeps in a GeoPackage for itself (QGIS's styles, which sewerplan writes too, and projects): no one's
# data, so the column-mapping page does not list them as tables sewerplan leaves out.
GIS_OWN_TABLES = frozenset({"layer_styles", "qgis_projects"})


def _layer_words(source) -> str:
    """A layer of an upload as its user knows it: ``parcels.shp``, ``town.gpkg's layer parcels``."""
    name = Path(source.path).name
    return f"{name}'s layer {source.layer}" if source.layer else name


def upload_sources(folder: str | Path) -> dict:
    """The layers of an upload by kind: those the user said what they are (``set_kinds``), then those found by name
    (``parcels.shp``, a GeoPackage's ``mains`` ...), each to be opened only by its checked driver. A table without
    shapes is none of them (``upload_tables``), whatever its name."""
    from layers.read import LAYER_NAMES, LayerSource

    everything, tables = _upload_layers(folder)
    available = {name: src for name, src in everything.items() if name not in tables}
    given = {name: kind for name, kind in (read_meta(Path(folder)).get("kinds") or {}).items() if name in available}
    found = {}
    for name, kind in given.items():
        src = available[name]
        found.setdefault(kind, LayerSource(kind, src.path, src.layer, src.driver))
    for kind, names in LAYER_NAMES.items():
        if kind in found:
            continue
        for name in names:
            if name in available and name not in given:
                src = available[name]
                found[kind] = LayerSource(kind, src.path, src.layer, src.driver)
                break
    return found


def set_kinds(folder: str | Path, kinds: dict[str, str]) -> None:
    """Record what the user said each layer of an upload is (layer name -> kind; an empty kind forgets it)."""
    folder = Path(folder)
    with _meta_writer(folder):  # read and written under one lock: another request's change is never lost
        meta = read_meta(folder)
        known = dict(meta.get("kinds") or {})
        for name, kind in kinds.items():
            if kind:
                known[name.lower()] = kind
            else:
                known.pop(name.lower(), None)
        # One layer of each kind: a form from a page gone stale (a second tab) said another layer was the parcels
        # too, and one of the two was read without a word, the other's layer lost.
        by_kind: dict[str, list[str]] = {}
        for name, kind in known.items():
            by_kind.setdefault(kind, []).append(name)
        twice = {kind: names for kind, names in by_kind.items() if len(names) > 1}
        if twice:
            kind, names = next(iter(sorted(twice.items())))
            raise LayerError(
                f"Layers {' and '.join(sorted(names))} would both be the {kind} layer, and an upload has one layer of "
                "each kind: choose one layer for each (nothing was changed; the page now shows what is recorded)."
            )
        _write_meta(folder, meta | {"kinds": known}, locked=True)


def update_meta_entry(folder: str | Path, key: str, name: str, value) -> None:
    """Add or replace one entry of a mapping in the upload's record (``columns[kind]``: one layer's columns), the
    others kept: read and written under the record's lock, so two requests for different layers at once keep both."""
    if key in ("owner", "created"):
        raise ValueError(f"The upload's {key} is never replaced.")
    folder = Path(folder)
    with _meta_writer(folder):
        meta = read_meta(folder)
        _write_meta(folder, meta | {key: dict(meta.get(key) or {}) | {name: value}}, locked=True)


def update_meta(folder: str | Path, values: dict) -> None:
    """Add or replace entries of the upload's record (its owner and creation time are never replaced)."""
    folder = Path(folder)
    with _meta_writer(folder):  # read and written under one lock: another request's change is never lost
        meta = read_meta(folder)
        _write_meta(folder, meta | {k: v for k, v in values.items() if k not in ("owner", "created")}, locked=True)


def add_to_upload(
    folder: str | Path,
    filename: str,
    stream,
    *,
    kind: str,
    max_unzipped_bytes: int,
    quota_left: int | None = None,
    max_members: int = 500,
) -> list[str]:
    """Add one file (a layer the validation report said is missing) to an upload, recorded as a layer of ``kind``.

    The file goes through the same checks as an upload (allowed kinds, signatures, zip members, sizes, quota); a
    zip may hold one layer. Returns the names of the layers added. A refused file leaves the upload as it was.
    """
    folder = Path(folder)
    suffix = _accepted_suffix(filename, "add")
    limit = max_unzipped_bytes if quota_left is None else min(max_unzipped_bytes, quota_left)
    if limit <= 0:
        raise LayerError("Your uploads take all of your quota: discard one you no longer need on the Data page.")
    incoming = folder / f"incoming-{secrets.token_hex(6)}"
    incoming.mkdir()
    try:
        raw = incoming / f"upload{suffix}"
        _save_stream(stream, raw, limit, "The file is larger than the server accepts")
        unpacked = incoming / "data"
        unpacked.mkdir()
        left_out = []
        if suffix == ".zip":
            left_out = _unzip(raw, unpacked, limit - raw.stat().st_size, max_members)
            raw.unlink()
        else:
            stem = re.sub(r"[^\w.-]", "_", Path(filename).stem)[:60].lstrip(".") or "layer"
            raw.rename(unpacked / f"{stem}{suffix}")
            check_content(unpacked / f"{stem}{suffix}", UPLOAD_DRIVERS[suffix])
        if not any(_vector_files(unpacked)):
            from layers.read import no_layer_in  # read.py imports this module

            raise LayerError(no_layer_in("The file", _held(unpacked, left_out), verb="add"))
        found, tables = _upload_layers(incoming)
        names = list(found)
        if len(names) != 1:
            raise LayerError(
                f"Add one layer at a time: the file holds {len(names)} ({', '.join(names) or 'none sewerplan reads'})."
            )
        if tables:  # taken as the layer, the check refused it and deleted the whole upload
            raise LayerError(
                f"{Path(filename).name} holds {names[0]}, a table without shapes (attributes only), which cannot be "
                f"the {kind.replace('_', ' ')} layer: export that layer from the GIS with its geometry and add it "
                f"again. {_POINTS_FROM_TABLE}"
            )
        data = folder / "data"
        parts = list(unpacked.iterdir())
        suffixes = [p.suffix.lower() for p in parts]
        if len(set(suffixes)) != len(suffixes):
            raise LayerError("Add one layer at a time: the file holds parts of several layers.")
        before = upload_layers(folder)
        taken = {p.name.lower() for p in data.iterdir()}
        stem, k = f"{kind}_added", 1
        while any(f"{stem}{x}" in taken for x in suffixes):
            k += 1
            stem = f"{kind}_added_{k}"
        moved = []
        for part in parts:
            target = data / f"{stem}{part.suffix.lower()}"
            os.replace(part, target)
            moved.append(target)
        try:
            added = sorted(set(upload_layers(folder)) - set(before))
            clash = None
        except LayerError as exc:  # a layer of the name the upload has already (a GeoPackage's layer keeps its name)
            added, clash = [], exc
        if len(added) != 1:
            for target in moved:
                if target.is_dir():
                    shutil.rmtree(target, ignore_errors=True)
                else:
                    target.unlink(missing_ok=True)
            # The clash's own sentence names both layers, the added one by the file its user sent (its copy here is
            # named after its kind): "already has a layer named 'parcels'" did not say which, nor that it was theirs.
            held = before.get(names[0])
            if clash is not None and held is not None:
                raise LayerError(
                    f"The upload holds a layer named {names[0]} already ({_layer_words(held)}), and the layer in "
                    f"{Path(filename).name} has that name too, so sewerplan could not tell which one is meant: "
                    "rename the layer in the file and add it again, or discard this upload and upload the data "
                    "again with only the one you mean."
                ) from clash
            raise clash or LayerError(
                f"The upload already has a layer named {names[0]!r}: rename the layer in the file and add it again."
            )
        set_kinds(folder, {added[0]: kind})
        return added
    finally:
        shutil.rmtree(incoming, ignore_errors=True)
