"""Run in `python3.13 -I -S layer_child.py <request.json> <result.json>`: sys.path is exactly the request's (a function's
code and its layers as deployed, and the runtime's boto3); standard library only until then.

- `modules`: import each, report those that fail and why (ModuleNotFoundError's missing name);
- `handlers`: {function: [event, ...]}: load each function's handler as Lambda does and call it with its events
  in order, report each answer's status (or the exception's type and message);
- `missing`: every module name an import looked for and did not find, whoever caught the ImportError;
- `warnings`: every warning shown (as `Category: message`), after the filters the code installs.
"""

import importlib
import json
import os
import sys
import traceback
import warnings


class Context:
    function_name = "layer-test"
    function_version = "$LATEST"
    invoked_function_arn = "arn:aws:lambda:us-east-1:111111111111:function:layer-test"
    memory_limit_in_mb = 512
    aws_request_id = "layer-test-request"
    log_group_name = "/aws/lambda/layer-test"
    log_stream_name = "layer-test"

    @staticmethod
    def get_remaining_time_in_millis():
        return 30_000


def _failure(error):
    return {
        "type": type(error).__name__,
        "missing": getattr(error, "name", None) if isinstance(error, ImportError) else None,
        "message": str(error)[:300],
        "trace": traceback.format_exc()[-1500:],
    }


class Missing:
    """Last on sys.meta_path: sees every import no other finder could satisfy (swallowed ones too: a stream batch
    turns an ImportError in a record's handling into a failed record), and lets it fail as before."""

    names: list = []  # one list for the process

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        cls.names.append(name)


def main():
    with open(sys.argv[1]) as source:
        request = json.load(source)
    sys.path[:0] = request["sys_path"]
    sys.meta_path.append(Missing)
    shown: list = []
    warnings.showwarning = lambda message, category, *args, **kwargs: shown.append(f"{category.__name__}: {message}")
    result: dict = {"failed": {}, "answers": {}, "paths": {}, "missing": Missing.names, "warnings": shown}
    for name in request.get("modules", []):
        try:
            importlib.import_module(name)
        except Exception as error:  # every failure is reported, the test judges it
            result["failed"][name] = _failure(error)
    for function, events in request.get("handlers", {}).items():
        code_dir = os.path.join(request["functions_dir"], function)
        sys.path.insert(0, code_dir)
        sys.modules.pop("handler", None)
        try:
            module = importlib.import_module("handler")
        except Exception as error:
            result["failed"][f"{function}.handler"] = _failure(error)
            continue
        finally:
            sys.path.remove(code_dir)
        answers = []
        for event in events:
            try:
                reply = module.handler(event, Context())
                answers.append(reply.get("statusCode") if isinstance(reply, dict) and "statusCode" in reply else reply)
            except Exception as error:
                answers.append(_failure(error))
        result["answers"][function] = answers
    result["paths"] = {
        name: getattr(sys.modules[name], "__file__", None)
        for name in ("pydantic_core", "aws_lambda_powertools", "stripe", "requests", "wrapt._wrappers")
        if name in sys.modules
    }
    with open(sys.argv[2], "w") as sink:
        json.dump(result, sink)


if __name__ == "__main__":
    main()
