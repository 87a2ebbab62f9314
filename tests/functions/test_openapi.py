"""The committed openapi.json is what the code generates (`make openapi`), and it is complete."""

from __future__ import annotations

import json

from local_runtime.openapi import build
from shop.http_api.routes import ROUTES
from tests.functions.apigw import REPO


def test_committed_document_matches_the_code():
    committed = json.loads((REPO / "openapi.json").read_text())
    assert committed == build(), "openapi.json is stale: run `make openapi` and commit it"


def test_every_operation_declares_its_errors_with_our_schema():
    document = build()
    operations = [(path, method, op) for path, ops in document["paths"].items() for method, op in ops.items()]
    assert len(operations) == len(ROUTES)  # every route of shop.http_api.routes, once
    for path, method, op in operations:
        responses = op["responses"]
        assert {"400", "422", "500", "503"} <= set(responses), (method, path)
        assert responses["422"]["content"]["application/json"]["schema"]["$ref"].endswith("/ValidationErrorResponse")
        if op.get("security"):
            assert "401" in responses, (method, path)
    assert "#/components/schemas/HTTPValidationError" not in json.dumps(document["paths"])
