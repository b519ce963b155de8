"""The Jobs page's Regions block (docs/regions.md, "Operations"): on a node deployed as RegionMode eventual, the mode,
this region and its role, the active region and epoch, and the replication lag or why it is unknown, from GET
/v1/health; after a failover, the region shown active under epoch 1."""

from __future__ import annotations

import pytest

from tests.browser.conftest import LocalApi
from tests.browser.test_console_pages import open_console

pytestmark = pytest.mark.browser

DEV_OPTIONS = [
    "--parameter",
    "RegionMode=eventual",
    "--parameter",
    "GlobalTableName=tickwork-JobsTable",
    "--parameter",
    "GlobalTableRegions=us-east-1,us-west-2",
]


def test_the_regions_block_shows_the_roles_and_the_lag(page, dev: LocalApi):
    from playwright.sync_api import expect

    open_console(page, dev, "/jobs")
    block = page.get_by_role("region", name="Regions")
    expect(block).to_contain_text("eventual")
    expect(block).to_contain_text("us-east-1 · passive")
    expect(block).to_contain_text("none yet")
    expect(block).to_contain_text("unknown: no ReplicationLatency data in the last 5 minutes")
    expect(page.get_by_role("region", name="Stuck runs")).to_be_visible()

    dev.call("POST", "/v1/regions/failover", {"to": "us-east-1"})
    page.reload()
    expect(block).to_contain_text("us-east-1 · active")
    expect(block.locator("dd").nth(3)).to_contain_text("1 · since")
