"""`tickwork console` (the signing proxy) and the console's files as `tickwork dev` serves them. No browser: what
is under test is what crosses the wire.

IAM cannot be played locally (moto's API Gateway does not check SigV4), so the proxy is tested against a local
HTTP server standing in for API Gateway: it records each request, and the test checks the SigV4 signature it
carries against the credentials of the profile given, as API Gateway would.
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from tickwork_local.runtime.apigateway import ApiGatewayServer

from tests.processes import CONSOLE_LINE, Proc, free_port

BIN = Path(sys.executable).parent
ACCESS_KEY = "AKIDCONSOLETEST00001"
SECRET_KEY = "console-test-secret-key-0123456789abcdef"
SESSION_TOKEN = "console-test-session-token-zyx"
REGION = "eu-west-1"


class _Upstream(BaseHTTPRequestHandler):
    """Records each request; answers JSON, with headers a proxy must not pass to a browser."""

    server: Any
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.server.seen.append(
            {"method": self.command, "path": self.path, "headers": dict(self.headers.items()), "body": body}
        )
        reply = json.dumps({"items": [], "next_cursor": None}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Set-Cookie", "session=upstream-secret")
        self.send_header("X-Amz-Security-Token", SESSION_TOKEN)
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    do_GET = do_POST = _answer


@pytest.fixture(scope="module")
def upstream() -> Iterator[Any]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Upstream)
    server.seen = []  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def proxy(upstream: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`tickwork console --profile console-test` for the stand-in, with that profile's keys in a credentials file."""
    folder = tmp_path_factory.mktemp("aws")
    (folder / "credentials").write_text(
        f"[console-test]\naws_access_key_id = {ACCESS_KEY}\naws_secret_access_key = {SECRET_KEY}\n"
        f"aws_session_token = {SESSION_TOKEN}\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env |= {"AWS_SHARED_CREDENTIALS_FILE": str(folder / "credentials"), "AWS_CONFIG_FILE": str(folder / "config")}
    api_url = f"http://127.0.0.1:{upstream.server_address[1]}"
    command = [str(BIN / "tickwork"), "console", "--api-url", api_url, "--profile", "console-test"]
    process = subprocess.Popen(
        [*command, "--region", REGION, "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**env, "PYTHONUNBUFFERED": "1"},
    )
    proc = Proc("console", process)
    threading.Thread(target=proc._read, daemon=True).start()
    try:
        yield proc.wait_match(CONSOLE_LINE, 20)["address"]
    finally:
        proc.terminate()


def _request(host: str, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None):
    connection = http.client.HTTPConnection(host, timeout=10)
    connection.request(method, path, body=body, headers=headers or {})
    response = connection.getresponse()
    answer = (response.status, dict(response.getheaders()), response.read())
    connection.close()
    return answer


def _signature_checks(seen: dict[str, Any], host: str) -> bool:
    """Recompute the request's SigV4 signature from the profile's keys, over the headers it says it signed."""
    authorization = seen["headers"]["Authorization"]
    signed = authorization.split("SignedHeaders=", 1)[1].split(",", 1)[0].split(";")
    headers = {k: v for k, v in seen["headers"].items() if k.lower() in signed and k.lower() != "host"}
    request = AWSRequest(method=seen["method"], url=f"http://{host}{seen['path']}", data=seen["body"], headers=headers)
    request.context["timestamp"] = seen["headers"]["X-Amz-Date"]
    auth = SigV4Auth(Credentials(ACCESS_KEY, SECRET_KEY, SESSION_TOKEN), "execute-api", REGION)
    expected = auth.signature(auth.string_to_sign(request, auth.canonical_request(request)), request)
    return authorization.endswith(f"Signature={expected}")


def test_the_proxy_signs_each_call_with_the_profiles_credentials_and_returns_none(proxy, upstream):
    upstream.seen.clear()
    status, headers, body = _request(
        proxy,
        "GET",
        "/v1/jobs?tag=team%3Ddata&limit=5",
        headers={"Authorization": "Bearer from-the-browser", "Cookie": "a=b"},
    )
    assert status == 200
    assert json.loads(body) == {"items": [], "next_cursor": None}

    [seen] = upstream.seen
    assert seen["path"] == "/v1/jobs?tag=team%3Ddata&limit=5"
    authorization = seen["headers"]["Authorization"]
    assert authorization.startswith(f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/")
    assert f"/{REGION}/execute-api/aws4_request" in authorization
    assert seen["headers"]["X-Amz-Security-Token"] == SESSION_TOKEN
    assert "Cookie" not in seen["headers"]
    assert _signature_checks(seen, f"127.0.0.1:{upstream.server_address[1]}")

    # Nothing credential-like reaches the browser: no cookie, no token header, no key anywhere.
    assert {k.lower() for k in headers} <= {
        "content-type",
        "content-length",
        "x-content-type-options",
        "server",
        "date",
    }
    everything = json.dumps(headers) + body.decode()
    for secret in (ACCESS_KEY, SECRET_KEY, SESSION_TOKEN, "upstream-secret"):
        assert secret not in everything


def test_a_body_is_forwarded_as_sent_and_signed(proxy, upstream):
    upstream.seen.clear()
    sent = json.dumps({"name": "from the console", "type": "echo"}).encode()
    status, _, _ = _request(
        proxy, "POST", "/v1/jobs", body=sent, headers={"Content-Type": "application/json", "Idempotency-Key": "k-1"}
    )
    assert status == 200
    [seen] = upstream.seen
    assert seen["body"] == sent
    assert seen["headers"]["Idempotency-Key"] == "k-1"
    assert _signature_checks(seen, f"127.0.0.1:{upstream.server_address[1]}")


def test_the_proxy_serves_the_console_and_nothing_outside_it(proxy, upstream):
    upstream.seen.clear()
    status, headers, body = _request(proxy, "GET", "/")
    assert (status, headers["Location"]) == (302, "/console/")
    status, headers, body = _request(proxy, "GET", "/console/")
    assert status == 200
    assert headers["Content-Type"].startswith("text/html")
    assert b'<script type="module" src="app.js">' in body
    for path in ("/console/../pyproject.toml", "/console/%2e%2e/__init__.py", "/console/vendor/../../proxy.py"):
        assert _request(proxy, "GET", path)[0] == 404, path
    assert upstream.seen == []


def test_an_unreachable_api_is_a_problem_the_console_can_show(upstream, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env |= {"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "PYTHONUNBUFFERED": "1"}
    dead = f"http://127.0.0.1:{free_port()}"
    command = [str(BIN / "tickwork"), "console", "--api-url", dead, "--region", REGION, "--port", "0"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    proc = Proc("console-dead", process)
    threading.Thread(target=proc._read, daemon=True).start()
    try:
        address = proc.wait_match(CONSOLE_LINE, 20)["address"]
        status, headers, body = _request(address, "GET", "/v1/jobs")
        assert status == 502
        assert headers["Content-Type"] == "application/problem+json"
        problem = json.loads(body)
        assert problem["title"] == "The API cannot be called"
        assert "cannot reach" in problem["detail"]
    finally:
        proc.terminate()


# ---------------------------------------------------------------------------- /console on tickwork dev's port


@pytest.fixture(scope="module")
def local_api() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    invoked: list[dict[str, Any]] = []

    def invoke(event: dict[str, Any]) -> dict[str, Any]:
        invoked.append(event)
        return {"statusCode": 200, "headers": {"Content-Type": "application/json"}, "body": "{}"}

    server = ApiGatewayServer(("127.0.0.1", 0), invoke)
    server.start()
    yield f"127.0.0.1:{server.port}", invoked
    server.stop()


@pytest.mark.parametrize(
    ("path", "content_type"),
    [
        ("/console/", "text/html; charset=utf-8"),
        ("/console/app.js", "text/javascript; charset=utf-8"),
        ("/console/styles.css", "text/css; charset=utf-8"),
        ("/console/vendor/uPlot.esm.js", "text/javascript; charset=utf-8"),
        ("/console/vendor/uPlot.min.css", "text/css; charset=utf-8"),
    ],
)
def test_tickwork_dev_serves_the_console_files_with_their_types(local_api, path, content_type):
    host, invoked = local_api
    status, headers, body = _request(host, "GET", path)
    assert (status, headers["Content-Type"]) == (200, content_type)
    assert body
    assert invoked == []


def test_tickwork_dev_redirects_console_to_its_folder_and_refuses_paths_out_of_it(local_api):
    host, invoked = local_api
    status, headers, _ = _request(host, "GET", "/console")
    assert (status, headers["Location"]) == (301, "/console/")
    for path in (
        "/console/../pyproject.toml",
        "/console/%2e%2e/__init__.py",
        "/console/vendor/../../proxy.py",
        "/console/vendor/README.md/..",
        "/console/missing.js",
        "/console/vendor/htm.LICENSE",  # not a type the console serves
    ):
        assert _request(host, "GET", path)[0] == 404, path
    assert invoked == []
    # Only GET and HEAD are the console's: anything else goes to the API function, as before.
    assert _request(host, "POST", "/console/", body=b"{}")[0] == 200
    assert len(invoked) == 1


def test_the_console_against_a_local_runtime_started_with_api_keys(tmp_path):
    """`tickwork console --api-key` in front of `tickwork dev --api-keys`: the key is added by the proxy, never
    sent by the browser, and the tenant it maps to is the one the API answers for."""
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps({"console-test-key-0123456789": "acme"}))
    command = [str(BIN / "tickwork"), "dev", "--port", "0", "--moto-port", "0", "--api-keys", str(keys)]
    dev = Proc.start("console-keys-dev", command)
    started = [dev]
    try:
        api_url = dev.wait_ready(30).api_url
        console_command = [str(BIN / "tickwork"), "console", "--api-url", api_url, "--port", "0"]
        console = Proc.start("console-keys", [*console_command, "--api-key", "console-test-key-0123456789"])
        started.append(console)
        console_address = console.wait_match(CONSOLE_LINE, 20)["address"]
        # Straight to the API without the key: refused.
        assert _request(api_url.removeprefix("http://"), "GET", "/v1/tenants/me")[0] in (401, 403)
        status, headers, body = _request(console_address, "GET", "/v1/tenants/me")
        assert status == 200, body
        assert json.loads(body)["tenant"] == "acme"
        assert b"console-test-key" not in body
        assert "console-test-key" not in json.dumps(headers)
    finally:
        for proc in reversed(started):
            proc.terminate()
