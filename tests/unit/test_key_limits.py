"""No valid input builds a key, a next token or an item over DynamoDB's (or the API's) limits.

Every key builder of shop.keys that takes client input is fed that input at its maximum allowed
length, made of the worst characters: 4-byte code points, and characters whose case fold or lower
case grows (``ΐ`` folds to 6 bytes, ``ß`` to ``ss``, ``ﬃ`` to ``ffi``, ``İ`` lowers to 3 bytes).
The maximum lengths are read from the request models, so raising one there fails here first.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from shop import clock, keys, limits
from shop.http_api import category_schemas, customer_schemas, order_schemas, product_schemas
from shop.models import Order, OrderLine, OrderStatus, Product, StatusEntry
from shop.models.categories import category_path
from shop.repository import pagination
from shop.repository.listings import entry_items
from shop.repository.orders import order_item
from shop.repository.products import product_item

# Each is the worst case for one way of measuring; together they cover every builder.
WORST_CHARACTERS = ["\U0010ffff", "ΐ", "ß", "ﬃ", "İ", '"', "\x00"]
NOW = clock.iso_now()
ULID_LENGTH = 26
SECRET = b"s" * 32


def max_length(model: type[BaseModel], field: str) -> int:
    """The field's maxLength as the model's JSON schema (and so the OpenAPI document) states it; a one-of
    body's (``OneOfBody``) as each of its alternatives with the field states it, all alike."""
    documented = [m for m in getattr(model, "ALTERNATIVES", ()) if field in m.model_fields] or [model]
    lengths = set()
    for part_of in documented:
        schema = part_of.model_json_schema()["properties"][field]
        lengths |= {part["maxLength"] for part in [schema, *schema.get("anyOf", [])] if "maxLength" in part}
    assert len(lengths) == 1, f"{model.__name__}.{field} has no single maxLength"
    return int(lengths.pop())


def longest(character: str, length: int) -> str:
    return character * length


def utf8(text: str) -> int:
    return len(text.encode())


def assert_key_fits(key: dict[str, str]) -> None:
    for name, value in key.items():
        limit = limits.SORT_KEY_MAX_BYTES if name in (keys.SK, keys.GSI1SK) else limits.PARTITION_KEY_MAX_BYTES
        assert utf8(value) <= limit, f"{name} is {utf8(value)} bytes"


def test_the_models_allow_what_the_limits_say():
    assert max_length(product_schemas.ProductIn, "name") == limits.MAX_PRODUCT_NAME_LENGTH
    assert max_length(category_schemas.CategoryIn, "slug") == limits.MAX_SLUG_LENGTH
    assert max_length(category_schemas.CategoryIn, "name") == limits.MAX_CATEGORY_NAME_LENGTH
    assert max_length(customer_schemas.CustomerIn, "email") == limits.MAX_EMAIL_LENGTH
    assert max_length(order_schemas.OrderLineIn, "product_id") == limits.MAX_ID_LENGTH
    assert max_length(order_schemas.OrderIn, "session_id") == limits.MAX_ID_LENGTH


@pytest.mark.parametrize("char", WORST_CHARACTERS, ids=ascii)
def test_every_key_built_from_client_input_fits(char):
    sub = longest(char, limits.MAX_SUB_LENGTH)
    some_id = longest(char, limits.MAX_ID_LENGTH)
    email = longest(char, max_length(customer_schemas.CustomerIn, "email"))
    name = longest(char, max_length(product_schemas.ProductIn, "name"))
    # Slugs are ASCII (their pattern); category names are any text.
    slug = longest("a", max_length(category_schemas.CategoryIn, "slug"))
    category_name = longest(char, max_length(category_schemas.CategoryIn, "name"))
    deepest = category_path([slug] * limits.MAX_CATEGORY_DEPTH)
    built = [
        keys.customer_key(sub),
        keys.customer_email_gsi(email),
        keys.email_marker_key(email),
        keys.product_key(some_id),
        keys.listing_entry_key(some_id, slug, keys.BY_NAME, keys.name_sort_key(name)),
        keys.listing_entry_key(some_id, slug, keys.BY_PRICE, keys.price_sort_key(limits.MAX_PRICE_CENTS)),
        keys.listing_entry_key(some_id, keys.ALL_PRODUCTS, keys.BY_NEWEST, NOW),
        keys.category_key(slug),
        keys.category_children_gsi(slug, category_name, slug),
        keys.category_tree_key(deepest),
        keys.product_review_key(some_id, 5, NOW, sub),
        keys.reviewer_marker_key(some_id, sub),
        keys.customer_review_key(sub, NOW, some_id),
        keys.order_key(some_id),
        keys.order_history_key(some_id, 999_999),
        keys.order_status_gsi(OrderStatus.CANCELLED, some_id, NOW, 64),
        keys.customer_order_key(sub, some_id),
        keys.unpaid_hold_key(sub),
        keys.notification_key(sub, NOW, f"{some_id}-999999"),
        keys.session_key(some_id),
    ]
    for key in built:
        assert_key_fits(key)


def test_a_name_whose_fold_outgrows_a_sort_key_keeps_the_order_by_name():
    folds_to_six_bytes = "ΐ" * limits.MAX_PRODUCT_NAME_LENGTH
    assert utf8(folds_to_six_bytes.casefold()) > limits.SORT_KEY_MAX_BYTES
    key = keys.name_sort_key(folds_to_six_bytes)
    assert utf8(key) <= limits.NAME_SORT_KEY_BYTES
    assert folds_to_six_bytes.casefold().startswith(key)
    # cut on a character boundary, whatever the widths before the cut
    assert keys.name_sort_key("a" + "\U0010ffff" * 100) == "a" + "\U0010ffff" * 63
    names = ["Zebra", "apple", "ÄPFEL", "Straße", "strasse", "ﬃx", "ffiy"]
    assert sorted(names, key=keys.name_sort_key) == sorted(names, key=str.casefold)


@pytest.mark.parametrize("char", WORST_CHARACTERS, ids=ascii)
def test_every_next_token_fits_the_limit_the_api_accepts(char):
    sub = longest(char, limits.MAX_SUB_LENGTH)
    some_id = longest(char, limits.MAX_ID_LENGTH)
    slug = longest("a", limits.MAX_SLUG_LENGTH)
    name = longest(char, limits.MAX_PRODUCT_NAME_LENGTH)
    category_name = longest(char, limits.MAX_CATEGORY_NAME_LENGTH)
    ulid = "0" * ULID_LENGTH

    def last_key(*parts: dict[str, str]) -> dict[str, Any]:
        return {name: {"S": value} for part in parts for name, value in part.items()}

    pages = {
        # scope: the LastEvaluatedKey DynamoDB returns for that list's query
        f"listing:{slug}:NAME:desc": last_key(
            keys.listing_entry_key(ulid, slug, keys.BY_NAME, keys.name_sort_key(name))
        ),
        f"categories:{slug}": last_key(keys.category_key(slug), keys.category_children_gsi(slug, category_name, slug)),
        f"customer-orders:{sub}": last_key(keys.customer_order_key(sub, ulid)),
        f"notifications:{sub}": last_key(keys.notification_key(sub, NOW, f"{ulid}-999999")),
        f"customer-reviews:{sub}": last_key(keys.customer_review_key(sub, NOW, ulid)),
        f"product-reviews:{some_id}": last_key(keys.product_review_key(some_id, 5, NOW, sub)),
    }
    for scope, position in pages.items():
        token = pagination.encode(scope, position, SECRET)
        assert len(token) <= limits.MAX_TOKEN_LENGTH, f"{scope[:20]}: {len(token)}"
        assert pagination.decode(token, scope, SECRET) == position


@pytest.mark.parametrize("seed", range(5))
def test_a_status_listing_token_fits_at_the_most_shards(seed):
    """One cursor per shard, each a created_at and an order id (server-made: a ULID), deflated. The
    worst case: every cursor's time and id drawn at random (nothing shared for deflate to find)."""
    import random
    from datetime import UTC, datetime, timedelta

    from ulid import ULID

    from shop.repository.shard_walk import ShardWalk

    rnd = random.Random(seed)

    def moment() -> datetime:
        return datetime(2000, 1, 1, tzinfo=UTC) + timedelta(microseconds=rnd.randrange(3 * 10**15))

    shards = limits.MAX_STATUS_SHARDS
    cursors = [keys.order_status_sk(clock.iso(moment()), str(ULID.from_datetime(moment()))) for _ in range(shards)]
    walk = ShardWalk(list(cursors), gap_us=(1 << 62) - 1, top_us=(1 << 62) - 1)
    scope = f"orders-by-status:{OrderStatus.CANCELLED}:{shards}"
    token = pagination.encode(scope, walk.position(), SECRET, compress=True)
    assert len(token) <= limits.MAX_TOKEN_LENGTH - 1000, len(token)
    assert ShardWalk.from_position(pagination.decode(token, scope, SECRET), shards).cursors == cursors


def item_bytes(item: dict[str, Any]) -> int:
    """More than DynamoDB counts (names and values, no JSON punctuation): an upper bound."""
    return utf8(json.dumps(item, ensure_ascii=False))


@pytest.mark.parametrize("char", ["\U0010ffff", "\x00"], ids=ascii)
def test_the_largest_items_fit(char):
    name = longest(char, limits.MAX_PRODUCT_NAME_LENGTH)
    product = Product(
        product_id="0" * ULID_LENGTH,
        name=name,
        categories=[longest("a", limits.MAX_SLUG_LENGTH - 1) + str(n) for n in range(limits.MAX_PRODUCT_CATEGORIES)],
        price_cents=limits.MAX_PRICE_CENTS,
        description=longest(char, max_length(product_schemas.ProductIn, "description")),
        stock=limits.MAX_STOCK,
        created_at=NOW,
        updated_at=NOW,
    )
    scopes = [
        f"{n:02d}" + "a" * (limits.MAX_SLUG_LENGTH - 2)
        for n in range(limits.MAX_PRODUCT_CATEGORIES * limits.MAX_CATEGORY_DEPTH)
    ]
    assert item_bytes(product_item(product, scopes)) <= limits.ITEM_MAX_BYTES
    # A listing entry carries no description: a few KB at most (this bound over-counts escapes).
    assert max(item_bytes(entry) for entry in entry_items(product, scopes)) <= 4 * 1024
    line = OrderLine(
        product_id=longest(char, limits.MAX_ID_LENGTH),
        name=name,
        unit_price_cents=limits.MAX_PRICE_CENTS,
        quantity=limits.MAX_QUANTITY,
        line_total_cents=limits.MAX_PRICE_CENTS * limits.MAX_QUANTITY,
    )
    address = order_schemas.AddressIn.model_construct(
        **{
            field: longest(char, max_length(order_schemas.AddressIn, field))
            for field in ("name", "line1", "line2", "city", "postal_code")
        },
        country="US",
    )
    order = Order(
        order_id="0" * ULID_LENGTH,
        customer_id=longest(char, limits.MAX_SUB_LENGTH),
        status=OrderStatus.PENDING,
        version=1,
        lines=[line] * limits.MAX_ORDER_LINES,
        total_cents=line.line_total_cents * limits.MAX_ORDER_LINES,
        shipping_address=address,
        created_at=NOW,
        updated_at=NOW,
        history=[StatusEntry(status=OrderStatus.PENDING, at=NOW)],
    )
    assert item_bytes(order_item(order, 64)) <= limits.ITEM_MAX_BYTES
