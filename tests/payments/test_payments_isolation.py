"""Payments stay out of everything that takes none: no function, service nor model loads `stripe` or the adapter,
and the switch defaults to version 2's flow."""

from __future__ import annotations

import pathlib

import pytest

from shop import config
from tests.support.fresh_python import fresh_python

REPO = pathlib.Path(__file__).resolve().parents[2]
SHOP = REPO / "layers" / "shared" / "python" / "shop"
PAYMENT_MODULES = ("stripe", "shop.payments")


def _loaded_payment_modules(imports: str) -> list[str]:
    return fresh_python(
        "import json, sys\n"
        f"{imports}\n"
        f"never = {PAYMENT_MODULES!r}\n"
        "print(json.dumps(sorted(m for m in sys.modules if any(m == n or m.startswith(n + '.') for n in never))))"
    )


@pytest.mark.parametrize("function", sorted(p.parent.name for p in (REPO / "functions").glob("*/handler.py")))
def test_no_function_loads_the_payment_provider_at_import(function):
    imports = f"from local_runtime.worker import import_handler_module\nimport_handler_module('functions/{function}', 'handler')"
    assert _loaded_payment_modules(imports) == []


def test_no_rule_nor_model_loads_the_payment_provider():
    modules = sorted(
        f"shop.{package}.{path.stem}"
        for package in ("services", "models")
        for path in (SHOP / package).glob("*.py")
        if path.stem != "__init__"
    )
    assert _loaded_payment_modules("\n".join(f"import {name}" for name in modules)) == []


@pytest.fixture
def fresh_payment_settings():
    config.payment_settings.cache_clear()
    yield
    config.payment_settings.cache_clear()


def test_payments_are_off_unless_switched_on(monkeypatch, fresh_payment_settings):
    monkeypatch.delenv("PAYMENTS", raising=False)
    assert config.payment_settings().provider == "none"


def test_the_stripe_switch_reads_the_local_provider(monkeypatch, fresh_payment_settings):
    monkeypatch.setenv("PAYMENTS", "stripe")
    monkeypatch.setenv("STRIPE_API_BASE", "http://127.0.0.1:3901")
    monkeypatch.setenv("STRIPE_SECRET_KEY", "sk_test_local")
    assert config.payment_settings() == config.PaymentSettings(
        provider="stripe",
        stripe_api_base="http://127.0.0.1:3901",
        stripe_secret_key="sk_test_local",
        stripe_webhook_secret=None,
    )


def test_an_unknown_provider_is_a_configuration_error(monkeypatch, fresh_payment_settings):
    monkeypatch.setenv("PAYMENTS", "paypal")
    with pytest.raises(config.ConfigurationError, match="PAYMENTS must be one of none, stripe"):
        config.payment_settings()


def test_with_payments_off_the_composition_root_builds_no_provider_and_loads_no_stripe():
    loaded = fresh_python(
        "import json, sys\n"
        "from shop import wiring\n"
        "built = [wiring.payments(), wiring.payment_webhooks()]\n"
        "print(json.dumps({'built': [b is not None for b in built], 'stripe': 'stripe' in sys.modules}))"
    )
    assert loaded == {"built": [False, False], "stripe": False}


def test_with_stripe_on_the_composition_root_builds_the_adapter_on_the_configured_server(
    monkeypatch, fresh_payment_settings, localstripe
):
    from shop import wiring
    from shop.models.payments import PaymentStep, idempotency_key

    monkeypatch.setenv("PAYMENTS", "stripe")
    monkeypatch.setenv("STRIPE_API_BASE", localstripe.endpoint)
    monkeypatch.setenv("STRIPE_SECRET_KEY", "sk_test_wiring")
    monkeypatch.setenv("STRIPE_WEBHOOK_SECRET", "whsec_wiring")

    payments = wiring.payments()
    assert payments is not None
    intent = payments.create_intent(
        "ord-w", 300, "eur", idempotency_key=idempotency_key("ord-w", PaymentStep.AUTHORISE)
    )
    assert payments.get_intent(intent.intent_id) == intent
    assert wiring.payment_webhooks() is not None


@pytest.mark.parametrize("missing", ["STRIPE_SECRET_KEY", "STRIPE_WEBHOOK_SECRET"])
def test_stripe_without_its_secrets_is_a_configuration_error(monkeypatch, fresh_payment_settings, missing):
    from shop import wiring

    monkeypatch.setenv("PAYMENTS", "stripe")
    for name in ("STRIPE_SECRET_KEY", "STRIPE_WEBHOOK_SECRET"):
        monkeypatch.setenv(name, "set")
    monkeypatch.delenv(missing)
    build = wiring.payments if missing == "STRIPE_SECRET_KEY" else wiring.payment_webhooks
    with pytest.raises(config.ConfigurationError, match=missing):
        build()
