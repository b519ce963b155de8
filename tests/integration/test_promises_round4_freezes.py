"""Issue 34's freezes, debounce and cancel defects through the pipeline (moto, fake clock): a freeze holds back a
job's scheduled runs' first starts only (a debounced trigger's run, a durable run between its segments and a run
retried by hand or redriven run on); a cancelled job runs nothing more, a debounced trigger's run included; a job
created during a freeze starts on time once it ends."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from tickwork.control.api_bodies import BackfillRequest, TriggerRequest
from tickwork.control.callers import Caller
from tickwork.model.freezes import FreezeSpec
from tickwork.model.policies import Band
from tickwork.model.states import RunStatus, SkipReason

from tests import durable_jobtypes  # noqa: F401 - registers long-export and checkpoint-export
from tests.harness import START, TENANT, Pipeline

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

PAYMENTS = {"team": "payments"}
YEARLY = {"cron": "0 0 1 1 *"}  # never due in these tests: only triggers run
FAR = timedelta(seconds=300)


def _freeze(pipeline: Pipeline, **spec: Any) -> Any:
    body = {"selector": {"tags": PAYMENTS}, "for_seconds": 3600, "reason": "deploy 1.42", **spec}
    return pipeline.services.freezes.create(Caller(TENANT), FreezeSpec.model_validate(body))


def _trigger(pipeline: Pipeline, job_id: str, **body: Any) -> Any:
    return pipeline.services.jobs.trigger(TENANT, job_id, TriggerRequest.model_validate(body))


# ---------------------------------------------------------------- defect 2: a freeze and a debounced trigger


def test_freeze_keeps_a_debounced_triggers_run(timed_pipeline):
    pipeline = timed_pipeline
    job = pipeline.create_job(schedule=YEARLY, tags=PAYMENTS)
    debounce = {"key": "customer-7", "seconds": 60, "collect": True}
    window = _trigger(pipeline, job.id, debounce=debounce, payload={"n": 1})
    _freeze(pipeline)  # while the window is open
    pipeline.clock.advance(10)
    assert _trigger(pipeline, job.id, debounce=debounce, payload={"n": 2}).id == window.id  # acknowledged, joined
    plain = _trigger(pipeline, job.id)  # a plain trigger during the same freeze runs
    pipeline.clock.advance(60)
    pipeline.drain()
    run = pipeline.run(window.id)
    assert (run.status, run.skip_reason, run.blocked_by) == (RunStatus.SUCCEEDED, None, None)
    assert pipeline.services.results.read(run) == {"payloads": [{"n": 1}, {"n": 2}]}
    assert pipeline.run(plain.id).status is RunStatus.SUCCEEDED


# ---------------------------------------------------------------- defect 3: a freeze and a run already started


def _due_durable(pipeline: Pipeline, **spec: Any) -> Any:
    job = pipeline.create_job(type="long-export", schedule={"at": pipeline.clock.now() + FAR}, tags=PAYMENTS, **spec)
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.tick()
    return job


def test_freeze_lets_a_started_durable_run_run_on(pipeline):
    job = _due_durable(pipeline)
    (first,) = pipeline.receive(Band.NORMAL)
    pipeline.deliver(Band.NORMAL, [first], timeout_seconds=60)  # one segment of 45 s: it yields
    (run,) = pipeline.runs_of(job.id)
    assert (run.status, run.segments) == (RunStatus.QUEUED, 1)
    # From before the run's occurrence (a `from` in the past is accepted): its next segment is inside it.
    _freeze(pipeline, **{"from": (run.scheduled_for - timedelta(minutes=1)).isoformat()})
    while messages := pipeline.receive(Band.NORMAL):
        pipeline.deliver(Band.NORMAL, messages, timeout_seconds=60)
    run = pipeline.run(run.id)
    assert (run.status, run.skip_reason, run.blocked_by) == (RunStatus.SUCCEEDED, None, None)
    assert run.segments >= 2


@pytest.mark.parametrize("requeue", ["retry", "redrive"])
def test_freeze_lets_a_run_retried_by_hand_run(pipeline, requeue):
    job = pipeline.create_job(
        type="checkpoint-export",
        schedule={"at": pipeline.clock.now() + FAR},
        tags=PAYMENTS,
        payload={"pages": 2, "fail_after_page": 0},  # its first execution fails
        retry={"max_attempts": 1},
    )
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.tick()
    pipeline.drain()
    (run,) = pipeline.runs_of(job.id)
    assert run.status is RunStatus.FAILED
    if requeue == "retry":
        pipeline.services.redrive.retry_run(TENANT, run.id)
    else:
        assert pipeline.services.redrive.redrive(TENANT, [run.id]).redriven == 1
    _freeze(pipeline, **{"from": (run.scheduled_for - timedelta(minutes=1)).isoformat()})
    pipeline.drain()
    run = pipeline.run(run.id)
    # Asked for again by hand, it is not the freeze's to skip: it runs.
    assert (run.status, run.skip_reason, run.blocked_by, run.requeues) == (RunStatus.SUCCEEDED, None, None, 1)


# ---------------------------------------------------------------- defect 8: a cancelled job and its triggers


def test_cancelled_job_runs_no_debounced_trigger(timed_pipeline):
    pipeline = timed_pipeline
    job = pipeline.create_job(schedule=YEARLY)
    window = _trigger(pipeline, job.id, debounce={"key": "customer-7", "seconds": 3600}, payload={"n": 1})
    pipeline.clock.advance(60)
    pipeline.services.jobs.cancel(TENANT, job.id)
    for _ in range(61):  # to the window's end, and a redispatch past it
        pipeline.clock.advance(60)
        pipeline.tick()
        pipeline.drain()
    run = pipeline.run(window.id)
    assert (run.status, run.skip_reason, run.started_at) == (RunStatus.SKIPPED, SkipReason.CANCELLED, None)
    assert not pipeline.result_objects()


def test_cancelled_job_runs_no_trigger_or_backfill_queued_before_the_cancel(timed_pipeline):
    pipeline = timed_pipeline
    job = pipeline.create_job(schedule={"cron": "0 * * * *"})
    pipeline.clock.advance(2 * 3600)
    pipeline.tick()
    pipeline.drain()
    plain = _trigger(pipeline, job.id)
    backfill = pipeline.services.jobs.backfill(
        TENANT,
        job.id,
        BackfillRequest.model_validate({"from": START.isoformat(), "to": (START + timedelta(hours=1)).isoformat()}),
    )
    assert backfill.created
    pipeline.services.jobs.cancel(TENANT, job.id)  # before their messages are delivered
    pipeline.drain()
    for run_id in [plain.id, *(r.id for r in backfill.created)]:
        run = pipeline.run(run_id)
        assert (run.status, run.skip_reason) == (RunStatus.SKIPPED, SkipReason.CANCELLED)


def test_a_paused_job_runs_a_debounced_trigger_as_it_runs_a_plain_one(timed_pipeline):
    """A trigger is asked for: it runs while its job is paused (docs/api.md), debounced or not, whether the window
    opened before the pause or during it."""
    pipeline = timed_pipeline
    job = pipeline.create_job(schedule=YEARLY)
    debounce = {"key": "customer-7", "seconds": 60}
    before = _trigger(pipeline, job.id, debounce=debounce, payload={"n": 1})
    pipeline.services.jobs.pause(TENANT, job.id)
    during = _trigger(pipeline, job.id, debounce={**debounce, "key": "customer-8"}, payload={"n": 2})
    pipeline.clock.advance(60)
    pipeline.drain()
    assert [pipeline.run(r.id).status for r in (before, during)] == [RunStatus.SUCCEEDED] * 2


# ---------------------------------------------------------------- defect 10: a job created during a freeze

EVERY_10_S = {"cron": "*/10 * * * * *"}


def _every_second_with_a_tick_a_minute(pipeline: Pipeline, seconds: int) -> None:
    """Time going by as deployed: the executors take each run at its time, the tick comes once a minute (at :30)."""
    for _ in range(seconds):
        pipeline.clock.advance(1)
        if pipeline.clock.now().second == 30:
            pipeline.tick()
        pipeline.drain()


def _after(pipeline: Pipeline, job_id: str, instant: Any) -> list[Any]:
    """The job's runs of occurrences from `instant` to now."""
    runs = sorted(pipeline.runs_of(job_id), key=lambda r: r.occurrence_at)
    return [r for r in runs if instant <= r.occurrence_at <= pipeline.clock.now()]


def _late_seconds(runs: list[Any]) -> list[float]:
    return [(r.started_at - r.scheduled_for).total_seconds() for r in runs if r.status is RunStatus.SUCCEEDED]


def test_job_created_during_a_freeze_starts_on_time_after_it(timed_pipeline):
    pipeline = timed_pipeline
    pipeline.clock.advance(20)  # 12:00:20
    freeze = _freeze(pipeline, for_seconds=50)  # to 12:01:10, between two ticks
    pipeline.clock.advance(5)
    job = pipeline.create_job(schedule=EVERY_10_S, tags=PAYMENTS)
    _every_second_with_a_tick_a_minute(pipeline, 120)  # to 12:02:25
    runs = sorted(pipeline.runs_of(job.id), key=lambda r: r.occurrence_at)
    inside = [r for r in runs if r.occurrence_at < freeze.until]
    assert [r.occurrence_at.strftime("%H:%M:%S") for r in inside] == ["12:00:30", "12:00:40", "12:00:50", "12:01:00"]
    assert {(r.status, r.skip_reason, r.blocked_by) for r in inside} == {
        (RunStatus.SKIPPED, SkipReason.FREEZE, freeze.id)
    }
    after = _after(pipeline, job.id, freeze.until)
    assert [r.status for r in after] == [RunStatus.SUCCEEDED] * 8  # 12:01:10 to 12:02:20
    assert _late_seconds(after) == [0.0] * 8


def test_a_freeze_ending_between_two_ticks_lets_the_occurrences_after_it_start_on_time(timed_pipeline):
    pipeline = timed_pipeline
    job = pipeline.create_job(schedule=EVERY_10_S, tags=PAYMENTS)
    pipeline.clock.advance(20)
    freeze = _freeze(pipeline, for_seconds=180)  # 12:00:20 to 12:03:20: the ticks at 12:02:30 and 12:03:30 wait
    _every_second_with_a_tick_a_minute(pipeline, 240)  # to 12:04:20
    inside = [r for r in pipeline.runs_of(job.id) if freeze.from_ <= r.occurrence_at < freeze.until]
    assert {(r.status, r.skip_reason) for r in inside} == {(RunStatus.SKIPPED, SkipReason.FREEZE)}
    after = _after(pipeline, job.id, freeze.until)
    assert len(after) == 7  # 12:03:20 to 12:04:20
    assert _late_seconds(after) == [0.0] * 7


def test_a_freeze_lifted_in_its_last_two_minutes_lets_the_occurrences_claimed_through_it_run(timed_pipeline):
    pipeline = timed_pipeline
    pipeline.clock.advance(20)
    freeze = _freeze(pipeline, for_seconds=50)  # to 12:01:10
    pipeline.clock.advance(5)
    job = pipeline.create_job(schedule=EVERY_10_S, tags=PAYMENTS)  # claims 12:00:30 to 12:02:20
    _every_second_with_a_tick_a_minute(pipeline, 20)  # to 12:00:45
    pipeline.services.freezes.lift(Caller(TENANT), freeze.id)
    _every_second_with_a_tick_a_minute(pipeline, 40)  # to 12:01:25
    runs = {r.occurrence_at.strftime("%H:%M:%S"): r for r in _after(pipeline, job.id, freeze.from_)}
    assert {at: r.status for at, r in runs.items()} == {
        "12:00:30": RunStatus.SKIPPED,
        "12:00:40": RunStatus.SKIPPED,
        "12:00:50": RunStatus.SUCCEEDED,  # after the lift: those it skipped stay skipped, the rest run
        "12:01:00": RunStatus.SUCCEEDED,
        "12:01:10": RunStatus.SUCCEEDED,
        "12:01:20": RunStatus.SUCCEEDED,
    }
    assert _late_seconds(list(runs.values())) == [0.0] * 4


def test_cancelled_job_runs_no_further_segment_of_a_triggered_durable_run(pipeline):
    """As a scheduled durable run's: a cancel between its segments records it SKIPPED `cancelled`."""
    job = pipeline.create_job(type="long-export", schedule=YEARLY)
    triggered = _trigger(pipeline, job.id)
    (first,) = pipeline.receive(Band.NORMAL)
    pipeline.deliver(Band.NORMAL, [first], timeout_seconds=60)  # one segment: it yields
    assert (pipeline.run(triggered.id).status, pipeline.run(triggered.id).segments) == (RunStatus.QUEUED, 1)
    pipeline.services.jobs.cancel(TENANT, job.id)
    while messages := pipeline.receive(Band.NORMAL):
        pipeline.deliver(Band.NORMAL, messages, timeout_seconds=60)
    run = pipeline.run(triggered.id)
    assert (run.status, run.skip_reason, run.segments) == (RunStatus.SKIPPED, SkipReason.CANCELLED, 1)


def test_a_freeze_lifted_early_lets_the_next_occurrences_start_on_time(timed_pipeline):
    pipeline = timed_pipeline
    job = pipeline.create_job(schedule=EVERY_10_S, tags=PAYMENTS)
    pipeline.clock.advance(20)
    freeze = _freeze(pipeline, for_seconds=600)  # 12:00:20 to 12:10:20: every tick waits at its next occurrence
    _every_second_with_a_tick_a_minute(pipeline, 145)  # to 12:02:45
    pipeline.services.freezes.lift(Caller(TENANT), freeze.id)
    _every_second_with_a_tick_a_minute(pipeline, 60)  # to 12:03:45
    after = _after(pipeline, job.id, START + timedelta(minutes=2, seconds=45))
    assert len(after) == 6  # 12:02:50 to 12:03:40
    assert _late_seconds(after) == [0.0] * 6


def _every_second_no_backoff_waited_out(pipeline: Pipeline, seconds: int) -> None:
    """As _every_second_with_a_tick_a_minute, a deferred message left invisible for its whole deferral."""
    for _ in range(seconds):
        pipeline.clock.advance(1)
        if pipeline.clock.now().second == 30:
            pipeline.tick()
        pipeline.drain(wait_out_backoff=False)


def test_a_run_a_defer_freeze_holds_runs_at_its_lift_not_at_its_next_look(timed_pipeline):
    """The defect: a run claimed before a DEFER freeze, held by its executor (deferred up to 15 minutes at a time,
    to the freeze's end), waited out that deferral after the freeze was lifted: lifted 50 s after the run's time,
    it started up to 15 minutes late rather than at the lift."""
    pipeline = timed_pipeline
    job = pipeline.create_job(schedule={"at": (START + timedelta(seconds=60)).isoformat()}, tags=PAYMENTS)
    pipeline.clock.advance(10)
    freeze = _freeze(pipeline, on_blocked="DEFER")  # 12:00:10 to 13:00:10; the run (12:01:00) is claimed already
    _every_second_no_backoff_waited_out(pipeline, 100)  # to 12:01:50: its executor holds it
    (run,) = pipeline.runs_of(job.id)
    assert (run.status, run.blocked_by, run.deferred) == (RunStatus.QUEUED, freeze.id, 1)
    pipeline.services.freezes.lift(Caller(TENANT), freeze.id)
    lifted_at = pipeline.clock.now()
    _every_second_no_backoff_waited_out(pipeline, 5)
    run = pipeline.run(run.id)
    assert run.status is RunStatus.SUCCEEDED, run
    assert run.started_at is not None
    assert run.started_at - lifted_at <= timedelta(seconds=2)
