"""Reusable parameter types for routes: ids in paths, pagination in queries."""

from typing import Annotated

from aws_lambda_powertools.event_handler import Request
from aws_lambda_powertools.event_handler.openapi.params import Path, Query

from shop.http_api.auth import require_actor
from shop.limits import DEFAULT_LIMIT, MAX_ID_LENGTH, MAX_LIMIT, MAX_TOKEN_LENGTH
from shop.services.actor import Actor

CustomerId = Annotated[str, Path(min_length=1, max_length=MAX_ID_LENGTH, description="the customer's token sub")]
ProductId = Annotated[str, Path(min_length=1, max_length=MAX_ID_LENGTH)]
OrderId = Annotated[str, Path(min_length=1, max_length=MAX_ID_LENGTH)]
SessionId = Annotated[str, Path(min_length=1, max_length=MAX_ID_LENGTH, description="the session's capability id")]
Limit = Annotated[int, Query(ge=1, le=MAX_LIMIT, description=f"page size, 1..{MAX_LIMIT}")]
NextToken = Annotated[
    str | None, Query(min_length=1, max_length=MAX_TOKEN_LENGTH, description="opaque token from the previous page")
]

__all__ = ["DEFAULT_LIMIT", "Actor", "Request", "caller"]


def caller(request: Request) -> Actor:
    """The signed-in caller of a protected route (401 UNAUTHORIZED without verified claims)."""
    return require_actor(request.resolved_event.raw_event)
