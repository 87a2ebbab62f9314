"""Capacity per operation and for the life of one order, and what it costs on demand."""

from __future__ import annotations

from typing import Any

from bench.hooks import Measurement

PRICES = {
    "region": "us-east-1",
    "mode": "on-demand (PAY_PER_REQUEST), standard table class",
    "usd_per_million_write_request_units": 0.625,
    "usd_per_million_read_request_units": 0.125,
}
# Provisioned capacity, for a shop at a steady rate (issue 38): capacity held per hour, sized so the units used are
# UTILISATION of it (DynamoDB auto scaling's usual target); one WRU is one WCU for a second, one RRU one RCU.
USD_PER_WCU_HOUR = 0.00065
USD_PER_RCU_HOUR = 0.00013
UTILISATION = 0.70
PROVISIONED = {
    "region": "us-east-1",
    "usd_per_wcu_hour": USD_PER_WCU_HOUR,
    "usd_per_rcu_hour": USD_PER_RCU_HOUR,
    "utilisation": UTILISATION,
}


def provisioned_usd_per_million(wru: float, rru: float) -> float:
    """What a million orders' units cost as provisioned capacity at UTILISATION, the orders spread evenly: a million
    orders' units are that many unit-seconds, a 3,600th of it unit-hours at full use."""
    held = 1_000_000 / 3600 / UTILISATION
    return round(wru * held * USD_PER_WCU_HOUR + rru * held * USD_PER_RCU_HOUR, 4)


ASSUMPTIONS = [
    "read request units = the CapacityUnits DynamoDB Local returns with ReturnConsumedCapacity=INDEXES; write "
    "request units are modelled per written item from the stream's old/new images (bench/model.py) because "
    "DynamoDB Local reports a multi-item transaction as if it held one item per operation type",
    "a standard write is 1 WRU per started 1 KB of item, a transactional write 2 WRU per 1 KB (DynamoDB Local "
    "reports transactions doubled, GSI1 propagation included); each GSI1 entry written, rewritten or removed is "
    "a write too (an update that moves an item to another GSI1 key is a delete plus a put in the index)",
    "each ConditionCheck of a TransactWriteItems is a transactional write of the checked item: 2 WRU per started "
    "1 KB of its size when checked, an absent item counted as 1 KB (2 WRU); it writes nothing, so no stream record "
    "and no GSI1 entry: bench/model.py prices it from the request and a consistent read of the item made by the "
    "bench outside the counted calls (DynamoDB Local does not report it)",
    "reads: eventually consistent 0.5 RRU per 4 KB, strongly consistent 1 RRU, transactional 2 RRU",
    "a conditional write that fails still consumes 1 WRU (items under 1 KB); GSI1 writes inside a transaction are "
    "priced at the transactional rate as DynamoDB Local reports them (an upper bound)",
    "the idempotency record's writes (Powertools, same table) are included in the placement",
    "sales_aggregation: order_events counting the confirmed order's sales per product and UTC day (the "
    "transaction of the version's history entry, which keys the count, and the counters; the consistent read "
    "of the counters; the top-list puts with their GSI1 moves), split out of the confirmation's stream calls",
    "with payments (PAYMENTS=stripe, the route scenario against its own localstripe): the order is confirmed by "
    "the provider's webhook (payment_webhook: the route's order read and its paid transition, one conditional "
    "UpdateItem) and captured by payment_steps at SHIPPED (payment_capture); the windows' sweep never reads a paid "
    "order (it Queries the PENDING_PAYMENT status shards once a minute, a fixed cost, not one per order); the "
    "placement's transaction also holds the order on its customer's unpaid hold (one more item, issue 39) and "
    "order_events releases it when the order leaves PENDING_PAYMENT (one UpdateItem, among the confirmation's "
    "calls); the calls to Stripe are not priced",
    "not included: DynamoDB Streams reads by Lambda (free), storage, Lambda, API Gateway, EventBridge, PITR or backups",
]
LIFE_PARTS = (
    "placement",
    "confirmation",
    "sales_aggregation",
    "status_change",
    "status_change_stream_effects",
    "read_order",
    "read_customer_orders",
    "read_notifications",
)
# The paid order's own writes. When the bench runs with payments, the scenario (bench/routes.py,
# Scenario.capacity_parts) measures these parts too and they join the order's life: from then on a missing
# one is reported like any other missing part. Without payments none is measured and none is counted.
PAYMENT_PARTS = (
    "payment_webhook",  # the provider's webhook: the order's paid transition
    "payment_capture",  # the capture record
)
# The ceiling for the full life (issue 26), and what is kept free of it for the payment parts
# (~6-8 WRU at $0.625 a million each: up to $5); docs/performance.md, "The life of a 3-line order".
COST_TARGET_USD = 15.00
PAYMENTS_BUDGET_WRU = 8


def usd_per_million(wru: float, rru: float) -> float:
    return round(
        wru * PRICES["usd_per_million_write_request_units"] + rru * PRICES["usd_per_million_read_request_units"],  # type: ignore[operator]
        4,
    )


def life_parts(parts: dict[str, Any]) -> tuple[str, ...]:
    """The parts of an order's life: LIFE_PARTS, and PAYMENT_PARTS once the bench measures payments."""
    with_payments = any(name in parts for name in PAYMENT_PARTS)
    return LIFE_PARTS + PAYMENT_PARTS if with_payments else LIFE_PARTS


def condition_checks(m: Measurement) -> dict[str, Any]:
    """A part's ConditionChecks: how many, their write units, and each one (the checked key, its size when
    checked, None when absent, and its units), so that docs can show the arithmetic."""
    items = m.condition_checks()
    return {
        "count": len(items),
        "wru": round(sum(item["wru"] for item in items), 2),
        "items": [{"key": item["key"], "item_bytes": item["item_bytes"], "wru": item["wru"]} for item in items],
    }


def capacity(parts: dict[str, Measurement | None], per_operation: dict[str, Any]) -> dict[str, Any]:
    life: dict[str, Any] = {}
    missing = []
    paid = any(name in parts for name in PAYMENT_PARTS)
    total_w = total_r = reported_w = wasted = total_check_w = 0.0
    total_checks = 0
    for name in life_parts(parts):
        m = parts.get(name)
        if m is None or not m.calls:
            life[name] = None
            missing.append(name)
            continue
        wcu, rcu = round(m.modelled_wru(), 2), round(m.rcu(), 2)
        total_w += wcu
        total_r += rcu
        reported_w += m.wcu()
        failed = [c for c in m.calls if c.is_write and c.error == "ConditionalCheckFailedException"]
        wasted += sum(c.modelled_wru for c in failed)
        checks = condition_checks(m)
        total_checks += checks["count"]
        total_check_w += checks["wru"]
        life[name] = {
            "failed_conditional_writes": len(failed),
            "wcu": wcu,
            "wcu_reported_by_dynamodb_local": round(m.wcu(), 2),
            "condition_checks": checks,
            "rcu": rcu,
            "calls": [c.as_dict() for c in m.calls],
        }
    return {
        "order_life": {
            "order": "3 lines, placed from a line list with an Idempotency-Key; "
            + (
                "PENDING_PAYMENT until paid: confirmed by the provider's signed webhook, order_events then writing "
                "its effects and counting its sales per product and day; one status change (CONFIRMED -> SHIPPED) "
                "with its stream effects and its capture by payment_steps; "
                if paid
                else "confirmed by order_events, which also counts its sales per product and day; one status "
                "change (CONFIRMED -> SHIPPED) with its stream effects; "
            )
            + "read by the customer: the order, their order list, their notifications",
            "parts": life,
            "steady_state": "the shop as it runs after its first hour on this release: the order's stream records "
            "are fresh (younger than the archival grace less its margin: no ARCHIVED check, decision 062) and "
            "written after the release's sales cut-over plus its margin (no legacy marker check, decision 065; the "
            "bench records that cut-over two margins back before it places the order). In a table's first hour on "
            "a release each counted version adds the legacy check, 2 WRU",
            "total_wcu": round(total_w, 2),
            "total_rcu": round(total_r, 2),
            "total_wcu_reported_by_dynamodb_local": round(reported_w, 2),
            "condition_checks": {"count": total_checks, "wru": round(total_check_w, 2)},
            "total_wcu_without_condition_checks": round(total_w - total_check_w, 2),
            "wcu_source": "modelled from the stream's old/new images (bench/model.py): DynamoDB Local "
            "undercounts multi-item transactions (one entry per operation type); each transaction's ConditionChecks "
            "priced from the checked item's size (2 WRU per started KB, absent = 1 KB), which DynamoDB Local does "
            "not report; reads as DynamoDB Local reports",
            "missing_parts": missing,
            "wru_spent_on_failed_conditional_writes": wasted,
        },
        "per_operation": per_operation,
        "target": "as low as the design allows; the breakdown is in docs/performance.md",
    }


# Version 4's additions to the order's life, priced apart: (name, what it is); version_4_units recognises each by
# the keys the life's calls read, write or check.
VERSION_4_PARTS = (
    ("checkout_settings_check", "the placement's ConditionCheck of a copy of the checkout settings (decision 076)"),
    ("discounts_item", "the order's DISCOUNTS item: the promotions it was priced with (decision 077)"),
    ("limited_code_uses", "a limited code's counter and the customer's count, in the placement (decision 078)"),
    (
        "unlimited_code_count",
        "an unlimited code's counter in the confirmation's count, and the DISCOUNTS read before it (decision 080)",
    ),
)


def version_4_units(measurements: dict[str, Measurement | None]) -> dict[str, Any]:
    """Version 4's parts of the life's units, from the calls' keys; shipping and tax add no item or unit of their
    own (a few fields of the order item, which stays under 1 KB in the bench's order)."""
    wru = dict.fromkeys((name for name, _ in VERSION_4_PARTS), 0.0)
    rru = dict.fromkeys(wru, 0.0)
    for m in measurements.values():
        for call in m.calls if m is not None else ():
            for item in call.checked_items:
                if str(item["key"]).startswith("CHECKOUT_VERSION#"):
                    wru["checkout_settings_check"] += item["wru"]
            for written in call.written_items:
                units = written["table_wru"] + sum(u for _, u in written["gsi1"])
                if written.get("sk") == "DISCOUNTS":
                    wru["discounts_item"] += units
                elif str(written["pk"]).startswith(("PROMO_USES#", "PROMO_CUSTOMER#")):
                    wru["limited_code_uses"] += units
                elif str(written["pk"]).startswith("PROMO_COUNT#"):
                    wru["unlimited_code_count"] += units
            key = call.params.get("Key") if call.operation == "GetItem" else None
            if isinstance(key, dict) and key.get("SK", {}).get("S") == "DISCOUNTS":
                rru["unlimited_code_count"] += call.capacity
    parts = {
        name: {
            "what": what,
            "wru": wru[name],
            "rru": rru[name],
            "usd_per_million_orders": usd_per_million(wru[name], rru[name]),
        }
        for name, what in VERSION_4_PARTS
    }
    total_w, total_r = sum(wru.values()), sum(rru.values())
    return {
        "parts": parts,
        "wru": total_w,
        "rru": total_r,
        "usd_per_million_orders": usd_per_million(total_w, total_r),
        "shipping_and_tax": "no unit of their own: the shipping charged, the rate and the option are a few fields of "
        "the order item, which stays under 1 KB in the bench's order; variants have not landed",
    }


def cost(cap: dict[str, Any]) -> dict[str, Any]:
    parts = cap["order_life"]["parts"]

    def units(names: tuple[str, ...]) -> tuple[float, float]:
        w = sum(parts[n]["wcu"] for n in names if parts.get(n))
        r = sum(parts[n]["rcu"] for n in names if parts.get(n))
        return w, r

    place_confirm_read = units(
        ("placement", "confirmation", "sales_aggregation", "read_order", "read_customer_orders", "read_notifications")
    )
    full = units(life_parts(parts))
    value = usd_per_million(*full)
    with_payments = any(name in parts for name in PAYMENT_PARTS)
    return {
        "value": value,
        "target": COST_TARGET_USD,
        "met": value <= COST_TARGET_USD and not cap["order_life"]["missing_parts"],
        "payments_included": with_payments,
        "headroom_for_payments_usd": None
        if with_payments
        else round(COST_TARGET_USD - value - usd_per_million(PAYMENTS_BUDGET_WRU, 0), 4),
        "scope": "full life: placement + confirmation + its sales aggregation + one status change with its "
        "stream effects + 3 reads" + (" + the payment's webhook and capture" if with_payments else ""),
        "sales_aggregation_units_per_order": units(("sales_aggregation",)),
        "condition_check_wru_per_order": sum(
            parts[n].get("condition_checks", {}).get("wru", 0) for n in life_parts(parts) if parts.get(n)
        ),
        "placing_confirming_reading": usd_per_million(*place_confirm_read),
        # the same units as provisioned capacity at 70 % utilisation: what a shop at a steady rate would pay
        "provisioned_at_70_percent_usd": provisioned_usd_per_million(*full),
        "provisioned_prices": PROVISIONED,
        "units_per_order": {"wru": full[0], "rru": full[1]},
        "units_placing_confirming_reading": {"wru": place_confirm_read[0], "rru": place_confirm_read[1]},
        "prices": PRICES,
        "assumptions": ASSUMPTIONS,
        "missing_parts": cap["order_life"]["missing_parts"],
    }
