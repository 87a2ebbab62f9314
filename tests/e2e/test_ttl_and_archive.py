"""TTL and the archive over HTTP on the local stack: the TTL emulator (or DynamoDB Local itself) expires items.

The session's short-TTL stack (`short_ttl_stack`: `--env SESSION_TTL_SECONDS=3 --env ARCHIVE_AFTER_DAYS=0`, a
sweep every 0.5 s; shared with test_archived_replay, so every check here looks at this test's own session,
order and objects): an abandoned cart reaches the local bus (its capture, `<data dir>/events.jsonl`) as
CartAbandoned; a cancelled order expires at once, is archived to the local S3 bucket and reads back with
`"archived": true`; Ctrl-C (the fixture's teardown) stops everything and keeps the archive's objects in
`<data dir>/s3/`.
"""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from local_runtime.local_aws import CREDENTIALS, EVENTS_FILE, S3_DIR
from tests.e2e.conftest import ADDRESS, Stack, confirmed, create_product, eventually, expect, place_order

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e-ttl")]


def bus_events(stack: Stack) -> list[dict[str, Any]]:
    path = stack.data_dir / EVENTS_FILE
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def local_aws_endpoint(stack: Stack) -> str:
    line = next(line for line in stack.output().splitlines() if line.startswith("S3, events"))
    return line.split()[2]


def test_expired_sessions_and_finished_orders_leave_as_on_aws(short_ttl_stack: Stack) -> None:
    stack = short_ttl_stack
    api, admin, alice = stack.api, stack.admin_token(), stack.token("ttl-alice")
    product = create_product(api, admin, category="ttl", name="Kettle", price_cents=2500, stock=10)

    # a session whose TTL passes with a line in its cart: CartAbandoned on the bus
    session = expect(api.post("/sessions"), 201)["session_id"]
    expect(api.put(f"/sessions/{session}/cart/{product['product_id']}", json={"quantity": 2}), 200)
    abandoned = eventually(
        lambda: [
            e
            for e in bus_events(stack)
            if e["detail-type"] == "CartAbandoned" and e["detail"].get("session_id") == session
        ],
        timeout=60,
        what="CartAbandoned on the local bus",
    )
    assert abandoned[0]["source"] == "shop.sessions"
    assert abandoned[0]["detail"]["session_id"] == session
    assert abandoned[0]["detail"]["subtotal_cents"] == 5000
    expect(api.get(f"/sessions/{session}"), 404)

    # a cancelled order with ARCHIVE_AFTER_DAYS=0 expires at once: archived, read back from S3
    expect(api.post("/customers", token=alice, json={"email": "ttl-alice@example.com", "name": "Alice"}), 201)
    body = {"lines": [{"product_id": product["product_id"], "quantity": 1}], "shipping_address": ADDRESS}
    order = expect(place_order(api, alice, "ttl-order-1", body), 201)
    confirmed(api, alice, order["order_id"])
    cancelled = expect(api.post(f"/orders/{order['order_id']}/cancel", token=alice), 200)
    assert cancelled["archived"] is False

    def archived() -> dict[str, Any] | None:
        got = api.get(f"/orders/{order['order_id']}", token=alice)
        if got.status_code == 503:  # removed by TTL, the processor is archiving it
            return None
        read = expect(got, 200)
        return read if read["archived"] else None

    read = eventually(archived, timeout=60, what="the cancelled order archived")
    assert (read["status"], read["version"], read["total_cents"]) == ("CANCELLED", 3, 2500)
    assert [h["status"] for h in read["history"]] == ["PENDING", "CONFIRMED", "CANCELLED"]
    assert read["shipping_address"]["city"] == ADDRESS["city"]
    expect(api.get(f"/orders/{order['order_id']}", token=stack.token("ttl-bob")), 404)
    expect(api.get(f"/orders/{order['order_id']}", token=admin), 200)
    listed = expect(api.get("/customers/ttl-alice/orders", token=alice), 200)["items"]
    assert [(o["order_id"], o["status"]) for o in listed] == [(order["order_id"], "CANCELLED")]

    s3 = boto3.session.Session().client("s3", endpoint_url=local_aws_endpoint(stack), **CREDENTIALS)
    (bucket,) = [b["Name"] for b in s3.list_buckets()["Buckets"] if "order-archive" in b["Name"]]
    objects = s3.list_objects_v2(Bucket=bucket, Prefix="orders/")["Contents"]
    (entry,) = [o for o in objects if o["Key"].endswith(f"/{order['order_id']}.json")]  # archived once
    created = order["created_at"]
    assert entry["Key"] == (
        f"orders/year={created[:4]}/month={created[5:7]}/day={created[8:10]}/{order['order_id']}.json"
    )
    text = s3.get_object(Bucket=bucket, Key=entry["Key"])["Body"].read().decode()
    assert text.endswith("\n")
    assert text.count("\n") == 1
    assert json.loads(text)["order_id"] == order["order_id"]

    # checked by short_ttl_stack once Ctrl-C has stopped the stack
    stack.kept_after_stop[stack.data_dir / S3_DIR / bucket / entry["Key"]] = text
