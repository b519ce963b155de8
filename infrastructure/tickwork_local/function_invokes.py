"""Lambda's synchronous Invoke of the stack's own functions, played locally: moto's Lambda runs function code only
in Docker, so an Invoke of a function this node runs (the job sandbox, JobSandboxFunction) is answered by running
it in its local execution environments (tickwork_local.lambda_runtime), as Lambda would run it.

It hooks botocore's `before-call.lambda.Invoke` on the sessions of the functions that invoke (the executor's): the
call goes through the client as against AWS (its parameters built, its events emitted, counted by whoever counts
them), and its answer has Invoke's shape: StatusCode 200 and the handler's JSON answer as Payload, or, when the
handler raised, FunctionError "Unhandled" and Lambda's error body. An Invoke of any other function is left to moto.
Nothing here is imported by a function.
"""

from __future__ import annotations

import io
import json
import threading
from typing import Any, Protocol
from urllib.parse import unquote

from botocore.awsrequest import AWSResponse, HTTPHeaders
from botocore.response import StreamingBody


class Invokable(Protocol):
    """A locally run function (FunctionRuntime, ProcessFunctionRuntime)."""

    def invoke(self, event: Any) -> Any: ...


class _Body:
    def __init__(self, data: bytes) -> None:
        self._data = data

    def stream(self, **_: Any) -> Any:
        yield self._data


class LocalInvokes:
    """The functions an Invoke is played for, by name (the name Lambda would know them by)."""

    def __init__(self) -> None:
        self._functions: dict[str, Invokable] = {}
        self._lock = threading.Lock()
        self.invocations = 0

    def serve(self, function_name: str, function: Invokable) -> None:
        with self._lock:
            self._functions[function_name] = function

    def withdraw_all(self) -> None:
        """Play no function any more (an Invoke then goes on to the endpoint, as for a function not served)."""
        with self._lock:
            self._functions.clear()

    def register(self, events: Any) -> None:
        """Hook into a botocore session's (or client's) event system: its clients built from now on."""
        events.register("before-call.lambda.Invoke", self._before_call)

    def _before_call(self, params: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
        name = _function_name(str(params.get("url_path", "")))
        with self._lock:
            function = self._functions.get(name)
        if function is None:
            return None
        event = json.loads(params.get("body") or b"null")
        try:
            answer = function.invoke(event)
            body, error = json.dumps(answer).encode(), None
        except Exception as exc:  # the handler's error: Lambda's function error, with its body
            payload = getattr(exc, "payload", None)  # ProcessFunctionRuntime's FunctionError carries Lambda's own
            if not isinstance(payload, dict):
                payload = {"errorType": type(exc).__name__, "errorMessage": str(exc)}
            body, error = json.dumps(payload).encode(), "Unhandled"
        with self._lock:
            self.invocations += 1
        parsed: dict[str, Any] = {
            "StatusCode": 200,
            "ExecutedVersion": "$LATEST",
            "Payload": StreamingBody(io.BytesIO(body), len(body)),
            "ResponseMetadata": {"HTTPStatusCode": 200, "HTTPHeaders": {}, "RetryAttempts": 0},
        }
        if error is not None:
            parsed["FunctionError"] = error
        return AWSResponse(str(params.get("url", "")), 200, HTTPHeaders(), _Body(b"")), parsed


def _function_name(url_path: str) -> str:
    """The function an Invoke's path names: /2015-03-31/functions/<name, ARN or partial ARN>/invocations."""
    _, _, rest = url_path.partition("/functions/")
    name = unquote(rest.split("/", 1)[0])
    if name.startswith("arn:"):
        parts = name.split(":")
        name = parts[6] if len(parts) > 6 else name
    return name
