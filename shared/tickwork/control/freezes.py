"""Freezes as the API sees them: create (a tenant its own jobs; an admin every tenant's), list, read, lift.

A new freeze reaches the occurrences the tick claims after it (tickwork.tick.blockers); the scheduled runs already
claimed inside it and not yet started (the tick claims up to its horizon, 2 minutes, ahead; which runs a freeze
may hold back: tickwork.model.freezes.subject_to_freezes) are marked here, once, at its creation, and their
executor looks at the freeze when they would start (tickwork.executor.freeze_gate): skipped `freeze` while it
holds, or with DEFER kept for its end as the job's catch-up policy allows; run once it is lifted. A run this
marking cannot see (a racing tick's, or one the due index does not show yet) is caught by its executor instead.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from tickwork.control.audit import AuditTrail
from tickwork.control.callers import Caller
from tickwork.executor.outcomes import MAX_MESSAGE_BACKOFF_SECONDS
from tickwork.model.audit import Attribution, AuditResource
from tickwork.model.blocking import OnBlocked
from tickwork.model.claim_plan import CATCHUP_KEEP
from tickwork.model.clock import Clock, optional_instant, to_ms
from tickwork.model.errors import Conflict, Forbidden, NotFound
from tickwork.model.freezes import EVERY_TENANT, Freeze, FreezeSpec, subject_to_freezes
from tickwork.model.ids import ItemKind, is_job_id, new_job_id
from tickwork.model.job import Job
from tickwork.model.policies import CatchupPolicy
from tickwork.model.run import Run
from tickwork.model.run_event_kinds import RunEventKind
from tickwork.model.states import DeferReason, RunStatus
from tickwork.observability import logger
from tickwork.progress.freeze_events import FreezeEvents
from tickwork.progress.run_events import OUTBOX_GRACE
from tickwork.store import DueItem, JobStore, job_key
from tickwork.store.freezes import FreezeRecords, StoredFreeze


@dataclass(frozen=True)
class FreezeService:
    records: FreezeRecords
    store: JobStore  # the due index (claimed runs) and the jobs they are of
    clock: Clock
    horizon: timedelta  # how far ahead the tick claims
    redispatch_after: timedelta  # how long after its time an unleased run is sent again
    # This environment's creates then read the freezes afresh (tickwork.store.freezes.FreezeReads).
    forget_read: Callable[[], None] = lambda: None
    events: FreezeEvents | None = None  # publishes `Freeze Started` and `Freeze Ended`
    # Claims and sends now, as a create does, the due jobs a picker selects (tickwork.tick.dispatch.Dispatcher).
    dispatch_due: Callable[[Callable[[DueItem], bool]], int] | None = None
    # Sends runs to start now (tickwork.tick.dispatch.Dispatcher.send_runs): the runs a lift lets go.
    send_runs: Callable[[list[Run]], object] | None = None
    audit: AuditTrail | None = None  # each change's record, in the change's own write

    def create(self, caller: Caller, spec: FreezeSpec, *, by: Attribution | None = None) -> Freeze:
        if spec.every_tenant and not caller.admin:
            raise Forbidden("freezing every tenant is an admin's (the tickwork-admin role or an admin key)")
        now = self.clock.now()
        start, end = spec.window(now)
        freeze = Freeze(
            id=new_job_id(to_ms(now), prefix="f"),
            tenant=EVERY_TENANT if spec.every_tenant else caller.tenant,
            selector=spec.selector,
            from_=start,
            until=end,
            reason=spec.reason,
            on_blocked=spec.on_blocked,
            created_at=now,
        )
        # Starting now (or in the past), its start is recorded by the put itself, and published once the runs it
        # holds back are marked (were the publish lost, the tick publishes it from the freeze's outbox).
        publish_by = now + OUTBOX_GRACE if self.events is not None and start <= now else None
        audit = self._audit(by, caller, "create", freeze, after=freeze)
        if not self.records.put_new(freeze, started_publish_by=publish_by, audit=audit):
            raise Conflict(f"freeze {freeze.id} exists already")  # pragma: no cover - 75 random bits
        self.forget_read()
        held = self._hold_back_claimed(freeze, now)
        if self.events is not None and publish_by is not None:
            self.events.recorded(freeze, RunEventKind.FREEZE_STARTED, publish_by)
        logger.info(
            "freeze created",
            extra={"freeze_id": freeze.id, "tenant": freeze.tenant, "until": end.isoformat(), "held_back": held},
        )
        return freeze

    def visible_to(self, caller: Caller) -> list[Freeze]:
        """The caller's freezes and those over every tenant (an admin: all), newest first."""
        found = [f for f in self.records.all() if caller.admin or f.tenant in (caller.tenant, EVERY_TENANT)]
        return sorted(found, key=lambda f: f.created_at, reverse=True)

    def over_job(self, job: Job) -> list[Freeze]:
        """The freezes over `job` (its tenant's, and those over every tenant, that select it), as its claim reads
        them: what its preview marks beside its calendars."""
        return [f for f in self.records.all() if f.applies_to(job.tenant, job.id, job.tags)]

    def get(self, caller: Caller, freeze_id: str) -> Freeze:
        return self._stored(caller, freeze_id).freeze

    def _stored(self, caller: Caller, freeze_id: str) -> StoredFreeze:
        stored = self.records.get_stored(freeze_id)
        if stored is None or not (caller.admin or stored.freeze.tenant in (caller.tenant, EVERY_TENANT)):
            raise NotFound(f"freeze {freeze_id} not found")
        return stored

    def lift(self, caller: Caller, freeze_id: str, *, by: Attribution | None = None) -> Freeze:
        """Ends it now: the occurrences from now on run, its jobs due within the horizon claimed at once (those it
        skipped stay skipped; with DEFER, the ones it held run now, collapsed by catch-up). One that had started publishes `Freeze Ended` (and its
        `Freeze Started` first, if no tick has seen it start yet); one lifted before its `from` publishes neither."""
        stored = self._stored(caller, freeze_id)
        freeze = stored.freeze
        if freeze.tenant == EVERY_TENANT and not caller.admin:
            raise Forbidden("a freeze over every tenant is lifted by an admin")
        now = self.clock.now()
        lifted = freeze.model_copy(update={"lifted_at": now, "lifted_by": caller.tenant})
        publish_by = now + OUTBOX_GRACE if self.events is not None and lifted.starts else None
        if self.events is not None and publish_by is not None:
            for kind in stored.events_due(now):  # what no tick has seen yet: its start (or its end, then no lift)
                self.events.record(freeze, kind, now)
        audit = self._audit(by, caller, "lift", freeze, before=freeze, after=lifted)
        if not self.records.lift(freeze, now, by=caller.tenant, ended_publish_by=publish_by, audit=audit):
            raise Conflict(f"freeze {freeze_id} has ended already")
        self.forget_read()
        logger.info("freeze lifted", extra={"freeze_id": freeze_id, "lifted_by": caller.tenant})
        self._dispatch_held(lifted)
        self._release_held(freeze, now)
        if self.events is not None and publish_by is not None:
            self.events.recorded(lifted, RunEventKind.FREEZE_ENDED, publish_by)
        return lifted

    def _audit(
        self,
        by: Attribution | None,
        caller: Caller,
        verb: str,
        freeze: Freeze,
        *,
        before: Freeze | None = None,
        after: Freeze | None = None,
    ) -> dict[str, Any] | None:
        """The audit item of a freeze's change, in the caller's tenant (a freeze over every tenant is an admin's)."""
        if self.audit is None:
            return None
        resource = AuditResource(kind="freeze", id=freeze.id)
        return self.audit.item(
            by, tenant=caller.tenant, action=f"freeze.{verb}", resource=resource, before=before, after=after
        )

    def _dispatch_held(self, lifted: Freeze) -> None:
        """The jobs it selects that are due within the horizon, claimed now: a job whose next occurrence it
        blocked waits for the freeze (nothing claimed past it), and would otherwise start late, at the next tick.
        The lift is stored: a dispatch that fails leaves them to that tick."""
        if self.dispatch_due is None:
            return
        try:
            self.dispatch_due(
                lambda item: lifted.applies_to(
                    str(item.attrs.get("tenant")), str(item.attrs.get("job_id")), item.attrs.get("tags") or {}
                )
            )
        except Exception:
            logger.exception("dispatch after a lift failed; the tick claims its jobs", extra={"freeze_id": lifted.id})

    # ------------------------------------------------------------ the runs claimed before it

    def _hold_back_claimed(self, freeze: Freeze, now: datetime) -> int:
        """The runs claimed before the freeze that fall inside it, still QUEUED and never started: found in the due
        index (where a claimed run stays until its outcome; one Query per shard, up to the claim horizon), matched
        to the selector (one BatchGetItem of their jobs), read (one BatchGetItem of the selected runs: whether a
        freeze may hold a run back is decided on the run, `subject_to_freezes`, as its executor decides), then
        marked one by one. A run started between the read and its marking is marked for nothing: its executor
        lets it run on."""
        reach = to_ms(min(freeze.ends_at, now + self.horizon) + self.redispatch_after)
        jobs, selected = self._claimed_inside(freeze, reach)
        if not selected:
            return 0
        stored = self.store.runs.get_runs([run_id for runs in selected.values() for _, run_id in runs])
        held = 0
        for job_id, runs in selected.items():
            blocked = sorted((at, run_id) for at, run_id in runs if run_id in stored and _held_back(stored[run_id]))
            kept = set(self._kept(freeze, jobs[job_id], blocked))
            for _, run_id in blocked:
                held += self.records.mark_claimed(run_id, freeze, keep=run_id in kept)
        return held

    def _release_held(self, freeze: Freeze, now: datetime) -> int:
        """With DEFER, the runs the freeze (as it was before its lift) holds for its end whose time has come: each
        let start now and sent, rather than left to its deferral (to the freeze's end, 15 minutes at most). Found
        as the creation found the runs it marked: in the due index, where a deferred run waits at most
        MAX_MESSAGE_BACKOFF_SECONDS past now (and its safety net); a send that fails leaves them to the tick."""
        if freeze.on_blocked is not OnBlocked.DEFER or self.send_runs is None:
            return 0
        deferred_to = min(freeze.until, now + timedelta(seconds=MAX_MESSAGE_BACKOFF_SECONDS))
        _, selected = self._claimed_inside(freeze, to_ms(deferred_to + self.horizon + self.redispatch_after))
        due = [run_id for runs in selected.values() for at, run_id in runs if at <= now]
        stored = self.store.runs.get_runs(due)
        held = [r for r in stored.values() if r.blocked_by == freeze.id and r.deferred_reason is DeferReason.FREEZE]
        released = [run for run in held if self.records.release_held(run.id, freeze, now)]
        if released:
            try:
                self.send_runs(released)
            except Exception:
                logger.exception(
                    "sending the runs a lift let go failed; the tick sends them", extra={"freeze_id": freeze.id}
                )
            logger.info("held runs let go by a lift", extra={"freeze_id": freeze.id, "runs": len(released)})
        return len(released)

    def _claimed_inside(
        self, freeze: Freeze, reach: int
    ) -> tuple[dict[str, dict[str, Any]], dict[str, list[tuple[datetime, str]]]]:
        """The QUEUED runs in the due index up to `reach` (ms) whose occurrence the freeze blocks, of the jobs it
        selects: those jobs (as the index's BatchGetItem read them), and each one's (occurrence, run id)."""
        claimed: dict[str, list[tuple[datetime, str]]] = defaultdict(list)
        for shard in range(self.store.shards):
            for item in self.store.due.query_due(str(shard), reach):
                a = item.attrs
                at = optional_instant(a.get("scheduled_for"))
                if (
                    item.kind is not ItemKind.RUN
                    or a.get("status") != RunStatus.QUEUED.value
                    or not is_job_id(str(a.get("job_id", "")))
                    or at is None
                    or not freeze.blocks(at)
                ):
                    continue
                claimed[str(a["job_id"])].append((at, str(a["run_id"])))
        if not claimed:
            return {}, {}
        jobs = {
            str(j["job_id"]): j
            for j in self.store.shared_table.batch_get(
                [job_key(j) for j in claimed], projection="job_id, tenant, tags, catchup, next_run_at"
            )
        }
        selected = {
            job_id: runs
            for job_id, runs in claimed.items()
            if (job := jobs.get(job_id)) is not None
            and freeze.applies_to(str(job["tenant"]), job_id, job.get("tags") or {})
        }
        return jobs, selected

    @staticmethod
    def _kept(freeze: Freeze, job: dict[str, Any], runs: list[tuple[datetime, str]]) -> list[str]:
        """With DEFER, the claimed runs kept for the freeze's end: the job's catch-up policy's latest ones (ALL:
        every one), unless occurrences inside the freeze are still to be claimed and the policy keeps only the
        latest (the tick keeps it, from the rest of the stretch)."""
        if freeze.on_blocked is not OnBlocked.DEFER:
            return []
        policy = CatchupPolicy(job.get("catchup", CatchupPolicy.LATEST.value))
        keep = CATCHUP_KEEP[policy]
        next_run_at = optional_instant(job.get("next_run_at"))
        if next_run_at is not None and next_run_at < freeze.ends_at and policy is not CatchupPolicy.ALL:
            return []  # the latest of the blocked stretch is one the tick claims later
        return [run_id for _, run_id in runs[len(runs) - keep :]] if keep else []


def _held_back(run: Run) -> bool:
    return run.status is RunStatus.QUEUED and subject_to_freezes(run, leased=False)
