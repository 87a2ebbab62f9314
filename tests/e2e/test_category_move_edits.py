"""Issue 23, item 1, over HTTP on the local stack: categories `oa`, `ob`, `m` (under `oa`), 250 products in
`m`; `PATCH /categories/m {"parent": "ob"}`; once `?category=ob` shows 100, the last product is renamed
`a-renamed` (a name that sorts before the move's cursor over the name listing). After the move `oa` lists
none of them, `ob` and `m` all 250, and the renamed one is listed once, under `ob`.

The stack runs the move 5 products a step (`CATEGORY_MOVE_STEP_PRODUCTS=5`, 50 steps) so that the rename
lands in the middle of it whatever the machine's speed; the test checks that it did (`moving` still true).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tests.e2e.conftest import IN_MEMORY, Api, Stack, eventually, expect

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e")]

PRODUCTS = 250
STEP = 5
WAIT_S = 120.0


def listed(api: Api, category: str) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    params: dict[str, str] = {"category": category, "limit": "100"}
    while True:
        page = expect(api.get("/products", params=params), 200)
        seen += page["items"]
        if not page.get("next_token"):
            return seen
        params = {**params, "next_token": page["next_token"]}


def test_a_product_renamed_during_its_categorys_move_ends_under_the_new_parent_only(
    new_stack: Callable[..., Stack],
) -> None:
    stack = new_stack(options=("--env", f"CATEGORY_MOVE_STEP_PRODUCTS={STEP}", *IN_MEMORY))
    api, admin = stack.api, stack.admin_token()
    for body in [
        {"slug": "oa", "name": "OA"},
        {"slug": "ob", "name": "OB"},
        {"slug": "m", "name": "M", "parent": "oa"},
    ]:
        expect(api.post("/categories", token=admin, json=body), 201)

    def create(index: int) -> str:
        body = {"name": f"p-{index:03d}", "categories": ["m"], "price_cents": 100 + index, "stock": 1}
        return str(expect(api.post("/products", token=admin, json=body), 201)["product_id"])

    with ThreadPoolExecutor(max_workers=4) as pool:
        everything = list(pool.map(create, range(PRODUCTS)))
    assert len(listed(api, "oa")) == PRODUCTS

    moved = expect(api.patch("/categories/m", token=admin, json={"parent": "ob"}), 200)
    assert moved["moving"] is True
    eventually(lambda: len(listed(api, "ob")) >= 100, timeout=WAIT_S, interval=0.05, what="ob showing 100")
    last = everything[-1]
    renamed = expect(api.patch(f"/products/{last}", token=admin, json={"name": "a-renamed"}), 200)
    assert renamed["name"] == "a-renamed"
    assert expect(api.get("/categories/m"), 200)["moving"] is True  # the rename landed during the move

    eventually(lambda: expect(api.get("/categories/m"), 200)["moving"] is False, timeout=WAIT_S, what="the move's end")
    assert listed(api, "oa") == []
    for category in ("ob", "m"):
        seen = [item["product_id"] for item in listed(api, category)]
        assert len(seen) == len(set(seen)) == PRODUCTS, category
        assert set(seen) == set(everything), category
    first = listed(api, "ob")[0]
    assert (first["product_id"], first["name"]) == (last, "a-renamed")
    # and a later edit keeps it there
    expect(api.patch(f"/products/{last}", token=admin, json={"price_cents": 999}), 200)
    assert last not in {item["product_id"] for item in listed(api, "oa")}
    assert last in {item["product_id"] for item in listed(api, "ob")}
    stack.stop_cleanly()
