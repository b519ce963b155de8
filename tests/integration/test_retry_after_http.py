"""The http type and Retry-After: a 429 or 503 sets the next attempt's earliest time (capped by the job's
longest backoff); any other 4xx is not retried."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from email.utils import format_datetime
from typing import Any

import pytest
from tickwork.model.policies import Band
from tickwork.model.states import RunStatus

from tests.harness import START, Pipeline
from tests.http_upstream import JsonUpstream, serving

FAR = timedelta(seconds=300)


class Answering(JsonUpstream):
    """Answers every request with `status` and `headers`, and counts them."""

    status = 200
    headers: dict[str, str] = {}
    requests = 0

    def do_POST(self) -> None:
        self.read_body()
        Answering.requests += 1
        self.send_response(Answering.status)
        for name, value in Answering.headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", "0")
        self.end_headers()


@pytest.fixture
def server() -> Iterator[str]:
    Answering.status, Answering.headers, Answering.requests = 200, {}, 0
    with serving(Answering) as url:
        yield url


@pytest.fixture
def allowlisted(mocked_aws) -> Iterator[Pipeline]:
    with Pipeline.create(HTTP_ALLOWLIST="127.0.0.1/32") as p:
        yield p


def _run_once(pipeline: Pipeline, url: str, **retry: Any):
    job = pipeline.create_job(
        type="http",
        payload={"url": url},
        schedule={"at": START + FAR},
        retry={"max_attempts": 3, "backoff_seconds": 1, **retry},
    )
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.tick()
    messages = pipeline.receive(Band.NORMAL)
    pipeline.deliver(Band.NORMAL, messages)
    (run,) = pipeline.runs_of(job.id)
    return run, messages[0]


@pytest.mark.parametrize("status", [429, 503])
def test_retry_after_in_seconds_sets_the_next_attempts_earliest_time(allowlisted, server, status):
    Answering.status, Answering.headers = status, {"Retry-After": "120"}
    run, message = _run_once(allowlisted, server)
    assert run.status is RunStatus.RETRYING
    assert run.not_before == allowlisted.clock.now() + timedelta(seconds=120)
    assert allowlisted.visibility_set_for(message["ReceiptHandle"])[-1] == 120
    assert run.error is not None
    assert "Retry-After 120s" in run.error.message
    # Not a second earlier: a duplicate message before then is refused by the lease.
    allowlisted.clock.advance(119)
    allowlisted.deliver(Band.NORMAL, [message])
    assert Answering.requests == 1
    Answering.status = 200
    allowlisted.clock.advance(1)
    allowlisted.deliver(Band.NORMAL, [message])
    assert allowlisted.run(run.id).status is RunStatus.SUCCEEDED
    assert Answering.requests == 2


def test_retry_after_as_an_http_date(allowlisted, server):
    when = START + FAR + timedelta(seconds=300)  # the fake clock's time when the call is made, plus 300 s
    Answering.status, Answering.headers = 503, {"Retry-After": format_datetime(when, usegmt=True)}
    run, _ = _run_once(allowlisted, server)
    assert run.status is RunStatus.RETRYING
    assert run.not_before == when


def test_retry_after_is_capped_by_the_jobs_longest_backoff(allowlisted, server):
    Answering.status, Answering.headers = 429, {"Retry-After": "86400"}
    run, _ = _run_once(allowlisted, server, max_backoff_seconds=600)
    assert run.status is RunStatus.RETRYING
    assert run.not_before == allowlisted.clock.now() + timedelta(seconds=600)


def test_a_429_without_retry_after_is_retried_on_the_ordinary_backoff(allowlisted, server):
    Answering.status = 429
    run, _ = _run_once(allowlisted, server)
    assert run.status is RunStatus.RETRYING
    assert run.not_before is not None
    assert run.not_before <= allowlisted.clock.now() + timedelta(seconds=1)


@pytest.mark.parametrize("status", [400, 404, 409])
def test_other_4xx_fail_at_once_without_retries(allowlisted, server, status):
    Answering.status, Answering.headers = status, {"Retry-After": "5"}
    run, _ = _run_once(allowlisted, server)
    assert run.status is RunStatus.FAILED
    assert run.attempts == 1
    assert run.error is not None
    assert run.error.type == "HttpClientError"
    assert str(status) in run.error.message
    assert Answering.requests == 1
    assert [r.id for r in allowlisted.services.queries.list_dlq("default").items] == [run.id]
