"""Bodies of the orders function (shared parts in shop.http_api.schemas)."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import ConfigDict, Field, StrictBool, StrictInt, model_validator

from shop.http_api.countries import CountryCode
from shop.http_api.schemas import INTEGRAL, MISSING, Body, OneOfBody
from shop.limits import (
    MAX_CARRIER_LENGTH,
    MAX_ID_LENGTH,
    MAX_ORDER_LINES,
    MAX_PROMO_CODE_LENGTH,
    MAX_QUANTITY,
    MAX_REASON_LENGTH,
    MAX_TRACKING_NUMBER_LENGTH,
    PROMO_CODE_PATTERN,
)
from shop.models import Order, OrderStatus, OrderSummary, ShippingAddress
from shop.models.common import Model
from shop.models.orders import PaymentDispute, PaymentFailure, PaymentStatus
from shop.models.sales import ProductSales, TopSeller


class AddressIn(ShippingAddress):
    model_config = ConfigDict(extra="forbid")

    country: CountryCode


class OrderLineIn(Body):
    product_id: str = Field(min_length=1, max_length=MAX_ID_LENGTH)
    quantity: Annotated[StrictInt, Field(ge=1, le=MAX_QUANTITY), INTEGRAL]


SOURCES = ("session_id", "lines", "cart")
SessionRef = Annotated[str, Field(min_length=1, max_length=MAX_ID_LENGTH, description="check out this session's cart")]
Lines = Annotated[list[OrderLineIn], Field(min_length=1, max_length=MAX_ORDER_LINES)]
CustomerCart = Annotated[Literal["customer"], Field(description="check out the caller's customer cart")]
PromoCode = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_PROMO_CODE_LENGTH,
        pattern=PROMO_CODE_PATTERN,
        description="a promotion's code, in any case; the automatic promotions that apply are added without one",
    ),
]
ShippingOptionId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_ID_LENGTH,
        description="one of GET /shipping/options?country= for the address's country; absent: its zone's first "
        "option (no shipping is charged while the shop has no shipping zones)",
    ),
]


class OrderFromLines(Body):
    """An order of the lines given here."""

    lines: Lines
    shipping_address: AddressIn
    shipping_option_id: ShippingOptionId | MISSING = MISSING
    promo_code: PromoCode | MISSING = MISSING


class OrderFromSession(Body):
    """An order of a session's cart."""

    session_id: SessionRef
    shipping_address: AddressIn
    shipping_option_id: ShippingOptionId | MISSING = MISSING
    promo_code: PromoCode | MISSING = MISSING


class OrderFromCustomerCart(Body):
    """An order of the caller's own customer cart."""

    cart: CustomerCart
    shipping_address: AddressIn
    shipping_option_id: ShippingOptionId | MISSING = MISSING
    promo_code: PromoCode | MISSING = MISSING


class OrderIn(OneOfBody):
    """Exactly one of ``session_id`` (check out a session's cart), ``lines`` or ``"cart": "customer"`` (check
    out the caller's own cart), plus the address."""

    ALTERNATIVES = (OrderFromLines, OrderFromSession, OrderFromCustomerCart)

    session_id: SessionRef | MISSING = MISSING
    lines: Lines | MISSING = MISSING
    cart: CustomerCart | MISSING = MISSING
    shipping_address: AddressIn
    shipping_option_id: ShippingOptionId | MISSING = MISSING
    promo_code: PromoCode | MISSING = MISSING

    @model_validator(mode="after")
    def _exactly_one_source(self) -> OrderIn:
        if sum(source in self.model_fields_set for source in SOURCES) != 1:
            raise ValueError("give exactly one of session_id, lines or cart")
        return self


Carrier = Annotated[str, Field(min_length=1, max_length=MAX_CARRIER_LENGTH)]
TrackingNumber = Annotated[str, Field(min_length=1, max_length=MAX_TRACKING_NUMBER_LENGTH, pattern=r"^[\x21-\x7e]+$")]
Reason = Annotated[str, Field(min_length=1, max_length=MAX_REASON_LENGTH)]
SHIPPING_FIELDS = ("carrier", "tracking_number")
SHIPPED_ONLY_FIELDS = (*SHIPPING_FIELDS, "ship_without_payment")


class OrderStatusPatch(Body):
    """The target status; ``carrier`` and ``tracking_number`` exactly when it is SHIPPED; ``reason``
    (required to reject a return, i.e. RETURN_REQUESTED -> DELIVERED) goes in the order's history;
    ``ship_without_payment`` only with SHIPPED."""

    model_config = ConfigDict(
        json_schema_extra={
            "if": {"properties": {"status": {"const": "SHIPPED"}}},
            "then": {"required": list(SHIPPING_FIELDS)},
            "else": {"not": {"anyOf": [{"required": [name]} for name in SHIPPED_ONLY_FIELDS]}},
        }
    )

    status: OrderStatus
    carrier: Carrier | MISSING = MISSING
    tracking_number: TrackingNumber | MISSING = MISSING
    reason: Reason | MISSING = MISSING
    ship_without_payment: StrictBool | MISSING = Field(
        default=MISSING,
        description="only with SHIPPED: true ships an order whose payment is no longer held (payment LAPSED: its card "
        "authorisation lapsed before capture), recorded as shipped_without_payment on the order and its SHIPPED "
        "history entry; without it such an order is 409 PAYMENT_NOT_HELD. On an order whose payment is held (or "
        "that takes none) it changes nothing",
    )

    @model_validator(mode="after")
    def _shipping_fields_with_shipped(self) -> OrderStatusPatch:
        given = [name for name in SHIPPING_FIELDS if name in self.model_fields_set]
        if self.status is OrderStatus.SHIPPED and len(given) != len(SHIPPING_FIELDS):
            raise ValueError("SHIPPED needs carrier and tracking_number")
        if self.status is not OrderStatus.SHIPPED and given:
            raise ValueError("carrier and tracking_number go only with SHIPPED")
        if self.status is not OrderStatus.SHIPPED and "ship_without_payment" in self.model_fields_set:
            raise ValueError("ship_without_payment goes only with SHIPPED")
        return self


class ReturnLineIn(Body):
    variant_id: str = Field(
        min_length=1,
        max_length=MAX_ID_LENGTH,
        description="a line's variant_id, as the order shows it (a product without options: the product's id)",
    )
    quantity: Annotated[StrictInt, Field(ge=1, le=MAX_QUANTITY), INTEGRAL] = Field(
        description="units to return, at most those of the line not returned yet (two entries of one variant add up)"
    )


class ReturnIn(Body):
    reason: Reason
    lines: Annotated[list[ReturnLineIn], Field(min_length=1, max_length=MAX_ORDER_LINES)] | None = Field(
        default=None, description="the units to return; absent: every unit not returned yet"
    )


Cents = Annotated[int, Field(ge=0)]


class CheckoutPayment(Model):
    """What the customer's browser needs to pay (Stripe.js `confirmCardPayment` with the client secret); the
    amount is the order's stored total, authorised now and captured when the order ships."""

    provider: Literal["stripe"]
    intent_id: str
    client_secret: str
    amount_cents: Cents
    currency: str = Field(pattern=r"^[a-z]{3}$", description="ISO 4217, lower case")


class PlacedOrder(Order):
    """The order placed; with payments on (PAYMENTS=stripe) it is PENDING_PAYMENT and carries `payment`."""

    payment: CheckoutPayment | MISSING = Field(  # type: ignore[assignment]
        default=MISSING, description="present when the shop takes the payment (the order is PENDING_PAYMENT)"
    )


class PaymentView(Model):
    """An order's payment as the shop recorded it. `client_secret` only to the order's owner while it is
    PENDING_PAYMENT (to pay again after a declined card); amounts in the order's currency."""

    status: PaymentStatus = Field(
        description="LAPSED: the provider cancelled the authorisation before it was captured; no money is held"
    )
    amount_cents: Cents
    captured_cents: Cents
    refunded_cents: Cents
    currency: str = Field(pattern=r"^[a-z]{3}$", description="ISO 4217, lower case")
    client_secret: str | MISSING = MISSING
    last_failure: PaymentFailure | MISSING = Field(
        default=MISSING,
        description="the latest failed attempt (a declined card) while the order waits for its payment",
    )
    dispute: PaymentDispute | MISSING = Field(
        default=MISSING, description="a dispute (chargeback) on the charge, as the provider last reported it"
    )


class TopSellerPage(Model):
    """At most `limit` entries; the list is not paginated (next_token is always null)."""

    items: list[TopSeller]
    next_token: str | None


class OrderSummaryPage(Model):
    items: list[OrderSummary]
    next_token: str | None


class PaymentFilter(StrEnum):
    """GET /orders?payment=: `expiring`, the confirmed orders whose card authorisation will soon lapse."""

    expiring = "expiring"


class ListedOrder(OrderSummary):
    """An order in an administrator's listing (GET /orders)."""

    payment_status: PaymentStatus | MISSING | None = Field(
        default=MISSING,
        description="with payment=expiring only: the order's payment as the shop recorded it: AUTHORISED (held on "
        "the card: ship or cancel it before the authorisation lapses), LAPSED (it lapsed: shipping needs "
        "ship_without_payment), CAPTURED (taken at confirmation under CAPTURE=on_confirm: nothing lapses); null for "
        "an order taken without payment",
    )


class OrderListPage(Model):
    """A page of GET /orders: with status=, newest first (approximately, across the index's shards); with
    payment=expiring, oldest first (likewise), each order with its payment_status."""

    items: list[ListedOrder]
    next_token: str | None


__all__ = [
    "AddressIn",
    "CheckoutPayment",
    "ListedOrder",
    "Order",
    "OrderFromCustomerCart",
    "OrderFromLines",
    "OrderFromSession",
    "OrderIn",
    "OrderLineIn",
    "OrderListPage",
    "OrderStatusPatch",
    "OrderSummary",
    "OrderSummaryPage",
    "PaymentFilter",
    "PaymentView",
    "PlacedOrder",
    "ProductSales",
    "ReturnIn",
    "ReturnLineIn",
    "TopSellerPage",
]
