"""One cold start, run in a fresh interpreter: `python -I coldchild.py <request.json> <result.json>`.

Standard library only until the handler is imported. Times the handler module's import (Lambda's
init) and its first invocation, the way the Lambda runtime loads `<code dir>/handler.py`.
"""

import time

STARTED = time.perf_counter()

import importlib.util  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
import uuid  # noqa: E402


class Context:
    def __init__(self, name):
        self.function_name = name
        self.function_version = "$LATEST"
        self.memory_limit_in_mb = 512
        self.invoked_function_arn = f"arn:aws:lambda:us-east-1:123456789012:function:{name}"
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{name}"
        self.log_stream_name = "cold"
        self.identity = None
        self.client_context = None
        self._deadline = time.monotonic() + 10

    def get_remaining_time_in_millis(self):
        return max(0, int((self._deadline - time.monotonic()) * 1000))


def main():
    with open(sys.argv[1]) as source:
        request = json.load(source)
    for entry in reversed(request["sys_path"]):
        sys.path.insert(0, entry)
    os.chdir(request["code_dir"])
    before_import = time.perf_counter()
    spec = importlib.util.spec_from_file_location("handler", os.path.join(request["code_dir"], "handler.py"))
    if spec is None or spec.loader is None:
        raise ImportError("no handler.py in " + request["code_dir"])
    module = importlib.util.module_from_spec(spec)
    sys.modules["handler"] = module
    spec.loader.exec_module(module)
    imported = time.perf_counter()
    result = module.handler(request["event"], Context(request["name"]))
    invoked = time.perf_counter()
    status = result.get("statusCode") if isinstance(result, dict) else None
    with open(sys.argv[2], "w") as sink:
        json.dump(
            {
                "startup_ms": (before_import - STARTED) * 1000,
                "import_ms": (imported - before_import) * 1000,
                "first_invoke_ms": (invoked - imported) * 1000,
                "total_ms": (invoked - before_import) * 1000,
                "status": status,
                "result": str(result)[:300],
                "modules": len(sys.modules),
            },
            sink,
        )


if __name__ == "__main__":
    main()
