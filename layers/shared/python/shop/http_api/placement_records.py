"""What POST /orders's idempotency record keeps of its answer, and the answer it gives back.

The record keeps the answer without what the order derives (its breakdown's sums, each line's total and tax:
shop.models.orders) and without nulls, empty lists and false flags, which the order reads back as its defaults, so a
paid 3-line order's record stays under 1 KB (1 WRU, not 2; docs/performance.md). A record kept whole, by a release
before this one, reads as it is.
"""

from __future__ import annotations

from typing import Any

from shop.models import Order
from shop.models.orders import DERIVED_BREAKDOWN, DERIVED_LINE_FIELDS


def kept(answer: dict[str, Any]) -> dict[str, Any]:
    """The placement's answer as its record keeps it."""
    trimmed = {name: value for name, value in answer.items() if name not in DERIVED_BREAKDOWN}
    trimmed["lines"] = [
        {name: value for name, value in line.items() if name not in DERIVED_LINE_FIELDS} for line in answer["lines"]
    ]
    return _without_defaults(trimmed)


def _without_defaults(value: Any) -> Any:
    if isinstance(value, dict):
        return {name: _without_defaults(v) for name, v in value.items() if v is not None and v != [] and v is not False}
    if isinstance(value, list):
        return [_without_defaults(v) for v in value]
    return value


def answer_of(record: dict[str, Any]) -> dict[str, Any]:
    """The answer a record keeps, whole again: the order read back as a stored order is, and its payment."""
    payment = record.get("payment")
    order = Order.model_validate({name: value for name, value in record.items() if name != "payment"})
    answer = order.model_dump(mode="json")
    if payment is not None:
        answer["payment"] = payment
    return answer
