"""The tenant's DLQ (its FAILED runs): re-queueing them, one (retry) or many (redrive), where attempts start
again; whether each can be (tickwork.model.retryable); and dismissing one, which leaves the DLQ without a retry.

FAILED -> QUEUED is a conditional write on the run's status, so a run re-queued twice at once goes once; the
run keeps its original `scheduled_for` and is sent to start now.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tickwork.control.api_bodies import DlqEntry
from tickwork.control.audit import AuditTrail
from tickwork.control.queries import JobQueries
from tickwork.model.audit import Attribution, AuditResource, Change
from tickwork.model.clock import Clock
from tickwork.model.errors import Conflict, NotFound, NotRetryable
from tickwork.model.retryable import (
    NotRetried,
    NotRetryableReason,
    RetryVerdict,
    not_found,
    refused,
    retry_verdict,
)
from tickwork.model.run import Run
from tickwork.model.states import RunStatus
from tickwork.model.variants import applied
from tickwork.observability import logger
from tickwork.store import RunRecords
from tickwork.store.listings import Listings, Page
from tickwork.store.workflows import WorkflowRecords
from tickwork.tick.dispatch import Dispatcher

MAX_REDRIVE = 250  # runs one "redrive all" call re-queues; the response says when there are more


@dataclass(frozen=True)
class RedriveReport:
    redriven: int
    run_ids: list[str]
    not_redriven: list[str]  # unknown ids, other tenants' ids, runs not FAILED (any more), workflow steps' runs
    more: bool  # "all" stopped at MAX_REDRIVE; call again for the rest
    refused: list[NotRetried]  # each of not_redriven, with why


@dataclass(frozen=True)
class PayloadEdit:
    """A retry's new payload, and the one the run had (its own, else its job's): the audit record shows both."""

    before: dict[str, Any]
    after: dict[str, Any]


@dataclass(frozen=True)
class RunRedrive:
    runs: RunRecords
    dispatcher: Dispatcher
    clock: Clock
    queries: JobQueries  # tenant-checked reads of the named runs
    listings: Listings  # the tenant's FAILED runs, for "redrive all"
    audit: AuditTrail  # each re-queue's record, in its own write
    workflow_runs: WorkflowRecords  # a step's run's workflow run, which alone retries it
    check_payload: Callable[[str, str, dict[str, Any]], None]  # (tenant, job type, payload): as create checks it

    def dlq_page(self, tenant: str, *, limit: int, cursor: str | None) -> Page[DlqEntry]:
        """A page of the tenant's DLQ, each entry with whether its own retry re-queues it (one BatchGetItem of
        the page's steps' workflow runs)."""
        page = self.listings.list_failed_runs(tenant, limit=limit, cursor=cursor)
        verdicts = self.verdicts(page.items)
        entries = [DlqEntry(**dict(run), retry=verdicts[run.id]) for run in page.items]
        return Page(entries, page.next_cursor)

    def verdicts(self, runs: list[Run]) -> dict[str, RetryVerdict]:
        """Whether each run's own retry re-queues it, by run id."""
        workflow_runs = self.workflow_runs.get_workflow_runs([r.workflow_run_id for r in runs if r.workflow_run_id])
        return {
            run.id: retry_verdict(run, workflow_runs.get(run.workflow_run_id) if run.workflow_run_id else None)
            for run in runs
        }

    def retry_run(
        self,
        tenant: str,
        run_id: str,
        *,
        from_checkpoint: bool = True,
        payload: dict[str, Any] | None = None,
        by: Attribution | None = None,
    ) -> Run:
        """Re-queue a FAILED run; its attempts start again, from its last checkpoint unless `from_checkpoint` is
        False (then that is removed: docs/durable-runs.md). `payload`: the run's payload from now on, checked first
        as its recorded variant runs it, by that type's model (InvalidInput naming the field, nothing changed).
        NotRetryable (a 409 with its reason) for a run its own retry does not re-queue."""
        run = self.queries.get_run(tenant, run_id)
        verdict = self.verdicts([run])[run.id]
        if verdict.reason is not None:
            raise NotRetryable(verdict.reason.value, verdict.message or verdict.reason.value)
        edit = None
        if payload is not None:
            job = self.queries.get_job(tenant, run.job_id)
            self.check_payload(tenant, *applied(job.type, payload, job.variants, run.variant))
            before = run.payload if run.payload is not None else job.payload
            edit = PayloadEdit(before, payload)
        queued = self._requeue(run, self.clock.now(), from_checkpoint=from_checkpoint, edit=edit, by=by, verb="retry")
        if queued is None:
            raise Conflict("the run changed meanwhile; try again")
        self._send([queued])
        return queued

    def redrive(self, tenant: str, run_ids: list[str] | None = None, *, by: Attribution | None = None) -> RedriveReport:
        """Re-queue the caller's FAILED runs: all of them (up to MAX_REDRIVE per call), or the ones named. Each
        run's re-queue is its own write, with its own audit record (`run.redrive`): a crash half-way leaves the
        records of exactly the runs it re-queued."""
        now = self.clock.now()
        more = False
        if run_ids is None:
            candidates: list[tuple[str, Run | None]] = [
                (run.id, run) for run in self.listings.iter_failed_runs(tenant, max_items=MAX_REDRIVE + 1)
            ]
            more = len(candidates) > MAX_REDRIVE
            candidates = candidates[:MAX_REDRIVE]
        else:
            candidates = [(run_id, self.named(tenant, run_id)) for run_id in dict.fromkeys(run_ids)]
        outcomes = self.requeue_each(candidates, now=now, verb="redrive", by=by)
        queued = [run for run in outcomes.values() if isinstance(run, Run)]
        not_retried = [verdict for verdict in outcomes.values() if isinstance(verdict, NotRetried)]
        logger.info("dlq redriven", extra={"tenant": tenant, "redriven": len(queued), "more": more})
        return RedriveReport(len(queued), [r.id for r in queued], [r.run_id for r in not_retried], more, not_retried)

    def requeue_each(
        self,
        candidates: list[tuple[str, Run | None]],
        *,
        now: datetime,
        verb: str,
        by: Attribution | None,
        refuse_dismissed: bool = False,
    ) -> dict[str, Run | NotRetried]:
        """Re-queue each candidate its own retry would (None: not found), each in its own write with its own
        audit record (`run.<verb>`), and send them: what became of each, by run id, in the candidates' order (the
        run re-queued, or why not). `refuse_dismissed`: a dismissed run, out of the DLQ, is left (a redrive's)."""
        verdicts = self.verdicts([run for _, run in candidates if run is not None])
        outcomes: dict[str, Run | NotRetried] = {}
        for run_id, run in candidates:
            verdict = verdicts[run_id] if run is not None else not_found(run_id)
            if run is not None and verdict.retryable and refuse_dismissed and run.dismissed_at is not None:
                verdict = refused(NotRetryableReason.DISMISSED, "it was dismissed from the DLQ: retry it instead")
            if run is not None and verdict.retryable:
                requeued = self._requeue(run, now, by=by, verb=verb)
                if requeued is not None:
                    outcomes[run_id] = requeued
                    continue
                verdict = refused(NotRetryableReason.NOT_FAILED, "it changed meanwhile: it is not FAILED any more")
            outcomes[run_id] = NotRetried.of(run_id, verdict)
        self._send([run for run in outcomes.values() if isinstance(run, Run)])
        return outcomes

    def dismiss(self, tenant: str, run_id: str, *, by: Attribution | None = None) -> Run:
        """Take a FAILED run out of the DLQ without a retry, keeping its record (and its retry: a dismissed run
        can still be retried). Idempotent: a run dismissed already answers as it is, its first dismissal's time
        and author standing. Conflict for a run not FAILED."""
        run = self.queries.get_run(tenant, run_id)
        if run.status is RunStatus.FAILED and run.dismissed_at is None:
            now = self.clock.now()
            resource = AuditResource(kind="run", id=run.id)
            changes = {"dlq": Change(before=True, after=False)}
            audit = self.audit.item(by, tenant=run.tenant, action="run.dismiss", resource=resource, changes=changes)
            author = by.actor.display if by is not None else None
            if self.runs.dismiss_failed_run(run.id, now=now, by=author, audit=audit):
                logger.info("dlq entry dismissed", extra={"run_id": run.id, "tenant": run.tenant})
                return run.model_copy(update={"dismissed_at": now, "dismissed_by": author})
            run = self.queries.get_run(tenant, run_id)  # it changed meanwhile: answer as it is now
        if run.status is not RunStatus.FAILED:
            raise Conflict(f"only a FAILED run is in the DLQ; this one is {run.status.value}")
        return run

    def named(self, tenant: str, run_id: str) -> Run | None:
        """The caller's run of that id; None for an unknown id, or another tenant's."""
        try:
            return self.queries.get_run(tenant, run_id)
        except NotFound:
            return None

    def _requeue(
        self,
        run: Run,
        now: datetime,
        *,
        from_checkpoint: bool = True,
        edit: PayloadEdit | None = None,
        by: Attribution | None = None,
        verb: str = "retry",
    ) -> Run | None:
        """FAILED -> QUEUED in the table (conditional); the caller sends it, once its verdict said it may be.
        None if it was not FAILED any more. `edit`: its payload replaced, in the same write and audit record."""
        redispatch_at = now + self.dispatcher.redispatch_after
        changes = {"status": Change(before=RunStatus.FAILED.value, after=RunStatus.QUEUED.value)}
        if not from_checkpoint:
            changes["from_checkpoint"] = Change(after=False)
        edited: dict[str, Any] = {}
        if edit is not None:
            changes["payload"] = Change(before=edit.before, after=edit.after)
            author = by.actor.display if by is not None else None
            edited = {"payload": edit.after, "payload_edited_at": now, "payload_edited_by": author}
        resource = AuditResource(kind="run", id=run.id)
        audit = self.audit.item(by, tenant=run.tenant, action=f"run.{verb}", resource=resource, changes=changes)
        if not self.runs.requeue_failed_run(
            run,
            now=now,
            redispatch_at=redispatch_at,
            from_checkpoint=from_checkpoint,
            edited_payload=edit.after if edit is not None else None,
            edited_by=edited.get("payload_edited_by"),
            audit=audit,
        ):
            return None
        return run.model_copy(
            update={
                **edited,
                "status": RunStatus.QUEUED,
                "attempts": 0,
                "error": None,
                "enqueued_at": now,
                "finished_at": None,
                "lease_until": None,
                "segments": 0,
                "yielded_ms": 0,
                "dismissed_at": None,
                "dismissed_by": None,
            }
        )

    def _send(self, runs: list[Run]) -> None:
        self.dispatcher.send_runs(runs)  # to start now; the run keeps its original scheduled_for
