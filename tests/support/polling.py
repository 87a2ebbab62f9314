"""Waiting for something a background thread or process does, with a bound and a failure that says what."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest


def until(condition: Callable[[], Any], what: str, timeout: float = 30.0, interval: float = 0.02) -> Any:
    """`condition()`'s first truthy answer, polled every `interval` seconds; the test fails after `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(interval)
    pytest.fail(f"not within {timeout:.0f}s: {what}")
