"""The circuit breaker on one `tickwork dev` node, over HTTP as a user would (issue 14): a job that keeps failing
is SUSPENDED after its threshold, its occurrences are recorded SKIPPED `circuit_open`, and after a PATCH that
fixes its payload the half-open probe succeeds and the job is ACTIVE again, running on."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.conftest import Node, wait_for

pytestmark = pytest.mark.e2e


def _job(node: Node, job_id: str) -> dict[str, Any]:
    return dict(node.api.get(f"/v1/jobs/{job_id}"))


def test_the_breaker_opens_on_failures_and_closes_after_a_fix(node: Node) -> None:
    api = node.api
    job = api.create_job(
        name="breaker-e2e",
        payload={"fail_attempts": 99},
        schedule={"rate": "2 seconds"},
        retry={"max_attempts": 1},
        circuit_breaker={"failure_threshold": 2, "cooldown_seconds": 6, "max_cooldown_seconds": 12},
    )
    try:
        suspended = wait_for(
            lambda: (j := _job(node, job["id"]))["state"] == "SUSPENDED" and j, 60, 0.5, "the breaker to open"
        )
        assert suspended["suspended_reason"]
        assert suspended["breaker"]["cooldown_seconds"] == 6

        # While it is open, occurrences are recorded, not run.
        def circuit_open_skips() -> list[dict[str, Any]]:
            return [r for r in api.runs(job["id"]) if r.get("skip_reason") == "circuit_open"]

        wait_for(circuit_open_skips, 30, 0.5, "an occurrence recorded SKIPPED circuit_open")

        # The fix: a PATCH of the payload keeps it suspended until the probe, which then succeeds.
        fixed = api.call("PATCH", f"/v1/jobs/{job['id']}", {"payload": {"fail_attempts": 0}})
        assert fixed["state"] == "SUSPENDED"
        # The probe is the first occurrence claimed at or after the cooldown's end: runs are claimed 120 s ahead
        # (the template's horizon), so those already queued when it opened are skipped and the probe comes later.
        wait_for(lambda: _job(node, job["id"])["state"] == "ACTIVE", 200, 1, "the probe to close the breaker")
        closed = _job(node, job["id"])
        assert closed.get("breaker") is None

        # Closed by the probe's success, and scheduled on (the occurrences it skipped while open were claimed up
        # to the 120 s horizon, so the next run comes after them: the integration test follows it).
        assert [r for r in api.runs(job["id"]) if r["status"] == "SUCCEEDED"]
        assert closed["next_run_at"] is not None
        runs = api.runs(job["id"])
        # Every occurrence has one record; no run was both skipped and run.
        assert len({r["scheduled_for"] for r in runs}) == len(runs)
        failed = [r for r in runs if r["status"] == "FAILED"]
        assert len(failed) >= 2
    finally:
        api.cancel(job["id"])
