"""The committed openapi.json is what the code generates (`make openapi`), and it is complete."""

from __future__ import annotations

import json
import re

from local_runtime.openapi import build
from shop.http_api.routes import ROUTES
from tests.functions.apigw import REPO


def test_committed_document_matches_the_code():
    committed = json.loads((REPO / "openapi.json").read_text())
    assert committed == build(), "openapi.json is stale: run `make openapi` and commit it"


def test_the_document_is_valid_openapi():
    """What generators and schemathesis read is a valid OpenAPI document (openapi-spec-validator)."""
    from openapi_spec_validator import validate

    validate(build())


def test_every_operation_declares_its_errors_with_our_schema():
    document = build()
    operations = [(path, method, op) for path, ops in document["paths"].items() for method, op in ops.items()]
    assert len(operations) == len(ROUTES)  # every route of the table, and nothing else
    for path, method, op in operations:
        responses = op["responses"]
        assert {"400", "422", "500", "503"} <= set(responses), (method, path)
        assert responses["422"]["content"]["application/json"]["schema"]["$ref"].endswith("/ValidationErrorResponse")
        if op.get("security"):
            assert "401" in responses, (method, path)
    assert "#/components/schemas/HTTPValidationError" not in json.dumps(document["paths"])


# ----- issue 27: what client generators need of the document -----


def _operations(document):
    return [(path, method, op) for path, ops in document["paths"].items() for method, op in ops.items()]


def test_operation_ids_are_the_route_tables_short_stable_names():
    document = build()
    declared = {(method.upper(), path): op["operationId"] for path, method, op in _operations(document)}
    assert declared == {(route.method, route.path): route.operation for route in ROUTES}
    assert len(set(declared.values())) == len(declared)
    assert all(re.fullmatch(r"[a-z][a-zA-Z]+", name) for name in declared.values()), declared


def test_if_match_is_required_exactly_where_its_absence_is_428():
    for path, method, op in _operations(build()):
        if_match = [p for p in op.get("parameters", []) if p["in"] == "header" and p["name"].lower() == "if-match"]
        if "428" in op["responses"]:
            assert if_match, (method, path)
            assert if_match[0]["required"], (method, path)
            assert if_match[0]["schema"]["type"] == "string", (method, path)
        else:
            assert all(not p["required"] for p in if_match), (method, path)


def test_no_schema_is_a_one_of_of_required_only_branches():
    """Generators make no type of such a schema (a dict goes in): alternatives are closed, named objects."""
    schemas = build()["components"]["schemas"]
    for name, schema in schemas.items():
        for key in ("oneOf", "anyOf"):
            for branch in schema.get(key, []):
                assert set(branch) != {"required"}, name
    for name, alternatives in {
        "OrderIn": ["OrderFromLines", "OrderFromSession", "OrderFromCustomerCart"],
        "ProductIn": ["ProductInCategories", "ProductInCategory"],
    }.items():
        assert [b["$ref"].rsplit("/", 1)[1] for b in schemas[name]["oneOf"]] == alternatives
        assert all(schemas[a]["additionalProperties"] is False for a in alternatives)


def test_timestamps_are_date_times():
    schemas = build()["components"]["schemas"]
    found = 0
    for name, schema in schemas.items():
        for field, spec in (schema.get("properties") or {}).items():
            if field.endswith("_at") or field == "at":
                strings = [s for s in spec.get("anyOf", [spec]) if s.get("type") == "string"]
                assert strings, (name, field)
                assert all(s.get("format") == "date-time" for s in strings), (name, field)
                found += 1
    assert found >= 20


def test_no_response_union_repeats_a_schema():
    """`ErrorResponse | ErrorResponse` in a generated client came from a 401 union holding ErrorResponse."""
    schemas = build()["components"]["schemas"]
    for path, method, op in _operations(build()):
        for status, response in op["responses"].items():
            schema = response.get("content", {}).get("application/json", {}).get("schema", {})
            name = schema.get("$ref", "").rsplit("/", 1)[-1]
            unions = {key for key in ("anyOf", "oneOf") if schemas.get(name, {}).get(key)}
            assert not unions, (method, path, status)


def test_versioned_answers_declare_the_etag_header():
    for path, method, op in _operations(build()):
        if "428" in op["responses"] or op["operationId"] in ("placeOrder", "getOrder", "getCustomer"):
            success = next(r for s, r in op["responses"].items() if s.startswith("2"))
            assert "ETag" in success["headers"], (method, path)
