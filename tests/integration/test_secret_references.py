"""Secrets by reference against moto's Secrets Manager and SSM: an http job's bearer token as a `$secret` reaches
the server, resolved just before the call; the job keeps the reference; a rotation is picked up once the cache's
5 minutes have passed; a reference the tenant may not use, or one that cannot be read, fails its run for good with
an error naming the reference."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import boto3
import pytest
from tickwork.model.errors import InvalidInput
from tickwork.model.states import RunStatus
from tickwork.store.codec import job_to_item

from tests.harness import START, Pipeline

FAR = timedelta(seconds=300)
TOKEN = "tok-4f1c9a7e-plain-bearer"
ROTATED = "tok-rotated-77d2c1b0"


class Seen(BaseHTTPRequestHandler):
    """Records each request's Authorization header and path; answers 200."""

    requests: list[dict[str, str]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        Seen.requests.append({"authorization": self.headers.get("Authorization", ""), "path": self.path})
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    Seen.requests = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Seen)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


@pytest.fixture
def allowlisted(mocked_aws) -> Iterator[Pipeline]:
    with Pipeline.create(HTTP_ALLOWLIST="127.0.0.1/32") as p:
        yield p


def _secrets() -> Any:
    return boto3.client("secretsmanager", region_name="us-east-1")


def _run_due(pipeline: Pipeline, job_id: str) -> None:
    """Trigger the job and run it to its end."""
    pipeline.services.jobs.trigger("default", job_id)
    pipeline.drain()


def _bearer_job(pipeline: Pipeline, url: str, reference: dict[str, str], **spec: Any):
    return pipeline.create_job(
        type="http",
        payload={"url": url, "headers": {"Authorization": reference}},
        schedule={"at": START + timedelta(days=1)},
        **spec,
    )


def test_an_http_jobs_bearer_token_by_reference_reaches_the_server_and_the_job_keeps_the_reference(allowlisted, server):
    _secrets().create_secret(Name="tickwork/default/api-token", SecretString=f"Bearer {TOKEN}")
    job = _bearer_job(allowlisted, server, {"$secret": "tickwork/default/api-token"})
    _run_due(allowlisted, job.id)

    (run,) = allowlisted.runs_of(job.id)
    assert run.status is RunStatus.SUCCEEDED
    assert [r["authorization"] for r in Seen.requests] == [f"Bearer {TOKEN}"]
    stored = allowlisted.services.queries.get_job("default", job.id)
    assert stored.payload["headers"] == {"Authorization": {"$secret": "tickwork/default/api-token"}}


def test_a_json_key_of_a_secret_and_a_parameter_in_the_query_are_resolved(allowlisted, server):
    arn = _secrets().create_secret(Name="tickwork/default/creds", SecretString=json.dumps({"token": TOKEN}))["ARN"]
    boto3.client("ssm", region_name="us-east-1").put_parameter(
        Name="/tickwork/default/api-key", Value="key-9b8a", Type="SecureString"
    )
    job = allowlisted.create_job(
        type="http",
        payload={
            "url": f"{server}/hook?x=1",
            "headers": {"Authorization": {"$secret": f"{arn}#token"}},
            "query": {"api_key": {"$parameter": "/tickwork/default/api-key"}},
        },
        schedule={"at": START + timedelta(days=1)},
    )
    _run_due(allowlisted, job.id)

    (run,) = allowlisted.runs_of(job.id)
    assert run.status is RunStatus.SUCCEEDED
    assert Seen.requests == [{"authorization": TOKEN, "path": "/hook?x=1&api_key=key-9b8a"}]


def test_a_rotated_secret_is_picked_up_once_the_cached_value_is_five_minutes_old(allowlisted, server):
    secrets = _secrets()
    secrets.create_secret(Name="tickwork/default/api-token", SecretString=TOKEN)
    job = _bearer_job(allowlisted, server, {"$secret": "tickwork/default/api-token"})
    _run_due(allowlisted, job.id)
    secrets.put_secret_value(SecretId="tickwork/default/api-token", SecretString=ROTATED)

    allowlisted.clock.advance(60)  # cached: the old value still
    _run_due(allowlisted, job.id)
    allowlisted.clock.advance(300)  # past the cache's five minutes: fetched again
    _run_due(allowlisted, job.id)

    assert [r["authorization"] for r in Seen.requests] == [TOKEN, TOKEN, ROTATED]


def test_a_stack_whose_secret_cache_is_zero_reads_the_rotated_value_at_the_next_run(mocked_aws, server):
    with Pipeline.create(HTTP_ALLOWLIST="127.0.0.1/32", SECRET_CACHE_SECONDS="0") as pipeline:
        secrets = _secrets()
        secrets.create_secret(Name="tickwork/default/api-token", SecretString=TOKEN)
        job = _bearer_job(pipeline, server, {"$secret": "tickwork/default/api-token"})
        _run_due(pipeline, job.id)
        secrets.put_secret_value(SecretId="tickwork/default/api-token", SecretString=ROTATED)
        _run_due(pipeline, job.id)  # the same instant: nothing is kept

    assert [r["authorization"] for r in Seen.requests] == [TOKEN, ROTATED]


def test_a_reference_to_another_tenants_secret_is_refused_at_create_naming_the_field(allowlisted, server):
    with pytest.raises(InvalidInput) as refused:
        _bearer_job(allowlisted, server, {"$secret": "tickwork/other-team/api-token"})
    (error,) = refused.value.errors
    assert error.field == "payload.headers.Authorization"
    assert "tickwork/other-team/api-token" in error.message
    assert "tickwork/default/" in error.message


def test_a_reference_to_another_tenants_secret_stored_anyway_fails_its_run_without_retries(allowlisted, server):
    """A job stored before the check (or by a path around it): the executor checks the reference again before it
    reads anything."""
    _secrets().create_secret(Name="tickwork/other-team/api-token", SecretString=TOKEN)
    job = _bearer_job(allowlisted, server, {"$secret": "tickwork/default/api-token"}, retry={"max_attempts": 3})
    forged = job.model_copy(
        update={"payload": {"url": server, "headers": {"Authorization": {"$secret": "tickwork/other-team/api-token"}}}}
    )
    services = allowlisted.services
    services.clients.client("dynamodb").put_item(
        TableName=services.settings.table_name, Item=job_to_item(forged, services.store.shards)
    )
    _run_due(allowlisted, job.id)

    (run,) = allowlisted.runs_of(job.id)
    assert run.status is RunStatus.FAILED
    assert run.attempts == 1
    assert run.error is not None
    assert "headers.Authorization" in run.error.message
    assert "tickwork/other-team/api-token" in run.error.message
    assert TOKEN not in run.error.message
    assert Seen.requests == []


def test_a_secret_that_does_not_exist_fails_its_run_without_retries_naming_the_reference(allowlisted, server):
    job = _bearer_job(allowlisted, server, {"$secret": "tickwork/default/missing"}, retry={"max_attempts": 3})
    _run_due(allowlisted, job.id)

    (run,) = allowlisted.runs_of(job.id)
    assert run.status is RunStatus.FAILED
    assert run.attempts == 1
    assert run.error is not None
    assert run.error.type == "SecretUnavailable"
    assert "payload.headers.Authorization" in run.error.message
    assert "tickwork/default/missing" in run.error.message
    assert "ResourceNotFoundException" in run.error.message
    assert Seen.requests == []


def test_a_missing_json_key_fails_its_run_without_retries_and_without_the_value(allowlisted, server):
    _secrets().create_secret(Name="tickwork/default/creds", SecretString=json.dumps({"token": TOKEN}))
    job = _bearer_job(allowlisted, server, {"$secret": "tickwork/default/creds#password"}, retry={"max_attempts": 3})
    _run_due(allowlisted, job.id)

    (run,) = allowlisted.runs_of(job.id)
    assert (run.status, run.attempts) == (RunStatus.FAILED, 1)
    assert run.error is not None
    assert "tickwork/default/creds#password" in run.error.message
    assert TOKEN not in run.error.message


def test_a_workflow_steps_reference_is_resolved_for_its_tenant_when_the_step_runs(allowlisted, server):
    from tests.workflow_runs import create, occur, view

    _secrets().create_secret(Name="tickwork/default/api-token", SecretString=TOKEN)
    steps = [
        {
            "id": "call",
            "type": "http",
            "payload": {"url": server, "headers": {"Authorization": {"$secret": "tickwork/default/api-token"}}},
        }
    ]
    workflow = create(allowlisted, steps)
    run_id = occur(allowlisted, workflow)
    allowlisted.drain()

    assert str(view(allowlisted, run_id).steps["call"].status) == "SUCCEEDED"
    assert [r["authorization"] for r in Seen.requests] == [TOKEN]
