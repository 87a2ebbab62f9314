"""Properties of the key module: the orders its sort keys promise hold for any input."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from shop import clock, keys

moments = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2099, 12, 31), timezones=st.just(UTC))


@given(moments, moments)
def test_iso_timestamps_sort_as_time(a, b):
    assert (clock.iso(a) < clock.iso(b)) == (a < b)


@given(st.lists(st.tuples(st.integers(1, 5), moments, st.text(min_size=1, max_size=8)), min_size=2, max_size=20))
def test_review_keys_descend_by_rating_then_recency(reviews):
    keyed = [(keys.review_rating_sk(r, clock.iso(at), f"c{who}"), r, at) for r, at, who in reviews]
    ordered = sorted(keyed, reverse=True)
    for (_, r1, at1), (_, r2, at2) in itertools.pairwise(ordered):
        assert r1 > r2 or (r1 == r2 and at1 >= at2)


@given(st.integers(1, 5), moments)
def test_only_reviews_share_the_by_rating_prefix(rating, at):
    assert keys.review_rating_sk(rating, clock.iso(at), "someone").startswith(keys.REVIEW_BY_RATING_PREFIX)
    assert not keys.reviewer_marker_key("p", "someone")[keys.SK].startswith(keys.REVIEW_BY_RATING_PREFIX)
    assert not keys.product_key("p")[keys.SK].startswith(keys.REVIEW_BY_RATING_PREFIX)


def test_idempotency_records_each_have_their_own_partition():
    one, other = keys.idempotency_key("orders#aaa"), keys.idempotency_key("orders#bbb")
    assert one == {keys.PK: "IDEMPOTENCY#orders#aaa", keys.SK: keys.IDEMPOTENCY_SK}
    assert one[keys.PK] != other[keys.PK]
    assert keys.entity_of(one[keys.PK], one[keys.SK]) == "IDEMPOTENCY"


@given(st.text(min_size=1, max_size=40), st.integers(1, 64))
def test_status_shard_is_stable_and_in_range(order_id, shards):
    shard = keys.status_shard(order_id, shards)
    assert 0 <= shard < shards
    assert shard == keys.status_shard(order_id, shards)


def test_status_shards_spread_orders():
    from shop.ids import new_id

    counts = [0] * 4
    for _ in range(2000):
        counts[keys.status_shard(new_id(), 4)] += 1
    assert min(counts) > 400


def test_ulids_sort_by_creation():
    from shop.ids import new_id

    earlier = new_id()
    later = new_id()
    assert earlier[:10] <= later[:10]


@given(st.emails())
def test_email_keys_ignore_case(email):
    assert keys.email_marker_key(email) == keys.email_marker_key(email.upper())
    assert keys.customer_email_gsi(email) == keys.customer_email_gsi(email.swapcase())


def test_history_keys_sort_by_version():
    assert keys.order_history_key("o", 9)[keys.SK] < keys.order_history_key("o", 10)[keys.SK]


def test_clock_round_trip():
    moment = datetime(2026, 11, 26, 1, 2, 3, tzinfo=UTC)
    assert clock.iso_from_epoch(clock.epoch(moment)) == clock.iso(moment)
    assert clock.iso(moment + timedelta(microseconds=1)) > clock.iso(moment)


def test_the_listing_orders_are_the_models_listing_orders():
    from shop.models.categories import ListingOrder

    assert [order.value for order in ListingOrder] == [keys.BY_NAME, keys.BY_PRICE, keys.BY_NEWEST]
