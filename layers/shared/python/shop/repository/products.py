"""The catalogue: products, their stock, and their reviews with the rating summary."""

from __future__ import annotations

from typing import Any

from shop import errors, ids, keys
from shop.limits import MAX_STOCK
from shop.models import Page, Product, Review
from shop.models.products import CataloguePrice
from shop.models.stock import StockLayout
from shop.repository.queries import collection_page, gsi1_page
from shop.repository.stock_shards import StockShardRepository, reprice_updates
from shop.repository.store import (
    ConditionFailed,
    Table,
    TransactionCancelled,
    conditional_write,
    from_item,
    to_item,
    transact_write,
    translated_errors,
    values,
)

BATCH_GET_LIMIT = 100
EDITABLE_FIELDS = ("name", "category", "price_cents", "description")
# What a cart needs of a product; archival will add the product's status here.
CART_PROJECTION = {"#id": "product_id", "#name": "name", "#price": "price_cents"}


def product_from_item(item: dict[str, Any]) -> Product:
    count = int(item.get("rating_count", 0))
    total = int(item.get("rating_sum", 0))
    return Product.model_validate(
        {**item, "rating_count": count, "rating_average": round(total / count, 2) if count else None}
    )


def product_item(product: Product, rating_sum: int = 0) -> dict[str, Any]:
    return {
        **keys.product_key(product.product_id),
        **keys.product_category_gsi(product.category, product.name, product.product_id),
        "entity": "PRODUCT",
        **product.model_dump(exclude={"rating_average"}),
        "rating_sum": rating_sum,
    }


class ProductRepository:
    def __init__(self, table: Table) -> None:
        self.table = table
        self.stock_shards = StockShardRepository(table)

    def create(self, product: Product) -> Product:
        try:
            with conditional_write():
                self.table.client.put_item(
                    TableName=self.table.name,
                    Item=to_item(product_item(product)),
                    ConditionExpression="attribute_not_exists(PK)",
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
        except ConditionFailed as failed:
            # The id is new: an item with this create's creation time is its own, committed by an attempt
            # whose answer was lost (botocore re-sends after a timeout).
            if failed.item is None or failed.item.get("created_at") != product.created_at:
                raise errors.ProductExists(f"product {product.product_id} exists") from failed
        return product

    def get(self, product_id: str) -> Product:
        with translated_errors():
            response = self.table.client.get_item(TableName=self.table.name, Key=to_item(keys.product_key(product_id)))
        if "Item" not in response:
            raise errors.ProductNotFound([product_id])
        product = product_from_item(from_item(response["Item"]))
        if product.stock_shards > 1:  # a flash-sale product: its stock is the sum of its item's and its shards'
            shards = self.stock_shards.shard_stock(product_id, product.stock_shards)
            product = product.model_copy(update={"stock": product.stock + sum(shards)})
        return product

    def stock_layout(self, product_id: str, *, shards_hint: int = 1) -> StockLayout:
        """Where the product's stock is, read consistently in one BatchGetItem (ProductNotFound)."""
        return self.stock_shards.layout(product_id, shards_hint=shards_hint)

    def spread_stock(self, seen: StockLayout, shards: int) -> StockLayout:
        """All of the stock evenly over `shards` shards (1: back onto the product item); Conflict."""
        return self.stock_shards.spread(seen, shards)

    def get_many(self, product_ids: list[str]) -> dict[str, Product]:
        """One BatchGetItem (more only to fetch back keys DynamoDB left unprocessed).

        A flash-sale product's `stock` here is its product item's alone (`stock_shards` says it has shards)."""
        wanted = list(dict.fromkeys(product_ids))[:BATCH_GET_LIMIT]
        request: dict[str, Any] = {self.table.name: {"Keys": [to_item(keys.product_key(pid)) for pid in wanted]}}
        found: dict[str, Product] = {}
        while request:
            with translated_errors():
                response = self.table.client.batch_get_item(RequestItems=request)
            for item in response.get("Responses", {}).get(self.table.name, []):
                product = product_from_item(from_item(item))
                found[product.product_id] = product
            request = response.get("UnprocessedKeys") or {}
        return found

    def current_prices(self, product_ids: list[str]) -> dict[str, CataloguePrice]:
        """Name and price of each product that exists: one BatchGetItem projected to what a cart shows,
        eventually consistent as checkout's read is (more calls only for keys DynamoDB left unprocessed)."""
        wanted = list(dict.fromkeys(product_ids))[:BATCH_GET_LIMIT]
        if not wanted:
            return {}
        request: dict[str, Any] = {
            self.table.name: {
                "Keys": [to_item(keys.product_key(pid)) for pid in wanted],
                "ProjectionExpression": ", ".join(CART_PROJECTION),
                "ExpressionAttributeNames": CART_PROJECTION,
            }
        }
        found: dict[str, CataloguePrice] = {}
        while request:
            with translated_errors():
                response = self.table.client.batch_get_item(RequestItems=request)
            for item in response.get("Responses", {}).get(self.table.name, []):
                plain = from_item(item)
                found[plain["product_id"]] = CataloguePrice(plain["product_id"], plain["name"], plain["price_cents"])
            request = response.get("UnprocessedKeys") or {}
        return found

    def list_by_category(self, category: str, *, limit: int, next_token: str | None) -> Page[Product]:
        return gsi1_page(
            self.table,
            scope=f"category:{category}",
            partition=keys.category_pk(category),
            limit=limit,
            next_token=next_token,
            newest_first=False,
        ).as_page(product_from_item)

    def update(self, current: Product, changes: dict[str, Any], updated_at: str) -> Product:
        """Apply catalogue edits, conditional on the product not having changed since it was read."""
        merged = current.model_copy(update={**changes, "updated_at": updated_at})
        gsi = keys.product_category_gsi(merged.category, merged.name, merged.product_id)
        assignments = {field: getattr(merged, field) for field in EDITABLE_FIELDS}
        names = {f"#{field}": field for field in EDITABLE_FIELDS}
        set_parts = [f"#{field} = :{field}" for field, value in assignments.items() if value is not None]
        remove_parts = [f"#{field}" for field, value in assignments.items() if value is None]
        expression = "SET " + ", ".join([*set_parts, "updated_at = :at", "GSI1PK = :gpk", "GSI1SK = :gsk"])
        if remove_parts:
            expression += " REMOVE " + ", ".join(remove_parts)
        update = {
            "TableName": self.table.name,
            "Key": to_item(keys.product_key(current.product_id)),
            "UpdateExpression": expression,
            # The shard count too: a product made hot meanwhile has shards carrying the old price.
            "ConditionExpression": (
                "attribute_exists(PK) AND updated_at = :seen AND "
                "(attribute_not_exists(stock_shards) OR stock_shards = :shards)"
            ),
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values(
                **{k: v for k, v in assignments.items() if v is not None},
                at=updated_at,
                gpk=gsi[keys.GSI1PK],
                gsk=gsi[keys.GSI1SK],
                seen=current.updated_at,
                shards=current.stock_shards,
            ),
        }
        if current.stock_shards > 1 and merged.price_cents != current.price_cents:
            # Placement checks a flash-sale product's price on its shards: they change with the product.
            try:
                transact_write(
                    self.table,
                    [
                        {"Update": update},
                        *reprice_updates(self.table, merged.product_id, current.stock_shards, merged.price_cents),
                    ],
                )
            except TransactionCancelled as cancelled:
                if any(cancelled.failed_condition(index) for index in range(len(cancelled.reasons))):
                    raise errors.Conflict("the product changed meanwhile, retry") from cancelled
                raise cancelled.unexplained() from cancelled
            return merged
        try:
            with conditional_write():
                response = self.table.client.update_item(**update, ReturnValues="ALL_NEW")
        except ConditionFailed as failed:
            raise errors.Conflict("the product changed meanwhile, retry") from failed
        return product_from_item(from_item(response["Attributes"]))

    def adjust_stock(self, product_id: str, delta: int) -> int:
        """Add ``delta`` to stock, conditional on the result staying within 0..MAX_STOCK.

        An ADD is not idempotent, and botocore re-sends a request whose answer timed out: each
        adjustment carries its own id, so a re-sent one finds itself already applied.
        """
        if delta <= 0:
            bound, limit = "stock >= :limit", -delta
        else:
            bound, limit = "stock <= :limit", MAX_STOCK - delta
        adjustment = ids.new_id()
        try:
            with conditional_write():
                response = self.table.client.update_item(
                    TableName=self.table.name,
                    Key=to_item(keys.product_key(product_id)),
                    UpdateExpression="ADD stock :delta SET last_stock_adjustment = :adjustment",
                    ConditionExpression=(
                        f"attribute_exists(PK) AND {bound} AND "
                        "(attribute_not_exists(last_stock_adjustment) OR last_stock_adjustment <> :adjustment)"
                    ),
                    ExpressionAttributeValues=values(delta=delta, limit=limit, adjustment=adjustment),
                    ReturnValues="UPDATED_NEW",
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
        except ConditionFailed as failed:
            if failed.item is None:
                raise errors.ProductNotFound([product_id]) from failed
            stock = int(failed.item["stock"])
            if failed.item.get("last_stock_adjustment") == adjustment:
                return stock
            if delta <= 0:
                raise errors.InsufficientStock("stock cannot go below zero", {"stock": stock}) from failed
            raise errors.StockLimitExceeded(
                f"stock cannot go above {MAX_STOCK}", {"delta": f"stock is {stock}, at most {MAX_STOCK} allowed"}
            ) from failed
        return int(from_item(response["Attributes"])["stock"])

    def add_review(self, review: Review) -> Review:
        """Review, one-per-customer marker, customer's copy and rating summary: one transaction."""
        body = {"entity": "REVIEW", **review.model_dump()}
        name = self.table.name
        items = [
            {
                "Put": {
                    "TableName": name,
                    "ConditionExpression": "attribute_not_exists(PK)",
                    "Item": to_item(
                        {
                            **keys.reviewer_marker_key(review.product_id, review.customer_id),
                            "entity": "REVIEW_MARKER",
                            "created_at": review.created_at,
                        }
                    ),
                }
            },
            {
                "Update": {
                    "TableName": name,
                    "Key": to_item(keys.product_key(review.product_id)),
                    "UpdateExpression": "ADD rating_count :one, rating_sum :rating",
                    "ConditionExpression": "attribute_exists(PK)",
                    "ExpressionAttributeValues": values(one=1, rating=review.rating),
                }
            },
            {
                "Put": {
                    "TableName": name,
                    "Item": to_item(
                        {
                            **keys.product_review_key(
                                review.product_id, review.rating, review.created_at, review.customer_id
                            ),
                            **body,
                        }
                    ),
                }
            },
            {
                "Put": {
                    "TableName": name,
                    "Item": to_item(
                        {
                            **keys.customer_review_key(review.customer_id, review.created_at, review.product_id),
                            **body,
                        }
                    ),
                }
            },
        ]
        try:
            transact_write(self.table, items)
        except TransactionCancelled as cancelled:
            if cancelled.failed_condition(1):
                raise errors.ProductNotFound([review.product_id]) from cancelled
            if cancelled.failed_condition(0):
                raise errors.AlreadyReviewed("you have already reviewed this product") from cancelled
            raise cancelled.unexplained() from cancelled
        return review

    def reviews_of_product(self, product_id: str, *, limit: int, next_token: str | None) -> Page[Review]:
        """One Query over the product's reviews only, so every item read is returned (amplification 1.00).

        Reviews exist only for an existing product, so a page with reviews proves the product. Only an
        empty first page reads the product too (GetItem), to tell "no reviews yet" from 404: those
        products pay a second call, instead of every product's first page reading the product item.
        """
        page = collection_page(
            self.table,
            scope=f"product-reviews:{product_id}",
            partition=keys.product_pk(product_id),
            sk_prefix=keys.REVIEW_BY_RATING_PREFIX,
            limit=limit,
            next_token=next_token,
        )
        if not page.items and not next_token and not self._exists(product_id):
            raise errors.ProductNotFound([product_id])
        return page.as_page(Review.model_validate)

    def _exists(self, product_id: str) -> bool:
        with translated_errors():
            response = self.table.client.get_item(
                TableName=self.table.name,
                Key=to_item(keys.product_key(product_id)),
                ProjectionExpression="PK",
            )
        return "Item" in response

    def reviews_of_customer(self, customer_id: str, *, limit: int, next_token: str | None) -> Page[Review]:
        return collection_page(
            self.table,
            scope=f"customer-reviews:{customer_id}",
            partition=keys.customer_pk(customer_id),
            sk_prefix=keys.CUSTOMER_REVIEW_PREFIX,
            limit=limit,
            next_token=next_token,
        ).as_page(Review.model_validate)
