"""Cold start: no cyclic garbage collection while a function's module is imported (Lambda's init).

Importing a function creates a few hundred modules' worth of long-lived objects (classes, typing
constructs, Powertools' resolver, pydantic models). None of it is garbage, yet CPython's
generational collector keeps walking it as it accumulates, and each full collection walks the
whole heap: ~40 ms of a ~290 ms import here (docs/decisions.md, "Cold start").

``begin()`` first thing in ``handler.py`` also registers Powertools' large packages to load
lazily (``shop.lazy_packages``) and, in a SnapStart init, what a restore redraws
(``shop.restore_hooks``). It pauses the collector; ``done()`` last thing resumes it;
``paused_first_call`` does the same around the first invocation (it creates the boto3 client).
Reference counting frees everything acyclic meanwhile, so only cyclic garbage made during the
import waits, and the import makes little. In a Lambda process (``AWS_LAMBDA_FUNCTION_NAME`` is
set), ``done()`` also moves what the import built to the permanent generation (``gc.freeze()``):
it lives as long as the process, so later collections need not walk it again. Elsewhere (tests,
the local runtime, the OpenAPI build, which import several functions into one long process)
nothing is frozen. ``done()`` is idempotent. A module that fails half way leaves the collector
paused, which only delays cyclic garbage: on Lambda a failed init ends the environment anyway.
"""

from __future__ import annotations

import functools
import gc
import os
from collections.abc import Callable
from typing import Any, TypeVar

from shop import lazy_packages, restore_hooks

F = TypeVar("F", bound=Callable[..., Any])

_paused = False


def begin() -> None:
    """Init starts: Powertools' large packages load lazily, the cyclic collector pauses until ``done()``."""
    global _paused
    lazy_packages.install()
    restore_hooks.install()
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
