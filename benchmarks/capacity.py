"""Capacity, by simulation: Tickwork on AWS over a day of 100M and 1B runs, second by second.

moto serves one request at a time, so no local timing shows AWS-scale throughput. This model does: a
per-second simulation (pure Python, no AWS, deterministic for a seed) of the dispatcher fan-out, the SQS
band queue, the executors and the stores they write to, calibrated with the repo's own measured figures
(benchmarks/results.json: section 1's requests and write units per run, section 3's client CPU per claim)
and the limits of shared/reference/aws-facts.md. docs/scale.md describes it, its inputs and its limits.

The day. Half the runs are a uniform background; the other half are crons firing at second :00 of their
minute, more of them at :05s, more at :15s, more on the hour, and the most at 09:00 UTC, which is weighted
so that its minute carries exactly `peak_factor` (5) times the day's average minute.

Each second:
1. **Dispatch.** At :00 the coordinator starts W workers (W may grow with the backlog it measures: the
   unclaimed runs within the horizon). Worker i claims the due runs of shards s with s % W == i, oldest
   first, up to `horizon_s` ahead, for `tick_window_s`. A worker's claim rate is the lesser of its CPU (the
   measured client CPU per claim on its share of a vCPU, one core at most: the GIL) and its claim threads
   overlapping their network waits. The busiest worker has ceil(shards / W) shards, so the fan-out claims
   at worker rate x shards / ceil(shards / W).
2. **SQS.** A claimed run is sent (batches of 10) with DelaySeconds = ceil(due - now), so a run claimed
   before its second becomes visible at it (the rounding: 0-1 s for a run due mid-second; `precise` start
   precision removes it); one claimed late is visible at once.
3. **Executors.** Visible runs are taken first in, first out by the event source mapping's concurrent
   batches: each starts 10 runs per batch duration (the chain of requests per run, on 10 threads sharing
   the Lambda's share of a core). Concurrency grows by +300 a minute while messages wait (aws-facts.md),
   up to MaximumConcurrency per mapping, and is assumed to shrink at the same rate when idle, never below
   the provisioned floor. A run starts at its lease, after the receive, the visibility change and the lease.
4. **Limits.** DynamoDB: the due index's shards take 1,000 WCU each (its writes per run from section 1),
   the table `table_max_wru` (on-demand maximum, default 40,000/s, adjustable). S3: 3,500 PUT/s per prefix,
   one hot prefix without a hash prefix on result keys, 256 with two hex digits. When a limit binds, the
   work waits (SDK retries with backoff): creates first, then executors, then claims take what is left.

Runs are counted in cohorts (due second, cron or background), as integers, so every run starts exactly
once; lateness is sampled per started slice of a cohort (seeded) and bounded exactly for the maximum.
"""

from __future__ import annotations

import json
import math
import random
from collections import deque
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from benchmarks import ROOT, cost, hour_top_report
from benchmarks.common import Stamp
from benchmarks.prices import assumption, price

DAY_S = 86_400
RESULTS = ROOT / "benchmarks" / "results.json"
PEAK_MINUTE = 9 * 60  # 09:00 UTC: the day's largest cron bunch
LAMBDA_MB_PER_VCPU = 1_769  # Lambda docs: 1 vCPU at 1,769 MB (as section 6)
PARTITION_WCU = 1_000  # DynamoDB per-partition writes (aws-facts.md)
TABLE_DEFAULT_MAX_WRU = 40_000  # on-demand default table maximum (aws-facts.md, adjustable)
ESM_RAMP_PER_MIN = 300  # Lambda + SQS: +300 concurrent batches a minute (aws-facts.md)
ESM_START = 5  # ... starting at 5 (aws-facts.md)
ESM_MAX = 1_000  # ... up to 1,000 per mapping; MaximumConcurrency 2-1,000 (aws-facts.md)
S3_PUT_PER_PREFIX = 3_500  # S3 performance guidelines (as section 6)
HASH_PREFIXES = 256  # two hex digits of a hash in front of the result key
BATCH = 10  # SQS batch size (aws-facts.md) and the mapping's BatchSize (template.yaml)
QUERY_PAGE = 200  # due-index entries per query page (section 4)
LATE_GOAL_S = 1.25  # the lateness goal (p99)


@dataclass(frozen=True)
class Latency:
    """Network round trips in region, seconds. DynamoDB: "single-digit millisecond" (DynamoDB docs); S3: small
    requests' median latency "in the tens of milliseconds" (S3 performance guidelines, timeouts and retries);
    SQS publishes none: assumed as DynamoDB's order plus a little."""

    dynamodb: float = 0.006
    sqs: float = 0.010
    s3: float = 0.030


@dataclass(frozen=True)
class Calibration:
    """What the repo measured, per run; `source` says where each figure came from."""

    claim_cpu_ms: float  # client CPU per claim, one thread (section 3)
    claim_requests: float  # SDK requests per claim (section 1, tick phase)
    execute_requests: dict[str, float]  # the executor's SDK requests per run, by service (section 1)
    due_writes: dict[str, float]  # due-index writes per run, by phase: create, tick, execute (section 1)
    wru: dict[str, float]  # table + index WRU per run, by phase (section 1)
    section1: dict[str, Any] | None = None  # section 1's result, for section 2's cost model
    source: dict[str, str] = field(default_factory=dict)

    @property
    def cpu_per_request_ms(self) -> float:
        """botocore and Tickwork's CPU per request: the claim's, shared by its requests."""
        return self.claim_cpu_ms / self.claim_requests


@dataclass(frozen=True)
class Scenario:
    name: str
    runs_per_day: int
    shards: int
    workers: int  # W, and the least W when it grows with the backlog
    workers_max: int = 0  # 0: W is fixed; else W grows with the measured backlog up to this
    claim_threads: int = 8
    worker_mb: int = 1_769
    executor_mb: int = 1_769
    executor_max_concurrency: int = ESM_MAX  # MaximumConcurrency per mapping
    executor_mappings: int = 1  # queues (with their mappings) the runs spread over
    executor_floor: int = ESM_START  # provisioned pollers' floor
    handler_ms: float = 0.0  # the job's own work (echo: none)
    cron_spread_s: int = 0  # jitter: each minute's crons spread over its first seconds (0: all at :00)
    table_max_wru: float = TABLE_DEFAULT_MAX_WRU
    hash_prefix: bool = True
    precision: str = "second"  # or "precise": visible at its instant, not the next whole second
    horizon_s: int = 120  # HORIZON_SECONDS
    tick_window_s: int = 50  # of the tick's 55 s timeout, what claiming may use
    worker_start_s: int = 1  # the coordinator's invoke and a worker's start
    peak_factor: float = 5.0
    background_share: float = 0.5
    latency: Latency = Latency()
    seed: int = 16
    tail_s: int = 3_600  # simulated beyond the day for runs still waiting; what is left is reported
    note: str = ""


# ---------------------------------------------------------------- inputs


def load_calibration(results: dict[str, Any] | None = None) -> Calibration:
    """Read the measured figures from benchmarks/results.json (what `make bench` last wrote)."""
    data = results if results is not None else _results_file(RESULTS)
    s1 = data.get("requests")
    s3 = data.get("dispatch")
    if s1 is None:
        raise ValueError(
            "benchmarks/results.json has no section 1 (requests): run `python -m benchmarks.run --only requests,cost`"
        )
    phases = s1["scenarios"]["ahead"]["phases"]
    tick_calls: dict[str, float] = phases["tick"]["per_run"]
    execute = {"dynamodb": 0.0, "sqs": 0.0, "s3": 0.0}
    for op, n in phases["execute"]["per_run"].items():
        if "(empty)" in op:  # the mapping's idle polls: not on a run's path
            continue
        execute[op.split(":", 1)[0]] = execute.get(op.split(":", 1)[0], 0.0) + n

    def by_phase(part: str | None) -> dict[str, float]:
        return {
            phase: sum(
                (parts.get(part, 0.0) if part else sum(parts.values())) for parts in body["wru_per_run"].values()
            )
            for phase, body in phases.items()
        }

    claim_cpu = None
    if s3:
        ones = [row for row in s3.get("sweep", []) if row.get("threads") == 1 and row.get("client_ms_per_run", 0) > 0]
        claim_cpu = ones[0]["client_ms_per_run"] if ones else None
    s1_line = Stamp(**s1["stamp"]).line()
    return Calibration(
        claim_cpu_ms=claim_cpu if claim_cpu is not None else 4.0,
        claim_requests=sum(tick_calls.values()) + 1 / QUERY_PAGE,
        execute_requests=execute,
        due_writes=by_phase("due-index"),
        wru=by_phase(None),
        section1=s1,
        source={
            "claim_cpu_ms": (
                f"section 3, one claim thread ({Stamp(**s3['stamp']).line()})"
                if claim_cpu and s3
                else "assumed (section 3 not run)"
            ),
            "section1": s1_line,
        },
    )


def _results_file(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text()) if path.exists() else {}


# ---------------------------------------------------------------- the day's shape


def day_profile(
    runs_per_day: int, peak_factor: float, background_share: float, seed: int, cron_spread_s: int = 0
) -> tuple[list[int], list[int]]:
    """Runs due in each second of the day: (crons at :00 exactly, runs spread over the second), exact integers.

    With `cron_spread_s` (a jitter window, docs/policies.md) each minute's crons are spread over its first
    seconds instead: their lateness counts from their jittered instant."""
    minutes = DAY_S // 60
    weights = [1.0 + (m % 5 == 0) + 2 * (m % 15 == 0) + 4 * (m % 60 == 0) for m in range(minutes)]
    # The peak minute's weight c makes its total peak_factor x the average minute:
    # background/1440 + cron * c / (rest + c) = peak_factor / 1440.
    rest = sum(weights) - weights[PEAK_MINUTE]
    target = (peak_factor - background_share) / minutes / (1 - background_share)
    weights[PEAK_MINUTE] = target * rest / (1 - target)
    if weights[PEAK_MINUTE] < max(weights[:PEAK_MINUTE] + weights[PEAK_MINUTE + 1 :]):
        raise ValueError("peak_factor too low for this profile: another minute would be busier")
    cron_total = round(runs_per_day * (1 - background_share))
    cron_minutes = _apportion(cron_total, weights, random.Random(seed))
    cron = [0] * DAY_S
    background = _apportion(runs_per_day - cron_total, [1.0] * DAY_S, random.Random(seed + 1))
    spread_rng = random.Random(seed + 3)
    for m, n in enumerate(cron_minutes):
        if cron_spread_s > 1:
            for i, k in enumerate(_apportion(n, [1.0] * cron_spread_s, spread_rng)):
                background[m * 60 + i] += k
        else:
            cron[m * 60] = n
    return cron, background


def _apportion(total: int, weights: list[float], rng: random.Random) -> list[int]:
    """Split `total` by `weights` into integers summing to it exactly (remainders given out at random)."""
    scale = total / sum(weights)
    shares = [w * scale for w in weights]
    counts = [int(s) for s in shares]
    short = total - sum(counts)
    order = sorted(range(len(weights)), key=lambda i: (counts[i] - shares[i], rng.random()))
    for i in order[:short]:
        counts[i] += 1
    return counts


# ---------------------------------------------------------------- the stages' rates


def vcpu(mb: int) -> float:
    """A Lambda's share of a core: 1 vCPU per 1,769 MB, and Python's GIL keeps a process on one core."""
    return min(1.0, mb / LAMBDA_MB_PER_VCPU)


def worker_claims_per_s(sc: Scenario, cal: Calibration) -> dict[str, float]:
    cpu_s = cal.claim_cpu_ms / 1000 / vcpu(sc.worker_mb)
    lat = sc.latency
    # A claim's network wait: its two conditional writes, a tenth of a SendMessageBatch, its share of a query page.
    wait_s = (
        (cal.claim_requests - 1 / BATCH - 1 / QUERY_PAGE) * lat.dynamodb + lat.sqs / BATCH + lat.dynamodb / QUERY_PAGE
    )
    by_cpu = 1 / cpu_s
    by_threads = sc.claim_threads / (wait_s + cpu_s)
    return {"cpu": by_cpu, "threads": by_threads, "rate": min(by_cpu, by_threads), "wait_s": wait_s, "cpu_s": cpu_s}


def executor_timing(sc: Scenario, cal: Calibration) -> dict[str, float]:
    """A batch's duration and a run's pickup (visible -> leased), from the executor's requests per run."""
    cpu_req_s = cal.cpu_per_request_ms / 1000 / vcpu(sc.executor_mb)
    lat = {"dynamodb": sc.latency.dynamodb, "sqs": sc.latency.sqs, "s3": sc.latency.s3}
    per_run = cal.execute_requests
    batch_level = 2 / BATCH  # ReceiveMessage and DeleteMessageBatch: once per batch, not per run
    chain_s = sum(n * lat[svc] for svc, n in per_run.items()) - batch_level * lat["sqs"] + sc.handler_ms / 1000
    cpu_run_s = sum(per_run.values()) * cpu_req_s
    # Ten runs on ten threads: the network waits overlap, their CPU does not (one core at most).
    batch_s = 2 * lat["sqs"] + max(chain_s + cpu_run_s, BATCH * cpu_run_s)
    # Started at the lease: after the receive, the visibility change and the lease, with their CPU.
    pickup_s = 2 * lat["sqs"] + lat["dynamodb"] + 3 * cpu_req_s
    return {"batch_s": batch_s, "pickup_s": pickup_s, "chain_s": chain_s, "cpu_run_s": cpu_run_s}


# ---------------------------------------------------------------- the simulation


@dataclass
class _Slice:
    due: int  # the cohort's second
    kind: int  # 0: cron, at the second exactly; 1: background, spread over it
    count: int
    claimed: int  # the second it was claimed in
    late_claim: bool  # claimed at or after its visibility second: visible at once


def simulate(sc: Scenario, cal: Calibration) -> dict[str, Any]:
    cron, background = day_profile(sc.runs_per_day, sc.peak_factor, sc.background_share, sc.seed, sc.cron_spread_s)
    total = sc.runs_per_day
    claim = worker_claims_per_s(sc, cal)
    claim_rate = claim["rate"]
    timing = executor_timing(sc, cal)
    batch_s, pickup_s = timing["batch_s"], timing["pickup_s"]
    per_slot = BATCH / batch_s  # runs a concurrent batch starts per second
    cmax = float(sc.executor_max_concurrency * sc.executor_mappings)
    ramp = ESM_RAMP_PER_MIN / 60 * sc.executor_mappings
    floor = min(cmax, float(sc.executor_floor * sc.executor_mappings))
    s3_cap = float(S3_PUT_PER_PREFIX * (HASH_PREFIXES if sc.hash_prefix else 1))
    due_budget = float(PARTITION_WCU * sc.shards)
    creates_per_s = total / DAY_S  # created ahead, at a steady rate
    create_due = creates_per_s * cal.due_writes.get("create", 0.0)
    create_wru = creates_per_s * cal.wru.get("create", 0.0)
    exec_due, exec_wru = cal.due_writes.get("execute", 0.0), cal.wru.get("execute", 0.0)
    tick_due, tick_wru = cal.due_writes.get("tick", 0.0), cal.wru.get("tick", 0.0)
    peak_lo = PEAK_MINUTE * 60
    lateness = _Lateness(sc, pickup_s, peak_lo, peak_lo + 60)
    # The busiest worker holds ceil(shards / W) shards; the others wait for none of it.
    shards_per_worker = 0

    # Prefix sums of runs due, to measure the backlog within the horizon in O(1).
    due_prefix = [0] * (DAY_S + 1)
    for t in range(DAY_S):
        due_prefix[t + 1] = due_prefix[t] + cron[t] + background[t]

    ptr_t, ptr_kind, ptr_left = 0, 0, cron[0]  # the next unclaimed runs, oldest first
    claimed_total = started = queued = 0
    pending: dict[int, list[_Slice]] = {}  # visibility second -> claimed slices
    queue: deque[_Slice] = deque()  # visible, waiting for an executor
    started_by_cohort = [0] * DAY_S
    concurrency = floor
    claim_carry = exec_carry = 0.0
    workers_now, window_from, window_to, claim_limit = 0, 0, -1, -1
    workers_max = 0
    concurrency_max = s3_put_max = due_wcu_max = table_wru_max = worker_busy_s = 0.0
    create_overload_s = claim_throttled_s = exec_throttled_s = late_claims = 0
    if due_budget < create_due or sc.table_max_wru < create_wru:
        create_overload_s = DAY_S  # the creates alone exceed a limit, all day
    exec_limits = [cap for cap in (s3_cap,) if cap]
    if exec_due:
        exec_limits.append(max(0.0, due_budget - create_due) / exec_due)
    if exec_wru:
        exec_limits.append(max(0.0, sc.table_max_wru - create_wru) / exec_wru)
    exec_limit = min(exec_limits)  # what the stores let the executors start per second
    end = DAY_S + sc.tail_s
    # Start the dispatcher a horizon early, so the day's first runs are claimed ahead as every later run is.
    s = -math.ceil(sc.horizon_s / 60) * 60
    while s < end:
        if s % 60 == 0:
            # The coordinator, every minute: W workers for the tick's window, W grown with the backlog.
            claim_limit = s + sc.horizon_s
            workers_now = sc.workers
            if sc.workers_max:
                backlog = due_prefix[min(DAY_S, claim_limit + 1)] - claimed_total
                per_worker_tick = claim_rate * sc.tick_window_s
                workers_now = max(sc.workers, min(sc.workers_max, math.ceil(max(0, backlog) / per_worker_tick)))
            workers_max = max(workers_max, workers_now)
            shards_per_worker = math.ceil(sc.shards / workers_now)
            window_from, window_to = s + sc.worker_start_s, s + sc.worker_start_s + sc.tick_window_s
        arriving = pending.pop(s, None)
        if arriving:
            for sl in arriving:
                queue.append(sl)
                queued += sl.count

        # Executors first: what is visible now starts before what the workers claim now.
        n_start = 0
        cap = concurrency * per_slot
        if queued:
            exec_cap = min(cap, exec_limit)
            if exec_cap < cap and queued > exec_cap:
                exec_throttled_s += 1
            budget = exec_cap + exec_carry
            n_start = min(queued, int(budget))
            exec_carry = budget - n_start if queued > n_start else 0.0
            scale = 1.0 / max(exec_cap, 1e-9)
            position = 0
            while position < n_start:
                sl = queue[0]
                take = min(sl.count, n_start - position)
                lateness.started(sl, take, s, position * scale, (position + take) * scale)
                started_by_cohort[sl.due] += take
                position += take
                sl.count -= take
                if sl.count == 0:
                    queue.popleft()
            queued -= n_start
            started += n_start
        in_use = min(concurrency, n_start / per_slot)
        if in_use > concurrency_max:
            concurrency_max = in_use
        if n_start > s3_put_max:
            s3_put_max = float(n_start)
        if queued > 0:
            concurrency = min(cmax, concurrency + ramp)
        elif concurrency > floor:
            concurrency = max(floor, in_use, concurrency - ramp)

        # Dispatch workers, within their window; the due index and the table take what is left.
        n_claim = 0
        if window_from <= s < window_to and ptr_t < DAY_S and ptr_t <= claim_limit:
            fan_out = claim_rate * sc.shards / shards_per_worker
            claim_cap = fan_out
            if tick_due:
                claim_cap = min(claim_cap, max(0.0, due_budget - create_due - n_start * exec_due) / tick_due)
            if tick_wru:
                claim_cap = min(claim_cap, max(0.0, sc.table_max_wru - create_wru - n_start * exec_wru) / tick_wru)
            if claim_cap < fan_out:
                claim_throttled_s += 1
            budget = claim_cap + claim_carry
            want = int(budget)
            while n_claim < want and ptr_t < DAY_S and ptr_t <= claim_limit:
                take = min(ptr_left, want - n_claim)
                if take:
                    vis = ptr_t if (ptr_kind == 0 or sc.precision == "precise") else ptr_t + 1
                    late = s >= vis
                    sl = _Slice(ptr_t, ptr_kind, take, s, late)
                    pending.setdefault(s + 1 if late else vis, []).append(sl)
                    if late:
                        late_claims += take
                    n_claim += take
                    ptr_left -= take
                if ptr_left == 0:
                    ptr_t, ptr_kind = (ptr_t, 1) if ptr_kind == 0 else (ptr_t + 1, 0)
                    if ptr_t < DAY_S:
                        ptr_left = cron[ptr_t] if ptr_kind == 0 else background[ptr_t]
            claim_carry = budget - n_claim if n_claim == want else 0.0
            claimed_total += n_claim
            worker_busy_s += n_claim / claim_rate
        else:
            claim_carry = 0.0
        if n_start or n_claim:
            due_used = create_due + n_start * exec_due + n_claim * tick_due
            wru_used = create_wru + n_start * exec_wru + n_claim * tick_wru
            due_wcu_max = max(due_wcu_max, due_used)
            table_wru_max = max(table_wru_max, wru_used)
        s += 1
        if s >= DAY_S and claimed_total == total and queued == 0 and not pending:
            break

    unstarted = total - started
    peak_unstarted = 0
    if unstarted:
        for t in range(DAY_S):
            left = cron[t] + background[t] - started_by_cohort[t]
            if left:
                lateness.never_started(t, left, s)
                peak_unstarted += left if peak_lo <= t < peak_lo + 60 else 0
    lateness_summary = lateness.summary()
    return {
        "scenario": _scenario_dict(sc),
        "runs": total,
        "started": started,
        "unstarted": unstarted,
        "peak_unstarted": peak_unstarted,
        "overstarted_cohorts": sum(1 for t in range(DAY_S) if started_by_cohort[t] > cron[t] + background[t]),
        "simulated_s": s,
        "peak_minute_runs": due_prefix[peak_lo + 60] - due_prefix[peak_lo],
        "peak": lateness_summary["peak"],
        "day": lateness_summary["day"],
        "claim": claim,
        "executor": timing,
        "workers_max": workers_max,
        "concurrency_max": concurrency_max,
        "concurrency_limit": cmax,
        "s3_put_max": s3_put_max,
        "s3_prefixes": HASH_PREFIXES if sc.hash_prefix else 1,
        "s3_cap": s3_cap,
        "due_wcu_max": due_wcu_max,
        "due_wcu_cap": due_budget,
        "table_wru_max": table_wru_max,
        "create_overload_s": create_overload_s,
        "claim_throttled_s": claim_throttled_s,
        "exec_throttled_s": exec_throttled_s,
        "late_claims": late_claims,
        "worker_busy_s": worker_busy_s,
        "cost": cost_per_million(sc, cal, worker_busy_s, batch_s),
    }


class _Lateness:
    """Start lateness of the runs, sampled per started slice: all of the day in 10 ms bins, the peak minute's
    as weighted samples; the maximum is bounded exactly (the cohort's earliest instant, its latest start)."""

    BIN_S = 0.01

    def __init__(self, sc: Scenario, pickup_s: float, peak_lo: int, peak_hi: int) -> None:
        self.sc, self.pickup_s, self.peak_lo, self.peak_hi = sc, pickup_s, peak_lo, peak_hi
        self.rng = random.Random(sc.seed + 2)
        self.day_bins: dict[int, float] = {}
        self.peak: list[tuple[float, float]] = []
        self.day_max = self.peak_max = 0.0

    def started(self, sl: _Slice, take: int, s: int, a: float, b: float) -> None:
        """`take` runs of `sl` started in second s, at slots s+a..s+b."""
        in_peak = self.peak_lo <= sl.due < self.peak_hi
        k = 12 if in_peak else 1
        weight = take / k
        rng, sc = self.rng, self.sc
        for _ in range(k):
            offset = rng.random() if sl.kind == 1 else 0.0
            due = sl.due + offset
            if sl.late_claim:
                visible = sl.claimed + rng.random() + sc.latency.sqs
            elif sc.precision == "precise" or sl.kind == 0:
                visible = due
            else:
                visible = float(sl.due + 1)
            late = max(visible, s + a + (b - a) * rng.random()) + self.pickup_s - due
            self._add(late, weight, in_peak)
        if sl.late_claim:
            visible_hi = sl.claimed + 1 + sc.latency.sqs
        elif sc.precision == "precise" or sl.kind == 0:
            visible_hi = float(sl.due)
        else:
            visible_hi = float(sl.due + 1)
        self._bound(max(visible_hi, s + b) + self.pickup_s - sl.due, in_peak)

    def never_started(self, due: int, count: int, now: int) -> None:
        """Runs still waiting when the simulation stops: late by at least the time since their instant."""
        in_peak = self.peak_lo <= due < self.peak_hi
        self._add(float(now - due), float(count), in_peak)
        self._bound(float(now - due), in_peak)

    def _add(self, late: float, weight: float, in_peak: bool) -> None:
        key = int(late / self.BIN_S)
        self.day_bins[key] = self.day_bins.get(key, 0.0) + weight
        if in_peak:
            self.peak.append((late, weight))

    def _bound(self, late: float, in_peak: bool) -> None:
        self.day_max = max(self.day_max, late)
        if in_peak:
            self.peak_max = max(self.peak_max, late)

    def summary(self) -> dict[str, dict[str, float]]:
        day_bins = sorted(self.day_bins.items())
        over = sum(w for key, w in day_bins if (key + 1) * self.BIN_S > LATE_GOAL_S)
        return {
            "peak": {**_quantiles(self.peak), "max": self.peak_max},
            "day": {
                **_quantiles([((key + 1) * self.BIN_S, w) for key, w in day_bins]),
                "max": self.day_max,
                "over_goal": over,
            },
        }


def _quantiles(samples: list[tuple[float, float]]) -> dict[str, float]:
    """Weighted p50 and p99 (for bins, their upper edges)."""
    if not samples:
        return {"p50": 0.0, "p99": 0.0}
    ordered = sorted(samples)
    total = sum(w for _, w in ordered)
    out: dict[str, float] = {}
    acc, wanted = 0.0, [("p50", 0.50), ("p99", 0.99)]
    for value, w in ordered:
        acc += w
        while wanted and acc >= wanted[0][1] * total:
            out[wanted.pop(0)[0]] = value
        if not wanted:
            break
    return out


def _scenario_dict(sc: Scenario) -> dict[str, Any]:
    d = dict(sc.__dict__)
    d["latency"] = dict(sc.latency.__dict__)
    return d


# ---------------------------------------------------------------- cost


def cost_per_million(sc: Scenario, cal: Calibration, worker_busy_s: float, batch_s: float) -> dict[str, float]:
    """Section 2's cost per million (its own code, on section 1's counts), and the same with the Lambda compute
    this simulation finds (dispatch workers' busy time, executors' batch time) in place of section 2's
    assumed durations, plus the coordinator's and the workers' invocations."""
    section2 = _section2(cal)
    compute_line = next(line for line in section2["tickwork"] if line["price_key"] == "lambda_gb_s_arm")
    million = 1_000_000
    gb_s = price("lambda_gb_s_arm").each
    api_gb_s = assumption("api_ms_per_create") / 1000 * cost._function_memory_gb("ApiFunction")
    exec_gb_s = batch_s / BATCH * sc.executor_mb / 1024
    worker_gb_s = worker_busy_s / sc.runs_per_day * sc.worker_mb / 1024
    simulated_compute = million * (api_gb_s + exec_gb_s + worker_gb_s) * gb_s
    invocations = DAY_S // 60 * (1 + max(sc.workers, sc.workers_max))  # coordinator + workers, every minute
    invoke_usd = invocations / sc.runs_per_day * million * price("lambda_request").each
    section2_total = section2["tickwork_total"]
    simulated = section2_total - compute_line["usd"] + simulated_compute + invoke_usd
    return {
        "section2": section2_total,
        "section2_compute": compute_line["usd"],
        "simulated_compute": simulated_compute,
        "fan_out_invocations": invoke_usd,
        "simulated": simulated,
        "scheduler": section2["scheduler_total"],
    }


_SECTION2: dict[int, dict[str, Any]] = {}


def _section2(cal: Calibration) -> dict[str, Any]:
    """Section 2's per-million cost of section 1's counts, by its own code (benchmarks/cost.py), once per input."""
    if cal.section1 is None:
        raise ValueError("no section 1 figures to cost")
    key = id(cal.section1)
    if key not in _SECTION2:
        _SECTION2[key] = cost.per_million(cal.section1)
    return _SECTION2[key]


# ---------------------------------------------------------------- scenarios


def scenarios() -> list[Scenario]:
    """The two sizes as configured to meet the lateness goal, and one change at a time that breaks it."""
    sized = Scenario(
        "100M/day",
        100_000_000,
        shards=1_000,
        workers=8,
        workers_max=64,
        executor_mappings=4,
        executor_floor=ESM_MAX,
        table_max_wru=4_000_000,  # 16 WRU a run (the runs index among them): 2M was the :00 burst's ceiling
        note="sized for crons at :00 exactly; 1,000 shards: the most DUE_SHARDS allows (settings.py)",
    )
    big = replace(
        sized,
        name="1B/day, crons jittered over 30 s",
        runs_per_day=1_000_000_000,
        workers=64,
        workers_max=512,
        executor_mappings=8,
        table_max_wru=20_000_000,
        cron_spread_s=30,
        note="1,000 shards: the most DUE_SHARDS allows (settings.py)",
    )
    return [
        sized,
        big,
        replace(big, name="1B/day, crons at :00", cron_spread_s=0, note="breaks: the due index at the :00 burst"),
        replace(sized, name="100M/day, W=1 (no fan-out)", workers=1, workers_max=0, note="breaks: dispatch"),
        replace(sized, name="100M/day, 512 shards", shards=512, note="the edge: the due index at :00"),
        replace(sized, name="100M/day, 64 shards (section 6)", shards=64, note="breaks: the due index at :00"),
        replace(sized, name="100M/day, 8 shards (today's default)", shards=8, note="breaks: the due index"),
        replace(
            sized,
            name="100M/day, table at the default 40,000 WRU/s",
            table_max_wru=TABLE_DEFAULT_MAX_WRU,
            note="breaks: the table's on-demand maximum",
        ),
        replace(
            sized,
            name="100M/day, mappings ramping from 5",
            executor_floor=ESM_START,
            note="breaks: the executors' ramp (+300 a minute)",
        ),
        replace(
            sized, name="100M/day, no hash prefix on result keys", hash_prefix=False, note="breaks: S3, one prefix"
        ),
        replace(sized, name="100M/day, executors at 512 MB (today's)", executor_mb=512, note="the executors' CPU"),
    ]


def hour_tops(cal: Calibration, data: dict[str, Any]) -> dict[str, Any]:
    """The hour-top bursts at 100M/day (benchmarks/hour_top.py), with the sized scenario's executors."""
    sized = scenarios()[0]
    cron, _ = day_profile(sized.runs_per_day, sized.peak_factor, sized.background_share, sized.seed)
    day = {
        "runs_per_day": sized.runs_per_day,
        "today_peak": cron[PEAK_MINUTE * 60],
        "today_hour_tops": [cron[hour * 3_600] for hour in range(24)],
        "cron_per_day": sum(cron),
        "executor_mb": sized.executor_mb,
        "vcpu": vcpu(sized.executor_mb),
    }
    parts = cal.section1["scenarios"]["ahead"]["phases"]["execute"]["wru_per_run"] if cal.section1 else {}
    execute = {
        "wru": cal.wru.get("execute", 0.0),
        "due_writes": cal.due_writes.get("execute", 0.0),
        "tenant_index_writes": sum(p.get("tenant-index", 0.0) for p in parts.values()),
        "runs_index_writes": sum(p.get("runs-index", 0.0) for p in parts.values()),
    }
    return hour_top_report.run(execute, executor_timing(sized, cal), data, day)


QUICK_SCENARIOS = 4  # `make bench-quick`: the two sizes, 1B/day at :00 and W=1


def run(stamp: Stamp, results: dict[str, Any] | None = None, *, quick: bool = False) -> dict[str, Any]:
    """Simulate every scenario with the figures in `results` (benchmarks/results.json's, by default)."""
    data = results if results is not None else _results_file(RESULTS)
    cal = load_calibration(data)
    chosen = scenarios()[:QUICK_SCENARIOS] if quick else scenarios()
    rows = [simulate(sc, cal) for sc in chosen]
    tops = hour_tops(cal, data)
    peak_wru = max(r["peak_wru_per_s"] for r in [*tops["rows"], *(p["row"] for p in tops["plans"])])
    return {
        "hour_top": tops,
        "costs": hour_top_report.costs(cal.section1, data["cost"], peak_wru, 100_000_000) if "cost" in data else None,
        "stamp": stamp.__dict__,
        "calibration": {
            "claim_cpu_ms": cal.claim_cpu_ms,
            "claim_requests": cal.claim_requests,
            "cpu_per_request_ms": cal.cpu_per_request_ms,
            "execute_requests": cal.execute_requests,
            "due_writes": cal.due_writes,
            "wru": cal.wru,
            "source": cal.source,
        },
        "latency": dict(Latency().__dict__),
        "rows": rows,
    }


# ---------------------------------------------------------------- rendering


def _s(x: float) -> str:
    if x >= 3600:
        return f"{x / 3600:.1f} h"
    if x >= 60:
        return f"{x / 60:.1f} min"
    if x >= 10:
        return f"{x:.0f} s"
    return f"{x * 1000:.0f} ms" if x < 1 else f"{x:.2f} s"


def _n(x: float) -> str:
    return f"{x:,.0f}"


def _bound(row: dict[str, Any], key: str) -> str:
    """A peak-minute figure; at least that when some of the minute's runs had not started when the model stopped."""
    text = _s(row["peak"][key])
    return f"≥ {text}" if row["peak_unstarted"] else text


def binding(row: dict[str, Any]) -> str:
    """Which limits the simulation ran into (at 99% or more of them), in the order the work meets them."""
    sc = row["scenario"]
    found = []
    if row["late_claims"] or row["unstarted"]:
        found.append("dispatch (claims after their instant)")
    if row["due_wcu_max"] >= 0.99 * row["due_wcu_cap"]:
        found.append("due-index partitions")
    if row["table_wru_max"] >= 0.99 * sc["table_max_wru"]:
        found.append("table WRU/s maximum")
    if row["concurrency_max"] >= 0.99 * row["concurrency_limit"]:
        found.append("executor concurrency limit")
    elif row["peak"]["p99"] > LATE_GOAL_S and sc["executor_floor"] < sc["executor_max_concurrency"]:
        found.append("executor ramp (+300/min)")
    if row["s3_put_max"] >= 0.99 * row["s3_cap"]:
        found.append("S3 PUT/s per prefix")
    return ", ".join(found) or "none"


def table(result: dict[str, Any]) -> list[str]:
    out = [
        "| scenario | peak minute lateness p50 / p99 / max | day p99 | W (max) | shards | claim threads |"
        " claims/s per worker | executor concurrency reached / limit | S3 prefixes (peak PUT/s) | due-index WCU/s peak / cap |"
        " not started | what binds | cost per million (section 2 / simulated) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    for row in result["rows"]:
        sc = row["scenario"]
        day_p99 = ("≥ " if row["unstarted"] else "") + _s(row["day"]["p99"])
        out.append(
            f"| {sc['name']} | {_bound(row, 'p50')} / **{_bound(row, 'p99')}** / {_bound(row, 'max')} | {day_p99} |"
            f" {row['workers_max']} | {sc['shards']} | {sc['claim_threads']} | {row['claim']['rate']:,.0f} |"
            f" {_n(row['concurrency_max'])} / {_n(row['concurrency_limit'])} | {row['s3_prefixes']} ({_n(row['s3_put_max'])}) |"
            f" {_n(row['due_wcu_max'])} / {_n(row['due_wcu_cap'])} | {_n(row['unstarted'])} | {binding(row)} |"
            f" ${row['cost']['section2']:.2f} / ${row['cost']['simulated']:.2f} |"
        )
    return out


def render(result: dict[str, Any]) -> str:
    stamp = Stamp(**result["stamp"])
    cal = result["calibration"]
    base = result["rows"][0]
    lines = [
        "## Capacity, by simulation",
        "",
        f"Simulated, not measured: `benchmarks/capacity.py`, run by {stamp.line()}. A day of one-shot runs, second by"
        " second (cron bunches at :00, a peak minute of 5x the day's average at 09:00, half the runs a uniform"
        " background), through the dispatcher fan-out, SQS, the executors, DynamoDB and S3, calibrated with"
        f" section 3's client CPU per claim ({cal['claim_cpu_ms']:.1f} ms) and section 1's requests and write units per"
        " run. docs/scale.md describes the model, its inputs (with their sources) and what it leaves out.",
        "",
        *table(result),
        "",
        f"At 100M/day as configured, the peak minute's p99 start lateness is {_s(base['peak']['p99'])} (goal"
        f" {LATE_GOAL_S} s: {'met' if base['peak']['p99'] <= LATE_GOAL_S else 'not met'}). The rows after the two sizes"
        " change one setting each, to show what breaks.",
    ]
    if "hour_top" in result:
        lines += ["", *hour_top_report.render(result["hour_top"], stamp.line())]
    if result.get("costs"):
        lines += ["", *hour_top_report.render_costs(result["costs"], stamp.line())]
    return "\n".join(lines)


def console(result: dict[str, Any]) -> str:
    rows = result["rows"]
    parts = [f"{r['scenario']['name']}: p99 {_s(r['peak']['p99'])}, W {r['workers_max']}" for r in rows[:2]]
    line = "[capacity] peak minute " + "; ".join(parts) + f" ({len(rows)} scenarios)"
    for plan in result.get("hour_top", {}).get("plans", []):
        r = plan["row"]
        line += (
            f"\n[capacity] {plan['share']:.0%} of crons at hh:00:00 with warm-up, {plan['wru_note']}: p99"
            f" {_s(r['p99'])} (goal ≤ 2 s {'met' if r['p99'] <= 2.0 else 'missed'});"
            f" warm-up ${plan['cost']['cheaper_usd']:,.0f}/month"
        )
    costs = result.get("costs")
    if costs:
        ratios = ", ".join(f"{r['case']} {r['ratio']:.2f}" for r in costs["like_for_like"])
        modes = costs["capacity_modes"]
        cheapest = min(modes["modes"], key=lambda m: m["per_million"])
        line += (
            f"\n[capacity] cost ratio to EventBridge Scheduler, like for like: {ratios}; cron run"
            f" {costs['cron']['ratio']:.2f} ({costs['cron']['wru']:g} WRU); DynamoDB writes at 100M/day per million"
            f" runs: on-demand ${modes['on_demand']:.2f}, {cheapest['mode']} ({cheapest['sizing']})"
            f" ${cheapest['per_million']:.2f}; goals met: {sum(g['met'] for g in costs['goals'])} of"
            f" {len(costs['goals'])}"
        )
    return line
