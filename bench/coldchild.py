"""One cold start, run in a fresh interpreter: `python -I coldchild.py <request.json> <result.json>`.

Standard library only until the handler is imported; the handler is loaded as `local_runtime.worker` loads it.
"""

import time

STARTED = time.perf_counter()

import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO_ROOT)
from local_runtime.worker import LambdaContext, load_handler  # noqa: E402

sys.path.remove(REPO_ROOT)  # the handler sees Lambda's sys.path: its code dir, the layers, site-packages


def _count_calls(calls):
    """Every AWS API call the first invocation makes (each client goes through BaseClient._make_api_call)."""
    from botocore.client import BaseClient

    original = BaseClient._make_api_call

    def counted(self, operation_name, api_params):
        calls.append(operation_name)
        return original(self, operation_name, api_params)

    BaseClient._make_api_call = counted


def _top(profiler, limit=25):
    """The first call's heaviest functions by cumulative time (cProfile), as "file:line(function)" -> ms."""
    import pstats

    profiler.disable()
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]  # documented, not in typeshed
    rows = sorted(stats.items(), key=lambda kv: kv[1][3], reverse=True)[:limit]
    return [
        {"function": f"{os.path.basename(path)}:{line}({name})", "calls": calls, "cumulative_ms": round(cum * 1000, 1)}
        for (path, line, name), (_, calls, _, cum, _) in rows
    ]


def main():
    with open(sys.argv[1]) as source:
        request = json.load(source)
    for entry in reversed(request["sys_path"]):
        sys.path.insert(0, entry)
    os.chdir(request["code_dir"])
    before_import, before_import_cpu = time.perf_counter(), time.process_time()
    handler = load_handler(request["code_dir"], request["handler"])
    imported = time.perf_counter()
    profiler = None
    store_calls: list[str] = []
    if request.get("profile_first_call"):  # the profiling run only (its timings are not samples)
        import cProfile

        _count_calls(store_calls)
        profiler = cProfile.Profile()
        profiler.enable()
    result = handler(request["event"], LambdaContext(**request["context"]))
    invoked, invoked_cpu = time.perf_counter(), time.process_time()
    first_call = _top(profiler) if profiler is not None else None
    status = result.get("statusCode") if isinstance(result, dict) else None
    with open(sys.argv[2], "w") as sink:
        json.dump(
            {
                "startup_ms": (before_import - STARTED) * 1000,
                "import_ms": (imported - before_import) * 1000,
                "first_invoke_ms": (invoked - imported) * 1000,
                "total_ms": (invoked - before_import) * 1000,
                "total_cpu_ms": (invoked_cpu - before_import_cpu) * 1000,
                "status": status,
                "result": str(result)[:300],
                "modules": len(sys.modules),
                "first_call_profile": first_call,
                "store_calls": store_calls if profiler is not None else None,
            },
            sink,
        )


if __name__ == "__main__":
    main()
