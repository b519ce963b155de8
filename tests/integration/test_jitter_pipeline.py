"""Jitter through the real pipeline (moto, fake clock): a run keeps its nominal occurrence's id, records both
instants, is sent to start at its jittered time, and never starts before it (nor before its nominal time)."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest
from tickwork.control.api_bodies import JobSpec
from tickwork.model.ids import run_id_for
from tickwork.model.jitter import jitter_offset_ms, jittered
from tickwork.model.policies import Band
from tickwork.model.states import RunStatus

from tests.harness import START, TENANT
from tests.integration.early_messages import deliver_now

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


def test_a_jittered_run_keeps_its_id_and_records_both_instants(pipeline):
    job = pipeline.create_job(schedule={"rate": "1 minute"}, jitter_seconds=50)
    nominal = START + timedelta(minutes=1)
    run = pipeline.runs_of(job.id)[0]  # claimed at create: due within the horizon
    assert run.id == run_id_for(job.id, nominal)
    assert run.nominal_at == nominal
    assert nominal < run.scheduled_for < nominal + timedelta(seconds=50)
    entries = [e for p in pipeline.calls.params("SendMessageBatch") for e in p["Entries"]]
    (entry,) = [e for e in entries if run.id in e["MessageBody"]]
    assert entry["DelaySeconds"] == math.ceil((run.scheduled_for - START).total_seconds())


def test_a_jittered_run_never_starts_early(pipeline):
    job = pipeline.create_job(schedule={"rate": "1 minute"}, jitter_seconds=50)
    run = pipeline.runs_of(job.id)[0]
    # A message for it at its nominal time (a duplicate, or SQS's 15-minute delay cap): refused by the lease.
    pipeline.clock.advance(60)
    messages = deliver_now(pipeline, run)
    assert pipeline.run(run.id).status is RunStatus.QUEUED
    assert pipeline.run(run.id).attempts == 0
    wait = pipeline.visibility_set_for(messages[0]["ReceiptHandle"])[-1]
    assert wait == math.ceil((run.scheduled_for - pipeline.clock.now()).total_seconds())
    pipeline.clock.advance(wait)
    pipeline.deliver(Band.NORMAL, messages)
    ran = pipeline.run(run.id)
    assert ran.status is RunStatus.SUCCEEDED
    assert ran.started_at is not None
    assert ran.started_at >= run.scheduled_for > run.nominal_at


def test_every_tick_s_runs_are_jittered_within_range_and_deterministic(pipeline):
    job = pipeline.create_job(schedule={"rate": "1 minute"}, jitter_seconds=30)
    for _ in range(5):
        pipeline.clock.advance(60)
        pipeline.tick()
    runs = pipeline.runs_of(job.id)
    assert len(runs) >= 5
    for run in runs:
        assert run.nominal_at is not None
        assert run.id == run_id_for(job.id, run.nominal_at)
        assert run.nominal_at <= run.scheduled_for < run.nominal_at + timedelta(seconds=30)
    # Another claimer would compute the same instants: they depend on the job and the occurrence alone.
    assert [r.scheduled_for for r in runs] == [jittered(job.id, r.nominal_at, 30) for r in runs]  # type: ignore[arg-type]


def test_a_job_without_jitter_pays_nothing_for_it(pipeline):
    plain = pipeline.create_job(schedule={"rate": "1 minute"})
    run = pipeline.runs_of(plain.id)[0]
    assert run.scheduled_for == START + timedelta(minutes=1)
    assert run.nominal_at is None
    assert run.not_before is None
    pipeline.calls.clear()
    jittered_job = pipeline.create_job(schedule={"rate": "1 minute"}, jitter_seconds=10)
    with_jitter = pipeline.calls.by_operation()
    pipeline.calls.clear()
    pipeline.create_job(schedule={"rate": "1 minute"})
    assert pipeline.calls.by_operation() == with_jitter  # the same AWS requests, jitter or not
    assert pipeline.runs_of(jittered_job.id)[0].nominal_at is not None


def test_a_jitter_beyond_sqs_delay_cap_starts_at_its_time_through_the_due_index(pipeline):
    nominal = START + timedelta(hours=1)
    # A job id whose offset for this occurrence is well past SQS's 15-minute delay cap.
    job_id = next(f"j{n:025d}" for n in range(1000) if jitter_offset_ms(f"j{n:025d}", nominal, 3000) > 1_200_000)
    spec = JobSpec.model_validate({"name": "n", "type": "echo", "schedule": {"rate": "1 hour"}, "jitter_seconds": 3000})
    jobs = pipeline.services.jobs
    assert jobs.add_new(jobs.factory.new_job(TENANT, spec, now=START, job_id=job_id))
    pipeline.clock.advance(3600 - 60)
    pipeline.tick()
    run = pipeline.runs_of(job_id)[0]
    assert run.scheduled_for - run.nominal_at > timedelta(minutes=20)  # type: ignore[operator]
    # Its message comes at most 15 minutes after the claim: early, acknowledged, and the run left QUEUED.
    pipeline.clock.advance(900)
    deliver_now(pipeline, run)
    assert pipeline.run(run.id).status is RunStatus.QUEUED
    assert pipeline.run(run.id).attempts == 0
    # The due index has the tick send it again at its jittered time (plus the re-dispatch delay).
    pipeline.clock.advance((run.scheduled_for - pipeline.clock.now()).total_seconds() + 31)
    pipeline.tick()
    assert pipeline.drain() == 1
    ran = pipeline.run(run.id)
    assert ran.status is RunStatus.SUCCEEDED
    assert ran.started_at is not None
    assert ran.started_at >= run.scheduled_for


def test_start_lateness_is_measured_from_the_jittered_instant(pipeline, monkeypatch):
    """The StartLatenessMs metric measures the scheduler, so a jittered run's offset is not in it (the run's
    `lateness_ms` is from its nominal occurrence, with the offset: docs/policies.md)."""
    from tickwork.executor import run_executor

    recorded: list[float] = []
    real = run_executor.metrics.add_metric

    def record(name: str, unit: str, value: float) -> None:
        if name == "StartLatenessMs":
            recorded.append(value)
        real(name=name, unit=unit, value=value)

    monkeypatch.setattr(run_executor.metrics, "add_metric", record)
    job = pipeline.create_job(schedule={"rate": "1 minute"}, jitter_seconds=50)
    run = pipeline.runs_of(job.id)[0]
    pipeline.clock.set(run.scheduled_for + timedelta(milliseconds=700))
    deliver_now(pipeline, run)
    ran = pipeline.run(run.id)
    assert ran.status is RunStatus.SUCCEEDED
    offset_ms = (run.scheduled_for - run.nominal_at).total_seconds() * 1000
    assert ran.lateness_ms == round(offset_ms + 700)
    assert recorded == [700]
