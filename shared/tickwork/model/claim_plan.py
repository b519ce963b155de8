"""The claim plan: what one claim decides for each occurrence of a job, from the job and the time alone.

Pure (no AWS): it takes values only (the store reads a due item into a ClaimableJob, DueItem.claimable); the
claimer writes what the plan decides (see tickwork.tick.claimer).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from tickwork.model.blocking import Block, Blocker, OnBlocked, block_at
from tickwork.model.budget import OCCURRENCES_STEP_BUDGET, StepBudget
from tickwork.model.forecasts import JobForecasts
from tickwork.model.ids import ItemKind
from tickwork.model.job import Job
from tickwork.model.policies import BreakerState, CatchupPolicy, OrderingKey, StartPrecision, run_ordering
from tickwork.model.schedule import Schedule
from tickwork.model.states import JobState, SkipReason
from tickwork.model.workflow.definition import Workflow

MAX_RUNS_PER_CLAIM = 25  # run records one claim creates before it advances the job
MISFIRE_RECORD_CAP = 10  # skipped occurrences recorded one by one; the rest of a stretch share one capped record
MISFIRE_COUNT_LIMIT = 10_000  # beyond this the capped record's count is a lower bound (its range stays exact)
# An occurrence is missed when a claim first sees it later than this after its time. A running tick claims
# every occurrence ahead of its time (its horizon), so only an outage, a deploy or a job held back longer than
# a tick period meets the catch-up policy; a claim a few seconds late does not.
CATCHUP_TOLERANCE = timedelta(seconds=60)
# How long after its time a run claimed before its job's breaker opened may still arrive and become the probe
# (probe_of): past it, the claim names the probe itself.
QUEUED_PROBE_WAIT = timedelta(minutes=2)
# The most missed occurrences catch-up ALL runs (the most recent ones, within the misfire grace, in order).
CATCHUP_ALL_CAP = 100
# How many of the missed occurrences within the grace each policy runs (the most recent ones).
CATCHUP_KEEP = {CatchupPolicy.NONE: 0, CatchupPolicy.LATEST: 1, CatchupPolicy.ALL: CATCHUP_ALL_CAP}
# The most occurrences of one deferred stretch a plan walks to find the ones its catch-up policy keeps; past it
# the rest of the stretch is one capped skip record and none of it runs.
DEFER_WALK_LIMIT = 100_000


@dataclass(frozen=True)
class CappedMisfire:
    first: datetime
    last: datetime
    count: int
    reason: SkipReason


@dataclass(frozen=True)
class Occurrence:
    """One record a claim writes: an occurrence that runs (no skip reason), or one recorded skipped (a capped
    record stands for `skipped_count` of them, up to `skipped_until`)."""

    at: datetime
    skip_reason: SkipReason | None = None
    skipped_count: int | None = None
    skipped_until: datetime | None = None
    blocked_by: str | None = None  # the calendar or freeze that blocked it (skipped, or deferred)
    deferred: Block | None = None  # blocked and deferred: it runs at the block's end (`on_blocked: DEFER`)


@dataclass(frozen=True)
class ClaimPlan:
    queued: list[datetime]
    skipped: list[tuple[datetime, SkipReason]]
    capped: CappedMisfire | None
    next_run_at: datetime | None
    complete: bool  # a recurring schedule with no occurrence left
    probe_at: datetime | None = None  # the open breaker's probe run, queued by this plan (half-open)
    # Blocked occurrences (tickwork.model.blocking): what blocked each, and when each deferred one runs.
    blocked_by: dict[datetime, str] = field(default_factory=dict)
    deferred: dict[datetime, Block] = field(default_factory=dict)
    # The plan stopped at a deferred occurrence whose block ends past the horizon: nothing to write, the job
    # stays due where it is (no write) until a tick's horizon reaches this instant.
    waits_until: datetime | None = None

    def occurrences(self) -> list[Occurrence]:
        """Every record the plan writes, in time order, so that the first is the one a racing claimer meets
        first."""
        found = [Occurrence(at) for at in self.queued] + [Occurrence(at, reason) for at, reason in self.skipped]
        if self.capped is not None:
            c = self.capped
            found.append(Occurrence(c.first, c.reason, skipped_count=c.count, skipped_until=c.last))
        found = [replace(o, blocked_by=self.blocked_by.get(o.at), deferred=self.deferred.get(o.at)) for o in found]
        return sorted(found, key=lambda o: o.at)


@dataclass(frozen=True)
class ClaimableJob:
    """What a claim needs to know of a job: exactly what the due index projects."""

    job_id: str
    tenant: str
    priority: int
    schedule: Schedule
    version: int
    next_run_at: datetime
    created_at: datetime
    misfire_grace: timedelta
    paused_at: datetime | None = None
    resumed_at: datetime | None = None
    kind: ItemKind = ItemKind.JOB  # a job's occurrences are runs; a workflow's, workflow runs
    # Its tenant's rate quota held it back (fairness.held_by_quota): an occurrence claimed after its time waited
    # for that quota, is not missed, and its run records so (tickwork.tick.claimer.JobRunWriter). A quota that held
    # nothing back changes nothing: the job is then late for another reason, and catch-up applies.
    held_by_quota: bool = False
    # Jobs default to LATEST; a workflow has no catch-up field and keeps running what its grace allows (ALL).
    catchup: CatchupPolicy = CatchupPolicy.ALL
    state: JobState = JobState.ACTIVE
    breaker: BreakerState | None = None  # while SUSPENDED
    jitter_seconds: int = 0  # each run starts this much later at most (tickwork.model.jitter)
    precise: bool = False  # StartPrecision.PRECISE: its runs are sent a little early and waited out
    deadline_seconds: int | None = None  # its deadline's within_seconds: each run records its deadline_at
    ordering: OrderingKey | None = None  # its runs' ordering key (tickwork.model.policies.run_ordering)
    calendars: tuple[str, ...] = ()  # the ids of its calendars, as the due index projects them
    on_blocked: OnBlocked = OnBlocked.SKIP
    tags: tuple[tuple[str, str], ...] = ()  # what a freeze's tag selector matches
    # Its calendars as read for this claim (in its own order) and the freezes over it: attached by the tick.
    blockers: tuple[Blocker, ...] = ()
    # Its forecasts as stored (tickwork.model.forecasts): the claim folds its ended runs in and gives each run it
    # queues its outlook from them. None: none yet.
    forecasts: JobForecasts | None = None
    notify: tuple[str, ...] | None = None  # the run events it publishes (None: the default)

    @property
    def suspended(self) -> bool:
        return self.state is JobState.SUSPENDED and self.breaker is not None

    def advanced(self, plan: ClaimPlan, next_run_at: datetime) -> ClaimableJob:
        """The job as its advance past `plan` left it: the next claim round's."""
        breaker = self.breaker
        if plan.probe_at is not None and breaker is not None:
            breaker = breaker.model_copy(update={"probe_at": plan.probe_at})
        return replace(self, version=self.version + 1, next_run_at=next_run_at, breaker=breaker)

    def with_forecasts(self, forecasts: JobForecasts | None) -> ClaimableJob:
        return self if forecasts is None else replace(self, forecasts=forecasts)

    @classmethod
    def from_job(cls, job: Job | Workflow) -> ClaimableJob:
        """A job's, or a workflow's: both carry the same lifecycle and claim fields."""
        assert job.next_run_at is not None
        return cls(
            job_id=job.id,
            tenant=job.tenant,
            priority=job.priority,
            schedule=job.schedule,
            version=job.version,
            next_run_at=job.next_run_at,
            created_at=job.created_at,
            misfire_grace=timedelta(seconds=job.misfire_grace_seconds),
            paused_at=job.paused_at,
            resumed_at=job.resumed_at,
            kind=ItemKind.WORKFLOW if isinstance(job, Workflow) else ItemKind.JOB,
            catchup=job.catchup if isinstance(job, Job) else CatchupPolicy.ALL,
            state=job.state,
            breaker=job.breaker if isinstance(job, Job) else None,
            jitter_seconds=job.jitter_seconds if isinstance(job, Job) else 0,
            precise=isinstance(job, Job) and job.start_precision is StartPrecision.PRECISE,
            deadline_seconds=job.deadline.within_seconds if isinstance(job, Job) and job.deadline else None,
            ordering=run_ordering(job.ordering, job.overlap, job.id) if isinstance(job, Job) else None,
            calendars=tuple(job.calendars),
            on_blocked=job.on_blocked,
            tags=tuple(sorted(job.tags.items())),
            notify=tuple(job.notify) if isinstance(job, Job) and job.notify is not None else None,
        )

    def block_at(self, instant: datetime, work: StepBudget | None = None) -> Block | None:
        """The block on its occurrence at `instant` (None: it may run), the cron steps it took counted in
        `work` (no limit there: the caller stops once it is spent)."""
        if not self.blockers:
            return None
        budget = StepBudget()
        try:
            return block_at(instant, self.blockers, budget)
        finally:
            if work is not None:
                work.spent += budget.spent

    def next_after(self, instant: datetime) -> datetime | None:
        return self.schedule.next_after(instant, anchor=self.created_at, hash_key=self.job_id)

    def occurrences_from(self, instant: datetime) -> Iterator[datetime]:
        """Occurrences at or after `instant`, in order, from one schedule iterator."""
        return self.schedule.iter_after(
            instant - timedelta(milliseconds=1), anchor=self.created_at, hash_key=self.job_id
        )


def catchup_start(job: ClaimableJob, *, grace_cut: datetime, late_cut: datetime) -> datetime:
    """The earliest missed occurrence that still runs under the job's catch-up policy: the policy's number of
    most recent missed ones (before `late_cut`, within the grace, not paused) run; earlier missed ones do not.
    `late_cut` when none runs. Walks only the missed occurrences within the grace (bounded by the grace)."""
    keep = CATCHUP_KEEP[job.catchup]
    if keep == 0:
        return late_cut
    kept: deque[datetime] = deque(maxlen=keep)
    for at in job.occurrences_from(max(job.next_run_at, grace_cut)):
        if at >= late_cut:
            break
        if not (job.paused_at and job.resumed_at and job.paused_at <= at < job.resumed_at):
            kept.append(at)
    return kept[0] if kept else late_cut


def probe_of(job: ClaimableJob, grace_cut: datetime, now: datetime) -> datetime | None:
    """An open breaker's probe: its first occurrence from the end of the cooldown (not one past the grace),
    unless a claim queued it already. None: no probe is due from this job.

    A run claimed before the breaker opened and due from the cooldown's end is already on its way: the executor
    makes the first such run to arrive the probe (CircuitBreakers.elect_queued_probe), so that the probe follows
    the cooldown, not the claim horizon. The claim names none meanwhile, unless that run should have arrived
    QUEUED_PROBE_WAIT ago (a fallback that keeps the breaker live whatever became of it)."""
    if not job.suspended:
        return None
    assert job.breaker is not None
    if job.breaker.probe_at is not None:
        return None
    queued_first = next(job.occurrences_from(job.breaker.opens_until), None)
    if queued_first is not None and queued_first < job.next_run_at and queued_first > now - QUEUED_PROBE_WAIT:
        return None
    start = max(job.next_run_at, job.breaker.opens_until, grace_cut)
    return next(job.occurrences_from(start), None)


def plan_claim(job: ClaimableJob, *, now: datetime, horizon_end: datetime, max_queued: int | None = None) -> ClaimPlan:
    """Decide every occurrence from job.next_run_at up to the horizon: queue it, or record it skipped.

    `max_queued` (the tenant's rate budget left) stops the plan after that many queued runs: the job advances
    only past them and stays due for the rest.

    Skipped, never run: an occurrence older than the job's misfire grace (`misfired`), a missed occurrence
    (more than CATCHUP_TOLERANCE late) that its catch-up policy does not run (`misfired` too: it is missed and
    not run, and one reason keeps one capped record per stretch), and every occurrence that fell while the job
    was paused (`paused`), however recent, so resuming never fires a burst. While the job is SUSPENDED (its
    circuit breaker open), every occurrence is `circuit_open` but one: the first from the end of the cooldown,
    its probe (`probe_at`); a `circuit_open` record is made only once its instant has come (the plan stops
    before the first one still to come). Each
    skipped occurrence gets a record, up to MISFIRE_RECORD_CAP one by one; the rest of the same stretch share
    one capped record (count and last instant), so catching up is bounded work and nothing is dropped.
    One schedule iterator serves the whole plan (a per-second cron after a long outage walks thousands).
    """
    grace_cut = now - job.misfire_grace
    late_cut = now - CATCHUP_TOLERANCE
    # Occurrences its tenant's quota held back are late on purpose, not missed: they all run.
    catch_up = not job.held_by_quota and job.next_run_at < late_cut and not job.suspended
    # Missed occurrences before this are not run (computed only when something was missed).
    run_from = catchup_start(job, grace_cut=grace_cut, late_cut=late_cut) if catch_up else grace_cut
    probe = probe_of(job, grace_cut, now)
    horizon_stop = horizon_end + timedelta(milliseconds=1)

    blocked_by: dict[datetime, str] = {}
    # Its calendars' work for this whole plan: past OCCURRENCES_STEP_BUDGET the plan stops where it is.
    calendar_work = StepBudget(OCCURRENCES_STEP_BUDGET)
    blocks: dict[datetime, Block | None] = {}

    def block_of(instant: datetime) -> Block | None:
        if instant not in blocks:
            blocks[instant] = job.block_at(instant, calendar_work)
        return blocks[instant]

    def skip_reason(instant: datetime) -> SkipReason | None:
        if job.paused_at and job.resumed_at and job.paused_at <= instant < job.resumed_at:
            return SkipReason.PAUSED
        block = block_of(instant)
        if block is not None:  # with DEFER, the loop below takes it first
            blocked_by[instant] = block.by
            return block.reason
        if instant < max(grace_cut, run_from):
            return SkipReason.MISFIRED
        if job.suspended and instant != probe:
            return SkipReason.CIRCUIT_OPEN
        return None

    # An open breaker's skips are recorded as their time comes, never ahead: a resume (or a closing probe) in
    # the meantime must find the occurrences after it unclaimed, so they run; a record made ahead would say
    # `circuit_open` for an instant at which the breaker was closed.
    circuit_stop = min(horizon_stop, now + timedelta(milliseconds=1))

    def skip_stop(reason: SkipReason) -> datetime:
        # A freeze's skips too: lifted early, the occurrences after the lift must find themselves unclaimed.
        return circuit_stop if reason in (SkipReason.CIRCUIT_OPEN, SkipReason.FREEZE) else horizon_stop

    def stretch_end(reason: SkipReason, instant: datetime) -> datetime:
        """Where a stretch of skips with this reason ends (exclusive)."""
        if reason is SkipReason.PAUSED:
            assert job.resumed_at is not None
            return job.resumed_at
        if reason is SkipReason.CIRCUIT_OPEN:
            return probe if probe is not None and instant < probe else circuit_stop
        if reason in (SkipReason.CALENDAR, SkipReason.FREEZE):
            block = block_of(instant)
            return block.until if block is not None and block.until is not None else horizon_stop
        end = max(grace_cut, run_from)
        if job.paused_at and job.resumed_at and instant < job.paused_at < end:
            return job.paused_at
        return end

    queued: list[datetime] = []
    skipped: list[tuple[datetime, SkipReason]] = []
    capped: CappedMisfire | None = None
    deferred: dict[datetime, Block] = {}
    waits_until: datetime | None = None
    occurrences = job.occurrences_from(job.next_run_at)
    cursor = next(occurrences, None)
    room = MAX_RUNS_PER_CLAIM if max_queued is None else max_queued
    while (
        cursor is not None
        and cursor <= horizon_end
        and len(queued) + len(skipped) < MAX_RUNS_PER_CLAIM
        and len(queued) < room
        and not calendar_work.spent_all
    ):
        block = block_of(cursor)
        if block is not None and not block.deferred(job.on_blocked):
            block = None  # skipped: below, as any skip
        if block is not None and not (job.paused_at and job.resumed_at and job.paused_at <= cursor < job.resumed_at):
            if block.until is None or block.until > horizon_end:
                waits_until = block.until
                break  # it runs once its block ends: the job stays due here, unwritten
            stretch = _deferred_stretch(job, cursor, occurrences, block, room=MISFIRE_RECORD_CAP - len(skipped))
            for at in stretch.kept:
                queued.append(at)
                deferred[at] = block
            skipped += [(at, block.reason) for at in stretch.skipped]
            for at in [*stretch.kept, *stretch.skipped] + ([stretch.capped.first] if stretch.capped else []):
                blocked_by[at] = block.by
            occurrences, cursor = stretch.occurrences, stretch.cursor
            if stretch.capped is not None:
                capped = stretch.capped
                break
            continue
        reason = skip_reason(cursor)
        if reason is not None and cursor >= skip_stop(reason):
            if reason is SkipReason.FREEZE and _claimed_through(job, cursor, horizon_end):
                queued.append(cursor)  # blocked_by the freeze: its executor skips it, or runs it if lifted
                cursor = next(occurrences, None)
                continue
            if reason is SkipReason.FREEZE:
                waits_until = cursor  # nothing to write until then
            break  # an open breaker's (or a freeze's) occurrence still to come: the job stays due for it
        if reason is None:
            queued.append(cursor)
        elif len(skipped) < MISFIRE_RECORD_CAP:
            skipped.append((cursor, reason))
        else:
            # Over the cap: one record stands for the rest of this stretch of skips.
            first, last, count = cursor, cursor, 0
            while (
                cursor is not None
                and cursor < skip_stop(reason)
                and not calendar_work.spent_all
                and skip_reason(cursor) is reason
                and count < MISFIRE_COUNT_LIMIT
            ):
                last, count = cursor, count + 1
                cursor = next(occurrences, None)
            if (
                cursor is not None
                and cursor < skip_stop(reason)
                and not calendar_work.spent_all
                and skip_reason(cursor) is reason
            ):
                # Too many to count: jump to the stretch's end; the record's range still covers them all.
                end = stretch_end(reason, cursor)
                last = end - timedelta(milliseconds=1)
                occurrences = job.occurrences_from(end)
                cursor = next(occurrences, None)
            capped = CappedMisfire(first, last, count, reason)
            break
        cursor = next(occurrences, None)
    return ClaimPlan(
        queued=queued,
        skipped=skipped,
        capped=capped,
        next_run_at=cursor,
        # Settled now only when the last occurrence is a skip record; a queued last run completes the job
        # when it settles (executor), so a job never shows COMPLETED while its last runs are still to come.
        complete=cursor is None and not queued,
        probe_at=probe if probe is not None and probe in queued else None,
        blocked_by=blocked_by,
        deferred=deferred,
        waits_until=waits_until,
    )


def _claimed_through(job: ClaimableJob, instant: datetime, horizon_end: datetime) -> bool:
    """Whether a job's occurrence still to come that a freeze (SKIP) blocks is claimed now rather than waited for:
    when the freeze ends within the horizon, so that the occurrences after its end are claimed by this plan and
    start on time, not at the next tick's. It is claimed as a run marked by the freeze (`blocked_by`), as the
    freeze's creation marks the runs claimed before it: its executor records it SKIPPED `freeze` at its time,
    or runs it if the freeze was lifted meanwhile (tickwork.executor.freeze_gate). A freeze ending later is
    waited for, recording each skip as its time comes (no run, no message). A workflow's occurrence is always
    waited for: its executor has no such gate; so is a SUSPENDED job's (its breaker's probe is one of them)."""
    block = job.block_at(instant)
    return (
        job.kind is ItemKind.JOB
        and not job.suspended
        and block is not None
        and block.reason is SkipReason.FREEZE
        and block.until is not None
        and block.until <= horizon_end
    )


@dataclass(frozen=True)
class _Stretch:
    kept: list[datetime]
    skipped: list[datetime]
    capped: CappedMisfire | None
    occurrences: Iterator[datetime]
    cursor: datetime | None


def _deferred_stretch(
    job: ClaimableJob, first: datetime, occurrences: Iterator[datetime], block: Block, *, room: int
) -> _Stretch:
    """The occurrences from `first` up to the end of its block (every one of them blocked), collapsed by the
    job's catch-up policy: its number of the latest ones run at the block's end (kept); the rest are recorded
    skipped with the block's reason, `room` of them one by one and the others as one capped record. So the end
    of a freeze or a window never bursts more than the policy allows."""
    assert block.until is not None
    keep = CATCHUP_KEEP[job.catchup]
    kept: deque[datetime] = deque(maxlen=keep) if keep else deque(maxlen=0)
    early: list[datetime] = []
    over: list[datetime] = []  # first and last beyond `room`
    over_count = 0
    cursor: datetime | None = first
    walked = 0
    while cursor is not None and cursor < block.until and walked < DEFER_WALK_LIMIT:
        pushed = kept[0] if keep and len(kept) == keep else (cursor if not keep else None)
        if keep:
            kept.append(cursor)
        if pushed is not None:
            if len(early) < room:
                early.append(pushed)
            else:
                over = [over[0] if over else pushed, pushed]
                over_count += 1
        walked += 1
        cursor = next(occurrences, None)
    if cursor is not None and cursor < block.until:
        # Too many to walk: the rest of the stretch is one record, and none of it runs.
        for at in kept:
            if len(early) < room:
                early.append(at)
            else:
                over = [over[0] if over else at, at]
                over_count += 1
        kept.clear()
        over = [over[0] if over else cursor, block.until - timedelta(milliseconds=1)]
        over_count = max(over_count, MISFIRE_COUNT_LIMIT)
        occurrences = job.occurrences_from(block.until)
        cursor = next(occurrences, None)
    capped = CappedMisfire(over[0], over[1], over_count, block.reason) if over else None
    return _Stretch(list(kept), early, capped, occurrences, cursor)


def runs_to_claim(job: ClaimableJob, *, now: datetime, horizon_end: datetime, rounds: int) -> int:
    """How many runs claiming the job now would queue (over up to `rounds` claim rounds, as the claimer makes):
    what a rate-limited tenant's job asks of its budget. Skips are records, not runs, and cost nothing."""
    total = 0
    for _ in range(rounds):
        plan = plan_claim(job, now=now, horizon_end=horizon_end)
        total += len(plan.queued)
        if plan.next_run_at is None or plan.next_run_at > horizon_end:
            break
        job = replace(job, next_run_at=plan.next_run_at)
    return total
