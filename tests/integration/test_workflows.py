"""Workflows through the real pipeline against moto: create -> due index -> tick -> workflow run -> step runs on
SQS -> executor -> step_settled -> downstream steps. Time is the fake clock's; nothing sleeps."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from tickwork.api_models import WorkflowRun, WorkflowSpec
from tickwork.models import RunStatus, run_id_for, step_run_id_for
from tickwork.workflow.advance import WorkflowRunStatus
from tickwork.workflow.definition import Workflow

from tests.harness import START, TENANT, Pipeline
from tests.testing_jobtypes import EXECUTIONS

FAR = timedelta(seconds=300)  # beyond the 120 s horizon: a created workflow waits for a tick
ONCE = {"max_attempts": 1}


def create(pipeline: Pipeline, steps: list[dict[str, Any]], *, at: datetime = START + FAR, **spec: Any) -> Workflow:
    body = {"name": "wf", "schedule": {"at": at}, "steps": steps, **spec}
    return pipeline.services.workflows.create(TENANT, WorkflowSpec.model_validate(body))


def occur(pipeline: Pipeline, workflow: Workflow) -> str:
    """Move the clock to the workflow's next occurrence and tick: its workflow run opens. Returns its id."""
    assert workflow.next_run_at is not None
    pipeline.clock.set(workflow.next_run_at)
    pipeline.tick()
    return run_id_for(workflow.id, workflow.next_run_at)


def view(pipeline: Pipeline, workflow_run_id: str) -> WorkflowRun:
    return pipeline.services.workflows.get_run(TENANT, workflow_run_id)


def statuses(run: WorkflowRun) -> dict[str, str]:
    """Each step's status, with the skip reason after a colon."""
    return {
        sid: f"{step.status}:{step.skip_reason.value}" if step.skip_reason else str(step.status)
        for sid, step in run.steps.items()
    }


def result_of(pipeline: Pipeline, run_id: str) -> Any:
    return pipeline.services.queries.get_result(TENANT, run_id)


def step(sid: str, *depends_on: str, **fields: Any) -> dict[str, Any]:
    fields.setdefault("type", "counting")
    return {"id": sid, "depends_on": list(depends_on), **fields}


FAILING = {"type": "echo", "payload": {"fail_attempts": 9}, "retry": ONCE}


# ---------------------------------------------------------------- the diamond


def test_a_diamond_runs_each_step_exactly_once_and_passes_results_downstream(pipeline):
    EXECUTIONS.clear()
    workflow = create(
        pipeline,
        [
            step("a", type="echo", payload={"rows": [1, 2, 3], "n": 3}),
            step("b", "a", payload={"rows": {"$from": "steps.a.result.rows"}}),
            step("c", "a", payload={"n": {"$from": "steps.a.result.n"}, "missing": {"$from": "steps.a.result.nope"}}),
            step("d", "b", "c", payload={"b": {"$from": "steps.b.result.rows"}, "c": {"$from": "steps.c.result.n"}}),
        ],
    )
    workflow_run_id = occur(pipeline, workflow)
    assert pipeline.drain() == 4

    run = view(pipeline, workflow_run_id)
    assert run.status is WorkflowRunStatus.SUCCEEDED
    assert statuses(run) == dict.fromkeys("abcd", "SUCCEEDED")
    ids = {sid: step_run_id_for(workflow_run_id, sid) for sid in "abcd"}
    assert {sid: s.run_id for sid, s in run.steps.items()} == ids
    assert all(s.attempts == 1 for s in run.steps.values())
    assert dict(EXECUTIONS) == {ids[s]: 1 for s in "bcd"}  # each counting step ran once
    assert pipeline.count_items(kind="RUN") == 4
    # Results passed down: a $from value the result lacks is null, not dropped.
    assert pipeline.run(ids["c"]).payload == {"n": 3, "missing": None}
    assert result_of(pipeline, ids["d"]) == {"run_id": ids["d"], "b": [1, 2, 3], "c": 3}
    # Step runs are ordinary runs: the store and the run queries read them, under their workflow's id.
    step_run = pipeline.services.queries.get_run(TENANT, ids["b"])
    assert (step_run.job_id, step_run.workflow_run_id, step_run.step_id) == (workflow.id, workflow_run_id, "b")
    assert step_run.status is RunStatus.SUCCEEDED
    assert step_run.payload == {"rows": [1, 2, 3]}
