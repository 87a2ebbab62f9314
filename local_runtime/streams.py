"""A table's stream read on demand: each record once, shaped, filtered and batched as Lambda delivers it.

For the tests and the bench, which call order_events themselves; the poller is the mapping running on its own.
"""

from __future__ import annotations

from typing import Any

from local_runtime import events, filters
from local_runtime.template import REGION, MappingDef
from local_runtime.ttl import TtlDeletions


def wanted(mapping: MappingDef | None, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records the mapping's FilterCriteria let through (all of them without a mapping)."""
    if mapping is None:
        return list(records)
    return [r for r in records if filters.matches_any(mapping.filters, r)]


def batches(mapping: MappingDef | None, records: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The records in invocations of up to BatchSize (one invocation without a mapping)."""
    size = max(1, mapping.batch_size) if mapping is not None else max(1, len(records))
    return [records[start : start + size] for start in range(0, len(records), size)]


class StreamReader:
    """Every record of a table's stream, each returned once across reads (per-shard position kept)."""

    def __init__(
        self,
        dynamodb: Any,
        streams: Any,
        table_name: str,
        *,
        mapping: MappingDef | None = None,
        region: str = REGION,
        ttl_deletions: TtlDeletions | None = None,
    ) -> None:
        self.streams = streams
        self.mapping = mapping
        self.region = region
        self.ttl_deletions = ttl_deletions  # the TTL emulator's deletes, whose REMOVEs get the service's identity
        self.stream_arn: str = dynamodb.describe_table(TableName=table_name)["Table"]["LatestStreamArn"]
        self._positions: dict[str, str] = {}  # shard id -> sequence number of the last record read

    def read(self) -> list[dict[str, Any]]:
        """The records written since the last read, in write order, that the mapping delivers."""
        records = [events.stream_record(r, self.stream_arn, self.region) for r in self._new()]
        if self.ttl_deletions is not None:
            self.ttl_deletions.mark(records)
        return wanted(self.mapping, records)

    def skip_to_now(self) -> None:
        """Take everything written so far as read, without returning it."""
        self._new()

    def events_for(self, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The `{"Records": [...]}` events that deliver the records."""
        return [events.stream_event(batch) for batch in batches(self.mapping, records)]

    def _new(self) -> list[dict[str, Any]]:
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
            while iterator and empty_pages < 2:  # a page can come back empty before the shard's end
                page = self.streams.get_records(ShardIterator=iterator, Limit=1000)
                batch = page.get("Records", [])
                empty_pages = 0 if batch else empty_pages + 1
                for record in batch:
                    records.append(record)
                    self._positions[shard_id] = record["dynamodb"]["SequenceNumber"]
                iterator = page.get("NextShardIterator")
        # A parent shard's records come before its children's: one order across shards, the write order.
        return sorted(records, key=lambda r: int(r["dynamodb"]["SequenceNumber"]))
