"""Admin alerts: one partition (`ALERTS`), sorted by the crossing's time; written once by the stream processor.

Beside them, per product, the low-stock state the alerts follow (`keys.stock_low_state_key`): whether the
product's total stock (item + stock shards) is low, the alert of the current low spell, a revision that every
change bumps (a change is conditional on the revision its decision read), and the sequence number of the last
product-item record that moved it (records of one item are ordered, so an older one never moves it back).
"""

from __future__ import annotations

from typing import Any

from shop import keys
from shop.limits import DEFAULT_LOW_STOCK_THRESHOLD
from shop.models import Page
from shop.models.alerts import Alert, Claim, StockLowState, StockTotal
from shop.repository.queries import collection_page
from shop.repository.store import (
    ConditionFailed,
    Table,
    TransactionCancelled,
    conditional_write,
    from_item,
    to_item,
    transact_get,
    transact_write,
    translated_errors,
    values,
)

STATE_ENTITY = "STOCK_LOW_STATE"
STATE_NAMES = {"#low": "low", "#alert": "alert", "#revision": "revision"}
SEQUENCE_DIGITS = 40  # stream sequence numbers, zero-padded so that they compare as strings


def _padded(sequence_number: str) -> str:
    return sequence_number.rjust(SEQUENCE_DIGITS, "0")


class AlertRepository:
    def __init__(self, table: Table) -> None:
        self.table = table

    def record(self, alert: Alert) -> bool:
        """Write the alert unless it exists (its key is deterministic); False on a replay."""
        try:
            with conditional_write():
                self.table.client.put_item(
                    TableName=self.table.name,
                    Item=to_item(self._alert_item(alert)),
                    ConditionExpression="attribute_not_exists(PK)",
                )
        except ConditionFailed:
            return False
        return True

    def newest(self, *, limit: int, next_token: str | None) -> Page[Alert]:
        """One Query, newest first."""
        return collection_page(
            self.table,
            scope="alerts",
            partition=keys.ALERTS_PK,
            sk_prefix=keys.ALERT_PREFIX,
            limit=limit,
            next_token=next_token,
        ).as_page(Alert.model_validate)

    # -- the low-stock state ----------------------------------------------------------------------

    def stock_total(self, product_id: str, *, shards_hint: int = 1) -> StockTotal | None:
        """One TransactGetItems of the state, the product item and its `shards_hint` shards (again with every
        shard when the item says it has more): a serializable view, so a transaction moving stock between
        places (a gathering, a spread) is seen whole or not at all; None when the product is gone."""
        hint = shards_hint
        while True:
            shards = [keys.stock_shard_key(product_id, n) for n in range(hint)] if hint > 1 else []
            state, product, *shard_items = transact_get(
                self.table, [keys.stock_low_state_key(product_id), keys.product_key(product_id), *shards]
            )
            if product is None:
                return None
            count = int(product.get("stock_shards", 1))
            if count <= hint or count == 1:
                break
            hint = count
        in_shards = sum(int(shard["stock"]) for shard in shard_items[:count] if shard) if count > 1 else 0
        threshold = product.get("low_stock_threshold")
        return StockTotal(
            product_id=product_id,
            name=str(product["name"]),
            total=int(product.get("stock", 0)) + in_shards,
            threshold=DEFAULT_LOW_STOCK_THRESHOLD if threshold is None else int(threshold),
            shard_count=count,
            state=_state(state),
        )

    def threshold(self, product_id: str) -> int:
        """The product's low_stock_threshold: one eventually consistent GetItem of that attribute."""
        with translated_errors():
            response = self.table.client.get_item(
                TableName=self.table.name,
                Key=to_item(keys.product_key(product_id)),
                ProjectionExpression="low_stock_threshold, PK",
            )
        item = response.get("Item")
        if item is None:
            return 0
        value = from_item(item).get("low_stock_threshold")
        return DEFAULT_LOW_STOCK_THRESHOLD if value is None else int(value)

    def claim_low(self, alert: Alert, seen: StockLowState) -> Claim:
        """The state turns low with `alert`, and the alert is written, in one transaction conditional on the
        state being as `seen` (not low)."""
        update = self._state_update(alert.product_id, low=True, alert=alert, seen=seen)
        put = {
            "Put": {
                "TableName": self.table.name,
                "Item": to_item(self._alert_item(alert)),
                "ConditionExpression": "attribute_not_exists(PK)",
            }
        }
        try:
            transact_write(self.table, [update, put])
        except TransactionCancelled as cancelled:
            if cancelled.failed_condition(1):
                return Claim.EXISTS
            if cancelled.failed_condition(0):
                return Claim.MOVED
            raise cancelled.unexplained() from cancelled
        return Claim.CLAIMED

    def clear_low(self, product_id: str, seen: StockLowState) -> bool:
        """The state turns not low, conditional on it being as `seen`; False when it moved meanwhile."""
        update = self._state_update(product_id, low=False, alert=None, seen=seen)["Update"]
        try:
            with conditional_write():
                self.table.client.update_item(**update)
        except ConditionFailed:
            return False
        return True

    def follow_item(self, product_id: str, *, low: bool, sequence_number: str, alert: Alert | None = None) -> bool:
        """A product-item record (of a product without shards) moved the stock across the threshold: the
        state follows, unless a later record of the item moved it already (False)."""
        alert_value = alert.model_dump() if alert is not None else None
        try:
            with conditional_write():
                self.table.client.update_item(
                    TableName=self.table.name,
                    Key=to_item(keys.stock_low_state_key(product_id)),
                    UpdateExpression="SET entity = :entity, product_id = :pid, #low = :low, #alert = :alert, "
                    "item_sequence = :seq ADD #revision :one",
                    ConditionExpression="attribute_not_exists(item_sequence) OR item_sequence < :seq",
                    ExpressionAttributeNames=STATE_NAMES,
                    ExpressionAttributeValues=values(
                        entity=STATE_ENTITY,
                        pid=product_id,
                        low=low,
                        alert=alert_value,
                        seq=_padded(sequence_number),
                        one=1,
                    ),
                )
        except ConditionFailed:
            return False
        return True

    def _state_update(self, product_id: str, *, low: bool, alert: Alert | None, seen: StockLowState) -> dict[str, Any]:
        condition = "attribute_not_exists(PK)" if seen.revision == 0 else "#revision = :seen"
        attribute_values = values(
            entity=STATE_ENTITY,
            pid=product_id,
            low=low,
            alert=alert.model_dump() if alert is not None else None,
            one=1,
        )
        if seen.revision:
            attribute_values.update(values(seen=seen.revision))
        return {
            "Update": {
                "TableName": self.table.name,
                "Key": to_item(keys.stock_low_state_key(product_id)),
                "UpdateExpression": "SET entity = :entity, product_id = :pid, #low = :low, #alert = :alert "
                "ADD #revision :one",
                "ConditionExpression": condition,
                "ExpressionAttributeNames": STATE_NAMES,
                "ExpressionAttributeValues": attribute_values,
            }
        }

    @staticmethod
    def _alert_item(alert: Alert) -> dict[str, Any]:
        return {**keys.alert_key(alert.created_at, alert.alert_id), "entity": "ALERT", **alert.model_dump()}


def _state(item: dict[str, Any] | None) -> StockLowState:
    if item is None:
        return StockLowState()
    alert = item.get("alert")
    return StockLowState(
        low=bool(item.get("low")),
        revision=int(item.get("revision", 0)),
        alert=Alert.model_validate(alert) if alert else None,
    )
