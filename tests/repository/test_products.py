from __future__ import annotations

import pytest

from shop import errors, wiring
from tests.support.calls import counting
from tests.support.factories import ADMIN, ALICE, BOB, category, product
from tests.support.faults import first_answer_lost
from tests.support.reads import reading

# Reads no stream record: its tables have none (tests/conftest.py::local_store; docs/testing.md, "Time").
pytestmark = pytest.mark.table_without_stream


@pytest.mark.dynamodb_semantics
def test_product_read_is_one_get_item(store):
    pid = product(store.table, name="Hammer", price_cents=1999, stock=3)
    service = wiring.catalog_service(store.table)
    with counting(store.client) as calls:
        fetched = service.get(pid)
    assert calls.operations == ["GetItem"]
    assert (fetched.name, fetched.price_cents, fetched.stock, fetched.rating_count) == ("Hammer", 1999, 3, 0)
    assert fetched.rating_average is None
    with pytest.raises(errors.ProductNotFound):
        service.get("missing")


@pytest.mark.dynamodb_semantics
def test_category_listing_is_by_name_and_paginates(store):
    for name in ["Pliers", "anvil", "Chisel", "bolt", "Drill"]:
        product(store.table, name=name, category="tools")
    product(store.table, name="Apple", category="food")
    service = wiring.catalog_service(store.table)
    names, token, pages = [], None, 0
    while True:
        with counting(store.client) as calls:
            page = service.list_by_category("tools", limit=2, next_token=token)
        assert calls.operations == ["Query"]
        names += [p.name for p in page.items]
        pages += 1
        token = page.next_token
        if token is None:
            break
    assert names == ["anvil", "bolt", "Chisel", "Drill", "Pliers"]
    assert pages >= 3


@pytest.mark.dynamodb_semantics
def test_tampered_or_foreign_tokens_are_rejected(store):
    for name in ["a", "b", "c"]:
        product(store.table, name=name, category="tools")
        product(store.table, name=name, category="toys")
    service = wiring.catalog_service(store.table)
    token = service.list_by_category("tools", limit=1, next_token=None).next_token
    assert token
    with pytest.raises(errors.InvalidNextToken):
        service.list_by_category("toys", limit=1, next_token=token)
    forged = token[:-2] + ("AA" if not token.endswith("AA") else "BB")
    with pytest.raises(errors.InvalidNextToken):
        service.list_by_category("tools", limit=1, next_token=forged)
    with pytest.raises(errors.InvalidNextToken):
        service.list_by_category("tools", limit=1, next_token="not-a-token")


@pytest.mark.dynamodb_semantics
def test_update_renames_and_moves_category(store):
    pid = product(store.table, name="Hammer", category="tools")
    category(store.table, "garden")
    service = wiring.catalog_service(store.table)
    updated = service.update(ADMIN, pid, {"name": "Mallet", "category": "garden", "price_cents": 500})
    assert (updated.name, updated.category, updated.price_cents) == ("Mallet", "garden", 500)
    assert service.list_by_category("tools", limit=10, next_token=None).items == []
    assert [p.name for p in service.list_by_category("garden", limit=10, next_token=None).items] == ["Mallet"]
    with pytest.raises(errors.DomainError):
        service.update(ALICE, pid, {"name": "Nope"})


@pytest.mark.dynamodb_semantics
def test_stock_adjustment_never_goes_negative(store):
    pid = product(store.table, stock=2)
    service = wiring.catalog_service(store.table)
    assert service.adjust_stock(ADMIN, pid, 5) == 7
    assert service.adjust_stock(ADMIN, pid, -7) == 0
    with pytest.raises(errors.InsufficientStock):
        service.adjust_stock(ADMIN, pid, -1)
    with pytest.raises(errors.ProductNotFound):
        service.adjust_stock(ADMIN, "missing", 1)
    assert service.get(pid).stock == 0


@pytest.mark.dynamodb_semantics
def test_stock_adjustment_whose_answer_was_lost_applies_once(store):
    """botocore re-sends an UpdateItem whose answer timed out; the ADD must not land twice."""
    pid = product(store.table, stock=2)
    service = wiring.catalog_service(store.table)
    with first_answer_lost(store.client, "UpdateItem") as sent:
        assert service.adjust_stock(ADMIN, pid, 5) == 7
    assert len(sent) == 1  # one call, sent twice by botocore's retry loop
    assert service.get(pid).stock == 7
    with first_answer_lost(store.client, "UpdateItem"):
        assert service.adjust_stock(ADMIN, pid, -7) == 0
    assert service.get(pid).stock == 0
    assert service.adjust_stock(ADMIN, pid, 3) == 3  # a new request is a new adjustment


@pytest.mark.dynamodb_semantics
def test_reviews_once_per_customer_with_rating_summary(store):
    pid = product(store.table)
    service = wiring.catalog_service(store.table)
    service.review(ALICE, pid, rating=4, title="Good", body="Works")
    with pytest.raises(errors.AlreadyReviewed):
        service.review(ALICE, pid, rating=1, title="Again", body="Changed my mind")
    service.review(BOB, pid, rating=5, title="Great", body="Love it")
    fetched = service.get(pid)
    assert (fetched.rating_count, fetched.rating_average) == (2, 4.5)
    with pytest.raises(errors.ProductNotFound):
        service.review(ALICE, "missing", rating=3, title="?", body="?")


@pytest.mark.dynamodb_semantics
def test_product_reviews_highest_rating_then_newest(store):
    pid = product(store.table)
    service = wiring.catalog_service(store.table)
    from shop.services.actor import Actor

    for index, rating in enumerate([3, 5, 1, 5, 3]):
        service.review(Actor(f"customer-{index}"), pid, rating=rating, title=f"t{index}", body="b")
    seen, token = [], None
    while True:
        with counting(store.client) as calls:
            page = service.reviews_of_product(pid, limit=2, next_token=token)
        assert calls.operations == ["Query"]
        seen += [(r.rating, r.customer_id) for r in page.items]
        token = page.next_token
        if token is None:
            break
    assert seen == [(5, "customer-3"), (5, "customer-1"), (3, "customer-4"), (3, "customer-0"), (1, "customer-2")]
    # only an empty first page asks whether the product exists
    with counting(store.client) as calls, pytest.raises(errors.ProductNotFound):
        service.reviews_of_product("missing", limit=5, next_token=None)
    assert calls.operations == ["Query", "GetItem"]
    unreviewed = product(store.table)
    with counting(store.client) as calls:
        assert service.reviews_of_product(unreviewed, limit=5, next_token=None).items == []
    assert calls.operations == ["Query", "GetItem"]


@pytest.mark.dynamodb_semantics
@pytest.mark.parametrize("limit", [5, 20])
def test_product_reviews_read_only_what_they_return(store, limit):
    """Amplification 1.00 on every page with reviews, and the capacity DynamoDB Local reports against the
    single Query this replaced (product item first, then the reviews: docs/performance.md)."""
    from shop.services.actor import Actor

    service = wiring.catalog_service(store.table)
    category(store.table, "tools")
    pid = service.create(
        ADMIN, name="Drill", category="tools", price_cents=4999, description="d" * 1500, stock=5
    ).product_id
    for index in range(limit + 3):
        service.review(Actor(f"customer-{index:02d}"), pid, rating=1 + index % 5, title="A title", body="b" * 150)
    token, pages = None, []
    while True:
        with reading(store.client) as reads:
            page = service.reviews_of_product(pid, limit=limit, next_token=token)
        assert reads.operations == ["Query"]
        assert reads.items_read == len(page.items) > 0
        pages.append(reads.capacity)
        token = page.next_token
        if token is None:
            break
    with reading(store.client) as reads:
        store.client.query(
            TableName=store.table_name,
            KeyConditionExpression="PK = :pk AND SK BETWEEN :low AND :high",
            ExpressionAttributeValues={
                ":pk": {"S": f"PRODUCT#{pid}"},
                ":low": {"S": "BY_RATING#"},
                ":high": {"S": "PRODUCT"},
            },
            ScanIndexForward=False,
            Limit=limit + 1,
        )
    assert reads.items_read == limit + 1  # the replaced first page: the product item, then `limit` reviews
    if store.backend == "local":
        assert pages[0] <= reads.capacity
        print(f"limit {limit}: first page {pages[0]} RCU, the single Query with the product item {reads.capacity} RCU")


@pytest.mark.dynamodb_semantics
def test_customer_reviews_newest_first(store):
    service = wiring.catalog_service(store.table)
    first, second = product(store.table, name="a"), product(store.table, name="b")
    service.review(ALICE, first, rating=2, title="x", body="y")
    service.review(ALICE, second, rating=4, title="x", body="y")
    with counting(store.client) as calls:
        page = service.reviews_of_customer("alice", limit=10, next_token=None)
    assert calls.operations == ["Query"]
    assert [r.product_id for r in page.items] == [second, first]


@pytest.mark.dynamodb_semantics
def test_creating_an_existing_product_is_a_conflict(store):
    from shop.repository import ProductRepository

    pid = product(store.table)
    existing = wiring.catalog_service(store.table).get(pid)
    with pytest.raises(errors.ProductExists):
        ProductRepository(store.table).create(
            existing.model_copy(update={"created_at": "2026-01-01T00:00:00Z"}), existing._listed_in
        )


@pytest.mark.dynamodb_semantics
def test_a_create_whose_answer_was_lost_is_the_product_it_created(store):
    """botocore re-sends a transaction whose answer timed out: the product item it finds is the first attempt's."""
    with first_answer_lost(store.client, "TransactWriteItems"):
        pid = product(store.table, name="Lost answer")
    assert wiring.catalog_service(store.table).get(pid).name == "Lost answer"
