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
def webhook(moto_api, monkeypatch) -> Iterator[Any]:
    """The payments function on moto with the real rule (the samples name an order the table does not hold)."""
    monkeypatch.setenv("PAYMENTS", "stripe")
    monkeypatch.setenv("STRIPE_SECRET_KEY", "sk_test_samples")
    monkeypatch.setenv("STRIPE_WEBHOOK_SECRET", SAMPLE_SECRET)
    config.payment_settings.cache_clear()
    API.handler("payments")
    service = wiring.payment_service(moto_api.table, provider=FakePayments())
    monkeypatch.setattr(sys.modules["_in_process_payments_handler"], "_service", service)
    yield moto_api.table
    config.payment_settings.cache_clear()


def test_the_committed_events_are_the_generators():
    assert {path.stem for path in FILES} == set(STRIPE_EVENTS)
    for path in FILES:
        assert json.loads(path.read_text()) == delivery(path.stem), path.name


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_a_sample_is_stale_as_committed_and_answers_its_status_once_signed(webhook, path):
    event = json.loads(path.read_text())
    assert event["version"] == "2.0"
    assert event["routeKey"] == "POST /webhooks/stripe"
    stale = invoke("payments", event)
    assert stale.status == 400
    assert stale.code == "WEBHOOK_SIGNATURE_INVALID"
    expected = int(STATUS.search(path.name).group(1))  # type: ignore[union-attr]
    with counting(webhook.client) as calls:
        fresh = invoke("payments", sign(event, SAMPLE_SECRET) if not path.stem.startswith("forged") else event)
    assert fresh.status == expected, fresh.body
    # a verified event of a type the shop acts on reads its order (the samples' order is not the table's: nothing
    # is written, no mark either); an ignored type is answered without the rule, a forged one refused
    kind = fresh.body.get("kind") if expected == 200 else None
    assert calls.operations == (["GetItem"] if kind in ("authorised", "failed") else [])
