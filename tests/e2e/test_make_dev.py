"""`make dev`, the README's quick start, as a user runs it: it prints its URL, answers health, and stops
cleanly (exit 0 within 10 s) on SIGTERM."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from pathlib import Path

import pytest

from tests.e2e.conftest import READY_SECONDS, Api, Proc, wait_for

pytestmark = pytest.mark.e2e

INSTALL_SECONDS = 240  # make installs first when pyproject.toml is newer than the venv


def _children(task: Path) -> list[int]:
    """A thread's child processes; none once the thread has ended (it may end between listing and reading)."""
    try:
        return [int(pid) for pid in (task / "children").read_text().split()]
    except OSError:
        return []


def descendants(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        for child in _children(task):
            found += [child, *descendants(child)]
    return found


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def test_make_dev_prints_its_url_serves_health_and_exits_zero_on_sigterm() -> None:
    make = Proc.start("make dev", ["make", "--no-print-directory", "dev", "ARGS=--port 0 --moto-port 0"])
    try:
        ready = make.wait_ready(INSTALL_SECONDS)
        assert ready.seconds < READY_SECONDS, ready.line
        url = ready.api_url
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+", url), ready.line
        assert any(f"{url}/docs" in line for line in make.lines)
        assert Api(url).get("/v1/health")["status"] == "ok"

        # The runtime is make's child: signal it, as Ctrl-C or a service manager would.
        runtime = wait_for(
            lambda: next((p for p in descendants(make.process.pid) if " dev " in command_line(p)), None),
            5,
            what="the tickwork dev process",
        )
        started = time.monotonic()
        os.kill(runtime, signal.SIGTERM)
        code = make.process.wait(10)
        assert code == 0, make.output()
        assert time.monotonic() - started < 10
        assert "stopped" in make.lines[-1]
    finally:
        if make.process.poll() is None:  # the test failed: leave nothing running
            for pid in descendants(make.process.pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            make.kill()
