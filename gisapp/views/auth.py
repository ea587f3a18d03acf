"""Signing in and out (accounts are added with `sewerplan users add`).

Failed sign-ins are throttled per account name and per client address (``LOGIN_MAX_FAILURES``,
``LOGIN_MAX_FAILURES_PER_ADDRESS`` within ``LOGIN_LOCKOUT_MINUTES``): past the limit the page says until when
sign-in is locked, with HTTP 429. An unknown name is counted, hashed and answered exactly like a wrong password.
Signing out raises the account's session version, so the old cookie no longer works anywhere.
"""

from __future__ import annotations

import datetime as dt

from flask import Blueprint, current_app, g, redirect, render_template, request, session, url_for

from gisapp.security import local_path
from gisapp.users import (
    check_user,
    clear_failures,
    count_users,
    end_sessions,
    locked_until,
    record_failure,
    user_session,
)

bp = Blueprint("auth", __name__)


def _keys(name: str) -> tuple[str, str]:
    return f"name:{name.lower()}", f"addr:{request.remote_addr or 'unknown'}"


def _lockout_message(until: float) -> str:
    when = dt.datetime.fromtimestamp(until).astimezone()
    return (
        "Too many failed sign-ins for this name or from this computer. Sign-in is locked until "
        f"{when:%H:%M} ({when:%Z}, {when:%Y-%m-%d}); try again then, or ask a planner to reset your password."
    )


@bp.route("/login", methods=["GET", "POST"])
def login():
    error, status, headers = None, 200, {}
    if request.method == "POST":
        config = current_app.config
        db = config["USERS_DB"]
        name = request.form.get("name", "")
        account, address = _keys(name)
        until = locked_until(db, [account, address])
        if until is None:
            role = check_user(db, name, request.form.get("password", ""))
            found = user_session(db, name) if role else None
            if found is not None:
                clear_failures(db, account)
                session.clear()
                session["user"], session["ver"] = name, found[1]
                target = request.args.get("next", "")
                return redirect(target if local_path(target) else url_for("map.index"))
            until = record_failure(
                db,
                {account: config["LOGIN_MAX_FAILURES"], address: config["LOGIN_MAX_FAILURES_PER_ADDRESS"]},
                window_s=config["LOGIN_LOCKOUT_MINUTES"] * 60,
                lockout_s=config["LOGIN_LOCKOUT_MINUTES"] * 60,
            )
            error, status = "Wrong name or password.", 401
        if until is not None:
            error, status = _lockout_message(until), 429
            headers["Retry-After"] = str(max(1, int(until - dt.datetime.now().timestamp())))
    no_accounts = count_users(current_app.config["USERS_DB"]) == 0  # nobody can sign in: say how to add one
    return render_template("auth/login.html", error=error, no_accounts=no_accounts), status, headers


@bp.post("/logout")
def logout():
    if g.user and g.user != "local":
        end_sessions(current_app.config["USERS_DB"], g.user)
    session.clear()
    return redirect(url_for("auth.login"))
