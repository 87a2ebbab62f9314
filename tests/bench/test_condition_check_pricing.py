"""The bench's write model prices a transaction's ConditionChecks as DynamoDB bills them (issue 26): a transactional
write of the checked item, 2 WRU per started KB, an absent item counted as 1 KB; DynamoDB Local reports none.

The pricing runs on DynamoDB Local's real stream records, as `make bench` does; the arithmetic and the heat's
view of it need no store."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from bench import heat
from bench.capacity import capacity
from bench.hooks import Call, Measurement, Recorder, write_keys
from bench.model import KB, Accountant, condition_check_units

Write = Callable[[Any, str], Any]


def key(pk: str) -> dict[str, Any]:
    return {"PK": {"S": pk}, "SK": {"S": "ITEM"}}


def put(table: str, pk: str, padding: int = 0) -> dict[str, Any]:
    return {"Put": {"TableName": table, "Item": {**key(pk), "pad": {"S": "x" * padding}}}}


def check_absent(table: str, pk: str) -> dict[str, Any]:
    return {"ConditionCheck": {"TableName": table, "Key": key(pk), "ConditionExpression": "attribute_not_exists(PK)"}}


def check_present(table: str, pk: str) -> dict[str, Any]:
    return {"ConditionCheck": {"TableName": table, "Key": key(pk), "ConditionExpression": "attribute_exists(PK)"}}


@pytest.fixture
def priced(store: Any) -> Iterator[Callable[..., Measurement]]:
    """Runs writes through the recorder and prices them with the bench's Accountant, as a bench step does (and
    attributes the step a second time, finding no new record: nothing is priced twice)."""
    recorder = Recorder().install()
    accountant = Accountant(store.client, store.streams, store.table_name)

    def run(*writes: Write) -> Measurement:
        accountant.skip()
        with recorder.measure() as measurement:
            for write in writes:
                with contextlib.suppress(ClientError):  # a refused write is measured and priced like any other
                    write(store.client, store.table_name)
        accountant.attribute(measurement)
        checks = [list(call.checked_items) for call in measurement.calls]
        accountant.attribute(Measurement(calls=[c for c in measurement.calls if not c.error]))
        assert [call.checked_items for call in measurement.calls] == checks
        return measurement

    try:
        yield run
    finally:
        recorder.uninstall()


def transaction(*actions: Callable[[str], dict[str, Any]]) -> Write:
    return lambda client, table: client.transact_write_items(TransactItems=[action(table) for action in actions])


def test_a_condition_check_is_a_transactional_write_of_the_checked_items_size() -> None:
    assert condition_check_units(None) == 2  # absent: counted as 1 KB
    assert condition_check_units(0) == 2
    assert condition_check_units(KB) == 2
    assert condition_check_units(KB + 1) == 4
    assert condition_check_units(1536) == 4
    assert condition_check_units(3 * KB + 1) == 8


def test_a_put_and_a_check_on_an_absent_item_cost_two_plus_two(priced: Callable[..., Measurement]) -> None:
    measured = priced(transaction(lambda t: put(t, "A"), lambda t: check_absent(t, "NOT-THERE")))

    (call,) = measured.calls  # the bench's own read of the checked item is not among the counted calls
    assert call.operation == "TransactWriteItems"
    assert call.modelled_wru == 4
    assert call.checked_items == [{"key": "NOT-THERE|ITEM", "pk": "NOT-THERE", "item_bytes": None, "wru": 2}]
    assert call.write_keys == ["A|ITEM"]  # a check writes nothing: no stream record is attributed to it
    assert call.capacity == 2  # DynamoDB Local reports the Put alone
    assert call.as_dict()["condition_checks"] == [{"key": "NOT-THERE|ITEM", "item_bytes": None, "wru": 2}]


def test_a_check_on_a_one_and_a_half_kb_item_costs_four(store: Any, priced: Callable[..., Measurement]) -> None:
    store.client.put_item(TableName=store.table_name, Item={**key("BIG"), "pad": {"S": "x" * 1500}})  # unmeasured

    measured = priced(transaction(lambda t: put(t, "B"), lambda t: check_present(t, "BIG")))

    (call,) = measured.calls
    (checked,) = call.checked_items
    assert KB < checked["item_bytes"] <= 2 * KB
    assert checked["wru"] == 4
    assert call.modelled_wru == 2 + 4


def test_a_check_is_priced_at_the_size_the_item_had_when_checked(
    store: Any, priced: Callable[..., Measurement]
) -> None:
    """A later call of the same step that rewrites the checked item does not change what the check cost."""
    store.client.put_item(TableName=store.table_name, Item={**key("BIG"), "pad": {"S": "x" * 1500}})

    def shrink(client: Any, table: str) -> None:
        client.put_item(TableName=table, Item=key("BIG"))

    measured = priced(transaction(lambda t: put(t, "C"), lambda t: check_present(t, "BIG")), shrink)

    checked, rewritten = measured.calls
    assert [item["wru"] for item in checked.checked_items] == [4]  # 1.5 KB when checked, tiny once read back
    assert checked.modelled_wru == 6
    assert rewritten.modelled_wru == 2  # the put's own record, max(old 1.5 KB, new): not taken by the check


def test_a_refused_transaction_and_a_refused_write_are_priced_as_before(
    store: Any, priced: Callable[..., Measurement]
) -> None:
    def refused_put(client: Any, table: str) -> None:
        client.put_item(TableName=table, Item=key("D"), ConditionExpression="attribute_exists(PK)")

    measured = priced(transaction(lambda t: put(t, "E"), lambda t: check_present(t, "NOT-THERE")), refused_put)

    cancelled, refused = measured.calls
    assert cancelled.error == "TransactionCanceledException"
    assert (cancelled.modelled_wru, cancelled.checked_items) == (0, [])
    assert refused.error == "ConditionalCheckFailedException"
    assert refused.modelled_wru == 1
    for pk in ("D", "E"):  # nothing was written
        assert "Item" not in store.client.get_item(TableName=store.table_name, Key=key(pk), ConsistentRead=True)


def test_write_keys_leave_out_the_checked_keys() -> None:
    params = {
        "TransactItems": [
            {"Put": {"TableName": "t", "Item": {**key("A"), "n": {"N": "1"}}}},
            {"ConditionCheck": {"TableName": "t", "Key": key("B"), "ConditionExpression": "attribute_not_exists(PK)"}},
            {"Update": {"TableName": "t", "Key": key("C"), "UpdateExpression": "SET n = :n"}},
            {"Delete": {"TableName": "t", "Key": key("D")}},
        ]
    }
    assert write_keys("TransactWriteItems", params) == ["A|ITEM", "C|ITEM", "D|ITEM"]


def a_checked_transaction(checks: list[int | None]) -> Call:
    call = Call(
        operation="TransactWriteItems",
        index=None,
        idempotency=False,
        capacity=2.0,
        table_capacity=2.0,
        gsi_capacity=0.0,
        count=None,
        scanned=None,
        error=None,
        transact_items=1 + len(checks),
        started=0.0,
        seconds=0.0,
        write_keys=["ORDER#o1|NOTIFICATION"],
    )
    call.written_items.append({"pk": "ORDER#o1", "table_wru": 2, "gsi1": []})
    for size in checks:
        units = condition_check_units(size)
        call.checked_items.append({"key": "ORDER#o1|ARCHIVED", "pk": "ORDER#o1", "item_bytes": size, "wru": units})
    call.modelled_wru = 2 + sum(item["wru"] for item in call.checked_items)
    return call


def test_each_part_of_the_life_counts_and_lists_its_checks() -> None:
    cap = capacity({"confirmation": Measurement(calls=[a_checked_transaction([None, 1536])])}, {})

    life = cap["order_life"]
    part = life["parts"]["confirmation"]
    assert part["wcu"] == 2 + 2 + 4
    assert part["wcu_reported_by_dynamodb_local"] == 2
    assert part["condition_checks"] == {
        "count": 2,
        "wru": 6,
        "items": [
            {"key": "ORDER#o1|ARCHIVED", "item_bytes": None, "wru": 2},
            {"key": "ORDER#o1|ARCHIVED", "item_bytes": 1536, "wru": 4},
        ],
    }
    assert life["condition_checks"] == {"count": 2, "wru": 6}
    assert life["total_wcu_without_condition_checks"] == 2


def test_the_heat_model_bills_a_check_on_the_checked_key_and_shares_none_of_local_s_figure_onto_it() -> None:
    call = a_checked_transaction([None])

    found = heat.touches(call)

    assert [(t.space, t.pk, t.units, t.local, t.check) for t in found] == [
        (heat.TABLE, "ORDER#o1", 2.0, 2.0, False),  # the written item takes all DynamoDB Local reported
        (heat.TABLE, "ORDER#o1", 2.0, 0.0, True),  # the check: billed, not reported
    ]
    sample = heat.Sample("order", calls=[call], binding={"o1": "order"})
    profile = heat.Profile.of([sample])
    assert profile.units["order"][(heat.TABLE, "ORDER#<order>", "write")] == 4.0
    predicted = profile.predict({"order": 3})
    assert (predicted["billed_wcu"], predicted["billed_condition_check_wcu"], predicted["table_wcu"]) == (12, 6, 6)
