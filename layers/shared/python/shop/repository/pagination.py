"""Opaque, tamper-evident next tokens.

A token is base64url(JSON payload) + "." + base64url(HMAC-SHA256). The payload
names the list it belongs to (its scope), so a token from another list, another
customer or another shard set is rejected, not followed.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from typing import Any

from shop import errors
from shop.config import settings

MAX_TOKEN_LENGTH = 2048


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _signature(payload: bytes, secret: bytes) -> bytes:
    return hmac.new(secret, payload, hashlib.sha256).digest()


def encode(scope: str, position: Any, secret: bytes | None = None) -> str:
    payload = json.dumps({"s": scope, "p": position}, separators=(",", ":"), sort_keys=True).encode()
    key = secret if secret is not None else settings().pagination_secret
    return f"{_b64(payload)}.{_b64(_signature(payload, key))}"


def decode(token: str, scope: str, secret: bytes | None = None) -> Any:
    invalid = errors.InvalidNextToken("next_token is not a token this list issued")
    if not token or len(token) > MAX_TOKEN_LENGTH or token.count(".") != 1:
        raise invalid
    body, signature = token.split(".")
    key = secret if secret is not None else settings().pagination_secret
    try:
        payload = _unb64(body)
        given = _unb64(signature)
    except (ValueError, TypeError):
        raise invalid from None
    if not hmac.compare_digest(given, _signature(payload, key)):
        raise invalid
    try:
        decoded = json.loads(payload)
    except ValueError:
        raise invalid from None
    if not isinstance(decoded, dict) or decoded.get("s") != scope:
        raise invalid
    return decoded.get("p")
