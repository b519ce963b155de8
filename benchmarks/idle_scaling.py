"""Section 4: a tick's requests and time grow with due work, not with stored jobs.

Two pipelines: one storing 10,000 one-shot jobs (full; 2,000 in --quick) of which 100 are due, one storing
only the 100 due. The stored-but-not-due jobs are due in a day: they sit in the due index too (it holds
every ACTIVE job's next occurrence), just beyond the tick's horizon, which is the case the index's sort
key exists for. Each repetition stores 100 new due jobs, runs one tick (timed, requests counted), then
executes the runs before the next repetition so they leave the due index (untimed): every tick sees
exactly 100 due.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from benchmarks.common import CallTimer, Stamp, median, moto_session, seed_one_shots, stopwatch
from benchmarks.fastmoto import fast_sqs_clock
from tests.harness import START, Pipeline

DUE = 100
FULL = {"stored": 10_000, "repeats": 3}
QUICK = {"stored": 1_000, "repeats": 1}


def measure(stored: int, repeats: int) -> dict[str, Any]:
    with moto_session(), fast_sqs_clock(), Pipeline.create(DUE_SHARDS="8") as pipeline:
        timer = CallTimer()
        timer.attach(pipeline.services.clients.client("dynamodb"))
        if stored > DUE:
            seed_one_shots(pipeline, stored - DUE, START + timedelta(days=1), tag="idle")
        ticks: list[dict[str, Any]] = []
        for repeat in range(repeats):
            seed_one_shots(pipeline, DUE, pipeline.clock.now() + timedelta(seconds=150), tag="due")
            pipeline.clock.advance(151)
            pipeline.calls.clear()
            timer.clear()
            with stopwatch(quiet_gc=True) as elapsed:
                report = pipeline.services.dispatcher.claim_due_runs()
            seconds = elapsed()
            calls = dict(pipeline.calls.by_operation())
            if report.dispatched != DUE:
                raise RuntimeError(f"tick dispatched {report.dispatched} of {DUE}")
            ticks.append(
                {
                    "seconds": seconds,
                    "query_s": timer.window("Query"),
                    "calls": calls,
                    "requests": sum(calls.values()),
                }
            )
            if repeat < repeats - 1:
                pipeline.drain()  # the runs leave the due index, so the next tick sees only its own 100
    return {
        "stored": stored,
        "due": DUE,
        "ticks": ticks,
        "requests": ticks[0]["requests"],
        "calls": ticks[0]["calls"],
        "requests_identical": all(t["calls"] == ticks[0]["calls"] for t in ticks),
        "seconds": median([t["seconds"] for t in ticks]),
        "query_s": median([t["query_s"] for t in ticks]),
    }


def run(stamp: Stamp, *, quick: bool) -> dict[str, Any]:
    plan = QUICK if quick else FULL
    large = measure(plan["stored"], plan["repeats"])
    small = measure(DUE, plan["repeats"])
    return {
        "stamp": stamp.__dict__,
        "repeats": plan["repeats"],
        "large": large,
        "small": small,
        "same_requests": large["calls"] == small["calls"],
        "time_ratio": large["seconds"] / small["seconds"],
    }


def render(result: dict[str, Any]) -> str:
    stamp = Stamp(**result["stamp"])
    large, small = result["large"], result["small"]

    def calls(r: dict[str, Any]) -> str:
        return ", ".join(f"{n} {op}" for op, n in sorted(r["calls"].items()))

    verdict = (
        "identical: a tick's requests grow with due work, not with stored jobs"
        if result["same_requests"]
        else "DIFFERENT: stored jobs cost requests"
    )
    return "\n".join(
        [
            "## 4. Idle scaling",
            "",
            f"Measured by {stamp.line()}.",
            "",
            f"One tick with {large['due']} jobs due, over a table storing {large['stored']:,} jobs, and over one storing"
            f" only the {small['due']} due (the rest are due in a day: in the due index, beyond the horizon)."
            f" `DUE_SHARDS=8`; median of {result['repeats']} ticks each, new due jobs every tick.",
            "",
            "| stored jobs | due | requests per tick | tick time (median) | of which due-index queries |",
            "|---:|---:|---:|---:|---:|",
            f"| {large['stored']:,} | {large['due']} | {large['requests']} | {large['seconds']:.2f} s | {large['query_s']:.2f} s |",
            f"| {small['stored']:,} | {small['due']} | {small['requests']} | {small['seconds']:.2f} s | {small['query_s']:.2f} s |",
            "",
            f"Requests: {verdict}. Both: {calls(large)}. That is one query per shard (a page holds 200"
            " entries), a lease and its release on each shard with due work, and per due job one `PutItem` and"
            " one `UpdateItem`, plus a `SendMessageBatch` per 10 runs.",
            "",
            f"Time: {result['time_ratio']:.2f}x with {large['stored'] // small['stored']}x the stored jobs. The growth is"
            " moto's, not DynamoDB's: moto answers a GSI query by walking the whole index and filtering"
            " (it also slows as run records accumulate), where DynamoDB reads only the key range"
            " `due_at <= now + horizon` of each shard's partition, whose cost is the entries returned.",
        ]
    )


def console(result: dict[str, Any]) -> str:
    large, small = result["large"], result["small"]
    return (
        f"[4] idle scaling: {large['stored']} stored/{large['due']} due: {large['requests']} requests,"
        f" {large['seconds']:.2f} s; {small['stored']} stored/{small['due']} due: {small['requests']} requests,"
        f" {small['seconds']:.2f} s; same requests: {result['same_requests']}"
    )
