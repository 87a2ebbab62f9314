"""Inputs at their limits against the store: keys that fit, and quantities that stay in bounds."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from shop import errors, limits, wiring
from shop.services.catalog import CatalogService
from shop.services.orders import RequestedLine
from tests.support.factories import ADDRESS, ADMIN, ALICE, product

# Reads no stream record: its tables have none (tests/conftest.py::local_store; docs/testing.md, "Time").
pytestmark = pytest.mark.table_without_stream

LONGEST_FOLD = "ΐ" * limits.MAX_PRODUCT_NAME_LENGTH  # 400 bytes; 1,200 case-folded


def all_pages(service: CatalogService, category: str, limit: int) -> list[str]:
    ids, token = [], None
    while True:
        page = service.list_by_category(category, limit=limit, next_token=token)
        ids += [p.product_id for p in page.items]
        token = page.next_token
        if token is None:
            return ids


@pytest.mark.dynamodb_semantics
def test_a_name_whose_fold_outgrows_a_sort_key_is_created_listed_and_renamed(store):
    service = wiring.catalog_service(store.table)
    category = "\U0010ffff" * limits.MAX_CATEGORY_LENGTH
    first = product(store.table, name=LONGEST_FOLD, category=category)
    second = product(store.table, name=LONGEST_FOLD, category=category)
    before = product(store.table, name="ΐ" * 10, category=category)
    after = product(store.table, name="Ω", category=category)
    assert service.get(first).name == LONGEST_FOLD
    ties = sorted([first, second])  # equal sort keys: then by product id
    assert all_pages(service, category, limit=1) == [before, *ties, after]
    renamed = service.update(ADMIN, after, {"name": LONGEST_FOLD})
    assert renamed.name == LONGEST_FOLD
    assert all_pages(service, category, limit=2) == [before, *sorted([first, second, after])]


@pytest.mark.dynamodb_semantics
def test_stock_never_goes_past_its_maximum(store):
    pid = product(store.table, stock=limits.MAX_STOCK - 5)
    service = wiring.catalog_service(store.table)
    assert service.adjust_stock(ADMIN, pid, 5) == limits.MAX_STOCK
    with pytest.raises(errors.StockLimitExceeded) as raised:
        service.adjust_stock(ADMIN, pid, 1)
    assert raised.value.details == {"delta": f"stock is {limits.MAX_STOCK}, at most {limits.MAX_STOCK} allowed"}
    assert service.get(pid).stock == limits.MAX_STOCK
    assert service.adjust_stock(ADMIN, pid, -limits.MAX_STOCK) == 0
    with pytest.raises(errors.StockLimitExceeded):
        service.adjust_stock(ADMIN, pid, limits.MAX_STOCK + 1)
    with pytest.raises(errors.ProductNotFound):
        service.adjust_stock(ADMIN, "missing", limits.MAX_STOCK)


@pytest.mark.integration
def test_concurrent_increases_stop_at_the_maximum_together(local_store):
    """DynamoDB Local only: moto does not apply a condition and its update atomically."""
    pid = product(local_store.table, stock=limits.MAX_STOCK - 10)
    service = wiring.catalog_service(local_store.table)

    def increase() -> bool:
        try:
            service.adjust_stock(ADMIN, pid, 5)
        except errors.StockLimitExceeded:
            return False
        return True

    with ThreadPoolExecutor(max_workers=8) as pool:
        outcomes = list(pool.map(lambda _: increase(), range(8)))
    assert outcomes.count(True) == 2
    assert service.get(pid).stock == limits.MAX_STOCK


@pytest.mark.dynamodb_semantics
def test_duplicate_order_lines_add_up_to_at_most_the_line_maximum(store):
    hammer = product(store.table, stock=500)
    nails = product(store.table, stock=500)
    service = wiring.order_service(store.table)
    half = limits.MAX_QUANTITY // 2 + 1
    lines = [
        RequestedLine(hammer, half),
        RequestedLine(nails, 1),
        RequestedLine(hammer, half),
        RequestedLine(hammer, 1),
    ]
    with pytest.raises(errors.InvalidRequest) as raised:
        service.place(ALICE, address=ADDRESS, lines=lines)
    assert list(raised.value.details) == ["lines.2.quantity"]
    assert wiring.catalog_service(store.table).get(hammer).stock == 500
    assert service.list_for_customer(ALICE, ALICE.sub, limit=10, next_token=None).items == []
    exactly = service.place(
        ALICE, address=ADDRESS, lines=[RequestedLine(hammer, half), RequestedLine(hammer, limits.MAX_QUANTITY - half)]
    )
    assert [(line.product_id, line.quantity) for line in exactly.lines] == [(hammer, limits.MAX_QUANTITY)]
