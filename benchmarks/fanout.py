"""Section 9: the dispatcher fan-out (tickwork.tick.fanout), what it costs and how it splits a tick's work.

Each measurement: a fresh pipeline (in-process moto, tables and queues from template.yaml), 2,000 one-shot jobs
due now over 32 due-index shards (set-up, untimed), then one tick: with W = 1 the tick claims everything itself;
with W > 1 the tick (the coordinator) sends W slices and W dispatch worker invocations (the real handler,
functions/dispatch, with the event source's receive and delete) each claim one slice, one after the other.

In AWS the workers run at once, on W Lambdas: a tick's dispatch then takes as long as its slowest slice. Here
moto serves one request at a time, so they run in turn and each is timed alone; "slowest slice" is the figure that
carries over (the busiest worker's share of the claims), not the sum. Requests are counted by operation for the
coordinator, the workers and their event source: what the fan-out adds to a tick's bill.
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Any

from benchmarks.common import Stamp, moto_session, seed_one_shots, stopwatch
from benchmarks.fastmoto import fast_sqs_clock
from tests.harness import START, Pipeline

FULL = {"jobs": 2000, "shards": 32, "workers": (1, 4, 8, 16)}
QUICK = {"jobs": 200, "shards": 8, "workers": (1, 4)}


def one_tick(jobs: int, shards: int, workers: int) -> dict[str, Any]:
    env = {"DUE_SHARDS": str(shards), "MAX_DISPATCH_PER_TICK": "5000", "DISPATCH_WORKERS": str(workers)}
    with moto_session(), fast_sqs_clock(), Pipeline.create(**env) as pipeline:
        seeded = seed_one_shots(pipeline, jobs, START + timedelta(seconds=150), tag="fanout")
        pipeline.clock.advance(151)
        pipeline.calls.clear()
        with stopwatch(quiet_gc=True) as elapsed:
            tick = pipeline.tick()
        coordinator_s = elapsed()
        coordinator_calls = pipeline.calls.by_operation()
        pipeline.calls.clear()
        slices: list[float] = []
        if workers > 1:
            while messages := pipeline.receive_slices():
                for message in messages:
                    with stopwatch(quiet_gc=True) as elapsed:
                        pipeline.dispatch(message)
                    slices.append(elapsed())
        worker_calls = pipeline.calls.by_operation()
        runs = pipeline.count_items(kind="RUN")
        if runs != len(seeded):
            raise RuntimeError(f"{runs} runs for {len(seeded)} due jobs")
        return {
            "workers": workers,
            "slices": tick["slices_sent"],
            "coordinator_s": coordinator_s,
            "coordinator_calls": dict(coordinator_calls),
            "worker_calls": dict(worker_calls),
            "slowest_slice_s": max(slices) if slices else coordinator_s,
            "sum_slices_s": sum(slices) if slices else coordinator_s,
            "runs": runs,
        }


def run(stamp: Stamp, *, quick: bool = False) -> dict[str, Any]:
    size = QUICK if quick else FULL
    rows = [one_tick(size["jobs"], size["shards"], w) for w in size["workers"]]
    return {"stamp": stamp.__dict__, "jobs": size["jobs"], "shards": size["shards"], "rows": rows}


def _added(row: dict[str, Any]) -> int:
    """Requests the fan-out adds: the slices' sends, and the workers' receives and deletes."""
    if row["workers"] == 1:
        return 0
    c, w = Counter(row["coordinator_calls"]), Counter(row["worker_calls"])
    return c["SendMessageBatch"] + w["ReceiveMessage"] + w["DeleteMessage"]


def render(result: dict[str, Any]) -> str:
    stamp = Stamp(**result["stamp"])
    base = result["rows"][0]["slowest_slice_s"]
    lines = [
        "## 9. Dispatcher fan-out",
        "",
        f"Measured by {stamp.line()}.",
        "",
        f"One tick over {result['jobs']:,} one-shot jobs all due, {result['shards']} due-index shards, in-process moto."
        " W = 1: the tick claims everything. W > 1: the tick sends W slices to the dispatch queue and each dispatch"
        " worker (functions/dispatch, through its event source) claims its slice; here they run in turn, in AWS at"
        " once, so the slowest slice is what a tick's dispatch takes there.",
        "",
        "| W | slices | runs (exactly one per job) | the tick (W > 1: the coordinator) | slowest slice | all slices, in turn | slowest vs W = 1 |"
        " requests the fan-out adds per tick |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in result["rows"]:
        lines.append(
            f"| {row['workers']} | {row['slices']} | {row['runs']:,} | {row['coordinator_s'] * 1000:.0f} ms"
            f" | {row['slowest_slice_s']:.2f} s | {row['sum_slices_s']:.2f} s | {row['slowest_slice_s'] / base:.2f}x"
            f" | {_added(row)} |"
        )
    lines += [
        "",
        "- Every row made exactly one run per due job (checked). What the fan-out adds per tick is ceil(W / 10)"
        " `SendMessageBatch` of the coordinator, a `DeleteMessage` per slice and the receives that fetched them"
        " (here the harness's; in AWS the event source's long polls, which also run while idle), and W Lambda"
        " invocations. At W = 47 (100M runs a day, section 6): ~100 SQS requests and 47 invocations a minute, about"
        " $1.70 + $0.41 a month at $0.40 and $0.20 per million, against $47,705 a month for the runs. The claims'"
        " own compute is the work one tick would do, split.",
        "- The claims themselves do not change: each worker runs the same `claim_due_runs` over its shards, so the"
        " requests per run (section 1) are the same with or without the fan-out.",
    ]
    return "\n".join(lines)


def console(result: dict[str, Any]) -> str:
    rows = result["rows"]
    base = rows[0]["slowest_slice_s"]
    split = ", ".join(
        f"W={r['workers']}: {r['slowest_slice_s']:.2f} s ({r['slowest_slice_s'] / base:.2f}x)" for r in rows
    )
    return f"[9] fan-out: {result['jobs']} due runs over {result['shards']} shards, slowest slice {split}"
