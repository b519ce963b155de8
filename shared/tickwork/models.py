"""Tickwork's domain models: jobs, runs, and the messages between tick and executor."""

from __future__ import annotations

import math
import os
import re
import time
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Literal, NamedTuple, Protocol

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from tickwork.clock import from_ms, to_ms
from tickwork.jitter import check_jitter
from tickwork.schedule import Schedule, UtcDatetime

MAX_TIMEOUT_SECONDS = 840  # the executor Lambda has 900 s; 60 s stay for lease, result and bookkeeping
DEFAULT_MISFIRE_GRACE_SECONDS = 900  # the 15-minute start threshold


def _no_coercion(value: object) -> object:
    """Numbers are JSON numbers: "5" or true is no priority (nor a JSON Schema integer, as the OpenAPI document
    says), while 5.0 is (it is one in JSON Schema too); pydantic's lax mode would take all of them."""
    if isinstance(value, str | bool):
        raise ValueError(f"must be a number, not {'a boolean' if isinstance(value, bool) else 'a string'}")
    return value


# After the type's own constraints in an Annotated, so that the OpenAPI document keeps its minimum and maximum.
NotCoerced = BeforeValidator(_no_coercion)

# Job field limits, defined once: the stored Job, the create body and the PATCH body all use these.
JobName = Annotated[str, Field(min_length=1, max_length=200)]
JobTypeName = Annotated[str, Field(min_length=1, max_length=64)]
Priority = Annotated[int, Field(ge=0, le=9), NotCoerced]
TimeoutSeconds = Annotated[int, Field(ge=1, le=MAX_TIMEOUT_SECONDS), NotCoerced]
MisfireGraceSeconds = Annotated[int, Field(ge=0, le=7 * 86400), NotCoerced]
JitterSeconds = Annotated[int, Field(ge=0, le=366 * 86400), NotCoerced]  # and at most the schedule's period
# Tags as AWS bounds them: at most 50, keys of 1 to 128 characters, values of 0 to 256. Bounded so that a job
# item always fits DynamoDB's 400 KB (see tickwork.job_factory.MAX_JOB_ITEM_BYTES).
MAX_TAGS = 50
TagKey = Annotated[str, Field(min_length=1, max_length=128)]
TagValue = Annotated[str, Field(max_length=256)]
Tags = Annotated[dict[TagKey, TagValue], Field(max_length=MAX_TAGS)]
# What a stored job may hold: jobs written before the limits above stay readable (as UtcDatetime reads old
# times leniently); every write goes through JobSpec or JobUpdate (tickwork.api_models), which apply Tags.
StoredTags = Annotated[dict[str, str], Field(max_length=MAX_TAGS)]


class Band(StrEnum):
    """Priority bands, one SQS queue each: high 7-9, normal 3-6, low 0-2."""

    HIGH = "high"
    NORMAL = "normal"
    LOW = "low"

    @classmethod
    def of_priority(cls, priority: int) -> Band:
        if priority >= 7:
            return cls.HIGH
        return cls.NORMAL if priority >= 3 else cls.LOW


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
    # A workflow step that did not run (docs/workflows.md): its trigger rule cannot hold because an upstream
    # step failed, or because upstream steps were skipped; its rule waits for a failure that did not come
    # (one_failed, all_failed); or its condition was false.
    UPSTREAM_FAILED = "upstream_failed"
    UPSTREAM_SKIPPED = "upstream_skipped"
    RULE_NOT_MET = "rule_not_met"
    CONDITION_FALSE = "condition_false"


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


class OverlapPolicy(StrEnum):
    """What to do when an occurrence starts while the job's previous run is still running (docs/policies.md):
    run beside it, skip, wait for it (one waiter at most), or stop it and then run."""

    ALLOW = "ALLOW"
    SKIP = "SKIP"
    BUFFER_ONE = "BUFFER_ONE"
    CANCEL_OTHER = "CANCEL_OTHER"

    @property
    def takes_running_slot(self) -> bool:
        """Whether a run of the job holds the job's running slot while it runs."""
        return self is not OverlapPolicy.ALLOW


class CatchupPolicy(StrEnum):
    """Which occurrences missed during an outage, a pause's aftermath or a deploy run (docs/policies.md)."""

    NONE = "NONE"
    LATEST = "LATEST"
    ALL = "ALL"


class StartPrecision(StrEnum):
    """How close to its instant a run starts (docs/policies.md, "Start precision").

    `second`: its message is sent with DelaySeconds rounded up, so it starts 0-1 s after its instant (and the
    executor's poll). `precise`: rounded down, a little early, and the executor waits out the rest before it
    leases (the lease's not_before keeps it from ever starting early): it starts within milliseconds, for up to
    ~1.25 s of executor time per batch (the batch's runs wait together)."""

    SECOND = "second"
    PRECISE = "precise"


MAX_BREAKER_COOLDOWN_SECONDS = 86400
BreakerCooldown = Annotated[int, Field(ge=1, le=MAX_BREAKER_COOLDOWN_SECONDS), NotCoerced]


class CircuitBreaker(BaseModel):
    """After `failure_threshold` consecutive FAILED runs the job is SUSPENDED for `cooldown_seconds`; each failed
    probe doubles the cooldown, up to `max_cooldown_seconds` (default: a day)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    failure_threshold: Annotated[int, Field(ge=1, le=1000), NotCoerced]
    cooldown_seconds: BreakerCooldown
    max_cooldown_seconds: BreakerCooldown = MAX_BREAKER_COOLDOWN_SECONDS

    @model_validator(mode="after")
    def _cap_above_cooldown(self) -> CircuitBreaker:
        if self.max_cooldown_seconds < self.cooldown_seconds:
            raise ValueError("max_cooldown_seconds must be at least cooldown_seconds")
        return self


class BreakerState(BaseModel):
    """An open breaker: no run before `opens_until`; then the first occurrence is its probe (`probe_at`, set
    when the claim queues it)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    opens_until: UtcDatetime
    cooldown_seconds: int
    consecutive_failures: int
    probe_at: UtcDatetime | None = None


class RunTrigger(StrEnum):
    SCHEDULE = "schedule"
    MANUAL = "manual"
    # A past occurrence created by POST /v1/jobs/{id}/backfill: its id is the occurrence's, as a scheduled run's.
    BACKFILL = "backfill"


class RetryPolicy(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    max_attempts: Annotated[int, Field(ge=1, le=100), NotCoerced] = 3
    # At least a millisecond: a shorter backoff means nothing, and DynamoDB cannot store a positive number
    # below 1e-130 (schemathesis found 1.87e-278 failing the write with a 500).
    backoff_seconds: Annotated[float, Field(ge=0.001, le=3600), NotCoerced] = 2
    # 900 s is also SQS's longest message delay, so a backoff never outlives one visibility change.
    max_backoff_seconds: Annotated[float, Field(ge=0.001, le=43200), NotCoerced] = 900

    @model_validator(mode="after")
    def _cap_above_base(self) -> RetryPolicy:
        if self.max_backoff_seconds < self.backoff_seconds:
            raise ValueError("max_backoff_seconds must be at least backoff_seconds")
        return self


LimitKey = Annotated[str, Field(min_length=1, max_length=128)]
# At least one run a day (the slowest rate worth a key), at most one a millisecond.
PerSecond = Annotated[float, Field(ge=1 / 86400, le=1000), NotCoerced]
PerMinute = Annotated[float, Field(ge=1 / 1440, le=60000), NotCoerced]
_NO_RATE: Any = None  # a RateLimit's unit not given (absent, never null: the document says number)


class ConcurrencyLimit(BaseModel):
    """At most `limit` runs that share `key` (within the tenant) run at once, across every executor."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: LimitKey
    limit: Annotated[int, Field(ge=1, le=1000), NotCoerced]


def _one_rate_schema(schema: dict[str, Any]) -> None:
    """ "Exactly one" in the OpenAPI document too, so that no schema-valid body is refused; and no null default
    for a number that is either given or absent."""
    for prop in schema.get("properties", {}).values():
        prop.pop("default", None)
    schema["oneOf"] = [{"required": ["per_second"]}, {"required": ["per_minute"]}]


class RateLimit(BaseModel):
    """Runs that share `key` (within the tenant) start no faster than this rate: `per_second` or `per_minute`,
    exactly one. Strictly spaced (no burst): two runs start at least 1/rate apart (tickwork.limits)."""

    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra=_one_rate_schema)

    key: LimitKey
    # The unit not given is left out of the document, as it was of the body.
    per_second: PerSecond = Field(default=_NO_RATE, exclude_if=lambda v: v is None)
    per_minute: PerMinute = Field(default=_NO_RATE, exclude_if=lambda v: v is None)

    @model_validator(mode="after")
    def _one_rate(self) -> RateLimit:
        if len(self.model_fields_set & {"per_second", "per_minute"}) != 1:
            raise ValueError("give exactly one of per_second and per_minute")
        return self

    @property
    def interval_seconds(self) -> float:
        return 1 / self.per_second if "per_second" in self.model_fields_set else 60 / self.per_minute

    @property
    def interval_ms(self) -> int:
        """The spacing between two starts, rounded up so the rate is never exceeded."""
        return math.ceil(self.interval_seconds * 1000)


# Ids: a job is j + 25 characters, a workflow w + 25. An occurrence's run is <owner id>.<13 digits of ms>, with
# `.m` for a manual trigger: a job's run, or a workflow run. A workflow step's run is its workflow run's id,
# `.s-`, and the step id, so that every id names its place in the table (see store.codec).
STEP_ID_PATTERN = r"[A-Za-z_][A-Za-z0-9_-]{0,63}"
_ID = re.compile(r"^j[0-9a-z]{25}$")
_WORKFLOW_ID = re.compile(r"^w[0-9a-z]{25}$")
_JOB_RUN_ID = re.compile(r"^(j[0-9a-z]{25})\.(\d{13})(\.m)?$")
_WORKFLOW_RUN_ID = re.compile(r"^(w[0-9a-z]{25})\.(\d{13})(\.m)?$")
_STEP_RUN_ID = re.compile(rf"^(w[0-9a-z]{{25}})\.(\d{{13}})(\.m)?\.s-({STEP_ID_PATTERN})$")
_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"  # Crockford base32, lower case


def new_job_id(now_ms: int | None = None, *, prefix: Literal["j", "w"] = "j") -> str:
    """Time-ordered, collision-resistant: 10 chars of milliseconds then 15 random chars (ULID-like)."""
    ms = int(time.time() * 1000) if now_ms is None else now_ms
    head = "".join(_ALPHABET[(ms >> shift) & 31] for shift in range(45, -5, -5))
    rand = int.from_bytes(os.urandom(10), "big")
    tail = "".join(_ALPHABET[(rand >> shift) & 31] for shift in range(70, -5, -5))[:15]
    return prefix + head + tail


def new_workflow_id(now_ms: int | None = None) -> str:
    return new_job_id(now_ms, prefix="w")


def is_job_id(value: str) -> bool:
    return bool(_ID.match(value))


def is_workflow_id(value: str) -> bool:
    return bool(_WORKFLOW_ID.match(value))


def run_id_for(job_id: str, scheduled_for: datetime, trigger: RunTrigger = RunTrigger.SCHEDULE) -> str:
    """Deterministic: the same job (or workflow) and occurrence always name the same run (the claim's lock key)."""
    suffix = ".m" if trigger is RunTrigger.MANUAL else ""
    return f"{job_id}.{to_ms(scheduled_for):013d}{suffix}"


def step_run_id_for(workflow_run_id: str, step_id: str) -> str:
    """Deterministic: a workflow run's step has one run, whoever creates it (the lock on the step)."""
    return f"{workflow_run_id}.s-{step_id}"


class ParsedRunId(NamedTuple):
    job_id: str  # the job's id, or for a step's run its workflow's
    scheduled_for: datetime
    trigger: RunTrigger
    step_id: str | None = None  # a workflow step's run

    @property
    def workflow_run_id(self) -> str | None:
        if self.step_id is None:
            return None
        return run_id_for(self.job_id, self.scheduled_for, self.trigger)


def parse_run_id(run_id: str) -> ParsedRunId | None:
    """A run's id: a job's run, or a workflow step's run (a workflow run itself is not a run: see
    parse_workflow_run_id)."""
    match = _JOB_RUN_ID.match(run_id) or _STEP_RUN_ID.match(run_id)
    if not match:
        return None
    trigger = RunTrigger.MANUAL if match.group(3) else RunTrigger.SCHEDULE
    step = match.group(4) if match.re is _STEP_RUN_ID else None
    return ParsedRunId(match.group(1), from_ms(int(match.group(2))), trigger, step)


def parse_workflow_run_id(workflow_run_id: str) -> ParsedRunId | None:
    match = _WORKFLOW_RUN_ID.match(workflow_run_id)
    if not match:
        return None
    trigger = RunTrigger.MANUAL if match.group(3) else RunTrigger.SCHEDULE
    return ParsedRunId(match.group(1), from_ms(int(match.group(2))), trigger)


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
    misfire_grace_seconds: MisfireGraceSeconds = DEFAULT_MISFIRE_GRACE_SECONDS
    overlap: OverlapPolicy = OverlapPolicy.ALLOW
    catchup: CatchupPolicy = CatchupPolicy.LATEST
    # Absent: no breaker, and a run's outcome writes nothing more for it.
    circuit_breaker: CircuitBreaker | None = None
    # Each occurrence runs this much later at most, by a deterministic offset (tickwork.jitter).
    jitter_seconds: JitterSeconds = 0
    start_precision: StartPrecision = StartPrecision.SECOND
    tags: StoredTags = Field(default_factory=dict)
    # Absent: no limit, and nothing is read or written for it when a run starts.
    concurrency: ConcurrencyLimit | None = None
    rate_limit: RateLimit | None = None

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


# Bases in this order, so the fields run id, tenant, then the definition, then the job's own (pydantic orders
# fields by the reversed MRO); the serialised form and the OpenAPI schema keep that order.
class Job(ScheduledLifecycle, JobDefinition, _JobIdentity, _InBand):
    model_config = ConfigDict(extra="forbid")

    # The circuit breaker's count (tickwork.breaker): FAILED scheduled runs since the last SUCCEEDED one.
    consecutive_failures: int = 0
    suspended_at: UtcDatetime | None = None
    suspended_reason: str | None = None
    breaker: BreakerState | None = None  # while SUSPENDED

    def next_occurrence_after(self, instant: datetime) -> datetime | None:
        return self.schedule.next_after(instant, anchor=self.created_at, hash_key=self.id)


class RunError(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: str
    message: str


class RunResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    location: str = Field(description="s3://bucket/key of the result document, or `inline` (InlineResultMaxBytes).")
    sha256: str
    bytes: int
    # A result of at most InlineResultMaxBytes (a job's run, not a workflow step's), kept in the run record by the
    # outcome's own write instead of S3: its JSON text. Absent for results in S3.
    inline: str | None = None


class AttemptOutcome(StrEnum):
    """How one attempt of a run ended (Run.attempt_history)."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"  # no attempts left, or a permanent error
    RETRYING = "retrying"  # failed; another attempt follows after its backoff
    TIMED_OUT = "timed_out"  # the handler outlived its timeout (retried, or failed, as the run's status says)
    DEFERRED = "deferred"  # a limit held it back before its handler; the attempt was not consumed
    CANCELLED = "cancelled"  # asked to stop (its workflow run was cancelled, or overlap CANCEL_OTHER)


MAX_ATTEMPT_HISTORY = 20  # a run keeps its last 20 attempts' records: its item stays small whatever its retries


class AttemptRecord(BaseModel):
    """One attempt of a run, as the run's timeline shows it. The lease opens it (`started_at`; `ended_at` and
    `outcome` null while it runs) and the attempt's outcome closes it, each in the update it makes anyway. An
    attempt whose executor died keeps null `ended_at` and `outcome`, with an `error` saying so once the next
    attempt has ended."""

    model_config = ConfigDict(extra="forbid")

    attempt: int
    started_at: UtcDatetime
    ended_at: UtcDatetime | None = None
    outcome: AttemptOutcome | None = None
    error: str | None = None


def _number_open_attempts(data: Any) -> Any:
    """The lease opens an attempt's record before it knows the attempt's number (its update counts it): the
    records without one are the last, and are the run's latest attempts, counted back from `attempts`."""
    if not isinstance(data, dict) or not data.get("attempt_history"):
        return data
    history = list(data["attempt_history"])
    number = int(data.get("attempts") or 0)
    for index in range(len(history) - 1, -1, -1):
        record = history[index]
        if not isinstance(record, dict) or record.get("attempt") is not None:
            break
        history[index] = {**record, "attempt": number}
        number -= 1
    return {**data, "attempt_history": history}


class Run(BaseModel, _InBand):
    model_config = ConfigDict(extra="forbid")

    id: str
    job_id: str
    tenant: str
    scheduled_for: UtcDatetime
    status: RunStatus
    priority: Priority = 5
    trigger: RunTrigger = RunTrigger.SCHEDULE
    # A jittered job's occurrence (tickwork.jitter): the undelayed instant; scheduled_for is the later one it
    # starts at. Absent without jitter.
    nominal_at: UtcDatetime | None = None
    # A precise run (StartPrecision.PRECISE): sent a little early, waited out by the executor. Absent otherwise.
    start_precision: StartPrecision | None = None
    attempts: int = 0
    max_attempts: int | None = None
    enqueued_at: UtcDatetime | None = None
    started_at: UtcDatetime | None = None
    finished_at: UtcDatetime | None = None
    lateness_ms: int | None = None
    duration_ms: int | None = None
    error: RunError | None = None
    result: RunResult | None = None
    skip_reason: SkipReason | None = None
    # A capped misfire record stands for this many occurrences, up to skipped_until.
    skipped_count: int | None = None
    skipped_until: UtcDatetime | None = None
    lease_until: UtcDatetime | None = None
    # The earliest instant the next attempt may start (its backoff, or how long an abandoned attempt's effect
    # may still be under way). The lease's condition enforces it, so no duplicate message can start it early.
    not_before: UtcDatetime | None = None
    # Times this run was re-queued after FAILED (retry, DLQ redrive); its lateness then says how late the
    # new execution started relative to the original occurrence.
    requeues: int = 0
    # Times the run was held back by a limit without consuming an attempt, and why the last time.
    deferred: int = 0
    deferred_reason: DeferReason | None = None
    # A workflow step's run: its workflow run, its step, and its payload as resolved when the run was created
    # (`$from` values replaced by upstream results); job_id is then the workflow's id.
    workflow_run_id: str | None = None
    step_id: str | None = None
    payload: dict[str, Any] | None = None
    # Its attempts in order, the last MAX_ATTEMPT_HISTORY of them (empty on runs recorded before it existed).
    attempt_history: list[AttemptRecord] = Field(default_factory=list)
    # When its job was paused, cancelled or edited after the run was claimed: its message's copy of the job
    # (RunMessage.job) is then out of date, and its executor reads the job instead. Absent otherwise.
    job_changed_at: UtcDatetime | None = None

    @model_validator(mode="before")
    @classmethod
    def _numbered_attempts(cls, data: Any) -> Any:
        return _number_open_attempts(data)

    @property
    def occurrence_at(self) -> datetime:
        """The occurrence this run is of: the instant its id, its claim and its job's breaker (`probe_at`,
        `opens_until`) name. A jittered run starts later (scheduled_for); the occurrence is its nominal_at."""
        return self.nominal_at or self.scheduled_for


class JobRunSpec(BaseModel):
    """What the executor needs of a job to run its scheduled run, copied into the run's message by the claim from
    the job as the claim's own write left it (tickwork.run_spec), so that the executor need not read the job.
    Only an ACTIVE job's, with overlap ALLOW, no circuit breaker and a small payload; the job's later changes
    mark its claimed runs (Run.job_changed_at), whose executors then read the job as it is."""

    model_config = ConfigDict(extra="forbid")

    type: str
    payload: dict[str, Any]
    retry: RetryPolicy
    timeout_seconds: int
    concurrency: ConcurrencyLimit | None = None
    rate_limit: RateLimit | None = None
    # The job has no occurrence after this run's: its settling may complete the job.
    last_occurrence: bool = False
    # ...and this run is the only run of an occurrence the job has had: its settling completes the job with no
    # look at the job's other runs (tickwork.completion).
    only_occurrence: bool = False


class RunMessage(BaseModel):
    """The SQS body from tick to executor: small, because the run record holds the rest; a claimed run's may
    carry a copy of its job's spec (`job`), which saves the executor a read."""

    model_config = ConfigDict(extra="forbid")

    v: Literal[1] = 1
    run_id: str = Field(min_length=28, max_length=128)
    job_id: str
    tenant: str
    scheduled_for: UtcDatetime
    # A precise run: the executor waits until scheduled_for before it leases (absent, and not sent, otherwise).
    precise: Literal[True] | None = None
    job: JobRunSpec | None = None

    @model_validator(mode="after")
    def _ids_agree(self) -> RunMessage:
        parsed = parse_run_id(self.run_id)
        if parsed is None or parsed[0] != self.job_id:
            raise ValueError("run_id does not belong to job_id")
        return self


class DeadLetter(BaseModel):
    """What the executor puts on a band's DLQ when a run has no attempts left."""

    model_config = ConfigDict(extra="forbid")

    v: Literal[1] = 1
    run_id: str
    job_id: str
    tenant: str
    attempts: int
    error: RunError
    failed_at: UtcDatetime
