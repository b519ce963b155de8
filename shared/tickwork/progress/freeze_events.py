"""Publishing `Freeze Started` and `Freeze Ended` once per fact (docs/operations.md, "Run events"), by the API
that creates or lifts a freeze and by the tick that sees one start or end by itself.

The same convention as a run's events (tickwork.progress.run_events): the fact is recorded by a conditional write
of its marker on the freeze item (of racing writers, one), which also puts its event in the freeze's outbox
(tickwork.store.freezes); the writer publishes, then clears it. Were it to die in between, or EventBridge to
refuse, the tick (which reads every freeze each minute anyway) takes the event once its OUTBOX_GRACE has passed
and publishes it again, with the same `event_id` (`<freeze id>#freeze-started#0`, `<freeze id>#freeze-ended#0`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from tickwork.faults import NO_FAULTS, CrashPoint, FaultPlan
from tickwork.model.clock import to_ms
from tickwork.model.freezes import Freeze
from tickwork.model.run_event_kinds import RunEventKind
from tickwork.observability import logger
from tickwork.progress.run_events import OUTBOX_GRACE, RunEvents
from tickwork.store.freezes import FreezeRecords, StoredFreeze

FREEZE_EVENTS = (RunEventKind.FREEZE_STARTED, RunEventKind.FREEZE_ENDED)  # in the order they happen


class FreezeEvents:
    def __init__(self, records: FreezeRecords, events: RunEvents, faults: FaultPlan = NO_FAULTS) -> None:
        self.records, self.events, self.faults = records, events, faults

    def recorded(self, freeze: Freeze, kind: RunEventKind, publish_by: datetime) -> bool:
        """Publish a fact whose write (the caller's) put its event in the outbox, due at `publish_by`; then clear
        it. False if EventBridge did not take it: the tick publishes it after `publish_by`."""
        self.faults.reached(CrashPoint.EVENTS_BEFORE_PUBLISH)
        if not self.events.publish([freeze.event(kind)]):
            return False
        self.records.clear_event(freeze.id, kind, due=publish_by)
        return True

    def record(self, freeze: Freeze, kind: RunEventKind, now: datetime) -> bool:
        """Record the fact (once: False if another writer did) and publish it."""
        publish_by = now + OUTBOX_GRACE
        if not self.records.record_event(freeze.id, kind, now, publish_by=publish_by):
            return False
        logger.info("freeze event recorded", extra={"freeze_id": freeze.id, "event": kind.value})
        self.recorded(freeze, kind, publish_by)
        return True

    def catch_up(self, freezes: Sequence[StoredFreeze], now: datetime) -> int:
        """The tick's look at every freeze it read: publish the events their writers left unpublished past their
        due time, and record and publish the starts and ends that happened by themselves. How many it published
        or recorded."""
        done = 0
        for stored in freezes:
            try:
                done += self._catch_up(stored, now)
            except Exception:
                # One freeze's failure must not stop the others; its events stay due for a later tick.
                logger.exception("could not publish a freeze's events", extra={"freeze_id": stored.freeze.id})
        return done

    def _catch_up(self, stored: StoredFreeze, now: datetime) -> int:
        done = 0
        freeze = stored.freeze
        for kind in FREEZE_EVENTS:
            due = stored.unpublished.get(kind)
            if due is None or due > to_ms(now):
                continue  # published, or its writer may still be publishing it
            retry_at = now + OUTBOX_GRACE
            if not self.records.take_event(freeze.id, kind, expected_due=due, retry_at=retry_at):
                continue  # another tick took it, or it was published
            logger.warning(
                "publishing a freeze event its writer left unpublished",
                extra={"freeze_id": freeze.id, "event": kind.value},
            )
            done += self.recorded(freeze, kind, retry_at)
        for kind in stored.events_due(now):
            done += self.record(freeze, kind, now)
        return done
