"""Customer profiles on the memory store: the token's subject, one profile per email, versions, self or admin."""

from __future__ import annotations

import pytest

from shop import errors
from shop.models import Notification
from shop.services import customers as customers_module
from tests.support.factories import ADMIN, ALICE, BOB


@pytest.fixture
def customers(memory, monkeypatch):
    monkeypatch.setattr(customers_module.time, "sleep", lambda _: None)  # the retry's backoff
    return memory.customer_service()


def test_a_profile_is_the_callers_own_at_version_one_with_the_email_trimmed(customers):
    created = customers.create(ALICE, email="  alice@example.com ", name="Alice")
    assert (created.customer_id, created.email, created.version) == ("alice", "alice@example.com", 1)
    assert created.created_at == created.updated_at
    assert customers.get(ALICE, "alice") == created


def test_one_profile_per_subject_and_per_email(customers):
    customers.create(ALICE, email="alice@example.com", name="Alice")
    with pytest.raises(errors.CustomerExists):
        customers.create(ALICE, email="other@example.com", name="Alice")
    with pytest.raises(errors.EmailTaken):
        customers.create(BOB, email="ALICE@example.com", name="Bob")


def test_a_profile_is_read_and_changed_by_its_customer_or_an_admin(customers):
    customers.create(ALICE, email="alice@example.com", name="Alice")
    with pytest.raises(errors.Forbidden):
        customers.get(BOB, "alice")
    with pytest.raises(errors.Forbidden):
        customers.update(BOB, "alice", email=None, name="Mallory")
    assert customers.get(ADMIN, "alice").name == "Alice"
    assert customers.update(ADMIN, "alice", email=None, name="Alice A.").name == "Alice A."
    with pytest.raises(errors.CustomerNotFound):
        customers.get(ADMIN, "nobody")


def test_an_update_sets_only_the_fields_given_and_moves_the_email(customers):
    customers.create(ALICE, email="alice@example.com", name="Alice")
    renamed = customers.update(ALICE, "alice", email=None, name="Alice A.")
    assert (renamed.name, renamed.email, renamed.version) == ("Alice A.", "alice@example.com", 2)
    moved = customers.update(ALICE, "alice", email=" new@example.com ", name=None)
    assert (moved.name, moved.email, moved.version) == ("Alice A.", "new@example.com", 3)
    assert customers.find_by_email(ADMIN, "NEW@example.com").customer_id == "alice"
    customers.create(BOB, email="alice@example.com", name="Bob")  # the old email is free again
    with pytest.raises(errors.EmailTaken):
        customers.update(ALICE, "alice", email="alice@example.com", name=None)


def test_an_expected_version_that_is_not_the_profiles_is_a_mismatch_naming_the_current_one(customers):
    customers.create(ALICE, email="alice@example.com", name="Alice")
    customers.update(ALICE, "alice", email=None, name="Alice A.", expected_version=1)
    with pytest.raises(errors.VersionMismatch) as mismatch:
        customers.update(ALICE, "alice", email=None, name="stale", expected_version=1)
    assert mismatch.value.details == {"current_version": 2}
    assert customers.get(ALICE, "alice").name == "Alice A."


def concurrent_writer(memory, times):
    """A store whose profile changes (a concurrent rename) between the service's read and its write, `times` times."""
    update = memory.customers.update
    left = {"n": times}

    def racing_update(current, **fields):
        if left["n"]:
            left["n"] -= 1
            latest = memory.customers.get(current.customer_id)
            update(latest, name=f"other {left['n']}", email=None, updated_at=fields["updated_at"])
        return update(current, **fields)

    return racing_update


def test_without_an_expected_version_a_change_meeting_another_is_reapplied(customers, memory, monkeypatch):
    customers.create(ALICE, email="alice@example.com", name="Alice")
    monkeypatch.setattr(memory.customers, "update", concurrent_writer(memory, times=2))
    updated = customers.update(ALICE, "alice", email="new@example.com", name=None)
    assert (updated.email, updated.name, updated.version) == ("new@example.com", "other 0", 4)


def test_a_change_that_keeps_meeting_others_gives_up_with_a_conflict(customers, memory, monkeypatch):
    customers.create(ALICE, email="alice@example.com", name="Alice")
    monkeypatch.setattr(memory.customers, "update", concurrent_writer(memory, times=customers_module.UPDATE_ATTEMPTS))
    with pytest.raises(errors.Conflict):
        customers.update(ALICE, "alice", email="new@example.com", name=None)
    assert memory.customers.get("alice").email == "alice@example.com"


def test_with_an_expected_version_a_change_meeting_another_is_a_mismatch(customers, memory, monkeypatch):
    customers.create(ALICE, email="alice@example.com", name="Alice")
    monkeypatch.setattr(memory.customers, "update", concurrent_writer(memory, times=1))
    with pytest.raises(errors.VersionMismatch) as mismatch:
        customers.update(ALICE, "alice", email=None, name="Alice A.", expected_version=1)
    assert mismatch.value.details == {"current_version": 2}


def test_only_an_admin_finds_a_customer_by_email(customers):
    customers.create(ALICE, email="alice@example.com", name="Alice")
    with pytest.raises(errors.Forbidden):
        customers.find_by_email(ALICE, "alice@example.com")
    assert customers.find_by_email(ADMIN, " Alice@Example.com").customer_id == "alice"
    with pytest.raises(errors.CustomerNotFound):
        customers.find_by_email(ADMIN, "nobody@example.com")


def test_notifications_are_the_customers_own_newest_first(customers, memory):
    for n in range(3):
        memory.customers.notify(
            "alice",
            Notification(
                notification_id=f"o-{n}", type="ORDER_CONFIRMED", order_id="o", message="m", created_at=f"2026-0{n + 1}"
            ),
        )
    page = customers.notifications(ALICE, "alice", limit=2, next_token=None)
    assert [n.notification_id for n in page.items] == ["o-2", "o-1"]
    assert (
        customers.notifications(ADMIN, "alice", limit=2, next_token=page.next_token).items[0].notification_id == "o-0"
    )
    with pytest.raises(errors.Forbidden):
        customers.notifications(BOB, "alice", limit=2, next_token=None)
