"""The Jobs page's health strip: "No stuck runs" on a healthy node, then a run QUEUED long past its time (a
backfilled occurrence of half an hour ago, waiting behind its job's running run: overlap BUFFER_ONE) listed with
why and a link to its run page; and a run a freeze skipped, named by the freeze's id in its job's runs and on its
page."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from tests.browser.conftest import LocalApi, screenshot
from tests.browser.test_console_pages import at, create_job, finished_run, open_console
from tests.processes import wait_for

pytestmark = pytest.mark.browser


def test_the_health_strip_lists_a_stuck_run_with_a_link_to_it(page, dev: LocalApi):
    from playwright.sync_api import expect

    open_console(page, dev, "/jobs")
    strip = page.get_by_role("region", name="Stuck runs")
    expect(strip).to_contain_text("No stuck runs.")

    # Daily at a minute half an hour ago: its one past occurrence in the backfill's range, none due meanwhile.
    past = (datetime.now(UTC) - timedelta(minutes=30)).replace(second=0, microsecond=0)
    job = create_job(
        dev,
        name="console-stuck-behind",
        schedule={"cron": f"{past.minute} {past.hour} * * *"},
        overlap="BUFFER_ONE",
        payload={"sleep_seconds": 300},
    )
    running = dev.call("POST", f"/v1/jobs/{job['id']}/trigger")
    # The backfilled run must find the job's running slot taken.
    wait_for(lambda: dev.call("GET", f"/v1/runs/{running['id']}")["status"] == "RUNNING", 30, 0.2, "a running run")
    span = {"from": (past - timedelta(seconds=30)).isoformat(), "to": (past + timedelta(seconds=30)).isoformat()}
    dev.call("POST", f"/v1/jobs/{job['id']}/backfill", span)
    stuck = dev.call("GET", f"/v1/jobs/{job['id']}/runs")["items"]
    waiting = next(r["id"] for r in stuck if r["id"] != running["id"])

    runs = strip.get_by_role("list", name="Stuck runs").locator("li")
    expect(runs).to_have_count(1, timeout=45_000)
    expect(runs.first).to_contain_text(re.compile(r"QUEUED\s*(\d+ min \d+ s|\d+\.\d h) past its time"))
    expect(runs.first.get_by_role("link", name="console-stuck-behind")).to_be_visible()
    link = runs.first.get_by_role("link", name=waiting)
    expect(link).to_have_attribute("href", f"#/runs/{waiting}")
    screenshot(page, "stuck-runs")
    link.click()
    expect(page.get_by_role("heading", name=re.compile("Run"))).to_contain_text(waiting)


def test_a_run_a_freeze_skipped_names_the_freeze_in_the_runs_list_and_on_its_page(page, dev: LocalApi):
    from playwright.sync_api import expect

    job = create_job(dev, name="console-frozen", schedule={"at": at(4)})
    freeze = dev.call(
        "POST", "/v1/freezes", {"selector": {"job_ids": [job["id"]]}, "for_seconds": 120, "reason": "deploy 1.42"}
    )
    # Claimed at once (due within the horizon): the freeze marks it, and its executor skips it.
    listed = wait_for(lambda: dev.call("GET", f"/v1/jobs/{job['id']}/runs")["items"], 30, 0.3, "the run")
    run = finished_run(dev, listed[0]["id"])
    assert (run["status"], run["skip_reason"], run["blocked_by"]) == ("SKIPPED", "freeze", freeze["id"])

    open_console(page, dev, f"/jobs/{job['id']}")
    status = page.locator("main table tbody tr td[data-label=Status]")
    expect(status).to_have_text([re.compile(rf"SKIPPED\s*freeze\s*{freeze['id']}")])
    page.locator("main table tbody").get_by_role("link").first.click()
    facts = page.locator("dl.facts")
    expect(facts).to_contain_text(re.compile(rf"Blocked by\s*{freeze['id']}"))
