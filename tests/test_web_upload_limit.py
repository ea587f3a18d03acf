"""An upload over the size limit gets the product's own page, wherever it is refused: in the browser before it is
sent (static/upload.js), by Flask's 413 handler, and under `sewerplan serve` (waitress lets a body a little over
the app's limit through to that handler instead of answering in bare text)."""

from __future__ import annotations

import html
import http.client
import http.cookiejar
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from gisapp.cli import server_body_limit
from gisapp.errors import upload_too_large
from layers.sample import sample_town
from layers.write import write_layers
from tests.conftest import csrf, make_app, serving
from tests.test_web import shot, wait_for

LIMIT = 4096  # bytes: a tiny MAX_CONTENT_LENGTH, so a test does not send 200 MB


def multipart(size: int, token: str = "x", boundary: str = "sewerplanboundary") -> tuple[bytes, str]:
    """An upload form's body as a browser sends it: the CSRF token and a ``size``-byte zip."""
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="csrf_token"\r\n\r\n{token}\r\n'
            f'--{boundary}\r\nContent-Disposition: form-data; name="dataset"; filename="town.zip"\r\n'
            "Content-Type: application/zip\r\n\r\n"
        ).encode()
        + b"\0" * size
        + f"\r\n--{boundary}--\r\n".encode()
    )
    return body, f"multipart/form-data; boundary={boundary}"


def message_of(page: str) -> str:
    """The error page's sentence, as the planner reads it."""
    found = re.search(r'<p id="error-message">(.*?)</p>', page, re.S)
    assert found, page[:500]
    return html.unescape(found.group(1))


def test_the_413_page_says_how_large_the_upload_was_the_limit_and_what_to_do(store, tmp_path):
    app = make_app(store, tmp_path, MAX_CONTENT_LENGTH=LIMIT)
    client = app.test_client()
    body, content_type = multipart(3 * LIMIT, token=csrf(client))
    refused = client.post("/data/upload", data=body, content_type=content_type)
    assert refused.status_code == 413 and refused.mimetype == "text/html"
    page = refused.get_data(as_text=True)
    assert "Upload too large" in page
    sentence = message_of(page)
    assert sentence == upload_too_large(LIMIT, len(body))
    assert sentence.startswith("The upload is 12.3 KB; this server accepts at most 4 KB.")
    assert "Add a layer to this upload" in sentence and "sewerplan analyze" in sentence
    assert not list((tmp_path / "uploads").glob("*/meta.json"))  # nothing was kept
    # The upload form carries that limit and sentence for its script: one source, the app's MAX_CONTENT_LENGTH.
    form = client.get("/data/upload").get_data(as_text=True)
    assert f'data-max-bytes="{LIMIT}"' in form and "At most\n4 KB." in form
    said = re.search(r'data-too-large="([^"]*)"', form).group(1)
    assert html.unescape(said) == upload_too_large(LIMIT, "{size}")
    assert "upload.js" in form


def test_the_413_answer_to_json_is_json(store, tmp_path):
    """A request that sends JSON gets the same sentence in the API's error shape."""
    app = make_app(store, tmp_path, MAX_CONTENT_LENGTH=LIMIT)
    client = app.test_client()
    token = csrf(client)
    sent = client.post(
        "/plans/evaluate",
        data=b"{" + b" " * (2 * LIMIT - 2) + b"}",
        content_type="application/json",
        headers={"X-CSRF-Token": token},
    )
    assert sent.status_code == 413
    error = sent.get_json()["error"]
    assert error["status"] == 413 and error["message"].startswith("The upload is 8 KB; this server accepts at most")


@pytest.mark.browser
def test_a_file_over_the_limit_is_refused_in_chromium_before_it_is_sent(store, browser, tmp_path):
    """The form says what the server would, and nothing is posted; a file within the limit clears the message."""
    from selenium.webdriver.common.by import By

    app = make_app(store, tmp_path, MAX_CONTENT_LENGTH=LIMIT)
    posted: list[str] = []

    @app.before_request
    def _count_posts():
        from flask import request

        if request.method == "POST":
            posted.append(request.path)

    big, small = tmp_path / "town.zip", tmp_path / "small.zip"
    big.write_bytes(b"PK" + b"\0" * 10_238)  # 10,240 bytes: 10 KB, over the 4 KB limit
    small.write_bytes(b"PK" + b"\0" * 98)
    with serving(app) as url:
        browser.get(url + "/data/upload")
        note = browser.find_element(By.CSS_SELECTOR, "#upload-form .too-large")
        assert not note.is_displayed()
        browser.find_element(By.NAME, "dataset").send_keys(str(big))
        wait_for(browser, note.is_displayed)
        assert note.text == upload_too_large(LIMIT, big.stat().st_size)
        assert note.text.startswith("The upload is 10 KB; this server accepts at most 4 KB.")
        shot(browser, "upload-too-large")
        browser.find_element(By.CSS_SELECTOR, "#upload-form button").click()
        # Still the same page, the message still there, and no request was sent (pressing Upload again, too).
        browser.find_element(By.CSS_SELECTOR, "#upload-form button").click()
        assert browser.current_url == url + "/data/upload" and note.is_displayed()
        assert posted == []
        # A file within the limit clears the message and is sent as usual (refused there for its content).
        browser.find_element(By.NAME, "dataset").send_keys(str(small))
        wait_for(browser, lambda: not note.is_displayed())
        browser.find_element(By.CSS_SELECTOR, "#upload-form button").click()
        wait_for(browser, lambda: posted == ["/data/upload"])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_sewerplan_serve_answers_a_body_over_the_limit_with_its_page_not_waitress_text(tmp_path):
    """The real server: a body between the app's limit and waitress's gets the 413 page; only a body past
    waitress's own cap (a quarter more, at least 1 MB) is still refused by waitress, before it is received."""
    store = tmp_path / "town.gpkg"
    write_layers(str(store), sample_town(60))
    instance = tmp_path / "instance"
    instance.mkdir()
    (instance / "config.py").write_text(f"MAX_CONTENT_LENGTH = {LIMIT}\n")
    port = free_port()
    env = os.environ | {"SEWERPLAN_INSTANCE": str(instance)}
    command = [sys.executable, "-m", "gisapp.cli", "serve", "--store", str(store), "--port", str(port)]
    proc = subprocess.Popen(
        [*command, "--users-db", str(tmp_path / "users.sqlite")],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    cookies = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(cookies))
    try:
        for _ in range(300):
            try:
                with opener.open(url + "/data/upload", timeout=5) as response:
                    form = response.read().decode()
                break
            except OSError:
                time.sleep(0.1)
        else:
            raise AssertionError("the server did not start")
        token = re.search(r'name="csrf_token" value="([^"]+)"', form).group(1)
        between = 100_000
        assert LIMIT < between < server_body_limit(LIMIT)
        body, content_type = multipart(between, token=token)
        request = urllib.request.Request(
            url + "/data/upload", data=body, headers={"Content-Type": content_type}, method="POST"
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            opener.open(request, timeout=30)
        answer = refused.value
        assert answer.code == 413 and answer.headers.get_content_type() == "text/html"
        page = answer.read().decode()
        assert "Upload too large" in page and "exceeds max_body" not in page
        assert message_of(page) == upload_too_large(LIMIT, len(body))
        # Past waitress's cap the body is refused from its Content-Length alone, before a byte of it is sent.
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.putrequest("POST", "/data/upload")
        conn.putheader("Content-Type", content_type)
        conn.putheader("Content-Length", str(server_body_limit(LIMIT) + 1))
        conn.endheaders()
        bare = conn.getresponse()
        assert bare.status == 413 and "exceeds max_body" in bare.read().decode()
        conn.close()
    finally:
        proc.terminate()
        output = proc.communicate(timeout=20)[0]
    assert "Serving" in output, output


def test_the_server_body_limit_leaves_room_above_the_apps():
    assert server_body_limit(None) is None
    assert server_body_limit(LIMIT) == LIMIT + 1024 * 1024
    assert server_body_limit(200 * 1024 * 1024) == 250 * 1024 * 1024
