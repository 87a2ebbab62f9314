"""Before/after measurements of the changes docs/performance.md proposes (shop/ itself is not changed here).

1. Confirmation without re-applying its effects: `OrderEventsService.order_placed` only confirms and
   the confirmation's own MODIFY record writes history, customer entry and notification.
2. The orders-by-status listing: the current merge (`Limit = limit` on every shard) against the
   proposed one (`Limit = ceil(limit / shards) + 1`, page cut at the newest boundary of the shards
   that have more), paging through the whole list; the sequences must be identical.
3. GSI1 with an INCLUDE projection (without `lines` and `shipping_address`) under the same listing.
"""

from __future__ import annotations

import dataclasses
import math
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from bench.hooks import Measurement, Recorder
from bench.store import quiet_stdout

SHARDS = 4
PAGE = 20
ORDERS = 100
SLACKS = (1, 2, 4)
INCLUDED = [
    "entity",
    "order_id",
    "customer_id",
    "status",
    "version",
    "total_cents",
    "created_at",
    "updated_at",
    "product_id",
    "name",
    "category",
    "price_cents",
    "description",
    "stock",
    "rating_count",
    "rating_sum",
    "email",
]


def _confirmation(ctx: dict[str, Any], patched: bool) -> dict[str, Any]:
    """One 3-line order placed, then delivered to order_events (optionally with the proposed rule)."""
    from bench.model import Accountant
    from bench.routes import ADDRESS
    from bench.streams import StreamFeeder
    from shop.models import ShippingAddress
    from shop.repository import Table
    from shop.services import order_events
    from shop.services.actor import Actor
    from shop.services.catalog import CatalogService
    from shop.services.orders import OrderService, RequestedLine

    store, functions = ctx["store"], ctx["functions"]
    table = store.create_table(f"bench-whatif-confirm-{int(patched)}")
    store.use(table)
    admin = Actor("whatif-admin", is_admin=True)
    catalog = CatalogService(Table())
    products = [
        catalog.create(admin, name=f"W{i}", category="w", price_cents=500, description=None, stock=10).product_id
        for i in range(3)
    ]
    dynamodb, streams = store.client(), store.client("dynamodbstreams")
    feeder, accountant = StreamFeeder(dynamodb, streams, table), Accountant(dynamodb, streams, table)
    feeder.skip_to_now()
    OrderService(Table()).place(
        Actor("whatif-customer"),
        address=ShippingAddress.model_validate(ADDRESS),
        lines=[RequestedLine(p, 1) for p in products],
    )
    accountant.skip()
    original = order_events.OrderEventsService.order_placed

    def confirm_only(self: Any, record: Any) -> Any:
        if order_events.raw_status(record.new_image) != order_events.OrderStatus.PENDING.value:
            return order_events.SKIPPED
        order = order_events.parse_image(order_events.OrderImage, record.new_image)
        won = self.effects.confirm(
            order.order_id, version=order.version, confirmed_at=self.now(), created_at=order.created_at
        )
        action = order_events.Action.CONFIRMED if won else order_events.Action.NOT_CONFIRMED
        return order_events.Outcome(action, order.order_id, order_events.OrderStatus.CONFIRMED.value)

    total = Measurement()
    failures = []
    try:
        if patched:
            order_events.OrderEventsService.order_placed = confirm_only  # type: ignore[method-assign]
        with Recorder() as recorder, quiet_stdout(ctx["log"]):
            for _ in range(6):
                records = feeder.pending()
                if not records:
                    break
                for batch in feeder.batches(records):
                    with recorder.measure() as measurement:
                        result = functions.invoke("order_events", batch)
                    total.calls += measurement.calls
                    failures += (result or {}).get("batchItemFailures", [])
        accountant.attribute(total)
    finally:
        order_events.OrderEventsService.order_placed = original  # type: ignore[method-assign]
    kinds = sorted(
        i["SK"]["S"].split("#", 1)[0]
        for i in dynamodb.scan(TableName=table)["Items"]  # the bench's own check, not a request path
        if i["SK"]["S"].startswith(("HISTORY#", "NOTIFICATION#"))
    )
    store.delete_table(table)
    return {
        "calls": len(total.calls),
        "operations": total.operations,
        "wru": total.modelled_wru(),
        "failed_conditional_writes": sum(1 for c in total.calls if c.error == "ConditionalCheckFailedException"),
        "items_written": kinds,
        "batch_item_failures": failures,
    }


def _status_tables(ctx: dict[str, Any]) -> dict[str, str]:
    """Two tables with the same 100 SHIPPED orders: GSI1 projection ALL (as designed) and INCLUDE."""
    from bench.scale import ItemFactory, bulk_load
    from bench.store import DATA_TEMPLATE
    from local_runtime.dynamodb_local import create_table
    from local_runtime.table_definition import DEFAULT_TABLE_SPEC, spec_from_template

    store = ctx["store"]
    spec = spec_from_template(DATA_TEMPLATE) if DATA_TEMPLATE.is_file() else DEFAULT_TABLE_SPEC
    include = dataclasses.replace(
        spec,
        global_secondary_indexes=[
            {**index, "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": INCLUDED}}
            for index in spec.global_secondary_indexes
        ],
    )
    factory = ItemFactory(SHARDS)
    items = [pair[0] for pair in (factory.order("whatif-customer", "SHIPPED") for _ in range(ORDERS))]
    tables = {"projection ALL": "bench-whatif-all", "projection INCLUDE": "bench-whatif-include"}
    client = store.client()
    for label, name in tables.items():
        create_table(client, name, spec=include if "INCLUDE" in label else spec)
        bulk_load(client, name, items)
    return tables


def _proposed_page(
    client: Any, table: str, *, before: str | None, pool: ThreadPoolExecutor, slack: int
) -> tuple[list[dict[str, Any]], str | None]:
    """The proposed merge: fewer items per shard, page cut where no shard can hide a newer item."""
    from shop import keys

    status, limit = "SHIPPED", PAGE
    per_shard = math.ceil(limit / SHARDS) + slack

    def query(shard: int) -> tuple[list[dict[str, Any]], bool]:
        condition = "GSI1PK = :pk"
        attr_values: dict[str, Any] = {":pk": {"S": keys.order_status_pk(status, shard)}}
        if before is not None:
            condition += " AND GSI1SK < :before"
            attr_values[":before"] = {"S": before}
        response = client.query(
            TableName=table,
            IndexName=keys.GSI1,
            KeyConditionExpression=condition,
            ExpressionAttributeValues=attr_values,
            ScanIndexForward=False,
            Limit=per_shard,
        )
        return response.get("Items", []), "LastEvaluatedKey" in response

    results = list(pool.map(query, range(SHARDS)))
    boundaries = [items[-1]["GSI1SK"]["S"] for items, more in results if more and items]
    cut = max(boundaries) if boundaries else None
    merged = sorted((i for items, _ in results for i in items), key=lambda i: i["GSI1SK"]["S"], reverse=True)
    eligible = [i for i in merged if cut is None or i["GSI1SK"]["S"] >= cut]
    page = eligible[:limit]
    more = len(eligible) > limit or any(more for _, more in results)
    return page, page[-1]["GSI1SK"]["S"] if more and page else None


def _listing(ctx: dict[str, Any], table: str) -> dict[str, Any]:
    from shop.models import OrderStatus
    from shop.repository import OrderRepository, Table

    store = ctx["store"]
    store.use(table)
    out: dict[str, Any] = {}
    with Recorder() as recorder:
        current_ids: list[str] = []
        token: str | None = None
        with recorder.measure() as m_current:
            for _ in range(ORDERS):
                page = OrderRepository(Table(), SHARDS).list_by_status(
                    OrderStatus.SHIPPED, limit=PAGE, next_token=token
                )
                current_ids += [o.order_id for o in page.items]
                token = page.next_token
                if not token:
                    break
        proposed: dict[int, tuple[Measurement, list[str], int]] = {}
        with ThreadPoolExecutor(max_workers=SHARDS) as pool:
            for slack in SLACKS:
                ids: list[str] = []
                before: str | None = None
                pages = 0
                with recorder.measure() as measured:
                    for _ in range(ORDERS):
                        items, before = _proposed_page(store.client(), table, before=before, pool=pool, slack=slack)
                        ids += [i["order_id"]["S"] for i in items]
                        pages += 1
                        if not before:
                            break
                proposed[slack] = (measured, ids, pages)
    rows = [("current", m_current, current_ids, math.ceil(len(current_ids) / PAGE))]
    rows += [(f"proposed, per-shard Limit ceil(limit/{SHARDS}) + {k}", *proposed[k]) for k in SLACKS]
    for label, m, ids, page_count in rows:
        out[label] = {
            "pages": page_count,
            "queries": len(m.calls),
            "items_read": m.scanned(),
            "items_returned": len(ids),
            "read_amplification": round(m.scanned() / len(ids), 2) if ids else None,
            "rcu": m.rcu(),
            "rcu_per_20_orders": round(m.rcu() / len(ids) * 20, 2) if ids else None,
            "same_orders_in_the_same_order": ids == current_ids,
        }
    out["orders"] = len(current_ids)
    return out


def what_if(config: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    functions = ctx.get("functions")
    if functions is None or not functions.has("order_events"):
        return {"skipped": "needs the order_events handler (routes phase)"}
    before, after = _confirmation(ctx, patched=False), _confirmation(ctx, patched=True)
    tables = _status_tables(ctx)
    listing = {label: _listing(ctx, table) for label, table in tables.items()}
    for table in tables.values():
        ctx["store"].delete_table(table)
    return {
        "confirmation_effects_once": {
            "before": before,
            "after": after,
            "wru_saved_per_order": before["wru"] - after["wru"],
            "change": "OrderEventsService.order_placed only confirms; the MODIFY record of the confirmation writes "
            "history, customer entry and notification (it already does, today a second time)",
        },
        "status_listing": {
            "orders": ORDERS,
            "page_limit": PAGE,
            "shards": SHARDS,
            "by_projection": listing,
            "change": "per-shard Limit = ceil(limit / shards) + 1, page cut at the newest last item of the shards "
            "that have more (same token format); and/or GSI1 projection INCLUDE without lines and shipping_address",
        },
        "note": "measured here with a patched service and a prototype query in bench/whatif.py; shop/ is unchanged",
    }
