"""Issue 23, item 7: what the public reads of a product (no operations data) and what a category name may be.

`low_stock_threshold` and `stock_shards` are operations data: anyone's GET /products/{id} (a public route,
which never carries claims) leaves them out, as the listings do; the admins' answers (create, edit, archive)
carry them. A category name needs a visible character and no control character; the document says so."""

from __future__ import annotations

import json

import pytest

from tests.functions.apigw import ADMIN, ALICE, REPO, call
from tests.functions.test_document_exactness import admitted

OPERATIONS = {"low_stock_threshold", "stock_shards"}
DOCUMENT = json.loads((REPO / "openapi.json").read_text())


@pytest.mark.dynamodb_semantics
def test_the_public_read_of_a_product_leaves_out_operations_data(api):
    created = call(
        "POST", "/products", claims=ADMIN, body={"name": "Hub", "category": "cables", "price_cents": 1, "stock": 9}
    )
    assert created.status == 201
    assert created.body["low_stock_threshold"] == 5
    pid = created.body["product_id"]
    assert call("POST", f"/products/{pid}/stock-shards", claims=ADMIN, body={"shards": 4}).status == 200
    patched = call("PATCH", f"/products/{pid}", claims=ADMIN, body={"low_stock_threshold": 3})
    assert (patched.body["low_stock_threshold"], patched.body["stock_shards"]) == (3, 4)
    for claims in (None, ALICE, ADMIN):  # the route is public: API Gateway passes nobody's claims to it
        read = call("GET", f"/products/{pid}", claims=claims)
        assert read.status == 200
        assert not OPERATIONS & set(read.body), read.body
        assert (read.body["name"], read.body["stock"]) == ("Hub", 9)
    listed = call("GET", "/products", query={"category": "cables"})
    assert all(not OPERATIONS & set(item) for item in listed.body["items"])
    archived = call("DELETE", f"/products/{pid}", claims=ADMIN)
    assert set(archived.body) >= OPERATIONS


def test_the_document_says_which_answers_carry_operations_data():
    schemas = DOCUMENT["components"]["schemas"]
    ref = DOCUMENT["paths"]["/products/{product_id}"]["get"]["responses"]["200"]["content"]["application/json"]
    assert ref["schema"]["$ref"] == "#/components/schemas/PublicProduct"
    assert not OPERATIONS & set(schemas["PublicProduct"]["properties"])
    assert set(schemas["Product"]["properties"]) >= OPERATIONS
    assert not OPERATIONS & set(schemas["Product"]["required"])
    for field in OPERATIONS:
        assert schemas["Product"]["properties"][field]["description"].startswith("admin only")


BLANK_OR_CONTROL = [" ", "   ", "\t", "\n", "\x00", "Mugs\n", "Mu\tgs", "\u3000", "\x7f", "\x85"]


@pytest.mark.dynamodb_semantics
def test_a_category_name_needs_a_visible_character_and_no_control_character(api):
    for name in BLANK_OR_CONTROL:
        created = call("POST", "/categories", claims=ADMIN, body={"slug": "mugs", "name": name})
        assert (created.status, created.code) == (422, "VALIDATION_ERROR"), repr(name)
    assert call("GET", "/categories/mugs").status == 404  # nothing written
    assert call("POST", "/categories", claims=ADMIN, body={"slug": "mugs", "name": " Mugs & cups "}).status == 201
    for name in BLANK_OR_CONTROL:
        renamed = call("PATCH", "/categories/mugs", claims=ADMIN, body={"name": name})
        assert (renamed.status, renamed.code) == (422, "VALIDATION_ERROR"), repr(name)
    assert call("GET", "/categories/mugs").body["name"] == " Mugs & cups "


def test_the_document_states_the_category_name_rule():
    pattern = DOCUMENT["components"]["schemas"]["CategoryIn"]["properties"]["name"]["pattern"]
    assert DOCUMENT["components"]["schemas"]["CategoryPatch"]["properties"]["name"]["pattern"] == pattern
    for name in BLANK_OR_CONTROL:
        assert not admitted("CategoryIn", {"slug": "mugs", "name": name}), repr(name)
    assert admitted("CategoryIn", {"slug": "mugs", "name": " Mugs & cups "})
