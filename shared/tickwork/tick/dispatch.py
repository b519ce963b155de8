"""Claim and dispatch: what the tick does every minute, and job creation does when a job is due soon.

Four pieces: `JobClaimer` (claims a job's occurrences), `Resender` (re-sends claimed runs nobody leased, and
sends parked retries), `RunSender` (sends to the band queues) and `Dispatcher`, the tick that drives them.

1. Read every shard of the due index (in parallel) up to now + horizon.
2. Order: what must go before the next tick first, then by priority (9 first), then by due time. When the
   tick's capacity (MaxDispatchPerTick) or a tenant's rate quota (max_runs_per_minute, one conditional ADD on
   its window's counter) holds some back, the slots are shared across tenants by weight within each band, and
   long-overdue items move up a band (tickwork.tick.fairness). What is held back stays in the due index (no write)
   and a later tick claims it; a run held back by its tenant's quota records the ticks it waited.
3. Claim each job with two ordered conditional writes, not one transaction: first create its run records
   (each only if it does not exist: the lock on the occurrence), then advance the job from the version read.
   Racing ticks produce each run exactly once (promise 2); a claimer that dies between the two writes is
   completed by the next, which finds the runs and advances the job past exactly what they cover.
4. Send the claimed runs to their band queue in batches of 10 with DelaySeconds = ceil(due - now),
   so a run starts within about a second of its time and never before it.
5. A run that was claimed but never leased (the tick died before sending, or its message was lost) is still
   in the due index; once its re-send time passes, the tick sends it again (nothing lost; the executor's
   lease makes a duplicate message harmless). A leased run keeps its entry until its outcome: were its
   executor to die and its message be stranded (received by an executor that died before its first
   ChangeMessageVisibility: invisible for the queue's 5,400 s), the tick re-sends it once the lease has
   lapsed by redispatch_after; while the lease is live (heartbeats extend it), the entry follows it. While
   the run's band has a backlog at least as large as its overdue runs, their messages may all be waiting in it, so the re-sends wait (up to RESEND_DEFER_LIMIT) rather than multiply the backlog;
   a smaller backlog cannot hold them all, so they are re-sent. A re-sent message is looked after as the first
   was: redispatch_after later (and RESEND_DEFER_LIMIT more if it went into a backlog), whatever the run's age,
   so each recovery is bounded (`one_recovery_bound`), not only the first.
6. A retry whose backoff is too long for a message (see executor) is parked in the due index at its
   retry time; the tick sends it with DelaySeconds like any claimed run.
7. Workflows are claimed as jobs are (their occurrences are workflow runs, written by `WorkflowTick`), and a
   RUNNING workflow run due in the index is reconciled (tickwork.tick.workflow_occurrences).
"""

from __future__ import annotations

import math
import time
import uuid
from collections import Counter
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, Protocol

from tickwork.aws.queues import Outgoing, RunQueues, SendReport
from tickwork.faults import NO_FAULTS, CrashPoint, FaultPlan
from tickwork.model.claim_plan import ClaimableJob, ClaimPlan, Occurrence, plan_claim, runs_to_claim
from tickwork.model.clock import Clock, from_ms, optional_instant, stored_instant, to_ms
from tickwork.model.ids import ItemKind, run_id_for
from tickwork.model.jitter import jittered_times
from tickwork.model.job import Job
from tickwork.model.messages import DispatchSlice
from tickwork.model.policies import Band, StartPrecision
from tickwork.model.run import Run
from tickwork.model.run_spec import with_specs
from tickwork.model.states import DeferReason, JobState, RunStatus, SkipReason
from tickwork.model.tenant_settings import TenantDirectory, TenantSettings, rate_window
from tickwork.model.workflow.definition import Workflow
from tickwork.observability import logger, metrics
from tickwork.progress.job_completion import JobCompletion
from tickwork.settings import DEFAULT_AGING_AFTER_SECONDS
from tickwork.store import DueItem, JobStore
from tickwork.store.jobs import Advanced
from tickwork.store.tenant_rates import TenantRates
from tickwork.tick.fairness import Allocation, Allotted, Candidate, HoldReason, allocate, held_by_quota
from tickwork.tick.fanout import DispatchCoordinator

MAX_CLAIM_ROUNDS = 10  # a 1-second rate job needs several claims to fill a 120 s horizon
# Past this, a run is re-sent even while its band has a backlog. Short: a stranded message (received by an
# executor that died before changing its visibility) is invisible for the queue's 5,400 s, and only the re-send
# brings its run; the soak showed a 15-minute limit making such runs 17 minutes late under steady load.
RESEND_DEFER_LIMIT = timedelta(minutes=2)
DEFER_STEP = timedelta(seconds=60)  # a deferred re-send is looked at again by the next tick


def one_recovery_bound(*, lease_for: timedelta, redispatch_after: timedelta, tick_period: timedelta) -> timedelta:
    """How long after a process dies holding a run (its lease, its message, or its claim) the run is back in an
    executor's hands at most: the lease lapsing, the re-send time, the tick that re-sends it, and a band's
    backlog holding the re-send back."""
    return lease_for + redispatch_after + tick_period + RESEND_DEFER_LIMIT


# Due items a tick held back, by why (the template's dashboard and DispatchCapacityAlarm read these names).
HELD_BACK_METRIC = {HoldReason.CAPACITY: "RunsHeldBackCapacity", HoldReason.TENANT_RATE: "RunsHeldBackTenantRate"}


@dataclass
class TickReport:
    candidates: int = 0
    claimed_jobs: int = 0
    dispatched: int = 0
    skipped: int = 0
    redispatched: int = 0
    resends_deferred: int = 0  # re-sends held back while the run's band has a backlog
    lost_races: int = 0
    send_failures: int = 0
    over_capacity: int = 0  # due items held back by MaxDispatchPerTick (a later tick takes them)
    held_back_rate: int = 0  # due jobs held back by their tenant's max_runs_per_minute (a later tick takes them)
    duration_ms: int = 0
    slices_sent: int = 0  # fan-out: the slices this tick handed to dispatch workers (it claimed nothing itself)
    stale_slices: int = 0  # fan-out: a worker's slice that arrived after the next tick had replaced it
    dispatched_run_ids: list[str] = field(default_factory=list)

    def add_sent(self, sent: SendReport) -> None:
        self.dispatched += len(sent.sent)
        self.dispatched_run_ids.extend(sent.sent)
        self.send_failures += len(sent.failed)


def outgoing_for(run: Run, *, start_at: datetime | None = None) -> Outgoing:
    """A run's message to its band queue; it may start at `start_at`, or else at its scheduled time."""
    return Outgoing.for_run(run, start_at=start_at)


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

    def __init__(self, store: JobStore, *, redispatch_after: timedelta, tick_period: timedelta) -> None:
        self.store = store
        self.redispatch_after = redispatch_after
        self.tick_period = tick_period

    def write(self, job: ClaimableJob, plan: ClaimPlan, now: datetime) -> OccurrenceRecords:
        runs = [self._run_of(job, o, now) for o in plan.occurrences()]
        put = self.store.put_claimed_runs(runs, now=now, redispatch_after=self.redispatch_after)
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
        if occurrence.skip_reason is None:
            waited = self._ticks_held(job, occurrence.at, now)
            times: dict[str, Any] = dict(jittered_times(job.job_id, occurrence.at, job.jitter_seconds))
            if job.precise:
                # Sent a little early (tickwork.aws.queues.precise_delay_for): the lease's not_before keeps it on time.
                times = {**times, "not_before": times["scheduled_for"], "start_precision": StartPrecision.PRECISE}
            return Run(
                id=run_id_for(job.job_id, occurrence.at),
                **times,
                status=RunStatus.QUEUED,
                enqueued_at=now,
                deferred=waited,
                deferred_reason=DeferReason.TENANT_RATE if waited else None,
                **base,
            )
        return Run(
            id=run_id_for(job.job_id, occurrence.at),
            scheduled_for=occurrence.at,
            status=RunStatus.SKIPPED,
            skip_reason=occurrence.skip_reason,
            skipped_count=occurrence.skipped_count,
            skipped_until=occurrence.skipped_until,
            finished_at=now,
            **base,
        )


class WorkflowTick(OccurrenceWriter, Protocol):
    """What the tick does for workflows: write their occurrences' workflow runs, and reconcile a RUNNING
    workflow run that is due for it (tickwork.tick.workflow_occurrences)."""

    def reconcile(self, item: DueItem, now: datetime) -> list[Outgoing]: ...


class JobClaimer:
    """Claims the occurrences of a job (or a workflow): their records first, then the job advanced past them."""

    def __init__(self, store: JobStore, writers: dict[ItemKind, OccurrenceWriter], *, faults: FaultPlan) -> None:
        self.store = store
        self.writers = writers
        self.faults = faults
        self.completion = JobCompletion(store)

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
        for _ in range(MAX_CLAIM_ROUNDS):
            plan = plan_claim(job, now=now, horizon_end=horizon_end, max_queued=max_runs)
            written = writer.write(job, plan, now)
            self.faults.reached(CrashPoint.TICK_AFTER_RUN_PUT)
            self._record_skips(written.skipped, report)
            if written.in_flight_elsewhere:
                report.lost_races += 1  # another claimer is on this job right now: the rest is theirs
                return outgoing + written.outgoing
            next_run_at, complete = self._advance_past(job, plan, written.existing)
            # A job completes only once every run of its occurrences has settled: those still open are read
            # before the advance (that leaves the job no next occurrence) and carry its completion on after it.
            still_open = self.store.open_occurrence_runs(job.job_id) if complete and job.kind is ItemKind.JOB else []
            complete = complete and not still_open
            advanced = self.store.advance_job(
                job.job_id,
                expected_version=job.version,
                next_run_at=next_run_at,
                complete=complete,
                now=now,
                probe_at=plan.probe_at,
                queued=len(plan.queued),
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
        this claim (a backfill): that run completes the job when it settles (tickwork.executor.outcomes), but it may have
        settled between this claim's read of it and the advance, while the job still had a next occurrence and
        so could not complete. Read it again, after the advance: settled now, the job completes here (once every
        run of its occurrences has settled: tickwork.progress.job_completion); else its settling sees the job advanced."""
        last = _last_queued_id(job, plan)
        if last is None or last not in existing:
            return
        run = self.store.get_run(last)
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


# ---------------------------------------------------------------- re-sends


class Resender:
    """Runs in the due index: claimed runs nobody leased (re-sent), and parked retries (sent at their time)."""

    def __init__(self, store: JobStore, queues: RunQueues, *, redispatch_after: timedelta) -> None:
        self.store = store
        self.queues = queues
        self.redispatch_after = redispatch_after

    def backlogged_bands(self, items: list[DueItem], now: datetime) -> set[Band]:
        """Bands whose waiting messages are at least as many as their overdue runs (the runs this tick would
        re-send): all of those runs' messages may be in that backlog. A steady trickle of waiting messages is no
        reason to hold back a re-send (one GetQueueAttributes per band with overdue runs, and none on a tick
        with nothing to re-send)."""
        overdue = Counter(Band.of_priority(i.priority) for i in items if self._overdue(i, now))
        return {band for band, count in overdue.items() if self.queues.waiting_messages(band) >= count}

    def _overdue(self, item: DueItem, now: datetime) -> bool:
        """A run this tick would send again: past its re-send time, not leased (or its lease lapsed by
        redispatch_after)."""
        if item.kind is not ItemKind.RUN or item.due_at > to_ms(now):
            return False
        status = item.attrs.get("status")
        if status == RunStatus.RUNNING.value:
            return to_ms(now) >= self._lease_lapses_at(item)
        return status in (RunStatus.QUEUED.value, RunStatus.RETRYING.value)

    def _lease_lapses_at(self, item: DueItem) -> int:
        return int(item.attrs.get("lease_until_ms", 0)) + int(self.redispatch_after.total_seconds() * 1000)

    def next_look(self, sent_at: datetime, *, into_backlog: bool) -> datetime:
        """When the tick looks again at a run it sends at `sent_at`: as at its first send, redispatch_after later,
        and RESEND_DEFER_LIMIT more if the message went into a backlog that may hold it that long. Never longer
        with the run's age: a message lost again (received by an executor that died before changing its
        visibility, or not sent by a tick that died) is re-sent within one recovery, however old the run."""
        return sent_at + self.redispatch_after + (RESEND_DEFER_LIMIT if into_backlog else timedelta(0))

    def resend(self, item: DueItem, now: datetime, report: TickReport, backlogged: set[Band]) -> list[Outgoing]:
        """A run in the due index: a claimed run nobody leased (re-send it), or a parked retry (send it).

        Its entry is then moved to `next_look`: a run whose message is lost again is re-sent again within one
        recovery, and one whose message merely waits in a backlog is re-sent once per RESEND_DEFER_LIMIT."""
        a = item.attrs
        status = a.get("status")
        if status not in (RunStatus.QUEUED.value, RunStatus.RETRYING.value, RunStatus.RUNNING.value):
            return []
        if status == RunStatus.RUNNING.value:
            # Leased: its executor (or the message's return after the lease) finishes it. Only a lease that has
            # lapsed by redispatch_after with no executor back on it means the message is stranded.
            lapses_at = self._lease_lapses_at(item)
            if to_ms(now) < lapses_at:
                self.store.postpone_redispatch(a["run_id"], expected_due_at=item.due_at, new_due_at=lapses_at)
                return []
        scheduled_for = stored_instant(a["scheduled_for"])
        send_at = max(now, from_ms(item.due_at))
        band = Band.of_priority(item.priority)
        next_look = self.next_look(send_at, into_backlog=band in backlogged)
        # Measured from the run's own re-send time, not from its entry's due_at, which each deferral moves.
        defer_until = scheduled_for + self.redispatch_after + RESEND_DEFER_LIMIT
        if status == RunStatus.QUEUED.value and band in backlogged and now < defer_until:
            # Its message may be waiting in that backlog: a duplicate would only lengthen it. Look again next tick.
            if self.store.postpone_redispatch(
                a["run_id"], expected_due_at=item.due_at, new_due_at=to_ms(min(now + DEFER_STEP, defer_until))
            ):
                report.resends_deferred += 1
            return []
        if not self.store.postpone_redispatch(a["run_id"], expected_due_at=item.due_at, new_due_at=to_ms(next_look)):
            return []  # another tick is sending it, or an executor just leased it
        report.redispatched += 1
        if status == RunStatus.QUEUED.value:
            logger.warning("re-sending a claimed run that no executor leased", extra={"run_id": a["run_id"]})
        elif status == RunStatus.RUNNING.value:
            logger.warning("re-sending a run whose lease lapsed without an outcome", extra={"run_id": a["run_id"]})
        run = Run(
            id=a["run_id"],
            job_id=a["job_id"],
            tenant=a["tenant"],
            scheduled_for=scheduled_for,
            status=RunStatus(status),
            priority=item.priority,
        )
        return [outgoing_for(run, start_at=send_at)]


# ---------------------------------------------------------------- sending


class RunSender:
    """Sends runs to their band queues, each delayed until it may start."""

    def __init__(self, queues: RunQueues, clock: Clock, faults: FaultPlan) -> None:
        self.queues = queues
        self.clock = clock
        self.faults = faults

    def send(self, outgoing: list[Outgoing]) -> SendReport:
        """Send to the band queues; what SQS refuses is reported (it stays in the due index for a re-send)."""
        if not outgoing:
            return SendReport()
        # The delay is computed at the last moment, so time spent claiming never makes a run early.
        now = self.clock.now()
        timed = [o.timed(now) for o in outgoing]
        self.faults.reached(CrashPoint.TICK_BEFORE_SEND)
        sent = self.queues.send(timed)
        self.faults.reached(CrashPoint.TICK_AFTER_SEND)
        if sent.failed:
            # They stay in the due index: the next tick re-sends them after redispatch_after.
            logger.error("SQS refused some messages", extra={"run_ids": sent.failed})
        if sent.sent:
            metrics.add_metric(name="RunsDispatched", unit="Count", value=len(sent.sent))
            lag = [max(0, to_ms(now) - to_ms(o.message.scheduled_for)) for o in timed]
            metrics.add_metric(name="DispatchLagMs", unit="Milliseconds", value=max(lag))
        return sent


# ---------------------------------------------------------------- the tick


class Dispatcher:
    def __init__(
        self,
        store: JobStore,
        queues: RunQueues,
        clock: Clock,
        *,
        horizon: timedelta = timedelta(seconds=120),
        tick_period: timedelta = timedelta(seconds=60),
        redispatch_after: timedelta = timedelta(seconds=30),
        max_dispatch: int = 5000,
        threads: int = 8,
        faults: FaultPlan = NO_FAULTS,
        workflows: WorkflowTick | None = None,
        tenants: TenantDirectory | None = None,
        rates: TenantRates | None = None,
        aging_after: timedelta = timedelta(seconds=DEFAULT_AGING_AFTER_SECONDS),
    ) -> None:
        self.store, self.clock = store, clock
        self.horizon, self.tick_period = horizon, tick_period
        self.max_dispatch, self.threads = max_dispatch, threads
        self.redispatch_after = redispatch_after  # job service: a run it sends is re-sent after this, if unleased
        # Without a directory every tenant has the defaults (weight 1, no quota); without rates no quota holds.
        self.tenants, self.rates = tenants, rates
        self.aging_after = aging_after
        writers: dict[ItemKind, OccurrenceWriter] = {
            ItemKind.JOB: JobRunWriter(store, redispatch_after=redispatch_after, tick_period=tick_period)
        }
        if workflows is not None:
            writers[ItemKind.WORKFLOW] = workflows
        self.workflows = workflows
        self.claimer = JobClaimer(store, writers, faults=faults)
        self.resender = Resender(store, queues, redispatch_after=redispatch_after)
        self.sender = RunSender(queues, clock, faults)
        # Each shard is read oldest first; reading well past the dispatch cap lets priority, not due time,
        # decide what a tick over capacity sends (a shard may hold all of the highest-priority work).
        self.read_per_shard = max(max_dispatch, 1000)
        # Long enough to cover a busy tick, short enough that a dead tick's shards free up by the next one.
        self.shard_lease = max(timedelta(seconds=5), tick_period - timedelta(seconds=5))

    def claim_slice(self, work: DispatchSlice) -> TickReport:
        """A dispatch worker's part of a fanned-out tick (tickwork.tick.fanout): the ordinary claim over its shards.
        A slice the next tick has replaced is dropped: that tick's slices cover the same shards."""
        if work.stale(self.clock.now(), self.tick_period):
            logger.warning("stale dispatch slice dropped", extra={"tick_at": work.tick_at.isoformat()})
            metrics.add_metric(name="DispatchSlicesStale", unit="Count", value=1)
            return TickReport(stale_slices=1)
        return self.claim_due_runs(shards=work.shards(self.store.shards))

    def claim_due_runs(self, shards: Sequence[int] | None = None) -> TickReport:
        """Claim and send what is due in `shards` (all of the due index's unless given: a dispatch worker's
        slice)."""
        started = time.monotonic()
        now = self.clock.now()
        horizon_end = now + self.horizon
        report = TickReport()
        owner = uuid.uuid4().hex
        held: list[str] = []
        try:
            with ThreadPoolExecutor(max_workers=self.threads, thread_name_prefix="claim") as pool:
                names = [str(s) for s in (range(self.store.shards) if shards is None else shards)]
                pages = list(pool.map(lambda s: self._read_shard(s, now, horizon_end, owner), names))
                held = [shard for shard, items in zip(names, pages, strict=True) if items]
                items = [i for page in pages for i in page]
                report.candidates = len(items)
                backlogged = self.resender.backlogged_bands(items, now)
                settings, quotas = self._quotas(items)
                spent = self._spent_windows(items, quotas, now)
                chosen = self._allocate(items, now, horizon_end, report, settings, quotas, spent)
                # Claim in priority-ordered slices; each slice is sent before the next is claimed.
                step = max(10, self.threads * 5)
                for start in range(0, len(chosen), step):
                    chunk = chosen[start : start + step]
                    outgoing: list[Outgoing] = []
                    for result in pool.map(
                        lambda a: self._claim_item(a.item, now, horizon_end, report, backlogged, a.max_runs, spent),
                        chunk,
                    ):
                        outgoing.extend(result)
                    self._send(outgoing, report)
        finally:
            for shard in held:
                self.store.release_shard(shard, owner=owner)
        report.duration_ms = int((time.monotonic() - started) * 1000)
        metrics.add_metric(name="TickDurationMs", unit="Milliseconds", value=report.duration_ms)
        logger.info("tick done", extra={k: v for k, v in report.__dict__.items() if k != "dispatched_run_ids"})
        return report

    def _quotas(self, items: list[DueItem]) -> tuple[dict[str, TenantSettings], dict[str, int]]:
        """The settings of the tenants with items, and the rate quotas among them (none without `rates`). One
        BatchGetItem for the tenants whose settings are not cached."""
        if not items:
            return {}, {}
        settings = self.tenants.settings_for({_tenant_of(i) for i in items}) if self.tenants is not None else {}
        quotas = {
            t: s.max_runs_per_minute
            for t, s in settings.items()
            if s.max_runs_per_minute is not None and self.rates is not None
        }
        return settings, quotas

    def _spent_windows(self, items: list[DueItem], quotas: dict[str, int], now: datetime) -> dict[str, set[int]]:
        """For each rate-limited tenant with a job due in a window before now's, the windows since then in which
        its quota was spent (fairness.held_by_quota). A tenant without a quota, or with nothing late, pays nothing;
        one with late jobs one Query. Unread (DynamoDB refused it): every window counts as spent, so those jobs'
        occurrences run rather than be skipped as missed."""
        rates = self.rates
        late: dict[str, int] = {}  # tenant -> its oldest late job's due time (ms)
        for i in items:
            tenant = _tenant_of(i)
            if i.kind is ItemKind.JOB and tenant in quotas and rate_window(from_ms(i.due_at)) < rate_window(now):
                late[tenant] = min(i.due_at, late.get(tenant, i.due_at))
        spent: dict[str, set[int]] = {}
        if rates is None:
            return spent
        for tenant, due_at in late.items():
            since = from_ms(due_at)
            try:
                spent[tenant] = rates.spent_windows(tenant, limit=quotas[tenant], since=since, now=now)
            except Exception:
                logger.exception("could not read a tenant's spent quota windows", extra={"tenant": tenant})
                spent[tenant] = set(range(rate_window(since), rate_window(now)))
        return spent

    def _allocate(
        self,
        items: list[DueItem],
        now: datetime,
        horizon_end: datetime,
        report: TickReport,
        settings: dict[str, TenantSettings],
        quotas: dict[str, int],
        spent: dict[str, set[int]],
    ) -> list[Allotted[DueItem]]:
        """What this tick acts on, in order (tickwork.tick.fairness): everything in today's order unless the tick's
        capacity or a tenant's rate quota holds some back; then the slots are shared by weight within each band.

        Costs one UpdateItem per tenant with a rate quota and jobs to claim; a tenant without a quota pays
        nothing more."""
        if not items:
            return []
        urgent_ms = to_ms(now + self.tick_period)
        candidates = [
            Candidate(
                item=i,
                tenant=_tenant_of(i),
                priority=i.priority,
                due_at_ms=i.due_at,
                urgent=i.due_at <= urgent_ms,
                # Only claims of new occurrences count against a quota: re-sends and parked retries are
                # recovery of runs already dispatched, and a quota never holds them back.
                cost=self._runs_asked(i, now, horizon_end, spent)
                if i.kind is ItemKind.JOB and _tenant_of(i) in quotas
                else 0,
            )
            for i in items
        ]
        weights = {t: s.weight for t, s in settings.items()}

        def fit(budgets: dict[str, int]) -> Allocation[DueItem]:
            return allocate(
                candidates,
                capacity=self.max_dispatch,
                weights=weights,
                budgets=budgets,
                now_ms=to_ms(now),
                aging_after_ms=int(self.aging_after.total_seconds() * 1000),
            )

        # First as if no quota held, to learn what each rate-limited tenant would get; then reserve that much
        # of its window, and share again within what the reservations granted.
        allocation = fit({})
        if quotas:
            asked: Counter[str] = Counter()
            for a in allocation.chosen:
                if a.candidate.tenant in quotas:
                    asked[a.candidate.tenant] += a.candidate.cost
            budgets = {t: self._reserve(t, asked[t], limit, now) for t, limit in quotas.items()}
            allocation = fit(budgets)  # caps each rate-limited claim by what was reserved for it
        self._report_held(allocation, report)
        return allocation.chosen

    def _runs_asked(self, item: DueItem, now: datetime, horizon_end: datetime, spent: dict[str, set[int]]) -> int:
        """The runs claiming this job would dispatch now. An item that cannot be read as a job asks for one: its
        claim fails on its own (and is logged there) without stopping the tick."""
        try:
            job = _claimable(item, now, spent)
        except Exception:
            return 1
        return runs_to_claim(job, now=now, horizon_end=horizon_end, rounds=MAX_CLAIM_ROUNDS)

    @staticmethod
    def _report_held(allocation: Allocation[DueItem], report: TickReport) -> None:
        held = allocation.held_by_reason
        if not held:
            return
        report.over_capacity = held[HoldReason.CAPACITY]
        report.held_back_rate = held[HoldReason.TENANT_RATE]
        metrics.add_metric(name="RunsHeldBack", unit="Count", value=sum(held.values()))
        for reason, count in held.items():
            metrics.add_metric(name=HELD_BACK_METRIC[reason], unit="Count", value=count)
        # Per tenant in the log, not as metrics: a dimension per tenant would be a metric per tenant.
        logger.warning(
            "more due than this tick dispatches",
            extra={
                "held_back": {r.value: n for r, n in held.items()},
                "held_back_by_tenant": {t: {r.value: n for r, n in c.items()} for t, c in allocation.held.items()},
                "dispatch_share": dict(allocation.shares()),
            },
        )

    def _read_shard(self, shard: str, now: datetime, horizon_end: datetime, owner: str) -> list[DueItem]:
        """A shard's actionable entries, if this tick may work it. An idle shard costs one query, no write;
        a shard another tick is working right now is left to it.

        Jobs due within the horizon are claimed ahead (and sent with DelaySeconds). Runs are re-sent once
        their re-send time has passed; a parked retry (RETRYING) is sent ahead like a claimed run."""
        now_ms = to_ms(now)
        items = [
            i
            for i in self.store.query_due(shard, to_ms(horizon_end), max_items=self.read_per_shard)
            if i.kind.scheduled or i.due_at <= now_ms or i.attrs.get("status") == RunStatus.RETRYING.value
        ]
        if items and not self.store.acquire_shard(shard, owner=owner, now=now, lease_for=self.shard_lease):
            return []
        return items

    def dispatch_job(self, job: Job | Workflow) -> TickReport:
        """Claim and send a newly created job's (or workflow's) occurrences right away when they fall within the
        horizon."""
        report = TickReport()
        now = self.clock.now()
        if job.state is not JobState.ACTIVE or job.next_run_at is None or job.next_run_at > now + self.horizon:
            return report
        claimable = ClaimableJob.from_job(job)
        max_runs = self._create_budget(claimable, now)
        if max_runs == 0:
            report.held_back_rate = 1  # its tenant's window is spent: the tick claims it in a later window
            metrics.add_metric(name="RunsHeldBack", unit="Count", value=1)
            metrics.add_metric(name=HELD_BACK_METRIC[HoldReason.TENANT_RATE], unit="Count", value=1)
            return report
        outgoing = self.claimer.claim(claimable, now, now + self.horizon, report, max_runs=max_runs)
        self._send(outgoing, report)
        return report

    def _create_budget(self, job: ClaimableJob, now: datetime) -> int | None:
        """The runs a job claimed at create may dispatch under its tenant's rate quota (None: no quota)."""
        if self.tenants is None or self.rates is None or job.kind is not ItemKind.JOB:
            return None
        limit = self.tenants.settings_of(job.tenant).max_runs_per_minute
        if limit is None:
            return None
        asked = runs_to_claim(job, now=now, horizon_end=now + self.horizon, rounds=MAX_CLAIM_ROUNDS)
        return self._reserve(job.tenant, asked, limit, now) if asked else None

    def _reserve(self, tenant: str, asked: int, limit: int, now: datetime) -> int:
        """Reserve a rate-limited tenant's runs for this window. A reservation that fails (DynamoDB refused it)
        grants nothing: that tenant's new runs wait for a later tick, and everyone else's go ahead."""
        if not asked or self.rates is None:
            return 0
        try:
            return self.rates.reserve(tenant, want=asked, limit=limit, now=now)
        except Exception:
            logger.exception("could not reserve a tenant's rate quota; its new runs wait", extra={"tenant": tenant})
            return 0

    def _claim_item(
        self,
        item: DueItem,
        now: datetime,
        horizon_end: datetime,
        report: TickReport,
        backlogged: set[Band],
        max_runs: int | None = None,
        spent: dict[str, set[int]] | None = None,
    ) -> list[Outgoing]:
        try:
            if item.kind is ItemKind.RUN:
                return self.resender.resend(item, now, report, backlogged)
            if item.kind is ItemKind.WORKFLOW_RUN:
                return self.workflows.reconcile(item, now) if self.workflows is not None else []
            job = _claimable(item, now, spent or {})
            return self.claimer.claim(job, now, horizon_end, report, max_runs=max_runs)
        except Exception:
            # One bad item must not stop the tick; it stays in the index and is tried again.
            logger.exception("claim failed", extra={"due_item": item.attrs.get("run_id") or item.attrs.get("job_id")})
            return []

    def send_runs(self, runs: Iterable[Run]) -> SendReport:
        """Send runs to start now, created outside a tick (trigger, retry, redrive)."""
        now = self.clock.now()
        return self.sender.send([outgoing_for(r, start_at=now) for r in runs])

    def _send(self, outgoing: list[Outgoing], report: TickReport) -> None:
        report.add_sent(self.sender.send(outgoing))


class MinuteTick:
    """What the minute rule starts: the claim itself, or, fanned out, the coordinator handing the shards to the
    dispatch workers (tickwork.tick.fanout), each of which calls `Dispatcher.claim_slice`."""

    def __init__(self, dispatcher: Dispatcher, coordinator: DispatchCoordinator | None) -> None:
        self.dispatcher, self.coordinator = dispatcher, coordinator

    def run(self) -> TickReport:
        if self.coordinator is None:
            return self.dispatcher.claim_due_runs()
        started = time.monotonic()
        report = TickReport(slices_sent=self.coordinator.hand_out())
        report.duration_ms = int((time.monotonic() - started) * 1000)
        logger.info("tick handed out its shards", extra={"slices_sent": report.slices_sent})
        return report


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


def _claimable(item: DueItem, now: datetime, spent: dict[str, set[int]]) -> ClaimableJob:
    """A due job as this tick claims it: held back by its tenant's quota if a window of it was spent since the
    job's due time (fairness.held_by_quota)."""
    job = item.claimable()
    windows = spent.get(job.tenant)
    if windows and held_by_quota(job.next_run_at, now, windows):
        job = replace(job, held_by_quota=True)
    return job


def _tenant_of(item: DueItem) -> str:
    return str(item.attrs.get("tenant", ""))
