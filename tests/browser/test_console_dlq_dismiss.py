"""The console's DLQ against `tickwork dev`, in Chromium: an entry no retry takes out says why, offers Dismiss
instead of Retry, and leaves the DLQ when dismissed, its run kept."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.test_dlq_dismiss import SAGA
from tests.browser.conftest import screenshot
from tests.browser.test_console_pages import open_console
from tests.processes import wait_for

pytestmark = pytest.mark.browser


def test_a_failed_step_of_a_compensated_workflow_run_is_dismissed_from_the_dlq(page, dev):
    workflow = dev.call("POST", "/v1/workflows", {**SAGA, "name": "console-saga"})
    started = dev.call("POST", f"/v1/workflows/{workflow['id']}/trigger")

    def compensated() -> dict[str, Any] | None:
        run = dev.call("GET", f"/v1/workflow-runs/{started['id']}")
        return run if run["status"] == "COMPENSATED" else None

    step_run = wait_for(compensated, 60, 0.3, "the workflow run to be compensated")["steps"]["b"]["run_id"]

    open_console(page, dev, "/dlq")
    row = page.locator("main table tbody tr", has_text=step_run)
    row.wait_for()
    assert row.get_by_role("button", name="Retry").count() == 0
    assert "ended COMPENSATED" in row.inner_text()

    row.get_by_role("button", name="Dismiss").click()
    dialog = page.get_by_role("dialog", name="Dismiss this run?")
    dialog.wait_for()
    screenshot(page, "dlq-dismiss")
    dialog.get_by_role("button", name="Dismiss").click()
    page.locator(".notice", has_text=f"Dismissed {step_run}").wait_for()
    row.wait_for(state="detached")
    kept = dev.call("GET", f"/v1/runs/{step_run}")
    assert (kept["status"], kept["dismissed_at"] is not None) == ("FAILED", True)
