"""A reader through a shard-count switch: `GET /orders?status=` walked over and over against `make dev`.

Each walk pages the listing to its end and prints one JSON line: its pages, items, the orders it returned
twice, and the orders it missed that were in the status all through it (in it at the same version before
and after the walk, read from the table: an order that changed status meanwhile may go). Run it in a second terminal
while `make migrate NAME=0002-move-status-shards` runs (docs/operations.md, "Changing the status index's
shard count"); a drill, outside `make test` (tests/repository/test_status_migration.py is the test).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time
import urllib.parse
import urllib.request
from typing import Any

from infra.settings import LOCAL_TABLE_NAME
from local_runtime import auth
from local_runtime.cli import DEFAULT_STATE_DIR
from local_runtime.dynamodb_local import FAKE_CREDENTIALS


def _get(base: str, token: str, path: str) -> Any:
    request = urllib.request.Request(base + path, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def main(argv: list[str] | None = None) -> int:
    import boto3

    parser = argparse.ArgumentParser(prog="python -m local_runtime.status_walk", description=__doc__)
    parser.add_argument("--port", type=int, default=3000, help="`make dev`'s API port")
    parser.add_argument("--dynamodb-port", type=int, default=8000)
    parser.add_argument("--table", default=LOCAL_TABLE_NAME)
    parser.add_argument("--data-dir", default=str(DEFAULT_STATE_DIR), help="`make dev`'s state (its token keys)")
    parser.add_argument("--status", default="PENDING")
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--walks", type=int, default=3)
    args = parser.parse_args(argv)
    token = auth.issue_token(auth.load_or_create_keys(pathlib.Path(args.data_dir)), "status-walk", groups=["admin"])
    ddb = boto3.client("dynamodb", endpoint_url=f"http://127.0.0.1:{args.dynamodb_port}", **FAKE_CREDENTIALS)
    base = f"http://127.0.0.1:{args.port}"
    failed = False
    for walk in range(1, args.walks + 1):
        before = _status_orders(ddb, args.table, args.status)
        seen: list[str] = []
        next_token, pages, started = None, 0, time.monotonic()
        while True:
            query = {"status": args.status, "limit": str(args.limit)} | (
                {"next_token": next_token} if next_token else {}
            )
            body = _get(base, token, "/orders?" + urllib.parse.urlencode(query))
            seen += [o["order_id"] for o in body["items"]]
            pages += 1
            next_token = body.get("next_token")
            if not next_token:
                break
        after = _status_orders(ddb, args.table, args.status)
        # in the status at the same version before and after the walk: unchanged, so in it throughout
        unchanged = {order_id for order_id, version in before.items() if after.get(order_id) == version}
        missing = sorted(unchanged - set(seen))
        doubled = sorted({o for o in seen if seen.count(o) > 1})
        failed |= bool(missing or doubled)
        report = {"walk": walk, "pages": pages, "items": len(seen), "seconds": round(time.monotonic() - started, 1)}
        print(json.dumps(report | {"doubled": doubled[:10], "missing": missing[:10]}), flush=True)
    return 1 if failed else 0


def _status_orders(ddb: Any, table: str, status: str) -> dict[str, int]:
    """Every order in `status` and its version (the drill's own Scan of the local table, never the shop's)."""
    found: dict[str, int] = {}
    kwargs: dict[str, Any] = {
        "TableName": table,
        "FilterExpression": "SK = :order AND #status = :status",
        "ExpressionAttributeNames": {"#status": "status"},
        "ExpressionAttributeValues": {":order": {"S": "ORDER"}, ":status": {"S": status}},
        "ProjectionExpression": "order_id, version",
        "ConsistentRead": True,
    }
    while True:
        page = ddb.scan(**kwargs)
        found.update({i["order_id"]["S"]: int(i["version"]["N"]) for i in page["Items"]})
        if "LastEvaluatedKey" not in page:
            return found
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


if __name__ == "__main__":
    sys.exit(main())
