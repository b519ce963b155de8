"""Issue 34, defects 1 and 9, through the real pipeline (moto) on the fake clock, with a short executor Lambda so that
a durable run yields (tests/durable_jobtypes.py's `long-export`: 10 s a page, two pages a segment):

- 1: a yielded run keeps what admitted it (its job's running slot, its ordering key's turn) until it ends, and its
  next segment is recognised as their holder; a run that ends between segments gives them back.
- 9: a retry by hand or a redrive is a new execution, with the whole of `max_run_seconds` again.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from tickwork.control.api_bodies import BackfillRequest
from tickwork.faults import CrashPoint
from tickwork.model.clock import to_ms
from tickwork.model.errors import Conflict
from tickwork.model.job import Job
from tickwork.model.policies import Band
from tickwork.model.run import Run
from tickwork.model.states import AttemptOutcome, DeferReason, RunStatus, RunTrigger, SkipReason
from tickwork.store.limits import LimitRecords, semaphore_sort

from tests.durable_jobtypes import STEP_CALLS
from tests.faults.crashes import ProcessKilled
from tests.harness import TENANT, Pipeline
from tests.integration.test_yields_pipeline import FAR, LAMBDA_SECONDS, _due


def _deliver(pipeline: Pipeline, band: Band, message: dict[str, Any]) -> None:
    """One invocation with one message; a message the executor sent back (a deferral) comes back once the clock has
    moved on by the visibility it set."""
    if pipeline.deliver(band, [message], timeout_seconds=LAMBDA_SECONDS):
        waits = pipeline.visibility_set_for(message["ReceiptHandle"])
        pipeline.clock.advance(waits[-1] if waits else 1)
        pipeline.sqs.change_message_visibility(
            QueueUrl=pipeline.resources.queue_urls[band.value],
            ReceiptHandle=message["ReceiptHandle"],
            VisibilityTimeout=0,
        )


def _deliver_run(pipeline: Pipeline, run_id: str) -> None:
    """Deliver the run's waiting message alone; the others' come back at once."""
    band = pipeline.run(run_id).band
    messages = pipeline.receive(band)
    mine = [m for m in messages if json.loads(m["Body"])["run_id"] == run_id]
    assert len(mine) == 1, f"one message of {run_id} expected, got {len(mine)}"
    for other in messages:
        if other is not mine[0]:
            pipeline.sqs.change_message_visibility(
                QueueUrl=pipeline.resources.queue_urls[band.value],
                ReceiptHandle=other["ReceiptHandle"],
                VisibilityTimeout=0,
            )
    _deliver(pipeline, band, mine[0])


def _drain(pipeline: Pipeline) -> None:
    """Deliver until the queues are empty, one message an invocation."""
    for _ in range(200):
        delivered = 0
        for band in Band:
            for message in pipeline.receive(band):
                delivered += 1
                _deliver(pipeline, band, message)
        if not delivered:
            return
    raise AssertionError("the queues never drained")


def _yielded_once(pipeline: Pipeline, **spec: Any) -> tuple[Job, Run]:
    """A job's scheduled run, after its first segment yielded: its next segment's message waits in the queue."""
    job = _due(pipeline, **spec)
    (run,) = pipeline.runs_of(job.id)
    _deliver_run(pipeline, run.id)
    run = pipeline.run(run.id)
    assert (run.status, run.segments) == (RunStatus.QUEUED, 1)
    return job, run


def _trigger(pipeline: Pipeline, job: Job) -> str:
    return pipeline.services.jobs.trigger(TENANT, job.id).id


def _steps_of(run: Run) -> list[int]:
    return [count for (run_id, _), count in STEP_CALLS.items() if run_id == run.id]


def _rows(pages: int) -> list[int]:
    return [row for page in range(pages) for row in (page * 10, page * 10 + 1)]


def _handler_started(run: Run) -> int:
    """When the run's handler first started (ms): its first attempt record that was not a deferral."""
    return min(to_ms(r.started_at) for r in run.attempt_history if r.outcome is not AttemptOutcome.DEFERRED)


def _finished(run: Run) -> int:
    assert run.finished_at is not None
    return to_ms(run.finished_at)


def _succeeded_whole(pipeline: Pipeline, run: Run, pages: int = 12) -> None:
    run = pipeline.run(run.id)
    assert (run.status, run.attempts, run.error) == (RunStatus.SUCCEEDED, 1, None)
    assert run.segments >= 1
    assert _steps_of(run) == [1] * pages  # every page once: its second half ran, and only once
    assert pipeline.services.results.read(run) == {"rows": _rows(pages)}


# ------------------------------------------------------------ defect 1: a yielded run keeps its running slot


def test_yielded_run_keeps_its_overlap_slot_under_skip(pipeline):
    job, first = _yielded_once(pipeline, overlap="SKIP")
    second = _trigger(pipeline, job)  # while the first waits for its next segment
    _deliver_run(pipeline, second)
    assert pipeline.run(second).status is RunStatus.SKIPPED  # not beside the first
    assert pipeline.run(second).skip_reason is SkipReason.OVERLAP
    _drain(pipeline)
    _succeeded_whole(pipeline, first)
    assert _steps_of(pipeline.run(second)) == []
    # It gave the slot back when it ended: the job's next run starts.
    third = _trigger(pipeline, job)
    _drain(pipeline)
    assert pipeline.run(third).status is RunStatus.SUCCEEDED


def test_yielded_run_keeps_its_overlap_slot_under_buffer_one(pipeline):
    job, first = _yielded_once(pipeline, overlap="BUFFER_ONE")
    second = _trigger(pipeline, job)
    _deliver_run(pipeline, second)  # waits: the first holds the slot
    waiting = pipeline.run(second)
    assert (waiting.status, waiting.deferred_reason) == (RunStatus.QUEUED, DeferReason.OVERLAP_BUFFER)
    third = _trigger(pipeline, job)
    _deliver_run(pipeline, third)  # one waiter at most
    assert pipeline.run(third).skip_reason is SkipReason.OVERLAP
    _drain(pipeline)  # the first's next segment is the holder's: the waiter does not block it
    _succeeded_whole(pipeline, first)
    after = pipeline.run(second)
    assert after.status is RunStatus.SUCCEEDED
    assert _handler_started(after) >= _finished(pipeline.run(first.id))  # never beside it


def test_yielded_run_keeps_its_overlap_slot_under_cancel_other(pipeline):
    """A newer run stops the yielded one (it is not skipped waiting for a segment that never comes): recorded
    SKIPPED `cancelled` when its next segment starts and sees the request, and the newer one runs after it."""
    job, first = _yielded_once(pipeline, overlap="CANCEL_OTHER")
    second = _trigger(pipeline, job)
    _drain(pipeline)
    stopped, newer = pipeline.run(first.id), pipeline.run(second)
    assert (stopped.status, stopped.skip_reason) == (RunStatus.SKIPPED, SkipReason.CANCELLED)
    assert newer.status is RunStatus.SUCCEEDED
    assert _handler_started(newer) >= _finished(stopped)


def test_yielded_run_of_a_cancelled_job_gives_its_slot_back(pipeline):
    """Its next segment is recorded SKIPPED `cancelled`: the slot it kept between segments is freed then, not left
    to lapse."""
    job, first = _yielded_once(pipeline, overlap="SKIP")
    pipeline.services.jobs.cancel(TENANT, job.id)
    _drain(pipeline)
    assert pipeline.run(first.id).skip_reason is SkipReason.CANCELLED
    item = pipeline.services.store.jobs.get_job(job.id)
    assert item is not None
    slots = pipeline.services.clients.client("dynamodb").get_item(
        TableName=pipeline.services.settings.table_name, Key={"pk": {"S": f"JOB#{job.id}"}, "sk": {"S": "JOB"}}
    )["Item"]
    assert "running_run" not in slots


def test_a_paused_jobs_run_between_its_segments_runs_on_to_its_end(pipeline):
    """A pause holds back a job's new starts, not a run already under way: as a running one runs on, a durable run
    between its segments finishes, every page once (its first half is not thrown away as SKIPPED `paused`). The
    job's next occurrence, a new start, is held back."""
    job, first = _yielded_once(pipeline, overlap="SKIP")
    pipeline.services.jobs.pause(TENANT, job.id)
    _drain(pipeline)
    _succeeded_whole(pipeline, first)
    item = pipeline.services.store.jobs.get_job(job.id)
    assert item is not None
    assert item.state.value == "PAUSED"


def test_yielded_run_cancelled_between_segments_ends_without_running_and_gives_everything_back(pipeline):
    ordering = {"key": "exports"}
    job, first = _yielded_once(pipeline, overlap="SKIP", ordering=ordering)
    pipeline.services.run_cancel.cancel_run(TENANT, first.id)  # QUEUED, between its segments
    _drain(pipeline)
    run = pipeline.run(first.id)
    assert (run.status, run.skip_reason) == (RunStatus.SKIPPED, SkipReason.CANCELLED)
    assert _steps_of(run) == [1, 1]  # its first segment's pages, no more
    after = _trigger(pipeline, job)  # the slot and the key's turn are free
    _drain(pipeline)
    assert pipeline.run(after).status is RunStatus.SUCCEEDED


def test_a_queued_run_that_never_ran_still_cannot_be_cancelled(pipeline):
    job = pipeline.create_job(type="long-export", schedule={"cron": "0 12 * * *"})
    queued = _trigger(pipeline, job)
    with pytest.raises(Conflict, match="this one is QUEUED"):
        pipeline.services.run_cancel.cancel_run(TENANT, queued)


def test_yielded_run_keeps_its_ordering_key_turn(pipeline):
    """A run of the same key that goes ahead of the yielded run's entry (a backfilled occurrence, earlier than the
    yielded run's) waits for it to end: it does not run between its segments."""
    ordering = {"key": "exports"}
    _, first = _yielded_once(pipeline, ordering=ordering)
    other = pipeline.create_job(type="long-export", ordering=ordering, schedule={"cron": "0 12 * * *"})
    backfill = BackfillRequest.model_validate({"from": first.scheduled_for - FAR, "to": first.scheduled_for})
    (earlier,) = [run.id for run in pipeline.services.jobs.backfill(TENANT, other.id, backfill).created]
    assert pipeline.run(earlier).scheduled_for < first.scheduled_for
    _deliver_run(pipeline, earlier)
    assert pipeline.run(earlier).deferred_reason is DeferReason.ORDERING_KEY
    _drain(pipeline)
    _succeeded_whole(pipeline, first)
    assert _handler_started(pipeline.run(earlier)) >= _finished(pipeline.run(first.id))


def test_yielded_run_gives_its_concurrency_slot_back_between_segments(pipeline):
    """docs/fairness.md: a run between segments runs nothing, so it holds no concurrency slot; its next segment takes
    one again, and waits (its attempt not consumed) while the key is full, keeping its job's running slot."""
    key = {"key": "exports", "limit": 1}
    job, first = _yielded_once(pipeline, overlap="SKIP", concurrency=key)
    other = pipeline.create_job(type="echo", concurrency=key, schedule={"cron": "0 12 * * *"})
    between = _trigger(pipeline, other)
    _deliver_run(pipeline, between)
    assert pipeline.run(between).status is RunStatus.SUCCEEDED  # the key was free between the segments
    limits = deferred_on_a_full_key(pipeline, first)
    second = _trigger(pipeline, job)
    _deliver_run(pipeline, second)
    assert pipeline.run(second).skip_reason is SkipReason.OVERLAP  # the waiting segment kept the job's slot
    limits.release(TENANT, semaphore_sort("exports"), holder="another executor")
    _drain(pipeline)
    _succeeded_whole(pipeline, first)


def deferred_on_a_full_key(pipeline: Pipeline, yielded: Run) -> LimitRecords:
    """The concurrency key `exports` (limit 1) taken by another executor, and the yielded run's next segment
    delivered: it waits, QUEUED and deferred, its attempt not consumed. The limits, to release the key with."""
    limits, now = LimitRecords(pipeline.services.store.shared_table), pipeline.clock.now()
    elsewhere = {"holder": "another executor", "limit": 1, "until": now + FAR, "now": now}
    assert limits.acquire(TENANT, semaphore_sort("exports"), **elsewhere)
    _deliver_run(pipeline, yielded.id)
    waiting = pipeline.run(yielded.id)
    assert (waiting.status, waiting.deferred_reason, waiting.segments) == (
        RunStatus.QUEUED,
        DeferReason.CONCURRENCY_KEY,
        1,
    )
    return limits


def test_yielded_run_that_retries_keeps_its_slot_through_its_backoff(pipeline):
    """Its third segment fails (retryable): the run has not ended, and no run of its job starts in its backoff."""
    job, first = _yielded_once(pipeline, overlap="SKIP", payload={"pages": 6, "fail_once_at_page": 4})
    _deliver_run(pipeline, first.id)  # the second segment yields
    _deliver_run(pipeline, first.id)  # the third fails as it starts page 4
    retrying = pipeline.run(first.id)
    assert (retrying.status, retrying.attempts) == (RunStatus.RETRYING, 1)
    second = _trigger(pipeline, job)
    _deliver_run(pipeline, second)
    assert pipeline.run(second).skip_reason is SkipReason.OVERLAP
    _drain(pipeline)
    run = pipeline.run(first.id)
    assert (run.status, run.attempts) == (RunStatus.SUCCEEDED, 2)
    assert pipeline.services.results.read(run) == {"rows": _rows(6)}


def _next_segment_message(pipeline: Pipeline, run: Run) -> dict[str, Any]:
    (message,) = pipeline.receive(run.band)
    assert json.loads(message["Body"])["run_id"] == run.id
    return message


def test_yielded_run_whose_next_segment_message_is_lost_keeps_its_slot_until_the_tick_sends_it_again(pipeline):
    job, first = _yielded_once(pipeline, overlap="SKIP")
    lost = _next_segment_message(pipeline, first)
    url = pipeline.resources.queue_urls[first.band.value]
    pipeline.sqs.delete_message(QueueUrl=url, ReceiptHandle=lost["ReceiptHandle"])
    pipeline.clock.advance(pipeline.services.executor.outcomes.retry_safety_net.total_seconds() - 10)
    second = _trigger(pipeline, job)
    _deliver_run(pipeline, second)
    assert pipeline.run(second).skip_reason is SkipReason.OVERLAP  # the gap is long; the slot still the first's
    pipeline.clock.advance(20)
    pipeline.tick()  # the due index sends the next segment again
    _drain(pipeline)
    _succeeded_whole(pipeline, first)
    third = _trigger(pipeline, job)
    _drain(pipeline)
    assert pipeline.run(third).status is RunStatus.SUCCEEDED


def test_yielded_run_whose_next_segment_message_is_duplicated_runs_each_page_once(pipeline):
    job, first = _yielded_once(pipeline, overlap="BUFFER_ONE")
    message = _next_segment_message(pipeline, first)
    url = pipeline.resources.queue_urls[first.band.value]
    pipeline.sqs.send_message(QueueUrl=url, MessageBody=message["Body"])
    pipeline.sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0)
    _drain(pipeline)
    _succeeded_whole(pipeline, first)
    after = _trigger(pipeline, job)
    _drain(pipeline)
    assert pipeline.run(after).status is RunStatus.SUCCEEDED  # the slot was given back


def test_yielded_run_taken_over_after_its_next_segments_executor_died_keeps_its_slot(pipeline):
    job, first = _yielded_once(pipeline, overlap="SKIP")
    message = _next_segment_message(pipeline, first)
    pipeline.crashes.arm(CrashPoint.EXECUTOR_AFTER_LEASE)
    with pytest.raises(ProcessKilled):
        pipeline.deliver(first.band, [message], timeout_seconds=LAMBDA_SECONDS)
    pipeline.crashes.disarm()
    second = _trigger(pipeline, job)
    _deliver_run(pipeline, second)
    assert pipeline.run(second).skip_reason is SkipReason.OVERLAP
    pipeline.clock.advance(61)  # the dead executor's lease ends; its message comes back
    url = pipeline.resources.queue_urls[first.band.value]
    pipeline.sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0)
    _drain(pipeline)
    run = pipeline.run(first.id)
    assert (run.status, run.error) == (RunStatus.SUCCEEDED, None)
    assert _steps_of(run) == [1] * 12
    assert pipeline.services.results.read(run) == {"rows": _rows(12)}


# ------------------------------------------------------------ defect 9: a new execution, a fresh handler-time budget


def _failed_after_yields(pipeline: Pipeline, **spec: Any) -> Run:
    job = _due(pipeline, retry={"max_attempts": 1}, **spec)
    _drain(pipeline)
    (run,) = pipeline.runs_of(job.id)
    assert (run.status, run.segments, run.yielded_ms) == (RunStatus.FAILED, 2, 40_000)
    return run


def test_retry_by_hand_gets_a_fresh_handler_time_budget(pipeline):
    """60 s of work in a 65 s budget: the first execution failed in its third segment (after 40 s); started over,
    the retry needs 60 s again, and has them."""
    failed = _failed_after_yields(pipeline, max_run_seconds=65, payload={"pages": 6, "fail_once_at_page": 4})
    pipeline.services.redrive.retry_run(TENANT, failed.id, from_checkpoint=False)
    requeued = pipeline.run(failed.id)
    assert (requeued.segments, requeued.yielded_ms) == (0, 0)
    _drain(pipeline)
    run = pipeline.run(failed.id)
    assert (run.status, run.error, run.requeues) == (RunStatus.SUCCEEDED, None, 1)
    assert pipeline.services.results.read(run) == {"rows": _rows(6)}
    assert (run.segments, run.yielded_ms) == (2, 40_000)  # this execution's
    # The first execution's attempts are still in its history, before the new one's.
    outcomes = [record.outcome for record in run.attempt_history]
    assert outcomes == [AttemptOutcome.YIELDED] * 2 + [AttemptOutcome.FAILED] + [AttemptOutcome.YIELDED] * 2 + [
        AttemptOutcome.SUCCEEDED
    ]


def test_redrive_gets_a_fresh_handler_time_budget(pipeline):
    """A run that used its whole max_run_seconds (50 s for 60 s of work) failed `RunTimeout`; redriven, it goes on
    from its checkpoint with 50 s again, and finishes."""
    failed = _failed_after_yields(pipeline, max_run_seconds=50, payload={"pages": 6})
    assert failed.error is not None
    assert failed.error.type == "RunTimeout"
    assert pipeline.services.redrive.redrive(TENANT, [failed.id]).redriven == 1
    _drain(pipeline)
    run = pipeline.run(failed.id)
    assert (run.status, run.error, run.requeues) == (RunStatus.SUCCEEDED, None, 1)
    assert pipeline.services.results.read(run) == {"rows": _rows(6)}
    assert run.trigger is RunTrigger.SCHEDULE
