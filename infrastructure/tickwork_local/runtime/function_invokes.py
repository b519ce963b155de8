"""Lambda's synchronous Invoke of the stack's own functions, played locally: moto's Lambda runs function code only
in Docker, so an Invoke of a function this node runs (the job sandbox, JobSandboxFunction) is answered by running
it in its local execution environments (tickwork_local.runtime.lambda_runtime), as Lambda would run it.

It hooks botocore's `before-call.lambda.Invoke` on the sessions of the functions that invoke (the executor's, and
the tick's warming invocations of the executor): the call goes through the client as against AWS (its parameters
built, its events emitted, counted by whoever counts them), and its answer has Invoke's shape: StatusCode 200 and
the handler's JSON answer as Payload, or, when the handler raised, FunctionError "Unhandled" and Lambda's error body.
An asynchronous Invoke (InvocationType Event) is answered 202 at once and run on a thread of its own, as Lambda
queues it. An Invoke of any other function is left to moto.
Nothing here is imported by a function.
"""

from __future__ import annotations

import io
import json
import logging
import re
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit

from botocore.awsrequest import AWSResponse, HTTPHeaders
from botocore.response import StreamingBody

# Lambda's Invoke: POST /2015-03-31/functions/<name, ARN or partial ARN>/invocations.
INVOKE_PATH = re.compile(r"^/2015-03-31/functions/[^/]+/invocations$")
log = logging.getLogger("tickwork_local.runtime.function_invokes")


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
        self._queued: list[threading.Thread] = []  # asynchronous invocations running or done

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

    def answer(self, url_path: str, body: bytes | None, *, queued: bool = False) -> tuple[bytes, str | None] | None:
        """Invoke's answer for a function this node plays (None for any other): the handler's JSON, or Lambda's
        error body with the function error "Unhandled" when the handler raised; `queued` (InvocationType Event):
        an empty answer at once, the invocation run on a thread of its own."""
        name = _function_name(url_path)
        with self._lock:
            function = self._functions.get(name)
        if function is None:
            return None
        event = json.loads(body or b"null")
        if queued:
            thread = threading.Thread(target=self._run_queued, args=(function, event), name="invoke-event", daemon=True)
            with self._lock:
                self._queued = [t for t in self._queued if t.is_alive()] + [thread]
            thread.start()
            return b"", None
        try:
            answer, error = json.dumps(function.invoke(event)).encode(), None
        except Exception as exc:  # the handler's error: Lambda's function error, with its body
            payload = getattr(exc, "payload", None)  # ProcessFunctionRuntime's FunctionError carries Lambda's own
            if not isinstance(payload, dict):
                payload = {"errorType": type(exc).__name__, "errorMessage": str(exc)}
            answer, error = json.dumps(payload).encode(), "Unhandled"
        with self._lock:
            self.invocations += 1
        return answer, error

    def _run_queued(self, function: Invokable, event: Any) -> None:
        try:
            function.invoke(event)
        except Exception:  # Lambda logs an asynchronous invocation's error; its caller never sees it
            log.exception("an asynchronous invocation failed")
        with self._lock:
            self.invocations += 1

    def settle(self, timeout: float = 30.0) -> bool:
        """Wait for the asynchronous invocations started so far to end; False if some still run at the deadline."""
        with self._lock:
            queued = list(self._queued)
        deadline = time.monotonic() + timeout
        for thread in queued:
            thread.join(max(0.0, deadline - time.monotonic()))
        return not any(t.is_alive() for t in queued)

    def _before_call(self, params: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
        headers = params.get("headers") or {}
        queued = str(headers.get("X-Amz-Invocation-Type", "")) == "Event"
        answered = self.answer(str(params.get("url_path", "")), params.get("body"), queued=queued)
        if answered is None:
            return None
        body, error = answered
        status = 202 if queued else 200
        parsed: dict[str, Any] = {
            "StatusCode": status,
            "ExecutedVersion": "$LATEST",
            "Payload": StreamingBody(io.BytesIO(body), len(body)),
            "ResponseMetadata": {"HTTPStatusCode": status, "HTTPHeaders": {}, "RetryAttempts": 0},
        }
        if error is not None:
            parsed["FunctionError"] = error
        return AWSResponse(str(params.get("url", "")), status, HTTPHeaders(), _Body(b"")), parsed


class InvokeEndpoint:
    """Lambda's Invoke over HTTP on loopback, for the functions that run in processes of their own (`--built`),
    whose SDK calls no hook of this process sees: their Lambda client is pointed here (AWS_ENDPOINT_URL_LAMBDA).
    A function `invokes` plays is answered as Lambda answers (200, the payload, `X-Amz-Function-Error` when the
    handler raised); any other request goes on to `upstream` (moto) as it came."""

    def __init__(self, invokes: LocalInvokes, upstream: str, host: str = "127.0.0.1") -> None:
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                queued = self.headers.get("X-Amz-Invocation-Type") == "Event"
                path = urlsplit(self.path).path
                answered = invokes.answer(path, body, queued=queued) if "/functions/" in self.path else None
                if answered is None:
                    endpoint.forward(self, body)
                    return
                payload, error = answered
                self.send_response(202 if queued else 200)
                self.send_header("Content-Type", "application/json")
                self.send_header("X-Amz-Executed-Version", "$LATEST")
                if error is not None:
                    self.send_header("X-Amz-Function-Error", error)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self) -> None:
                endpoint.forward(self, None)

            def do_DELETE(self) -> None:
                endpoint.forward(self, None)

            def do_PUT(self) -> None:
                endpoint.forward(self, self.rfile.read(int(self.headers.get("Content-Length") or 0)))

            def log_message(self, *args: Any) -> None:
                pass

        self.upstream = upstream.rstrip("/")
        self.server = ThreadingHTTPServer((host, 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://{host}:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, name="invoke-endpoint", daemon=True)

    def start(self) -> str:
        self._thread.start()
        return self.url

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def forward(self, request: BaseHTTPRequestHandler, body: bytes | None) -> None:
        """The request as it came, to the upstream endpoint, and its answer back."""
        headers = {k: v for k, v in request.headers.items() if k.lower() not in ("host", "content-length")}
        sent = urllib.request.Request(  # noqa: S310 - the local endpoint's http URL
            self.upstream + request.path, data=body, method=request.command, headers=headers
        )
        try:
            with urllib.request.urlopen(sent, timeout=60) as answer:  # noqa: S310
                status, answer_headers, data = answer.status, answer.headers, answer.read()
        except urllib.error.HTTPError as exc:
            status, answer_headers, data = exc.code, exc.headers, exc.read()
        request.send_response(status)
        for name, value in answer_headers.items():
            if name.lower() not in ("content-length", "transfer-encoding", "connection", "server", "date"):
                request.send_header(name, value)
        request.send_header("Content-Length", str(len(data)))
        request.end_headers()
        request.wfile.write(data)


def _function_name(url_path: str) -> str:
    """The function an Invoke's path names: /2015-03-31/functions/<name, ARN or partial ARN>/invocations."""
    _, _, rest = url_path.partition("/functions/")
    name = unquote(rest.split("/", 1)[0])
    if name.startswith("arn:"):
        parts = name.split(":")
        name = parts[6] if len(parts) > 6 else name
    return name
