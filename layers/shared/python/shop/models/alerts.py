"""Alerts for the shop's admins: today one kind, a product's stock crossing below its threshold."""

from __future__ import annotations

from typing import Literal

from shop.models.common import Model, Timestamp

STOCK_LOW = "STOCK_LOW"


class Alert(Model):
    alert_id: str  # <product_id>:<sequence number>:stock-low, the StockLow event's id
    type: Literal["STOCK_LOW"] = "STOCK_LOW"
    product_id: str
    name: str
    stock: int
    previous_stock: int
    low_stock_threshold: int
    created_at: Timestamp
