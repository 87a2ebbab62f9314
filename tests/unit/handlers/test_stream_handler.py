"""The order_events function's handler on the in-memory store's stream, its records shaped as Lambda delivers them.

An order placed over HTTP is confirmed from its INSERT; the processor's own MODIFY (PENDING -> CONFIRMED) then
counts the sales; every later status change writes its effects once; a finished order's TTL removal archives
it; product changes publish their events and stock alerts; a batch delivered again changes nothing. The
DynamoDB semantics of the same flows (conditions, real records, S3) are proved in tests/stream.
"""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest

from tests.functions.apigw import ADMIN, ALICE, BOB
from tests.support.memory_stream import MemoryChange, customer_cart_expired, lambda_event
from tests.support.memory_wiring import Handlers
from tests.support.recording_events import RecordingEvents

ADDRESS = {"name": "A", "line1": "1 Main", "city": "X", "postal_code": "1", "country": "US"}
SAMPLES = pathlib.Path(__file__).resolve().parents[3] / "events" / "order_events"
POISON = "100000000000000000005"

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics")


def orders_only(change: MemoryChange) -> bool:
    return change.entity == "ORDER"


def place(handlers: Handlers, product_id: str = "prod-mouse", quantity: int = 2, key: str = "k-1") -> dict[str, Any]:
    reply = handlers.call(
        "POST",
        "/orders",
        claims=ALICE,
        headers={"Idempotency-Key": key},
        body={"lines": [{"product_id": product_id, "quantity": quantity}], "shipping_address": ADDRESS},
    )
    assert reply.status == 201, reply.body
    return reply.body


def order(handlers: Handlers, order_id: str) -> dict[str, Any]:
    reply = handlers.call("GET", f"/orders/{order_id}", claims=ADMIN)
    assert reply.status == 200, reply.body
    return reply.body


def sold(handlers: Handlers, product_id: str = "prod-mouse") -> tuple[int, int]:
    """The product's units and revenue today, from GET /products/{id}/sales (the admins' report)."""
    from shop import clock

    today = clock.iso_now()[:10]
    reply = handlers.call("GET", f"/products/{product_id}/sales", claims=ADMIN, query={"from": today, "to": today})
    assert reply.status == 200, reply.body
    days = reply.body["days"]
    return sum(day["units"] for day in days), sum(day["revenue_cents"] for day in days)


def notifications(handlers: Handlers, customer: str = "alice") -> list[str]:
    reply = handlers.call("GET", f"/customers/{customer}/notifications", claims=ADMIN)
    assert reply.status == 200, reply.body
    return [note["type"] for note in reply.body["items"]]


def change_status(handlers: Handlers, order_id: str, body: dict[str, Any]) -> dict[str, Any]:
    version = order(handlers, order_id)["version"]
    reply = handlers.call("PATCH", f"/orders/{order_id}", claims=ADMIN, headers={"If-Match": f'"{version}"'}, body=body)
    assert reply.status == 200, reply.body
    return reply.body


def test_a_placement_is_confirmed_from_its_insert_then_sold_from_the_processors_own_modify(handlers, recorded_bus):
    placed = place(handlers)
    inserted, response = handlers.stream(orders_only)
    assert [(c.event_name, c.new_status) for c in inserted] == [("INSERT", "PENDING")]
    assert response == {"batchItemFailures": []}
    confirmed = order(handlers, placed["order_id"])
    assert (confirmed["status"], confirmed["version"]) == ("CONFIRMED", 2)
    assert sold(handlers) == (0, 0)  # counted from the MODIFY, not from the INSERT

    modified, response = handlers.stream(orders_only)
    assert [(c.event_name, c.old_status, c.new_status) for c in modified] == [("MODIFY", "PENDING", "CONFIRMED")]
    assert response == {"batchItemFailures": []}
    assert sold(handlers) == (2, 5800)
    assert notifications(handlers) == ["ORDER_CONFIRMED"]  # written once, by the confirmation
    assert [event["type"] for event in recorded_bus.events] == ["OrderConfirmed"]


def test_the_same_batches_delivered_again_change_nothing(handlers, recorded_bus):
    placed = place(handlers)
    inserted, _ = handlers.stream(orders_only)
    modified, _ = handlers.stream(orders_only)
    before = (order(handlers, placed["order_id"]), sold(handlers), notifications(handlers))

    assert handlers.replay(inserted) == {"batchItemFailures": []}
    assert handlers.replay(modified) == {"batchItemFailures": []}
    assert handlers.replay([*inserted, *modified]) == {"batchItemFailures": []}

    assert (order(handlers, placed["order_id"]), sold(handlers), notifications(handlers)) == before
    assert handlers.wiring.stream.read() == []  # the replays wrote nothing the stream would carry


def test_each_status_change_writes_its_effects_once(handlers, recorded_bus):
    placed = place(handlers)
    handlers.stream(orders_only)
    handlers.stream(orders_only)
    order_id = placed["order_id"]
    change_status(handlers, order_id, {"status": "SHIPPED", "carrier": "DHL", "tracking_number": "JD0146"})
    shipped, _ = handlers.stream(orders_only)
    change_status(handlers, order_id, {"status": "DELIVERED"})
    delivered, _ = handlers.stream(orders_only)
    handlers.replay([*shipped, *delivered])

    assert notifications(handlers) == ["ORDER_STATUS_CHANGED", "ORDER_STATUS_CHANGED", "ORDER_CONFIRMED"]
    assert sold(handlers) == (2, 5800)  # shipping and delivering sell nothing more
    statuses = [(event["type"], event.get("status")) for event in recorded_bus.events]
    assert statuses == [
        ("OrderConfirmed", "CONFIRMED"),
        ("OrderStatusChanged", "SHIPPED"),
        ("OrderStatusChanged", "DELIVERED"),
        ("OrderStatusChanged", "SHIPPED"),  # a replay publishes again: consumers dedupe on the event's id
        ("OrderStatusChanged", "DELIVERED"),
    ]
    assert len({event["id"] for event in recorded_bus.events}) == 3


def test_a_cancellation_takes_the_sales_back_once(handlers, recorded_bus):
    placed = place(handlers)
    handlers.stream(orders_only)
    handlers.stream(orders_only)
    assert handlers.call("POST", f"/orders/{placed['order_id']}/cancel", claims=ALICE).status == 200
    cancelled, response = handlers.stream(orders_only)
    assert response == {"batchItemFailures": []}
    handlers.replay(cancelled)
    assert sold(handlers) == (0, 0)
    assert notifications(handlers) == ["ORDER_STATUS_CHANGED", "ORDER_CONFIRMED"]


def test_a_return_accepted_takes_the_sales_back_and_publishes_the_refund_due(handlers, recorded_bus):
    order_id = "00-bob-return"  # the seed's: RETURN_REQUESTED, 1 mouse (sold before the stream was read)
    change_status(handlers, order_id, {"status": "RETURNED"})
    returned, response = handlers.stream(orders_only)
    assert response == {"batchItemFailures": []}
    handlers.replay(returned)
    assert sold(handlers) == (-1, -2900)  # taken back from the day the return was accepted
    assert [event["type"] for event in recorded_bus.events][:2] == ["OrderStatusChanged", "OrderRefundDue"]
    assert notifications(handlers, "bob") == ["ORDER_STATUS_CHANGED"]


def test_a_finished_order_removed_by_ttl_is_archived_and_still_readable(handlers, recorded_bus):
    placed = place(handlers)
    handlers.stream(orders_only)
    handlers.stream(orders_only)
    order_id = placed["order_id"]
    assert handlers.call("POST", f"/orders/{order_id}/cancel", claims=ALICE).status == 200
    handlers.stream(orders_only)
    handlers.wiring.store.orders.expire(order_id)  # what TTL does once the finished order's time is up

    removed, response = handlers.stream(orders_only)
    assert [(c.event_name, c.removed_by_ttl) for c in removed] == [("REMOVE", True)]
    assert response == {"batchItemFailures": []}
    assert handlers.replay(removed) == {"batchItemFailures": []}
    archived = order(handlers, order_id)
    assert (archived["status"], archived["archived"]) == ("CANCELLED", True)
    listed = handlers.call("GET", "/customers/alice/orders", claims=ALICE).body["items"]
    assert order_id in [summary["order_id"] for summary in listed]
    changed = handlers.call("POST", f"/orders/{order_id}/cancel", claims=ALICE)
    assert (changed.status, changed.code) == (409, "ORDER_ARCHIVED")


def test_a_product_crossing_below_its_threshold_raises_one_stock_alert(handlers, recorded_bus):
    created = handlers.call(
        "POST",
        "/products",
        claims=ADMIN,
        body={"name": "Lamp", "category": "lights", "price_cents": 1200, "stock": 8, "low_stock_threshold": 5},
    )
    assert created.status == 201, created.body
    product_id = created.body["product_id"]
    products_only = lambda change: change.entity == "PRODUCT"  # noqa: E731
    handlers.stream(products_only)
    assert handlers.call("POST", f"/products/{product_id}/stock", claims=ADMIN, body={"delta": -4}).status == 200
    low, response = handlers.stream(products_only)
    assert response == {"batchItemFailures": []}
    handlers.replay(low)
    assert handlers.call("POST", f"/products/{product_id}/stock", claims=ADMIN, body={"delta": -1}).status == 200
    handlers.stream(products_only)  # still low: no second alert

    alerts = handlers.call("GET", "/admin/alerts", claims=ADMIN).body["items"]
    assert [(alert["product_id"], alert["type"]) for alert in alerts] == [(product_id, "STOCK_LOW")]
    stock_low = [event for event in recorded_bus.events if event["type"] == "StockLow"]
    assert [(event["stock"], event["previous_stock"]) for event in stock_low] == [(4, 8), (4, 8)]  # and its replay
    assert len({event["id"] for event in stock_low}) == 1  # the same event: consumers dedupe on its id
    assert stock_low[0]["id"] == alerts[0]["alert_id"]
    assert recorded_bus.events[0]["type"] == "ProductCreated"


def test_an_archived_product_is_announced(handlers, recorded_bus):
    assert handlers.call("DELETE", "/products/prod-soldout", claims=ADMIN).status == 200
    _, response = handlers.stream(lambda change: change.entity == "PRODUCT")
    assert response == {"batchItemFailures": []}
    assert [(event["type"], event["product_id"]) for event in recorded_bus.events] == [
        ("ProductArchived", "prod-soldout")
    ]


def test_an_order_placed_by_another_customer_is_confirmed_apart(handlers, recorded_bus):
    """Two customers' orders in one batch: each confirmed from its own INSERT, each counted once."""
    place(handlers, quantity=1, key="a")
    bob = handlers.call(
        "POST",
        "/orders",
        claims=BOB,
        headers={"Idempotency-Key": "b"},
        body={"lines": [{"product_id": "prod-mouse", "quantity": 3}], "shipping_address": ADDRESS},
    )
    assert bob.status == 201
    handlers.stream(orders_only)
    handlers.stream(orders_only)
    assert sold(handlers) == (4, 4 * 2900)
    assert notifications(handlers, "bob") == ["ORDER_CONFIRMED"]


# events/order_events/: file -> the batch's failed records (the poison record alone) and the events published
SAMPLE_OUTCOMES = {
    "new_order.json": ([], []),  # no such order in the store: the conditional confirm loses, nothing happens
    "status_change.json": ([], ["OrderStatusChanged"]),
    "session_ttl_removal.json": ([], ["CartAbandoned"]),
    "session_user_delete.json": ([], []),
    "order_ttl_removal.json": ([], []),
    "order_user_delete.json": ([], []),
    "poison_record.json": ([POISON], []),
    "mixed_batch.json": ([POISON], ["OrderStatusChanged", "CartAbandoned"]),
    "product_created.json": ([], ["ProductCreated"]),
    "product_stock_low.json": ([], ["StockLow"]),
    "product_stock_move.json": ([], []),
    "product_archived.json": ([], ["ProductArchived"]),
    "order_returned.json": ([], ["OrderStatusChanged", "OrderRefundDue"]),
}


def test_every_stream_sample_has_an_outcome():
    assert sorted(path.name for path in SAMPLES.glob("*.json")) == sorted(SAMPLE_OUTCOMES)


@pytest.mark.parametrize("name", sorted(SAMPLE_OUTCOMES))
def test_stream_sample_event(handlers, recorded_bus: RecordingEvents, name):
    failures, published = SAMPLE_OUTCOMES[name]
    response = handlers.invoke("order_events", json.loads((SAMPLES / name).read_text()))
    assert response == {"batchItemFailures": [{"itemIdentifier": failure} for failure in failures]}
    assert [event["type"] for event in recorded_bus.events] == published
    archived = [key for key in handlers.wiring.store.state.archive if "01JDQ7W9A1B3C5D7E9F1G3H5J7" in key]
    assert bool(archived) == (name == "order_ttl_removal.json")


def test_a_flash_sale_products_shards_selling_below_the_threshold_raise_one_alert(handlers, recorded_bus):
    """prod-flash's 40 units are spread over 4 stock shards (the seed): sales write the shards, not the product
    item, and the shards' records decide the alert from the total (item + shards)."""
    handlers.stream()
    for n in range(4):
        place(handlers, "prod-flash", quantity=9, key=f"flash-{n}")  # 40 -> 4, below the default threshold 5
    changes, response = handlers.stream(lambda change: change.entity == "STOCK")
    assert changes
    assert response == {"batchItemFailures": []}
    handlers.replay(changes)

    alerts = handlers.call("GET", "/admin/alerts", claims=ADMIN).body["items"]
    assert [(alert["product_id"], alert["stock"]) for alert in alerts] == [("prod-flash", 4)]
    stock_low = [event for event in recorded_bus.events if event["type"] == "StockLow"]
    assert {event["id"] for event in stock_low} == {alerts[0]["alert_id"]}


def test_re_spreading_a_flash_sale_products_stock_raises_no_alert(handlers, recorded_bus):
    handlers.stream()
    spread = handlers.call("POST", "/products/prod-flash/stock-shards", claims=ADMIN, body={"shards": 8})
    assert spread.status == 200, spread.body
    changes, response = handlers.stream()
    assert any(change.entity == "STOCK" for change in changes)
    assert response == {"batchItemFailures": []}
    assert handlers.call("GET", "/admin/alerts", claims=ADMIN).body["items"] == []
    assert [event["type"] for event in recorded_bus.events if event["type"] == "StockLow"] == []


def test_a_record_that_is_not_a_stream_record_fails_alone(handlers, recorded_bus):
    placed = place(handlers)
    event = lambda_event([change for change in handlers.wiring.stream.read() if change.entity == "ORDER"])
    broken = {**event["Records"][0], "eventID": "broken", "dynamodb": {"SequenceNumber": "1"}}  # no Keys
    response = handlers.invoke("order_events", {"Records": [broken, *event["Records"]]})
    assert response == {"batchItemFailures": [{"itemIdentifier": "1"}]}
    assert order(handlers, placed["order_id"])["status"] == "CONFIRMED"  # the good record was handled
    assert recorded_bus.events == []  # OrderConfirmed comes from the confirmation's own MODIFY, not yet read


def test_a_customer_cart_expired_by_ttl_is_announced_abandoned_once(handlers, recorded_bus):
    record = customer_cart_expired(handlers.wiring.store, "alice", "900000000000000000001")  # the seed's: a mouse
    assert handlers.invoke("order_events", {"Records": [record]}) == {"batchItemFailures": []}
    assert handlers.invoke("order_events", {"Records": [record]}) == {"batchItemFailures": []}  # redelivered
    abandoned = [event for event in recorded_bus.events if event["type"] == "CartAbandoned"]
    assert len(abandoned) == 2
    assert len({event["id"] for event in abandoned}) == 1  # one cart's life: consumers dedupe on it
    assert [line["product_id"] for line in abandoned[0]["lines"]] == ["prod-mouse"]

    deleted = {**record, "userIdentity": {"type": "Customer"}}  # a delete of the app's, not TTL's
    assert handlers.invoke("order_events", {"Records": [deleted]}) == {"batchItemFailures": []}
    assert len([event for event in recorded_bus.events if event["type"] == "CartAbandoned"]) == 2


def test_an_archived_orders_records_delivered_late_change_nothing(handlers, recorded_bus, monkeypatch):
    # The memory store archives at once (expire): only a zero archival grace allows that, under which every
    # record takes the path that checks the ARCHIVED marker.
    monkeypatch.setenv("ARCHIVE_GRACE_SECONDS", "0")
    placed = place(handlers)
    handlers.stream(orders_only)
    handlers.stream(orders_only)
    order_id = placed["order_id"]
    assert handlers.call("POST", f"/orders/{order_id}/cancel", claims=ALICE).status == 200
    cancelled, _ = handlers.stream(orders_only)
    handlers.wiring.store.orders.expire(order_id)
    handlers.stream(orders_only)  # archived
    before = (sold(handlers), notifications(handlers), len(recorded_bus.events))

    assert handlers.replay(cancelled) == {"batchItemFailures": []}  # closed: nothing to retry
    assert (sold(handlers), notifications(handlers), len(recorded_bus.events)) == before


def test_records_handled_out_of_order_still_count_and_notify_once(handlers, recorded_bus):
    """The shipment's record handled before the confirmation's (a batch retried after a later one went
    through): the sale is counted once, from the confirmation, and each version's effects are written once."""
    placed = place(handlers)
    handlers.stream(orders_only)  # the INSERT: confirmed
    confirmed = [change for change in handlers.wiring.stream.read() if orders_only(change)]
    change_status(handlers, placed["order_id"], {"status": "SHIPPED", "carrier": "DHL", "tracking_number": "JD0146"})
    shipped = [change for change in handlers.wiring.stream.read() if orders_only(change)]

    assert handlers.replay(shipped) == {"batchItemFailures": []}
    assert sold(handlers) == (0, 0)  # shipping sells nothing: the sale is the confirmation's
    assert handlers.replay(confirmed) == {"batchItemFailures": []}
    assert handlers.replay([*confirmed, *shipped]) == {"batchItemFailures": []}

    assert sold(handlers) == (2, 5800)
    assert notifications(handlers) == ["ORDER_STATUS_CHANGED", "ORDER_CONFIRMED"]
    assert order(handlers, placed["order_id"])["status"] == "SHIPPED"


def test_a_rejected_return_tells_the_customer_why(handlers, recorded_bus):
    order_id = "00-bob-return-2"  # the seed's: RETURN_REQUESTED
    rejected = change_status(handlers, order_id, {"status": "DELIVERED", "reason": "Worn, not returnable."})
    assert rejected["status"] == "DELIVERED"
    _, response = handlers.stream(orders_only)
    assert response == {"batchItemFailures": []}
    notes = handlers.call("GET", "/customers/bob/notifications", claims=BOB).body["items"]
    assert "your return was not accepted: Worn, not returnable." in notes[0]["message"]
    [event] = recorded_bus.events
    assert (event["status"], event["previous_status"], event["reason"]) == (
        "DELIVERED",
        "RETURN_REQUESTED",
        "Worn, not returnable.",
    )
