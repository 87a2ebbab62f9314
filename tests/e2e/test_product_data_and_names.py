"""Issue 23, item 7 over HTTP on the local stack: anonymous (and customer) `GET /products/{id}` shows no
operations data (`low_stock_threshold`, `stock_shards`), the admin's answers do; category names of a single
space, a tab, a newline or NUL are 422 and nothing is written."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import Api, Stack, create_product, expect

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e")]

OPERATIONS = {"low_stock_threshold", "stock_shards"}


def test_a_products_operations_data_is_for_admins_only(stack: Stack, stack_api: Api, uid: str) -> None:
    admin = stack.admin_token()
    product = create_product(stack_api, admin, category=f"e2e-ops-{uid}", name="Kettle", price_cents=2500, stock=40)
    pid = product["product_id"]
    expect(stack_api.post(f"/products/{pid}/stock-shards", token=admin, json={"shards": 8}), 200)
    patched = expect(stack_api.patch(f"/products/{pid}", token=admin, json={"low_stock_threshold": 7}), 200)
    assert (patched["low_stock_threshold"], patched["stock_shards"]) == (7, 8)
    for token in (None, stack.token(f"e2e-ops-customer-{uid}"), admin):
        read = expect(stack_api.get(f"/products/{pid}", token=token), 200)
        assert not OPERATIONS & set(read), read
        assert (read["name"], read["stock"]) == ("Kettle", 40)
    listing = expect(stack_api.get("/products", params={"category": f"e2e-ops-{uid}"}), 200)
    assert [item["product_id"] for item in listing["items"]] == [pid]
    assert not OPERATIONS & set(listing["items"][0])


@pytest.mark.parametrize("name", [" ", "\t", "\n", "\x00"])
def test_a_category_name_must_show_something(stack: Stack, stack_api: Api, uid: str, name: str) -> None:
    admin = stack.admin_token()
    slug = f"e2e-name-{uid}"
    expect(stack_api.post("/categories", token=admin, json={"slug": slug, "name": name}), 422, "VALIDATION_ERROR")
    expect(stack_api.get(f"/categories/{slug}"), 404, "CATEGORY_NOT_FOUND")
    expect(stack_api.post("/categories", token=admin, json={"slug": slug, "name": "Kettles"}), 201)
    expect(stack_api.patch(f"/categories/{slug}", token=admin, json={"name": name}), 422, "VALIDATION_ERROR")
    assert expect(stack_api.get(f"/categories/{slug}"), 200)["name"] == "Kettles"
