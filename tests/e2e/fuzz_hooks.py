"""schemathesis hooks of the fuzz test (`hooks` in schemathesis.toml): deliveries to POST /webhooks/stripe signed
as Stripe signs them, so that generated events get past the signature check to the event's rule.

The endpoint's secret: SHOP_FUZZ_WEBHOOK_SECRET (tests/e2e/test_fuzz.py sets it from its stack's state file), else
`make dev`'s own, `.local/payments.json` (a run by hand from the repository's root). Without either, deliveries go
unsigned and are answered 400 WEBHOOK_SIGNATURE_INVALID, as before.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import pathlib
import time
from typing import Any

import schemathesis

SECRET_VARIABLE = "SHOP_FUZZ_WEBHOOK_SECRET"
MAKE_DEV_STATE = pathlib.Path(".local/payments.json")
WEBHOOK = ("POST", "/webhooks/stripe")


def _secret() -> str | None:
    secret = os.environ.get(SECRET_VARIABLE)
    if secret:
        return secret
    try:
        return str(json.loads(MAKE_DEV_STATE.read_text())["webhook_secret"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


# The stack's own checkout (tests/e2e/conftest.py's set_checkout): zones the fuzz test leaves alone, and the countries
# whose rate it leaves alone (the other tests' orders ship there and their totals are their lines'). Its calls go to
# a zone and a country of their own instead; every other value stays as generated.
KEPT_ZONE_PREFIX = "e2e-"
KEPT_RATES = frozenset({"US", "GB", "FR", "BE", "DE", "AT"})
ZONE = ("PUT", "/shipping/zones/{zone_id}")
RATE = ("PUT", "/tax/rates/{country}")
# An automatic promotion applies to every order: the fuzz test's start in a far future, so that the other tests'
# totals stay their lines' (its codes apply only to orders that give them).
NEW_PROMOTION, PROMOTION_EDIT = ("POST", "/promotions"), ("PATCH", "/promotions/{promotion_id}")
NEVER = "2999-01-01T00:00:00Z"


def _keep_the_stacks_checkout(case: Any) -> None:
    route, parameters = (case.method.upper(), case.operation.path), case.path_parameters
    if not isinstance(parameters, dict):
        parameters = {}
    if route == ZONE and str(parameters.get("zone_id", "")).startswith(KEPT_ZONE_PREFIX):
        case.path_parameters = {**parameters, "zone_id": "fuzz-zone"}
    if route == RATE and parameters.get("country") in KEPT_RATES:
        case.path_parameters = {**parameters, "country": "AQ"}
    body = case.body
    if route == NEW_PROMOTION and isinstance(body, dict) and body.get("automatic") is True:
        case.body = {**body, "starts_at": NEVER}
    if route == PROMOTION_EDIT and isinstance(body, dict) and "starts_at" in body:
        case.body = {**body, "starts_at": NEVER}


@schemathesis.hook
def before_call(ctx: Any, case: Any, kwargs: dict[str, Any]) -> None:
    """Keep the stack's checkout; sign a JSON delivery over the bytes requests sends for it
    (`json.dumps(body, allow_nan=False)`, UTF-8)."""
    _keep_the_stacks_checkout(case)
    if (case.method.upper(), case.operation.path) != WEBHOOK or case.media_type != "application/json":
        return
    secret = _secret()
    if secret is None or not isinstance(case.body, dict | list | str | int | float | bool):
        return
    try:
        body = json.dumps(case.body, allow_nan=False).encode()
    except (TypeError, ValueError):
        return
    at = int(time.time())
    digest = hmac.new(secret.encode(), f"{at}.".encode() + body, hashlib.sha256).hexdigest()
    case.headers = {**(case.headers or {}), "Stripe-Signature": f"t={at},v1={digest}"}
