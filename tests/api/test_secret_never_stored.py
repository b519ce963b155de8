"""The acceptance test of secrets by reference (issue 35): a planted secret value, used by jobs that succeed, fail,
retry, yield and are redriven from the DLQ, and by handlers that log it, report it as progress, checkpoint it, save
it as a step, return it and put it in their errors, is found nowhere afterwards: not in any item of the table, any
object of the results bucket, any run event, any log line the functions wrote (as Powertools wrote them, and as
any other handler of the records would), nor any API answer about those jobs and runs. The console's pages about such runs, as Chromium renders them:
tests/browser/test_console_progress.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

import tests.secret_leaker  # noqa: F401 - registers the secret-leaker type
from tests.harness import Pipeline
from tests.http_upstream import JsonUpstream, serving

PLANTED = "planted-0b5e2c9d-4f6a-8e1b-secret"
REFERENCE = {"$secret": "tickwork/acme/planted"}


class Echo(JsonUpstream):
    """Answers with the Authorization header it was sent, in its body and in a header."""

    seen: list[str] = []

    def do_POST(self) -> None:
        self.read_body()
        given = self.headers.get("Authorization", "")
        Echo.seen.append(given)
        self.answer({"you_sent": given}, {"X-Echo": given})


@pytest.fixture
def echo_server() -> Iterator[str]:
    Echo.seen = []
    with serving(Echo) as url:
        yield url


@pytest.fixture
def pipeline(mocked_aws) -> Iterator[Pipeline]:
    with Pipeline.create(HTTP_ALLOWLIST="127.0.0.1/32") as p:
        yield p


@pytest.fixture
def consumer(pipeline: Pipeline) -> Any:
    from tests.integration.test_run_events_pipeline import Consumer

    return Consumer(pipeline.services.clients)


def _table_items(pipeline: Pipeline) -> list[dict[str, Any]]:
    """Every item of the table (a scan: the test's, never the code's)."""
    db = pipeline.services.clients.client("dynamodb")
    items: list[dict[str, Any]] = []
    for page in db.get_paginator("scan").paginate(TableName=pipeline.services.settings.table_name):
        items += page["Items"]
    # An audit record is kept compressed (tickwork.store.audit): searched as the text it holds, not its bytes.
    from tickwork.store.audit import record_of

    for item in items:
        if "B" in item.get("record", {}):
            item["record"] = {"S": record_of({"record": item["record"]["B"]}).model_dump_json()}
    return items


def _bucket_objects(pipeline: Pipeline) -> dict[str, bytes]:
    s3 = pipeline.s3
    bucket = pipeline.resources.results_bucket
    keys = [
        o["Key"]
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket)
        for o in page.get("Contents", [])
    ]
    return {key: s3.get_object(Bucket=bucket, Key=key)["Body"].read() for key in keys}


def test_a_planted_secret_is_found_nowhere_after_jobs_used_it_through_every_outcome(
    pipeline, api, echo_server, consumer, info_logs, capsys, caplog
):
    boto3.client("secretsmanager", region_name="us-east-1").create_secret(
        Name="tickwork/acme/planted", SecretString=PLANTED
    )
    answers: list[str] = []

    def answered(reply: Any) -> Any:
        answers.append(reply.text)
        return reply

    at = {"rate": "1 hour"}
    jobs = {
        "http": api.create(
            type="http", schedule=at, payload={"url": echo_server, "headers": {"Authorization": REFERENCE}}
        ),
        "succeed": api.create(type="secret-leaker", schedule=at, payload={"token": REFERENCE, "mode": "succeed"}),
        "fail": api.create(
            type="secret-leaker",
            schedule=at,
            payload={"token": REFERENCE, "mode": "fail"},
            retry={"max_attempts": 2, "backoff_seconds": 1},
        ),
        "yield": api.create(type="secret-leaker", schedule=at, payload={"token": REFERENCE, "mode": "yield"}),
    }
    for job in jobs.values():
        answers.append(json.dumps(job))
        assert answered(api.post(f"/v1/jobs/{job['id']}/trigger", {})).status in (200, 201, 202)
    pipeline.drain()
    # The failed run is redriven from the DLQ, and fails again.
    assert answered(api.post("/v1/dlq/redrive", {"all": True})).json["redriven"] == 1
    pipeline.drain()

    assert Echo.seen == [PLANTED]  # the handler was given the value
    statuses = {}
    for name, job in jobs.items():
        answered(api.get(f"/v1/jobs/{job['id']}"))
        runs = answered(api.get(f"/v1/jobs/{job['id']}/runs")).json["items"]
        statuses[name] = sorted(run["status"] for run in runs)
        for run in runs:
            answered(api.get(f"/v1/runs/{run['id']}"))
            answered(api.get(f"/v1/runs/{run['id']}/result"))
            answered(api.get(f"/v1/runs/{run['id']}/logs"))
    answered(api.get("/v1/dlq"))
    answered(api.get("/v1/jobs"))
    assert statuses == {"http": ["SUCCEEDED"], "succeed": ["SUCCEEDED"], "fail": ["FAILED"], "yield": ["SUCCEEDED"]}
    (yielded,) = pipeline.runs_of(jobs["yield"]["id"])
    assert yielded.segments == 1  # it yielded once, and went on from its checkpoint
    (failed,) = pipeline.runs_of(jobs["fail"]["id"])
    assert (failed.attempts, failed.requeues) == (2, 1)  # two attempts, redriven, two more
    assert json.loads(api.get(f"/v1/jobs/{jobs['http']['id']}").text)["payload"]["headers"] == {
        "Authorization": REFERENCE
    }

    places = {
        "the table": json.dumps(_table_items(pipeline)),
        "the results bucket": "\n".join(body.decode(errors="replace") for body in _bucket_objects(pipeline).values()),
        "run events": json.dumps(consumer.events()),
        "the functions' log lines": info_logs.getvalue(),  # as Powertools writes them, at INFO
        "the functions' output": capsys.readouterr().out,
        "the log records": "\n".join(record.getMessage() + repr(vars(record)) for record in caplog.records),
        "the API's answers": "\n".join(answers),
    }
    assert all(text for text in places.values())
    found_in = [place for place, text in places.items() if PLANTED in text]
    assert not found_in, f"the planted value is in {', '.join(found_in)}"
    assert "handler sees ***" in places["the functions' log lines"]
    assert "you_sent" in places["the results bucket"]  # the echoed header's result is there, masked
    assert "the server refused ***" in places["the table"]  # the failure's error is there, masked
