"""Cost per million runs, like for like: pure arithmetic on section 2's line items (benchmarks/cost.py's
`per_million`, itself on section 1's measured counts) and the price table; no I/O.

- Results in S3 against EventBridge Scheduler writing its result to S3 (section 2 as it stands).
- Results inline (`InlineResultMaxBytes` >= 1 KB) against EventBridge Scheduler writing its result to DynamoDB,
  in the outcome update it already makes (section 2's design without its S3 PUT).
- A cron run: no create (no API request, no API Lambda, no job write); EventBridge Scheduler's recurring
  schedule: no CreateSchedule, no create.
- Hosted peers with a published price, at the fewest billed units one scheduled run takes there.
- DynamoDB's capacity modes at 100M runs a day: on-demand, provisioned, 1-year reserved, and when each wins.
"""

from __future__ import annotations

from typing import Any

from benchmarks.cost import peer_job_put_wru
from benchmarks.prices import price

MILLION = 1_000_000
HOURS_PER_MONTH = 24 * 30

# Goals (issue #39, item 4), default configuration.
ONE_SHOT_WRU_GOAL = 12.0
ONE_SHOT_USD_GOAL = 14.0
CRON_WRU_GOAL = 8.0
INLINE_USD_GOAL = 9.20


def _total(lines: list[dict[str, Any]], *, without: tuple[str, ...] = ()) -> float:
    return sum(line["usd"] for line in lines if not any(word in line["item"] for word in without))


def cron_per_million(section1: dict[str, Any], per_million: dict[str, Any], api_gb: float, api_ms: float) -> dict:
    """A cron occurrence: section 2's one-shot without its create (the API request, the API Lambda's invocation and
    compute, the job's write), from section 1's phases; not a cron measured as such (a cron's claim also computes
    its next occurrence). EventBridge Scheduler's recurring schedule: the same, and no CreateSchedule."""
    parts = section1["scenarios"]["ahead"]["phases"]["create"]["wru_per_run"]
    create_wru = sum(sum(p.values()) for p in parts.values())
    create_no_due = peer_job_put_wru(section1)
    wru_usd = price("ddb_wru").each * MILLION
    request = (price("apigw_http").each + price("lambda_request").each) * MILLION
    gb_s = price("lambda_gb_s_arm").each * MILLION
    tickwork = per_million["tickwork_total"] - request - api_ms / 1000 * api_gb * gb_s - create_wru * wru_usd
    scheduler = (
        per_million["scheduler_total"]
        - request
        - (api_ms + 10) / 1000 * api_gb * gb_s
        - price("scheduler_api").each * MILLION
        - create_no_due * wru_usd
    )
    wru = section1["billable"]["ahead"]["wru_per_run"] - create_wru
    measured = section1["billable"].get("cron")
    if measured:  # section 1 measured a cron scenario: its WRU and S3 PUTs replace the derived ones
        tickwork += (measured["wru_per_run"] - wru) * wru_usd
        wru = measured["wru_per_run"]
        # the create's audit record's archive object is the create's, not the occurrence's
        tickwork += (
            (measured["s3_requests"] - section1["billable"]["ahead"]["s3_requests"]) * price("s3_put").each * MILLION
        )
    source = "section 1's cron scenario" if measured else "derived: the one-shot's phases without its create"
    return {"wru": wru, "tickwork": tickwork, "scheduler": scheduler, "ratio": tickwork / scheduler, "source": source}


def like_for_like(section1: dict[str, Any], s3: dict[str, Any], inline: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Rows: what is compared, Tickwork's and EventBridge Scheduler's cost per million, and their ratio."""
    rows = [
        {
            "case": "one-shot, results in S3 (default)",
            "peer": "EventBridge Scheduler, result to S3",
            "tickwork": s3["tickwork_total"],
            "scheduler": s3["scheduler_total"],
        }
    ]
    if inline:
        ebs_inline = _total(inline["scheduler"], without=("S3 PUT",))
        rows.append(
            {
                "case": "one-shot, results inline (`InlineResultMaxBytes` = 1024)",
                "peer": "EventBridge Scheduler, result in its DynamoDB outcome update",
                "tickwork": inline["tickwork_total"],
                "scheduler": ebs_inline,
            }
        )
    for row in rows:
        row["ratio"] = row["tickwork"] / row["scheduler"]
    return rows


def peers(tickwork_one_shot: float) -> list[dict[str, Any]]:
    """Hosted peers, per million one-shot runs, at the fewest billed units a scheduled run takes there; their own
    compute (the worker or function that runs the job) is left out, as it is billed by the customer's host."""
    temporal = price("temporal_action")
    sfn = price("sfn_transition")
    trigger = price("trigger_run")
    return [
        {
            "peer": "Temporal Cloud",
            "units": "2 actions (workflow start with a start delay, activity start)",
            "usd": 2 * temporal.per_million,
            "source": temporal.source,
            "verified": temporal.verified,
        },
        {
            "peer": "AWS Step Functions Standard",
            "units": "3 state transitions (Wait until the instant, Task, end); plus the Lambda it invokes",
            "usd": 3 * sfn.per_million,
            "source": sfn.source,
            "verified": sfn.verified,
        },
        {
            "peer": "Trigger.dev",
            "units": "1 run (delayed trigger); plus compute per second",
            "usd": trigger.per_million,
            "source": trigger.source,
            "verified": trigger.verified,
        },
        {
            "peer": "Inngest",
            "units": "2 executions (the function run and its one step); 1M a month included on Pro",
            "usd": None,
            "source": "inngest.com/docs/durable-execution/limits (an execution is a run or a step); the overage price"
            " per execution is on inngest.com/pricing and was not found in the stored pages",
            "verified": False,
        },
        {"peer": "Tickwork (this repo)", "units": "section 2", "usd": tickwork_one_shot, "source": "section 2"},
    ]


def goals(section1: dict[str, Any], s3: dict[str, Any], inline: dict[str, Any] | None, cron: dict[str, Any]) -> list:
    """Item 4's goals, each with the figure and met or missed."""
    wru = section1["billable"]["ahead"]["wru_per_run"]
    out = [
        ("one-shot ≤ 12 WRU", wru, wru <= ONE_SHOT_WRU_GOAL, f"{wru:g} WRU"),
        ("one-shot ≤ $14/M", s3["tickwork_total"], s3["tickwork_total"] <= ONE_SHOT_USD_GOAL, ""),
        ("cron run ≤ 8 WRU", cron["wru"], cron["wru"] <= CRON_WRU_GOAL, f"{cron['wru']:g} WRU"),
    ]
    if inline:
        out.append(
            (
                "one-shot with `InlineResultMaxBytes` ≥ 1 KB ≤ $9.20/M",
                inline["tickwork_total"],
                inline["tickwork_total"] <= INLINE_USD_GOAL,
                "",
            )
        )
    return [{"goal": g, "value": v, "met": m, "text": t or f"${v:.2f}"} for g, v, m, t in out]


def capacity_modes(wru_per_run: float, runs_per_day: float, peak_wru_per_s: float) -> dict[str, Any]:
    """DynamoDB writes per million runs at `runs_per_day`: on-demand; provisioned and 1-year reserved, each sized two
    ways: for the day's average at 70% utilisation (the hour-top bursts then rely on DynamoDB's burst capacity, up to
    300 s of unused capacity, best effort), or for the hour-top peak all day."""
    ondemand = price("ddb_wru").each
    runs_per_month = runs_per_day * 30
    average = runs_per_day * wru_per_run / 86_400
    out: dict[str, Any] = {
        "average_wru_per_s": average,
        "peak_wru_per_s": peak_wru_per_s,
        "on_demand": wru_per_run * ondemand * MILLION,
        "modes": [],
    }
    for key, label in (("ddb_wcu_hour", "provisioned"), ("ddb_wcu_hour_reserved_1y", "reserved, 1 year")):
        wcu_s = price(key).each / 3600
        break_even = wcu_s / ondemand
        for sizing, units in (("average at 70%", average / 0.7), ("hour-top peak", peak_wru_per_s)):
            usd_month = units * HOURS_PER_MONTH * price(key).each
            out["modes"].append(
                {
                    "mode": label,
                    "sizing": sizing,
                    "wcu": units,
                    "per_million": usd_month / runs_per_month * MILLION,
                    "break_even_utilisation": break_even,
                    "utilisation": average / units,
                    "verified": price(key).verified,
                }
            )
    return out
