"""A customer profile over HTTP: concurrent PATCHes of different fields both land; If-Match guards a PATCH."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import Api, Stack, expect
from tests.e2e.test_concurrency import all_at_once

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e")]

ROUNDS = 6


def test_concurrent_profile_patches_both_land_and_if_match_guards(stack: Stack, stack_api: Api, uid: str) -> None:
    customer_id = f"e2e-profile-{uid}"
    customer = stack.token(customer_id)
    admin = stack.admin_token()
    created = stack_api.post("/customers", token=customer, json={"email": f"{uid}-0@example.com", "name": "Round 0"})
    assert (expect(created, 201)["version"], created.headers["ETag"]) == (1, '"1"')

    for round_number in range(1, ROUNDS + 1):
        changes = [{"name": f"Round {round_number}"}, {"email": f"{uid}-{round_number}@example.com"}]
        responses = all_at_once(
            2,
            lambda i, changes=changes: stack_api.patch(
                f"/customers/{customer_id}", token=customer if i == 0 else admin, json=changes[i]
            ),
        )
        assert [r.status_code for r in responses] == [200, 200], [r.text[:300] for r in responses]
        read = stack_api.get(f"/customers/{customer_id}", token=customer)
        profile = expect(read, 200)
        assert (profile["name"], profile["email"]) == (changes[0]["name"], changes[1]["email"])
        assert (profile["version"], read.headers["ETag"]) == (1 + 2 * round_number, f'"{1 + 2 * round_number}"')

    etag = stack_api.get(f"/customers/{customer_id}", token=customer).headers["ETag"]
    expect(
        stack_api.patch(f"/customers/{customer_id}", token=admin, headers={"If-Match": etag}, json={"name": "Admin"}),
        200,
    )
    stale = stack_api.patch(
        f"/customers/{customer_id}", token=customer, headers={"If-Match": etag}, json={"name": "Me"}
    )
    assert expect(stale, 412, "VERSION_MISMATCH")["error"]["details"] == {"current_version": 2 + 2 * ROUNDS}
    fresh = stack_api.get(f"/customers/{customer_id}", token=customer).headers["ETag"]
    renamed = stack_api.patch(
        f"/customers/{customer_id}", token=customer, headers={"If-Match": fresh}, json={"name": "Me"}
    )
    assert (expect(renamed, 200)["name"], renamed.headers["ETag"]) == ("Me", f'"{3 + 2 * ROUNDS}"')
