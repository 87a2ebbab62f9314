"""Flash-sale stock: where a line takes its stock from (properties), then the placement rules on the memory
store (random shard, fallback, split, out of stock, cancel, spreading)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shop import errors
from shop.limits import MAX_TRANSACTION_ITEMS
from shop.models import OrderStatus
from shop.models.stock import StockLayout, StockSource
from shop.repository.stock_shards import even_split
from shop.services import stock as stock_rules
from shop.services.orders import RequestedLine
from shop.services.stock import MAX_STOCK_ATTEMPTS, StockReservation, takes_for
from tests.support.factories import ADDRESS, ADMIN, ALICE, BOB

layouts = st.builds(
    lambda pid, main, shards: StockLayout(pid, main, tuple(shards), 100),
    st.just("p"),
    st.integers(0, 20),
    st.lists(st.integers(0, 20), min_size=2, max_size=32),
)


def held(layout: StockLayout, source: StockSource) -> int:
    """What `source` holds in `layout`: the product item's stock (None) or a shard's."""
    return layout.main if source is None else layout.shards[source]


@given(layouts, st.integers(1, 99))
def test_a_line_is_taken_whole_from_places_that_hold_it_or_refused(layout, quantity):
    takes = takes_for(quantity, layout)
    if layout.total < quantity:
        assert takes is None
        return
    assert takes is not None
    assert sum(take.quantity for take in takes) == quantity
    assert len({take.source for take in takes}) == len(takes)  # each place once
    for take in takes:
        assert 0 < take.quantity <= held(layout, take.source)
    if any(stock >= quantity for stock in layout.shards):
        assert len(takes) == 1
        assert takes[0].source is not None  # a shard before the product item


@given(st.integers(0, 1_000_000), st.integers(2, 32))
def test_an_even_split_keeps_every_unit_and_differs_by_at_most_one(total, shards):
    split = even_split(total, shards)
    assert sum(split) == total
    assert max(split) - min(split) <= 1


# -- the rules on the memory store -------------------------------------------------------------------


def hot(memory, *, stock: int, shards: int) -> str:
    created = memory.catalog_service().create(
        ADMIN, name="Headset", category="tools", price_cents=4900, description=None, stock=stock
    )
    memory.catalog_service().set_stock_shards(ADMIN, created.product_id, shards)
    return created.product_id


def buy(memory, pid: str, quantity: int, actor=ALICE):
    return memory.order_service().place(actor, address=ADDRESS, lines=[RequestedLine(pid, quantity)])


def test_marking_hot_spreads_everything_and_the_product_shows_the_sum(memory):
    pid = hot(memory, stock=10, shards=4)
    assert memory.products.stock_layout(pid) == StockLayout(pid, 0, (3, 3, 2, 2), 4900)
    product = memory.catalog_service().get(pid)
    assert (product.stock, product.stock_shards) == (10, 4)


def test_only_an_admin_spreads_stock(memory):
    pid = hot(memory, stock=10, shards=4)
    with pytest.raises(errors.Forbidden):
        memory.catalog_service().set_stock_shards(ALICE, pid, 2)


def test_an_empty_shard_sends_the_line_to_another(memory, monkeypatch):
    pid = hot(memory, stock=2, shards=2)
    monkeypatch.setattr(stock_rules.random, "randrange", lambda _count: 0)
    buy(memory, pid, 1)
    order = buy(memory, pid, 1, BOB)
    assert order.stock_taken == {pid: {"01": 1}}
    with pytest.raises(errors.OutOfStock) as raised:
        buy(memory, pid, 1)
    assert type(raised.value) is errors.OutOfStock


def test_a_line_bigger_than_every_shard_is_split(memory, monkeypatch):
    pid = hot(memory, stock=9, shards=3)
    monkeypatch.setattr(stock_rules.random, "randrange", lambda _count: 0)
    order = buy(memory, pid, 7)
    assert sum(order.stock_taken[pid].values()) == 7
    assert memory.products.stock_layout(pid).total == 2


def test_cancel_puts_each_unit_back_on_its_shard(memory, monkeypatch):
    pid = hot(memory, stock=9, shards=3)
    monkeypatch.setattr(stock_rules.random, "randrange", lambda _count: 2)
    order = buy(memory, pid, 2)
    assert memory.order_service().cancel(ALICE, order.order_id).status is OrderStatus.CANCELLED
    assert memory.products.stock_layout(pid).shards == (3, 3, 3)


def test_stock_that_keeps_moving_ends_in_503_after_the_bounded_attempts():
    reads = []

    def read_layout(pid, *, shards_hint):
        reads.append(pid)
        return StockLayout(pid, 0, (5, 5), 100)

    reservation = StockReservation({"p": 1}, {"p": 2}, read_layout)
    for _ in range(MAX_STOCK_ATTEMPTS - 1):
        reservation.takes()
        reservation.learn(errors.StockSourceShort({"p": {0: 0}}, {"p": 2}))
    with pytest.raises(errors.ServiceUnavailable):
        reservation.learn(errors.StockSourceShort({"p": {1: 0}}, {"p": 2}))
    assert reads == ["p"]  # read once; later failures correct what was read


# -- orders over scattered shards: every plan fits one transaction ----------------------------------


@given(layouts, st.integers(1, 99))
def test_gathering_moves_a_line_into_one_shard_and_keeps_every_unit(layout, quantity):
    if layout.total < quantity:
        return
    moves, takes = stock_rules.gathering(quantity, layout)
    after = stock_rules.moved(layout, moves)
    assert after.total == layout.total
    assert all(stock >= 0 for stock in after.shards)
    assert sum(take.quantity for take in takes) == quantity
    assert len(takes) <= 2
    assert takes[0].source is not None or not any(layout.shards)  # the gathering shard first
    for take in takes:
        assert 0 < take.quantity <= held(after, take.source)
    assert {move.target for move in moves} <= {takes[0].source}


scattered_orders = st.lists(
    st.tuples(st.lists(st.integers(0, 6), min_size=2, max_size=32), st.integers(0, 10), st.integers(1, 99)),
    min_size=1,
    max_size=25,
)


@given(scattered_orders, st.integers(0, 2))
def test_a_reservation_plans_within_the_room_and_gathers_in_transactions_that_fit(lines, extra):
    """Whatever the layouts (as the failed first attempt read them), the plan's places fit the room the
    order's other items leave, and each gathering transaction holds at most MAX_TRANSACTION_ITEMS."""
    layouts = {
        f"p{i}": StockLayout(f"p{i}", main, tuple(shards), 100)
        for i, (shards, main, _) in enumerate(lines)
        if main + sum(shards) >= 1
    }
    quantities = {pid: min(quantity, layouts[pid].total) for pid, (_, _, quantity) in zip(layouts, lines, strict=False)}
    batches = []

    def gather(moves, token):
        assert 1 <= len(token) <= 36
        batches.append(list(moves))

    reservation = StockReservation(
        quantities, {pid: len(layout.shards) for pid, layout in layouts.items()}, lambda pid, **_: layouts[pid], gather
    )
    reservation.learn(errors.StockSourceShort({pid: {0: 0} for pid in layouts}, {}))
    room = MAX_TRANSACTION_ITEMS - 2 - extra
    plan = reservation.takes(room)
    assert sum(len(takes) for takes in plan.values()) <= room
    assert {pid: sum(take.quantity for take in takes) for pid, takes in plan.items()} == quantities
    for batch in batches:
        items = {(move.product_id, move.source) for move in batch} | {(move.product_id, move.target) for move in batch}
        assert len(items) <= MAX_TRANSACTION_ITEMS


def test_the_issue_s_four_lines_over_32_shards_are_placed_on_the_memory_store(memory):
    pids = [hot(memory, stock=96, shards=32) for _ in range(4)]
    order = memory.order_service().place(ALICE, address=ADDRESS, lines=[RequestedLine(pid, 96) for pid in pids])
    assert {pid: sum(order.stock_taken[pid].values()) for pid in pids} == dict.fromkeys(pids, 96)
    assert [memory.products.stock_layout(pid).total for pid in pids] == [0, 0, 0, 0]


# -- gatherings that race: a corrected layout may hold less than the product -----------------------


def gathered_elsewhere(memory, pid: str, quantity: int) -> None:
    """Another order gathers `quantity` of `pid` into one shard, then its placement fails (another line
    out of stock, a price change): the gathered units stay where it put them."""
    other = StockReservation({pid: quantity}, {pid: 32}, memory.products.stock_layout, memory.products.gather_stock)
    other.learn(errors.StockSourceShort({pid: {5: 0}}, {pid: 32}))
    other.takes(room=5)


def test_a_gathering_that_fails_on_shards_another_order_gathered_re_reads_and_plans(memory):
    """Two orders gather the same product at once: the second's gathering fails, and the stock, all still
    there but in another shard, is found by a fresh read instead of answering OUT_OF_STOCK."""
    pid = hot(memory, stock=64, shards=32)  # 2 a shard
    reservation = StockReservation({pid: 40}, {pid: 32}, memory.products.stock_layout, memory.products.gather_stock)
    reservation.learn(errors.StockSourceShort({pid: {5: 0}}, {pid: 32}))  # its first attempt failed: read
    gathered_elsewhere(memory, pid, 40)
    layout = memory.products.stock_layout(pid)
    assert layout.total == 64
    assert max(layout.shards) == 40

    plan = reservation.takes(room=5)

    assert sum(take.quantity for take in plan[pid]) == 40
    now = memory.products.stock_layout(pid)
    assert all(take.quantity <= held(now, take.source) for take in plan[pid])
    assert now.total == 64
    assert reservation.failures == 2  # the first attempt and the failed gathering


def test_out_of_stock_is_never_answered_from_a_corrected_layout_without_a_fresh_read(memory):
    """The placement failed on shards another order had just gathered from: what it learnt, laid over its
    older read, adds up to less than the product holds."""
    pid = hot(memory, stock=64, shards=32)
    reservation = StockReservation({pid: 40}, {pid: 32}, memory.products.stock_layout, memory.products.gather_stock)
    reservation.learn(errors.StockSourceShort({pid: {5: 0}}, {pid: 32}))
    gathered_elsewhere(memory, pid, 40)
    emptied = {shard: 0 for shard, stock in enumerate(memory.products.stock_layout(pid).shards) if not stock}
    reservation.learn(errors.StockSourceShort({pid: emptied}, {pid: 32}))
    assert reservation.known[pid].total < 40  # the corrected belief

    plan = reservation.takes(room=5)

    assert sum(take.quantity for take in plan[pid]) == 40
    assert memory.products.stock_layout(pid).total == 64


def test_out_of_stock_after_a_fresh_read_that_holds_too_little(memory):
    pid = hot(memory, stock=64, shards=32)
    reservation = StockReservation({pid: 65}, {pid: 32}, memory.products.stock_layout, memory.products.gather_stock)
    reservation.learn(errors.StockSourceShort({pid: {5: 0}}, {pid: 32}))
    with pytest.raises(errors.OutOfStock) as refused:
        reservation.takes(room=5)
    assert type(refused.value) is errors.OutOfStock


def test_gathering_tokens_are_distinct_and_fit_dynamodb():
    tokens = []

    def gather(moves, token):
        tokens.append(token)

    layouts = {pid: StockLayout(pid, 0, (3,) * 32, 100) for pid in ("a", "b")}
    reservations = [
        StockReservation(dict.fromkeys(layouts, 90), dict.fromkeys(layouts, 32), lambda pid, **_: layouts[pid], gather)
        for _ in range(2)
    ]
    for reservation in reservations:
        reservation.learn(errors.StockSourceShort({pid: {0: 0} for pid in layouts}, {}))
        reservation.takes(room=3)
    assert len(tokens) == 2
    assert len(set(tokens)) == len(tokens)
    assert all(1 <= len(token) <= 36 for token in tokens)
