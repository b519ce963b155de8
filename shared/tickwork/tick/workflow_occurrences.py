"""The tick's side of workflows: a workflow's occurrences become workflow runs, and a RUNNING workflow run due
in the index is reconciled.

A workflow is claimed exactly as a job is (tickwork.tick.claimer.JobClaimer: plan_claim, records first, then the
workflow advanced from the version read); only its records differ. An occurrence that runs is a workflow run
opened RUNNING with its roots queued (WorkflowProgress.open: the run's conditional put is the lock on the
occurrence); a skipped one (paused, misfired, capped) is a workflow run recorded SKIPPED with the reason. A
claimer that died part-way is completed by the next: a workflow run found existing has its missing root runs
created (WorkflowProgress.catch_up).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from tickwork.aws.queues import Outgoing
from tickwork.model.claim_plan import ClaimableJob, ClaimPlan, Occurrence
from tickwork.model.clock import to_ms
from tickwork.model.ids import run_id_for
from tickwork.model.states import JobState, SkipReason
from tickwork.model.workflow.advance import WorkflowRunStatus
from tickwork.model.workflow.runs import WorkflowRunRecord, WorkflowSnapshot
from tickwork.observability import logger
from tickwork.progress.workflow_progress import WorkflowProgress
from tickwork.store import DueItem, WorkflowRecords, read_workflow_run
from tickwork.tick.claimer import OccurrenceRecords, SkippedOccurrence


def held_back(state: JobState) -> SkipReason | None:
    """Why a workflow in this state opens no new run (its occurrence is recorded SKIPPED with it), or None."""
    return {JobState.PAUSED: SkipReason.PAUSED, JobState.CANCELLED: SkipReason.CANCELLED}.get(state)


class WorkflowOccurrences:
    """Writes a workflow's occurrences as workflow runs; reconciles RUNNING ones
    (tickwork.tick.claimer.WorkflowTick)."""

    def __init__(
        self, records: WorkflowRecords, progress: WorkflowProgress, *, in_flight_for: timedelta = timedelta(seconds=30)
    ) -> None:
        self.records = records
        self.progress = progress
        self.in_flight_for = in_flight_for

    def write(self, job: ClaimableJob, plan: ClaimPlan, now: datetime) -> OccurrenceRecords:
        occurrences = plan.occurrences()
        snapshot = None
        if plan.queued:
            # The due index carries no steps: the definition is read once per claim that opens a run.
            workflow = self.records.get_workflow(job.job_id)
            if workflow is None:
                return OccurrenceRecords()  # pragma: no cover - a workflow item is never deleted
            snapshot = WorkflowSnapshot.of(workflow)
            held = held_back(workflow.state)
            if held is not None:
                # Paused or cancelled since the tick read the due index: what would have run is skipped, as a
                # job's run is by its executor.
                occurrences = [o if o.skip_reason else replace(o, skip_reason=held) for o in occurrences]
        written = OccurrenceRecords()
        for index, occurrence in enumerate(occurrences):
            record = self._record_of(job, occurrence, snapshot, now)
            if record.status is WorkflowRunStatus.RUNNING:
                opened = self.progress.open(record)
                won, old, outgoing = opened.record is not None, opened.existing, opened.outgoing
            else:
                won, old = self.records.put_workflow_run(record, now=now, reconcile_at=None)
                outgoing = []
            written.outgoing.extend(outgoing)
            if won and record.status is WorkflowRunStatus.RUNNING:
                written.opened.append(record.id)
            if won:
                if occurrence.skip_reason is not None:
                    written.skipped.append(
                        SkippedOccurrence(record.id, job.job_id, occurrence.skip_reason, occurrence.skipped_count or 1)
                    )
                continue
            claimed_ms = int(old.get("claimed_at_ms", 0))
            if index == 0 and to_ms(now) - claimed_ms < self.in_flight_for.total_seconds() * 1000:
                # Another claimer is on this workflow right now: leave it the rest (and the advance).
                return OccurrenceRecords(existing={record.id: old}, in_flight_elsewhere=True)
            written.existing[record.id] = old  # its claimer died part-way: carry the claim through
            if old.get("status") == WorkflowRunStatus.RUNNING.value:
                created, _ = self.progress.catch_up(read_workflow_run(old))
                written.outgoing.extend(created)
        return written

    def claim_lost(self, job: ClaimableJob, written: OccurrenceRecords, now: datetime) -> list[Outgoing]:
        """The claim's advance lost: the workflow changed after the tick read it. If it was paused or cancelled,
        the change came before the claim was complete, so the runs this claim opened are withdrawn (SKIPPED
        with the reason) before anything of them starts; their roots' runs are still sent, and their executors
        record them SKIPPED (tickwork.model.run_target.RunTarget.of_step)."""
        if not written.opened:
            return written.outgoing
        workflow = self.records.get_workflow(job.job_id)
        held = held_back(workflow.state) if workflow is not None else None
        if held is None:
            return written.outgoing
        for workflow_run_id in written.opened:
            if self.records.withdraw_workflow_run(workflow_run_id, held, now=now):
                logger.info(
                    "workflow run withdrawn: its workflow changed during the claim",
                    extra={"workflow_run_id": workflow_run_id, "skip_reason": held.value},
                )
        return written.outgoing

    @staticmethod
    def _record_of(
        job: ClaimableJob, occurrence: Occurrence, snapshot: WorkflowSnapshot | None, now: datetime
    ) -> WorkflowRunRecord:
        base = {
            "id": run_id_for(job.job_id, occurrence.at),
            "workflow_id": job.job_id,
            "tenant": job.tenant,
            # Deferred past a block: opened at the block's end (its id stays its occurrence's).
            "scheduled_for": occurrence.deferred.until
            if occurrence.deferred is not None and occurrence.deferred.until is not None
            else occurrence.at,
            "priority": job.priority,
            "blocked_by": occurrence.blocked_by,
        }
        if occurrence.skip_reason is None:
            return WorkflowRunRecord(
                **base,
                status=WorkflowRunStatus.RUNNING,
                definition=snapshot,
                last_occurrence=job.next_after(occurrence.at) is None,
            )
        return WorkflowRunRecord(
            **base,
            status=WorkflowRunStatus.SKIPPED,
            skip_reason=occurrence.skip_reason,
            skipped_count=occurrence.skipped_count,
            skipped_until=occurrence.skipped_until,
            finished_at=now,
        )

    def reconcile(self, item: DueItem, now: datetime) -> list[Outgoing]:
        return self.progress.reconcile(item, now)
