"""An admin's tenant switcher: in the header of every page, shown to an admin only (GET /v1/me); it scopes every
page's reads (the API's `tenant`): another tenant's jobs, or every tenant's (`*`), each saying whose. A tenant sees
no switcher. `tickwork dev` with an API keys file: each browser context sends one caller's key."""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from tests.browser.conftest import LocalApi, checked_page
from tests.browser.test_console_pages import open_console

pytestmark = pytest.mark.browser

KEYS = {"admin-key": {"tenant": "ops", "admin": True}, "acme-key": "acme", "globex-key": "globex"}


@pytest.fixture(scope="module")
def dev_options(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    keys = tmp_path_factory.mktemp("keys") / "keys.json"
    keys.write_text(json.dumps(KEYS))
    return ["--api-keys", str(keys)]


def create_job(dev: LocalApi, key: str, name: str) -> dict[str, Any]:
    body = json.dumps({"name": name, "type": "echo", "schedule": {"cron": "0 3 * * *"}}).encode()
    headers = {"X-Api-Key": key, "Content-Type": "application/json"}
    request = urllib.request.Request(f"{dev.url}/v1/jobs", data=body, method="POST", headers=headers)
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 201
        return json.loads(response.read())


@contextmanager
def page_of(browser: Any, key: str) -> Iterator[Any]:
    with checked_page(browser, headers={"X-Api-Key": key}) as opened:
        yield opened


def switch_to(page: Any, tenant: str) -> None:
    switcher = page.get_by_role("form", name="Tenant switcher")
    switcher.get_by_label("Tenant").fill(tenant)
    switcher.get_by_label("Tenant").press("Enter")


def test_an_admin_switches_every_page_to_another_tenant_and_to_every_tenant(browser, dev: LocalApi):
    from playwright.sync_api import expect

    own = create_job(dev, "admin-key", "switcher-ops-job")
    acme = create_job(dev, "acme-key", "switcher-acme-job")
    create_job(dev, "globex-key", "switcher-globex-job")
    with page_of(browser, "admin-key") as page:
        open_console(page, dev, "/jobs")
        page.get_by_role("link", name="switcher-ops-job").wait_for()
        assert page.get_by_role("link", name="switcher-acme-job").count() == 0

        switch_to(page, "acme")
        page.get_by_role("link", name="switcher-acme-job").wait_for()
        page.get_by_role("link", name="switcher-ops-job").wait_for(state="detached")
        assert page.get_by_role("link", name="switcher-globex-job").count() == 0
        assert page.locator("td[data-label='Tenant']").all_inner_texts() == ["acme"]

        # The scope holds on every page: the Runs page, and acme's job opened from the list.
        open_console(page, dev, "/runs")
        page.get_by_role("heading", name="Runs").wait_for()
        open_console(page, dev, "/jobs")
        page.get_by_role("link", name="switcher-acme-job").click()
        page.get_by_role("heading", name="switcher-acme-job").wait_for()
        assert acme["id"] in page.url

        open_console(page, dev, "/jobs")
        switch_to(page, "*")
        for name in ("switcher-ops-job", "switcher-acme-job", "switcher-globex-job"):
            page.get_by_role("link", name=name).wait_for()
        tenants = set(page.locator("td[data-label='Tenant']").all_inner_texts())
        assert {"ops", "acme", "globex"} <= tenants
        for route, heading in (("/runs", "Runs"), ("/dlq", "Dead letters"), ("/workflows", "Workflows")):
            open_console(page, dev, route)
            page.get_by_role("heading", name=heading).first.wait_for()
            page.get_by_role("columnheader", name="Tenant").wait_for()

        open_console(page, dev, "/jobs")
        switch_to(page, "")
        # Retrying assertions: the list is drawn anew as the scope changes, and a link can be gone for a moment
        # (between two drawings) before the final one.
        expect(page.get_by_role("link", name="switcher-acme-job")).to_have_count(0)
        expect(page.get_by_role("link", name=own["name"])).to_have_count(1)
        expect(page.locator("td[data-label='Tenant']")).to_have_count(0)


def test_a_page_drawn_after_the_admin_moved_to_the_switcher_leaves_the_focus_and_the_typing_there(browser, dev):
    """Navigating moves the focus to the new page's heading once its data is drawn: not if the user has moved the
    focus since (here, into the switcher while the job's page was still loading), which would send their typing
    and their Enter to the heading instead of the switcher."""
    own = create_job(dev, "admin-key", "switcher-ops-slow")
    create_job(dev, "acme-key", "switcher-acme-slow")
    held: list[Any] = []
    the_job = f"/v1/jobs/{own['id']}"
    with page_of(browser, "admin-key") as page:
        open_console(page, dev, "/jobs")
        page.route(lambda url: url.split("?")[0].endswith(the_job), lambda route: held.append(route))  # noqa: PLW0108 (Playwright tags a handler it is given: a bound builtin takes no attribute)
        with page.expect_request(lambda request: request.url.split("?")[0].endswith(the_job)):
            page.get_by_role("link", name="switcher-ops-slow").click()
        tenant = page.get_by_role("form", name="Tenant switcher").get_by_label("Tenant")
        tenant.focus()
        page.keyboard.type("acme")
        assert held, "the job page's read was not held: the test would prove nothing"
        for route in held:
            route.continue_()
        page.get_by_role("heading", name=re.compile("switcher-ops-slow")).wait_for()
        page.wait_for_timeout(300)  # the page's heading-focus poll runs every 20 ms: time for it to act wrongly
        assert page.evaluate("[document.activeElement.name, document.activeElement.value]") == ["tenant", "acme"]
        page.keyboard.press("Enter")
        open_console(page, dev, "/jobs")
        page.get_by_role("link", name="switcher-acme-slow").wait_for()


def test_a_tenant_sees_no_switcher_and_only_its_own_jobs(browser, dev: LocalApi):
    create_job(dev, "acme-key", "switcher-acme-own")
    create_job(dev, "globex-key", "switcher-globex-other")
    with page_of(browser, "acme-key") as page:
        with page.expect_response(lambda response: "/v1/me" in response.url):
            open_console(page, dev, "/jobs")
        page.get_by_role("link", name="switcher-acme-own").wait_for()
        assert page.get_by_role("form", name="Tenant switcher").count() == 0
        assert page.get_by_role("link", name="switcher-globex-other").count() == 0
        assert page.get_by_role("link", name="Audit").count() == 0  # the admin's section


def test_at_phone_width_the_admins_switcher_wraps_in_the_header_and_no_page_scrolls_sideways(browser, dev: LocalApi):
    create_job(dev, "acme-key", "switcher-acme-phone")
    with checked_page(browser, width=375, headers={"X-Api-Key": "admin-key"}) as page:
        open_console(page, dev, "/jobs")
        switch_to(page, "*")
        page.get_by_role("link", name="switcher-acme-phone").wait_for()
        widths = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        assert widths[0] <= widths[1], f"the jobs page scrolls sideways: {widths}"
