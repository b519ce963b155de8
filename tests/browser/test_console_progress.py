"""A running run's progress in the console, in Chromium: the worked example of docs/durable-runs.md (batch_export,
loaded with `--job-types`) reports a fraction per page, and the run page shows it as a bar while it runs."""

from __future__ import annotations

import pytest

from tests.browser.conftest import ROOT, LocalApi, screenshot
from tests.browser.test_console_pages import create_job, finished_run, open_console

pytestmark = pytest.mark.browser

DEV_OPTIONS = ["--job-types", "export_jobs", "--job-types-path", str(ROOT / "examples" / "durable-runs" / "layer")]


def test_the_run_page_shows_a_running_runs_progress_bar(page, dev: LocalApi):
    job = create_job(dev, name="console-export", type="batch_export", payload={"pages": 6, "page_seconds": 2})
    run = dev.call("POST", f"/v1/jobs/{job['id']}/trigger")
    open_console(page, dev, f"/runs/{run['id']}")
    bar = page.locator(".run-progress progress")
    bar.wait_for(timeout=20_000)  # the first page's report, while the run is RUNNING
    assert page.locator("h1 .status").inner_text() == "RUNNING"
    assert 0 < int(bar.get_attribute("value") or 0) < 100
    assert "of 6" in page.locator(".run-progress").inner_text()
    screenshot(page, "run-progress")
    done = finished_run(dev, run["id"], timeout=60)
    assert (done["status"], done["progress"]["fraction"]) == ("SUCCEEDED", 1.0)
