"""The hour-top burst, faithful to AWS's documented limits: pure Python, no I/O, deterministic for a seed.

benchmarks/capacity.py follows a whole day second by second; this model zooms into the one second that sizes the
system, hh:00:00, when platform teams' crons fire together, in steps of `STEP_S`, and adds what the day model
leaves out (docs/scale.md cites each limit):

- **Cron rounding.** A run is sent with `DelaySeconds = ceil(due - sent)`, whole seconds, so a cron sent at a
  random phase of its second becomes visible up to 1 s after its instant. A tick that aligns its sends to the
  instant's phase (the warm-up's "spread within the second") makes it visible at its instant.
- **Lambda.** The executor function adds at most 1,000 execution environments every 10 s; each new one pays the
  measured cold start before its first batch; the account's concurrency (1,000 by default) caps them all.
- **The event source.** A standard-mode SQS mapping starts from the concurrency it holds, adds 300 concurrent
  invokes a minute while messages wait, up to 1,250; provisioned mode keeps a floor of pollers (10 invokes each)
  and adds 1,000 a minute, up to 20,000.
- **DynamoDB.** The table serves at once up to the larger of its warm throughput and double its previous peak
  (a new on-demand table: 4,000 WRU/s), and never more than its table quota. The due index's shards are partition
  keys hashed onto the index's partitions (at least one per 1,000 WCU of its warm throughput): the busiest
  partition holds several shards and caps every shard's rate at 1,000 WCU/s over its count.
- **S3.** Without results inline, every run PUTs its result; a prefix serves 3,500 PUT/s once S3 has split it under
  sustained load, and a spike above what is split gets 503 Slow Down (the SDK retries: the executors wait).

A run starts when an executor takes it (first in, first out) and leases it: its lateness is that instant plus the
pickup, minus its due instant. The burst's minute is reported: its runs' p50, p99 and maximum lateness.
"""

from __future__ import annotations

import math
import random
from collections import deque
from dataclasses import dataclass, replace
from typing import Any

STEP_S = 0.02  # the model's time step
BATCH = 10  # SQS batch size and the mapping's BatchSize (template.yaml)

# Limits (docs/scale.md gives each one's source).
LAMBDA_NEW_ENVIRONMENTS = 1_000  # per function, ...
LAMBDA_SCALING_WINDOW_S = 10.0  # ... every 10 s
ACCOUNT_CONCURRENCY_DEFAULT = 1_000
ESM_START = 5  # standard mode: concurrent invokes a mapping starts with
ESM_RAMP_PER_MIN = 300  # standard mode: +300 concurrent invokes a minute while messages wait
ESM_MAX = 1_250  # standard mode: per mapping
ESM_PROVISIONED_RAMP_PER_MIN = 1_000  # provisioned mode
ESM_PROVISIONED_MAX = 20_000  # provisioned mode, per mapping
MIN_POLLERS_MAX = 200  # provisioned mode: the most MinimumPollers a mapping may set
INVOKES_PER_POLLER = 10  # provisioned mode: concurrent invokes per event poller (third-party figure, docs/scale.md)
PARTITION_WCU = 1_000  # DynamoDB per-partition writes
NEW_TABLE_WRU = 4_000  # a new on-demand table's warm write throughput
TABLE_QUOTA_DEFAULT = 40_000  # on-demand table-level write quota (adjustable)
S3_PUT_PER_PREFIX = 3_500
API_GATEWAY_RPS = 10_000  # per account and region
BATCH_CREATE_MAX = 25  # jobs per batch create request (issue #39's batch endpoint)


@dataclass(frozen=True)
class Burst:
    """One hour-top: the runs due at its instant, the background around it, and what serves them."""

    name: str
    burst_runs: int  # runs due at hh:00:00 exactly (crons)
    background_per_s: float  # runs due per second around it, spread over each second
    batch_s: float  # an executor batch of 10 runs (capacity.executor_timing)
    pickup_s: float  # receive, visibility change and lease before a run starts
    cold_start_s: float  # a new execution environment's init on the executor's share of a core
    exec_wru: float  # WRU per run while it executes (section 1)
    exec_due_writes: float  # due-index writes per run while it executes (section 1)
    shards: int = 1_000
    rounding: bool = True  # False: the tick aligns sends to the instant's phase
    lambda_scaling: bool = True  # False: environments appear at once (the day model's view)
    account_concurrency: int = ACCOUNT_CONCURRENCY_DEFAULT
    mappings: int = 4
    esm_mode: str = "standard"  # or "provisioned"
    esm_floor: int = 0  # provisioned mode: concurrent invokes its minimum pollers hold (all mappings)
    warm_environments: int = 0  # executor environments initialised before the instant (the warm-up)
    table_warm_wru: float = 0.0  # 0: warm from earlier bursts (serves any rate up to the quota)
    table_quota_wru: float = 10_000_000.0
    index_warm_wcu: float = 0.0  # the due index's warm throughput; sets its partitions (0: one per shard)
    hashed_shards: bool = True  # False: every shard on a partition of its own (the day model's view)
    results_in_s3: bool = False
    s3_split_prefixes: int = 0  # prefixes S3 has split for (0: as the background's sustained rate needs)
    seed: int = 16
    tail_s: float = 600.0  # the model stops this long after the instant


# ---------------------------------------------------------------- DynamoDB partitions


def busiest_partition(shards: int, partitions: int, seed: int) -> int:
    """How many of `shards` partition keys the busiest of `partitions` holds, each key hashed to a partition at
    random (DynamoDB's hash is uniform, and no one chooses where a key lands)."""
    rng = random.Random(seed)
    counts = [0] * max(1, partitions)
    for _ in range(shards):
        counts[rng.randrange(len(counts))] += 1
    return max(counts)


def index_partitions(b: Burst) -> int:
    """At least one partition per 1,000 WCU of the index's warm throughput, and one per shard when it is not set."""
    return max(1, math.ceil(b.index_warm_wcu / PARTITION_WCU)) if b.index_warm_wcu else b.shards


def due_index_runs_per_s(b: Burst) -> float:
    """Starts a second the due index lets through: every shard at the rate its busiest partition allows."""
    if not b.exec_due_writes:
        return math.inf
    busiest = busiest_partition(b.shards, index_partitions(b), b.seed) if b.hashed_shards else 1
    return b.shards * PARTITION_WCU / busiest / b.exec_due_writes


def table_runs_per_s(b: Burst) -> float:
    steady = b.background_per_s * b.exec_wru
    instant = max(b.table_warm_wru, 2 * steady) if b.table_warm_wru else math.inf
    return min(instant, b.table_quota_wru) / b.exec_wru if b.exec_wru else math.inf


def s3_runs_per_s(b: Burst) -> float:
    if not b.results_in_s3:
        return math.inf
    split = b.s3_split_prefixes or max(1, math.ceil(b.background_per_s / S3_PUT_PER_PREFIX))
    return float(split * S3_PUT_PER_PREFIX)


# ---------------------------------------------------------------- the simulation


class _Executors:
    """Execution environments: warm ones, new ones paying the cold start, within the scaling rate and the caps."""

    def __init__(self, b: Burst, steady: float) -> None:
        self.b = b
        self.ready = float(max(steady, b.warm_environments))
        self.pending: deque[tuple[float, float]] = deque()  # (ready at, count)
        self.tokens, self.window_end = float(LAMBDA_NEW_ENVIRONMENTS), LAMBDA_SCALING_WINDOW_S
        esm_start = max(ESM_START * b.mappings, steady)
        self.esm = max(esm_start, float(b.esm_floor)) if b.esm_mode == "provisioned" else esm_start
        if b.esm_mode == "provisioned":
            self.esm_ramp = ESM_PROVISIONED_RAMP_PER_MIN / 60 * b.mappings
            self.esm_max = float(ESM_PROVISIONED_MAX * b.mappings)
        else:
            self.esm_ramp = ESM_RAMP_PER_MIN / 60 * b.mappings
            self.esm_max = float(ESM_MAX * b.mappings)

    def step(self, t: float, waiting: bool) -> float:
        """The concurrent batches that can run during this step."""
        b = self.b
        while self.pending and self.pending[0][0] <= t:
            self.ready += self.pending.popleft()[1]
        if t >= self.window_end:
            self.tokens, self.window_end = float(LAMBDA_NEW_ENVIRONMENTS), t + LAMBDA_SCALING_WINDOW_S
        if waiting:
            self.esm = min(self.esm_max, self.esm + self.esm_ramp * STEP_S)
        wanted = min(self.esm, float(b.account_concurrency))
        have = self.ready + sum(n for _, n in self.pending)
        if waiting and have < wanted:
            new = wanted - have
            if b.lambda_scaling:
                new = min(new, self.tokens)
                self.tokens -= new
                self.pending.append((t + b.cold_start_s, new))
            else:
                self.ready += new
        return min(self.ready, wanted)


def simulate(b: Burst) -> dict[str, Any]:
    """Runs due from a minute before the instant to a minute after it, step by step, until the queue drains."""
    per_s = round(1 / STEP_S)
    stores = {"due index": due_index_runs_per_s(b), "table": table_runs_per_s(b), "S3": s3_runs_per_s(b)}
    store_cap = min(stores.values())
    steady = b.background_per_s * b.batch_s / BATCH
    executors = _Executors(b, steady)
    rng = random.Random(b.seed)
    visible: dict[int, list[tuple[float, float]]] = {}  # step -> (due, count)
    for k in range(-60 * per_s, 60 * per_s):  # background: due at step k, visible at its next whole second
        due = k * STEP_S
        show = k if not b.rounding else math.ceil((k + 1) / per_s) * per_s
        visible.setdefault(show, []).append((due, b.background_per_s * STEP_S))
    if b.rounding:  # sent at a random phase: visible over the next second
        spread = [rng.random() for _ in range(per_s)]
        total = sum(spread)
        for k, w in enumerate(spread):
            visible.setdefault(k, []).append((0.0, b.burst_runs * w / total))
    else:
        visible.setdefault(0, []).append((0.0, float(b.burst_runs)))
    queue: deque[list[float]] = deque()
    queued = carry = 0.0
    backlog = False  # runs left waiting after the last step: what makes the event source scale up
    samples: list[tuple[float, float]] = []
    peak_concurrency = peak_rate = 0.0
    bound: dict[str, float] = {}
    k, end = -60 * per_s, round(b.tail_s * per_s)
    while k < end:
        t = k * STEP_S
        for due, n in visible.pop(k, ()):
            queue.append([due, n])
            queued += n
        batches = executors.step(t, backlog)
        exec_rate = batches * BATCH / b.batch_s
        rate = min(exec_rate, store_cap)
        if queued > 1e-9:
            limit = "executors" if exec_rate <= store_cap else min(stores, key=lambda s: stores[s])
            bound[limit] = bound.get(limit, 0.0) + STEP_S if t >= 0 else bound.get(limit, 0.0)
        budget = rate * STEP_S + carry
        take_total = min(queued, budget)
        carry = budget - take_total if queued > take_total else 0.0
        started, position = take_total, 0.0
        while started > 1e-9 and queue:
            head = queue[0]
            take = min(head[1], started)
            at = t + STEP_S * (position + take / 2) / max(take_total, 1e-12)
            if 0 <= head[0] < 60:
                samples.append((at + b.pickup_s - head[0], take))
            head[1] -= take
            started -= take
            position += take
            if head[1] <= 1e-9:
                queue.popleft()
        queued -= take_total
        backlog = queued > 1e-6
        peak_concurrency = max(peak_concurrency, min(batches, take_total / STEP_S * b.batch_s / BATCH))
        peak_rate = max(peak_rate, take_total / STEP_S)
        k += 1
        if k > 60 * per_s and queued <= 1e-9:
            break
    unstarted = queued
    if unstarted > 1e-9:
        samples.append((b.tail_s, unstarted))
    stats = weighted_quantiles(samples)
    return {
        "name": b.name,
        "burst_runs": b.burst_runs,
        **stats,
        "unstarted": unstarted,
        "binds": max(bound, key=lambda s: bound[s]) if bound else "none",
        "bound_s": bound,
        "stores_runs_per_s": stores,
        "busiest_partition": busiest_partition(b.shards, index_partitions(b), b.seed) if b.hashed_shards else 1,
        "index_partitions": index_partitions(b),
        "peak_concurrency": peak_concurrency,
        "peak_starts_per_s": peak_rate,
        "peak_wru_per_s": peak_rate * b.exec_wru,
        "peak_due_wcu_per_s": peak_rate * b.exec_due_writes,
    }


def weighted_quantiles(samples: list[tuple[float, float]]) -> dict[str, float]:
    """p50, p99 and the maximum of weighted (value, weight) samples."""
    if not samples:
        return {"p50": 0.0, "p99": 0.0, "max": 0.0}
    ordered = sorted(samples)
    total = sum(w for _, w in ordered)
    out: dict[str, float] = {"max": ordered[-1][0]}
    acc, wanted = 0.0, [("p50", 0.50), ("p99", 0.99)]
    for value, w in ordered:
        acc += w
        while wanted and acc >= wanted[0][1] * total - 1e-9:
            out[wanted.pop(0)[0]] = value
    for key, _ in wanted:
        out[key] = ordered[-1][0]
    return out


# ---------------------------------------------------------------- the warm-up and its cost


@dataclass(frozen=True)
class WarmUpPrices:
    """USD: Lambda's on-demand GB-second and request, provisioned concurrency's GB-second (benchmarks/prices.py)."""

    gb_s: float
    request: float
    provisioned_gb_s: float


HOUR_TOPS_PER_MONTH = 24 * 30
PROVISIONED_WINDOW_S = 600.0  # provisioned concurrency held 10 min around each hour-top (billed by 5 min)


def environments_needed(b: Burst, goal_s: float) -> int:
    """Concurrent batches that start 99% of the burst within the goal (less the pickup): all warm at the instant."""
    runs = 0.99 * b.burst_runs + b.background_per_s * goal_s
    window = max(goal_s - b.pickup_s, STEP_S)
    return math.ceil(runs / window * b.batch_s / BATCH)


def warm_up_cost(environments: int, memory_mb: int, cold_start_s: float, prices: WarmUpPrices) -> dict[str, float]:
    """A month of warming `environments` before every hour-top, two ways.

    Warming invocations: the tick invokes the executor `environments` times, each holding its environment until
    the instant so that none is reused; Lambda adds 1,000 environments per 10 s, so the first starts
    ceil(n / 1,000) x 10 s early and they wait half that on average, plus their init (billed).
    Provisioned concurrency: configured for `PROVISIONED_WINDOW_S` around each hour-top."""
    gb = memory_mb / 1024
    lead_s = math.ceil(environments / LAMBDA_NEW_ENVIRONMENTS) * LAMBDA_SCALING_WINDOW_S
    held_s = lead_s / 2 + cold_start_s
    invocations = environments * HOUR_TOPS_PER_MONTH
    warming = invocations * (held_s * gb * prices.gb_s + prices.request)
    provisioned = environments * gb * PROVISIONED_WINDOW_S * HOUR_TOPS_PER_MONTH * prices.provisioned_gb_s
    return {
        "environments": float(environments),
        "lead_s": lead_s,
        "warming_invocations_usd": warming,
        "provisioned_concurrency_usd": provisioned,
        "cheaper_usd": min(warming, provisioned),
    }


def with_warm_up(b: Burst, environments: int) -> Burst:
    """The warm-up the tick can do before an instant it sees coming: environments initialised and the mappings'
    pollers provisioned for them, the account's concurrency raised to hold them, sends aligned to the instant."""
    return replace(
        b,
        name=b.name + ", with warm-up",
        warm_environments=environments,
        esm_mode="provisioned",
        esm_floor=environments,
        account_concurrency=max(b.account_concurrency, environments),
        rounding=False,
    )


# ---------------------------------------------------------------- limits a tenant or the API meets


def tenant_caps(tenant_index_writes: float, runs_index_writes: float, runs_index_shards: int) -> dict[str, float]:
    """One tenant's starts per second: its tenant-index entries share one partition key, its runs-index entries
    `runs_index_shards` of them; each key takes 1,000 WCU/s."""
    caps = {}
    if tenant_index_writes:
        caps["tenant index"] = PARTITION_WCU / tenant_index_writes
    if runs_index_writes:
        caps["runs index"] = runs_index_shards * PARTITION_WCU / runs_index_writes
    return caps


def api_gateway(creates_per_day: float) -> dict[str, float]:
    """Creates against API Gateway's 10,000 requests/s per account: on average, and the jobs a second it admits
    one per request or 25 per batch create."""
    average = creates_per_day / 86_400
    return {
        "average_per_s": average,
        "limit_rps": float(API_GATEWAY_RPS),
        "headroom": API_GATEWAY_RPS / average if average else math.inf,
        "jobs_per_s_single": float(API_GATEWAY_RPS),
        "jobs_per_s_batch": float(API_GATEWAY_RPS * BATCH_CREATE_MAX),
    }
