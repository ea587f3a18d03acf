"""Every command-line option and every web setting is documented."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest

from gisapp import SETTINGS
from gisapp.cli import main

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _commands(group: click.Group, prefix: str = ""):
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            yield from _commands(command, f"{prefix}{name} ")
        else:
            yield f"{prefix}{name}", command


@pytest.mark.parametrize(("name", "command"), list(_commands(main)))
def test_every_option_is_in_docs_cli(name, command):
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    assert f"sewerplan {name.split()[0]}" in text
    for param in command.params:
        for opt in param.opts:
            if opt.startswith("--") and opt != "--help":
                assert f"`{opt}" in text or f"{opt}`" in text or f"`{opt} " in text, f"{name}: {opt}"


def test_every_setting_is_in_docs_web():
    text = (DOCS / "web.md").read_text(encoding="utf-8")
    for name in SETTINGS:
        assert f"`{name}`" in text, name


def test_openapi_lists_every_api_route():
    from gisapp import create_app

    spec = json.loads((Path(__file__).resolve().parents[1] / "gisapp" / "static" / "openapi.json").read_text())
    app = create_app({"TESTING": True, "SECRET_KEY": "x"})
    routes = {r.rule for r in app.url_map.iter_rules() if r.rule.startswith("/api/")}
    documented = {
        p.replace("{name}", "<name>")
        .replace("{parcel_id}", "<path:parcel_id>")
        .replace("{fmt}", "<fmt>")
        .replace("{job_id}", "<job_id>")
        .replace("results.<fmt>", "results.<fmt>")
        for p in spec["paths"]
    }
    assert routes <= documented, routes - documented


def test_no_project_file_refers_to_the_shared_folder_outside_the_clone():
    """A clone alone must pass `make test`: real data and ordinance texts are read from tests/data/ only."""
    repo = DOCS.parent
    needle = "../" + "shared"  # spelled apart so this file does not match itself
    skip = {".git", ".venv", "build", "__pycache__", ".pytest_cache", ".ruff_cache", "instance"}
    offenders = []
    for path in repo.rglob("*"):
        if not path.is_file() or skip & set(path.relative_to(repo).parts):
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if needle in text:
            offenders.append(str(path.relative_to(repo)))
    assert offenders == []
