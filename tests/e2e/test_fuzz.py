"""Property-based fuzzing of the running stack with schemathesis, from the gateway's own `/openapi.json`.

The stack is `make dev`'s default configuration, payments through localstripe (conftest's `paying_stack`, shared
with tests/e2e/test_payments_flow.py in group `e2e-payments`), so the version-3 routes are fuzzed live: the
webhook's signature check, an order's payment, checkout creating intents (the document's links lead the
stateful phase from a new category to a product with stock to an order), and the webhook's deliveries are signed
with the stack's secret (tests/e2e/fuzz_hooks.py). docs/testing.md, "The fuzz test's stack", says why this stack
and not `--payments none`'s.

Runs `st run` with the committed `schemathesis.toml` (every setting is there, so a run by hand is the
same run): every operation, every check but `unsupported_method` (an unmatched method is 404, as API
Gateway answers), schema-valid and schema-invalid data in the examples, coverage, fuzzing and
stateful phases, deterministic generation, as admin (the token passes every authorizer and role
check, so requests reach the functions' validation and store code). It must find nothing: no 5xx,
responses as documented, schema-invalid requests refused, and schema-valid requests answered only
2xx, 400 (opaque page tokens), 401, 403, 404, 409 or 428 (412 where If-Match is documented; 422
on the operations whose contract names a 422 for a rule on stored state). The use-after-free
check is off for the reads whose contract answers 200 after a DELETE (an emptied customer cart; an archived
product, its reviews and its sales).

`make test` runs 5 examples per operation in the fuzzing phase (the coverage and stateful phases whole);
`make fuzz` runs the config's 15 (docs/decisions.md, 082).
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import tomllib
from typing import Any

import pytest
import requests
import schemathesis
from schemathesis.specs.openapi.checks import response_schema_conformance

from local_runtime.payments import STATE_FILE
from tests.e2e.conftest import REPO_ROOT, Stack

# the payments stack's group: the longest e2e test runs beside the session stack's tests, on the stack the payment
# flow boots anyway (first, by collection order: the flow's assertions are about its own orders)
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e-payments")]

CONFIG = REPO_ROOT / "schemathesis.toml"
# Examples per operation: 5 in `make test`; `make fuzz` passes "config" (the config's max-examples, 15) or another
# number for a longer run by hand (`make fuzz E2E_FUZZ_MAX_EXAMPLES=100`).
MAX_EXAMPLES = os.environ.get("E2E_FUZZ_MAX_EXAMPLES") or "5"
RUN_TIMEOUT_S = 900
GATEWAY_401 = {"message": "Unauthorized"}
ALLOWED_FOR_VALID_REQUESTS = {"2xx", "400", "401", "403", "404", "409", "428"}
IF_MATCH_OPERATIONS = {("PATCH", "/customers/{customer_id}"), ("PATCH", "/orders/{order_id}")}
# 422 by the contract for a rule on stored state: a 26th cart line, a delta past the maximum stock.
STATE_422_OPERATIONS = {
    ("PUT", "/sessions/{session_id}/cart/{product_id}"),
    ("PUT", "/customers/{customer_id}/cart/{product_id}"),
    ("POST", "/products/{product_id}/stock"),
    # issue 12: a sort that needs (or refuses) a category; a tree deeper than 5 levels, a 101st child
    ("GET", "/products"),
    ("POST", "/categories"),
    ("PATCH", "/categories/{slug}"),
    # issue 13: a return rejected without a reason; a sales range past 366 days (across two parameters)
    ("PATCH", "/orders/{order_id}"),
    ("GET", "/products/{product_id}/sales"),
    # issue 39: exactly one of status and payment (across two parameters)
    ("GET", "/orders"),
    # issue 37: SHIPPING_UNAVAILABLE (the shop's zones); a tax rate's regions of the path's country (path and body)
    ("POST", "/orders"),
    ("POST", "/checkout/quote"),
    ("PUT", "/tax/rates/{country}"),
    ("PUT", "/shipping/zones/{zone_id}"),  # distinct option_ids: no schema compares one field of the items
    # issue 37: a promotion's dates in order (two fields); an edited value its stored kind takes
    ("POST", "/promotions"),
    ("PATCH", "/promotions/{promotion_id}"),
    # a return naming a variant that is none of the order's lines (RETURN_LINES_INVALID)
    ("POST", "/orders/{order_id}/return"),
}
# A customer cart exists as long as its customer's profile: DELETE empties it, and a GET then answers 200
# with an empty cart, as the contract says, not the 404 the use-after-free check expects of a deleted thing.
# An archived product stays readable by id, as the contract says.
NO_USE_AFTER_FREE_OPERATIONS = {
    ("GET", "/customers/{customer_id}/cart"),
    ("GET", "/products/{product_id}"),
    ("GET", "/products/{product_id}/reviews"),
    ("GET", "/products/{product_id}/sales"),
    ("PATCH", "/products/{product_id}"),
    ("POST", "/products/{product_id}/stock"),
    ("POST", "/products/{product_id}/reviews"),
}
# A move to a parent that does not exist is 404 naming the parent, not the moved category.
# A merge into a customer cart ends the session it merged.
NO_AVAILABILITY_CHECK_OPERATIONS = {("PATCH", "/categories/{slug}"), ("GET", "/sessions/{session_id}")}


@pytest.fixture(scope="module")
def api_schema(paying_stack: Stack) -> Any:
    # Loading discovers schemathesis.toml, whose bearer setting names this variable.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SCHEMATHESIS_BEARER_TOKEN", paying_stack.admin_token("e2e-fuzz-admin"))
        return schemathesis.openapi.from_url(f"{paying_stack.url}/openapi.json", timeout=30)


def st_command(url: str, report_dir: pathlib.Path) -> list[str]:
    cmd = [sys.executable, "-m", "schemathesis.cli", "--config-file", str(CONFIG), "--no-color", "run", url]
    cmd += ["--report", "junit", "--report-dir", str(report_dir)]
    if MAX_EXAMPLES != "config":
        cmd += ["--max-examples", MAX_EXAMPLES]
    return cmd


def test_schemathesis_finds_nothing(paying_stack: Stack, tmp_path: pathlib.Path) -> None:
    env = {**os.environ, "SCHEMATHESIS_BEARER_TOKEN": paying_stack.admin_token("e2e-fuzz-admin")}
    # tests/e2e/fuzz_hooks.py signs the webhook's deliveries with this stack's secret
    env["SHOP_FUZZ_WEBHOOK_SECRET"] = json.loads((paying_stack.data_dir / STATE_FILE).read_text())["webhook_secret"]
    run = subprocess.run(
        st_command(f"{paying_stack.url}/openapi.json", tmp_path),
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    output = run.stdout + run.stderr
    assert run.returncode == 0, f"schemathesis found something (exit {run.returncode}):\n{output[-20000:]}"
    every = len(OPERATIONS)
    assert f"Selected: {every}/{every}" in output, output[-3000:]
    assert f"Tested: {every}" in output, output[-3000:]


def test_the_config_runs_every_check_and_allows_only_the_contracts_statuses(monkeypatch: pytest.MonkeyPatch) -> None:
    """So that the run above cannot be weakened by an edit of the config file without this failing."""
    monkeypatch.setenv("SCHEMATHESIS_BEARER_TOKEN", "unused")
    project = schemathesis.Config.from_path(CONFIG).projects.get_default()
    checks = project.checks
    disabled = {name for name in type(checks).__slots__ if not name.startswith("_") and not _enabled(checks, name)}
    # max_response_time: no limit set
    assert disabled == {"unsupported_method", "max_response_time"}
    assert set(checks.positive_data_acceptance.expected_statuses) == ALLOWED_FOR_VALID_REQUESTS
    phases = project.phases
    assert all(phase.enabled for phase in (phases.examples, phases.coverage, phases.fuzzing, phases.stateful))
    assert project.generation.modes == [schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE]
    assert project.hooks == "tests/e2e/fuzz_hooks.py"  # the webhook's deliveries signed (else all stop at 400)
    operations = tomllib.loads(CONFIG.read_text())["operations"]
    # Each block names its operations whole ("METHOD /path"): schemathesis ORs a block's include filters, so a
    # method and a path given apart would select every operation of that method.
    assert all(set(operation) == {"include-name", "checks"} for operation in operations)
    widened = {
        tuple(name.split(" ", 1)): set(operation["checks"]["positive_data_acceptance"]["expected-statuses"])
        - ALLOWED_FOR_VALID_REQUESTS
        for operation in operations
        if "positive_data_acceptance" in operation["checks"]
        for name in operation["include-name"]
    }
    switched_off = {
        (*name.split(" ", 1), check_name)
        for operation in operations
        for check_name, check in operation["checks"].items()
        if check.get("enabled", True) is False
        for name in operation["include-name"]
    }
    assert switched_off == {(method, path, "use_after_free") for method, path in NO_USE_AFTER_FREE_OPERATIONS} | {
        (method, path, "ensure_resource_availability") for method, path in NO_AVAILABILITY_CHECK_OPERATIONS
    }
    assert widened == {
        key: ({"412"} if key in IF_MATCH_OPERATIONS else set()) | ({"422"} if key in STATE_422_OPERATIONS else set())
        for key in IF_MATCH_OPERATIONS | STATE_422_OPERATIONS
    }


def _enabled(checks: Any, name: str) -> bool:
    return bool(getattr(getattr(checks, name), "enabled", True))


# Every route of the contract; the test below proves the served document has exactly these operations,
# so that the run above, which selects the whole document, excludes nothing.
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
    ("GET", "/admin/alerts"),
    ("GET", "/customers/{customer_id}/cart"),
    ("PUT", "/customers/{customer_id}/cart/{product_id}"),
    ("POST", "/customers/{customer_id}/cart/merge"),
    ("DELETE", "/customers/{customer_id}/cart"),
    ("POST", "/categories"),
    ("GET", "/categories"),
    ("GET", "/categories/{slug}"),
    ("PATCH", "/categories/{slug}"),
    ("DELETE", "/products/{product_id}"),
    ("POST", "/products/{product_id}/stock-shards"),
    ("POST", "/orders/{order_id}/return"),
    ("GET", "/products/{product_id}/sales"),
    ("GET", "/sales/top"),
    # issue 25: an order's payment, and Stripe's webhook
    ("GET", "/orders/{order_id}/payment"),
    ("POST", "/webhooks/stripe"),
    # issue 37: the order's total
    ("POST", "/checkout/quote"),
    ("GET", "/shipping/options"),
    ("PUT", "/shipping/zones/{zone_id}"),
    ("PUT", "/tax/rates/{country}"),
    ("POST", "/promotions"),
    ("GET", "/promotions"),
    ("GET", "/promotions/{promotion_id}"),
    ("PATCH", "/promotions/{promotion_id}"),
]


def test_the_document_covers_every_route_of_the_contract(paying_stack: Stack) -> None:
    """So that `nothing excluded` above means the whole API: the served document has every route."""
    document = requests.get(f"{paying_stack.url}/openapi.json", timeout=30).json()
    served = {(method.upper(), path) for path, ops in document["paths"].items() for method in ops}
    contract = set(OPERATIONS)
    assert served == contract, {"undocumented": sorted(contract - served), "not fuzzed": sorted(served - contract)}


# ----- findings of earlier fuzz runs, each kept as a regression test -----


def test_the_fuzzed_stack_takes_payments(paying_stack: Stack) -> None:
    """So that the run above fuzzes the version-3 routes live: with payments off the webhook is 404."""
    resp = requests.post(
        f"{paying_stack.url}/webhooks/stripe", data=b"{}", headers={"Content-Type": "application/json"}, timeout=30
    )
    assert resp.status_code == 400, resp.text[:300]
    assert resp.json()["error"]["code"] == "WEBHOOK_SIGNATURE_INVALID"


def test_unknown_methods_are_404_not_501(paying_stack: Stack) -> None:
    resp = requests.request("TRACE", f"{paying_stack.url}/products", timeout=30)
    assert resp.status_code == 404, resp.text[:300]
    assert resp.json()["error"]["code"] == "NOT_FOUND"


def test_multipart_without_boundary_is_unsupported_media(paying_stack: Stack) -> None:
    resp = requests.post(
        f"{paying_stack.url}/products",
        headers={"Authorization": f"Bearer {paying_stack.admin_token()}", "Content-Type": "multipart/form-data"},
        data=b'{"name": "n", "category": "c", "price_cents": 1}',
        timeout=30,
    )
    assert resp.status_code == 415, resp.text[:300]
    assert resp.json()["error"]["code"] == "UNSUPPORTED_MEDIA_TYPE"


def test_the_document_describes_the_gateways_401(paying_stack: Stack, api_schema: Any) -> None:
    """API Gateway's JWT authorizer answers `{"message": "Unauthorized"}` (HTTP APIs cannot customise it);
    the document must describe that body for 401, or every 401 breaks the documented schema."""
    operation = api_schema["/products"]["POST"]
    case = operation.Case(body={"name": "n", "category": "c", "price_cents": 1}, media_type="application/json")
    resp = requests.post(f"{paying_stack.url}/products", json=case.body, timeout=30)
    assert resp.status_code == 401
    assert resp.json() == GATEWAY_401
    case.validate_response(resp, checks=[response_schema_conformance])
