"""Run events on one `tickwork dev` node, over HTTP as a user would: what the functions publish to EventBridge
(moto's) is printed by the node and listed by `GET /_tickwork/events` (docs/operations.md, "Run events")."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.e2e.conftest import Node, wait_for

pytestmark = pytest.mark.e2e


def _in(seconds: float) -> str:
    return (datetime.now(UTC) + timedelta(seconds=seconds)).isoformat()


def _events_of(node: Node, subject: str) -> list[dict[str, Any]]:
    items = node.api.get("/_tickwork/events")["items"]
    return [e for e in items if subject in (e["detail"].get("job_id"), e["detail"].get("run_id"))]


def test_a_failed_run_is_on_the_local_event_list_once(node: Node) -> None:
    job = node.api.create_job(
        name="events-e2e", payload={"fail_attempts": 9}, schedule={"at": _in(2)}, retry={"max_attempts": 1}
    )
    events = wait_for(lambda: len(_events_of(node, job["id"])) >= 2 and _events_of(node, job["id"]), 60, 0.5, "events")
    assert sorted(e["detail-type"] for e in events) == ["Run Dead-Lettered", "Run Failed"]
    assert {e["source"] for e in events} == {"tickwork"}
    (run,) = node.api.runs(job["id"])
    assert {e["detail"]["run_id"] for e in events} == {run["id"]}
    node.proc.wait_line(f"event Run Failed: {run['id']}", 10)


def test_a_deadline_alert_is_on_the_local_event_list(node: Node) -> None:
    """A run still going at its deadline (ALERT): the tick records the miss and publishes `Deadline Missed`."""
    job = node.api.create_job(
        name="deadline-e2e",
        payload={"sleep_seconds": 8},
        schedule={"at": _in(2)},
        deadline={"within_seconds": 3},
    )

    def missed() -> list[dict[str, Any]]:
        return [e for e in _events_of(node, job["id"]) if e["detail-type"] == "Deadline Missed"]

    (event,) = wait_for(missed, 60, 0.5, "Deadline Missed")
    (run,) = node.api.runs(job["id"])
    assert event["detail"]["run_id"] == run["id"]
    assert event["detail"]["on_miss"] == "ALERT"
    assert event["detail"]["event_id"] == f"{run['id']}#deadline-missed#0"
    done = wait_for(lambda: (r := node.api.runs(job["id"])[0])["status"] == "SUCCEEDED" and r, 30, 0.5, "the run")
    assert done["deadline_missed_at"] is not None
    assert len(missed()) == 1
