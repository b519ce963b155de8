"""The API takes `catchup` and `circuit_breaker` on jobs (create and PATCH), shows the breaker's state, and
refuses bad ones with a 422 naming the field, writing nothing."""

from __future__ import annotations

from typing import Any

import pytest

JOB: dict[str, Any] = {"name": "nightly", "type": "echo", "schedule": {"cron": "0 2 * * *"}}
pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


def _nothing_written(pipeline: Any) -> bool:
    writes = {"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem", "SendMessage"}
    return not writes & set(pipeline.calls.by_operation())


def test_a_job_keeps_its_catchup_and_breaker(api):
    body = {**JOB, "catchup": "ALL", "circuit_breaker": {"failure_threshold": 3, "cooldown_seconds": 300}}
    created = api.post("/v1/jobs", body)
    assert created.status == 201, created.text
    job = api.get(f"/v1/jobs/{created.json['id']}").json
    assert job["catchup"] == "ALL"
    assert job["circuit_breaker"] == {"failure_threshold": 3, "cooldown_seconds": 300, "max_cooldown_seconds": 86400}
    assert (job["state"], job["consecutive_failures"], job["breaker"]) == ("ACTIVE", 0, None)
    patched = api.patch(
        f"/v1/jobs/{job['id']}",
        {"catchup": "NONE", "circuit_breaker": {"failure_threshold": 1, "cooldown_seconds": 60}},
    )
    assert patched.status == 200, patched.text
    assert patched.json["catchup"] == "NONE"
    assert patched.json["circuit_breaker"]["failure_threshold"] == 1


def test_the_default_catchup_is_latest_and_no_breaker(api):
    job = api.post("/v1/jobs", JOB).json
    assert (job["catchup"], job["circuit_breaker"]) == ("LATEST", None)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"catchup": "SOME"}, "catchup"),
        ({"catchup": "latest"}, "catchup"),
        ({"circuit_breaker": {"failure_threshold": 0, "cooldown_seconds": 60}}, "circuit_breaker.failure_threshold"),
        ({"circuit_breaker": {"failure_threshold": 3, "cooldown_seconds": 0}}, "circuit_breaker.cooldown_seconds"),
        ({"circuit_breaker": {"failure_threshold": 3, "cooldown_seconds": 86401}}, "circuit_breaker.cooldown_seconds"),
        ({"circuit_breaker": {"failure_threshold": "3", "cooldown_seconds": 60}}, "circuit_breaker.failure_threshold"),
        ({"circuit_breaker": {"cooldown_seconds": 60}}, "circuit_breaker.failure_threshold"),
        (
            {"circuit_breaker": {"failure_threshold": 3, "cooldown_seconds": 600, "max_cooldown_seconds": 60}},
            "circuit_breaker",
        ),
    ],
)
def test_a_bad_policy_at_create_is_422_naming_the_field_and_writes_nothing(api, pipeline, change, field):
    pipeline.calls.clear()
    reply = api.post("/v1/jobs", {**JOB, **change})
    assert reply.status == 422, reply.text
    assert field in reply.fields, reply.json
    assert _nothing_written(pipeline)


def test_a_bad_policy_in_a_patch_is_422_and_changes_nothing(api, pipeline):
    job = api.post("/v1/jobs", {**JOB, "catchup": "ALL"}).json
    pipeline.calls.clear()
    reply = api.patch(f"/v1/jobs/{job['id']}", {"catchup": "EVERYTHING"})
    assert reply.status == 422
    assert reply.fields == ["catchup"]
    reply = api.patch(f"/v1/jobs/{job['id']}", {"circuit_breaker": {"failure_threshold": -1, "cooldown_seconds": 5}})
    assert reply.status == 422
    assert reply.fields == ["circuit_breaker.failure_threshold"]
    assert _nothing_written(pipeline)
    assert api.get(f"/v1/jobs/{job['id']}").json["catchup"] == "ALL"


def test_resume_of_a_suspended_job_closes_its_breaker(api, pipeline):
    from tickwork.model.policies import BreakerState
    from tickwork.model.states import JobState

    job = api.post("/v1/jobs", {**JOB, "circuit_breaker": {"failure_threshold": 1, "cooldown_seconds": 60}}).json
    now = pipeline.clock.now()
    store = pipeline.services.store
    assert store.breakers.count_failure(job["id"], "a run's end") == 1
    breaker = BreakerState(opens_until=now, cooldown_seconds=60, consecutive_failures=1)
    assert store.breakers.open_breaker(
        job["id"], threshold=1, breaker=breaker, reason="1 consecutive failed runs", now=now
    )
    shown = api.get(f"/v1/jobs/{job['id']}").json
    assert shown["state"] == JobState.SUSPENDED.value
    assert shown["suspended_reason"] == "1 consecutive failed runs"
    assert shown["breaker"]["cooldown_seconds"] == 60
    assert api.post(f"/v1/jobs/{job['id']}/pause", {}).status == 409
    resumed = api.post(f"/v1/jobs/{job['id']}/resume", {})
    assert resumed.status == 200, resumed.text
    assert (resumed.json["state"], resumed.json["breaker"], resumed.json["consecutive_failures"]) == ("ACTIVE", None, 0)
