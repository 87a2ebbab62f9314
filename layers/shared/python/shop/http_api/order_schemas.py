"""Bodies of the orders function (shared parts in shop.http_api.schemas)."""

from __future__ import annotations

from typing import Annotated

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


class OrderIn(Body):
    """Exactly one of ``session_id`` (check out a session's cart) or ``lines``, plus the address."""

    model_config = ConfigDict(json_schema_extra={"oneOf": [{"required": ["session_id"]}, {"required": ["lines"]}]})

    session_id: Annotated[str, Field(min_length=1, max_length=MAX_ID_LENGTH)] | MISSING = MISSING
    lines: Annotated[list[OrderLineIn], Field(min_length=1, max_length=MAX_ORDER_LINES)] | MISSING = MISSING
    shipping_address: AddressIn

    @model_validator(mode="after")
    def _exactly_one_source(self) -> OrderIn:
        if ("session_id" in self.model_fields_set) == ("lines" in self.model_fields_set):
            raise ValueError("give exactly one of session_id or lines")
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
