"""Who is calling, from the claims API Gateway's JWT authorizer put in ``requestContext.authorizer.jwt``.

The token is already verified: this reads the groups claim in its only two forms and checks ``sub`` (a key and a
path segment) before anything reads it. Why: docs/decisions.md, "Hardening: gateway and identity".
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Mapping
from typing import Any

from shop.errors import Forbidden
from shop.http_api.errors import Unauthorized
from shop.limits import MAX_SUB_LENGTH
from shop.services.actor import Actor

GROUP_CLAIMS = ("cognito:groups", "groups")
ADMIN_GROUP = "admin"
SUB_FORBIDDEN_CHARACTERS = frozenset("/?%")


class InvalidSubject(Forbidden):
    """The token is valid but its ``sub`` cannot name a customer (403: a new token will not help)."""

    code = "INVALID_SUBJECT"


def claims_of(event: Mapping[str, Any]) -> dict[str, Any] | None:
    """The verified JWT claims of a payload-format-2.0 event, or None for an anonymous request."""
    context = event.get("requestContext") or {}
    authorizer = context.get("authorizer") or {}
    jwt = authorizer.get("jwt") or {}
    claims = jwt.get("claims")
    return claims if isinstance(claims, dict) and claims else None


def parse_groups(value: Any) -> frozenset[str]:
    """Group names from a JSON list or API Gateway's flattened ``"[a b]"``; another string is one name."""
    if isinstance(value, list):
        return frozenset(item for item in value if isinstance(item, str) and item)
    if not isinstance(value, str) or not value:
        return frozenset()
    if value.startswith("[") and value.endswith("]"):
        return frozenset(value[1:-1].split())
    return frozenset({value})


def check_subject(sub: str) -> None:
    """Refuse a ``sub`` that cannot be stored as a customer id or addressed in a path."""
    problem = _subject_problem(sub)
    if problem is not None:
        raise InvalidSubject(problem)


@functools.lru_cache(maxsize=1024)  # a warm function sees the same callers again: each sub is checked once
def _subject_problem(sub: str) -> str | None:
    if len(sub) > MAX_SUB_LENGTH:
        return f"the token's sub must be at most {MAX_SUB_LENGTH} characters"
    if any(char in SUB_FORBIDDEN_CHARACTERS or unicodedata.category(char) in ("Cc", "Cs") for char in sub):
        return "the token's sub must not contain control characters, surrogates, '/', '?' or '%'"
    return None


def actor_from_claims(claims: Mapping[str, Any] | None) -> Actor | None:
    if not claims:
        return None
    sub = claims.get("sub")
    if not isinstance(sub, str) or not sub:
        return None
    check_subject(sub)
    groups: frozenset[str] = frozenset()
    for name in GROUP_CLAIMS:
        groups |= parse_groups(claims.get(name))
    return Actor(sub=sub, is_admin=ADMIN_GROUP in groups)


def optional_actor(event: Mapping[str, Any]) -> Actor | None:
    """The caller, or None when anonymous; 403 INVALID_SUBJECT for a token whose ``sub`` breaks the limits."""
    return actor_from_claims(claims_of(event))


def require_actor(event: Mapping[str, Any]) -> Actor:
    """The signed-in caller; 401 UNAUTHORIZED if the request carries no verified claims."""
    actor = optional_actor(event)
    if actor is None:
        raise Unauthorized("sign in first: this route needs a valid bearer token")
    return actor
