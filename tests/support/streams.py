"""Read a table's real stream records from a backend (moto or DynamoDB Local) and shape Lambda events.

reader = StreamReader(store)
records = reader.read()            # every record not read before, in shard order
event = lambda_event(records)      # {"Records": [...]} as the event source mapping delivers it
"""

from __future__ import annotations

import copy
import datetime
from typing import Any


class StreamReader:
    """Every record of a table's stream, each returned once across calls (per-shard position kept)."""

    def __init__(self, store: Any) -> None:
        self.streams = store.streams
        table = store.client.describe_table(TableName=store.table_name)["Table"]
        self.stream_arn: str = table["LatestStreamArn"]
        self.region: str = store.client.meta.region_name
        self._positions: dict[str, str] = {}  # shard id -> last sequence number read

    def read(self) -> list[dict[str, Any]]:
        description = self.streams.describe_stream(StreamArn=self.stream_arn)["StreamDescription"]
        records: list[dict[str, Any]] = []
        for shard in description["Shards"]:
            shard_id = shard["ShardId"]
            args: dict[str, Any] = {"StreamArn": self.stream_arn, "ShardId": shard_id}
            if shard_id in self._positions:
                args.update(ShardIteratorType="AFTER_SEQUENCE_NUMBER", SequenceNumber=self._positions[shard_id])
            else:
                args.update(ShardIteratorType="TRIM_HORIZON")
            iterator = self.streams.get_shard_iterator(**args)["ShardIterator"]
            empty_pages = 0
            while iterator and empty_pages < 2:
                page = self.streams.get_records(ShardIterator=iterator, Limit=1000)
                batch = page.get("Records", [])
                empty_pages = 0 if batch else empty_pages + 1
                for record in batch:
                    records.append(self._as_lambda_record(record))
                    self._positions[shard_id] = record["dynamodb"]["SequenceNumber"]
                iterator = page.get("NextShardIterator")
        return records

    def _as_lambda_record(self, record: dict[str, Any]) -> dict[str, Any]:
        """What the event source mapping adds: the stream ARN; timestamps as epoch seconds."""
        shaped = copy.deepcopy(record)
        shaped["eventSourceARN"] = self.stream_arn
        shaped.setdefault("awsRegion", self.region)
        shaped.setdefault("eventSource", "aws:dynamodb")
        created = shaped["dynamodb"].get("ApproximateCreationDateTime")
        if isinstance(created, datetime.datetime):
            shaped["dynamodb"]["ApproximateCreationDateTime"] = int(created.timestamp())
        return shaped


def lambda_event(records: list[dict[str, Any]]) -> dict[str, Any]:
    return {"Records": list(records)}


def read_event(store: Any) -> dict[str, Any]:
    """Every record of the table's stream so far, as one Lambda event."""
    return lambda_event(StreamReader(store).read())


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
    """A REMOVE record as DynamoDB TTL writes it (DynamoDB Local never expires items, so tests shape it);
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
