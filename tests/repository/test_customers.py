from __future__ import annotations

import pytest

from shop import errors
from shop.services.customers import CustomerService
from tests.support.calls import counting
from tests.support.factories import ADMIN, ALICE, BOB


def test_create_and_get_profile(store):
    service = CustomerService(store.table)
    created = service.create(ALICE, email="Alice@Example.com", name="Alice")
    assert created.customer_id == "alice"
    with counting(store.client) as calls:
        fetched = service.get(ALICE, "alice")
    assert fetched == created
    assert calls.operations == ["GetItem"]


def test_profile_is_created_once(store):
    service = CustomerService(store.table)
    service.create(ALICE, email="alice@example.com", name="Alice")
    with pytest.raises(errors.CustomerExists):
        service.create(ALICE, email="other@example.com", name="Alice again")


def test_email_is_unique_case_insensitively(store):
    service = CustomerService(store.table)
    service.create(ALICE, email="shared@example.com", name="Alice")
    with pytest.raises(errors.EmailTaken):
        service.create(BOB, email="SHARED@example.COM", name="Bob")
    with pytest.raises(errors.CustomerNotFound):
        service.get(BOB, "bob")


def test_find_by_email_is_one_query(store):
    service = CustomerService(store.table)
    service.create(ALICE, email="alice@example.com", name="Alice")
    with counting(store.client) as calls:
        found = service.find_by_email(ADMIN, "ALICE@example.com")
    assert found.customer_id == "alice"
    assert calls.operations == ["Query"]
    with pytest.raises(errors.CustomerNotFound):
        service.find_by_email(ADMIN, "nobody@example.com")


def test_changing_email_moves_the_marker(store):
    service = CustomerService(store.table)
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


def test_only_self_or_admin(store):
    service = CustomerService(store.table)
    service.create(ALICE, email="alice@example.com", name="Alice")
    with pytest.raises(errors.DomainError) as raised:
        service.get(BOB, "alice")
    assert raised.value.code == "FORBIDDEN"
    assert service.get(ADMIN, "alice").customer_id == "alice"
    with pytest.raises(errors.DomainError):
        service.find_by_email(ALICE, "alice@example.com")
