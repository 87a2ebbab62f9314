"""Customer profiles: created for the token's subject, unique email, self-or-admin access."""

from __future__ import annotations

import random
import time

from shop import clock, errors
from shop.models import Customer, Notification, Page
from shop.services.actor import Actor
from shop.services.ports import CustomerStore

# Reads and conditional writes one PATCH without If-Match tries before answering 409 CONFLICT.
UPDATE_ATTEMPTS = 5


class CustomerService:
    def __init__(self, *, customers: CustomerStore) -> None:
        self.customers = customers

    def create(self, actor: Actor, *, email: str, name: str) -> Customer:
        now = clock.iso_now()
        customer = Customer(
            customer_id=actor.sub, email=email.strip(), name=name, version=1, created_at=now, updated_at=now
        )
        return self.customers.create(customer)

    def get(self, actor: Actor, customer_id: str) -> Customer:
        actor.require_self_or_admin(customer_id)
        return self.customers.get(customer_id)

    def update(
        self,
        actor: Actor,
        customer_id: str,
        *,
        email: str | None,
        name: str | None,
        expected_version: int | None = None,
    ) -> Customer:
        """Change the fields given; with ``expected_version`` only if the profile still has it.

        Without an expected version a change that meets a concurrent one is re-read and re-applied,
        so concurrent changes of different fields all land; one that keeps meeting them is a Conflict.
        """
        actor.require_self_or_admin(customer_id)
        email = email.strip() if email is not None else None
        for attempt in range(UPDATE_ATTEMPTS):
            current = self.customers.get(customer_id)
            if expected_version is not None and current.version != expected_version:
                raise errors.VersionMismatch(
                    "the profile changed since you read it", {"current_version": current.version}
                )
            try:
                return self.customers.update(current, name=name, email=email, updated_at=clock.iso_now())
            except errors.VersionMismatch:
                if expected_version is None:
                    time.sleep(random.uniform(0, 0.01 * 2**attempt))
                # else the next read finds the newer version and answers the mismatch with it
        raise errors.Conflict("the profile keeps changing, retry")

    def find_by_email(self, actor: Actor, email: str) -> Customer:
        actor.require_admin()
        return self.customers.find_by_email(email)

    def notifications(
        self, actor: Actor, customer_id: str, *, limit: int, next_token: str | None
    ) -> Page[Notification]:
        actor.require_self_or_admin(customer_id)
        return self.customers.notifications(customer_id, limit=limit, next_token=next_token)
