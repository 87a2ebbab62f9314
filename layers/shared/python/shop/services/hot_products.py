"""A short per-instance cache of flash-sale products' reads (every read of one hot product hit one key).

Only a product on sale and marked hot (stock_shards > 1) is kept, for HOT_PRODUCT_CACHE_SECONDS (shop.wiring's):
what GET /products/{id} shows (its stock may lag by that long) and the catalogue entry placement prices from
(a stale price only fails the placement's price condition; the reprice reads past the cache). Entries are
kept per store scope (the table), so two tables never share one, and dropped after a SnapStart restore.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable
from enum import StrEnum

from shop.limits import DEFAULT_HOT_PRODUCT_CACHE_SECONDS
from shop.models import Product
from shop.runtime import snapstart

# Beyond this many entries an insert first sweeps out the expired ones (only hot products are ever kept).
SWEEP_AT = 256

_caches: weakref.WeakSet[HotProductCache] = weakref.WeakSet()


def clear_all() -> None:
    """Empty every cache of the process (after a SnapStart restore; the bench's cold reads)."""
    for cache in list(_caches):
        cache.clear()


class Kind(StrEnum):
    VIEW = "view"  # the product as GET shows it: stock summed over its shards
    CATALOGUE = "catalogue"  # the product as placement prices it: its item alone


def is_hot(product: Product) -> bool:
    return product.stock_shards > 1 and product.listed


class HotProductCache:
    def __init__(
        self,
        seconds: float | Callable[[], float] = DEFAULT_HOT_PRODUCT_CACHE_SECONDS,
        *,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        """Entries live `seconds` (or what it gives at each use: shop.wiring hands the setting's reader) by the
        clock `now`."""
        self._seconds = seconds
        self._now = now
        self._entries: dict[tuple[str, Kind, str], tuple[float, Product]] = {}
        self._lock = threading.Lock()
        if not _caches:
            snapstart.after_restore(clear_all)
        _caches.add(self)

    @property
    def seconds(self) -> float:
        return self._seconds() if callable(self._seconds) else self._seconds

    def get(self, scope: str, kind: Kind, product_id: str) -> Product | None:
        """The entry kept for the product, if it has not expired."""
        entry = self._entries.get((scope, kind, product_id))
        if entry is None or entry[0] <= self._now():
            return None
        return entry[1]

    def keep(self, scope: str, kind: Kind, product: Product) -> Product:
        """`product`, kept when it is hot."""
        seconds = self.seconds
        if seconds > 0 and is_hot(product):
            now = self._now()
            with self._lock:
                if len(self._entries) >= SWEEP_AT:
                    self._entries = {key: entry for key, entry in self._entries.items() if entry[0] > now}
                self._entries[(scope, kind, product.product_id)] = (now + seconds, product)
        return product

    def drop(self, scope: str, product_id: str) -> None:
        with self._lock:
            for kind in Kind:
                self._entries.pop((scope, kind, product_id), None)

    def clear(self) -> None:
        with self._lock:
            self._entries = {}
