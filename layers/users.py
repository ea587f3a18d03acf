"""Accounts for the web app: names, roles and password hashes in a small SQLite file under ``instance/``.

Roles: ``viewer`` sees the map and results; ``planner`` also runs analyses, uploads data and issues notices.
Passwords are stored only as salted hashes (werkzeug's scrypt/pbkdf2).
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from werkzeug.security import check_password_hash, generate_password_hash

from layers.errors import LayerError

ROLES = ("viewer", "planner")
NAME = re.compile(r"^[A-Za-z0-9_.@-]{2,64}$")


def _connect(path: str | Path) -> sqlite3.Connection:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(str(path))
    con.execute(
        "CREATE TABLE IF NOT EXISTS users (name TEXT PRIMARY KEY, role TEXT NOT NULL, "
        "password_hash TEXT NOT NULL, created_at TEXT DEFAULT CURRENT_TIMESTAMP)"
    )
    return con


def add_user(path: str | Path, name: str, role: str, password: str) -> None:
    """Add an account, or replace its role and password."""
    if not NAME.match(name):
        raise LayerError(f"{name!r} is not a user name: 2-64 letters, digits, _ . @ -.")
    if role not in ROLES:
        raise LayerError(f"Role {role!r} is not one of {', '.join(ROLES)}.")
    if len(password) < 8:
        raise LayerError("Passwords need at least 8 characters.")
    with _connect(path) as con:
        con.execute(
            "INSERT INTO users (name, role, password_hash) VALUES (?, ?, ?) ON CONFLICT(name) DO UPDATE "
            "SET role = excluded.role, password_hash = excluded.password_hash",
            (name, role, generate_password_hash(password)),
        )


def check_user(path: str | Path, name: str, password: str) -> str | None:
    """The user's role when the password matches, else None."""
    if not Path(path).exists():
        return None
    with _connect(path) as con:
        row = con.execute("SELECT role, password_hash FROM users WHERE name = ?", (name,)).fetchone()
    if row is None or not check_password_hash(row[1], password):
        return None
    return row[0]


def user_role(path: str | Path, name: str) -> str | None:
    if not Path(path).exists():
        return None
    with _connect(path) as con:
        row = con.execute("SELECT role FROM users WHERE name = ?", (name,)).fetchone()
    return None if row is None else row[0]


def count_users(path: str | Path) -> int:
    if not Path(path).exists():
        return 0
    with _connect(path) as con:
        return int(con.execute("SELECT count(*) FROM users").fetchone()[0])


def list_users(path: str | Path) -> list[tuple[str, str]]:
    if not Path(path).exists():
        return []
    with _connect(path) as con:
        return [(r[0], r[1]) for r in con.execute("SELECT name, role FROM users ORDER BY name")]
