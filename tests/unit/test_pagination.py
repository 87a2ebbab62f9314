from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shop import errors
from shop.repository import pagination

SECRET = b"unit-test-secret"
positions = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=10,
)


@given(st.text(max_size=30), positions)
def test_round_trip(scope, position):
    token = pagination.encode(scope, position, SECRET)
    assert pagination.decode(token, scope, SECRET) == position


@given(st.text(max_size=30), positions, st.data())
def test_any_single_character_change_is_refused(scope, position, data):
    token = pagination.encode(scope, position, SECRET)
    index = data.draw(st.integers(0, len(token) - 1))
    replacement = data.draw(st.sampled_from("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_."))
    forged = token[:index] + replacement + token[index + 1 :]
    if forged == token:
        return
    try:
        decoded = pagination.decode(forged, scope, SECRET)
    except errors.InvalidNextToken:
        return
    # base64 padding bits can absorb a change to the last character without changing the bytes
    assert decoded == position


def test_foreign_scope_and_secret_are_refused():
    token = pagination.encode("customer-orders:alice", {"k": 1}, SECRET)
    with pytest.raises(errors.InvalidNextToken):
        pagination.decode(token, "customer-orders:bob", SECRET)
    with pytest.raises(errors.InvalidNextToken):
        pagination.decode(token, "customer-orders:alice", b"another-secret")


@pytest.mark.parametrize("junk", ["", ".", "a.b.c", "!!!.???", "x" * 5000, "e30.e30"])
def test_junk_is_refused(junk):
    with pytest.raises(errors.InvalidNextToken):
        pagination.decode(junk, "scope", SECRET)


@given(st.text(max_size=30), positions)
def test_round_trip_compressed(scope, position):
    token = pagination.encode(scope, position, SECRET, compress=True)
    assert pagination.decode(token, scope, SECRET) == position
    assert len(token) <= len(pagination.encode(scope, position, SECRET))


def test_a_large_repetitive_position_is_deflated():
    position = {"c": [f"2026-11-26T01:02:03.{n:06d}Z#01JD0000000000000000000{n:03d}" for n in range(64)]}
    plain, deflated = pagination.encode("s", position, SECRET), pagination.encode("s", position, SECRET, compress=True)
    assert len(deflated) < len(plain) / 2
    assert pagination.decode(deflated, "s", SECRET) == position


def test_a_signed_payload_inflating_past_the_bound_is_refused():
    import json
    import zlib

    bomb = zlib.compress(json.dumps("x" * (pagination.MAX_INFLATED_BYTES + 10)).encode(), 9)
    body = pagination._b64(bomb)
    token = f"{body}.{pagination._b64(pagination._signature('s', bomb, SECRET))}"
    with pytest.raises(errors.InvalidNextToken):
        pagination.decode(token, "s", SECRET)
