"""What a function-isolated job type costs per run (docs/security.md, "What isolation costs"): the same handler run
inline (in the executor) and in the job sandbox, through the real pipeline on moto (tests/harness.Pipeline, the
sandbox played as tickwork dev plays it: tickwork_local.runtime.function_invokes).

    python -m benchmarks.isolation_cost [RUNS]

Measured: AWS requests per run by operation (the difference is the sandbox's Invoke), and the executor's time per
run, wall clock, in process (the Invoke's local play: the request and answer encoded and decoded, an execution
environment taken; not Lambda's own invoke latency, nor a cold start, which are stated beside it). Priced: one
Lambda request, and the sandbox's billed time, during which the executor waits and is billed too.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from datetime import timedelta
from statistics import median
from typing import Any

from benchmarks import prepare_environment

RUNS = 30
KINDS = ("inline-asked", "isolated-asked")
MEMORY_GB = 0.5  # JobSandboxFunction's MemorySize (512 MB)


def measure(runs: int = RUNS) -> dict[str, dict[str, object]]:
    # Imported here, after prepare_environment: they import boto3 and Powertools, which read it then.
    from tickwork.executor.isolation import JobSandboxCalls  # noqa: PLC0415
    from tickwork.jobtypes import JobType, RunContext, registry  # noqa: PLC0415

    import tests.isolated_jobtypes  # noqa: F401, PLC0415  # registers inline-asked and isolated-asked
    from benchmarks.prices import price  # noqa: PLC0415

    results: dict[str, dict[str, object]] = {}
    requests: dict[str, float] = {}
    milliseconds: dict[str, float] = {}
    # The handler's call as the executor sees it: the handler itself inline; the invoke and its answer applied.
    handler_ms: dict[str, list[float]] = {kind: [] for kind in KINDS}
    inline_type = registry.get("inline-asked")
    real_handler, real_call = inline_type.handler, JobSandboxCalls.call

    def timed_handler(payload: Any, ctx: RunContext) -> Any:
        started = time.perf_counter()
        try:
            return real_handler(payload, ctx)
        finally:
            handler_ms["inline-asked"].append((time.perf_counter() - started) * 1000)

    def timed_call(self: JobSandboxCalls, job_type: JobType, *args: Any) -> Any:
        started = time.perf_counter()
        try:
            return real_call(self, job_type, *args)
        finally:
            handler_ms["isolated-asked"].append((time.perf_counter() - started) * 1000)

    object.__setattr__(inline_type, "handler", timed_handler)
    JobSandboxCalls.call = timed_call  # type: ignore[method-assign]
    try:
        _runs(runs, requests, milliseconds, results)
    finally:
        object.__setattr__(inline_type, "handler", real_handler)
        JobSandboxCalls.call = real_call  # type: ignore[method-assign]
    for kind in KINDS:
        results[kind]["handler_call_ms_median"] = round(median(handler_ms[kind]), 2)
    inline, isolated = KINDS
    results["difference"] = {
        "requests_per_run": requests[isolated] - requests[inline],
        "executor_ms_median": round(milliseconds[isolated] - milliseconds[inline], 1),
        "handler_call_ms_median": round(median(handler_ms[isolated]) - median(handler_ms[inline]), 2),
        "usd_per_million_runs_requests": round(price("lambda_request").each * 1e6, 2),
        # Per 100 ms of handler time: the sandbox bills it, and the executor, waiting, bills it again (as inline).
        "usd_per_million_runs_per_100ms_handler": round(price("lambda_gb_s_arm").each * MEMORY_GB * 0.1 * 1e6, 2),
    }
    return results


def _runs(
    runs: int,
    requests: dict[str, float],
    milliseconds: dict[str, float],
    results: dict[str, dict[str, object]],
) -> None:
    from benchmarks.common import moto_session  # noqa: PLC0415
    from tests.harness import Pipeline  # noqa: PLC0415

    with moto_session(), Pipeline.create() as pipeline:
        for kind in KINDS:
            seconds: list[float] = []
            operations: Counter[str] = Counter()
            for _ in range(runs):
                pipeline.create_job(type=kind, payload={"token": "t"}, schedule={"at": pipeline.clock.now()})
                pipeline.clock.advance(1)
                pipeline.tick()
                pipeline.calls.clear()
                started = time.perf_counter()
                pipeline.drain()
                seconds.append(time.perf_counter() - started)
                operations += pipeline.calls.by_operation()
                pipeline.clock.advance(timedelta(minutes=1).total_seconds())
            requests[kind] = sum(operations.values()) / runs
            milliseconds[kind] = round(median(seconds) * 1000, 1)
            results[kind] = {
                "requests_per_run": requests[kind],
                "by_operation": {op: count / runs for op, count in sorted(operations.items())},
                "executor_ms_median": milliseconds[kind],
            }


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    prepare_environment()
    print(json.dumps(measure(int(args[0]) if args else RUNS), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
