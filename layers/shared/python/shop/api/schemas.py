"""The HTTP bodies and parameters: what the OpenAPI document says, and what validation enforces.

This module holds what every API function shares: the limits, the request-body base and the error
bodies. Each function's own bodies are in ``customer_schemas``, ``product_schemas``,
``session_schemas`` and ``order_schemas``, so a function defines only its own models at import.

Request bodies forbid unknown fields and use strict integers (no "5" for 5, no true for 1), with
bounds on every number and string so nothing a client sends can reach the store as a bad value.
Responses reuse the domain models (shop.models) so the document describes exactly what is sent.
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field, RootModel

from shop.limits import MAX_ID_LENGTH, MAX_ORDER_LINES, MAX_PRICE_CENTS, MAX_QUANTITY, MAX_STOCK, MAX_TOKEN_LENGTH
from shop.models.common import Model

MAX_LIMIT = 100
DEFAULT_LIMIT = 20
EMAIL_PATTERN = r"^[^@\s]+@[^@\s]+\.[^@\s]+$"


class Body(Model):
    """Base of every request body: unknown fields are a validation error."""

    model_config = ConfigDict(extra="forbid")


# ----- errors -----


class FieldError(Model):
    location: str = Field(description="where the field is: body, query, path or header")
    field: str = Field(description="dotted path of the offending field, e.g. lines.0.quantity")
    message: str
    type: str = Field(description="machine-readable error type, e.g. missing, int_type, extra_forbidden")


class ErrorDetail(Model):
    code: str = Field(description="SNAKE_UPPER_CASE error code")
    message: str
    details: Any | None = Field(default=None, description="optional; a list of FieldError for VALIDATION_ERROR")


class ErrorResponse(Model):
    error: ErrorDetail


class GatewayUnauthorized(Model):
    """What API Gateway's JWT authorizer answers itself (HTTP APIs cannot change this body)."""

    message: str = Field(description='"Unauthorized"')


class UnauthorizedResponse(RootModel[GatewayUnauthorized | ErrorResponse]):
    """401: the gateway's own body, or ours when a function is reached without claims."""

    model_config = ConfigDict(defer_build=True)


class ValidationErrorDetail(Model):
    code: str = Field(description="VALIDATION_ERROR")
    message: str
    details: list[FieldError] | None = None


class ValidationErrorResponse(Model):
    error: ValidationErrorDetail


__all__ = [
    "DEFAULT_LIMIT",
    "EMAIL_PATTERN",
    "MAX_ID_LENGTH",
    "MAX_LIMIT",
    "MAX_ORDER_LINES",
    "MAX_PRICE_CENTS",
    "MAX_QUANTITY",
    "MAX_STOCK",
    "MAX_TOKEN_LENGTH",
    "Body",
    "ErrorResponse",
    "FieldError",
    "UnauthorizedResponse",
    "ValidationErrorResponse",
]
