"""The unpaid limit over HTTP in the fast lane (PAYMENTS=stripe; docs/payments.md, "Hoarding"): POST /orders beyond
MAX_UNPAID_ORDERS answers 409 UNPAID_ORDER_LIMIT with the limits and what the customer holds; a cancelled unpaid
order, once order_events has its record, makes room again. On DynamoDB Local: tests/functions/test_payment_checkout.py
and tests/integration/test_unpaid_limit_concurrency.py."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from shop import config
from tests.functions.apigw import ALICE, BOB
from tests.support.memory_stream import lambda_event
from tests.support.memory_wiring import Handlers

ADDRESS = {"name": "A", "line1": "1 Main Street", "city": "Springfield", "postal_code": "12345", "country": "US"}


@pytest.fixture
def limited(paying: Handlers, monkeypatch: pytest.MonkeyPatch) -> Iterator[Handlers]:
    monkeypatch.setenv("MAX_UNPAID_ORDERS", "2")
    monkeypatch.setenv("MAX_UNPAID_UNITS", "5")
    config.payment_settings.cache_clear()
    yield paying
    config.payment_settings.cache_clear()


def place(handlers: Handlers, key: str, quantity: int = 1, claims: dict[str, Any] = ALICE) -> Any:
    return handlers.call(
        "POST",
        "/orders",
        claims=claims,
        headers={"Idempotency-Key": key},
        body={"lines": [{"product_id": "prod-keyboard", "quantity": quantity}], "shipping_address": ADDRESS},
    )


def stream_through_order_events(handlers: Handlers) -> None:
    changes = handlers.wiring.stream.read()
    if changes:
        handlers.invoke("order_events", lambda_event(changes))


def test_beyond_the_limit_the_checkout_answers_409_unpaid_order_limit(limited):
    first, second = place(limited, "k-1"), place(limited, "k-2", quantity=2)
    assert (first.status, second.status) == (201, 201)
    stock = limited.wiring.store.state.products["prod-keyboard"].product.stock

    refused = place(limited, "k-3")
    assert refused.status == 409
    assert refused.body["error"]["code"] == "UNPAID_ORDER_LIMIT"
    assert refused.body["error"]["details"] == {
        "max_unpaid_orders": 2,
        "max_unpaid_units": 5,
        "order_units": 1,
        "unpaid_order_ids": sorted([first.body["order_id"], second.body["order_id"]]),
        "unpaid_units": 3,
    }
    assert limited.wiring.store.state.products["prod-keyboard"].product.stock == stock  # nothing taken
    assert place(limited, "k-bob", claims=BOB).status == 201  # another customer buys

    # The customer cancels one unpaid order; once order_events has the record, there is room again.
    stream_through_order_events(limited)
    cancelled = limited.call("POST", f"/orders/{first.body['order_id']}/cancel", claims=ALICE)
    assert cancelled.status == 200
    stream_through_order_events(limited)
    held = limited.wiring.store.state.unpaid["alice"]
    assert (held.order_ids, held.units) == ({second.body["order_id"]}, 2)  # released by order_events
    assert place(limited, "k-3").status == 201  # the refused key may be used again: nothing was kept for it


def test_an_order_alone_over_the_units_limit_answers_409_before_anything(limited):
    refused = place(limited, "k-big", quantity=6)
    assert refused.status == 409
    assert refused.body["error"]["details"] == {"max_unpaid_orders": 2, "max_unpaid_units": 5, "order_units": 6}
