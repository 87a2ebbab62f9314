"""The confirmed orders whose card authorisation will soon lapse, on DynamoDB Local (GET /orders?payment=expiring,
issue 39): the CONFIRMED status index walked oldest first, one Query per shard in one parallel round, the key
condition `GSI1SK < <cutoff>` on the sort key (it starts with created_at), each shard resuming after its cursor
(ExclusiveStartKey); no Scan, no filter: every item read is returned (read amplification 1.00). During a shard-count
switch the walk reads both counts (resuming partitions at entries that are not theirs). The rules:
tests/unit/services/test_orders.py."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest

from shop import clock, errors, ids, keys, wiring
from shop.config import StatusShardSwitch
from shop.limits import MAX_PARALLEL_QUERIES
from shop.models import Order, OrderLine, OrderStatus, StatusEntry
from shop.models.orders import OrderPayment, PaymentStatus
from shop.repository import OrderRepository
from tests.support.factories import ADDRESS, ADMIN
from tests.support.reads import reading

pytestmark = pytest.mark.table_without_stream

CUTOFF_DAYS = 6  # AUTHORISATION_WARN_DAYS' default


def restore(
    orders: OrderRepository,
    days_ago: float,
    *,
    status: OrderStatus = OrderStatus.CONFIRMED,
    payment: PaymentStatus | None = PaymentStatus.AUTHORISED,
) -> Order:
    at = clock.now() - timedelta(days=days_ago)
    order = Order(
        order_id=ids.new_id(),
        customer_id="alice",
        status=status,
        version=2,
        total_cents=1000,
        created_at=clock.iso(at),
        updated_at=clock.iso(at),
        lines=[OrderLine.priced("p-1", "Widget", 1000, 1)],
        shipping_address=ADDRESS,
        history=[StatusEntry(status=status, at=clock.iso(at))],
        payment=None if payment is None else OrderPayment(status=payment, amount_cents=1000, currency="usd"),
    )
    return orders.restore(order)


@contextmanager
def query_params(client: Any) -> Iterator[list[dict[str, Any]]]:
    """The parameters of every Query the client sends inside the block."""
    seen: list[dict[str, Any]] = []
    lock = threading.Lock()

    def record(params: dict[str, Any], **_: Any) -> None:
        with lock:
            seen.append(dict(params))

    client.meta.events.register("provide-client-params.dynamodb.Query", record)
    try:
        yield seen
    finally:
        client.meta.events.unregister("provide-client-params.dynamodb.Query", record)


def walk(store: Any, service: Any, limit: int, shards: int) -> list[str]:
    """Every page of the listing: each sorted oldest first, each reading exactly what it returns."""
    seen, token = [], None
    while True:
        with reading(store.client) as reads, query_params(store.client) as params:
            page = service.list_expiring_authorisations(ADMIN, limit=limit, next_token=token)
        assert len(page.items) <= limit
        assert reads.items_read == len(page.items)  # read amplification 1.00
        assert set(reads.operations) <= {"Query"}
        assert 1 <= len(reads.operations) <= min(shards, limit, MAX_PARALLEL_QUERIES)
        for sent in params:  # the key condition selects: no filter, oldest first
            assert sent["KeyConditionExpression"] == "GSI1PK = :pk AND GSI1SK < :cutoff"
            assert "FilterExpression" not in sent
            assert sent["ScanIndexForward"] is True
        created = [(o.created_at, o.order_id) for o in page.items]
        assert created == sorted(created)
        seen += [o.order_id for o in page.items]
        token = page.next_token
        if not token:
            return seen


@pytest.mark.dynamodb_semantics
@pytest.mark.parametrize("shards", [1, 4, 64])
def test_every_old_confirmed_order_once_in_shard_order_reading_only_what_is_returned(store, shards):
    orders = OrderRepository(store.table, shards=shards)
    old = [restore(orders, CUTOFF_DAYS + 0.5 + n / 10).order_id for n in range(30)]
    for n in range(4):  # confirmed within the warning's days, or not confirmed: never read
        restore(orders, 1 + n)
        restore(orders, CUTOFF_DAYS + 3, status=OrderStatus.SHIPPED)
        restore(orders, CUTOFF_DAYS + 3, status=OrderStatus.CANCELLED, payment=PaymentStatus.CANCELED)
    oldest_first = list(reversed(old))
    service = wiring.order_service(store.table, shards=shards)
    for limit in (1, 7, 100):
        seen = walk(store, service, limit, shards)
        assert sorted(seen) == sorted(old), limit  # each once, nothing else
        for shard in range(shards):  # each shard's orders in exact oldest-first order
            of_shard = [o for o in oldest_first if keys.status_shard(o, shards) == shard]
            assert [o for o in seen if keys.status_shard(o, shards) == shard] == of_shard, (limit, shard)
        if shards == 1:
            assert seen == oldest_first


@pytest.mark.dynamodb_semantics
def test_one_query_per_shard_in_one_round_and_each_order_with_its_payment(store):
    orders = OrderRepository(store.table, shards=4)
    statuses = [PaymentStatus.AUTHORISED, PaymentStatus.LAPSED, PaymentStatus.CAPTURED, None]
    placed = {restore(orders, 7 + n, payment=status).order_id: status for n, status in enumerate(statuses)}
    service = wiring.order_service(store.table, shards=4)
    with reading(store.client) as reads:
        page = service.list_expiring_authorisations(ADMIN, limit=20, next_token=None)
    assert reads.operations == ["Query"] * 4  # one round: every shard once, in parallel
    assert reads.items_read == len(page.items) == 4
    assert {o.order_id: o.payment_status for o in page.items} == placed
    assert page.next_token is None


@pytest.mark.dynamodb_semantics
def test_a_token_is_this_lists_and_keeps_its_cutoff(store, monkeypatch):
    orders = OrderRepository(store.table, shards=4)
    old = [restore(orders, 9 - n / 10).order_id for n in range(6)]
    soon = restore(orders, CUTOFF_DAYS - 1).order_id  # listed by a walk that starts two days later
    service = wiring.order_service(store.table, shards=4)
    first = service.list_expiring_authorisations(ADMIN, limit=2, next_token=None)
    assert first.next_token is not None
    later = clock.now() + timedelta(days=2)
    monkeypatch.setattr(clock, "now", lambda: later)
    seen, token = [o.order_id for o in first.items], first.next_token
    while token:
        page = service.list_expiring_authorisations(ADMIN, limit=2, next_token=token)
        seen += [o.order_id for o in page.items]
        token = page.next_token
    assert sorted(seen) == sorted(old)  # the walk's cutoff is its first page's
    fresh = service.list_expiring_authorisations(ADMIN, limit=20, next_token=None)
    assert soon in {o.order_id for o in fresh.items}
    by_status = service.list_by_status(ADMIN, OrderStatus.CONFIRMED, limit=2, next_token=None)
    with pytest.raises(errors.InvalidNextToken):  # another list's token
        service.list_expiring_authorisations(ADMIN, limit=2, next_token=by_status.next_token)
    with pytest.raises(errors.InvalidNextToken):
        service.list_by_status(ADMIN, OrderStatus.CONFIRMED, limit=2, next_token=first.next_token)
    with pytest.raises(errors.InvalidNextToken):
        service.list_expiring_authorisations(ADMIN, limit=2, next_token=first.next_token[:-2] + "AA")


@pytest.mark.dynamodb_semantics
@pytest.mark.parametrize(("current", "next_count"), [(4, 16), (16, 4)])
def test_during_a_shard_count_switch_every_order_comes_once(store, current, next_count):
    """Orders indexed under either count (writers on the next one, the rest not moved yet): the walk reads both,
    each partition resuming after a lane's cursor, which may be another partition's entry."""
    old, new = OrderRepository(store.table, shards=current), OrderRepository(store.table, shards=next_count)
    placed = [restore(old if n % 2 else new, 7 + n / 10).order_id for n in range(24)]
    restore(new, 1)  # not yet
    switch = StatusShardSwitch(current, next_count, writers_on_next=True)
    service = wiring.order_service(store.table)
    service.orders = OrderRepository(store.table, switch=switch)
    for limit in (1, 5, 50):
        seen, token = [], None
        while True:
            page = service.list_expiring_authorisations(ADMIN, limit=limit, next_token=token)
            created = [(o.created_at, o.order_id) for o in page.items]
            assert created == sorted(created)
            seen += [o.order_id for o in page.items]
            token = page.next_token
            if not token:
                break
        assert sorted(seen) == sorted(placed), limit
        assert len(seen) == len(set(seen))
