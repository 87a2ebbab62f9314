"""Customer carts: one item per customer under CART#<customer_id> (the lines as a map, like a session's),
expiry by TTL, and one marker item per merged session beside it.

Every write is conditional on the cart as read: an UpdateItem for one line, a transaction for a merge
(cart, session deletion, marker together). An expired cart reads as empty whether or not TTL has
deleted it yet, and the next write replaces it rather than reviving its lines.
"""

from __future__ import annotations

from typing import Any

from shop import errors, keys
from shop.clock import iso_from_epoch
from shop.limits import MAX_CART_LINES
from shop.models.carts import MergeView, NotMerged, StoredCart
from shop.models.orders import SessionClaim
from shop.models.products import Product
from shop.models.sessions import StoredLine
from shop.repository.products import product_from_item
from shop.repository.sessions import session_from_item, stored_lines
from shop.repository.store import (
    ConditionFailed,
    Table,
    TransactionCancelled,
    batch_get,
    conditional_write,
    from_item,
    to_item,
    transact_write,
    translated_errors,
    values,
)

# Conditional writes one line change tries when the cart is replaced under it (expired carts only).
WRITE_ATTEMPTS = 3


def cart_from_item(customer_id: str, item: dict[str, Any] | None, now: int) -> StoredCart:
    """The cart an item (plain, or None) holds at `now`: no lines once expired, whatever TTL has done."""
    if item is None:
        return StoredCart(customer_id, [], None, 0)
    version = int(item.get("cart_version", 0))
    expires_at = int(item[keys.TTL_ATTRIBUTE])
    if expires_at <= now:
        return StoredCart(customer_id, [], None, version)
    return StoredCart(customer_id, stored_lines(item), iso_from_epoch(expires_at), version)


def _line(line: StoredLine) -> dict[str, Any]:
    return {"name": line.name, "unit_price_cents": line.unit_price_cents, "quantity": line.quantity}


def cart_item(customer_id: str, lines: list[StoredLine], *, version: int, updated_at: str, expires_at: int) -> dict:
    return {
        **keys.customer_cart_key(customer_id),
        "entity": "CUSTOMER_CART",
        "customer_id": customer_id,
        "cart": {line.product_id: _line(line) for line in lines},
        "cart_added": {line.product_id: line.added_at for line in lines},
        "cart_version": version,
        "updated_at": updated_at,
        keys.TTL_ATTRIBUTE: expires_at,
    }


def _written_when(seen_version: int) -> tuple[str, dict[str, Any]]:
    """The condition of replacing the cart item read at `seen_version` (0: there was none)."""
    if seen_version == 0:
        return "attribute_not_exists(PK)", {}
    return "cart_version = :seen", values(seen=seen_version)


class CustomerCartRepository:
    def __init__(self, table: Table) -> None:
        self.table = table

    def get(self, customer_id: str, *, now: int, require_profile: bool = True) -> StoredCart:
        """With the profile: one BatchGetItem of profile and cart (CustomerNotFound); without: one GetItem."""
        cart_key = keys.customer_cart_key(customer_id)
        if not require_profile:
            with translated_errors():
                response = self.table.client.get_item(
                    TableName=self.table.name, Key=to_item(cart_key), ConsistentRead=True
                )
            item = response.get("Item")
            return cart_from_item(customer_id, from_item(item) if item else None, now)
        profile_key = keys.customer_key(customer_id)
        found = batch_get(self.table, [profile_key, cart_key])
        if (profile_key[keys.PK], profile_key[keys.SK]) not in found:
            raise errors.CustomerNotFound("customer not found")
        return cart_from_item(customer_id, found.get((cart_key[keys.PK], cart_key[keys.SK])), now)

    def product_for(self, customer_id: str, product_id: str) -> Product:
        """Profile and product in one BatchGetItem: CustomerNotFound, ProductNotFound."""
        profile_key, product_key = keys.customer_key(customer_id), keys.product_key(product_id)
        found = batch_get(self.table, [profile_key, product_key])
        if (profile_key[keys.PK], profile_key[keys.SK]) not in found:
            raise errors.CustomerNotFound("customer not found")
        product = found.get((product_key[keys.PK], product_key[keys.SK]))
        if product is None:
            raise errors.ProductNotFound([product_id])
        return product_from_item(product)

    def read_for_merge(self, customer_id: str, session_id: str, *, now: int) -> MergeView:
        """Profile, cart, session and merge marker in one BatchGetItem; CustomerNotFound."""
        wanted = [
            keys.customer_key(customer_id),
            keys.customer_cart_key(customer_id),
            keys.session_key(session_id),
            keys.cart_merge_key(customer_id, session_id),
        ]
        profile, cart, session, marker = [(key[keys.PK], key[keys.SK]) for key in wanted]
        found = batch_get(self.table, wanted)
        if profile not in found:
            raise errors.CustomerNotFound("customer not found")
        session_item = found.get(session)
        live_session = session_item is not None and int(session_item[keys.TTL_ATTRIBUTE]) > now
        merged = found.get(marker)
        return MergeView(
            cart=cart_from_item(customer_id, found.get(cart), now),
            session=session_from_item(session_item) if session_item is not None and live_session else None,
            merged=[NotMerged.model_validate(entry) for entry in merged["not_merged"]] if merged else None,
        )

    def set_line(
        self,
        customer_id: str,
        *,
        product_id: str,
        name: str,
        unit_price_cents: int,
        quantity: int,
        added_at: str,
        now: int,
        expires_at: int,
    ) -> StoredCart:
        """Put, change or (quantity 0) remove one line of the live cart, sliding its expiry (one UpdateItem).

        No live cart: a line is put in a new cart (one PutItem, conditional on the item read), and a
        removal writes nothing. CartFull (a new product in a cart of MAX_CART_LINES).
        """
        key = to_item(keys.customer_cart_key(customer_id))
        names = {"#exp": keys.TTL_ATTRIBUTE, "#pid": product_id}
        condition = "attribute_exists(PK) AND #exp > :now"
        if quantity == 0:
            expression = "REMOVE cart.#pid, cart_added.#pid SET #exp = :exp, updated_at = :at ADD cart_version :one"
            attr_values = values(now=now, exp=expires_at, one=1, at=added_at)
        else:
            expression = (
                "SET cart.#pid = :line, cart_added.#pid = if_not_exists(cart_added.#pid, :at), #exp = :exp, "
                "updated_at = :at ADD cart_version :one"
            )
            condition += " AND (attribute_exists(cart.#pid) OR size(cart) < :max)"
            line = {"name": name, "unit_price_cents": unit_price_cents, "quantity": quantity}
            attr_values = values(now=now, exp=expires_at, one=1, line=line, max=MAX_CART_LINES, at=added_at)
        for _ in range(WRITE_ATTEMPTS):
            try:
                with conditional_write():
                    response = self.table.client.update_item(
                        TableName=self.table.name,
                        Key=key,
                        UpdateExpression=expression,
                        ConditionExpression=condition,
                        ExpressionAttributeNames=names,
                        ExpressionAttributeValues=attr_values,
                        ReturnValues="ALL_NEW",
                        ReturnValuesOnConditionCheckFailure="ALL_OLD",
                    )
                return cart_from_item(customer_id, from_item(response["Attributes"]), now)
            except ConditionFailed as failed:
                current = cart_from_item(customer_id, failed.item, now)
            if current.expires_at is not None:
                raise errors.CartFull(f"a cart holds at most {MAX_CART_LINES} lines")
            if quantity == 0:
                return current  # nothing to remove from a cart that is not there
            first = StoredLine(product_id, name, unit_price_cents, quantity, added_at)
            try:
                return self._replace(current, [first], updated_at=added_at, now=now, expires_at=expires_at)
            except errors.CartChanged:
                continue  # another write made a cart meanwhile: change that one
        raise errors.ServiceUnavailable("the cart keeps changing, retry")

    def _replace(
        self, seen: StoredCart, lines: list[StoredLine], *, updated_at: str, now: int, expires_at: int
    ) -> StoredCart:
        """A new cart in place of an absent or expired one; CartChanged when the item is no longer as read."""
        condition, attr_values = _written_when(seen.cart_version)
        item = cart_item(
            seen.customer_id, lines, version=seen.cart_version + 1, updated_at=updated_at, expires_at=expires_at
        )
        try:
            with conditional_write():
                self.table.client.put_item(
                    TableName=self.table.name,
                    Item=to_item(item),
                    ConditionExpression=condition,
                    **({"ExpressionAttributeValues": attr_values} if attr_values else {}),
                )
        except ConditionFailed as failed:
            raise errors.CartChanged("the cart changed meanwhile") from failed
        return cart_from_item(seen.customer_id, item, now)

    def merge(
        self,
        seen: StoredCart,
        lines: list[StoredLine],
        *,
        session: SessionClaim,
        not_merged: list[NotMerged],
        updated_at: str,
        expires_at: int,
        marker_expires_at: int,
    ) -> StoredCart:
        """The cart with `lines`, the session deleted and the merge's marker written: one transaction.

        CartChanged when the cart is no longer at `seen`'s version (or the marker exists: merged
        meanwhile); SessionNotFound when the session changed, expired or went since it was read.
        """
        name = self.table.name
        condition, attr_values = _written_when(seen.cart_version)
        item = cart_item(
            seen.customer_id, lines, version=seen.cart_version + 1, updated_at=updated_at, expires_at=expires_at
        )
        put_cart: dict[str, Any] = {"TableName": name, "Item": to_item(item), "ConditionExpression": condition}
        if attr_values:
            put_cart["ExpressionAttributeValues"] = attr_values
        marker = {
            **keys.cart_merge_key(seen.customer_id, session.session_id),
            "entity": "CART_MERGE",
            "customer_id": seen.customer_id,
            "session_id": session.session_id,
            "not_merged": [entry.model_dump(mode="json") for entry in not_merged],
            "merged_at": updated_at,
            keys.TTL_ATTRIBUTE: marker_expires_at,
        }
        transaction = [
            {"Put": put_cart},
            {
                "Delete": {
                    "TableName": name,
                    "Key": to_item(keys.session_key(session.session_id)),
                    "ConditionExpression": "attribute_exists(PK) AND cart_version = :seen AND #exp > :now",
                    "ExpressionAttributeNames": {"#exp": keys.TTL_ATTRIBUTE},
                    "ExpressionAttributeValues": values(seen=session.cart_version, now=session.now),
                }
            },
            {"Put": {"TableName": name, "Item": to_item(marker), "ConditionExpression": "attribute_not_exists(PK)"}},
        ]
        try:
            transact_write(self.table, transaction)
        except TransactionCancelled as cancelled:
            if cancelled.failed_condition(0) or cancelled.failed_condition(2):
                raise errors.CartChanged("the cart changed meanwhile") from cancelled
            if cancelled.failed_condition(1):
                raise errors.SessionNotFound("the session changed, expired or went meanwhile") from cancelled
            raise cancelled.unexplained() from cancelled
        return cart_from_item(seen.customer_id, item, session.now)

    def empty(self, customer_id: str, *, updated_at: str) -> None:
        """No lines, the item kept (its version keeps counting, so no stale read's condition can hold again)."""
        try:
            with conditional_write():
                self.table.client.update_item(
                    TableName=self.table.name,
                    Key=to_item(keys.customer_cart_key(customer_id)),
                    UpdateExpression="SET cart = :empty, cart_added = :empty, updated_at = :at ADD cart_version :one",
                    ConditionExpression="attribute_exists(PK)",
                    ExpressionAttributeValues=values(empty={}, at=updated_at, one=1),
                )
        except ConditionFailed:
            return  # no cart: nothing to empty
