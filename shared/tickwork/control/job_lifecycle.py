"""Job lifecycle: create, pause, resume, cancel, update, trigger. What the API calls to change a job.

Every change is a conditional write against the job's version, so two callers never lose each other's
change; a create is acknowledged only once its write is durable (promise 1), and never waits for a run.
Creating under an Idempotency-Key is `tickwork.control.idempotent_create`; re-queueing FAILED runs,
`tickwork.control.redrive`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tickwork.control.api_bodies import BackfillRequest, JobSpec, JobUpdate, TriggeredRun, TriggerRequest
from tickwork.control.audit import AuditTrail, created_by
from tickwork.control.backfill import Backfiller, BackfillResult
from tickwork.control.calendars import check_calendars_visible
from tickwork.control.debounce import DebouncedTriggers
from tickwork.control.job_factory import JobFactory
from tickwork.control.queries import JobQueries
from tickwork.control.tenants import ActiveJobsQuota
from tickwork.control.versioned_changes import VersionedChanges
from tickwork.executor.breaker import closed
from tickwork.model.audit import Attribution, AuditResource, Change
from tickwork.model.clock import Clock
from tickwork.model.errors import Conflict
from tickwork.model.ids import on_a_free_millisecond
from tickwork.model.job import Job
from tickwork.model.job_variants import stale_after
from tickwork.model.run import Run, manual_run
from tickwork.model.run_spec import MARK_BACK
from tickwork.model.states import JobState, RunStatus
from tickwork.observability import logger, metrics
from tickwork.store import JobRecords, RunRecords
from tickwork.tick.dispatch import Dispatcher

# What a PATCH may change on a COMPLETED job whose last run FAILED: what a retry of that run reads from the job.
FIXABLE_WHEN_COMPLETED = frozenset(
    {"name", "payload", "priority", "retry", "timeout_seconds", "tags", "concurrency", "rate_limit", "variants"}
)


@dataclass(frozen=True)
class JobLifecycle:
    jobs: JobRecords
    runs: RunRecords
    dispatcher: Dispatcher
    clock: Clock
    factory: JobFactory
    queries: JobQueries  # the tenant-checked reads every change starts from
    quota: ActiveJobsQuota  # max_active_jobs: checked before a job is written
    debounced: DebouncedTriggers  # a debounced trigger joins or opens its key's window
    audit: AuditTrail  # each change's record, in the change's own write

    # ------------------------------------------------------------ create

    def create_job(
        self, tenant: str, spec: JobSpec, *, by: Attribution | None = None, job_id: str | None = None
    ) -> Job:
        """A checked job, durable before acknowledged; QuotaExceeded (nothing written) over max_active_jobs.
        Attributed to `by` (`created_by`, and its audit record in the same write). Under `job_id`, else a new id
        (Conflict, nothing written, when a job has that id)."""
        job = self.new_job(tenant, spec, by=by, job_id=job_id)
        with self.quota.admitted(tenant, lambda: self.jobs.get_job(job.id) is not None) as counted:
            if not self.add_new(job, counted=counted, by=by):  # durable before acknowledged
                raise Conflict(f"job {job.id} exists already")  # a given id; a new one has 75 random bits
        return job

    def new_job(self, tenant: str, spec: JobSpec, *, by: Attribution | None = None, job_id: str | None = None) -> Job:
        """The checked job of `spec` (under `job_id`, else a new id), not yet written, created by `by`."""
        return created_by(self.factory.new_job(tenant, spec, now=self.clock.now(), job_id=job_id), by)

    def add_new(self, job: Job, *, counted: bool = False, by: Attribution | None = None) -> bool:
        """Write a new, checked job and dispatch it if it is due soon; False (nothing done) if its id exists.
        `counted`: a place in its tenant's max_active_jobs was reserved for it. `by`: its audit record's
        attribution (None: no record)."""
        if not self.jobs.put_new_job(job, counted=counted, audit=self.audit.created(by, "job", job)):
            return False
        logger.info("job created", extra={"job_id": job.id, "type": job.type, "next_run_at": job.next_run_at})
        self._dispatch_soon(job)
        return True

    def _dispatch_soon(self, job: Job) -> None:
        """A job due within the horizon is claimed now, so it runs on time rather than at the next tick."""
        try:
            self.dispatcher.dispatch_job(job)
        except Exception:
            # The job is stored; the next tick claims it. Acknowledging must not depend on this.
            logger.exception("immediate dispatch failed; the tick will claim it", extra={"job_id": job.id})

    # ------------------------------------------------------------ state changes

    @property
    def _changes(self) -> VersionedChanges[Job]:
        """Changes under the job's version; each write also removes the variants' tallies the change makes stale
        (tickwork.model.job_variants.stale_after), from the job as the change read it."""
        read: dict[int, Job] = {}

        def get(tenant: str, job_id: str) -> Job:
            job = self.queries.get_job(tenant, job_id)
            read[job.version] = job
            return job

        def replace(job: Job, expected_version: int, audit: dict[str, Any] | None) -> bool:
            return self._replace(job, expected_version, audit, forget=stale_after(read[expected_version], job))

        return VersionedChanges("job", get, replace, self.clock, self.audit)

    def _replace(
        self, job: Job, expected_version: int, audit: dict[str, Any] | None, *, forget: frozenset[str] = frozenset()
    ) -> bool:
        """The change's write, after the job's claimed runs were told that their messages' copies of the job no
        longer hold, so that their executors read it (tickwork.model.run_spec). Before the write, not after: a process
        that dies between the two leaves nothing untold. A run claimed after the marking has a copy only if its
        claim's advance of the job won; that advance moved the version, and this write, on the version read
        before the marking, then loses (and the change is tried again), or it came after this write and copied
        the changed job."""
        now = self.clock.now()
        self.runs.mark_runs_job_changed(job.id, now=now, since=now - MARK_BACK)
        return self.jobs.replace_job(job, expected_version=expected_version, audit=audit, forget=forget)

    def change(
        self,
        tenant: str,
        job_id: str,
        change: Callable[[Job, datetime], Job | None],
        *,
        verb: str,
        by: Attribution | None = None,
    ) -> Job:
        """Any other change of the job (a variant's promotion or rollback: tickwork.control.job_variants), as the
        changes here are made: on its version, its claimed runs told, its audit record `job.<verb>` in its write."""
        return self._changes.change(tenant, job_id, change, verb=verb, by=by)

    def pause(self, tenant: str, job_id: str, *, by: Attribution | None = None) -> Job:
        return self._changes.pause(tenant, job_id, by=by)

    def resume(self, tenant: str, job_id: str, *, by: Attribution | None = None) -> Job:
        """Back to ACTIVE; the next claim applies the misfire rule to what was missed while paused. A SUSPENDED
        job's resume closes its circuit breaker (ACTIVE, the failure count reset, no probe awaited)."""
        was_suspended = False

        def change(current: Job, now: datetime) -> Job | None:
            nonlocal was_suspended
            if current.state is JobState.SUSPENDED:
                was_suspended = True
                return closed(current)
            if current.state is JobState.ACTIVE:
                return None
            if current.state is not JobState.PAUSED:
                raise Conflict(f"cannot resume a {current.state.value} job")
            return current.model_copy(update={"state": JobState.ACTIVE, "resumed_at": now})

        job = self._changes.change(tenant, job_id, change, verb="resume", by=by)
        if was_suspended:
            metrics.add_metric(name="CircuitClosed", unit="Count", value=1)
            logger.info("circuit breaker closed by a resume", extra={"job_id": job.id})
        self._dispatch_soon(job)
        return job

    def cancel(self, tenant: str, job_id: str, *, by: Attribution | None = None) -> Job:
        return self._changes.cancel(tenant, job_id, by=by)

    def update(self, tenant: str, job_id: str, patch: JobUpdate, *, by: Attribution | None = None) -> Job:
        """Change name, payload, schedule, priority, retry, timeouts, overlap or tags. A COMPLETED job whose last
        run FAILED may still change FIXABLE_WHEN_COMPLETED, so that run can be retried with the fix.

        A new schedule recomputes the next occurrence from now (runs already queued for the next couple of
        minutes still run); other changes keep the pending occurrence, so an update never loses a run.
        The payload is checked against the job's type, as at create. Nothing is written if anything is bad.
        """
        changes = patch.changes()

        def check_changes(job: Job) -> None:
            if "payload" in changes:
                self.factory.check_payload(tenant, job.type, changes["payload"])
            if "payload" in changes or "variants" in changes:
                payload, variants = changes.get("payload", job.payload), changes.get("variants", job.variants)
                self.factory.check_variants(tenant, job.type, payload, variants)
            if "calendars" in changes:
                check_calendars_visible(self.factory.calendars, tenant, changes["calendars"], now=self.clock.now())

        def check_completed(job: Job) -> None:
            # A COMPLETED job's runs can still be retried: one whose last run FAILED may be fixed for the retry.
            last = self.runs.runs_of_job(job.id, limit=1)[0]
            if not last or last[0].status is not RunStatus.FAILED:
                raise Conflict("cannot update a COMPLETED job")
            outside = sorted(set(changes) - FIXABLE_WHEN_COMPLETED)
            if outside:
                raise Conflict(
                    f"a COMPLETED job whose last run FAILED may change only what a retry of that run uses "
                    f"({', '.join(sorted(FIXABLE_WHEN_COMPLETED))}), not {', '.join(outside)}: it has no "
                    f"occurrence left to schedule"
                )

        job = self._changes.update(tenant, job_id, changes, self.factory, check_changes, check_completed, by=by)
        if "schedule" in changes or "priority" in changes:
            self._dispatch_soon(job)
        return job

    # ------------------------------------------------------------ runs outside the schedule

    def trigger(
        self, tenant: str, job_id: str, request: TriggerRequest | None = None, *, by: Attribution | None = None
    ) -> TriggeredRun:
        """Run now, once, outside the schedule. Runs even while paused (it was asked for explicitly). With a
        debounce (the request's, else the job's), the run of the key's window instead (tickwork.control.debounce)."""
        job = self.queries.get_job(tenant, job_id)
        if job.state is JobState.CANCELLED:
            raise Conflict("cannot trigger a CANCELLED job")
        given = request.model_fields_set if request is not None else set()
        payload = request.payload if request is not None and "payload" in given else None
        if payload is not None:
            self.factory.check_payload(tenant, job.type, payload)
            # Its run may be any variant's, each of which runs its overrides over this payload.
            self.factory.check_variants(tenant, job.type, payload, job.variants)
        debounce = request.debounce if request is not None and "debounce" in given else job.debounce
        if debounce is not None:

            def audit(run: Run) -> dict[str, Any] | None:
                resource = AuditResource(kind="run", id=run.id)
                return self.audit.item(by, tenant=tenant, action="job.trigger", resource=resource, after=run)

            given_payload = payload if payload is not None else job.payload
            run, verdict = self.debounced.trigger(job, debounce, given_payload, audit=audit)
            return TriggeredRun(**run.model_dump(), debounce_window=verdict)
        now = self.clock.now()

        def queue_at(at: datetime) -> Run | None:
            run = manual_run(job, at=at, now=now, payload=payload)
            audit = self.audit.item(
                by, tenant=tenant, action="job.trigger", resource=AuditResource(kind="run", id=run.id), after=run
            )
            if not self.runs.put_queued_run(run, redispatch_at=at + self.dispatcher.redispatch_after, audit=audit):
                return None
            self.dispatcher.send_runs([run])
            return run

        return TriggeredRun(**on_a_free_millisecond(now, queue_at).model_dump())

    def backfill(
        self, tenant: str, job_id: str, request: BackfillRequest, *, by: Attribution | None = None
    ) -> BackfillResult:
        """Runs for the job's past occurrences in [from, to], each once (tickwork.control.backfill); 409 if CANCELLED.
        Runs even while paused (it was asked for explicitly), as a trigger does."""
        job = self.queries.get_job(tenant, job_id)
        backfiller = Backfiller(self.jobs, self.runs, self.dispatcher, self.clock)

        def audit(occurrences: list[datetime]) -> dict[str, Any] | None:
            asked = {"from": request.from_.isoformat(), "to": request.to.isoformat(), "occurrences": len(occurrences)}
            return self.audit.item(
                by,
                tenant=tenant,
                action="job.backfill",
                resource=AuditResource(kind="job", id=job.id),
                changes={"backfill": Change(after=asked)},
            )

        return backfiller.backfill(job, request.from_, request.to, request.max_runs, audit=audit)
