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
def waits() -> list[float]:
    """The client's sleeps between attempts, recorded."""
    return []


@pytest.fixture
def tickwork(cli: Any, waits: list[float]) -> Any:
    """A client whose waits between attempts are recorded, and move the scheduler's clock on."""
    from tickwork_cli.api_client import Client

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        cli.pipeline.clock.advance(seconds)

    return Client(URL, sleep=sleep, now=cli.pipeline.clock.now)


def _sent(cli: Any, method: str, path: str) -> list[tuple[str, str, dict[str, str], bytes | None]]:
    return [s for s in cli.transport.sent if s[0] == method and s[1].split("?")[0] == URL + path]


def test_a_job_round_trip_in_the_apis_own_models(cli, tickwork):
    created = tickwork.create_job(JobSpec.model_validate(HOURLY))
    assert isinstance(created, Job)
    assert (created.name, created.schedule.cron, created.version) == ("hourly", "0 * * * *", 1)
    # next_run_at aside: created on an occurrence's instant (the fake clock's), the create's answer has the one
    # after it, a read's that instant (tickwork.model.upcoming.next_occurrence: at or after now)
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
    """Answers 429 (or `status`) with a Retry-After to the first `times` requests, then lets them through."""

    through: Any
    times: int
    retry_after: str = "7"
    refused: list[str] = field(default_factory=list)
    status: int = 429

    def __call__(
        self, method: str, url: str, headers: dict[str, str], body: bytes | None, timeout: float = 30.0
    ) -> Any:
        from tickwork_cli.client import HttpResponse

        if len(self.refused) < self.times:
            self.refused.append(url)
            problem = {
                "type": "about:blank",
                "title": "Too Many Requests",
                "status": self.status,
                "detail": "slow down",
            }
            return HttpResponse(self.status, {"Retry-After": self.retry_after}, json.dumps(problem).encode())
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


def test_workflows_calendars_freezes_previews_and_a_runs_cancel_and_retry_answer_in_their_models(cli, tickwork):
    from tickwork.control.api_bodies import Preview, WorkflowRun
    from tickwork.model.calendars import Calendar
    from tickwork.model.freezes import Freeze
    from tickwork.model.workflow.definition import Workflow
    from tickwork_cli.api_client import ApiError

    from tests.api.test_workflow_routes import DIAMOND

    workflow = tickwork.create_workflow(DIAMOND)
    assert isinstance(workflow, Workflow)
    assert tickwork.get_workflow(workflow.id).name == "diamond"
    assert [w.id for w in tickwork.list_workflows()] == [workflow.id]
    started = tickwork.trigger_workflow(workflow.id)
    assert isinstance(started, WorkflowRun)
    assert started.workflow_id == workflow.id

    calendar = tickwork.create_calendar({"name": "holidays", "windows": [{"dates": ["2026-12-25"]}]})
    assert isinstance(calendar, Calendar)
    assert tickwork.list_calendars() == [calendar]
    freeze = tickwork.create_freeze({"selector": {"tags": {"team": "payments"}}, "for_seconds": 1800, "reason": "r"})
    assert isinstance(freeze, Freeze)
    assert [f.id for f in tickwork.list_freezes()] == [freeze.id]

    job = tickwork.create_job(HOURLY)
    preview = tickwork.preview_job(job.id, count=3)
    assert isinstance(preview, Preview)
    assert len(preview.items) == 3
    assert len(tickwork.preview_schedule({"schedule": {"cron": "0 * * * *"}, "count": 2}).items) == 2

    queued = tickwork.trigger_job(job.id, {"payload": {"n": 9}})
    with pytest.raises(ApiError) as refused:
        tickwork.retry_run(queued.id)  # only a FAILED run is retried
    assert refused.value.status == 409
    with pytest.raises(ApiError) as refused:
        tickwork.cancel_run(queued.id)  # only a RUNNING run is cancelled
    assert refused.value.status == 409
    assert "QUEUED" in refused.value.detail


@dataclass
class Recording:
    """Answers every request with `status` (and a job-shaped nothing), keeping what was sent."""

    status: int = 200
    sent: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)

    def __call__(
        self, method: str, url: str, headers: dict[str, str], body: bytes | None, timeout: float = 30.0
    ) -> Any:
        from tickwork_cli.client import HttpResponse

        self.sent.append((method, url, dict(headers)))
        answer = {"items": [], "next_cursor": None} if self.status < 300 else {"status": self.status, "title": "t"}
        return HttpResponse(self.status, {}, json.dumps(answer).encode())


@pytest.fixture
def recording(monkeypatch: pytest.MonkeyPatch) -> Recording:
    from tickwork_cli import client

    recorded = Recording()
    monkeypatch.setattr(client, "transport", recorded)
    return recorded


DEPLOYED = "https://abc123.execute-api.eu-west-1.amazonaws.com"


def test_given_credentials_sign_with_sigv4_in_the_urls_region(recording):
    from botocore.credentials import Credentials
    from tickwork_cli.api_client import Client

    list(Client(DEPLOYED, credentials=Credentials("AKIDCLIENTTEST000001", "s3cret")).list_jobs())
    (_, url, headers) = recording.sent[0]
    assert url.startswith(DEPLOYED + "/v1/jobs")
    assert headers["Authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDCLIENTTEST000001/")
    assert "/eu-west-1/execute-api/aws4_request" in headers["Authorization"]


def test_a_token_is_sent_as_a_bearer_and_an_api_key_as_x_api_key_unsigned(recording):
    from tickwork_cli.api_client import Client, ConfigError

    list(Client(DEPLOYED, token="eyJ.token.sig").list_jobs())
    list(Client("http://127.0.0.1:3000", api_key="local-key").list_jobs())
    bearer, keyed = (headers for _, _, headers in recording.sent)
    assert bearer["Authorization"] == "Bearer eyJ.token.sig"
    assert keyed["X-Api-Key"] == "local-key"
    assert "Authorization" not in keyed
    with pytest.raises(ConfigError):
        Client(DEPLOYED, token="t", api_key="k")


def test_a_5xx_is_retried_where_a_repeat_is_safe_and_not_on_a_trigger(recording, waits):
    from tickwork_cli.api_client import ApiError, Client

    recording.status = 503
    tickwork = Client("http://127.0.0.1:3000", sleep=waits.append)
    with pytest.raises(ApiError):
        tickwork.get_job("j" + "0" * 25)
    assert len(recording.sent) == 4
    with pytest.raises(ApiError):
        tickwork.trigger_job("j" + "0" * 25)
    assert len(recording.sent) == 5  # a trigger sent again could run twice
    assert len(waits) == 3
    assert all(0 <= wait <= 20 for wait in waits)


def test_the_operator_reads_answer_in_their_models(cli, tickwork):
    from tickwork import __version__
    from tickwork.control.api_bodies import CallerView, Health, TenantView
    from tickwork.control.metrics_bodies import Catalogue, MetricsBody

    me = tickwork.me()
    assert isinstance(me, CallerView)
    assert me.tenant == "default"
    mine = tickwork.my_tenant()
    assert isinstance(mine, TenantView)
    assert mine == tickwork.get_tenant("default")
    assert tickwork.set_tenant("default", {"weight": 3}).weight == 3
    assert tickwork.my_tenant().settings.weight == 3
    health = tickwork.health()
    assert isinstance(health, Health)
    assert (health.version, health.region.mode) == (__version__, "single")
    assert "/v1/jobs" in tickwork.openapi()["paths"]
    catalogue = tickwork.metrics_catalogue()
    assert isinstance(catalogue, Catalogue)
    figures = tickwork.metrics(names=catalogue.items[0].name, period=300)
    assert isinstance(figures, MetricsBody)
    assert {series.name for series in figures.series} == {catalogue.items[0].name}
    assert [record.action for record in tickwork.audit(resource="default")] == ["tenant.settings"]


def test_a_listing_gives_one_page_in_its_model_or_every_item_from_a_cursor_on(cli, tickwork):
    from tickwork.control.api_bodies import JobList

    created = [tickwork.create_job({**HOURLY, "name": f"n{n}"}) for n in range(3)]
    first = tickwork.list_jobs(page_size=2).page()
    assert isinstance(first, JobList)
    assert len(first.items) == 2
    assert first.next_cursor
    rest = list(tickwork.list_jobs(page_size=2).items(first.next_cursor))
    assert sorted(job.id for job in [*first.items, *rest]) == sorted(job.id for job in created)


def test_a_jobs_and_a_workflows_whole_life_through_the_client(cli, tickwork):
    from tickwork.control.api_bodies import BackfillResponse
    from tickwork.control.bulk_jobs import BulkJobsResult

    from tests.api.test_workflow_routes import DIAMOND

    job = tickwork.create_job({**HOURLY, "tags": {"team": "data"}})
    backfilled = tickwork.backfill_job(job.id, {"from": "2026-11-21T09:00:00Z", "to": "2026-11-21T11:00:00Z"})
    assert isinstance(backfilled, BackfillResponse)
    assert backfilled.created == 3
    paused = tickwork.bulk_jobs({"action": "pause", "selector": {"tags": {"team": "data"}}})
    assert isinstance(paused, BulkJobsResult)
    assert [(item.job_id, item.state) for item in paused.items] == [(job.id, "PAUSED")]

    workflow = tickwork.create_workflow(DIAMOND)
    assert tickwork.update_workflow(workflow.id, {"priority": 3}).priority == 3
    assert tickwork.pause_workflow(workflow.id).state == "PAUSED"
    assert tickwork.resume_workflow(workflow.id).state == "ACTIVE"
    started = tickwork.trigger_workflow(workflow.id)
    assert [run.id for run in tickwork.list_workflow_runs(workflow.id)] == [started.id]
    assert tickwork.get_workflow_run(started.id).workflow_id == workflow.id
    assert tickwork.cancel_workflow_run(started.id, {"compensate": True}).status in ("CANCELLED", "COMPENSATING")
    assert tickwork.cancel_workflow(workflow.id).state == "CANCELLED"


def test_the_cli_retries_as_the_client_does_a_read_after_a_503_and_a_trigger_never(cli, throttled, monkeypatch):
    """The CLI calls through the typed client: a read that met a 503 is sent again after the CLI's own wait; a
    trigger, which sent again could run twice, fails at once with the API's problem."""
    from tickwork_cli import clock

    job = cli.json("jobs", "create", "--name", "n", "--type", "echo", "--cron", "0 * * * *")  # after two 429s
    waited: list[float] = []
    monkeypatch.setattr(clock, "sleep", waited.append)
    throttled.status, throttled.times, throttled.refused = 503, 1, []
    assert cli.json("jobs", "get", job["id"])["id"] == job["id"]
    assert (len(throttled.refused), len(waited)) == (1, 1)

    throttled.times, throttled.refused = 1, []
    refused = cli("jobs", "trigger", job["id"], output="table")
    assert refused.exit_code == 1
    assert refused.stderr.startswith("Error 503 Too Many Requests")
    assert len(throttled.refused) == 1
    assert len(waited) == 1  # no wait: not sent again
    assert [r["trigger"] for r in cli.json("runs", "list", job["id"])["items"]] == []


@dataclass
class RepeatingCursor:
    """An API that answers every page, a listing's or a bulk action's, with the cursor it was asked with (or `c1`):
    a loop no end of pages stops. Refuses past `cap` requests, so a client that follows it forever fails here."""

    cap: int = 10
    sent: list[str] = field(default_factory=list)

    def __call__(
        self, method: str, url: str, headers: dict[str, str], body: bytes | None, timeout: float = 30.0
    ) -> Any:
        from tickwork_cli.client import HttpResponse

        self.sent.append(url)
        if len(self.sent) > self.cap:
            raise RuntimeError("the client follows a repeating cursor without end")
        answer: dict[str, Any] = {"items": [], "next_cursor": "c1"}
        if method == "POST":
            answer["action"] = json.loads(body or b"{}")["action"]
        return HttpResponse(200, {}, json.dumps(answer).encode())


@pytest.fixture
def repeating(monkeypatch: pytest.MonkeyPatch) -> RepeatingCursor:
    from tickwork_cli import client

    api = RepeatingCursor()
    monkeypatch.setattr(client, "transport", api)
    return api


def test_a_cursor_the_api_answered_before_ends_a_listing_with_an_error(repeating):
    from tickwork_cli.api_client import ApiError, Client

    with pytest.raises(ApiError) as looped:
        list(Client(URL).list_jobs())
    assert "c1" in str(looped.value)
    assert len(repeating.sent) == 2  # the first page, and the one its cursor names: that answers it again


def test_the_clis_bulk_action_stops_at_a_cursor_the_api_answered_before(cli, repeating):
    looped = cli("jobs", "pause", "--all")
    assert looped.exit_code == 1
    assert "c1" in looped.stderr
    assert len(repeating.sent) == 2
