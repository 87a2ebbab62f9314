"""The HTTP bodies and parameters: what the OpenAPI document says, and what validation enforces.

What every API function shares is here; its own bodies are in ``<customer|product|session|order>_schemas``.
The document says exactly what validation accepts: docs/decisions.md, "Hardening: an exact OpenAPI document".
"""

from __future__ import annotations

from typing import Any, ClassVar, TypeVar

from pydantic import MISSING, BaseModel, BeforeValidator, ConfigDict, Field, GetJsonSchemaHandler, TypeAdapter
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

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


class OneOfBody(Body):
    """A body that takes one of several shapes: validated as this one model (one error list, one rule for
    exactly one source), documented as ``oneOf`` the closed, named ``ALTERNATIVES``, so that client generators
    make a type of each (docs/decisions.md, "An SDK-grade contract"). Each alternative admits exactly what this
    model accepts of that shape; tests/functions/test_document_exactness.py holds them to it."""

    ALTERNATIVES: ClassVar[tuple[type[BaseModel], ...]] = ()

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        # The generator itself (not the handler, which inlines a model) names each alternative a component.
        generate = handler.generate_json_schema  # type: ignore[attr-defined]
        alternatives = [generate.generate_inner(TypeAdapter(model).core_schema) for model in cls.ALTERNATIVES]
        return {"oneOf": alternatives, "title": cls.__name__, "description": " ".join((cls.__doc__ or "").split())}


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


class UnauthorizedResponse(Model):
    """401: API Gateway's JWT authorizer answers ``{"message": "Unauthorized"}`` itself (HTTP APIs cannot change
    that body); a function reached without claims answers ``error`` as every other error. One object with both
    (not a union of two): generators give it one type."""

    model_config = ConfigDict(json_schema_extra={"minProperties": 1})

    message: str | MISSING = Field(default=MISSING, description='"Unauthorized": the gateway\'s own body')
    error: ErrorDetail | MISSING = Field(default=MISSING, description="ours, as in every other error")


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
    "OneOfBody",
    "UnauthorizedResponse",
    "ValidationErrorResponse",
    "given",
]
