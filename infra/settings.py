"""Every declarative fact about the deployment, in one place.

The constructs read these tables; nothing else in ``infra`` names a function,
a DynamoDB action or a route. The local runtime and the tests read them too.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent

# The Lambda runtime and the dependencies layer must agree on the Python ABI
# (pydantic_core ships a compiled module per CPython version), and
# tests/infra/test_packaging.py proves it by importing every handler with a real
# CPython of this version. Why 3.13 and not 3.14 (aws-cdk-lib 2.275 knows
# Runtime.PYTHON_3_14): the build machines cannot run a 3.14 interpreter. Debian 12's
# package sources carry python3.11 only (`apt-cache policy python3.14`: none), pyenv
# there has 3.13.0 at most, and PyPI hosts no CPython interpreter (pbs-installer and
# `pyenv install` download from GitHub or python.org, which the build machines cannot
# reach). Moving on is this pair plus the interpreter on the machines (docs/infrastructure.md).
LAYER_PYTHON_VERSION = "3.13"
RUNTIME_NAME = "python3.13"

# Lambda's advanced logging controls: JSON lines, and what Lambda itself lets through.
# POWERTOOLS_LOG_LEVEL is the same level: on Lambda Powertools follows the application log
# level (and warns when its own is more verbose); locally it is the only one.
LOG_LEVEL = "INFO"
SYSTEM_LOG_LEVEL = "WARN"  # Lambda's platform lines (START/END/REPORT are INFO): only problems

# Every function is invoked through this alias (API integrations, the stream mapping); in a
# protected stage CodeDeploy shifts it to a new version gradually (docs/deploy.md#safe-deployments).
LIVE_ALIAS = "live"
# The domain-event bus's archive: events can be replayed to a rule for this long.
EVENT_ARCHIVE_RETENTION_DAYS = 90

TABLE_INDEX = "GSI1"
# Shards per status of the orders-by-status index (`-c status_shards=N`, passed to every function as
# STATUS_SHARDS). One partition key takes about 1,000 WCU/s; an order of up to 1 KB costs its PENDING
# shard about 3 WCU (its index entry written in the placement transaction, 2 as docs/performance.md
# models transactions, then removed by the confirmation, 1), so a shard carries ~330 orders/s and
# N shards ~330 x N: 4 -> 1,300, 16 -> 5,300, 32 -> 10,700, 48 -> 16,000, 64 -> 21,300. The default
# carries the documented 10,000 orders/s at 625 WCU/s per shard (headroom for bursts and larger
# orders). The count changes online through a switch (status_shards_next, status_shards_writers, then
# migration 0002: docs/operations.md, "Changing the status index's shard count").
# DEFAULT_STATUS_SHARDS and MAX_STATUS_SHARDS (a listing's next token carries one cursor per shard),
# SESSION_TTL_SECONDS and IDEMPOTENCY_TTL_SECONDS are set below from shop.limits (the functions read the same).
# How long an instance keeps a flash-sale product's reads (shop.services.hot_products; 0 turns it off): a GET
# shows its stock up to this late; at N instances its partition takes N reads per this many seconds.
# HOT_PRODUCT_CACHE_SECONDS: shop.limits.DEFAULT_HOT_PRODUCT_CACHE_SECONDS, below.
# Archival (shop.services.archival): a finished order's TTL is this many days after it finished
# (`-c archive_after_days=N`, passed to every function as ARCHIVE_AFTER_DAYS); then order_events writes it
# to the archive bucket under ARCHIVE_PREFIX, where it stays in S3 Standard (infra.constructs.data.OrderArchive).
# DEFAULT_ARCHIVE_AFTER_DAYS, MAX_ARCHIVE_AFTER_DAYS and ARCHIVE_PREFIX: shop.limits, below.
# Never sooner than the archival grace after the change that finished it (`-c archive_grace_seconds=N`, passed to
# every function as ARCHIVE_GRACE_SECONDS; 0..MAX_ARCHIVE_GRACE_SECONDS, default a day): order_events writes a
# fresh record's effects without the ARCHIVED check (shop.services.archive_timing.fresh_record).
ARCHIVE_NONCURRENT_DAYS = 90  # a protected stage's overwritten or deleted archive object, recoverable this long
POWERTOOLS_NAMESPACE = "Shop"

# `make dev` and the `-c local=true` synth (docs/deploy.md, `sam local invoke`) agree on these:
# DynamoDB Local's port, the table the local runtime creates, and how a container reaches the host.
LOCAL_TABLE_NAME = "shop-local"
LOCAL_DYNAMODB_PORT = 8000
LOCAL_DYNAMODB_ENDPOINT = f"http://host.docker.internal:{LOCAL_DYNAMODB_PORT}"
# Not a secret: it signs the page tokens of a throwaway local table only.
LOCAL_PAGINATION_KEY = "local-only-pagination-key"
# A token outlives one rotation (it reads with AWSPREVIOUS): listings are resumed within minutes, not weeks.
PAGINATION_KEY_ROTATION_DAYS = 30


@dataclass(frozen=True)
class FunctionSpec:
    """One Lambda function: sizing, the DynamoDB actions it may call and extras."""

    name: str
    description: str
    dynamodb_actions: tuple[str, ...]
    uses_index: bool = False
    memory_mb: int = 512
    timeout_s: int = 10
    paginates: bool = False  # reads the pagination key (PAGINATION_SECRET_ARN, secretsmanager:GetSecretValue)
    # when set, the function's writes are limited to items whose partition key matches one of
    # these patterns (IAM dynamodb:LeadingKeys); its reads stay table-wide
    write_leading_keys: tuple[str, ...] = ()
    # S3 operations on the order archive's objects (ARCHIVE_PREFIX*), with ARCHIVE_BUCKET in the environment
    archive_actions: tuple[str, ...] = ()
    # the EMF count of its failures, per version too (shop.version_metrics): a canary rolls back on the new version's
    failure_metric: str = "ServerErrors"
    # calls Stripe when payments are on (`-c payments=stripe`): gets the payments layer, PAYMENTS=stripe, the Stripe
    # secret's ARN and the right to read it; with payments off it gets none of them (docs/payments.md, "Layers")
    calls_stripe: bool = False
    # operations of dynamodb_actions it calls on GSI1 alone: granted on "<table arn>/index/GSI1" only, never on the
    # table (without uses_index the other operations are granted on the table only); reads only, unconditioned
    # like every function's reads
    index_only: tuple[str, ...] = ()

    @property
    def construct_id(self) -> str:
        return "".join(part.title() for part in self.name.split("_"))


# THE single declaration of what each function may do to the table: the DynamoDB
# API operations it calls. They become IAM actions through iam_actions() and are
# granted on the table ARN, and on "<table arn>/index/GSI1" only when uses_index (a FunctionSpec's index_only
# operations: on the index alone).
DYNAMODB_ACTIONS: dict[str, tuple[str, ...]] = {
    # tests/functions/test_least_privilege.py proves each list is exactly what the code calls.
    "customers": ("GetItem", "Query", "PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems"),
    # BatchGetItem, DeleteItem, ConditionCheckItem: categories and listing entries, flash-sale stock shards (read
    # together; deleted when the stock is spread over fewer)
    "products": (
        "GetItem",
        "BatchGetItem",
        "Query",
        "PutItem",
        "UpdateItem",
        "DeleteItem",
        "ConditionCheckItem",
        "TransactWriteItems",
    ),
    # PutItem/UpdateItem/DeleteItem/GetItem also serve the idempotency records; ConditionCheckItem: a placement's
    # check that the checkout's settings it priced with are the latest edit's
    "orders": (
        "GetItem",
        "BatchGetItem",
        "Query",
        "PutItem",
        "UpdateItem",
        "DeleteItem",
        "ConditionCheckItem",
        "TransactWriteItems",
    ),
    # BatchGetItem: cart prices, a customer cart with its profile; TransactWriteItems: merging a session into a cart
    "sessions": ("GetItem", "BatchGetItem", "PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems"),
    # A webhook event reads its order (GetItem); an authorisation confirms it, a failed attempt, a lapse, a refund
    # or a dispute is recorded (one UpdateItem each); a cancelled intent fails a waiting order in one transaction
    # of the order's change and the stock it releases (UpdateItem each). No event marks (PutItem): the order's
    # state guards every effect
    "payments": ("GetItem", "UpdateItem", "TransactWriteItems"),
    # Query, BatchGetItem, DeleteItem, TransactWriteItems: a category move's steps; BatchGetItem +
    # TransactWriteItems also: the daily sales counters and their once-per-order-version marker;
    # Query and BatchWriteItem: archiving an order reads and deletes what is left of it (shop.services.archival);
    # ConditionCheckItem: every effect of an order record checks the order is not archived;
    # TransactGetItems (a GetItem grant): a sharded product's whole stock for StockLow
    "order_events": (
        "GetItem",
        "BatchGetItem",
        "Query",
        "PutItem",
        "UpdateItem",
        "DeleteItem",
        "ConditionCheckItem",
        "TransactWriteItems",
        "BatchWriteItem",
    ),
}

API_FUNCTIONS: tuple[FunctionSpec, ...] = (
    FunctionSpec(
        "customers",
        "Customer profiles and notifications",
        DYNAMODB_ACTIONS["customers"],
        uses_index=True,  # customer by email
        paginates=True,
    ),
    FunctionSpec(
        "products",
        "Catalogue, stock and reviews",
        DYNAMODB_ACTIONS["products"],
        uses_index=True,  # listings, categories by parent
        paginates=True,
    ),
    FunctionSpec(
        "orders",
        "Order placement, reads and status changes",
        DYNAMODB_ACTIONS["orders"],
        uses_index=True,  # sharded orders-by-status listing
        paginates=True,
        archive_actions=("GetObject",),  # an archived order's GET
        calls_stripe=True,  # a checkout creates the order's PaymentIntent
    ),
    FunctionSpec(
        "sessions",
        "Anonymous shopping sessions and customer carts",
        DYNAMODB_ACTIONS["sessions"],
        # reads products and profiles, writes sessions and customer carts only (carts are CART#<customer_id>)
        write_leading_keys=("SESSION#*", "CART#*"),
    ),
    FunctionSpec(
        "payments",
        "Stripe's webhook: payment events applied to orders",
        DYNAMODB_ACTIONS["payments"],
        calls_stripe=True,  # verifies deliveries with the webhook secret (the library's signature check)
        # it writes only orders, and the stock and the promotion uses a failed payment gives back (no webhook marks)
        write_leading_keys=("ORDER#*", "PRODUCT#*", "STOCK#*", "PROMO_USES#*", "PROMO_CUSTOMER#*"),
    ),
)

STREAM_FUNCTION = FunctionSpec(
    "order_events",
    "Table stream processor: confirmations, status history, sales, abandoned carts, product events, archival",
    DYNAMODB_ACTIONS["order_events"],
    uses_index=True,  # a category move walks the moved category's listing
    memory_mb=256,
    timeout_s=30,
    archive_actions=("PutObject",),  # writes the orders TTL removed
    failure_metric="RecordsFailed",
)

# Operations IAM does not know as actions: a transaction is authorized item by
# item with the per-item actions (PutItem, UpdateItem, DeleteItem,
# ConditionCheckItem; GetItem for TransactGetItems), which the lists above hold.
_NOT_IAM_ACTIONS = {"TransactWriteItems", "TransactGetItems"}
_IMPLIED_BY = {
    "TransactWriteItems": {"PutItem", "UpdateItem", "DeleteItem", "ConditionCheckItem"},
    "TransactGetItems": {"GetItem"},
}


# The IAM actions that change an item: the ones dynamodb:LeadingKeys limits for write_leading_keys.
WRITE_IAM_ACTIONS = frozenset(
    {
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        "dynamodb:DeleteItem",
        "dynamodb:BatchWriteItem",
        "dynamodb:ConditionCheckItem",
    }
)


def iam_actions(operations: tuple[str, ...]) -> list[str]:
    """IAM actions for the DynamoDB operations a function calls (sorted, no wildcard)."""
    for operation in operations:
        if operation in _IMPLIED_BY and not _IMPLIED_BY[operation] & set(operations):
            raise ValueError(f"{operation} needs at least one of {sorted(_IMPLIED_BY[operation])}")
    return sorted(f"dynamodb:{op}" for op in operations if op not in _NOT_IAM_ACTIONS)


# The payment steps of the stream (capture at SHIPPED, cancel, refund of each accepted return, expiry at the end of
# the payment window), a second consumer of the table stream, built only with `-c payments=stripe`. Its own
# mapping, filters, failure store and alarm: a Stripe outage never holds back order_events' records.
DYNAMODB_ACTIONS["payment_steps"] = (
    "GetItem",  # the order as it is now (consistent)
    # the windows' sweep: the PENDING_PAYMENT shards of the status index placed before a time (one Query each);
    # on GSI1 only (index_only below): it never queries the table
    "Query",
    "UpdateItem",  # a step's record on the order's payment; an expiry's order update and restocks
    "TransactWriteItems",  # an expiry: the order and the restocks, all or nothing
)
PAYMENT_STEPS_FUNCTION = FunctionSpec(
    "payment_steps",
    "Payment steps from the table stream (capture, cancel, refund, expiry) and the payment windows' sweep every minute",
    DYNAMODB_ACTIONS["payment_steps"],
    memory_mb=256,
    timeout_s=60,  # a batch of Stripe calls, each with the library's retries
    failure_metric="RecordsFailed",
    calls_stripe=True,
    # it writes only orders (the order item), and the stock and the promotion uses an expiry gives back
    write_leading_keys=("ORDER#*", "PRODUCT#*", "STOCK#*", "PROMO_USES#*", "PROMO_CUSTOMER#*"),
    index_only=("Query",),  # the sweep's Query: the index, never the table
)
# The payment windows' sweep (PaymentService.sweep, docs/payments.md "The windows' sweep"): an EventBridge rule
# invokes payment_steps' live alias every PAYMENT_SWEEP_MINUTES with a "Scheduled Event". Each run does what the
# next one would redo, so nothing is kept for later: EventBridge retries a delivery Lambda refused for at most
# PAYMENT_SWEEP_MAX_AGE_S (then drops it, no dead-letter queue: the event carries no data), and Lambda does not
# retry a run that failed (PAYMENT_SWEEP_RUN_RETRIES; the next run retries its orders; its Errors alarm pages).
PAYMENT_SWEEP_MINUTES = 1
PAYMENT_SWEEP_MAX_AGE_S = 60  # EventBridge's and Lambda's minimum: a sweep event older than the period is superseded
PAYMENT_SWEEP_DELIVERY_RETRIES = 2  # EventBridge -> Lambda, within PAYMENT_SWEEP_MAX_AGE_S
PAYMENT_SWEEP_RUN_RETRIES = 0  # Lambda's asynchronous retries of a failed run (its default: 2)
# The records payment_steps needs, as Lambda filters (at most 5 per mapping; docs/payments.md, "The payment
# steps"): an order item with a payment whose status changed to one a step acts on, each pattern naming the status
# it came from (a filter cannot compare OldImage with NewImage, so the steps' own records on the payment, which
# leave the status as it is, never invoke the function); `exists` matches leaves only, so the payment is
# recognised by its currency; and a payment window's removal by TTL.
PAYMENT_STEP_STATUSES = ("SHIPPED", "CANCELLED", "PAYMENT_FAILED", "EXPIRED", "RETURNED", "PARTIALLY_RETURNED")
_PAID = {"payment": {"M": {"currency": {"S": [{"exists": True}]}}}}


def _paid_order_moved(to: list[str], came_from: list[str]) -> dict[str, Any]:
    return {
        "eventName": ["MODIFY"],
        "dynamodb": {
            "Keys": {"SK": {"S": ["ORDER"]}},
            "NewImage": {"status": {"S": to}, **_PAID},
            "OldImage": {"status": {"S": came_from}},
        },
    }


PAYMENT_STEP_FILTERS: tuple[dict[str, Any], ...] = (
    _paid_order_moved(["SHIPPED"], ["CONFIRMED"]),  # capture
    _paid_order_moved(["CANCELLED", "PAYMENT_FAILED", "EXPIRED"], ["PENDING_PAYMENT", "CONFIRMED"]),  # cancel
    # refund: a return accepted (the last units: RETURNED; some: PARTIALLY_RETURNED, as a rejection after one leaves it)
    _paid_order_moved(["RETURNED", "PARTIALLY_RETURNED"], ["RETURN_REQUESTED"]),
)
# `-c capture=on_confirm` (CAPTURE=on_confirm on the functions that take payments): the amount is captured when the
# order is confirmed (the webhook's authorisation, or the expiry step finding the intent authorised), so the
# confirmation reaches payment_steps too; its refund at CANCELLED comes through the cancel pattern above
# (CONFIRMED -> CANCELLED).
CAPTURE_ON_CONFIRM_FILTER: dict[str, Any] = _paid_order_moved(["CONFIRMED"], ["PENDING_PAYMENT"])


def payment_step_filters(capture: str) -> tuple[dict[str, Any], ...]:
    """payment_steps' filters for a capture mode (shop.limits.CAPTURE_MODES): on_ship's three, and on_confirm's
    confirmation besides them."""
    if capture not in limits.CAPTURE_MODES:
        raise ValueError(f"capture must be one of {', '.join(limits.CAPTURE_MODES)}, got {capture!r}")
    return (*PAYMENT_STEP_FILTERS, CAPTURE_ON_CONFIRM_FILTER) if capture == "on_confirm" else PAYMENT_STEP_FILTERS


# Every function the code holds. payment_steps is deployed only with `-c payments=stripe` (EventsStack builds it
# then); monitoring, packaging and the local runtime know it always (the local runtime runs it under
# `dev --payments stripe`).
ALL_FUNCTIONS: tuple[FunctionSpec, ...] = (*API_FUNCTIONS, STREAM_FUNCTION, PAYMENT_STEPS_FUNCTION)


# The routes are declared once, in the shared layer, where each API function's resolver checks its
# own against them: shop.http_api.routes (method, path, function, public). The layer is on the path
# under make and pytest; `npx cdk ...` run by hand needs it added.
LAYER_PYTHON = ROOT / "layers" / "shared" / "python"
if str(LAYER_PYTHON) not in sys.path:
    sys.path.append(str(LAYER_PYTHON))

from shop import limits  # noqa: E402
from shop.http_api.routes import ROUTES, Route  # noqa: E402

# What the functions assume without the variable is what a deployment sets: one source, shop.limits.
DEFAULT_STATUS_SHARDS = limits.DEFAULT_STATUS_SHARDS
MAX_STATUS_SHARDS = limits.MAX_STATUS_SHARDS
SESSION_TTL_SECONDS = limits.DEFAULT_SESSION_TTL_SECONDS
IDEMPOTENCY_TTL_SECONDS = limits.DEFAULT_IDEMPOTENCY_TTL_SECONDS
HOT_PRODUCT_CACHE_SECONDS = limits.DEFAULT_HOT_PRODUCT_CACHE_SECONDS
DEFAULT_ARCHIVE_AFTER_DAYS = limits.DEFAULT_ARCHIVE_AFTER_DAYS
MAX_ARCHIVE_AFTER_DAYS = limits.MAX_ARCHIVE_AFTER_DAYS
DEFAULT_ARCHIVE_GRACE_SECONDS = limits.DEFAULT_ARCHIVE_GRACE_SECONDS
MAX_ARCHIVE_GRACE_SECONDS = limits.MAX_ARCHIVE_GRACE_SECONDS
ARCHIVE_PREFIX = limits.ARCHIVE_PREFIX

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# Anyone may call them and they write: the routes abuse targets first (their own, lower throttle).
PUBLIC_WRITE_ROUTES: tuple[Route, ...] = tuple(r for r in ROUTES if r.public and r.method in WRITE_METHODS)


# The stream records order_events handles, as Lambda event filter patterns. Lambda takes 5 filters per event
# source mapping by default, so the patterns are grouped by event: a record passes when one pattern matches.
STREAM_FILTERS: tuple[dict[str, Any], ...] = (
    # a new order (always PENDING): confirm it; an order changed: status history, notifications, sales;
    # a product created or changed: ProductCreated/Updated/Archived, StockLow (a filter compares each field
    # with constants only, never OldImage with NewImage, so every order's stock move gets through and the
    # rule skips it from raw attributes: docs/performance.md, "Product events"); a category move started or
    # took a step: run its next step
    {
        "eventName": ["INSERT", "MODIFY"],
        "dynamodb": {"NewImage": {"entity": {"S": ["ORDER", "PRODUCT", "CATEGORY_MOVE"]}}},
    },
    # a stock shard's stock moved (a sale, a restock): StockLow follows the product's total stock (spreading
    # inserts and deletes shards without moving the total: not let in)
    {"eventName": ["MODIFY"], "dynamodb": {"NewImage": {"entity": {"S": ["STOCK_SHARD"]}}}},
    # removed by TTL (not by a holder's delete): a session or a customer cart (abandoned cart), an order
    # whose time is up (archive it)
    {
        "eventName": ["REMOVE"],
        "userIdentity": {"type": ["Service"], "principalId": ["dynamodb.amazonaws.com"]},
        "dynamodb": {"OldImage": {"entity": {"S": ["SESSION", "CUSTOMER_CART", "ORDER"]}}},
    },
)


@dataclass(frozen=True)
class StreamSettings:
    batch_size: int = 25
    max_batching_window_s: int = 1
    retry_attempts: int = 5
    # well inside the stream's 24 h retention: a batch given up is still readable, and it is archived whole
    max_record_age_s: int = 6 * 3600
    bisect_batch_on_error: bool = True
    report_batch_item_failures: bool = True
    starting_position: str = "TRIM_HORIZON"


STREAM = StreamSettings()
# How long given-up stream batches stay in the failure bucket for `make replay` (docs/operations.md).
STREAM_FAILURE_RETENTION_DAYS = 90
# Where Lambda writes them: aws/lambda/<mapping UUID>/<shard id>/YYYY/MM/DD/<time>-<uuid> (local_runtime.failures).
STREAM_FAILURE_PREFIX = "aws/lambda/"


# Stages whose resources may be destroyed with their stacks (shell-style patterns). Every other
# stage is protected: RETAIN, deletion protection, pinned account and region, an alarm destination.
# `-c ephemeral_stages=pr-*,qa` adds to this list (docs/deploy.md).
EPHEMERAL_STAGES: tuple[str, ...] = ("dev", "test")
# Where each alarm's description points (an anchor of docs/operations.md is appended);
# `-c runbook_url=https://.../operations.md` makes it a link.
RUNBOOK = "docs/operations.md"
_ACCOUNT = re.compile(r"^\d{12}$")
# A stage is part of every physical name (DeployConfig.name); the longest is the order archive's bucket,
# shop-<stage>-order-archive-<account>-<region> (infra.constructs.data), which S3 limits to 63 characters of
# lower-case letters, digits and hyphens. Checked against the longest region name, so a stage that synthesizes
# deploys anywhere.
STAGE_PATTERN = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
ARCHIVE_BUCKET_SUFFIX = "order-archive"
S3_BUCKET_NAME_MAX = 63
LONGEST_REGION = "us-isof-south-1"  # 15 characters, the longest in botocore's endpoints (all partitions)
MAX_STAGE_LENGTH = S3_BUCKET_NAME_MAX - len(f"shop--{ARCHIVE_BUCKET_SUFFIX}-{'0' * 12}-{LONGEST_REGION}")
_REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d$")
_TOPIC_ARN = re.compile(r"^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}$")
_ACM_ARN = re.compile(r"^arn:aws[a-z-]*:acm:[a-z0-9-]+:\d{12}:certificate/[0-9a-f-]{36}$")
_DOMAIN = re.compile(r"^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$")


def runbook_anchor(heading: str) -> str:
    """The anchor a Markdown renderer (GitHub) gives a heading of docs/operations.md."""
    kept = "".join(c for c in heading.strip().lower() if c.isalnum() or c in " -_")
    return kept.replace(" ", "-")


@dataclass(frozen=True)
class EdgeSettings:
    """`-c edge=true`: CloudFront + WAF in front of the API, which then answers on its custom domain only."""

    origin_domain: str  # the API's custom domain, CloudFront's origin (regional certificate below)
    origin_certificate_arn: str
    domain: str | None = None  # the shop's public API domain on CloudFront (certificate in us-east-1)
    certificate_arn: str | None = None
    rate_limit: int = 1000  # requests per IP per window, then blocked until the rate falls
    rate_window_s: int = 300


@dataclass(frozen=True)
class AuthSettings:
    """The Cognito user pool's options (the default issuer; ignored with -c jwt_issuer)."""

    ses_from_email: str | None = None  # mail through SES from this verified identity, not Cognito's 50/day
    callback_urls: tuple[str, ...] = ()  # the hosted sign-in's code flow (PKCE) returns here; none: no OAuth
    logout_urls: tuple[str, ...] = ()
    domain_prefix: str | None = None  # <prefix>.auth.<region>.amazoncognito.com, needed by callback_urls
    threat_protection: bool = False  # the Plus feature plan, billed per monthly active user


_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[a-z]{2,63}$")
_DOMAIN_PREFIX = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")


def _auth_settings(text: Any, items: Any, region: str | None) -> AuthSettings:
    ses_from = text("ses_from_email")
    if ses_from is not None and not _EMAIL.match(ses_from):
        raise ValueError(f"context ses_from_email must be an email address, got {ses_from!r}")
    if ses_from is not None and region is None:
        raise ValueError("context ses_from_email needs -c region=<region> (where the SES identity is verified)")
    callbacks, logouts, prefix = items("auth_callback_urls"), items("auth_logout_urls"), text("auth_domain_prefix")
    for key, urls in (("auth_callback_urls", callbacks), ("auth_logout_urls", logouts)):
        for url in urls:
            parts = urlsplit(url)
            local = parts.hostname in ("localhost", "127.0.0.1")
            if parts.scheme != "https" and not (parts.scheme == "http" and local):
                raise ValueError(f"context {key} must be https URLs (http for localhost only), got {url!r}")
    if (callbacks or logouts) and prefix is None:
        raise ValueError("context auth_callback_urls needs -c auth_domain_prefix=<prefix> (the hosted sign-in)")
    if logouts and not callbacks:
        raise ValueError("context auth_logout_urls goes with auth_callback_urls")
    if prefix is not None and (not _DOMAIN_PREFIX.match(prefix) or "cognito" in prefix or "aws" in prefix):
        raise ValueError(f"context auth_domain_prefix must be lower-case letters, digits and '-', got {prefix!r}")
    threat = (text("cognito_threat_protection") or "false").lower()
    if threat not in ("true", "false"):
        raise ValueError(f"context cognito_threat_protection must be true or false, got {threat!r}")
    return AuthSettings(ses_from, callbacks, logouts, prefix, threat == "true")


@dataclass(frozen=True)
class DeployConfig:
    """Values read from CDK context (``-c key=value``)."""

    stage: str = "dev"
    arch: str = "arm64"
    jwt_issuer: str | None = None
    jwt_audience: tuple[str, ...] = ()
    cors_origins: tuple[str, ...] = ()
    # reserved concurrency of order_events (-c order_events_concurrency=N); 0: none (docs/infrastructure.md)
    order_events_concurrency: int = 0
    throttle_rate: int = 100
    throttle_burst: int = 200
    # each public write route's own limit, within the stage's (API Gateway counts per route, all clients)
    public_write_rate: int = 20
    public_write_burst: int = 40
    alarm_email: str | None = None
    alarm_topic_arn: str | None = None
    ephemeral_stages: tuple[str, ...] = EPHEMERAL_STAGES
    account: str | None = None
    region: str | None = None
    runbook_url: str = RUNBOOK
    edge: EdgeSettings | None = None
    auth: AuthSettings = AuthSettings()
    # `-c local=true`: a template for `sam local invoke` only (never deployed), see local_environment()
    local: bool = False
    local_dynamodb_endpoint: str = LOCAL_DYNAMODB_ENDPOINT
    # `-c snapstart=true`: each published version of a function invoked through its alias starts
    # from a snapshot of its initialized process (docs/deploy.md#snapstart-opt-in)
    snapstart: bool = False
    status_shards: int = DEFAULT_STATUS_SHARDS
    # A change of the status index's shard count (`-c status_shards_next=N`, `-c status_shards_writers=next`;
    # docs/operations.md, "Changing the status index's shard count"): STATUS_SHARDS_NEXT/_WRITERS on every function.
    status_shards_next: int | None = None
    status_shards_writers: str = "current"
    archive_after_days: int = DEFAULT_ARCHIVE_AFTER_DAYS
    archive_grace_seconds: int = DEFAULT_ARCHIVE_GRACE_SECONDS
    # `-c payments=none|stripe`: none (the default) keeps version 2's flow; stripe takes the money
    # (docs/payments.md, "Deploying with payments"); `-c currency=eur` the shop's currency
    payments: str = "none"
    currency: str = "usd"
    # `-c capture=on_ship|on_confirm` (with payments=stripe): when the authorised amount is captured, at SHIPPED
    # (the default) or at CONFIRMED with a refund at CANCELLED; CAPTURE on the functions that take payments and
    # payment_steps' filters (payment_step_filters)
    capture: str = "on_ship"
    # `-c prices_include_tax=true`: the catalogue's prices include tax (PRICES_INCLUDE_TAX on every function)
    prices_include_tax: bool = False

    @property
    def protected(self) -> bool:
        """Every stage not listed as ephemeral keeps its data and is pinned to one account and region."""
        return not any(fnmatchcase(self.stage, pattern) for pattern in self.ephemeral_stages)

    def name(self, suffix: str) -> str:
        """A physical name: every name the stacks set carries the stage (two stages share an account)."""
        return f"shop-{self.stage}-{suffix}"

    @classmethod
    def from_context(cls, get: Any) -> DeployConfig:
        """Build from a ``node.try_get_context``-like callable, validating the values."""

        def text(key: str) -> str | None:
            value = get(key)
            return None if value in (None, "") else str(value)

        def items(key: str) -> tuple[str, ...]:
            value = get(key)
            if value in (None, ""):
                return ()
            if isinstance(value, list | tuple):
                return tuple(str(v) for v in value)
            return tuple(v.strip() for v in str(value).split(",") if v.strip())

        arch = text("arch") or "arm64"
        if arch not in ("arm64", "x86_64"):
            raise ValueError(f"context arch must be arm64 or x86_64, got {arch!r}")
        stage = validate_stage(text("stage") or "dev")
        issuer, audience = text("jwt_issuer"), items("jwt_audience")
        if bool(issuer) != bool(audience):
            raise ValueError("context jwt_issuer and jwt_audience go together")
        concurrency = text("order_events_concurrency") or "0"
        if not (concurrency.isascii() and concurrency.isdigit()):
            raise ValueError(
                f"context order_events_concurrency must be 0 (no reservation) or more, got {concurrency!r}"
            )
        shards = text("status_shards") or str(DEFAULT_STATUS_SHARDS)
        if not (shards.isascii() and shards.isdigit()) or not 1 <= int(shards) <= MAX_STATUS_SHARDS:
            raise ValueError(f"context status_shards must be 1..{MAX_STATUS_SHARDS}, got {shards!r}")
        next_shards, writers = _status_shard_switch(
            int(shards), text("status_shards_next"), text("status_shards_writers")
        )
        archive_days = text("archive_after_days") or str(DEFAULT_ARCHIVE_AFTER_DAYS)
        if not (archive_days.isascii() and archive_days.isdigit()) or int(archive_days) > MAX_ARCHIVE_AFTER_DAYS:
            raise ValueError(f"context archive_after_days must be 0..{MAX_ARCHIVE_AFTER_DAYS}, got {archive_days!r}")
        grace = text("archive_grace_seconds") or str(DEFAULT_ARCHIVE_GRACE_SECONDS)
        if not (grace.isascii() and grace.isdigit()) or int(grace) > MAX_ARCHIVE_GRACE_SECONDS:
            raise ValueError(f"context archive_grace_seconds must be 0..{MAX_ARCHIVE_GRACE_SECONDS}, got {grace!r}")
        local = (text("local") or "false").lower()
        if local not in ("true", "false"):
            raise ValueError(f"context local must be true or false, got {local!r}")
        endpoint = text("local_dynamodb_endpoint") or LOCAL_DYNAMODB_ENDPOINT
        snapstart = (text("snapstart") or "false").lower()
        if snapstart not in ("true", "false"):
            raise ValueError(f"context snapstart must be true or false, got {snapstart!r}")
        if urlsplit(endpoint).scheme not in ("http", "https") or not urlsplit(endpoint).hostname:
            raise ValueError(f"context local_dynamodb_endpoint must be an http(s) URL, got {endpoint!r}")
        account, region = text("account"), text("region")
        if account is not None and not _ACCOUNT.match(account):
            raise ValueError(f"context account must be a 12-digit AWS account id, got {account!r}")
        if region is not None and not _REGION.match(region):
            raise ValueError(f"context region must be an AWS region such as eu-west-1, got {region!r}")
        topic_arn = text("alarm_topic_arn")
        if topic_arn is not None and not _TOPIC_ARN.match(topic_arn):
            raise ValueError(f"context alarm_topic_arn must be an SNS topic ARN, got {topic_arn!r}")
        payments = text("payments") or limits.DEFAULT_PAYMENTS
        if payments not in limits.PAYMENT_PROVIDERS:
            raise ValueError(f"context payments must be one of {', '.join(limits.PAYMENT_PROVIDERS)}, got {payments!r}")
        currency = text("currency") or limits.DEFAULT_CURRENCY
        if not re.fullmatch(r"[a-z]{3}", currency):
            raise ValueError(f"context currency must be an ISO 4217 code in lower case, got {currency!r}")
        capture = text("capture") or limits.DEFAULT_CAPTURE
        if capture not in limits.CAPTURE_MODES:
            raise ValueError(
                f"context capture must be one of {', '.join(limits.CAPTURE_MODES)} (when the authorised amount is "
                f"captured: at SHIPPED, or at CONFIRMED with a refund at CANCELLED), got {capture!r}"
            )
        include_tax = text("prices_include_tax") or "false"
        if include_tax not in ("true", "false"):
            raise ValueError(f"context prices_include_tax must be true or false, got {include_tax!r}")
        if capture != limits.DEFAULT_CAPTURE and payments == "none":
            raise ValueError(
                f"context capture={capture} needs -c payments=stripe: with payments off nothing is captured"
            )
        config = cls(
            stage=stage,
            arch=arch,
            jwt_issuer=issuer,
            jwt_audience=audience,
            cors_origins=items("cors_origins"),
            order_events_concurrency=int(concurrency),
            throttle_rate=int(text("throttle_rate") or 100),
            throttle_burst=int(text("throttle_burst") or 200),
            public_write_rate=int(text("public_write_rate") or 20),
            public_write_burst=int(text("public_write_burst") or 40),
            alarm_email=text("alarm_email"),
            alarm_topic_arn=topic_arn,
            ephemeral_stages=(*EPHEMERAL_STAGES, *items("ephemeral_stages")),
            account=account,
            region=region,
            runbook_url=text("runbook_url") or RUNBOOK,
            edge=_edge_settings(text),
            auth=_auth_settings(text, items, region),
            local=local == "true",
            local_dynamodb_endpoint=endpoint,
            snapstart=snapstart == "true",
            status_shards=int(shards),
            status_shards_next=next_shards,
            status_shards_writers=writers,
            archive_after_days=int(archive_days),
            archive_grace_seconds=int(grace),
            payments=payments,
            currency=currency,
            capture=capture,
            prices_include_tax=include_tax == "true",
        )
        if config.protected:
            config.require_protected_settings()
        if config.edge is not None:
            config.require_certificate_in_api_region(config.edge.origin_certificate_arn)
        return config

    def require_certificate_in_api_region(self, certificate_arn: str) -> None:
        """The regional custom domain's certificate is in the API's region: the pinned one, else the region the
        CDK CLI deploys an unpinned stage to (CDK_DEFAULT_REGION, which it sets whenever it resolves one)."""
        api_region = self.region or os.environ.get("CDK_DEFAULT_REGION")
        if api_region is None:  # no region known before deploy (synth outside the CLI without one)
            return
        certificate_region = certificate_arn.split(":")[3]
        if certificate_region != api_region:
            source = "" if self.region else " (the CLI's region, CDK_DEFAULT_REGION; pin one with -c region)"
            raise ValueError(
                f"context edge_origin_certificate_arn is in {certificate_region}, the API in {api_region}{source}: "
                "a regional custom domain's certificate must be in the API's region"
            )

    def require_protected_settings(self) -> None:
        """A protected stage deploys to one known account and region and pages someone."""
        hint = f"or add the stage to ephemeral_stages if it is throwaway (protected unless listed: {self.ephemeral_stages})"
        if self.account is None or self.region is None:
            raise ValueError(
                f"stage {self.stage!r} is protected: pin where it deploys with "
                f"-c account=<12-digit id> -c region=<region> (cdk.json context works too), {hint}"
            )
        if self.alarm_email is None and self.alarm_topic_arn is None:
            raise ValueError(
                f"stage {self.stage!r} is protected: its alarms need a destination, "
                f"-c alarm_email=<address> or -c alarm_topic_arn=<SNS topic ARN>, {hint}"
            )


def validate_stage(stage: str) -> str:
    """A stage fits in every physical name the stacks set (the longest: the archive bucket's, S3's rules)."""
    if not STAGE_PATTERN.match(stage) or len(stage) > MAX_STAGE_LENGTH:
        raise ValueError(
            f"context stage must be 1 to {MAX_STAGE_LENGTH} lower-case letters, digits and single hyphens, "
            f"starting with a letter, got {stage!r}: it names every resource, the longest being the S3 bucket "
            f"shop-<stage>-{ARCHIVE_BUCKET_SUFFIX}-<account>-<region> (63 characters at most, in any region)"
        )
    return stage


def _edge_settings(text: Any) -> EdgeSettings | None:
    edge = (text("edge") or "false").lower()
    if edge not in ("true", "false"):
        raise ValueError(f"context edge must be true or false, got {edge!r}")
    if edge == "false":
        return None
    origin, origin_certificate = text("edge_origin_domain"), text("edge_origin_certificate_arn")
    domain, certificate = text("edge_domain"), text("edge_certificate_arn")
    if origin is None or origin_certificate is None:
        raise ValueError(
            "context edge=true disables the execute-api endpoint: give the API a custom domain for "
            "CloudFront to reach, -c edge_origin_domain=<name> -c edge_origin_certificate_arn=<ACM ARN, API region>"
        )
    if (domain is None) != (certificate is None):
        raise ValueError("context edge_domain and edge_certificate_arn (ACM, us-east-1) go together")
    for key, value in (("edge_origin_domain", origin), ("edge_domain", domain)):
        if value is not None and not _DOMAIN.match(value):
            raise ValueError(f"context {key} must be a lower-case DNS name, got {value!r}")
    for key, value in (("edge_origin_certificate_arn", origin_certificate), ("edge_certificate_arn", certificate)):
        if value is not None and not _ACM_ARN.match(value):
            raise ValueError(f"context {key} must be an ACM certificate ARN, got {value!r}")
    if certificate is not None and ":us-east-1:" not in certificate:
        raise ValueError("context edge_certificate_arn must be in us-east-1 (CloudFront reads certificates there)")
    rate_limit = int(text("waf_rate_limit") or 1000)
    if not 10 <= rate_limit <= 2_000_000_000:
        raise ValueError(f"context waf_rate_limit must be 10 or more (AWS WAF's minimum), got {rate_limit}")
    return EdgeSettings(origin, origin_certificate, domain, certificate, rate_limit)


def _status_shard_switch(current: int, next_text: str | None, writers: str | None) -> tuple[int | None, str]:
    """The switch's context, refused as the functions would refuse it (shop.config): a next count of 1..64
    that differs from the current one, one dividing the other; writers on `current` or `next` (which needs one)."""
    writers = writers or "current"
    if writers not in ("current", "next"):
        raise ValueError(f"context status_shards_writers must be current or next, got {writers!r}")
    if next_text is None:
        if writers == "next":
            raise ValueError("context status_shards_writers=next needs status_shards_next")
        return None, writers
    if not (next_text.isascii() and next_text.isdigit()) or not 1 <= int(next_text) <= MAX_STATUS_SHARDS:
        raise ValueError(f"context status_shards_next must be 1..{MAX_STATUS_SHARDS}, got {next_text!r}")
    next_count = int(next_text)
    if next_count == current or (next_count % current and current % next_count):
        raise ValueError(
            f"context status_shards_next ({next_count}) must differ from status_shards ({current}) "
            "and one must divide the other"
        )
    return next_count, writers
