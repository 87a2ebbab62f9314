"""Unzipped sizes of every function's code asset and every layer, as `cdk synth` staged them in cdk.out."""

from __future__ import annotations

import json
import os
import pathlib
import re
import zipfile
from typing import Any

from local_runtime.template import REPO_ROOT

CDK_OUT = REPO_ROOT / "cdk.out"
FUNCTION_LIMIT = 100 * 1024
LAYERS_LIMIT = 15 * 1024 * 1024


def asset_bytes(path: pathlib.Path) -> tuple[int, int]:
    """(bytes, files) of an asset folder or zip, uncompressed; __pycache__ is not shipped by CDK either."""
    if path.is_file() and zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            infos = [i for i in archive.infolist() if not i.is_dir()]
            return sum(i.file_size for i in infos), len(infos)
    total = files = 0
    for root, dirs, names in os.walk(path):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in names:
            total += (pathlib.Path(root) / name).stat().st_size
            files += 1
    return total, files


def _name(logical_id: str) -> str:
    return re.sub(r"[0-9A-F]{8}$", "", logical_id)


def package_bytes(cdk_out: pathlib.Path = CDK_OUT) -> dict[str, Any]:
    functions: dict[str, Any] = {}
    layers: dict[str, Any] = {}
    for template_path in sorted(cdk_out.glob("*.template.json")):
        template = json.loads(template_path.read_text())
        stack = template_path.name.removesuffix(".template.json")
        for logical_id, resource in template.get("Resources", {}).items():
            kind = resource.get("Type")
            asset = (resource.get("Metadata") or {}).get("aws:asset:path")
            if kind not in ("AWS::Lambda::Function", "AWS::Lambda::LayerVersion") or not asset:
                continue
            path = cdk_out / asset
            size, files = asset_bytes(path) if path.exists() else (0, 0)
            entry = {"bytes": size, "files": files, "asset": asset, "stack": stack}
            if kind == "AWS::Lambda::Function":
                handler = resource.get("Properties", {}).get("Handler")
                functions[f"{stack}/{_name(logical_id)}"] = {**entry, "handler": handler}
            else:
                layers.setdefault(asset, {**entry, "used_by": []})["used_by"].append(f"{stack}/{_name(logical_id)}")
    layer_total = sum(layer["bytes"] for layer in layers.values())
    misses = [
        f"{name}: {f['bytes']} bytes >= {FUNCTION_LIMIT}"
        for name, f in functions.items()
        if f["bytes"] >= FUNCTION_LIMIT
    ]
    empty = [name for name, f in functions.items() if f["files"] == 0]
    if layer_total >= LAYERS_LIMIT:
        misses.append(f"layers: {layer_total} bytes >= {LAYERS_LIMIT}")
    if not functions:
        misses.append(f"no function assets in {cdk_out} (run `make synth`)")
    out: dict[str, Any] = {
        "functions": functions,
        "layers": {pathlib.Path(k).name: v for k, v in layers.items()},
        "layers_total_bytes": layer_total,
        "function_limit_bytes": FUNCTION_LIMIT,
        "layers_limit_bytes": LAYERS_LIMIT,
        "met": not misses,
        "misses": misses,
    }
    if empty:
        out["empty_function_assets"] = empty
    return out
