"""The API takes concurrency and rate_limit on jobs (create and PATCH) and workflow steps; bad ones are a 422
naming the field, with nothing written."""

from __future__ import annotations

from typing import Any

import pytest

WRITES = ("PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem", "SendMessage")
JOB: dict[str, Any] = {"name": "charge", "type": "echo", "schedule": {"cron": "0 2 * * *"}}

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


def _writes(pipeline: Any) -> dict[str, int]:
    return {op: pipeline.calls.count(op) for op in WRITES}


def test_a_job_keeps_its_concurrency_and_rate_limit(api):
    body = {**JOB, "concurrency": {"key": "stripe", "limit": 2}, "rate_limit": {"key": "stripe", "per_minute": 30}}
    created = api.post("/v1/jobs", body)
    assert created.status == 201, created.text
    job = api.get(f"/v1/jobs/{created.json['id']}").json
    assert job["concurrency"] == {"key": "stripe", "limit": 2}
    assert job["rate_limit"] == {"key": "stripe", "per_minute": 30}
    patched = api.patch(f"/v1/jobs/{job['id']}", {"rate_limit": {"key": "stripe", "per_second": 0.5}})
    assert patched.status == 200, patched.text
    assert patched.json["rate_limit"]["per_second"] == 0.5
    assert patched.json["concurrency"] == {"key": "stripe", "limit": 2}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"concurrency": {"key": "k", "limit": 0}}, "concurrency.limit"),
        ({"concurrency": {"key": "k", "limit": 1001}}, "concurrency.limit"),
        ({"concurrency": {"key": "", "limit": 2}}, "concurrency.key"),
        ({"concurrency": {"key": "k" * 129, "limit": 2}}, "concurrency.key"),
        ({"concurrency": {"limit": 2}}, "concurrency.key"),
        ({"concurrency": "stripe"}, "concurrency"),
        ({"rate_limit": {"key": "k"}}, "rate_limit"),
        ({"rate_limit": {"key": "k", "per_second": 1, "per_minute": 1}}, "rate_limit"),
        ({"rate_limit": {"key": "k", "per_second": 0}}, "rate_limit.per_second"),
        ({"rate_limit": {"key": "k", "per_minute": -3}}, "rate_limit.per_minute"),
        ({"rate_limit": {"key": "k", "per_minute": "6"}}, "rate_limit.per_minute"),
    ],
)
def test_a_bad_limit_at_create_is_422_naming_the_field_and_writes_nothing(api, pipeline, change, field):
    pipeline.calls.clear()
    reply = api.post("/v1/jobs", {**JOB, **change})
    assert reply.status == 422, reply.text
    assert field in reply.fields, reply.json
    assert _writes(pipeline) == dict.fromkeys(WRITES, 0)


def test_a_bad_limit_in_a_patch_is_422_and_changes_nothing(api, pipeline):
    job = api.post("/v1/jobs", {**JOB, "concurrency": {"key": "k", "limit": 2}}).json
    pipeline.calls.clear()
    reply = api.patch(f"/v1/jobs/{job['id']}", {"concurrency": {"key": "k", "limit": -1}})
    assert reply.status == 422
    assert reply.fields == ["concurrency.limit"]
    assert _writes(pipeline) == dict.fromkeys(WRITES, 0)
    assert api.get(f"/v1/jobs/{job['id']}").json["concurrency"] == {"key": "k", "limit": 2}


def test_a_workflow_steps_bad_limit_is_422_naming_the_step(api, pipeline):
    pipeline.calls.clear()
    body = {
        "name": "wf",
        "schedule": {"cron": "0 2 * * *"},
        "steps": [
            {"id": "a", "type": "echo", "concurrency": {"key": "k", "limit": 1}},
            {"id": "b", "type": "echo", "rate_limit": {"key": "k", "per_second": 0}},
        ],
    }
    reply = api.post("/v1/workflows", body)
    assert reply.status == 422, reply.text
    assert any(f.startswith("steps") and f.endswith("rate_limit.per_second") for f in reply.fields), reply.fields
    assert _writes(pipeline) == dict.fromkeys(WRITES, 0)
