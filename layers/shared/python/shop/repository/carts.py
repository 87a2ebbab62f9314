"""Carts on the table, one abstraction keyed by the owner: an anonymous session's under SESSION#<id>, a
customer's under CART#<customer_id> (keys.session_key, keys.customer_cart_key). Both are one item holding the
lines as maps (`cart`, `cart_added`), a `cart_version` that counts changes, and the expiry as the TTL.

`CartItems` is every cart operation once: a line put, changed or removed (one UpdateItem conditional on a
live cart), the cart read, and the checkout's emptying (a transaction item conditional on the version read,
written by the order placement). The owners differ only where the product does: a session is created
empty and deleted, and has no live cart once expired (SessionNotFound); a customer's cart is read with the
profile, starts anew on its first line (an expired one is replaced, not revived), takes merged sessions
(cart, session deletion, marker: one transaction) and records `updated_at`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from shop import errors, keys
from shop.clock import iso_from_epoch
from shop.limits import MAX_CART_LINES
from shop.models.carts import CartClaim, CartOwner, CartOwnerKind, MergeView, NotMerged, StoredCart
from shop.models.products import Product
from shop.models.sessions import StoredLine
from shop.repository.products import product_from_item
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

# Conditional writes one line change tries when the cart is replaced under it (expired customer carts only).
WRITE_ATTEMPTS = 3
# Reads of a merge's items while a concurrent merge's transaction shows half of itself (read_for_merge).
MERGE_READS = 5
# The owners whose cart item records when it last changed (`updated_at`); a session's records its `created_at`.
RECORDS_UPDATES = frozenset({CartOwnerKind.CUSTOMER})


def cart_key(owner: CartOwner) -> keys.Key:
    """The item of the owner's cart (the keys themselves are built in shop.keys)."""
    if owner.kind is CartOwnerKind.SESSION:
        return keys.session_key(owner.id)
    return keys.customer_cart_key(owner.id)


def stored_lines(item: dict[str, Any]) -> list[StoredLine]:
    """The lines of an item holding a cart (`cart` and `cart_added` maps), in the order first added."""
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


def cart_from_item(owner_id: str, item: dict[str, Any] | None, now: int) -> StoredCart:
    """The cart an item (plain, or None) holds at `now`: no lines once expired, whatever TTL has done."""
    if item is None:
        return StoredCart(owner_id, [], None, 0)
    version = int(item.get("cart_version", 0))
    expires_at = int(item[keys.TTL_ATTRIBUTE])
    if expires_at <= now:
        return StoredCart(owner_id, [], None, version)
    return StoredCart(owner_id, stored_lines(item), iso_from_epoch(expires_at), version)


def _line(line: StoredLine) -> dict[str, Any]:
    return {"name": line.name, "unit_price_cents": line.unit_price_cents, "quantity": line.quantity}


def _written_when(seen_version: int) -> tuple[str, dict[str, Any]]:
    """The condition of replacing the cart item read at `seen_version` (0: there was none)."""
    if seen_version == 0:
        return "attribute_not_exists(PK)", {}
    return "cart_version = :seen", values(seen=seen_version)


def checkout_update(table: Table, claim: CartClaim, *, at: str) -> dict[str, Any]:
    """The transaction item that empties the claimed cart in the order placement: the lines go, the item
    stays (its version keeps counting), only if the cart is still at the version read and live."""
    stamp, stamped = (", updated_at = :at", {"at": at}) if claim.owner.kind in RECORDS_UPDATES else ("", {})
    return {
        "Update": {
            "TableName": table.name,
            "Key": to_item(cart_key(claim.owner)),
            "UpdateExpression": f"SET cart = :empty, cart_added = :empty{stamp} ADD cart_version :one",
            "ConditionExpression": "attribute_exists(PK) AND cart_version = :seen AND #exp > :now",
            "ExpressionAttributeNames": {"#exp": keys.TTL_ATTRIBUTE},
            "ExpressionAttributeValues": values(empty={}, one=1, seen=claim.cart_version, now=claim.now, **stamped),
        }
    }


def checkout_failed(claim: CartClaim) -> errors.DomainError:
    """What the placement answers when the claimed cart's condition failed (the owners' contracts differ)."""
    if claim.owner.kind is CartOwnerKind.SESSION:
        return errors.SessionNotFound("the session expired or its cart changed during checkout")
    return errors.CartChanged("your cart changed or expired during checkout, retry")


class CartItems(ABC):
    """The cart operations of one kind of owner, each cart keyed by its owner's id."""

    kind: ClassVar[CartOwnerKind]
    entity: ClassVar[str]  # the item's `entity`
    owner_attribute: ClassVar[str]  # the item's attribute naming the owner

    def __init__(self, table: Table) -> None:
        self.table = table

    def key(self, owner_id: str) -> keys.Key:
        return cart_key(CartOwner(self.kind, owner_id))

    def cart_item(
        self, owner_id: str, lines: list[StoredLine], *, version: int, expires_at: int, **fields: Any
    ) -> dict[str, Any]:
        """The whole item of a cart holding `lines`, with the owner's own `fields`."""
        return {
            **self.key(owner_id),
            "entity": self.entity,
            self.owner_attribute: owner_id,
            "cart": {line.product_id: _line(line) for line in lines},
            "cart_added": {line.product_id: line.added_at for line in lines},
            "cart_version": version,
            **fields,
            keys.TTL_ATTRIBUTE: expires_at,
        }

    def read(self, owner_id: str, *, now: int) -> StoredCart:
        """One consistent GetItem: the live cart, or an empty one (`expires_at` None) when absent or expired."""
        with translated_errors():
            response = self.table.client.get_item(
                TableName=self.table.name, Key=to_item(self.key(owner_id)), ConsistentRead=True
            )
        item = response.get("Item")
        return cart_from_item(owner_id, from_item(item) if item else None, now)

    def set_line(
        self,
        owner_id: str,
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

        A line keeps its place when changed. CartFull (a new product in a cart of MAX_CART_LINES); no live
        cart: as the owner has it (`_without_live_cart`).
        """
        names = {"#exp": keys.TTL_ATTRIBUTE, "#pid": product_id}
        condition = "attribute_exists(PK) AND #exp > :now"
        stamp = ", updated_at = :at" if self.kind in RECORDS_UPDATES else ""
        if quantity == 0:
            expression = f"REMOVE cart.#pid, cart_added.#pid SET #exp = :exp{stamp} ADD cart_version :one"
            attr_values = values(now=now, exp=expires_at, one=1, **({"at": added_at} if stamp else {}))
        else:
            expression = (
                "SET cart.#pid = :line, cart_added.#pid = if_not_exists(cart_added.#pid, :at), "
                f"#exp = :exp{stamp} ADD cart_version :one"
            )
            condition += " AND (attribute_exists(cart.#pid) OR size(cart) < :max)"
            line = {"name": name, "unit_price_cents": unit_price_cents, "quantity": quantity}
            attr_values = values(now=now, exp=expires_at, one=1, line=line, max=MAX_CART_LINES, at=added_at)
        for _ in range(WRITE_ATTEMPTS):
            try:
                with conditional_write():
                    response = self.table.client.update_item(
                        TableName=self.table.name,
                        Key=to_item(self.key(owner_id)),
                        UpdateExpression=expression,
                        ConditionExpression=condition,
                        ExpressionAttributeNames=names,
                        ExpressionAttributeValues=attr_values,
                        ReturnValues="ALL_NEW",
                        ReturnValuesOnConditionCheckFailure="ALL_OLD",
                    )
                return cart_from_item(owner_id, from_item(response["Attributes"]), now)
            except ConditionFailed as failed:
                current = cart_from_item(owner_id, failed.item, now)
            if current.expires_at is not None:
                raise errors.CartFull(f"a cart holds at most {MAX_CART_LINES} lines")
            first = StoredLine(product_id, name, unit_price_cents, quantity, added_at) if quantity else None
            try:
                return self._without_live_cart(current, first, now=now, expires_at=expires_at)
            except errors.CartChanged:
                continue  # another write made a cart meanwhile: change that one
        raise errors.ServiceUnavailable("the cart keeps changing, retry")

    @abstractmethod
    def _without_live_cart(
        self, current: StoredCart, first: StoredLine | None, *, now: int, expires_at: int
    ) -> StoredCart:
        """A line change found no live cart (`current`: absent or expired; `first`: the line put, None for
        a removal). CartChanged sends the change round again."""


class CustomerCartRepository(CartItems):
    """Customer carts (one per customer, lasting past sign-out) and the markers of the sessions merged into them."""

    kind = CartOwnerKind.CUSTOMER
    entity = "CUSTOMER_CART"
    owner_attribute = "customer_id"

    def get(self, customer_id: str, *, now: int, require_profile: bool = True) -> StoredCart:
        """With the profile: one BatchGetItem of profile and cart (CustomerNotFound); without: one GetItem."""
        if not require_profile:
            return self.read(customer_id, now=now)
        profile_key, cart_key = keys.customer_key(customer_id), self.key(customer_id)
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
        """Profile, cart, session and merge marker in one BatchGetItem (again only while a concurrent merge shows
        half of itself); CustomerNotFound."""
        wanted = [
            keys.customer_key(customer_id),
            self.key(customer_id),
            keys.session_key(session_id),
            keys.cart_merge_key(customer_id, session_id),
        ]
        profile, cart, session, marker = [(key[keys.PK], key[keys.SK]) for key in wanted]
        for _ in range(MERGE_READS):
            found = batch_get(self.table, wanted)
            # BatchGetItem reads each item on its own, not isolated from a transaction: it can return a concurrent
            # merge's marker beside the cart as it was before that merge. The marker names the cart version the
            # merge wrote; a cart behind it is read again (markers written before it carry no version).
            written = int(found[marker].get("cart_version", 0)) if marker in found else 0
            if written <= (int(found[cart]["cart_version"]) if cart in found else 0):
                break
        else:
            raise errors.ServiceUnavailable("the cart is being merged, retry")
        if profile not in found:
            raise errors.CustomerNotFound("customer not found")
        session_item = found.get(session)
        live_session = session_item is not None and int(session_item[keys.TTL_ATTRIBUTE]) > now
        merged = found.get(marker)
        return MergeView(
            cart=cart_from_item(customer_id, found.get(cart), now),
            session=cart_from_item(session_id, session_item, now) if live_session else None,
            merged=[NotMerged.model_validate(entry) for entry in merged["not_merged"]] if merged else None,
        )

    def _without_live_cart(
        self, current: StoredCart, first: StoredLine | None, *, now: int, expires_at: int
    ) -> StoredCart:
        """A line put in no live cart starts a new one (one PutItem, conditional on the item read); a removal
        writes nothing. CartChanged when the item is no longer as read."""
        if first is None:
            return current  # nothing to remove from a cart that is not there
        condition, attr_values = _written_when(current.cart_version)
        item = self.cart_item(
            current.owner_id,
            [first],
            version=current.cart_version + 1,
            expires_at=expires_at,
            updated_at=first.added_at,
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
        return cart_from_item(current.owner_id, item, now)

    def merge(
        self,
        seen: StoredCart,
        lines: list[StoredLine],
        *,
        session: CartClaim,
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
        item = self.cart_item(
            seen.owner_id, lines, version=seen.cart_version + 1, expires_at=expires_at, updated_at=updated_at
        )
        put_cart: dict[str, Any] = {"TableName": name, "Item": to_item(item), "ConditionExpression": condition}
        if attr_values:
            put_cart["ExpressionAttributeValues"] = attr_values
        marker = {
            **keys.cart_merge_key(seen.owner_id, session.owner.id),
            "entity": "CART_MERGE",
            "customer_id": seen.owner_id,
            "session_id": session.owner.id,
            "not_merged": [entry.model_dump(mode="json") for entry in not_merged],
            "merged_at": updated_at,
            "cart_version": seen.cart_version + 1,  # the cart this merge wrote (read_for_merge)
            keys.TTL_ATTRIBUTE: marker_expires_at,
        }
        transaction = [
            {"Put": put_cart},
            {
                "Delete": {
                    "TableName": name,
                    "Key": to_item(cart_key(session.owner)),
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
        return cart_from_item(seen.owner_id, item, session.now)

    def empty(self, customer_id: str, *, updated_at: str) -> None:
        """No lines, the item kept (its version keeps counting, so no stale read's condition can hold again)."""
        try:
            with conditional_write():
                self.table.client.update_item(
                    TableName=self.table.name,
                    Key=to_item(self.key(customer_id)),
                    UpdateExpression="SET cart = :empty, cart_added = :empty, updated_at = :at ADD cart_version :one",
                    ConditionExpression="attribute_exists(PK)",
                    ExpressionAttributeValues=values(empty={}, at=updated_at, one=1),
                )
        except ConditionFailed:
            return  # no cart: nothing to empty
