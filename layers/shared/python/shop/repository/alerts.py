"""Admin alerts: one partition (`ALERTS`), sorted by the crossing's time; written once by the stream processor."""

from __future__ import annotations

from shop import keys
from shop.models import Page
from shop.models.alerts import Alert
from shop.repository.queries import collection_page
from shop.repository.store import ConditionFailed, Table, conditional_write, to_item


class AlertRepository:
    def __init__(self, table: Table) -> None:
        self.table = table

    def record(self, alert: Alert) -> bool:
        """Write the alert unless it exists (its key is deterministic); False on a replay."""
        try:
            with conditional_write():
                self.table.client.put_item(
                    TableName=self.table.name,
                    Item=to_item(
                        {**keys.alert_key(alert.created_at, alert.alert_id), "entity": "ALERT", **alert.model_dump()}
                    ),
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
