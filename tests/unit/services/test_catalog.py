"""The catalogue's rules on the memory store: admin-only edits, stock bounds, one review per customer."""

from __future__ import annotations

import pytest

from shop import errors
from shop.limits import MAX_STOCK
from tests.support.factories import ADMIN, ALICE, BOB


@pytest.fixture
def catalog(memory):
    return memory.catalog_service()


def create(catalog, **fields):
    defaults = {"name": "Hammer", "category": "tools", "price_cents": 1500, "description": None, "stock": 5}
    return catalog.create(ADMIN, **{**defaults, **fields})


def test_an_admin_creates_a_product_with_a_new_id_and_its_times(catalog):
    first, second = create(catalog), create(catalog, name="Nails")
    assert first.product_id != second.product_id
    assert first.created_at == first.updated_at
    assert (first.rating_count, first.rating_average) == (0, None)
    assert catalog.get(first.product_id) == first


def test_only_an_admin_edits_the_catalogue(catalog):
    pid = create(catalog).product_id
    with pytest.raises(errors.Forbidden):
        catalog.create(ALICE, name="x", category="tools", price_cents=1, description=None, stock=0)
    with pytest.raises(errors.Forbidden):
        catalog.update(ALICE, pid, {"price_cents": 1})
    with pytest.raises(errors.Forbidden):
        catalog.adjust_stock(ALICE, pid, 1)
    assert catalog.get(pid).price_cents == 1500


def test_an_update_changes_the_fields_given_and_the_update_time(catalog):
    product = create(catalog, description="steel")
    updated = catalog.update(ADMIN, product.product_id, {"price_cents": 1800, "description": None})
    assert (updated.price_cents, updated.description, updated.name) == (1800, None, "Hammer")
    assert updated.updated_at >= product.updated_at
    assert catalog.get(product.product_id) == updated
    with pytest.raises(errors.ProductNotFound):
        catalog.update(ADMIN, "ghost", {"price_cents": 1})


def test_an_update_meeting_a_concurrent_one_is_a_conflict(catalog, memory, monkeypatch):
    pid = create(catalog).product_id
    read = memory.products.get

    def read_then_someone_edits(product_id):
        product = read(product_id)
        memory.products.update(product, {"name": "Claw hammer"}, "2099-01-01T00:00:00.000000Z", ["tools"])
        return product

    monkeypatch.setattr(memory.products, "get", read_then_someone_edits)
    with pytest.raises(errors.Conflict):
        catalog.update(ADMIN, pid, {"price_cents": 1})
    assert read(pid).price_cents == 1500


def test_stock_moves_within_zero_and_the_maximum(catalog):
    pid = create(catalog, stock=5).product_id
    assert catalog.adjust_stock(ADMIN, pid, -5) == 0
    with pytest.raises(errors.InsufficientStock) as short:
        catalog.adjust_stock(ADMIN, pid, -1)
    assert short.value.details == {"stock": 0}
    assert catalog.adjust_stock(ADMIN, pid, MAX_STOCK) == MAX_STOCK
    with pytest.raises(errors.StockLimitExceeded):
        catalog.adjust_stock(ADMIN, pid, 1)
    assert catalog.get(pid).stock == MAX_STOCK
    with pytest.raises(errors.ProductNotFound):
        catalog.adjust_stock(ADMIN, "ghost", 1)


def test_a_review_is_the_callers_one_per_product_and_counts_in_the_rating(catalog):
    pid = create(catalog).product_id
    review = catalog.review(ALICE, pid, rating=5, title="Great", body="Works")
    assert (review.customer_id, review.product_id) == ("alice", pid)
    catalog.review(BOB, pid, rating=2, title="Meh", body="Heavy")
    with pytest.raises(errors.AlreadyReviewed):
        catalog.review(ALICE, pid, rating=1, title="Changed", body="my mind")
    product = catalog.get(pid)
    assert (product.rating_count, product.rating_average) == (2, 3.5)
    with pytest.raises(errors.ProductNotFound):
        catalog.review(ALICE, "ghost", rating=5, title="t", body="b")


def test_reviews_list_by_product_best_first_and_by_customer(catalog):
    hammer, nails = create(catalog).product_id, create(catalog, name="Nails").product_id
    catalog.review(ALICE, hammer, rating=3, title="t", body="b")
    catalog.review(BOB, hammer, rating=5, title="t", body="b")
    catalog.review(ALICE, nails, rating=4, title="t", body="b")
    by_product = catalog.reviews_of_product(hammer, limit=10, next_token=None).items
    assert [(r.customer_id, r.rating) for r in by_product] == [("bob", 5), ("alice", 3)]
    by_alice = catalog.reviews_of_customer("alice", limit=10, next_token=None).items
    assert {r.product_id for r in by_alice} == {hammer, nails}
    with pytest.raises(errors.ProductNotFound):
        catalog.reviews_of_product("ghost", limit=10, next_token=None)


def test_a_category_lists_by_name_page_by_page(catalog, memory):
    for name in ("b", "C", "a"):
        create(catalog, name=name)
    memory.category_service().create(ADMIN, slug="garden", name="Garden", parent=None)
    create(catalog, name="other", category="garden")
    first = catalog.list_by_category("tools", limit=2, next_token=None)
    rest = catalog.list_by_category("tools", limit=2, next_token=first.next_token)
    assert [p.name for p in first.items + rest.items] == ["a", "b", "C"]
    assert rest.next_token is None
