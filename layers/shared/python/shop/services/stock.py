"""Reserving stock for an order's lines when some products are flash-sale products with stock shards.

The rules (docs/decisions.md, "Flash-sale stock shards"): a line of a sharded product first takes its whole
quantity from one shard drawn at random, without reading the shards. Only when a place it tried held too
little is the product's stock read (one consistent read of the product item and every shard); the next
attempt takes from a random shard that holds the whole quantity, else from the product item, else splits
the line over the places holding the most. Only when all of them together hold less than the line is the
answer OUT_OF_STOCK; the customer whose shard ran dry meanwhile still gets the order.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import replace

from shop import errors
from shop.models.stock import StockLayout, StockSource, StockTake

# Placement transactions one order tries against sharded stock before answering 503 (the stock keeps moving
# under it: every failed attempt learns what the place it tried holds, so this is only reached under heavy
# contention on the last units).
MAX_STOCK_ATTEMPTS = 6

ReadLayout = Callable[..., StockLayout]


def takes_for(quantity: int, layout: StockLayout) -> list[StockTake] | None:
    """Where `quantity` comes from given what each place holds; None when all of them hold too little."""
    whole = [shard for shard, stock in enumerate(layout.shards) if stock >= quantity]
    if whole:
        return [StockTake(random.choice(whole), quantity)]
    if layout.main >= quantity:
        return [StockTake(None, quantity)]
    if layout.total < quantity:
        return None
    places: list[tuple[int, StockSource]] = [(stock, shard) for shard, stock in enumerate(layout.shards) if stock]
    if layout.main:
        places.append((layout.main, None))
    takes, left = [], quantity
    for stock, source in sorted(places, key=lambda place: place[0], reverse=True):
        taken = min(stock, left)
        takes.append(StockTake(source, taken))
        left -= taken
        if not left:
            break
    return takes


def corrected(layout: StockLayout, seen: Mapping[StockSource, int]) -> StockLayout:
    """The layout with what the failed places were found to hold."""
    shards = list(layout.shards)
    main = layout.main
    for source, stock in seen.items():
        if source is None:
            main = stock
        elif source < len(shards):
            shards[source] = stock
    return replace(layout, main=main, shards=tuple(shards))


class StockReservation:
    """Where each sharded product's line takes its stock from, attempt after attempt of one placement."""

    def __init__(self, quantities: Mapping[str, int], shards: Mapping[str, int], read_layout: ReadLayout) -> None:
        """`quantities` by product, `shards` the shard count of the products known to have shards,
        `read_layout(product_id, shards_hint=n)` the store's consistent stock read."""
        self.quantities = dict(quantities)
        self.shards = {pid: count for pid, count in shards.items() if count > 1 and pid in self.quantities}
        self.read_layout = read_layout
        self.known: dict[str, StockLayout] = {}
        self.failures = 0

    def takes(self) -> dict[str, list[StockTake]]:
        """The places for the next attempt; products not named take from their product item."""
        plan: dict[str, list[StockTake]] = {}
        for pid, count in self.shards.items():
            quantity = self.quantities[pid]
            if pid not in self.known:
                plan[pid] = [StockTake(random.randrange(count), quantity)]
                continue
            takes = takes_for(quantity, self.known[pid])
            if takes is None:
                raise errors.OutOfStock([pid])
            plan[pid] = takes
        return plan

    def learn(self, short: errors.StockSourceShort) -> None:
        """Take in what the failed attempt found; ServiceUnavailable after MAX_STOCK_ATTEMPTS failures."""
        self.failures += 1
        if self.failures >= MAX_STOCK_ATTEMPTS:
            raise errors.ServiceUnavailable("the stock of this product is moving fast, retry") from short
        for pid, seen in short.seen.items():
            if pid in self.known:
                self.known[pid] = corrected(self.known[pid], seen)
                continue
            layout = self.read_layout(pid, shards_hint=short.shards.get(pid) or self.shards.get(pid, 1))
            self.known[pid] = layout
            self.shards[pid] = layout.shard_count
