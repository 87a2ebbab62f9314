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


@schemathesis.hook
def before_call(ctx: Any, case: Any, kwargs: dict[str, Any]) -> None:
    """Sign a JSON delivery over the bytes requests sends for it (`json.dumps(body, allow_nan=False)`, UTF-8)."""
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
