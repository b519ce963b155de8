"""Section 2: cost per million one-shot runs, next to EventBridge Scheduler doing the same work; idle cost.

Per-run counts come from section 1 (measured); prices from benchmarks/prices.py (each with its source);
Lambda durations and the event source mapping's idle polling are assumptions, listed with their basis.
An idle tick's requests are measured here (one tick over an empty table).

The EventBridge Scheduler design does the same work per run with the same records: the API (API Gateway +
Lambda) writes the same job record (table + tenant-index, no due index) and creates a one-time schedule
(deleted after completion); the schedule invokes a Lambda per run with the payload in its input, which
writes the result to S3 and records the outcome on the job record. No tick, no queue, no lease.
"""

from __future__ import annotations

from typing import Any

from tickwork_local.stack.template import load_template

from benchmarks.common import Stamp, moto_session
from benchmarks.prices import ASSUMPTIONS, PRICES, REGION, assumption, price
from tests.harness import Pipeline

MILLION = 1_000_000


def _function_memory_gb(logical_id: str) -> float:
    template = load_template()
    props = template["Resources"][logical_id].get("Properties", {})
    memory = props.get("MemorySize", template.get("Globals", {}).get("Function", {}).get("MemorySize", 128))
    return float(memory) / 1024


def _template_counts() -> dict[str, int]:
    resources = load_template()["Resources"].values()
    return {
        "alarms": sum(1 for r in resources if r.get("Type") == "AWS::CloudWatch::Alarm"),
        "dashboards": sum(1 for r in resources if r.get("Type") == "AWS::CloudWatch::Dashboard"),
    }


def measure_idle_tick() -> dict[str, Any]:
    """One tick over an empty table: what every minute costs when nothing is due."""
    with moto_session(), Pipeline.create(DUE_SHARDS="8") as pipeline:
        pipeline.calls.clear()
        pipeline.tick()
        calls = dict(pipeline.calls.by_operation())
    return {"calls": calls, "requests": sum(calls.values())}


def _line(item: str, quantity: float, price_key: str, note: str = "") -> dict[str, Any]:
    p = price(price_key)
    return {
        "item": item,
        "quantity": quantity,
        "unit": p.unit,
        "price_key": price_key,
        "usd": quantity * p.each,
        "note": note,
    }


def _compute_line(item: str, seconds: float, gb: float, note: str) -> dict[str, Any]:
    line = _line(item, seconds * gb, "lambda_gb_s_arm", note)
    line["unit"] = "GB-s"
    return line


def per_million(section1: dict[str, Any], scenario: str = "ahead") -> dict[str, Any]:
    billed = section1["billable"][scenario]
    total = section1["scenarios"][scenario]["total"]
    per_run = total["per_run"]
    receives = sum(n for op, n in per_run.items() if op.startswith("sqs:ReceiveMessage") and "empty" not in op)
    api_gb, exec_gb, tick_gb = (_function_memory_gb(f) for f in ("ApiFunction", "ExecutorFunction", "TickFunction"))
    m = MILLION
    # Lambda compute: each function at its own memory size (template.yaml); durations are assumptions.
    compute_gb_s = (
        assumption("api_ms_per_create") / 1000 * api_gb
        + assumption("executor_ms_per_run") / 1000 * exec_gb
        + assumption("tick_ms_per_run") / 1000 * tick_gb
    )
    tickwork = [
        _line("API Gateway HTTP API: POST /v1/jobs", m * 1.0, "apigw_http"),
        _line("Lambda requests: API 1 + executor 1 per batch", m * (1.0 + receives), "lambda_request"),
        _compute_line(
            "Lambda compute: API, executor and tick time per run (arm64)",
            m * compute_gb_s,
            1.0,
            f"{assumption('api_ms_per_create'):.0f} ms x {api_gb:g} GB + {assumption('executor_ms_per_run'):g} ms x"
            f" {exec_gb:g} GB + {assumption('tick_ms_per_run'):g} ms x {tick_gb:g} GB (assumed)",
        ),
        _line("DynamoDB writes (WRU, computed from the measured writes)", m * billed["wru_per_run"], "ddb_wru"),
        _line(
            "DynamoDB reads (RRU, computed from the measured reads)", m * sum(total["rru_per_run"].values()), "ddb_rru"
        ),
        _line("SQS: send, receive, delete (batched by 10)", m * billed["sqs_requests"], "sqs_request"),
        _line("S3 PUT: the result object, the create's audit record's archive", m * billed["s3_requests"], "s3_put"),
    ]

    job_create_no_due = peer_job_put_wru(section1)
    # The outcome update of the job record: as Tickwork's completion of a one-shot (table + tenant-index).
    job_update_wru = _mean_job_update_wru(section1)
    ebs = [
        _line("API Gateway HTTP API: create", m * 1.0, "apigw_http"),
        _line("Lambda requests: API 1 + target 1 per run", m * 2.0, "lambda_request"),
        _compute_line(
            "Lambda compute: API and target per run (arm64)",
            m
            * (
                (assumption("api_ms_per_create") + 10) / 1000 * api_gb
                + assumption("scheduler_target_ms") / 1000 * exec_gb
            ),
            1.0,
            f"{assumption('api_ms_per_create') + 10:.0f} ms x {api_gb:g} GB (create + CreateSchedule) +"
            f" {assumption('scheduler_target_ms'):.0f} ms x {exec_gb:g} GB (assumed)",
        ),
        _line("EventBridge Scheduler CreateSchedule", m * 1.0, "scheduler_api"),
        _line("EventBridge Scheduler invocations", m * 1.0, "scheduler_invocation"),
        _line(
            "DynamoDB writes: job record (table + tenant-index) and its outcome update",
            m * (job_create_no_due + job_update_wru),
            "ddb_wru",
            f"{job_create_no_due:g} + {job_update_wru:g} WRU, Tickwork's job item sizes",
        ),
        _line("S3 PUT: the result object", m * 1.0, "s3_put"),
    ]
    t_total = sum(line["usd"] for line in tickwork)
    e_total = sum(line["usd"] for line in ebs)
    traced = m * (1.0 + receives)
    traced_ebs = m * 2.0
    return {
        "tickwork": tickwork,
        "scheduler": ebs,
        "tickwork_total": t_total,
        "scheduler_total": e_total,
        "ratio": t_total / e_total,
        "xray_note": {
            "traced_invocations_per_million": traced,
            "usd_per_million_traces": 5.0,
            "usd": traced * 5.0 / MILLION,
            "scheduler_usd": traced_ebs * 5.0 / MILLION,
        },
    }


def peer_job_put_wru(section1: dict[str, Any]) -> float:
    """WRU of a peer's job record put (table + tenant-index, no audit record, not transactional), at Tickwork's job
    item's size: what one write of that item and its tenant-index entry bills, as its completion's update does."""
    return _mean_job_update_wru(section1)


def _mean_job_update_wru(section1: dict[str, Any]) -> float:
    """WRU of one update of a job record (table + tenant-index), from the execute phase's completion write."""
    execute = section1["scenarios"]["ahead"]["phases"]["execute"]
    parts = execute["wru_per_run"].get("dynamodb:UpdateItem job", {})
    calls = execute["per_run"].get("dynamodb:UpdateItem job", 0) or 1
    return sum(parts.get(k, 0) for k in ("table", "tenant-index")) / calls


def idle_month(idle_tick: dict[str, Any]) -> dict[str, Any]:
    minutes = assumption("minutes_per_month")
    tick_gb = _function_memory_gb("TickFunction")
    pollers, wait_s, queues = (assumption(k) for k in ("esm_pollers_idle", "esm_poll_wait_s", "band_queues"))
    empty_receives = queues * pollers * (60 / wait_s) * minutes
    counts = _template_counts()
    lines = [
        _line("EventBridge rule: 1 tick per minute", minutes, "eventbridge_rule_event"),
        _line("Lambda requests: ticks", minutes, "lambda_request"),
        _compute_line(
            "Lambda compute: idle ticks",
            minutes * assumption("idle_tick_ms") / 1000 * tick_gb,
            1.0,
            f"{assumption('idle_tick_ms'):.0f} ms x {tick_gb:g} GB per tick (assumed)",
        ),
        _line(
            f"DynamoDB reads: {idle_tick['requests']} due-index queries per idle tick (measured), 0.5 RRU each",
            minutes * idle_tick["requests"] * 0.5,
            "ddb_rru",
        ),
        _line(
            "SQS empty receives: event source mapping long polls",
            empty_receives,
            "sqs_request",
            f"{queues:g} queues x {pollers:g} pollers x {60 / wait_s:g} per minute (assumed; see assumptions)",
        ),
        _line("CloudWatch custom metrics: TickDurationMs (the only one an idle tick emits)", 1, "cw_metric"),
    ]
    fixed = [
        _line(f"CloudWatch alarms in template.yaml ({counts['alarms']})", counts["alarms"], "cw_alarm"),
        _line(
            f"CloudWatch dashboard ({counts['dashboards']}; free if the account has fewer than 3)",
            counts["dashboards"],
            "cw_dashboard",
        ),
        _line("CloudWatch custom metrics once runs flow (10 names, dimension `service`)", 10, "cw_metric"),
    ]
    return {
        "lines": lines,
        "total": sum(line["usd"] for line in lines),
        "other_fixed": fixed,
        "other_fixed_total": sum(line["usd"] for line in fixed[:2]),
        "idle_tick": idle_tick,
    }


def run(stamp: Stamp, section1: dict[str, Any]) -> dict[str, Any]:
    return {
        "stamp": stamp.__dict__,
        "section1_stamp": section1["stamp"],
        "region": REGION,
        "per_million": per_million(section1),
        # InlineResultMaxBytes = 1024: small results in the run record, no S3 PUT (section 1's "inline" runs).
        "per_million_inline": per_million(section1, "inline") if "inline" in section1["billable"] else None,
        "idle": idle_month(measure_idle_tick()),
        "prices": [p.__dict__ for p in PRICES.values()],
        "assumptions": [a.__dict__ for a in ASSUMPTIONS.values()],
    }


# ---------------------------------------------------------------- rendering


def _money(x: float) -> str:
    if x == 0:
        return "$0"
    if x < 0.01:
        return f"${x:.4f}"
    return f"${x:,.2f}"


def _qty(x: float) -> str:
    if x >= 1000:
        return f"{x:,.0f}"
    return f"{x:g}" if x == int(x) else f"{x:.2f}"


def _unit_price(usd: float, per: float, unit: str) -> str:
    amount = f"{usd:.10f}".rstrip("0").rstrip(".") if usd < 0.001 and usd else f"{usd:g}"
    return f"${amount} per {unit}" if per == 1 else f"${amount} per {per:,.0f}"


def _lines_table(lines: list[dict[str, Any]]) -> list[str]:
    out = ["| line item | quantity | unit price | cost | note |", "|---|---:|---:|---:|---|"]
    for line in lines:
        p = PRICES[line["price_key"]]
        mark = "" if p.verified else " ?"
        out.append(
            f"| {line['item']} | {_qty(line['quantity'])} {line['unit']} | {_unit_price(p.usd, p.per, p.unit)}{mark} |"
            f" {_money(line['usd'])} | {line['note']} |"
        )
    return out


def render(result: dict[str, Any]) -> str:
    stamp = Stamp(**result["stamp"])
    s1 = Stamp(**result["section1_stamp"])
    pm, idle = result["per_million"], result["idle"]
    lines = [
        "## 2. Cost per million runs",
        "",
        f"Computed by {stamp.line()}, from section 1's counts ({s1.line()}) and the price table in"
        f" `benchmarks/prices.py` ({result['region']}, on-demand, list prices, no free tiers).",
        "",
        f"**Tickwork: {_money(pm['tickwork_total'])} per million one-shot runs; EventBridge Scheduler doing the same"
        f" work: {_money(pm['scheduler_total'])}; ratio {pm['ratio']:.2f}.** Tickwork adds start precision"
        " (about a second, never early; EventBridge Scheduler fires within its minute) and a run record per"
        " occurrence; it pays for them with DynamoDB writes.",
        "",
        *_inline_line(result),
        "### Tickwork (created ahead, claimed by the tick; counts measured in section 1)",
        "",
        *_lines_table(pm["tickwork"]),
        f"| **total per million runs** | | | **{_money(pm['tickwork_total'])}** | |",
        "",
        "### EventBridge Scheduler: a one-time schedule invoking a Lambda per run, same records",
        "",
        *_lines_table(pm["scheduler"]),
        f"| **total per million runs** | | | **{_money(pm['scheduler_total'])}** | |",
        "",
        f"Both totals leave out X-Ray: the template sets `Tracing: Active`, and at under one request a second the"
        f" default sampling rule (1 per second, then 5%) traces every invocation, so Tickwork would add"
        f" ~{_money(pm['xray_note']['usd'])} per million runs at $5 per million traces (not in the facts file),"
        " falling to 5% of that at volume; EventBridge Scheduler's two Lambdas per run, traced the same way,"
        f" would add ~{_money(pm['xray_note']['scheduler_usd'])}.",
        "",
        "### Idle cost per month (nothing due)",
        "",
        *_lines_table(idle["lines"]),
        f"| **idle total per month** | | | **{_money(idle['total'])}** | |",
        "",
        f"An idle tick's requests, measured: {', '.join(f'{n} {op}' for op, n in idle['idle_tick']['calls'].items())}"
        " (one query per shard; the shard leases are written only for shards with due work). Once runs flow,"
        " each busy tick adds a lease and a release per shard with due work (2 x 8 writes a minute at most:"
        " 691,200 WRU, $0.43 a month), and the runs' own costs above.",
        "",
        "Fixed costs outside the issue's idle list, from the template:",
        "",
        *_lines_table(idle["other_fixed"]),
        "",
        "EventBridge Scheduler has no idle cost: nothing polls and nothing ticks.",
        "",
        "### Price table (`benchmarks/prices.py`)",
        "",
        "| item | price | source |",
        "|---|---:|---|",
    ]
    for p in result["prices"]:
        mark = " ?" if not p["verified"] else ""
        price_text = _unit_price(p["usd"], p["per"], p["unit"])
        if p["per"] != 1:
            price_text += f" {p['unit']}"
        lines.append(f"| {p['item']} | {price_text}{mark} | {p['source']} |")
    lines += [
        "",
        "`?`: not in `shared/reference/aws-facts.md`; taken from the AWS pricing page, to be checked.",
        "",
        "### Assumptions (not prices)",
        "",
        "| assumption | value | basis |",
        "|---|---:|---|",
    ]
    for a in result["assumptions"]:
        lines.append(f"| {a['what']} | {a['value']:g} {a['unit']} | {a['basis']} |")
    return "\n".join(lines)


def _inline_line(result: dict[str, Any]) -> list[str]:
    inline = result.get("per_million_inline")
    if not inline:
        return []
    return [
        f"**With `InlineResultMaxBytes` = 1024** (results under 1 KB kept in the run record, no S3 PUT; section 1):"
        f" **{_money(inline['tickwork_total'])} per million runs, ratio {inline['ratio']:.2f}** against EventBridge"
        f" Scheduler's {_money(inline['scheduler_total'])} (whose design keeps its result in S3). The default (0:"
        " every result in S3) is the table below.",
        "",
    ]


def console(result: dict[str, Any]) -> str:
    pm, idle = result["per_million"], result["idle"]
    return (
        f"[2] cost per million runs: Tickwork {_money(pm['tickwork_total'])}, EventBridge Scheduler"
        f" {_money(pm['scheduler_total'])} (ratio {pm['ratio']:.2f}); idle {_money(idle['total'])} per month"
    )
