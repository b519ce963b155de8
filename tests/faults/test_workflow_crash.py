"""Workflows under crashes: whatever dies at a workflow's crash points (or a tick's, or an executor's), every
workflow run ends, every step runs to completion once, and no step's run is made twice; recovery needs no event
but the tick's (its reconciliation of a stalled workflow run).

The same world as test_crash_points (SQS on the fake clock, the template's settings), with workflows: a diamond
that fans in with results passed, a recurring chain with a step that fails its first attempt, and a fan-out
whose alert step runs only on failure (it never fails here, so the alert is skipped `rule_not_met`).
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from tickwork.control.api_bodies import WorkflowSpec
from tickwork.faults import WORKFLOW_CRASH_POINTS, CrashPoint
from tickwork.model.ids import step_run_id_for
from tickwork.model.states import RunStatus
from tickwork.model.workflow.advance import WorkflowRunStatus
from tickwork.model.workflow.definition import Workflow

from tests.faults import jobtypes
from tests.faults.world import ACTIVE, RECOVERY_BOUND, World
from tests.harness import START, TENANT, Pipeline

KILLS = 3


def _create(pipeline: Pipeline, steps: list[dict], schedule: dict) -> Workflow:
    body = {"name": "faulty", "schedule": schedule, "steps": steps}
    return pipeline.services.workflows.create(TENANT, WorkflowSpec.model_validate(body))


def _mix(pipeline: Pipeline) -> list[Workflow]:
    echo = {"type": "fault-echo"}
    return [
        _create(
            pipeline,
            [
                {"id": "a", **echo},
                {"id": "b", "depends_on": ["a"], **echo},
                {"id": "c", "depends_on": ["a"], **echo},
                {
                    "id": "d",
                    "depends_on": ["b", "c"],
                    "type": "fault-echo",
                    "payload": {"b": {"$from": "steps.b.result"}},
                },
            ],
            {"at": START + timedelta(seconds=90)},
        ),
        _create(
            pipeline,
            [
                {"id": "first", **echo},
                {"id": "flaky", "depends_on": ["first"], "type": "fault-flaky", "retry": {"max_attempts": 5}},
                {"id": "last", "depends_on": ["flaky"], **echo},
            ],
            {"cron": "* * * * *", "end_at": START + timedelta(minutes=3)},
        ),
        _create(
            pipeline,
            [
                {"id": "root", **echo},
                *({"id": f"leg{i}", "depends_on": ["root"], **echo} for i in range(3)),
                {"id": "alert", "depends_on": ["leg0", "leg1", "leg2"], "trigger_rule": "one_failed", **echo},
            ],
            {"at": START + timedelta(seconds=130)},
        ),
    ]


def _workflow_runs(pipeline: Pipeline, workflows: list[Workflow]) -> list:
    return [run for w in workflows for run in pipeline.services.workflows.runs(TENANT, w.id, limit=100).items]


def _settled(pipeline: Pipeline, workflows: list[Workflow]) -> bool:
    runs = _workflow_runs(pipeline, workflows)
    return len(runs) == 5 and all(run.status is not WorkflowRunStatus.RUNNING for run in runs)


@pytest.mark.parametrize(
    "point",
    [
        *WORKFLOW_CRASH_POINTS,
        CrashPoint.TICK_AFTER_RUN_PUT,
        CrashPoint.EXECUTOR_AFTER_RESULT_WRITE,
        CrashPoint.EXECUTOR_BEFORE_FINISH,
    ],
    ids=lambda p: p.value,
)
def test_a_process_dying_at_a_crash_point_leaves_every_workflow_run_ended_and_each_step_run_once(
    faulty_pipeline, point
):
    world = World(faulty_pipeline)
    workflows = _mix(faulty_pipeline)
    faulty_pipeline.crashes.arm(point, times=KILLS)
    world.run_for(ACTIVE)
    faulty_pipeline.crashes.disarm()
    assert faulty_pipeline.crashes.kills >= 1, "the mix never reached the crash point"
    end = faulty_pipeline.clock.now() + RECOVERY_BOUND
    while faulty_pipeline.clock.now() < end and not _settled(faulty_pipeline, workflows):
        world.run_for(timedelta(minutes=1))

    runs = _workflow_runs(faulty_pipeline, workflows)
    assert len(runs) == 5  # a diamond, three minutes of the chain, a fan-out
    for run in runs:
        assert run.status is WorkflowRunStatus.SUCCEEDED, (run.id, run.status, run.steps)
        for sid, step in run.steps.items():
            if sid == "alert":
                assert (step.status, step.skip_reason.value if step.skip_reason else None) == (
                    "SKIPPED",
                    "rule_not_met",
                )
                continue
            assert step.status is RunStatus.SUCCEEDED, (run.id, sid, step)
            run_id = step_run_id_for(run.id, sid)
            completions = jobtypes.COMPLETIONS.get(run_id, [])
            # Ran to completion, and never twice in one attempt (a takeover after a death may complete again
            # in a later attempt: its result write is the first one's, If-None-Match).
            assert completions, (run_id, step)
            assert len(completions) == len(set(completions)), (run_id, completions)
    # No step's run made twice, none made for a step that was skipped: 4 + 3 x 3 + 4 step runs.
    assert faulty_pipeline.count_items(kind="RUN") == 4 + 9 + 4
    assert faulty_pipeline.count_items(kind="WORKFLOW_RUN") == 5
    assert {w.id: faulty_pipeline.services.workflows.get(TENANT, w.id).state.value for w in workflows} == {
        w.id: "COMPLETED" for w in workflows
    }
