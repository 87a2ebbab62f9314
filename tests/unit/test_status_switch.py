"""The status listing during a shard-count switch, against an in-memory index that answers as DynamoDB
does, with orders moved between shards while a page is being read (before, between and after its
Queries): every order indexed throughout comes exactly once, whichever token the walk started from."""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from shop import clock, keys
from shop.config import StatusShardSwitch
from shop.repository import status_switch
from shop.repository.shard_walk import EXHAUSTED, NOT_STARTED, Cursor

POOL = ThreadPoolExecutor(max_workers=1)  # one worker: the Queries run in the order they are submitted


class MovingIndex:
    """Status partitions of sort keys; `query` first moves some orders (the migration running meanwhile)."""

    def __init__(self, current: int, next_count: int, orders: int, seed: int) -> None:
        self.rnd = random.Random(seed)
        self.next = next_count
        self.partitions: dict[int, dict[str, dict[str, Any]]] = {}
        at = datetime(2026, 11, 27, tzinfo=UTC)
        self.ids: list[str] = []
        for n in range(orders):
            at += timedelta(microseconds=self.rnd.randint(1, 3000))
            order_id = f"{n:026d}"
            self.ids.append(order_id)
            item = {"order_id": order_id, keys.GSI1SK: keys.order_status_sk(clock.iso(at), order_id)}
            self.partitions.setdefault(keys.status_shard(order_id, current), {})[item[keys.GSI1SK]] = item
        self.queries = 0

    def move_some(self, chance: float) -> None:
        for partition, entries in list(self.partitions.items()):
            for sort_key, item in list(entries.items()):
                target = keys.status_shard(item["order_id"], self.next)
                if target != partition and self.rnd.random() < chance:
                    del entries[sort_key]  # one write: gone from here and there at once
                    self.partitions.setdefault(target, {})[sort_key] = item

    def query(self, partition: int, cursor: Cursor, limit: int) -> tuple[list[dict[str, Any]], bool]:
        self.queries += 1
        self.move_some(0.05)
        below = sorted(
            (k for k in self.partitions.get(partition, {}) if not isinstance(cursor, str) or k < cursor),
            reverse=True,
        )
        return [self.partitions[partition][k] for k in below[:limit]], len(below) >= limit  # LastEvaluatedKey


def walk(index: MovingIndex, switch: StatusShardSwitch, cursors: list[Cursor], limit: int) -> list[str]:
    seen: list[str] = []
    for _ in range(10_000):
        page, cursors = status_switch.read_page(switch, cursors, limit, index.query, POOL)
        sort_keys = [i[keys.GSI1SK] for i in page]
        assert sort_keys == sorted(sort_keys, reverse=True)
        seen += [i["order_id"] for i in page]
        if all(c == EXHAUSTED for c in cursors):
            return seen
    raise AssertionError("the walk did not end")


@pytest.mark.parametrize(("current", "next_count"), [(4, 16), (16, 4), (2, 8), (8, 1)])
@pytest.mark.parametrize("limit", [3, 50])
def test_orders_moving_during_the_walk_come_exactly_once(current, next_count, limit):
    index = MovingIndex(current, next_count, 250, seed=current * 100 + next_count + limit)
    switch = StatusShardSwitch(current, next_count, writers_on_next=True)
    seen = walk(index, switch, status_switch.start(), limit)
    assert sorted(seen) == index.ids
    assert len(seen) == len(set(seen))


@pytest.mark.parametrize(("current", "next_count"), [(4, 16), (16, 4)])
def test_a_token_issued_before_the_switch_continues_with_what_it_had_not_returned(current, next_count):
    """A per-shard walk's cursors (one per shard of the old count) go on as lanes: each lane returns the
    orders of its old shard below its cursor, wherever they have moved."""
    index = MovingIndex(current, next_count, 300, seed=7)
    rnd = random.Random(3)
    cursors: list[Cursor] = []
    returned: set[str] = set()
    for shard in range(current):
        entries = sorted(index.partitions.get(shard, {}), reverse=True)
        choice = rnd.choice(["start", "exhausted", "middle", "middle"]) if entries else "exhausted"
        if choice == "start":
            cursors.append(NOT_STARTED)
        elif choice == "exhausted":
            cursors.append(EXHAUSTED)
            returned |= {index.partitions[shard][k]["order_id"] for k in entries}
        else:
            at = rnd.randrange(len(entries))
            cursors.append(entries[at])
            returned |= {index.partitions[shard][k]["order_id"] for k in entries[: at + 1]}
    switch = StatusShardSwitch(current, next_count, writers_on_next=True)
    seen = walk(index, switch, cursors, 11)
    assert len(seen) == len(set(seen))
    assert set(seen) == set(index.ids) - returned


def test_a_move_between_the_two_rounds_is_caught_by_the_second():
    """The race the rounds exist for: the order is moved after the reader read its destination would have
    been missed if the destination were read first; sources are read first, so it is not."""
    switch = StatusShardSwitch(4, 16, writers_on_next=True)
    order_id = next(f"{n:026d}" for n in range(1000) if keys.status_shard(f"{n:026d}", 16) >= 4)
    source, target = keys.status_shard(order_id, 4), keys.status_shard(order_id, 16)
    item = {"order_id": order_id, keys.GSI1SK: keys.order_status_sk("2026-11-27T00:00:00.000000Z", order_id)}
    where = {source: [item]}
    asked: list[int] = []

    def query(partition: int, cursor: Cursor, limit: int) -> tuple[list[dict[str, Any]], bool]:
        asked.append(partition)
        answer = list(where.get(partition, []))
        if partition == source:  # the migration moves it right after its source was read
            where.pop(source)
            where[target] = [item]
        return answer, False

    page, cursors = status_switch.read_page(switch, [NOT_STARTED], 10, query, POOL)
    assert [i["order_id"] for i in page] == [order_id]  # seen twice, returned once
    assert cursors == [EXHAUSTED]
    assert set(asked[:4]) == {0, 1, 2, 3}
    assert set(asked[4:]) == set(range(4, 16))


def test_lanes_map_onto_the_partitions_of_both_counts():
    assert status_switch.lane_partitions(0, 1, (4, 16)) == list(range(16))
    assert status_switch.lane_partitions(2, 4, (4, 16)) == [2, 6, 10, 14]
    assert status_switch.lane_partitions(9, 16, (16, 4)) == [1, 9]
    assert status_switch.lanes_exact(4, (4, 16))
    assert not status_switch.lanes_exact(16, (16, 4))
    assert status_switch.destinations(StatusShardSwitch(4, 16)) == frozenset(range(4, 16))
    assert status_switch.destinations(StatusShardSwitch(16, 4)) == frozenset(range(4))
    assert status_switch.destinations(StatusShardSwitch(16)) == frozenset()


def test_a_token_widens_to_a_count_its_lanes_divide():
    assert status_switch.widened(["b", EXHAUSTED], 4) == ["b", EXHAUSTED, "b", EXHAUSTED]
    assert status_switch.widened(["x"], 3) == ["x", "x", "x"]
    assert status_switch.widened(["a", "b", "c"], 4) is None
