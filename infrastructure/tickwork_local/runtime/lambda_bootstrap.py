"""A Lambda runtime client for a built function: what Lambda's Python runtime does in its execution environment.

Run by the functions' own interpreter with `-I -S` (no site-packages, no PYTHONPATH), so the handler sees only
what Lambda gives it: its code (LAMBDA_TASK_ROOT), its layers (what /opt/python holds, TICKWORK_LAYER_PATHS)
and the standard library. It speaks the Lambda Runtime API (AWS_LAMBDA_RUNTIME_API): it fetches the next
invocation, calls the handler with the event and a context, and posts the response or the error; an import
failure is posted to init/error. Standard library only: nothing of the development environment is imported.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
import urllib.request
from typing import Any

API_VERSION = "2018-06-01"


class LambdaContext:
    """The context object a Lambda Python handler receives."""

    def __init__(self, request_id: str, deadline_ms: int, function_arn: str) -> None:
        self.aws_request_id = request_id
        self.invoked_function_arn = function_arn
        self.function_name = os.environ.get("AWS_LAMBDA_FUNCTION_NAME", "")
        self.function_version = os.environ.get("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        self.memory_limit_in_mb = int(os.environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128"))
        self.log_group_name = os.environ.get("AWS_LAMBDA_LOG_GROUP_NAME", "")
        self.log_stream_name = os.environ.get("AWS_LAMBDA_LOG_STREAM_NAME", "")
        self.identity = None
        self.client_context = None
        self._deadline_ms = deadline_ms

    def get_remaining_time_in_millis(self) -> int:
        return max(0, self._deadline_ms - int(time.time() * 1000))


def _post(url: str, body: Any, headers: dict[str, str] | None = None) -> None:
    data = json.dumps(body).encode()
    request = urllib.request.Request(  # noqa: S310 - the Runtime API on loopback
        url, data=data, method="POST", headers={"Content-Type": "application/json"}
    )
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    with urllib.request.urlopen(request, timeout=30):  # noqa: S310 - the Runtime API on loopback
        pass


def _error(exc: BaseException) -> dict[str, Any]:
    return {
        "errorMessage": str(exc),
        "errorType": type(exc).__name__,
        "stackTrace": traceback.format_exception(type(exc), exc, exc.__traceback__),
    }


def _set_path() -> None:
    """Lambda's order: the function's code, then the layers' folders (TICKWORK_LAYER_PATHS), then the stdlib."""
    layers = [path for path in os.environ.get("TICKWORK_LAYER_PATHS", "").split(os.pathsep) if path]
    sys.path[:] = [os.environ["LAMBDA_TASK_ROOT"], *layers, *sys.path[1:]]  # sys.path[0], this folder, is not Lambda's


def main() -> None:
    _set_path()
    base = f"http://{os.environ['AWS_LAMBDA_RUNTIME_API']}/{API_VERSION}/runtime"
    module_name, _, function_name = os.environ["_HANDLER"].rpartition(".")
    try:
        module = __import__(module_name)
        handler = getattr(module, function_name)
    except Exception as exc:
        _post(f"{base}/init/error", _error(exc), {"Lambda-Runtime-Function-Error-Type": "Runtime.ImportModuleError"})
        raise SystemExit(1) from exc
    while True:
        with urllib.request.urlopen(f"{base}/invocation/next", timeout=None) as answer:  # noqa: S310
            request_id = answer.headers["Lambda-Runtime-Aws-Request-Id"]
            deadline_ms = int(answer.headers["Lambda-Runtime-Deadline-Ms"])
            arn = answer.headers.get("Lambda-Runtime-Invoked-Function-Arn", "")
            event = json.loads(answer.read() or b"null")
        context = LambdaContext(request_id, deadline_ms, arn)
        try:
            result = handler(event, context)
        except Exception as exc:
            _post(
                f"{base}/invocation/{request_id}/error",
                _error(exc),
                {"Lambda-Runtime-Function-Error-Type": "Unhandled"},
            )
            continue
        sys.stdout.flush()
        _post(f"{base}/invocation/{request_id}/response", result)


if __name__ == "__main__":
    main()
