"""Customer profiles, their unique-email markers, and the customer's notifications."""

from __future__ import annotations

from typing import Any

from shop import errors, keys
from shop.models import Customer, Notification, Page
from shop.repository.queries import collection_page
from shop.repository.store import (
    Table,
    TransactionCancelled,
    from_item,
    to_item,
    transact_write,
    translated_errors,
    values,
)

# The version of a profile written before profiles carried one (docs/decisions.md).
UNVERSIONED = 1


def _customer(item: dict[str, Any]) -> Customer:
    return Customer.model_validate({"version": UNVERSIONED, **item})


def _unchanged_since(version: int) -> str:
    """The profile exists with the version read (a profile without one reads as UNVERSIONED)."""
    if version == UNVERSIONED:
        return "attribute_exists(PK) AND (#version = :seen OR attribute_not_exists(#version))"
    return "attribute_exists(PK) AND #version = :seen"


class CustomerRepository:
    def __init__(self, table: Table) -> None:
        self.table = table

    def create(self, customer: Customer) -> Customer:
        """Profile and email marker in one transaction: neither exists without the other."""
        profile = {
            **keys.customer_key(customer.customer_id),
            **keys.customer_email_gsi(customer.email),
            "entity": "CUSTOMER",
            **customer.model_dump(),
        }
        marker = {
            **keys.email_marker_key(customer.email),
            "entity": "EMAIL",
            "customer_id": customer.customer_id,
        }
        put_new = "attribute_not_exists(PK)"
        try:
            transact_write(
                self.table,
                [
                    {"Put": {"TableName": self.table.name, "Item": to_item(profile), "ConditionExpression": put_new}},
                    {"Put": {"TableName": self.table.name, "Item": to_item(marker), "ConditionExpression": put_new}},
                ],
            )
        except TransactionCancelled as cancelled:
            if cancelled.failed_condition(0):
                raise errors.CustomerExists("this customer already has a profile") from cancelled
            if cancelled.failed_condition(1):
                raise errors.EmailTaken("this email belongs to another customer") from cancelled
            raise cancelled.unexplained() from cancelled
        return customer

    def get(self, customer_id: str) -> Customer:
        with translated_errors():
            response = self.table.client.get_item(
                TableName=self.table.name, Key=to_item(keys.customer_key(customer_id))
            )
        if "Item" not in response:
            raise errors.CustomerNotFound("customer not found")
        return _customer(from_item(response["Item"]))

    def find_by_email(self, email: str) -> Customer:
        gsi = keys.customer_email_gsi(email)
        with translated_errors():
            response = self.table.client.query(
                TableName=self.table.name,
                IndexName=keys.GSI1,
                KeyConditionExpression="GSI1PK = :pk AND GSI1SK = :sk",
                ExpressionAttributeValues=values(pk=gsi[keys.GSI1PK], sk=gsi[keys.GSI1SK]),
                Limit=1,
            )
        items = response.get("Items", [])
        if not items:
            raise errors.CustomerNotFound("no customer has this email")
        return _customer(from_item(items[0]))

    def update(self, current: Customer, *, name: str | None, email: str | None, updated_at: str) -> Customer:
        """Set the fields given if the profile still has the version it was read with.

        Only the fields sent are written, so nothing read can be written back stale; an email change
        moves the marker in the same transaction. A stale ``current`` raises VersionMismatch.
        """
        changes: dict[str, Any] = {"updated_at": updated_at, "version": current.version + 1}
        if name is not None:
            changes["name"] = name
        if email is not None:
            changes |= {"email": email, **keys.customer_email_gsi(email)}
        names = {f"#{field}": field for field in changes}
        update: dict[str, Any] = {
            "Update": {
                "TableName": self.table.name,
                "Key": to_item(keys.customer_key(current.customer_id)),
                "UpdateExpression": "SET " + ", ".join(f"#{field} = :{field}" for field in changes),
                "ConditionExpression": _unchanged_since(current.version),
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": values(**changes, seen=current.version),
            }
        }
        items: list[dict[str, Any]] = [update]
        if email is not None and keys.normalise_email(email) != keys.normalise_email(current.email):
            items += self._marker_move(current, email)
        try:
            transact_write(self.table, items)
        except TransactionCancelled as cancelled:
            if cancelled.failed_condition(0):
                raise errors.VersionMismatch("the profile changed since it was read") from cancelled
            if cancelled.failed_condition(1):
                raise errors.EmailTaken("this email belongs to another customer") from cancelled
            raise cancelled.unexplained() from cancelled
        kept = {field: value for field, value in changes.items() if field in Customer.model_fields}
        return current.model_copy(update=kept)

    def _marker_move(self, current: Customer, new_email: str) -> list[dict[str, Any]]:
        """The new email's marker (must be free) and the old one's delete (must be mine)."""
        marker = {**keys.email_marker_key(new_email), "entity": "EMAIL", "customer_id": current.customer_id}
        return [
            {
                "Put": {
                    "TableName": self.table.name,
                    "Item": to_item(marker),
                    "ConditionExpression": "attribute_not_exists(PK)",
                }
            },
            {
                "Delete": {
                    "TableName": self.table.name,
                    "Key": to_item(keys.email_marker_key(current.email)),
                    "ConditionExpression": "customer_id = :me",
                    "ExpressionAttributeValues": values(me=current.customer_id),
                }
            },
        ]

    def notifications(self, customer_id: str, *, limit: int, next_token: str | None) -> Page[Notification]:
        return collection_page(
            self.table,
            scope=f"notifications:{customer_id}",
            partition=keys.customer_pk(customer_id),
            sk_prefix=keys.NOTIFICATION_PREFIX,
            limit=limit,
            next_token=next_token,
        ).as_page(Notification.model_validate)
