"""Import one class from Powertools' large packages without running the package's ``__init__``.

``install()`` (called by ``shop.runtime.lean_init.begin``) registers Powertools' ``event_handler`` and
``utilities.data_classes`` uninitialised; any name still imports, and anything unexpected falls back to the
ordinary import. It reads the ``__init__``'s ``from .x import name`` lines, the shape of the pinned Powertools
(tests/unit/test_cold_start_imports.py fails if a handler's import runs an ``__init__`` again). The shop's own
packages do the same with ``shop.runtime.lazy_exports``. Why: docs/decisions.md, "Cold start".
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
import threading
from types import ModuleType
from typing import Any

PACKAGES = ("aws_lambda_powertools.event_handler", "aws_lambda_powertools.utilities.data_classes")


_FROM_IMPORT = re.compile(r"^from\s+(\.?[\w.]+)\s+import\s+(?:\(([^)]*)\)|([^\n#]+))", re.MULTILINE)


def _exported(package: str, source: str) -> dict[str, str]:
    """``name -> submodule`` for every ``from <package>.x import name`` / ``from .x import name``.

    A regular expression over the ``__init__``'s top-level imports (``ast`` would cost an import of its own).
    """
    names: dict[str, str] = {}
    for found in _FROM_IMPORT.finditer(source):
        module, listed = found.group(1), found.group(2) or found.group(3)
        if module.startswith("."):
            module = f"{package}{module}"
        elif not module.startswith(package + "."):
            continue
        for item in listed.split(","):
            words = item.split("#", 1)[0].split()
            if len(words) == 1:
                names[words[0]] = module
            elif len(words) == 3 and words[1] == "as":
                names[words[2]] = module
    return names


def _lazy(package: str) -> ModuleType | None:
    spec = importlib.util.find_spec(package)
    if spec is None or spec.loader is None or not spec.origin or not spec.submodule_search_locations:
        return None
    with open(spec.origin, encoding="utf-8") as source:
        exported = _exported(package, source.read())
    module = importlib.util.module_from_spec(spec)
    loader = spec.loader
    lock = threading.RLock()
    initialised = False

    def __getattr__(name: str) -> Any:
        nonlocal initialised
        if name.startswith("__") and name != "__all__":
            raise AttributeError(name)
        target = exported.get(name)
        if target is not None:
            value = getattr(importlib.import_module(target), name)
            setattr(module, name, value)
            return value
        if name != "__all__" and importlib.util.find_spec(f"{package}.{name}") is not None:
            return importlib.import_module(f"{package}.{name}")  # `from <package> import <submodule>`
        with lock:
            if not initialised:
                initialised = True
                loader.exec_module(module)  # the real __init__: everything the package exports
        if name in module.__dict__:
            return module.__dict__[name]
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    return module


def install() -> None:
    """Register the packages uninitialised (idempotent; a no-op for any already imported)."""
    for package in PACKAGES:
        if package in sys.modules:
            continue
        parent_name, _, child = package.rpartition(".")
        try:
            parent = importlib.import_module(parent_name)
            module = _lazy(package)
        except (ImportError, OSError, ValueError):
            continue
        if module is None:
            continue
        sys.modules[package] = module
        setattr(parent, child, module)
