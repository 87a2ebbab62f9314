"""The catalogue's edits over HTTP on the in-memory store: the tree's limits and no-ops, the product's legacy
single category, archiving twice, spreading an archived product's stock."""

from __future__ import annotations

import pytest

from shop.limits import MAX_CATEGORY_DEPTH
from tests.functions.apigw import ADMIN

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics")


def test_the_tree_is_at_most_max_category_depth_deep(handlers):
    parent = "computers"  # depth 1 in the seed
    for depth in range(2, MAX_CATEGORY_DEPTH + 1):
        body = {"slug": f"level-{depth}", "name": f"Level {depth}", "parent": parent}
        assert handlers.call("POST", "/categories", claims=ADMIN, body=body).status == 201
        parent = f"level-{depth}"
    body = {"slug": "too-deep", "name": "Too deep", "parent": parent}
    refused = handlers.call("POST", "/categories", claims=ADMIN, body=body)
    assert (refused.status, refused.code) == (422, "VALIDATION_ERROR")  # CategoryTooDeep, on field parent
    assert [detail["field"] for detail in refused.body["error"]["details"]] == ["parent"]
    moved = handlers.call("PATCH", "/categories/audio", claims=ADMIN, body={"parent": parent})
    assert (moved.status, moved.code) == (422, "VALIDATION_ERROR")  # audio would sit at depth 6


def test_a_category_is_not_its_own_parent(handlers):
    refused = handlers.call("PATCH", "/categories/audio", claims=ADMIN, body={"parent": "audio"})
    assert (refused.status, refused.code) == (409, "INVALID_MOVE")


def test_a_category_moved_to_the_top_level_and_a_rename_to_the_same_name_changing_nothing(handlers):
    moved = handlers.call("PATCH", "/categories/cables", claims=ADMIN, body={"parent": None})
    assert (moved.status, moved.body["path"], moved.body["parent"]) == (200, "/cables", None)
    while handlers.stream(lambda change: change.entity == "CATEGORY_MOVE")[0]:
        pass
    same = handlers.call("PATCH", "/categories/cables", claims=ADMIN, body={"name": "Cables"})
    assert (same.status, same.body["path"], same.body["moving"]) == (200, "/cables", False)
    top = [category["slug"] for category in handlers.call("GET", "/categories").body["items"]]
    assert "cables" in top


def test_a_product_edit_naming_one_category_files_it_there(handlers):
    edited = handlers.call("PATCH", "/products/prod-mouse", claims=ADMIN, body={"category": "audio"})
    assert edited.status == 200, edited.body
    assert edited.body["categories"] == ["audio"]
    listed = handlers.call("GET", "/products", query={"category": "audio"}).body["items"]
    assert "prod-mouse" in [item["product_id"] for item in listed]


def test_archiving_twice_answers_the_archived_product_and_its_stock_no_longer_spreads(handlers):
    first = handlers.call("DELETE", "/products/prod-keyboard", claims=ADMIN)
    again = handlers.call("DELETE", "/products/prod-keyboard", claims=ADMIN)
    assert (first.status, again.status, again.body["status"]) == (200, 200, "ARCHIVED")
    assert again.body == first.body
    spread = handlers.call("POST", "/products/prod-keyboard/stock-shards", claims=ADMIN, body={"shards": 4})
    assert (spread.status, spread.code) == (409, "PRODUCT_UNAVAILABLE")
