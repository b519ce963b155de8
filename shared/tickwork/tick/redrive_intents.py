"""The tick's settlement of the dead letters' redrives' audit records left pending (docs/security.md "Audit trail"):
an intent whose request died, or could not confirm it, between its write and its confirm. Once its request has
surely ended (tickwork.model.redrive_intents.SETTLES_AFTER), the tick reads from SQS the move tasks of the bands it
names (ListMessageMoveTasks), and confirms it naming the bands whose move started within the request's time, or
marks it not happened if none did. Each settle is one conditional write: a tick racing another, or the request itself, settles
it once. An intent whose read or write fails stays pending, for the next tick. Every minute, run by the minute
tick itself (not a dispatch worker), after its claim: no pending intent outlives a tick that runs.
"""

from __future__ import annotations

from tickwork.aws.dead_letters import DeadLetterQueues
from tickwork.model.clock import Clock
from tickwork.model.redrive_intents import intended_bands, settled, started_within
from tickwork.observability import logger, metrics
from tickwork.store.audit import AuditIntents, PendingIntent

# Intents settled per tick at most (a few SQS reads each): past a backlog, the next tick goes on.
SETTLE_PER_TICK = 50


class RedriveIntents:
    def __init__(self, intents: AuditIntents, queues: DeadLetterQueues, clock: Clock) -> None:
        self.intents, self.queues, self.clock = intents, queues, clock

    def settle_due(self) -> int:
        """Settle the intents due by now; how many this call settled. A failure is logged and left for the next
        tick: it never stops the tick."""
        try:
            due = self.intents.due(self.clock.now(), limit=SETTLE_PER_TICK)
        except Exception:
            logger.exception("could not read the pending redrive audit records; a later tick settles them")
            return 0
        settled_now = 0
        for intent in due:
            try:
                settled_now += self._settle(intent)
            except Exception:
                logger.exception(
                    "could not settle a pending redrive audit record; the next tick tries again",
                    extra={"record_id": intent.record.id},
                )
                metrics.add_metric(name="AuditIntentSettleFailures", unit="Count", value=1)
        return settled_now

    def _settle(self, intent: PendingIntent) -> bool:
        """True if this call confirmed the intent or marked it not happened; False if it was settled already."""
        started = {band: self.queues.moves_started(band) for band in intended_bands(intent.record)}
        bands = started_within(intent.record, started)
        record = settled(intent.record, bands)
        won = self.intents.settle(intent, record)
        logger.info(
            "pending redrive audit record settled",
            extra={
                "record_id": intent.record.id,
                "started": [band.value for band in bands],
                "outcome": "not_happened" if record is None else "confirmed",
                "settled_by_this_tick": won,
            },
        )
        return won
