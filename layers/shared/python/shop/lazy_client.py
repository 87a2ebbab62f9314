"""The process-wide boto3 clients: each created on first use (not at import, not in a SnapStart snapshot's
init unless used), once, under a lock, and kept in its module's `_client` (which tests replace or reset).
"""

from __future__ import annotations

import sys
import threading
from typing import Any

from shop.aws_config import client_config


class ProcessClient:
    """The `service` client kept in `module`'s `_client` global."""

    def __init__(self, module: str, service: str) -> None:
        self._module = sys.modules[module]
        self._service = service
        self._lock = threading.Lock()

    def get(self) -> Any:
        client = self._module._client
        if client is None:
            with self._lock:
                client = self._module._client
                if client is None:
                    import boto3

                    client = boto3.session.Session().client(self._service, config=client_config())
                    self._module._client = client  # type: ignore[attr-defined]
        return client

    def reset(self) -> None:
        """Forget the client (tests switch stores and mocks between runs)."""
        with self._lock:
            self._module._client = None  # type: ignore[attr-defined]
