"""The Lambda event source mapping for the table's stream, against DynamoDB Local.

Per shard: filter, batch, invoke, checkpoint; retries, bisection and the on-failure destination as Lambda does them
(docs/local-runtime.md, "Poller"). Checkpoints persist, so a restart resumes where it stopped.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import pathlib
import threading
import time
from collections.abc import Callable
from typing import Any

from local_runtime import events, failures, streams
from local_runtime.functions import InvokeResult
from local_runtime.template import MappingDef
from local_runtime.ttl import TtlDeletions

log = logging.getLogger("local_runtime.poller")
IDLE_SLEEP_S = 0.25
# The stream's ARN is read once, and its shard list again only after a shard closed or this long: an idle pass is
# then one GetRecords per open shard, not DescribeTable + DescribeStream + GetRecords (an idle stack's CPU).
SHARD_LIST_MAX_AGE_S = 2.0


class StreamPoller:
    def __init__(
        self,
        mapping: MappingDef,
        *,
        dynamodb: Any,
        streams: Any,
        table_name: str,
        invoke: Callable[[dict[str, Any]], InvokeResult],
        state_dir: pathlib.Path,
        region: str = "us-east-1",
        ttl_deletions: TtlDeletions | None = None,
        observe: Callable[[list[dict[str, Any]]], None] | None = None,
    ) -> None:
        self.mapping = mapping
        self.dynamodb = dynamodb
        self.streams = streams
        self.table_name = table_name
        self.invoke = invoke
        self.state_dir = pathlib.Path(state_dir)
        self.region = region
        self.ttl_deletions = ttl_deletions  # the TTL emulator's deletes: their REMOVEs get the service's identity
        self.observe = observe  # given every record read, before the mapping's filters (the TTL emulator's watch)
        self.failures = failures.DirectoryStore(self.state_dir / failures.LOCAL_DIR)
        # One file per consumer: two functions on one stream (order_events, payment_steps) each resume from their own
        # position; a shared file let one consumer's checkpoint skip records the other had not processed.
        self.checkpoint_path = self.state_dir / f"stream-checkpoints-{mapping.function}.json"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._checkpoints: dict[str, str] = self._load_checkpoints()
        self._iterators: dict[str, str | None] = {}
        self._closed: set[str] = set()
        self._arn: str | None = None
        self._shard_list: list[dict[str, Any]] = []
        self._shard_list_read_at = -SHARD_LIST_MAX_AGE_S
        self.invocations = 0

    # -- lifecycle --------------------------------------------------------------------------------
    def start(self) -> StreamPoller:
        self._thread = threading.Thread(target=self._run, name="stream-poller", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 35.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            if not self.poll_or_recover():
                self._stop.wait(IDLE_SLEEP_S)

    def poll_or_recover(self) -> bool:
        """One pass; on any error (the store stalled, stopped or restarted) the shard iterators are
        dropped, so the next pass re-opens every shard after its last checkpoint."""
        try:
            return self.poll_once()
        except Exception:
            log.exception("stream poller error; resuming from the checkpoints")
            self._iterators.clear()
            self._closed.clear()
            self._arn = None
            self._shard_list_read_at = -SHARD_LIST_MAX_AGE_S
            return False

    # -- one pass over the shards -----------------------------------------------------------------
    def stream_arn(self) -> str:
        table = self.dynamodb.describe_table(TableName=self.table_name)["Table"]
        arn = table.get("LatestStreamArn")
        if not arn:
            raise RuntimeError(f"table {self.table_name} has no stream")
        return str(arn)

    def poll_once(self) -> bool:
        """Read every shard once; True when any record was seen."""
        if self._arn is None:
            self._arn = self.stream_arn()
        arn = self._arn
        if time.monotonic() - self._shard_list_read_at >= SHARD_LIST_MAX_AGE_S:
            self._shard_list = self._shards(arn)
            self._shard_list_read_at = time.monotonic()
        shards = self._shard_list
        closed_before = len(self._closed)
        worked = False
        for shard in shards:
            shard_id = shard["ShardId"]
            if shard_id in self._closed:
                continue
            parent = shard.get("ParentShardId")
            if parent and parent in {s["ShardId"] for s in shards} and parent not in self._closed:
                continue  # per-partition order: finish the parent first
            worked |= self._poll_shard(arn, shard_id)
        if len(self._closed) > closed_before:  # its children are new shards: list them on the next pass
            self._shard_list_read_at = -SHARD_LIST_MAX_AGE_S
        return worked

    def _shards(self, arn: str) -> list[dict[str, Any]]:
        shards: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {"StreamArn": arn}
        while True:
            desc = self.streams.describe_stream(**kwargs)["StreamDescription"]
            shards += desc.get("Shards", [])
            last = desc.get("LastEvaluatedShardId")
            if not last:
                return shards
            kwargs["ExclusiveStartShardId"] = last

    def _iterator(self, arn: str, shard_id: str) -> str | None:
        if shard_id in self._iterators:
            return self._iterators[shard_id]
        key = f"{arn}|{shard_id}"
        if key in self._checkpoints:
            kwargs = {"ShardIteratorType": "AFTER_SEQUENCE_NUMBER", "SequenceNumber": self._checkpoints[key]}
        else:
            kwargs = {"ShardIteratorType": self.mapping.starting_position or "TRIM_HORIZON"}
        it = self.streams.get_shard_iterator(StreamArn=arn, ShardId=shard_id, **kwargs)["ShardIterator"]
        self._iterators[shard_id] = it
        return str(it)

    def _poll_shard(self, arn: str, shard_id: str) -> bool:
        iterator = self._iterator(arn, shard_id)
        if iterator is None:
            return False
        try:
            response = self.streams.get_records(ShardIterator=iterator, Limit=1000)
        except self.streams.exceptions.ExpiredIteratorException:
            self._iterators.pop(shard_id, None)  # re-open from the checkpoint next pass
            return False
        raw_records = response.get("Records", [])
        next_iterator = response.get("NextShardIterator")
        if raw_records:
            records = [events.stream_record(r, arn, self.region) for r in raw_records]
            if self.ttl_deletions is not None:
                self.ttl_deletions.mark(records)
            if self.observe is not None:
                self.observe(records)
            self._deliver(arn, shard_id, records)
        if next_iterator is None:
            self._closed.add(shard_id)
        self._iterators[shard_id] = next_iterator
        return bool(raw_records)

    # -- delivery ---------------------------------------------------------------------------------
    def _deliver(self, arn: str, shard_id: str, records: list[dict[str, Any]]) -> None:
        for batch in streams.batches(self.mapping, streams.wanted(self.mapping, records)):
            self._process(arn, shard_id, batch)
        if not self._stop.is_set():  # records filtered out count as processed
            self._checkpoint(arn, shard_id, records[-1]["dynamodb"]["SequenceNumber"])

    def _process(self, arn: str, shard_id: str, batch: list[dict[str, Any]]) -> None:
        """Deliver one batch until it succeeds or is sent to the failure destination."""
        pending: list[list[dict[str, Any]]] = [batch]
        attempts: dict[str, int] = {}
        limit = self.mapping.maximum_retry_attempts
        while pending and not self._stop.is_set():
            current = pending.pop(0)
            first = current[0]["dynamodb"]["SequenceNumber"]
            result = self.invoke(events.stream_event(current))
            self.invocations += 1
            failed_from = self._failed_from(current, result)
            if failed_from is None:
                self._checkpoint(arn, shard_id, current[-1]["dynamodb"]["SequenceNumber"])
                continue
            done, remaining = current[:failed_from], current[failed_from:]
            if done:
                self._checkpoint(arn, shard_id, done[-1]["dynamodb"]["SequenceNumber"])
            key = remaining[0]["dynamodb"]["SequenceNumber"] if done else first
            attempts[key] = attempts.get(key, 0) + 1
            if self._expired(remaining) or (limit >= 0 and attempts[key] > limit):
                condition = "RecordAgeExceeded" if self._expired(remaining) else "RetryAttemptsExhausted"
                self._to_destination(arn, shard_id, remaining, result, attempts[key], condition)
                self._checkpoint(arn, shard_id, remaining[-1]["dynamodb"]["SequenceNumber"])
                continue
            if not result.ok and self.mapping.bisect_on_error and len(remaining) > 1:
                half = len(remaining) // 2
                left, right = remaining[:half], remaining[half:]
                attempts[left[0]["dynamodb"]["SequenceNumber"]] = attempts[key]
                attempts[right[0]["dynamodb"]["SequenceNumber"]] = attempts[key]
                pending[:0] = [left, right]
            else:
                pending.insert(0, remaining)
            self._stop.wait(min(0.1 * 2 ** min(attempts[key], 5), 2.0))

    def _failed_from(self, batch: list[dict[str, Any]], result: InvokeResult) -> int | None:
        """Index of the first record to retry, or None when the whole batch succeeded."""
        if not result.ok:
            return 0
        if not self.mapping.report_batch_item_failures or not isinstance(result.payload, dict):
            return None
        failures = result.payload.get("batchItemFailures") or []
        if not failures:
            return None
        positions = {r["dynamodb"]["SequenceNumber"]: i for i, r in enumerate(batch)}
        indexes = []
        for failure in failures:
            ident = failure.get("itemIdentifier") if isinstance(failure, dict) else None
            if not ident or ident not in positions:
                return 0  # Lambda treats an invalid identifier as a failure of the whole batch
            indexes.append(positions[ident])
        return min(indexes)

    def _expired(self, batch: list[dict[str, Any]]) -> bool:
        max_age = self.mapping.maximum_record_age_s
        if max_age is None or max_age < 0:
            return False
        created = batch[0]["dynamodb"].get("ApproximateCreationDateTime")
        return bool(created) and time.time() - float(created) > max_age

    def _to_destination(  # noqa: PLR0917
        self,
        arn: str,
        shard_id: str,
        batch: list[dict[str, Any]],
        result: InvokeResult,
        attempts: int,
        condition: str,
    ) -> None:
        """An object like the one Lambda writes to an S3 on-failure destination (the whole event in `payload`)."""
        first, last = batch[0]["dynamodb"], batch[-1]["dynamodb"]
        now = dt.datetime.now(dt.UTC)
        entry = {
            "version": "1.0",
            "timestamp": now.isoformat(),
            "requestContext": {
                "requestId": result.request_id,
                "functionArn": self.mapping.function,
                "condition": condition,
                "approximateInvokeCount": attempts,
            },
            "responseContext": {
                "statusCode": 200,
                "executedVersion": "$LATEST",
                "functionError": None if result.ok else "Unhandled",
            },
            "DDBStreamBatchInfo": {
                "shardId": shard_id,
                "startSequenceNumber": first["SequenceNumber"],
                "endSequenceNumber": last["SequenceNumber"],
                "approximateArrivalOfFirstRecord": first.get("ApproximateCreationDateTime"),
                "approximateArrivalOfLastRecord": last.get("ApproximateCreationDateTime"),
                "batchSize": len(batch),
                "streamArn": arn,
            },
            "payload": json.dumps(events.stream_event(batch), default=str),
        }
        key = failures.object_key(self.mapping.logical_id, shard_id, now)
        self.failures.write(key, entry)
        log.warning("sent %d stream record(s) to %s (%s)", len(batch), self.failures.root / key, condition)

    # -- checkpoints ------------------------------------------------------------------------------
    def _load_checkpoints(self) -> dict[str, str]:
        with contextlib.suppress(FileNotFoundError, ValueError):
            data = json.loads(self.checkpoint_path.read_text())
            if isinstance(data, dict):
                return {str(k): str(v) for k, v in data.items()}
        return {}

    def _checkpoint(self, arn: str, shard_id: str, sequence: str) -> None:
        key = f"{arn}|{shard_id}"
        previous = self._checkpoints.get(key)
        if previous is not None and int(previous) >= int(sequence):
            return
        self._checkpoints[key] = sequence
        self.state_dir.mkdir(parents=True, exist_ok=True)
        tmp = self.checkpoint_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self._checkpoints, indent=1))
        tmp.replace(self.checkpoint_path)
