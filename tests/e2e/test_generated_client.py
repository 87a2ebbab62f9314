"""An SDK generated from the served document drives the local stack, as a client developer's would (issue 27).

`openapi-python-client` (pinned in requirements/dev.in) generates a client from the gateway's `/openapi.json`,
offline (no post hooks: it would run ruff; proxies pointed nowhere, so any network call fails the run). A
generator warning, or a request body it could only type as `Any`, fails the test; then a short flow runs
through the generated, typed calls: category and product as admin, profile and order as a customer, the
order read back with its ETag, its status changed with If-Match, and a stale If-Match parsed as the 412
error body the document declares.
"""

from __future__ import annotations

import datetime
import importlib
import json
import os
import pathlib
import re
import subprocess
import sys
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest
import requests

from tests.e2e.conftest import Stack, eventually

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e")]

PACKAGE = "shop_sdk_e2e"
GENERATOR = pathlib.Path(sys.executable).with_name("openapi-python-client")
# The generator runs `ruff` on its output by default: no post hooks keeps it to this one program.
CONFIG = "post_hooks: []\n"
NOWHERE = "http://127.0.0.1:9"
GENERATE_TIMEOUT_S = 120


def generate(document: pathlib.Path, out: pathlib.Path) -> subprocess.CompletedProcess[str]:
    config = out.parent / "openapi-python-client.yaml"
    config.write_text(CONFIG)
    offline = {"HTTP_PROXY": NOWHERE, "HTTPS_PROXY": NOWHERE, "http_proxy": NOWHERE, "https_proxy": NOWHERE}
    command = [str(GENERATOR), "generate", "--path", str(document), "--config", str(config)]
    return subprocess.run(
        [*command, "--output-path", str(out), "--meta", "none", "--overwrite"],
        env={**os.environ, **offline, "NO_PROXY": ""},
        capture_output=True,
        text=True,
        timeout=GENERATE_TIMEOUT_S,
        check=False,
    )


@pytest.fixture(scope="module")
def generated(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[pathlib.Path]:
    root = tmp_path_factory.mktemp("sdk")
    document = root / "openapi.json"
    document.write_text(json.dumps(requests.get(f"{stack.url}/openapi.json", timeout=30).json()))
    run = generate(document, root / PACKAGE)
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    assert "warning" not in output.lower(), output
    sys.path.insert(0, str(root))
    try:
        yield root / PACKAGE
    finally:
        sys.path.remove(str(root))
        for name in [m for m in sys.modules if m == PACKAGE or m.startswith(f"{PACKAGE}.")]:
            del sys.modules[name]


def sdk(module: str) -> ModuleType:
    return importlib.import_module(f"{PACKAGE}.{module}")


def test_every_request_body_gets_a_type(generated: pathlib.Path) -> None:
    bodies = {
        path.stem: match.group(1)
        for path in (generated / "api").rglob("*.py")
        if (match := re.search(r"^\s+body: (.+),$", path.read_text(), re.MULTILINE))
    }
    assert bodies["place_order"] == "OrderFromCustomerCart | OrderFromLines | OrderFromSession"
    assert bodies["create_product"] == "ProductInCategories | ProductInCategory"
    untyped = {name: body for name, body in bodies.items() if re.search(r"\bAny\b|dict\[", body)}
    assert untyped == {}
    operations = json.loads((generated.parent / "openapi.json").read_text())["paths"]
    with_body = sum("requestBody" in op for ops in operations.values() for op in ops.values())
    assert len(bodies) == with_body


def test_the_generated_client_passes_mypy_strict(generated: pathlib.Path) -> None:
    """A client developer's type checker accepts the SDK as generated (a schema property named like its schema,
    `cart` on `Cart`, once made the generator shadow the property with the instance it builds)."""
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", PACKAGE],
        cwd=generated.parent,
        capture_output=True,
        text=True,
        timeout=GENERATE_TIMEOUT_S,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_flow_through_the_generated_client(stack: Stack, generated: pathlib.Path, uid: str) -> None:
    client_module, models = sdk("client"), sdk("models")
    admin = client_module.AuthenticatedClient(base_url=stack.url, token=stack.admin_token())
    customer_id = f"sdk-{uid}"
    customer = client_module.AuthenticatedClient(base_url=stack.url, token=stack.token(customer_id))

    slug = f"sdk-{uid}"
    made = sdk("api.categories.create_category").sync_detailed(
        client=admin, body=models.CategoryIn(slug=slug, name="SDK")
    )
    assert made.status_code == 201, made.content
    product = _ok(
        sdk("api.products.create_product").sync_detailed(
            client=admin, body=models.ProductInCategory(name="Lamp", price_cents=2599, category=slug, stock=5)
        ),
        201,
    )
    assert isinstance(product, models.Product)
    assert isinstance(product.created_at, datetime.datetime)

    profile = models.CustomerIn(email=f"{customer_id}@example.com", name="Ada")
    _ok(sdk("api.customers.create_customer").sync_detailed(client=customer, body=profile), 201)

    address = models.AddressIn(
        name="Ada", line1="1 Main St", city="London", postal_code="SW1", country=models.AddressInCountry("GB")
    )
    order_body = models.OrderFromLines(
        lines=[models.OrderLineIn(product_id=product.product_id, quantity=2)], shipping_address=address
    )
    placed = _ok(
        sdk("api.orders.place_order").sync_detailed(client=customer, body=order_body, idempotency_key=f"sdk-{uid}"),
        201,
    )
    assert isinstance(placed, models.PlacedOrder)  # the order, with `payment` when the shop takes it (issue 25)
    assert placed.total_cents == 2 * 2599

    get_order = sdk("api.orders.get_order")

    def confirmed() -> Any:
        read = get_order.sync_detailed(placed.order_id, client=admin)
        return read if _ok(read, 200).status == models.OrderStatus.CONFIRMED else None

    read = eventually(confirmed, what="the order CONFIRMED by the stream processor")
    etag = read.headers["ETag"]
    assert etag == f'"{read.parsed.version}"'

    change = sdk("api.orders.change_order_status")
    shipped = models.OrderStatusPatch(status=models.OrderStatus.SHIPPED, carrier="UPS", tracking_number="1Z999")
    changed = _ok(change.sync_detailed(placed.order_id, client=admin, body=shipped, if_match=etag), 200)
    assert changed.status == models.OrderStatus.SHIPPED

    stale = change.sync_detailed(
        placed.order_id,
        client=admin,
        body=models.OrderStatusPatch(status=models.OrderStatus.DELIVERED),
        if_match=etag,
    )
    assert stale.status_code == 412
    assert isinstance(stale.parsed, models.ErrorResponse)
    assert stale.parsed.error.code == "VERSION_MISMATCH"


def _ok(response: Any, status: int) -> Any:
    assert response.status_code == status, response.content
    return response.parsed


def test_the_functions_log_to_files_and_the_banner_stays_last(stack: Stack, generated: pathlib.Path) -> None:
    """issue 27: after the requests above, the terminal still ends with the banner; the logs are in files."""
    logs = stack.data_dir / "logs"
    orders = [json.loads(line) for line in (logs / "orders.log").read_text().splitlines() if line.startswith("{")]
    assert any("OrdersPlaced" in record and "_aws" in record for record in orders)  # EMF, as CloudWatch gets it
    processed = (logs / "order_events.log").read_text().splitlines()
    assert any(line.startswith("{") and json.loads(line).get("level") == "INFO" for line in processed)
    every = "".join(path.read_text() for path in logs.glob("*.log"))
    assert "No application metrics to publish" not in every
    printed = stack.output().rstrip().splitlines()
    assert "local stack ready" in printed[-1], printed[-5:]
