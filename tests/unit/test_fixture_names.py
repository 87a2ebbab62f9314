"""One fixture name, one meaning: each pytest fixture is defined once in the test tree. Two fixtures of one name
in two folders mean two things to a reader (or the same thing kept twice, which drifts); a fixture more than one
folder needs is defined once where all of them see it (tests/conftest.py)."""

from __future__ import annotations

import ast
import pathlib
from collections import defaultdict

TESTS = pathlib.Path(__file__).resolve().parents[1]


def _fixture_name(function: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    """The name a function decorated with pytest.fixture (or a bare `fixture`) defines, None for any other."""
    for decorator in function.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        named = isinstance(target, ast.Name) and target.id == "fixture"
        if not (named or (isinstance(target, ast.Attribute) and target.attr == "fixture")):
            continue
        if isinstance(decorator, ast.Call):
            for keyword in decorator.keywords:
                if keyword.arg == "name" and isinstance(keyword.value, ast.Constant):
                    return str(keyword.value.value)
        return function.name
    return None


def fixture_definitions(root: pathlib.Path) -> dict[str, list[str]]:
    """Every fixture name under `root`, with where each definition is (path:line)."""
    found: dict[str, list[str]] = defaultdict(list)
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (name := _fixture_name(node)):
                found[name].append(f"{path.relative_to(root.parent)}:{node.lineno}")
    return found


def test_each_fixture_name_is_defined_once() -> None:
    twice = {name: where for name, where in fixture_definitions(TESTS).items() if len(where) > 1}
    assert not twice, "fixture names defined more than once (rename or share them): " + "; ".join(
        f"{name} at {', '.join(where)}" for name, where in sorted(twice.items())
    )


def test_the_check_sees_fixtures_however_they_are_declared(tmp_path: pathlib.Path) -> None:
    tests = tmp_path / "tests"
    (tests / "a").mkdir(parents=True)
    (tests / "a" / "conftest.py").write_text(
        "import pytest\nfrom pytest import fixture\n\n"
        "@pytest.fixture\ndef bus(): ...\n\n"
        "@fixture(scope='module')\ndef clock(): ...\n\n"
        "@pytest.fixture(name='app')\ndef _app(): ...\n\n"
        "def helper(): ...\n"
    )
    (tests / "b.py").write_text("import pytest\n\n@pytest.fixture(autouse=True)\nasync def bus(): ...\n")
    found = fixture_definitions(tests)
    assert sorted(found) == ["app", "bus", "clock"]
    assert found["bus"] == ["tests/a/conftest.py:5", "tests/b.py:4"]
