"""Server-generated identifiers: random bits from os.urandom at call time, never drawn at import.

The ULID generator (the `ulid` package) is made on the first new id: the read routes of a function never
import it (docs/performance.md, "Cold start").
"""

from __future__ import annotations

import secrets
import threading
from typing import Any

from shop.runtime import snapstart

_ulids: Any = None
_lock = threading.Lock()


def _generator() -> Any:
    global _ulids
    if _ulids is None:
        with _lock:
            if _ulids is None:
                from ulid import ULIDGenerator

                _ulids = ULIDGenerator()
    return _ulids


def new_id() -> str:
    """A ULID: URL-safe, unique, and sorted by creation time."""
    return str(_generator().generate())


def new_session_id() -> str:
    """An unguessable capability: 192 random bits, URL-safe."""
    return secrets.token_urlsafe(24)


def _forget_last_id() -> None:
    # Within one millisecond a ULID is the previous one plus 1: no restored environment may derive
    # its ids from the snapshot's last one.
    global _ulids
    _ulids = None


snapstart.after_restore(_forget_last_id)
