"""Server-generated identifiers: random bits from os.urandom at call time, never drawn at import."""

from __future__ import annotations

import secrets

from ulid import ULIDGenerator

from shop import restore_hooks

_ulids = ULIDGenerator()


def new_id() -> str:
    """A ULID: URL-safe, unique, and sorted by creation time."""
    return str(_ulids.generate())


def new_session_id() -> str:
    """An unguessable capability: 192 random bits, URL-safe."""
    return secrets.token_urlsafe(24)


def _forget_last_id() -> None:
    # Within one millisecond a ULID is the previous one plus 1: no restored environment may derive
    # its ids from the snapshot's last one.
    global _ulids
    _ulids = ULIDGenerator()


restore_hooks.after_restore(_forget_last_id)
