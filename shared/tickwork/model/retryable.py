"""Whether a FAILED run can be re-queued by its own retry (POST /v1/runs/{id}/retry, a DLQ redrive), and if not,
why: what the DLQ shows beside each entry, what a refused retry answers, and what a redrive says of each run it
left. One decision for all three.

A workflow step's run is retried with its workflow run (which re-queues it and goes on past it), and only while
that is FAILED; a compensation's run is never retried (its workflow run ended COMPENSATION_FAILED: what it left is
undone by hand). An entry no retry can take out of the DLQ is dismissed (POST /v1/dlq/{run_id}/dismiss).
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from tickwork.model.run import Run
from tickwork.model.states import RunStatus
from tickwork.model.workflow.advance import WorkflowRunStatus
from tickwork.model.workflow.runs import WorkflowRunRecord


class NotRetryableReason(StrEnum):
    NOT_FOUND = "not_found"  # unknown, or another tenant's
    NOT_FAILED = "not_failed"  # only a FAILED run is re-queued
    COMPENSATION = "compensation"  # a compensation's run
    WORKFLOW_STEP = "workflow_step"  # a step's run of a FAILED workflow run: retry the workflow run
    WORKFLOW_RUN_NOT_FAILED = "workflow_run_not_failed"  # a step's run whose workflow run is not FAILED
    PAYLOAD_NOT_MADE = "payload_not_made"  # a step whose payload could not be made: its workflow's retry leaves it
    DISMISSED = "dismissed"  # a redrive's: a run dismissed from the DLQ is retried, not redriven


class RetryVerdict(BaseModel):
    """Whether the run's own retry (or a redrive) re-queues it; if not, why, as a code and as text."""

    model_config = ConfigDict(extra="forbid")

    retryable: bool
    reason: NotRetryableReason | None = Field(default=None, description="Why not (null when retryable).")
    message: str | None = Field(default=None, description="Why not, for people, with what to do instead.")


class NotRetried(BaseModel):
    """A run a redrive named, or found in the DLQ, and did not re-queue: why."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    reason: NotRetryableReason
    message: str

    @classmethod
    def of(cls, run_id: str, verdict: RetryVerdict) -> NotRetried:
        reason = verdict.reason or NotRetryableReason.NOT_FAILED  # a retryable verdict is never one's
        return cls(run_id=run_id, reason=reason, message=verdict.message or reason.value)


RETRYABLE = RetryVerdict(retryable=True)


def refused(reason: NotRetryableReason, message: str) -> RetryVerdict:
    return RetryVerdict(retryable=False, reason=reason, message=message)


def not_found(run_id: str) -> RetryVerdict:
    return refused(NotRetryableReason.NOT_FOUND, f"run {run_id} not found")


def retry_verdict(run: Run, workflow_run: WorkflowRunRecord | None = None) -> RetryVerdict:
    """Whether `run` is re-queued by its own retry. `workflow_run`: a step's run's workflow run, as stored (None
    if it is gone, expired after it ended)."""
    if run.status is not RunStatus.FAILED:
        return refused(
            NotRetryableReason.NOT_FAILED, f"only FAILED runs can be retried; this one is {run.status.value}"
        )
    if run.is_compensation:
        return refused(
            NotRetryableReason.COMPENSATION,
            "a compensation's run is not retried: its workflow run ended COMPENSATION_FAILED; undo what it left by "
            "hand (its error says what failed), then dismiss it",
        )
    if run.workflow_run_id is None:
        return RETRYABLE
    if workflow_run is None or workflow_run.status is not WorkflowRunStatus.FAILED:
        if workflow_run is None:
            where = "is gone"
        elif workflow_run.status.terminal:
            where = f"ended {workflow_run.status.value}"
        else:
            where = f"is {workflow_run.status.value}"
        return refused(
            NotRetryableReason.WORKFLOW_RUN_NOT_FAILED,
            f"a workflow step's run is retried with its workflow run, and {run.workflow_run_id} {where}: nothing "
            "retries this run; dismiss it",
        )
    entry = workflow_run.steps.get(run.step_id or "")
    if entry is not None and entry.unmade:
        return refused(
            NotRetryableReason.PAYLOAD_NOT_MADE,
            "its payload could not be made from its upstream steps' results (too large, or an expression that "
            "failed), which a retry of its workflow run would give again; dismiss it",
        )
    return refused(
        NotRetryableReason.WORKFLOW_STEP,
        f"a workflow step's run is retried with its workflow run: retry {run.workflow_run_id}",
    )
