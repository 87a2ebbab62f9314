"""The payments layer without what infra.build_layers trims from it (UNUSED_AT_RUN_TIME) still does everything the
shop asks of Stripe's library: nothing in the pinned stripe imports `stripe/params` at run time, and the trimmed
layer, alone on the path (`-I -S`, with the runtime's boto3 and urllib3), drives an intent's whole life, a declined
card, an unknown intent and a webhook against localstripe without looking for a module it lacks but the one it leaves
out (charset_normalizer: infra.build_layers.LEFT_OUT), and without a warning. What the rest of the
plan rests on (every module of every layer, the handlers on the sample events): tests/functions/test_trimmed_layers.py."""

from __future__ import annotations

import ast
import json
import pathlib
import shutil
import subprocess
import sys

import pytest
import stripe

from infra import build_layers
from infra.import_closure import type_checking_lines
from tests.support.fresh_python import REPO

PINNED = next(
    line.split("==", 1)[1].strip()
    for line in (REPO / "requirements" / "payments.txt").read_text().splitlines()
    if line.startswith("stripe==")
)
STRIPE_SITE = pathlib.Path(stripe.__file__).resolve().parent.parent
TRIMMED = ("stripe/params",)  # TypedDicts of every API's parameters, 5.8 MB: checked on its own since issue 26
PAYMENTS_LAYER = ("stripe", "requests", "idna", "charset_normalizer", "certifi")
RUNTIME_PROVIDED = ("boto3", "botocore", "jmespath", "dateutil", "urllib3", "s3transfer", "six.py")


def test_the_plan_trims_stripe_params():
    assert set(TRIMMED) <= set(build_layers.UNUSED_AT_RUN_TIME["payments"])


def test_the_venv_holds_the_layers_stripe():
    assert stripe.VERSION == PINNED


@pytest.mark.parametrize("folder", TRIMMED)
def test_no_module_outside_a_trimmed_folder_imports_it_at_run_time(folder):
    trimmed = STRIPE_SITE / folder
    module = folder.replace("/", ".")
    found: list[str] = []
    for path in sorted((STRIPE_SITE / "stripe").rglob("*.py")):
        if path.is_relative_to(trimmed):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        guarded = type_checking_lines(tree)
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                names = [node.value]  # import_module("stripe.params...") and lazy maps
            hits = [n for n in names if n == module or n.startswith(module + ".")]
            line = getattr(node, "lineno", 0)
            if hits and line not in guarded:
                found.append(f"{path.relative_to(STRIPE_SITE)}:{line}: {hits[0]}")
    # the one reference left: stripe/__init__.py's lazy attribute map (`stripe.params` read as an attribute,
    # which only type checkers do)
    assert [f for f in found if not f.startswith("stripe/__init__.py:")] == []


def test_the_trimmed_library_drives_an_intent_and_a_webhook_at_localstripe(tmp_path, localstripe):
    site, deps = tmp_path / "python", tmp_path / "deps"  # the payments layer; the dependencies layer beside it
    for name in PAYMENTS_LAYER:
        shutil.copytree(STRIPE_SITE / name, site / name, ignore=shutil.ignore_patterns("__pycache__"))
    build_layers.trim(site, "payments")
    assert all(not (site / path).exists() for path in build_layers.UNUSED_AT_RUN_TIME["payments"])
    assert not (site / "charset_normalizer").exists()  # the layer leaves it out whole
    for tops in build_layers.distribution_tops(build_layers.LAYERS["deps"]).values():
        for top in tops:
            if (STRIPE_SITE / top).is_dir():
                shutil.copytree(STRIPE_SITE / top, deps / top, ignore=shutil.ignore_patterns("__pycache__"))
            elif (STRIPE_SITE / top).is_file():
                shutil.copy2(STRIPE_SITE / top, deps / top)
    build_layers.trim(deps, "deps")
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    for name in RUNTIME_PROVIDED:
        (runtime / name).symlink_to(STRIPE_SITE / name)
    code = f"""
import json, sys, time
sys.path[:0] = [{str(deps)!r}, {str(site)!r}, {str(REPO / "layers/shared/python")!r}, {str(REPO)!r}, {str(runtime)!r}]
missing = []


class Missing:  # last on sys.meta_path: every module an import looks for in vain, caught or not
    @staticmethod
    def find_spec(name, path=None, target=None):
        missing.append(name)


sys.meta_path.append(Missing)
shown = []
import warnings
warnings.showwarning = lambda message, category, *args, **kwargs: shown.append(f"{{category.__name__}}: {{message}}")
from local_runtime.payments import signed
from shop import errors
from shop.models.payments import PaymentStep, idempotency_key
from shop.payments.stripe_adapter import StripePayments  # as deployed: the adapter is what imports stripe
import stripe

payments = StripePayments("sk_test_trimmed", api_base={localstripe.endpoint!r})
client = stripe.StripeClient("sk_test_trimmed", base_addresses={{"api": {localstripe.endpoint!r}}})
intent = payments.create_intent("ord-t", 1500, "eur", idempotency_key=idempotency_key("ord-t", PaymentStep.AUTHORISE))
client.v1.payment_intents.update(intent.intent_id, params={{"payment_method": "pm_card_visa"}})
client.v1.payment_intents.confirm(intent.intent_id)
captured = payments.capture(intent.intent_id, idempotency_key=idempotency_key("ord-t", PaymentStep.CAPTURE))
refund = payments.refund(intent.intent_id, 500, idempotency_key=idempotency_key("ord-t", PaymentStep.REFUND))
other = payments.create_intent("ord-u", 700, "eur", idempotency_key=idempotency_key("ord-u", PaymentStep.AUTHORISE))
cancelled = payments.cancel(other.intent_id, idempotency_key=idempotency_key("ord-u", PaymentStep.CANCEL))
declined = payments.create_intent("ord-v", 900, "eur", idempotency_key=idempotency_key("ord-v", PaymentStep.AUTHORISE))
client.v1.payment_intents.update(declined.intent_id, params={{"payment_method": "pm_card_chargeCustomerFail"}})
refusals = []
try:
    client.v1.payment_intents.confirm(declined.intent_id)
except stripe.StripeError as error:
    refusals.append(type(error).__name__)
for call in (lambda: payments.get_intent("pi_unknown"), lambda: payments.capture("pi_unknown", idempotency_key="k")):
    try:
        call()
    except errors.DomainError as error:
        refusals.append(type(error).__name__)
body = json.dumps({{"id": "evt_t", "object": "event", "type": "payment_intent.succeeded", "created": 1,
                   "data": {{"object": {{"id": intent.intent_id, "object": "payment_intent"}}}}}})
event = stripe.Webhook.construct_event(body, signed(body.encode(), "whsec_trimmed"), "whsec_trimmed")
layer = {sorted(PAYMENTS_LAYER)!r}
print(json.dumps({{
    "library": stripe.__file__,
    "statuses": [captured.status.value, cancelled.status.value, payments.get_intent(declined.intent_id).status.value],
    "refunds": [r.amount_cents for r in payments.refunds(intent.intent_id)],
    "refund": refund.amount_cents,
    "refusals": refusals,
    "event": event.id,
    "params_loaded": any(name.startswith("stripe.params") for name in sys.modules),
    "missing": sorted({{name for name in missing if name.split(".")[0] in layer}}),
    "warnings": shown,
}}))
"""
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {
        "library": str(site / "stripe" / "__init__.py"),
        "statuses": ["succeeded", "canceled", "requires_payment_method"],
        "refunds": [500],
        "refund": 500,
        "refusals": ["CardError", "PaymentRejected", "PaymentRejected"],
        "event": "evt_t",
        "params_loaded": False,
        # requests' optional character detection, which the layer leaves out: requests/__init__ reads its version
        # and requests.compat tries it (Response.apparent_encoding then answers UTF-8; stripe decodes the bytes
        # itself); its missing-dependency warning is filtered by shop/__init__.py, so none is shown
        "missing": ["charset_normalizer"],
        "warnings": [],
    }
