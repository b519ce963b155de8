"""A job's forecast in the console (docs/forecasts.md): its job page shows its durations and success, its next run's
outlook and advice on its timeout; a run's page its outlook."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import LocalApi
from tests.browser.test_console_pages import create_job, open_console
from tests.processes import wait_for

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def forecast_job(dev: LocalApi) -> dict[str, Any]:
    """A job with 22 runs of history (manual triggers, folded into its forecast by its next claim)."""
    job = create_job(dev, name="console-forecast", schedule={"rate": "30 seconds"}, timeout_seconds=300)
    for _ in range(22):
        dev.call("POST", f"/v1/jobs/{job['id']}/trigger")

    def forecast() -> dict[str, Any] | None:
        shown = dev.call("GET", f"/v1/jobs/{job['id']}")
        return shown if (shown.get("forecast") or {}).get("runs", 0) >= 20 else None

    return wait_for(forecast, 90, 1, "the job's forecast")


def test_the_job_page_shows_the_forecast_the_next_runs_outlook_and_timeout_advice(page, dev, forecast_job):
    open_console(page, dev, f"/jobs/{forecast_job['id']}")
    shown = page.get_by_test_id("forecast")
    shown.wait_for()
    text = shown.inner_text()
    assert "p50" in text
    assert "p95" in text
    assert "p99" in text
    assert "succeeds 100%" in text
    assert "expected to end" in page.get_by_test_id("next-run-forecast").inner_text()
    advice = page.get_by_test_id("timeout-advice").inner_text()
    assert advice.startswith("Too long: suggested 5 s")


def test_a_run_claimed_with_a_forecast_shows_its_expected_end(page, dev, forecast_job):
    def claimed() -> dict[str, Any] | None:
        runs = dev.call("GET", f"/v1/jobs/{forecast_job['id']}/runs")["items"]
        return next((r for r in runs if r["expected_end_at"]), None)

    run = wait_for(claimed, 60, 1, "a run claimed with the job's forecast")
    open_console(page, dev, f"/runs/{run['id']}")
    page.get_by_text("Expected end").wait_for()
    assert "likely to succeed" in page.locator("dl").first.inner_text()
