"""The catalogue tree and its listings on moto and DynamoDB Local: categories, products in several of
them, subtree and browse-all listings (one Query a page, every item read returned), archive, renames
and moves (the move's rewrite driven by the table's real stream records)."""

from __future__ import annotations

from typing import Any

import pytest

from shop import errors, keys, wiring
from shop.models.products import ProductStatus
from shop.repository.store import Table, to_item
from shop.repository.stream_records import StreamRecord
from shop.services.catalog import CatalogService
from shop.services.categories import CategoryService
from tests.support.calls import counting
from tests.support.factories import ADMIN, ALICE
from tests.support.reads import reading
from tests.support.streams import StreamReader, only


def tree(table: Any) -> CategoryService:
    service = wiring.category_service(table)
    for slug, name, parent in [
        ("coffee", "Coffee", None),
        ("beans", "Beans", "coffee"),
        ("espresso", "Espresso", "beans"),
        ("filter", "Filter", "beans"),
        ("cups", "Cups", "coffee"),
        ("tea", "Tea", None),
    ]:
        service.create(ADMIN, slug=slug, name=name, parent=parent)
    return service


def add(table: Any, name: str, categories: list[str], price_cents: int = 1000) -> str:
    return (
        wiring.catalog_service(table)
        .create(ADMIN, name=name, categories=categories, price_cents=price_cents, description=None, stock=3)
        .product_id
    )


def names(page: Any) -> list[str]:
    return [item.name for item in page.items]


def walk(service: CatalogService, category: str | None, sort: str = "name", limit: int = 2) -> list[str]:
    """Every page of a listing: each one Query that returns every item it read."""
    seen: list[str] = []
    token = None
    while True:
        with reading(service.products.table.client) as reads:  # type: ignore[attr-defined]
            if category is None:
                page = service.list_all(limit=limit, next_token=token)
            else:
                page = service.list_by_category(category, sort=sort, limit=limit, next_token=token)
        if page.items or token:
            assert reads.operations == ["Query"]
            assert reads.items_read == len(page.items)
        seen += names(page)
        token = page.next_token
        if token is None:
            return seen


def move_under_way(table: Table) -> bool:
    """Whether the move item is still there (the move's job removes it at its last step)."""
    key = to_item(keys.category_move_key())
    return "Item" in table.client.get_item(TableName=table.name, Key=key, ConsistentRead=True)


def drive_moves(store: Any, reader: StreamReader) -> int:
    """Hand the move item's stream records to the stream processor's rules until the move is done."""
    service = wiring.order_events_service(store.table)
    steps = 0
    for _ in range(10_000):
        records = only(reader.read(), entity=keys.CATEGORY_MOVE_PK)
        for record in records:
            if record["eventName"] in ("INSERT", "MODIFY"):
                steps += service.handle(StreamRecord.from_lambda(record)).action.value == "category_move_step"
        if not records and not move_under_way(store.table):
            return steps
    raise AssertionError("the move never finished")


@pytest.mark.dynamodb_semantics
def test_a_tree_with_breadcrumbs_children_and_its_limits(store):
    service = tree(store.table)
    with counting(store.client) as calls:
        detail = service.detail("espresso")
    assert calls.operations == ["GetItem", "BatchGetItem", "Query"]
    assert (detail.path, detail.depth, detail.parent) == ("/coffee/beans/espresso", 3, "beans")
    assert [(b.slug, b.name) for b in detail.breadcrumbs] == [
        ("coffee", "Coffee"),
        ("beans", "Beans"),
        ("espresso", "Espresso"),
    ]
    assert [c.slug for c in service.detail("beans").children] == ["espresso", "filter"]
    assert [c.slug for c in service.top_level(limit=10, next_token=None).items] == ["coffee", "tea"]
    with counting(store.client) as calls:
        assert service.detail("tea").breadcrumbs[0].name == "Tea"
    assert calls.operations == ["GetItem", "Query"]  # a top-level category has no ancestors to read
    with pytest.raises(errors.CategoryExists):
        service.create(ADMIN, slug="beans", name="Again", parent=None)
    with pytest.raises(errors.CategoryNotFound):
        service.create(ADMIN, slug="x", name="X", parent="nowhere")
    with pytest.raises(errors.Forbidden):
        service.create(ALICE, slug="y", name="Y", parent=None)
    service.create(ADMIN, slug="d4", name="D4", parent="espresso")
    service.create(ADMIN, slug="d5", name="D5", parent="d4")
    with pytest.raises(errors.CategoryTooDeep):
        service.create(ADMIN, slug="d6", name="D6", parent="d5")
    with pytest.raises(errors.CategoryNotFound):
        service.detail("nowhere")


@pytest.mark.dynamodb_semantics
def test_a_subtree_lists_each_product_once_by_name_and_price(store):
    tree(store.table)
    add(store.table, "Ristretto", ["espresso"], 900)
    add(store.table, "Both", ["espresso", "filter"], 1500)  # under beans and coffee twice: listed once
    add(store.table, "Mug", ["cups", "espresso"], 500)
    add(store.table, "Green", ["tea"], 700)
    catalog = wiring.catalog_service(store.table)
    assert walk(catalog, "coffee") == ["Both", "Mug", "Ristretto"]
    assert walk(catalog, "beans", "price_asc") == ["Mug", "Ristretto", "Both"]
    assert walk(catalog, "coffee", "price_desc") == ["Both", "Ristretto", "Mug"]
    assert walk(catalog, "filter") == ["Both"]
    assert walk(catalog, None) == ["Green", "Mug", "Both", "Ristretto"]  # newest first
    with pytest.raises(errors.CategoryNotFound):
        catalog.list_by_category("nowhere", limit=5, next_token=None)
    with pytest.raises(errors.CategoryNotFound):
        add(store.table, "Ghost", ["nowhere", "tea"])


@pytest.mark.dynamodb_semantics
def test_the_product_item_is_not_indexed_and_orders_leave_listings_alone(store):
    """Issue 11: stock lives on the product item only, so a stock change writes no index entry."""
    tree(store.table)
    pid = add(store.table, "Ristretto", ["espresso"])
    item = store.client.get_item(
        TableName=store.table_name, Key={"PK": {"S": f"PRODUCT#{pid}"}, "SK": {"S": "PRODUCT"}}
    )
    assert keys.GSI1PK not in item["Item"]
    entries = store.client.query(
        TableName=store.table_name,
        KeyConditionExpression="PK = :pk AND begins_with(SK, :p)",
        ExpressionAttributeValues={":pk": {"S": f"PRODUCT#{pid}"}, ":p": {"S": "LISTING#"}},
    )["Items"]
    assert len(entries) == 1 + 2 * 3  # all products, and name and price under espresso, beans, coffee
    assert all("stock" not in entry for entry in entries)


@pytest.mark.dynamodb_semantics
def test_an_archived_product_leaves_every_listing_and_stays_readable(store):
    tree(store.table)
    kept = add(store.table, "Kept", ["espresso"])
    gone = add(store.table, "Gone", ["espresso", "tea"])
    catalog = wiring.catalog_service(store.table)
    archived = catalog.archive(ADMIN, gone)
    assert archived.status is ProductStatus.ARCHIVED
    assert catalog.archive(ADMIN, gone).status is ProductStatus.ARCHIVED  # again: the same answer
    assert catalog.get(gone).status is ProductStatus.ARCHIVED
    for category in ("coffee", "beans", "espresso"):
        assert walk(catalog, category) == ["Kept"]
    assert walk(catalog, "tea") == []
    assert [p.product_id for p in catalog.list_all(limit=10, next_token=None).items] == [kept]
    with pytest.raises(errors.ProductNotFound):
        catalog.archive(ADMIN, "ghost")
    with pytest.raises(errors.Forbidden):
        catalog.archive(ALICE, kept)


@pytest.mark.dynamodb_semantics
def test_editing_categories_refiles_the_product(store):
    tree(store.table)
    pid = add(store.table, "Mug", ["cups"], 500)
    catalog = wiring.catalog_service(store.table)
    updated = catalog.update(ADMIN, pid, {"categories": ["tea", "filter"], "price_cents": 800})
    assert (updated.category, updated.categories) == ("tea", ["tea", "filter"])
    assert walk(catalog, "cups") == []
    assert walk(catalog, "coffee", "price_asc") == walk(catalog, "tea") == ["Mug"]
    assert catalog.list_by_category("beans", limit=5, next_token=None).items[0].price_cents == 800


@pytest.mark.dynamodb_semantics
def test_a_rename_changes_breadcrumbs_without_touching_products(store):
    service = tree(store.table)
    pid = add(store.table, "Ristretto", ["espresso"])
    before = wiring.catalog_service(store.table).get(pid)
    with counting(store.client) as calls:
        renamed = service.update(ADMIN, "beans", {"name": "Whole beans"})
    assert calls.operations == ["GetItem", "UpdateItem"]
    assert renamed.name == "Whole beans"
    assert [b.name for b in service.detail("espresso").breadcrumbs] == ["Coffee", "Whole beans", "Espresso"]
    assert [c.name for c in service.detail("coffee").children] == ["Cups", "Whole beans"]
    assert wiring.catalog_service(store.table).get(pid) == before


@pytest.mark.dynamodb_semantics
def test_a_move_into_its_own_subtree_is_refused(store):
    service = tree(store.table)
    with pytest.raises(errors.InvalidMove):
        service.update(ADMIN, "coffee", {"parent": "espresso"})
    with pytest.raises(errors.InvalidMove):
        service.update(ADMIN, "beans", {"parent": "beans"})
    service.create(ADMIN, slug="deep4", name="Deep 4", parent="espresso")
    service.create(ADMIN, slug="t2", name="T2", parent="tea")
    service.create(ADMIN, slug="t3", name="T3", parent="t2")
    with pytest.raises(errors.CategoryTooDeep):  # beans' subtree is 3 deep: under t3 it would reach 6
        service.update(ADMIN, "beans", {"parent": "t3"})


@pytest.mark.dynamodb_semantics
def test_a_move_moves_the_subtree_and_its_products(store):
    service = tree(store.table)
    ristretto = add(store.table, "Ristretto", ["espresso"])
    add(store.table, "Mug", ["cups", "espresso"])  # stays under coffee through cups
    reader = StreamReader(store)
    reader.read()
    moved = service.update(ADMIN, "beans", {"parent": "tea"})
    assert (moved.path, moved.depth, moved.moving) == ("/tea/beans", 2, True)
    assert service.detail("beans").moving
    with pytest.raises(errors.MoveInProgress):
        service.update(ADMIN, "cups", {"parent": "tea"})
    with pytest.raises(errors.MoveInProgress):
        service.create(ADMIN, slug="new", name="New", parent="tea")
    assert drive_moves(store, reader) >= 2
    detail = service.detail("espresso")
    assert (detail.path, detail.depth, detail.moving) == ("/tea/beans/espresso", 3, False)
    assert [b.slug for b in detail.breadcrumbs] == ["tea", "beans", "espresso"]
    assert not service.detail("beans").moving
    assert [c.slug for c in service.detail("tea").children] == ["beans"]
    assert [c.slug for c in service.detail("coffee").children] == ["cups"]
    catalog = wiring.catalog_service(store.table)
    assert walk(catalog, "tea") == ["Mug", "Ristretto"]
    assert walk(catalog, "coffee") == ["Mug"]
    assert walk(catalog, "beans") == ["Mug", "Ristretto"]
    # a product filed after the move lands under the new ancestors
    add(store.table, "Lungo", ["espresso"])
    assert walk(catalog, "tea") == ["Lungo", "Mug", "Ristretto"]
    assert catalog.get(ristretto).categories == ["espresso"]
    # replaying every record of the move changes nothing
    replay = wiring.order_events_service(store.table)
    for record in only(StreamReader(store).read(), entity=keys.CATEGORY_MOVE_PK):
        if record["eventName"] != "REMOVE":
            replay.handle(StreamRecord.from_lambda(record))
    assert walk(catalog, "tea") == ["Lungo", "Mug", "Ristretto"]
    assert walk(catalog, "coffee") == ["Mug"]
    # and back to the top level
    service.update(ADMIN, "beans", {"parent": None})
    drive_moves(store, reader)
    assert service.detail("espresso").path == "/beans/espresso"
    assert walk(catalog, "tea") == []
    assert [c.slug for c in service.top_level(limit=10, next_token=None).items] == ["beans", "coffee", "tea"]


@pytest.mark.dynamodb_semantics
def test_an_archived_product_cannot_be_ordered_or_carted_and_past_orders_keep_it(store):
    from shop.services.orders import RequestedLine
    from tests.support.factories import ADDRESS

    tree(store.table)
    pid = add(store.table, "Ristretto", ["espresso"], 900)
    orders, sessions = wiring.order_service(store.table), wiring.session_service(store.table)
    placed = orders.place(ALICE, address=ADDRESS, lines=[RequestedLine(pid, 1)])
    session = sessions.create()
    sessions.set_quantity(session.session_id, pid, 2)
    wiring.catalog_service(store.table).archive(ADMIN, pid)
    with pytest.raises(errors.ProductUnavailable):
        orders.place(ALICE, address=ADDRESS, lines=[RequestedLine(pid, 1)])
    with pytest.raises(errors.ProductUnavailable):
        sessions.set_quantity(session.session_id, pid, 3)
    cart = sessions.get(session.session_id)
    assert [(line.product_id, line.unavailable) for line in cart.cart] == [(pid, True)]
    assert cart.subtotal_cents == 0
    with pytest.raises(errors.ProductUnavailable):  # checkout of that cart: refused in the transaction
        orders.place(ALICE, address=ADDRESS, session_id=session.session_id)
    kept = orders.get(ALICE, placed.order_id)
    assert [(line.product_id, line.name, line.unit_price_cents) for line in kept.lines] == [(pid, "Ristretto", 900)]
