"""A category holding 5,000 products moves under another parent, on DynamoDB Local, its rewrite driven
by the table's real stream records while readers page through the listings: no page walk ever shows
a product twice, the moved subtree's own listing never loses one, and afterwards every product is
listed once under the new path and no longer under the old ancestors.

`make test` runs it at 600 products moved in steps of 25 (CATEGORY_MOVE_STEP_PRODUCTS): 24 steps, each
its own transactions, while every walk reads 6 pages of 100, so pages and steps interleave as at full
size. `make scale` runs it at 5,000 products in the deployed steps of 100 (CATEGORY_MOVE_PRODUCTS=5000,
CATEGORY_MOVE_TEST_STEP=100)."""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from shop import clock, ids, keys, wiring
from shop.models import Product
from shop.models.categories import listing_scopes
from shop.repository.listings import entry_items
from shop.repository.products import product_item
from shop.repository.store import to_item
from shop.services.catalog import CatalogService
from tests.repository.test_catalogue_tree import drive_moves
from tests.support.factories import ADMIN
from tests.support.streams import StreamReader

pytestmark = pytest.mark.integration

PRODUCTS = int(os.environ.get("CATEGORY_MOVE_PRODUCTS", "600"))
ALSO_IN_CUPS = PRODUCTS // 10  # these stay under coffee through cups after the move
# products one step of the move re-files: fewer than the deployed 100 so that the small run takes many steps
STEP = os.environ.get("CATEGORY_MOVE_TEST_STEP", "25")


def bulk_catalogue(store: Any, paths: dict[str, str]) -> list[str]:
    """PRODUCTS products under espresso or filter (every tenth also in cups), written as the repository
    writes them (product item and listing entries), in BatchWriteItems from a few threads."""
    now = clock.iso_now()
    items: list[dict[str, Any]] = []
    product_ids = []
    for index in range(PRODUCTS):
        categories = ["espresso" if index % 2 else "filter"] + (["cups"] if index < ALSO_IN_CUPS else [])
        product = Product(
            product_id=ids.new_id(),
            name=f"Product {index:05d}",
            categories=categories,
            price_cents=100 + index,
            stock=10,
            created_at=now,
            updated_at=now,
        )
        scopes = listing_scopes([paths[slug] for slug in categories])
        items += [product_item(product, scopes), *entry_items(product, scopes)]
        product_ids.append(product.product_id)

    def write(chunk: list[dict[str, Any]]) -> None:
        request = {store.table_name: [{"PutRequest": {"Item": to_item(item)}} for item in chunk]}
        while request:
            request = store.client.batch_write_item(RequestItems=request).get("UnprocessedItems") or {}

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(write, [items[i : i + 25] for i in range(0, len(items), 25)]))
    return product_ids


def walk(catalog: CatalogService, category: str | None) -> list[str]:
    seen: list[str] = []
    token = None
    while True:
        if category is None:
            page = catalog.list_all(limit=100, next_token=token)
        else:
            page = catalog.list_by_category(category, limit=100, next_token=token)
        seen += [item.product_id for item in page.items]
        token = page.next_token
        if token is None:
            return seen


def test_moving_a_category_of_many_products_lists_each_once_throughout(local_store, monkeypatch):
    monkeypatch.setenv("CATEGORY_MOVE_STEP_PRODUCTS", STEP)
    store = local_store
    tree = wiring.category_service(store.table)
    for slug, parent in [("coffee", None), ("beans", "coffee"), ("espresso", "beans"), ("filter", "beans")]:
        tree.create(ADMIN, slug=slug, name=slug.title(), parent=parent)
    tree.create(ADMIN, slug="cups", name="Cups", parent="coffee")
    tree.create(ADMIN, slug="tea", name="Tea", parent=None)
    paths = {slug: tree.detail(slug).path for slug in ("espresso", "filter", "cups")}
    everything = set(bulk_catalogue(store, paths))
    in_cups = set(walk(wiring.catalog_service(store.table), "cups"))
    assert len(in_cups) == ALSO_IN_CUPS
    reader = StreamReader(store)
    reader.skip_to_now()  # what seeding wrote is not the move's

    assert tree.update(ADMIN, "beans", {"parent": "tea"}).moving
    done = threading.Event()
    failure: list[BaseException] = []

    def run_move() -> None:
        try:
            drive_moves(store, reader)
        except BaseException as error:
            failure.append(error)
        finally:
            done.set()

    mover = threading.Thread(target=run_move)
    mover.start()
    catalog = wiring.catalog_service(store.table)
    walks = {"tea": 0, "coffee": 0, "beans": 0}
    try:
        while not done.is_set():
            for category in walks:
                seen = walk(catalog, category)
                assert len(seen) == len(set(seen)), f"{category}: a product listed twice during the move"
                assert set(seen) <= everything
                if category == "beans":
                    assert set(seen) == everything  # the moved subtree's own listing never loses one
                if category == "coffee":
                    assert in_cups <= set(seen)  # still in coffee through cups
                walks[category] += 1
            # The mover clears the flag just before it returns: a cleared flag means the mover is finishing.
            assert tree.detail("beans").moving or done.wait(timeout=30)
    finally:
        mover.join()
    assert not failure, failure
    assert min(walks.values()) >= 1

    assert not tree.detail("beans").moving
    assert tree.detail("espresso").path == "/tea/beans/espresso"
    for category, expected in [("tea", everything), ("beans", everything), ("coffee", in_cups), ("cups", in_cups)]:
        seen = walk(catalog, category)
        assert len(seen) == len(set(seen)) == len(expected), category
        assert set(seen) == expected, category
    assert len(walk(catalog, None)) == PRODUCTS
    print(f"walks during the move: {walks}")


def test_listing_keys_match_the_repository(local_store):
    """The bulk writer above writes what the repository writes: one product through the service."""
    tree = wiring.category_service(local_store.table)
    tree.create(ADMIN, slug="coffee", name="Coffee", parent=None)
    pid = (
        wiring.catalog_service(local_store.table)
        .create(ADMIN, name="X", categories=["coffee"], price_cents=1, description=None, stock=1)
        .product_id
    )
    entries = local_store.client.query(
        TableName=local_store.table_name,
        KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues={":pk": {"S": keys.product_pk(pid)}},
    )["Items"]
    assert sorted(e["SK"]["S"] for e in entries) == sorted(
        ["PRODUCT", "LISTING#ALL#NEWEST", "LISTING#coffee#NAME", "LISTING#coffee#PRICE"]
    )
