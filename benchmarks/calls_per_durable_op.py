"""Section 1c: what a durable run's operations cost (docs/durable-runs.md): AWS requests and DynamoDB WRU of one
checkpoint (kept in the run item, and one large enough for S3, each after one in S3 too: the superseded object is
deleted), one progress report (written, coalesced, riding on a heartbeat) and one yield.

One run of a job type of the section's own, through the real pipeline on moto (tests/harness.Pipeline), metered
as section 1 is (benchmarks.common.AwsMeter). Its handler does one operation at a time and closes a phase after
each, on the fake clock, so each phase holds exactly that operation's calls: no heartbeat falls inside another
operation's phase. The yield is two phases: the segment's end (after the handler returned `ctx.yield_run()`) and
the next segment's start (its message received, up to its handler's first line), which a run that did not yield
would not have had.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pydantic import BaseModel
from tickwork.jobtypes import RunContext, job_type, registry
from tickwork.jobtypes.durable import INLINE_CHECKPOINT_MAX_BYTES
from tickwork.model.policies import Band

from benchmarks.calls_per_run import _fmt, op_name
from benchmarks.common import Call, PhaseMeter, Stamp, moto_session
from tests.harness import Pipeline

JOB_TYPE = "bench-durable-ops"
LARGE_STATE_BYTES = 64 * 1024  # over INLINE_CHECKPOINT_MAX_BYTES: to S3
BEAT_SECONDS = 20  # the heartbeat's period: the lease (LeaseSeconds, 60) / 3

# The operations, in the order the handler does them, and what the page calls each.
OPERATIONS = {
    "checkpoint_inline": "A checkpoint kept in the run item (a 200-byte state)",
    "checkpoint_s3": f"A checkpoint over {INLINE_CHECKPOINT_MAX_BYTES // 1024} KiB ({LARGE_STATE_BYTES // 1024} KiB, to S3)",
    "checkpoint_s3_after_s3": "A checkpoint to S3 after one in S3 (the superseded object deleted)",
    "checkpoint_inline_after_s3": "A checkpoint kept in the item after one in S3 (the object deleted)",
    "progress_written": "A progress report, written (an attempt's first, or 5 s after the last write)",
    "progress_coalesced": "A progress report within 5 s of the last write (waits for the next beat)",
    "heartbeat_with_progress": "A heartbeat carrying the waiting progress report",
    "heartbeat_alone": "A heartbeat with no report waiting (for comparison: what every beat costs)",
    "yield_end": "A yield: its segment's end (the yield's write, the fresh message)",
    "yield_next_start": "A yield: the next segment's start (receive, lease, up to its handler)",
}

_METERS: list[PhaseMeter] = []  # the run's meter, while the section runs (the handler closes its phases)


class DurableOps(BaseModel):
    inline_bytes: int = 200
    large_bytes: int = LARGE_STATE_BYTES


def _close(phase: str) -> None:
    if _METERS:  # registered for the process: a test session's other tests may run it, unmetered
        _METERS[-1].close(phase)


if JOB_TYPE not in registry:

    @job_type(JOB_TYPE, DurableOps, description="benchmarks: one durable operation at a time (section 1c)")
    def durable_ops(payload: DurableOps, ctx: RunContext) -> dict[str, Any]:
        if ctx.last_checkpoint() is not None:  # the segment after the yield
            _close("yield_next_start")
            return {"done": True}
        _close("segment_start")
        ctx.checkpoint({"pad": "x" * payload.inline_bytes})
        _close("checkpoint_inline")
        ctx.checkpoint({"pad": "x" * payload.large_bytes})
        _close("checkpoint_s3")
        ctx.checkpoint({"pad": "y" * payload.large_bytes})
        _close("checkpoint_s3_after_s3")
        ctx.checkpoint({"pad": "x" * payload.inline_bytes})  # the run item as before the large ones
        _close("checkpoint_inline_after_s3")
        ctx.progress(0.1, "first")
        _close("progress_written")
        ctx.progress(0.2, "second")
        _close("progress_coalesced")
        ctx.sleep(BEAT_SECONDS)  # on the fake clock: one beat, which carries the second report
        _close("heartbeat_with_progress")
        ctx.sleep(BEAT_SECONDS)
        _close("heartbeat_alone")
        return ctx.yield_run()


def measure() -> dict[str, Any]:
    with moto_session(), Pipeline.create() as pipeline:
        far = timedelta(seconds=300)
        job = pipeline.create_job(type=JOB_TYPE, schedule={"at": pipeline.clock.now() + far})
        pipeline.clock.advance(far.total_seconds())
        pipeline.tick()
        meter = PhaseMeter(pipeline)
        _METERS.append(meter)
        try:
            for segment in range(2):
                messages = pipeline.receive(Band.NORMAL)
                if len(messages) != 1:
                    raise RuntimeError(f"segment {segment + 1}: {len(messages)} messages, not 1")
                pipeline.deliver(Band.NORMAL, messages)
                meter.close("yield_end" if segment == 0 else "finish")
        finally:
            _METERS.remove(meter)
        (run,) = pipeline.runs_of(job.id)
    if run.status.value != "SUCCEEDED" or run.segments != 1:
        raise RuntimeError(f"the run ended {run.status.value} after {run.segments} segments, not SUCCEEDED after 1")
    return {name: cost(meter.phases[name]) for name in OPERATIONS}


def cost(calls: list[Call]) -> dict[str, Any]:
    """One operation's requests (by service, operation and item) and its DynamoDB write units."""
    requests: dict[str, int] = {}
    wru_parts: dict[str, int] = {}
    for call in calls:
        requests[op_name(call)] = requests.get(op_name(call), 0) + 1
        for part, units in call.wru.items():
            if units:
                wru_parts[part] = wru_parts.get(part, 0) + units
    return {
        "requests": requests,
        "total_requests": len(calls),
        "wru": sum(wru_parts.values()),
        "wru_parts": wru_parts,  # the table's, and each index's
        "item_bytes": max((call.size for call in calls if call.wru), default=0),
    }


def run(stamp: Stamp, *, quick: bool) -> dict[str, Any]:
    return {"stamp": stamp.__dict__, "operations": measure()}  # one run, quick or not: the counts are exact


# ---------------------------------------------------------------- rendering


def _requests(requests: dict[str, int]) -> str:
    return ", ".join(f"{n} {op}" for op, n in requests.items()) or "none"


def _wru(op: dict[str, Any]) -> str:
    parts = op["wru_parts"]
    split = " + ".join(f"{n} {part}" for part, n in parts.items())
    return f"{_fmt(op['wru'])} ({split})" if len(parts) > 1 else _fmt(op["wru"])


def render(result: dict[str, Any]) -> str:
    stamp = Stamp(**result["stamp"])
    ops = result["operations"]
    rows = [
        f"| {OPERATIONS[name]} | {ops[name]['total_requests']} | {_requests(ops[name]['requests'])} | {_wru(ops[name])} |"
        f" {ops[name]['item_bytes'] or '-'} |"
        for name in OPERATIONS
    ]
    yield_requests = ops["yield_end"]["total_requests"] + ops["yield_next_start"]["total_requests"]
    yield_wru = ops["yield_end"]["wru"] + ops["yield_next_start"]["wru"]
    return "\n".join(
        [
            "## 1c. What a durable run's operations cost",
            "",
            f"Measured by {stamp.line()}.",
            "",
            "One run of a job type that does one operation at a time (docs/durable-runs.md), through the real"
            " pipeline on moto, metered as section 1; each operation's calls are those between two of its lines, on"
            " the fake clock (no heartbeat falls inside another operation). WRU by DynamoDB's rules from the item"
            " images: the table's, by the run item's size (a run with a larger payload or result, over 1 KB, pays"
            " one more a write), and the due index's when a write changes what it projects (the lease's time).",
            "",
            "| Operation | Requests | Which | DynamoDB WRU | Run item (bytes) |",
            "|---|---:|---|---:|---:|",
            *rows,
            "",
            f"A yield, both halves: **{yield_requests} requests and {_fmt(yield_wru)} WRU**, of which the receive,"
            " the delete and the tenants' settings (BatchGetItem, kept 30 s per execution environment) are shared"
            " with the other messages of a batch, as in section 1. S3 does not bill DELETE requests: the superseded"
            " checkpoint object's delete costs a request, not money. A progress report costs a request only when"
            " written on its own; one riding on a beat costs what the beat costs anyway. tests/bench/"
            "test_bench_quick.py holds these counts as budgets.",
        ]
    )


def console(result: dict[str, Any]) -> str:
    ops = result["operations"]
    parts = [f"{name} {ops[name]['total_requests']} req/{_fmt(ops[name]['wru'])} WRU" for name in OPERATIONS]
    return "[1c] durable ops: " + "; ".join(parts)
