"""A clock a test moves by hand (the `ttl_clock` fixture's, tests/conftest.py): pure Python, for the fast lane too."""

from __future__ import annotations


class HandClock:
    """Seconds as a float, starting at 1000.0; the test advances it (`clock.at += seconds`)."""

    def __init__(self) -> None:
        self.at = 1_000.0

    def __call__(self) -> float:
        return self.at
