"""Section 6: scale on paper. The arithmetic for 100M and 1B one-shot runs a day, from the measured
per-run counts (section 1), costs (section 2) and the tick's client CPU per claim (section 3), with the
limits of shared/reference/aws-facts.md. Nothing here is measured; every input is named.

The prose is written by hand (in this module, so the numbers in it are recomputed on every run).
"""

from __future__ import annotations

import math
from typing import Any

from benchmarks.common import Stamp

DAY_S = 86_400
SCALES = (100_000_000, 1_000_000_000)
PEAK = 5.0  # design for a peak minute 5x the day's average (cron bunches at :00)
PARTITION_WCU = 1_000  # DynamoDB per-partition write limit (aws-facts.md)
TABLE_DEFAULT_MAX = 40_000  # on-demand default table max WRU/s (aws-facts.md, adjustable)
ESM_MAX = 1_000  # Lambda SQS mapping max concurrency per mapping (aws-facts.md)
SCHEDULER_TPS = 1_000  # EventBridge Scheduler default invocation throughput (aws-facts.md)
S3_PUT_PER_PREFIX = 3_500  # S3 performance guidelines (not in the facts file)
LAMBDA_MB_PER_VCPU = 1_769  # Lambda: 1,769 MB = 1 vCPU (Lambda docs; not in the facts file)
DUE_INDEX_WRITES_PER_RUN = 4  # job enters at create, run enters at claim, job leaves at claim, run leaves at lease
TICK_WINDOW_S = 50  # of the tick's 55 s timeout, what claiming may use
EXECUTOR_BATCH_S = 0.1  # a batch of 10 echo runs, concurrently (assumption, as section 2's)


def _pow2(x: float) -> int:
    return 1 << max(0, math.ceil(math.log2(max(1.0, x))))


def arithmetic(s1: dict[str, Any], s2: dict[str, Any], s3: dict[str, Any] | None) -> dict[str, Any]:
    billed = s1["billable"]["ahead"]
    wru_per_run = billed["wru_per_run"]
    sqs_per_run = billed["sqs_requests"]
    cost_t = s2["per_million"]["tickwork_total"]
    cost_e = s2["per_million"]["scheduler_total"]
    client_ms = None
    if s3:
        ones = [s for s in s3.get("sweep", []) if s["threads"] == 1 and "client_ms_per_run" in s]
        if ones:
            client_ms = ones[0]["client_ms_per_run"]
    # Per claim on Lambda: the client's CPU (measured here, on a desktop core) on a 1,024 MB tick Lambda
    # (1024/1769 of a vCPU); network waits overlap across claim threads, CPU does not.
    claim_cpu_ms = client_ms if client_ms is not None else 4.0
    tick_vcpu = 1024 / LAMBDA_MB_PER_VCPU
    claims_per_s_per_lambda = 1000 / claim_cpu_ms * tick_vcpu
    rows = []
    for per_day in SCALES:
        avg = per_day / DAY_S
        peak = avg * PEAK
        due_wcu_peak = peak * DUE_INDEX_WRITES_PER_RUN
        shards_needed = due_wcu_peak / PARTITION_WCU
        shards = _pow2(shards_needed * 2)  # 2x headroom: crc32 spreads jobs evenly, not perfectly
        table_wru_peak = peak * wru_per_run
        per_minute_peak = peak * 60
        per_worker_minute = claims_per_s_per_lambda * TICK_WINDOW_S
        workers = math.ceil(per_minute_peak / per_worker_minute)
        exec_concurrency = peak / 10 * EXECUTOR_BATCH_S
        month = per_day * 30
        rows.append(
            {
                "per_day": per_day,
                "avg_per_s": avg,
                "peak_per_s": peak,
                "due_wcu_peak": due_wcu_peak,
                "shards_needed": shards_needed,
                "shards": shards,
                "table_wru_avg": avg * wru_per_run,
                "table_wru_peak": table_wru_peak,
                "table_quota_x": table_wru_peak / TABLE_DEFAULT_MAX,
                "per_minute_peak": per_minute_peak,
                "dispatch_workers": workers,
                "sqs_per_s_peak": peak * sqs_per_run,
                "executor_concurrency_peak": exec_concurrency,
                "s3_prefixes": math.ceil(peak / S3_PUT_PER_PREFIX),
                "scheduler_quota_x": peak / SCHEDULER_TPS,
                "month_runs": month,
                "tickwork_month_usd": month / 1e6 * cost_t,
                "scheduler_month_usd": month / 1e6 * cost_e,
            }
        )
    return {
        "wru_per_run": wru_per_run,
        "claim_cpu_ms": claim_cpu_ms,
        "claim_cpu_measured": client_ms is not None,
        "claims_per_s_per_lambda": claims_per_s_per_lambda,
        "one_tick_runs_per_minute": claims_per_s_per_lambda * TICK_WINDOW_S,
        "rows": rows,
    }


def _n(x: float) -> str:
    if x >= 100:
        return f"{x:,.0f}"
    if x >= 10:
        return f"{x:.0f}"
    return f"{x:.1f}"


def _usd(x: float) -> str:
    return f"${x:,.0f}"


def render(stamp: Stamp, s1: dict[str, Any], s2: dict[str, Any], s3: dict[str, Any] | None) -> str:
    a = arithmetic(s1, s2, s3)
    r100, r1b = a["rows"]
    one_tick_day = a["one_tick_runs_per_minute"] * 1440
    cpu_src = (
        "measured in section 3 (the tick with one claim thread, minus the time spent inside moto)"
        if a["claim_cpu_measured"]
        else "assumed (section 3 not run)"
    )
    lines = [
        "## 6. Scale on paper",
        "",
        f"Arithmetic, not measurement: recomputed by {stamp.line()} from sections 1-3 and the limits in"
        " `shared/reference/aws-facts.md`. Assumptions: a peak minute carries"
        f" {PEAK:g}x the day's average rate (cron bunches at :00); Lambda gives 1 vCPU per 1,769 MB and S3"
        " takes 3,500 PUT/s per prefix (both from AWS docs, not in the facts file).",
        "",
        "| | 100M runs/day | 1B runs/day |",
        "|---|---:|---:|",
        f"| average / peak runs per second | {_n(r100['avg_per_s'])} / {_n(r100['peak_per_s'])} |"
        f" {_n(r1b['avg_per_s'])} / {_n(r1b['peak_per_s'])} |",
        f"| due-index writes at peak ({DUE_INDEX_WRITES_PER_RUN} per run, < 1 KB each) | {_n(r100['due_wcu_peak'])}/s |"
        f" {_n(r1b['due_wcu_peak'])}/s |",
        f"| shards needed at 1,000 WCU per partition / chosen (2x headroom, power of 2) |"
        f" {_n(r100['shards_needed'])} / **{r100['shards']}** | {_n(r1b['shards_needed'])} / **{r1b['shards']}** |",
        f"| table WRU/s, average / peak ({a['wru_per_run']:.1f} WRU per run) | {_n(r100['table_wru_avg'])} /"
        f" {_n(r100['table_wru_peak'])} | {_n(r1b['table_wru_avg'])} / {_n(r1b['table_wru_peak'])} |",
        f"| vs the on-demand default table maximum (40,000 WRU/s, adjustable) | {r100['table_quota_x']:.1f}x |"
        f" {r1b['table_quota_x']:.1f}x |",
        f"| runs to claim in a peak minute | {_n(r100['per_minute_peak'])} | {_n(r1b['per_minute_peak'])} |",
        f"| dispatch workers (~{a['one_tick_runs_per_minute']:,.0f} claims per worker-minute, see below) |"
        f" **{r100['dispatch_workers']}** | **{r1b['dispatch_workers']}** |",
        f"| SQS requests/s at peak (standard queues: nearly unlimited) | {_n(r100['sqs_per_s_peak'])} |"
        f" {_n(r1b['sqs_per_s_peak'])} |",
        f"| executor concurrency at peak (batches of 10, ~{EXECUTOR_BATCH_S * 1000:.0f} ms each) |"
        f" {_n(r100['executor_concurrency_peak'])} | {_n(r1b['executor_concurrency_peak'])} |",
        f"| S3 result prefixes needed at 3,500 PUT/s | {r100['s3_prefixes']} | {r1b['s3_prefixes']} |",
        f"| Tickwork per month (30 days, section 2's per-million cost) | {_usd(r100['tickwork_month_usd'])} |"
        f" {_usd(r1b['tickwork_month_usd'])} |",
        f"| EventBridge Scheduler per month, same work | {_usd(r100['scheduler_month_usd'])} |"
        f" {_usd(r1b['scheduler_month_usd'])} |",
        f"| EventBridge Scheduler invocations vs its default 1,000/s | {r100['scheduler_quota_x']:.1f}x |"
        f" {r1b['scheduler_quota_x']:.1f}x |",
        "",
        "### Where one tick per minute stops",
        "",
        f"A claim is two conditional writes. Against DynamoDB each waits ~5-10 ms on the network, which claim"
        f" threads overlap; the client's CPU per claim does not overlap: {a['claim_cpu_ms']:.1f} ms here, {cpu_src}."
        f" The tick Lambda has 1,024 MB, {1024 / LAMBDA_MB_PER_VCPU:.2f} of a vCPU, and Python's GIL keeps one"
        f" process on one core: about {a['claims_per_s_per_lambda']:,.0f} claims/s, so"
        f" ~{a['one_tick_runs_per_minute']:,.0f} runs in the {TICK_WINDOW_S} s a tick may spend (timeout 55 s)."
        f" That is ~{one_tick_day / 1e6:,.0f}M runs a day if they were spread evenly; `MaxDispatchPerTick`"
        " (5,000 by default) caps a tick below that on purpose, and a run it defers waits for the next tick"
        " (it stays in the due index; priorities decide who waits). 100M a day is ~70,000 runs a minute on"
        " average: one tick cannot carry it, whatever the memory size.",
        "",
        "### What changes: a shard-parallel dispatcher fan-out",
        "",
        f"1. **Shards.** `DueShards` to the table's power of two ({r100['shards']} for 100M/day, {r1b['shards']} for"
        " 1B/day). Shards may"
        " grow, never shrink (the README's deploy note): a job's shard is `crc32(job id) % shards`, and a tick"
        " queries every shard, so old entries stay reachable when the count grows.",
        "2. **Fan-out** (built: `tickwork.tick.fanout`, section 9). Set the template's `DispatchWorkers` to W: the"
        " minute rule's tick becomes the coordinator and sends one `DispatchSlice` per worker to `DispatchQueue`"
        " (ten to a `SendMessageBatch`), worker `i` of `W` taking the shards `s % W == i`; `DispatchFunction`"
        " (batch size 1) runs `Dispatcher.claim_slice`, the ordinary claim over its shards. A queue, not"
        " asynchronous invokes: a slice is never retried (maxReceiveCount 1, to `TickDeadLetterQueue`: the next"
        " tick covers its shards) and a slice a tick old is dropped, where Lambda's async retries could bring it"
        " back hours late; the local runtime plays SQS event sources already. The shard leases make overlapping"
        " workers split shards rather than collide and the run's conditional put keeps every claim exactly-once"
        " (tests/integration/test_fanout_pipeline.py: racing workers, a killed worker, a killed coordinator;"
        " tests/faults/test_fanout_crash.py). Workers per minute: the table above (peak minute / claims per"
        " worker-minute); W does not yet grow with the backlog by itself.",
        "3. **Claim threads.** `CLAIM_THREADS` stays at the number that keeps a worker's core busy"
        " (network-bound claims: ~8-16); more memory buys more of a core up to 1,769 MB, not more cores"
        " for one Python process.",
        "4. **Executors.** Concurrency at peak is modest (table), within 1,000 per mapping; the mapping scales"
        " by +300 a minute from 5, so a cron spike after a quiet spell starts late until it has ramped:"
        " set `MaximumConcurrency` and keep a floor of pollers (provisioned mode) for spiky loads.",
        "5. **DynamoDB.** At these rates the table needs its on-demand maximum raised (row above), or"
        " provisioned capacity with auto scaling, which is cheaper at steady high volume. The base table's"
        " key (`JOB#<id>`) spreads writes evenly; only the due index concentrates them, on its shards.",
        "6. **S3.** Built: result keys start `results/<two hex digits of the run id's SHA-256>/` (then tenant,"
        " job, run), so a burst's results land in 256 key ranges from the start rather than one tenant's single"
        " time-ordered range (3,500 PUT/s per prefix until S3 splits it); results written before keep their old"
        " key and are still read. Or keep small results out of S3 altogether (`InlineResultMaxBytes`, section 1).",
    ]
    return "\n".join(lines)
