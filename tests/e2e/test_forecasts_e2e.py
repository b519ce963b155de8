"""Forecasts on one `tickwork dev` node, over HTTP as a user would (docs/forecasts.md): a job whose history makes its
next run risky gets `Deadline At Risk` before that run starts, and a run far past its job's p99 is flagged `Run Slow`.

Each job's history is 22 manual triggers at once (24 workers run them side by side); the job's next claim folds them
into its forecast, and the runs it claims from then on carry their outlook. A run is claimed up to the 120 s horizon
ahead, so the slow run is the first one claimed after the forecast, about two minutes after it: the test's length."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.conftest import Node, wait_for

pytestmark = pytest.mark.e2e

HISTORY = 22  # over MIN_RUNS (20)


def _history(node: Node, job_id: str) -> None:
    for _ in range(HISTORY):
        node.api.post(f"/v1/jobs/{job_id}/trigger", {}, expect=202)
    wait_for(lambda: (node.api.get(f"/v1/jobs/{job_id}").get("forecast") or {}).get("runs", 0) >= 20, 90, 1, "forecast")


def _events(node: Node, kind: str, job_id: str) -> list[dict[str, Any]]:
    items = node.api.get("/_tickwork/events")["items"]
    return [e for e in items if e["detail-type"] == kind and e["detail"].get("job_id") == job_id]


def test_a_risky_next_run_is_at_risk_before_it_starts_and_a_slow_run_is_flagged(node: Node) -> None:
    risky = node.api.create_job(
        name="forecast-risky",
        payload={"sleep_seconds": 1.5},
        schedule={"rate": "30 seconds"},
        deadline={"within_seconds": 1},
    )
    steady = node.api.create_job(name="forecast-steady", payload={}, schedule={"rate": "5 seconds"})
    _history(node, risky["id"])
    _history(node, steady["id"])

    shown = node.api.get(f"/v1/jobs/{risky['id']}")["forecast"]
    assert shown["p95_ms"] >= 1_400
    assert shown["next_run"]["deadline_at_risk"] is True

    def at_risk_before_it_starts() -> dict[str, Any] | None:
        runs = node.api.runs(risky["id"])
        return next((r for r in runs if r["deadline_at_risk_at"] and r["status"] == "QUEUED"), None)

    run = wait_for(at_risk_before_it_starts, 90, 1, "a queued run marked Deadline At Risk")
    assert run["expected_end_at"] is not None
    assert run["p_success"] is not None
    (event,) = wait_for(
        lambda: [e for e in _events(node, "Deadline At Risk", risky["id"]) if e["detail"]["run_id"] == run["id"]],
        30,
        0.5,
        "the Deadline At Risk event",
    )
    assert event["detail"]["p95_ms"] == run["forecast_p95_ms"]

    # The steady job's runs took milliseconds; from now on they take 3 s, far past its p99 times 2.
    node.api.call("PATCH", f"/v1/jobs/{steady['id']}", {"payload": {"sleep_seconds": 3}})

    def slow_run() -> dict[str, Any] | None:
        return next((r for r in node.api.runs(steady["id"]) if r["slow_at"]), None)

    slow = wait_for(slow_run, 200, 2, "a run flagged Run Slow")
    assert slow["status"] == "SUCCEEDED"
    assert slow["duration_ms"] >= 3_000 > 2 * slow["forecast_p99_ms"]
    wait_for(lambda: _events(node, "Run Slow", steady["id"]), 30, 0.5, "the Run Slow event")
    node.api.cancel(risky["id"])
    node.api.cancel(steady["id"])
