"""Customer profiles: created for the token's subject, unique email, self-or-admin access."""

from __future__ import annotations

from shop import clock
from shop.models import Customer, Notification, Page
from shop.repository import CustomerRepository, Table
from shop.services.actor import Actor


class CustomerService:
    def __init__(self, table: Table) -> None:
        self.customers = CustomerRepository(table)

    def create(self, actor: Actor, *, email: str, name: str) -> Customer:
        now = clock.iso_now()
        customer = Customer(customer_id=actor.sub, email=email.strip(), name=name, created_at=now, updated_at=now)
        return self.customers.create(customer)

    def get(self, actor: Actor, customer_id: str) -> Customer:
        actor.require_self_or_admin(customer_id)
        return self.customers.get(customer_id)

    def update(self, actor: Actor, customer_id: str, *, email: str | None, name: str | None) -> Customer:
        actor.require_self_or_admin(customer_id)
        current = self.customers.get(customer_id)
        return self.customers.update(
            current, name=name, email=email.strip() if email is not None else None, updated_at=clock.iso_now()
        )

    def find_by_email(self, actor: Actor, email: str) -> Customer:
        actor.require_admin()
        return self.customers.find_by_email(email)

    def notifications(
        self, actor: Actor, customer_id: str, *, limit: int, next_token: str | None
    ) -> Page[Notification]:
        actor.require_self_or_admin(customer_id)
        return self.customers.notifications(customer_id, limit=limit, next_token=next_token)
