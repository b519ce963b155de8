"""A job's forecast through the real tick and executor (docs/forecasts.md): its claims fold the runs that ended
since the last one into the forecast their advance writes anyway (the outcome's write stays on the run alone, and
no request on the job item is added); each run it then claims gets its outlook, and one whose start plus the p95
passes its deadline is marked `Deadline At Risk` before it starts; a run past the p99 times the slow factor is
marked `Run Slow` by its outcome's write; the job's answer shows its next run's outlook and timeout advice."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from tickwork.control.api_bodies import JobUpdate
from tickwork.model.forecasts import MIN_RUNS
from tickwork.model.job import Job
from tickwork.model.states import RunStatus
from tickwork.store.codec import job_key

from tests.harness import TENANT
from tests.integration.test_run_events_pipeline import Consumer

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


@pytest.fixture
def pipeline(timed_pipeline):
    return timed_pipeline


def _keyed(pipeline, key: dict[str, Any]) -> list[str]:
    """The DynamoDB requests since the log was cleared that named this item, by operation."""
    named = []
    for service, operation, params in pipeline.calls.calls:
        if service == "dynamodb" and params.get("Key") == key:
            named.append(operation)
    return named


def _history(pipeline, job_id: str, minutes: int) -> None:
    """`minutes` of a once-a-minute job: a tick, then its due runs executed, each minute."""
    for _ in range(minutes):
        pipeline.clock.advance(60)
        pipeline.tick()
        pipeline.drain(wait_out_backoff=False)


def _job(pipeline, job_id: str) -> Job:
    """The job as its answer shows it."""
    return pipeline.services.queries.show_job(TENANT, job_id)


def test_a_claim_folds_the_ended_runs_into_the_forecast_on_its_advance_with_no_request_on_the_job_added(pipeline):
    job = pipeline.create_job(schedule={"rate": "1 minute"}, payload={"sleep_seconds": 3}, timeout_seconds=600)
    _history(pipeline, job.id, MIN_RUNS + 5)

    shown = _job(pipeline, job.id)
    assert shown.forecast is not None
    assert shown.forecast.runs >= MIN_RUNS
    assert 2_900 <= shown.forecast.p50_ms <= shown.forecast.p99_ms <= 3_100  # 3 s, within 2 %
    assert shown.forecast.p_success == 1.0
    assert shown.forecast.next_run is not None
    assert shown.forecast.next_run.deadline_at_risk is False
    advice = shown.forecast.timeout_advice
    assert advice is not None
    assert advice.verdict == "too_long"
    assert advice.suggested_seconds == 10

    # One more minute: the job item gets the claim's advance and nothing else; a run's outcome names only its run.
    pipeline.calls.clear()
    _history(pipeline, job.id, 1)
    assert _keyed(pipeline, job_key(job.id)) == ["UpdateItem"]
    claimed = [r for r in pipeline.runs_of(job.id) if r.expected_end_at is not None]
    assert claimed, "the runs claimed since the forecast have their outlook"
    last = claimed[-1]
    assert last.p_success == 1.0
    assert last.expected_end_at == last.scheduled_for + timedelta(milliseconds=shown.forecast.p50_ms)


def test_a_run_whose_start_plus_the_p95_passes_its_deadline_is_at_risk_before_it_starts(pipeline):
    consumer = Consumer(pipeline.services.clients)
    job = pipeline.create_job(
        schedule={"rate": "1 minute"}, payload={"sleep_seconds": 5}, deadline={"within_seconds": 4}
    )
    _history(pipeline, job.id, MIN_RUNS + 2)
    before = {r.id for r in pipeline.runs_of(job.id)}

    pipeline.clock.advance(60)
    pipeline.tick()  # claimed, not yet run
    new = [r for r in pipeline.runs_of(job.id) if r.id not in before]
    assert new
    assert all(r.status is RunStatus.QUEUED and r.deadline_at_risk_at is not None for r in new)
    at_risk = [e for e in consumer.events() if e["detail-type"] == "Deadline At Risk"]
    assert {e["detail"]["run_id"] for e in at_risk} >= {r.id for r in new}
    assert _job(pipeline, job.id).forecast.next_run.deadline_at_risk is True


def test_a_run_past_the_p99_times_the_slow_factor_is_marked_slow_by_its_outcome(pipeline):
    consumer = Consumer(pipeline.services.clients)
    job = pipeline.create_job(schedule={"rate": "1 minute"}, payload={"sleep_seconds": 1})
    _history(pipeline, job.id, MIN_RUNS + 2)
    assert not [r for r in pipeline.runs_of(job.id) if r.slow_at is not None]

    changed = pipeline.services.jobs.update(TENANT, job.id, JobUpdate.model_validate({"payload": {"sleep_seconds": 5}}))
    assert changed.forecast is not None, "a change of the job keeps its forecast"
    _history(pipeline, job.id, 3)
    runs = pipeline.runs_of(job.id)
    slow = [r for r in runs if r.slow_at is not None]
    assert slow
    # Every run that took 5 s (the runs claimed before the change ran it too: their executors read the job) and
    # no other.
    assert {r.id for r in slow} == {r.id for r in runs if r.duration_ms is not None and r.duration_ms >= 5_000}
    events = [e for e in consumer.events() if e["detail-type"] == "Run Slow"]
    assert {e["detail"]["run_id"] for e in events} == {r.id for r in slow}


def test_a_long_run_is_flagged_slow_by_a_heartbeat_while_it_runs_once(pipeline):
    consumer = Consumer(pipeline.services.clients)
    job = pipeline.create_job(schedule={"rate": "1 minute"}, payload={"sleep_seconds": 1}, timeout_seconds=600)
    _history(pipeline, job.id, MIN_RUNS + 2)
    pipeline.services.jobs.update(TENANT, job.id, JobUpdate.model_validate({"payload": {"sleep_seconds": 50}}))
    _history(pipeline, job.id, 3)
    slow = [r for r in pipeline.runs_of(job.id) if r.slow_at is not None]
    assert slow
    # Found at a beat (every 20 s of a 60 s lease), while it ran: before its end, not by its outcome.
    assert all(r.finished_at is not None and r.slow_at < r.finished_at for r in slow)
    events = [e for e in consumer.events() if e["detail-type"] == "Run Slow"]
    assert sorted(e["detail"]["run_id"] for e in events) == sorted(r.id for r in slow)  # once each


def test_a_run_that_starts_late_is_found_at_risk_by_a_heartbeat_while_it_runs(pipeline):
    consumer = Consumer(pipeline.services.clients)
    job = pipeline.create_job(
        schedule={"rate": "1 minute"}, payload={"sleep_seconds": 30}, deadline={"within_seconds": 100}
    )
    _history(pipeline, job.id, MIN_RUNS + 2)
    pipeline.clock.advance(60)
    pipeline.tick()
    claimed = [r for r in pipeline.runs_of(job.id) if r.status is RunStatus.QUEUED and r.forecast_p95_ms]
    assert claimed
    assert all(r.deadline_at_risk_at is None for r in claimed)  # on time, 30 s fits in 100
    first = min(claimed, key=lambda r: r.scheduled_for)
    pipeline.clock.set(first.scheduled_for + timedelta(seconds=80))  # it starts 80 s late: 80 + 30 > 100
    pipeline.drain(wait_out_backoff=False)
    late = pipeline.run(first.id)
    assert late.deadline_at_risk_at is not None
    assert late.started_at < late.deadline_at_risk_at < late.finished_at
    at_risk = [e for e in consumer.events() if e["detail-type"] == "Deadline At Risk"]
    assert [e["detail"]["run_id"] for e in at_risk if e["detail"]["run_id"] == first.id] == [first.id]
