"""The caller from the JWT claims: the forms of the groups claim and the limits on `sub`."""

from __future__ import annotations

import pytest

from shop.http_api.auth import MAX_SUB_LENGTH, InvalidSubject, actor_from_claims, parse_groups


@pytest.mark.parametrize(
    ("value", "groups"),
    [
        ("[admin]", {"admin"}),  # API Gateway's flattened array of one
        ("[ops admin]", {"ops", "admin"}),
        ("[]", set()),
        (["ops", "admin"], {"ops", "admin"}),  # a JSON list (hand-built and canned events)
        ("admin", {"admin"}),  # a string claim is one group name
        ("ops,admin", {"ops,admin"}),
        ("[ops,admin]", {"ops,admin"}),
        ("ops admin", {"ops admin"}),
        ('["admin"]', {'"admin"'}),
        (["ops,admin", "ops admin"], {"ops,admin", "ops admin"}),
        (None, set()),
        ("", set()),
        (7, set()),
    ],
)
def test_group_claim_forms(value, groups):
    assert parse_groups(value) == frozenset(groups)


@pytest.mark.parametrize(
    "value", ["ops,admin", "[ops,admin]", ["ops,admin"], "ops admin", '["admin"]', "[ admin,ops ]"]
)
def test_a_group_whose_name_merely_contains_admin_is_not_admin(value):
    actor = actor_from_claims({"sub": "u1", "cognito:groups": value})
    assert actor is not None
    assert not actor.is_admin


@pytest.mark.parametrize("claim", ["cognito:groups", "groups"])
@pytest.mark.parametrize("value", ["[admin]", "[ops admin]", ["ops", "admin"], "admin"])
def test_admin_in_either_groups_claim(claim, value):
    actor = actor_from_claims({"sub": "u1", claim: value})
    assert actor is not None
    assert actor.is_admin


@pytest.mark.parametrize(
    "sub",
    ["a", "x" * MAX_SUB_LENGTH, "auth0|123", "josé", "a b", "a+b", "a#b", "google-oauth2|1", "ü" * MAX_SUB_LENGTH],
)
def test_subjects_within_the_limits(sub):
    actor = actor_from_claims({"sub": sub})
    assert actor is not None
    assert actor.sub == sub


@pytest.mark.parametrize(
    "sub",
    ["x" * (MAX_SUB_LENGTH + 1), "x" * 1100, "a/b", "a?b", "a%41", "a\nb", "a\x00b", "a\x7fb"],
    ids=["129", "1100", "slash", "question", "percent", "newline", "nul", "del"],
)
def test_subjects_breaking_the_limits_are_refused(sub):
    for _ in range(2):  # the second time from the check's cache: refused the same
        with pytest.raises(InvalidSubject) as refused:
            actor_from_claims({"sub": sub, "cognito:groups": "[admin]"})
        assert refused.value.code == "INVALID_SUBJECT"


@pytest.mark.parametrize("claims", [None, {}, {"sub": ""}, {"sub": 5}, {"cognito:groups": "[admin]"}])
def test_no_subject_is_no_caller(claims):
    assert actor_from_claims(claims) is None
