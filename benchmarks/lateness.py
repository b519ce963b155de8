"""Section 5: start lateness in the local runtime, with the real clock.

`tickwork dev` (the local runtime: moto server, the API, a wall-clock tick, executors polling SQS as the
event source mapping does) runs as a subprocess on free ports. Over its HTTP API the benchmark creates
one-shot `echo` jobs whose `at` instants are spread uniformly (with milliseconds) over a window
(500 over 2 minutes; --quick: 100 over 30 s), then reads every job's runs (GET /v1/jobs/{id}/runs) and
reports `started_at - scheduled_for`: p50, p95, p99, max, and the early starts, which must be 0.

Jobs due within the 120 s claim horizon of their creation are claimed by the create itself; the others
by a tick: both paths are in the sample, as they would be in use.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks import ROOT
from benchmarks.common import Stamp, percentile

FULL = {"jobs": 500, "window_s": 120.0}
QUICK = {"jobs": 100, "window_s": 30.0}
CREATE_THREADS = 4
READY_TIMEOUT_S = 60.0
SETTLE_S = 30.0  # after the last due instant, how long runs may take to show up as started
READY_LINE = re.compile(r"ready in [0-9.]+ s: (?P<url>http://\S+)")


def runtime_available() -> tuple[bool, str]:
    """Whether `tickwork dev` exists in this checkout (issue 5); the reason if not."""
    if not (ROOT / "infrastructure" / "tickwork_local" / "cli.py").exists():
        return False, "infrastructure/tickwork_local/cli.py (the local runtime, issue 5) is not in this checkout"
    probe = subprocess.run(
        [*_base_cmd(), "dev", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env=_env(),
        check=False,
    )
    if probe.returncode != 0:
        return False, f"`tickwork dev --help` failed: {(probe.stderr or probe.stdout).strip()[-300:]}"
    return True, ""


def _base_cmd() -> list[str]:
    exe = Path(sys.executable).with_name("tickwork")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "tickwork_cli.main"]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    paths = [str(ROOT / p) for p in ("shared", "functions", "infrastructure", ".")]
    env["PYTHONPATH"] = os.pathsep.join([*paths, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Runtime:
    """`tickwork dev` as a subprocess: started on free ports, stopped with SIGINT (its Ctrl-C)."""

    def __init__(self) -> None:
        self.cmd = [*_base_cmd(), "dev", "--host", "127.0.0.1", "--port", str(_free_port())]
        self.cmd += ["--moto-port", str(_free_port())]
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""
        self.output: list[str] = []

    def __enter__(self) -> Runtime:
        self.proc = subprocess.Popen(
            self.cmd,
            cwd=ROOT,
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
        )
        ready = threading.Event()

        def read() -> None:
            assert self.proc is not None
            assert self.proc.stdout is not None
            for line in self.proc.stdout:
                self.output.append(line.rstrip())
                match = READY_LINE.search(line)
                if match:
                    self.url = match.group("url").rstrip("/")
                    ready.set()

        threading.Thread(target=read, name="tickwork-dev-output", daemon=True).start()
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not ready.wait(0.2):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.__exit__(None, None, None)
                tail = "\n".join(self.output[-20:])
                raise RuntimeError(f"tickwork dev did not become ready:\n{tail}")
        return self

    def __exit__(self, *_: Any) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)

    # -- HTTP

    def call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"{self.url}{path}", data=data, method=method, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            raise RuntimeError(f"{method} {path}: {exc.code} {exc.read()[:500]!r}") from None


def _iso(at: datetime) -> str:
    return at.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _parse(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def measure(jobs: int, window_s: float, *, seed: int = 6) -> dict[str, Any]:
    rng = random.Random(seed)
    offsets = sorted(rng.uniform(0, window_s) for _ in range(jobs))
    with Runtime() as runtime:
        # Creating takes time over HTTP: measure it on a few jobs, then leave a lead so none is due before
        # it exists (the API refuses an `at` in the past).
        lead = 10.0
        started = time.monotonic()
        base = datetime.now(UTC) + timedelta(seconds=lead + 0.05 * jobs)
        specs = [
            {
                "name": f"lateness {i}",
                "type": "echo",
                "payload": {"i": i},
                "schedule": {"at": _iso(base + timedelta(seconds=offset))},
            }
            for i, offset in enumerate(offsets)
        ]
        with ThreadPoolExecutor(CREATE_THREADS) as pool:
            created = list(pool.map(lambda spec: runtime.call("POST", "/v1/jobs", spec), specs))
        create_s = time.monotonic() - started
        late_creates = sum(1 for c in created if _parse(c["created_at"]) > _parse(c["schedule"]["at"]))
        last_due = base + timedelta(seconds=offsets[-1])
        time.sleep(max(0.0, (last_due - datetime.now(UTC)).total_seconds()) + 3)
        runs: dict[str, dict[str, Any]] = {}
        deadline = time.monotonic() + SETTLE_S
        pending = [c["id"] for c in created]
        while pending and time.monotonic() < deadline:
            still: list[str] = []
            for job_id in pending:
                items = runtime.call("GET", f"/v1/jobs/{job_id}/runs")["items"]
                started_runs = [r for r in items if r.get("started_at")]
                if started_runs:
                    runs[job_id] = started_runs[-1]
                else:
                    still.append(job_id)
            pending = still
            if pending:
                time.sleep(2)
    lateness_ms = [(_parse(r["started_at"]) - _parse(r["scheduled_for"])).total_seconds() * 1000 for r in runs.values()]
    return {
        "jobs": jobs,
        "window_s": window_s,
        "create_s": create_s,
        "created_late": late_creates,
        "started": len(runs),
        "not_started": len(pending),
        "succeeded": sum(1 for r in runs.values() if r.get("status") == "SUCCEEDED"),
        "early": sum(1 for ms in lateness_ms if ms < 0),
        "p50_ms": percentile(lateness_ms, 50),
        "p95_ms": percentile(lateness_ms, 95),
        "p99_ms": percentile(lateness_ms, 99),
        "max_ms": max(lateness_ms) if lateness_ms else float("nan"),
        "min_ms": min(lateness_ms) if lateness_ms else float("nan"),
        "command": "tickwork dev --host 127.0.0.1 --port <free> --moto-port <free>",
    }


def run(stamp: Stamp, *, quick: bool) -> dict[str, Any]:
    plan = QUICK if quick else FULL
    available, reason = runtime_available()
    if not available:
        return {"stamp": stamp.__dict__, "pending": reason, **plan}
    return {"stamp": stamp.__dict__, **measure(plan["jobs"], plan["window_s"])}


def render(result: dict[str, Any]) -> str:
    stamp = Stamp(**result["stamp"])
    head = [
        "## 5. Start lateness",
        "",
    ]
    if "pending" in result:
        return "\n".join(
            [
                *head,
                f"**Pending**: not measured by {stamp.line()}: {result['pending']}.",
                "",
                f"What it measures, once the local runtime is there: {result['jobs']} one-shot `echo` jobs spread"
                f" over {result['window_s']:.0f} s, created over HTTP (`POST /v1/jobs`) against `tickwork dev`"
                " with the real clock, then `started_at - scheduled_for` of each run from"
                " `GET /v1/jobs/{id}/runs`. Command: `make bench` (all sections) or"
                " `.venv/bin/python -m benchmarks.run --only lateness` (this section; the others are kept).",
            ]
        )
    return "\n".join(
        [
            *head,
            f"Measured by {stamp.line()}.",
            "",
            f"{result['jobs']} one-shot `echo` jobs with `at` spread uniformly (to the millisecond) over"
            f" {result['window_s']:.0f} s, created over HTTP against the local runtime with the real clock"
            f" (`{result['command']}`, a subprocess; {result['create_s']:.1f} s to create them all);"
            " lateness is `started_at - scheduled_for` of each run, read back from `GET /v1/jobs/{id}/runs`.",
            "",
            "| runs started | p50 | p95 | p99 | max | early starts |",
            "|---:|---:|---:|---:|---:|---:|",
            f"| {result['started']} of {result['jobs']} | {result['p50_ms']:.0f} ms | {result['p95_ms']:.0f} ms |"
            f" **{result['p99_ms']:.0f} ms** | {result['max_ms']:.0f} ms | **{result['early']}** |",
            "",
            "Where the lateness comes from: the tick (or the create) sends each run with"
            " `DelaySeconds = ceil(scheduled_for - now)`, whole seconds, so a run becomes visible up to 1 s"
            " after its instant, never before; then an executor's receive picks it up and leases it. The"
            " lease's time is `started_at`. Early starts are impossible by construction (the delay rounds up)"
            " and none was seen.",
        ]
    )


def console(result: dict[str, Any]) -> str:
    if "pending" in result:
        return f"[5] lateness: pending ({result['pending']})"
    return (
        f"[5] lateness ({result['started']}/{result['jobs']} runs over {result['window_s']:.0f} s):"
        f" p50 {result['p50_ms']:.0f} ms, p95 {result['p95_ms']:.0f} ms, p99 {result['p99_ms']:.0f} ms,"
        f" max {result['max_ms']:.0f} ms, early {result['early']}"
    )
