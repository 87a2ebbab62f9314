"""Every primary and GSI1 key of the single table, and nothing else.

The table layout is documented in docs/access-patterns.md; each builder
returns plain strings so the repository can serialise them as it likes.
"""

from __future__ import annotations

import hashlib

from shop.limits import NAME_SORT_KEY_BYTES

PK = "PK"
SK = "SK"
GSI1 = "GSI1"
GSI1PK = "GSI1PK"
GSI1SK = "GSI1SK"
TTL_ATTRIBUTE = "expires_at"

PROFILE_SK = "PROFILE"
PRODUCT_SK = "PRODUCT"
ORDER_SK = "ORDER"
SESSION_SK = "SESSION"
EMAIL_SK = "EMAIL"
ORDER_ARCHIVED_SK = "ARCHIVED"  # where an archived order's object is, in the order's own partition

# Sort-key prefixes inside a customer's or a product's item collection.
CUSTOMER_ORDER_PREFIX = "ORDER#"
PLACEMENT_PREFIX = "PLACEMENT#"
PLACEMENT_SK = "PLACEMENT"
NOTIFICATION_PREFIX = "NOTIFICATION#"
CUSTOMER_REVIEW_PREFIX = "REVIEW#"
HISTORY_PREFIX = "HISTORY#"
REVIEW_BY_RATING_PREFIX = "BY_RATING#"
REVIEWER_PREFIX = "REVIEWER#"

IDEMPOTENCY_PK_PREFIX = "IDEMPOTENCY#"
IDEMPOTENCY_SK = "IDEMPOTENCY"

Key = dict[str, str]


def customer_pk(customer_id: str) -> str:
    return f"CUSTOMER#{customer_id}"


def customer_key(customer_id: str) -> Key:
    return {PK: customer_pk(customer_id), SK: PROFILE_SK}


def customer_email_gsi(email: str) -> Key:
    return {GSI1PK: f"EMAIL#{normalise_email(email)}", GSI1SK: "CUSTOMER"}


def email_marker_key(email: str) -> Key:
    return {PK: f"EMAIL#{normalise_email(email)}", SK: EMAIL_SK}


def normalise_email(email: str) -> str:
    return email.strip().lower()


def product_pk(product_id: str) -> str:
    return f"PRODUCT#{product_id}"


def product_key(product_id: str) -> Key:
    return {PK: product_pk(product_id), SK: PRODUCT_SK}


def category_pk(category: str) -> str:
    return f"CATEGORY#{category}"


def product_category_gsi(category: str, name: str, product_id: str) -> Key:
    return {GSI1PK: category_pk(category), GSI1SK: f"{name_sort_key(name)}#{product_id}"}


def name_sort_key(name: str) -> str:
    """The case-folded name, cut to NAME_SORT_KEY_BYTES of UTF-8 on a character boundary.

    Case folding can grow a name sixfold (``ΐ`` is 2 bytes, its fold 6), so the whole fold of a
    valid name may not fit in a sort key; a prefix keeps the order by name.
    """
    folded = name.casefold().encode()
    return folded[:NAME_SORT_KEY_BYTES].decode(errors="ignore")


def review_rating_sk(rating: int, created_at: str, customer_id: str) -> str:
    """Descending order of this key is: highest rating first, then newest."""
    return f"{REVIEW_BY_RATING_PREFIX}{rating}#{created_at}#{customer_id}"


def product_review_key(product_id: str, rating: int, created_at: str, customer_id: str) -> Key:
    return {PK: product_pk(product_id), SK: review_rating_sk(rating, created_at, customer_id)}


def reviewer_marker_key(product_id: str, customer_id: str) -> Key:
    return {PK: product_pk(product_id), SK: f"{REVIEWER_PREFIX}{customer_id}"}


def customer_review_key(customer_id: str, created_at: str, product_id: str) -> Key:
    return {PK: customer_pk(customer_id), SK: f"{CUSTOMER_REVIEW_PREFIX}{created_at}#{product_id}"}


def order_pk(order_id: str) -> str:
    return f"ORDER#{order_id}"


def order_key(order_id: str) -> Key:
    return {PK: order_pk(order_id), SK: ORDER_SK}


def order_history_key(order_id: str, version: int) -> Key:
    return {PK: order_pk(order_id), SK: f"{HISTORY_PREFIX}{version:06d}"}


def order_archived_key(order_id: str) -> Key:
    """The marker an archived order leaves: the S3 object's key and who owns the order (never expires)."""
    return {PK: order_pk(order_id), SK: ORDER_ARCHIVED_SK}


def status_shard(order_id: str, shards: int) -> int:
    digest = hashlib.blake2b(order_id.encode(), digest_size=4).digest()
    return int.from_bytes(digest, "big") % shards


def order_status_pk(status: str, shard: int) -> str:
    return f"ORDER_STATUS#{status}#{shard}"


def order_status_gsi(status: str, order_id: str, created_at: str, shards: int) -> Key:
    return {
        GSI1PK: order_status_pk(status, status_shard(order_id, shards)),
        GSI1SK: order_status_sk(created_at, order_id),
    }


def order_status_sk(created_at: str, order_id: str) -> str:
    return f"{created_at}#{order_id}"


def created_at_of_status_sk(sort_key: str) -> str:
    """The order's creation time an ``order_status_sk`` starts with (timestamps hold no ``#``)."""
    return sort_key.split("#", 1)[0]


def customer_order_key(customer_id: str, order_id: str) -> Key:
    """Ids are ULIDs, so this collection sorts oldest to newest by itself."""
    return {PK: customer_pk(customer_id), SK: f"{CUSTOMER_ORDER_PREFIX}{order_id}"}


def notification_key(customer_id: str, created_at: str, notification_id: str) -> Key:
    return {PK: customer_pk(customer_id), SK: f"{NOTIFICATION_PREFIX}{created_at}#{notification_id}"}


def session_key(session_id: str) -> Key:
    return {PK: f"SESSION#{session_id}", SK: SESSION_SK}


def placement_key(customer_id: str, idempotency_key: str) -> Key:
    """The one order a customer's Idempotency-Key placed (hashed: both parts are client-chosen lengths)."""
    digest = hashlib.blake2b(f"{customer_id}\n{idempotency_key}".encode(), digest_size=16).hexdigest()
    return {PK: f"{PLACEMENT_PREFIX}{digest}", SK: PLACEMENT_SK}


def idempotency_key(record_key: str) -> Key:
    """One partition per idempotency record: ``record_key`` is Powertools' ``<name>#<md5 of the key>``.

    Records used to share ``IDEMPOTENCY#<name>``, one partition taking about 3 WCU per order.
    """
    return {PK: f"{IDEMPOTENCY_PK_PREFIX}{record_key}", SK: IDEMPOTENCY_SK}


def entity_of(pk: str, sk: str) -> str:
    """The entity type an item's keys name; the stream processor routes on it."""
    prefix = pk.split("#", 1)[0]
    if prefix == "ORDER":
        return "ORDER" if sk == ORDER_SK else "ORDER_" + sk.split("#", 1)[0]
    if prefix == "SESSION":
        return "SESSION"
    return prefix
