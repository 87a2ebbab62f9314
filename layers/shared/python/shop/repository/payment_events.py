"""The applied-marks of payment provider events (webhooks): one item per event id, conditional, with a TTL."""

from __future__ import annotations

from typing import Any

from shop import keys
from shop.models.payments import PaymentEvent
from shop.repository.store import ConditionFailed, Table, conditional_write, to_item


class PaymentEventRepository:
    def __init__(self, table: Table, provider: str = "stripe") -> None:
        self.table = table
        self.provider = provider

    def mark_put(self, event: PaymentEvent, *, expires_at: int) -> dict[str, Any]:
        """The mark as one TransactWriteItems `Put`, refused when the event was applied before: the order
        change the event makes goes in the same transaction."""
        item = {
            **keys.webhook_event_key(self.provider, event.event_id),
            "entity": "WEBHOOK_EVENT",
            "event_type": event.event_type,
            "intent_id": event.intent_id,
            "order_id": event.order_id,
            "created": event.created,
            keys.TTL_ATTRIBUTE: expires_at,
        }
        return {
            "Put": {
                "TableName": self.table.name,
                "Item": to_item({name: value for name, value in item.items() if value is not None}),
                "ConditionExpression": "attribute_not_exists(PK)",
            }
        }

    def mark_applied(self, event: PaymentEvent, *, expires_at: int) -> bool:
        put = self.mark_put(event, expires_at=expires_at)["Put"]
        try:
            with conditional_write():
                self.table.client.put_item(**put)
        except ConditionFailed:
            return False
        return True
