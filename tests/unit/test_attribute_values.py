"""shop.repository.attribute_values converts as boto3's TypeSerializer/TypeDeserializer (plus int/float, lists)."""

from __future__ import annotations

from decimal import Decimal, Inexact
from typing import Any

import pytest
from boto3.dynamodb.types import Binary, TypeDeserializer, TypeSerializer
from hypothesis import given
from hypothesis import strategies as st

from shop.repository.attribute_values import _plain_number, deserialize, serialize
from shop.repository.store import from_item, to_item

_boto_out = TypeSerializer()
_boto_in = TypeDeserializer()

numbers = st.integers(min_value=-(10**37), max_value=10**37) | st.decimals(
    allow_nan=False, allow_infinity=False, places=4, min_value=-(10**20), max_value=10**20
)
scalars = st.none() | st.booleans() | numbers | st.text(max_size=8) | st.binary(max_size=8)
sets = st.frozensets(st.integers(-1000, 1000), min_size=1, max_size=4) | st.frozensets(
    st.text(max_size=4), min_size=1, max_size=4
)
values = st.recursive(
    scalars | sets,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=12,
)


def _boto_plain(value: Any) -> Any:
    """What shop.repository.store.from_item returned when it ran boto3's deserializer and then made it plain."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: _boto_plain(v) for k, v in value.items()}
    if isinstance(value, list | set):
        return [_boto_plain(v) for v in value]
    if isinstance(value, Binary):
        return value.value
    return value


def _canonical(value: Any) -> Any:
    """Sets come back as lists in the set's order; compare them as sorted lists."""
    if isinstance(value, dict):
        return {k: _canonical(v) for k, v in value.items()}
    if isinstance(value, list):
        items = [_canonical(v) for v in value]
        return sorted(items, key=repr) if all(not isinstance(v, dict | list) for v in items) else items
    return value


@given(values)
def test_serialize_matches_boto3(value):
    assert _canonical(serialize(value)) == _canonical(_boto_out.serialize(value))


@given(values)
def test_deserialize_matches_boto3_made_plain(value):
    attribute = _boto_out.serialize(value)
    assert _canonical(deserialize(attribute)) == _canonical(_boto_plain(_boto_in.deserialize(attribute)))


def test_numbers_read_as_int_or_float_never_decimal():
    item = from_item({"cents": {"N": "1999"}, "avg": {"N": "4.5"}, "big": {"N": "1" + "0" * 30}})
    assert item == {"cents": 1999, "avg": 4.5, "big": 10**30}
    assert [type(v) for v in item.values()] == [int, float, int]


@pytest.mark.parametrize(
    ("value", "error", "match"),
    [
        (1.5, TypeError, "Float types are not supported"),
        ({"price": 0.1}, TypeError, "Float types are not supported"),
        (Decimal("1" * 39), Inexact, None),  # more than DynamoDB's 38 digits: refused, not rounded
        (Decimal("Infinity"), TypeError, "Infinity and NaN not supported"),
        (object(), TypeError, "Unsupported type"),
    ],
)
def test_what_boto3_refuses_is_refused(value, error, match):
    with pytest.raises(error, match=match):
        _boto_out.serialize(value)
    with pytest.raises(error, match=match):
        serialize(value)


@pytest.mark.parametrize("attribute", [{}, {"Q": "1"}])
def test_an_unknown_attribute_value_is_a_type_error_as_in_boto3(attribute):
    with pytest.raises(TypeError):
        deserialize(attribute)
    with pytest.raises(TypeError):
        _boto_in.deserialize(attribute)


def test_to_item_drops_top_level_none_only():
    assert to_item({"a": None, "b": {"c": None}, "d": [1, "x"]}) == {
        "b": {"M": {"c": {"NULL": True}}},
        "d": {"L": [{"N": "1"}, {"S": "x"}]},
    }


@given(st.from_regex(r"-?[0-9]{1,40}", fullmatch=True) | st.sampled_from(["1E+3", "0.0", "-0", "007", "\u0661\u0662"]))
def test_a_number_reads_as_the_decimal_context_reads_it(text):
    """Integers of up to 38 ASCII digits skip the decimal context (the fast path): the same value and type."""
    try:
        expected = _plain_number(text)
    except Exception as refused:
        with pytest.raises(type(refused)):
            deserialize({"N": text})
        return
    got = deserialize({"N": text})
    assert got == expected
    assert type(got) is type(expected)
