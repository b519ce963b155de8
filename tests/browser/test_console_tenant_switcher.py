"""An admin's tenant switcher on the Jobs page: the `Tenant` filter lists that tenant's jobs (the API's `tenant`
parameter). `tickwork dev`, open, is tenant `default`, an admin."""

from __future__ import annotations

import pytest

from tests.browser.conftest import LocalApi
from tests.browser.test_console_pages import create_job, open_console
from tests.browser.test_console_search_and_names import assert_listed

pytestmark = pytest.mark.browser


def test_an_admin_switches_the_jobs_page_to_another_tenant_and_back(page, dev: LocalApi):
    create_job(dev, name="console-switcher-own")
    open_console(page, dev, "/jobs")
    page.get_by_role("link", name="console-switcher-own").wait_for()
    page.get_by_label("Tenant").fill("acme")
    page.get_by_label("Tenant").press("Enter")
    page.get_by_role("link", name="console-switcher-own").wait_for(state="detached")
    page.get_by_text("No jobs match.").wait_for()
    assert "tenant=acme" in page.url

    open_console(page, dev, "/jobs?tenant=default")
    page.get_by_role("link", name="console-switcher-own").wait_for()
    assert_listed(page, ["console-switcher-own"])
