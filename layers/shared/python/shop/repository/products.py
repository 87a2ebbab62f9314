"""The catalogue: products, their listing entries, their stock, and their reviews with the rating summary."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from shop import errors, ids, keys
from shop.limits import MAX_STOCK
from shop.models import Page, Product, Review
from shop.models.products import CataloguePrice, ProductListing, ProductStatus
from shop.models.stock import StockLayout, StockMove
from shop.repository import listings
from shop.repository.queries import collection_page
from shop.repository.stock_shards import StockShardRepository, copy_updates
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
TRANSACTION_LIMIT = 100
EDITABLE_FIELDS = ("name", "category", "categories", "price_cents", "description", "low_stock_threshold", "status")
# What a cart needs of a product: an archived one shows as unavailable.
CART_PROJECTION = {"#id": "product_id", "#name": "name", "#price": "price_cents", "#status": "status"}


def product_from_item(item: dict[str, Any]) -> Product:
    count = int(item.get("rating_count", 0))
    total = int(item.get("rating_sum", 0))
    product = Product.model_validate(
        {**item, "rating_count": count, "rating_average": round(total / count, 2) if count else None}
    )
    return listed(product, list(item.get("listed_in", [])), int(item.get("listing_version", 0)))


def listed(product: Product, scopes: list[str], version: int) -> Product:
    """`product` knowing the listing scopes its entries are under, and the version of that set."""
    product._listed_in = scopes
    product._listing_version = version
    return product


def product_item(product: Product, scopes: list[str], rating_sum: int = 0) -> dict[str, Any]:
    """The product item: no GSI1 keys (it holds the stock, which every order rewrites)."""
    return {
        **keys.product_key(product.product_id),
        "entity": "PRODUCT",
        **product.model_dump(exclude={"rating_average"}),
        "rating_sum": rating_sum,
        "listed_in": scopes,
        "listing_version": 0,
    }


def _put(table: Table, item: dict[str, Any]) -> dict[str, Any]:
    return {"Put": {"TableName": table.name, "Item": to_item(item)}}


def _delete(table: Table, key: keys.Key) -> dict[str, Any]:
    return {"Delete": {"TableName": table.name, "Key": to_item(key)}}


def _paths_unchanged(table: Table, filed_paths: dict[str, str]) -> list[dict[str, Any]]:
    """A check per category the product is filed in that its path is still the one its scopes were
    computed from: a move that re-paths one between the read and the write cancels the write."""
    return [
        {
            "ConditionCheck": {
                "TableName": table.name,
                "Key": to_item(keys.category_key(slug)),
                "ConditionExpression": "#path = :path",
                "ExpressionAttributeNames": {"#path": "path"},
                "ExpressionAttributeValues": values(path=path),
            }
        }
        for slug, path in filed_paths.items()
    ]


class ProductRepository:
    def __init__(self, table: Table) -> None:
        self.table = table
        self.stock_shards = StockShardRepository(table)

    def create(self, product: Product, scopes: list[str], filed_paths: dict[str, str] | None = None) -> Product:
        """The product and its listing entries under `scopes` (none when archived): one transaction, with
        CategoriesMoved when a category of `filed_paths` (slug -> path the scopes came from) moved meanwhile."""
        entries = listings.entry_items(product, scopes) if product.listed else []
        checks = _paths_unchanged(self.table, filed_paths or {})
        items = [
            {
                "Put": {
                    "TableName": self.table.name,
                    "Item": to_item(product_item(product, scopes if product.listed else [])),
                    "ConditionExpression": "attribute_not_exists(PK)",
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            },
            *checks,
            *(_put(self.table, entry) for entry in entries),
        ]
        try:
            transact_write(self.table, items)
        except TransactionCancelled as cancelled:
            if any(cancelled.failed_condition(index) for index in range(1, 1 + len(checks))):
                raise errors.CategoriesMoved("a category of the product moved meanwhile, retry") from cancelled
            if not cancelled.failed_condition(0):
                raise cancelled.unexplained() from cancelled
            # The id is new: an item with this create's creation time is its own, committed by an attempt
            # whose answer was lost (botocore re-sends after a timeout).
            found = cancelled.old_item(0)
            if found is None or found.get("created_at") != product.created_at:
                raise errors.ProductExists(f"product {product.product_id} exists") from cancelled
        return listed(product, scopes if product.listed else [], 0)

    def cache_scope(self) -> str:
        return self.table.name

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

    def stock_snapshot(self, product_id: str, *, shards_hint: int = 1) -> StockLayout:
        """The stock of the product item and of each shard as of one instant (transactional read)."""
        return self.stock_shards.snapshot(product_id, shards_hint=shards_hint)

    def gather_stock(self, moves: Sequence[StockMove], token: str) -> None:
        """Stock moved between shards of its product, in one transaction (StockSourceShort)."""
        self.stock_shards.gather(moves, token)

    def get_many(self, product_ids: list[str], *, consistent: bool = False) -> dict[str, Product]:
        """One BatchGetItem (more only to fetch back keys DynamoDB left unprocessed).

        A flash-sale product's `stock` here is its product item's alone (`stock_shards` says it has shards)."""
        wanted = list(dict.fromkeys(product_ids))[:BATCH_GET_LIMIT]
        if not wanted:
            return {}
        request: dict[str, Any] = {
            self.table.name: {
                "Keys": [to_item(keys.product_key(pid)) for pid in wanted],
                **({"ConsistentRead": True} if consistent else {}),
            }
        }
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
        """Name and price of each product that exists and is not archived: one BatchGetItem projected to what a cart shows,
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
                if plain.get("status") == ProductStatus.ARCHIVED:
                    continue
                found[plain["product_id"]] = CataloguePrice(plain["product_id"], plain["name"], plain["price_cents"])
            request = response.get("UnprocessedKeys") or {}
        return found

    def list_all(self, *, limit: int, next_token: str | None) -> Page[ProductListing]:
        """Every active product, newest first: one Query of the all-products listing."""
        return listings.listing_page(
            self.table,
            scope=keys.ALL_PRODUCTS,
            order=keys.BY_NEWEST,
            descending=True,
            limit=limit,
            next_token=next_token,
        )

    def list_by_category(
        self, category: str, order: str, *, descending: bool, limit: int, next_token: str | None
    ) -> Page[ProductListing]:
        """The active products of a category's subtree, each once: one Query of its listing by `order`."""
        return listings.listing_page(
            self.table, scope=category, order=order, descending=descending, limit=limit, next_token=next_token
        )

    def update(
        self,
        current: Product,
        changes: dict[str, Any],
        updated_at: str,
        scopes: list[str],
        filed_paths: dict[str, str] | None = None,
    ) -> Product:
        """Apply catalogue edits and re-file the listing entries under `scopes`, all in one transaction
        conditional on the product (its edit time and listing version) not having changed since it was read,
        and on each category of `filed_paths` still having the path `scopes` were computed from
        (CategoriesMoved otherwise: a move must never see stale scopes written behind its back).

        Entries are written whole (name and price are their sort keys); entries under scopes it left are
        deleted. A product re-filed from 25 scopes to 25 others needs more than one transaction's 100
        items: the deletes of the old scopes then follow in a second one."""
        merged = current.model_copy(update={**changes, "updated_at": updated_at})
        scopes = scopes if merged.listed else []
        assignments = {field: getattr(merged, field) for field in EDITABLE_FIELDS}
        names = {f"#{field}": field for field in EDITABLE_FIELDS}
        set_parts = [f"#{field} = :{field}" for field, value in assignments.items() if value is not None]
        remove_parts = [f"#{field}" for field, value in assignments.items() if value is None]
        expression = "SET " + ", ".join(
            [*set_parts, "updated_at = :at", "listed_in = :scopes", "listing_version = :next"]
        )
        # Products written before listing entries carried GSI1 keys themselves.
        expression += " REMOVE " + ", ".join([*remove_parts, keys.GSI1PK, keys.GSI1SK])
        update = {
            "Update": {
                "TableName": self.table.name,
                "Key": to_item(keys.product_key(current.product_id)),
                "UpdateExpression": expression,
                # The shard count too: a product made hot meanwhile has shards carrying the old price.
                "ConditionExpression": (
                    "attribute_exists(PK) AND updated_at = :seen AND "
                    "(listing_version = :version OR attribute_not_exists(listing_version)) AND "
                    "(attribute_not_exists(stock_shards) OR stock_shards = :shards)"
                ),
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": values(
                    **{k: v for k, v in assignments.items() if v is not None},
                    at=updated_at,
                    scopes=scopes,
                    seen=current.updated_at,
                    version=current._listing_version,
                    next=current._listing_version + 1,
                    shards=current.stock_shards,
                ),
            }
        }
        stale = [scope for scope in current._listed_in if scope not in scopes]
        puts = [_put(self.table, entry) for entry in listings.entry_items(merged, scopes)] if merged.listed else []
        deletes = [
            _delete(self.table, key)
            for key in listings.entry_keys(current.product_id, stale, with_all=not merged.listed)
        ]
        copies = []
        if current.stock_shards > 1 and (merged.price_cents, merged.status) != (current.price_cents, current.status):
            # Placement checks a flash-sale product's price and status on its shards: they change with it.
            copies = copy_updates(
                self.table,
                merged.product_id,
                current.stock_shards,
                price_cents=merged.price_cents,
                status=merged.status.value,
            )
        checks = _paths_unchanged(self.table, filed_paths or {})
        first = [update, *copies, *checks, *puts, *deletes][:TRANSACTION_LIMIT]
        rest = [update, *copies, *checks, *puts, *deletes][TRANSACTION_LIMIT:]
        try:
            transact_write(self.table, first)
        except TransactionCancelled as cancelled:
            if any(cancelled.failed_condition(index) for index in range(1 + len(copies))):
                raise errors.Conflict("the product changed meanwhile, retry") from cancelled
            if any(cancelled.failed_condition(1 + len(copies) + index) for index in range(len(checks))):
                raise errors.CategoriesMoved("a category of the product moved meanwhile, retry") from cancelled
            raise cancelled.unexplained() from cancelled
        if rest:
            transact_write(self.table, rest)
        return listed(merged, scopes, current._listing_version + 1)

    def archive(self, current: Product, updated_at: str) -> Product:
        """ARCHIVED, and every listing entry deleted: one transaction, conditional as `update` is."""
        return self.update(current, {"status": ProductStatus.ARCHIVED}, updated_at, [])

    def relist(self, products: list[tuple[Product, list[str]]]) -> list[str]:
        """Re-file each product's entries under its new scopes (a category move): entries under scopes it
        left deleted, entries under scopes it joined written, its scope set replaced conditional on its
        listing version. As few transactions as 100 items allow; the ids whose product changed
        meanwhile (their transaction's condition failed) are returned for the caller to re-read."""
        groups: list[list[dict[str, Any]]] = [[]]
        owners: list[list[str]] = [[]]
        for product, scopes in products:
            if not product.listed:
                continue
            joined = [scope for scope in scopes if scope not in product._listed_in]
            left = [scope for scope in product._listed_in if scope not in scopes]
            if not joined and not left:
                continue
            items = [
                {
                    "Update": {
                        "TableName": self.table.name,
                        "Key": to_item(keys.product_key(product.product_id)),
                        "UpdateExpression": "SET listed_in = :scopes, listing_version = :next",
                        "ConditionExpression": (
                            "#status = :active AND (listing_version = :version OR attribute_not_exists(listing_version))"
                        ),
                        "ExpressionAttributeNames": {"#status": "status"},
                        "ExpressionAttributeValues": values(
                            scopes=scopes,
                            next=product._listing_version + 1,
                            version=product._listing_version,
                            active=ProductStatus.ACTIVE.value,
                        ),
                    }
                },
                *(
                    _put(self.table, entry)
                    for entry in listings.entry_items(product, joined)
                    if entry[keys.SK] != f"{keys.LISTING_PREFIX}{keys.ALL_PRODUCTS}#{keys.BY_NEWEST}"
                ),
                *(_delete(self.table, key) for key in listings.entry_keys(product.product_id, left, with_all=False)),
            ]
            if len(groups[-1]) + len(items) > TRANSACTION_LIMIT:
                groups.append([])
                owners.append([])
            groups[-1].extend(items)
            owners[-1].append(product.product_id)
        changed: list[str] = []
        for group, ids_in_group in zip(groups, owners, strict=True):
            if not group:
                continue
            try:
                transact_write(self.table, group)
            except TransactionCancelled as cancelled:
                if "ConditionalCheckFailed" not in {reason.get("Code") for reason in cancelled.reasons}:
                    raise cancelled.unexplained() from cancelled
                changed.extend(ids_in_group)
        return changed

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
