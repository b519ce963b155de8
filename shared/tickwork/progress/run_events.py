"""Publishing a run's events after its fact, and again from the outbox when the fact's writer died first
(tickwork.model.run_events says why events are at least once and how a consumer deduplicates them).

The executor publishes a failed run's `Run Failed` and `Run Dead-Lettered` after the outcome's write (which kept
them in `events_pending`), and the breaker a job's `Job Suspended` after its opening write; then the run leaves
the outbox. The tick, finding a run in the due index whose events are still pending, publishes them from the run
record (and `Job Suspended` if this run's failure opened its job's breaker: the job's `suspended_at` is the run's
`finished_at`, the one instant both writes were given).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from tickwork.aws.event_bus import EventBus
from tickwork.model.clock import from_ms, optional_instant, stored_instant, to_ms
from tickwork.model.job import Job
from tickwork.model.policies import Band
from tickwork.model.run import Run, RunError
from tickwork.model.run_event_kinds import RunEventKind
from tickwork.model.run_events import RunEvent, RunSubject, job_suspended_event, run_failed_events
from tickwork.model.states import JobState
from tickwork.observability import logger, metrics
from tickwork.store import EVENTS_PENDING, EventOutbox
from tickwork.store.codec import run_key
from tickwork.store.jobs import JobRecords

# How long a fact's writer has to publish before the tick does it (and how long a tick that took an item waits
# before another may): past the moment a writer that is alive has published.
OUTBOX_GRACE = timedelta(seconds=60)


class RunEvents:
    def __init__(self, bus: EventBus, outbox: EventOutbox, jobs: JobRecords) -> None:
        self.bus, self.outbox, self.jobs = bus, outbox, jobs

    def publish(self, events: Sequence[RunEvent]) -> bool:
        """Publish now; False (logged, never raised) if EventBridge did not take them all. A caller with an
        outbox leaves it for the tick then."""
        if not events:
            return True
        try:
            taken = self.bus.publish(events)
        except Exception:
            logger.exception("could not publish run events", extra={"event_ids": [e.event_id for e in events]})
            taken = False
        if taken:
            metrics.add_metric(name="RunEventsPublished", unit="Count", value=len(events))
        return taken

    def run_failed(self, run: Run, error: RunError, now: datetime, pending: Sequence[str], outbox_at: datetime) -> None:
        """A run FAILED with no attempts left (its write kept `pending` and put it in the outbox at `outbox_at`)."""
        events = run_failed_events(
            pending,
            RunSubject.of_run(run),
            attempts=run.attempts,
            error=error.model_dump(mode="json"),
            failed_at=now,
            band=run.band.value,
        )
        if self.publish(events):
            self.outbox.clear(run_key(run.id), due_at=outbox_at)

    def job_suspended(self, job: Job, now: datetime, reason: str, opens_until: datetime) -> None:
        """The job's breaker opened (after the write that opened it). Were this to be lost, the failed run's outbox
        publishes it (`recover`)."""
        if job.notify is not None and RunEventKind.JOB_SUSPENDED not in job.notify:
            return
        event = job_suspended_event(
            job_id=job.id, tenant=job.tenant, suspended_at=now, reason=reason, opens_until=opens_until
        )
        self.publish([event])

    def recover(self, attrs: dict[str, Any], due_at: int, now: datetime) -> bool:
        """The tick found a terminal run still in the outbox: publish what it holds, then clear it. False if
        another took it, or EventBridge did not take them (it stays, for a later tick)."""
        retry_at = now + OUTBOX_GRACE
        run = self.outbox.take(run_key(attrs["run_id"]), expected_due_at=due_at, retry_at=retry_at)
        if run is None:
            return False
        pending = [str(kind) for kind in run.get(EVENTS_PENDING) or []]
        failed_at = optional_instant(run.get("finished_at")) or from_ms(due_at)
        subject = RunSubject(
            run_id=run["run_id"],
            job_id=run["job_id"],
            tenant=run["tenant"],
            scheduled_for=stored_instant(run["scheduled_for"]),
            requeues=int(run.get("requeues", 0)),
            workflow_run_id=run.get("workflow_run_id"),
            step_id=run.get("step_id"),
        )
        events = run_failed_events(
            pending,
            subject,
            attempts=int(run.get("attempts", 0)),
            error=run.get("error"),
            failed_at=failed_at,
            band=Band.of_priority(int(run.get("priority", 5))).value,
        )
        if RunEventKind.JOB_SUSPENDED.value in pending:
            events += self._suspension_by(run["job_id"], failed_at)
        logger.warning(
            "publishing run events their writer left unpublished",
            extra={"run_id": run["run_id"], "events": [e.event_id for e in events]},
        )
        if not self.publish(events):
            return False
        self.outbox.clear(run_key(run["run_id"]), due_at=retry_at)
        return True

    def _suspension_by(self, job_id: str, failed_at: datetime) -> list[RunEvent]:
        """`Job Suspended`, if the run that failed at `failed_at` opened its job's breaker."""
        job = self.jobs.get_job(job_id)
        if job is None or job.state is not JobState.SUSPENDED or job.suspended_at is None:
            return []
        if to_ms(job.suspended_at) != to_ms(failed_at):
            return []
        opens_until = job.breaker.opens_until if job.breaker is not None else None
        return [
            job_suspended_event(
                job_id=job.id,
                tenant=job.tenant,
                suspended_at=job.suspended_at,
                reason=job.suspended_reason,
                opens_until=opens_until,
            )
        ]
