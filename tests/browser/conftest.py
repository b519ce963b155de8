"""Browser tests: the web console in Debian's Chromium, driven by Playwright, against one `tickwork dev` per
module (its own moto, a 2 s tick), started as the e2e tests start it (tests/processes.py).

Chromium comes from Debian (`make browser-deps` installs it), not from Playwright's own download, which this
machine's closed network refuses. With TICKWORK_CONSOLE_SCREENSHOTS=1 the tests save what they see to
docs/console/ (docs/console.md shows those pictures); otherwise they leave the committed ones alone.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Api
from tests.processes import Proc

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
CHROMIUM = "/usr/bin/chromium"
SCREENSHOTS = ROOT / "docs" / "console"
# Without the background-networking flags Chromium keeps dialling Google's hosts, which this network refuses.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
READY_SECONDS = 30

pytestmark = pytest.mark.browser


@dataclass
class LocalApi(Api):
    """The e2e tests' HTTP client for the node, with the node's process (its output) and its moto endpoint beside it."""

    proc: Proc | None = None
    moto_url: str = ""

    def call(self, method: str, path: str, body: Any = None, expect: int | tuple[int, ...] = (200, 201, 202)) -> Any:
        return super().call(method, path, body, expect=expect)


@pytest.fixture(scope="module")
def dev_options(request: pytest.FixtureRequest) -> list[str]:
    """`tickwork dev`'s options of the module: its DEV_OPTIONS if it has any (job types of its own); a module that
    must make a file for them (an API keys file) overrides this fixture."""
    return list(getattr(request.module, "DEV_OPTIONS", []))


@pytest.fixture(scope="module")
def dev(dev_options: list[str]) -> Iterator[LocalApi]:
    """One local runtime for the module, with the module's `dev_options`."""
    command = [str(BIN / "tickwork"), "dev", "--port", "0", "--moto-port", "0", *dev_options]
    # As a user runs it: with metrics (tests/conftest.py turns Powertools' off for the in-process tests, and a
    # subprocess would inherit that), so the Metrics page has figures to chart.
    with pytest.MonkeyPatch.context() as env:
        env.setenv("POWERTOOLS_METRICS_DISABLED", "false")
        proc = Proc.start("browser-dev", [*command, "--tick-seconds", "2", "--workers", "12", "--node-name", "browser"])
    try:
        ready = proc.wait_ready(READY_SECONDS)
        yield LocalApi(ready.api_url, proc, ready.moto_url)
    finally:
        code = proc.terminate()
        assert code == 0, proc.output()


def _chromium() -> str:
    found = CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium")
    if not found:
        pytest.fail("Chromium is missing: run `make browser-deps` (as root: apt-get install -y chromium)")
    return found


# One Chromium (and Playwright's driver) per test process, not per file: each test still gets a context of its own
# (checked_page), with no cookies, storage or pages of another's; a launch costs 3 to 4 s on a loaded 2-core machine.
@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=_chromium(), args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


@contextmanager
def checked_page(browser: Any, width: int = 1280, headers: dict[str, str] | None = None) -> Iterator[Any]:
    """A fresh page `width` pixels wide (800 high) that fails the test on any uncaught script error; `headers` go
    with each of its requests (an API key)."""
    context = browser.new_context(viewport={"width": width, "height": 800}, extra_http_headers=headers)
    opened = context.new_page()
    opened.set_default_timeout(15_000)
    errors: list[str] = []
    opened.on("pageerror", lambda exc: errors.append(str(exc)))
    yield opened
    context.close()
    assert not errors, f"script errors on the page: {errors}"


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh page at 1280x800 that fails the test on any uncaught script error."""
    with checked_page(browser) as opened:
        yield opened


WIDTHS = {"desktop": 1280, "phone": 375}


@pytest.fixture(params=list(WIDTHS))
def sized(request: Any, browser: Any) -> Iterator[Any]:
    """The same test at a desktop's width and a phone's."""
    with checked_page(browser, WIDTHS[request.param]) as opened:
        yield opened


def screenshot(page: Any, name: str) -> None:
    if not os.environ.get("TICKWORK_CONSOLE_SCREENSHOTS"):
        return
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"))
