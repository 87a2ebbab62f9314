"""The OpenAPI document says exactly what the handlers accept: findings of the schemathesis run, each kept.

Every case is checked from both sides: the served document (the committed `openapi.json`, which
`test_openapi.py` proves is what the code generates) admits or forbids the body, and the handler
answers accordingly: what the document admits is never a 422, what it forbids is a 422.
Bodies are checked against the document with jsonschema_rs, the ECMA-262 reading schemathesis uses.
"""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema_rs
import pytest

from tests.functions.apigw import ADMIN, ALICE, REPO, call

DOCUMENT = json.loads((REPO / "openapi.json").read_text())
ADDRESS = {"name": "A", "line1": "1 Main", "city": "X", "postal_code": "1", "country": "US"}
SESSION = "sess-demo-cart-0123456789abcdef"


def admitted(schema_name: str, body: Any) -> bool:
    """Whether the document's schema `schema_name` admits `body`."""
    root = {"$ref": f"#/components/schemas/{schema_name}", "components": DOCUMENT["components"]}
    return bool(jsonschema_rs.Draft202012Validator(root).is_valid(body))


def request_schema(method: str, path: str) -> str:
    ref = DOCUMENT["paths"][path][method.lower()]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    return str(ref.rsplit("/", 1)[1])


def new_product(**fields: Any) -> str:
    body = {"name": "Lamp", "category": "lights", "price_cents": 1000, **fields}
    reply = call("POST", "/products", claims=ADMIN, body=body)
    assert reply.status == 201, reply.body
    return str(reply.body["product_id"])


def new_customer(sub: str) -> str:
    assert (
        call("POST", "/customers", claims={"sub": sub}, body={"email": f"{sub}@example.com", "name": "N"}).status == 201
    )
    return sub


def test_every_declared_body_schema_is_a_component():
    """So that `admitted` below checks what each route really takes."""
    assert request_schema("PATCH", "/customers/{customer_id}") == "CustomerPatch"
    assert request_schema("PATCH", "/products/{product_id}") == "ProductPatch"
    assert request_schema("POST", "/orders") == "OrderIn"


# ----- PATCH /customers/{id}: `{}` was admitted by the document, refused by validation -----


@pytest.mark.parametrize("body", [{}, {"email": None}, {"name": None}, {"name": None, "email": "x@example.com"}])
def test_customer_patch_the_document_forbids_is_422(moto_api, body):
    assert not admitted("CustomerPatch", body)
    new_customer("carla")
    reply = call("PATCH", "/customers/carla", claims={"sub": "carla"}, body=body)
    assert (reply.status, reply.code) == (422, "VALIDATION_ERROR")


@pytest.mark.parametrize("body", [{"name": "Carla B"}, {"email": "carla.b@example.com"}])
def test_customer_patch_the_document_admits_is_applied(moto_api, body):
    assert admitted("CustomerPatch", body)
    new_customer("carla")
    reply = call("PATCH", "/customers/carla", claims={"sub": "carla"}, body=body)
    assert reply.status == 200, reply.body
    assert {k: reply.body[k] for k in body} == body


# ----- POST /orders: both sources (or none) were admitted by the document, refused by validation -----

LINES = [{"product_id": "prod-cable", "quantity": 1}]


@pytest.mark.parametrize(
    "body",
    [
        {"session_id": SESSION, "lines": LINES, "shipping_address": ADDRESS},
        {"shipping_address": ADDRESS},
        {"session_id": None, "lines": LINES, "shipping_address": ADDRESS},
        {"session_id": SESSION, "lines": None, "shipping_address": ADDRESS},
    ],
    ids=["both", "neither", "null session_id", "null lines"],
)
def test_order_bodies_the_document_forbids_are_422(moto_api, body):
    assert not admitted("OrderIn", body)
    reply = call("POST", "/orders", claims=ALICE, headers={"Idempotency-Key": "k"}, body=body)
    assert (reply.status, reply.code) == (422, "VALIDATION_ERROR")


def test_an_empty_cart_is_a_conflict_not_a_validation_error(moto_api):
    """The body is schema-valid; the cart's state refuses it: 409, as a full cart is."""
    session_id = call("POST", "/sessions").body["session_id"]
    body = {"session_id": session_id, "shipping_address": ADDRESS}
    assert admitted("OrderIn", body)
    reply = call("POST", "/orders", claims=ALICE, headers={"Idempotency-Key": "k"}, body=body)
    assert (reply.status, reply.code) == (409, "CART_EMPTY")


# ----- PATCH /products/{id}: `price_cents: null` was admitted by the document, refused by validation -----


@pytest.mark.parametrize("field", ["name", "category", "price_cents"])
def test_product_patch_null_is_forbidden_by_the_document_and_422(moto_api, field):
    assert not admitted("ProductPatch", {field: None})
    assert not admitted("ProductPatch", {})
    pid = new_product()
    for body in ({field: None}, {}):
        reply = call("PATCH", f"/products/{pid}", claims=ADMIN, body=body)
        assert (reply.status, reply.code) == (422, "VALIDATION_ERROR")


def test_product_patch_description_null_removes_it(moto_api):
    assert admitted("ProductPatch", {"description": None})
    pid = new_product(description="bright")
    reply = call("PATCH", f"/products/{pid}", claims=ADMIN, body={"description": None})
    assert (reply.status, reply.body.get("description")) == (200, None)


# ----- integral numbers: JSON Schema counts 2.0 an integer, validation refused it -----

INTEGRAL = [
    ("POST", "/products", "ProductIn", {"name": "n", "category": "c", "price_cents": 250.0, "stock": 3.0}, 201),
    ("PATCH", "/products/{pid}", "ProductPatch", {"price_cents": 1200.0}, 200),
    ("POST", "/products/{pid}/stock", "StockIn", {"delta": 2.0}, 200),
    ("POST", "/products/{pid}/reviews", "ReviewIn", {"rating": 4.0, "title": "t", "body": "b"}, 201),
    ("PUT", "/sessions/{sid}/cart/{pid}", "CartQuantityIn", {"quantity": 2.0}, 200),
    (
        "POST",
        "/orders",
        "OrderIn",
        {"lines": [{"product_id": "{pid}", "quantity": 1.0}], "shipping_address": ADDRESS},
        201,
    ),
]


def _fill(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, str):
        return value.format(**ids)
    if isinstance(value, dict):
        return {k: _fill(v, ids) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, ids) for v in value]
    return value


@pytest.mark.parametrize("case", INTEGRAL, ids=[f"{m} {p}" for m, p, *_ in INTEGRAL])
def test_integral_numbers_are_integers(moto_api, case):
    method, path, schema, body, status = case
    assert admitted(schema, body)
    ids = {"pid": new_product(stock=10), "sid": call("POST", "/sessions").body["session_id"]}
    reply = call(method, _fill(path, ids), claims=ADMIN, headers={"Idempotency-Key": "k"}, body=_fill(body, ids))
    assert reply.status == status, reply.body
    echoed = {k: reply.body[k] for k, v in body.items() if isinstance(v, float) and k in reply.body}
    assert all(type(v) is int and v == body[k] for k, v in echoed.items()), echoed


@pytest.mark.parametrize("delta", [2.5, "2", True, None])
def test_what_is_not_an_integer_stays_refused(moto_api, delta):
    assert not admitted("StockIn", {"delta": delta})
    reply = call("POST", f"/products/{new_product()}/stock", claims=ADMIN, body={"delta": delta})
    assert (reply.status, reply.code) == (422, "VALIDATION_ERROR")


# ----- emails: the pattern must mean the same to ECMA-262 (the document), Python `re` and pydantic -----

# Every character some engine's `\s` matches, the controls around them, and a few ordinary ones.
PROBES = [chr(c) for c in [*range(0x00, 0x21), *range(0x7F, 0xA1)]] + [
    "\u1680",
    *map(chr, range(0x2000, 0x200C)),
    "\u2028",
    "\u2029",
    "\u202f",
    "\u205f",
    "\u3000",
    "\ufeff",
    "é",
    "+",
    "😀",
]


def test_the_email_pattern_means_the_same_in_every_engine():
    from shop.http_api.customer_schemas import CustomerIn
    from shop.http_api.schemas import EMAIL_PATTERN

    ecma = jsonschema_rs.Draft202012Validator({"type": "string", "pattern": EMAIL_PATTERN})
    disagreements = []
    for probe in PROBES:
        for email in (f"a{probe}@b.c", f"a@b{probe}.c", f"a@b.c{probe}", f"a@b.{probe}"):
            verdicts = {
                "ecma": ecma.is_valid(email),
                "python re": re.search(EMAIL_PATTERN, email) is not None,
                "pydantic": _pydantic_accepts(CustomerIn, email),
            }
            if len(set(verdicts.values())) != 1:
                disagreements.append((email, verdicts))
    assert not disagreements


def test_emails_with_whitespace_or_controls_are_refused_and_others_accepted():
    from shop.http_api.customer_schemas import CustomerIn

    assert _pydantic_accepts(CustomerIn, "josé+tag@exämple.co")
    for probe in ("\x85", "\x1c", "\xa0", "\ufeff", "\u2028", "\n", " "):
        assert not _pydantic_accepts(CustomerIn, f"a{probe}b@example.com"), repr(probe)
    assert not _pydantic_accepts(CustomerIn, "a@b.c\n")


def test_an_email_the_document_admits_creates_the_customer(moto_api):
    body = {"email": "a\x7e\u00e9@b\u00fc.c", "name": "N"}  # non-ASCII, no whitespace or control
    assert admitted("CustomerIn", body)
    assert call("POST", "/customers", claims={"sub": "ecma"}, body=body).status == 201


def _pydantic_accepts(model: Any, email: str) -> bool:
    from pydantic import ValidationError

    try:
        model.model_validate({"email": email, "name": "n"})
    except ValidationError:
        return False
    return True


# ----- 204 declared with a JSON body -----


def test_no_content_responses_declare_no_body():
    declared = [
        (path, method, response)
        for path, operations in DOCUMENT["paths"].items()
        for method, operation in operations.items()
        for status, response in operation["responses"].items()
        if status == "204"
    ]
    assert declared, "DELETE /sessions/{session_id} answers 204"
    assert all(not response.get("content") for _, _, response in declared), declared


def test_delete_session_answers_204_without_body_or_content_type(moto_api):
    sid = call("POST", "/sessions").body["session_id"]
    reply = call("DELETE", f"/sessions/{sid}")
    assert reply.status == 204
    assert reply.body in (None, "")
    assert "content-type" not in {k.lower() for k in reply.headers}


# ----- links: what a client can do next with a placed order, a new product, a new category -----


def _with_values(body: Any) -> Any:
    """A link's request body with each runtime expression (`$response.body#/product_id`) replaced by an id."""
    if isinstance(body, dict):
        return {key: _with_values(value) for key, value in body.items()}
    if isinstance(body, list):
        return [_with_values(value) for value in body]
    return "an-id-1" if isinstance(body, str) and body.startswith("$") else body


def test_every_link_names_an_operation_of_the_document_and_its_parameters():
    operations = {
        operation["operationId"]: operation for ops in DOCUMENT["paths"].values() for operation in ops.values()
    }
    links = [
        link
        for ops in DOCUMENT["paths"].values()
        for operation in ops.values()
        for response in operation["responses"].values()
        for link in response.get("links", {}).values()
    ]
    assert links
    for link in links:
        target = operations[link["operationId"]]
        declared = {f"{p['in']}.{p['name']}" for p in target.get("parameters", [])}
        named = {name if "." in name else f"path.{name}" for name in link.get("parameters", {})}
        assert named <= declared, (link, declared)
        if "requestBody" in link:  # a whole body (the fuzz test's stateful phase sends it as it is): schema-valid
            schema = target["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
            assert link["x-schemathesis"] == {"merge_body": False}, link
            assert admitted(schema, _with_values(link["requestBody"])), link


def test_a_placed_order_answers_the_etag_its_change_link_sends(moto_api):
    placed = call(
        "POST",
        "/orders",
        claims=ALICE,
        headers={"Idempotency-Key": "k"},
        body={"lines": LINES, "shipping_address": ADDRESS},
    )
    assert placed.status == 201
    etag = {k.lower(): v for k, v in placed.headers.items()}["etag"]
    changed = call(
        "PATCH",
        f"/orders/{placed.body['order_id']}",
        claims=ADMIN,
        headers={"If-Match": etag},
        body={"status": "CONFIRMED"},
    )
    assert (changed.status, changed.body["status"]) == (200, "CONFIRMED")


# ----- findings of the adversarial review -----


@pytest.mark.parametrize(
    ("method", "path", "claims"),
    [("POST", "/customers", ALICE), ("POST", "/products", ADMIN)],
)
def test_an_integer_too_long_to_read_is_400_not_500(moto_api, method, path, claims):
    raw = '{"name": "a", "email": "a@b.co", "price_cents": ' + "9" * 5000 + "}"
    reply = call(method, path, claims=claims, raw_body=raw, headers={"content-type": "application/json"})
    assert (reply.status, reply.code) == (400, "BAD_REQUEST"), reply.body


def test_every_route_with_a_body_declares_415():
    document = json.loads((REPO / "openapi.json").read_text())
    missing = [
        f"{method.upper()} {path}"
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
        if "requestBody" in operation and "415" not in operation["responses"]
    ]
    assert missing == []


# ----- issue 27: one-of bodies as closed, named alternatives (what generators type) -----

PRODUCT = {"name": "Lamp", "price_cents": 100}
ONE_OF_BODIES = [
    ("OrderIn", {"lines": LINES, "shipping_address": ADDRESS}),
    ("OrderIn", {"session_id": SESSION, "shipping_address": ADDRESS}),
    ("OrderIn", {"cart": "customer", "shipping_address": ADDRESS}),
    ("OrderIn", {"cart": "session", "shipping_address": ADDRESS}),
    ("OrderIn", {"cart": "customer", "lines": LINES, "shipping_address": ADDRESS}),
    ("OrderIn", {"cart": "customer", "session_id": SESSION, "shipping_address": ADDRESS}),
    ("OrderIn", {"cart": "customer"}),
    ("OrderIn", {"lines": [], "shipping_address": ADDRESS}),
    ("OrderIn", {"lines": LINES, "shipping_address": ADDRESS, "note": "x"}),
    ("ProductIn", {**PRODUCT, "category": "lights"}),
    ("ProductIn", {**PRODUCT, "categories": ["lights", "desk"], "stock": 3, "low_stock_threshold": 1}),
    ("ProductIn", {**PRODUCT, "category": "lights", "description": None}),
    ("ProductIn", {**PRODUCT, "category": "lights", "categories": ["lights"]}),
    ("ProductIn", PRODUCT),
    ("ProductIn", {**PRODUCT, "categories": ["lights", "lights"]}),
    ("ProductIn", {**PRODUCT, "category": "lights", "low_stock_threshold": None}),
    ("ProductIn", {**PRODUCT, "category": "lights", "colour": "red"}),
]


@pytest.mark.parametrize(("schema", "body"), ONE_OF_BODIES, ids=[str(i) for i in range(len(ONE_OF_BODIES))])
def test_the_alternatives_admit_exactly_what_validation_accepts(schema, body):
    from pydantic import ValidationError

    from shop.http_api.order_schemas import OrderIn
    from shop.http_api.product_schemas import ProductIn

    model = {"OrderIn": OrderIn, "ProductIn": ProductIn}[schema]
    try:
        model.model_validate(body)
        accepted = True
    except ValidationError:
        accepted = False
    assert admitted(schema, body) == accepted
