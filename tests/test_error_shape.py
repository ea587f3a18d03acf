"""The command line's JSON error has one shape, whatever went wrong (as datasette's test_error_shape.py pins its own).

With --json, a user error prints exactly ``{"error", "problems", "fix"}`` on stdout and exits 2: ``error`` the
message as stderr says it (the fix worded as a flag), ``problems`` the layer problems (each with the same keys),
``fix`` the setting that fixes it (null when there is none, or when each problem has its own).
"""

from __future__ import annotations

import json

import geopandas as gpd
import pytest

from layers.sample import sample_town
from layers.write import write_layers

PROBLEM_KEYS = {"layer", "check", "severity", "count", "feature_ids", "message", "fix"}
FIX_KEYS = {"setting", "target", "example", "choices"}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """A town, the same town without a CRS on its parcels, and a register that does not exist."""
    folder = tmp_path_factory.mktemp("shape")
    town = folder / "town.gpkg"
    write_layers(str(town), sample_town(60))
    bare = folder / "bare.gpkg"
    parcels = gpd.read_file(town, layer="parcels").set_crs(None, allow_override=True)
    with pytest.warns(UserWarning, match="'crs' was not provided"):
        parcels.to_file(bare, layer="parcels")
    gpd.read_file(town, layer="mains").to_file(bare, layer="mains")
    return {"town": town, "bare": bare, "register": folder / "none.sqlite"}


CASES = {
    "invalid layers": (["analyze", "--profile", "fort-plain", "--data", "{bare}"], "layer_crs", None),
    "a rule left to the town": (["analyze", "--profile", "wappinger", "--data", "{town}"], None, "rule"),
    "an unknown profile": (["analyze", "--profile", "albany", "--data", "{town}"], None, None),
    "a measuring CRS in degrees": (
        ["analyze", "--profile", "fort-plain", "--data", "{town}", "--crs", "EPSG:4326"],
        None,
        "crs",
    ),
    "no such manhole": (["trace", "--data", "{town}", "--manhole", "MH-NOPE"], None, None),
    "no register": (
        ["notices", "list", "--register", "{register}"],
        None,
        "register",
    ),
    "a usage error": (["trace", "--data", "{town}"], None, None),
    "an unknown layer kind": (["analyze", "--profile", "fort-plain", "--layer", "lots={town}"], None, None),
}


@pytest.mark.parametrize("case", list(CASES))
def test_every_json_error_has_one_shape(runner, data, case):
    args, problem_fix, fix = CASES[case]
    result = runner.invoke(*[a.format(**data) for a in args], "--json")
    assert result.exit_code == 2, result.output
    doc = json.loads(result.stdout)
    assert set(doc) == {"error", "problems", "fix"}
    assert isinstance(doc["error"], str) and doc["error"]
    assert doc["error"] in result.stderr  # the same words on stderr
    for problem in doc["problems"]:
        assert set(problem) == PROBLEM_KEYS
        assert problem["fix"] is None or set(problem["fix"]) == FIX_KEYS
    if problem_fix:
        assert doc["problems"] and doc["problems"][0]["fix"]["setting"] == problem_fix
    if fix:
        assert set(doc["fix"]) == FIX_KEYS and doc["fix"]["setting"] == fix
    else:
        assert doc["fix"] is None


def test_a_fix_is_worded_as_the_flag_that_sets_it(runner, data):
    result = runner.invoke("analyze", "--profile", "wappinger", "--data", data["town"], "--json")
    doc = json.loads(result.stdout)
    assert doc["fix"] == {"setting": "rule", "target": "mandate.distance_ft", "example": "N", "choices": []}
    assert doc["error"].endswith("Use --set mandate.distance_ft=N.")


def _strings(path):
    """The string constants of a module that are not docstrings (f-string parts too)."""
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node.lineno, node.value


def test_no_message_in_analysis_or_layers_names_a_command_line_flag():
    """analysis/ and layers/ name a fix by what it is (a rule key, a layer kind); the CLI words it as a flag."""
    import re
    import tomllib

    from tests.conftest import REPO

    flag = re.compile(r"(?<![\w-])--[a-z]")
    found = [
        f"{path.relative_to(REPO)}:{line}: {text[:80]}"
        for folder in ("analysis", "layers")
        for path in sorted((REPO / folder).rglob("*.py"))
        for line, text in _strings(path)
        if flag.search(text)
    ]
    for path in sorted((REPO / "analysis" / "profiles").glob("*.toml")):
        for table in tomllib.loads(path.read_text(encoding="utf-8")).values():
            for key, rule in table.items():
                text = rule.get("note", "") if isinstance(rule, dict) else str(rule)
                if flag.search(str(text)):
                    found.append(f"{path.name}: {key}: {str(text)[:80]}")
    assert found == []
