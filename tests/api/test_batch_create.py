"""POST /v1/bulk/jobs/create: up to 25 jobs a request, each checked and created as POST /v1/jobs would (the same
JobSpec, quota and audit record), answered per job in the request's order; a bad job is answered with its fields
and does not stop the others; with an Idempotency-Key, a retry answers each job as the first try did; never
another tenant's; a 26th job is a 422 naming the field."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.api.conftest import ACME, GLOBEX, role_identity

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

ADMIN = role_identity("tickwork-admin", session="ops")


def spec(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": "echo", "schedule": {"rate": "1 hour"}, **extra}


def batch(api, jobs: list[Any], **kwargs: Any) -> Any:
    return api.post("/v1/bulk/jobs/create", {"jobs": jobs}, **kwargs)


def outcomes(reply) -> list[str]:
    assert reply.status == 200, reply.text
    return [item["outcome"] for item in reply.json["items"]]


def test_each_job_is_created_in_order_for_the_callers_tenant_and_audited_like_a_single_create(api, pipeline):
    reply = batch(api, [spec("a"), spec("b", tags={"team": "data"}), spec("c")])
    assert outcomes(reply) == ["created"] * 3
    assert reply.json["created"] == 3
    items = reply.json["items"]
    assert [item["index"] for item in items] == [0, 1, 2]
    assert [item["job"]["name"] for item in items] == ["a", "b", "c"]
    for item in items:
        job = api.get(f"/v1/jobs/{item['job']['id']}").json
        assert (job["name"], job["tenant"], job["state"]) == (item["job"]["name"], "acme", "ACTIVE")
        records = api.get("/v1/audit", query={"resource": job["id"], "action": "job.create"}).json["items"]
        assert [r["actor"]["display"] for r in records] == ["tickwork-tenant-acme/alice"]
    assert api.get(f"/v1/jobs/{items[0]['job']['id']}", identity=GLOBEX).status == 404  # never another tenant's


def test_a_bad_job_is_answered_with_its_fields_and_the_others_are_created(api, pipeline):
    reply = batch(
        api,
        [
            spec("good"),
            {"name": "no type", "schedule": {"rate": "1 hour"}},
            spec("bad cron", schedule={"cron": "61 * * * *"}),
            spec("unknown field", colour="red"),
            spec("also good"),
        ],
    )
    assert outcomes(reply) == ["created", "invalid", "invalid", "invalid", "created"]
    items = reply.json["items"]
    assert [e["field"] for e in items[1]["errors"]] == ["jobs[1].type"]
    assert {e["field"] for e in items[2]["errors"]} == {"jobs[2].schedule.cron"}
    assert [e["field"] for e in items[3]["errors"]] == ["jobs[3].colour"]
    assert all(item["job"] is None for item in items[1:4])
    names = {job["name"] for job in api.get("/v1/jobs").json["items"]}
    assert names == {"good", "also good"}  # nothing written for the bad ones


def test_a_job_that_is_not_an_object_is_a_422_for_the_request_naming_it(api, pipeline):
    reply = batch(api, [spec("good"), "not an object"])
    assert reply.status == 422, reply.text
    assert reply.fields == ["jobs[1]"]
    assert api.get("/v1/jobs").json["items"] == []


def test_a_26th_job_is_422_naming_the_field_and_nothing_is_created(api, pipeline):
    reply = batch(api, [spec(f"j{i}") for i in range(26)])
    assert reply.status == 422, reply.text
    assert reply.fields == ["jobs"]
    assert api.get("/v1/jobs").json["items"] == []
    assert batch(api, []).status == 422  # and none at all


def test_a_retry_with_the_same_key_answers_each_job_as_before_and_creates_only_what_was_not(api, pipeline):
    key = {"Idempotency-Key": "import-7"}
    first = batch(api, [spec("a"), spec("b", schedule={"cron": "bad"})], headers=key)
    assert outcomes(first) == ["created", "invalid"]
    again = batch(api, [spec("a"), spec("b")], headers=key)  # the bad one fixed
    assert outcomes(again) == ["replayed", "created"]
    assert again.json["items"][0]["job"]["id"] == first.json["items"][0]["job"]["id"]
    assert again.json["created"] == 1
    changed = batch(api, [spec("a changed"), spec("b")], headers=key)
    assert outcomes(changed) == ["conflict", "replayed"]
    assert changed.json["items"][0]["errors"][0]["field"].startswith("jobs[0]")
    assert sorted(job["name"] for job in api.get("/v1/jobs").json["items"]) == ["a", "b"]
    # Another tenant's same key is its own.
    assert outcomes(batch(api, [spec("a")], headers=key, identity=GLOBEX)) == ["created"]


def test_jobs_over_the_tenants_quota_are_refused_each_and_the_rest_created(api, pipeline):
    reply = api.request("PUT", "/v1/tenants/acme", body={"max_active_jobs": 2}, identity=ADMIN)
    assert reply.status == 200, reply.text
    reply = batch(api, [spec("a"), spec("b"), spec("c")], identity=ACME)
    assert outcomes(reply) == ["created", "created", "quota_exceeded"]
    assert "max_active_jobs" in reply.json["items"][2]["detail"]
    assert len(api.get("/v1/jobs").json["items"]) == 2


def _writes(pipeline) -> list[str]:
    return sorted(op for _, op, _ in pipeline.calls.calls if op in ("PutItem", "UpdateItem", "TransactWriteItems"))


def test_a_batched_job_costs_the_writes_of_a_single_create(api, pipeline):
    """Each job is written as POST /v1/jobs writes it (its put with its audit record, in one transaction): no
    cheaper DynamoDB batch keeps the create's condition and its audit record (tickwork.control.batch_create)."""
    api.create(name="warm")  # the tenant made known, once per execution environment
    pipeline.calls.clear()
    api.create(name="single")
    single = _writes(pipeline)
    pipeline.calls.clear()
    assert outcomes(batch(api, [spec(f"b{i}") for i in range(3)])) == ["created"] * 3
    assert _writes(pipeline) == sorted(single * 3)
    assert "TransactWriteItems" in single


def test_a_batchs_keys_are_its_own_not_a_single_creates_that_used_key_colon_index(api, pipeline):
    """A single create under "import-8:0" and a batch under "import-8" are two requests: the batch's job 0 is
    neither that job replayed (same body) nor a conflict with it (another body), and the reverse holds too."""
    single = api.post("/v1/jobs", spec("a"), headers={"Idempotency-Key": "import-8:0"})
    assert single.status == 201, single.text
    reply = batch(api, [spec("a"), spec("b")], headers={"Idempotency-Key": "import-8"})
    assert outcomes(reply) == ["created", "created"]
    assert reply.json["items"][0]["job"]["id"] != single.json["id"]
    other = api.post("/v1/jobs", spec("b changed"), headers={"Idempotency-Key": "import-8:1"})
    assert other.status == 201, other.text
    assert other.json["id"] != reply.json["items"][1]["job"]["id"]
    assert sorted(job["name"] for job in api.get("/v1/jobs").json["items"]) == ["a", "a", "b", "b changed"]


LAMBDA_ANSWER_BYTES = 6 * 1024 * 1024  # what Lambda answers a synchronous invoke (API Gateway's) with at most


def _numbers_jobs(count: int) -> str:
    """A request's body of `count` jobs whose payload, 29,000 times `1e5`, is 116 KB as sent and 261 KB as answered
    (`100000.0`): under the 256 KiB payload limit, which measures it as stored."""
    numbers = ",".join(["1e5"] * 29_000)
    job = '{"name":"n","type":"echo","schedule":{"rate":"1 hour"},"payload":{"x":[' + numbers + "]}}"
    return '{"jobs":[' + ",".join([job] * count) + "]}"


def test_a_batch_whose_answer_lambda_could_not_send_is_refused_whole_naming_jobs(api, pipeline):
    """25 jobs of 116 KB (2.9 MB sent, under Lambda's 6 MB) are answered with 25 jobs of 261 KB: over what Lambda
    can answer, so the caller would get a 502 for jobs created, and every retry under its key the same. Refused
    before anything is written; a batch whose answer fits is answered within it."""
    raw = _numbers_jobs(25)
    assert len(raw) < LAMBDA_ANSWER_BYTES / 2
    reply = api.request("POST", "/v1/bulk/jobs/create", raw_body=raw)
    assert reply.status == 413, reply.status
    assert reply.fields == ["jobs"]
    assert api.get("/v1/jobs").json["items"] == []
    fits = api.request("POST", "/v1/bulk/jobs/create", raw_body=_numbers_jobs(20))
    assert outcomes(fits) == ["created"] * 20
    assert len(json.dumps(fits.text)) < LAMBDA_ANSWER_BYTES  # the body as Lambda's answer carries it (a string)
