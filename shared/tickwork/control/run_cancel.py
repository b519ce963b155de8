"""Cancelling one RUNNING run: it is asked to stop, cooperatively (its executor's next heartbeat sees the request,
stops the handler and records the run SKIPPED `cancelled`), as a cancelled workflow run's steps are. A durable run
between its segments (yielded: QUEUED or RETRYING, not ended) is cancelled too: its next segment is recorded SKIPPED
`cancelled` without running, and gives back what it kept between segments."""

from __future__ import annotations

from dataclasses import dataclass

from tickwork.control.audit import AuditTrail
from tickwork.control.queries import JobQueries
from tickwork.model.audit import Attribution, AuditResource, Change
from tickwork.model.errors import Conflict
from tickwork.model.run import Run
from tickwork.model.states import RunStatus
from tickwork.observability import logger
from tickwork.store.leases import RunLeases


@dataclass(frozen=True)
class RunCancel:
    leases: RunLeases
    queries: JobQueries  # the tenant-checked read of the run
    audit: AuditTrail  # each request's record, in its own write

    def cancel_run(self, tenant: str, run_id: str, *, by: Attribution | None = None) -> Run:
        """Ask the run to stop; Conflict unless RUNNING or between its segments (a queued run is stopped by pausing
        or cancelling its job, which skips it when it is taken)."""
        run = self.queries.get_run(tenant, run_id)
        started = run.status is RunStatus.RUNNING or (run.segments > 0 and not run.status.terminal)
        audit = self.audit.item(
            by,
            tenant=tenant,
            action="run.cancel",
            resource=AuditResource(kind="run", id=run.id),
            changes={"cancel_requested": Change(after=True)},
        )
        if not started or not self.leases.request_cancel(run.id, audit=audit):
            status = run.status.value if not started else "no longer running"
            raise Conflict(f"only a RUNNING run (or one between its segments) can be cancelled; this one is {status}")
        logger.info("run asked to stop", extra={"run_id": run.id})
        return run
