"""The whole AWS bill of one paid order's life, not DynamoDB's alone: each service at its published
on-demand price (us-east-1), from what the bench's order life did.

- API Gateway HTTP API: one request per HTTP call of the life (placement, the provider's webhook, the status
  change, the three reads), $1.00 a million (the first 300 million a month, each request up to 512 KB).
- Lambda: one request per API call; the stream functions' records are delivered in batches of their mapping's
  BatchSize, full at a steady rate, so an order's records cost records / BatchSize requests. Duration: each
  invocation's time as measured in-process against DynamoDB Local (bench/routes.py), in GB-seconds at the function's
  configured memory, arm64 (the deployed default); an API invocation is billed up to the next millisecond.
- EventBridge: the events the life's stream effects published (counted from the processors' outcomes), $1.00 a
  million custom events (each up to 64 KB).
- DynamoDB Streams read by Lambda: free.
- S3: the archive's one PUT per order ($0.005 a thousand) and its document kept a month ($0.023 a GB-month).
- Secrets Manager: the Stripe callers read their secret once per instance per MAX_AGE_S (the cache); at the stated
  rate and instances that is a few calls a million orders ($0.05 per 10,000 calls).
- DynamoDB: the `cost_per_million_orders_usd` figure (on demand), with the same units provisioned at 70 % next to it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

MILLION = 1_000_000
REGION = "us-east-1"
PRICES: dict[str, float] = {
    "api_gateway_http_usd_per_million_requests": 1.00,
    "lambda_usd_per_million_requests": 0.20,
    "lambda_arm64_usd_per_gb_second": 0.0000133334,
    "eventbridge_usd_per_million_events": 1.00,
    "s3_standard_usd_per_thousand_puts": 0.005,
    "s3_standard_usd_per_gb_month": 0.023,
    "secrets_manager_usd_per_10000_calls": 0.05,
}
# Secrets Manager's amortisation (an assumption, stated): a steady 100 paid orders a second, each of the three
# functions that call Stripe with 10 warm instances, each instance reading the secret once per cache period.
SECRET_CALLERS = 3
SECRET_INSTANCES = 10
SECRET_ORDERS_PER_S = 100.0


@dataclass
class Invocation:
    function: str
    seconds: float
    records: int = 0  # stream records delivered (0: an API request)


@dataclass
class LifePart:
    """What one part of the order's life asked of Lambda, API Gateway and EventBridge."""

    http_requests: int = 0
    invocations: list[Invocation] = field(default_factory=list)
    events: int = 0


def whole_bill(
    parts: dict[str, LifePart],
    *,
    memory_mb: dict[str, int],
    batch_size: dict[str, int],
    archive_bytes: int,
    dynamodb: dict[str, Any],
    secret_max_age_s: int,
) -> dict[str, Any]:
    """Per million paid orders: each service's part and its arithmetic, and the total."""
    requests = sum(p.http_requests for p in parts.values())
    lambda_requests = 0.0
    gb_seconds = 0.0
    by_function: dict[str, dict[str, float]] = {}
    for part in parts.values():
        for call in part.invocations:
            gb = memory_mb[call.function] / 1024
            if call.records:
                count = call.records / batch_size[call.function]
                billed_s = call.seconds
            else:
                count = 1.0
                billed_s = math.ceil(call.seconds * 1000) / 1000
            lambda_requests += count
            gb_seconds += billed_s * gb
            row = by_function.setdefault(call.function, {"requests": 0.0, "seconds": 0.0, "gb_seconds": 0.0})
            row["requests"] += count
            row["seconds"] += billed_s
            row["gb_seconds"] += billed_s * gb
    events = sum(p.events for p in parts.values())
    secret_calls = SECRET_CALLERS * SECRET_INSTANCES / secret_max_age_s / SECRET_ORDERS_PER_S  # per order
    usd = {
        "dynamodb_on_demand": dynamodb["value"],
        "api_gateway": requests * PRICES["api_gateway_http_usd_per_million_requests"],
        "lambda_requests": lambda_requests * PRICES["lambda_usd_per_million_requests"],
        "lambda_duration": gb_seconds * MILLION * PRICES["lambda_arm64_usd_per_gb_second"],
        "eventbridge": events * PRICES["eventbridge_usd_per_million_events"],
        "dynamodb_streams_read_by_lambda": 0.0,
        "s3_archive_puts": MILLION / 1000 * PRICES["s3_standard_usd_per_thousand_puts"],
        "s3_archive_storage_per_month": archive_bytes * MILLION / 1e9 * PRICES["s3_standard_usd_per_gb_month"],
        "secrets_manager": secret_calls * MILLION / 10_000 * PRICES["secrets_manager_usd_per_10000_calls"],
    }
    total = round(sum(usd.values()), 4)
    return {
        "value": total,
        "parts_usd": {name: round(value, 4) for name, value in usd.items()},
        "per_order": {
            "http_requests": requests,
            "lambda_requests": round(lambda_requests, 4),
            "lambda_gb_seconds": round(gb_seconds, 6),
            "lambda_by_function": {
                name: {key: round(value, 6) for key, value in row.items()} for name, row in sorted(by_function.items())
            },
            "eventbridge_events": events,
            "archive_bytes": archive_bytes,
            "secrets_manager_calls": round(secret_calls, 6),
        },
        "life": {
            name: {
                "http_requests": part.http_requests,
                "events": part.events,
                "invocations": [
                    {"function": c.function, "ms": round(c.seconds * 1000, 3), "records": c.records}
                    for c in part.invocations
                ],
            }
            for name, part in parts.items()
        },
        "dynamodb_provisioned_at_70_percent_usd": dynamodb.get("provisioned_at_70_percent_usd"),
        "whole_bill_with_dynamodb_provisioned_usd": round(
            total - usd["dynamodb_on_demand"] + (dynamodb.get("provisioned_at_70_percent_usd") or 0.0), 4
        ),
        "memory_mb": memory_mb,
        "batch_size": batch_size,
        "prices": {"region": REGION, **PRICES},
        "assumptions": [
            "Lambda durations are the handlers' times measured in-process on this machine against DynamoDB Local "
            "over loopback: a Lambda in the table's region waits a little longer on each call, so this part is a "
            "floor; stream invocations share a full batch (BatchSize records) at a steady rate",
            f"Secrets Manager: {SECRET_ORDERS_PER_S:.0f} paid orders a second, {SECRET_INSTANCES} warm instances "
            f"of each of the {SECRET_CALLERS} functions that call Stripe, each reading the secret once per "
            f"{secret_max_age_s} s (the cache)",
            "S3: one PUT per order archived (its whole document), kept a month in S3 Standard; the Glue table and "
            "Athena queries are per query, not per order",
            "not included: CloudWatch logs and metrics, X-Ray traces, data transfer, Cognito's monthly active users, "
            "the free tiers",
        ],
    }
