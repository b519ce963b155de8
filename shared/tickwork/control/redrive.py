"""Re-queueing FAILED runs: one run (retry), or the tenant's dead letters (redrive). Attempts start again.

FAILED -> QUEUED is a conditional write on the run's status, so a run re-queued twice at once goes once; the
run keeps its original `scheduled_for` and is sent to start now.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from tickwork.control.audit import AuditTrail
from tickwork.control.queries import JobQueries
from tickwork.model.audit import Attribution, AuditResource, Change
from tickwork.model.clock import Clock
from tickwork.model.errors import Conflict, NotFound
from tickwork.model.run import Run
from tickwork.model.states import RunStatus
from tickwork.observability import logger
from tickwork.store import RunRecords
from tickwork.store.listings import Listings
from tickwork.tick.dispatch import Dispatcher

MAX_REDRIVE = 250  # runs one "redrive all" call re-queues; the response says when there are more


@dataclass(frozen=True)
class RedriveReport:
    redriven: int
    run_ids: list[str]
    not_redriven: list[str]  # unknown ids, other tenants' ids, runs not FAILED (any more), workflow steps' runs
    more: bool  # "all" stopped at MAX_REDRIVE; call again for the rest


@dataclass(frozen=True)
class RunRedrive:
    runs: RunRecords
    dispatcher: Dispatcher
    clock: Clock
    queries: JobQueries  # tenant-checked reads of the named runs
    listings: Listings  # the tenant's FAILED runs, for "redrive all"
    audit: AuditTrail  # each re-queue's record, in its own write

    def retry_run(
        self, tenant: str, run_id: str, *, from_checkpoint: bool = True, by: Attribution | None = None
    ) -> Run:
        """Re-queue a FAILED run; its attempts start again, from its last checkpoint unless `from_checkpoint` is
        False (then that is removed: docs/durable-runs.md)."""
        run = self.queries.get_run(tenant, run_id)
        if run.status is not RunStatus.FAILED:
            raise Conflict(f"only FAILED runs can be retried; this one is {run.status.value}")
        if run.is_compensation:
            # Its workflow run is COMPENSATION_FAILED, which no retry reopens: what it left is undone by hand.
            raise Conflict(
                "a compensation's run is not retried: its workflow run ended COMPENSATION_FAILED; undo what it "
                "left by hand (its error says what failed)"
            )
        if run.workflow_run_id is not None:
            # Re-running a step alone would leave its workflow run FAILED and its downstream steps unstarted.
            raise Conflict(f"a workflow step's run is retried with its workflow run: retry {run.workflow_run_id}")
        queued = self._requeue(run, self.clock.now(), from_checkpoint=from_checkpoint, by=by, verb="retry")
        if queued is None:
            raise Conflict("the run changed meanwhile; try again")
        self._send([queued])
        return queued

    def redrive(self, tenant: str, run_ids: list[str] | None = None, *, by: Attribution | None = None) -> RedriveReport:
        """Re-queue the caller's FAILED runs: all of them (up to MAX_REDRIVE per call), or the ones named. Each
        run's re-queue is its own write, with its own audit record (`run.redrive`): a crash half-way leaves the
        records of exactly the runs it re-queued."""
        now = self.clock.now()
        queued: list[Run] = []
        not_redriven: list[str] = []
        more = False
        if run_ids is None:
            candidates: Iterable[tuple[str, Run | None]] = (
                (run.id, run) for run in self.listings.iter_failed_runs(tenant, max_items=MAX_REDRIVE + 1)
            )
        else:
            candidates = ((run_id, self._named(tenant, run_id)) for run_id in dict.fromkeys(run_ids))
        for index, (run_id, run) in enumerate(candidates):
            if run_ids is None and index == MAX_REDRIVE:
                more = True
                break
            requeued = self._requeue(run, now, by=by, verb="redrive") if run is not None else None
            if requeued is None:
                not_redriven.append(run_id)
            else:
                queued.append(requeued)
        self._send(queued)
        logger.info("dlq redriven", extra={"tenant": tenant, "redriven": len(queued), "more": more})
        return RedriveReport(len(queued), [r.id for r in queued], not_redriven, more)

    def _named(self, tenant: str, run_id: str) -> Run | None:
        """The caller's FAILED run of that id; None for an unknown id, another tenant's, or one not FAILED."""
        try:
            run = self.queries.get_run(tenant, run_id)
        except NotFound:
            return None
        return run if run.status is RunStatus.FAILED else None

    def _requeue(
        self,
        run: Run,
        now: datetime,
        *,
        from_checkpoint: bool = True,
        by: Attribution | None = None,
        verb: str = "retry",
    ) -> Run | None:
        """FAILED -> QUEUED in the table (conditional); the caller sends it. None if it was not FAILED, or if it
        is a workflow step's (retried with its workflow run, so that the run goes on past it)."""
        if run.workflow_run_id is not None:
            return None
        redispatch_at = now + self.dispatcher.redispatch_after
        changes = {"status": Change(before=RunStatus.FAILED.value, after=RunStatus.QUEUED.value)}
        if not from_checkpoint:
            changes["from_checkpoint"] = Change(after=False)
        resource = AuditResource(kind="run", id=run.id)
        audit = self.audit.item(by, tenant=run.tenant, action=f"run.{verb}", resource=resource, changes=changes)
        if not self.runs.requeue_failed_run(
            run, now=now, redispatch_at=redispatch_at, from_checkpoint=from_checkpoint, audit=audit
        ):
            return None
        return run.model_copy(
            update={
                "status": RunStatus.QUEUED,
                "attempts": 0,
                "error": None,
                "enqueued_at": now,
                "finished_at": None,
                "lease_until": None,
                "segments": 0,
                "yielded_ms": 0,
            }
        )

    def _send(self, runs: list[Run]) -> None:
        self.dispatcher.send_runs(runs)  # to start now; the run keeps its original scheduled_for
