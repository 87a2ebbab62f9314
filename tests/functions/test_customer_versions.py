"""Customer profiles over HTTP: the version in the body, the ETag, and If-Match on PATCH."""

from __future__ import annotations

import pytest

from tests.functions.apigw import ADMIN, ALICE, BOB, call

PROFILE = "/customers/alice"


@pytest.mark.dynamodb_semantics
def test_every_profile_answer_carries_its_version_as_etag(api):
    created = call("POST", "/customers", claims={"sub": "carol"}, body={"email": "carol@example.com", "name": "Carol"})
    assert (created.status, created.body["version"], created.headers["etag"]) == (201, 1, '"1"')
    read = call("GET", PROFILE, claims=ALICE)
    assert (read.status, read.body["version"], read.headers["etag"]) == (200, 1, '"1"')
    found = call("GET", "/customers", claims=ADMIN, query={"email": "alice@example.com"})
    assert (found.status, found.headers["etag"]) == (200, '"1"')
    patched = call("PATCH", PROFILE, claims=ALICE, body={"name": "Alicia"})
    assert (patched.status, patched.body["version"], patched.headers["etag"]) == (200, 2, '"2"')
    assert call("GET", PROFILE, claims=ADMIN).headers["etag"] == '"2"'


@pytest.mark.parametrize("if_match", ['"1"', "1", 'W/"1"', ' "1" '])
def test_patch_with_the_current_etag_lands(moto_api, if_match):
    patched = call("PATCH", PROFILE, claims=ALICE, headers={"If-Match": if_match}, body={"email": "a2@example.com"})
    assert (patched.status, patched.body["email"], patched.headers["etag"]) == (200, "a2@example.com", '"2"')


@pytest.mark.dynamodb_semantics
def test_patch_with_an_old_etag_is_412_and_changes_nothing(api):
    etag = call("GET", PROFILE, claims=ALICE).headers["etag"]
    assert call("PATCH", PROFILE, claims=ADMIN, headers={"If-Match": etag}, body={"name": "By admin"}).status == 200
    stale = call("PATCH", PROFILE, claims=ALICE, headers={"If-Match": etag}, body={"email": "mine@example.com"})
    assert (stale.status, stale.code, stale.body["error"]["details"]) == (
        412,
        "VERSION_MISMATCH",
        {"current_version": 2},
    )
    after = call("GET", PROFILE, claims=ALICE)
    assert (after.body["name"], after.body["email"], after.headers["etag"]) == ("By admin", "alice@example.com", '"2"')
    assert call("GET", "/customers", claims=ADMIN, query={"email": "mine@example.com"}).code == "CUSTOMER_NOT_FOUND"


@pytest.mark.parametrize("garbage", ["*", "abc", '"1", "2"', '"1.0"', "99999999999999999999", ""])
def test_an_if_match_that_names_no_version_is_412(moto_api, garbage):
    reply = call("PATCH", PROFILE, claims=ALICE, headers={"If-Match": garbage}, body={"name": "X"})
    assert (reply.status, reply.code) == (412, "VERSION_MISMATCH")
    assert call("GET", PROFILE, claims=ALICE).body["name"] == "Alice Example"


def test_if_match_does_not_hide_missing_or_forbidden_profiles(moto_api):
    assert (
        call("PATCH", "/customers/nobody", claims=ADMIN, headers={"If-Match": '"1"'}, body={"name": "X"}).status == 404
    )
    assert call("PATCH", PROFILE, claims=BOB, headers={"If-Match": '"1"'}, body={"name": "X"}).status == 403
    assert call("PATCH", PROFILE, claims=ALICE, headers={"If-Match": "x" * 201}, body={"name": "X"}).status == 422


def test_patch_without_if_match_applies_to_the_current_version(moto_api):
    assert call("PATCH", PROFILE, claims=ADMIN, body={"name": "By admin"}).headers["etag"] == '"2"'
    patched = call("PATCH", PROFILE, claims=ALICE, body={"email": "alice2@example.com"})
    assert (patched.status, patched.body["name"], patched.body["email"], patched.headers["etag"]) == (
        200,
        "By admin",
        "alice2@example.com",
        '"3"',
    )
