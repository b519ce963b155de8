"""The tick's archive of the audit trail (docs/security.md "Audit trail"): every record written since the last tick
is put in S3 (tickwork.aws.audit_archive), then released to DynamoDB TTL (tickwork.store.audit.AuditOutbox), in
that order: a record is only ever removed after it is archived. A crash between the two archives it again at the
next tick, to the same key, which it finds there. A record the archive refuses stays, due, for the next tick; a
refusal ends the tick's pass after the round it was in (the bucket is unreachable: the rest wait too).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

from tickwork.aws.audit_archive import AuditArchive
from tickwork.faults import NO_FAULTS, CrashPoint, FaultPlan
from tickwork.observability import logger, metrics
from tickwork.store.audit import AuditOutbox, PendingRecord

# Records archived per tick at most: past a backlog, the next tick goes on.
ARCHIVE_PER_TICK = 500
# Records archived at once (a PutObject then an UpdateItem each, ~50 ms): 500 in about 2.5 s of the tick's time.
ARCHIVE_THREADS = 8


class AuditArchiver:
    def __init__(self, outbox: AuditOutbox, archive: AuditArchive, faults: FaultPlan = NO_FAULTS) -> None:
        self.outbox, self.archive, self.faults = outbox, archive, faults

    def archive_due(self, now: datetime) -> int:
        """Archive the records due by `now`, ARCHIVE_THREADS at a time; how many this call archived. A round in
        which the archive refused one ends the pass."""
        pending = self.outbox.pending(now, limit=ARCHIVE_PER_TICK)
        archived = 0
        with ThreadPoolExecutor(max_workers=ARCHIVE_THREADS, thread_name_prefix="audit") as pool:
            for start in range(0, len(pending), ARCHIVE_THREADS):
                outcomes = list(pool.map(self._archive, pending[start : start + ARCHIVE_THREADS]))
                archived += sum(1 for outcome in outcomes if outcome is True)
                if None in outcomes:
                    break
        if archived:
            metrics.add_metric(name="AuditRecordsArchived", unit="Count", value=archived)
        return archived

    def _archive(self, pending: PendingRecord) -> bool | None:
        """True if this call archived and released the record; False if another tick released it first; None if
        the archive refused it (it stays, due, for the next tick)."""
        try:
            key = self.archive.put_once(pending.record)
        except Exception:
            logger.exception(
                "could not archive an audit record; the next tick tries again", extra={"sk": pending.key["sk"]["S"]}
            )
            metrics.add_metric(name="AuditArchiveFailures", unit="Count", value=1)
            return None
        self.faults.reached(CrashPoint.AUDIT_AFTER_ARCHIVE)
        released = self.outbox.archived(pending)
        logger.debug("audit record archived", extra={"key": key, "released": released})
        return released
