"""A register named (the web's ``REGISTER``, ``--register``, ``SEWERPLAN_DATABASE_URL``) that is not the one the
store records is refused, on the notices page and the command line alike, naming both and what to do.

The web found its register by ``REGISTER``, then ``SEWERPLAN_DATABASE_URL``, then the store's record, and used the
one configured without a word while ``sewerplan notices --store`` used the store's: notices could be issued twice to
the same owners, the town's record split between two registers. A store that records none yet still takes the one
named, and records it when the register is created, as before."""

from __future__ import annotations

import html
import shutil
from pathlib import Path

import pytest

from layers.register import Register, RegisterClashError
from layers.sample import sample_town
from layers.store import read_setting
from layers.write import write_layers
from tests import conftest
from tests.conftest import csrf
from tests.test_notices import invoke
from tests.test_notices_web import store as analysed_store

store = analysed_store  # the analysed sample village the notices page is tested on (module scope)

CLASH = "already keeps its notices in the register"


@pytest.fixture(autouse=True)
def _no_environment_register(monkeypatch):
    monkeypatch.delenv("SEWERPLAN_DATABASE_URL", raising=False)


def _town_with_register(folder: Path) -> tuple[Path, Path]:
    """A store recording its register (``town-register.sqlite`` beside it), and another register, elsewhere."""
    folder.mkdir(parents=True, exist_ok=True)
    town = folder / "town.gpkg"
    write_layers(str(town), sample_town(50))
    Register(store=town, create=True).close()
    other = folder.parent / "old" / "register.sqlite"
    other.parent.mkdir(exist_ok=True)
    Register(str(other), create=True).close()
    return town, other


# -- the command line --------------------------------------------------------------------------------------------


def test_a_register_given_that_is_not_the_stores_is_refused_naming_both(tmp_path):
    town, other = _town_with_register(tmp_path / "town")
    done = invoke("notices", "list", "--store", town, "--register", other, ok=False)
    said = " ".join(done.stderr.split())
    assert done.exit_code == 2, done.output
    assert f"The store {town} {CLASH} {tmp_path}/town/town-register.sqlite, but --register names {other}:" in said
    assert f"Leave out --register (the store's register is found without it) or give --register {town.parent}" in said
    assert "record that one in the store first (the value of the key register" in said
    assert "Traceback" not in done.output


def test_the_environments_register_that_is_not_the_stores_is_refused_naming_it(tmp_path, monkeypatch):
    town, other = _town_with_register(tmp_path / "town")
    monkeypatch.setenv("SEWERPLAN_DATABASE_URL", str(other))
    done = invoke("notices", "list", "--store", town, ok=False)
    said = " ".join(done.stderr.split())
    assert done.exit_code == 2 and f"but SEWERPLAN_DATABASE_URL names {other}:" in said, said
    assert "Unset SEWERPLAN_DATABASE_URL" in said and "--register" not in said


def test_a_database_register_is_named_without_its_password(tmp_path):
    town, _ = _town_with_register(tmp_path / "town")
    url = "postgresql://clerk:s3cr%40t@db.example/gis?options=-csearch_path%3Dtown_register"
    done = invoke("notices", "list", "--store", town, "--register", url, "--json", ok=False)
    assert done.exit_code == 2 and CLASH in done.stderr and "s3cr" not in done.output
    assert "but --register names postgresql://clerk:***@db.example/gis" in " ".join(done.stderr.split())


def test_the_stores_own_register_spelt_otherwise_is_no_clash(tmp_path, monkeypatch):
    town, _ = _town_with_register(tmp_path / "town")
    monkeypatch.chdir(tmp_path / "town")
    for spelt in ("town-register.sqlite", f"sqlite:///{tmp_path}/town/../town/town-register.sqlite"):
        invoke("notices", "list", "--store", town, "--register", spelt)
    monkeypatch.setenv("SEWERPLAN_DATABASE_URL", "town-register.sqlite")
    invoke("notices", "list", "--store", town)


def test_a_store_recording_no_register_takes_the_one_named_and_records_it(tmp_path):
    town = tmp_path / "fresh.gpkg"
    write_layers(str(town), sample_town(50))
    named = tmp_path / "named.sqlite"
    invoke("notices", "list", "--store", town, "--register", named, ok=False)  # none there yet: refused, not made
    Register(str(named), store=town, create=True).close()  # `notices issue --new --register`, the page's button
    assert read_setting(town, "register") == str(named)
    invoke("notices", "list", "--store", town, "--register", named)


def test_two_database_registers_are_one_by_server_database_and_schema():
    from layers.register import same_register

    base = "postgresql://{}@DB.example:5432/gis?options={}"
    one = base.format("clerk:pw", "-crole%3Dplanners+-csearch_path%3Dtown_register")
    assert same_register(one, base.format("viewer", "-csearch_path=town_register").replace(":5432", ""))
    assert not same_register(one, base.format("clerk:pw", "-csearch_path%3Dother_register"))
    assert not same_register(one, "sqlite:////srv/town-register.sqlite")


def test_the_register_refuses_the_clash_whatever_calls_it(tmp_path):
    town, other = _town_with_register(tmp_path / "town")
    for create in (False, True):
        with pytest.raises(RegisterClashError, match=CLASH) as info:
            Register(str(other), store=town, create=create)
        assert "--" not in str(info.value)  # the layers name no flag: the command line and the page word the fix
    with pytest.raises(RegisterClashError, match=CLASH):  # one that does not exist yet is never created
        Register(str(tmp_path / "new.sqlite"), store=town, create=True)
    assert not (tmp_path / "new.sqlite").exists()


# -- the notices page ------------------------------------------------------------------------------------------------


def make_app(store: Path, tmp_path: Path, *, register: str | None = None):
    """The notices app on a copy of the analysed village, its ``REGISTER`` setting ``register``."""
    own = tmp_path / "store" / "town.gpkg"
    own.parent.mkdir()
    shutil.copy(store, own)
    (own.parent / "town.toml").write_text(conftest.town_toml("Village of Fort Plain"), encoding="utf-8")
    return conftest.make_app(own, tmp_path, REGISTER=register)


def _app_with_store_register(store: Path, tmp_path: Path, **config):
    """The notices app on a copy of the analysed village whose store records its own register."""
    app = make_app(store, tmp_path, **config)
    Register(store=app.config["STORE"], create=True).close()
    return app


def test_the_notices_page_refuses_a_configured_register_that_is_not_the_stores(store, tmp_path):
    other = tmp_path / "old" / "register.sqlite"
    other.parent.mkdir()
    Register(str(other), create=True).close()
    app = _app_with_store_register(store, tmp_path, register=str(other))
    page = app.test_client().get("/notices")
    text = " ".join(html.unescape(page.get_data(as_text=True)).split())
    assert page.status_code == 400
    assert (
        f"The store town.gpkg {CLASH} town-register.sqlite, but this server's REGISTER setting names register.sqlite"
        in text
    )
    assert "set REGISTER in instance/config.py to the store's register" in text
    assert "record that one in the store instead" in text
    assert str(tmp_path) not in text  # no server folder


def test_the_notices_page_refuses_the_environments_register_and_tells_two_of_one_name_apart(
    store, tmp_path, monkeypatch
):
    app = _app_with_store_register(store, tmp_path)
    elsewhere = tmp_path / "elsewhere" / "town-register.sqlite"  # a copy of the store's, in another folder
    elsewhere.parent.mkdir()
    shutil.copy(Path(app.config["STORE"]).with_name("town-register.sqlite"), elsewhere)
    monkeypatch.setenv("SEWERPLAN_DATABASE_URL", str(elsewhere))
    page = app.test_client().get("/notices")
    text = " ".join(html.unescape(page.get_data(as_text=True)).split())
    assert page.status_code == 400, text
    assert "but this server's SEWERPLAN_DATABASE_URL names another town-register.sqlite, in another folder" in text
    assert "SEWERPLAN_DATABASE_URL in the server's environment" in text and str(tmp_path) not in text


def test_a_page_opened_before_the_store_recorded_another_register_refuses_after(store, tmp_path):
    """The page keeps its register open between requests: a store that comes to record another one (a first
    `notices issue --new` from the command line, without --register) is refused from the next request on."""
    configured = tmp_path / "configured.sqlite"
    Register(str(configured), create=True).close()
    app = make_app(store, tmp_path, register=str(configured))
    client = app.test_client()
    assert client.get("/notices").status_code == 200  # the store records none: the one configured is used
    Register(store=app.config["STORE"], create=True).close()  # the command line's first register, beside the store
    page = client.get("/notices")
    assert page.status_code == 400 and CLASH in page.get_data(as_text=True)


def test_the_page_records_the_configured_register_in_a_store_recording_none(store, tmp_path):
    configured = tmp_path / "configured.sqlite"
    app = make_app(store, tmp_path, register=str(configured))
    client = app.test_client()
    created = client.post("/notices/register", data={"csrf_token": csrf(client)})
    assert created.status_code == 302 and read_setting(app.config["STORE"], "register") == str(configured)
    assert client.get("/notices").status_code == 200
