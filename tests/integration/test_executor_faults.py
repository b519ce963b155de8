"""Executor fault paths against moto: http jobs, heartbeats, lost leases, timeouts, overlap, retry."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from botocore.exceptions import ClientError
from pydantic import BaseModel
from tickwork.aws.results import result_key_of
from tickwork.jobtypes import RunContext, job_type, registry
from tickwork.model.errors import Conflict, InvalidInput, NotFound
from tickwork.model.policies import Band
from tickwork.model.states import RunStatus, SkipReason
from tickwork.observability import logger

from tests.harness import START, Pipeline

FAR = timedelta(seconds=300)


class Recorder(BaseHTTPRequestHandler):
    seen: list[dict[str, Any]] = []
    status = 200

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        Recorder.seen.append({"path": self.path, "headers": dict(self.headers), "body": body.decode()})
        payload = json.dumps({"ok": Recorder.status < 300}).encode()
        self.send_response(Recorder.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def http_server() -> Iterator[str]:
    Recorder.seen = []
    Recorder.status = 200
    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture
def allowlisted(mocked_aws) -> Iterator[Pipeline]:
    with Pipeline.create(HTTP_ALLOWLIST="127.0.0.1/32") as p:
        yield p


def _due(pipeline: Pipeline, **spec: Any):
    job = pipeline.create_job(schedule={"at": START + FAR}, **spec)
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.tick()
    return job


def test_http_job_sends_the_run_id_as_idempotency_key(allowlisted, http_server):
    job = _due(allowlisted, type="http", payload={"url": f"{http_server}/hook?x=1", "body": {"a": 1}})
    allowlisted.drain()
    (run,) = allowlisted.runs_of(job.id)
    assert run.status is RunStatus.SUCCEEDED
    (request,) = Recorder.seen
    assert request["headers"]["Idempotency-Key"] == run.id
    assert request["path"] == "/hook?x=1"
    assert json.loads(request["body"]) == {"a": 1}
    key = result_key_of("default", job.id, run.id)
    result = json.loads(allowlisted.s3.get_object(Bucket=allowlisted.resources.results_bucket, Key=key)["Body"].read())
    assert result["status"] == 200
    assert result["body"] == {"ok": True}


def test_http_non_2xx_fails_and_retries_with_the_same_key(allowlisted, http_server):
    Recorder.status = 503
    job = _due(allowlisted, type="http", payload={"url": http_server}, retry={"max_attempts": 2})
    allowlisted.drain()
    (run,) = allowlisted.runs_of(job.id)
    assert run.status is RunStatus.FAILED
    assert run.error is not None
    assert "503" in run.error.message
    assert [r["headers"]["Idempotency-Key"] for r in Recorder.seen] == [run.id, run.id]


@pytest.mark.parametrize(
    ("url", "fragment"),
    [
        ("http://169.254.169.254/latest/meta-data/", "metadata"),
        ("http://[fe80::1]/", "link-local"),
        ("http://metadata.google.internal/computeMetadata/v1/", "metadata endpoint"),
        ("http://127.0.0.1:9/", "private or loopback"),
        ("http://10.0.0.8/", "private or loopback"),
        ("ftp://example.com/", "http:// or https://"),
    ],
)
def test_http_job_refuses_metadata_link_local_and_private_targets_at_create(pipeline, url, fragment):
    with pytest.raises(InvalidInput) as info:
        pipeline.create_job(type="http", payload={"url": url}, schedule={"at": START + FAR})
    assert info.value.errors[0].field == "payload.url"
    assert fragment in info.value.errors[0].message
    assert pipeline.calls.count("PutItem") == 0


def test_a_private_target_s_refusal_names_the_template_parameter_and_how_to_set_it(pipeline):
    """Not the function's variable HTTP_ALLOWLIST, which no user sets: the parameter, deployed and locally."""
    with pytest.raises(InvalidInput) as info:
        pipeline.create_job(type="http", payload={"url": "http://127.0.0.1:9/"}, schedule={"at": START + FAR})
    message = info.value.errors[0].message
    assert "HTTP_ALLOWLIST" not in message
    assert "HttpAllowlist=127.0.0.1/32" in message
    assert "tickwork dev --parameter HttpAllowlist=127.0.0.1/32" in message
    assert "--parameter-overrides" in message


def test_a_name_resolving_to_loopback_names_the_parameter_in_the_run_s_error(pipeline):
    job = _due(pipeline, type="http", payload={"url": "http://localhost:9/"})
    pipeline.drain()
    (run,) = pipeline.runs_of(job.id)
    assert run.error is not None
    assert "tickwork dev --parameter HttpAllowlist=" in run.error.message, run.error.message


def test_metadata_address_is_refused_even_when_allowlisted(allowlisted):
    with pytest.raises(InvalidInput):
        allowlisted.create_job(type="http", payload={"url": "http://169.254.169.254/"}, schedule={"at": START + FAR})


def test_a_name_resolving_to_loopback_is_refused_at_run_time_without_retries(pipeline):
    job = _due(pipeline, type="http", payload={"url": "http://localhost:9/"}, retry={"max_attempts": 5})
    pipeline.drain()
    (run,) = pipeline.runs_of(job.id)
    assert run.status is RunStatus.FAILED
    assert run.attempts == 1  # refusing is permanent: retrying cannot help
    assert run.error is not None
    assert run.error.type == "UrlRefused"


def test_long_runs_heartbeat_the_lease_and_the_message_visibility(pipeline):
    job = _due(pipeline, payload={"sleep_seconds": 150}, timeout_seconds=300)
    pipeline.drain()
    (run,) = pipeline.runs_of(job.id)
    assert run.status is RunStatus.SUCCEEDED
    assert run.duration_ms == 150_000
    first, *beats = [p["VisibilityTimeout"] for p in pipeline.calls.params("ChangeMessageVisibility")]
    assert first == 75  # before the lease is taken, the message is set to return when it would end (+15 s)
    assert len(beats) >= 6  # every 20 s of a 60 s lease, over 150 s
    assert set(beats) == {75}  # visibility follows the lease
    lease_writes = [
        p
        for p in pipeline.calls.params("UpdateItem")
        if p.get("UpdateExpression", "").startswith("SET lease_until = :lu,")
    ]
    assert len(lease_writes) == len(beats)


class StealPayload(BaseModel):
    pass


if "steal-lease" not in registry:

    @job_type("steal-lease", StealPayload)
    def steal_lease(payload: StealPayload, ctx: RunContext) -> dict[str, Any]:
        """Another executor takes the lease mid-run (ours was thought dead), then we keep working."""
        store = ctx.clients  # injected below
        store.force_owner(ctx.run_id)
        ctx.sleep(60)
        return {"should": "never be written"}


def test_a_run_whose_lease_is_lost_stops_and_writes_nothing(pipeline):
    class Thief:
        def force_owner(self, run_id: str) -> None:
            from tickwork.store import run_key

            pipeline.services.clients.client("dynamodb").update_item(
                TableName=pipeline.services.settings.table_name,
                Key=run_key(run_id),
                UpdateExpression="SET lease_owner = :o",
                ExpressionAttributeValues={":o": {"S": "thief"}},
            )

    executor = pipeline.services.executor
    executor.handlers = replace(executor.handlers, clients=Thief())
    job = _due(pipeline, type="steal-lease")
    pipeline.drain()
    (run,) = pipeline.runs_of(job.id)
    assert run.status is RunStatus.RUNNING  # the thief owns it now; we recorded nothing
    assert pipeline.result_objects() == []


def test_a_message_the_executor_could_not_carry_through_is_reported_failed_and_logged_with_its_run(
    pipeline, monkeypatch, caplog
):
    """Its first ChangeMessageVisibility failed past the SDK's retries: the message waits out the queue's visibility,
    and the run's re-send brings it. The record's failure says which run, at a level the nodes print."""
    job = _due(pipeline)

    def refused(*_: Any, **__: Any) -> bool:
        raise ClientError({"Error": {"Code": "InternalError", "Message": "try again"}}, "ChangeMessageVisibility")

    monkeypatch.setattr(pipeline.services.queues, "change_visibility", refused)
    caplog.set_level(logging.WARNING, logger=logger.name)
    messages = pipeline.receive(Band.NORMAL)
    assert pipeline.deliver(Band.NORMAL, messages) == {m["MessageId"] for m in messages}
    (run,) = pipeline.runs_of(job.id)
    assert run.status is RunStatus.QUEUED  # never leased: the tick's re-send is its way back
    (failure,) = [r for r in caplog.records if getattr(r, "run_id", None) == run.id]
    assert failure.levelno == logging.ERROR
    assert "not carried through" in failure.getMessage()
    assert failure.exc_info is not None
    assert isinstance(failure.exc_info[1], ClientError)


def test_a_run_over_its_timeout_fails_with_run_timeout(pipeline):
    job = _due(pipeline, payload={"sleep_seconds": 100}, timeout_seconds=10, retry={"max_attempts": 1})
    pipeline.drain()
    (run,) = pipeline.runs_of(job.id)
    assert run.status is RunStatus.FAILED
    assert run.error is not None
    assert run.error.type == "RunTimeout"
    assert run.duration_ms == 10_000
    assert pipeline.result_objects() == []


def test_overlap_skip_records_the_second_run_skipped_while_the_first_runs(pipeline):
    job = pipeline.create_job(schedule={"at": START + FAR}, overlap="SKIP")
    first = pipeline.services.jobs.trigger("default", job.id)
    # The first run is running: leased, holding the job's running slot (what the executor takes under SKIP).
    now = pipeline.clock.now()
    pipeline.services.store.leases.lease_run(first.id, owner="busy", now=now, lease_for=timedelta(minutes=5))
    assert pipeline.services.store.slots.take_running_slot(
        job.id, run_id=first.id, until=now + timedelta(minutes=5), now=now
    )
    pipeline.clock.advance(1)
    second = pipeline.services.jobs.trigger("default", job.id)
    messages = pipeline.receive(Band.NORMAL)
    mine = [m for m in messages if json.loads(m["Body"])["run_id"] == second.id]
    pipeline.deliver(Band.NORMAL, mine)
    assert pipeline.run(second.id).status is RunStatus.SKIPPED
    assert pipeline.run(second.id).skip_reason is SkipReason.OVERLAP


def test_trigger_runs_now_even_while_paused(pipeline):
    job = pipeline.create_job(schedule={"cron": "0 3 * * *"})
    pipeline.services.jobs.pause("default", job.id)
    run = pipeline.services.jobs.trigger("default", job.id)
    assert run.id.endswith(".m")
    pipeline.drain()
    assert pipeline.run(run.id).status is RunStatus.SUCCEEDED


def test_cancelled_jobs_cannot_be_triggered_or_resumed(pipeline):
    job = pipeline.create_job(schedule={"cron": "0 3 * * *"})
    pipeline.services.jobs.cancel("default", job.id)
    pipeline.services.jobs.cancel("default", job.id)  # idempotent
    with pytest.raises(Conflict):
        pipeline.services.jobs.trigger("default", job.id)
    with pytest.raises(Conflict):
        pipeline.services.jobs.resume("default", job.id)
    assert pipeline.tick()["dispatched"] == 0


def test_retrying_a_failed_run_starts_its_attempts_again(pipeline):
    job = _due(pipeline, payload={"fail_attempts": 1}, retry={"max_attempts": 1})
    pipeline.drain()
    (run,) = pipeline.runs_of(job.id)
    assert run.status is RunStatus.FAILED
    with pytest.raises(NotFound):
        pipeline.services.redrive.retry_run("default", job.id + ".0000000000000")
    # The user fixes the job's payload, then retries the failed run.
    fixed = pipeline.services.store.jobs.get_job(job.id)
    assert fixed is not None
    pipeline.services.store.jobs.replace_job(
        fixed.model_copy(update={"payload": {"fixed": True}, "version": fixed.version + 1}),
        expected_version=fixed.version,
    )
    pipeline.clock.advance(600)  # ten minutes later
    requeued = pipeline.services.redrive.retry_run("default", run.id)
    assert requeued.attempts == 0
    pipeline.drain()
    done = pipeline.run(run.id)
    assert done.status is RunStatus.SUCCEEDED
    assert done.attempts == 1  # attempts started again
    assert done.error is None
    assert done.requeues == 1
    assert done.started_at is not None
    assert done.started_at > run.started_at  # a new execution, measured afresh
    assert done.lateness_ms == 600_000
    with pytest.raises(Conflict):
        pipeline.services.redrive.retry_run("default", run.id)  # only FAILED runs


def test_resume_applies_the_misfire_rule_to_what_was_missed(pipeline):
    job = pipeline.create_job(schedule={"cron": "*/10 * * * *"}, misfire_grace_seconds=120)
    pipeline.services.jobs.pause("default", job.id)
    pipeline.clock.advance(3600)  # paused for an hour
    pipeline.services.jobs.resume("default", job.id)
    pipeline.tick()
    runs = pipeline.runs_of(job.id)
    skipped = [r for r in runs if r.status is RunStatus.SKIPPED]
    assert {r.skip_reason for r in skipped} == {SkipReason.PAUSED}
    # 12:10 .. 12:50 fell while paused and are beyond the 2-minute grace: each recorded, none run.
    assert [r.scheduled_for for r in skipped] == [START + timedelta(minutes=m) for m in (10, 20, 30, 40, 50)]
    # 13:00 is the resume instant itself: within grace, so it runs.
    queued = [r.scheduled_for for r in runs if r.status is RunStatus.QUEUED]
    assert queued[0] == START + timedelta(hours=1)


def test_lambda_job_invokes_through_the_executors_client_and_records_its_error(pipeline):
    # moto can't run a function without Docker; invoking a missing one is a real answer from the service.
    job = _due(pipeline, type="lambda", payload={"function_arn": "tickwork-job-missing"}, retry={"max_attempts": 2})
    pipeline.drain()
    (run,) = pipeline.runs_of(job.id)
    assert run.status is RunStatus.FAILED
    assert run.attempts == 2
    assert run.error is not None
    assert "Function not found" in run.error.message
    invokes = pipeline.calls.params("Invoke")
    assert [p["FunctionName"] for p in invokes] == ["tickwork-job-missing"] * 2
    assert all(p["InvocationType"] == "RequestResponse" for p in invokes)


def test_lambda_job_rejects_a_malformed_function_at_create(pipeline):
    with pytest.raises(InvalidInput) as info:
        pipeline.create_job(type="lambda", payload={"function_arn": "not a function!"}, schedule={"at": START + FAR})
    assert info.value.errors[0].field == "payload.function_arn"


def test_a_run_whose_function_left_invokable_function_arns_fails_at_once_without_invoking(pipeline):
    """A job accepted before the stack's InvokableFunctionArns changed: its run is checked by the same rule and
    fails at its first attempt, naming the parameter, where IAM would deny every retry."""
    from tickwork.model.targets import TargetRules

    job = _due(pipeline, type="lambda", payload={"function_arn": "tickwork-job-report"}, retry={"max_attempts": 3})
    executor = pipeline.services.executor
    prefix = pipeline.services.settings.function_arn_prefix
    narrowed = TargetRules(invokable_functions=(f"{prefix}team-*",), function_arn_prefix=prefix)
    executor.handlers = replace(executor.handlers, targets=narrowed)
    pipeline.drain()
    (run,) = pipeline.runs_of(job.id)
    assert (run.status, run.attempts) == (RunStatus.FAILED, 1)
    assert run.error is not None
    assert "InvokableFunctionArns" in run.error.message
    assert pipeline.calls.count("Invoke") == 0
