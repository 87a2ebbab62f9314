"""The webhook's Stripe-Signature check (shop.payments.stripe_webhooks, the standard library) agrees with Stripe's
own library (`stripe.WebhookSignature.verify_header`, and `stripe.Webhook.construct_event` on the accepted ones)
on every delivery: a fixed matrix of the cases Stripe documents, then random headers."""

from __future__ import annotations

import hashlib
import hmac
import json
import time

import pytest
import stripe
from hypothesis import given, settings
from hypothesis import strategies as st

from shop import errors
from shop.payments.stripe_webhooks import DEFAULT_TOLERANCE, StripeWebhooks, verify_signature

SECRET = "whsec_parity"
BODY = json.dumps(
    {
        "id": "evt_parity",
        "object": "event",
        "type": "payment_intent.amount_capturable_updated",
        "created": 1_800_000_000,
        "data": {"object": {"id": "pi_parity", "object": "payment_intent", "metadata": {"order_id": "ord-9"}}},
    }
).encode()


def _sig(body: bytes, at: int, secret: str = SECRET) -> str:
    return hmac.new(secret.encode(), f"{at}.".encode() + body, hashlib.sha256).hexdigest()


def _library_accepts(body: bytes, header: str | None, tolerance: int | None = DEFAULT_TOLERANCE) -> bool:
    try:
        stripe.WebhookSignature.verify_header(body, header, SECRET, tolerance)
    except (stripe.SignatureVerificationError, UnicodeDecodeError):
        return False
    return True


def _shop_accepts(body: bytes, header: str | None, tolerance: int | None = DEFAULT_TOLERANCE) -> bool:
    try:
        verify_signature(body, header, SECRET, tolerance)
    except errors.InvalidWebhookSignature:
        return False
    return True


def _cases(now: int) -> list:
    """Built at each test's run, not at collection: a header signed then must still be fresh when checked."""
    good = _sig(BODY, now)
    stale = now - DEFAULT_TOLERANCE - 60
    future = now + 3_600
    return [
        pytest.param(BODY, f"t={now},v1={good}", True, id="valid"),
        pytest.param(BODY, f"t={now},v1={_sig(BODY, now, 'whsec_other')}", False, id="wrong-secret"),
        pytest.param(BODY.replace(b"ord-9", b"ord-8"), f"t={now},v1={good}", False, id="tampered-body"),
        pytest.param(BODY, f"t={now + 1},v1={good}", False, id="other-timestamp"),
        pytest.param(BODY, f"t={stale},v1={_sig(BODY, stale)}", False, id="stale"),
        pytest.param(BODY, f"t={future},v1={_sig(BODY, future)}", True, id="future"),
        pytest.param(BODY, f"t={now},v1={'0' * 64},v1={good}", True, id="several-v1-last-good"),
        pytest.param(BODY, f"t={now},v1={good},v1=deadbeef", True, id="several-v1-first-good"),
        pytest.param(BODY, f"t={now},v0={'1' * 64},v1={good},v2=x", True, id="v1-among-other-schemes"),
        pytest.param(BODY, f"t={now},v1={'0' * 64},v1={'f' * 64}", False, id="several-v1-none-good"),
        pytest.param(BODY, None, False, id="missing-header"),
        pytest.param(BODY, "", False, id="empty-header"),
        pytest.param(BODY, "garbage", False, id="malformed-no-items"),
        pytest.param(BODY, f"v1={good}", False, id="malformed-no-timestamp"),
        pytest.param(BODY, f"t=soon,v1={good}", False, id="malformed-timestamp"),
        pytest.param(BODY, f"t,v1={good}", False, id="malformed-t-without-value"),
        pytest.param(BODY, f"t={now},v1", False, id="malformed-v1-without-value"),
        pytest.param(BODY, f"t={now},v1={good},t", False, id="malformed-second-t"),
        pytest.param(BODY, f"t={now}, v1={good}", False, id="space-before-scheme"),
        pytest.param(BODY, f"t={now},v1={good.upper()}", False, id="upper-case-hex"),
        pytest.param(BODY, f"t={now},v0={good}", False, id="v0-only"),
        pytest.param(BODY, f"t={now},v2={good},v0={good}", False, id="non-v1-schemes-only"),
        pytest.param(BODY, f"t={now}", False, id="timestamp-only"),
        pytest.param(b"\xff\xfe not utf-8", f"t={now},v1={_sig(b'x', now)}", False, id="body-not-utf8"),
        pytest.param(b"", f"t={now},v1={_sig(b'', now)}", True, id="empty-body-signed"),
    ]


@pytest.mark.parametrize("case", [case.id for case in _cases(0)])
def test_the_shop_and_stripes_library_agree(case):
    body, header, accepted = next(c.values for c in _cases(int(time.time())) if c.id == case)
    assert _library_accepts(body, header) is accepted
    assert _shop_accepts(body, header) is accepted


def test_no_tolerance_accepts_any_age_in_both():
    at = int(time.time()) - 10 * DEFAULT_TOLERANCE
    header = f"t={at},v1={_sig(BODY, at)}"
    assert _library_accepts(BODY, header, tolerance=None)
    assert _shop_accepts(BODY, header, tolerance=None)
    assert not _library_accepts(BODY, header)
    assert not _shop_accepts(BODY, header)


def test_an_accepted_delivery_reads_as_the_librarys_event_does():
    now = int(time.time())
    header = f"t={now},v1={_sig(BODY, now)}"

    library = stripe.Webhook.construct_event(BODY, header, SECRET)
    shop = StripeWebhooks(SECRET).verify(BODY, header)

    assert (shop.event_id, shop.event_type, shop.created) == (library.id, library.type, library.created)
    assert (shop.intent_id, shop.order_id) == (library.data.object.id, library.data.object.metadata["order_id"])


def test_a_non_ascii_signature_is_refused_where_the_library_raises_type_error():
    """The one difference: the library's hmac.compare_digest on a non-ASCII str raises TypeError (a 500 for a
    forged header); the shop compares bytes and refuses it (400)."""
    now = int(time.time())
    header = f"t={now},v1=é{_sig(BODY, now)[1:]}"
    with pytest.raises(TypeError):
        stripe.WebhookSignature.verify_header(BODY, header, SECRET, DEFAULT_TOLERANCE)
    assert not _shop_accepts(BODY, header)


def test_a_blank_endpoint_secret_is_a_misconfiguration():
    for secret in ("", "  \t"):
        with pytest.raises(errors.PaymentMisconfigured):
            StripeWebhooks(secret)


_ITEM_KEYS = st.sampled_from(["t", "v1", "v0", "v2", "x", "", " t", "v1 "])


@st.composite
def _headers(draw: st.DrawFn) -> str:
    now = int(time.time())
    good = _sig(BODY, now)
    values = st.one_of(
        st.just(str(now)),
        st.just(good),
        st.just(str(now - DEFAULT_TOLERANCE - 1)),
        st.integers(min_value=-(10**12), max_value=10**12).map(str),
        st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=12),
    )
    items = draw(
        st.lists(
            st.one_of(st.tuples(_ITEM_KEYS, values).map("=".join), _ITEM_KEYS),
            max_size=6,
        )
    )
    return ",".join(items)


@settings(max_examples=300, deadline=None)
@given(header=_headers())
def test_random_headers_get_the_same_verdict(header):
    assert _shop_accepts(BODY, header) is _library_accepts(BODY, header)
