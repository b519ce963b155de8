"""What the API calls for workflows: create, read, list, change (pause, resume, cancel, update), trigger, and a
workflow run's reads, cancellation and retry.

Another tenant's workflow or workflow run does not exist as far as a caller can tell (NotFound, as an unknown or
malformed id is). Every change is a conditional write on the version or status it was decided from.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tickwork.aws.queues import Outgoing
from tickwork.control.api_bodies import StepRun, WorkflowRun, WorkflowSpec, WorkflowUpdate
from tickwork.control.audit import AuditTrail, created_by
from tickwork.control.calendars import check_calendars_visible
from tickwork.control.tenants import ActiveJobsQuota
from tickwork.control.versioned_changes import VersionedChanges
from tickwork.control.workflow_factory import WorkflowFactory
from tickwork.model.audit import Attribution, AuditResource, Change
from tickwork.model.clock import Clock
from tickwork.model.errors import Conflict, NotFound
from tickwork.model.ids import is_workflow_id, on_a_free_millisecond, run_id_for
from tickwork.model.run import Run
from tickwork.model.states import JobState, RunStatus, RunTrigger, SkipReason
from tickwork.model.workflow.advance import StepStatus, WorkflowRunStatus
from tickwork.model.workflow.compensation import compensation_order
from tickwork.model.workflow.definition import Workflow
from tickwork.model.workflow.runs import StepEntry, WorkflowRunRecord, WorkflowSnapshot
from tickwork.observability import logger
from tickwork.progress.workflow_progress import WorkflowProgress
from tickwork.store import Listings, Page, RunLeases, RunRecords, WorkflowRecords
from tickwork.tick.dispatch import Dispatcher

_CANCEL_ROUNDS = 5


@dataclass(frozen=True)
class WorkflowService:
    records: WorkflowRecords
    run_records: RunRecords  # the steps' runs
    leases: RunLeases  # a cancel asks the RUNNING ones to stop
    progress: WorkflowProgress
    dispatcher: Dispatcher  # claims a workflow due within the horizon at once, as for jobs
    listings: Listings
    clock: Clock
    factory: WorkflowFactory
    quota: ActiveJobsQuota  # a workflow is an active job too (max_active_jobs)
    audit: AuditTrail  # each change's record, in the change's own write

    # ------------------------------------------------------------ workflows

    def create(
        self, tenant: str, spec: WorkflowSpec, *, by: Attribution | None = None, workflow_id: str | None = None
    ) -> Workflow:
        """A checked workflow, durable before acknowledged; claimed at once if due within the horizon.
        InvalidInput (naming `steps[i]...` fields) or TooLarge, and nothing written, if the spec is bad;
        QuotaExceeded, and nothing written, over the tenant's max_active_jobs. Under `workflow_id`, else a new id
        (Conflict, nothing written, when a workflow has that id)."""
        new = self.factory.new_workflow(tenant, spec, now=self.clock.now(), workflow_id=workflow_id)
        workflow = created_by(new, by)
        audit = self.audit.created(by, "workflow", workflow)
        with self.quota.admitted(tenant, lambda: self.records.get_workflow(workflow.id) is not None) as counted:
            if not self.records.put_new_workflow(workflow, counted=counted, audit=audit):
                raise Conflict(f"workflow {workflow.id} exists already")  # a given id; a new one has 75 random bits
        logger.info(
            "workflow created",
            extra={"workflow_id": workflow.id, "steps": len(workflow.steps), "next_run_at": workflow.next_run_at},
        )
        self._dispatch_soon(workflow)
        return workflow

    def get(self, tenant: str, workflow_id: str, *, admin: bool = False) -> Workflow:
        workflow = self.records.get_workflow(workflow_id) if is_workflow_id(workflow_id) else None
        if workflow is None or (workflow.tenant != tenant and not admin):
            raise NotFound(f"workflow {workflow_id} not found")
        return workflow

    def list(self, tenant: str, **filters: Any) -> Page[Workflow]:
        """The tenant's workflows, newest first; `filters` are Listings.list_workflows's (limit, cursor, state,
        name_prefix)."""
        return self.listings.list_workflows(tenant, **filters)

    def update(
        self, tenant: str, workflow_id: str, patch: WorkflowUpdate, *, by: Attribution | None = None
    ) -> Workflow:
        """Change name, schedule, steps, priority, retry, timeouts or tags; checked as at create, nothing written
        if anything is bad. New steps apply to runs that start after the change (a run keeps its snapshot). A new
        schedule recomputes the next occurrence from now."""
        changes = patch.changes()

        def check_changes(_: Workflow) -> None:
            if "steps" in changes:
                self.factory.check_steps(tenant, changes["steps"])
            if "calendars" in changes:
                check_calendars_visible(self.factory.calendars, tenant, changes["calendars"], now=self.clock.now())

        workflow = self._changes.update(tenant, workflow_id, changes, self.factory, check_changes, by=by)
        if "schedule" in changes or "priority" in changes:
            self._dispatch_soon(workflow)
        return workflow

    def cancel(self, tenant: str, workflow_id: str, *, by: Attribution | None = None) -> Workflow:
        """DELETE: no more workflow runs (already CANCELLED is no change, as for jobs; Conflict once COMPLETED).
        Runs in progress go on; cancel_run stops one."""
        return self._changes.cancel(tenant, workflow_id, by=by)

    def pause(self, tenant: str, workflow_id: str, *, by: Attribution | None = None) -> Workflow:
        """No new workflow runs: occurrences while paused are recorded SKIPPED `paused`; runs in progress go on.
        Already PAUSED is no change, as for jobs; Conflict from CANCELLED or COMPLETED."""
        return self._changes.pause(tenant, workflow_id, by=by)

    def resume(self, tenant: str, workflow_id: str, *, by: Attribution | None = None) -> Workflow:
        """Back to ACTIVE (already ACTIVE is no change; Conflict from CANCELLED or COMPLETED); the occurrences that fell while paused are recorded SKIPPED."""
        workflow = self._changes.resume(tenant, workflow_id, by=by)
        self._dispatch_soon(workflow)
        return workflow

    @property
    def _changes(self) -> VersionedChanges[Workflow]:
        return VersionedChanges("workflow", self.get, self._replace, self.clock, self.audit)

    def _replace(self, workflow: Workflow, expected_version: int, audit: dict[str, Any] | None) -> bool:
        return self.records.replace_workflow(workflow, expected_version=expected_version, audit=audit)

    def _dispatch_soon(self, workflow: Workflow) -> None:
        try:
            self.dispatcher.dispatch_job(workflow)
        except Exception:
            # The workflow is stored; the next tick claims it. Acknowledging must not depend on this.
            logger.exception("immediate dispatch failed; the tick will claim it", extra={"workflow_id": workflow.id})

    # ------------------------------------------------------------ workflow runs

    def trigger(self, tenant: str, workflow_id: str, *, by: Attribution | None = None) -> WorkflowRun:
        """A manual workflow run (`.m`), starting now, even while paused (it was asked for explicitly)."""
        workflow = self.get(tenant, workflow_id)
        if workflow.state is JobState.CANCELLED:
            raise Conflict("cannot trigger a CANCELLED workflow")

        def open_at(at: datetime) -> WorkflowRun | None:
            run_id = run_id_for(workflow.id, at, RunTrigger.MANUAL)
            audit = _run_audit(self.audit, by, tenant, "workflow.trigger", run_id, None, WorkflowRunStatus.RUNNING)
            opened = self.progress.open(
                WorkflowRunRecord(
                    id=run_id,
                    workflow_id=workflow.id,
                    tenant=tenant,
                    scheduled_for=at,
                    trigger=RunTrigger.MANUAL,
                    status=WorkflowRunStatus.RUNNING,
                    priority=workflow.priority,
                    definition=WorkflowSnapshot.of(workflow),
                ),
                audit=audit,
            )
            if opened.record is None:
                return None
            self.progress.send(opened.outgoing)
            return _run_view(opened.record)

        return on_a_free_millisecond(self.clock.now(), open_at)

    def runs(self, tenant: str, workflow_id: str, *, admin: bool = False, **filters: Any) -> Page[WorkflowRun]:
        """A workflow's runs, newest first; each step's state as its run's map records it (GET of one run reads
        the steps' runs too). `filters` are Listings.list_workflow_runs's (limit, cursor, status)."""
        workflow = self.get(tenant, workflow_id, admin=admin)
        page = self.listings.list_workflow_runs(workflow.tenant, workflow_id, **filters)
        return Page([_run_view(record) for record in page.items], page.next_cursor)

    def get_run(self, tenant: str, workflow_run_id: str, *, admin: bool = False) -> WorkflowRun:
        """The run, with every step of its snapshot, filled from the steps' runs (one BatchGetItem)."""
        record = self._record(tenant, workflow_run_id, admin=admin)
        return _run_view(record, self._step_runs(record))

    def cancel_run(
        self, tenant: str, workflow_run_id: str, *, compensate: bool = False, by: Attribution | None = None
    ) -> WorkflowRun:
        """RUNNING -> CANCELLED: its PENDING steps SKIPPED `cancelled` (in the same write); its running steps are
        asked to stop (cooperatively: their next heartbeat sees it), and a step not yet started is recorded
        SKIPPED `cancelled` when an executor takes it. Conflict unless RUNNING.

        `compensate`: COMPENSATING instead (for CANCELLED): once every step has ended, the steps that SUCCEEDED
        are compensated as after a failure (tickwork.model.workflow.compensation); with nothing to compensate the
        run ends CANCELLED."""
        record = self._record(tenant, workflow_run_id)
        final = WorkflowRunStatus.COMPENSATING if compensate else WorkflowRunStatus.CANCELLED
        for _ in range(_CANCEL_ROUNDS):
            if record.status is not WorkflowRunStatus.RUNNING:
                raise Conflict(f"only a RUNNING workflow run can be cancelled; this one is {record.status.value}")
            pending = {
                sid: StepEntry(status=StepStatus.SKIPPED, skip_reason=SkipReason.CANCELLED)
                for sid, entry in record.steps.items()
                if entry.status is StepStatus.PENDING
            }
            now = self.clock.now()
            audit = _run_audit(self.audit, by, tenant, "workflow_run.cancel", record.id, record.status, final)
            won, current = self.records.record_decisions(
                record.id, pending, final=final, now=now, cause=WorkflowRunStatus.CANCELLED, audit=audit
            )
            if current is None:  # pragma: no cover - a workflow run is never deleted, only expired once ended
                raise NotFound(f"workflow run {workflow_run_id} not found")
            record = current
            if won:
                break
        else:
            raise Conflict("the workflow run is changing concurrently; try again")
        runs = self._step_runs(record)
        for run in runs.values():
            if run.status is RunStatus.RUNNING and self.leases.request_cancel(run.id):
                logger.info("running step asked to stop", extra={"run_id": run.id})
        logger.info(
            "workflow run cancelled",
            extra={"workflow_run_id": record.id, "skipped": sorted(pending), "compensate": compensate},
        )
        if compensate:  # what it can compensate now (nothing while a step runs: its end advances it)
            outgoing, record = self.progress.advanced(record)
            self.progress.send(outgoing)
            runs = self._step_runs(record)
        return _run_view(record, runs)

    def retry_run(self, tenant: str, workflow_run_id: str, *, by: Attribution | None = None) -> WorkflowRun:
        """FAILED -> RUNNING: its FAILED steps' runs are re-queued (the same run records, `requeues`+1), the steps
        skipped downstream of them go back to PENDING, and nothing that succeeded runs again. A step whose payload
        could not be made (too large, or an expression that failed) stays FAILED: the same results would give
        the same outcome. Conflict unless FAILED, or if no step can be retried."""
        record = self._record(tenant, workflow_run_id)
        if record.status is not WorkflowRunStatus.FAILED:
            raise Conflict(f"only a FAILED workflow run can be retried; this one is {record.status.value}")
        dag = record.snapshot().dag
        retried = [sid for sid, entry in record.steps.items() if entry.status is StepStatus.FAILED and not entry.unmade]
        if not retried:
            raise Conflict(
                "no step of this workflow run can be retried: its failed steps' payloads could not be made "
                "(too large, or an expression that cannot be evaluated over the same results)"
            )
        failed = self.run_records.get_runs([record.step_run_id(sid) for sid in retried])
        entries = {
            sid: StepEntry(status=StepStatus.QUEUED, run_id=run.id, requeues=run.requeues + 1)
            for sid in retried
            if (run := failed.get(record.step_run_id(sid))) is not None
        }
        for sid, entry in record.steps.items():
            if entry.status is StepStatus.SKIPPED and dag.ancestors[sid] & set(retried):
                entries[sid] = StepEntry()
        now = self.clock.now()
        audit = _run_audit(
            self.audit, by, tenant, "workflow_run.retry", record.id, record.status, WorkflowRunStatus.RUNNING
        )
        won, current = self.records.reopen(
            record.id, entries, reconcile_at=now + self.progress.settings.reconcile_after, audit=audit
        )
        if not won or current is None:
            raise Conflict("the workflow run changed meanwhile; try again")
        # The second write: were this to stop part-way, the reconciliation re-queues the rest (catch_up).
        redispatch_at = now + self.progress.settings.redispatch_after
        requeued = [
            run
            for run in failed.values()
            if self.run_records.requeue_failed_run(run, now=now, redispatch_at=redispatch_at)
        ]
        self.progress.send([Outgoing.for_run(run, start_at=now) for run in requeued])
        logger.info(
            "workflow run retried",
            extra={"workflow_run_id": record.id, "requeued": sorted(r.step_id or "" for r in requeued)},
        )
        return _run_view(current)

    # ------------------------------------------------------------ reading runs

    def _record(self, tenant: str, workflow_run_id: str, *, admin: bool = False) -> WorkflowRunRecord:
        record = self.records.get_workflow_run(workflow_run_id)
        if record is None or (record.tenant != tenant and not admin):
            raise NotFound(f"workflow run {workflow_run_id} not found")
        return record

    def _step_runs(self, record: WorkflowRunRecord) -> dict[str, Run]:
        """The runs of its steps and of its compensations, by run id."""
        entries = [*record.steps.values(), *(record.compensations or {}).values()]
        run_ids = [entry.run_id for entry in entries if entry.run_id]
        return self.run_records.get_runs(run_ids) if run_ids else {}


def _run_audit(
    audit: AuditTrail,
    by: Attribution | None,
    tenant: str,
    action: str,
    run_id: str,
    before: WorkflowRunStatus | None,
    after: WorkflowRunStatus,
) -> dict[str, Any] | None:
    """The audit item of a workflow run's change of status."""
    status = Change(before=before.value if before else None, after=after.value)
    resource = AuditResource(kind="workflow_run", id=run_id)
    return audit.item(by, tenant=tenant, action=action, resource=resource, changes={"status": status})


def _run_view(record: WorkflowRunRecord, runs: dict[str, Run] | None = None) -> WorkflowRun:
    """The API's view of a workflow run: every step of its snapshot, with its run's state where it has one
    (`runs`), else as the run's map records it."""
    order = record.definition.dag.order if record.definition is not None else list(record.steps)
    steps = {
        sid: _step_view(record.steps.get(sid, StepEntry()), (runs or {}).get(record.step_run_id(sid))) for sid in order
    }
    compensations = {
        sid: _step_view(entry, (runs or {}).get(record.compensation_run_id(sid)))
        for sid, entry in _compensations_in_order(record).items()
    }
    # The record's own fields carry over as they are; only the steps and compensations are the view's.
    fields = {name: getattr(record, name) for name in _RUN_FIELDS}
    return WorkflowRun.model_validate({**fields, "steps": steps, "compensations": compensations})


_RUN_FIELDS = set(WorkflowRun.model_fields) - {"steps", "compensations"}  # each of them a WorkflowRunRecord field
_STEP_RUN_FIELDS = set(StepRun.model_fields) - {"run_id"}  # each of them a Run field too


def _compensations_in_order(record: WorkflowRunRecord) -> dict[str, StepEntry]:
    """A COMPENSATING (or compensated) run's compensations, the first to run first, those not started PENDING."""
    if record.compensations is None or record.definition is None:
        return {}
    order = compensation_order(record.definition.dag, record.states, record.finished_at_of_steps)
    entries = {sid: record.compensations.get(sid, StepEntry()) for sid in order}
    return entries | {sid: entry for sid, entry in record.compensations.items() if sid not in entries}


def _step_view(entry: StepEntry, run: Run | None) -> StepRun:
    if entry.status is StepStatus.PENDING:
        return StepRun(status="PENDING")
    if run is not None:
        return StepRun.model_validate({**{name: getattr(run, name) for name in _STEP_RUN_FIELDS}, "run_id": run.id})
    fields: dict[str, Any] = {"status": RunStatus(entry.status.value), "run_id": entry.run_id}
    if entry.status is StepStatus.SKIPPED:
        fields["skip_reason"] = entry.skip_reason
    return StepRun(**fields)
