"""What lines cost: the one place the line-total rule is written (orders, carts, abandoned-cart events)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol


class PricedLine(Protocol):
    @property
    def unit_price_cents(self) -> int: ...

    @property
    def quantity(self) -> int: ...


def line_total(unit_price_cents: int, quantity: int) -> int:
    """What one line costs: unit price x quantity."""
    return unit_price_cents * quantity


def subtotal(lines: Iterable[PricedLine]) -> int:
    """The sum of the lines' totals."""
    return sum(line_total(line.unit_price_cents, line.quantity) for line in lines)
