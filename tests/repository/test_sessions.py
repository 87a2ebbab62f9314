from __future__ import annotations

import pytest

from shop import errors, keys, wiring
from shop.repository import ProductRepository, SessionRepository
from tests.support.calls import counting
from tests.support.factories import ADDRESS, ADMIN, ALICE, product
from tests.support.faults import first_answer_lost

# Reads no stream record: its tables have none (tests/conftest.py::local_store; docs/testing.md, "Time").
pytestmark = pytest.mark.table_without_stream


@pytest.mark.dynamodb_semantics
def test_session_cart_lifecycle(store):
    service = wiring.session_service(store.table, ttl_seconds=600)
    session = service.create()
    assert session.cart == []
    assert len(session.session_id) >= 32
    hammer = product(store.table, name="Hammer", price_cents=1500)
    nails = product(store.table, name="Nails", price_cents=250)
    service.set_quantity(session.session_id, hammer, 2)
    updated = service.set_quantity(session.session_id, nails, 4)
    assert [(line.name, line.quantity) for line in updated.cart] == [("Hammer", 2), ("Nails", 4)]
    assert updated.subtotal_cents == 2 * 1500 + 4 * 250
    updated = service.set_quantity(session.session_id, hammer, 0)
    assert [line.product_id for line in updated.cart] == [nails]
    with counting(store.client) as calls:
        fetched = service.get(session.session_id)
    assert calls.operations == ["GetItem", "BatchGetItem"]
    assert fetched == updated
    service.delete(session.session_id)
    with pytest.raises(errors.SessionNotFound):
        service.get(session.session_id)


@pytest.mark.dynamodb_semantics
def test_unknown_product_or_session(store):
    service = wiring.session_service(store.table)
    session = service.create()
    with pytest.raises(errors.ProductNotFound):
        service.set_quantity(session.session_id, "missing", 1)
    with pytest.raises(errors.SessionNotFound):
        service.set_quantity("no-such-session", product(store.table), 1)


@pytest.mark.dynamodb_semantics
def test_every_change_slides_expiry(store, monkeypatch):
    from shop import clock

    service = wiring.session_service(store.table, ttl_seconds=600)
    session = service.create()
    real_now = clock.now()
    from datetime import timedelta

    monkeypatch.setattr(clock, "now", lambda: real_now + timedelta(seconds=300))
    updated = service.set_quantity(session.session_id, product(store.table), 1)
    assert updated.expires_at > session.expires_at


@pytest.mark.dynamodb_semantics
def test_expired_session_is_absent_before_ttl_deletes_it(store):
    repository = SessionRepository(store.table)
    repository.create("expired-session-id", created_at="2026-01-01T00:00:00.000000Z", expires_at=1000)
    item = store.client.get_item(
        TableName=store.table_name, Key={"PK": {"S": "SESSION#expired-session-id"}, "SK": {"S": keys.SESSION_SK}}
    )
    assert "Item" in item, "DynamoDB has not deleted it, and will not for a while"
    service = wiring.session_service(store.table)
    with pytest.raises(errors.SessionNotFound):
        service.get("expired-session-id")
    with pytest.raises(errors.SessionNotFound):
        service.set_quantity("expired-session-id", product(store.table), 1)


@pytest.mark.dynamodb_semantics
def test_cart_holds_at_most_25_lines(store):
    service = wiring.session_service(store.table)
    session = service.create()
    ids = [product(store.table, name=f"p{i:02d}") for i in range(26)]
    for pid in ids[:25]:
        service.set_quantity(session.session_id, pid, 1)
    with pytest.raises(errors.CartFull):
        service.set_quantity(session.session_id, ids[25], 1)
    assert service.set_quantity(session.session_id, ids[0], 5).cart[0].quantity == 5
    assert len(service.get(session.session_id).cart) == 25


@pytest.mark.dynamodb_semantics
def test_cart_shows_current_prices_and_marks_the_lines_whose_price_changed(store):
    service = wiring.session_service(store.table)
    session = service.create()
    hammer = product(store.table, name="Hammer", price_cents=1500)
    nails = product(store.table, name="Nails", price_cents=250)
    service.set_quantity(session.session_id, hammer, 2)
    service.set_quantity(session.session_id, nails, 4)
    wiring.catalog_service(store.table).update(ADMIN, hammer, {"price_cents": 1800, "name": "Claw hammer"})

    with counting(store.client) as calls:
        shown = service.get(session.session_id)
    assert calls.operations == ["GetItem", "BatchGetItem"]
    assert [
        (line.name, line.unit_price_cents, line.added_unit_price_cents, line.price_changed, line.unavailable)
        for line in shown.cart
    ] == [("Claw hammer", 1800, 1500, True, False), ("Nails", 250, 250, False, False)]
    assert shown.subtotal_cents == 2 * 1800 + 4 * 250

    with counting(store.client) as calls:
        after_put = service.set_quantity(session.session_id, nails, 5)
    assert calls.operations == ["GetItem", "UpdateItem", "BatchGetItem"]
    assert (after_put.cart[0].unit_price_cents, after_put.cart[0].price_changed) == (1800, True)
    assert after_put.subtotal_cents == 2 * 1800 + 5 * 250

    reset = service.set_quantity(session.session_id, hammer, 3)
    assert (reset.cart[0].added_unit_price_cents, reset.cart[0].price_changed) == (1800, False)


@pytest.mark.dynamodb_semantics
def test_checkout_charges_the_subtotal_the_cart_shows(store):
    service = wiring.session_service(store.table)
    session = service.create()
    hammer = product(store.table, price_cents=1500, stock=5)
    service.set_quantity(session.session_id, hammer, 2)
    wiring.catalog_service(store.table).update(ADMIN, hammer, {"price_cents": 1200})
    shown = service.get(session.session_id)
    order = wiring.order_service(store.table).place(ALICE, address=ADDRESS, session_id=session.session_id)
    assert order.total_cents == shown.subtotal_cents == 2 * 1200


@pytest.mark.dynamodb_semantics
def test_a_line_whose_product_is_gone_is_unavailable_and_left_out_of_the_subtotal(store):
    service = wiring.session_service(store.table)
    session = service.create()
    gone = product(store.table, name="Gone", price_cents=700)
    kept = product(store.table, name="Kept", price_cents=300)
    service.set_quantity(session.session_id, gone, 1)
    service.set_quantity(session.session_id, kept, 2)
    store.client.delete_item(TableName=store.table_name, Key={k: {"S": v} for k, v in keys.product_key(gone).items()})

    shown = service.get(session.session_id)
    assert [(line.name, line.unit_price_cents, line.unavailable, line.price_changed) for line in shown.cart] == [
        ("Gone", 700, True, False),
        ("Kept", 300, False, False),
    ]
    assert shown.subtotal_cents == 2 * 300
    with pytest.raises(errors.ProductNotFound):
        wiring.order_service(store.table).place(ALICE, address=ADDRESS, session_id=session.session_id)


@pytest.mark.dynamodb_semantics
def test_current_prices_read_only_what_a_cart_shows(store):
    pid = product(store.table, name="Hammer", price_cents=1500)
    requests = []

    def record(params, **_):
        requests.append(params)

    store.client.meta.events.register("provide-client-params.dynamodb.BatchGetItem", record)
    try:
        prices = ProductRepository(store.table).current_prices([pid, "missing", pid])
    finally:
        store.client.meta.events.unregister("provide-client-params.dynamodb.BatchGetItem", record)
    assert {k: (v.name, v.price_cents) for k, v in prices.items()} == {pid: ("Hammer", 1500)}
    (request,) = requests
    (table_request,) = request["RequestItems"].values()
    assert len(table_request["Keys"]) == 2
    # status: an archived product shows as unavailable
    assert set(table_request["ExpressionAttributeNames"].values()) == {"product_id", "name", "price_cents", "status"}
    assert not table_request.get("ConsistentRead")


@pytest.mark.dynamodb_semantics
def test_a_create_whose_answer_was_lost_is_the_session_it_created(store):
    """botocore re-sends a PutItem whose answer timed out (a store stall): the id is new and random,
    so the item the re-sent write finds is the first attempt's own, not a clash."""
    service = wiring.session_service(store.table, ttl_seconds=600)
    with first_answer_lost(store.client, "PutItem"):
        session = service.create()
    assert service.get(session.session_id) == session
    with pytest.raises(errors.Conflict):  # another create of the id is a clash
        SessionRepository(store.table).create(session.session_id, created_at="2026-01-01", expires_at=2**40)
