"""The one line-total rule and what builds on it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from shop.limits import MAX_PRICE_CENTS, MAX_QUANTITY
from shop.models import OrderLine
from shop.models.pricing import line_total, subtotal
from shop.models.sessions import StoredLine

prices = st.integers(0, MAX_PRICE_CENTS)
quantities = st.integers(1, MAX_QUANTITY)


@given(prices, quantities)
def test_a_line_costs_its_unit_price_times_its_quantity(price, quantity):
    assert line_total(price, quantity) == price * quantity
    line = OrderLine.priced("p", "P", price, quantity)
    assert (line.unit_price_cents, line.quantity, line.line_total_cents) == (price, quantity, price * quantity)


@given(st.lists(st.tuples(prices, quantities), max_size=25))
def test_a_subtotal_adds_the_line_totals_of_any_kind_of_line(lines):
    order_lines = [OrderLine.priced(f"p{n}", "P", price, qty) for n, (price, qty) in enumerate(lines)]
    cart_lines = [StoredLine(f"p{n}", "P", price, qty) for n, (price, qty) in enumerate(lines)]
    assert subtotal(order_lines) == subtotal(cart_lines) == sum(line.line_total_cents for line in order_lines)
