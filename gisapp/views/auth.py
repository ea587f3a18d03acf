"""Signing in and out (accounts are added with `sewerplan users add`)."""

from __future__ import annotations

from flask import Blueprint, current_app, redirect, render_template, request, session, url_for

from layers.users import check_user

bp = Blueprint("auth", __name__)


@bp.route("/login", methods=["GET", "POST"])
def login():
    error = None
    if request.method == "POST":
        name = request.form.get("name", "")
        if check_user(current_app.config["USERS_DB"], name, request.form.get("password", "")):
            session.clear()
            session["user"] = name
            target = request.args.get("next", "")
            return redirect(target if target.startswith("/") and not target.startswith("//") else url_for("map.index"))
        error = "Wrong name or password."
    return render_template("auth/login.html", error=error), (401 if error else 200)


@bp.post("/logout")
def logout():
    session.clear()
    return redirect(url_for("auth.login"))
