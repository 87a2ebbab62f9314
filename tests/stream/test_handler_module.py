"""The handler module's import: no X-Ray SDK while tracing is disabled, nothing created before the first call."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]

PROBE = """
import sys
sys.path[:0] = ["layers/shared/python", "functions/order_events"]
import handler
print("xray" if "aws_xray_sdk" in sys.modules else "no-xray")
import shop.publishing, shop.repository.store
print("clients" if shop.publishing._client or shop.repository.store._client else "no-clients")
"""


def test_import_keeps_the_xray_sdk_and_clients_out():
    env = {**os.environ, "POWERTOOLS_TRACE_DISABLED": "true", "TABLE_NAME": "shop", "PAGINATION_SECRET": "x"}
    out = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, check=True, timeout=60
    ).stdout.split()
    assert out == ["no-xray", "no-clients"]
