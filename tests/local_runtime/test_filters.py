"""The Lambda filter matcher, cross-checked against moto's EventBridge pattern matcher."""

from __future__ import annotations

import json

import pytest

from local_runtime.filters import FilterPatternError, matches, matches_any, parse_filters

ORDER_INSERT = {
    "eventName": "INSERT",
    "eventSource": "aws:dynamodb",
    "dynamodb": {"NewImage": {"entity": {"S": "ORDER"}, "total": {"N": "12"}, "status": {"S": "PENDING"}}},
}
TTL_REMOVE = {
    "eventName": "REMOVE",
    "userIdentity": {"type": "Service", "principalId": "dynamodb.amazonaws.com"},
    "dynamodb": {"OldImage": {"entity": {"S": "SESSION"}}},
}
DOC = {"name": "Espresso", "price": 12.5, "tags": ["a", "b"], "missing_not": None, "ip": "10.0.0.7", "n": 3}

CASES = [
    ({"name": ["Espresso"]}, True),
    ({"name": ["espresso"]}, False),
    ({"name": [{"equals-ignore-case": "ESPRESSO"}]}, True),
    ({"name": [{"prefix": "Esp"}]}, True),
    ({"name": [{"prefix": "esp"}]}, False),
    ({"name": [{"suffix": "sso"}]}, True),
    ({"name": [{"anything-but": ["Latte"]}]}, True),
    ({"name": [{"anything-but": "Espresso"}]}, False),
    ({"name": [{"anything-but": {"prefix": "Esp"}}]}, False),
    ({"price": [{"numeric": [">", 10, "<=", 12.5]}]}, True),
    ({"price": [{"numeric": ["<", 10]}]}, False),
    ({"price": [12.5]}, True),
    ({"tags": ["b"]}, True),
    ({"tags": ["c"]}, False),
    ({"absent": [{"exists": False}]}, True),
    ({"absent": [{"exists": True}]}, False),
    ({"name": [{"exists": True}]}, True),
    ({"missing_not": [None]}, True),
    ({"absent": [None]}, False),
    ({"name": ["Latte", "Espresso"]}, True),
    ({"name": ["Espresso"], "n": [4]}, False),
    ({"$or": [{"name": ["Latte"]}, {"n": [3]}]}, True),
    ({"$or": [{"name": ["Latte"]}, {"n": [4]}]}, False),
]


@pytest.mark.parametrize(("pattern", "expected"), CASES)
def test_grammar(pattern, expected):
    assert matches(pattern, DOC) is expected


def _moto_understands(pattern: dict) -> bool:
    """moto's EventBridge matcher knows neither `$or` nor `anything-but` over a prefix."""
    if "$or" in pattern:
        return False
    return not any(
        isinstance(alt, dict) and "anything-but" in alt and isinstance(alt["anything-but"], dict)
        for leaf in pattern.values()
        if isinstance(leaf, list)
        for alt in leaf
    )


@pytest.mark.parametrize(("pattern", "expected"), [case for case in CASES if _moto_understands(case[0])])
def test_agrees_with_moto_eventbridge_matcher(pattern, expected):
    from moto.events.models import EventPattern

    assert EventPattern.load(json.dumps(pattern)).matches_event(DOC) is expected


def test_nested_dynamodb_record_patterns():
    insert = {"eventName": ["INSERT"], "dynamodb": {"NewImage": {"entity": {"S": ["ORDER"]}}}}
    ttl = {
        "eventName": ["REMOVE"],
        "userIdentity": {"type": ["Service"], "principalId": ["dynamodb.amazonaws.com"]},
        "dynamodb": {"OldImage": {"entity": {"S": ["SESSION"]}}},
    }
    assert matches(insert, ORDER_INSERT)
    assert not matches(insert, TTL_REMOVE)
    assert matches(ttl, TTL_REMOVE)
    user_delete = {k: v for k, v in TTL_REMOVE.items() if k != "userIdentity"}
    assert not matches(ttl, user_delete)
    assert matches_any([insert, ttl], TTL_REMOVE)
    assert not matches_any([insert, ttl], user_delete)


def test_no_filters_match_everything():
    assert matches_any([], {"anything": 1})


def test_parse_filters_reads_json_patterns():
    criteria = {"Filters": [{"Pattern": json.dumps({"eventName": ["INSERT"]})}]}
    assert parse_filters(criteria) == [{"eventName": ["INSERT"]}]
    assert parse_filters(None) == []
    with pytest.raises(FilterPatternError):
        parse_filters({"Filters": [{"Pattern": "[1]"}]})


def test_unknown_operator_is_an_error():
    with pytest.raises(FilterPatternError):
        matches({"name": [{"regex": ".*"}]}, DOC)
