"""Each function's IAM grant (infra.settings.DYNAMODB_ACTIONS) is exactly what its code calls.

The API functions run every sample event of events/<function>/; order_events confirms, ships and
records a real order from the stream. A botocore hook records each DynamoDB operation, the item
actions inside each transaction (IAM authorizes a transaction item by item) and whether GSI1 was
queried (and which operations reached the index, which the table), and the partition key of every item written. A function calling something it was not
granted fails here, not on AWS; a grant no code uses fails too, so the roles cannot drift wider than
the code; a function whose writes IAM limits to some partition keys (dynamodb:LeadingKeys) writes
no other.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

import pytest

from infra.settings import ALL_FUNCTIONS, DYNAMODB_ACTIONS, FunctionSpec, iam_actions
from tests.functions.apigw import REPO, invoke

TRANSACTION_ITEM_ACTIONS = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
}


WRITES = {"PutItem", "UpdateItem", "DeleteItem"}


class Recorder:
    def __init__(self) -> None:
        self.operations: set[str] = set()
        self.uses_index = False
        self.on_index: set[str] = set()  # the operations that named GSI1
        self.on_table: set[str] = set()  # the others, with the item actions of their transactions
        self.written_keys: set[str] = set()  # partition keys of the items written

    def __call__(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        self.operations.add(model.name)
        if params.get("IndexName"):
            self.uses_index = True
            self.on_index.add(model.name)
        else:
            self.on_table.add(model.name)
        if model.name in WRITES:
            self._written(params)
        for item in params.get("TransactItems", []):
            self.operations.update(TRANSACTION_ITEM_ACTIONS[kind] for kind in item)
            self.on_table.update(TRANSACTION_ITEM_ACTIONS[kind] for kind in item)
            for kind, action in item.items():
                if kind != "ConditionCheck":
                    self._written(action)
        for requests in params.get("RequestItems", {}).values():
            for request in requests if model.name == "BatchWriteItem" else []:
                for action in request.values():
                    self._written(action)

    def _written(self, action: dict[str, Any]) -> None:
        key = action.get("Item") or action.get("Key") or {}
        self.written_keys.add(key["PK"]["S"])

    def iam(self) -> list[str]:
        return iam_actions(tuple(sorted(self.operations)))


def record(client: Any) -> Recorder:
    recorder = Recorder()
    client.meta.events.register("provide-client-params.dynamodb.*", recorder)
    return recorder


def spec_of(function: str) -> FunctionSpec:
    return next(spec for spec in ALL_FUNCTIONS if spec.name == function)


def granted(function: str) -> tuple[list[str], bool]:
    return iam_actions(DYNAMODB_ACTIONS[function]), spec_of(function).uses_index


def granted_where(spec: FunctionSpec) -> tuple[list[str], list[str]]:
    """The IAM actions granted on the table and on GSI1 (infra.constructs.functions.table_statements)."""
    on_table = iam_actions(tuple(op for op in spec.dynamodb_actions if op not in spec.index_only))
    on_index = iam_actions(spec.dynamodb_actions) if spec.uses_index else iam_actions(spec.index_only)
    return on_table, on_index


def outside(keys: set[str], patterns: tuple[str, ...]) -> set[str]:
    """The written partition keys IAM's dynamodb:LeadingKeys patterns would refuse (none when unlimited)."""
    return {key for key in keys if patterns and not any(fnmatchcase(key, p) for p in patterns)}


def fresh_seeded_table(client: Any, monkeypatch: pytest.MonkeyPatch, number: int) -> None:
    """Each sample event assumes the seed as it is, so each one gets its own table: the first of the process holds
    events/seed.json written through the repositories, every later one is a copy of moto's table object right after
    (tests/support/moto_tables.py; a copy through moto's BatchWriteItem cost most of these tests' CPU)."""
    from local_runtime.dynamodb_local import create_table
    from local_runtime.sample_data import load_seed
    from shop.config import settings
    from shop.repository import Table
    from tests.support import moto_tables

    name = f"privilege-{number}"
    monkeypatch.setenv("TABLE_NAME", name)
    settings.cache_clear()

    def seeded(table_name: str) -> None:
        create_table(client, table_name, native_ttl=False)  # expiry on the test's clock: the TTL emulator's
        load_seed(Table(client, table_name))

    moto_tables.fresh_table(client, name, "least-privilege-seed", seeded)


@dataclass
class SampleRun:
    """What an API function's sample events did, each on its own freshly seeded table."""

    recorder: Recorder  # their DynamoDB calls (not the seeding's)
    key_reads: list[str]  # "sign" or "verify": each read of the pagination key


# Each function's samples run once, for the two tests below that read what they did (the grant's and the key's)
_sample_runs: dict[str, SampleRun] = {}


def sample_run(function: str, moto_api: Any, monkeypatch: pytest.MonkeyPatch) -> SampleRun:
    """Every sample event of events/<function>/ on the first asking test's moto mock, recording both."""
    if function in _sample_runs:
        return _sample_runs[function]
    from shop import pagination_keys

    used: list[str] = []
    signing, verify = pagination_keys.signing_key, pagination_keys.verify
    monkeypatch.setattr(pagination_keys, "signing_key", lambda: used.append("sign") or signing())
    monkeypatch.setattr(pagination_keys, "verify", lambda matches: used.append("verify") or verify(matches))
    recorder = Recorder()
    for number, path in enumerate(sorted((REPO / "events" / function).glob("*.json"))):
        fresh_seeded_table(moto_api.client, monkeypatch, number)
        moto_api.client.meta.events.register("provide-client-params.dynamodb.*", recorder)
        try:
            invoke(function, json.loads(path.read_text()))
        finally:
            moto_api.client.meta.events.unregister("provide-client-params.dynamodb.*", recorder)
    _sample_runs[function] = SampleRun(recorder, used)
    return _sample_runs[function]


@pytest.mark.parametrize("function", ["customers", "products", "orders", "sessions"])
def test_api_function_grants_match_its_calls(moto_api, monkeypatch, function):
    recorder = sample_run(function, moto_api, monkeypatch).recorder
    actions, uses_index = granted(function)
    assert recorder.iam() == actions, f"code calls {recorder.iam()}, index: {recorder.uses_index}"
    assert recorder.uses_index == uses_index
    assert recorder.written_keys, "the sample events write something"
    assert outside(recorder.written_keys, spec_of(function).write_leading_keys) == set()


def test_the_leading_keys_check_catches_a_foreign_write() -> None:
    assert outside({"SESSION#s1", "PRODUCT#p1"}, ("SESSION#*",)) == {"PRODUCT#p1"}
    assert outside({"PRODUCT#p1"}, ()) == set()


@pytest.mark.dynamodb_semantics
def test_order_events_grants_match_its_calls(store, monkeypatch):
    import time

    from functions.order_events.handler import handler
    from local_runtime.events import stream_event as lambda_event
    from local_runtime.ttl import TtlDeletions, TtlEmulator
    from shop import wiring
    from shop.models import OrderStatus
    from shop.repository.order_archive import ArchiveBucket
    from shop.repository.store import dynamodb_client
    from shop.services.orders import RequestedLine
    from tests.stream.conftest import order_events_context as FakeContext
    from tests.support.factories import ADDRESS, ADMIN, ALICE, category, parcel, product
    from tests.support.streams import StreamReader

    orders = wiring.order_service(store.table)
    order = orders.place(ALICE, address=ADDRESS, lines=[RequestedLine(product(store.table), 1)])
    stream = StreamReader(store, ttl_deletions=TtlDeletions())
    recorder = record(dynamodb_client())  # the handler's client; the test's own calls use store.client
    handler(lambda_event(stream.read()), FakeContext())  # INSERT: confirm and record
    handler(lambda_event(stream.read()), FakeContext())  # the confirmation's MODIFY
    orders.change_status(ADMIN, order.order_id, OrderStatus.SHIPPED, expected_version=2, shipment=parcel())
    handler(lambda_event(stream.read()), FakeContext())  # a status change
    assert orders.get(ALICE, order.order_id).history[-1].status is OrderStatus.SHIPPED
    tree = wiring.category_service(store.table)  # a category move's steps (issue 12)
    category(store.table, "beans", parent="tools")
    category(store.table, "espresso", parent="beans")
    category(store.table, "tea")
    wiring.catalog_service(store.table).create(
        ADMIN, name="Ristretto", categories=["espresso"], price_cents=1, description=None, stock=1
    )
    tree.update(ADMIN, "beans", {"parent": "tea"})
    for _ in range(6):
        records = stream.read()
        if records:
            handler(lambda_event(records), FakeContext())
    assert not tree.detail("beans").moving
    orders.change_status(ADMIN, order.order_id, OrderStatus.DELIVERED, expected_version=3)
    handler(lambda_event(stream.read()), FakeContext())
    # years later its TTL passes: archived (the object's write is S3's, stubbed; the table calls are real)
    monkeypatch.setattr(ArchiveBucket, "put", lambda self, order, archived_at: "orders/test.json")
    ttl = TtlEmulator(
        store.client,
        store.table_name,
        attribute="expires_at",
        key_names=("PK", "SK"),
        deletions=stream.ttl_deletions,
        now=lambda: time.time() + 400 * 86_400,
    )
    assert ttl.sweep() >= 1
    handler(lambda_event(stream.read()), FakeContext())
    marker = {"PK": {"S": f"ORDER#{order.order_id}"}, "SK": {"S": "ARCHIVED"}}
    assert "Item" in store.client.get_item(TableName=store.table_name, Key=marker)
    actions, uses_index = granted("order_events")
    assert recorder.iam() == actions, f"code calls {recorder.iam()}, index: {recorder.uses_index}"
    assert recorder.uses_index == uses_index


@pytest.mark.parametrize("function", ["customers", "products", "orders", "sessions"])
def test_a_function_that_reads_the_pagination_key_is_granted_it(moto_api, monkeypatch, function):
    """Every sample event: a function that signs or reads a next token has FunctionSpec.paginates
    (which grants secretsmanager:GetSecretValue on the key and passes PAGINATION_SECRET_ARN)."""
    used = sample_run(function, moto_api, monkeypatch).key_reads
    spec = next(spec for spec in ALL_FUNCTIONS if spec.name == function)
    assert spec.paginates or not used, f"{function} reads the pagination key but is not granted it"


def test_exactly_the_functions_serving_next_tokens_are_granted_the_key():
    """A route with a next_token parameter (openapi.json) is served by a function with FunctionSpec.paginates."""
    from shop.http_api.routes import ROUTES

    document = json.loads((REPO / "openapi.json").read_text())
    paginated = {
        f"{method.upper()} {path}"
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
        if isinstance(operation, dict) and any(p.get("name") == "next_token" for p in operation.get("parameters", []))
    }
    serving = {route.function for route in ROUTES if route.route_key in paginated}
    assert serving == {spec.name for spec in ALL_FUNCTIONS if spec.paginates}


def test_payment_steps_grants_match_its_calls(local_store, monkeypatch):
    """payment_steps on DynamoDB Local's stream: a capture at SHIPPED, a refund at RETURNED, the cancel after a
    failed payment and an expiry by TTL; then, on its schedule, the windows' sweep expiring an unpaid order whose TTL
    removal has not come. Its writes stay on orders and stock (its LeadingKeys), its Query on GSI1 (its grant there
    alone), every other call on the table."""
    import json
    import sys
    import time
    from datetime import timedelta

    from functions.payment_steps.handler import handler
    from local_runtime.events import stream_event
    from shop import clock, publishing, wiring
    from shop.models import OrderStatus
    from shop.repository.store import dynamodb_client
    from tests.stream.conftest import order_events_context as FakeContext
    from tests.support.factories import ADMIN, ALICE, parcel, product
    from tests.support.fake_payments import FakePayments
    from tests.support.recording_events import RecordingEvents
    from tests.support.streams import StreamReader
    from tests.support.unpaid_orders import AUTHORISED, FAILED, WINDOW_S, event, place_unpaid

    monkeypatch.setenv("EVENT_BUS_NAME", "shop-test-bus")
    monkeypatch.setattr(publishing, "events_client", RecordingEvents)
    publishing.reset_client()
    fake = FakePayments()
    monkeypatch.setattr(wiring, "payments", lambda: fake)
    table = local_store.table
    pid = product(table, name="Kettle", price_cents=2500, stock=9)
    paid, failed, unpaid = (place_unpaid(table, fake, [(pid, "Kettle", 2500, 1)]) for _ in range(3))
    reader = StreamReader(local_store)
    reader.read()  # the placements: nothing for the steps
    rules, orders = wiring.payment_service(table, provider=fake), wiring.order_service(table)
    fake.authorise(paid.intent_id)
    rules.apply_event(event(AUTHORISED, paid))  # the webhook's (the payments function's grant)
    rules.apply_event(event(FAILED, failed))
    recorder = record(dynamodb_client())  # the handler's client

    def steps() -> None:
        records: list[dict[str, Any]] = []
        for _ in range(50):  # DynamoDB Local can show a change's record a moment after it
            records += reader.read()
            if records:
                break
            time.sleep(0.1)
        assert handler(stream_event(records), FakeContext()) == {"batchItemFailures": []}

    steps()  # the confirmation (skipped) and the failure (cancel)
    orders.change_status(ADMIN, paid.order_id, OrderStatus.SHIPPED, expected_version=2, shipment=parcel())
    steps()  # capture
    orders.change_status(ADMIN, paid.order_id, OrderStatus.DELIVERED, expected_version=3)
    orders.request_return(ALICE, paid.order_id, "too loud")
    orders.change_status(ADMIN, paid.order_id, OrderStatus.RETURNED, expected_version=5)
    steps()  # refund
    assert [op for op, _ in fake.calls].count("capture") == 1
    # The schedule: the unpaid orders whose window closed, swept by the handler on EventBridge's event on the
    # function's table (expiry: the order and the restock in one transaction)
    later = clock.now() + timedelta(seconds=WINDOW_S + 5)
    steps_function = sys.modules["functions.payment_steps.handler"]  # its rules, built at its import
    monkeypatch.setattr(steps_function, "payment_rules", wiring.payment_service(provider=fake, now=lambda: later))
    scheduled = json.loads((REPO / "events" / "payment_steps" / "payment_window_sweep.json").read_text())
    assert handler(scheduled, FakeContext()) == {"swept": 2}  # a failed attempt leaves its order waiting too
    for waiting in (unpaid, failed):
        assert wiring.order_service(table).get(ADMIN, waiting.order_id).status is OrderStatus.EXPIRED
    actions, uses_index = iam_actions(DYNAMODB_ACTIONS["payment_steps"]), True
    assert recorder.iam() == actions, f"code calls {recorder.iam()}, index: {recorder.uses_index}"
    assert recorder.uses_index == uses_index
    from infra.settings import PAYMENT_STEPS_FUNCTION

    # exactly its grants where they are granted: Query on GSI1 alone, the rest on the table alone
    on_table, on_index = granted_where(PAYMENT_STEPS_FUNCTION)
    assert on_index == ["dynamodb:Query"]
    assert iam_actions(tuple(sorted(recorder.on_index))) == on_index, recorder.on_index
    assert iam_actions(tuple(sorted(recorder.on_table))) == on_table, recorder.on_table
    assert outside(recorder.written_keys, PAYMENT_STEPS_FUNCTION.write_leading_keys) == set()


def test_payments_grants_match_its_calls(moto_api, monkeypatch):
    """The webhook's function through its route: an authorisation and its duplicate, a failed attempt, a cancelled
    intent (the order failed, its stock back), an authorisation of a cancelled (dead) order (its intent cancelled
    and recorded), an unknown order and an ignored type."""
    import sys
    import time

    from shop import config, wiring
    from tests.functions.apigw import API, call
    from tests.functions.generate_payment_events import signature
    from tests.support.factories import ALICE, product
    from tests.support.fake_payments import FakePayments
    from tests.support.unpaid_orders import place_unpaid

    secret = "whsec_least_privilege"
    monkeypatch.setenv("PAYMENTS", "stripe")
    monkeypatch.setenv("STRIPE_SECRET_KEY", "sk_test_least_privilege")
    monkeypatch.setenv("STRIPE_WEBHOOK_SECRET", secret)
    config.payment_settings.cache_clear()
    try:
        API.handler("payments")
        fake = FakePayments()
        monkeypatch.setattr(
            sys.modules["_in_process_payments_handler"],
            "payment_rules",
            wiring.payment_service(moto_api.table, provider=fake),
        )
        pid = product(moto_api.table, name="Kettle", price_cents=2500, stock=9)
        paid, failed, late = (place_unpaid(moto_api.table, fake, [(pid, "Kettle", 2500, 1)]) for _ in range(3))
        fake.authorise(paid.intent_id)
        wiring.order_service(moto_api.table).cancel(ALICE, late.order_id)  # dead before its card is authorised
        fake.authorise(late.intent_id)
        recorder = record(moto_api.client)

        def deliver(event_id: str, event_type: str, intent_id: str, order_id: str) -> None:
            obj = {"id": intent_id, "object": "payment_intent", "metadata": {"order_id": order_id}}
            body = json.dumps(
                {"id": event_id, "object": "event", "type": event_type, "created": 1, "data": {"object": obj}}
            )
            headers = {"Stripe-Signature": signature(body, secret, int(time.time()))}
            assert call("POST", "/webhooks/stripe", raw_body=body, headers=headers).status == 200

        deliver("evt_lp_1", "payment_intent.amount_capturable_updated", paid.intent_id, paid.order_id)
        deliver("evt_lp_1", "payment_intent.amount_capturable_updated", paid.intent_id, paid.order_id)  # again
        deliver("evt_lp_2", "payment_intent.payment_failed", failed.intent_id, failed.order_id)  # an attempt
        fake.cancel(failed.intent_id, idempotency_key="the-customer-gave-up")
        deliver("evt_lp_3", "payment_intent.canceled", failed.intent_id, failed.order_id)  # PAYMENT_FAILED
        deliver("evt_lp_4", "payment_intent.succeeded", late.intent_id, late.order_id)  # a dead order's
        deliver("evt_lp_5", "payment_intent.succeeded", "pi_nobody", "no-such-order")
        deliver("evt_lp_6", "customer.created", "cus_1", "")
        assert ("cancel", f"shop-order-{late.order_id}-cancel") in fake.calls
        actions, uses_index = granted("payments")
        assert recorder.iam() == actions, f"code calls {recorder.iam()}, index: {recorder.uses_index}"
        assert recorder.uses_index == uses_index
        assert outside(recorder.written_keys, spec_of("payments").write_leading_keys) == set()
    finally:
        config.payment_settings.cache_clear()
