"""Free-text search over the jobs' names and tags, and names (not ids) in the DLQ and the breadcrumbs, at
desktop and phone widths."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import LocalApi
from tests.browser.test_console_pages import create_job, finished_run, open_console

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def searched(dev: LocalApi) -> dict[str, Any]:
    return {
        "billing": create_job(dev, name="console-search-invoices", tags={"team": "billing-core"}),
        "data": create_job(dev, name="console-search-export", tags={"team": "data"}),
        "failed": create_job(
            dev,
            name="console-search-dlq",
            tags={"team": "ops"},
            payload={"fail_attempts": 99},
            retry={"max_attempts": 1},
        ),
    }


def assert_listed(page: Any, names: list[str]) -> None:
    """The list shows exactly these names; retried until it does (the list refreshes itself, and a read between
    two renders would see none)."""
    from playwright.sync_api import expect

    expect(page.locator("main table tbody tr td[data-label=Name]")).to_have_text(names)


def test_search_finds_jobs_by_a_word_inside_their_name_or_tags(sized, dev: LocalApi, searched):
    page = sized
    open_console(page, dev, "/jobs")
    page.get_by_role("link", name="console-search-export").wait_for()
    page.get_by_label("Search").fill("BILLING")
    page.get_by_label("Search").press("Enter")
    page.get_by_role("link", name="console-search-export").wait_for(state="detached")
    page.get_by_role("link", name="console-search-invoices").wait_for()
    assert_listed(page, ["console-search-invoices"])

    open_console(page, dev, "/jobs?q=search-ex")
    page.get_by_role("link", name="console-search-invoices").wait_for(state="detached")
    page.get_by_role("link", name="console-search-export").wait_for()
    assert_listed(page, ["console-search-export"])


def test_the_dlq_and_a_runs_breadcrumbs_name_the_job(sized, dev: LocalApi, searched):
    page = sized
    job = searched["failed"]
    run = finished_run(dev, dev.call("POST", f"/v1/jobs/{job['id']}/trigger")["id"])
    assert run["status"] == "FAILED"
    open_console(page, dev, "/dlq")
    row = page.locator("main table tbody tr", has_text=run["id"])
    row.get_by_role("link", name="console-search-dlq").wait_for()
    assert row.get_by_role("link", name="console-search-dlq").get_attribute("href") == f"#/jobs/{job['id']}"

    open_console(page, dev, f"/runs/{run['id']}")
    page.locator(".crumbs").get_by_role("link", name="console-search-dlq").wait_for()
