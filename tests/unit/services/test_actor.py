"""Who may do what: self or admin, admin only, and who may see an owner's things."""

from __future__ import annotations

import pytest

from shop import errors
from shop.services.actor import Actor

ALICE = Actor("alice")
ADMIN = Actor("admin-1", is_admin=True)


def test_a_customer_acts_on_their_own_profile_and_an_admin_on_any():
    ALICE.require_self_or_admin("alice")
    ADMIN.require_self_or_admin("alice")
    with pytest.raises(errors.Forbidden):
        ALICE.require_self_or_admin("bob")


def test_admin_only_means_admin_only():
    ADMIN.require_admin()
    with pytest.raises(errors.Forbidden):
        ALICE.require_admin()
    with pytest.raises(errors.Forbidden):
        Actor("admin-1").require_admin()  # the admin's sub without the group


def test_an_owner_and_an_admin_see_an_owners_things_no_one_else_does():
    assert ALICE.may_see("alice")
    assert ADMIN.may_see("alice")
    assert not ALICE.may_see("bob")
