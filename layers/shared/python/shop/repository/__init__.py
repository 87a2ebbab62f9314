"""The only code that knows keys, items and boto3. Every method is one GetItem, Query or transaction.

`stream_records` (the table's stream records, read for order_events) is imported from its module,
not from here, so the API functions never load it.
"""

from shop.repository.alerts import AlertRepository
from shop.repository.carts import CustomerCartRepository
from shop.repository.customers import CustomerRepository
from shop.repository.order_effects import OrderEffectsRepository
from shop.repository.orders import OrderRepository, Placement, SessionClaim
from shop.repository.products import ProductRepository
from shop.repository.sessions import SessionRepository, StoredSession
from shop.repository.store import Table

__all__ = [
    "AlertRepository",
    "CustomerCartRepository",
    "CustomerRepository",
    "OrderEffectsRepository",
    "OrderRepository",
    "Placement",
    "ProductRepository",
    "SessionClaim",
    "SessionRepository",
    "StoredSession",
    "Table",
]
