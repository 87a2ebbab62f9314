"""The entry documents hold: what docs/conventions.md and docs/architecture.md say is read from them and checked.

- conventions.md's environment table lists every variable the shop layer and the handlers read from the
  environment, each with the modules that read it (found in the code by `ast`, through helper functions that take
  the name as an argument), and every variable infra sets on a function; it lists nothing that nobody reads or sets.
- Both documents name every function under functions/, and conventions.md's route column covers every route.
- A file path the entry documents name exists, and their links stay inside the project.

Files are read and parsed only: nothing is synthesized, served or imported but plain data.
"""

from __future__ import annotations

import ast
import functools
import importlib
import pathlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
LAYER = REPO / "layers" / "shared" / "python"
SHOP = LAYER / "shop"
DOCS = REPO / "docs"
CONVENTIONS = DOCS / "conventions.md"
ARCHITECTURE = DOCS / "architecture.md"
ENTRY_DOCUMENTS = (ARCHITECTURE, CONVENTIONS, DOCS / "idempotency.md")
ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
ENV_SECTION = "## Environment"
FUNCTIONS_SECTION = "## Functions"


# -- what the code reads --------------------------------------------------------------------------------


def _sources() -> list[tuple[str, pathlib.Path]]:
    """(the name the table uses for a module, its file): `shop.<dotted>` and `functions/<name>/handler.py`."""
    shop = [
        (".".join(path.relative_to(LAYER).with_suffix("").parts).removesuffix(".__init__"), path)
        for path in sorted(SHOP.rglob("*.py"))
    ]
    handlers = [(str(path.relative_to(REPO)), path) for path in sorted((REPO / "functions").glob("*/handler.py"))]
    return shop + handlers


def _is_environ(node: ast.expr) -> bool:
    """`os.environ`, or `environ` imported from os."""
    if isinstance(node, ast.Attribute):
        return node.attr == "environ" and isinstance(node.value, ast.Name) and node.value.id == "os"
    return isinstance(node, ast.Name) and node.id == "environ"


def _read_key(node: ast.AST) -> ast.expr | None:
    """The expression naming the variable, when `node` reads the environment: os.environ.get/setdefault/pop(k),
    os.getenv(k), os.environ[k], `k in os.environ`."""
    if isinstance(node, ast.Call) and node.args:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in ("get", "setdefault", "pop") and _is_environ(func.value):
            return node.args[0]
        if isinstance(func, ast.Attribute) and func.attr == "getenv":
            return node.args[0] if isinstance(func.value, ast.Name) and func.value.id == "os" else None
        if isinstance(func, ast.Name) and func.id == "getenv":
            return node.args[0]
    if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and _is_environ(node.value):
        return node.slice
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.In | ast.NotIn):
        return node.left if _is_environ(node.comparators[0]) else None
    return None


class _Module:
    """One source file, parsed only when a pass needs it (most files never mention the environment)."""

    def __init__(self, name: str, path: pathlib.Path) -> None:
        self.name = name
        self.path = path
        self.text = path.read_text()

    @functools.cached_property
    def tree(self) -> ast.Module:
        return ast.parse(self.text, str(self.path))

    @functools.cached_property
    def imports(self) -> dict[str, str]:
        """Local name -> the dotted name it stands for."""
        found: dict[str, str] = {}
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    found[alias.asname or alias.name.split(".")[0]] = (
                        alias.name if alias.asname else alias.name.split(".")[0]
                    )
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    found[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        return found

    @functools.cached_property
    def constants(self) -> dict[str, str]:
        """Module-level `NAME = "text"`."""
        return {
            target.id: node.value.value
            for node in self.tree.body
            if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
            for target in node.targets
            if isinstance(target, ast.Name)
        }

    @functools.cached_property
    def nodes(self) -> list[tuple[ast.AST, ast.FunctionDef | ast.AsyncFunctionDef | None]]:
        """The calls, subscripts and comparisons, each with its innermost enclosing function."""
        return [pair for pair in _functions(self.tree) if isinstance(pair[0], ast.Call | ast.Subscript | ast.Compare)]

    def qualified(self, func: ast.expr) -> str | None:
        """The dotted name a called function stands for (a function of this module, imported, or `module.f`)."""
        if isinstance(func, ast.Name):
            return self.imports.get(func.id, f"{self.name}.{func.id}")
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in self.imports:
            return f"{self.imports[func.value.id]}.{func.attr}"
        return None


def _functions(
    tree: ast.AST, outer: ast.FunctionDef | ast.AsyncFunctionDef | None = None
) -> Iterator[tuple[ast.AST, ast.FunctionDef | ast.AsyncFunctionDef | None]]:
    """Every node with its innermost enclosing function (None at module or class level)."""
    for child in ast.iter_child_nodes(tree):
        yield child, outer
        inner = child if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) else outer
        yield from _functions(child, inner)


def _parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    args = function.args
    return [arg.arg for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs)]


@dataclass
class EnvironmentReads:
    """Every variable read, with the modules reading it; and what could not be told, for the test to refuse."""

    readers: dict[str, set[str]] = field(default_factory=dict)
    unresolved: list[str] = field(default_factory=list)
    helpers: dict[str, int] = field(default_factory=dict)  # helper's dotted name -> calls naming a variable

    def add(self, name: str, module: str) -> None:
        self.readers.setdefault(name, set()).add(module)


def _resolve(module: _Module, key: ast.expr) -> str | None:
    """The variable's name when `key` is a string constant, a module constant or `imported_module.CONSTANT`."""
    if isinstance(key, ast.Constant) and isinstance(key.value, str):
        return key.value
    if isinstance(key, ast.Name) and key.id in module.constants:
        return module.constants[key.id]
    if isinstance(key, ast.Attribute) and isinstance(key.value, ast.Name) and key.value.id in module.imports:
        try:
            value = getattr(importlib.import_module(module.imports[key.value.id]), key.attr, None)
        except ImportError:  # a class's attribute, not a module's: not told
            return None
        return value if isinstance(value, str) else None
    return None


def environment_reads(sources: list[tuple[str, pathlib.Path]] | None = None) -> EnvironmentReads:
    """The variables `sources` (default: the shop layer and the handlers) read, directly or through a helper: a
    function that reads the environment under one of its parameters is a helper, and each call of it names the
    variable at that parameter's place (helpers of helpers too, until nothing new is found)."""
    modules = [_Module(name, path) for name, path in (sources if sources is not None else _sources())]
    found = EnvironmentReads()
    helpers: dict[str, tuple[int, str]] = {}  # dotted name -> (position, parameter) of the variable's name

    def name_or_parameter(
        module: _Module, key: ast.expr, where: ast.FunctionDef | ast.AsyncFunctionDef | None
    ) -> str | None:
        """The variable's name; registers `where` as a helper when `key` is its parameter; None when neither."""
        name = _resolve(module, key)
        if name is not None:
            return name
        if isinstance(key, ast.Name) and where is not None and key.id in _parameters(where):
            qualified = f"{module.name}.{where.name}"
            if qualified not in helpers:
                helpers[qualified] = (_parameters(where).index(key.id), key.id)
            return ""
        return None

    direct: list[str] = []
    for module in modules:  # direct reads
        if "environ" not in module.text and "getenv" not in module.text:
            continue
        for node, where in module.nodes:
            key = _read_key(node)
            if key is None:
                continue
            name = name_or_parameter(module, key, where)
            if name is None:
                direct.append(f"{module.name}: line {key.lineno}: {ast.unparse(key)}")
            elif name:
                found.add(name, module.name)
    seen = -1
    while seen != len(helpers):  # calls of helpers, whose own callers may pass their parameter on
        seen = len(helpers)
        found.helpers = dict.fromkeys(helpers, 0)
        through_helpers: list[str] = []
        short_names = {helper.rsplit(".", 1)[-1] for helper in helpers}
        for module in modules:
            if not any(short in module.text for short in short_names):
                continue
            for node, where in module.nodes:
                helper = module.qualified(node.func) if isinstance(node, ast.Call) else None
                if helper not in helpers or not isinstance(node, ast.Call):
                    continue
                found.helpers[helper] = found.helpers.get(helper, 0) + 1
                position, parameter = helpers[helper]
                keywords = [keyword.value for keyword in node.keywords if keyword.arg == parameter]
                key = node.args[position] if position < len(node.args) else (keywords[0] if keywords else None)
                name = name_or_parameter(module, key, where) if key is not None else None
                if name is None:
                    through_helpers.append(f"{module.name}: line {node.lineno}: {ast.unparse(node)}")
                elif name:
                    found.add(name, module.name)
        found.unresolved = direct + through_helpers
    return found


# -- what infra sets on a function ----------------------------------------------------------------------


def _keys(node: ast.AST) -> Iterator[str]:
    if isinstance(node, ast.Dict):
        for key in node.keys:
            if isinstance(key, ast.Constant) and isinstance(key.value, str) and ENV_NAME.match(key.value):
                yield key.value


def _names_an_environment(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and "env" in node.id.lower()


def infra_sets() -> set[str]:
    """The variables infra/ puts in a function's environment: the keys of an `environment=` dict, of a dict held
    in a variable named for an environment (`env`, `payment_env`, ...) or set on one by subscript, and every key a
    function named for an environment writes (`local_environment`)."""
    found: set[str] = set()
    for path in sorted((REPO / "infra").rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.keyword) and node.arg == "environment":
                found.update(_keys(node.value))
            elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(_names_an_environment(target) for target in targets):
                    found.update(_keys(node.value))
                for target in targets:
                    if isinstance(target, ast.Subscript) and _names_an_environment(target.value):
                        found.update(_keys(ast.Dict(keys=[target.slice], values=[target.slice])))
            elif isinstance(node, ast.FunctionDef) and "environment" in node.name:
                for inner in ast.walk(node):
                    found.update(_keys(inner))
                    if isinstance(inner, ast.Assign):
                        for target in inner.targets:
                            if isinstance(target, ast.Subscript):
                                found.update(_keys(ast.Dict(keys=[target.slice], values=[target.slice])))
    return found


# -- what the documents say -----------------------------------------------------------------------------


def _level(line: str) -> int:
    """A Markdown heading's level (0: not a heading)."""
    marks = len(line) - len(line.lstrip("#"))
    return marks if marks and line[marks : marks + 1] == " " else 0


def _section(path: pathlib.Path, heading: str) -> list[str]:
    """The lines of the one section whose heading starts with `heading`, up to the next heading of its level."""
    lines = path.read_text().splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith(heading)]
    assert len(starts) == 1, f"{path.name} has {len(starts)} sections '{heading}'"
    level = _level(lines[starts[0]])
    body = []
    for line in lines[starts[0] + 1 :]:
        if 0 < _level(line) <= level:
            break
        body.append(line)
    return body


def _rows(lines: list[str]) -> list[list[str]]:
    """The cells of a section's table rows, header and rule left out."""
    table = [line for line in lines if line.startswith("|")]
    return [[cell.strip() for cell in row.strip().strip("|").split("|")] for row in table[2:]]


def _ticked(text: str) -> list[str]:
    """The inline code spans of Markdown `text` (fenced blocks left out)."""
    return re.findall(r"`([^`\n]+)`", re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL))


@dataclass(frozen=True)
class EnvironmentRow:
    variable: str
    modules: frozenset[str]  # the shop modules and handlers the row says read it
    read_by: str


def documented_environment() -> dict[str, EnvironmentRow]:
    rows: dict[str, EnvironmentRow] = {}
    for cells in _rows(_section(CONVENTIONS, ENV_SECTION)):
        names = _ticked(cells[0])
        assert len(names) == 1, f"a row of conventions.md's environment table names one variable: {cells}"
        assert ENV_NAME.match(names[0]), f"not a variable's name: {names[0]}"
        assert names[0] not in rows, f"{names[0]} has two rows"
        modules = frozenset(t for t in _ticked(cells[1]) if t.startswith(("shop.", "functions/")))
        rows[names[0]] = EnvironmentRow(names[0], modules, cells[1])
    return rows


@pytest.fixture(scope="module")
def reads() -> EnvironmentReads:
    return environment_reads()


@pytest.fixture(scope="module")
def documented() -> dict[str, EnvironmentRow]:
    return documented_environment()


@pytest.fixture(scope="module")
def set_by_infra() -> set[str]:
    return infra_sets()


def test_every_environment_read_names_its_variable(reads):
    """A read this test cannot name (a computed name, a helper called with one) would go unchecked: refused."""
    assert not reads.unresolved, reads.unresolved
    assert all(ENV_NAME.match(name) for name in reads.readers), sorted(reads.readers)
    unused = sorted(helper for helper, calls in reads.helpers.items() if not calls)
    assert not unused, f"helpers that read the environment under a parameter, but no call of them was found: {unused}"


def test_the_reader_sees_reads_through_helpers_and_constants(reads):
    """The finder itself: a required variable, a bounded one, and one named by a library's constant."""
    assert "shop.config" in reads.readers["TABLE_NAME"]  # _required("TABLE_NAME")
    assert "shop.config" in reads.readers["MAX_UNPAID_ORDERS"]  # _bounded_int("MAX_UNPAID_ORDERS", ...)
    assert "shop.tracing" in reads.readers["POWERTOOLS_TRACE_DISABLED"]  # os.getenv(constants.TRACER_DISABLED_ENV)


def test_the_reader_follows_a_helper_of_a_helper(tmp_path):
    source = tmp_path / "sample.py"
    source.write_text(
        "import os\n"
        "def _raw(name):\n    return os.environ.get(name)\n"
        "def _number(name, default):\n    return int(_raw(name) or default)\n"
        "LIMIT = _number('SAMPLE_LIMIT', 3)\n"
        "FLAG = os.environ['SAMPLE_FLAG']\n"
        "KEY = 'SAMPLE_KEY'\n"
        "SET = KEY in os.environ\n"
    )
    found = environment_reads([("sample", source)])
    assert found.readers == {"SAMPLE_LIMIT": {"sample"}, "SAMPLE_FLAG": {"sample"}, "SAMPLE_KEY": {"sample"}}
    assert not found.unresolved


def test_the_reader_refuses_a_name_it_cannot_see(tmp_path):
    source = tmp_path / "sample.py"
    source.write_text("import os\nPREFIX = 'SAMPLE'\nVALUE = os.environ.get(PREFIX + '_NAME')\n")
    assert environment_reads([("sample", source)]).unresolved


def test_conventions_md_lists_every_variable_the_code_reads_with_its_readers(reads, documented):
    missing = sorted(set(reads.readers) - set(documented))
    assert not missing, f"read by the code, missing from docs/conventions.md's environment table: {missing}"
    wrong = {
        name: {"table": sorted(documented[name].modules), "code": sorted(readers)}
        for name, readers in reads.readers.items()
        if documented[name].modules != readers
    }
    assert not wrong, f"the table's 'read by' cell must name exactly the modules that read the variable: {wrong}"


def test_conventions_md_lists_every_variable_infra_sets_on_a_function(documented, set_by_infra):
    assert {"TABLE_NAME", "EVENT_BUS_NAME", "PYDANTIC_DISABLE_PLUGINS", "AWS_ENDPOINT_URL"} <= set_by_infra
    missing = sorted(set_by_infra - set(documented))
    assert not missing, f"set by infra on a function, missing from docs/conventions.md's environment table: {missing}"


def test_conventions_md_lists_no_variable_that_nothing_reads_or_sets(reads, documented, set_by_infra):
    """A row the shop's code does not read is one infra sets for a library (botocore, Powertools, pydantic)."""
    stray = sorted(name for name in documented if name not in reads.readers and name not in set_by_infra)
    assert not stray, f"docs/conventions.md lists variables nothing reads nor infra sets: {stray}"
    claimed = sorted(name for name, row in documented.items() if name not in reads.readers and row.modules)
    assert not claimed, f"rows naming a shop module for a variable no shop module reads: {claimed}"


# -- the functions --------------------------------------------------------------------------------------


FUNCTIONS = sorted(path.parent.name for path in (REPO / "functions").glob("*/handler.py"))


@pytest.mark.parametrize("document", [ARCHITECTURE, CONVENTIONS], ids=lambda p: p.name)
def test_the_entry_documents_name_every_function(document):
    rows = _rows(_section(document, FUNCTIONS_SECTION))
    named = sorted(name for cells in rows for name in _ticked(cells[0]))
    assert named == FUNCTIONS, f"{document.name}'s function table names {named}; functions/ holds {FUNCTIONS}"


def test_conventions_md_gives_every_route_to_its_function():
    from shop.http_api.routes import ROUTES

    paths = {
        _ticked(cells[0])[0]: [p for p in _ticked(cells[-1]) if p.startswith("/")]
        for cells in _rows(_section(CONVENTIONS, FUNCTIONS_SECTION))
    }

    def covers(documented: str, path: str) -> bool:
        return path.startswith(documented.removesuffix("...")) if documented.endswith("...") else path == documented

    lost = sorted(
        f"{route.function}: {route.path}"
        for route in ROUTES
        if not any(covers(documented, route.path) for documented in paths.get(route.function, []))
    )
    assert not lost, f"routes docs/conventions.md's function table does not give to their function: {lost}"
    overreach = sorted(
        f"{function}: {documented}"
        for function, documented_paths in paths.items()
        for documented in documented_paths
        if not any(route.function == function and covers(documented, route.path) for route in ROUTES)
    )
    assert not overreach, f"paths in docs/conventions.md's function table no route of that function has: {overreach}"


# -- paths and links ------------------------------------------------------------------------------------


TOP_LEVEL = frozenset(path.name for path in REPO.iterdir()) | {"shop"}


def _path_of(text: str) -> pathlib.Path | None:
    """The file or folder a backticked `text` names, when it is a path in the project (`shop/...`: in the layer)."""
    if "/" not in text or any(mark in text for mark in "<>*{} $") or text.split("/", maxsplit=1)[0] not in TOP_LEVEL:
        return None
    base = LAYER if text.startswith("shop/") else REPO
    return base / text.split("::", maxsplit=1)[0].split(":", maxsplit=1)[0]


@pytest.mark.parametrize("document", ENTRY_DOCUMENTS, ids=lambda p: p.name)
def test_every_path_an_entry_document_names_exists(document):
    missing = sorted(
        text for text in _ticked(document.read_text()) if (path := _path_of(text)) is not None and not path.exists()
    )
    assert not missing, f"{document.name} names paths that do not exist: {missing}"


def _anchors(path: pathlib.Path) -> set[str]:
    """The anchors GitHub gives a Markdown file's headings: lower case, punctuation but `-` and `_` dropped,
    spaces as hyphens (outside code blocks)."""
    anchors, fenced = set(), False
    for line in path.read_text().splitlines():
        fenced = fenced != line.startswith("```")
        if not fenced and _level(line):
            text = line.lstrip("#").strip().lower()
            anchors.add(re.sub(r"[^\w\- ]", "", text).replace(" ", "-"))
    return anchors


@pytest.mark.parametrize("document", [*ENTRY_DOCUMENTS, REPO / "README.md"], ids=lambda p: p.name)
def test_links_stay_inside_the_project_and_resolve(document):
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", document.read_text()):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        file, _, anchor = target.partition("#")
        path = (document.parent / file).resolve() if file else document
        inside = path.is_relative_to(REPO) and path.exists()
        if not inside or (anchor and path.suffix == ".md" and anchor not in _anchors(path)):
            broken.append(target)
    assert not broken, f"{document.name}: links outside the project, to nothing or to no heading: {broken}"


def test_the_idempotency_page_is_linked_from_both_entry_documents():
    for document in (ARCHITECTURE, CONVENTIONS):
        assert "(idempotency.md" in document.read_text(), document.name
