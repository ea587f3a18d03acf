"""Accounts for the web app: names, roles and password hashes in a small SQLite file under ``instance/``.

Roles: ``viewer`` sees the map and results; ``planner`` also runs analyses, uploads data and issues notices.
Passwords are stored only as salted hashes (werkzeug's scrypt/pbkdf2). The file is created readable by its owner
only (0600): it holds the hashes.

Each account has a session version: a signed-in session carries the version it was issued under, and signing out
(or changing the password) raises it, so every cookie issued before stops working on the server side, even one
copied from the browser. A new account starts at a random version, not 0: an account removed and added again under
the same name (a seasonal clerk, a new "jsmith") would otherwise take back every cookie of the old one that was
never signed out, with the new account's role and no password (a tester).

Failed sign-ins are counted per account name and per client address in the same file, so the count survives a
restart and is shared by every server thread. Past the limit the name or address is locked until a stated time.
"""

from __future__ import annotations

import os
import re
import secrets
import sqlite3
import time
from contextlib import closing
from pathlib import Path

from werkzeug.security import check_password_hash, generate_password_hash

from layers.errors import LayerError

ROLES = ("viewer", "planner")
NAME = re.compile(r"^[A-Za-z0-9_.@-]{2,64}$")
# Accounts files whose tables are made, in this process (the schema is checked once, not on every request).
_READY: set[str] = set()
# Checked for names that have no account, so an unknown name costs the same hashing work as a known one.
_DUMMY_HASH: str | None = None


def create_private_file(path: str | Path) -> None:
    """Create ``path`` empty with mode 0600 if it does not exist, and make an existing one 0600 too.

    ``os.open`` with the mode makes the file private from its first byte (no window in which it is world-readable,
    as writing and then ``chmod``-ing has). Its folder is created 0700.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        pass
    else:
        os.close(fd)
    os.chmod(path, 0o600)


def _connect(path: str | Path) -> sqlite3.Connection:
    key = str(Path(path).resolve())
    if key in _READY and Path(key).exists():
        return sqlite3.connect(key, timeout=10)
    create_private_file(path)
    con = sqlite3.connect(key, timeout=10)
    _READY.add(key)
    con.execute(
        "CREATE TABLE IF NOT EXISTS users (name TEXT PRIMARY KEY, role TEXT NOT NULL, "
        "password_hash TEXT NOT NULL, created_at TEXT DEFAULT CURRENT_TIMESTAMP)"
    )
    columns = {row[1] for row in con.execute("PRAGMA table_info(users)")}
    if "session_version" not in columns:
        con.execute("ALTER TABLE users ADD COLUMN session_version INTEGER NOT NULL DEFAULT 0")
    con.execute(
        "CREATE TABLE IF NOT EXISTS login_failures (key TEXT PRIMARY KEY, failures INTEGER NOT NULL, "
        "window_start REAL NOT NULL, locked_until REAL)"
    )
    return con


def add_user(path: str | Path, name: str, role: str, password: str) -> None:
    """Add an account, or replace its role and password (which signs out its existing sessions)."""
    if not NAME.match(name):
        raise LayerError(f"{name!r} is not a user name: 2-64 letters, digits, _ . @ -.")
    if role not in ROLES:
        raise LayerError(f"Role {role!r} is not one of {', '.join(ROLES)}.")
    if len(password) < 8:
        raise LayerError("Passwords need at least 8 characters.")
    with closing(_connect(path)) as con, con:
        con.execute(
            "INSERT INTO users (name, role, password_hash, session_version) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(name) DO UPDATE SET role = excluded.role, password_hash = excluded.password_hash, "
            "session_version = users.session_version + 1",
            (name, role, generate_password_hash(password), secrets.randbits(62)),
        )


def remove_user(path: str | Path, name: str) -> int:
    """Delete an account (a clerk who has left): its sessions end with it, since every request looks its account up.
    Returns how many accounts are left; ``LayerError`` naming the accounts where there is none of that name."""
    if not Path(path).exists():
        raise LayerError(f"There is no accounts file {path}: no account was ever added there.")
    with closing(_connect(path)) as con, con:
        gone = con.execute("DELETE FROM users WHERE name = ?", (name,)).rowcount
        left = [row[0] for row in con.execute("SELECT name FROM users ORDER BY name")]
    if not gone:
        raise LayerError(
            f"There is no account named {name!r}"
            + (f": the accounts are {', '.join(left)}." if left else ": there are no accounts.")
        )
    return len(left)


def check_user(path: str | Path, name: str, password: str) -> str | None:
    """The user's role when the password matches, else None.

    A name with no account (or no accounts file) still has one password hash checked, against a dummy hash made
    the same way, so the answer takes as long for an unknown name as for a wrong password.
    """
    row = None
    if Path(path).exists():
        with closing(_connect(path)) as con:
            row = con.execute("SELECT role, password_hash FROM users WHERE name = ?", (name,)).fetchone()
    stored = row[1] if row is not None else _dummy_hash()
    matches = check_password_hash(stored, password)
    return row[0] if row is not None and matches else None


def _dummy_hash() -> str:
    global _DUMMY_HASH  # a constant, computed on first use (one hash takes about 0.1 s)
    if _DUMMY_HASH is None:
        _DUMMY_HASH = generate_password_hash(os.urandom(16).hex())
    return _DUMMY_HASH


def user_role(path: str | Path, name: str) -> str | None:
    if not Path(path).exists():
        return None
    with closing(_connect(path)) as con:
        row = con.execute("SELECT role FROM users WHERE name = ?", (name,)).fetchone()
    return None if row is None else row[0]


def user_session(path: str | Path, name: str) -> tuple[str, int] | None:
    """The account's role and current session version, or None when there is no such account."""
    if not Path(path).exists():
        return None
    with closing(_connect(path)) as con:
        row = con.execute("SELECT role, session_version FROM users WHERE name = ?", (name,)).fetchone()
    return None if row is None else (row[0], int(row[1]))


def end_sessions(path: str | Path, name: str) -> None:
    """Raise the account's session version: every session issued before stops working."""
    if not Path(path).exists():
        return
    with closing(_connect(path)) as con, con:
        con.execute("UPDATE users SET session_version = session_version + 1 WHERE name = ?", (name,))


def count_users(path: str | Path) -> int:
    if not Path(path).exists():
        return 0
    with closing(_connect(path)) as con:
        return int(con.execute("SELECT count(*) FROM users").fetchone()[0])


def list_users(path: str | Path) -> list[tuple[str, str]]:
    if not Path(path).exists():
        return []
    with closing(_connect(path)) as con:
        return [(r[0], r[1]) for r in con.execute("SELECT name, role FROM users ORDER BY name")]


def locked_until(path: str | Path, keys: list[str], *, now: float | None = None) -> float | None:
    """The latest time (epoch seconds) until which any of ``keys`` is locked, or None when none is."""
    now = time.time() if now is None else now
    with closing(_connect(path)) as con:
        marks = ",".join("?" * len(keys))
        row = con.execute(
            f"SELECT max(locked_until) FROM login_failures WHERE key IN ({marks}) AND locked_until > ?",
            (*keys, now),
        ).fetchone()
    return None if row is None or row[0] is None else float(row[0])


def record_failure(
    path: str | Path, limits: dict[str, int], *, window_s: float, lockout_s: float, now: float | None = None
) -> float | None:
    """Count one failed sign-in against each key (``{key: most failures allowed}``); lock a key past its limit.

    Failures older than ``window_s`` are forgotten. Returns the time until which a key is now locked, or None.
    """
    now = time.time() if now is None else now
    until = None
    with closing(_connect(path)) as con, con:
        for key, limit in limits.items():
            row = con.execute("SELECT failures, window_start FROM login_failures WHERE key = ?", (key,)).fetchone()
            failures, start = (1, now) if row is None or now - row[1] > window_s else (row[0] + 1, row[1])
            locked = now + lockout_s if failures >= limit else None
            if locked is not None:
                until = max(until or 0.0, locked)
                failures, start = 0, now  # the lockout starts a fresh count
            con.execute(
                "INSERT INTO login_failures (key, failures, window_start, locked_until) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(key) DO UPDATE SET failures = excluded.failures, window_start = excluded.window_start, "
                "locked_until = coalesce(excluded.locked_until, login_failures.locked_until)",
                (key, failures, start, locked),
            )
    return until


def clear_failures(path: str | Path, key: str) -> None:
    """Forget an account's failed sign-ins once it signs in (its address keeps its count)."""
    with closing(_connect(path)) as con, con:
        con.execute("DELETE FROM login_failures WHERE key = ?", (key,))
