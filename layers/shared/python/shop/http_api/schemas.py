"""The HTTP bodies and parameters: what the OpenAPI document says, and what validation enforces.

What every API function shares is here; its own bodies are in ``<customer|product|session|order>_schemas``.
The document says exactly what validation accepts: docs/decisions.md, "Hardening: an exact OpenAPI document".
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import MISSING, BeforeValidator, ConfigDict, Field, RootModel

from shop.models.common import Model

# Not `\s`: its members differ between ECMA-262, Rust and Python. Spelled out, the class excludes
# every control character and every character any of them counts as whitespace. Not `$` either:
# Python's also matches before a final newline; `(?![\s\S])` is the end of the string in ECMA-262
# and Python alike (Rust's regex has no look-ahead: models using it validate with `PYTHON_REGEX`).
_NOT_IN_EMAIL = r"@\x00-\x20\x7f-\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
EMAIL_PATTERN = rf"^[^{_NOT_IN_EMAIL}]+@[^{_NOT_IN_EMAIL}]+\.[^{_NOT_IN_EMAIL}]+(?![\s\S])"
PYTHON_REGEX = ConfigDict(regex_engine="python-re")

T = TypeVar("T")


def _integral_float_to_int(value: Any) -> Any:
    return int(value) if isinstance(value, float) and value.is_integer() else value


# After a StrictInt and its bounds: an integer as JSON Schema counts one, 2 and 2.0, never 2.5, "2" or true.
# (Placed after the bounds so that they stay `minimum`/`maximum` in the schema.)
INTEGRAL = BeforeValidator(_integral_float_to_int)


def given(value: T | MISSING) -> T | None:
    """An optional, non-nullable field's value, or None when the client left it out."""
    return None if value is MISSING else value


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
    "EMAIL_PATTERN",
    "INTEGRAL",
    "MISSING",
    "PYTHON_REGEX",
    "Body",
    "ErrorResponse",
    "FieldError",
    "UnauthorizedResponse",
    "ValidationErrorResponse",
    "given",
]
