"""The circuit breaker on one `tickwork dev` node, over HTTP as a user would (issue 14): a job that keeps failing
is SUSPENDED after its threshold, its occurrences are recorded SKIPPED `circuit_open`, and after a PATCH that
fixes its payload the half-open probe succeeds and the job is ACTIVE again, running on.

The cooldown (6 s) is shorter than the claim horizon (2 minutes): the probe is one of the runs claimed before
the breaker opened, elected by the executor once the cooldown is over, so it comes seconds after the cooldown.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from tests.e2e.conftest import Node, wait_for

pytestmark = pytest.mark.e2e


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


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
        # A probe that ran before the PATCH failed and doubled the cooldown (to its 12 s cap): within a minute.
        wait_for(lambda: _job(node, job["id"])["state"] == "ACTIVE", 60, 0.5, "the probe to close the breaker")
        closed = _job(node, job["id"])
        assert closed.get("breaker") is None
        assert closed.get("suspended_reason") is None

        # Closed by the probe's success; the runs after it run and succeed.
        wait_for(
            lambda: len([r for r in api.runs(job["id"]) if r["status"] == "SUCCEEDED"]) >= 2,
            30,
            0.5,
            "a run after the probe",
        )
        runs = api.runs(job["id"])
        # Every occurrence has one record; no run was both skipped and run.
        assert len({r["scheduled_for"] for r in runs}) == len(runs)
        assert len([r for r in runs if r["status"] == "FAILED"]) >= 2
        # Open skips are recorded as their time comes: none for an instant after the breaker closed.
        closed_at = _instant(closed["updated_at"])
        late_skips = [
            r for r in runs if r.get("skip_reason") == "circuit_open" and _instant(r["scheduled_for"]) > closed_at
        ]
        assert late_skips == [], "an occurrence after the breaker closed was recorded circuit_open"
    finally:
        api.cancel(job["id"])
