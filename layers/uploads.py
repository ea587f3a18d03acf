"""Safe handling of uploaded datasets: zipped shapefiles, GeoPackages and GeoJSON files.

An upload is refused unless it is one of those kinds, checked by content, not name alone. A zip archive is
unpacked member by member into the upload's own folder: members with ``..`` or absolute paths are refused, only
the files a shapefile or GeoJSON needs are taken (no VRT or anything else that makes GDAL read another file),
and the bytes actually decompressed are counted, so a zip bomb stops at the limit whatever its headers claim.
Uploads live under ``instance/uploads/``, never in the served static folder.
"""

from __future__ import annotations

import re
import secrets
import shutil
import zipfile
from pathlib import Path, PurePosixPath

from layers.errors import LayerError

ALLOWED_MEMBERS = {".shp", ".shx", ".dbf", ".prj", ".cpg", ".qix", ".geojson", ".json", ".gpkg"}
TOKEN = re.compile(r"^[A-Za-z0-9_-]{16,64}$")
CHUNK = 1 << 20


def new_upload(root: str | Path, filename: str, stream, *, max_unzipped_bytes: int, max_members: int = 500) -> Path:
    """Save and unpack one upload into ``root/<token>/``; returns that folder. Raises LayerError when refused."""
    suffix = Path(filename or "").suffix.lower()
    if suffix not in (".zip", ".gpkg", ".geojson", ".json"):
        raise LayerError(f"{filename!r}: upload a zipped shapefile (.zip), a GeoPackage (.gpkg) or GeoJSON.")
    folder = Path(root) / secrets.token_urlsafe(18)
    (folder / "data").mkdir(parents=True)
    try:
        raw = folder / f"upload{suffix}"
        with open(raw, "wb") as out:
            shutil.copyfileobj(stream, out, CHUNK)
        if suffix == ".zip":
            _unzip(raw, folder / "data", max_unzipped_bytes, max_members)
            raw.unlink()
        else:
            _check_magic(raw, suffix)
            raw.rename(folder / "data" / f"{Path(filename).stem[:60] or 'layer'}{suffix}")
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return folder


def upload_folder(root: str | Path, token: str) -> Path:
    if not TOKEN.match(token or ""):
        raise LayerError("No such upload.")
    folder = Path(root) / token
    if not (folder / "data").is_dir():
        raise LayerError("No such upload (it may have been removed).")
    return folder


def _check_magic(path: Path, suffix: str) -> None:
    with path.open("rb") as f:
        head = f.read(16)
    if suffix == ".gpkg" and not head.startswith(b"SQLite format 3\x00"):
        raise LayerError("The .gpkg file is not a GeoPackage (SQLite) file.")
    if suffix in (".geojson", ".json") and not head.lstrip().startswith(b"{"):
        raise LayerError("The GeoJSON file does not start with a JSON object.")


def _unzip(archive: Path, target: Path, limit: int, max_members: int) -> None:
    try:
        zf = zipfile.ZipFile(archive)
    except zipfile.BadZipFile as exc:
        raise LayerError("The upload is not a valid zip archive.") from exc
    with zf:
        members = [m for m in zf.infolist() if not m.is_dir()]
        if len(members) > max_members:
            raise LayerError(f"The archive holds {len(members)} files; at most {max_members} are accepted.")
        total = 0
        for member in members:
            name = PurePosixPath(member.filename.replace("\\", "/"))
            if name.is_absolute() or ".." in name.parts or re.match(r"^[A-Za-z]:", member.filename):
                raise LayerError(f"The archive member {member.filename!r} points outside the archive; refused.")
            if name.suffix.lower() not in ALLOWED_MEMBERS or name.name.startswith("."):
                continue  # readme files, VRTs, anything GDAL should not see
            dest = target / name.name
            with zf.open(member) as src, open(dest, "wb") as out:
                while block := src.read(CHUNK):
                    total += len(block)
                    if total > limit:
                        raise LayerError(f"The archive unpacks to more than {limit // (1 << 20)} MB; refused.")
                    out.write(block)
