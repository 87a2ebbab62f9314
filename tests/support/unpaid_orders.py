"""PENDING_PAYMENT orders as PAYMENTS=stripe's checkout leaves them, for the payment rules' tests.

An unpaid order is written here the way the checkout writes it (docs/payments.md, "Checkout"): the provider's
intent first (AUTHORISE key, the order's total), then the order PENDING_PAYMENT with that intent and its client
secret on its `payment` and its window's end (`payment_expires_at`), its stock taken, in the placement's one
transaction (without the catalogue read and the price and cart rules the service adds).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from shop import clock, ids, keys
from shop.models import Order, OrderLine, OrderStatus
from shop.models.orders import OrderPayment
from shop.models.payments import PaymentEvent, PaymentStep, event_kind, idempotency_key
from shop.repository.orders import OrderRepository
from shop.repository.store import to_item
from tests.support.factories import ADDRESS, ALICE

WINDOW_S = 1800  # PAYMENT_WINDOW_MINUTES' default


@dataclass(frozen=True)
class Unpaid:
    order_id: str
    intent_id: str
    total_cents: int
    expires_at: int


def place_unpaid(
    table: Any,
    payments: Any,
    lines: list[tuple[str, str, int, int]],
    *,
    customer_id: str = ALICE.sub,
    window_s: int = WINDOW_S,
    currency: str = "eur",
) -> Unpaid:
    """An unpaid order of `lines` ((product id, name, unit price, quantity)) with its intent on `payments`."""
    now = clock.now()
    at = clock.iso(now)
    order_lines = [OrderLine.priced(pid, name, price, quantity) for pid, name, price, quantity in lines]
    total = sum(line.line_total_cents for line in order_lines)
    order_id = ids.new_id()
    intent = payments.create_intent(
        order_id, total, currency, idempotency_key=idempotency_key(order_id, PaymentStep.AUTHORISE)
    )
    expires_at = clock.epoch(now) + window_s
    order = Order(
        order_id=order_id,
        customer_id=customer_id,
        status=OrderStatus.PENDING_PAYMENT,
        version=1,
        total_cents=total,
        created_at=at,
        updated_at=at,
        lines=order_lines,
        shipping_address=ADDRESS,
        history=[],
        payment=OrderPayment(
            intent_id=intent.intent_id, client_secret=intent.client_secret, amount_cents=total, currency=currency
        ),
        payment_expires_at=expires_at,
    )
    OrderRepository(table).place(order)
    return Unpaid(order.order_id, intent.intent_id, total, expires_at)


_events = iter(range(1, 1_000_000))


def event(
    event_type: str,
    unpaid: Unpaid | None = None,
    *,
    order_id: str | None = None,
    intent_id: str | None = None,
    created: int | None = None,
    **fields: Any,
) -> PaymentEvent:
    """A verified provider event about `unpaid`'s intent (or the given ids), with a fresh event id, created now (or
    at `created`, epoch seconds); `fields` are the event's own (failure_code, amount_refunded_cents, dispute_...)."""
    return PaymentEvent(
        event_id=f"evt_test_{ids.new_id()}_{next(_events)}",
        event_type=event_type,
        kind=event_kind(event_type),
        created=clock.epoch(clock.now()) if created is None else created,
        intent_id=intent_id or (unpaid.intent_id if unpaid else None),
        order_id=order_id or (unpaid.order_id if unpaid else None),
        **fields,
    )


AUTHORISED = "payment_intent.amount_capturable_updated"
SUCCEEDED = "payment_intent.succeeded"
FAILED = "payment_intent.payment_failed"
CANCELED = "payment_intent.canceled"
REFUNDED = "charge.refunded"
DISPUTE_CREATED = "charge.dispute.created"
DISPUTE_UPDATED = "charge.dispute.updated"
DISPUTE_CLOSED = "charge.dispute.closed"


def item(table: Any, key: dict[str, str]) -> dict[str, Any] | None:
    from shop.repository.store import from_item

    found = table.client.get_item(TableName=table.name, Key=to_item(key), ConsistentRead=True).get("Item")
    return from_item(found) if found else None


def stock(table: Any, product_id: str) -> int:
    found = item(table, keys.product_key(product_id))
    assert found is not None
    return int(found["stock"])
