"""End-to-end: `tickwork dev` in subprocesses on free ports, driven only over HTTP, as a user would.

Every wait here polls with a deadline; real time passes because the runtime runs in real time.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
READY_SECONDS = 30  # the acceptance bound for `make dev` reaching ready


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(check: Callable[[], Any], timeout: float, interval: float = 0.25, what: str = "condition") -> Any:
    """Poll `check` until it returns something truthy; fail with `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what} (last: {last!r})")


# ---------------------------------------------------------------------------- HTTP


class HttpError(AssertionError):
    def __init__(self, status: int, body: Any) -> None:
        super().__init__(f"HTTP {status}: {body}")
        self.status, self.body = status, body


@dataclass
class Api:
    url: str

    def call(self, method: str, path: str, body: Any = None, expect: int | tuple[int, ...] = (200,)) -> Any:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"} if data is not None else {}
        request = urllib.request.Request(f"{self.url}{path}", data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as exc:
            status, raw = exc.code, exc.read()
        parsed = json.loads(raw) if raw else None
        expected = (expect,) if isinstance(expect, int) else expect
        if status not in expected:
            raise HttpError(status, parsed)
        return parsed

    def get(self, path: str, **kw: Any) -> Any:
        return self.call("GET", path, **kw)

    def post(self, path: str, body: Any = None, **kw: Any) -> Any:
        return self.call("POST", path, body, **kw)

    def create_job(self, **spec: Any) -> dict[str, Any]:
        spec.setdefault("type", "echo")
        return self.post("/v1/jobs", spec, expect=201)

    def runs(self, job_id: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        cursor = None
        while True:
            query = f"?limit=100{f'&cursor={cursor}' if cursor else ''}"
            page = self.get(f"/v1/jobs/{job_id}/runs{query}")
            items += page["items"]
            cursor = page.get("next_cursor")
            if not cursor:
                return items

    def cancel(self, job_id: str) -> None:
        self.call("DELETE", f"/v1/jobs/{job_id}")


# ---------------------------------------------------------------------------- processes


@dataclass
class Proc:
    """A subprocess whose stdout lines are collected as they come."""

    name: str
    process: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)

    @classmethod
    def start(cls, name: str, command: list[str], **kwargs: Any) -> Proc:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        env.pop("AWS_ENDPOINT_URL", None)
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=ROOT, **kwargs
        )
        proc = cls(name, process)
        threading.Thread(target=proc._read, daemon=True).start()
        return proc

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_line(self, text: str, timeout: float) -> str:
        def found() -> str | None:
            if self.process.poll() is not None and not any(text in line for line in self.lines):
                raise AssertionError(f"{self.name} exited ({self.process.returncode}):\n{self.output()}")
            return next((line for line in self.lines if text in line), None)

        return wait_for(found, timeout, 0.05, f"{self.name} to print {text!r}\n{self.output()}")

    def output(self, last: int = 60) -> str:
        return "\n".join(self.lines[-last:])

    def terminate(self, timeout: float = 10) -> int:
        """SIGTERM; the exit status, or fail if it takes longer than `timeout`."""
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)
            raise AssertionError(f"{self.name} did not exit within {timeout} s of SIGTERM:\n{self.output()}") from None

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


def tickwork_dev(name: str, *args: str) -> Proc:
    return Proc.start(name, [str(BIN / "tickwork"), "dev", *args])


@dataclass
class Node:
    proc: Proc
    api: Api


def start_node(name: str, *args: str, port: int | None = None) -> Node:
    port = port or free_port()
    proc = tickwork_dev(name, "--port", str(port), "--node-name", name, *args)
    proc.wait_line("ready in", READY_SECONDS)
    return Node(proc, Api(f"http://127.0.0.1:{port}"))


@pytest.fixture(scope="module")
def node() -> Iterator[Node]:
    """One local runtime for a module's tests: its own moto, a 2 s tick, room for the 50-job burst."""
    started = start_node("e2e", "--moto-port", str(free_port()), "--tick-seconds", "2", "--workers", "24")
    try:
        yield started
    finally:
        code = started.proc.terminate()
        assert code == 0, started.proc.output()
