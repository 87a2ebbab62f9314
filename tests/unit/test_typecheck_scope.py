"""mypy follows aws-cdk-lib's modules only where infra/ or app.py imports them (pyproject.toml, [tool.mypy]):
a module imported but left off that list would be typed Any without a word, and one listed but no longer imported
is parsed for nothing."""

from __future__ import annotations

import ast
import pathlib
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[2]
TYPED_WITH_CDK = [*sorted((ROOT / "infra").rglob("*.py")), ROOT / "app.py"]


def _cdk_modules_imported() -> set[str]:
    found: set[str] = set()
    for path in TYPED_WITH_CDK:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "aws_cdk":
                found.add(node.module)
                if node.module == "aws_cdk":
                    found.update(f"aws_cdk.{alias.name}" for alias in node.names if alias.name.islower())
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names if alias.name.split(".")[0] == "aws_cdk")
    return found


def _overrides() -> list[dict[str, object]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    overrides: list[dict[str, object]] = config["tool"]["mypy"]["overrides"]
    return overrides


def test_every_cdk_module_the_infrastructure_imports_is_followed_and_no_other() -> None:
    followed = [o for o in _overrides() if o.get("follow_imports") == "normal"]
    assert len(followed) == 1, followed
    assert sorted(followed[0]["module"]) == sorted(_cdk_modules_imported())  # type: ignore[arg-type]


def test_the_rest_of_aws_cdk_lib_is_skipped() -> None:
    skipped = [o for o in _overrides() if o.get("follow_imports") == "skip"]
    assert [o["module"] for o in skipped] == [["aws_cdk.*"]]
