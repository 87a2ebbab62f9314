"""A Lambda-like execution environment for one function: import once (init), then invoke per request.

Run by `functions.FunctionPool` (`python -I worker.py <init json>`), also imported in-process (docs/local-runtime.md,
"Execution"). Standard library only at module level: a worker has only the runtime's site-packages, and the bench's
cold-start child imports this module before it times the handler's import.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
import uuid
import warnings

TYPE_CHECKING = False  # typing is for the type checker only (see above)
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType
    from typing import Any


class LambdaContext:
    """The attributes and method of the Python runtime's context object."""

    def __init__(
        self,
        *,
        function_name: str,
        memory_limit_in_mb: int,
        invoked_function_arn: str,
        timeout_s: float,
        aws_request_id: str | None = None,
    ) -> None:
        self.function_name = function_name
        self.function_version = "$LATEST"
        self.memory_limit_in_mb = int(memory_limit_in_mb)
        self.invoked_function_arn = invoked_function_arn
        self.aws_request_id = aws_request_id or str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{function_name}"
        self.log_stream_name = time.strftime("%Y/%m/%d/[$LATEST]") + os.urandom(16).hex()
        self.identity = None
        self.client_context = None
        self.tenant_id = None
        self._deadline = time.monotonic() + timeout_s

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


def import_handler_module(
    code_dir: str, module_name: str, alias: str | None = None, *, isolated: bool = False
) -> ModuleType:
    """Import `<code_dir>/<module>.py` as the Lambda runtime imports a handler's module, under `alias`
    (default: its own name), so that same-named modules of several functions are kept apart.

    `isolated`, for several functions in one interpreter: the code dir is first on sys.path only
    while the module is imported, and the modules imported from it (the function's own siblings)
    leave sys.modules afterwards, so another function's same-named ones come from its own folder.
    """
    path = os.path.join(code_dir, *module_name.split(".")) + ".py"
    alias = alias or module_name
    spec = importlib.util.spec_from_file_location(alias, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"Unable to import module '{module_name}': no {path}")
    module = importlib.util.module_from_spec(spec)
    before = set(sys.modules)
    if isolated:
        sys.path.insert(0, code_dir)
    sys.modules[alias] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(alias, None)
        raise
    finally:
        if isolated:
            sys.path.remove(code_dir)
            for name in set(sys.modules) - before - {alias}:
                if (getattr(sys.modules[name], "__file__", None) or "").startswith(code_dir + os.sep):
                    del sys.modules[name]
    return module


def load_handler(
    code_dir: str, handler: str, module_alias: str | None = None, *, isolated: bool = False
) -> Callable[..., Any]:
    """The function a Handler setting (`<module>.<function>`) names in code_dir; see import_handler_module."""
    module_name, _, attr = handler.rpartition(".")
    module = import_handler_module(code_dir, module_name, module_alias, isolated=isolated)
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise AttributeError(f"Handler '{attr}' missing on module '{module_name}'")
    return fn


def error_payload(exc: BaseException, request_id: str) -> dict[str, Any]:
    import traceback

    return {
        "errorMessage": str(exc),
        "errorType": type(exc).__name__,
        "requestId": request_id,
        "stackTrace": traceback.format_exception(exc)[1:],
    }


def call(fn: Callable[..., Any], event: Any, context: LambdaContext) -> dict[str, Any]:
    """Invoke and serialise like the runtime: {"ok": true, "result": ...} or the error payload."""
    try:
        result = fn(event, context)
        return {"ok": True, "result": json.loads(json.dumps(result))}
    except Exception as exc:
        import traceback

        traceback.print_exc(file=sys.stderr)
        return {"ok": False, "error": error_payload(exc, context.aws_request_id)}


class StoreFaults:
    """A before-send hook for every DynamoDB client of this worker: while the drill's fault file says
    so, a share of the calls is answered with throttling, as DynamoDB answers a throttled request.

    The file holds {"throttle_rate": 0.3, "until": <epoch seconds>}; it is re-read when it changes.
    """

    CODES = ("ThrottlingException", "ProvisionedThroughputExceededException")

    def __init__(self, path: str) -> None:
        self.path = path
        self._seen: float | None = None
        self._rate = 0.0
        self._until = 0.0

    def _refresh(self) -> None:
        try:
            mtime = os.stat(self.path).st_mtime
        except OSError:
            self._rate = 0.0
            return
        if mtime != self._seen:
            self._seen = mtime
            try:
                with open(self.path, encoding="utf-8") as spec_file:
                    spec = json.load(spec_file)
            except (OSError, ValueError):
                return
            self._rate, self._until = float(spec.get("throttle_rate", 0)), float(spec.get("until", 0))

    def __call__(self, request: Any, **_: Any) -> Any:
        import random

        self._refresh()
        if time.time() >= self._until or random.random() >= self._rate:
            return None
        from botocore.awsrequest import AWSResponse

        code = random.choice(self.CODES)
        body = json.dumps({"__type": f"com.amazonaws.dynamodb.v20120810#{code}", "message": "injected by a drill"})
        print(f"drill: injected {code}", file=sys.stderr)
        headers = {"x-amzn-requestid": "drill", "Content-Type": "application/x-amz-json-1.0"}
        return AWSResponse(request.url, 400, headers, _Body(body.encode()))


class _Body:
    def __init__(self, data: bytes) -> None:
        self._data = data

    def stream(self, **_: Any) -> Any:
        yield self._data

    def read(self, *_: Any, **__: Any) -> bytes:
        return self._data


def install_store_faults(path: str) -> None:
    """Every botocore session created from now on (the function's clients) gets the hook."""
    from botocore import handlers

    handlers.BUILTIN_HANDLERS.append(("before-send.dynamodb", StoreFaults(path)))


def main() -> None:
    init = json.loads(sys.argv[1])
    # Private protocol channel = the original stdout; the function's prints go to stderr.
    proto = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = os.fdopen(1, "w", buffering=1, encoding="utf-8", closefd=False)
    for entry in reversed(init["sys_path"]):
        sys.path.insert(0, entry)
    os.chdir(init["code_dir"])
    # Powertools warns on every invocation that emits no metric; on AWS that line is a cost of the log group,
    # here it would be one per request in the function's log: the same output without it.
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    if os.environ.get("LOCAL_STORE_FAULTS_FILE"):
        install_store_faults(os.environ["LOCAL_STORE_FAULTS_FILE"])
    fn: Callable[..., Any] | None = None
    init_error: dict[str, Any] | None = None
    try:
        fn = load_handler(init["code_dir"], init["handler"])
    except Exception as exc:
        import traceback

        traceback.print_exc(file=sys.stderr)
        init_error = error_payload(exc, "init")
        init_error["errorType"] = "Runtime.ImportModuleError"
    proto.write(json.dumps({"ready": init_error is None, "error": init_error}) + "\n")
    for line in sys.stdin:
        request = json.loads(line)
        if fn is None:
            proto.write(json.dumps({"ok": False, "error": init_error}) + "\n")
            continue
        context = LambdaContext(
            function_name=init["function_name"],
            memory_limit_in_mb=init["memory_mb"],
            invoked_function_arn=init["arn"],
            timeout_s=init["timeout_s"],
            aws_request_id=request["request_id"],
        )
        proto.write(json.dumps(call(fn, request["event"], context)) + "\n")


if __name__ == "__main__":
    main()
