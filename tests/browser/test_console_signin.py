"""Sign-in to the console (docs/security.md, "The hosted console"; docs/local.md, "Sign-in with the local IdP"):
`tickwork dev --idp` is the stack's token API with its hosted console, and its local IdP the issuer. In Chromium: a
tenant's user signs in (the authorization-code flow with PKCE, through the IdP's login form), sees only its tenant's
jobs, pauses one and finds itself in the job's Audit tab; signs out; the admin signs in and switches tenant."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
import urllib.parse
import urllib.request
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.browser.conftest import LocalApi

pytestmark = pytest.mark.browser

DEV_OPTIONS = ["--idp"]


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def token_of(dev: LocalApi, user: str) -> str:
    """An access token of the IdP's `user`, got as the console gets one (code flow, PKCE), without a browser."""
    signin = json.loads(urllib.request.urlopen(f"{dev.url}/console/config.json", timeout=10).read())["signin"]
    issuer = json.loads(
        urllib.request.urlopen(f"{signin['issuer']}/.well-known/openid-configuration", timeout=10).read()
    )
    verifier, back = secrets.token_urlsafe(48), f"{dev.url}/console/"
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    query = {
        "response_type": "code",
        "client_id": signin["client_id"],
        "redirect_uri": back,
        "scope": "openid",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
    }
    form = urllib.request.urlopen(f"{issuer['authorization_endpoint']}?{urllib.parse.urlencode(query)}", timeout=10)
    request_id = re.search(r'name="request" value="([^"]+)"', form.read().decode())[1]  # type: ignore[index]
    chosen = urllib.parse.urlencode({"request": request_id, "user": user}).encode()
    try:
        urllib.request.build_opener(_NoRedirect).open(f"{issuer['authorization_endpoint']}", data=chosen, timeout=10)
        raise AssertionError("the IdP did not redirect back")
    except urllib.error.HTTPError as redirect:
        code = urllib.parse.parse_qs(urllib.parse.urlsplit(redirect.headers["Location"]).query)["code"][0]
    exchange = {
        "grant_type": "authorization_code",
        "code": code,
        "client_id": signin["client_id"],
        "redirect_uri": back,
        "code_verifier": verifier,
    }
    answer = urllib.request.urlopen(
        issuer["token_endpoint"], data=urllib.parse.urlencode(exchange).encode(), timeout=10
    )
    return json.loads(answer.read())["access_token"]


def create_job(dev: LocalApi, user: str, name: str) -> dict[str, Any]:
    body = json.dumps({"name": name, "type": "echo", "schedule": {"cron": "0 3 * * *"}}).encode()
    headers = {"Authorization": f"Bearer {token_of(dev, user)}", "Content-Type": "application/json"}
    request = urllib.request.Request(f"{dev.url}/v1/jobs", data=body, method="POST", headers=headers)
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def sign_in(page: Any, user: str) -> None:
    page.get_by_role("heading", name="Sign in to Tickwork").wait_for()
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("button", name=f"Sign in as {user}").click()  # the IdP's login form
    page.locator("header .session", has_text=f"Signed in as {user}").wait_for()


def go_to(page: Any, route: str) -> None:
    """Another page of the console without reloading it (a reload signs in again: the tokens are in memory only)."""
    page.evaluate(f"window.location.hash = {json.dumps('#' + route)}")


def test_a_tenant_signs_in_sees_its_own_pauses_one_is_in_its_audit_and_signs_out_then_the_admin_switches(
    page: Any, dev: LocalApi
):
    acme = create_job(dev, "alice", "signin-acme-job")
    create_job(dev, "bob", "signin-globex-job")
    # An answer that is not for a sign-in started in this tab (its state) is refused, saying so.
    page.goto(f"{dev.url}/console/?code=forged&state=forged#/jobs")
    page.get_by_role("alert").filter(has_text="state does not match").wait_for()
    assert "code=" not in page.url
    sign_in(page, "alice")
    page.get_by_role("link", name="signin-acme-job").wait_for()
    assert page.get_by_role("link", name="signin-globex-job").count() == 0
    assert page.get_by_role("form", name="Tenant switcher").count() == 0  # a tenant has none
    # Nothing of the sign-in is kept in the browser's storage: the tokens are in the page's memory.
    stored = page.evaluate("JSON.stringify([{...localStorage}, {...sessionStorage}, document.cookie])")
    assert "eyJ" not in stored
    assert "code=" not in page.url

    go_to(page, f"/jobs/{acme['id']}")
    page.get_by_role("group", name="Job actions").get_by_role("button", name="Pause").click()
    page.locator(".notice", has_text="Paused.").wait_for()
    page.get_by_role("tab", name="Audit").click()
    paused = page.locator("table.audit tbody tr").filter(has_text="job.pause")
    paused.wait_for()
    assert "alice" in paused.inner_text()
    assert "jwt" in paused.inner_text()

    page.get_by_role("button", name="Sign out").click()  # the IdP's end_session brings the browser back
    page.get_by_role("heading", name="Sign in to Tickwork").wait_for()
    assert page.get_by_role("link", name="signin-acme-job").count() == 0

    sign_in(page, "ada")  # the admin, of tenant ops
    page.get_by_role("heading", name="Jobs").wait_for()
    assert page.get_by_role("link", name="signin-acme-job").count() == 0
    switcher = page.get_by_role("form", name="Tenant switcher")
    switcher.get_by_label("Tenant").fill("acme")
    switcher.get_by_label("Tenant").press("Enter")
    page.get_by_role("link", name="signin-acme-job").wait_for()
    assert page.get_by_role("link", name="signin-globex-job").count() == 0


def test_a_sign_in_that_expires_returns_to_the_sign_in_page_saying_so_and_a_new_sign_in_works(page: Any, dev):
    """The tokens last an hour (the local IdP's, as Cognito's by default): once they expire, the console drops them
    and shows the sign-in page with why, before any call is refused; signing in again works. The page's clock is
    Playwright's, moved on by hand: no test waits an hour."""
    create_job(dev, "alice", "signin-expiry-job")
    page.clock.install()
    page.goto(f"{dev.url}/console/#/jobs")
    sign_in(page, "alice")
    page.get_by_role("link", name="signin-expiry-job").wait_for()

    page.clock.fast_forward("59:00")  # a minute before the hour: still signed in
    page.locator("header .session", has_text="Signed in as alice").wait_for()
    page.clock.fast_forward("02:00")
    page.get_by_role("heading", name="Sign in to Tickwork").wait_for()
    page.get_by_text("Your sign-in has expired: sign in again.").wait_for()
    assert page.get_by_role("link", name="signin-expiry-job").count() == 0
    stored = page.evaluate("JSON.stringify([{...localStorage}, {...sessionStorage}, document.cookie])")
    assert "eyJ" not in stored

    page.clock.resume()  # the IdP's new tokens are made at the server's real time: the page's clock goes on
    page.clock.set_system_time(datetime.now(UTC))
    sign_in(page, "alice")
    page.get_by_role("link", name="signin-expiry-job").wait_for()


def test_a_token_the_api_refuses_returns_to_the_sign_in_page_saying_so(page: Any, dev: LocalApi):
    """A token the API refuses (401: revoked at the IdP, or the stack's audience changed) is dropped as an expired
    one is: the sign-in page, with the reason, not a page of errors."""
    page.goto(f"{dev.url}/console/#/jobs")
    sign_in(page, "alice")
    page.get_by_role("heading", name="Jobs").wait_for()

    def refused(route: Any) -> None:
        route.fulfill(status=401, content_type="application/json", body=json.dumps({"message": "Unauthorized"}))

    page.route(lambda url: "/v1/" in url, refused)
    go_to(page, "/runs")
    page.get_by_role("heading", name="Sign in to Tickwork").wait_for()
    assert "sign in again" in page.locator("main").inner_text().lower()
