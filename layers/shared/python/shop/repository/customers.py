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


def _customer(item: dict[str, Any]) -> Customer:
    return Customer.model_validate(item)


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
        """Change name and/or email; an email change moves the marker in the same transaction."""
        new_email = email if email is not None else current.email
        new_name = name if name is not None else current.name
        email_moves = keys.normalise_email(new_email) != keys.normalise_email(current.email)
        gsi = keys.customer_email_gsi(new_email)
        update: dict[str, Any] = {
            "Update": {
                "TableName": self.table.name,
                "Key": to_item(keys.customer_key(current.customer_id)),
                "UpdateExpression": "SET #name = :name, email = :email, updated_at = :at, GSI1PK = :gpk, GSI1SK = :gsk",
                "ConditionExpression": "attribute_exists(PK) AND email = :old_email",
                "ExpressionAttributeNames": {"#name": "name"},
                "ExpressionAttributeValues": values(
                    name=new_name,
                    email=new_email,
                    at=updated_at,
                    gpk=gsi[keys.GSI1PK],
                    gsk=gsi[keys.GSI1SK],
                    old_email=current.email,
                ),
            }
        }
        items: list[dict[str, Any]] = [update]
        if email_moves:
            items.append(
                {
                    "Put": {
                        "TableName": self.table.name,
                        "Item": to_item(
                            {
                                **keys.email_marker_key(new_email),
                                "entity": "EMAIL",
                                "customer_id": current.customer_id,
                            }
                        ),
                        "ConditionExpression": "attribute_not_exists(PK)",
                    }
                }
            )
            items.append(
                {
                    "Delete": {
                        "TableName": self.table.name,
                        "Key": to_item(keys.email_marker_key(current.email)),
                        "ConditionExpression": "customer_id = :me",
                        "ExpressionAttributeValues": values(me=current.customer_id),
                    }
                }
            )
        try:
            transact_write(self.table, items)
        except TransactionCancelled as cancelled:
            if cancelled.failed_condition(1):
                raise errors.EmailTaken("this email belongs to another customer") from cancelled
            if cancelled.failed_condition(0):
                raise errors.Conflict("the profile changed meanwhile, retry") from cancelled
            raise cancelled.unexplained() from cancelled
        return current.model_copy(update={"name": new_name, "email": new_email, "updated_at": updated_at})

    def notifications(self, customer_id: str, *, limit: int, next_token: str | None) -> Page[Notification]:
        return collection_page(
            self.table,
            scope=f"notifications:{customer_id}",
            partition=keys.customer_pk(customer_id),
            sk_prefix=keys.NOTIFICATION_PREFIX,
            limit=limit,
            next_token=next_token,
        ).as_page(Notification.model_validate)
