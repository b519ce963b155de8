"""Bad input: the right status, the offending field named, problem+json, never a 500, and nothing written."""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

import pytest
from tickwork.model.clock import iso

from tests.harness import START

WRITES = (
    "PutItem",
    "UpdateItem",
    "DeleteItem",
    "TransactWriteItems",
    "BatchWriteItem",
    "SendMessage",
    "SendMessageBatch",
    "PutObject",
)

VALID: dict[str, Any] = {
    "name": "report",
    "type": "echo",
    "payload": {"hello": "world"},
    "schedule": {"cron": "0 2 * * *", "timezone": "Europe/Paris"},
}


pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


def _with(**changes: Any) -> dict[str, Any]:
    body = copy.deepcopy(VALID)
    for key, value in changes.items():
        if value is _DROP:
            body.pop(key, None)
        else:
            body[key] = value
    return body


_DROP = object()
PAST = iso(START - timedelta(seconds=61))  # a minute and more: within one, a one-shot runs at once
SOON = iso(START + timedelta(hours=1))
HUGE = {"blob": "x" * (256 * 1024)}

# (case id, request body, expected status, expected field)
CREATE_CASES: list[tuple[str, Any, int, str]] = [
    ("bad cron", _with(schedule={"cron": "every day at noon"}), 422, "schedule.cron"),
    ("cron out of range", _with(schedule={"cron": "61 * * * *"}), 422, "schedule.cron"),
    ("cron with 7 fields", _with(schedule={"cron": "0 0 0 * * * *"}), 422, "schedule.cron"),
    ("cron that never fires", _with(schedule={"cron": "0 0 30 2 *"}), 422, "schedule.cron"),
    ("unknown timezone", _with(schedule={"cron": "0 2 * * *", "timezone": "Mars/Olympus"}), 422, "schedule.timezone"),
    ("past at", _with(schedule={"at": PAST}), 422, "schedule.at"),
    ("at not a date", _with(schedule={"at": "tomorrow"}), 422, "schedule.at"),
    ("at and cron together", _with(schedule={"at": SOON, "cron": "* * * * *"}), 422, "schedule"),
    ("no schedule kind", _with(schedule={"timezone": "UTC"}), 422, "schedule"),
    ("schedule missing", _with(schedule=_DROP), 422, "schedule"),
    ("unknown schedule field", _with(schedule={"rate": "5 minutes", "every": 3}), 422, "schedule.every"),
    ("bad rate", _with(schedule={"rate": "5 fortnights"}), 422, "schedule.rate"),
    ("zero rate", _with(schedule={"rate": "0 seconds"}), 422, "schedule.rate"),
    ("end before start", _with(schedule={"rate": "1 hour", "start_at": SOON, "end_at": PAST}), 422, "schedule"),
    ("schedule already ended", _with(schedule={"cron": "0 2 * * *", "end_at": PAST}), 422, "schedule.end_at"),
    ("priority 10", _with(priority=10), 422, "priority"),
    ("priority -1", _with(priority=-1), 422, "priority"),
    ("priority wrong type", _with(priority="high"), 422, "priority"),
    ("negative timeout", _with(timeout_seconds=-5), 422, "timeout_seconds"),
    ("timeout beyond the executor", _with(timeout_seconds=3600), 422, "timeout_seconds"),
    ("negative misfire grace", _with(misfire_grace_seconds=-1), 422, "misfire_grace_seconds"),
    ("zero max attempts", _with(retry={"max_attempts": 0}), 422, "retry.max_attempts"),
    ("backoff cap below base", _with(retry={"backoff_seconds": 60, "max_backoff_seconds": 10}), 422, "retry"),
    ("unknown retry field", _with(retry={"attempts": 3}), 422, "retry.attempts"),
    # Found by schemathesis: a positive number DynamoDB cannot store (below 1e-130) was a 500 at the write.
    ("backoff too small to store", _with(retry={"backoff_seconds": 1.87e-278}), 422, "retry.backoff_seconds"),
    ("backoff under a millisecond", _with(retry={"backoff_seconds": 0.0001}), 422, "retry.backoff_seconds"),
    ("unknown type", _with(type="carrier-pigeon"), 422, "type"),
    ("missing type", _with(type=_DROP), 422, "type"),
    ("missing name", _with(name=_DROP), 422, "name"),
    ("empty name", _with(name=""), 422, "name"),
    ("name wrong type", _with(name=42), 422, "name"),
    ("name too long", _with(name="n" * 201), 422, "name"),
    ("payload is a list", _with(payload=[1, 2]), 422, "payload"),
    ("tag value not a string", _with(tags={"team": 7}), 422, "tags.team"),
    ("overlap unknown", _with(overlap="SOMETIMES"), 422, "overlap"),
    ("notify an unknown event", _with(notify=["Run Exploded"]), 422, "notify[0]"),
    ("notify a freeze event", _with(notify=["Freeze Started"]), 422, "notify[0]"),
    ("deadline zero", _with(deadline={"within_seconds": 0}), 422, "deadline.within_seconds"),
    ("deadline negative", _with(deadline={"within_seconds": -60}), 422, "deadline.within_seconds"),
    (
        "deadline over the job's maximum run time",
        _with(
            timeout_seconds=60,
            max_run_seconds=60,
            retry={"max_attempts": 1},
            misfire_grace_seconds=60,
            deadline={"within_seconds": 121},
        ),
        422,
        "deadline",
    ),
    ("deadline unknown on_miss", _with(deadline={"within_seconds": 60, "on_miss": "PANIC"}), 422, "deadline.on_miss"),
    ("notify not a list", _with(notify="Run Failed"), 422, "notify"),
    ("unknown top-level field", _with(colour="blue"), 422, "colour"),
    ("tenant in the body", _with(tenant="globex"), 422, "tenant"),
    ("echo fail_attempts negative", _with(payload={"fail_attempts": -1}), 422, "payload.fail_attempts"),
    (
        "http url to instance metadata",
        _with(type="http", payload={"url": "http://169.254.169.254/latest/meta-data/"}),
        422,
        "payload.url",
    ),
    (
        "http url to metadata host",
        _with(type="http", payload={"url": "http://metadata.google.internal/x"}),
        422,
        "payload.url",
    ),
    ("http url to loopback", _with(type="http", payload={"url": "http://127.0.0.1:8080/hook"}), 422, "payload.url"),
    ("http url not http", _with(type="http", payload={"url": "ftp://example.com/file"}), 422, "payload.url"),
    (
        "http method unknown",
        _with(type="http", payload={"url": "https://example.com/", "method": "FETCH"}),
        422,
        "payload.method",
    ),
    ("http payload missing url", _with(type="http", payload={}), 422, "payload.url"),
    (
        "lambda bad function",
        _with(type="lambda", payload={"function_arn": "not a function!"}),
        422,
        "payload.function_arn",
    ),
    ("huge payload", _with(payload=HUGE), 413, "payload"),
    ("body is an array", [VALID], 422, "body"),
    ("body is a string", "create a job please", 422, "body"),
]


@pytest.mark.parametrize(("body", "status", "field"), [c[1:] for c in CREATE_CASES], ids=[c[0] for c in CREATE_CASES])
def test_bad_create_names_the_field_and_writes_nothing(api, pipeline, body, status, field):
    pipeline.calls.clear()
    reply = api.post("/v1/jobs", body)
    assert reply.status == status, reply.text
    assert reply.headers["content-type"] == "application/problem+json"
    problem = reply.json
    assert problem["status"] == status
    assert {"type", "title", "status", "detail"} <= set(problem)
    assert field in reply.fields, problem
    assert all(e["message"] for e in problem["errors"])
    assert {op: pipeline.calls.count(op) for op in WRITES} == dict.fromkeys(WRITES, 0)
    assert api.get("/v1/jobs").json["items"] == []


def _assert_nothing_written(pipeline):
    assert {op: pipeline.calls.count(op) for op in WRITES} == dict.fromkeys(WRITES, 0)


def test_missing_body(api, pipeline):
    pipeline.calls.clear()
    reply = api.post("/v1/jobs")
    assert reply.status == 422
    assert reply.fields == ["body"]
    _assert_nothing_written(pipeline)


@pytest.mark.parametrize("raw", ["{not json", '{"name": "x",}', "[1, 2"])
def test_malformed_json_is_400_naming_the_body(api, pipeline, raw):
    pipeline.calls.clear()
    reply = api.post("/v1/jobs", raw_body=raw)
    assert reply.status == 400
    assert reply.headers["content-type"] == "application/problem+json"
    assert reply.fields == ["body"]
    _assert_nothing_written(pipeline)


def test_non_json_content_type_is_415(api, pipeline):
    pipeline.calls.clear()
    reply = api.post("/v1/jobs", raw_body="name=x", headers={"content-type": "application/x-yaml"})
    assert reply.status == 415
    assert reply.fields == ["Content-Type"]
    _assert_nothing_written(pipeline)


def test_bad_idempotency_key_writes_nothing(api, pipeline):
    pipeline.calls.clear()
    reply = api.post("/v1/jobs", VALID, headers={"Idempotency-Key": "has#hash and spaces"})
    assert reply.status == 422
    assert reply.fields == ["Idempotency-Key"]
    _assert_nothing_written(pipeline)


def test_bad_body_with_an_idempotency_key_records_no_key(api, pipeline):
    pipeline.calls.clear()
    reply = api.post("/v1/jobs", _with(schedule={"at": PAST}), headers={"Idempotency-Key": "k-1"})
    assert reply.status == 422
    assert reply.fields == ["schedule.at"]
    _assert_nothing_written(pipeline)
    # The key is still free: a good body under it creates.
    assert api.post("/v1/jobs", VALID, headers={"Idempotency-Key": "k-1"}).status == 201


LIST_CASES = [
    ("limit zero", {"limit": 0}, "limit"),
    ("limit over 100", {"limit": 101}, "limit"),
    ("limit not a number", {"limit": "lots"}, "limit"),
    ("unknown state", {"state": "SLEEPING"}, "state"),
    ("garbage cursor", {"cursor": "not-a-cursor"}, "cursor"),
    ("tampered cursor", {"cursor": "eyJ2IjoxLCJrIjoiMSJ9.AAAAAAAAAAAAAAAAAAAAAA"}, "cursor"),
]


@pytest.mark.parametrize(("query", "field"), [c[1:] for c in LIST_CASES], ids=[c[0] for c in LIST_CASES])
def test_bad_listing_queries_name_the_parameter(api, query, field):
    reply = api.get("/v1/jobs", query=query)
    assert reply.status in (400, 422)
    assert field in reply.fields


def test_bad_run_status_filter_and_dlq_limit(api):
    job = api.create()
    assert api.get(f"/v1/jobs/{job['id']}/runs", query={"status": "DONE"}).fields == ["status"]
    assert api.get("/v1/dlq", query={"limit": -3}).fields == ["limit"]


PATCH_CASES: list[tuple[str, Any, int, str]] = [
    ("priority 10", {"priority": 10}, 422, "priority"),
    ("type cannot change", {"type": "http"}, 422, "type"),
    ("null name", {"name": None}, 422, "name"),
    ("past at", {"schedule": {"at": PAST}}, 422, "schedule.at"),
    ("bad cron", {"schedule": {"cron": "* * *"}}, 422, "schedule.cron"),
    ("payload fails the type's model", {"payload": {"fail_attempts": "often"}}, 422, "payload.fail_attempts"),
    ("huge payload", {"payload": HUGE}, 413, "payload"),
    ("negative timeout", {"timeout_seconds": -1}, 422, "timeout_seconds"),
    ("retry wrong type", {"retry": "always"}, 422, "retry"),
]


@pytest.mark.parametrize(("body", "status", "field"), [c[1:] for c in PATCH_CASES], ids=[c[0] for c in PATCH_CASES])
def test_bad_patch_names_the_field_and_writes_nothing(api, pipeline, body, status, field):
    job = api.create(schedule={"rate": "1 hour"})
    pipeline.calls.clear()
    reply = api.patch(f"/v1/jobs/{job['id']}", body)
    assert reply.status == status, reply.text
    assert field in reply.fields
    _assert_nothing_written(pipeline)
    assert api.get(f"/v1/jobs/{job['id']}").json == job


def test_patch_of_an_http_job_checks_the_url(api, pipeline):
    job = api.create(type="http", payload={"url": "https://example.com/hook"})
    pipeline.calls.clear()
    reply = api.patch(f"/v1/jobs/{job['id']}", {"payload": {"url": "http://169.254.169.254/"}})
    assert reply.status == 422
    assert reply.fields == ["payload.url"]
    _assert_nothing_written(pipeline)


REDRIVE_CASES = [
    ("run_ids not a list", {"run_ids": "all"}, "run_ids"),
    ("run_ids empty", {"run_ids": []}, "run_ids"),
    ("run id not a string", {"run_ids": [7]}, "run_ids[0]"),
    ("unknown field", {"everything": True}, "everything"),
    ("run_ids null", {"run_ids": None}, "run_ids"),
    ("all not true", {"all": False}, "all"),
    ("all and run_ids", {"all": True, "run_ids": ["x"]}, "all"),
]


@pytest.mark.parametrize(("body", "field"), [c[1:] for c in REDRIVE_CASES], ids=[c[0] for c in REDRIVE_CASES])
def test_bad_redrive_names_the_field_and_writes_nothing(api, pipeline, body, field):
    pipeline.calls.clear()
    reply = api.post("/v1/dlq/redrive", body)
    assert reply.status == 422
    assert field in reply.fields
    _assert_nothing_written(pipeline)


def test_unknown_ids_are_404_problems(api):
    job = api.create()
    for path in (
        "/v1/jobs/nope",
        "/v1/jobs/j0000000000000000000000000",
        "/v1/runs/nope",
        f"/v1/runs/{job['id']}.1795262400000",
        f"/v1/runs/{job['id']}.1795262400000/result",
    ):
        reply = api.get(path)
        assert reply.status == 404, path
        assert reply.headers["content-type"] == "application/problem+json"
    assert api.post("/v1/jobs/nope/pause").status == 404
    assert api.post(f"/v1/runs/{job['id']}.1795262400000/retry").status == 404
    assert api.patch("/v1/jobs/nope", {"name": "x"}).status == 404
    assert api.delete("/v1/jobs/nope").status == 404


def test_conflicts_are_409(api):
    job = api.create()
    api.delete(f"/v1/jobs/{job['id']}")
    for action in ("resume", "pause", "trigger"):
        reply = api.post(f"/v1/jobs/{job['id']}/{action}")
        assert reply.status == 409, action
        assert reply.headers["content-type"] == "application/problem+json"
        assert reply.json["title"] == "Conflict"
