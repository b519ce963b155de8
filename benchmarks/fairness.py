"""Section 6: fairness between tenants (issue 13): a flood next to a light tenant, weights under saturation, and a
concurrency key held across three nodes.

1. **Flood.** One `tickwork dev` node (`--workers 6`, so the normal band has 2 concurrent invocations of up to
   10 runs each) with an API keys file for tenants `a` and `b`. Three phases, one after the other: B alone (20
   `echo` runs of 0.2 s due in the same second), A alone (600 such runs), then A's 600 and B's 20 together.
   B's lateness is `started_at - scheduled_for`; A's throughput is its runs over the time from their due
   instant to A's last run's end. Goals: B's p99 with A flooding under 2x B's p99 alone; A's throughput at
   least 90% of A alone.
2. **Weights 3:1 under saturation.** In-process (moto, a fake clock; the real Dispatcher): tenants `heavy`
   (weight 3) and `light` (weight 1) each have 400 one-shots due at the same instant, and MaxDispatchPerTick
   is 100, so each tick must choose. The share of dispatch slots each tenant gets, over the ticks where both
   still have work waiting. Goal: 3:1 ± 10%.
3. **A concurrency key with limit 2 across 3 nodes.** Three `tickwork dev --attach` nodes on one moto server;
   24 one-shots of 1 s each, due in the same second, share `concurrency: {"key": "bench", "limit": 2}`. From
   each run's record, the handler ran over [finished_at - duration_ms, finished_at]; the largest number of
   these intervals overlapping at any instant must be 2.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
import urllib.error
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tickwork.control.api_bodies import JobSpec
from tickwork.model.clock import iso
from tickwork.model.tenant_settings import TenantSettings
from tickwork_local.aws.motoserver import QUEUE_ORDER_VARIABLE

from benchmarks import dispatch_order
from benchmarks.common import Stamp, moto_session, percentile
from benchmarks.lateness import Runtime
from benchmarks.soak import NODES_ONLY, Cluster
from tests.harness import START, Pipeline

KEYS = {"key-a": "a", "key-b": "b", "key-ops": {"tenant": "ops", "admin": True}}
FLOOD = {"a_runs": 600, "b_runs": 20, "sleep_s": 0.2, "workers": 6}
FLOOD_QUICK = {"a_runs": 150, "b_runs": 10, "sleep_s": 0.2, "workers": 6}
WEIGHTS = {"per_tenant": 400, "max_dispatch": 100, "weights": {"heavy": 3, "light": 1}}
KEY = {"runs": 24, "limit": 2, "sleep_s": 1.0, "nodes": 3}
KEY_QUICK = {"runs": 10, "limit": 2, "sleep_s": 1.0, "nodes": 3}
CREATE_THREADS = 4
SETTLE_S = 240.0


def _iso(at: datetime) -> str:
    return at.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _parse(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


# ---------------------------------------------------------------- 1. flood


class KeyedRuntime(Runtime):
    """`tickwork dev` with an API keys file and fewer workers; calls carry a tenant's key."""

    def __init__(self, keys_file: Path, workers: int, *, fair_queues: bool = True) -> None:
        super().__init__()
        self.cmd += ["--api-keys", str(keys_file), "--workers", str(workers)]
        self.fair_queues = fair_queues

    def __enter__(self) -> KeyedRuntime:
        # The control: the local endpoint serves the queues oldest first, as SQS did before fair queues.
        if not self.fair_queues:
            os.environ[QUEUE_ORDER_VARIABLE] = "arrival"
        try:
            super().__enter__()
        finally:
            os.environ.pop(QUEUE_ORDER_VARIABLE, None)
        return self

    def as_tenant(self, key: str, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"{self.url}{path}",
            data=data,
            method=method,
            headers={"Content-Type": "application/json", "X-Api-Key": key},
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            raise RuntimeError(f"{method} {path}: {exc.code} {exc.read()[:500]!r}") from None


def _create_burst(
    runtime: KeyedRuntime, plan: list[tuple[str, int]], sleep_s: float
) -> tuple[datetime, dict[str, list[str]]]:
    """Create each tenant's one-shots, all due at one instant after the creates are done; their job ids."""
    total = sum(n for _, n in plan)
    due = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=15 + 0.09 * total)
    jobs: dict[str, list[str]] = {key: [] for key, _ in plan}

    def create(item: tuple[str, int]) -> tuple[str, str]:
        key, i = item
        spec = {
            "name": f"fair {key} {i}",
            "type": "echo",
            "payload": {"sleep_seconds": sleep_s},
            "schedule": {"at": _iso(due)},
            "retry": {"max_attempts": 3, "backoff_seconds": 1, "max_backoff_seconds": 2},
        }
        return key, str(runtime.as_tenant(key, "POST", "/v1/jobs", spec)["id"])

    # Tenant by tenant, in the plan's order: the flooding tenant's runs are created (claimed at create and sent
    # with their delay) before the light tenant's, so by arrival order every one of the flood's messages sits
    # ahead of the light tenant's: the case fair queues exist for (the control phase shows arrival order).
    order = [(key, i) for key, n in plan for i in range(n)]
    with ThreadPoolExecutor(CREATE_THREADS) as pool:
        for key, job_id in pool.map(create, order):
            jobs[key].append(job_id)
    if datetime.now(UTC) > due - timedelta(seconds=2):
        raise RuntimeError("creating the burst took longer than its lead: the runs would not be due together")
    return due, jobs


def _finished_runs(
    runtime: KeyedRuntime, jobs: dict[str, list[str]], deadline: float
) -> dict[str, list[dict[str, Any]]]:
    """Every job's run once finished (polling until the deadline)."""
    found: dict[str, dict[str, Any]] = {}
    pending = [(key, job_id) for key, ids in jobs.items() for job_id in ids]
    while pending and time.monotonic() < deadline:
        still = []
        for key, job_id in pending:
            items = runtime.as_tenant(key, "GET", f"/v1/jobs/{job_id}/runs")["items"]
            done = [r for r in items if r["status"] in ("SUCCEEDED", "FAILED")]
            if done:
                found[job_id] = {**done[-1], "_key": key}
            else:
                still.append((key, job_id))
        pending = still
        if pending:
            time.sleep(2)
    by_key: dict[str, list[dict[str, Any]]] = {key: [] for key in jobs}
    for run in found.values():
        by_key[run["_key"]].append(run)
    return by_key


def _phase(runtime: KeyedRuntime, plan: list[tuple[str, int]], sleep_s: float) -> dict[str, Any]:
    due, jobs = _create_burst(runtime, plan, sleep_s)
    time.sleep(max(0.0, (due - datetime.now(UTC)).total_seconds()))
    runs = _finished_runs(runtime, jobs, time.monotonic() + SETTLE_S)
    out: dict[str, Any] = {}
    for key, n in plan:
        mine = runs[key]
        late = [
            (_parse(r["started_at"]) - _parse(r["scheduled_for"])).total_seconds() for r in mine if r.get("started_at")
        ]
        ends = [_parse(r["finished_at"]) for r in mine if r.get("finished_at")]
        span = (max(ends) - due).total_seconds() if ends else float("nan")
        out[key] = {
            "runs": n,
            "finished": len(mine),
            "succeeded": sum(1 for r in mine if r["status"] == "SUCCEEDED"),
            "late_p50_s": percentile(late, 50),
            "late_p99_s": percentile(late, 99),
            "late_max_s": max(late) if late else float("nan"),
            "span_s": span,
            "runs_per_s": len(mine) / span if span and span > 0 else float("nan"),
        }
    return out


def measure_flood(plan: dict[str, Any]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        keys_file = Path(tmp) / "keys.json"
        keys_file.write_text(json.dumps(KEYS))
        with KeyedRuntime(keys_file, plan["workers"]) as runtime:
            b_alone = _phase(runtime, [("key-b", plan["b_runs"])], plan["sleep_s"])["key-b"]
            a_alone = _phase(runtime, [("key-a", plan["a_runs"])], plan["sleep_s"])["key-a"]
            both = _phase(runtime, [("key-a", plan["a_runs"]), ("key-b", plan["b_runs"])], plan["sleep_s"])
        with KeyedRuntime(keys_file, plan["workers"], fair_queues=False) as runtime:
            control = _phase(runtime, [("key-a", plan["a_runs"]), ("key-b", plan["b_runs"])], plan["sleep_s"])
    return {
        **plan,
        "b_alone": b_alone,
        "a_alone": a_alone,
        "a_flooding": both["key-a"],
        "b_with_flood": both["key-b"],
        "b_with_flood_arrival_order": control["key-b"],
        "a_flooding_arrival_order": control["key-a"],
        "b_p99_ratio": both["key-b"]["late_p99_s"] / max(b_alone["late_p99_s"], 1e-9),
        "a_throughput_ratio": both["key-a"]["runs_per_s"] / max(a_alone["runs_per_s"], 1e-9),
    }


# ---------------------------------------------------------------- 2. weights


def measure_weights(plan: dict[str, Any]) -> dict[str, Any]:
    weights: dict[str, int] = plan["weights"]
    with moto_session(), Pipeline.create(MAX_DISPATCH_PER_TICK=str(plan["max_dispatch"])) as pipeline:
        services = pipeline.services
        for tenant, weight in weights.items():
            services.tenant_records.put_settings(tenant, TenantSettings(weight=weight), pipeline.clock.now())
        due = START + timedelta(minutes=10)  # past the claim horizon: nothing is claimed at create
        owner: dict[str, str] = {}
        for i in range(plan["per_tenant"]):
            for tenant in weights:
                spec = JobSpec.model_validate({"name": f"w {tenant} {i}", "type": "echo", "schedule": {"at": iso(due)}})
                owner[services.jobs.create_job(tenant, spec).id] = tenant
        pipeline.clock.set(due)
        ticks: list[dict[str, int]] = []
        left = Counter(dict.fromkeys(weights, plan["per_tenant"]))
        while all(left[t] > 0 for t in weights) and len(ticks) < 50:
            report = services.dispatcher.claim_due_runs()
            got = Counter(owner[run_id.split(".")[0]] for run_id in report.dispatched_run_ids)
            if all(left[t] > got[t] for t in weights):  # both still had work waiting after this tick
                ticks.append(dict(got))
            left -= got
            pipeline.clock.advance(60)
    totals = Counter[str]()
    for tick in ticks:
        totals.update(tick)
    heavy, light = list(weights)
    ratio = totals[heavy] / max(totals[light], 1)
    expected = weights[heavy] / weights[light]
    return {
        **plan,
        "saturated_ticks": len(ticks),
        "slots": dict(totals),
        "ratio": ratio,
        "expected": expected,
        "within_10pct": abs(ratio - expected) <= 0.1 * expected,
        "per_tick": ticks,
    }


# ---------------------------------------------------------------- 3. a concurrency key across nodes


def max_overlap(intervals: list[tuple[float, float]]) -> int:
    """The largest number of [start, end) intervals covering one instant."""
    events = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals], key=lambda ev: (ev[0], ev[1]))
    best = current = 0
    for _, step in events:
        current += step
        best = max(best, current)
    return best


def measure_key(plan: dict[str, Any]) -> dict[str, Any]:
    cluster = Cluster(replace(NODES_ONLY, nodes=plan["nodes"]))
    cluster.start()
    try:
        due = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=10 + 0.1 * plan["runs"])
        ids = []
        for i in range(plan["runs"]):
            status, job = cluster.call(
                "POST",
                "/v1/jobs",
                {
                    "name": f"key {i}",
                    "type": "echo",
                    "payload": {"sleep_seconds": plan["sleep_s"]},
                    "schedule": {"at": _iso(due)},
                    "concurrency": {"key": "bench", "limit": plan["limit"]},
                },
            )
            if status != 201:
                raise RuntimeError(f"create refused: {status} {job}")
            ids.append(job["id"])
        deadline = time.monotonic() + SETTLE_S + plan["runs"] * plan["sleep_s"]
        runs: dict[str, dict[str, Any]] = {}
        while len(runs) < len(ids) and time.monotonic() < deadline:
            for job_id in ids:
                if job_id in runs:
                    continue
                _, page = cluster.call("GET", f"/v1/jobs/{job_id}/runs")
                done = [r for r in page["items"] if r["status"] in ("SUCCEEDED", "FAILED")]
                if done:
                    runs[job_id] = done[-1]
            time.sleep(1)
    finally:
        cluster.stop()
    intervals = []
    for run in runs.values():
        end = _parse(run["finished_at"]).timestamp()
        intervals.append((end - (run.get("duration_ms") or 0) / 1000, end))
    return {
        **plan,
        "finished": len(runs),
        "succeeded": sum(1 for r in runs.values() if r["status"] == "SUCCEEDED"),
        "max_overlap": max_overlap(intervals),
        "deferred_total": sum(int(r.get("deferred") or 0) for r in runs.values()),
        "span_s": (max(e for _, e in intervals) - min(s for s, _ in intervals)) if intervals else float("nan"),
    }


# ---------------------------------------------------------------- the section


def run(stamp: Stamp, *, quick: bool) -> dict[str, Any]:
    load_before = os.getloadavg()[0]
    return {
        "stamp": stamp.__dict__,
        "weights": measure_weights(WEIGHTS),
        "flood": measure_flood(FLOOD_QUICK if quick else FLOOD),
        "key": measure_key(KEY_QUICK if quick else KEY),
        "dispatch_order": dispatch_order.measure(),
        "load_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def render(result: dict[str, Any]) -> str:
    stamp = Stamp(**result["stamp"])
    f, w, k = result["flood"], result["weights"], result["key"]
    b0, b1, a0, a1 = f["b_alone"], f["b_with_flood"], f["a_alone"], f["a_flooding"]
    ok = lambda held: "met" if held else "**not met**"  # noqa: E731
    return "\n".join(
        [
            "## 7. Fairness between tenants",
            "",
            f"Measured by {stamp.line()}. What each part does: `benchmarks/fairness.py`'s docstring.",
            "",
            f"**Tenant A floods, B is light** (one `tickwork dev` node, `--workers {f['workers']}`, API keys for"
            f" tenants a and b; every run is an `echo` sleeping {f['sleep_s']} s; each phase's runs are all due in"
            " the same second):",
            "",
            "| phase | runs | finished | lateness p50 | p99 | max | throughput |",
            "|---|---:|---:|---:|---:|---:|---:|",
            f"| B alone | {b0['runs']} | {b0['finished']} | {_ms(b0['late_p50_s'])} | {_ms(b0['late_p99_s'])} |"
            f" {_ms(b0['late_max_s'])} | |",
            f"| B while A floods | {b1['runs']} | {b1['finished']} | {_ms(b1['late_p50_s'])} |"
            f" **{_ms(b1['late_p99_s'])}** | {_ms(b1['late_max_s'])} | |",
            f"| A alone | {a0['runs']} | {a0['finished']} | {_ms(a0['late_p50_s'])} | {_ms(a0['late_p99_s'])} |"
            f" {_ms(a0['late_max_s'])} | {a0['runs_per_s']:.1f} runs/s |",
            f"| A flooding, next to B | {a1['runs']} | {a1['finished']} | {_ms(a1['late_p50_s'])} |"
            f" {_ms(a1['late_p99_s'])} | {_ms(a1['late_max_s'])} | **{a1['runs_per_s']:.1f} runs/s** |",
            *_control_rows(f),
            "",
            f"- B's p99 with A flooding is **{f['b_p99_ratio']:.2f}x** B's p99 alone (goal: under 2x:"
            f" {ok(f['b_p99_ratio'] < 2)}).",
            f"- A's throughput next to B is **{f['a_throughput_ratio'] * 100:.0f}%** of A alone (goal: at least 90%:"
            f" {ok(f['a_throughput_ratio'] >= 0.9)}).",
            *_control_lines(f),
            "",
            f"**Weights 3:1 under saturation** (in-process, the real Dispatcher on moto with a fake clock:"
            f" {w['per_tenant']} one-shots per tenant due at one instant, MaxDispatchPerTick {w['max_dispatch']}):"
            f" over the {w['saturated_ticks']} ticks in which both tenants still had work waiting, heavy (weight 3)"
            f" got {w['slots'].get('heavy', 0)} dispatch slots and light (weight 1) {w['slots'].get('light', 0)}:"
            f" **{w['ratio']:.2f}:1** (goal: 3:1 ± 10%: {ok(w['within_10pct'])}).",
            "",
            f"**A concurrency key with limit {k['limit']} across {k['nodes']} nodes** ({k['nodes']} `tickwork dev"
            f" --attach` nodes on one moto server; {k['runs']} one-shot `echo` runs of {k['sleep_s']} s due in the"
            f" same second sharing the key): {k['succeeded']} of {k['runs']} succeeded; the largest number of"
            f" handlers running at once was **{k['max_overlap']}** (goal: {k['limit']}:"
            f" {ok(k['max_overlap'] <= k['limit'])}); the runs were deferred {k['deferred_total']} times in all,"
            f" without consuming attempts, and took {k['span_s']:.1f} s from the first start to the last end.",
            "",
            *dispatch_order.render(result.get("dispatch_order") or dispatch_order.measure()),
        ]
    )


def _control_rows(f: dict[str, Any]) -> list[str]:
    """The control phase: the same flood with the local endpoint serving the queues oldest first."""
    b, a = f.get("b_with_flood_arrival_order"), f.get("a_flooding_arrival_order")
    if not b or not a:
        return []
    return [
        f"| control, queues in arrival order: B while A floods | {b['runs']} | {b['finished']} |"
        f" {_ms(b['late_p50_s'])} | {_ms(b['late_p99_s'])} | {_ms(b['late_max_s'])} | |",
        f"| control, queues in arrival order: A flooding | {a['runs']} | {a['finished']} | {_ms(a['late_p50_s'])} |"
        f" {_ms(a['late_p99_s'])} | {_ms(a['late_max_s'])} | {a['runs_per_s']:.1f} runs/s |",
    ]


def _control_lines(f: dict[str, Any]) -> list[str]:
    b, fair = f.get("b_with_flood_arrival_order"), f["b_with_flood"]
    if not b:
        return []
    return [
        f"- What the fair queues do: with the queues served oldest first (the control, a second runtime started"
        f" with `{QUEUE_ORDER_VARIABLE}=arrival`), B's p99 under the same flood is {_ms(b['late_p99_s'])}, against"
        f" {_ms(fair['late_p99_s'])} served as SQS fair queues. What is left of B's wait is the local endpoint's"
        " throughput: moto serves one request at a time (A alone runs at the rate in the table), so B's runs,"
        " served first, still wait for an executor slot to free and for their own requests to be served among"
        " A's in-flight runs'. Against AWS, whose services serve requests in parallel, that part should shrink; it is"
        " not measured here.",
    ]


def console(result: dict[str, Any]) -> str:
    f, w, k = result["flood"], result["weights"], result["key"]
    return (
        f"[6] fairness: B p99 {f['b_p99_ratio']:.2f}x alone while A floods; A at {f['a_throughput_ratio'] * 100:.0f}%"
        f" of its throughput alone; weights 3:1 gave {w['ratio']:.2f}:1; key limit {k['limit']} saw"
        f" {k['max_overlap']} at once"
    )
