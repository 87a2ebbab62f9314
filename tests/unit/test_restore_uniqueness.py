"""SnapStart (docs/deploy.md, "SnapStart (opt-in)"): environments restored from one snapshot share nothing random.

A restore resumes many environments from one copy of the initialized process. `os.fork()` of an
initialized interpreter is the same thing but for CPython's own at-fork hooks, which reseed
`random` in the child; Lambda runs no such hook. So each child first puts `random` back to the
parent's state (the snapshot's), then runs the after-restore hooks the handler's import registered,
as Lambda's runtime does, then draws ids, session tokens and retry jitter for the parent to compare.
Every scenario runs in a fresh interpreter, with the handler imported as Lambda imports it.
"""

from __future__ import annotations

import pytest

from tests.support.fresh_python import LAMBDA_LIKE_ENV, fresh_python

SNAPSTART_INIT = {**LAMBDA_LIKE_ENV, "AWS_LAMBDA_INITIALIZATION_TYPE": "snap-start"}
DRAWS = 2000

# The part of Lambda's `snapshot_restore_py` the runtime uses after a restore: a registry of hooks.
FAKE_RUNTIME_LIBRARY = """
import sys, types
library = types.ModuleType("snapshot_restore_py")
library.after_restore = []
def register_after_restore(func, *args, **kwargs):
    library.after_restore.append((func, args, kwargs))
    return func
library.register_after_restore = register_after_restore
library.get_after_restore = lambda: library.after_restore
sys.modules["snapshot_restore_py"] = library
"""

IMPORT_HANDLER = """
from local_runtime.worker import import_handler_module
def import_handler(function):
    return import_handler_module(f"functions/{function}", "handler")
"""

RESTORE_TWICE = (
    FAKE_RUNTIME_LIBRARY
    + IMPORT_HANDLER
    + f"""
import json, os, random, time
import_handler("orders")
from shop import aws_config, ids
from shop.repository import pagination

# the worst case for ids: every environment restored within the snapshot's millisecond
frozen_ns = time.time_ns()
time.time_ns = lambda: frozen_ns
# draws an init could make (a warm-up call, say): they are part of the snapshot
primed = {{"ids": [ids.new_id() for _ in range(50)], "session": ids.new_session_id(), "jitter": random.random()}}
snapshot = random.getstate()

def restored(run_hooks):
    random.setstate(snapshot)  # undo CPython's at-fork reseed: a restore has none
    if run_hooks:
        for func, args, kwargs in library.get_after_restore():
            func(*args, **kwargs)
    return {{
        "ids": [ids.new_id() for _ in range({DRAWS})],
        "sessions": [ids.new_session_id() for _ in range({DRAWS})],
        "jitter": [random.random() for _ in range(16)],
        "conflict_delays": [aws_config.conflict_delay(6) for _ in range(16)],
        "page_token": pagination.encode("orders:PENDING", {{"GSI1SK": "2026-01-01T00:00:00.000000Z#X"}}),
    }}

def child(run_hooks):
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        status = 1
        try:
            with os.fdopen(write, "wb") as sink:
                sink.write(json.dumps(restored(run_hooks)).encode())
            status = 0
        finally:
            os._exit(status)
    os.close(write)
    return pid, read

children = [child(True), child(True), child(False), child(False)]
results = []
for pid, read in children:
    with os.fdopen(read, "rb") as source:
        data = source.read()
    _, status = os.waitpid(pid, 0)
    assert status == 0, status
    results.append(json.loads(data))
token = pagination.encode("orders:PENDING", {{"GSI1SK": "2026-01-01T00:00:00.000000Z#X"}})
print(json.dumps({{"primed": primed, "restored": results[:2], "unhooked": results[2:], "page_token": token}}))
"""
)


@pytest.fixture(scope="module")
def restores() -> dict:
    return fresh_python(RESTORE_TWICE, SNAPSTART_INIT)


def test_two_restored_environments_never_issue_the_same_id(restores) -> None:
    first, second = (set(r["ids"]) for r in restores["restored"])
    assert len(first) == len(second) == DRAWS
    assert not first & second
    assert not (first | second) & set(restores["primed"]["ids"])


def test_two_restored_environments_never_issue_the_same_session_token(restores) -> None:
    first, second = (set(r["sessions"]) for r in restores["restored"])
    assert len(first) == len(second) == DRAWS
    assert not first & second
    assert restores["primed"]["session"] not in first | second


def test_two_restored_environments_draw_different_retry_jitter(restores) -> None:
    first, second = restores["restored"]
    assert first["jitter"] != second["jitter"]
    assert first["conflict_delays"] != second["conflict_delays"]
    assert restores["primed"]["jitter"] not in first["jitter"] + second["jitter"]


def test_without_the_hooks_a_snapshot_shares_its_generators_state(restores) -> None:
    """The control: what the hooks prevent. os.urandom (session tokens) needs none."""
    first, second = restores["unhooked"]
    # ULIDs of one millisecond count up from the last one: the snapshot's, in both environments
    assert first["ids"] == second["ids"]
    assert first["jitter"] == second["jitter"]
    assert first["conflict_delays"] == second["conflict_delays"]
    assert not set(first["sessions"]) & set(second["sessions"])


def test_a_page_token_carries_no_nonce_to_share(restores) -> None:
    """A token is a pure function of the key and the position: every environment signs it alike."""
    tokens = {r["page_token"] for r in restores["restored"]} | {restores["page_token"]}
    assert len(tokens) == 1


@pytest.mark.parametrize("function", ["customers", "products", "orders", "sessions", "order_events"])
def test_a_snapstart_init_registers_the_reseed_and_holds_no_aws_client(function) -> None:
    found = fresh_python(
        FAKE_RUNTIME_LIBRARY
        + IMPORT_HANDLER
        + f"import_handler({function!r})\n"
        + "import json, random\n"
        + "from shop import pagination_keys, publishing\n"
        + "from shop.repository import store\n"
        + "hooks = [f'{func.__module__}.{func.__qualname__}' for func, _, _ in library.get_after_restore()]\n"
        + "print(json.dumps({'hooks': hooks, 'reseed': any(f is random.seed for f, _, _ in library.after_restore),"
        + " 'clients': [store._client is not None, publishing._client is not None,"
        + " pagination_keys._providers.cache_info().currsize > 0], 'ids': 'shop.ids' in sys.modules}))",
        SNAPSTART_INIT,
    )
    assert found["reseed"], found["hooks"]
    assert ("shop.ids._forget_last_id" in found["hooks"]) == found["ids"]
    # clients (and so credentials and connections) are made by the first invocation, after the restore
    assert found["clients"] == [False, False, False]


def test_outside_a_snapstart_init_nothing_is_imported_or_registered() -> None:
    found = fresh_python(
        IMPORT_HANDLER
        + "import_handler('orders')\n"
        + "import json, sys\n"
        + "print(json.dumps({'library': 'snapshot_restore_py' in sys.modules}))",
        LAMBDA_LIKE_ENV,
    )
    assert found == {"library": False}
