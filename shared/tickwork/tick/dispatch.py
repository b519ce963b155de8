"""Claim and dispatch: what the tick does every minute, and job creation does when a job is due soon.

`Dispatcher` reads every shard of the due index (in parallel) up to now + horizon and orders what it found: what
must go before the next tick first, then by priority (9 first), then by due time. When the tick's capacity
(MaxDispatchPerTick) or a tenant's rate quota (max_runs_per_minute, one conditional ADD on its window's counter)
holds some back, the slots are shared across tenants by weight within each band, and long-overdue items move up a
band (tickwork.tick.shares, tickwork.tick.fairness); what is held back stays in the due index (no write) for a later
tick, and a run held back by its tenant's quota records the ticks it waited. It then claims each job (tickwork.tick.claimer),
re-sends what was claimed but never leased (tickwork.tick.resender), reconciles RUNNING workflow runs
(tickwork.tick.workflow_occurrences), and sends the claimed runs to their band queues in batches of 10 with
DelaySeconds = ceil(due - now), so a run starts within about a second of its time and never before it
(tickwork.tick.sender). Before it claims, it warms what a burst among the entries it read will need
(tickwork.tick.warmup), when the template turns warm-ups on. `MinuteTick` is the minute rule's entry: the whole claim, or, fanned out, the
coordinator's slices (tickwork.tick.fanout), then the settlement of the dead letters' redrives' audit records left
pending (tickwork.tick.redrive_intents). Once per tick, the whole claim (or the slice with shard 0) also
records and publishes the freezes' starts and ends (tickwork.progress.freeze_events) and archives the audit
records written since the last tick (tickwork.tick.audit_archive).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta

from tickwork.aws.queues import Outgoing, RunQueues, SendReport
from tickwork.faults import NO_FAULTS, FaultPlan
from tickwork.model.claim_plan import ClaimableJob
from tickwork.model.clock import Clock, to_ms
from tickwork.model.ids import ItemKind
from tickwork.model.job import Job
from tickwork.model.messages import DispatchSlice
from tickwork.model.policies import Band
from tickwork.model.run import Run
from tickwork.model.states import JobState, RunStatus
from tickwork.model.tenant_settings import TenantDirectory
from tickwork.model.warmup import WarmupPolicy
from tickwork.model.workflow.definition import Workflow
from tickwork.observability import logger, metrics
from tickwork.progress.freeze_events import FreezeEvents
from tickwork.progress.run_events import RunEvents
from tickwork.settings import DEFAULT_AGING_AFTER_SECONDS
from tickwork.store import DueItem, EventOutbox, JobStore
from tickwork.store.calendars import CalendarRecords
from tickwork.store.deadlines import DeadlineRecords
from tickwork.store.ended_runs import EndedRuns
from tickwork.store.freezes import FreezeReads, FreezeRecords
from tickwork.store.regions import OPEN_FENCE, RegionFence
from tickwork.store.tenant_rates import TenantRates
from tickwork.tick.audit_archive import AuditArchiver
from tickwork.tick.blockers import BlockersUnread, TickBlockers
from tickwork.tick.claimer import JobClaimer, JobRunWriter, OccurrenceWriter, WorkflowTick
from tickwork.tick.deadlines import DeadlineCheck
from tickwork.tick.expiry_sweep import ExpirySweep
from tickwork.tick.fairness import HoldReason
from tickwork.tick.fanout import DispatchCoordinator
from tickwork.tick.forecasts import ForecastFold
from tickwork.tick.pending_audits import PendingAuditSettlement
from tickwork.tick.redrive_intents import RedriveIntents
from tickwork.tick.report import HELD_BACK_METRIC, TickReport
from tickwork.tick.resender import Resender
from tickwork.tick.sender import RunSender, outgoing_for
from tickwork.tick.shares import DispatchShares, claimable_as_of, tenant_of
from tickwork.tick.stuck import stuck_runs
from tickwork.tick.warmup import BurstWarmup

# ---------------------------------------------------------------- the tick

# Fanned out, the dispatch worker whose slice holds this shard also looks at the freezes' events and archives the
# audit records.
FREEZE_EVENTS_SHARD = 0


# One piece over 250 lines: the tick's one path from the due index's shards to the sends, each step a short method;
# what it decides is in its parts already (DispatchShares, the blockers, Resender, RunSender, the RegionFence).
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
        events: RunEvents | None = None,
        calendars: CalendarRecords | None = None,
        freezes: FreezeRecords | None = None,
        audit_archive: AuditArchiver | None = None,
        fence: RegionFence = OPEN_FENCE,
        warmup: BurstWarmup | None = None,
    ) -> None:
        self.store, self.clock, self.warmup = store, clock, warmup or BurstWarmup(WarmupPolicy())  # off: none
        # RegionMode eventual: only the active region claims, and it stops when a failover fences it (docs/regions.md).
        self.fence = fence
        self.audit_archive = audit_archive  # without it (no AUDIT_BUCKET) audit records stay in the table, unexpired
        self.horizon, self.tick_period = horizon, tick_period
        self.max_dispatch, self.threads = max_dispatch, threads
        self.redispatch_after = redispatch_after  # job service: a run it sends is re-sent after this, if unleased
        # Without a directory every tenant has the defaults (weight 1, no quota); without rates no quota holds.
        self.tenants, self.rates = tenants, rates
        self.events = events  # publishes the run events their writers left in the outbox
        deadlines = DeadlineRecords(store.shared_table, shards=store.shards, retention=store.retention)
        self.deadlines = DeadlineCheck(
            store.runs, store.leases, store.jobs, deadlines, EventOutbox(store.shared_table), events
        )
        # Read once per tick (tickwork.tick.blockers): the calendars the due jobs name, and every freeze.
        self.calendars, self.freezes = calendars, FreezeReads(freezes, clock)
        # Freezes that started or ended by themselves since the last tick, and their events left unpublished.
        self.freeze_events = FreezeEvents(freezes, events, faults) if freezes and events else None
        self.shares = DispatchShares(
            tenants, rates, max_dispatch=max_dispatch, tick_period=tick_period, aging_after=aging_after
        )
        job_writer = JobRunWriter(store.runs, redispatch_after=redispatch_after, tick_period=tick_period)
        writers: dict[ItemKind, OccurrenceWriter] = {ItemKind.JOB: job_writer.watched(deadlines, events)}
        if workflows is not None:
            writers[ItemKind.WORKFLOW] = workflows
        self.workflows = workflows
        fold = ForecastFold(EndedRuns(store.shared_table))  # docs/forecasts.md
        self.claimer = JobClaimer(store.jobs, store.runs, writers, faults=faults, fold=fold)
        self.resender = Resender(store.due, queues, redispatch_after=redispatch_after)
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
        if (admitted := self.fence.admit("claim")) is None:
            return TickReport()
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
                report.warmed_environments = self.warmup.before_burst(items, now, shards, self.store.shards)
                self._count_stuck(items, now, report)
                backlogged = self.resender.backlogged_bands(items, now)
                blockers = self._blockers(items)
                chosen, spent = self.shares.choose(items, now, horizon_end, report, blockers)
                # Claim in priority-ordered slices; each slice is sent before the next is claimed.
                step = max(10, self.threads * 5)
                for start in range(0, len(chosen), step):
                    if not self.fence.still(admitted, "claim"):
                        break  # a failover during the tick: it claims and sends no more
                    chunk = chosen[start : start + step]
                    outgoing: list[Outgoing] = []
                    for result in pool.map(
                        lambda a: self._claim_item(
                            a.item, now, horizon_end, report, backlogged, a.max_runs, spent, blockers
                        ),
                        chunk,
                    ):
                        outgoing.extend(result)
                    if not self.fence.still(admitted, "send"):
                        break  # claimed, not sent: the active region's resender sends them (tickwork.tick.resender)
                    self._send(outgoing, report)
        finally:
            for shard in held:
                self.store.due.release_shard(shard, owner=owner)
        if shards is None or FREEZE_EVENTS_SHARD in shards:  # once per tick: the whole claim, or one slice of it
            report.freeze_events = self.publish_freeze_events(read_since=now)
            report.audit_archived = self.archive_audit_records()
        report.duration_ms = int((time.monotonic() - started) * 1000)
        metrics.add_metric(name="TickDurationMs", unit="Milliseconds", value=report.duration_ms)
        logger.info("tick done", extra={k: v for k, v in report.__dict__.items() if k != "dispatched_run_ids"})
        return report

    @staticmethod
    def _count_stuck(items: list[DueItem], now: datetime, report: TickReport) -> None:
        """StuckRuns: the stuck runs among the entries read (tickwork.tick.stuck), every tick, zero included."""
        stuck = stuck_runs(items, now)
        report.stuck = len(stuck)
        metrics.add_metric(name="StuckRuns", unit="Count", value=len(stuck))
        if stuck:
            logger.warning(
                "stuck runs: queued long past their time, or leased with no outcome", extra={"runs": stuck[:50]}
            )

    def _blockers(self, items: list[DueItem]) -> TickBlockers:
        """The calendars the due jobs name, and the freezes, read once for the whole tick (nothing without a due
        job or workflow)."""
        if not any(i.kind.scheduled for i in items):
            return TickBlockers()
        keys = {(tenant_of(i), str(c)) for i in items if i.kind.scheduled for c in (i.attrs.get("calendars") or ())}
        return TickBlockers.read(self.calendars, self.freezes.fresh, keys)

    def _read_shard(self, shard: str, now: datetime, horizon_end: datetime, owner: str) -> list[DueItem]:
        """A shard's actionable entries, if this tick may work it. An idle shard costs one query, no write;
        a shard another tick is working right now is left to it.

        Jobs due within the horizon are claimed ahead (and sent with DelaySeconds). Runs are re-sent once
        their re-send time has passed; a parked retry (RETRYING) is sent ahead like a claimed run."""
        items = self.store.due.actionable(shard, to_ms(now), to_ms(horizon_end), max_items=self.read_per_shard)
        if items and not self.store.due.acquire_shard(shard, owner=owner, now=now, lease_for=self.shard_lease):
            return []
        return items

    def dispatch_job(self, job: Job | Workflow) -> TickReport:
        """Claim and send a newly created job's (or workflow's) occurrences right away when they fall within the
        horizon (RegionMode eventual: only in the active region; elsewhere its tick claims them)."""
        now = self.clock.now()
        if job.state is not JobState.ACTIVE or job.next_run_at is None or job.next_run_at > now + self.horizon:
            return TickReport()
        return self._dispatch_now(ClaimableJob.from_job(job), now)

    def dispatch_due(self, selects: Callable[[DueItem], bool]) -> int:
        """Claim and send, as a job's create does, the jobs (and workflows) due within the horizon that `selects`
        picks from the due index (one Query per shard): those a lifted freeze held waiting. How many claimed."""
        now = self.clock.now()
        until = to_ms(now + self.horizon)
        due = [
            item
            for shard in range(self.store.shards)
            for item in self.store.due.query_due(str(shard), until, runs_status=False)
            if item.kind.scheduled and selects(item)
        ]
        for item in due:
            try:
                self._dispatch_now(item.claimable(), now)
            except Exception:  # the tick claims it
                logger.exception("dispatch failed; the tick will claim it", extra={"job_id": item.attrs.get("job_id")})
        return len(due)

    def _dispatch_now(self, claimable: ClaimableJob, now: datetime) -> TickReport:
        report = TickReport()
        if self.fence.admit("claim at create") is None:
            return report  # RegionMode eventual, and not the active region: the active region's tick claims it
        try:
            keys = {(claimable.tenant, c) for c in claimable.calendars}
            claimable = TickBlockers.read(self.calendars, self.freezes.recent, keys).attach(claimable)
        except BlockersUnread:
            return report  # the tick claims it
        max_runs = self.shares.create_budget(claimable, now, now + self.horizon)
        if max_runs == 0:
            report.held_back_rate = 1  # its tenant's window is spent: the tick claims it in a later window
            metrics.add_metric(name="RunsHeldBack", unit="Count", value=1)
            metrics.add_metric(name=HELD_BACK_METRIC[HoldReason.TENANT_RATE], unit="Count", value=1)
            return report
        outgoing = self.claimer.claim(claimable, now, now + self.horizon, report, max_runs=max_runs)
        self._send(outgoing, report)
        return report

    def _claim_item(
        self,
        item: DueItem,
        now: datetime,
        horizon_end: datetime,
        report: TickReport,
        backlogged: set[Band],
        max_runs: int | None = None,
        spent: dict[str, set[int]] | None = None,
        blockers: TickBlockers | None = None,
    ) -> list[Outgoing]:
        try:
            if item.kind is ItemKind.DEADLINE:
                report.deadlines_missed += self.deadlines.check(item, now)
                return []
            if item.kind is ItemKind.RUN and RunStatus(item.attrs.get("status", "QUEUED")).terminal:
                if self.events is not None:  # a finished run in the index: its run events are not yet published
                    self.events.recover(item.attrs, item.due_at, now)
                return []
            if item.kind is ItemKind.RUN:
                return self.resender.resend(item, now, report, backlogged)
            if item.kind is ItemKind.WORKFLOW_RUN:
                return self.workflows.reconcile(item, now) if self.workflows is not None else []
            job = (blockers or TickBlockers()).attach(claimable_as_of(item, now, spent or {}))
            return self.claimer.claim(job, now, horizon_end, report, max_runs=max_runs)
        except Exception:
            # One bad item must not stop the tick; it stays in the index and is tried again.
            logger.exception("claim failed", extra={"due_item": item.attrs.get("run_id") or item.attrs.get("job_id")})
            return []

    def publish_freeze_events(self, *, read_since: datetime) -> int:
        """The freezes' starts and ends to record and publish (tickwork.progress.freeze_events), from the freezes
        this tick read since `read_since` (one Query more when it had nothing due to claim)."""
        if self.freeze_events is None:
            return 0
        try:
            freezes = self.freezes.read_since(read_since)
        except Exception:
            logger.exception("could not read the freezes; their events wait for a later tick")
            return 0
        return self.freeze_events.catch_up(freezes, self.clock.now())

    def archive_audit_records(self) -> int:
        """The audit records written since the last tick, archived to S3 and released to TTL; how many."""
        if self.audit_archive is None:
            return 0
        try:
            return self.audit_archive.archive_due(self.clock.now())
        except Exception:
            logger.exception("could not read the audit records to archive; a later tick archives them")
            return 0

    def send_runs(self, runs: Iterable[Run]) -> SendReport:
        """Send runs to start now, created outside a tick (trigger, retry, redrive)."""
        now = self.clock.now()
        return self.sender.send([outgoing_for(r, start_at=now) for r in runs])

    def _send(self, outgoing: list[Outgoing], report: TickReport) -> None:
        report.add_sent(self.sender.send(outgoing))


class MinuteTick:
    """What the minute rule starts: the claim itself, or, fanned out, the coordinator handing the shards to the
    dispatch workers (tickwork.tick.fanout), each of which calls `Dispatcher.claim_slice`; then, once a minute
    either way, the settlement of the redrives' audit records left pending (tickwork.tick.redrive_intents) and, in
    RegionMode strong (no TTL, no transactions), the settlement of the audit records dead requests left pending
    (tickwork.tick.pending_audits) and the sweep of expired items (tickwork.tick.expiry_sweep)."""

    def __init__(
        self,
        dispatcher: Dispatcher,
        coordinator: DispatchCoordinator | None,
        redrive_intents: RedriveIntents | None = None,
        expiry_sweep: ExpirySweep | None = None,
        pending_audits: PendingAuditSettlement | None = None,
    ) -> None:
        self.dispatcher, self.coordinator, self.redrive_intents = dispatcher, coordinator, redrive_intents
        self.expiry_sweep, self.pending_audits = expiry_sweep, pending_audits

    def run(self) -> TickReport:
        started = time.monotonic()
        report = self._claim_or_hand_out()
        if self.redrive_intents is not None:
            report.redrive_intents_settled = self.redrive_intents.settle_due()
        if self.pending_audits is not None:
            report.pending_audits_settled = self.pending_audits.settle_due()
        if self.expiry_sweep is not None:
            report.expired_deleted = self.expiry_sweep.sweep(spent_seconds=time.monotonic() - started)
        return report

    def _claim_or_hand_out(self) -> TickReport:
        if self.coordinator is None:
            return self.dispatcher.claim_due_runs()
        started = time.monotonic()
        report = TickReport(slices_sent=self.coordinator.hand_out())
        report.duration_ms = int((time.monotonic() - started) * 1000)
        logger.info("tick handed out its shards", extra={"slices_sent": report.slices_sent})
        return report
