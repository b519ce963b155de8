"""The console's run pages in Chromium, on one `tickwork dev` with job types of its own (`--job-types`): a running
run's progress, from the worked example of docs/durable-runs.md (batch_export reports a fraction per page, and the
run page shows it as a bar while it runs); and a secret a handler put everywhere it could (tests.secret_leaker),
shown masked, never in the clear, on every page that shows its job and runs (issue 35's acceptance; the table, the
bucket, the logs and the API's answers: tests/api/test_secret_never_stored.py)."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from tests.browser.conftest import ROOT, LocalApi, screenshot
from tests.browser.test_console_pages import create_job, finished_run, open_console

pytestmark = pytest.mark.browser

DEV_OPTIONS = [
    *("--job-types", "export_jobs,tests.secret_leaker"),
    *("--job-types-path", str(ROOT / "examples" / "durable-runs" / "layer"), "--job-types-path", str(ROOT)),
]
PLANTED = "planted-5e0c7a1f-console-secret"


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


def _rendered(page: Any, route: str, shown: str, dev: LocalApi) -> str:
    """The page at `route` once `shown` is on it and its requests are done: its text as rendered and its HTML."""
    open_console(page, dev, route)
    page.locator("main", has_text=shown).wait_for()
    page.wait_for_load_state("networkidle")
    return page.inner_text("body") + "\n" + page.content()


def test_a_planted_secret_is_on_no_console_page_of_the_jobs_and_runs_that_used_it(page, dev: LocalApi):
    boto3.client(
        "secretsmanager",
        endpoint_url=dev.moto_url,
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    ).create_secret(Name="tickwork/default/console-planted", SecretString=PLANTED)
    reference = {"$secret": "tickwork/default/console-planted"}
    succeeding = create_job(
        dev, name="console-leaker", type="secret-leaker", payload={"token": reference, "mode": "succeed"}
    )
    failing = create_job(
        dev,
        name="console-leaker-fails",
        type="secret-leaker",
        payload={"token": reference, "mode": "fail"},
        retry={"max_attempts": 1},
    )
    succeeded = finished_run(dev, dev.call("POST", f"/v1/jobs/{succeeding['id']}/trigger")["id"])
    failed = finished_run(dev, dev.call("POST", f"/v1/jobs/{failing['id']}/trigger")["id"])
    assert (succeeded["status"], failed["status"]) == ("SUCCEEDED", "FAILED")

    pages = {
        "the job page": _rendered(page, f"/jobs/{succeeding['id']}", "SUCCEEDED", dev),
        "the failed job's page": _rendered(page, f"/jobs/{failing['id']}", "FAILED", dev),
        "the job's audit tab": _rendered(page, f"/jobs/{succeeding['id']}?tab=audit", "create", dev),
        "the run page": _rendered(page, f"/runs/{succeeded['id']}", "using ***", dev),
        "the failed run's page": _rendered(page, f"/runs/{failed['id']}", "the server refused ***", dev),
        "the runs page": _rendered(page, "/runs", "console-leaker-fails", dev),
        "the DLQ": _rendered(page, "/dlq", failed["id"], dev),
        "the audit page": _rendered(page, "/audit", succeeding["id"], dev),
    }
    found_on = [name for name, text in pages.items() if PLANTED in text]
    assert not found_on, f"the planted value is on {', '.join(found_on)}"
    assert '"***"' in pages["the run page"]  # its result, masked (the handler returned the token)
