"""The stream adapter on plain Lambda records: every shape the processor meets, read without a table."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from shop.models import OrderStatus
from shop.repository import stream_records
from shop.repository.stream_records import MalformedRecord, OrderImage, SessionImage, StreamRecord

ORDER_ID = "01JDQ7SZ00000000000000ORD1"
SESSION_ID = "q3Jx9c2V0mZ8kT1wYb7LhR4nF6sD5aGe"
TTL_IDENTITY = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}


def order_image(status: str, version: int) -> dict[str, Any]:
    return {
        "PK": {"S": f"ORDER#{ORDER_ID}"},
        "SK": {"S": "ORDER"},
        "entity": {"S": "ORDER"},
        "order_id": {"S": ORDER_ID},
        "customer_id": {"S": "alice"},
        "status": {"S": status},
        "version": {"N": str(version)},
        "total_cents": {"N": "2500"},
        "created_at": {"S": "2026-01-01T00:00:00.000Z"},
        "updated_at": {"S": "2026-01-01T00:00:01.000Z"},
        "lines": {
            "L": [
                {
                    "M": {
                        "product_id": {"S": "P1"},
                        "name": {"S": "Widget"},
                        "unit_price_cents": {"N": "1250"},
                        "quantity": {"N": "2"},
                        "line_total_cents": {"N": "2500"},
                    }
                }
            ]
        },
        "shipping_address": {"M": {}},  # DynamoDB Local's rendering of an empty map
    }


def session_image() -> dict[str, Any]:
    return {
        "PK": {"S": f"SESSION#{SESSION_ID}"},
        "SK": {"S": "SESSION"},
        "session_id": {"S": SESSION_ID},
        "cart": {
            "M": {
                "P1": {"M": {"name": {"S": "Widget"}, "unit_price_cents": {"N": "1250"}, "quantity": {"N": "2"}}},
                "P2": {"M": {"name": {"S": "Gadget"}, "unit_price_cents": {"N": "499"}, "quantity": {"N": "1"}}},
            }
        },
        "cart_added": {"M": {"P1": {"S": "2026-01-01T00:00:02Z"}, "P2": {"S": "2026-01-01T00:00:01Z"}}},
        "cart_version": {"N": "3"},
        "expires_at": {"N": "1795683600"},
    }


def record(
    event_name: str,
    pk: str,
    sk: str,
    *,
    new: dict[str, Any] | None = None,
    old: dict[str, Any] | None = None,
    identity: dict[str, Any] | None = None,
    sequence_number: str = "100000000000000000001",
) -> dict[str, Any]:
    data: dict[str, Any] = {
        "ApproximateCreationDateTime": 1700000000,
        "Keys": {"PK": {"S": pk}, "SK": {"S": sk}},
        "SequenceNumber": sequence_number,
        "SizeBytes": 256,
        "StreamViewType": "NEW_AND_OLD_IMAGES",
    }
    if new is not None:
        data["NewImage"] = new
    if old is not None:
        data["OldImage"] = old
    raw: dict[str, Any] = {
        "eventID": "e1",
        "eventName": event_name,
        "eventVersion": "1.1",
        "eventSource": "aws:dynamodb",
        "awsRegion": "us-east-1",
        "dynamodb": data,
        "eventSourceARN": "arn:aws:dynamodb:us-east-1:123456789012:table/shop/stream/2026-01-01T00:00:00.000",
    }
    if identity is not None:
        raw["userIdentity"] = identity
    return raw


def test_order_insert_reads_keys_status_and_the_new_order():
    read = StreamRecord.from_lambda(
        record("INSERT", f"ORDER#{ORDER_ID}", "ORDER", new=order_image("PENDING", 1), sequence_number="42")
    )
    assert (read.event_name, read.entity, read.entity_id, read.sequence_number) == ("INSERT", "ORDER", ORDER_ID, "42")
    assert (read.new_status, read.old_status, read.removed_by_ttl) == ("PENDING", None, False)
    assert read.log_keys == {"order_id": ORDER_ID, "sequence_number": "42"}
    order = read.new_order()
    assert isinstance(order, OrderImage)
    assert (order.order_id, order.customer_id, order.status, order.version) == (
        ORDER_ID,
        "alice",
        OrderStatus.PENDING,
        1,
    )
    assert [(line.product_id, line.quantity, line.line_total_cents) for line in order.lines] == [("P1", 2, 2500)]


def test_order_modify_reads_both_statuses():
    read = StreamRecord.from_lambda(
        record("MODIFY", f"ORDER#{ORDER_ID}", "ORDER", new=order_image("SHIPPED", 3), old=order_image("CONFIRMED", 2))
    )
    assert (read.old_status, read.new_status) == ("CONFIRMED", "SHIPPED")
    assert (read.new_order().status, read.new_order().version) == (OrderStatus.SHIPPED, 3)


def test_order_remove_has_no_new_order():
    read = StreamRecord.from_lambda(record("REMOVE", f"ORDER#{ORDER_ID}", "ORDER", old=order_image("PENDING", 1)))
    assert (read.event_name, read.entity, read.new_status, read.old_status) == ("REMOVE", "ORDER", None, "PENDING")
    with pytest.raises(MalformedRecord, match="no image for OrderImage"):
        read.new_order()


def test_session_removed_by_ttl_reads_the_old_session():
    read = StreamRecord.from_lambda(
        record("REMOVE", f"SESSION#{SESSION_ID}", "SESSION", old=session_image(), identity=TTL_IDENTITY)
    )
    assert (read.entity, read.entity_id, read.removed_by_ttl) == ("SESSION", SESSION_ID, True)
    assert read.log_keys == {"session_id": SESSION_ID, "sequence_number": "100000000000000000001"}
    session = read.old_session()
    assert isinstance(session, SessionImage)
    assert (session.session_id, session.cart_version) == (SESSION_ID, 3)
    assert {pid: (item.name, item.quantity) for pid, item in session.cart.items()} == {
        "P1": ("Widget", 2),
        "P2": ("Gadget", 1),
    }
    assert session.added_at("P2") < session.added_at("P1")


@pytest.mark.parametrize(
    "identity",
    [None, {"type": "Service", "principalId": "someone.else.amazonaws.com"}, {"type": "User", "principalId": "x"}],
)
def test_a_session_remove_by_anyone_but_ttl_is_not_a_ttl_removal(identity):
    raw = record("REMOVE", f"SESSION#{SESSION_ID}", "SESSION", old=session_image(), identity=identity)
    assert StreamRecord.from_lambda(raw).removed_by_ttl is False


@pytest.mark.parametrize(
    ("pk", "sk", "entity"),
    [
        (f"ORDER#{ORDER_ID}", "HISTORY#000002", "ORDER_HISTORY"),
        ("PRODUCT#P1", "BY_RATING#5#2026-01-01T00:00:00.000000Z#alice", "PRODUCT_BY_RATING"),
        ("PRODUCT#P1", "REVIEWER#alice", "PRODUCT_REVIEWER"),
        ("CUSTOMER#alice", f"ORDER#{ORDER_ID}", "CUSTOMER"),
    ],
)
def test_other_items_are_named_from_their_keys_alone(pk, sk, entity, monkeypatch):
    monkeypatch.setattr(stream_records, "from_item", None)  # deserialising an image would now fail
    read = StreamRecord.from_lambda(record("INSERT", pk, sk, new={"PK": {"S": pk}, "status": {"S": "PENDING"}}))
    assert read.entity == entity
    assert read.log_keys == {"sequence_number": "100000000000000000001"}


def test_the_product_item_is_named_and_read_for_its_stock_without_deserialising(monkeypatch):
    monkeypatch.setattr(stream_records, "from_item", None)
    old = {"stock": {"N": "5"}, "name": {"S": "Widget"}, "categories": {"SS": ["b", "a"]}}
    new = {"stock": {"N": "4"}, "name": {"S": "Widget"}, "categories": {"SS": ["a", "b"]}, "status": {}}
    read = StreamRecord.from_lambda(record("MODIFY", "PRODUCT#P1", "PRODUCT", new=new, old=old))
    assert read.entity == "PRODUCT"
    assert read.log_keys == {"product_id": "P1", "sequence_number": "100000000000000000001"}
    assert (read.old_number("stock"), read.new_number("stock"), read.new_number("low_stock_threshold")) == (5, 4, None)
    assert read.changed_attributes(["name", "categories", "status", "stock"]) == ["stock"]
    assert read.created_at == "2023-11-14T22:13:20.000000Z"


def test_a_product_image_reads_with_the_defaults_of_older_items():
    image = {"product_id": {"S": "P1"}, "name": {"S": "Widget"}, "price_cents": {"N": "100"}, "category": {"S": "c"}}
    product = StreamRecord.from_lambda(record("INSERT", "PRODUCT#P1", "PRODUCT", new=image)).new_product()
    assert (product.status, product.low_stock_threshold, product.category_slugs) == ("ACTIVE", 5, ["c"])


def test_a_stock_that_is_no_integer_is_malformed():
    read = StreamRecord.from_lambda(record("MODIFY", "PRODUCT#P1", "PRODUCT", new={"stock": {"N": "1.5"}}, old={}))
    with pytest.raises(MalformedRecord, match="stock"):
        read.new_number("stock")


def test_routing_facts_need_no_image_deserialised(monkeypatch):
    monkeypatch.setattr(stream_records, "from_item", None)
    raw = record("MODIFY", f"ORDER#{ORDER_ID}", "ORDER", new=order_image("SHIPPED", 3), old=order_image("SHIPPED", 2))
    read = StreamRecord.from_lambda(raw)
    assert (read.entity, read.event_name, read.old_status, read.new_status) == ("ORDER", "MODIFY", "SHIPPED", "SHIPPED")


@pytest.mark.parametrize(
    "damage",
    [
        lambda raw: raw.pop("dynamodb"),
        lambda raw: raw.pop("eventName"),
        lambda raw: raw["dynamodb"].pop("SequenceNumber"),
        lambda raw: raw["dynamodb"]["Keys"].pop("SK"),
        lambda raw: raw["dynamodb"]["Keys"].update(PK="ORDER#x"),  # not DynamoDB JSON
    ],
)
def test_a_record_that_is_no_stream_record_is_malformed(damage):
    raw = record("INSERT", f"ORDER#{ORDER_ID}", "ORDER", new=order_image("PENDING", 1))
    damage(raw)
    with pytest.raises(MalformedRecord, match="not a DynamoDB stream record"):
        StreamRecord.from_lambda(raw)


def test_an_unreadable_image_is_malformed_only_when_a_rule_reads_it():
    image = copy.deepcopy(order_image("PENDING", 1))
    del image["customer_id"]
    image["version"] = {"S": "one"}
    read = StreamRecord.from_lambda(record("INSERT", f"ORDER#{ORDER_ID}", "ORDER", new=image))
    assert read.new_status == "PENDING"
    with pytest.raises(MalformedRecord, match="unreadable OrderImage"):
        read.new_order()
    broken = StreamRecord.from_lambda(
        record("INSERT", f"ORDER#{ORDER_ID}", "ORDER", new={"status": {"S": "PENDING"}, "version": {"Q": "1"}})
    )
    with pytest.raises(MalformedRecord, match="unreadable OrderImage"):  # TypeDeserializer's error
        broken.new_order()
