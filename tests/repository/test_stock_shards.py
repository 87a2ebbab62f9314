"""Flash-sale stock shards on moto and DynamoDB Local: spreading, placement with fallback, restock, reads."""

from __future__ import annotations

import pytest

from shop import errors, keys, wiring
from shop.models import OrderStatus
from shop.models.stock import StockLayout
from shop.repository import ProductRepository
from shop.repository.store import from_item, to_item
from shop.services import stock as stock_rules
from shop.services.orders import RequestedLine
from tests.support.calls import counting
from tests.support.factories import ADDRESS, ADMIN, ALICE, BOB, product

# Reads no stream record: its tables have none (tests/conftest.py::local_store; docs/testing.md, "Time").
pytestmark = pytest.mark.table_without_stream


def hot_product(table, *, stock: int, shards: int, price_cents: int = 1000) -> str:
    pid = product(table, stock=stock, price_cents=price_cents)
    wiring.catalog_service(table).set_stock_shards(ADMIN, pid, shards)
    return pid


def layout(table, pid: str) -> StockLayout:
    return ProductRepository(table).stock_layout(pid)


def place(table, actor=ALICE, **lines):
    return wiring.order_service(table).place(
        actor, address=ADDRESS, lines=[RequestedLine(pid, qty) for pid, qty in lines.items()]
    )


def always_shard(monkeypatch, shard: int) -> None:
    """The blind first pick of a shard, made deterministic."""
    monkeypatch.setattr(stock_rules.random, "randrange", lambda _count: shard)


@pytest.mark.dynamodb_semantics
def test_marking_hot_spreads_the_stock_evenly_and_repeating_it_changes_nothing(store):
    pid = product(store.table, stock=50)
    with counting(store.client) as calls:
        spread = wiring.catalog_service(store.table).set_stock_shards(ADMIN, pid, 8)
    assert spread.shards == (7, 7, 6, 6, 6, 6, 6, 6)
    assert spread.main == 0
    # One consistent read (the product says it has no shards yet), one transaction.
    assert calls.operations == ["BatchGetItem", "TransactWriteItems"]
    assert layout(store.table, pid) == spread

    with counting(store.client) as calls:
        again = wiring.catalog_service(store.table).set_stock_shards(ADMIN, pid, 8)
    assert again == spread
    assert calls.operations == ["BatchGetItem", "BatchGetItem"]  # the product, then its 8 shards; no write

    product_read = wiring.catalog_service(store.table).get(pid)
    assert product_read.stock == 50
    assert product_read.stock_shards == 8


@pytest.mark.dynamodb_semantics
def test_shards_are_their_own_partition_keys_outside_the_index(store):
    pid = hot_product(store.table, stock=10, shards=4)
    for shard in range(4):
        item = store.client.get_item(TableName=store.table_name, Key=to_item(keys.stock_shard_key(pid, shard)))["Item"]
        plain = from_item(item)
        assert plain["PK"] == f"STOCK#{pid}#{shard:02d}"
        assert keys.GSI1PK not in plain
        assert plain["price_cents"] == 1000
    product_item = from_item(
        store.client.get_item(TableName=store.table_name, Key=to_item(keys.product_key(pid)))["Item"]
    )
    assert product_item["stock"] == 0
    assert product_item["stock_shards"] == 4


@pytest.mark.dynamodb_semantics
def test_reading_a_hot_product_sums_its_shards_in_one_more_call(store):
    pid = hot_product(store.table, stock=10, shards=4)
    with counting(store.client) as calls:
        read = wiring.catalog_service(store.table).get(pid)
    assert read.stock == 10
    assert calls.operations == ["GetItem", "BatchGetItem"]


@pytest.mark.dynamodb_semantics
def test_an_order_takes_from_one_random_shard_without_reading_the_shards(store, monkeypatch):
    pid = hot_product(store.table, stock=8, shards=4)
    always_shard(monkeypatch, 2)
    with counting(store.client) as calls:
        order = place(store.table, **{pid: 2})
    assert calls.operations == ["BatchGetItem", "GetItem", "TransactWriteItems"]  # as for any product
    assert order.stock_taken == {pid: {"02": 2}}
    assert layout(store.table, pid).shards == (2, 2, 0, 2)
    assert "stock_taken" not in order.model_dump()  # recorded on the item, never shown


@pytest.mark.dynamodb_semantics
def test_a_customer_whose_shard_is_empty_still_gets_the_order(store, monkeypatch):
    pid = hot_product(store.table, stock=4, shards=4)
    always_shard(monkeypatch, 0)
    place(store.table, **{pid: 1})  # shard 0 is now empty, the others hold 1 each
    assert layout(store.table, pid).shards == (0, 1, 1, 1)

    with counting(store.client) as calls:
        order = place(store.table, BOB, **{pid: 1})
    # The blind try on shard 0 fails; one consistent read of the stock; the retry on a shard that has it.
    assert calls.operations == ["BatchGetItem", "GetItem", "TransactWriteItems", "BatchGetItem", "TransactWriteItems"]
    assert order.status is OrderStatus.PENDING
    [shard] = order.stock_taken[pid]
    assert shard in {"01", "02", "03"}
    assert layout(store.table, pid).total == 2


@pytest.mark.dynamodb_semantics
def test_a_line_bigger_than_any_shard_is_split_over_the_shards(store, monkeypatch):
    pid = hot_product(store.table, stock=6, shards=3)  # 2, 2, 2
    always_shard(monkeypatch, 1)
    order = place(store.table, **{pid: 5})
    assert sum(order.stock_taken[pid].values()) == 5
    assert layout(store.table, pid).total == 1
    assert wiring.order_service(store.table).get(ALICE, order.order_id).lines[0].quantity == 5


@pytest.mark.dynamodb_semantics
def test_out_of_stock_only_when_all_shards_together_hold_too_little(store, monkeypatch):
    pid = hot_product(store.table, stock=3, shards=3)
    always_shard(monkeypatch, 0)
    with pytest.raises(errors.OutOfStock) as raised:
        place(store.table, **{pid: 4})
    assert type(raised.value) is errors.OutOfStock
    assert raised.value.product_ids == [pid]
    assert layout(store.table, pid).shards == (1, 1, 1)


@pytest.mark.dynamodb_semantics
def test_cancel_returns_the_stock_to_the_shards_it_came_from(store, monkeypatch):
    pid = hot_product(store.table, stock=6, shards=3)
    always_shard(monkeypatch, 1)
    order = place(store.table, **{pid: 2})
    assert layout(store.table, pid).shards == (2, 0, 2)
    cancelled = wiring.order_service(store.table).cancel(ALICE, order.order_id)
    assert cancelled.status is OrderStatus.CANCELLED
    assert layout(store.table, pid).shards == (2, 2, 2)


@pytest.mark.dynamodb_semantics
def test_cancel_after_the_shard_is_gone_returns_the_stock_to_the_product_item(store, monkeypatch):
    pid = hot_product(store.table, stock=6, shards=3)
    always_shard(monkeypatch, 2)
    order = place(store.table, **{pid: 1})
    wiring.catalog_service(store.table).set_stock_shards(ADMIN, pid, 2)  # shard 2 is deleted
    wiring.order_service(store.table).cancel(ALICE, order.order_id)
    after = layout(store.table, pid)
    assert after.shards == (3, 2)
    assert after.main == 1
    assert wiring.catalog_service(store.table).get(pid).stock == 6


@pytest.mark.dynamodb_semantics
def test_unmarking_moves_every_unit_back_onto_the_product_item(store, monkeypatch):
    pid = hot_product(store.table, stock=9, shards=3)
    always_shard(monkeypatch, 0)
    place(store.table, **{pid: 2})
    back = wiring.catalog_service(store.table).set_stock_shards(ADMIN, pid, 1)
    assert back == StockLayout(pid, 7, (), 1000)
    assert (
        store.client.get_item(TableName=store.table_name, Key=to_item(keys.stock_shard_key(pid, 0))).get("Item") is None
    )
    read = wiring.catalog_service(store.table).get(pid)
    assert (read.stock, read.stock_shards) == (7, 1)
    order = place(store.table, BOB, **{pid: 7})
    assert order.stock_taken == {}
    assert wiring.catalog_service(store.table).get(pid).stock == 0


@pytest.mark.dynamodb_semantics
def test_adjusted_stock_on_the_product_item_is_sold_and_spread_again(store, monkeypatch):
    pid = hot_product(store.table, stock=2, shards=2)  # 1, 1
    wiring.catalog_service(store.table).adjust_stock(ADMIN, pid, 3)  # onto the product item
    assert wiring.catalog_service(store.table).get(pid).stock == 5
    always_shard(monkeypatch, 0)
    order = place(store.table, **{pid: 3})  # no shard holds 3: the product item does
    assert order.stock_taken == {}
    assert layout(store.table, pid) == StockLayout(pid, 0, (1, 1), 1000)
    wiring.catalog_service(store.table).adjust_stock(ADMIN, pid, 4)
    assert wiring.catalog_service(store.table).set_stock_shards(ADMIN, pid, 2).shards == (3, 3)


@pytest.mark.dynamodb_semantics
def test_a_new_price_reaches_the_shards_with_the_product(store, monkeypatch):
    pid = hot_product(store.table, stock=4, shards=2, price_cents=1000)
    wiring.catalog_service(store.table).update(ADMIN, pid, {"price_cents": 1500})
    assert {from_item(i)["price_cents"] for i in _shard_items(store, pid, 2)} == {1500}
    always_shard(monkeypatch, 1)
    order = place(store.table, **{pid: 1})
    assert order.total_cents == 1500


@pytest.mark.dynamodb_semantics
def test_a_price_edit_racing_a_spread_is_refused_rather_than_leaving_a_shard_at_the_old_price(store):
    pid = product(store.table, stock=4, price_cents=1000)
    stale = wiring.catalog_service(store.table).get(pid)  # read before the product became hot
    wiring.catalog_service(store.table).set_stock_shards(ADMIN, pid, 2)
    with pytest.raises(errors.Conflict):
        ProductRepository(store.table).update(
            stale, {"price_cents": 1500}, "2030-01-01T00:00:00.000000Z", stale._listed_in
        )


@pytest.mark.dynamodb_semantics
def test_session_checkout_of_a_hot_product_finds_its_shards(store, monkeypatch):
    pid = hot_product(store.table, stock=4, shards=2)
    sessions = wiring.session_service(store.table)
    session = sessions.create()
    sessions.set_quantity(session.session_id, pid, 2)
    order = wiring.order_service(store.table).place(ALICE, address=ADDRESS, session_id=session.session_id)
    assert sum(order.stock_taken[pid].values()) == 2
    assert layout(store.table, pid).total == 2


@pytest.mark.dynamodb_semantics
def test_the_next_cart_checkout_goes_to_a_shard_at_once(store, monkeypatch):
    """The first cart checkout of a hot product learns its shards from a refused attempt; the instance's next
    one takes from a shard in its first transaction."""
    pid = hot_product(store.table, stock=8, shards=2)
    service, sessions = wiring.order_service(store.table), wiring.session_service(store.table)
    for expected in (
        # the first: the session, the checkout's settings (the instance's first read of them), the transaction
        ["GetItem", "GetItem", "TransactWriteItems", "BatchGetItem", "TransactWriteItems"],
        ["GetItem", "TransactWriteItems"],  # the session, the transaction (it checks the settings kept)
    ):
        session = sessions.create()
        sessions.set_quantity(session.session_id, pid, 1)
        with counting(store.client) as calls:
            service.place(ALICE, address=ADDRESS, session_id=session.session_id)
        assert calls.operations == expected


@pytest.mark.dynamodb_semantics
def test_spreading_refuses_what_changed_since_it_was_read(store):
    pid = hot_product(store.table, stock=4, shards=2)
    seen = layout(store.table, pid)
    place(store.table, **{pid: 1})
    with pytest.raises(errors.Conflict):
        ProductRepository(store.table).spread_stock(seen, 4)
    assert layout(store.table, pid).total == 3


@pytest.mark.dynamodb_semantics
def test_an_archived_hot_product_is_sold_from_no_shard_and_not_spread_again(store, monkeypatch):
    """The archive copies the status onto the shards: a cart that still holds the product cannot take from them."""
    pid = hot_product(store.table, stock=4, shards=2)
    sessions = wiring.session_service(store.table)
    session = sessions.create()
    sessions.set_quantity(session.session_id, pid, 1)
    wiring.catalog_service(store.table).archive(ADMIN, pid)
    assert {from_item(i)["status"] for i in _shard_items(store, pid, 2)} == {"ARCHIVED"}
    always_shard(monkeypatch, 0)
    with pytest.raises(errors.ProductUnavailable):
        wiring.order_service(store.table).place(ALICE, address=ADDRESS, session_id=session.session_id)
    with pytest.raises(errors.ProductUnavailable):
        wiring.catalog_service(store.table).set_stock_shards(ADMIN, pid, 4)
    assert layout(store.table, pid).shards == (2, 2)


@pytest.mark.dynamodb_semantics
def test_a_hint_learnt_before_the_product_was_archived_still_finds_it_unavailable(store):
    """The instance's shard hint outlives the product's sale: the next checkout is refused, not sold."""
    pid = hot_product(store.table, stock=4, shards=2)
    service, sessions = wiring.order_service(store.table), wiring.session_service(store.table)
    first = sessions.create()
    sessions.set_quantity(first.session_id, pid, 1)
    service.place(ALICE, address=ADDRESS, session_id=first.session_id)  # learns the shards
    second = sessions.create()
    sessions.set_quantity(second.session_id, pid, 1)
    wiring.catalog_service(store.table).archive(ADMIN, pid)
    with pytest.raises(errors.ProductUnavailable):
        service.place(ALICE, address=ADDRESS, session_id=second.session_id)
    assert layout(store.table, pid).total == 3


def _shard_items(store, pid: str, count: int) -> list[dict]:
    return [
        store.client.get_item(TableName=store.table_name, Key=to_item(keys.stock_shard_key(pid, shard)))["Item"]
        for shard in range(count)
    ]
