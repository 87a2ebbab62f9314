from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, field_serializer, model_validator

from shop.models.common import Model, Timestamp
from shop.models.pricing import largest_remainder, line_total, tax_on

# shop.clock's format (models do not import it): ISO-8601 UTC with fixed-width microseconds.
ISO_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


def _epoch_seconds(value: Any) -> Any:
    """An instant as an answer writes it (RFC 3339) read back as the epoch seconds the order holds."""
    if isinstance(value, str):
        return int(datetime.fromisoformat(value).timestamp())
    return value


class OrderStatus(StrEnum):
    PENDING_PAYMENT = "PENDING_PAYMENT"  # PAYMENTS=stripe: placed, stock held, waiting for the authorisation
    PAYMENT_FAILED = "PAYMENT_FAILED"  # the customer's payment failed for good: stock released
    EXPIRED = "EXPIRED"  # unpaid after PAYMENT_WINDOW_MINUTES: stock released, intent cancelled
    PENDING = "PENDING"
    CONFIRMED = "CONFIRMED"
    SHIPPED = "SHIPPED"
    DELIVERED = "DELIVERED"
    CANCELLED = "CANCELLED"
    RETURN_REQUESTED = "RETURN_REQUESTED"
    PARTIALLY_RETURNED = "PARTIALLY_RETURNED"  # a return of some units accepted: the rest may still be returned
    RETURNED = "RETURNED"  # every unit is back


ORDER_TRANSITIONS: dict[OrderStatus, frozenset[OrderStatus]] = {
    OrderStatus.PENDING_PAYMENT: frozenset(
        {OrderStatus.CONFIRMED, OrderStatus.PAYMENT_FAILED, OrderStatus.EXPIRED, OrderStatus.CANCELLED}
    ),
    OrderStatus.PAYMENT_FAILED: frozenset(),
    OrderStatus.EXPIRED: frozenset(),
    OrderStatus.PENDING: frozenset({OrderStatus.CONFIRMED, OrderStatus.CANCELLED}),
    OrderStatus.CONFIRMED: frozenset({OrderStatus.SHIPPED, OrderStatus.CANCELLED}),
    OrderStatus.SHIPPED: frozenset({OrderStatus.DELIVERED}),
    # The customer asks to return some units or all (POST /orders/{id}/return, within RETURN_WINDOW_DAYS of
    # delivery); an admin accepts (those units restocked, their refund due: RETURNED once every unit is back,
    # PARTIALLY_RETURNED before) or rejects (back to DELIVERED, or PARTIALLY_RETURNED after an accepted return).
    OrderStatus.DELIVERED: frozenset({OrderStatus.RETURN_REQUESTED}),
    OrderStatus.RETURN_REQUESTED: frozenset(
        {OrderStatus.RETURNED, OrderStatus.PARTIALLY_RETURNED, OrderStatus.DELIVERED}
    ),
    OrderStatus.PARTIALLY_RETURNED: frozenset({OrderStatus.RETURN_REQUESTED}),
    OrderStatus.CANCELLED: frozenset(),
    OrderStatus.RETURNED: frozenset(),
}
# Statuses only the order's owner moves to, by their own route (never by an admin's PATCH).
OWNER_ONLY_STATUSES = frozenset({OrderStatus.RETURN_REQUESTED})
# Where a decided return leaves the order, by what is back (an admin accepts with RETURNED, rejects with DELIVERED).
RETURN_OUTCOMES = frozenset({OrderStatus.RETURNED, OrderStatus.PARTIALLY_RETURNED})
# Statuses only the payment provider's events or the payment window move an order to (never an admin's PATCH);
# and PENDING_PAYMENT -> CONFIRMED is the provider's alone too.
PAYMENT_ONLY_STATUSES = frozenset({OrderStatus.PAYMENT_FAILED, OrderStatus.EXPIRED})


class PaymentStatus(StrEnum):
    """Where an order's payment stands, as the shop recorded it (not the provider's intent status)."""

    REQUIRES_PAYMENT = "REQUIRES_PAYMENT"  # intent created (or being created), not authorised yet
    AUTHORISED = "AUTHORISED"  # the amount is held on the card (manual capture)
    CAPTURED = "CAPTURED"  # taken at SHIPPED; refunds may follow (refunded_cents)
    CANCELED = "CANCELED"  # the intent was cancelled: the order was cancelled, failed or expired before capture
    FAILED = "FAILED"  # the intent was cancelled before any authorisation (the window, the customer, the provider)
    # The provider cancelled an authorisation before it was captured (Stripe: after about 7 days): the order was
    # confirmed, but no money is held for it any more. Shipping it needs the admin's ship_without_payment.
    LAPSED = "LAPSED"


class PaymentFailure(Model):
    """The latest failed attempt to pay (a declined card): the order still waits for its payment."""

    code: str | None = None  # the provider's decline or error code (`card_declined`, `insufficient_funds`, ...)
    message: str | None = None
    at: Timestamp  # when the provider reported it (the event's creation time)


# A dispute's statuses after which it changes no more (Stripe's): reported at the same time as an open one, they win.
CLOSED_DISPUTE_STATUSES = ("won", "lost", "warning_closed", "charge_refunded", "prevented")


class PaymentDispute(Model):
    """A dispute (chargeback) the card holder opened on the order's charge, as the provider last reported it."""

    dispute_id: str
    status: str  # the provider's: warning_needs_response, needs_response, under_review, won, lost, ...
    reason: str | None = None
    amount_cents: int = Field(ge=0)
    updated_at: Timestamp  # the provider's time of the latest event applied (an older one changes nothing)


class OrderPayment(Model):
    """An order's payment as stored on the order item (PAYMENTS=stripe only; None under PAYMENTS=none).

    Amounts come from the order (`amount_cents` = the order's total), never from a provider event.
    The checkout writes the intent with the order (docs/payments.md, "Checkout"); `client_secret` leaves the item when
    the payment settles. `intent_id` is None only on orders written before the intent came first.
    """

    provider: str = "stripe"
    status: PaymentStatus = PaymentStatus.REQUIRES_PAYMENT
    intent_id: str | None = None
    client_secret: str | None = None
    amount_cents: int = Field(ge=0)
    currency: str
    captured_cents: int = Field(default=0, ge=0)
    refunded_cents: int = Field(default=0, ge=0)
    # What the return's refund step refunded (None: not made yet; 0: what was due had been refunded already, in
    # the provider's dashboard). `refunded_cents` is everything refunded, the dashboard's refunds included.
    return_refunded_cents: int | None = Field(default=None, ge=0)
    last_failure: PaymentFailure | None = None
    dispute: PaymentDispute | None = None


class ShippingAddress(Model):
    name: str = Field(min_length=1, max_length=200)
    line1: str = Field(min_length=1, max_length=200)
    line2: str | None = Field(default=None, max_length=200)
    city: str = Field(min_length=1, max_length=100)
    postal_code: str = Field(min_length=1, max_length=20)
    country: str = Field(pattern=r"^[A-Z]{2}$")
    region: str | None = Field(
        default=None,
        pattern=r"^[A-Z]{2}-[A-Z0-9]{1,3}$",
        description="the ISO 3166-2 subdivision (US-CA), of the country's: taxed at its own rate where it has one",
    )


class OrderLine(Model):
    product_id: str
    variant_id: str = Field(
        default="",
        description="what the line is of: the product's variant (a product without options has one, its default, "
        "whose id is the product's)",
    )
    name: str
    unit_price_cents: int
    quantity: int
    line_total_cents: int
    discount_cents: int = Field(default=0, description="the line's share of the order's discount")
    tax_cents: int = Field(
        default=0, description="the tax on the line's total less its discount (included in it when prices include tax)"
    )

    @model_validator(mode="before")
    @classmethod
    def _total_from_price(cls, data: Any) -> Any:
        """A stored line leaves its total out (unit price x quantity, the one rule) and its variant when it is the
        product's default (its id is the product's)."""
        if isinstance(data, dict) and "line_total_cents" not in data and "unit_price_cents" in data:
            data = {**data, "line_total_cents": line_total(int(data["unit_price_cents"]), int(data["quantity"]))}
        if isinstance(data, dict) and not data.get("variant_id") and "product_id" in data:
            data = {**data, "variant_id": data["product_id"]}
        return data

    @classmethod
    def priced(cls, product_id: str, name: str, unit_price_cents: int, quantity: int) -> OrderLine:
        """The line at this unit price, its total computed by the one rule."""
        return cls(
            product_id=product_id,
            name=name,
            unit_price_cents=unit_price_cents,
            quantity=quantity,
            line_total_cents=line_total(unit_price_cents, quantity),
        )


class Shipment(Model):
    carrier: str
    tracking_number: str
    shipped_at: Timestamp


class StatusEntry(Model):
    status: OrderStatus
    at: Timestamp
    carrier: str | None = None  # SHIPPED entries: the shipment's carrier and tracking number
    tracking_number: str | None = None
    reason: str | None = None  # a return request's reason, or why a return was rejected
    # SHIPPED entries: true when the admin shipped it knowing its payment was not held (LAPSED)
    shipped_without_payment: bool | None = None


class OrderSummary(Model):
    order_id: str
    customer_id: str
    status: OrderStatus
    version: int
    total_cents: int
    created_at: Timestamp
    updated_at: Timestamp


class OrderPaymentSummary(OrderSummary):
    """An order in the list of confirmed orders whose card authorisation will soon lapse: its summary and where its
    payment stands."""

    payment_status: PaymentStatus | None = Field(
        description="the order's payment as the shop recorded it: AUTHORISED (held on the card: ship or cancel before "
        "it lapses), LAPSED (it lapsed: shipping needs ship_without_payment), CAPTURED (taken at confirmation, "
        "CAPTURE=on_confirm: nothing lapses); null for an order taken without payment"
    )


class OrderShipping(Model):
    """The shipping option an order ships by, as it was when the order was placed."""

    zone_id: str
    option_id: str
    name: str
    price_cents: int = Field(description="the option's price then; the order's shipping_cents is what it charged")


class OrderPromotion(Model):
    """A promotion the order was priced with, and what it took off (a free-shipping one: the shipping it waived)."""

    promotion_id: str
    code: str | None = Field(default=None, description="the code as the promotion has it; null: automatic")
    kind: str = Field(description="percent, fixed or free_shipping")
    discount_cents: int


# What an order's item leaves out because the rest says it (Order._breakdown_from_lines derives them on read): every
# byte past 1 KB costs each later write of the order a unit. A line's total and tax are left out too.
DERIVED_BREAKDOWN = frozenset({"subtotal_cents", "discount_cents", "tax_cents", "shipping_tax_cents"})
DERIVED_LINE_FIELDS = frozenset({"line_total_cents", "tax_cents", "discount_cents", "variant_id"})
FREE_SHIPPING = "free_shipping"  # a promotion that waives shipping: it takes nothing off the lines


ReturnUnits = Annotated[int, Field(ge=1, le=99)]


class ReturnLine(Model):
    variant_id: str
    quantity: ReturnUnits


class ReturnRequest(Model):
    """The units the customer asked to return, waiting for an admin's decision (status RETURN_REQUESTED)."""

    lines: list[ReturnLine]
    requested_at: Timestamp


class RefundedLine(ReturnLine):
    refund_cents: int = Field(description="these units' share of what was paid for their line")


class OrderReturn(Model):
    """A return an admin accepted: its units went back to stock and `refund_cents` is due to the customer."""

    version: int = Field(description="the order's version that accepted it")
    accepted_at: Timestamp
    lines: list[RefundedLine]
    shipping_refund_cents: int = Field(description="what was paid for shipping, with the return of the last unit")
    refund_cents: int = Field(description="the lines' refunds and the shipping's")
    refunded_cents: int | None = Field(
        default=None,
        description="what the payment provider refunded for it (null: not yet, or the order was taken without payment)",
    )


def return_at(returns: list[OrderReturn], version: int) -> tuple[int, OrderReturn] | None:
    """The accepted return an order's `version` made, with its place among the order's returns."""
    return next(((i, r) for i, r in enumerate(returns) if r.version == version), None)


class Order(OrderSummary):
    lines: list[OrderLine]
    shipping_address: ShippingAddress
    # The breakdown of total_cents (shop.services.order_total):
    # total = subtotal - discount + shipping + (tax unless prices include it).
    subtotal_cents: int = Field(default=0, description="the lines' totals")
    discount_cents: int = Field(default=0, description="the promotions' discount, the lines' shares summed")
    shipping_cents: int = Field(default=0, description="what shipping costs the order")
    shipping_tax_cents: int = Field(default=0, description="the tax on shipping (part of tax_cents)")
    tax_cents: int = Field(default=0, description="the lines' tax and the shipping's")
    prices_include_tax: bool = Field(
        default=False, description="true: prices, and so the total, include tax_cents; false: tax is added"
    )
    tax_rate_bps: int | None = Field(
        default=None, description="the destination's rate in basis points; null when the shop has none for it (tax 0)"
    )
    currency: str | None = Field(default=None, description="ISO 4217, lower case; null on orders before version 4")
    shipping_option: OrderShipping | None = Field(
        default=None, description="the option the order ships by; null when the shop charges no shipping"
    )
    promotions: list[OrderPromotion] = Field(
        default_factory=list, description="the automatic promotions that applied, then the code's, if one was given"
    )
    history: list[StatusEntry]
    return_request: ReturnRequest | None = Field(
        default=None, description="RETURN_REQUESTED: the units asked back; null otherwise"
    )
    returns: list[OrderReturn] = Field(default_factory=list, description="the accepted returns, oldest first")
    # Stock taken from flash-sale shards: product id -> shard number (2 digits) -> quantity. Stored with the
    # order so a cancel returns it where it came from; not part of any answer (exclude).
    stock_taken: dict[str, dict[str, int]] = Field(default_factory=dict, exclude=True)
    # Uses taken of limited promotions: promotion id -> the counter's shard, and the promotions counted on the
    # customer's own count; given back when the order is cancelled, expires or its payment fails (exclude).
    promotion_uses: dict[str, int] = Field(default_factory=dict, exclude=True)
    customer_uses: list[str] = Field(default_factory=list, exclude=True)
    # The promotions without a usage limit the order was priced with, kept on its DISCOUNTS item (not the order item,
    # which every status change rewrites): the stream processor counts their uses when the order is confirmed, and
    # takes them back when it is cancelled after (exclude).
    counted_promotions: list[str] = Field(default_factory=list, exclude=True)
    shipment: Shipment | None = None
    delivered_at: Timestamp | None = None  # when it first became DELIVERED: the return window starts there
    shipped_without_payment: bool | None = Field(
        default=None,
        description="true when the order was shipped while its payment was not held (its card authorisation lapsed: "
        "payment status LAPSED), the admin having sent ship_without_payment; null otherwise",
    )
    # PAYMENTS=stripe: the order's payment; answers show it through their own schemas (exclude).
    payment: OrderPayment | None = Field(default=None, exclude=True)
    # PENDING_PAYMENT orders: when the payment window closes, held as epoch seconds (the windows' sweep expires the
    # order after it); answered as an RFC 3339 instant while the order waits for its payment, null otherwise.
    payment_expires_at: Annotated[int | None, BeforeValidator(_epoch_seconds)] = Field(
        default=None,
        description="PENDING_PAYMENT: when the payment window closes (the order then expires, its stock released); "
        "null once the order is paid, failed, expired or cancelled, and for orders taken without payment",
    )
    archived: bool = Field(
        default=False, description="true when the order is read from the archive (S3): it can no longer change"
    )

    @model_validator(mode="before")
    @classmethod
    def _breakdown_from_lines(cls, data: Any) -> Any:
        """The breakdown an order's item leaves out, derived by the pricing function's own rules from what it keeps:
        each line's total (unit price x quantity) and tax (on its total less its discount, at the order's rate, once,
        half up), the shipping's tax, and their sums."""
        if not isinstance(data, dict) or "subtotal_cents" in data or "lines" not in data:
            return data
        payment = data.get("payment")
        if data.get("currency") is None and isinstance(payment, dict) and payment.get("currency"):
            data = {**data, "currency": payment["currency"]}
        rate, included = int(data.get("tax_rate_bps") or 0), bool(data.get("prices_include_tax"))
        lines = []
        for given in data["lines"]:
            line = dict(given) if isinstance(given, dict) else given.model_dump()
            if line.get("line_total_cents") is None:
                line["line_total_cents"] = line_total(int(line["unit_price_cents"]), int(line["quantity"]))
            lines.append(line)
        if any(line.get("discount_cents") is None for line in lines):
            # The lines' shares of what the promotions took off them, by the largest remainder, as priced.
            promotions = [p if isinstance(p, dict) else p.model_dump() for p in data.get("promotions") or ()]
            off = sum(int(p["discount_cents"]) for p in promotions if p.get("kind") != FREE_SHIPPING)
            shares = largest_remainder(off, [int(line["line_total_cents"]) for line in lines])
            for line, share in zip(lines, shares, strict=True):
                line["discount_cents"] = share
        for line in lines:
            if line.get("tax_cents") is None:
                charged = int(line["line_total_cents"]) - int(line["discount_cents"])
                line["tax_cents"] = tax_on(charged, rate, included=included)
        shipping_tax = data.get("shipping_tax_cents")
        if shipping_tax is None:
            shipping_tax = tax_on(int(data.get("shipping_cents") or 0), rate, included=included)
        return {
            **data,
            "lines": lines,
            "subtotal_cents": sum(int(line["line_total_cents"]) for line in lines),
            "discount_cents": sum(int(line.get("discount_cents") or 0) for line in lines),
            "shipping_tax_cents": shipping_tax,
            "tax_cents": sum(int(line["tax_cents"]) for line in lines) + int(shipping_tax),
        }

    def returned_units(self) -> dict[str, int]:
        """Variant id -> the units of it the accepted returns took back."""
        units: dict[str, int] = {}
        for accepted in self.returns:
            for line in accepted.lines:
                units[line.variant_id] = units.get(line.variant_id, 0) + line.quantity
        return units

    @field_serializer("payment_expires_at", when_used="json")
    def _payment_window_end(self, seconds: int | None) -> Timestamp | None:
        """The window's end as every other time of an answer is written, only while the order waits for it."""
        if seconds is None or self.status is not OrderStatus.PENDING_PAYMENT:
            return None
        return datetime.fromtimestamp(seconds, UTC).strftime(ISO_FORMAT)


@dataclass(frozen=True)
class StatusDetails:
    """What a status change records besides the status, as the service decided it.

    `shipment` goes on the order (SHIPPED); `reason` goes on the order's latest change and its history
    entry; `delivered_at` and `confirmed_at` are set once, by the change that first reaches that status;
    `without_payment` (SHIPPED while the payment was not held) goes on the order and its history entry;
    `return_request` is the units a return asks back, `accepted_return` the return an admin accepted.
    """

    shipment: Shipment | None = None
    reason: str | None = None
    delivered_at: Timestamp | None = None
    confirmed_at: Timestamp | None = None
    without_payment: bool = False
    return_request: ReturnRequest | None = None  # RETURN_REQUESTED: the units asked back
    accepted_return: OrderReturn | None = None  # an accepted return, appended to the order's returns

    def entry(self, status: OrderStatus, at: str) -> StatusEntry:
        """The history entry of this change."""
        shipment = self.shipment
        return StatusEntry(
            status=status,
            at=at,
            carrier=shipment.carrier if shipment else None,
            tracking_number=shipment.tracking_number if shipment else None,
            reason=self.reason,
            shipped_without_payment=True if self.without_payment else None,
        )

    def advance(self, order: Order, status: OrderStatus, version: int, updated_at: str) -> Order:
        """The order as this change leaves it (what its write sets), with the change's history entry."""
        history = [*order.history, self.entry(status, updated_at)]
        changed: dict[str, Any] = {"status": status, "version": version, "updated_at": updated_at, "history": history}
        if self.shipment is not None:
            changed["shipment"] = self.shipment
        if self.delivered_at:
            changed["delivered_at"] = self.delivered_at
        if self.without_payment:
            changed["shipped_without_payment"] = True
        if order.status is OrderStatus.RETURN_REQUESTED:
            changed["return_request"] = None  # decided
        if self.return_request is not None:
            changed["return_request"] = self.return_request
        if self.accepted_return is not None:
            changed["returns"] = [*order.returns, self.accepted_return]
        return order.model_copy(update=changed)

    def recorded_in(self, entry: StatusEntry) -> bool:
        """Whether `entry`, a change the store holds, is the change these details describe: the same carrier,
        tracking number and reason (the times are each write's own, so a re-send differs in them only; whether it
        shipped without its payment held is the payment's state at the write, not the request's)."""
        asked = self.entry(entry.status, entry.at)
        update = {"reason": asked.reason or None, "shipped_without_payment": entry.shipped_without_payment}
        return asked.model_copy(update=update) == entry


NO_DETAILS = StatusDetails()


@dataclass(frozen=True)
class Placement:
    """The customer's Idempotency-Key an order is placed under, claimed until `expires_at` (epoch s)."""

    key: str
    expires_at: int


@dataclass(frozen=True)
class UnpaidLimits:
    """What one customer may hold unpaid at once (PAYMENTS=stripe: MAX_UNPAID_ORDERS, MAX_UNPAID_UNITS): placing a
    PENDING_PAYMENT order takes its id and its units on the customer's unpaid hold, within both, in the placement's
    transaction (docs/payments.md, "Hoarding")."""

    orders: int
    units: int


def units_of(lines: list[OrderLine]) -> int:
    """The units an order holds: its lines' quantities (what the unpaid hold counts for it)."""
    return sum(line.quantity for line in lines)
