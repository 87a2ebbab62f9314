"""The process-wide AWS clients: each created on first use (not at import, not in a SnapStart snapshot's
init unless used), once, under a lock, and kept in its module's `_client` (which tests replace or reset).

The clients are botocore's own (what `boto3.client` returns), made without importing boto3: boto3's package
imports s3transfer and multiprocessing for its transfer manager (~15 ms of a cold start, docs/performance.md,
"Cold start"). The session's loader reads a service's model from its own folder instead of first listing every
service botocore ships (~400 folders, ~15 ms on the first client). The legacy endpoint resolver a client is
built with reads `botocore_endpoints.json` beside this module: botocore's own endpoints.json (1.2 MB, ~10 ms to
parse) with only the services the shop calls, for the botocore version it was cut from (`python -m
shop.runtime.cut_botocore_endpoints` cuts it again; any other version or service reads botocore's whole file).

botocore has no public hook for either, so both rely on its undocumented shape, named in `BOTOCORE_PRIVATE` and pinned
by tests/unit/test_botocore_private.py (signatures, and that botocore still calls each):
- `Session._internal_components.lazy_register_component("endpoint_resolver", ...)`: the resolver a session's
  clients are built with (`Session.register_component` registers public components only).
- `Loader.load_service_model`, overridden by a copy that skips the listing; it calls the loader's
  `determine_latest_version`, `load_data`, `_find_extras` and `_extras_processor.process` as botocore's does, and
  is wrapped in botocore's `instance_cache` as botocore's is (which keeps each answer in the loader's `_cache`).
- `EndpointResolver(data, uses_builtin_data=True)`: the cut data resolved as botocore's bundled file is.
"""

from __future__ import annotations

import json
import os
import pathlib
import sys
import threading
from typing import Any

from shop.aws_config import client_config

_shared_loader: tuple[str | None, Any] | None = None
_loader_lock = threading.Lock()
ENDPOINTS_FILE = pathlib.Path(__file__).with_name("botocore_endpoints.json")
# service name -> its endpoint prefix in endpoints.json, for every client the shop makes
ENDPOINT_PREFIXES = {"dynamodb": "dynamodb", "dynamodbstreams": "streams.dynamodb", "events": "events", "s3": "s3"}
_endpoints: dict[str, Any] | None = None
# botocore's private shape used here, pinned by tests/unit/test_botocore_private.py: "module.Class.name" -> its
# signature there (a method), or the class an instance's attribute holds
BOTOCORE_PRIVATE = {
    "botocore.session.Session._internal_components": "botocore.session.ComponentLocator",
    "botocore.session.ComponentLocator.lazy_register_component": "(self, name, no_arg_factory)",
    "botocore.loaders.Loader.load_service_model": "(self, service_name, type_name, api_version=None)",
    "botocore.loaders.Loader.determine_latest_version": "(self, service_name, type_name)",
    "botocore.loaders.Loader.load_data": "(self, name)",
    "botocore.loaders.instance_cache": "(func)",
    "botocore.loaders.Loader._cache": "builtins.dict",
    "botocore.loaders.Loader._find_extras": "(self, service_name, type_name, api_version)",
    "botocore.loaders.Loader._extras_processor": "botocore.loaders.ExtrasProcessor",
    "botocore.loaders.ExtrasProcessor.process": "(self, original_model, extra_models)",
    "botocore.regions.EndpointResolver.__init__": "(self, endpoint_data, uses_builtin_data=False)",
}


def _cut_endpoints() -> dict[str, Any] | None:
    """The cut endpoints data if it was cut from the installed botocore, else None (botocore's whole file)."""
    global _endpoints
    if _endpoints is None:
        import botocore

        try:
            data = json.loads(ENDPOINTS_FILE.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        _endpoints = data if data.get("botocore") == botocore.__version__ else {}
    return _endpoints or None


def _loader(data_path: str | None) -> Any:
    """botocore's Loader (same search paths, AWS_DATA_PATH included) that skips the listing of every service."""
    from botocore.loaders import Loader, instance_cache

    class ServiceFolderLoader(Loader):
        @instance_cache
        def load_service_model(self, service_name: str, type_name: str, api_version: str | None = None) -> Any:
            # botocore's version first lists every service it ships to check that `service_name` is one; the
            # latest-version lookup below reads the service's own folder and raises DataNotFoundError if none.
            if api_version is None:
                api_version = self.determine_latest_version(service_name, type_name)
            model = self.load_data(os.path.join(service_name, api_version, type_name))
            self._extras_processor.process(model, self._find_extras(service_name, type_name, api_version))
            return model

    paths = [os.path.expanduser(os.path.expandvars(p)) for p in data_path.split(os.pathsep)] if data_path else []
    return ServiceFolderLoader(extra_search_paths=paths)


def create_client(service: str) -> Any:
    """A new `service` client with the shop's configuration (shop.aws_config.client_config).

    Each client gets its own botocore session, as `boto3.session.Session().client` gave it (credentials,
    region and endpoints read from the environment now); the sessions share one loader, so a second client
    of a service reuses the models the first one read.
    """
    global _shared_loader
    import botocore.session

    made = botocore.session.Session()
    data_path = made.get_config_variable("data_path")
    with _loader_lock:
        if _shared_loader is None or _shared_loader[0] != data_path:
            _shared_loader = (data_path, _loader(data_path))
        loader = _shared_loader[1]
    made.register_component("data_loader", loader)
    endpoints = _cut_endpoints() if service in ENDPOINT_PREFIXES and not data_path else None
    if endpoints is not None:
        from botocore.regions import EndpointResolver

        # botocore's own data, cut: resolved as botocore's bundled file is (uses_builtin_data), so the
        # endpoint rulesets decide the URL exactly as they do with the whole file
        made._internal_components.lazy_register_component(
            "endpoint_resolver", lambda: EndpointResolver(endpoints, uses_builtin_data=True)
        )
    return made.create_client(service, config=client_config())


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
                    client = create_client(self._service)
                    self._module._client = client  # type: ignore[attr-defined]
        return client

    def reset(self) -> None:
        """Forget the client (tests switch stores and mocks between runs)."""
        with self._lock:
            self._module._client = None  # type: ignore[attr-defined]
