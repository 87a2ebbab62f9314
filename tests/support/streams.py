"""A table's real stream records, read from a test's backend (moto or DynamoDB Local) as Lambda delivers them.

reader = StreamReader(store)
records = reader.read()            # every record not read before, in write order
event = stream_event(records)      # {"Records": [...]} (local_runtime.events) as the mapping delivers it

The reading and shaping are local_runtime's (`local_runtime.streams`, `local_runtime.events`).
"""

from __future__ import annotations

from typing import Any

from local_runtime import streams


class StreamReader(streams.StreamReader):
    """local_runtime's reader (every record, no filter) on a test store's backend."""

    def __init__(self, store: Any, ttl_deletions: Any = None) -> None:
        super().__init__(
            store.client,
            store.streams,
            store.table_name,
            region=store.client.meta.region_name,
            ttl_deletions=ttl_deletions,
        )


def only(
    records: list[dict[str, Any]], *, entity: str | None = None, event_name: str | None = None
) -> list[dict[str, Any]]:
    """The records of one entity (by key prefix, as keys.entity_of names it) and/or one event name."""
    from shop import keys

    selected = []
    for record in records:
        key = record["dynamodb"]["Keys"]
        if entity is not None and keys.entity_of(key["PK"]["S"], key["SK"]["S"]) != entity:
            continue
        if event_name is not None and record["eventName"] != event_name:
            continue
        selected.append(record)
    return selected


def ttl_removal(
    session_id: str,
    old_image: dict[str, Any],
    sequence_number: str = "999000000000000000001",
    *,
    item_keys: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A REMOVE record as DynamoDB TTL writes it (tests shape it rather than wait for an expiry);
    of the session `session_id`, or of the item whose keys (DynamoDB JSON) are `item_keys`."""
    return {
        "eventID": f"ttl-{sequence_number}",
        "eventName": "REMOVE",
        "eventVersion": "1.1",
        "eventSource": "aws:dynamodb",
        "awsRegion": "us-east-1",
        "dynamodb": {
            "ApproximateCreationDateTime": 1700000000,
            "Keys": item_keys or {"PK": {"S": f"SESSION#{session_id}"}, "SK": {"S": "SESSION"}},
            "OldImage": old_image,
            "SequenceNumber": sequence_number,
            "SizeBytes": 256,
            "StreamViewType": "NEW_AND_OLD_IMAGES",
        },
        "userIdentity": {"type": "Service", "principalId": "dynamodb.amazonaws.com"},
        "eventSourceARN": "arn:aws:dynamodb:us-east-1:123456789012:table/shop/stream/2026-01-01T00:00:00.000",
    }


def forget_instance_memo() -> None:
    """A new stream processor instance: forget what shop.repository.sales keeps for an instance's life (the day
    markers it wrote, when it refreshed ranks, the cut-over it read). Cleared in place: a repository already built
    holds its table's sets, as an instance's would."""
    from shop.repository import sales

    for marked in sales._MARKED.values():
        marked.clear()
    for refreshed in sales._REFRESHED.values():
        refreshed.clear()
    sales._CUTOVER.clear()
