"""Part of section 7 (fairness): what the dispatch order does to waiting time when a tick cannot claim everything
due (docs/forecasts.md, "Shortest job first"). A simulation on the real allocator (tickwork.tick.fairness.allocate),
deterministic (seeded), no AWS: a burst of runs of 40 jobs due over a minute, one band, one tenant, `WORKERS`
executor slots; every `TICK_S` the tick may claim as many runs as slots are free (its capacity), in the order the
allocator chooses, and each claimed run holds a slot for its duration. Each job has a median duration (most short,
a few long) and a deadline; a run's duration is lognormal around its job's median, and its forecast's p50 is that
median (what the job's forecast converges to). Waiting time: from a run's due time to its start.

- FIFO: no deadlines and no forecasts (priority, then the oldest first: today's order without deadlines);
- EDF: earliest deadline first, today's default;
- SJF: `dispatch_order: sjf`, the shortest expected run first.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, replace
from typing import Any

from tickwork.tick.fairness import Candidate, allocate

WORKERS = 10
TICK_S = 5
JOBS = 40
RUNS = 600
SEED = 41


@dataclass(frozen=True)
class SimRun:
    index: int
    due_s: float
    duration_s: float
    median_s: float
    deadline_s: float


def burst(seed: int = SEED) -> list[SimRun]:
    rng = random.Random(seed)
    medians = [rng.choice((1, 2, 3, 5)) if n % 5 else rng.choice((30, 60, 120)) for n in range(JOBS)]
    within = [rng.choice((60, 300, 900)) for _ in range(JOBS)]
    runs = []
    for i in range(RUNS):
        job = rng.randrange(JOBS)
        due = rng.uniform(0, 60)
        duration = math.exp(rng.gauss(math.log(medians[job]), 0.4))
        runs.append(SimRun(i, due, duration, medians[job], due + within[job]))
    return runs


def simulate(order: str, runs: list[SimRun]) -> dict[str, Any]:
    """Average and p95 waiting time, and deadlines missed, under one dispatch order."""
    free_at = [0.0] * WORKERS
    waiting = {r.index: r for r in runs}
    started: dict[int, float] = {}
    now = 0.0
    while waiting:
        due = [r for r in waiting.values() if r.due_s <= now]
        free = sum(1 for t in free_at if t <= now)
        if due and free:
            chosen = allocate(
                [_candidate(order, r) for r in due],
                capacity=free,
                weights={},
                budgets={},
                now_ms=int(now * 1000),
                aging_after_ms=0,
            ).chosen
            for allotted in chosen:
                run = waiting.pop(allotted.item)
                slot = min(range(WORKERS), key=lambda k: free_at[k])
                free_at[slot] = now + run.duration_s
                started[run.index] = now
        now += TICK_S
    waits = sorted(started[r.index] - r.due_s for r in runs)
    missed = sum(1 for r in runs if started[r.index] + r.duration_s > r.deadline_s)
    return {
        "mean_wait_s": round(sum(waits) / len(waits), 1),
        "p95_wait_s": round(waits[int(0.95 * (len(waits) - 1))], 1),
        "deadlines_missed": missed,
    }


def _candidate(order: str, run: SimRun) -> Candidate[int]:
    base = Candidate(run.index, "t", 5, int(run.due_s * 1000), urgent=True)
    if order == "edf":
        return replace(base, deadline_at_ms=int(run.deadline_s * 1000))
    if order == "sjf":
        return replace(base, shortest_first=True, expected_ms=int(run.median_s * 1000))
    return base


def measure() -> dict[str, Any]:
    runs = burst()
    return {
        "workers": WORKERS,
        "tick_s": TICK_S,
        "runs": RUNS,
        "jobs": JOBS,
        "orders": {order: simulate(order, runs) for order in ("fifo", "edf", "sjf")},
    }


def render(result: dict[str, Any]) -> list[str]:
    orders = result["orders"]
    rows = [
        f"| {name.upper()} | {o['mean_wait_s']} s | {o['p95_wait_s']} s | {o['deadlines_missed']} |"
        for name, o in orders.items()
    ]
    return [
        f"**Dispatch order** (`benchmarks/dispatch_order.py`: a seeded simulation on the real allocator, {result['runs']}"
        f" runs of {result['jobs']} jobs due over a minute, {result['workers']} executor slots, a tick every"
        f" {result['tick_s']} s claiming as many runs as slots are free):",
        "",
        "| order | mean wait | p95 wait | deadlines missed |",
        "|---|---:|---:|---:|",
        *rows,
        "",
        f"Shortest job first cuts the mean wait to {orders['sjf']['mean_wait_s']} s from"
        f" {orders['fifo']['mean_wait_s']} s (FIFO) and {orders['edf']['mean_wait_s']} s (EDF). The burst is about"
        " 16 minutes of work for 10 slots, far past what fits: there earliest deadline first serves runs already"
        " doomed and misses more than arrival order (its known domino effect), while shortest first finishes the"
        " many short runs, in time, first. EDF is the better order when the work nearly fits: it then meets"
        " deadlines that arrival order would miss.",
    ]


if __name__ == "__main__":
    print("\n".join(render(measure())))
