"""The rooms of docs/architecture.md hold: each package imports only what its row allows."""

from __future__ import annotations

import ast
import pathlib

import pytest

SHOP = pathlib.Path(__file__).resolve().parents[2] / "layers" / "shared" / "python" / "shop"
AWS_SDK = ("boto3", "botocore")


def _imports(path: pathlib.Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def _modules(package: str) -> list[pathlib.Path]:
    return sorted((SHOP / package).glob("*.py"))


def _uses(imports: set[str], prefix: str) -> bool:
    return any(name == prefix or name.startswith(prefix + ".") for name in imports)


@pytest.mark.parametrize("path", _modules("services"), ids=lambda p: p.name)
def test_rules_know_neither_the_sdk_nor_the_keys(path):
    imports = _imports(path)
    assert not any(_uses(imports, sdk) for sdk in AWS_SDK), path.name
    assert not _uses(imports, "shop.keys"), path.name
    assert not _uses(imports, "shop.repository.store"), path.name


@pytest.mark.parametrize("path", _modules("models"), ids=lambda p: p.name)
def test_models_are_data_only(path):
    imports = {name for name in _imports(path) if name.startswith("shop")}
    allowed = ("shop.models", "shop.limits") + (("shop.lazy_packages",) if path.name == "__init__.py" else ())
    assert all(any(_uses({name}, room) for room in allowed) for name in imports), (path.name, imports)


def test_keys_are_built_only_where_the_table_is_known():
    # migrations map stored items to writes (docs/architecture.md, "migrations"): they know the keys too
    allowed = {SHOP / "repository", SHOP / "http_api" / "idempotency.py", SHOP / "migrations"}
    for path in sorted(SHOP.rglob("*.py")):
        if path == SHOP / "keys.py" or path.parent in allowed or path in allowed:
            continue
        assert not _uses(_imports(path), "shop.keys"), path.relative_to(SHOP)


def test_http_support_is_not_imported_by_rules_or_repositories():
    for package in ("services", "repository", "models"):
        for path in _modules(package):
            assert not _uses(_imports(path), "shop.http_api"), path.relative_to(SHOP)


def test_the_layer_ships_no_development_tooling():
    for path in sorted(SHOP.rglob("*.py")):
        imports = _imports(path)
        for tool in ("local_runtime", "bench", "tests", "moto", "pytest", "infra"):
            assert not _uses(imports, tool), (path.relative_to(SHOP), tool)
