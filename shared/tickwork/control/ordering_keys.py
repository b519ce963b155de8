"""Skipping the FAILED run that blocks its ordering key (`POST /v1/runs/{id}/skip`): the key's next run may go.

The run stays FAILED (its record, its error and its dead letter are untouched); its queue entry is marked skipped,
and the key's turn, held blocked by it, is given back (the key's cursor past it) in one conditional write on its
holder. Retrying or redriving
the run instead (tickwork.control.redrive) runs it again in its turn, before the runs behind it.
"""

from __future__ import annotations

from dataclasses import dataclass

from tickwork.control.audit import AuditTrail
from tickwork.control.queries import JobQueries
from tickwork.model.audit import Attribution, AuditResource, Change
from tickwork.model.errors import Conflict
from tickwork.model.run import Run
from tickwork.model.states import RunStatus
from tickwork.observability import logger
from tickwork.store import OrderingRecords
from tickwork.store.ordering import entry_sort


@dataclass(frozen=True)
class OrderingKeys:
    records: OrderingRecords
    queries: JobQueries  # the tenant-checked read of the run
    audit: AuditTrail  # each skip's record, in the write that marks it

    def skip(self, tenant: str, run_id: str, *, by: Attribution | None = None) -> Run:
        """Let the key blocked by this FAILED run go on (idempotent); 409 for a run of no key, or not FAILED."""
        run = self.queries.get_run(tenant, run_id)
        if run.ordering is None:
            raise Conflict("the run has no ordering key: there is nothing to skip it in")
        if run.status is not RunStatus.FAILED:
            raise Conflict(f"only a FAILED run blocks its ordering key; this one is {run.status.value}")
        sort = entry_sort(run.ordering.key, run)
        # Marked first, then the turn given back: a run of the key that looks in between finds a FAILED holder
        # and waits; one that looks after finds the entry skipped and passes it.
        audit = self.audit.item(
            by,
            tenant=tenant,
            action="run.skip",
            resource=AuditResource(kind="run", id=run.id),
            changes={"ordering_skipped": Change(after=True)},
        )
        self.records.mark_skipped(tenant, sort, audit=audit)
        if self.records.give_back(tenant, run.ordering.key, run_id=run.id, passed=sort):
            logger.info("ordering key unblocked: its FAILED run was skipped", extra={"run_id": run.id})
        return run
