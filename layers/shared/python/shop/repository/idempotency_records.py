"""Where Powertools' idempotency records live: the shop's single table, each record its own partition.

The HTTP side (shop.http_api.idempotency) runs the idempotent operation; this adapter gives it the
persistence layer on the table and says which of its failures are the store being unavailable.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer

from shop import errors, keys
from shop.repository.store import Table, translated_errors


class _RecordPerKey(DynamoDBPersistenceLayer):
    """Powertools' DynamoDB layer, each record keyed by its own hash instead of a shared static PK.

    ``_get_key`` is the one key builder behind every read, put, update and delete the layer makes
    (Powertools 3.x), so overriding it moves the records and leaves Powertools' conditions and
    record handling untouched; ``tests/functions/test_api.py`` proves the records land there. Private in
    Powertools: shop.runtime.powertools_private.
    """

    def _get_key(self, idempotency_key: str) -> dict[str, Any]:
        key = keys.idempotency_key(idempotency_key)
        return {self.key_attr: {"S": key[keys.PK]}, str(self.sort_key_attr): {"S": key[keys.SK]}}


class IdempotencyRecords:
    """The idempotency records of one table."""

    def __init__(self, table: Table) -> None:
        self.table = table

    def identity(self) -> tuple[Any, str]:
        """The client and table name: a persistence layer built for them serves until either changes."""
        return self.table.client, self.table.name

    def persistence_layer(self) -> DynamoDBPersistenceLayer:
        client, table_name = self.identity()
        return _RecordPerKey(
            table_name=table_name,
            key_attr=keys.PK,
            sort_key_attr=keys.SK,
            expiry_attr=keys.TTL_ATTRIBUTE,
            in_progress_expiry_attr="in_progress_expires_at_ms",
            status_attr="idempotency_status",
            data_attr="response",
            validation_key_attr="payload_hash",
            boto3_client=client,
        )

    @staticmethod
    def unavailable(cause: BaseException | None) -> errors.ServiceUnavailable | None:
        """The store's failure `cause` as ServiceUnavailable when it is transient; None when it is not."""
        try:
            with translated_errors():
                if isinstance(cause, BaseException):
                    raise cause
        except errors.ServiceUnavailable as unavailable:
            return unavailable
        except Exception:  # noqa: S110 - anything else is not the store being unavailable
            pass
        return None
