"""Logs, metrics and (optionally) traces for the API functions.

``logger`` (a thread-local ``correlation_id``), ``count()`` (EMF, flushed once per invocation), ``lambda_handler``;
the X-Ray SDK is imported only when tracing is on. Metric names: docs/decisions.md, "HTTP API".
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.metrics import Metrics, MetricUnit

from shop.aws_config import invocation_deadline
from shop.runtime import lean_init
from shop.tracing import tracing_disabled
from shop.version_metrics import count_for_version

logger = Logger(service=os.environ.get("POWERTOOLS_SERVICE_NAME", "shop-api"))
metrics = Metrics(namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "Shop"))

_metrics_lock = threading.Lock()
_cold_start = True

SERVICE_UNAVAILABLE = 503
# 5xx answers but the store's transient 503 (StoreUnavailable): what a broken release answers (unexpected
# exceptions, unmapped errors); per function and per version (shop.version_metrics), which the canary alarms on.
SERVER_ERRORS = "ServerErrors"
UNITS = {"OrderValueCents": MetricUnit.NoUnit}


def count(name: str, value: float = 1) -> None:
    with _metrics_lock:
        metrics.add_metric(name=name, unit=UNITS.get(name, MetricUnit.Count), value=value)


def flush_metrics() -> None:
    with _metrics_lock:
        if metrics.metric_set:
            metrics.flush_metrics()


def count_server_error() -> None:
    count(SERVER_ERRORS)
    count_for_version(SERVER_ERRORS)


def tracing_enabled() -> bool:
    return not tracing_disabled()


Handler = Callable[[Mapping[str, Any], Any], dict[str, Any]]


def lambda_handler(resolve: Handler) -> Handler:
    """The Lambda entry point around a resolver's ``resolve``: log keys, metrics flush, optional tracing."""

    def handler(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
        global _cold_start
        cold, _cold_start = _cold_start, False
        request_context = event.get("requestContext") or {}
        logger.thread_safe_append_keys(
            correlation_id=request_context.get("requestId"),
            route=request_context.get("routeKey") or event.get("routeKey"),
            cold_start=cold,
            function_request_id=getattr(context, "aws_request_id", None),
        )
        try:
            try:
                with invocation_deadline(context):
                    response = resolve(event, context)
            except BaseException:
                count_server_error()  # escaped the resolver: Lambda's Errors counts it too, and API Gateway answers 500
                raise
            status = response.get("statusCode")
            if status == SERVICE_UNAVAILABLE:
                count("StoreUnavailable")  # what the throttling/store alarm counts (infra monitoring)
            elif isinstance(status, int) and status >= 500:
                count_server_error()
            return response
        finally:
            flush_metrics()
            logger.thread_safe_clear_keys()

    if tracing_enabled():
        from aws_lambda_powertools import Tracer

        return lean_init.paused_first_call(Tracer().capture_lambda_handler(handler))
    return lean_init.paused_first_call(handler)
