"""max_active_jobs at the API: a create beyond it is a 429 naming the quota, with Retry-After where waiting
helps, and writes nothing; a replay of a created job is never refused; workflows count as jobs."""

from __future__ import annotations

import json

import pytest

from tests.api.conftest import ACME, GLOBEX, role_identity
from tests.api.test_workflow_routes import DIAMOND

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

ADMIN = role_identity("tickwork-admin", session="ops")
RECURRING = {"name": "r", "type": "echo", "schedule": {"rate": "1 hour"}}


def set_quota(api, tenant="acme", **settings):
    reply = api.request("PUT", f"/v1/tenants/{tenant}", body=settings, identity=ADMIN)
    assert reply.status == 200, reply.text


def active_jobs(api, identity=ACME):
    return api.get("/v1/tenants/me", identity=identity).json["usage"]["active_jobs"]


def job_items(pipeline) -> int:
    return pipeline.count_items(kind="JOB") + pipeline.count_items(kind="WORKFLOW")


def idempotency_items(pipeline) -> int:
    db = pipeline.services.clients.client("dynamodb")
    pages = db.get_paginator("scan").paginate(
        TableName=pipeline.services.settings.table_name,
        FilterExpression="begins_with(pk, :idem)",
        ExpressionAttributeValues={":idem": {"S": "IDEM#"}},
        Select="COUNT",
    )
    return sum(page["Count"] for page in pages)


def test_a_create_over_the_quota_is_429_naming_it_and_writes_nothing(api, pipeline, capsys, request):
    logs = request.getfixturevalue("info_logs")
    set_quota(api, max_active_jobs=2)
    api.create()
    api.create()
    assert active_jobs(api) == 2
    before = job_items(pipeline)
    pipeline.calls.clear()
    capsys.readouterr()

    refused = api.post("/v1/jobs", RECURRING)
    assert refused.status == 429, refused.text
    body = refused.json
    assert body["type"] == "urn:tickwork:problem:quota-exceeded"
    assert (body["quota"], body["limit"], body["current"]) == ("max_active_jobs", 2, 2)
    assert "max_active_jobs" in body["detail"]
    assert "retry-after" not in refused.headers  # only recurring jobs: waiting does not help
    assert pipeline.calls.count("PutItem") == 0
    assert job_items(pipeline) == before
    assert active_jobs(api) == 2
    emitted = capsys.readouterr().out
    assert '"QuotaRefusals"' in emitted
    assert '"Quota":"max_active_jobs"' in emitted
    lines = logs.getvalue().splitlines()
    refusal = next(json.loads(line) for line in lines if "create refused by quota" in line)
    assert (refusal["tenant"], refusal["quota"], refusal["limit"], refusal["current"]) == (
        "acme",
        "max_active_jobs",
        2,
        2,
    )

    # Other tenants are not limited by acme's quota.
    assert api.post("/v1/jobs", RECURRING, identity=GLOBEX).status == 201


def test_retry_after_when_a_one_shot_will_complete_soon(api, pipeline):
    set_quota(api, max_active_jobs=2)
    api.create()
    api.create(schedule={"at": "2026-11-21T12:10:00Z"})  # the harness starts at 12:00:00
    refused = api.post("/v1/jobs", RECURRING)
    assert refused.status == 429
    assert refused.headers["retry-after"] == str(600 + 5)


def test_no_retry_after_when_the_one_shot_is_far_off(api, pipeline):
    set_quota(api, max_active_jobs=1)
    api.create(schedule={"at": "2026-11-22T12:00:00Z"})
    refused = api.post("/v1/jobs", RECURRING)
    assert refused.status == 429
    assert "retry-after" not in refused.headers


def test_cancelling_frees_a_place_and_pausing_does_not(api, pipeline):
    set_quota(api, max_active_jobs=1)
    job = api.create()
    assert api.post(f"/v1/jobs/{job['id']}/pause").status == 200
    assert api.post("/v1/jobs", RECURRING).status == 429  # PAUSED is still active
    assert api.post(f"/v1/jobs/{job['id']}/resume").status == 200
    assert api.patch(f"/v1/jobs/{job['id']}", {"name": "renamed"}).status == 200
    assert api.post("/v1/jobs", RECURRING).status == 429  # a change keeps it counted
    assert api.delete(f"/v1/jobs/{job['id']}").status == 200
    assert active_jobs(api) == 0
    assert api.delete(f"/v1/jobs/{job['id']}").status == 200  # cancelling twice frees it once
    assert active_jobs(api) == 0
    assert api.post("/v1/jobs", RECURRING).status == 201
    assert active_jobs(api) == 1


def test_the_job_view_does_not_show_the_counted_mark(api, pipeline):
    set_quota(api, max_active_jobs=5)
    job = api.create()
    assert "counted_for" not in job
    assert "counted_for" not in api.get(f"/v1/jobs/{job['id']}").json
    assert "counted_for" not in api.get("/v1/jobs").json["items"][0]


def test_workflows_count_as_active_jobs(api, pipeline):
    set_quota(api, max_active_jobs=2)
    api.create()
    workflow = api.post("/v1/workflows", DIAMOND)
    assert workflow.status == 201, workflow.text
    assert active_jobs(api) == 2
    before = job_items(pipeline)
    for path, body in (("/v1/workflows", DIAMOND), ("/v1/jobs", RECURRING)):
        refused = api.post(path, body)
        assert refused.status == 429, (path, refused.text)
        assert refused.json["quota"] == "max_active_jobs"
    assert job_items(pipeline) == before
    assert api.delete(f"/v1/workflows/{workflow.json['id']}").status == 200
    assert active_jobs(api) == 1
    assert api.post("/v1/workflows", DIAMOND).status == 201


def test_an_idempotent_replay_is_not_refused_and_a_refusal_leaves_no_key(api, pipeline):
    set_quota(api, max_active_jobs=1)
    first = api.post("/v1/jobs", RECURRING, headers={"Idempotency-Key": "k-1"})
    assert first.status == 201
    replay = api.post("/v1/jobs", RECURRING, headers={"Idempotency-Key": "k-1"})
    assert replay.status == 201
    assert replay.headers["idempotent-replayed"] == "true"
    assert replay.json == first.json
    keys_before = idempotency_items(pipeline)

    refused = api.post("/v1/jobs", RECURRING, headers={"Idempotency-Key": "k-2"})
    assert refused.status == 429
    assert idempotency_items(pipeline) == keys_before  # no record left claiming k-2
    assert active_jobs(api) == 1

    # Once a place frees, the same key creates (it was not burnt by the refusal).
    assert api.delete(f"/v1/jobs/{first.json['id']}").status == 200
    second = api.post("/v1/jobs", RECURRING, headers={"Idempotency-Key": "k-2"})
    assert second.status == 201
    assert second.headers["idempotent-replayed"] == "false"
    assert active_jobs(api) == 1


def test_a_failed_idempotent_create_gives_its_place_back(api, pipeline, monkeypatch):
    set_quota(api, max_active_jobs=1)
    store = pipeline.services.store

    def fails(*args, **kwargs):
        raise RuntimeError("DynamoDB is down")

    monkeypatch.setattr(store.jobs, "put_new_job", fails)
    assert api.post("/v1/jobs", RECURRING, headers={"Idempotency-Key": "k-1"}).status == 500
    assert api.post("/v1/jobs", RECURRING).status == 500
    assert active_jobs(api) == 0
    monkeypatch.undo()
    assert api.post("/v1/jobs", RECURRING, headers={"Idempotency-Key": "k-1"}).status == 201
    assert active_jobs(api) == 1


def test_a_tenant_without_the_quota_pays_nothing_per_create(api, pipeline):
    api.create()  # reads acme's settings once (cached 30 s)
    pipeline.calls.clear()
    api.create()
    assert pipeline.calls.by_operation() == {"TransactWriteItems": 1}  # the job's put and its audit record
    pipeline.calls.clear()
    api.post("/v1/jobs", RECURRING, headers={"Idempotency-Key": "k-1"})
    ops = pipeline.calls.by_operation()
    assert "BatchGetItem" not in ops
    assert ops["UpdateItem"] == 0 or all(
        "USAGE" not in json.dumps(p.get("Key", {})) for p in pipeline.calls.params("UpdateItem")
    )


def test_a_tenant_with_the_quota_pays_one_update_per_create(api, pipeline):
    set_quota(api, max_active_jobs=10)
    api.create()
    pipeline.calls.clear()
    api.create()
    assert pipeline.calls.by_operation() == {"UpdateItem": 1, "TransactWriteItems": 1}
