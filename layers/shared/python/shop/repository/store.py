"""The one DynamoDB client, its configuration, item (de)serialisation and error translation."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError, ConnectionError, HTTPClientError

from shop import errors, keys
from shop.aws_config import CONFLICT_ERROR, CONFLICT_REASON, with_conflict_retries
from shop.config import settings
from shop.repository.attribute_values import deserialize, serialize
from shop.runtime.botocore_clients import ProcessClient

UNAVAILABLE_CODES = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "RequestLimitExceeded",
        "InternalServerError",
        "ServiceUnavailable",
        "LimitExceededException",
        # Standard mode retries this one and we retry conflicts (shop.aws_config); both can outlast their budget.
        "TransactionInProgressException",
        CONFLICT_ERROR,
    }
)

# Cancellation reasons that a later attempt may not meet. Any other reason but a failed condition
# (ValidationError, ItemCollectionSizeLimitExceeded, one we do not know) fails the same way every time.
TRANSIENT_REASONS = frozenset({CONFLICT_REASON, "ThrottlingError", "ProvisionedThroughputExceeded"})
_NOT_PERMANENT = TRANSIENT_REASONS | {"None", "ConditionalCheckFailed"}
# A request DynamoDB refuses as invalid (a key or item over its limits) fails the same way every time.
INVALID_CODES = frozenset({"ValidationException"})

_client: Any = None
_dynamodb = ProcessClient(__name__, "dynamodb")


def dynamodb_client() -> Any:
    """The process-wide low-level client, created on first use (not at import)."""
    return _dynamodb.get()


def reset_client() -> None:
    """Forget the cached client (tests switch stores between runs)."""
    _dynamodb.reset()


def to_attr(value: Any) -> dict[str, Any]:
    return serialize(value)


def to_item(values: Mapping[str, Any]) -> dict[str, Any]:
    return {k: to_attr(v) for k, v in values.items() if v is not None}


def from_item(item: Mapping[str, Any]) -> dict[str, Any]:
    """A DynamoDB item as plain Python: numbers become int (money is cents), never Decimal."""
    return {k: deserialize(v) for k, v in item.items()}


def values(**named: Any) -> dict[str, Any]:
    """ExpressionAttributeValues from keyword arguments: values(q=1) -> {":q": {"N": "1"}}."""
    return {f":{k}": to_attr(v) for k, v in named.items()}


class Table:
    """The table name and client, passed to every repository."""

    def __init__(self, client: Any = None, table_name: str | None = None) -> None:
        self._client = client
        self._table_name = table_name

    @property
    def client(self) -> Any:
        return with_conflict_retries(self._client if self._client is not None else dynamodb_client())

    @property
    def name(self) -> str:
        return self._table_name or settings().table_name


@contextmanager
def translated_errors() -> Iterator[None]:
    """Turn transport failures and AWS throttling/5xx/conflict codes into ServiceUnavailable, invalid requests
    into StoreRejected."""
    try:
        yield
    except ClientError as error:
        code = error.response.get("Error", {}).get("Code", "")
        status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        if code in UNAVAILABLE_CODES or status >= 500:
            raise errors.ServiceUnavailable("the store is unavailable, retry later") from error
        if code in INVALID_CODES:
            raise errors.StoreRejected() from error
        raise
    except (ConnectionError, HTTPClientError) as error:
        raise errors.ServiceUnavailable("the store is unreachable, retry later") from error
    except BotoCoreError as error:
        raise errors.ServiceUnavailable("the store failed, retry later") from error


def error_code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


class ConditionFailed(Exception):
    """A single-item write whose ConditionExpression did not hold.

    ``item`` is the item as it was, plain, when the write asked for it with
    ReturnValuesOnConditionCheckFailure=ALL_OLD and it existed; None otherwise.
    """

    def __init__(self, item: dict[str, Any] | None) -> None:
        super().__init__("the condition of the write did not hold")
        self.item = item


@contextmanager
def conditional_write() -> Iterator[None]:
    """translated_errors() for one PutItem, UpdateItem or DeleteItem, whose failed condition is raised as
    ConditionFailed for the caller to explain."""
    try:
        with translated_errors():
            yield
    except ClientError as error:
        if error_code(error) != "ConditionalCheckFailedException":
            raise
        old = error.response.get("Item")
        raise ConditionFailed(from_item(old) if old is not None else None) from error


def put_new(table: Table, item: Mapping[str, Any]) -> None:
    """PutItem of `item` only where no item has its key; ConditionFailed, carrying the item already there, when
    one has."""
    with conditional_write():
        table.client.put_item(
            TableName=table.name,
            Item=to_item(item),
            ConditionExpression="attribute_not_exists(PK)",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )


class TransactionCancelled(Exception):
    """A cancelled TransactWriteItems with its per-item reasons, in the order the items were sent."""

    def __init__(self, reasons: list[dict[str, Any]]) -> None:
        super().__init__([reason.get("Code") for reason in reasons])
        self.reasons = reasons

    def failed_condition(self, index: int) -> bool:
        return index < len(self.reasons) and self.reasons[index].get("Code") == "ConditionalCheckFailed"

    def old_item(self, index: int) -> dict[str, Any] | None:
        """Item `index` as it was (plain), when its write asked for ReturnValuesOnConditionCheckFailure."""
        item = self.reasons[index].get("Item") if index < len(self.reasons) else None
        return from_item(item) if item is not None else None

    def unexplained(self) -> errors.DomainError:
        """What a cancellation the caller's conditions do not explain means.

        Invalid items never succeed (StoreRejected); a failed condition the caller does not name means
        the items changed meanwhile (Conflict); the rest are transient: conflicts that outlasted the
        client's retries, throttling (ServiceUnavailable).
        """
        codes = {reason.get("Code", "None") for reason in self.reasons}
        if not codes <= _NOT_PERMANENT:
            return errors.StoreRejected()
        if "ConditionalCheckFailed" in codes:
            return errors.Conflict("the data changed meanwhile, retry")
        return errors.WriteCancelled("the store is busy with these items, retry later")


BATCH_GET_LIMIT = 100  # keys per BatchGetItem request
BATCH_GET_ATTEMPTS = 8  # requests per chunk while keys stay unprocessed: about 1.6 s of pauses in all


def batch_get(
    table: Table, wanted: list[keys.Key], *, consistent: bool = True
) -> dict[tuple[str, str], dict[str, Any]]:
    """The items of `wanted` that exist, by (PK, SK): one BatchGetItem per 100 keys, and again for the keys
    DynamoDB left unprocessed (after a short pause: it leaves them when throttled). Keys still unprocessed
    after BATCH_GET_ATTEMPTS requests: ServiceUnavailable (transient), not a wait until the function's
    timeout."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    unique = list({(key[keys.PK], key[keys.SK]): key for key in wanted}.values())
    for start in range(0, len(unique), BATCH_GET_LIMIT):
        chunk = unique[start : start + BATCH_GET_LIMIT]
        request: dict[str, Any] = {table.name: {"Keys": [to_item(key) for key in chunk], "ConsistentRead": consistent}}
        pause = 0.02
        for attempt in range(1, BATCH_GET_ATTEMPTS + 1):
            with translated_errors():
                response = table.client.batch_get_item(RequestItems=request)
            for item in response.get("Responses", {}).get(table.name, []):
                plain = from_item(item)
                found[(plain[keys.PK], plain[keys.SK])] = plain
            request = response.get("UnprocessedKeys") or {}
            if not request:
                break
            if attempt == BATCH_GET_ATTEMPTS:
                raise errors.ServiceUnavailable("the store is busy, retry later")
            time.sleep(pause)
            pause = min(pause * 2, 0.5)
    return found


TRANSACT_GET_LIMIT = 100  # items per TransactGetItems


def transact_get(table: Table, wanted: list[keys.Key], *, attempts: int = 1) -> list[dict[str, Any] | None]:
    """The items of `wanted` (None where absent), in order, as one TransactGetItems: a serializable view,
    which a BatchGetItem is not (it reads each item committed, so a transaction committing during it can
    show half its writes). A read cancelled by a transaction in progress (beyond the client's conflict
    retries) is made again, `attempts` in all; then ServiceUnavailable."""
    request = [{"Get": {"TableName": table.name, "Key": to_item(key)}} for key in wanted]
    for attempt in range(1, attempts + 1):
        try:
            with translated_errors():
                response = table.client.transact_get_items(TransactItems=request)
        except ClientError as error:
            if error_code(error) != "TransactionCanceledException":
                raise
            if attempt == attempts:
                raise TransactionCancelled(list(error.response.get("CancellationReasons", []))).unexplained() from error
            continue
        return [from_item(entry["Item"]) if entry.get("Item") else None for entry in response.get("Responses", [])]
    raise ValueError("attempts must be at least 1")


def transact_write(table: Table, items: list[dict[str, Any]], **extra: Any) -> None:
    """One TransactWriteItems; a cancellation is raised as TransactionCancelled for the caller to explain."""
    try:
        with translated_errors():
            table.client.transact_write_items(TransactItems=items, **extra)
    except ClientError as error:
        if error_code(error) == "TransactionCanceledException":
            raise TransactionCancelled(list(error.response.get("CancellationReasons", []))) from error
        raise
