"""`tickwork smoke` against the real API handler in process: it passes when a job runs end to end, and each way it
can fail is named, exits non-zero and still cancels the job."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.api.conftest import ACME

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

# One poll of 300 s lands past the run's time: the tick re-sends the run the API queued with a (real-time) delay.
FAST = ("--interval", "300", "--timeout", "600")


def _smoke_jobs(cli) -> list[dict[str, Any]]:
    return cli.json("jobs", "list", "--name-prefix", "tickwork-smoke-")["items"]


@dataclass
class Answering:
    """The in-process API, except for the calls given an answer of their own (method, URL pattern)."""

    cli: Any
    answers: list[tuple[str, str, int, Any]] = field(default_factory=list)

    def __call__(
        self, method: str, url: str, headers: dict[str, str], body: bytes | None, timeout: float = 30.0
    ) -> Any:
        from tickwork_cli.client import HttpResponse

        for answered, pattern, status, answer in self.answers:
            if method == answered and re.search(pattern, url):
                self.cli.transport.sent.append((method, url, dict(headers), body))
                return HttpResponse(status, {"Content-Type": "application/json"}, json.dumps(answer).encode())
        return self.cli.transport(method, url, headers, body)

    def answer(self, method: str, pattern: str, status: int, body: Any) -> None:
        self.answers.append((method, pattern, status, body))


@pytest.fixture
def answering(cli, monkeypatch) -> Answering:
    from tickwork_cli import client

    transport = Answering(cli)
    monkeypatch.setattr(client, "transport", transport)
    return transport


def test_smoke_passes_when_the_job_runs_and_its_result_is_its_payload(cli):
    result = cli("smoke", *FAST, output=None)
    assert result.exit_code == 0, result.output + result.stderr
    assert result.stdout.splitlines()[-1].startswith("PASS: http://127.0.0.1:3000 ran a job end to end")
    assert "smoke: result is the payload" in result.stdout
    (job,) = _smoke_jobs(cli)
    assert job["state"] == "COMPLETED"  # a finished one-shot: nothing is left to cancel
    assert job["tags"] == {"tickwork-smoke": job["name"].removeprefix("tickwork-smoke-")}
    (run,) = cli.json("runs", "list", job["id"])["items"]
    assert run["status"] == "SUCCEEDED"
    assert cli.json("runs", "result", run["id"]) == job["payload"]
    assert job["payload"] == {"smoke": job["name"].removeprefix("tickwork-smoke-")}


def test_smoke_fails_naming_the_run_that_failed(cli, monkeypatch):
    from tickwork_cli.smoke import SmokeJob

    # An echo that fails every attempt: the run ends FAILED with the handler's error.
    monkeypatch.setattr(SmokeJob, "payload", property(lambda self: {"smoke": self.token, "fail_attempts": 1000}))
    result = cli("smoke", *FAST, output=None)
    assert result.exit_code == 1, result.output + result.stderr
    assert re.search(r"FAIL: run \S+ ended FAILED: .*fails on purpose", result.stderr), result.stderr
    assert "PASS" not in result.stdout
    (job,) = _smoke_jobs(cli)
    assert job["state"] == "COMPLETED"


def test_smoke_fails_when_the_result_is_not_the_payload(cli, answering):
    answering.answer("GET", r"/v1/runs/[^/]+/result$", 200, {"smoke": "someone else's"})
    result = cli("smoke", *FAST, output=None)
    assert result.exit_code == 1, result.output + result.stderr
    assert "FAIL: the result {'smoke': \"someone else's\"} is not the payload {'smoke': '" in result.stderr


def test_smoke_times_out_with_the_last_status_and_cancels_the_job(cli, monkeypatch):
    from tickwork_cli import clock

    # Waiting while nothing happens: no time passes for the scheduler, so the run stays QUEUED.
    monkeypatch.setattr(clock, "sleep", lambda seconds: None)
    result = cli("smoke", "--interval", "1", "--timeout", "5", output=None)
    assert result.exit_code == 3, result.output + result.stderr
    assert "FAIL: the run had not finished after 5 s (last seen: QUEUED)" in result.stderr
    assert "smoke: waiting: QUEUED" in result.stdout
    (job,) = _smoke_jobs(cli)
    assert job["state"] == "CANCELLED"
    assert re.search(r"smoke: cancelled job \S+", result.stdout)


def test_smoke_reports_a_refused_create_and_sends_nothing_else(cli, answering):
    answering.answer("POST", r"/v1/jobs$", 403, {"message": "User is not authorized to access this resource"})
    result = cli("smoke", *FAST, output=None)
    assert result.exit_code == 1, result.output + result.stderr
    assert "FAIL: the API refused a call:\nError 403 User is not authorized" in result.stderr
    assert [(m, url.rsplit("/v1", 1)[1]) for m, url, _, _ in cli.transport.sent] == [("POST", "/jobs")]


def test_smoke_fails_when_the_job_cannot_be_cancelled(cli, answering, monkeypatch):
    from tickwork_cli import clock

    monkeypatch.setattr(clock, "sleep", lambda seconds: None)
    answering.answer("DELETE", r"/v1/jobs/[^/]+$", 500, {"status": 500, "title": "Internal error"})
    result = cli("smoke", "--interval", "1", "--timeout", "2", output=None)
    # The first failure stays the reason; the failed cleanup is said too.
    assert result.exit_code == 3, result.output + result.stderr
    assert "FAIL: the run had not finished" in result.stderr
    assert re.search(r"smoke: could not cancel job \S+: Error 500 Internal error", result.stdout)


def test_smoke_fails_when_only_the_cleanup_fails(cli, answering):
    answering.answer("DELETE", r"/v1/jobs/[^/]+$", 500, {"status": 500, "title": "Internal error"})
    result = cli("smoke", *FAST, output=None)
    assert result.exit_code == 1, result.output + result.stderr
    assert re.search(r"FAIL: could not cancel job \S+: Error 500 Internal error", result.stderr)
    assert "smoke: result is the payload" in result.stdout


def test_smoke_signs_every_call_as_the_other_commands_do(cli, monkeypatch):
    monkeypatch.setenv("API_AUTH_MODE", "iam")
    cli.transport.identity = ACME  # what API Gateway derives from a valid signature
    cli.url = "https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com/"  # the ApiUrl output, as it is
    result = cli("smoke", *FAST, output=None)
    assert result.exit_code == 0, result.output + result.stderr
    calls = [(method, url.split(".com", 1)[1].split("/")[1:3]) for method, url, _, _ in cli.transport.sent]
    assert calls[0] == ("POST", ["v1", "jobs"])
    assert calls[-1][0] == "DELETE"
    for _, _, headers, _ in cli.transport.sent:
        assert headers["Authorization"].startswith("AWS4-HMAC-SHA256 Credential=")
        assert "/eu-west-1/execute-api/aws4_request" in headers["Authorization"]
