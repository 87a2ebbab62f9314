"""The status index's walk oldest first (GET /orders?payment=expiring, issue 39), against in-memory indexes that
answer as DynamoDB does: every entry once, each page sorted oldest first, each shard's entries in exact order, every
entry read returned; the same during a shard-count switch, with orders moving between partitions; and its token, which
carries the walk's cutoff too, fits at the most shards. The newest-first walk: tests/unit/test_shard_walk.py,
test_status_switch.py."""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from shop import clock, keys, limits
from shop.config import StatusShardSwitch
from shop.repository import pagination, status_switch
from shop.repository.shard_walk import EXHAUSTED, Cursor, ShardWalk
from tests.unit.test_shard_walk import index
from tests.unit.test_status_switch import MovingIndex

POOL = ThreadPoolExecutor(max_workers=1)
SECRET = b"k" * 32


def walk_oldest_first(by_shard: list[list[str]], limit: int, max_queries: int = 32) -> tuple[list[str], float]:
    """Every page of the walk (each shard's entries given newest first, as `index` makes them): the entries in the
    order returned, and the mean displacement from one exact oldest-first order."""
    ascending = [sorted(keys_) for keys_ in by_shard]
    state, order = ShardWalk.start(len(by_shard), descending=False), []
    done = [0] * len(by_shard)
    while not state.finished:
        shares = state.plan(limit, max_queries)
        assert sum(shares.values()) == limit
        read = {}
        for shard, share in shares.items():
            cursor = state.cursors[shard]
            assert cursor is None or ascending[shard][done[shard] - 1] == cursor
            above = ascending[shard][done[shard] :]
            read[shard] = (above[:share], len(above) >= share)  # DynamoDB: LastEvaluatedKey once Limit is reached
            done[shard] += len(above[:share])
        state.advance(read)
        page = [k for got, _ in read.values() for k in got]  # every entry read is returned
        assert len(page) <= limit
        order += sorted(page)
    exact = sorted(k for keys_ in ascending for k in keys_)
    assert sorted(order) == exact  # every entry exactly once
    shard_of = {k: shard for shard, keys_ in enumerate(ascending) for k in keys_}
    for shard, keys_ in enumerate(ascending):
        assert [k for k in order if shard_of[k] == shard] == keys_  # each shard in exact order
    rank = {k: n for n, k in enumerate(exact)}
    return order, sum(abs(rank[k] - n) for n, k in enumerate(order)) / len(order)


@pytest.mark.parametrize(("shards", "limit"), [(1, 20), (4, 5), (16, 20), (64, 20), (64, 100)])
@pytest.mark.parametrize("bursty", [False, True], ids=["steady", "bursty"])
def test_oldest_first_every_entry_comes_once_and_about_in_order(shards, limit, bursty):
    order, displacement = walk_oldest_first(index(shards, 3000, seed=shards * 5 + limit, bursty=bursty), limit)
    assert displacement <= max(1.0, shards)  # as the newest-first walk: about one shard gap
    if shards == 1:
        assert order == sorted(order)


def test_an_oldest_first_walk_shares_its_page_by_time_too():
    """Shares go to the shards whose next entries are oldest (not started first): the mirror of newest first."""
    cursors = ["1970-01-01T00:00:00.000050Z#b", None, EXHAUSTED, "1970-01-01T00:00:00.000010Z#a"]
    state = ShardWalk(cursors, gap_us=20, top_us=-10, descending=False)  # expected next: 0 at 70, 3 at 30
    assert state.plan(1, 32) == {1: 1}
    assert state.plan(3, 2) == {1: 2, 3: 1}
    assert state.plan(7, 32) == {1: 4, 3: 2, 0: 1}


class AscendingIndex(MovingIndex):
    """test_status_switch's moving index, read the other way: each Query above its cursor, oldest first."""

    def query(self, partition: int, cursor: Cursor, limit: int) -> tuple[list[dict[str, Any]], bool]:
        self.queries += 1
        self.move_some(0.05)
        above = sorted(k for k in self.partitions.get(partition, {}) if not isinstance(cursor, str) or k > cursor)
        return [self.partitions[partition][k] for k in above[:limit]], len(above) >= limit


@pytest.mark.parametrize(("current", "next_count"), [(4, 16), (16, 4), (2, 8), (8, 1)])
@pytest.mark.parametrize("limit", [3, 50])
def test_oldest_first_during_a_switch_orders_moving_come_exactly_once(current, next_count, limit):
    moving = AscendingIndex(current, next_count, 250, seed=current * 100 + next_count + limit)
    switch = StatusShardSwitch(current, next_count, writers_on_next=True)
    cursors: list[Cursor] = status_switch.start()
    seen: list[str] = []
    for _ in range(10_000):
        page, cursors = status_switch.read_page(switch, cursors, limit, moving.query, POOL, descending=False)
        sort_keys = [i[keys.GSI1SK] for i in page]
        assert sort_keys == sorted(sort_keys)
        seen += [i["order_id"] for i in page]
        if all(c == EXHAUSTED for c in cursors):
            break
    assert sorted(seen) == moving.ids
    assert len(seen) == len(set(seen))


@pytest.mark.parametrize("seed", range(3))
def test_the_token_with_its_cutoff_fits_at_the_most_shards(seed):
    from datetime import UTC, datetime, timedelta

    from ulid import ULID

    rnd = random.Random(seed)

    def moment() -> datetime:
        return datetime(2000, 1, 1, tzinfo=UTC) + timedelta(microseconds=rnd.randrange(3 * 10**15))

    shards = limits.MAX_STATUS_SHARDS
    cursors = [keys.order_status_sk(clock.iso(moment()), str(ULID.from_datetime(moment()))) for _ in range(shards)]
    state = ShardWalk(list(cursors), gap_us=(1 << 62) - 1, top_us=-((1 << 62) - 1), descending=False)
    scope = f"orders-confirmed-before:{shards}"
    token = pagination.encode(scope, {**state.position(), "x": clock.iso(moment())}, SECRET, compress=True)
    assert len(token) <= limits.MAX_TOKEN_LENGTH - 1000, len(token)
    decoded = pagination.decode(token, scope, SECRET)
    assert ShardWalk.from_position(decoded, shards, descending=False).cursors == cursors


def test_a_position_names_the_entry_to_resume_after_in_any_partition():
    sort_key = keys.order_status_sk("2026-01-01T00:00:00.000000Z", "01JABCDEFGHJKMNPQRSTVWXYZ0")
    assert keys.order_status_position("CONFIRMED", 7, sort_key) == {
        "PK": "ORDER#01JABCDEFGHJKMNPQRSTVWXYZ0",
        "SK": "ORDER",
        "GSI1PK": "ORDER_STATUS#CONFIRMED#7",
        "GSI1SK": sort_key,
    }
