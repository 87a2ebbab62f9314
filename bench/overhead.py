"""Handler overhead: an in-process invocation against the single raw boto3 call it makes, same store, same run.

Both sides use the shop's own client (same connection pool, same DynamoDB Local, same table) and are
timed in alternating order round by round, so drift hits them alike.
"""

from __future__ import annotations

from typing import Any

from bench.stats import interleaved, median, ms, percentile
from bench.store import quiet_stdout

TARGET = 1.25


def overhead(config: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    from shop import keys
    from shop.config import settings
    from shop.repository.store import dynamodb_client, to_item

    scenario = ctx.get("scenario")
    functions = ctx.get("functions")
    if scenario is None or functions is None:
        return {"met": False, "why": "needs the routes phase (its table and ids)"}
    ctx["store"].use(scenario.table_name)
    client = dynamodb_client()
    table = settings().table_name
    product_id = scenario.ids["products"][0]
    order_id = scenario.ids.get("order_id")
    cases: dict[str, tuple[str, Any, Any]] = {}
    if functions.has("products"):
        cases["GET /products/{product_id} vs GetItem"] = (
            "products",
            lambda: functions.request("GET", f"/products/{product_id}"),
            lambda: client.get_item(TableName=table, Key=to_item(keys.product_key(product_id))),
        )
    if functions.has("orders") and order_id:
        cases["GET /orders/{order_id} vs Query"] = (
            "orders",
            lambda: functions.request("GET", f"/orders/{order_id}", sub="bench-alice"),
            lambda: client.query(
                TableName=table,
                KeyConditionExpression="PK = :pk",
                ExpressionAttributeValues={":pk": {"S": keys.order_pk(order_id)}},
            ),
        )
    routes: dict[str, Any] = {}
    misses = []
    with quiet_stdout(ctx["log"]):
        for name, (_, handler_call, raw_call) in cases.items():
            status = handler_call().status
            samples = interleaved(
                {"handler": handler_call, "raw": raw_call},
                rounds=config.overhead_rounds,
                warmup=max(5, config.overhead_rounds // 10),
                deadline_s=60,
            )
            h50, r50 = median(samples["handler"]), median(samples["raw"])
            ratio = round(h50 / r50, 3) if r50 else None
            routes[name] = {
                "status": status,
                "handler_p50_ms": ms(h50),
                "raw_p50_ms": ms(r50),
                "handler_p90_ms": ms(percentile(samples["handler"], 90)),
                "raw_p90_ms": ms(percentile(samples["raw"], 90)),
                "overhead_p50_ms": ms(h50 - r50),
                "samples": len(samples["handler"]),
                "ratio": ratio,
            }
            if ratio is None or ratio > TARGET:
                misses.append(f"{name}: {ratio}")
    for function in ("products", "orders"):
        if not functions.has(function):
            misses.append(f"{function}: {functions.errors.get(function)}")
    worst = max((r["ratio"] for r in routes.values() if r["ratio"]), default=None)
    return {
        "value": worst,
        "routes": routes,
        "target": TARGET,
        "met": bool(routes) and not misses,
        "misses": misses,
        "method": "p50 of the in-process handler invocation (payload 2.0 event in, response out) / p50 of the "
        "same single call with the shop's boto3 client; alternating samples, one run",
    }
