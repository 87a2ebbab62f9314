"""The rooms of docs/architecture.md hold: each package imports only what its row allows.

The rows of the rules, the data and the keys are read from docs/architecture.md itself, so the document
and the code cannot drift apart; what a service or a model loads is checked transitively, in a fresh process.
"""

from __future__ import annotations

import ast
import pathlib
import re

import pytest

from tests.support.fresh_python import fresh_python

REPO = pathlib.Path(__file__).resolve().parents[2]
SHOP = REPO / "layers" / "shared" / "python" / "shop"
AWS_SDK = ("boto3", "botocore")
# What no service nor model may load, even through another module: the SDK, the keys, the adapters, and the settings
# (shop.config: a service imports its types for type checking only, shop.wiring hands it the readers).
NEVER_LOADED_BY_RULES = (
    "boto3",
    "botocore",
    "shop.keys",
    "shop.repository",
    "shop.publishing",
    "shop.wiring",
    "shop.config",
)


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
    allowed = ("shop.models", "shop.limits") + (("shop.runtime.lazy_exports",) if path.name == "__init__.py" else ())
    assert all(any(_uses({name}, room) for room in allowed) for name in imports), (path.name, imports)


def test_keys_are_built_only_where_the_table_is_known():
    # migrations map stored items to writes (docs/architecture.md, "migrations"): they know the keys too
    for path in sorted(SHOP.rglob("*.py")):
        if path == SHOP / "keys.py" or path.parent in (SHOP / "repository", SHOP / "migrations"):
            continue
        assert not _uses(_imports(path), "shop.keys"), path.relative_to(SHOP)


def _documented_imports(where: str) -> tuple[str, ...]:
    """The `shop.*` names the "may import" cell of the room at `where` lists (before its first `;`)."""
    for line in (REPO / "docs" / "architecture.md").read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[1] == f"`{where}`":
            return tuple(re.findall(r"`(shop(?:\.\w+)*)`", cells[3].split(";")[0]))
    raise AssertionError(f"docs/architecture.md has no room at {where}")


@pytest.mark.parametrize(
    ("where", "modules", "own"),
    [
        ("shop/services/", _modules("services"), "shop.services"),
        ("shop/models/", _modules("models"), "shop.models"),
        ("shop/keys.py", [SHOP / "keys.py"], "shop.keys"),
        ("shop/runtime/", _modules("runtime"), "shop.runtime"),
    ],
    ids=["rules", "data", "keys", "runtime"],
)
def test_each_room_imports_only_what_architecture_md_says(where, modules, own):
    allowed = (own, *_documented_imports(where))
    for path in modules:
        imports = {name for name in _imports(path) if name == "shop" or name.startswith("shop.")}
        # `from shop import clock` reads as shop and shop.clock (`from shop.runtime import snapstart` as shop.runtime
        # too): a package imported as a module's parent is only that, its module is the one checked
        imports -= {name for name in imports if any(other.startswith(name + ".") for other in imports)}
        strays = sorted(name for name in imports if not any(_uses({name}, room) for room in allowed))
        assert not strays, (path.relative_to(SHOP), strays, "allowed:", allowed)


def test_no_service_nor_model_loads_the_sdk_the_keys_or_an_adapter_even_transitively():
    modules = [f"shop.services.{path.stem}" for path in _modules("services") if path.stem != "__init__"]
    modules += [f"shop.models.{path.stem}" for path in _modules("models") if path.stem != "__init__"]
    found = fresh_python(
        "import importlib, json, sys\n"
        f"never = {NEVER_LOADED_BY_RULES!r}\n"
        "found = {}\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "    loaded = sorted(m for m in sys.modules if any(m == n or m.startswith(n + '.') for n in never))\n"
        "    if loaded:\n"
        "        found[name] = loaded\n"
        "        break\n"
        "print(json.dumps(found))"
    )
    assert found == {}, found  # the first module that loads one, and what it loaded


def test_the_order_rules_load_no_boto3():
    """Issue 24's check as written: `PYTHONPATH=layers/shared/python python -c "import shop.services.orders,
    shop.services.order_events, sys; assert 'boto3' not in sys.modules"`, the layer alone on the path (not the
    repository: no local_runtime, infra nor tests to lean on) and no setting in the environment."""
    loaded = fresh_python(
        "import json, sys\n"
        "import shop.services.orders, shop.services.order_events\n"
        f"never = {NEVER_LOADED_BY_RULES!r}\n"
        "print(json.dumps(sorted(m for m in sys.modules if any(m == n or m.startswith(n + '.') for n in never))))",
        env={"PYTHONPATH": str(SHOP.parent), "PATH": "/usr/bin:/bin"},
    )
    assert loaded == []


def test_only_the_composition_root_imports_both_services_and_adapters():
    for path in sorted(SHOP.rglob("*.py")):
        imports = _imports(path)
        both = _uses(imports, "shop.services") and any(
            _uses(imports, adapter) for adapter in ("shop.repository", "shop.publishing")
        )
        assert not both or path == SHOP / "wiring.py", path.relative_to(SHOP)


@pytest.mark.parametrize("path", sorted((REPO / "functions").glob("*/handler.py")), ids=lambda p: p.parent.name)
def test_handlers_get_their_services_from_the_composition_root(path):
    imports = _imports(path)
    # the stream function reads its records with the record adapter; every store comes from shop.wiring
    stores = {
        name
        for name in imports
        if _uses({name}, "shop.repository") and not _uses({name}, "shop.repository.stream_records")
    }
    assert not stores, (path.parent.name, stores)
    assert "shop.wiring" in imports, path.parent.name


def test_http_support_reaches_no_store():
    for path in sorted((SHOP / "http_api").glob("*.py")):
        imports = _imports(path)
        assert not _uses(imports, "shop.repository"), path.relative_to(SHOP)
        assert not _uses(imports, "shop.keys"), path.relative_to(SHOP)


def _run_time_imports(path: pathlib.Path) -> set[str]:
    """`_imports` without those under `if TYPE_CHECKING:` (annotations only: no import at run time)."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            node.body = []
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def _infra_graph() -> dict[str, set[str]]:
    modules = {
        ".".join(path.relative_to(REPO).with_suffix("").parts): path for path in sorted((REPO / "infra").rglob("*.py"))
    }
    return {
        name: {other for other in modules if other != name and any(_uses({i}, other) for i in _run_time_imports(path))}
        for name, path in modules.items()
    }


def test_no_two_infra_modules_import_each_other():
    graph = _infra_graph()

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(nxt == goal or reaches(nxt, goal, seen | {nxt}) for nxt in graph[start] - seen)

    cycles = sorted(name for name in graph if reaches(name, name, set()))
    assert not cycles, cycles


def _shop_modules() -> dict[str, pathlib.Path]:
    """Every module of the shop layer by its dotted name (a package's `__init__.py` by the package's)."""
    modules = {}
    for path in sorted(SHOP.rglob("*.py")):
        parts = path.relative_to(SHOP.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _lazy_exports(path: pathlib.Path) -> dict[str, str]:
    """A package's `_WHERE` (shop.runtime.lazy_exports): the module each name it exports is imported from."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "_WHERE" for t in node.targets):
            return dict(ast.literal_eval(node.value))
    return {}


def _shop_import_graph() -> dict[str, set[str]]:
    """Each shop module -> the shop modules it imports: at its top, inside functions and under TYPE_CHECKING
    alike (a type-only import is a dependency all the same). A name a lazy package exports counts as the module
    it is loaded from when used. The import of a module's own parent package, which Python makes first, is
    not an edge: no package's `__init__` loads its modules."""
    modules = _shop_modules()
    exported = {name: _lazy_exports(path) for name, path in modules.items() if path.name == "__init__.py"}

    def module_of(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str | None] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found.update(module_of(alias.name) for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = package.rsplit(".", node.level - 1)[0] if node.level else ""
                source = ".".join(part for part in (base, node.module) if part)
                for alias in node.names:
                    if f"{source}.{alias.name}" in modules:
                        found.add(f"{source}.{alias.name}")
                    else:
                        found.add(exported.get(source, {}).get(alias.name) or module_of(source))
        graph[name] = {other for other in found if other is not None and other != name}
    return graph


def _a_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of `graph` as the path that closes it (`a -> b -> a`), or None."""
    finished: set[str] = set()

    def walk(name: str, path: list[str]) -> list[str] | None:
        if name in path:
            return [*path[path.index(name) :], name]
        if name in finished:
            return None
        for imported in sorted(graph.get(name, ())):
            found = walk(imported, [*path, name])
            if found:
                return found
        finished.add(name)
        return None

    for name in sorted(graph):
        found = walk(name, [])
        if found:
            return found
    return None


def test_no_shop_module_imports_itself_through_others():
    cycle = _a_cycle(_shop_import_graph())
    assert cycle is None, " -> ".join(cycle or [])


def test_the_shop_import_graph_sees_imports_in_functions_and_through_lazy_exports():
    graph = _shop_import_graph()
    assert "shop.services.orders" in graph["shop.wiring"]  # imported inside its factory
    assert "shop.models.orders" in graph["shop.repository.order_effects"]  # `from shop.models import OrderStatus`
    assert _a_cycle({"a": {"b"}, "b": {"c"}, "c": {"b"}}) == ["b", "c", "b"]


def test_http_support_is_not_imported_by_rules_or_repositories():
    for package in ("services", "repository", "models"):
        for path in _modules(package):
            assert not _uses(_imports(path), "shop.http_api"), path.relative_to(SHOP)


def test_the_layer_ships_no_development_tooling():
    for path in sorted(SHOP.rglob("*.py")):
        imports = _imports(path)
        for tool in ("local_runtime", "bench", "tests", "moto", "pytest", "infra"):
            assert not _uses(imports, tool), (path.relative_to(SHOP), tool)


def test_every_limit_and_default_has_one_source():
    from shop import limits

    names = {name for name in vars(limits) if name.isupper()}
    names |= {name.removeprefix("DEFAULT_") for name in names if name.startswith("DEFAULT_")}
    copies = []
    for path in [*sorted(SHOP.rglob("*.py")), *sorted((REPO / "infra").rglob("*.py"))]:
        if path == SHOP / "limits.py":
            continue
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Constant | ast.BinOp):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                copies += [
                    f"{path.relative_to(REPO)}:{t.id}" for t in targets if isinstance(t, ast.Name) and t.id in names
                ]
    assert not copies, copies  # a value of shop.limits written again: import it instead
