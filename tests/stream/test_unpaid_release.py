"""The unpaid hold's release by order_events on real stream records (DynamoDB Local; docs/payments.md, "Hoarding"):
the MODIFY that takes an order out of PENDING_PAYMENT releases its id and units in one conditional UpdateItem, and
the same records delivered again (a retried batch, `make replay`) or after later changes release nothing. The
hold's own records never reach either stream consumer (the deployed filters)."""

from __future__ import annotations

from typing import Any

import pytest

from infra.settings import PAYMENT_STEP_FILTERS, STREAM_FILTERS
from local_runtime.events import stream_event as lambda_event
from local_runtime.filters import matches_any
from shop import clock, keys, wiring
from shop.models import OrderStatus
from shop.repository import OrderRepository
from shop.repository.store import dynamodb_client, from_item, to_item
from shop.services.orders import RequestedLine
from tests.support.factories import ADDRESS, ALICE, product
from tests.support.streams import StreamReader, only

pytestmark = [pytest.mark.dynamodb_semantics, pytest.mark.filterwarnings("ignore:No application metrics")]


def hold(store: Any) -> tuple[set[str], int]:
    found = store.client.get_item(
        TableName=store.table_name, Key=to_item(keys.unpaid_hold_key(ALICE.sub)), ConsistentRead=True
    )["Item"]
    held = from_item(found)
    return set(held.get("order_ids") or ()), int(held["units"])


def test_leaving_pending_payment_releases_the_order_once_under_replays(store, invoke, wired_fake_payments):
    pid = product(store.table, stock=50)
    service = wiring.order_service(store.table)
    cancelled = service.place(ALICE, address=ADDRESS, lines=[RequestedLine(pid, 2)], idempotency_key="k-1")
    paid = service.place(ALICE, address=ADDRESS, lines=[RequestedLine(pid, 3)], idempotency_key="k-2")
    kept = service.place(ALICE, address=ADDRESS, lines=[RequestedLine(pid, 4)], idempotency_key="k-3")
    reader = StreamReader(store)
    placed = reader.read()
    # The hold's own records (its INSERT, its MODIFYs) pass neither consumer's filter: no invocation for them.
    hold_records = only(placed, entity="CUSTOMER")
    assert hold_records
    assert not any(matches_any(filters, r) for r in hold_records for filters in (STREAM_FILTERS, PAYMENT_STEP_FILTERS))
    assert invoke(lambda_event(placed)) == {"batchItemFailures": []}  # the INSERTs: nothing to release
    assert hold(store) == ({cancelled.order_id, paid.order_id, kept.order_id}, 9)

    service.cancel(ALICE, cancelled.order_id)  # the customer's cancel
    OrderRepository(store.table).change_status(paid, OrderStatus.CONFIRMED, updated_at=clock.iso_now())  # as paid
    moved = reader.read()
    leaving = only(moved, entity="ORDER", event_name="MODIFY")
    assert len(leaving) == 2
    assert all(matches_any(STREAM_FILTERS, record) for record in leaving)  # order_events' deployed filter lets them in
    releases: list[str] = []

    def released(model: Any, params: Any, **_: Any) -> None:
        if keys.UNPAID_HOLD_SK in str(params.get("body")):
            releases.append(model.name)

    client = dynamodb_client()  # the process-wide client the handler writes with
    client.meta.events.register("before-call.dynamodb.*", released)
    try:
        assert invoke(lambda_event(moved)) == {"batchItemFailures": []}
    finally:
        client.meta.events.unregister("before-call.dynamodb.*", released)
    assert hold(store) == ({kept.order_id}, 4)
    assert releases == ["UpdateItem", "UpdateItem"]  # one UpdateItem per order that left PENDING_PAYMENT

    # The batch again (Lambda's retry, make replay), twice, and after a new placement: nothing released twice.
    again = service.place(ALICE, address=ADDRESS, lines=[RequestedLine(pid, 1)], idempotency_key="k-4")
    for _ in range(2):
        assert invoke(lambda_event(moved)) == {"batchItemFailures": []}
    assert hold(store) == ({kept.order_id, again.order_id}, 5)
