"""Sign-in and sessions on a town-hall network (issue 11, findings 5 and 8): throttling, no timing oracle,
server-side sign-out, cookie attributes, private files, and no body read before the session is checked."""

from __future__ import annotations

import io
import stat
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

import gisapp.users as users
from gisapp import _secret_key
from gisapp.users import add_user
from tests.conftest import Auth, csrf, make_app


@pytest.fixture
def app(tmp_path):
    """The app with no store yet, and a planner and a viewer."""
    app = make_app(tmp_path / "none.gpkg", tmp_path)
    add_user(app.config["USERS_DB"], "pat", "planner", "planner-password")
    add_user(app.config["USERS_DB"], "vera", "viewer", "viewer-password")
    return app


def sign_in(client, name, password, address="10.0.0.1"):
    """Each attempt from a fresh client of its own, from ``address`` (the throttle counts names and addresses)."""
    return Auth(None, client).login(name, password, address=address)


def test_an_account_is_locked_after_repeated_failures_and_says_until_when(app):
    client = app.test_client()
    for _ in range(app.config["LOGIN_MAX_FAILURES"] - 1):
        assert sign_in(client, "pat", "wrong-guess").status_code == 401
    locked = sign_in(client, "pat", "wrong-guess")
    assert locked.status_code == 429 and int(locked.headers["Retry-After"]) > 0
    text = locked.get_data(as_text=True)
    assert "locked until" in text
    # even the right password is refused while locked, from another address too
    right = sign_in(app.test_client(), "pat", "planner-password", address="10.0.0.2")
    assert right.status_code == 429 and "locked until" in right.get_data(as_text=True)
    # another account is not locked by pat's failures
    assert sign_in(app.test_client(), "vera", "viewer-password", address="10.0.0.3").status_code == 302


def test_an_address_is_locked_after_failures_across_names(app):
    client = app.test_client()
    limit = app.config["LOGIN_MAX_FAILURES_PER_ADDRESS"]
    statuses = [sign_in(client, f"guess{k}", "wrong-guess", address="10.9.9.9").status_code for k in range(limit)]
    assert statuses[:-1] == [401] * (limit - 1) and statuses[-1] == 429
    refused = sign_in(client, "pat", "planner-password", address="10.9.9.9")
    assert refused.status_code == 429
    assert sign_in(app.test_client(), "pat", "planner-password", address="10.8.8.8").status_code == 302


def test_a_successful_sign_in_clears_the_account_count(app):
    client = app.test_client()
    for _ in range(app.config["LOGIN_MAX_FAILURES"] - 1):
        sign_in(client, "pat", "wrong-guess")
    assert sign_in(client, "pat", "planner-password").status_code == 302
    client = app.test_client()
    for _ in range(app.config["LOGIN_MAX_FAILURES"] - 1):
        assert sign_in(client, "pat", "wrong-guess").status_code == 401


def test_unknown_names_cost_the_same_hashing_as_known_ones(app, monkeypatch):
    """No timing oracle: one password hash is checked whether or not the name has an account."""
    calls = []
    real = users.check_password_hash
    monkeypatch.setattr(users, "check_password_hash", lambda h, p: calls.append(h) or real(h, p))
    assert sign_in(app.test_client(), "pat", "wrong-guess").status_code == 401
    assert sign_in(app.test_client(), "nobody-here", "wrong-guess", address="10.0.0.9").status_code == 401
    assert len(calls) == 2
    method = [h.split("$", 1)[0] for h in calls]
    assert method[0] == method[1]  # the same hash function and cost for the dummy as for a real account


def test_a_cookie_copied_before_sign_out_no_longer_works(app):
    client = app.test_client()
    assert sign_in(client, "pat", "planner-password").status_code == 302
    assert client.get("/data/upload").status_code == 200
    cookie = client.get_cookie("session").value
    token = csrf(client)
    assert client.post("/logout", data={"csrf_token": token}).status_code == 302
    thief = app.test_client()
    thief.set_cookie("session", cookie)
    assert thief.get("/data/upload").status_code == 302
    assert thief.get("/api/summary").status_code == 401


def test_changing_a_password_ends_old_sessions(app):
    client = app.test_client()
    sign_in(client, "vera", "viewer-password")
    assert client.get("/api/summary").status_code != 401
    add_user(app.config["USERS_DB"], "vera", "viewer", "a-new-password")
    assert client.get("/api/summary").status_code == 401


def test_session_cookie_is_samesite_lax_and_httponly(app):
    client = app.test_client()
    response = sign_in(client, "pat", "planner-password")
    cookie = response.headers["Set-Cookie"]
    assert "SameSite=Lax" in cookie and "HttpOnly" in cookie


def test_users_file_and_secret_key_are_private(tmp_path):
    old = __import__("os").umask(0o022)
    try:
        add_user(tmp_path / "instance" / "users.sqlite", "pat", "planner", "planner-password")
        _secret_key(tmp_path / "other")
    finally:
        __import__("os").umask(old)
    for path in (tmp_path / "instance" / "users.sqlite", tmp_path / "other" / "secret_key"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


class CountingStream(io.BytesIO):
    """A request body that counts the bytes the server reads from it."""

    def __init__(self, data: bytes):
        super().__init__(data)
        self.consumed = 0

    def read(self, size=-1):
        chunk = super().read(size)
        self.consumed += len(chunk)
        return chunk

    def readline(self, size=-1):
        chunk = super().readline(size)
        self.consumed += len(chunk)
        return chunk


def big_multipart(megabytes: int) -> tuple[bytes, str]:
    boundary = "sewerplanboundary"
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="csrf_token"\r\n\r\nx\r\n'
            f'--{boundary}\r\nContent-Disposition: form-data; name="dataset"; filename="town.zip"\r\n'
            "Content-Type: application/zip\r\n\r\n"
        ).encode()
        + b"\0" * (megabytes * 1024 * 1024)
        + f"\r\n--{boundary}--\r\n".encode()
    )
    return body, f"multipart/form-data; boundary={boundary}"


@pytest.mark.parametrize("who", ["anonymous", "viewer"])
def test_the_session_is_checked_before_the_body_is_read(app, who):
    client = app.test_client()
    if who == "viewer":
        sign_in(client, "vera", "viewer-password")
    body, content_type = big_multipart(20)
    stream = CountingStream(body)
    response = client.post("/data/upload", input_stream=stream, content_type=content_type, content_length=len(body))
    assert response.status_code == (302 if who == "anonymous" else 403)
    assert stream.consumed == 0


def test_the_sign_in_form_takes_only_a_small_body(app):
    body, content_type = big_multipart(2)
    response = app.test_client().post(
        "/login", input_stream=io.BytesIO(body), content_type=content_type, content_length=len(body)
    )
    assert response.status_code == 413


def test_serve_on_a_port_in_use_says_so_and_how_to_pick_another(tmp_path):
    """`make demo` with port 5000 taken (a demo still running in another window) ended in waitress's traceback,
    "OSError: [Errno 98] Address already in use"; it says what is wrong and the option that fixes it."""
    import os
    import socket
    import subprocess
    import sys

    from layers.sample import sample_town
    from layers.write import write_layers

    store = tmp_path / "town.gpkg"
    write_layers(str(store), sample_town(60))
    env = os.environ | {"SEWERPLAN_INSTANCE": str(tmp_path / "instance")}
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        command = [sys.executable, "-m", "gisapp.cli", "serve", "--store", str(store), "--port", str(port)]
        done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    said = " ".join(done.stderr.split())
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert f"Error: Port {port} on 127.0.0.1 is in use" in said and f"--port {port + 1} (make demo PORT=" in said
    assert "Serving" not in done.stdout


def test_serve_runs_waitress_with_no_version_in_the_server_header(tmp_path):
    """`sewerplan serve` as a user starts it: a production server, its thread count, no version advertised."""
    import os
    import socket
    import subprocess
    import sys
    import time
    import urllib.request

    from layers.sample import sample_town
    from layers.write import write_layers

    store = tmp_path / "town.gpkg"
    write_layers(str(store), sample_town(60))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = os.environ | {"SEWERPLAN_INSTANCE": str(tmp_path / "instance")}
    command = [sys.executable, "-m", "gisapp.cli", "serve", "--store", str(store), "--port", str(port)]
    proc = subprocess.Popen(
        [*command, "--threads", "3", "--users-db", str(tmp_path / "users.sqlite")],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        for _ in range(300):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as response:
                    headers, status = response.headers, response.status
                break
            except OSError:
                time.sleep(0.1)
        else:
            raise AssertionError("the server did not start")
        assert status == 200
        assert headers["Server"] == "sewerplan" and not any(c.isdigit() for c in headers["Server"])
        # A request a reverse proxy on this computer passed on (its header reaches the app: waitress keeps it here)
        # is not the local planner's: it is sent to sign in.
        import http.client

        passed_on = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        passed_on.request("GET", "/notices", headers={"X-Forwarded-For": "203.0.113.9"})
        answer = passed_on.getresponse()
        assert answer.status == 302 and "/login" in answer.getheader("Location", "")
        passed_on.close()
        secret = tmp_path / "instance" / "secret_key"
        assert stat.S_IMODE(secret.stat().st_mode) == 0o600
        # Everything the server writes is the service account's alone: its folders 0700 (and files 0600, umask 077).
        for folder in ("uploads", "notices"):
            assert stat.S_IMODE((tmp_path / "instance" / folder).stat().st_mode) == 0o700, folder
    finally:
        proc.terminate()
        output = proc.communicate(timeout=20)[0]
    assert "3 threads" in output and "development server" not in output.lower()


@pytest.mark.parametrize(
    ("target", "lands_on"),
    [
        ("/notices?page=2", "/notices?page=2"),
        ("/%09/evil.example", "/"),
        ("/%0a/evil.example", "/"),
        ("/%0d/x", "/"),
        ("//evil.example", "/"),
        ("/%5cevil.example", "/"),
        ("https://evil.example/", "/"),
    ],
)
def test_after_sign_in_only_a_path_on_this_site_is_followed(app, target, lands_on):
    """A ``next`` a browser would read as another host (a tab or line break dropped, a backslash) goes to the map."""
    client = app.test_client()
    Auth(app, client).csrf()
    response = client.post(
        f"/login?next={target}",
        data={"name": "pat", "password": "planner-password", "csrf_token": csrf(client)},
        environ_base={"REMOTE_ADDR": "10.0.0.9"},
    )
    assert response.status_code == 302
    assert response.headers["Location"] == lands_on


def test_signing_in_goes_back_to_the_page_asked_for_with_its_query(app):
    """A "show on the map" link (``/?parcel=1.1-1-5``) opened signed out landed, after signing in, on the whole town:
    the sign-in kept the path and dropped the query (a tester)."""
    client = app.test_client()
    asked = client.get("/notices?q=1.1-1-5&status=open", environ_base={"REMOTE_ADDR": "10.0.0.9"})
    assert asked.status_code == 302
    target = parse_qs(urlsplit(asked.headers["Location"]).query)["next"][0]
    assert target == "/notices?q=1.1-1-5&status=open"
    Auth(app, client).csrf()
    done = client.post(
        asked.headers["Location"],
        data={"name": "pat", "password": "planner-password", "csrf_token": csrf(client)},
        environ_base={"REMOTE_ADDR": "10.0.0.9"},
    )
    assert done.headers["Location"] == "/notices?q=1.1-1-5&status=open"


def test_a_form_sent_after_signing_out_says_it_was_not_saved_and_goes_back_to_its_page(app):
    """Signed out in another tab, a Save on the register went to the sign-in page, then to the form's own address:
    "405 Method Not Allowed", and the extension was never recorded, without a word (a tester)."""
    client = app.test_client()
    sent = client.post(
        "/notices/mark",
        data={"parcel_id": "1.1-1-9", "status": "extended"},
        headers={"Referer": "http://localhost/notices?q=1.1-1-9"},
        environ_base={"REMOTE_ADDR": "10.0.0.9"},
    )
    assert sent.status_code == 302
    asked = parse_qs(urlsplit(sent.headers["Location"]).query)
    assert asked["next"] == ["/notices?q=1.1-1-9"] and asked["unsaved"] == ["1"]
    page = client.get(sent.headers["Location"], environ_base={"REMOTE_ADDR": "10.0.0.9"}).get_data(as_text=True)
    assert "You were signed out, so what you last sent was not" in page
    elsewhere = client.post(
        "/notices/mark", headers={"Referer": "https://evil.example/notices"}, environ_base={"REMOTE_ADDR": "10.0.0.9"}
    )
    assert parse_qs(urlsplit(elsewhere.headers["Location"]).query)["next"] == ["/"]


def test_the_instance_folder_setting_moves_uploads_notices_and_accounts_too(tmp_path, monkeypatch):
    """SEWERPLAN_INSTANCE moves every folder left at its default, not only the secret key."""
    from gisapp import create_app

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SEWERPLAN_INSTANCE", str(tmp_path / "service"))
    app = create_app()
    service = (tmp_path / "service").resolve()
    for name, leaf in (("UPLOAD_FOLDER", "uploads"), ("NOTICES_FOLDER", "notices"), ("USERS_DB", "users.sqlite")):
        assert Path(app.config[name]) == service / leaf, name
    assert Path(app.config["STORE"]) == service / "sewerplan.gpkg"
    assert (service / "secret_key").exists() and not (tmp_path / "instance").exists()


def test_the_instance_folder_is_the_one_the_store_and_accounts_are_in(tmp_path, monkeypatch):
    """Without SEWERPLAN_INSTANCE the instance folder is instance/ where sewerplan runs, as the store's, the accounts'
    and the uploads' defaults are: an installed sewerplan read config.py and kept its secret key beside the package
    (<prefix>/var/gisapp-instance), so the instance/config.py beside the store (TRUSTED_PROXY, ...) was ignored."""
    from gisapp import create_app

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SEWERPLAN_INSTANCE", raising=False)
    (tmp_path / "instance").mkdir()
    (tmp_path / "instance" / "config.py").write_text("SERVER_THREADS = 3\n")
    app = create_app()
    assert Path(app.instance_path) == (tmp_path / "instance").resolve()
    assert app.config["SERVER_THREADS"] == 3
    assert (tmp_path / "instance" / "secret_key").exists()
    assert Path(app.config["USERS_DB"]).resolve().parent == Path(app.instance_path)


# --- no accounts: only a browser on the server itself is the local planner ------------------------------------------


@pytest.mark.parametrize(
    "passed_on",
    [
        {"headers": {"X-Forwarded-For": "203.0.113.9"}},  # nginx or Caddy on the same computer, no TRUSTED_PROXY
        {"headers": {"Forwarded": "for=203.0.113.9"}},
        {"headers": {"X-Real-IP": "203.0.113.9"}},
        {"environ_base": {"REMOTE_ADDR": "203.0.113.9"}},  # TRUSTED_PROXY set: ProxyFix gives the client's address
    ],
)
def test_a_request_a_reverse_proxy_passes_on_is_not_the_local_planner(tmp_path, passed_on):
    """Served on 127.0.0.1 behind a reverse proxy (as docs/web.md advises) before any account was added, every
    request reached the app from 127.0.0.1 and was let in as the local planner: the map, the owners' mailing
    lists, uploads and notices, to anyone who could reach the proxy. Only a browser on the server itself is."""
    app = make_app(tmp_path / "none.gpkg", tmp_path)
    client = app.test_client()
    assert client.get("/notices").status_code == 200  # the demo: a browser on this computer
    refused = client.get("/notices", **passed_on)
    assert refused.status_code == 302 and "/login" in refused.headers["Location"]
    page = client.get("/login", **passed_on).get_data(as_text=True)
    assert "This server has no accounts yet, so nobody can sign in" in page
    assert "sewerplan users add NAME --role planner" in page


def test_serve_behind_a_trusted_proxy_refuses_to_start_without_an_account(tmp_path):
    """instance/config.py names the proxy (TRUSTED_PROXY): its requests are other computers', so `sewerplan serve`
    on 127.0.0.1 refuses to start without an account, as it does on any other address."""
    import os
    import subprocess
    import sys

    from layers.sample import sample_town
    from layers.write import write_layers

    store = tmp_path / "town.gpkg"
    write_layers(str(store), sample_town(60))
    instance = tmp_path / "instance"
    instance.mkdir()
    (instance / "config.py").write_text('TRUSTED_PROXY = "127.0.0.1"\n')
    env = os.environ | {"SEWERPLAN_INSTANCE": str(instance)}
    command = [sys.executable, "-m", "gisapp.cli", "serve", "--store", str(store), "--port", "1"]
    done = subprocess.run(
        [*command, "--users-db", str(tmp_path / "users.sqlite")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    said = " ".join(done.stderr.split())
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    assert "Serving behind the reverse proxy at 127.0.0.1 exposes owners' names and addresses" in said
    assert "sewerplan users add NAME --role planner" in said


def test_an_account_removed_can_no_longer_sign_in_and_its_session_ends(app):
    """A clerk who left: `sewerplan users add` could change an account but nothing could take it away."""
    from tests.conftest import Runner

    client = app.test_client()
    Auth(app, client).login("vera", "viewer-password")
    assert client.get("/notices").status_code == 200
    db = app.config["USERS_DB"]
    done = Runner().invoke("users", "remove", "vera", "--users-db", db, ok=True)
    assert "vera can no longer sign in" in done.output and "No accounts are left" not in done.output
    assert client.get("/notices").status_code == 302  # the open session ended at its next page
    assert sign_in(app.test_client(), "vera", "viewer-password").status_code == 401
    unknown = Runner().invoke("users", "remove", "vera", "--users-db", db)
    assert unknown.exit_code != 0 and "There is no account named 'vera': the accounts are pat." in unknown.output
    last = Runner().invoke("users", "remove", "pat", "--users-db", db, ok=True)
    assert "No accounts are left" in last.output


def test_an_account_added_again_under_a_removed_name_does_not_take_back_the_old_cookies(app):
    """A viewer removed, then a planner added under the same name: the old account's cookie, never signed out, was
    taken back with the planner's role and no password (both started at session version 0; a tester)."""
    from tests.conftest import Runner

    old = app.test_client()
    Auth(app, old).login("vera", "viewer-password")
    db = app.config["USERS_DB"]
    Runner().invoke("users", "remove", "vera", "--users-db", db, ok=True)
    assert old.get("/notices").status_code == 302
    Runner().invoke(
        "users", "add", "vera", "--role", "planner", "--password", "brand-new-456", "--users-db", db, ok=True
    )
    answer = old.get("/data/upload")
    assert answer.status_code == 302 and "/login" in answer.headers["Location"]
    fresh = app.test_client()
    assert sign_in(fresh, "vera", "brand-new-456").status_code == 302
    assert fresh.get("/data/upload").status_code == 200


def test_pages_and_data_are_not_kept_by_the_browser_but_its_own_files_are(store, tmp_path):
    app = make_app(store, tmp_path)
    add_user(app.config["USERS_DB"], "pat", "planner", "planner-password")
    client = app.test_client()
    assert sign_in(client, "pat", "planner-password").status_code == 302
    for path in ("/", "/notices", "/summary", "/api/summary", "/api/results.csv?status=mandated", "/login"):
        answer = client.get(path)
        assert answer.status_code == 200 and answer.headers["Cache-Control"] == "no-store", path
    with client.get("/static/map.js") as own:  # the file's response closed, as a server closes it
        assert own.status_code == 200 and "no-store" not in own.headers.get("Cache-Control", ""), own.headers
    assert "public" in client.get("/tiles/blank/1/0/0.png").headers["Cache-Control"]


def test_back_after_signing_out_shows_the_sign_in_page_not_the_register(store, tmp_path, browser):
    """On a town hall's shared computer, Back after "Sign out" showed the notices page from the browser's cache,
    owners' names and all (a tester, in Chromium): pages are sent with no-store, so Back asks the server again."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from tests.conftest import serving

    app = make_app(store, tmp_path)
    add_user(app.config["USERS_DB"], "pat", "planner", "planner-password")
    with serving(app) as base:
        browser.get(f"{base}/login?next=/notices")
        browser.find_element(By.NAME, "name").send_keys("pat")
        browser.find_element(By.NAME, "password").send_keys("planner-password")
        browser.find_element(By.CSS_SELECTOR, "form button").click()
        WebDriverWait(browser, 30).until(lambda d: d.current_url.endswith("/notices"))
        assert "Sign out" in browser.find_element(By.TAG_NAME, "body").text
        browser.find_element(By.XPATH, "//button[text()='Sign out']").click()
        WebDriverWait(browser, 30).until(lambda d: "/notices" not in d.current_url)
        browser.back()
        WebDriverWait(browser, 30).until(lambda d: "/login" in d.current_url)
        shown = browser.find_element(By.TAG_NAME, "body").text
        assert "Sign out" not in shown and "Register (" not in shown


@pytest.mark.parametrize(
    ("route", "sent"),
    [
        ("/analysis/run", {"data": {"profile": "fort-plain", "workspace": "town"}}),  # the map's Run: a form, by fetch
        ("/plans/evaluate", {"json": {"name": "Oak", "diameter_in": 8}}),
        ("/plans/line", {"json": {"text": "{}", "name": "main.geojson"}}),
    ],
)
def test_the_maps_posts_after_signing_out_elsewhere_are_told_so_in_json(app, route, sent):
    """Run pressed on the map in a tab after signing out in another was redirected to the sign-in page, which fetch
    followed: "Could not start. The server answered 200 without a message". Every post the map's script sends is
    answered 401 in JSON, saying the session ended, as ``/api/`` is."""
    client = app.test_client()
    Auth(app, client).login(address="10.0.0.9")
    token = csrf(client)
    client.post("/logout", data={"csrf_token": token}, environ_base={"REMOTE_ADDR": "10.0.0.9"})
    answer = client.post(route, headers={"X-CSRF-Token": token}, environ_base={"REMOTE_ADDR": "10.0.0.9"}, **sent)
    assert answer.status_code == 401 and answer.mimetype == "application/json"
    assert answer.get_json()["error"]["message"].startswith("You were signed out: sign in again")
    read = client.get("/api/summary", environ_base={"REMOTE_ADDR": "10.0.0.9"})  # a read is asked to sign in
    assert read.status_code == 401 and read.get_json()["error"]["message"] == "Sign in first."


def test_run_on_the_map_after_signing_out_in_another_tab_says_so_in_chromium(store, tmp_path, browser):
    """The tester's two tabs: the map in tab A, "Sign out" in tab B, then Run in tab A."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from tests.conftest import serving
    from tests.test_web import wait_for

    app = make_app(store, tmp_path)
    add_user(app.config["USERS_DB"], "pat", "planner", "planner-password")
    with serving(app) as base:
        browser.get(f"{base}/login?next=/")
        browser.find_element(By.NAME, "name").send_keys("pat")
        browser.find_element(By.NAME, "password").send_keys("planner-password")
        browser.find_element(By.CSS_SELECTOR, "form button").click()
        wait_for(browser, lambda: browser.execute_script("return document.body.dataset.loaded"), 30)
        tab_a = browser.current_window_handle
        browser.switch_to.new_window("tab")
        browser.get(f"{base}/notices")
        browser.find_element(By.XPATH, "//button[text()='Sign out']").click()
        WebDriverWait(browser, 30).until(lambda d: "/login" in d.current_url)
        browser.switch_to.window(tab_a)
        browser.execute_script("document.querySelector('#run-form button[type=submit]').click()")
        said = wait_for(browser, lambda: (t := browser.find_element(By.ID, "job").text) not in ("", "Starting…") and t)
        assert said.startswith("You were signed out: sign in again"), said
        assert "without a message" not in said
        assert browser.find_element(By.CSS_SELECTOR, "#run-form button[type=submit]").is_enabled()


def test_an_error_page_names_files_not_the_servers_folders(store, tmp_path):
    """A run's failure named "/srv/.../instance/uploads/TOKEN/store.gpkg does not exist" to a web user (a tester):
    every error page and JSON error names the file alone, with a sentence's full stop kept."""
    from gisapp.errors import _respond

    app = make_app(store, tmp_path)
    upload = f"{app.config['UPLOAD_FOLDER']}/acShDKi1/store.gpkg"
    told = f"{upload} does not exist: check its name. The store {app.config['STORE']} was kept."
    with app.test_request_context("/api/summary"):
        body, status = _respond(400, "Cannot use this input", told)
        said = body.get_json()["error"]["message"]
    kept = Path(app.config["STORE"]).name
    assert status == 400 and said == f"store.gpkg does not exist: check its name. The store {kept} was kept.", said
    with app.test_request_context("/data/upload"):
        page, _ = _respond(400, "Cannot use this input", told)
    assert app.instance_path not in page and str(tmp_path) not in page and "store.gpkg does not exist" in page
