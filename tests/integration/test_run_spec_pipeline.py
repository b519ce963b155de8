"""A claimed run's message carries a copy of its job (tickwork.model.run_spec), so its executor does not read the job;
every way the copy could be out of date makes the executor read the job instead: a change after the claim
(pause, cancel, PATCH), a change racing the claim, a retry, a run leased long after its time. And a batch's
messages follow their leases in one ChangeMessageVisibilityBatch."""

from __future__ import annotations

import json
import logging
from datetime import timedelta
from typing import Any

import pytest
from tickwork.control.api_bodies import JobUpdate
from tickwork.executor.delivery import visibility_for
from tickwork.model.job import Job
from tickwork.model.policies import Band
from tickwork.model.run_spec import SPEC_FRESH_FOR
from tickwork.model.states import RunStatus, SkipReason
from tickwork.observability import logger

from tests.harness import TENANT, Pipeline

FAR = timedelta(seconds=300)
LEASE_FOR = timedelta(seconds=60)  # the executor's default lease


def _claimed(pipeline: Pipeline, count: int = 1, **spec: Any) -> list[Job]:
    """One-shot jobs due in 5 minutes, claimed by a tick at their time (so their messages are sent undelayed)."""
    at = pipeline.clock.now() + FAR
    spec.setdefault("payload", {"greeting": "hello"})
    jobs = [pipeline.create_job(name=f"copied {i}", schedule={"at": at}, **spec) for i in range(count)]
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.tick()
    return jobs


def _job_reads(pipeline: Pipeline, job: Job) -> int:
    return sum(1 for p in pipeline.calls.params("GetItem") if p["Key"]["pk"]["S"] == f"JOB#{job.id}")


def _result(pipeline: Pipeline, job: Job) -> Any:
    (run,) = pipeline.runs_of(job.id)
    return pipeline.services.results.read(run)


def test_a_claimed_runs_message_carries_its_job_and_its_executor_does_not_read_the_job(pipeline: Pipeline) -> None:
    (job,) = _claimed(pipeline)
    (message,) = pipeline.receive(Band.NORMAL)
    body = json.loads(message["Body"])
    assert body["job"]["type"] == "echo"
    assert body["job"]["payload"] == {"greeting": "hello"}
    assert body["job"]["last_occurrence"] is True  # a one-shot: its settling completes the job

    pipeline.calls.clear()
    assert pipeline.deliver(Band.NORMAL, [message]) == set()
    (run,) = pipeline.runs_of(job.id)
    assert run.status is RunStatus.SUCCEEDED
    assert _result(pipeline, job) == {"greeting": "hello"}
    assert _job_reads(pipeline, job) == 0
    # The copy said it was the last occurrence: the job completed, as when the executor read it.
    assert pipeline.services.store.jobs.get_job(job.id).state.value == "COMPLETED"


def _sent_bodies(pipeline: Pipeline) -> list[dict[str, Any]]:
    return [json.loads(e["MessageBody"]) for p in pipeline.calls.params("SendMessageBatch") for e in p["Entries"]]


def test_a_recurring_jobs_runs_are_not_its_last(pipeline: Pipeline) -> None:
    pipeline.calls.clear()
    job = pipeline.create_job(name="every minute", schedule={"cron": "* * * * *"}, payload={})
    pipeline.clock.advance(60)
    pipeline.tick()
    bodies = _sent_bodies(pipeline)  # the create's claim's and the tick's
    assert len(bodies) >= 2
    assert all(b["job_id"] == job.id for b in bodies)
    assert all(b["job"]["last_occurrence"] is False for b in bodies)


def test_a_bounded_schedules_last_claimed_run_is_its_last(pipeline: Pipeline) -> None:
    """A rate job whose schedule ends inside the claim's horizon: only its final run says so."""
    end = pipeline.clock.now() + timedelta(seconds=90)
    pipeline.calls.clear()
    pipeline.create_job(name="ends", schedule={"rate": "30 seconds", "end_at": end}, payload={})
    pipeline.tick()  # the create claimed them all (within the horizon): this tick has nothing more
    bodies = sorted(_sent_bodies(pipeline), key=lambda b: b["scheduled_for"])
    assert len(bodies) >= 2
    assert [b["job"]["last_occurrence"] for b in bodies] == [False] * (len(bodies) - 1) + [True]


def test_a_pause_after_the_claim_marks_the_run_and_its_executor_skips_it(pipeline: Pipeline) -> None:
    (job,) = _claimed(pipeline)
    pipeline.services.jobs.pause(TENANT, job.id)
    (run,) = pipeline.runs_of(job.id)
    assert run.job_changed_at == pipeline.clock.now()

    pipeline.calls.clear()
    pipeline.drain()
    (run,) = pipeline.runs_of(job.id)
    assert (run.status, run.skip_reason) == (RunStatus.SKIPPED, SkipReason.PAUSED)
    assert _job_reads(pipeline, job) == 1
    assert pipeline.result_objects() == []


def test_a_cancel_after_the_claim_is_seen_by_the_executor(pipeline: Pipeline) -> None:
    (job,) = _claimed(pipeline)
    pipeline.services.jobs.cancel(TENANT, job.id)
    pipeline.drain()
    (run,) = pipeline.runs_of(job.id)
    assert (run.status, run.skip_reason) == (RunStatus.SKIPPED, SkipReason.CANCELLED)


def test_a_payload_changed_after_the_claim_is_the_one_that_runs(pipeline: Pipeline) -> None:
    (job,) = _claimed(pipeline)
    pipeline.services.jobs.update(TENANT, job.id, JobUpdate.model_validate({"payload": {"greeting": "changed"}}))
    pipeline.drain()
    assert _result(pipeline, job) == {"greeting": "changed"}


def test_a_change_racing_the_claim_sends_no_copy(pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch) -> None:
    """The change lands between the claim's run put and its advance: the advance loses (the version moved), and
    the message goes without a copy, so the executor reads the job and sees the pause."""
    at = pipeline.clock.now() + FAR
    job = pipeline.create_job(name="raced", schedule={"at": at}, payload={"greeting": "hello"})
    pipeline.clock.advance(FAR.total_seconds())
    store = pipeline.services.store
    advance = store.jobs.advance_job

    def paused_first(*args: Any, **kwargs: Any) -> Any:
        pipeline.services.jobs.pause(TENANT, job.id)
        return advance(*args, **kwargs)

    monkeypatch.setattr(store.jobs, "advance_job", paused_first)
    pipeline.tick()
    monkeypatch.undo()
    (message,) = pipeline.receive(Band.NORMAL)
    assert "job" not in json.loads(message["Body"])

    pipeline.deliver(Band.NORMAL, [message])
    (run,) = pipeline.runs_of(job.id)
    assert (run.status, run.skip_reason) == (RunStatus.SKIPPED, SkipReason.PAUSED)


def test_a_run_leased_long_after_its_time_reads_its_job(pipeline: Pipeline) -> None:
    (job,) = _claimed(pipeline)
    pipeline.clock.advance(SPEC_FRESH_FOR.total_seconds() + 1)  # a backlog: the copy is no longer trusted
    pipeline.calls.clear()
    pipeline.drain()
    assert pipeline.runs_of(job.id)[0].status is RunStatus.SUCCEEDED
    assert _job_reads(pipeline, job) == 1


def test_a_retry_reads_its_job(pipeline: Pipeline) -> None:
    """The first attempt runs by the copy; the second (the same message, back after its backoff) reads the job."""
    (job,) = _claimed(pipeline, payload={"fail_attempts": 1})
    pipeline.calls.clear()
    pipeline.drain()
    (run,) = pipeline.runs_of(job.id)
    assert (run.status, run.attempts) == (RunStatus.SUCCEEDED, 2)
    assert _job_reads(pipeline, job) == 1


@pytest.mark.parametrize(
    "spec",
    [
        {"overlap": "SKIP"},
        {"circuit_breaker": {"failure_threshold": 3, "cooldown_seconds": 60}},
        {"payload": {"blob": "x" * 17_000}},
    ],
    ids=["overlap", "breaker", "large payload"],
)
def test_jobs_whose_state_the_executor_needs_send_no_copy(pipeline: Pipeline, spec: dict[str, Any]) -> None:
    (job,) = _claimed(pipeline, **spec)
    (message,) = pipeline.receive(Band.NORMAL)
    assert "job" not in json.loads(message["Body"])
    pipeline.calls.clear()
    pipeline.deliver(Band.NORMAL, [message])
    assert pipeline.runs_of(job.id)[0].status is RunStatus.SUCCEEDED
    assert _job_reads(pipeline, job) == 1


def test_a_change_marks_only_the_jobs_unsettled_runs(timed_pipeline: Pipeline) -> None:
    pipeline = timed_pipeline
    job = pipeline.create_job(name="every minute", schedule={"cron": "* * * * *"}, payload={})
    pipeline.tick()
    first = min(pipeline.runs_of(job.id), key=lambda r: r.scheduled_for)
    pipeline.clock.set(first.scheduled_for)
    pipeline.deliver(Band.NORMAL, pipeline.receive(Band.NORMAL))
    settled = {r.id for r in pipeline.runs_of(job.id) if r.status.terminal}
    assert settled == {first.id}

    pipeline.services.jobs.pause(TENANT, job.id)
    runs = pipeline.runs_of(job.id)
    assert len(runs) > 1
    assert all((r.job_changed_at is None) == (r.id in settled) for r in runs)
    # The runs claimed ahead then see the pause when their time comes.
    pipeline.clock.advance(180)
    pipeline.drain()
    assert {r.skip_reason for r in pipeline.runs_of(job.id) if r.id not in settled} == {SkipReason.PAUSED}


def test_a_batchs_messages_follow_their_leases_in_one_request(pipeline: Pipeline) -> None:
    jobs = _claimed(pipeline, 3)
    messages = pipeline.receive(Band.NORMAL)
    assert len(messages) == 3
    pipeline.calls.clear()
    assert pipeline.deliver(Band.NORMAL, messages) == set()
    assert pipeline.calls.count("ChangeMessageVisibility") == 0
    (batch,) = pipeline.calls.params("ChangeMessageVisibilityBatch")
    assert sorted(e["ReceiptHandle"] for e in batch["Entries"]) == sorted(m["ReceiptHandle"] for m in messages)
    assert {e["VisibilityTimeout"] for e in batch["Entries"]} == {visibility_for(LEASE_FOR)}
    assert all(pipeline.runs_of(j.id)[0].status is RunStatus.SUCCEEDED for j in jobs)


def test_a_batch_whose_visibility_request_fails_sets_each_records_own(
    pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    jobs = _claimed(pipeline, 2)
    messages = pipeline.receive(Band.NORMAL)

    def refused(*_: Any, **__: Any) -> set[str]:
        raise RuntimeError("throttled")

    monkeypatch.setattr(pipeline.services.queues, "change_visibility_batch", refused)
    pipeline.calls.clear()
    assert pipeline.deliver(Band.NORMAL, messages) == set()
    assert sorted(p["ReceiptHandle"] for p in pipeline.calls.params("ChangeMessageVisibility")) == sorted(
        m["ReceiptHandle"] for m in messages
    )
    assert all(pipeline.runs_of(j.id)[0].status is RunStatus.SUCCEEDED for j in jobs)


def test_an_entry_the_batch_request_refuses_is_set_by_its_record(pipeline: Pipeline) -> None:
    """A message deleted meanwhile (its receipt no longer in flight) is left out of the batch's answer: its record
    sets its own visibility, finds SQS no longer holds it, and its run still runs once."""
    jobs = _claimed(pipeline, 2)
    messages = pipeline.receive(Band.NORMAL)
    gone = messages[0]
    url = pipeline.resources.queue_urls[Band.NORMAL.value]
    pipeline.sqs.delete_message(QueueUrl=url, ReceiptHandle=gone["ReceiptHandle"])
    pipeline.calls.clear()
    pipeline.deliver(Band.NORMAL, messages)
    singles = [p["ReceiptHandle"] for p in pipeline.calls.params("ChangeMessageVisibility")]
    assert messages[1]["ReceiptHandle"] not in singles  # set with the batch
    assert all(pipeline.runs_of(j.id)[0].status is RunStatus.SUCCEEDED for j in jobs)


def test_a_malformed_message_is_logged_without_its_payload(
    pipeline: Pipeline, caplog: pytest.LogCaptureFixture
) -> None:
    url = pipeline.resources.queue_urls[Band.NORMAL.value]
    (job,) = _claimed(pipeline)
    (message,) = pipeline.receive(Band.NORMAL)
    body = json.loads(message["Body"])
    body["job"]["payload"] = {"api_token": "s3cr3t-value"}
    body["job"]["timeout_seconds"] = "not a number"
    pipeline.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    pipeline.sqs.send_message(QueueUrl=url, MessageBody=json.dumps(body))
    caplog.set_level(logging.INFO, logger=logger.name)
    assert pipeline.deliver(Band.NORMAL, pipeline.receive(Band.NORMAL)) == set()
    (record,) = [r for r in caplog.records if r.getMessage() == "malformed run message"]
    assert any(e["loc"] == ("job", "timeout_seconds") for e in record.errors)  # type: ignore[attr-defined]
    assert not [r for r in caplog.records if "s3cr3t-value" in repr(r.__dict__)]
    (letter,) = pipeline.dlq_messages(Band.NORMAL)
    assert letter["MessageAttributes"]["reason"]["StringValue"].startswith("malformed message")
    assert pipeline.runs_of(job.id)[0].status is RunStatus.QUEUED  # nothing ran


def _resend(pipeline: Pipeline, message: dict[str, Any]) -> list[dict[str, Any]]:
    """SQS delivering `message` again (it may, even after the message was deleted): its body, sent anew."""
    url = pipeline.resources.queue_urls[Band.NORMAL.value]
    pipeline.sqs.send_message(QueueUrl=url, MessageBody=message["Body"])
    return pipeline.receive(Band.NORMAL)


@pytest.mark.parametrize("requeue", ["retry", "redrive"])
def test_a_duplicate_of_a_requeued_runs_first_message_runs_the_job_as_changed_not_its_old_copy(
    pipeline: Pipeline, requeue: str
) -> None:
    """The first message carries P1, whose run fails; the user changes the payload (nothing to mark: the run is
    terminal) and requeues the run; a duplicate of the first message then leases it from QUEUED at attempt 1,
    within SPEC_FRESH_FOR of its occurrence. The copy is of the job before the change: the job is read."""
    at = pipeline.clock.now() + FAR
    job = pipeline.create_job(
        name="fixed after failing",
        schedule={"cron": f"{at.minute} {at.hour} * * *"},  # daily, so the job stays ACTIVE and can be changed
        payload={"greeting": "P1", "fail_attempts": 1},
        retry={"max_attempts": 1},
    )
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.tick()
    (first,) = pipeline.receive(Band.NORMAL)
    assert json.loads(first["Body"])["job"]["payload"]["greeting"] == "P1"
    pipeline.deliver(Band.NORMAL, [first])
    (run,) = pipeline.runs_of(job.id)
    assert run.status is RunStatus.FAILED

    pipeline.services.jobs.update(TENANT, job.id, JobUpdate.model_validate({"payload": {"greeting": "P2"}}))
    if requeue == "retry":
        pipeline.services.redrive.retry_run(TENANT, run.id)
    else:
        assert pipeline.services.redrive.redrive(TENANT, [run.id]).redriven == 1
    requeued = pipeline.receive(Band.NORMAL)  # the requeue's own message, held back: the duplicate comes first

    pipeline.deliver(Band.NORMAL, _resend(pipeline, first))
    (run,) = pipeline.runs_of(job.id)
    assert (run.status, run.attempts, run.requeues) == (RunStatus.SUCCEEDED, 1, 1)
    assert _result(pipeline, job) == {"greeting": "P2"}
    pipeline.deliver(Band.NORMAL, requeued)  # then the requeue's message: a duplicate of a finished run
    assert pipeline.runs_of(job.id)[0].status is RunStatus.SUCCEEDED
