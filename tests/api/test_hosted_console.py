"""The hosted console (tickwork_console.hosting; docs/security.md, "The hosted console"): with CONSOLE_CLIENT_ID (the
template's HostsConsole), the API function serves the console's files and config.json on TokenApi's open routes,
with no caller, and with the page's security headers; without it, /console is an API path like any other."""

from __future__ import annotations

import json

import pytest

from tests.api.conftest import ApiClient

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

ISSUER = "https://example.okta.com/oauth2/default"


@pytest.fixture
def hosted(api: ApiClient, monkeypatch: pytest.MonkeyPatch) -> ApiClient:
    monkeypatch.setenv("JWT_ISSUER", ISSUER)
    monkeypatch.setenv("CONSOLE_CLIENT_ID", "0oa1console")
    return api


def test_the_hosted_console_serves_its_settings_and_files_to_a_caller_not_signed_in(hosted: ApiClient):
    config = hosted.get("/console/config.json", identity=None)
    assert config.status == 200
    assert json.loads(config.text) == {
        "signin": {"issuer": ISSUER, "client_id": "0oa1console", "scopes": "openid profile email"}
    }
    assert config.headers["cache-control"] == "no-store"
    page = hosted.get("/console/app.js", identity=None)
    assert page.status == 200
    assert page.headers["content-type"].startswith("text/javascript")
    policy = page.headers["content-security-policy"]
    assert "script-src 'self'" in policy
    assert "frame-ancestors 'none'" in policy
    assert "https://example.okta.com" in policy
    assert page.headers["referrer-policy"] == "no-referrer"
    assert hosted.get("/console", identity=None).headers["location"] == "/console/"
    assert hosted.get("/console/", identity=None).headers["content-type"].startswith("text/html")


def test_the_hosted_console_names_cognitos_sign_out_where_the_stack_gives_it(
    hosted: ApiClient, monkeypatch: pytest.MonkeyPatch
):
    logout = "https://tickwork-1.auth.us-east-1.amazoncognito.com/logout"
    monkeypatch.setenv("CONSOLE_LOGOUT_URL", logout)
    assert json.loads(hosted.get("/console/config.json", identity=None).text)["signin"]["logout_endpoint"] == logout


@pytest.mark.parametrize("path", ["/console/nothing.js", "/console/../functions/api/app.py", "/console/%2e%2e/x.js"])
def test_the_hosted_console_has_no_file_outside_its_own(hosted: ApiClient, path: str):
    assert hosted.get(path, identity=None).status == 404


def test_a_change_to_a_console_path_is_an_api_request_that_needs_a_caller(hosted: ApiClient):
    assert hosted.post("/console/config.json", {}, identity=None).status == 401


def test_without_a_hosted_console_its_paths_need_a_caller_as_every_api_path(api: ApiClient):
    assert api.get("/console/config.json", identity=None).status == 401
