"""Migrations without a table: the rate limiter's accounting on an injected clock, migrations 0001's and
0002's pure plans (and the switch settings 0002 runs under), and the one Scan of the code living in the
migrations' repository."""

from __future__ import annotations

import ast
import pathlib
import random

import pytest

from shop import keys
from shop.config import ConfigurationError, StatusShardSwitch
from shop.migrations import MIGRATIONS, migration
from shop.migrations.changes import Put, Update
from shop.migrations.m0001_list_v1_products import ListVersion1Products, is_version_1_product
from shop.migrations.m0002_status_shards import MoveStatusShards
from shop.migrations.rate import TokenBucket

SHOP = pathlib.Path(__file__).resolve().parents[2] / "layers" / "shared" / "python" / "shop"


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0
        self.slept = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.slept += seconds


def test_the_bucket_never_lets_consumption_run_ahead_of_the_rate():
    clock = FakeClock()
    bucket = TokenBucket(50, burst=50, clock=clock, sleep=clock.sleep)
    rng = random.Random(28)
    worst_overshoot = 0.0
    for _ in range(2000):
        estimate = rng.choice([1, 4, 12])
        consumed = estimate * rng.choice([0.5, 1.0, 1.0, 2.0])  # items over 1 KB cost more than estimated
        worst_overshoot = max(worst_overshoot, consumed - estimate)
        bucket.acquire(estimate)
        clock.now += 0.001  # the write itself
        bucket.settle(estimate, consumed)
        assert bucket.consumed <= bucket.capacity + bucket.rate * bucket.elapsed() + worst_overshoot
    # ...and does not hold it back either: over a long run the rate is what was asked for
    assert bucket.consumed / bucket.elapsed() == pytest.approx(50, rel=0.05)


def test_a_write_larger_than_the_bucket_waits_for_a_full_bucket_and_leaves_a_debt():
    clock = FakeClock()
    bucket = TokenBucket(10, clock=clock, sleep=clock.sleep)
    bucket.acquire(30)
    bucket.settle(30, 30)
    assert clock.slept == 0  # the bucket was full
    bucket.acquire(1)
    assert clock.slept == pytest.approx(2.1)  # the 20 units of debt and the 1 unit wanted, at 10/s


def test_the_rate_must_be_positive():
    with pytest.raises(ValueError, match="positive"):
        TokenBucket(0)


def v1_item(category: str = "beans", **extra):
    return {
        **keys.product_key("p1"),
        **keys.product_category_gsi_v1(category, "Dark Roast", "p1"),
        "entity": "PRODUCT",
        "product_id": "p1",
        "name": "Dark Roast",
        "category": category,
        "price_cents": 1250,
        "stock": 4,
        "created_at": "2025-01-02T00:00:00Z",
        "updated_at": "2025-01-03T00:00:00Z",
        **extra,
    }


def test_a_version_1_product_is_filed_under_its_category_and_ancestors_in_one_conditional_change():
    change = ListVersion1Products().plan(v1_item(), {"paths": {"beans": "/coffee/beans"}})
    assert change is not None
    update, *puts = change.operations
    assert isinstance(update, Update)
    assert update.key == keys.product_key("p1")
    assert "REMOVE GSI1PK, GSI1SK" in update.expression
    assert "attribute_exists(GSI1PK)" in str(update.condition)
    assert "updated_at = :seen" in str(update.condition)
    assert update.values["scopes"] == ["coffee", "beans"]
    assert update.values["version"] == 1
    assert all(isinstance(put, Put) for put in puts)
    indexed = sorted(put.item[keys.GSI1PK] for put in puts if isinstance(put, Put))
    assert indexed == sorted(
        [
            keys.listing_pk(keys.ALL_PRODUCTS, keys.BY_NEWEST),
            *(
                keys.listing_pk(scope, order)
                for scope in ("coffee", "beans")
                for order in (keys.BY_NAME, keys.BY_PRICE)
            ),
        ]
    )
    assert change.estimated_units == 2 * 6


def test_a_category_the_tree_does_not_hold_lists_the_product_under_all_only():
    change = ListVersion1Products().plan(v1_item("Old Free Text"), {"paths": {}})
    assert change is not None
    update, put = change.operations
    assert isinstance(update, Update)
    assert update.values["scopes"] == []
    assert isinstance(put, Put)
    assert put.item[keys.GSI1PK] == keys.listing_pk(keys.ALL_PRODUCTS, keys.BY_NEWEST)


@pytest.mark.parametrize(
    "item",
    [
        {**keys.product_key("p2"), "entity": "PRODUCT", "listing_version": 0},  # version 2's product
        {**keys.listing_entry_key("p2", "ALL", "NEWEST", "x"), "entity": "PRODUCT_LISTING"},
        {**keys.order_key("o1"), "entity": "ORDER"},
        {**keys.migration_key("x"), "entity": "MIGRATION"},
    ],
    ids=["v2-product", "listing-entry", "order", "migration-record"],
)
def test_anything_else_is_not_migration_1s(item):
    assert not is_version_1_product(item)
    assert ListVersion1Products().plan(item, {"paths": {}}) is None


def test_migrations_are_named_by_number_and_found_by_name():
    assert all(name[:4].isdigit() and name[4] == "-" for name in MIGRATIONS)
    assert migration("0001-list-version-1-products").name == "0001-list-version-1-products"
    with pytest.raises(KeyError, match="known"):
        migration("9999-nothing")


def test_the_only_scan_of_the_code_is_the_migrations_repository():
    scanning = []
    for path in sorted(SHOP.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr == "scan":
                scanning.append(path.relative_to(SHOP).as_posix())
    assert scanning == ["repository/migrations.py"]


def _order_item(order_id: str, status: str = "CONFIRMED", shards: int = 4, version: int = 2) -> dict:
    return {
        **keys.order_key(order_id),
        **keys.order_status_gsi(status, order_id, "2026-11-27T00:00:00.000000Z", shards),
        "entity": "ORDER",
        "order_id": order_id,
        "status": status,
        "version": version,
    }


def test_migration_2_moves_an_orders_index_entry_to_the_next_count_if_still_as_scanned():
    moving = next(f"o{n}" for n in range(100) if keys.status_shard(f"o{n}", 4) != keys.status_shard(f"o{n}", 16))
    item = _order_item(moving)
    change = MoveStatusShards(StatusShardSwitch(4, 16, writers_on_next=True)).plan(item, {"next": 16})
    assert change is not None
    (update,) = change.operations
    assert isinstance(update, Update)
    assert update.key == keys.order_key(moving)
    assert update.values == {
        "target": keys.order_status_pk("CONFIRMED", keys.status_shard(moving, 16)),
        "seen": item[keys.GSI1PK],
        "version": 2,
    }
    assert update.condition == "GSI1PK = :seen AND version = :version"  # a status change meanwhile wins
    assert change.estimated_units == 3  # the item, and its index entry deleted and put
    assert "GSI1SK" not in update.expression  # the sort key, a reader's cursor, stays


def test_migration_2_leaves_orders_already_under_the_next_count_and_everything_else():
    staying = next(f"o{n}" for n in range(100) if keys.status_shard(f"o{n}", 4) == keys.status_shard(f"o{n}", 16))
    plan = MoveStatusShards().plan
    assert plan(_order_item(staying), {"next": 16}) is None
    assert plan(_order_item("o1", shards=16), {"next": 16}) is None
    history = {**keys.order_history_key("o1", 2), "order_id": "o1", "status": "CONFIRMED", "version": 2}
    assert plan(history, {"next": 16}) is None
    assert plan({**keys.customer_order_key("c", "o1"), "order_id": "o1", "status": "PENDING"}, {"next": 16}) is None


@pytest.mark.parametrize("switch", [StatusShardSwitch(4), StatusShardSwitch(4, 16)])
def test_migration_2_runs_only_once_writers_are_on_the_next_count(switch):
    with pytest.raises(ConfigurationError, match="STATUS_SHARDS_WRITERS=next"):
        MoveStatusShards(switch).context([], None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"STATUS_SHARDS_NEXT": "6"}, "one must divide the other"),
        ({"STATUS_SHARDS_NEXT": "4"}, "must differ"),
        ({"STATUS_SHARDS_NEXT": "0"}, r"STATUS_SHARDS_NEXT must be 1\.\.64"),
        ({"STATUS_SHARDS_WRITERS": "next"}, "needs STATUS_SHARDS_NEXT"),
        ({"STATUS_SHARDS_NEXT": "16", "STATUS_SHARDS_WRITERS": "all"}, "must be current or next"),
    ],
)
def test_a_switch_setting_that_could_hide_orders_is_a_configuration_error(monkeypatch, env, message):
    from shop.config import settings

    monkeypatch.setenv("STATUS_SHARDS", "4")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ConfigurationError, match=message):
        settings()


def test_the_switch_settings_say_who_writes_which_count(monkeypatch):
    from shop.config import settings

    monkeypatch.setenv("STATUS_SHARDS", "4")
    assert settings().status_switch == StatusShardSwitch(4)
    monkeypatch.setenv("STATUS_SHARDS_NEXT", "16")
    settings.cache_clear()
    assert settings().status_switch.writes == 4  # dual read on, writers still on the current count
    monkeypatch.setenv("STATUS_SHARDS_WRITERS", "next")
    settings.cache_clear()
    assert settings().status_switch == StatusShardSwitch(4, 16, writers_on_next=True)
    assert settings().status_switch.writes == 16
