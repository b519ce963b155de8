"""The simulation's reference model and its invariants: small and pure (no I/O; runs are read by the caller).

The model knows what the simulation asked for (each job's schedule, policies and operator history) and what the
simulated handler did (tests/simulation/world.py); `violations` compares that with the runs the stack recorded and
names every broken promise."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cache
from itertools import pairwise
from typing import Any

from tickwork.model.run import Run
from tickwork.model.states import AttemptOutcome, RunStatus, RunTrigger, SkipReason

# The tick runs each minute and claims up to 2 minutes ahead: an occurrence is recorded by then.
CLAIM_SLACK = timedelta(minutes=2)
# Policies under which two runs of a job never run at once (overlap SKIP and BUFFER_ONE; docs/policies.md).
EXCLUSIVE = ("SKIP", "BUFFER_ONE")
# What holds a run back before its first start only (a pause, a cancel or an open breaker stop a started one too).
BLOCKED = (SkipReason.FREEZE, SkipReason.OVERLAP, SkipReason.CALENDAR)
EXECUTED = (AttemptOutcome.YIELDED, AttemptOutcome.RETRYING, AttemptOutcome.SUCCEEDED, AttemptOutcome.FAILED)


@dataclass
class JobModel:
    """A job as the simulation made it, and what was done to it since."""

    id: str
    every_minutes: int  # its cron: "*/N * * * *"
    created_at: datetime
    overlap: str
    max_backoff_seconds: float
    jitter: bool = False
    # From this instant on, its occurrences are no longer checked one by one (paused, changed, cancelled,
    # frozen with DEFER: what becomes of them then is checked by the other invariants).
    unmodelled_from: datetime | None = None
    cancelled_at: datetime | None = None
    defer_frozen: list[tuple[datetime, datetime]] = field(default_factory=list)
    # The calendar it names (the model's own reading of it), and what becomes of an occurrence it blocks.
    calendar: CalendarModel | None = None
    on_blocked: str = "SKIP"
    frozen: list[tuple[datetime, datetime]] = field(default_factory=list)  # every freeze over it, from..to

    def frozen_by(self, start: datetime, until: datetime, on_blocked: str) -> None:
        self.frozen.append((start, until))
        if on_blocked == "DEFER":
            self.defer_frozen.append((start, until + timedelta(minutes=2)))

    def stop_modelling(self, at: datetime) -> None:
        if self.unmodelled_from is None or at < self.unmodelled_from:
            self.unmodelled_from = at

    def due_occurrences(self, now: datetime) -> list[datetime]:
        """Its occurrences that must each have a run by now: one on time by its time and CLAIM_SLACK; one its
        calendar blocks under `on_blocked: DEFER` by the blackout's end and CLAIM_SLACK (the job waits unrecorded
        till then: docs/operations.md, Calendars), a freeze met on the way deferring it further."""
        end = now - CLAIM_SLACK
        if self.unmodelled_from is not None:
            end = min(end, self.unmodelled_from)
        at = self.created_at.replace(second=0, microsecond=0) + timedelta(minutes=1)
        out = []
        crossed: datetime | None = None  # the end of the blackout the last deferred occurrence crossed
        while at <= end:
            if at.minute % self.every_minutes == 0 and not any(a <= at < b for a, b in self.defer_frozen):
                # An occurrence inside the blackout the last one crossed is deferred to the same end.
                deferred_to = crossed if crossed is not None and at < crossed else self.deferred_to(at, end)
                crossed = deferred_to
                if deferred_to is None or deferred_to <= end:
                    out.append(at)
            at += timedelta(minutes=1)
        return out

    def deferred_to(self, at: datetime, limit: datetime) -> datetime | None:
        """When the occurrence at `at` runs, its calendar having blocked it under DEFER (a freeze met on the way
        deferring it further; past `limit`, some instant past it); None when the calendar lets it run at its time
        or its job skips what the calendar blocks."""
        if self.allowed_from(at, limit) is None:
            return None
        instant = at
        while instant <= limit:
            if self.calendar is not None and self.calendar.blocks(instant):
                instant = instant.replace(second=0, microsecond=0) + timedelta(minutes=1)
            elif frozen_until := [b for a, b in self.frozen if a <= instant < b]:
                instant = max(frozen_until)
            else:
                return instant
        return instant

    def allowed_from(self, at: datetime, limit: datetime) -> datetime | None:
        """The end of its calendar's blackout over the occurrence at `at` when the job defers what it blocks
        (past `limit`: some instant past it); None when the calendar lets it run at its time or the job skips
        it."""
        if self.calendar is None or self.on_blocked != "DEFER" or not self.calendar.blocks(at):
            return None
        instant = at
        while instant <= limit and self.calendar.blocks(instant):
            instant += timedelta(minutes=1)
        return instant


@dataclass(frozen=True)
class CalendarModel:
    """A calendar of one cron window (in UTC), read by brute force: each minute the window's cron matches opens
    it for `duration_minutes`. Crons of fields `*`, `*/N`, `N` and `N-M` only (the simulation's)."""

    mode: str  # exclude | include
    cron: str
    duration_minutes: int

    @cache
    def blocks(self, at: datetime) -> bool:
        minute = at.replace(second=0, microsecond=0)
        opened = any(self._opens(minute - timedelta(minutes=back)) for back in range(self.duration_minutes))
        return opened if self.mode == "exclude" else not opened

    def _opens(self, at: datetime) -> bool:
        # cron's fields: minute, hour, day of month, month, day of week (0 is Sunday)
        values = (at.minute, at.hour, at.day, at.month, (at.weekday() + 1) % 7)
        return all(_cron_field_matches(f, v) for f, v in zip(self.cron.split(), values, strict=True))


def _cron_field_matches(cron_field: str, value: int) -> bool:
    if cron_field == "*":
        return True
    if cron_field.startswith("*/"):
        return value % int(cron_field[2:]) == 0
    low, _, high = cron_field.partition("-")
    return int(low) <= value <= int(high or low)


@dataclass
class Model:
    jobs: dict[str, JobModel] = field(default_factory=dict)
    triggered: set[str] = field(default_factory=set)  # runs a trigger acknowledged (202)
    restarted: Counter[str] = field(default_factory=Counter)  # runs retried by hand with from_checkpoint false
    retry_waits: list[tuple[str, str, float]] = field(default_factory=list)  # (job, run, seconds): each retry's wait
    handled: Mapping[str, Sequence[tuple[datetime, datetime]]] = field(default_factory=dict)  # run -> handler spans


def _occurrence(run: Run) -> datetime:
    return run.nominal_at or run.scheduled_for


def _first_start(run: Run) -> datetime | None:
    return min((a.started_at for a in run.attempt_history), default=run.started_at)


def violations(
    model: Model,
    runs: Mapping[str, list[Run]],
    executions: Mapping[str, list[datetime]],
    step_calls: Mapping[tuple[str, int], int],
    now: datetime,
    skip: frozenset[str] = frozenset(),
) -> list[str]:
    """Every invariant broken (but those named in `skip`), as one line each, named: `runs` are each modelled job's runs; `executions` each run's handler
    starts (job id, instant); `step_calls` each (run, page)'s real calls."""
    broken: list[str] = []
    for job_id, job in model.jobs.items():
        job_runs = runs.get(job_id, [])
        for name, check in JOB_INVARIANTS.items():
            if name not in skip:
                broken += [f"{name}: {line}" for line in check(job, job_runs, now, model, executions)]
    if "steps_once" not in skip:
        broken += [f"steps_once: {line}" for line in _steps_once(step_calls, model.restarted)]
    return broken


def _accounted_once(job: JobModel, job_runs: list[Run], now: datetime, *_: Any) -> list[str]:
    """Each occurrence a run (SKIPPED with its reason counts), never two; each due one recorded by now; one its
    calendar deferred runs from the blackout's end on, or is recorded SKIPPED (its catch-up policy collapsed it)."""
    scheduled = [r for r in job_runs if r.trigger == RunTrigger.SCHEDULE and r.workflow_run_id is None]
    counts = Counter(_occurrence(r) for r in scheduled)
    broken = [f"job {job.id}: occurrence {t:%H:%M:%S} has {n} runs" for t, n in counts.items() if n > 1]
    collapsed = [(r.scheduled_for, r.skipped_until) for r in scheduled if r.skipped_until is not None]
    for at in job.due_occurrences(now):
        if at not in counts and not any(at <= until for _, until in collapsed if until is not None):
            broken.append(f"job {job.id}: occurrence {at:%H:%M} due by {now:%H:%M:%S} has no run")
    for r in scheduled:
        at, start = _occurrence(r), _first_start(r)
        if start is None or (job.unmodelled_from is not None and at >= job.unmodelled_from):
            continue
        allowed = job.allowed_from(at, now)
        if allowed is not None and start < allowed:
            broken.append(f"job {job.id}: occurrence {at:%H:%M} deferred by its calendar ran at {start:%H:%M:%S}")
    return broken


def _not_early(job: JobModel, job_runs: list[Run], *_: Any) -> list[str]:
    return [
        f"run {r.id}: started {start:%H:%M:%S} before its time {r.scheduled_for:%H:%M:%S}"
        for r in job_runs
        if (start := _first_start(r)) is not None and start < r.scheduled_for
    ]


def _executions(
    run: Run, now: datetime, handled: Sequence[tuple[datetime, datetime]] = ()
) -> list[tuple[datetime, datetime]]:
    """When the run held its job: each execution from its first start to its end, a yield not ending it (a yielded
    run goes on: docs/durable-runs.md); a deferral (no handler) is none. An attempt whose executor died (no
    outcome: between the simulation's steps nothing runs) ran as long as its handler did, seen in `handled` (each
    handler's [start, end) of the run), and not at all if its handler never started; between two segments of a
    yielded run, it lasts until the next attempt starts (the run keeps its slot)."""
    attempts = sorted(
        (a for a in run.attempt_history if a.outcome != AttemptOutcome.DEFERRED), key=lambda a: a.started_at
    )
    spans: list[tuple[datetime, datetime]] = []
    going_on = False
    for index, attempt in enumerate(attempts):
        later = attempts[index + 1].started_at if index + 1 < len(attempts) else None
        end = attempt.ended_at or later or run.finished_at or now
        if going_on and spans:
            spans[-1] = (spans[-1][0], end)
        elif attempt.outcome is None and attempt.ended_at is None:
            ran = [e for s, e in handled if attempt.started_at <= s < end]
            if ran:
                spans.append((attempt.started_at, max(ran)))
        else:
            spans.append((attempt.started_at, end))
        going_on = attempt.outcome == AttemptOutcome.YIELDED
    return spans


def _one_at_a_time(job: JobModel, job_runs: list[Run], now: datetime, model: Model, *_: Any) -> list[str]:
    """Under SKIP and BUFFER_ONE, a run runs (first start to its end, yields and retries included) alone."""
    if job.overlap not in EXCLUSIVE:
        return []
    spans = sorted((span, r.id) for r in job_runs for span in _executions(r, now, model.handled.get(r.id, ())))
    return [
        f"job {job.id} ({job.overlap}): run {b} started {sb:%H:%M:%S} while run {a} ran ({sa:%H:%M:%S}-{ea:%H:%M:%S})"
        for ((sa, ea), a), ((sb, _), b) in pairwise(spans)
        if sb < ea
    ]


def _started_runs_run_on(job: JobModel, job_runs: list[Run], now: datetime, model: Model, *_: Any) -> list[str]:
    """A run that started is never skipped later by a freeze, a calendar or its own overlap (it runs on); an acknowledged trigger is never held back by a
    freeze (only a scheduled run's first start reads the freezes: docs/operations.md)."""
    broken = []
    for r in job_runs:
        if r.status != RunStatus.SKIPPED:
            continue
        if r.skip_reason in BLOCKED and any(a.outcome in EXECUTED for a in r.attempt_history):
            broken.append(f"run {r.id}: SKIPPED `{r.skip_reason}` after it had started (segments {r.segments})")
        if r.skip_reason == SkipReason.FREEZE and (r.id in model.triggered or r.trigger == RunTrigger.MANUAL):
            broken.append(f"run {r.id}: an acknowledged trigger SKIPPED `freeze`")
    return broken


def _within_backoff_cap(job: JobModel, job_runs: list[Run], now: datetime, model: Model, *_: Any) -> list[str]:
    """A retry waits at most max_backoff_seconds (the cap; our handlers ask for no Retry-After)."""
    return [
        f"run {run_id}: retry in {wait:g} s, over max_backoff_seconds {job.max_backoff_seconds:g}"
        for job_id, run_id, wait in model.retry_waits
        if job_id == job.id and wait > job.max_backoff_seconds
    ]


def _no_timeout_on_work_that_fits(job: JobModel, job_runs: list[Run], *_: Any) -> list[str]:
    """The simulation's work always fits its job's max_run_seconds in one execution: a RunTimeout is a budget
    counted wrong."""
    return [
        f"run {r.id}: FAILED RunTimeout (requeues {r.requeues}, yielded_ms {r.yielded_ms})"
        for r in job_runs
        if r.status == RunStatus.FAILED and r.error is not None and r.error.type == "RunTimeout"
    ]


def _nothing_after_cancel(
    job: JobModel, job_runs: list[Run], now: datetime, model: Model, executions: Mapping[str, list[datetime]]
) -> list[str]:
    """After its cancel was acknowledged, no handler of the job starts (docs/api.md: it "runs nothing more")."""
    if job.cancelled_at is None:
        return []
    cancelled = job.cancelled_at
    return [
        f"job {job.id}: run {r.id} ({r.trigger}) executed at {at:%H:%M:%S}, after the job's cancel at {cancelled:%H:%M:%S}"
        for r in job_runs
        for at in executions.get(r.id, [])[:1]
        if at > cancelled
    ]


def _steps_once(step_calls: Mapping[tuple[str, int], int], restarted: Counter[str]) -> list[str]:
    """Each step of a run done once (once more each time it was asked to start over)."""
    return [
        f"run {run_id}: step page-{page} done {n} times (started over {restarted[run_id]} times)"
        for (run_id, page), n in step_calls.items()
        if n > 1 + restarted[run_id]
    ]


JOB_INVARIANTS: dict[str, Callable[..., list[str]]] = {
    "accounted_once": _accounted_once,
    "not_early": _not_early,
    "one_at_a_time": _one_at_a_time,
    "started_runs_run_on": _started_runs_run_on,
    "within_backoff_cap": _within_backoff_cap,
    "no_timeout_on_work_that_fits": _no_timeout_on_work_that_fits,
    "nothing_after_cancel": _nothing_after_cancel,
}
INVARIANTS = (*JOB_INVARIANTS, "steps_once", "no_5xx", "tick_never_raises")
