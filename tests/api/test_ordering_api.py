"""Ordering keys through the API: accepted and shown on the job and its runs; a key over 256 bytes refused with a
422 naming `ordering.key`, nothing written; `POST /v1/runs/{id}/skip` refuses a run that blocks no key."""

from __future__ import annotations

from typing import Any

import pytest

WRITES = ("PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem", "SendMessage", "PutObject")

JOB: dict[str, Any] = {"name": "ledger", "type": "echo", "schedule": {"cron": "0 2 * * *"}}

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


def test_an_ordering_key_is_accepted_shown_and_carried_by_the_jobs_runs(api):
    reply = api.post("/v1/jobs", {**JOB, "ordering": {"key": "ledger-eu"}})
    assert reply.status == 201, reply.text
    assert reply.json["ordering"] == {"key": "ledger-eu", "on_failure": "block"}
    run = api.post(f"/v1/jobs/{reply.json['id']}/trigger").json
    assert run["ordering"] == {"key": "ledger-eu", "on_failure": "block"}


def test_a_buffer_all_jobs_runs_are_ordered_by_the_jobs_id_and_a_failure_lets_the_next_go(api):
    job = api.post("/v1/jobs", {**JOB, "overlap": "BUFFER_ALL"}).json
    run = api.post(f"/v1/jobs/{job['id']}/trigger").json
    assert run["ordering"] == {"key": job["id"], "on_failure": "continue"}


@pytest.mark.parametrize(
    "key", ["k" * 257, "€" * 86, ""], ids=["257 ASCII bytes", "258 bytes in 86 characters", "empty"]
)
def test_an_ordering_key_over_256_bytes_or_empty_is_422_and_writes_nothing(api, pipeline, key):
    pipeline.calls.clear()
    reply = api.post("/v1/jobs", {**JOB, "ordering": {"key": key}})
    assert reply.status == 422, reply.text
    assert reply.fields == ["ordering.key"]
    assert {op: pipeline.calls.count(op) for op in WRITES} == dict.fromkeys(WRITES, 0)


def test_a_key_of_exactly_256_bytes_is_accepted(api):
    reply = api.post("/v1/jobs", {**JOB, "ordering": {"key": "€" * 85 + "k"}})
    assert reply.status == 201, reply.text


def test_an_unknown_on_failure_is_422(api):
    reply = api.post("/v1/jobs", {**JOB, "ordering": {"key": "k", "on_failure": "skip"}})
    assert reply.status == 422, reply.text
    assert reply.fields == ["ordering.on_failure"]


def test_a_patch_with_a_key_over_256_bytes_is_422_and_changes_nothing(api, pipeline):
    job = api.post("/v1/jobs", {**JOB, "ordering": {"key": "k"}}).json
    pipeline.calls.clear()
    reply = api.patch(f"/v1/jobs/{job['id']}", {"ordering": {"key": "k" * 257}})
    assert reply.status == 422, reply.text
    assert reply.fields == ["ordering.key"]
    assert {op: pipeline.calls.count(op) for op in WRITES} == dict.fromkeys(WRITES, 0)
    assert api.get(f"/v1/jobs/{job['id']}").json == job


def test_skipping_a_run_of_no_ordering_key_is_409(api):
    job = api.post("/v1/jobs", JOB).json
    run = api.post(f"/v1/jobs/{job['id']}/trigger").json
    reply = api.post(f"/v1/runs/{run['id']}/skip")
    assert reply.status == 409, reply.text
    assert "no ordering key" in reply.json["detail"]


def test_skipping_a_run_that_has_not_failed_is_409(api):
    job = api.post("/v1/jobs", {**JOB, "ordering": {"key": "k"}}).json
    run = api.post(f"/v1/jobs/{job['id']}/trigger").json
    reply = api.post(f"/v1/runs/{run['id']}/skip")
    assert reply.status == 409, reply.text
    assert "QUEUED" in reply.json["detail"]


def test_skipping_an_unknown_run_is_404(api):
    assert api.post("/v1/runs/j01m7yzmhg0000000000000000.1795262400000/skip").status == 404
