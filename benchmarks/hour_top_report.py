"""The capacity section's hour-top bursts and like-for-like costs: benchmarks/hour_top.py's model and
benchmarks/cost_compare.py's arithmetic, fed with this repository's measured figures, and their tables.

Inputs, all from benchmarks/results.json (what `make bench` last wrote): section 1's WRU and due-index writes per
run while a run executes, the capacity model's executor timing (section 1's requests, section 3's CPU), section
11's cold start, and section 2's line items. Each row says what it changes; every goal says met or missed.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from tickwork.store.codec import RUN_SEARCH_SHARDS

from benchmarks import cost, cost_compare, hour_top
from benchmarks.hour_top import Burst
from benchmarks.prices import assumption, price

GOAL_S = 2.0  # issue #39, item 2: peak p99 lateness at 100M/day, 30% of crons at hh:00:00
GOAL_SHARDS = 1_000
HEADROOM = 0.9  # the warm-up is sized for 90% of the goal: the model's steps and the cold start's edges
MAX_INDEX_PARTITIONS = 8  # x shards: the most the warm-up splits the due index into
# Section 11's figure when it has not run: executor import + first wiring, tracing on, on this machine.
COLD_START_MS_FALLBACK = 489.9
COLD_START_FALLBACK_STAMP = "python -m benchmarks.run --only cold · 2026-11-29 16:28 UTC"
SHARES = (0.3, 0.5)


def cold_start(results: dict[str, Any], executor_mb: int, vcpu: float) -> dict[str, Any]:
    """The measured cold start (tracing on, the template's default), on the executor's share of a core."""
    cold = results.get("cold")
    if cold:
        ms, stamp = cold["tracing_on"]["total_ms"], f"{cold['stamp']['command']} · {cold['stamp']['date']}"
    else:
        ms, stamp = COLD_START_MS_FALLBACK, COLD_START_FALLBACK_STAMP + " (constant: section 11 not in results)"
    return {"measured_ms": ms, "stamp": stamp, "executor_mb": executor_mb, "lambda_s": ms / 1000 / vcpu}


def bursts(base: Burst, today_peak: int, cron_per_day: int) -> list[tuple[Burst, str]]:
    """The rows: today's profile with AWS's limits added one at a time, then 30% and 50% of crons at hh:00:00."""
    day_model = replace(
        base,
        name="today's profile, as the day model sees it",
        burst_runs=today_peak,
        rounding=False,
        lambda_scaling=False,
        account_concurrency=10**9,
        esm_mode="provisioned",
        esm_floor=4_000,
        hashed_shards=False,
    )
    rounded = replace(day_model, name="+ cron rounding (`ceil` of DelaySeconds)", rounding=True)
    scaled = replace(
        rounded,
        name="+ 1,000 new environments per 10 s and the cold start",
        lambda_scaling=True,
    )
    account = replace(scaled, name="+ the account at 1,000 concurrent executions", account_concurrency=1_000)
    hashed = replace(account, name="+ 1,000 shards hashed onto the due index's partitions", hashed_shards=True)
    rows = [(day_model, "reference"), (rounded, ""), (scaled, ""), (account, ""), (hashed, "")]
    for share in SHARES:
        runs = round(share * cron_per_day / 24 + (1 - share) * today_peak)
        rows.append((replace(hashed, name=f"{share:.0%} of crons at hh:00:00, no warm-up", burst_runs=runs), ""))
    return rows


def warm_up(b: Burst, goal_s: float) -> tuple[Burst, dict[str, Any]]:
    """What the tick warms before the instant: environments for the goal, the due index's partitions so that its
    busiest partition lets the rate through, and the table's quota and warm throughput for its WRU."""
    goal_s *= HEADROOM
    environments = hour_top.environments_needed(b, goal_s)
    warmed = hour_top.with_warm_up(b, environments)
    rate = 0.99 * b.burst_runs / max(goal_s - b.pickup_s, hour_top.STEP_S)
    partitions = b.shards
    while hour_top.due_index_runs_per_s(replace(warmed, index_warm_wcu=partitions * 1_000.0)) < rate:
        if partitions >= MAX_INDEX_PARTITIONS * b.shards:
            break
        partitions *= 2
    table_wru = rate * b.exec_wru
    warmed = replace(
        warmed,
        index_warm_wcu=partitions * 1_000.0,
        table_quota_wru=max(b.table_quota_wru, table_wru),
        table_warm_wru=max(b.table_warm_wru, table_wru) if b.table_warm_wru else 0.0,
    )
    return warmed, {
        "environments": environments,
        "index_partitions": partitions,
        "index_warm_wcu": partitions * 1_000.0,
        "table_wru": table_wru,
    }


def monthly_warm_up(
    b: Burst, share: float, day: dict[str, Any], memory_mb: int, cold_s: float, prices: hour_top.WarmUpPrices
) -> dict[str, float]:
    """Each of the day's 24 hour-tops warmed for its own burst (today's crons at that second, plus the share), a
    month of them: warming invocations and provisioned concurrency, each summed over the hours."""
    total = {"warming_invocations_usd": 0.0, "provisioned_concurrency_usd": 0.0}
    for today in day.get("today_hour_tops", [day["today_peak"]] * 24):
        runs = round(share * day["cron_per_day"] / 24 + (1 - share) * today)
        environments = hour_top.environments_needed(replace(b, burst_runs=runs), GOAL_S * HEADROOM)
        money = hour_top.warm_up_cost(environments, memory_mb, cold_s, prices)
        for key in total:
            total[key] += money[key] / 24
    peak = hour_top.warm_up_cost(hour_top.environments_needed(b, GOAL_S * HEADROOM), memory_mb, cold_s, prices)
    return {**total, "lead_s": peak["lead_s"], "cheaper_usd": min(total.values())}


def run(cal_execute: dict[str, float], timing: dict[str, float], results: dict[str, Any], day: dict[str, Any]) -> dict:
    """Every row simulated, the warm-up and its monthly cost, and the like-for-like costs."""
    executor_mb = day["executor_mb"]
    cold = cold_start(results, executor_mb, day["vcpu"])
    base = Burst(
        "base",
        burst_runs=0,
        background_per_s=day["runs_per_day"] / 86_400,
        batch_s=timing["batch_s"],
        pickup_s=timing["pickup_s"],
        cold_start_s=cold["lambda_s"],
        exec_wru=cal_execute["wru"],
        exec_due_writes=cal_execute["due_writes"],
        shards=GOAL_SHARDS,
    )
    table = bursts(base, day["today_peak"], day["cron_per_day"])
    rows = [{**hour_top.simulate(b), "note": note} for b, note in table]
    no_warm = {share: b for share, (b, _) in zip(SHARES, table[-len(SHARES) :], strict=True)}
    prices = hour_top.WarmUpPrices(
        gb_s=price("lambda_gb_s_arm").each,
        request=price("lambda_request").each,
        provisioned_gb_s=price("lambda_provisioned_gb_s_arm").each,
    )
    plans = []
    for share, b in no_warm.items():
        variants = [(b, "as measured (section 1)")]
        if b.exec_due_writes > 1:
            cut = replace(b, exec_due_writes=b.exec_due_writes - 1, exec_wru=b.exec_wru - 1)
            variants.append((cut, "with the due-index projection cut (-1 due write, -1 WRU a run)"))
        for variant, wru_note in variants:
            warmed, need = warm_up(variant, GOAL_S)
            outcome = hour_top.simulate(replace(warmed, name=f"{share:.0%} at hh:00:00, warm-up, {wru_note}"))
            money = monthly_warm_up(variant, share, day, executor_mb, cold["lambda_s"], prices)
            plans.append({"share": share, "wru_note": wru_note, "need": need, "cost": money, "row": outcome})
            if share == SHARES[0] and variant is variants[-1][0]:
                in_s3 = replace(warmed, name=f"{share:.0%}, warm-up, results in S3 (default; split for the background)")
                in_s3 = replace(in_s3, results_in_s3=True)
                new_table = replace(warmed, name=f"{share:.0%}, warm-up without DynamoDB's, a new table (4,000 WRU/s)")
                new_table = replace(new_table, table_warm_wru=float(hour_top.NEW_TABLE_WRU))
                rows += [{**hour_top.simulate(in_s3), "note": ""}, {**hour_top.simulate(new_table), "note": ""}]
    return {
        "cold_start": cold,
        "base": base.__dict__,
        "rows": rows,
        "plans": plans,
        "day": day,
        "tenant": hour_top.tenant_caps(
            cal_execute.get("tenant_index_writes", 0.0), cal_execute.get("runs_index_writes", 0.0), RUN_SEARCH_SHARDS
        ),
        "api": hour_top.api_gateway(day["runs_per_day"] - day["cron_per_day"]),
    }


def costs(section1: dict[str, Any], section2: dict[str, Any], peak_wru_per_s: float, runs_per_day: float) -> dict:
    s3, inline = section2["per_million"], section2.get("per_million_inline")
    cron = cost_compare.cron_per_million(
        section1, s3, cost._function_memory_gb("ApiFunction"), assumption("api_ms_per_create")
    )
    return {
        "like_for_like": cost_compare.like_for_like(section1, s3, inline),
        "cron": cron,
        "peers": cost_compare.peers(s3["tickwork_total"]),
        "goals": cost_compare.goals(section1, s3, inline, cron),
        "capacity_modes": cost_compare.capacity_modes(
            section1["billable"]["ahead"]["wru_per_run"], runs_per_day, peak_wru_per_s
        ),
        "section2_stamp": section2["stamp"],
    }


# ---------------------------------------------------------------- rendering


def _s(x: float) -> str:
    return f"{x * 1000:.0f} ms" if x < 1 else f"{x:.2f} s" if x < 60 else f"{x / 60:.1f} min"


def _met(ok: bool) -> str:
    return "met" if ok else "**missed**"


def _row(r: dict[str, Any]) -> str:
    stores = r["stores_runs_per_s"]
    return (
        f"| {r['name']} | {r['burst_runs']:,} | {_s(r['p50'])} / **{_s(r['p99'])}** / {_s(r['max'])} |"
        f" {r['peak_concurrency']:,.0f} | {r['busiest_partition']} of {r['index_partitions']:,} |"
        f" {min(stores['due index'], 1e12):,.0f} | {r['peak_wru_per_s']:,.0f} | {r['binds']} |"
    )


def render(result: dict[str, Any], stamp_line: str) -> list[str]:
    cold, day = result["cold_start"], result["day"]
    base = result["base"]
    lines = [
        "### Hour-top bursts, with AWS's limits (benchmarks/hour_top.py)",
        "",
        f"Simulated, not measured: {stamp_line}. One hour-top at 100M runs a day, in steps of"
        f" {hour_top.STEP_S * 1000:.0f} ms, with each limit docs/scale.md cites: cron rounding, 1,000 new execution"
        " environments per 10 s per function, the account's concurrency, the event source's ramp (standard mode +300"
        " a minute up to 1,250 per mapping; provisioned mode a floor of pollers, +1,000 a minute), DynamoDB's warm"
        " throughput and table quota, the due index's 1,000 shards hashed onto its partitions (1,000 WCU each), S3's"
        f" split prefixes (3,500 PUT/s each). Today's profile puts {day['today_peak']:,} crons at 09:00:00; a share"
        " s of the day's crons at every hh:00:00 adds s x crons / 24 to that second and takes s from the rest."
        f" Inputs: a batch of 10 runs takes {base['batch_s'] * 1000:.0f} ms and a pickup {base['pickup_s'] * 1000:.0f}"
        f" ms at {day['executor_mb']:,} MB (the day model's executor timing); {base['exec_wru']:g} WRU and"
        f" {base['exec_due_writes']:g} due-index writes per run while it executes (section 1); the cold start,"
        f" **{cold['measured_ms']:.0f} ms** measured here (`{cold['stamp']}`, import and first wiring, tracing on)"
        f" on {day['executor_mb']:,} MB's share of a core: **{cold['lambda_s'] * 1000:.0f} ms**. Results inline"
        " (no S3 PUT) unless a row says S3; the table is warm from earlier bursts unless a row says new.",
        "",
        "| scenario | runs at the instant | lateness p50 / p99 / max (its minute) | executors reached |"
        " due-index busiest partition (shards) | due-index starts/s cap | table WRU/s peak | what binds |",
        "|---|---:|---|---:|---:|---:|---:|---|",
        *(_row(r) for r in result["rows"]),
        *(_row(p["row"]) for p in result["plans"]),
        "",
    ]
    lines += _goal_lines(result)
    lines += _limit_lines(result)
    return lines


def _limit_lines(result: dict[str, Any]) -> list[str]:
    """The limits a single tenant, or the API, meets: outside the simulation, which sums every tenant."""
    tenant, api = result.get("tenant", {}), result.get("api")
    out = []
    if tenant:
        slowest = min(tenant, key=lambda k: tenant[k])
        out.append(
            "- **One tenant's burst**: its job records share one tenant-index partition key, its runs"
            f" {RUN_SEARCH_SHARDS} runs-index keys, each 1,000 WCU/s: one tenant starts at most"
            f" {', '.join(f'{v:,.0f}/s ({k})' for k, v in tenant.items())}, so a tenant with more than"
            f" {GOAL_S * tenant[slowest]:,.0f} runs at one instant misses the 2 s goal for its own runs whatever the"
            f" warm-up ({slowest} binds; spreading a tenant's crons with `jitter_seconds` is the remedy)."
        )
    if api:
        out.append(
            f"- **API Gateway** (10,000 requests/s per account and region): the day's creates average"
            f" {api['average_per_s']:,.0f}/s ({api['headroom']:.0f}x headroom); a burst of creates is admitted at"
            f" {api['jobs_per_s_single']:,.0f} jobs/s one per request, {api['jobs_per_s_batch']:,.0f} jobs/s by batch"
            " create (25 a request); crons make no request. Not simulated: creates are spread over the day here."
        )
    return out


def _cheaper(money: dict[str, float]) -> str:
    warming, provisioned = money["warming_invocations_usd"], money["provisioned_concurrency_usd"]
    return "the invocations are cheaper" if warming <= provisioned else "provisioned concurrency is cheaper"


def _per_million(money: dict[str, float], day: dict[str, Any]) -> str:
    per_million = money["cheaper_usd"] / (day["runs_per_day"] * 30) * 1_000_000
    return f"${per_million:.2f} per million runs"


def _pollers(environments: int, mappings: int) -> str:
    """Provisioned pollers for the environments, 10 invokes each, and whether a mapping's minimum (200) holds them."""
    pollers = math.ceil(environments / hour_top.INVOKES_PER_POLLER)
    each = math.ceil(pollers / mappings)
    fits = "within" if each <= hour_top.MIN_POLLERS_MAX else "**over**"
    return f"{pollers:,} pollers ({each:,} a mapping of {mappings}, {fits} the 200 a mapping's minimum may be)"


def _goal_lines(result: dict[str, Any]) -> list[str]:
    out = []
    mappings = result["base"]["mappings"]
    for plan in result["plans"]:
        r, need, money = plan["row"], plan["need"], plan["cost"]
        ok = r["p99"] <= GOAL_S
        why = "" if ok else f" ({r['binds']} binds)"
        goal = " (the goal's scenario)" if plan["share"] == SHARES[0] else ""
        out.append(
            f"- **{plan['share']:.0%} of crons at hh:00:00{goal}, {plan['wru_note']}**: p99 {_s(r['p99'])}, goal"
            f" ≤ {GOAL_S} s with ≤ {GOAL_SHARDS:,} shards: {_met(ok)}{why}. The warm-up: {need['environments']:,}"
            f" executor environments initialised before the instant (from {money['lead_s']:.0f} s ahead: 1,000 per"
            f" 10 s), the mappings in provisioned mode with {_pollers(need['environments'], mappings)}, the account's"
            " concurrency raised to"
            f" {need['environments']:,} (a free quota increase), sends aligned to the instant; the due index warmed to"
            f" {need['index_warm_wcu']:,.0f} WCU/s ({need['index_partitions']:,} partitions: its busiest holds"
            f" {r['busiest_partition']} shards) and the table's quota and warm throughput to"
            f" {need['table_wru']:,.0f} WRU/s. Per month, each hour-top warmed for its own burst: warming invocations"
            f" **${money['warming_invocations_usd']:,.0f}**, provisioned concurrency for 10 minutes each hour"
            f" ${money['provisioned_concurrency_usd']:,.0f}: {_cheaper(money)}, {_per_million(money, result['day'])}."
            " Not priced: the pollers"
            " (provisioned mode's event poller units, no price sourced) and DynamoDB's warm throughput (a one-time"
            " charge when raised, no price sourced; it never falls, so once a day at most)."
        )
    return out


def render_costs(c: dict[str, Any], stamp_line: str) -> list[str]:
    lines = [
        "### Cost per million runs, like for like (benchmarks/cost_compare.py)",
        "",
        f"Computed by {stamp_line}, from section 2's line items (`{c['section2_stamp']['command']}` ·"
        f" {c['section2_stamp']['date']}) and the price table; `?` marks a price not in the facts file. The cron"
        f" run's WRU: {c['cron'].get('source', 'derived')}. A one-shot is created as `POST /v1/jobs` creates it,"
        " with its audit record (section 1).",
        "",
        "| case | compared with | Tickwork | peer | ratio |",
        "|---|---|---:|---:|---:|",
    ]
    for row in c["like_for_like"]:
        lines.append(
            f"| {row['case']} | {row['peer']} | ${row['tickwork']:.2f} | ${row['scheduler']:.2f} | {row['ratio']:.2f} |"
        )
    cron = c["cron"]
    lines += [
        f"| cron run ({cron['wru']:g} WRU, {cron.get('source', '')}) | EventBridge Scheduler recurring"
        f" schedule (no CreateSchedule) | ${cron['tickwork']:.2f} | ${cron['scheduler']:.2f} | {cron['ratio']:.2f} |",
        "",
        "| hosted peer | billed units per scheduled run | per million runs | source |",
        "|---|---|---:|---|",
    ]
    for p in c["peers"]:
        usd = "not priced" if p["usd"] is None else f"${p['usd']:.2f}" + ("" if p.get("verified", True) else " ?")
        lines.append(f"| {p['peer']} | {p['units']} | {usd} | {p['source']} |")
    lines += ["", "Goals (issue #39, item 4, default configuration):", ""]
    for g in c["goals"]:
        lines.append(f"- {g['goal']}: {g['text']}, {_met(g['met'])}.")
    if not all(g["met"] for g in c["goals"]):
        lines.append(
            "- Why missed: a one-shot's create is an audited API request, and section 1 now measures it so: its"
            " transaction (the job's put and its audit record's, 2 WRU per KB of each: 4), the record's two index"
            " entries (2), its archive's mark (2) and the archive's S3 object ($5 per million) are 8 WRU and $10 per"
            " million of a one-shot that the goals, set before the record was measured, leave out. Of the run itself,"
            " the `runs-index` entry rewritten at each status (3 WRU: QUEUED, RUNNING, the outcome) and the job's"
            " writes (its claim, 3 with its due-index key moving, and a one-shot's completion) stand above a cron's 8:"
            " a `runs-index` projecting no status (its searches reading each candidate's item to filter) would save"
            " 2; not made, as it changes what a search reads."
        )
    modes = c["capacity_modes"]
    lines += [
        "",
        f"DynamoDB writes at 100M runs a day ({modes['average_wru_per_s']:,.0f} WRU/s on average, the hour-top peak"
        f" {modes['peak_wru_per_s']:,.0f} WRU/s): on-demand **${modes['on_demand']:.2f}** per million runs.",
        "",
        "| mode | sized for | WCU | utilisation | per million runs | wins above utilisation |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for m in modes["modes"]:
        mark = "" if m["verified"] else " ?"
        lines.append(
            f"| {m['mode']} | {m['sizing']} | {m['wcu']:,.0f} | {m['utilisation']:.1%} |"
            f" ${m['per_million']:.2f}{mark} | {m['break_even_utilisation']:.0%} |"
        )
    lines += [
        "",
        "Provisioned capacity wins over on-demand when the table's average use is above the break-even utilisation"
        " (about 29%; reserved about 13%). Sized for the day's average, the hour-top bursts exceed it for a few"
        " seconds: they are served by DynamoDB's burst capacity (up to 300 s of unused capacity, best effort) within"
        " the partitions the warm-up prepared, or throttled; sized for the peak all day, provisioned costs many times"
        " on-demand. So: on-demand for spiky or young deployments; provisioned (auto scaling, the tick raising it"
        " before a burst it sees coming) once the average is steady above 29% of what is provisioned; reserved for"
        " the floor that never goes away.",
    ]
    return lines
