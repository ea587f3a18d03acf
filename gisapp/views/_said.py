"""What a form's action did, said once on the page its redirect sends the clerk to, and on no other page.

Flask's ``flash`` keeps a sentence in the session until *any* page asks for it: when the redirect was not followed
(a script's POST, or the clerk opened another register page in a second tab first) the sentence showed on whichever
page came next, out of context, and a page asking for one category popped every other's with it. Here each
action's sentences are kept in the signed session under a random key of their own, and the redirect carries only
that key (``?said=KEY``): the page it lands on says them once, any other page says nothing. The sentences never
travel in the address, so a link with a made-up key (or ``?message=...``) still cannot put words on a page.
"""

from __future__ import annotations

import secrets

from flask import g, request, session

from gisapp.errors import without_server_folders

SESSION_KEY = "_said"
KEPT = 8  # sentences whose redirect was never followed are forgotten, oldest first, past this many actions


def say(**sentences: str | None) -> dict[str, str]:
    """Keep ``sentences`` (kind, such as ``message`` or ``error``, to text; empty ones left out) for the page the
    redirect goes to, each naming no folder of the server (``without_server_folders``); returns the query arguments
    to add to that redirect (none when there is nothing to say)."""
    # named by their files alone before they are kept: the session is a cookie the browser can read
    kept = {kind: without_server_folders(text) for kind, text in sentences.items() if text}
    if not kept:
        return {}
    key = secrets.token_urlsafe(9)
    pending = [entry for entry in session.get(SESSION_KEY, []) if entry[0] != key]
    session[SESSION_KEY] = [*pending, [key, kept]][-KEPT:]
    return {"said": key}


def heard(kind: str) -> str | None:
    """The ``kind`` sentence kept for the key this request's address carries, or None; the first call of a request
    takes the key's sentences out of the session, so a reload (or a second look) says nothing again."""
    if "_said" not in g:
        key = request.args.get("said")
        pending = session.get(SESSION_KEY, []) if key else []
        found = [entry for entry in pending if entry[0] == key]
        if found:
            session[SESSION_KEY] = [entry for entry in pending if entry[0] != key]
        g._said = found[0][1] if found else {}
    return g._said.get(kind)
