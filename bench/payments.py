"""The route scenario's payments: a localstripe of its own, and the functions switched to PAYMENTS=stripe.

As `make dev --payments stripe` does (local_runtime.payments), without a gateway: the bench delivers the signed
webhook to the route in-process, so no webhook is registered at localstripe. Stopped, and the process's
variables put back, when the block ends: the later phases run as before.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from dataclasses import dataclass

from local_runtime.localstripe import TEST_SECRET_KEY, LocalStripe


@dataclass(frozen=True)
class BenchPayments:
    endpoint: str  # localstripe's address
    webhook_secret: str  # what the payments function verifies Stripe-Signature with


def _clear_caches() -> None:
    from shop import payment_secrets
    from shop.config import payment_settings

    payment_settings.cache_clear()
    payment_secrets.clear()


@contextlib.contextmanager
def payments_on() -> Iterator[BenchPayments]:
    server = LocalStripe().start()
    secret = f"whsec_bench_{secrets.token_hex(16)}"
    variables = {
        "PAYMENTS": "stripe",
        "STRIPE_API_BASE": server.endpoint,
        "STRIPE_SECRET_KEY": TEST_SECRET_KEY,
        "STRIPE_WEBHOOK_SECRET": secret,
        "STRIPE_SECRET_ARN": "",
    }
    saved = {name: os.environ.get(name) for name in variables}
    try:
        os.environ.update(variables)
        _clear_caches()
        yield BenchPayments(server.endpoint, secret)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        _clear_caches()
        server.stop()
