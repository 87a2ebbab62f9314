"""TypeScript types generated from openapi.json type every body and the required If-Match (issue 27).

`openapi-typescript` (pinned in package.json) generates them offline (proxies pointed nowhere), and
`tsc --strict` (pinned too) compiles a client's use of them: typed bodies, a body without a source of lines
refused, If-Match required where a missing one is 428.
"""

from __future__ import annotations

import os
import pathlib
import subprocess

from tests.functions.apigw import REPO

BIN = REPO / "node_modules" / ".bin"
NOWHERE = "http://127.0.0.1:9"
USE = """
import type { components, operations } from "./shop";

type OrderBody = operations["placeOrder"]["requestBody"]["content"]["application/json"];
type ProductBody = operations["createProduct"]["requestBody"]["content"]["application/json"];
const address: components["schemas"]["AddressIn"] = {
  name: "A", line1: "1 Main St", city: "X", postal_code: "1", country: "US",
};
export const fromLines: OrderBody = { lines: [{ product_id: "p", quantity: 1 }], shipping_address: address };
export const fromCart: OrderBody = { cart: "customer", shipping_address: address };
export const fromSession: OrderBody = { session_id: "s", shipping_address: address };
export const product: ProductBody = { name: "Lamp", price_cents: 100, category: "lights" };
export const filed: ProductBody = { name: "Lamp", price_cents: 100, categories: ["lights", "desk"], stock: 2 };
// @ts-expect-error an order needs a source of its lines
export const noSource: OrderBody = { shipping_address: address };
// @ts-expect-error a product needs a category
export const nowhere: ProductBody = { name: "Lamp", price_cents: 100 };
export const ifMatch: operations["changeOrderStatus"]["parameters"]["header"] = { "if-match": '"3"' };
// @ts-expect-error If-Match is required where a missing one is 428
export const noIfMatch: operations["changeOrderStatus"]["parameters"]["header"] = {};
"""


def run(*command: str, cwd: pathlib.Path) -> subprocess.CompletedProcess[str]:
    offline = {"HTTP_PROXY": NOWHERE, "HTTPS_PROXY": NOWHERE, "http_proxy": NOWHERE, "https_proxy": NOWHERE}
    return subprocess.run(
        command, cwd=cwd, env={**os.environ, **offline}, capture_output=True, text=True, timeout=300, check=False
    )


def test_generated_typescript_types_compile_a_clients_use(tmp_path: pathlib.Path):
    # A field with a default is optional in a request ("stock": 0); openapi-typescript 7 makes it required
    # unless told not to (its own option, for clients that send bodies).
    generated = run(
        str(BIN / "openapi-typescript"),
        str(REPO / "openapi.json"),
        "--default-non-nullable=false",
        "-o",
        "shop.d.ts",
        cwd=tmp_path,
    )
    output = generated.stdout + generated.stderr
    assert generated.returncode == 0, output
    assert "warn" not in output.lower(), output
    types = (tmp_path / "shop.d.ts").read_text()
    assert 'OrderIn: components["schemas"]["OrderFromLines"] | components["schemas"]["OrderFromSession"]' in types
    (tmp_path / "use.ts").write_text(USE)
    compiled = run(
        str(BIN / "tsc"), "--noEmit", "--strict", "--target", "es2020", "--module", "es2020", "use.ts", cwd=tmp_path
    )
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
