"""Files that appear whole or not at all, one writer at a time, and what killed writers leave behind.

Every file sewerplan writes whole (a GeoPackage store or output, a GeoParquet file, a QGIS project, a batch's
records) is written under a hidden name beside its target, ``.NAME.<random>.tmp.SUFFIX``, and renamed over the
target once whole (``written_whole``). A process killed while writing (kill -9, a power cut) leaves that hidden
file: nothing else ever renames or deletes it. So each target has a writer lock (``writer_lock``: an OS lock on a
file beside it, released by the OS when the process dies), every writer of the target writes under it, and the
writer that takes it deletes the hidden files of the target's own naming scheme that it finds
(``remove_stale_scratch``): none of them can still be being written then.

The lock file of a GeoPackage (a store, whichever command writes it) is ``NAME.gpkg.lock``, as it has always
been, so every version of sewerplan shares it; it stays beside the store. Another file's lock is hidden,
``.NAME.lock`` (a folder of GeoParquet files, a batch's dataset, is read whole by Parquet readers, which skip only
names starting with ``.`` or ``_``), and removed by its writer when done, so only the output is left.
"""

from __future__ import annotations

import ctypes
import datetime as dt
import errno
import json
import os
import re
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from layers.errors import LayerError


class StoreBusyError(LayerError):
    """Another run, publication or write holds this store's (or this file's) writer lock right now."""


def busy_message(holder: dict, *, place: str = "this store") -> str:
    """The one sentence a refused writer gets, from either store backend or a file's lock: what is running on
    ``place``, who started it, when."""
    since = holder.get("since")
    when = dt.datetime.fromtimestamp(float(since)).astimezone().strftime("%H:%M:%S") if since else "a moment ago"
    return (
        f"{str(holder.get('what') or 'a run').capitalize()} is in progress on {place} (started by "
        f"{holder.get('who') or 'another user'} at {when}). Wait for it to finish, then try again."
    )


class StoreWriter:
    """The exclusive right to write one store (or file), held until ``release()`` (from any thread, once)."""

    def __init__(self, release) -> None:
        self._release = release
        self._guard = threading.Lock()

    def release(self) -> None:
        with self._guard:
            release, self._release = self._release, None
        if release is not None:
            release()

    def __enter__(self) -> StoreWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.release()


# -- the hidden names a file is written under ---------------------------------------------------------------------

# ".NAME.<random>.tmp.SUFFIX" for NAME.SUFFIX, <random> 32 hex digits (uuid4: ``scratch_path``) or 8 of tempfile's
# [a-z0-9_] (a store's copy, layers.store._replacement, made with mkstemp). SQLite may add -journal, -wal or -shm to
# a GeoPackage's. Releases before this one wrote GeoParquet files as ".NAME.SUFFIX.<32 hex>.tmp", QGIS projects
# and a batch's unified parts as ".NAME.SUFFIX.tmp" and a register's backup as ".NAME.SUFFIX.partial-<process ID>":
# those are ours too, and cleared the same way.
_SCRATCH_RANDOM = r"(?:[0-9a-f]{32}|[a-z0-9_]{8})"
_SQLITE_SIDECARS = r"(?:-journal|-wal|-shm)?"


def scratch_affixes(target: Path) -> tuple[str, str]:
    """The prefix and suffix of the hidden names ``target`` is written under: ``(".NAME.", ".tmp.gpkg")``."""
    return f".{target.stem}.", f".tmp{target.suffix}"


def scratch_path(target: Path) -> Path:
    """A new hidden name beside ``target`` to write it under, renamed over ``target`` once whole."""
    prefix, suffix = scratch_affixes(target)
    return target.with_name(f"{prefix}{uuid.uuid4().hex}{suffix}")


def is_scratch_of(target: Path, name: str) -> bool:
    """``name`` (a file name in ``target``'s folder) is one of the hidden copies ``target`` is written under, or its
    SQLite journal: only our own pattern for that exact name, never another file's copy or a user's file.

    Examples
    --------
    >>> town = Path("data/town.gpkg")
    >>> [is_scratch_of(town, n) for n in (".town.wv81o836.tmp.gpkg", ".town.wv81o836.tmp.gpkg-journal",
    ...                                   f".town.{'0' * 32}.tmp.gpkg")]
    [True, True, True]
    >>> [is_scratch_of(town, n) for n in ("town.gpkg", ".town.v2.wv81o836.tmp.gpkg", ".town.WV81O836.tmp.gpkg",
    ...                                   ".town.wv81o836.tmp.gpkg.bak", "town.wv81o836.tmp.gpkg", ".town.x.tmp.gpkg",
    ...                                   ".town.gpkg.lock")]
    [False, False, False, False, False, False, False]
    >>> results = Path("results.parquet")
    >>> [is_scratch_of(results, n) for n in (f".results.{'a1' * 16}.tmp.parquet", f".results.parquet.{'a1' * 16}.tmp",
    ...                                      ".results.parquet.partial-4242")]
    [True, True, True]
    >>> [is_scratch_of(results, n) for n in (f".results.measuring_lines.{'a1' * 16}.tmp.parquet", ".results.parquet",
    ...                                      f".results.parquet.{'a1' * 16}.tmp.bak", ".results.parquet.lock")]
    [False, False, False, False]
    """
    prefix, suffix = scratch_affixes(target)
    current = re.escape(prefix) + _SCRATCH_RANDOM + re.escape(suffix) + _SQLITE_SIDECARS
    earlier = re.escape(f".{target.name}") + r"(?:(?:\.[0-9a-f]{32})?\.tmp|\.partial-[0-9]+)"
    return re.fullmatch(f"{current}|{earlier}", name) is not None


def remove_stale_scratch(target: str | Path) -> list[Path]:
    """Delete the hidden copies of ``target`` (and their SQLite journals) that killed writers left beside it;
    returns those deleted.

    Call it only while holding ``target``'s writer lock (``writer_lock`` does, as it takes it): every writer of
    ``target`` writes its copy under that lock, so no copy left then is still being written. Only regular files in
    ``target``'s own folder whose names are ``is_scratch_of(target, ...)`` are touched: no link is followed, no
    folder entered, no other file's copy or other file removed. A file that cannot be removed (in use on Windows,
    no permission) is left for the next writer.
    """
    target = Path(target)
    removed = []
    try:
        entries = list(os.scandir(target.parent))
    except OSError:
        return removed
    for entry in entries:
        if not is_scratch_of(target, entry.name):
            continue
        try:
            if entry.is_file(follow_symlinks=False):
                os.unlink(entry.path)
                removed.append(Path(entry.path))
        except OSError:
            continue
    return removed


# -- one writer at a time -----------------------------------------------------------------------------------------


def lock_file(target: str | Path) -> Path:
    """The file whose OS lock is ``target``'s writer lock: ``NAME.gpkg.lock`` for a GeoPackage (a store's, shared
    by every version), ``.NAME.lock`` for any other file (hidden from Parquet readers reading its folder)."""
    target = Path(target).resolve()
    if target.suffix.lower() == ".gpkg":
        return Path(f"{target}.lock")
    return target.with_name(f".{target.name}.lock")


def writer_lock(target: str | Path, *, who: str = "", what: str = "a write", place: str = "this store") -> StoreWriter:
    """Take ``target``'s writer lock without waiting; ``StoreBusyError`` says who holds it and since when.

    Once it holds the lock, the hidden copies of ``target`` that killed writers left beside it are deleted
    (``remove_stale_scratch``). ``place`` is how the refusal names ``target`` ("this store", a file's name).
    """
    path = lock_file(target)
    folder_for(target)
    # A GeoPackage's lock file stays (every version of sewerplan locks it); another file's is removed when its writer
    # is done, so only the output is left. Whoever locked the file just removed, or finds another in its place, has
    # locked nothing: it opens the file at that name again (not on Windows, where an open file stays).
    removable = path.name.startswith(".") and os.name != "nt"
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:  # a folder that takes no file (/proc), a read-only disk: one sentence
            raise LayerError(_cannot_lock(exc, target)) from exc
        try:
            _lock(fd)
        except OSError:
            holder = _holder(fd)
            os.close(fd)
            raise StoreBusyError(busy_message(holder, place=place)) from None
        if not removable or same_file(fd, path):
            break
        os.close(fd)

    def release() -> None:
        try:
            if removable:
                path.unlink(missing_ok=True)
            os.ftruncate(fd, 0)
            _unlock(fd)
        finally:
            os.close(fd)

    who = who or f"sewerplan (process {os.getpid()})"
    try:
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps({"who": who, "what": what, "since": time.time(), "pid": os.getpid()}).encode())
    except OSError as exc:
        # A full disk refuses even the holder's name: let the lock go (a server would keep it till restarted) and
        # name the file being written, not a handle with no name.
        with suppress(OSError):
            release()
        raise OSError(exc.errno, exc.strerror, str(target)) from exc
    remove_stale_scratch(target)
    return StoreWriter(release)


def folder_for(target: str | Path) -> Path:
    """Make the folder ``target`` is to be written in, with its parents, where missing; returns it. A path that
    cannot hold it is told in one sentence (``LayerError``), not a traceback: a file where one of its folders should
    be (``--out town.csvt/x.gpkg``), a place that takes no new files, or a disk's refusal, naming the folder."""
    target = Path(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise LayerError(disk_refusal(exc) or _cannot_lock(exc, target)) from exc
    return target.parent


def _cannot_lock(exc: OSError, target: str | Path) -> str:
    """Why ``target``'s lock file could not be made, in one sentence: a full or read-only disk as every write says
    it (``disk_refusal``), a file where a folder of the path should be, or a place that takes no files (``/proc``).

    Examples
    --------
    >>> print(_cannot_lock(FileExistsError(errno.EEXIST, "File exists", "out.csvt"), "out.csvt/x.gpkg"))
    Cannot write out.csvt/x.gpkg: out.csvt is a file, not a folder; give an output in a folder.
    >>> print(_cannot_lock(FileNotFoundError(errno.ENOENT, "No such file or directory", "/proc/x.lock"), "/proc/x"))
    Cannot write /proc/x: its folder /proc takes no new files (No such file or directory); give an output in ...
    """
    target = Path(target)
    if (said := disk_refusal(exc, target)) is not None:
        return said
    if exc.errno in (errno.EEXIST, errno.ENOTDIR):
        file = next((p for p in [*reversed(target.parents)] if p.exists() and not p.is_dir()), exc.filename)
        return f"Cannot write {target}: {file} is a file, not a folder; give an output in a folder."
    return (
        f"Cannot write {target}: its folder {target.parent} takes no new files ({exc.strerror or exc}); give an output "
        "in another folder."
    )


@contextmanager
def written_whole(
    target: str | Path, *, locked: bool = False, sync: bool = False, replace: bool = True
) -> Iterator[Path]:
    """Where to write ``target`` so that it appears whole or not at all: a new hidden name beside it, renamed over
    it when the block ends (the old file stays whole until then), deleted if the block fails.

    Unless ``locked`` (the caller holds ``target``'s writer lock already, as a store's writer does), the lock is
    taken for the block, and with it the hidden files killed writers left are cleared; a second writer of the same
    file at the same moment gets ``StoreBusyError``. ``sync``: the file is flushed to disk before the rename (a
    GeoPackage written without SQLite's journal, a backup). ``replace=False``: a file at ``target`` is never
    replaced: the new one is linked into place, and ``FileExistsError`` raised if one is there (a backup).
    """
    target = Path(target)
    where = None
    folder_for(target)
    try:
        writer = None if locked else writer_lock(target, place=target.name)
        try:
            where = scratch_path(target)
            try:
                with named_as(where, target):
                    yield where
                if sync:
                    with open(where, "rb+") as f:
                        os.fsync(f.fileno())
                if replace:
                    os.replace(where, target)
                else:
                    put_in_place(where, target)  # fails, never overwrites, if a file is there
                if sync:
                    sync_to_disk(target.parent)  # the new name on disk too, not only the bytes
            finally:
                where.unlink(missing_ok=True)  # a failed write's, or the name a linked file had
        finally:
            if writer is not None:
                writer.release()
    except OSError as exc:
        if (why := _cannot_write(exc, target, where)) is None:
            raise
        raise LayerError(why) from exc


@contextmanager
def named_as(hidden: Path, shown: Path) -> Iterator[None]:
    """A refusal raised while the hidden file ``hidden`` is written names the file the user asked for, ``shown``:
    GDAL's errors named ``.results.1a2b.tmp.gpkg``, a file the user never saw and cannot find afterwards."""
    try:
        yield
    except LayerError as exc:
        if type(exc) is not LayerError or str(hidden) not in str(exc):
            raise
        raise LayerError(str(exc).replace(str(hidden), str(shown)), fix=exc.fix) from exc


def sync_to_disk(path: Path) -> None:
    """Flush a file's bytes, or a folder's list of names, to disk. After a rename, a power cut could otherwise
    bring back the old name (a store as it was before a publication reported done). Where a folder cannot be
    opened to be flushed (Windows), the rename is as durable as the system makes it."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except (IsADirectoryError, PermissionError):
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def put_in_place(written: Path, target: Path) -> None:
    """Give the whole file ``written`` the name ``target`` unless a file has it: ``FileExistsError`` then, and
    nothing replaced, not even a file that appeared a moment ago.

    A hard link does it on most disks. A disk without hard links (a FAT or exFAT USB stick, some network shares)
    refuses the link with "Operation not permitted", which read as "you may not write there": the file is then
    renamed with Linux's no-replace rename (``renameat2``, ``RENAME_NOREPLACE``), which such disks support. A disk
    that supports neither is told so, in one sentence.
    """
    try:
        os.link(written, target)
        return
    except OSError as exc:
        if exc.errno not in _NO_HARD_LINKS:
            raise
    if _renameat2 is None:
        raise LayerError(_NEITHER.format(target=target))
    if _renameat2(_AT_FDCWD, os.fsencode(written), _AT_FDCWD, os.fsencode(target), _RENAME_NOREPLACE) != 0:
        code = ctypes.get_errno()
        if code in (errno.EINVAL, errno.ENOSYS, *_NO_HARD_LINKS):  # the disk knows no such rename either
            raise LayerError(_NEITHER.format(target=target))
        raise OSError(code, os.strerror(code), str(target))  # FileExistsError where a file is there


# A hard link's refusals that mean the disk has none (EPERM from FAT and exFAT; EOPNOTSUPP from some shares).
_NO_HARD_LINKS = (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS)
_AT_FDCWD, _RENAME_NOREPLACE = -100, 1
try:
    _renameat2 = ctypes.CDLL(None, use_errno=True).renameat2  # glibc 2.28 and later
    _renameat2.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint)
except (AttributeError, OSError):
    _renameat2 = None
_NEITHER = (
    "Cannot write {target}: this disk supports neither hard links nor renaming a file without replacing another, "
    "and sewerplan never writes this file over one that may be there; write it to another disk."
)


# What the person writing can do about a disk's refusal; other errors are not theirs to fix, and are raised as they are.
_DISK_REFUSALS = {
    errno.ENOSPC: ("the disk is full", "free some space on it, or write the file to another disk"),
    errno.EDQUOT: ("the disk quota is used up", "free some space, or write the file to another disk"),
    errno.EACCES: ("you may not write there", "write the file to a folder you may write to"),
    errno.EPERM: ("you may not write there", "write the file to a folder you may write to"),
    errno.EROFS: ("the disk is read-only", "write the file to another disk"),
}


def _cannot_write(exc: OSError, target: Path, where: Path | None) -> str | None:
    """One sentence for a disk's refusal to take ``target`` (written at ``where``), or None for any other error.

    The refusal must be about this file (its name, its hidden name, its folder, its lock, or a handle with no
    name): a writer reading another file it may not read is not a full disk. It names the file the user gave, not
    the hidden name the failing write had.
    """
    if exc.errno not in _DISK_REFUSALS:
        return None
    ours = {str(target), str(target.parent), str(lock_file(target))} | ({str(where)} if where else set())
    if exc.filename is not None and str(exc.filename) not in ours:
        return None
    return disk_refusal(exc, target)


def disk_refusal(exc: OSError, place: str | Path | None = None) -> str | None:
    """A disk's refusal to take a file or folder (full, read-only, not the user's) in one sentence with what to do,
    naming ``place`` (else the error's own file name); None for any other error.

    Examples
    --------
    >>> print(disk_refusal(PermissionError(errno.EROFS, "Read-only file system", "/mnt/cd/out.csv")))
    Cannot write /mnt/cd/out.csv: the disk is read-only (Read-only file system); write the file to another disk.
    >>> disk_refusal(FileNotFoundError(errno.ENOENT, "No such file or directory", "x.csv")) is None
    True
    """
    if exc.errno not in _DISK_REFUSALS:
        return None
    what, fix = _DISK_REFUSALS[exc.errno]
    where = place if place is not None else exc.filename
    named = f" {where}" if where else ""
    return f"Cannot write{named}: {what} ({exc.strerror or os.strerror(exc.errno)}); {fix}."


def same_file(fd: int, path: Path) -> bool:
    """The open file ``fd`` is still the one at ``path`` (not one deleted, or replaced, since it was opened): a lock
    taken on a file its holder deleted meanwhile is a lock on nothing anyone else finds."""
    try:
        now = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (held.st_dev, held.st_ino) == (now.st_dev, now.st_ino)


def _holder(fd: int) -> dict:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        return json.loads(os.read(fd, 4096).decode() or "{}")
    except (OSError, ValueError):
        return {}


if os.name == "nt":  # pragma: no cover - Windows town halls
    import msvcrt

    def _lock(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_NBLCK, 1 << 30)

    def _unlock(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1 << 30)

else:
    import fcntl

    def _lock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)
