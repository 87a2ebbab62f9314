"""The Stripe secret key and webhook signing secret: literal values locally, one Secrets Manager secret deployed.

Deployed, `STRIPE_SECRET_ARN` names a secret whose value is the JSON object
``{"secret_key": "sk_...", "webhook_secret": "whsec_..."}``. It is read on the first call that needs it (the
first checkout of an orders instance, the first delivery of a payments instance: never at import, so a cold
start that takes no payment pays nothing), and kept MAX_AGE_S, so a rotated value reaches every instance within
that time (rotation: docs/operations.md, "Rotating the Stripe keys"). Only the functions that call Stripe are
given the ARN and the read permission (infra).
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from shop import errors
from shop.config import ConfigurationError, payment_settings

MAX_AGE_S = 300
# Secrets Manager errors that say the deployment is wrong (no secret, no permission, no key), not busy.
MISCONFIGURED = {"ResourceNotFoundException", "AccessDeniedException", "DecryptionFailure", "InvalidRequestException"}
FIELDS = ("secret_key", "webhook_secret")


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


def _from_secret(arn: str) -> dict[str, str]:
    from aws_lambda_powertools.utilities.parameters import GetParameterError

    try:
        value = _provider().get(arn, max_age=MAX_AGE_S)
    except GetParameterError as error:
        if _code(error.__context__) in MISCONFIGURED:
            raise ConfigurationError(f"the Stripe secret {arn} cannot be read: {_code(error.__context__)}") from error
        raise errors.PaymentProviderUnavailable("the Stripe secret could not be read") from error
    try:
        data = json.loads(value)
    except (TypeError, ValueError):
        data = None
    if not isinstance(data, dict) or not all(isinstance(data.get(name), str) and data[name] for name in FIELDS):
        raise ConfigurationError(f"the Stripe secret {arn} must be a JSON object with {' and '.join(FIELDS)}")
    return {name: data[name] for name in FIELDS}


def secret_key() -> str:
    """Stripe's API secret key: from the secret when STRIPE_SECRET_ARN is set, else STRIPE_SECRET_KEY."""
    settings = payment_settings()
    if settings.stripe_secret_arn:
        return _from_secret(settings.stripe_secret_arn)["secret_key"]
    if not settings.stripe_secret_key:
        raise ConfigurationError("PAYMENTS=stripe needs STRIPE_SECRET_ARN (or STRIPE_SECRET_KEY locally)")
    return settings.stripe_secret_key


def webhook_secret() -> str:
    """The webhook endpoint's signing secret: from the secret when STRIPE_SECRET_ARN is set, else
    STRIPE_WEBHOOK_SECRET."""
    settings = payment_settings()
    if settings.stripe_secret_arn:
        return _from_secret(settings.stripe_secret_arn)["webhook_secret"]
    if not settings.stripe_webhook_secret:
        raise ConfigurationError("PAYMENTS=stripe needs STRIPE_SECRET_ARN (or STRIPE_WEBHOOK_SECRET locally)")
    return settings.stripe_webhook_secret
