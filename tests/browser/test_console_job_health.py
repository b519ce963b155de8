"""Job health at a glance in the console, at desktop and phone widths: the jobs list's last run (status and
time), a one-shot whose only run FAILED shown as failed (not a grey COMPLETED), and the health filter."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import LocalApi, screenshot
from tests.browser.test_console_pages import at, create_job, finished_run, open_console
from tests.processes import wait_for

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def health_jobs(dev: LocalApi) -> dict[str, Any]:
    """A job whose last run succeeded, one whose last run failed, and a one-shot whose only run failed."""
    fine = create_job(dev, name="console-health-fine", tags={"health": "yes"})
    failing = create_job(
        dev,
        name="console-health-failing",
        tags={"health": "yes"},
        payload={"fail_attempts": 99},
        retry={"max_attempts": 1},
    )
    once = create_job(
        dev,
        name="console-health-once",
        tags={"health": "yes"},
        schedule={"at": at(1)},
        payload={"fail_attempts": 99},
        retry={"max_attempts": 1},
    )
    runs = {
        "fine": finished_run(dev, dev.call("POST", f"/v1/jobs/{fine['id']}/trigger")["id"]),
        "failing": finished_run(dev, dev.call("POST", f"/v1/jobs/{failing['id']}/trigger")["id"]),
    }

    def once_completed() -> dict[str, Any] | None:
        job = dev.call("GET", f"/v1/jobs/{once['id']}")
        listed = dev.call("GET", f"/v1/jobs/{once['id']}/runs")["items"]
        done = job["state"] == "COMPLETED" and listed and listed[0]["status"] == "FAILED"
        return listed[0] if done else None

    runs["once"] = wait_for(once_completed, 30, 0.3, "the one-shot to complete with its run FAILED")
    return {"jobs": {"fine": fine, "failing": failing, "once": once}, "runs": runs}


def row_of(page: Any, name: str) -> Any:
    return page.locator("main table tbody tr", has=page.get_by_role("link", name=name, exact=True))


def test_the_jobs_list_shows_each_jobs_last_run_status_and_time(sized, dev: LocalApi, health_jobs):
    page = sized
    open_console(page, dev, "/jobs?tag=health%3Dyes")
    for key, status in (("fine", "SUCCEEDED"), ("failing", "FAILED"), ("once", "FAILED")):
        cell = row_of(page, f"console-health-{key}").locator("td[data-label='Last run']")
        cell.locator(".status", has_text=status).wait_for()
        run = health_jobs["runs"][key]
        assert cell.locator("time").get_attribute("datetime") == (run["finished_at"] or run["scheduled_for"])
    if page.viewport_size["width"] > 700:
        screenshot(page, "jobs-health")


def test_a_one_shot_whose_only_run_failed_is_not_shown_as_a_grey_completed(sized, dev: LocalApi, health_jobs):
    page = sized
    open_console(page, dev, "/jobs?tag=health%3Dyes")
    state = row_of(page, "console-health-once").locator("td[data-label=State] .status")
    state.and_(page.locator(".status-failed")).wait_for()
    assert "FAILED" in state.inner_text()

    open_console(page, dev, f"/jobs/{health_jobs['jobs']['once']['id']}")
    heading = page.locator("main h1 .status")
    heading.filter(has_text="FAILED").wait_for()
    assert "status-failed" in heading.get_attribute("class")


def test_the_failing_filter_lists_only_the_jobs_whose_last_run_failed(sized, dev: LocalApi, health_jobs):
    page = sized
    open_console(page, dev, "/jobs?tag=health%3Dyes")
    row_of(page, "console-health-fine").wait_for()
    page.get_by_label("Health").select_option("failing")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_function("location.hash.includes('health=failing')")
    row_of(page, "console-health-failing").wait_for()
    row_of(page, "console-health-once").wait_for()
    row_of(page, "console-health-fine").wait_for(state="detached")
    names = page.locator("main table tbody tr td[data-label=Name]").all_inner_texts()
    assert sorted(names) == ["console-health-failing", "console-health-once"]


def test_a_run_re_queued_after_failing_days_ago_is_the_last_run_under_way_since_its_re_queue_not_stuck(
    page, dev: LocalApi
):
    """A retry or redrive re-queues a FAILED run (its start measured afresh): until it starts again it is under way
    since its re-queue, not since its occurrence days ago, so the job is not stuck; one started long ago is."""
    open_console(page, dev, "/jobs")
    page.get_by_role("heading", name="Jobs").wait_for()
    shown = page.evaluate(
        """async () => {
          const { healthOf, underWaySince } = await import('./health.js');
          const now = Date.parse('2026-11-23T12:00:00Z');
          const job = { state: 'ACTIVE', timeout_seconds: 60, consecutive_failures: 0, next_run_at: null };
          const requeued = { status: 'QUEUED', scheduled_for: '2026-11-21T12:00:00Z', started_at: null,
                             requeues: 1, enqueued_at: '2026-11-23T11:59:50Z' };
          const started = { ...requeued, status: 'RUNNING', started_at: '2026-11-23T11:00:00Z' };
          return [underWaySince(requeued), healthOf(job, requeued, now), healthOf(job, started, now)];
        }"""
    )
    assert shown == ["2026-11-23T11:59:50Z", None, "stuck"]
