"""The Stripe secret key and webhook signing secret: literal values locally, one Secrets Manager secret deployed.

Deployed, `STRIPE_SECRET_ARN` names a secret whose value is the JSON object
``{"secret_key": "sk_...", "webhook_secret": "whsec_..."}``. It is read on the first call that needs it (the
first checkout of an orders instance, the first delivery of a payments instance: never at import, so a cold
start that takes no payment pays nothing), and kept MAX_AGE_S, so a rotated value reaches every instance within
that time (rotation: docs/operations.md, "Rotating the Stripe keys"). Only the functions that call Stripe are
given the ARN and the read permission (infra).

A deployed secret that cannot be used (it still holds the placeholder the stage was created with, it is gone or
unreadable, it is not that JSON object, or Stripe refuses its key: shop.payments.stripe_adapter) is
`errors.PaymentCredentialsUnusable`: the client gets 503 PAYMENT_PROVIDER_UNAVAILABLE with Retry-After (a webhook
delivery is redelivered by Stripe), never a 500, and each occurrence is counted as the EMF metric
CREDENTIALS_UNUSABLE_METRIC (dimension `service`), on which the stage's alarm `PaymentCredentialsUnusable` fires
(docs/decisions.md, "A Stripe secret that cannot be used").
"""

from __future__ import annotations

import json
import logging
import os
from functools import cache
from typing import Any

from shop import errors
from shop.config import ConfigurationError, payment_settings

MAX_AGE_S = 300
# Secrets Manager errors that say the deployment is wrong (no secret, no permission, no key), not busy.
MISCONFIGURED = {"ResourceNotFoundException", "AccessDeniedException", "DecryptionFailure", "InvalidRequestException"}
FIELDS = ("secret_key", "webhook_secret")
# What Stripe's values look like: a secret key (sk_) or a restricted key (rk_) of test or live mode, and an
# endpoint's signing secret. The stage's secret is created with neither (infra.constructs.data.StripeSecret).
SECRET_KEY_PREFIXES = ("sk_test_", "sk_live_", "rk_test_", "rk_live_")
WEBHOOK_SECRET_PREFIX = "whsec_"  # noqa: S105 - the prefix every signing secret has, not a secret
# Counted once per refused call by the function that met it; the stage's alarm sums it over the functions that
# call Stripe (infra.constructs.monitoring).
CREDENTIALS_UNUSABLE_METRIC = "PaymentCredentialsUnusable"

logger = logging.getLogger(__name__)


@cache
def _provider() -> Any:
    from aws_lambda_powertools.utilities.parameters import SecretsProvider

    from shop.aws_config import client_config

    return SecretsProvider(boto_config=client_config())


def clear() -> None:
    """Forget the cached value and client (tests; a new process does the same)."""
    _provider.cache_clear()


def _code(error: BaseException | None) -> str | None:
    response = getattr(error, "response", None)
    return response.get("Error", {}).get("Code") if isinstance(response, dict) else None


def credentials_unusable(reason: str) -> errors.PaymentCredentialsUnusable:
    """The error to raise for credentials that cannot be used, counted (CREDENTIALS_UNUSABLE_METRIC, one EMF line
    now, whatever the handler's own metrics do) and logged with `reason`, which names no secret value."""
    from aws_lambda_powertools.metrics import MetricUnit, single_metric

    service = os.environ.get("POWERTOOLS_SERVICE_NAME") or "shop"
    namespace = os.environ.get("POWERTOOLS_METRICS_NAMESPACE") or "Shop"
    with single_metric(
        name=CREDENTIALS_UNUSABLE_METRIC,
        unit=MetricUnit.Count,
        value=1,
        namespace=namespace,
        default_dimensions={"service": service},
    ):
        pass
    logger.error("payment_credentials_unusable", extra={"reason": reason})
    return errors.PaymentCredentialsUnusable(f"the payment provider's credentials cannot be used: {reason}")


def _from_secret(arn: str) -> dict[str, str]:
    from aws_lambda_powertools.utilities.parameters import GetParameterError

    try:
        value = _provider().get(arn, max_age=MAX_AGE_S)
    except GetParameterError as error:
        if _code(error.__context__) in MISCONFIGURED:
            raise credentials_unusable(f"the Stripe secret {arn} cannot be read: {_code(error.__context__)}") from error
        raise errors.PaymentProviderUnavailable("the Stripe secret could not be read") from error
    try:
        data = json.loads(value)
    except (TypeError, ValueError):
        data = None
    if not isinstance(data, dict) or not all(isinstance(data.get(name), str) and data[name] for name in FIELDS):
        raise credentials_unusable(f"the Stripe secret {arn} must be a JSON object with {' and '.join(FIELDS)}")
    return {name: data[name] for name in FIELDS}


def secret_key() -> str:
    """Stripe's API secret key: from the secret when STRIPE_SECRET_ARN is set, else STRIPE_SECRET_KEY."""
    settings = payment_settings()
    if settings.stripe_secret_arn:
        key = _from_secret(settings.stripe_secret_arn)["secret_key"]
        if not key.startswith(SECRET_KEY_PREFIXES):  # the placeholder, or something pasted that is no Stripe key
            raise credentials_unusable(
                f"the Stripe secret {settings.stripe_secret_arn} holds no Stripe secret key "
                f"(secret_key must start with {' or '.join(SECRET_KEY_PREFIXES)})"
            )
        return key
    if not settings.stripe_secret_key:
        raise ConfigurationError("PAYMENTS=stripe needs STRIPE_SECRET_ARN (or STRIPE_SECRET_KEY locally)")
    return settings.stripe_secret_key


def webhook_secret() -> str:
    """The webhook endpoint's signing secret: from the secret when STRIPE_SECRET_ARN is set, else
    STRIPE_WEBHOOK_SECRET."""
    settings = payment_settings()
    if settings.stripe_secret_arn:
        secret = _from_secret(settings.stripe_secret_arn)["webhook_secret"]
        if not secret.startswith(WEBHOOK_SECRET_PREFIX):  # the generated placeholder: no delivery could verify
            raise credentials_unusable(
                f"the Stripe secret {settings.stripe_secret_arn} holds no webhook signing secret "
                f"(webhook_secret must start with {WEBHOOK_SECRET_PREFIX})"
            )
        return secret
    if not settings.stripe_webhook_secret:
        raise ConfigurationError("PAYMENTS=stripe needs STRIPE_SECRET_ARN (or STRIPE_WEBHOOK_SECRET locally)")
    return settings.stripe_webhook_secret
