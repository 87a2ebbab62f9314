"""One account cannot hold a flash sale (docs/payments.md, "Hoarding"), on DynamoDB Local with real threads: 30
concurrent unpaid checkouts by one customer for a 30-unit product, PAYMENTS=stripe on the fake provider. The
customer's unpaid hold is in every placement's transaction, so however they interleave at most MAX_UNPAID_ORDERS
are placed; the rest are 409 UNPAID_ORDER_LIMIT with nothing written and their intents cancelled; another customer
still buys."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from shop import config, errors, keys, wiring
from shop.models import OrderStatus
from shop.models.payments import IntentStatus
from shop.repository.store import from_item, to_item
from shop.services.actor import Actor
from shop.services.orders import RequestedLine
from tests.support.factories import ADDRESS, product

# Reads no stream record: its tables have none (tests/conftest.py::local_store; docs/testing.md, "Time").
pytestmark = [pytest.mark.integration, pytest.mark.table_without_stream, pytest.mark.dynamodb_semantics]

ATTEMPTS = 30
STOCK = 30
MAX_UNPAID_ORDERS = 3
# A client answered 503 (Retry-After) tries again with the same Idempotency-Key, as in test_flash_sale.py: 30
# transactions on one hold item and one product item wait for DynamoDB Local's item locks.
CLIENT_RETRIES = 20


@pytest.fixture
def unpaid_limit_of_three_orders(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """At most MAX_UNPAID_ORDERS (3) orders held unpaid by one customer, and units enough for all of them."""
    monkeypatch.setenv("MAX_UNPAID_ORDERS", str(MAX_UNPAID_ORDERS))
    monkeypatch.setenv("MAX_UNPAID_UNITS", "50")
    config.payment_settings.cache_clear()
    yield
    config.payment_settings.cache_clear()


def test_thirty_concurrent_unpaid_checkouts_by_one_customer_hold_at_most_the_limit(
    local_store, unpaid_limit_of_three_orders, wired_fake_payments
):
    table = local_store.table
    pid = product(table, stock=STOCK)
    service = wiring.order_service(table)
    mallory = Actor("mallory")
    start = threading.Barrier(ATTEMPTS)
    unavailable = Counter[int]()

    def checkout(index: int) -> tuple[str, str | None]:
        start.wait()
        for _ in range(CLIENT_RETRIES):
            try:
                order = service.place(
                    mallory, address=ADDRESS, lines=[RequestedLine(pid, 1)], idempotency_key=f"hoard-{index}"
                )
            except errors.UnpaidOrderLimit:
                return "limited", None
            except errors.ServiceUnavailable:
                unavailable[index] += 1
                continue
            return "placed", order.order_id
        return "gave_up", None

    with ThreadPoolExecutor(max_workers=ATTEMPTS) as pool:
        outcomes = list(pool.map(checkout, range(ATTEMPTS)))

    tally = Counter(outcome for outcome, _ in outcomes)
    # Every checkout had its answer; exactly the limit were placed (a refusal means the hold was full).
    assert tally == {"placed": MAX_UNPAID_ORDERS, "limited": ATTEMPTS - MAX_UNPAID_ORDERS}, (tally, unavailable)
    placed = {order_id for outcome, order_id in outcomes if outcome == "placed"}
    held = from_item(
        local_store.client.get_item(
            TableName=table.name, Key=to_item(keys.unpaid_hold_key("mallory")), ConsistentRead=True
        )["Item"]
    )
    assert (set(held["order_ids"]), held["units"]) == (placed, MAX_UNPAID_ORDERS)
    assert wiring.catalog_service(table).get(pid).stock == STOCK - MAX_UNPAID_ORDERS
    listed = service.list_for_customer(mallory, "mallory", limit=50, next_token=None).items
    assert {o.order_id for o in listed} == placed
    assert {o.status for o in listed} == {OrderStatus.PENDING_PAYMENT}
    # Only the placed orders' intents can be paid: every refused placement's intent was cancelled.
    statuses = Counter(
        record.intent.status for record in wired_fake_payments.intents.values() if record.intent.order_id not in placed
    )
    assert set(statuses) <= {IntentStatus.CANCELED}
    assert {r.intent.status for r in wired_fake_payments.intents.values() if r.intent.order_id in placed} == {
        IntentStatus.REQUIRES_PAYMENT_METHOD
    }

    # Another customer can still buy what Mallory could not hold.
    bought = service.place(Actor("buyer"), address=ADDRESS, lines=[RequestedLine(pid, 20)], idempotency_key="b-1")
    assert bought.status is OrderStatus.PENDING_PAYMENT
    assert wiring.catalog_service(table).get(pid).stock == STOCK - MAX_UNPAID_ORDERS - 20
