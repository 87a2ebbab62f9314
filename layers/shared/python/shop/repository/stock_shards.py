"""Flash-sale stock shards: items, reads and the transaction that spreads a product's stock over them.

A hot product's stock lives in `stock_shards` items, each under its own partition key
(keys.stock_shard_key), so its orders write many keys instead of the product item's one. Each shard
carries a copy of the product's price: placement checks the price on the shard it takes from and never
touches the product item. The product item keeps `stock_shards` (the count) and whatever stock is not in
a shard (an admin's later adjustment; 0 right after spreading).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from shop import errors, keys
from shop.models.products import ProductStatus
from shop.models.stock import StockLayout, StockMove, StockTake
from shop.repository.store import (
    Table,
    TransactionCancelled,
    from_item,
    to_item,
    transact_get,
    transact_write,
    translated_errors,
    values,
)

SHARD_ENTITY = "STOCK_SHARD"
ARCHIVED = ProductStatus.ARCHIVED.value
# A product item written before shards existed has no stock_shards attribute.
NOT_SHARDED = "(attribute_not_exists(stock_shards) OR stock_shards = :seen_count)"
# TransactGetItems a snapshot makes before ServiceUnavailable: each is cancelled by a write transaction in
# progress on one of its items, or made again when the product was re-spread meanwhile.
SNAPSHOT_ATTEMPTS = 3
# A shard counts the writes that moved its stock without selling or returning any (a gathering, a spread):
# a stream record whose count changed moved no unit of the product's total, and alerts skip it.
SIDEWAYS_MOVES = "sideways_moves"


def even_split(total: int, shards: int) -> tuple[int, ...]:
    """`total` over `shards` as evenly as whole units go, the remainder on the first shards."""
    base, extra = divmod(total, shards)
    return tuple(base + (1 if shard < extra else 0) for shard in range(shards))


def shard_label(shard: int) -> str:
    """How an order records a shard it took from (map keys are strings)."""
    return f"{shard:02d}"


def take_update(table: Table, product_id: str, take: StockTake, *, price_cents: int) -> dict[str, Any]:
    """The transaction item taking `take` from its place, conditional on stock and the price read."""
    key = keys.product_key(product_id) if take.source is None else keys.stock_shard_key(product_id, take.source)
    return {
        "Update": {
            "TableName": table.name,
            "Key": to_item(key),
            "UpdateExpression": "SET stock = stock - :qty",
            # A shard carries its product's status (copied by the archive), so neither place sells an archived product.
            "ConditionExpression": (
                "attribute_exists(PK) AND stock >= :qty AND price_cents = :price AND "
                "(attribute_not_exists(#status) OR #status <> :archived)"
            ),
            "ExpressionAttributeNames": {"#status": "status"},
            "ExpressionAttributeValues": values(qty=take.quantity, price=price_cents, archived=ARCHIVED),
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
    }


def restock_update(table: Table, product_id: str, shard: int | None, quantity: int) -> dict[str, Any]:
    """The transaction item returning `quantity` to a shard (or, None, to the product item)."""
    key = keys.product_key(product_id) if shard is None else keys.stock_shard_key(product_id, shard)
    return {
        "Update": {
            "TableName": table.name,
            "Key": to_item(key),
            "UpdateExpression": "ADD stock :qty",
            "ConditionExpression": "attribute_exists(PK)",
            "ExpressionAttributeValues": values(qty=quantity),
        }
    }


def copy_updates(table: Table, product_id: str, shards: int, *, price_cents: int, status: str) -> list[dict[str, Any]]:
    """Transaction items copying the product's price and status onto every shard (with its own update)."""
    return [
        {
            "Update": {
                "TableName": table.name,
                "Key": to_item(keys.stock_shard_key(product_id, shard)),
                "UpdateExpression": "SET price_cents = :price, #status = :status",
                "ConditionExpression": "attribute_exists(PK)",
                "ExpressionAttributeNames": {"#status": "status"},
                "ExpressionAttributeValues": values(price=price_cents, status=status),
            }
        }
        for shard in range(shards)
    ]


class StockShardRepository:
    def __init__(self, table: Table) -> None:
        self.table = table

    def layout(self, product_id: str, *, shards_hint: int = 1) -> StockLayout:
        """The product item's stock and every shard's, strongly consistent, in one BatchGetItem of the
        product and its `shards_hint` shards (1: none; a second one for the shards the hint left out).

        ProductNotFound."""
        hinted = range(shards_hint) if shards_hint > 1 else range(0)
        main, shard_stock = self._read(product_id, hinted, with_product=True)
        if main is None:
            raise errors.ProductNotFound([product_id])
        count = int(main.get("stock_shards", 1))
        missing = [shard for shard in range(count) if shard not in hinted]
        if missing and count > 1:
            _, more = self._read(product_id, missing, with_product=False)
            shard_stock.update(more)
        return StockLayout(
            product_id=product_id,
            main=int(main.get("stock", 0)),
            shards=tuple(shard_stock.get(shard, 0) for shard in range(count)) if count > 1 else (),
            price_cents=int(main["price_cents"]),
            archived=main.get("status") == ARCHIVED,
        )

    def snapshot(self, product_id: str, *, shards_hint: int = 1) -> StockLayout:
        """The product item's stock and every shard's as of one instant: one TransactGetItems, serializable
        with the transactions that move stock between shards (a BatchGetItem, item by item, can read a shard
        before a gathering and its source after it, and miss the units in flight). For deciding that the
        stock is short; ProductNotFound, ServiceUnavailable when writes keep cancelling it."""
        count = shards_hint if shards_hint > 1 else 1
        for _ in range(SNAPSHOT_ATTEMPTS):
            wanted = [keys.product_key(product_id)]
            wanted += [keys.stock_shard_key(product_id, shard) for shard in range(count if count > 1 else 0)]
            found = transact_get(self.table, wanted, attempts=SNAPSHOT_ATTEMPTS)
            main = found[0]
            if main is None:
                raise errors.ProductNotFound([product_id])
            stored_count = int(main.get("stock_shards", 1))
            if max(stored_count, 1) != count:  # spread meanwhile: read again with the stored count
                count = max(stored_count, 1)
                continue
            return StockLayout(
                product_id=product_id,
                main=int(main.get("stock", 0)),
                shards=tuple(int(shard["stock"]) if shard else 0 for shard in found[1:]),
                price_cents=int(main["price_cents"]),
                archived=main.get("status") == ARCHIVED,
            )
        raise errors.ServiceUnavailable("the stock of this product is moving fast, retry")

    def shard_stock(self, product_id: str, shards: int) -> tuple[int, ...]:
        """Each shard's stock: one BatchGetItem (eventually consistent, as product reads are)."""
        _, found = self._read(product_id, range(shards), with_product=False, consistent=False)
        return tuple(found.get(shard, 0) for shard in range(shards))

    def _read(
        self, product_id: str, shards: Iterable[int], *, with_product: bool, consistent: bool = True
    ) -> tuple[dict[str, Any] | None, dict[int, int]]:
        wanted = [keys.stock_shard_key(product_id, shard) for shard in shards]
        if with_product:
            wanted.append(keys.product_key(product_id))
        request: dict[str, Any] = {
            self.table.name: {"Keys": [to_item(key) for key in wanted], "ConsistentRead": consistent}
        }
        product: dict[str, Any] | None = None
        stock: dict[int, int] = {}
        while request:
            with translated_errors():
                response = self.table.client.batch_get_item(RequestItems=request)
            for raw in response.get("Responses", {}).get(self.table.name, []):
                item = from_item(raw)
                if item[keys.SK] == keys.PRODUCT_SK:
                    product = item
                else:
                    stock[int(item["shard"])] = int(item["stock"])
            request = response.get("UnprocessedKeys") or {}
        return product, stock

    def spread(self, seen: StockLayout, shards: int) -> StockLayout:
        """Move all of the product's stock (`seen`, as read) evenly into `shards` shards, or back onto the
        product item (`shards` = 1), in one transaction conditional on every place holding what was read and
        on the price the shards copy. Conflict when anything moved meanwhile (an order, an adjustment)."""
        target = StockLayout(
            product_id=seen.product_id,
            main=seen.total if shards == 1 else 0,
            shards=even_split(seen.total, shards) if shards > 1 else (),
            price_cents=seen.price_cents,
            archived=seen.archived,
        )
        if target == seen:
            return seen
        name, pid = self.table.name, seen.product_id
        old_count = len(seen.shards)
        items: list[dict[str, Any]] = [
            {
                "Update": {
                    "TableName": name,
                    "Key": to_item(keys.product_key(pid)),
                    "UpdateExpression": "SET stock = :main, stock_shards = :count",
                    "ConditionExpression": (
                        "stock = :seen AND price_cents = :price AND "
                        "(attribute_not_exists(#status) OR #status <> :archived) AND "
                        + ("stock_shards = :seen_count" if old_count else NOT_SHARDED)
                    ),
                    "ExpressionAttributeNames": {"#status": "status"},
                    "ExpressionAttributeValues": values(
                        archived=ARCHIVED,
                        main=target.main,
                        count=target.shard_count,
                        seen=seen.main,
                        price=seen.price_cents,
                        seen_count=seen.shard_count,
                    ),
                }
            }
        ]
        for shard in range(max(old_count, len(target.shards))):
            key = to_item(keys.stock_shard_key(pid, shard))
            if shard < old_count and shard < len(target.shards):
                items.append(
                    {
                        "Update": {
                            "TableName": name,
                            "Key": key,
                            "UpdateExpression": f"SET stock = :stock, price_cents = :price ADD {SIDEWAYS_MOVES} :one",
                            "ConditionExpression": "stock = :seen",
                            "ExpressionAttributeValues": values(
                                stock=target.shards[shard], price=seen.price_cents, seen=seen.shards[shard], one=1
                            ),
                        }
                    }
                )
            elif shard < old_count:
                items.append(
                    {
                        "Delete": {
                            "TableName": name,
                            "Key": key,
                            "ConditionExpression": "stock = :seen",
                            "ExpressionAttributeValues": values(seen=seen.shards[shard]),
                        }
                    }
                )
            else:
                items.append(
                    {
                        "Put": {
                            "TableName": name,
                            "Item": to_item(
                                {
                                    **keys.stock_shard_key(pid, shard),
                                    "entity": SHARD_ENTITY,
                                    "product_id": pid,
                                    "shard": shard,
                                    "stock": target.shards[shard],
                                    "price_cents": seen.price_cents,
                                }
                            ),
                            "ConditionExpression": "attribute_not_exists(PK)",
                        }
                    }
                )
        try:
            transact_write(self.table, items)
        except TransactionCancelled as cancelled:
            if any(cancelled.failed_condition(index) for index in range(len(items))):
                raise errors.Conflict("the stock moved meanwhile, retry") from cancelled
            raise cancelled.unexplained() from cancelled
        return target

    def gather(self, moves: Sequence[StockMove], token: str) -> None:
        """Move stock between shards of each product in one transaction (at most MAX_TRANSACTION_ITEMS: one
        item per source shard and per target shard), each source conditional on holding what leaves it.
        `token` is its ClientRequestToken, unique to this gathering: a re-send after a lost answer is
        recognised by DynamoDB instead of moving the stock again or failing on the sources it emptied.

        Nothing is sold, so each product's total is unchanged whatever else runs; a source that held too
        little (or a shard gone: the product was re-spread) is StockSourceShort with what it held."""
        taken: dict[tuple[str, int], int] = {}
        added: dict[tuple[str, int], int] = {}
        for move in moves:
            taken[(move.product_id, move.source)] = taken.get((move.product_id, move.source), 0) + move.quantity
            added[(move.product_id, move.target)] = added.get((move.product_id, move.target), 0) + move.quantity
        places = [(place, -quantity) for place, quantity in taken.items()]
        places += list(added.items())
        items = [
            {
                "Update": {
                    "TableName": self.table.name,
                    "Key": to_item(keys.stock_shard_key(pid, shard)),
                    "UpdateExpression": f"ADD stock :change, {SIDEWAYS_MOVES} :one",
                    "ConditionExpression": "attribute_exists(PK)" + (" AND stock >= :least" if change < 0 else ""),
                    "ExpressionAttributeValues": values(
                        change=change, one=1, **({"least": -change} if change < 0 else {})
                    ),
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            }
            for (pid, shard), change in places
        ]
        try:
            transact_write(self.table, items, ClientRequestToken=token)
        except TransactionCancelled as cancelled:
            seen: dict[str, dict[int | None, int]] = {}
            for index, ((pid, shard), _) in enumerate(places):
                if cancelled.failed_condition(index):
                    old = cancelled.old_item(index)
                    seen.setdefault(pid, {})[shard] = int(old.get("stock", 0)) if old else 0
            if not seen:
                raise cancelled.unexplained() from cancelled
            raise errors.StockSourceShort(seen, {}) from cancelled
