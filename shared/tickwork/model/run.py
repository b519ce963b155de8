"""A run of a job (or of a workflow step): its record, its attempts, its error and its result."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from tickwork.model.ids import parse_run_id, run_id_for
from tickwork.model.job import Job, _InBand
from tickwork.model.policies import DebounceWindow, OrderingKey, Priority, StartPrecision, run_ordering
from tickwork.model.schedule import UtcDatetime
from tickwork.model.states import AttemptOutcome, DeferReason, RunStatus, RunTrigger, SkipReason


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
    # The region whose results bucket holds it, in a multi-region stack only (docs/regions.md, "Results"): another
    # region's API reads it there. Absent in a single region, so the run item is what it always was.
    region: str | None = None


class RunProgress(BaseModel):
    """How far a running run says it has got (`ctx.progress`, docs/durable-runs.md), as last written."""

    model_config = ConfigDict(extra="forbid")

    fraction: float | None = Field(default=None, ge=0, le=1, description="Done, from 0 to 1; null if not said.")
    message: str | None = None
    data: Any = Field(default=None, description="The handler's own JSON, as it passed it.")
    updated_at: UtcDatetime


# A run keeps its last 20 attempts' records one by one, and folds every earlier one into one EarlierAttempts:
# its item stays small (under RUN_HISTORY_MAX_BYTES) whatever its retries, deferrals and yields, and still
# accounts for each of them.
MAX_ATTEMPT_HISTORY = 20
MAX_ATTEMPT_ERROR_CHARS = 500  # an attempt record's error: enough to read, small enough for 20 in the run's item
# What a run's attempt history (its records and their summary) takes of its item at most, as JSON: 20 records of
# up to about 650 bytes (a 500-character error, times, outcome) and a summary of a few hundred. DynamoDB's item
# limit is 400 KB.
RUN_HISTORY_MAX_BYTES = 16_000


# An attempt that ended so ran its handler; a deferred one did not, and one whose executor died has no outcome.
HANDLER_RAN = frozenset(
    {
        AttemptOutcome.SUCCEEDED,
        AttemptOutcome.FAILED,
        AttemptOutcome.RETRYING,
        AttemptOutcome.TIMED_OUT,
        AttemptOutcome.YIELDED,
        AttemptOutcome.CANCELLED,
    }
)


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


def handler_ms_of(record: AttemptRecord) -> int:
    """The time its handler ran in this attempt: from the lease's start to the outcome, for an attempt that ran it
    (not a deferral; an attempt whose executor died has no end, so no time known)."""
    if record.outcome not in HANDLER_RAN or record.ended_at is None:
        return 0
    return max(0, int((record.ended_at - record.started_at).total_seconds() * 1000))


class EarlierAttempts(BaseModel):
    """The attempt records a run no longer keeps one by one (all but its last MAX_ATTEMPT_HISTORY), folded into
    counts and totals: a durable run's hundreds of segments each count here, in a summary of bounded size."""

    model_config = ConfigDict(extra="forbid")

    records: int = Field(description="How many attempt records were folded here (each segment has its own).")
    first_attempt: int
    last_attempt: int
    first_started_at: UtcDatetime
    last_ended_at: UtcDatetime | None = None
    handler_ms: int = Field(description="Their handlers' time together.")
    outcomes: dict[str, int] = Field(
        description="Records by outcome (`lost`: its executor stopped before recording one)."
    )

    def folding(self, records: Sequence[AttemptRecord]) -> EarlierAttempts:
        return _fold(self, records)

    @classmethod
    def of(cls, records: Sequence[AttemptRecord]) -> EarlierAttempts | None:
        return _fold(None, records) if records else None


def _fold(summary: EarlierAttempts | None, records: Sequence[AttemptRecord]) -> EarlierAttempts:
    outcomes = dict(summary.outcomes) if summary is not None else {}
    for record in records:
        key = record.outcome.value if record.outcome is not None else "lost"
        outcomes[key] = outcomes.get(key, 0) + 1
    ends = [r.ended_at for r in records if r.ended_at is not None]
    return EarlierAttempts(
        records=(summary.records if summary else 0) + len(records),
        first_attempt=summary.first_attempt if summary else records[0].attempt,
        last_attempt=records[-1].attempt if records else summary.last_attempt if summary else 0,
        first_started_at=summary.first_started_at if summary else records[0].started_at,
        last_ended_at=ends[-1] if ends else (summary.last_ended_at if summary else None),
        handler_ms=(summary.handler_ms if summary else 0) + sum(handler_ms_of(r) for r in records),
        outcomes=outcomes,
    )


@dataclass(frozen=True)
class AttemptHistory:
    """A run's whole attempt history: the records it keeps (its last MAX_ATTEMPT_HISTORY) and the earlier ones'
    summary; the run's handler time and its start come from both."""

    records: list[AttemptRecord]
    earlier: EarlierAttempts | None = None

    @classmethod
    def of_run(cls, run: Run) -> AttemptHistory:
        return cls(list(run.attempt_history), run.earlier_attempts)

    def bounded(self) -> AttemptHistory:
        """The records past MAX_ATTEMPT_HISTORY folded into the summary, the oldest first."""
        excess = len(self.records) - MAX_ATTEMPT_HISTORY
        if excess <= 0:
            return self
        old, kept = self.records[:excess], self.records[excess:]
        earlier = self.earlier.folding(old) if self.earlier is not None else EarlierAttempts.of(old)
        return AttemptHistory(kept, earlier)

    @property
    def handler_ms(self) -> int:
        """Every attempt's and segment's handler time together, the folded ones' too."""
        return (self.earlier.handler_ms if self.earlier else 0) + sum(handler_ms_of(r) for r in self.records)


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
    # A jittered job's occurrence (tickwork.model.jitter): the undelayed instant; scheduled_for is the later one it
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
    # The calendar or freeze that blocked its occurrence (skipped `calendar`/`freeze`, or deferred to its end).
    blocked_by: str | None = None
    lease_until: UtcDatetime | None = None
    # The earliest instant the next attempt may start (its backoff, or how long an abandoned attempt's effect
    # may still be under way). The lease's condition enforces it, so no duplicate message can start it early.
    not_before: UtcDatetime | None = None
    # Times this run was re-queued after FAILED (retry, DLQ redrive); its lateness then says how late the
    # new execution started relative to the original occurrence.
    requeues: int = 0
    # A FAILED run taken out of the DLQ without a retry (POST /v1/dlq/{run_id}/dismiss): when, and by whom. A
    # retry clears them.
    dismissed_at: UtcDatetime | None = None
    dismissed_by: str | None = None
    # Its payload was replaced at a retry (POST /v1/runs/{id}/retry with `payload`): when, and by whom; the audit
    # record has the payload before and after.
    payload_edited_at: UtcDatetime | None = None
    payload_edited_by: str | None = None
    # Times the run was held back by a limit without consuming an attempt, and why the last time.
    deferred: int = 0
    deferred_reason: DeferReason | None = None
    # A workflow step's run: its workflow run, its step, and its payload as resolved when the run was created
    # (`$from` values replaced by upstream results); job_id is then the workflow's id.
    workflow_run_id: str | None = None
    step_id: str | None = None
    payload: dict[str, Any] | None = None
    # Its attempts in order, the last MAX_ATTEMPT_HISTORY of them (empty on runs recorded before it existed), and
    # the earlier ones folded into a summary (absent while there are none).
    attempt_history: list[AttemptRecord] = Field(default_factory=list)
    earlier_attempts: EarlierAttempts | None = None
    # Its handlers' time over every attempt and segment of every execution (duration_ms is the last one's), and
    # each execution's first start to its end, added up (wall_ms_at): the first with each outcome, the second with
    # each end, and both kept by a retry or redrive.
    handler_ms: int | None = None
    wall_ms: int | None = None
    # When its job was paused, cancelled or edited after the run was claimed: its message's copy of the job
    # (RunMessage.job) is then out of date, and its executor reads the job instead. Absent otherwise.
    job_changed_at: UtcDatetime | None = None
    # The ordering key it was queued under when it was created (tickwork.executor.ordering); absent: none.
    ordering: OrderingKey | None = None
    # A debounced trigger's run (tickwork.control.debounce): its window; its payload is the last trigger's.
    debounce: DebounceWindow | None = None
    # Its job's deadline (tickwork.model.deadlines): the run must end by then; when a miss was recorded (once).
    deadline_at: UtcDatetime | None = None
    deadline_missed_at: UtcDatetime | None = None
    # Its job's forecast when it was claimed (docs/forecasts.md; absent before the job has one): when it is expected
    # to end (its start plus the p50), how likely it is to succeed, and the p95 and p99 its executor measures it by.
    expected_end_at: UtcDatetime | None = None
    p_success: float | None = Field(default=None, ge=0, le=1)
    forecast_p95_ms: int | None = None
    forecast_p99_ms: int | None = None
    # When it was found at risk of missing its deadline (its start plus the p95 passes it: a warning, not a miss),
    # and when it was found slow (its handler past the p99 times RUN_SLOW_FACTOR); each recorded once.
    deadline_at_risk_at: UtcDatetime | None = None
    slow_at: UtcDatetime | None = None
    # Segments that ended in a graceful yield (docs/durable-runs.md), and their handlers' time together: the next
    # segment's budget is the job's max_run_seconds less it.
    segments: int = 0
    yielded_ms: int = 0
    # Its handler's last progress report (coalesced: at most one write every few seconds); absent if none.
    progress: RunProgress | None = None
    # The variant it runs (tickwork.model.variants), picked from its id when it was created and kept by its
    # retries, redrives and segments; `baseline` for the job's own; absent: its job had no variants then.
    variant: str | None = None

    @field_validator("progress", mode="before")
    @classmethod
    def _progress_from_text(cls, value: Any) -> Any:
        """Stored as JSON text (its data kept as given, nulls included)."""
        return json.loads(value) if isinstance(value, str) else value

    @model_validator(mode="before")
    @classmethod
    def _numbered_attempts(cls, data: Any) -> Any:
        return _number_open_attempts(data)

    @property
    def is_compensation(self) -> bool:
        """The run of a workflow step's compensation (its id is `<workflow run id>.c-<step id>`)."""
        parsed = parse_run_id(self.id) if self.step_id is not None else None
        return parsed is not None and parsed.compensation

    @property
    def has_run(self) -> bool:
        """Whether its handler has executed: a segment yielded, or an attempt ended after running (succeeded, failed,
        retrying, timed out, cancelled). Such a run runs on: its own overlap never skips it (it waits instead)."""
        return self.segments > 0 or any(a.outcome in HANDLER_RAN for a in self.attempt_history)

    @property
    def first_start_of_execution(self) -> bool:
        """Whether the lease that read it so is its execution's first start: its first attempt, no segment yielded
        before it. A deferral, or a skip before its handler, of that lease takes the start away (it never started);
        of any later lease, the start stays."""
        return self.attempts <= 1 and self.segments == 0

    def wall_ms_at(self, ended_at: datetime, *, started: bool = True) -> int | None:
        """Its wall time, ending at `ended_at`: from this execution's first start (`started_at`; False `started`:
        this execution never started) to its end, plus the earlier executions' (the `wall_ms` a retry or redrive
        keeps), so the time it sat FAILED before a retry or redrive is not in it. None: it never started."""
        earlier = self.wall_ms if self.requeues else None
        if not started or self.started_at is None:
            return earlier
        return (earlier or 0) + max(0, int((ended_at - self.started_at).total_seconds() * 1000))

    @property
    def occurrence_at(self) -> datetime:
        """The occurrence this run is of: the instant its id, its claim and its job's breaker (`probe_at`,
        `opens_until`) name. A jittered run starts later (scheduled_for); the occurrence is its nominal_at."""
        return self.nominal_at or self.scheduled_for


def manual_run(job: Job, *, at: datetime, now: datetime, **fields: Any) -> Run:
    """A QUEUED run of `job` asked for outside its schedule (a trigger) at `at`, under its ordering key if any."""
    return Run(
        id=run_id_for(job.id, at, RunTrigger.MANUAL),
        job_id=job.id,
        tenant=job.tenant,
        scheduled_for=at,
        status=RunStatus.QUEUED,
        priority=job.priority,
        trigger=RunTrigger.MANUAL,
        enqueued_at=now,
        ordering=run_ordering(job.ordering, job.overlap, job.id),
        **fields,
    )
