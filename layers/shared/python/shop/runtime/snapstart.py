"""SnapStart: the state each execution environment restored from one snapshot must draw again.

After each restore the `random` module is reseeded (`install`), shop.ids' generator replaced and every hot-product
cache emptied (shop.services.hot_products' `clear_all`), so no restored environment starts from what the init drew
or read; the hooks are registered in a SnapStart init only. What else holds after a restore: docs/deploy.md,
"SnapStart (opt-in)".
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from typing import Any

SNAPSTART_INIT = "snap-start"

_installed = False


def snapshotting() -> bool:
    """Whether this process is the init Lambda will snapshot."""
    return os.environ.get("AWS_LAMBDA_INITIALIZATION_TYPE") == SNAPSTART_INIT


def after_restore(hook: Callable[[], Any]) -> None:
    """Run ``hook`` in every environment restored from this process's snapshot (no-op elsewhere)."""
    if snapshotting():
        from snapshot_restore_py import register_after_restore  # the Lambda runtime's own library

        register_after_restore(hook)


def install() -> None:
    """Reseed `random` from os.urandom after a restore; once per process (shop.runtime.lean_init.begin)."""
    global _installed
    if not _installed:
        _installed = True
        after_restore(random.seed)
