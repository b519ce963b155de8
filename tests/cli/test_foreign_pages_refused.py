"""`tickwork console` (the signing proxy) and `tickwork dev`'s API server act as their user for whatever reaches
them over HTTP: each answers only for the hosts it listens on (DNS rebinding) and refuses a change from another
site (a cross-site POST needs no preflight). Plain HTTP, no browser: the headers are the ones a browser sends.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from typing import Any

import pytest
from tickwork_cli import client as cli_client
from tickwork_cli.client import Client, HttpResponse
from tickwork_console.proxy import ConsoleServer
from tickwork_local.runtime.apigateway import ApiGatewayServer

REBOUND = "rebind.attacker.example"


def _request(
    port: int, method: str, path: str, headers: dict[str, str], body: bytes | None = None
) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request(method, path, body=body, headers=headers)
    response = connection.getresponse()
    answer = (response.status, dict(response.getheaders()), response.read())
    connection.close()
    return answer


def _refused(answer: tuple[int, dict[str, str], bytes], title: str) -> dict[str, Any]:
    status, headers, body = answer
    assert status == 403, body
    assert headers["Content-Type"] == "application/problem+json"
    problem = json.loads(body)
    assert (problem["status"], problem["title"]) == (403, title)
    return problem


@pytest.fixture
def forwarded(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """What the proxy signs and sends on to the API (the transport under its signing client)."""
    sent: list[tuple[str, str]] = []
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDREQUESTGUARD0001")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "request-guard-secret")

    def transport(
        method: str, url: str, headers: dict[str, str], body: bytes | None, timeout: float = 30.0
    ) -> HttpResponse:
        assert headers["Authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDREQUESTGUARD0001/")
        sent.append((method, url))
        return HttpResponse(202, {"Content-Type": "application/json"}, b"{}")

    monkeypatch.setattr(cli_client, "transport", transport)
    return sent


def _start_proxy(accept_hosts: tuple[str, ...] = ()) -> ConsoleServer:
    api = Client("https://abc123.execute-api.eu-west-1.amazonaws.com")
    server = ConsoleServer(api, 0, accept_hosts=accept_hosts) if accept_hosts else ConsoleServer(api, 0)
    server.start()
    return server


@pytest.fixture
def proxy(forwarded: list[tuple[str, str]]) -> Iterator[int]:
    server = _start_proxy()
    yield server.server_address[1]
    server.stop()


@pytest.fixture
def dev_api() -> Iterator[tuple[int, list[dict[str, Any]]]]:
    invoked: list[dict[str, Any]] = []

    def invoke(event: dict[str, Any]) -> dict[str, Any]:
        invoked.append(event)
        return {"statusCode": 202, "headers": {"Content-Type": "application/json"}, "body": "{}"}

    server = ApiGatewayServer(("127.0.0.1", 0), invoke)
    server.start()
    yield server.port, invoked
    server.stop()


# ---------------------------------------------------------------------------- the attacks


def test_the_proxy_refuses_a_rebound_host(proxy, forwarded):
    rebound = {"Host": f"{REBOUND}:{proxy}", "Origin": f"http://{REBOUND}:{proxy}", "Sec-Fetch-Site": "same-origin"}
    problem = _refused(_request(proxy, "GET", "/v1/jobs", rebound), "Host not accepted")
    assert REBOUND in problem["detail"]
    assert "--accept-host" in problem["detail"]
    _refused(_request(proxy, "GET", "/console/", rebound), "Host not accepted")
    assert forwarded == []


def test_the_dev_api_server_refuses_a_rebound_host(dev_api):
    port, invoked = dev_api
    rebound = {"Host": f"{REBOUND}:{port}"}
    _refused(_request(port, "GET", "/v1/jobs", rebound), "Host not accepted")
    _refused(_request(port, "GET", "/console/", rebound), "Host not accepted")
    assert invoked == []


def test_the_proxy_refuses_a_cross_site_bodiless_post(proxy, forwarded):
    # What a form on another site, or fetch(..., {method: "POST", mode: "no-cors"}), sends: no preflight.
    cross_site = {"Host": f"127.0.0.1:{proxy}", "Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}
    problem = _refused(_request(proxy, "POST", "/v1/dlq/redrive", cross_site), "Cross-site request refused")
    assert "cross-site" in problem["detail"]
    # A browser without Sec-Fetch-* still sends Origin; a page on another port of this host is another origin.
    for origin in ("https://evil.example", f"http://localhost:{proxy}", "http://127.0.0.1:1", "null"):
        headers = {"Host": f"127.0.0.1:{proxy}", "Origin": origin}
        _refused(_request(proxy, "POST", "/v1/jobs/j1/pause", headers), "Cross-site request refused")
    _refused(
        _request(proxy, "DELETE", "/v1/jobs/j1", {"Host": f"127.0.0.1:{proxy}", "Sec-Fetch-Site": "same-site"}),
        "Cross-site request refused",
    )
    assert forwarded == []


def test_the_dev_api_server_refuses_a_cross_site_bodiless_post(dev_api):
    port, invoked = dev_api
    cross_site = {"Host": f"127.0.0.1:{port}", "Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}
    _refused(_request(port, "POST", "/v1/dlq/redrive", cross_site), "Cross-site request refused")
    assert invoked == []


# ---------------------------------------------------------------------------- what still goes through


def test_the_proxy_forwards_its_own_pages_and_non_browser_clients(proxy, forwarded):
    own_page = {"Host": f"127.0.0.1:{proxy}", "Origin": f"http://127.0.0.1:{proxy}", "Sec-Fetch-Site": "same-origin"}
    body = b'{"all": true}'
    own_page["Content-Type"] = "application/json"
    assert _request(proxy, "POST", "/v1/dlq/redrive", own_page, body)[0] == 202
    # Origin alone (no Sec-Fetch-*), by each loopback name.
    for host in (f"127.0.0.1:{proxy}", f"localhost:{proxy}", f"[::1]:{proxy}"):
        headers = {"Host": host, "Origin": f"http://{host}", "Content-Type": "application/json"}
        assert _request(proxy, "POST", "/v1/dlq/redrive", headers, body)[0] == 202, host
    # curl or the CLI: no Origin, no Sec-Fetch-Site.
    assert _request(proxy, "POST", "/v1/jobs/j1/pause", {"Host": f"localhost:{proxy}"})[0] == 202
    # A cross-site read is let through (the browser keeps its answer from the page: no CORS headers).
    cross_site_read = {"Host": f"127.0.0.1:{proxy}", "Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}
    status, headers, _ = _request(proxy, "GET", "/v1/jobs", cross_site_read)
    assert status == 202
    assert not any(name.lower().startswith("access-control-") for name in headers)
    assert [method for method, _ in forwarded] == ["POST"] * 4 + ["POST", "GET"]


def test_the_proxy_answers_for_a_host_added_with_accept_host(forwarded):
    server = _start_proxy(accept_hosts=("console.internal",))
    port = server.server_address[1]
    try:
        headers = {"Host": f"console.internal:{port}", "Origin": f"http://console.internal:{port}"}
        assert _request(port, "POST", "/v1/jobs/j1/pause", headers)[0] == 202
        _refused(_request(port, "GET", "/v1/jobs", {"Host": REBOUND}), "Host not accepted")
    finally:
        server.stop()
    assert len(forwarded) == 1


def test_the_dev_api_server_serves_its_own_pages(dev_api):
    port, invoked = dev_api
    own_page = {"Host": f"127.0.0.1:{port}", "Origin": f"http://127.0.0.1:{port}", "Sec-Fetch-Site": "same-origin"}
    assert _request(port, "POST", "/v1/jobs/j1/pause", own_page)[0] == 202
    assert _request(port, "GET", "/console/", {"Host": f"localhost:{port}"})[0] == 200
    assert len(invoked) == 1


def test_the_dev_api_server_answers_for_a_host_added_with_accept_host():
    invoked: list[dict[str, Any]] = []

    def invoke(event: dict[str, Any]) -> dict[str, Any]:
        invoked.append(event)
        return {"statusCode": 200, "headers": {"Content-Type": "application/json"}, "body": "{}"}

    server = ApiGatewayServer(("127.0.0.1", 0), invoke, accept_hosts=("box.internal",))
    server.start()
    try:
        assert _request(server.port, "GET", "/v1/jobs", {"Host": f"box.internal:{server.port}"})[0] == 200
        _refused(_request(server.port, "GET", "/v1/jobs", {"Host": REBOUND}), "Host not accepted")
    finally:
        server.stop()
    assert [event["requestContext"]["domainName"] for event in invoked] == ["box.internal"]


def test_tickwork_console_gives_its_server_the_names_of_accept_host(monkeypatch):
    from tickwork_cli.commands import console
    from tickwork_cli.main import app
    from typer.testing import CliRunner

    made: dict[str, Any] = {}

    class Server:
        url = "http://127.0.0.1:8790/console/"

        def __init__(self, client: Client, port: int, accept_hosts: tuple[str, ...] = ()) -> None:
            made.update(port=port, accept_hosts=accept_hosts)

        def serve_forever(self, poll_interval: float) -> None:
            raise KeyboardInterrupt

        def server_close(self) -> None:
            pass

    monkeypatch.setattr(console, "ConsoleServer", Server)
    api_url = "https://abc123.execute-api.eu-west-1.amazonaws.com"
    argv = ["console", "--api-url", api_url, "--accept-host", "a.internal", "--accept-host", "b.internal"]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.output
    assert made == {"port": 8790, "accept_hosts": ("a.internal", "b.internal")}
