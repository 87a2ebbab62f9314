"""EventBridge publishing against moto's events mock: batching, delivery, partial and whole-call failures."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from local_runtime.events import stream_event as lambda_event
from shop import publishing, wiring
from shop.models import OrderStatus
from shop.publishing import Event, EventPublisher
from tests.stream.conftest import dump, emitted_metrics
from tests.stream.test_processor import place
from tests.support.factories import ADMIN, parcel
from tests.support.recording_events import RecordingEvents
from tests.support.streams import StreamReader, only

BUS = "shop-test-bus"
pytestmark = pytest.mark.filterwarnings("ignore:No application metrics")


@pytest.fixture
def bus_queue(moto_store: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A moto bus whose rule forwards every shop event to an SQS queue; returns a reader of that queue."""
    events = boto3.client("events")
    sqs = boto3.client("sqs")
    events.create_event_bus(Name=BUS)
    queue_url = sqs.create_queue(QueueName="shop-events")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    events.put_rule(Name="all", EventBusName=BUS, EventPattern=json.dumps({"source": ["shop.orders", "shop.sessions"]}))
    events.put_targets(Rule="all", EventBusName=BUS, Targets=[{"Id": "queue", "Arn": queue_arn}])
    monkeypatch.setenv("EVENT_BUS_NAME", BUS)

    def received() -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = []
        while True:
            batch = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", [])
            if not batch:
                return messages
            for message in batch:
                body = json.loads(message["Body"])
                messages.append({"type": body["detail-type"], "source": body["source"], **body["detail"]})
                sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])

    return received


def no_failures(response: dict[str, Any]) -> None:
    assert response == {"batchItemFailures": []}


def test_confirmation_and_status_change_reach_the_bus(moto_store, bus_queue, invoke):
    order_id = place(moto_store)
    reader = StreamReader(moto_store)
    no_failures(invoke(lambda_event(reader.read())))
    assert bus_queue() == [], "the INSERT confirms; the confirmation's MODIFY publishes"

    confirmed = reader.read()
    no_failures(invoke(lambda_event(confirmed)))
    [event] = bus_queue()
    assert event["type"] == "OrderConfirmed"
    assert event["source"] == "shop.orders"
    assert (event["id"], event["order_id"], event["customer_id"]) == (f"{order_id}:2", order_id, "alice")
    assert (event["status"], event["previous_status"], event["version"]) == ("CONFIRMED", "PENDING", 2)
    assert (event["total_cents"], event["line_count"]) == (2500, 1)

    wiring.order_service(moto_store.table).change_status(
        ADMIN, order_id, OrderStatus.SHIPPED, expected_version=2, shipment=parcel()
    )
    no_failures(invoke(lambda_event(reader.read())))
    [shipped] = bus_queue()
    assert (shipped["type"], shipped["id"], shipped["previous_status"]) == (
        "OrderStatusChanged",
        f"{order_id}:3",
        "CONFIRMED",
    )

    # At least once: a redelivered record publishes again, with the same id for consumers to dedupe on.
    no_failures(invoke(lambda_event(confirmed)))
    assert [e["id"] for e in bus_queue()] == [f"{order_id}:2"]


class RejectingClient:
    """moto's events client, except that PutEvents rejects the entries `reject` picks (as a throttled bus does)."""

    def __init__(self, reject: Any) -> None:
        self.real = boto3.client("events")
        self.reject = reject
        self.calls: list[int] = []

    def put_events(self, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        self.calls.append(len(Entries))
        accepted = [entry for entry in Entries if not self.reject(entry)]
        real = iter(self.real.put_events(Entries=accepted)["Entries"] if accepted else [])
        results = [
            {"ErrorCode": "ThrottlingException", "ErrorMessage": "rate exceeded"} if self.reject(entry) else next(real)
            for entry in Entries
        ]
        return {"FailedEntryCount": sum("ErrorCode" in r for r in results), "Entries": results}


def test_partial_put_events_failure_reports_that_record_failed(moto_store, bus_queue, invoke, monkeypatch, capsys):
    orders = [place(moto_store, quantity=q) for q in (1, 2, 3)]
    reader = StreamReader(moto_store)
    no_failures(invoke(lambda_event(reader.read())))
    confirmed = reader.read()
    modifies = {r["dynamodb"]["Keys"]["PK"]["S"]: r for r in only(confirmed, entity="ORDER", event_name="MODIFY")}
    unlucky = orders[1]
    client = RejectingClient(lambda entry: json.loads(entry["Detail"])["order_id"] == unlucky)
    monkeypatch.setattr(publishing, "events_client", lambda: client)
    capsys.readouterr()

    response = invoke(lambda_event(confirmed))

    failed_sequence = modifies[f"ORDER#{unlucky}"]["dynamodb"]["SequenceNumber"]
    assert response == {"batchItemFailures": [{"itemIdentifier": failed_sequence}]}
    assert client.calls == [3, 1], "the batch's events go out in one call; the rejected one is tried once more"
    assert sorted(e["order_id"] for e in bus_queue()) == sorted(set(orders) - {unlucky})
    assert emitted_metrics(capsys.readouterr().out).get("RecordsFailed") == 1

    # Lambda redelivers from the failed record on: its table writes are no-ops, its event goes out now.
    before = dump(moto_store)
    monkeypatch.setattr(publishing, "events_client", lambda: client.real)
    retried = [r for r in confirmed if r["dynamodb"]["SequenceNumber"] >= failed_sequence]
    no_failures(invoke(lambda_event(retried)))
    assert dump(moto_store) == before
    ids = [e["id"] for e in bus_queue()]
    assert f"{unlucky}:2" in ids


def test_a_failed_put_events_call_fails_only_the_records_with_events(moto_store, bus_queue, invoke, monkeypatch):
    place(moto_store)
    reader = StreamReader(moto_store)
    no_failures(invoke(lambda_event(reader.read())))
    confirmed = reader.read()

    class Down:
        def put_events(self, **_: Any) -> dict[str, Any]:
            raise ClientError({"Error": {"Code": "InternalException", "Message": "down"}}, "PutEvents")

    monkeypatch.setattr(publishing, "events_client", Down)
    response = invoke(lambda_event(confirmed))
    [modify] = only(confirmed, entity="ORDER", event_name="MODIFY")
    assert response == {"batchItemFailures": [{"itemIdentifier": modify["dynamodb"]["SequenceNumber"]}]}


def test_without_a_bus_nothing_is_published(moto_store, invoke, monkeypatch):
    monkeypatch.delenv("EVENT_BUS_NAME", raising=False)

    def no_client() -> Any:
        raise AssertionError("no EventBridge client without EVENT_BUS_NAME")

    monkeypatch.setattr(publishing, "events_client", no_client)
    place(moto_store)
    reader = StreamReader(moto_store)
    no_failures(invoke(lambda_event(reader.read())))
    no_failures(invoke(lambda_event(reader.read())))


def test_events_go_out_ten_per_call_and_within_the_size_limit():
    fake = RecordingEvents()
    publisher = EventPublisher("bus", client=fake)
    small = [Event("shop.orders", "OrderStatusChanged", {"id": str(i)}) for i in range(23)]
    assert publisher.publish(small) == []
    assert [len(call) for call in fake.calls] == [10, 10, 3]
    assert all(entry["EventBusName"] == "bus" for call in fake.calls for entry in call)

    fake.calls.clear()
    big = [Event("shop.sessions", "CartAbandoned", {"id": str(i), "pad": "x" * 100_000}) for i in range(5)]
    assert publisher.publish(big) == []
    assert [len(call) for call in fake.calls] == [2, 2, 1]


def test_rejected_entries_are_reported_by_position():
    fake = RecordingEvents()
    fake.reject = lambda entry: "InternalFailure" if json.loads(entry["Detail"])["id"] in {"3", "12"} else None
    publisher = EventPublisher("bus", client=fake)
    events = [Event("shop.orders", "OrderStatusChanged", {"id": str(i)}) for i in range(15)]
    assert publisher.publish(events) == [3, 12]
    assert [len(call) for call in fake.calls] == [10, 5, 2], "the two rejected entries are tried once more"


def test_an_entry_rejected_once_is_accepted_on_the_second_try():
    fake = RecordingEvents()
    rejected: set[str] = set()

    def once(entry: dict[str, Any]) -> str | None:
        event_id = json.loads(entry["Detail"])["id"]
        if event_id == "1" and event_id not in rejected:
            rejected.add(event_id)
            return "ThrottlingException"
        return None

    fake.reject = once
    events = [Event("shop.orders", "OrderStatusChanged", {"id": str(i)}) for i in range(3)]
    assert EventPublisher("bus", client=fake).publish(events) == []
    assert [[json.loads(e["Detail"])["id"] for e in call] for call in fake.calls] == [["0", "1", "2"], ["1"]]
