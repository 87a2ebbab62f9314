"""Feed order_events the table's real stream records, as the event source mapping would.

Records are read from DynamoDB Local's stream, shaped as Lambda delivers them, filtered with the
template's filter criteria and handed over in batches of the template's batch size. The processor's
own writes produce new records (the confirmation is a MODIFY), so ``drain`` repeats until the
stream holds nothing new that passes the filters (bounded rounds).
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from typing import Any

from bench.lambdas import REPO_ROOT

EVENTS_TEMPLATE = REPO_ROOT / "cdk.out" / "ShopEvents.template.json"
DEFAULT_FILTERS: list[dict[str, Any]] = [
    {"eventName": ["INSERT"], "dynamodb": {"NewImage": {"entity": {"S": ["ORDER"]}}}},
    {"eventName": ["MODIFY"], "dynamodb": {"NewImage": {"entity": {"S": ["ORDER"]}}}},
]


def mapping_settings() -> tuple[list[dict[str, Any]], int]:
    """(filter patterns, batch size) of the order_events event source mapping in the template."""
    try:
        template = json.loads(EVENTS_TEMPLATE.read_text())
    except (OSError, ValueError):
        return DEFAULT_FILTERS, 25
    for resource in template.get("Resources", {}).values():
        if resource.get("Type") == "AWS::Lambda::EventSourceMapping":
            props = resource.get("Properties", {})
            filters = [json.loads(f["Pattern"]) for f in props.get("FilterCriteria", {}).get("Filters", [])]
            return filters or DEFAULT_FILTERS, int(props.get("BatchSize", 100))
    return DEFAULT_FILTERS, 25


def matches(pattern: Any, value: Any) -> bool:
    """EventBridge-style matching for the exact-value patterns the template uses."""
    if isinstance(pattern, dict):
        return isinstance(value, dict) and all(k in value and matches(p, value[k]) for k, p in pattern.items())
    if isinstance(pattern, list):
        return any(matches(p, value) if isinstance(p, dict) else p == value for p in pattern)
    return bool(pattern == value)


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dt.datetime):
        return int(value.timestamp())
    if isinstance(value, Decimal):
        return int(value)
    return value


def lambda_record(raw: dict[str, Any], arn: str) -> dict[str, Any]:
    record: dict[str, Any] = {
        "eventID": raw.get("eventID"),
        "eventName": raw.get("eventName"),
        "eventVersion": "1.1",
        "eventSource": "aws:dynamodb",
        "awsRegion": "us-east-1",
        "dynamodb": _plain(raw.get("dynamodb", {})),
        "eventSourceARN": arn,
    }
    if raw.get("userIdentity"):
        record["userIdentity"] = _plain(raw["userIdentity"])
    return record


class StreamFeeder:
    def __init__(self, dynamodb: Any, streams: Any, table_name: str) -> None:
        self.streams = streams
        self.arn: str = dynamodb.describe_table(TableName=table_name)["Table"]["LatestStreamArn"]
        self.filters, self.batch_size = mapping_settings()
        self._iterators: dict[str, str | None] = {}
        self._seen: set[str] = set()

    def skip_to_now(self) -> None:
        """Consume everything written so far without delivering it."""
        self._read()

    def _read(self) -> list[dict[str, Any]]:
        shards = self.streams.describe_stream(StreamArn=self.arn)["StreamDescription"].get("Shards", [])
        records: list[dict[str, Any]] = []
        for shard in shards:
            shard_id = shard["ShardId"]
            if shard_id not in self._iterators:
                self._iterators[shard_id] = self.streams.get_shard_iterator(
                    StreamArn=self.arn, ShardId=shard_id, ShardIteratorType="TRIM_HORIZON"
                )["ShardIterator"]
            for _ in range(100):  # bounded: DynamoDB Local returns what it has at once
                iterator = self._iterators[shard_id]
                if not iterator:
                    break
                response = self.streams.get_records(ShardIterator=iterator, Limit=1000)
                self._iterators[shard_id] = response.get("NextShardIterator")
                fresh = [r for r in response.get("Records", []) if r["eventID"] not in self._seen]
                self._seen.update(r["eventID"] for r in fresh)
                records += fresh
                if not response.get("Records"):
                    break
        records.sort(key=lambda r: r["dynamodb"]["SequenceNumber"].zfill(40))
        return records

    def pending(self) -> list[dict[str, Any]]:
        """New records that pass the filter criteria, shaped as Lambda delivers them."""
        shaped = [lambda_record(r, self.arn) for r in self._read()]
        return [r for r in shaped if any(matches(p, r) for p in self.filters)]

    def batches(self, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{"Records": records[i : i + self.batch_size]} for i in range(0, len(records), self.batch_size)]
