"""`make invoke FN=... EVENT=...`: one sample event per function, in a fresh process, as a user runs it."""

from __future__ import annotations

import json
import pathlib
import re
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
SAMPLES = [
    "events/customers/get_customer_200.json",
    "events/products/get_product_200.json",
    "events/orders/post_order_from_session_201.json",
    "events/orders/post_order_out_of_stock_409.json",
    "events/sessions/get_session_200.json",
]

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("invoke-cli")]


def run_invoke(function: str, event: str) -> dict:
    if not (REPO / "cdk.out" / "ShopApi.template.json").exists():
        pytest.fail("cdk.out is missing: `make test` synthesizes it first (make synth)")
    done = subprocess.run(
        [sys.executable, "-m", "local_runtime", "invoke", "--function", function, "--event", event],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.stdout.strip(), done.stderr[-2000:]
    return json.loads(done.stdout)


@pytest.mark.parametrize("event", SAMPLES)
def test_sample_event_answers_the_status_its_name_promises(event):
    function = pathlib.Path(event).parent.name
    expected = int(re.search(r"_(\d{3})\.json$", event).group(1))  # type: ignore[union-attr]
    response = run_invoke(function, event)
    assert response["statusCode"] == expected, response


def test_stream_sample_reports_only_the_poison_record():
    response = run_invoke("order_events", "events/order_events/mixed_batch.json")
    assert len(response["batchItemFailures"]) == 1
