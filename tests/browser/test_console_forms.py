"""The console's forms against `tickwork dev`, in Chromium: a job created from the New job form (its schedule
built, previewed with DST flags, its payload checked against the type's schema), then edited with the same builder;
at desktop and phone widths."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.browser.conftest import LocalApi, checked_page, screenshot
from tests.browser.test_console_pages import create_job, open_console

pytestmark = pytest.mark.browser

# Sundays in March at 02:30 in Paris: the last one falls in the spring-forward gap.
MARCH_SUNDAYS = "30 2 * 3 0"


def no_sideways_scroll(page: Any) -> None:
    widths = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert widths[0] <= widths[1], f"the page scrolls sideways: {widths}"


def test_create_a_cron_job_from_the_form_with_its_preview_then_edit_it(page, dev: LocalApi):
    open_console(page, dev, "/jobs")
    page.get_by_role("link", name="New job").click()
    page.get_by_role("heading", name="New job").wait_for()
    form = page.get_by_role("form", name="New job")
    form.get_by_label("Name", exact=True).fill("console-form-cron")
    form.get_by_label("Cron", exact=True).check()
    form.get_by_label("Cron expression").fill(MARCH_SUNDAYS)
    form.get_by_label("Time zone").fill("Europe/Paris")

    instants = form.get_by_role("list", name="Next 5 instants").locator("li")
    expected = dev.call(
        "POST", "/v1/schedules/preview", {"schedule": {"cron": MARCH_SUNDAYS, "timezone": "Europe/Paris"}}
    )["items"]
    page.wait_for_function(
        "want => [...document.querySelectorAll('.schedule-preview li time')].map(t => t.dateTime).join() === want",
        arg=",".join(item["at"] for item in expected),
    )
    flagged = [i for i, item in enumerate(expected) if item["dst"] == "gap"]
    assert flagged, expected
    for i in range(5):
        assert ("DST gap" in instants.nth(i).inner_text()) == (i in flagged)

    # The payload is checked against echo's schema as it is typed, before anything is sent.
    payload = form.get_by_label("Payload (JSON)")
    payload.fill('{"fail_attempts": -1}')
    form.locator("#field-payload-errors", has_text="payload.fail_attempts").wait_for()
    payload.fill('{"rows": 3}')
    form.locator("#field-payload-errors").wait_for(state="detached")
    screenshot(page, "job-new")

    form.get_by_role("button", name="Create job").click()
    page.get_by_role("heading", name=re.compile("console-form-cron")).wait_for()
    job_id = page.url.rsplit("/", 1)[1]
    job = dev.call("GET", f"/v1/jobs/{job_id}")
    assert (job["schedule"]["cron"], job["schedule"]["timezone"], job["schedule"]["at"]) == (
        MARCH_SUNDAYS,
        "Europe/Paris",
        None,
    )
    assert job["payload"] == {"rows": 3}

    # Edited with the same builder: a refused cron is named on its field, and nothing changes.
    page.get_by_role("button", name="Edit").click()
    dialog = page.get_by_role("dialog", name="Edit console-form-cron")
    assert dialog.get_by_label("Cron expression").input_value() == MARCH_SUNDAYS
    assert dialog.get_by_label("Time zone").input_value() == "Europe/Paris"
    dialog.get_by_label("Cron expression").fill("61 * * * *")
    dialog.get_by_role("button", name="Save").click()
    dialog.locator(".schedule-builder .field-error", has_text="schedule.cron").wait_for()
    assert dev.call("GET", f"/v1/jobs/{job_id}")["schedule"] == job["schedule"]

    dialog.get_by_label("Rate", exact=True).check()
    dialog.get_by_label("Every").fill("2")
    dialog.get_by_label("Unit").select_option("hours")
    dialog.locator(".schedule-preview li").first.wait_for()
    screenshot(page, "job-edit")
    dialog.get_by_role("button", name="Save").click()
    page.locator(".notice", has_text="Saved.").wait_for()
    edited = dev.call("GET", f"/v1/jobs/{job_id}")
    assert (edited["schedule"]["rate"], edited["schedule"]["cron"]) == ("2 hours", None)


def test_an_error_from_the_api_is_shown_on_the_field_it_names(page, dev: LocalApi):
    create_job(dev, name="console-form-taken")
    open_console(page, dev, "/jobs/new")
    form = page.get_by_role("form", name="New job")
    form.get_by_label("Name", exact=True).fill("console-form-bad-priority")
    form.get_by_label("Priority (0-9)").fill("12")
    form.get_by_role("button", name="Create job").click()
    form.locator("#field-priority-errors", has_text="priority").wait_for()
    assert form.get_by_label("Priority (0-9)").get_attribute("aria-invalid") == "true"
    assert "422" in form.locator(".error").inner_text()


def test_create_a_rate_job_from_the_form_at_phone_width(browser, dev: LocalApi):
    with checked_page(browser, 375) as page:
        open_console(page, dev, "/jobs/new")
        form = page.get_by_role("form", name="New job")
        form.get_by_label("Name", exact=True).fill("console-form-phone")
        form.get_by_label("Rate", exact=True).check()
        form.get_by_label("Every").fill("15")
        form.get_by_label("Unit").select_option("minutes")
        form.locator(".schedule-preview li").nth(4).wait_for()
        no_sideways_scroll(page)
        screenshot(page, "job-new-phone")
        form.get_by_role("button", name="Create job").click()
        page.get_by_role("heading", name=re.compile("console-form-phone")).wait_for()
        job = dev.call("GET", f"/v1/jobs/{page.url.rsplit('/', 1)[1]}")
        assert job["schedule"]["rate"] == "15 minutes"
        page.get_by_role("button", name="Edit").click()
        page.get_by_role("dialog").locator(".schedule-preview li").first.wait_for()
        no_sideways_scroll(page)
