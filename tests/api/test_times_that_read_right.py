"""A job's times as an operator reads them: `next_run_at` is its next occurrence whether the tick has claimed it
(QUEUED ahead of its time) or not, and its last run is the last one that started, never a QUEUED one to come."""

from __future__ import annotations

from datetime import timedelta

import pytest
from tickwork.model.clock import iso

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


@pytest.fixture
def pipeline(timed_pipeline):
    """The API's pipeline with SQS on the fake clock: a run claimed ahead is delivered once its time comes."""
    return timed_pipeline


def _claimed_ahead(api, pipeline):
    """A job every minute, at 30 s past a minute: the tick claims its next two occurrences (its horizon is 2 min)."""
    pipeline.clock.advance(30)
    job = api.create(schedule={"cron": "* * * * *"})
    first = job["next_run_at"]
    pipeline.tick()
    queued = [r for r in pipeline.runs_of(job["id"]) if r.status.value == "QUEUED"]
    assert len(queued) >= 2  # both claimed, neither run yet
    return job, first, sorted(r.scheduled_for for r in queued)


def test_a_job_whose_next_two_occurrences_are_claimed_answers_the_first_as_next_run_at(api, pipeline):
    job, first, queued = _claimed_ahead(api, pipeline)
    assert iso(queued[0]) == first
    assert api.get(f"/v1/jobs/{job['id']}").json["next_run_at"] == first
    (listed,) = [j for j in api.get("/v1/jobs").json["items"] if j["id"] == job["id"]]
    assert listed["next_run_at"] == first

    pipeline.clock.set(queued[0] + timedelta(seconds=1))  # the first has passed: the second, still claimed, is next
    assert api.get(f"/v1/jobs/{job['id']}").json["next_run_at"] == iso(queued[1])


def test_last_run_ignores_a_queued_future_run(api, pipeline):
    job, _first, queued = _claimed_ahead(api, pipeline)
    assert api.get(f"/v1/jobs/{job['id']}/runs", query={"limit": 1, "started": "true"}).json["items"] == []

    pipeline.clock.set(queued[0] + timedelta(seconds=1))
    pipeline.drain(wait_out_backoff=False)
    pipeline.tick()  # claims further ahead: the newest runs are QUEUED, in the future
    newest = api.get(f"/v1/jobs/{job['id']}/runs", query={"limit": 1}).json["items"][0]
    assert newest["status"] == "QUEUED"
    (last,) = api.get(f"/v1/jobs/{job['id']}/runs", query={"limit": 1, "started": "true"}).json["items"]
    assert (last["scheduled_for"], last["status"]) == (iso(queued[0]), "SUCCEEDED")


def test_a_job_created_on_an_occurrences_instant_is_not_shown_that_occurrence_which_will_not_run(api, pipeline):
    """Created at 12:00:00.000 exactly, an hourly job's first occurrence is 13:00 (a create schedules what comes
    after it): no read may show the 12:00 its cursor never had, as if claimed and still to come."""
    job = api.create(schedule={"cron": "0 * * * *"})  # the fake clock stands on 12:00:00 exactly
    assert job["next_run_at"].startswith("2026-11-21T13:00:00")
    assert api.get(f"/v1/jobs/{job['id']}").json["next_run_at"] == job["next_run_at"]
    (listed,) = [j for j in api.get("/v1/jobs").json["items"] if j["id"] == job["id"]]
    assert listed["next_run_at"] == job["next_run_at"]
    pipeline.tick()
    assert [r.scheduled_for.hour for r in pipeline.runs_of(job["id"])] in ([], [13])  # 12:00 never runs


def _ran_then_failed(api, pipeline):
    """A job whose manual run succeeded, then one that FAILED (a handler that outlives its 10 s timeout, with no
    attempt left) and sits in the DLQ."""
    job = api.create(payload={"sleep_seconds": 100}, timeout_seconds=10, retry={"max_attempts": 1})
    older = api.post(f"/v1/jobs/{job['id']}/trigger", {"payload": {}}).json
    pipeline.drain()
    pipeline.clock.advance(60)
    failed = api.post(f"/v1/jobs/{job['id']}/trigger").json
    pipeline.drain()
    assert [api.get(f"/v1/runs/{r['id']}").json["status"] for r in (older, failed)] == ["SUCCEEDED", "FAILED"]
    return job, older["id"], failed["id"]


def _last_run(api, job):
    items = api.get(f"/v1/jobs/{job['id']}/runs", query={"limit": 1, "started": "true"}).json["items"]
    return items[0] if items else None


@pytest.mark.parametrize("requeue", ["retry", "redrive", "bulk retry"])
def test_a_failed_run_re_queued_stays_the_last_run_until_it_starts_again(api, pipeline, requeue):
    """It ran (its attempts are in its history): re-queued by a retry, a redrive or a bulk retry, it is still the
    job's last run, QUEUED, not the older one before it."""
    job, _older, failed = _ran_then_failed(api, pipeline)
    assert _last_run(api, job)["id"] == failed
    if requeue == "retry":
        assert api.post(f"/v1/runs/{failed}/retry").status == 202
    elif requeue == "redrive":
        assert api.post("/v1/dlq/redrive", {"run_ids": [failed]}).json["redriven"] == 1
    else:
        bulk = api.post("/v1/bulk/runs", {"action": "retry", "run_ids": [failed]})
        assert [item["outcome"] for item in bulk.json["items"]] == ["ok"]
    last = _last_run(api, job)
    assert (last["id"], last["status"], last["requeues"]) == (failed, "QUEUED", 1)
    assert last["started_at"] is None  # this execution has not started: its start is measured afresh

    pipeline.drain()
    last = _last_run(api, job)
    assert (last["id"], last["status"]) == (failed, "FAILED")
    assert last["started_at"] is not None


def test_a_retried_run_s_handler_time_is_every_execution_s_and_its_wall_time_leaves_out_its_days_in_the_dlq(
    api, pipeline
):
    """handler_ms is the handler time of every attempt the run has had, in each execution; wall_ms each
    execution's first start to its end, added up: not the two days it sat FAILED before its retry."""
    _job, _older, failed = _ran_then_failed(api, pipeline)
    first = api.get(f"/v1/runs/{failed}").json
    assert (first["handler_ms"], first["wall_ms"]) == (10_000, 10_000)

    pipeline.clock.advance(2 * 24 * 3600)
    retried = api.post(f"/v1/runs/{failed}/retry", {"payload": {"sleep_seconds": 3}})
    assert (retried.json["handler_ms"], retried.json["wall_ms"]) == (10_000, 10_000)  # the first execution's, so far
    pipeline.drain()
    run = api.get(f"/v1/runs/{failed}").json
    assert (run["status"], run["attempts"], run["requeues"]) == ("SUCCEEDED", 1, 1)
    assert [a["outcome"] for a in run["attempt_history"]] == ["timed_out", "succeeded"]
    assert (run["duration_ms"], run["handler_ms"], run["wall_ms"]) == (3_000, 13_000, 13_000)


def test_a_retried_run_of_a_job_cancelled_meanwhile_is_skipped_and_stays_the_last_run_with_its_first_times(
    api, pipeline
):
    """Re-queued, then its job cancelled: it is recorded SKIPPED `cancelled` before it starts again, and is still
    the job's last run (it ran), its handler and wall time the first execution's."""
    job, _older, failed = _ran_then_failed(api, pipeline)
    assert api.post(f"/v1/runs/{failed}/retry").status == 202
    assert api.delete(f"/v1/jobs/{job['id']}").status == 200
    pipeline.clock.advance(3600)
    pipeline.drain()
    last = _last_run(api, job)
    assert (last["id"], last["status"], last["skip_reason"]) == (failed, "SKIPPED", "cancelled")
    assert (last["started_at"], last["handler_ms"], last["wall_ms"]) == (None, 10_000, 10_000)
