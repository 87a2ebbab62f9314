"""Bodies of the orders function (shared parts in shop.http_api.schemas)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field, StrictInt, model_validator

from shop.http_api.countries import CountryCode
from shop.http_api.schemas import INTEGRAL, MISSING, Body
from shop.limits import MAX_ID_LENGTH, MAX_ORDER_LINES, MAX_QUANTITY
from shop.models import Order, OrderStatus, OrderSummary, ShippingAddress
from shop.models.common import Model


class AddressIn(ShippingAddress):
    model_config = ConfigDict(extra="forbid")

    country: CountryCode


class OrderLineIn(Body):
    product_id: str = Field(min_length=1, max_length=MAX_ID_LENGTH)
    quantity: Annotated[StrictInt, Field(ge=1, le=MAX_QUANTITY), INTEGRAL]


SOURCES = ("session_id", "lines", "cart")


class OrderIn(Body):
    """Exactly one of ``session_id`` (check out a session's cart), ``lines`` or ``"cart": "customer"`` (check
    out the caller's own cart), plus the address."""

    model_config = ConfigDict(json_schema_extra={"oneOf": [{"required": [source]} for source in SOURCES]})

    session_id: Annotated[str, Field(min_length=1, max_length=MAX_ID_LENGTH)] | MISSING = MISSING
    lines: Annotated[list[OrderLineIn], Field(min_length=1, max_length=MAX_ORDER_LINES)] | MISSING = MISSING
    cart: Annotated[Literal["customer"], Field(description="check out the caller's customer cart")] | MISSING = MISSING
    shipping_address: AddressIn

    @model_validator(mode="after")
    def _exactly_one_source(self) -> OrderIn:
        if sum(source in self.model_fields_set for source in SOURCES) != 1:
            raise ValueError("give exactly one of session_id, lines or cart")
        return self


class OrderStatusPatch(Body):
    status: OrderStatus


class OrderSummaryPage(Model):
    items: list[OrderSummary]
    next_token: str | None


__all__ = [
    "AddressIn",
    "Order",
    "OrderIn",
    "OrderLineIn",
    "OrderStatusPatch",
    "OrderSummary",
    "OrderSummaryPage",
]
