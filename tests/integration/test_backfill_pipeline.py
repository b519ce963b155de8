"""Backfill through the real pipeline (moto, fake clock): each past occurrence gets one run, whoever made it
first; a repeat creates nothing; the runs go to the low band one a second; bad ranges write nothing."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from tickwork.control.api_bodies import BackfillRequest
from tickwork.model.clock import iso
from tickwork.model.errors import Conflict, InvalidInput
from tickwork.model.ids import run_id_for
from tickwork.model.policies import Band
from tickwork.model.states import JobState, RunStatus, RunTrigger
from tickwork.store.tenant_rates import TenantRates

from tests.harness import START, TENANT
from tests.integration.early_messages import deliver_now

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

HOUR = timedelta(hours=1)


def _request(start, end, max_runs=100) -> BackfillRequest:
    return BackfillRequest.model_validate({"from": iso(start), "to": iso(end), "max_runs": max_runs})


def _backfill(pipeline, job_id, start, end, max_runs=100):
    return pipeline.services.jobs.backfill(TENANT, job_id, _request(start, end, max_runs))


def _hourly(pipeline):
    return pipeline.create_job(schedule={"cron": "0 * * * *"})


def test_backfill_twice_gives_the_same_set_of_runs(pipeline):
    job = _hourly(pipeline)
    pipeline.clock.advance(3 * 3600 + 300)  # 15:05: 13:00 and 14:00 were missed, 15:00 is due
    pipeline.tick()  # the scheduler's own records: 13:00 and 14:00 skipped (misfired), 15:00 queued
    scheduled = {r.id for r in pipeline.runs_of(job.id)}
    assert len(scheduled) == 3

    first = _backfill(pipeline, job.id, START - 6 * HOUR, pipeline.clock.now())
    occurrences = [START - 6 * HOUR + k * HOUR for k in range(10)]  # 06:00 to 15:00
    assert [r.id for r in first.created] == [run_id_for(job.id, at) for at in occurrences[:7]]
    assert first.existing == occurrences[7:]  # the scheduler's, left alone
    assert all(r.trigger is RunTrigger.BACKFILL and r.status is RunStatus.QUEUED for r in first.created)
    runs_after_first = {r.id: r.model_dump() for r in pipeline.runs_of(job.id)}
    assert set(runs_after_first) == scheduled | {r.id for r in first.created}

    pipeline.clock.advance(60)
    second = _backfill(pipeline, job.id, START - 6 * HOUR, START + 3 * HOUR)
    assert second.created == []
    assert second.existing == occurrences
    assert {r.id: r.model_dump() for r in pipeline.runs_of(job.id)} == runs_after_first


def test_backfill_dispatch_is_bounded_to_the_low_band_one_a_second(pipeline):
    job = _hourly(pipeline)
    pipeline.clock.advance(600)
    pipeline.calls.clear()
    done = _backfill(pipeline, job.id, START - 24 * HOUR, START - HOUR)
    assert len(done.created) == 24
    # The job read, its tenant's settings (read once per 30 s), the job's count of its occurrences' runs (one
    # update, for its completion), one conditional put per occurrence, and the messages in batches of ten.
    assert pipeline.calls.by_operation() == {
        "GetItem": 1,
        "BatchGetItem": 1,
        "UpdateItem": 1,
        "PutItem": 24,
        "SendMessageBatch": 3,
    }
    batches = pipeline.calls.params("SendMessageBatch")
    assert {b["QueueUrl"] for b in batches} == {pipeline.resources.queue_urls[Band.LOW.value]}
    delays = [e["DelaySeconds"] for b in batches for e in b["Entries"]]
    assert delays == list(range(24))  # paced: one run a second, whatever the job's priority (5 here)
    now = pipeline.clock.now()
    assert [r.not_before for r in done.created] == [None] + [now + timedelta(seconds=k) for k in range(1, 24)]
    assert all(r.band is Band.LOW for r in done.created)


def test_a_backfilled_run_runs_at_its_turn_and_not_before(timed_pipeline):
    pipeline = timed_pipeline  # the messages' delays are the fake clock's: however slow the machine, still delayed
    job = _hourly(pipeline)
    pipeline.clock.advance(600)
    done = _backfill(pipeline, job.id, START - 3 * HOUR, START - HOUR)
    first, _second, third = done.created
    assert pipeline.drain() == 1  # the first is due now; the others' messages are still delayed
    assert pipeline.run(first.id).status is RunStatus.SUCCEEDED
    assert pipeline.run(first.id).trigger is RunTrigger.BACKFILL

    # A message for the third, early (a duplicate, say): the lease refuses it until its turn.
    messages = deliver_now(pipeline, third)
    assert pipeline.run(third.id).status is RunStatus.QUEUED
    assert pipeline.run(third.id).attempts == 0
    assert pipeline.visibility_set_for(messages[0]["ReceiptHandle"])[-1] == 2
    pipeline.clock.advance(2)
    pipeline.deliver(Band.LOW, messages)
    ran = pipeline.run(third.id)
    assert ran.status is RunStatus.SUCCEEDED
    assert ran.started_at == third.not_before
    assert json.loads(messages[0]["Body"])["run_id"] == third.id


def test_max_runs_takes_the_earliest_and_a_later_call_continues(pipeline):
    job = _hourly(pipeline)
    pipeline.clock.advance(600)
    start, end = START - 10 * HOUR, START - HOUR
    first = _backfill(pipeline, job.id, start, end, max_runs=4)
    assert [r.scheduled_for for r in first.created] == [start + k * HOUR for k in range(4)]
    rest = _backfill(pipeline, job.id, start, end, max_runs=10)
    assert len(rest.created) == 6
    assert rest.existing == [start + k * HOUR for k in range(4)]


def test_a_paused_job_can_be_backfilled_and_a_cancelled_one_cannot(pipeline):
    job = _hourly(pipeline)
    pipeline.clock.advance(600)
    pipeline.services.jobs.pause(TENANT, job.id)
    assert len(_backfill(pipeline, job.id, START - 2 * HOUR, START - HOUR).created) == 2
    pipeline.services.jobs.cancel(TENANT, job.id)
    pipeline.calls.clear()
    with pytest.raises(Conflict, match="CANCELLED"):
        _backfill(pipeline, job.id, START - 5 * HOUR, START - 3 * HOUR)
    assert pipeline.calls.count("PutItem") == 0
    assert pipeline.calls.count("SendMessageBatch") == 0


@pytest.mark.parametrize(
    ("start", "end", "field", "message"),
    [
        (START + 2 * HOUR, START + 3 * HOUR, "from", "must not be in the future"),
        (START - HOUR, START + 3 * HOUR, "to", "must not be in the future"),
        (START - HOUR, START - 2 * HOUR, "to", "must not be before from"),
        (START - timedelta(days=32), START - HOUR, "to", "at most 31 days"),
    ],
    ids=["from in the future", "to in the future", "reversed", "wider than 31 days"],
)
def test_a_bad_range_names_the_field_and_writes_nothing(pipeline, start, end, field, message):
    job = _hourly(pipeline)
    pipeline.clock.advance(600)
    pipeline.calls.clear()
    with pytest.raises(InvalidInput) as refused:
        _backfill(pipeline, job.id, start, end)
    assert [e.field for e in refused.value.errors] == [field]
    assert message in str(refused.value)
    assert pipeline.calls.count("PutItem") == 0
    assert len(pipeline.runs_of(job.id)) == 0


@pytest.mark.parametrize("settled", ["before_the_tick", "after_the_tick", "between_the_claims_read_and_advance"])
def test_backfilling_an_occurrence_the_tick_has_not_claimed_completes_the_job(pipeline, monkeypatch, settled):
    """A one-shot at 12:10 with no tick until 12:10:30 (an outage, a hold-back); a backfill of [12:00, 12:10:30]
    creates its run. Whether the run settles before the tick claims the occurrence, after, or in between the
    claim's put (which finds it) and its advance, the job ends COMPLETED and out of the due index, not ACTIVE
    with no next occurrence for ever."""
    at = START + timedelta(minutes=10)
    job = pipeline.create_job(schedule={"at": iso(at)}, payload={})
    pipeline.clock.set(at + timedelta(seconds=30))
    (run,) = _backfill(pipeline, job.id, START, pipeline.clock.now()).created
    assert run.id == run_id_for(job.id, at)
    if settled == "before_the_tick":
        assert pipeline.drain() == 1
        pipeline.tick()
    elif settled == "after_the_tick":
        pipeline.tick()
        assert pipeline.drain() == 1
    else:
        advance = pipeline.services.store.jobs.advance_job

        def settled_first(*args, **kwargs):
            assert pipeline.drain() == 1
            return advance(*args, **kwargs)

        monkeypatch.setattr(pipeline.services.store.jobs, "advance_job", settled_first)
        pipeline.tick()
        monkeypatch.undo()
    assert pipeline.run(run.id).status is RunStatus.SUCCEEDED
    done = pipeline.services.queries.get_job(TENANT, job.id)
    assert (done.state, done.next_run_at) == (JobState.COMPLETED, None)
    assert [r.id for r in pipeline.runs_of(job.id)] == [run.id]  # the backfilled run is its only run


def test_a_tenant_with_a_rate_quota_backfills_no_faster_than_its_quota(pipeline):
    from tickwork.model.tenant_settings import TenantSettings

    pipeline.services.tenant_records.put_settings(TENANT, TenantSettings(max_runs_per_minute=10), START)
    job = _hourly(pipeline)
    pipeline.clock.advance(600)
    done = _backfill(pipeline, job.id, START - 5 * HOUR, START - HOUR)
    now = pipeline.clock.now()
    # One run every 6 s (60 s / 10), not one a second; the tick's window of the quota is left to the schedule.
    assert [r.not_before for r in done.created] == [None] + [now + timedelta(seconds=6 * k) for k in range(1, 5)]
    assert TenantRates(pipeline.services.store.shared_table).used(TENANT, now) == 0


def test_a_backfilled_earlier_run_still_queued_keeps_the_job_from_completing(pipeline):
    """The create's claim queued the job's last occurrence (12:01) as its only run, and its message says so. A
    backfill then makes a run of 12:00. 12:01 settles first: the job is not COMPLETED while 12:00 is queued (the
    backfill counted its run, so the completion's write for a lone run does not hold); 12:00's settling completes
    it."""
    job = pipeline.create_job(schedule={"cron": "* * * * *", "end_at": iso(START + timedelta(minutes=1))}, payload={})
    last = pipeline.run(run_id_for(job.id, START + timedelta(minutes=1)))
    (sent,) = [
        e["MessageBody"]
        for p in pipeline.calls.params("SendMessageBatch")
        for e in p["Entries"]
        if json.loads(e["MessageBody"])["run_id"] == last.id
    ]
    assert json.loads(sent)["job"]["only_occurrence"] is True
    (earlier,) = _backfill(pipeline, job.id, START - timedelta(seconds=30), START).created

    pipeline.clock.set(last.scheduled_for)
    pipeline.sqs.send_message(QueueUrl=pipeline.resources.queue_urls[last.band.value], MessageBody=sent)
    pipeline.deliver(last.band, pipeline.receive(last.band))
    assert pipeline.run(last.id).status is RunStatus.SUCCEEDED
    assert pipeline.run(earlier.id).status is RunStatus.QUEUED
    assert pipeline.services.queries.get_job(TENANT, job.id).state is JobState.ACTIVE

    assert pipeline.drain() == 1
    assert pipeline.run(earlier.id).status is RunStatus.SUCCEEDED
    assert pipeline.services.queries.get_job(TENANT, job.id).state is JobState.COMPLETED
