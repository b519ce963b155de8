"""Whether a FAILED run's own retry re-queues it (tickwork.model.retryable): each reason, from the run and its
workflow run alone."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from tickwork.model.ids import compensation_run_id_for, step_run_id_for
from tickwork.model.retryable import RETRYABLE, NotRetried, NotRetryableReason, retry_verdict
from tickwork.model.run import Run
from tickwork.model.states import RunStatus
from tickwork.model.workflow.advance import WorkflowRunStatus
from tickwork.model.workflow.runs import StepEntry, WorkflowRunRecord

AT = datetime(2026, 11, 21, 12, tzinfo=UTC)
WORKFLOW = "w" + "1" * 25
WORKFLOW_RUN = f"{WORKFLOW}.1795262400000"


def run(status: RunStatus = RunStatus.FAILED, **fields) -> Run:
    fields.setdefault("id", "j" + "1" * 25 + ".1795262400000")
    fields.setdefault("job_id", "j" + "1" * 25)
    return Run(tenant="acme", scheduled_for=AT, status=status, **fields)


def step_run(step: str = "b", *, compensation: bool = False) -> Run:
    run_id = (compensation_run_id_for if compensation else step_run_id_for)(WORKFLOW_RUN, step)
    return run(id=run_id, job_id=WORKFLOW, workflow_run_id=WORKFLOW_RUN, step_id=step)


def workflow_run(status: WorkflowRunStatus, **steps: StepEntry) -> WorkflowRunRecord:
    return WorkflowRunRecord(id=WORKFLOW_RUN, workflow_id=WORKFLOW, tenant="acme", scheduled_for=AT, status=status, steps=steps)  # fmt: skip


def test_a_failed_job_run_is_retryable():
    assert retry_verdict(run()) == RETRYABLE


@pytest.mark.parametrize("status", [RunStatus.SUCCEEDED, RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.SKIPPED])
def test_a_run_not_failed_is_not(status):
    verdict = retry_verdict(run(status))
    assert (verdict.reason, verdict.message) == (NotRetryableReason.NOT_FAILED, f"only FAILED runs can be retried; this one is {status.value}")  # fmt: skip


def test_a_compensation_s_run_never_is():
    verdict = retry_verdict(step_run("a", compensation=True), workflow_run(WorkflowRunStatus.COMPENSATION_FAILED))
    assert verdict.reason is NotRetryableReason.COMPENSATION


def test_a_step_s_run_of_a_failed_workflow_run_is_retried_with_it():
    verdict = retry_verdict(step_run(), workflow_run(WorkflowRunStatus.FAILED, b=StepEntry(status="FAILED")))
    assert verdict.reason is NotRetryableReason.WORKFLOW_STEP
    assert verdict.message.endswith(f"retry {WORKFLOW_RUN}")


def test_a_step_whose_payload_could_not_be_made_is_not_retried_by_its_workflow_run_either():
    record = workflow_run(WorkflowRunStatus.FAILED, b=StepEntry(status="FAILED", unmade=True))
    assert retry_verdict(step_run(), record).reason is NotRetryableReason.PAYLOAD_NOT_MADE


@pytest.mark.parametrize(
    ("status", "says"),
    [
        (WorkflowRunStatus.COMPENSATED, "ended COMPENSATED"),
        (WorkflowRunStatus.CANCELLED, "ended CANCELLED"),
        (WorkflowRunStatus.COMPENSATING, "is COMPENSATING"),
        (None, "is gone"),
    ],
)
def test_a_step_s_run_whose_workflow_run_is_not_failed_cannot_be_retried(status, says):
    verdict = retry_verdict(step_run(), workflow_run(status) if status is not None else None)
    assert verdict.reason is NotRetryableReason.WORKFLOW_RUN_NOT_FAILED
    assert says in verdict.message
    assert NotRetried.of("r", verdict).reason is NotRetryableReason.WORKFLOW_RUN_NOT_FAILED
