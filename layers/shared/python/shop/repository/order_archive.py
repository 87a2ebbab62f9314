"""Archived orders: the S3 objects that hold them and the table items archiving reads, marks and removes.

An archived order is one JSON object on one line (Athena's JSON SerDe reads one object per line) at
`orders/year=YYYY/month=MM/day=DD/<order_id>.json`, partitioned by the day the order was placed, so the
key follows from the order alone and a retried archival overwrites the same object with the same body.
The order's own partition keeps a marker item (`keys.order_archived_key`) naming the object.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from shop import errors, keys
from shop.config import settings
from shop.limits import ARCHIVE_PREFIX, BATCH_WRITE_MAX_ITEMS
from shop.models import Order
from shop.repository.order_items import order_from_items
from shop.repository.store import ConditionFailed, Table, conditional_write, from_item, to_item, translated_errors
from shop.runtime.botocore_clients import ProcessClient

CONTENT_TYPE = "application/json"
# Deletes BatchWriteItem left unprocessed are sent again this often, then the record fails (and is retried).
UNPROCESSED_ATTEMPTS = 5


def object_key(order_id: str, created_at: str) -> str:
    """Partitioned by the UTC day the order was placed (`created_at` is ISO 8601: YYYY-MM-DDT...)."""
    year, month, day = created_at[:4], created_at[5:7], created_at[8:10]
    return f"{ARCHIVE_PREFIX}year={year}/month={month}/day={day}/{order_id}.json"


def archive_document(order: Order, archived_at: str) -> bytes:
    """The object's body: the order with its history and when it was archived, one line of JSON."""
    body = {**order.model_dump(mode="json", exclude={"archived"}), "archived_at": archived_at}
    if order.payment is not None:
        # The payment is excluded from the model's dumps (answers show it through their own schemas), but an
        # archived order is what GET /orders/{id} and /payment read: it is kept, without the client secret (a
        # final order waits for no payment).
        body["payment"] = order.payment.model_dump(mode="json", exclude_none=True, exclude={"client_secret"})
    return (json.dumps(body, separators=(",", ":"), sort_keys=True) + "\n").encode()


_client: Any = None
_s3 = ProcessClient(__name__, "s3")


def s3_client() -> Any:
    """The process-wide S3 client, created on the first archive call (an order read seldom needs one)."""
    return _s3.get()


def reset_client() -> None:
    """Forget the cached client (tests switch mocks between runs)."""
    _s3.reset()


class ArchiveBucket:
    """The archive's objects: written by the stream processor, read by `GET /orders/{id}`."""

    def __init__(self, bucket: str | None = None, client: Any = None) -> None:
        self._bucket = bucket
        self._client = client

    @property
    def bucket(self) -> str:
        name = self._bucket or settings().archive_bucket
        if not name:
            raise errors.ServiceUnavailable("ARCHIVE_BUCKET is not set: the archive is not reachable")
        return name

    @property
    def client(self) -> Any:
        return self._client if self._client is not None else s3_client()

    def put(self, order: Order, *, archived_at: str) -> str:
        """Write (or overwrite, identically) the order's object; its key. Any failure raises: nothing is lost,
        the caller fails and is retried."""
        key = object_key(order.order_id, order.created_at)
        self.client.put_object(
            Bucket=self.bucket, Key=key, Body=archive_document(order, archived_at), ContentType=CONTENT_TYPE
        )
        return key

    def get(self, key: str) -> Order:
        """The archived order (`archived` true). A store that does not answer is ServiceUnavailable; an object
        missing under a marker is a broken archive and raises as it is."""
        try:
            body = self.client.get_object(Bucket=self.bucket, Key=key)["Body"].read()
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in ("NoSuchKey", "404", "NoSuchBucket"):
                raise
            raise errors.ServiceUnavailable("the order archive is unavailable, retry") from error
        except BotoCoreError as error:
            raise errors.ServiceUnavailable("the order archive is unavailable, retry") from error
        return Order.model_validate({**json.loads(body), "archived": True})


@dataclass(frozen=True)
class Remains:
    """What the order's partition holds once TTL removed the order item."""

    archive_key: str | None  # set when a marker exists: the object is written
    history: list[dict[str, Any]]  # the HISTORY# items still there
    # Everything else of the order still there but its marker: the history and the sales markers (the
    # once-per-version counting, which no record of a finished order's stream can need any more).
    leftovers: list[dict[str, Any]] = field(default_factory=list)


class OrderArchivalRepository:
    """The table side of archiving: read what is left of an order, mark it archived, delete the rest."""

    def __init__(self, table: Table) -> None:
        self.table = table

    def remains(self, order_id: str) -> Remains:
        """One strongly consistent Query over the order's partition (paged if it ever is)."""
        items: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {
            "TableName": self.table.name,
            "KeyConditionExpression": "PK = :pk",
            "ExpressionAttributeValues": {":pk": {"S": keys.order_pk(order_id)}},
            "ConsistentRead": True,
        }
        while True:
            with translated_errors():
                page = self.table.client.query(**kwargs)
            items += [from_item(item) for item in page.get("Items", [])]
            if "LastEvaluatedKey" not in page:
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        marker = next((i for i in items if i["SK"] == keys.ORDER_ARCHIVED_SK), None)
        # what the order is read back with: its history, and the promotions it was priced with
        history = [
            i for i in items if str(i["SK"]).startswith(keys.HISTORY_PREFIX) or i["SK"] == keys.ORDER_DISCOUNTS_SK
        ]
        leftovers = [i for i in items if i["SK"] not in (keys.ORDER_ARCHIVED_SK, keys.ORDER_SK)]
        return Remains(str(marker["archive_key"]) if marker else None, history, leftovers)

    @staticmethod
    def order(removed: Mapping[str, Any], history: list[dict[str, Any]]) -> Order:
        """The whole order: the removed item (the REMOVE's OldImage) with its history items."""
        return order_from_items([{**removed, "SK": keys.ORDER_SK}, *history])

    def mark_archived(self, order: Order, *, archive_key: str, archived_at: str) -> bool:
        """The marker, written once (False when it was already there)."""
        item = {
            **keys.order_archived_key(order.order_id),
            "entity": "ORDER_ARCHIVED",
            "order_id": order.order_id,
            "customer_id": order.customer_id,
            "status": order.status.value,
            "version": order.version,
            "archive_key": archive_key,
            "archived_at": archived_at,
        }
        try:
            with conditional_write():
                self.table.client.put_item(
                    TableName=self.table.name, Item=to_item(item), ConditionExpression="attribute_not_exists(PK)"
                )
        except ConditionFailed:
            return False
        return True

    def delete_history(self, order_id: str, history: list[dict[str, Any]]) -> int:
        """Delete these items of the order (its leftovers), BATCH_WRITE_MAX_ITEMS per call; deleting a deleted
        item is a no-op."""
        requests = [
            {"DeleteRequest": {"Key": to_item({keys.PK: keys.order_pk(order_id), keys.SK: str(item["SK"])})}}
            for item in history
        ]
        for start in range(0, len(requests), BATCH_WRITE_MAX_ITEMS):
            pending = requests[start : start + BATCH_WRITE_MAX_ITEMS]
            for attempt in range(UNPROCESSED_ATTEMPTS):
                with translated_errors():
                    response = self.table.client.batch_write_item(RequestItems={self.table.name: pending})
                pending = response.get("UnprocessedItems", {}).get(self.table.name, [])
                if not pending:
                    break
                time.sleep(0.05 * 2**attempt)
            if pending:
                raise errors.ServiceUnavailable(f"{len(pending)} history item(s) of {order_id} not deleted, retry")
        return len(requests)
