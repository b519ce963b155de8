"""Claiming a job's occurrences: two ordered conditional writes, not one transaction.

First the run records (each only if it does not exist: the lock on the occurrence), then the job's advance from
the version read. Racing ticks produce each run exactly once (promise 2); a claimer that dies between the two
writes is completed by the next, which finds the runs and advances the job past exactly what they cover.
Workflows are claimed the same way, their occurrences written as workflow runs (`WorkflowTick`,
tickwork.tick.workflow_occurrences).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, Protocol

from tickwork.aws.queues import Outgoing
from tickwork.faults import CrashPoint, FaultPlan
from tickwork.model.claim_plan import ClaimableJob, ClaimPlan, Occurrence, plan_claim
from tickwork.model.clock import optional_instant
from tickwork.model.forecast_uses import outlook
from tickwork.model.ids import ItemKind, run_id_for
from tickwork.model.jitter import jittered_times
from tickwork.model.policies import StartPrecision
from tickwork.model.run import Run
from tickwork.model.run_spec import with_specs
from tickwork.model.states import DeferReason, RunStatus, SkipReason
from tickwork.observability import logger, metrics
from tickwork.progress.job_completion import JobCompletion
from tickwork.progress.run_events import RunEvents
from tickwork.store import DueItem, JobRecords, RunRecords
from tickwork.store.deadlines import DeadlineRecords
from tickwork.store.jobs import Advanced
from tickwork.tick.forecasts import ForecastFold, warn_at_risk
from tickwork.tick.report import TickReport
from tickwork.tick.sender import outgoing_for

MAX_CLAIM_ROUNDS = 10  # a 1-second rate job needs several claims to fill a 120 s horizon


# ---------------------------------------------------------------- claims


@dataclass(frozen=True)
class SkippedOccurrence:
    record_id: str
    owner_id: str
    reason: SkipReason
    count: int


@dataclass(frozen=True)
class OccurrenceRecords:
    """What writing a claim plan's records did: the runs to send, the skips recorded, the records another
    claimer had written first (run id -> attributes), and whether that claimer is on the job right now."""

    outgoing: list[Outgoing] = field(default_factory=list)
    skipped: list[SkippedOccurrence] = field(default_factory=list)
    existing: dict[str, dict[str, Any]] = field(default_factory=dict)
    in_flight_elsewhere: bool = False
    opened: list[str] = field(default_factory=list)  # workflow runs this claim opened RUNNING


class OccurrenceWriter(Protocol):
    """Writes the records of a claim plan's occurrences, each only if absent (the lock on the occurrence): a
    job's runs, or a workflow's runs."""

    def write(self, job: ClaimableJob, plan: ClaimPlan, now: datetime) -> OccurrenceRecords: ...

    def claim_lost(self, job: ClaimableJob, written: OccurrenceRecords, now: datetime) -> list[Outgoing]:
        """The claim's advance lost (the job changed, or another claimer moved it): what of `written` to send."""
        return written.outgoing


class JobRunWriter(OccurrenceWriter):
    """A job's occurrences are its runs. A claim that loses its advance sends its runs all the same: their
    executors read the job (tickwork.model.run_spec) and skip them if it was paused or cancelled."""

    def __init__(
        self,
        runs: RunRecords,
        *,
        redispatch_after: timedelta,
        tick_period: timedelta,
        deadlines: DeadlineRecords | None = None,
        events: RunEvents | None = None,
    ) -> None:
        self.runs = runs
        self.redispatch_after = redispatch_after
        self.tick_period = tick_period
        self.deadlines = deadlines
        self.events = events  # publishes `Deadline At Risk` of the runs it creates at risk

    def watched(self, deadlines: DeadlineRecords, events: RunEvents | None) -> JobRunWriter:
        """This writer, watching its runs' deadlines and publishing their warnings."""
        self.deadlines, self.events = deadlines, events
        return self

    def write(self, job: ClaimableJob, plan: ClaimPlan, now: datetime) -> OccurrenceRecords:
        runs = [self._run_of(job, o, now) for o in plan.occurrences()]
        if self.deadlines is not None:
            # Each watch before its run: a claimer dying in between leaves a watch that finds no run, never a run
            # with a deadline nobody watches.
            for run in runs:
                if run.deadline_at is not None and run.status is RunStatus.QUEUED:
                    self.deadlines.watch(run)
        put = self.runs.put_claimed_runs(runs, now=now, redispatch_after=self.redispatch_after)
        warn_at_risk(job, put.created, self.events, now)
        return OccurrenceRecords(
            outgoing=[outgoing_for(r) for r in put.created if r.status is RunStatus.QUEUED],
            skipped=[
                SkippedOccurrence(r.id, r.job_id, r.skip_reason, r.skipped_count or 1)
                for r in put.created
                if r.status is RunStatus.SKIPPED and r.skip_reason is not None
            ],
            existing=put.existing,
            in_flight_elsewhere=put.in_flight_elsewhere,
        )

    def _ticks_held(self, job: ClaimableJob, at: datetime, now: datetime) -> int:
        """The ticks an occurrence its tenant's quota held back waited for it: a running tick claims every
        occurrence ahead of its time, so one the tick claims after its time was left by the ticks before (held
        back by the quota, at a tick or at create). Known from the times alone: no write while it waits, and the
        count rides on the claim's own run put."""
        late = now - at
        if not job.held_by_quota or late <= timedelta(0):
            return 0
        return math.ceil(late / self.tick_period)

    def _run_of(self, job: ClaimableJob, occurrence: Occurrence, now: datetime) -> Run:
        base = {"job_id": job.job_id, "tenant": job.tenant, "priority": job.priority}
        if occurrence.deferred is not None and occurrence.deferred.until is not None:
            # Blocked, and run at the block's end: its id and its lateness stay its occurrence's.
            until = occurrence.deferred.until
            return Run(
                id=run_id_for(job.job_id, occurrence.at),
                scheduled_for=until,
                nominal_at=occurrence.at,
                not_before=until,
                status=RunStatus.QUEUED,
                enqueued_at=now,
                deferred=1,
                deferred_reason=DeferReason(occurrence.deferred.reason.value),
                blocked_by=occurrence.deferred.by,
                **base,
            )
        if occurrence.skip_reason is None:
            waited = self._ticks_held(job, occurrence.at, now)
            times: dict[str, Any] = dict(jittered_times(job.job_id, occurrence.at, job.jitter_seconds))
            if job.precise:
                # Sent a little early (tickwork.aws.queues.precise_delay_for): the lease's not_before keeps it on time.
                times = {**times, "not_before": times["scheduled_for"], "start_precision": StartPrecision.PRECISE}
            deadline_at = None
            if job.deadline_seconds is not None:  # from the occurrence's own time, whatever its jitter
                deadline_at = occurrence.at + timedelta(seconds=job.deadline_seconds)
            return Run(
                id=run_id_for(job.job_id, occurrence.at),
                **times,
                **_outlook_fields(job, times["scheduled_for"], deadline_at, now),
                deadline_at=deadline_at,
                status=RunStatus.QUEUED,
                enqueued_at=now,
                deferred=waited,
                deferred_reason=DeferReason.TENANT_RATE if waited else None,
                ordering=job.ordering,
                blocked_by=occurrence.blocked_by,  # a freeze's, ending within the horizon (claim_plan._claimed_through)
                **base,
            )
        return Run(
            id=run_id_for(job.job_id, occurrence.at),
            scheduled_for=occurrence.at,
            status=RunStatus.SKIPPED,
            skip_reason=occurrence.skip_reason,
            skipped_count=occurrence.skipped_count,
            skipped_until=occurrence.skipped_until,
            blocked_by=occurrence.blocked_by,
            finished_at=now,
            **base,
        )


class WorkflowTick(OccurrenceWriter, Protocol):
    """What the tick does for workflows: write their occurrences' workflow runs, and reconcile a RUNNING
    workflow run that is due for it (tickwork.tick.workflow_occurrences)."""

    def reconcile(self, item: DueItem, now: datetime) -> list[Outgoing]: ...


class JobClaimer:
    """Claims the occurrences of a job (or a workflow): their records first, then the job advanced past them."""

    def __init__(
        self,
        jobs: JobRecords,
        runs: RunRecords,
        writers: dict[ItemKind, OccurrenceWriter],
        *,
        faults: FaultPlan,
        fold: ForecastFold | None = None,
    ) -> None:
        self.jobs, self.runs = jobs, runs
        self.writers = writers
        self.faults = faults
        self.completion = JobCompletion(jobs, runs)
        self.fold = fold  # the job's ended runs into its forecasts, on the advance (docs/forecasts.md)

    def claim(
        self,
        job: ClaimableJob,
        now: datetime,
        horizon_end: datetime,
        report: TickReport,
        *,
        max_runs: int | None = None,
    ) -> list[Outgoing]:
        """Record the job's occurrences up to the horizon and advance it past them; return the runs to send.

        `max_runs` (its tenant's rate budget for it) stops after that many queued runs: the job advances only
        past them and stays due for a later tick."""
        writer = self.writers.get(job.kind)
        if writer is None:
            logger.error("nothing claims this kind of item", extra={"job_id": job.job_id, "kind": job.kind.value})
            return []
        outgoing: list[Outgoing] = []
        # Folded once per claim, written by its first advance; its runs' outlook is read from it.
        forecasts = self.fold.folded(job, now) if self.fold is not None else None
        job = job.with_forecasts(forecasts)
        for _ in range(MAX_CLAIM_ROUNDS):
            plan = plan_claim(job, now=now, horizon_end=horizon_end, max_queued=max_runs)
            if plan.waits_until is not None and not plan.occurrences() and plan.next_run_at == job.next_run_at:
                return outgoing  # a deferred occurrence waits for its block's end: nothing changes, nothing written
            written = writer.write(job, plan, now)
            self.faults.reached(CrashPoint.TICK_AFTER_RUN_PUT)
            self._record_skips(written.skipped, report)
            if written.in_flight_elsewhere:
                report.lost_races += 1  # another claimer is on this job right now: the rest is theirs
                return outgoing + written.outgoing
            next_run_at, complete = self._advance_past(job, plan, written.existing)
            # A job completes only once every run of its occurrences has settled: those still open are read
            # before the advance (that leaves the job no next occurrence) and carry its completion on after it.
            still_open = self.runs.open_occurrence_runs(job.job_id) if complete and job.kind is ItemKind.JOB else []
            complete = complete and not still_open
            advanced = self.jobs.advance_job(
                job.job_id,
                expected_version=job.version,
                next_run_at=next_run_at,
                complete=complete,
                now=now,
                probe_at=plan.probe_at,
                queued=len(plan.queued),
                forecasts=forecasts,
            )
            if advanced is None:
                report.lost_races += 1  # another tick moved the job (or it changed): its next claim is theirs
                # Sent without a copy of the job: their executors read it.
                return outgoing + writer.claim_lost(job, written, now)
            # The job as the advance left it, copied into the messages of the runs written before it
            # (tickwork.model.run_spec says why that copy stays true).
            outgoing += _with_job(written.outgoing, advanced)
            self.faults.reached(CrashPoint.TICK_AFTER_JOB_UPDATE)
            if still_open:
                self.completion.complete_or_hand_on(job.job_id, still_open, now)
            elif next_run_at is None and not complete:
                self._complete_if_last_settled(job, plan, written.existing, now)
            report.claimed_jobs += 1
            forecasts = None  # written
            if max_runs is not None:
                max_runs -= len(plan.queued)
            if next_run_at is None or next_run_at > horizon_end or max_runs == 0:
                return outgoing
            job = job.advanced(plan, next_run_at)
        return outgoing

    @staticmethod
    def _advance_past(
        job: ClaimableJob, plan: ClaimPlan, existing: dict[str, dict[str, Any]]
    ) -> tuple[datetime | None, bool]:
        """Where the job moves to: past what the plan's records cover, as written. A capped record another
        claimer wrote first (it died before advancing the job) may end earlier than ours would have, since it
        planned at an earlier `now`: then the job advances only past its end, and the next round records the
        rest, so no occurrence is left without a record."""
        if plan.capped is not None:
            found = existing.get(run_id_for(job.job_id, plan.capped.first))
            if found is not None:
                covered = optional_instant(found.get("skipped_until") or found.get("scheduled_for"))
                if covered is not None and covered != plan.capped.last:
                    return job.next_after(covered), False
        if plan.next_run_at is None and not plan.complete and _last_run_settled(job, plan, existing):
            return None, True  # its last occurrence already ran (a backfill made its run): nothing will settle it
        return plan.next_run_at, plan.complete

    def _complete_if_last_settled(
        self, job: ClaimableJob, plan: ClaimPlan, existing: dict[str, dict[str, Any]], now: datetime
    ) -> None:
        """The job advanced to no next occurrence, and its last occurrence's run was made by someone else before
        this claim (a backfill): that run completes the job when it settles (tickwork.executor.outcomes), but it may
        have settled between this claim's read of it and the advance, while the job still had a next occurrence and
        so could not complete. Read it again, after the advance: settled now, the job completes here (once every
        run of its occurrences has settled: tickwork.progress.job_completion); else its settling sees the job
        advanced."""
        last = _last_queued_id(job, plan)
        if last is None or last not in existing:
            return
        run = self.runs.get_run(last)
        if run is not None and run.status.terminal:
            self.completion.attempt(job.job_id, now)

    @staticmethod
    def _record_skips(skipped: list[SkippedOccurrence], report: TickReport) -> None:
        for skip in skipped:
            report.skipped += skip.count
            metrics.add_metric(name="RunsSkipped", unit="Count", value=skip.count)
            if skip.reason is SkipReason.CIRCUIT_OPEN:  # while any job is SUSPENDED: SuspendedJobsAlarm
                metrics.add_metric(name="RunsSkippedCircuitOpen", unit="Count", value=skip.count)
            logger.info(
                "run skipped",
                extra={
                    "run_id": skip.record_id,
                    "job_id": skip.owner_id,
                    "skip_reason": skip.reason,
                    "skipped_count": skip.count,
                },
            )


def _outlook_fields(job: ClaimableJob, start: datetime, deadline_at: datetime | None, now: datetime) -> dict[str, Any]:
    """A queued run's forecast from its job's (docs/forecasts.md), and its `Deadline At Risk` mark: none before the
    job has a forecast."""
    seen = outlook(job.forecasts.view() if job.forecasts else None, start=start, deadline_at=deadline_at)
    if seen is None:
        return {}
    fields = seen.model_dump(exclude={"deadline_at_risk"})
    return fields | ({"deadline_at_risk_at": now} if seen.deadline_at_risk else {})


def _with_job(outgoing: list[Outgoing], advanced: Advanced) -> list[Outgoing]:
    """A claim round's messages, carrying a copy of the job as its advance left it (tickwork.model.run_spec)."""
    if advanced.job is None:
        return outgoing
    messages = with_specs([o.message for o in outgoing], advanced.job, occurrence_runs=advanced.occurrence_runs)
    return [replace(o, message=m) for o, m in zip(outgoing, messages, strict=True)]


def _last_queued_id(job: ClaimableJob, plan: ClaimPlan) -> str | None:
    """The run id of the plan's last queued occurrence, for a job (a workflow's occurrences are never
    backfilled)."""
    if job.kind is not ItemKind.JOB or not plan.queued:
        return None
    return run_id_for(job.job_id, max(plan.queued))


def _last_run_settled(job: ClaimableJob, plan: ClaimPlan, existing: dict[str, dict[str, Any]]) -> bool:
    """The run of the plan's last occurrence existed before this claim, and had settled."""
    last = _last_queued_id(job, plan)
    found = existing.get(last) if last is not None else None
    return found is not None and RunStatus(found.get("status", RunStatus.QUEUED.value)).terminal
