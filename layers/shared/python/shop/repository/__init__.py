"""The only code that knows keys, items and boto3. Every method is one GetItem, Query or transaction.

`stream_records` (the table's stream records, read for order_events) is imported from its module,
not from here, so the API functions never load it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shop.runtime.lazy_exports import exports

if TYPE_CHECKING:
    from shop.repository.alerts import AlertRepository
    from shop.repository.carts import CustomerCartRepository
    from shop.repository.customers import CustomerRepository
    from shop.repository.order_effects import OrderEffectsRepository
    from shop.repository.orders import OrderRepository, Placement
    from shop.repository.products import ProductRepository
    from shop.repository.sessions import SessionRepository
    from shop.repository.store import Table

_WHERE = {
    "AlertRepository": "shop.repository.alerts",
    "CustomerCartRepository": "shop.repository.carts",
    "CustomerRepository": "shop.repository.customers",
    "OrderEffectsRepository": "shop.repository.order_effects",
    "OrderRepository": "shop.repository.orders",
    "Placement": "shop.repository.orders",
    "ProductRepository": "shop.repository.products",
    "SessionRepository": "shop.repository.sessions",
    "Table": "shop.repository.store",
}

__all__ = [
    "AlertRepository",
    "CustomerCartRepository",
    "CustomerRepository",
    "OrderEffectsRepository",
    "OrderRepository",
    "Placement",
    "ProductRepository",
    "SessionRepository",
    "Table",
]


if not TYPE_CHECKING:  # mypy reads the imports above; at run time each name loads its module on first use
    __getattr__ = exports(__name__, _WHERE)
