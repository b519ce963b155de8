"""A built function run as Lambda runs it: each execution environment is a process of the functions' own Python,
holding only the function's built code and its built layers (tickwork_local.stack.build), and fed through the
Lambda Runtime API, which this module serves on loopback (one endpoint per environment, as in Lambda).

`ProcessFunctionRuntime` answers as `lambda_runtime.FunctionRuntime` does (`warm`, `invoke`), so the local
node and the tests use either. The processes' stdout (Powertools' JSON logs, EMF lines) is written to this
process's stdout, where the local CloudWatch picks the EMF lines up; their stderr to this stderr.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TextIO

from tickwork_local.aws.provision import LOCAL_ACCOUNT_ID
from tickwork_local.runtime.lambda_runtime import REGION, EnvironmentPool, FunctionConfig

BOOTSTRAP = Path(__file__).with_name("lambda_bootstrap.py")
API_PREFIX = "/2018-06-01/runtime"
INIT_TIMEOUT_SECONDS = 60.0  # Lambda's init phase is bounded at 10 s; a loaded 2-core machine needs more


class FunctionError(RuntimeError):
    """The handler raised: Lambda's function error, with the error's type and message."""

    def __init__(self, payload: Mapping[str, Any]) -> None:
        self.error_type = str(payload.get("errorType", "Error"))
        self.payload = dict(payload)
        super().__init__(f"{self.error_type}: {payload.get('errorMessage', '')}")


class InitError(FunctionError):
    """The function's module failed to import (Runtime.ImportModuleError), or its process ended first."""


class FunctionTimeout(RuntimeError):
    """The invocation outlived the function's timeout: its environment is ended, as Lambda ends it."""


@dataclass
class _Invocation:
    event: Any
    deadline_ms: int
    request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    done: threading.Event = field(default_factory=threading.Event)
    result: Any = None
    error: FunctionError | None = None


class _RuntimeApi(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, function_arn: str) -> None:
        super().__init__(("127.0.0.1", 0), _RuntimeApiHandler)
        self.function_arn = function_arn
        self.pending: queue.Queue[_Invocation | None] = queue.Queue()
        self.in_flight: dict[str, _Invocation] = {}
        self.ready = threading.Event()  # the first GET next: the module is imported
        self.init_error: InitError | None = None

    @property
    def address(self) -> str:
        host, port = self.server_address[:2]
        return f"{host!s}:{port}"


class _RuntimeApiHandler(BaseHTTPRequestHandler):
    server: _RuntimeApi

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(length) or b"null")

    def _answer(self, status: int, body: bytes = b"{}", headers: Mapping[str, str] | None = None) -> None:
        try:
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the environment was ended while it waited for work

    def do_GET(self) -> None:
        if self.path != f"{API_PREFIX}/invocation/next":
            self._answer(404)
            return
        self.server.ready.set()
        invocation = self.server.pending.get()
        if invocation is None:  # the environment is being shut down
            self._answer(410)
            return
        self.server.in_flight[invocation.request_id] = invocation
        self._answer(
            200,
            json.dumps(invocation.event).encode(),
            {
                "Lambda-Runtime-Aws-Request-Id": invocation.request_id,
                "Lambda-Runtime-Deadline-Ms": str(invocation.deadline_ms),
                "Lambda-Runtime-Invoked-Function-Arn": self.server.function_arn,
            },
        )

    def do_POST(self) -> None:
        body = self._body()
        parts = self.path.removeprefix(API_PREFIX).strip("/").split("/")
        if parts == ["init", "error"]:
            self.server.init_error = InitError(body)
            self.server.ready.set()
        elif len(parts) == 3 and parts[0] == "invocation" and parts[2] in ("response", "error"):
            invocation = self.server.in_flight.pop(parts[1], None)
            if invocation is None:
                self._answer(400)
                return
            if parts[2] == "response":
                invocation.result = body
            else:
                invocation.error = FunctionError(body)
            invocation.done.set()
        else:
            self._answer(404)
            return
        self._answer(202)


def _pump(stream: Any, target: Callable[[], TextIO]) -> None:
    for line in iter(stream.readline, ""):
        out = target()
        out.write(line)
        out.flush()


class ProcessEnvironment:
    """One execution environment: a process running lambda_bootstrap against its own Runtime API."""

    def __init__(
        self,
        config: FunctionConfig,
        *,
        code_dir: Path,
        layer_paths: list[Path],
        python: str,
        environment: Mapping[str, str],
        function_name: str,
    ) -> None:
        self.config = config
        arn = f"arn:aws:lambda:{REGION}:{LOCAL_ACCOUNT_ID}:function:{function_name}"
        self.api = _RuntimeApi(arn)
        threading.Thread(target=self.api.serve_forever, name=f"runtime-api-{function_name}", daemon=True).start()
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "en_US.UTF-8",
            "TZ": ":UTC",
            **environment,
            "AWS_LAMBDA_RUNTIME_API": self.api.address,
            "AWS_LAMBDA_FUNCTION_NAME": function_name,
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(config.memory_mb),
            "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
            "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{function_name}",
            "AWS_LAMBDA_LOG_STREAM_NAME": "local",
            "AWS_EXECUTION_ENV": f"AWS_Lambda_python{Path(python).name.removeprefix('python')}",
            "LAMBDA_TASK_ROOT": str(code_dir),
            "_HANDLER": config.handler,
            "TICKWORK_LAYER_PATHS": os.pathsep.join(str(path) for path in layer_paths),
            "PYTHONUNBUFFERED": "1",  # -I ignores PYTHON* variables; kept for clarity of intent in `ps`
        }
        self.process = subprocess.Popen(  # noqa: S603 - our bootstrap, with the functions' interpreter
            # Powertools warns on every invocation that records no metric (a tick with nothing due).
            [python, "-I", "-S", "-u", "-W", "ignore:No application metrics to publish", str(BOOTSTRAP)],
            env=env,
            cwd=code_dir,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for stream, target in ((self.process.stdout, lambda: sys.stdout), (self.process.stderr, lambda: sys.stderr)):
            threading.Thread(target=_pump, args=(stream, target), daemon=True).start()

    def wait_ready(self, timeout: float = INIT_TIMEOUT_SECONDS) -> None:
        """Return once the module is imported and the runtime asks for work; raise its init error otherwise."""
        deadline = time.monotonic() + timeout
        while not self.api.ready.wait(0.05):
            if self.process.poll() is not None:
                raise InitError({"errorType": "Runtime.ExitError", "errorMessage": f"exited {self.process.returncode}"})
            if time.monotonic() > deadline:
                self.stop()
                raise InitError({"errorType": "Runtime.InitTimeout", "errorMessage": f"not ready in {timeout:.0f} s"})
        if self.api.init_error is not None:
            self.stop()
            raise self.api.init_error

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def invoke(self, event: Any) -> Any:
        timeout = self.config.timeout_seconds
        invocation = _Invocation(event, deadline_ms=int((time.time() + timeout) * 1000))
        self.api.pending.put(invocation)
        while not invocation.done.wait(0.05):
            if self.process.poll() is not None:
                raise FunctionError({"errorType": "Runtime.ExitError", "errorMessage": "the process ended"})
            if time.time() * 1000 > invocation.deadline_ms + 1000:
                self.stop()
                raise FunctionTimeout(f"{self.config.logical_id}: task timed out after {timeout:.2f} seconds")
        if invocation.error is not None:
            raise invocation.error
        return invocation.result

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        self.api.pending.put(None)
        self.api.shutdown()
        self.api.server_close()


class ProcessFunctionRuntime(EnvironmentPool[ProcessEnvironment]):
    """A built Lambda function: each execution environment is a process (as `FunctionRuntime`, whose module
    instances these processes replace)."""

    def __init__(
        self,
        config: FunctionConfig,
        *,
        layer_paths: list[Path],
        python: str,
        environment: Mapping[str, str],
        max_environments: int,
        function_name: str | None = None,
    ) -> None:
        """`layer_paths`: the sys.path entries of the function's layers, in order (BuiltStack.layer_paths)."""
        super().__init__(config, max_environments, function_name)
        self._layer_paths = layer_paths
        self._python = python
        self._environment = dict(environment)
        self._started: list[ProcessEnvironment] = []

    def _create(self) -> ProcessEnvironment:
        env = ProcessEnvironment(
            self.config,
            code_dir=self.config.code_dir,
            layer_paths=self._layer_paths,
            python=self._python,
            environment=self._environment,
            function_name=self.function_name,
        )
        self._started.append(env)
        env.wait_ready()
        return env

    def _usable(self, env: ProcessEnvironment) -> bool:
        return env.alive

    def _call(self, env: ProcessEnvironment, event: Any) -> Any:
        return env.invoke(event)  # the handler's error is raised as FunctionError

    def stop(self) -> None:
        for env in list(self._started):
            env.stop()
