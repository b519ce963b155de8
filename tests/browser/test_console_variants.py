"""A job's variants on its console page (docs/versions.md): each one's share and runs over the window, and a
variant rolled back from the panel, its why shown."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import LocalApi
from tests.browser.test_console_pages import create_job, finished_run, open_console

pytestmark = pytest.mark.browser


def test_the_job_page_shows_its_variants_and_rolls_one_back(page: Any, dev: LocalApi) -> None:
    job = create_job(
        dev,
        name="console-variants",
        payload={"greeting": "hi"},
        variants=[{"name": "v2", "weight": 30, "payload": {"greeting": "hej"}}],
    )
    for _ in range(3):
        finished_run(dev, dev.call("POST", f"/v1/jobs/{job['id']}/trigger")["id"])
    open_console(page, dev, f"/jobs/{job['id']}")
    table = page.get_by_role("table", name="Variants")
    table.locator("tbody tr").first.wait_for()
    rows = table.locator("tbody tr")
    assert rows.count() == 2
    assert rows.nth(0).locator("td").nth(0).inner_text() == "baseline"
    assert rows.nth(1).locator("td").nth(1).inner_text() == "30 %"
    counted = int(rows.nth(0).locator("td").nth(2).inner_text()) + int(rows.nth(1).locator("td").nth(2).inner_text())
    assert counted == 3
    rows.nth(1).get_by_role("button", name="Roll back").click()
    page.get_by_text("Rolled back:").wait_for()
    assert dev.call("GET", f"/v1/jobs/{job['id']}")["variants"] == []
    assert "rolled back by hand" in page.locator("p.notice", has_text="Rolled back:").inner_text()
