"""The HTTP bodies and parameters: what the OpenAPI document says, and what validation enforces.

Request bodies forbid unknown fields and use strict integers (no "5" for 5, no true for 1), with
bounds on every number and string so nothing a client sends can reach the store as a bad value.
Responses reuse the domain models (shop.models) so the document describes exactly what is sent.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import ConfigDict, Field, RootModel, StrictInt, model_validator

from shop.models import (
    Customer,
    Notification,
    Order,
    OrderStatus,
    OrderSummary,
    Product,
    Review,
    Session,
    ShippingAddress,
)
from shop.models.common import Model

MAX_LIMIT = 100
DEFAULT_LIMIT = 20
MAX_ID_LENGTH = 128
MAX_TOKEN_LENGTH = 2048
MAX_QUANTITY = 99
MAX_PRICE_CENTS = 100_000_000
MAX_STOCK = 1_000_000
MAX_ORDER_LINES = 25
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


# ----- customers -----


class CustomerIn(Body):
    email: str = Field(min_length=3, max_length=254, pattern=EMAIL_PATTERN)
    name: str = Field(min_length=1, max_length=200)


class CustomerPatch(Body):
    email: str | None = Field(default=None, min_length=3, max_length=254, pattern=EMAIL_PATTERN)
    name: str | None = Field(default=None, min_length=1, max_length=200)

    @model_validator(mode="after")
    def _something(self) -> CustomerPatch:
        if self.email is None and self.name is None:
            raise ValueError("give at least one of email, name")
        return self


# ----- products -----


Name = Annotated[str, Field(min_length=1, max_length=200)]
Category = Annotated[str, Field(min_length=1, max_length=100)]
Description = Annotated[str, Field(max_length=4000)]
PriceCents = Annotated[StrictInt, Field(ge=0, le=MAX_PRICE_CENTS)]


class ProductIn(Body):
    name: Name
    category: Category
    price_cents: PriceCents
    description: Description | None = None
    stock: Annotated[StrictInt, Field(ge=0, le=MAX_STOCK)] = 0


class ProductPatch(Body):
    """Any catalogue field but stock; ``description: null`` removes the description."""

    name: Name | None = None
    category: Category | None = None
    price_cents: PriceCents | None = None
    description: Description | None = None

    @model_validator(mode="after")
    def _something(self) -> ProductPatch:
        if not self.model_fields_set:
            raise ValueError("give at least one of name, category, price_cents, description")
        for field in ("name", "category", "price_cents"):
            if field in self.model_fields_set and getattr(self, field) is None:
                raise ValueError(f"{field} cannot be null")
        return self

    def changes(self) -> dict[str, Any]:
        return self.model_dump(include=self.model_fields_set)


class StockIn(Body):
    delta: Annotated[StrictInt, Field(ge=-MAX_STOCK, le=MAX_STOCK)]


class StockOut(Model):
    product_id: str
    stock: int


class ReviewIn(Body):
    rating: Annotated[StrictInt, Field(ge=1, le=5)]
    title: str = Field(min_length=1, max_length=200)
    body: str = Field(min_length=1, max_length=4000)


# ----- sessions -----


class CartQuantityIn(Body):
    quantity: Annotated[StrictInt, Field(ge=0, le=MAX_QUANTITY, description="0 removes the line")]


# ----- orders -----


class AddressIn(ShippingAddress):
    model_config = ConfigDict(extra="forbid")


class OrderLineIn(Body):
    product_id: str = Field(min_length=1, max_length=MAX_ID_LENGTH)
    quantity: Annotated[StrictInt, Field(ge=1, le=MAX_QUANTITY)]


class OrderIn(Body):
    """Exactly one of ``session_id`` (check out a session's cart) or ``lines``, plus the address."""

    session_id: str | None = Field(default=None, min_length=1, max_length=MAX_ID_LENGTH)
    lines: list[OrderLineIn] | None = Field(default=None, min_length=1, max_length=MAX_ORDER_LINES)
    shipping_address: AddressIn

    @model_validator(mode="after")
    def _exactly_one_source(self) -> OrderIn:
        if (self.session_id is None) == (self.lines is None):
            raise ValueError("give exactly one of session_id or lines")
        return self


class OrderStatusPatch(Body):
    status: OrderStatus


# ----- pages -----


class ProductPage(Model):
    items: list[Product]
    next_token: str | None


class ReviewPage(Model):
    items: list[Review]
    next_token: str | None


class NotificationPage(Model):
    items: list[Notification]
    next_token: str | None


class OrderSummaryPage(Model):
    items: list[OrderSummary]
    next_token: str | None


__all__ = [
    "AddressIn",
    "CartQuantityIn",
    "Customer",
    "CustomerIn",
    "CustomerPatch",
    "ErrorResponse",
    "Notification",
    "NotificationPage",
    "Order",
    "OrderIn",
    "OrderStatusPatch",
    "OrderSummaryPage",
    "Product",
    "ProductIn",
    "ProductPage",
    "ProductPatch",
    "Review",
    "ReviewIn",
    "ReviewPage",
    "Session",
    "StockIn",
    "StockOut",
    "ValidationErrorResponse",
]
