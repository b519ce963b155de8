"""The tick's look at a run's deadline when its watch comes due (tickwork.store.deadlines): a run that has not
ended by its deadline, or ended after it, has its miss recorded once (a conditional write on the run), counted
(`DeadlineMissed`) and published (`Deadline Missed`, if its job's notify asks); under `on_miss: CANCEL` a
RUNNING run is asked to stop (its executor records it FAILED `deadline`; a run not yet started is failed so by
the executor that leases it). No executor need be alive: the watch is in the due index the tick reads anyway.
"""

from __future__ import annotations

from datetime import datetime

from tickwork.model.deadlines import OnMiss, missed
from tickwork.model.run_event_kinds import DEADLINE_NOTIFY, RunEventKind, emitted
from tickwork.model.run_events import RunSubject, deadline_missed_event
from tickwork.model.states import RunStatus
from tickwork.observability import logger, metrics
from tickwork.progress.run_events import OUTBOX_GRACE, RunEvents
from tickwork.store import DueItem, EventOutbox, JobRecords, RunLeases, RunRecords
from tickwork.store.deadlines import DeadlineRecords, watch_key


class DeadlineCheck:
    def __init__(
        self,
        runs: RunRecords,
        leases: RunLeases,
        jobs: JobRecords,
        deadlines: DeadlineRecords,
        outbox: EventOutbox,
        events: RunEvents | None,
    ) -> None:
        self.runs, self.leases, self.jobs, self.deadlines = runs, leases, jobs, deadlines
        self.outbox, self.events = outbox, events

    def check(self, item: DueItem, now: datetime) -> bool:
        """A watch come due: True if this call recorded a miss."""
        run_id = item.attrs["run_id"]
        retry_at = now + OUTBOX_GRACE
        watch = self.outbox.take(watch_key(run_id), expected_due_at=item.due_at, retry_at=retry_at)
        if watch is None:
            return False  # another tick has it
        run = self.runs.get_run(run_id)
        if run is None or run.deadline_at is None:
            self.outbox.clear(watch_key(run_id), due_at=retry_at)
            return False
        if run.deadline_missed_at is None and not missed(run.deadline_at, finished_at=run.finished_at, now=now):
            self.outbox.clear(watch_key(run_id), due_at=retry_at)  # it ended in time
            return False
        recorded = run.deadline_missed_at is None and self.deadlines.record_miss(run_id, now)
        # A workflow step's run: its watch keeps the step's on_miss, and it publishes with the default notify.
        job = self.jobs.get_job(run.job_id) if run.step_id is None else None
        on_miss = job.deadline.on_miss if job is not None and job.deadline is not None else OnMiss.ALERT
        if run.step_id is not None:
            on_miss = OnMiss(watch.get("on_miss", OnMiss.ALERT.value))
        if recorded:
            metrics.add_metric(name="DeadlineMissed", unit="Count", value=1)
            logger.warning(
                "run missed its deadline",
                extra={"run_id": run_id, "deadline_at": run.deadline_at, "status": run.status.value},
            )
            if on_miss is OnMiss.CANCEL and run.status is RunStatus.RUNNING:
                self.leases.request_cancel(run_id)
        missed_at = run.deadline_missed_at or now
        # A job with a deadline publishes its misses unless its notify leaves them out.
        notify = job.notify if job is not None and job.notify is not None else DEADLINE_NOTIFY
        if self.events is not None and emitted(notify, (RunEventKind.DEADLINE_MISSED,)):
            event = deadline_missed_event(
                RunSubject.of_run(run),
                deadline_at=run.deadline_at,
                missed_at=missed_at,
                status=run.status.value,
                on_miss=on_miss.value,
            )
            if not self.events.publish([event]):
                return recorded  # the watch stays: a later tick publishes it
        self.outbox.clear(watch_key(run_id), due_at=retry_at)
        return recorded
