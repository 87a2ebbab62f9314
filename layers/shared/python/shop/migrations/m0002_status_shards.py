"""0002: move every order's status-index entry to the shard count being switched to.

The switch (docs/operations.md, "Changing the status index's shard count") runs in phases: readers read
both counts (STATUS_SHARDS_NEXT), then writers index new and changed orders under the next count
(STATUS_SHARDS_WRITERS=next), then this migration moves the rest, then the next count becomes the count.
An order item is indexed in GSI1 under ``ORDER_STATUS#<status>#<blake2b(id) mod count>``; its change, one
update conditional on the item as scanned (its ``GSI1PK`` and ``version``), sets ``GSI1PK`` to the next
count's shard. Its sort key (``<created_at>#<id>``) stays, so a reader's cursor means the same wherever the
entry is. A status change racing the move lands first (it wrote the next count already: the move's
condition fails, skipped) or after (it reads the moved item and writes the next count again).

The move is one write of one item: the reader's order of Queries (the shards orders leave, then those they
enter: shop.repository.status_switch) is what keeps a moving order in every page that should hold it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from shop import keys
from shop.config import ConfigurationError, StatusShardSwitch, settings
from shop.migrations.base import Lookups
from shop.migrations.changes import Change, Update


def is_indexed_order(item: Mapping[str, Any]) -> bool:
    return (
        item.get(keys.SK) == keys.ORDER_SK
        and str(item.get(keys.PK, "")).startswith(keys.order_pk(""))
        and str(item.get(keys.GSI1PK, "")).startswith(keys.ORDER_STATUS_PREFIX)
    )


class MoveStatusShards:
    name = "0002-move-status-shards"
    description = "index every order under the next status shard count (STATUS_SHARDS_NEXT)"

    def __init__(self, switch: StatusShardSwitch | None = None) -> None:
        self._switch = switch  # None: the settings' switch, read when a run starts

    def switch(self) -> StatusShardSwitch:
        """The switch this run moves orders for: writers must be on the next count already, or an order
        changed after the migration passed it would be indexed under the old count again."""
        switch = self._switch if self._switch is not None else settings().status_switch
        if switch.next is None or not switch.writers_on_next:
            raise ConfigurationError(
                f"{self.name} runs during a switch with writers on the next count: "
                "set STATUS_SHARDS_NEXT and STATUS_SHARDS_WRITERS=next (docs/operations.md)"
            )
        return switch

    def context(self, items: list[dict[str, Any]], lookups: Lookups) -> Mapping[str, Any]:
        del items, lookups
        switch = self.switch()
        return {"next": switch.next}

    def plan(self, item: dict[str, Any], context: Mapping[str, Any]) -> Change | None:
        if not is_indexed_order(item):
            return None
        order_id, status = str(item["order_id"]), str(item["status"])
        target = keys.order_status_pk(status, keys.status_shard(order_id, int(context["next"])))
        seen = str(item[keys.GSI1PK])
        if seen == target:
            return None
        return Change(
            (
                Update(
                    key=keys.order_key(order_id),
                    expression=f"SET {keys.GSI1PK} = :target",
                    condition=f"{keys.GSI1PK} = :seen AND version = :version",
                    values={"target": target, "seen": seen, "version": int(item["version"])},
                ),
            ),
            index_moves=1,  # 3 write units for an order under 1 KB: the item, and its GSI1 entry moved
        )
