"""The Runs page: a failed run found among every job's runs by the filters, which live in the page's URL, at desktop
and phone widths."""

from __future__ import annotations

import re

import pytest

from tests.browser.conftest import LocalApi, screenshot
from tests.browser.test_console_pages import create_job, finished_run, open_console

pytestmark = pytest.mark.browser


def test_find_a_failed_run_from_the_runs_page_by_its_filters(sized, dev: LocalApi):
    from playwright.sync_api import expect

    page = sized
    team = f"search-{page.viewport_size['width']}"  # each width's runs apart (the node is the module's)
    ok = create_job(dev, name="console-search-ok", tags={"team": team})
    broken = create_job(
        dev,
        name="console-search-broken",
        payload={"fail_attempts": 99},
        retry={"max_attempts": 1},
        tags={"team": team},
    )
    passed = finished_run(dev, dev.call("POST", f"/v1/jobs/{ok['id']}/trigger")["id"])
    failed = finished_run(dev, dev.call("POST", f"/v1/jobs/{broken['id']}/trigger")["id"])
    assert (passed["status"], failed["status"]) == ("SUCCEEDED", "FAILED")

    open_console(page, dev, "/runs")
    page.get_by_role("navigation", name="Sections").get_by_role("link", name="Runs").wait_for()
    form = page.get_by_role("form", name="Filter runs")
    form.get_by_label("Status").select_option("FAILED")
    form.get_by_label("Tag").fill(f"team={team}")
    form.get_by_role("button", name="Search").click()

    expect(page).to_have_url(re.compile(rf"#/runs\?status=FAILED&tag=team%3D{team}$"))
    rows = page.locator("main table tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text(failed["id"])
    expect(rows.first).to_contain_text("EchoFailure")
    screenshot(page, "runs-search")

    # The URL is the search: opened afresh, the same run; its link leads to its page.
    page.goto(page.url)
    expect(page.locator("main table tbody tr")).to_have_count(1)
    page.get_by_role("link", name=failed["id"]).click()
    expect(page.get_by_role("heading", name=re.compile("Run"))).to_contain_text(failed["id"])
