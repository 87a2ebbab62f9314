"""Reserving stock for an order's lines when some products are flash-sale products with stock shards.

The rules (docs/decisions.md, "Flash-sale stock shards"): a line of a sharded product first takes its whole
quantity from one shard drawn at random, without reading the shards. Only when a place it tried held too
little is the product's stock read (one consistent read of the product item and every shard); the next
attempt takes from a random shard that holds the whole quantity, else from the product item, else splits
the line over the places holding the most. Only when all of them together hold less than the line is the
answer OUT_OF_STOCK; the customer whose shard ran dry meanwhile still gets the order.

One transaction holds at most MAX_TRANSACTION_ITEMS items, and a line split over many small shards needs an
item per shard. When the lines' places do not fit beside the order's other items, the lines split over the
most places are gathered first (docs/decisions.md, "Orders over scattered shards"): a transaction of their
own moves each such line's quantity from the other shards into the product's fullest one, and the line then
takes from that one shard (and the product item, when the shards hold too little).

A gathering moves stock between shards, so what a failed attempt tells about some places, laid over an older
read of the others, can add up to less than the product holds (another order has just gathered into a shard
believed nearly empty); and a read item by item (BatchGetItem) can see a gathering's target before it and
its source after it. A failed gathering therefore re-reads its products, and OUT_OF_STOCK is only answered
from a snapshot (the store's transactional read of the product item and every shard), never from a
corrected layout.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from shop import errors, ids
from shop.limits import MAX_TRANSACTION_ITEMS
from shop.models.stock import StockLayout, StockMove, StockSource, StockTake

# Placement transactions one order tries against sharded stock before answering 503 (the stock keeps moving
# under it: every failed attempt learns what the place it tried holds, so this is only reached under heavy
# contention on the last units).
MAX_STOCK_ATTEMPTS = 6

ReadLayout = Callable[..., StockLayout]
# gather(moves, token): `token` the transaction's ClientRequestToken (gathering_token).
Gather = Callable[[Sequence[StockMove], str], None]


def gathering_token(placement_id: str, gathering: int) -> str:
    """The ClientRequestToken of a placement's `gathering`-th gathering transaction: every re-send of it
    carries it and no other transaction does (a ULID, 26 characters, plus the number; DynamoDB allows 36)."""
    return f"{placement_id}-g{gathering}"


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


def gathering(quantity: int, layout: StockLayout) -> tuple[list[StockMove], list[StockTake]]:
    """The moves that bring `quantity` (all the shards hold, if less) into the fullest shard, and the line's
    takes after them: that shard, and the product item for what the shards lack."""
    target = max(range(len(layout.shards)), key=lambda shard: layout.shards[shard])
    from_shards = min(quantity, sum(layout.shards))
    wanted = from_shards - layout.shards[target]
    moves = []
    others = sorted((shard for shard in range(len(layout.shards)) if shard != target), key=lambda s: -layout.shards[s])
    for shard in others:
        if wanted <= 0:
            break
        moved = min(layout.shards[shard], wanted)
        moves.append(StockMove(layout.product_id, shard, target, moved))
        wanted -= moved
    takes = [StockTake(target, from_shards)] if from_shards else []
    if quantity > from_shards:
        takes.append(StockTake(None, quantity - from_shards))
    return moves, takes


def moved(layout: StockLayout, moves: Sequence[StockMove]) -> StockLayout:
    """The layout once `moves` (between its shards) are made."""
    shards = list(layout.shards)
    for move in moves:
        shards[move.source] -= move.quantity
        shards[move.target] += move.quantity
    return replace(layout, shards=tuple(shards))


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

    def __init__(
        self,
        quantities: Mapping[str, int],
        shards: Mapping[str, int],
        read_layout: ReadLayout,
        gather: Gather | None = None,
        *,
        read_snapshot: ReadLayout | None = None,
    ) -> None:
        """`quantities` by product, `shards` the shard count of the products known to have shards,
        `read_layout(product_id, shards_hint=n)` the store's consistent stock read, `gather(moves)` the
        store's transaction moving stock between a product's shards (StockSourceShort), `read_snapshot` (same
        arguments) the store's read of the product item and every shard as of one instant, which OUT_OF_STOCK
        rests on (stock_layout's read, item by item, can miss units a gathering is moving)."""
        self.quantities = dict(quantities)
        self.shards = {pid: count for pid, count in shards.items() if count > 1 and pid in self.quantities}
        self.read_layout = read_layout
        self.gather = gather
        self.read_snapshot = read_snapshot
        self.known: dict[str, StockLayout] = {}
        # Products whose known layout is a consistent read (plus this placement's own gatherings), not a
        # read corrected by what failed attempts found.
        self.read: set[str] = set()
        self.failures = 0
        self.placement_id = ids.new_id()
        self.gatherings = 0

    def takes(self, room: int = MAX_TRANSACTION_ITEMS) -> dict[str, list[StockTake]]:
        """The places for the next attempt, at most `room` in all (a line not named takes from its product
        item: one place); lines over too many places are gathered first. A failed gathering counts as a
        failed attempt and re-reads its products (ServiceUnavailable after MAX_STOCK_ATTEMPTS failures)."""
        while True:
            plan = self._plan()
            batches = self._gathering_batches(plan, room)
            if not batches:
                return plan
            try:
                for batch in batches:
                    self._gather(batch)
            except errors.StockSourceShort as short:
                self._failed(short)
                for pid in {move.product_id for move in batch}:
                    self._read(pid, self.shards.get(pid, 1))
                continue
            return self._plan()

    def _gathering_batches(self, plan: dict[str, list[StockTake]], room: int) -> list[list[StockMove]]:
        places = sum(len(plan.get(pid, ())) or 1 for pid in self.quantities)
        if places <= room or self.gather is None:
            return []
        batches: list[list[StockMove]] = [[]]
        batch_items = 0
        for pid in sorted(plan, key=lambda pid: len(plan[pid]), reverse=True):
            if places <= room or len(plan[pid]) <= 2:
                break
            product_moves, takes = gathering(self.quantities[pid], self.known[pid])
            # An item per source shard and one for the target; a product has at most MAX_STOCK_SHARDS shards.
            if batch_items + len(product_moves) + 1 > MAX_TRANSACTION_ITEMS:
                batches.append([])
                batch_items = 0
            batches[-1].extend(product_moves)
            batch_items += len(product_moves) + 1
            places -= len(plan[pid]) - len(takes)
        return [batch for batch in batches if batch]

    def _gather(self, batch: list[StockMove]) -> None:
        assert self.gather is not None
        self.gatherings += 1
        self.gather(batch, gathering_token(self.placement_id, self.gatherings))
        for pid in {move.product_id for move in batch}:
            self.known[pid] = moved(self.known[pid], [move for move in batch if move.product_id == pid])

    def _plan(self) -> dict[str, list[StockTake]]:
        plan: dict[str, list[StockTake]] = {}
        for pid, count in list(self.shards.items()):
            quantity = self.quantities[pid]
            if pid not in self.known:
                plan[pid] = [StockTake(random.randrange(count), quantity)]
                continue
            takes = takes_for(quantity, self.known[pid])
            if takes is None and (pid not in self.read or self.read_snapshot is not None):
                # The corrected layout may hold less than the product does (stock gathered meanwhile).
                takes = takes_for(quantity, self._read(pid, count, snapshot=True))
            if takes is None:
                raise errors.OutOfStock([pid])
            plan[pid] = takes
        return plan

    def _read(self, pid: str, shards_hint: int, *, snapshot: bool = False) -> StockLayout:
        read = self.read_snapshot if snapshot and self.read_snapshot is not None else self.read_layout
        layout = read(pid, shards_hint=shards_hint)
        self.known[pid] = layout
        self.read.add(pid)
        self.shards[pid] = layout.shard_count
        return layout

    def _failed(self, short: errors.StockSourceShort) -> None:
        self.failures += 1
        if self.failures >= MAX_STOCK_ATTEMPTS:
            raise errors.ServiceUnavailable("the stock of this product is moving fast, retry") from short

    def learn(self, short: errors.StockSourceShort) -> None:
        """Take in what the failed attempt found; ServiceUnavailable after MAX_STOCK_ATTEMPTS failures."""
        self._failed(short)
        for pid, seen in short.seen.items():
            if pid in self.known:
                self.known[pid] = corrected(self.known[pid], seen)
                self.read.discard(pid)
                continue
            self._read(pid, short.shards.get(pid) or self.shards.get(pid, 1))
