from __future__ import annotations

import pytest

from shop import errors, keys, wiring
from shop.repository.store import to_item
from shop.services.customers import UPDATE_ATTEMPTS
from tests.support.calls import counting
from tests.support.factories import ADMIN, ALICE, BOB

# Reads no stream record: its tables have none (tests/conftest.py::local_store; docs/testing.md, "Time").
pytestmark = pytest.mark.table_without_stream


@pytest.mark.dynamodb_semantics
def test_create_and_get_profile(store):
    service = wiring.customer_service(store.table)
    created = service.create(ALICE, email="Alice@Example.com", name="Alice")
    assert created.customer_id == "alice"
    with counting(store.client) as calls:
        fetched = service.get(ALICE, "alice")
    assert fetched == created
    assert calls.operations == ["GetItem"]


@pytest.mark.dynamodb_semantics
def test_profile_is_created_once(store):
    service = wiring.customer_service(store.table)
    service.create(ALICE, email="alice@example.com", name="Alice")
    with pytest.raises(errors.CustomerExists):
        service.create(ALICE, email="other@example.com", name="Alice again")


@pytest.mark.dynamodb_semantics
def test_email_is_unique_case_insensitively(store):
    service = wiring.customer_service(store.table)
    service.create(ALICE, email="shared@example.com", name="Alice")
    with pytest.raises(errors.EmailTaken):
        service.create(BOB, email="SHARED@example.COM", name="Bob")
    with pytest.raises(errors.CustomerNotFound):
        service.get(BOB, "bob")


@pytest.mark.dynamodb_semantics
def test_find_by_email_is_one_query(store):
    service = wiring.customer_service(store.table)
    service.create(ALICE, email="alice@example.com", name="Alice")
    with counting(store.client) as calls:
        found = service.find_by_email(ADMIN, "ALICE@example.com")
    assert found.customer_id == "alice"
    assert calls.operations == ["Query"]
    with pytest.raises(errors.CustomerNotFound):
        service.find_by_email(ADMIN, "nobody@example.com")


@pytest.mark.dynamodb_semantics
def test_changing_email_moves_the_marker(store):
    service = wiring.customer_service(store.table)
    service.create(ALICE, email="old@example.com", name="Alice")
    service.create(BOB, email="bob@example.com", name="Bob")
    updated = service.update(ALICE, "alice", email="new@example.com", name=None)
    assert updated.email == "new@example.com"
    assert updated.name == "Alice"
    assert service.get(ALICE, "alice").email == "new@example.com"
    with pytest.raises(errors.EmailTaken):
        service.update(BOB, "bob", email="NEW@example.com", name=None)
    assert service.update(BOB, "bob", email="old@example.com", name="Bobby").email == "old@example.com"
    assert service.find_by_email(ADMIN, "old@example.com").customer_id == "bob"


@pytest.mark.dynamodb_semantics
def test_only_self_or_admin(store):
    service = wiring.customer_service(store.table)
    service.create(ALICE, email="alice@example.com", name="Alice")
    with pytest.raises(errors.DomainError) as raised:
        service.get(BOB, "alice")
    assert raised.value.code == "FORBIDDEN"
    assert service.get(ADMIN, "alice").customer_id == "alice"
    with pytest.raises(errors.DomainError):
        service.find_by_email(ALICE, "alice@example.com")


@pytest.mark.dynamodb_semantics
def test_profiles_start_at_version_1_and_each_change_adds_one(store):
    service = wiring.customer_service(store.table)
    assert service.create(ALICE, email="alice@example.com", name="Alice").version == 1
    renamed = service.update(ALICE, "alice", email=None, name="Alicia")
    moved = service.update(ALICE, "alice", email="alicia@example.com", name=None, expected_version=2)
    assert (renamed.version, moved.version) == (2, 3)
    assert service.get(ALICE, "alice") == moved
    assert (moved.name, moved.email) == ("Alicia", "alicia@example.com")


def _interleaving(store, monkeypatch, service, *, change, times=1):
    """After each of the first `times` reads of `service`, another caller's `change` lands."""
    other = wiring.customer_service(store.table)
    read = service.customers.get
    landed = []

    def read_then_another_change_lands(customer_id):
        current = read(customer_id)
        if len(landed) < times:
            landed.append(other.update(ADMIN, customer_id, **change(len(landed))))
        return current

    monkeypatch.setattr(service.customers, "get", read_then_another_change_lands)
    return landed


@pytest.mark.dynamodb_semantics
def test_a_change_landing_between_read_and_write_is_kept(store, monkeypatch):
    service = wiring.customer_service(store.table)
    service.create(ALICE, email="old@example.com", name="Alice")
    _interleaving(store, monkeypatch, service, change=lambda _: {"name": "Renamed", "email": None})
    updated = service.update(ALICE, "alice", email="new@example.com", name=None)
    assert (updated.name, updated.email, updated.version) == ("Renamed", "new@example.com", 3)
    fresh = wiring.customer_service(store.table)
    assert fresh.get(ALICE, "alice") == updated
    assert fresh.find_by_email(ADMIN, "new@example.com") == updated
    with pytest.raises(errors.CustomerNotFound):
        fresh.find_by_email(ADMIN, "old@example.com")


@pytest.mark.dynamodb_semantics
def test_expected_version_is_checked_before_and_during_the_write(store, monkeypatch):
    service = wiring.customer_service(store.table)
    service.create(ALICE, email="old@example.com", name="Alice")
    with pytest.raises(errors.VersionMismatch) as stale:
        service.update(ALICE, "alice", email=None, name="Nope", expected_version=7)
    assert stale.value.details == {"current_version": 1}
    _interleaving(store, monkeypatch, service, change=lambda _: {"name": "Renamed", "email": None})
    with pytest.raises(errors.VersionMismatch) as lost_the_race:
        service.update(ALICE, "alice", email="new@example.com", name=None, expected_version=1)
    assert lost_the_race.value.details == {"current_version": 2}
    fresh = wiring.customer_service(store.table)
    after = fresh.get(ALICE, "alice")
    assert (after.name, after.email, after.version) == ("Renamed", "old@example.com", 2)
    assert fresh.find_by_email(ADMIN, "old@example.com").customer_id == "alice"  # the marker did not move
    with pytest.raises(errors.CustomerNotFound):
        fresh.find_by_email(ADMIN, "new@example.com")
    wiring.customer_service(store.table).create(BOB, email="new@example.com", name="Bob")  # and the new one is free


@pytest.mark.dynamodb_semantics
def test_a_profile_that_keeps_changing_is_a_conflict_not_a_lost_update(store, monkeypatch):
    service = wiring.customer_service(store.table)
    service.create(ALICE, email="alice@example.com", name="Alice")
    landed = _interleaving(
        store, monkeypatch, service, change=lambda i: {"name": f"Other {i}", "email": None}, times=100
    )
    with pytest.raises(errors.Conflict) as raised:
        service.update(ALICE, "alice", email="mine@example.com", name=None)
    assert raised.value.code == "CONFLICT"
    assert len(landed) == UPDATE_ATTEMPTS
    after = wiring.customer_service(store.table).get(ALICE, "alice")
    assert (after.name, after.email, after.version) == (f"Other {UPDATE_ATTEMPTS - 1}", "alice@example.com", 6)


@pytest.mark.dynamodb_semantics
def test_a_profile_written_before_versions_reads_as_version_1(store):
    service = wiring.customer_service(store.table)
    service.create(ALICE, email="alice@example.com", name="Alice")
    store.client.update_item(
        TableName=store.table_name, Key=to_item(keys.customer_key("alice")), UpdateExpression="REMOVE version"
    )
    unversioned = service.get(ALICE, "alice")
    assert unversioned.version == 1
    updated = service.update(ALICE, "alice", email=None, name="Alicia", expected_version=1)
    assert (updated.version, service.get(ALICE, "alice").version) == (2, 2)
    with pytest.raises(errors.VersionMismatch):
        service.customers.update(unversioned, name="Stale", email=None, updated_at="2026-01-01T00:00:00Z")
    assert service.get(ALICE, "alice").name == "Alicia"
