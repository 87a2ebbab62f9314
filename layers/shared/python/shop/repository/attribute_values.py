"""DynamoDB attribute values <-> plain Python, as boto3's TypeSerializer and TypeDeserializer convert them.

The same rules as `boto3.dynamodb.types` (numbers through the same decimal context, floats refused, sets by
element type), without importing boto3: its package imports s3transfer and multiprocessing, ~15 ms of every
cold start (docs/performance.md, "Cold start"). Reading also turns numbers into int (money is cents) or float,
never Decimal, in the same pass, and a binary value into bytes. `tests/unit/test_attribute_values.py` checks
both directions against boto3's own classes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Set
from decimal import Clamped, Context, Decimal, Inexact, Overflow, Rounded, Underflow
from numbers import Integral
from typing import Any

# boto3.dynamodb.types.DYNAMODB_CONTEXT: DynamoDB's 38 digits; anything it would round is refused.
DYNAMODB_CONTEXT = Context(Emin=-128, Emax=126, prec=38, traps=[Clamped, Overflow, Inexact, Rounded, Underflow])
_BINARY = (bytes, bytearray)
_PLAIN_DIGITS = 38  # DYNAMODB_CONTEXT's precision: an integer of at most this many digits converts exactly


def _number(value: int | Decimal) -> str:
    number = str(DYNAMODB_CONTEXT.create_decimal(value))
    if number in ("Infinity", "NaN"):
        raise TypeError("Infinity and NaN not supported")
    return number


def _is_number(value: Any) -> bool:
    if isinstance(value, Integral | Decimal):  # bool too, as in boto3 (a scalar bool is BOOL: checked first)
        return True
    if isinstance(value, float):
        raise TypeError("Float types are not supported. Use Decimal types instead.")
    return False


def _is_binary(value: Any) -> bool:
    return isinstance(value, _BINARY) or type(value).__name__ == "Binary"  # boto3's Binary, if a caller has one


def _binary(value: Any) -> Any:
    return value if isinstance(value, _BINARY) else value.value


def serialize(value: Any) -> dict[str, Any]:
    """One Python value as a DynamoDB attribute value (TypeSerializer.serialize, the same checks in its order)."""
    kind = type(value)
    if kind is str:  # the common cases first: keys, names, ids; counts and cents
        return {"S": value}
    if kind is int:
        return {"N": _number(value)}
    if value is None:
        return {"NULL": True}
    if isinstance(value, bool):
        return {"BOOL": value}
    if _is_number(value):
        return {"N": _number(value)}
    if isinstance(value, str):
        return {"S": value}
    if _is_binary(value):
        return {"B": _binary(value)}
    if isinstance(value, Set):
        if all(_is_number(v) for v in value):  # an empty set is NS, as in boto3 (DynamoDB refuses it)
            return {"NS": [_number(v) for v in value]}
        if all(isinstance(v, str) for v in value):
            return {"SS": list(value)}
        if all(_is_binary(v) for v in value):
            return {"BS": [_binary(v) for v in value]}
    if isinstance(value, Mapping):
        return {"M": {k: serialize(v) for k, v in value.items()}}
    if isinstance(value, list | tuple):
        return {"L": [serialize(v) for v in value]}
    raise TypeError(f'Unsupported type "{type(value)}" for value "{value}"')


def _plain_number(text: str | Decimal) -> int | float:
    number = DYNAMODB_CONTEXT.create_decimal(text)
    return int(number) if number == number.to_integral_value() else float(number)


_READERS: dict[str, Callable[[Any], Any]] = {
    "S": lambda value: value,
    "N": _plain_number,
    "BOOL": lambda value: value,
    "NULL": lambda value: None,
    "M": lambda value: {k: deserialize(v) for k, v in value.items()},
    "L": lambda value: [deserialize(v) for v in value],
    "SS": lambda value: list(set(value)),
    "NS": lambda value: [_plain_number(n) for n in set(map(DYNAMODB_CONTEXT.create_decimal, value))],
    "B": bytes,
    "BS": lambda value: [bytes(v) for v in set(value)],
}


def deserialize(value: Mapping[str, Any]) -> Any:
    """One attribute value as plain Python: TypeDeserializer's value, numbers as int or float, sets as lists."""
    for kind in value:  # the common cases first (every key, name and id; counts and cents), by the first key
        if kind == "S":
            return value["S"]
        if kind == "N":
            text = value["N"]
            if isinstance(text, str) and len(text) <= _PLAIN_DIGITS and text.isascii() and text.isdigit():
                return int(text)  # what the decimal context makes of at most 38 digits, without it
            return _plain_number(text)
        break
    if not value:
        raise TypeError("Value must be a nonempty dictionary whose key is a valid dynamodb type.")
    kind = next(iter(value))
    reader = _READERS.get(kind)
    if reader is None:
        raise TypeError(f"Dynamodb type {kind} is not supported")
    return reader(value[kind])
