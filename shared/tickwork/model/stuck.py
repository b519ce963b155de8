"""When a QUEUED run is stuck: more than a threshold past its time (docs/operations.md, "Stuck runs"). Pure.

The tick's count of the due entries it reads and the executor's count of the runs a gate defers decide it alike."""

from __future__ import annotations

from datetime import datetime, timedelta

from tickwork.model.states import DeferReason, RunStatus

STUCK_QUEUED_AFTER = timedelta(minutes=5)

# A freeze's DEFER holds its runs back on purpose, until the freeze ends: waiting is what was asked of them.
DEFERRALS_ASKED_FOR = frozenset({DeferReason.FREEZE})


def queued_too_long(scheduled_for: datetime, now: datetime, *, queued_after: timedelta = STUCK_QUEUED_AFTER) -> bool:
    """A QUEUED run scheduled for `scheduled_for` is stuck at `now`."""
    return scheduled_for + queued_after < now


def held_back_stuck(
    status: RunStatus,
    scheduled_for: datetime,
    reason: DeferReason,
    now: datetime,
    *,
    queued_after: timedelta = STUCK_QUEUED_AFTER,
) -> bool:
    """A run a gate has just deferred (`reason`), back to `status`, is stuck: QUEUED too long, and not held back
    by a wait it asked for. Its deferral moves its due entry past the tick's reads, so the tick cannot count it."""
    return (
        status is RunStatus.QUEUED
        and reason not in DEFERRALS_ASKED_FOR
        and queued_too_long(scheduled_for, now, queued_after=queued_after)
    )
