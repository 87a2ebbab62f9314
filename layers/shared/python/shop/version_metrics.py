"""Counts a release is judged by, per function version: a protected stage's canary alarms on the new version's.

Lambda's own `Errors` never sees these failures: an API function answers an unexpected exception with a handled
500, and the stream processor reports a failed record without failing its invocation. So the API functions count
`ServerErrors` (but the store's transient 503) and order_events `RecordsFailed` (but records the store throttled or
stalled: shop.stream_batch) here, with the version Lambda runs (AWS_LAMBDA_FUNCTION_VERSION) as a
dimension; infra.constructs.functions.live_alias alarms on the version being deployed (docs/decisions.md).
"""

from __future__ import annotations

import os

from aws_lambda_powertools.metrics import MetricUnit, single_metric

VERSION_DIMENSION = "function_version"


def count_for_version(name: str, value: float = 1) -> None:
    """One EMF line now, dimensions `service` and `function_version` (the function's other metrics keep `service`)."""
    dimensions = {
        "service": os.environ.get("POWERTOOLS_SERVICE_NAME") or "shop",
        VERSION_DIMENSION: os.environ.get("AWS_LAMBDA_FUNCTION_VERSION") or "$LATEST",
    }
    namespace = os.environ.get("POWERTOOLS_METRICS_NAMESPACE") or "Shop"
    with single_metric(
        name=name, unit=MetricUnit.Count, value=value, namespace=namespace, default_dimensions=dimensions
    ):
        pass
