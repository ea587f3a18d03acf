"""A publish sent twice (a double click) never answers with a server error.

The second request is refused ("publishing ... is in progress") while the first replaces the town's store file; its
page read the store's layers then, and failed one time in three with pyogrio's "Layer 'buildings' could not be
opened". The race is made certain here: the first publication holds the store's writer lock, and every read of the
store's layers fails as a file half-replaced does.
"""

from __future__ import annotations

import pyogrio.errors
import pytest

from layers.store import store_writer
from tests.conftest import checked_upload, csrf


@pytest.fixture
def town(town_copy):
    return town_copy


@pytest.fixture
def app(town_copy_app):
    return town_copy_app


@pytest.fixture
def reads(monkeypatch) -> list[str]:
    """Every read of a store's layer counts by the Data page fails, as one of a file being replaced does."""
    tried: list[str] = []

    def half_replaced(location):
        tried.append(str(location))
        raise pyogrio.errors.DataLayerError("Layer 'buildings' could not be opened")

    monkeypatch.setattr("gisapp.views.data.layer_counts", half_replaced)
    return tried


def test_the_second_click_of_a_publish_says_it_is_in_progress_without_reading_the_store(app, town, tmp_path, reads):
    client = app.test_client()
    token = checked_upload(client, tmp_path)
    first = store_writer(town, who="local", what="publishing hill.gpkg by local")  # the first click, replacing it
    try:
        second = client.post(f"/data/{token}/publish", data={"csrf_token": csrf(client), "publish_not_ready": "1"})
    finally:
        first.release()
    page = second.get_data(as_text=True)
    assert second.status_code == 409, page[:2000]
    assert "Publishing hill.gpkg by local is in progress" in page
    assert "The town&#39;s store is being written right now" in page and "reload the page in a moment" in page
    assert reads == []  # its layers were not read while the file is being replaced


def test_the_data_page_says_the_town_store_could_not_be_read_instead_of_failing(app, reads):
    client = app.test_client()
    page = client.get("/data/upload")
    text = page.get_data(as_text=True)
    assert page.status_code == 200, text[:2000]
    assert reads and "The town&#39;s store could not be read just now" in text and 'id="town-unread"' in text
    assert "Upload a dataset" in text  # the rest of the page is there: the uploads, the earlier versions


def test_the_data_page_shows_the_town_store_when_it_can_be_read(client, store):
    text = client.get("/data/upload").get_data(as_text=True)
    assert "300 parcels" in text and 'id="town-run"' in text and "town-unread" not in text
