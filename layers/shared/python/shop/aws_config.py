"""The one botocore configuration every AWS client of the shop uses.

Standard retry mode backs off with jitter on throttling and 5xx. Three attempts with
1 s connect / 2 s read timeouts keep the worst case well inside the API functions'
10 s timeout, so the handler still answers 503 itself. DYNAMODB_CONNECT_TIMEOUT and
DYNAMODB_READ_TIMEOUT (seconds) override the timeouts where the store is slower than
DynamoDB, as DynamoDB Local on a loaded laptop or CI machine is.
"""

from __future__ import annotations

import os

from botocore.config import Config

TOTAL_ATTEMPTS = 3


def client_config() -> Config:
    return Config(
        retries={"mode": "standard", "total_max_attempts": TOTAL_ATTEMPTS},
        connect_timeout=float(os.environ.get("DYNAMODB_CONNECT_TIMEOUT", "1")),
        read_timeout=float(os.environ.get("DYNAMODB_READ_TIMEOUT", "2")),
        tcp_keepalive=True,
    )
