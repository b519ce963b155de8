"""Backfill: runs for a job's past occurrences in [from, to], each exactly once, dispatched at a bounded pace.

Exactly once: a backfilled run's id is its occurrence's (models.run_id_for, the id the scheduler gives it), and
it is created with the store's conditional put (attribute_not_exists), so an occurrence that already has a run
(backfilled before, or run by the scheduler) is reported as existing and left alone. Repeating a backfill
creates nothing new.

Bounded: backfilled runs go to the LOW band queue (priority 0), one every BACKFILL_SPACING per backfill, each
with `not_before` at its turn (the lease's condition, so no message starts one early) and its due-index entry
after it (the tick re-sends one whose message was lost). On-time runs in the high and normal bands never wait
behind them, and a backfill of 1,000 runs takes about 17 minutes of the low band at one run a second. A tenant
with a `max_runs_per_minute` quota backfills no faster than its quota (backfill_spacing); its backfill does not
spend the tick's windows of that quota, so its scheduled runs never wait for it (docs/fairness.md).
Backfilled runs carry `trigger: backfill`, so start-lateness metrics leave them out.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from tickwork.model.clock import Clock
from tickwork.model.errors import Conflict, InvalidInput
from tickwork.model.ids import run_id_for
from tickwork.model.job import Job
from tickwork.model.policies import run_ordering
from tickwork.model.run import Run
from tickwork.model.states import JobState, RunStatus, RunTrigger
from tickwork.observability import logger, metrics
from tickwork.store import JobRecords, RunRecords
from tickwork.tick.dispatch import Dispatcher
from tickwork.tick.sender import outgoing_for

MAX_BACKFILL_DAYS = 31
MAX_BACKFILL_RUNS = 1000
DEFAULT_BACKFILL_RUNS = 100
BACKFILL_SPACING = timedelta(seconds=1)
BACKFILL_PRIORITY = 0  # the low band


def backfill_spacing(max_runs_per_minute: int | None) -> timedelta:
    """The time between a backfill's runs: BACKFILL_SPACING, or for a tenant with a rate quota the quota's own
    pace if slower, so that a backfill alone never runs faster than the quota allows."""
    if max_runs_per_minute is None:
        return BACKFILL_SPACING
    return max(BACKFILL_SPACING, timedelta(milliseconds=math.ceil(60_000 / max_runs_per_minute)))


@dataclass(frozen=True)
class BackfillResult:
    created: list[Run] = field(default_factory=list)
    existing: list[datetime] = field(default_factory=list)  # occurrences that already had a run
    occurrences: int = 0  # in the range, up to max_runs


def check_range(start: datetime, end: datetime, now: datetime) -> None:
    """The range is in the past, in order, and no wider than MAX_BACKFILL_DAYS; else InvalidInput naming it."""
    if start > now:
        raise InvalidInput.one("from", "must not be in the future: a backfill is for past occurrences")
    if end > now:
        raise InvalidInput.one("to", "must not be in the future: the scheduler runs future occurrences")
    if end < start:
        raise InvalidInput.one("to", "must not be before from")
    if end - start > timedelta(days=MAX_BACKFILL_DAYS):
        raise InvalidInput.one("to", f"the range from `from` to `to` must be at most {MAX_BACKFILL_DAYS} days")


@dataclass(frozen=True)
class Backfiller:
    jobs: JobRecords
    runs: RunRecords
    dispatcher: Dispatcher
    clock: Clock

    def backfill(
        self,
        job: Job,
        start: datetime,
        end: datetime,
        max_runs: int,
        *,
        audit: Callable[[list[datetime]], dict[str, Any] | None] = lambda occurrences: None,
    ) -> BackfillResult:
        """Runs for the job's occurrences in [start, end], at most max_runs of them (the earliest). `audit`: the
        backfill's audit item, of the occurrences it covers, written with its first write (the count of them)."""
        now = self.clock.now()
        check_range(start, end, now)
        if job.state is JobState.CANCELLED:
            raise Conflict("cannot backfill a CANCELLED job")
        occurrences = job.schedule.occurrences(
            start - timedelta(milliseconds=1), end, anchor=job.created_at, hash_key=job.id, limit=max_runs
        )
        quota = self.dispatcher.tenants.settings_of(job.tenant) if self.dispatcher.tenants is not None else None
        spacing = backfill_spacing(quota.max_runs_per_minute if quota is not None else None)
        # Before the runs exist, so that no completion misses them (tickwork.progress.job_completion); its audit
        # record with it: no run is queued that the record does not cover.
        if occurrences and not self.jobs.count_backfilled(job.id, len(occurrences), audit=audit(occurrences)):
            raise Conflict(f"job {job.id} is being changed (or is gone); read it and try again")
        created: list[Run] = []
        existing: list[datetime] = []
        for at in occurrences:
            turn = now + spacing * len(created)
            run = Run(
                id=run_id_for(job.id, at),
                job_id=job.id,
                tenant=job.tenant,
                scheduled_for=at,
                status=RunStatus.QUEUED,
                priority=BACKFILL_PRIORITY,
                trigger=RunTrigger.BACKFILL,
                enqueued_at=now,
                not_before=turn if turn > now else None,
                ordering=run_ordering(job.ordering, job.overlap, job.id),
            )
            if self.runs.put_queued_run(run, redispatch_at=turn + self.dispatcher.redispatch_after):
                created.append(run)
            else:
                existing.append(at)
        self.dispatcher.sender.send([outgoing_for(run, start_at=run.not_before or now) for run in created])
        if created:
            metrics.add_metric(name="RunsBackfilled", unit="Count", value=len(created))
        logger.info(
            "backfill",
            extra={
                "job_id": job.id,
                "runs_created": len(created),
                "runs_existing": len(existing),
                "from": start,
                "to": end,
            },
        )
        return BackfillResult(created, existing, len(occurrences))
