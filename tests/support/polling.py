"""Waiting for something a background thread or process does, with a bound and a failure that says what."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest


def until(condition: Callable[[], Any], what: str, timeout: float = 30.0, interval: float = 0.02) -> Any:
    """`condition()`'s first truthy answer, polled every `interval` seconds; after `timeout` the test fails with
    `what` and the last answer."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = condition()
        if last:
            return last
        time.sleep(interval)
    pytest.fail(f"not within {timeout:.0f}s: {what} (last: {json.dumps(last, default=str)[:500]})")
