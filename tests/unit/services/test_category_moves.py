"""A category move's rewrite (shop.services.category_moves) on the memory store, one step per state of the move
item as the stream processor runs it: the subtree re-pathed, then its products re-filed page by page, then the move
finished; a step run again changes nothing. The move through the stream and the handler:
tests/unit/handlers/test_category_move_handler.py; on DynamoDB Local: tests/stream."""

from __future__ import annotations

import pytest

from shop.config import move_step_products
from shop.models.categories import Category
from shop.models.stream_images import MoveImage
from shop.services import category_moves
from shop.services.category_moves import CategoryMoves
from tests.support.factories import ADMIN
from tests.support.memory_store import MemoryStore


@pytest.fixture
def mid_move() -> MemoryStore:
    """A streamed-moves store: tools/hand with saws and files below it, two products under saws and one under hand,
    and garden; hand is moving below garden (the move item written, nothing below it re-pathed yet)."""
    store = MemoryStore(streamed_moves=True)
    tree = store.category_service()
    for slug, parent in (("tools", None), ("garden", None), ("hand", "tools"), ("saws", "hand"), ("files", "hand")):
        tree.create(ADMIN, slug=slug, name=slug.capitalize(), parent=parent)
    catalog = store.catalog_service()
    for name, category in (("Rip saw", "saws"), ("Tenon saw", "saws"), ("Chisel", "hand")):
        catalog.create(ADMIN, name=name, categories=[category], price_cents=1000, description=None, stock=1)
    tree.update(ADMIN, "hand", {"parent": "garden"})
    return store


def current(store: MemoryStore) -> MoveImage:
    assert store.state.move is not None
    return MoveImage.model_validate(store.state.move)


def listed_under(store: MemoryStore, slug: str) -> list[str]:
    page = store.catalog_service().list_by_category(slug, limit=50, next_token=None)
    return sorted(p.name for p in page.items)


def category(store: MemoryStore, slug: str) -> Category:
    return store.categories.get(slug)


def test_the_steps_repath_the_subtree_then_refile_its_products_then_finish(mid_move, monkeypatch):
    monkeypatch.setenv("CATEGORY_MOVE_STEP_PRODUCTS", "2")
    moves = CategoryMoves(mid_move.categories, mid_move.products, step_products=move_step_products)
    assert category(mid_move, "saws").path == "/tools/hand/saws"

    assert moves.step(current(mid_move))  # CATEGORIES: saws and files re-pathed, no more below
    assert (category(mid_move, "saws").path, category(mid_move, "saws").depth) == ("/garden/hand/saws", 3)
    assert category(mid_move, "files").path == "/garden/hand/files"
    assert current(mid_move).phase == "PRODUCTS"
    assert listed_under(mid_move, "garden") == []  # not re-filed yet

    steps = 0
    while mid_move.state.move is not None:
        assert moves.step(current(mid_move))
        steps += 1
    assert steps == 2  # three products, two a page
    assert listed_under(mid_move, "garden") == ["Chisel", "Rip saw", "Tenon saw"]
    assert listed_under(mid_move, "tools") == []
    assert listed_under(mid_move, "hand") == ["Chisel", "Rip saw", "Tenon saw"]
    assert category(mid_move, "hand").moving is False


def test_a_step_run_again_changes_nothing(mid_move):
    moves = CategoryMoves(mid_move.categories, mid_move.products, step_products=move_step_products)
    first = current(mid_move)
    assert moves.step(first)
    after = dict(mid_move.state.move or {})
    assert moves.step(first) is False  # the step was taken: the move item is at the next one
    assert mid_move.state.move == after
    last = current(mid_move)
    assert moves.step(last)  # one page holds every product: the move finishes
    assert mid_move.state.move is None
    assert moves.step(last) is False


def test_each_category_step_repaths_at_most_move_step_categories(mid_move, monkeypatch):
    monkeypatch.setattr(category_moves, "MOVE_STEP_CATEGORIES", 1)
    moves = CategoryMoves(mid_move.categories, mid_move.products, step_products=move_step_products)
    phases = []
    while current(mid_move).phase == "CATEGORIES":
        assert moves.step(current(mid_move))
        phases.append(current(mid_move).phase)
    assert phases == ["CATEGORIES", "CATEGORIES", "PRODUCTS"]  # one a step, then a step that found none left
    assert [category(mid_move, slug).path for slug in ("files", "saws")] == ["/garden/hand/files", "/garden/hand/saws"]


def test_products_that_keep_changing_stop_the_step_after_the_bounded_attempts(mid_move, monkeypatch):
    moves = CategoryMoves(mid_move.categories, mid_move.products, step_products=move_step_products)
    assert moves.step(current(mid_move))
    tries = []

    def always_changed(products):
        tries.append(len(products))
        return [product.product_id for product, _ in products]

    monkeypatch.setattr(mid_move.products, "relist", always_changed)
    with pytest.raises(RuntimeError, match="kept changing"):
        moves.step(current(mid_move))
    assert tries == [3] * category_moves.RELIST_ATTEMPTS
    assert current(mid_move).phase == "PRODUCTS"  # not advanced: the record is retried
