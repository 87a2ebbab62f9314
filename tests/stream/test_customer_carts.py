"""A customer cart removed by TTL publishes CartAbandoned with the customer id; nothing else about carts does.

The records are the table's own (moto and DynamoDB Local streams), shaped as TTL's removal where TTL
would make it (tests do not wait for an expiry); the mapping's filters are the deployed ones.
"""

from __future__ import annotations

from typing import Any

import pytest

from infra.settings import STREAM_FILTERS
from local_runtime.events import stream_event as lambda_event
from local_runtime.filters import matches_any
from shop import keys, wiring
from shop.services.carts import CartService
from tests.stream.conftest import emitted_metrics
from tests.support.factories import ALICE, product
from tests.support.streams import StreamReader, only, ttl_removal

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics")


def removed_by_ttl(store: Any, reader: StreamReader, key: dict[str, str]) -> dict[str, Any]:
    """Delete the item and shape its REMOVE record as TTL's (the real OldImage and keys)."""
    store.client.delete_item(TableName=store.table_name, Key={k: {"S": v} for k, v in key.items()})
    [removal] = [r for r in reader.read() if r["eventName"] == "REMOVE"]
    return ttl_removal("", removal["dynamodb"]["OldImage"], item_keys=removal["dynamodb"]["Keys"])


@pytest.fixture
def alice_cart(store) -> CartService:
    """Alice's cart with two lines (ask for `recorded_bus` first: settings are read once, on first use)."""
    wiring.customer_service(store.table).create(ALICE, email="alice@example.com", name="Alice")
    carts = wiring.cart_service(store.table)
    carts.set_quantity(ALICE, "alice", product(store.table, name="Gadget", price_cents=300), 2)
    carts.set_quantity(ALICE, "alice", product(store.table, name="Gizmo", price_cents=450), 1)
    return carts


@pytest.mark.dynamodb_semantics
def test_a_customer_cart_removed_by_ttl_publishes_cart_abandoned(store, recorded_bus, alice_cart, invoke, capsys):
    reader = StreamReader(store)
    reader.read()
    record = removed_by_ttl(store, reader, keys.customer_cart_key("alice"))
    assert matches_any(STREAM_FILTERS, record), "the mapping lets it in"

    assert invoke(lambda_event([record])) == {"batchItemFailures": []}
    assert invoke(lambda_event([record])) == {"batchItemFailures": []}  # a redelivery

    first, again = recorded_bus.events
    assert first == again, "the same event, id included: consumers dedupe on it"
    assert first["type"] == "CartAbandoned"
    assert first["customer_id"] == "alice"
    assert "session_id" not in first
    assert [(line["name"], line["quantity"]) for line in first["lines"]] == [("Gadget", 2), ("Gizmo", 1)]
    assert first["subtotal_cents"] == 2 * 300 + 450
    expires_at = record["dynamodb"]["OldImage"]["expires_at"]["N"]
    assert first["id"] == f"customer:alice:{expires_at}"
    assert emitted_metrics(capsys.readouterr().out) == {"CartsAbandoned": 2}


@pytest.mark.dynamodb_semantics
def test_an_emptied_cart_or_a_merge_marker_removed_by_ttl_publishes_nothing(store, recorded_bus, alice_cart, invoke):
    session_id = wiring.session_service(store.table).create().session_id
    alice_cart.merge(ALICE, "alice", session_id)
    alice_cart.delete(ALICE, "alice")
    reader = StreamReader(store)
    reader.read()
    marker = removed_by_ttl(store, reader, keys.cart_merge_key("alice", session_id))
    assert not matches_any(STREAM_FILTERS, marker), "the mapping keeps markers out"
    emptied = removed_by_ttl(store, reader, keys.customer_cart_key("alice"))
    assert matches_any(STREAM_FILTERS, emptied)

    assert invoke(lambda_event([marker, emptied])) == {"batchItemFailures": []}
    assert recorded_bus.calls == []


@pytest.mark.dynamodb_semantics
def test_a_cart_removed_by_a_caller_publishes_nothing(store, recorded_bus, alice_cart, invoke):
    reader = StreamReader(store)
    reader.read()
    store.client.delete_item(
        TableName=store.table_name, Key={k: {"S": v} for k, v in keys.customer_cart_key("alice").items()}
    )
    removals = only(reader.read(), entity="CUSTOMER_CART", event_name="REMOVE")
    assert not matches_any(STREAM_FILTERS, removals[0])
    assert invoke(lambda_event(removals)) == {"batchItemFailures": []}
    assert recorded_bus.calls == []
