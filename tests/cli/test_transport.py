"""The CLI's real HTTP transport (urllib) against a real local HTTP server: success, problem details, no server."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from tickwork.model.job import Job
from typer.testing import CliRunner

# A job as the API sends it: every field of the model.
JOB = Job.model_validate(
    {
        "id": "j" + "1" * 25,
        "tenant": "default",
        "name": "x",
        "type": "echo",
        "schedule": {"cron": "0 * * * *"},
        "created_at": "2026-11-21T12:00:00.000Z",
        "updated_at": "2026-11-21T12:00:00.000Z",
    }
).model_dump(mode="json")
# What a stack of another version might send: not a job as this client knows one.
NOT_A_JOB = {"id": "j" + "2" * 25, "name": "x", "state": "ACTIVE"}
PROBLEM = {
    "type": "urn:tickwork:problem:not-found",
    "title": "Not found",
    "status": 404,
    "detail": "job j000 not found",
}


class _Handler(BaseHTTPRequestHandler):
    seen: list[dict[str, str]] = []

    def do_GET(self) -> None:
        _Handler.seen.append(dict(self.headers.items()))
        if self.path == f"/v1/jobs/{JOB['id']}":
            status, body, kind = 200, JOB, "application/json"
        elif self.path == f"/v1/jobs/{NOT_A_JOB['id']}":
            status, body, kind = 200, NOT_A_JOB, "application/json"
        else:
            status, body, kind = 404, PROBLEM, "application/problem+json"
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_get_over_real_http(server):
    from tickwork_cli.main import app

    result = CliRunner().invoke(app, ["jobs", "get", JOB["id"], "--api-url", server + "/v1", "-o", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == JOB
    assert "Authorization" not in _Handler.seen[-1]  # a local API is never signed
    assert _Handler.seen[-1]["User-Agent"].startswith("tickwork-cli/")


def test_an_answer_that_is_not_the_model_is_an_error_naming_its_fields_not_a_traceback(server):
    from tickwork_cli.main import app

    result = CliRunner().invoke(app, ["jobs", "get", NOT_A_JOB["id"], "--api-url", server, "-o", "json"])
    assert result.exit_code == 1
    assert result.stderr.splitlines()[0] == "Error 200 Unexpected answer"
    assert "not a Job as this client knows it (fields: created_at, schedule, tenant, type, updated_at)" in result.stderr
    assert result.stdout == ""


def test_problem_over_real_http(server):
    from tickwork_cli.main import app

    result = CliRunner().invoke(app, ["jobs", "get", "j000", "--api-url", server])
    assert result.exit_code == 1
    assert result.stderr.splitlines() == ["Error 404 Not found", "  job j000 not found"]


def test_no_server(monkeypatch):
    from tickwork_cli.main import app

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    result = CliRunner().invoke(app, ["jobs", "list", "--api-url", f"http://127.0.0.1:{port}"])
    assert result.exit_code == 2
    assert "cannot reach" in result.stderr
