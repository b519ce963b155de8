"""What a tick did: the runs it claimed, sent, re-sent and held back, as its log line and metrics report them."""

from __future__ import annotations

from dataclasses import dataclass, field

from tickwork.aws.queues import SendReport
from tickwork.tick.fairness import HoldReason

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
    stuck: int = 0  # runs among the entries read that are stuck (tickwork.tick.stuck)
    deadlines_missed: int = 0  # runs whose deadline miss this tick recorded (tickwork.tick.deadlines)
    freeze_events: int = 0  # freeze starts and ends this tick recorded or published (tickwork.progress.freeze_events)
    audit_archived: int = 0  # audit records this tick archived to S3 (tickwork.tick.audit_archive)
    warmed_environments: int = 0  # warming invocations this tick planned before a burst (tickwork.tick.warmup)
    redrive_intents_settled: int = 0  # redrives' audit records left pending, settled (tickwork.tick.redrive_intents)
    pending_audits_settled: int = 0  # audit records dead requests left pending, RegionMode strong only
    expired_deleted: int = 0  # expired items deleted, RegionMode strong only (tickwork.tick.expiry_sweep)
    dispatched_run_ids: list[str] = field(default_factory=list)

    def add_sent(self, sent: SendReport) -> None:
        self.dispatched += len(sent.sent)
        self.dispatched_run_ids.extend(sent.sent)
        self.send_failures += len(sent.failed)
