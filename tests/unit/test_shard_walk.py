"""The status listing's walk over shards, against an in-memory index that answers as DynamoDB does.

Every entry comes exactly once, each page is sorted, each shard's entries come in exact order, and
every entry read is returned. How close the walk stays to one exact newest-first order is measured
as each entry's displacement (its place in the walk against its place in an exact sort).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from shop import clock, errors, keys
from shop.repository.shard_walk import EXHAUSTED, ShardWalk


@dataclass
class Walked:
    order: list[str]
    pages: int
    empty_pages: int
    displacement_mean: float
    displacement_max: int


def index(shards: int, entries: int, seed: int, bursty: bool = False) -> list[list[str]]:
    """Entries spread by hash over the shards, arriving at random (bursty: calm and busy spells)."""
    rnd = random.Random(seed)
    at = datetime(2026, 11, 26, tzinfo=UTC)
    by_shard: list[list[str]] = [[] for _ in range(shards)]
    for n in range(entries):
        busy = bursty and (n // 500) % 2
        at += timedelta(microseconds=rnd.randint(1, 200) if busy else rnd.randint(1, 2000))
        by_shard[rnd.randrange(shards)].append(keys.order_status_sk(clock.iso(at), f"{n:026d}"))
    return [sorted(keys_, reverse=True) for keys_ in by_shard]


def walk(by_shard: list[list[str]], limit: int, max_queries: int = 32) -> Walked:
    shards = len(by_shard)
    state, order, pages, empty = ShardWalk.start(shards), [], 0, 0
    done = [0] * shards  # how many of each shard's entries lie above its cursor
    while True:
        shares = state.plan(limit, max_queries)
        assert sum(shares.values()) == limit
        assert len(shares) <= max_queries
        read = {}
        for shard, share in shares.items():
            cursor = state.cursors[shard]
            assert cursor is None or by_shard[shard][done[shard] - 1] == cursor
            below = by_shard[shard][done[shard] :]
            read[shard] = (below[:share], len(below) >= share)  # DynamoDB: LastEvaluatedKey once Limit is reached
            done[shard] += len(below[:share])
        state.advance(read)
        page = [k for got, _ in read.values() for k in got]
        assert len(page) <= limit
        order += sorted(page, reverse=True)
        pages, empty = pages + 1, empty + (not page)
        if state.finished:
            break
    exact = sorted((k for keys_ in by_shard for k in keys_), reverse=True)
    assert sorted(order, reverse=True) == exact  # every entry exactly once
    shard_of = {k: shard for shard, keys_ in enumerate(by_shard) for k in keys_}
    for shard, keys_ in enumerate(by_shard):
        assert [k for k in order if shard_of[k] == shard] == keys_  # each shard in exact order
    rank = {k: n for n, k in enumerate(exact)}
    moved = [abs(rank[k] - n) for n, k in enumerate(order)]
    return Walked(order, pages, empty, sum(moved) / len(moved), max(moved))


@pytest.mark.parametrize(("shards", "limit"), [(1, 20), (4, 5), (4, 20), (16, 20), (32, 20), (64, 20), (64, 100)])
@pytest.mark.parametrize("bursty", [False, True], ids=["steady", "bursty"])
def test_the_walk_returns_everything_once_and_stays_within_about_one_shard_gap(shards, limit, bursty):
    walked = walk(index(shards, 3000, seed=shards * 7 + limit, bursty=bursty), limit)
    # an entry's place is known only once its shard is read: the walk is off by about one
    # entry per shard on average (docs/access-patterns.md states the measured figures)
    assert walked.displacement_mean <= max(1.0, shards), walked
    assert walked.displacement_max <= 15 * shards, walked
    assert walked.empty_pages <= shards
    if shards == 1:
        assert walked.displacement_max == 0


def test_time_keeps_few_shards_abreast_where_equal_shares_drift_apart():
    """Equal shares let the shards' cursors drift apart as the walk goes deeper; shares by time do not."""
    from shop.repository import shard_walk

    by_shard = index(4, 20000, seed=11)
    timed = walk(by_shard, 20)
    original = ShardWalk.advance

    def forget_gap(self: ShardWalk, read: dict) -> None:
        original(self, read)
        self.gap_us = None

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(shard_walk.ShardWalk, "advance", forget_gap)
        equal = walk(by_shard, 20)
    assert timed.displacement_mean < 5
    assert equal.displacement_mean > 50


def test_a_page_queries_at_most_max_queries_shards_and_every_shard_in_time():
    walked = walk(index(64, 2000, seed=3), 100, max_queries=8)
    assert walked.pages >= 20


def test_shares_go_first_to_shards_not_started_then_to_the_newest_cursors():
    cursors = ["1970-01-01T00:00:00.000010Z#b", None, EXHAUSTED, "1970-01-01T00:00:00.000050Z#a"]
    state = ShardWalk(cursors, gap_us=20, top_us=60)  # expected next: 0 at -10, 1 at 60, 3 at 30
    assert state.plan(1, 32) == {1: 1}
    assert state.plan(3, 2) == {1: 2, 3: 1}
    assert state.plan(7, 32) == {1: 4, 3: 2, 0: 1}
    assert ShardWalk(cursors, gap_us=20).plan(1, 32) == {1: 1}  # no time known yet: not started comes first
    assert ShardWalk([EXHAUSTED, EXHAUSTED, None]).plan(5, 32) == {2: 5}
    assert ShardWalk.start(3).plan(7, 32) == {0: 3, 1: 2, 2: 2}


@pytest.mark.parametrize(
    "position",
    [
        "2026-01-01T00:00:00.000000Z#a",
        {"c": [None]},
        {"c": [None, False]},
        {"c": [None, ""]},
        {"c": [None, 1]},
        {"c": [None, None], "g": 0},
        {"c": [None, None], "t": "1"},
        {"c": [None, None], "g": -5},
        {"c": [None, None], "g": True},
    ],
)
def test_a_position_of_another_shape_is_refused(position):
    with pytest.raises(errors.InvalidNextToken):
        ShardWalk.from_position(position, 2)


def test_a_position_round_trips():
    state = ShardWalk(["2026-01-01T00:00:00.000000Z#a", None, EXHAUSTED], gap_us=7, top_us=9)
    assert ShardWalk.from_position(state.position(), 3) == state
    assert ShardWalk.from_position(ShardWalk.start(3).position(), 3) == ShardWalk.start(3)


@pytest.mark.parametrize("value", ["0", "65", "x", "-1", "²"])
def test_a_status_shard_count_outside_what_a_token_carries_is_a_configuration_error(monkeypatch, value):
    from shop.config import ConfigurationError, settings

    monkeypatch.setenv("STATUS_SHARDS", value)
    with pytest.raises(ConfigurationError, match=r"STATUS_SHARDS must be 1\.\.64"):
        settings()
