"""Cold start: no cyclic garbage collection while a function's module is imported (Lambda's init).

``begin()`` first thing in ``handler.py`` (it also installs ``shop.runtime.lazy_powertools`` and
``shop.runtime.snapstart``), ``done()`` last thing; ``paused_first_call`` covers the first invocation.
Why: docs/decisions.md, "Cold start".
"""

from __future__ import annotations

import functools
import gc
import os
from collections.abc import Callable
from typing import Any, TypeVar

from shop.runtime import lazy_powertools, snapstart

F = TypeVar("F", bound=Callable[..., Any])

_paused = False


def begin() -> None:
    """Init starts: Powertools' large packages load lazily, the cyclic collector pauses until ``done()``."""
    global _paused
    lazy_powertools.install()
    snapstart.install()
    if gc.isenabled():
        gc.disable()
        _paused = True


def done() -> None:
    """Resume the collector paused by ``begin()``; on Lambda, freeze what the import built first."""
    global _paused
    if not _paused:
        return
    _paused = False
    if os.environ.get("AWS_LAMBDA_FUNCTION_NAME"):
        gc.freeze()
    gc.enable()


def paused_first_call(handler: F) -> F:
    """The Lambda handler, with the collector paused during its first invocation as during the import.

    The first invocation creates the DynamoDB client (botocore loads its service model and endpoint
    rules: tens of thousands of long-lived objects) and builds the route's validators.
    """
    first = True

    @functools.wraps(handler)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nonlocal first
        if not first:
            return handler(*args, **kwargs)
        first = False
        begin()
        try:
            return handler(*args, **kwargs)
        finally:
            done()

    return wrapper  # type: ignore[return-value]
