"""Server-generated identifiers."""

from __future__ import annotations

import secrets

from ulid import ULID


def new_id() -> str:
    """A ULID: URL-safe, unique, and sorted by creation time."""
    return str(ULID())


def new_session_id() -> str:
    """An unguessable capability: 192 random bits, URL-safe."""
    return secrets.token_urlsafe(24)
