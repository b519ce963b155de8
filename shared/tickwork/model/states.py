"""What state a job or run is in, and why: job states, run statuses, skip and defer reasons, what triggered a
run, and how an attempt ended."""

from __future__ import annotations

from enum import StrEnum


class JobState(StrEnum):
    ACTIVE = "ACTIVE"
    PAUSED = "PAUSED"
    CANCELLED = "CANCELLED"
    COMPLETED = "COMPLETED"
    # Its circuit breaker is open (docs/policies.md): occurrences are recorded SKIPPED `circuit_open` until the
    # cooldown's probe run succeeds or a resume closes it.
    SUSPENDED = "SUSPENDED"


class RunStatus(StrEnum):
    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    RETRYING = "RETRYING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    SKIPPED = "SKIPPED"

    @property
    def terminal(self) -> bool:
        return self in (RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.SKIPPED)


class SkipReason(StrEnum):
    PAUSED = "paused"
    CANCELLED = "cancelled"
    MISFIRED = "misfired"
    OVERLAP = "overlap"
    JOB_DELETED = "job_deleted"
    CIRCUIT_OPEN = "circuit_open"  # its job's circuit breaker is open (SUSPENDED)
    # One of its job's calendars, or a freeze, blocked it (docs/operations.md); the run's `blocked_by` names which.
    CALENDAR = "calendar"
    FREEZE = "freeze"
    # A workflow step that did not run (docs/workflows.md): its trigger rule cannot hold because an upstream
    # step failed, or because upstream steps were skipped; its rule waits for a failure that did not come
    # (one_failed, all_failed); or its condition was false.
    UPSTREAM_FAILED = "upstream_failed"
    UPSTREAM_SKIPPED = "upstream_skipped"
    RULE_NOT_MET = "rule_not_met"
    CONDITION_FALSE = "condition_false"
    # A compensation not started: one before it FAILED, and its workflow's compensation halts on error.
    COMPENSATION_HALTED = "compensation_halted"


class DeferReason(StrEnum):
    """Why a run was held back without consuming an attempt (docs/fairness.md): its tenant's rate quota (at
    dispatch) or concurrency quota, its concurrency key's limit or its rate limit (at the executor)."""

    TENANT_RATE = "tenant_rate"
    TENANT_CONCURRENCY = "tenant_concurrency"
    CONCURRENCY_KEY = "concurrency_key"
    RATE_LIMIT = "rate_limit"
    # Overlap (docs/policies.md): the one run waiting for the job's running run (BUFFER_ONE), or a run waiting
    # for the run it asked to stop to give the running slot back (CANCEL_OTHER).
    OVERLAP_BUFFER = "overlap_buffer"
    OVERLAP_CANCEL = "overlap_cancel"
    # Ordering keys (docs/fairness.md): an earlier run of the key has its turn, or the key is blocked by a run of
    # it that FAILED (until that run is retried, redriven or skipped).
    ORDERING_KEY = "ordering_key"
    ORDERING_BLOCKED = "ordering_blocked"
    # Blocked at its time and run at the first allowed instant (`on_blocked: DEFER`, docs/operations.md).
    CALENDAR = "calendar"
    FREEZE = "freeze"


class RunTrigger(StrEnum):
    SCHEDULE = "schedule"
    MANUAL = "manual"
    # A past occurrence created by POST /v1/jobs/{id}/backfill: its id is the occurrence's, as a scheduled run's.
    BACKFILL = "backfill"


class AttemptOutcome(StrEnum):
    """How one attempt of a run ended (Run.attempt_history)."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"  # no attempts left, or a permanent error
    RETRYING = "retrying"  # failed; another attempt follows after its backoff
    TIMED_OUT = "timed_out"  # the handler outlived its timeout (retried, or failed, as the run's status says)
    DEFERRED = "deferred"  # a limit held it back before its handler; the attempt was not consumed
    YIELDED = "yielded"  # its handler yielded (docs/durable-runs.md): it goes on in a fresh invocation, same attempt
    CANCELLED = "cancelled"  # asked to stop (its workflow run was cancelled, or overlap CANCEL_OTHER)
