"""The console's calendars and freezes, its time-zone switch, and its bulk actions, in Chromium against
`tickwork dev`: a freeze created and lifted from the console holds a run then lets it go; a job's blocked instants
shown in its own zone across a DST change, its calendar edited and what it blocks this week drawn; the same
instant re-rendered in each zone, the choice remembered, a form's date-time input read in it; three jobs paused
by tag in one action; FAILED runs retried from the Runs page."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from tests.browser.conftest import LocalApi, screenshot
from tests.browser.test_console_pages import at, create_job, finished_run, open_console
from tests.processes import wait_for

pytestmark = pytest.mark.browser

PARIS = ZoneInfo("Europe/Paris")


def wall(instant: str, zone: ZoneInfo) -> str:
    """An instant as the console shows it in a zone other than UTC: `YYYY-MM-DD HH:MM:SS GMT+h`."""
    local = datetime.fromisoformat(instant.replace("Z", "+00:00")).astimezone(zone)
    offset = local.utcoffset()
    assert offset is not None
    hours, rest = divmod(int(offset.total_seconds()), 3600)
    suffix = f"GMT{'+' if hours >= 0 else '-'}{abs(hours)}" + (f":{rest // 60:02d}" if rest else "")
    return f"{local:%Y-%m-%d %H:%M:%S} {suffix}" if hours or rest else f"{local:%Y-%m-%d %H:%M:%S} GMT"


def utc(instant: str) -> str:
    return datetime.fromisoformat(instant.replace("Z", "+00:00")).strftime("%Y-%m-%d %H:%M:%S")


def test_create_and_lift_a_freeze_from_the_console_holds_a_run_then_it_runs(page, dev: LocalApi):
    """docs/operations.md: under a freeze whose blocked occurrences run at its end (DEFER), a job's occurrence
    inside it waits (nothing is claimed past it); lifted early, the occurrence it held runs now."""
    from playwright.sync_api import expect

    team = "freeze-console"
    open_console(page, dev, "/freezes")
    page.locator("summary", has_text="New freeze").click()
    form = page.get_by_role("form", name="New freeze")
    form.get_by_label("Tags (key=value, every one)").fill(f"team={team}")
    form.get_by_label("Reason").fill("deploy 42")
    form.get_by_label("Occurrences it blocks").select_option("DEFER")
    form.get_by_role("button", name="Freeze").click()
    row = page.locator("main table tbody tr", has_text="deploy 42")
    expect(row).to_contain_text("active")
    expect(row).to_contain_text(f"team={team}")
    expect(row).to_contain_text("run at its end")
    screenshot(page, "freezes")
    (freeze,) = [f for f in dev.call("GET", "/v1/freezes")["items"] if f["reason"] == "deploy 42"]

    job = create_job(dev, name="console-frozen", tags={"team": team}, schedule={"at": at(20)})
    open_console(page, dev, f"/jobs/{job['id']}")
    held = page.get_by_role("list", name="Next 5 instants").locator("li")
    expect(held).to_have_count(1)
    expect(held).to_contain_text(f"blocked by freeze: runs at {utc(freeze['until'])}")

    # Past its time nothing has run (real time: the node's clock is the machine's).
    due = datetime.fromisoformat(job["schedule"]["at"].replace("Z", "+00:00")).timestamp()
    time.sleep(max(0.0, due + 5 - time.time()))
    runs = dev.call("GET", f"/v1/jobs/{job['id']}/runs")["items"]
    assert [r["status"] for r in runs if r["status"] not in ("QUEUED",)] == [], runs

    open_console(page, dev, "/freezes")
    row.get_by_role("button", name=re.compile("Lift")).click()
    page.get_by_role("dialog", name="Lift this freeze?").get_by_role("button", name="Lift").click()
    expect(page.get_by_text("Lifted: deploy 42.")).to_be_visible()
    expect(row).to_contain_text("lifted")
    expect(row.get_by_role("button", name=re.compile("Lift"))).to_have_count(0)
    run = wait_for(
        lambda: next(iter(dev.call("GET", f"/v1/jobs/{job['id']}/runs")["items"]), None), 20, 0.3, "the held run"
    )
    assert finished_run(dev, run["id"])["status"] == "SUCCEEDED"


def test_a_run_claimed_before_a_freeze_is_held_past_its_time_and_released_by_the_lift(page, dev: LocalApi):
    """docs/operations.md: a run claimed before a DEFER freeze waits, its executor holding it, and runs at the lift."""
    from playwright.sync_api import expect

    team = "freeze-claimed"
    job = create_job(dev, name="console-claimed-frozen", tags={"team": team}, schedule={"at": at(25)})
    run_id = wait_for(
        lambda: next(iter(dev.call("GET", f"/v1/jobs/{job['id']}/runs")["items"]), None), 10, 0.3, "the run's claim"
    )["id"]
    open_console(page, dev, "/freezes")
    page.locator("summary", has_text="New freeze").click()
    form = page.get_by_role("form", name="New freeze")
    form.get_by_label("Tags (key=value, every one)").fill(f"team={team}")
    form.get_by_label("Reason").fill("deploy 43")
    form.get_by_label("Occurrences it blocks").select_option("DEFER")
    form.get_by_role("button", name="Freeze").click()
    row = page.locator("main table tbody tr", has_text="deploy 43")
    expect(row).to_contain_text("active")
    (freeze,) = [f for f in dev.call("GET", "/v1/freezes")["items"] if f["reason"] == "deploy 43"]

    # Past its time it is held, marked with the freeze (real time: the node's clock is the machine's).
    due = datetime.fromisoformat(job["schedule"]["at"].replace("Z", "+00:00")).timestamp()
    time.sleep(max(0.0, due + 6 - time.time()))
    held = dev.call("GET", f"/v1/runs/{run_id}")
    assert (held["status"], held["blocked_by"]) == ("QUEUED", freeze["id"]), held

    row.get_by_role("button", name=re.compile("Lift")).click()
    page.get_by_role("dialog", name="Lift this freeze?").get_by_role("button", name="Lift").click()
    expect(page.get_by_text("Lifted: deploy 43.")).to_be_visible()
    lifted_at = time.time()
    assert finished_run(dev, run_id, timeout=30)["status"] == "SUCCEEDED"
    assert time.time() - lifted_at < 30  # at the lift, not at the end of its 15-minute deferral


def test_a_job_s_blocked_instants_in_its_own_zone_across_a_dst_change_and_its_calendars_listed(page, dev: LocalApi):
    from playwright.sync_api import expect

    # A calendar made from the console: the three days around Paris's spring-forward of 2027.
    open_console(page, dev, "/calendars/new")
    form = page.get_by_role("form", name="New calendar")
    form.get_by_label("Name").fill("console spring forward")
    form.get_by_label("Time zone").fill("Europe/Paris")
    form.get_by_label("Windows (JSON)").fill('[{"dates": ["2027-03-27", "2027-03-28", "2027-03-29"]}]')
    form.get_by_role("button", name="Create calendar").click()
    expect(page.get_by_role("heading", name="console spring forward")).to_be_visible()
    calendar_id = page.url.rsplit("/", 1)[-1]

    job = create_job(
        dev,
        name="console-paris-0230",
        schedule={"cron": "30 2 * * *", "timezone": "Europe/Paris"},
        calendars=[calendar_id],
    )
    preview = dev.call("GET", f"/v1/jobs/{job['id']}/preview?count=200")["items"]
    blocked = [item for item in preview if item.get("blocked")]
    assert [item["local"][:10] for item in blocked] == ["2027-03-27", "2027-03-28", "2027-03-29"]

    open_console(page, dev, f"/jobs/{job['id']}")
    facts = page.locator("dl.facts")
    expect(facts.get_by_role("list", name="Calendars")).to_contain_text("console spring forward")
    shown = page.get_by_role("list", name="Next blocked instants").locator("li")
    expect(shown).to_have_count(3)
    for item, expected in zip(shown.all(), blocked, strict=True):
        expect(item).to_contain_text(f"{utc(expected['at'])} UTC")
        expect(item).to_contain_text("blocked by calendar: skipped")

    page.get_by_label("Time zone").select_option("job")
    in_paris = [wall(item["at"], PARIS) for item in blocked]
    assert [text[-5:] for text in in_paris] == ["GMT+1", "GMT+2", "GMT+2"]  # across the change
    for item, text in zip(shown.all(), in_paris, strict=True):
        expect(item).to_contain_text(text)
    screenshot(page, "job-blocked-instants")

    # The calendar's own page: edited (replaced whole) to black out tomorrow in Paris, which its week strip draws
    # in the zone chosen (UTC here, no job's zone on this page): 23:00 today to 23:00 tomorrow, Paris in winter.
    facts.get_by_role("link", name="console spring forward").click()
    page.get_by_role("link", name="Edit").click()
    form = page.get_by_role("form", name="Edit calendar")
    expect(form.get_by_label("Name")).to_have_value("console spring forward")
    # Tomorrow by the strip's zone (UTC): in Paris it is already tomorrow from 23:00 UTC in winter.
    tomorrow = (datetime.now(UTC) + timedelta(days=1)).date().isoformat()
    form.get_by_label("Windows (JSON)").fill(f'[{{"dates": ["{tomorrow}"]}}]')
    form.get_by_role("button", name="Save calendar").click()
    expect(page.get_by_role("list", name="Windows")).to_contain_text(f"dates {tomorrow}")
    assert dev.call("GET", f"/v1/calendars/{calendar_id}")["version"] == 2
    page.get_by_label("Time zone").select_option("utc")
    days = page.get_by_role("list", name="Blocked this week").locator("li")
    expect(days).to_have_count(7)
    offset = datetime.fromisoformat(f"{tomorrow}T00:00").replace(tzinfo=PARIS).utcoffset()
    assert offset is not None
    starts = f"{24 - int(offset.total_seconds()) // 3600:02d}:00"
    expect(days.nth(0)).to_have_attribute("aria-label", re.compile(f"blocked {starts}\N{EN DASH}24:00$"))
    expect(days.nth(1)).to_have_attribute("aria-label", re.compile(f"blocked 00:00\N{EN DASH}{starts}$"))
    expect(days.nth(2)).to_have_attribute("aria-label", re.compile("nothing blocked$"))
    expect(page.locator(".week-blocked")).to_have_count(2)
    screenshot(page, "calendar-week-strip")

    # And its deletion from the console.
    page.get_by_role("button", name="Delete").click()
    page.get_by_role("dialog", name="Delete this calendar?").get_by_role("button", name="Delete").click()
    expect(page.get_by_role("heading", name="Calendars")).to_be_visible()
    expect(page.locator("main table")).not_to_contain_text("console spring forward")
    assert all(c["id"] != calendar_id for c in dev.call("GET", "/v1/calendars")["items"])


def test_switch_time_zones_and_see_the_same_instant_re_rendered_the_choice_remembered(browser, dev: LocalApi):
    from playwright.sync_api import expect

    job = create_job(dev, name="console-zones", schedule={"cron": "0 9 * * *", "timezone": "Asia/Tokyo"})
    next_run = dev.call("GET", f"/v1/jobs/{job['id']}")["next_run_at"]
    context = browser.new_context(viewport={"width": 1280, "height": 800}, timezone_id="America/New_York")
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        open_console(page, dev, f"/jobs/{job['id']}")
        when = page.locator("dl.facts time").first  # Next run
        switch = page.get_by_label("Time zone")
        expect(when).to_have_text(utc(next_run))
        expect(when).to_have_attribute("datetime", next_run)

        switch.select_option("browser")
        expect(when).to_have_text(wall(next_run, ZoneInfo("America/New_York")))
        switch.select_option("job")
        expect(when).to_have_text(wall(next_run, ZoneInfo("Asia/Tokyo")))
        assert wall(next_run, ZoneInfo("Asia/Tokyo")).endswith("09:00:00 GMT+9")

        # Remembered: another page, and a reload, show the browser's zone once chosen.
        switch.select_option("browser")
        page.reload()
        expect(page.get_by_label("Time zone")).to_have_value("browser")
        expect(page.locator("dl.facts time").first).to_have_text(wall(next_run, ZoneInfo("America/New_York")))
        open_console(page, dev, "/jobs")
        expect(page.locator("main thead")).to_contain_text("(America/New_York)")

        # A form's date-time inputs are in the zone shown too, and say so: the Runs page's From, typed as New
        # York's wall time, is searched (and kept in the URL) as its UTC instant, and shown again in each zone.
        open_console(page, dev, "/runs")
        search = page.get_by_role("form", name="Filter runs")
        start = search.get_by_label("From (America/New_York)")
        start.fill("2026-07-01T08:00")
        search.get_by_role("button", name="Search").click()
        expect(page).to_have_url(re.compile(r"from=2026-07-01T12%3A00%3A00\.000Z"))
        expect(start).to_have_value(re.compile(r"^2026-07-01T08:00(:00)?$"))
        page.get_by_label("Time zone").select_option("utc")
        expect(search.get_by_label("From (UTC)")).to_have_value(re.compile(r"^2026-07-01T12:00(:00)?$"))
        open_console(page, dev, "/jobs")
        expect(page.locator("main thead")).to_contain_text("(UTC)")
    finally:
        context.close()
    assert not errors, errors


def test_pause_three_jobs_by_tag_from_the_jobs_page_in_one_action(page, dev: LocalApi):
    from playwright.sync_api import expect

    team = "bulk-console"
    tagged = [create_job(dev, name=f"console-bulk-{i}", tags={"team": team}) for i in range(3)]
    other = create_job(dev, name="console-bulk-other", tags={"team": "elsewhere"})

    open_console(page, dev, f"/jobs?tag=team%3D{team}")
    expect(page.locator("main table tbody tr")).to_have_count(3)
    page.get_by_role("group", name="Every job tagged so").get_by_role("button", name="Pause all…").click()
    dialog = page.get_by_role("dialog", name=f"Pause every job tagged team={team}?")
    dialog.get_by_role("button", name="Pause all").click()
    expect(page.get_by_text("Paused 3 jobs.")).to_be_visible()
    assert {dev.call("GET", f"/v1/jobs/{job['id']}")["state"] for job in tagged} == {"PAUSED"}
    assert dev.call("GET", f"/v1/jobs/{other['id']}")["state"] == "ACTIVE"
    expect(page.locator("main table tbody")).not_to_contain_text("ACTIVE")
    screenshot(page, "jobs-bulk-pause")

    # Again: nothing changes, and the console says so.
    page.get_by_role("group", name="Every job tagged so").get_by_role("button", name="Pause all…").click()
    dialog.get_by_role("button", name="Pause all").click()
    expect(page.get_by_text("Paused 0 jobs; 3 already so.")).to_be_visible()


def test_retry_selected_and_all_matching_failed_runs_from_the_runs_page(page, dev: LocalApi):
    from playwright.sync_api import expect

    team = "retry-console"
    broken = create_job(
        dev, name="console-retry", payload={"fail_attempts": 99}, retry={"max_attempts": 1}, tags={"team": team}
    )
    runs = [finished_run(dev, dev.call("POST", f"/v1/jobs/{broken['id']}/trigger")["id"]) for _ in range(3)]
    assert {run["status"] for run in runs} == {"FAILED"}

    open_console(page, dev, f"/runs?status=FAILED&tag=team%3D{team}")
    rows = page.locator("main table tbody tr")
    expect(rows).to_have_count(3)
    page.get_by_label(f"Select {runs[0]['id']}").check()
    page.get_by_role("button", name="Retry selected (1)").click()
    page.get_by_role("dialog", name="Retry 1 selected run?").get_by_role("button", name="Retry").click()
    expect(page.get_by_text("Re-queued 1 run.")).to_be_visible()

    def failed_again(expected: list[int]) -> Any:
        found = [dev.call("GET", f"/v1/runs/{run['id']}") for run in runs]
        done = all(r["status"] == "FAILED" for r in found) and [r["requeues"] for r in found] == expected
        return found if done else None

    wait_for(lambda: failed_again([1, 0, 0]), 30, 0.5, "the selected run retried and FAILED again")
    page.get_by_role("button", name="Retry all matching…").click()
    page.get_by_role("dialog", name="Retry every FAILED run matching?").get_by_role("button", name="Retry").click()
    expect(page.get_by_text("Re-queued 3 runs.")).to_be_visible()
    wait_for(lambda: failed_again([2, 1, 1]), 30, 0.5, "every run retried once more, each FAILED again")
    records = dev.call("GET", "/v1/audit?action=run.retry&limit=100")["items"]
    retried = sorted(r["resource"]["id"] for r in records if r["resource"]["id"] in {run["id"] for run in runs})
    assert retried == sorted([runs[0]["id"], *(run["id"] for run in runs)])  # each retry audited once


def test_at_phone_width_the_new_pages_do_not_scroll_sideways(browser, dev: LocalApi):
    calendar = dev.call(
        "POST",
        "/v1/calendars",
        {"name": "console-phone-calendar", "timezone": "Europe/Paris", "windows": [{"dates": ["2027-12-25"]}]},
    )
    job = create_job(dev, name="console-phone-calendared", calendars=[calendar["id"]], tags={"team": "phone"})
    dev.call("POST", "/v1/freezes", {"selector": {"job_ids": [job["id"]]}, "for_seconds": 600, "reason": "phone"})
    context = browser.new_context(viewport={"width": 375, "height": 800})
    page = context.new_page()
    try:
        for route in (
            "/calendars",
            f"/calendars/{calendar['id']}",
            "/calendars/new",
            "/freezes",
            f"/jobs/{job['id']}",
            "/jobs?tag=team%3Dphone",
            "/runs?status=FAILED",
        ):
            page.goto(f"{dev.url}/console/#{route}")
            page.locator("main h1").wait_for()
            page.wait_for_load_state("networkidle")
            widths = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
            assert widths[0] <= widths[1], f"{route} scrolls sideways: {widths}"
    finally:
        context.close()
