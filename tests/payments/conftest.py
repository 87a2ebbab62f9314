"""Payments fixtures: one localstripe server per test session (no internet), and the Payments port twice.

`payments` runs a test on the in-memory fake (tests/support/fake_payments.py) and on the Stripe adapter
against localstripe, with `authorise` playing the customer's browser on either.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from local_runtime.localstripe import TEST_SECRET_KEY, LocalStripe
from shop.models.payments import PaymentIntent
from tests.support.fake_payments import FakePayments


@pytest.fixture(scope="session")
def localstripe() -> Iterator[LocalStripe]:
    server = LocalStripe().start()
    try:
        yield server
    finally:
        server.stop()


@dataclass
class PaymentsUnderTest:
    backend: str
    port: Any  # shop.services.ports.Payments
    authorise: Callable[[str, str], PaymentIntent]  # (intent id, test payment method): the browser's confirmation


def _stripe_authorise(server: LocalStripe) -> Callable[[str, str], PaymentIntent]:
    import stripe

    from shop.payments.stripe_adapter import StripePayments, translate

    client = stripe.StripeClient(TEST_SECRET_KEY, base_addresses={"api": server.endpoint}, max_network_retries=0)

    def authorise(intent_id: str, payment_method: str = "pm_card_visa") -> PaymentIntent:
        try:
            client.v1.payment_intents.update(intent_id, params={"payment_method": payment_method})
            client.v1.payment_intents.confirm(intent_id)
        except stripe.StripeError as error:
            raise translate(error) from error
        return StripePayments(TEST_SECRET_KEY, api_base=server.endpoint).get_intent(intent_id)

    return authorise


@pytest.fixture(params=["fake", "localstripe"])
def payments(request: pytest.FixtureRequest) -> PaymentsUnderTest:
    if request.param == "fake":
        fake = FakePayments()
        return PaymentsUnderTest("fake", fake, fake.authorise)
    from shop.payments.stripe_adapter import StripePayments

    server: LocalStripe = request.getfixturevalue("localstripe")
    return PaymentsUnderTest(
        "localstripe", StripePayments(TEST_SECRET_KEY, api_base=server.endpoint), _stripe_authorise(server)
    )
