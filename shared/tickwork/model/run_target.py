"""What a run runs, and under which rules: built from its job, or from its workflow step (the workflow run's
snapshot). The executor and RunOutcomes depend on this small value, not on a Job, so a step is never dressed
up as a job."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tickwork.model.deadlines import Deadline
from tickwork.model.job import Job
from tickwork.model.messages import JobRunSpec, RunSettings, run_settings
from tickwork.model.policies import DEFAULT_MAX_RUN_SECONDS, ConcurrencyLimit, OverlapPolicy, RateLimit, RetryPolicy
from tickwork.model.run import Run
from tickwork.model.states import JobState, RunTrigger, SkipReason
from tickwork.model.variants import run_variant
from tickwork.model.workflow.advance import WorkflowRunStatus
from tickwork.model.workflow.definition import StepCompensation, WorkflowStep
from tickwork.model.workflow.runs import WorkflowRunRecord


@dataclass(frozen=True)
class RunTarget:
    owner_id: str  # the job's id, or the workflow's
    tenant: str
    type: str
    payload: dict[str, Any]
    retry: RetryPolicy
    timeout_seconds: int
    max_run_seconds: int = DEFAULT_MAX_RUN_SECONDS  # over all its segments (a workflow step's: the default)
    overlap: OverlapPolicy = OverlapPolicy.ALLOW
    # Why the run must not start now (it is recorded SKIPPED with this): its job is cancelled (any run), paused
    # or SUSPENDED (a scheduled run not yet under way), or its workflow run was cancelled.
    held_back: SkipReason | None = None
    # Limits shared with other runs of the tenant (tickwork.executor.limits); None: not limited.
    concurrency: ConcurrencyLimit | None = None
    rate_limit: RateLimit | None = None
    # The run events its job publishes (tickwork.model.run_events); None: the default. A step's: the default.
    notify: tuple[str, ...] | None = None
    deadline: Deadline | None = None  # its job's, or its step's
    tags: Mapping[str, str] = field(default_factory=dict)  # its job's (a freeze's selector); a step's: none
    # The run is its job's last occurrence: its settling completes the job (tickwork.progress.job_completion).
    last_occurrence: bool = False
    # ...and the job's only run of an occurrence (JobRunSpec.only_occurrence): no other run to wait for.
    only_occurrence: bool = False
    # The job as the executor read it (its circuit breaker's state); None for a workflow step, or a run by its
    # message's copy of the job (tickwork.model.run_spec: such a job has no breaker).
    job: Job | None = field(default=None, compare=False)
    # The variant its run runs and records (tickwork.model.variants.run_variant): `baseline` for the job's own,
    # None when its job (or step) has no variants and its run recorded none.
    variant: str | None = None

    @classmethod
    def of_job(cls, job: Job, run: Run) -> RunTarget:
        held_back = None
        # A pause or an open breaker holds back a scheduled run's new start, not a run under way: one between its
        # segments runs on to its end, as a running one does.
        new_start = run.trigger is RunTrigger.SCHEDULE and run.segments == 0
        if job.state is JobState.CANCELLED:
            # It runs nothing more: a trigger's run (a debounce window's, open when it was cancelled, included)
            # and a backfill's too, recorded SKIPPED when it would start.
            held_back = SkipReason.CANCELLED
        elif new_start and job.state is JobState.PAUSED:
            held_back = SkipReason.PAUSED  # a trigger's or a backfill's was asked for: it runs while paused
        elif new_start and job.state is JobState.SUSPENDED:
            # Claimed before its breaker opened: only the probe runs while it is open.
            probe = job.breaker.probe_at if job.breaker is not None else None
            held_back = None if run.occurrence_at == probe else SkipReason.CIRCUIT_OPEN
        return cls._of_settings(
            run,
            job,
            payload=run.payload if run.payload is not None else job.payload,  # a trigger's own (debounce)
            overlap=job.overlap,
            held_back=held_back,
            last_occurrence=job.state is JobState.ACTIVE and job.next_occurrence_after(run.occurrence_at) is None,
            job=job,
        )

    @classmethod
    def of_spec(cls, spec: JobRunSpec, run: Run) -> RunTarget:
        """A job's run by its message's copy of the job (tickwork.model.run_spec.trusted_spec): the job was ACTIVE
        with overlap ALLOW when claimed, and nobody changed it since."""
        return cls._of_settings(run, spec, last_occurrence=spec.last_occurrence, only_occurrence=spec.only_occurrence)

    @classmethod
    def _of_settings(cls, run: Run, settings: Job | RunSettings, **rest: Any) -> RunTarget:
        """A job's run: what it takes from its job (tickwork.model.messages.RunSettings) as `settings` has it, its
        type and payload its variant's."""
        taken = run_settings(settings)
        taken["notify"] = None if taken["notify"] is None else tuple(taken["notify"])
        variants = taken.pop("variants")
        payload = rest.pop("payload", taken.pop("payload"))
        kind, payload, variant = run_variant(run.id, run.variant, taken.pop("type"), payload, variants)
        return cls(owner_id=run.job_id, tenant=run.tenant, type=kind, payload=payload, variant=variant, **taken, **rest)

    @classmethod
    def of_step(cls, record: WorkflowRunRecord, run: Run) -> RunTarget:
        """A step's run: type, retry and timeout from the run's snapshot (the step's own, else the workflow's),
        the payload as resolved when the run was created. Overlap is ALLOW: a step runs once per workflow run.
        A paused workflow lets its runs in progress finish; a cancelled workflow run starts nothing more, nor
        does one withdrawn (SKIPPED) because its workflow was paused or cancelled while it was being claimed."""
        assert run.step_id is not None
        if run.is_compensation:
            return cls.of_compensation(record, run)
        snapshot = record.snapshot()
        step = snapshot.step(run.step_id)
        return cls._of_action(
            record,
            run,
            step,
            retry=snapshot.step_retry(step.id),
            timeout_seconds=snapshot.step_timeout_seconds(step.id),
            held_back=_step_held_back(record),
            concurrency=step.concurrency,
            rate_limit=step.rate_limit,
            deadline=step.deadline,
        )

    @classmethod
    def of_compensation(cls, record: WorkflowRunRecord, run: Run) -> RunTarget:
        """A step's compensation's run: its `compensate`'s type, retry and timeout (else the step's), the payload as
        resolved when the run was created. Never held back: it is what a failure or a cancel asked for."""
        assert run.step_id is not None
        snapshot = record.snapshot()
        compensate = snapshot.step(run.step_id).compensate
        assert compensate is not None, f"step {run.step_id!r} has no compensate"
        retry = snapshot.compensation_retry(run.step_id)
        timeout_seconds = snapshot.compensation_timeout_seconds(run.step_id)
        return cls._of_action(record, run, compensate, retry=retry, timeout_seconds=timeout_seconds)

    @classmethod
    def _of_action(
        cls, record: WorkflowRunRecord, run: Run, action: WorkflowStep | StepCompensation, **rest: Any
    ) -> RunTarget:
        """A step's or a compensation's run: `action`'s type, and the payload as resolved when the run was created
        (else `action`'s own)."""
        payload = run.payload if run.payload is not None else action.payload
        variants = action.variants if isinstance(action, WorkflowStep) else []
        kind, payload, variant = run_variant(run.id, run.variant, action.type, payload, variants)
        return cls(
            owner_id=record.workflow_id, tenant=record.tenant, type=kind, payload=payload, variant=variant, **rest
        )


def _step_held_back(record: WorkflowRunRecord) -> SkipReason | None:
    if WorkflowRunStatus.CANCELLED in (record.status, record.compensating_for):
        return SkipReason.CANCELLED
    if record.status is WorkflowRunStatus.SKIPPED:
        return record.skip_reason or SkipReason.CANCELLED
    return None
