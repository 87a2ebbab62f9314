"""Product edits during a category move, on DynamoDB Local with the move driven by the table's real stream
records one step at a time (issue 23, item 1): an edit that renames a product past the move's cursor over the
name listing; an edit that read the tree before the move and commits after the cursor passed its new name;
an edit whose product the move re-filed between its read and its write (applied, not 409); an edit between
the move step's read and its write (the step reads again). After the move every product is listed exactly
under its new scopes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from shop import keys, wiring
from shop.repository import ProductRepository
from shop.repository.store import Table, to_item
from shop.repository.stream_records import StreamRecord
from shop.services.catalog import CatalogService
from shop.services.categories import CategoryService
from tests.support.factories import ADMIN
from tests.support.streams import StreamReader, only

pytestmark = pytest.mark.integration

PRODUCTS = 25
STEP = 10  # products a move step re-files here: three product pages


def category_tree(table: Any) -> CategoryService:
    tree = wiring.category_service(table)
    tree.create(ADMIN, slug="oa", name="Old parent", parent=None)
    tree.create(ADMIN, slug="ob", name="New parent", parent=None)
    tree.create(ADMIN, slug="m", name="Moved", parent="oa")
    return tree


def fill(catalog: CatalogService) -> list[str]:
    return [
        catalog.create(
            ADMIN, name=f"p-{index:03d}", categories=["m"], price_cents=100 + index, description=None, stock=1
        ).product_id
        for index in range(PRODUCTS)
    ]


def listed(catalog: CatalogService, category: str) -> list[str]:
    seen: list[str] = []
    token = None
    while True:
        page = catalog.list_by_category(category, limit=100, next_token=token)
        seen += [item.product_id for item in page.items]
        token = page.next_token
        if token is None:
            return seen


def move_under_way(table: Table) -> bool:
    """Whether the move item is still there (the move's job removes it at its last step)."""
    key = to_item(keys.category_move_key())
    return "Item" in table.client.get_item(TableName=table.name, Key=key, ConsistentRead=True)


def run_move(store: Any, reader: StreamReader, until: Callable[[], bool] = lambda: False) -> bool:
    """Hand the move item's stream records to the stream processor one step at a time until `until()` holds
    (True) or the move is done (False)."""
    service = wiring.order_events_service(store.table)
    for _ in range(1_000):
        if until():
            return True
        records = only(reader.read(), entity=keys.CATEGORY_MOVE_PK)
        for record in records:
            if record["eventName"] in ("INSERT", "MODIFY"):
                service.handle(StreamRecord.from_lambda(record))
        if not records and not move_under_way(store.table):
            return False
    raise AssertionError("the move never finished")


def assert_moved(catalog: CatalogService, everything: list[str]) -> None:
    assert listed(catalog, "oa") == []
    for category in ("ob", "m"):
        seen = listed(catalog, category)
        assert len(seen) == len(set(seen)) == PRODUCTS, category
        assert set(seen) == set(everything), category
    for product_id in everything:
        assert catalog.products.get(product_id)._listed_in == ["ob", "m"]


@pytest.fixture
def moving(local_store: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, CatalogService, list[str]]:
    monkeypatch.setenv("CATEGORY_MOVE_STEP_PRODUCTS", str(STEP))
    category_tree(local_store.table)
    catalog = wiring.catalog_service(local_store.table)
    return local_store, catalog, fill(catalog)


def test_a_product_renamed_past_the_cursor_during_the_move_ends_under_its_new_scopes(moving):
    store, catalog, everything = moving
    reader = StreamReader(store)
    reader.skip_to_now()
    wiring.category_service(store.table).update(ADMIN, "m", {"parent": "ob"})
    assert run_move(store, reader, until=lambda: len(listed(catalog, "ob")) >= STEP)
    assert wiring.category_service(store.table).detail("m").moving  # the rename lands in the middle of the move
    last = everything[-1]
    renamed = catalog.update(ADMIN, last, {"name": "a-renamed"})
    assert renamed._listed_in == ["ob", "m"]  # the scopes of the tree as it is now, not the stored ones
    assert not run_move(store, reader)
    assert_moved(catalog, everything)
    assert catalog.list_by_category("ob", limit=1, next_token=None).items[0].name == "a-renamed"


def test_an_edit_that_read_before_the_move_and_commits_behind_the_cursor_is_filed_anew(moving):
    """The edit thread reads the product and the tree before the move starts and is held before its write;
    the move starts and re-files its first page; then the edit commits a name that sorts before the cursor.
    Its write checks the paths it computed its scopes from: the moved category's changed, so it reads
    them again and files the product under the new scopes."""
    store, catalog, everything = moving
    last = everything[-1]
    editor = wiring.catalog_service(store.table)
    write = editor.products.update
    reads_done, go_on = threading.Event(), threading.Event()
    writes: list[list[str]] = []

    def held_update(current: Any, changes: Any, updated_at: str, scopes: list[str], *args: Any) -> Any:
        if not reads_done.is_set():
            reads_done.set()
            assert go_on.wait(timeout=60)
        writes.append(list(scopes))
        return write(current, changes, updated_at, scopes, *args)

    editor.products.update = held_update  # type: ignore[method-assign]
    result: list[Any] = []
    edit = threading.Thread(target=lambda: result.append(editor.update(ADMIN, last, {"name": "a-renamed"})))
    reader = StreamReader(store)
    reader.skip_to_now()
    edit.start()
    try:
        assert reads_done.wait(timeout=60)
        wiring.category_service(store.table).update(ADMIN, "m", {"parent": "ob"})
        assert run_move(store, reader, until=lambda: len(listed(catalog, "ob")) >= STEP)
        assert last not in listed(catalog, "ob")  # not re-filed by the move yet
    finally:
        go_on.set()
        edit.join()
    assert [product.name for product in result] == ["a-renamed"]
    assert writes[0] == ["oa", "m"]  # refused: the old tree's scopes
    assert writes[-1] == ["ob", "m"]
    assert not run_move(store, reader)
    assert_moved(catalog, everything)


def test_an_edit_whose_product_the_move_refiled_meanwhile_is_applied_not_refused(moving):
    """The edit reads the product and the tree before the move and is held; the whole move runs, re-filing
    the product (its listing version moves, its edit time does not); the edit's write is cancelled, and the
    service reads it again and applies the rename under the new scopes instead of answering 409."""
    store, catalog, everything = moving
    target = everything[0]
    editor = wiring.catalog_service(store.table)
    write = editor.products.update
    reads_done, go_on = threading.Event(), threading.Event()
    outcome: list[Any] = []

    def held_update(*args: Any) -> Any:
        if not reads_done.is_set():
            reads_done.set()
            assert go_on.wait(timeout=60)
        return write(*args)

    def edit() -> None:
        try:
            outcome.append(editor.update(ADMIN, target, {"name": "z-renamed"}))
        except Exception as error:
            outcome.append(error)

    editor.products.update = held_update  # type: ignore[method-assign]
    reader = StreamReader(store)
    reader.skip_to_now()
    thread = threading.Thread(target=edit)
    thread.start()
    try:
        assert reads_done.wait(timeout=60)
        wiring.category_service(store.table).update(ADMIN, "m", {"parent": "ob"})
        assert not run_move(store, reader)
    finally:
        go_on.set()
        thread.join()
    assert [getattr(product, "name", product) for product in outcome] == ["z-renamed"]
    assert_moved(catalog, everything)


def test_an_edit_between_the_movers_read_and_its_write_is_kept_and_refiled(moving, monkeypatch):
    """An edit commits after the move's step read a page of products and before it writes them: the step's
    write for that product is cancelled by its listing version, and the step reads it again."""
    store, catalog, everything = moving
    target = everything[3]
    relist = ProductRepository.relist
    edited: list[str] = []

    def relist_after_an_edit(self: ProductRepository, products: list[Any]) -> list[str]:
        if not edited and any(product.product_id == target for product, _ in products):
            edited.append(wiring.catalog_service(store.table).update(ADMIN, target, {"price_cents": 4242}).product_id)
        return relist(self, products)

    monkeypatch.setattr(ProductRepository, "relist", relist_after_an_edit)
    reader = StreamReader(store)
    reader.skip_to_now()
    wiring.category_service(store.table).update(ADMIN, "m", {"parent": "ob"})
    assert not run_move(store, reader)
    assert edited == [target]
    assert catalog.get(target).price_cents == 4242
    assert_moved(catalog, everything)
