"""Issue 23's item 2 as an operator meets it on the local stack: a record re-driven with `replay` after the
order was archived changes nothing.

Order 2 x 1500 over HTTP, cancel it, let the stack archive it (`ARCHIVE_AFTER_DAYS=0`); then the cancellation's
MODIFY, as the table's stream holds it, is put in the failure store the way Lambda's on-failure destination
writes a given-up batch, and `python -m local_runtime replay` (what `make replay` runs) re-drives it. Before the
fix: sales -2 units / -3000 cents and `HISTORY#` / `SALES#` orphans beside the `ARCHIVED` marker.
"""

from __future__ import annotations

import datetime as dt
import json
import pathlib
import subprocess
import sys
from typing import Any

import boto3
import pytest

from local_runtime import failures
from local_runtime.events import stream_event
from local_runtime.local_aws import CREDENTIALS
from local_runtime.streams import StreamReader
from tests.e2e.conftest import (
    ADDRESS,
    REPO_ROOT,
    Api,
    Stack,
    confirmed,
    create_product,
    eventually,
    expect,
    place_order,
    stack_env,
)

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e-ttl")]


def dynamodb_of(output: str) -> tuple[str, str]:
    """The stack's DynamoDB Local endpoint and table name, as `dev` prints them."""
    line = next(line for line in output.splitlines() if line.startswith("DynamoDB "))
    words = line.split()
    return words[1], words[words.index("table") + 1]


def sales(api: Api, admin: str, product_id: str, day: str) -> list[tuple[int, int]]:
    page = expect(api.get(f"/products/{product_id}/sales", token=admin, params={"from": day, "to": day}), 200)
    return [(d["units"], d["revenue_cents"]) for d in page["days"]]


def order_items(client: Any, table: str, order_id: str) -> list[str]:
    found = client.query(
        TableName=table,
        KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues={":pk": {"S": f"ORDER#{order_id}"}},
        ConsistentRead=True,
    )["Items"]
    return [item["SK"]["S"] for item in found]


def test_a_cancellation_replayed_after_archival_changes_nothing(short_ttl_stack: Stack, cdk_out: pathlib.Path) -> None:
    stack = short_ttl_stack  # shared with test_ttl_and_archive: own product, customer and order
    api, admin, alice = stack.api, stack.admin_token(), stack.token("replay-alice")
    product = create_product(api, admin, category="replay", name="Lamp", price_cents=1500, stock=10)
    body = {"lines": [{"product_id": product["product_id"], "quantity": 2}], "shipping_address": ADDRESS}
    order_id = expect(place_order(api, alice, "replay-order-1", body), 201)["order_id"]
    placed = expect(confirmed(api, alice, order_id), 200)
    confirmed_on = (placed.get("confirmed_at") or placed["created_at"])[:10]
    # The confirmation's history entry is in (its sales are counted in the same transaction) before the cancel:
    # with no archival grace, TTL may otherwise remove the order item before the stream wrote any item beside
    # it, and a read in that moment finds an empty partition, which is how an order that never existed looks.
    eventually(
        lambda: sales(api, admin, product["product_id"], confirmed_on) == [(2, 3000)],
        what="the confirmation's history entry and sales",
    )
    expect(api.post(f"/orders/{order_id}/cancel", token=alice), 200)

    def archived() -> dict[str, Any] | None:
        got = api.get(f"/orders/{order_id}", token=admin)
        if got.status_code == 503:  # removed by TTL, being archived
            return None
        read = expect(got, 200)
        return read if read["archived"] else None

    before = eventually(archived, timeout=60, what="the cancelled order archived")
    day = (before.get("confirmed_at") or before["created_at"])[:10]
    assert sales(api, admin, product["product_id"], day) == [(0, 0)]

    endpoint, table = dynamodb_of(stack.output())
    client = boto3.session.Session().client("dynamodb", endpoint_url=endpoint, **CREDENTIALS)
    streams = boto3.session.Session().client("dynamodbstreams", endpoint_url=endpoint, **CREDENTIALS)
    assert order_items(client, table, order_id) == ["ARCHIVED"]
    records = StreamReader(client, streams, table).read()
    (cancellation,) = [
        r
        for r in records
        if r["eventName"] == "MODIFY"
        and r["dynamodb"]["Keys"]["SK"]["S"] == "ORDER"
        and r["dynamodb"]["NewImage"].get("order_id", {}).get("S") == order_id
        and r["dynamodb"]["NewImage"]["status"]["S"] == "CANCELLED"
    ]
    store = failures.DirectoryStore(stack.data_dir / failures.LOCAL_DIR)
    key = failures.object_key("OrderEventsMapping", "shard-replay", dt.datetime.now(dt.UTC))
    store.write(
        key,
        {
            "requestContext": {"condition": "RetryAttemptsExhausted", "approximateInvokeCount": 6},
            "payload": json.dumps(stream_event([cancellation])),
        },
    )

    # What `make replay` runs while `make dev` is up, without FUNCTION_ENV: replay takes the variables `dev` was
    # started with (SHORT_TTL: no archival grace, so the record is not fresh and is guarded) from its data dir.
    command = ["replay", "--data-dir", str(stack.data_dir), "--cdk-out", str(cdk_out), "--endpoint", endpoint]
    replay = subprocess.run(
        [sys.executable, "-m", "local_runtime", *command],
        cwd=REPO_ROOT,
        env=stack_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert f"replayed  {key}" in replay.stdout

    assert sales(api, admin, product["product_id"], day) == [(0, 0)]  # not -2 units / -3000 cents
    assert order_items(client, table, order_id) == ["ARCHIVED"]  # no HISTORY#, no SALES# beside it
    assert expect(api.get(f"/orders/{order_id}", token=admin), 200) == before
