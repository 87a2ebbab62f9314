"""The status machine and order pricing, as properties."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from shop.models import ORDER_TRANSITIONS, OrderStatus
from shop.services.orders import RequestedLine, merge_lines


def reachable(start: OrderStatus) -> set[OrderStatus]:
    seen, frontier = set(), [start]
    while frontier:
        status = frontier.pop()
        for nxt in ORDER_TRANSITIONS[status]:
            if nxt not in seen:
                seen.add(nxt)
                frontier.append(nxt)
    return seen


def test_machine_matches_the_contract():
    assert reachable(OrderStatus.PENDING) == set(OrderStatus) - {OrderStatus.PENDING}
    assert ORDER_TRANSITIONS[OrderStatus.DELIVERED] == frozenset()
    assert ORDER_TRANSITIONS[OrderStatus.CANCELLED] == frozenset()
    cancellable = {s for s in OrderStatus if OrderStatus.CANCELLED in ORDER_TRANSITIONS[s]}
    assert cancellable == {OrderStatus.PENDING, OrderStatus.CONFIRMED}


def test_no_status_returns_to_itself():
    for status in OrderStatus:
        assert status not in reachable(status)


@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(1, 99)), max_size=20))
def test_merging_lines_keeps_every_unit(lines):
    merged = merge_lines([RequestedLine(pid, qty) for pid, qty in lines])
    assert sum(merged.values()) == sum(qty for _, qty in lines)
    assert set(merged) == {pid for pid, _ in lines}
