"""One paginated Query: the building block of every list route."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from shop.keys import GSI1
from shop.models import Page
from shop.repository import pagination
from shop.repository.store import Table, from_item, translated_errors

T = TypeVar("T")


@dataclass(frozen=True)
class QueryPage:
    items: list[dict[str, Any]]
    next_token: str | None

    def as_page(self, build: Callable[[dict[str, Any]], T]) -> Page[T]:
        return Page[T](items=[build(item) for item in self.items], next_token=self.next_token)


def query_page(
    table: Table,
    *,
    scope: str,
    key_condition: str,
    names: dict[str, str],
    values: dict[str, Any],
    limit: int,
    next_token: str | None,
    newest_first: bool = True,
    index: str | None = None,
) -> QueryPage:
    params: dict[str, Any] = {
        "TableName": table.name,
        "KeyConditionExpression": key_condition,
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": values,
        "ScanIndexForward": not newest_first,
        "Limit": limit,
    }
    if index is not None:
        params["IndexName"] = index
    if next_token:
        params["ExclusiveStartKey"] = pagination.decode(next_token, scope)
    with translated_errors():
        response = table.client.query(**params)
    last = response.get("LastEvaluatedKey")
    return QueryPage(
        items=[from_item(item) for item in response.get("Items", [])],
        next_token=pagination.encode(scope, last) if last else None,
    )


def gsi1_page(
    table: Table, *, scope: str, partition: str, limit: int, next_token: str | None, newest_first: bool = True
) -> QueryPage:
    return query_page(
        table,
        scope=scope,
        key_condition="#pk = :pk",
        names={"#pk": "GSI1PK"},
        values={":pk": {"S": partition}},
        limit=limit,
        next_token=next_token,
        newest_first=newest_first,
        index=GSI1,
    )


def collection_page(
    table: Table,
    *,
    scope: str,
    partition: str,
    sk_prefix: str,
    limit: int,
    next_token: str | None,
    newest_first: bool = True,
) -> QueryPage:
    return query_page(
        table,
        scope=scope,
        key_condition="#pk = :pk AND begins_with(#sk, :prefix)",
        names={"#pk": "PK", "#sk": "SK"},
        values={":pk": {"S": partition}, ":prefix": {"S": sk_prefix}},
        limit=limit,
        next_token=next_token,
        newest_first=newest_first,
    )
