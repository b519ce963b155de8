"""Secrets by reference on `tickwork dev`, over HTTP as a user would: a secret put with `tickwork secrets put`, an
`http` job whose bearer token is a `$secret` reaches a local server that checks the header; the job shows the
reference, never the token; a rotation is picked up once the executor's cache ends (SecretCacheSeconds, 1 s on this
node; the 5-minute default on a fake clock: tests/integration/test_secret_references.py); a reference to another
tenant's secret is refused with a 422 naming the field."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.e2e.conftest import BIN, Node, instant_in, start_node, wait_for

pytestmark = pytest.mark.e2e

TOKEN = "Bearer e2e-7c1d0f9a-token"
ROTATED = "Bearer e2e-3b52e8d4-rotated"


class Checking(BaseHTTPRequestHandler):
    """200 when the request carries the expected bearer token, else 401; records what it was sent."""

    seen: list[str] = []
    expected = TOKEN

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        given = self.headers.get("Authorization", "")
        Checking.seen.append(given)
        self.send_response(200 if given == Checking.expected else 401)
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
    started = start_node(
        "secrets",
        "--tick-seconds",
        "2",
        "--parameter",
        "HttpAllowlist=127.0.0.1/32",
        "--parameter",
        "SecretCacheSeconds=1",
    )
    try:
        yield started, started.moto_url
    finally:
        code = started.proc.terminate()
        assert code == 0, started.proc.output()


def _put_secret(moto: str, value: str) -> None:
    put = subprocess.run(
        [str(BIN / "tickwork"), "secrets", "put", "tickwork/default/hook-token", "--endpoint", moto],
        input=value,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert put.returncode == 0, put.stderr
    assert value not in put.stdout


def _hook_run(started: Node, server: str, name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A one-shot `http` job calling the server with the secret as its bearer token, and its finished run."""
    job = started.api.create_job(
        name=name,
        type="http",
        payload={"url": server, "headers": {"Authorization": REFERENCE}},
        schedule={"at": instant_in(2)},
        retry={"max_attempts": 1},
    )
    run = wait_for(
        lambda: next((r for r in started.api.runs(job["id"]) if r["status"] in {"SUCCEEDED", "FAILED"}), None),
        30,
        0.5,
        f"the {name} run to finish",
    )
    return job, run


REFERENCE = {"$secret": "tickwork/default/hook-token"}


def test_an_http_jobs_bearer_token_by_reference_reaches_the_server_and_a_rotation_is_picked_up(node, server) -> None:
    started, moto = node
    _put_secret(moto, TOKEN)
    job, run = _hook_run(started, server, "hook")
    assert run["status"] == "SUCCEEDED", run
    assert Checking.seen == [TOKEN]
    shown = started.api.get(f"/v1/jobs/{job['id']}")
    assert shown["payload"]["headers"] == {"Authorization": REFERENCE}
    assert TOKEN not in str(started.api.get(f"/v1/runs/{run['id']}/result"))

    # Rotated: the server takes only the new token, and the next run (over a second later: the node's cache) sends it.
    Checking.expected = ROTATED
    _put_secret(moto, ROTATED)
    _, rotated = _hook_run(started, server, "hook-after-rotation")
    assert rotated["status"] == "SUCCEEDED", rotated
    assert Checking.seen == [TOKEN, ROTATED]


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
