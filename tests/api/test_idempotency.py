"""POST /v1/jobs with Idempotency-Key: same key and body within 24 h -> the first response; other body -> 409."""

from __future__ import annotations

from datetime import timedelta

import pytest
from tickwork.control.api_bodies import JobSpec
from tickwork.control.idempotent_create import request_hash
from tickwork.model.clock import iso

from tests.api.conftest import ACME, GLOBEX
from tests.harness import START

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

BODY = {"name": "billing", "type": "echo", "payload": {"invoice": 42}, "schedule": {"rate": "1 hour"}}


def _create(api, body=BODY, key="order-42", identity=ACME):
    return api.post("/v1/jobs", body, headers={"Idempotency-Key": key}, identity=identity)


def _job_count(api, identity=ACME):
    return len(api.get("/v1/jobs", identity=identity).json["items"])


def test_same_key_and_body_return_the_first_response(api, pipeline):
    first = _create(api)
    assert first.status == 201
    assert first.headers["idempotent-replayed"] == "false"
    pipeline.calls.clear()
    pipeline.clock.advance(3600)
    again = _create(api)
    assert again.status == 201
    assert again.headers["idempotent-replayed"] == "true"
    assert again.json == first.json
    assert pipeline.calls.count("PutItem") == 0  # a replay writes nothing
    assert _job_count(api) == 1


def test_key_order_and_whitespace_do_not_make_a_different_body(api):
    first = _create(api)
    reordered = api.post(
        "/v1/jobs",
        raw_body='{"schedule": {"rate": "1 hour"},   "payload": {"invoice": 42}, "type": "echo", "name": "billing"}',
        headers={"Idempotency-Key": "order-42"},
    )
    assert reordered.status == 201
    assert reordered.json["id"] == first.json["id"]


def test_the_first_response_stands_even_after_the_job_changed(api):
    first = _create(api)
    api.post(f"/v1/jobs/{first.json['id']}/pause")
    again = _create(api)
    assert again.json["state"] == "ACTIVE"
    assert again.json == first.json


def test_a_replay_after_a_one_shot_time_passed_still_returns_the_first_response(api, pipeline):
    body = {**BODY, "schedule": {"at": iso(START + timedelta(minutes=10))}}
    first = _create(api, body)
    pipeline.clock.advance(3600)  # `at` is now in the past: a new create would be a 422
    assert api.post("/v1/jobs", body).status == 422
    again = _create(api, body)
    assert again.status == 201
    assert again.json == first.json


def test_a_different_body_under_the_same_key_is_409_and_writes_nothing(api, pipeline):
    _create(api)
    pipeline.calls.clear()
    other = _create(api, {**BODY, "name": "different"})
    assert other.status == 409
    assert other.headers["content-type"] == "application/problem+json"
    assert other.fields == ["Idempotency-Key"]
    assert pipeline.calls.count("PutItem") == 0
    assert _job_count(api) == 1


def test_the_key_expires_after_24_hours(api, pipeline):
    first = _create(api)
    pipeline.clock.advance(24 * 3600 + 1)
    later = _create(api)
    assert later.status == 201
    assert later.headers["idempotent-replayed"] == "false"
    assert later.json["id"] != first.json["id"]
    # ... and a different body is then fine too, under a fresh 24 h.
    assert _create(api).json["id"] == later.json["id"]


def test_keys_are_per_tenant(api):
    mine = _create(api, identity=ACME)
    theirs = _create(api, identity=GLOBEX)
    assert theirs.status == 201
    assert theirs.headers["idempotent-replayed"] == "false"
    assert theirs.json["id"] != mine.json["id"]
    assert theirs.json["tenant"] == "globex"
    # A different body under the same key in another tenant is not a conflict either.
    assert _create(api, {**BODY, "name": "x"}, identity=role("tickwork-tenant-initech")).status == 201


def role(name):
    from tests.api.conftest import role_identity

    return role_identity(name)


def test_without_a_key_each_post_creates(api):
    a = api.post("/v1/jobs", BODY)
    b = api.post("/v1/jobs", BODY)
    assert a.json["id"] != b.json["id"]
    assert "idempotent-replayed" not in a.headers


def test_a_request_that_died_after_recording_its_key_is_completed_by_the_retry(api, pipeline):
    """The key and job id were recorded, then the process died before the job was written."""
    now = pipeline.clock.now()
    pipeline.services.idempotency.claim(
        "acme", "order-42", request_hash=request_hash(BODY), job_id="j01m7yzmhg0000000000000000", now=now
    )
    retried = _create(api)
    assert retried.status == 201
    assert retried.headers["idempotent-replayed"] == "true"
    assert retried.json["id"] == "j01m7yzmhg0000000000000000"
    assert api.get("/v1/jobs/j01m7yzmhg0000000000000000").status == 200
    assert _create(api).json == retried.json


def test_concurrent_first_requests_create_one_job(api, pipeline):
    """Two requests with the same key both pass the read; the conditional write picks one winner."""
    records = pipeline.services.idempotency
    create = pipeline.services.idempotent_create
    spec = JobSpec.model_validate(BODY)
    digest = request_hash(BODY)
    original = records.find
    records.find = lambda *a, **k: None  # type: ignore[method-assign] # both see no record yet
    try:
        first, replayed_first = create.create_job_once("acme", spec, key="race", request_hash=digest)
        second, replayed_second = create.create_job_once("acme", spec, key="race", request_hash=digest)
    finally:
        records.find = original  # type: ignore[method-assign]
    assert (replayed_first, replayed_second) == (False, True)
    assert second == first
    assert _job_count(api) == 1


def test_a_tenant_whose_first_job_came_with_a_key_is_in_an_admins_every_tenant_listing(api):
    """The defect: a create with an Idempotency-Key did not make its tenant known (tickwork.store.tenants), so an
    admin's `tenant=*` listing left out every job of a tenant that had created only so."""
    from tests.api.test_tenant_admin_routes import ADMIN

    created = _create(api, identity=GLOBEX)
    assert created.status == 201, created.text
    listed = api.get("/v1/jobs", identity=ADMIN, query={"tenant": "*"})
    assert listed.status == 200, listed.text
    assert [(job["id"], job["tenant"]) for job in listed.json["items"]] == [(created.json["id"], "globex")]
