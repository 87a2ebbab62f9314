"""Returns per line: which units a return may take back, what an accepted one refunds, what it takes off sales.

- A return asks for units of the order's lines by variant (absent: every unit not returned yet). An order takes
  at most MAX_RETURNS_PER_ORDER returns (each is an entry of the order item), so the last takes every unit left
  (TooManyReturns, 409, otherwise). Two entries of one
  variant are one request for their sum; a variant the order does not hold is InvalidReturnLines (422); more units
  than are left to return is ReturnQuantityExceeded (409).
- An accepted return refunds its units' share of what was paid for their lines (their line total less their discount
  share, plus their tax unless prices include it), by shop.services.order_total.refund: a line's returns sum to what
  was paid for it when its last unit is back, and shipping goes back with the order's last unit. So every return of
  an order sums to its total, never more (docs/decisions.md, 079).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from shop import errors
from shop.limits import MAX_RETURNS_PER_ORDER
from shop.models.orders import (
    Order,
    OrderLine,
    OrderReturn,
    RefundedLine,
    ReturnLine,
    ReturnRequest,
)
from shop.services.order_total import PricedLine, Total, refund


def asked_units(order: Order, asked: Sequence[ReturnLine] | None) -> dict[str, int]:
    """Variant id -> units a return asks for (`asked` None: everything not returned yet), within what is left. An
    order takes at most MAX_RETURNS_PER_ORDER returns, so the last of them takes every unit left (TooManyReturns)."""
    left = units_left(order)
    everything = {variant: units for variant, units in left.items() if units > 0}
    if asked is None:
        return everything
    wanted: dict[str, int] = {}
    for line in asked:
        wanted[line.variant_id] = wanted.get(line.variant_id, 0) + line.quantity
    unknown = sorted(variant for variant in wanted if variant not in left)
    if unknown:
        raise errors.InvalidReturnLines(
            "the order holds no such line", {f"lines.{variant}": "not a line of this order" for variant in unknown}
        )
    over = sorted(variant for variant, units in wanted.items() if units > left[variant])
    if over:
        raise errors.ReturnQuantityExceeded(
            "more units than are left to return",
            {
                "left": {variant: left[variant] for variant in over},
                "asked": {variant: wanted[variant] for variant in over},
            },
        )
    if len(order.returns) >= MAX_RETURNS_PER_ORDER - 1 and wanted != everything:
        raise errors.TooManyReturns(
            f"an order takes at most {MAX_RETURNS_PER_ORDER} returns: the last takes every unit left",
            {"max_returns": MAX_RETURNS_PER_ORDER, "left": everything},
        )
    return wanted


def units_left(order: Order) -> dict[str, int]:
    """Variant id -> units bought and not returned yet."""
    returned = order.returned_units()
    return {line.variant_id: line.quantity - returned.get(line.variant_id, 0) for line in order.lines}


def request_of(units: Mapping[str, int], at: str) -> ReturnRequest:
    return ReturnRequest(
        lines=[ReturnLine(variant_id=variant, quantity=count) for variant, count in units.items()], requested_at=at
    )


def paid_total(order: Order) -> Total:
    """The order's stored breakdown as the pricing function's result, by variant: what `refund` shares out."""
    return Total(
        lines=tuple(
            PricedLine(
                line.variant_id,
                line.quantity,
                line.unit_price_cents,
                line.line_total_cents,
                line.discount_cents,
                line.tax_cents,
            )
            for line in order.lines
        ),
        subtotal_cents=order.subtotal_cents,
        discount_cents=order.discount_cents,
        shipping_cents=order.shipping_cents,
        shipping_tax_cents=order.shipping_tax_cents,
        tax_cents=order.tax_cents,
        total_cents=order.total_cents,
        prices_include_tax=order.prices_include_tax,
        rate_bps=order.tax_rate_bps,
        shipping_option=None,
        shipping_available=True,
        promotions=(),
        not_reached=(),
    )


def accepted(order: Order, *, version: int, at: str) -> OrderReturn:
    """The return an admin accepts now: the units the order's request asked for (an order asked back before
    returns per line asks for everything), refunded by their share."""
    units = (
        {line.variant_id: line.quantity for line in order.return_request.lines}
        if order.return_request is not None
        else {variant: left for variant, left in units_left(order).items() if left > 0}
    )
    shares = refund(paid_total(order), order.returned_units(), units)
    return OrderReturn(
        version=version,
        accepted_at=at,
        lines=[
            RefundedLine(variant_id=variant, quantity=count, refund_cents=shares.lines[variant])
            for variant, count in units.items()
        ],
        shipping_refund_cents=shares.shipping_cents,
        refund_cents=shares.total_cents,
    )


def everything_back(order: Order, accepted_return: OrderReturn) -> bool:
    """Whether the order has no unit left once `accepted_return` is taken back."""
    returned = order.returned_units()
    for line in accepted_return.lines:
        returned[line.variant_id] = returned.get(line.variant_id, 0) + line.quantity
    return all(returned.get(line.variant_id, 0) >= line.quantity for line in order.lines)


def restocked_lines(order: Order, accepted_return: OrderReturn) -> list[OrderLine]:
    """The order's lines cut to the returned units: what goes back to stock."""
    units = {line.variant_id: line.quantity for line in accepted_return.lines}
    return [
        line.model_copy(update={"quantity": units[line.variant_id]}) for line in order.lines if line.variant_id in units
    ]
