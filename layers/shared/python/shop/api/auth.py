"""Who is calling, from the claims API Gateway's JWT authorizer put in ``requestContext.authorizer.jwt``.

API Gateway has already verified the token (and rejected a missing or invalid one with 401) on
protected routes; the function only reads the verified claims. The groups claim arrives either as
a JSON list or, from API Gateway, as a string such as ``"[admin]"`` or ``"[admin customer]"``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from shop.api.errors import Unauthorized
from shop.services.actor import Actor

GROUP_CLAIMS = ("cognito:groups", "groups")
ADMIN_GROUP = "admin"
_SEPARATORS = re.compile(r"[\s,]+")


def claims_of(event: Mapping[str, Any]) -> dict[str, Any] | None:
    """The verified JWT claims of a payload-format-2.0 event, or None for an anonymous request."""
    context = event.get("requestContext") or {}
    authorizer = context.get("authorizer") or {}
    jwt = authorizer.get("jwt") or {}
    claims = jwt.get("claims")
    return claims if isinstance(claims, dict) and claims else None


def parse_groups(value: Any) -> frozenset[str]:
    """Groups from a list, a JSON list string, or API Gateway's ``[a b]`` / ``[a,b]`` string form."""
    if value is None:
        return frozenset()
    if isinstance(value, list | tuple | set | frozenset):
        return frozenset(str(item).strip() for item in value if str(item).strip())
    text = str(value).strip()
    if text.startswith("[") and '"' in text:
        try:
            decoded = json.loads(text)
        except ValueError:
            decoded = None
        if isinstance(decoded, list):
            return parse_groups(decoded)
    text = text.removeprefix("[").removesuffix("]")
    return frozenset(part.strip("\"'") for part in _SEPARATORS.split(text) if part.strip("\"'"))


def actor_from_claims(claims: Mapping[str, Any] | None) -> Actor | None:
    if not claims:
        return None
    sub = claims.get("sub")
    if not isinstance(sub, str) or not sub:
        return None
    groups: frozenset[str] = frozenset()
    for name in GROUP_CLAIMS:
        groups |= parse_groups(claims.get(name))
    return Actor(sub=sub, is_admin=ADMIN_GROUP in groups)


def optional_actor(event: Mapping[str, Any]) -> Actor | None:
    return actor_from_claims(claims_of(event))


def require_actor(event: Mapping[str, Any]) -> Actor:
    """The signed-in caller; 401 UNAUTHORIZED if the request carries no verified claims."""
    actor = optional_actor(event)
    if actor is None:
        raise Unauthorized("sign in first: this route needs a valid bearer token")
    return actor
