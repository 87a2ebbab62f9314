"""When a finished order may be archived, and which stream records are fresh enough to skip the ARCHIVED check.

- `archive_at` is the only way an order's TTL (`expires_at`) is computed (the API's status changes, the payment
  steps): a finished order's is never sooner than ARCHIVE_GRACE_SECONDS after the change that finished it.
- DynamoDB's TTL never deletes an item before its `expires_at`, and archival (shop.services.archival) starts from
  the TTL's REMOVE. Every record of an order whose effects the stream processor writes changes its status, so it
  was written at or before the change that finished it: no order is archived before any such record is `grace`
  old.
- So a record younger than `grace - FRESH_RECORD_MARGIN_SECONDS` when its processing starts (`fresh_record`)
  writes its effects without the ARCHIVED check: its order cannot be archived before they are written. Any other
  record (older, of unknown age, or any record when the grace is within the margin) keeps the check.

Kept apart from shop.services.archival so that a stream batch of order records does not load archival's rules.
"""

from __future__ import annotations

from datetime import datetime

from shop.limits import RETURN_WINDOW_DAYS
from shop.models import OrderStatus

DAY_SECONDS = 86_400
# Finished for good the moment they are reached; DELIVERED only after its return window.
FINAL_STATUSES = frozenset({"CANCELLED", "RETURNED", "PAYMENT_FAILED", "EXPIRED"})


# How much younger than the grace a record must be to skip the ARCHIVED check. It covers everything that can
# pass between the record's time (ApproximateCreationDateTime, DynamoDB's clock at the write) and the last
# effect it writes, and every clock disagreement in between:
# - a record's processing: order_events' timeout is 30 s (infra.settings.STREAM_FUNCTION) and no store call
#   outlives it (the store's deadline derives from it, shop.aws_config), so its writes end within a minute of
#   the age check; the check is made per record, when its processing starts;
# - the writer's `changed_at` is read from its clock before its write commits (an API request within API
#   Gateway's 30 s, a payment step within its 60 s timeout): the TTL can be that much earlier than the record;
# - ApproximateCreationDateTime is rounded down (to the second; older streams to the minute), and Lambda's and
#   DynamoDB's clocks may disagree by seconds.
# Together under 3 minutes; an hour leaves a wide margin and costs nothing (a record is fresh for 23 hours).
FRESH_RECORD_MARGIN_SECONDS = 3600


def archive_at(status: OrderStatus, changed_at: int, archive_after_days: int, grace_seconds: int) -> int | None:
    """The TTL (epoch seconds) an order gets when it moves to `status` at `changed_at`; None: no TTL. A finished
    order's is never sooner than `grace_seconds` (ARCHIVE_GRACE_SECONDS) after the change."""
    if status.value in FINAL_STATUSES:
        days = archive_after_days
    elif status in (OrderStatus.DELIVERED, OrderStatus.PARTIALLY_RETURNED):  # returns may still come
        days = RETURN_WINDOW_DAYS + archive_after_days
    else:
        return None
    return changed_at + max(days * DAY_SECONDS, grace_seconds)


def fresh_record(record_at: datetime | None, now: datetime, grace_seconds: int) -> bool:
    """Whether a record written at `record_at` (None: unknown) and processed from `now` is young enough that
    its order cannot be archived before its effects are written (they may skip the ARCHIVED check). A record
    exactly `grace - margin` old, of unknown age, or any record when the grace is within the margin, is not;
    nor is one stamped further in the future than clock skew explains (a hand-made or damaged record)."""
    if record_at is None or grace_seconds <= FRESH_RECORD_MARGIN_SECONDS:
        return False
    age = (now - record_at).total_seconds()
    return -FRESH_RECORD_MARGIN_SECONDS < age < grace_seconds - FRESH_RECORD_MARGIN_SECONDS
