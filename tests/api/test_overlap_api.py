"""The overlap policies through the API: every value accepted and shown; an unknown one refused with a 422
naming `overlap`, nothing written."""

from __future__ import annotations

from typing import Any

import pytest

WRITES = ("PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem", "SendMessage", "PutObject")

JOB: dict[str, Any] = {"name": "report", "type": "echo", "schedule": {"cron": "0 2 * * *"}}

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


@pytest.mark.parametrize("overlap", ["ALLOW", "SKIP", "BUFFER_ONE", "BUFFER_ALL", "CANCEL_OTHER"])
def test_every_overlap_policy_is_accepted_and_shown(api, overlap):
    reply = api.post("/v1/jobs", {**JOB, "overlap": overlap})
    assert reply.status == 201, reply.text
    assert reply.json["overlap"] == overlap
    assert api.get(f"/v1/jobs/{reply.json['id']}").json["overlap"] == overlap


def test_the_default_overlap_is_allow(api):
    assert api.post("/v1/jobs", JOB).json["overlap"] == "ALLOW"


@pytest.mark.parametrize("overlap", ["buffer_one", "BUFFER_TWO", "CANCEL", "", None, 1])
def test_an_unknown_overlap_policy_is_422_and_writes_nothing(api, pipeline, overlap):
    pipeline.calls.clear()
    reply = api.post("/v1/jobs", {**JOB, "overlap": overlap})
    assert reply.status == 422, reply.text
    assert reply.fields == ["overlap"]
    assert {op: pipeline.calls.count(op) for op in WRITES} == dict.fromkeys(WRITES, 0)
    assert api.get("/v1/jobs").json["items"] == []


def test_a_patch_to_an_unknown_overlap_policy_is_422_and_changes_nothing(api, pipeline):
    job = api.post("/v1/jobs", {**JOB, "overlap": "SKIP"}).json
    pipeline.calls.clear()
    reply = api.patch(f"/v1/jobs/{job['id']}", {"overlap": "CANCEL_ALL"})
    assert reply.status == 422, reply.text
    assert reply.fields == ["overlap"]
    assert {op: pipeline.calls.count(op) for op in WRITES} == dict.fromkeys(WRITES, 0)
    assert api.get(f"/v1/jobs/{job['id']}").json == job


def test_a_patch_changes_the_overlap_policy(api):
    job = api.post("/v1/jobs", {**JOB, "overlap": "SKIP"}).json
    reply = api.patch(f"/v1/jobs/{job['id']}", {"overlap": "BUFFER_ONE"})
    assert reply.status == 200, reply.text
    assert api.get(f"/v1/jobs/{job['id']}").json["overlap"] == "BUFFER_ONE"
