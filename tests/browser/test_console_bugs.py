"""Defects seen in the console (issue 27), each shown in Chromium against `tickwork dev`."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import pytest

from tests.browser.conftest import LocalApi
from tests.browser.test_console_pages import at, create_job, finished_run, open_console
from tests.processes import wait_for

pytestmark = pytest.mark.browser


def ended_job(dev: LocalApi, state: str) -> dict[str, Any]:
    if state == "CANCELLED":
        job = create_job(dev, name="console-bug-cancelled")
        dev.call("DELETE", f"/v1/jobs/{job['id']}")
        return job
    job = create_job(dev, name="console-bug-completed", schedule={"at": at(1)})

    def completed() -> dict[str, Any] | None:
        current = dev.call("GET", f"/v1/jobs/{job['id']}")
        return current if current["state"] == "COMPLETED" else None

    return wait_for(completed, 30, 0.3, "the one-shot to complete")


@pytest.mark.parametrize("state", ["COMPLETED", "CANCELLED"])
def test_an_ended_job_offers_no_edit_or_trigger_and_lists_no_next_instants(page, dev: LocalApi, state):
    job = ended_job(dev, state)
    open_console(page, dev, f"/jobs/{job['id']}")
    page.locator("main h1 .status", has_text=state).wait_for()
    page.get_by_role("heading", name="Runs").wait_for()
    actions = page.get_by_role("group", name="Job actions")
    assert actions.get_by_role("button", name="Edit").count() == 0
    assert actions.get_by_role("button", name="Trigger now").count() == 0
    assert page.get_by_role("heading", name="Next 5 instants").count() == 0


def test_a_redriven_runs_timeline_is_in_time_order_with_the_redrive_marked(page, dev: LocalApi):
    job = create_job(
        dev,
        name="console-bug-redrive",
        payload={"fail_attempts": 99},
        retry={"max_attempts": 2, "backoff_seconds": 0.1, "max_backoff_seconds": 0.1},
    )
    first = finished_run(dev, dev.call("POST", f"/v1/jobs/{job['id']}/trigger")["id"])
    assert (first["status"], first["attempts"]) == ("FAILED", 2)
    dev.call("POST", f"/v1/runs/{first['id']}/retry")

    def failed_again() -> dict[str, Any] | None:
        run = dev.call("GET", f"/v1/runs/{first['id']}")
        return run if run["status"] == "FAILED" and run["finished_at"] != first["finished_at"] else None

    again = wait_for(failed_again, 30, 0.3, "the redriven run to fail again")
    assert [a["attempt"] for a in again["attempt_history"]] == [1, 2, 1, 2]

    open_console(page, dev, f"/runs/{again['id']}")
    timeline = page.get_by_role("list", name="Timeline")
    timeline.locator(".tl-label", has_text="Finished").wait_for()
    instants = [
        datetime.fromisoformat(t) for t in timeline.locator("time").evaluate_all("ts => ts.map(t => t.dateTime)")
    ]
    assert instants == sorted(instants)
    labels = timeline.locator(".tl-label").all_inner_texts()
    attempts = [label for label in labels if label.startswith("Attempt")]
    assert attempts == ["Attempt 1", "Attempt 2", "Attempt 1", "Attempt 2"]
    requeued = [i for i, label in enumerate(labels) if label.startswith("Re-queued")]
    assert len(requeued) == 1
    assert labels.index("Attempt 2") < requeued[0] < len(labels) - 1 - labels[::-1].index("Attempt 1")
    assert "+-" not in timeline.inner_text()
    wall = page.locator("dl.facts dt", has_text="Wall time").locator("xpath=following-sibling::dd[1]")
    assert "each execution's first start to its end" in wall.inner_text()  # not the time between them


def test_a_negative_offset_is_written_with_a_minus_sign_not_plus_minus(page, dev: LocalApi):
    open_console(page, dev, "/jobs")
    page.get_by_role("heading", name="Jobs").wait_for()
    shown = page.evaluate(
        "async () => [(await import('./ui.js')).offset(-2980), (await import('./ui.js')).offset(2980)]"
    )
    assert shown == ["\u22122.98 s", "+2.98 s"]


def test_moving_to_another_jobs_page_closes_the_edit_dialog(page, dev: LocalApi):
    one = create_job(dev, name="console-bug-dialog-one")
    other = create_job(dev, name="console-bug-dialog-other")
    open_console(page, dev, f"/jobs/{one['id']}")
    page.get_by_role("button", name="Edit").click()
    page.get_by_role("dialog", name="Edit console-bug-dialog-one").wait_for()
    page.evaluate(f"location.hash = '#/jobs/{other['id']}'")
    page.get_by_role("heading", name=re.compile("console-bug-dialog-other")).wait_for()
    page.wait_for_timeout(300)  # a frame or two for a dialog that would have stayed open
    assert page.locator("dialog[open]").count() == 0


def test_no_dag_edge_is_drawn_above_the_graphs_top(page, dev: LocalApi):
    steps = [
        {"id": "a", "type": "echo"},
        {"id": "b", "type": "echo", "depends_on": ["a"]},
        {"id": "c", "type": "echo", "depends_on": ["a"]},
        {"id": "d", "type": "echo", "depends_on": ["a"]},
        {"id": "e", "type": "echo", "depends_on": ["b", "c", "d", "a"]},
    ]
    workflow = dev.call(
        "POST", "/v1/workflows", {"name": "console-bug-dag", "schedule": {"rate": "1 day"}, "steps": steps}
    )
    open_console(page, dev, f"/workflows/{workflow['id']}")
    svg = page.locator("figure.dag svg")
    svg.locator("g[data-step=e]").wait_for()
    outside = svg.evaluate(
        """svg => {
            const box = svg.viewBox.baseVal;
            return [...svg.querySelectorAll('path.dag-edge')].map(p => p.getBBox())
                .filter(b => b.y < box.y || b.x < box.x || b.y + b.height > box.y + box.height || b.x + b.width > box.x + box.width)
                .length;
        }"""
    )
    assert outside == 0
