"""The audit records that requests which died left pending (RegionMode strong: audited changes without transactions,
tickwork.store.pending_audits), settled by the tick once a minute, so that a change is listed and archived even when
nobody writes its item again or lists the audit.

Requests per tick: one Query of the pending records' due-index partition (eventually consistent); per record due,
the reads and writes of its settlement (a GetItem of the target, the record's confirm or its settling as not
happened, the mark's clear; a marked Delete finished). Bounded per tick (SETTLE_PER_TICK); the rest next minute. A
failure is logged and counted (PendingAuditSettleFailures), never the tick's.
"""

from __future__ import annotations

from tickwork.observability import logger, metrics
from tickwork.store.conditional import AuditedWrites, Table

# Records settled per tick at most: each is a few single-item writes, and a dead request leaves one.
SETTLE_PER_TICK = 100


class PendingAuditSettlement:
    def __init__(self, table: Table, audits: AuditedWrites) -> None:
        self.table, self.audits = table, audits

    def settle_due(self) -> int:
        """Settle the pending records whose requests have surely ended; how many. Never raises."""
        try:
            settled = self.audits.settle_due(self.table, limit=SETTLE_PER_TICK)
        except Exception:
            logger.exception("pending audit records not settled; the next tick tries again")
            metrics.add_metric(name="PendingAuditSettleFailures", unit="Count", value=1)
            return 0
        if settled:
            logger.info("pending audit records settled", extra={"settled": settled})
        return settled
