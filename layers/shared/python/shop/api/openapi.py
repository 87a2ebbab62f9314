"""ONE OpenAPI document for the whole API, merged from the four functions' resolvers.

``build_openapi()`` imports ``functions/<name>/handler.py`` of customers, products, orders and
sessions by path (each module is called ``handler`` on Lambda), takes each ``app``'s generated
document and merges paths and component schemas (a schema name defined differently by two
functions is an error). Powertools' own 422 schemas are dropped: every route declares ours.

Run ``python -m shop.api.openapi > openapi.json`` (with ``layers/shared/python`` on ``PYTHONPATH``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import sys
from typing import Any

API_FUNCTIONS = ("customers", "products", "orders", "sessions")
REPO_ROOT = pathlib.Path(__file__).resolve().parents[5]
UNUSED_POWERTOOLS_SCHEMAS = ("HTTPValidationError", "ValidationError", "ResponseValidationError")
DESCRIPTION = (
    "HTTP API of the serverless shop (API Gateway HTTP API, payload format 2.0). "
    'Every 4xx/5xx body is {"error": {"code", "message", "details"?}}. '
    "Lists take ?limit= (1..100, default 20) and ?next_token=."
)


def load_function(name: str, root: pathlib.Path | None = None) -> Any:
    """Import functions/<name>/handler.py under a unique module name and return the module."""
    module_name = f"shop_function_{name}_handler"
    if module_name in sys.modules:
        return sys.modules[module_name]
    path = (root or REPO_ROOT) / "functions" / name / "handler.py"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        raise
    return module


def function_document(name: str, root: pathlib.Path | None = None) -> dict[str, Any]:
    app = load_function(name, root).app
    return json.loads(app.get_openapi_schema().model_dump_json(by_alias=True, exclude_none=True))


def build_openapi(root: pathlib.Path | None = None) -> dict[str, Any]:
    """The merged document: every route of every API function, with title, version and security scheme."""
    os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
    from shop.api.resolver import API_TITLE, API_VERSION

    paths: dict[str, dict[str, Any]] = {}
    schemas: dict[str, Any] = {}
    security: dict[str, Any] = {}
    for name in API_FUNCTIONS:
        document = function_document(name, root)
        for path, operations in document.get("paths", {}).items():
            for method, operation in operations.items():
                if method in paths.get(path, {}):
                    raise ValueError(f"{method.upper()} {path} is served by two functions")
                operation.setdefault("x-function", name)
                paths.setdefault(path, {})[method] = operation
        components = document.get("components", {})
        for schema_name, schema in components.get("schemas", {}).items():
            if schema_name in UNUSED_POWERTOOLS_SCHEMAS:
                continue
            if schema_name in schemas and schemas[schema_name] != schema:
                raise ValueError(f"schema {schema_name} differs between functions")
            schemas[schema_name] = schema
        security.update(components.get("securitySchemes", {}))
    return {
        "openapi": "3.1.0",
        "info": {"title": API_TITLE, "version": API_VERSION, "description": DESCRIPTION},
        "paths": {path: paths[path] for path in sorted(paths)},
        "components": {
            "schemas": {name: schemas[name] for name in sorted(schemas)},
            "securitySchemes": security,
        },
    }


def render(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, sort_keys=False, ensure_ascii=False) + "\n"


def main() -> None:
    sys.stdout.write(render(build_openapi()))


if __name__ == "__main__":
    main()
