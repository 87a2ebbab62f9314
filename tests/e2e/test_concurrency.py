"""Races through the gateway: the oversell race and the idempotent repeat, with real concurrent HTTP clients.

The local stack runs up to 4 warm workers per function (Lambda-like execution environments in their
own processes), so these requests really overlap in the store.
"""

from __future__ import annotations

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import requests

from tests.e2e.conftest import (
    Api,
    Stack,
    confirmed,
    create_product,
    error_code,
    expect,
    order_lines,
    place_order,
)

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e")]


def status_body(status: str) -> dict[str, str]:
    """A PATCH body for `status` (SHIPPED carries its carrier and tracking number)."""
    if status == "SHIPPED":
        return {"status": status, "carrier": "DHL", "tracking_number": "JD0146000062"}
    return {"status": status}


def all_at_once(n: int, fn: Any) -> list[requests.Response]:
    """Run fn(i) for i in 0..n-1 on n threads released together by a barrier (bounded waits)."""
    barrier = threading.Barrier(n, timeout=30)

    def run(i: int) -> requests.Response:
        barrier.wait()
        return fn(i)

    with ThreadPoolExecutor(max_workers=n) as pool:
        return list(pool.map(run, range(n), timeout=180))


def test_oversell_race_exactly_the_stock_succeeds(stack: Stack, stack_api: Api, uid: str) -> None:
    admin = stack.admin_token()
    pid = create_product(stack_api, admin, category=f"e2e-race-{uid}", name="Scarce", price_cents=1999, stock=5)[
        "product_id"
    ]
    tokens = [stack.token(f"e2e-race-{uid}-{i}") for i in range(20)]

    def order(i: int) -> requests.Response:
        return place_order(stack_api, tokens[i], f"race-{uid}-{i}", order_lines(pid))

    responses = all_at_once(20, order)
    outcomes = Counter((r.status_code, error_code(r)) for r in responses)
    assert outcomes == {(201, None): 5, (409, "OUT_OF_STOCK"): 15}, [r.text[:200] for r in responses]
    for r in responses:
        if r.status_code == 409:
            assert pid in str(r.json()["error"].get("details")), r.text  # names the product
    assert expect(stack_api.get(f"/products/{pid}"), 200)["stock"] == 0
    winners = {r.json()["order_id"] for r in responses if r.status_code == 201}
    assert len(winners) == 5
    # every winner's order exists, belongs to its customer, and gets confirmed by the stream processor
    for i, r in enumerate(responses):
        if r.status_code == 201:
            confirmed(stack_api, tokens[i], r.json()["order_id"])
    # a winner repeating its key and body gets its first answer again, no new order...
    first = next(i for i, r in enumerate(responses) if r.status_code == 201)
    assert expect(order(first), 201)["order_id"] == responses[first].json()["order_id"]
    late = place_order(stack_api, tokens[first], f"race-{uid}-late", order_lines(pid))
    expect(late, 409, "OUT_OF_STOCK")  # ...and a new key is refused
    assert expect(stack_api.get(f"/products/{pid}"), 200)["stock"] == 0


def test_idempotent_repeat_concurrent_same_key_one_order(stack: Stack, stack_api: Api, uid: str) -> None:
    admin = stack.admin_token()
    pid = create_product(stack_api, admin, category=f"e2e-idem-{uid}", name="Once", price_cents=700, stock=10)[
        "product_id"
    ]
    customer_id = f"e2e-idem-{uid}"
    customer = stack.token(customer_id)
    key = f"idem-{uid}"
    body = order_lines(pid, 2)

    responses = all_at_once(10, lambda _i: place_order(stack_api, customer, key, body))
    statuses = Counter(r.status_code for r in responses)
    assert statuses == {201: 10}, [f"{r.status_code} {r.text[:200]}" for r in responses]
    order_ids = {r.json()["order_id"] for r in responses}
    assert len(order_ids) == 1, order_ids
    [order_id] = order_ids
    assert {r.json()["total_cents"] for r in responses} == {1400}

    listed = expect(stack_api.get(f"/customers/{customer_id}/orders", token=customer), 200)["items"]
    assert [o["order_id"] for o in listed] == [order_id]
    assert expect(stack_api.get(f"/products/{pid}"), 200)["stock"] == 8  # taken once, not ten times

    # a later repeat (sequential) still answers the first response
    again = expect(place_order(stack_api, customer, key, body), 201)
    assert again["order_id"] == order_id

    # the same key with a different body is refused, and places nothing
    expect(place_order(stack_api, customer, key, order_lines(pid, 3)), 409, "IDEMPOTENCY_KEY_REUSED")
    assert expect(stack_api.get(f"/products/{pid}"), 200)["stock"] == 8
    listed = expect(stack_api.get(f"/customers/{customer_id}/orders", token=customer), 200)["items"]
    assert [o["order_id"] for o in listed] == [order_id]

    # keys belong to their customer: another customer's identical key and body is a new order
    other_customer = stack.token(f"e2e-idem-other-{uid}")
    theirs = expect(place_order(stack_api, other_customer, key, body), 201)
    assert theirs["order_id"] != order_id
    assert expect(stack_api.get(f"/products/{pid}"), 200)["stock"] == 6

    # a missing Idempotency-Key is a validation error
    expect(stack_api.post("/orders", token=customer, json=body), 422, "VALIDATION_ERROR")


def test_lost_update_concurrent_status_changes_one_wins(stack: Stack, stack_api: Api, uid: str) -> None:
    """Five admins move the same order with the same If-Match at once, to SHIPPED or to CANCELLED: one change
    wins; the requests for it are 200 (each may be a re-send of the one that won), the others 412."""
    admin = stack.admin_token()
    pid = create_product(stack_api, admin, category=f"e2e-lost-{uid}", name="Contended", price_cents=100, stock=3)[
        "product_id"
    ]
    customer = stack.token(f"e2e-lost-{uid}")
    oid = expect(place_order(stack_api, customer, f"lost-{uid}", order_lines(pid)), 201)["order_id"]
    etag = confirmed(stack_api, admin, oid).headers["ETag"]
    targets = ["SHIPPED", "CANCELLED", "SHIPPED", "CANCELLED", "SHIPPED"]
    responses = all_at_once(
        5,
        lambda i: stack_api.patch(
            f"/orders/{oid}", token=admin, headers={"If-Match": etag}, json=status_body(targets[i])
        ),
    )
    final = expect(stack_api.get(f"/orders/{oid}", token=admin), 200)
    assert final["version"] == int(etag.strip('"')) + 1
    outcomes = [(r.status_code, error_code(r)) for r in responses]
    expected = [(200, None) if target == final["status"] else (412, "VERSION_MISMATCH") for target in targets]
    assert outcomes == expected, [r.text[:200] for r in responses]


def test_concurrent_status_changes_with_different_details_answer_only_what_is_stored(
    stack: Stack, stack_api: Api, uid: str
) -> None:
    """Four admins ship one order with one If-Match, each with its own tracking number: one 200 (ETag "3"),
    whose shipment is the stored one, three 412. Then the customer sends four return requests with their own
    reasons: one 200 with the stored reason, three 409 INVALID_TRANSITION (no longer DELIVERED)."""
    admin = stack.admin_token()
    pid = create_product(stack_api, admin, category=f"e2e-details-{uid}", name="Shipped", price_cents=100, stock=3)[
        "product_id"
    ]
    customer = stack.token(f"e2e-details-{uid}")
    oid = expect(place_order(stack_api, customer, f"details-{uid}", order_lines(pid)), 201)["order_id"]
    etag = confirmed(stack_api, admin, oid).headers["ETag"]

    def ship(i: int) -> requests.Response:
        body = {"status": "SHIPPED", "carrier": f"carrier-{i}", "tracking_number": f"TRACK-{uid}-{i}"}
        return stack_api.patch(f"/orders/{oid}", token=admin, headers={"If-Match": etag}, json=body)

    shipped = all_at_once(4, ship)
    stored = expect(stack_api.get(f"/orders/{oid}", token=admin), 200)
    outcomes = Counter((r.status_code, error_code(r)) for r in shipped)
    assert outcomes == {(200, None): 1, (412, "VERSION_MISMATCH"): 3}, [r.text[:200] for r in shipped]
    (winner,) = [r for r in shipped if r.status_code == 200]
    assert winner.headers["ETag"] == '"3"'
    assert winner.json()["shipment"] == stored["shipment"]
    assert stored["history"][-1]["tracking_number"] == winner.json()["shipment"]["tracking_number"]

    delivered = stack_api.patch(
        f"/orders/{oid}", token=admin, headers={"If-Match": '"3"'}, json={"status": "DELIVERED"}
    )
    expect(delivered, 200)
    returns = all_at_once(
        4, lambda i: stack_api.post(f"/orders/{oid}/return", token=customer, json={"reason": f"r{i}"})
    )
    stored = expect(stack_api.get(f"/orders/{oid}", token=customer), 200)
    outcomes = Counter((r.status_code, error_code(r)) for r in returns)
    assert outcomes == {(200, None): 1, (409, "INVALID_TRANSITION"): 3}, [r.text[:200] for r in returns]
    (winner,) = [r for r in returns if r.status_code == 200]
    assert (stored["status"], stored["version"]) == ("RETURN_REQUESTED", 5)
    assert winner.json()["history"][-1]["reason"] == stored["history"][-1]["reason"]
