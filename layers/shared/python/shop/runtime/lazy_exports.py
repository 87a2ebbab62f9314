"""A shop package's ``__getattr__`` (PEP 562): each name it exports imports its own submodule on first use.

``shop.models`` and ``shop.repository`` export their names through it, so a function loads the models and
repositories it uses, not all of them. Why: docs/decisions.md, "Cold start".
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any


def exports(package: str, where: dict[str, str]) -> Callable[[str], Any]:
    """``package``'s ``__getattr__``: ``where`` maps each exported name to the submodule that defines it."""

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
