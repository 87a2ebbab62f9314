"""Lambda event filtering (FilterCriteria) for the local event source mapping.

The documented filter-rule grammar, implemented here because PyPI has no maintained implementation; tests
cross-check it with moto's EventBridge matcher (docs/local-runtime.md, "Filters").
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterable
from typing import Any

_MISSING = object()
_NUMERIC_OPS = {
    "=": lambda a, b: a == b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


class FilterPatternError(ValueError):
    pass


def parse_filters(filter_criteria: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The patterns of a FilterCriteria property ({"Filters": [{"Pattern": "<json>"}]})."""
    patterns = []
    for entry in (filter_criteria or {}).get("Filters") or []:
        raw = entry.get("Pattern")
        pattern = json.loads(raw) if isinstance(raw, str) else raw
        if not isinstance(pattern, dict):
            raise FilterPatternError(f"filter pattern must be a JSON object: {raw!r}")
        patterns.append(pattern)
    return patterns


def matches_any(patterns: Iterable[dict[str, Any]], event: dict[str, Any]) -> bool:
    """True when there are no patterns or any pattern matches (Lambda ORs the filters)."""
    patterns = list(patterns)
    return not patterns or any(matches(p, event) for p in patterns)


def matches(pattern: dict[str, Any], event: Any) -> bool:
    for key, rule in pattern.items():
        if key == "$or":
            if not isinstance(rule, list) or not any(matches(p, event) for p in rule):
                return False
            continue
        value = event.get(key, _MISSING) if isinstance(event, dict) else _MISSING
        if isinstance(rule, dict):
            if value is _MISSING or not _matches_object(rule, value):
                return False
        elif isinstance(rule, list):
            if not _matches_leaf(rule, value):
                return False
        else:
            raise FilterPatternError(f"pattern value for {key!r} must be an object or a list, got {rule!r}")
    return True


def _matches_object(rule: dict[str, Any], value: Any) -> bool:
    if isinstance(value, list):
        return any(isinstance(v, dict) and matches(rule, v) for v in value)
    return isinstance(value, dict) and matches(rule, value)


def _matches_leaf(alternatives: list[Any], value: Any) -> bool:
    values = value if isinstance(value, list) else [value]
    for alt in alternatives:
        if isinstance(alt, dict):
            if _matches_operator(alt, value, values):
                return True
        elif any(v is not _MISSING and _equal(alt, v) for v in values):
            return True
    return False


def _equal(expected: Any, actual: Any) -> bool:
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected is actual
    if isinstance(expected, int | float) and isinstance(actual, int | float):
        return float(expected) == float(actual)
    return type(expected) is type(actual) and expected == actual


def _matches_operator(op: dict[str, Any], value: Any, values: list[Any]) -> bool:
    if len(op) != 1:
        raise FilterPatternError(f"a filter operator object has exactly one key: {op!r}")
    ((name, arg),) = op.items()
    if name == "exists":
        exists = value is not _MISSING and not (isinstance(value, list) and not value)
        return exists is bool(arg)
    present = [v for v in values if v is not _MISSING]
    if name == "prefix":
        return any(_affix(arg, v, str.startswith) for v in present)
    if name == "suffix":
        return any(_affix(arg, v, str.endswith) for v in present)
    if name == "equals-ignore-case":
        return any(isinstance(v, str) and v.casefold() == str(arg).casefold() for v in present)
    if name == "numeric":
        return any(_numeric(arg, v) for v in present)
    if name == "anything-but":
        if not present:
            return False
        return all(not _anything_but_excludes(arg, v) for v in present)
    if name == "cidr":
        return any(_cidr(arg, v) for v in present)
    raise FilterPatternError(f"unsupported filter operator {name!r}")


def _affix(arg: Any, value: Any, test: Any) -> bool:
    if not isinstance(value, str):
        return False
    if isinstance(arg, dict) and "equals-ignore-case" in arg:
        return bool(test(value.casefold(), str(arg["equals-ignore-case"]).casefold()))
    return isinstance(arg, str) and bool(test(value, arg))


def _numeric(arg: Any, value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if not isinstance(arg, list) or len(arg) not in (2, 4):
        raise FilterPatternError(f"numeric takes one or two comparisons: {arg!r}")
    for i in range(0, len(arg), 2):
        op, bound = arg[i], arg[i + 1]
        if op not in _NUMERIC_OPS:
            raise FilterPatternError(f"unknown numeric operator {op!r}")
        if not _NUMERIC_OPS[op](float(value), float(bound)):
            return False
    return True


def _anything_but_excludes(arg: Any, value: Any) -> bool:
    """True when `value` is one of the things anything-but rules out."""
    if isinstance(arg, dict):
        if "prefix" in arg:
            return _affix(arg["prefix"], value, str.startswith)
        if "suffix" in arg:
            return _affix(arg["suffix"], value, str.endswith)
        if "equals-ignore-case" in arg:
            targets = arg["equals-ignore-case"]
            targets = targets if isinstance(targets, list) else [targets]
            return isinstance(value, str) and any(value.casefold() == str(t).casefold() for t in targets)
        raise FilterPatternError(f"unsupported anything-but operand {arg!r}")
    excluded = arg if isinstance(arg, list) else [arg]
    return any(_equal(e, value) for e in excluded)


def _cidr(arg: Any, value: Any) -> bool:
    try:
        return isinstance(value, str) and ipaddress.ip_address(value) in ipaddress.ip_network(arg, strict=False)
    except ValueError:
        return False
