"""Part of section 1 (requests): what keeping a job's forecast costs per run (docs/forecasts.md). The real pipeline
in-process on moto, as section 1: `JOBS` once-a-minute `echo` jobs run `WARM_MINUTES` minutes (their forecasts
fill), then `MEASURED_MINUTES` more are metered, once with the claim's fold of the ended runs (as deployed) and once
without it (the same pipeline with the fold taken out), and the two compared per run: requests by operation and
item, DynamoDB write and read units (the tick's shard leases left out: they follow how the random job ids fall
in the shards, not the forecast). The target: no write more per run; what is paid instead is one Query per claim.
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Any

from tickwork.store.codec import job_key

from benchmarks.common import PhaseMeter, moto_session
from tests.harness import Pipeline

JOBS = 4
WARM_MINUTES = 22  # over MIN_RUNS: the forecasts exist when the metering starts
MEASURED_MINUTES = 3


def measure(*, fold: bool) -> dict[str, Any]:
    with moto_session(), Pipeline.create() as pipeline:
        if not fold:
            pipeline.services.dispatcher.claimer.fold = None
        jobs = [
            pipeline.create_job(name=f"forecast {n}", schedule={"rate": "1 minute"}, payload={"n": n})
            for n in range(JOBS)
        ]
        for _ in range(WARM_MINUTES):
            _minute(pipeline)
        metered = PhaseMeter(pipeline)
        for _ in range(MEASURED_MINUTES):
            _minute(pipeline)
        metered.close("measured")
        db = pipeline.services.clients.client("dynamodb")
        stored = [
            db.get_item(TableName=pipeline.resources.table_name, Key=job_key(j.id))["Item"].get("forecasts", {})
            for j in jobs
        ]
    # Left out, as they are not the forecast's: the shard leases (per tick and shard with work: how 4 random job ids
    # fall in the shards), and the tick's read of its run entries' items (BatchGetItem: whether a run is still in
    # the due index when a tick passes follows moto's wall-clock DelaySeconds, not the fold).
    calls = [c for c in metered.phases["measured"] if c.item != "shard lease" and c.operation != "BatchGetItem"]
    per_op = Counter(f"{c.service}:{c.operation}" + (f" {c.item}" if c.item else "") for c in calls)
    executed = JOBS * MEASURED_MINUTES  # a once-a-minute job runs once a minute
    return {
        "fold": fold,
        "runs": executed,
        "per_run": {op: n / executed for op, n in sorted(per_op.items())},
        "wru_per_run": sum(sum(c.wru.values()) for c in calls) / executed,
        "rru_per_run": sum(c.rru for c in calls) / executed,
        "forecast_bytes": max(len(item.get("S", "").encode()) for item in stored),
    }


def _minute(pipeline: Pipeline) -> None:
    pipeline.clock.advance(timedelta(minutes=1).total_seconds())
    pipeline.tick()
    pipeline.drain(wait_out_backoff=False)


def run() -> dict[str, Any]:
    with_fold, without = measure(fold=True), measure(fold=False)
    ops = sorted(set(with_fold["per_run"]) | set(without["per_run"]))
    added = {
        op: with_fold["per_run"].get(op, 0) - without["per_run"].get(op, 0)
        for op in ops
        if with_fold["per_run"].get(op, 0) != without["per_run"].get(op, 0)
    }
    return {
        "with": with_fold,
        "without": without,
        "added_per_run": added,
        "added_wru_per_run": with_fold["wru_per_run"] - without["wru_per_run"],
        "added_rru_per_run": with_fold["rru_per_run"] - without["rru_per_run"],
    }


def render(result: dict[str, Any]) -> list[str]:
    added = result["added_per_run"]
    with_fold, without = result["with"], result["without"]
    lines = ", ".join(f"`{op}` {n:+.2f}" for op, n in added.items()) or "none"
    return [
        "### What a job's forecast costs per run (docs/forecasts.md)",
        "",
        f"{JOBS} once-a-minute `echo` jobs, {WARM_MINUTES} minutes to fill their forecasts, then {with_fold['runs']}"
        " runs metered with the claim's fold and without it (`benchmarks/forecast_cost.py`):",
        "",
        "| per run | without forecasts | with | added |",
        "|---|---:|---:|---:|",
        f"| DynamoDB WRU | {without['wru_per_run']:.2f} | {with_fold['wru_per_run']:.2f} |"
        f" {result['added_wru_per_run']:+.2f} |",
        f"| DynamoDB RRU | {without['rru_per_run']:.2f} | {with_fold['rru_per_run']:.2f} |"
        f" {result['added_rru_per_run']:+.2f} |",
        "",
        f"Requests added per run: {lines}. The forecast on the job item: {with_fold['forecast_bytes']} bytes at most.",
    ]


if __name__ == "__main__":
    print("\n".join(render(run())))
