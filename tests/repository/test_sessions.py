from __future__ import annotations

import pytest

from shop import errors, keys
from shop.repository import SessionRepository
from shop.services.sessions import SessionService
from tests.support.calls import counting
from tests.support.factories import product


def test_session_cart_lifecycle(store):
    service = SessionService(store.table, ttl_seconds=600)
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
    assert calls.operations == ["GetItem"]
    assert fetched == updated
    service.delete(session.session_id)
    with pytest.raises(errors.SessionNotFound):
        service.get(session.session_id)


def test_unknown_product_or_session(store):
    service = SessionService(store.table)
    session = service.create()
    with pytest.raises(errors.ProductNotFound):
        service.set_quantity(session.session_id, "missing", 1)
    with pytest.raises(errors.SessionNotFound):
        service.set_quantity("no-such-session", product(store.table), 1)


def test_every_change_slides_expiry(store, monkeypatch):
    from shop import clock

    service = SessionService(store.table, ttl_seconds=600)
    session = service.create()
    real_now = clock.now()
    from datetime import timedelta

    monkeypatch.setattr(clock, "now", lambda: real_now + timedelta(seconds=300))
    updated = service.set_quantity(session.session_id, product(store.table), 1)
    assert updated.expires_at > session.expires_at


def test_expired_session_is_absent_before_ttl_deletes_it(store):
    repository = SessionRepository(store.table)
    repository.create("expired-session-id", created_at="2026-01-01T00:00:00.000000Z", expires_at=1000)
    item = store.client.get_item(
        TableName=store.table_name, Key={"PK": {"S": "SESSION#expired-session-id"}, "SK": {"S": keys.SESSION_SK}}
    )
    assert "Item" in item, "DynamoDB has not deleted it, and will not for a while"
    service = SessionService(store.table)
    with pytest.raises(errors.SessionNotFound):
        service.get("expired-session-id")
    with pytest.raises(errors.SessionNotFound):
        service.set_quantity("expired-session-id", product(store.table), 1)


def test_cart_holds_at_most_25_lines(store):
    service = SessionService(store.table)
    session = service.create()
    ids = [product(store.table, name=f"p{i:02d}") for i in range(26)]
    for pid in ids[:25]:
        service.set_quantity(session.session_id, pid, 1)
    with pytest.raises(errors.CartFull):
        service.set_quantity(session.session_id, ids[25], 1)
    assert service.set_quantity(session.session_id, ids[0], 5).cart[0].quantity == 5
    assert len(service.get(session.session_id).cart) == 25
