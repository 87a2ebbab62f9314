"""Injected throttling/5xx answer 503 with Retry-After and leave nothing half written; real concurrency on DynamoDB Local."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from botocore.awsrequest import AWSResponse

from local_runtime.sample_data import read_seed
from tests.functions.apigw import ADMIN, ALICE, call

ADDRESS = {"name": "A", "line1": "1 Main", "city": "X", "postal_code": "1", "country": "US"}
THROTTLE = (400, "ThrottlingException", "Rate of requests exceeds the allowed throughput.")
SERVER_ERROR = (500, "InternalServerError", "Internal server error")


class _Raw:
    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any):
        yield self._body


class Fault:
    """A before-send hook answering chosen operations with an AWS error (every retry included)."""

    def __init__(self, client: Any, operations: set[str] | None, status: int, code: str, message: str) -> None:
        self.client, self.operations, self.calls = client, operations, 0
        self.status, self.code, self.message = status, code, message

    def __call__(self, request: Any, **kwargs: Any) -> AWSResponse | None:
        target = request.headers.get("X-Amz-Target", b"")
        operation = (target.decode() if isinstance(target, bytes) else target).rsplit(".", 1)[-1]
        if self.operations is not None and operation not in self.operations:
            return None
        self.calls += 1
        # botocore emits before-send to every handler and keeps the first response; moto's handler
        # (registered after this one) would still execute the call. Pointing the request elsewhere
        # makes moto ignore it, so the injected failure really is the only outcome.
        request.url = "https://fault-injected.invalid/"
        body = f'{{"__type":"com.amazonaws.dynamodb.v20120810#{self.code}","message":"{self.message}"}}'.encode()
        headers = {"x-amzn-ErrorType": self.code, "Content-Type": "application/x-amz-json-1.0"}
        return AWSResponse(request.url, self.status, headers, _Raw(body))

    def __enter__(self) -> Fault:
        self.client.meta.events.register_first("before-send.dynamodb", self)
        return self

    def __exit__(self, *exc: object) -> None:
        self.client.meta.events.unregister("before-send.dynamodb", self)


def order(key: str, product: str = "prod-keyboard", quantity: int = 1, claims: dict[str, Any] = ALICE):
    body = {"lines": [{"product_id": product, "quantity": quantity}], "shipping_address": ADDRESS}
    return call("POST", "/orders", claims=claims, headers={"Idempotency-Key": key}, body=body)


def order_as_a_client(key: str, claims: dict[str, Any], attempts: int = 5):
    """An order sent again with its key while the answer is 503 (retry later), as a client does: on an
    overloaded machine 50 threads in one process can outrun an invocation's time budget."""
    reply = order(key, claims=claims)
    for _ in range(attempts - 1):
        if reply.status != 503:
            break
        reply = order(key, claims=claims)
    return reply


def raw_items(store: Any, pk_prefix: str, sk: str | None = None) -> list[dict[str, Any]]:
    """Items by key prefix, read with a Scan: a test-only check of what is really in the table."""
    items = store.client.scan(TableName=store.table_name, ConsistentRead=True)["Items"]
    return [i for i in items if i["PK"]["S"].startswith(pk_prefix) and (sk is None or i["SK"]["S"] == sk)]


def orders_in(store: Any) -> int:
    return len(raw_items(store, "ORDER#", "ORDER"))


SEEDED = len(read_seed()["orders"])  # the orders events/seed.json holds


@pytest.mark.dynamodb_semantics
@pytest.mark.parametrize("fault", [THROTTLE, SERVER_ERROR], ids=["throttled", "5xx"])
def test_placement_outlasting_retries_is_503_and_writes_nothing(api, fault):
    orders_before = orders_in(api)
    with Fault(api.client, {"TransactWriteItems"}, *fault) as injected:
        reply = order("fault-1")
    assert injected.calls == 3  # the client's standard retry mode: 3 attempts, then give up
    assert (reply.status, reply.code, reply.headers.get("retry-after")) == (503, "SERVICE_UNAVAILABLE", "1")
    assert fault[2] not in str(reply.body)
    assert orders_in(api) == orders_before
    assert call("GET", "/products/prod-keyboard").body["stock"] == 25
    assert raw_items(api, "IDEMPOTENCY#") == []  # the failed attempt released its key
    assert order("fault-1").status == 201  # and a retry with the same key places the order


@pytest.mark.parametrize("fault", [THROTTLE, SERVER_ERROR], ids=["throttled", "5xx"])
def test_every_route_family_answers_503_when_the_store_is_down(moto_api, fault):
    with Fault(moto_api.client, None, *fault):
        replies = [
            call("GET", "/products/prod-keyboard"),
            call("GET", "/customers/alice", claims=ALICE),
            call("POST", "/sessions"),
            call("GET", "/orders/00-alice-pending", claims=ALICE),
            call("POST", "/products/prod-keyboard/stock", claims=ADMIN, body={"delta": 1}),
            order("down"),
        ]
    assert [(r.status, r.code, r.headers.get("retry-after")) for r in replies] == [
        (503, "SERVICE_UNAVAILABLE", "1")
    ] * 6


def test_idempotency_store_throttled_is_503(moto_api):
    with Fault(moto_api.client, {"PutItem"}, *THROTTLE):
        reply = order("idem-down")
    assert (reply.status, reply.code) == (503, "SERVICE_UNAVAILABLE")
    assert orders_in(moto_api) == SEEDED


def test_cancel_throttled_is_503_and_keeps_stock(moto_api):
    with Fault(moto_api.client, {"TransactWriteItems"}, *THROTTLE):
        reply = call("POST", "/orders/00-alice-pending/cancel", claims=ALICE)
    assert reply.status == 503
    assert call("GET", "/orders/00-alice-pending", claims=ALICE).body["status"] == "PENDING"
    assert call("GET", "/products/prod-keyboard").body["stock"] == 25


@pytest.mark.integration
def test_fifty_parallel_orders_for_ten_in_stock(local_api):
    call("POST", "/products/prod-keyboard/stock", claims=ADMIN, body={"delta": -15})
    assert call("GET", "/products/prod-keyboard").body["stock"] == 10
    with ThreadPoolExecutor(max_workers=50) as pool:
        replies = list(pool.map(lambda i: order_as_a_client(f"race-{i}", {"sub": f"buyer-{i}"}), range(50)))
    statuses = sorted(r.status for r in replies)
    assert statuses.count(201) == 10, [(r.status, r.code) for r in replies]
    assert statuses.count(409) == 40
    assert {r.code for r in replies if r.status == 409} == {"OUT_OF_STOCK"}
    assert call("GET", "/products/prod-keyboard").body["stock"] == 0
    assert orders_in(local_api) == SEEDED + 10


@pytest.mark.integration
def test_twenty_parallel_repeats_of_one_key_place_one_order(local_api):
    with ThreadPoolExecutor(max_workers=20) as pool:
        replies = list(pool.map(lambda _: order("one-key", quantity=2), range(20)))
    assert {r.status for r in replies} == {201}, [(r.status, r.code) for r in replies]
    assert len({r.body["order_id"] for r in replies}) == 1
    assert orders_in(local_api) == SEEDED + 1
    assert call("GET", "/products/prod-keyboard").body["stock"] == 23


@pytest.mark.integration
def test_concurrent_status_changes_with_one_version_one_wins(local_api):
    def patch(status: str):
        return call(
            "PATCH", "/orders/00-alice-pending", claims=ADMIN, headers={"If-Match": '"1"'}, body={"status": status}
        )

    targets = ["CONFIRMED", "CANCELLED"] * 5
    with ThreadPoolExecutor(max_workers=10) as pool:
        replies = list(pool.map(patch, targets))
    # One change wins; a request for the change that won is answered as done (it may be a re-send).
    winner = {r.body["status"] for r in replies if r.status == 200}
    assert len(winner) == 1
    for target, reply in zip(targets, replies, strict=True):
        assert reply.status == (200 if target in winner else 412)
    assert {r.body["version"] for r in replies if r.status == 200} == {2}
