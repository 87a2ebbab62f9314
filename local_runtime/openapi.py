"""The whole API's OpenAPI document, merged from the HTTP functions' Powertools resolvers.

Each handler's `app` is imported in isolation (`worker.import_handler_module`) and forgotten after its
`get_openapi_schema()`; `python -m local_runtime.openapi` prints the merge (`make openapi`).
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from typing import Any

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
HTTP_FUNCTIONS = ("customers", "products", "orders", "sessions", "payments")
TITLE = "Shop API"
VERSION = "1"


def _function_schema(name: str, root: pathlib.Path) -> dict[str, Any]:
    from local_runtime.worker import import_handler_module

    alias = f"_openapi_{name}_handler"
    module = import_handler_module(str(root / "functions" / name), "handler", alias, isolated=True)
    try:
        schema = module.app.get_openapi_schema(title=TITLE, version=VERSION)
        return json.loads(schema.model_dump_json(by_alias=True, exclude_none=True))
    finally:
        del sys.modules[alias]


def merge(documents: list[dict[str, Any]], servers: list[str] | None = None) -> dict[str, Any]:
    merged: dict[str, Any] = {
        "openapi": documents[0].get("openapi", "3.1.0") if documents else "3.1.0",
        "info": {"title": TITLE, "version": VERSION},
        "paths": {},
        "components": {},
    }
    for doc in documents:
        for path, operations in (doc.get("paths") or {}).items():
            merged["paths"].setdefault(path, {}).update(operations)
        for section, entries in (doc.get("components") or {}).items():
            merged["components"].setdefault(section, {}).update(entries)
        for key in ("security", "tags"):
            if doc.get(key):
                existing = merged.setdefault(key, [])
                existing += [e for e in doc[key] if e not in existing]
    if servers:
        merged["servers"] = [{"url": url} for url in servers]
    merged["paths"] = dict(sorted(merged["paths"].items()))
    if not merged["components"]:
        del merged["components"]
    return merged


def build(root: pathlib.Path = REPO_ROOT, names: tuple[str, ...] = HTTP_FUNCTIONS) -> dict[str, Any]:
    defaults = {
        "TABLE_NAME": "shop-local",
        "PAGINATION_SECRET": "openapi-generation",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "local",
        "AWS_SECRET_ACCESS_KEY": "local",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_NAMESPACE": "Shop",
    }
    for key, value in defaults.items():
        os.environ.setdefault(key, value)
    layer = str(root / "layers" / "shared" / "python")
    if layer not in sys.path:
        sys.path.insert(0, layer)
    return merge([_function_schema(n, root) for n in names if (root / "functions" / n / "handler.py").exists()])


def load_document(root: pathlib.Path = REPO_ROOT, servers: list[str] | None = None) -> dict[str, Any]:
    """For the gateway: generate in a fresh interpreter (handlers never mix with the gateway's
    modules); fall back to the committed openapi.json when generation fails."""
    proc = subprocess.run(
        [sys.executable, "-m", "local_runtime.openapi"],
        cwd=str(root),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "layers" / "shared" / "python"), str(root)])},
    )
    if proc.returncode == 0:
        document: dict[str, Any] = json.loads(proc.stdout)
    elif (root / "openapi.json").exists():
        document = json.loads((root / "openapi.json").read_text())
    else:
        raise RuntimeError(f"cannot build the OpenAPI document: {proc.stderr.strip()[-2000:]}")
    if servers:
        document["servers"] = [{"url": url} for url in servers]
    return document


def main() -> None:
    json.dump(build(), sys.stdout, indent=2, sort_keys=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
