"""The audit trail in the console: a job's and a workflow's Audit tab, who created, changed and paused it, and the
Audit page (an admin's every tenant's, filtered by tenant; a tenant's own). Against one `tickwork dev --api-keys`
with an admin (tenant `ops`) and a tenant (`acme`), each behind its own `tickwork console --api-key`, so the
browser is each of them in turn; the local runtime's actor is its tenant (`local-key`)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.conftest import BIN, LocalApi, screenshot
from tests.browser.test_console_forms import no_sideways_scroll
from tests.browser.test_console_pages import create_job, open_console
from tests.browser.test_console_workflow_actions import create_workflow
from tests.processes import CONSOLE_LINE, Proc

pytestmark = pytest.mark.browser

ADMIN_KEY = "console-audit-admin-key-0123456789"
ACME_KEY = "console-audit-acme-key-0123456789"
MARKUP = '<img src="x" onerror="window.audited=1"><b>bold</b>'


@pytest.fixture(scope="module")
def consoles(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, LocalApi]]:
    """The admin's console and acme's, each a `tickwork console` adding its key in front of one `tickwork dev`."""
    keys = tmp_path_factory.mktemp("audit") / "keys.json"
    keys.write_text(json.dumps({ADMIN_KEY: {"tenant": "ops", "admin": True}, ACME_KEY: "acme"}))
    command = [str(BIN / "tickwork"), "dev", "--port", "0", "--moto-port", "0"]
    dev = Proc.start("audit-dev", [*command, "--api-keys", str(keys), "--tick-seconds", "2", "--node-name", "audit"])
    started = [dev]
    try:
        api_url = dev.wait_ready(30).api_url
        console_command = [str(BIN / "tickwork"), "console", "--api-url", api_url, "--port", "0"]
        consoles = {}
        for who, key in (("admin", ADMIN_KEY), ("acme", ACME_KEY)):
            console = Proc.start(f"audit-console-{who}", [*console_command, "--api-key", key])
            started.append(console)
            consoles[who] = LocalApi(console.wait_match(CONSOLE_LINE, 20)["url"], console)
        yield consoles
    finally:
        for proc in reversed(started):
            proc.terminate()


def audit_rows(page: Any) -> Any:
    return page.locator("table.audit tbody tr")


def test_a_job_paused_in_the_console_names_who_paused_it_in_its_audit_tab(sized, consoles):
    page, acme = sized, consoles["acme"]
    job = create_job(acme, name=f"console-audit-job-{page.viewport_size['width']}")
    # A name with markup, changed through the API: its audit record's before/after is shown as text.
    acme.call("PATCH", f"/v1/jobs/{job['id']}", {"name": MARKUP})
    open_console(page, acme, f"/jobs/{job['id']}")
    page.get_by_role("group", name="Job actions").get_by_role("button", name="Pause").click()
    page.locator(".notice", has_text="Paused.").wait_for()
    facts = page.locator("dl.facts")
    facts.get_by_text("Paused by").wait_for()
    assert re.search(r"Paused by\s*acme", facts.inner_text()), facts.inner_text()
    assert re.search(r"Created by\s*acme", facts.inner_text()), facts.inner_text()

    page.get_by_role("tab", name="Audit").click()
    assert "tab=audit" in page.url
    paused = audit_rows(page).filter(has_text="job.pause")
    paused.wait_for()
    assert "acme" in paused.inner_text()
    assert "local-key" in paused.inner_text()
    assert re.search(r"state\s*\"ACTIVE\"\s*→\s*\"PAUSED\"", paused.inner_text()), paused.inner_text()
    # Newest first: the pause, the name's change, the create.
    actions = [row.split("\n")[0] for row in audit_rows(page).locator("td.audit-action").all_inner_texts()]
    assert actions == ["job.pause", "job.update", "job.create"], actions
    renamed = audit_rows(page).filter(has_text="job.update")
    assert MARKUP in renamed.inner_text()
    assert page.locator("main img").count() == 0
    assert page.locator("main table b").count() == 0
    assert page.evaluate("window.audited") is None
    no_sideways_scroll(page)
    if page.viewport_size["width"] > 400:
        screenshot(page, "job-audit")

    # The tab is in the URL: opened again, the page shows it.
    open_console(page, acme, f"/jobs/{job['id']}?tab=audit")
    audit_rows(page).filter(has_text="job.pause").wait_for()


def test_a_workflow_paused_in_the_console_shows_the_pause_in_its_audit_tab(page, consoles):
    acme = consoles["acme"]
    workflow = create_workflow(acme, "console-audit-workflow")
    open_console(page, acme, f"/workflows/{workflow['id']}")
    page.get_by_role("group", name="Workflow actions").get_by_role("button", name="Pause").click()
    page.locator("main h1 .status", has_text="PAUSED").wait_for()
    assert re.search(r"Paused by\s*acme", page.locator(".attribution").inner_text())

    page.get_by_role("tab", name="Audit").click()
    paused = audit_rows(page).filter(has_text="workflow.pause")
    paused.wait_for()
    assert "acme" in paused.inner_text()
    assert audit_rows(page).count() == 2  # and its create

    # A tab list's keys: the arrows move between the tabs, each shown as it takes the focus.
    page.get_by_role("tab", name="Audit").focus()
    page.keyboard.press("ArrowLeft")
    page.get_by_role("heading", name="Runs").wait_for()
    page.wait_for_function("document.activeElement && document.activeElement.textContent === 'Runs'")
    assert page.get_by_role("tab", name="Runs").get_attribute("aria-selected") == "true"
    assert "tab=" not in page.url


def test_an_admin_reads_the_audit_tab_of_a_tenants_job(page, consoles):
    """An admin reading a job of acme's: the records are acme's (the tab asks acme's, from the job's creation)."""
    job = create_job(consoles["acme"], name="console-audit-admin-reads")
    open_console(page, consoles["admin"], f"/jobs/{job['id']}?tab=audit")
    audit_rows(page).filter(has_text="job.create").wait_for()
    assert audit_rows(page).count() == 1


def test_the_admin_audit_page_filtered_by_tenant_shows_only_that_tenants_records(sized, consoles):
    page, admin, acme = sized, consoles["admin"], consoles["acme"]
    width = page.viewport_size["width"]
    own = create_job(admin, name=f"console-audit-ops-{width}")
    theirs = create_job(acme, name=f"console-audit-acme-{width}")
    open_console(page, admin, "/jobs")
    page.get_by_role("navigation", name="Sections").get_by_role("link", name="Audit").click()
    page.get_by_role("heading", name="Audit").wait_for()
    audit_rows(page).filter(has_text=own["id"]).wait_for()
    audit_rows(page).filter(has_text=theirs["id"]).wait_for()

    # The Audit page's own filter, in the page (the header's tenant switcher, an admin's, is labelled Tenant too).
    page.get_by_role("main").get_by_label("Tenant").fill("acme")
    page.get_by_role("main").get_by_label("Tenant").press("Enter")
    audit_rows(page).filter(has_text=own["id"]).wait_for(state="detached")
    assert "tenant=acme" in page.url
    audit_rows(page).filter(has_text=theirs["id"]).wait_for()
    tenants = set(audit_rows(page).locator("td.audit-tenant").all_inner_texts())
    assert {t.split("\n")[-1].strip() for t in tenants} == {"acme"}, tenants
    no_sideways_scroll(page)
    screenshot(page, "audit-admin" if width > 400 else "audit-admin-phone")

    page.get_by_label("Action").fill("job.nothing")
    page.get_by_label("Action").press("Enter")
    page.get_by_text("No audit records match.").wait_for()


def test_a_tenant_sees_its_own_audit_records_without_the_admin_view(page, consoles):
    acme, admin = consoles["acme"], consoles["admin"]
    own = create_job(acme, name="console-audit-tenant-own")
    other = create_job(admin, name="console-audit-tenant-other")
    open_console(page, acme, "/audit")
    page.get_by_text("Your tenant's records").wait_for()
    audit_rows(page).filter(has_text=own["id"]).wait_for()
    assert audit_rows(page).filter(has_text=other["id"]).count() == 0
    assert page.get_by_label("Tenant").count() == 0
    assert page.get_by_role("navigation", name="Sections").get_by_role("link", name="Audit").count() == 0
    # The admin's console, for contrast, has the entry.
    open_console(page, admin, "/jobs")
    page.get_by_role("navigation", name="Sections").get_by_role("link", name="Audit").wait_for()


def test_the_audit_page_shows_the_apis_problem(page, consoles):
    open_console(page, consoles["admin"], "/audit?from=yesterday")
    alert = page.get_by_role("alert")
    alert.wait_for()
    # The problem's status and title, and its field error, under the field it names.
    assert alert.inner_text().startswith("422 · Invalid input"), alert.inner_text()
    assert alert.locator("li code").all_inner_texts() == ["from"]
    assert "yesterday" in alert.locator("li").inner_text()


def test_a_jobs_audit_tab_pages_with_the_apis_cursor(page, consoles):
    acme = consoles["acme"]
    job = create_job(acme, name="console-audit-pages")
    for n in range(1, 21):
        acme.call("PATCH", f"/v1/jobs/{job['id']}", {"name": f"console-audit-pages-{n}"})
    open_console(page, acme, f"/jobs/{job['id']}?tab=audit")
    pager = page.get_by_role("navigation", name="Audit pages")
    audit_rows(page).nth(19).wait_for()
    assert audit_rows(page).count() == 20
    newest = audit_rows(page).first.inner_text()
    assert re.search(r'name\s*"console-audit-pages-19"\s*→\s*"console-audit-pages-20"', newest), newest
    pager.get_by_role("button", name="Next →").click()
    audit_rows(page).filter(has_text="job.create").wait_for()
    assert audit_rows(page).count() == 1
    assert pager.get_by_role("button", name="Next →").is_disabled()
    pager.get_by_role("button", name="← Previous").click()
    audit_rows(page).nth(19).wait_for()


@pytest.mark.parametrize("kind", ["jobs", "workflows"])
def test_an_audit_tab_shows_its_empty_state_and_the_apis_problem(page, consoles, kind):
    """What the API answers for the resource's records, stood in for by the browser: none, then a problem."""
    acme = consoles["acme"]
    item = create_job(acme, name="console-audit-states") if kind == "jobs" else create_workflow(acme, "audit-states")
    answer: dict[str, Any] = {"status": 200, "body": {"items": [], "next_cursor": None}}
    page.route(
        lambda url: "/v1/audit?" in url and "resource=" in url,
        lambda route: route.fulfill(
            status=answer["status"],
            content_type="application/json" if answer["status"] == 200 else "application/problem+json",
            body=json.dumps(answer["body"]),
        ),
    )
    open_console(page, acme, f"/{kind}/{item['id']}?tab=audit")
    page.get_by_text("No audit records match.").wait_for()

    answer.update(status=503, body={"title": "Service Unavailable", "status": 503, "detail": "audit is resting"})
    page.get_by_role("tab", name="Runs").click()
    page.get_by_role("tab", name="Audit").click()
    alert = page.get_by_role("alert")
    alert.wait_for()
    assert "503 · Service Unavailable" in alert.inner_text()
    assert "audit is resting" in alert.inner_text()
    assert page.get_by_text("No audit records match.").count() == 0
