"""Run code in a fresh interpreter with a Lambda-like environment and read its last line as JSON."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
from typing import Any

REPO = pathlib.Path(__file__).resolve().parents[2]
LAMBDA_LIKE_ENV = {
    "PYTHONPATH": f"{REPO / 'layers/shared/python'}:{REPO}",
    "TABLE_NAME": "shop-test",
    "PAGINATION_SECRET": "x",
    "AWS_DEFAULT_REGION": "us-east-1",
    "POWERTOOLS_TRACE_DISABLED": "true",
    "PATH": "/usr/bin:/bin",
}


def fresh_python(code: str, env: dict[str, str] | None = None, timeout: int = 120) -> Any:
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=env or LAMBDA_LIKE_ENV,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
