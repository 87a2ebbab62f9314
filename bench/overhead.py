"""Handler overhead: an in-process invocation against the single raw boto3 call it makes, same store, same run.

Both sides use the shop's own client (same connection pool, same DynamoDB Local, same table) and are
timed in alternating order round by round, so drift hits them alike.
"""

from __future__ import annotations

from typing import Any

from bench.stats import interleaved, median, ms, percentile
from bench.store import quiet_stdout

TARGET = 1.25
BLOCKS = 3  # the ratio is the median of per-block ratios: a burst of load from elsewhere spoils one block, not all
GROUPS = (
    ("botocore", "boto3/botocore (the raw call's own work)"),
    ("urllib3", "HTTP to DynamoDB (the raw call)"),
    ("http/client", "HTTP to DynamoDB (the raw call)"),
    ("email/", "HTTP to DynamoDB (the raw call)"),
    ("socket", "HTTP to DynamoDB (the raw call)"),
    ("event_handler/middlewares/openapi", "Powertools OpenAPI validation middleware"),
    ("event_handler/openapi", "Powertools OpenAPI validation middleware"),
    ("aws_lambda_powertools/logging", "Powertools Logger"),
    ("aws_lambda_powertools/metrics", "Powertools Metrics"),
    ("aws_lambda_powertools", "Powertools resolver and the rest"),
    ("pydantic", "pydantic (models, validation, serialisation)"),
    ("/shop/", "shop package (handlers' services, repository, api)"),
    ("/functions/", "function handler modules"),
    ("/json/", "json"),
    ("/logging/", "stdlib logging"),
)


def profile(call: Any, invocations: int) -> dict[str, float]:
    """cProfile's own time per invocation, grouped by component (ms per request, profiler overhead included)."""
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(invocations):
        call()
    profiler.disable()
    stats = pstats.Stats(profiler)
    groups: dict[str, float] = {}
    for (filename, _, function), row in stats.stats.items():  # type: ignore[attr-defined]
        own = row[2]
        if filename.startswith("~"):
            label = "C builtins (socket I/O, dict/str methods...)"
            if "socket" in function or "recv" in function or "sendall" in function:
                label = "HTTP to DynamoDB (the raw call)"
        else:
            label = next((name for marker, name in GROUPS if marker in filename), "other stdlib")
        groups[label] = groups.get(label, 0.0) + own
    return {k: round(v * 1000 / invocations, 3) for k, v in sorted(groups.items(), key=lambda kv: -kv[1])}


class Invocation:
    """The handler called with one event and context built beforehand, as the Lambda runtime hands them over:
    the timed call is the handler's work alone (not the local runtime's routing, event building or reply
    parsing). Checked once: the answer equals a fresh request's, so reusing the event changes nothing."""

    def __init__(self, functions: Any, function: str, method: str, path: str, **kwargs: Any) -> None:
        from local_runtime.functions import lambda_context
        from local_runtime.in_process import Reply

        fresh = functions.request(method, path, **kwargs)
        self.event = functions.http_event(method, path, **kwargs)
        self.handler = functions.handler(function)
        self.context = lambda_context(functions.functions[function])
        first = Reply.of(self())
        again = Reply.of(self())
        self.status = first.status
        self.same_answer = (first.status, first.body) == (fresh.status, fresh.body) == (again.status, again.body)

    def __call__(self) -> Any:
        return self.handler(self.event, self.context)


def invocation(functions: Any, function: str, method: str, path: str, **kwargs: Any) -> Invocation:
    return Invocation(functions, function, method, path, **kwargs)


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
            invocation(functions, "products", "GET", f"/products/{product_id}"),
            lambda: client.get_item(TableName=table, Key=to_item(keys.product_key(product_id))),
        )
    if functions.has("orders") and order_id:
        cases["GET /orders/{order_id} vs Query"] = (
            "orders",
            invocation(functions, "orders", "GET", f"/orders/{order_id}", sub="bench-alice"),
            lambda: client.query(
                TableName=table,
                KeyConditionExpression="PK = :pk AND SK <= :order",
                ExpressionAttributeValues={":pk": {"S": keys.order_pk(order_id)}, ":order": {"S": keys.ORDER_SK}},
            ),
        )
    routes: dict[str, Any] = {}
    misses = []
    with quiet_stdout(ctx["log"]):
        for name, (_, handler_call, raw_call) in cases.items():
            status = handler_call.status
            if not handler_call.same_answer:
                misses.append(f"{name}: the prebuilt event's answer differs from a fresh request's")
            blocks = []
            handler_all: list[float] = []
            raw_all: list[float] = []
            for block in range(BLOCKS):
                samples = interleaved(
                    {"handler": handler_call, "raw": raw_call},
                    rounds=config.overhead_rounds,
                    warmup=max(5, config.overhead_rounds // 10) if block == 0 else 3,
                    deadline_s=40,
                )
                h, r = median(samples["handler"]), median(samples["raw"])
                blocks.append({"handler_p50_ms": ms(h), "raw_p50_ms": ms(r), "ratio": round(h / r, 3)})
                handler_all += samples["handler"]
                raw_all += samples["raw"]
            ratio = round(median([b["ratio"] for b in blocks]), 3)
            h50, r50 = median(handler_all), median(raw_all)
            routes[name] = {
                "status": status,
                "handler_p50_ms": ms(h50),
                "raw_p50_ms": ms(r50),
                "handler_p90_ms": ms(percentile(handler_all, 90)),
                "raw_p90_ms": ms(percentile(raw_all, 90)),
                "overhead_p50_ms": ms(h50 - r50),
                "samples": len(handler_all),
                "ratio": ratio,
                "ratio_of_pooled_p50s": round(h50 / r50, 3),
                "blocks": blocks,
            }
            if ratio is None or ratio > TARGET:
                misses.append(f"{name}: {ratio}")
            if config.profile:
                routes[name]["profile_ms_per_request"] = profile(handler_call, max(20, config.overhead_rounds // 3))
    for function in ("products", "orders"):
        if not functions.has(function):
            misses.append(f"{function}: {functions.errors.get(function)}")
    worst = max((r["ratio"] for r in routes.values() if r["ratio"]), default=None)
    why = None
    if misses:
        added = ", ".join(f"{r['overhead_p50_ms']} ms" for r in routes.values())
        raw = ", ".join(f"{r['raw_p50_ms']} ms" for r in routes.values())
        why = (
            f"{misses}: the handler's own work per request (Powertools resolver and its OpenAPI validation "
            f"middleware, the shop's service/repository/item conversion, JSON, logging: {added} at p50, see "
            f"profile_ms_per_request) against a loopback call to DynamoDB Local of {raw}; see docs/performance.md"
        )
    return {
        "why": why,
        "value": worst,
        "routes": routes,
        "target": TARGET,
        "met": bool(routes) and not misses,
        "misses": misses,
        "method": "p50 of the in-process handler invocation (handler(event, context) with a payload 2.0 event and "
        "context built beforehand, as the Lambda runtime hands them over; checked to answer as a fresh request) / "
        "p50 of the same single call (the same key condition) with the shop's boto3 client; alternating samples, one run; 3 blocks, the ratio is the "
        "median of the blocks' p50 ratios; profile_ms_per_request = cProfile own time by component (inflated by "
        "the profiler, for finding the hot spots only)",
    }
