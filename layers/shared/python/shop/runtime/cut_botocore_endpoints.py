"""Cut botocore_endpoints.json again from the installed botocore (after upgrading it).

`PYTHONPATH=layers/shared/python python -m shop.runtime.cut_botocore_endpoints`: botocore's own endpoints.json with
only the services the shop's clients call (shop.runtime.botocore_clients reads it while it matches botocore's
version); tests/unit/test_botocore_clients.py fails until the committed file is cut from the installed botocore.
"""

from __future__ import annotations

import json
from typing import Any

from shop.runtime.botocore_clients import ENDPOINT_PREFIXES, ENDPOINTS_FILE


def cut_endpoints(full: dict[str, Any], botocore_version: str) -> dict[str, Any]:
    """botocore's endpoints.json with only the shop's services in each partition (every other field as is)."""
    keep = set(ENDPOINT_PREFIXES.values())
    partitions = [
        {**partition, "services": {k: v for k, v in partition["services"].items() if k in keep}}
        for partition in full["partitions"]
    ]
    return {**full, "partitions": partitions, "botocore": botocore_version}


def main() -> None:
    import botocore
    from botocore.loaders import Loader

    full = Loader(include_default_search_paths=False, extra_search_paths=[Loader.BUILTIN_DATA_PATH]).load_data(
        "endpoints"
    )
    cut = cut_endpoints(full, botocore.__version__)
    ENDPOINTS_FILE.write_text(json.dumps(cut, sort_keys=True, separators=(",", ":")) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
