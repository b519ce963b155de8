"""Every route of the v1 contract, through the real handler, against moto and the real pipeline."""

from __future__ import annotations

from datetime import timedelta

import pytest
from tickwork import __version__
from tickwork.model.clock import iso

from tests.api.conftest import ACME
from tests.harness import START

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


def _due_in(seconds: float) -> dict[str, str]:
    return {"at": iso(START + timedelta(seconds=seconds))}  # type: ignore[dict-item]


def test_health_and_openapi(api):
    health = api.get("/v1/health")
    assert health.status == 200
    assert health.json == {
        "status": "ok",
        "version": __version__,
        "region": {
            "mode": "single",
            "region": "us-east-1",
            "active_region": None,
            "epoch": None,
            "since": None,
            "handing_over_to": None,
            "handing_over_from": None,
            "replication_lag_ms": None,
            "replication_lag_reason": "not RegionMode eventual",
        },
    }
    doc = api.get("/v1/openapi.json")
    assert doc.status == 200
    assert doc.json["openapi"].startswith("3.")
    assert doc.json["info"]["version"] == __version__


def test_every_answer_carries_the_stack_version(api):
    """The CLI reads it to warn when it is older than the stack (tickwork_cli.versions), with no request of its own."""
    assert api.get("/v1/health").headers["x-tickwork-version"] == __version__
    assert api.get("/v1/jobs").headers["x-tickwork-version"] == __version__
    missing = api.get("/v1/jobs/job_does_not_exist")
    assert missing.status == 404
    assert missing.headers["x-tickwork-version"] == __version__


def test_create_then_get_an_echo_job_and_watch_its_run(api, pipeline):
    created = api.post(
        "/v1/jobs",
        {"name": "hello", "type": "echo", "payload": {"hello": "world"}, "schedule": _due_in(300)},
    )
    assert created.status == 201
    assert created.headers["content-type"] == "application/json"
    job = created.json
    assert job["state"] == "ACTIVE"
    assert job["next_run_at"] == "2026-11-21T12:05:00.000Z"
    assert job["created_at"] == "2026-11-21T12:00:00.000Z"
    assert job["tenant"] == "acme"

    got = api.get(f"/v1/jobs/{job['id']}")
    assert got.status == 200
    assert got.json == job

    # moto's SQS delays are real time: move the fake clock to the run's time, then tick and execute.
    pipeline.clock.advance(300)
    assert pipeline.tick()["dispatched"] == 1
    pipeline.clock.advance(0.1)
    assert pipeline.drain() == 1
    runs = api.get(f"/v1/jobs/{job['id']}/runs")
    assert runs.status == 200
    (run,) = runs.json["items"]
    assert runs.json["next_cursor"] is None
    assert run["status"] == "SUCCEEDED"
    assert run["scheduled_for"] == "2026-11-21T12:05:00.000Z"
    assert run["attempts"] == 1
    assert run["lateness_ms"] == 100
    for name in ("id", "job_id", "started_at", "finished_at", "error", "result"):
        assert name in run

    one = api.get(f"/v1/runs/{run['id']}")
    assert one.status == 200
    assert one.json == run
    result = api.get(f"/v1/runs/{run['id']}/result")
    assert result.status == 200
    assert result.json == {"hello": "world"}
    assert api.get(f"/v1/jobs/{job['id']}").json["state"] == "COMPLETED"


def test_result_is_404_before_the_run_has_one(api):
    job = api.create(schedule=_due_in(60))
    run = api.post(f"/v1/jobs/{job['id']}/trigger")
    assert run.status == 202
    missing = api.get(f"/v1/runs/{run.json['id']}/result")
    assert missing.status == 404
    assert missing.headers["content-type"] == "application/problem+json"
    assert "no result yet" in missing.json["detail"]


def test_pause_resume_are_idempotent(api):
    job = api.create()
    for _ in range(2):
        paused = api.post(f"/v1/jobs/{job['id']}/pause")
        assert paused.status == 200
        assert paused.json["state"] == "PAUSED"
        assert paused.json["paused_at"] == "2026-11-21T12:00:00.000Z"
    versions = set()
    for _ in range(2):
        resumed = api.post(f"/v1/jobs/{job['id']}/resume")
        assert resumed.status == 200
        assert resumed.json["state"] == "ACTIVE"
        versions.add(resumed.json["version"])
    assert versions == {3}  # the second resume changed nothing


def test_delete_cancels_idempotently(api, pipeline):
    job = api.create()
    for _ in range(2):
        cancelled = api.delete(f"/v1/jobs/{job['id']}")
        assert cancelled.status == 200
        assert cancelled.json["state"] == "CANCELLED"
        assert cancelled.json["next_run_at"] is None
    stored = pipeline.services.store.jobs.get_job(job["id"])
    assert stored.state.value == "CANCELLED"


def test_trigger_runs_now_outside_the_schedule(api, pipeline):
    job = api.create(payload={"n": 1})
    triggered = api.post(f"/v1/jobs/{job['id']}/trigger")
    assert triggered.status == 202
    run = triggered.json
    assert run["id"].endswith(".m")
    assert run["status"] == "QUEUED"
    assert run["job_id"] == job["id"]
    pipeline.drain()
    assert api.get(f"/v1/runs/{run['id']}").json["status"] == "SUCCEEDED"
    assert api.get(f"/v1/runs/{run['id']}/result").json == {"n": 1}


def test_patch_changes_fields_and_recomputes_the_next_occurrence(api, pipeline):
    job = api.create(schedule={"rate": "1 hour"}, priority=5)
    assert job["next_run_at"] == "2026-11-21T13:00:00.000Z"
    pipeline.clock.advance(60)
    changed = api.patch(
        f"/v1/jobs/{job['id']}",
        {
            "name": "renamed",
            "schedule": {"cron": "30 12 * * *", "timezone": "UTC"},
            "priority": 8,
            "retry": {"max_attempts": 7},
            "timeout_seconds": 30,
            "payload": {"v": 2},
        },
    )
    assert changed.status == 200, changed.text
    body = changed.json
    assert body["name"] == "renamed"
    assert body["next_run_at"] == "2026-11-21T12:30:00.000Z"
    assert body["priority"] == 8
    assert body["retry"]["max_attempts"] == 7
    assert body["timeout_seconds"] == 30
    assert body["payload"] == {"v": 2}
    assert body["version"] == job["version"] + 1
    assert body["updated_at"] == "2026-11-21T12:01:00.000Z"
    assert api.get(f"/v1/jobs/{job['id']}").json == body


def test_patch_without_a_schedule_keeps_the_pending_occurrence(api, pipeline):
    job = api.create(schedule={"rate": "10 minutes"})
    pipeline.clock.advance(3600)  # overdue, not yet claimed: an update must not lose it
    changed = api.patch(f"/v1/jobs/{job['id']}", {"name": "still pending"})
    assert changed.status == 200
    assert changed.json["next_run_at"] == job["next_run_at"]


def test_patch_of_a_cancelled_job_is_a_conflict(api, pipeline):
    job = api.create()
    api.delete(f"/v1/jobs/{job['id']}")
    pipeline.calls.clear()
    conflict = api.patch(f"/v1/jobs/{job['id']}", {"name": "again"})
    assert conflict.status == 409
    assert pipeline.calls.count("PutItem") == 0


def _failed_run(api, pipeline, **spec):
    job = api.create(payload={"fail_attempts": 5}, retry={"max_attempts": 1}, **spec)
    run = api.post(f"/v1/jobs/{job['id']}/trigger").json
    pipeline.drain()
    failed = api.get(f"/v1/runs/{run['id']}").json
    assert failed["status"] == "FAILED"
    assert failed["error"]["type"]
    return job, failed


def test_dlq_lists_failed_runs_and_retry_requeues_one(api, pipeline):
    _job, failed = _failed_run(api, pipeline)
    dlq = api.get("/v1/dlq")
    assert dlq.status == 200
    assert [r["id"] for r in dlq.json["items"]] == [failed["id"]]
    assert dlq.json["next_cursor"] is None

    retried = api.post(f"/v1/runs/{failed['id']}/retry")
    assert retried.status == 202
    assert retried.json["status"] == "QUEUED"
    assert retried.json["attempts"] == 0
    assert api.get("/v1/dlq").json["items"] == []
    again = api.post(f"/v1/runs/{failed['id']}/retry")
    assert again.status == 409  # only FAILED runs can be retried


def test_redrive_all_and_by_id(api, pipeline):
    _, first = _failed_run(api, pipeline)
    pipeline.clock.advance(1)
    _, second = _failed_run(api, pipeline)
    by_id = api.post("/v1/dlq/redrive", {"run_ids": [second["id"], "j" + "0" * 25 + ".1795262400000"]})
    assert by_id.status == 202
    assert by_id.json["redriven"] == 1
    assert by_id.json["run_ids"] == [second["id"]]
    assert by_id.json["not_redriven"] == ["j" + "0" * 25 + ".1795262400000"]
    assert [r["id"] for r in api.get("/v1/dlq").json["items"]] == [first["id"]]

    everything = api.post("/v1/dlq/redrive", {"all": True})
    assert everything.status == 202
    assert everything.json == {
        "redriven": 1,
        "run_ids": [first["id"]],
        "not_redriven": [],
        "more": False,
        "refused": [],
    }
    assert api.get("/v1/dlq").json["items"] == []
    assert api.get(f"/v1/runs/{first['id']}").json["status"] == "QUEUED"


def test_a_bodiless_or_empty_redrive_is_422_naming_the_field_and_redrives_nothing(api, pipeline):
    # Redriving everything is {"all": true}: never the absence of a body, which a cross-site POST can send.
    _, failed = _failed_run(api, pipeline)
    bodiless = api.post("/v1/dlq/redrive")
    assert bodiless.status == 422, bodiless.text
    assert bodiless.fields == ["body"]
    assert bodiless.json["errors"][0]["message"] == "a JSON body is required"
    for body in ({}, {"all": False}):
        empty = api.post("/v1/dlq/redrive", body)
        assert empty.status == 422, body
        assert empty.fields == ["all"], body
    assert '{"all": true}' in api.post("/v1/dlq/redrive", {}).json["errors"][0]["message"]
    assert [r["id"] for r in api.get("/v1/dlq").json["items"]] == [failed["id"]]
    assert api.get(f"/v1/runs/{failed['id']}").json["status"] == "FAILED"


def test_runs_filter_by_status(api, pipeline):
    job = api.create(payload={})
    first = api.post(f"/v1/jobs/{job['id']}/trigger").json
    pipeline.drain()
    pipeline.clock.advance(1)
    second = api.post(f"/v1/jobs/{job['id']}/trigger").json
    queued = api.get(f"/v1/jobs/{job['id']}/runs", query={"status": "QUEUED"})
    assert [r["id"] for r in queued.json["items"]] == [second["id"]]
    succeeded = api.get(f"/v1/jobs/{job['id']}/runs", query={"status": "SUCCEEDED"})
    assert [r["id"] for r in succeeded.json["items"]] == [first["id"]]
    both = api.get(f"/v1/jobs/{job['id']}/runs")
    assert [r["id"] for r in both.json["items"]] == [second["id"], first["id"]]  # newest first


def test_unknown_route_is_a_problem_404(api):
    missing = api.get("/v1/nothing-here", identity=ACME)
    assert missing.status == 404
    assert missing.headers["content-type"] == "application/problem+json"
    assert missing.json["status"] == 404


@pytest.mark.parametrize(
    ("name", "status", "tenant"),
    [("api-create-job.json", 201, "acme"), ("api-list-jobs.json", 200, None), ("api-get-job.json", 404, None)],
)
def test_the_sample_events_as_api_gateway_sends_them(api, name, status, tenant):
    from tests.conftest import load_event

    reply = api.call(load_event(name))
    assert reply.status == status, reply.text
    if tenant:
        assert reply.json["tenant"] == tenant
        assert reply.json["schedule"]["timezone"] == "Europe/Paris"
