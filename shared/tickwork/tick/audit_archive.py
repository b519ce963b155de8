"""The tick's archive of the audit trail (docs/security.md "Audit trail"): every record written since the last tick
is put in S3 (tickwork.aws.audit_archive), then released to DynamoDB TTL (tickwork.store.audit.AuditOutbox), in
that order: a record is only ever removed after it is archived. A crash between the two archives it again at the
next tick, to the same key, which it finds there. A record the archive refuses stays, due, for the next tick; a few
refusals in one tick end its pass (the bucket is unreachable: the rest wait too).
"""

from __future__ import annotations

from datetime import datetime

from tickwork.aws.audit_archive import AuditArchive
from tickwork.faults import NO_FAULTS, CrashPoint, FaultPlan
from tickwork.observability import logger, metrics
from tickwork.store.audit import AuditOutbox

# Records archived per tick at most (one PutObject and one UpdateItem each): past a backlog, the next tick goes on.
ARCHIVE_PER_TICK = 500
# Refusals that end a tick's pass.
MAX_FAILURES_PER_TICK = 3


class AuditArchiver:
    def __init__(self, outbox: AuditOutbox, archive: AuditArchive, faults: FaultPlan = NO_FAULTS) -> None:
        self.outbox, self.archive, self.faults = outbox, archive, faults

    def archive_due(self, now: datetime) -> int:
        """Archive the records due by `now`; how many this call archived."""
        archived = failures = 0
        for pending in self.outbox.pending(now, limit=ARCHIVE_PER_TICK):
            try:
                key = self.archive.put_once(pending.record)
            except Exception:
                logger.exception(
                    "could not archive an audit record; the next tick tries again", extra={"sk": pending.key["sk"]["S"]}
                )
                metrics.add_metric(name="AuditArchiveFailures", unit="Count", value=1)
                failures += 1
                if failures >= MAX_FAILURES_PER_TICK:
                    break
                continue
            self.faults.reached(CrashPoint.AUDIT_AFTER_ARCHIVE)
            if self.outbox.archived(pending):
                archived += 1
            logger.debug("audit record archived", extra={"key": key})
        if archived:
            metrics.add_metric(name="AuditRecordsArchived", unit="Count", value=archived)
        return archived
