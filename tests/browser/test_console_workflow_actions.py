"""A workflow's actions in the console, and a single run's cancel, at desktop and phone widths: pause and resume
a workflow, edit its schedule, create one, cancel one of its running runs; cancel a job's running run."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.browser.conftest import LocalApi, screenshot
from tests.browser.test_console_pages import create_job, open_console
from tests.processes import wait_for

pytestmark = pytest.mark.browser


def create_workflow(dev: LocalApi, name: str, steps: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    steps = steps or [{"id": "only", "type": "echo"}]
    return dev.call("POST", "/v1/workflows", {"name": name, "schedule": {"rate": "1 day"}, "steps": steps})


def test_pause_resume_and_edit_a_workflow(sized, dev: LocalApi):
    page = sized
    workflow = create_workflow(dev, f"console-wf-pause-{page.viewport_size['width']}")
    open_console(page, dev, f"/workflows/{workflow['id']}")
    actions = page.get_by_role("group", name="Workflow actions")
    actions.get_by_role("button", name="Pause").click()
    page.locator("main h1 .status", has_text="PAUSED").wait_for()
    assert dev.call("GET", f"/v1/workflows/{workflow['id']}")["state"] == "PAUSED"
    assert actions.get_by_role("button", name="Pause").count() == 0

    actions.get_by_role("button", name="Resume").click()
    page.locator("main h1 .status", has_text="ACTIVE").wait_for()
    assert dev.call("GET", f"/v1/workflows/{workflow['id']}")["state"] == "ACTIVE"

    actions.get_by_role("button", name="Edit").click()
    dialog = page.get_by_role("dialog", name=re.compile("^Edit console-wf-pause"))
    dialog.get_by_label("Cron", exact=True).check()
    dialog.get_by_label("Cron expression").fill("15 6 * * *")
    dialog.get_by_label("Time zone").fill("America/New_York")
    dialog.locator(".schedule-preview li").nth(4).wait_for()
    dialog.get_by_role("button", name="Save").click()
    page.locator(".notice", has_text="Saved.").wait_for()
    schedule = dev.call("GET", f"/v1/workflows/{workflow['id']}")["schedule"]
    assert (schedule["cron"], schedule["timezone"], schedule["rate"]) == ("15 6 * * *", "America/New_York", None)


def test_cancel_a_running_workflow_run_from_the_workflows_page(sized, dev: LocalApi):
    page = sized
    steps = [
        {"id": "slow", "type": "echo", "payload": {"sleep_seconds": 20}},
        {"id": "after", "type": "echo", "depends_on": ["slow"]},
    ]
    workflow = create_workflow(dev, f"console-wf-cancel-run-{page.viewport_size['width']}", steps)
    run = dev.call("POST", f"/v1/workflows/{workflow['id']}/trigger")
    open_console(page, dev, f"/workflows/{workflow['id']}")
    row = page.locator("main table tbody tr", has_text=run["id"])
    row.get_by_role("button", name="Cancel run").click()
    page.get_by_role("dialog", name="Cancel this workflow run?").get_by_role("button", name="Cancel run").click()
    page.locator(".notice", has_text=f"Cancelled {run['id']}").wait_for()

    def cancelled() -> dict[str, Any] | None:
        current = dev.call("GET", f"/v1/workflow-runs/{run['id']}")
        return current if current["status"] == "CANCELLED" else None

    assert wait_for(cancelled, 15, 0.3, "the run to be cancelled")["steps"]["after"]["status"] == "SKIPPED"
    row.locator(".status", has_text="CANCELLED").wait_for()
    assert row.get_by_role("button", name="Cancel run").count() == 0


def test_create_a_workflow_from_the_form_with_its_preview_and_a_refused_step_named(sized, dev: LocalApi):
    page = sized
    name = f"console-wf-new-{page.viewport_size['width']}"
    open_console(page, dev, "/workflows")
    page.get_by_role("link", name="New workflow").click()
    form = page.get_by_role("form", name="New workflow")
    form.get_by_label("Name", exact=True).fill(name)
    form.get_by_label("Cron expression").fill("0 6 * * *")
    form.get_by_label("Time zone").fill("Asia/Tokyo")
    form.locator(".schedule-preview li").nth(4).wait_for()
    steps = form.get_by_label("Steps (JSON)")
    steps.fill('[{"id": "a", "type": "echo"}, {"id": "b", "type": "echo", "depends_on": ["nope"]}]')
    form.get_by_role("button", name="Create workflow").click()
    form.locator("#field-steps-errors", has_text="steps[1].depends_on").wait_for()
    if page.viewport_size["width"] > 700:
        screenshot(page, "workflow-new")
    assert not [w for w in dev.call("GET", "/v1/workflows?limit=100")["items"] if w["name"] == name]

    steps.fill('[{"id": "a", "type": "echo"}, {"id": "b", "type": "echo", "depends_on": ["a"]}]')
    form.get_by_role("button", name="Create workflow").click()
    page.get_by_role("heading", name=re.compile(name)).wait_for()
    created = dev.call("GET", f"/v1/workflows/{page.url.rsplit('/', 1)[1]}")
    assert (created["schedule"]["cron"], created["schedule"]["timezone"]) == ("0 6 * * *", "Asia/Tokyo")
    assert [s["depends_on"] for s in created["steps"]] == [[], ["a"]]
    page.locator("figure.dag g[data-step=b]").wait_for()


def test_cancel_a_single_running_run_from_its_page(sized, dev: LocalApi):
    page = sized
    job = create_job(dev, name=f"console-cancel-run-{page.viewport_size['width']}", payload={"sleep_seconds": 60})
    run = dev.call("POST", f"/v1/jobs/{job['id']}/trigger")
    wait_for(
        lambda: dev.call("GET", f"/v1/runs/{run['id']}")["status"] == "RUNNING" or None, 15, 0.3, "the run to start"
    )
    open_console(page, dev, f"/runs/{run['id']}")
    page.get_by_role("button", name="Cancel run").click()
    page.get_by_role("dialog", name="Cancel this run?").get_by_role("button", name="Cancel run").click()
    page.locator(".notice", has_text="Asked to stop").wait_for()

    def stopped() -> dict[str, Any] | None:
        current = dev.call("GET", f"/v1/runs/{run['id']}")
        return current if current["status"] == "SKIPPED" else None

    assert wait_for(stopped, 40, 0.5, "the run to stop")["skip_reason"] == "cancelled"
    page.locator("main h1 .status", has_text="SKIPPED").wait_for(timeout=35_000)
    assert page.get_by_role("button", name="Cancel run").count() == 0
