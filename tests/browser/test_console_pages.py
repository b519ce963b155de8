"""The console against `tickwork dev`, in Chromium: what a person sees and does on each page.

The run logs (test_run_logs_and_attempts_on_the_run_page) need `GET /v1/runs/{id}/logs` and the Run's
`attempt_history`, built on another branch of issue 15: they pass once it is merged.
"""

from __future__ import annotations

import json
import re
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.browser.conftest import ROOT, LocalApi, screenshot
from tests.processes import wait_for

pytestmark = pytest.mark.browser

TERMINAL = {"SUCCEEDED", "FAILED", "SKIPPED"}


def at(seconds: float) -> str:
    return (datetime.now(UTC) + timedelta(seconds=seconds)).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def create_job(dev: LocalApi, **spec: Any) -> dict[str, Any]:
    spec.setdefault("type", "echo")
    spec.setdefault("schedule", {"cron": "0 3 * * *"})
    return dev.call("POST", "/v1/jobs", spec)


def finished_run(dev: LocalApi, run_id: str, timeout: float = 30) -> dict[str, Any]:
    def done() -> dict[str, Any] | None:
        run = dev.call("GET", f"/v1/runs/{run_id}")
        return run if run["status"] in TERMINAL else None

    return wait_for(done, timeout, 0.3, f"run {run_id} to finish")


def open_console(page: Any, dev: LocalApi, route: str) -> None:
    page.goto(f"{dev.url}/console/#{route}")


def tab_to(page: Any, name: str, limit: int = 40) -> None:
    """Press Tab until the button or link called `name` has the focus, as a keyboard user would."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        focused = page.evaluate("document.activeElement && document.activeElement.textContent.trim()")
        if focused == name:
            return
    raise AssertionError(f"{name!r} never took the focus in {limit} Tabs")


def _as_the_console_writes(ms: int) -> str:
    """A duration under a minute as the console's duration() writes it (ui.js): 420 ms, 1.01 s, 12.3 s."""
    return f"{ms} ms" if abs(ms) < 1000 else f"{ms / 1000:.{2 if abs(ms) < 10000 else 1}f} s"


def test_a_job_created_through_the_api_is_listed_filtered_and_opened_with_its_next_instants(page, dev):
    wanted = create_job(dev, name="console-nightly-export", tags={"team": "data"}, schedule={"cron": "*/5 * * * *"})
    create_job(dev, name="console-nightly-report", tags={"team": "ops"})
    create_job(dev, name="console-hourly-sync", tags={"team": "data"}, schedule={"rate": "1 hour"})

    open_console(page, dev, "/jobs")
    rows = page.locator("main table tbody tr")
    for name in ("console-nightly-export", "console-nightly-report", "console-hourly-sync"):
        page.get_by_role("link", name=name).wait_for()

    page.get_by_label("Tag").fill("team=data")
    page.get_by_label("Name starts with").fill("console-nightly")
    page.get_by_label("Name starts with").press("Enter")
    page.wait_for_url(re.compile(r"tag=team%3Ddata"))
    page.get_by_role("link", name="console-nightly-report").wait_for(state="detached")
    page.get_by_role("link", name="console-nightly-export").wait_for()
    assert rows.count() == 1
    assert "console-nightly-export" in rows.first.inner_text()
    assert "team=data" in rows.first.inner_text()
    screenshot(page, "jobs")

    page.get_by_role("link", name="console-nightly-export").click()
    page.get_by_role("heading", name=re.compile("console-nightly-export")).wait_for()
    instants = page.get_by_role("list", name="Next 5 instants").locator("li")
    instants.nth(4).wait_for()
    expected = dev.call("GET", f"/v1/jobs/{wanted['id']}/preview?count=5")["items"]
    shown = [instants.nth(i).locator("time").get_attribute("datetime") for i in range(instants.count())]
    assert shown == [item["at"] for item in expected]
    assert "cron */5 * * * *" in page.locator("main").inner_text()
    screenshot(page, "job")


def test_pause_and_resume_a_job_with_the_keyboard(page, dev):
    job = create_job(dev, name="console-keyboard")
    open_console(page, dev, f"/jobs/{job['id']}")
    page.get_by_role("heading", name=re.compile("console-keyboard")).wait_for()

    # The first page of a visit keeps the browser's start: the first Tab stop is the skip link, which takes the
    # focus to the page's content.
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "main"

    tab_to(page, "Pause")
    page.keyboard.press("Enter")
    page.locator("main h1 .status", has_text="PAUSED").wait_for()
    assert dev.call("GET", f"/v1/jobs/{job['id']}")["state"] == "PAUSED"

    tab_to(page, "Resume")
    page.keyboard.press("Space")
    page.locator("main h1 .status", has_text="ACTIVE").wait_for()
    assert dev.call("GET", f"/v1/jobs/{job['id']}")["state"] == "ACTIVE"

    # Following a link moves the focus to the new page's heading, not left on the link.
    page.get_by_role("navigation", name="Sections").get_by_role("link", name="Jobs").focus()
    page.keyboard.press("Enter")
    page.wait_for_function("document.activeElement && document.activeElement.tagName === 'H1'")
    assert page.evaluate("document.activeElement.textContent.trim()") == "Jobs"


def test_trigger_now_and_follow_the_run_to_its_timeline_and_result(page, dev):
    job = create_job(dev, name="console-trigger", payload={"hello": "console"})
    open_console(page, dev, f"/jobs/{job['id']}")
    page.get_by_role("button", name="Trigger now").click()
    page.get_by_role("link", name=re.compile(r"^run ")).click()

    page.locator("main h1 .status", has_text="SUCCEEDED").wait_for(timeout=30_000)
    run_id = page.locator("main h1 .mono").inner_text()
    run = dev.call("GET", f"/v1/runs/{run_id}")
    assert run["status"] == "SUCCEEDED"
    labels = page.get_by_role("list", name="Timeline").locator(".tl-label").all_inner_texts()
    assert labels[:3] == ["Scheduled", "Claimed and queued", "Started"]
    assert labels[-1] == "Finished SUCCEEDED"
    timeline = page.get_by_role("list", name="Timeline").inner_text()
    assert f"{_as_the_console_writes(run['lateness_ms'])} late" in timeline  # "420 ms late", "1.01 s late" loaded
    page.get_by_label("Result").wait_for()
    assert '"hello": "console"' in page.get_by_label("Result").inner_text()
    screenshot(page, "run")


def test_run_logs_and_attempts_on_the_run_page(page, dev):
    job = create_job(dev, name="console-logs", payload={"log": ["fetched 3 rows", "wrote the report"]})
    run = finished_run(dev, dev.call("POST", f"/v1/jobs/{job['id']}/trigger")["id"])
    assert run["status"] == "SUCCEEDED"

    open_console(page, dev, f"/runs/{run['id']}")
    logs = page.locator("table.logs")
    logs.wait_for()
    messages = logs.locator("tbody tr td[data-label=Message]").all_inner_texts()
    assert [m for m in messages if m in ("fetched 3 rows", "wrote the report")] == [
        "fetched 3 rows",
        "wrote the report",
    ]
    labels = page.get_by_role("list", name="Timeline").locator(".tl-label").all_inner_texts()
    assert "Attempt 1" in labels
    assert page.get_by_role("link", name="Open in CloudWatch Logs Insights").count() == 0  # null locally
    screenshot(page, "run-logs")


def test_retry_a_failed_run_from_the_dlq_with_confirmation(page, dev):
    job = create_job(dev, name="console-dlq", payload={"fail_attempts": 99}, retry={"max_attempts": 1})
    failed = finished_run(dev, dev.call("POST", f"/v1/jobs/{job['id']}/trigger")["id"])
    assert failed["status"] == "FAILED"

    open_console(page, dev, "/dlq")
    row = page.locator("main table tbody tr", has_text=failed["id"])
    row.wait_for()
    assert "EchoFailure" in row.inner_text()

    # Escape closes the dialog and retries nothing.
    row.get_by_role("button", name="Retry").click()
    dialog = page.get_by_role("dialog", name="Retry this run?")
    dialog.wait_for()
    # The focus stays in the dialog however often Tab is pressed.
    for _ in range(5):
        page.keyboard.press("Tab")
        assert page.evaluate("!!document.activeElement.closest('dialog[open]')")
    page.keyboard.press("Escape")
    dialog.wait_for(state="hidden")
    assert dev.call("GET", f"/v1/runs/{failed['id']}") == failed

    row.get_by_role("button", name="Retry").click()
    screenshot(page, "dlq-confirm")
    dialog.get_by_role("button", name="Retry").click()
    page.locator(".notice", has_text=f"Re-queued {failed['id']}").wait_for()

    # The retried run ran again (and, failing on purpose, failed again: a later finish, attempts from 1).
    def ran_again() -> dict[str, Any] | None:
        run = dev.call("GET", f"/v1/runs/{failed['id']}")
        return run if run["status"] == "FAILED" and run["finished_at"] != failed["finished_at"] else None

    again = wait_for(ran_again, 30, 0.3, "the retried run to finish again")
    assert again["attempts"] == 1


DIAMOND = [
    {"id": "extract", "type": "echo", "payload": {"rows": 3}},
    {"id": "clean", "type": "echo", "depends_on": ["extract"]},
    {
        "id": "enrich",
        "type": "echo",
        "depends_on": ["extract"],
        "payload": {"fail_attempts": 99},
        "retry": {"max_attempts": 1},
    },
    {"id": "load", "type": "echo", "depends_on": ["clean", "enrich"]},
]


def test_a_compensated_trip_shows_its_compensations_on_the_graph_and_in_order(page, dev):
    trip = json.loads((ROOT / "examples" / "workflows" / "book-trip.json").read_text())
    workflow = dev.call("POST", "/v1/workflows", trip)
    run = dev.call("POST", f"/v1/workflows/{workflow['id']}/trigger")

    def compensated() -> dict[str, Any] | None:
        current = dev.call("GET", f"/v1/workflow-runs/{run['id']}")
        return current if current["status"] == "COMPENSATED" else None

    wait_for(compensated, 45, 0.3, "the trip to be compensated")
    open_console(page, dev, f"/workflow-runs/{run['id']}")
    graph = page.locator("figure.dag svg")
    graph.locator("g[data-step=charge_card]").wait_for()
    assert "↺ SUCCEEDED" in (graph.locator("g[data-step=reserve_hotel] text.dag-status").text_content() or "")
    listed = page.locator("ol[aria-label^=Compensations] li")
    assert [listed.nth(i).get_attribute("data-compensation") for i in range(listed.count())] == [
        "reserve_hotel",
        "reserve_flight",
    ]
    listed.first.locator("a").click()
    page.wait_for_url(re.compile(r".*#/runs/.*\.c-reserve_hotel$"))


def test_a_diamond_workflow_run_is_drawn_with_each_steps_status(page, dev):
    workflow = dev.call(
        "POST", "/v1/workflows", {"name": "console-diamond", "schedule": {"rate": "1 day"}, "steps": DIAMOND}
    )
    run = dev.call("POST", f"/v1/workflows/{workflow['id']}/trigger")

    def ended() -> dict[str, Any] | None:
        current = dev.call("GET", f"/v1/workflow-runs/{run['id']}")
        return current if current["status"] not in ("RUNNING", "QUEUED", "PENDING") else None

    before = wait_for(ended, 45, 0.3, "the workflow run to end")
    open_console(page, dev, f"/workflow-runs/{run['id']}")
    graph = page.locator("figure.dag svg")
    graph.locator("g[data-step=load]").wait_for()
    shown = {
        step: graph.locator(f"g[data-step={step}]").get_attribute("data-status")
        for step in ("extract", "clean", "enrich", "load")
    }
    assert shown == {"extract": "SUCCEEDED", "clean": "SUCCEEDED", "enrich": "FAILED", "load": "SKIPPED"}
    assert graph.locator("path.dag-edge").count() == 4
    # Laid out left to right: extract before clean and enrich, load after both.
    x = {
        step: graph.locator(f"g[data-step={step}]").bounding_box()["x"]
        for step in ("extract", "clean", "enrich", "load")
    }
    assert x["extract"] < x["clean"] == x["enrich"] < x["load"]
    screenshot(page, "workflow-run")

    page.get_by_role("button", name="Retry failed steps").click()
    page.get_by_role("dialog").get_by_role("button", name="Retry").click()
    page.locator(".notice", has_text="Retrying.").wait_for()

    # The failed step ran again (failing on purpose, it fails again); what succeeded did not.
    def enrich_ran_again() -> dict[str, Any] | None:
        current = ended()
        return (
            current
            if current and current["steps"]["enrich"]["finished_at"] != before["steps"]["enrich"]["finished_at"]
            else None
        )

    after = wait_for(enrich_ran_again, 45, 0.3, "the retried step to run again")
    assert after["steps"]["extract"] == before["steps"]["extract"]


def test_an_api_error_is_shown_as_the_problems_text(page, dev):
    missing = "j" + "0" * 25
    problem = dev.call("GET", f"/v1/jobs/{missing}", expect=(404,))
    open_console(page, dev, f"/jobs/{missing}")
    alert = page.get_by_role("alert")
    alert.wait_for()
    assert problem["title"] in alert.inner_text()
    assert problem["detail"] in alert.inner_text()

    open_console(page, dev, "/jobs?tag=no-equals-sign")
    alert = page.get_by_role("alert")
    alert.wait_for()
    assert "tag" in alert.inner_text()
    assert "Invalid" in alert.inner_text() or "422" in alert.inner_text()


def test_at_phone_width_no_page_scrolls_sideways(browser, dev):
    job = create_job(dev, name="console-phone-with-a-rather-long-name-that-must-wrap", tags={"owner": "x" * 60})
    run = finished_run(dev, dev.call("POST", f"/v1/jobs/{job['id']}/trigger")["id"])
    context = browser.new_context(viewport={"width": 375, "height": 800})
    page = context.new_page()
    try:
        for route in ("/jobs", f"/jobs/{job['id']}", f"/runs/{run['id']}", "/dlq", "/workflows", "/metrics"):
            page.goto(f"{dev.url}/console/#{route}")
            page.locator("main h1").wait_for()
            time.sleep(0.3)  # let the page's data arrive and lay out
            widths = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
            assert widths[0] <= widths[1], f"{route} scrolls sideways: {widths}"
        page.goto(f"{dev.url}/console/#/jobs")
        page.get_by_role("link", name=job["name"]).wait_for()
        screenshot(page, "jobs-phone")
    finally:
        context.close()


def test_the_metrics_page_charts_the_runs_with_data(page, dev):
    """Needs `GET /v1/metrics` (another branch of issue 15): passes once it is merged."""
    job = create_job(dev, name="console-metrics")
    for _ in range(2):
        assert finished_run(dev, dev.call("POST", f"/v1/jobs/{job['id']}/trigger")["id"])["status"] == "SUCCEEDED"

    open_console(page, dev, "/metrics")
    runs_chart = page.locator("#chart-runs")
    # The page asks again every 5 s: the runs show once their figures reach the metrics store.
    page.wait_for_function(
        "() => Number((document.querySelector('#chart-runs') || {dataset: {}}).dataset.max) > 0", timeout=30_000
    )
    assert runs_chart.locator("canvas").count() == 1
    succeeded = runs_chart.get_by_role("list").locator("li", has_text="succeeded")
    assert succeeded.count() >= 1
    for chart in ("lateness", "failure-rate", "retries", "queue-depth", "queue-age", "utilisation", "tick-lag"):
        assert page.locator(f"#chart-{chart} h2").is_visible()
    screenshot(page, "metrics")


def test_tickwork_dev_prints_the_consoles_url(page, dev):
    line = dev.proc.wait_line("Console ", 5)
    assert line.split() == ["Console", f"{dev.url}/console/"]
    page.goto(line.split()[1])
    page.get_by_role("heading", name="Jobs").wait_for()


def test_edit_a_job_and_see_a_refused_change_named_in_the_dialog_then_cancel_it(page, dev):
    job = create_job(dev, name="console-edit", priority=5)
    open_console(page, dev, f"/jobs/{job['id']}")
    page.get_by_role("button", name="Edit").click()
    dialog = page.get_by_role("dialog", name="Edit console-edit")
    dialog.get_by_label("Priority (0-9)").fill("8")
    dialog.get_by_role("button", name="Save").click()
    page.locator(".notice", has_text="Saved.").wait_for()
    page.locator("dl.facts", has_text="8 (high band)").wait_for()
    assert dev.call("GET", f"/v1/jobs/{job['id']}")["priority"] == 8

    page.get_by_role("button", name="Edit").click()
    dialog.get_by_label("Cron expression").fill("61 * * * *")
    dialog.get_by_role("button", name="Save").click()
    alert = dialog.locator(".error")
    alert.wait_for()
    assert "schedule.cron" in alert.inner_text()
    assert dev.call("GET", f"/v1/jobs/{job['id']}")["schedule"] == job["schedule"]
    page.keyboard.press("Escape")
    dialog.wait_for(state="hidden")

    page.get_by_role("button", name="Cancel job").click()
    page.get_by_role("dialog", name="Cancel this job?").get_by_role("button", name="Cancel job").click()
    page.locator("main h1 .status", has_text="CANCELLED").wait_for()
    assert dev.call("GET", f"/v1/jobs/{job['id']}")["state"] == "CANCELLED"


def test_redrive_every_failed_run_from_the_dlq_with_confirmation(page, dev):
    job = create_job(dev, name="console-redrive", payload={"fail_attempts": 99}, retry={"max_attempts": 1})
    failed = finished_run(dev, dev.call("POST", f"/v1/jobs/{job['id']}/trigger")["id"])
    assert failed["status"] == "FAILED"

    open_console(page, dev, "/dlq")
    page.locator("main table tbody tr", has_text=failed["id"]).wait_for()
    page.get_by_role("button", name="Redrive all…").click()
    page.get_by_role("dialog", name="Redrive every FAILED run?").get_by_role("button", name="Redrive all").click()
    notice = page.locator(".notice", has_text="Re-queued")
    notice.wait_for()
    assert re.search(r"Re-queued [1-9]\d* runs?", notice.inner_text())

    def ran_again() -> dict[str, Any] | None:
        run = dev.call("GET", f"/v1/runs/{failed['id']}")
        return run if run["status"] == "FAILED" and run["finished_at"] != failed["finished_at"] else None

    wait_for(ran_again, 30, 0.3, "the redriven run to finish again")


def test_cancel_a_running_workflow_run(page, dev):
    steps = [
        {"id": "slow", "type": "echo", "payload": {"sleep_seconds": 20}},
        {"id": "after", "type": "echo", "depends_on": ["slow"]},
    ]
    workflow = dev.call(
        "POST", "/v1/workflows", {"name": "console-cancel", "schedule": {"rate": "1 day"}, "steps": steps}
    )
    run = dev.call("POST", f"/v1/workflows/{workflow['id']}/trigger")
    open_console(page, dev, f"/workflow-runs/{run['id']}")
    page.get_by_role("button", name="Cancel run").click()
    page.get_by_role("dialog", name="Cancel this workflow run?").get_by_role("button", name="Cancel run").click()
    page.locator("main h1 .status", has_text="CANCELLED").wait_for()
    cancelled = dev.call("GET", f"/v1/workflow-runs/{run['id']}")
    assert cancelled["status"] == "CANCELLED"
    assert cancelled["steps"]["after"]["status"] == "SKIPPED"
    assert page.locator("figure.dag g[data-step=after]").get_attribute("data-status") == "SKIPPED"
