"""What a layer's code can import at run time, read from the source (the proof behind infra.build_layers' trims).

`closure(roots, sites)` follows, from the root modules, every import any code path can reach:

- every `import` and `from ... import` statement at any depth (module level, inside functions, inside `try`),
  except those under `if TYPE_CHECKING:` (never executed);
- `importlib.import_module("literal")` and any other string literal that names a module of the sites (lazy
  imports by name: Powertools' lazy loader, pydantic's dynamic imports);
- lazy attribute maps (`{"name": ("module", "Class")}` dict literals resolved by a module's or an object's
  `__getattr__`, as stripe's `_import_map`, `V1Services` and its services' sub-services): an entry is followed
  when any reachable module names its key (`pkg.name`, `obj.name`, `from pkg import name`, `getattr(x, "name")`);
  a module-level map (a package `__init__`'s `_import_map`) only when its key is read on that package;
- a package's submodule read as an attribute of the package (`pkg.sub`: a lazy `__getattr__` imports it);
- every entry of a map keyed by data rather than by a name in the code (stripe's V1 response classes,
  `FOLLOW_ALL_MAPS`); none of the V2 API's maps (`NOT_FOLLOWED_MAPS`).

A module is a file; importing `a.b.c` imports `a` and `a.b` too. Modules outside the sites (the standard library,
boto3) are not followed.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from functools import cache
from pathlib import Path

# Maps keyed by data, not by a name in the code: every entry is followed. stripe's V1 response classes, keyed by
# the `object` field of any object at any depth of a response: Stripe adds fields to every API version, so a
# response may come to hold any object type the library knows, whatever the pinned version's annotations say
# (localstripe's PaymentIntent already holds `charges`, a list of Charge objects no annotation of 16.1.0 names).
FOLLOW_ALL_MAPS = {("stripe._object_classes", "OBJECT_CLASSES")}
# Maps never followed: the V2 API's object and event classes (only a request to a /v2 path makes a V2 response; the
# shop calls v1 only, tests/functions/test_trimmed_layers.py checks that it names no `v2`).
NOT_FOLLOWED_MAPS = {
    ("stripe._object_classes", "V2_OBJECT_CLASSES"),
    ("stripe.events._event_classes", "V2_EVENT_CLASS_LOOKUP"),
    ("stripe.events._event_classes", "V2_EVENT_NOTIFICATION_CLASS_LOOKUP"),
}


# functions that import a module by a name computed at run time
COMPUTED_IMPORTERS = {"import_module", "__import__", "import_string", "find_spec"}
# Modules whose computed imports are accounted for (re-read each entry when a pin moves); any other reachable
# module with one keeps its whole top-level package (aws_xray_sdk's patcher and plugins, wrapt's import hooks).
EXPLAINED_COMPUTED_IMPORTS = {
    # the lazy attribute maps above
    "stripe": "lazy maps",
    # `__getattr__` over _dynamic_imports, relative names that are followed as strings
    "pydantic": "relative names",
    # getattr_migration: import_string of the "module:attr" literals of its maps, followed as strings
    "pydantic._migration": "literal maps",
    # import_string of an `ImportString` field's value: no model of the shop or of Powertools declares one
    # (tests/functions/test_trimmed_layers.py)
    "pydantic._internal._validators": "ImportString fields only",
    # LazyLoader(name, globals, module): its one call site (the Tracer) names shared.constants.XRAY_SDK_MODULE, a
    # string literal there, followed as a string (and aws_xray_sdk is kept whole for its patcher)
    "aws_lambda_powertools.shared.lazy_import": "a literal constant",
    # a package's `__getattr__` importing f"{__name__}.<literal>" or the submodule a literal map names
    "aws_lambda_powertools.utilities.parser": "package map",
    "aws_lambda_powertools.utilities.parser.models": "package map",
    "aws_lambda_powertools.utilities.auth_alpha": "package map",
    "aws_lambda_powertools.utilities.auth_alpha.jwt": "package map",
    "aws_lambda_powertools.utilities.auth_alpha.oauth2": "package map",
    # pydantic.v1's import_string (its PyObject fields only: no v1 model is reachable, see pydantic above) and
    # version_info() (a literal list of optional packages)
    "pydantic.v1.utils": "PyObject fields only",
    "pydantic.v1.types": "PyObject fields only",
    "pydantic.v1.version": "literal names",
    # shop.runtime.lazy_powertools: a submodule a Powertools package's `__init__` names in a `from .x import name`
    # (those imports are followed: the `__init__` is reached as the parent of every submodule)
    "shop.runtime.lazy_powertools": "the packages' __init__ imports",
    # shop.runtime.lazy_exports: the submodules a shop package's `_WHERE` names (every shop module is a root)
    "shop.runtime.lazy_exports": "the shop's own modules",
    # the names of a literal tuple (chardet, charset_normalizer; urllib3, idna), followed as strings (neither
    # character detector is in a layer: infra.build_layers.LEFT_OUT)
    "requests.compat": "literal names",
    "requests.packages": "literal names",
}


def _explained(module: str) -> bool:
    return any(
        module == name or module.startswith(name + ".") for name in EXPLAINED_COMPUTED_IMPORTS if name == "stripe"
    ) or (module in EXPLAINED_COMPUTED_IMPORTS)


class Sites:
    """Every module (file) under some site folders, by dotted name."""

    def __init__(self, sites: Iterable[Path]) -> None:
        self.files: dict[str, Path] = {}
        self.packages: set[str] = set()
        for site in sites:
            for path in sorted(site.rglob("*.py")):
                parts = path.relative_to(site).with_suffix("").parts
                if any(not part.isidentifier() for part in parts):
                    continue
                if parts[-1] == "__init__":
                    parts = parts[:-1]
                    self.packages.add(".".join(parts))
                name = ".".join(parts)
                if name:
                    self.files.setdefault(name, path)

    def __contains__(self, name: str) -> bool:
        return name in self.files


def type_checking_lines(tree: ast.AST, nodes: list[ast.AST] | None = None) -> set[int]:
    """Line numbers of the statements under `if TYPE_CHECKING:` (or `typing.TYPE_CHECKING`); `nodes`: the tree's,
    when the caller has walked it already."""
    lines: set[int] = set()
    for node in ast.walk(tree) if nodes is None else nodes:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def _lazy_map(node: ast.Dict) -> dict[str, str] | None:
    """`{"key": ("module", "Class") | ["module", "Class"] | ("module", bool)}` -> {key: module}, else None."""
    out: dict[str, str] = {}
    for key, value in zip(node.keys, node.values, strict=True):
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            return None
        if isinstance(value, ast.Constant) and isinstance(value.value, str):  # {"Name": "submodule"}
            out[key.value] = value.value
            continue
        if not (isinstance(value, ast.Tuple | ast.List) and value.elts):
            return None
        first = value.elts[0]
        if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
            return None
        out[key.value] = first.value
    return out or None


def _called_name(func: ast.expr) -> str:
    """`ast.unparse(func).split(".")[-1]`, without unparsing a name or an attribute (nearly every call's)."""
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ast.unparse(func).split(".")[-1]


class Module:
    """What one module's source says about what it imports."""

    def __init__(self, name: str, path: Path, is_package: bool) -> None:
        self.name = name
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        nodes = list(ast.walk(tree))  # walked once: the passes below read it (most of the analysis' CPU)
        guarded = type_checking_lines(tree, nodes)
        package = name if is_package else name.rpartition(".")[0]
        self.imports: set[str] = set()  # at run time
        self.all_imports: dict[str, str] = {}  # local name -> module or module.attr, TYPE_CHECKING ones too
        self.strings: set[str] = set()
        self.attributes: set[str] = set()  # names read as obj.name, from x import name, getattr(x, "name")
        self.package_attributes: set[tuple[str, str]] = set()  # (module, name) read on a module
        self.module_aliases: dict[str, str] = {}
        self.maps: dict[str, dict[str, str]] = {}  # assigned name -> lazy map
        map_nodes: set[int] = set()
        # `def name(self): return self.v1.name` (a forwarding property) runs only when `name` is read elsewhere
        forwarding: set[int] = set()
        for node in nodes:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                forwarding.update(id(n) for n in ast.walk(node) if isinstance(n, ast.Attribute) and n.attr == node.name)
        for node in nodes:
            if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Dict):
                lazy = _lazy_map(node.value)
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if lazy is not None and isinstance(targets[0], ast.Name):
                    self.maps[targets[0].id] = lazy
                    map_nodes.update(id(n) for n in ast.walk(node.value))
        for node in nodes:
            line = getattr(node, "lineno", 0)
            runtime = line not in guarded
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if runtime:
                        self.imports.add(alias.name)
                    local = alias.asname or alias.name.split(".")[0]
                    target = alias.name if alias.asname else alias.name.split(".")[0]
                    self.all_imports[local] = target
                    self.module_aliases[local] = target
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")
                    anchor = anchor[: len(anchor) - (node.level - 1)] if node.level > 1 else anchor
                    base = ".".join([*anchor, *([base] if base else [])])
                for alias in node.names:
                    self.all_imports[alias.asname or alias.name] = f"{base}.{alias.name}"
                    if runtime:
                        self.imports.update((base, f"{base}.{alias.name}"))
                        self.package_attributes.add((base, alias.name))
                        self.attributes.add(alias.name)
                        self.module_aliases[alias.asname or alias.name] = f"{base}.{alias.name}"
            elif runtime and isinstance(node, ast.Attribute) and id(node) not in forwarding:
                self.attributes.add(node.attr)
                if isinstance(node.value, ast.Name):
                    self.package_attributes.add((node.value.id, node.attr))  # resolved with the aliases below
            elif (
                runtime
                and isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "hasattr")
            ):
                if (
                    len(node.args) > 1
                    and isinstance(node.args[1], ast.Constant)
                    and isinstance(node.args[1].value, str)
                ):
                    self.attributes.add(node.args[1].value)
            elif (
                runtime and isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in map_nodes
            ):
                self.strings.add(node.value)
            elif runtime and isinstance(node, ast.JoinedStr):  # f"{__name__}.envelopes"
                text = "".join(
                    name
                    if isinstance(v, ast.FormattedValue) and ast.unparse(v.value) == "__name__"
                    else (v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else "\0")
                    for v in node.values
                )
                if "\0" not in text:
                    self.strings.add(text)
        resolved: set[tuple[str, str]] = set()
        for base, attr in self.package_attributes:
            resolved.add((self.module_aliases.get(base, base), attr))
        self.package_attributes = resolved
        self.tree = tree
        self.package = package
        # a package's own `__getattr__` (PEP 562), at module level or in a module-level `if`
        top_level = [
            n for node in tree.body for n in ([node, *node.body, *node.orelse] if isinstance(node, ast.If) else [node])
        ]
        self.module_getattr = is_package and any(
            isinstance(node, ast.FunctionDef) and node.name == "__getattr__" for node in top_level
        )
        self.computed_import = any(
            isinstance(node, ast.Call)
            and _called_name(node.func) in COMPUTED_IMPORTERS
            and bool(node.args)
            and not isinstance(node.args[0], ast.Constant)
            and getattr(node, "lineno", 0) not in guarded
            for node in nodes
        )


@cache
def _module(name: str, path: Path, is_package: bool) -> Module:
    return Module(name, path, is_package)


def _parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def closure(roots: Iterable[str], sites: Sites, why: dict[str, str] | None = None) -> set[str]:
    """The modules of `sites` that some run-time path from `roots` can import (`why`: filled with the first reason
    each was reached, for reading a plan)."""
    kept: set[str] = set()
    reasons: dict[str, str] = {} if why is None else why
    todo: list[tuple[str, str]] = [(p, "root") for r in roots for p in _parents(r) if p in sites]
    attributes: set[str] = set()
    package_attributes: set[tuple[str, str]] = set()
    strings: dict[str, str] = {}
    maps: list[tuple[str, str, dict[str, str]]] = []

    def reach(target: str, reason: str) -> None:
        todo.extend((p, reason) for p in _parents(target) if p in sites and p not in kept)

    while True:
        while todo:
            name, reason = todo.pop()
            if name in kept or name not in sites:
                continue
            kept.add(name)
            reasons.setdefault(name, reason)
            module = _module(name, sites.files[name], name in sites.packages)
            for target in module.imports:
                reach(target, f"imported by {name}")
            attributes |= module.attributes
            package_attributes |= module.package_attributes
            for text in module.strings:
                for candidate in (text, module.package + text if text.startswith(".") else "", text.partition(":")[0]):
                    if candidate:
                        strings.setdefault(candidate, f"named in {name}")
            if module.computed_import and not _explained(name):
                top = name.split(".")[0]
                for other in sites.files:
                    if other == top or other.startswith(top + "."):
                        reach(other, f"computed import in {name}")
            for map_name, lazy in module.maps.items():
                if (name, map_name) not in NOT_FOLLOWED_MAPS:
                    maps.append((name, map_name, lazy))
        for text, reason in strings.items():
            if text in sites and text not in kept:
                reach(text, reason)
        # `pkg.sub` read on a package: a submodule that a lazy `__getattr__` imports (as shop.runtime.lazy_powertools')
        for owner, attr in package_attributes:
            if f"{owner}.{attr}" in sites and f"{owner}.{attr}" not in kept:
                reach(f"{owner}.{attr}", f"{owner}.{attr} read")
        for owner, map_name, lazy in maps:
            module_level = _module(owner, sites.files[owner], owner in sites.packages).module_getattr
            for key, value in lazy.items():
                named = (owner, key) in package_attributes if module_level else key in attributes
                named = named or (owner, map_name) in FOLLOW_ALL_MAPS
                for target in (value, f"{owner}.{value.lstrip('.')}"):
                    if named and target in sites and target not in kept:
                        reach(target, f"{owner}.{map_name}[{key!r}]")
        if not todo:
            return kept


def top_level_names(site: Path) -> set[str]:
    return {p.stem if p.suffix == ".py" else p.name for p in site.iterdir() if p.suffix == ".py" or p.is_dir()}
