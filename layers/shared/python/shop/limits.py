"""Every size limit in one place: DynamoDB's, and the API's, chosen so that any input fits DynamoDB's.

DynamoDB counts UTF-8 bytes, the API characters; tests/unit/test_key_limits.py proves every key fits at its worst
case. The budget behind each limit: docs/decisions.md, "Hardening: limits".
"""

from __future__ import annotations

# DynamoDB, in UTF-8 bytes.
PARTITION_KEY_MAX_BYTES = 2048
SORT_KEY_MAX_BYTES = 1024
ITEM_MAX_BYTES = 400 * 1024

# Inputs, in characters.
MAX_ID_LENGTH = 128  # every id in a path or a body (product, order, session)
MAX_SUB_LENGTH = 128  # the token's sub, which is the customer id (enforced by shop.http_api.auth)
MAX_EMAIL_LENGTH = 254
MAX_PRODUCT_NAME_LENGTH = 200
MAX_CATEGORY_LENGTH = 100
# A next_token holds the last key of its page; the worst case is 2,634 characters (a category page; see
# docs/decisions.md). API Gateway allows 10,240 bytes of request line and headers together.
MAX_TOKEN_LENGTH = 4096

# The status index's shards: a status-listing token holds one cursor per shard, deflated: at 64 shards of
# server-made order ids (ULIDs) at most about 2,950 characters (tests/unit/test_key_limits.py).
MAX_STATUS_SHARDS = 64
# Shards one status-listing page queries at most, in parallel; also the store client's connection pool.
MAX_PARALLEL_QUERIES = 32

# The case-folded product name in GSI1's sort key is cut to this many bytes (on a character
# boundary): names equal in their first 256 bytes sort by product id.
NAME_SORT_KEY_BYTES = 256

# Pages of a list.
MAX_LIMIT = 100
DEFAULT_LIMIT = 20

# Quantities.
MAX_QUANTITY = 99  # of one product in an order or a cart, after merging duplicate lines
MAX_ORDER_LINES = 25  # distinct products in one order
MAX_CART_LINES = 25  # distinct products in one session's cart
MAX_PRICE_CENTS = 100_000_000
MAX_STOCK = 1_000_000  # what an admin may set or adjust stock to

# Product events: a product without a low_stock_threshold attribute alerts below this stock.
DEFAULT_LOW_STOCK_THRESHOLD = 5
# Flash-sale stock shards of one product (POST /products/{id}/stock-shards; 1 = not sharded). At 2 WCU per
# transactional decrement a shard key carries about 500 orders/s, so 32 carry 10,000+ (docs/performance.md).
MAX_STOCK_SHARDS = 32
# The catalogue tree.
CATEGORY_SLUG_PATTERN = r"^[a-z0-9][a-z0-9-]{0,39}$"
MAX_SLUG_LENGTH = 40
MAX_CATEGORY_NAME_LENGTH = 100
MAX_CATEGORY_DEPTH = 5  # a top-level category is depth 1
MAX_PRODUCT_CATEGORIES = 5
# Children a category shows (by name) in GET /categories/{slug}; a category holds at most this many.
MAX_CHILDREN = 100
# Products one step of a category move rewrites (one Query page, one BatchGetItem).
MOVE_STEP_PRODUCTS = 100
# Categories one step of a category move re-paths (three items each in one transaction).
MOVE_STEP_CATEGORIES = 25
# Order lifecycle and sales.
RETURN_WINDOW_DAYS = 30  # a delivered order may be returned this many days after its delivery
# Returns an order may have accepted: each is an entry of the order item, which must stay far below DynamoDB's 400 KB
# (25 lines of 99 units returned one at a time would be 2,475 entries); the last may take every unit left.
MAX_RETURNS_PER_ORDER = 10
MAX_REASON_LENGTH = 500  # a return request's reason, a rejection's reason
MAX_CARRIER_LENGTH = 100
MAX_TRACKING_NUMBER_LENGTH = 100
MAX_SALES_DAYS = 366  # the longest range GET /products/{id}/sales answers, both ends included
# GSI1 partitions the daily top-seller list is spread over (by product hash); fixed, since the items of
# past days stay where this count put them (docs/decisions.md, "Sales by date").
SALES_TOP_SHARDS = 64
# Archival (shop.services.archival): a delivered order may still be returned for RETURN_WINDOW_DAYS, so it
# is archived that long after delivery plus ARCHIVE_AFTER_DAYS (at most MAX_ARCHIVE_AFTER_DAYS).
MAX_ARCHIVE_AFTER_DAYS = 3650
# Items one BatchWriteItem deletes at most (DynamoDB's limit).
BATCH_WRITE_MAX_ITEMS = 25
# Items one TransactWriteItems holds at most (DynamoDB's limit): an order's placement is planned to fit it.
MAX_TRANSACTION_ITEMS = 100

# The functions' settings: their defaults and bounds, read by shop.config (the environment overrides them) and
# by infra.settings (what a deployment sets). The capacity behind DEFAULT_STATUS_SHARDS: infra/settings.py.
DEFAULT_STATUS_SHARDS = 48
DEFAULT_SESSION_TTL_SECONDS = 3600
DEFAULT_CART_TTL_SECONDS = 30 * 24 * 3600  # a customer cart lives this long after its last change
DEFAULT_IDEMPOTENCY_TTL_SECONDS = 86400
DEFAULT_ARCHIVE_AFTER_DAYS = 365  # how long a finished order stays in the table before the archive
# A finished order is never archivable sooner than this after the change that finished it, whatever
# ARCHIVE_AFTER_DAYS says (shop.services.archive_timing.archive_at): a stream record younger than this grace less a
# margin can write its effects without the ARCHIVED check (docs/decisions.md, "An archival grace"). 0: every
# record takes the checked path.
DEFAULT_ARCHIVE_GRACE_SECONDS = 86_400
MAX_ARCHIVE_GRACE_SECONDS = 30 * 86_400
# How long an instance keeps a flash-sale product's reads (0: never).
DEFAULT_HOT_PRODUCT_CACHE_SECONDS = 1
MAX_HOT_PRODUCT_CACHE_SECONDS = 60
ARCHIVE_PREFIX = "orders/"  # where the archive's objects are (the repository writes them, infra grants them)

# Payments: which provider takes the money. "none" keeps version 2's flow (the stream confirms every
# order); "stripe" uses the Stripe adapter (shop.payments.stripe_adapter). Read by shop.config.
PAYMENT_PROVIDERS = ("none", "stripe")
DEFAULT_PAYMENTS = "none"
# How long a PENDING_PAYMENT order holds its stock waiting for the authorisation (the windows' sweep ends it).
DEFAULT_PAYMENT_WINDOW_MINUTES = 30
MAX_PAYMENT_WINDOW_MINUTES = 24 * 60  # Stripe keeps an idempotency key 24 hours: the window must end before
# The shop's currency (ISO 4217, lower case as Stripe spells it): every order's total is in it.
DEFAULT_CURRENCY = "usd"
# When the authorised amount is taken: at SHIPPED (Stripe's manual capture, the default) or at CONFIRMED (a shop
# whose orders may wait longer than a card authorisation lasts, about 7 days: it refunds at CANCELLED instead).
CAPTURE_MODES = ("on_ship", "on_confirm")
DEFAULT_CAPTURE = "on_ship"
# A confirmed, uncaptured order this many days old is listed for the admin (GET /orders?payment=expiring):
# Stripe cancels an online card authorisation after about 7 days.
DEFAULT_AUTHORISATION_WARN_DAYS = 6
MAX_AUTHORISATION_WARN_DAYS = 30
# What one customer may hold unpaid at once (PENDING_PAYMENT orders and their units): one account cannot take a
# flash sale's stock for the payment window. 409 UNPAID_ORDER_LIMIT beyond either.
DEFAULT_MAX_UNPAID_ORDERS = 3
DEFAULT_MAX_UNPAID_UNITS = 50
MAX_UNPAID_LIMIT = 10_000
# Network retries the Stripe library makes on a transient failure, each with the call's idempotency key.
STRIPE_NETWORK_RETRIES = 2
# The longest provider event id the shop accepts (Stripe's are about 30 characters).
MAX_PAYMENT_EVENT_ID_LENGTH = 255

# The checkout's settings (shipping zones and tax rates, PUT by an admin; docs/decisions.md, 076).
MAX_SHIPPING_ZONES = 50  # zones of one shop: the settings' partition is read whole on a cache miss
MAX_ZONE_COUNTRIES = 250  # every ISO 3166-1 country fits one zone (a "rest of the world")
MAX_ZONE_OPTIONS = 10
MAX_SHIPPING_NAME_LENGTH = 100  # a zone's or an option's name
MAX_TAX_REGIONS = 100  # subdivisions with a rate of their own, per country
MAX_RATE_BPS = 10_000  # a tax rate in basis points: 100 %
MAX_WEIGHT_GRAMS = 1_000_000
# Copies of the settings' latest edit id a quote reads and a placement's transaction checks (a ConditionCheck, 2 WRU)
# its instance's snapshot against, each in its own partition: at 10,000 checkouts a second one copy takes about
# 625 WRU of checks, under a key's 1,000 (and 312 strongly consistent reads of quotes, under its 3,000).
CHECKOUT_VERSION_SHARDS = 32
# Edits of the settings serialise on its version; an edit that loses to another this many times answers 503.
CHECKOUT_EDIT_ATTEMPTS = 3
# Promotions (decision 077): every promotion is in the checkout's settings, read whole after an edit.
MAX_PROMOTIONS = 500
MAX_PROMO_CODE_LENGTH = 40
PROMO_CODE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,39}$"
MAX_USAGE_LIMIT = 1_000_000
MAX_PER_CUSTOMER_LIMIT = 1_000
# A limited promotion's uses are counted on this many counters at most, each its own partition, each allotted its
# share of the limit: a flash sale's code at 10,000 orders a second puts about 625 transactional WRU a second on each
# of 32 (a key takes 1,000), and the limit is never passed (the allotments sum to it).
MAX_PROMO_USE_SHARDS = 32
