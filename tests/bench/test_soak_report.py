"""The soak's judgement of each run (benchmarks/soak.py): pure Python, no processes, from run records and node lines.

The full soak of 2026-11-25 passed a run that started 1,426.5 s late: it counted a run as stuck only if it was not
terminal 600 s after the window's end, so a run due early in the 30-minute window had 25 minutes (issue 25).
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any

from benchmarks.soak import (
    FULL,
    ONE_RECOVERY_S,
    QUICK,
    RUN_BOUND_S,
    Kill,
    past_bound,
    render,
    run_events,
    slowest_runs,
)

DUE = datetime(2026, 11, 25, 12, 0, 0, tzinfo=UTC)


def _iso(instant: datetime) -> str:
    return instant.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _run(run_id: str, *, took_s: float | None, **fields: Any) -> dict[str, Any]:
    run = {"id": run_id, "scheduled_for": _iso(DUE), "status": "SUCCEEDED" if took_s is not None else "QUEUED"}
    if took_s is not None:
        run["finished_at"] = _iso(DUE + timedelta(seconds=took_s))
    return {**run, **fields}


def _logged(at: datetime, message: str, run_id: str, **fields: Any) -> str:
    stamp = at.strftime("%Y-%m-%d %H:%M:%S,") + f"{at.microsecond // 1000:03d}+0000"
    return json.dumps({"level": "WARNING", "message": message, "timestamp": stamp, "run_id": run_id, **fields})


def test_each_run_is_held_to_its_own_bound_from_its_occurrence_not_to_the_windows_end():
    assert ONE_RECOVERY_S == 270  # lease 60 + re-send 30 + tick 60 + a backlog's 120
    assert RUN_BOUND_S == 600
    assert FULL.run_bound_s == QUICK.run_bound_s == RUN_BOUND_S
    # Due at the window's start, ended 1,426.5 s later: well before the window's end + 600 s, far past its own.
    assert past_bound(_run("late", took_s=1426.5), RUN_BOUND_S)
    assert not past_bound(_run("on-time", took_s=599.0), RUN_BOUND_S)
    assert past_bound(_run("not-ended", took_s=None), RUN_BOUND_S)


def test_the_slowest_runs_are_listed_first_with_their_attempts_re_sends_kills_and_errors():
    slow_id = "j0000000000000000000000001.1795262400000"
    runs = [
        _run("j0000000000000000000000002.1795262400000", took_s=3.0, attempts=1, lateness_ms=400),
        _run(
            slow_id,
            took_s=400.0,
            attempts=2,
            lateness_ms=95_000,
            attempt_history=[
                {"attempt": 1, "started_at": _iso(DUE + timedelta(seconds=95)), "error": "its executor stopped"},
                {
                    "attempt": 2,
                    "started_at": _iso(DUE + timedelta(seconds=399)),
                    "ended_at": _iso(DUE + timedelta(seconds=400)),
                    "outcome": "succeeded",
                },
            ],
        ),
        _run("j0000000000000000000000003.1795262400000", took_s=None),
    ]
    kills = [
        Kill(DUE + timedelta(seconds=2), "n1"),  # while its first message was being received: may have stranded it
        Kill(DUE + timedelta(seconds=50), "n2"),  # nothing of it in hand then
        Kill(DUE + timedelta(seconds=100), "n0"),  # while attempt 1 held the lease
        Kill(DUE + timedelta(seconds=900), "n1"),  # after its end
    ]
    lines = [
        ("n2", "12:00:31.000 [n2] tick redispatched 1 (40 ms)"),
        ("n2", _logged(DUE + timedelta(seconds=90), "re-sending a claimed run that no executor leased", slow_id)),
        (
            "n1",
            _logged(
                DUE + timedelta(seconds=97),
                "run message not carried through; it comes back when its visibility ends",
                slow_id,
                level="ERROR",
                exception_name="ClientError",
                exception="An error occurred (InternalError): injected by tickwork_local.aws.faults (InternalError)",
            ),
        ),
        (
            "n0",
            _logged(DUE + timedelta(seconds=390), "re-sending a run whose lease lapsed without an outcome", slow_id),
        ),
        # Its handler's own failures: not errors it met.
        ("n0", _logged(DUE, "run failed; retrying", slow_id)),
        ("n0", _logged(DUE, "run failed; no attempts left", slow_id, level="ERROR")),
        ("n0", "{not json"),
    ]
    events = run_events(lines)
    names = {slow_id: "one-7"}
    not_ended, slowest, fast = slowest_runs(runs, names, kills, events)
    assert not_ended["to_terminal_s"] is None  # not ended comes first
    assert fast["to_terminal_s"] == 3.0
    assert {k: slowest[k] for k in slowest if k != "history"} == {
        "job": "one-7",
        "run": slow_id,
        "status": "SUCCEEDED",
        "scheduled_for": _iso(DUE),
        "to_terminal_s": 400.0,
        "late_s": 95.0,
        "attempts": 2,
        "attempts_whose_executor_died": 1,
        "resends": 2,
        "kills_during": 3,
        "kills_that_may_have_struck": 2,
        "errors": 1,
        "injected_errors": 1,
    }
    assert slowest["history"] == [
        "+2 s n1 killed",
        "+90 s re-sent by n2's tick",
        "+95 s attempt 1: its executor died",
        "+97 s injected error on n1: run message not carried through; it comes back when its visibility ends "
        "(ClientError)",
        "+100 s n0 killed",
        "+390 s re-sent by n0's tick",
        "+399 s attempt 2: succeeded",
        "+400 s SUCCEEDED",
    ]


def test_the_report_states_the_per_run_bound_and_lists_the_slowest_runs():
    slowest = slowest_runs([_run("j0000000000000000000000001.1795262400000", took_s=12.0)], {}, [], {})
    figures: defaultdict[str, Any] = defaultdict(int, slowest=slowest)  # every other figure 0
    text = render(figures, FULL, "make soak")
    assert "a run not terminal 600 s after its own occurrence" in text
    assert "## The slowest runs" in text
    assert "`j0000000000000000000000001.1795262400000` SUCCEEDED | 12.0 s | never started" in text
