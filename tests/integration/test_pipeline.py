"""The exactly-once pipeline against moto: create -> due index -> tick -> SQS -> executor -> S3."""

from __future__ import annotations

import hashlib
import json
import threading
from datetime import timedelta

import pytest
from tickwork.control.api_bodies import JobUpdate
from tickwork.faults import CrashPoint
from tickwork.model.clock import iso
from tickwork.model.errors import Conflict, InvalidInput
from tickwork.model.ids import run_id_for
from tickwork.model.policies import Band
from tickwork.model.states import JobState, RunStatus, SkipReason
from tickwork_local.runtime.lambda_runtime import sqs_event

from tests.faults.crashes import ProcessKilled
from tests.harness import START, TENANT
from tests.testing_jobtypes import EXECUTIONS

FAR = timedelta(seconds=300)  # beyond the 120 s horizon: created jobs wait for a tick


class Fixed:
    def __init__(self, value: float) -> None:
        self.value = value

    def random(self) -> float:
        return self.value


def test_one_shot_runs_once_and_its_result_is_its_payload(pipeline):
    payload = {"hello": "world", "n": 3, "nested": {"ok": True}}
    job = pipeline.create_job(schedule={"at": START + FAR}, payload=payload)
    pipeline.clock.advance(FAR.total_seconds())
    assert pipeline.tick()["dispatched"] == 1
    pipeline.clock.advance(0.25)  # the executor starts a quarter second after the run's time
    assert pipeline.drain() == 1

    (run,) = pipeline.runs_of(job.id)
    assert run.status is RunStatus.SUCCEEDED
    assert run.attempts == 1
    assert run.lateness_ms == 250
    assert run.scheduled_for == START + FAR
    # Under a spread of the run id's hash first, so that a burst's results land in 256 key ranges.
    spread = hashlib.sha256(run.id.encode()).hexdigest()[:2]
    key = f"results/{spread}/default/{job.id}/{run.id}.json"
    assert pipeline.result_objects() == [key]
    body = pipeline.s3.get_object(Bucket=pipeline.resources.results_bucket, Key=key)["Body"].read()
    assert json.loads(body) == payload
    assert run.result is not None
    assert run.result.bytes == len(body)
    assert run.result.location == f"s3://{pipeline.resources.results_bucket}/{key}"
    assert pipeline.services.store.jobs.get_job(job.id).state is JobState.COMPLETED  # type: ignore[union-attr]


def test_job_due_within_the_horizon_is_dispatched_at_create_with_an_exact_delay(pipeline):
    job = pipeline.create_job(schedule={"at": START + timedelta(seconds=5, milliseconds=200)})
    entries = [e for p in pipeline.calls.params("SendMessageBatch") for e in p["Entries"]]
    assert [e["DelaySeconds"] for e in entries] == [6]  # ceil: never early
    assert json.loads(entries[0]["MessageBody"])["run_id"] == f"{job.id}.{1795262405200:013d}"
    assert pipeline.tick()["dispatched"] == 0  # already claimed; the tick has nothing to add
    assert len(pipeline.runs_of(job.id)) == 1


def test_a_one_shot_whose_instant_passed_seconds_ago_is_accepted_and_sent_at_once(pipeline):
    # A client's clock a little ahead, or a slow request: the instant passed while the create was on its way.
    job = pipeline.create_job(schedule={"at": START - timedelta(seconds=59)})
    assert job.next_run_at == START - timedelta(seconds=59)
    entries = [e for p in pipeline.calls.params("SendMessageBatch") for e in p["Entries"]]
    assert [e["DelaySeconds"] for e in entries] == [0]
    assert pipeline.drain() == 1
    (run,) = pipeline.runs_of(job.id)
    assert run.status is RunStatus.SUCCEEDED
    assert run.scheduled_for == START - timedelta(seconds=59)


def test_a_one_shot_whose_instant_passed_within_the_minute_but_beyond_its_grace_is_refused(pipeline):
    with pytest.raises(InvalidInput) as refused:
        pipeline.create_job(schedule={"at": START - timedelta(seconds=10)}, misfire_grace_seconds=5)
    assert [e.field for e in refused.value.errors] == ["schedule.at"]
    with pytest.raises(InvalidInput) as refused:
        pipeline.create_job(schedule={"at": START - timedelta(seconds=60)})
    assert [e.field for e in refused.value.errors] == ["schedule.at"]
    assert pipeline.count_items(kind="job") == 0


def test_cron_produces_consecutive_occurrences_across_ticks(mocked_aws):
    from tests.harness import Pipeline

    # Nothing executes here (moto's SQS delays are real time), so keep orphan re-sends out of the way.
    with Pipeline.create(REDISPATCH_AFTER_SECONDS="900") as pipeline:
        _cron_across_ticks(pipeline)


def _cron_across_ticks(pipeline):
    job = pipeline.create_job(schedule={"cron": "* * * * *"})  # created 12:00:00: 12:01 and 12:02 are claimed now
    ticks = []
    for _ in range(4):
        ticks.append(pipeline.tick()["dispatched"])
        pipeline.clock.advance(60)
    runs = pipeline.runs_of(job.id)
    assert [r.scheduled_for for r in runs] == [START + timedelta(minutes=m) for m in range(1, 6)]
    assert len({r.id for r in runs}) == len(runs)
    # Each send's delay is exactly the time left until the occurrence, measured at the tick.
    delays = [e["DelaySeconds"] for p in pipeline.calls.params("SendMessageBatch") for e in p["Entries"]]
    assert delays == [60, 120, 120, 120, 120]
    assert ticks == [0, 1, 1, 1]  # 12:00 had nothing new; then one new minute enters the horizon per tick


def test_eight_concurrent_ticks_over_500_due_jobs_make_500_runs_and_500_messages(mocked_aws):
    from tests.harness import Pipeline

    with Pipeline.create() as pipeline:
        _eight_ticks(pipeline)


def _eight_ticks(pipeline):
    from benchmarks.common import seed_one_shots

    # Stored as the API stores them, 25 to a write: the subject is the ticks (500 creates took 40 s of the test).
    jobs = seed_one_shots(pipeline, 500, START + FAR, tenant=TENANT, spread=timedelta(milliseconds=1), priorities=10)
    pipeline.clock.advance(FAR.total_seconds() + 1)
    barrier = threading.Barrier(8)
    reports = []

    def tick() -> None:
        barrier.wait()
        reports.append(pipeline.services.dispatcher.claim_due_runs())

    threads = [threading.Thread(target=tick) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert sum(r.dispatched for r in reports) == 500
    # Every job has its run (ids are deterministic), and the table holds no other run record.
    expected = [run_id_for(j.id, j.next_run_at) for j in jobs]
    assert pipeline.existing_runs(expected) == set(expected)
    assert pipeline.count_items(kind="RUN") == 500
    assert sum(pipeline.queued_messages(b) for b in Band) == 500
    sent_ids = [
        json.loads(e["MessageBody"])["run_id"] for p in pipeline.calls.params("SendMessageBatch") for e in p["Entries"]
    ]
    assert len(sent_ids) == len(set(sent_ids)) == 500
    assert all(len(p["Entries"]) <= 10 for p in pipeline.calls.params("SendMessageBatch"))


def test_a_tick_that_dies_between_claim_and_send_is_recovered_by_the_next_with_one_message(pipeline):
    job = pipeline.create_job(schedule={"at": START + FAR})
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.crashes.arm(CrashPoint.TICK_BEFORE_SEND)
    with pytest.raises(ProcessKilled):
        pipeline.tick()
    assert pipeline.crashes.kills == 1
    (run,) = pipeline.runs_of(job.id)
    assert run.status is RunStatus.QUEUED
    assert sum(pipeline.queued_messages(b) for b in Band) == 0  # claimed, never sent

    pipeline.clock.advance(60)
    assert pipeline.tick()["redispatched"] == 1
    pipeline.clock.advance(60)
    assert pipeline.tick()["redispatched"] == 0  # re-sent once, not every tick
    assert sum(pipeline.queued_messages(b) for b in Band) == 1
    assert pipeline.drain() == 1
    assert pipeline.run(run.id).status is RunStatus.SUCCEEDED
    pipeline.clock.advance(600)
    assert pipeline.tick()["redispatched"] == 0  # leased: out of the index for good


def test_the_same_message_delivered_twice_runs_once(pipeline):
    job = pipeline.create_job(type="counting", schedule={"at": START + FAR})
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.tick()
    (message,) = pipeline.receive(Band.NORMAL)
    assert pipeline.deliver(Band.NORMAL, [message]) == set()
    assert pipeline.deliver(Band.NORMAL, [message]) == set()  # duplicate delivery: acknowledged
    (run,) = pipeline.runs_of(job.id)
    assert EXECUTIONS[run.id] == 1
    assert run.attempts == 1
    assert len(pipeline.result_objects()) == 1


def test_two_copies_delivered_at_once_run_in_one_place(pipeline):
    job = pipeline.create_job(type="counting", schedule={"at": START + FAR})
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.tick()
    (message,) = pipeline.receive(Band.NORMAL)
    copy = {**message, "MessageId": message["MessageId"] + "-copy"}
    failed = pipeline.deliver(Band.NORMAL, [message, copy])  # one batch, processed concurrently
    (run,) = pipeline.runs_of(job.id)
    assert EXECUTIONS[run.id] == 1
    assert len(failed) <= 1  # the loser either saw it finished, or was told to come back later
    assert run.status is RunStatus.SUCCEEDED


def test_an_expired_lease_is_run_again_and_leaves_one_result(pipeline):
    pipeline.create_job(type="counting", schedule={"at": START + FAR})
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.tick()
    (message,) = pipeline.receive(Band.NORMAL)
    run_id = json.loads(message["Body"])["run_id"]
    # An executor took the lease and died.
    lease = pipeline.services.store.leases.lease_run(
        run_id, owner="dead-executor", now=pipeline.clock.now(), lease_for=timedelta(seconds=60)
    )
    assert lease.outcome.value == "LEASED"
    assert pipeline.deliver(Band.NORMAL, [message]) == {message["MessageId"]}  # lease still live: later
    pipeline.clock.advance(61)
    assert pipeline.deliver(Band.NORMAL, [message]) == set()
    run = pipeline.run(run_id)
    assert run.status is RunStatus.SUCCEEDED
    assert run.attempts == 2
    assert EXECUTIONS[run_id] == 1
    assert len(pipeline.result_objects()) == 1


def test_a_dead_executors_written_result_is_recorded_not_rerun(pipeline):
    job = pipeline.create_job(type="counting", schedule={"at": START + FAR}, payload={"x": 1})
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.tick()
    (message,) = pipeline.receive(Band.NORMAL)
    run_id = json.loads(message["Body"])["run_id"]
    lease = pipeline.services.store.leases.lease_run(
        run_id, owner="dead", now=pipeline.clock.now(), lease_for=timedelta(seconds=60)
    )
    written, _ = pipeline.services.results.write_once(lease.run, {"written": "before dying"})  # then it died
    pipeline.clock.advance(61)
    assert pipeline.deliver(Band.NORMAL, [message]) == set()
    run = pipeline.run(run_id)
    assert run.status is RunStatus.SUCCEEDED
    assert run.result is not None
    assert run.result.sha256 == written.sha256
    assert EXECUTIONS[run_id] == 0  # the effect happened once, before the crash
    assert len(pipeline.result_objects()) == 1
    assert pipeline.services.store.jobs.get_job(job.id).state is JobState.COMPLETED  # type: ignore[union-attr]


def test_retries_with_growing_backoff_then_succeeds(pipeline):
    pipeline.services.executor.rng = Fixed(1.0)  # the top of each jitter range, so growth is visible
    job = pipeline.create_job(
        schedule={"at": START + FAR}, payload={"fail_attempts": 2}, retry={"max_attempts": 3, "backoff_seconds": 2}
    )
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.tick()
    pipeline.drain()
    (run,) = pipeline.runs_of(job.id)
    assert run.status is RunStatus.SUCCEEDED
    assert run.attempts == 3
    assert run.error is None
    lease_visibility = 75  # set before each lease: the message follows the lease (60 s + 15 s)
    backoffs = [
        p["VisibilityTimeout"]
        for p in pipeline.calls.params("ChangeMessageVisibility")
        if p["VisibilityTimeout"] not in (0, lease_visibility)
    ]
    assert backoffs == [2, 4]


def test_out_of_attempts_fails_into_the_dlq_with_the_error(pipeline):
    job = pipeline.create_job(
        schedule={"at": START + FAR}, payload={"fail_attempts": 9}, retry={"max_attempts": 2}, priority=8
    )
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.tick()
    pipeline.drain()
    (run,) = pipeline.runs_of(job.id)
    assert run.status is RunStatus.FAILED
    assert run.attempts == 2
    assert run.error is not None
    assert run.error.type == "EchoFailure"
    assert "attempt 2 fails on purpose" in run.error.message
    # In the API's DLQ (the tenant's FAILED runs); its message acknowledged, not on the band's SQS DLQ.
    assert [r.id for r in pipeline.services.queries.list_dlq("default").items] == [run.id]
    assert pipeline.dlq_messages(Band.HIGH) == []
    assert pipeline.result_objects() == []
    # Its one occurrence has settled (FAILED): the one-shot is complete, and its run can still be retried.
    assert pipeline.services.store.jobs.get_job(job.id).state is JobState.COMPLETED  # type: ignore[union-attr]


def test_paused_after_dispatch_is_recorded_skipped(pipeline):
    job = pipeline.create_job(type="counting", schedule={"at": START + FAR})
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.tick()
    pipeline.services.jobs.pause("default", job.id)
    pipeline.drain()
    (run,) = pipeline.runs_of(job.id)
    assert run.status is RunStatus.SKIPPED
    assert run.skip_reason is SkipReason.PAUSED
    assert EXECUTIONS[run.id] == 0
    assert pipeline.result_objects() == []


def test_a_run_skipped_paused_has_no_start_only_the_time_of_its_skip(pipeline):
    """It never started: no started_at or start lateness (nothing "ran for 20 ms"); finished_at is the skip's."""
    job = pipeline.create_job(schedule={"at": START + FAR})
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.tick()
    pipeline.services.jobs.pause("default", job.id)
    pipeline.clock.advance(7)
    pipeline.drain()
    (run,) = pipeline.runs_of(job.id)
    assert (run.status, run.skip_reason) == (RunStatus.SKIPPED, SkipReason.PAUSED)
    assert (run.started_at, run.lateness_ms, run.duration_ms, run.attempt_history) == (None, None, None, [])
    assert run.finished_at == pipeline.clock.now()


def test_cancelled_after_dispatch_is_recorded_skipped(pipeline):
    job = pipeline.create_job(schedule={"at": START + FAR})
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.tick()
    pipeline.services.jobs.cancel("default", job.id)
    pipeline.drain()
    (run,) = pipeline.runs_of(job.id)
    assert (run.status, run.skip_reason) == (RunStatus.SKIPPED, SkipReason.CANCELLED)


def test_misfire_beyond_grace_is_recorded_skipped_not_run(pipeline):
    job = pipeline.create_job(schedule={"at": START + FAR}, misfire_grace_seconds=60)
    pipeline.clock.advance(FAR.total_seconds() + 61)  # the tick was down for a while
    report = pipeline.tick()
    assert report["dispatched"] == 0
    assert report["skipped"] == 1
    (run,) = pipeline.runs_of(job.id)
    assert (run.status, run.skip_reason) == (RunStatus.SKIPPED, SkipReason.MISFIRED)
    assert sum(pipeline.queued_messages(b) for b in Band) == 0


def test_outage_catch_up_records_every_occurrence_in_bounded_records(pipeline):
    # ALL: every missed occurrence within the grace runs (the default, LATEST, would run only 14:58).
    job = pipeline.create_job(schedule={"cron": "* * * * *"}, misfire_grace_seconds=300, catchup="ALL")
    pipeline.clock.advance(3 * 3600)  # three hours without a tick
    pipeline.tick()
    runs = pipeline.runs_of(job.id)
    skipped = [r for r in runs if r.status is RunStatus.SKIPPED]
    queued = [r for r in runs if r.status is RunStatus.QUEUED]
    accounted = sum(r.skipped_count or 1 for r in skipped)
    # 12:01 and 12:02 were claimed at create; 12:03 .. 14:54 are older than the 5-minute grace:
    # 172 occurrences, each accounted for exactly once.
    assert accounted == 172
    assert len(skipped) == 11  # 10 individual records and one capped record for the rest
    capped = [r for r in skipped if r.skipped_count]
    assert len(capped) == 1
    assert iso(capped[0].skipped_until) == "2026-11-21T14:54:00.000Z"
    # Within grace (14:55 .. 15:00] and the horizon: they run, late but not misfired.
    assert [r.scheduled_for for r in queued][:3] == [START + timedelta(minutes=m) for m in (1, 2, 175)]


def test_priority_goes_first_when_more_is_due_than_one_tick_sends(mocked_aws):
    from tests.harness import Pipeline

    with Pipeline.create(MAX_DISPATCH_PER_TICK="5") as pipeline:
        jobs = {p: pipeline.create_job(schedule={"at": START + FAR}, priority=p) for p in range(10)}
        pipeline.clock.advance(FAR.total_seconds())
        first = pipeline.tick()
        assert first["dispatched"] == 5
        assert first["over_capacity"] == 5
        dispatched_first = {p for p, j in jobs.items() if pipeline.runs_of(j.id)}
        assert dispatched_first == {5, 6, 7, 8, 9}
        pipeline.tick()
        assert all(pipeline.runs_of(j.id) for j in jobs.values())


def test_malformed_message_goes_to_the_dlq_with_the_reason(pipeline):
    url = pipeline.resources.queue_urls["normal"]
    pipeline.sqs.send_message(QueueUrl=url, MessageBody='{"not": "a run"}')
    (message,) = pipeline.receive(Band.NORMAL)
    assert pipeline.deliver(Band.NORMAL, [message]) == set()  # acknowledged, not looped on
    (letter,) = pipeline.dlq_messages(Band.NORMAL)
    assert letter["Body"] == '{"not": "a run"}'  # as it came
    reason = letter["MessageAttributes"]["reason"]["StringValue"]
    assert reason.startswith("malformed message")
    assert "run_id" in reason


def test_sample_sqs_event_for_an_unknown_run_is_parked_not_run(pipeline):
    from executor import app as executor_app
    from tickwork_local.runtime.lambda_runtime import LocalLambdaContext

    from tests.conftest import load_event

    event = load_event("executor-sqs-batch.json")
    response = executor_app.handler(event, LocalLambdaContext("ExecutorFunction"))
    assert response == {"batchItemFailures": []}
    (letter,) = pipeline.dlq_messages(Band.NORMAL)
    assert letter["MessageAttributes"]["reason"]["StringValue"] == "no such run"


def test_bad_job_input_names_the_field_and_writes_nothing(pipeline):
    cases = [
        ({"type": "nope", "schedule": {"at": START + FAR}}, "type"),
        ({"schedule": {"at": START - timedelta(seconds=60)}}, "schedule.at"),
        (
            {
                "type": "http",
                "payload": {"url": "http://169.254.169.254/latest/meta-data/"},
                "schedule": {"at": START + FAR},
            },
            "payload.url",
        ),
    ]
    for spec, field in cases:
        with pytest.raises(InvalidInput) as info:
            pipeline.create_job(**spec)
        assert info.value.errors[0].field == field
    assert pipeline.calls.count("PutItem") == 0
    assert pipeline.calls.count("TransactWriteItems") == 0


def test_sqs_event_shape_matches_the_sample(pipeline):
    from tests.conftest import load_event

    sample = load_event("executor-sqs-batch.json")["Records"][0]
    built = sqs_event([{"MessageId": "m", "ReceiptHandle": "r", "Body": "{}"}], pipeline.resources.queue_urls["low"])[
        "Records"
    ][0]
    assert set(built) == set(sample)


def test_a_shard_another_tick_is_working_is_left_to_it_until_its_lease_ends(pipeline):
    from tickwork.store import shard_of

    job = pipeline.create_job(schedule={"at": START + FAR})
    pipeline.clock.advance(FAR.total_seconds())
    shard = shard_of(job.id, pipeline.services.store.shards)
    assert pipeline.services.store.due.acquire_shard(
        shard, owner="other-tick", now=pipeline.clock.now(), lease_for=timedelta(seconds=55)
    )
    assert pipeline.tick()["dispatched"] == 0  # the other tick is on it
    pipeline.clock.advance(56)  # ...and died: its lease ends before the next tick
    assert pipeline.tick()["dispatched"] == 1
    assert len(pipeline.runs_of(job.id)) == 1


def test_a_completed_one_shot_whose_run_failed_can_be_fixed_and_retried_with_the_fix(pipeline):
    """The one-shot's only run FAILED, so the job is COMPLETED. What a retry of that run uses (payload, retry,
    timeout, name, tags...) may still be changed, and the retry runs with the fix; its schedule may not (a
    COMPLETED job has no occurrence left), nor may a COMPLETED job whose last run did not fail be changed."""
    jobs = pipeline.services.jobs
    job = pipeline.create_job(
        schedule={"at": START + FAR}, payload={"fail_attempts": 9, "n": 1}, retry={"max_attempts": 1}
    )
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.tick()
    pipeline.drain()
    (run,) = pipeline.runs_of(job.id)
    assert run.status is RunStatus.FAILED
    assert pipeline.services.store.jobs.get_job(job.id).state is JobState.COMPLETED  # type: ignore[union-attr]

    with pytest.raises(Conflict, match="schedule"):
        jobs.update(TENANT, job.id, JobUpdate.model_validate({"schedule": {"at": iso(START + 2 * FAR)}}))
    fixed = jobs.update(TENANT, job.id, JobUpdate.model_validate({"payload": {"n": 2}, "name": "fixed"}))
    assert (fixed.state, fixed.payload, fixed.next_run_at) == (JobState.COMPLETED, {"n": 2}, None)

    pipeline.services.redrive.retry_run(TENANT, run.id)
    pipeline.drain()
    retried = pipeline.run(run.id)
    assert retried.status is RunStatus.SUCCEEDED
    assert pipeline.services.queries.get_result(TENANT, run.id) == {"n": 2}
    assert pipeline.services.store.jobs.get_job(job.id).state is JobState.COMPLETED  # type: ignore[union-attr]
    # Its last run no longer failed: nothing more to fix.
    with pytest.raises(Conflict, match="cannot update a COMPLETED job"):
        jobs.update(TENANT, job.id, JobUpdate.model_validate({"payload": {"n": 3}}))
