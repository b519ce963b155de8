"""A run's start, "last run" and wall time where they meet durable runs' segments, limits, cancels and a retry by
hand (moto, fake clock, `long-export`: 10 s a page, two pages a segment on a 60 s Lambda): a run whose execution
has started keeps its start through a deferral or a skip between its segments, and stays its job's last run."""

from __future__ import annotations

from datetime import timedelta

from tickwork.model.run import Run
from tickwork.model.states import AttemptOutcome, RunStatus, SkipReason
from tickwork.store.limits import semaphore_sort

from tests.harness import TENANT, Pipeline
from tests.integration.test_promises_round4_slots import (
    _drain,
    _succeeded_whole,
    _yielded_once,
    deferred_on_a_full_key,
)
from tests.integration.test_yields_pipeline import LAMBDA_SECONDS, _due


def _last_run(pipeline: Pipeline, job_id: str) -> Run | None:
    page = pipeline.services.listings.list_runs(TENANT, job_id, limit=1, started=True)
    return page.items[0] if page.items else None


def _wall_ms(run: Run) -> int:
    assert run.finished_at is not None
    assert run.started_at is not None
    return int((run.finished_at - run.started_at).total_seconds() * 1000)


def test_a_yielded_run_deferred_between_its_segments_keeps_its_start_and_stays_the_last_run(pipeline):
    key = {"key": "exports", "limit": 1}
    job, first = _yielded_once(pipeline, overlap="SKIP", concurrency=key)
    limits = deferred_on_a_full_key(pipeline, first)
    waiting = pipeline.run(first.id)
    assert (waiting.started_at, waiting.lateness_ms) == (first.started_at, first.lateness_ms)
    last = _last_run(pipeline, job.id)
    assert last is not None
    assert last.id == first.id

    limits.release(TENANT, semaphore_sort("exports"), holder="another executor")
    _drain(pipeline)
    _succeeded_whole(pipeline, first)
    done = pipeline.run(first.id)
    assert done.started_at == first.started_at
    assert done.wall_ms == _wall_ms(done)  # from its first segment's start, the wait on the key included


def test_a_yielded_run_cancelled_between_its_segments_keeps_its_start_and_stays_the_last_run(pipeline):
    job, first = _yielded_once(pipeline, overlap="SKIP")
    pipeline.clock.advance(30)
    pipeline.services.run_cancel.cancel_run(TENANT, first.id)  # QUEUED, between its segments
    _drain(pipeline)
    run = pipeline.run(first.id)
    assert (run.status, run.skip_reason) == (RunStatus.SKIPPED, SkipReason.CANCELLED)
    assert run.started_at == first.started_at
    assert run.wall_ms == _wall_ms(run)
    last = _last_run(pipeline, job.id)
    assert last is not None
    assert last.id == first.id


def test_a_durable_run_retried_after_failing_adds_both_executions_handler_time_and_not_its_days_in_the_dlq(pipeline):
    """Past its max_run_seconds after yielding, FAILED; retried by hand two days later from its checkpoint (with
    fewer pages to go), it finishes: its handler time is every segment of both executions, its wall time each execution's, added."""
    job = _due(pipeline, max_run_seconds=50, retry={"max_attempts": 3})
    pipeline.drain_one_by_one(LAMBDA_SECONDS)
    (failed,) = pipeline.runs_of(job.id)
    assert (failed.status, failed.segments >= 1) == (RunStatus.FAILED, True)
    assert failed.handler_ms is not None
    assert failed.wall_ms == _wall_ms(failed)

    pipeline.clock.advance(timedelta(days=2).total_seconds())
    pipeline.services.redrive.retry_run(TENANT, failed.id, payload={"pages": 6})  # ends within its max_run_seconds
    last = _last_run(pipeline, job.id)
    assert last is not None
    assert (last.id, last.status, last.started_at) == (failed.id, RunStatus.QUEUED, None)
    pipeline.drain_one_by_one(LAMBDA_SECONDS)
    run = pipeline.run(failed.id)
    assert (run.status, run.requeues) == (RunStatus.SUCCEEDED, 1)
    second = [r for r in run.attempt_history if r.started_at >= (run.enqueued_at or run.scheduled_for)]
    assert second
    assert second[-1].outcome is AttemptOutcome.SUCCEEDED
    second_ms = sum(int((r.ended_at - r.started_at).total_seconds() * 1000) for r in second if r.ended_at)
    assert run.handler_ms == failed.handler_ms + second_ms
    assert run.wall_ms == failed.wall_ms + _wall_ms(run)
    assert run.wall_ms < timedelta(days=1).total_seconds() * 1000
