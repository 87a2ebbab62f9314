"""The orders-by-status listing through a shard-count switch (issue 28, migration 0002), phase by phase:
tokens issued before the switch keep working during it, tokens issued during it keep working after it,
and what reading both counts costs. The migration itself under load: tests/repository/test_status_migration.py.
"""

from __future__ import annotations

import pytest

from shop import errors, keys, wiring
from shop.config import StatusShardSwitch
from shop.models import OrderStatus
from shop.services.orders import RequestedLine
from tests.support.factories import ADDRESS, ADMIN, ALICE, product
from tests.support.reads import reading

# Reads no stream record: its tables have none (tests/conftest.py::local_store; docs/testing.md, "Time").
pytestmark = pytest.mark.table_without_stream

BEFORE = StatusShardSwitch(4)
DUAL_READ = StatusShardSwitch(4, 16)
WRITERS_ON_NEXT = StatusShardSwitch(4, 16, writers_on_next=True)
AFTER = StatusShardSwitch(16)


def _walk(service, token=None, limit=3):
    seen = []
    while True:
        page = service.list_by_status(ADMIN, OrderStatus.PENDING, limit=limit, next_token=token)
        keys_ = [(o.created_at, o.order_id) for o in page.items]
        assert keys_ == sorted(keys_, reverse=True)
        seen += [o.order_id for o in page.items]
        token = page.next_token
        if token is None:
            return seen


def test_tokens_cross_every_phase_of_the_switch_and_each_order_comes_once(store):
    pid = product(store.table, stock=100)
    service = {s: wiring.order_service(store.table, switch=s) for s in (BEFORE, DUAL_READ, WRITERS_ON_NEXT, AFTER)}
    placed = [service[BEFORE].place(ALICE, address=ADDRESS, lines=[RequestedLine(pid, 1)]).order_id for _ in range(8)]

    first = service[BEFORE].list_by_status(ADMIN, OrderStatus.PENDING, limit=3, next_token=None)
    # dual read: the token issued under 4 shards goes on over both counts
    assert sorted([o.order_id for o in first.items] + _walk(service[DUAL_READ], first.next_token)) == sorted(placed)

    placed += [
        service[WRITERS_ON_NEXT].place(ALICE, address=ADDRESS, lines=[RequestedLine(pid, 1)]).order_id for _ in range(8)
    ]
    indexed = {
        o: store.client.get_item(TableName=store.table_name, Key={"PK": {"S": f"ORDER#{o}"}, "SK": {"S": "ORDER"}})[
            "Item"
        ]["GSI1PK"]["S"]
        for o in placed
    }
    assert all(indexed[o] == keys.order_status_pk("PENDING", keys.status_shard(o, 16)) for o in placed[8:])
    assert sorted(_walk(service[WRITERS_ON_NEXT])) == sorted(placed)
    during = service[WRITERS_ON_NEXT].list_by_status(ADMIN, OrderStatus.PENDING, limit=5, next_token=None)
    assert len(during.items) == 5

    # after the switch (the migration has not run here: orders under 4 shards are where 16 shards read them
    # too), tokens of the switch (one cursor) and of before it (4 cursors) are spread over the 16 shards
    rest = _walk(service[AFTER], during.next_token)
    assert sorted([o.order_id for o in during.items] + rest) == sorted(placed)
    rest = _walk(service[AFTER], first.next_token)
    assert len(rest) == len(set(rest))
    # every order of before the token it had not returned; of the orders placed since, those of the shards it
    # had not started (a position: what is newer than a shard's cursor is behind it)
    assert set(rest) - set(placed[8:]) == set(placed[:8]) - {o.order_id for o in first.items}


def test_a_token_of_a_count_that_does_not_divide_is_refused_after_a_shrink(store):
    pid = product(store.table, stock=10)
    big = wiring.order_service(store.table, switch=StatusShardSwitch(16))
    for _ in range(3):
        big.place(ALICE, address=ADDRESS, lines=[RequestedLine(pid, 1)])
    first = big.list_by_status(ADMIN, OrderStatus.PENDING, limit=1, next_token=None)
    token = first.next_token
    shrinking = wiring.order_service(store.table, switch=StatusShardSwitch(16, 4, writers_on_next=True))
    rest = _walk(shrinking, token)  # during the switch: 16 lanes, the shared partitions filtered by hash
    assert len(rest) + len(first.items) == 3 == len(set(rest) | {o.order_id for o in first.items})
    with pytest.raises(errors.InvalidNextToken):
        wiring.order_service(store.table, switch=StatusShardSwitch(4)).list_by_status(
            ADMIN, OrderStatus.PENDING, limit=1, next_token=token
        )


def test_reading_both_counts_costs_two_rounds_of_a_page_per_partition(store):
    pid = product(store.table, stock=100)
    writer = wiring.order_service(store.table, switch=WRITERS_ON_NEXT)
    for _ in range(24):
        writer.place(ALICE, address=ADDRESS, lines=[RequestedLine(pid, 1)])
    with reading(store.client) as reads:
        page = writer.list_by_status(ADMIN, OrderStatus.PENDING, limit=10, next_token=None)
    assert len(page.items) == 10
    assert reads.operations == ["Query"] * 16  # every partition of the larger count, in two rounds
    assert 10 <= reads.items_read <= 16 * 10  # up to a page per partition, to merge exactly
    with reading(store.client) as reads:
        outside = wiring.order_service(store.table, switch=AFTER).list_by_status(
            ADMIN, OrderStatus.PENDING, limit=10, next_token=None
        )
    assert reads.items_read == len(outside.items)  # outside the switch: read amplification 1.00
