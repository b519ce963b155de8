"""Section 1: AWS requests and DynamoDB capacity units per one-shot run, end to end.

The real pipeline in-process on moto (tests/harness.Pipeline): JobLifecycle.create_job as POST /v1/jobs calls it
(attributed to its caller, so the job's put and its audit record's are one TransactWriteItems), the tick handler
(which also archives the audit records), and the executor handler fed the way Lambda's SQS event source mapping feeds it
(ReceiveMessage of up to 10, then DeleteMessageBatch of the successes). Every botocore call of the three
clients is metered (benchmarks.common.AwsMeter), by phase, service and operation, and divided by the
number of runs: SQS batches and query pages are amortised over the runs they carry.

Two ways a one-shot run reaches the queue, measured separately:
- `ahead`: created more than the claim horizon (120 s) before it is due; the minute tick claims it with
  the others due, and sends it in a batch of 10. This is the common case, and the headline.
- `soon`: created less than 120 s before it is due; create claims it at once and sends it alone.
And a cron's run (`cron`): jobs every 5 minutes, each occurrence claimed by the tick and executed; a cron's
create is paid once for all its runs, so it is left out of the run's figures.
"""

from __future__ import annotations

import time
from collections import defaultdict
from datetime import timedelta
from typing import Any

from tickwork.control.api_bodies import JobSpec
from tickwork.model.clock import iso
from tickwork.model.job import Job
from tickwork_local.stack.template import load_template

from benchmarks import forecast_cost
from benchmarks.common import API_CALLER, Call, PhaseMeter, Stamp, moto_session, stopwatch
from tests.harness import START, TENANT, Pipeline

FULL = {"ahead": 300, "soon": 50, "inline": 300, "cron": 600}
QUICK = {"ahead": 40, "soon": 10, "inline": 40, "cron": 80}
CRON = "*/5 * * * *"  # the "cron" scenario's jobs: from START (12:00), first due at 12:05, beyond the horizon
CRON_OCCURRENCES = 2  # each cron job's runs measured: its jobs (as many as "ahead"'s runs, per tick) times these
INLINE_BYTES = 1024  # the "inline" scenario: as "ahead", with InlineResultMaxBytes = 1024 (the echo results fit)
PHASES = ("create", "tick", "execute")
# Requests billed per call, whatever they carry (DynamoDB bills capacity units instead; listed apart).
EMPTY_RECEIVE = "ReceiveMessage (empty)"


def create_as_the_api(pipeline: Pipeline, **spec: Any) -> Job:
    """An echo job created as `POST /v1/jobs` creates it: `JobLifecycle.create_job` attributed to its caller, so its
    put and its audit record's are one TransactWriteItems."""
    return pipeline.services.jobs.create_job(TENANT, JobSpec.model_validate({"type": "echo", **spec}), by=API_CALLER)


def _template_shards() -> str:
    return str(load_template()["Parameters"]["DueShards"]["Default"])


def measure(runs: int, scenario: str) -> dict[str, Any]:
    """Create `runs` one-shot echo jobs, tick, execute every run; return the metered calls per phase."""
    env = {"INLINE_RESULT_MAX_BYTES": str(INLINE_BYTES)} if scenario == "inline" else {}
    if scenario == "cron":
        return _measure_cron(runs)
    with moto_session(), Pipeline.create(DUE_SHARDS=_template_shards(), **env) as pipeline:
        metered = PhaseMeter(pipeline)
        close = metered.close
        with stopwatch() as elapsed:
            if scenario in ("ahead", "inline"):
                # Due 150 s after create, beyond the 120 s horizon: nothing is claimed at create.
                due = [START + timedelta(seconds=150, milliseconds=10 * i) for i in range(runs)]
            else:
                # Due 1 s after create: create claims and sends each run itself (SQS delays it 1 s).
                due = [START + timedelta(seconds=1)] * runs
            jobs = [
                create_as_the_api(pipeline, name=f"bench {i}", payload={"n": i}, schedule={"at": iso(at)})
                for i, at in enumerate(due)
            ]
            close("create")
            pipeline.clock.advance((due[-1] - START).total_seconds() + 1)
            if scenario == "soon":
                time.sleep(1.2)  # SQS's DelaySeconds is real time in moto
            report = pipeline.tick()
            close("tick")
            delivered = pipeline.drain()
            close("execute")
            seconds = elapsed()
        succeeded = sum(1 for job in jobs for run in pipeline.runs_of(job.id) if run.status.value == "SUCCEEDED")
    if succeeded != runs or delivered != runs:
        raise RuntimeError(f"{scenario}: {succeeded} of {runs} runs succeeded, {delivered} delivered")
    return {
        "scenario": scenario,
        "runs": runs,
        "seconds": round(seconds, 1),
        "tick_dispatched": report["dispatched"],
        "phases": {phase: summarize(calls, runs) for phase, calls in metered.phases.items()},
        "total": summarize(metered.all_calls(), runs),
    }


def _measure_cron(runs: int) -> dict[str, Any]:
    """`runs` runs of cron jobs (CRON_OCCURRENCES each): per occurrence, a tick at its time claims and sends it,
    and the executor runs it. The create, and its audit record's archive by a tick before the first occurrence, are
    metered apart and left out of the totals."""
    jobs_count = runs // CRON_OCCURRENCES
    with moto_session(), Pipeline.create(DUE_SHARDS=_template_shards()) as pipeline:
        metered = PhaseMeter(pipeline)
        with stopwatch() as elapsed:
            jobs = [
                create_as_the_api(pipeline, name=f"cron {i}", payload={"n": i}, schedule={"cron": CRON})
                for i in range(jobs_count)
            ]
            pipeline.tick()  # archives the creates' audit records (the first occurrence is beyond the claim horizon)
            metered.close("create")
            delivered = 0
            for occurrence in range(1, CRON_OCCURRENCES + 1):
                due = START + timedelta(minutes=5 * occurrence)
                pipeline.clock.advance((due - pipeline.clock.now()).total_seconds() + 1)
                report = pipeline.tick()
                metered.close("tick")
                delivered += pipeline.drain()
                metered.close("execute")
            seconds = elapsed()
        succeeded = sum(1 for job in jobs for run in pipeline.runs_of(job.id) if run.status.value == "SUCCEEDED")
    if succeeded != runs or delivered != runs:
        raise RuntimeError(f"cron: {succeeded} of {runs} runs succeeded, {delivered} delivered")
    run_calls = metered.phases["tick"] + metered.phases["execute"]
    return {
        "scenario": "cron",
        "runs": runs,
        "seconds": round(seconds, 1),
        "tick_dispatched": report["dispatched"],
        "phases": {phase: summarize(calls, runs) for phase, calls in metered.phases.items()},
        "total": summarize(run_calls, runs),
    }


def op_name(call: Call) -> str:
    name = f"{call.service}:{EMPTY_RECEIVE if call.empty else call.operation}"
    return f"{name} {call.item}" if call.item else name


def per_tick(call: Call) -> bool:
    """Calls a tick makes once, however many runs it claims: a query per shard, a shard lease and its release
    per shard with due work. They are amortised over the runs of that tick, not over runs in general. An
    executor's one Query of the freezes per execution environment per 5 s is counted with them (its phase's)."""
    return call.operation == "Query" or call.item == "shard lease"


def summarize(calls: list[Call], runs: int) -> dict[str, Any]:
    """Per-run counts by service, operation and item; per-tick counts apart; DynamoDB units and sizes."""
    counts: dict[str, int] = defaultdict(int)
    tick_counts: dict[str, int] = defaultdict(int)
    wru: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    tick_wru: dict[str, int] = defaultdict(int)
    rru: dict[str, float] = defaultdict(float)
    tick_rru = 0.0
    sizes: dict[str, list[int]] = defaultdict(list)
    moto_reported = 0.0
    for call in calls:
        op = op_name(call)
        if per_tick(call):
            tick_counts[op] += 1
            for part, units in call.wru.items():
                tick_wru[part] += units
            tick_rru += call.rru
            continue
        counts[op] += 1
        for part, units in call.wru.items():
            wru[op][part] += units
        if call.rru:
            rru[op] += call.rru
        if call.service == "dynamodb" and call.size:
            sizes[op].append(call.size)
        if call.wru and call.moto_capacity is not None:
            moto_reported += call.moto_capacity
    return {
        "calls": dict(counts),
        "per_run": {op: n / runs for op, n in counts.items()},
        "wru_per_run": {op: {part: n / runs for part, n in parts.items()} for op, parts in wru.items()},
        "rru_per_run": {op: n / runs for op, n in rru.items()},
        "mean_item_bytes": {op: round(sum(v) / len(v)) for op, v in sizes.items()},
        "moto_reported_wcu_per_run": moto_reported / runs,
        "per_tick_calls": dict(tick_counts),
        "per_tick_wru": dict(tick_wru),
        "per_tick_rru": tick_rru,
    }


def billable(total: dict[str, Any], runs_per_tick: int, *, creates_per_run: float = 1.0) -> dict[str, float]:
    """What the bill counts per run. Measured: SDK requests (empty receives apart), with the tick's fixed calls
    amortised over `runs_per_tick`. Modelled: the requests that are not SDK calls of our code: API Gateway's
    (1 per create, `creates_per_run` creates per run: a workflow's one create serves all its step runs) and
    Lambda invocations (API: 1 per create; executor: 1 per non-empty receive, i.e. per batch; the tick's are
    per minute, not per run: section 2)."""
    per_run = total["per_run"]
    tick_calls = sum(total["per_tick_calls"].values())
    tick_share = tick_calls / runs_per_tick
    sdk = sum(n for op, n in per_run.items() if EMPTY_RECEIVE not in op)
    receives = sum(n for op, n in per_run.items() if op.startswith("sqs:ReceiveMessage") and EMPTY_RECEIVE not in op)
    wru = sum(sum(parts.values()) for parts in total["wru_per_run"].values())

    def of(service: str) -> float:
        return sum(n for op, n in per_run.items() if op.startswith(service + ":") and EMPTY_RECEIVE not in op)

    return {
        "runs_per_tick": runs_per_tick,
        "sdk_requests_per_run": sdk,
        "tick_requests": tick_calls,
        "sdk_requests": sdk + tick_share,
        "dynamodb_requests": of("dynamodb") + tick_share,
        "sqs_requests": of("sqs"),
        "s3_requests": of("s3"),
        "apigw_requests": creates_per_run,
        "lambda_invocations": creates_per_run + receives,
        "billable_requests": sdk + tick_share + 2 * creates_per_run + receives,
        "wru_per_run": wru,
        "tick_wru": sum(total["per_tick_wru"].values()),
        "wru": wru + sum(total["per_tick_wru"].values()) / runs_per_tick,
        "rru": sum(total["rru_per_run"].values()) + total["per_tick_rru"] / runs_per_tick,
    }


def run(stamp: Stamp, *, quick: bool) -> dict[str, Any]:
    plan = QUICK if quick else FULL
    scenarios = {name: measure(runs, name) for name, runs in plan.items()}
    return {
        "forecasts": forecast_cost.run(),
        "stamp": stamp.__dict__,
        "runs": plan["ahead"],
        "runs_soon": plan["soon"],
        "shards": int(_template_shards()),
        "scenarios": scenarios,
        # A cron's run has no create of its own: no API request, no API invocation.
        "billable": {
            name: billable(s["total"], s["runs"], creates_per_run=0.0 if name == "cron" else 1.0)
            for name, s in scenarios.items()
        },
    }


# ---------------------------------------------------------------- rendering


def _fmt(x: float) -> str:
    if x == 0:
        return "0"
    if abs(x - round(x)) < 1e-9:
        return str(round(x))
    return f"{x:.3f}".rstrip("0")


def render(result: dict[str, Any]) -> str:
    stamp = Stamp(**result["stamp"])
    ahead = result["scenarios"]["ahead"]
    soon = result["scenarios"]["soon"]
    b_ahead, b_soon = result["billable"]["ahead"], result["billable"]["soon"]
    inline = result["billable"].get("inline") or b_ahead
    goal_req = _goal(b_ahead["sdk_requests"], inline["sdk_requests"], SDK_GOAL)
    goal_wru = _goal(b_ahead["wru"], inline["wru"], WRU_GOAL)
    lines = [
        "## 1. AWS requests per one-shot run",
        "",
        f"Measured by {stamp.line()}.",
        "",
        f"{result['runs']} one-shot `echo` jobs ({result['runs_soon']} for the second column), each created through `JobLifecycle.create_job` as `POST /v1/jobs`"
        " calls it (attributed to an IAM caller, `benchmarks.common.API_CALLER`: the job's put and its audit record's in"
        " one `TransactWriteItems`), claimed by the tick handler (which archives the records to S3), and executed by the executor handler fed as Lambda's SQS event"
        " source mapping feeds it (receive up to 10, delete the successes). Every botocore call is counted by an"
        f" event hook and divided by the runs; SQS batches and query pages are amortised. `DUE_SHARDS={result['shards']}`"
        " (the template's default).",
        "",
        f"**Headline (created ahead of time, claimed by the tick, {b_ahead['runs_per_tick']} runs per tick):"
        f" {_fmt(b_ahead['billable_requests'])} billable requests and {_fmt(b_ahead['wru'])} DynamoDB WRU per run.** The goal (issue 16:"
        f" ≤ {SDK_GOAL} SDK requests and ≤ {WRU_GOAL} WRU per one-shot run) is {goal_req} for requests and {goal_wru}"
        " for WRU.",
        "",
        "| per run | created ahead (tick claims) | created < 2 min before due (create claims) |",
        "|---|---:|---:|",
        f"| SDK requests of the run itself (measured) | {_fmt(b_ahead['sdk_requests_per_run'])} |"
        f" {_fmt(b_soon['sdk_requests_per_run'])} |",
        f"| + the tick's fixed requests ({_fmt(b_ahead['tick_requests'])} per tick), amortised over"
        f" {b_ahead['runs_per_tick']} runs | {_fmt(b_ahead['tick_requests'] / b_ahead['runs_per_tick'])} |"
        f" {_fmt(b_soon['tick_requests'] / b_soon['runs_per_tick'])} |",
        f"| = SDK requests | {_fmt(b_ahead['sdk_requests'])} | {_fmt(b_soon['sdk_requests'])} |",
        f"| of which DynamoDB | {_fmt(b_ahead['dynamodb_requests'])} | {_fmt(b_soon['dynamodb_requests'])} |",
        f"| of which SQS | {_fmt(b_ahead['sqs_requests'])} | {_fmt(b_soon['sqs_requests'])} |",
        f"| of which S3 | {_fmt(b_ahead['s3_requests'])} | {_fmt(b_soon['s3_requests'])} |",
        f"| API Gateway requests (1 per create) | {_fmt(b_ahead['apigw_requests'])} | {_fmt(b_soon['apigw_requests'])} |",
        f"| Lambda invocations (API 1 + executor 1 per batch) | {_fmt(b_ahead['lambda_invocations'])} |"
        f" {_fmt(b_soon['lambda_invocations'])} |",
        f"| **billable requests** | **{_fmt(b_ahead['billable_requests'])}** | **{_fmt(b_soon['billable_requests'])}** |",
        f"| **DynamoDB WRU** (computed, see below) | **{_fmt(b_ahead['wru'])}** | **{_fmt(b_soon['wru'])}** |",
        f"| of which the run's own | {_fmt(b_ahead['wru_per_run'])} | {_fmt(b_soon['wru_per_run'])} |",
        f"| DynamoDB RRU | {_fmt(b_ahead['rru'])} | {_fmt(b_soon['rru'])} |",
        f"| moto's ReturnConsumedCapacity (the run's writes) | {_fmt(ahead['total']['moto_reported_wcu_per_run'])} |"
        f" {_fmt(soon['total']['moto_reported_wcu_per_run'])} |",
        "",
        "A tick's fixed requests are one query per shard and, per shard with due work, a lease and its release:"
        f" {', '.join(f'{n} {op}' for op, n in sorted(ahead['total']['per_tick_calls'].items()))} in this run."
        " They are per tick, so the fewer runs a tick carries the more they weigh; section 2 costs them per month.",
        "",
        "The tick's own invocation (one a minute) and the event source mapping's empty receives are not per run"
        " either: they are the idle cost in section 2.",
        "",
        "### By phase, service and operation (created ahead)",
        "",
        "| phase | operation and item | calls per run | WRU per run (table + indexes) | bytes billed (mean) |",
        "|---|---|---:|---|---:|",
    ]
    lines += phase_rows(ahead["phases"])
    lines += [
        "",
        "What each write is: create = `TransactWriteItems` of the job's put (enters `due-index` and `tenant-index`)"
        " and its audit record's (enters `due-index`, its archive's outbox, and `tenant-index`, an admin's listing);"
        " tick = `UpdateItem` audit (the record archived: `PutObject` to S3, then out of `due-index`), `Query`"
        " per shard, `PutItem` run (enters `due-index`), `UpdateItem` job (leaves `due-index`; `tenant-index`"
        " projects only what its queries filter on, so this write leaves its entry alone), `SendMessageBatch`;"
        " execute = `ReceiveMessage`,"
        " `ChangeMessageVisibilityBatch` (the batch's messages follow their leases), `UpdateItem` lease (the run"
        " keeps its `due-index` entry), `PutObject` result, `UpdateItem` finish (leaves `due-index`),"
        " `UpdateItem` complete the one-shot job (rewrites its `tenant-index` entry again), `DeleteMessageBatch`.",
        "",
        "**How WRU are counted.** The meter asks for `ReturnConsumedCapacity=TOTAL` on every DynamoDB call, but moto"
        " answers a constant 1.0 per write whatever the item's size and indexes (the last row of the table above)."
        " So WRU are computed by DynamoDB's documented rules from the item's images before and after each write,"
        " read from moto's backend: 1 WRU per started KB of the larger image, plus per GSI 1 write per started"
        " KB of the index entry when the item enters or leaves the index or a projected attribute changes (2 when"
        " the index key changes). RRU: 1 per started 4 KB, half for eventually consistent reads and GSI queries."
        " A `TransactWriteItems` bills each item's table write twice, 2 WRU per started KB (prepare and commit:"
        ' DynamoDB developer guide, "Read and write operations" and "Transactions: capacity management"), and its'
        " index writes as any write's: a transaction's changes reach its GSIs after it commits (the same guide);"
        " emulators checked against DynamoDB bill it so (nubo-db/dynoxide#188).",
        "",
        "### What dominates, and what would cut it",
        "",
        *_advice(ahead, b_ahead, result["billable"].get("inline")),
    ]
    lines += _wru_goals(result["billable"])
    if result.get("forecasts"):
        lines += ["", *forecast_cost.render(result["forecasts"])]
    inline = result["billable"].get("inline")
    if inline:
        lines += [
            "",
            f"**With `InlineResultMaxBytes` = {INLINE_BYTES}** (the same {result['runs']} runs, created ahead; their"
            " results, under 1 KB, kept in the run record by the outcome's own write instead of S3):"
            f" {_fmt(inline['billable_requests'])} billable requests ({_fmt(inline['sdk_requests'])} SDK requests,"
            f" {_fmt(inline['s3_requests'])} to S3) and {_fmt(inline['wru'])} WRU per run, against"
            f" {_fmt(b_ahead['billable_requests'])}, {_fmt(b_ahead['sdk_requests'])}, {_fmt(b_ahead['s3_requests'])}"
            f" and {_fmt(b_ahead['wru'])} with the default (0: every result in S3). Section 2 prices both.",
        ]
    return "\n".join(lines)


SDK_GOAL = 6  # issue 16's goals per one-shot run
WRU_GOAL = 8
ONE_SHOT_WRU_GOAL = 12  # issue 39's goals, default configuration
CRON_WRU_GOAL = 8


def _wru_goals(billed: dict[str, Any]) -> list[str]:
    """Issue 39's write-unit goals per run, each stated met or missed (a result without the cron scenario: the
    one-shot's alone)."""
    one_shot = billed["ahead"]["wru"]
    lines = [
        "",
        "### Write units per run against issue 39's goals (default configuration)",
        "",
        "| run | WRU (the run's own + the tick's amortised) | goal | |",
        "|---|---:|---:|---|",
        f"| one-shot (created ahead) | {_fmt(one_shot)} | ≤ {ONE_SHOT_WRU_GOAL} |"
        f" {'met' if one_shot <= ONE_SHOT_WRU_GOAL else 'missed'} |",
    ]
    if "cron" in billed:
        cron = billed["cron"]["wru"]
        lines.append(
            f"| cron (no create) | {_fmt(cron)} | ≤ {CRON_WRU_GOAL} | {'met' if cron <= CRON_WRU_GOAL else 'missed'} |"
        )
    lines += [
        "",
        "A one-shot's create is an API request, and so audited: the job's put and its record's in one transaction (2"
        " WRU per KB of each: 4, the record kept compressed without its absent values so that it fits 1 KB; 6 while"
        " it took 2 KB), the record's two index entries (2) and its archive's mark (2): 8 of the one-shot's WRU that"
        " the goal, set before the benchmark measured the record, leaves out; a cron's runs share one create."
        " A run's `due-index` entry is written at its claim and deleted at its outcome, and no more: the index does"
        " not project the run's status or lease, which its start and heartbeats change (the tick reads them from"
        " the run's item for the few entries it acts on). What a goal misses by is the `runs-index` entry (written"
        " at each status: QUEUED, RUNNING, and the outcome) and, for a one-shot, the job's own writes (create,"
        " claim, completion), each entering or leaving an index.",
    ]
    return lines


def _goal(default: float, inline: float, goal: float) -> str:
    if default <= goal:
        return "**met**"
    if inline <= goal:
        return f"**met with `InlineResultMaxBytes`** ({_fmt(inline)}; {_fmt(default)} without)"
    return f"**not met** ({_fmt(default)}; {_fmt(inline)} with `InlineResultMaxBytes`)"


def phase_rows(phases: dict[str, Any]) -> list[str]:
    """One table row per phase and operation: calls, WRU by part, and bytes billed, per run."""
    rows = []
    for phase in PHASES:
        summary = phases[phase]
        for op, n in sorted(summary["per_run"].items()):
            if op.endswith(EMPTY_RECEIVE):
                continue
            parts = summary["wru_per_run"].get(op, {})
            ordered = sorted(parts.items(), key=lambda part: (part[0] != "table", part[0]))  # the table, then indexes
            wru = " + ".join(f"{_fmt(v)} {k}" for k, v in ordered if v)
            size = summary["mean_item_bytes"].get(op, "")
            rows.append(f"| {phase} | `{op}` | {_fmt(n)} | {wru} | {size} |")
    return rows


def _advice(ahead: dict[str, Any], billed: dict[str, float], inlined: dict[str, float] | None) -> list[str]:
    per_run = ahead["total"]["per_run"]
    wru = ahead["total"]["wru_per_run"]

    def calls(prefix: str) -> float:
        return sum(n for op, n in per_run.items() if op.startswith(prefix))

    def units(prefix: str) -> float:
        return sum(sum(parts.values()) for op, parts in wru.items() if op.startswith(prefix))

    update_wru = units("dynamodb:UpdateItem")
    put_wru = units("dynamodb:PutItem")
    tenant = sum(parts.get("tenant-index", 0) for parts in wru.values())
    due = sum(parts.get("due-index", 0) for parts in wru.values())
    phases = ahead["phases"]
    claim_tenant = phases["tick"]["wru_per_run"].get("dynamodb:UpdateItem job", {}).get("tenant-index", 0)
    complete_wru = sum(phases["execute"]["wru_per_run"].get("dynamodb:UpdateItem job", {}).values())
    complete_calls = phases["execute"]["per_run"].get("dynamodb:UpdateItem job", 0)
    run_due = sum(parts.get("due-index", 0) for op, parts in wru.items() if op.endswith(" run"))
    inline = inlined["sdk_requests"] if inlined else None
    return [
        f"- DynamoDB is {_fmt(billed['dynamodb_requests'])} of the {_fmt(billed['sdk_requests'])} SDK requests:"
        f" {_fmt(calls('dynamodb:PutItem'))} `PutItem` ({_fmt(put_wru)} WRU),"
        f" {_fmt(calls('dynamodb:UpdateItem'))} `UpdateItem` ({_fmt(update_wru)} WRU),"
        f" {_fmt(calls('dynamodb:GetItem'))} `GetItem`. Index maintenance is"
        f" {_fmt(due + tenant)} of the run's {_fmt(billed['wru_per_run'])} WRU ({_fmt(due)} `due-index`,"
        f" {_fmt(tenant)} `tenant-index`).",
        "- Cuts, each keeping the promises (1, 3, 4 and 5 made; 2 and 6 not):",
        "  1. Made: `tenant-index` projects only what its queries filter on (state, type, name, tags, schedule;"
        " `TENANT_INDEX_PROJECTION`), so the claim's job update no longer rewrites the job's index entry"
        f" (now {_fmt(claim_tenant)} WRU there); a listing reads its page's items with one `BatchGetItem`. The"
        " completion still rewrites it: it changes `state`, which the listings filter on.",
        "  2. Not made: `JobRecords.complete_if_settled` (called by `RunExecutor` when a one-shot's run settles,"
        f" {_fmt(complete_calls)} request and {_fmt(complete_wru)} WRU) is a third write to the job after the claim"
        " already removed it from the due index. It stays: a job completes only once its last occurrence has"
        " settled (issue 9), so that a queued one-shot can still be cancelled or paused and its run is recorded"
        " as skipped, and its tenant's `max_active_jobs` counts it until then. Folding it into the claim's"
        " `UpdateItem` would save 1 request and 2 WRU but break that promise.",
        "  3. Made: the executor no longer reads the job (`GetItem`, 1 request and 1 RRU a run). The claim's"
        " advance returns the job as it left it (`ReturnValues`, no capacity billed), and the run's message"
        " carries a copy of what the executor needs (tickwork.model.run_spec: type, payload, retry, timeout, limits;"
        " ACTIVE jobs with overlap `ALLOW`, no circuit breaker, a copy of at most 16 KiB, so one SQS 64 KiB"
        " chunk). A pause, resume, cancel or `PATCH` marks the job's unsettled runs before it writes the job,"
        " and a marked run, a retry, a takeover or a run leased over 10 minutes late reads the job as before.",
        "  4. Made, as a choice: with the template's `InlineResultMaxBytes` above 0, a job's result of at most"
        " that size is kept in the run record by the outcome's `UpdateItem`, written anyway, instead of S3: -1"
        " request and -$5 per million (the figures below). Off by default: results stay in S3 unless chosen.",
        "  5. Made: a batch's messages follow their leases with one `ChangeMessageVisibilityBatch` before its"
        " records start (they start together, on threads), instead of one `ChangeMessageVisibility` each: -0.9"
        " requests a run in full batches. A record the batch request left out sets its own.",
        "  6. Not cheap, for completeness: a run enters the due index at its claim and leaves it at its outcome"
        f" ({_fmt(run_due)} WRU) only so that a tick that dies between claiming and sending, or a lapsed lease"
        " whose message is stranded (docs/reliability.md), is recovered. Another recovery path (e.g. the claim"
        " leaving the job's own entry in place, moved forward, until the send succeeded) would save the claim's"
        " part, at the cost of a third write on the send path.",
        "",
        f"What is left, per run: {_fmt(billed['sdk_requests'])} SDK requests"
        + (f" ({_fmt(inline)} with `InlineResultMaxBytes`)" if inline is not None else "")
        + f" and {_fmt(billed['wru'])} WRU. The WRU goal (≤ {WRU_GOAL}) is out of reach for this design, for a"
        " structural reason: a one-shot run needs a durable create, a claim (the run's put, the exactly-once lock,"
        " and the job's advance), a lease (the one-place lock), an outcome and the job's completion, six"
        " conditional writes of at least 1 WRU each, plus the index entries they maintain (the job's in"
        " `due-index` and `tenant-index` at create, the run's in `due-index` from claim to outcome, the job's"
        " `tenant-index` entry again at completion: 7 WRU). Only one item for a one-shot's job and run would cut"
        " that (one put, one claim update, lease, outcome: about 8 WRU); it would also change what a job is for"
        " every reader of the API, and is not built. For requests the same six writes, the result's"
        " `PutObject` and the amortised SQS batches are the floor of this design: about 6.5 SDK requests with"
        " `InlineResultMaxBytes`, 7.5 without.",
    ]


def console(result: dict[str, Any]) -> str:
    b = result["billable"]["ahead"]
    return (
        f"[1] requests per one-shot run ({result['runs']} runs): {b['billable_requests']:.2f} billable"
        f" ({b['sdk_requests']:.2f} SDK calls: DynamoDB {b['dynamodb_requests']:.2f}, SQS {b['sqs_requests']:.2f},"
        f" S3 {b['s3_requests']:.2f}; + API Gateway 1, Lambda {b['lambda_invocations']:.2f}),"
        f" {b['wru']:.2f} WRU, {b['rru']:.2f} RRU per run"
        + (f"; a cron run: {result['billable']['cron']['wru']:.2f} WRU" if "cron" in result["billable"] else "")
    )
