"""A job: the fields a caller chooses (JobDefinition), and the stored job with its identity and lifecycle."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
)

from tickwork.model.blocking import CalendarIds, OnBlocked
from tickwork.model.deadlines import Deadline, longest_run_seconds
from tickwork.model.forecast_uses import JobForecast
from tickwork.model.jitter import check_jitter
from tickwork.model.policies import (
    DEFAULT_MAX_RUN_SECONDS,
    DEFAULT_MISFIRE_GRACE_SECONDS,
    Band,
    BreakerState,
    CatchupPolicy,
    CircuitBreaker,
    ConcurrencyLimit,
    Debounce,
    DispatchOrder,
    JitterSeconds,
    JobName,
    JobTypeName,
    MaxRunSeconds,
    MisfireGraceSeconds,
    OrderingKey,
    OverlapPolicy,
    Priority,
    RateLimit,
    RetryPolicy,
    StartPrecision,
    StoredTags,
    TimeoutSeconds,
)
from tickwork.model.run_event_kinds import Notify
from tickwork.model.schedule import Schedule, UtcDatetime
from tickwork.model.states import JobState
from tickwork.model.variants import VariantRollback, Variants


class JobDefinition(BaseModel):
    """The fields a caller chooses for a job, declared once: the stored Job and the create body (JobSpec, which
    takes stricter schedule instants and tags) both are one. Never used on its own."""

    model_config = ConfigDict(extra="forbid")

    name: JobName
    type: JobTypeName
    payload: dict[str, Any] = Field(default_factory=dict)
    schedule: Schedule
    priority: Priority = 5
    retry: RetryPolicy = Field(default_factory=RetryPolicy)
    timeout_seconds: TimeoutSeconds = 300
    max_run_seconds: MaxRunSeconds = Field(
        default=DEFAULT_MAX_RUN_SECONDS,
        description="The most handler time a run may take over all its segments (a handler that yields goes on in "
        "a fresh invocation: docs/durable-runs.md); each segment is bounded by timeout_seconds too.",
    )
    misfire_grace_seconds: MisfireGraceSeconds = DEFAULT_MISFIRE_GRACE_SECONDS
    overlap: OverlapPolicy = OverlapPolicy.ALLOW
    catchup: CatchupPolicy = CatchupPolicy.LATEST
    # Absent: no breaker, and a run's outcome writes nothing more for it.
    circuit_breaker: CircuitBreaker | None = None
    # Each occurrence runs this much later at most, by a deterministic offset (tickwork.model.jitter).
    jitter_seconds: JitterSeconds = 0
    start_precision: StartPrecision = StartPrecision.SECOND
    tags: StoredTags = Field(default_factory=dict)
    # Absent: no limit, and nothing is read or written for it when a run starts.
    concurrency: ConcurrencyLimit | None = None
    rate_limit: RateLimit | None = None
    # Its calendars and what becomes of an occurrence they (or a freeze) block (docs/operations.md).
    calendars: CalendarIds = Field(default_factory=list)
    on_blocked: OnBlocked = OnBlocked.SKIP
    # Absent: its runs start in no particular order (overlap BUFFER_ALL orders them by the job's id).
    ordering: OrderingKey | None = None
    # A trigger that gives no debounce of its own is debounced by this one; absent: triggers are not.
    debounce: Debounce | None = None
    # The run events it publishes (tickwork.model.run_events); absent: failures and dead letters.
    notify: Notify | None = None
    # Absent: no deadline, and nothing is written or watched for it.
    deadline: Deadline | None = None
    # Versions run beside its own on a share of its runs (tickwork.model.variants, docs/versions.md); none: no split.
    variants: Variants = Field(default_factory=list)
    # Absent: its tenant's (edf unless set): which of a band's due items a tick that is short of room claims first.
    dispatch_order: DispatchOrder | None = None

    @field_validator("deadline")
    @classmethod
    def _deadline_within_max_run(cls, value: Deadline | None, info: ValidationInfo) -> Deadline | None:
        data = info.data
        measures = ("timeout_seconds", "max_run_seconds", "retry", "misfire_grace_seconds", "jitter_seconds")
        if value is None or not all(k in data for k in measures):
            return value  # absent, or one it is measured by was refused itself
        longest = longest_run_seconds(**{k: data[k] for k in measures})
        if value.within_seconds > longest:
            raise ValueError(
                f"within_seconds ({value.within_seconds}) is over the job's maximum run time ({longest:g} s: its "
                "misfire grace or jitter, whichever is longer, its max_run_seconds, and each retry's timeout and "
                "longest backoff): it could never be missed"
            )
        return value

    @field_validator("jitter_seconds")
    @classmethod
    def _jitter_within_period(cls, value: int, info: ValidationInfo) -> int:
        schedule = info.data.get("schedule")  # absent when the schedule itself was refused
        if isinstance(schedule, Schedule):
            check_jitter(value, schedule)
        return value


class _HasPriority(Protocol):
    @property
    def priority(self) -> int: ...


class _InBand:
    """A job or run runs in its priority's band (no fields of its own, so pydantic leaves it alone)."""

    @property
    def band(self: _HasPriority) -> Band:
        return Band.of_priority(self.priority)


class _JobIdentity(BaseModel):
    """A stored job's (or workflow's) id and owner, which come first in its documents."""

    id: str
    tenant: str = Field(min_length=1, max_length=128)


class ScheduledLifecycle(BaseModel):
    """What the scheduler keeps of anything it schedules, a job or a workflow: its state and next occurrence."""

    state: JobState = JobState.ACTIVE
    next_run_at: UtcDatetime | None = None
    created_at: UtcDatetime
    updated_at: UtcDatetime
    paused_at: UtcDatetime | None = None
    resumed_at: UtcDatetime | None = None
    version: int = 1
    # Who created it, changed it last and paused it last: the display name of its audit records' actors.
    created_by: str | None = None
    updated_by: str | None = None
    paused_by: str | None = None


# Bases in this order, so the fields run id, tenant, then the definition, then the job's own (pydantic orders
# fields by the reversed MRO); the serialised form and the OpenAPI schema keep that order.
class Job(ScheduledLifecycle, JobDefinition, _JobIdentity, _InBand):
    model_config = ConfigDict(extra="forbid")

    # The circuit breaker's count (tickwork.executor.breaker): FAILED scheduled runs since the last SUCCEEDED one.
    consecutive_failures: int = 0
    suspended_at: UtcDatetime | None = None
    suspended_reason: str | None = None
    breaker: BreakerState | None = None  # while SUSPENDED
    # The last variant rolled back (by its guard or by hand) and why; absent: none ever was.
    variant_rollback: VariantRollback | None = None
    # What its recent runs forecast (docs/forecasts.md): shown in an answer, never written from here (the claim's
    # advance keeps the stored forecast, `forecasts`, tickwork.store.jobs).
    forecast: JobForecast | None = None

    def next_occurrence_after(self, instant: datetime) -> datetime | None:
        return self.schedule.next_after(instant, anchor=self.created_at, hash_key=self.id)
