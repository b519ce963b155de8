"""Re-sending claimed runs nobody leased, and parked retries: the tick's recovery of lost messages.

A run that was claimed but never leased (the tick died before sending, or its message was lost) is still in the
due index; once its re-send time passes, the tick sends it again (nothing lost; the executor's lease makes a
duplicate message harmless). A leased run keeps its entry until its outcome: were its executor to die and its
message be stranded (received by an executor that died before its first ChangeMessageVisibility: invisible for
the queue's 5,400 s), the tick re-sends it once the lease has lapsed by redispatch_after; while the lease is live
(heartbeats extend it), the entry follows it. While the run's band has a backlog at least as large as its overdue
runs, their messages may all be waiting in it, so the re-sends wait (up to RESEND_DEFER_LIMIT) rather than
multiply the backlog; a smaller backlog cannot hold them all, so they are re-sent. A re-sent message is looked
after as the first was: redispatch_after later (and RESEND_DEFER_LIMIT more if it went into a backlog), whatever
the run's age, so each recovery is bounded (`one_recovery_bound`), not only the first. A retry whose backoff is
too long for a message (see tickwork.executor.outcomes) is parked in the due index at its retry time; the tick
sends it with DelaySeconds like any claimed run.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta

from tickwork.aws.queues import Outgoing, RunQueues
from tickwork.model.clock import from_ms, stored_instant, to_ms
from tickwork.model.ids import ItemKind
from tickwork.model.policies import Band
from tickwork.model.run import Run
from tickwork.model.states import RunStatus
from tickwork.observability import logger
from tickwork.store import DueIndex, DueItem
from tickwork.tick.report import TickReport
from tickwork.tick.sender import outgoing_for

# Past this, a run is re-sent even while its band has a backlog. Short: a stranded message (received by an
# executor that died before changing its visibility) is invisible for the queue's 5,400 s, and only the re-send
# brings its run; the soak showed a 15-minute limit making such runs 17 minutes late under steady load.
RESEND_DEFER_LIMIT = timedelta(minutes=2)


DEFER_STEP = timedelta(seconds=60)  # a deferred re-send is looked at again by the next tick


def one_recovery_bound(*, lease_for: timedelta, redispatch_after: timedelta, tick_period: timedelta) -> timedelta:
    """How long after a process dies holding a run (its lease, its message, or its claim) the run is back in an
    executor's hands at most: the lease lapsing, the re-send time, the tick that re-sends it, and a band's
    backlog holding the re-send back."""
    return lease_for + redispatch_after + tick_period + RESEND_DEFER_LIMIT


# ---------------------------------------------------------------- re-sends


class Resender:
    """Runs in the due index: claimed runs nobody leased (re-sent), and parked retries (sent at their time)."""

    def __init__(self, due: DueIndex, queues: RunQueues, *, redispatch_after: timedelta) -> None:
        self.due = due
        self.queues = queues
        self.redispatch_after = redispatch_after

    def backlogged_bands(self, items: list[DueItem], now: datetime) -> set[Band]:
        """Bands whose waiting messages are at least as many as their overdue runs (the runs this tick would
        re-send): all of those runs' messages may be in that backlog. A steady trickle of waiting messages is no
        reason to hold back a re-send (one GetQueueAttributes per band with overdue runs, and none on a tick
        with nothing to re-send)."""
        overdue = Counter(Band.of_priority(i.priority) for i in items if self._overdue(i, now))
        return {band for band, count in overdue.items() if self.queues.waiting_messages(band) >= count}

    def _overdue(self, item: DueItem, now: datetime) -> bool:
        """A run this tick would send again: past its re-send time, not leased (or its lease lapsed by
        redispatch_after)."""
        if item.kind is not ItemKind.RUN or item.due_at > to_ms(now):
            return False
        status = item.attrs.get("status")
        if status == RunStatus.RUNNING.value:
            return to_ms(now) >= self._lease_lapses_at(item)
        return status in (RunStatus.QUEUED.value, RunStatus.RETRYING.value)

    def _lease_lapses_at(self, item: DueItem) -> int:
        return int(item.attrs.get("lease_until_ms", 0)) + int(self.redispatch_after.total_seconds() * 1000)

    def next_look(self, sent_at: datetime, *, into_backlog: bool) -> datetime:
        """When the tick looks again at a run it sends at `sent_at`: as at its first send, redispatch_after later,
        and RESEND_DEFER_LIMIT more if the message went into a backlog that may hold it that long. Never longer
        with the run's age: a message lost again (received by an executor that died before changing its
        visibility, or not sent by a tick that died) is re-sent within one recovery, however old the run."""
        return sent_at + self.redispatch_after + (RESEND_DEFER_LIMIT if into_backlog else timedelta(0))

    def resend(self, item: DueItem, now: datetime, report: TickReport, backlogged: set[Band]) -> list[Outgoing]:
        """A run in the due index: a claimed run nobody leased (re-send it), or a parked retry (send it).

        Its entry is then moved to `next_look`: a run whose message is lost again is re-sent again within one
        recovery, and one whose message merely waits in a backlog is re-sent once per RESEND_DEFER_LIMIT."""
        a = item.attrs
        status = a.get("status")
        if status not in (RunStatus.QUEUED.value, RunStatus.RETRYING.value, RunStatus.RUNNING.value):
            return []
        if status == RunStatus.RUNNING.value:
            # Leased: its executor (or the message's return after the lease) finishes it. Only a lease that has
            # lapsed by redispatch_after with no executor back on it means the message is stranded.
            lapses_at = self._lease_lapses_at(item)
            if to_ms(now) < lapses_at:
                self.due.postpone_redispatch(a["run_id"], expected_due_at=item.due_at, new_due_at=lapses_at)
                return []
        scheduled_for = stored_instant(a["scheduled_for"])
        send_at = max(now, from_ms(item.due_at))
        band = Band.of_priority(item.priority)
        next_look = self.next_look(send_at, into_backlog=band in backlogged)
        # Measured from the run's own re-send time, not from its entry's due_at, which each deferral moves.
        defer_until = scheduled_for + self.redispatch_after + RESEND_DEFER_LIMIT
        if status == RunStatus.QUEUED.value and band in backlogged and now < defer_until:
            # Its message may be waiting in that backlog: a duplicate would only lengthen it. Look again next tick.
            if self.due.postpone_redispatch(
                a["run_id"], expected_due_at=item.due_at, new_due_at=to_ms(min(now + DEFER_STEP, defer_until))
            ):
                report.resends_deferred += 1
            return []
        if not self.due.postpone_redispatch(a["run_id"], expected_due_at=item.due_at, new_due_at=to_ms(next_look)):
            return []  # another tick is sending it, or an executor just leased it
        report.redispatched += 1
        if status == RunStatus.QUEUED.value:
            logger.warning("re-sending a claimed run that no executor leased", extra={"run_id": a["run_id"]})
        elif status == RunStatus.RUNNING.value:
            logger.warning("re-sending a run whose lease lapsed without an outcome", extra={"run_id": a["run_id"]})
        run = Run(
            id=a["run_id"],
            job_id=a["job_id"],
            tenant=a["tenant"],
            scheduled_for=scheduled_for,
            status=RunStatus(status),
            priority=item.priority,
        )
        return [outgoing_for(run, start_at=send_at)]
