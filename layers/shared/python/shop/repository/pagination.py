"""Opaque, tamper-evident next tokens: base64url(JSON position) + "." + base64url(HMAC-SHA256).

The HMAC also covers the list's scope (not carried), so a token of another list is refused; keys come from
shop.pagination_keys. docs/access-patterns.md ("Pagination"), docs/decisions.md ("Hardening: limits").
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import zlib
from typing import Any

from shop import errors, pagination_keys
from shop.limits import MAX_TOKEN_LENGTH

_ZLIB_HEADER = 0x78
# A signed payload is ours, but bound what it may inflate to anyway.
MAX_INFLATED_BYTES = 64 * 1024


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _signature(scope: str, payload: bytes, secret: bytes) -> bytes:
    # The payload is the token's own bytes, so no other scope can end in the same signed message.
    return hmac.new(secret, scope.encode() + b"\n" + payload, hashlib.sha256).digest()


def encode(scope: str, position: Any, secret: bytes | None = None, *, compress: bool = False) -> str:
    payload = json.dumps(position, separators=(",", ":"), sort_keys=True, ensure_ascii=False).encode()
    if compress:
        payload = min(payload, zlib.compress(payload, 9), key=len)
    key = secret if secret is not None else pagination_keys.signing_key()
    return f"{_b64(payload)}.{_b64(_signature(scope, payload, key))}"


def peek(token: str) -> Any:
    """The position a token carries, unverified: only to choose the scope `decode` then verifies it against
    (a list whose scope depends on the token's shape). None for anything that is not a token's shape."""
    if not token or len(token) > MAX_TOKEN_LENGTH or token.count(".") != 1:
        return None
    try:
        return _position(_unb64(token.split(".", maxsplit=1)[0]))
    except (ValueError, TypeError, errors.InvalidNextToken):
        return None


def _position(payload: bytes) -> Any:
    try:
        if payload[:1] == bytes([_ZLIB_HEADER]):
            inflater = zlib.decompressobj()
            payload = inflater.decompress(payload, MAX_INFLATED_BYTES)
            if inflater.unconsumed_tail:
                raise ValueError("inflates past the bound")
        return json.loads(payload)
    except (ValueError, zlib.error):
        raise errors.InvalidNextToken("next_token is not a token this list issued") from None


def decode(token: str, scope: str, secret: bytes | None = None) -> Any:
    invalid = errors.InvalidNextToken("next_token is not a token this list issued")
    if not token or len(token) > MAX_TOKEN_LENGTH or token.count(".") != 1:
        raise invalid
    body, signature = token.split(".")
    try:
        payload = _unb64(body)
        given = _unb64(signature)
    except (ValueError, TypeError):
        raise invalid from None

    def matches(key: bytes) -> bool:
        return hmac.compare_digest(given, _signature(scope, payload, key))

    if not (matches(secret) if secret is not None else pagination_keys.verify(matches)):
        raise invalid
    return _position(payload)
