"""Where a product's stock lives: its product item and, for a flash-sale product, its stock shards."""

from __future__ import annotations

from dataclasses import dataclass

# A place stock is taken from: a shard's number, or None for the product item itself.
StockSource = int | None


@dataclass(frozen=True)
class StockLayout:
    """The stock of the product item (`main`) and of each shard (`shards[n]`), as read together."""

    product_id: str
    main: int
    shards: tuple[int, ...] = ()
    price_cents: int = 0
    archived: bool = False  # an archived product's stock is not spread (nothing may sell it)

    @property
    def total(self) -> int:
        return self.main + sum(self.shards)

    @property
    def shard_count(self) -> int:
        """1 for a product that is not sharded, as the product's `stock_shards` says."""
        return len(self.shards) or 1


@dataclass(frozen=True)
class StockTake:
    """`quantity` of a line's product taken from `source`."""

    source: StockSource
    quantity: int


@dataclass(frozen=True)
class StockMove:
    """`quantity` of a product's stock moved from one of its shards to another (gathering a scattered line)."""

    product_id: str
    source: int
    target: int
    quantity: int
