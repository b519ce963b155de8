"""A workflow run as stored: one occurrence of a workflow, its steps' states, and the definition it runs.

The run keeps a snapshot of its workflow's steps and defaults (name, priority, retry, timeout), so that a PATCH
of the workflow never changes a run in progress, and the executor learns what a step runs from the run alone.
Its `steps` map records each step's state as the run's progress decided it (tickwork.model.workflow.advance): PENDING,
QUEUED once its run exists, then the run's terminal status, or SKIPPED with the reason.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from tickwork.model.ids import compensation_run_id_for, step_run_id_for
from tickwork.model.policies import JobName, Priority, RetryPolicy, TimeoutSeconds
from tickwork.model.schedule import UtcDatetime
from tickwork.model.states import RunTrigger, SkipReason
from tickwork.model.workflow.advance import StepState, StepStatus, WorkflowRunStatus
from tickwork.model.workflow.definition import CompensationPolicy, StepSettings, Workflow, WorkflowStep


class WorkflowSnapshot(BaseModel, StepSettings):
    """The definition a workflow run runs, as it was when the run began."""

    model_config = ConfigDict(extra="forbid")

    name: JobName
    steps: list[WorkflowStep]
    priority: Priority = 5
    retry: RetryPolicy = Field(default_factory=RetryPolicy)
    timeout_seconds: TimeoutSeconds = 300
    compensation: CompensationPolicy = Field(default_factory=CompensationPolicy)

    @classmethod
    def of(cls, workflow: Workflow) -> WorkflowSnapshot:
        return cls(**{name: getattr(workflow, name) for name in cls.model_fields})


class StepEntry(BaseModel):
    """One step in a workflow run's map."""

    model_config = ConfigDict(extra="forbid")

    status: StepStatus = StepStatus.PENDING
    skip_reason: SkipReason | None = None
    run_id: str | None = None  # set once the step has a run (QUEUED, and what it ends as)
    # FAILED when its run was created: its payload could not be made from upstream results (too large), or its
    # condition or a `$from` could not be evaluated over them. A retry leaves it FAILED (the same results give
    # the same outcome).
    unmade: bool = False
    # Set by a retry: the `requeues` its run will have once re-queued. A run found FAILED with fewer was never
    # re-queued (the retry stopped between its two writes): the reconciliation re-queues it.
    requeues: int | None = None
    # When its run ended (a compensation runs in reverse order of these).
    finished_at: UtcDatetime | None = None

    @property
    def state(self) -> StepState:
        return StepState(self.status, self.skip_reason)


class WorkflowRunIdentity(BaseModel):
    """What names a workflow run and says where it is: the stored record's first fields, and the API's view's
    (tickwork.control.api_bodies.WorkflowRun)."""

    id: str
    workflow_id: str
    tenant: str
    scheduled_for: UtcDatetime
    trigger: RunTrigger = RunTrigger.SCHEDULE
    status: WorkflowRunStatus


class WorkflowRunRecord(WorkflowRunIdentity):
    """A stored workflow run (pk=JOB#<workflow id>, sk=RUN#<ms>[#m])."""

    model_config = ConfigDict(extra="forbid")

    priority: Priority = 5
    skip_reason: SkipReason | None = None
    # A capped misfire record stands for this many occurrences, up to skipped_until (as a job's runs).
    skipped_count: int | None = None
    skipped_until: UtcDatetime | None = None
    # The calendar or freeze that blocked its occurrence (skipped, or deferred to its end: scheduled_for).
    blocked_by: str | None = None
    started_at: UtcDatetime | None = None
    finished_at: UtcDatetime | None = None
    steps: dict[str, StepEntry] = Field(default_factory=dict)
    # None for an occurrence recorded SKIPPED (nothing of it ran).
    definition: WorkflowSnapshot | None = None
    # The workflow's last occurrence, as its claim saw it: when this run ends, the workflow completes (if a
    # PATCH has not given it another occurrence since).
    last_occurrence: bool = False
    # COMPENSATING and after: how it would have ended without compensation (FAILED, or CANCELLED when a cancel
    # asked for it), and each compensation's state, by the id of the step it undoes
    # (tickwork.model.workflow.compensation). The map exists from the write that made the run COMPENSATING.
    compensating_for: WorkflowRunStatus | None = None
    compensations: dict[str, StepEntry] | None = None

    @property
    def states(self) -> dict[str, StepState]:
        return {sid: entry.state for sid, entry in self.steps.items()}

    @property
    def compensation_states(self) -> dict[str, StepState]:
        return {sid: entry.state for sid, entry in (self.compensations or {}).items()}

    @property
    def finished_at_of_steps(self) -> dict[str, datetime | None]:
        return {sid: entry.finished_at for sid, entry in self.steps.items()}

    def snapshot(self) -> WorkflowSnapshot:
        if self.definition is None:
            raise ValueError(f"workflow run {self.id} has no definition: it was recorded {self.status.value}")
        return self.definition

    def step_run_id(self, step_id: str) -> str:
        return step_run_id_for(self.id, step_id)

    def compensation_run_id(self, step_id: str) -> str:
        return compensation_run_id_for(self.id, step_id)
