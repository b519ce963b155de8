"""The typed Python client (tickwork_cli.api_client), in process against the API handler through the CLI's
transport: a round trip in the API's own models, listings followed page by page, a refused field named, a 429
retried after its Retry-After, and a job create that is idempotent by its key."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from tickwork.control.api_bodies import JobSpec, TriggeredRun
from tickwork.model.job import Job
from tickwork.model.run import Run
from tickwork.model.states import RunTrigger

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

URL = "http://127.0.0.1:3000"
HOURLY = {"name": "hourly", "type": "echo", "payload": {"n": 1}, "schedule": {"cron": "0 * * * *"}}


@pytest.fixture
def waits(cli: Any, monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The client's sleeps between attempts, recorded (and the clock moved on by them)."""
    from tickwork_cli import api_client

    waited: list[float] = []

    def sleep(seconds: float) -> None:
        waited.append(seconds)
        cli.pipeline.clock.advance(seconds)

    monkeypatch.setattr(api_client, "sleep", sleep)
    return waited


@pytest.fixture
def tickwork(cli: Any, waits: list[float]) -> Any:
    from tickwork_cli.api_client import Client

    return Client(URL)


def _sent(cli: Any, method: str, path: str) -> list[tuple[str, str, dict[str, str], bytes | None]]:
    return [s for s in cli.transport.sent if s[0] == method and s[1].split("?")[0] == URL + path]


def test_a_job_round_trip_in_the_apis_own_models(cli, tickwork):
    created = tickwork.create_job(JobSpec.model_validate(HOURLY))
    assert isinstance(created, Job)
    assert (created.name, created.schedule.cron, created.version) == ("hourly", "0 * * * *", 1)
    # (next_run_at aside: a create's answer has the occurrence after now, a read's the next one claimed or not)
    assert tickwork.get_job(created.id).model_copy(update={"next_run_at": created.next_run_at}) == created

    others = [tickwork.create_job({**HOURLY, "name": f"other-{n}"}) for n in range(2)]
    listed = list(tickwork.list_jobs(page_size=2))
    assert sorted(job.id for job in listed) == sorted(job.id for job in [created, *others])
    assert len(_sent(cli, "GET", "/v1/jobs")) == 2  # two pages: the second asked with the first's cursor
    assert "cursor=" in _sent(cli, "GET", "/v1/jobs")[1][1]

    paused = tickwork.pause_job(created.id)
    assert paused.state == "PAUSED"
    assert tickwork.resume_job(created.id).state == "ACTIVE"
    assert tickwork.update_job(created.id, {"payload": {"n": 2}}).payload == {"n": 2}

    triggered = tickwork.trigger_job(created.id)
    assert isinstance(triggered, TriggeredRun)
    cli.pipeline.drain()
    run = tickwork.get_run(triggered.id)
    assert isinstance(run, Run)
    assert (run.job_id, run.status) == (created.id, "SUCCEEDED")
    assert [r.id for r in tickwork.list_runs(created.id)] == [run.id]
    assert [r.id for r in tickwork.search_runs(job_id=created.id, trigger=RunTrigger.MANUAL)] == [run.id]
    assert tickwork.cancel_job(created.id).state == "CANCELLED"


def test_a_refused_field_is_one_error_carrying_the_apis_problem_with_the_fields_name(cli, tickwork):
    from tickwork_cli.api_client import ApiError

    with pytest.raises(ApiError) as refused:
        tickwork.create_job({**HOURLY, "schedule": {"cron": "61 * * * *"}})
    assert refused.value.status == 422
    assert refused.value.fields == ["schedule.cron"]
    assert refused.value.title
    assert list(tickwork.list_jobs()) == []  # nothing was created
    assert len(_sent(cli, "POST", "/v1/jobs")) == 1  # a refusal is not retried


@dataclass
class Throttling:
    """Answers 429 with a Retry-After to the first `times` requests, then lets them through."""

    through: Any
    times: int
    retry_after: str = "7"
    refused: list[str] = field(default_factory=list)

    def __call__(
        self, method: str, url: str, headers: dict[str, str], body: bytes | None, timeout: float = 30.0
    ) -> Any:
        from tickwork_cli.client import HttpResponse

        if len(self.refused) < self.times:
            self.refused.append(url)
            problem = {"type": "about:blank", "title": "Too Many Requests", "status": 429, "detail": "slow down"}
            return HttpResponse(429, {"Retry-After": self.retry_after}, json.dumps(problem).encode())
        return self.through(method, url, headers, body)


@pytest.fixture
def throttled(cli: Any, monkeypatch: pytest.MonkeyPatch) -> Throttling:
    from tickwork_cli import client

    throttling = Throttling(cli.transport, times=2)
    monkeypatch.setattr(client, "transport", throttling)
    return throttling


def test_a_429_is_retried_not_before_its_retry_after_and_the_create_is_made_once(cli, tickwork, throttled, waits):
    created = tickwork.create_job(HOURLY)
    assert len(throttled.refused) == 2
    assert len(waits) == 2
    assert all(wait >= 7 for wait in waits)
    assert [job.id for job in tickwork.list_jobs()] == [created.id]


def test_retries_are_bounded_and_the_last_answer_is_raised(cli, tickwork, throttled, waits):
    from tickwork_cli.api_client import ApiError

    throttled.times = 99
    with pytest.raises(ApiError) as refused:
        tickwork.get_job("j" + "0" * 25)
    assert (refused.value.status, refused.value.detail) == (429, "slow down")
    assert len(throttled.refused) == 4  # the client's default attempts
    assert len(waits) == 3


def test_every_job_create_sends_an_idempotency_key_and_a_repeat_with_it_answers_the_same_job(cli, tickwork):
    first = tickwork.create_job(HOURLY)
    second = tickwork.create_job(HOURLY)
    keys = [headers["Idempotency-Key"] for _, _, headers, _ in _sent(cli, "POST", "/v1/jobs")]
    assert len(set(keys)) == 2
    assert first.id != second.id

    once = tickwork.create_job(HOURLY, idempotency_key="reminder-42")
    again = tickwork.create_job(HOURLY, idempotency_key="reminder-42")
    assert again == once
    assert len(list(tickwork.list_jobs())) == 3
