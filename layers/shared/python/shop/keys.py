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

# Customer carts: their own partition prefix, so the sessions function's writes can be held to
# SESSION# and CART# (IAM dynamodb:LeadingKeys) and never reach a customer's profile or orders.
CART_PK_PREFIX = "CART#"
CART_SK = "CART"
CART_MERGE_PREFIX = "MERGED#"

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


ORDER_DISCOUNTS_SK = "DISCOUNTS"  # sorts before ORDER: read with it (pattern 15), never written after the placement


def order_discounts_key(order_id: str) -> Key:
    """The promotions an order was priced with, beside it: written once, so the order's own item (rewritten at every
    status change) does not carry their bytes."""
    return {PK: order_pk(order_id), SK: ORDER_DISCOUNTS_SK}


def order_archived_key(order_id: str) -> Key:
    """The marker an archived order leaves: the S3 object's key and who owns the order (never expires)."""
    return {PK: order_pk(order_id), SK: ORDER_ARCHIVED_SK}


def status_shard(order_id: str, shards: int) -> int:
    digest = hashlib.blake2b(order_id.encode(), digest_size=4).digest()
    return int.from_bytes(digest, "big") % shards


ORDER_STATUS_PREFIX = "ORDER_STATUS#"


def order_status_pk(status: str, shard: int) -> str:
    return f"{ORDER_STATUS_PREFIX}{status}#{shard}"


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


def order_status_position(status: str, partition: int, sort_key: str) -> Key:
    """Where a Query of a status partition resumes after the entry whose ``order_status_sk`` is `sort_key` (its
    ExclusiveStartKey: the index's key and the table's, the order's id being the sort key's tail). The entry need
    not be in that partition: the position is a place in its key order."""
    return {
        PK: order_pk(sort_key.split("#", 1)[1]),
        SK: ORDER_SK,
        GSI1PK: order_status_pk(status, partition),
        GSI1SK: sort_key,
    }


def customer_order_key(customer_id: str, order_id: str) -> Key:
    """Ids are ULIDs, so this collection sorts oldest to newest by itself."""
    return {PK: customer_pk(customer_id), SK: f"{CUSTOMER_ORDER_PREFIX}{order_id}"}


UNPAID_HOLD_SK = "UNPAID"


def unpaid_hold_key(customer_id: str) -> Key:
    """What one customer holds unpaid (PAYMENTS=stripe): the ids of their PENDING_PAYMENT orders and the units those
    hold, taken in each unpaid order's placement transaction within the shop's limits, released by the stream
    processor when the order leaves PENDING_PAYMENT. In the customer's partition, outside every listed range
    (`ORDER#`, `NOTIFICATION#`, `REVIEW#` and `PROFILE` sort apart from it)."""
    return {PK: customer_pk(customer_id), SK: UNPAID_HOLD_SK}


def notification_key(customer_id: str, created_at: str, notification_id: str) -> Key:
    return {PK: customer_pk(customer_id), SK: f"{NOTIFICATION_PREFIX}{created_at}#{notification_id}"}


def session_key(session_id: str) -> Key:
    return {PK: f"SESSION#{session_id}", SK: SESSION_SK}


def customer_cart_key(customer_id: str) -> Key:
    """A customer's cart: one item per customer (the lines as a map), so one partition per customer."""
    return {PK: f"{CART_PK_PREFIX}{customer_id}", SK: CART_SK}


def cart_merge_key(customer_id: str, session_id: str) -> Key:
    """The marker that a session was merged into this customer's cart (what the merge answered)."""
    return {PK: f"{CART_PK_PREFIX}{customer_id}", SK: f"{CART_MERGE_PREFIX}{session_id}"}


def placement_key(customer_id: str, idempotency_key: str) -> Key:
    """The one order a customer's Idempotency-Key placed (hashed: both parts are client-chosen lengths)."""
    digest = hashlib.blake2b(f"{customer_id}\n{idempotency_key}".encode(), digest_size=16).hexdigest()
    return {PK: f"{PLACEMENT_PREFIX}{digest}", SK: PLACEMENT_SK}


def idempotency_key(record_key: str) -> Key:
    """One partition per idempotency record: ``record_key`` is Powertools' ``<name>#<md5 of the key>``.

    Not one partition per ``<name>``: each order writes about 3 WCU to its record, past a key's 1,000 WCU/s at
    about 330 orders/s (docs/decisions.md, 005).
    """
    return {PK: f"{IDEMPOTENCY_PK_PREFIX}{record_key}", SK: IDEMPOTENCY_SK}


# -- the catalogue tree and its listings -------------------------------------------------

CATEGORY_SK = "CATEGORY"
CATEGORY_TREE_PK = "CATEGORY_TREE"
PATH_PREFIX = "PATH#"
TOP_CATEGORIES = "TOP_CATEGORIES"
CATEGORY_MOVE_PK = "CATEGORY_MOVE"
CATEGORY_MOVE_SK = "MOVE"
LISTING_PREFIX = "LISTING#"
# The listing of every active product: a scope no slug can spell (slugs are lower case).
ALL_PRODUCTS = "ALL"
# The listings' sort orders: the values of shop.models.categories.ListingOrder (tests/unit/test_keys.py holds them equal).
BY_NAME = "NAME"
BY_PRICE = "PRICE"
BY_NEWEST = "NEWEST"
PRICE_DIGITS = 9  # MAX_PRICE_CENTS has 9 digits: zero-padded, text order is price order


def category_key(slug: str) -> Key:
    return {PK: category_pk(slug), SK: CATEGORY_SK}


def category_children_gsi(parent: str | None, name: str, slug: str) -> Key:
    """Where a category is listed among its parent's children (or the top level), by name."""
    partition = f"CATEGORY_CHILDREN#{parent}" if parent else TOP_CATEGORIES
    return {GSI1PK: partition, GSI1SK: f"{name_sort_key(name)}#{slug}"}


def category_children_pk(parent: str | None) -> str:
    return category_children_gsi(parent, "", "")[GSI1PK]


def category_tree_key(path: str) -> Key:
    """One item per category in the tree partition: ``begins_with(SK, PATH#/coffee/)`` is a subtree."""
    return {PK: CATEGORY_TREE_PK, SK: f"{PATH_PREFIX}{path}"}


def subtree_prefix(path: str) -> str:
    """The tree sort keys of every category strictly below ``path``."""
    return f"{PATH_PREFIX}{path}/"


def category_move_key() -> Key:
    """The one category move under way: its job item, and the lock that lets no second one start."""
    return {PK: CATEGORY_MOVE_PK, SK: CATEGORY_MOVE_SK}


def listing_pk(scope: str, order: str) -> str:
    return f"{LISTING_PREFIX}{scope}#{order}"


def price_sort_key(price_cents: int) -> str:
    return f"{price_cents:0{PRICE_DIGITS}d}"


def listing_entry_key(product_id: str, scope: str, order: str, sort_value: str) -> Key:
    """A product's entry in one listing: in the product's partition (its adjacency list), indexed under
    ``LISTING#<scope>#<order>`` with the product's sort value; price descending reads the price entries backwards."""
    return {
        PK: product_pk(product_id),
        SK: f"{LISTING_PREFIX}{scope}#{order}",
        GSI1PK: listing_pk(scope, order),
        GSI1SK: f"{sort_value}#{product_id}",
    }


def entity_of(pk: str, sk: str) -> str:
    """The entity type an item's keys name; the stream processor routes on it."""
    prefix = pk.split("#", 1)[0]
    if prefix == "ORDER":
        return "ORDER" if sk == ORDER_SK else "ORDER_" + sk.split("#", 1)[0]
    if prefix == "SESSION":
        return "SESSION"
    if prefix == "PRODUCT" and sk.startswith(LISTING_PREFIX):
        return "PRODUCT_LISTING"
    if prefix == "PRODUCT":  # the product item; reviews and other items of its collection are PRODUCT_<kind>
        return "PRODUCT" if sk == PRODUCT_SK else "PRODUCT_" + sk.split("#", 1)[0]
    if prefix == "CART":
        return "CUSTOMER_CART" if sk == CART_SK else "CART_MERGE"
    return prefix


# StockLow alerts: one partition, newest first by the crossing's time. Alerts are rare
# (once per crossing below a product's threshold), far below one partition's 1,000 writes/s.
ALERTS_PK = "ALERTS"
ALERT_PREFIX = "ALERT#"


def alert_key(created_at: str, alert_id: str) -> Key:
    return {PK: ALERTS_PK, SK: f"{ALERT_PREFIX}{created_at}#{alert_id}"}


def stock_low_state_key(product_id: str) -> Key:
    """Whether a product's total stock (item + shards) is low, as the alerts last saw it: its own partition."""
    return {PK: f"STOCK_LOW#{product_id}", SK: "STATE"}


# Flash-sale stock shards: each shard is its own partition key, so the orders of one hot
# product spread over `shards` keys instead of writing the product item's one key.
STOCK_SHARD_PREFIX = "STOCK#"
STOCK_SHARD_SK = "STOCK"


def stock_shard_key(product_id: str, shard: int) -> Key:
    return {PK: f"{STOCK_SHARD_PREFIX}{product_id}#{shard:02d}", SK: STOCK_SHARD_SK}


# -- sales by date -----------------------------------------------------------------------
# A product's units and revenue of one UTC day, one item per (product, day) in the product's own
# partition; in GSI1, the day's top-seller list, spread over SALES_TOP_SHARDS partitions by product.
SALES_DAY_PREFIX = "DAY#"
SALES_RANK_PREFIX = "TOP#"
ORDER_SALES_PREFIX = "SALES#"
# Sales units in a sort key: 12 digits (a product would need 10^12 units in one day to overflow).
SALES_UNITS_DIGITS = 12


def sales_pk(product_id: str) -> str:
    return f"SALES#{product_id}"


def sales_day_key(product_id: str, day: str) -> Key:
    """`day` is YYYY-MM-DD (UTC): text order is date order, so a date range is a BETWEEN."""
    return {PK: sales_pk(product_id), SK: f"{SALES_DAY_PREFIX}{day}"}


def sales_days_range(first: str, last: str) -> tuple[str, str]:
    """Sort keys bounding the days `first`..`last` and what sorts inside a day (its `#SHARDED` marker)."""
    return f"{SALES_DAY_PREFIX}{first}", f"{SALES_DAY_PREFIX}{last}~"


def sales_sharded_key(product_id: str, day: str) -> Key:
    """Marks a (product, day) counted on counter shards too; in the day's range, so the days' Query sees it."""
    return {PK: sales_pk(product_id), SK: f"{SALES_DAY_PREFIX}{day}#SHARDED"}


def sales_shard_day_key(product_id: str, shard: int, day: str) -> Key:
    """A flash-sale product's counter shard of a day: the shard follows the stock shard the line took from."""
    return {PK: f"{sales_pk(product_id)}#{shard:02d}", SK: f"{SALES_DAY_PREFIX}{day}"}


def sales_rank_key(product_id: str, day: str) -> Key:
    """The product's entry in the day's top list (GSI1): a snapshot of its day counter, outside the DAY# range."""
    return {PK: sales_pk(product_id), SK: f"{SALES_RANK_PREFIX}{day}"}


def sales_top_shard(product_id: str, shards: int) -> int:
    digest = hashlib.blake2b(product_id.encode(), digest_size=4).digest()
    return int.from_bytes(digest, "big") % shards


def sales_top_pk(day: str, shard: int) -> str:
    return f"SALES_TOP#{day}#{shard}"


def sales_top_gsi(day: str, product_id: str, units: int, shards: int) -> Key:
    """Ascending GSI1SK is most units first: the units are inverted (10^12 - 1 - units), zero-padded;
    equal units sort by product id."""
    inverted = 10**SALES_UNITS_DIGITS - 1 - max(units, 0)
    return {
        GSI1PK: sales_top_pk(day, sales_top_shard(product_id, shards)),
        GSI1SK: f"{inverted:0{SALES_UNITS_DIGITS}d}#{product_id}",
    }


def order_sales_marker_key(order_id: str, version: int) -> Key:
    """Marks one order version's sales as counted; sorts after `ORDER`, outside the order's own read."""
    return {PK: order_pk(order_id), SK: f"{ORDER_SALES_PREFIX}{version:06d}"}


def sales_cutover_key(release: str) -> Key:
    """The moment a release of order_events (`release`: the function's version) first counted sales on this table:
    records written before it (and a margin) may have been handled by a release that counted on sales markers."""
    return {PK: "SALES_CUTOVER", SK: f"VERSION#{release}"}


# -- online migrations -------------------------------------------------------------------
# One partition per migration: its done record and one checkpoint per Scan segment of a run.
# The checkout's settings: shipping zones and tax rates in one partition, read whole on a cache miss; its VERSION
# item counts the edits, and copies of it under CHECKOUT_VERSION_SHARDS partitions of their own let every quote and
# placement check its cached copy with one read that no single key carries at a flash sale's rate.
CHECKOUT_PK = "CHECKOUT"
CHECKOUT_VERSION_SK = "VERSION"
SHIPPING_ZONE_PREFIX = "ZONE#"
TAX_RATE_PREFIX = "TAX#"
CHECKOUT_VERSION_SHARD_PREFIX = "CHECKOUT_VERSION#"


def checkout_version_key() -> Key:
    return {PK: CHECKOUT_PK, SK: CHECKOUT_VERSION_SK}


def checkout_version_shard_key(shard: int) -> Key:
    return {PK: f"{CHECKOUT_VERSION_SHARD_PREFIX}{shard}", SK: CHECKOUT_VERSION_SK}


def shipping_zone_key(zone_id: str) -> Key:
    return {PK: CHECKOUT_PK, SK: f"{SHIPPING_ZONE_PREFIX}{zone_id}"}


def tax_rate_key(country: str) -> Key:
    return {PK: CHECKOUT_PK, SK: f"{TAX_RATE_PREFIX}{country}"}


PROMOTION_PREFIX = "PROMOTION#"


def promotion_key(promotion_id: str) -> Key:
    return {PK: CHECKOUT_PK, SK: f"{PROMOTION_PREFIX}{promotion_id}"}


PROMOTION_USES_PREFIX = "PROMO_USES#"
PROMOTION_USES_SK = "USES"


def promotion_uses_key(promotion_id: str, shard: int) -> Key:
    """One of a limited promotion's use counters, each its own partition."""
    return {PK: f"{PROMOTION_USES_PREFIX}{promotion_id}#{shard:02d}", SK: PROMOTION_USES_SK}


PROMOTION_COUNT_PREFIX = "PROMO_COUNT#"
PROMOTION_COUNT_SK = "COUNT"


def promotion_count_key(promotion_id: str, shard: int) -> Key:
    """One of the counters of a promotion without a usage limit: its confirmed orders, counted by the stream
    processor (never on the order's path), each counter its own partition."""
    return {PK: f"{PROMOTION_COUNT_PREFIX}{promotion_id}#{shard:02d}", SK: PROMOTION_COUNT_SK}


PROMOTION_CUSTOMER_PREFIX = "PROMO_CUSTOMER#"


def customer_promotion_key(customer_id: str, promotion_id: str) -> Key:
    """How many times a customer used a promotion with a per-customer limit: a partition of its own, outside the
    customer's (the payment functions that give uses back may write it, and no customer data)."""
    return {PK: f"{PROMOTION_CUSTOMER_PREFIX}{promotion_id}#{customer_id}", SK: PROMOTION_USES_SK}


MIGRATION_PK_PREFIX = "MIGRATION#"
MIGRATION_SK = "MIGRATION"
MIGRATION_SEGMENT_PREFIX = "SEGMENT#"


def migration_key(name: str) -> Key:
    """Written once, when every segment of the migration is done: the migration is applied."""
    return {PK: f"{MIGRATION_PK_PREFIX}{name}", SK: MIGRATION_SK}


def migration_segment_key(name: str, segments: int, segment: int) -> Key:
    """A segment's checkpoint: a run over another segment count has checkpoints of its own."""
    return {PK: f"{MIGRATION_PK_PREFIX}{name}", SK: f"{MIGRATION_SEGMENT_PREFIX}{segments:04d}#{segment:04d}"}


def product_category_gsi_v1(category: str, name: str, product_id: str) -> Key:
    """The GSI1 keys version 1 put on the product item itself (its one category, by name): what
    migration 0001 recognises and removes."""
    return {GSI1PK: category_pk(category), GSI1SK: f"{name_sort_key(name)}#{product_id}"}


# -- payments --------------------------------------------------------------------------
