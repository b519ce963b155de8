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
SETTLE_S = 30.0
MIN_AHEAD_S = 1.0  # after the last due instant, how long runs may take to show up as started
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


class Runtime:
    """`tickwork dev` as a subprocess: started on free ports, stopped with SIGINT (its Ctrl-C)."""

    def __init__(self) -> None:
        # Port 0: the runtime picks free ports and prints the API's URL on its "ready" line.
        self.cmd = [*_base_cmd(), "dev", "--host", "127.0.0.1", "--port", "0", "--moto-port", "0"]
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


def create_one_shots(
    runtime: Runtime,
    instants: list[datetime],
    name: str,
    *,
    min_ahead_s: float = MIN_AHEAD_S,
    extra: dict[str, Any] | None = None,
) -> tuple[list[dict[str, Any]], int]:
    """One `echo` one-shot per instant, created over HTTP CREATE_THREADS at a time: the jobs, and how many were
    moved to `min_ahead_s` after their create because their instant came first (the API refuses the past)."""
    moved = 0
    lock = threading.Lock()

    def create(i: int) -> dict[str, Any]:
        nonlocal moved
        at = instants[i]
        earliest = datetime.now(UTC) + timedelta(seconds=min_ahead_s)
        if at < earliest:
            at = earliest
            with lock:
                moved += 1
        spec = {
            "name": f"{name} {i}",
            "type": "echo",
            "payload": {"i": i},
            "schedule": {"at": _iso(at)},
            **(extra or {}),
        }
        return dict(runtime.call("POST", "/v1/jobs", spec))

    with ThreadPoolExecutor(CREATE_THREADS) as pool:
        created = list(pool.map(create, range(len(instants))))
    return created, moved


def started_runs(runtime: Runtime, job_ids: list[str], *, poll_s: float) -> dict[str, dict[str, Any]]:
    """Each job's last started run (GET /v1/jobs/{id}/runs every `poll_s`), until all have one or SETTLE_S passed."""
    runs: dict[str, dict[str, Any]] = {}
    pending = list(job_ids)
    deadline = time.monotonic() + SETTLE_S
    while pending and time.monotonic() < deadline:
        still: list[str] = []
        for job_id in pending:
            started = [r for r in runtime.call("GET", f"/v1/jobs/{job_id}/runs")["items"] if r.get("started_at")]
            if started:
                runs[job_id] = started[-1]
            else:
                still.append(job_id)
        pending = still
        if pending:
            time.sleep(poll_s)
    return runs


def measure(jobs: int, window_s: float, *, seed: int = 6, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Lateness of `jobs` one-shots spread over `window_s`; `extra` fields go into every job (start_precision)."""
    rng = random.Random(seed)
    offsets = sorted(rng.uniform(0, window_s) for _ in range(jobs))
    with Runtime() as runtime:
        # Creating takes time over HTTP (~15 jobs/s here): leave a lead so that the window starts after the
        # creates are mostly done. A job whose planned instant is less than MIN_AHEAD_S away when its turn comes
        # is moved to now + MIN_AHEAD_S (counted: `moved`), since the API refuses an `at` in the past.
        started = time.monotonic()
        base = datetime.now(UTC) + timedelta(seconds=4 + 0.07 * jobs)
        planned = [base + timedelta(seconds=offset) for offset in offsets]
        created, moved = create_one_shots(runtime, planned, "lateness", extra=extra)
        create_s = time.monotonic() - started
        last_due = max(_parse(c["schedule"]["at"]) for c in created)
        time.sleep(max(0.0, (last_due - datetime.now(UTC)).total_seconds()) + 3)
        runs = started_runs(runtime, [c["id"] for c in created], poll_s=2.0)
        pending = [c["id"] for c in created if c["id"] not in runs]
    lateness_ms = [(_parse(r["started_at"]) - _parse(r["scheduled_for"])).total_seconds() * 1000 for r in runs.values()]
    return {
        "jobs": jobs,
        "window_s": window_s,
        "create_s": create_s,
        "moved": moved,
        "started": len(runs),
        "not_started": len(pending),
        "succeeded": sum(1 for r in runs.values() if r.get("status") == "SUCCEEDED"),
        "early": sum(1 for ms in lateness_ms if ms < 0),
        "p50_ms": percentile(lateness_ms, 50),
        "p95_ms": percentile(lateness_ms, 95),
        "p99_ms": percentile(lateness_ms, 99),
        "max_ms": max(lateness_ms) if lateness_ms else float("nan"),
        "min_ms": min(lateness_ms) if lateness_ms else float("nan"),
        # (seconds into the minute of scheduled_for, lateness ms): the runtime ticks at :00 of each minute.
        "samples": sorted(
            (round(_parse(r["scheduled_for"]).timestamp() % 60, 3), round(ms))
            for r, ms in zip(runs.values(), lateness_ms, strict=True)
        ),
        "command": "tickwork dev --host 127.0.0.1 --port 0 --moto-port 0",
    }


def run(stamp: Stamp, *, quick: bool, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The section's measurement; `extra` fields go into every job (section 10: start_precision)."""
    plan = QUICK if quick else FULL
    available, reason = runtime_available()
    if not available:
        return {"stamp": stamp.__dict__, "pending": reason, **plan}
    load_before = os.getloadavg()[0]
    result = measure(plan["jobs"], plan["window_s"], extra=extra)
    return {"stamp": stamp.__dict__, **result, "load_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)]}


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
            f" (`{result['command']}`, a subprocess; {result['create_s']:.1f} s to create them all, 4 at a time;"
            f" {result['moved']} whose instant came before their create were moved to 1 s after it);"
            " lateness is `started_at - scheduled_for` of each run, read back from `GET /v1/jobs/{id}/runs`.",
            "",
            "| runs started | p50 | p95 | p99 | max | early starts |",
            "|---:|---:|---:|---:|---:|---:|",
            f"| {result['started']} of {result['jobs']} | {result['p50_ms']:.0f} ms | {result['p95_ms']:.0f} ms |"
            f" **{result['p99_ms']:.0f} ms** | {result['max_ms']:.0f} ms | **{result['early']}** |",
            "",
            "Where the lateness comes from: the tick (or the create) sends each run with"
            " `DelaySeconds = ceil(scheduled_for - now)`, whole seconds, so a run becomes visible between 0 and"
            " 1 s after its instant (uniformly, for instants spread to the millisecond: 0.5 s at the median,"
            " 0.99 s at p99), never before; then an executor's receive picks it up and leases it, and the"
            " lease's time is `started_at`. What is above the rounding is the local runtime's polling and the"
            " executor's work on a machine shared with everything else running"
            f" (1-minute load average {_load(result)}). Early starts are impossible by construction (the"
            " delay rounds up) and none was seen.",
            "",
            _by_tick(result),
        ]
    )


def _by_tick(result: dict[str, Any]) -> str:
    """The runtime's tick runs at :00 in the same process as the executors: does it slow the runs due then?"""
    samples = result.get("samples") or []
    near = [ms for second, ms in samples if second < 10]
    rest = [ms for second, ms in samples if second >= 10]
    if not near or not rest:
        return ""
    slowest = sorted(samples, key=lambda s: -s[1])[: max(1, len(samples) // 100)]
    return (
        f"Runs due in the first 10 s of a minute, while the local tick (at :00, in the same process) claims:"
        f" p50 {percentile(near, 50):.0f} ms, p99 {percentile(near, 99):.0f} ms ({len(near)} runs); the others: p50"
        f" {percentile(rest, 50):.0f} ms, p99 {percentile(rest, 99):.0f} ms ({len(rest)} runs). The slowest 1% were"
        f" due at {', '.join(f':{s:04.1f}' for s, _ in sorted(slowest))} seconds into their minute."
    )


def _load(result: dict[str, Any]) -> str:
    load = result.get("load_1min")
    return (
        f"{load[0]:.1f} before, {load[1]:.1f} after, on {Stamp(**result['stamp']).cores} cores"
        if load
        else "not recorded"
    )


def console(result: dict[str, Any]) -> str:
    if "pending" in result:
        return f"[5] lateness: pending ({result['pending']})"
    return (
        f"[5] lateness ({result['started']}/{result['jobs']} runs over {result['window_s']:.0f} s):"
        f" p50 {result['p50_ms']:.0f} ms, p95 {result['p95_ms']:.0f} ms, p99 {result['p99_ms']:.0f} ms,"
        f" max {result['max_ms']:.0f} ms, early {result['early']}"
    )
