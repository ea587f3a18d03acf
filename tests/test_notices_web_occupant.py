"""The notices page does the two jobs `sewerplan notices` did alone: copies to the occupant at the site
(`issue --occupant`) and violation notices (`notices violations`, with `--occupant`), through the same service
functions, for a clerk who works on the web. With the Flask test client, and in a real headless Chromium."""

from __future__ import annotations

import io
import re

import pandas as pd
import pytest
from pypdf import PdfReader

from layers.register import Register
from tests.conftest import csrf
from tests.test_notices_web import make_app, store  # noqa: F401  (the module's store fixture)

FORM = {"notice_date": "2027-03-01"}


@pytest.fixture
def app(store, tmp_path):  # noqa: F811
    return make_app(store, tmp_path)


def _words(pdf: bytes) -> str:
    return " ".join(" ".join(p.extract_text() for p in PdfReader(io.BytesIO(pdf)).pages).split())


def _confirm(page: str) -> str:
    return re.search(r'name="confirm" value="([0-9a-f]+)"', page).group(1)


def _issue(client, *, occupant: bool) -> str:
    """Connection notices issued from the page (the copies to the occupant ticked or not); the page it returns to."""
    token = csrf(client)
    client.post("/notices/register", data={"csrf_token": token})
    form = FORM | {"csrf_token": token} | ({"occupant": "1"} if occupant else {})
    preview = client.post("/notices/preview", data=form).get_data(as_text=True)
    done = client.post("/notices/issue", data=form | {"confirm": _confirm(preview)})
    assert done.status_code == 302, done.get_data(as_text=True)[:2000]
    return client.get(done.headers["Location"]).get_data(as_text=True)


def _copies(client, batch: str) -> pd.DataFrame:
    mailing = client.get(f"/notices/files/{batch}/mailing-list.csv").data.decode("utf-8-sig")
    rows = pd.read_csv(io.StringIO(mailing), dtype=str, keep_default_na=False)
    return rows[rows["name_line_1"] == "Occupant"]


# -- copies to the occupant of the connection notices ---------------------------------------------------------------


def test_the_issue_form_offers_copies_to_the_occupant_off_by_default(client, app):
    client.post("/notices/register", data={"csrf_token": csrf(client)})
    page = client.get("/notices").get_data(as_text=True)
    box = re.search(r'<input type="checkbox" name="occupant"[^>]*>', page).group(0)
    assert "checked" not in box
    said = " ".join(page.split())
    assert "a courtesy copy of the owner's notice" in said and "It is never service" in said


def test_copies_to_the_occupant_are_written_counted_and_linked_as_the_owners_letters(client, app):
    """`notices issue --occupant` wrote a copy to "Occupant" at the site of each property whose owner lives
    elsewhere; the page's issue form had no such choice, so a clerk on the web could not send one."""
    token = csrf(client)
    client.post("/notices/register", data={"csrf_token": token})
    form = FORM | {"csrf_token": token, "occupant": "1"}
    preview = client.post("/notices/preview", data=form).get_data(as_text=True)
    assert re.search(r'name="occupant" value="1"', preview)  # carried to the confirm form, and the box stays ticked
    assert "with copies to the occupant where the owner lives elsewhere" in preview
    # the clerk's confirmation covers the copies: a confirm of the preview without them issues nothing
    plain = client.post("/notices/preview", data=FORM | {"csrf_token": token}).get_data(as_text=True)
    register = Register(store=app.config["STORE"], create=False)
    stale = client.post("/notices/issue", data=form | {"confirm": _confirm(plain)}).get_data(as_text=True)
    assert "have changed since the preview" in stale and register.listing().empty
    done = client.post("/notices/issue", data=form | {"confirm": _confirm(preview)})
    page = client.get(done.headers["Location"]).get_data(as_text=True)
    listing = register.listing()
    batch = listing["batch_id"].iloc[0]
    copies = _copies(client, batch)
    owners = listing["mailing_no"].nunique()
    assert 0 < len(copies) < len(listing)  # the sample village: some owners live elsewhere
    said = (
        f"{owners} letter(s) to the owners and {len(copies)} copy(ies) to the occupant at the site, "
        f"{owners + len(copies)} letter(s) in all: download them below."
    )
    assert said in page, re.findall(r'id="message"[^>]*>([^<]*)<', page)
    assert f"{len(copies)} copy(ies) to the occupant at the site, among the letters and labels" in page
    rows = re.findall(r'<tr><td class="nowrap">(N-[^<]+)</td>(.*?)</tr>', page.split('id="register"')[1], re.S)
    links = {n: m.group(1) for n, row in rows if (m := re.search(r'class="copy-link" href="([^"]+)"', row))}
    parcels = listing.set_index("notice_id")["parcel_id"]
    assert sorted(parcels[list(links)]) == sorted(copies["parcel_ids"])  # each beside its own notice's letter
    notice, link = next(iter(links.items()))
    got = client.get(link.replace("&amp;", "&"))
    assert got.status_code == 200 and "COPY FOR THE OCCUPANT" in _words(got.data)
    assert parcels[notice] in _words(got.data)


def test_without_the_box_no_copy_is_written(client, app):
    page = _issue(client, occupant=False)
    batch = Register(store=app.config["STORE"], create=False).listing()["batch_id"].iloc[0]
    assert _copies(client, batch).empty and 'class="copy-link"' not in page and "to the owners and" not in page
