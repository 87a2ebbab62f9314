"""Admin alerts (StockLow today): read by admins, newest first; the stream processor writes them."""

from __future__ import annotations

from shop.models import Page
from shop.models.alerts import Alert
from shop.services.actor import Actor
from shop.services.ports import AlertStore


class AlertService:
    def __init__(self, *, alerts: AlertStore) -> None:
        self.alerts = alerts

    def newest(self, actor: Actor, *, limit: int, next_token: str | None) -> Page[Alert]:
        actor.require_admin()
        return self.alerts.newest(limit=limit, next_token=next_token)
