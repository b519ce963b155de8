"""Precise starts (issue 16, item 3) against moto, on the fake clock (SQS's delays included): a precise run is
sent with DelaySeconds rounded down, a little early; its executor waits out the rest before it leases, so it
starts on its instant, and its lease's not_before means no message, however early, starts it before then."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from tickwork.model.ids import run_id_for
from tickwork.model.policies import Band, StartPrecision
from tickwork.model.states import RunStatus

from tests.harness import START, Pipeline

FAR = timedelta(seconds=300)  # beyond the 120 s horizon: created jobs wait for a tick
DUE = START + FAR + timedelta(milliseconds=300)  # mid-second, where rounding matters


def _sent(pipeline: Pipeline) -> list[dict]:
    return [e for p in pipeline.calls.params("SendMessageBatch") for e in p["Entries"]]


def _claim_100_s_ahead(pipeline: Pipeline) -> None:
    """A tick on a whole second, 100.3 s before the run's instant."""
    pipeline.clock.set(START + FAR - timedelta(seconds=100))
    pipeline.tick()


def test_a_precise_run_is_sent_early_and_records_its_instant_as_not_before(timed_pipeline):
    precise = timed_pipeline.create_job(schedule={"at": DUE}, start_precision="precise")
    to_the_second = timed_pipeline.create_job(schedule={"at": DUE})
    assert precise.start_precision is StartPrecision.PRECISE
    assert to_the_second.start_precision is StartPrecision.SECOND
    _claim_100_s_ahead(timed_pipeline)

    by_job = {json.loads(e["MessageBody"])["job_id"]: e for e in _sent(timed_pipeline)}
    assert by_job[precise.id]["DelaySeconds"] == 100  # floor(100.3 - 0.25): visible 0.3 s early
    assert json.loads(by_job[precise.id]["MessageBody"])["precise"] is True
    assert by_job[to_the_second.id]["DelaySeconds"] == 101  # ceil(100.3): never early, 0.7 s late
    assert "precise" not in json.loads(by_job[to_the_second.id]["MessageBody"])  # the message is unchanged

    run = timed_pipeline.run(run_id_for(precise.id, DUE))
    assert (run.start_precision, run.not_before, run.scheduled_for) == (StartPrecision.PRECISE, DUE, DUE)
    assert timed_pipeline.run(run_id_for(to_the_second.id, DUE)).not_before is None


def test_the_executor_waits_out_the_early_part_and_starts_the_run_on_its_instant(timed_pipeline):
    job = timed_pipeline.create_job(schedule={"at": DUE}, start_precision="precise", payload={"n": 1})
    _claim_100_s_ahead(timed_pipeline)
    timed_pipeline.clock.advance(100)  # the delay is over: 0.3 s early
    (message,) = timed_pipeline.receive(Band.NORMAL)
    timed_pipeline.deliver(Band.NORMAL, [message])

    run = timed_pipeline.run(run_id_for(job.id, DUE))
    assert run.status is RunStatus.SUCCEEDED
    assert run.started_at == DUE  # it waited 0.3 s on the (fake) clock, then leased
    assert run.lateness_ms == 0
    assert timed_pipeline.clock.now() == DUE


def test_a_second_precision_run_starts_after_its_rounded_delay(timed_pipeline):
    job = timed_pipeline.create_job(schedule={"at": DUE})
    _claim_100_s_ahead(timed_pipeline)
    timed_pipeline.clock.advance(100)
    assert timed_pipeline.receive(Band.NORMAL) == []  # not visible before the whole second after its instant
    timed_pipeline.clock.advance(1)
    timed_pipeline.deliver(Band.NORMAL, timed_pipeline.receive(Band.NORMAL))
    assert timed_pipeline.run(run_id_for(job.id, DUE)).lateness_ms == 700


def test_a_precise_message_far_too_early_is_not_waited_for_and_never_starts_the_run_early(timed_pipeline):
    """A clock far off (or a duplicate message): more than the longest wait early, the executor does not hold
    its invocation; the lease's not_before refuses the run and the message comes back at its instant."""
    job = timed_pipeline.create_job(schedule={"at": DUE}, start_precision="precise")
    _claim_100_s_ahead(timed_pipeline)
    run_id = run_id_for(job.id, DUE)
    timed_pipeline.clock.advance(100)
    (message,) = timed_pipeline.receive(Band.NORMAL)
    timed_pipeline.clock.set(DUE - timedelta(seconds=30))  # as if the executor's clock were 30 s behind
    failed = timed_pipeline.deliver(Band.NORMAL, [message])
    assert failed == {message["MessageId"]}
    assert timed_pipeline.run(run_id).status is RunStatus.QUEUED
    assert timed_pipeline.clock.now() == DUE - timedelta(seconds=30)  # no wait
    assert timed_pipeline.visibility_set_for(message["ReceiptHandle"])[-1] == 30  # back at its instant


def test_start_precision_is_validated_and_can_be_changed(timed_pipeline):
    from pydantic import ValidationError
    from tickwork.control.api_bodies import JobSpec, JobUpdate

    with pytest.raises(ValidationError) as info:
        JobSpec.model_validate({"name": "x", "type": "echo", "schedule": {"rate": "1 minute"}, "start_precision": "ms"})
    assert info.value.errors()[0]["loc"] == ("start_precision",)

    job = timed_pipeline.create_job(schedule={"at": DUE})
    updated = timed_pipeline.services.jobs.update(
        job.tenant, job.id, JobUpdate.model_validate({"start_precision": "precise"})
    )
    assert updated.start_precision is StartPrecision.PRECISE
    _claim_100_s_ahead(timed_pipeline)
    (entry,) = _sent(timed_pipeline)
    assert json.loads(entry["MessageBody"])["precise"] is True
