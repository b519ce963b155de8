"""Graceful yields through the real pipeline (moto), with a short executor Lambda: a run longer than one invocation
yields, goes on in fresh invocations from its checkpoint, and finishes as a straight run would, on one attempt."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from tickwork.control.api_bodies import WorkflowSpec
from tickwork.model.job import Job
from tickwork.model.run import MAX_ATTEMPT_HISTORY, Run
from tickwork.model.states import AttemptOutcome, RunStatus

from tests.durable_jobtypes import STEP_CALLS
from tests.harness import TENANT, Pipeline

FAR = timedelta(seconds=300)
LAMBDA_SECONDS = 60  # 45 s for the handler (15 s kept for the outcome); should_yield() from 15 s


def _due(pipeline: Pipeline, **spec: Any) -> Job:
    job = pipeline.create_job(type="long-export", schedule={"at": pipeline.clock.now() + FAR}, **spec)
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.tick()
    return job


def _straight(pipeline: Pipeline) -> Any:
    job = _due(pipeline)
    assert pipeline.drain_one_by_one(900) == 1
    (run,) = pipeline.runs_of(job.id)
    assert (run.status, run.segments) == (RunStatus.SUCCEEDED, 0)
    return pipeline.services.results.read(run)


def _steps_of(run: Run) -> list[int]:
    return [count for (run_id, _), count in STEP_CALLS.items() if run_id == run.id]


def test_a_run_four_times_longer_than_its_lambda_yields_continues_and_finishes(pipeline):
    expected = _straight(pipeline)
    job = _due(pipeline)  # 12 pages of 10 s: 120 s of work, for 45 s of handler time an invocation
    invocations = pipeline.drain_one_by_one(LAMBDA_SECONDS)
    (run,) = pipeline.runs_of(job.id)
    assert (run.status, run.attempts, run.error) == (RunStatus.SUCCEEDED, 1, None)
    assert run.segments == invocations - 1 == 5  # two pages a segment: should_yield() is true after 15 s
    assert run.yielded_ms == 5 * 20_000
    assert pipeline.services.results.read(run) == expected
    assert _steps_of(run) == [1] * 12  # every step once
    outcomes = [record.outcome for record in run.attempt_history]
    assert outcomes == [AttemptOutcome.YIELDED] * 5 + [AttemptOutcome.SUCCEEDED]
    assert {record.attempt for record in run.attempt_history} == {1}
    assert run.progress is not None
    assert run.progress.fraction == 1.0


def test_a_handler_that_ignores_should_yield_but_checkpoints_is_yielded_by_the_executor(pipeline):
    expected = _straight(pipeline)
    job = _due(pipeline, payload={"cooperative": False})
    pipeline.drain_one_by_one(LAMBDA_SECONDS)
    (run,) = pipeline.runs_of(job.id)
    assert (run.status, run.attempts) == (RunStatus.SUCCEEDED, 1)
    assert run.segments >= 2
    assert pipeline.services.results.read(run) == expected
    assert _steps_of(run) == [1] * 12


def test_a_run_past_its_max_run_seconds_fails_without_retries(pipeline):
    job = _due(pipeline, max_run_seconds=50, retry={"max_attempts": 3})
    pipeline.drain_one_by_one(LAMBDA_SECONDS)
    (run,) = pipeline.runs_of(job.id)
    assert (run.status, run.attempts) == (RunStatus.FAILED, 1)
    assert run.error is not None
    assert run.error.type == "RunTimeout"
    assert run.segments >= 1


def test_a_workflow_step_yields_continues_and_its_workflow_run_goes_on(pipeline):
    body = {
        "name": "wf",
        "schedule": {"at": pipeline.clock.now() + FAR},
        "steps": [
            {"id": "export", "type": "long-export", "payload": {"pages": 6}},
            {"id": "after", "type": "echo", "depends_on": ["export"]},
        ],
    }
    workflows = pipeline.services.workflows
    workflow = workflows.create(TENANT, WorkflowSpec.model_validate(body))
    triggered = workflows.trigger(TENANT, workflow.id)
    pipeline.drain_one_by_one(LAMBDA_SECONDS)
    workflow_run = workflows.get_run(TENANT, triggered.id)
    assert workflow_run.status == "SUCCEEDED"
    export = workflow_run.steps["export"]
    assert export.progress is not None  # the DAG view shows it
    assert (export.progress.fraction, export.progress.message) == (1.0, "page 6 of 6")
    run_id = export.run_id
    assert run_id is not None
    step_run = pipeline.run(run_id)
    assert (step_run.status, step_run.attempts, step_run.segments) == (RunStatus.SUCCEEDED, 1, 2)
    assert _steps_of(step_run) == [1] * 6
    assert step_run.progress is not None
    assert step_run.progress.fraction == 1.0


def test_a_short_lambdas_margins_come_from_its_timeout_setting(mocked_aws):
    """EXECUTOR_TIMEOUT_SECONDS (template parameter ExecutorTimeoutSeconds) of 60: 6 s kept for the outcome, and
    should_yield() 12 s before that, from 42 s: five pages of 10 s a segment, where the 900 s Lambda's margins give
    two."""
    with Pipeline.create(EXECUTOR_TIMEOUT_SECONDS=str(LAMBDA_SECONDS)) as short:
        job = _due(short)
        invocations = short.drain_one_by_one(LAMBDA_SECONDS)
        (run,) = short.runs_of(job.id)
        assert (run.status, run.attempts, run.segments, invocations) == (RunStatus.SUCCEEDED, 1, 2, 3)
        assert run.yielded_ms == 2 * 50_000
        assert _steps_of(run) == [1] * 12


def test_a_run_of_many_segments_keeps_every_segment_in_its_history_and_its_whole_handler_time(pipeline):
    """22 segments: the last MAX_ATTEMPT_HISTORY records one by one, every earlier one counted in their summary
    (none dropped); its handler time is every segment's, its wall time from the first start to its end
    (tests/unit/test_runlogs_collector.py folds 500, within the history's stated size)."""
    job = _due(pipeline, payload={"pages": 44})  # two pages of 10 s a segment
    invocations = pipeline.drain_one_by_one(LAMBDA_SECONDS)
    (run,) = pipeline.runs_of(job.id)
    assert (run.status, run.segments, invocations) == (RunStatus.SUCCEEDED, 21, 22)
    assert len(run.attempt_history) == MAX_ATTEMPT_HISTORY
    earlier = run.earlier_attempts
    assert earlier is not None
    assert (earlier.records, earlier.outcomes) == (2, {"yielded": 2})
    assert earlier.records + len(run.attempt_history) == invocations
    assert run.handler_ms == 44 * 10_000  # every page's time, not the last segment's (duration_ms)
    assert (run.duration_ms or 0) < 60_000
    assert run.finished_at is not None
    assert run.started_at is not None
    assert run.wall_ms == int((run.finished_at - run.started_at).total_seconds() * 1000)
    assert run.wall_ms >= run.handler_ms
