"""Anonymous shopping sessions: one item each, the cart as a map, expiry by TTL."""

from __future__ import annotations

from typing import Any

from shop import errors, keys
from shop.clock import iso_from_epoch
from shop.limits import MAX_CART_LINES
from shop.models.sessions import StoredLine, StoredSession
from shop.repository.store import (
    ConditionFailed,
    Table,
    conditional_write,
    from_item,
    to_item,
    translated_errors,
    values,
)


def stored_lines(item: dict[str, Any]) -> list[StoredLine]:
    """The lines of an item holding a cart (`cart` and `cart_added` maps): a session's or a customer's."""
    added = item.get("cart_added", {})
    lines = sorted(item.get("cart", {}).items(), key=lambda entry: (added.get(entry[0], ""), entry[0]))
    return [
        StoredLine(
            product_id=pid,
            name=line["name"],
            unit_price_cents=line["unit_price_cents"],
            quantity=line["quantity"],
            added_at=added.get(pid, ""),
        )
        for pid, line in lines
    ]


def session_from_item(item: dict[str, Any]) -> StoredSession:
    return StoredSession(
        session_id=item["session_id"],
        lines=stored_lines(item),
        expires_at=iso_from_epoch(int(item[keys.TTL_ATTRIBUTE])),
        cart_version=int(item.get("cart_version", 0)),
    )


class SessionRepository:
    def __init__(self, table: Table) -> None:
        self.table = table

    def create(self, session_id: str, *, created_at: str, expires_at: int) -> StoredSession:
        item = {
            **keys.session_key(session_id),
            "entity": "SESSION",
            "session_id": session_id,
            "cart": {},
            "cart_added": {},
            "cart_version": 0,
            "created_at": created_at,
            keys.TTL_ATTRIBUTE: expires_at,
        }
        try:
            with conditional_write():
                self.table.client.put_item(
                    TableName=self.table.name,
                    Item=to_item(item),
                    ConditionExpression="attribute_not_exists(PK)",
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
        except ConditionFailed as failed:
            # The id is new and random: a session already there with this creation time is this write's own,
            # committed by an attempt whose answer was lost (botocore re-sends after a timeout).
            if failed.item is None or failed.item.get("created_at") != created_at:
                raise errors.Conflict("a session with this id exists") from failed
        return session_from_item(item)

    def get(self, session_id: str, *, now: int) -> StoredSession:
        """Expired sessions are absent, whether or not TTL has deleted them yet."""
        with translated_errors():
            response = self.table.client.get_item(
                TableName=self.table.name, Key=to_item(keys.session_key(session_id)), ConsistentRead=True
            )
        item = response.get("Item")
        if item is None:
            raise errors.SessionNotFound("session not found or expired")
        plain = from_item(item)
        if int(plain[keys.TTL_ATTRIBUTE]) <= now:
            raise errors.SessionNotFound("session not found or expired")
        return session_from_item(plain)

    def set_line(
        self,
        session_id: str,
        *,
        product_id: str,
        name: str,
        unit_price_cents: int,
        quantity: int,
        added_at: str,
        now: int,
        expires_at: int,
    ) -> StoredSession:
        """Put, change or (quantity 0) remove one cart line; every change slides the expiry."""
        condition = "attribute_exists(PK) AND #exp > :now"
        names = {"#exp": keys.TTL_ATTRIBUTE, "#pid": product_id}
        if quantity == 0:
            expression = "REMOVE cart.#pid, cart_added.#pid SET #exp = :exp ADD cart_version :one"
            attr_values = values(now=now, exp=expires_at, one=1)
        else:
            expression = (
                "SET cart.#pid = :line, cart_added.#pid = if_not_exists(cart_added.#pid, :at), #exp = :exp "
                "ADD cart_version :one"
            )
            condition += " AND (attribute_exists(cart.#pid) OR size(cart) < :max)"
            line = {
                "name": name,
                "unit_price_cents": unit_price_cents,
                "quantity": quantity,
            }
            attr_values = values(now=now, exp=expires_at, one=1, line=line, max=MAX_CART_LINES, at=added_at)
        try:
            with conditional_write():
                response = self.table.client.update_item(
                    TableName=self.table.name,
                    Key=to_item(keys.session_key(session_id)),
                    UpdateExpression=expression,
                    ConditionExpression=condition,
                    ExpressionAttributeNames=names,
                    ExpressionAttributeValues=attr_values,
                    ReturnValues="ALL_NEW",
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
        except ConditionFailed as failed:
            if failed.item is None or int(failed.item[keys.TTL_ATTRIBUTE]) <= now:
                raise errors.SessionNotFound("session not found or expired") from failed
            raise errors.CartFull(f"a cart holds at most {MAX_CART_LINES} lines") from failed
        return session_from_item(from_item(response["Attributes"]))

    def delete(self, session_id: str) -> None:
        with translated_errors():
            self.table.client.delete_item(TableName=self.table.name, Key=to_item(keys.session_key(session_id)))
