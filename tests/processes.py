"""Subprocesses whose output is collected line by line, and polling with a deadline: for the e2e tests and
the soak (benchmarks/soak.py), which run the local runtime as a user would."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

# `tickwork dev --port 0 --moto-port 0` picks its own ports and prints them: a port chosen beforehand by the test
# can be taken, before the node binds it, by another process or by a client socket's local end (every e2e worker
# opens thousands), and the node then exits "already in use".
READY_LINE = re.compile(r"^ready in (?P<seconds>[0-9.]+) s: (?P<url>http://\S+)")
MOTO_LINE = re.compile(r"^  moto +(?P<url>http://\S+)")
MOTO_LISTENING = re.compile(r"^moto listening on port (?P<port>\d+)")
CONSOLE_LINE = re.compile(r"^Tickwork console for \S+: (?P<url>http://(?P<address>[^/\s]+))/\S* \(Ctrl-C to stop\)")


def free_port() -> int:
    """A port free now, for an address nothing will listen on; a process to listen lets the system choose."""
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


@dataclass(frozen=True)
class DevReady:
    """What a `tickwork dev` printed once it served."""

    seconds: float
    api_url: str
    moto_url: str
    line: str


@dataclass
class Proc:
    """A subprocess whose stdout lines are collected as they come."""

    name: str
    process: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)

    @classmethod
    def start(
        cls, name: str, command: list[str], *, cwd: Path = ROOT, env: dict[str, str] | None = None, **kwargs: Any
    ) -> Proc:
        """`command` from `cwd` (the repository's root unless given), in `env` (this process's unless given)."""
        env = {**(os.environ if env is None else env), "PYTHONUNBUFFERED": "1"}
        # A process starts from a user's shell, not from inside a Lambda: not the endpoint, nor the markers the
        # in-process suites set to trace as in Lambda (tests/conftest.py).
        for variable in ("AWS_ENDPOINT_URL", "LAMBDA_TASK_ROOT", "_X_AMZN_TRACE_ID"):
            env.pop(variable, None)
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=cwd, **kwargs
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

    def wait_match(self, pattern: re.Pattern[str], timeout: float) -> re.Match[str]:
        """The first line `pattern` matches; fail with the output if the process exits first or time runs out."""

        def found() -> re.Match[str] | None:
            match = next((m for line in self.lines if (m := pattern.search(line))), None)
            if match is None and self.process.poll() is not None:
                raise AssertionError(f"{self.name} exited ({self.process.returncode}):\n{self.output()}")
            return match

        return wait_for(found, timeout, 0.05, f"{self.name} to print {pattern.pattern!r}\n{self.output()}")

    def wait_ready(self, timeout: float) -> DevReady:
        """Wait for a `tickwork dev` to serve: its `ready in N s: URL` line, and the moto it uses."""
        ready = self.wait_match(READY_LINE, timeout)
        moto = self.wait_match(MOTO_LINE, 1)
        return DevReady(float(ready["seconds"]), ready["url"], moto["url"], ready.string)

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
