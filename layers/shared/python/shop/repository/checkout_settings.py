"""The checkout's settings in the table: the `CHECKOUT` partition (every shipping zone, every tax rate, the VERSION
item that counts their edits) and the version's copies, one per `CHECKOUT_VERSION#<n>` partition.

Every edit is one transaction: the zone or rate, the VERSION item conditional on the version the edit read (edits
serialise on it), and every copy set to the new version. A reader checks the snapshot it keeps with one strongly
consistent GetItem of one copy (`edit_id`) and reads the partition again (`snapshot`) only when it names another
edit. Edit ids are unique (not the version, which a new table starts again), so a kept snapshot never passes for
another table's.
"""

from __future__ import annotations

from typing import Any

from shop import errors, ids, keys
from shop.limits import CHECKOUT_VERSION_SHARDS, MAX_PROMO_USE_SHARDS
from shop.models import Page
from shop.models.checkout import CheckoutSettings, Promotion, ShippingZone, TaxRate
from shop.repository.queries import collection_page
from shop.repository.store import (
    Table,
    TransactionCancelled,
    batch_get,
    from_item,
    to_item,
    transact_write,
    translated_errors,
)

ZONE_ENTITY = "SHIPPING_ZONE"
RATE_ENTITY = "TAX_RATE"
PROMOTION_ENTITY = "PROMOTION"
_VERSION_INDEX = 1  # the VERSION item's place in an edit's transaction


class CheckoutSettingsRepository:
    def __init__(self, table: Table) -> None:
        self.table = table

    def edit_id(self, shard: int) -> str | None:
        """The latest edit's id as copy `shard` holds it: one strongly consistent GetItem (None: never edited)."""
        with translated_errors():
            response = self.table.client.get_item(
                TableName=self.table.name,
                Key=to_item(keys.checkout_version_shard_key(shard)),
                ConsistentRead=True,
                ProjectionExpression="edit_id",
            )
        item = response.get("Item")
        return str(from_item(item)["edit_id"]) if item else None

    def snapshot(self) -> CheckoutSettings:
        """Every zone and rate with the version they make: one strongly consistent Query of the partition (more
        pages only past 1 MB, which MAX_SHIPPING_ZONES and the countries' rates keep it far from)."""
        items: list[dict[str, Any]] = []
        request: dict[str, Any] = {
            "TableName": self.table.name,
            "KeyConditionExpression": "PK = :pk",
            "ExpressionAttributeValues": to_item({":pk": keys.CHECKOUT_PK}),
            "ConsistentRead": True,
        }
        while True:
            with translated_errors():
                response = self.table.client.query(**request)
            items += [from_item(item) for item in response.get("Items", [])]
            if "LastEvaluatedKey" not in response:
                break
            request["ExclusiveStartKey"] = response["LastEvaluatedKey"]
        version, edit_id, zones, rates, promotions = 0, None, [], {}, []
        for item in items:
            sort_key = item[keys.SK]
            if sort_key == keys.CHECKOUT_VERSION_SK:
                version, edit_id = int(item["version"]), str(item["edit_id"])
            elif sort_key.startswith(keys.SHIPPING_ZONE_PREFIX):
                zones.append(ShippingZone.model_validate(item))
            elif sort_key.startswith(keys.TAX_RATE_PREFIX):
                rate = TaxRate.model_validate(item)
                rates[rate.country] = rate
            elif sort_key.startswith(keys.PROMOTION_PREFIX):
                promotions.append(Promotion.model_validate(item))
        return CheckoutSettings(
            version=version, edit_id=edit_id, zones=tuple(zones), rates=rates, promotions=tuple(promotions)
        )

    def put_zone(self, zone: ShippingZone, *, read_version: int) -> int:
        item = {**keys.shipping_zone_key(zone.zone_id), "entity": ZONE_ENTITY, **zone.model_dump(exclude_none=True)}
        return self._edit(item, read_version)

    def put_rate(self, rate: TaxRate, *, read_version: int) -> int:
        item = {**keys.tax_rate_key(rate.country), "entity": RATE_ENTITY, **rate.model_dump()}
        return self._edit(item, read_version)

    def put_promotion(self, promotion: Promotion, *, read_version: int) -> int:
        item = {**keys.promotion_key(promotion.promotion_id), "entity": PROMOTION_ENTITY}
        stored = promotion.model_dump(exclude_none=True, exclude={"used_count"})
        return self._edit({**item, **stored}, read_version)

    def uses(self, promotion: Promotion) -> list[int]:
        """Each of a limited promotion's counters: one strongly consistent BatchGetItem (a counter never used: 0)."""
        wanted = [keys.promotion_uses_key(promotion.promotion_id, shard) for shard in range(promotion.use_shards)]
        found = batch_get(self.table, wanted, consistent=True)
        return [int(found.get((key[keys.PK], key[keys.SK]), {}).get("used", 0)) for key in wanted]

    def counts(self, promotion: Promotion) -> list[int]:
        """Each counter of a promotion without a usage limit (its confirmed orders, counted by the stream processor):
        one BatchGetItem, eventually consistent (the count itself trails the orders by the stream's seconds)."""
        wanted = [keys.promotion_count_key(promotion.promotion_id, shard) for shard in range(MAX_PROMO_USE_SHARDS)]
        found = batch_get(self.table, wanted, consistent=False)
        return [int(found.get((key[keys.PK], key[keys.SK]), {}).get("used", 0)) for key in wanted]

    def promotions_page(self, *, limit: int, next_token: str | None) -> Page[Promotion]:
        """The promotions, newest first: one Query of the partition's promotions (every item read is returned)."""
        return collection_page(
            self.table,
            scope="promotions",
            partition=keys.CHECKOUT_PK,
            sk_prefix=keys.PROMOTION_PREFIX,
            limit=limit,
            next_token=next_token,
        ).as_page(Promotion.model_validate)

    def _edit(self, item: dict[str, Any], read_version: int) -> int:
        """Writes `item` as the edit after `read_version`; the new version. VersionMismatch when another edit
        came first (the caller reads again)."""
        new, edit_id = read_version + 1, ids.new_id()
        version_condition = "attribute_not_exists(PK)" if read_version == 0 else "version = :read"
        version_update: dict[str, Any] = {
            "TableName": self.table.name,
            "Key": to_item(keys.checkout_version_key()),
            "UpdateExpression": "SET version = :new, edit_id = :edit",
            "ConditionExpression": version_condition,
            "ExpressionAttributeValues": to_item(
                {":new": new, ":edit": edit_id, **({":read": read_version} if read_version else {})}
            ),
        }
        copies = [
            {
                "Put": {
                    "TableName": self.table.name,
                    "Item": to_item({**keys.checkout_version_shard_key(shard), "version": new, "edit_id": edit_id}),
                }
            }
            for shard in range(CHECKOUT_VERSION_SHARDS)
        ]
        transaction = [{"Put": {"TableName": self.table.name, "Item": to_item(item)}}, {"Update": version_update}]
        try:
            transact_write(self.table, [*transaction, *copies])
        except TransactionCancelled as cancelled:
            if cancelled.failed_condition(_VERSION_INDEX):
                raise errors.VersionMismatch("the checkout's settings changed meanwhile") from cancelled
            raise cancelled.unexplained() from cancelled
        return new
