"""Bodies of GET /admin/alerts (served by the products function)."""

from __future__ import annotations

from shop.models.alerts import Alert
from shop.models.common import Model


class AlertPage(Model):
    items: list[Alert]
    next_token: str | None


__all__ = ["Alert", "AlertPage"]
