"""Sessions, roles, CSRF tokens and response headers.

- An instance with no accounts, bound to 127.0.0.1, runs as one local planner (the demo) for requests from the
  computer itself, not those a reverse proxy passes on (``local_mode``). With accounts, every page needs a login;
  viewers see, planners run analyses and upload. ``sewerplan serve`` refuses to listen on any other address, or
  behind a trusted proxy, without an account.
- Every state-changing request (POST) carries the session's CSRF token, in the form field ``csrf_token`` or the
  ``X-CSRF-Token`` header.
- A request's body is read only after its session is known to be allowed there: an anonymous POST (other than the
  sign-in form, whose body is capped at ``LOGIN_MAX_BODY`` bytes) is sent to sign in, and a viewer's POST to a
  planner's page refused, before a byte of the body is parsed.
- A session is valid only while its account's session version (gisapp/users.py) is the one it was issued under:
  signing out ends it on the server, not only in the browser.
- Every response gets a Content-Security-Policy with a per-request nonce for the page's own inline script (the
  Folium map's), nosniff, frame-ancestors 'none' and a same-origin referrer policy.
"""

from __future__ import annotations

import functools
import hmac
import secrets
from urllib.parse import urlsplit

from flask import Flask, abort, current_app, g, redirect, request, session, url_for

from gisapp.users import count_users, user_session

LOCAL_USER = "local"
LOGIN_MAX_BODY = 64 * 1024
# a POST from a page whose session ended since (signed out in another tab), answered in JSON (``_not_signed_in``)
SIGNED_OUT = "You were signed out: sign in again (reload the page), then send this again. Nothing was done."


def init_app(app: Flask) -> None:
    @app.before_request
    def _identify():
        g.csp_nonce = secrets.token_urlsafe(16)
        g.user, g.role = current_user()
        if request.method == "POST":
            _refuse_before_reading_body()
        if request.method == "POST" and not app.config.get("WTF_CSRF_DISABLED"):
            sent = request.form.get("csrf_token") or request.headers.get("X-CSRF-Token", "")
            if not sent or not hmac.compare_digest(sent, csrf_token()):
                abort(400, description="The form's security token is missing or stale: reload the page and try again.")

    @app.after_request
    def _headers(response):
        nonce = getattr(g, "csp_nonce", "")
        response.headers.setdefault(
            "Content-Security-Policy",
            (
                f"default-src 'self'; script-src 'self' 'nonce-{nonce}'; style-src 'self' 'unsafe-inline'; "
                "img-src 'self' data: https://tile.openstreetmap.org; connect-src 'self'; object-src 'none'; "
                "base-uri 'self'; form-action 'self'; frame-ancestors 'none'"
            ),
        )
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "same-origin")
        response.headers.setdefault("X-Frame-Options", "DENY")
        # Pages and data hold owners' names and addresses: a browser keeps none of them, so Back after signing out on
        # a town hall's shared computer asks the server again (and is sent to sign in) instead of showing the
        # notice register from its cache. Only the app's own files (scripts, styles) and the offline tile are kept.
        if request.endpoint != "static" and "public" not in (response.headers.get("Cache-Control") or ""):
            response.headers["Cache-Control"] = "no-store"
        return response

    @app.context_processor
    def _template_values():
        return {
            "csrf_token": csrf_token,
            "csp_nonce": getattr(g, "csp_nonce", ""),
            "current_user": getattr(g, "user", None),
            "current_role": getattr(g, "role", None),
        }


# Headers a proxy adds to the requests it passes on; a browser on this computer sends none of them.
FORWARDED_HEADERS = ("Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Real-IP")
LOOPBACK_ADDRESSES = ("127.0.0.1", "::1")


def local_mode() -> bool:
    """No accounts, bound to the loopback address, and a request from this computer itself: one local planner, no
    login. A request a reverse proxy passed on (served on 127.0.0.1 behind nginx or Caddy, as docs/web.md
    advises) is another computer's: it came from the loopback address, and was let in as the local planner, owners'
    names and addresses and all, on a server whose accounts were not added yet."""
    if not current_app.config["LOCAL_MODE"] or request.remote_addr not in LOOPBACK_ADDRESSES:
        return False
    if any(name in request.headers for name in FORWARDED_HEADERS):
        return False
    return count_users(current_app.config["USERS_DB"]) == 0


def current_user() -> tuple[str | None, str | None]:
    """The signed-in user and role; a session issued under an older session version counts as signed out."""
    if local_mode():
        return LOCAL_USER, "planner"
    name = session.get("user")
    if not name:
        return None, None
    found = user_session(current_app.config["USERS_DB"], name)
    if found is None or session.get("ver") != found[1]:
        session.clear()
        return None, None
    return name, found[0]


def _refuse_before_reading_body() -> None:
    """Send an anonymous POST to sign in, and refuse a viewer's POST to a planner's view, without reading its body.

    Only the sign-in form takes a POST from nobody, and its body is capped small.
    """
    view = current_app.view_functions.get(request.endpoint or "")
    needed = getattr(view, "required_role", None)
    if needed is None:
        request.max_content_length = min(LOGIN_MAX_BODY, current_app.config.get("MAX_CONTENT_LENGTH") or LOGIN_MAX_BODY)
        return
    if g.user is None:
        _not_signed_in()
    if needed == "planner" and g.role != "planner":
        abort(403, description="Only planners may do this.")


def _not_signed_in():
    """To the sign-in page, and back afterwards to the page asked for, its query too (a "show on the map" link's
    ``?parcel=``). A form sent after the session ended (signed out in another tab) goes back to the page it was
    sent from, and the sign-in page says it was not saved: it came back to the form's address and "405 Method Not
    Allowed", the change lost without a word (a tester).

    Under ``/api/`` and ``/analysis/``, and for a JSON request, the answer is a 401 in JSON (``errors``), as the map's
    script reads every answer: the map's Run, a form posted by ``fetch``, was redirected to the sign-in page, which
    ``fetch`` followed, and the map said "The server answered 200 without a message". A POST is told the session
    ended, since its page was signed in when it was opened."""
    if request.path.startswith(("/api/", "/analysis/")) or request.is_json:
        if request.method in ("GET", "HEAD"):
            abort(401, description="Sign in first.")
        abort(401, description=SIGNED_OUT)
    if request.method in ("GET", "HEAD"):
        target = request.full_path.removesuffix("?")
        abort(redirect(url_for("auth.login", next=target)))
    came_from = urlsplit(request.referrer or "")
    page = came_from.path + (f"?{came_from.query}" if came_from.query else "")
    same_site = came_from.netloc == request.host and local_path(page)
    abort(redirect(url_for("auth.login", next=page if same_site else "/", unsaved=1)))


def csrf_token() -> str:
    if "csrf" not in session:
        session["csrf"] = secrets.token_urlsafe(32)
    return session["csrf"]


def requires(role: str = "viewer"):
    """Only signed-in users (any role, or planners) may use the view."""

    def decorate(view):
        @functools.wraps(view)
        def wrapped(*args, **kwargs):
            if g.user is None:
                _not_signed_in()
            if role == "planner" and g.role != "planner":
                abort(403, description="Only planners may do this.")
            return view(*args, **kwargs)

        wrapped.required_role = role  # read before the body is (_refuse_before_reading_body)
        return wrapped

    return decorate


def local_path(target: str) -> bool:
    r"""Whether ``target`` is a path on this site, safe to send a signed-in user back to.

    Browsers drop tabs and line breaks from a URL and read a backslash as a slash, so ``/\t/evil.example`` or
    ``/\\evil.example`` would leave the site: only a path of printable characters, starting with one slash, with
    no scheme or host, is taken.

    Examples
    --------
    >>> [local_path(t) for t in ("/map", "/notices?page=2", "//evil.example", "/\t/evil.example", "/\\x", "http://x")]
    [True, True, False, False, False, False]
    """
    from urllib.parse import urlsplit

    if not target.startswith("/") or target.startswith("//") or "\\" in target:
        return False
    if any(ord(c) < 0x21 or ord(c) == 0x7F for c in target):
        return False
    parts = urlsplit(target)
    return not parts.scheme and not parts.netloc
