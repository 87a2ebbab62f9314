"""SnapStart: the state each execution environment restored from one snapshot must draw again.

With `-c snapstart=true` Lambda snapshots a function's process after its init and restores many
environments from that one snapshot, so whatever the init drew is shared by all of them. Ids and
tokens are drawn at call time from os.urandom (shop.ids, `secrets`), and no AWS client, connection
or credential exists before the first invocation. What the init does hold: the `random` module's
state, seeded when it was imported (retry jitter here and in botocore), and the last id of shop.ids.
Both are redrawn after a restore.

Hooks go through `snapshot_restore_py`, which Lambda's Python runtimes (3.12+) provide and run after
each restore. They are registered during a SnapStart init only (AWS_LAMBDA_INITIALIZATION_TYPE):
elsewhere, on Lambda or off it, nothing is imported or registered.
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
    """Reseed `random` from os.urandom after a restore; once per process (shop.startup.begin)."""
    global _installed
    if not _installed:
        _installed = True
        after_restore(random.seed)
