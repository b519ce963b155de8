"""Secrets by reference on `tickwork dev`, over HTTP as a user would: a secret put with `tickwork secrets put`, an
`http` job whose bearer token is a `$secret` reaches a local server that checks the header; the job shows the
reference, never the token; a reference to another tenant's secret is refused with a 422 naming the field. (A
rotation is picked up once the 5-minute cache ends: tests/integration/test_secret_references.py, on a fake clock.)"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.e2e.conftest import BIN, Node, instant_in, start_node, wait_for
from tests.processes import free_port

pytestmark = pytest.mark.e2e

TOKEN = "Bearer e2e-7c1d0f9a-token"


class Checking(BaseHTTPRequestHandler):
    """200 when the request carries the expected bearer token, else 401; records what it was sent."""

    seen: list[str] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        given = self.headers.get("Authorization", "")
        Checking.seen.append(given)
        self.send_response(200 if given == TOKEN else 401)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Checking)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/hook"
    httpd.shutdown()


@pytest.fixture(scope="module")
def node() -> Iterator[tuple[Node, str]]:
    moto_port = free_port()
    started = start_node(
        "secrets", "--moto-port", str(moto_port), "--tick-seconds", "2", "--parameter", "HttpAllowlist=127.0.0.1/32"
    )
    try:
        yield started, f"http://127.0.0.1:{moto_port}"
    finally:
        code = started.proc.terminate()
        assert code == 0, started.proc.output()


def test_an_http_jobs_bearer_token_by_reference_reaches_the_server(node, server) -> None:
    started, moto = node
    put = subprocess.run(
        [str(BIN / "tickwork"), "secrets", "put", "tickwork/default/hook-token", "--endpoint", moto],
        input=TOKEN,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert put.returncode == 0, put.stderr
    assert TOKEN not in put.stdout

    reference = {"$secret": "tickwork/default/hook-token"}
    job = started.api.create_job(
        name="hook",
        type="http",
        payload={"url": server, "headers": {"Authorization": reference}},
        schedule={"at": instant_in(2)},
        retry={"max_attempts": 1},
    )
    run = wait_for(
        lambda: next((r for r in started.api.runs(job["id"]) if r["status"] in {"SUCCEEDED", "FAILED"}), None),
        30,
        0.5,
        "the hook's run to finish",
    )
    assert run["status"] == "SUCCEEDED", run
    assert Checking.seen == [TOKEN]
    shown = started.api.get(f"/v1/jobs/{job['id']}")
    assert shown["payload"]["headers"] == {"Authorization": reference}
    assert TOKEN not in str(started.api.get(f"/v1/runs/{run['id']}/result"))


def test_another_tenants_secret_is_refused_naming_the_field(node, server) -> None:
    started, _ = node
    problem = started.api.post(
        "/v1/jobs",
        {
            "name": "theirs",
            "type": "http",
            "payload": {"url": server, "headers": {"Authorization": {"$secret": "tickwork/globex/hook-token"}}},
            "schedule": {"at": instant_in(60)},
        },
        expect=422,
    )
    assert [e["field"] for e in problem["errors"]] == ["payload.headers.Authorization"]
    assert "tickwork/default/" in problem["errors"][0]["message"]
