"""Property-based fuzzing of the running stack with schemathesis, from the gateway's own `/openapi.json`.

Every operation of the document is exercised (nothing excluded), with bounded examples and a fixed
seed, as an admin (the token that passes every authorizer and role check, so requests reach the
functions' validation and store code instead of stopping at 401/403). Two checks:

- `not_a_server_error`: no 5xx, ever (a 5xx is always a bug);
- `response_schema_conformance`: every response body matches what the document declares for its
  status code.

Phases: `examples` and `fuzzing` (Hypothesis, `max-examples` per operation) and `coverage`
(schemathesis' deterministic boundary and negative cases: missing/extra fields, wrong types, values
just outside each bound), which is what finds unhandled bad input fastest. Stateful testing is off:
the HTTP flows are covered explicitly by the other e2e modules and its run length is not bounded by
`max-examples`.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
import requests
import schemathesis
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

from tests.e2e.conftest import Stack

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e")]

MAX_EXAMPLES = int(os.environ.get("E2E_FUZZ_MAX_EXAMPLES", "15"))
SEED = int(os.environ.get("E2E_FUZZ_SEED", "20260126"))
GATEWAY_401 = {"message": "Unauthorized"}


def no_server_error(ctx: Any, response: Any, case: schemathesis.Case) -> bool | None:
    return not_a_server_error(ctx, response, case)


def conforms_to_the_document(ctx: Any, response: Any, case: schemathesis.Case) -> bool | None:
    return response_schema_conformance(ctx, response, case)


CHECKS = [no_server_error, conforms_to_the_document]


@pytest.fixture(scope="module")
def fuzz_admin_token(stack: Stack) -> str:
    return stack.admin_token("e2e-fuzz-admin")


@pytest.fixture(scope="module")
def api_schema(stack: Stack, fuzz_admin_token: str) -> Any:
    config = schemathesis.Config.from_dict(
        {
            "seed": SEED,
            "generation": {
                "max-examples": MAX_EXAMPLES,
                "deterministic": True,
                "database": "none",  # no example database: the same run every time
            },
            "phases": {
                "examples": {"enabled": True},
                "coverage": {"enabled": True},
                "fuzzing": {"enabled": True},
                "stateful": {"enabled": False},
            },
            "request-timeout": 60,
            "headers": {"Authorization": f"Bearer {fuzz_admin_token}"},
        }
    )
    return schemathesis.openapi.from_url(f"{stack.url}/openapi.json", config=config, timeout=30)


# Every route of the contract, one pytest item each; the last test proves the served document has
# exactly these operations, so that this list excludes nothing.
OPERATIONS = [
    ("POST", "/customers"),
    ("GET", "/customers"),
    ("GET", "/customers/{customer_id}"),
    ("PATCH", "/customers/{customer_id}"),
    ("GET", "/customers/{customer_id}/orders"),
    ("GET", "/customers/{customer_id}/notifications"),
    ("GET", "/customers/{customer_id}/reviews"),
    ("POST", "/products"),
    ("GET", "/products"),
    ("GET", "/products/{product_id}"),
    ("PATCH", "/products/{product_id}"),
    ("POST", "/products/{product_id}/stock"),
    ("GET", "/products/{product_id}/reviews"),
    ("POST", "/products/{product_id}/reviews"),
    ("POST", "/sessions"),
    ("GET", "/sessions/{session_id}"),
    ("PUT", "/sessions/{session_id}/cart/{product_id}"),
    ("DELETE", "/sessions/{session_id}"),
    ("POST", "/orders"),
    ("GET", "/orders/{order_id}"),
    ("GET", "/orders"),
    ("PATCH", "/orders/{order_id}"),
    ("POST", "/orders/{order_id}/cancel"),
]


@pytest.fixture(scope="module")
def http() -> requests.Session:
    return requests.Session()


@pytest.mark.parametrize(("method", "path"), OPERATIONS, ids=[f"{m} {p}" for m, p in OPERATIONS])
def test_no_server_errors_and_responses_match_the_document(
    api_schema: Any, http: requests.Session, fuzz_admin_token: str, method: str, path: str
) -> None:
    """Runs what `@schema.parametrize()` runs for one operation (examples, coverage and fuzzing phases,
    seeded per operation from SEED). `schemathesis.pytest.from_fixture(...).parametrize()` itself cannot be
    used with pytest 9.2: it renames the running item through `node._nodeid`, which pytest 9.2 removed
    (AttributeError); `get_all_tests` is the generator it is built on."""
    from schemathesis.pytest.lazy import get_all_tests

    def check(case: schemathesis.Case) -> None:
        case.call_and_validate(
            session=http, headers={"Authorization": f"Bearer {fuzz_admin_token}"}, checks=CHECKS, timeout=60
        )

    one = api_schema.include(method=method, path=path)
    tests = list(get_all_tests(schema=one, test_func=check, settings=None, given_kwargs=None))
    assert len(tests) == 1, f"{method} {path}: {len(tests)} operations in the document"
    operation, run = tests[0].ok()  # an Err here is an invalid operation definition: a failure too
    assert (operation.method.upper(), operation.path) == (method, path)
    run()


def test_the_document_covers_every_route_of_the_contract(stack: Stack) -> None:
    """So that `nothing excluded` above means the whole API: the served document has every route."""
    document = requests.get(f"{stack.url}/openapi.json", timeout=30).json()
    served = {(method.upper(), path) for path, ops in document["paths"].items() for method in ops}
    contract = set(OPERATIONS)
    assert served == contract, {"undocumented": sorted(contract - served), "not fuzzed": sorted(served - contract)}


# ----- findings of earlier fuzz runs, each kept as a regression test -----


def test_unknown_methods_are_404_not_501(stack: Stack) -> None:
    resp = requests.request("TRACE", f"{stack.url}/products", timeout=30)
    assert resp.status_code == 404, resp.text[:300]
    assert resp.json()["error"]["code"] == "NOT_FOUND"


def test_multipart_without_boundary_is_unsupported_media(stack: Stack) -> None:
    resp = requests.post(
        f"{stack.url}/products",
        headers={"Authorization": f"Bearer {stack.admin_token()}", "Content-Type": "multipart/form-data"},
        data=b'{"name": "n", "category": "c", "price_cents": 1}',
        timeout=30,
    )
    assert resp.status_code == 415, resp.text[:300]
    assert resp.json()["error"]["code"] == "UNSUPPORTED_MEDIA_TYPE"


def test_the_document_describes_the_gateways_401(stack: Stack, api_schema: Any) -> None:
    """API Gateway's JWT authorizer answers `{"message": "Unauthorized"}` (HTTP APIs cannot customise it);
    the document must describe that body for 401, or every 401 breaks the documented schema."""
    operation = api_schema["/products"]["POST"]
    case = operation.Case(body={"name": "n", "category": "c", "price_cents": 1}, media_type="application/json")
    resp = requests.post(f"{stack.url}/products", json=case.body, timeout=30)
    assert resp.status_code == 401
    assert resp.json() == GATEWAY_401
    case.validate_response(resp, checks=[response_schema_conformance])
