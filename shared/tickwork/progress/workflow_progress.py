"""Moving workflow runs on: opening one at its occurrence, recording a step's end, starting what that allows
(downstream steps, or, once it has failed, its compensations), and the tick's reconciliation of a run whose
progress was interrupted.

Every write is conditional and every decision is re-derived from the stored run, so any number of writers
(executors ending steps at the same instant, a tick reconciling, a claimer finishing a dead one's work) make
each step's run exactly once and record each decision once:
- a step's run is created only if absent (its id is deterministic: `<workflow run id>.s-<step id>`), and only
  its creator sends it;
- the decisions of a plan are one UpdateItem, conditional on each decided step still being PENDING; a writer
  that loses re-plans from the run the failed write returned;
- a step's run is created before the decision that records it, so a crash between the two leaves a run the
  next plan finds (its put loses, its decision is recorded) and the due index re-sends;
- a RUNNING workflow run sits in the due index at now + `reconcile_after` (every step's end pushes it):
  a run whose progress stopped (a crash between a step's end and its recording, or between its recording and
  the plan that follows) is reconciled by the tick without waiting for any other event.
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from tickwork.aws.queues import Outgoing, RunQueues, SendReport
from tickwork.aws.results import ResultStore, ResultTooLarge
from tickwork.faults import NO_FAULTS, CrashPoint, FaultPlan
from tickwork.model.clock import Clock, from_ms, stored_instant, to_ms
from tickwork.model.run import Run, RunError
from tickwork.model.states import RunStatus, SkipReason
from tickwork.model.workflow.advance import (
    MAX_READ_RESULT_BYTES,
    PAYLOAD_TOO_LARGE,
    OversizedResult,
    StepStart,
    StepStatus,
    WorkflowRunStatus,
    compensation_start,
    deciding_reads,
    plan_advance,
    step_start,
)
from tickwork.model.workflow.compensation import plan_compensation
from tickwork.model.workflow.runs import StepEntry, WorkflowRunRecord
from tickwork.observability import logger, metrics
from tickwork.store import DueItem, JobRecords, RunRecords, WorkflowRecords
from tickwork.store.deadlines import DeadlineRecords

MAX_PLAN_ROUNDS = 20  # re-plans after lost races or steps that failed at creation; each decides at least one step
MAX_RECONCILE_BACKOFF = timedelta(hours=1)


@dataclass(frozen=True)
class ProgressSettings:
    reconcile_after: timedelta  # a RUNNING workflow run is reconciled this long after its last recorded progress
    redispatch_after: timedelta  # a step's run nobody leased is re-sent this long after it may start
    max_payload_bytes: int  # a step's payload, filled from upstream results, must fit this
    max_read_result_bytes: int = MAX_READ_RESULT_BYTES  # an upstream result a condition or $from reads, at most


@dataclass(frozen=True)
class Opened:
    record: WorkflowRunRecord | None  # the run as opened; None if it existed already
    existing: dict[str, Any]  # the existing item's attributes, if it did
    outgoing: list[Outgoing]  # the runs this caller created, to send


# One piece over 250 lines: opening a run, a step's end, the advance and the reconciliation each apply the same
# plan (tickwork.model.workflow.advance) through `_create_runs`, and the reconciliation replays the others; split,
# every part would reach back for that one application.
class WorkflowProgress:
    """Opens workflow runs, records their steps' ends and advances them; reconciles stalled ones."""

    def __init__(
        self,
        records: WorkflowRecords,
        jobs: JobRecords,
        runs: RunRecords,
        results: ResultStore,
        queues: RunQueues,
        clock: Clock,
        settings: ProgressSettings,
        *,
        faults: FaultPlan = NO_FAULTS,
        read_threads: int = 8,
        deadlines: DeadlineRecords | None = None,
    ) -> None:
        self.records, self.results, self.queues, self.clock = records, results, queues, clock
        self.jobs, self.runs = jobs, runs  # a workflow is a job item; its steps' runs are runs
        self.settings = settings
        self.faults = faults
        self.read_threads = read_threads
        self.deadlines = deadlines  # the watches of steps with a deadline (tickwork.store.deadlines)

    # ------------------------------------------------------------ opening a run

    def open(self, record: WorkflowRunRecord, *, audit: dict[str, Any] | None = None) -> Opened:
        """Create a RUNNING workflow run (its put is the lock on the occurrence) with its first plan applied
        (roots QUEUED, roots whose condition is false SKIPPED), then its roots' runs. The runs to send start at
        the occurrence. `audit`: a manual run's audit record's item, written with its put."""
        now = self.clock.now()
        dag = record.snapshot().dag
        plan = plan_advance(dag, {}, {}, max_payload_bytes=self.settings.max_payload_bytes)
        steps = {sid: StepEntry() for sid in dag.order} | self._entries(record, plan.start, plan.skip)
        opened = record.model_copy(update={"steps": steps, "started_at": now})
        if plan.status is not None:  # every step skipped at once: the run ends as it opens
            opened = opened.model_copy(update={"status": plan.status, "finished_at": now})
        won, existing = self.records.put_workflow_run(
            opened, now=now, reconcile_at=now + self.settings.reconcile_after, audit=audit
        )
        if not won:
            return Opened(None, existing, [])
        self.faults.reached(CrashPoint.WORKFLOW_AFTER_RUN_PUT)
        logger.info("workflow run started", extra={"workflow_run_id": record.id, "steps": len(steps)})
        outgoing = self._create_runs(opened, plan.start, now)
        if plan.status is not None:
            self._ended(opened)
        elif any(start.error for start in plan.start):
            outgoing += self.advance(opened)
        return Opened(opened, {}, outgoing)

    def workflow_run(self, workflow_run_id: str) -> WorkflowRunRecord | None:
        """A workflow run as stored (read consistently): what its steps run is in its snapshot."""
        return self.records.get_workflow_run(workflow_run_id)

    # ------------------------------------------------------------ a step ended

    def step_settled(self, run: Run, status: RunStatus, skip_reason: SkipReason | None = None) -> SendReport:
        """A step's run (or a compensation's) reached a terminal state: record it in its workflow run, then start
        what that allows and send it. Conditional on the map still having it QUEUED, so a second report changes
        nothing (and still advances: the first reporter may have died before advancing)."""
        assert run.workflow_run_id is not None
        assert run.step_id is not None
        self.faults.reached(CrashPoint.WORKFLOW_BEFORE_STEP_SETTLED)
        now = self.clock.now()
        entry = StepEntry(
            status=StepStatus(status.value), skip_reason=skip_reason, run_id=run.id, finished_at=run.finished_at or now
        )
        won, record = self.records.settle_step(
            run.workflow_run_id,
            run.step_id,
            entry,
            reconcile_at=now + self.settings.reconcile_after,
            compensation=run.is_compensation,
        )
        if record is None:
            logger.error("step ended, but its workflow run is gone", extra={"workflow_run_id": run.workflow_run_id})
            return SendReport()
        if not won:
            logger.info("step's end was already recorded", extra={"workflow_run_id": record.id})
        self.faults.reached(CrashPoint.WORKFLOW_AFTER_STEP_SETTLED)
        return self.send(self.advance(record))

    # ------------------------------------------------------------ planning

    def advance(self, record: WorkflowRunRecord) -> list[Outgoing]:
        """Apply plan_advance to the run until nothing more is decidable: create the started steps' runs, then
        record every decision in one conditional write (re-planning from the run that write returns if it lost),
        and end the run when the plan says so. Returns the runs this caller created, to send (start now)."""
        return self.advanced(record)[0]

    def advanced(self, record: WorkflowRunRecord) -> tuple[list[Outgoing], WorkflowRunRecord]:
        """advance, and the run as it left it."""
        outgoing: list[Outgoing] = []
        for _ in range(MAX_PLAN_ROUNDS):
            if record.status is WorkflowRunStatus.COMPENSATING:
                created, record, settled = self._compensate(record)
                outgoing += created
                if settled:
                    return outgoing, record
                continue
            if record.status is not WorkflowRunStatus.RUNNING:
                return outgoing, record
            dag = record.snapshot().dag
            states = record.states
            results = self._results(record, deciding_reads(dag, states))
            plan = plan_advance(dag, states, results, max_payload_bytes=self.settings.max_payload_bytes)
            if not plan.start and not plan.skip and plan.status is None:
                return outgoing, record
            now = self.clock.now()
            outgoing += self._create_runs(record, plan.start, now)
            self.faults.reached(CrashPoint.WORKFLOW_AFTER_STEP_RUNS_PUT)
            won, current = self.records.record_decisions(
                record.id, self._entries(record, plan.start, plan.skip), final=plan.status, now=now
            )
            if current is None:
                return outgoing, record  # pragma: no cover - a workflow run is never deleted, only expired once ended
            record = current
            if won:
                logger.info(
                    "workflow run advanced",
                    extra={
                        "workflow_run_id": record.id,
                        "started": [s.step_id for s in plan.start],
                        "skipped": {sid: reason.value for sid, reason in plan.skip},
                    },
                )
                if plan.status is WorkflowRunStatus.COMPENSATING:
                    logger.info("workflow run failed: compensating", extra={"workflow_run_id": record.id})
                    continue
                if plan.status is not None:
                    self._ended(record)
                    return outgoing, record
                if not any(start.error for start in plan.start):
                    return outgoing, record  # what is left waits for the started steps to end
            # Lost (another writer decided first) or a step failed at creation: plan again from the run now.
        logger.error("workflow run still decidable after the planning rounds", extra={"workflow_run_id": record.id})
        return outgoing, record

    def _compensate(self, record: WorkflowRunRecord) -> tuple[list[Outgoing], WorkflowRunRecord, bool]:
        """One round of a COMPENSATING run: plan_compensation applied as plan_advance is (the runs created, then
        the decisions in one conditional write). Returns the runs created, the run now, and whether it has
        settled for now (False: plan again)."""
        snapshot = record.snapshot()
        plan = plan_compensation(
            snapshot.dag,
            record.states,
            record.finished_at_of_steps,
            record.compensation_states,
            snapshot.compensation,
            cause=record.compensating_for or WorkflowRunStatus.FAILED,
        )
        if not plan.start and not plan.halt and plan.status is None:
            return [], record, True
        now = self.clock.now()
        starts = self._compensation_starts(record, plan.start)
        outgoing = self._create_runs(record, starts, now, compensation=True)
        self.faults.reached(CrashPoint.WORKFLOW_AFTER_STEP_RUNS_PUT)
        entries = self._entries(record, starts, [], compensation=True)
        entries |= {
            sid: StepEntry(status=StepStatus.SKIPPED, skip_reason=SkipReason.COMPENSATION_HALTED) for sid in plan.halt
        }
        won, current = self.records.record_compensations(record.id, entries, final=plan.status, now=now)
        if current is None:  # pragma: no cover - a workflow run is never deleted, only expired once ended
            return outgoing, record, True
        if not won:
            return outgoing, current, False  # another writer decided first: plan again from the run now
        logger.info(
            "workflow run compensating",
            extra={"workflow_run_id": current.id, "started": plan.start, "halted": plan.halt},
        )
        if plan.status is not None:
            self._ended(current)
            return outgoing, current, True
        return outgoing, current, not any(start.error for start in starts)

    def _compensation_starts(self, record: WorkflowRunRecord, step_ids: list[str]) -> list[StepStart]:
        dag = record.snapshot().dag
        states = record.states
        results = self._results(record, {up for sid in step_ids for up in dag.compensation_reads(sid)})
        return [
            compensation_start(dag, sid, states, results, max_payload_bytes=self.settings.max_payload_bytes)
            for sid in step_ids
        ]

    def _entries(
        self,
        record: WorkflowRunRecord,
        starts: Iterable[StepStart],
        skips: Iterable[tuple[str, SkipReason]],
        *,
        compensation: bool = False,
    ) -> dict[str, StepEntry]:
        run_id = record.compensation_run_id if compensation else record.step_run_id
        entries = {
            start.step_id: StepEntry(
                status=StepStatus.FAILED if start.error else StepStatus.QUEUED,
                run_id=run_id(start.step_id),
                unmade=start.error is not None,
            )
            for start in starts
        }
        entries |= {sid: StepEntry(status=StepStatus.SKIPPED, skip_reason=reason) for sid, reason in skips}
        return entries

    def _results(self, record: WorkflowRunRecord, step_ids: set[str]) -> dict[str, Any]:
        """The results the plan reads (S3 GetObject; in parallel when several). A missing one reads as null; one
        over max_read_result_bytes is not read (OversizedResult: the step reading it fails)."""
        cap = self.settings.max_read_result_bytes

        def read(step_id: str) -> Any:
            run_id = record.step_run_id(step_id)
            try:
                return self.results.read_of(record.tenant, record.workflow_id, run_id, max_bytes=cap)
            except ResultTooLarge as exc:
                logger.warning(
                    "upstream result too large to read", extra={"run_id": run_id, "bytes": exc.size, "max_bytes": cap}
                )
                return OversizedResult(exc.size, exc.max_bytes)

        ordered = sorted(step_ids)
        if len(ordered) <= 1:
            return {sid: read(sid) for sid in ordered}
        with ThreadPoolExecutor(max_workers=min(self.read_threads, len(ordered))) as pool:
            return dict(zip(ordered, pool.map(read, ordered), strict=True))

    def _create_runs(
        self, record: WorkflowRunRecord, starts: Iterable[StepStart], now: datetime, *, compensation: bool = False
    ) -> list[Outgoing]:
        """Each started step's run (or, `compensation`, its compensation's), if absent: QUEUED (in the due index
        until leased, so a lost send is re-sent), or FAILED with its error (in the API's DLQ) when it could not be made
        (StepStart.error). Returns what this caller created, to send; a run found existing was created by another
        writer, who sends it."""
        snapshot = record.snapshot()
        start_at = max(now, record.scheduled_for)  # roots start at the occurrence, later steps now
        run_id = record.compensation_run_id if compensation else record.step_run_id
        retry = snapshot.compensation_retry if compensation else snapshot.step_retry
        outgoing: list[Outgoing] = []
        for start in starts:
            step_id = start.step_id
            deadline = None if compensation else snapshot.step(step_id).deadline
            run = Run(
                id=run_id(step_id),
                job_id=record.workflow_id,
                tenant=record.tenant,
                scheduled_for=record.scheduled_for,
                deadline_at=deadline.due(record.scheduled_for) if deadline is not None else None,
                status=RunStatus.QUEUED,
                priority=snapshot.step_priority(step_id),
                trigger=record.trigger,
                max_attempts=retry(step_id).max_attempts,
                enqueued_at=now,
                workflow_run_id=record.id,
                step_id=step_id,
                payload=start.payload,
                ordering=snapshot.step(step_id).ordering,
            )
            if start.error is None:
                if deadline is not None and self.deadlines is not None:  # its watch first, as a job's claim does
                    self.deadlines.watch(run, on_miss=deadline.on_miss)
                if self.runs.put_queued_run(run, redispatch_at=start_at + self.settings.redispatch_after):
                    outgoing.append(Outgoing.for_run(run, start_at=start_at))
                continue
            error = RunError(type=start.error_type or PAYLOAD_TOO_LARGE, message=start.error)
            failed = run.model_copy(update={"status": RunStatus.FAILED, "error": error, "finished_at": now})
            if self.runs.put_failed_run(failed, now=now):
                metrics.add_metric(name="RunsFailed", unit="Count", value=1)
                logger.error("step failed: it could not be made", extra={"run_id": run.id, "error": start.error})
        return outgoing

    def _ended(self, record: WorkflowRunRecord) -> None:
        status_name = "".join(part.capitalize() for part in record.status.value.split("_"))
        metrics.add_metric(name=f"WorkflowRuns{status_name}", unit="Count", value=1)
        logger.info(
            "workflow run ended",
            extra={"workflow_run_id": record.id, "workflow_id": record.workflow_id, "status": record.status.value},
        )
        if record.last_occurrence and self.jobs.complete_if_settled(record.workflow_id, self.clock.now()):
            logger.info(
                "workflow completed: its last occurrence has settled", extra={"workflow_id": record.workflow_id}
            )

    # ------------------------------------------------------------ recovery

    def reconcile(self, item: DueItem, now: datetime) -> list[Outgoing]:
        """A RUNNING workflow run due for reconciliation (the tick). Postponed first (conditional: of racing ticks
        one reconciles; later looks are spaced by the run's age, up to an hour), then: every QUEUED step whose
        run ended without being recorded is recorded, a missing run is created, and the run advances."""
        run_id = item.attrs["run_id"]
        if not WorkflowRunStatus(item.attrs.get("status", WorkflowRunStatus.SKIPPED.value)).in_progress:
            return []
        age = now - stored_instant(item.attrs["scheduled_for"])
        next_look = max(now, from_ms(item.due_at)) + min(MAX_RECONCILE_BACKOFF, max(self.settings.reconcile_after, age))
        if not self.records.postpone_reconcile(run_id, expected_due_at=item.due_at, new_due_at=to_ms(next_look)):
            return []
        record = self.records.get_workflow_run(run_id)
        if record is None or not record.status.in_progress:
            return []
        outgoing, record = self.catch_up(record)
        outgoing += self.advance(record)
        metrics.add_metric(name="WorkflowRunsReconciled", unit="Count", value=1)
        logger.info("workflow run reconciled", extra={"workflow_run_id": record.id, "sent": len(outgoing)})
        return outgoing

    def catch_up(self, record: WorkflowRunRecord) -> tuple[list[Outgoing], WorkflowRunRecord]:
        """The run's QUEUED steps as their runs really are (one BatchGetItem): a run that ended is recorded
        (its executor died before recording it), a run that is missing is created (its creator died between
        recording the step and creating it), a run a retry left FAILED is re-queued (the retry died between
        reopening the workflow run and re-queueing it); its QUEUED compensations likewise. Returns the runs to
        send, and the run now."""
        outgoing, record = self._catch_up_steps(record)
        compensated, record = self._catch_up_compensations(record)
        return outgoing + compensated, record

    def _catch_up_steps(self, record: WorkflowRunRecord) -> tuple[list[Outgoing], WorkflowRunRecord]:
        queued = [sid for sid, entry in record.steps.items() if entry.status is StepStatus.QUEUED]
        if not queued:
            return [], record
        runs = self.runs.get_runs([record.step_run_id(sid) for sid in queued])
        missing = [sid for sid in queued if record.step_run_id(sid) not in runs]
        outgoing = self._create_runs(record, self._starts(record, missing), self.clock.now()) if missing else []
        now = self.clock.now()
        reconcile_at = now + self.settings.reconcile_after
        for sid in queued:
            run = runs.get(record.step_run_id(sid))
            if run is None or not run.status.terminal:
                continue
            wanted = record.steps[sid].requeues
            if run.status is RunStatus.FAILED and wanted is not None and run.requeues < wanted:
                # A retry reopened the run but died before re-queueing this step's run: finish the retry.
                redispatch_at = now + self.settings.redispatch_after
                if self.runs.requeue_failed_run(run, now=now, redispatch_at=redispatch_at):
                    logger.warning("re-queueing a retried step's run its retry did not", extra={"run_id": run.id})
                    outgoing.append(Outgoing.for_run(run, start_at=now))
                continue
            logger.warning("recording a step's end its executor did not record", extra={"run_id": run.id})
            _, current = self.records.settle_step(record.id, sid, _ended_entry(run), reconcile_at=reconcile_at)
            record = current or record
        return outgoing, record

    def _catch_up_compensations(self, record: WorkflowRunRecord) -> tuple[list[Outgoing], WorkflowRunRecord]:
        """The run's QUEUED compensations as their runs really are: an ended one recorded, a missing one made."""
        compensations = record.compensations or {}
        queued = [sid for sid, entry in compensations.items() if entry.status is StepStatus.QUEUED]
        if not queued:
            return [], record
        runs = self.runs.get_runs([record.compensation_run_id(sid) for sid in queued])
        missing = [sid for sid in queued if record.compensation_run_id(sid) not in runs]
        now = self.clock.now()
        starts = self._compensation_starts(record, missing) if missing else []
        outgoing = self._create_runs(record, starts, now, compensation=True) if missing else []
        for sid in queued:
            run = runs.get(record.compensation_run_id(sid))
            if run is None or not run.status.terminal:
                continue
            logger.warning("recording a compensation's end its executor did not record", extra={"run_id": run.id})
            _, current = self.records.settle_step(
                record.id, sid, _ended_entry(run), reconcile_at=now + self.settings.reconcile_after, compensation=True
            )
            record = current or record
        return outgoing, record

    def _starts(self, record: WorkflowRunRecord, step_ids: list[str]) -> list[StepStart]:
        dag = record.snapshot().dag
        states = record.states
        reads = {up for sid in step_ids for up in dag.reads(sid)}
        results = self._results(record, {up for up in reads if states[up].status is StepStatus.SUCCEEDED})
        return [
            step_start(dag, sid, states, results, max_payload_bytes=self.settings.max_payload_bytes) for sid in step_ids
        ]

    # ------------------------------------------------------------ sending

    def send(self, outgoing: list[Outgoing]) -> SendReport:
        """Send runs this caller created. What SQS refuses stays in the due index: the tick re-sends it."""
        if not outgoing:
            return SendReport()
        now = self.clock.now()
        report = self.queues.send([o.timed(now) for o in outgoing])
        if report.failed:
            logger.error("SQS refused some step runs; the tick re-sends them", extra={"run_ids": report.failed})
        if report.sent:
            metrics.add_metric(name="RunsDispatched", unit="Count", value=len(report.sent))
        return report


def _ended_entry(run: Run) -> StepEntry:
    """The entry of a step (or compensation) whose run ended, as its run records the end."""
    return StepEntry(
        status=StepStatus(run.status.value), skip_reason=run.skip_reason, run_id=run.id, finished_at=run.finished_at
    )
