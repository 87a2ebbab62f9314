"""events/payments/: Stripe deliveries as API Gateway events. Committed signatures are from 2026-01-01, so each is
refused as stale until it is signed again for now with the endpoint's secret; then it answers what its name says."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from shop import config, wiring
from tests.functions.apigw import API, REPO, invoke
from tests.functions.generate_payment_events import SAMPLE_SECRET, STRIPE_EVENTS, delivery, sign
from tests.support.calls import counting
from tests.support.fake_payments import FakePayments

FILES = sorted((REPO / "events" / "payments").glob("*.json"))
STATUS = re.compile(r"_(\d{3})\.json$")


@pytest.fixture
def sample_webhook(moto_api, monkeypatch) -> Iterator[Any]:
    """The payments function on moto with the real rule (the samples name an order the table does not hold)."""
    monkeypatch.setenv("PAYMENTS", "stripe")
    monkeypatch.setenv("STRIPE_SECRET_KEY", "sk_test_samples")
    monkeypatch.setenv("STRIPE_WEBHOOK_SECRET", SAMPLE_SECRET)
    config.payment_settings.cache_clear()
    API.handler("payments")
    provider = FakePayments()
    service = wiring.payment_service(moto_api.table, provider=provider)
    monkeypatch.setattr(sys.modules["_in_process_payments_handler"], "payment_rules", service)
    yield moto_api.table, provider
    config.payment_settings.cache_clear()


def test_the_committed_events_are_the_generators():
    assert {path.stem for path in FILES} == set(STRIPE_EVENTS)
    for path in FILES:
        assert json.loads(path.read_text()) == delivery(path.stem), path.name


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_a_sample_is_stale_as_committed_and_answers_its_status_once_signed(sample_webhook, path):
    event = json.loads(path.read_text())
    assert event["version"] == "2.0"
    assert event["routeKey"] == "POST /webhooks/stripe"
    stale = invoke("payments", event)
    assert stale.status == 400
    assert stale.code == "WEBHOOK_SIGNATURE_INVALID"
    expected = int(STATUS.search(path.name).group(1))  # type: ignore[union-attr]
    table, provider = sample_webhook
    with counting(table.client) as calls:
        fresh = invoke("payments", sign(event, SAMPLE_SECRET) if not path.stem.startswith("forged") else event)
    assert fresh.status == expected, fresh.body
    kind = fresh.body.get("kind") if expected == 200 else None
    assert kind == EXPECTED_KINDS.get(path.stem)
    # What the rule asks of the table (the samples' order is not a paid one: nothing is written, no mark either):
    # an intent's event reads its order; a failed attempt is one conditional UpdateItem, its condition refused;
    # a charge or a dispute names no order, so the provider is asked for its intent (the fake does not know the
    # sample's: no order, no store call). An ignored type is answered without the rule, a forged one refused.
    assert calls.operations == STORE_CALLS.get(str(kind), []), kind
    assert [op for op, _ in provider.calls] == (["get_intent"] if kind in ("refunded", "dispute") else [])


# The kind each sample is read as, and the store calls its rule makes on an order that is not a paid one.
EXPECTED_KINDS = {
    "payment_intent_amount_capturable_updated_200": "authorised",
    "payment_intent_payment_failed_200": "failed",
    "payment_intent_canceled_200": "canceled",
    "charge_refunded_200": "refunded",
    "charge_dispute_created_200": "dispute",
    "customer_created_ignored_200": "ignored",
}
STORE_CALLS = {"authorised": ["GetItem"], "canceled": ["GetItem"], "failed": ["UpdateItem"]}
