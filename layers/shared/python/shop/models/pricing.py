"""What lines cost: the one place the line-total rule is written (orders, carts, abandoned-cart events), and the
roundings of tax (shop.services.order_total prices with them; an order read back derives its lines' and its
shipping's tax with them, so its item need not hold them)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
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


BPS = 10_000  # a rate in basis points: 1900 is 19 %


def round_half_up(numerator: int, denominator: int) -> int:
    """numerator / denominator rounded to the nearest integer, halves up (both non-negative, denominator > 0)."""
    return (2 * numerator + denominator) // (2 * denominator)


def tax_on(amount_cents: int, rate_bps: int, *, included: bool) -> int:
    """The tax on what is charged for a line or for shipping, rounded once, half up."""
    if included:
        return amount_cents - round_half_up(amount_cents * BPS, BPS + rate_bps)
    return round_half_up(amount_cents * rate_bps, BPS)


def largest_remainder(amount: int, weights: Sequence[int]) -> list[int]:
    """`amount` shared in proportion to `weights`: each share is its exact share rounded down or up, the cents left
    after rounding down go to the largest remainders (the earlier weight on a tie), and the shares sum to `amount`.
    All zero when the weights are."""
    whole = sum(weights)
    if whole == 0:
        return [0] * len(weights)
    shares = [amount * weight // whole for weight in weights]
    remainders = [amount * weight % whole for weight in weights]
    left = amount - sum(shares)
    for index in sorted(range(len(weights)), key=lambda i: (-remainders[i], i))[:left]:
        shares[index] += 1
    return shares
